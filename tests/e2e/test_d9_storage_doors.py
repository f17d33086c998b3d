"""Storage doors of the disk and files budgets: ways a program stores more
than its budget allows where the measurement misses it, or leaves what it
stored on the host after the run. Probe: tests/progs/deepnest.c.

The doors here are directory trees deeper than the walk's bound
(CR_BUDGET_WALK_DEPTH, 4096 levels), built in a few milliseconds by renaming
whole chains (each under the bound) into one another through descriptors
kept on their bottoms, and the program exiting before the next tick's walk
would end the run:

- the last word (cr_budget_finish) throws away a full pass that fails
  (-ELOOP) and keeps the last complete figure, so a breach made in the same
  instant is never judged: `ok` with a gigabyte under disk=16MiB;
- past 4096 levels the workspace removal (empty_dir) gives up with ELOOP,
  and `corral gc` uses the same function: the private workspace and what
  it holds stay on the host for good, whatever the disk budget was.

And directories of another user in a writable root that the run may
search and write but the walk may not list (a drop box): the walk skipped
them, so what the run wrote beneath them was never counted.
"""

import ctypes
import os
import resource
import shutil
import subprocess
import tempfile
import time

from harness import CFG, eq, true, contains, test, workspaces, check_result_shape, _show, \
    wait_for, lt

MIB = 1 << 20


def deepnest(t, limits, *args, exit_at_once=True):
    opts = ["run", "--json", "--env", "CRMARK=" + t.marker,
            "--limit", "wall=30s", "--limit", "files=100000"]
    for lim in limits:
        opts += ["--limit", lim]
    if exit_at_once:
        opts += ["--env", "DEEPNEST_EXIT=1"]
    run = t.corral(opts + t.prog_roots() + ["--", t.prog("deepnest")] +
                   [str(a) for a in args], timeout=90)
    return run, t.result(run)


