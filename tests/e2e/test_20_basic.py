"""The result object, exit statuses, streaming, and the small commands."""

import fcntl
import json
import os
import signal
import subprocess
import time

import harness
from harness import (CFG, POLICY_VERSION, eq, ne, contains, true, ge, lt,
                     test, check_result_shape, wait_for)


@test
def json_result_echo(t):
    run = t.corral(["run", "--json", "--", "echo", "hi"])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    check_result_shape(r)
    eq(r["policy_version"], POLICY_VERSION, "policy_version")
    eq(r["class"], "default", "class")
    eq(r["status"], "ok", "status")
    eq(r.get("limit", "absent"), None, "limit")
    eq(r.get("exit_code"), 0, "exit_code")
    eq(r.get("signal", "absent"), None, "signal")
    eq(r["stdout"], "hi\n", "stdout")
    eq(r["stderr"], "", "stderr")
    eq(r["stdout_truncated"], False, "stdout_truncated")
    eq(r["stderr_truncated"], False, "stderr_truncated")
    eq(r["denials"], [], "denials")
    eq(r["denials_dropped"], 0, "denials_dropped")
    eq(r["artifacts"], [], "artifacts")
    eq(r["cleanup"]["leftover_processes"], 0, "cleanup.leftover_processes")
    eq(r["cleanup"]["workspace_removed"], True, "cleanup.workspace_removed")
    ge(r["usage"]["processes"], 1, "usage.processes")
    eq(run.err, b"", "corral's stderr")
    # Nothing but the object (and whitespace) on stdout.
    eq(json.loads(run.out.decode()), r, "stdout as JSON")


@test
def json_stderr_captured(t):
    run = t.corral(["run", "--json", "--", "sh", "-c",
                    "echo out; echo err >&2"])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    eq(r.get("stdout"), "out\n", "stdout")
    eq(r.get("stderr"), "err\n", "stderr")


@test
def json_task_id_given(t):
    run = t.corral(["run", "--json", "--id", "abc-1", "--", "true"])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    eq(r.get("task_id"), "abc-1", "task_id")


@test
def json_task_ids_differ(t):
    ids = []
    for _ in range(2):
        r = t.result(t.corral(["run", "--json", "--", "true"]))
        ids.append(r.get("task_id"))
    ne(ids[0], ids[1], "two runs' default task ids")


@test
def result_file_matches_stdout(t):
    path = t.path("result.json")
    run = t.corral(["run", "--json", "--result", path, "--", "echo", "hi"])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    with open(path) as f:
        eq(json.load(f), r, "--result FILE contents")


@test
def result_file_without_json(t):
    path = t.path("result.json")
    run = t.corral(["run", "--result", path, "--", "echo", "hi"])
    eq(run.code, 0, "exit status")
    eq(run.out, b"hi\n", "streamed stdout")
    with open(path) as f:
        r = json.load(f)
    eq(r.get("status"), "ok", "status in --result FILE")
    eq(r.get("exit_code"), 0, "exit_code in --result FILE")


@test
def exit_true(t):
    run = t.corral(["run", "--json", "--", "true"])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    eq(r.get("status"), "ok", "status")
    eq(r.get("exit_code"), 0, "exit_code")


@test
def exit_false(t):
    run = t.corral(["run", "--json", "--", "false"])
    r = t.result(run)
    eq(run.code, 1, "exit status")
    eq(r.get("status"), "program_error", "status")
    eq(r.get("exit_code"), 1, "exit_code")
    eq(r.get("signal"), None, "signal")
    check_result_shape(r)
    t.assert_next_run_ok()


@test
def exit_seven(t):
    run = t.corral(["run", "--json", "--", "sh", "-c", "exit 7"])
    r = t.result(run)
    eq(run.code, 7, "exit status")
    eq(r.get("status"), "program_error", "status")
    eq(r.get("exit_code"), 7, "exit_code")
    t.assert_next_run_ok()


@test
def exit_seven_streaming(t):
    run = t.corral(["run", "--", "sh", "-c", "exit 7"])
    eq(run.code, 7, "exit status")
    eq(run.out, b"", "stdout")


