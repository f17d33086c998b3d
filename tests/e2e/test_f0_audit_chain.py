"""The audit trail as a chain: sequence numbers, each line bound to the one
before by SHA-256, a final event whose hash the result carries, `corral
audit verify` finding every kind of break, and a trail the program cannot
reach."""

import hashlib
import json
import os
import time

from harness import CFG, eq, true, contains, not_contains, test


def lines_of(path):
    with open(path, "rb") as f:
        raw = f.read()
    true(raw.endswith(b"\n"), "the trail ends with a newline")
    return raw[:-1].split(b"\n")


def sha(line):
    return hashlib.sha256(line).hexdigest()


def write_lines(path, lines):
    with open(path, "wb") as f:
        f.write(b"".join(l + b"\n" for l in lines))


def run_audited(t, path, task="chain-1", cmd=("echo", "hi"), extra=()):
    run = t.corral(["run", "--json", "--audit", path, "--id", task] +
                   list(extra) + ["--"] + list(cmd))
    return run, t.result(run)


def verify(t, path, *more):
    return t.corral(["audit", "verify", path] + list(more))


@test
def audit_chain_links_every_line(t):
    path = t.path("audit.jsonl")
    run, r = run_audited(t, path, cmd=("sh", "-c", "cat /etc/shadow; true"))
    eq(run.code, 0, "exit status (%s)" % run.summary())
    lines = lines_of(path)
    evs = [json.loads(l) for l in lines]
    eq([e["seq"] for e in evs], list(range(len(evs))), "sequence numbers")
    eq(evs[0]["prev"], "0" * 64, "the first event's prev")
    for i in range(1, len(evs)):
        eq(evs[i]["prev"], sha(lines[i - 1]),
           "line %d's prev is the hash of line %d" % (i + 1, i))
    eq(evs[-1]["event"], "cleanup", "the last event")
    eq(evs[-1].get("final"), True, "the last event closes the chain")
    true(all("final" not in e for e in evs[:-1]), "only the last is final")
    true("deny" in [e["event"] for e in evs], "a deny event is chained too")
    audit = r.get("audit")
    true(isinstance(audit, dict), "the result's audit object: %r" % audit)
    eq(audit.get("head"), sha(lines[-1]), "result audit.head")
    eq(audit.get("events"), len(lines), "result audit.events")
    v = verify(t, path)
    eq(v.code, 0, "verify (stderr %r)" % v.err)
    contains(v.out.decode(), "intact", "verify says")
    v = verify(t, path, "--head", audit["head"])
    eq(v.code, 0, "verify --head (stderr %r)" % v.err)


@test
def audit_result_without_trail_is_null(t):
    r = t.result(t.corral(["run", "--json", "--", "true"]))
    true("audit" in r and r["audit"] is None, "audit: null without --audit")


def _trail(t, n_runs=1):
    path = t.path("audit.jsonl")
    heads = []
    for i in range(n_runs):
        run, r = run_audited(t, path, task="chain-%d" % i,
                             cmd=("sh", "-c", "cat /etc/shadow; exit 0"))
        eq(run.code, 0, "exit status (%s)" % run.summary())
        heads.append(r["audit"]["head"])
    return path, lines_of(path), heads


@test
def audit_verify_finds_an_edit(t):
    path, lines, head = _trail(t)
    # The deny line names the file; the program's author would like it gone.
    i = next(k for k, l in enumerate(lines) if b'"deny"' in l)
    edited = list(lines)
    edited[i] = lines[i].replace(b"/etc/shadow", b"/etc/hostx")
    true(edited[i] != lines[i], "test setup: the line changed")
    write_lines(path, edited)
    v = verify(t, path)
    eq(v.code, 1, "verify of an edited trail (stdout %r)" % v.out)
    contains(v.err.decode(), ":%d:" % (i + 2), "where it breaks")
    contains(v.err.decode(), "line %d" % (i + 1), "the line edited")


