"""Filesystem confinement, attacked: each test tries to reach a fake home
outside the sandbox (a secret file, an SSH key, a sentinel) or to change a
read root, and asserts what the seeds demand: the attempt failed with the
right errno, the denial is in the result at the expected layer, the secret
is in no output and nowhere in the workspace, the sentinel is unchanged, and
the next run still works.

Layout of every test (all under the test's own directory T, itself under
the suite's TMPDIR):

    T/ws        the workspace (-w), read-write-exec
    T/home      the fake home: secret.txt, .ssh/id_rsa, sentinel
    T/ro        a --ro root with a file in it (when the test needs one)

T is an ancestor of the workspace (stat-able, traversable, not listable);
T/home is a sibling of the workspace, so outside every root.

The helpers here (FsFix, want_denial, ...) are shared with test_d1/test_d2.
"""

import errno
import hashlib
import json
import os
import secrets
import shlex
import shutil
import stat
import subprocess

from harness import (CFG, Fail, eq, true, contains, not_contains, test,
                     check_result_shape, _show)

FS_STATUSES = ("ok", "program_error")


def real(p):
    return os.path.realpath(p)


class FsFix:
    """The fake home, the workspace and the checks made after every run."""

    def __init__(self, t, ro=False):
        self.t = t
        self.root = real(t.tmp)
        self.ws = os.path.join(self.root, "ws")
        self.home = os.path.join(self.root, "home")
        os.mkdir(self.ws, 0o700)
        os.mkdir(self.home, 0o700)
        os.mkdir(os.path.join(self.home, ".ssh"), 0o700)
        # Random, never on a command line: it can only reach an output by
        # being read from the fake home.
        self.secret = "TOPSECRET-" + secrets.token_hex(16)
        self.secret_path = os.path.join(self.home, "secret.txt")
        self.key_path = os.path.join(self.home, ".ssh", "id_rsa")
        self.sentinel = os.path.join(self.home, "sentinel")
        self._put(self.secret_path, "password=%s\n" % self.secret, 0o600)
        self._put(self.key_path,
                  "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n"
                  "-----END OPENSSH PRIVATE KEY-----\n" % self.secret, 0o600)
        self._put(self.sentinel, "sentinel-%s\n" % secrets.token_hex(8),
                  0o640)
        os.utime(self.sentinel, ns=(1_000_000_000 * 10**9,
                                    1_000_000_000 * 10**9))
        st = os.stat(self.secret_path)
        self.secret_id = "%d:%d:%d" % (os.major(st.st_dev),
                                       os.minor(st.st_dev), st.st_ino)
        self.ro = None
        if ro:
            self.ro = os.path.join(self.root, "ro")
            os.mkdir(self.ro, 0o755)
            self.ro_file = os.path.join(self.ro, "f.txt")
            self._put(self.ro_file, "read-only content\n", 0o644)
            self.ro_snap = snapshot(self.ro)
        self.snap = snapshot(self.home)
        self.runs = []
        # Outside the workspace and the fake home: corral writes it.
        self.audit = os.path.join(self.root, "audit.jsonl")

    @staticmethod
    def _put(path, text, mode):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    def wsp(self, *parts):
        return os.path.join(self.ws, *parts)

    # -- running --
    def run(self, cmd, opts=(), json_out=True, **kw):
        """corral run [--json] -w WS OPTS -- CMD; remembered for check()."""
        args = ["run"] + (["--json"] if json_out else []) + \
            ["-w", self.ws, "--audit", self.audit] + list(opts) + \
            ["--"] + list(cmd)
        run = self.t.corral(args, **kw)
        self.runs.append(run)
        return run

    def sh(self, script, opts=(), **kw):
        return self.run(["sh", "-c", script], opts=opts, **kw)

    def probe(self, ops, opts=(), **kw):
        return self.run([self.t.prog("fs_probe")] + list(ops),
                        opts=list(self.t.prog_roots()) + list(opts), **kw)

    def native(self, argv, **kw):
        """argv run natively with the workspace as cwd (the differential
        check that an attack would reach the secret without corral)."""
        ws = self.ws

        def pre():
            os.chdir(ws)
        return self.t.native(argv, preexec=pre, **kw)

    def result(self, run, statuses=FS_STATUSES):
        r = self.t.result(run)
        check_result_shape(r)
        if statuses:
            true(r.get("status") in statuses,
                 "status: got %r, want one of %r (message %r)" % (
                     r.get("status"), statuses, r.get("message")))
        return r

    # -- the checks every attack ends with --
    def check(self, next_run=True):
        for run in self.runs:
            for what, data in (("stdout", run.out), ("stderr", run.err)):
                if self.secret.encode() in data:
                    raise Fail("the secret appears in corral's %s (%s)" % (
                        what, " ".join(run.argv)[-300:]))
        try:
            with open(self.audit, "rb") as f:
                if self.secret.encode() in f.read():
                    raise Fail("the secret appears in the audit stream")
        except FileNotFoundError:
            pass
        for base, dirs, files in os.walk(self.ws):
            for n in files + dirs:
                p = os.path.join(base, n)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                try:
                    with open(p, "rb") as f:
                        data = f.read(1 << 22)
                except OSError:
                    continue
                if self.secret.encode() in data:
                    raise Fail("the secret was copied into the workspace: "
                               "%s" % p)
        now = snapshot(self.home)
        if now != self.snap:
            raise Fail("the fake home changed: %s" % _diff(self.snap, now))
        if self.ro is not None:
            now = snapshot(self.ro)
            if now != self.ro_snap:
                raise Fail("the --ro root changed: %s" % _diff(self.ro_snap,
                                                               now))
        if next_run:
            self.t.assert_next_run_ok()


