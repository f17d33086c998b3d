"""The whole process tree ends with the run, whatever way the run ends."""

import os
import signal
import time

from harness import (CFG, eq, contains, true, lt, ge, test, processes, wait_for,
                     kill_pids, check_result_shape, proc_state)


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
    # The signals of faults too, sent by another process (systemd's
    # WatchdogSec= sends SIGABRT): they killed corral with no result
    # (found by a probing session). A sanitizer build keeps its fault
    # handlers (tracer/run.c), so only SIGABRT is asked of it.
    with open(CFG.corral, "rb") as f:
        image = f.read()
    sanitized = b"__asan_init" in image or b"__ubsan_handle" in image
    faults = (signal.SIGABRT,) + (() if sanitized else (
        signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE))
    for sig in (signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
                signal.SIGALRM, signal.SIGSTKFLT, signal.SIGTRAP,
                signal.SIGRTMIN, signal.SIGRTMAX) + faults:
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


# ---- job control and early cancels: the tree is never left unsupervised ----

_SPIN = r"""
import os, sys, time
def spin():
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        pass
pid = os.fork()
if pid == 0:
    os.setsid()          # out of corral's process group and terminal
    spin()
    os._exit(0)
spin()
os.waitpid(pid, 0)
"""


def _cpu_ticks(marker, exclude):
    """CPU clock ticks used so far by each process carrying marker."""
    out = {}
    for pid, _ in processes(marker, exclude=exclude):
        try:
            with open("/proc/%d/stat" % pid) as f:
                v = f.read().rsplit(")", 1)[1].split()
            out[pid] = int(v[11]) + int(v[12])
        except (OSError, IndexError, ValueError):
            pass
    return out


@test
def sigtstp_to_corral_stops_the_tree_with_it(t):
    # ^Z (or kill -TSTP) stops corral; a tree in a process group of its own
    # that makes no call corral answers went on running unmeasured (an
    # earlier build: 1 GB under memory=64MiB until `fg`). Now it waits,
    # stopped, until corral is continued.
    t.write("spin.py", _SPIN)
    p = t.spawn(["run", "--json", "--ro", t.tmp, "--limit", "wall=60s", "--",
                 "python3", t.path("spin.py"), "5", t.marker])
    try:
        true(wait_for(lambda: len(_cpu_ticks(t.marker, (p.pid,))) >= 2 or
                      p.poll() is not None, 20), "both processes spinning")
        os.kill(p.pid, signal.SIGTSTP)
        true(wait_for(lambda: proc_state(p.pid) == "T", 10), "corral stopped")
        time.sleep(0.3)
        before = _cpu_ticks(t.marker, (p.pid,))
        time.sleep(1.5)
        after = _cpu_ticks(t.marker, (p.pid,))
        eq(len(before), 2, "processes of the tree")
        eq(after, before, "CPU ticks of the tree while corral is stopped")
    finally:
        os.kill(p.pid, signal.SIGCONT)
    run = t.finish(p, timeout=30)
    r = t.result(run)
    eq(r.get("status"), "ok", "status once continued")
    eq(run.code, 0, "exit status")
    t.assert_next_run_ok()


@test
def sigttou_and_sigttin_do_not_stop_corral(t):
    # The program's output echoed to a terminal with `stty tostop` raised
    # SIGTTOU, which stopped corral while the tree ran on.
    t.write("spin.py", _SPIN)
    p = t.spawn(["run", "--json", "--ro", t.tmp, "--",
                 "python3", t.path("spin.py"), "2", t.marker])
    try:
        true(wait_for(lambda: len(_cpu_ticks(t.marker, (p.pid,))) >= 2 or
                      p.poll() is not None, 20), "both processes spinning")
        for sig in (signal.SIGTTOU, signal.SIGTTIN):
            os.kill(p.pid, sig)
            time.sleep(0.3)
            true(proc_state(p.pid) not in ("T", "t"),
                 "corral not stopped by %s (state %s)" % (sig.name, proc_state(p.pid)))
    finally:
        os.kill(p.pid, signal.SIGCONT)
    run = t.finish(p, timeout=30)
    eq(t.result(run).get("status"), "ok", "status")


def _stale_workspace(t, tmp, files):
    """A private workspace of `files` files left by a corral killed with -9:
    the next run's sweep removes it before that run is set up."""
    p = t.spawn(["run", "--", "sh", "-c",
                 "mkdir d && cd d && i=0; while [ $i -lt %d ]; do "
                 ": > f$i; i=$((i+1)); done; echo up; exec sleep 60" % files],
                env={"TMPDIR": tmp})
    line = p.stdout.readline()
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=20)
    eq(line, b"up\n", "the killed run made its files")


def _blocked(pid, sig):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigBlk:"):
                    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except OSError:
        pass
    return False


def _early_cancel(t, sig, ignored):
    tmp = t.path("tmp")
    os.mkdir(tmp, 0o700)
    _stale_workspace(t, tmp, 6000)
    pre = (lambda: signal.signal(sig, signal.SIG_IGN)) if ignored else None
    # Sent while the new run sweeps the old workspace, before its loop:
    # once corral has blocked it (its first act in `run`; before that the
    # signal's default would end any program, and a sanitizer build or a
    # loaded machine takes longer than a fixed pause to get there).
    p = t.spawn(["run", "--json", "--", "sleep", "30"], env={"TMPDIR": tmp},
                preexec=pre)
    true(wait_for(lambda: _blocked(p.pid, sig), 20, 0.001),
         "corral blocked %s" % sig.name)
    os.kill(p.pid, sig)
    run = t.finish(p, timeout=40)
    eq(run.code, 130, "exit status")
    r = t.result(run)
    eq(r.get("status"), "cancelled", "status")
    contains(r.get("message", ""), sig.name[3:], "message")
    lt(run.elapsed, 20, "seconds")
    eq([n for n in os.listdir(tmp) if n.startswith("corral-")], [],
       "workspaces left in TMPDIR")


@test
def sigterm_during_start_up_cancels_the_run(t):
    # An earlier build died of it (exit 143, no result, an empty audit,
    # the old workspace half removed).
    _early_cancel(t, signal.SIGTERM, False)


@test
def sigint_during_start_up_cancels_even_when_inherited_ignored(t):
    # A background job of a script inherits SIGINT ignored; a cancel that
    # came before the loop was dropped and the run reported ok.
    _early_cancel(t, signal.SIGINT, True)


@test
def sigtstp_to_an_orphaned_corral_is_discarded(t):
    """The kernel discards SIGTSTP sent to an orphaned process group (no
    one could continue it). corral started under setsid stopped itself and
    froze the tree for good on it: the wall limit never fired."""
    p = t.spawn(["run", "--json", "--limit", "wall=20s", "--", "sleep", "1.5"],
                start_new_session=True)
    try:
        time.sleep(0.5)
        os.kill(p.pid, signal.SIGTSTP)
        time.sleep(0.3)
        true(proc_state(p.pid) not in ("T", "t"),
             "corral not stopped (state %s)" % proc_state(p.pid))
    finally:
        os.kill(p.pid, signal.SIGCONT)
    run = t.finish(p, timeout=30)
    eq(t.result(run).get("status"), "ok", "status")
