"""Route netlink, emulated: interface listings work (glibc's getifaddrs and
if_nameindex, Node's os.networkInterfaces(), ip(8)) and show lo alone;
the host's interfaces, addresses and routes never reach the run; the
socket answers as netlink does, errno for errno; a program cannot reach
corral's end of it another way; and the sockets a run makes and closes
leave nothing behind."""

import os
import subprocess

from harness import eq, contains, true, test
from test_c0_net import denials
from test_c1_loopback import loop_run, PY

# A raw route netlink client: requests built by hand, answers parsed.
NL = r'''
import errno, os, socket, struct
NETLINK_ROUTE, SOL_NETLINK = 0, 270
RTM_NEWLINK, RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE = 16, 18, 22, 26
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 1, 4, 0x300

def req(typ, flags, seq, body=b"\0" * 16, name=None):
    if name is not None:
        n = name.encode() + b"\0"
        a = struct.pack("=HH", 4 + len(n), 3) + n
        body = body + a + b"\0" * (-len(a) % 4)
    return struct.pack("=IHHII", 16 + len(body), typ, flags, seq, 0) + body

def msgs(data):
    out, off = [], 0
    while off + 16 <= len(data):
        ln, ty, fl, seq, pid = struct.unpack_from("=IHHII", data, off)
        out.append((ty, fl, seq, pid, data[off + 16:off + ln]))
        off += (ln + 3) & ~3
    return out

def attrs(body, skip):
    out, off = {}, skip
    while off + 4 <= len(body):
        l, t = struct.unpack_from("=HH", body, off)
        if l < 4:
            break
        out[t] = body[off + 4:off + l]
        off += (l + 3) & ~3
    return out

def err(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
'''

GOOD = NL + r'''
print("nameindex", socket.if_nameindex())
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
print("unbound", s.getsockname())
s.bind((0, 0))
pid, groups = s.getsockname()
print("bound", pid == os.getpid(), groups, s.getpeername())
s2 = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_ROUTE)
s2.bind((0, 0))
print("second", s2.getsockname()[0] not in (0, pid))

s.sendto(req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 7), (0, 0))
data, frm = s.recvfrom(65536)
m = msgs(data)
print("from", frm, [(t, f, q, p == pid) for t, f, q, p, _ in m])
ifi = struct.unpack_from("=BxHiII", m[0][4])
a = attrs(m[0][4], 16)
print("link", ifi[1:4], a[3].hex(), struct.unpack("=I", a[4])[0], a[1].hex())

s.sendto(req(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 8, b"\2" + b"\0" * 7),
         (0, 0))
m = msgs(s.recv(65536))
fam, plen, fl, scope, idx = struct.unpack_from("=BBBBI", m[0][4])
print("addr4", [x[0] for x in m], fam, plen, scope, idx,
      socket.inet_ntoa(attrs(m[0][4], 8)[2]))

# A write (not notified): answered from the loop.
os.write(s.fileno(), req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 9))
print("write", [x[0] for x in msgs(s.recv(65536))])

for what, r in (("change", req(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 10)),
                ("eth0", req(RTM_GETLINK, NLM_F_REQUEST, 10, name="eth0")),
                ("index2", req(RTM_GETLINK, NLM_F_REQUEST, 10,
                               struct.pack("=BxHiII", 0, 0, 2, 0, 0))),
                ("route", req(RTM_GETROUTE, NLM_F_REQUEST, 10, b"\2" + b"\0" * 11)),
                ("type200", req(200, NLM_F_REQUEST, 10))):
    s.sendto(r, (0, 0))
    t, f, q, p, body = msgs(s.recv(65536))[0]
    e = struct.unpack_from("=i", body)[0]
    print(what, t, errno.errorcode[-e], len(body) == 4 + len(r))
s.setsockopt(SOL_NETLINK, 10, 1)    # NETLINK_CAP_ACK: no echo
s.sendto(req(RTM_NEWLINK, NLM_F_REQUEST, 11), (0, 0))
print("capped", len(msgs(s.recv(65536))[0][4]))
s.setsockopt(SOL_NETLINK, 11, 1)    # NETLINK_EXT_ACK
s.setsockopt(SOL_NETLINK, 1, 1)     # NETLINK_ADD_MEMBERSHIP
s.sendto(req(RTM_GETLINK, NLM_F_REQUEST, 12, name="lo"), (0, 0))
print("lo by name", msgs(s.recv(65536))[0][0])
print("errors", err(lambda: s.connect((123, 0))),
      err(lambda: s.sendto(b"x" * 20, (5, 0))),
      err(lambda: s.listen()), err(lambda: s.accept()),
      err(lambda: s.setsockopt(SOL_NETLINK, 8, 1)),
      err(lambda: socket.socketpair(socket.AF_NETLINK, socket.SOCK_RAW, 0)),
      err(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_STREAM, 0)))
print("peercred", struct.unpack("=iii", s.getsockopt(
    socket.SOL_SOCKET, socket.SO_PEERCRED, 12)))
flags = socket.AI_ADDRCONFIG
print("addrconfig", sorted({x[4][0] for x in socket.getaddrinfo(
    "localhost", 80, socket.AF_INET, socket.SOCK_STREAM, 0, flags)}))
'''


