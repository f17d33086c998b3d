"""A fifth round of doors: races against what the supervisor reads, and
side entrances to what it measures. Probes: tests/progs/race_doors.c
(filesystem) and tests/progs/proc_doors.c (processes and budgets).

dup2 and fchdir are not notified: another thread of the program can change
what an fd number or the cwd names at any moment. A supervisor that reads a
task's fd or cwd twice (once to judge, once to use) judges one object and
acts on another. Each race below was won on the build before its fix,
with Landlock on and off (the supervisor performs these calls itself, so
Landlock does not stand in the way).
"""

import os
import subprocess

from harness import eq, true, lt, test, _show, answers, denials_of


def probe(t, prog, args, limits=(), extra=(), timeout=90, **kw):
    opts = ["run", "--json", "-w", t.path("ws"), "--limit", "wall=30s"]
    for lim in limits:
        opts += ["--limit", lim]
    run = t.corral(opts + list(extra) + t.prog_roots() +
                   ["--", t.prog(prog)] + [str(a) for a in args],
                   timeout=timeout, **kw)
    return run, t.result(run)


def stage(t):
    """A workspace and, beside it (outside every root, in the directory
    the workspace's ".." names), a file the run must never reach."""
    os.makedirs(t.path("ws"), exist_ok=True)
    return t.write("secret.txt", "MARKER\n")


def read(path):
    with open(path) as f:
        return f.read()


@test
def race_dirfd_swap_cannot_walk_outside(t):
    """A thread dup2()s the workspace's fd and its parent's (an ancestor
    of a root, open for a listing) onto one number while the main thread
    opens NAME relative to it. The walk used to read the fd's path from
    /proc/TID/fd/N, judge it (the workspace), then open the same link
    again (by then the parent): secret.txt beside the workspace was read
    within a few thousand tries, and with "write" truncated and
    rewritten. Now the link is opened once and named by corral's own fd."""
    secret = stage(t)
    for mode in ("read", "write"):
        run, r = probe(t, "race_doors", ["dirfd-race", "secret.txt", 1.5, mode])
        true("got=0 " in (r.get("stdout") or ""),
             "%s through a swapped dirfd reached the file outside the "
             "roots: %s" % (mode, _show(r.get("stdout"))))
        eq(read(secret), "MARKER\n", "the file beside the workspace")
        true(denials_of(r, layer="fs"),
             "the losing tries are recorded (%s)" % mode)


@test
def race_cwd_swap_cannot_walk_outside(t):
    """The same with the cwd: a thread fchdir()s between the workspace
    and its parent while the main thread unlinks "./victim" (off the
    one-call fast path). The file beside the workspace was deleted on the
    build before; now it stays."""
    stage(t)
    victim = t.write("victim", "keep\n")
    run, r = probe(t, "race_doors", ["cwd-race", "victim", 1.5, "unlink"])
    true(os.path.exists(victim),
         "the file beside the workspace was unlinked through a swapped "
         "cwd: %s" % _show(r.get("stdout")))
    true("got=0 " in (r.get("stdout") or ""),
         "probe output: %s" % _show(r.get("stdout")))


@test
def race_pipe_link_swap_cannot_write_a_read_root(t):
    """/proc/self/fd/N naming a pipe of the run may be reopened (as the
    kernel allows); a thread dup2()s a read-only fd of a read root's file
    over N meanwhile. The reopen used to follow the program's link at
    call time: O_RDWR on the read-only file (a line appended), its mtime
    set, its group changed. Now the link is followed once, to corral's own
    O_PATH fd, checked to be a pipe, and every handler acts through
    that."""
    stage(t)
    f = t.write("ro/f", "data\n")
    before = os.stat(f)
    for mode in ([], ["utimes"], ["chown"]):
        run, r = probe(t, "race_doors", ["pipe-swap", f, 1.5] + mode,
                       extra=["--ro", t.path("ro")])
        after = os.stat(f)
        eq(read(f), "data\n", "the read root's file after pipe-swap %s" %
           (mode or ["open"]))
        eq((after.st_mtime_ns, after.st_gid, after.st_size),
           (before.st_mtime_ns, before.st_gid, before.st_size),
           "the read root's file's metadata after pipe-swap %s" %
           (mode or ["open"]))
        true("got=0 " in (r.get("stdout") or ""),
             "probe output: %s" % _show(r.get("stdout")))
    # A FIFO of the read root, held open for reading by the program: a
    # blocking write open of the swapped link goes through corral's FIFO
    # path, which reopens the FIFO it checked, never the link again.
    fifo = t.path("ro/fifo")
    os.mkfifo(fifo, 0o666)
    os.chmod(fifo, 0o666)
    run, r = probe(t, "race_doors", ["pipe-swap", fifo, 1.5, "fifo"],
                   extra=["--ro", t.path("ro")])
    out = r.get("stdout") or ""
    true("got=0 " in out and "tries=" in out and " pipes=0 " not in out,
         "probe output (the FIFO opened for writing?): %s" % _show(out))


