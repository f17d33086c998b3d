"""tests/e2e/test_dk_sysv.py: System V IPC objects the run makes work as
natively (PostgreSQL's interlock segment, semaphores, message queues);
objects outside the run are absent; the run's objects are capped, counted
as memory and removed at its end."""

import os
import signal

from harness import (eq, true, contains, test, wait_for, assert_breach,
                     check_result_shape)

KEY = 0x5EED0000 + (os.getpid() & 0xFFFF)


def sysv(t):
    return t.prog("sysv_ipc")


def run_sysv(t, args, extra=()):
    return t.corral(["run", "--json"] + t.prog_roots() + list(extra) +
                    ["--", sysv(t)] + list(args))


def host_objects(kind, key=None):
    """Ids of this user's objects of a kind ("shm", "sem", "msg"), from
    /proc/sysvipc (optionally only those with the key)."""
    ids = []
    with open("/proc/sysvipc/" + kind) as f:
        next(f)
        for line in f:
            v = line.split()
            uid = int(v[7] if kind == "shm" else
                      (v[4] if kind == "sem" else v[7]))
            if uid == os.getuid() and (key is None or int(v[0]) == key):
                ids.append(int(v[1]))
    return ids


def denials_of(r, layer):
    return [d for d in r.get("denials", []) if d.get("layer") == layer]


OWN_AS_NATIVE = [
    "shmget ok", "shmat ok", "child copied: from-parent",
    "shmctl IPC_STAT ok", "shmdt ok", "shmctl IPC_RMID ok",
    "shmat after RMID err=EINVAL", "shmctl IPC_RMID attached ok",
    "shmctl IPC_STAT removed attached ok", "dest 1",
    "shmctl IPC_STAT removed detached err=EINVAL", "semget ok",
    "semctl SETVAL ok",
    "semop ok", "semval 6", "semctl IPC_RMID ok", "msgget ok", "msgsnd ok",
    "msgrcv ok", "message hello", "msgctl IPC_RMID ok", "shmget key ok",
    "found again: same", "shmget key EXCL again err=EEXIST",
    "shmget key too big err=EINVAL",
    "shmget key read-only, for writing err=EACCES",
    "shmget key read-only, for reading ok", "semget key ok", "msgget key ok",
]


@test
def sysv_objects_of_the_run_work_and_go_with_it(t):
    """Shared memory seen by a forked child, a semaphore's value, a
    message sent and received, a keyed segment found again by its key:
    as natively. The differences written in docs/compatibility.md: group
    and other permission bits are dropped, IPC_SET is refused. The keyed
    objects the program leaves are removed when the run ends."""
    native = t.native([sysv(t), "own", str(KEY), "keep"])
    try:
        out = native.out.decode().splitlines()
        for line in OWN_AS_NATIVE:
            true(line in out, "natively: %r in %r" % (line, out))
        contains(native.out.decode(), "mode 666 nattch 1", "natively")
    finally:
        t.native(["ipcrm", "-M", str(KEY), "-S", str(KEY), "-Q", str(KEY)])
    run = run_sysv(t, ["own", str(KEY), "keep"])
    r = t.result(run)
    check_result_shape(r)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    out = r.get("stdout", "").splitlines()
    for line in OWN_AS_NATIVE:
        true(line in out, "under corral: %r in %r" % (line, out))
    true("mode 600 nattch 1 size 1048576" in out, "owner bits only: %r" % out)
    true("shmctl IPC_SET err=EPERM" in out, "IPC_SET refused: %r" % out)
    reasons = [d.get("reason", "") for d in denials_of(r, "ipc")]
    true(any("owner or mode" in x for x in reasons),
         "IPC_SET recorded: %r" % reasons)
    for kind in ("shm", "sem", "msg"):
        eq(host_objects(kind, KEY), [], "%s objects of the key left" % kind)
    t.assert_next_run_ok()


