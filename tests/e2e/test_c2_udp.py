"""The run's own UDP sockets on loopback: servers and clients inside the
run talk to each other (sendto, connect, IPv6, asyncio, a fixed port bound
again after close, more sockets than the set holds), while a sender outside
the run is never heard, cannot share a port the run holds, a host service on
loopback is never reached, and the program cannot remove the filter.
Loopback only."""

import os
import socket
import subprocess

from harness import eq, contains, true, test, wait_for
from test_c0_net import denials
from test_c1_loopback import loop_run, finish, beside, _as_nobody, PY


GOOD = r'''
import asyncio, os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", 0))
host, port = s.getsockname()
print("bound", host, port != 0)
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.sendto(b"hello", ("127.0.0.1", port))
d, a = s.recvfrom(100)
print("got", d, a == c.getsockname())
s.sendto(b"back", a)
print("reply", c.recv(100))
c2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c2.connect(("127.0.0.1", port))
c2.send(b"conn")
print("connected", s.recvfrom(100)[0])
c3 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c3.sendto(b"any", ("0.0.0.0", port))
print("any", s.recvfrom(100)[0])
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.bind(("::1", 0))
c6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
c6.sendto(b"six", s6.getsockname()[:2])
print("v6", s6.recvfrom(100)[0])
lite = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDPLITE)
lite.bind(("127.0.0.1", 0))
cl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDPLITE)
cl.sendto(b"lite", lite.getsockname())
print("lite", lite.recvfrom(100)[0])
# a fixed port, closed and bound again (the supervisor lets go of it)
fixed = s.getsockname()[1]
for sock in (s, c, c2, c3):
    sock.close()
again = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
again.bind(("127.0.0.1", fixed))
print("rebound", again.getsockname()[1] == fixed)
again.close()
# more sockets over time than the run may hold at once
for i in range(700):
    x = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    x.bind(("127.0.0.1", 0))
    x.close()
print("many ok")

class Echo(asyncio.DatagramProtocol):
    def connection_made(self, t):
        self.t = t
    def datagram_received(self, data, addr):
        self.t.sendto(data.upper(), addr)

async def main():
    loop = asyncio.get_running_loop()
    t, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    p = t.get_extra_info("sockname")[1]
    fut = loop.create_future()
    class C(asyncio.DatagramProtocol):
        def datagram_received(self, data, addr):
            fut.set_result(data)
    ct, _ = await loop.create_datagram_endpoint(C, remote_addr=("127.0.0.1", p))
    ct.sendto(b"async")
    print("asyncio", await asyncio.wait_for(fut, 10))
    ct.close()
    t.close()
asyncio.run(main())
'''


@test
def udp_servers_in_the_run(t):
    run, r = loop_run(t, GOOD, timeout=120)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"],
       "bound 0.0.0.0 True\ngot b'hello' True\nreply b'back'\n"
       "connected b'conn'\nany b'any'\nv6 b'six'\nlite b'lite'\n"
       "rebound True\nmany ok\nasyncio b'ASYNC'\n", "what the run said")
    eq(denials(r, None, "net"), [], "net denials")
    eq(r["status"], "ok", "status")


# The turns of a run beside a stranger: publish its ports in the
# workspace, wait for "go", then list what a socket heard.
TURNS = r'''
import os, socket, time
ws = os.environ["HOME"]
def publish(*ports):
    with open(ws + "/port.tmp", "w") as f:
        f.write(" ".join(str(p) for p in ports))
    os.rename(ws + "/port.tmp", ws + "/port")
    while not os.path.exists(ws + "/go"):
        time.sleep(0.02)
def heard(s, secs):
    s.settimeout(secs)
    got = []
    try:
        while True:
            got.append(s.recvfrom(100)[0].decode())
    except socket.timeout:
        pass
    return got
'''

SERVE = TURNS + r'''
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
gone = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
gone.bind(("127.0.0.1", 0))
closed_port = gone.getsockname()[1]
gone.close()
publish(s.getsockname()[1], closed_port)
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.sendto(b"own", s.getsockname())
print("received", heard(s, 2))
'''

