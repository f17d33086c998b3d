"""Filesystem confinement: what of /proc and /dev stays usable. The run's
own /proc entries, harmless globals and the usual devices work; /dev/shm
objects the run makes work (multiprocessing). The refusals (other pids,
/proc/sys, kcore, pre-existing shm objects) are in test_d0_fs_attacks.
"""

import glob
import json
import os
import shutil
import subprocess

from harness import CFG, contains, eq, true, test
from test_d1_fs_goodwork import _ok
from test_d0_fs_attacks import FsFix


@test
def fs_proc_self_readable(t):
    fx = FsFix(t)
    run = fx.sh("grep -c '^Name:' /proc/self/status; "
                "grep -c 'r-xp' /proc/self/maps | grep -vc '^0$'; "
                "cut -d' ' -f3 /proc/thread-self/stat; "
                "readlink /proc/self/cwd; readlink /proc/self/exe; "
                "ls /proc/self/fd | grep -c '^[0-2]$'; "
                "test -r /proc/self/cmdline && echo cmdline; "
                "cat /proc/self/limits | grep -c '^Max open files'; "
                "cat /proc/self/mountinfo >/dev/null && echo mountinfo; "
                # /proc/self is a symlink to the caller's pid (not the
                # supervisor's): readlink says which.
                "python3 -c 'import os; print(os.readlink(\"/proc/self\") "
                "== str(os.getpid()), os.readlink(\"/proc/thread-self\") "
                "== \"%d/task/%d\" % (os.getpid(), __import__(\"threading\").get_native_id()))'")
    r = _ok(fx, run, "/proc/self")
    eq(r.get("stdout"), "1\n1\nR\n%s\n/usr/bin/readlink\n3\ncmdline\n1\n"
       "mountinfo\nTrue True\n" % fx.ws, "stdout")
    fx.check()


@test
def fs_proc_child_readable(t):
    fx = FsFix(t)
    # Until the child has exec'd sleep its cmdline is the shell's (which
    # holds the word too: anchored) or, in the middle of the exec, empty:
    # wait for it, without a tight bound.
    run = fx.sh("sleep 30 & p=$!; i=0; while [ $i -lt 100 ] && ! grep -q "
                "'^sleep' /proc/$p/cmdline; do sleep 0.1; i=$((i+1)); done; "
                "tr '\\0' ' ' < /proc/$p/cmdline; echo; "
                "grep -c '^Pid:' /proc/$p/status; readlink /proc/$p/cwd; "
                "cut -d' ' -f1 /proc/$$/stat | grep -c \"^$$\\$\"; "
                "kill $p; wait $p 2>/dev/null; echo done")
    r = _ok(fx, run, "/proc/<child>")
    eq(r.get("stdout"), "sleep 30 \n1\n%s\n1\ndone\n" % fx.ws, "stdout")
    fx.check()


@test
def fs_proc_globals(t):
    fx = FsFix(t)
    run = fx.sh("grep -c '^processor' /proc/cpuinfo | grep -vc '^0$'; "
                "grep -c '^MemTotal:' /proc/meminfo; "
                "grep -c '^cpu ' /proc/stat; "
                "awk '{print ($1 > 0)}' /proc/uptime; "
                "grep -q . /proc/loadavg && echo loadavg; "
                "python3 -c 'import os; print(os.cpu_count() > 0)'; "
                "nproc | grep -vc '^0$'; "
                "cat /proc/sys/net/core/somaxconn "
                "/proc/sys/kernel/cap_last_cap; "
                "grep -Ec '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-' "
                "/proc/sys/kernel/random/uuid")
    r = _ok(fx, run, "/proc globals")
    # Read as natively (Go sizes its listen backlog from somaxconn).
    native = []
    for name in ("net/core/somaxconn", "kernel/cap_last_cap"):
        with open("/proc/sys/" + name) as f:
            native.append(f.read())
    # A random UUID at each read (a probing session found it absent).
    eq(r.get("stdout"), "1\n1\n1\n1\nloadavg\nTrue\n1\n" + "".join(native)
       + "1\n", "stdout")
    fx.check()


@test
def fs_proc_sys_lists_what_it_grants(t):
    """/proc/sys and /proc/tty, ancestors of the files the rules grant,
    list those files and the directories leading to them, as / and /sys
    do; the rest stays absent, and `sysctl -a` reads each granted
    value. An earlier build answered EACCES to the listing (a walk of
    /proc/sys stopped at the parent of files it may read; found by a
    differential probing session)."""
    fx = FsFix(t)
    run = fx.sh("python3 -c 'import os\n"
                "for r, d, f in os.walk(\"/proc/sys\"):\n"
                "    print(r, sorted(d), sorted(f))\n"
                "print(sorted(os.listdir(\"/proc/tty\")))'; "
                "/sbin/sysctl -a 2>&1 | grep -c ' = '; echo rc=$?; "
                "ls /proc/sys/kernel/random/boot_id 2>&1 >/dev/null | "
                "grep -c 'No such file'")
    r = _ok(fx, run, "/proc/sys listings")
    eq(r.get("stdout"),
       "/proc/sys ['fs', 'kernel', 'net', 'vm'] []\n"
       "/proc/sys/fs [] ['pipe-max-size']\n"
       "/proc/sys/kernel ['random'] ['cap_last_cap', 'ngroups_max', "
       "'osrelease', 'pid_max']\n"
       "/proc/sys/kernel/random [] ['uuid']\n"
       "/proc/sys/net ['core', 'ipv4'] []\n"
       "/proc/sys/net/core [] ['somaxconn']\n"
       "/proc/sys/net/ipv4 [] ['ip_local_port_range']\n"
       "/proc/sys/vm [] ['overcommit_memory']\n"
       "['drivers']\n9\nrc=0\n1\n", "stdout")
    eq([d for d in r.get("denials") or []
        if d.get("target") in ("/proc/sys", "/proc/sys/kernel", "/proc/tty")],
       [], "no denial for the listings")
    fx.check()