@test
def sysv_objects_outside_the_run_are_absent(t):
    """A segment of the same user made outside the run: its id answers
    EINVAL to every call (as an id with no object), recorded (layer ipc),
    but IPC_STAT EPERM, which PostgreSQL's data-directory interlock reads
    as "in use" (EINVAL let a second postmaster start on a directory a
    server outside the run was using, and lose committed rows);
    its key is absent (ENOENT), and asking to make it gives the run an
    object of its own: keys are the run's, as /dev/shm names are. The
    host's table cannot be listed. The segment is untouched, and its key
    still finds it outside."""
    key = KEY + 1
    made = t.native(["python3", "-c",
                     "import ctypes; l = ctypes.CDLL(None); "
                     "print(l.shmget(%d, 4096, 0o1600))" % key])
    shmid = int(made.out.decode().strip())
    true(shmid >= 0, "a segment made outside the run")
    try:
        run = run_sysv(t, ["outside", str(shmid), str(key)])
        r = t.result(run)
        eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
        eq(r.get("stdout", "").splitlines(), [
            "shmat outside err=EINVAL",
            "shmctl IPC_STAT outside err=EPERM",
            "shmctl IPC_RMID outside err=EINVAL",
            "shmget key outside err=ENOENT",
            "shmget key outside CREAT ok",
            "the key's object: its own",
            "shmget key again EXCL err=EEXIST",
            "shmget key again ok",
            "shmctl SHM_INFO err=EINVAL",
            "shmctl SHM_STAT_ANY err=EINVAL",
            "semop outside err=EINVAL",
            "msgsnd outside err=EINVAL",
            "msgsnd outside bad message err=EFAULT",
        ], "answers")
        got = sorted((d["syscall"], d.get("target") or "", d["count"])
                     for d in denials_of(r, "ipc"))
        eq(got, sorted([
            ("shmat", "shm id %d" % shmid, 1),
            ("shmctl", "shm id %d" % shmid, 2),
            ("shmctl", "", 2),
            ("semtimedop", "sem id %d" % shmid, 1),
            ("msgsnd", "msg id %d" % shmid, 1),
        ]), "denials (layer ipc)")
        eq(host_objects("shm", key), [shmid], "the segment is untouched")
        again = t.native(["python3", "-c",
                          "import ctypes; l = ctypes.CDLL(None); "
                          "print(l.shmget(%d, 0, 0))" % key])
        eq(int(again.out.decode().strip()), shmid,
           "the key finds the host's segment outside")
    finally:
        t.native(["ipcrm", "-m", str(shmid)])
    t.assert_next_run_ok()


@test
def sysv_unreadable_object_outside_answers_eacces(t):
    """IPC_STAT of an object outside the run that the caller may not read
    (here the user's own segment of mode 000) answers the kernel's
    EACCES, not EPERM: PostgreSQL takes EACCES for another user's segment
    and starts, where a stale postmaster.pid names an id another user
    holds now (it refused to start under corral; found by a compatibility
    probe). A readable one stays EPERM (above)."""
    made = t.native(["python3", "-c",
                     "import ctypes; l = ctypes.CDLL(None); "
                     "print(l.shmget(0, 4096, 0o1000))"])
    shmid = int(made.out.decode().strip())
    true(shmid >= 0, "a segment made outside the run")
    try:
        nat = t.native([sysv(t), "stat", str(shmid)])
        eq(nat.out.decode(), "shmctl IPC_STAT err=EACCES\n",
           "natively (premise)")
        r = t.result(run_sysv(t, ["stat", str(shmid)]))
        eq(r.get("stdout"), "shmctl IPC_STAT err=EACCES\n",
           "under corral (stderr %r)" % r.get("stderr"))
        eq([(d["syscall"], d.get("target")) for d in denials_of(r, "ipc")],
           [("shmctl", "shm id %d" % shmid)], "recorded (layer ipc)")
    finally:
        t.native(["ipcrm", "-m", str(shmid)])
    t.assert_next_run_ok()


@test
def sysv_objects_are_capped(t):
    """The host's table is shared by every user: a run holds at most 32
    objects of a kind, then ENOSPC (the kernel's answer at its limit),
    recorded; all of them go with the run."""
    before = set(host_objects("shm"))
    run = run_sysv(t, ["many", "40"])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    eq(r.get("stdout"), "made 32, then err=ENOSPC\n", "stdout")
    d = denials_of(r, "ipc")
    eq([(x["syscall"], x["count"]) for x in d], [("shmget", 1)], "denials")
    eq(set(host_objects("shm")) - before, set(), "segments left")
    t.assert_next_run_ok()


@test
def sysv_attached_unmapped_segment_counts_as_memory(t):
    """A segment kept attached whose pages the process dropped from its
    page table (MADV_DONTNEED) holds them all the same, in no RSS: 512 MiB
    so ran ok under 64 MiB (found by a probing session). Every segment's
    resident pages count now."""
    before = set(host_objects("shm"))
    run = run_sysv(t, ["dontneed", "256", "3"], ["--limit", "memory=64MiB"])
    r = t.result(run)
    check_result_shape(r)
    assert_breach(t, run, r, "memory")
    eq(set(host_objects("shm")) - before, set(), "segments left")
    t.assert_next_run_ok()


