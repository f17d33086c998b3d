"""Budgets: cpu, memory, processes, disk and files, summed over the whole
tree; each breach kills every task and names the limit. Every attack asserts
the layer (limit name, and the denial's layer where one is recorded), the
result object, the overshoot against the slack docs/limits.md states, that
no task survived, and that the next run still works. Known-good workloads
run beside them under the default budgets."""

import ctypes
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import threading
import time

from harness import (CFG, assert_breach, eq, ne, contains, not_contains,
                     true, lt, ge, test, check_result_shape, _show, answers)

MIB = 1 << 20
# Slacks stated in docs/limits.md.
MEM_SLACK_ONE = 80 * MIB             # fill rate x tick, generous (the
                                      # RLIMIT_DATA cap is 2 x budget)
MEM_SLACK_TREE = 160 * MIB            # fill rate x tick, generous
CPU_SLACK_MS = 600                    # 2 ticks x 2 CPUs, plus a loaded host
FILES_SLACK = 20000                   # creation rate x (tick + walk)
DISK_SLACK = 16 * MIB


def hog(t, limits, *args, timeout=60, extra=()):
    """Run budget_hog under corral with the given --limit values."""
    opts = ["run", "--json", "--env", "CRMARK=" + t.marker]
    for lim in limits:
        opts += ["--limit", lim]
    run = t.corral(opts + t.prog_roots() + list(extra) +
                   ["--", t.prog("budget_hog")] + [str(a) for a in args],
                   timeout=timeout)
    return run, t.result(run)


def ints(text, word):
    return [int(m) for m in re.findall(r"%s (\d+)" % word, text)]


# ---- processes ----

@test
def budget_fork_bomb(t):
    audit = t.path("audit.jsonl")
    run, r = hog(t, ["processes=32"], "fork", 2000,
                 extra=["--audit", audit])
    assert_breach(t, run, r, "processes")
    with open(audit) as f:
        events = [json.loads(line) for line in f]
    limits = [e for e in events if e.get("event") == "limit"]
    eq([e.get("limit") for e in limits], ["processes"], "audit limit events")
    u = r["usage"]
    ge(u["processes"], 2, "usage.processes")
    true(u["processes"] <= 32, "usage.processes %d over 32" % u["processes"])
    layers = {(d["layer"], d["syscall"]) for d in r["denials"]}
    true(any(l == "proc" and s in ("fork", "clone") for l, s in layers),
         "want a proc-layer denial of fork/clone, got %r" % layers)
    ge(r["cleanup"]["killed"], 2, "cleanup.killed")
    lt(run.elapsed, 30, "seconds until corral returned")
    t.assert_next_run_ok()


@test
def budget_thread_bomb(t):
    # Threads are not processes, but they are bounded: 32 per process of
    # the budget, 1024 tasks in all under processes=32.
    run, r = hog(t, ["processes=32"], "threads", 2000)
    assert_breach(t, run, r, "processes")
    contains(r.get("message", ""), "thread creation was refused", "message")
    made = ints(r["stdout"], "made")
    # The breach can end the run before the program prints.
    true(all(m <= 1023 for m in made), "threads made %r, bound 1024" % made)
    true(r["usage"]["tasks"] <= 1024,
         "usage.tasks %d over 1024" % r["usage"]["tasks"])
    t.assert_next_run_ok()


@test
def budget_threads_are_not_processes(t):
    # A threaded program (a JVM, a test suite's workers) under the default
    # budget of 64 processes: 200 threads are one process.
    script = ("import threading, time\n"
              "ev = threading.Event()\n"
              "ts = [threading.Thread(target=ev.wait) for _ in range(200)]\n"
              "[x.start() for x in ts]\n"
              "print(threading.active_count())\n"
              "ev.set(); [x.join() for x in ts]\n")
    run = t.corral(["run", "--json", "--limit", "processes=64", "--",
                    "python3", "-c", script], timeout=60)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq(r.get("stdout"), "201\n", "threads alive at once")
    eq(r["usage"]["processes"], 1, "usage.processes")
    ge(r["usage"]["tasks"], 201, "usage.tasks")


@test
def budget_clone_race_never_exceeds(t):
    # 4 threads each keep 4 children alive: 5 + 16 tasks would be needed,
    # so the budget of 16 must be met, and never passed, while the threads
    # race each other's creations.
    run, r = hog(t, ["processes=16"], "race", 4, 4, 300, timeout=120)
    assert_breach(t, run, r, "processes")
    peaks = ints(r["stdout"], "peak")
    true(peaks, "the program reported no peak: %r" % r["stdout"][-300:])
    # The program counts its 1 + 4 threads too: processes <= 16 leaves
    # at most 1 + 4 + 15 tasks.
    true(max(peaks) <= 20, "tasks alive at once, seen inside: %d > 20" %
         max(peaks))
    true(r["usage"]["processes"] <= 16,
         "usage.processes %d over 16" % r["usage"]["processes"])
    t.assert_next_run_ok()


@test
def budget_zombie_bomb(t):
    # Children that exit at once and are never waited for hold their pids:
    # they count, or a program could fill the host's pid space.
    run, r = hog(t, ["processes=32"], "zombies", 2000)
    assert_breach(t, run, r, "processes")
    made = ints(r["stdout"], "zombies")
    true(all(m <= 31 for m in made), "zombies made %r, budget 32" % made)
    t.assert_next_run_ok()


@test
def budget_failed_clones_release_their_slots(t):
    # 100 clones the kernel refuses after corral reserved a slot for each:
    # every reservation must come back, or the fork after them would be
    # refused under a budget of 4.
    run, r = hog(t, ["processes=4"], "badclone", 100)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq(r["stdout"], "badclone ok einval 100\n", "the program's report")
    eq(r["denials"], [], "denials")
    t.assert_next_run_ok()


@test
def budget_processes_known_good_under(t):
    # The same race well under its budget finishes normally.
    run, r = hog(t, ["processes=64"], "race", 2, 2, 40, timeout=120)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq(run.code, 0, "exit status")
    contains(r["stdout"], "eagain 0", "the program met no EAGAIN")


@test
def budget_processes_peak_is_processes_at_once(t):
    """usage.processes is the peak of processes alive at once: a shell
    running /bin/true 300 times in turn has two. Zombies its shell had
    reaped were counted until the next tick looked: 8-13 under
    processes=64, the whole budget under processes=8 (found by a probing
    session). One more for an instant is the documented error towards
    refusing (a child seen before its parent's fork event)."""
    for lim in ("64", "8"):
        run = t.corral(["run", "--json", "--limit", "processes=" + lim,
                        "--", "sh", "-c",
                        "i=0; while [ $i -lt 300 ]; do /bin/true; "
                        "i=$((i+1)); done"])
        r = t.result(run)
        eq(r.get("status"), "ok", "status under processes=%s" % lim)
        true(2 <= r["usage"]["processes"] <= 3,
             "usage.processes under processes=%s: %d"
             % (lim, r["usage"]["processes"]))
    t.assert_next_run_ok()


@test
def budget_clone_untraced_refused(t):
    nat = t.native([t.prog("budget_hog"), "untraced", "x"])
    eq(nat.out, b"untraced: ok\n", "natively (test setup)")
    run, r = hog(t, [], "untraced", "x")
    eq(r.get("status"), "ok", "status")
    eq(r["stdout"], "untraced: EPERM\n", "clone(CLONE_UNTRACED) inside")
    true(any(d["syscall"] == "clone" and d["layer"] == "syscall" and
             "untraced" in d["reason"] for d in r["denials"]),
         "denials %r" % r["denials"])
    t.assert_next_run_ok()


@test
def budget_clone_namespaces_refused_by_corral(t):
    # Not through nons: its filter would answer EPERM before corral's
    # notification, and this test is about corral's own refusal (the clone
    # handler that replaced the filter's CLONE_NEW* entries). Nothing here
    # makes a namespace: if the refusal failed, nscheck's child exits.
    run = t.native([CFG.corral, "run", "--json"] + t.prog_roots() +
                   ["--", t.prog("nscheck")])
    r = json.loads(run.out.decode("utf-8"))
    eq(r.get("status"), "ok", "status")
    contains(r.get("stdout", ""), "clone: EPERM\n", "nscheck inside corral")
    true(any(d["syscall"] == "clone" and d["layer"] == "syscall" and
             "namespaces" in d["reason"] for d in r["denials"]),
         "denials %r" % r["denials"])
    contains(r.get("stdout", ""), "fork: ok\n", "fork still works")


# ---- cpu ----

@test
def budget_cpu_two_processes(t):
    run, r = hog(t, ["cpu=2s"], "cpu", 2)
    assert_breach(t, run, r, "cpu")
    cpu = r["usage"]["cpu_ms"]
    ge(cpu, 2000, "usage.cpu_ms")
    true(cpu <= 2000 + CPU_SLACK_MS, "usage.cpu_ms %d: overshoot over %d ms"
         % (cpu, CPU_SLACK_MS))
    # Two processes cannot burn 2 s in less than ~1 s; each alone stayed
    # under the budget, so only the sum stopped them.
    ge(run.elapsed, 0.9, "seconds until corral returned")
    lt(run.elapsed, 30, "seconds until corral returned")
    t.assert_next_run_ok()


