"""The result object, exit statuses, streaming, and the small commands."""

import json

from harness import (POLICY_VERSION, eq, ne, contains, true, ge, test,
                     check_result_shape)


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
def command_not_found(t):
    # A missing program is not corral's success.
    run = t.corral(["run", "--json", "--", "no-such-program-" + t.marker])
    r = t.result(run)
    ne(run.code, 0, "exit status")
    ne(r.get("status"), "ok", "status")
    t.assert_next_run_ok()
