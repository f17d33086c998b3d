"""Doors through a thread's own fd table, and through core scheduling.
Probe: tests/progs/thread_doors.c.

A thread made without CLONE_FILES (clone), or one that called
close_range(CLOSE_RANGE_UNSHARE), has an fd table of its own: its fd N and
its leader's fd N are different files. corral copied every fd it judged
(pidfd_getfd) from the leader's table, so it judged one file while the
kernel used another: F_NOTIFY was let through on a directory outside every
root, an fexecve passed its check on the leader's file, a pidfd signal
killed the leader's child, connect connected the leader's socket; and once
the leader had exited, every such call failed ESRCH. Each test below failed
on the build before the fix, with Landlock on and off (the supervisor
judges these calls itself; Landlock does not see them).

prctl(PR_SCHED_CORE) with a pid reads, gives or takes the core-scheduling
cookie of any process of the uid; it is refused as a kernel without
CONFIG_SCHED_CORE answers (EINVAL), and recorded.
"""

import os

from harness import eq, true, contains, not_contains, test, _show, denials_of

METHODS = ("clone", "unshare")


def probe(t, args, extra=(), timeout=60):
    os.makedirs(t.path("ws"), exist_ok=True)
    run = t.corral(["run", "--json", "-w", t.path("ws"), "--limit",
                    "wall=30s"] + list(extra) + t.prog_roots() +
                   ["--", t.prog("thread_doors")] + [str(a) for a in args],
                   timeout=timeout)
    r = t.result(run)
    true(r.get("status") == "ok",
         "status %r (%s), stdout %s" % (r.get("status"), r.get("message"),
                                        _show(r.get("stdout"))))
    return r


@test
def thread_table_dnotify_is_judged_on_the_threads_directory(t):
    """The leader holds the workspace at N, the thread the workspace's
    parent (outside every root, open for a listing only): F_NOTIFY there
    was accepted (the leader's workspace was judged), so the run was told
    of every change beside it. Now refused and recorded; the reverse
    (thread holds the workspace) is accepted, as from the leader."""
    out = t.tmp
    for m in METHODS:
        r = probe(t, ["dnotify", m, out, t.path("ws")])
        so = r.get("stdout") or ""
        contains(so, "thread(OUT) leader(IN) F_NOTIFY ret=-1 errno=EACCES",
                 "F_NOTIFY on the thread's outside directory (%s)" % m)
        contains(so, "thread(IN) leader(OUT) F_NOTIFY ret=0 ",
                 "F_NOTIFY on the thread's workspace (%s)" % m)
        contains(so, "leader OUT F_NOTIFY ret=-1 errno=EACCES", "control")
        contains(so, "leader IN F_NOTIFY ret=0 ", "control")
        d = [x for x in denials_of(r, "fcntl", "fs")
             if x.get("target") == out]
        true(d and d[0].get("count") == 2,
             "both refusals recorded on %s (%s): %s" % (
                 out, m, _show(r.get("denials"))))


@test
def thread_table_getdents_lists_the_threads_directory(t):
    """getdents64 was performed on the leader's directory at N (listing
    it and moving the leader's offset): the thread saw the other
    directory's names, the leader then an empty listing."""
    for m in METHODS:
        t.write("ws/in/inside-marker", "")
        t.write("ws/other/leader-marker", "")
        r = probe(t, ["dents", m, t.path("ws/in"), t.path("ws/other")])
        so = r.get("stdout") or ""
        contains(so, "thread names=inside-marker,\n", "thread (%s)" % m)
        contains(so, "leader names=leader-marker,\n", "leader (%s)" % m)


@test
def thread_table_fexecve_is_judged_on_the_threads_file(t):
    """execveat(N, "", AT_EMPTY_PATH) of a deleted copy the thread holds,
    the leader holding an exec root's program at N: the check at the call
    passed on the leader's file (only the exec stop caught the image and
    ended the run). Now refused at the call; the reverse runs."""
    good = t.prog("thread_doors")
    for m in METHODS:
        r = probe(t, ["fexec", m, good])
        so = r.get("stdout") or ""
        contains(so, "thread execveat ret=-1 errno=EACCES", "refused (%s)" % m)
        contains(so, "leader still here", "the process goes on (%s)" % m)
        true(denials_of(r, "execveat", "exec"),
             "recorded at the call (%s): %s" % (m, _show(r.get("denials"))))
        r = probe(t, ["fexec2", m, good])
        so = r.get("stdout") or ""
        contains(so, "hello from the exec'd image",
                 "the thread's exec root program runs (%s)" % m)
        not_contains(so, "thread execveat", "no failure (%s)" % m)
        eq(denials_of(r, layer="exec"), [], "exec denials (%s)" % m)


@test
def thread_table_pidfd_signal_reaches_the_threads_process(t):
    """pidfd_send_signal(N, SIGKILL) from the thread holding child A's
    pidfd at N (the leader child B's): corral sent through its copy of the
    leader's pidfd and killed B."""
    for m in METHODS:
        r = probe(t, ["pidfd", m])
        so = r.get("stdout") or ""
        contains(so, "thread pidfd_send_signal ret=0 ", m)
        contains(so, "child A (thread's) gone=1", "the target (%s)" % m)
        contains(so, "child B (leader's) gone=0", "the bystander (%s)" % m)


