"""Landlock, the kernel's layer under the supervisor (tracer/landlock/):
the result says which ABI the program ran under; --landlock=off and
require; the fast path's documented trade-offs (metadata outside the roots,
and with --fast-open the errno of a refused open); and, with a test-only
build whose opens bypass the resolver (make bypass), Landlock alone still
refusing to read or write outside the roots.

Layout: T/ws the workspace, T/home a fake home outside every root with a
secret in it (T itself is an ancestor of the workspace).
"""

import json
import os
import secrets

from harness import (CFG, Fail, eq, true, contains, not_contains, lt, test,
                     check_result_shape)


def probe_abi(t):
    run = t.corral(["probe", "--json"])
    abi = t.result(run).get("landlock_abi")
    true(isinstance(abi, int), "probe: landlock_abi is an integer")
    return abi


class Fix:
    def __init__(self, t):
        self.t = t
        root = os.path.realpath(t.tmp)
        self.ws = os.path.join(root, "ws")
        self.home = os.path.join(root, "home")
        os.mkdir(self.ws, 0o700)
        os.mkdir(self.home, 0o700)
        self.secret = "LLSECRET-" + secrets.token_hex(16)
        self.secret_path = os.path.join(self.home, "secret.txt")
        with open(self.secret_path, "w") as f:
            f.write("token=%s\n" % self.secret)
        os.chmod(self.secret_path, 0o600)

    def run(self, script, opts=(), binary=None, nons_flags=()):
        # The mode each test means, whatever pass of the suite runs it.
        if not any(o.startswith("--landlock") for o in opts):
            opts = ["--landlock=auto"] + list(opts)
        args = ["run", "--json", "-w", self.ws] + list(opts) + \
            ["--", "sh", "-c", script]
        run = self.t.corral(args, binary=binary, nons_flags=nons_flags)
        r = self.t.result(run)
        check_result_shape(r)
        return run, r

    def no_secret(self, run, r, what):
        for name, data in (("stdout", run.out), ("stderr", run.err)):
            if self.secret.encode() in data:
                raise Fail("%s: the secret is in corral's %s" % (what, name))
        not_contains(r.get("stdout", ""), self.secret, what + ": stdout")


def need_landlock(t):
    abi = probe_abi(t)
    if abi < 1:
        raise Fail("this host has no Landlock (probe: landlock_abi %d): "
                   "the Landlock tests cannot run" % abi)
    return abi


def ll(r):
    v = r.get("landlock")
    true(isinstance(v, dict), "result: landlock is an object, got %r" % (v,))
    return v


@test
def landlock_applied_by_default(t):
    """auto (the default): the ruleset of the probed ABI is applied, and
    the result says so; the program runs as before."""
    abi = need_landlock(t)
    fx = Fix(t)
    run, r = fx.run("echo hi > f && cat f && cat /etc/passwd >/dev/null "
                    "&& echo done")
    eq(run.code, 0, "exit status (%s)" % r.get("message"))
    eq(r.get("stdout"), "hi\ndone\n", "stdout")
    v = ll(r)
    eq(v.get("abi"), abi, "landlock.abi is the probed ABI")
    eq(v.get("applied"), True, "landlock.applied")
    eq(v.get("reason"), None, "landlock.reason")
    # The fast path is opt-in (--fast-open): by default every path call
    # stays with the supervisor, so outside the roots still looks absent.
    eq(v.get("fast_path"), "off", "landlock.fast_path")


@test
def landlock_off_is_the_supervisor_alone(t):
    """--landlock=off: no ruleset, no fast path, and the reason says why."""
    fx = Fix(t)
    run, r = fx.run("echo hi", opts=["--landlock=off"])
    eq(run.code, 0, "exit status")
    v = ll(r)
    eq(v.get("abi"), 0, "landlock.abi")
    eq(v.get("applied"), False, "landlock.applied")
    eq(v.get("fast_path"), "off", "landlock.fast_path")
    contains(v.get("reason") or "", "off", "landlock.reason")