@test
def fs_dev_nodes(t):
    fx = FsFix(t)
    run = fx.sh(
        "echo gone > /dev/null && echo null-w; cat /dev/null | wc -c; "
        "head -c 5 /dev/zero | od -An -tx1 | tr -d ' '; "
        "head -c 16 /dev/urandom | wc -c; head -c 4 /dev/random | wc -c; "
        "echo fd1 > /dev/fd/1; echo stdout > /dev/stdout; "
        "echo stderr > /dev/stderr; echo fd2 >/dev/fd/2; "
        "echo in | cat /dev/stdin; echo in0 | cat /dev/fd/0; "
        "python3 -c 'import errno\n"
        "try:\n f = open(\"/dev/full\", \"wb\", buffering=0)\n"
        " f.write(b\"x\")\n"
        "except OSError as e: print(\"full\", errno.errorcode[e.errno])'")
    r = _ok(fx, run, "/dev nodes")
    eq(r.get("stdout"), "null-w\n0\n0000000000\n16\n4\nfd1\nstdout\nin\n"
       "in0\nfull ENOSPC\n", "stdout")
    eq(r.get("stderr"), "stderr\nfd2\n", "stderr")
    fx.check()


@test
def fs_shm_own_objects(t):
    fx = FsFix(t)
    before = set(os.listdir("/dev/shm"))
    run = fx.run(["python3", "-c",
                  "from multiprocessing import shared_memory as s\n"
                  "import multiprocessing as m, os\n"
                  "a = s.SharedMemory(create=True, size=64)\n"
                  "a.buf[:5] = b'hello'\n"
                  "b = s.SharedMemory(name=a.name)\n"
                  "print(bytes(b.buf[:5]).decode())\n"
                  "print(os.path.exists('/dev/shm/' + a.name))\n"
                  "b.close(); a.close(); a.unlink()\n"
                  "print(os.path.exists('/dev/shm/' + a.name))\n"
                  "if __name__ == '__main__':\n"
                  "    v = m.Value('i', 0)\n"
                  "    def inc(v):\n"
                  "        with v.get_lock(): v.value += 1\n"
                  "    ps = [m.Process(target=inc, args=(v,)) "
                  "for _ in range(3)]\n"
                  "    [p.start() for p in ps]; [p.join() for p in ps]\n"
                  "    print(v.value)\n"])
    r = _ok(fx, run, "shared memory made in the run")
    eq(r.get("stdout"), "hello\nTrue\nFalse\n3\n", "stdout")
    after = set(os.listdir("/dev/shm"))
    # Only what this program makes (shared_memory's psm_*, the semaphores'
    # sem.mp-*): /dev/shm is the host's, and other suites on a shared
    # machine come and go in it meanwhile.
    left = [n for n in after - before if n.startswith(("psm_", "sem.mp-"))]
    eq(left, [], "/dev/shm objects left behind by the run")
    fx.check()


@test
def fs_shm_shell(t):
    fx = FsFix(t)
    name = "corral-own-" + t.marker
    try:
        run = fx.sh("echo mine > /dev/shm/%s && cat /dev/shm/%s && "
                    "rm /dev/shm/%s && echo removed" % (name, name, name))
        r = _ok(fx, run, "a /dev/shm file made in the run")
        eq(r.get("stdout"), "mine\nremoved\n", "stdout")
        true(not os.path.exists("/dev/shm/" + name), "left in /dev/shm")
        fx.check()
    finally:
        try:
            os.unlink("/dev/shm/" + name)
        except OSError:
            pass


SHM_TREE = r"""
import errno, os, sys
def t(name, f):
    try:
        r = f()
        print(name, "=", "ok" if r is None else r)
    except OSError as e:
        print(name, "=", errno.errorcode[e.errno])
top = "/dev/shm/" + sys.argv[1]
t("mkdir", lambda: os.mkdir(top))
t("create below", lambda: os.close(os.open(top + "/a", os.O_CREAT | os.O_WRONLY, 0o600)))
t("makedirs", lambda: os.makedirs(top + "/x/y/z"))
t("write deep", lambda: open(top + "/x/y/z/f", "w").write("deep"))
sd = os.open(top + "/x", os.O_RDONLY | os.O_DIRECTORY)
t("openat a dirfd", lambda: os.close(os.open("y/g", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=sd)))
t("list", lambda: sorted(os.listdir(top + "/x/y")))
t("chdir", lambda: os.chdir(top + "/x/y"))
yd = os.open(top + "/x/y", os.O_RDONLY | os.O_DIRECTORY)
os.fchdir(yd)
t("relative read", lambda: open("z/f").read())
t("relative up", lambda: sorted(os.listdir("..")))
t("rename a file down", lambda: os.rename(top + "/a", top + "/x/y/a"))
t("rename a dir up", lambda: os.rename(top + "/x/y/z", top + "/x/z"))
os.mkdir("/dev/shm/" + sys.argv[1] + "-2")
t("rename a dir deeper", lambda: os.rename("/dev/shm/" + sys.argv[1] + "-2", top + "/x/moved"))
d = top
for i in range(2, 9):
    d += "/d%d" % i
t("depth 8", lambda: os.makedirs(d))
t("depth 9", lambda: os.mkdir(d + "/d9"))
t("file at depth 9", lambda: os.open(d + "/f9", os.O_CREAT | os.O_WRONLY, 0o600))
os.chdir("/")
import shutil
t("rmtree", lambda: shutil.rmtree(top))
t("gone", lambda: os.path.exists(top))
"""