def remove_left(names):
    """What a failing case left in TMPDIR goes, so the suite goes on (GNU rm
    walks any depth)."""
    for n in names:
        subprocess.run(["rm", "-rf", "--", os.path.join(CFG.tmpdir, n)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            os.unlink(os.path.join(CFG.tmpdir, n + ".lock"))
        except OSError:
            pass


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@test
def storage_deep_tree_hides_a_breach_from_the_last_word(t):
    """256 MiB allocated at once under disk=16MiB at the bottom of one
    100-level chain, a second chain renamed into it (200 levels), exit:
    all within one tick, so no walk during the run saw it. The last word's
    full pass then fails with ELOOP and cr_budget_finish keeps the figure
    of the last complete pass: the run ends `ok`, usage.disk_bytes under
    1 MiB.
    Without the second chain the same program ends limit_exceeded/disk.
    Now a last pass that cannot measure the workspace counts as a breach
    (the `unmeasurable` verdict the ticks give), never as `ok`."""
    before = workspaces()
    try:
        run, r = deepnest(t, ["disk=16MiB"], 42, 100, 256)
        # A tick may land between the allocation and the join and end
        # the run on disk before the tree is built: the right verdict
        # too, so the join is not required.
        check_result_shape(r)
        eq(r.get("status"), "limit_exceeded",
           "status of a run that allocated 256 MiB under disk=16MiB "
           "(message %r, usage.disk_bytes %r)" %
           (r.get("message"), r.get("usage", {}).get("disk_bytes")))
        true(r.get("limit") in ("disk", "files"), "limit %r" % r.get("limit"))
    finally:
        remove_left(workspaces() - before)
    t.assert_next_run_ok()


@test
def storage_deep_tree_outlives_the_run(t):
    """41 chains of 100 levels joined by 40 renames in ~12 ms: a tree 4100
    levels deep, a 256 MiB file at its bottom, under disk=16MiB. The run
    ends `ok` (the last word cannot measure it), and the removal of the
    private workspace stops at 4096 levels (empty_dir's bound): the
    workspace and the 256 MiB stay in TMPDIR after the run
    (cleanup.workspace_removed false), and `corral gc` cannot remove them
    either. Every such run leaves up to RLIMIT_FSIZE (budget + 16 GiB) on
    the host. Now removal moves subtrees deeper than 256 levels up and
    takes them pass by pass: the workspace is gone after every run,
    whatever its depth, and the run is not `ok`."""
    before = workspaces()
    free0 = free_bytes(CFG.tmpdir)
    try:
        run, r = deepnest(t, ["disk=16MiB"], 41, 100, 256)
        left = sorted(workspaces() - before)
        gc = t.corral(["gc"])
        left_after_gc = sorted(workspaces() - before)
        lost = (free0 - free_bytes(CFG.tmpdir)) // MIB
        eq(left_after_gc, [], "workspaces left on the host after the run "
           "(%r) and after `corral gc` (exit %r, %r), %d MiB of the disk "
           "still taken; cleanup %r" % (left, gc.code, gc.err[-200:], lost,
                                         r.get("cleanup")))
        eq(r.get("cleanup", {}).get("workspace_removed"), True,
           "cleanup.workspace_removed")
        eq(r.get("status"), "limit_exceeded", "status")
    finally:
        remove_left(workspaces() - before)
    t.assert_next_run_ok()


XATTR_HOARD = r'''
import os, sys, time
fd = os.open("/dev/shm/" + sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)
v = b"x" * 65536
n = 0
for i in range(int(sys.argv[2])):
    try:
        os.setxattr(fd, "user.k%d" % i, v)
    except OSError as e:
        print("stop", i, e)
        break
    n += 1
print("stored MiB", (n * len(v)) >> 20, flush=True)
time.sleep(1.5)
print("alive", flush=True)
'''


@test
def storage_xattrs_of_a_dev_shm_object_count(t):
    """User extended attributes on the run's own /dev/shm object (tmpfs has
    them since Linux 6.6, up to 64 KiB a value, any number of names, bounded
    only by the tmpfs's inode space: nr_inodes x 1 KiB, ~3 GiB here, shared
    by the host). The object's st_blocks stay 0, so cr_fs_shm_bytes counts
    nothing, and the values live in unreclaimable kernel memory no RSS
    shows: 8192 x 64 KiB = 512 MiB held for 1.5 s under disk=16MiB
    memory=64MiB ends `ok` (measured: 1 GiB raised SUnreclaim by 1.7 GiB,
    usage.disk_bytes 0, peak_memory_bytes 8 MiB). Now a run may set at
    most 1 MiB of attributes on tmpfs; past it ENOSPC (what a full tmpfs
    answers) and a denial."""
    script = t.write("xattr_hoard.py", XATTR_HOARD)
    name = "crxa-" + t.marker[-12:]
    run = t.corral(["run", "--json", "--env", "CRMARK=" + t.marker,
                    "--limit", "wall=30s", "--limit", "disk=16MiB",
                    "--limit", "memory=64MiB", "--ro", t.tmp, "--",
                    "python3", script, name, "8192"], timeout=90)
    r = t.result(run)
    check_result_shape(r)
    true(not os.path.exists("/dev/shm/" + name), "/dev/shm object left")
    out = r.get("stdout") or ""
    true("No space left on device" in out,
         "the hoard was not stopped (stdout %r)" % out)
    stored = [ln.split()[2] for ln in out.splitlines()
              if ln.startswith("stored MiB ")]
    true(stored and int(stored[0]) <= 1,
         "MiB of attributes stored on tmpfs: %r (stdout %r)" % (stored, out))
    true([d for d in (r.get("denials") or []) if d.get("layer") == "fs" and
          "tmpfs" in (d.get("reason") or "")],
         "no denial for the attributes past the bound: %s" %
         _show(r.get("denials")))
    t.assert_next_run_ok()


XATTR_NAMES = r"""
import errno, os, sys
fd = os.open("/dev/shm/" + sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)
n = 0
for i in range(20000):
    try:
        os.setxattr(fd, "user." + "n" * 230 + "%08d" % i, b"")
    except OSError as e:
        print("stop", errno.errorcode.get(e.errno))
        break
    n += 1
print("names", n, flush=True)
"""


@test
def storage_empty_xattr_names_on_tmpfs_count(t):
    """An attribute's name is kernel memory too: the 1 MiB bound counted
    only values, so 493 753 attributes of a 250-byte name and no value
    held ~150 MB of slab (and a share of /dev/shm's inode space, which
    every user shares) through a run that ended `ok` (found by a probing
    session). Now each attribute counts its name, its value and its
    entry as the allocator rounds them: ~3 000 such names, then ENOSPC."""
    script = t.write("xattr_names.py", XATTR_NAMES)
    name = "crxn-" + t.marker[-12:]
    run = t.corral(["run", "--json", "--limit", "wall=60s", "--ro", t.tmp,
                    "--", "python3", script, name], timeout=120)
    r = t.result(run)
    check_result_shape(r)
    eq(r.get("status"), "ok", "status (stderr %s)" % _show(r.get("stderr")))
    out = (r.get("stdout") or "").split()
    true(out[:2] == ["stop", "ENOSPC"] and out[2] == "names" and
         1000 < int(out[3]) < 5000,
         "empty-valued names stored on tmpfs: %r" % out)
    t.assert_next_run_ok()


ACL_COPIES = r"""
import os, struct, sys, time
d = "/dev/shm/" + sys.argv[1]
os.mkdir(d)
named = 8187        # the largest default ACL: 64 KiB
ents = ([(0x01, 7, 0xffffffff)] +
        [(0x02, 7, 100000 + i) for i in range(named)] +
        [(0x04, 7, 0xffffffff), (0x10, 7, 0xffffffff), (0x20, 5, 0xffffffff)])
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in ents)
os.setxattr(d, "system.posix_acl_default", acl)
print("default ACL", len(acl), flush=True)
made, held = 0, []
for i in range(2000):
    try:
        if sys.argv[2] == "tmpfile":    # nameless: copies the ACL too
            held.append(os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600))
        else:
            os.mkdir(os.path.join(d, "s%05d" % i))
    except OSError as e:
        print("made", e, flush=True)
        break
    made += 1
print("made", made, flush=True)
time.sleep(3)
"""


@test
def storage_inherited_default_acls_on_tmpfs_count(t):
    """A default ACL on a tmpfs directory is copied, in memory, into every
    inode made beneath it. Only the attribute itself was counted: 9 000
    directories under a 64 KiB default ACL on /dev/shm held 1.17 GB under
    memory=64MiB, `ok` (found by a probing session). Each creation after
    a default ACL was set on tmpfs is now charged two copies of the
    largest: the run ends on memory. Nameless files (O_TMPFILE) copy it
    too: 4 000 held ~256 MiB until they were charged as well (found by
    the next probing session)."""
    script = t.write("acl_copies.py", ACL_COPIES)
    for how in ("mkdir", "tmpfile"):
        name = "cracl-" + how + t.marker[-12:]
        run = t.corral(["run", "--json", "--limit", "wall=60s", "--limit",
                        "memory=64MiB", "--ro", t.tmp, "--", "python3",
                        script, name, how], timeout=120)
        r = t.result(run)
        check_result_shape(r)
        eq((r.get("status"), r.get("limit")), ("limit_exceeded", "memory"),
           "%s: status and limit (stdout %s, stderr %s)" % (
               how, _show(r.get("stdout")), _show(r.get("stderr"))))
        true("default ACL 65532" in (r.get("stdout") or ""),
             "the ACL was not set (stdout %s)" % _show(r.get("stdout")))
        true(not os.path.exists("/dev/shm/" + name),
             "/dev/shm directory left")
    t.assert_next_run_ok()


INOTIFY = r"""
import ctypes, errno, os, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
IN_NONBLOCK, IN_MODIFY = 0o4000, 0x2
mode, count = sys.argv[1], int(sys.argv[2])
os.mkdir("d")
a = os.open("d/" + "A" * 255, os.O_CREAT | os.O_WRONLY, 0o600)
b = os.open("d/" + "B" * 255, os.O_CREAT | os.O_WRONLY, 0o600)


def instance():
    fd = libc.inotify_init1(IN_NONBLOCK)
    if fd < 0:
        return -ctypes.get_errno()
    if libc.inotify_add_watch(fd, b"d", IN_MODIFY) < 0:
        raise OSError(ctypes.get_errno(), "inotify_add_watch")
    return fd


made, err = [], None
for i in range(count):
    fd = instance()
    if fd < 0:
        err = errno.errorcode.get(-fd)
        break
    made.append(fd)
print("made", len(made), err, flush=True)
if mode == "cap":
    for fd in made:
        os.close(fd)
    time.sleep(0.2)
    print("after close", "ok" if instance() >= 0 else "refused", flush=True)
    sys.exit(0)
if mode == "hidden":
    # Each instance in flight in a message no one reads, its descriptor
    # closed: no fd table shows it.
    s1, s2 = socket.socketpair()
    for fd in made:
        socket.send_fds(s1, [b"x"], [fd])
        os.close(fd)
    print("in flight", flush=True)
# Alternate two long names: every write queues one event in each.
for i in range(20000):
    os.pwrite(b if i & 1 else a, b"x", 0)
print("written", flush=True)
time.sleep(3)
print("alive", flush=True)
"""


def _script_run(t, name, text, args, memory, limits=("wall=60s",),
                timeout=120):
    """Run the Python script text (written as name) with args in a fresh
    workspace under memory; the checked result."""
    script = t.write(name, text)
    ws = t.path("ws-" + args[0])
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    opts = ["run", "--json", "-w", ws, "--limit", "memory=" + memory]
    for lim in limits:
        opts += ["--limit", lim]
    run = t.corral(opts + ["--ro", t.tmp, "--", "python3", script] + args,
                   timeout=timeout)
    r = t.result(run)
    check_result_shape(r)
    return r


def _inotify_run(t, args, memory):
    return _script_run(t, "inotify_queues.py", INOTIFY, args, memory)


@test
def storage_inotify_queues_count_as_memory(t):
    """Events queued in an inotify instance are kernel memory no RSS
    shows (up to 16 384 an instance, ~300 B each with a long name): 128
    instances fed by writes to two files held 1 GiB of slab under
    memory=32MiB, `ok`, and took the user's whole allowance of instances
    from the host (found by a probing session). The fd scan now reads
    each instance's queue, told apart with kcmp; one that no table shows
    (in flight here) is charged its fullest queue; a run may hold 32
    alive, then EMFILE, and closing them gives the room back."""
    r = _inotify_run(t, ["queues", "24"], "64MiB")
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "memory"),
       "queued events: status and limit (stdout %s, stderr %s)" % (
           _show(r.get("stdout")), _show(r.get("stderr"))))
    true("made 24 None" in (r.get("stdout") or ""),
         "instances made (stdout %s)" % _show(r.get("stdout")))
    r = _inotify_run(t, ["hidden", "12"], "64MiB")
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "memory"),
       "instances in flight: status and limit (stdout %s, stderr %s)" % (
           _show(r.get("stdout")), _show(r.get("stderr"))))
    true("in flight" in (r.get("stdout") or ""),
         "instances sent (stdout %s)" % _show(r.get("stdout")))
    r = _inotify_run(t, ["cap", "40"], "2GiB")
    eq(r.get("status"), "ok", "cap: status (stderr %s)" % _show(r.get("stderr")))
    eq(r.get("stdout"), "made 32 EMFILE\nafter close ok\n", "cap: stdout")
    true([d for d in (r.get("denials") or [])
          if d.get("syscall") == "inotify_init1"],
         "no denial for the instance past the cap: %s" %
         _show(r.get("denials")))
    t.assert_next_run_ok()


