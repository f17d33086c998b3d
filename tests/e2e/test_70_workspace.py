"""The workspace: given and kept, made and kept, or private and removed."""

import json
import os
import socket
import stat
import subprocess

import harness
from harness import CFG, eq, ne, true, test, mode_of, contains, not_contains


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
def workspace_private_removed_after_its_bits_went(t):
    """chmod(., 0) by the program: an earlier build could then open the
    workspace neither at cleanup nor in any later sweep or gc, so it
    stayed for good. The bits are given back on exactly that directory."""
    run = t.corral(["run", "--json", "--", "sh", "-c",
                    "pwd -P; mkdir -p d/e; echo x > d/e/f; chmod 0 d; "
                    "chmod 0 ."])
    r = t.result(run)
    eq(run.code, 0, "exit status")
    where = r.get("stdout", "").split("\n")[0]
    true(where.startswith(os.path.realpath(CFG.tmpdir)), "where %r" % where)
    gone = not os.path.exists(where)
    if not gone:
        os.chmod(where, 0o700)
    true(gone, "private workspace %s remains" % where)
    eq(r.get("cleanup", {}).get("workspace_removed"), True,
       "cleanup.workspace_removed")
    t.assert_next_run_ok()


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
    # The result's own name as the workspace or the output directory,
    # both made as directories after the check: the program ran and its
    # record was lost (found by a probing session). Refused first now.
    same = t.path("same.json")
    for extra in (["--workspace", same], ["--output-dir", same,
                                          "--output", "x"],
                  ["--workspace", same + "/"],
                  ["--output-dir", same + "//", "--output", "x"]):
        run = t.corral(["run", "--result", same] + extra +
                       ["--", "touch", marker])
        eq(run.code, 125, "%s: exit status (stderr %r)" % (extra, run.err))
        contains(run.err.decode(), "a directory corral makes", "the reason")
        eq(os.path.exists(same), False, "%s: nothing made" % extra)
    outside = t.path("res.json")
    run = t.corral(["run", "--workspace", ws, "--result", outside, "--",
                    "true"])
    eq(run.code, 0, "a result outside: exit status (stderr %r)" % run.err)
    with open(outside) as f:
        eq(json.load(f).get("status"), "ok", "the result's status")
    t.assert_next_run_ok()


# Given its stdin as fd 0, it writes a forged record there and shuts its
# side of the stream.
FORGE = r"""
import os, socket
os.write(0, b'{"schema":1,"status":"ok","exit_code":0,"stdout":"forged"}\n')
socket.socket(fileno=0).shutdown(socket.SHUT_WR)
"""


def _over_a_socketpair(corral, same_stdin):
    """corral with its stdout one end of a socketpair (and its stdin too,
    or /dev/null): (process, what the other end received, stderr)."""
    a, b = socket.socketpair()
    try:
        p = subprocess.Popen(corral, stdin=b if same_stdin else
                             subprocess.DEVNULL, stdout=b,
                             stderr=subprocess.PIPE)
        b.close()
        a.settimeout(60)
        got = b""
        while True:
            chunk = a.recv(65536)
            if not chunk:
                break
            got += chunk
        err = p.stderr.read()
        p.wait(timeout=60)
    finally:
        a.close()
    return p, got, err