STRANGER = r'''
import socket, sys
port, closed = int(sys.argv[1]), int(sys.argv[2])
x = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
x.sendto(b"stranger", ("127.0.0.1", port))
for what, p in (("held", port), ("closed", closed)):
    for opt in ("SO_REUSEADDR", "SO_REUSEPORT"):
        y = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        y.setsockopt(socket.SOL_SOCKET, getattr(socket, opt), 1)
        try:
            y.bind(("127.0.0.1", p))
            print(what, opt, "bound")
            y.sendto(b"shared " + what.encode(), ("127.0.0.1", port))
        except OSError as e:
            print(what, opt, "errno", e.errno)
'''


def _udp_stranger(t, preexec=None):
    ws = t.path("ws")
    proc = loop_run(t, SERVE, spawn=True)

    def stranger(ports):
        st = subprocess.run([PY, "-c", STRANGER] + ports,
                            capture_output=True, timeout=60,
                            preexec_fn=preexec)
        open(os.path.join(ws, "go"), "w").close()
        return st

    st, run, r = beside(t, proc, ws, "port", stranger)
    eq(st.returncode, 0, "the stranger ran (stderr %r)" % st.stderr)
    out = st.stdout.decode()
    for what in ("held", "closed"):
        for opt in ("SO_REUSEADDR", "SO_REUSEPORT"):
            contains(out, "%s %s errno 98\n" % (what, opt),
                     "a stranger binds the run's %s port with %s" %
                     (what, opt))
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"], "received ['own']\n",
       "the run heard only its own datagram")
    eq(r["status"], "ok", "status")
    # the next run works
    run, r = loop_run(t, "import socket\ns = socket.socket(socket.AF_INET, "
                      "socket.SOCK_DGRAM)\ns.bind(('127.0.0.1', 0))\n"
                      "s.sendto(b'x', s.getsockname())\nprint(s.recv(9))\n")
    eq(r["stdout"], "b'x'\n", "the next run")


UNSPEC_RUN = r"""
import os, socket, time
fam, lo = %s
s2 = socket.socket(fam, socket.SOCK_DGRAM)
s2.bind((lo, 0))
s1 = socket.socket(fam, socket.SOCK_DGRAM)
s1.connect(s2.getsockname())
s1.send(b"hello")
_, src = s2.recvfrom(100)
p1 = src[1]
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
un = (ctypes.c_ushort * 8)(0)
print("unspec", libc.connect(s1.fileno(), un, 16), flush=True)
with open("ports.tmp", "w") as f:
    f.write("%%d %%d" %% (p1, s2.getsockname()[1]))
os.rename("ports.tmp", "ports")
while not os.path.exists("go"):
    time.sleep(0.05)
try:
    s2.sendto(b"SECRET-FROM-RUN", (lo, p1))
    print("sent", flush=True)
except OSError as e:
    print("send errno", e.errno, flush=True)
s2.settimeout(1)
try:
    d, a = s2.recvfrom(100)
    print("received", d, flush=True)
except OSError:
    print("heard nothing", flush=True)
"""

UNSPEC_HOST = r"""
import socket, sys
fam = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
lo = "::1" if sys.argv[1] == "6" else "127.0.0.1"
p1, p2 = int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(fam, socket.SOCK_DGRAM)
try:
    s.bind((lo, p1))
    print("bound", flush=True)
except OSError as e:
    print("bind errno", e.errno, flush=True)
    sys.exit(0)
s.sendto(b"INJECTED-BY-HOST", (lo, p2))
s.settimeout(2)
try:
    d, a = s.recvfrom(100)
    print("host received", d, flush=True)
except OSError:
    print("host heard nothing", flush=True)
"""


