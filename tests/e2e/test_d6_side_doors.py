"""Reaches from inside a run through less obvious doors: a file lease that
would stall the supervisor's own opens, a process group of the invoking
session joined so that "my own group" signals reach outside, inode flags
set through a read-only fd, and id queries that answer for any host pid.
The probes are tests/progs/side_doors.c. Each attack is refused at its
layer with a denial, and the next run still works.
"""

import fcntl
import os
import signal
import struct
import subprocess
import time

from harness import CFG, Fail, eq, true, lt, test, _show, answers, denials_of

FS_IOC_GETFLAGS = 0x80086601
FS_NODUMP_FL = 0x40
FS_NOATIME_FL = 0x80
FS_SYNC_FL = 0x8
PROBE_FLAGS = FS_NODUMP_FL | FS_NOATIME_FL | FS_SYNC_FL


def inode_flags(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = fcntl.ioctl(fd, FS_IOC_GETFLAGS, struct.pack("l", 0))
        return struct.unpack("l", buf)[0]
    finally:
        os.close(fd)


@test
def lease_is_refused_and_cannot_stall_the_supervisor(t):
    """corral performs the program's opens itself; an open of a leased
    file waits for the holder up to the kernel's lease-break-time (45 s),
    and with it every answer and budget check of the run. Measured before
    the refusal: a wall=3s run lasted 46 s, its CPU 4 s against cpu=2s.
    Now F_SETLEASE is refused (recorded, layer syscall) and the run ends
    at once."""
    run = t.corral(["run", "--json", "--limit", "wall=20s",
                    "--limit", "cpu=10s"] + t.prog_roots() +
                   ["--", t.prog("side_doors"), "lease-stall", "leased", "1"],
                   timeout=150)
    r = t.result(run)
    res = answers(r.get("stdout"))
    eq(res.get("lease"), "Operation not permitted",
       "F_SETLEASE under corral (stdout %s)" % _show(r.get("stdout")))
    eq(r.get("status"), "program_error", "status (the probe exits 1)")
    eq(r.get("exit_code"), 1, "exit code")
    true(any("lease" in (d.get("reason") or "")
             for d in denials_of(r, "fcntl", "syscall")),
         "no denial for F_SETLEASE: %s" % _show(r.get("denials")))
    lt((r.get("usage") or {}).get("wall_ms", 10 ** 9), 15000,
       "usage.wall_ms of a run whose program asked for a lease")
    t.assert_next_run_ok()


@test
def joined_process_group_cannot_carry_signals_outside(t):
    """The run shares corral's session, and the kernel lets a process join
    any group of its session; kill(0) and kill(-own group) are let through
    for the caller's own group. Joining a group of the invoking shell (the
    session leader's) must be refused (EPERM, as for a group the kernel
    does not see, recorded), so the signals that follow stay in the run:
    the outside `sleep` lives and corral ends ok. Landlock off: with ABI 6
    and later the kernel's signal scoping would stop the signal too."""
    out = t.path("result.json")
    script = (
        "sleep 300 &\n"
        "echo $! > %s\n"
        "%s %s run --json --landlock=off %s -- %s pgrp-kill sid 15 > %s\n"
        "echo $? > %s\n" % (
            t.path("victim"), t.prog("nons"), CFG.corral,
            " ".join(t.prog_roots()), t.prog("side_doors"), out,
            t.path("rc")))
    p = subprocess.Popen(["/bin/sh", "-c", script + "wait\n"],
                         start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    victim = None
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if p.poll() is not None or os.path.exists(t.path("rc")):
                break
            time.sleep(0.1)
        time.sleep(0.5)
        try:
            victim = int(open(t.path("victim")).read())
        except (OSError, ValueError):
            raise Fail("the victim was not started")
        alive = True
        try:
            os.kill(victim, 0)
            with open("/proc/%d/stat" % victim) as f:
                alive = f.read().split(") ")[1][0] != "Z"
        except OSError:
            alive = False
        try:
            r = __import__("json").loads(open(out).read())
        except (OSError, ValueError) as e:
            raise Fail("no result from corral (%s); shell stderr %s" % (
                e, _show(p.stderr.read() if p.poll() is not None else b"")))
        res = answers(r.get("stdout"))
        true(alive, "an outside process of corral's session was killed "
             "by the program's group signal (stdout %s)" %
             _show(r.get("stdout")))
        eq(r.get("status"), "ok", "status (the group signal must not "
           "reach corral)")
        eq(res.get("setpgid"), "Operation not permitted",
           "setpgid into the session leader's group")
        true(denials_of(r, "setpgid", "signal"),
             "no denial for setpgid: %s" % _show(r.get("denials")))
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        if victim:
            try:
                os.kill(victim, signal.SIGKILL)
            except OSError:
                pass
        p.wait()
        p.stderr.close()


@test
def groups_the_run_makes_stay_usable(t):
    """What setpgid still allows: a new group, a child joining a group the
    run made, the caller's own group; a signal to such a group reaches its
    members. And a shell with job control runs a pipeline (each member
    put in the first one's group), as natively."""
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", t.prog("side_doors"), "pgrp-own"])
    r = t.result(run)
    res = answers(r.get("stdout"))
    for k in ("new-group", "join-run-group", "own-group", "kill-group"):
        eq(res.get(k), "ok", "%s (stdout %s)" % (k, _show(r.get("stdout"))))
    eq(res.get("a"), "terminated", "group leader after kill(-group)")
    eq(res.get("b"), "terminated", "group member after kill(-group)")
    eq(denials_of(r, "setpgid"), [], "setpgid denials")
    sh = ["/bin/bash", "-c", "set -m; echo one | cat; sleep 0.1 | cat; "
          "echo done"]
    nat = t.native(sh)
    run = t.corral(["run", "--json", "--"] + sh)
    r = t.result(run)
    eq(r.get("stdout"), nat.out.decode(), "job-control pipeline output")
    eq(r.get("exit_code"), nat.code, "job-control pipeline exit status")
    eq(denials_of(r, "setpgid"), [], "setpgid denials of the pipeline")


@test
def inode_flags_of_a_read_root_file_are_refused(t):
    """FS_IOC_SETFLAGS asks the kernel only that the caller own the inode,
    not that the fd be writable: a read-only open of the user's own file in
    a --ro root would let the program set chattr flags on it (and on an
    ancestor of a root, no root at all). Refused there (EACCES, a denial,
    the flags unchanged); in the workspace the same call still works."""
    ro = t.path("ro")
    os.makedirs(ro)
    target = t.write("ro/target", "original\n", mode=0o644)
    try:
        before = inode_flags(target)
    except OSError as e:
        raise Fail("FS_IOC_GETFLAGS unsupported on the test's filesystem "
                   "(%s): this test needs ext4, xfs, btrfs or tmpfs" % e)
    run = t.corral(["run", "--json", "--ro", ro] + t.prog_roots() +
                   ["--", t.prog("side_doors"), "setflags", target])
    r = t.result(run)
    res = answers(r.get("stdout"))
    eq(inode_flags(target) & PROBE_FLAGS, before & PROBE_FLAGS,
       "inode flags of a --ro file after the run (probe said %r)" %
       res.get("setflags"))
    eq(res.get("setflags"), "Permission denied",
       "FS_IOC_SETFLAGS on a --ro file")
    true(denials_of(r, "ioctl", "fs"),
         "no denial for FS_IOC_SETFLAGS: %s" % _show(r.get("denials")))
    run = t.corral(["run", "--json", "--ro", ro] + t.prog_roots() +
                   ["--", t.prog("side_doors"), "fsattr", target])
    r = t.result(run)
    res = answers(r.get("stdout"))
    eq(res.get("fssetxattr"), "Permission denied",
       "FS_IOC_FSSETXATTR on a --ro file (stdout %s)" %
       _show(r.get("stdout")))
    eq(res.get("setversion"), "Operation not permitted",
       "FS_IOC_SETVERSION (refused everywhere)")
    true(any("generation" in (d.get("reason") or "")
             for d in denials_of(r, "ioctl", "syscall")),
         "no denial for FS_IOC_SETVERSION: %s" % _show(r.get("denials")))
    # Through a read-only fd of the workspace's parent: not a root at all.
    run = t.corral(["run", "--json", "-w", t.path("ws")] + t.prog_roots() +
                   ["--", t.prog("side_doors"), "setflags", ".."])
    r = t.result(run)
    eq(answers(r.get("stdout")).get("setflags"), "Permission denied",
       "FS_IOC_SETFLAGS on the workspace's parent")
    # In the workspace: the caller's own file, a writable root.
    ws = t.path("ws2")
    os.makedirs(ws)
    mine = os.path.join(ws, "mine")
    with open(mine, "w") as f:
        f.write("x\n")
    run = t.corral(["run", "--json", "-w", ws] + t.prog_roots() +
                   ["--", t.prog("side_doors"), "setflags", "mine"])
    r = t.result(run)
    eq(answers(r.get("stdout")).get("setflags"), "ok",
       "FS_IOC_SETFLAGS on a workspace file (stdout %s)" %
       _show(r.get("stdout")))
    eq(inode_flags(mine) & PROBE_FLAGS, PROBE_FLAGS,
       "inode flags of the workspace file after the run")
    run = t.corral(["run", "--json", "-w", ws] + t.prog_roots() +
                   ["--", t.prog("side_doors"), "fsattr", "mine"])
    eq(answers(t.result(run).get("stdout")).get("fssetxattr"), "ok",
       "FS_IOC_FSSETXATTR on a workspace file")
    t.assert_next_run_ok()


@test
def id_queries_answer_absent_for_outside_processes(t):
    """/proc/<pid> of a process outside the run is absent and signals to
    it answer ESRCH; so do getpgid, getsid, getpriority, the sched_get*
    calls and ioprio_get, each recorded. On the run's own process they
    answer as natively."""
    victim = subprocess.Popen(["sleep", "60"])
    try:
        run = t.corral(["run", "--json"] + t.prog_roots() +
                       ["--", t.prog("side_doors"), "peek", str(victim.pid)])
        r = t.result(run)
        res = answers(r.get("stdout"))
        calls = ("getpgid", "getsid", "getpriority", "sched_getaffinity",
                 "sched_getscheduler", "sched_getparam",
                 "sched_rr_get_interval", "ioprio_get")
        for c in calls:
            true(res.get(c, "").endswith("No such process"),
                 "%s of an outside pid: %r (stdout %s)" % (
                     c, res.get(c), _show(r.get("stdout"), 600)))
        got = sorted({d.get("syscall") for d in denials_of(r, layer="proc")})
        eq(got, sorted(calls), "denied calls (layer proc)")
    finally:
        victim.kill()
        victim.wait()
    # The same calls on the run's own process, by its pid.
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", "/bin/sh", "-c",
                    'exec %s peek $$' % t.prog("side_doors")])
    r = t.result(run)
    res = answers(r.get("stdout"))
    for c in calls:
        true(res.get(c, "").endswith("ok"),
             "%s of the run's own pid: %r" % (c, res.get(c)))
    eq(denials_of(r), [], "denials of the run's own queries")