def snapshot(top):
    """Everything observable about a tree: per entry its type, mode, size,
    mtime, owner and content digest (or link target)."""
    snap = {}
    for base, dirs, files in os.walk(top):
        for n in [""] + dirs + files:
            p = os.path.join(base, n) if n else base
            if not n and base != top:
                continue
            st = os.lstat(p)
            item = [stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                    st.st_uid, st.st_nlink]
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    item += [st.st_size, st.st_mtime_ns,
                             hashlib.sha256(f.read()).hexdigest()]
            elif stat.S_ISLNK(st.st_mode):
                item.append(os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                item.append(sorted(os.listdir(p)))
            snap[os.path.relpath(p, top)] = item
    return snap


def _diff(a, b):
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            out.append("%s: %r -> %r" % (k, a.get(k), b.get(k)))
    return "; ".join(out)[:800]


def denials(r, layers=None):
    ds = r.get("denials") or []
    return [d for d in ds if isinstance(d, dict) and
            (layers is None or d.get("layer") in layers)]


def under(path, top):
    """path is top or below it (both absolute, normal)."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def want_denial(r, layers=("fs",), targets=None, syscalls=None,
                target_prefix=None, floor=None, what="denial"):
    """Some denial of one of these layers, with one of these targets (or a
    target at or below target_prefix) and syscalls (None: any). With floor,
    a target that is an ancestor of a wanted one, at or below floor (the
    first component the walk found outside the roots, e.g. the fake home),
    also matches: the exact full path is asserted once, in
    fs_denial_target_full_path. Checks the denial's fields; returns it."""
    ds = denials(r, layers)
    for d in ds:
        tg = str(d.get("target") or "")
        if targets is not None and tg not in targets and not (
                floor and under(tg, floor) and
                any(under(w, tg) for w in targets)):
            continue
        if target_prefix is not None and not under(tg, target_prefix):
            continue
        if syscalls is not None and d.get("syscall") not in syscalls:
            continue
        true(isinstance(d.get("syscall"), str) and d["syscall"],
             "%s: syscall: want a name, got %r" % (what, d))
        true(isinstance(d.get("reason"), str) and d["reason"],
             "%s: reason: want a sentence, got %r" % (what, d))
        true(isinstance(d.get("pid"), int), "%s: pid: want an integer, got"
             " %r" % (what, d))
        return d
    raise Fail("%s: no denial with layer in %r, target %s, syscall in %r; "
               "the result's denials: %s" % (
                   what, layers,
                   ("in %r" % (targets,)) if targets is not None else
                   ("at or below %r" % target_prefix) if target_prefix else
                   "any", syscalls, _show(r.get("denials"), 900)))


def lines_of(text):
    """'OP ARG: RESULT' lines of fs_probe or PYOPS as {OP ARG: RESULT}."""
    d = {}
    for line in text.splitlines():
        k, sep, v = line.partition(": ")
        if sep:
            d[k] = v
    return d


def want_line(res, key, want, what=None):
    """res[key] starts with want ("ok" or an errno name)."""
    got = res.get(key)
    if got is None or not (got == want or got.startswith(want + " ")):
        raise Fail("%s: got %r, want %r (all: %s)" % (
            what or key, got, want, _show(res, 900)))


# Python operations, one line each: "LABEL: ok" or "LABEL: ERRNO".
PYOPS = r'''
import errno, json, os, sys
for label, op, *a in json.loads(sys.argv[1]):
    try:
        if op == "open_w":
            os.close(os.open(a[0], os.O_WRONLY))
        elif op == "open_trunc":
            os.close(os.open(a[0], os.O_WRONLY | os.O_TRUNC))
        elif op == "open_append":
            fd = os.open(a[0], os.O_WRONLY | os.O_APPEND)
            os.write(fd, b"appended\n"); os.close(fd)
        elif op == "create":
            os.close(os.open(a[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        elif op == "truncate":
            os.truncate(a[0], 0)
        elif op == "chmod":
            os.chmod(a[0], 0o777)
        elif op == "chown":
            os.chown(a[0], os.getuid(), os.getgid())
        elif op == "utime":
            os.utime(a[0], (0, 0))
        elif op == "rename":
            os.rename(a[0], a[1])
        elif op == "unlink":
            os.unlink(a[0])
        elif op == "mkdir":
            os.mkdir(a[0])
        elif op == "rmdir":
            os.rmdir(a[0])
        elif op == "link":
            os.link(a[0], a[1])
        elif op == "symlink":
            os.symlink(a[0], a[1])
        elif op == "setxattr":
            os.setxattr(a[0], "user.corral", b"x")
        elif op == "stat":
            os.stat(a[0])
        elif op == "listdir":
            os.listdir(a[0])
        elif op == "read":
            with open(a[0], "rb") as f:
                data = f.read(200)
            print("%s: ok %s" % (label, data.decode("ascii", "replace").strip()))
            continue
        else:
            print("%s: bad-op" % label)
            continue
        print("%s: ok" % label)
    except OSError as e:
        print("%s: %s" % (label, errno.errorcode.get(e.errno, e.errno)))
sys.stdout.flush()
'''


def pyops(fx, ops, opts=(), **kw):
    """Run PYOPS under corral; returns (run, result, {label: outcome})."""
    run = fx.run(["python3", "-c", PYOPS, json.dumps(ops)], opts=opts, **kw)
    r = fx.result(run)
    return run, r, lines_of(r.get("stdout", ""))


def q(s):
    return shlex.quote(s)


# ---------------------------------------------------------------------------
# Reading the secret


@test
def fs_read_secret_absolute(t):
    fx = FsFix(t)
    nat = fx.native(["cat", fx.secret_path, fx.key_path])
    contains(nat.out.decode(), fx.secret, "native cat (test setup)")
    run = fx.sh("cat %s; echo rc=$?; cat %s; echo rc=$?; ls %s; echo rc=$?"
                % (q(fx.secret_path), q(fx.key_path), q(fx.home)))
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\nrc=2\n", "stdout")
    err = r.get("stderr", "")
    # Outside every root looks like absence, and is still recorded.
    contains(err, "%s: No such file or directory" % fx.secret_path, "stderr")
    contains(err, "%s: No such file or directory" % fx.key_path, "stderr")
    d = want_denial(r, targets=(fx.secret_path,), floor=fx.home,
                    syscalls=("openat", "open"), what="secret.txt")
    true(d.get("syscall") == "openat", "cat's call is openat: %r" % d)
    want_denial(r, targets=(fx.key_path,), floor=fx.home, what="id_rsa")
    want_denial(r, targets=(fx.home,), what="ls of the fake home")
    fx.check()


@test
def fs_denial_target_full_path(t):
    """The contract's example: a denial names the path the program reached,
    fully resolved ("/home/u/.ssh/id_rsa"), not only the first component
    the walk found outside the roots."""
    fx = FsFix(t)
    os.symlink(fx.key_path, fx.wsp("k"))
    run = fx.sh("cat %s; cat ../home/secret.txt; cat k; true"
                % q(fx.key_path))
    r = fx.result(run)
    targets = [d.get("target") for d in denials(r, ("fs",))]
    for want, how in ((fx.key_path, "absolute"),
                      (fx.secret_path, "../home/secret.txt"),
                      (fx.key_path, "through the symlink k")):
        true(want in targets, "%s: no denial names %r; fs denial targets: "
             "%s" % (how, want, _show(targets, 900)))
    fx.check()


@test
def fs_read_secret_dotdot(t):
    fx = FsFix(t)
    nat = fx.native(["cat", "../home/secret.txt"])
    contains(nat.out.decode(), fx.secret, "native cat (test setup)")
    run = fx.sh("cat ../home/secret.txt; echo rc=$?; "
                "cat ./../ws/../home/.ssh/id_rsa; echo rc=$?; "
                "cd .. && cat home/secret.txt; echo rc=$?")
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\nrc=1\n", "stdout")
    contains(r.get("stderr", ""), "No such file or directory", "stderr")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="../home/secret.txt")
    want_denial(r, targets=(fx.key_path,), floor=fx.home, what="../home/.ssh/id_rsa")
    fx.check()