@test
def udp_disconnect_keeps_the_port_the_run_heard_from(t):
    """connect(AF_UNSPEC) made the kernel give up a run socket's port
    (chosen by corral, so not locked), while corral still counted the
    address as the run's: a host process that took it received the run's
    datagrams and was heard by its sockets, status ok, nothing recorded.
    The port is now bound again at once (or the socket forgotten)."""
    ws = t.path("ws")
    for fam in ("4", "6"):
        for f in ("ports", "go"):
            if os.path.exists(os.path.join(ws, f)):
                os.unlink(os.path.join(ws, f))
        spec = "socket.AF_INET6, '::1'" if fam == "6" else \
            "socket.AF_INET, '127.0.0.1'"
        proc = loop_run(t, UNSPEC_RUN % spec, spawn=True)
        try:
            portf = os.path.join(ws, "ports")
            true(wait_for(lambda: os.path.exists(portf), 30),
                 "the run wrote its ports")
            p1, p2 = open(portf).read().split()
            host = subprocess.run([PY, "-c", UNSPEC_HOST, fam, p1, p2],
                                  capture_output=True, timeout=60)
            open(os.path.join(ws, "go"), "w").close()
            run, r = finish(t, proc)
            proc = None
        finally:
            if proc is not None:
                proc.kill()
                proc.communicate()
        hout = host.stdout.decode()
        true("host received" not in hout,
             "IPv%s: the host got the run's datagram: %r" % (fam, hout))
        true("received" not in r["stdout"].replace("heard nothing", ""),
             "IPv%s: the run heard the host: %r" % (fam, r["stdout"]))
        contains(r["stdout"], "unspec 0", "the disconnect itself works")
    t.assert_next_run_ok()


MAPPED_PROG = r"""
import socket
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind(("127.0.0.1", 0))
rx.settimeout(5)
port = rx.getsockname()[1]
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
print("sendto", u.sendto(b"x", ("::ffff:127.0.0.1", port)))
print("got", rx.recvfrom(16)[0])
rx.sendto(b"reply", ("127.0.0.1", u.getsockname()[1]))
u.settimeout(5)
print("reply", u.recvfrom(16)[0])
c = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
c.connect(("::ffff:127.0.0.1", port))
print("send", c.send(b"y"))
print("got", rx.recvfrom(16)[0])
import errno, time
cl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
cl.bind(("127.0.0.1", 0))
cport = cl.getsockname()[1]
cl.close()
d = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
d.connect(("::ffff:127.0.0.1", cport))
d.send(b"a")
time.sleep(0.2)
try:
    d.send(b"b")
    print("closed send2 ok")
except OSError as e:
    print("closed send2", errno.errorcode[e.errno])
o = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
o.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
try:
    o.sendto(b"x", ("::ffff:127.0.0.1", port))
    print("v6only ok")
except OSError as e:
    print("v6only", errno.errorcode[e.errno])
"""


@test
def udp_dual_stack_socket_reaches_a_mapped_ipv4_peer(t):
    """An unbound AF_INET6 UDP socket sending to (or connecting to) an
    IPv4 peer of the run through ::ffff:127.0.0.1 (Node's udp6 sockets,
    Java's DatagramSocket) got ENETUNREACH: corral bound it to [::1],
    from where the kernel does not route to a mapped address (found by a
    probing session). It is bound to the mapped loopback then, and the
    datagrams go both ways, as natively; a closed mapped port answers as
    the kernel's (connect 0, then ECONNREFUSED), an IPV6_V6ONLY socket
    has no route there (ENETUNREACH)."""
    run, r = loop_run(t, MAPPED_PROG)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    eq(r.get("stdout"), "sendto 1\ngot b'x'\nreply b'reply'\nsend 1\n"
       "got b'y'\nclosed send2 ECONNREFUSED\nv6only ENETUNREACH\n",
       "stdout")
    eq([d for d in r.get("denials", []) if "closed port" not in
        (d.get("reason") or "")], [], "denials")


@test
def udp_stranger_not_heard(t):
    _udp_stranger(t)


@test(root=True)
def udp_stranger_other_uid_not_heard(t):
    _udp_stranger(t, preexec=_as_nobody)


# An unbound socket's first send goes to a port nobody holds; then the
# socket publishes where it is bound and listens. Both families.
PROBED_FIRST = TURNS + r'''
import sys
closed = int(sys.argv[1])   # a port the run never held
member = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
member.bind(("127.0.0.1", 0))
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print("probe", c.sendto(b"anyone?", ("127.0.0.1", closed)))
c6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
print("probe6", c6.sendto(b"anyone?", ("::ffff:127.0.0.1", closed)))
print("bound", c.getsockname()[0], c6.getsockname()[0])
# the run's own sockets are still reachable from it
try:
    print("to member", c.sendto(b"own", member.getsockname()),
          member.recvfrom(100)[0])
except OSError as e:
    print("to member errno", e.errno)
publish(c.getsockname()[1], c6.getsockname()[1])
for s in (c, c6):
    print("received", heard(s, 1))
'''