@test
def json_record_on_a_stream_the_program_holds_as_stdin_refused(t):
    """corral's stdin and stdout one socket (inetd, a socketpair wired to
    stdio) with --json: the program held it as its stdin, wrote a forged
    record and shut its side, and the caller read that record alone while
    corral's own write failed with EPIPE and corral exited 0 (found by a
    probing session). Refused now (125, the program never runs); with
    another stdin the same stdout serves. And a record that cannot be
    written is corral's failure (125), as a --result file's is."""
    ws = t.path("ws")
    os.makedirs(ws)
    script = t.write("forge.py", FORGE)
    corral = [t.prog("nons"), CFG.corral] + harness.landlock_args(
        ["run", "--json", "--ro", t.tmp, "--workspace", ws, "--",
         "python3", script])
    p, got, err = _over_a_socketpair(corral, same_stdin=True)
    eq(p.returncode, 125, "exit status (stderr %r, stream %r)" % (err, got))
    contains(err.decode(), "stdin and stdout are one socket", "the reason")
    eq(got, b"", "what the caller's end received")
    # Another stdin: the record comes, corral's own.
    p, got, err = _over_a_socketpair(corral, same_stdin=False)
    r = json.loads(got.decode())
    true(r.get("task_id"), "corral's record (%r)" % got[:200])
    # A reader gone before the record: corral's failure, not the
    # program's 0.
    rd, wr = os.pipe()
    os.close(rd)
    p = subprocess.run(corral, stdin=subprocess.DEVNULL, stdout=wr,
                       stderr=subprocess.PIPE, timeout=60)
    os.close(wr)
    eq(p.returncode, 125, "a record that cannot be written: exit status "
       "(stderr %r)" % p.stderr)
    contains(p.stderr.decode(), "cannot write the result", "the reason")


@test
def json_record_on_stdout_the_program_could_write_refused(t):
    """--json writes the record on corral's stdout. With stdout a file in
    the workspace, the program wrote a forged record past where corral's
    would end, and a reader took the second document (found by a probing
    session); --result there was refused already. Refused the same way
    now (125, the program never runs), and so is a named pipe there, and
    a file whose name is too long to read back (a probing session moved
    such a file within reach during the run); a file outside works."""
    ws = t.path("ws")
    os.makedirs(ws)
    marker = os.path.join(ws, "ran")
    corral = [t.prog("nons"), CFG.corral] + harness.landlock_args(
        ["run", "--json", "--workspace", ws, "--", "touch", marker])
    inside = os.path.join(ws, "r.json")
    with open(inside, "w") as out:
        p = subprocess.run(corral, stdout=out, stderr=subprocess.PIPE,
                           timeout=60)
    eq(p.returncode, 125, "exit status (stderr %r)" % p.stderr)
    contains(p.stderr.decode(), "inside the workspace", "the reason")
    eq(os.path.getsize(inside), 0, "nothing written to it")
    eq(os.path.exists(marker), False, "the program never ran")
    # A named pipe there too (its reader takes whatever comes first; a
    # probing session's forged record came before corral's).
    fifo = os.path.join(ws, "rec")
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR)
    try:
        p = subprocess.run(corral, stdout=fd, stderr=subprocess.PIPE,
                           timeout=60)
    finally:
        os.close(fd)
    eq(p.returncode, 125, "a fifo: exit status (stderr %r)" % p.stderr)
    eq(os.path.exists(marker), False, "the program never ran")
    # A datagram socket connected to a reader bound in the workspace:
    # the program sent its own record to that name first.
    reader = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    writer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        reader.bind(os.path.join(ws, "reader"))
        writer.connect(os.path.join(ws, "reader"))
        p = subprocess.run(corral, stdout=writer.fileno(),
                           stderr=subprocess.PIPE, timeout=60)
    finally:
        reader.close()
        writer.close()
    eq(p.returncode, 125, "a socket whose peer is inside: exit status "
       "(stderr %r)" % p.stderr)
    eq(os.path.exists(marker), False, "the program never ran")
    # A file outside with a second name inside (a workspace made with
    # cp -al): judged by the name it was opened by, it passed.
    linked = t.path("linked.json")
    open(linked, "w").close()
    os.link(linked, os.path.join(ws, "linked.json"))
    with open(linked, "w") as out:
        p = subprocess.run(corral, stdout=out, stderr=subprocess.PIPE,
                           timeout=60)
    eq(p.returncode, 125, "a file with a name inside: exit status "
       "(stderr %r)" % p.stderr)
    eq(os.path.exists(marker), False, "the program never ran")
    outside = t.path("r.json")
    with open(outside, "w") as out:
        p = subprocess.run(corral, stdout=out, stderr=subprocess.PIPE,
                           timeout=60)
    eq(p.returncode, 0, "a file outside: exit status (stderr %r)" % p.stderr)
    with open(outside) as f:
        eq(json.load(f).get("status"), "ok", "the record's status")
    # In the output directory, with --output-overwrite: the program's
    # artifact of that name replaced the record; it is skipped now.
    od = t.path("od")
    os.mkdir(od)
    rec = os.path.join(od, "rec.json")
    with open(rec, "w") as out:
        p = subprocess.run(
            [t.prog("nons"), CFG.corral] + harness.landlock_args(
                ["run", "--json", "--workspace", t.path("ws2"),
                 "--output-dir", od, "--output", "*.json",
                 "--output-overwrite", "--", "sh", "-c",
                 "echo '{\"forged\": true}' > rec.json"]),
            stdout=out, stderr=subprocess.PIPE, timeout=60)
    eq(p.returncode, 0, "into the output directory: exit status "
       "(stderr %r)" % p.stderr)
    with open(rec) as f:
        r = json.load(f)
    eq((r.get("status"), r.get("forged")), ("ok", None),
       "the record in the output directory")
    t.assert_next_run_ok()