@test
def thread_table_connect_uses_the_threads_socket(t):
    """connect(N) of a unix socket the thread holds to a listener of the
    workspace: corral connected the leader's socket at N as well."""
    for m in METHODS:
        r = probe(t, ["unix", m])
        so = r.get("stdout") or ""
        contains(so, "thread connect ret=0 ", m)
        contains(so, "thread getpeername ret=0 ", m)
        contains(so, "leader getpeername ret=-1 errno=ENOTCONN",
                 "the leader's socket untouched (%s)" % m)


@test
def leader_gone_thread_fd_calls_still_answer(t):
    """The main thread exits; the remaining thread (sharing the table)
    lists "." and asks F_NOTIFY on it: both answered ESRCH (the copy was
    taken through the exited leader)."""
    t.write("ws/ws-marker", "")
    r = probe(t, ["leader_gone"])
    so = r.get("stdout") or ""
    contains(so, "thread open . ret=", "probe ran")
    not_contains(so, "thread getdents64 . ret=-1", "listing")
    contains(so, "ws-marker,", "the workspace's names")
    contains(so, "thread F_NOTIFY . ret=0 ", "F_NOTIFY on the workspace")


@test
def sched_core_on_another_process_is_refused(t):
    """PR_SCHED_CORE naming a pid (the parent, pid 1) is refused with
    EINVAL and recorded; pid 0 (the caller) stays in the kernel, which
    answers for itself (EINVAL here without CONFIG_SCHED_CORE)."""
    r = probe(t, ["sched_core"])
    so = r.get("stdout") or ""
    contains(so, "PR_SCHED_CORE GET parent ret=-1 errno=EINVAL", "parent")
    contains(so, "PR_SCHED_CORE CREATE pid 1 ret=-1 errno=EINVAL", "pid 1")
    d = denials_of(r, "prctl", "proc")
    targets = sorted(x.get("target") or "" for x in d)
    eq(len(targets), 2, "denials %s" % _show(r.get("denials")))
    true(all(x.startswith("PR_SCHED_CORE pid ") for x in targets),
         "targets %s" % targets)
    true("PR_SCHED_CORE pid 1" in targets, "pid 1 named: %s" % targets)
    true(not any(x == "PR_SCHED_CORE pid 0" for x in targets),
         "pid 0 is the caller's own: %s" % targets)


@test
def private_futex_hash_is_answered_as_an_older_kernel(t):
    """prctl(PR_FUTEX_HASH) makes a private futex hash of as many 64-byte
    slots as asked (1M here, 64 MiB; 16M held 1 GiB a process that no
    budget saw, found by a probing session): answered EINVAL, as a kernel
    before 6.16, for setting and for reading."""
    r = probe(t, ["futex_hash"])
    so = r.get("stdout") or ""
    contains(so, "PR_FUTEX_HASH SET_SLOTS ret=-1 errno=EINVAL", "set")
    contains(so, "PR_FUTEX_HASH GET_SLOTS ret=-1 errno=EINVAL", "get")
    eq(r.get("status"), "ok", "status")


@test
def thread_cwd_of_its_own_is_the_one_resolved(t):
    """A thread made without CLONE_FS has a cwd of its own: a relative
    path is resolved from the calling thread's cwd (/proc/TID/cwd), never
    its leader's. (A guard: this held before the fd-table fix too.)"""
    out = t.tmp
    t.write("secret.txt", "MARKER")
    t.write("ws/secret.txt", "inside")
    r = probe(t, ["cwd", out, "secret.txt"])
    so = r.get("stdout") or ""
    contains(so, "thread(OUT) open ret=-1 errno=ENOENT", "outside, from "
             "the thread's cwd")
    not_contains(so, "MARKER", "the file outside the roots")
    contains(so, "leader(ws) read=inside", "the leader's cwd")
    contains(so, "thread(ws) read=inside", "inside, from the thread's cwd")
    contains(so, "leader(OUT) open ret=-1 errno=ENOENT", "the leader's cwd")


@test
def thread_table_judged_past_the_kept_pidfds(t):
    """corral keeps at most 256 threads' pidfds (each is an fd it cannot
    use for the program's opens); past that a thread's copy is made
    through a pidfd of its own for that one call. 300 threads list "."
    first, then the split-table F_NOTIFY is judged as with one thread."""
    out = t.tmp
    for m in METHODS:
        r = probe(t, ["many", 300, m, out, t.path("ws")])
        so = r.get("stdout") or ""
        contains(so, "threads listed bad=0 of 300", "every thread listed")
        contains(so, "thread(OUT) leader(IN) F_NOTIFY ret=-1 errno=EACCES",
                 "the thread's outside directory (%s)" % m)
        contains(so, "thread(IN) leader(OUT) F_NOTIFY ret=0 ",
                 "the thread's workspace (%s)" % m)