@test
def exit_by_signal(t):
    run = t.corral(["run", "--json", "--", "sh", "-c", "kill -SEGV $$"])
    r = t.result(run)
    eq(run.code, 128 + 11, "exit status")
    eq(r.get("status"), "program_error", "status")
    eq(r.get("signal"), "SIGSEGV", "signal")
    eq(r.get("exit_code", "absent"), None, "exit_code")
    check_result_shape(r)
    t.assert_next_run_ok()


@test
def streaming_passes_output_only(t):
    run = t.corral(["run", "--", "sh", "-c",
                    "echo out; echo err >&2; echo out2"])
    eq(run.code, 0, "exit status")
    eq(run.out, b"out\nout2\n", "stdout")
    eq(run.err, b"err\n", "stderr")


@test
def differential_native_vs_corral(t):
    """The same commands natively and under corral print the same."""
    cmds = [
        ["echo", "hi", "there"],
        ["printf", "a\\nb\\tc"],
        ["sh", "-c", "echo $((6*7)); echo x | tr x y"],
        ["sh", "-c", "seq 1 2000 | sort -rn | head -3; exit 3"],
        ["sh", "-c", "printf '%s\\n' one two three | wc -l"],
        ["ls", "/usr/bin/env"],
        ["sh", "-c", "for i in 1 2 3; do (echo sub $i) & wait; done"],
    ]
    for cmd in cmds:
        nat = t.native(cmd)
        run = t.corral(["run", "--"] + cmd)
        eq(run.code, nat.code, "%s: exit status (stderr %r)" % (cmd, run.err))
        eq(run.out, nat.out, "%s: stdout" % cmd)
        eq(run.err, nat.err, "%s: stderr" % cmd)


@test
def version_prints(t):
    run = t.corral(["version"])
    eq(run.code, 0, "exit status")
    true(any(c.isdigit() for c in run.out.decode("utf-8", "replace")),
         "corral version: want a version number, got %r" % run.out)


@test
def probe_ok(t):
    run = t.corral(["probe"])
    eq(run.code, 0, "corral probe: exit status (stdout %r stderr %r)" %
       (run.out[-500:], run.err[-500:]))


@test
def probe_json(t):
    run = t.corral(["probe", "--json"])
    eq(run.code, 0, "exit status")
    try:
        doc = json.loads(run.out.decode())
    except ValueError as e:
        raise AssertionError("probe --json is not JSON: %s: %r" %
                             (e, run.out[:300]))
    true(isinstance(doc, dict), "probe --json: want an object")
    contains(doc, "namespaces_used", "probe --json keys")
    eq(doc["namespaces_used"], False, "namespaces_used")


@test
def usage_error_exit(t):
    # Not a documented option: a usage error.
    run = t.corral(["run", "--no-such-option", "--", "true"])
    eq(run.code, 125, "exit status")
    ne(run.err.strip(), b"", "stderr")


@test
def usage_errors_of_hostile_values(t):
    """Values a careless caller or an agent's request could give, refused
    before anything runs (found by a probing session): an empty -w (an
    unset "$WS" made corral's own working directory the writable
    workspace), --result naming the --audit trail (the result replaced the
    whole trail), and a CORRAL_DNS_UPSTREAM port with trailing garbage, a
    space or a sign (taken as port 53)."""
    run = t.corral(["run", "-w", "", "--", "true"])
    eq(run.code, 125, "-w '': exit status")
    contains(run.err.decode(), "must not be empty", "-w '': message")
    trail = t.write("trail.jsonl", "")
    run = t.corral(["run", "--audit", trail, "--result", trail, "--",
                    "true"])
    eq(run.code, 125, "--result = --audit: exit status")
    contains(run.err.decode(), "same file", "--result = --audit: message")
    eq(open(trail).read(), "", "the trail is untouched")
    # The same file by two spellings, before it exists.
    fresh = t.path("fresh.jsonl")
    run = t.corral(["run", "--audit", fresh, "--result",
                    os.path.join(os.path.dirname(fresh), ".",
                                 os.path.basename(fresh)), "--", "true"])
    eq(run.code, 125, "--result = --audit by another name: exit status")
    true(not os.path.exists(fresh), "nothing written")
    for bad in ("127.0.0.1:53abc", "127.0.0.1: 53", "127.0.0.1:+53"):
        run = t.corral(["run", "--json", "--", "true"],
                       env={"CORRAL_DNS_UPSTREAM": bad})
        r = t.result(run)
        eq(r.get("status"), "platform_failure",
           "CORRAL_DNS_UPSTREAM=%r (message %r)" % (bad, r.get("message")))
    t.assert_next_run_ok()