@test
def fs_shm_subdirectories_hold_files(t):
    """A directory made in /dev/shm took nothing: every name below it
    answered ENOENT ("outside every root"), so `mktemp -d -p /dev/shm`
    and a scratch tree there broke (found by a probe). The run's
    /dev/shm tree may now go CR_SHM_DEPTH (8) names deep, the depth to
    which it is measured and removed; a directory may not move deeper
    into it (EXDEV, recorded: its tree could outgrow that), and nothing
    of it is left after the run. chdir into it is refused (EACCES,
    recorded): the kernel would enter the host's /dev/shm/NAME, not the
    run's; fchdir of a descriptor of it works."""
    fx = FsFix(t)
    name = "corral-tree-" + t.marker[-12:]
    run = fx.run(["python3", "-c", SHM_TREE, name])
    r = _ok(fx, run, "a tree in /dev/shm")
    eq(r.get("stdout"),
       "mkdir = ok\ncreate below = ok\nmakedirs = ok\nwrite deep = 4\n"
       "openat a dirfd = ok\nlist = ['g', 'z']\nchdir = EACCES\n"
       "relative read = deep\nrelative up = ['y']\n"
       "rename a file down = ok\nrename a dir up = ok\n"
       "rename a dir deeper = EXDEV\ndepth 8 = ok\ndepth 9 = EACCES\n"
       "file at depth 9 = EACCES\nrmtree = ok\ngone = False\n", "stdout")
    true(any(d.get("reason") == "a directory may not move into /dev/shm from elsewhere, nor deeper in it"
             for d in r.get("denials") or []),
         "the deeper move is recorded: %r" % r.get("denials"))
    left = glob.glob("/dev/shm/.corral-*/" + glob.escape(name) + "*")
    eq(left, [], "left in /dev/shm")
    fx.check()


@test
def fs_shm_host_directory_is_never_entered(t):
    """chdir("/dev/shm/NAME") of a directory NAME the run made (in its
    private directory) was continued, so the kernel entered the host's
    /dev/shm/NAME, another program's directory of the same name, and the
    run then listed and read what was in it through relative paths.
    Refused now (EACCES, recorded), and a working directory in the
    host's /dev/shm is never the run's: what is in it looks absent."""
    fx = FsFix(t)
    host = "/dev/shm/corral-host-" + t.marker[-12:]
    os.mkdir(host, 0o755)
    try:
        with open(host + "/secret", "w") as f:
            f.write("HOST-SHM-SECRET")
        os.chmod(host + "/secret", 0o644)
        code = ("import errno, os, sys\n"
                "def t(n, f):\n"
                "    try: print(n, f())\n"
                "    except OSError as e: print(n, errno.errorcode[e.errno])\n"
                "t('mkdir', lambda: os.mkdir(sys.argv[1]))\n"
                "t('chdir', lambda: os.chdir(sys.argv[1]))\n"
                "t('list', lambda: os.listdir('.') if os.getcwd().startswith('/dev/shm') else 'not there')\n"
                "t('read', lambda: open(sys.argv[1] + '/secret').read())\n")
        run = fx.run(["python3", "-c", code, host])
        r = _ok(fx, run, "the host's /dev/shm directory")
        out = r.get("stdout") or ""
        true("HOST-SHM-SECRET" not in out and "secret" not in out,
             "the host's directory was reached: %r" % out)
        eq(out, "mkdir None\nchdir EACCES\nlist not there\nread ENOENT\n",
           "stdout")
        fx.check()
    finally:
        subprocess.run(["rm", "-rf", host])


@test
def fs_shm_kernel_and_walk_agree_for_continued_calls(t):
    """chdir and execve are continued to the kernel after the check, and
    the walk takes /dev/shm for the run's private directory: above that
    directory (an fchdir to an fd of /dev/shm, then chdir("..")) the
    walk found /dev where the kernel entered the host's /dev/shm, and
    from there execve("NAME") was judged as the run's NAME and ran the
    host's /dev/shm/NAME (without Landlock, a script's first line: found
    by a probe). Where the two would differ, both calls are refused
    (EACCES, recorded)."""
    fx = FsFix(t)
    name = "corral-hs-" + t.marker[-12:]
    host = "/dev/shm/" + name
    with open(host, "w") as f:
        f.write("#!/bin/echo HOST-SHM-SCRIPT\n")
    os.chmod(host, 0o755)
    try:
        code = ("import errno, os, sys\n"
                "def t(n, f):\n"
                "    try: print(n, f())\n"
                "    except OSError as e: print(n, errno.errorcode[e.errno])\n"
                "os.mkdir('/dev/shm/' + sys.argv[1])\n"
                "os.fchdir(os.open('/dev/shm', os.O_RDONLY | os.O_DIRECTORY))\n"
                "t('chdir ..', lambda: os.chdir('..'))\n"
                "t('chdir /dev/shm', lambda: os.chdir('/dev/shm'))\n"
                "t('exec', lambda: os.execv(sys.argv[1], [sys.argv[1]]))\n")
        run = fx.run(["python3", "-c", code, name])
        r = _ok(fx, run, "/dev/shm, the walk's and the kernel's")
        out = r.get("stdout") or ""
        true("HOST-SHM-SCRIPT" not in out, "the host's script ran: %r" % out)
        eq(out, "chdir .. EACCES\nchdir /dev/shm None\nexec EACCES\n",
           "stdout")
        why = "the kernel would resolve this path elsewhere (the run's /dev/shm is its own)"
        eq(sorted({d.get("syscall") for d in r.get("denials") or []
                   if d.get("reason") == why}), ["chdir", "execve"],
           "both refusals recorded: %r" % r.get("denials"))
        fx.check()
    finally:
        os.unlink(host)


