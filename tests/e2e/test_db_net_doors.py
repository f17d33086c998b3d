"""Doors out of the network rules: ways a run's packets could leave by an
interface no rule opens, a connect to the run's own listener could end at a
host listener, or an allow rule could reach the host itself. The probes are
tests/progs/net_doors.c.

Nothing here sends a packet off the host: a probe that names another
interface uses MSG_PROBE (the kernel looks the route up and sends nothing),
every connection goes to loopback or to one of the host's own addresses
(local: the packet never leaves), and every service is this test process's.
"""

import socket
import struct
import threading
import time

import sys

PYTHON = "/usr/bin/python3"

from harness import eq, true, contains, test, _show, answers, denials_of


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
    """The name of an interface that is not loopback (one with an address
    first: the route the hole took), or None."""
    _, ifname = host_v4_address(t)
    if ifname:
        return ifname
    for _, name in socket.if_nameindex():
        if name != "lo":
            return name
    return None


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
                c.recv(100)
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
            self.sock.sendto(out, peer)

    def close(self):
        self.sock.close()


def probe(t, args, extra=(), env=None, wall="20s", timeout=90):
    run = t.corral(["run", "--json", "--limit", "wall=" + wall] +
                   list(extra) + t.prog_roots() +
                   ["--", t.prog("net_doors")] + list(args),
                   env=env, timeout=timeout)
    r = t.result(run)
    return r, r.get("stdout") or ""


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
