"""A third round of doors a hostile program may try. The probes are
tests/progs/third_doors.c. Loopback only: every connection here goes to
corral's own listeners, the run's own sockets or a server of this test
process on 127.0.0.1; no packet is ever sent elsewhere.

The findings here are calls the supervisor performs for the program on
its one loop thread that the program can make block: while the loop
waits, nothing is answered and no budget is looked at (the wall budget
among them), and past wall + 60 s the watchdog ends the run as a platform
failure, with no result and the workspace left behind.
"""

import socket
import threading

from harness import eq, true, lt, test, _show, answers


class Listener:
    """A loopback TCP listener of this test process that accepts and
    holds every connection (nothing is read or written)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(c)

    def close(self):
        self.sock.close()
        for c in self.held:
            c.close()


def quick_end(t, run, bound, what):
    true(run.result is not None,
         "no result JSON after %.1fs, exit %s, stderr %s" % (
             run.elapsed, run.code, _show(run.err)))
    r = t.result(run)
    # Either corral's call gave up at its deadline and the program went
    # on to its end, or the wall budget ended it: never a held loop.
    true(r.get("status") in ("ok", "program_error") or
         (r.get("status"), r.get("limit")) == ("limit_exceeded", "wall"),
         "status %r, limit %r (%s)" % (r.get("status"), r.get("limit"), what))
    lt(run.elapsed, bound, "seconds until corral returned (%s; usage %s, "
       "stdout %s)" % (what, _show(r.get("usage")), _show(r.get("stdout"))))


@test
def proxy_connect_cannot_hold_the_loop(t):
    """A TCP connect to an allowed destination, or to port 53 of any
    address (DNS over TCP), is performed by corral: it connects its
    duplicate of the program's socket to its own proxy listener or DNS
    responder (tracer/handlers/net.c, connect_tcp and the port-53
    branch of cr_h_connect), in the socket's own blocking mode, on the
    loop thread. docs/network.md calls it "local and immediate, even for
    a blocking socket", and it is, unless the program sees to it that the
    SYN is never answered: a TCP_MD5SIG key on the socket (unprivileged,
    any peer prefix) puts an MD5 option in the SYN, and a listener that has
    no key drops it (TCP_SYNCNT chooses how long the kernel keeps
    retrying, up to 127 tries two minutes apart). Measured on the build
    this was written against: wall=3s with 3 retries ran 19.6 s (DNS
    responder) and 19.9 s (proxy, --allow-net to a loopback listener);
    with 10 retries the watchdog ended it at 63 s, exit 125, no result,
    the workspace left in TMPDIR. Promised (docs/limits.md,
    docs/threat-model.md P3): the program cannot make corral's own calls
    wait; a breach ends the run within a tick. Now every connect corral
    makes for the program runs under a 200 ms deadline of the loop thread
    (tracer/guard.c): past it the program gets ETIMEDOUT."""
    run = t.corral(["run", "--json", "--limit", "wall=3s"] + t.prog_roots() +
                   ["--", t.prog("third_doors"), "md5", "127.0.0.1", "53",
                    "3"], timeout=150)
    quick_end(t, run, 10, "DNS over TCP")
    true(answers(t.result(run).get("stdout")).get("md5sig") == "ok",
         "the probe could not set its key: %s" %
         _show(t.result(run).get("stdout")))
    srv = Listener()
    try:
        run = t.corral(["run", "--json", "--limit", "wall=3s",
                        "--allow-net", "127.0.0.1:%d" % srv.port] +
                       t.prog_roots() +
                       ["--", t.prog("third_doors"), "md5", "127.0.0.1",
                        str(srv.port), "3"], timeout=150)
        quick_end(t, run, 10, "through the proxy")
    finally:
        srv.close()
    t.assert_next_run_ok()


@test
def last_close_of_a_lingering_socket_cannot_hold_the_loop(t):
    """corral holds duplicates of the program's descriptors while it
    performs a call: the socket it sends on, and every descriptor of an
    SCM_RIGHTS message (control_copy, tracer/handlers/net.c). A send that
    must wait for room is kept (tracer/net/defer.c) with those
    duplicates. If the program closes its own copy meanwhile, corral's
    close() is the last one, and close() of a TCP socket with SO_LINGER
    set and data the peer has not taken waits up to the linger time, on
    the loop thread. The probe: a connection of the run whose server never
    reads (the client's buffer full), SO_LINGER {1, 30 s} on the client,
    the client passed over a unix socket whose peer is full (deferred),
    the client closed, then the unix peer closed: the kept send fails and
    corral closes the client. Measured on the build this was written
    against: wall=4s ran 32.5 s; a linger of an hour goes to the watchdog
    (platform failure at wall + 60 s). Promised (docs/limits.md): the
    program cannot make corral's own calls wait. Now corral's close of a
    socket copy runs under a 200 ms deadline (tracer/guard.c): an
    interrupted close still releases the descriptor."""
    run = t.corral(["run", "--json", "--limit", "wall=4s"] + t.prog_roots() +
                   ["--", t.prog("third_doors"), "linger", "30"],
                   timeout=150)
    r = t.result(run)
    res = answers(r.get("stdout"))
    true(res.get("linger") == "ok",
         "the probe could not set up its socket: %s" % _show(r.get("stdout")))
    quick_end(t, run, 12, "lingering last close")
    t.assert_next_run_ok()


@test
def ipv6_routing_header_cannot_choose_the_first_hop(t):
    """IPV6_RTHDR is an unprivileged socket option (setsockopt is not
    notified for it: tracer/syscalls.def lists setsockopt only for the
    sharing and filter options). A type 4 (segment routing) header makes
    the kernel route every packet of the socket to the header's active
    segment, writing the destination corral chose as the last segment
    (fl6_update_dst, ipv6_push_rthdr4): corral connects the duplicate to
    its proxy or DNS responder on [::1], and the SYN leaves for whatever
    address the program named, with up to 2 KiB of segments and TLVs of
    the program's choosing in the header, by the host's default route.
    DNS-over-TCP connects are not counted against net-connections, so the
    number of such SYNs is unbounded. (The IPv4 counterpart, IP_OPTIONS
    with a source route, is refused by this kernel to unprivileged users:
    EPERM natively.) Loopback only here: the segment is ::1, and the
    kernel, which does not accept segment routing (seg6_enabled 0), drops
    the SYN where corral's own connect to its responder would have been
    answered at once: the connect that corral performed times out. Measured on
    the build this was written against: "rthdr ok", "connect Connection
    timed out 3.1", no denial. Promised (docs/network.md, docs/threat-model.md
    P2): every call that names a peer address is decided by the
    supervisor, and no destination is reachable unless allowed. Now
    setsockopt IPV6_RTHDR and IPV6_2292PKTOPTIONS are refused (EPERM, a
    net denial), and so are IPV6_RTHDR, IPV6_2292RTHDR and IP_RETOPTS
    control messages of a send corral performs."""
    run = t.corral(["run", "--json", "--limit", "wall=20s"] +
                   t.prog_roots() +
                   ["--", t.prog("third_doors"), "srh", "::1", "53", "1"],
                   timeout=90)
    r = t.result(run)
    res = answers(r.get("stdout"))
    true(res.get("rthdr") and res.get("rthdr") != "ok",
         "a routing header was accepted on the run's socket (stdout %s)" %
         _show(r.get("stdout")))
    true([d for d in (r.get("denials") or []) if d.get("layer") == "net"],
         "no net denial for the routing header: %s" %
         _show(r.get("denials")))



@test
def ipv4_source_route_option_is_refused_by_corral(t):
    """IP_OPTIONS with a loose source route is IPv4's twin of the routing
    header: every later send of the socket (and corral's own connect of
    its duplicate) would go to the route's first hop. This kernel refuses
    it to an unprivileged caller (EPERM natively too); one that allowed
    it was not asked: corral refuses it itself now, with a net denial,
    while other options (record route), an empty value (which clears
    them) and the other levels' options of the same number (TCP_KEEPIDLE)
    work as natively."""
    code = (
        "import socket, errno\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "lsrr = bytes([131, 7, 4]) + socket.inet_aton('127.0.0.2') + b'\\x01'\n"
        "rr = bytes([7, 7, 4]) + bytes(4) + b'\\x01'\n"
        "for name, val in (('lsrr', lsrr), ('rr', rr), ('empty', b'')):\n"
        "    try:\n"
        "        s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, val)\n"
        "        print(name, 'ok')\n"
        "    except OSError as e:\n"
        "        print(name, errno.errorcode[e.errno])\n"
        "k = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
        "k.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 30)\n"
        "print('keepidle', k.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE))\n"
        # The same options as a send's control message (IP_RETOPTS, 7):
        # a source route refused, record route sent as natively.
        "rcv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "rcv.bind(('127.0.0.1', 0))\n"
        "for name, val in (('cmsg-lsrr', lsrr), ('cmsg-rr', rr)):\n"
        "    try:\n"
        "        s.sendmsg([b'x'], [(socket.IPPROTO_IP, 7, val)], 0,\n"
        "                  rcv.getsockname())\n"
        "        print(name, 'ok')\n"
        "    except OSError as e:\n"
        "        print(name, errno.errorcode[e.errno])\n"
        # An IPv6 option on an IPv4 socket: the kernel's ENOPROTOOPT.
        "try:\n"
        "    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RTHDR, bytes(8))\n"
        "    print('rthdr-on-v4 ok')\n"
        "except OSError as e:\n"
        "    print('rthdr-on-v4', errno.errorcode[e.errno])\n")
    r = t.result(t.corral(["run", "--json", "--", "python3", "-c", code]))
    eq(r.get("stdout"), "lsrr EPERM\nrr ok\nempty ok\nkeepidle 30\n"
       "cmsg-lsrr EPERM\ncmsg-rr ok\nrthdr-on-v4 ENOPROTOOPT\n", "answers")
    for call in ("setsockopt", "sendmsg"):
        nets = [d for d in (r.get("denials") or [])
                if d.get("layer") == "net" and d.get("syscall") == call]
        eq(len(nets), 1, "one net denial of %s, by corral (%s)" %
           (call, _show(r.get("denials"))))
    t.assert_next_run_ok()

@test(supervisor_only=True)
def nonblocking_flag_flipped_under_corral_cannot_hold_the_loop(t):
    """corral performs accept (and a connect to the run's own listener,
    and a unix stream connect) on its duplicate of the program's socket
    "non-blocking only around it" (tracer/handlers/loopback.c accept_try,
    cr_net_connect_local; tracer/handlers/net.c unix_connect): it sets
    O_NONBLOCK with F_SETFL, makes the call, and restores the flag. The
    flag lives on the open file the program shares, and fcntl(F_SETFL)
    is not notified: a thread of the program that flips O_NONBLOCK in a
    loop clears it between corral's F_SETFL (or F_GETFL) and its accept4,
    and corral's accept4 on an empty queue then waits, on the loop
    thread, for a connection that only the run could make and whose
    connect corral no longer answers. Measured on the build this was
    written against (probe `acceptrace`: one thread flipping, one calling
    accept, one connecting every 2 ms): wall=8s ended by the watchdog at
    68 s, exit 125, no result JSON, the workspace left in TMPDIR;
    /proc/PID/wchan of corral: inet_csk_accept, syscall 288 (accept4).
    Promised (docs/network.md, "Servers on loopback", and docs/limits.md):
    a blocking accept waits in the loop without holding it; the program
    cannot make corral's own calls wait. Now accept and every connect
    corral performs run under a 200 ms deadline of the loop thread
    (tracer/guard.c): an accept cut short is "none waiting", a connect
    ETIMEDOUT."""
    run = t.corral(["run", "--json", "--limit", "wall=5s"] + t.prog_roots() +
                   ["--", t.prog("third_doors"), "acceptrace", "3"],
                   timeout=150)
    true(run.result is not None,
         "no result JSON after %.1fs, exit %s, stderr %s" % (
             run.elapsed, run.code, _show(run.err)))
    r = t.result(run)
    lt(run.elapsed, 15, "seconds until corral returned (wall=5s; status "
       "%s, stdout %s)" % (r.get("status"), _show(r.get("stdout"))))
    t.assert_next_run_ok()