@test
def landlock_require_without_landlock_refused_before_start(t):
    """require on a kernel without Landlock (nons -L answers ENOSYS to
    landlock_create_ruleset): exit 125 before the program runs; auto on the
    same kernel runs without it and says why."""
    need_landlock(t)
    fx = Fix(t)
    marker = os.path.join(fx.ws, "ran")
    run, r = fx.run("touch %s; echo started" % marker,
                    opts=["--landlock=require"], nons_flags=["-L"])
    eq(run.code, 125, "exit status")
    eq(r.get("status"), "platform_failure", "status")
    contains(r.get("message", ""), "Landlock is required", "message")
    not_contains(r.get("stdout", ""), "started", "stdout")
    true(not os.path.exists(marker), "the program did not run")
    eq(ll(r).get("applied"), False, "landlock.applied")

    run, r = fx.run("echo started", nons_flags=["-L"])
    eq(run.code, 0, "auto without Landlock: exit status")
    eq(r.get("stdout"), "started\n", "auto without Landlock: stdout")
    v = ll(r)
    eq(v.get("abi"), 0, "auto without Landlock: landlock.abi")
    contains(v.get("reason") or "", "no Landlock", "landlock.reason")
    eq(v.get("fast_path"), "off", "auto without Landlock: fast_path")

    run, r = fx.run("echo started", opts=["--landlock=require"])
    eq(run.code, 0, "require with Landlock: exit status")
    eq(ll(r).get("applied"), True, "require with Landlock: applied")


@test
def landlock_bad_mode_is_a_usage_error(t):
    run = t.corral(["run", "--landlock=maybe", "--", "true"])
    eq(run.code, 125, "exit status")
    contains(run.err.decode(), "expected auto, off or require", "stderr")
    pol = os.path.join(t.tmp, "p.json")
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        doc = json.load(f)
    doc["classes"]["default"]["landlock"] = "sometimes"
    with open(pol, "w") as f:
        json.dump(doc, f)
    run = t.corral(["policy", "check", pol])
    eq(run.code, 1, "policy check of a bad landlock key: exit status")
    contains(run.err.decode() + run.out.decode(),
             "is not a Landlock mode", "policy check message")


def bypass(t):
    if not CFG.corral_bypass or not os.path.exists(CFG.corral_bypass):
        raise Fail("the test-only build %s is missing (make bypass)" %
                   CFG.corral_bypass)
    return CFG.corral_bypass


@test
def landlock_alone_refuses_reads_outside_the_roots(t):
    """The supervisor's resolver deliberately bypassed (a build whose opens
    answer CONTINUE): without Landlock the secret is read -- the bypass is
    real -- and with Landlock the kernel refuses it, by its path, through
    a symlink in the workspace and through /proc/self/root."""
    need_landlock(t)
    fx = Fix(t)
    b = bypass(t)
    run, r = fx.run("cat %s" % fx.secret_path, opts=["--landlock=off"],
                    binary=b)
    contains(r.get("stdout", ""), fx.secret,
             "control: the bypass build without Landlock reads the secret")

    os.symlink(fx.secret_path, os.path.join(fx.ws, "link"))
    script = ("cat %s; echo rc=$?; cat link; echo rc=$?; "
              "cat /proc/self/root%s; echo rc=$?; echo ok > mine; cat mine"
              % (fx.secret_path, fx.secret_path))
    run, r = fx.run(script, binary=b)
    fx.no_secret(run, r, "bypass build with Landlock")
    eq(r.get("stdout", "").split(), ["rc=1", "rc=1", "rc=1", "ok"],
       "every read outside refused, the workspace still works")
    eq(r.get("stderr", "").count("Permission denied"), 3,
       "the kernel's answer (EACCES) for each: %r" % r.get("stderr"))
    eq(ll(r).get("applied"), True, "landlock.applied")


