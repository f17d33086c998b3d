"""A workspace that cannot be turned against its owner: workspaces that would
expose the caller refused, result paths that cannot be written refused before
the program starts, private workspaces of a killed corral swept, a command
the policy refuses reported as policy_denied."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import (CFG, eq, true, contains, not_contains, test, wait_for)


def _refused_ws(t, r, run, why):
    eq(run.code, 126, "exit status (%s)" % run.summary())
    eq(r.get("status"), "policy_denied", "status")
    contains(r.get("message", ""), "refused", "message")
    contains(r.get("message", ""), why, "message")
    contains(r.get("message", ""), "--workspace-unsafe", "message")
    eq(r.get("stdout"), "", "the program never ran")


@test
def workspace_root_refused(t):
    run = t.corral(["run", "--json", "-w", "/", "--", "sh", "-c",
                    "echo ran; touch /tmp/x-%s" % t.marker])
    r = t.result(run)
    _refused_ws(t, r, run, "root directory")
    true(not os.path.exists("/tmp/x-%s" % t.marker), "nothing written")
    t.assert_next_run_ok()


@test
def workspace_home_and_ancestors_refused(t):
    # HOME is the caller's; the secret in it stands for the SSH key.
    home = t.path("home")
    os.makedirs(os.path.join(home, ".ssh"))
    t.write("home/.ssh/id_rsa", "KEY-" + t.marker, 0o600)
    before = sorted(os.listdir(home))
    env = {"HOME": home}
    cmd = ["--", "sh", "-c", "cat .ssh/id_rsa; echo ran > ran.txt"]
    for ws, cwd, why in ((home, None, "the caller's home directory"),
                         (".", home, "the caller's home directory"),
                         (t.tmp, None, "an ancestor of the caller's home"),
                         (os.path.dirname(t.tmp), None,
                          "an ancestor of the caller's home")):
        p = t.spawn(["run", "--json", "-w", ws] + cmd, env=env,
                    preexec=(lambda c=cwd: os.chdir(c)) if cwd else None)
        run = t.finish(p)
        r = t.result(run)
        _refused_ws(t, r, run, why)
        not_contains(run.out.decode(), "KEY-", "the key stays unread")
    eq(sorted(os.listdir(home)), before, "nothing written in the home")
    true(not os.path.exists(t.path("ran.txt")), "nothing written above it")
    # The caller who means it says so.
    run = t.corral(["run", "--json", "--workspace-unsafe", "-w", home] + cmd,
                   env=env)
    r = t.result(run)
    eq(run.code, 0, "--workspace-unsafe: exit status (%s)" % run.summary())
    eq(r.get("stdout"), "KEY-%s" % t.marker, "--workspace-unsafe: stdout")
    os.unlink(os.path.join(home, "ran.txt"))
    # A subdirectory of the home is an ordinary workspace.
    sub = os.path.join(home, "work")
    run = t.corral(["run", "--json", "-w", sub, "--", "sh", "-c",
                    "cat ../.ssh/id_rsa; echo rc=$?"], env=env)
    r = t.result(run)
    eq(run.code, 0, "a directory below the home: exit status")
    not_contains(r.get("stdout", ""), "KEY-", "a workspace below the home")
    t.assert_next_run_ok()


@test
def workspace_around_denied_root_refused(t):
    ws = t.path("ws")
    secret = os.path.join(ws, "secret")
    os.makedirs(secret)
    t.write("ws/secret/key", "KEY-" + t.marker, 0o600)
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["deny"] = [secret]
    pfile = t.path("deny.json")
    with open(pfile, "w") as f:
        json.dump(pol, f)
    for w in (ws, secret, os.path.join(secret, "below")):
        run = t.corral(["run", "--json", "--policy", pfile, "-w", w, "--",
                        "sh", "-c", "cat secret/key key; echo ran > ran"])
        r = t.result(run)
        _refused_ws(t, r, run, "the class denies %s" % secret)
    eq(sorted(os.listdir(ws)), ["secret"], "nothing written in it")
    eq(sorted(os.listdir(secret)), ["key"], "nothing written in the secret")
    t.assert_next_run_ok()


@test
def read_root_inside_a_writable_root_refused(t):
    """A path's access is the union of the roots it is in, so a read or
    exec root inside the workspace or a --rw root was as writable as the
    root around it: `-w ws --ro ws/vendor` let the program append to,
    rename and remove ws/vendor, `ok`, with nothing said (found by a
    probing session; then a root not made yet, named through a link to
    the workspace). Such a run is now refused before anything starts;
    a read root equal to a writable root (nothing narrower) and one
    beside it still run."""
    ws, rw = t.path("ws"), t.path("rw")
    for d in (ws, rw):
        os.makedirs(os.path.join(d, "vendor"))
        t.write(os.path.relpath(os.path.join(d, "vendor", "file"), t.tmp),
                "ORIG")
    alias = t.path("wsl")
    os.symlink(ws, alias)
    cmd = ["--", "sh", "-c", "echo PWN >> vendor/file; rm -rf vendor; echo ran"]
    for extra, kind, root, which in (
            (["--ro", os.path.join(ws, "vendor")], "read",
             os.path.join(ws, "vendor"), "the workspace " + ws),
            (["--exec", os.path.join(ws, "vendor")], "exec",
             os.path.join(ws, "vendor"), "the workspace " + ws),
            (["--ro", os.path.join(ws, "later")], "read",
             os.path.join(ws, "later"), "the workspace " + ws),
            (["--rw", rw, "--ro", os.path.join(rw, "vendor")], "read",
             os.path.join(rw, "vendor"), "the writable root " + rw),
            # Not there yet, named through a link to the workspace.
            (["--ro", os.path.join(alias, "new")], "read",
             os.path.join(alias, "new"), "the workspace " + ws)):
        run = t.corral(["run", "--json", "-w", ws] + extra + cmd)
        r = t.result(run)
        eq(run.code, 126, "%s: exit status (%s)" % (extra, run.summary()))
        eq(r.get("status"), "policy_denied", "%s: status" % extra)
        contains(r.get("message", ""), "the %s root %s is inside %s" % (
            kind, root, which), "%s: message" % extra)
        eq(r.get("stdout"), "", "%s: the program never ran" % extra)
    for d in (ws, rw):
        with open(os.path.join(d, "vendor", "file")) as f:
            eq(f.read(), "ORIG", "the read root's file is untouched")
    # Nothing narrower: a read root that is the workspace, one beside it.
    run = t.corral(["run", "--json", "-w", ws, "--ro", ws, "--ro", rw,
                    "--", "sh", "-c", "cat %s/vendor/file; echo ran > ran" % rw])
    r = t.result(run)
    eq((run.code, r.get("status"), r.get("stdout")), (0, "ok", "ORIG"),
       "read roots equal to and beside the workspace")
    t.assert_next_run_ok()


@test
def result_path_unwritable_refused_before_start(t):
    ws = t.path("ws")
    os.makedirs(ws)
    ro = t.path("ro")
    os.makedirs(ro)
    os.chmod(ro, 0o555)
    os.makedirs(t.path("isdir.json"))
    for res, what in ((os.path.join(ro, "r.json"), "a read-only directory"),
                      (t.path("missing", "r.json"), "a missing directory"),
                      (t.path("isdir.json"), "a directory")):
        run = t.corral(["run", "-w", ws, "--result", res, "--", "sh", "-c",
                        "echo ran > ran"])
        eq(run.code, 125, "--result in %s: exit status (%s)" %
           (what, run.summary()))
        contains(run.err.decode(), res, "stderr names the path")
        true(not os.path.exists(os.path.join(ws, "ran")),
             "--result in %s: the program never started" % what)
    eq(os.listdir(ro), [], "nothing written in the read-only directory")
    eq(os.listdir(t.path("isdir.json")), [], "the directory untouched")
    # An audit file that cannot be opened is the same error.
    run = t.corral(["run", "-w", ws, "--audit", os.path.join(ro, "a.log"),
                    "--", "sh", "-c", "echo ran > ran"])
    eq(run.code, 125, "--audit unopenable: exit status")
    true(not os.path.exists(os.path.join(ws, "ran")),
         "--audit unopenable: the program never started")
    os.chmod(ro, 0o755)
    t.assert_next_run_ok()


def _marks_kept(path):
    """Does this filesystem keep user attributes (corral's workspace mark)?"""
    try:
        os.getxattr(path, "user.corral.workspace")
        return True
    except OSError:
        return False


@test
def links_left_in_a_kept_workspace_are_not_followed_for_the_next_run(t):
    """A program plants links in its kept workspace to a directory outside
    every root (standing for ~/.ssh). A later run that names a path
    through them as its -w, --rw, --ro, --input, --output-dir, --result or
    --audit is refused, and nothing is written there (found by a probing
    session: the next run's program appended to authorized_keys, and an
    artifact was delivered into ~/.ssh). The caller's own link, outside
    any workspace, is followed as before."""
    ws = t.path("scratch")
    os.mkdir(ws, 0o700)
    secret = t.path("secret")
    os.mkdir(secret, 0o700)
    run = t.corral(["run", "--json", "-w", ws, "--", "sh", "-c",
                    "ln -s %s task2 && ln -s %s out && mkdir d && "
                    "ln -s ../out d/deeper" % (secret, secret)])
    eq(run.code, 0, "the planting run (%s)" % run.summary())
    true(_marks_kept(ws), "the kept workspace carries corral's mark")
    w2 = t.path("w2")
    os.mkdir(w2, 0o700)
    cmd = ["--", "sh", "-c", "echo ran > %s/ran; echo key >> authorized_keys"
           % w2]
    for opts, what in (
            (["-w", os.path.join(ws, "task2")], "-w through the link"),
            (["-w", os.path.join(ws, "d", "deeper")], "-w through two links"),
            (["-w", w2, "--rw", os.path.join(ws, "task2")], "--rw"),
            (["-w", w2, "--ro", os.path.join(ws, "out")], "--ro"),
            (["-w", w2, "--input", os.path.join(ws, "out")], "--input")):
        run = t.corral(["run", "--json"] + opts + cmd)
        r = t.result(run)
        eq((run.code, r.get("status")), (126, "policy_denied"),
           "%s: (%s)" % (what, run.summary()))
        contains(r.get("message", ""), "symbolic link", what)
        true(not os.path.exists(os.path.join(w2, "ran")),
             "%s: the program never ran" % what)
    for opts, what in (
            (["--output", "authorized_keys", "--output-dir",
              os.path.join(ws, "out")], "--output-dir"),
            (["--result", os.path.join(ws, "out", "r.json")], "--result"),
            (["--audit", os.path.join(ws, "out", "a.jsonl")], "--audit")):
        run = t.corral(["run", "-w", w2] + opts + cmd)
        eq(run.code, 125, "%s: refused (%s)" % (what, run.summary()))
        contains(run.err.decode(), "symbolic link", what)
        true(not os.path.exists(os.path.join(w2, "ran")),
             "%s: the program never ran" % what)
    eq(os.listdir(secret), [], "nothing reached the directory outside")
    # The caller's own link, in a directory no run wrote: followed.
    mine = t.path("mine")
    os.symlink(w2, mine)
    run = t.corral(["run", "--json", "-w", mine, "--", "sh", "-c",
                    "pwd -P"])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", os.path.realpath(w2) +
                                            "\n"), "the caller's own link")
    # The caller who means it says so.
    run = t.corral(["run", "--json", "--workspace-unsafe", "-w",
                    os.path.join(ws, "task2"), "--", "sh", "-c", "pwd -P"])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", os.path.realpath(secret) +
                                            "\n"), "--workspace-unsafe")
    t.assert_next_run_ok()


