"""Doors through the supervisor's own resources: its descriptor table and its
one loop thread. Probe: tests/progs/supervisor_doors.c.

- A blocking sendmsg on a full unix socket is kept by corral until the
  socket has room, with a copy of every descriptor it passes (SCM_RIGHTS).
  256 such sends of 253 descriptors could fill corral's table; measures
  that need a descriptor then failed: the run ended `platform_failure`
  (blaming the host), or an unlink went ahead without its ledger entry and
  a mapped file of any size was counted nowhere (`ok`, disk 0).
- A dropped waiting send closed its copies one after another on the loop,
  each close of a TCP socket with SO_LINGER and unsent data bounded at
  200 ms: 200 of them held the loop 40 s, past the wall budget, and memory
  made resident meanwhile went unseen.

Each case failed on the build before its fix, Landlock on and off.
"""

from harness import eq, true, lt, contains, test, _show

MIB = 1 << 20


def probe(t, args, limits, timeout=120):
    opts = ["run", "--json", "-w", t.path("ws")]
    for lim in limits:
        opts += ["--limit", lim]
    run = t.corral(opts + t.prog_roots() +
                   ["--", t.prog("supervisor_doors")] + [str(a) for a in args],
                   timeout=timeout)
    return run, t.result(run)


def limited(r, limit):
    eq(r.get("status"), "limit_exceeded",
       "status (message %r, stdout %s)" % (r.get("message"),
                                            _show(r.get("stdout"))))
    eq(r.get("limit"), limit, "limit (message %r)" % r.get("message"))


@test
def supervisor_fd_flood_leaves_corral_its_descriptors(t):
    """Enough blocked 253-descriptor sends to fill corral's table (its
    RLIMIT_NOFILE, the program's too), then an open, a fork, and two
    children of 200 MiB under memory=256MiB. Before: corral's table
    filled, the open failed, and the memory budget could not measure a
    task: `platform_failure`. Now the waiting sends hold a bounded share
    of corral's table; past it a send fails at once (ETOOMANYREFS, the
    kernel's answer for too many descriptors in flight) and every budget
    is measured."""
    run, r = probe(t, ["flood", 200],
                   ["wall=30s", "cpu=60s", "memory=256MiB"])
    out = r.get("stdout") or ""
    contains(out, "open after flood: ok", "an open after the flood")
    contains(out, "fork after flood: ok", "a fork after the flood")
    contains(out, "refused (Too many references", "sends past the share")
    limited(r, "memory")
    lt(run.elapsed, 40, "seconds until corral returned")
    t.assert_next_run_ok()


@test
def supervisor_fd_flood_cannot_dodge_the_ledger(t):
    """Fill corral's table with waiting sends (253, 16, then 1 descriptor
    each, until one is refused), then unlink a mapped 256 MiB file, giving
    one descriptor back per refused try. Before: the unlink found one for
    the resolver and none for the ledger, went ahead, and 256 MiB held by
    a mapping were counted nowhere under disk=64MiB: `ok`, disk 0. Now the
    table never fills, and an unlink that cannot keep its file measurable
    is refused."""
    run, r = probe(t, ["ledger", 256, 6],
                   ["wall=40s", "disk=64MiB", "files=100000"])
    limited(r, "disk")
    lt(run.elapsed, 40, "seconds until corral returned")
    t.assert_next_run_ok()


@test
def supervisor_lingering_closes_do_not_hold_the_loop(t):
    """200 TCP connections with unsent data and SO_LINGER 3600 s, whose
    last copies are corral's, in a send dropped when the sender dies; a
    thread burns CPU. Before: the drop closed them one by one on the loop,
    200 ms each: 40 s without a budget checked, and the run ended on cpu
    long past wall=5s. Now the loop spends at most 200 ms a second on such
    closes and hands the rest to a closer thread: wall fires."""
    run, r = probe(t, ["linger", 200], ["wall=5s", "cpu=120s"], timeout=150)
    limited(r, "wall")
    lt(run.elapsed, 20, "seconds until corral returned")
    t.assert_next_run_ok()


@test
def supervisor_lingering_closes_do_not_hide_memory(t):
    """The same stall, and meanwhile 1 GiB made resident for 2 s and given
    back under memory=256MiB. Before: unseen, the run ended `ok`. Now the
    loop measures it."""
    run, r = probe(t, ["linger", 150, 1024, 4],
                   ["wall=30s", "memory=256MiB"], timeout=150)
    limited(r, "memory")
    lt(run.elapsed, 30, "seconds until corral returned")
    t.assert_next_run_ok()
