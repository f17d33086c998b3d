"""Doors out of the network rules: ways a run's packets could leave by an
interface no rule opens, a connect to the run's own listener could end at a
host listener, or an allow rule could reach the host itself. The probes are
tests/progs/net_doors.c.

Nothing here sends a packet off the host: a probe that names another
interface uses MSG_PROBE (the kernel looks the route up and sends nothing),
every connection goes to loopback or to one of the host's own addresses
(local: the packet never leaves), and every service is this test process's.
"""

import os
import socket
import struct
import threading
import time

import sys

PYTHON = "/usr/bin/python3"

from harness import (eq, true, contains, test, _show, answers, denials_of,
                     wait_for)


# ---- the host side: services of this test process ----

def host_v4_address(t):
    """One of the host's own IPv4 addresses that is not loopback, and its
    interface, or (None, None)."""
    run = t.native([t.prog("net_doors"), "ifconf"])
    for ln in run.out.decode().splitlines():
        parts = ln.split()
        if len(parts) == 3 and parts[0] == "if" and \
                not parts[2].startswith("127."):
            return parts[2], parts[1]
    return None, None


def other_interface(t):
    """An interface that is not loopback (one with an address first: the
    route the hole took) as "NAME=INDEX" (its index asked here: the run
    sees lo alone, tests/progs/net_doors.c), or None."""
    _, ifname = host_v4_address(t)
    if not ifname:
        ifname = next((n for _, n in socket.if_nameindex() if n != "lo"),
                      None)
    return "%s=%d" % (ifname, socket.if_nametoindex(ifname)) if ifname \
        else None


class HostService:
    """A TCP service of the host (this test process) on ADDR: it answers
    every connection "host-service" and records who came."""

    def __init__(self, addr):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.came = []
        self.got = []       # what each connection sent first
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, peer = self.sock.accept()
            except OSError:
                return
            self.came.append(peer)
            try:
                c.settimeout(2)
                self.got.append(c.recv(100))
                c.sendall(b"host-service\n")
            except OSError:
                pass
            c.close()

    def close(self):
        self.sock.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def listening(port):
    """Is anything listening on 127.0.0.1:port (read from /proc/net/tcp,
    without binding: a bind of ours could take the port from the run)?"""
    want = "0100007F:%04X" % port
    try:
        with open("/proc/net/tcp") as f:
            for ln in f.readlines()[1:]:
                p = ln.split()
                if p[1] == want and p[3] == "0A":
                    return True
    except OSError:
        pass
    return False


class LateListener:
    """A host service that takes a port after the run lets it go: it
    waits until the run listens on 127.0.0.1:port, then until that
    listener is gone, then binds and listens there itself and records
    every connection that reaches it (answering "host-service")."""

    def __init__(self, port, secs):
        self.port = port
        self.end = time.monotonic() + secs
        self.bound = False
        self.came = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while time.monotonic() < self.end and not listening(self.port):
            time.sleep(0.01)
        while time.monotonic() < self.end and listening(self.port):
            time.sleep(0.01)
        s = None
        while time.monotonic() < self.end:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", self.port))
                s.listen(4)
                break
            except OSError:
                s.close()
                s = None
                time.sleep(0.02)
        if not s:
            return
        self.bound = True
        s.settimeout(0.2)
        while time.monotonic() < self.end:
            try:
                c, peer = s.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            try:
                c.settimeout(2)
                self.came.append((peer, c.recv(100)))
                c.sendall(b"host-service\n")
            except OSError:
                self.came.append((peer, None))
            c.close()
        s.close()

    def join(self):
        self.thread.join(max(0.0, self.end - time.monotonic()) + 5)


class DnsServer:
    """A loopback upstream resolver (UDP) answering every A query with one
    address; it records the names it is asked."""

    gate = None		# a threading.Event every answer waits for

    def __init__(self, answer):
        self.answer = answer
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.asked = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                m, peer = self.sock.recvfrom(2048)
            except OSError:
                return
            off = 12
            try:
                while m[off]:
                    off += m[off] + 1
                qtype = struct.unpack(">H", m[off + 1:off + 3])[0]
            except (IndexError, struct.error):
                continue
            self.asked.append((m[12:off], qtype))
            an = 1 if qtype == 1 else 0
            out = m[:2] + struct.pack(">HHHHH", 0x8180, 1, an, 0, 0) + \
                m[12:off + 5]
            if an:
                out += struct.pack(">HHHIH", 0xc00c, 1, 1, 60, 4) + \
                    socket.inet_aton(self.answer)
            if self.gate is not None:
                self.gate.wait(60)
            try:
                self.sock.sendto(out, peer)
            except OSError:
                return

    def close(self):
        self.sock.close()


def probe(t, args, extra=(), env=None, wall="20s", timeout=90):
    run = t.corral(["run", "--json", "--limit", "wall=" + wall] +
                   list(extra) + t.prog_roots() +
                   ["--", t.prog("net_doors")] + list(args),
                   env=env, timeout=timeout)
    r = t.result(run)
    return r, r.get("stdout") or ""