@test
def links_left_in_a_writable_root_are_not_followed_either(t):
    """The same, through a --rw root: it is the program's ground as the
    workspace is, and was not marked, so a link its program left there
    made the next run's -w the caller's ~/.ssh (found by a probing session
    of the fix). --rw roots are marked now. And the walk's own edges: a
    refused -w makes nothing where the link leads (it made the directory
    there, then refused), and --input through a link to a file works (it
    answered "Not a directory")."""
    rw = t.path("cache")
    os.mkdir(rw, 0o700)
    secret = t.path("secret")
    os.mkdir(secret, 0o700)
    run = t.corral(["run", "--json", "--rw", rw, "--", "sh", "-c",
                    "ln -s %s %s/task" % (secret, rw)])
    eq(run.code, 0, "the planting run (%s)" % run.summary())
    true(_marks_kept(rw), "the --rw root carries corral's mark")
    run = t.corral(["run", "--json", "-w", os.path.join(rw, "task"), "--",
                    "sh", "-c", "echo key >> authorized_keys"])
    r = t.result(run)
    eq((run.code, r.get("status")), (126, "policy_denied"),
       "-w through a link in a --rw root (%s)" % run.summary())
    run = t.corral(["run", "--json", "-w", os.path.join(rw, "task", "new"),
                    "--", "true"])
    r = t.result(run)
    eq(r.get("status"), "policy_denied", "-w below the link")
    eq(os.listdir(secret), [], "nothing made or written where it leads")
    # A directory of the caller's without its write bit still carries
    # the mark (setting it needs the bit; the program, as the owner, could
    # add it back and plant), and a root that cannot carry one (a sticky
    # directory of another owner) is refused.
    ro = t.path("ws555")
    os.mkdir(ro, 0o555)
    run = t.corral(["run", "--json", "-w", ro, "--", "sh", "-c",
                    "chmod 755 . && ln -s %s task && chmod 555 ." % secret])
    eq(run.code, 0, "the planting run in a 0555 workspace (%s)" %
       run.summary())
    eq(oct(os.stat(ro).st_mode & 0o7777), oct(0o555), "its mode kept")
    run = t.corral(["run", "--json", "-w", os.path.join(ro, "task"), "--",
                    "sh", "-c", "echo x > planted"])
    r = t.result(run)
    eq(r.get("status"), "policy_denied", "-w through a link in a 0555 one")
    if os.stat("/var/tmp").st_uid != os.getuid() and \
            os.stat("/var/tmp").st_mode & 0o1000:
        run = t.corral(["run", "--json", "--rw", "/var/tmp", "--", "true"])
        r = t.result(run)
        eq(r.get("status"), "policy_denied", "--rw of a sticky /var/tmp")
        contains(r.get("message", ""), "cannot mark", "message")
    # /dev/stdin as an input: the pipe it leads to is refused as a fifo
    # (the walk read the magic link's text as a path: ENOENT).
    run = t.corral(["run", "--json", "--input", "/dev/stdin:x", "--",
                    "true"], stdin="data")
    r = t.result(run)
    eq(r.get("status"), "policy_denied", "--input /dev/stdin (a pipe)")
    contains(r.get("message", ""), "fifo", "message")
    # The caller's own link to a file, as an input.
    src = t.write("data.txt", "input-%s\n" % t.marker)
    os.symlink(src, t.path("data-link"))
    run = t.corral(["run", "--json", "--input", "%s:in.txt" %
                    t.path("data-link"), "--", "cat", "in.txt"])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "input-%s\n" % t.marker),
       "--input through a link to a file (message %r)" % r.get("message"))
    t.assert_next_run_ok()


