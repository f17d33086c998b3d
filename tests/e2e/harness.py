"""tests/e2e/harness.py: the small framework of the end-to-end tests.

Every corral invocation goes through the nons wrapper (tests/progs/nons.c),
so a passing test also shows that corral needed no namespace. Each test is a
function taking a T (its context) and registered with @test; run.py runs them
and prints exactly one line per test: "PASS: e2e/NAME" or
"FAIL: e2e/NAME: why". An exception in a test is a FAIL of that test.

Python 3 standard library only; run with /usr/bin/python3.
"""

import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import traceback

POLICY_VERSION = "2026-12-07.2"
USAGE_KEYS = ("wall_ms", "cpu_ms", "peak_memory_bytes", "processes",
              "output_bytes", "disk_bytes", "files", "net_bytes",
              "net_connections")


class Config:
    """Where things are; filled in by run.py from arguments or environment."""
    corral = None       # path of the corral binary
    corral_bypass = None  # the test-only build whose opens skip the resolver
    progs = None        # directory of the built tests/progs programs
    policy_dir = None   # directory holding default.json (may be None)
    marker = None       # the suite's unique marker; per-test markers extend it
    tmpdir = None       # the TMPDIR corral and the tests use
    verbose = False


CFG = Config()

_REGISTRY = []


def test(fn=None, *, root=False, name=None, supervisor_only=False):
    """Register a test. root=True: run only in the root tier (run.sh runs it
    as root before dropping privileges); such tests are not part of the
    unprivileged tier. supervisor_only=True: what the test asserts is the
    supervisor's alone (a budget, the watchdog, the errno of a call corral
    performs), which the Landlock layer neither adds to nor takes from;
    the Landlock-off pass skips it rather than run it twice."""
    def reg(f):
        f.corral_supervisor_only = supervisor_only
        _REGISTRY.append((name or f.__name__, f, root))
        return f
    if fn is not None:
        return reg(fn)
    return reg


def registry():
    return list(_REGISTRY)


class Fail(AssertionError):
    pass


def _show(v, limit=300):
    r = repr(v)
    if len(r) > limit:
        r = r[:limit] + "...(%d chars)" % len(r)
    return r


# ---- assertions: each prints both operands on failure ----

def eq(got, want, what="value"):
    if got != want:
        raise Fail("%s: got %s, want %s" % (what, _show(got), _show(want)))


def ne(got, notwant, what="value"):
    if got == notwant:
        raise Fail("%s: got %s, want anything else" % (what, _show(got)))


def true(cond, what):
    if not cond:
        raise Fail(what)


def contains(hay, needle, what="text"):
    if needle not in hay:
        raise Fail("%s: %s not found in %s" % (what, _show(needle),
                                               _show(hay, 600)))


def not_contains(hay, needle, what="text"):
    if needle in hay:
        raise Fail("%s: %s unexpectedly found in %s" % (
            what, _show(needle), _show(hay, 600)))


def lt(got, bound, what="value"):
    if not got < bound:
        raise Fail("%s: got %s, want < %s" % (what, _show(got), _show(bound)))


def ge(got, bound, what="value"):
    if not got >= bound:
        raise Fail("%s: got %s, want >= %s" % (what, _show(got),
                                               _show(bound)))


def is_int(v, what):
    if not (isinstance(v, int) and not isinstance(v, bool)):
        raise Fail("%s: got %s, want an integer" % (what, _show(v)))


# ---- processes ----