def py_in_ws(t, name, prog):
    """prog (written as name) under corral, the test's directory read-only
    and a workspace of its own: the result."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    path = t.write(name, prog)
    run = t.corral(["run", "--json", "--ro", t.tmp, "-w", ws, "--", PYTHON,
                    path], timeout=60)
    return t.result(run)


def net_denied(r, syscall, what):
    d = denials_of(r, syscall, "net")
    true(d, "%s: no net denial of %s: %s" % (what, syscall,
                                           _show(r.get("denials"))))
    return d


# ---- N3: a packet leaving by another interface ----

MCAST_PROG = r"""
import errno, socket, struct
g4 = socket.inet_aton("239.7.7.7")
any4 = socket.inet_aton("0.0.0.0")
lo4 = socket.inet_aton("127.0.0.1")

def join(fam, level, opt, val):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.setsockopt(level, opt, val)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()

def group_req(ifindex, fam, addr):
    if fam == socket.AF_INET:
        sa = struct.pack("=H", fam) + b"\0\0" + addr
    else:
        sa = struct.pack("=H", fam) + b"\0" * 6 + addr
    return struct.pack("=I4x", ifindex) + sa.ljust(128, b"\0")

IP = socket.IPPROTO_IP
V6 = socket.IPPROTO_IPV6
g6 = socket.inet_pton(socket.AF_INET6, "ff05::7")
print("v4-mreq-any", join(socket.AF_INET, IP, 35, g4 + any4))
print("v4-mreqn-any", join(socket.AF_INET, IP, 35, g4 + any4 + struct.pack("=i", 0)))
print("v4-source-any", join(socket.AF_INET, IP, 39, g4 + any4 + lo4))
print("v4-group-any", join(socket.AF_INET, IP, 42, group_req(0, socket.AF_INET, g4)))
print("v6-mreq-any", join(socket.AF_INET6, V6, 20, g6 + struct.pack("=i", 0)))
print("v6-group-any", join(socket.AF_INET6, V6, 42, group_req(0, socket.AF_INET6, g6)))
print("v4-mreq-lo", join(socket.AF_INET, IP, 35, g4 + lo4))
print("v4-mreqn-lo", join(socket.AF_INET, IP, 35, g4 + any4 + struct.pack("=i", 1)))
print("v4-group-lo", join(socket.AF_INET, IP, 42, group_req(1, socket.AF_INET, g4)))
print("v6-mreq-lo", join(socket.AF_INET6, V6, 20, g6 + struct.pack("=i", 1)))
"""


@test
def multicast_join_is_refused_off_loopback(t):
    """A multicast join makes the kernel send membership reports (IGMP,
    MLD) out of the interface of the join, carrying the program's group
    and source addresses: an earlier build let a run with no network rule
    send ~2.7 KB/s of chosen bytes out of the host this way (observed on a
    veth pair in another namespace; this test sends nothing: refused
    joins send no report, and loopback ones stay on the host). Joins that
    name no interface or another one are refused with a net denial; joins
    on the loopback interface are performed."""
    path = t.write("mcast.py", MCAST_PROG)
    run = t.corral(["run", "--json", "--ro", t.tmp, "--", PYTHON, path])
    r = t.result(run)
    out = r.get("stdout") or ""
    ans = dict(ln.split(" ", 1) for ln in out.splitlines() if " " in ln)
    for k in ("v4-mreq-any", "v4-mreqn-any", "v4-source-any",
              "v4-group-any", "v6-mreq-any", "v6-group-any"):
        eq(ans.get(k), "EPERM", "%s (stdout %s)" % (k, _show(out, 600)))
    for k in ("v4-mreq-lo", "v4-mreqn-lo", "v4-group-lo"):
        eq(ans.get(k), "ok", "%s (stdout %s)" % (k, _show(out, 600)))
    true(ans.get("v6-mreq-lo") in ("ok", "EADDRNOTAVAIL", "ENODEV"),
         "v6-mreq-lo: %r" % ans.get("v6-mreq-lo"))
    d = net_denied(r, "setsockopt", "multicast join")
    true(len(d) >= 1 and "multicast" in d[0].get("reason", ""),
         "reason: %s" % _show(d))
    t.assert_next_run_ok()


@test
def pktinfo_cannot_choose_another_interface(t):
    """Every datagram corral sends for a run goes to a loopback address
    (here its DNS responder, for a query to 192.0.2.53:53 or
    [2001:db8::53]:53), and corral copies the program's control data into
    the send it performs. An IP_PKTINFO or IPV6_PKTINFO control message
    names the outgoing interface and the source address: with eth0's
    index (or eth0's address as source) the kernel routes the datagram
    for 127.0.0.1 out of eth0. Measured on the build this was written
    against, with MSG_PROBE (the kernel routes and sends nothing): "sent"
    by eth0 for both families, with eth0's address or none as source, and
    no denial. Promised (docs/network.md, docs/threat-model.md P2): no
    destination is reachable unless allowed; UDP goes only to the DNS
    responder and the run's own sockets. Now such a control message is
    refused (EPERM, a net denial) unless it names loopback or no interface
    and a loopback or unspecified source."""
    ifname = other_interface(t)
    if not ifname:
        print("note: no interface but loopback here; nothing to choose")
        return
    addr, _ = host_v4_address(t)
    cases = [("pktinfo", ifname, "0.0.0.0"), ("pktinfo6", ifname, "::"),
             ("pktinfo", "lo", addr or "192.0.2.2")]
    if addr:
        cases.append(("pktinfo", ifname, addr))
    for cmd, ifn, src in cases:
        r, out = probe(t, [cmd, ifn, src, "probe"])
        contains(out, "Operation not permitted",
                 "%s %s src %s: the datagram would leave by %s (stdout)" % (
                     cmd, ifn, src, ifn))
        net_denied(r, "sendmsg", "%s %s %s" % (cmd, ifn, src))
    # Loopback, or none, is what every datagram of the run uses anyway.
    for cmd, src in (("pktinfo", "127.0.0.1"), ("pktinfo", "0.0.0.0"),
                     ("pktinfo6", "::1")):
        r, out = probe(t, [cmd, "lo", src, "probe"])
        contains(out, "probe: sent", "%s lo src %s (stdout)" % (cmd, src))
        eq(denials_of(r, None, "net"), [], "%s lo: denials" % cmd)


@test
def socket_cannot_be_bound_to_another_interface(t):
    """The same through the socket, for the plain send()s corral never
    sees: SO_BINDTODEVICE, SO_BINDTOIFINDEX, IP_UNICAST_IF and
    IPV6_UNICAST_IF on a UDP socket corral connected to its DNS
    responder, or a sticky IPV6_PKTINFO. Measured on the build this was
    written against: every option "ok", and send(MSG_PROBE) then "sent"
    by eth0 (IPv4 with a device bound: EINVAL, since corral had bound the
    socket to 127.0.0.1 first), no denial. Now the options are refused
    (EPERM, a net denial) on internet sockets unless they name loopback
    or nothing; the same option numbers at other levels are performed as
    before."""
    ifname = other_interface(t)
    if not ifname:
        print("note: no interface but loopback here; nothing to choose")
        return
    for cmd, word in (("binddev", "bindtodevice"),
                      ("bindifindex", "bindtoifindex"),
                      ("unicastif", "unicastif")):
        for fam in ("4", "6"):
            r, out = probe(t, [cmd, fam, ifname, "probe"])
            res = answers(out)
            eq(res.get(word), "Operation not permitted",
               "%s %s %s: the option (stdout %s)" % (cmd, fam, ifname,
                                                     _show(out)))
            net_denied(r, "setsockopt", "%s %s" % (cmd, fam))
    r, out = probe(t, ["sticky6", ifname, "::", "probe"])
    eq(answers(out).get("sticky"), "Operation not permitted",
       "sticky IPV6_PKTINFO on %s (stdout %s)" % (ifname, _show(out)))
    net_denied(r, "setsockopt", "sticky6")
    # Loopback stays allowed.
    for args, word in ((["binddev", "6", "lo", "probe"], "bindtodevice"),
                       (["unicastif", "4", "lo", "probe"], "unicastif"),
                       (["sticky6", "lo", "::1", "probe"], "sticky")):
        r, out = probe(t, args)
        eq(answers(out).get(word), "ok", "%s (stdout %s)" % (
            " ".join(args), _show(out)))


# ---- N2: a handshake that ends after corral looked ----

def late_swap(t, sub):
    """Run probe SUB PORT (it listens on 127.0.0.1:PORT, connects to it,
    closes the listener, waits until someone else holds the port, then
    lets the connection finish) against a host listener that takes the
    port as soon as the run lets it go."""
    port = free_port()
    late = LateListener(port, 15)
    r, out = probe(t, [sub, str(port)], wall="30s")
    # The run is over, nothing of it left: what could reach the host
    # service has been sent. A second for it to land, not the rest of
    # the 15 s (each of these tests sat them out).
    late.end = min(late.end, time.monotonic() + 1.0)
    late.join()
    eq(answers(out).get("listen"), "ok", "%s: the run's listener (stdout %s)"
       % (sub, _show(out)))
    true(late.bound, "%s: the host side never took the port (stdout %s)" % (
        sub, _show(out)))
    eq(late.came, [], "%s: connections that reached the host listener "
       "(stdout %s)" % (sub, _show(out)))
    true("host-service" not in out,
         "%s: the program talked to the host service: %s" % (sub, _show(out)))
    return r, out


@test
def fast_open_connect_cannot_reach_a_later_listener(t):
    """A connect to the run's own loopback listener is performed only when
    every listener the kernel could pick is the run's, asked before and
    after the connect (tracer/handlers/loopback.c). With
    TCP_FASTOPEN_CONNECT (and TCP_FASTOPEN_NO_COOKIE) no SYN is sent until
    the first write, which corral does not see: the program connects,
    closes its listener, waits until a host service binds the port, and
    writes. Measured on the build this was written against: the host
    service accepted the program's connection and got its bytes ("ping"),
    the program read "host-service"; no denial. Promised
    (docs/network.md, "Servers on loopback"): a host service on loopback
    stays unreachable. Now TCP_FASTOPEN_CONNECT is refused (EOPNOTSUPP,
    as a kernel with client fast open disabled answers, and a net
    denial), and a connect is answered only once its handshake is over."""
    r, out = late_swap(t, "tfoswap")
    eq(answers(out).get("tfoconnect"), "Operation not supported",
       "TCP_FASTOPEN_CONNECT (stdout %s)" % _show(out))
    net_denied(r, "setsockopt", "fast open")


@test
def minimum_ttl_cannot_hold_a_handshake_open(t):
    """The same with IP_MINTTL 255 on the client: it drops the run
    listener's SYN-ACK (TTL 64) and keeps sending SYNs; the listener is
    closed, a host service binds the port, the option goes back to 0 and
    the next SYN is answered by the host service. Measured on the build
    this was written against: the host service got the bytes, the program
    read "host-service". Now IP_MINTTL (and IPV6_MINHOPCOUNT) other than 0
    is refused (EPERM, a net denial)."""
    r, out = late_swap(t, "minttlswap")
    eq(answers(out).get("minttl"), "Operation not permitted",
       "IP_MINTTL (stdout %s)" % _show(out))
    net_denied(r, "setsockopt", "minimum TTL")


@test
def unanswered_handshake_is_dissolved(t):
    """Any other way of keeping the handshake open, here a TCP-MD5 key for
    every peer (unprivileged; the run's listener has none and drops each
    SYN carrying a signature), removed once the host service holds the
    port. Measured on the build this was written against: connect
    EINPROGRESS, and the retransmitted SYN reached the host service, which
    got the bytes. Now corral answers a connect to the run's listener only
    once it is established (TCP_INFO), and asks who listens after that;
    not established within 200 ms, it is dissolved and answered ETIMEDOUT
    with a net denial."""
    r, out = late_swap(t, "md5swap")
    eq(answers(out).get("md5"), "ok", "the key (stdout %s)" % _show(out))
    eq(answers(out).get("connect"), "Connection timed out",
       "the connect (stdout %s)" % _show(out))
    net_denied(r, "connect", "a handshake never ended")


# ---- N1: the host's own addresses ----

@test
def host_own_address_is_closed_like_loopback(t):
    """The closed ranges are fixed (loopback, private, link-local...); the
    host's own address on its network interface (here 192.0.2.2, a
    documentation range) is not among them, so --allow-net 0.0.0.0/0:P
    opened it, and a host service reached on it (one bound to 0.0.0.0
    answers on every address of the host). Measured on the build this was
    written against: "connect ok", the host service answered. Promised
    (docs/network.md, "Allow-list"): loopback and private ranges are
    closed unless a rule names the exact address. Now an address the
    kernel routes locally is closed in the same way; a rule naming it
    exactly still opens it."""
    addr, _ = host_v4_address(t)
    if not addr:
        print("note: the host has no address but loopback; nothing to test")
        return
    srv = HostService(addr)
    try:
        r, out = probe(t, ["tcp", addr, str(srv.port)],
                       extra=["--allow-net", "0.0.0.0/0:%d" % srv.port])
        eq(answers(out).get("connect"), "Connection refused",
           "connect to the host's %s through 0.0.0.0/0 (stdout %s)" % (
               addr, _show(out)))
        d = net_denied(r, "connect", "the host's address")
        contains(d[0].get("target", ""), addr, "the denial's target")
        eq(srv.came, [], "connections that reached the host service")
        # Named exactly, it is the operator's decision.
        r, out = probe(t, ["tcp", addr, str(srv.port)],
                       extra=["--allow-net", "%s:%d" % (addr, srv.port)])
        eq(answers(out).get("tcp-reply"), '"host-service"',
           "an exact rule opens the host's address (stdout %s)" % _show(out))
    finally:
        srv.close()


@test
def dns_answer_naming_the_host_is_dropped(t):
    """The same through a name: an allowed name whose DNS answer is the
    host's own address passed the rebinding filter (it drops only the
    closed ranges), and the program connected to the host service.
    Measured on the build this was written against: "resolved
    192.0.2.2", "connect ok", the host service answered. Now the address
    is dropped and recorded (syscall "dns"), and with nothing left the
    answer is REFUSED."""
    addr, _ = host_v4_address(t)
    if not addr:
        print("note: the host has no address but loopback; nothing to test")
        return
    srv = HostService(addr)
    dns = DnsServer(addr)
    try:
        r, out = probe(t, ["name", "svc.example", str(srv.port)],
                       extra=["--allow-net", "svc.example:%d" % srv.port],
                       env={"CORRAL_DNS_UPSTREAM": "127.0.0.1:%d" % dns.port})
        true(dns.asked, "the upstream was never asked (stdout %s)" %
             _show(out))
        true("resolved" not in answers(out),
             "the name resolved to the host's address (stdout %s)" %
             _show(out))
        d = net_denied(r, "dns", "the host's address in an answer")
        eq(d[0].get("target"), "svc.example", "the denial's target")
        eq(srv.came, [], "connections that reached the host service")
    finally:
        dns.close()
        srv.close()


# ---- a run's socket gone, its address taken by a host process ----
#
# The run's program and this test take turns through files in the
# workspace (mark/wait), so every step of each race happens in the order
# the test names: the stranger binds only after the program let its socket
# go, and the upstream answers only after the stranger is bound.

TURNS = r"""
import ctypes, os, socket, struct, sys, time
ws = sys.argv[1]
def wait(name):
    while not os.path.exists(os.path.join(ws, name)):
        time.sleep(0.01)