@test
def inotify_on_a_device_is_refused(t):
    """A device node (/dev/null, /dev/urandom) is a meeting point of every
    program of the host: an inotify watch on it reported when programs
    outside the run opened, read, wrote and closed it (a probing session
    counted 117 IN_OPEN in 3 s from an outside loop, none recorded). Now
    refused (EACCES, a denial); a watch on a workspace file still works."""
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "ifd = libc.inotify_init1(0)\n"
        "for p in (b'/dev/null', b'/dev/urandom'):\n"
        "    wd = libc.inotify_add_watch(ifd, p, 0xfff)\n"
        "    print(p.decode(), wd, os.strerror(ctypes.get_errno()) if wd < 0 else '')\n"
        "open('mine', 'w').close()\n"
        "wd = libc.inotify_add_watch(ifd, b'mine', 0xfff)\n"
        "open('mine', 'w').close()\n"
        "print('mine', wd > 0, len(os.read(ifd, 4096)) > 0)\n")
    run = t.corral(["run", "--json", "--", "python3", "-c", code])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq(r.get("stdout"), "/dev/null -1 Permission denied\n"
       "/dev/urandom -1 Permission denied\nmine True True\n", "stdout")
    got = {d.get("target") for d in denials_of(r, "inotify_add_watch", "fs")
           if "device" in (d.get("reason") or "")}
    eq(got, {"/dev/null", "/dev/urandom"}, "inotify denials")
    t.assert_next_run_ok()