@test
def audit_verify_finds_a_removed_line(t):
    path, lines, head = _trail(t)
    i = next(k for k, l in enumerate(lines) if b'"deny"' in l)
    write_lines(path, lines[:i] + lines[i + 1:])
    v = verify(t, path)
    eq(v.code, 1, "verify of a trail missing a line")
    contains(v.err.decode(), "missing", "what is wrong")


@test
def audit_verify_finds_reordering(t):
    path, lines, head = _trail(t)
    swapped = list(lines)
    swapped[1], swapped[2] = lines[2], lines[1]
    write_lines(path, swapped)
    v = verify(t, path)
    eq(v.code, 1, "verify of a reordered trail")
    contains(v.err.decode(), ":2:", "where it breaks")


@test
def audit_verify_finds_a_cut_tail(t):
    path, lines, heads = _trail(t)
    # Without the final event: an open chain, exit 2.
    write_lines(path, lines[:-1])
    v = verify(t, path)
    eq(v.code, 2, "verify without the final event (stderr %r)" % v.err)
    contains(v.err.decode(), "final", "why")
    v = verify(t, path, "--head", heads[0])
    eq(v.code, 1, "verify --head without the final event")
    # The final event rewritten: the chain closes, but not at the head.
    ev = json.loads(lines[-1])
    ev["workspace_removed"] = False
    write_lines(path, lines[:-1] + [json.dumps(ev, separators=(",", ":"))
                                    .encode()])
    v = verify(t, path)
    eq(v.code, 0, "a rewritten last line alone is not seen without the head")
    v = verify(t, path, "--head", heads[0])
    eq(v.code, 1, "verify --head of a rewritten last line")
    contains(v.err.decode(), "head", "why")
    # A line cut in the middle.
    with open(path, "wb") as f:
        f.write(b"".join(l + b"\n" for l in lines)[:-20])
    v = verify(t, path)
    eq(v.code, 1, "verify of a line cut in the middle")


@test
def audit_verify_whole_run_removed_needs_the_head(t):
    """Two runs share a trail; the second run's lines all removed leave a
    trail that is whole by itself: only its head shows it."""
    path, lines, heads = _trail(t, 2)
    v = verify(t, path, "--head", heads[1])
    eq(v.code, 0, "both runs intact (stderr %r)" % v.err)
    contains(v.out.decode(), "2 chain", "chains counted")
    first = [l for l in lines if json.loads(l)["task_id"] == "chain-0"]
    write_lines(path, first)
    eq(verify(t, path).code, 0, "the first run alone is a whole chain")
    v = verify(t, path, "--head", heads[1])
    eq(v.code, 1, "the second run's head is not in the trail")


@test
def audit_verify_an_id_run_again_after_a_killed_run(t):
    """A run killed with SIGKILL leaves its chain without a final event,
    and its id is free again: a retry under the same id begins a new
    chain at seq 0. verify called that "an event repeated" (exit 1,
    broken) and checked nothing after it (found by a probing session);
    it is exit 2, the first chain unfinished, and the chains after it are
    still checked."""
    path, lines, heads = _trail(t)
    write_lines(path, lines[:-1])      # what a killed run leaves
    run, r = run_audited(t, path, task="chain-0")
    eq(run.code, 0, "the retry (%s)" % run.summary())
    run, r = run_audited(t, path, task="other",
                         cmd=("sh", "-c", "cat /etc/shadow; exit 0"))
    eq(run.code, 0, "a third run (%s)" % run.summary())
    v = verify(t, path)
    eq(v.code, 2, "verify (stderr %r)" % v.err)
    contains(v.err.decode(), "chain-0", "the unfinished chain named")
    v = verify(t, path, "--head", r["audit"]["head"])
    eq(v.code, 2, "verify --head of the last run (stderr %r)" % v.err)
    # An edit in the last run's chain is still found.
    now = lines_of(path)
    i = max(k for k, l in enumerate(now)
            if json.loads(l)["task_id"] == "other" and
            json.loads(l)["seq"] == 1)
    ev = json.loads(now[i])
    ev["ts"] = "edited"
    write_lines(path, now[:i] + [json.dumps(ev).encode()] + now[i + 1:])
    eq(verify(t, path).code, 1, "an edit after the retry")
    # A first event inserted inside a chain does not hide the rest.
    write_lines(path, lines[:3] + lines[:1] + lines[3:])
    eq(verify(t, path).code, 1, "a first event inserted inside its chain")