@test
def fs_shm_takes_no_directory_from_a_workspace_on_its_tmpfs(t):
    """A workspace on /dev/shm's tmpfs could move a directory of any
    depth into the run's /dev/shm, which is measured and removed down to
    8 names only: 192 MB stayed in the host's RAM after the run,
    uncounted (found by a probe). A directory moves into the run's
    /dev/shm only from within it now (EXDEV, recorded; a file still
    moves)."""
    ws = "/dev/shm/corral-ws-" + t.marker[-12:]
    os.mkdir(ws)
    try:
        os.chown(ws, os.getuid(), os.getgid())
        code = ("import errno, os\n"
                "def t(n, f):\n"
                "    try: print(n, f())\n"
                "    except OSError as e: print(n, errno.errorcode[e.errno])\n"
                "os.makedirs('t0/a/b/c')\n"
                "open('f', 'w').close()\n"
                "t('dir', lambda: os.rename('t0', '/dev/shm/t0'))\n"
                "t('file', lambda: os.rename('f', '/dev/shm/f'))\n")
        run = t.corral(["run", "--json", "-w", ws, "--", "python3", "-c",
                        code])
        r = t.result(run)
        eq((r.get("status"), r.get("stdout")), ("ok", "dir EXDEV\nfile None\n"),
           "status and stdout (stderr %r)" % r.get("stderr"))
        true(any(d.get("syscall") == "rename" for d in r.get("denials") or []),
             "the refusal is recorded: %r" % r.get("denials"))
    finally:
        subprocess.run(["rm", "-rf", ws])


@test
def fs_proc_net_refused(t):
    """/proc/net (and /proc/<pid>/net) list every socket of the host: a
    map of local services. Refused."""
    fx = FsFix(t)
    run = fx.sh("cat /proc/net/tcp; echo rc=$?; cat /proc/self/net/unix; "
                "echo rc=$?; cat /proc/$$/net/tcp6; echo rc=$?")
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\nrc=1\n", "stdout")
    fx.check()


@test
def fs_broad_root_keeps_proc_rules(t):
    """Adding a read root never takes access away, nor opens /proc: with
    --ro / (or --ro /proc) the run's own /proc entries stay readable and
    corral's stay refused."""
    fx = FsFix(t)
    for opt in ("/", "/proc"):
        run = fx.sh("p=$(sed -n 's/^TracerPid:[[:space:]]*//p' "
                    "/proc/self/status); echo tracer=$p; "
                    "grep -c '^Name:' /proc/self/status; "
                    "cat /proc/$p/environ >/dev/null; echo rc=$?; "
                    "cat /proc/1/environ >/dev/null; echo rc=$?; "
                    "python3 -c 'import os; print(os.readlink("
                    "\"/proc/self\") == str(os.getpid()))'",
                    opts=["--ro", opt])
        r = fx.result(run)
        eq(r.get("stdout"), "tracer=%d\n1\nrc=1\nrc=1\nTrue\n" % run.pid,
           "stdout with --ro %s" % opt)
    fx.check()


@test
def fs_link_into_proc_under_a_broad_root_is_judged_where_it_leads(t):
    """With --ro /, a relative link that already lies outside every deeper
    root and leads to /proc (up -> ../..) was followed by the kernel in
    the fast resolution and judged by its text, a path of "/": an earlier
    build read another process's environment and stack through it. A path
    through a link is now walked, and judged where the link leads."""
    fx = FsFix(t)
    up = os.path.join(fx.root, "plink")
    os.symlink(os.path.relpath("/proc", fx.root), up)
    me = os.getpid()
    run = fx.sh("cat %s/%d/environ >/dev/null; echo rc=$?; "
                "cat %s/%d/cmdline >/dev/null; echo rc=$?; "
                "cat %s/self/status | grep -c '^Name:'" % (up, me, up, me, up),
                opts=["--ro", "/"])
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\n1\n", "stdout")
    d = [x for x in r.get("denials", []) if "/proc/%d" % me in
         (x.get("target") or "")]
    true(d, "the reach is recorded: %r" % r.get("denials"))
    fx.check()


HELD_GONE_PROG = r'''
import os
def tryp(what, flags):
    try:
        fd = os.open("/dev/stdin", flags)
        data = os.read(fd, 100) if flags == os.O_RDONLY else b""
        if flags != os.O_RDONLY:
            os.write(fd, b"OVERWRITTEN")
        os.close(fd)
        print(what, "ok", data.decode())
    except OSError as e:
        print(what, "errno", e.errno)
tryp("read", os.O_RDONLY)
tryp("write", os.O_WRONLY)
tryp("readwrite", os.O_RDWR)
'''


def _gone_host_run(t, fx, name, src, mode, flags):
    """A host file outside every root, removed, on the program's stdin
    opened with flags: (the run, its result, corral's fd of the file)."""
    host = t.path("hostfile-" + name)
    with open(host, "w") as f:
        f.write("host data")
    os.chmod(host, mode)
    os.makedirs(t.path("prog"), exist_ok=True)
    prog = t.write("prog/%s.py" % name, src)
    keep = os.open(host, flags)
    os.unlink(host)
    try:
        run = fx.run(["python3", prog], opts=["--ro", t.path("prog")],
                     preexec=lambda: os.dup2(keep, 0))
        return run, fx.result(run, statuses=None), keep
    except BaseException:
        os.close(keep)
        raise