@test
def storage_inotify_made_during_a_scan_hides_nothing(t):
    """The fd scan takes a table of 12 000 descriptors in several steps,
    and instances made between them stood for instances hidden in flight
    with full queues: a child making fresh ones in a loop kept 10 full
    queues (~80 MiB of slab) uncharged under memory=32MiB, `ok` (found by
    a probing session). An instance is now never made while a scan is
    under way (the scan is finished first), and those a scan met are
    held by its copies until the alive ones are counted."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    run = t.corral(["run", "--json", "-w", ws, "--limit", "wall=60s",
                    "--limit", "memory=64MiB"] + t.prog_roots() +
                   ["--", t.prog("inotify_churn"), "10", "10", "8"],
                   timeout=120)
    r = t.result(run)
    check_result_shape(r)
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "memory"),
       "status and limit (stdout %s, stderr %s)" % (
           _show(r.get("stdout")), _show(r.get("stderr"))))
    t.assert_next_run_ok()


WATCHES = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
mode, nfiles, ninst = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs("f", exist_ok=True)
for i in range(nfiles):
    open("f/%d" % i, "w").close()
inst = [libc.inotify_init1(0) for _ in range(ninst)]
if min(inst) < 0:
    print("init failed %d" % ctypes.get_errno(), flush=True)
    sys.exit(1)
added, err = 0, 0
for fd in inst:
    for i in range(nfiles):
        if libc.inotify_add_watch(fd, b"f/%d" % i, 0x2) < 0:
            err = ctypes.get_errno()
            break
        added += 1
    if err:
        break
# Adding again on watched inodes changes watches, never makes new ones:
# allowed at the cap, as the kernel allows it at the user's limit.
again = sum(libc.inotify_add_watch(inst[0], b"f/%d" % i, 0x4) >= 0
            for i in range(min(nfiles, 100)))
print("added %d errno %d again %d" % (added, err, again), flush=True)
if mode == "rearm":
    # A watcher re-arming its masks with IN_MASK_ADD makes no new watch.
    n = sum(libc.inotify_add_watch(inst[0], b"f/%d" % (i % nfiles),
                                   0x2 | 0x20000000) >= 0
            for i in range(20000))
    time.sleep(1)  # a tick or more to judge what it holds
    print("rearmed %d" % n, flush=True)
elif mode == "cap":
    for fd in inst:
        os.close(fd)
    fd = libc.inotify_init1(0)
    ok = 0
    for _ in range(100):
        ok = sum(libc.inotify_add_watch(fd, b"f/%d" % i, 0x2) >= 0
                 for i in range(min(nfiles, 1000)))
        if ok == min(nfiles, 1000):
            break
        time.sleep(0.1)
    print("after close %d" % ok, flush=True)
else:
    time.sleep(3)
    print("alive", flush=True)
"""