@test
def audit_verify_same_id_twice_and_foreign_lines(t):
    path = t.path("audit.jsonl")
    for _ in range(2):
        run_audited(t, path, task="same-id")
    eq(verify(t, path).code, 0, "one id run twice: two chains, intact")
    lines = lines_of(path)
    write_lines(path, lines + [b'{"ts":"x","task_id":"same-id","event":"deny"}'])
    eq(verify(t, path).code, 1, "a line without seq and prev")
    write_lines(path, lines + [b"not json"])
    eq(verify(t, path).code, 1, "a line that is not JSON")
    # An event appended after a chain was closed.
    ev = json.loads(lines[-1])
    ev["seq"] += 1
    ev["prev"] = sha(lines[-1])
    write_lines(path, lines + [json.dumps(ev).encode()])
    v = verify(t, path)
    eq(v.code, 1, "an event after the final one")
    eq(verify(t, t.path("missing.jsonl")).code, 125, "no such file")
    eq(verify(t, path, "--head", "xyz").code, 125, "a malformed head")
    eq(t.corral(["audit", "check", path]).code, 125, "unknown subcommand")


@test
def audit_refused_inside_a_writable_root(t):
    ws = t.path("ws")
    os.makedirs(os.path.join(ws, "sub"))
    os.symlink(ws, t.path("link"))
    rw = t.path("rw")
    os.mkdir(rw)
    cases = [
        (["-w", ws], os.path.join(ws, "a.jsonl"), "the workspace"),
        (["-w", ws], os.path.join(t.path("link"), "a.jsonl"), "a link to it"),
        (["-w", t.path("link")], os.path.join(ws, "sub", "..", "a.jsonl"),
         "'..' inside it, given through a link"),
        (["--rw", rw], os.path.join(rw, "a.jsonl"), "a --rw root"),
    ]
    for opts, audit, what in cases:
        run = t.corral(["run"] + opts + ["--audit", audit, "--", "true"])
        eq(run.code, 125, "audit in %s: exit status (%s)" % (what,
                                                             run.summary()))
        contains(run.err.decode(), "may write", "audit in %s: why" % what)
        true(not os.path.exists(audit), "audit in %s: not created" % what)
    # Outside every writable root: fine.
    ok = t.corral(["run", "-w", ws, "--audit", t.path("a.jsonl"), "--",
                   "true"])
    eq(ok.code, 0, "audit beside the workspace (%s)" % ok.summary())


@test
def audit_refuses_links_and_special_files(t):
    keep = t.write("keep.txt", "untouched\n")
    os.symlink(keep, t.path("sym.jsonl"))
    run = t.corral(["run", "--audit", t.path("sym.jsonl"), "--", "true"])
    eq(run.code, 125, "a symlink at the audit name")
    with open(keep) as f:
        eq(f.read(), "untouched\n", "the link's target")
    ws = t.path("ws")
    os.mkdir(ws)
    hard = t.write("hard.jsonl", "")
    os.link(hard, os.path.join(ws, "hard2.jsonl"))
    run = t.corral(["run", "-w", ws, "--audit", hard, "--", "true"])
    eq(run.code, 125, "an audit file with a second name in the workspace")
    contains(run.err.decode(), "hard link", "why")
    eq(os.path.getsize(hard), 0, "nothing written through the hard link")
    os.mkfifo(t.path("fifo"))
    run = t.corral(["run", "--audit", t.path("fifo"), "--", "true"],
                   timeout=20)
    eq(run.code, 125, "a FIFO at the audit name")