IFIOCTLS = r"""
import errno, fcntl, socket, struct, sys
other = sys.argv[1]
socks = {"udp4": socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
         "tcp4": socket.socket(socket.AF_INET, socket.SOCK_STREAM),
         "udp6": socket.socket(socket.AF_INET6, socket.SOCK_DGRAM),
         "unix": socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)}
cmds = (0x8913, 0x8915, 0x8917, 0x8919, 0x891b, 0x891d, 0x8921, 0x8927,
        0x8933, 0x8935, 0x8942, 0x8970, 0x8938, 0x891f, 0x8925, 0x894c)
for sn, s in socks.items():
    for cmd in cmds:
        for name in ("lo", "lo:0", "lo:", "nonexist0", other):
            try:
                r = fcntl.ioctl(s.fileno(), cmd,
                                struct.pack("16s24x", name.encode()))
                r = "ok " + r[16:].hex()
            except OSError as e:
                r = errno.errorcode[e.errno]
            print(sn, hex(cmd), "OTHER" if name == other else name, r)
for i in (1, 99999):
    try:
        r = fcntl.ioctl(socks["udp4"].fileno(), 0x8910,
                        struct.pack("16si20x", b"", i))[:16].rstrip(b"\0")
    except OSError as e:
        r = errno.errorcode[e.errno]
    print("name", i, r)
print("names", socket.if_nameindex() == [(1, "lo")])
print("index", socket.if_nametoindex("lo"))
t = socks["tcp4"]
print("outqnsd", len(fcntl.ioctl(t.fileno(), 0x894b, b"\0" * 4)))
"""