def _watches_run(t, args, memory):
    return _script_run(t, "watches.py", WATCHES, args, memory,
                       ("wall=120s", "files=100000"), timeout=180)


@test(supervisor_only=True)
def storage_inotify_watches_count_and_are_capped(t):
    """An inotify watch is a mark of unreclaimable slab (~80 B measured)
    and pins its inode in memory (~1.1 KiB on ext4); the user's
    fs.inotify.max_user_watches is shared with every program of the user
    on the host. 32 instances watching 1 000 files each (32 000 watches)
    ran `ok` under memory=32MiB, and a run could take the user's whole
    allowance (the kernel's limit was the only bound). Each new watch is
    now charged 1.25 KiB to memory, and a run holds at most a quarter of
    the user's allowance (then ENOSPC, the kernel's answer at its limit;
    changing a watch stays allowed); closing instances gives the room
    back (the fd scan counts the watches alive). A watcher re-arming
    with IN_MASK_ADD makes no new watch (counted as new before, it was
    ended on memory; found by a probing session)."""
    r = _watches_run(t, ["rearm", "20", "1"], "12MiB")
    eq((r.get("status"), r.get("stdout")),
       ("ok", "added 20 errno 0 again 20\nrearmed 20000\n"),
       "IN_MASK_ADD re-arms (message %r)" % r.get("message"))
    r = _watches_run(t, ["mem", "1000", "32"], "32MiB")
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "memory"),
       "32 000 watches: status and limit (stdout %s, stderr %s)" % (
           _show(r.get("stdout")), _show(r.get("stderr"))))
    with open("/proc/sys/fs/inotify/max_user_watches") as f:
        cap = int(f.read()) // 4
    files = cap // 32 + 1
    r = _watches_run(t, ["cap", str(files), "32"], "2GiB")
    eq(r.get("status"), "ok", "cap: status (stderr %s)" % _show(r.get("stderr")))
    eq(r.get("stdout"), "added %d errno 28 again 100\nafter close 1000\n" % cap,
       "cap: stdout")
    true([d for d in (r.get("denials") or [])
          if d.get("syscall") == "inotify_add_watch"],
         "no denial for the watch past the cap: %s" % _show(r.get("denials")))
    t.assert_next_run_ok()


# ---- /dev/shm names the user's other programs use ----

SHM_PEER = r'''
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.sem_open.restype = ctypes.c_void_p
what, name, sig = sys.argv[1], sys.argv[2], sys.argv[3]
path = "/dev/shm/" + name


def say(s):
    print(s, flush=True)


def wait(f):
    # The test makes f once it has done its part outside the run.
    p = os.path.join(sig, f)
    for _ in range(1200):
        if os.path.exists(p):
            return
        time.sleep(0.05)
    say("no " + f)


def ready():
    open(os.path.join(sig, "ready"), "w").close()


if what == "attach":
    # shm_open(name, O_CREAT | O_RDWR): a program attaching to its state.
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        say("open %d" % e.errno)
        sys.exit(0)
    say("size %d %r" % (os.fstat(fd).st_size, os.pread(fd, 64, 0)))
    os.pwrite(fd, b"RUN-WROTE", 0)
    os.ftruncate(fd, 0)
elif what == "plant":
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"RUN-DATA")
    ready()
    wait("go")
    fd2 = os.open(path, os.O_RDWR)
    say("later %r" % os.pread(fd2, 64, 0))
    os.pwrite(fd2, b"RUN-OVERWROTE", 0)
elif what == "sem":
    s = libc.sem_open(("/" + name).encode(), ctypes.c_int(os.O_CREAT),
                      ctypes.c_uint(0o600), ctypes.c_uint(0))
    say("sem_open %s" % ("failed %d" % ctypes.get_errno()
                         if s in (None, 2**64 - 1) else "ok"))
    ready()
    wait("go")
'''


def shm_peer(t, what, name):
    """Start the run's side of a /dev/shm meeting; its signal directory."""
    script = t.write("shm_peer.py", SHM_PEER)
    sig = t.path("sig")
    os.mkdir(sig, 0o700)
    p = t.spawn(["run", "--json", "--env", "CRMARK=" + t.marker,
                 "--limit", "wall=60s", "--ro", t.tmp, "--rw", sig, "--",
                 "python3", script, what, name, sig])
    return p, sig


def shm_peer_ready(t, what, name, thing):
    """shm_peer, once the run has made its object (thing, for the
    message)."""
    p, sig = shm_peer(t, what, name)
    if not wait_for(lambda: os.path.exists(os.path.join(sig, "ready")), 30):
        p.kill()
        t.finish(p)
        true(False, "the run never made its " + thing)
    return p, sig


def shm_gone(path):
    try:
        os.unlink(path)
    except OSError:
        pass