@test
def netlink_route_lists_loopback_alone(t):
    run, r = loop_run(t, GOOD)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    out = r["stdout"].splitlines()
    want = [
        "nameindex [(1, 'lo')]",
        "unbound (0, 0)",
        "bound True 0 (0, 0)",
        "second True",
        "from (0, 0) [(16, 2, 7, True), (3, 2, 7, True)]",
        "link (772, 1, 65609) 6c6f00 65536 000000000000",
        "addr4 [20, 3] 2 8 254 1 127.0.0.1",
        "write [16, 3]",
        "change 2 EPERM True",
        "eth0 2 ENODEV True",
        "index2 2 ENODEV True",
        "route 2 ENETUNREACH True",
        "type200 2 ENOTSUP True",
        "capped 20",
        "lo by name 16",
        "errors EPERM EPERM ENOTSUP ENOTSUP EPERM ENOTSUP "
        "ESOCKTNOSUPPORT",
        "peercred (0, -1, -1)",
        "addrconfig ['127.0.0.1']",
    ]
    eq(out, want, "what the run saw")
    eq(r["status"], "ok", "status")
    eq(r["denials"], [], "nothing refused")


# The same answers where they do not depend on the host's interfaces, run
# natively (unprivileged, as this tier runs) and under corral.
PARITY = NL + r'''
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
print("name", s.getsockname())
g = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
print("connect groups", err(lambda: g.connect((0, 5))))
g.close()
s.bind((0, 0))
p = s.getsockname()[0]
print("rebind other", err(lambda: s.bind((p + 1, 0))), "same",
      err(lambda: s.bind((p, 0))))
print("connect", err(lambda: s.connect((0, 0))), err(lambda: s.connect((7, 0))))
print("peer", s.getpeername())
print("send", err(lambda: s.sendto(req(RTM_GETLINK, NLM_F_REQUEST, 1), (9, 0))),
      err(lambda: s.sendto(req(RTM_GETLINK, NLM_F_REQUEST, 1), (0, 2))))
print("listen", err(lambda: s.listen()), "accept", err(lambda: s.accept()))
print("empty", err(lambda: s.sendto(b"", (0, 0))),
      err(lambda: s.sendto(b"", socket.MSG_OOB, (0, 0))))
print("pair", err(lambda: socket.socketpair(socket.AF_NETLINK,
                                             socket.SOCK_RAW, 0)))
print("stream", err(lambda: socket.socket(socket.AF_NETLINK,
                                          socket.SOCK_STREAM, 0)))
print("nsid", err(lambda: s.setsockopt(SOL_NETLINK, 8, 1)),
      "bogus", err(lambda: s.setsockopt(SOL_NETLINK, 99, 1)),
      "short", err(lambda: s.setsockopt(SOL_NETLINK, 1, b"\1")),
      "group0", err(lambda: s.setsockopt(SOL_NETLINK, 1, 0)),
      "group1", err(lambda: s.setsockopt(SOL_NETLINK, 1, 1)),
      "group999", err(lambda: s.setsockopt(SOL_NETLINK, 1, 999)),
      "pktinfo", err(lambda: s.setsockopt(SOL_NETLINK, 3, b"\1")))
for what, r in (("change", req(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 2)),
                ("missing", req(RTM_GETLINK, NLM_F_REQUEST, 3,
                                struct.pack("=BxHiII", 0, 0, 99999, 0, 0))),
                ("noname", req(RTM_GETLINK, NLM_F_REQUEST, 4)),
                ("type200", req(200, NLM_F_REQUEST, 5)),
                ("ack", req(3, NLM_F_REQUEST | NLM_F_ACK, 6))):
    s.sendto(r, (0, 0))
    m = msgs(s.recv(65536))
    print(what, [(t, f, q, p2 == p, errno.errorcode.get(
        -struct.unpack_from("=i", b)[0], 0), len(b)) for t, f, q, p2, b in m])
s.sendto(req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 7), (0, 0))
m = msgs(s.recv(65536))
print("lo first", m[0][0], struct.unpack_from("=BxHiII", m[0][4])[1:4],
      attrs(m[0][4], 16)[3].hex())
'''