@test
def sysv_detached_segments_count_as_memory(t):
    """A segment nobody attaches holds its pages in no process: four of
    16 MiB, each filled then detached (never more than 16 MiB attached),
    end the run on memory under 48 MiB; two of 8 MiB run."""
    before = set(host_objects("shm"))
    for args, want in ((["hold", "4", "16", "3"], "memory"),
                       (["hold", "2", "8", "1"], None)):
        run = run_sysv(t, args, ["--limit", "memory=48MiB"])
        r = t.result(run)
        check_result_shape(r)
        if want:
            assert_breach(t, run, r, want)
        else:
            eq(r.get("status"), "ok", "status (%r)" % r.get("message"))
            eq(r.get("stdout"), "detached 2 x 8 MiB\nheld\n", "stdout")
    eq(set(host_objects("shm")) - before, set(), "segments left")
    t.assert_next_run_ok()


def _records(tmp):
    return sorted(e for e in os.listdir(tmp) if e.startswith("corral-ipc-"))


@test
def sysv_objects_of_a_killed_corral_are_swept(t):
    """Segments no process attaches outlive a supervisor killed by
    SIGKILL; corral keeps a locked record of the run's objects in $TMPDIR
    and the next run's sweep removes those still the same. A record in a
    root the program may write is never kept (a forged one would remove
    the user's other objects), and a live run's record is left alone."""
    tmp = t.path("tmp")
    os.makedirs(tmp)
    ws = t.path("ws")
    os.makedirs(ws)
    env = {"TMPDIR": tmp}
    before = set(host_objects("shm"))
    p = t.spawn(["run", "-w", ws] + t.prog_roots() +
                ["--", "sh", "-c", "%s hold 2 1 100 > out" % sysv(t)],
                env=env)
    true(wait_for(lambda: os.path.exists(os.path.join(ws, "out")) and
                  open(os.path.join(ws, "out")).read().startswith("detached"),
                  20), "the program made its segments")
    recs = _records(tmp)
    eq(len(recs), 1, "one record: %r" % recs)
    with open(os.path.join(tmp, recs[0])) as f:
        made = {int(line.split()[0]) for line in f}
    eq(len(made), 2, "two segments in the record")
    eq(set(host_objects("shm")) & made, made, "the segments exist")
    # A live run's record is not swept.
    run = t.corral(["run", "--json", "--", "true"], env=env)
    eq(run.code, 0, "a run beside it")
    eq(set(host_objects("shm")) & made, made, "the live run's segments kept")
    os.kill(p.pid, signal.SIGKILL)
    t.finish(p, timeout=30)
    eq(set(host_objects("shm")) & made, made, "left by the killed run")
    run = t.corral(["run", "--json", "--", "true"], env=env)
    eq(run.code, 0, "the next run")
    eq(set(host_objects("shm")) & made, set(), "swept by the next run")
    eq(_records(tmp), [], "the record swept")
    # $TMPDIR inside the workspace: no record, the run's own end still
    # removes its objects.
    inner = os.path.join(ws, "tmp")
    os.makedirs(inner)
    run = t.corral(["run", "--json", "-w", ws] + t.prog_roots() +
                   ["--", sysv(t), "hold", "1", "1", "0"],
                   env={"TMPDIR": inner})
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%r)" % r.get("message"))
    eq(_records(inner), [], "no record where the program writes")
    eq(set(host_objects("shm")) - before, set(), "segments left")
    # Nor is one read there: a record planted where the program writes,
    # naming a segment of the user's made outside (its id, creation time
    # and creator as they are), is not the sweep's to follow.
    host = int(t.native(["python3", "-c",
                         "import ctypes; l = ctypes.CDLL(None); "
                         "print(l.shmget(0, 4096, 0o1600))"]).out.decode())
    try:
        with open("/proc/sysvipc/shm") as f:
            v = [line.split() for line in f if line.split()[1:2] == [str(host)]][0]
        with open(os.path.join(inner, "corral-ipc-forged"), "w") as f:
            f.write("%d %s %s\n" % (host, v[13], v[4]))
        run = t.corral(["run", "--json", "-w", ws, "--", "true"],
                       env={"TMPDIR": inner})
        eq(t.result(run).get("status"), "ok", "a run with the planted record")
        eq(host_objects("shm") .count(host), 1, "the user's segment is kept")
    finally:
        t.native(["ipcrm", "-m", str(host)])
    t.assert_next_run_ok()