@test
def storage_dev_shm_host_object_is_not_the_runs(t):
    """A program of the user (outside corral, same uid) holds
    /dev/shm/NAME; the run's shm_open(NAME, O_CREAT | O_RDWR) is the run's
    own new object: never the host program's content, and the host
    program's object stays as it was (an earlier build refused the open,
    so a program could not use the name at all, and let the reverse order
    hand the run the other program's object: the next test)."""
    name = "crsh-" + t.marker[-12:]
    path = "/dev/shm/" + name
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, b"HOST-SECRET")
        script = t.write("shm_peer.py", SHM_PEER)
        run = t.corral(["run", "--json", "--ro", t.tmp, "--", "python3",
                        script, "attach", name, t.tmp])
        r = t.result(run)
        eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
        eq(r.get("stdout"), "size 0 b''\n", "what the run's open gave it")
        eq(os.pread(fd, 64, 0), b"HOST-SECRET", "the host object's data")
        true(os.path.exists(path), "the host object is gone")
        eq(os.fstat(fd).st_ino, os.stat(path).st_ino, "the host object")
    finally:
        os.close(fd)
        shm_gone(path)
    t.assert_next_run_ok()


@test
def storage_dev_shm_run_object_is_not_the_hosts(t):
    """The reverse order (the probe's squat): the run makes /dev/shm/NAME
    and writes it; a program of the user opening NAME meanwhile read the
    run's data and wrote into it, and one that unlinked the name and made
    it anew with O_EXCL had its new object opened, overwritten and, at the
    run's cleanup, unlinked by name. Now the host program meets its own
    object, and the run keeps its own."""
    name = "crsh-" + t.marker[-12:]
    path = "/dev/shm/" + name
    p, sig = shm_peer_ready(t, "plant", name, "object")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        got = os.pread(fd, 64, 0)
        os.close(fd)
        # The careful form: unlink, then O_EXCL.
        os.unlink(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"HOST-DATA")
        open(os.path.join(sig, "go"), "w").close()
        run = t.finish(p)
        r = t.result(run)
        eq(got, b"", "what the host program found at the name")
        eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
        eq(r.get("stdout"), "later b'RUN-DATA'\n", "the run's second open")
        eq(os.pread(fd, 64, 0), b"HOST-DATA", "the host object's data")
        true(os.path.exists(path), "the run's cleanup removed the host "
             "program's object")
        eq(os.fstat(fd).st_ino, os.stat(path).st_ino, "the host object")
        os.close(fd)
    finally:
        if p.returncode is None:
            open(os.path.join(sig, "go"), "a").close()
            t.finish(p)
        shm_gone(path)
    t.assert_next_run_ok()


@test
def storage_dev_shm_semaphore_is_not_squatted(t):
    """The run pre-creates the named semaphore /NAME with value 0; a
    program of the user that asks sem_open(/NAME, O_CREAT, 0600, 1) got the
    run's, held at 0 (locked out). Now it gets its own, at 1."""
    name = "crsem-" + t.marker[-12:]
    path = "/dev/shm/sem." + name
    p, sig = shm_peer_ready(t, "sem", name, "semaphore")
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.sem_open.restype = ctypes.c_void_p
        s = libc.sem_open(("/" + name).encode(), ctypes.c_int(os.O_CREAT),
                          ctypes.c_uint(0o600), ctypes.c_uint(1))
        true(s not in (None, 2**64 - 1), "sem_open: %d" % ctypes.get_errno())
        rc = libc.sem_trywait(ctypes.c_void_p(s))
        eq((rc, ctypes.get_errno() if rc else 0), (0, 0), "sem_trywait")
        open(os.path.join(sig, "go"), "w").close()
        run = t.finish(p)
        r = t.result(run)
        eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
        eq(r.get("stdout"), "sem_open ok\n", "the run's sem_open")
        true(os.path.exists(path), "the run's cleanup removed the host "
             "program's semaphore")
    finally:
        if p.returncode is None:
            open(os.path.join(sig, "go"), "a").close()
            t.finish(p)
        shm_gone(path)
    t.assert_next_run_ok()


@test
def storage_workspace_under_dev_shm_is_itself(t):
    """A workspace (or --rw root) the caller puts under /dev/shm is that
    directory, not the run's private /dev/shm directory: translated, an
    absolute path into it missed it (cat "$PWD/a": ENOENT), and files made
    under it went into the private directory, where anything below 8
    levels was neither counted nor removed (100 MiB under disk=10MiB ended
    ok and outlived the run and `corral gc`)."""
    ws = "/dev/shm/crws-" + t.marker[-12:]
    os.mkdir(ws, 0o700)
    try:
        script = ('echo hi > a; cat "$PWD/a"; P="$PWD/1/2/3/4/5/6/7/8/9/10"; '
                  'mkdir -p "$P" && head -c 33554432 /dev/zero > "$P/big"; '
                  'echo wrote')
        run = t.corral(["run", "--json", "-w", ws, "--limit", "disk=10MiB",
                        "--", "sh", "-c", script])
        r = t.result(run)
        eq(r.get("status"), "limit_exceeded",
           "status (message %r, stderr %r)" % (r.get("message"),
                                                r.get("stderr")))
        eq(r.get("limit"), "disk", "limit")
        contains(r.get("stdout") or "", "hi\n", "the absolute path's read")
        true(os.path.exists(os.path.join(ws, "a")),
             "the file is in the workspace itself")
        t.assert_next_run_ok()
    finally:
        shutil.rmtree(ws, ignore_errors=True)


# ---- directories of another user in a writable root (the walk's blind spots) ----

HUNDRED_MIB = 100 * MIB


