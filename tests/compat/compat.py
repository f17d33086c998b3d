"""tests/compat/compat.py: judge corral with real suites nobody here wrote,
each run natively and under corral, side by side, as the same uid.

    compat.py [--corral PATH] [--progs DIR] [-j N] [--only REGEX]
              [--budget SECONDS] [--py-timeout S] [--markdown FILE]
              [--details FILE] [--no-cpython] [--list]
    compat.py --render DETAILS --markdown FILE

Every row is one command run twice from a fresh workspace of its own: natively
(setpriv to uid 65534, env -i, cwd = the workspace, HOME and TMPDIR in it) and
as `nons corral run -w WS --limit wall=... --limit cpu=... -- CMD` with the
very same uid, environment and cwd. Prints one line per row, then
"N same, N differ"; writes the table as Markdown (--markdown) and everything
known about each row as JSON (--details). Exits 1 when a row differs, 2 when
nothing ran. `make compat` is the usual way in; docs/compatibility.md says
how rows are judged and what the last run found.

Python 3 standard library only; run with /usr/bin/python3.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3"
NOBODY = 65534
SAFE_PATH = "/usr/bin:/bin"

# CPython's resources: everything but what needs the internet, hours of CPU,
# gigabytes of disk (the disk budget is a limit corral sets on purpose), a
# display, a sound card, or every time zone of the world.
PY_RESOURCES = "-uall,-network,-urlfetch,-cpu,-largefile,-extralargefile," \
    "-gui,-audio,-tzdata"

# The modules an agent's code leans on most: run first, so a run cut by
# --budget still judges them.
PRIORITY = """
os posix io fileio shutil tempfile pathlib glob fnmatch subprocess signal
socket selectors asyncio threading thread multiprocessing_fork
multiprocessing_forkserver multiprocessing_spawn concurrent_futures logging
json csv sqlite3 zipfile tarfile gzip bz2 lzma zlib http_client httpservers
urllib urllib2 urllib2_localnet urllibnet ssl venv site sysconfig importlib
zipimport compileall py_compile unittest doctest pty ioctl fcntl select mmap
resource socketserver xmlrpc ftplib smtplib getpass uuid locale time datetime
shelve dbm dbm_dumb dbm_gnu dbm_ndbm pickle argparse configparser
filecmp stat genericpath posixpath ntpath shlex platform pwd grp os_fork
faulthandler tracemalloc sched queue wsgiref mailbox poll epoll kqueue
asyncore asynchat imaplib poplib telnetlib nntplib builtin sys cmd_line
cmd_line_script pydoc inspect traceback file support
""".split()


# ---- the rows ----

class Row:
    """One item: a shell command run in a workspace holding copies of the
    named fixture projects (tests/compat/projects/). A command row worked
    when it exits 0; a CPython row (cpython = the module) is judged by
    regrtest's verdict and junit file."""

    def __init__(self, name, script, projects=(), timeout=180,
                 cpython=None):
        self.name = name
        self.script = script
        self.projects = projects
        self.timeout = timeout
        self.cpython = cpython  # the regrtest module name, or None