@test(root=True)
def links_below_another_owners_search_only_directory_are_followed(t):
    """A directory of another owner that the caller may only search (a
    hardened /home, mode 0711) hides whether it carries the mark; it was
    counted as marked, so every link below it was refused (found by a
    probing session). Only the caller's own unreadable directories count
    so now: another owner's never was a run's."""
    import tempfile
    from test_c1_loopback import _as_nobody
    top = tempfile.mkdtemp(prefix="corral-sx-", dir="/tmp")
    try:
        os.chmod(top, 0o711)
        sub = os.path.join(top, "u")
        real = os.path.join(sub, "real")
        os.makedirs(real)
        os.symlink(real, os.path.join(sub, "lnk"))
        for p in (sub, real, os.path.join(sub, "lnk")):
            os.lchown(p, 65534, 65534)
        os.chmod(sub, 0o755)
        p = t.spawn(["run", "--json", "-w", os.path.join(sub, "lnk"), "--",
                     "pwd", "-P"], env={"TMPDIR": sub, "HOME": sub + "/h"},
                    preexec=_as_nobody)
        run = t.finish(p)
        r = t.result(run)
        eq((r.get("status"), r.get("stdout")), ("ok", real + "\n"),
           "a link below a search-only directory of root's (message %r)" %
           r.get("message"))
    finally:
        import shutil
        shutil.rmtree(top, ignore_errors=True)


