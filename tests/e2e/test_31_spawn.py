"""How the program is started: the command is looked up and run as libc's
execvp does it natively (PATH order, refused candidates, scripts without #!,
names too long), and the program gets its standard fds whatever corral
itself was given."""

import json
import os
import re

from harness import eq, contains, true, test

# Natively `env` (GNU coreutils) runs the command through libc's execvp:
# the reference for what the lookup finds and which error it reports.


def _tree(t):
    """A workspace with: d1/prog not executable, d2/prog a script printing
    "d2 ARGS", d3/plain an executable text file without #! (run by
    /bin/sh)."""
    ws = t.path("ws")
    for d in ("d1", "d2", "d3"):
        os.makedirs(os.path.join(ws, d), exist_ok=True)
    files = {
        "d1/prog": ("#!/bin/sh\necho d1 \"$@\"\n", 0o644),
        "d2/prog": ("#!/bin/sh\necho d2 \"$@\"\n", 0o755),
        "d3/plain": ("echo plain-via-sh \"$@\"\n", 0o755),
    }
    for name, (text, mode) in files.items():
        p = os.path.join(ws, name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
    os.chmod(ws, 0o755)
    return ws


def _error(text, prefix):
    """The strerror text at the end of an exec failure message."""
    m = re.search(prefix + r".*: ([^:\n]+)\s*$", text)
    return m.group(1).strip() if m else None


def _compare(t, ws, path, argv, want_out=None, want_err=None):
    """Run argv with PATH=path natively (cwd = the workspace) and under
    corral (its cwd is the workspace too); both must run the same file
    with the same output, or fail with the same error."""
    nat = t.native(["env", "-i", "PATH=" + path] + argv,
                   preexec=lambda: os.chdir(ws))
    run = t.corral(["run", "-w", ws, "--env", "PATH=" + path, "--"] + argv)
    what = "%s with PATH=%s" % (argv[0][:40], path)
    if want_out is not None:
        eq(nat.out.decode(), want_out, "native stdout, " + what)
        eq(nat.code, 0, "native exit, " + what)
        eq(run.out.decode(), want_out, "corral stdout, " + what)
        eq(run.code, 0, "corral exit (stderr %r), %s" % (run.err, what))
        return
    nerr = _error(nat.err.decode("utf-8", "replace"), "env")
    cerr = _error(run.err.decode("utf-8", "replace"), "cannot execute")
    eq(nerr, want_err, "native error, %s (stderr %r)" % (what, nat.err))
    eq(cerr, want_err, "corral error, %s (stderr %r)" % (what, run.err))
    eq(run.code, 127, "corral exit, " + what)


@test
def path_search_skips_a_refused_candidate(t):
    ws = _tree(t)
    _compare(t, ws, ws + "/d1:" + ws + "/d2", ["prog", "a b"],
             want_out="d2 a b\n")


@test
def path_search_refused_everywhere_is_eacces(t):
    ws = _tree(t)
    # A missing directory first, then only a file that may not run:
    # the search reports EACCES, not the last ENOENT.
    _compare(t, ws, ws + "/nowhere:" + ws + "/d1", ["prog"],
             want_err="Permission denied")
    t.assert_next_run_ok()


@test
def path_search_nothing_found(t):
    ws = _tree(t)
    _compare(t, ws, ws + "/nowhere:" + ws + "/d3", ["prog"],
             want_err="No such file or directory")


@test
def script_without_interpreter_line_runs_under_sh(t):
    ws = _tree(t)
    _compare(t, ws, ws + "/d3", ["plain", "x", "y"],
             want_out="plain-via-sh x y\n")
    # Named by its path, not found through PATH: the same.
    _compare(t, ws, "/usr/bin:/bin", [ws + "/d3/plain", "z"],
             want_out="plain-via-sh z\n")


@test
def name_too_long_is_refused_as_natively(t):
    ws = _tree(t)
    name = "x" * 300
    nat = t.native(["env", "-i", "PATH=" + ws + "/d2", name])
    eq(_error(nat.err.decode(), "env"), "File name too long",
       "native error (stderr %r)" % nat.err)
    run = t.corral(["run", "--json", "-w", ws, "--env", "PATH=" + ws + "/d2",
                    "--", name])
    r = t.result(run)
    eq(run.code, 127, "corral exit")
    eq(r.get("status"), "program_error", "status")
    # The name fills the message; what it says first is enough.
    true(r.get("message", "").startswith("cannot execute xxxx"),
         "message %r" % r.get("message"))
    t.assert_next_run_ok()


@test
def standard_fds_closed_at_start(t):
    """corral started with stdin and stdout closed: the program still has
    0, 1 and 2, its own (not one of the supervisor's descriptors), and the
    result reaches the --result file."""
    res = t.path("result.json")
    script = ("for f in 0 1 2; do "
              "[ -e /proc/self/fd/$f ] && echo fd$f=$(readlink /proc/self/fd/$f); "
              "done")

    def close01():
        os.close(0)
        os.close(1)
    p = t.spawn(["run", "--json", "--result", res, "--", "sh", "-c", script],
                preexec=close01)
    run = t.finish(p, want_json=False)
    eq(run.code, 0, "exit status (stderr %r)" % run.err)
    with open(res) as f:
        r = json.load(f)
    eq(r.get("status"), "ok", "status")
    out = r.get("stdout", "")
    for fd in ("fd0=/dev/null", "fd1=pipe:", "fd2=pipe:"):
        contains(out, fd, "program's descriptors")
    true("anon_inode" not in out, "no supervisor descriptor as a standard fd: %r" % out)
    t.assert_next_run_ok()


@test
def child_failing_before_ready_is_reported_as_itself(t):
    """A child that fails before it is ready (a workspace it cannot
    enter) may be exiting before the supervisor seizes it; the seize then
    fails, and corral blamed ptrace ("ptrace is restricted on this host")
    in some runs (found by a probing session). Its own report is read
    first: every run names the working directory."""
    if os.geteuid() == 0:
        return  # root enters a mode-000 directory: nothing fails
    ws = t.path("ws0")
    os.mkdir(ws)
    os.chmod(ws, 0)
    try:
        msgs = set()
        for _ in range(25):
            run = t.corral(["run", "--json", "--landlock=off", "-w", ws,
                            "--", "/bin/true"])
            r = t.result(run)
            eq(r.get("status"), "platform_failure", "status")
            msgs.add(r.get("message", "").split(":")[0])
        eq(sorted(msgs), ["the child failed entering the working directory"],
           "messages")
    finally:
        os.chmod(ws, 0o700)