@test
def writable_root_holding_tmpdir_refused(t):
    """corral keeps every run's private workspace and its lock file in
    $TMPDIR. A --rw root that holds it (--rw /tmp with TMPDIR=/tmp) gave
    the program other runs' workspaces, and lock files whose list of
    /dev/shm objects the next run's sweep removed: a forged list deleted
    another program's object. Refused before anything runs; a root beside
    $TMPDIR works, and so does a workspace that is $TMPDIR."""
    tmp = t.path("tmp")
    os.makedirs(tmp)
    other = os.path.join(tmp, "corral-AbCdEf")   # another run's workspace
    os.makedirs(other, mode=0o700)
    with open(os.path.join(other, "secret"), "w") as f:
        f.write("theirs\n")
    env = {"TMPDIR": tmp}
    for opts in (["--rw", tmp], ["--rw", t.path("")]):
        run = t.corral(["run", "--json"] + opts + ["--", "cat",
                        os.path.join(other, "secret")], env=env)
        r = t.result(run)
        eq(r.get("status"), "policy_denied", "%s: status" % opts)
        contains(r.get("message") or "", "TMPDIR", "%s: the reason" % opts)
        eq(r.get("stdout") or "", "", "%s: the program never ran" % opts)
    beside = t.path("beside")
    os.makedirs(beside)
    run = t.corral(["run", "--json", "--rw", beside, "--", "true"], env=env)
    eq(t.result(run).get("status"), "ok", "a root beside $TMPDIR")
    # The workspace as TMPDIR (a harness's or an agent's scratch
    # directory) is the program's own space: it runs.
    run = t.corral(["run", "--json", "-w", tmp, "--", "true"], env=env)
    eq(t.result(run).get("status"), "ok", "-w the directory TMPDIR names")
    t.assert_next_run_ok()


@test
def forged_lock_list_cannot_sweep_a_foreign_shm_object(t):
    """The sweep of a dead run's lock file removed each /dev/shm object it
    listed that was the same inode and this user's. A lock file written by
    anyone but corral (reachable before the check above, or by any other
    program of the user) deleted another program's object. Where tmpfs
    has user xattrs every object corral makes is tagged, and an untagged
    one is left whatever a list says."""
    tagged = _tmpfs_has_user_xattrs()
    tmp = t.path("tmp")
    os.makedirs(os.path.join(tmp, "corral-QwErTy"))
    victim = "/dev/shm/%s-victim" % t.marker
    with open(victim, "w") as f:
        f.write("precious\n")
    try:
        ino = os.stat(victim).st_ino
        with open(os.path.join(tmp, "corral-QwErTy.lock"), "w") as f:
            f.write("%d %s\n" % (ino, os.path.basename(victim)))
        run = t.corral(["gc"], env={"TMPDIR": tmp})
        eq(run.code, 0, "corral gc (stderr %r)" % run.err)
        eq(os.path.exists(os.path.join(tmp, "corral-QwErTy")), False,
           "the dead run's workspace is swept")
        # Without user xattrs (tmpfs before 6.6) the list is the only
        # record of a killed run's objects, and is followed.
        eq(os.path.exists(victim), tagged, "the listed object that carries "
           "no tag of corral's is left (tmpfs xattrs: %s)" % tagged)
    finally:
        if os.path.exists(victim):
            os.unlink(victim)