@test
def command_not_found(t):
    # A missing program is not corral's success.
    run = t.corral(["run", "--json", "--", "no-such-program-" + t.marker])
    r = t.result(run)
    ne(run.code, 0, "exit status")
    ne(r.get("status"), "ok", "status")
    t.assert_next_run_ok()


@test
def streaming_reader_that_stops_does_not_stall_limits(t):
    """Echoed output is written by a thread: when whoever reads corral's
    stdout stops reading, the run's limits still fire on time (the wall
    limit kills the tree), and nothing is lost once the reader resumes."""
    ws = t.path("ws")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    result = t.path("result.json")
    # 4 MiB of output, far past any pipe's buffer, then a pid file and a
    # long sleep the wall limit must cut.
    p = t.spawn(["run", "-w", ws, "--result", result,
                 "--limit", "wall=6s", "--limit", "output=8MiB", "--",
                 "sh", "-c", "head -c 4194304 /dev/zero; echo $$ > pid; "
                 "exec sleep 100"])
    pidfile = os.path.join(ws, "pid")
    # Written, not only made: `echo $$ > pid` creates the file first (the
    # test once read it empty in between, under load).
    true(wait_for(lambda: os.path.exists(pidfile) and
                  os.path.getsize(pidfile) > 0, 20),
         "the program got past its output while corral's stdout was unread")
    pid = int(open(pidfile).read().strip() or 0)
    true(pid > 0, "pid written")
    # The wall limit is 6 s (room for a slow sanitizer build on a loaded
    # machine to write 4 MiB first); the stdout reader still reads nothing.
    true(wait_for(lambda: not os.path.exists("/proc/%d" % pid), 20),
         "the tree was killed at the wall limit although corral's stdout "
         "was not being read")
    # The result is written before the echo is waited for.
    true(wait_for(lambda: os.path.exists(result) and os.path.getsize(result) > 0, 10),
         "the result file was written while corral's stdout was unread")
    run = t.finish(p, timeout=60)
    eq(run.code, 124, "exit status (%s)" % run.summary())
    eq(len(run.out), 4194304, "stdout bytes, all delivered once read")
    r = json.load(open(result))
    eq(r.get("status"), "limit_exceeded", "status")
    eq(r.get("limit"), "wall", "limit")
    t.assert_next_run_ok()


@test
def streaming_alternating_flood_while_reader_stalls(t):
    """A program alternating its two streams byte by byte while nobody
    reads corral's stdout: every byte still arrives, in per-stream order,
    once the reader reads (the echo queue coalesces instead of growing)."""
    ws = t.path("ws")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    prog = ("import os\n"
            "for i in range(60000):\n"
            "    os.write(1, b'%d\\n' % i); os.write(2, b'e')\n"
            "open('done', 'w').close()\n")
    p = t.spawn(["run", "-w", ws, "--limit", "output=8MiB", "--",
                 "python3", "-c", prog])
    true(wait_for(lambda: os.path.exists(os.path.join(ws, "done")), 60),
         "the program finished while corral's stdout was unread")
    run = t.finish(p, timeout=60)
    eq(run.code, 0, "exit status (%s)" % run.summary())
    want = b"".join(b"%d\n" % i for i in range(60000))
    eq(run.out == want, True, "stdout complete and in order (%d bytes)" % len(run.out))
    eq(run.err, b"e" * 60000, "stderr complete")


def _corral_argv(t, args):
    return [t.prog("nons"), CFG.corral] + harness.landlock_args(args)