@test
def race_pipe_link_swap_to_a_fifo_cannot_hold_the_loop(t):
    """The same swap with a FIFO of the workspace that has no writer: the
    resolver saw a link, not a FIFO, so the open ran on the loop thread
    and waited; 256 MiB went into a run with disk=10MiB, and only the
    watchdog ended it (66 s, no result). Now the FIFO is refused where
    the pipe was expected, and the disk budget fires."""
    stage(t)
    run, r = probe(t, "race_doors", ["fifo-stall", "fill"],
                   limits=["wall=5s", "disk=10MiB", "cpu=2s"])
    eq(r.get("status"), "limit_exceeded", "status (message %r)" %
       r.get("message"))
    lt(run.elapsed, 20, "seconds until corral returned")


@test
def proc_autogroup_is_not_writable(t):
    """/proc/self/autogroup is the session's nice level: the run shares
    the session with corral and its caller, and a write outlived the run,
    reniced to 19. Writes under /proc/<pid>/ are a list of entries that
    act on that process alone now. corral starts in a session of its own
    here: setsid gives it a fresh autogroup (a process in the init
    session reads an empty file, as CI's runner does), and this test's
    own session is never at stake."""
    run, r = probe(t, "race_doors", ["autogroup", "19"],
                   start_new_session=True)
    out = r.get("stdout") or ""
    true("write: ok" not in out, "the write succeeded: %s" % _show(out))
    true(denials_of(r, syscall="openat"),
         "the write is recorded: %s" % _show(r.get("denials")))
    seen = [ln for ln in out.splitlines() if ln.startswith("before=")]
    eq(len(seen), 1, "the probe's before/after line: %s" % _show(out))
    before, after = seen[0].split(" after=")
    before = before[len("before="):]
    if os.path.exists("/proc/self/autogroup"):
        true(before.startswith("[/autogroup-"),
             "the new session's autogroup is readable: %s" % before)
    eq(after, before, "the session's autogroup after the write")


@test
def proc_own_entries_stay_writable(t):
    """What real programs write under /proc/self keeps working: a
    thread's name (pthread_setname_np writes task/<tid>/comm) and
    oom_score_adj."""
    stage(t)
    script = ("import os,threading\n"
              "open('/proc/self/comm','w').write('renamed')\n"
              "tid=threading.get_native_id()\n"
              "open('/proc/self/task/%d/comm'%tid,'w').write('thr')\n"
              "open('/proc/self/oom_score_adj','w').write('500')\n"
              "print(open('/proc/self/comm').read().strip(),"
              "open('/proc/self/oom_score_adj').read().strip())\n")
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--",
                    "python3", "-c", script])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    eq(r.get("stdout"), "thr 500\n", "stdout")


@test
def fs_dnotify_outside_the_roots_is_refused(t):
    """fcntl(F_NOTIFY) on the workspace's parent (an ancestor of a root,
    open for a listing) or /dev/pts signalled changes made outside the
    run. Refused there, recorded; on a directory of the run it works
    (CPython's test_fcntl asks it, with DN_MULTISHOT's high bit)."""
    stage(t)
    run, r = probe(t, "race_doors", ["dnotify", "..", "1"])
    # EACCES, as documented and as inotify_add_watch there.
    true("Permission denied" in (r.get("stdout") or ""),
         "F_NOTIFY was accepted: %s" % _show(r.get("stdout")))
    true(denials_of(r, syscall="fcntl"), "the refusal is recorded")
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--", "python3",
                    "-c", "import fcntl, os\n"
                    "fd = os.open('.', os.O_RDONLY)\n"
                    "fcntl.fcntl(fd, fcntl.F_NOTIFY, fcntl.DN_MULTISHOT | "
                    "fcntl.DN_CREATE)\nprint('ok')\n"])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "ok\n"),
       "F_NOTIFY on the workspace (stderr %r)" % r.get("stderr"))


# F_NOTIFY on the workspace ('.'), first with a second thread alive
# (sharing the table), then alone; then from a thread of its own table.
_DNOTIFY_SHARED = r"""
import errno, fcntl, os, threading
def notify(what):
    fd = os.open('.', os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_NOTIFY, fcntl.DN_CREATE)
        print(what, 'ok')
    except OSError as e:
        print(what, errno.errorcode[e.errno])
    os.close(fd)
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
notify('shared')
ev.set()
th.join()
# join returns before the thread's last C code has run: wait until the
# kernel lists this thread alone.
while len(os.listdir('/proc/self/task')) > 1:
    pass
notify('alone')
os.close(os.open('/dev/null', os.O_RDONLY))
"""


