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