def _staged(t, name, mode, script, text):
    """A workspace (mode) and a script beside it, readable by the run."""
    ws = t.path(name)
    os.makedirs(ws)
    os.chmod(ws, mode)
    return ws, t.write(script, text, mode=0o644)


@test
def netlink_route_answers_as_the_kernel(t):
    ws, script = _staged(t, "parity", 0o755, "parity/p.py", PARITY)

    # This tier runs unprivileged: nothing here could change the host.
    nat = t.native([PY, script])
    eq(nat.code, 0, "native exit (stderr %r)" % nat.err[-600:])
    run = t.corral(["run", "--json", "-w", ws, "--", PY, script])
    r = t.result(run)
    eq(r.get("exit_code"), 0, "exit under corral (stderr %r)" %
       r.get("stderr", "")[-600:])
    native = nat.out.decode().splitlines()
    contains(native, "change [(2, 0, 2, True, 'EPERM', 36)]",
             "native premise: a change is EPERM, the request echoed")
    eq(r["stdout"].splitlines(), native, "corral against native")


def _host_addresses():
    out = subprocess.run(["ip", "-o", "addr"], capture_output=True,
                         text=True, check=True).stdout
    addrs = set()
    for line in out.splitlines():
        w = line.split()
        if w[1] != "lo":
            addrs.add(w[3].split("/")[0])
    return addrs


@test
def netlink_route_hides_the_host(t):
    host = _host_addresses()
    true(host, "the host has an address besides lo (test premise): %r" % host)
    p = t.prog("ifaddrs")
    run = t.corral(["run", "--json", "--exec", os.path.dirname(p), "--", p])
    r = t.result(run)
    eq(r["stdout"], "lo packet flags=10049\nlo inet 127.0.0.1/8 flags=10049\n"
       "lo inet6 ::1/128 flags=10049\nindex 1 lo\n", "getifaddrs and "
       "if_nameindex under corral")
    run = t.corral(["run", "--json", "--", "ip", "addr"])
    r = t.result(run)
    eq(r.get("exit_code"), 0, "ip addr (stderr %r)" % r.get("stderr"))
    contains(r["stdout"], "inet 127.0.0.1/8 scope host lo", "ip addr")
    for a in host:
        true(a not in r["stdout"], "host address %s not shown" % a)
    for argv, what in ((["ip", "route"], ""), (["ip", "neigh"], ""),
                       (["ip", "-6", "route"], "")):
        run = t.corral(["run", "--json", "--"] + argv)
        r = t.result(run)
        eq((r.get("exit_code"), r["stdout"]), (0, what), " ".join(argv))
    run = t.corral(["run", "--json", "--", "ip", "link", "show", "dev",
                    "eth0"])
    r = t.result(run)
    eq(r.get("exit_code"), 1, "ip link show dev eth0 fails")
    contains(r["stderr"], 'Device "eth0" does not exist',
             "as for a missing device")