def _flip_link(t, ws, name, target, env, rmdir=False):
    """A live run in ws whose program makes name a link to target and
    removes it (and, with rmdir, a directory of that name), over and over
    until ws/stop exists or 25 s passed: the run, started."""
    prog = ("import os, time\n"
            "end = time.time() + 25\n"
            "while time.time() < end and not os.path.exists('stop'):\n"
            "    try: os.symlink(%r, %r)\n"
            "    except OSError: pass\n"
            "    try: os.unlink(%r)\n"
            "    except IsADirectoryError:\n"
            "        if %r:\n"
            "            try: os.rmdir(%r)\n"
            "            except OSError: pass\n"
            "    except OSError: pass\n" % (target, name, name, rmdir, name))
    a = t.spawn(["run", "--json", "-w", ws, "--limit", "wall=40s", "--",
                 "python3", "-c", prog], env=env)
    wait_for(lambda: os.path.lexists(os.path.join(ws, name)), 10)
    return a


@test
def workspace_is_judged_on_the_directory_it_opens(t):
    """The -w refusals were judged on one resolution of the name and the
    workspace made on another: a program of a live run whose workspace
    holds the name, swapping a link to the caller's home in and out of
    it, got later runs the home itself as their workspace (8 of 30 in a
    probing session). Now the directory opened is judged and used."""
    home = t.path("home")
    os.mkdir(home, 0o755)
    sc = t.path("sc")
    os.mkdir(sc, 0o700)
    # The window was the sweep of $TMPDIR between the two resolutions: a
    # full one (a shared /tmp) makes it wide enough to hit every time.
    tmp = t.path("tmp")
    os.mkdir(tmp, 0o700)
    for i in range(3000):
        os.mkdir(os.path.join(tmp, "d%d" % i))
    env = {"HOME": home, "TMPDIR": tmp}
    a = _flip_link(t, sc, "task3", home, env, rmdir=True)
    homes = 0
    for _ in range(20):
        run = t.corral(["run", "--json", "-w", os.path.join(sc, "task3"),
                        "--", "sh", "-c", "pwd -P; echo x > planted"],
                       env=env)
        r = t.result(run)
        if (r.get("stdout") or "").startswith(home):
            homes += 1
    with open(os.path.join(sc, "stop"), "w"):
        pass
    t.finish(a, timeout=60)
    eq(homes, 0, "runs that got the home as their workspace")
    true(not os.path.exists(os.path.join(home, "planted")),
         "nothing written in the home")
    t.assert_next_run_ok()


