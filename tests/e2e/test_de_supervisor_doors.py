"""Doors through the supervisor's own resources: its descriptor table and its
one loop thread. Probe: tests/progs/supervisor_doors.c.

- A blocking sendmsg on a full unix socket is kept by corral until the
  socket has room, with a copy of every descriptor it passes (SCM_RIGHTS).
  256 such sends of 253 descriptors could fill corral's table; measures
  that need a descriptor then failed: the run ended `platform_failure`
  (blaming the host), or an unlink went ahead without its ledger entry and
  a mapped file of any size was counted nowhere (`ok`, disk 0).
- A dropped waiting send closed its copies one after another on the loop,
  each close of a TCP socket with SO_LINGER and unsent data bounded at
  200 ms: 200 of them held the loop 40 s, past the wall budget, and memory
  made resident meanwhile went unseen.

- With --stacks, libunwind unwound the caller of each denial inside the
  supervisor's loop thread, opening by path the files the program's maps
  name and parsing them unchecked: a FIFO at a deleted mapping's name
  hung corral until its watchdog (no budget enforced meanwhile, no
  result); a symbol table with offsets past the file crashed it (SIGSEGV,
  no result); a symbol name that is not UTF-8 went raw into the result,
  which stopped being JSON. Probe: tests/progs/stack_doors.c, whose binary
  the tests copy and edit (section headers only: exec ignores them).

Each case failed on the build before its fix, Landlock on and off.
"""

import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time

from harness import Fail, eq, true, lt, contains, test, _show

MIB = 1 << 20


def probe(t, args, limits, timeout=120):
    opts = ["run", "--json", "-w", t.path("ws")]
    for lim in limits:
        opts += ["--limit", lim]
    run = t.corral(opts + t.prog_roots() +
                   ["--", t.prog("supervisor_doors")] + [str(a) for a in args],
                   timeout=timeout)
    return run, t.result(run)


def limited(r, limit):
    eq(r.get("status"), "limit_exceeded",
       "status (message %r, stdout %s)" % (r.get("message"),
                                            _show(r.get("stdout"))))
    eq(r.get("limit"), limit, "limit (message %r)" % r.get("message"))


@test
def supervisor_fd_flood_leaves_corral_its_descriptors(t):
    """Enough blocked 253-descriptor sends to fill corral's table (its
    RLIMIT_NOFILE, the program's too), then an open, a fork, and two
    children of 200 MiB under memory=256MiB. Before: corral's table
    filled, the open failed, and the memory budget could not measure a
    task: `platform_failure`. Now the waiting sends hold a bounded share
    of corral's table; past it a send fails at once (ETOOMANYREFS, the
    kernel's answer for too many descriptors in flight) and every budget
    is measured."""
    run, r = probe(t, ["flood", 200],
                   ["wall=30s", "cpu=60s", "memory=256MiB"])
    out = r.get("stdout") or ""
    contains(out, "open after flood: ok", "an open after the flood")
    contains(out, "fork after flood: ok", "a fork after the flood")
    contains(out, "refused (Too many references", "sends past the share")
    limited(r, "memory")
    lt(run.elapsed, 40, "seconds until corral returned")
    t.assert_next_run_ok()


@test
def supervisor_fd_flood_cannot_dodge_the_ledger(t):
    """Fill corral's table with waiting sends (253, 16, then 1 descriptor
    each, until one is refused), then unlink a mapped 256 MiB file, giving
    one descriptor back per refused try. Before: the unlink found one for
    the resolver and none for the ledger, went ahead, and 256 MiB held by
    a mapping were counted nowhere under disk=64MiB: `ok`, disk 0. Now the
    table never fills, and an unlink that cannot keep its file measurable
    is refused."""
    run, r = probe(t, ["ledger", 256, 6],
                   ["wall=40s", "disk=64MiB", "files=100000"])
    limited(r, "disk")
    lt(run.elapsed, 40, "seconds until corral returned")
    t.assert_next_run_ok()