def mark(name, text=""):
    with open(os.path.join(ws, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(ws, name + ".tmp"), os.path.join(ws, name))
def let_go(s, how):
    if how == "close":
        s.close()
        return
    # connect(AF_UNSPEC): the socket stays, its unnamed port goes.
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.connect(s.fileno(), bytes(16), 16)
    print("unspec", rc, ctypes.get_errno())
def md5(s):
    # A TCP-MD5 key for 127.0.0.1: corral's listeners have none and drop
    # the SYN, so the connect is announced but never arrives.
    a = struct.pack("=H", socket.AF_INET) + struct.pack(">H", 0) + \
        socket.inet_aton("127.0.0.1")
    s.setsockopt(socket.IPPROTO_TCP, 14, a.ljust(128, b"\0") +
                 struct.pack("=BBHi", 0, 0, 8, 0) + b"k3yk3yk3".ljust(80, b"\0"))
def query(qid, name):
    m = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for l in name.split("."):
        m += bytes([len(l)]) + l.encode()
    return m + b"\0\0\1\0\1"
"""

DNS_GONE_PROG = TURNS + r"""
how = sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("127.0.0.1", 53))
mark("port", str(s.getsockname()[1]))
wait("ready")
# A plain send (corral never sees it), the id and letter case chosen.
s.send(query(0x4c4b, "AlLoWeD.tEsT"))
wait("asked")
let_go(s, how)
mark("gone")
wait("second")
s2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s2.settimeout(30)
s2.connect(("127.0.0.1", 53))
s2.send(query(0x1111, "allowed.test"))
m = s2.recv(512)
print("second", m[:2].hex(), m[3] & 15)
"""

STALE_PROG = TURNS + r"""
how, ip, port = sys.argv[2], sys.argv[3], int(sys.argv[4])
s = socket.socket()
md5(s)
s.setblocking(False)
try:
    s.connect((ip, port))