def plain_rows():
    r = []
    r.append(Row("pytest: loopback HTTP server project",
                 "%s -m pytest -q -p no:cacheprovider pyhttp" % PY,
                 ("pyhttp",)))
    r.append(Row("pip: venv, wheel, install, install -e", r"""
set -e
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1
%s -m venv --system-site-packages venv
cd pkg
../venv/bin/pip wheel --no-deps --no-build-isolation -w ../dist .
../venv/bin/pip install ../dist/compatpkg-1.0-py3-none-any.whl
../venv/bin/python -c 'import compatpkg; print(compatpkg.hello())'
../venv/bin/compatpkg-hello
../venv/bin/pip uninstall -y compatpkg
../venv/bin/pip install --no-build-isolation -e .
../venv/bin/python -c 'import compatpkg, sys; assert "/pkg/src/" in compatpkg.__file__, compatpkg.__file__'
../venv/bin/pip list | grep compatpkg
""" % PY, ("pkg",), timeout=300))
    r.append(Row("git: init, commit, hook, log, clone, gc", r"""
set -e
git init -q repo
cd repo
git config user.email compat@example.invalid
git config user.name compat
echo one > f
git add f
git commit -qm one
printf '#!/bin/sh\necho hook ran > ../hook.out\n' > .git/hooks/post-commit
chmod +x .git/hooks/post-commit
echo two >> f
git commit -qam two
test "$(git log --oneline | wc -l)" = 2
grep -q 'hook ran' ../hook.out
git tag v1
git clone -q . ../clone
test "$(git -C ../clone log -1 --format=%s)" = two
git gc -q
git status --short
"""))
    r.append(Row("cmake: configure, build, ctest", r"""
set -e
cmake -S cmake -B cmake/build
cmake --build cmake/build
cd cmake/build
ctest --output-on-failure
""", ("cmake",), timeout=240))
    r.append(Row("node: loopback HTTP server and client",
                 "node node/server.js", ("node",)))
    r.append(Row("perl: one-liners with modules", r"""
set -e
test "$(perl -MList::Util=sum,max -e 'print sum(1..10), max(3,9,2)')" = 559
perl -Mstrict -Mwarnings -e 'my $x = 1; print "$x\n"'
perl -MPOSIX=floor -e 'print floor(2.5), "\n"'
perl -MData::Dumper -e '$Data::Dumper::Terse = 1; print Dumper([1, 2])'
perl -MFile::Temp=tempfile -e '($fh, $n) = tempfile(); print $fh "x"; close $fh; -s $n or die'
perl -MDigest::MD5=md5_hex -e 'print md5_hex("a"), "\n"'
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:0") or die "$!"; print $s->sockport > 0 ? "ok\n" : die'
"""))
    r.append(Row("ruby: one-liners with modules", r"""
set -e
test "$(ruby -rjson -e 'print JSON.generate({"a" => [1, 2]})')" = '{"a":[1,2]}'
ruby -rtempfile -e 'Tempfile.create("x") { |f| f.write("y"); f.flush; raise unless File.size(f.path) == 1 }'
ruby -ropen3 -e 'o, s = Open3.capture2("echo", "hi"); raise unless o == "hi\n" && s.success?'
ruby -rfileutils -e 'FileUtils.mkdir_p("a/b/c"); FileUtils.rm_rf("a")'
ruby -rsocket -e 's = TCPServer.new("127.0.0.1", 0); c = TCPSocket.new("127.0.0.1", s.addr[1]); a = s.accept; c.write("hi"); raise unless a.read(2) == "hi"'
"""))
    r.append(Row("ps -ef", "ps -ef"))
    r.append(Row("ps -p $$", "ps -p $$"))
    r.append(Row("top -b -n1", "top -b -n1"))
    r.append(Row("pty: python pty.openpty + ttyname", r"""
%s -c '
import os, pty
m, s = pty.openpty()
print(os.ttyname(s))
os.write(s, b"ping\n")
assert os.read(m, 100).startswith(b"ping"), "no echo through the pty"
'
""" % PY))
    r.append(Row("script: a command under a pty (bsdutils)",
                 "script -qec 'tty; echo in-pty' /dev/null | grep -q in-pty"))
    r.append(Row("sqlite3: shell and python module", r"""
set -e
sqlite3 db.sqlite 'create table t(a); insert into t values (1), (2); select sum(a) from t;' | grep -qx 3
%s -c '
import sqlite3
c = sqlite3.connect("db.sqlite")
c.execute("pragma journal_mode=wal")
c.execute("insert into t values (3)")
c.commit()
assert c.execute("select sum(a) from t").fetchone()[0] == 6
'
""" % PY))
    r.append(Row("postgresql",  # a short name: the socket path is the workspace
                 r"""
set -e
B=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
test -x "$B/initdb" || { echo "needs postgresql (Debian's)"; exit 1; }
$B/initdb -D data -A trust -U me > init.log
$B/pg_ctl -D data -o "-k $PWD -c listen_addresses=''" -l pg.log -w start
$B/psql -h "$PWD" -U me -d postgres -Atc "create table t(x int); insert into t select generate_series(1, 100000)"
test "$($B/psql -h "$PWD" -U me -d postgres -Atqc "set parallel_setup_cost=0; set parallel_tuple_cost=0; set min_parallel_table_scan_size=0; select sum(x) from t")" = 5000050000
$B/pg_ctl -D data -m fast -w stop
""", timeout=240))
    r.append(Row("nginx: stock sendfile on, a 3 MB file over loopback",
                 r"""
set -e
N=$(command -v nginx || echo /usr/sbin/nginx)
test -x "$N" || { echo "needs nginx (Debian's nginx-light)"; exit 1; }
mkdir -p html tmp && head -c 3000000 /dev/urandom > html/big.bin
printf '%%s\n' 'worker_processes 1;' 'daemon off;' 'error_log ngx.err info;' \
  'pid nginx.pid;' 'events { worker_connections 64; }' 'http {' \
  'access_log off; sendfile on; client_body_temp_path tmp/b;' \
  'proxy_temp_path tmp/p; fastcgi_temp_path tmp/f; uwsgi_temp_path tmp/u;' \
  'scgi_temp_path tmp/s; server { listen 127.0.0.1:18089; root html; } }' \
  > nginx.conf
"$N" -p "$PWD" -c "$PWD/nginx.conf" &
NP=$!
%s -c '
import hashlib, time, urllib.request
for i in range(50):
    try:
        d = urllib.request.urlopen("http://127.0.0.1:18089/big.bin", timeout=10).read()
        break
    except OSError:
        time.sleep(0.1)
assert d == open("html/big.bin", "rb").read(), "wrong bytes"
'
kill $NP
wait $NP || true
""" % PY, timeout=60))
    r.append(Row("make: compile, pattern rules, recursion",
                 "make -C make", ("make",)))
    r.append(Row("coreutils: tar, gzip, find, sort, ln, mv", r"""
set -e
mkdir -p d/e && echo b > d/e/b && echo a > d/a && ln -s a d/l
tar czf d.tgz d && mkdir x && tar xzf d.tgz -C x
test "$(find x -type f | sort | tr '\n' ' ')" = 'x/d/a x/d/e/b '
test "$(readlink x/d/l)" = a
mv x y && rm -r y d d.tgz
"""))
    return r


