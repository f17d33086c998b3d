"""sendfile, performed by the supervisor (tracer/handlers/sendfile.c).

The kernel's sendfile splices: a socket keeps a reference to each page it
was given (and its whole folio) after the call, memory no budget sees, so
corral answered every sendfile EINVAL in the filter. Programs with a
fallback copied through user memory; nginx's default configuration
(`sendfile on`) has none and closed every connection after the headers.
Now a sendfile into a stream socket is read by the supervisor into its own
memory and sent as the program's send would be, and one into a regular
file is the supervisor's own sendfile (nothing held past the call); into
a pipe it still answers EINVAL. Each answer is compared with the kernel's,
case by case, natively and under corral, as in test_dg_errno_parity.py.
"""

import os

import resource

from harness import eq, test, _show
from test_dg_errno_parity import parity, PRELUDE, PY

def in_ws(t, name, body, extra=(), preexec=None):
    """PRELUDE + body run under corral in a fresh workspace of its own
    (the script beside, read-only): the result."""
    ws = t.path(name)
    os.makedirs(ws)
    os.chmod(ws, 0o755)
    script = t.write(name + ".py", PRELUDE + body)
    r = t.corral(["run", "--json", "--ro", t.tmp, "-w", ws] + list(extra) +
                 ["--", PY, script, "."], preexec=preexec, timeout=90)
    return t.result(r)