@test(supervisor_only=True)
def supervisor_lingering_closes_do_not_hold_the_loop(t):
    """200 TCP connections with unsent data and SO_LINGER 3600 s, whose
    last copies are corral's, in a send dropped when the sender dies; a
    thread burns CPU. Before: the drop closed them one by one on the loop,
    200 ms each: 40 s without a budget checked, and the run ended on cpu
    long past wall=5s. Now the loop spends at most 200 ms a second on such
    closes and hands the rest to a closer thread: wall fires."""
    run, r = probe(t, ["linger", 200], ["wall=5s", "cpu=120s"], timeout=150)
    limited(r, "wall")
    lt(run.elapsed, 20, "seconds until corral returned")
    t.assert_next_run_ok()


@test(supervisor_only=True)
def supervisor_last_close_of_any_socket_copy_is_guarded(t):
    """Every copy of a program's fd corral takes may become the socket's
    last reference: the program closes its own from another thread while
    corral answers a call on it. An interface ioctl's look at the socket
    closed its copy plainly; with SO_LINGER {1, 100000} and unsent data
    the loop waited in that close: the run ended platform_failure after
    65 s under wall=5s (found by a probing session; the proxy's copy of a
    pending connect did the same). Every close of a socket copy is guarded
    now, whichever handler made it (tracer/guard.c, __wrap_close): the
    ioctl is answered within the guard's 200 ms."""
    run = t.corral(["run", "--json", "--limit", "wall=15s"] +
                   t.prog_roots() + ["--", t.prog("linger_copy"), "5"],
                   timeout=90)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    out = r.get("stdout", "")
    true(out.startswith("no hit "), "the program's ioctl went unanswered "
         "for 1.5 s: %r" % out)
    lt(run.elapsed, 30, "seconds until corral returned")
    t.assert_next_run_ok()


def _answered_within_a_second(t, run, label):
    """The run ended ok, and the program's report "LABEL SECONDS" (the
    longest a call corral answers waited) is under a second."""
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    got = re.findall(label + r" ([0-9.]+)", r.get("stdout", ""))
    eq(len(got), 1, "the program's report %r" % r.get("stdout"))
    lt(float(got[0]), 1.0, "seconds a call waited (%s)" % label)
    lt(run.elapsed, 30, "seconds until corral returned")
    t.assert_next_run_ok()


def _sink():
    """A loopback server outside the run that reads and discards."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def serve(c):
        try:
            while c.recv(1 << 20):
                pass
        except OSError:
            pass
        c.close()

    def accept():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return srv


@test(supervisor_only=True)
def supervisor_last_close_of_a_pending_connect_is_guarded(t):
    """The proxy keeps its own copy of an allowed connect's socket until it
    accepts the program's side. A program whose SYN is held back (a TCP-MD5
    key, removed later) fills the connection, sets SO_LINGER {1, 100000}
    and closes its fd before the proxy's accept, while helper threads keep
    the loop busy: the proxy's plain close of its copy was the last, and
    the loop waited in it (platform_failure after 63 s under wall=3s;
    found by a probing session). Guarded now: the program's next call is
    answered within a second and the run ends ok."""
    srv = _sink()
    try:
        port = srv.getsockname()[1]
        run = t.corral(["run", "--json", "--limit", "wall=20s",
                        "--allow-net", "127.0.0.1:%d" % port] +
                       t.prog_roots() + ["--", t.prog("linger_pending"),
                                         str(port)], timeout=120)
        _answered_within_a_second(t, run, "answered in")
    finally:
        srv.close()


@test(supervisor_only=True)
def supervisor_hold_of_a_unix_socket_lets_go_guarded(t):
    """corral holds a duplicate of every datagram unix socket the program
    makes; letting go of one whose queue held a lingering TCP socket in
    flight (SCM_RIGHTS) made that socket's last close corral's, plainly:
    the loop waited the linger time, the run ended platform_failure 60 s
    past wall=10s and a cancel was ignored (found by a probing session).
    Every duplicate the loop keeps of a program's socket is noted now
    (cr_guard_dup): the program's calls are answered within a second."""
    run = t.corral(["run", "--json", "--limit", "wall=20s"] +
                   t.prog_roots() + ["--", t.prog("held_linger"), "4"],
                   timeout=120)
    _answered_within_a_second(t, run, "worst")