@test
def landlock_alone_refuses_writes_outside_the_roots(t):
    """The same bypass: creating a file outside every root, or truncating
    the secret, is refused by Landlock alone."""
    need_landlock(t)
    fx = Fix(t)
    b = bypass(t)
    planted = os.path.join(fx.home, "planted")
    run, r = fx.run("(echo x > %s); echo rc=$?; (: > %s); echo rc=$?" %
                    (planted, fx.secret_path), binary=b)
    eq(r.get("stdout", "").split(), ["rc=2", "rc=2"],
       "both refused (the shell's status for a failed redirection)")
    eq(r.get("stderr", "").count("Permission denied"), 2,
       "EACCES for both: %r" % r.get("stderr"))
    true(not os.path.exists(planted), "nothing was created outside")
    with open(fx.secret_path) as f:
        contains(f.read(), fx.secret, "the secret file is intact")
    run, r = fx.run("(echo x > %s); echo rc=$?" % planted, binary=b,
                    opts=["--landlock=off"])
    true(os.path.exists(planted),
         "control: without Landlock the bypass build creates it")


@test
def fast_path_metadata_tradeoff(t):
    """The documented trade-off of the metadata fast path (with --ro /
    under --fast-open, the level is metadata only): a stat of a file
    outside every root answers its metadata (not ENOENT) and is not
    recorded; its contents stay refused (ENOENT, recorded). By default,
    with --strict-metadata, or without Landlock, the stat is absent as
    before."""
    need_landlock(t)
    fx = Fix(t)
    size = os.path.getsize(fx.secret_path)
    script = "stat -c %%s %s; cat %s; echo rc=$?" % (fx.secret_path,
                                                     fx.secret_path)
    run, r = fx.run(script, opts=["--fast-open", "--ro", "/dev"])
    fx.no_secret(run, r, "fast path")
    eq(ll(r).get("fast_path"), "metadata", "landlock.fast_path")
    eq(r.get("stdout", "").split(), [str(size), "rc=1"],
       "fast path: stat answers the size (the trade-off), cat is refused")
    contains(r.get("stderr", ""), "No such file", "cat's errno")
    syscalls = sorted(d.get("syscall") for d in r.get("denials", [])
                      if d.get("target") == fx.secret_path)
    true(syscalls and all(s.startswith("open") for s in syscalls),
         "only the open is recorded: %r" % syscalls)

    for opts in ([], ["--fast-open", "--strict-metadata"],
                 ["--fast-open", "--landlock=off"]):
        run, r = fx.run(script, opts=opts)
        fx.no_secret(run, r, " ".join(opts))
        eq(ll(r).get("fast_path"), "off", "%s: fast_path" % opts)
        eq(r.get("stdout", "").split(), ["rc=1"],
           "%s: the stat is refused too" % opts)
        eq(r.get("stderr", "").count("No such file"), 2,
           "%s: both absent (ENOENT): %r" % (opts, r.get("stderr")))
        true(any(d.get("syscall") in ("statx", "newfstatat", "stat",
                                      "lstat")
                 for d in r.get("denials", [])),
             "%s: the stat is recorded" % opts)


@test
def fast_path_notifies_less(t):
    """The point of it: a loop of stats inside the roots costs the
    supervisor no notification on the fast path."""
    need_landlock(t)
    fx = Fix(t)
    script = "for i in 1 2 3 4 5 6 7 8 9 10; do test -e /usr/bin/env; " \
             "stat -c %s /etc/passwd >/dev/null; done; echo done"
    counts = {}
    for name, opts in (("fast", ["--fast-open"]), ("strict", [])):
        run, r = fx.run(script, opts=opts)
        eq(r.get("stdout"), "done\n", "%s: stdout" % name)
        counts[name] = r["usage"]["supervisor_notifications"]
    lt(counts["fast"] + 10, counts["strict"],
       "notifications on the fast path (%r)" % counts)