def cpython_modules():
    out = subprocess.run([PY, "-m", "test", "--list-tests"],
                         capture_output=True, text=True, timeout=120,
                         env={"PATH": SAFE_PATH, "LANG": "C.UTF-8"})
    mods = [m.strip() for m in out.stdout.split() if m.startswith("test_")]
    first = ["test_" + m for m in PRIORITY if "test_" + m in mods]
    seen = set(first)
    return first + [m for m in mods if m not in seen]


def cpython_rows(timeout):
    rows = []
    for m in cpython_modules():
        script = "%s -m test %s --timeout %d --junit-xml junit.xml %s" % (
            PY, PY_RESOURCES, max(60, timeout - 60), m)
        rows.append(Row("cpython/" + m, script, timeout=timeout, cpython=m))
    return rows


# ---- running one side ----

def run_side(cfg, row, side, ws):
    """Run row's script in ws on one side; return a dict with rc, out, err,
    elapsed, timed_out and (corral) the result object."""
    env = {"PATH": SAFE_PATH, "LANG": "C.UTF-8", "HOME": ws, "TMPDIR": ws}
    cmd = ["/bin/sh", "-c", row.script]
    res_file = None
    if side == "corral":
        # corral gives the program HOME and TMPDIR in the workspace itself;
        # the caller's own HOME may not be the workspace (corral refuses a
        # workspace that is the caller's home or an ancestor of it).
        env["HOME"] = cfg.resdir
        res_file = os.path.join(cfg.resdir, "%s.json" % os.path.basename(ws))
        cmd = [cfg.nons, cfg.corral, "run", "-w", ws, "--result", res_file,
               "--limit", "wall=%ds" % row.timeout,
               "--limit", "cpu=%ds" % (2 * row.timeout), "--"] + cmd
    if cfg.drop:
        cmd = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
               "--clear-groups"] + cmd
    # corral's own wall limit should end a corral run first; this bound is
    # for a run that hangs whatever it is (native, or corral itself).
    outer = row.timeout + (30 if side == "corral" else 0)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ws, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=outer)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(p.pid, sig)
            except OSError:
                pass
            try:
                out, err = p.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            p.kill()
            out, err = b"", b"(pipes held open after the kill)"
            p.wait()
    elapsed = time.monotonic() - t0
    kill_strays(ws)
    result = None
    if res_file:
        try:
            with open(res_file) as f:
                result = json.load(f)
        except (OSError, ValueError):
            result = None
    return {"rc": p.returncode, "out": out.decode("utf-8", "replace"),
            "err": err.decode("utf-8", "replace"), "elapsed": elapsed,
            "timed_out": timed_out, "result": result}


