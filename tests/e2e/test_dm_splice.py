"""splice and tee, performed by the supervisor (tracer/handlers/splice.c).

A pipe buffer spliced from a file keeps a reference to the file's page
(and its whole folio) after the call: memory no budget sees. So corral
answered splice and tee EINVAL in the filter, on which most programs fall
back to read and write; CPython's own test_os failed its three splice
cases, and a program splicing without a fallback failed. Now a file's
bytes are copied into the pipe by the supervisor (nothing lent), and a
pipe's are spliced into a file or another pipe, or teed, by the
supervisor's own call on the program's files; a call the program made
blocking waits for its pipe without holding the supervisor. Each answer
is compared with the kernel's, case by case, natively and under corral,
as in test_dg_errno_parity.py.
"""

import os

from harness import eq, test, _show
from test_dg_errno_parity import parity, PRELUDE, PY
from test_dl_sendfile import in_ws

SPLICE_NR, TEE_NR = 275, 276


def native(t, name, body):
    ws = t.path(name + "-native")
    os.makedirs(ws)
    return t.native([PY, t.write(name + "-native.py", PRELUDE + body), ws])


CASES = r'''
import fcntl, signal
SPLICE, TEE = %d, %d
NB = 2                                   # SPLICE_F_NONBLOCK
L = ctypes.c_long
def spl(fin, pin, fout, pout, n, fl=0):
    return sysc(L(SPLICE), L(fin), pin, L(fout), pout, L(n), L(fl))
def tee(fin, fout, n, fl=0):
    return sysc(L(TEE), L(fin), L(fout), L(n), L(fl))
def off(v):
    return ctypes.byref(ctypes.c_longlong(v))

def mkfile(name, data, flags=os.O_RDWR):
    fd = os.open(name, flags | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, data)
    os.lseek(fd, 0, 0)
    return fd

data = bytes(range(256)) * 16 * 32                  # 128 KiB
src = mkfile("src.bin", data)
signal.signal(signal.SIGPIPE, signal.SIG_IGN)

# A file into a pipe: with an offset (the file's position stays), and
# without (it moves).
r, w = os.pipe()
n = os.splice(src, w, 5000, offset_src=1000)
print("f2p_off count", n, "same", os.read(r, 1 << 17) == data[1000:6000],
      "pos", os.lseek(src, 0, 1))
os.lseek(src, 7, 0)
n = os.splice(src, w, 100)
print("f2p_pos count", n, "same", os.read(r, 1 << 17) == data[7:107],
      "pos", os.lseek(src, 0, 1))
for dev in ("/dev/zero", "/dev/urandom"):    # their offsets do not move
    z = os.open(dev, os.O_RDONLY)
    o = ctypes.c_longlong(100)
    n = spl(z, ctypes.byref(o), w, None, 50)
    print("dev", dev, n, o.value, os.lseek(z, 0, 1), len(os.read(r, 100)))
o = ctypes.c_longlong(40)
n = spl(src, ctypes.byref(o), w, None, 60)
print("f2p_offptr count", n, "moved", o.value, "same",
      os.read(r, 1 << 17) == data[40:100])
# More than the pipe holds: the pipe's size; at the end: 0.
n = os.splice(src, w, 1 << 20, offset_src=0)
print("f2p_big count", n, "same", os.read(r, 1 << 17) == data[:n])
print("f2p_eof count", os.splice(src, w, 10, offset_src=len(data)))
# A memory device into a pipe.
z = os.open("/dev/zero", os.O_RDONLY)
print("zero count", os.splice(z, w, 3000), "zeros",
      os.read(r, 1 << 17) == bytes(3000))

# A pipe into a file: with an offset and without.
out = mkfile("out.bin", b"")
os.write(w, data[:3000])
n = os.splice(r, out, 3000, offset_dst=500)
print("p2f_off count", n, "pos", os.lseek(out, 0, 1), "same",
      open("out.bin", "rb").read()[500:] == data[:3000])
os.write(w, data[:2000])
n = os.splice(r, out, 1 << 20)
print("p2f_pos count", n, "pos", os.lseek(out, 0, 1))
os.write(w, b"abc")
o = ctypes.c_longlong(10)
n = spl(r, None, out, ctypes.byref(o), 100)
print("p2f_offptr count", n, "moved", o.value)
# Into /dev/null.
nul = os.open("/dev/null", os.O_WRONLY)
os.write(w, b"x" * 777)
print("null count", os.splice(r, nul, 1000))

# A pipe into a pipe, and tee (the input keeps its bytes).
r2, w2 = os.pipe()
os.write(w, b"hello pipes")
print("p2p count", os.splice(r, w2, 5), os.read(r2, 100), os.read(r, 100))
os.write(w, b"teed")
print("tee count", tee(r, w2, 100), os.read(r2, 100), os.read(r, 100))

# Would wait: SPLICE_F_NONBLOCK, or the pipe's own O_NONBLOCK.
t("p2f_empty_nb", lambda: os.splice(r, out, 10, flags=NB))
t("p2p_empty_nb", lambda: os.splice(r, w2, 10, flags=NB))
t("tee_empty_nb", lambda: tee(r, w2, 10, NB))
fl = fcntl.fcntl(r, fcntl.F_GETFL)
fcntl.fcntl(r, fcntl.F_SETFL, fl | os.O_NONBLOCK)
t("p2f_empty_onb", lambda: os.splice(r, out, 10))
fcntl.fcntl(r, fcntl.F_SETFL, fl)
fw = fcntl.fcntl(w, fcntl.F_GETFL)
fcntl.fcntl(w, fcntl.F_SETFL, fw | os.O_NONBLOCK)
while True:
    try:
        os.write(w, b"f" * 65536)
    except BlockingIOError:
        break
t("f2p_full_onb", lambda: os.splice(src, w, 10, offset_src=0))
fcntl.fcntl(w, fcntl.F_SETFL, fw)
t("f2p_full_nb", lambda: os.splice(src, w, 10, offset_src=0, flags=NB))
fcntl.fcntl(r, fcntl.F_SETFL, fl | os.O_NONBLOCK)
try:
    while os.read(r, 1 << 17):
        pass
except BlockingIOError:
    pass
fcntl.fcntl(r, fcntl.F_SETFL, fl)

# Ends gone: no writer and empty (0), no reader (EPIPE, SIGPIPE ignored).
r3, w3 = os.pipe()
os.close(w3)
print("p2f_nowriter count", os.splice(r3, out, 10))
print("tee_nowriter count", tee(r3, w2, 10))
r4, w4 = os.pipe()
os.close(r4)
t("f2p_noreader", lambda: os.splice(src, w4, 10, offset_src=0))
os.write(w, b"q")
t("p2p_noreader", lambda: os.splice(r, w4, 10))
os.read(r, 10)

# Errors, in the kernel's order.
wo = os.open("src.bin", os.O_WRONLY)
ro = os.open("src.bin", os.O_RDONLY)
ap = os.open("ap.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
d = os.open(".", os.O_RDONLY)
a, b = __import__("socket").socketpair()
t("zero_badfd", lambda: spl(999, None, 998, None, 0))
t("flags", lambda: spl(src, None, w, None, 10, 0x10))
t("flags_badfd", lambda: spl(999, None, w, None, 10, 0x10))
t("in_badfd", lambda: spl(999, None, w, None, 10))
t("out_badfd", lambda: spl(src, None, 999, None, 10))
t("in_pipe_off", lambda: spl(r, off(0), out, None, 10))
t("out_pipe_off", lambda: spl(src, None, w, off(0), 10))
t("in_pipe_off_wronly", lambda: spl(r, off(0), ro, None, 10))
t("off_in_fault", lambda: spl(src, ctypes.c_void_p(8), w, None, 10))
t("off_out_fault", lambda: spl(r, None, out, ctypes.c_void_p(8), 10))
t("in_wronly", lambda: spl(wo, None, w, None, 10))
t("out_rdonly", lambda: spl(r, None, ro, None, 10))
t("out_rdend", lambda: spl(src, None, r, None, 10))
t("same_pipe", lambda: spl(r, None, w, None, 10))
t("file_file", lambda: spl(src, None, out, None, 10))
t("out_append", lambda: spl(r, None, ap, None, 10))
t("out_neg", lambda: spl(r, None, out, off(-1), 10))
t("in_neg", lambda: spl(src, off(-1), w, None, 10))
t("in_dir", lambda: spl(d, None, w, None, 10))
t("in_overflow", lambda: spl(src, off((1 << 63) - 5), w, None, 10))
t("tee_flags", lambda: tee(r, w2, 10, 0x10))
t("tee_zero_badfd", lambda: tee(999, 998, 0))
t("tee_badfd", lambda: tee(999, w2, 10))
t("tee_file", lambda: tee(src, w2, 10))
t("tee_same", lambda: tee(r, w, 10))
t("tee_rdonly_out", lambda: tee(r, r2, 10))
''' % (SPLICE_NR, TEE_NR)