def _as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def _marked_anywhere(marker):
    """Processes of any uid whose command line or environment holds marker
    (the harness's own check looks at the test's uid only)."""
    m = marker.encode()
    found = []
    for ent in os.listdir("/proc"):
        if not ent.isdigit() or int(ent) == os.getpid():
            continue
        for f in ("cmdline", "environ"):
            try:
                with open("/proc/%s/%s" % (ent, f), "rb") as fh:
                    if m in fh.read(1 << 20):
                        found.append(int(ent))
                        break
            except OSError:
                pass
    return found


def _blocks_under(path):
    """Bytes allocated beneath path (as root: every directory is read)."""
    total = 0
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            try:
                total += os.lstat(os.path.join(root, n)).st_blocks * 512
            except OSError:
                pass
    return total


class _NobodyTree:
    """A directory tree the unprivileged uid can reach (the root tier's
    TMPDIR cannot be), with the workspace ws owned by it; removed after."""

    def __init__(self, t):
        self.t = t
        self.base = tempfile.mkdtemp(prefix="crdbx-", dir="/tmp")
        os.chmod(self.base, 0o755)
        self.ws = os.path.join(self.base, "ws")
        self.tmp = os.path.join(self.base, "tmp")
        for d in (self.ws, self.tmp):
            os.mkdir(d, 0o755)
            os.chown(d, 65534, 65534)

    def run(self, mode, opts, script, spawn=False):
        """corral as uid 65534, TMPDIR its own, the workspace ws."""
        args = ["run", "--landlock=" + mode, "--json", "--env",
                "CRMARK=" + self.t.marker, "--limit", "wall=60s", "-w",
                self.ws] + opts + ["--", "sh", "-c", script]
        env = {"TMPDIR": self.tmp, "HOME": self.tmp}
        if spawn:
            return self.t.spawn(args, env=env, preexec=_as_nobody)
        run = self.t.corral(args, env=env, preexec=_as_nobody, timeout=90)
        return run, self.t.result(run)

    def close(self):
        shutil.rmtree(self.base, ignore_errors=True)


DROP_BOX_CASES = (
    # name, mode of the root-owned directory "box", what the run does
    ("create", 0o733,
     "head -c %d /dev/zero > box/f; echo wrote; sleep 1" % HUNDRED_MIB),
    ("sticky", 0o1733,
     "head -c %d /dev/zero > box/f; echo wrote; sleep 1" % HUNDRED_MIB),
    # A file of the run's uid left there before the run, grown by name.
    ("grow", 0o711,
     "head -c %d /dev/zero >> box/f; echo wrote; sleep 1" % HUNDRED_MIB),
    # 99 names in the box make the walk count the file's blocks /100.
    ("link", 0o733,
     ": > big; i=1; while [ $i -lt 100 ]; do ln big box/l$i; i=$((i+1)); "
     "done; head -c %d /dev/zero >> big; echo wrote; sleep 1" % HUNDRED_MIB),
)


@test(root=True)
def storage_walk_drop_box_refuses_the_run(t):
    """A root-owned directory in the workspace that the run's uid may
    search (and write) but not list: a drop box (0733, 1733), or 0711 over
    a file of the run's left there. The walk skipped every directory of
    another user it could not list, so what the run wrote beneath it was
    never counted: 100 MiB under disk=10MiB ended `ok` with
    usage.disk_bytes 0, and 99 hard links into the box made a 100 MiB file
    in the workspace count 1 MiB. Now such a directory cannot be measured:
    the run is refused before the program starts (platform_failure, the
    message names it), as a writable root itself that cannot be listed
    always was; a directory the run cannot even search is still skipped,
    so the same workspace runs once the box is 0700. Both Landlock modes
    (root-only tests run once)."""
    for mode in ("auto", "off"):
        for name, bits, script in DROP_BOX_CASES:
            what = "%s, landlock %s" % (name, mode)
            tree = _NobodyTree(t)
            try:
                box = os.path.join(tree.ws, "box")
                os.mkdir(box)
                if name == "grow":
                    with open(os.path.join(box, "f"), "w"):
                        pass
                    os.chown(os.path.join(box, "f"), 65534, 65534)
                os.chmod(box, bits)
                run, r = tree.run(mode, ["--limit", "disk=10MiB"], script)
                check_result_shape(r)
                lt(_blocks_under(tree.ws), 2 * MIB,
                   "%s: bytes the run left in the workspace (status %r, "
                   "usage.disk_bytes %r, stdout %r)" %
                   (what, r.get("status"), r["usage"]["disk_bytes"],
                    r.get("stdout")))
                eq(r.get("status"), "platform_failure", what + ": status")
                contains(r.get("message") or "", box + " is another user's",
                         what + ": message")
                eq(r.get("stdout"), "", what + ": the program ran")
                true(wait_for(lambda: not _marked_anywhere(t.marker), 2.0),
                     what + ": processes left")
                # Not searchable: nothing below it can be reached, and the
                # workspace serves again.
                os.chmod(box, 0o700)
                run, r = tree.run(mode, ["--limit", "disk=10MiB"],
                                  "echo fine")
                eq((r.get("status"), r.get("stdout")), ("ok", "fine\n"),
                   what + ": a run with the box closed (message %r)" %
                   r.get("message"))
            finally:
                tree.close()
    # A writable root that is itself such a box: the message names it,
    # not the workspace. A sticky one of another owner cannot carry the
    # mark of a run's writable space (docs/threat-model.md, P9): that
    # refusal comes first; without the sticky bit, the walk's.
    tree = _NobodyTree(t)
    try:
        for bits, status, says in ((0o1733, "policy_denied",
                                    "root %s refused: corral cannot mark"),
                                   (0o733, "platform_failure",
                                    "writable root %s for")):
            box = os.path.join(tree.base, "rwbox%o" % bits)
            os.mkdir(box)
            os.chmod(box, bits)
            run, r = tree.run("auto", ["--rw", box], "echo ran")
            eq(r.get("status"), status, "--rw box %o: status" % bits)
            contains(r.get("message") or "", says % box,
                     "--rw box %o: message" % bits)
            eq(r.get("stdout"), "", "--rw box %o: the program ran" % bits)
    finally:
        tree.close()
    eq(_marked_anywhere(t.marker), [], "processes left")
    t.assert_next_run_ok()