TO_PORTS = r'''
import socket, sys
for p in sys.argv[1:]:
    for host in ("127.0.0.1", "127.0.0.9"):
        x = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        x.sendto(b"stranger", (host, int(p)))
print("sent")
'''


def stranger_beside(t, prog, sender, args=()):
    """prog runs (loop_run) until it publishes its ports; sender, a
    process outside the run, sends to them; then prog goes on. The
    result, once the stranger sent and the run exited 0."""
    ws = t.path("ws")
    proc = loop_run(t, prog, args=list(args), spawn=True)

    def stranger(ports):
        st = subprocess.run([PY, "-c", sender] + ports,
                            capture_output=True, timeout=60)
        open(os.path.join(ws, "go"), "w").close()
        return st

    st, run, r = beside(t, proc, ws, "port", stranger)
    eq(st.stdout, b"sent\n", "the stranger sent (stderr %r)" % st.stderr)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    return r


@test
def udp_socket_that_probed_a_closed_port_hears_only_the_run(t):
    """An unbound UDP socket whose first send goes to a loopback port
    nobody holds gets its loopback port and source filter at that send,
    as at a connect: an earlier build sent on it unbound, the kernel bound
    it to the wildcard without a filter, and a sender outside the run was
    heard (and the run's own sockets answered EACCES to it; found by a
    probing session)."""
    gone = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gone.bind(("127.0.0.1", 0))
    closed = gone.getsockname()[1]
    gone.close()
    r = stranger_beside(t, PROBED_FIRST, TO_PORTS, [str(closed)])
    eq(r["stdout"], "probe 7\nprobe6 7\nbound 127.0.0.1 ::ffff:127.0.0.1\n"
       "to member 3 b'own'\nreceived []\nreceived []\n",
       "what the run said")
    eq(r["status"], "ok", "status")


# An unbound socket's send or write without an address fails
# (EDESTADDRREQ) and the kernel binds it to the wildcard all the same: a
# call corral never sees. Both families.
AUTOBOUND = TURNS + r'''
import errno
socks = []
for fam in (socket.AF_INET, socket.AF_INET6):
    c = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        c.send(b"to no one")
    except OSError as e:
        print("send", errno.errorcode[e.errno])
    try:
        os.write(c.fileno(), b"to no one")
    except OSError as e:
        print("write", errno.errorcode[e.errno])
    socks.append(c)
print("bound", [c.getsockname()[1] > 0 for c in socks])
publish(*[c.getsockname()[1] for c in socks])
for c in socks:
    print("received", heard(c, 1))
'''

TO_PORTS6 = r'''
import socket, sys
for p, fam, host in ((sys.argv[1], socket.AF_INET, "127.0.0.1"),
                     (sys.argv[2], socket.AF_INET6, "::1")):
    x = socket.socket(fam, socket.SOCK_DGRAM)
    x.sendto(b"stranger", (host, int(p)))
print("sent")
'''


@test
def udp_socket_bound_by_a_failed_send_hears_no_stranger(t):
    """A UDP socket the kernel binds at a send or write that names no
    address (which fails, EDESTADDRREQ, and which corral never sees) is
    bound to the wildcard: corral makes every UDP socket with a filter
    that drops all until the run's own filter replaces it, so a sender
    outside the run is not heard. An earlier build made none, and the
    stranger's datagrams were received in both families (found by a
    probing session)."""
    r = stranger_beside(t, AUTOBOUND, TO_PORTS6)
    eq(r["stdout"], "send EDESTADDRREQ\nwrite EDESTADDRREQ\n"
       "send EDESTADDRREQ\nwrite EDESTADDRREQ\nbound [True, True]\n"
       "received []\nreceived []\n", "what the run said")
    eq(r["status"], "ok", "status")


class HostUDP:
    """A UDP service on loopback outside the run (a resolver, syslog)."""

    def __init__(self, family=socket.AF_INET):
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1",
                        0))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def received(self):
        n = 0
        while True:
            try:
                self.sock.recv(100)
                n += 1
            except BlockingIOError:
                return n

    def close(self):
        self.sock.close()