@test
def audit_program_cannot_rewrite_its_trail(t):
    """The program knows where the trail is and tries to rewrite, append
    to and remove it; the trail still verifies against the run's head."""
    path = t.path("audit.jsonl")
    # The forged text is made inside, so it is not in the command line.
    run, r = run_audited(t, path, cmd=(
        "sh", "-c", "f=$(printf 'f%%sd' orge); echo $f > %s; echo $f >> %s;"
        " rm -f %s; ln %s x 2>/dev/null; true" % (path, path, path, path)))
    eq(run.code, 0, "exit status (%s)" % run.summary())
    raw = open(path, "rb").read()
    not_contains(raw.decode(), "forged", "the trail")
    true(len(r.get("denials", [])) >= 3, "the attempts were denied: %r" %
         r.get("denials"))
    v = verify(t, path, "--head", r["audit"]["head"])
    eq(v.code, 0, "verify against the result's head (stderr %r)" % v.err)


def _alert_policy(t, alerts):
    src = os.path.join(CFG.policy_dir or "", "default.json")
    with open(src) as f:
        doc = json.load(f)
    doc["classes"]["default"]["alerts"] = alerts
    return t.write("policy.json", json.dumps(doc))


@test
def audit_alert_on_repeated_secret_path(t):
    path = t.path("audit.jsonl")
    run, r = run_audited(t, path, cmd=(
        "sh", "-c", "for i in 1 2 3 4 5 6; do cat /root/.ssh/id_rsa"
        " /etc/shadow 2>/dev/null; done; true"))
    eq(run.code, 0, "exit status (%s)" % run.summary())
    evs = [json.loads(l) for l in lines_of(path)]
    alerts = [e for e in evs if e["event"] == "alert"]
    eq(len(alerts), 1, "one alert, however many denials: %r" % alerts)
    eq(alerts[0].get("kind"), "secret_path", "its kind")
    true(alerts[0].get("target") in ("/root/.ssh/id_rsa", "/etc/shadow"),
         "its target: %r" % alerts[0])
    eq(alerts[0].get("threshold"), 3, "the default threshold")
    eq(r.get("alerts"), ["secret_path"], "result alerts")
    eq(verify(t, path).code, 0, "the trail with an alert verifies")


@test
def audit_no_alert_for_ordinary_work(t):
    path = t.path("audit.jsonl")
    run, r = run_audited(t, path, cmd=(
        "sh", "-c", "cat /etc/shadow 2>/dev/null; ls /usr/bin >/dev/null; "
        "test -e /nonexistent/a; test -e /nonexistent/b; true"))
    eq(r.get("alerts"), [], "result alerts")
    evs = [json.loads(l) for l in lines_of(path)]
    eq([e for e in evs if e["event"] == "alert"], [], "alert events")


@test
def audit_alert_on_metadata_burst(t):
    # A window of an hour: the count decides, not the machine's speed.
    pol = _alert_policy(t, {"probe_denials": 40, "probe_window": "1h",
                            "secret_denials": 0})
    path = t.path("audit.jsonl")
    run, r = run_audited(t, path, extra=["--policy", pol], cmd=(
        "sh", "-c", "i=0; while [ $i -lt 60 ]; do test -e /root/p$i; "
        "i=$((i+1)); done; cat /etc/shadow /etc/shadow /etc/shadow "
        "/etc/shadow 2>/dev/null; true"))
    eq(run.code, 0, "exit status (%s)" % run.summary())
    evs = [json.loads(l) for l in lines_of(path)]
    alerts = [e for e in evs if e["event"] == "alert"]
    eq([a.get("kind") for a in alerts], ["metadata_burst"],
       "one burst alert (secret alerts off)")
    eq(alerts[0].get("threshold"), 40, "threshold from the policy")
    eq(alerts[0].get("window_ms"), 3600000, "window from the policy")
    eq(r.get("alerts"), ["metadata_burst"], "result alerts")
    # Below the threshold: none.
    pol = _alert_policy(t, {"probe_denials": 100, "probe_window": "1h"})
    run, r = run_audited(t, t.path("b.jsonl"), extra=["--policy", pol], cmd=(
        "sh", "-c", "i=0; while [ $i -lt 60 ]; do test -e /root/p$i; "
        "i=$((i+1)); done; true"))
    eq(r.get("alerts"), [], "60 probes under a threshold of 100")