@test
def fast_open_tradeoff(t):
    """--fast-open: read-only opens are the kernel's too. Inside the roots
    and the run's own /proc they work; outside, Landlock answers EACCES
    (not the supervisor's ENOENT) and nothing is recorded; another
    process's environment stays refused (Landlock's ptrace scope)."""
    need_landlock(t)
    fx = Fix(t)
    script = ("cat %s; echo rc=$?; head -c 5 /etc/passwd; echo; "
              "grep -c '^Name:' /proc/self/status; "
              "cat /proc/%d/environ; echo rc=$?" %
              (fx.secret_path, os.getpid()))
    run, r = fx.run(script, opts=["--fast-open"])
    fx.no_secret(run, r, "fast-open")
    eq(ll(r).get("fast_path"), "open", "landlock.fast_path")
    with open("/etc/passwd") as f:
        head = f.read(5)
    eq(r.get("stdout", "").split(), ["rc=1", head, "1", "rc=1"], "stdout")
    eq(r.get("stderr", "").count("Permission denied"), 2,
       "EACCES for both: %r" % r.get("stderr"))


@test
def fast_open_reopens_a_stdin_file_outside_the_roots(t):
    """`corral run --fast-open ... < FILE`, FILE outside the roots:
    `cat /dev/stdin` and /proc/self/fd/0 answered EACCES (Landlock judged
    the path), where natively and without the fast path they read it
    (found by a probing session). The stdin file alone is granted
    reading: the file beside it stays refused."""
    need_landlock(t)
    fx = Fix(t)
    inp = os.path.join(fx.home, "input.txt")
    with open(inp, "w") as f:
        f.write("input line\n")

    def stdin_file():
        fd = os.open(inp, os.O_RDONLY)
        os.dup2(fd, 0)
        os.close(fd)
    script = ("cat /dev/stdin; cat /proc/self/fd/0; cat %s; echo rc=$?" %
              fx.secret_path)
    run = t.corral(["run", "--json", "-w", fx.ws, "--landlock=auto",
                    "--fast-open", "--", "sh", "-c", script],
                   preexec=stdin_file)
    r = t.result(run)
    fx.no_secret(run, r, "fast-open with a stdin file")
    eq(ll(r).get("fast_path"), "open", "landlock.fast_path")
    eq((r.get("status"), r.get("stdout")),
       ("ok", "input line\ninput line\nrc=1\n"),
       "stdin read twice, the file beside it refused (stderr %r)" %
       r.get("stderr"))
    # A stdin open for writing only (0>>FILE) grants no reading: the
    # rule once made its bytes readable by name (found by a probing
    # session).
    def stdin_wronly():
        fd = os.open(inp, os.O_WRONLY | os.O_APPEND)
        os.dup2(fd, 0)
        os.close(fd)
    run = t.corral(["run", "--json", "-w", fx.ws, "--landlock=auto",
                    "--fast-open", "--", "sh", "-c",
                    "cat %s; echo rc=$?" % inp], preexec=stdin_wronly)
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "rc=1\n"),
       "a write-only stdin's file stays unreadable (stderr %r)" %
       r.get("stderr"))


@test
def fast_path_off_for_deny_and_hide_classes(t):
    """Landlock cannot cut a denied subtree out of a root, nor answer
    ENOENT: a class with either keeps every call with the supervisor."""
    need_landlock(t)
    fx = Fix(t)
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        base = json.load(f)
    for key, value in (("deny", ["/etc/passwd"]), ("hide", True)):
        doc = json.loads(json.dumps(base))
        doc["classes"]["default"]["fs"][key] = value
        pol = os.path.join(t.tmp, "p-%s.json" % key)
        with open(pol, "w") as f:
            json.dump(doc, f)
        run, r = fx.run("stat -c %s /etc/passwd; echo rc=$?",
                        opts=["--policy", pol, "--fast-open"])
        v = ll(r)
        eq(v.get("applied"), True, "%s: landlock.applied" % key)
        eq(v.get("fast_path"), "off", "%s: landlock.fast_path" % key)
        if key == "deny":
            eq(r.get("stdout", "").split(), ["rc=1"],
               "deny: the denied file is absent to stat")