@test
def supervisor_lingering_closes_do_not_hide_memory(t):
    """The same stall, and meanwhile 1 GiB made resident for 2 s and given
    back under memory=256MiB. Before: unseen, the run ended `ok`. Now the
    loop measures it."""
    run, r = probe(t, ["linger", 150, 1024, 4],
                   ["wall=30s", "memory=256MiB"], timeout=150)
    limited(r, "memory")
    lt(run.elapsed, 30, "seconds until corral returned")
    t.assert_next_run_ok()


# ---------------------------------------------------------------------------
# --stacks: the unwinder meets what the program controls

STUB = b"zzzzzzzzzzzzzzzzSTUB"


def stack_run(t, prog, args, limits=(), timeout=120):
    opts = ["run", "--json", "--stacks", "-w", t.path("ws")]
    for lim in limits:
        opts += ["--limit", lim]
    return t.corral(opts + t.prog_roots() + ["--exec", os.path.dirname(prog),
                                             "--", prog] + args,
                    timeout=timeout)


def patched(t, name, edit):
    """A copy of stack_doors, its ELF section data edited by edit(b, shdrs)
    (shdrs: (type, header offset, sh_offset, sh_size) of each section)."""
    b = bytearray(open(t.prog("stack_doors"), "rb").read())
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
    shdrs = []
    for i in range(shnum):
        h = shoff + i * shentsize
        typ, = struct.unpack_from("<I", b, h + 4)
        off, size = struct.unpack_from("<QQ", b, h + 0x18)
        shdrs.append((typ, h, off, size))
    edit(b, shdrs)
    d = t.path("bin")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(b)
    os.chmod(p, 0o755)
    os.chmod(d, 0o755)
    return p


def the_denial(r, secret):
    ds = [d for d in r.get("denials") or [] if d.get("target") == secret]
    true(ds, "a denial of %s: %s" % (secret, _show(r.get("denials"), 600)))
    for fr in ds[0].get("stack") or []:
        true(isinstance(fr, str) and fr, "stack frame %r" % (fr,))
    return ds[0]


@test
def supervisor_stacks_fifo_does_not_hang_corral(t):
    """A denial taken in a stub mapped from a workspace file that was
    unlinked, with a FIFO made at the name the maps show for it ("...
    (deleted)"); then a child touches 256 MiB under memory=64MiB. Before:
    corral blocked opening the FIFO, no budget was enforced (the child
    grew past 500 MiB), and at wall + 60 s the watchdog ended corral: no
    result. Now the unwinder runs in a confined helper that opens only
    regular files, without blocking: the denial is recorded and the memory
    budget ends the run."""
    secret = t.path("secret")
    run = stack_run(t, t.prog("stack_doors"), ["fifo", secret, "256"],
                    ["memory=64MiB", "wall=10s"], timeout=150)
    r = t.result(run)
    contains(r.get("stdout") or "", "stub openat: -", "the stub's call")
    limited(r, "memory")
    the_denial(r, secret)
    t.assert_next_run_ok()


@test
def supervisor_stacks_corrupt_symtab_does_not_crash_corral(t):
    """The program's own executable with its .symtab's offset 1 GiB past
    the file's end, then (a second binary) every symbol's name offset at
    0x7ffffff0. Before: corral died of SIGSEGV in libunwind reading the
    symbol table (no result, the audit chain left open). Now the helper
    that reads it may die; the run's result is whole and names the
    denial."""
    def far_offset(b, shdrs):
        for typ, h, off, size in shdrs:
            if typ == 2:	# SHT_SYMTAB
                struct.pack_into("<Q", b, h + 0x18, len(b) + (1 << 30))

    def far_names(b, shdrs):
        for typ, h, off, size in shdrs:
            if typ == 2:
                for k in range(off, off + size, 24):
                    struct.pack_into("<I", b, k, 0x7ffffff0)

    secret = t.path("secret")
    for name, edit in (("far_offset", far_offset), ("far_names", far_names)):
        audit = t.path(name + ".jsonl")
        prog = patched(t, name, edit)
        run = t.corral(["run", "--json", "--stacks", "--audit", audit,
                        "-w", t.path("ws"), "--exec", t.path("bin"), "--",
                        prog, "name", secret])
        r = t.result(run)
        eq(r.get("status"), "ok", "%s: status (message %r)"
           % (name, r.get("message")))
        eq(run.code, 0, "%s: corral's exit status" % name)
        contains(r.get("stdout") or "", "openat: -", "%s: the call" % name)
        the_denial(r, secret)
        with open(audit) as f:
            ev = [json.loads(line)["event"] for line in f]
        eq(ev[-1], "cleanup", "%s: the audit trail's last event" % name)
    t.assert_next_run_ok()