@test
def budget_many_spinning_threads_cannot_starve_the_supervisor(t):
    """2 000 threads made idle, then all spinning, at the supervisor's own
    priority, gave it one slice in thousands: each budget tick took
    seconds, a 2 s cpu budget ended at 13-32 times its size and a wall
    limit fired tens of seconds late (found by a probing session). Past
    64 tasks the tree now runs at nice 19, and a breach shown by the
    processes' own totals ends the run before the per-thread pass.
    Measured on the 2-vCPU machine, 16 runs of two builds alike: 2.1-4.2 s
    of CPU (most under 2.7 s; the tail is the supervisor's 6 % share of a
    CPU against 2 000 threads at nice 19, docs/limits.md); the bound is
    past that tail and far under the tens of seconds of the finding."""
    run, r = hog(t, ["cpu=2s", "wall=20s"], "spinners", 2000, timeout=90)
    assert_breach(t, run, r, "cpu")
    contains(r.get("stdout", ""), "made 2000", "threads made")
    cpu = r["usage"]["cpu_ms"]
    ge(cpu, 2000, "usage.cpu_ms")
    true(cpu <= 2000 + 5 * CPU_SLACK_MS,
         "usage.cpu_ms %d: overshoot over %d ms" % (cpu, 5 * CPU_SLACK_MS))
    run, r = hog(t, ["wall=3s"], "spinners", 2000, timeout=90)
    assert_breach(t, run, r, "wall")
    true(r["usage"]["wall_ms"] <= 3000 + 2000,
         "usage.wall_ms %d: the wall limit (3 s) fired late"
         % r["usage"]["wall_ms"])
    t.assert_next_run_ok()


@test
def budget_cpu_of_killed_children_counts(t):
    # Children spin ~5 ms each and die by SIGKILL from their parent, most
    # of them between two ticks: their time must not vanish with them.
    run, r = hog(t, ["cpu=1s"], "cpukill", 2000, 5, timeout=120)
    assert_breach(t, run, r, "cpu")
    rounds = ints(r["stdout"], "round")
    true(not rounds or max(rounds) < 2000, "all rounds ran: %r" % rounds[-3:])
    t.assert_next_run_ok()


@test
def budget_cpu_of_autoreaped_children_counts(t):
    # SIGCHLD ignored: nobody ever waits for the children, so no rusage
    # carries their time; corral reads it while they are zombies. Each
    # child burns 5 ms of CPU (not of wall time), most of them between two
    # ticks, so 1 s is spent by round 200 whatever the load (sooner: the
    # parent's own time counts too; ~100 rounds here). Sampling live tasks
    # alone misses most of them (~290 rounds here).
    run, r = hog(t, ["cpu=1s"], "cpuauto", 1000, 5, timeout=120)
    assert_breach(t, run, r, "cpu")
    rounds = ints(r["stdout"], "round")
    true(rounds and max(rounds) <= 200,
         "rounds before the stop: %r (200 spend the budget)" % rounds[-3:])
    t.assert_next_run_ok()


# ---- memory ----