@test
def fast_open_never_over_the_terminals(t):
    """--fast-open with a root above /dev/pts (--ro /): a read-only open
    the kernel decided could reach another terminal of the user, so such a
    run keeps its opens with the supervisor (fast path: metadata only)."""
    need_landlock(t)
    fx = Fix(t)
    m, s = os.openpty()
    try:
        name = os.ttyname(s)
        run, r = fx.run("cat %s; echo rc=$?" % name,
                        opts=["--fast-open", "--ro", "/"])
        eq(ll(r).get("fast_path"), "metadata", "landlock.fast_path")
        eq(r.get("stdout", "").split(), ["rc=1"], "the terminal is refused")
        contains(r.get("stderr", ""), "No such file",
                 "the supervisor's answer (ENOENT)")
    finally:
        os.close(m)
        os.close(s)


@test
def fast_open_stays_off_roots_holding_placed_objects(t):
    """Landlock grants a root's whole tree, so at level open a read-only
    open the kernel decides would reach what the supervisor refuses by
    place: another process's /dev/shm object under a root on /dev/shm (an
    earlier build read one, mode 600, with --fast-open --ro /dev/shm), a
    terminal through a devpts mount inside a root. Such runs keep their
    opens notified (level metadata), and the object stays refused."""
    need_landlock(t)
    fx = Fix(t)
    name = "/dev/shm/crtest-%d-%s" % (os.getpid(), t.marker[-8:])
    with open(name, "w") as f:
        f.write("shm-secret\n")
    os.chmod(name, 0o600)
    try:
        # --rw of the shared /dev/shm (sticky, root's) cannot carry the
        # mark of a run's writable space: the caller vouches for it here.
        for root in (["--ro", "/dev/shm"],
                     ["--rw", "/dev/shm", "--workspace-unsafe"]):
            run, r = fx.run("cat %s; echo rc=$?" % name,
                            opts=["--fast-open"] + root)
            eq(ll(r).get("fast_path"), "metadata",
               "%s: landlock.fast_path" % root)
            not_contains(r.get("stdout", ""), "shm-secret", "stdout")
            contains(r.get("stdout", ""), "rc=1", "refused")
    finally:
        os.unlink(name)


@test
def fast_open_states_what_proc_fd_shows(t):
    """Two trade-offs of level open, stated (docs/threat-model.md): a stat
    of /proc/<pid>/fd/N of a same-user process outside the run answers
    (its fd numbers and their access modes show; the kernel's lookup there
    asks only the directory's owner bits) while following the link stays
    refused; and a read-only reopen through /proc/self/fd of a memfd is
    the kernel's. Without the fast path both are absent (ENOENT)."""
    import subprocess
    need_landlock(t)
    fx = Fix(t)
    held = os.path.join(fx.home, "held")
    with open(held, "w"):
        pass
    # Outside the run, this uid: fd 7 read-only, fd 8 write-only.
    out = subprocess.Popen(
        ["python3", "-c",
         "import os, sys, time\n"
         "os.dup2(os.open(sys.argv[1], os.O_RDONLY), 7)\n"
         "os.dup2(os.open(sys.argv[1], os.O_WRONLY), 8)\n"
         "print('ready', flush=True); time.sleep(300)\n", held, t.marker],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, pass_fds=())
    try:
        eq(out.stdout.readline(), b"ready\n", "the outsider holds its fds")
        code = (
            "import os, errno, stat\n"
            "def t(what, f):\n"
            "    try:\n"
            "        print(what, f())\n"
            "    except OSError as e:\n"
            "        print(what, errno.errorcode[e.errno])\n"
            "p = '/proc/%d/fd/'\n"
            "t('r', lambda: stat.filemode(os.lstat(p + '7').st_mode))\n"
            "t('w', lambda: stat.filemode(os.lstat(p + '8').st_mode))\n"
            "t('none', lambda: stat.filemode(os.lstat(p + '9').st_mode))\n"
            "t('link', lambda: os.readlink(p + '7'))\n"
            "t('open', lambda: os.close(os.open(p + '7', os.O_RDONLY)))\n"
            "m = os.memfd_create('x'); os.write(m, b'mem')\n"
            "def reopen():\n"
            "    fd = os.open('/proc/self/fd/%%d' %% m, os.O_RDONLY)\n"
            "    return os.read(fd, 9).decode()\n"
            "t('memfd', reopen)\n" % out.pid)
        path = os.path.join(fx.ws, "probe.py")
        with open(path, "w") as f:
            f.write(code)
        absent = ("r ENOENT\nw ENOENT\nnone ENOENT\nlink ENOENT\n"
                  "open ENOENT\nmemfd ENOENT\n")
        for opts, level, want in (
                (["--fast-open"], "open",
                 "r lr-x------\nw l-wx------\nnone ENOENT\nlink EACCES\n"
                 "open EACCES\nmemfd mem\n"),
                ([], "off", absent),
                (["--fast-open", "--strict-metadata"], "off", absent)):
            run, r = fx.run("python3 %s" % path, opts=opts)
            eq(ll(r).get("fast_path"), level, "%s: fast_path" % opts)
            eq(r.get("stdout"), want, "%s: what shows" % opts)
    finally:
        out.kill()
        out.wait()