def kill_strays(ws):
    """Processes a run left behind: they carry its workspace in their
    environment (HOME, TMPDIR), which nothing else on the machine does."""
    mark = ("HOME=%s\0" % ws).encode()
    for _ in range(3):
        found = []
        for ent in os.listdir("/proc"):
            if not ent.isdigit() or int(ent) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % ent, "rb") as f:
                    if mark in f.read(1 << 20):
                        found.append(int(ent))
            except OSError:
                continue
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)


# ---- judging ----

REGR_RESULT = re.compile(r"Tests result: ([A-Z][A-Z ,]*[A-Z])")


def outcome(row, side, r):
    """One short word for how a side ended."""
    res = r["result"]
    if side == "corral" and res is not None and \
            res.get("status") not in ("ok", "program_error"):
        lim = res.get("limit")
        return res.get("status") + (":" + lim if lim else "")
    if r["timed_out"]:
        return "timeout"
    if side == "corral" and res is None:
        return "no-result(rc=%s)" % r["rc"]
    if row.cpython:
        m = REGR_RESULT.findall(r["out"])
        if not m:
            return "crash(rc=%s)" % r["rc"]
        word = m[-1]
        if word == "SUCCESS":
            skipped = re.search(r"%s skipped" % re.escape(row.cpython),
                                r["out"]) or "1 test skipped" in r["out"]
            return "skipped" if skipped else "pass"
        return {"FAILURE": "fail", "ENV CHANGED": "env-changed",
                "NO TESTS RAN": "no-tests"}.get(word, word.lower())
    return "ok" if r["rc"] == 0 else "fail(rc=%s)" % r["rc"]


def junit_failures(ws):
    """({test id: first line of its failure}, {test id: skip reason}) from
    regrtest's junit file; (None, None) without one."""
    path = os.path.join(ws, "junit.xml")
    fails = {}
    skips = {}
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return None, None
    for tc in tree.iter("testcase"):
        e = tc.find("skipped")
        if e is not None:
            skips[tc.get("name", "?")] = (e.get("message") or
                                          e.text or "")[:200]
        for kind in ("failure", "error"):
            e = tc.find(kind)
            if e is not None:
                msg = (e.get("message") or e.text or "").strip()
                lines = [ln for ln in msg.splitlines() if ln.strip()]
                fails[tc.get("name", "?")] = kind + ": " + (
                    lines[-1] if lines else "")[:300]
    return fails, skips


def denial_text(d):
    t = d.get("target")
    return "%s %s(%s, %s)" % (d.get("syscall"), (t + " ") if t else "",
                              d.get("layer"), d.get("reason"))