@test
def fs_read_secret_hidden(t):
    """A class with "hide": true answers ENOENT outside its roots."""
    fx = FsFix(t)
    src = os.path.join(CFG.policy_dir, "default.json")
    with open(src) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["hide"] = True
    pfile = os.path.join(fx.root, "hide.json")
    with open(pfile, "w") as f:
        json.dump(pol, f, indent=1)
    run = fx.sh("cat %s; echo rc=$?; cat ../home/.ssh/id_rsa; echo rc=$?; "
                "test -e %s && echo visible || echo invisible; "
                "cat /usr/bin/true >/dev/null && echo root-readable"
                % (q(fx.secret_path), q(fx.home)),
                opts=["--policy", pfile])
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\ninvisible\nroot-readable\n", "stdout")
    err = r.get("stderr", "")
    contains(err, "%s: No such file or directory" % fx.secret_path,
             "stderr")
    not_contains(err, "Permission denied", "stderr")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="hidden secret.txt")
    fx.check()


@test
def fs_ancestors_list_only_the_way_in(t):
    """An ancestor of a root can be listed, as natively, but shows only
    the entries that lead into a root: T shows ws, never home (the fake
    home, outside every root), / shows no home or root."""
    fx = FsFix(t)
    run = fx.sh(
        "stat -c %%F / %s; echo rc=$?; ls / | tr '\\n' ' '; echo; "
        "ls -a %s | tr '\\n' ' '; echo; ls .. | tr '\\n' ' '; echo; "
        "cd %s && cd ws && pwd -P; "
        "python3 -c 'import os; print(sorted(os.listdir(\"..\")))'"
        % (q(fx.root), q(fx.root), q(fx.root)))
    r = fx.result(run)
    out = r.get("stdout", "").split("\n")
    eq(out[:3], ["directory", "directory", "rc=0"], "stat of / and T")
    root_ls = out[3].split()
    true("usr" in root_ls and "tmp" in root_ls, "ls /: %r" % root_ls)
    for name in ("home", "root", "run", "boot", "srv", "mnt", "opt"):
        true(name not in root_ls, "ls / shows %s: %r" % (name, root_ls))
    eq(out[4].split(), [".", "..", "ws"], "ls -a T")
    eq(out[5].split(), ["ws"], "ls ..")
    eq(out[6], fx.ws, "cd T/ws")
    eq(out[7], "['ws']", "os.listdir('..')")
    not_contains(r.get("stderr", ""), "Permission denied", "stderr")
    fx.check()


# ---------------------------------------------------------------------------
# Changing a read root


@test
def fs_readroot_write(t):
    fx = FsFix(t, ro=True)
    f = fx.ro_file
    ops = [
        ["read", "read", f],
        ["open_w", "open_w", f],
        ["open_trunc", "open_trunc", f],
        ["open_append", "open_append", f],
        ["truncate", "truncate", f],
        ["chmod", "chmod", f],
        ["utime", "utime", f],
        ["rename", "rename", f, os.path.join(fx.ro, "g.txt")],
        ["rename_to_ws", "rename", f, fx.wsp("stolen.txt")],
        ["unlink", "unlink", f],
        ["create", "create", os.path.join(fx.ro, "new.txt")],
        ["mkdir", "mkdir", os.path.join(fx.ro, "d")],
        ["symlink", "symlink", "/etc/passwd", os.path.join(fx.ro, "l")],
        ["link", "link", f, os.path.join(fx.ro, "hl")],
        ["setxattr", "setxattr", f],
        ["usr_true_w", "open_w", "/usr/bin/true"],
        ["usr_bin_create", "create", "/usr/bin/corral-test-" + t.marker],
    ]
    junk = "/usr/bin/corral-test-" + t.marker
    try:
        run, r, res = pyops(fx, ops, opts=["--ro", fx.ro])
    finally:
        if os.path.lexists(junk):  # only possible as root, when it failed
            os.unlink(junk)
    want_line(res, "read", "ok read-only content")
    for label, *_ in ops[1:]:
        want_line(res, label, "EACCES")
    want_denial(r, targets=(f,), what="writes to the --ro file")
    want_denial(r, targets=("/usr/bin/true",), what="open /usr/bin/true "
                "for writing")
    want_denial(r, targets=(os.path.join(fx.ro, "new.txt"),),
                what="create in the --ro dir")
    # Denials are recorded once per (syscall, layer, reason, target) with a
    # count: the refused operations add up across the counts.
    n = sum(d.get("count", 1) for d in denials(r, ("fs",)))
    true(n >= len(ops) - 1 or r.get("denials_dropped", 0) > 0,
         "want a denial per refused operation (%d), got %d: %s" % (
             len(ops) - 1, n, _show(r.get("denials"), 900)))
    true(not os.path.exists(fx.wsp("stolen.txt")), "rename into the "
         "workspace moved the read-only file")
    fx.check()


# ---------------------------------------------------------------------------
# Symlinks


@test
def fs_symlink_made_in_run(t):
    fx = FsFix(t)
    run = fx.sh("ln -s %s link; echo ln=$?; cat link; echo rc=$?; "
                "ln -s %s dlink; cat dlink/secret.txt; echo rc=$?; "
                "ls dlink/; echo rc=$?; "
                "ln -s %s/newfile wlink; "
                "if echo x > wlink; then echo w=ok; else echo w=fail; fi"
                % (q(fx.secret_path), q(fx.home), q(fx.home)))
    r = fx.result(run)
    eq(r.get("stdout"), "ln=0\nrc=1\nrc=1\nrc=2\nw=fail\n", "stdout")
    contains(r.get("stderr", ""), "No such file or directory", "stderr")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="cat link")
    true(not os.path.exists(os.path.join(fx.home, "newfile")),
         "writing through a symlink created a file in the fake home")
    fx.check()


@test
def fs_symlink_made_before(t):
    fx = FsFix(t, ro=True)
    os.symlink(fx.secret_path, fx.wsp("link"))
    os.symlink(fx.home, fx.wsp("dlink"))
    os.symlink(fx.ro_file, fx.wsp("rolink"))
    os.symlink(os.path.join(fx.home, "sentinel"), fx.wsp("slink"))
    nat = fx.native(["cat", "link", "dlink/.ssh/id_rsa"])
    contains(nat.out.decode(), fx.secret, "native cat (test setup)")
    ops = [
        ["link", "read", "link"],
        ["dlink_key", "read", "dlink/.ssh/id_rsa"],
        ["dlink_list", "listdir", "dlink"],
        ["slink_w", "open_w", "slink"],
        ["slink_trunc", "truncate", "slink"],
        ["slink_chmod", "chmod", "slink"],
        ["rolink_r", "read", "rolink"],
        ["rolink_w", "open_w", "rolink"],
        ["rolink_trunc", "truncate", "rolink"],
        ["abs_link", "read", fx.wsp("link")],
    ]
    run, r, res = pyops(fx, ops, opts=["--ro", fx.ro])
    for label in ("link", "dlink_key", "dlink_list", "slink_w",
                  "slink_trunc", "slink_chmod", "abs_link"):
        want_line(res, label, "ENOENT")
    for label in ("rolink_w", "rolink_trunc"):  # visible, read-only
        want_line(res, label, "EACCES")
    want_line(res, "rolink_r", "ok read-only content")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="read through link")
    want_denial(r, targets=(fx.key_path,), floor=fx.home, what="read through dlink")
    want_denial(r, targets=(fx.sentinel,), floor=fx.home, what="write through slink")
    want_denial(r, targets=(fx.ro_file,), what="write through rolink")
    fx.check()