@test
def fs_dnotify_from_a_shared_table_is_refused(t):
    """F_NOTIFY is judged on corral's copy of the fd and continued: a
    second thread swapping the number between the judgement and the
    kernel's lookup (dup2 is not notified) put the watch on an ancestor
    of a root or /dev/pts, and the run was signalled for every change
    there (found by a probing session). A caller whose fd table another
    task uses is refused now (EACCES, recorded); alone it is answered as
    before."""
    stage(t)
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--", "python3",
                    "-c", _DNOTIFY_SHARED])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "shared EACCES\nalone ok\n"),
       "F_NOTIFY with a thread sharing the table, then alone (stderr %r)"
       % r.get("stderr"))
    d = [x for x in denials_of(r, syscall="fcntl")
         if "another task can change" in (x.get("reason") or "")]
    true(d and d[0].get("target") == t.path("ws"),
         "the refusal is recorded with the directory: %s" %
         _show(r.get("denials")))


@test
def fs_fd_xattrs_of_an_ancestor_are_not_shown(t):
    """listxattr("..") shows no attributes of an ancestor of a root;
    flistxattr/fgetxattr on an fd of it were not notified and showed
    them. Now they answer as the path forms."""
    stage(t)
    # Every filesystem a Debian TMPDIR sits on (ext4, xfs, btrfs, tmpfs
    # since 6.6) takes user attributes from their owner.
    os.setxattr(t.tmp, "user.doors", b"outside-value")
    run, r = probe(t, "race_doors", ["fxattr", ".."])
    out = r.get("stdout") or ""
    true("outside-value" not in out and "user.doors" not in out,
         "an attribute of the workspace's parent was shown: %s" % _show(out))
    true(denials_of(r, syscall="flistxattr"),
         "flistxattr is recorded: %s" % _show(r.get("denials")))


@test
def shm_only_files_and_directories(t):
    """A symlink made in /dev/shm outlived the run (cleanup did not know
    it, and a link cannot carry the sweep's tag): a later program of the
    user opening that name would follow it. Symlinks and FIFOs there are
    refused now; files and directories work and are removed."""
    tag = "pd" + t.marker[-10:]
    try:
        run, r = probe(t, "proc_doors", ["shmleft", tag])
        out = r.get("stdout") or ""
        left = [e for e in os.listdir("/dev/shm") if e.startswith(tag)]
    finally:
        # Whatever a failing case made there goes (the suite goes on).
        for e in os.listdir("/dev/shm"):
            if e.startswith(tag):
                try:
                    os.unlink(os.path.join("/dev/shm", e))
                except OSError:
                    pass
    true("symlink=-1" in out and "mkfifo=-1" in out,
         "a symlink or FIFO was made in /dev/shm: %s" % _show(out))
    true("file=" in out and "file=-1" not in out,
         "a file in /dev/shm failed: %s" % _show(out))
    eq(left, [], "entries left in /dev/shm after the run")


@test
def proc_undumpable_cannot_hide_socket_memory(t):
    """PR_SET_DUMPABLE 0 made /proc/PID/fd root's: the fd scan treated
    the unreadable table as empty, and 784 MiB waited in unix sockets
    under memory=128MiB until the wall limit (status wall). Now the prctl
    is answered but not made (the process stays readable to corral) and
    the memory budget fires."""
    os.makedirs(t.path("ws"), exist_ok=True)
    run, r = probe(t, "proc_doors", ["sockhide", 100, 1],
                   limits=["memory=128MiB", "wall=20s"])
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "memory"),
       "verdict (message %r)" % r.get("message"))
    true("undump=0" in (r.get("stdout") or ""),
         "the prctl answered as the kernel's: %s" % _show(r.get("stdout")))


@test(supervisor_only=True)
def proc_undumpable_cannot_pass_the_pty_cap(t):
    """Each round opens ptys until refused and hands them to an
    undumpable holder: 180 ptys were held with the cap at 64. Now at most
    64."""
    os.makedirs(t.path("ws"), exist_ok=True)
    run, r = probe(t, "proc_doors", ["ptyhide", 2, 1], limits=["wall=6s"])
    out = r.get("stdout") or ""
    held = [ln for ln in out.splitlines() if ln.startswith("ptys held")]
    true(held, "probe output: %s" % _show(out))
    n = int(held[-1].split()[-1])
    true(n <= 64, "ptys held by the run: %d (cap 64)" % n)


@test
def proc_process_vm_copies_count_as_cpu(t):
    """corral performs process_vm_readv between the run's processes
    (through a 16 MiB buffer of its own): 28 GB copied under cpu=1s,
    7 s of corral's CPU, the run `ok`. That CPU is the run's now."""
    os.makedirs(t.path("ws"), exist_ok=True)
    run, r = probe(t, "proc_doors", ["vmcopy", 8],
                   limits=["cpu=1s", "wall=20s"])
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "cpu"),
       "verdict (message %r, usage %s)" % (r.get("message"),
                                          _show(r.get("usage"))))


ALLOC_CHURN = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long,
                           ctypes.c_long]
fd = os.memfd_create("churn") if sys.argv[1] == "memfd" else \
    os.open("churn", os.O_RDWR | os.O_CREAT, 0o600)