def first_denial(result):
    if not result:
        return ""
    ds = sorted(result.get("denials") or [], key=lambda d: d.get("ms", 0))
    return denial_text(ds[0]) if ds else ""


def denial_key(d):
    return (d.get("syscall"), d.get("target"), d.get("reason"))


# Probes whose refusal changes nothing a program relies on (measured: the
# same programs run alike without them): Python's and urllib3's "is IPv6
# usable" bind of [::1]:0, nss-systemd's user database, the resolver's
# host.conf, and the CPU and NUMA lists glibc and procps fall back from.
PROBES = {("bind", "[::1]:0"), ("openat", "/run/systemd/userdb/"),
          ("openat", "/etc/host.conf"),
          ("openat", "/sys/devices/system/cpu/online"),
          ("openat", "/sys/devices/system/cpu/possible"),
          ("openat", "/sys/devices/system/node")}


def telling_denial(result, baseline=()):
    """The first denial that can explain a difference: one not of the fs
    layer, or of a path that exists on the host (a refused probe of an absent
    file changes at most the errno), and not in baseline (what the same
    program does in a row that passes both ways: regrtest's start-up)."""
    if not result:
        return ""
    for d in sorted(result.get("denials") or [], key=lambda d: d.get("ms", 0)):
        t = d.get("target")
        if denial_key(d) in baseline or \
                (d.get("syscall"), t) in PROBES:
            continue
        if d.get("layer") != "fs" or not t or os.path.lexists(t):
            return denial_text(d)
    return ""


def cpython_baseline(cfg):
    """The denials of regrtest itself, running a module that touches nothing
    (test_fnmatch): left out of the CPython rows' telling denial."""
    row = Row("baseline", "%s -m test %s test_fnmatch" % (PY, PY_RESOURCES),
              timeout=120, cpython="test_fnmatch")
    ws = make_ws(cfg, row, "corral")
    r = run_side(cfg, row, "corral", ws)
    remove_ws(ws)
    return {denial_key(d) for d in (r["result"] or {}).get("denials") or []}


def tail(text, n=1500):
    return text[-n:]


# ---- workspaces ----

def make_ws(cfg, row, side):
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", row.name)[:60]
    ws = tempfile.mkdtemp(prefix="%s.%s." % (safe, side), dir=cfg.wsroot)
    for p in row.projects:
        shutil.copytree(os.path.join(HERE, "projects", p),
                        os.path.join(ws, p))
    if cfg.drop:
        for root, dirs, files in os.walk(ws):
            for n in dirs + files + ["."]:
                os.lchown(os.path.join(root, n), NOBODY, NOBODY)
    os.chmod(ws, 0o700)
    return ws


def remove_ws(ws):
    for root, dirs, _ in os.walk(ws):
        for d in dirs:
            try:
                os.chmod(os.path.join(root, d), 0o700)
            except OSError:
                pass
    shutil.rmtree(ws, ignore_errors=True)


def run_row(cfg, row):
    rec = {"name": row.name}
    sides = {}
    for side in ("native", "corral"):
        ws = make_ws(cfg, row, side)
        r = run_side(cfg, row, side, ws)
        r["outcome"] = outcome(row, side, r)
        if row.cpython:
            r["failures"], r["skips"] = junit_failures(ws)
        remove_ws(ws)
        sides[side] = r
    n, c = sides["native"], sides["corral"]
    rec["native"] = n["outcome"]
    rec["corral"] = c["outcome"]
    rec["same"] = n["outcome"] == c["outcome"]
    rec["first_denial"] = first_denial(c["result"])
    rec["telling_denial"] = telling_denial(
        c["result"], cfg.baseline if row.cpython else ())
    rec["denials"] = (c["result"] or {}).get("denials") or []
    rec["usage"] = (c["result"] or {}).get("usage")
    rec["elapsed"] = {"native": round(n["elapsed"], 1),
                      "corral": round(c["elapsed"], 1)}
    if row.cpython:
        nf = n.get("failures") or {}
        cf = c.get("failures")
        rec["new_failures"] = None if cf is None else {
            k: v for k, v in cf.items() if k not in nf}
        # A test skipped under corral only is a difference the module's
        # verdict hides: kept in the details, and counted in the table.
        ns, cs = n.get("skips") or {}, c.get("skips")
        rec["new_skips"] = None if cs is None else {
            k: v for k, v in cs.items() if k not in ns}
        # Both sides failing hides tests that fail under corral only.
        if rec["new_failures"]:
            rec["same"] = False
    if not rec["same"]:
        for side, r in (("native", n), ("corral", c)):
            rec[side + "_stdout"] = tail(r["out"])
            rec[side + "_stderr"] = tail(r["err"])
        if c["result"]:
            rec["corral_message"] = c["result"].get("message")
    return rec


