"""Zero-copy doors of the memory budget. A pipe buffer or a socket's skb
keeps a reference to the page it was spliced from, and so to its whole
folio: vmsplice of one byte of a 2 MiB THP into a pipe, then munmap, left
2 MiB held by the pipe, in no process's RSS (32 pipes held 1 GiB under
memory=32MiB, run `ok`); splice of one byte of a large page-cache folio,
then ftruncate, the same. sendfile goes through splice, and SO_ZEROCOPY
lets send(MSG_ZEROCOPY) queue skbs on the program's pages.

vmsplice now answers EINVAL in the filter (no denial, as clone3), the
errno on which programs fall back to write; splice and tee answered
EINVAL too, and are now performed by the supervisor, which copies a
file's bytes into a pipe instead of lending its pages (test_dm_splice.py);
setsockopt(SO_ZEROCOPY) answers ENOPROTOOPT (a kernel without it),
recorded as a net denial. sendfile answered EINVAL too; it is now
performed by the supervisor through its own memory (test_dl_sendfile.py).
Probe: tests/progs/zerocopy.c. On the build before the fix every call
answered `ok` and the thp probe pinned 32 MiB.
"""

import os

from harness import eq, true, test, _show, answers, denials_of, \
    check_result_shape

PY = "/usr/bin/python3"


def probe(t, args, limits=("wall=30s",)):
    opts = ["run", "--json"]
    for lim in limits:
        opts += ["--limit", lim]
    run = t.corral(opts + t.prog_roots() + ["--", t.prog("zerocopy")] +
                   [str(a) for a in args], timeout=90)
    r = t.result(run)
    check_result_shape(r)
    eq(r.get("status"), "ok", "status (message %r, stderr %s)" % (
        r.get("message"), _show(r.get("stderr"))))
    return r


@test
def di_zerocopy_calls_copy_or_answer_einval(t):
    """vmsplice on valid descriptors answers EINVAL, with no denial
    (answered in the filter, like clone3); splice, tee and sendfile work
    (the supervisor copies); setsockopt(SO_ZEROCOPY) answers ENOPROTOOPT
    and is recorded (layer net); copy_file_range still copies."""
    r = probe(t, ["calls"])
    a = answers(r.get("stdout"))
    eq({k: a.get(k) for k in ("vmsplice", "splice", "tee", "sendfile")},
       {"vmsplice": "EINVAL", "splice": "ok", "tee": "ok",
        "sendfile": "ok"},
       "zero-copy calls (stdout %s)" % _show(r.get("stdout")))
    eq(a.get("so_zerocopy"), "ENOPROTOOPT", "setsockopt(SO_ZEROCOPY)")
    eq(a.get("copy_file_range"), "ok", "copy_file_range")
    for call in ("vmsplice", "splice", "tee", "sendfile"):
        eq(denials_of(r, call), [], "denials of %s" % call)
    true(denials_of(r, "setsockopt", "net"),
         "SO_ZEROCOPY recorded: %s" % _show(r.get("denials")))


@test
def di_zerocopy_thp_pipes_hold_nothing(t):
    """The pinning pattern of the finding, 32 pipes of 16 slots under
    memory=32MiB: the first vmsplice fails, nothing is pinned (before
    the fix: 1024 MiB held, run ok)."""
    r = probe(t, ["thp", 32], limits=("wall=60s", "memory=32MiB"))
    a = answers(r.get("stdout"))
    eq(a.get("vmsplice"), "EINVAL", "first vmsplice (stdout %s)" %
       _show(r.get("stdout")))
    eq(a.get("pinned_mib"), "0", "MiB pinned in pipes")


GOODWORK = r'''
import hashlib, os, shutil, socket, subprocess, sys, time, urllib.request
os.chdir(sys.argv[1])
data = os.urandom(3 << 20) + b"tail"
want = hashlib.sha256(data).hexdigest()
with open("src.bin", "wb") as f:
    f.write(data)
def check(name, got):
    print(name, "ok" if hashlib.sha256(got).hexdigest() == want else
          "WRONG %d bytes" % len(got))
# shutil between files (sendfile or copy_file_range first, then read/write)
shutil.copyfile("src.bin", "copy1.bin")
check("copyfile", open("copy1.bin", "rb").read())
with open("src.bin", "rb") as a, open("copy2.bin", "wb") as b:
    shutil.copyfileobj(a, b)
check("copyfileobj", open("copy2.bin", "rb").read())
# socket.sendfile between two processes of the run: falls back to send
l = socket.create_server(("127.0.0.1", 0))
port = l.getsockname()[1]
pid = os.fork()
if pid == 0:
    c = socket.create_connection(("127.0.0.1", port))
    with open("src.bin", "rb") as f:
        c.sendfile(f)
    c.close()
    os._exit(0)
s, _ = l.accept()
got = b""
while True:
    chunk = s.recv(1 << 16)
    if not chunk:
        break
    got += chunk
os.waitpid(pid, 0)
check("socket.sendfile", got)
# python3 -m http.server on loopback, fetched by a client of the run
srv = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0",
                        "--bind", "127.0.0.1"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
line = srv.stdout.readline().decode()
hport = int(line.split(" port ")[1].split()[0])
r = urllib.request.urlopen("http://127.0.0.1:%d/src.bin" % hport, timeout=20)
check("http.server", r.read())
srv.terminate()
srv.wait()
'''


@test
def di_zerocopy_goodwork_falls_back(t):
    """What used the zero-copy calls still works, with the right bytes:
    shutil.copyfile and copyfileobj between files, socket.sendfile
    between two processes of the run, and `python3 -m http.server` on
    127.0.0.1 serving a 3 MiB file to a client of the run."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    path = t.write("goodwork.py", GOODWORK)
    run = t.corral(["run", "--json", "--ro", t.tmp, "-w", ws,
                    "--limit", "wall=60s", "--", PY, path, ws], timeout=90)
    r = t.result(run)
    check_result_shape(r)
    eq(run.code, 0, "exit status (stderr %s)" % _show(r.get("stderr")))
    a = answers(r.get("stdout"))
    eq(a, {k: "ok" for k in ("copyfile", "copyfileobj", "socket.sendfile",
                             "http.server")},
       "answers (stdout %s)" % _show(r.get("stdout")))
    eq(r.get("status"), "ok", "status")
