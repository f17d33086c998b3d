"""Policies and requests: malformed documents are refused with a located
error before anything runs; requests only narrow their class."""

import json
import os
import re

from harness import (POLICY_VERSION, CFG, eq, ne, contains, true, test,
                     check_result_shape)

# A valid policy, one key or list element per line, so each case below can
# say on which line its error is.
BASE_POLICY = [
    '{',
    '  "version": "%s",' % POLICY_VERSION,
    '  "classes": {',
    '    "default": {',
    '      "fs": {',
    '        "read": [',
    '          "/usr",',
    '          "/lib",',
    '          "/lib64",',
    '          "/bin",',
    '          "/etc",',
    '          "/dev/null"',
    '        ],',
    '        "write": [],',
    '        "exec": [',
    '          "/usr/bin",',
    '          "/bin",',
    '          "/usr/lib"',
    '        ],',
    '        "deny": []',
    '      },',
    '      "net": {',
    '        "allow": []',
    '      },',
    '      "limits": {',
    '        "cpu": "30s",',
    '        "memory": "512MiB",',
    '        "wall": "60s",',
    '        "processes": 64,',
    '        "output": "1MiB",',
    '        "disk": "256MiB",',
    '        "files": 10000,',
    '        "net-bytes": "0",',
    '        "net-connections": 0,',
    '        "net-conn-time": "30s"',
    '      },',
    '      "env": [',
    '        "PATH",',
    '        "LANG"',
    '      ]',
    '    }',
    '  }',
    '}',
]


def line_of(lines, text):
    """1-based number of the first line containing text."""
    for i, line in enumerate(lines):
        if text in line:
            return i + 1
    raise AssertionError("test bug: %r not in the document" % text)


def replace_line(lines, text, new):
    n = line_of(lines, text)
    out = list(lines)
    out[n - 1:n] = new if isinstance(new, list) else [new]
    return out, n


def write_doc(t, name, lines):
    return t.write(name, "\n".join(lines) + "\n")


class Case:
    """A malformed document, where its error is, and what names the key."""

    def __init__(self, lines, line, key, lines_ok=None, extra=None):
        self.lines = lines
        self.line = line            # the line the error must name
        self.lines_ok = lines_ok or (line, line)  # or a range of lines
        self.key = key              # a substring naming the key, or None
        self.extra = extra          # another substring the message must hold


def _policy_cases():
    b = BASE_POLICY
    cases = {}
    lines, n = replace_line(b, '"cpu"', ['        "colour": "blue",',
                                         '        "cpu": "30s",'])
    cases["unknown_key"] = Case(lines, n, "limits.colour")
    lines, n = replace_line(b, '"memory"', '        "memory": "12 parsecs",')
    cases["bad_unit"] = Case(lines, n, "limits.memory", extra="parsecs")
    lines, n = replace_line(b, '"memory"',
                            '        "memory": "99999999999999999999GiB",')
    cases["overflow"] = Case(lines, n, "limits.memory")
    lines, n = replace_line(b, '"/lib64"', '          "usr/lib",')
    cases["relative_path"] = Case(lines, n, "fs.read")
    lines, n = replace_line(b, '"disk"', [])
    first = line_of(b, '"default": {')
    last = line_of(b, '"net-conn-time"') + 1
    cases["missing_limit"] = Case(lines, n, "disk", lines_ok=(first, last))
    lines, n = replace_line(b, '"processes"', '        "processes": -1,')
    cases["negative_processes"] = Case(lines, n, "limits.processes")
    lines, n = replace_line(b, '"wall"', ['        "wall": "60s",',
                                          '        "cpu": "10s",'])
    cases["duplicate_key"] = Case(lines, n + 1, "limits.cpu")
    # Destinations with no connection to use them: refused at the budget.
    lines, _ = replace_line(b, '"allow"', '        "allow": ["127.0.0.1:80"]')
    cases["allow_with_zero_budget"] = Case(
        lines, line_of(lines, '"net-connections"'), "limits.net-connections",
        extra="is 0 but net.allow names destinations")
    # A missing comma: the parser may notice at either line.
    lines, n = replace_line(b, '"memory"', '        "memory": "512MiB"')
    cases["syntax_error"] = Case(lines, n, None, lines_ok=(n, n + 1))
    return cases