@test
def netlink_route_node_interfaces(t):
    prog = ("const os = require('os');"
            "const i = os.networkInterfaces();"
            "console.log(Object.keys(i).join(','));"
            "console.log(i.lo.map(a => a.cidr + ' ' + a.internal).join(';'));")
    run = t.corral(["run", "--json", "--", "node", "-e", prog])
    r = t.result(run)
    eq(r.get("exit_code"), 0, "node (stderr %r)" % r.get("stderr"))
    eq(r["stdout"], "lo\n127.0.0.1/8 true;::1/128 true\n",
       "os.networkInterfaces()")


# corral's end of each socket is a unix socket with an abstract name,
# which recvmsg (not seen by corral) reveals: neither the run nor a
# stranger reaches it by that name.
REACH = NL + r'''
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
s.sendto(req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1), (0, 0))
data, anc, fl, name = s.recvmsg(65536)
print("sender", len(name) if isinstance(name, bytes) else name)
for typ in (socket.SOCK_SEQPACKET, socket.SOCK_DGRAM, socket.SOCK_STREAM):
    u = socket.socket(socket.AF_UNIX, typ)
    print("connect", typ, err(lambda: u.connect(name)))
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
print("sendto", err(lambda: u.sendto(req(RTM_GETLINK, NLM_F_REQUEST, 2), name)))
open(os.path.join(os.environ["WS"], "name"), "wb").write(name)
'''


@test
def netlink_route_corral_end_unreachable(t):
    ws, script = _staged(t, "ws", 0o777, "reach.py", REACH)
    run = t.corral(["run", "--json", "--ro", t.tmp, "-w", ws, "--env",
                    "WS=" + ws, "--", PY, script])
    r = t.result(run)
    eq(r.get("exit_code"), 0, "exit (stderr %r)" % r.get("stderr"))
    out = r["stdout"].splitlines()
    eq(out[0], "sender 10", "a name of ten bytes: the sender address is "
       "a sockaddr_nl long")
    for line in out[1:]:
        true(not line.endswith(" ok"), "refused: %s" % line)
    # The run has ended: its name is gone with it; a stranger binding it
    # now meets nobody (and nothing of corral's is left listening).
    name = open(os.path.join(ws, "name"), "rb").read()
    eq(name[2:6], b"\0\0\0\0", "nl_pid's bytes (sun_path 2-5) are zero")
    import socket
    u = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        u.connect(name)
        raise AssertionError("connected to a gone run's name")
    except OSError:
        pass
    t.assert_next_run_ok()


HOLD = r'''
import errno, socket
held, err = [], None
for i in range(80):
    try:
        held.append(socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
    except OSError as e:
        err = (i, errno.errorcode[e.errno])
        break
print("held", len(held), err)
for s in held:
    s.close()
import time
for i in range(200):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.close()
print("after", socket.if_nameindex())
'''


@test
def netlink_route_sockets_are_bounded_and_let_go(t):
    run, r = loop_run(t, HOLD)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"], "held 64 (64, 'ENOBUFS')\nafter [(1, 'lo')]\n",
       "64 at once, then ENOBUFS; closed, they are let go")
    eq(denials(r, None, "net"), [], "net denials")


GARBAGE = NL + r'''
import random
random.seed(7)
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
s.setblocking(False)
sent = 0
for i in range(3000):
    n = random.randrange(0, 300)
    b = bytes(random.randrange(256) for _ in range(n))
    if i % 3 == 0 and n >= 16:
        b = struct.pack("=IHHII", random.randrange(16, n + 1),
                        random.randrange(0, 130), random.randrange(0, 0x400),
                        i, 0) + b[16:]
    try:
        if i % 2:
            s.sendto(b, (0, 0))
        else:
            os.write(s.fileno(), b)
        sent += 1
    except OSError:
        pass
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
print("sent", sent > 2000)
s.setblocking(True)
s.sendto(req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 99999), (0, 0))
while True:
    m = msgs(s.recv(65536))
    if m and m[0][2] == 99999:
        break
print("still", m[0][0])
'''