@test(root=True)
def storage_walk_another_users_directory_closed_during_the_run(t):
    """A directory of another user in the workspace, readable, that its
    owner makes 0700 while the run goes on: nothing below it can be
    reached any more, and the walk skips it as it skips one closed from
    the start. The walk keeps a directory's names while its own inotify
    watch sees no change; a mode change was not among what it watched, so
    the next pass looked up the kept names in a directory it could no
    longer search and ended the run ("cannot be measured", limit disk;
    found by a probing session). Both Landlock modes."""
    for mode in ("auto", "off"):
        tree = _NobodyTree(t)
        try:
            other = os.path.join(tree.ws, "other")
            os.mkdir(other, 0o755)
            for i in range(5):
                open(os.path.join(other, "f%d" % i), "w").close()
            os.chmod(other, 0o755)
            run = tree.run(mode, ["--limit", "disk=10MiB"],
                           "echo started; sleep 3; echo done", spawn=True)
            true(wait_for(lambda: _marked_anywhere(t.marker), 10.0),
                 mode + ": the run started")
            time.sleep(1.5)     # passes have kept other's names
            os.chmod(other, 0o700)
            r = t.result(t.finish(run, timeout=60))
            eq((r.get("status"), r.get("limit"), r.get("stdout")),
               ("ok", None, "started\ndone\n"),
               mode + ": the run (message %r)" % r.get("message"))
        finally:
            tree.close()


@test(root=True)
def storage_walk_drop_box_opened_mid_run_ends_the_run(t):
    """The box is 0700 when the run starts (skipped: nothing below it can
    be reached) and its owner opens it to 0733 while the run goes on; the
    run then writes 100 MiB into it under disk=10MiB. Before: `ok`,
    usage.disk_bytes 0. Now the next pass that meets it ends the run
    (limit_exceeded, disk), whatever the Landlock mode."""
    for mode in ("auto", "off"):
        tree = _NobodyTree(t)
        p = None
        try:
            box = os.path.join(tree.ws, "box")
            os.mkdir(box, 0o700)
            p = tree.run(mode, ["--limit", "disk=10MiB"],
                         "touch ready; while [ ! -e go ]; do sleep 0.05; "
                         "done; head -c %d /dev/zero > box/f; echo wrote; "
                         "sleep 3" % HUNDRED_MIB, spawn=True)
            if not wait_for(lambda: os.path.exists(
                    os.path.join(tree.ws, "ready")), 30):
                p.kill()
                t.finish(p)
                true(False, "the run never started (landlock %s)" % mode)
            os.chmod(box, 0o733)
            with open(os.path.join(tree.ws, "go"), "w"):
                pass
            run = t.finish(p, timeout=90)
            r = t.result(run)
            check_result_shape(r)
            eq((r.get("status"), r.get("limit")), ("limit_exceeded", "disk"),
               "landlock %s: status and limit (message %r, "
               "usage.disk_bytes %r, %d bytes in the box)" %
               (mode, r.get("message"), r["usage"]["disk_bytes"],
                _blocks_under(box)))
            contains(r.get("message") or "", box, "message")
            true(wait_for(lambda: not _marked_anywhere(t.marker), 2.0),
                 "landlock %s: processes left: %r" %
                 (mode, _marked_anywhere(t.marker)))
        finally:
            if p is not None and p.returncode is None:
                p.kill()
                t.finish(p)
            tree.close()
    t.assert_next_run_ok()


def deep_tree(top, levels):
    """top/d/d/.../d, levels deep, made through descriptors (its paths
    are longer than PATH_MAX)."""
    os.makedirs(top)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = sub
    os.close(fd)


def remove_deep(top):
    """rm -rf walks by descriptors: Python's rmtree recurses too deep."""
    subprocess.run(["rm", "-rf", top], check=True)


@test
def storage_walk_failing_rw_root_is_named(t):
    """A --rw root the walk cannot measure (a tree deeper than its 4096
    levels) refuses the run: the message named the workspace, whatever
    root failed (the walk's reset had forgotten which). Now it names the
    root."""
    rw = t.path("deep")
    deep_tree(rw, 4100)
    try:
        run = t.corral(["run", "--json", "--rw", rw, "--", "echo", "ran"])
        r = t.result(run)
        eq(r.get("status"), "platform_failure", "status")
        contains(r.get("message") or "", "cannot measure the writable "
                 "root %s for the disk budget" % rw, "message")
    finally:
        remove_deep(rw)
    t.assert_next_run_ok()


@test
def storage_walk_measures_a_configure_checks_deep_tree(t):
    """gnulib's getcwd checks in configure scripts (tar, findutils, m4)
    nest a directory hundreds of levels deep, then remove it. The walk
    stopped at 128 levels and ended the run on "files" with 202 files
    used of 10 000 (found by a probing session running tar's configure);
    it measures 4096 levels now, and a breach beneath them still ends
    the run."""
    prog = ("import os\n"
            "for _ in range(400):\n"
            "    os.mkdir('confdir3')\n"
            "    os.chdir('confdir3')\n"
            "open('f', 'wb').write(b'x' * %d)\n"
            "import time; time.sleep(1.5)\n"
            "print(len(os.getcwd()) > 3600)\n")
    run = t.corral(["run", "--json", "--limit", "wall=60s", "--",
                    "python3", "-c", prog % 1000], timeout=90)
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "True\n"),
       "400 levels (message %r)" % r.get("message"))
    run = t.corral(["run", "--json", "--env", "CRMARK=" + t.marker,
                    "--limit", "disk=16MiB", "--limit", "wall=60s", "--",
                    "python3", "-c", prog % (64 * MIB)], timeout=90)
    r = t.result(run)
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "disk"),
       "64 MiB at the bottom under disk=16MiB (message %r)" %
       r.get("message"))
    t.no_marker_processes("after the breach")
    t.assert_next_run_ok()