n = 0
end = time.time() + 10
while time.time() < end:
    if libc.fallocate(fd, 0, 0, 64 << 20) < 0 or \
            libc.fallocate(fd, 3, 0, 64 << 20) < 0:  # PUNCH_HOLE|KEEP_SIZE
        print("errno", ctypes.get_errno())
        break
    n += 1
print("cycles", n)
"""


@test(supervisor_only=True)
def alloc_work_corral_performs_counts_as_cpu(t):
    """corral performs fallocate (it counts what is allocated): allocating
    and punching a 128 MiB memfd in a loop, a probing session's program
    spent 12 ms of its own CPU and corral 26 s of its, under cpu=1s, and
    the run ended ok. The kernel's work in corral's time is the run's now,
    as process_vm_readv's copies are (and a truncate's, an O_TRUNC's)."""
    os.makedirs(t.path("ws"), exist_ok=True)
    os.chmod(t.path("ws"), 0o777)
    prog = t.write("churn.py", ALLOC_CHURN)
    for how in ("memfd", "file"):
        run = t.corral(["run", "--json", "-w", t.path("ws"), "--ro", t.tmp,
                        "--limit", "cpu=1s", "--limit", "wall=30s",
                        "--limit", "memory=1GiB", "--limit", "disk=1GiB",
                        "--", "/usr/bin/python3", prog, how])
        r = t.result(run)
        eq((r.get("status"), r.get("limit")), ("limit_exceeded", "cpu"),
           "%s: verdict (stdout %r, usage %s)" % (how, r.get("stdout"),
                                                  _show(r.get("usage"))))
    t.assert_next_run_ok()


@test
def exec_of_an_unreadable_image_says_why(t):
    """An execute-only image makes its process undumpable (nothing of it
    could be judged): the exec is refused, and the record says why, not
    an empty path "outside the exec roots"."""
    os.makedirs(t.path("ws"), exist_ok=True)
    img = t.path("ws", "xonly")
    with open("/bin/true", "rb") as src, open(img, "wb") as dst:
        dst.write(src.read())
    os.chmod(img, 0o111)
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--", "./xonly"])
    r = t.result(run)
    eq(r.get("status"), "policy_denied", "status")
    d = denials_of(r, syscall="execve")
    true(d and "cannot" in (d[0].get("reason") or ""),
         "the denial names the cause: %s" % _show(d))


@test
def fork_loop_is_not_a_platform_failure(t):
    """An exiting task's fd table answers EACCES for a moment; the scan
    that ends the run on a table it cannot read (an undumpable task) must
    tell the two apart, or a plain fork loop ends `platform_failure` (one
    run in three on the first build of that rule)."""
    script = ("import os\n"
              "for i in range(600):\n"
              "    pid = os.fork()\n"
              "    if pid == 0:\n"
              "        os._exit(0)\n"
              "    os.waitpid(pid, 0)\n"
              "print('done')\n")
    for i in range(3):
        run = t.corral(["run", "--json", "--", "python3", "-c", script],
                       timeout=120)
        r = t.result(run)
        eq((r.get("status"), r.get("stdout")), ("ok", "done\n"),
           "run %d (message %r)" % (i, r.get("message")))


def errnos(out):
    """'IMAGE: PATH -> ERROR (status S)' lines of exec_doors, as
    {PATH: ERROR}."""
    res = {}
    for ln in (out or "").splitlines():
        if " -> " in ln and ": " in ln:
            left, _, right = ln.partition(" -> ")
            res[left.split(": ", 1)[1]] = right.split(" (status")[0]
    return res


@test
def exec_interpreter_outside_is_absent_either_way(t):
    """The kernel opens an image's interpreter (a #! line's first word,
    an ELF's PT_INTERP) itself, by a path the program writes into a file:
    the execve's errno told an existing file or directory outside every
    root (EACCES) from a missing one (ENOENT), relative paths and `..`
    included, with no denial. Each interpreter is now resolved and judged
    by corral first: outside the roots it is absent whether it exists or
    not, and recorded."""
    secret = stage(t)
    missing = t.path("nothere")
    os.makedirs(t.path("outdir"))
    for sub, paths in (("interp", [secret, missing, t.path("outdir")]),
                       ("shebang", ["../secret.txt", "../nothere",
                                    secret, missing])):
        run, r = probe(t, "exec_doors", [sub] + paths)
        got = errnos(r.get("stdout"))
        eq(len(got), len(paths), "probe output %s" % _show(r.get("stdout")))
        eq(len(set(got.values())), 1,
           "%s: errnos differ between existing and missing paths outside "
           "the roots: %s" % (sub, got))
        true(denials_of(r, syscall="execve", layer="exec"),
             "%s: no exec denial recorded" % sub)


CHAIN_PROG = r"""
import os, sys
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(name, [name])
        except OSError as e:
            print(name, "errno", e.errno, flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
"""