@test
def netlink_route_survives_garbage(t):
    run, r = loop_run(t, GARBAGE, timeout=120)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"], "sent True\nstill 16\n", "answers after the garbage")
    eq(r["status"], "ok", "status")
    t.assert_next_run_ok()


FIRST = r'''
import errno, socket, struct, os
for how in ("write", "send", "sendto-inet", "sendto-unspec-ack"):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    fam = 2 if how == "sendto-inet" else 0
    fl = 0x305 if how.endswith("ack") else 0x301
    r = struct.pack("=IHHII", 20, 22, fl, 1, 0) + bytes([fam, 0, 0, 0])
    if how == "write":
        os.write(s.fileno(), r)
    elif how == "send":
        s.send(r)
    else:
        s.sendto(r, (0, 0))
    s.settimeout(20)
    print(how, len(s.recv(65536)) > 0)
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
r = struct.pack("=IHHII", 20, 22, 0x301, 1, 0) + bytes(4)
try:
    s.sendto(r, (0, 0))
    print("glibc's probe answered")
except OSError as e:
    print("glibc's probe", errno.errorcode[e.errno])
s.sendto(r, (0, 0))
print("then", len(s.recv(65536)) > 0)
# The probe's form after another first request: answered.
s2 = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
s2.sendmsg([struct.pack("=IHHII", 20, 18, 0x301, 1, 0) + bytes(4)])
s2.recv(65536)
s2.sendto(r, (0, 0))
print("second", len(s2.recv(65536)) > 0)
# A datagram of 100 requests: the first 64 are answered.
many = b"".join(struct.pack("=IHHII", 20, 18, 0x301, i, 0) + bytes(4)
                for i in range(100))
s.sendto(many, (0, 0))
s.settimeout(1)
seqs = []
try:
    while True:
        seqs.append(struct.unpack_from("=I", s.recv(65536), 8)[0])
except socket.timeout:
    pass
print("many", seqs == list(range(64)))
'''


@test
def netlink_route_only_glibcs_probe_is_refused(t):
    # The one request refused on purpose (glibc's AI_ADDRCONFIG probe) is
    # exactly its form: a first request of another shape, or sent
    # without an address, is answered (a reader would wait for ever).
    run, r = loop_run(t, FIRST)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"], "write True\nsend True\nsendto-inet True\n"
       "sendto-unspec-ack True\nglibc's probe ECONNREFUSED\nthen True\n"
       "second True\nmany True\n", "answers")


FLOOD = r"""
import os, socket, struct, time
k = (212992 - 32 - 64) // 20
one = struct.pack("=IHHII", 20, 18, 0x301, 1, 0) + bytes(4)
buf = one * k
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, len(buf) + 4096)
# Blocking writes, answers never read: the program waits on corral.
end = time.monotonic() + 20
while time.monotonic() < end:
    os.write(s.fileno(), buf)
print("not stopped")
"""


@test
def netlink_route_answers_cost_the_runs_cpu(t):
    # Datagrams packed with 10 000 requests, written (never notified):
    # corral's work answering them is the run's CPU. Uncharged, the run
    # went 20 s on ~0.1 s of its own CPU, ok under cpu=1s (found by a
    # probing session).
    run, r = loop_run(t, FLOOD, extra=["--limit", "cpu=1s",
                                        "--limit", "wall=60s"])
    eq((r["status"], r["limit"]), ("limit_exceeded", "cpu"), "status, limit")
    true(r["usage"]["wall_ms"] < 15000, "ended well before the program's "
         "20 s: %d ms" % r["usage"]["wall_ms"])
    t.assert_next_run_ok()