@test
def fs_removed_host_file_reopens_no_wider_than_its_fd(t):
    """The caller's stdin a host file outside every root, removed before
    the run (its link names " (deleted)"): the program may reopen it
    through /dev/stdin for reading, which its fd already allows, and not
    for writing, which natively its owner could (the place it was
    removed from rules it, and no root is there). The file is unchanged."""
    fx = FsFix(t)
    run, r, keep = _gone_host_run(t, fx, "heldgone", HELD_GONE_PROG, 0o666,
                                  os.O_RDONLY)
    try:
        eq(r.get("stdout"), "read ok host data\nwrite errno 13\n"
           "readwrite errno 13\n", "stdout (stderr %r)" % r.get("stderr"))
        eq(os.pread(keep, 100, 0), b"host data", "the removed file's data")
    finally:
        os.close(keep)
    fx.check()


HELD_GONE_META = r'''
import ctypes, os, struct
def tryp(what, fn):
    try:
        fn()
        print(what, "ok")
    except OSError as e:
        print(what, "errno", e.errno)
L = "/proc/self/fd/0"
tryp("reopen rw", lambda: os.close(os.open(L, os.O_RDWR)))
tryp("chmod", lambda: os.chmod(L, 0o777))
tryp("chown", lambda: os.chown(L, os.getuid(), os.getgid()))
tryp("utime", lambda: os.utime(L, (1, 1)))
tryp("utime now", lambda: os.utime(L))
tryp("setxattr", lambda: os.setxattr(L, "user.corral_t", b"x"))
tryp("truncate", lambda: os.truncate(L, 4))
# openat2(/proc/self/fd, "0", RESOLVE_BENEATH | RESOLVE_IN_ROOT): the
# kernel's scoped lookups jump through no magic link.
libc = ctypes.CDLL(None, use_errno=True)
d = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
for name, res in (("beneath", 0x08), ("in_root", 0x10)):
    how = struct.pack("QQQ", os.O_RDONLY, 0, res)
    fd = libc.syscall(437, d, b"0", how, len(how))
    print("openat2", name, "ok" if fd >= 0 else "errno %d" % ctypes.get_errno())
'''


@test
def fs_removed_host_file_on_a_writable_fd_keeps_its_metadata(t):
    """The same removed host file on stdin opened read-write: through its
    link the program may write its data (the fd already can), but its
    mode, owner, times and attributes are the place's, as fchmod on that
    fd answers (a probing session chmod-ed it 0777 and gave it an xattr
    through /proc/self/fd/0). openat2 with RESOLVE_BENEATH or IN_ROOT
    through such a link is EXDEV, as the kernel's scoped lookups are."""
    fx = FsFix(t)
    run, r, keep = _gone_host_run(t, fx, "heldmeta", HELD_GONE_META, 0o600,
                                  os.O_RDWR)
    try:
        eq(r.get("stdout"), "reopen rw ok\nchmod errno 13\nchown errno 13\n"
           "utime errno 13\nutime now errno 13\nsetxattr errno 13\n"
           "truncate ok\nopenat2 beneath errno 18\n"
           "openat2 in_root errno 18\n",
           "stdout (stderr %r)" % r.get("stderr"))
        after = os.fstat(keep)
        eq(oct(after.st_mode), "0o100600", "the file's mode")
        eq(os.listxattr(keep), [], "the file's attributes")
        eq(os.pread(keep, 100, 0), b"host", "truncated through the link")
    finally:
        os.close(keep)
    fx.check()


LISTED = r"""
import os, sys
bad = []
for d in sys.argv[1:]:
    for n in os.listdir(d):
        try:
            os.lstat(os.path.join(d, n))
        except OSError as e:
            bad.append("%s/%s: %s" % (d, n, e.strerror))
print("listed but absent:", bad)
print("net listed:", "net" in os.listdir("/proc/self"))
"""


@test
def listings_of_readable_proc_and_sys_directories_hold_no_absent_name(t):
    """A directory the run may read was listed in full, though the rules
    hide some of its entries from every lookup: /proc/PID and
    /proc/PID/task/TID listed `net` (the host's sockets, ENOENT to a
    stat), /sys/devices/system/node its `uevent`, `power` and others
    (found by a differential probe). Each listed name is there now."""
    script = t.write("listed.py", LISTED)
    run = t.corral(["run", "--json", "--ro", t.tmp, "--",
                    "/usr/bin/python3", script, "/proc/self",
                    "/proc/thread-self", "/sys/devices/system/node",
                    "/proc"])
    r = t.result(run)
    eq(r.get("stdout"), "listed but absent: []\nnet listed: False\n",
       "listings (stderr %r)" % r.get("stderr"))