@test
def exec_chain_judges_every_path_the_kernel_opens(t):
    """The kernel loads images at depths 0..5 and opens what each names
    (a #! interpreter), six paths past the first image; an earlier build
    judged four, so a chain of workspace scripts whose fifth named a host
    path told an existing one (EACCES) from a missing one (ENOENT), with
    no denial. Every one is judged now: absent either way, recorded."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    secret = stage(t)
    names = []
    for tag, target in (("a", secret), ("b", t.path("nothere"))):
        for depth in range(6):
            nxt = os.path.join(ws, "%s%d" % (tag, depth + 1))
            t.write("ws/%s%d" % (tag, depth),
                    "#!%s\n" % (nxt if depth < 4 else target), 0o755)
        names.append("./%s0" % tag)
    t.write("ws/chain.py", CHAIN_PROG)
    run = t.corral(["run", "--json", "-w", ws, "--",
                    "python3", "chain.py"] + names)
    r = t.result(run)
    out = r.get("stdout") or ""
    eq(sorted(ln for ln in out.splitlines() if "errno" in ln),
       ["./a0 errno 2", "./b0 errno 2"],
       "existing and missing outside paths answer alike: %s" % _show(out))
    true(denials_of(r, syscall="execve", layer="exec"),
         "no exec denial: %s" % _show(r.get("denials")))


@test
def exec_loader_through_a_link_in_an_exec_root_is_judged_where_it_leads(t):
    """An ELF's loader path (PT_INTERP) inside an exec root was judged by
    its text, without following links: a link in the root leading outside
    every root let the kernel look there, and the errno told an existing
    file from a missing one. It is walked now (once per path a run)."""
    xroot = t.path("xroot")
    os.makedirs(xroot)
    outside = t.path("outside")
    os.makedirs(outside)
    with open(os.path.join(outside, "present"), "w") as f:
        f.write("x")
    os.symlink(outside, os.path.join(xroot, "out"))
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    src = t.write("e.c", "int main(void){return 0;}\n")
    names = []
    for name in ("present", "absent"):
        exe = os.path.join(ws, "e-" + name)
        subprocess.run(["gcc", "-o", exe, "-Wl,--dynamic-linker=%s" %
                        os.path.join(xroot, "out", name), src], check=True)
        names.append("./e-" + name)
    t.write("ws/chain.py", CHAIN_PROG)
    run = t.corral(["run", "--json", "-w", ws, "--exec", xroot, "--",
                    "python3", "chain.py"] + names)
    r = t.result(run)
    out = r.get("stdout") or ""
    errs = sorted(ln.split()[-1] for ln in out.splitlines() if "errno" in ln)
    eq(len(errs), 2, "both refused: %s" % _show(out))
    eq(errs[0], errs[1],
       "existing and missing loaders answer alike: %s" % _show(out))


@test
def exec_host_script_as_interpreter_does_not_run(t):
    """A script of the user outside every root, named as a workspace
    script's interpreter, ran under the interpreter its own first line
    names (/bin/echo here, printing that line): the exec stop saw only
    /bin/echo, in an exec root. Refused now, in both modes."""
    os.makedirs(t.path("ws"), exist_ok=True)
    host = t.write("hostscript", "#!/bin/echo HOSTLINE-SECRET\n", 0o755)
    t.write("ws/run.sh", "#!%s\n" % host, 0o755)
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--", "./run.sh"])
    r = t.result(run)
    true("HOSTLINE-SECRET" not in (r.get("stdout") or ""),
         "the host script's interpreter line ran: %s" % _show(r.get("stdout")))
    true(denials_of(r, syscall="execve", layer="exec"),
         "no exec denial: %s" % _show(r.get("denials")))


@test
def exec_by_fd_judges_the_interpreter_too(t):
    """fexecve (execveat of an fd with AT_EMPTY_PATH) of a workspace
    script skipped the interpreter check: without Landlock a host script
    named as the interpreter ran under its own first line; with it the
    errno told an existing outside file (EACCES) from a missing one
    (ENOENT), no denial. Judged as for a path now, in both modes; a
    script by fd whose interpreter is a system one still runs."""
    os.makedirs(t.path("ws"), exist_ok=True)
    host = t.write("hostscript", "#!/bin/echo HOSTLINE-SECRET\n", 0o755)
    t.write("ws/run.sh", "#!%s\n" % host, 0o755)
    t.write("ws/miss.sh", "#!%s\n" % t.path("no-such-interp"), 0o755)
    t.write("ws/ok.sh", "#!/bin/sh\necho fd-ok\n", 0o755)
    script = ("import os\n"
              "for name in ('run.sh', 'miss.sh', 'ok.sh'):\n"
              "    pid = os.fork()\n"
              "    if pid == 0:\n"
              "        fd = os.open(name, os.O_RDONLY)\n"
              "        os.set_inheritable(fd, True)\n"
              "        try:\n"
              "            os.execve(fd, [name], {})\n"
              "        except OSError as e:\n"
              "            print(name, 'errno', e.errno, flush=True)\n"
              "        os._exit(0)\n"
              "    os.waitpid(pid, 0)\n")
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--",
                    "python3", "-c", script])
    r = t.result(run)
    out = r.get("stdout") or ""
    true("HOSTLINE-SECRET" not in out,
         "the host script's interpreter line ran: %s" % _show(out))
    eq(sorted(ln for ln in out.splitlines() if "errno" in ln),
       ["miss.sh errno 2", "run.sh errno 2"],
       "outside interpreters, existing or not, answer alike: %s" % _show(out))
    true("fd-ok" in out, "a system interpreter by fd: %s" % _show(out))
    true(denials_of(r, syscall="execveat", layer="exec"),
         "no exec denial: %s" % _show(r.get("denials")))



EXEC_CHECK = r"""
import ctypes, os, sys
os.chdir(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NULLS = (ctypes.c_char_p * 1)()
def check(dirfd, path, flags):
    rc = libc.syscall(322, dirfd, path, NULLS, NULLS, flags | 0x10000)
    return "0" if rc == 0 else os.strerror(ctypes.get_errno())
for name in sys.argv[2:]:
    fd = os.open(name, os.O_RDONLY)
    print(name, check(-100, name.encode(), 0), check(fd, b"", 0x1000),
          flush=True)
    os.close(fd)
print("still here")
"""


@test
def exec_check_judges_the_file_not_its_interpreter(t):
    """execveat with AT_EXECVE_CHECK (Linux 6.14) asks whether a file may
    be run and runs nothing: the kernel opens no interpreter. corral
    judged the #! line as for an exec, and a script naming a missing or
    outside interpreter answered ENOENT (recorded as a denial) where the
    kernel answers 0 (found by a differential probe). The file itself is
    still judged: a 0644 one answers EACCES as natively."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    host = t.write("hostscript", "#!/bin/echo HOSTLINE\n", 0o755)
    t.write("ws/missing.sh", "#!/nonexistent/interp\n", 0o755)
    t.write("ws/outside.sh", "#!%s\n" % host, 0o755)
    t.write("ws/ok.sh", "#!/bin/sh\necho no\n", 0o755)
    t.write("ws/garbage", "\x01\x02not an image\n", 0o755)
    t.write("ws/plain.txt", "#!/bin/sh\n", 0o644)
    script = t.write("check.py", EXEC_CHECK)
    names = ["missing.sh", "outside.sh", "ok.sh", "garbage", "plain.txt"]
    nat = t.native(["/usr/bin/python3", script, ws] + names)
    want = ("missing.sh 0 0\noutside.sh 0 0\nok.sh 0 0\ngarbage 0 0\n"
            "plain.txt Permission denied Permission denied\nstill here\n")
    eq(nat.out.decode(), want, "natively (the test's premise)")
    run = t.corral(["run", "--json", "-w", ws, "--ro", t.tmp, "--",
                    "/usr/bin/python3", script, ws] + names)
    r = t.result(run)
    eq(r.get("stdout"), want, "under corral")
    eq(denials_of(r, layer="exec"), [], "no exec denial for a check")



EXEC_CHECK_SWAP = r"""
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NULLS = (ctypes.c_char_p * 1)()
os.chdir(sys.argv[1])
held = os.open("a", os.O_WRONLY)     # a's own check answers ETXTBSY
os.symlink(sys.argv[2], "b")
stop = False
def swap():
    while not stop:
        libc.syscall(316, -100, b"a", -100, b"b", 2)  # RENAME_EXCHANGE
th = threading.Thread(target=swap)
th.start()
seen = {}
for i in range(int(sys.argv[3])):
    rc = libc.syscall(322, -100, b"a", NULLS, NULLS, 0x10000)
    k = "0" if rc == 0 else os.strerror(ctypes.get_errno())
    seen[k] = seen.get(k, 0) + 1
stop = True
th.join()
print(sorted(seen))
"""


@test
def exec_check_of_a_swapped_name_tells_nothing_outside(t):
    """An AT_EXECVE_CHECK continued to the kernel had the path looked up
    again: a thread swapping a workspace file (held open for writing, so
    its own check answers ETXTBSY) with a link to a host program learned
    that the host program exists and may be run (0), unrecorded, without
    Landlock (a probing session: 3804 of 20000). corral makes the check
    itself on the file it judged now: never 0."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    host = t.write("hostprog", "#!/bin/sh\n", 0o755)
    t.write("ws/a", "#!/bin/sh\n", 0o755)
    script = t.write("swap.py", EXEC_CHECK_SWAP)
    run = t.corral(["run", "--json", "-w", ws, "--ro", t.tmp,
                    "--limit", "wall=60s", "--",
                    "/usr/bin/python3", script, ws, host, "20000"],
                   timeout=90)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%r, %r)" % (r.get("message"),
                                                 r.get("stderr")))
    out = (r.get("stdout") or "").strip()
    true("Text file busy" in out, "the workspace file's own answer: %s"
         % out)
    true("'0'" not in out, "the host program answered 0: %s" % out)


@test
def exec_interpreters_inside_the_roots_still_run(t):
    """Scripts whose interpreter is a system one, one found by env, and a
    workspace script run through another (a relative #!) keep working."""
    os.makedirs(t.path("ws"), exist_ok=True)
    t.write("ws/a.sh", "#!/bin/sh\necho sh-ok\n", 0o755)
    t.write("ws/b.py", "#!/usr/bin/env python3\nprint('py-ok')\n", 0o755)
    t.write("ws/c", "#!./a.sh\n", 0o755)
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--", "sh", "-c",
                    "./a.sh; ./b.py; ./c"])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "sh-ok\npy-ok\nsh-ok\n"),
       "status and stdout (stderr %r)" % r.get("stderr"))