def _tmpfs_has_user_xattrs():
    probe = "/dev/shm/.corral-xattr-probe-%d" % os.getpid()
    with open(probe, "w"):
        pass
    try:
        os.setxattr(probe, "user.probe", b"1")
        return True
    except OSError:
        return False
    finally:
        os.unlink(probe)


@test
def rw_root_named_through_a_link(t):
    """--rw LINK (a link to a directory) failed every run: the disk
    budget's walk opened the root without following links and reported
    the workspace's path as the one it could not measure. The root is
    walked at its real path now, as the rules grant it, and what the
    program writes through the link counts against the disk budget."""
    real = t.path("real")
    os.makedirs(real)
    link = t.path("link")
    os.symlink(real, link)
    run = t.corral(["run", "--json", "--rw", link, "--", "sh", "-c",
                    "echo hi > %s/f && cat %s/f" % (link, real)])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "hi\n"),
       "a write through the link (message %r)" % r.get("message"))
    run = t.corral(["run", "--json", "--rw", link, "--limit", "disk=1MiB",
                    "--", "sh", "-c",
                    "head -c 4194304 /dev/zero > %s/big; sleep 5" % link])
    r = t.result(run)
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "disk"),
       "4 MiB through the link under disk=1MiB")


# The program's probe of its workspace's top: every way to widen what other
# users may do there, and the narrowing ones that stay allowed. Prints one
# JSON object: each attempt's errno name (0: it worked) and the mode after.
_TOP_PROBE = r"""
import ctypes, errno, json, os, struct, sys
def ent(tag, perm, id=0xffffffff): return struct.pack('<HHI', tag, perm, id)
# A valid POSIX ACL (xattr version 2): user::rwx user:12345:r-x group::---
# mask::r-x other::---
acl = struct.pack('<I', 2) + ent(1, 7) + ent(2, 5, 12345) + ent(4, 0) + \
    ent(0x10, 5) + ent(0x20, 0)
libc = ctypes.CDLL(None, use_errno=True)
out = {}
def tr(k, f):
    try:
        f()
        out[k] = 0
    except OSError as e:
        out[k] = errno.errorcode.get(e.errno, e.errno)
def fchmodat2_empty(fd, mode):
    if libc.syscall(452, fd, b"", mode, 0x1000) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
top = sys.argv[1]
fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
start = os.stat(top).st_mode & 0o7777
tr('chmod', lambda: os.chmod(top, 0o755))
tr('chmod_dot', lambda: os.chmod('.', 0o777))
tr('fchmod', lambda: os.fchmod(fd, 0o705))
tr('fchmodat2_empty', lambda: fchmodat2_empty(fd, 0o770))
tr('chmod_procfd', lambda: os.chmod('/proc/self/fd/%d' % fd, 0o757))
tr('acl', lambda: os.setxattr(top, 'system.posix_acl_access', acl))
tr('default_acl_fd', lambda: os.setxattr(fd, 'system.posix_acl_default', acl))
tr('remove_acl', lambda: os.removexattr(top, 'system.posix_acl_access'))
tr('chown_same', lambda: os.chown(top, -1, -1))
tr('chgrp_other', lambda: os.chown(top, -1, 0))
tr('narrow', lambda: os.chmod(top, start & 0o700 & ~0o200))
tr('back', lambda: os.chmod(top, start))
tr('inside', lambda: (os.mkdir('d'), os.chmod('d', 0o755)))
out['mode'] = oct(os.stat(top).st_mode & 0o7777)
print(json.dumps(out))
"""

# Widening chmods succeed with the group and other bits the top did not
# have cleared (as set-user-ID bits are: `tar xf` of an archive holding
# "./" sets the mode of the directory it extracts into); the rest is EPERM.
_MASKED = ("chmod", "chmod_dot", "fchmod", "fchmodat2_empty", "chmod_procfd")
_REFUSED = ("acl", "default_acl_fd", "remove_acl", "chgrp_other")