def stack_layers(n):
    """A preexec: n Landlock layers on the process that becomes corral
    (each handles execute and allows it beneath /: they change nothing
    but the count, whose kernel limit is 16)."""
    def pre():
        import ctypes
        import struct
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(38, 1, 0, 0, 0) != 0:       # PR_SET_NO_NEW_PRIVS
            os._exit(120)
        attr = ctypes.c_uint64(1)                   # ACCESS_FS_EXECUTE
        for _ in range(n):
            rs = libc.syscall(444, ctypes.byref(attr), 8, 0)
            fd = os.open("/", os.O_PATH)
            pb = ctypes.create_string_buffer(struct.pack("=Qi", 1, fd), 12)
            if rs < 0 or libc.syscall(445, rs, 1, pb, 0) != 0 or \
                    libc.syscall(446, rs, 0) != 0:
                os._exit(121)
            os.close(rs)
            os.close(fd)
    return pre


@test
def landlock_the_child_could_not_apply_is_not_reported_applied(t):
    """A caller already under 16 Landlock layers (the kernel's limit):
    the child's landlock_restrict_self fails (E2BIG), the run ends before
    the program as platform_failure, and the result said the ABI was
    applied all the same (found by a probing session). Now it says none
    was, and why. Under 15 layers corral's is the 16th: applied."""
    need_landlock(t)
    fx = Fix(t)
    marker = os.path.join(fx.ws, "ran")
    for mode in ("auto", "require"):
        run = t.corral(["run", "--json", "-w", fx.ws, "--landlock=" + mode,
                        "--fast-open", "--", "sh", "-c",
                        "touch %s; echo started" % marker],
                       preexec=stack_layers(16))
        r = t.result(run)
        check_result_shape(r)
        eq(run.code, 125, "%s: exit status (%s)" % (mode, r.get("message")))
        eq(r.get("status"), "platform_failure", "%s: status" % mode)
        contains(r.get("message", ""), "Landlock", "%s: message" % mode)
        true(not os.path.exists(marker), "%s: the program did not run" % mode)
        v = ll(r)
        eq(v.get("applied"), False, "%s: landlock.applied" % mode)
        eq(v.get("abi"), 0, "%s: landlock.abi" % mode)
        eq(v.get("fast_path"), "off", "%s: landlock.fast_path" % mode)
        contains(v.get("reason") or "", "ended before the program started",
                 "%s: landlock.reason" % mode)
    run = t.corral(["run", "--json", "-w", fx.ws, "--", "sh", "-c",
                    "echo started"], preexec=stack_layers(15))
    r = t.result(run)
    eq(run.code, 0, "15 layers: exit status (%s)" % r.get("message"))
    eq(r.get("stdout"), "started\n", "15 layers: stdout")
    eq(ll(r).get("applied"), True, "15 layers: landlock.applied")
    t.assert_next_run_ok()