CASES = r'''
import errno, hashlib, resource, signal, socket, threading

def mkfile(name, data, flags=os.O_RDWR):
    fd = os.open(name, flags | os.O_CREAT | os.O_TRUNC, 0o600)
    if flags & os.O_ACCMODE == os.O_WRONLY:
        os.write(fd, data)
    else:
        os.write(fd, data)
        os.lseek(fd, 0, 0)
    return fd

data = bytes(range(256)) * 16 * 64          # 256 KiB
src = mkfile("src.bin", data)

def drain(sock, out):
    while True:
        b = sock.recv(1 << 16)
        if not b:
            break
        out.append(b)

# Into a socket, with an offset: the count, the bytes, the offset moved,
# the file's own position not.
a, b = socket.socketpair()
off = 1000
n = os.sendfile(a.fileno(), src, off, 5000)
got = b.recv(1 << 16)
print("sock_off count", n, "same", got == data[1000:6000],
      "pos", os.lseek(src, 0, 1))
# Without one: the file's position moves.
os.lseek(src, 7, 0)
n = os.sendfile(a.fileno(), src, None, 100)
print("sock_pos count", n, "same", b.recv(1 << 16) == data[7:107],
      "pos", os.lseek(src, 0, 1))
t("sock_eof", lambda: print("sock_eof count",
                            os.sendfile(a.fileno(), src, len(data) + 5, 10)))
t("sock_zero", lambda: print("sock_zero count",
                             os.sendfile(a.fileno(), src, 0, 0)))
a.close(); b.close()

# A blocking stream socket takes all of a big count, as the kernel's.
a, b = socket.socketpair()
parts = []
th = threading.Thread(target=drain, args=(b, parts))
th.start()
os.lseek(src, 0, 0)
n = os.sendfile(a.fileno(), src, None, len(data))
a.shutdown(socket.SHUT_WR)
th.join()
print("big count", n, "same", b"".join(parts) == data,
      "pos", os.lseek(src, 0, 1))
a.close(); b.close()

# TCP on loopback, between two sockets of the program.
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
l.bind(("127.0.0.1", 0))
l.listen(1)
c = socket.create_connection(l.getsockname())
s, _ = l.accept()
parts = []
th = threading.Thread(target=drain, args=(s, parts))
th.start()
n = os.sendfile(c.fileno(), src, 0, len(data))
c.close()
th.join()
print("tcp count", n, "same", b"".join(parts) == data)
s.close(); l.close()

# A full non-blocking socket: EAGAIN.
a, b = socket.socketpair()
a.setblocking(False)
try:
    while True:
        a.send(b"x" * 65536)
except BlockingIOError:
    pass
t("nonblock_full", lambda: os.sendfile(a.fileno(), src, 0, 4096))
a.close(); b.close()

# A closed peer: EPIPE, and SIGPIPE, counted by a handler.
hits = []
signal.signal(signal.SIGPIPE, lambda *x: hits.append(1))
a, b = socket.socketpair()
b.close()
t("epipe", lambda: os.sendfile(a.fileno(), src, 0, 10))
print("sigpipe", len(hits))
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
a.close()

# Into a file, with an offset and without.
out = mkfile("out.bin", b"")
n = os.sendfile(out, src, 10, 3000)
print("file_off count", n, "pos", os.lseek(src, 0, 1),
      "out", os.lseek(out, 0, 1),
      "same", open("out.bin", "rb").read() == data[10:3010])
os.lseek(src, 0, 0)
n = os.sendfile(out, src, None, len(data))
print("file_pos count", n, "pos", os.lseek(src, 0, 1),
      "size", os.fstat(out).st_size)
os.close(out)

# The file-size limit: cut to it, then EFBIG (SIGXFSZ ignored).
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
old = resource.getrlimit(resource.RLIMIT_FSIZE)
out = mkfile("lim.bin", b"")
resource.setrlimit(resource.RLIMIT_FSIZE, (3000, old[1]))
os.lseek(out, 2000, 0)
t("fsize_cut", lambda: print("fsize_cut count",
                             os.sendfile(out, src, 0, 4096)))
t("fsize_past", lambda: os.sendfile(out, src, 0, 4096))
resource.setrlimit(resource.RLIMIT_FSIZE, old)
os.close(out)

# Errors, in the kernel's order.
ro = os.open("src.bin", os.O_RDONLY)
wo = os.open("src.bin", os.O_WRONLY)
ap = os.open("ap.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
d = os.open(".", os.O_RDONLY)
r, w = os.pipe()
os.write(w, b"pipe")
a, b = socket.socketpair()
t("in_badfd", lambda: os.sendfile(a.fileno(), 999, 0, 10))
t("in_wronly", lambda: os.sendfile(a.fileno(), wo, 0, 10))
t("in_pipe_off", lambda: os.sendfile(a.fileno(), r, 0, 10))
t("in_pipe", lambda: os.sendfile(a.fileno(), r, None, 10))
t("in_dir", lambda: os.sendfile(a.fileno(), d, None, 10))
t("in_neg", lambda: sysc(40, a.fileno(), ro,
                         ctypes.byref(ctypes.c_longlong(-1)), 10))
t("off_fault", lambda: sysc(40, a.fileno(), ro, ctypes.c_void_p(8), 10))
t("out_badfd", lambda: os.sendfile(999, ro, 0, 10))
t("out_rdonly", lambda: os.sendfile(ro, ro, 0, 10))
t("out_append", lambda: os.sendfile(ap, ro, 0, 10))
t("out_dir", lambda: os.sendfile(d, ro, 0, 10))
t("in_badfd_out_badfd", lambda: os.sendfile(998, 999, 0, 10))
t("out_fault", lambda: sysc(40, a.fileno(), ro, ctypes.c_void_p(8), 0))
L = ctypes.c_long
t("count_sign", lambda: sysc(40, L(a.fileno()), L(ro), None, L(-1)))
t("end_overflows", lambda: sysc(40, L(a.fileno()), L(ro),
  ctypes.byref(ctypes.c_longlong((1 << 63) - 100)), L(1000)))
ev = os.eventfd(0)
t("in_eventfd_off", lambda: os.sendfile(a.fileno(), ev, 0, 10))
t("in_eventfd", lambda: os.sendfile(a.fileno(), ev, None, 10))

# An input opened O_DIRECT: the kernel moves whole pages (a count under
# one: EINVAL; others cut to pages).
try:
    dfd = os.open("src.bin", os.O_RDONLY | os.O_DIRECT)
except OSError:
    dfd = None
for cnt in (4096, 100, 65536, 200000):
    if dfd is None:
        print("odirect", cnt, "unsupported here")
        continue
    c, d = socket.socketpair()
    parts = []
    th = threading.Thread(target=drain, args=(d, parts))
    th.start()
    try:
        print("odirect", cnt, os.sendfile(c.fileno(), dfd, 0, cnt))
    except OSError as e:
        print("odirect", cnt, errno.errorcode[e.errno])
    c.close()
    th.join()
    d.close()
'''

# What a pipe gets: the kernel's sendfile fills it; under corral EINVAL.
PIPE = r'''
r, w = os.pipe()
src = os.open("p.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(src, b"p" * 100)
t("out_pipe", lambda: os.sendfile(w, src, 0, 100))
'''

# After the call, what the reader gets must not change with the file: the
# kernel's socket held the file's page (the reader sees the later write),
# corral's copy did not.
PIN = r'''
import socket
fd = os.open("pin.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, b"A" * 4096)
a, b = socket.socketpair()
n = os.sendfile(a.fileno(), fd, 0, 4096)
os.pwrite(fd, b"B" * 4096, 0)
got = b.recv(8192)
print("pin count", n, "reader", got[:1].decode(), len(got))
'''