@test
def udp_host_service_refused(t):
    h4, h6 = HostUDP(), HostUDP(socket.AF_INET6)
    try:
        prog = r'''
import socket, sys
p4, p6 = int(sys.argv[1]), int(sys.argv[2])
def tryit(what, fam, addr, connect):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if connect:
            s.connect(addr)
            s.send(b"leak")
        else:
            s.sendto(b"leak", addr)
        print(what, "sent")
    except OSError as e:
        print(what, "errno", e.errno)
tryit("v4", socket.AF_INET, ("127.0.0.1", p4), False)
tryit("v4c", socket.AF_INET, ("127.0.0.1", p4), True)
tryit("any", socket.AF_INET, ("0.0.0.0", p4), False)
tryit("mapped", socket.AF_INET6, ("::ffff:127.0.0.1", p4), False)
tryit("v6", socket.AF_INET6, ("::1", p6), True)
tryit("other", socket.AF_INET, ("127.0.0.2", p4), False)
'''
        run, r = loop_run(t, prog, [str(h4.port), str(h6.port)])
        eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
        # Every send answers as to a closed port: an unconnected one its
        # length (its datagram dropped by corral's sink), a connect and
        # its first send succeed (pointed at corral's refuser, which the
        # kernel answers with ICMP port unreachable); the refusal is
        # recorded, nothing reaches the host.
        for what in ("v4", "v4c", "any", "mapped", "v6", "other"):
            contains(r["stdout"], "%s sent\n" % what, what)
        eq(sum(d["count"] for d in denials(r, None, "net")), 6,
           "net denials (%r)" %
           r["denials"])
        eq(h4.received() + h6.received(), 0, "datagrams the host got")
        eq(r["status"], "ok", "status")
    finally:
        h4.close()
        h6.close()


@test
def udp_lite_twin_of_a_host_port_reaches_nothing(t):
    """UDP and UDP-Lite keep separate port tables, so a UDP-Lite socket of
    the run may bind the number of a host's UDP service. The run's UDP set
    matched address and port only: the twin made the host's port one of
    the run's own, and the run's UDP sends reached the host service, and
    its replies came back, with no denial. Each protocol now reaches only
    its own members. Found by a side-by-side session of CPython's suite."""
    h4, h6 = HostUDP(), HostUDP(socket.AF_INET6)
    try:
        prog = r'''
import socket, sys
LITE = socket.IPPROTO_UDPLITE
for fam, host, port in ((socket.AF_INET, "127.0.0.1", int(sys.argv[1])),
                        (socket.AF_INET6, "::1", int(sys.argv[2]))):
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.bind((host, 0))
    l = socket.socket(fam, socket.SOCK_DGRAM, LITE)
    l.bind((host, port))                  # the host port's number, legal
    print("twin bound", l.getsockname()[1] == port)
    for what, act in (("lite-to-udp", lambda: l.sendto(b"x", u.getsockname())),
                      ("udp-to-host", lambda: u.sendto(b"leak", (host, port))),
                      ("udp-connect", lambda: (u.connect((host, port)),
                                               u.send(b"leak")))):
        try:
            act()
            print(what, "sent")
        except OSError as e:
            print(what, "errno", e.errno)
    # Each protocol still reaches its own: a run's UDP-Lite pair and a
    # run's UDP pair on one port number.
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((host, 0))
    n = s.getsockname()[1]
    sl = socket.socket(fam, socket.SOCK_DGRAM, LITE)
    sl.bind((host, n))
    sl.settimeout(5)
    s.settimeout(5)
    socket.socket(fam, socket.SOCK_DGRAM, LITE).sendto(b"lite", (host, n))
    socket.socket(fam, socket.SOCK_DGRAM).sendto(b"udp", (host, n))
    print("same number", sl.recvfrom(100)[0], s.recvfrom(100)[0])
'''
        run, r = loop_run(t, prog, [str(h4.port), str(h6.port)])
        eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
        out = r["stdout"]
        eq(out.count("lite-to-udp errno 111\n"), 2, "lite-to-udp refused "
           "(%r)" % out)
        # As to a closed port: an unconnected send answers its length
        # (corral's sink), a connect and its first send succeed (corral's
        # refuser answers with the ICMP error); the host gets nothing.
        for what in ("udp-to-host", "udp-connect"):
            eq(out.count("%s sent\n" % what), 2, "%s dropped (%r)" %
               (what, out))
        eq(out.count("twin bound True\n"), 2, "twins bound")
        eq(out.count("same number b'lite' b'udp'\n"), 2,
           "each protocol reaches its own (%r)" % out)
        eq(h4.received() + h6.received(), 0, "datagrams the host got")
        eq(r["status"], "ok", "status")
    finally:
        h4.close()
        h6.close()