def _check_top_probe(got, mode, where):
    for k in _REFUSED:
        eq(got.get(k), "EPERM", "%s on %s" % (k, where))
    for k in _MASKED + ("chown_same", "narrow", "back", "inside"):
        eq(got.get(k), 0, "%s on %s" % (k, where))
    eq(got.get("mode"), oct(mode), "the mode of %s after the attempts" % where)


def _top_probe(t, args):
    run = t.corral(["run", "--json"] + args)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    return r, json.loads(r["stdout"])


@test
def workspace_top_is_not_opened_to_others(t):
    """The program could chmod 0755 (or 0777) its private workspace, or set
    a POSIX ACL naming another user on it, and other local users read what
    it copied there; with 0777 another user could plant a directory the
    cleanup could not remove. The top of the workspace (of every writable
    root) never gains a group or other bit (cleared, the call succeeds, a
    denial), an ACL or another group (EPERM, a denial) now; narrowing it
    and everything inside stay the program's. The private workspace is
    removed as ever."""
    before = set(os.listdir(CFG.tmpdir))
    r, got = _top_probe(t, ["--", "python3", "-c", _TOP_PROBE, "."])
    _check_top_probe(got, 0o700, "the workspace's top")
    reasons = {d.get("reason") for d in r.get("denials") or []
               if d.get("layer") == "fs"}
    for why in ("gives group and other no more than it did",
                "access control lists", "owner and group"):
        true(any(why in (x or "") for x in reasons),
             "a denial saying %r: %s" % (why, sorted(map(str, reasons))))
    eq(r.get("cleanup", {}).get("workspace_removed"), True,
       "cleanup.workspace_removed")
    eq({e for e in os.listdir(CFG.tmpdir) if e.startswith("corral-")} -
       before, set(), "workspaces left in TMPDIR")
    t.assert_next_run_ok()


@test
def kept_workspace_top_keeps_its_mode_and_acl(t):
    """A kept workspace (-w DIR) keeps the access the caller gave it: a
    program cannot widen 0750 to 0755 nor leave a default ACL that would
    reach what later runs write there; group bits it had may come back."""
    ws = t.path("ws")
    os.mkdir(ws)
    os.chmod(ws, 0o750)
    r, got = _top_probe(t, ["--workspace", ws, "--", "python3", "-c",
                            _TOP_PROBE, ws])
    _check_top_probe(got, 0o750, "the kept workspace")
    eq(oct(mode_of(ws)), oct(0o750), "the kept workspace's mode")
    for name in ("system.posix_acl_access", "system.posix_acl_default"):
        try:
            os.getxattr(ws, name)
            true(False, "%s is set on the kept workspace" % name)
        except OSError as e:
            true(e.errno in (61, 95), "getxattr %s: %s" % (name, e))
    run = t.corral(["run", "--json", "--workspace", ws, "--", "sh", "-c",
                    "echo later > out.txt"])
    eq(t.result(run).get("status"), "ok", "a later run in the workspace")


@test
def workspace_top_narrowed_to_nothing_is_removed(t):
    """Narrowing the workspace's top stays allowed, but `chmod 000 .` left
    the private workspace on the host for good: the removal opened it for
    reading and failed, and `corral gc` failed on it every time after. It
    is opened by O_PATH and given back u+rwx now. The run's end gives the
    top its owner's bits back before the artifacts are collected, so a
    glob over it collects what is readable and names the directory the
    program left unreadable as skipped rather than drop it unsaid."""
    before = set(os.listdir(CFG.tmpdir))
    out = t.path("out")
    run = t.corral(["run", "--json", "--output", "*", "--output-dir", out,
                    "--", "sh", "-c",
                    "mkdir -p a/b && echo x > a.txt && chmod 000 a/b a . && "
                    "echo done"])
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "done\n"), "the run")
    eq(r.get("cleanup", {}).get("workspace_removed"), True,
       "cleanup.workspace_removed")
    eq({e for e in os.listdir(CFG.tmpdir) if e.startswith("corral-")} -
       before, set(), "workspaces left in TMPDIR")
    eq([(s["path"], "cannot be opened" in s["reason"])
        for s in r["artifacts_skipped"]], [("a", True)],
       "artifacts_skipped")
    true(os.path.exists(os.path.join(out, "a.txt")), "a.txt collected")


