"""Abstract unix socket names: the run's own listeners work (names,
autobind, multiprocessing), while a host service's abstract name is never
reached, a stranger who finds the run's inner name is dropped at accept,
and a name the run let go and a stranger bound is refused."""

import os
import socket
import subprocess

from harness import eq, contains, true, test, wait_for
from test_c0_net import denials, accepted_any
from test_c1_loopback import loop_run, finish, _as_nobody, PY


GOOD = r'''
import socket, multiprocessing.connection as mc
address = b"\x00python-test-hello\x00\xff"
s1 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s1.bind(address)
s1.listen()
s2 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s2.connect(s1.getsockname())
s3, pa = s1.accept()
s2.sendall(b"ping")
print("names", s1.getsockname() == address, s2.getpeername() == address,
      repr(pa), s3.recv(4))
mx = b"\x00" + b"h" * 107
m = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
m.bind(mx)
print("max", m.getsockname() == mx)
a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
a.bind("")
an = a.getsockname()
a.listen()
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(an)
print("autobind", an[:1] == b"\0", len(an), a.accept()[0].fileno() > 0)
sp = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
sp.bind(b"\0seq")
sp.listen()
cp = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
cp.connect(b"\0seq")
print("seqpacket", sp.accept()[0].fileno() > 0)
l = mc.Listener("\0mp-listener", family="AF_UNIX")
cl = mc.Client("\0mp-listener", family="AF_UNIX")
lc = l.accept()
cl.send("hi")
print("multiprocessing", lc.recv())
'''


@test
def abstract_names_in_the_run(t):
    run, r = loop_run(t, GOOD)
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"],
       "names True True '' b'ping'\nmax True\nautobind True 6 True\n"
       "seqpacket True\nmultiprocessing hi\n", "what the run said")
    eq(denials(r, None, "net"), [], "net denials")
    eq(r["status"], "ok", "status")


@test
def abstract_host_names_and_datagrams_refused(t):
    host = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = b"\0corral-test-host-%d" % os.getpid()
    host.bind(name)
    host.listen(4)
    host.setblocking(False)
    try:
        prog = r'''
import socket, sys
name = sys.argv[1].encode().replace(b"@", b"\0")
for what, fn in (
        ("host", lambda: socket.socket(socket.AF_UNIX).connect(name)),
        ("x11", lambda: socket.socket(socket.AF_UNIX).connect(b"\0/tmp/.X11-unix/X0")),
        ("dgram-bind", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).bind(b"\0dg")),
        ("dgram-send", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", name))):
    try:
        fn()
        print(what, "done")
    except OSError as e:
        print(what, "errno", e.errno)
'''
        run, r = loop_run(t, prog, [name.decode().replace("\0", "@")])
        eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
        eq(r["stdout"], "host errno 111\nx11 errno 111\ndgram-bind errno 13\n"
           "dgram-send errno 13\n", "what the run said")
        eq(sum(d["count"] for d in denials(r, None, "net")), 4,
           "net denials (%r)" % r["denials"])
        eq(accepted_any(host), False, "the host service saw a connection")
        eq(r["status"], "ok", "status")
    finally:
        host.close()


SERVE = r'''
import os, socket, time
ws = os.environ["HOME"]
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
l.bind(b"\0served")
l.listen(8)
gone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
gone.bind(b"\0gone")
gone.close()
with open(ws + "/ready.tmp", "w") as f:
    f.write("ready")
os.rename(ws + "/ready.tmp", ws + "/ready")
while not os.path.exists(ws + "/go"):
    time.sleep(0.02)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(b"\0served")
c.sendall(b"own")
s, _ = l.accept()
print("accepted", s.recv(10))
r = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    r.connect(b"\0gone")
    r.sendall(b"leak")
    print("gone connected")
except OSError as e:
    print("gone errno", e.errno)
'''