@test
def splice_answers_as_the_kernel(t):
    """File to pipe, pipe to file, pipe to pipe and tee, with offsets given
    and not: the counts, the bytes, the offsets and positions after, the
    waits that would block (EAGAIN), ends gone (0, EPIPE), and every error
    in the kernel's order, line for line as natively (the build before
    answered every splice and tee EINVAL)."""
    nat, cor, res = parity(t, CASES, name="splice", want={
        "f2p_off count": "5000 same True pos 0",
        "p2p count": "5 b'hello' b' pipes'",
        "tee count": "4 b'teed' b'teed'",
        "f2p_full_onb": "EAGAIN", "p2f_empty_nb": "EAGAIN",
        "f2p_noreader": "EPIPE", "same_pipe": "EINVAL",
        "in_pipe_off": "ESPIPE", "flags": "EINVAL"})
    eq(res.get("status"), "ok", "status")
    eq(res.get("denials") or [], [], "denials")


# After the call, what the pipe holds must not change with the file: the
# kernel's pipe held the file's page (the reader sees the later write),
# corral's copy did not.
LEND = r'''
fd = os.open("lend.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, b"A" * 4096)
r, w = os.pipe()
n = os.splice(fd, w, 4096, offset_src=0)
os.pwrite(fd, b"B" * 4096, 0)
got = os.read(r, 8192)
print("lend count", n, "reader", got[:1].decode(), len(got))
'''