@test
def fs_symlink_relative_chain(t):
    fx = FsFix(t)
    os.makedirs(fx.wsp("d1", "d2"))
    # c1 -> d1/c2 -> d1/d2/c3 -> ../../../home: three hops, each relative,
    # the last one climbing out of the workspace.
    os.symlink("d1/c2", fx.wsp("c1"))
    os.symlink("d2/c3", fx.wsp("d1", "c2"))
    os.symlink("../../../home", fx.wsp("d1", "d2", "c3"))
    # a -> b/../.. : T, the workspace's parent.
    os.mkdir(fx.wsp("b"))
    os.symlink("b/../..", fx.wsp("a"))
    # up -> .., then up/up/... climbing one step per hop through a chain
    os.symlink("..", fx.wsp("d1", "up"))
    os.symlink("d1/up/d1/up/../home", fx.wsp("zig"))
    nat = fx.native(["cat", "c1/secret.txt", "a/home/secret.txt",
                     "zig/secret.txt"])
    eq(nat.out.decode().count(fx.secret), 3, "native cat (test setup): "
       "secrets read")
    run = fx.sh("for p in c1/secret.txt a/home/secret.txt zig/secret.txt "
                "c1/.ssh/id_rsa; do cat $p; echo rc=$?; done; "
                "ls a/; echo ls=$?")
    r = fx.result(run)
    # a/ is T, an ancestor: listed with only the way into the workspace.
    eq(r.get("stdout"), "rc=1\nrc=1\nrc=1\nrc=1\nws\nls=0\n", "stdout")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="symlink chain")
    want_denial(r, targets=(fx.key_path,), floor=fx.home, what="c1/.ssh/id_rsa")
    fx.check()


@test
def fs_symlink_loop(t):
    fx = FsFix(t)
    run = fx.sh("ln -s loop loop; cat loop; echo rc=$?; "
                "ln -s b2 a2; ln -s a2 b2; cat a2; echo rc=$?; "
                "python3 -c 'import os\ntry:\n os.open(\"loop\", os.O_RDONLY)"
                "\nexcept OSError as e: print(e.errno)'")
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\n%d\n" % errno.ELOOP, "stdout")
    err = r.get("stderr", "")
    contains(err, "cat: loop: Too many levels of symbolic links", "stderr")
    contains(err, "cat: a2: Too many levels of symbolic links", "stderr")
    fx.check()


LONG_WALK = r"""
import errno, os, subprocess, sys
os.mkdir("a")
open("f", "w").write("x")
# links of ~600 "a/../" steps each, chained; the last leads to f
steps = "a/../" * 600
def chain(name, n):
    prev = "f"
    for i in range(n, 0, -1):
        os.symlink(steps + prev, "%s%d" % (name, i))
        prev = "%s%d" % (name, i)
chain("s", 3)
chain("l", 10)
for p in ("s1", "l1"):
    try:
        print(p, open(p).read())
    except OSError as e:
        print(p, errno.errorcode[e.errno])
# scripts whose interpreters are scripts named through 3 such links each
# (3 600 steps a level): an exec walks them all
ws = os.getcwd()
def scripts(levels):
    for i in range(levels):
        name = "x%d_%d" % (levels, i)
        interp = ("/bin/sh" if i == levels - 1 else
                  "%s/i%d_%d" % (ws, levels, i + 1))
        with open(name, "w") as f:
            f.write("#!%s\necho level %d\n" % (interp, i))
        os.chmod(name, 0o755)
        if i:
            prev = name
            for k in (3, 2, 1):
                link = "i%d_%d" % (levels, i) + ("" if k == 1 else "_%d" % k)
                os.symlink(steps + prev, link)
                prev = link
for levels in (2, 4):
    scripts(levels)
    try:
        out = subprocess.run(["./x%d_0" % levels], capture_output=True)
        print("exec", levels, out.stdout.decode().strip())
    except OSError as e:
        print("exec", levels, errno.errorcode[e.errno])
"""


@test
def fs_long_walks_end_and_are_charged(t):
    """A path whose links make the walk thousands of components long
    (the kernel allows 40 links of PATH_MAX each): corral walks each
    component itself, at ~1.3 us a step here, so an exec naming
    interpreters through such chains held its one loop 0.5 s of CPU and
    every budget behind it (found by a probing session). A walk past
    4096 components now ends ELOOP, and its CPU from the 256th is the
    run's. Natively both open; under corral the 1 800-step walk opens
    and the 6 000-step one is ELOOP."""
    fx = FsFix(t)
    nat = fx.native(["python3", "-c", LONG_WALK])
    eq(nat.out.decode(), "s1 x\nl1 x\nexec 2 level 1\nexec 4 level 3\n",
       "native (premise)")
    for name in os.listdir(fx.ws):
        p = os.path.join(fx.ws, name)
        if os.path.islink(p) or os.path.isfile(p):
            os.unlink(p)
        else:
            shutil.rmtree(p)
    r = fx.result(fx.run(["python3", "-c", LONG_WALK]))
    eq(r.get("stdout"), "s1 x\nl1 ELOOP\nexec 2 level 1\nexec 4 EACCES\n",
       "under corral (stderr %r)" % r.get("stderr"))
    true(any(d.get("syscall") == "execve" and
             "could not be judged" in (d.get("reason") or "")
             for d in r.get("denials", [])),
         "the refused exec is recorded: %r" % r.get("denials"))
    eq(r.get("status"), "ok", "status")
    fx.check()


@test
def fs_walks_of_hundreds_of_steps_are_charged(t):
    """A path of ~200 components ("d/../" a hundred times) walked in a
    loop: each stat cost corral ~0.9 ms and the program almost nothing,
    and walks under 256 components were not charged (a probing session:
    corral 8.3 s of CPU under cpu=2s, the run ok). From the 32nd
    component a walk's CPU is the run's."""
    fx = FsFix(t)
    os.makedirs(fx.wsp("d"), exist_ok=True)
    with open(fx.wsp("f"), "w") as f:
        f.write("x")
    prog = ("import os, time\n"
            "p = 'd/../' * 100 + 'f'\n"
            "end = time.time() + 10\n"
            "while time.time() < end:\n"
            "    os.stat(p)\n"
            "print('walked')\n")
    r = fx.result(fx.run(["python3", "-c", prog],
                         opts=["--limit", "cpu=1s", "--limit", "wall=30s"]),
                  statuses=None)
    eq((r.get("status"), r.get("limit")), ("limit_exceeded", "cpu"),
       "verdict (stdout %r, usage %s)" % (r.get("stdout"), r.get("usage")))
    fx.check()


# ---------------------------------------------------------------------------
# Links and renames across the boundary