@test
def roots_are_taken_from_what_the_walk_opened(t):
    """--ro and --rw were walked for planted links, then resolved again by
    name when the run's roots were made: a program of a live run whose
    workspace holds the name, exchanging the directory with a link to a
    directory outside, got a later run that directory as a root of its
    own (its real path was taken through the link), readable by that
    run's program under its own name (7 of 20 runs). Now the walk's
    directory is the root: its real path, the resolver's fd, Landlock's
    rule, the disk walk; a policy file's roots are walked too."""
    secret = t.path("secret")
    os.mkdir(secret, 0o700)
    with open(os.path.join(secret, "f"), "w") as f:
        f.write("SECRET-%s\n" % t.marker)
    sc = t.path("sc")
    os.mkdir(sc, 0o700)
    os.mkdir(os.path.join(sc, "data"))
    with open(os.path.join(sc, "data", "f"), "w") as f:
        f.write("decoy\n")
    # The window is the sweep of $TMPDIR between the walk and the roots:
    # a full one makes it wide.
    tmp = t.path("tmp")
    os.mkdir(tmp, 0o700)
    for i in range(3000):
        os.mkdir(os.path.join(tmp, "d%d" % i))
    env = {"TMPDIR": tmp}
    swapper = ("import ctypes, os, time\n"
               "libc = ctypes.CDLL(None, use_errno=True)\n"
               "os.symlink(%r, 'alt')\n"
               "end = time.time() + 30\n"
               "while time.time() < end and not os.path.exists('stop'):\n"
               "    libc.renameat2(-100, b'data', -100, b'alt', 2)\n"
               % secret)
    a = t.spawn(["run", "--json", "-w", sc, "--limit", "wall=45s", "--",
                 "python3", "-c", swapper], env=env)
    wait_for(lambda: os.path.lexists(os.path.join(sc, "alt")), 10)
    leaks = refused = 0
    w2 = t.path("w2")
    os.mkdir(w2, 0o700)
    # A policy file's roots are the caller's too.
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["read"].append(os.path.join(sc, "data"))
    pfile = t.path("pol.json")
    with open(pfile, "w") as f:
        json.dump(pol, f)
    for i in range(21):
        opt = [["--rw", os.path.join(sc, "data")],
               ["--ro", os.path.join(sc, "data")],
               ["--policy", pfile]][i % 3]
        run = t.corral(["run", "--json", "-w", w2] + opt + [
                        "--", "sh", "-c",
                        "cat %s/f %s/data/f 2>/dev/null; true" %
                        (secret, sc)], env=env)
        r = t.result(run)
        if "SECRET" in (r.get("stdout") or ""):
            leaks += 1
        if r.get("status") == "policy_denied":
            refused += 1
    with open(os.path.join(sc, "stop"), "w"):
        pass
    t.finish(a, timeout=60)
    eq(leaks, 0, "runs whose program read the directory the link led to "
       "(%d of 21 refused for the link)" % refused)
    # A root absent at the walk was resolved by name later: flipping the
    # name between missing and the link got 12 of 60 runs the directory
    # outside as a root (found by a probing session).
    os.unlink(os.path.join(sc, "stop"))
    a = _flip_link(t, sc, "gone", secret, env)
    leaks = 0
    for i in range(20):
        opt = "--ro" if i % 2 else "--rw"
        run = t.corral(["run", "--json", "-w", w2, opt,
                        os.path.join(sc, "gone"), "--", "sh", "-c",
                        "cat %s/f 2>/dev/null; true" % secret], env=env)
        if "SECRET" in (t.result(run).get("stdout") or ""):
            leaks += 1
    with open(os.path.join(sc, "stop"), "w"):
        pass
    t.finish(a, timeout=60)
    eq(leaks, 0, "runs given the place a root absent at the walk led to")
    t.assert_next_run_ok()


