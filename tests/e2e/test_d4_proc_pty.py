"""/proc lists the run's own processes, and the run may have ptys of its own.
ps, top, pgrep see the run only; a process outside it is absent from every
listing and its /proc entry is ENOENT, however it is named. /dev/ptmx gives a
pty; /dev/pts/N opens only for a pty the run holds; another terminal of the
same user is absent and the attempt recorded.
"""

import os
import socket
import subprocess
import threading

from harness import contains, eq, not_contains, true, test, metadata_fast
from test_d1_fs_goodwork import _ok
from test_d0_fs_attacks import FsFix, want_denial

TIOCGPTPEER = 0x5441


def _outsider(t):
    """A process of the test's own uid outside the run, until killed."""
    p = subprocess.Popen(["sleep", "300", t.marker],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    return p


def _stop(p):
    p.kill()
    p.wait()


def _numbers(line):
    return sorted(int(w) for w in line.split() if w.isdigit())


@test
def proc_ps_ef_run_only(t):
    fx = FsFix(t)
    out = _outsider(t)
    try:
        # The sleep exists before ps runs: the shell's fork returns only
        # after the supervisor learned the child (no timing involved).
        # The sleep exists before ps runs: the shell's fork returns only
        # after the supervisor learned the child, and a finished child is
        # gone from the table before the shell's wait returns (no timing).
        run = fx.sh("sleep 30 & echo \"ids $$ $!\"; "
                    "ls /proc > l.txt; ps -e -o pid= > p.txt; "
                    "ps -ef > ef.txt; "
                    "echo ls $(grep -E '^[0-9]+$' l.txt); "
                    "echo ps $(cat p.txt); "
                    "sed 1d ef.txt | awk '{print \"ef\", $2, $8}'; "
                    "cat /proc/%d/stat; echo rc=$?; "
                    "ls -d /proc/%d; echo rc=$?; "
                    "kill $!; wait" % (out.pid, out.pid))
        r = _ok(fx, run, "ps -ef")
        lines = r.get("stdout").splitlines()
        ids = [int(w) for w in lines[0].split()[1:]]
        listed = _numbers(lines[1][3:])
        pss = _numbers(lines[2][3:])
        ef = [l.split() for l in lines if l.startswith("ef ")]
        true(out.pid not in listed, "outside pid %d in the /proc listing %r"
             % (out.pid, listed))
        true(out.pid not in pss, "outside pid %d in ps -e %r" % (out.pid, pss))
        true(all(int(e[1]) != out.pid for e in ef), "outside pid in ps -ef")
        # Exactly the run: the shell, its sleep, and the lister itself.
        for what, got in (("ls /proc", listed), ("ps -e", pss),
                          ("ps -ef", sorted(int(e[1]) for e in ef))):
            eq(len(got), 3, "%s: entries %r" % (what, got))
            for i in ids:
                true(i in got, "%s: run pid %d missing from %r" % (what, i, got))
        true(len(os.listdir("/proc")) > 10, "the host has more processes")
        eq(sorted(e[2] for e in ef), ["ps", "sh", "sleep"], "ps -ef commands")
        # ls -d is a stat: on the fast path (Landlock) the kernel's, which
        # sees that the pid exists (the documented trade-off); its contents
        # stay refused either way.
        if metadata_fast(r):
            eq(lines[-3:], ["rc=1", "/proc/%d" % out.pid, "rc=0"],
               "cat and ls of /proc/<outside> (fast path)")
        else:
            eq(lines[-2:], ["rc=1", "rc=2"], "cat and ls of /proc/<outside>")
        contains(r.get("stderr"), "/proc/%d/stat: No such file or directory"
                 % out.pid, "stderr")
        want_denial(r, layers=("proc",), target_prefix="/proc/%d" % out.pid,
                    what="/proc/<outside pid>")
        fx.check()
    finally:
        _stop(out)


@test
def proc_other_pid_every_way(t):
    """A pid outside the run, named every way a program could: absent."""
    fx = FsFix(t)
    out = _outsider(t)
    try:
        code = (
            "import os, errno\n"
            "N = %d\n"
            "def tryit(what, f):\n"
            "    try:\n"
            "        f(); print(what, 'OPEN')\n"
            "    except OSError as e:\n"
            "        print(what, errno.errorcode[e.errno])\n"
            "d = os.open('/proc', os.O_RDONLY | os.O_DIRECTORY)\n"
            "tryit('dirfd', lambda: os.open('%%d/status' %% N, os.O_RDONLY, dir_fd=d))\n"
            "tryit('dirfd-dir', lambda: os.open(str(N), os.O_RDONLY, dir_fd=d))\n"
            "me = os.getpid()\n"
            "tryit('dotdot', lambda: os.open('/proc/%%d/../%%d/cmdline' %% (me, N), os.O_RDONLY))\n"
            "tryit('self-dotdot', lambda: os.open('/proc/self/../%%d/environ' %% N, os.O_RDONLY))\n"
            "tryit('root', lambda: os.open('/proc/self/root/proc/%%d/stat' %% N, os.O_RDONLY))\n"
            "tryit('task', lambda: os.open('/proc/%%d/task/%%d/stat' %% (me, N), os.O_RDONLY))\n"
            "tryit('stat', lambda: os.stat('/proc/%%d' %% N))\n"
            "pd = os.open('/proc/%%d' %% me, os.O_RDONLY | os.O_DIRECTORY)\n"
            "tryit('pid-dotdot', lambda: os.open('../%%d/stat' %% N, os.O_RDONLY, dir_fd=pd))\n"
            "os.symlink('/proc/%%d' %% N, 'ln')\n"
            "tryit('link', lambda: os.open('ln/stat', os.O_RDONLY))\n"
            "print(str(N) in os.listdir('/proc'), str(me) in os.listdir('/proc'))\n"
            % out.pid)
        r = _ok(fx, fx.run(["python3", "-c", code]), "other pid")
        # The stat is the kernel's on the fast path (the documented
        # trade-off: the pid's existence shows); every open stays refused.
        eq(r.get("stdout"), "dirfd ENOENT\ndirfd-dir ENOENT\ndotdot ENOENT\n"
           "self-dotdot ENOENT\nroot ENOENT\ntask ENOENT\nstat %s\n"
           "pid-dotdot ENOENT\nlink ENOENT\nFalse True\n" %
           ("OPEN" if metadata_fast(r) else "ENOENT"), "stdout")
        want_denial(r, layers=("proc",), target_prefix="/proc/%d" % out.pid,
                    what="/proc/<outside pid>")
        fx.check()
    finally:
        _stop(out)


@test
def proc_task_lists_threads(t):
    """/proc/<pid>/task of a run process lists its threads, all of them."""
    fx = FsFix(t)
    code = ("import os, threading\n"
            "ev = threading.Event(); ids = []\n"
            "def f():\n"
            "    ids.append(threading.get_native_id()); ev.wait()\n"
            "ts = [threading.Thread(target=f) for _ in range(5)]\n"
            "[x.start() for x in ts]\n"
            "while len(ids) < 5: pass\n"
            "want = sorted(ids + [os.getpid()])\n"
            "try:\n"
            "    got = sorted(int(x) for x in os.listdir('/proc/%d/task' % os.getpid()))\n"
            "    print(got == want, len(got))\n"
            "    print(sorted(int(x) for x in os.listdir('/proc/self/task')) == want)\n"
            "    print([x for x in os.listdir('/proc') if x.isdigit()] == [str(os.getpid())])\n"
            "finally:\n"
            "    ev.set(); [x.join() for x in ts]\n")
    r = _ok(fx, fx.run(["python3", "-c", code]), "threads")
    eq(r.get("stdout"), "True 6\nTrue\nTrue\n", "stdout")
    fx.check()


@test
def proc_ps_p_self(t):
    fx = FsFix(t)
    run = fx.sh("ps -p $$ -o pid=,comm= | tr -s ' ' | sed 's/^ //'; "
                "echo \"me $$\"; ps -p $$ >/dev/null; echo rc=$?; "
                "ps aux | awk 'NR > 1 && $2 == '$$' {print \"aux\", $11}'")
    r = _ok(fx, run, "ps -p $$")
    lines = r.get("stdout").splitlines()
    me = lines[1].split()[1]
    eq(lines, ["%s sh" % me, "me %s" % me, "rc=0", "aux sh"], "stdout")
    fx.check()


@test
def proc_top_pgrep_pidof(t):
    fx = FsFix(t)
    run = fx.sh("top -b -n1 >top.out; echo top=$?; grep -c '^Tasks:' top.out; "
                "sleep 30 & s=$!; "
                "test \"$(pgrep -x sleep)\" = \"$s\" && echo pgrep-ok; "
                "test \"$(pidof sleep)\" = \"$s\" && echo pidof-ok; "
                "pgrep -x nosuchprogram; echo pgrep=$?; "
                "kill $s; wait")
    r = _ok(fx, run, "top, pgrep, pidof")
    eq(r.get("stdout"), "top=0\n1\npgrep-ok\npidof-ok\npgrep=1\n", "stdout")
    fx.check()


# getdents64/getdents by hand: any buffer size, many processes.
_DENTS = r"""
import ctypes, errno, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def names(path, count, nr):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    buf = ctypes.create_string_buffer(max(count, 1))
    got, calls = [], 0
    while True:
        n = libc.syscall(nr, fd, buf, count)
        if n < 0:
            os.close(fd)
            return errno.errorcode[ctypes.get_errno()], calls
        if n == 0:
            break
        calls += 1
        raw, off = buf.raw[:n], 0
        while off < n:
            reclen = int.from_bytes(raw[off + 16:off + 18], 'little')
            start = off + (19 if nr == 217 else 18)
            got.append(raw[start:raw.index(b'\0', start)].decode())
            off += reclen
    again = libc.syscall(nr, fd, buf, count)
    os.close(fd)
    return got, (calls, again)
kids = []
for _ in range(int(sys.argv[1])):
    k = os.fork()
    if k == 0:
        signal.pause(); os._exit(0)
    kids.append(k)
for i in range(60):
    open('f%02d' % i, 'w').close()
ref = sorted(os.listdir('/proc'))
pids = [str(k) for k in kids] + [str(os.getpid())]
print('kids', all(p in ref for p in pids))
numeric = [x for x in ref if x.isdigit()]
print('only', sorted(numeric) == sorted(pids + [x for x in numeric if x not in pids and int(x) > os.getpid()]))
for nr in (217, 78):
    for count in (32, 40, 64, 100, 4096):
        got, (calls, again) = names('/proc', count, nr)
        print(nr, count, sorted(got) == sorted(ref + ['.', '..']),
              len(got) == len(set(got)), again, calls > 1 if count < 100 else True)
    for count in (0, 10, 23):
        print(nr, count, names('/proc', count, nr)[0])
    got, _ = names('.', 40, nr)
    print(nr, 'plain', sorted(x for x in got if x not in ('.', '..')) == sorted(os.listdir('.')))
for k in kids:
    os.kill(k, 9); os.waitpid(k, 0)
"""


@test
def proc_getdents_buffers(t):
    fx = FsFix(t)
    with open(fx.wsp("dents.py"), "w") as f:
        f.write(_DENTS)
    r = _ok(fx, fx.run(["python3", "dents.py", "20"]), "getdents")
    want = ["kids True", "only True"]
    for nr in (217, 78):
        for count in (32, 40, 64, 100, 4096):
            want.append("%d %d True True 0 True" % (nr, count))
        for count in (0, 10, 23):
            want.append("%d %d EINVAL" % (nr, count))
        want.append("%d plain True" % nr)
    eq(r.get("stdout").splitlines(), want, "stdout")
    fx.check()


_PTY = r"""
import os, fcntl, termios, errno
m, s = os.openpty()
name = os.ttyname(s)
print(name.startswith('/dev/pts/'), os.ttyname(m) if False else 'm')
os.write(s, b'up\n')
print(os.read(m, 100))
os.write(m, b'down\n')
print(os.read(s, 100))
again = os.open(name, os.O_RDWR | os.O_NOCTTY)
print(os.ttyname(again) == name, os.stat(name).st_rdev == os.fstat(s).st_rdev)
print(sorted(os.listdir('/dev/pts')) == sorted(['ptmx', name[9:]]))
p = fcntl.ioctl(m, 0x5441, os.O_RDWR | os.O_NOCTTY)
print(os.ttyname(p) == name)
# Metadata by path, as natively: on an fd corral checks is still this
# pty (a number reused meanwhile is refused; it was refused always).
try:
    os.chmod(name, 0o620); print('chmod done', oct(os.stat(name).st_mode & 0o777))
except OSError as e:
    print('chmod', e.errno)
pid = os.fork()
if pid == 0:
    try:
        os.open('/dev/tty', os.O_RDWR)
        os._exit(1)
    except OSError as e:
        if e.errno != errno.ENXIO:
            os._exit(2)
    os.setsid()
    fcntl.ioctl(s, termios.TIOCSCTTY, 0)
    t = os.open('/dev/tty', os.O_RDWR)
    os.write(t, b'tty\n')
    os._exit(0 if os.ttyname(t) == name else 3)
print(os.waitpid(pid, 0)[1])
# The pty hands data to the master from a kernel worker: what the child
# wrote may come after the echo, in a second read (a loaded machine).
import select
got = b''
while not got.endswith(b'tty\r\n') and select.select([m], [], [], 5)[0]:
    got += os.read(m, 100)
print(got)
"""


@test
def pty_openpty_ttyname(t):
    fx = FsFix(t)
    with open(fx.wsp("pty.py"), "w") as f:
        f.write(_PTY)
    r = _ok(fx, fx.run(["python3", "pty.py"]), "openpty")
    eq(r.get("stdout"), "True m\nb'up\\r\\n'\nb'down\\n'\nTrue True\nTrue\n"
       "True\nchmod done 0o620\n0\nb'down\\r\\ntty\\r\\n'\n", "stdout")
    fx.check()


@test
def pty_script_and_spawn(t):
    fx = FsFix(t)
    r = _ok(fx, fx.run(["script", "-qc", "tty; echo hi", "/dev/null"]),
            "script")
    lines = r.get("stdout").replace("\r", "").splitlines()
    true(lines[0].startswith("/dev/pts/"), "tty in script: %r" % lines)
    eq(lines[1:], ["hi"], "script output")
    r = _ok(fx, fx.run(["python3", "-c", "import pty; "
                        "print(pty.spawn(['sh', '-c', 'tty >/dev/null && "
                        "echo in-pty']))"]), "pty.spawn")
    eq(r.get("stdout"), "in-pty\r\n0\n", "pty.spawn output")
    fx.check()


_PTY_LIST = r"""
import os, pty, sys
# 60 ptys, their masters kept by this process only, beside 4 000
# descriptors (/dev/null); a child (it inherits them, and closes the
# masters) lists /dev/pts, then stats each pty by name.
keep = [os.open('/dev/null', os.O_RDONLY) for _ in range(4000)]
ms, names = [], []
for i in range(60):
    m, s = pty.openpty()
    names.append(os.path.basename(os.ttyname(s)))
    os.close(s)
    ms.append(m)
pid = os.fork()
if pid == 0:
    for m in ms:
        os.close(m)
    listed = set(os.listdir('/dev/pts'))
    print('listed', sum(n in listed for n in names), flush=True)
    print('stat', sum(os.path.exists('/dev/pts/' + n) for n in names),
          flush=True)
    os._exit(0)
print(os.waitpid(pid, 0)[1])
"""


@test
def pty_listing_beside_thousands_of_descriptors(t):
    """Listed, /dev/pts shows the run's ptys whose master a task holds:
    that took a search of every fd table per entry, and once the
    searches of one call were bounded together (a program's 300 tables
    of 19 000 descriptors held the loop for seconds), 60 ptys beside
    2 000 descriptors in two tables spent the share a third of the way:
    20 of 60 listed, each still found by its name (found by a probing
    session). One search now serves every entry of the listing."""
    fx = FsFix(t)
    with open(fx.wsp("ptylist.py"), "w") as f:
        f.write(_PTY_LIST)
    r = _ok(fx, fx.run(["python3", "ptylist.py"]), "listing")
    eq(r.get("stdout"), "listed 60\nstat 60\n0\n", "stdout")
    fx.check()


@test
def pty_foreign_refused(t):
    """A pty allocated outside the run (another terminal of the same user):
    its /dev/pts/N is absent and listed nowhere; its master, handed to the
    run over a unix socket by a process outside, yields no slave."""
    fx = FsFix(t)
    m, s = os.openpty()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(fx.wsp("s"))
    srv.listen(1)

    def give():
        try:
            c, _ = srv.accept()
            socket.send_fds(c, [b"m"], [m])
            c.recv(1)
            c.close()
        except OSError:
            pass
    th = threading.Thread(target=give, daemon=True)
    th.start()
    try:
        name = os.ttyname(s)
        code = (
            "import os, errno, fcntl, socket\n"
            "def tryit(what, f):\n"
            "    try:\n"
            "        f(); print(what, 'OPEN')\n"
            "    except OSError as e:\n"
            "        print(what, errno.errorcode[e.errno])\n"
            "tryit('open', lambda: os.open(%r, os.O_RDWR | os.O_NOCTTY))\n"
            "tryit('stat', lambda: os.stat(%r))\n"
            "os.symlink(%r, 'ln')\n"
            "tryit('link', lambda: os.open('ln', os.O_RDWR | os.O_NOCTTY))\n"
            "print(%r in os.listdir('/dev/pts'))\n"
            "import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "ifd = libc.inotify_init1(0)\n"
            "print('watch', libc.inotify_add_watch(ifd, b'/dev/pts', 0xfff))\n"
            "c = socket.socket(socket.AF_UNIX); c.connect('s')\n"
            "_, fds, _, _ = socket.recv_fds(c, 1, 1)\n"
            "tryit('peer', lambda: fcntl.ioctl(fds[0], 0x5441, os.O_RDWR | os.O_NOCTTY))\n"
            "import struct\n"
            "def idx(fd):\n"
            "    return struct.unpack('I', fcntl.ioctl(fd, 0x80045430, b'0000'))[0]\n"
            "# Reopening a master through its fd link opens /dev/ptmx again:\n"
            "# a new pty of the run's, as the kernel does, never the same one.\n"
            "nm = os.open('/proc/self/fd/%%d' %% fds[0], os.O_RDWR | os.O_NOCTTY)\n"
            "fcntl.ioctl(nm, 0x40045431, b'\\0\\0\\0\\0')\n"
            "print('fdlink', idx(nm) != idx(fds[0]), os.ttyname(fcntl.ioctl(nm, 0x5441, os.O_RDWR | os.O_NOCTTY)) != %r)\n"
            "c.send(b'x')\n"
            % (name, name, name, name[9:], name))
        r = _ok(fx, fx.run(["python3", "-c", code]), "foreign pty")
        # The stat is the kernel's on the fast path (documented trade-off:
        # the terminal's metadata shows); it is never opened.
        eq(r.get("stdout"), "open ENOENT\nstat %s\nlink ENOENT\nFalse\n"
           "watch -1\npeer EPERM\nfdlink True True\n" %
           ("OPEN" if metadata_fast(r) else "ENOENT"), "stdout")
        want_denial(r, layers=("fs",), targets=(name,), syscalls=("openat",),
                    what="open of a foreign /dev/pts/N")
        want_denial(r, layers=("fs",), targets=(name,), syscalls=("ioctl",),
                    what="TIOCGPTPEER on a master from outside")
        fx.check()
    finally:
        srv.close()
        th.join(5)
        os.close(m)
        os.close(s)


@test
def pty_held_at_once_capped(t):
    """ptys are a host-wide resource (kernel.pty.max): a run holds at most
    64 at once (ENOSPC, as at the kernel's limit, and a denial); one closed
    gives one back."""
    fx = FsFix(t)
    code = ("import os, errno\n"
            "ps = []\n"
            "try:\n"
            "    while len(ps) < 100: ps.append(os.openpty())\n"
            "except OSError as e: print(len(ps), errno.errorcode[e.errno])\n"
            "m, s = ps.pop(); os.close(m); os.close(s)\n"
            "ps.append(os.openpty()); print('again')\n")
    r = _ok(fx, fx.run(["python3", "-c", code]), "pty cap")
    eq(r.get("stdout"), "64 ENOSPC\nagain\n", "stdout")
    want_denial(r, layers=("fs",), targets=("/dev/ptmx", "/dev/pts/ptmx"),
                syscalls=("openat",), what="the 65th pty")
    fx.check()


PTY_HIDDEN = r'''
import array, errno, os, select, socket, threading
def fill():
    fds = []
    try:
        while len(fds) < 100:
            fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
    except OSError as e:
        return fds, errno.errorcode[e.errno]
    return fds, "none"
def closeall(fds):
    for f in fds:
        os.close(f)
# Masters in flight: sent over a socketpair, never received, fds closed.
a, b = socket.socketpair()
fds, why = fill()
print("flight", len(fds), why)
for i in range(0, len(fds), 16):
    a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                        array.array("i", fds[i:i + 16]))])
closeall(fds)
fds, why = fill()
print("while in flight", len(fds), why)
closeall(fds)
a.close(); b.close()
fds, why = fill()
print("given back", len(fds), why)
closeall(fds)
# Slaves kept, masters closed: a slave alone keeps its pty.
ps = []
try:
    while len(ps) < 100:
        ps.append(os.openpty())
except OSError as e:
    print("pairs", len(ps), errno.errorcode[e.errno])
for m, sl in ps:
    os.close(m)
fds, why = fill()
print("slaves kept", len(fds), why)
closeall(fds)
closeall([sl for m, sl in ps])
# Masters held by a thread blocked in poll(), fds closed.
fds, why = fill()
th = threading.Thread(target=select.poll().poll, args=(3000,))
pl = select.poll()
for f in fds:
    pl.register(f, 0)
th = threading.Thread(target=pl.poll, args=(3000,))
th.start()
import time
time.sleep(0.3)
closeall(fds)
fds, why = fill()
print("held by poll", len(fds), why)
closeall(fds)
th.join()
fds, why = fill()
print("after poll", len(fds), why)
'''


@test(supervisor_only=True)
def pty_cap_counts_ptys_held_without_a_descriptor(t):
    """The 64-pty cap counted the masters fd tables show: masters sent in
    flight over a unix socket and closed, masters held by a thread blocked
    in poll() after their fds were closed, and slaves kept after their
    masters were closed all keep their pty allocated, and a run held 192
    of the host's ptys (kernel.pty.max is shared by every user). Each pty
    file corral opens is followed to its end now; the cap holds in each
    case, and ptys freed are given back."""
    fx = FsFix(t)
    r = _ok(fx, fx.run(["python3", "-c", PTY_HIDDEN]), "hidden ptys")
    eq(r.get("stdout"),
       "flight 64 ENOSPC\nwhile in flight 0 ENOSPC\ngiven back 64 ENOSPC\n"
       "pairs 64 ENOSPC\nslaves kept 0 ENOSPC\n"
       "held by poll 0 ENOSPC\nafter poll 64 ENOSPC\n", "stdout")
    fx.check()


@test
def pty_broad_root_keeps_terminals_out(t):
    """--ro / grants reading every file, but not the user's terminals: the
    /dev/pts rules answer for themselves, as /proc's do."""
    fx = FsFix(t)
    m, s = os.openpty()
    try:
        name = os.ttyname(s)
        code = ("import os, errno\n"
                "for f in (os.R_OK, os.W_OK):\n"
                "    print(os.access(%r, f))\n"
                "try:\n"
                "    os.open(%r, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)\n"
                "    print('OPEN')\n"
                "except OSError as e: print(errno.errorcode[e.errno])\n"
                "print(%r in os.listdir('/dev/pts'))\n" % (name, name, name[9:]))
        r = _ok(fx, fx.run(["python3", "-c", code], opts=["--ro", "/"]),
                "--ro / and a foreign pty")
        # access() is the kernel's on the fast path: it answers the file
        # modes (the user's own terminal: True), not corral's rules -- the
        # documented trade-off; the open itself stays refused.
        acc = "True\nTrue\n" if metadata_fast(r) else "False\nFalse\n"
        eq(r.get("stdout"), acc + "ENOENT\nFalse\n", "stdout")
        want_denial(r, layers=("fs",), targets=(name,), what="/dev/pts/N")
        fx.check()
    finally:
        os.close(m)
        os.close(s)


@test
def proc_caller_stdin_pipe_is_not_written(t):
    """The caller's stdin pipe, reopened through /proc/self/fd/0, opened
    for writing: the run put lines into the caller's data (a
    `producer | while read x; do corral run ...; done` loop read them as
    its own). Now the caller's pipe reopens read-only; other pipes of the
    run keep the kernel's behaviour."""
    code = (
        "import errno, os\n"
        "try:\n"
        "    fd = os.open('/proc/self/fd/0', os.O_WRONLY)\n"
        "    os.write(fd, b'injected\\n'); os.close(fd); print('opened')\n"
        "except OSError as e:\n"
        "    print('write-open', errno.errorcode[e.errno])\n"
        "r, w = os.pipe()\n"
        "fd = os.open('/proc/self/fd/%d' % r, os.O_WRONLY)\n"
        "os.write(fd, b'own'); print('own pipe', os.read(r, 3))\n"
        "print('stdin', repr(os.read(0, 100)))\n")
    run = t.corral(["run", "--json", "--", "python3", "-c", code],
                   stdin="job-1\n")
    r = t.result(run)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    eq(r.get("stdout"), "write-open EACCES\nown pipe b'own'\n"
       "stdin b'job-1\\n'\n", "stdout")
    t.assert_next_run_ok()


@test
def capture_pipes_are_not_read_back(t):
    """The program's stdout and stderr are corral's capture pipes; one
    reopened read-only through /proc/self/fd/1 let a child drain them:
    of 100 MB written, output_bytes said 26-44 MB and the result kept
    26.7 MB untruncated (found by a probing session). Reopened for
    reading they are refused now; for writing they stay output."""
    code = (
        "import errno, os\n"
        "for name, fd, fl in (('read', 1, os.O_RDONLY),\n"
        "                     ('rdwr', 1, os.O_RDWR),\n"
        "                     ('stderr', 2, os.O_RDONLY)):\n"
        "    try:\n"
        "        os.close(os.open('/proc/self/fd/%d' % fd, fl))\n"
        "        print(name, 'opened', flush=True)\n"
        "    except OSError as e:\n"
        "        print(name, errno.errorcode[e.errno], flush=True)\n"
        "w = os.open('/proc/self/fd/1', os.O_WRONLY)\n"
        "os.write(w, b'written through the reopen\\n')\n")
    run = t.corral(["run", "--json", "--", "python3", "-c", code])
    r = t.result(run)
    want = ("read EACCES\nrdwr EACCES\nstderr EACCES\n"
            "written through the reopen\n")
    eq(r.get("stdout"), want, "stdout (stderr %r)" % r.get("stderr"))
    eq(r["usage"]["output_bytes"], len(want) + len(r.get("stderr", "")),
       "usage.output_bytes")
    t.assert_next_run_ok()


ZOMBIE = r'''
import os, subprocess, time
pid = os.fork()
if pid == 0:
    os._exit(7)
st = None
for _ in range(4000):      # until the child has ended (bounded, no timing)
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()[0]
    except OSError as e:
        st = "err %d" % e.errno
    if st == "Z":
        break
    time.sleep(0.005)
print("stat", st)
print("listed", str(pid) in os.listdir("/proc"))
with open("/proc/%d/status" % pid) as f:
    print("status", [l.split()[1] for l in f if l.startswith("State:")])
print("exists", os.path.exists("/proc/%d/cmdline" % pid))
print("ps", subprocess.run(["ps", "-o", "pid=,s=", "-p", str(pid)],
      capture_output=True, text=True).stdout.split()[1:])
print("kill", os.kill(pid, 0))
_, s = os.waitpid(pid, 0)
print("code", os.WEXITSTATUS(s))
print("after", os.path.exists("/proc/%d" % pid), str(pid) in os.listdir("/proc"))
'''


@test
def proc_zombie_child_shows_as_natively(t):
    """A child of the run that has ended and waits for its parent is
    shown in /proc as the kernel shows it (state Z; ps's <defunct>)
    until the parent collects it, then gone. It was absent from the
    moment the supervisor saw it end (psutil's zombie tests, ps)."""
    fx = FsFix(t)
    want = ("stat Z\nlisted True\nstatus ['Z']\nexists True\nps ['Z']\n"
            "kill None\ncode 7\nafter False False\n")
    nat = fx.native(["python3", "-c", ZOMBIE])
    eq(nat.out.decode(), want, "natively")
    run = fx.run(["python3", "-c", ZOMBIE])
    r = _ok(fx, run, "zombie")
    eq(r.get("stdout"), want, "under corral")
    eq(r.get("denials") or [], [], "denials")
    t.assert_next_run_ok()


ZOMBIE_QUERIES = r'''
import ctypes, os, resource, time
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    os._exit(7)
for _ in range(4000):      # until the child has ended (bounded)
    with open("/proc/%d/stat" % pid) as f:
        if f.read().rsplit(")", 1)[1].split()[0] == "Z":
            break
    time.sleep(0.005)
def t(name, f):
    try:
        print(name, f())
    except OSError as e:
        print(name, "errno", e.errno)
def ioprio():
    r = libc.syscall(252, 1, pid)           # ioprio_get(IOPRIO_WHO_PROCESS)
    if r < 0:
        raise OSError(ctypes.get_errno(), "ioprio_get")
    return r == libc.syscall(252, 1, 0)
t("getpriority", lambda: os.getpriority(os.PRIO_PROCESS, pid))
t("ioprio_get same as mine", ioprio)
t("affinity same as mine", lambda: os.sched_getaffinity(pid) == os.sched_getaffinity(0))
t("sched_getparam", lambda: os.sched_getparam(pid).sched_priority)
t("sched_getscheduler", lambda: os.sched_getscheduler(pid))
t("rr interval >= 0", lambda: os.sched_rr_get_interval(pid) >= 0)
t("prlimit same as mine", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE) == resource.getrlimit(resource.RLIMIT_NOFILE))
t("getpgid same as mine", lambda: os.getpgid(pid) == os.getpgid(0))
t("getsid same as mine", lambda: os.getsid(pid) == os.getsid(0))
t("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
fd = os.pidfd_open(pid)
print("pidfd wait", os.waitid(os.P_PIDFD, fd, os.WEXITED).si_status)
t("after: getpgid", lambda: os.getpgid(pid))
t("after: pidfd_open", lambda: os.pidfd_open(pid))
'''


ZOMBIE_GROUP = r'''
import os, signal
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    os.write(w, b"x")
    signal.pause()
    os._exit(0)
os.read(r, 1)
os.kill(pid, signal.SIGKILL)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
def t(n, f):
    try:
        f()
        print(n, "ok")
    except OSError as e:
        print(n, "errno", e.errno)
t("zombie group 0", lambda: os.killpg(pid, 0))
t("zombie group TERM", lambda: os.killpg(pid, signal.SIGTERM))
os.waitpid(pid, 0)
t("reaped group", lambda: os.killpg(pid, 0))
'''


@test
def proc_group_of_a_zombie_child_takes_signals_as_natively(t):
    """kill(-pgrp) of a group whose only member is a child of the run that
    has exited and not been waited for succeeds, as the kernel's (it
    answered ESRCH with a denial "not a process of the run": a fixture's
    os.killpg of a start_new_session server that has just exited raised,
    and PostgreSQL's postmaster signalling a backend's group recorded a
    denial). Once the child is reaped, ESRCH, and not recorded: the group
    was the run's."""
    fx = FsFix(t)
    nat = fx.native(["python3", "-c", ZOMBIE_GROUP])
    want = nat.out.decode()
    eq(want, "zombie group 0 ok\nzombie group TERM ok\nreaped group errno 3\n",
       "native premise")
    run = fx.run(["python3", "-c", ZOMBIE_GROUP])
    r = _ok(fx, run, "zombie group")
    eq(r.get("stdout"), want, "under corral, against native")
    eq([d for d in r.get("denials") or [] if d.get("layer") == "signal"], [],
       "no signal denial recorded")
    t.assert_next_run_ok()


@test
def proc_zombie_child_answers_queries_as_natively(t):
    """Queries naming a zombie child of the run (priority, I/O priority,
    affinity, scheduling, limits, group and session) and pidfd_open of it
    answer as the kernel's, natively and under corral side by side: they
    answered ESRCH (psutil's as_dict on a zombie; asyncio's pidfd child
    watcher opens a pidfd of a child that may have exited). Each is made
    by corral and kept only if the zombie's pidfd still answers after it,
    so a number collected and taken meanwhile is never what is answered.
    A change (setpriority) of a zombie is refused with ESRCH, as before;
    natively it succeeds (the documented difference)."""
    fx = FsFix(t)
    nat = fx.native(["python3", "-c", ZOMBIE_QUERIES])
    want = nat.out.decode().replace("setpriority None\n",
                                    "setpriority errno 3\n")
    eq(want.count(" True\n"), 6, "native premise (%r)" % want)
    true("pidfd wait 7\n" in want and "after: getpgid errno 3\n" in want,
         "native premise (%r)" % want)
    run = fx.run(["python3", "-c", ZOMBIE_QUERIES])
    r = _ok(fx, run, "zombie queries")
    eq(r.get("stdout"), want, "under corral, against native")
    t.assert_next_run_ok()


@test
def pty_of_another_keeps_its_mode(t):
    """A pty the run did not allocate (one the caller holds) takes no
    change of mode from the program, by its path: it is absent there
    (ENOENT), as before; the run's own ptys take their owner's changes,
    checked to be the run's on the very fd a change acts on."""
    m, s = os.openpty()
    try:
        name = os.ttyname(s)
        before = os.fstat(s).st_mode & 0o7777
        run = t.corral(["run", "--json", "--", "python3", "-c",
                        "import os\n"
                        "try:\n    os.chmod(%r, 0o666); print('changed')\n"
                        "except OSError as e:\n    print(e.errno)\n" % name])
        r = t.result(run)
        eq(r.get("stdout"), "2\n", "chmod of another's pty (ENOENT)")
        eq(os.fstat(s).st_mode & 0o7777, before, "its mode")
    finally:
        os.close(m)
        os.close(s)


@test
def pty_peer_with_o_path_is_a_read_only_open(t):
    """TIOCGPTPEER with O_PATH (or flags -1) answered EBADF: the seccomp
    interface installs no O_PATH file. It is a read-only open of the
    slave now, as an O_PATH open of the slave by its path (docs/policy.md;
    found by a probing session)."""
    fx = FsFix(t)
    run = fx.run(["python3", "-c",
                  "import os, fcntl\n"
                  "m = os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY)\n"
                  "fcntl.ioctl(m, 0x40045431, b'\\0\\0\\0\\0')\n"
                  "for fl in (0o10000000, 0o10000000 | os.O_NOCTTY):\n"
                  "    s = fcntl.ioctl(m, 0x5441, fl)\n"
                  "    print(os.isatty(s), fcntl.fcntl(s, fcntl.F_GETFL) & 3)\n"])
    r = _ok(fx, run, "TIOCGPTPEER O_PATH")
    eq(r.get("stdout"), "True 0\nTrue 0\n", "a read-only open of the slave")
    fx.check()


PTY_ACCESS = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def fa(fd, mode):
    r = libc.syscall(439, fd, b"", mode, 0x1000)   # faccessat2, AT_EMPTY_PATH
    return 0 if r == 0 else ctypes.get_errno()
m, s = os.openpty()
print("slave W", fa(s, os.W_OK), "slave R", fa(s, os.R_OK),
      "master W", fa(m, os.W_OK), "path W",
      0 if os.access(os.ttyname(s), os.W_OK) else 1)
'''


@test
def pty_access_of_the_runs_own_terminal_by_fd(t):
    """faccessat2(fd, "", W_OK, AT_EMPTY_PATH) on the run's own pty, slave
    or master, answers 0 as natively and as the path's access does. An
    earlier build answered EACCES for both fds (found by a differential
    probing session)."""
    fx = FsFix(t)
    with open(fx.wsp("ptyaccess.py"), "w") as f:
        f.write(PTY_ACCESS)
    want = "slave W 0 slave R 0 master W 0 path W 0\n"
    nat = fx.native(["python3", "ptyaccess.py"])
    eq(nat.out.decode(), want, "native (premise)")
    r = _ok(fx, fx.run(["python3", "ptyaccess.py"]), "pty access")
    eq(r.get("stdout"), want, "stdout")
    fx.check()


PTY_MODE = r'''
import os
m, s = os.openpty()
name = os.ttyname(s)
def tryo(what, flags):
    try:
        os.close(os.open(name, flags | os.O_NOCTTY))
        print(what, "opened")
    except OSError as e:
        print(what, "errno", e.errno)
os.chmod(name, 0)
tryo("rdwr at 0", os.O_RDWR)
tryo("path at 0", os.O_PATH)
os.chmod(name, 0o400)
tryo("wronly at 0400", os.O_WRONLY)
tryo("rdonly at 0400", os.O_RDONLY)
os.chmod(name, 0o620)
tryo("rdwr at 0620", os.O_RDWR)
'''


@test
def pty_slave_open_by_path_keeps_its_mode(t):
    """A slave opened by its path is opened through the run's master
    (TIOCGPTPEER), which skips the inode's permission check: a slave
    chmod-ed 0 opened read-write (found by a differential probing
    session). Its mode is now asked first, as the kernel's open does
    (the unprivileged tier: root passes every mode check). An O_PATH open
    asks nothing of the mode (it was EACCES, found by a probing
    session)."""
    fx = FsFix(t)
    with open(fx.wsp("ptymode.py"), "w") as f:
        f.write(PTY_MODE)
    want = ("rdwr at 0 errno 13\npath at 0 opened\n"
            "wronly at 0400 errno 13\n"
            "rdonly at 0400 opened\nrdwr at 0620 opened\n")
    nat = fx.native(["python3", "ptymode.py"])
    eq(nat.out.decode(), want, "native (premise)")
    r = _ok(fx, fx.run(["python3", "ptymode.py"]), "pty mode")
    eq(r.get("stdout"), want, "stdout")
    fx.check()