@test
def exec_of_packaged_scripts_in_usr_share_runs(t):
    """Debian links commands in /usr/bin to scripts kept in /usr/share
    (py3versions, psql and the other PostgreSQL clients' pg_wrapper, mvn,
    scan-build): the default class's exec roots did not hold /usr/share,
    so each answered EACCES with an exec denial (found running
    PostgreSQL's clients under corral). /usr/share is an exec root of
    the default class now; its answer is the native one."""
    os.makedirs(t.path("ws"), exist_ok=True)
    true(os.path.realpath("/usr/bin/py3versions").startswith("/usr/share/"),
         "premise: Debian's python3-minimal links py3versions into /usr/share")
    nat = subprocess.run(["/usr/bin/py3versions", "-d"], capture_output=True,
                         text=True, timeout=60)
    eq(nat.returncode, 0, "native premise (%r)" % nat.stderr)
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--",
                    "/usr/bin/py3versions", "-d"])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", nat.stdout),
       "status and stdout (stderr %r)" % r.get("stderr"))
    eq(denials_of(r, layer="exec"), [], "exec denials")


@test
def exec_only_script_cannot_hide_its_interpreter(t):
    """The interpreter check read the image through corral's own fd; an
    execute-only script (mode --x: corral, same uid, cannot read it) made
    the check give up and allow, and the kernel opened the interpreter
    unjudged: EACCES for an existing host file, ENOENT for a missing one,
    no denial; without Landlock a host script named so ran. Such an image
    is refused now, whatever it names."""
    stage(t)
    answers_ = []
    for i, interp in enumerate((t.path("secret.txt"), t.path("nothere"))):
        t.write("ws/s%d" % i, "#!%s\n" % interp, 0o111)
        run = t.corral(["run", "--json", "-w", t.path("ws"), "--", "sh",
                        "-c", "./s%d 2>/dev/null; echo rc=$?" % i])
        r = t.result(run)
        answers_.append(r.get("stdout"))
        true(denials_of(r, syscall="execve", layer="exec"),
             "no exec denial for an execute-only script naming %s" % interp)
    eq(answers_[0], answers_[1],
       "what the program saw for an existing and a missing interpreter")