def _read(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def processes(marker, exclude=()):
    """Live processes of this uid whose command line or environment holds
    marker: a list of (pid, command line). Zombies (empty cmdline) and this
    process are left out."""
    m = marker.encode() if isinstance(marker, str) else marker
    me = os.getuid()
    skip = set(exclude) | {os.getpid()}
    found = []
    for ent in os.listdir("/proc"):
        if not ent.isdigit():
            continue
        pid = int(ent)
        if pid in skip:
            continue
        try:
            if os.stat("/proc/%d" % pid).st_uid != me:
                continue
        except OSError:
            continue
        cmd = _read("/proc/%d/cmdline" % pid)
        if not cmd:
            continue
        if m in cmd or m in _read("/proc/%d/environ" % pid):
            found.append((pid, cmd.replace(b"\0", b" ").decode(
                "utf-8", "replace").strip()))
    return found



def answers(text):
    """'NAME WORD...' lines of a probe's output as {NAME: rest}."""
    out = {}
    for ln in (text or "").splitlines():
        if ln:
            k, _, v = ln.partition(" ")
            out[k] = v
    return out


def denials_of(r, syscall=None, layer=None):
    """The result's denials of this syscall and layer (None: any)."""
    return [d for d in (r.get("denials") or [])
            if (syscall is None or d.get("syscall") == syscall) and
            (layer is None or d.get("layer") == layer)]

def proc_state(pid):
    """The state letter of /proc/PID/stat ("T" stopped, "t" traced), or
    "gone"."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def unused_port(host="127.0.0.1"):
    """A TCP port nobody holds on host now, below the kernel's ephemeral
    range (32768 up here), where no bind to port 0 of another test or of
    the second runner running beside this one can take it before the test
    uses it (a port picked by binding 0 and closing was taken so)."""
    import random
    import socket
    for _ in range(200):
        port = random.randrange(20000, 32000)
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        try:
            s.bind((host, port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise Fail("no unused port below the ephemeral range")


def wait_for(cond, timeout, interval=0.05):
    """Poll cond() until it returns a true value or timeout seconds pass;
    returns the last value."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= end:
            return v
        time.sleep(interval)


def kill_pids(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def workspaces(tmpdir=None):
    """corral's private workspaces ($TMPDIR/corral-*) present now."""
    d = tmpdir or CFG.tmpdir
    try:
        return {e for e in os.listdir(d) if e.startswith("corral-")}
    except OSError:
        return set()


def open_fd_count():
    return len(os.listdir("/proc/self/fd"))


def base_env():
    """The environment corral is started with unless a test adds to it."""
    return {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": os.environ.get("HOME", CFG.tmpdir),
        "TMPDIR": CFG.tmpdir,
    }


def _merge_env(extra):
    env = base_env()
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def _wants_json(args):
    opts = args[:args.index("--")] if "--" in args else args
    return "--json" in opts


def _child_setup(preexec):
    # Python ignores SIGPIPE; the programs tested expect the default.
    def pre():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if preexec:
            preexec()
    return pre


def landlock_pass():
    """The Landlock mode this pass of the suite forces on every run
    (CORRAL_E2E_LANDLOCK: auto, off or require; tests/run.sh runs the
    attack suites once with each of auto and off), or None."""
    v = os.environ.get("CORRAL_E2E_LANDLOCK", "")
    return v if v in ("auto", "off", "require") else None


def landlock_args(args):
    """args with --landlock=MODE after `run` when a pass forces a mode and
    the test did not choose one itself."""
    args = list(args)
    mode = landlock_pass()
    if not mode or not args or args[0] != "run":
        return args
    opts = args[:args.index("--")] if "--" in args else args
    if any(a.startswith("--landlock") for a in opts):
        return args
    return [args[0], "--landlock=" + mode] + args[1:]


class Run:
    """One finished corral (or native) invocation. Unpacks as
    (code, out, err, result)."""

    def __init__(self, argv, code, out, err, result, elapsed, pid,
                 json_error=None):
        self.argv = argv
        self.code = code
        self.out = out
        self.err = err
        self.result = result
        self.elapsed = elapsed
        self.pid = pid
        self.json_error = json_error

    def __iter__(self):
        return iter((self.code, self.out, self.err, self.result))

    def summary(self):
        return "rc=%s %.1fs stdout=%s stderr=%s" % (
            self.code, self.elapsed, _show(self.out, 200),
            _show(self.err, 400))


class T:
    """The context of one test: a unique marker, a private temporary
    directory, and the ways to run corral and the helper programs."""

    def __init__(self, name):
        self.name = name
        self.marker = "%s-%s" % (CFG.marker, secrets.token_hex(6))
        self.tmp = tempfile.mkdtemp(prefix="e2e-%s-" % name[:20],
                                    dir=CFG.tmpdir)
        self.last = None

    # -- paths --
    def prog(self, name):
        return os.path.join(CFG.progs, name)

    def prog_roots(self):
        """Options letting a sandboxed program run a helper program from
        the progs directory (outside the default exec roots)."""
        return ["--ro", CFG.progs, "--exec", CFG.progs]

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def workspace_among_hidden(self, count):
        """A workspace top/ws whose parent holds count files the run may
        not see: listings of top are filtered by corral. (top, ws)."""
        top = self.path("top")
        ws = os.path.join(top, "ws")
        os.makedirs(ws)
        for i in range(count):
            open(os.path.join(top, "hidden-%05d" % i), "w").close()
        for d in (self.tmp, top, ws):
            os.chmod(d, 0o755)
        return top, ws

    def write(self, name, text, mode=0o644):
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w" if isinstance(text, str) else "wb") as f:
            f.write(text)
        os.chmod(p, mode)
        return p

    # -- running --
    def spawn(self, args, env=None, pass_fds=(), nons_flags=(),
              stdin=False, preexec=None, start_new_session=False,
              native=False, binary=None):
        """Start [nons, corral, *args] (or args alone when native) without
        waiting; the caller collects it with finish(). binary: another
        corral build (CFG.corral_bypass)."""
        if native:
            argv = list(args)
        else:
            argv = [self.prog("nons")] + list(nons_flags) + \
                [binary or CFG.corral] + landlock_args(args)
        p = subprocess.Popen(
            argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=_merge_env(env), pass_fds=tuple(pass_fds), close_fds=True,
            preexec_fn=_child_setup(preexec),
            start_new_session=start_new_session)
        p._t0 = time.monotonic()
        p._argv = argv
        return p

    def finish(self, p, stdin=None, timeout=60, want_json=None):
        try:
            out, err = p.communicate(input=stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            try:
                out, err = p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                # Something corral started still holds the pipes open.
                out, err = b"", b"(pipes still held open after the kill)"
                p.stdout.close()
                p.stderr.close()
                p.wait()
            self.last = Run(p._argv, p.returncode, out, err, None,
                            time.monotonic() - p._t0, p.pid)
            raise Fail("timed out after %ss: %s" % (
                timeout, " ".join(p._argv)[:300]))
        elapsed = time.monotonic() - p._t0
        if want_json is None:
            want_json = _wants_json(p._argv)
        result, jerr = None, None
        if want_json:
            try:
                result = json.loads(out.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                jerr = str(e)
        run = Run(p._argv, p.returncode, out, err, result, elapsed, p.pid,
                  jerr)
        self.last = run
        return run

    def corral(self, args, stdin=None, timeout=60, env=None, pass_fds=(),
               nons_flags=(), preexec=None, start_new_session=False,
               binary=None):
        """Run [nons, corral, *args] to the end: a Run that unpacks as
        (exit code, stdout bytes, stderr bytes, result or None)."""
        if isinstance(stdin, str):
            stdin = stdin.encode()
        p = self.spawn(args, env=env, pass_fds=pass_fds,
                       nons_flags=nons_flags, stdin=stdin is not None,
                       preexec=preexec, start_new_session=start_new_session,
                       binary=binary)
        return self.finish(p, stdin=stdin, timeout=timeout)

    def native(self, argv, stdin=None, timeout=60, env=None, pass_fds=(),
               preexec=None, start_new_session=False):
        """Run argv directly (no corral, no wrapper), for differential
        checks."""
        if isinstance(stdin, str):
            stdin = stdin.encode()
        p = self.spawn(argv, env=env, pass_fds=pass_fds,
                       stdin=stdin is not None, preexec=preexec,
                       start_new_session=start_new_session, native=True)
        return self.finish(p, stdin=stdin, timeout=timeout, want_json=False)

    def result(self, run):
        """The result object of a --json run, or a failure saying why there
        is none."""
        if run.result is None:
            raise Fail("no result JSON (%s)" % (
                run.json_error or "--json not given"))
        if not isinstance(run.result, dict):
            raise Fail("result is not an object: %s" % _show(run.result))
        return run.result

    def assert_next_run_ok(self):
        """After a failing, denied or limited case: the next plain run still
        gets full service."""
        run = self.corral(["run", "--json", "--", "echo", "next-ok"])
        r = self.result(run)
        eq(run.code, 0, "follow-up run: exit status")
        eq(r.get("status"), "ok", "follow-up run: status")
        eq(r.get("stdout"), "next-ok\n", "follow-up run: stdout")

    def no_marker_processes(self, what, marker=None, exclude=(), grace=2.0):
        """Assert no process carries the marker, allowing grace seconds for
        killed processes to finish dying."""
        m = marker or self.marker
        left = wait_for(lambda: not processes(m, exclude), grace)
        if not left:
            procs = processes(m, exclude)
            kill_pids(p for p, _ in procs)
            raise Fail("%s: processes survived: %s" % (what, _show(procs)))

    def cleanup(self):
        def onerror(func, path, exc):
            try:
                os.chmod(os.path.dirname(path), 0o700)
                os.chmod(path, 0o700)
                func(path)
            except OSError:
                pass
        for root, dirs, _ in os.walk(self.tmp):
            for d in dirs:
                try:
                    os.chmod(os.path.join(root, d), 0o700)
                except OSError:
                    pass
        shutil.rmtree(self.tmp, onerror=onerror)


def run_test(name, fn):
    """Run one test; print its one line; return True when it passed.
    With CORRAL_E2E_TIMES set, a "TIME: tier/NAME SECONDS" line before it
    (not counted by tests/run.sh), to find the slow ones."""
    start = time.monotonic()
    before = workspaces()
    t = None
    why = None
    try:
        t = T(name)
        fn(t)
    except Fail as e:
        why = str(e)
    except Exception as e:  # a broken test is a failing test
        tb = traceback.extract_tb(e.__traceback__)
        where = ("%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno)
                 if tb else "?")
        why = "%s: %s (at %s)" % (type(e).__name__, e, where)
    # Hygiene after every test, pass or fail: nothing of it may remain.
    if t is not None:
        also = []
        if not wait_for(lambda: not processes(t.marker), 2.0):
            procs = processes(t.marker)
            kill_pids(p for p, _ in procs)
            also.append("left processes behind: %s" % _show(procs))
        new = workspaces() - before
        if new:
            also.append("left corral workspaces in %s: %s" % (
                CFG.tmpdir, sorted(new)))
        if also:
            why = "; ".join(([why] if why else []) + also)
        if why and t.last is not None:
            why += " | last run: " + t.last.summary()
        try:
            t.cleanup()
        except Exception:
            pass
    tier = "e2e" if not landlock_pass() else "e2e-landlock-" + landlock_pass()
    if os.environ.get("CORRAL_E2E_TIMES"):
        print("TIME: %s/%s %.2f" % (tier, name, time.monotonic() - start),
              flush=True)
    if why is None:
        print("PASS: %s/%s" % (tier, name), flush=True)
        return True
    one_line = re.sub(r"\s*\n\s*", " \\\\n ", why)
    if len(one_line) > 1500:
        one_line = one_line[:1500] + "..."
    print("FAIL: %s/%s: %s" % (tier, name, one_line), flush=True)
    return False


# ---- helpers shared by several test files ----

def metadata_fast(r):
    """True when the run's seccomp program left the metadata calls (the
    stat family, access, readlink) to the kernel: the fast path under
    Landlock. They then answer outside the roots as the kernel would --
    metadata, not ENOENT, and no denial recorded (docs/threat-model.md,
    "The fast path"). A test whose answer this changes asks this and says
    so; everything else it checks holds in both modes."""
    ll = r.get("landlock") if isinstance(r, dict) else None
    return isinstance(ll, dict) and ll.get("fast_path") in ("metadata",
                                                             "open")


def check_result_shape(r):
    """Every key of the contract's result object, with its type."""
    eq(r.get("schema"), 1, "schema")
    true(isinstance(r.get("task_id"), str) and r["task_id"],
         "task_id: want a non-empty string, got %r" % r.get("task_id"))
    for k in ("policy_version", "class", "status", "stdout", "stderr",
              "message"):
        true(isinstance(r.get(k), str), "%s: want a string, got %r" %
             (k, r.get(k)))
    for k in ("stdout_truncated", "stderr_truncated"):
        true(isinstance(r.get(k), bool), "%s: want a boolean, got %r" %
             (k, r.get(k)))
    u = r.get("usage")
    true(isinstance(u, dict), "usage: want an object, got %r" % u)
    for k in USAGE_KEYS:
        true(k in u, "usage.%s missing (usage %r)" % (k, u))
        is_int(u[k], "usage." + k)
        ge(u[k], 0, "usage." + k)
    true(isinstance(r.get("denials"), list), "denials: want a list")
    is_int(r.get("denials_dropped"), "denials_dropped")
    true(isinstance(r.get("artifacts"), list), "artifacts: want a list")
    c = r.get("cleanup")
    true(isinstance(c, dict), "cleanup: want an object, got %r" % c)
    is_int(c.get("killed"), "cleanup.killed")
    is_int(c.get("leftover_processes"), "cleanup.leftover_processes")
    true(isinstance(c.get("workspace_removed"), bool),
         "cleanup.workspace_removed: want a boolean, got %r" %
         c.get("workspace_removed"))


def parse_status(text):
    """/proc/PID/status as a dict of strings."""
    d = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        d[k.strip()] = v.strip()
    return d


def parse_stat(text):
    """/proc/PID/stat: (pid, dict of the fields after the command name)."""
    pid = int(text.split(" ", 1)[0])
    rest = text[text.rindex(")") + 2:].split()
    names = ("state", "ppid", "pgrp", "session", "tty_nr")
    return pid, {n: (rest[i] if n == "state" else int(rest[i]))
                 for i, n in enumerate(names)}


def set_cloexec(fd, on):
    fl = fcntl.fcntl(fd, fcntl.F_GETFD)
    fcntl.fcntl(fd, fcntl.F_SETFD,
                fl | fcntl.FD_CLOEXEC if on else fl & ~fcntl.FD_CLOEXEC)


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def assert_breach(t, run, r, limit):
    """Stopped by corral for `limit`: status, exit, audit-free parts of the
    result, the whole tree killed."""
    eq(r.get("status"), "limit_exceeded",
       "status (message %r)" % r.get("message"))
    eq(r.get("limit"), limit, "limit (message %r)" % r.get("message"))
    eq(run.code, 124, "exit status")
    check_result_shape(r)
    contains(r.get("message", ""), limit, "message")
    eq(r["cleanup"]["leftover_processes"], 0, "cleanup.leftover_processes")
    t.no_marker_processes("after the %s limit" % limit)