PROC_NAMES = r'''
import os, errno
def r(label, f):
    try:
        f()
        print(label, "ok")
    except OSError as e:
        print(label, errno.errorcode[e.errno])
W, C = os.O_WRONLY, os.O_CREAT
r("creat", lambda: os.close(os.open("/proc/self/newf", W | C, 0o600)))
r("excl", lambda: os.close(os.open("/proc/self/newf", os.O_RDWR | C | os.O_EXCL)))
r("tmpfile", lambda: os.close(os.open("/proc/self", W | os.O_TMPFILE, 0o600)))
r("mkdir", lambda: os.mkdir("/proc/self/newd"))
r("symlink", lambda: os.symlink("x", "/proc/self/newl"))
r("mkfifo", lambda: os.mkfifo("/proc/self/newp"))
r("rename", lambda: os.rename("/proc/self/status", "/proc/self/st2"))
r("link", lambda: os.link("/proc/self/status", "/proc/self/st3"))
r("unlink", lambda: os.unlink("/proc/self/status"))
r("rmdir", lambda: os.rmdir("/proc/self/fd"))
r("chmod", lambda: os.chmod("/proc/self/status", 0o600))
r("write", lambda: os.close(os.open("/proc/self/status", W)))
r("up", lambda: os.mkdir("/proc/newd"))
r("sys", lambda: os.mkdir("/proc/sys/newd"))
r("top-unlink", lambda: os.unlink("/proc/version"))
r("top-rmdir", lambda: os.rmdir("/proc/version"))
import threading
fd = os.open("/proc/version", os.O_RDONLY)
pr, pw = os.pipe()
def own(tid):
    for d in ("/proc/self", "/proc/self/task/%d" % tid):
        r("fd-unlink", lambda: os.unlink("%s/fd/%d" % (d, fd)))
        r("fd-rmdir", lambda: os.rmdir("%s/fd/%d" % (d, fd)))
        r("fdinfo-unlink", lambda: os.unlink("%s/fdinfo/%d" % (d, fd)))
        r("fdinfo-rmdir", lambda: os.rmdir("%s/fdinfo/%d" % (d, fd)))
    r("ns-unlink", lambda: os.unlink("/proc/self/ns/uts"))
    r("pipe-chmod", lambda: os.chmod("/proc/self/fd/%d" % pw, 0o600))
    print("pipe-mode", oct(os.fstat(pw).st_mode & 0o777))
th = threading.Thread(target=lambda: own(threading.get_native_id()))
th.start()
th.join()
'''


@test
def fs_proc_names_made_and_removed_answer_as_procfs(t):
    """procfs makes no name and removes or re-modes none: the kernel
    answers ENOENT for a missing name and EPERM for an existing one.
    corral refused those calls with EACCES (found by a differential
    probing session); they answer as natively now, every one recorded.
    A process's own fd/ gives the process every permission, so its entry
    is EPERM to unlink and ENOTDIR to rmdir, while fdinfo/ and ns/ give
    no write (EACCES); corral answered its own EACCES, then EPERM
    everywhere, and a chmod of a pipe through /proc/self/fd/N failed
    EOPNOTSUPP (found by a differential sweep of /proc/self)."""
    fx = FsFix(t)
    prog = fx.wsp("procnames.py")
    with open(prog, "w") as f:
        f.write(PROC_NAMES)
    nat = fx.native(["python3", prog])
    for ll in ("off", "auto"):
        run = fx.run(["python3", prog], opts=["--landlock=" + ll])
        r = _ok(fx, run, "procfs names, --landlock=%s" % ll)
        eq(r.get("stdout"), nat.out.decode(), "answers, --landlock=%s" % ll)
        true(len(r.get("denials") or []) >= 10,
             "the refusals are recorded (%d)" % len(r.get("denials") or []))
    fx.check()


def run_labelled(fx, name, text, args, opts, what):
    """text (a program printing "label value" lines) under corral with
    opts and a wall budget: its lines as a dict, the run `ok`."""
    prog = fx.wsp(name)
    with open(prog, "w") as f:
        f.write(text)
    run = fx.run(["python3", prog] + list(args),
                 opts=list(opts) + ["--limit", "wall=60s"])
    r = _ok(fx, run, what)
    return dict(line.split(" ", 1) for line in
                r.get("stdout", "").splitlines())


SHM_ROOTS = r'''
import os, sys
ro, sib, dn, chain = sys.argv[1:5]
def t(name, f):
    try:
        print(name, f())
    except OSError as e:
        print(name, "errno", e.errno)
def write(p):
    with open(p, "w") as f:
        f.write("x" * 4096)
    return "written"
t("ro-read", lambda: open(ro + "/file").read().strip())
t("ro-write", lambda: write(ro + "/big"))
t("ro-unlink", lambda: os.unlink(ro + "/file"))
t("sib-list", lambda: sorted(os.listdir(sib)))
t("sib-read", lambda: open(sib + "/other").read().strip())
t("sib-plant", lambda: write(sib + "/planted"))
t("deny-read", lambda: open(dn + "/secret/key").read().strip())
t("deny-write", lambda: write(dn + "/secret/key"))
t("deny-list", lambda: sorted(os.listdir(dn)))
t("chain-read", lambda: open(chain + "/f").read().strip())
t("chain-unlink", lambda: os.unlink(os.readlink(chain)))
'''