def elf32_with_interp(path, interp):
    """A minimal 32-bit ELF header with one PT_INTERP naming interp."""
    import struct
    data = interp.encode() + b"\0"
    ident = b"\x7fELF" + bytes([1, 1, 1, 0]) + bytes(8)
    eh = ident + struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, 0, 52, 0, 0, 52, 32,
                             1, 40, 0, 0)
    ph = struct.pack("<IIIIIIII", 3, 84, 0, 0, len(data), len(data), 4, 1)
    with open(path, "wb") as f:
        f.write(eh + ph + data)
    os.chmod(path, 0o755)


@test
def exec_32bit_interpreter_is_judged_too(t):
    """A kernel with IA32 emulation opens a 32-bit image's PT_INTERP at
    the execve, before the filter's arch check kills the new image: the
    same existence oracle. The check reads 32-bit program headers too
    (this kernel answers ENOEXEC natively either way; under corral the
    interpreter outside the roots is refused and recorded first)."""
    stage(t)
    elf32_with_interp(t.path("ws", "e32"), t.path("secret.txt"))
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--", "sh", "-c",
                    "./e32 2>/dev/null; echo rc=$?"])
    r = t.result(run)
    d = denials_of(r, syscall="execve", layer="exec")
    true(d and d[0].get("target") == t.path("secret.txt"),
         "the 32-bit interpreter outside the roots is recorded: %s" %
         _show(r.get("denials")))