@test
def deny_entries_and_absent_roots_are_not_steered(t):
    """A policy file's deny entry named through a link in a run's writable
    space was resolved by name once: a live run's program re-pointing the
    link got later runs what the entry denied (12 of 20, found by a
    probing session). Deny entries are walked as roots are: one reached
    through such a link, or absent there, refuses the run. And a --rw
    root absent at the start was measured by the disk walk through a link
    that appeared on its path later: the run ended on "disk" for a tree
    it could not touch."""
    share = t.path("share")
    os.mkdir(share, 0o700)
    data = t.path("data")
    os.makedirs(os.path.join(data, "keys"))
    with open(os.path.join(data, "keys", "k.txt"), "w") as f:
        f.write("KEY\n")
    run = t.corral(["run", "--json", "--rw", share, "--", "ln", "-s",
                    os.path.join(data, "keys"), os.path.join(share, "keys")])
    eq(run.code, 0, "the planting run (%s)" % run.summary())
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    fs = pol["classes"]["default"]["fs"]
    fs["read"].append(data)
    for deny, what in ((os.path.join(share, "keys"), "through the link"),
                       (os.path.join(share, "nothing"), "absent there")):
        fs["deny"] = [deny]
        pfile = t.path("pol.json")
        with open(pfile, "w") as f:
            json.dump(pol, f)
        run = t.corral(["run", "--json", "--policy", pfile, "--", "cat",
                        os.path.join(data, "keys", "k.txt")])
        r = t.result(run)
        eq(r.get("status"), "policy_denied", "a deny entry %s (message %r)" %
           (what, r.get("message")))
        not_contains(r.get("stdout") or "", "KEY", "what the entry denies")
    # The absent --rw root: a link appears on its path while the run goes.
    big = t.path("big")
    os.makedirs(os.path.join(big, "out"))
    with open(os.path.join(big, "out", "f"), "wb") as f:
        f.write(b"x" * (8 << 20))
    p = t.spawn(["run", "--json", "--rw", os.path.join(share, "d", "out"),
                 "--limit", "disk=2MiB", "--", "sleep", "2"])
    time.sleep(0.7)
    os.symlink(big, os.path.join(share, "d"))
    r = t.result(t.finish(p, timeout=60))
    eq((r.get("status"), r.get("limit")), ("ok", None),
       "a tree reached through a link on an absent root's path (message %r)"
       % r.get("message"))
    t.assert_next_run_ok()