@test
def audit_alert_policy_keys_checked(t):
    for alerts, what in (({"probe_denials": -1}, "a negative count"),
                         ({"probe_window": "soon"}, "a bad time"),
                         ({"probe_window": 0}, "no window for a burst"),
                         ({"bogus": 1}, "an unknown key")):
        pol = _alert_policy(t, alerts)
        chk = t.corral(["policy", "check", pol])
        eq(chk.code, 1, "%s: policy check (stdout %r)" % (what, chk.out))
        contains(chk.err.decode(), "alerts", "%s: the message names the key"
                 % what)
    pol = _alert_policy(t, {"secret_denials": 5})
    chk = t.corral(["policy", "check", pol])
    eq(chk.code, 0, "a valid alerts object (stderr %r)" % chk.err)
    doc = json.loads(chk.out.decode())
    eq(doc["classes"]["default"]["alerts"],
       {"secret_denials": 5, "probe_denials": 64, "probe_window": "1s"},
       "normalised alerts")


@test
def records_in_a_read_root_are_absent_to_the_program(t):
    """An audit trail or a result file the caller keeps in a directory it
    also gives as a read root: the program read the trail, every run's
    commands, denials and destinations in it (found by a probing
    session). corral's own records are absent to the program now."""
    d = t.path("records")
    os.mkdir(d, 0o700)
    audit = os.path.join(d, "a.jsonl")
    res = os.path.join(d, "r.json")
    with open(os.path.join(d, "plain.txt"), "w") as f:
        f.write("plain\n")
    for _ in range(2):      # the second run finds the first's records
        run = t.corral(["run", "--json", "--ro", d, "--audit", audit,
                        "--result", res, "--", "sh", "-c",
                        "cat %s %s 2>&1; ls %s" % (audit, res, d)])
        r = t.result(run)
        eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
        not_contains(r.get("stdout", ""), "task_id", "the records' contents")
        eq(r["stdout"].splitlines()[-1], "plain.txt", "the listing")
    eq(t.corral(["audit", "verify", audit]).code, 0, "the trail verifies")
    t.assert_next_run_ok()


@test
def audit_one_live_run_per_task_id_in_a_trail(t):
    """A request may name its task id; a second live run of one id in a
    shared trail interleaved its chain with the first's, and verify found
    the trail broken from there on, for every later run in it (found by a
    probing session). The id is claimed while the run lives: a second run
    of it in that trail is refused (exit 125, nothing written), other ids
    share the trail as before, and once the first ends the id is free."""
    path = t.path("shared.jsonl")
    tid = "live-" + t.marker
    p = t.spawn(["run", "--json", "--id", tid, "--audit", path, "--",
                 "sleep", "3"])
    try:
        ok = False
        for _ in range(100):
            if os.path.exists(path) and os.path.getsize(path) > 0:
                ok = True
                break
            time.sleep(0.05)
        true(ok, "the first run started its trail")
        run = t.corral(["run", "--json", "--id", tid, "--audit", path,
                        "--", "true"])
        eq(run.code, 125, "a second live run of the id (stderr %r)" %
           run.err[-300:])
        contains(run.err.decode(), "already writes task id", "message")
        run = t.corral(["run", "--json", "--id", tid + "-other", "--audit",
                        path, "--", "true"])
        eq(run.code, 0, "another id shares the trail")
    finally:
        first = t.finish(p, timeout=30)
    eq(first.code, 0, "the first run ended on its own")
    v = verify(t, path)
    eq(v.code, 0, "the trail verifies (stderr %r)" % v.err)
    run = t.corral(["run", "--json", "--id", tid, "--audit", path, "--",
                    "true"])
    eq(run.code, 0, "the id is free once its run ended")
    eq(verify(t, path).code, 0, "and the trail still verifies")