# ---- output ----

def md_cell(s):
    return (s or "").replace("|", "\\|").replace("\n", " ")


def corral_cell(rec):
    """The corral outcome, with the tests that failed or were skipped on
    corral's side only."""
    s = rec["corral"]
    more = len(rec.get("new_failures") or {})
    if more and rec["native"] == rec["corral"]:
        s += " (+%d failed)" % more
    extra = len(rec.get("new_skips") or {})
    return s + (" (+%d skipped)" % extra if extra else "")


def row_line(rec):
    mark = "same  " if rec["same"] else "DIFFER"
    s = "%s %-45s native=%-12s corral=%-12s" % (
        mark, rec["name"], rec["native"], corral_cell(rec))
    if not rec["same"] and rec["first_denial"]:
        s += " first denial: " + rec["first_denial"]
        tel = rec.get("telling_denial")
        if tel and tel != rec["first_denial"]:
            s += "; first of an existing path: " + tel
    return s


def write_markdown(path, recs, header):
    with open(path, "w") as f:
        f.write(header)
        f.write("| row | native | corral | first denial (when they differ) "
                "| first denial of an existing path or not of the fs layer |\n")
        f.write("|---|---|---|---|---|\n")
        for rec in recs:
            den = tel = ""
            name = rec["name"]
            if not rec["same"]:
                name = "**%s**" % name
                den = rec["first_denial"]
                tel = rec.get("telling_denial", "")
                tel = "(same)" if tel == den and tel else tel
            f.write("| %s | %s | %s | %s | %s |\n" % (
                md_cell(name), rec["native"], corral_cell(rec), md_cell(den),
                md_cell(tel)))