@test
def fs_hardlink_to_secret(t):
    fx = FsFix(t)
    run = fx.sh("ln %s hl; echo rc=$?; cat hl; echo rc=$?; "
                "ln %s/.ssh/id_rsa %s/hl2 2>/dev/null; echo rc=$?"
                % (q(fx.secret_path), q(fx.home), q(fx.ws)))
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\nrc=1\n", "stdout")
    contains(r.get("stderr", ""), "No such file or directory", "stderr")
    true(not os.path.lexists(fx.wsp("hl")), "the hard link was made")
    true(not os.path.lexists(fx.wsp("hl2")), "the hard link was made")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home,
                syscalls=("link", "linkat"), what="ln secret hl")
    fx.check()


@test
def fs_rename_across_boundary(t):
    fx = FsFix(t)
    with open(fx.wsp("f"), "w") as f:
        f.write("workspace file\n")
    outside = os.path.join(fx.home, "f")
    ops = [
        ["out", "rename", "f", outside],
        ["out_abs", "rename", fx.wsp("f"), outside],
        ["in", "rename", fx.secret_path, fx.wsp("got")],
        ["link_out", "link", "f", outside],
        ["symlink_out", "symlink", "/etc/passwd", os.path.join(fx.home,
                                                               "l")],
        ["mkdir_out", "mkdir", os.path.join(fx.home, "d")],
        ["unlink_out", "unlink", fx.sentinel],
        ["create_out", "create", os.path.join(fx.home, "new")],
    ]
    run, r, res = pyops(fx, ops)
    for label, *_ in ops:
        want_line(res, label, "ENOENT")
    run2 = fx.sh("mv f %s; echo rc=$?" % q(outside))
    r2 = fx.result(run2)
    true(r2.get("stdout", "").startswith("rc=") and
         r2.get("stdout") != "rc=0\n", "mv to outside: %r" % r2.get("stdout"))
    with open(fx.wsp("f")) as f:
        eq(f.read(), "workspace file\n", "the workspace file after the mv")
    true(not os.path.lexists(outside), "the file reached the fake home")
    true(not os.path.lexists(fx.wsp("got")), "the secret was moved in")
    want_denial(r, targets=(outside,), floor=fx.home, what="rename to the fake home")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="rename from the fake "
                "home")
    fx.check()


# ---------------------------------------------------------------------------
# Through /proc


@test
def fs_proc_self_escapes(t):
    fx = FsFix(t)
    paths = ["/proc/self/root" + fx.secret_path,
             "/proc/thread-self/root" + fx.secret_path,
             "/proc/self/cwd/../home/secret.txt",
             "/proc/self/root/proc/self/root" + fx.key_path]
    nat = fx.native(["cat"] + paths)
    eq(nat.out.decode().count(fx.secret), 4, "native cat (test setup)")
    script = "".join("cat %s; echo rc=$?; " % q(p) for p in paths)
    script += ("exec 3<.; cat /proc/self/fd/3/../home/secret.txt; "
               "echo rc=$?; cat /proc/$$/cwd/../home/secret.txt; echo rc=$?")
    run = fx.sh(script)
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\n" * 6, "stdout")
    want_denial(r, layers=("fs", "proc"),
                targets=(fx.secret_path,) + tuple(paths), floor=fx.home,
                what="/proc/self/root/...")
    fx.check()


def _corral_probe_script(fx, tail):
    """sh: find corral's pid (our tracer) and run tail with $p set."""
    return ("p=$(sed -n 's/^TracerPid:[[:space:]]*//p' /proc/self/status); "
            "echo corral=$p; " + tail)


@test
def fs_proc_corral(t):
    fx = FsFix(t)
    envsecret = "ENVSECRET-" + secrets.token_hex(12)
    home = fx.home

    def pre():
        os.chdir(home)
    tail = ("cat /proc/$p/environ; echo rc=$?; "
            "cat /proc/$p/cwd/secret.txt; echo rc=$?; "
            "cat /proc/$p/root%s; echo rc=$?; "
            "ls /proc/$p/fd/ >/dev/null; echo rc=$?; "
            "cat /proc/$p/cmdline; echo rc=$?; "
            "ls /proc/$p/cwd/ >/dev/null; echo rc=$?"
            % q(fx.secret_path))
    run = fx.sh(_corral_probe_script(fx, tail), preexec=pre,
                env={"CORRAL_FS_TEST_ENV": envsecret})
    r = fx.result(run)
    out = r.get("stdout", "")
    eq(out.split("\n")[0], "corral=%d" % run.pid, "corral's pid as seen "
       "inside (TracerPid)")
    for what, data in (("stdout", run.out), ("stderr", run.err)):
        not_contains(data.decode("utf-8", "replace"), envsecret,
                     "corral's %s (corral's environment)" % what)
        not_contains(data.decode("utf-8", "replace"), "CORRAL_FS_TEST_ENV",
                     "corral's %s (corral's environment)" % what)
    eq(out.split("\n")[1:], ["rc=1", "rc=1", "rc=1", "rc=2", "rc=1",
                             "rc=2", ""], "stdout after the pid")
    want_denial(r, layers=("fs", "proc"),
                target_prefix="/proc/%d" % run.pid,
                what="/proc/<corral>/...")
    fx.check()


@test
def fs_proc_other_processes(t):
    fx = FsFix(t)
    me = os.getpid()
    run = fx.sh("cat /proc/%d/cmdline; echo rc=$?; "
                "cat /proc/%d/environ; echo rc=$?; "
                "ls /proc/%d/cwd/ >/dev/null; echo rc=$?; "
                "cat /proc/1/environ; echo rc=$?; "
                "cat /proc/1/cmdline; echo rc=$?"
                % (me, me, me))
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\nrc=2\nrc=1\nrc=1\n", "stdout")
    not_contains(r.get("stdout"), "run.py", "stdout (the test's cmdline)")
    want_denial(r, layers=("fs", "proc"), target_prefix="/proc/%d" % me,
                what="/proc/<test pid>/cmdline")
    want_denial(r, layers=("fs", "proc"), target_prefix="/proc/1",
                what="/proc/1/environ")
    fx.check()


@test
def fs_proc_sys_kcore(t):
    fx = FsFix(t)
    run = fx.sh("cat /proc/sys/kernel/hostname; echo rc=$?; "
                "head -c 16 /proc/kcore >/dev/null; echo rc=$?; "
                "cat /proc/sys/kernel/random/boot_id; echo rc=$?; "
                # Opened for writing, never written: harmless even if the
                # sandbox fails (and the suite runs as root).
                "if true >> /proc/sys/kernel/hostname; then echo w=ok; "
                "else echo w=fail; fi")
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\nrc=1\nw=fail\n", "stdout")
    want_denial(r, layers=("fs", "proc"),
                targets=("/proc/sys/kernel/hostname",),
                what="/proc/sys/kernel/hostname")
    want_denial(r, layers=("fs", "proc"), targets=("/proc/kcore",),
                what="/proc/kcore")
    fx.check()


# ---------------------------------------------------------------------------
# Descriptors as starting points