@test
def supervisor_stacks_names_are_escaped(t):
    """A function whose symbol name was patched to bytes that are not
    UTF-8 (and a quote). Before: the name went raw into denials[].stack
    and the result was not JSON (UTF-8 required). Now names are escaped
    as every other name of the program's is (\\xNN)."""
    bad = b'\xff\xfe"\xc0\x80\xed\xa0\x80zzzzzzzzSTUB'
    eq(len(bad), len(STUB), "the patched name keeps its length")

    def rename(b, shdrs):
        hits = 0
        for typ, h, off, size in shdrs:
            if typ == 3:	# SHT_STRTAB
                i = b.find(STUB + b"\0", off, off + size)
                if i >= 0:
                    b[i:i + len(STUB)] = bad
                    hits += 1
        true(hits, "the function's name in a string table")

    secret = t.path("secret")
    prog = patched(t, "badname", rename)
    res = t.path("res.json")
    # The loop waits for the unwinder a bounded time: on a loaded host a
    # stack may come late ("timed out"); that is tried again, twice.
    for attempt in range(3):
        run = t.corral(["run", "--json", "--stacks", "--result", res,
                        "-w", t.path("ws"), "--exec", t.path("bin"), "--",
                        prog, "name", secret])
        with open(res, "rb") as f:
            raw = f.read()
        try:
            r = json.loads(raw)
        except ValueError as e:
            raise Fail("the result file is not JSON: %s" % e)
        json.loads(run.out)
        eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
        d = the_denial(r, secret)
        if d.get("stack_unavailable") != "the unwinder timed out":
            break
    st = d.get("stack") or []
    true(any("zzzzzzzzSTUB" in f for f in st), "a frame names the "
         "function: %s (%r)" % (_show(st, 600), d.get("stack_unavailable")))
    for f in st:
        if "zzzzzzzzSTUB" in f:
            true(f.startswith('\\xff\\xfe"\\xc0\\x80'), "escaped: %r" % f)
    t.assert_next_run_ok()


@test
def supervisor_stacks_read_only_the_mapped_file(t):
    """The unwinder reads code and frames the stack copy lacks from the
    file a mapping names. A program mapped a workspace file, unlinked it,
    put a link at the name the maps show ("f (deleted)") to a file outside
    every root, and took a denial with its frame pointer in the mapping:
    the helper followed the link and the target's bytes came back as a
    frame's address (a private key, 8 bytes a denial). Now the helper
    opens only the inode the task mapped."""
    secret = t.path("outside", "key")
    os.makedirs(os.path.dirname(secret))
    with open(secret, "wb") as f:
        f.write(b"01234567SECRET42" + b"x" * 4080)
    word = "0x%x" % int.from_bytes(b"SECRET42", "little")
    denied = t.path("nothing-here")
    run = stack_run(t, t.prog("stack_doors"), ["leak", secret, denied])
    r = t.result(run)
    contains(r.get("stdout") or "", "leak openat: -", "the stub's call")
    d = the_denial(r, denied)
    for fr in d.get("stack") or []:
        true(word not in fr, "a frame carries the secret's bytes: %r" % fr)
    t.assert_next_run_ok()


# The watchdog's own test: the test-only build (`make bypass`) stalls its
# loop for good on an open with mode 0xC0FFEE, and waits 2 s past the wall
# budget instead of 60. The program leaves a double-forked sleeper first.
STALL = r'''
import ctypes, os, sys, time
if os.fork() == 0:
    if os.fork() == 0:
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(600)
    os._exit(0)
os.wait()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
ctypes.CDLL(None).syscall(257, -100, b"x", 0, 0xC0FFEE)
'''


def stall_args(t, extra=()):
    from test_d5_landlock import bypass
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    t.write("ws/stall.py", STALL)
    pidfile = os.path.join(ws, "sleeper.pid")
    return bypass(t), pidfile, (["run", "-w", ws, "--limit", "wall=2s"] +
                                list(extra) +
                                ["--", "python3", os.path.join(ws, "stall.py"),
                                 pidfile])


