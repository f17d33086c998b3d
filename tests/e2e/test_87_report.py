"""What corral reports stays text whatever names and bytes the program
chose: the result is valid JSON, corral's own lines on the caller's
terminal carry no control sequence, escapes decode one way, and counts
are of calls."""

import json
import os

from harness import Fail, eq, true, test, _show


def decode(s):
    """The reader's side of the \\xNN escaping (docs/interface.md)."""
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] == "\\" and s[i + 1:i + 2] == "\\":
            out += b"\\"
            i += 2
        elif s[i] == "\\" and s[i + 1:i + 2] == "x":
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        else:
            out += s[i].encode()
            i += 1
    return bytes(out)


@test
def report_exec_name_stays_inert(t):
    """An exec the exec stop refuses put its path, as the program named
    it, raw into the message: bytes 0xff made the --json result
    unparseable, and without --json corral's own last line cleared the
    caller's screen and printed a fake "corral: ok". The message is
    escaped now, on both sides."""
    ws = t.path("ws")
    os.makedirs(ws)
    # The exec stop refuses an image whose file lost its name (deleted):
    # the program unlinks its hostile-named link while the kernel loads
    # it, until one exec lands in that window (a file really named
    # "... (deleted)" runs now: exec_program_named_like_a_deleted_mapping_runs).
    name = "\x1b[2J\x1b[H\x1b]0;corral: ok\x07\x1b[32mcorral: ok\x1b[0m\udcff\udcfe"
    script = ("import os,shutil\n"
              "n=%r.encode('utf-8','surrogateescape')\n"
              "shutil.copy('/bin/true', 'base')\n"
              "if os.path.lexists(n):\n"
              "    os.unlink(n)\n"
              "for i in range(3000):\n"
              "    os.link('base', n)\n"
              "    r, w = os.pipe()\n"
              "    pid = os.fork()\n"
              "    if pid == 0:\n"
              "        os.write(w, b'x')\n"
              "        try:\n"
              "            os.execv(n, [n])\n"
              "        except OSError:\n"
              "            os._exit(3)\n"
              "    os.read(r, 1)\n"
              "    os.unlink(n)\n"
              "    os.waitpid(pid, 0)\n"
              "    os.close(r); os.close(w)\n" % name)
    run = t.corral(["run", "--json", "-w", ws, "--", "python3", "-c", script])
    try:
        r = json.loads(run.out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Fail("the result is not valid JSON: %s: %r" %
                             (e, run.out[:300]))
    eq(r.get("status"), "policy_denied", "status")
    true("\x1b" not in r.get("message", ""), "no ESC in the message: %r" %
         r.get("message"))
    run = t.corral(["run", "-w", ws, "--", "python3", "-c", script])
    true(b"\x1b" not in run.err and b"\x07" not in run.err,
         "corral's lines on stderr carry no control: %r" % run.err[-300:])


@test
def report_escapes_decode_one_way(t):
    """A backslash before an escaped byte and the literal text \\xff came
    out alike ("\\\\xff"): the reader could not tell them apart. Every
    shape of backslashes, x and invalid bytes round-trips now."""
    samples = [b"\\\xff", b"\\xff", b"\\\\x", b"\\\\", b"a\\b", b"\\",
               b"\\\x00", b"x\\\\xff\xfe"]
    for raw in samples:
        run = t.corral(["run", "--json", "--", "python3", "-c",
                        "import sys; sys.stdout.buffer.write(%r)" % raw])
        r = t.result(run)
        eq(decode(r.get("stdout")), raw, "%r round-trips (as %r)" %
           (raw, r.get("stdout")))


@test
def report_denied_count_is_of_calls(t):
    """1300 refused calls of 300 kinds: corral's line on stderr said
    "denied 301 call(s)" and the audit's exit event 301 (entries, not
    calls). Both count calls now, as the result's entries and
    denials_dropped add up to."""
    audit = t.path("audit.jsonl")
    script = ("import os\n"
              "for i in range(300):\n"
              "    for k in range(1 if i else 1001):\n"
              "        try: os.stat('/etc/nope-%d' % i)\n"
              "        except OSError: pass\n")
    run = t.corral(["run", "--json", "--audit", audit, "--", "python3",
                    "-c", script])
    r = t.result(run)
    total = sum(d.get("count", 1) for d in r.get("denials", [])) + \
        r.get("denials_dropped", 0)
    true(total >= 1300, "the result's count: %d" % total)
    ev = [json.loads(x) for x in open(audit)]
    ex = [e for e in ev if e.get("event") == "exit"][-1]
    eq(ex.get("denials"), total, "the audit's exit event")
    run = t.corral(["run", "--audit", audit, "--", "python3", "-c", script])
    true(("denied %d call(s)" % total).encode() in run.err,
         "stderr: %s" % _show(run.err[-200:]))


@test
def file_size_limit_of_the_caller_kills_no_record(t):
    """The caller's soft RLIMIT_FSIZE below what corral writes: corral was
    killed by SIGXFSZ mid-write, leaving a cut result (invalid JSON) and
    an audit trail with no end. The write now fails (EFBIG) and is
    reported: corral exits 125, and the audit trail closes. A hard limit
    the budgets' own file-size limit would pass failed every run
    (platform_failure); the caller's limit now holds instead."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]

    def soft_200k():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200 * 1024, hard))

    res = t.path("result.json")
    audit = t.path("audit.jsonl")
    run = t.corral(["run", "--json", "--result", res, "--audit", audit,
                    "--", "sh", "-c",
                    "head -c 300000 /dev/zero | tr '\\\\0' x"],
                   preexec=soft_200k)
    eq(run.code, 125, "corral's exit status (stderr %r)" % run.err[-300:])
    with open(audit) as f:
        events = [json.loads(ln)["event"] for ln in f if ln.strip()]
    true("exit" in events, "the audit trail closes: %r" % events)

    def hard_10g():
        resource.setrlimit(resource.RLIMIT_FSIZE, (10 << 30, 10 << 30))

    run = t.corral(["run", "--json", "--", "/bin/true"], preexec=hard_10g)
    r = t.result(run)
    eq(r.get("status"), "ok", "with a hard limit of 10 GiB (message %r)" %
       r.get("message"))


@test
def report_audit_start_escapes_the_command(t):
    """The audit trail's start event wrote the command and the workspace
    raw: an argument that is not UTF-8 made a line that was not JSON
    (while `corral audit verify` still said intact). Now escaped as the
    result escapes it."""
    audit = t.path("audit.jsonl")
    arg = b"\xff\xfe\xc0\x80-x"
    run = t.corral(["run", "--json", "--audit", audit, "--",
                    "/bin/echo", os.fsdecode(arg)])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    with open(audit, "rb") as f:
        lines = f.read().splitlines()
    events = []
    for ln in lines:
        try:
            events.append(json.loads(ln.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as e:
            raise Fail("an audit line is not JSON (%s): %s" % (e, _show(ln)))
    start = [e for e in events if e.get("event") == "start"]
    eq(len(start), 1, "start events")
    eq(decode(start[0]["command"][1]), arg, "the argument, decoded")


@test
def report_real_time_signal_is_named(t):
    """A death by a real-time signal was "SIGUNKNOWN" in the result and
    "SIG?" in the message (glibc names none of them)."""
    run = t.corral(["run", "--json", "--", "python3", "-c",
                    "import os, signal\n"
                    "os.kill(os.getpid(), signal.SIGRTMIN + 3)\n"])
    r = t.result(run)
    eq(r.get("signal"), "SIGRTMIN+3", "signal")
    eq(r.get("exit_code"), None, "exit_code")
    true("SIGRTMIN+3" in (r.get("message") or ""),
         "message %r" % r.get("message"))


@test
def report_output_bytes_count_what_the_pipe_held(t):
    """When the output budget's allowance is spent corral closes the pipe;
    what the program's write() had already put in it was written, but
    went uncounted: 1 MiB with a pipe grown by F_SETPIPE_SZ. Now counted
    (a write racing with the close itself can still be missed: the
    bound below allows a few of the program's 64 KiB writes)."""
    code = (
        "import os, signal, fcntl\n"
        "signal.signal(signal.SIGPIPE, signal.SIG_IGN)\n"
        "fcntl.fcntl(1, 1031, 1 << 20)\n"
        "n = 0\n"
        "chunk = b'B' * 65536\n"
        "try:\n"
        "    while True:\n"
        "        n += os.write(1, chunk)\n"
        "except OSError:\n"
        "    pass\n"
        "with open('n.txt', 'w') as f:\n"
        "    f.write('%d' % n)\n")
    ws = t.path("ws")
    os.makedirs(ws)
    run = t.corral(["run", "--json", "-w", ws, "--limit", "output=1MiB",
                    "--", "python3", "-c", code])
    r = t.result(run)
    with open(os.path.join(ws, "n.txt")) as f:
        accepted = int(f.read())
    got = r["usage"]["output_bytes"]
    true(accepted > (2 << 20), "the program wrote %d bytes" % accepted)
    true(got <= accepted + 16, "output_bytes %d over the %d written" %
         (got, accepted))
    true(accepted - got <= 4 * 65536,
         "output_bytes %d: %d of the %d bytes written went uncounted" %
         (got, accepted - got, accepted))


@test
def report_a_flood_of_denials_hides_nothing_after_it(t):
    """The result listed the run's first 256 distinct denials and the
    audit its first 1 000 deny events: 2 000 cheap refused opens, then a
    connect and an open of what the program was really after, left both
    naming only the flood (found by a probing session). The last 64
    entries of the result and the last 100 deny events of the trail are
    now the latest (the trail's written at the end, marked late), and
    the counts still add up."""
    audit = t.path("audit.jsonl")
    final = "/home/nobody-%s/.aws/credentials" % t.marker
    script = ("import os, socket\n"
              "for i in range(2000):\n"
              "    try: os.stat('/nonexist%%d/x' %% i)\n"
              "    except OSError: pass\n"
              "s = socket.socket()\n"
              "try: s.connect(('127.0.0.1', 9))\n"
              "except OSError as e: print('connect', e.errno)\n"
              "try: open(%r)\n"
              "except OSError as e: print('open', e.errno)\n" % final)
    run = t.corral(["run", "--json", "--audit", audit, "--", "python3",
                    "-c", script])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%s)" % run.summary())
    eq(r.get("stdout"), "connect 111\nopen 2\n", "the program's answers")
    d = r.get("denials", [])
    eq(len(d), 256, "entries listed")
    targets = [x.get("target") or "" for x in d]
    true(any(x.startswith("127.0.0.1") for x in targets) and final in targets,
         "the connect and the open are listed: %s" % _show(targets[-4:]))
    eq(targets[0], "/nonexist0/x", "the first denial stays first")
    eq([x for x in d if "stack_unavailable" in x], [],
       "no stack fields without --stacks")
    ms = [x["ms"] for x in d]
    eq(ms, sorted(ms), "entries in the order they happened")
    total = sum(x.get("count", 1) for x in d) + r.get("denials_dropped", 0)
    true(total >= 2002, "counts add up: %d" % total)
    ev = [json.loads(x) for x in open(audit)]
    deny = [e for e in ev if e.get("event") == "deny"]
    eq(len(deny), 1000, "deny events written")
    late = [e for e in deny if e.get("late")]
    eq(len(late), 100, "deny events kept from past the head")
    true(any((e.get("target") or "").startswith("127.0.0.1") for e in late)
         and any(e.get("target") == final for e in late),
         "the connect and the open are in the trail: %s" %
         _show([e.get("target") for e in late[-3:]]))
    cl = [e for e in ev if e.get("event") == "cleanup"][-1]
    eq(cl.get("audit_denies_dropped") + len(deny) >= 2002, True,
       "the trail's counts add up: %r" % cl.get("audit_denies_dropped"))
    run = t.corral(["audit", "verify", audit])
    eq(run.code, 0, "the trail verifies (%s)" % run.summary())
    t.assert_next_run_ok()


@test
def report_stacks_of_concurrent_denials_say_why_they_are_missing(t):
    """With --stacks, one stack is taken at a time: denials made by other
    threads meanwhile had neither `stack` nor `stack_unavailable` (52 and
    117 of 160 in a probing session), which the contract does not allow.
    Each now has one or the other."""
    script = ("import os, threading\n"
              "b = threading.Barrier(8)\n"
              "def w(k):\n"
              "    b.wait()\n"
              "    for i in range(12):\n"
              "        try: os.stat('/nonexist-%d-%d/x' % (k, i))\n"
              "        except OSError: pass\n"
              "ts = [threading.Thread(target=w, args=(k,)) for k in range(8)]\n"
              "[x.start() for x in ts]\n"
              "[x.join() for x in ts]\n")
    run = t.corral(["run", "--json", "--stacks", "--", "python3", "-c",
                    script])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%s)" % run.summary())
    d = [x for x in r.get("denials", [])
         if (x.get("target") or "").startswith("/nonexist-")]
    eq(len(d), 96, "distinct denials listed")
    bare = [x.get("target") for x in d
            if "stack" not in x and "stack_unavailable" not in x]
    eq(bare, [], "denials with neither a stack nor why")
    true(any("stack" in x for x in d), "some stacks were taken")