@test
def udp_filter_and_sharing_refused(t):
    prog = r'''
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
accept_all = struct.pack("HBBI", 6, 0, 0, 0xffffffff)
for name, num, val in (("attach", 26, None), ("detach", 27, b"\0" * 4),
                       ("lock", 44, struct.pack("i", 1)),
                       ("bpf", 50, struct.pack("i", 3))):
    try:
        if val is None:
            import ctypes
            buf = ctypes.create_string_buffer(accept_all)
            val = struct.pack("HxxxxxxQ", 1, ctypes.addressof(buf))
        s.setsockopt(socket.SOL_SOCKET, num, val)
        print(name, "done")
    except OSError as e:
        print(name, "errno", e.errno)
# the sharing options read back as set, and share nothing
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
print("flags", u.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT),
      u.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR))
u.bind(("127.0.0.1", 0))
u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u2.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
u2.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    u2.bind(u.getsockname())
    print("shared")
except OSError as e:
    print("share errno", e.errno)
t1 = socket.socket()
t1.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
print("tcp reuseport", t1.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT))
t1.bind(("127.0.0.1", 0))
t1.listen()
t2 = socket.socket()
t2.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
try:
    t2.bind(t1.getsockname())
    print("tcp shared")
except OSError as e:
    print("tcp share errno", e.errno)
# other levels' options of the same numbers are performed
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
print("v6only", s6.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY))
s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 7)
print("ttl", s.getsockopt(socket.IPPROTO_IP, socket.IP_TTL))
# a TCP server's SO_REUSEADDR is the kernel's
tcp = socket.socket()
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
print("tcp reuseaddr", tcp.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR))
'''
    run, r = loop_run(t, prog)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"],
       "attach errno 1\ndetach errno 1\nlock errno 1\nbpf errno 1\n"
       "flags 1 1\nshare errno 98\ntcp reuseport 1\n"
       "tcp share errno 98\nv6only 1\nttl 7\n"
       "tcp reuseaddr 1\n", "what the run said")
    eq(sum(d["count"] for d in denials(r, "setsockopt", "net")), 4,
       "setsockopt denials (%r)" % r["denials"])
    # The second binds' EADDRINUSE is recorded, naming the options: a
    # second worker's failure must not look like a stranger's port
    # (nginx "reuseport", haproxy's reload; a compatibility probe).
    shared = [d for d in denials(r, "bind", "net")
              if "remembered, not applied" in (d.get("reason") or "")]
    eq(sum(d["count"] for d in shared), 2,
       "bind denials naming the sharing options (%r)" % r["denials"])
    eq(r["status"], "ok", "status")


CLOSED_PORT = r'''
import socket, sys
# Ports nobody holds (the test bound them outside and closed them).
for fam, host, port in ((socket.AF_INET, "127.0.0.1", int(sys.argv[1])),
                        (socket.AF_INET6, "::1", int(sys.argv[2]))):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    for i in range(3):
        try:
            print(fam.name, "sendto", s.sendto(b"x" * 100, (host, port)))
        except OSError as e:
            print(fam.name, "sendto errno", e.errno)
    m = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        print(fam.name, "sendmsg", m.sendmsg([b"ab", b"cd"], [], 0,
                                             (host, port)))
    except OSError as e:
        print(fam.name, "sendmsg errno", e.errno)
'''


@test
def udp_send_to_closed_port_as_the_kernel(t):
    """An unconnected sendto/sendmsg to a loopback UDP port no socket
    holds: the kernel answers the length every time (the ICMP error
    reaches only a connected socket); so does corral, natively and
    under corral side by side (trio's test_send_to_closed_local_port,
    Twisted's test_badConnect). The refusal is still recorded."""
    closed_side_by_side(t, CLOSED_PORT, {"sendto 100\n": 6})