@test
def exec_loader_of_an_image_of_any_class_byte_is_judged(t):
    """The kernel loads an x86-64 image whatever its EI_CLASS byte says
    (binfmt_elf reads e_machine only); corral chose the header's layout by
    that byte, so an image marked class 0, 1 or 3 had its loader (PT_INTERP)
    opened by the kernel unjudged: EACCES for an existing path outside
    every root, ENOENT for a missing one, no denial. The layout is now
    chosen as the kernel chooses it."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    secret = stage(t)
    src = t.write("e.c", "int main(void){return 0;}\n")
    names = []
    for cls in (0, 1, 3):
        for tag, target in (("s", secret), ("m", t.path("nothere"))):
            exe = os.path.join(ws, "c%d%s" % (cls, tag))
            subprocess.run(["gcc", "-o", exe, "-Wl,--dynamic-linker=%s" %
                            target, src], check=True)
            with open(exe, "r+b") as f:
                f.seek(4)
                f.write(bytes([cls]))
            names.append("./c%d%s" % (cls, tag))
    _all_absent(t, ws, names, "loaders")


@test
def exec_shebang_cut_by_the_kernels_buffer_is_enoexec(t):
    """A #! line whose interpreter name runs past the kernel's 256-byte
    buffer with no space, tab or newline in it: the kernel answers ENOEXEC
    (a shell then runs the file as a script). corral judged the cut name
    and refused it (EACCES, a denial, the run policy_denied)."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    t.write("ws/long", "#!/" + "a" * 300 + "\necho ran\n", 0o755)
    t.write("ws/chain.py", CHAIN_PROG)
    run = t.corral(["run", "--json", "-w", ws, "--", "sh", "-c",
                    "python3 chain.py ./long; ./long"])
    r = t.result(run)
    eq(r.get("stdout"), "./long errno 8\nran\n", "the kernel's answer, then sh")
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq(denials_of(r, syscall="execve"), [], "denials")


@test
def exec_program_named_like_a_deleted_mapping_runs(t):
    """/proc shows a mapping whose file has no name with " (deleted)"
    after it, and corral refuses such an image; a workspace program really
    named "x (deleted)" was killed at its exec."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    src = t.write("e.c", "int main(void){return 7;}\n")
    subprocess.run(["gcc", "-o", os.path.join(ws, "x (deleted)"), src],
                   check=True)
    run = t.corral(["run", "--json", "-w", ws, "--", "./x (deleted)"])
    r = t.result(run)
    eq(r.get("exit_code"), 7, "exit code (status %r, message %r)" %
       (r.get("status"), r.get("message")))


@test
def exec_shebang_name_ending_at_the_buffers_last_byte_is_judged(t):
    """A #! name whose space sits at the buffer's last byte (offset 255),
    no newline before: the kernel opens that name. An earlier fix took it
    for cut and left it unjudged: EACCES for an existing host path, ENOENT
    for a missing one, no denial."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    secret = stage(t)
    names = []
    for tag, target in (("s", secret), ("m", t.path("nothere"))):
        pad = 255 - 2 - len(target)
        # "#!" + "/" * pad + target: slashes keep the path the same.
        line = "#!" + "/" * pad + target
        true(len(line) == 255, "line length %d" % len(line))
        t.write("ws/x" + tag, line + " " + "a" * 100, 0o755)
        names.append("./x" + tag)
    _all_absent(t, ws, names, "interpreters")


def _all_absent(t, ws, names, what):
    """Run each of names (workspace images) through CHAIN_PROG: every one
    must fail ENOENT, existing and missing targets alike, and be recorded
    as an exec denial."""
    t.write("ws/chain.py", CHAIN_PROG)
    run = t.corral(["run", "--json", "-w", ws, "--",
                    "python3", "chain.py"] + names)
    r = t.result(run)
    out = r.get("stdout") or ""
    errs = {ln.split()[0]: ln.split()[-1] for ln in out.splitlines()
            if "errno" in ln}
    eq(sorted(errs), sorted(names), "every image refused: %s" % _show(out))
    eq(set(errs.values()), {"2"},
       "existing and missing %s answer alike (ENOENT): %s" % (what, _show(out)))
    true(denials_of(r, syscall="execve", layer="exec"),
         "no exec denial: %s" % _show(r.get("denials")))


@test(supervisor_only=True)
def fifo_interrupted_opens_lose_nothing(t):
    """FIFO rendezvous in strict turns while one side is signalled every
    2 ms: natively nothing is lost, since an open that met its partner
    returns its fd with the signal pending. corral answered such an open
    ERESTARTSYS and threw the fd away, or answered while its worker still
    held an end a partner then met: bytes lost, EOF or EPIPE, or both
    sides waiting to the wall limit; and an ignored SIGCHLD, which a
    traced task keeps pending, interrupted opens it never interrupts
    natively (found by a probing session)."""
    os.makedirs(t.path("ws"), exist_ok=True)
    os.chmod(t.path("ws"), 0o777)
    for args in (["r", 4, 50], ["w", 4, 50], ["r", 4, 50, "chld"],
                 ["w", 4, 50, "chld"]):
        run, r = probe(t, "fifo_meet", [60] + args, limits=["wall=60s"])
        out = r.get("stdout") or ""
        eq(r.get("status"), "ok", "fifo_meet %s (message %r): %s" % (
            args, r.get("message"), _show(out)))
        eq(out.count("lost=0"), 4, "every pair met every time: %s" %
           _show(out))