@test
def fs_roots_named_in_host_shm_grant_only_what_they_say(t):
    """A root the caller names under /dev/shm is the host's (not the
    run's private directory), and so is every name on its way; /dev/shm's
    own grant (the run's names, read and write) was added on top there:
    a read root under /dev/shm was written (50 MiB, uncounted) and its
    file removed, its parent's other files read and removed, a deny entry
    in it read and overwritten, and a link on a root's way through
    /dev/shm removed and replaced (found by a probing session). Only the
    roots grant anything there now."""
    fx = FsFix(t)
    tag = "crtest-" + t.marker
    ro = "/dev/shm/%s-ro" % tag
    par = "/dev/shm/%s-p" % tag
    dn = "/dev/shm/%s-dn" % tag
    hop = "/dev/shm/%s-h" % tag
    real = os.path.join(fx.root, "real")
    made = [ro, par, dn, hop]
    try:
        os.makedirs(ro)
        with open(ro + "/file", "w") as f:
            f.write("ro\n")
        os.makedirs(par + "/sub")
        with open(par + "/other", "w") as f:
            f.write("sibling\n")
        os.chmod(par + "/other", 0o600)
        os.makedirs(dn + "/secret")
        with open(dn + "/secret/key", "w") as f:
            f.write("denied\n")
        os.makedirs(real)
        with open(real + "/f", "w") as f:
            f.write("chained\n")
        os.symlink(real, hop)
        chain = os.path.join(fx.root, "r")
        os.symlink(hop, chain)
        with open(os.path.join(CFG.policy_dir, "default.json")) as f:
            doc = json.load(f)
        fsd = doc["classes"]["default"]["fs"]
        fsd["read"] = list(fsd["read"]) + [ro, par + "/sub", dn, chain]
        fsd["deny"] = [dn + "/secret"]
        pol = os.path.join(fx.root, "pol.json")
        with open(pol, "w") as f:
            json.dump(doc, f)
        got = run_labelled(fx, "shm.py", SHM_ROOTS, [ro, par, dn, chain],
                           ["--policy", pol, "--limit", "disk=1MiB"],
                           "roots in the host's /dev/shm")
        eq(got.get("ro-read"), "ro", "a read root's file is read")
        eq(got.get("ro-write"), "errno 13", "a read root is not written")
        eq(got.get("ro-unlink"), "errno 13", "a read root's file stays")
        eq(got.get("sib-list"), "['sub']", "a root's parent lists the root")
        eq(got.get("sib-read"), "errno 2", "a root's sibling is absent")
        true(got.get("sib-plant", "").startswith("errno"),
             "nothing is made beside a root: %r" % got.get("sib-plant"))
        eq(got.get("deny-read"), "errno 2", "a deny entry is absent")
        eq(got.get("deny-write"), "errno 2", "a deny entry is not written")
        eq(got.get("deny-list"), "[]", "a deny entry is not listed")
        eq(got.get("chain-read"), "chained", "a root through /dev/shm reads")
        eq(got.get("chain-unlink"), "errno 13", "its link in /dev/shm stays")
        eq(os.listdir(ro), ["file"], "the read root after the run")
        eq(os.readlink(hop), real, "the link on the root's way after the run")
        with open(dn + "/secret/key") as f:
            eq(f.read(), "denied\n", "the denied file after the run")
    finally:
        for m in made:
            if os.path.islink(m):
                os.unlink(m)
            elif os.path.isdir(m):
                shutil.rmtree(m, ignore_errors=True)
    fx.check()


def deny_policy(fx, entries):
    """The default class with these deny entries, as a policy file in
    the test's directory: its path."""
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        doc = json.load(f)
    doc["classes"]["default"]["fs"]["deny"] = list(entries)
    pol = os.path.join(fx.root, "pol-deny.json")
    with open(pol, "w") as f:
        json.dump(doc, f)
    return pol


@test
def fs_deny_holds_over_corrals_own_grants(t):
    """A deny entry is nothing, even where corral grants by itself: a
    policy denying /dev/urandom, /dev/zero and /sys/kernel/mm/transparent_hugepage
    let the program open all three (found by a probing session)."""
    fx = FsFix(t)
    pol = deny_policy(fx, [
        "/dev/urandom", "/dev/zero", "/sys/kernel/mm/transparent_hugepage"])
    run = fx.sh("head -c1 /dev/urandom >/dev/null && echo urandom; "
                "head -c1 /dev/zero >/dev/null && echo zero; "
                "cat /sys/kernel/mm/transparent_hugepage/enabled "
                ">/dev/null && echo thp; echo end",
                opts=["--policy", pol, "--limit", "wall=60s"])
    r = _ok(fx, run, "deny over built-in grants")
    eq(r.get("stdout"), "end\n", "nothing denied was read")
    ds = {d.get("target") for d in r.get("denials") or []}
    true({"/dev/urandom", "/dev/zero"} <= ds,
         "the refusals are recorded: %r" % sorted(ds))
    fx.check()


SHM_RW_ROOTS = r'''
import os, sys
r1, r2 = sys.argv[1:3]
def t(name, f):
    try:
        print(name, f())
    except OSError as e:
        print(name, "errno", e.errno)
t("write-in", lambda: open(r1 + "/f", "w").write("in"))
t("rename-root", lambda: os.rename(r1, r2) or "renamed")
t("rmdir-root", lambda: os.rmdir(r2) or "removed")
t("mkdir-root", lambda: os.mkdir(r2 + "-new") or "made")
os.mkdir("/dev/shm/x")
pfd = os.open("/dev/shm/x/..", os.O_RDONLY)
name = os.path.basename(r1)
t("twin-mkdir", lambda: os.mkdir(name, dir_fd=pfd) or "made")
t("twin-open", lambda: os.open(name + "/f", os.O_RDONLY, dir_fd=pfd) and "opened")
'''


@test
def fs_write_roots_in_host_shm_are_not_moved_or_twinned(t):
    """A writable root the caller names directly in /dev/shm: /dev/shm's
    own write grant, meant for the run's names (moved into its private
    directory), let the program rename it over another root, remove it
    and make one afresh; and a root's name looked up from the private
    directory (an fd of /dev/shm/x/..) made a twin there, untracked by
    the disk budget and never removed (found by a probing session).
    Inside the root the program still writes."""
    fx = FsFix(t)
    tag = "crtest-" + t.marker
    r1, r2 = "/dev/shm/%s-rw" % tag, "/dev/shm/%s-rw2" % tag
    made = [r1, r2, r2 + "-new"]
    try:
        os.makedirs(r1)
        os.makedirs(r2)
        got = run_labelled(fx, "shmrw.py", SHM_RW_ROOTS, [r1, r2],
                           ["--rw", r1, "--rw", r2],
                           "writable roots in the host's /dev/shm")
        eq(got.get("write-in"), "2", "a file written inside the root")
        eq(got.get("rename-root"), "errno 13", "the root is not renamed")
        eq(got.get("rmdir-root"), "errno 13", "the root is not removed")
        eq(got.get("mkdir-root"), "made", "another name is the run's own")
        eq(got.get("twin-mkdir"), "errno 2", "no twin in the private directory")
        eq(got.get("twin-open"), "errno 2", "no twin opened")
        true(os.path.isdir(r1) and os.path.isdir(r2), "both roots stay")
        true(not os.path.exists(r2 + "-new"),
             "the run's own name is not the host's")
    finally:
        for m in made:
            shutil.rmtree(m, ignore_errors=True)
    fx.check()