def _private(tmp):
    try:
        return sorted(e for e in os.listdir(tmp) if e.startswith("corral-"))
    except OSError:
        return []


def _killed_run(t, tmp):
    """Start a run whose program writes into its private workspace, SIGKILL
    corral mid-run; return the names it left."""
    env = {"TMPDIR": tmp}
    p = t.spawn(["run", "--", "sh", "-c",
                 "mkdir -p d/e; echo x > d/e/f; chmod 0 d; echo up > up; "
                 "exec sleep 100"], env=env)
    ok = wait_for(lambda: any(os.path.exists(os.path.join(tmp, w, "up"))
                              for w in _private(tmp)), 20)
    true(ok, "the program started and wrote")
    os.kill(p.pid, signal.SIGKILL)
    t.finish(p, timeout=30)
    # The tree dies with corral (EXITKILL); its workspace stays.
    t.no_marker_processes("after kill -9 of corral")
    return _private(tmp)


@test
def private_workspace_of_killed_corral_swept(t):
    tmp = t.path("tmp")
    os.makedirs(tmp)
    env = {"TMPDIR": tmp}
    left = _killed_run(t, tmp)
    eq(len(left), 2, "a workspace and its lock left: %r" % left)
    true(left[1] == left[0] + ".lock", "names %r" % left)
    # A run still alive keeps its own.
    live = t.spawn(["run", "--", "sh", "-c", "echo up > up; exec sleep 100"],
                   env=env)
    ok = wait_for(lambda: any(os.path.exists(os.path.join(tmp, w, "up"))
                              for w in _private(tmp) if w not in left), 20)
    true(ok, "the live run started")
    # The next run sweeps the dead one's, not the live one's.
    run = t.corral(["run", "--json", "--", "echo", "next"], env=env)
    eq(run.code, 0, "next run: exit status")
    now = _private(tmp)
    true(left[0] not in now and left[1] not in now,
         "the dead run's workspace swept: %r" % now)
    eq(len(now), 2, "the live run's workspace and lock kept: %r" % now)
    os.kill(live.pid, signal.SIGTERM)
    t.finish(live, timeout=30)
    eq(_private(tmp), [], "the live run removed its own at its end")
    # corral gc does the same, and says what it did.
    left = _killed_run(t, tmp)
    eq(len(left), 2, "left again: %r" % left)
    run = t.corral(["gc"], env=env)
    eq(run.code, 0, "corral gc: exit status (%s)" % run.summary())
    contains(run.out.decode(), "1 workspace(s) of ended runs removed",
             "corral gc: stdout")
    eq(_private(tmp), [], "corral gc swept it")
    # Another user's name-alike is not ours to judge: a plain directory
    # without a lock file is never touched.
    os.makedirs(os.path.join(tmp, "corral-abcdef"))
    run = t.corral(["gc"], env=env)
    eq(run.code, 0, "corral gc: exit status")
    eq(_private(tmp), ["corral-abcdef"], "a directory without a lock kept")
    os.rmdir(os.path.join(tmp, "corral-abcdef"))
    t.assert_next_run_ok()


@test
def first_exec_refused_is_policy_denied(t):
    # The program is outside every exec root: the policy refuses it.
    run = t.corral(["run", "--json", "--", t.prog("spew")])
    r = t.result(run)
    eq(run.code, 126, "exit status (%s)" % run.summary())
    eq(r.get("status"), "policy_denied", "status")
    eq(r.get("exit_code"), None, "exit_code")
    true(any(d.get("syscall") == "execve" and
             d.get("target") == t.prog("spew") for d in r.get("denials", [])),
         "the exec denial is recorded: %r" % r.get("denials"))
    # A command that does not exist inside the roots is still the
    # program's error (127), not a denial.
    run = t.corral(["run", "--json", "--", "/usr/bin/no-such-" + t.marker])
    r = t.result(run)
    eq(run.code, 127, "missing command: exit status")
    eq(r.get("status"), "program_error", "missing command: status")
    t.assert_next_run_ok()


TIMER_NATIVE = ("import ctypes, resource; rt = ctypes.CDLL('librt.so.1'); "
                "t = ctypes.c_void_p(); "
                "print(rt.timer_create(1, None, ctypes.byref(t)), "
                "resource.getrlimit(resource.RLIMIT_SIGPENDING)[0])")