@test
def workspace_top_survives_tar_of_dot(t):
    """`tar xf` of an archive made with `tar cf x.tar -C dir .` sets the
    mode of "./", the directory it extracts into: 0755 on the private
    workspace. It still exits 0, the files are there, the top stays 0700
    (a refusal made tar exit 2)."""
    src = t.path("src")
    os.mkdir(src, 0o755)
    t.write("src/a.txt", "a\n")
    arch = t.path("x.tar")
    import tarfile
    with tarfile.open(arch, "w") as tf:
        tf.add(src, arcname=".")
    run = t.corral(["run", "--json", "--ro", arch, "--", "sh", "-c",
                    "tar xf %s; echo rc=$?; cat a.txt; stat -c %%a ." % arch])
    r = t.result(run)
    eq(r.get("stdout"), "rc=0\na\n700\n", "tar's status, the file, the mode "
       "(stderr %r)" % r.get("stderr"))


@test
def given_workspace_gets_its_owner_bits_back(t):
    """A program may narrow its workspace's top (chmod 0 .), but a
    workspace given with -w left without its owner's bits made every later
    run in it a platform_failure (found by a probing session): the run's
    end gives the owner's bits back as the run found them, and only
    those."""
    ws = t.path("ws")
    os.makedirs(ws)
    os.chmod(ws, 0o750)
    run = t.corral(["run", "--json", "-w", ws, "--", "sh", "-c",
                    "chmod 0 . && echo narrowed"])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%r)" % r.get("message"))
    eq(r.get("stdout"), "narrowed\n", "stdout")
    eq(stat.S_IMODE(os.stat(ws).st_mode), 0o700,
       "the owner's bits back, the others' as the program left them")
    run = t.corral(["run", "--json", "-w", ws, "--", "sh", "-c",
                    "echo x > f && cat f"])
    r = t.result(run)
    eq(r.get("status"), "ok", "the next run in it (%r)" % r.get("message"))
    eq(r.get("stdout"), "x\n", "the next run's stdout")


@test
def json_record_file_is_the_callers_not_the_programs(t):
    """The file --json writes to (`>> records.jsonl`) in a directory the
    program may read held every earlier run's whole record, stdout
    included, and the program read it; with the same file as --audit,
    the record went after the chain and `corral audit verify` failed
    (found by a probing session). The file is absent to the program, as
    --result's and the trail's are, and the trail is refused as stdout."""
    recs = t.path("recs")
    os.makedirs(recs)
    out = os.path.join(recs, "results.jsonl")
    with open(out, "w") as f:
        f.write('{"stdout": "EARLIER-RECORD"}\n')
    corral = [t.prog("nons"), CFG.corral] + harness.landlock_args(
        ["run", "--json", "--ro", recs, "--", "sh", "-c",
         "ls %s; cat %s; true" % (recs, out)])
    with open(out, "a") as f:
        p = subprocess.run(corral, stdout=f, stderr=subprocess.PIPE,
                           timeout=60)
    eq(p.returncode, 0, "exit status (stderr %r)" % p.stderr)
    with open(out) as f:
        lines = f.read().splitlines()
    r = json.loads(lines[-1])
    not_contains(r.get("stdout", ""), "EARLIER-RECORD", "what the program read")
    not_contains(r.get("stdout", ""), "results.jsonl", "what the program listed")
    audit = t.path("a.jsonl")
    ok = t.corral(["run", "--audit", audit, "--", "true"])
    eq(ok.code, 0, "an earlier run on the trail (stderr %r)" % ok.err)
    corral = [t.prog("nons"), CFG.corral] + harness.landlock_args(
        ["run", "--json", "--audit", audit, "--", "true"])
    with open(audit, "a") as f:
        p = subprocess.run(corral, stdout=f, stderr=subprocess.PIPE,
                           timeout=60)
    eq(p.returncode, 125, "--json onto the trail (stderr %r)" % p.stderr)
    v = t.corral(["audit", "verify", audit])
    eq(v.code, 0, "the trail verifies (stdout %r)" % v.out)
    t.assert_next_run_ok()