def _request_cases():
    cases = {}
    lines = ['{', '  "command": ["true"],', '  "colour": 1', '}']
    cases["unknown_key"] = Case(lines, 3, "colour")
    lines = ['{', '  "command": [],', '  "env": {}', '}']
    cases["empty_command"] = Case(lines, 2, "command")
    lines = ['{', '  "command": ["true"],', '  "limits": {',
             '    "wall": "10 fortnights"', '  }', '}']
    cases["bad_unit"] = Case(lines, 4, "limits.wall")
    return cases


def _located(t, err, path, case):
    """The error names the file, a line in the allowed range and the key."""
    base = os.path.basename(path)
    contains(err, base, "error names the file")
    found = [int(m) for m in re.findall(re.escape(base) + r":(\d+)", err)]
    lo, hi = case.lines_ok
    true(any(lo <= n <= hi for n in found),
         "error must name line %s: %r" %
         (lo if lo == hi else "%d-%d" % (lo, hi), err))
    if case.key:
        contains(err, case.key, "error names the key")
    if case.extra:
        contains(err, case.extra, "error says what is wrong")


def _workspace_probe(t):
    """A workspace and a command that leaves a file there if it runs."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    ran = os.path.join(ws, "ran")
    return ws, ran, ["touch", ran]


def _nothing_ran(ran):
    true(not os.path.exists(ran), "the command ran: %s exists" % ran)


def _make_policy_test(name, case):
    def fn(t):
        path = write_doc(t, "pol-%s.json" % name, case.lines)
        ws, ran, cmd = _workspace_probe(t)
        run = t.corral(["run", "--policy", path, "--workspace", ws,
                        "--"] + cmd)
        eq(run.code, 125, "exit status")
        _located(t, run.err.decode("utf-8", "replace"), path, case)
        _nothing_ran(ran)
        chk = t.corral(["policy", "check", path])
        eq(chk.code, 1, "corral policy check: exit status")
        _located(t, chk.err.decode("utf-8", "replace"), path, case)
        t.assert_next_run_ok()
    return fn


def _make_request_test(name, case):
    def fn(t):
        path = write_doc(t, "req-%s.json" % name, case.lines)
        ws, ran, _ = _workspace_probe(t)
        run = t.corral(["run", "--request", path, "--workspace", ws])
        eq(run.code, 125, "exit status")
        _located(t, run.err.decode("utf-8", "replace"), path, case)
        _nothing_ran(ran)
        t.assert_next_run_ok()
    return fn


for _name, _case in _policy_cases().items():
    test(_make_policy_test(_name, _case), name="policy_" + _name)
for _name, _case in _request_cases().items():
    test(_make_request_test(_name, _case), name="request_" + _name)


@test
def policy_base_control(t):
    """The unbroken document runs the probe command: the cases above are
    refused for their one defect, and their 'nothing ran' means something."""
    path = write_doc(t, "pol.json", BASE_POLICY)
    ws, ran, cmd = _workspace_probe(t)
    run = t.corral(["run", "--policy", path, "--workspace", ws, "--"] + cmd)
    eq(run.code, 0, "exit status (stderr %r)" % run.err)
    true(os.path.exists(ran), "the command did not run")
    chk = t.corral(["policy", "check", path])
    eq(chk.code, 0, "corral policy check: exit status (stderr %r)" % chk.err)


@test
def request_control(t):
    ws, ran, cmd = _workspace_probe(t)
    path = t.write("req.json", json.dumps({"command": cmd}))
    run = t.corral(["run", "--request", path, "--workspace", ws])
    eq(run.code, 0, "exit status (stderr %r)" % run.err)
    true(os.path.exists(ran), "the command did not run")


@test
def request_inputs_outside_class_refused(t):
    """A request's inputs are the agent's data: one naming a file the class
    cannot read is refused before anything runs (test_f0_io.py has the
    rest)."""
    ws, ran, cmd = _workspace_probe(t)
    src = t.write("input.txt", "data")
    path = t.write("req.json", json.dumps({
        "command": cmd, "inputs": [{"from": src, "to": "input.txt"}]}))
    run = t.corral(["run", "--request", path, "--workspace", ws])
    eq(run.code, 126, "exit status")
    contains(run.err.decode("utf-8", "replace"), "not readable by the class",
             "stderr")
    _nothing_ran(ran)
    t.assert_next_run_ok()


def _bad_cli(t, opts, needle):
    ws, ran, cmd = _workspace_probe(t)
    run = t.corral(["run", "--workspace", ws] + opts + ["--"] + cmd)
    eq(run.code, 125, "exit status")
    contains(run.err.decode("utf-8", "replace"), needle, "stderr")
    _nothing_ran(ran)
    t.assert_next_run_ok()


@test
def cli_limit_bad_value(t):
    _bad_cli(t, ["--limit", "wall=abc"], "wall")


@test
def cli_limit_unknown_name(t):
    _bad_cli(t, ["--limit", "nosuch=1"], "nosuch")


@test
def cli_class_unknown(t):
    _bad_cli(t, ["--class", "nosuch"], "nosuch")


@test
def request_exceeding_class_denied(t):
    ws, ran, cmd = _workspace_probe(t)
    path = t.write("req.json", json.dumps({
        "command": cmd, "limits": {"wall": "2h"}}))
    run = t.corral(["run", "--json", "--request", path, "--workspace", ws])
    r = t.result(run)
    eq(run.code, 126, "exit status")
    eq(r.get("status"), "policy_denied", "status")
    check_result_shape(r)
    contains(run.err.decode("utf-8", "replace") + r.get("message", ""),
             "wall", "the reason (stderr or message)")
    _nothing_ran(ran)
    t.assert_next_run_ok()


@test
def request_exceeding_class_one_line_reason(t):
    """Without --json, a denial is one line on stderr and nothing else."""
    ws, ran, cmd = _workspace_probe(t)
    path = t.write("req.json", json.dumps({
        "command": cmd, "limits": {"wall": "2h"}}))
    run = t.corral(["run", "--request", path, "--workspace", ws])
    eq(run.code, 126, "exit status")
    eq(run.out, b"", "stdout")
    err = run.err.decode("utf-8", "replace")
    contains(err, "wall", "the reason on stderr")
    eq(len(err.rstrip("\n").split("\n")), 1, "lines on stderr: %r" % err)
    _nothing_ran(ran)


@test
def request_file_runs(t):
    path = t.write("req.json", json.dumps({
        "command": ["sh", "-c", "echo $FOO; cat"],
        "env": {"FOO": "x"},
        "stdin": "in\n",
        "limits": {"wall": "10s"}}))
    run = t.corral(["run", "--request", path])
    eq(run.code, 0, "exit status (stderr %r)" % run.err)
    eq(run.out, b"x\nin\n", "stdout")
    run = t.corral(["run", "--json", "--request", path])
    r = t.result(run)
    eq(r.get("status"), "ok", "status")
    eq(r.get("stdout"), "x\nin\n", "stdout in the result")


@test
def request_id_used(t):
    path = t.write("req.json", json.dumps({
        "id": "req-7", "command": ["true"]}))
    r = t.result(t.corral(["run", "--json", "--request", path]))
    eq(r.get("task_id"), "req-7", "task_id")


def _default_policy_path():
    return os.path.join(CFG.policy_dir or "", "default.json")


@test
def policy_check_roundtrip(t):
    src = _default_policy_path()
    true(os.path.exists(src), "no default policy at %s" % src)
    run = t.corral(["policy", "check", src])
    eq(run.code, 0, "policy check default.json: exit (stderr %r)" % run.err)
    try:
        doc = json.loads(run.out.decode())
    except ValueError as e:
        raise AssertionError("policy check output is not JSON: %s" % e)
    eq(doc.get("version"), POLICY_VERSION, "version")
    true("default" in doc.get("classes", {}), "class default missing")
    again = t.write("normalised.json", run.out)
    run2 = t.corral(["policy", "check", again])
    eq(run2.code, 0, "policy check of its own output: exit (stderr %r)" %
       run2.err)
    eq(run2.out, run.out, "normalised output, checked again")


@test
def policy_errors_quote_credential_values(t):
    """A credential's methods or path_prefixes value that is refused was
    printed raw in the error: a policy could write terminal controls to
    the operator's terminal (a clipboard write, a cleared screen, a fake
    "policy OK" line; found by a probing session). It is quoted now, as
    every other value in document errors."""
    esc = "\u001b]52;c;eA==\u0007\u001b[2J\rcorral: policy OK"
    for key, val in (("methods", [esc]), ("path_prefixes", ["/" + esc])):
        doc = json.load(open(_default_policy_path()))
        cred = {"origin": "https://api.example.com",
                "header": "Authorization: Bearer {secret}",
                "secret_env": "TOKEN", key: val}
        doc["classes"]["default"]["credentials"] = {"GH": cred}
        path = t.write("esc-%s.json" % key, json.dumps(doc))
        run = t.corral(["policy", "check", path])
        ne(run.code, 0, "%s: the policy is refused" % key)
        err = run.err.decode("utf-8", "replace")
        contains(err, key if key == "path_prefixes" else "HTTP method",
                 "%s: the error says what" % key)
        true("\x1b" not in err and "\x07" not in err and "\r" not in err,
             "%s: no control character reaches the terminal: %r" %
             (key, err))


@test
def policy_fs_lists_are_bounded(t):
    """A class's fs lists hold at most 4096 paths each: 40 000 read roots
    in a 760 KB policy cost ~15 s of set-up before the program ran, a
    cancel waiting for it (found by a probing session). 4096 pass, 4097
    are refused with a located error."""
    for n, ok in ((4096, True), (4097, False)):
        doc = json.load(open(_default_policy_path()))
        doc["classes"]["default"].setdefault("fs", {})["read"] = [
            "/nonexistent-corral-%d" % i for i in range(n)]
        path = t.write("many-%d.json" % n, json.dumps(doc))
        run = t.corral(["policy", "check", path])
        if ok:
            eq(run.code, 0, "%d paths (stderr %r)" % (n, run.err[-300:]))
        else:
            ne(run.code, 0, "%d paths are refused" % n)
            contains(run.err.decode(), "at most 4096 paths in fs.read",
                     "the message")


@test
def policy_check_matches_builtin(t):
    """policy/default.json is what corral uses when given no policy."""
    src = _default_policy_path()
    run = t.corral(["run", "--json", "--policy", src, "--", "true"])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    builtin = t.result(t.corral(["run", "--json", "--", "true"]))
    eq(r.get("policy_version"), builtin.get("policy_version"),
       "policy_version: file vs built-in")


@test
def policy_check_missing_file(t):
    run = t.corral(["policy", "check", t.path("no-such.json")])
    eq(run.code, 1, "exit status")
    contains(run.err.decode("utf-8", "replace"), "no-such.json", "stderr")
    eq(run.out, b"", "stdout")


@test
def request_limits_narrow_the_class_as_the_operator_raised_it(t):
    """A request's limits were judged against the class alone: with the
    operator's --limit wall=120s over a 1m class, a request asking 90s
    was refused (found by a probing session). The operator's raise is
    what the request may narrow now; past it is still refused."""
    for asked, code in (("90s", 0), ("150s", 126)):
        req = t.write("req.json", json.dumps({
            "command": ["true"], "limits": {"wall": asked}}))
        run = t.corral(["run", "--limit", "wall=120s", "--request", req])
        eq(run.code, code, "asked %s: exit status (stderr %r)" %
           (asked, run.err))
    t.assert_next_run_ok()