@test
def pending_signals_of_the_user_are_not_spent_by_one_run(t):
    """The count RLIMIT_SIGPENDING limits is the user's: a run that made
    POSIX timers until EAGAIN took all of it, and every run started
    meanwhile had no deadline for its loop's socket calls (a warning
    only) and could not wake its FIFO workers, and the host's programs
    could make no timer (found by a probing session). The program now
    has a quarter of the caller's limit; the host, corral and the next
    run keep the rest, and a supervisor that cannot arm its deadline does
    not start."""
    ws = t.path("ws")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    hog = t.spawn(["run", "-w", ws] + t.prog_roots() + [
        "--", t.prog("timer_hoard"), os.path.join(ws, "count"), "30"])
    try:
        true(wait_for(lambda: os.path.exists(os.path.join(ws, "count")), 30),
             "the program made its timers")
        time.sleep(0.2)
        with open(os.path.join(ws, "count")) as f:
            made, why = f.read().split()
        eq(why, "EAGAIN", "the program stopped at its limit")
        native = t.native(["python3", "-c", TIMER_NATIVE]).out.decode().split()
        eq(native[0], "0", "a timer made outside the run meanwhile")
        limit = int(native[1])
        true(int(made) <= limit // 4,
             "the run's timers %s within a quarter of %d" % (made, limit))
        run = t.corral(["run", "--json", "--", "echo", "beside"])
        r = t.result(run)
        eq(r.get("status"), "ok", "a run beside it (%r)" % r.get("message"))
        not_contains(run.err.decode(), "deadline", "stderr")
    finally:
        os.kill(hog.pid, signal.SIGTERM)
        t.finish(hog, timeout=30)
    t.assert_next_run_ok()


SHM_VICTIM = r"""
import os, time
open("/dev/shm/mystate", "w").write("state kept")
open("ready", "w").close()
while not os.path.exists("go"):
    time.sleep(0.05)
print(open("/dev/shm/mystate").read())
"""


@test(root=True)
def shm_of_a_live_run_survives_a_sweep_under_hidepid(t):
    """Where /proc is mounted hidepid=2 (hardening common on shared
    hosts), a supervisor, undumpable once its program runs, is hidden from
    its own user: the /dev/shm sweep of any other corral start or `corral
    gc` took the live run for gone and removed its objects (found by a
    probing session). A supervisor whose pid still answers keeps them."""
    if subprocess.run(["unshare", "-m", "true"],
                      capture_output=True).returncode != 0:
        print("note: e2e/shm_of_a_live_run_survives_a_sweep_under_hidepid: "
              "no mount namespace here; not run", flush=True)
        return
    # The suite's own directories are root's alone: a place uid 65534
    # can reach, removed at the end.
    top = tempfile.mkdtemp(prefix="crhidepid.", dir="/tmp")
    os.chmod(top, 0o755)
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "env", "HOME=" + top, "TMPDIR=" + top]
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "victim.py"), "w") as f:
        f.write(SHM_VICTIM)
    for n in (top, ws, os.path.join(ws, "victim.py")):
        os.chown(n, 65534, 65534)
    p = t.spawn(drop + [CFG.corral, "run", "--json", "-w", ws, "--",
                        "python3", "victim.py"], native=True)
    try:
        true(wait_for(lambda: os.path.exists(os.path.join(ws, "ready")), 30),
             "the run made its object")
        gc = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             "mount -t proc -o hidepid=2 proc /proc && exec \"$@\"", "sh"] +
            drop + [CFG.corral, "gc"], capture_output=True, timeout=60)
        eq(gc.returncode, 0, "corral gc under hidepid (%r)" % gc.stderr)
        contains(gc.stdout.decode(), "0 /dev/shm object(s) of ended runs",
                 "corral gc")
        open(os.path.join(ws, "go"), "w").close()
    finally:
        open(os.path.join(ws, "go"), "a").close()
        run = t.finish(p, timeout=60, want_json=True)
        shutil.rmtree(top, ignore_errors=True)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%r)" % r.get("stderr"))
    eq(r.get("stdout"), "state kept\n", "the run's object is still there")