@test
def fs_stdin_dirfd(t):
    fx = FsFix(t)
    rel = fx.secret_path.lstrip("/")

    def pre():
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        os.dup2(fd, 0)
        os.close(fd)
    nat = t.native([t.prog("fs_probe"), "readat0", rel], preexec=pre)
    contains(nat.out.decode(), fx.secret, "native openat(0) (test setup)")
    run = fx.probe(["readat0", rel, "readat0", "etc/shadow",
                    "readat0", rel.replace("secret.txt", ".ssh/id_rsa"),
                    "fchdir0", rel], preexec=pre)
    r = fx.result(run)
    res = lines_of(r.get("stdout", ""))
    for k in ("readat0 " + rel, "readat0 etc/shadow", "fchdir0 " + rel):
        true(k in res and not res[k].startswith("ok"),
             "%s: got %r, want a failure (all %s)" % (k, res.get(k),
                                                     _show(res, 900)))
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="openat(0, secret)")
    fx.check()


@test
def fs_openat2_resolve(t):
    fx = FsFix(t)
    os.symlink(fx.secret_path, fx.wsp("link"))
    os.mkdir(fx.wsp("sub"))
    secret_rel_t = os.path.relpath(fx.secret_path, fx.root)  # home/secret.txt
    ops = [
        # RESOLVE_BENEATH from the workspace: ".." escapes → EXDEV natively.
        "openat2", fx.ws, "../home/secret.txt", "beneath",
        # No flags: the supervisor must still check the result.
        "openat2", fx.ws, "../home/secret.txt", "none",
        "openat2", fx.ws, "link", "none",
        "openat2", fx.wsp("sub"), "../link", "none",
        # RESOLVE_IN_ROOT: "/" is the workspace, so the absolute path names
        # something under the workspace that does not exist.
        "openat2", fx.ws, fx.secret_path, "in_root",
        "openat2", fx.ws, "link", "no_symlinks",
        # A dirfd on an ancestor (O_PATH), then beneath it into the home.
        "openat2", fx.root, secret_rel_t, "beneath",
        "openat2", fx.root, secret_rel_t, "none",
        "openat2", ".", "/proc/self/root" + fx.secret_path, "none",
        "openat2", "/proc/self", "root" + fx.secret_path, "none",
        "openat2", ".", "/proc/self/root" + fx.secret_path, "no_magiclinks",
        # RESOLVE_BENEATH from "/" refuses its ".." too (an earlier build
        # clamped it to "/"; found by a differential probing session).
        "openat2", "/", "..", "beneath",
        "openat2", "/", "./..", "beneath",
    ]
    nat = fx.native([t.prog("fs_probe")] + ops)
    true(nat.out.decode().count(fx.secret) >= 5,
         "native openat2 (test setup): want the secret read several times,"
         " got %r" % nat.out.decode())
    run = fx.probe(ops)
    r = fx.result(run)
    res = lines_of(r.get("stdout", ""))
    eq(len(res), len(ops) // 4, "lines of output (%r)" % r.get("stdout"))
    for k, v in res.items():
        true(not v.startswith("ok"), "%s: got %r, want a failure" % (k, v))
    want_line(res, "openat2 %s ../home/secret.txt beneath" % fx.ws, "EXDEV")
    want_line(res, "openat2 %s ../home/secret.txt none" % fx.ws, "ENOENT")
    want_line(res, "openat2 %s link none" % fx.ws, "ENOENT")
    want_line(res, "openat2 %s %s in_root" % (fx.ws, fx.secret_path),
              "ENOENT")
    want_line(res, "openat2 %s link no_symlinks" % fx.ws, "ELOOP")
    want_line(res, "openat2 / .. beneath", "EXDEV")
    want_line(res, "openat2 / ./.. beneath", "EXDEV")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="openat2 to the secret")
    fx.check()


@test
def fs_opath(t):
    fx = FsFix(t)
    with open(fx.wsp("w.txt"), "w") as f:
        f.write("0123456789")
    run = fx.probe(["opath", "w.txt", "opath", fx.secret_path,
                    "opath", fx.home, "opath-reopen", "w.txt",
                    "opath-reopen", fx.root])
    r = fx.result(run)
    res = lines_of(r.get("stdout", ""))
    want_line(res, "opath w.txt", "ok size=10")
    want_line(res, "opath " + fx.secret_path, "ENOENT")
    want_line(res, "opath " + fx.home, "ENOENT")
    want_line(res, "opath-reopen w.txt", "ok 0123456789")
    # An ancestor reopens for reading: a directory, listed filtered
    # (fs_ancestors_list_only_the_way_in); reading it is EISDIR.
    want_line(res, "opath-reopen " + fx.root, "ok read=EISDIR")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="O_PATH of the secret")
    fx.check()


# ---------------------------------------------------------------------------
# Races


def _counts(line):
    d = {}
    for w in line.split():
        k, _, v = w.partition("=")
        d[k] = int(v) if v.isdigit() else v
    return d


@test
def fs_race_path_flip(t):
    fx = FsFix(t)
    allowed = fx.wsp("allowed.txt")
    with open(allowed, "w") as f:
        f.write("allowed\n")
    nat = fx.native([t.prog("fs_race"), allowed, fx.secret_path,
                     fx.secret_id, "10", "stop"], timeout=60)
    c = _counts(nat.out.decode())
    true(c.get("secret", 0) > 0, "native race (test setup): the secret was "
         "never opened: %r" % nat.out)
    run = fx.run([t.prog("fs_race"), allowed, fx.secret_path,
                  fx.secret_id, "4"], opts=t.prog_roots(), timeout=120)
    r = fx.result(run, statuses=("ok",))
    c = _counts(r.get("stdout", ""))
    eq(c.get("secret"), 0, "opens that reached the secret (%s)" %
       r.get("stdout"))
    true(c.get("allowed", 0) > 0, "no open of the allowed file succeeded: "
         "%s" % r.get("stdout"))
    # A refused open of the secret answers ENOENT (absence), like the
    # moments the link was missing; the denial record tells them apart.
    true(c.get("denied", 0) + c.get("enoent", 0) > 0,
         "no open of the secret was refused: %s" % r.get("stdout"))
    want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="race")
    fx.check()


@test
def fs_race_symlink_swap(t):
    fx = FsFix(t)
    os.mkdir(fx.wsp("d"))
    with open(fx.wsp("d", "secret.txt"), "w") as f:
        f.write("decoy\n")
    os.symlink(fx.home, fx.wsp("s"))
    nat_ws = os.path.join(fx.root, "natws")
    os.mkdir(nat_ws)
    os.mkdir(os.path.join(nat_ws, "d"))
    with open(os.path.join(nat_ws, "d", "secret.txt"), "w") as f:
        f.write("decoy\n")
    os.symlink(fx.home, os.path.join(nat_ws, "s"))

    def pre():
        os.chdir(nat_ws)
    nat = t.native([t.prog("fs_swap"), "d", "s", "secret.txt",
                    fx.secret_id, "10", "stop"], preexec=pre, timeout=60)
    c = _counts(nat.out.decode())
    true(c.get("secret", 0) > 0, "native swap race (test setup): the "
         "secret was never opened: %r" % nat.out)
    shutil.rmtree(nat_ws)
    run = fx.run([t.prog("fs_swap"), "d", "s", "secret.txt", fx.secret_id,
                  "4"], opts=t.prog_roots(), timeout=120)
    r = fx.result(run, statuses=("ok",))
    c = _counts(r.get("stdout", ""))
    eq(c.get("secret"), 0, "opens that reached the outside file (%s)" %
       r.get("stdout"))
    true(c.get("swaps", 0) > 0, "the swap never happened: %s" %
         r.get("stdout"))
    true(c.get("allowed", 0) > 0, "no open of d/secret.txt succeeded: %s" %
         r.get("stdout"))
    fx.check()