# 40 chains of 100 directories joined by renames into one tree 4000 deep
# (names past PATH_MAX are refused first), its top then made unreadable,
# and left so: the last measure at the run's end meets it however slowly
# the passes before went (under the sanitizers a pass could miss a window
# of a few seconds).
DEEP_LOCKED = r"""
import os, time
bottoms = []
for k in range(40):
    top = "c%d" % k
    os.mkdir(top)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(100):
        os.mkdir("d", dir_fd=fd)
        sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = sub
    bottoms.append(fd)
for k in range(39, 0, -1):
    os.rename("c%d" % k, "c", dst_dir_fd=bottoms[k - 1])
os.chmod("c0", 0)
print("built", flush=True)
time.sleep(3)
print("done")
"""


@test(supervisor_only=True)
def storage_walk_of_a_deep_locked_tree_keeps_the_stack(t):
    """Beneath a directory made unreadable the walk recurses once per
    level on the loop's stack: a tree 4090 deep under a chmod-000 top
    killed the supervisor (SIGSEGV, no result, the lent mode left) when
    corral ran with `ulimit -s 1024` (found by a probing session). Past
    the room the stack limit leaves, the tree is unmeasurable: the run
    ends on files, the message names the stack limit, the mode is put
    back, and the default stack measures the same tree."""
    def small_stack():
        resource.setrlimit(resource.RLIMIT_STACK, (1 << 20, 1 << 20))
    for pre, want in ((small_stack, ("limit_exceeded", "files")),
                      (None, ("ok", None))):
        ws = t.path("ws-%s" % ("small" if pre else "default"))
        os.makedirs(ws)
        os.chmod(ws, 0o777)
        try:
            run = t.corral(["run", "--json", "-w", ws, "--limit",
                            "wall=60s", "--", "python3", "-c",
                            DEEP_LOCKED], preexec=pre, timeout=120)
            r = t.result(run)
            eq((r.get("status"), r.get("limit")), want,
               "verdict (message %r, stderr %r)" %
               (r.get("message"), r.get("stderr", "")[-300:]))
            if pre:
                contains(r.get("message", ""), "stack limit", "message")
            mode = os.stat(os.path.join(ws, "c0")).st_mode & 0o777
            true(mode in (0, 0o700), "the mode put back: %o" % mode)
        finally:
            os.chmod(os.path.join(ws, "c0"), 0o700)
            remove_deep(ws)
    t.assert_next_run_ok()


@test
def storage_walk_single_file_rw_root_counts(t):
    """A --rw root that is one file (docs/policy.md allows it) could not
    be used with a disk budget, which the default class has: every such
    run was refused ("cannot measure the writable root ...: Not a
    directory"). Now the walk counts the file's blocks: a small write
    works, 100 MiB under disk=10MiB ends the run."""
    f = t.write("one.log", "")
    run = t.corral(["run", "--json", "--rw", f, "--", "sh", "-c",
                    "echo abc > %s; cat %s" % (f, f)])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "abc\n"),
       "a small write (message %r)" % r.get("message"))
    run = t.corral(["run", "--json", "--env", "CRMARK=" + t.marker,
                    "--limit", "disk=10MiB", "--rw", f, "--", "sh", "-c",
                    "head -c %d /dev/zero > %s; echo wrote; sleep 3" %
                    (HUNDRED_MIB, f)], timeout=90)
    r = t.result(run)
    check_result_shape(r)
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "disk"),
       "status and limit (message %r, usage.disk_bytes %r)" %
       (r.get("message"), r["usage"]["disk_bytes"]))
    t.no_marker_processes("after the breach")
    t.assert_next_run_ok()


@test
def storage_walk_nested_writable_roots_count_once(t):
    """A writable root inside another (-w WS --rw WS/sub, or WS/f) was
    walked twice by the full passes, so 10 MiB written there counted 20
    and a run ended on "disk" at half its budget (found by a probing
    session). It counts once; the budget still holds past it."""
    ws = t.path("ws")
    os.makedirs(os.path.join(ws, "sub"))
    f = os.path.join(ws, "f")
    with open(f, "w"):
        pass
    for inner, target in ((os.path.join(ws, "sub"), "sub/x"), (f, "f")):
        run = t.corral(["run", "--json", "-w", ws, "--rw", inner,
                        "--limit", "disk=16MiB", "--", "sh", "-c",
                        "head -c %d /dev/zero > %s && echo wrote" %
                        (10 << 20, target)], timeout=60)
        r = t.result(run)
        eq((r.get("status"), r.get("stdout")), ("ok", "wrote\n"),
           "10 MiB under disk=16MiB with --rw %s (message %r, disk_bytes %r)"
           % (inner, r.get("message"), r["usage"]["disk_bytes"]))
        true(r["usage"]["disk_bytes"] < 12 << 20,
             "counted once: %r" % r["usage"]["disk_bytes"])
        os.unlink(os.path.join(ws, target))
        if target == "f":
            with open(f, "w"):
                pass
    run = t.corral(["run", "--json", "-w", ws, "--rw", os.path.join(ws, "sub"),
                    "--env", "CRMARK=" + t.marker,
                    "--limit", "disk=16MiB", "--", "sh", "-c",
                    "head -c %d /dev/zero > sub/y; sleep 3" % (40 << 20)],
                   timeout=60)
    r = t.result(run)
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "disk"),
       "40 MiB under disk=16MiB still ends the run")
    t.no_marker_processes("after the breach")