def render(details, markdown):
    """The table again from a details file (a finished or a partial run),
    judged by this version's rules."""
    with open(details) as f:
        d = json.load(f)
    recs = d["rows"] if isinstance(d, dict) else d
    for rec in recs:
        if rec.get("new_failures"):
            rec["same"] = False
        rec["telling_denial"] = telling_denial(
            {"denials": rec.get("denials")})
    header = d.get("header", "") if isinstance(d, dict) else \
        "A partial run, %d rows.\n\n" % len(recs)
    if markdown:
        write_markdown(markdown, recs, header)
    same = sum(1 for r in recs if r["same"])
    print("%d same, %d differ" % (same, len(recs) - same))
    return 1 if same < len(recs) else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corral", default=os.environ.get("CORRAL") or
                    os.path.join(REPO, "build", "corral"))
    ap.add_argument("--progs", default=os.path.join(REPO, "build", "tests",
                                                    "progs"))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--only", default=os.environ.get("COMPAT_ONLY"),
                    help="run only rows whose name matches this regex")
    ap.add_argument("--budget", type=float, default=0,
                    help="start no row after this many seconds (0: none)")
    ap.add_argument("--py-timeout", type=int, default=600,
                    help="seconds for one CPython module, each side")
    ap.add_argument("--no-cpython", action="store_true")
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--details", default=None)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--render", metavar="DETAILS",
                    help="only write --markdown again from a details file")
    a = ap.parse_args()

    if a.render:
        return render(a.render, a.markdown)

    rows = plain_rows()
    if not a.no_cpython:
        rows += cpython_rows(a.py_timeout)
    if a.only:
        rx = re.compile(a.only)
        rows = [r for r in rows if rx.search(r.name)]
    if a.list:
        for r in rows:
            print(r.name)
        return 0
    if not rows:
        print("compat: no row matches", file=sys.stderr)
        return 2
    for need in (a.corral, os.path.join(a.progs, "nons")):
        if not os.access(need, os.X_OK):
            print("compat: %s is missing (make -j2 first)" % need,
                  file=sys.stderr)
            return 2

    class Cfg:
        pass
    cfg = Cfg()
    cfg.drop = os.getuid() == 0
    # Outside any checkout and reachable by the unprivileged uid.
    stage = tempfile.mkdtemp(prefix="crcompat.", dir="/tmp")
    os.chmod(stage, 0o755)
    os.makedirs(os.path.join(stage, "bin"))
    cfg.corral = os.path.join(stage, "bin", "corral")
    cfg.nons = os.path.join(stage, "bin", "nons")
    shutil.copy(a.corral, cfg.corral)
    shutil.copy(os.path.join(a.progs, "nons"), cfg.nons)
    os.chmod(os.path.join(stage, "bin"), 0o755)
    cfg.wsroot = os.path.join(stage, "ws")
    cfg.resdir = os.path.join(stage, "res")
    for d in (cfg.wsroot, cfg.resdir):
        os.makedirs(d)
        os.chmod(d, 0o755)
        if cfg.drop:
            os.chown(d, NOBODY, NOBODY)

    cfg.baseline = set()
    if any(r.cpython for r in rows):
        cfg.baseline = cpython_baseline(cfg)

    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short",
                             "HEAD"], capture_output=True, text=True)
    print("compat: %d rows, -j%d, corral %s, as uid %d, stage %s" % (
        len(rows), a.jobs, a.corral, NOBODY if cfg.drop else os.getuid(),
        stage), flush=True)
    t0 = time.monotonic()
    recs = {}
    lock = threading.Lock()
    stopped = []

    def job(row):
        if a.budget and time.monotonic() - t0 > a.budget:
            stopped.append(row.name)
            return
        rec = run_row(cfg, row)
        with lock:
            recs[row.name] = rec
            print(row_line(rec), flush=True)
            if a.details:
                # Kept up to date as rows finish: a long run cut short still
                # leaves what it measured.
                with open(a.details + ".partial", "w") as f:
                    json.dump(list(recs.values()), f)

    try:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            for f in [ex.submit(job, r) for r in rows]:
                f.result()
    finally:
        shutil.rmtree(stage, ignore_errors=True)

    ordered = [recs[r.name] for r in rows if r.name in recs]
    same = sum(1 for r in ordered if r["same"])
    differ = len(ordered) - same
    wall = time.monotonic() - t0
    # Which corral was judged: the binary's path and digest (CORRAL may
    # name another checkout's build than this checkout's commit).
    with open(a.corral, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    header = ("Measured with %s (sha256 %s…), harness at commit %s, %s, "
              "-j%d, %d rows in %.0f s%s.\n\n" % (
        os.path.relpath(os.path.abspath(a.corral)), digest, commit.stdout.strip() or "?",
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), a.jobs,
        len(ordered), wall,
        (", %d rows not started (budget)" % len(stopped)) if stopped
        else ""))
    if a.markdown:
        write_markdown(a.markdown, ordered, header)
    if a.details:
        with open(a.details, "w") as f:
            json.dump({"header": header, "rows": ordered,
                       "not_started": stopped}, f, indent=1)
        try:
            os.unlink(a.details + ".partial")
        except OSError:
            pass
    if stopped:
        print("compat: %d rows not started (--budget)" % len(stopped))
    print("%d same, %d differ" % (same, differ))
    if not ordered:
        return 2
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