def closed_side_by_side(t, prog, premise):
    """prog run natively and in the run with a v4 and a v6 loopback port
    nobody holds (bound outside and closed); the same answers, premise
    {line: count} holding natively, the refusals recorded."""
    ports = []
    for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        p = socket.socket(fam, socket.SOCK_DGRAM)
        p.bind((host, 0))
        ports.append(str(p.getsockname()[1]))
        p.close()
    want = subprocess.run([PY, "-c", prog] + ports,
                          capture_output=True, text=True, timeout=60).stdout
    for line, count in premise.items():
        eq(want.count(line), count, "native answers (%r)" % want)
    run, r = loop_run(t, prog, ports)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"], want, "answers against native")
    true(denials(r, None, "net"), "refusals recorded (%r)" % r["denials"])
    eq(r["status"], "ok", "status")


CONNECT_CLOSED = r'''
import errno, socket, sys, time
def name(e):
    return errno.errorcode.get(e.errno, e.errno)
def refused(s):
    """Send until the kernel reports the ICMP error (bounded)."""
    for i in range(300):
        try:
            s.send(b"x")
        except OSError as e:
            return name(e)
        time.sleep(0.01)
    return "never"
for fam, host, outside in ((socket.AF_INET, "127.0.0.1", int(sys.argv[1])),
                           (socket.AF_INET6, "::1", int(sys.argv[2]))):
    # A port bound here and closed (the usual way to find a free one),
    # and one the test bound outside and closed.
    p = socket.socket(fam, socket.SOCK_DGRAM)
    p.bind((host, 0))
    closed = p.getsockname()[1]
    p.close()
    for what, port in (("closed here", closed), ("closed outside", outside)):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.connect((host, port))
        print(fam.name, what, "peer", s.getpeername()[:2] == (host, port))
        print(fam.name, what, "first send", s.send(b"x"))
        print(fam.name, what, "then", refused(s))
        s.send(b"y")
        s.settimeout(5)
        try:
            s.recv(10)
            print(fam.name, what, "recv data")
        except OSError as e:
            print(fam.name, what, "recv", name(e))
        # Connected again, to a socket that is there: it hears.
        q = socket.socket(fam, socket.SOCK_DGRAM)
        q.bind((host, 0))
        s.connect(q.getsockname())
        print(fam.name, what, "peer now", s.getpeername() == q.getsockname())
        s.send(b"hello")
        q.settimeout(5)
        print(fam.name, what, "got", q.recvfrom(10)[0])
        s.close()
        q.close()
'''


@test
def udp_connect_to_closed_port_as_the_kernel(t):
    """A connect to a loopback UDP port no socket holds succeeds in the
    kernel; its first send too, and a later call answers ECONNREFUSED
    (the ICMP error). corral answered ECONNREFUSED at once (Twisted's
    test_connectionRefused), and a port the run had bound and closed
    still took datagrams (corral's duplicate held it). Now both answer
    as natively, side by side; getpeername names the port asked for;
    the refusal is recorded and nothing leaves the run."""
    closed_side_by_side(t, CONNECT_CLOSED, {"then ECONNREFUSED\n": 4,
                                            "recv ECONNREFUSED\n": 4})
    t.assert_next_run_ok()


NO_PORT = r'''
import socket
srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
srv.bind(("127.0.0.1", 0))
srv.settimeout(3)
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.setsockopt(socket.IPPROTO_IP, 24, 1)   # IP_BIND_ADDRESS_NO_PORT
c.bind(("127.0.0.1", 0))
c.sendto(b"hello", srv.getsockname())
try:
    data, peer = srv.recvfrom(100)
    print("got", data.decode(), peer == c.getsockname())
except socket.timeout:
    print("lost")
print("option kept", c.getsockopt(socket.IPPROTO_IP, 24))
'''


@test
def udp_bound_without_a_port_is_heard(t):
    """A UDP socket bound to port 0 with IP_BIND_ADDRESS_NO_PORT gets its
    port at its first send; its member entry named port 0, and every
    datagram it sent to the run's own server was dropped (curl
    --interface over TFTP; a differential run of curl's suite). The port
    is taken at the bind now (the option stays set)."""
    run, r = loop_run(t, NO_PORT)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    eq(r.get("stdout"), "got hello True\noption kept 1\n", "stdout")
    t.assert_next_run_ok()