@test
def streaming_reader_gone_ends_the_writer_as_natively(t):
    """`corral run -- prog | head -1`: the echo met EPIPE and went on
    capturing for nobody; a program writing a line every 0.1 s ran to the
    wall limit (found by a probing session). Natively it dies of SIGPIPE
    at its next write; so it does now (its pipe is closed at its next
    write after the echo's reader went away)."""
    ws = t.path("ws")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    result = t.path("r.json")
    rd, wr = os.pipe()
    p = subprocess.Popen(_corral_argv(t, [
        "run", "-w", ws, "--result", result, "--limit", "wall=30s", "--",
        "sh", "-c", "i=0; while :; do echo line$i; i=$((i+1)); sleep 0.1; "
        "done"]), stdout=wr, stderr=subprocess.PIPE)
    os.close(wr)
    with os.fdopen(rd, "rb") as f:
        first = f.readline()
    t0 = time.monotonic()       # the reader is gone
    try:
        p.wait(timeout=25)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    took = time.monotonic() - t0
    eq(first, b"line0\n", "the first line")
    lt(took, 10, "seconds from the reader's end to corral's")
    r = json.load(open(result))
    eq((r.get("status"), r.get("signal")), ("program_error", "SIGPIPE"),
       "the program's end (message %r)" % r.get("message"))
    t.assert_next_run_ok()


@test
def streaming_to_a_non_blocking_stdout_loses_nothing(t):
    """corral's stdout an O_NONBLOCK pipe (a Node.js parent leaves its
    pipes so) read slowly: the echo took the first EAGAIN for a reader
    gone and stopped, and a --json record was cut in the middle, corral
    exiting 0 (found by a probing session). It waits for room now."""
    ws = t.path("ws")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    for json_mode in (False, True):
        rd, wr = os.pipe()
        fl = fcntl.fcntl(wr, fcntl.F_GETFL)
        fcntl.fcntl(wr, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        args = ["run", "-w", ws] + (["--json"] if json_mode else []) + \
            ["--", "sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x"]
        p = subprocess.Popen(_corral_argv(t, args), stdout=wr,
                             stderr=subprocess.PIPE)
        os.close(wr)
        got = b""
        with os.fdopen(rd, "rb", buffering=0) as f:
            time.sleep(1.0)     # the pipe full, corral's writes EAGAIN
            while True:
                chunk = f.read(4096)
                if not chunk:
                    break
                got += chunk
                time.sleep(0.001)
        err = p.stderr.read()
        p.wait(timeout=60)
        what = "--json" if json_mode else "echo"
        eq(p.returncode, 0, "%s: exit status (stderr %r)" % (what, err))
        if json_mode:
            r = json.loads(got.decode())
            eq(len(r.get("stdout") or ""), 300000, what + ": stdout kept")
        else:
            eq(got, b"x" * 300000, what + ": every byte echoed")


@test
def streaming_drain_ends_at_a_signal_to_corral(t):
    """The run over, corral writes what its echo still holds to a reader
    that does not read; SIGTERM then did nothing until the reader read
    (found by a probing session), and the same held for a --json record
    into a full stdout. A signal that would end a program writing there
    ends the wait now, said on stderr and in the exit status; and a
    cancelled run does not stream on for long to a slow reader."""
    ws = t.path("ws")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    for how in ("done", "cancelled", "json"):
        rd, wr = os.pipe()
        if how == "json":       # a pipe full before corral starts
            fl = fcntl.fcntl(wr, fcntl.F_GETFL)
            fcntl.fcntl(wr, fcntl.F_SETFL, fl | os.O_NONBLOCK)
            try:
                while True:
                    os.write(wr, b"x" * 4096)
            except BlockingIOError:
                pass
            fcntl.fcntl(wr, fcntl.F_SETFL, fl)
        prog = "head -c 400000 /dev/zero" + (
            "; sleep 100" if how == "cancelled" else "")
        p = subprocess.Popen(_corral_argv(t, [
            "run", "-w", ws, "--limit", "wall=60s"] +
            (["--json"] if how == "json" else []) + ["--", "sh", "-c", prog]),
            stdout=wr, stderr=subprocess.PIPE)
        os.close(wr)
        try:
            time.sleep(1.5)     # nobody reads: the echo is held
            t0 = time.monotonic()
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
            took = time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.close(rd)
        lt(took, 5, "%s: seconds from SIGTERM to corral's end" % how)
        # Said, and not the program's 0: the output (130, a cancel of its
        # delivery) or the record (125, corral's failure) was not written.
        eq(p.returncode, {"done": 130, "cancelled": 130, "json": 125}[how],
           "%s: exit status (stderr %r)" % (how, p.stderr.read()))
    t.assert_next_run_ok()