@test
def interface_ioctls_show_lo_alone(t):
    """Socket ioctls on any socket told the run the host's interfaces:
    addresses (SIOCGIFCONF, SIOCGIFADDR), MACs, netmasks, flags, the ARP
    table (SIOCGARP) and the card's driver and counters (SIOCETHTOOL).
    The interface queries now show lo alone, as the emulated route
    netlink does: lo's own values (and its aliases' answers), the
    kernel's, exactly as natively, on IPv4, IPv6 and unix sockets; a host
    interface answers what a name no host has answers natively;
    SIOCGIFCONF lists lo only. ARP, ethtool and the wireless queries
    stay refused and recorded; the socket's own queries work."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True,
                           text=True, check=True).stdout.split("\n")
    others = [ln.split(": ")[1].split("@")[0] for ln in links
              if ": " in ln and ln.split(": ")[1] != "lo"]
    true(others, "the host has an interface besides lo (test premise)")
    prog = t.write("ifioctls.py", IFIOCTLS, mode=0o644)
    nat = t.native(["python3", prog, others[0]])
    eq(nat.code, 0, "native (stderr %r)" % nat.err[-400:])
    run = t.corral(["run", "--json", "--ro", t.tmp, "--", "python3", prog,
                    others[0]])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    got = r["stdout"].splitlines()
    native = nat.out.decode().splitlines()
    absent = {}
    want = []
    for w in native:
        f = w.split()
        if len(f) == 4 and f[2] == "nonexist0":
            absent[(f[0], f[1])] = f[3]
    for w in native:
        f = w.split()
        if len(f) >= 4 and f[2] == "OTHER":
            # A host interface is absent under corral: the kernel's own
            # answer for a name that does not exist.
            want.append(" ".join(f[:3] + [absent[(f[0], f[1])]]))
        elif w.startswith("name 99999") or w.startswith("names"):
            want.append(w if w.startswith("name 99999") else "names True")
        else:
            want.append(w)
    eq(got, want, "answers under corral")
    true(any(" OTHER ok" in w for w in native), "natively the host "
         "interface answers (test premise)")
    # The list holds lo's IPv4 address and nothing else.
    code = ("import fcntl, socket, struct, array\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "buf = array.array('B', bytes(400))\n"
            "a, _ = buf.buffer_info()\n"
            "r = fcntl.ioctl(s.fileno(), 0x8912, struct.pack('iL', 400, a))\n"
            "n = struct.unpack('iL', r)[0]\n"
            "b = buf.tobytes()[:n]\n"
            "print(n, [(b[i:i+16].rstrip(b'\\0').decode(),"
            " socket.inet_ntoa(b[i+20:i+24])) for i in range(0, n, 40)])\n"
            "r = fcntl.ioctl(s.fileno(), 0x8912, struct.pack('iL', 39, a))\n"
            "print(struct.unpack('iL', r)[0])\n")
    run = t.corral(["run", "--json", "--", "python3", "-c", code])
    r = t.result(run)
    eq(r.get("stdout"), "40 [('lo', '127.0.0.1')]\n0\n", "SIOCGIFCONF")
    # The rest: refused and recorded.
    code = ("import errno, fcntl, socket, struct\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "for name, cmd, arg in (('arp', 0x8954, bytes(68)),"
            " ('ethtool', 0x8946, struct.pack('16s24x', b'lo')),"
            " ('wireless', 0x8b01, struct.pack('16s24x', b'lo')),"
            " ('set flags', 0x8914, struct.pack('16s24x', b'lo'))):\n"
            "    try:\n"
            "        fcntl.ioctl(s.fileno(), cmd, arg); print(name, 'ok')\n"
            "    except OSError as e:\n"
            "        print(name, errno.errorcode[e.errno])\n")
    run = t.corral(["run", "--json", "--", "python3", "-c", code])
    r = t.result(run)
    eq(r.get("stdout"), "arp ENODEV\nethtool ENODEV\nwireless ENODEV\n"
       "set flags EPERM\n", "refused (a change: EPERM, as natively for "
       "any uid without CAP_NET_ADMIN)")
    got = {d.get("target") for d in denials_of(r, "ioctl", "net")}
    true({"ioctl 0x8954", "ioctl 0x8946", "ioctl 0x8b01",
          "ioctl 0x8914"} <= got,
         "interface ioctl denials: %s" % _show(r.get("denials")))
    t.assert_next_run_ok()