@test
def sendfile_answers_as_the_kernel(t):
    """Into sockets (unix and loopback TCP, blocking and not) and files,
    with and without an offset: the counts, the bytes, the offsets and
    file positions after, EAGAIN, EPIPE with its SIGPIPE, the file-size
    limit, and every error in the kernel's order, line for line as
    natively (the build before answered every case EINVAL)."""
    nat, cor, res = parity(t, CASES, name="sendfile", want={
        "big count": "%d same True pos %d" % (256 << 10, 256 << 10),
        "in_pipe": "EINVAL", "off_fault": "EFAULT",
        "out_append": "EINVAL"})
    eq(res.get("status"), "ok", "status")
    eq(res.get("denials") or [], [], "denials")


@test
def sendfile_into_a_pipe_answers_einval(t):
    """A pipe would hold the spliced pages: corral answers EINVAL there,
    with no denial, where the kernel fills the pipe (the documented
    difference; programs fall back to write)."""
    nat_ws = t.path("pipe-native")
    os.makedirs(nat_ws)
    nat = t.native([PY, t.write("pipe-native.py", PRELUDE + PIPE), nat_ws])
    eq(nat.out.decode().split(), ["out_pipe", "ok"], "native (premise)")
    res = in_ws(t, "pipe", PIPE)
    eq(res.get("stdout"), "out_pipe EINVAL\n", "under corral (stderr %s)" %
       _show(res.get("stderr")))
    eq(res.get("denials") or [], [], "denials")


@test
def sendfile_holds_no_page_past_the_call(t):
    """The bytes go through the supervisor's memory: a write to the file
    after the call does not change what the reader gets. Natively it does
    (the socket held the page: the reader sees the later 'B'), which is
    the reference that could pin a folio past a truncate."""
    nat_ws = t.path("pin-native")
    os.makedirs(nat_ws)
    nat = t.native([PY, t.write("pin-native.py", PRELUDE + PIN), nat_ws])
    eq(nat.out.decode(), "pin count 4096 reader B 4096\n",
       "native (premise: the kernel's socket shares the page)")
    res = in_ws(t, "pin", PIN)
    eq(res.get("stdout"), "pin count 4096 reader A 4096\n",
       "under corral (stderr %s)" % _show(res.get("stderr")))
    t.assert_next_run_ok()

BURN = r'''
import time
src = os.open("big.in", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(src, os.urandom(1 << 20) * 32)
out = os.open("big.out", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
end = time.time() + 20
while time.time() < end:
    os.sendfile(out, src, 0, 32 << 20)
    os.lseek(out, 0, 0)
print("not stopped")
'''


@test
def sendfile_copies_count_as_the_runs_cpu(t):
    """The copy a sendfile makes is the kernel's work in corral's time:
    charged to the run's cpu budget, so a program cannot have corral copy
    for it past its budget (the build before: 1212 copies of 32 MiB in
    6 s, the program's own CPU 0.3 s, corral's 4.8 s, `ok` under
    cpu=1s)."""
    res = in_ws(t, "burn", BURN, ["--limit", "cpu=1s", "--limit", "wall=60s"])
    eq((res.get("status"), res.get("limit")), ("limit_exceeded", "cpu"),
       "the run (stdout %s, usage %s)" % (_show(res.get("stdout")),
                                          _show(res.get("usage"))))
    t.assert_next_run_ok()


HOLD = r"""
import socket, threading, time
f = os.open("hold.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.ftruncate(f, 1 << 30)
def wait_in_sendfile():
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1)
    b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
    os.sendfile(a.fileno(), f, 0, 1 << 30)
for i in range(100):
    threading.Thread(target=wait_in_sendfile, daemon=True).start()
time.sleep(4)
print("not stopped")
"""


@test
def sendfile_waiting_buffers_count_as_memory(t):
    """A sendfile into a socket nobody reads waits in corral with a
    buffer of up to 256 KiB: the run's memory while it waits. 100 such
    waits under memory=16MiB end the run on memory (a probing session
    held 64 MiB in corral so, 250 waits under memory=16MiB, run ok)."""
    res = in_ws(t, "hold", HOLD, ["--limit", "memory=16MiB", "--limit",
                                  "wall=60s"])
    eq((res.get("status"), res.get("limit")), ("limit_exceeded", "memory"),
       "the run (stdout %s, message %s)" % (_show(res.get("stdout")),
                                            _show(res.get("message"))))
    t.assert_next_run_ok()


