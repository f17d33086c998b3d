"""Storage doors of the disk and files budgets: ways a program stores more
than its budget allows where the measurement misses it, or leaves what it
stored on the host after the run. Probe: tests/progs/deepnest.c.

The doors here are directory trees deeper than the walk's bound
(CR_BUDGET_WALK_DEPTH, 128 levels), built in a few milliseconds by renaming
whole chains (each under the bound) into one another through descriptors
kept on their bottoms, and the program exiting before the next tick's walk
would end the run:

- the last word (cr_budget_finish) throws away a full pass that fails
  (-ELOOP) and keeps the last complete figure, so a breach made in the same
  instant is never judged: `ok` with a gigabyte under disk=16MiB;
- past 4096 levels the workspace removal (empty_dir) gives up with ELOOP,
  and `corral gc` uses the same function: the private workspace and what
  it holds stay on the host for good, whatever the disk budget was.
"""

import os
import subprocess

from harness import CFG, eq, true, test, workspaces, check_result_shape, _show

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
        run, r = deepnest(t, ["disk=16MiB"], 2, 100, 256)
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