STRANGER = r'''
import socket, sys, time
names = [l.split()[-1] for l in open("/proc/net/unix").read().splitlines()[1:]
         if l.split()[-1].startswith("@corral-")]
# the run bound two names: the oldest listens ("served"), the other is gone
served = min(names, key=lambda n: int(n.rsplit("-", 1)[1]))
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(served.replace("@", "\0", 1).encode())
c.sendall(b"stranger")
prefix, seq = served.rsplit("-", 1)
squat = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
squat.bind((prefix + "-" + str(int(seq) + 1)).replace("@", "\0", 1).encode())
squat.listen(4)
print("ready", flush=True)
sys.stdin.readline()
squat.settimeout(5)
try:
    conn, _ = squat.accept()
    conn.settimeout(5)
    print("squat got", conn.recv(10))
except OSError as e:
    print("squat none", type(e).__name__)
'''


def _abstract_stranger(t, preexec=None):
    ws = t.path("ws")
    proc = loop_run(t, SERVE, spawn=True)
    st = None
    try:
        true(wait_for(lambda: os.path.exists(os.path.join(ws, "ready")), 30),
             "the run bound its names")
        st = subprocess.Popen([PY, "-c", STRANGER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=preexec)
        eq(st.stdout.readline().decode(), "ready\n", "the stranger's set-up")
        open(os.path.join(ws, "go"), "w").close()
        run, r = finish(t, proc)
        proc = None
        sout, serr = st.communicate(b"\n", timeout=60)
    finally:
        if proc is not None:
            proc.kill()
            proc.communicate()
        if st is not None and st.poll() is None:
            st.kill()
            st.communicate()
    eq(run.code, 0, "exit status (stderr %r)" % r["stderr"])
    eq(r["stdout"], "accepted b'own'\ngone errno 111\n",
       "the run served only its own client and refused the squatter")
    true(sout.decode() in ("squat got b''\n", "squat none timeout\n"),
         "the squatter received nothing (%r %r)" % (sout, serr))
    eq(len(denials(r, "accept", "net")), 1, "one accept denial (%r)" %
       r["denials"])
    eq(len(denials(r, "connect", "net")), 1, "one connect denial (%r)" %
       r["denials"])
    eq(r["status"], "ok", "status")
    run, r = loop_run(t, GOOD)
    eq(r["status"], "ok", "the next run")


@test
def abstract_stranger_dropped(t):
    _abstract_stranger(t)


@test(root=True)
def abstract_stranger_other_uid_dropped(t):
    _abstract_stranger(t, preexec=_as_nobody)


NAME_CHURN = r'''
import os, socket
# One live abstract listener, one live path listener and a datagram
# server, then thousands of short-lived names of both kinds: the live
# ones keep their names (corral's tables once forgot the oldest).
os.chdir(os.environ["WS"])
a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
a.bind(b"\0churn-live")
a.listen()
p = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
p.bind("live.sock")
p.listen()
srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
srv.bind("srv.dgram")
cli = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
cli.bind("cli.dgram")
for i in range(4200):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(b"\0churn-%d" % i)
    s.close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("short.sock")
    s.close()
    os.unlink("short.sock")
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(b"\0churn-live")
print("abstract", a.accept()[0].getsockname()[1:].decode())
print("path", p.getsockname())
cli.sendto(b"ping", "srv.dgram")
data, frm = srv.recvfrom(16)
print("from", frm, srv.sendto(b"pong", frm), cli.recv(16))
'''


@test
def abstract_and_path_names_outlive_churn(t):
    """4 200 short-lived abstract and path names beside live ones: the
    live listeners stay reachable under their names, and a datagram
    server's reply reaches its client (the tables forgot the oldest name,
    live or not, past 1 024 abstract or 4 096 path binds; found by a
    probing session)."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    run, r = loop_run(t, NAME_CHURN, extra=["--env", "WS=" + ws,
                                           "--limit", "wall=120s"],
                      timeout=150)
    eq(r["status"], "ok", "status (stderr %r)" % r["stderr"][-600:])
    eq(r["stdout"], "abstract churn-live\npath live.sock\n"
       "from cli.dgram 4 b'pong'\n", "what the run said")
    eq(denials(r, None, "net"), [], "net denials")