# ---------------------------------------------------------------------------
# Devices and exec


@test
def fs_mknod_device(t):
    fx = FsFix(t)
    run = fx.probe(["mknod", "cdev", "c", "mknod", "bdev", "b",
                    "mknod", fx.wsp("cdev2"), "c"])
    r = fx.result(run)
    res = lines_of(r.get("stdout", ""))
    for k in ("mknod cdev", "mknod bdev", "mknod " + fx.wsp("cdev2")):
        true(k in res and not res[k].startswith("ok"),
             "%s: got %r, want a failure" % (k, res.get(k)))
    for n in ("cdev", "bdev", "cdev2"):
        true(not os.path.lexists(fx.wsp(n)), "device node %s made" % n)
    want_denial(r, layers=("fs", "syscall"), target_prefix=fx.ws,
                syscalls=("mknod", "mknodat"), what="mknod of a device")
    fx.check()


def _exec_refused(fx, run, r, made, what):
    """An exec outside the exec roots: refused at execve (EACCES, the
    program goes on) or killed at exec (policy_denied); the binary's code
    never ran."""
    true(not os.path.lexists(made), "%s: the binary ran (it made %s)" % (
        what, made))
    st = r.get("status")
    if st == "policy_denied":
        eq(run.code, 126, "%s: exit status of a policy_denied run" % what)
        want_denial(r, layers=("exec",), what=what)
    else:
        true(st in FS_STATUSES, "%s: status %r" % (what, st))
        want_denial(r, layers=("fs", "exec"),
                    syscalls=("execve", "execveat"), what=what)


@test
def fs_exec_outside_roots(t):
    fx = FsFix(t, ro=True)
    home_touch = os.path.join(fx.home, "mytouch")
    home_true = os.path.join(fx.home, "true")
    ro_touch = os.path.join(fx.ro, "mytouch")
    for dst in (home_touch, ro_touch):
        shutil.copy2("/usr/bin/touch", dst)
        os.chmod(dst, 0o755)
    shutil.copy2("/usr/bin/true", home_true)
    os.chmod(home_true, 0o755)
    fx.snap = snapshot(fx.home)
    fx.ro_snap = snapshot(fx.ro)
    # Natively each would run.
    nat = fx.native([home_touch, "nat-made"])
    eq(nat.code, 0, "native run of the copy (test setup)")
    os.unlink(fx.wsp("nat-made"))

    # 1. From a shell inside the run.
    run = fx.sh("%s made1; echo rc=$?; %s; echo rc=$?"
                % (q(home_touch), q(home_true)), opts=["--ro", fx.ro])
    r = fx.result(run, statuses=FS_STATUSES + ("policy_denied",))
    _exec_refused(fx, run, r, fx.wsp("made1"), "exec of home/mytouch")
    if r.get("status") != "policy_denied":
        # Outside every root the binary looks absent: "not found".
        contains(r.get("stdout", ""), "rc=127", "shell's status for the "
                 "refused exec")
    # 2. A --ro root is readable, not executable.
    run = fx.sh("%s made2; echo rc=$?" % q(ro_touch), opts=["--ro", fx.ro])
    r = fx.result(run, statuses=FS_STATUSES + ("policy_denied",))
    _exec_refused(fx, run, r, fx.wsp("made2"), "exec of ro/mytouch")
    # 3. As corral's command itself.
    run = fx.run([home_touch, "made3"])
    r = fx.result(run, statuses=FS_STATUSES + ("policy_denied",))
    _exec_refused(fx, run, r, fx.wsp("made3"), "corral run -- home/mytouch")
    # 4. A script whose #! interpreter is outside the exec roots.
    # The kernel runs "mytouch made4 ./script": made4 appears if it ran.
    with open(fx.wsp("script"), "w") as f:
        f.write("#!%s made4\n" % home_touch)
    os.chmod(fx.wsp("script"), 0o755)
    run = fx.sh("./script; echo rc=$?")
    r = fx.result(run, statuses=FS_STATUSES + ("policy_denied",))
    true(not os.path.lexists(fx.wsp("made4")), "#! interpreter outside "
         "the exec roots ran (it made made4)")
    st = r.get("status")
    if st == "policy_denied":
        want_denial(r, layers=("exec",), what="#! interpreter outside")
    else:
        want_denial(r, layers=("fs", "exec"), what="#! interpreter outside")
    fx.check()


@test
def fs_exec_workspace_copy(t):
    """The workspace is executable: a copy of a /usr/bin binary made there
    runs."""
    fx = FsFix(t)
    run = fx.sh("cp /usr/bin/touch ./mytouch && ./mytouch made && "
                "cp /usr/bin/echo sub-echo && ./sub-echo copied-echo-ran")
    r = fx.result(run, statuses=("ok",))
    eq(r.get("stdout"), "copied-echo-ran\n", "stdout")
    true(os.path.exists(fx.wsp("made")), "./mytouch did not run")
    eq([d for d in denials(r, ("fs", "exec")) if d.get("syscall") in
        ("execve", "execveat") or under(str(d.get("target")), fx.ws)], [],
       "denials of exec or in the workspace")
    fx.check()


@test
def fs_memfd_exec(t):
    fx = FsFix(t)
    mark = "MEMFD-RAN-" + secrets.token_hex(6)
    nat = fx.native([t.prog("fs_probe"), "memfd-exec", "/usr/bin/echo",
                     "echo", mark])
    contains(nat.out.decode(), mark, "native memfd exec (test setup)")
    for op in ("memfd-exec", "memfd-exec-proc"):
        run = fx.probe([op, "/usr/bin/echo", "echo", mark])
        r = fx.result(run, statuses=FS_STATUSES + ("policy_denied",))
        not_contains(run.out.decode("utf-8", "replace"), mark,
                     "%s: the memfd image ran" % op)
        true(len(denials(r, ("exec", "fs", "proc", "syscall"))) > 0,
             "%s: no denial recorded (%s)" % (op, _show(r.get("denials"))))
    fx.check()


# ---------------------------------------------------------------------------
# /dev/shm objects made outside the run