@test
def fs_deny_of_proc_self_entries_holds(t):
    """A policy's deny of /proc/self/environ resolved at set-up to
    corral's own entry, and the walk, which names the program's entries
    by number, never met it: the program read its environment, its
    status and thread-self's (found by a probing session)."""
    fx = FsFix(t)
    pol = deny_policy(fx, [
        "/proc/self/environ", "/proc/thread-self/status"])
    run = fx.sh("for f in /proc/self/environ /proc/$$/environ "
                "/proc/thread-self/environ /proc/self/task/$$/environ "
                "/proc/thread-self/status /proc/self/stat; do "
                "cat $f >/dev/null 2>&1 && echo $f; done; echo end",
                opts=["--policy", pol, "--limit", "wall=60s"])
    r = _ok(fx, run, "deny of /proc/self entries")
    eq(r.get("stdout").replace("/proc/%s/" % "", ""), "/proc/self/stat\nend\n",
       "only what is not denied is read")
    fx.check()


@test
def fs_deny_of_proc_self_links_names_no_place_of_corrals(t):
    """A deny of /proc/self/fd/0, /proc/self/cwd or /proc/self/root was
    also resolved in corral's own process, and denied what those name
    there: /dev/null (corral's stdin), the workspace (its cwd), / (the
    program never started; found by a probing session). They deny the
    program's own entries only."""
    fx = FsFix(t)
    pol = deny_policy(fx, [
        "/proc/self/fd/0", "/proc/self/cwd", "/proc/self/root"])

    def pre():
        os.chdir(fx.ws)
    run = fx.sh("echo hi >/dev/null && echo devnull; echo x > f && cat f; "
                "ls /proc/self/cwd/ >/dev/null 2>&1 || echo cwd-denied",
                opts=["--policy", pol, "--limit", "wall=60s"],
                stdin="", preexec=pre)
    r = _ok(fx, run, "deny of /proc/self links")
    eq(r.get("stdout"), "devnull\nx\ncwd-denied\n", "stdout")
    fx.check()


STDIN_REOPEN = r'''
import os
def r(label, f):
    try:
        print(label, f())
    except OSError as e:
        print(label, "errno", e.errno)
r("read", lambda: open("/dev/stdin").read().strip())
r("proc", lambda: open("/proc/self/fd/0").read().strip())
r("stat", lambda: os.stat("/dev/stdin").st_size)
r("append", lambda: open("/proc/self/fd/0", "a").write("x"))
r("rdwr", lambda: os.open("/proc/self/fd/0", os.O_RDWR))
r("chmod", lambda: os.chmod("/dev/stdin", 0o666))
r("below", lambda: os.stat("/proc/self/fd/0/x"))
r("dotdot", lambda: os.stat("/dev/stdin/.."))
'''


@test
def fs_stdin_file_outside_the_roots_reopens_for_reading(t):
    """A caller's `cmd < file` with the file outside every root: the
    program holds it open for reading, but reopening it as /dev/stdin
    (cat /dev/stdin, awk, head) failed ENOENT, its path judged (found by a
    differential probing session). The reopen reads what the fd already
    reads now, and nothing more: no write, no mode change."""
    ws = t.path("ws")
    os.makedirs(ws)
    prog = os.path.join(ws, "stdin.py")
    with open(prog, "w") as f:
        f.write(STDIN_REOPEN)
    data = t.path("input.txt")
    with open(data, "w") as f:
        f.write("the caller's input\n")
    os.chmod(data, 0o444)
    outs = {}
    for mode in ("native", "auto", "off"):
        if mode == "native":
            argv = ["/usr/bin/python3", prog]
        else:
            argv = [t.prog("nons"), CFG.corral, "run", "--landlock=" + mode,
                    "-w", ws, "--", "/usr/bin/python3", prog]
        with open(data, "rb") as inp:
            p = subprocess.run(argv, stdin=inp, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60, cwd=ws)
        outs[mode] = p.stdout.decode()
        contains(outs[mode], "\nproc the caller's input\n",
                 "%s: the reopen reads (stderr %r)" % (mode, p.stderr))
    for mode in ("auto", "off"):
        got = dict(line.split(" ", 1) for line in outs[mode].splitlines()
                   if " " in line)
        eq(got["proc"], "the caller's input", "%s: through /proc" % mode)
        eq(got["stat"], str(len("the caller's input\n")), "%s: stat" % mode)
        eq((got["below"], got["dotdot"]), ("errno 20", "errno 20"),
           "%s: below the file, ENOTDIR as natively" % mode)
        for k in ("append", "rdwr", "chmod"):
            true(got[k].startswith("errno"), "%s: %s refused: %r" %
                 (mode, k, got[k]))
    with open(data) as f:
        eq(f.read(), "the caller's input\n", "the file is unchanged")
    t.assert_next_run_ok()
