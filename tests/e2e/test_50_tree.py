"""The whole process tree ends with the run, whatever way the run ends."""

import os
import signal

from harness import (eq, contains, true, lt, ge, test, processes, wait_for,
                     kill_pids, check_result_shape)


@test
def tree_detached_grandchild_killed(t):
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", t.prog("detach"), t.marker], timeout=30)
    r = t.result(run)
    eq(run.code, 0, "exit status")
    eq(r.get("status"), "ok", "status")
    contains(r.get("stdout", ""), "detached ", "stdout")
    lt(run.elapsed, 5.0, "seconds until corral returned")
    left = processes(t.marker)
    kill_pids(p for p, _ in left)
    eq(left, [], "marker processes once corral returned")
    ge(r.get("cleanup", {}).get("killed", 0), 1, "cleanup.killed")
    eq(r.get("cleanup", {}).get("leftover_processes"), 0,
       "cleanup.leftover_processes")
    t.assert_next_run_ok()


@test
def tree_detached_shell(t):
    # The same with the shell only: a setsid'd sleep left behind.
    run = t.corral(["run", "--json", "--env", "CRMARK=" + t.marker, "--",
                    "sh", "-c",
                    "(setsid sleep 1000 </dev/null >/dev/null 2>&1 &); "
                    "sleep 0.2; exit 0"], timeout=30)
    r = t.result(run)
    eq(run.code, 0, "exit status")
    lt(run.elapsed, 5.0, "seconds until corral returned")
    left = processes(t.marker)
    kill_pids(p for p, _ in left)
    eq(left, [], "marker processes once corral returned")
    ge(r.get("cleanup", {}).get("killed", 0), 1, "cleanup.killed")


@test
def tree_stdout_held_open_json(t):
    run = t.corral(["run", "--json", "--env", "CRMARK=" + t.marker, "--",
                    "sh", "-c", "sleep 1000 & echo done"], timeout=30)
    r = t.result(run)
    lt(run.elapsed, 5.0, "seconds until corral returned")
    eq(run.code, 0, "exit status")
    eq(r.get("stdout"), "done\n", "stdout")
    t.no_marker_processes("after the run", grace=0.5)
    t.assert_next_run_ok()


@test
def tree_stdout_held_open_streaming(t):
    # Here the held descriptor may be this test's own pipe: corral must not
    # hand it to the program in a way that outlives the run.
    run = t.corral(["run", "--env", "CRMARK=" + t.marker, "--",
                    "sh", "-c", "sleep 1000 & echo done"], timeout=30)
    lt(run.elapsed, 5.0, "seconds until corral returned")
    eq(run.code, 0, "exit status")
    eq(run.out, b"done\n", "stdout")
    t.no_marker_processes("after the run", grace=0.5)


def _start_tree(t, extra=(), env=None, n=3):
    """Start corral running a tree of n marked sleeps; return the Popen
    once they all exist."""
    p = t.spawn(["run"] + list(extra) + t.prog_roots() +
                ["--", t.prog("tree"), t.marker, str(n)], env=env)
    ok = wait_for(lambda: p.poll() is not None or
                  len(processes(t.marker, exclude=(p.pid,))) >= n + 1, 20)
    if p.poll() is not None:
        run = t.finish(p, timeout=10)
        raise AssertionError("corral ended before the tree was up: %s" %
                             run.summary())
    if not ok:
        p.kill()
        t.finish(p, timeout=10)
        raise AssertionError("tree never came up: %r" %
                             processes(t.marker, exclude=(p.pid,)))
    return p


@test
def sigkill_to_corral_kills_tree(t):
    # A killed corral cannot remove its private workspace; keep that in a
    # TMPDIR of this test's own, which the test removes.
    tmp = t.path("tmp")
    os.mkdir(tmp, 0o700)
    p = _start_tree(t, env={"TMPDIR": tmp})
    os.kill(p.pid, signal.SIGKILL)
    t.finish(p, timeout=10)
    eq(p.returncode, -signal.SIGKILL, "corral's end")
    t.no_marker_processes("after SIGKILL to corral", grace=5.0)
    t.assert_next_run_ok()


def _cancel(t, sig):
    p = _start_tree(t, extra=["--json"])
    os.kill(p.pid, sig)
    run = t.finish(p, timeout=20)
    r = t.result(run)
    eq(run.code, 130, "exit status")
    eq(r.get("status"), "cancelled", "status")
    check_result_shape(r)
    left = processes(t.marker)
    kill_pids(pid for pid, _ in left)
    eq(left, [], "marker processes once corral returned")
    ge(r.get("cleanup", {}).get("killed", 0), 4, "cleanup.killed")
    t.assert_next_run_ok()


@test
def sigint_to_corral_cancels(t):
    _cancel(t, signal.SIGINT)


@test
def sigterm_to_corral_cancels(t):
    _cancel(t, signal.SIGTERM)


@test
def other_fatal_signals_to_corral_cancel(t):
    # Signals whose default ends a process: an earlier build died of them
    # with no result, no closing audit events, and its workspace left.
    for sig in (signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
                signal.SIGALRM, signal.SIGSTKFLT, signal.SIGTRAP,
                signal.SIGRTMIN, signal.SIGRTMAX):
        _cancel(t, sig)


@test
def sigint_streaming_cancels(t):
    p = _start_tree(t)
    os.kill(p.pid, signal.SIGINT)
    run = t.finish(p, timeout=20)
    eq(run.code, 130, "exit status")
    true(run.err.strip() != b"", "want a one-line reason on stderr")
    left = processes(t.marker)
    kill_pids(pid for pid, _ in left)
    eq(left, [], "marker processes once corral returned")