@test
def fs_shm_preexisting(t):
    fx = FsFix(t)
    name = "corral-test-" + t.marker
    shm = "/dev/shm/" + name
    fd = os.open(shm, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, ("shm %s\n" % fx.secret).encode())
        os.close(fd)
        before = snapshot_file(shm)
        run = fx.sh(
            "cat %s; echo rc=$?; "
            "if echo x >> %s; then echo w=ok; else echo w=fail; fi; "
            "python3 -c 'from multiprocessing import shared_memory as s\n"
            "try:\n m = s.SharedMemory(name=\"%s\")\n"
            " print(\"opened\", bytes(m.buf[:60]))\n"
            "except OSError as e: print(\"refused\", e.errno)'"
            % (q(shm), q(shm), name))
        r = fx.result(run)
        out = r.get("stdout", "")
        # The run's /dev/shm is its own directory (tracer/fs/shm.c): the
        # name is absent to it, and a write makes the run's own object
        # there, never touching the test's.
        eq(out.split("\n")[:2], ["rc=1", "w=ok"], "stdout")
        # Nor its name: /dev/shm lists the run's own objects only.
        run2 = fx.sh("ls -a /dev/shm; find /dev/shm")
        not_contains(run2.out.decode("utf-8", "replace"), name,
                     "listing /dev/shm")
        # SharedMemory(name=...) opens the object the run's echo made.
        contains(out, "opened b'x\\n", "SharedMemory(name=...) of the "
                 "name")
        not_contains(out, fx.secret, "what the run read")
        eq(snapshot_file(shm), before, "the /dev/shm object")
        # Take it over by name: rename it to a new name, rename an object
        # of the run over it, remove it. Each name is the run's own: the
        # run renames and removes its own object, never the test's.
        mine = "/dev/shm/corral-mine-" + t.marker
        ops = [["steal", "rename", shm, mine + "-stolen"],
               ["make_own", "create", mine],
               ["overwrite", "rename", mine, shm],
               ["unlink", "unlink", shm],
               ["link", "link", shm, mine + "-hl"],
               ["chmod", "chmod", shm],
               ["truncate", "truncate", shm]]
        run, r, res = pyops(fx, ops)
        for label in ("make_own", "overwrite", "unlink"):
            want_line(res, label, "ok")
        for label in ("steal", "link", "chmod", "truncate"):
            want_line(res, label, "ENOENT")
        eq(snapshot_file(shm), before, "the /dev/shm object")
        true(not os.path.lexists(mine + "-stolen"), "renamed away")
        true(not os.path.lexists(mine + "-hl"), "hard-linked")
        true(not os.path.lexists(mine), "the run's own object was not "
             "removed at the end of the run")
        fx.check()
    finally:
        for p in (shm, "/dev/shm/corral-mine-" + t.marker,
                  "/dev/shm/corral-mine-%s-stolen" % t.marker,
                  "/dev/shm/corral-mine-%s-hl" % t.marker):
            try:
                os.unlink(p)
            except OSError:
                pass


@test(root=True)
def fs_shm_through_a_bind_mount_takes_no_new_name(t):
    """(Root tier: the test mounts.) /dev/shm's filesystem met elsewhere (a bind mount of it, or of
    /dev, inside the workspace) is the host's /dev/shm: nothing of the run
    may land there. Existing objects were refused by place; a name to
    create was judged only by text when the kernel resolved the parents
    (an earlier build made a directory, a fifo and a link in the host's
    /dev/shm by mkdir, mknod and symlink through such a mount)."""
    fx = FsFix(t)
    mnt = fx.wsp("shmb")
    os.mkdir(mnt, 0o755)
    if subprocess.run(["mount", "--bind", "/dev/shm", mnt]).returncode:
        raise Fail("mount --bind /dev/shm (the test runs as root) failed")
    name = "corral-bind-" + t.marker
    made = ["/dev/shm/%s-%s" % (name, k)
            for k in ("d", "f", "l", "hl", "mv", "p", "sub/f", "sub/d")]
    sub = "/dev/shm/%s-sub" % name
    try:
        # A directory of the host's /dev/shm below the mount: the parent
        # of a name is then found past the mount, not at it.
        os.mkdir(sub, 0o777)
        os.chmod(sub, 0o777)
        with open(fx.wsp("mine"), "w") as f:
            f.write("mine\n")
        tgt = lambda k: os.path.join(mnt, "%s-%s" % (name, k))
        ops = [["mkdir", "mkdir", tgt("d")],
               ["sub-create", "create", tgt("sub/f")],
               ["sub-mkdir", "mkdir", tgt("sub/d")],
               ["create", "create", tgt("f")],
               ["symlink", "symlink", "/x", tgt("l")],
               ["link", "link", fx.wsp("mine"), tgt("hl")],
               ["rename", "rename", fx.wsp("mine"), tgt("mv")]]
        for mode in ("--landlock=off", "--landlock=auto"):
            run, r, res = pyops(fx, ops, opts=[mode])
            for label, _, *_a in ops:
                want_line(res, label, "ENOENT", "%s %s" % (mode, label))
            true(any(d.get("layer") == "fs" for d in r.get("denials", [])),
                 "%s: refusals recorded at the fs layer" % mode)
            run = fx.sh("mkfifo %s; echo rc=$?" % q(tgt("p")), opts=[mode])
            eq(fx.result(run).get("stdout"), "rc=1\n", mode + ": mkfifo")
            left = [p for p in made if os.path.lexists(p)]
            eq(left, [], "%s: names the run made in the host's /dev/shm"
               % mode)
        # The next run still works, and the workspace's own files too.
        run, r, res = pyops(fx, [["mk", "mkdir", fx.wsp("after")]])
        want_line(res, "mk", "ok")
    finally:
        subprocess.run(["umount", "-l", mnt])
        if os.path.ismount(mnt):
            # The harness would remove the workspace, and through the
            # mount the host's /dev/shm with it.
            os._exit(3)
        for p in made + [sub]:
            try:
                if os.path.isdir(p) and not os.path.islink(p):
                    os.rmdir(p)
                else:
                    os.unlink(p)
            except OSError:
                pass
    fx.check()


def snapshot_file(p):
    st = os.stat(p)
    with open(p, "rb") as f:
        return (st.st_mode, st.st_size, st.st_mtime_ns, f.read())


# ---------------------------------------------------------------------------
# --stacks


@test
def fs_denial_stacks(t):
    fx = FsFix(t)
    run = fx.probe(["read", fx.secret_path], opts=["--stacks"])
    if run.code == 125 and run.result is None:
        raise Fail("not implemented: --stacks refused as a usage error "
                   "(%r)" % run.err[:300])
    r = fx.result(run)
    d = want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="read of the secret")
    if "stack" not in d:
        raise Fail("not implemented: the denial has no \"stack\" field "
                   "with --stacks: %r" % d)
    frames = d["stack"]
    true(isinstance(frames, list) and frames, "stack: want a non-empty "
         "list of frames, got %r" % (frames,))
    for fr in frames:
        true((isinstance(fr, str) and fr) or
             (isinstance(fr, dict) and fr),
             "stack frame: want a string or an object, got %r" % (fr,))
    flat = json.dumps(frames)
    true("main" in flat, "no frame names main (fs_probe is built with -g): "
         "%s" % _show(frames, 600))
    print("note: e2e/fs_denial_stacks: frames %s" % _show(frames, 400),
          flush=True)
    # Without --stacks, no stack.
    run = fx.probe(["read", fx.secret_path])
    r = fx.result(run)
    d = want_denial(r, targets=(fx.secret_path,), floor=fx.home, what="without --stacks")
    true("stack" not in d or not d["stack"], "a stack without --stacks: %r"
         % d)
    fx.check()