@test
def splice_lends_no_page_to_a_pipe(t):
    """The file's bytes are copied into the pipe: a write to the file after
    the call does not change what the reader gets. Natively it does (the
    pipe held the page), which is the reference that could pin a folio
    past a truncate."""
    nat = native(t, "lend", LEND)
    eq(nat.out.decode(), "lend count 4096 reader B 4096\n",
       "native (premise: the kernel's pipe shares the page)")
    res = in_ws(t, "lend", LEND)
    eq(res.get("stdout"), "lend count 4096 reader A 4096\n",
       "under corral (stderr %s)" % _show(res.get("stderr")))
    t.assert_next_run_ok()


# Blocking calls wait for their pipe: for bytes a child writes later, for
# room a child makes later; a signal with a handler ends the wait with
# EINTR (no SA_RESTART) or restarts it (SA_RESTART); a copy of a 3 MiB
# file through a pipe between two processes gives the same bytes.
WAITS = r'''
import hashlib, signal, time
def later(fn, delay=0.3):
    pid = os.fork()
    if pid == 0:
        time.sleep(delay)
        fn()
        os._exit(0)
    return pid

out = os.open("out.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
r, w = os.pipe()
pid = later(lambda: os.write(w, b"late bytes"))
print("p2f_waits", os.splice(r, out, 100))
os.waitpid(pid, 0)

# A full pipe: a file's bytes wait for room.
src = os.open("src.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(src, b"S" * 4096)
os.set_blocking(w, False)
while True:
    try:
        os.write(w, b"f" * 4096)
    except BlockingIOError:
        break
os.set_blocking(w, True)
pid = later(lambda: os.read(r, 1 << 20))
print("f2p_waits", os.splice(src, w, 4096, offset_src=0))
os.waitpid(pid, 0)
os.set_blocking(r, False)
try:
    while os.read(r, 1 << 20):
        pass
except BlockingIOError:
    pass
os.set_blocking(r, True)

# A signal ends the wait: EINTR without SA_RESTART.
hits = []
signal.signal(signal.SIGALRM, lambda *a: hits.append(1))
signal.siginterrupt(signal.SIGALRM, True)
signal.setitimer(signal.ITIMER_REAL, 0.3)
L = ctypes.c_long
try:
    sysc(L(275), L(r), None, L(out), None, L(10), L(0))
    print("eintr none")
except OSError as e:
    print("eintr", errno.errorcode[e.errno], len(hits))
# With SA_RESTART the call goes on, and gets the bytes written later.
signal.siginterrupt(signal.SIGALRM, False)
signal.setitimer(signal.ITIMER_REAL, 0.2)
pid = later(lambda: os.write(w, b"after restart"), 0.6)
print("restart", sysc(L(275), L(r), None, L(out), None, L(100), L(0)),
      len(hits))
os.waitpid(pid, 0)

# A reader killed while it waits lets its pipe go: the writer meets EPIPE.
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
r6, w6 = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w6)
    os.splice(r6, out, 10)
    os._exit(0)
os.close(r6)
time.sleep(0.3)
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
try:
    print("reader_killed", os.write(w6, b"x"))
except OSError as e:
    print("reader_killed", errno.errorcode[e.errno])

# A 3 MiB copy through a pipe: a child splices the file in, the parent
# splices the pipe out.
blob = os.urandom(3 << 20)
big = os.open("big.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(big, blob)
os.lseek(big, 0, 0)
r5, w5 = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r5)
    while os.splice(big, w5, 1 << 16):
        pass
    os._exit(0)
os.close(w5)
cp = os.open("copy.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
while os.splice(r5, cp, 1 << 16):
    pass
os.waitpid(pid, 0)
print("copy", hashlib.sha256(open("copy.bin", "rb").read()).digest() ==
      hashlib.sha256(blob).digest())
'''