FSIZE = r"""
import resource
print("own limit above 1 MiB",
      resource.getrlimit(resource.RLIMIT_FSIZE)[0] > (1 << 20))
src = os.open("fs.in", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(src, b"y" * (4 << 20))
out = os.open("fs.out", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
print("sendfile", os.sendfile(out, src, 0, 4 << 20))
"""


@test
def sendfile_into_a_file_keeps_the_programs_size_limit(t):
    """corral performs a sendfile into a file itself: the program's
    RLIMIT_FSIZE applies (it is checked first), not the one corral was
    started with. Started under `ulimit -f 1024` (soft), the program's
    own limit is its disk budget's; a 4 MiB sendfile copies 4 MiB (a
    probing session got a short count, then EFBIG)."""
    def small_fsize():
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, hard))
    res = in_ws(t, "fsize", FSIZE, preexec=small_fsize)
    eq(res.get("stdout"), "own limit above 1 MiB True\nsendfile %d\n" %
       (4 << 20), "the program's answers (stderr %s)" %
       _show(res.get("stderr")))


SPARSE = r"""
src = os.open("sp.in", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.ftruncate(src, 512 << 20)
out = os.open("sp.out", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
done = 0
while done < (512 << 20):
    n = os.sendfile(out, src, None, (512 << 20) - done)
    if n <= 0:
        break
    done += n
print("copied", done)
"""


@test
def sendfile_into_a_file_is_charged_as_it_grows(t):
    """A sendfile into a file makes blocks the walk has not seen: corral
    copies in 8 MiB steps and charges each one's growth at once, as it
    does fallocate's, so a 512 MiB sparse file copied dense under
    disk=1MiB ends the run within one step (a probing session: one 64 MiB
    call before the walk saw it)."""
    res = in_ws(t, "sparse", SPARSE, ["--limit", "disk=1MiB",
                                      "--limit", "wall=60s"])
    eq((res.get("status"), res.get("limit")), ("limit_exceeded", "disk"),
       "the run (stdout %s, message %s)" % (_show(res.get("stdout")),
                                            _show(res.get("message"))))
    used = res["usage"]["disk_bytes"]
    eq(used <= (9 << 20), True,
       "usage.disk_bytes %d: at most one 8 MiB step past 1 MiB" % used)
    t.assert_next_run_ok()


PAST_FSIZE = r"""
import resource, signal, sys
# Python ignores SIGXFSZ from its start: the default action asked for.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN if sys.argv[2:] == ["ignore"]
              else signal.SIG_DFL)
src = os.open("fz.in", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.ftruncate(src, 4 << 20)
hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
resource.setrlimit(resource.RLIMIT_FSIZE, (1000000, hard))
out = os.open("fz.out", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
print("sendfile", os.sendfile(out, src, 0, 4 << 20), flush=True)
"""


@test
def sendfile_past_the_size_limit_raises_sigxfsz_in_the_call(t):
    """A sendfile whose count crosses the program's RLIMIT_FSIZE: the
    kernel writes up to the limit, then its next write at the limit sends
    SIGXFSZ, which kills the program in that call (default action); with
    the signal ignored the call answers the bytes written. corral cut the
    count and answered it, the program died only at its next call (found
    by a probing session)."""
    ws = t.path("fz-native")
    os.makedirs(ws)
    script = t.write("fz.py", PRELUDE + PAST_FSIZE)
    nat = t.native([PY, script, ws])
    eq(nat.code, -25, "natively killed by SIGXFSZ (premise; stdout %r)" %
       nat.out)
    res = in_ws(t, "fz", PAST_FSIZE)
    eq((res.get("status"), res.get("signal"), res.get("stdout")),
       ("program_error", "SIGXFSZ", ""), "under corral (message %s)" %
       _show(res.get("message")))
    nat = t.native([PY, script, t.path("fz-native"), "ignore"])
    eq(nat.out.decode(), "sendfile 1000000\n", "natively, ignored (premise)")
    ign = t.write("fz-ignore.py", PRELUDE + PAST_FSIZE.replace(
        'sys.argv[2:] == ["ignore"]', "True"))
    ws = t.path("fz-ign")
    os.makedirs(ws)
    os.chmod(ws, 0o755)
    r = t.result(t.corral(["run", "--json", "--ro", t.tmp, "-w", ws, "--",
                           PY, ign, "."]))
    eq(r.get("stdout"), "sendfile 1000000\n", "under corral, ignored")