except BlockingIOError:
    pass
mark("port", str(s.getsockname()[1]))
wait("ready")
let_go(s, how)
mark("gone")
wait("done")
print("program done")
"""


class GatedDns(DnsServer):
    """DnsServer for 203.0.113.7 that holds every answer until its gate
    opens."""

    def __init__(self):
        self.gate = threading.Event()
        super().__init__("203.0.113.7")

    def close(self):
        self.gate.set()
        super().close()


def proc_peer(table, port, state):
    """The remote address of the 127.0.0.1:port socket in /proc/net/TABLE
    in the given state (hex, "01" established, "02" SYN sent), or None."""
    want = "0100007F:%04X" % port
    with open("/proc/net/" + table) as f:
        for ln in f.readlines()[1:]:
            p = ln.split()
            if p[1] == want and p[3] == state:
                ip, hport = p[2].split(":")
                return (socket.inet_ntoa(struct.pack("<I", int(ip, 16))),
                        int(hport, 16))
    return None


def ws_of(t):
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    return ws


def ws_wait(ws, name, what):
    p = os.path.join(ws, name)
    true(wait_for(lambda: os.path.exists(p), 60),
         "the program never reached %s" % what)
    with open(p) as f:
        return f.read()


def ws_mark(ws, name):
    with open(os.path.join(ws, name), "w"):
        pass


def take_port(kind, port):
    """The stranger: a host process binding 127.0.0.1:port (None when the
    port is still somebody's)."""
    s = socket.socket(socket.AF_INET, kind)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    return s


def run_turns(t, prog, args, extra, env=None):
    ws = ws_of(t)
    path = t.write("turns.py", prog)
    p = t.spawn(["run", "--json", "--limit", "wall=60s", "--ro", t.tmp,
                 "-w", ws] + list(extra) + ["--", PYTHON, path, ws] +
                list(args), env=env)
    return ws, p


def dns_gone(t, how):
    dns = GatedDns()
    stranger = None
    try:
        ws, p = run_turns(t, DNS_GONE_PROG, [how],
                          ["--allow-net", "allowed.test:443"],
                          env={"CORRAL_DNS_UPSTREAM":
                               "127.0.0.1:%d" % dns.port})
        port = int(ws_wait(ws, "port", "its connect"))
        responder = proc_peer("udp", port, "01")
        true(responder, "the program's socket in /proc/net/udp")
        ws_mark(ws, "ready")
        # The question is in flight when the program lets its socket go.
        true(wait_for(lambda: dns.asked, 30),
             "the question never reached the upstream")
        ws_mark(ws, "asked")
        ws_wait(ws, "gone", "letting its socket go")
        stranger = take_port(socket.SOCK_DGRAM, port)
        if how == "unspec":
            true(stranger, "the dissolved socket's port taken")
        if stranger:
            # Its own question, from the address the run's socket had:
            # a name not on the list would be answered NXDOMAIN and
            # recorded as the run's denial.
            stranger.sendto(struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
                            + b"\x08stranger\x04test\0\0\1\0\1", responder)
        dns.gate.set()
        ws_mark(ws, "second")
        r = t.result(t.finish(p, timeout=90))
        out = r.get("stdout") or ""
        contains(out, "second 1111 0", "the run's next question answered")
        if how == "unspec":
            contains(out, "unspec 0 ", "connect(AF_UNSPEC)")
        got = []
        if stranger:
            stranger.setblocking(False)
            while True:
                try:
                    got.append(stranger.recv(2048))
                except OSError:
                    break
        eq(got, [], "what the stranger on the run's old port received")
        no_stranger_denial(r)
    finally:
        if stranger:
            stranger.close()
        dns.close()


@test
def dns_answer_never_reaches_a_closed_sockets_port(t):
    """The DNS responder recorded a client by its address only and never
    forgot it: a program that sent a question and closed its socket at
    once had the answer (its chosen id, letter case and RD bit) sent to
    whatever process of the host bound the port next, and that process
    could ask the run's responder itself, its refused names written into
    the run's result as the run's denials. Measured on the build this was
    written against: the stranger received the answer with id 4c4b and
    "AlLoWeD.tEsT", and a "stranger.test" denial. Now the socket is held
    while its record lives: the port cannot be taken, nothing reaches the
    stranger."""
    dns_gone(t, "close")


@test
def dns_answer_never_reaches_a_dissolved_sockets_port(t):
    """The same with connect(AF_UNSPEC), which gives an unnamed port up
    while the socket lives on: the record goes with it, and an answer in
    flight is dropped, not sent to the port's next owner."""
    dns_gone(t, "unspec")


@test
def dns_tcp_record_is_not_a_strangers(t):
    """A connect to the TCP responder whose SYN never arrives (a TCP-MD5
    key the responder lacks) left the run's record of its address; once
    the program closed the socket, a host process bound the port,
    connected to the responder from there and was served: its refused
    name became the run's denial. Now the accepted connection's other end
    must be the recorded socket (sock_diag)."""
    dns = GatedDns()
    dns.gate.set()
    stranger = None
    try:
        prog = TURNS + r"""
s = socket.socket()
md5(s)
s.setblocking(False)
try:
    s.connect(("127.0.0.1", 53))
except BlockingIOError:
    pass
mark("port", str(s.getsockname()[1]))
wait("ready")
s.close()
mark("gone")
wait("done")
print("program done")
"""
        ws, p = run_turns(t, prog, [], ["--allow-net", "allowed.test:443"],
                          env={"CORRAL_DNS_UPSTREAM":
                               "127.0.0.1:%d" % dns.port})
        port = int(ws_wait(ws, "port", "its connect"))
        responder = proc_peer("tcp", port, "02")
        true(responder, "the program's SYN_SENT socket in /proc/net/tcp")
        ws_mark(ws, "ready")
        ws_wait(ws, "gone", "its close")
        stranger = take_port(socket.SOCK_STREAM, port)
        true(stranger, "the closed socket's port taken")
        q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + \
            b"\x08stranger\x04test\0\0\1\0\1"
        got = stranger_exchange(stranger, responder,
                                struct.pack(">H", len(q)) + q)
        ws_mark(ws, "done")
        r = t.result(t.finish(p, timeout=90))
        contains(r.get("stdout") or "", "program done", "the program's end")
        eq(got, b"", "what the stranger received")
        no_stranger_denial(r)
    finally:
        if stranger:
            stranger.close()
        dns.close()


def no_stranger_denial(r):
    eq([d for d in denials_of(r, "dns")
        if "stranger" in str(d.get("target"))], [],
       "the stranger's question recorded as the run's denial")


def stranger_exchange(sock, addr, data):
    """What a stranger's TCP socket (None: it never got the port) receives
    after connecting to addr and sending data, until EOF."""
    got = b""
    if not sock:
        return got
    sock.settimeout(30)
    try:
        sock.connect(addr)
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        while True:
            b = sock.recv(2048)
            if not b:
                break
            got += b
    except OSError:
        pass
    return got


def stale_proxy(t, how):
    srv = HostService("127.0.0.2")
    stranger = None
    try:
        ws, p = run_turns(t, STALE_PROG, [how, "127.0.0.2", str(srv.port)],
                          ["--allow-net", "127.0.0.2:%d" % srv.port])
        port = int(ws_wait(ws, "port", "its connect"))
        proxy = proc_peer("tcp", port, "02")
        true(proxy, "the program's SYN_SENT socket in /proc/net/tcp")
        ws_mark(ws, "ready")
        ws_wait(ws, "gone", "letting its socket go")
        stranger = take_port(socket.SOCK_STREAM, port)
        if how == "unspec":
            true(stranger, "the dissolved socket's port taken")
        got = stranger_exchange(stranger, proxy, b"STRANGER-BYTES")
        ws_mark(ws, "done")
        r = t.result(t.finish(p, timeout=90))
        out = r.get("stdout") or ""
        contains(out, "program done", "the program's end")
        if how == "unspec":
            contains(out, "unspec 0 ", "connect(AF_UNSPEC)")
        eq(got, b"", "what the stranger received through the proxy")
        # The program's own connect to an address it may reach makes the
        # upstream connection first (so a closed port answers as the
        # kernel would): at most that one, and nothing came through it.
        true(len(srv.came) <= 1,
             "connections that reached the allowed service: %r" % srv.came)
        true(wait_for(lambda: len(srv.got) == len(srv.came), 5),
             "the service's reads ended")
        eq([g for g in srv.got if g], [], "bytes that reached the service")
        eq(r["usage"]["net_bytes"], 0, "usage.net_bytes")
    finally:
        if stranger:
            stranger.close()
        srv.close()


@test
def proxy_record_left_by_a_lost_syn_serves_no_stranger(t):
    """A connect the proxy recorded but whose SYN never reached it (a
    TCP-MD5 key on the program's socket) left its record forever, matched
    by the local address alone: once the program closed the socket, a
    host process bound that port, connected to the proxy and was relayed
    to the run's allowed destination, its bytes charged to the run.
    Measured on the build this was written against: the stranger got the
    service's answer, usage.net_bytes 27. Now the socket is held while its
    record lives and the accepted connection's other end must be that
    socket (sock_diag)."""
    stale_proxy(t, "close")


@test
def proxy_record_of_a_dissolved_socket_serves_no_stranger(t):
    """The same with connect(AF_UNSPEC), which frees the port while
    corral holds the socket: the inode check turns the stranger away."""
    stale_proxy(t, "unspec")


class OutsideUnixServers:
    """Unix stream listeners of this test process (outside every run) at
    paths, each accept counted in .came; close() stops them."""

    def __init__(self, paths):
        self.came, self.stop, self.srvs = [], [], []
        for p in paths:
            s = socket.socket(socket.AF_UNIX)
            s.bind(p)
            s.listen(8)
            s.settimeout(0.2)
            self.srvs.append(s)
        self.th = threading.Thread(target=self.serve, daemon=True)
        self.th.start()

    def serve(self):
        while not self.stop:
            for s in self.srvs:
                try:
                    c, _ = s.accept()
                    self.came.append(1)
                    c.close()
                except OSError:
                    pass

    def close(self):
        self.stop.append(1)
        self.th.join(2)
        for s in self.srvs:
            s.close()


# What the move programs print for each attempt: "what ok" or "what ERRNO".
TRIED = r'''
def tried(what, fn):
    try:
        fn()
        print(what, "ok")
    except OSError as e:
        print(what, e.errno)
'''

SOCKET_MOVES = r'''
import ctypes, os, socket, sys
out, ws = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
''' + TRIED + r'''
def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
tried("link", lambda: os.link(out + "/srv.sock", ws + "/h.sock"))
tried("rename", lambda: os.rename(out + "/srv.sock", ws + "/r.sock"))
tried("dir", lambda: os.rename(out + "/sub", ws + "/sub"))
os.mkdir(ws + "/empty")
tried("exchange", lambda: exchange(ws + "/empty", out + "/sub"))
tried("file", lambda: os.rename(out + "/plain", ws + "/plain"))
# Through an O_PATH fd of the socket (a stand-in): the fd forms of link.
fd = os.open(out + "/srv.sock", os.O_PATH)
def linkat_empty():
    if libc.linkat(fd, b"", -100, (ws + "/e.sock").encode(), 0x1000) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
tried("linkat fd", linkat_empty)
tried("link fd path", lambda: os.link("/proc/self/fd/%d" % fd,
                                      ws + "/p.sock", follow_symlinks=True))
for name in ("h.sock", "r.sock", "sub/srv.sock", "empty/srv.sock",
             "e.sock", "p.sock"):
    c = socket.socket(socket.AF_UNIX)
    tried("connect " + name, lambda: c.connect(ws + "/" + name))
    c.close()
# A socket whose name is removed is judged where it was: outside.
gone = os.open(out + "/gone.sock", os.O_PATH)
os.unlink(out + "/gone.sock")
c = socket.socket(socket.AF_UNIX)
tried("connect removed", lambda: c.connect("/proc/self/fd/%d" % gone))
'''


@test
def unix_socket_outside_cannot_be_brought_into_the_workspace(t):
    """A unix socket is reachable only inside the workspace, judged where
    its name is. A hard link of an outside server's socket into the
    workspace (its source in another writable root) reached that server:
    the session bus or an ssh agent under a writable /tmp (found by a
    probing session). Now a link or rename of a socket, and a rename of a
    directory (which may hold sockets), from outside the workspace into it
    answer EXDEV, as across filesystems (mv copies then), recorded; a
    file still moves. So do the fd forms, through an O_PATH fd of the
    socket (its stand-in): linkat(fd, "", AT_EMPTY_PATH) of one reached
    the outside server (found by a probing session). An O_PATH fd's link
    of such a socket whose name was removed still leads nowhere (the
    socket is judged where it was)."""
    out = t.path("out")
    os.makedirs(out + "/sub", exist_ok=True)
    os.chmod(out, 0o777)
    with open(out + "/plain", "w") as f:
        f.write("x")
    srv = OutsideUnixServers((out + "/srv.sock", out + "/sub/srv.sock",
                              out + "/gone.sock"))
    try:
        ws = t.path("ws")
        os.makedirs(ws, exist_ok=True)
        os.chmod(ws, 0o777)
        prog = t.write("moves.py", SOCKET_MOVES)
        run = t.corral(["run", "--json", "--ro", t.tmp, "--rw", out,
                        "-w", ws, "--", PYTHON, prog, out, ws], timeout=60)
        r = t.result(run)
        eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
        eq(r.get("stdout"), "link 18\nrename 18\ndir 18\nexchange 18\n"
           "file ok\nlinkat fd 18\nlink fd path 18\n"
           "connect h.sock 2\nconnect r.sock 2\n"
           "connect sub/srv.sock 2\nconnect empty/srv.sock 2\n"
           "connect e.sock 2\nconnect p.sock 2\nconnect removed 13\n",
           "each move refused EXDEV, nothing reached")
        eq(srv.came, [], "connections the outside servers accepted")
        ds = denials_of(r, layer="fs")
        # (The link's path form answers the mounts' EXDEV first: its
        # source is reached through /proc.)
        eq(sorted(d["syscall"] for d in ds),
           ["connect", "link", "linkat", "rename", "rename", "renameat2"],
           "denials")
        true(all("into the workspace" in d["reason"] for d in ds
                 if d["syscall"] != "connect"), "reasons %s" % _show(ds))
        eq([d.get("reason") for d in ds if d["syscall"] == "connect"],
           ["unix sockets are reachable only inside the workspace"],
           "the removed socket's refusal, judged where it was")
        true(os.path.exists(out + "/srv.sock") and
             os.path.exists(out + "/sub/srv.sock"),
             "the outside sockets stay where they were")
    finally:
        srv.close()
    t.assert_next_run_ok()


@test
def scm_credentials_refusal_is_recorded(t):
    """Explicit SCM_CREDENTIALS cannot be sent by corral (the kernel
    checks them against the sender, corral): EPERM, as before, and now
    recorded like every other refusal (an earlier build refused silently,
    found by a side-by-side run of Go's suite). The socket still works."""
    prog = r'''
import os, socket, struct
a, b = socket.socketpair()
b.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
cred = struct.pack("iII", os.getpid(), os.getuid(), os.getgid())
try:
    a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, cred)])
    print("sent")
except OSError as e:
    print("creds", e.errno)
a.send(b"y")
print(b.recv(1))
'''
    r = py_in_ws(t, "creds.py", prog)
    eq(r.get("stdout"), "creds 1\nb'y'\n", "stdout (stderr %r)" %
       r.get("stderr"))
    ds = denials_of(r, "sendmsg", "net")
    eq(len(ds), 1, "one sendmsg denial: %s" % _show(r.get("denials")))
    contains(ds[0]["reason"], "SCM_CREDENTIALS", "reason")
    t.assert_next_run_ok()


@test
def fast_open_send_answers_as_without_client_fast_open(t):
    """sendto/sendmsg with MSG_FASTOPEN connects and sends in one call,
    which corral does not see as a connect: refused even to the run's own
    listener, now with EOPNOTSUPP (what a kernel with client fast open
    disabled answers, as TCP_FASTOPEN_CONNECT is; it answered EACCES,
    which reads as a refusal of the destination, found by a probing
    session), recorded; without an address too, connected or not (the
    flag was dropped and the bytes sent: EPIPE and SIGPIPE where the
    kernel answers EINVAL). A plain connect and send on the same socket
    then work, and a UDP socket ignores the flag, as in the kernel."""
    prog = r'''
import socket
lsn = socket.socket(); lsn.bind(("127.0.0.1", 0)); lsn.listen(4)
addr = lsn.getsockname()
for how in ("sendto", "sendmsg", "noname"):
    c = socket.socket()
    try:
        if how == "sendto":
            c.sendto(b"x", socket.MSG_FASTOPEN, addr)
        elif how == "sendmsg":
            c.sendmsg([b"x"], [], socket.MSG_FASTOPEN, addr)
        else:
            c.sendmsg([b"x"], [], socket.MSG_FASTOPEN)
        print(how, "sent")
    except OSError as e:
        print(how, e.errno)
c.connect(addr); c.sendall(b"hi")
try:
    c.sendmsg([b"y"], [], socket.MSG_FASTOPEN)
    print("connected sent")
except OSError as e:
    print("connected", e.errno)
s, _ = lsn.accept()
print(s.recv(2))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
print("udp", u.sendto(b"z", socket.MSG_FASTOPEN, u.getsockname()))
'''
    r = py_in_ws(t, "tfo.py", prog)
    eq(r.get("stdout"), "sendto 95\nsendmsg 95\nnoname 95\nconnected 95\n"
       "b'hi'\nudp 1\n", "stdout (stderr %r)" % r.get("stderr"))
    for sc in ("sendto", "sendmsg"):
        ds = net_denied(r, sc, "MSG_FASTOPEN")
        contains(ds[0]["reason"], "fast open", sc + ": reason")
    t.assert_next_run_ok()


WS_MOVES = r'''
import os, socket, sys
r, ws = sys.argv[1], sys.argv[2]
''' + TRIED + r'''
tried("rename ws", lambda: os.rename(ws, ws + "2"))
tried("rename parent", lambda: os.rename(r + "/B", r + "/C"))
tried("link under new name", lambda: os.link(r + "/srv.sock",
                                             r + "/C/ws/srv.sock"))
tried("rename back", lambda: os.rename(r + "/C", r + "/B"))
os.mkdir(r + "/D")
tried("replace parent", lambda: os.rename(r + "/D", r + "/B"))
c = socket.socket(socket.AF_UNIX)
tried("connect", lambda: c.connect(ws + "/srv.sock"))
tried("file in ws", lambda: open(ws + "/f", "w").close())
'''


@test
def workspace_and_its_ancestors_do_not_move(t):
    """The rules judge paths as text, the resolver reaches the workspace by
    the directory it holds: when a writable root holds the workspace, a
    rename of the workspace's parent, a link of an outside socket under
    the parent's new name (outside by text) and a rename back reached the
    outside server through the workspace (found by a probing session).
    The workspace and its ancestors do not move: EBUSY, recorded."""
    r = t.path("r")
    ws = r + "/B/ws"
    os.makedirs(ws, exist_ok=True)
    for d in (r, r + "/B", ws):
        os.chmod(d, 0o777)
    srv = OutsideUnixServers((r + "/srv.sock",))
    try:
        prog = t.write("wsmoves.py", WS_MOVES)
        run = t.corral(["run", "--json", "--ro", t.tmp, "--rw", r,
                        "-w", ws, "--", PYTHON, prog, r, ws], timeout=60)
        res = t.result(run)
        eq(res.get("status"), "ok", "status (stderr %r)" %
           res.get("stderr"))
        eq(res.get("stdout"), "rename ws 16\nrename parent 16\n"
           "link under new name 2\nrename back 2\nreplace parent 16\n"
           "connect 2\nfile in ws ok\n", "stdout")
        eq(srv.came, [], "connections the outside server accepted")
        ds = [d for d in denials_of(res, layer="fs")
              if "do not move" in d.get("reason", "")]
        eq(sum(d.get("count", 1) for d in ds), 3,
           "denials: %s" % _show(res.get("denials")))
        true(os.path.isdir(ws), "the workspace is where it was")
    finally:
        srv.close()
    t.assert_next_run_ok()
