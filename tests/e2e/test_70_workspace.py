"""The workspace: given and kept, made and kept, or private and removed."""

import json
import os

from harness import CFG, eq, ne, true, test, mode_of, contains


@test
def workspace_given_kept(t):
    ws = t.path("ws")
    os.mkdir(ws, 0o700)
    run = t.corral(["run", "--json", "--workspace", ws, "--", "sh", "-c",
                    "pwd -P; echo hello > made.txt"])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    eq(r.get("stdout", "").split("\n")[0], os.path.realpath(ws),
       "the program's working directory")
    with open(os.path.join(ws, "made.txt")) as f:
        eq(f.read(), "hello\n", "file made by the program, after the run")
    eq(r.get("cleanup", {}).get("workspace_removed"), False,
       "cleanup.workspace_removed")


@test
def workspace_missing_created(t):
    ws = t.path("new-ws")
    run = t.corral(["run", "--json", "--workspace", ws, "--", "sh", "-c",
                    "echo kept > made.txt"])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    true(os.path.isdir(ws), "workspace %s was not created and kept" % ws)
    eq(oct(mode_of(ws)), oct(0o700), "mode of the created workspace")
    with open(os.path.join(ws, "made.txt")) as f:
        eq(f.read(), "kept\n", "file made by the program, after the run")
    eq(r.get("cleanup", {}).get("workspace_removed"), False,
       "cleanup.workspace_removed")


@test
def workspace_private_removed(t):
    run = t.corral(["run", "--json", "--", "sh", "-c",
                    "pwd -P; echo x > f; ls -ld ."])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    lines = r.get("stdout", "").split("\n")
    where = lines[0]
    eq(os.path.dirname(where), os.path.realpath(CFG.tmpdir),
       "private workspace's parent (TMPDIR)")
    true(os.path.basename(where).startswith("corral-"),
         "private workspace name %r: want corral-*" % where)
    true(len(lines) > 1 and lines[1].startswith("drwx------"),
         "private workspace mode: %r" % lines[1:2])
    true(not os.path.exists(where), "private workspace %s remains" % where)
    eq(r.get("cleanup", {}).get("workspace_removed"), True,
       "cleanup.workspace_removed")


@test
def workspace_fresh_each_run(t):
    first = t.result(t.corral(["run", "--json", "--", "sh", "-c",
                               "pwd -P; echo secret > left.txt"]))
    where = first.get("stdout", "").split("\n")[0]
    true(where.startswith("/"), "first run's workspace: %r" % where)
    run = t.corral(["run", "--json", "--", "sh", "-c",
                    'pwd -P; ls -A; cat "$1/left.txt" 2>/dev/null; '
                    'echo rc=$?', "sh", where])
    r = t.result(run)
    lines = r.get("stdout", "").split("\n")
    ne(lines[0], where, "second run's workspace")
    true("left.txt" not in lines, "the first run's file is in the second "
         "run's workspace: %r" % lines)
    eq([x for x in lines if x][-1:], ["rc=1"],
       "second run reading the first's file")


@test
def result_file_in_workspace_refused(t):
    """--result inside the workspace (or any root the program may write):
    the program, or a later run in the same workspace, could rewrite the
    record. Refused before anything starts (125), nothing written, and a
    result outside works."""
    ws = t.path("ws")
    os.makedirs(os.path.join(ws, "out"))
    result = os.path.join(ws, "out", "res.json")
    marker = os.path.join(ws, "ran")
    run = t.corral(["run", "--workspace", ws, "--result", result, "--",
                    "touch", marker])
    eq(run.code, 125, "exit status (stderr %r)" % run.err)
    contains(run.err.decode(), "inside the workspace", "the reason")
    eq(os.path.exists(result), False, "no result written in the workspace")
    eq(os.path.exists(marker), False, "the program never ran")
    # the same through a link to the workspace
    link = t.path("ws-link")
    os.symlink(ws, link)
    run = t.corral(["run", "--workspace", ws, "--result",
                    os.path.join(link, "res.json"), "--", "true"])
    eq(run.code, 125, "through a link: exit status (stderr %r)" % run.err)
    outside = t.path("res.json")
    run = t.corral(["run", "--workspace", ws, "--result", outside, "--",
                    "true"])
    eq(run.code, 0, "a result outside: exit status (stderr %r)" % run.err)
    with open(outside) as f:
        eq(json.load(f).get("status"), "ok", "the result's status")
    t.assert_next_run_ok()
