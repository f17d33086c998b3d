"""Credentials in the environment: --env and request env values that look
like tokens are warned about (never echoed), and refused when the class
says env_secrets "refuse"."""

import json
import os
import secrets
import string

from harness import CFG, eq, true, contains, not_contains, test


def _tokens(t):
    r = secrets.token_hex(20)
    return [
        ("ghp_" + r[:36], "GitHub token"),
        ("github_pat_" + r[:30], "GitHub token"),
        ("glpat-" + r[:20], "GitLab token"),
        ("xoxb-" + r[:24], "Slack token"),
        ("sk-" + r[:40], "API secret key"),
        ("AKIA" + r[:16].upper(), "AWS access key"),
        # No known prefix: random letters and digits, base62-like (a
        # token_urlsafe could draw five '-' or '_' of 40, past the 10 %
        # of separators the check allows: about one run in a hundred).
        ("".join(secrets.choice(string.ascii_letters + string.digits)
                 for _ in range(38)) + "k7", "high-entropy"),
    ]


@test
def env_secret_values_warned(t):
    for value, kind in _tokens(t):
        run = t.corral(["run", "--env", "HARMLESS=" + value, "--", "true"])
        eq(run.code, 0, "%s: the run goes on (%s)" % (kind, run.summary()))
        err = run.err.decode()
        contains(err, "--env HARMLESS has a value that looks like", kind)
        contains(err, kind, "the kind named")
        contains(err, "broker", "%s: points to the broker" % kind)
        not_contains(err, value, "%s: the value never printed" % kind)


@test
def env_ordinary_values_not_warned(t):
    for value in ("/usr/local/bin:/usr/bin:/bin", "hello world", "1.2.3",
                  "en_US.UTF-8", "3f786850e387550fdab836ed7e6dc881de23001b",
                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1",
                  "sk-learn", "ghp_short", "/home/user/projects/some-repo-2"):
        run = t.corral(["run", "--env", "PLAIN=" + value, "--", "true"])
        eq(run.code, 0, "exit")
        not_contains(run.err.decode(), "looks like",
                     "no warning for %r" % value)


@test
def env_secret_value_from_callers_env(t):
    tok = "glpat-" + secrets.token_hex(12)
    run = t.corral(["run", "--env", "CI_THING", "--", "true"],
                   env={"CI_THING": tok})
    contains(run.err.decode(), "--env CI_THING has a value that looks like a "
             "GitLab token", "warning for a value taken from corral's env")
    not_contains(run.err.decode(), tok, "value never printed")


@test
def env_secret_in_request_warned(t):
    tok = "ghp_" + secrets.token_hex(18)
    req = t.write("req.json", json.dumps({
        "command": ["sh", "-c", "echo ran"], "env": {"PLAIN": tok}}))
    run = t.corral(["run", "--json", "--request", req])
    eq(run.code, 0, "exit (%s)" % run.summary())
    contains(run.err.decode(), "request env PLAIN has a value that looks "
             "like a GitHub token", "warning")
    not_contains(run.err.decode(), tok, "value never printed")


def _refusing_policy(t):
    src = os.path.join(CFG.policy_dir or "", "default.json")
    with open(src) as f:
        doc = json.load(f)
    doc["classes"]["default"]["env_secrets"] = "refuse"
    return t.write("policy.json", json.dumps(doc))


@test
def env_secret_refused_by_policy(t):
    pol = _refusing_policy(t)
    tok = "xoxp-" + secrets.token_hex(16)
    ws = t.path("ws")
    os.mkdir(ws)
    os.chmod(ws, 0o777)
    run = t.corral(["run", "--json", "--policy", pol, "-w", ws,
                    "--env", "SLACK=" + tok, "--",
                    "sh", "-c", "echo ran > ran.txt"])
    eq(run.code, 126, "exit (%s)" % run.summary())
    r = t.result(run)
    eq(r.get("status"), "policy_denied", "status")
    contains(r.get("message", ""), "Slack token", "message")
    contains(r.get("message", ""), "broker", "message points to the broker")
    not_contains(json.dumps(r), tok, "the value is not in the result")
    not_contains(run.err.decode(), tok, "nor on stderr")
    true(not os.path.exists(os.path.join(ws, "ran.txt")), "nothing ran")
    # The request's env too.
    req = t.write("req.json", json.dumps({
        "command": ["true"], "env": {"K": "AKIA" + "Q" * 16}}))
    run = t.corral(["run", "--json", "--policy", pol, "--request", req])
    eq(run.code, 126, "request env refused (%s)" % run.summary())
    # Ordinary values pass under the same policy; a secret-looking name
    # with an ordinary value is still only a warning.
    run = t.corral(["run", "--policy", pol, "--env", "MY_TOKEN=abc",
                    "--env", "A=b", "--", "true"])
    eq(run.code, 0, "ordinary values under refuse (%s)" % run.summary())
    contains(run.err.decode(), "MY_TOKEN looks like a secret", "name warning")


@test
def env_secrets_policy_key_checked(t):
    src = os.path.join(CFG.policy_dir or "", "default.json")
    with open(src) as f:
        doc = json.load(f)
    doc["classes"]["default"]["env_secrets"] = "maybe"
    pol = t.write("bad.json", json.dumps(doc))
    chk = t.corral(["policy", "check", pol])
    eq(chk.code, 1, "policy check of a bad env_secrets")
    contains(chk.err.decode(), "env_secrets", "the message names the key")