@test
def splice_blocking_calls_wait_and_take_signals(t):
    """A blocking splice waits for its pipe (bytes written later, room made
    later), a signal with a handler ends it with EINTR or restarts it as
    SA_RESTART says, a reader killed while it waits lets its pipe go (the
    writer meets EPIPE once the reader is reaped), and a 3 MiB copy
    through a pipe between two processes gives the same bytes: line for
    line as natively."""
    nat, cor, res = parity(t, WAITS, name="splicewait", want={
        "p2f_waits": "10", "f2p_waits": "4096", "eintr": "EINTR 1",
        "restart": "13 2", "copy": "True", "reader_killed": "EPIPE"})
    eq(res.get("status"), "ok", "status")


# A program that waits in a splice nobody will answer is ended by the wall
# limit, and nothing is left running.
STUCK = r'''
r, w = os.pipe()
out = os.open("o.bin", os.O_RDWR | os.O_CREAT, 0o600)
print("waiting", flush=True)
os.splice(r, out, 10)
print("never")
'''


@test
def splice_waiting_forever_ends_with_the_wall_limit(t):
    """A splice from a pipe that never gets bytes holds the run only until
    its wall limit (status limit_exceeded, limit wall); the next run is
    fine."""
    res = in_ws(t, "stuck", STUCK, extra=["--limit", "wall=2s"])
    eq((res.get("status"), res.get("limit")), ("limit_exceeded", "wall"),
       "ending (result %s)" % _show(res))
    eq(res.get("stdout"), "waiting\n", "stdout")
    t.assert_next_run_ok()


# The leader waits in a splice; another thread execs: the old leader dies
# in the exec, and with it its wait and corral's copy of the output pipe.
# An observer reading that pipe sees its end of file at once, not when the
# input's last writer goes (8 s later).
EXECWAIT = r'''
import threading, time
if sys.argv[2:] == ["after"]:
    time.sleep(2)
    sys.exit(0)
a_r, a_w = os.pipe2(os.O_CLOEXEC)
b_r, b_w = os.pipe2(os.O_CLOEXEC)
if os.fork() == 0:                       # holds A's writer for 8 s
    os.close(b_w)
    time.sleep(8)
    os._exit(0)
if os.fork() == 0:                       # reads B to its end
    os.close(b_w)
    os.close(a_w)
    t0 = time.monotonic()
    os.read(b_r, 10)
    print("eof after", "under 4 s" if time.monotonic() - t0 < 4 else
          "%.1f s" % (time.monotonic() - t0), flush=True)
    os._exit(0)
os.close(a_w)
os.close(b_r)
def execer():
    time.sleep(0.5)
    os.execv(sys.executable, [sys.executable, sys.argv[0], ".", "after"])
threading.Thread(target=execer).start()
os.splice(a_r, b_w, 10)
'''


@test
def splice_waiting_leader_ends_with_an_exec_of_another_thread(t):
    """A leader waiting in a splice dies when another thread execs, and
    its wait goes with it: a reader of the output pipe sees its end of
    file at once (natively 0.5 s), where an earlier build kept corral's
    copy until the input's last writer went 8 s later. Found by a probing
    session."""
    res = in_ws(t, "execwait", EXECWAIT, extra=["--limit", "wall=30s"])
    eq(res.get("stdout"), "eof after under 4 s\n",
       "observer (stderr %s)" % _show(res.get("stderr")))
