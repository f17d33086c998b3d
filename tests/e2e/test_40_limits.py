"""Budgets: wall time and output."""

from harness import eq, contains, true, lt, ge, test, check_result_shape


@test
def wall_limit(t):
    run = t.corral(["run", "--json", "--limit", "wall=1s", "--env",
                    "CRMARK=" + t.marker, "--", "sleep", "1000"], timeout=30)
    r = t.result(run)
    lt(run.elapsed, 3.0, "seconds until corral returned")
    eq(run.code, 124, "exit status")
    eq(r.get("status"), "limit_exceeded", "status")
    eq(r.get("limit"), "wall", "limit")
    check_result_shape(r)
    ge(r.get("cleanup", {}).get("killed", 0), 1, "cleanup.killed")
    eq(r.get("cleanup", {}).get("leftover_processes"), 0,
       "cleanup.leftover_processes")
    ge(r.get("usage", {}).get("wall_ms", 0), 900, "usage.wall_ms")
    t.no_marker_processes("after the wall limit", grace=0.5)
    t.assert_next_run_ok()


@test
def wall_limit_streaming_reason(t):
    run = t.corral(["run", "--limit", "wall=1s", "--", "sleep", "1000"],
                   timeout=30)
    lt(run.elapsed, 3.0, "seconds until corral returned")
    eq(run.code, 124, "exit status")
    eq(run.out, b"", "stdout")
    err = run.err.decode("utf-8", "replace")
    contains(err, "wall", "the one-line reason on stderr")
    eq(err.strip().count("\n"), 0, "reason lines on stderr: %r" % err)
    t.assert_next_run_ok()


@test
def output_bound_yes(t):
    run = t.corral(["run", "--json", "--limit", "output=64KiB", "--",
                    "yes"], timeout=30)
    r = t.result(run)
    lt(run.elapsed, 10.0, "seconds until corral returned")
    out = r.get("stdout", "")
    eq(len(out), 65536, "captured stdout length")
    eq(out, "y\n" * 32768, "captured stdout")
    eq(r.get("stdout_truncated"), True, "stdout_truncated")
    ge(r.get("usage", {}).get("output_bytes", 0), 65536, "usage.output_bytes")
    t.assert_next_run_ok()


@test
def output_bound_overshoot_finishes(t):
    run = t.corral(["run", "--json", "--limit", "output=64KiB"] +
                   t.prog_roots() + ["--", t.prog("spew"), "102400"],
                   timeout=30)
    r = t.result(run)
    eq(run.code, 0, "exit status")
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    eq(r.get("exit_code"), 0, "exit_code")
    eq(len(r.get("stdout", "")), 65536, "captured stdout length")
    eq(r.get("stdout_truncated"), True, "stdout_truncated")
    eq(r.get("stderr_truncated"), False, "stderr_truncated")
    eq(r.get("usage", {}).get("output_bytes"), 102400, "usage.output_bytes")
    t.assert_next_run_ok()


@test
def output_under_bound_not_truncated(t):
    run = t.corral(["run", "--json", "--limit", "output=64KiB"] +
                   t.prog_roots() + ["--", t.prog("spew"), "65000"],
                   timeout=30)
    r = t.result(run)
    eq(run.code, 0, "exit status")
    eq(len(r.get("stdout", "")), 65000, "captured stdout length")
    eq(r.get("stdout_truncated"), False, "stdout_truncated")
    eq(r.get("usage", {}).get("output_bytes"), 65000, "usage.output_bytes")


@test
def output_bound_streaming(t):
    run = t.corral(["run", "--limit", "output=64KiB"] + t.prog_roots() +
                   ["--", t.prog("spew"), "102400"], timeout=30)
    eq(run.code, 0, "exit status (stderr %r)" % run.err[-300:])
    eq(len(run.out), 65536, "streamed stdout length")
    t.assert_next_run_ok()


@test
def output_not_utf8_escaped(t):
    run = t.corral(["run", "--json", "--", "printf", "\\377\\376A"])
    eq(run.code, 0, "exit status")
    try:
        run.out.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError("result is not valid UTF-8: %s" % e)
    r = t.result(run)
    s = r.get("stdout", "")
    true(s.endswith("A"), "stdout %r: want it to end with A" % s)
    true(len(s) > 1, "stdout %r: the invalid bytes were dropped" % s)
    low = s.lower()
    true("xff" in low or "\ufffd" in s or "\udcff" in s,
         "stdout %r: want an escape for byte 0xff" % s)