def gone_soon(pidfile, what):
    """The sleeper the program left: killed with the tree (gone, or a
    zombie its new parent has not reaped yet) within 5 s."""
    with open(pidfile) as f:
        pid = int(f.read())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    raise Fail("%s: the double-forked sleeper %d outlived corral" % (what, pid))


@test(supervisor_only=True)
def watchdog_end_writes_the_result(t):
    """A loop stalled for good: past the wall budget and the grace the
    watchdog exits corral, which kills the whole tree, and writes the
    result that says so (the --result file before the exit, the --json
    copy on stdout). Before, it wrote no result at all."""
    b, pidfile, args = stall_args(t)
    res = t.path("result.json")
    args[1:1] = ["--json", "--result", res]
    run = t.corral(args, binary=b, timeout=90)
    eq(run.code, 125, "corral's exit (stderr %s)" % _show(run.err))
    contains(run.err.decode(errors="replace"), "stopped making progress",
             "corral's last line")
    r = t.result(run)
    with open(res) as f:
        eq(json.load(f), r, "the --result file is the --json result")
    eq(r.get("status"), "platform_failure", "status")
    eq(r.get("limit"), None, "limit")
    eq(r.get("exit_code"), None, "exit_code")
    true(len(r.get("task_id", "")) > 0, "a task id")
    true(r["usage"]["wall_ms"] >= 2000, "wall_ms %r counts the stall" %
         r["usage"]["wall_ms"])
    contains(r.get("message", ""), "stopped making progress", "message")
    eq(r["cleanup"]["workspace_removed"], False, "workspace_removed")
    gone_soon(pidfile, "watchdog end")
    # The next run in the same workspace is unaffected.
    ok = t.corral(["run", "--json", "-w", t.path("ws"), "--", "true"],
                  binary=b)
    eq(t.result(ok).get("status"), "ok", "the next run")


@test(supervisor_only=True)
def watchdog_end_kills_the_tree_when_stderr_is_full(t):
    """corral's stderr a pipe already full that nobody reads: the watchdog
    still exits at once and the tree dies with it; its last line waits in
    a helper of its own (ten seconds at most). An earlier build wrote that
    line before exiting and would have blocked there for good, the tree
    running on with no supervisor."""
    b, pidfile, args = stall_args(t)
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    argv = [t.prog("nons"), b] + args
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=w, close_fds=True)
    os.close(w)
    try:
        code = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        os.close(r)
        raise Fail("corral still running 30 s after a 2 s wall budget, "
                   "its stderr full")
    took = time.monotonic() - t0
    eq(code, 125, "corral's exit")
    lt(took, 15, "seconds until corral exited")
    gone_soon(pidfile, "stderr full")
    # Drain: the helper then writes the last line and exits.
    os.set_blocking(r, False)
    tail = b""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and b"stopped making" not in tail:
        try:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            tail = (tail + chunk)[-4096:]
        except BlockingIOError:
            time.sleep(0.05)
    os.close(r)
    contains(tail.decode(errors="replace"), "stopped making progress",
             "the last line, once the pipe is read")


@test(supervisor_only=True)
def watchdog_leaves_an_ended_run_its_result(t):
    """A run that ended ok, whose --json result (200 KB of captured
    output) waits for a caller that reads its stdout only later: the
    run's end has claimed the result, so the watchdog (2 s past a 2 s wall
    budget in the test-only build) does nothing. An earlier build fired
    anyway: exit 125, platform_failure on stderr, the result on stdout
    lost (found by a probing session)."""
    from test_d5_landlock import bypass
    b = bypass(t)
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    p = t.spawn(["run", "--json", "-w", ws, "--limit", "wall=2s", "--",
                 "python3", "-c", "print('x' * 200000)"], binary=b)
    time.sleep(7)   # past wall + grace, stdout unread
    run = t.finish(p, timeout=60)
    eq(run.code, 0, "corral's exit (stderr %s)" % _show(run.err))
    true(b"stopped making progress" not in run.err,
         "the watchdog fired after the run's end: %s" % _show(run.err))
    r = t.result(run)
    eq(r.get("status"), "ok", "status")
    eq(len(r.get("stdout", "")), 200001, "the captured output, whole")