@test
def budget_memory_one_process(t):
    run, r = hog(t, ["memory=256MiB"], "mem", 1024, 1)
    assert_breach(t, run, r, "memory")
    peak = r["usage"]["peak_memory_bytes"]
    ge(peak, 256 * MIB, "usage.peak_memory_bytes")
    true(peak <= 256 * MIB + MEM_SLACK_ONE,
         "peak %d MiB: over the slack" % (peak // MIB))
    t.assert_next_run_ok()


@test
def budget_memory_spread_over_processes(t):
    # 8 x 48 MiB: each process far under the budget, the sum over it.
    run, r = hog(t, ["memory=256MiB"], "mem", 48, 8)
    assert_breach(t, run, r, "memory")
    peak = r["usage"]["peak_memory_bytes"]
    ge(peak, 256 * MIB, "usage.peak_memory_bytes")
    true(peak <= 256 * MIB + MEM_SLACK_TREE,
         "peak %d MiB: over the slack" % (peak // MIB))
    t.assert_next_run_ok()


@test
def budget_memory_behind_exited_leader(t):
    # The main thread exits; the memory lives in another thread, which
    # /proc/PID/statm of the (zombie) leader does not show.
    run, r = hog(t, ["memory=128MiB"], "memzombie", 512)
    assert_breach(t, run, r, "memory")
    t.assert_next_run_ok()


@test
def budget_memory_burst_then_exit(t):
    # 110 MiB of huge pages touched in a few ms, then exit: shorter than a
    # tick, so only a reading at the exit stop (the address space is still
    # there) sees it. An earlier build ended such runs "ok" 17 times in 20.
    for i in range(5):
        run, r = hog(t, ["memory=64MiB"], "memburst", 110, 0)
        assert_breach(t, run, r, "memory")
    t.assert_next_run_ok()


@test
def budget_memory_burst_then_exec(t):
    # The same burst, then exec: the exec drops the address space, so it
    # is measured at the exec's notification.
    for i in range(5):
        run, r = hog(t, ["memory=64MiB"], "memburst", 110, 1)
        assert_breach(t, run, r, "memory")
    t.assert_next_run_ok()


@test
def budget_memory_burst_unmapped_before_exit(t):
    # The same burst, unmapped again at once; the process lives on past
    # several ticks, none of which sees the memory. The kernel's record of
    # each process's peak (ru_maxrss of the reaped tree) is judged when
    # the run ends.
    for i in range(5):
        run, r = hog(t, ["memory=64MiB"], "memburst", 110, 2)
        assert_breach(t, run, r, "memory")
        ge(r["usage"]["peak_memory_bytes"], 64 * MIB,
           "usage.peak_memory_bytes")
    t.assert_next_run_ok()


@test
def budget_memory_shared_anonymous(t):
    # MAP_SHARED|MAP_ANONYMOUS is outside RLIMIT_DATA, and its pages can
    # leave every page table: it is charged its size at the mmap, before
    # a page is touched (tracer/budget/shanon.c).
    run, r = hog(t, ["memory=128MiB"], "memshared", 1024)
    assert_breach(t, run, r, "memory")
    ge(r["usage"]["peak_memory_bytes"], 1024 * MIB,
       "usage.peak_memory_bytes (the mapping's size)")
    not_contains(r.get("stdout", ""), "touched 1024", "the mapping filled")
    t.assert_next_run_ok()


@test
def budget_memory_shared_pages_out_of_every_rss_count(t):
    """Shared anonymous memory filled a MiB at a time, each dropped from
    the page table once written (MADV_DONTNEED), or filled by children
    that exit: the pages stay in the object and no RSS shows them. 4 GiB
    so held ran ok under memory=64MiB (found by a probing session). Made
    with MAP_ANONYMOUS, from /dev/zero, and by children alike."""
    for how in (0, 1, 2):
        run, r = hog(t, ["memory=128MiB", "wall=30s"], "shdrop", 512, how)
        assert_breach(t, run, r, "memory")
        not_contains(r.get("stdout", ""), "dropped 512",
                     "how %d: every MiB written" % how)
        # The same under the budget runs, its charge in the peak.
        run, r = hog(t, ["memory=256MiB", "wall=3s"], "shdrop", 96, how)
        eq(r.get("status"), "limit_exceeded", "how %d: status" % how)
        eq(r.get("limit"), "wall", "how %d: the limit that ended it" % how)
        contains(r.get("stdout", ""), "dropped 96", "how %d: filled" % how)
        ge(r["usage"]["peak_memory_bytes"], 96 * MIB,
           "how %d: usage.peak_memory_bytes" % how)
    t.assert_next_run_ok()


@test
def budget_memory_shared_mappings_made_and_gone_give_back(t):
    """1000 times an 80 MiB shared anonymous mapping made, touched and
    unmapped, under memory=256MiB: each charge is taken back once scans
    of the maps show the object gone, and a creation that would pass
    the budget scans first, so the loop runs as natively. An object a
    scan saw alive is taken back only at its second miss in a row
    (docs/limits.md: a moved object is not given back), so up to two
    gone objects are charged beside a new one: with 100 MiB objects
    (three past 256 MiB) the run ended on memory 1 time in 5 on a loaded
    machine, whenever a tick's scan met an object alive."""
    run, r = hog(t, ["memory=256MiB"], "shchurn", 1000, 80)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    contains(r.get("stdout", ""), "churned 1000", "every round ran")
    t.assert_next_run_ok()


MMAP_REFUSED = r'''
import ctypes, errno, mmap
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
L = 256 << 20
SH, SHV, ANON, FIXED, GROWS, SYNC = 0x01, 0x03, 0x20, 0x10, 0x0100, 0x80000
for label, addr, flags, off in (
        ("fixed off a page", 0x10001, SH | ANON | FIXED, 0),
        ("validate", 0, SHV | ANON | SYNC, 0),
        ("growsdown", 0, SH | ANON | GROWS, 0),
        ("offset off a page", 0, SH | ANON, 1),
        # A hugetlbfs file's: MAP_SHARED_VALIDATE is valid there (ENOMEM
        # on a host without huge pages, mapped on one with them).
        ("validate hugetlb", 0, SHV | ANON | 0x40000, 0)):
    r = libc.mmap(addr, 2 << 20 if flags & 0x40000 else L, mmap.PROT_READ,
                  flags, -1, off)
    print(label, errno.errorcode[ctypes.get_errno()]
          if r in (None, 2**64 - 1) else "mapped")
print("still running")
'''


@test
def budget_memory_mmap_the_kernel_refuses_is_not_charged(t):
    """A shared anonymous mapping the kernel refuses before making it (an
    unaligned MAP_FIXED address or offset, MAP_SHARED_VALIDATE or
    MAP_GROWSDOWN of anonymous memory) was charged its 256 MiB all the
    same and ended a run under memory=64MiB (found by a differential
    probe): the kernel's EINVAL now, nothing charged, the run goes on.
    Compared with a native run."""
    path = t.write("refused.py", MMAP_REFUSED)
    want = subprocess.run(["/usr/bin/python3", path], capture_output=True,
                          text=True, timeout=60).stdout
    contains(want, "still running", "native: %r" % want)
    run = t.corral(["run", "--json", "--limit", "memory=64MiB", "--ro",
                    t.tmp, "--", "/usr/bin/python3", path])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq(r.get("stdout"), want, "answers against native")
    t.assert_next_run_ok()


def all_charged(t, run, what):
    """The swap test's verdict: the run ended on the budget, every mapping
    charged, none found out of the count."""
    r = t.result(run)
    assert_breach(t, run, r, "memory")
    contains(r.get("message", ""), "the memory budget is spent", what)


def open_ws(t, name):
    ws = t.path(name)
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    return ws


@test
def budget_memory_shared_object_made_behind_the_check_ends_the_run(t):
    """A thread maps fd 100 MAP_SHARED over and over while another swaps
    it between a file and /dev/zero: corral judges the fd from its own
    copy, so the kernel may map /dev/zero where corral saw the file. Each
    mapping of /dev/zero is kept and filled. Whichever way each race
    goes, the run ends on memory: by the charges of the objects seen
    made, or because a scan found an object no creation was charged for
    (fail closed), never ok with objects out of the count. Every
    shared mapping of a file is recorded with its length, and charged it
    when a scan finds a new object it could have made (tracer/budget/shanon.c),
    so it is the budget that ends it."""
    run, r = hog(t, ["memory=256MiB", "wall=20s"], "shswap", 2000, 64, 0)
    assert_breach(t, run, r, "memory")
    # With small objects charged beside, one unmapped per mapping kept:
    # a count of objects against creations took each 64 MiB object for a
    # 4 KiB one gone, 3 GiB held ok under memory=64MiB (found by a
    # probing session). The new objects take the largest lengths of the
    # calls that could have made them.
    run, r = hog(t, ["memory=256MiB", "wall=20s"], "shswap", 2000, 64, 8)
    assert_breach(t, run, r, "memory")
    contains(r.get("message", ""), "the memory budget is spent",
             "every mapping charged, none found out of the count")
    # The swapper a process sharing the table (clone(CLONE_FILES)), not a
    # thread: the mapping process is alone in its thread group, and a
    # mapping of a file there is no candidate only while no process of
    # the run shares a table (handlers/kmem.c).
    run, r = hog(t, ["memory=256MiB", "wall=20s"], "shswap", 2000, 64, 8, 1)
    assert_breach(t, run, r, "memory")
    contains(r.get("message", ""), "the memory budget is spent",
             "a process swapper: every mapping charged")
    # The /dev/zero the caller's stdin (`corral run ... </dev/zero`), none
    # opened in the run: a shared mapping of a file is a candidate only
    # where a /dev/zero can be had (handlers/kmem.c), and this one can.
    def zero_stdin():
        z = os.open("/dev/zero", os.O_RDWR)
        os.dup2(z, 0)
        os.close(z)
    opts = ["run", "--json", "--env", "CRMARK=" + t.marker,
            "--limit", "memory=256MiB", "--limit", "wall=20s"]
    all_charged(t, t.corral(opts + t.prog_roots() + [
        "--", t.prog("budget_hog"), "shswap", "2000", "64", "8", "2"],
        preexec=zero_stdin), "stdin's /dev/zero: every mapping charged")
    # Handed in by a process outside the run over a unix socket (recvmsg
    # is not notified): the run's unix socket() counts a /dev/zero in it.
    ws = open_ws(t, "ws-zsock")
    dfd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind("/proc/self/fd/%d/zsock" % dfd)
    os.close(dfd)
    srv.listen(1)
    srv.settimeout(30)

    def serve():
        try:
            c, _ = srv.accept()
        except OSError:
            return
        z = os.open("/dev/zero", os.O_RDWR)
        socket.send_fds(c, [b"z"], [z])
        os.close(z)
        c.close()
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        run = t.corral(opts + t.prog_roots() + ["-w", ws, "--",
                       t.prog("budget_hog"), "shswap", "2000", "64", "8", "3"])
    finally:
        srv.close()
    all_charged(t, run, "a /dev/zero handed in: every mapping charged")
    # Through an end of a stream pair, taken out by a process of the
    # user's outside the run (pidfd_getfd): a pair counts too.
    ws = open_ws(t, "ws-zpair")
    p = t.spawn(opts + t.prog_roots() + ["-w", ws, "--",
                t.prog("budget_hog"), "shswap", "2000", "64", "8", "4"])
    zpid, stolen = os.path.join(ws, "zpid"), None
    deadline = time.monotonic() + 20
    while not os.path.exists(zpid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if os.path.exists(zpid):
        with open(zpid) as f:
            pid, fd = (int(x) for x in f.read().split())
        libc = ctypes.CDLL(None, use_errno=True)
        pidfd = os.pidfd_open(pid)
        got = libc.syscall(438, pidfd, fd, 0)	# pidfd_getfd
        err = ctypes.get_errno()
        os.close(pidfd)
        if got >= 0:
            stolen = socket.socket(fileno=got)
            z = os.open("/dev/zero", os.O_RDWR)
            socket.send_fds(stolen, [b"z"], [z])
            os.close(z)
            stolen.close()
        else:
            # Where the kernel refuses (a Yama ptrace scope), so does it
            # any such route: nothing to look at.
            p.kill()
            t.finish(p, timeout=30)
            print("note: pidfd_getfd refused (%s): the pair's case not run"
                  % os.strerror(err), flush=True)
    if stolen is not None or not os.path.exists(zpid):
        all_charged(t, t.finish(p, timeout=60),
                    "a /dev/zero sent through a pair's end: every mapping "
                    "charged")
    # With --fast-open the kernel opens /dev/zero unseen (Landlock allows
    # it): such a run counts a /dev/zero in it from the start.
    run, r = hog(t, ["memory=256MiB", "wall=20s"], "shswap", 2000, 64, 8,
                 extra=["--fast-open"])
    all_charged(t, run, "--fast-open: every mapping charged")
    t.assert_next_run_ok()


SPARSEMAP = r"""
import mmap, os, sys, threading, time
# test_mmap's pattern: a large sparse file mapped shared and read at its
# end, beside small shared anonymous objects made and gone; with "thread",
# beside a second thread (regrtest's --timeout watchdog).
if sys.argv[1:] == ["thread"]:
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
f = open("big", "wb"); f.truncate(2 ** 31); f.close()
fd = os.open("big", os.O_RDONLY)
t0 = time.time()
n = 0
while time.time() - t0 < 1.0:
    m = mmap.mmap(fd, 2 ** 31, mmap.MAP_SHARED, mmap.PROT_READ)
    a = mmap.mmap(-1, 4096)
    a[0] = 1
    m[2 ** 31 - 1]
    m.close(); a.close()
    n += 1
print("rounds", n > 10, flush=True)
"""


@test
def budget_memory_shared_file_mapping_beside_shared_objects(t):
    """A 2 GiB sparse file mapped shared, and small shared anonymous
    objects made and gone beside it, under memory=256MiB: the file's
    mapping makes no object and is charged nothing. It was a candidate
    (a thread could swap the descriptor for /dev/zero), the largest, and
    taken for one of the small objects at a scan: CPython's test_mmap
    ended on memory 4 runs in 10, this every run. A process alone in its
    thread group, in a run where no process shares a table, can have its
    descriptor swapped by nobody."""
    sparse_maps_run_ok(t)


def sparse_maps_run_ok(t, *args):
    """SPARSEMAP twice under memory=256MiB: ok, its peak under it."""
    script = t.write("sparsemap.py", SPARSEMAP)
    ws = open_ws(t, "ws-sparse")
    for i in range(2):
        run = t.corral(["run", "--json", "-w", ws, "--limit", "memory=256MiB",
                        "--limit", "wall=60s", "--ro", t.tmp, "--",
                        "python3", script] + list(args), timeout=120)
        r = t.result(run)
        check_result_shape(r)
        eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
        eq(r.get("stdout"), "rounds True\n", "stdout")
        lt(r["usage"]["peak_memory_bytes"], 256 * MIB,
           "usage.peak_memory_bytes")
    t.assert_next_run_ok()


@test
def budget_memory_shared_calls_refused_then_waiting_are_done(t):
    """Four threads, one after the other, each map 64 MiB shared and
    anonymous where the kernel refuses it (MAP_FIXED_NOREPLACE over a
    mapping: EEXIST), then only wait in pause, under memory=100MiB. Each
    call is charged when made; a call stays in flight until its thread is
    seen again, and these threads never are: the charges stayed, and the
    second call ended the run on memory. A thread blocked in another call
    is done with its mmap (/proc/TID/syscall, looked at before a scan), so
    the refused calls' charges go. The same look keeps such a call from
    standing for an object no call made (found by a probing session)."""
    run, r = hog(t, ["memory=100MiB", "wall=30s"], "shrefused", 4, 64, 500)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    contains(r.get("stdout", ""), "refused 4", "every mapping refused")
    t.assert_next_run_ok()


@test
def budget_memory_shared_file_mapping_beside_a_thread(t):
    """The same beside a second thread (regrtest's --timeout watchdog,
    under which test_mmap still ended on memory 3 runs in 5): another
    thread could swap the descriptor, but only for a /dev/zero, and the
    run has none (it opened none, its stdin is no /dev/zero); so the
    file's mapping is no candidate. A /dev/zero in the run makes it one
    again: budget_memory_shared_object_made_behind_the_check_ends_the_run."""
    sparse_maps_run_ok(t, "thread")


MAPREAD = r"""
import mmap, os, sys, time
mode, mib = sys.argv[1], int(sys.argv[2])
fd = os.open("data", os.O_CREAT | os.O_RDWR, 0o600)
chunk = b"x" * (1 << 20)
for _ in range(mib):
    os.write(fd, chunk)
os.fsync(fd)
if mode == "shared":
    m = mmap.mmap(fd, mib << 20, mmap.MAP_SHARED, mmap.PROT_READ)
    s = sum(m[i] for i in range(0, mib << 20, 4096))
else:
    # A private copy of every page: anonymous memory, the program's own.
    m = mmap.mmap(fd, mib << 20, mmap.MAP_PRIVATE,
                  mmap.PROT_READ | mmap.PROT_WRITE)
    for i in range(0, mib << 20, 4096):
        m[i] = 1
    s = 0
time.sleep(1.5)
print("read", mib, s > 0, flush=True)
"""


@test
def budget_memory_mapped_file_pages_are_cache(t):
    """A file read through a shared mapping holds clean page cache the
    kernel takes back under pressure, as it does the cache of files read
    with read(): SQLite with mmap_size, git fsck on a large pack and a
    scan of a mapped 111 MiB library were ended on memory under budgets
    their reads through read() kept (found by a probing session). Those
    pages no longer count; a private copy of the same pages does."""
    script = t.write("mapread.py", MAPREAD)
    for mode, want in (("shared", ("ok", None)),
                       ("private", ("limit_exceeded", "memory"))):
        ws = t.path("ws-" + mode)
        os.makedirs(ws)
        os.chmod(ws, 0o777)
        run = t.corral(["run", "--json", "-w", ws, "--limit", "memory=48MiB",
                        "--limit", "wall=60s", "--ro", t.tmp, "--",
                        "python3", script, mode, "120"], timeout=120)
        r = t.result(run)
        check_result_shape(r)
        eq((r.get("status"), r.get("limit")), want,
           "%s: status and limit (stdout %r, message %r)" % (
               mode, r.get("stdout"), r.get("message")))
        if mode == "shared":
            eq(r.get("stdout"), "read 120 True\n", "shared: the scan ran")
            lt(r["usage"]["peak_memory_bytes"], 48 * MIB,
               "shared: usage.peak_memory_bytes")
    t.assert_next_run_ok()


HIDEMAP = r"""
import mmap, os, time
# 40 MiB of shared memory only read (clean, but no swap takes it), and
# 40 MiB of a file's pages kept dirty.
shm = mmap.mmap(-1, 40 << 20, mmap.MAP_SHARED)
s = sum(shm[i] for i in range(0, 40 << 20, 4096))
fd = os.open("data", os.O_CREAT | os.O_RDWR, 0o600)
for _ in range(40):
    os.write(fd, b"x" * (1 << 20))
os.fsync(fd)
m = mmap.mmap(fd, 40 << 20, mmap.MAP_SHARED)
end = time.time() + 2
while time.time() < end:
    for i in range(0, 40 << 20, 4096):
        m[i] = 7
    time.sleep(0.05)
print("held", flush=True)
"""


@test
def budget_memory_unreclaimable_file_pages_count(t):
    """The judgement leaves out mapped files' clean pages, but not what
    the kernel cannot take back: dirty file pages passed as clean while
    the process held as much clean shared memory (40 MiB of each ran ok
    under 64MiB), and pages locked by one process and mapped by others
    counted only through the locker's share (40 processes locking slices
    of one file held their memory unevictable, ok); both found by a
    probing session. Dirty file pages now count up to every dirty page of
    the process, and a process with locked memory adds its VmLck whole."""
    lim = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    true(lim >= 2 << 20, "the test's premise: RLIMIT_MEMLOCK %d >= 2 MiB" % lim)
    script = t.write("hidemap.py", HIDEMAP)
    for mode in ("cleanshm", "locked"):
        ws = t.path("ws-" + mode)
        os.makedirs(ws)
        os.chmod(ws, 0o777)
        cmd, mem = ((["python3", script], "64MiB") if mode == "cleanshm" else
                    ([t.prog("lock_share"), "200", "4"], "160MiB"))
        run = t.corral(["run", "--json", "-w", ws, "--limit", "memory=" + mem,
                        "--limit", "wall=60s", "--ro", t.tmp] + t.prog_roots() +
                       ["--"] + cmd, timeout=120)
        r = t.result(run)
        check_result_shape(r)
        eq((r.get("status"), r.get("limit")), ("limit_exceeded", "memory"),
           "%s: status and limit (stdout %r, message %r)" % (
               mode, r.get("stdout"), r.get("message")))
    t.assert_next_run_ok()


@test
def budget_memory_pss_judgement_is_paced(t):
    """60 forked processes share 100 MiB: the RSS sum (~6 GiB) is over
    memory=128MiB, the PSS is not. Every 50 ms tick judged by PSS again
    (smaps_rollup of every process, all their page tables walked), so a
    sleeping program made corral burn a core, uncharged. Measured on the
    build this was written against: supervisor_cpu_ms 5 900-8 700 in a
    10 s hold (~700 after). Now the last judgement plus each process's growth
    since stands in, and a judgement is free only every 30 times its
    cost."""
    run, r = hog(t, ["memory=128MiB", "wall=10s"], "memforked", 100, 60, 0)
    eq(r.get("limit"), "wall", "limit (message %r)" % r.get("message"))
    contains(r.get("stdout", ""), "forked 60", "the tree was made")
    lt(r["usage"]["supervisor_cpu_ms"], 3000, "usage.supervisor_cpu_ms")
    t.assert_next_run_ok()


@test
def budget_memory_pss_estimate_still_ends_growth(t):
    """The same tree judged under the budget by PSS, then each of 30
    children touches 8 MiB of its own: past the budget by PSS, and the
    estimate between judgements must not hide it."""
    run, r = hog(t, ["memory=128MiB", "wall=30s"], "memforked", 100, 30, 8)
    assert_breach(t, run, r, "memory")
    t.assert_next_run_ok()


SPAWN_HOLDING = r"""
import subprocess, sys
x = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(x), 4096):
    x[i] = 1
for i in range(3):
    r = subprocess.run(["/bin/true"])
print("child exit", r.returncode)
"""


@test
def budget_memory_address_space_shared_by_processes_counts_once(t):
    """A vfork child (Python's subprocess, posix_spawn) runs in its
    parent's address space until its exec, and clone(CLONE_VM) makes
    processes that share one for good. Each leader was counted: a Python
    holding 300 MiB that ran /bin/true was judged ~620 MiB under
    memory=512MiB and killed (found by a probing session). Now one
    address space counts once, whichever processes share it, and still
    counts: grown past the budget, the run ends."""
    run = t.corral(["run", "--json", "--limit", "memory=512MiB", "--",
                    "python3", "-c", SPAWN_HOLDING, "300"], timeout=60)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq(r.get("stdout"), "child exit 0\n", "the children ran")
    lt(r["usage"]["peak_memory_bytes"], 480 * MIB, "peak by one count")
    run, r = hog(t, ["memory=256MiB", "wall=3s"], "memvm", 150, 4, 0)
    eq(r.get("limit"), "wall", "four processes, one address space of 150 "
       "MiB (message %r)" % r.get("message"))
    contains(r.get("stdout", ""), "shared 4", "the processes were made")
    run, r = hog(t, ["memory=256MiB", "wall=20s"], "memvm", 150, 4, 200)
    contains(r.get("stdout", ""), "shared 4", "the processes were made")
    assert_breach(t, run, r, "memory")
    t.assert_next_run_ok()


@test
def budget_memfd_counts_against_disk(t):
    # memfds written but never mapped are in no process's RSS; they are
    # unlinked tmpfs files held open, so the disk budget counts them.
    run, r = hog(t, ["disk=64MiB"], "memfd", 32, 4)
    assert_breach(t, run, r, "disk")
    t.assert_next_run_ok()


# ---- disk and files ----

@test
def budget_disk_one_big_file(t):
    run, r = hog(t, ["disk=64MiB"], "bigfile", 1024)
    assert_breach(t, run, r, "disk")
    d = r["usage"]["disk_bytes"]
    ge(d, 64 * MIB, "usage.disk_bytes")
    # The walk stops it: what passes the budget is the write rate times
    # the walk's latency (25-66 MiB measured writing as fast as it can);
    # the bound here only says the breach came from the walk, not the
    # 16 GiB RLIMIT_FSIZE.
    true(d <= 64 * MIB + 512 * MIB, "disk_bytes %d over the slack" % d)
    true(all(w <= 64 + 512 for w in ints(r["stdout"], "wrote")),
         "MiB written: %r" % r["stdout"])
    eq(r["cleanup"]["workspace_removed"], True, "workspace removed")
    t.assert_next_run_ok()


@test
def budget_disk_past_the_signed_offsets_leaves_writes_alone(t):
    """A disk budget of 8 EiB or more made the file-size backstop 2^63 or
    more, which the kernel reads as a negative offset: every write died of
    SIGXFSZ (found by a probing session). Past 2^63 - 1 there is no
    backstop now, as with no budget at all."""
    for v in ("8388607TiB", "8388608TiB", "16000000TiB"):
        run = t.corral(["run", "--json", "--limit", "disk=" + v, "--",
                        "sh", "-c", "echo hi > f; cat f"])
        r = t.result(run)
        eq((r.get("status"), r.get("stdout"), r.get("signal")),
           ("ok", "hi\n", None), "disk=%s (stderr %r)" % (v, r.get("stderr")))
    t.assert_next_run_ok()


@test
def budget_disk_sparse_file_is_its_blocks(t):
    # A sparse file takes what is written, not its size: the budget counts
    # blocks, and the size backstop leaves room (CPython's test_io makes a
    # 2 GiB one with a few pages; `truncate -s 1G` was killed by SIGXFSZ).
    run = t.corral(["run", "--json", "--limit", "disk=64MiB", "--", "sh",
                    "-c", "truncate -s 3G f && echo x >> f && "
                    "stat -c %s f && du -k f | cut -f1"])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    lines = r.get("stdout", "").split()
    eq(lines[:1], [str(3 * 1024 * MIB + 2)], "the file's size")
    true(len(lines) == 2 and int(lines[1]) <= 64, "blocks taken: %r" % lines)


@test
def budget_files_many_small(t):
    run, r = hog(t, ["files=1000"], "smallfiles", 100000, 1, timeout=120)
    assert_breach(t, run, r, "files")
    f = r["usage"]["files"]
    # The filesystem layer asks the budget before each creation: the
    # one past the budget is refused, so exactly the budget exists.
    eq(f, 1000, "usage.files")
    contains(r["message"], "refused", "message")
    t.assert_next_run_ok()


def files_script(t, limit, script):
    run = t.corral(["run", "--json", "--env", "CRMARK=" + t.marker,
                    "--limit", "files=%d" % limit, "--limit", "wall=30s",
                    "--", "python3", "-c", script], timeout=60)
    return run, t.result(run)


@test
def budget_files_unix_bind_counts(t):
    # A bind of a unix socket to a path makes an entry like any creation:
    # counted before it is made, the one past the budget refused (an
    # earlier build let 40 binds through under files=5).
    script = ("import socket\n"
              "for i in range(40):\n"
              "    k = socket.SOCK_STREAM if i % 2 else socket.SOCK_DGRAM\n"
              "    socket.socket(socket.AF_UNIX, k).bind('s%d' % i)\n"
              "    print('bound', i + 1, flush=True)\n")
    run, r = files_script(t, 5, script)
    assert_breach(t, run, r, "files")
    eq(r["usage"]["files"], 5, "usage.files")
    contains(r["message"], "refused", "message")
    true(ints(r.get("stdout", ""), "bound")[-1:] == [5],
         "binds that succeeded: %r" % r.get("stdout"))
    t.assert_next_run_ok()


@test
def budget_files_failed_binds_give_back(t):
    # Known good: binds the kernel refuses (a socket bound twice: EINVAL;
    # a name taken: EADDRINUSE) make no entry and use none of the budget.
    script = ("import errno, socket\n"
              "s = socket.socket(socket.AF_UNIX); s.bind('s0')\n"
              "errs = set()\n"
              "for i in range(20):\n"
              "    for name, sk in (('x%d' % i, s), ('s0', socket.socket(socket.AF_UNIX))):\n"
              "        try: sk.bind(name)\n"
              "        except OSError as e: errs.add(errno.errorcode[e.errno])\n"
              "for i in range(1, 5): socket.socket(socket.AF_UNIX).bind('s%d' % i)\n"
              "print(sorted(errs))\n")
    run, r = files_script(t, 5, script)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq(r.get("stdout"), "['EADDRINUSE', 'EINVAL']\n", "stdout")
    eq(r["usage"]["files"], 5, "usage.files")


@test
def budget_disk_many_small(t):
    run, r = hog(t, ["disk=16MiB", "files=1000000"], "smallfiles", 100000,
                 4096, timeout=120)
    assert_breach(t, run, r, "disk")
    d = r["usage"]["disk_bytes"]
    ge(d, 16 * MIB, "usage.disk_bytes")
    true(d <= 16 * MIB + DISK_SLACK, "disk_bytes %d over the slack" % d)
    t.assert_next_run_ok()


@test
def budget_disk_unlinked_open_files_count(t):
    # 8 files of 16 MiB, each unlinked and held open: no walk of the
    # workspace sees them, each is under RLIMIT_FSIZE, the sum is over.
    run, r = hog(t, ["disk=64MiB"], "unlinked", 16, 8)
    assert_breach(t, run, r, "disk")
    t.assert_next_run_ok()


@test
def budget_disk_unreadable_dir_still_measured(t):
    # A directory the program made unreadable (chmod 000) would hide what
    # is below it: corral still measures it, and the breach is an ordinary
    # one, not "cannot be measured" (a test suite's chmod 0 must not end
    # a run that stays within its budget).
    run, r = hog(t, ["disk=2MiB"], "hidden", 4096)
    assert_breach(t, run, r, "disk")
    not_contains(r["message"], "cannot be measured", "message")
    t.assert_next_run_ok()


@test
def budget_disk_counts_only_what_the_run_adds(t):
    ws = t.path("ws")
    os.mkdir(ws, 0o700)
    with open(os.path.join(ws, "before"), "wb") as f:
        f.write(b"b" * (8 * MIB))
    run = t.corral(["run", "--json", "-w", ws, "--limit", "disk=4MiB", "--",
                    "sh", "-c", "head -c 1048576 /dev/zero > added"])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    ge(r["usage"]["disk_bytes"], MIB, "usage.disk_bytes")
    lt(r["usage"]["disk_bytes"], 2 * MIB, "usage.disk_bytes")
    eq(r["usage"]["files"], 1, "usage.files")


# ---- disk: a pass spread over ticks, and what moves meanwhile ----

def dodge(t, mode, mib=256, secs=8, xfill=0, extra=()):
    """walk_dodge: a big file kept behind the walker of a pass spread over
    ticks (inotify shows where it is), removed before the program exits."""
    run = t.corral(["run", "--json", "--env", "CRMARK=" + t.marker,
                    "--limit", "disk=20MiB", "--limit", "files=20000",
                    "--limit", "wall=60s"] + list(extra) + t.prog_roots() +
                   ["--", t.prog("walk_dodge"), mode, str(mib), str(secs),
                    "4500", str(xfill)], timeout=120)
    return run, t.result(run)


def assert_dodge_counted(t, mode, xfill=0, extra=(), least=20 * MIB + 1):
    # The loop performs the program's renames, links and creations
    # between two slices of a pass; an earlier build let a program move
    # 4 GiB from the part of the tree not walked yet to the part walked
    # already, and back after the pass: "ok" under disk=20MiB with
    # disk_bytes 128 KiB. The end of each pass now measures what moved
    # or was made while it ran. The file is written behind the walker
    # (an allocation is charged as made), so the run may end while it is
    # still being written: past the budget is what shows the walk saw it.
    run, r = dodge(t, mode, xfill=xfill, extra=extra)
    assert_breach(t, run, r, "disk")
    ge(r["usage"]["disk_bytes"], least, "usage.disk_bytes")
    not_contains(r.get("stdout", ""), "dodged", "stdout")
    t.assert_next_run_ok()


@test
def budget_disk_directory_moved_behind_the_walk_counts(t):
    assert_dodge_counted(t, "dir")


@test
def budget_disk_big_tree_moved_behind_the_walk_counts(t):
    # The directory moved holds 9000 entries, more than the end of a
    # pass measures (CR_BUDGET_FIXUP_MAX): the pass is done again in one
    # go, the program's calls waiting meanwhile.
    assert_dodge_counted(t, "dir", xfill=9000)


@test
def budget_disk_file_moved_behind_the_walk_counts(t):
    assert_dodge_counted(t, "file")


@test
def budget_disk_file_moved_behind_the_walk_under_dev_shm_counts(t):
    # The same in a workspace the caller put under /dev/shm: the moves
    # there went unfollowed, taken for the run's own /dev/shm objects
    # (measured apart), and the dodge held again.
    ws = "/dev/shm/crwalk-" + t.marker[-12:]
    os.mkdir(ws, 0o700)
    try:
        assert_dodge_counted(t, "file", extra=["-w", ws])
    finally:
        shutil.rmtree(ws, ignore_errors=True)


@test
def budget_disk_file_linked_behind_the_walk_counts(t):
    assert_dodge_counted(t, "link")


@test
def budget_disk_file_made_behind_the_walk_counts(t):
    assert_dodge_counted(t, "create")


MOVES_PROG = r"""
import os, subprocess, time
os.mkdir("z")
os.mkdir("t")
for d in range(30):
    os.mkdir("t/d%d" % d)
    for i in range(100):
        with open("t/d%d/f%d" % (d, i), "wb") as f:
            f.write(b"x" * 4096)
end = time.time() + 4
rounds = 0
while time.time() < end:
    os.rename("t", "u")
    os.rename("u", "z/t")
    os.rename("z/t", "t")
    for i in range(20):
        with open("w.tmp", "wb") as f:
            f.write(b"y" * 8192)
        os.rename("w.tmp", "w%d" % i)
    rounds += 1
du = subprocess.run(["du", "-sk", "."], capture_output=True, text=True)
print("rounds", rounds, "du", int(du.stdout.split()[0]) * 1024, flush=True)
"""


@test
def budget_disk_moves_during_passes_count_once(t):
    # Known good: a tree of 3000 small files (a pass over it spans ticks)
    # moved back and forth, and files written by a temporary name and
    # renamed into place, all the while. What the end of a pass measures
    # for them is what the walk did not meet: nothing twice.
    path = t.write("moves.py", MOVES_PROG)
    run = t.corral(["run", "--json", "--limit", "disk=1GiB", "--ro", t.tmp,
                    "--", "/usr/bin/python3", path], timeout=120)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    out = r.get("stdout", "").split()
    true(len(out) == 4 and int(out[1]) > 0, "stdout %r" % r.get("stdout"))
    du = int(out[3])
    d = r["usage"]["disk_bytes"]
    ge(d, du * 8 // 10, "usage.disk_bytes against du's %d" % du)
    true(d <= du * 12 // 10, "disk_bytes %d over du's %d" % (d, du))
    t.assert_next_run_ok()


# ---- known-good workloads under the default budgets ----

MAKEFILE = """\
OBJS := $(patsubst %.c,%.o,$(wildcard *.c))
prog: $(OBJS)
\tcc -o $@ $(OBJS)
%.o: %.c
\tcc -O2 -c $< -o $@
"""


@test
def budget_known_good_make_j2(t):
    ws = t.path("proj")
    os.mkdir(ws, 0o700)
    n = 8
    for i in range(n):
        with open(os.path.join(ws, "f%d.c" % i), "w") as f:
            f.write("int f%d(int x) { int s = 0; for (int i = 0; i < x; "
                    "i++) s += i * %d; return s; }\n" % (i, i + 1))
    with open(os.path.join(ws, "main.c"), "w") as f:
        f.write("#include <stdio.h>\n" +
                "".join("int f%d(int);\n" % i for i in range(n)) +
                "int main(void) { long s = 0;\n" +
                "".join("s += f%d(10);\n" % i for i in range(n)) +
                'printf("sum %ld\\n", s); return 0; }\n')
    with open(os.path.join(ws, "Makefile"), "w") as f:
        f.write(MAKEFILE)
    run = t.corral(["run", "--json", "-w", ws, "--", "sh", "-c",
                    "make -j2 >/dev/null && ./prog"], timeout=180)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r, stderr %r)" %
       (r.get("message"), r.get("stderr", "")[-400:]))
    eq(r["stdout"], "sum %d\n" % sum(45 * (i + 1) for i in range(n)),
       "the built program's output")
    u = r["usage"]
    ge(u["cpu_ms"], 1, "usage.cpu_ms")
    ge(u["processes"], 3, "usage.processes")
    ge(u["files"], n + 2, "usage.files (objects and the program)")
    ge(u["disk_bytes"], 4096, "usage.disk_bytes")
    ge(u["peak_memory_bytes"], MIB, "usage.peak_memory_bytes")


@test
def budget_known_good_python_unittest(t):
    ws = t.path("py")
    os.mkdir(ws, 0o700)
    with open(os.path.join(ws, "test_small.py"), "w") as f:
        f.write("import unittest, subprocess, threading, tempfile, os\n"
                "class T(unittest.TestCase):\n"
                "    def test_math(self):\n"
                "        self.assertEqual(sum(range(10)), 45)\n"
                "    def test_threads(self):\n"
                "        out = []\n"
                "        ts = [threading.Thread(target=out.append, args=(i,))"
                " for i in range(8)]\n"
                "        [x.start() for x in ts]; [x.join() for x in ts]\n"
                "        self.assertEqual(sorted(out), list(range(8)))\n"
                "    def test_subprocess(self):\n"
                "        self.assertEqual(subprocess.run(['echo', 'x'],"
                " capture_output=True).stdout, b'x\\n')\n"
                "    def test_files(self):\n"
                "        with tempfile.TemporaryDirectory(dir='.') as d:\n"
                "            for i in range(50):\n"
                "                open(os.path.join(d, str(i)), 'w').write('z')\n"
                "            self.assertEqual(len(os.listdir(d)), 50)\n")
    run = t.corral(["run", "--json", "-w", ws, "--", "python3", "-m",
                    "unittest", "-v", "test_small"], timeout=120)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r, stderr %r)" %
       (r.get("message"), r.get("stderr", "")[-400:]))
    contains(r["stderr"], "Ran 4 tests", "unittest output")
    contains(r["stderr"], "\nOK", "unittest output")


RENAMES_PROG = r"""
import os, sys
open("f0", "w").close()
for i in range(50):
    os.rename("f%d" % i, "f%d" % (i + 1))
for i in range(15):
    with open("t%d.tmp" % i, "w") as f:
        f.write("x")
    os.rename("t%d.tmp" % i, "t%d" % i)
print("entries", len(os.listdir(".")), flush=True)
"""


@test
def budget_files_rename_to_a_new_name_is_no_creation(t):
    # A rename moves a name; writing by a temporary name and renaming it
    # into place is how editors, pip and git write files. An earlier build
    # counted each rename to a new name as a creation: 50 renames of one
    # file spent 50 of the budget, and the writes below ended the run.
    path = t.write("renames.py", RENAMES_PROG)
    run = t.corral(["run", "--json", "--limit", "files=20", "--ro", t.tmp,
                    "--", "/usr/bin/python3", path])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    contains(r.get("stdout", ""), "entries 16", "stdout")
    eq(r["usage"]["files"], 16, "usage.files")
    t.assert_next_run_ok()


NOOP_RENAME_PROG = r"""
import os
open("a", "w").close()
os.link("a", "b")
for i in range(30):
    os.rename("a", "b")
made = 0
try:
    for i in range(20):
        open("n%d" % i, "w").close()
        made += 1
        print("made", made, flush=True)
except OSError as e:
    print("refused", e.errno, flush=True)
"""


@test
def budget_files_rename_between_links_of_one_file_removes_nothing(t):
    # rename(a, b) where both name one file does nothing (rename(2)); an
    # earlier build counted a name gone each time, so the creations that
    # followed passed the budget before the walk saw them.
    path = t.write("noop.py", NOOP_RENAME_PROG)
    run = t.corral(["run", "--json", "--limit", "files=10", "--ro", t.tmp,
                    "--", "/usr/bin/python3", path])
    r = t.result(run)
    eq(r.get("status"), "limit_exceeded", "status (message %r)" %
       r.get("message"))
    eq(r.get("limit"), "files", "limit")
    eq(r["usage"]["files"], 10, "usage.files")
    not_contains(r.get("stdout", ""), "made 9", "stdout")
    t.assert_next_run_ok()


# ---- while the loop waits in a call on a held file ----

def _held_file_run(t, op, limits):
    """A workspace file whose inode lock a holder outside the run keeps
    (a thread's write waits on a page a userfaultfd holds back, as a
    long O_DIRECT write of the program would) for 5 s; the program burns
    CPU on two threads and makes one call corral performs on that file,
    so corral's loop waits on the lock."""
    ws = t.path("ws")
    os.makedirs(ws)
    f = os.path.join(ws, "f")
    with open(f, "w") as fh:
        fh.write("x")
    holder = subprocess.Popen([t.prog("inode_hold"), f, "5"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        eq(holder.stdout.readline(), b"held\n", "the holder's first line")
        opts = ["run", "--json", "-w", ws, "--env", "CRMARK=" + t.marker]
        for lim in limits:
            opts += ["--limit", lim]
        run = t.corral(opts + t.prog_roots() +
                       ["--", t.prog("stall_call"), op, "f"], timeout=60)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    return run, t.result(run)


@test(root=True)
def budget_cpu_holds_while_the_loop_waits_on_a_held_file(t):
    # The loop performs the chmod and waits on the inode lock for 5 s; the
    # watchdog thread keeps the budgets in its place. Before, no tick ran
    # until the lock went: cpu_ms 2912 of 1 s (RLIMIT_CPU's cap), named at
    # 5.5 s (docs/limits.md, "A program's own slow write").
    run, r = _held_file_run(t, "chmod", ["cpu=1s", "wall=60s"])
    assert_breach(t, run, r, "cpu")
    cpu = r["usage"]["cpu_ms"]
    ge(cpu, 1000, "usage.cpu_ms")
    true(cpu <= 1000 + CPU_SLACK_MS, "usage.cpu_ms %d: overshoot over %d ms"
         % (cpu, CPU_SLACK_MS))
    t.assert_next_run_ok()


@test(root=True)
def budget_wall_holds_while_the_loop_waits_on_a_held_file(t):
    # The same with an O_TRUNC open and the wall budget: named when it
    # fires, not when the lock goes.
    run, r = _held_file_run(t, "trunc", ["wall=1s"])
    assert_breach(t, run, r, "wall")
    true(r["usage"]["wall_ms"] <= 1000 + CPU_SLACK_MS,
         "usage.wall_ms %d: the wall limit named past 1 s + %d ms" %
         (r["usage"]["wall_ms"], CPU_SLACK_MS))
    t.assert_next_run_ok()


# ---- while the program holds its own memory-map lock ----

def _mapstall(t, limits, *args, timeout=60):
    """mapstall: 16 threads take the program's memory-map lock for writing
    without pause (mprotect over 16 GiB of zero pages), so every read
    corral makes of its memory (a path) or of its maps waits for it,
    uninterruptibly."""
    opts = ["run", "--json", "--env", "CRMARK=" + t.marker]
    for lim in limits:
        opts += ["--limit", lim]
    run = t.corral(opts + t.prog_roots() +
                   ["--", t.prog("mapstall"), "16", "16"] +
                   [str(a) for a in args], timeout=timeout)
    return run, t.result(run)


@test
def budget_memory_holds_while_the_program_holds_its_map_lock(t):
    """A probing session held corral's loop in a read of a path (and, with
    no call at all, in the tick's read of the maps) for tens of seconds,
    while a child took 1 GiB: 1.2 GB used of 512 MiB, wall=40s passed by
    12 s. Each such read is now marked, and the watchdog judges the
    budgets while it waits (tracer/budget/stall.c): here a child takes
    200 MiB a second; the run ends on memory within seconds (the build
    before: 21-32 s, 1.1 GB)."""
    for mode in ("calls", "nocalls"):
        run, r = _mapstall(t, ["memory=256MiB", "wall=30s"], 20, 200, mode)
        assert_breach(t, run, r, "memory")
        lt(r["usage"]["wall_ms"], 10000, "%s: usage.wall_ms" % mode)
        lt(r["usage"]["peak_memory_bytes"], 768 * MIB,
           "%s: usage.peak_memory_bytes" % mode)
    # The growing process's main thread gone (its statm reads zeros): a
    # probing session's tree reached 692 MiB so.
    run, r = _mapstall(t, ["memory=256MiB", "wall=30s"], 20, 200, "nocalls",
                       "lone")
    assert_breach(t, run, r, "memory")
    lt(r["usage"]["peak_memory_bytes"], 512 * MIB,
       "lone: usage.peak_memory_bytes")
    t.assert_next_run_ok()


@test
def budget_wall_and_cpu_hold_while_the_program_holds_its_map_lock(t):
    """The wall and cpu budgets, named when they are spent, not when the
    program lets the lock go (the build before: wall=4s at 12.6 s)."""
    run, r = _mapstall(t, ["wall=3s"], 20, 0, "calls")
    assert_breach(t, run, r, "wall")
    true(r["usage"]["wall_ms"] <= 3000 + CPU_SLACK_MS,
         "usage.wall_ms %d: the wall limit named past 3 s + %d ms" %
         (r["usage"]["wall_ms"], CPU_SLACK_MS))
    run, r = _mapstall(t, ["cpu=3s", "wall=30s"], 20, 0, "calls")
    assert_breach(t, run, r, "cpu")
    lt(r["usage"]["wall_ms"], 10000, "cpu: usage.wall_ms")
    t.assert_next_run_ok()


@test
def budget_holds_while_the_program_holds_a_pipe_corral_reads(t):
    """The program's own write to its stdout (corral's capture pipe), from
    a page whose fault waits for the memory-map lock the storm holds,
    keeps the pipe's lock held; corral's next look at that pipe (the fd
    scan's size query, the capture's read) waits behind it, in a call no
    mark covers. A probing session so held the loop 26-82 s: 6-10 times the
    memory budget, the wall named 28 s late, a SIGTERM acted on 31 s after.
    The watchdog now takes a loop away from its wait for a second as held,
    judges from /proc and the signals alone, and kills every traced
    process (tracer/budget/stall.c). The build before: 704 MB (idle) to
    1 GB (loaded) under memory=256MiB, wall=3s named at 6.8 s; now ~300 MB
    and 3.2 s."""
    run, r = _mapstall(t, ["memory=256MiB", "wall=30s", "cpu=300s"], 20,
                       100, "pipe")
    assert_breach(t, run, r, "memory")
    # The child touches a mapping it made before (no call of its waits for
    # the held loop), so it passes the budget ~2.6 s in; what must hold is
    # that the budget is judged as it grows.
    lt(r["usage"]["peak_memory_bytes"], 512 * MIB, "usage.peak_memory_bytes")
    run, r = _mapstall(t, ["wall=3s"], 20, 0, "pipe")
    assert_breach(t, run, r, "wall")
    true(r["usage"]["wall_ms"] <= 3000 + 1000 + CPU_SLACK_MS,
         "usage.wall_ms %d: the wall limit named past 3 s + 1 s held + %d ms"
         % (r["usage"]["wall_ms"], CPU_SLACK_MS))
    t.assert_next_run_ok()


@test
def cancel_holds_while_the_program_holds_its_map_lock(t):
    """SIGTERM to corral while its loop waits on the program's lock: the
    run ends cancelled (exit 130) at once. The build before went on to its
    wall limit (51.7 s later, limit_exceeded)."""
    res = t.path("result.json")
    p = t.spawn(["run", "--result", res, "--limit", "wall=60s",
                 "--env", "CRMARK=" + t.marker] + t.prog_roots() +
                ["--", t.prog("mapstall"), "16", "16", "50", "0", "calls"])
    line = p.stdout.readline()
    eq(line, b"ready\n", "the program's first line")
    time.sleep(1)
    t0 = time.monotonic()
    os.kill(p.pid, signal.SIGTERM)
    run = t.finish(p, timeout=60)
    took = time.monotonic() - t0
    eq(run.code, 130, "corral's exit (stderr %r)" % run.err[-300:])
    lt(took, 5, "seconds from SIGTERM to corral's exit")
    with open(res) as f:
        r = json.load(f)
    eq(r.get("status"), "cancelled", "status")
    contains(r.get("message", ""), "TERM", "message")
    t.assert_next_run_ok()


def _tables_run(t, mode, limits):
    """fdtables: 100 processes holding copies of a table of up to 19 000
    descriptors, then, in a loop, a call that has corral search every fd
    table of the run."""
    opts = ["run", "--json", "--env", "CRMARK=" + t.marker,
            "--limit", "processes=256", "--limit", "memory=1GiB"]
    for lim in limits:
        opts += ["--limit", lim]
    run = t.corral(opts + t.prog_roots() +
                   ["--", t.prog("fdtables"), "100", "19000", mode],
                   timeout=120)
    return run, t.result(run)


@test
def budget_cpu_counts_the_search_for_a_pty_master(t):
    """A pty of the run is one whose master a task of the run holds: an
    open of /dev/pts/N has corral look for that master in every fd table.
    With the master closed and 100 tables of 19 000 descriptors, one open
    read 1.9 million links: seconds of the supervisor's CPU, uncharged,
    with no budget enforced meanwhile (300 tables held 5.3 GiB under
    memory=64MiB and a wall=10s run lasted 19 s; found by a probing
    session). The search now reads at most CR_TABLES_SEARCH_MAX entries a
    call, and its CPU is the run's: the cpu budget ends the loop of opens
    (before, the wall limit did, at 22 s of a 20 s budget, cpu_ms 135)."""
    run, r = _tables_run(t, "pty", ["cpu=1s", "wall=30s"])
    assert_breach(t, run, r, "cpu")
    eq(r.get("stdout"), "ready\n", "stdout")
    t.assert_next_run_ok()


@test
def budget_cpu_counts_the_search_for_udp_sockets_let_go(t):
    """A UDP bind that finds its port taken has corral look, in every fd
    table, for sockets it holds that the program closed. The look was
    made at every such bind, uncharged and unpaced: 21 ms of the
    supervisor's CPU a bind with 19 000 descriptors, 20 s of it in a run
    whose cpu_ms said 26, and with 1 000 tables one bind held the loop
    past the watchdog's 60 s (found by a probing session). It now reads
    at most CR_TABLES_SEARCH_MAX entries, is charged to the run and paced
    as for a connect: the cpu budget ends the loop of binds (before, the
    wall limit did, cpu_ms 141 of 400)."""
    # 1 s, not 400 ms: making 100 tables of 19 000 takes 0.4-0.65 s of
    # the budget on a slower machine, which then ended before the loop.
    run, r = _tables_run(t, "udp", ["cpu=1s", "wall=40s"])
    assert_breach(t, run, r, "cpu")
    eq(r.get("stdout"), "ready\n", "stdout")
    t.assert_next_run_ok()


ASAN_SRC = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
	char *p = malloc(16);
	if (argc > 1 && !strcmp(argv[1], "overflow"))
		p[16] = 1;      /* one past the end: ASan reports it */
	if (argc > 1 && !strcmp(argv[1], "hog")) {
		for (;;) {      /* fill memory as fast as it can */
			char *q = malloc(1 << 20);
			memset(q, 1, 1 << 20);
		}
	}
	strcpy(p, "asan-ok");
	puts(p);
	free(p);
	return 0;
}
'''


@test
def budget_sanitizer_build_runs_with_the_backstop_lifted(t):
    """A program built with AddressSanitizer maps a 15 TiB shadow, which
    RLIMIT_DATA counts: under the memory backstop it cannot start (rc 1,
    ReserveShadowMemoryRange); with --no-data-backstop it runs, finds its
    overflow, and a hog is still ended by the memory budget (the tick
    alone). LeakSanitizer stops the world with ptrace, which no traced
    program can: ASAN_OPTIONS=detect_leaks=0, as under strace or gdb.
    The result says the backstop was lifted."""
    src = t.write("asan.c", ASAN_SRC)
    exe = t.path("asan")
    cc = subprocess.run(["gcc", "-fsanitize=address", "-g", "-O0", "-o", exe,
                         src], capture_output=True, text=True, timeout=120)
    eq(cc.returncode, 0, "gcc -fsanitize=address (stderr %r)" % cc.stderr)
    os.chmod(exe, 0o755)
    base = ["run", "--json", "--ro", t.tmp, "--exec", t.tmp,
            "--env", "ASAN_OPTIONS=detect_leaks=0", "--limit", "wall=60s"]
    r = t.result(t.corral(base + ["--", exe]))
    eq(r.get("status"), "program_error",
       "with the backstop: no start (stderr %r)" % r.get("stderr", "")[-300:])
    contains(r.get("stderr", ""), "ReserveShadowMemoryRange", "ASan's reason")
    eq(r["assurance"]["mechanisms"]["data_backstop"]["active"], True,
       "backstop reported")
    lifted = base + ["--no-data-backstop"]
    r = t.result(t.corral(lifted + ["--", exe]))
    eq((r.get("status"), r.get("stdout")), ("ok", "asan-ok\n"),
       "lifted: runs (stderr %r)" % r.get("stderr", "")[-300:])
    mech = r["assurance"]["mechanisms"]["data_backstop"]
    eq((mech["active"], mech["counts"]), (False, False), "lifted, reported")
    eq(r["assurance"]["level"], "full", "the level does not depend on it")
    r = t.result(t.corral(lifted + ["--", exe, "overflow"]))
    eq(r.get("status"), "program_error", "overflow found")
    contains(r.get("stderr", ""), "heap-buffer-overflow", "ASan's report")
    r = t.result(t.corral(lifted + ["--limit", "memory=64MiB", "--",
                                    exe, "hog"], timeout=90))
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "memory"),
       "a hog still ends on memory (stderr %r)" % r.get("stderr", "")[-300:])
    t.assert_next_run_ok()


@test
def budget_tree_too_deep_to_measure_is_named(t):
    """Directories nested deeper than the walk's 4096 levels cannot be
    measured: the run ends on `files` and the next run on that workspace
    is refused before it starts. Both messages said "Too many levels of
    symbolic links" (no link was involved, found by a probing session
    running gnulib's test-getcwd); they name the depth now. The tree is
    built by renaming 42 chains of 100 into one another (tests/progs/
    deepnest.c): names past PATH_MAX are refused before that depth."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    run = t.corral(["run", "--json", "-w", ws, "--limit", "wall=30s",
                    "--limit", "files=100000"] + t.prog_roots() +
                   ["--", t.prog("deepnest"), "42", "100"], timeout=60)
    r = t.result(run)
    try:
        eq((r.get("status"), r.get("limit")), ("limit_exceeded", "files"),
           "verdict (message %r, stdout %r)" % (r.get("message"),
                                                r.get("stdout")))
        contains(r.get("message", ""), "nested deeper than 4096 levels",
                 "message")
        run = t.corral(["run", "--json", "-w", ws, "--", "true"],
                       timeout=60)
        r = t.result(run)
        eq(r.get("status"), "platform_failure", "the next run")
        contains(r.get("message", ""), "nested deeper than 4096 levels",
                 "the next run's message")
    finally:
        for name in os.listdir(ws):
            subprocess.run(["rm", "-rf", os.path.join(ws, name)],
                           check=True)
    t.assert_next_run_ok()


SYSINFO = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
page = os.sysconf("SC_PAGE_SIZE")
print("phys_mib", os.sysconf("SC_PHYS_PAGES") * page >> 20)
print("avail_le_phys", os.sysconf("SC_AVPHYS_PAGES") <= os.sysconf("SC_PHYS_PAGES"))
buf = ctypes.create_string_buffer(112)
r = libc.sysinfo(buf)
procs = int.from_bytes(buf.raw[80:82], "little")
print("sysinfo", r, "procs_small", 0 < procs < 10)
r = libc.sysinfo(ctypes.c_void_p(8))
print("sysinfo_fault", r, ctypes.get_errno())
'''


@test
def budget_memory_is_the_machines_memory_to_the_run(t):
    """sysinfo (glibc's sysconf(_SC_PHYS_PAGES)) shows the memory budget
    as the machine's RAM and the run's tasks as its processes: a JVM with
    no heap flag sized its heap from the host's 24 GiB, committed 3 GiB
    to hold 200 MiB and crashed on the RLIMIT_DATA backstop of a 512 MiB
    budget (found by a compatibility probe); it now sizes itself from the
    budget, as from a container's limit. A bad pointer is EFAULT, as
    natively. On the build before: the host's RAM and process count."""
    script = t.write("sysinfo.py", SYSINFO)
    r = t.corral(["run", "--json", "--ro", t.tmp, "--limit", "memory=256MiB",
                  "--", "/usr/bin/python3", script])
    res = t.result(r)
    eq(res.get("status"), "ok", "status (stderr %s)" % _show(res.get("stderr")))
    a = answers(res.get("stdout"))
    host_mib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    eq(a.get("phys_mib"), str(min(256, host_mib)), "physical memory (MiB)")
    eq(a.get("avail_le_phys"), "True", "available <= physical")
    eq(a.get("sysinfo"), "0 procs_small True", "sysinfo and its process count")
    eq(a.get("sysinfo_fault"), "-1 14", "sysinfo(bad pointer): EFAULT")


LIST_PARENT = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for i in range(100000):
    n = len(os.listdir(fd))     # from the start each time
print("listed", n)
"""


@test
def budget_cpu_counts_listings_corral_filters(t):
    """A directory the run may see but not read (the workspace's parent)
    is listed with only what leads into a root: corral reads every hidden
    entry to find the next kept one. A program listing such a directory
    among 20 000 hidden names, again and again, cost corral 30 ms a call
    and itself nothing (a probing session: 9 s of corral's CPU against
    6 ms of the program's under cpu=1s, status ok). That reading is
    charged to the run now, as a long walk's is: the cpu budget ends it."""
    top, ws = t.workspace_among_hidden(20000)
    with open(os.path.join(ws, "lister.py"), "w") as f:
        f.write(LIST_PARENT)
    run = t.corral(["run", "--json", "-w", ws,
                    "--limit", "cpu=1s", "--limit", "wall=20s", "--",
                    "/usr/bin/python3", os.path.join(ws, "lister.py"), top],
                   timeout=60)
    r = t.result(run)
    assert_breach(t, run, r, "cpu")
    t.assert_next_run_ok()
