"""The audit stream: events in order, appended, without contents."""

import json
import os

from harness import POLICY_VERSION, eq, true, contains, not_contains, test


def read_audit(path):
    with open(path, "rb") as f:
        raw = f.read()
    events = []
    for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except ValueError as e:
            raise AssertionError("audit line %d is not JSON: %s: %r" %
                                 (n, e, line[:200]))
        true(isinstance(ev, dict), "audit line %d: want an object" % n)
        for k in ("ts", "task_id", "event"):
            true(k in ev, "audit line %d lacks %r: %r" % (n, k, line[:300]))
        events.append(ev)
    return raw, events


@test
def audit_plain_run(t):
    path = t.path("audit.jsonl")
    run = t.corral(["run", "--json", "--audit", path, "--id", "aud-1",
                    "--", "echo", "audited-cmd"])
    eq(run.code, 0, "exit status")
    _, evs = read_audit(path)
    eq([e["event"] for e in evs], ["start", "assurance", "exit", "cleanup"],
       "events")
    for e in evs:
        eq(e["task_id"], "aud-1", "task_id of %s" % e["event"])
    start = json.dumps(evs[0])
    contains(start, POLICY_VERSION, "start event: policy version")
    contains(start, '"default"', "start event: class")
    contains(start, "audited-cmd", "start event: command")


@test
def audit_wall_limit(t):
    path = t.path("audit.jsonl")
    run = t.corral(["run", "--json", "--audit", path, "--limit", "wall=1s",
                    "--", "sleep", "1000"], timeout=30)
    eq(run.code, 124, "exit status")
    _, evs = read_audit(path)
    names = [e["event"] for e in evs]
    true("limit" in names, "no limit event in %r" % names)
    eq(names[0], "start", "first event")
    eq(names[-1], "cleanup", "last event")
    true(names.index("limit") < names.index("cleanup"),
         "limit after cleanup: %r" % names)
    contains(json.dumps(evs[names.index("limit")]), "wall", "limit event")
    t.assert_next_run_ok()


@test
def audit_exit_gives_the_programs_end_as_the_result_does(t):
    """The exit event's exit_code was corral's own exit status: a death by
    SIGSEGV and an exit(139) read alike (139), and a wall limit's 124
    looked like the program's; a run without a limit had no limit key
    (found by a probing session). It gives the program's end as the
    result does now (exit_code, signal, limit: null when they do not
    apply), corral's own status as corral_exit."""
    cases = (("kill -SEGV $$", [], 139),
             ("exit 139", [], 139),
             ("sleep 100", ["--limit", "wall=1s"], 124))
    for cmd, extra, code in cases:
        path = t.path("audit-%d.jsonl" % code + cmd[:4].strip())
        run = t.corral(["run", "--json", "--audit", path] + extra +
                       ["--", "sh", "-c", cmd], timeout=30)
        eq(run.code, code, "corral's exit (%s)" % cmd)
        r = t.result(run)
        _, evs = read_audit(path)
        ex = [e for e in evs if e["event"] == "exit"]
        eq(len(ex), 1, "exit events (%s)" % cmd)
        for k in ("status", "limit", "exit_code", "signal"):
            true(k in ex[0], "exit event lacks %r (%s)" % (k, cmd))
            eq(ex[0][k], r.get(k), "exit event %s against the result (%s)"
               % (k, cmd))
        eq(ex[0].get("corral_exit"), code, "corral_exit (%s)" % cmd)
    t.assert_next_run_ok()


@test
def audit_appends(t):
    path = t.path("audit.jsonl")
    t.corral(["run", "--audit", path, "--id", "first-1", "--", "true"])
    raw1, evs1 = read_audit(path)
    true(len(evs1) >= 3, "first run wrote %d events" % len(evs1))
    t.corral(["run", "--audit", path, "--id", "second-2", "--", "true"])
    raw2, evs2 = read_audit(path)
    true(raw2.startswith(raw1), "the second run rewrote the first's events")
    true(len(raw2) > len(raw1), "the file did not grow")
    eq({e["task_id"] for e in evs2}, {"first-1", "second-2"}, "task ids")


@test
def audit_has_no_contents(t):
    path = t.path("audit.jsonl")
    secret = "topsecret-" + t.marker
    # The printed text is computed inside, so it is not in the command line.
    printed = "out-42-" + t.marker
    run = t.corral(["run", "--json", "--audit", path,
                    "--env", "SECRETV=" + secret, "--", "sh", "-c",
                    'echo "out-$((6*7))-%s"; echo "$SECRETV" >&2' %
                    t.marker])
    r = t.result(run)
    eq(r.get("stdout"), printed + "\n", "stdout (test setup)")
    eq(r.get("stderr"), secret + "\n", "stderr (test setup)")
    raw, _ = read_audit(path)
    text = raw.decode("utf-8")
    not_contains(text, secret, "audit (environment value)")
    not_contains(text, printed, "audit (captured output)")
    true(os.path.getsize(path) > 0, "audit is empty")
