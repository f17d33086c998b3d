"""Errno parity with the kernel: where corral allows a call, or refuses one
on an object the program can see that the kernel would refuse anyway, the
program gets the errno the kernel gives. Each test runs one small Python
program natively and under corral, each in a fresh directory of its own
(the workspace under corral), and compares the answers line by line.
"""

import os

from harness import Fail, eq, contains, test, _show

PY = "/usr/bin/python3"

# Put at the top of every probe: `t(name, fn)` prints "name ok" or
# "name ERRNO" (the symbolic name), so both runs print comparable lines.
PRELUDE = r'''
import ctypes, errno, os, stat, sys
os.chdir(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)

def t(name, fn):
    try:
        r = fn()
        print(name, "ok" if r is None or isinstance(r, int) and r >= 0
              else r)
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))

def sysc(*args):
    """A raw call through libc's syscall(): raises OSError on -1."""
    r = libc.syscall(*args)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
'''


def _lines(text):
    return [ln for ln in text.splitlines() if ln]


def parity(t, body, name="probe", extra=(), want=None):
    """Run PRELUDE + body natively and under corral (-w a fresh directory
    each) and compare what they print. want: {case: answer} the native run
    must give (the test's own premise: the kernel's errno it is about).
    Returns (native lines, corral lines, result)."""
    src = PRELUDE + body
    outs = []
    for side in ("native", "corral"):
        ws = t.path("%s-%s" % (name, side))
        os.makedirs(ws)
        os.chmod(ws, 0o755)
        script = os.path.join(ws, ".probe.py")
        with open(script, "w") as f:
            f.write(src)
        if side == "native":
            r = t.native([PY, script, ws])
            res = None
        else:
            r = t.corral(["run", "--json", "-w", ws] + list(extra) +
                         ["--", PY, script, "."])
            res = t.result(r)
            if res.get("stdout") is None:
                raise Fail("no stdout in the result: %s" % _show(res))
        out = r.out.decode() if res is None else res["stdout"]
        if side == "native":
            eq(r.code, 0, "native exit (stderr %r)" % r.err[-600:])
        else:
            eq(res.get("exit_code"), 0,
               "exit under corral (stderr %r)" % res.get("stderr", "")[-600:])
        outs.append(_lines(out))
    nat, cor = outs
    for k, v in (want or {}).items():
        contains(nat, "%s %s" % (k, v), "native answer (test premise)")
    if cor != nat:
        diff = [(a, b) for a, b in zip(cor, nat) if a != b]
        raise Fail("answers under corral vs native differ (corral, native): "
                   "%s; %d vs %d lines" % (_show(diff, 1500), len(cor),
                                           len(nat)))
    return nat, cor, res


# ---- 1. open of an existing directory for writing: EISDIR first ----

OPEN_DIR = r'''
W = os.O_WRONLY
for p in ("/etc", "/usr/share", "/", "/proc", "/usr"):
    t("creat-ro " + p, lambda: os.close(os.open(p, os.O_RDONLY | os.O_CREAT)))
    t("wronly " + p, lambda: os.close(os.open(p, W)))
    t("rdwr " + p, lambda: os.close(os.open(p, os.O_RDWR)))
    t("creat-wr " + p, lambda: os.close(os.open(p, W | os.O_CREAT)))
    t("trunc " + p, lambda: os.close(os.open(p, os.O_RDONLY | os.O_TRUNC)))
    t("excl " + p, lambda: os.close(os.open(p, os.O_CREAT | os.O_EXCL)))
    t("rdonly " + p, lambda: os.close(os.open(p, os.O_RDONLY)))
    t("path-wr " + p, lambda: os.close(os.open(p, os.O_PATH | W)))
os.mkdir("d")
t("wronly ws/d", lambda: os.close(os.open("d", W)))
t("creat ws/d", lambda: os.close(os.open("d", os.O_CREAT | os.O_RDONLY)))
# A read-only file stays EACCES under corral's rules; a directory named
# with a trailing slash and O_CREAT is EISDIR both ways.
t("creat-slash /etc/", lambda: os.close(os.open("/etc/", os.O_CREAT)))
'''


@test
def errno_parity_open_dir_eisdir(t):
    """open() of a visible directory with O_CREAT, a write mode or O_TRUNC
    answers EISDIR, as the kernel's do_open does before any permission
    check (it answered EACCES: util-linux flock falls back to a read-only
    open on EISDIR only); O_PATH and plain read-only opens are unchanged."""
    parity(t, OPEN_DIR, want={"creat-ro /etc": "EISDIR",
                              "wronly /usr/share": "EISDIR",
                              "trunc /": "EISDIR",
                              "excl /etc": "EEXIST"})


@test
def errno_parity_flock_dir(t):
    """`flock /etc true` and `flock /usr true` work as natively: flock(1)
    opens O_RDONLY|O_CREAT and retries read-only on EISDIR."""
    ws = t.path("ws")
    os.makedirs(ws)
    cmd = "flock /etc true && flock /usr true && flock / echo locked"
    nat = t.native(["sh", "-c", cmd])
    eq((nat.code, nat.out), (0, b"locked\n"), "native (test premise)")
    r = t.corral(["run", "--json", "-w", ws, "--", "sh", "-c", cmd])
    res = t.result(r)
    eq((res.get("exit_code"), res.get("stdout")), (0, "locked\n"),
       "under corral (stderr %r)" % res.get("stderr"))


# ---- 2. the /proc listing shows what a lookup reaches ----

PROC_LIST = r'''
names = [n for n in os.listdir("/proc") if not n.isdigit()]
for n in sorted(names):
    print("L", n)
for n in sys.argv[2:]:
    t("S " + n, lambda: os.lstat("/proc/" + n) and None)
'''


@test
def errno_parity_proc_listing(t):
    """A listing of /proc shows a name that is not a pid only when a lookup
    of it answers (self, cpuinfo, sys...): a name every lookup answers
    ENOENT for (acpi, kallsyms, vmstat...) is not listed either, so `find`
    and `ls -R` no longer print errors for names they were just shown."""
    native = sorted(n for n in os.listdir("/proc") if not n.isdigit())
    for n in ("self", "cpuinfo", "kallsyms"):
        contains(native, n, "native /proc listing (test premise)")
    ws = t.path("ws")
    os.makedirs(ws)
    script = os.path.join(ws, ".probe.py")
    with open(script, "w") as f:
        f.write(PRELUDE + PROC_LIST)
    r = t.corral(["run", "--json", "-w", ws, "--", PY, script, "."] + native)
    res = t.result(r)
    eq(res.get("exit_code"), 0, "exit (stderr %r)" % res.get("stderr"))
    listed, found = set(), set()
    for ln in _lines(res.get("stdout", "")):
        k, name, *rest = ln.split(" ")
        if k == "L":
            listed.add(name)
        elif rest == ["ok"]:
            found.add(name)
        else:
            eq(rest, ["ENOENT"], "lookup of /proc/%s" % name)
    for n in ("self", "thread-self", "cpuinfo", "meminfo", "sys"):
        contains(listed, n, "names listed under corral")
    for n in ("kallsyms", "kcore", "acpi"):
        if n in native:
            true_absent = n not in listed and n not in found
            eq(true_absent, True, "/proc/%s absent under corral" % n)
    eq(sorted(listed - {".", ".."}), sorted(found),
       "listed names vs names a lookup reaches")


# ---- 3. AT_EMPTY_PATH forms the kernel accepts ----

EMPTY_PATH = r'''
AT_EMPTY_PATH = 0x1000
with open("f", "w") as fh:
    fh.write("x")
os.mkdir("d")
u, g = os.getuid(), os.getgid()
fds = {"file": os.open("f", os.O_RDONLY), "dir": os.open("d", os.O_RDONLY),
       "path": os.open("f", os.O_PATH), "ro": os.open("/etc/passwd", os.O_RDONLY)}
buf = ctypes.create_string_buffer(256)
for k, fd in fds.items():
    for ug in ((u, g), (-1, -1), (u, -1)):
        if k == "ro":
            continue    # a read root's file: see errno_parity_visible_refusals
        t("fchownat %s %r" % (k, ug), lambda: sysc(260, fd, b"", ug[0], ug[1],
                                                  AT_EMPTY_PATH))
    for m, mn in ((os.R_OK, "R"), (os.W_OK, "W"), (os.X_OK, "X"), (0, "F")):
        t("faccessat2 %s %s" % (k, mn), lambda: sysc(439, fd, b"", m,
                                                      AT_EMPTY_PATH))
    t("newfstatat-null " + k, lambda: sysc(262, fd, None, buf, AT_EMPTY_PATH))
    t("newfstatat-empty " + k, lambda: sysc(262, fd, b"", buf, AT_EMPTY_PATH))
    t("statx-null " + k, lambda: sysc(332, fd, None, AT_EMPTY_PATH, 0, buf))
t("fchownat badflag", lambda: sysc(260, fds["file"], b"", u, g, 0x8000))
'''


@test
def errno_parity_empty_path_forms(t):
    """fchownat(fd, "", AT_EMPTY_PATH) acts on the fd as fchown does (it
    answered EINVAL), faccessat2(fd, "", AT_EMPTY_PATH) of a file answers
    as the kernel (it answered ENOTDIR), and newfstatat(fd, NULL,
    AT_EMPTY_PATH) is taken as "" wherever the kernel takes it so, as
    statx's was (it answered EFAULT)."""
    parity(t, EMPTY_PATH, want={"fchownat file (%d, %d)" % (os.getuid(),
                                                             os.getgid()): "ok",
                                "faccessat2 file R": "ok",
                                "faccessat2 file X": "EACCES"})


# ---- 4. a last component "." or ".." ----

DOTS = r'''
os.makedirs("q/e/f")
os.makedirs("r/e")
for name, fn in [
        ("rmdir q/e/..", lambda: os.rmdir("q/e/..")),
        ("rmdir q/e/f/..", lambda: os.rmdir("q/e/f/..")),
        ("rmdir q/e/../", lambda: os.rmdir("q/e/../")),
        ("rmdir ..", lambda: os.rmdir("..")),
        ("rmdir q/e/.", lambda: os.rmdir("q/e/.")),
        ("rmdir .", lambda: os.rmdir(".")),
        ("rmdir q/./e/f/../..", lambda: os.rmdir("q/./e/f/../..")),
        ("unlink q/e/..", lambda: os.unlink("q/e/..")),
        ("unlink q/e/.", lambda: os.unlink("q/e/.")),
        ("link r/e/.. n1", lambda: os.link("r/e/..", "n1")),
        ("link r/e/. n2", lambda: os.link("r/e/.", "n2")),
        ("link r/e n3", lambda: os.link("r/e", "n3")),
        ("link .. n4", lambda: os.link("..", "n4")),
        ("link f r/e/..", lambda: open("f", "w").close() or
         os.link("f", "r/e/..")),
        ("link f r/e/.", lambda: os.link("f", "r/e/.")),
        ("rename q/e/.. x", lambda: os.rename("q/e/..", "x")),
        ("rename q/e/f q/e/..", lambda: os.rename("q/e/f", "q/e/..")),
        ("rename q/e/. x", lambda: os.rename("q/e/.", "x"))]:
    t(name, fn)
t("exists after", lambda: print(sorted(os.listdir(".")), sorted(os.listdir("q/e"))))
'''


@test
def errno_parity_dot_components(t):
    """A path whose last component is "." or "..": rmdir("x/..") answers
    ENOTEMPTY and rmdir of "." EINVAL, as the kernel's do_rmdir does by
    the last component (".." answered EINVAL); link("d/..", new) and
    link("d/.", new) answer EPERM, a directory source, and EEXIST only
    when the new name is one (the source's dots answered EEXIST)."""
    parity(t, DOTS, want={"rmdir q/e/..": "ENOTEMPTY",
                          "link r/e/.. n1": "EPERM",
                          "link f r/e/..": "EEXIST"})


# ---- 5. mknod of no file type ----

MKNOD = r'''
for name, mode in (("badtype", 0o170000 | 0o600), ("type-a", 0o120000 | 0o600),
                   ("dir", stat.S_IFDIR | 0o700), ("reg", stat.S_IFREG | 0o600),
                   ("fifo", stat.S_IFIFO | 0o600), ("none", 0o600),
                   ("chr", stat.S_IFCHR | 0o600), ("blk", stat.S_IFBLK | 0o600)):
    dev = os.makedev(1, 3) if name in ("chr", "blk") else 0
    t("mknod " + name, lambda: os.mknod("n-" + name, mode, dev))
    if not dev:     # a device node is refused before its path is looked at
        t("mknod-outside " + name, lambda: os.mknod("/nonexistent/n", mode))
'''


@test
def errno_parity_mknod_types(t):
    """mknod of a mode with no valid file type answers EINVAL and of a
    directory EPERM before the path is looked at, as the kernel's
    may_mknod does (every unlisted type answered EPERM, "device nodes are
    refused"); device nodes stay refused with EPERM."""
    parity(t, MKNOD, want={"mknod badtype": "EINVAL", "mknod dir": "EPERM",
                           "mknod-outside badtype": "EINVAL",
                           "mknod chr": "EPERM"})


# ---- 6. refusals on visible objects the kernel would refuse anyway ----

VISIBLE = r'''
AT_FDCWD, UTIME_OMIT = -100, (1 << 30) - 2
with open("f", "w") as fh:
    fh.write("x")
for p in ("/usr/bin/env", "/etc", "/", "/etc/passwd", "/usr/bin/passwd"):
    t("chown-noop " + p, lambda: os.chown(p, -1, -1))
    t("lchown-noop " + p, lambda: os.chown(p, -1, -1, follow_symlinks=False))
    t("chown-uid " + p, lambda: os.chown(p, os.getuid(), -1))
    t("chown-gid " + p, lambda: os.chown(p, -1, os.getgid()))
    t("chmod " + p, lambda: os.chmod(p, 0o755))
    t("utime-explicit " + p, lambda: os.utime(p, (1, 1)))
    t("utime-now " + p, lambda: os.utime(p, None))
    t("truncate " + p, lambda: os.truncate(p, 0))
    t("link-onto " + p, lambda: os.link("f", p))
    t("symlink-onto " + p, lambda: os.symlink("f", p))
    t("mkdir-onto " + p, lambda: os.mkdir(p))
    t("mkfifo-onto " + p, lambda: os.mkfifo(p))
    t("link-from " + p, lambda: os.link(p, "hl-" + p.replace("/", "_")))
t("truncate /usr", lambda: os.truncate("/usr", 0))
t("truncate /dev/null", lambda: os.truncate("/dev/null", 0))
t("chown-noop /nonexistent", lambda: os.chown("/usr/nonexistent", -1, -1))
omit = (ctypes.c_long * 4)(0, UTIME_OMIT, 0, UTIME_OMIT)
t("utimensat-omit /usr/nonexistent",
  lambda: sysc(280, AT_FDCWD, b"/usr/nonexistent", omit, 0))
t("utimensat-omit /etc/passwd",
  lambda: sysc(280, AT_FDCWD, b"/etc/passwd", omit, 0))
fd = os.open("/etc/passwd", os.O_RDONLY)
t("fchown-noop fd", lambda: os.fchown(fd, -1, -1))
t("fchownat-empty-noop fd", lambda: sysc(260, fd, b"", -1, -1, 0x1000))
t("fchown-uid fd", lambda: os.fchown(fd, os.getuid(), -1))
t("fchmod fd", lambda: os.fchmod(fd, 0o644))
t("fchmodat2-empty fd", lambda: sysc(452, fd, b"", 0o644, 0x1000))
t("futimens-explicit fd", lambda: os.utime(fd, (1, 1)))
t("futimens-now fd", lambda: os.utime(fd, None))
'''


@test
def errno_parity_visible_refusals(t):
    """A change the rules refuse of an object the program can see answers
    what the kernel would answer first: EPERM for chmod, chown and
    explicit times of a file the task does not own, EEXIST for a new name
    that exists, EPERM for a link to a file fs.protected_hardlinks keeps
    or to a directory, EISDIR for truncate of a directory, and chown(-1, -1),
    which the kernel allows on any file without set-id bits, succeeds
    (all answered EACCES)."""
    parity(t, VISIBLE, want={"chown-noop /usr/bin/env": "ok",
                             "chown-noop /usr/bin/passwd": "EPERM",
                             "chmod /etc/passwd": "EPERM",
                             "utime-explicit /usr/bin/env": "EPERM",
                             "utime-now /usr/bin/env": "EACCES",
                             "link-onto /etc/passwd": "EEXIST",
                             "truncate /usr": "EISDIR",
                             "link-from /etc/passwd": "EPERM",
                             "fchmod fd": "EPERM"})


OWN_RO = r'''
p = sys.argv[2] + "/mine"
t("chown-noop", lambda: os.chown(p, -1, -1))
t("chown-own", lambda: os.chown(p, os.getuid(), os.getgid()))
t("chmod", lambda: os.chmod(p, 0o600))
t("utime-explicit", lambda: os.utime(p, (1, 1)))
t("truncate", lambda: os.truncate(p, 0))
fd = os.open(p, os.O_RDONLY)
t("fchown-noop", lambda: os.fchown(fd, -1, -1))
t("fchmod", lambda: os.fchmod(fd, 0o600))
'''


@test
def errno_parity_own_file_in_read_root_stays_refused(t):
    """What the kernel would allow (the program's own file in a read-only
    root) stays refused with EACCES and unchanged; only chown(-1, -1),
    which changes nothing, succeeds."""
    ro = t.path("ro")
    os.makedirs(ro)
    mine = os.path.join(ro, "mine")
    with open(mine, "w") as f:
        f.write("keep")
    os.chmod(mine, 0o644)
    os.utime(mine, (1000000000, 1000000000))
    ws = t.path("ws")
    os.makedirs(ws)
    script = os.path.join(ws, ".probe.py")
    with open(script, "w") as f:
        f.write(PRELUDE + OWN_RO)
    r = t.corral(["run", "--json", "-w", ws, "--ro", ro, "--",
                  PY, script, ".", ro])
    res = t.result(r)
    eq(res.get("exit_code"), 0, "exit (stderr %r)" % res.get("stderr"))
    eq(_lines(res.get("stdout", "")),
       ["chown-noop ok", "chown-own EACCES", "chmod EACCES",
        "utime-explicit EACCES", "truncate EACCES", "fchown-noop ok",
        "fchmod EACCES"], "answers")
    st = os.stat(mine)
    eq((oct(st.st_mode & 0o7777), st.st_mtime, st.st_size),
       (oct(0o644), 1000000000.0, 4), "the file after the run")


@test
def errno_parity_null_path_of_the_cwd(t):
    """statx and newfstatat with AT_FDCWD, a NULL path and AT_EMPTY_PATH
    state the cwd (6.11+); corral read the NULL path: EFAULT."""
    parity(t, r'''
buf = ctypes.create_string_buffer(512)
t("newfstatat", lambda: sysc(262, -100, None, buf, 0x1000))
t("statx", lambda: sysc(332, -100, None, 0x1000, 0xfff, buf))
''', name="nullcwd", want={"newfstatat": "ok", "statx": "ok"})


@test
def errno_parity_null_path_times(t):
    """futimesat and utimensat with a NULL path act on the dirfd (the
    kernel's do_utimes), take no flags there, and read the NULL path at
    AT_FDCWD (EFAULT); corral answered futimesat(fd, NULL, tv) EFAULT
    and left the times (found by a probing session)."""
    parity(t, r'''
fd = os.open("f", os.O_CREAT | os.O_RDWR, 0o644)
tv = (ctypes.c_long * 4)(1000, 0, 2000, 0)
ts = (ctypes.c_long * 4)(3000, 0, 4000, 0)
t("futimesat fd", lambda: sysc(261, fd, None, tv))
print("mtime", int(os.fstat(fd).st_mtime))
t("futimesat cwd", lambda: sysc(261, -100, None, tv))
t("futimesat now", lambda: sysc(261, fd, None, None))
t("utimensat fd", lambda: sysc(280, fd, None, ts, 0))
print("mtime", int(os.fstat(fd).st_mtime))
t("utimensat nofollow", lambda: sysc(280, fd, None, ts, 0x100))
t("utimensat empty", lambda: sysc(280, fd, None, ts, 0x1000))
t("utimensat cwd", lambda: sysc(280, -100, None, ts, 0))
t("utimensat badfd", lambda: sysc(280, 99, None, ts, 0))
''', name="nulltimes", want={"futimesat fd": "ok", "futimesat cwd": "EFAULT",
                             "utimensat nofollow": "EINVAL"})


@test
def errno_parity_memfd_metadata(t):
    """The run's memfd shows as "/memfd:NAME (deleted)": corral took it for
    a host file outside every root, and fchmod, fchown and faccessat2 on
    it were refused (EACCES)."""
    parity(t, r'''
fd = os.memfd_create("x")
os.write(fd, b"hello")
t("fchmod", lambda: os.fchmod(fd, 0o600))
t("fchown", lambda: os.fchown(fd, -1, -1))
t("faccessat2", lambda: sysc(439, fd, b"", 4, 0x1000))
t("fstat", lambda: os.fstat(fd).st_size)
''', name="memfd", want={"fchmod": "ok", "faccessat2": "ok"})


# ---- /dev/tty without a controlling terminal ----

DEV_TTY = r'''
try:
    os.setsid()     # no controlling terminal, natively as under corral
except OSError:
    pass
t("exists", lambda: print("exists", os.path.exists("/dev/tty")))
t("stat", lambda: print("stat", oct(os.stat("/dev/tty").st_mode),
                        os.major(os.stat("/dev/tty").st_rdev)))
t("lstat //", lambda: print("lstat", oct(os.lstat("/dev//tty").st_mode)))
t("access rw", lambda: print("access", os.access("/dev/tty", os.R_OK | os.W_OK)))
t("access x", lambda: print("access x", os.access("/dev/tty", os.X_OK)))
t("readlink", lambda: os.readlink("/dev/tty"))
t("open", lambda: os.close(os.open("/dev/tty", os.O_RDWR)))
t("open //", lambda: os.close(os.open("/dev//tty", os.O_RDONLY)))
d = os.open("/dev", os.O_RDONLY | os.O_DIRECTORY)
t("open at /dev", lambda: os.close(os.open("tty", os.O_WRONLY, dir_fd=d)))
'''


@test
def errno_parity_dev_tty_node(t):
    """/dev/tty without a controlling terminal: stat, access and readlink
    see the node as natively, every open answers ENXIO (they all answered
    ENXIO, and /dev//tty or tty at a /dev descriptor ENOENT, since the
    check matched the path's text). An O_PATH open stays ENXIO under
    corral where the kernel gives a descriptor: ADDFD carries a read-only
    open, and opened by the supervisor /dev/tty is corral's terminal."""
    parity(t, DEV_TTY, name="devtty",
           want={"stat": "ok", "access": "True", "readlink": "EINVAL",
                 "open": "ENXIO", "open //": "ENXIO", "open at /dev": "ENXIO"})
    r = t.result(t.corral(["run", "--json", "--", PY, "-c",
                           "import os, errno\ntry:\n os.setsid()\n"
                           "except OSError: pass\ntry:\n"
                           " os.open('/dev/tty', os.O_PATH); print('fd')\n"
                           "except OSError as e:\n"
                           " print(errno.errorcode[e.errno])\n"]))
    eq(r.get("stdout"), "ENXIO\n", "O_PATH of /dev/tty under corral")
    eq(r.get("denials") or [], [], "no denial: the kernel's answer")
    # The shared terminal nodes' access and modification times tell when
    # any process of the host last used a terminal through them: where
    # corral answers stat (strict metadata), they are the change time.
    r = t.result(t.corral(["run", "--json", "--strict-metadata", "--", PY,
                           "-c", "import os\nfor p in ('/dev/tty', '/dev/ptmx'):\n"
                           " for st in (os.stat(p), os.lstat(p)):\n"
                           "  print(st.st_atime_ns == st.st_ctime_ns,"
                           " st.st_mtime_ns == st.st_ctime_ns)\n"]))
    eq(r.get("stdout"), "True True\n" * 4, "terminal nodes' times")
    t.assert_next_run_ok()


# ---- socket filters: the program's instructions, not corral's memory ----

SOCK_FILTER = r'''
import socket, struct
SO_ATTACH_FILTER, SO_DETACH_FILTER, SO_ATTACH_BPF = 26, 27, 50
def prog(*ins):
    """A sock_fprog pointing at ins (code, jt, jf, k) in this process."""
    raw = b"".join(struct.pack("HBBI", *i) for i in ins)
    buf = ctypes.create_string_buffer(raw, len(raw))
    prog.keep.append(buf)
    return struct.pack("HxxxxxxQ", len(ins), ctypes.addressof(buf))
prog.keep = []
ACCEPT = (0x06, 0, 0, 0xFFFFFFFF)    # BPF_RET|BPF_K: all of the packet
DROP = (0x06, 0, 0, 0)
def attach(s, val, opt=SO_ATTACH_FILTER):
    s.setsockopt(socket.SOL_SOCKET, opt, val)
for fam, typ in ((socket.AF_UNIX, socket.SOCK_DGRAM),
                 (socket.AF_UNIX, socket.SOCK_STREAM)):
    a, b = socket.socketpair(fam, typ)
    b.settimeout(0.3)
    tag = "unix%d" % typ
    t(tag + " accept", lambda: attach(b, prog(ACCEPT)))
    a.send(b"one")
    t(tag + " through accept", lambda: print(tag, b.recv(10)))
    t(tag + " drop", lambda: attach(b, prog(DROP)))
    a.send(b"two")
    t(tag + " through drop", lambda: print(tag, b.recv(10)))
    t(tag + " detach", lambda: b.setsockopt(socket.SOL_SOCKET,
                                            SO_DETACH_FILTER, 0))
    a.close(); b.close()
# (Internet sockets are left out: a host may refuse their filters with a
# policy of its own, EPERM natively here.)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
t("unix bad jump", lambda: attach(s, prog((0x05, 0, 0, 7), ACCEPT)))
t("unix null", lambda: attach(s, struct.pack("HxxxxxxQ", 1, 0)))
t("unix empty", lambda: attach(s, struct.pack("HxxxxxxQ", 0, 4096)))
t("unix too long", lambda: attach(s, struct.pack("HxxxxxxQ", 4097, 4096)))
t("unix short", lambda: attach(s, b"\0" * 8))
# An address of nothing in this process: EFAULT, wherever corral's
# own memory may be.
for addr in (0x1000, 0x7f0000000000, 0x7ffff7000000, 0x7fffffffe000):
    t("unix at %#x" % addr,
      lambda: attach(s, struct.pack("HxxxxxxQ", 1, addr)))
t("unix bpf fd 0", lambda: attach(s, struct.pack("i", 0), SO_ATTACH_BPF))
t("unix bpf fd 999", lambda: attach(s, struct.pack("i", 999), SO_ATTACH_BPF))
t("unix bpf long", lambda: attach(s, struct.pack("q", 0), SO_ATTACH_BPF))
'''


@test
def errno_parity_socket_filter_is_the_programs(t):
    """SO_ATTACH_FILTER's value points at the program's instructions; corral
    performs the call, and an earlier build handed the kernel the pointer
    as it was, read in corral's memory: every attach failed EFAULT where it
    works natively, and EFAULT against EINVAL mapped corral's address space
    (found by a probing session). SO_ATTACH_BPF's fd was looked up in
    corral's table. Now the instructions and the fd are the program's: a
    filter that drops everything drops, unmapped addresses answer EFAULT."""
    nat, _, _ = parity(t, SOCK_FILTER, want={"unix2 accept": "ok",
                                             "unix null": "EINVAL",
                                             "unix at 0x1000": "EFAULT"})
    contains(nat, "unix2 b'one'", "native: the accepting filter passes")
    contains(nat, "unix2 through drop None", "native: the drop drops (a timeout)")


# ---- unshare: a private fd table or cwd is the kernel's ----

UNSHARE = r'''
import threading
CLONE_FILES, CLONE_FS, CLONE_SYSVSEM = 0x400, 0x200, 0x40000
t("unshare 0", lambda: sysc(272, 0))
t("unshare files", lambda: sysc(272, CLONE_FILES))
t("unshare sysvsem", lambda: sysc(272, CLONE_SYSVSEM))
t("unshare bad bit", lambda: sysc(272, 0x1))
os.mkdir("sub")
with open("sub/f", "w") as f:
    f.write("in sub")
def worker():
    # A thread with a cwd of its own, as Go's LockOSThread + Unshare.
    t("thread unshare fs", lambda: sysc(272, CLONE_FS))
    os.chdir("sub")
    t("thread reads f", lambda: print("thread", open("f").read()))
th = threading.Thread(target=worker)
th.start(); th.join()
t("main cwd kept", lambda: print("main", sorted(os.listdir("."))))
'''


@test
def errno_parity_unshare_of_own_state(t):
    """unshare of what a thread shares (its fd table, its cwd and umask,
    its System V undo list) is the kernel's, and the thread's own cwd is
    the one its paths resolve from; an earlier build refused every unshare
    (Go's runtime tests, and programs keeping a cwd per locked thread).
    Namespaces stay refused (test_a0_surface)."""
    parity(t, UNSHARE, want={"unshare files": "ok",
                             "unshare bad bit": "EINVAL"})


# ---- unix names too long for corral's alias ----

UNIX_LONG = r'''
import socket
for n in (80, 89, 90, 100, 107):
    name = ("s%d-" % n).ljust(n, "x")
    srv = socket.socket(socket.AF_UNIX)
    t("bind %d" % n, lambda: srv.bind(name))
    def talk():
        srv.listen(1)
        c = socket.socket(socket.AF_UNIX)
        c.connect(name)
        a, _ = srv.accept()
        c.send(b"hi")
        print(n, a.recv(2), srv.getsockname() == name,
              c.getpeername() == name, os.path.exists(name),
              oct(os.stat(name).st_mode))
        a.close(); c.close()
    t("talk %d" % n, talk)
    srv.close()
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
dn = "d".ljust(104, "y")
t("dgram bind", lambda: d.bind(dn))
e = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
t("dgram send", lambda: e.sendto(b"yo", dn))
t("dgram recv", lambda: print("dgram", d.recv(2)))
t("cwd kept", lambda: print(sorted(os.listdir("."))[:1]))
# One long name in two directories, both live: each socket's own.
for k in (95, 103):
    base = "n".ljust(k, "n")
    two = []
    for dn in ("d1", "d2"):
        os.makedirs(dn, exist_ok=True)
        s = socket.socket(socket.AF_UNIX)
        t("bind %s %d" % (dn, k), lambda: s.bind(dn + "/" + base))
        s.listen(1)
        two.append(s)
    print(k, "names", [x.getsockname()[:3] for x in two])
    c = socket.socket(socket.AF_UNIX)
    t("connect to the first's name %d" % k,
      lambda: c.connect(two[0].getsockname()))
    two[0].setblocking(False)
    two[1].setblocking(False)
    for i, x in enumerate(two):
        try:
            x.accept()[0].close()
            print(k, "reached", i)
        except BlockingIOError:
            pass
    for x in two + [c]:
        x.close()
'''


@test
def errno_parity_unix_names_of_90_bytes_and_more_bind(t):
    """corral binds a unix name through /proc/self/fd/N/NAME, which leaves
    no room in sun_path's 108 bytes for a name of 90 or more: an earlier
    build answered ENAMETOOLONG where the kernel binds (found by a probing
    session). Such a name is bound relative to its checked directory."""
    nat, _, _ = parity(t, UNIX_LONG, want={"bind 100": "ok",
                                           "bind 107": "ok",
                                           "bind d2 95": "ok",
                                           "bind d2 103": "ok"})
    contains(nat, "dgram b'yo'", "native: the datagram arrives")
    # Two sockets of one long name in two directories: bound by the bare
    # name, each reported the newer one's directory, and a connect to the
    # first's reported name reached the second (found by a differential
    # probe). Names past 103 bytes are still bound bare (docs/network.md).
    for k in (95, 103):
        contains(nat, "%d names ['d1/', 'd2/']" % k, "native: names")
        contains(nat, "%d reached 0" % k, "native: the first reached")


DELETED_NAME = r'''
os.chdir(sys.argv[1])
os.mkdir("q (deleted)")
fd = os.open("q (deleted)", os.O_RDONLY | os.O_DIRECTORY)
t("creat", lambda: os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o644,
                                    dir_fd=fd)))
t("mkdir", lambda: os.mkdir("d", dir_fd=fd))
t("stat", lambda: os.stat("f", dir_fd=fd) and None)
os.chdir("q (deleted)")
t("cwd creat", lambda: open("g", "w").close())
os.chdir("..")
os.mkdir("gone")
g = os.open("gone", os.O_RDONLY | os.O_DIRECTORY)
os.rmdir("gone")
t("removed creat", lambda: os.close(os.open("f", os.O_CREAT | os.O_WRONLY,
                                            0o644, dir_fd=g)))
t("removed stat", lambda: os.stat("f", dir_fd=g) and None)
# A live file whose own name ends so, reopened through its fd's link.
open("g (deleted)", "w").close()
h = os.open("g (deleted)", os.O_RDONLY)
t("live link reopen", lambda: os.close(os.open("/proc/self/fd/%d" % h,
                                               os.O_RDONLY)))
t("live link stat", lambda: os.stat("/proc/self/fd/%d" % h) and None)
'''


@test
def errno_parity_a_directory_named_deleted_is_not_removed(t):
    """The path of a dirfd or cwd is read from /proc, where a removed
    directory's ends in " (deleted)"; so may a live one's name ("q
    (deleted)"), and calls relative to it answered ENOENT (found by a
    probing session). A removed directory has no link: that is what is
    asked now."""
    parity(t, DELETED_NAME, want={"creat": "ok", "cwd creat": "ok",
                                  "removed creat": "ENOENT",
                                  "live link reopen": "ok"})


# ---- ioctls refused by number, asked of the wrong kind of file ----

IOCTL_KIND = r'''
import fcntl
fds = {"file": os.open("/usr/bin/env", os.O_RDONLY),
       "null": os.open("/dev/null", os.O_RDWR),
       "pipe": os.pipe()[0]}
for k, fd in fds.items():
    for name, cmd in (("TIOCSTI", 0x5412), ("TIOCLINUX", 0x541C),
                      ("TIOCSETD", 0x5423), ("NS_GET_USERNS", 0xb701),
                      ("FIOSETOWN", 0x8901), ("SIOCGIFCONF", 0x8912),
                      ("SIOCGIFADDR", 0x8915)):
        t("%s %s" % (name, k), lambda: fcntl.ioctl(fd, cmd, bytes(64)))
t("TIOCSTI badfd", lambda: fcntl.ioctl(987, 0x5412, bytes(8)))
'''


@test
def errno_parity_refused_ioctls_on_other_files(t):
    """The ioctls corral refuses by number (terminal injection, namespace
    queries, signal owners by ioctl, interface queries) answered EPERM or
    ENODEV, and recorded a denial, on any fd; the kernel answers ENOTTY on
    a file they do not act on (found by a probing session). ENOTTY now,
    with nothing recorded; on their own kind they stay refused (tests in
    test_df_terminal_doors.py and test_db_net_doors.py)."""
    nat, cor, res = parity(t, IOCTL_KIND, want={"TIOCSTI file": "ENOTTY",
                                                "FIOSETOWN null": "ENOTTY",
                                                "TIOCSTI badfd": "EBADF"})
    eq([d for d in res.get("denials", []) if d.get("syscall") == "ioctl"],
       [], "no denial recorded")


# ---- signals with a siginfo, pidfds, process_vm: the kernel's order ----

SIGNAL_ORDER = r'''
import signal, struct, time
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
signal.signal(signal.SIGUSR2, signal.SIG_IGN)
def info(signo, code):
    return ctypes.create_string_buffer(struct.pack("iii", signo, 0, code)
                                       + bytes(116), 128)
SI_USER, SI_QUEUE, SI_TKILL = 0, -1, -6
PIDFD_SEND, SIGQ, TGSIGQ, VMR = 424, 129, 297, 310
z = os.fork()
if z == 0:
    os._exit(0)
time.sleep(0.3)                      # z is a zombie: not waited for yet
live = os.fork()
if live == 0:
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    time.sleep(30)
    os._exit(0)
time.sleep(0.2)
zfd, lfd = os.pidfd_open(z), os.pidfd_open(live)
for who, fd in (("zombie", zfd), ("live", lfd)):
    t("pidfd %s bad flags" % who, lambda: sysc(PIDFD_SEND, fd, 0, None, 0x100))
    t("pidfd %s two scopes" % who, lambda: sysc(PIDFD_SEND, fd, 10, None, 3))
    t("pidfd %s signo differs" % who,
      lambda: sysc(PIDFD_SEND, fd, 10, info(12, SI_QUEUE), 0))
    t("pidfd %s SI_USER" % who,
      lambda: sysc(PIDFD_SEND, fd, 10, info(10, SI_USER), 0))
    t("pidfd %s info fault" % who,
      lambda: sysc(PIDFD_SEND, fd, 10, ctypes.c_void_p(8), 0))
    t("pidfd %s sig 0 info differs" % who,
      lambda: sysc(PIDFD_SEND, fd, 0, info(12, SI_QUEUE), 0))
    t("pidfd %s sig 0 SI_USER" % who,
      lambda: sysc(PIDFD_SEND, fd, 0, info(0, SI_USER), 0))
    t("pidfd %s sig 0 queue" % who,
      lambda: sysc(PIDFD_SEND, fd, 0, info(0, SI_QUEUE), 0))
    t("pidfd %s bad signal" % who, lambda: sysc(PIDFD_SEND, fd, 99, None, 0))
    pid = z if who == "zombie" else live
    t("sigqueue %s fault" % who, lambda: sysc(SIGQ, pid, 10, ctypes.c_void_p(8)))
    t("sigqueue %s SI_USER" % who, lambda: sysc(SIGQ, pid, 10, info(10, SI_USER)))
    t("sigqueue %s bad signal" % who,
      lambda: sysc(SIGQ, pid, 99, info(99, SI_QUEUE)))
    t("tgsigqueue %s SI_TKILL" % who,
      lambda: sysc(TGSIGQ, pid, pid, 10, info(10, SI_TKILL)))
    t("tgsigqueue %s fault" % who,
      lambda: sysc(TGSIGQ, pid, pid, 10, ctypes.c_void_p(8)))
    t("tgsigqueue %s zero tid" % who,
      lambda: sysc(TGSIGQ, pid, 0, 10, info(10, SI_QUEUE)))
t("pidfd badfd bad signal", lambda: sysc(PIDFD_SEND, 999, 99, None, 0))
# A process's directory is a pidfd; a directory below it is not (EBADF).
for name in ("/proc/%d" % live, "/proc/%d/task/%d" % (live, live),
             "/proc/%d/fd" % live, "/proc/thread-self"):
    d = os.open(name, os.O_RDONLY | os.O_DIRECTORY)
    t("pidfd dir %s" % name.replace(str(live), "L").replace(
        "thread-self", "TS"), lambda: sysc(PIDFD_SEND, d, 0, None, 0))
    os.close(d)
# process_vm: the local vector first, nothing to copy is 0 before the pid.
buf = ctypes.create_string_buffer(16)
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
good = Iov(ctypes.addressof(buf), 16)
neg = Iov(ctypes.addressof(buf), (1 << 64) - 1)
zero = Iov(ctypes.addressof(buf), 0)
L = ctypes.c_long
for nr, nm in ((VMR, "readv"), (311, "writev")):
    t("vm %s local negative" % nm,
      lambda: sysc(nr, L(live), ctypes.byref(neg), L(1), ctypes.byref(good), L(1), L(0)))
    t("vm %s remote negative" % nm,
      lambda: sysc(nr, L(live), ctypes.byref(good), L(1), ctypes.byref(neg), L(1), L(0)))
    t("vm %s empty pid 0" % nm,
      lambda: sysc(nr, L(0), ctypes.byref(zero), L(1), ctypes.byref(good), L(1), L(0)))
    t("vm %s empty remote pid -5" % nm,
      lambda: sysc(nr, L(-5), ctypes.byref(good), L(1), ctypes.byref(zero), L(1), L(0)))
    t("vm %s no local pid 0" % nm,
      lambda: sysc(nr, L(0), None, L(0), ctypes.byref(good), L(1), L(0)))
    t("vm %s local fault" % nm,
      lambda: sysc(nr, L(live), ctypes.c_void_p(8), L(1), ctypes.byref(good), L(1), L(0)))
    t("vm %s pid 0" % nm,
      lambda: sysc(nr, L(0), ctypes.byref(good), L(1), ctypes.byref(good), L(1), L(0)))
os.kill(live, 9)
os.waitpid(live, 0)
os.waitpid(z, 0)
'''


@test
def errno_parity_signal_checks_before_the_target(t):
    """pidfd_send_signal, rt_sigqueueinfo and rt_tgsigqueueinfo check their
    flags and siginfo (EFAULT, a signal that differs, a code only the
    target may claim) before the target, and a zombie takes a signal only
    past those checks; signal 0 with a siginfo checks it; a directory
    below a process's in /proc is no pidfd (EBADF); process_vm_readv and
    writev check the local vector first and answer 0 for nothing to copy
    before looking at the pid. Each answered otherwise before (0 for a
    zombie, EFAULT for a negative length, ESRCH for pid 0; found by a
    differential probing session)."""
    nat, cor, res = parity(t, SIGNAL_ORDER, name="sigorder", want={
        "pidfd zombie SI_USER": "EPERM",
        "sigqueue zombie fault": "EFAULT",
        "pidfd dir /proc/L/fd": "EBADF",
        "vm readv local negative": "EINVAL",
        "vm readv empty pid 0": "ok"})


# ---- an empty range outside user space: EFAULT, as access_ok answers ----

EMPTY_RANGES = r'''
import socket
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class Msg(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.c_void_p), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
L = ctypes.c_long
r0 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r0.bind(("127.0.0.1", 0))
r0.setblocking(False)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(r0.getsockname())
kv = Iov(0xffff888000000000, 0)
ok = Iov(None, 0)
for name, iov in (("kernel", kv), ("null", ok)):
    m = Msg(None, 0, ctypes.addressof(iov), 1, None, 0, 0)
    t("sendmsg empty %s" % name, lambda: sysc(46, L(s.fileno()), ctypes.byref(m), L(0)))
    t("sendto empty %s" % name, lambda: sysc(44, L(s.fileno()),
      ctypes.c_void_p(iov.base), L(0), L(0), None, L(0)))
    try:
        print("received", len(r0.recv(16)))
    except BlockingIOError:
        print("received nothing")
    try:
        print("received", len(r0.recv(16)))
    except BlockingIOError:
        print("received nothing")
buf = ctypes.create_string_buffer(16)
good = Iov(ctypes.addressof(buf), 16)
t("vm readv local empty kernel", lambda: sysc(310, L(os.getpid()),
  ctypes.byref(kv), L(1), ctypes.byref(good), L(1), L(0)))
'''


@test
def errno_parity_empty_ranges_outside_user_space(t):
    """A zero-length iovec or buffer whose base is a kernel address is
    EFAULT for sendmsg, sendto and process_vm_readv's own side, as the
    kernel's access_ok answers, and nothing is sent; corral skipped the
    check for empty ranges and sent an empty datagram (found by a probing
    session)."""
    parity(t, EMPTY_RANGES, name="emptyranges", want={
        "sendmsg empty kernel": "EFAULT", "sendto empty kernel": "EFAULT",
        "vm readv local empty kernel": "EFAULT"})


# ---- an address of another family than the socket's ----

FAMILIES = r'''
import socket, struct
def sa(fam, size=16):
    return ctypes.create_string_buffer(struct.pack("H", fam) + bytes(size - 2), size)
L = ctypes.c_long
def call(nr, fd, buf):
    if nr == 44:   # sendto
        return sysc(44, L(fd), b"x", L(1), L(0), buf, L(len(buf)))
    return sysc(nr, L(fd), buf, L(len(buf)))
socks = {"tcp": (socket.AF_INET, socket.SOCK_STREAM),
         "udp": (socket.AF_INET, socket.SOCK_DGRAM),
         "tcp6": (socket.AF_INET6, socket.SOCK_STREAM),
         "unix dgram": (socket.AF_UNIX, socket.SOCK_DGRAM),
         "unix stream": (socket.AF_UNIX, socket.SOCK_STREAM)}
addrs = {"family 5": sa(5), "AF_PACKET": sa(17, 20),
         "AF_UNIX": sa(1, 20), "AF_INET": sa(2), "AF_INET short": sa(2, 8),
         "family 5 short": sa(5, 8)}
for sname, (f, ty) in socks.items():
    for aname, buf in addrs.items():
        own = {socket.AF_UNIX: "AF_UNIX", socket.AF_INET: "AF_INET",
               socket.AF_INET6: "AF_INET"}[f]
        if aname.startswith(own):
            continue        # its own family (an IPv6 socket's IPv4
                            # addresses: docs/network.md): other tests
        for nr, cname in ((42, "connect"), (49, "bind"), (44, "sendto")):
            if cname == "sendto" and ty == socket.SOCK_STREAM:
                continue
            s = socket.socket(f, ty)
            t("%s(%s, %s)" % (cname, sname, aname),
              lambda: call(nr, s.fileno(), buf))
            s.close()
# AF_UNSPEC: taken for AF_INET by an IPv4 socket's bind (the wildcard
# only) and send; EINVAL for a unix socket.
def unspec(ip, port=0, size=16):
    return ctypes.create_string_buffer(struct.pack("HH4s", 0, socket.htons(port),
                                       socket.inet_aton(ip)) + bytes(size - 8), size)
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
t("bind(tcp, AF_UNSPEC 0.0.0.0)", lambda: call(49, s.fileno(), unspec("0.0.0.0")))
s.close()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
t("bind(tcp, AF_UNSPEC 127.0.0.1)", lambda: call(49, s.fileno(), unspec("127.0.0.1")))
t("bind(tcp, AF_UNSPEC short)", lambda: call(49, s.fileno(), unspec("0.0.0.0", 0, 8)))
s.close()
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.bind(("127.0.0.1", 0))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t("sendto(udp, AF_UNSPEC to the run's own port)",
  lambda: call(44, s.fileno(), unspec("127.0.0.1", r.getsockname()[1])))
r.settimeout(2)
print("received", r.recv(16))
s.close()
r.close()
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
t("bind(unix dgram, AF_UNSPEC)", lambda: call(49, s.fileno(), unspec("0.0.0.0")))
s.close()
# The address length is an int to the kernel: its upper half is not read.
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t("connect(udp, family 5, length's upper half set)",
  lambda: sysc(42, L(s.fileno()), sa(5), L(16 | (1 << 40))))
t("sendto(udp, family 5, length's upper half set)",
  lambda: sysc(44, L(s.fileno()), b"x", L(1), L(0), sa(5), L(16 | (1 << 40))))
'''


@test
def errno_parity_addresses_of_another_family(t):
    """An address whose family is not the socket's answers as the kernel
    does by the socket's protocol (internet sockets EAFNOSUPPORT, or
    EINVAL when shorter than their own address; unix sockets EINVAL),
    with no denial recorded: corral answered EACCES and recorded "this
    address family is not allowed", or gave a unix socket the internet
    answer (found by a probing session)."""
    nat, cor, res = parity(t, FAMILIES, name="families", want={
        "connect(tcp, family 5)": "EAFNOSUPPORT",
        "sendto(unix dgram, AF_INET)": "EINVAL"})
    eq([d for d in res.get("denials", [])
        if "address family" in d.get("reason", "")], [],
       "no denial for another family")


V4_ON_V6 = r'''
import socket, struct
L = ctypes.c_long
def sin(port, n=16):
    raw = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(port),
                      socket.inet_aton("127.0.0.1"))
    return ctypes.create_string_buffer(raw + b"\0" * 16, 32), L(n)
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.bind(("127.0.0.1", 0))
r.settimeout(5)
port = r.getsockname()[1]
def heard():
    data, (ip, _) = r.recvfrom(16)
    print("heard", data, "from", ip)
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
b, n = sin(port)
t("v6 udp sendto AF_INET", lambda: sysc(44, L(s6.fileno()), b"a", L(1), L(0), b, n))
heard()
b, n = sin(port, 8)
t("v6 udp sendto AF_INET, 8 bytes", lambda: sysc(44, L(s6.fileno()), b"b", L(1), L(0), b, n))
o6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
o6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
b, n = sin(port, 8)
t("v6only udp sendto AF_INET, 8 bytes", lambda: sysc(44, L(o6.fileno()), b"c", L(1), L(0), b, n))
t("v6only udp connect AF_INET, 8 bytes", lambda: sysc(42, L(o6.fileno()), b, n))
c6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
b, n = sin(port)
t("v6 udp connect AF_INET", lambda: sysc(42, L(c6.fileno()), b, n))
print("peer", c6.getpeername()[0], c6.getpeername()[1] == port)
c6.send(b"d")
heard()
t6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
b, n = sin(port)
t("v6 tcp connect AF_INET", lambda: sysc(42, L(t6.fileno()), b, n))
b, n = sin(port, 28)
t("v6 tcp connect AF_INET, 28 bytes", lambda: sysc(42, L(t6.fileno()), b, n))
b, n = sin(0)
t("v6 udp sendto AF_INET port 0", lambda: sysc(44, L(s6.fileno()), b"z", L(1), L(0), b, n))
v4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t("v4 udp sendto port 0", lambda: v4.sendto(b"z", ("127.0.0.1", 0)))
gone = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
gone.bind(("127.0.0.1", 0))
closed = gone.getsockname()[1]
gone.close()
for p, what in ((53, "dns"), (closed, "a closed port")):
    for form in ("AF_INET", "mapped"):
        u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        if form == "AF_INET":
            b, n = sin(p)
            t("send to %s (%s)" % (what, form), lambda: sysc(44, L(u.fileno()), b"e", L(1), L(0), b, n))
            t("then connect (%s)" % form, lambda: sysc(42, L(u.fileno()), b, n))
        else:
            t("send to %s (%s)" % (what, form), lambda: u.sendto(b"e", ("::ffff:127.0.0.1", p)))
            t("then connect (%s)" % form, lambda: u.connect(("::ffff:127.0.0.1", p)))
        u.close()
'''


@test
def errno_parity_ipv4_addresses_on_ipv6_sockets(t):
    """An IPv4 address given to an IPv6 UDP socket goes to the IPv4 code
    in the kernel: the datagram arrives, a connect is made (getpeername
    then names the mapped address); short, it is EINVAL; on a V6ONLY
    socket ENETUNREACH (send) and EAFNOSUPPORT (connect). TCP refuses it
    by the IPv6 address's length. corral refused every one EAFNOSUPPORT
    (found by a probing session). A connect after a send to the DNS port
    or a closed port, in either form, is made as natively (corral's own
    bind of the socket made it V6ONLY, and a second source asked of a
    member failed: EAFNOSUPPORT, ECONNREFUSED; found by the next one)."""
    parity(t, V4_ON_V6, name="v4on6", want={
        "v6 udp sendto AF_INET": "ok",
        "v6 udp sendto AF_INET, 8 bytes": "EINVAL",
        "v6only udp sendto AF_INET, 8 bytes": "ENETUNREACH",
        "v6only udp connect AF_INET, 8 bytes": "EAFNOSUPPORT",
        "v6 udp connect AF_INET": "ok",
        "v6 tcp connect AF_INET": "EINVAL",
        "v6 tcp connect AF_INET, 28 bytes": "EAFNOSUPPORT",
        "then connect (AF_INET)": "ok", "then connect (mapped)": "ok",
        "v4 udp sendto port 0": "EINVAL"})


SEND_NAMES = r'''
import socket, struct
L = ctypes.c_long
def buf(raw, n=256):
    return ctypes.create_string_buffer(raw + b"\0" * (n - len(raw)), n)
def sendto(s, data, raw, n, flags=0):
    return lambda: sysc(44, L(s.fileno()), data, L(len(data)), L(flags), buf(raw), L(n))
def got(s):
    s.settimeout(5)
    print("  received", s.recv(64))
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
sin = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(1), socket.inet_aton("127.0.0.1"))
t("tcp sendto, a name of 0 bytes", sendto(c, b"t0", sin, 0)); got(a)
t("tcp sendto, a name of 1 byte", sendto(c, b"t1", sin, 1)); got(a)
x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
t("unix stream sendto, 0 bytes", sendto(x, b"u0", b"\1\0", 0)); got(y)
t("unix stream sendto, 1 byte", sendto(x, b"u1", b"\1\0", 1))
x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
t("unix dgram sendto, 0 bytes", sendto(x, b"d0", b"\1\0", 0)); got(y)
t("unix dgram sendto, 1 byte", sendto(x, b"d1", b"\1\0", 1))
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(("127.0.0.1", 0))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
to = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(r.getsockname()[1]), socket.inet_aton("127.0.0.1"))
t("udp sendto, 0 bytes", sendto(u, b"n0", to, 0))
t("udp6 sendto, 1 byte", sendto(socket.socket(socket.AF_INET6, socket.SOCK_DGRAM), b"n1", b"\x0a", 1))
t("udp sendto, flag bit 31", sendto(u, b"f31", to, 16, 0x80000000)); got(r)
class MsgHdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.c_void_p), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_char_p), ("len", ctypes.c_size_t)]
name = buf(to, 256)
iov = IoVec(b"m129", 4)
h = MsgHdr(ctypes.cast(name, ctypes.c_void_p), 129, ctypes.cast(ctypes.pointer(iov), ctypes.c_void_p), 1, None, 0, 0)
t("udp sendmsg, a name of 129 bytes", lambda: sysc(46, L(u.fileno()), ctypes.byref(h), L(0))); got(r)
sx, sy = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
t("unix stream sendmsg, a name and flag bit 31", lambda: sysc(46, L(sx.fileno()), ctypes.byref(h), L(0x80000000)))
'''


@test
def errno_parity_send_names_of_odd_lengths(t):
    """The name a send gives, as the kernel takes it: sendto's of 0 or 1
    bytes is the protocol's to answer (TCP ignores it and sends; a unix
    stream socket sends for none, EISCONN for one byte; a unix datagram
    socket sends to its peer for none; UDP EINVAL); sendmsg's longer than
    a sockaddr_storage is cut to it; sendto ignores MSG_CMSG_COMPAT. corral
    answered EINVAL to each and sent nothing (found by a differential
    probing session)."""
    parity(t, SEND_NAMES, name="sendnames", want={
        "tcp sendto, a name of 0 bytes": "ok",
        "tcp sendto, a name of 1 byte": "ok",
        "unix stream sendto, 0 bytes": "ok",
        "unix stream sendto, 1 byte": "EISCONN",
        "unix dgram sendto, 0 bytes": "ok",
        "unix dgram sendto, 1 byte": "EINVAL",
        "udp sendto, 0 bytes": "EINVAL",
        "udp sendto, flag bit 31": "ok",
        "udp sendmsg, a name of 129 bytes": "ok",
        "unix stream sendmsg, a name and flag bit 31": "EINVAL"})


SOCKET_ORDERS = r'''
import socket, struct, select
L = ctypes.c_long
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(4)
gone = socket.socket(); gone.bind(("127.0.0.1", 0)); free = gone.getsockname()[1]; gone.close()
t("connect of a listening socket", lambda: l.connect(("127.0.0.1", free)))
a = socket.socket(socket.AF_UNIX); a.bind(b"\0parity-orders-%d" % os.getpid())
t("abstract bind again, the same name", lambda: a.bind(b"\0parity-orders-%d" % os.getpid()))
v6 = socket.socket(socket.AF_INET6)
sin = struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("127.0.0.1"))
t("v6 bind of an IPv4 address", lambda: sysc(49, L(v6.fileno()), ctypes.create_string_buffer(sin, 16), L(16)))
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(("127.0.0.1", 0))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t("udp SCM_RIGHTS of a closed fd", lambda: u.sendmsg([b"r"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", 999))], 0, r.getsockname()))
c = socket.create_connection(l.getsockname())
buf = ctypes.create_string_buffer(128)
t("accept, an address without a length", lambda: sysc(43, L(l.fileno()), buf, None))
print("queued after", select.select([l], [], [], 0.2)[0] != [])
n = ctypes.c_int(128)
t("getsockname into an unwritable address", lambda: sysc(51, L(l.fileno()), L(8), ctypes.byref(n)))
print("length after", n.value)
'''


@test
def errno_parity_socket_checks_in_the_kernels_order(t):
    """Socket calls corral performs answer in the kernel's order: a
    listening socket's connect EISCONN before the address; an abstract
    socket bound again EINVAL before the name; an IPv6 bind of a 16-byte
    IPv4 address EINVAL; SCM_RIGHTS on an internet socket unread (sent);
    accept's length read after the connection is taken (lost on EFAULT);
    the length written before the address. corral answered ECONNREFUSED
    (recorded), EADDRINUSE, EAFNOSUPPORT, EBADF, handed the connection
    over, and left the length (found by a differential probing session)."""
    parity(t, SOCKET_ORDERS, name="orders", want={
        "connect of a listening socket": "EISCONN",
        "abstract bind again, the same name": "EINVAL",
        "v6 bind of an IPv4 address": "EINVAL",
        "udp SCM_RIGHTS of a closed fd": "ok",
        "accept, an address without a length": "EFAULT",
        "getsockname into an unwritable address": "EFAULT"})


WAIT_SIGNAL = r'''
import signal, socket, struct
L = ctypes.c_long
l = socket.socket(socket.AF_UNIX); l.bind("full.sock"); l.listen(0)
first = socket.socket(socket.AF_UNIX); first.setblocking(False)
first.connect("full.sock")
c = socket.socket(socket.AF_UNIX)
c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 2, 0))
def _alarm(*a):
    raise OSError(errno.EINTR, "alarm")
signal.signal(signal.SIGALRM, _alarm)
signal.siginterrupt(signal.SIGALRM, False)     # SA_RESTART
signal.setitimer(signal.ITIMER_REAL, 0.3)
name = b"\1\0full.sock\0"
t("a waiting unix connect with a send timeout, a restarting signal",
  lambda: sysc(42, L(c.fileno()), ctypes.create_string_buffer(name, 12), L(12)))
'''


@test
def errno_parity_waiting_connect_with_a_timeout_is_interrupted(t):
    """The kernel never restarts a socket call that has a timeout: a
    blocking unix connect waiting for room with SO_SNDTIMEO, hit by a
    SA_RESTART signal, ends EINTR. corral's wait asked its timer for the
    timeout instead of the socket, restarted the call and answered EAGAIN
    seconds later (found by a probing session)."""
    parity(t, WAIT_SIGNAL, name="waitsig", want={
        "a waiting unix connect with a send timeout, a restarting signal":
            "EINTR"})


@test(supervisor_only=True)
def errno_parity_lock_wait_is_interrupted(t):
    """alarm() around a blocking lock that another process holds: natively
    the signal ends the wait (EINTR; Python's handler raises). Each of
    F_SETLKW and F_OFD_SETLKW is continued into the kernel's own wait, and
    an earlier build made every interrupted notified call wait again: the
    handler ran, the call went back to waiting, and the run hung until the
    lock was freed (found by a differential probing session). Here the
    holder frees it only after both attempts: an uninterrupted wait never
    ends."""
    body = r'''
import fcntl, signal, struct
fd = os.open("lockfile", os.O_RDWR | os.O_CREAT, 0o600)
r, w = os.pipe()
r2, w2 = os.pipe()
holder = os.fork()
if holder == 0:
    fcntl.lockf(fd, fcntl.LOCK_EX)
    os.write(w, b"x")
    os.read(r2, 1)
    os._exit(0)
os.read(r, 1)

class Timeout(Exception):
    pass

def on_alarm(s, f):
    raise Timeout()

signal.signal(signal.SIGALRM, on_alarm)
F_OFD_SETLKW = 38
for what in ("posix", "ofd"):
    signal.alarm(1)
    try:
        if what == "posix":
            fcntl.lockf(fd, fcntl.LOCK_EX)
        else:
            fcntl.fcntl(fd, F_OFD_SETLKW,
                        struct.pack("hhqqii", fcntl.F_WRLCK, 0, 0, 0, 0, 0))
        print(what, "acquired")
    except Timeout:
        print(what, "interrupted")
    signal.alarm(0)
os.write(w2, b"x")
os.waitpid(holder, 0)
'''
    parity(t, body, name="lockwait",
           extra=["--limit", "wall=20s"],
           want={"posix": "interrupted", "ofd": "interrupted"})


@test
def errno_parity_xattr_arguments_links_and_memfds(t):
    """Found by a differential probing session, each answered otherwise
    by an earlier build: a set's flags, an empty name and an unreadable
    value are judged before the path (EINVAL, ERANGE, EFAULT, not the
    path's ENOENT or EACCES); a symbolic link's attributes answer by
    their namespace (EOPNOTSUPP for ACLs and unknown prefixes); a
    memfd's attribute reads see what fsetxattr stored (they were hidden
    as a path outside the roots); a watch of IN_DONT_FOLLOW alone is a
    watch (it was EINVAL); F_SETOWN of INT_MIN is EINVAL (it was
    ESRCH)."""
    body = r'''
import fcntl
open("f", "w").close()
os.symlink("f", "lnk")
v = b"1"
buf = ctypes.create_string_buffer(256)
for path in (b"missing", b"f"):
    p = path.decode()
    t("set-badflags " + p, lambda: sysc(188, path, b"user.a", v, 1, 4))
    t("set-emptyname " + p, lambda: sysc(188, path, b"", v, 1, 0))
    t("set-nullvalue " + p, lambda: sysc(188, path, b"user.a", None, 1, 0))
    t("get-emptyname " + p, lambda: sysc(191, path, b"", buf, 256))
    t("remove-emptyname " + p, lambda: sysc(197, path, b""))
for name in (b"user.a", b"trusted.a", b"system.posix_acl_access",
             b"system.x", b"noprefix"):
    k = name.decode()
    t("lset " + k, lambda: sysc(189, b"lnk", name, v, 1, 0))
    t("lget " + k, lambda: sysc(192, b"lnk", name, buf, 256))
    t("lremove " + k, lambda: sysc(198, b"lnk", name))
t("llist", lambda: sysc(195, b"lnk", buf, 256))
r_, w_ = os.pipe()
for lnk in (b"/proc/self", b"/proc/self/fd/%d" % r_, b"lnk"):
    for name in (b"security.a", b"user.a", b"trusted.a"):
        k = "%s %s" % (lnk.decode().replace(str(r_), "P"), name.decode())
        t("lget " + k, lambda: sysc(192, lnk, name, buf, 256))
        t("lset " + k, lambda: sysc(189, lnk, name, v, 1, 0))
        t("lremove " + k, lambda: sysc(198, lnk, name))
    t("llist " + lnk.decode().replace(str(r_), "P"),
      lambda: sysc(195, lnk, buf, 256))
for val in (b"v", b"\x00\x00\x00\x02" + b"\x00" * 16, b"\x00" * 12):
    t("lset lnk security.capability %d" % len(val),
      lambda: sysc(189, b"lnk", b"security.capability", val, len(val), 0))
m = os.memfd_create("x")
t("fset memfd", lambda: os.setxattr(m, "user.h", b"1"))
t("fget memfd", lambda: print("fget memfd value", os.getxattr(m, "user.h")))
t("flist memfd", lambda: print("flist memfd names", os.listxattr(m)))
ifd = libc.inotify_init1(0)
wd1 = libc.inotify_add_watch(ifd, b".", 0x2)
wd2 = libc.inotify_add_watch(ifd, b".", 0x02000000)
print("dontfollow alone", "same watch" if wd2 == wd1 and wd1 >= 0 else
      (wd1, wd2, ctypes.get_errno()))
fd = os.open("f", os.O_RDONLY)
t("setown intmin", lambda: fcntl.fcntl(fd, fcntl.F_SETOWN, -2**31))
'''
    parity(t, body, name="xattrargs",
           want={"set-badflags missing": "EINVAL",
                 "set-emptyname missing": "ERANGE",
                 "set-nullvalue missing": "EFAULT",
                 "lget system.posix_acl_access": "ENOTSUP",
                 "lset system.posix_acl_access": "EINVAL",
                 "lset noprefix": "ENOTSUP",
                 "dontfollow alone": "same watch",
                 "setown intmin": "EINVAL"})


@test
def errno_parity_clock_queries(t):
    """The clock's NTP state is readable by any user (adjtimex and
    clock_adjtime with modes 0: glibc's ntp_gettime, `adjtimex -p`); an
    earlier build refused the queries with EPERM (found by a differential
    probing session). Setting it stays refused (EPERM, as the kernel
    answers a user without CAP_SYS_TIME), and other clocks answer as
    the kernel's (EOPNOTSUPP, EINVAL); so does clock_settime, which
    answered EPERM to every id (~4194303 << 3 is the CPU clock of a free
    pid: EINVAL; corral answers a process outside the run the same)."""
    body = r'''
class Timex(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("rest", ctypes.c_char * 204)]
for clk in (None, 0, 1, 4, 10, 11, 12, 99, -2):
    x = Timex()
    if clk is None:
        t("adjtimex query", lambda: sysc(159, ctypes.byref(x)))
    else:
        t("clock_adjtime %d query" % clk,
          lambda: sysc(305, clk, ctypes.byref(x)))
x = Timex(modes=0x2)   # ADJ_FREQUENCY
t("adjtimex set", lambda: sysc(159, ctypes.byref(x)))
t("adjtimex fault", lambda: sysc(159, ctypes.c_void_p(8)))
for m in (0xa001, 0xe001, 0xa003, 0x8000, 0x8001, 0x2000):
    x = Timex(modes=m)
    t("adjtimex mode %#x" % m, lambda: sysc(159, ctypes.byref(x)))
libc.mmap.restype = ctypes.c_void_p
page = libc.mmap(None, 4096, 1, 0x22, -1, 0)   # PROT_READ, private anon
t("adjtimex readonly query", lambda: sysc(159, ctypes.c_void_p(page)))
# clock_adjtime writes back only on success: an error on a read-only
# structure is the error, not EFAULT (glibc's adjtimex is this call).
page2 = libc.mmap(None, 4096, 3, 0x22, -1, 0)   # read-write, then read-only
ctypes.c_uint.from_address(page2).value = 0x2    # ADJ_FREQUENCY
libc.mprotect(ctypes.c_void_p(page2), 4096, 1)
t("clock_adjtime readonly set", lambda: sysc(305, 0, ctypes.c_void_p(page2)))
t("clock_adjtime readonly query", lambda: sysc(305, 0, ctypes.c_void_p(page)))
# A read-only adjtime query with other bits: ADJ_SETOFFSET is still EPERM,
# an overflowing ADJ_FREQUENCY EINVAL, any other bit ignored.
class Timex2(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("pad", ctypes.c_uint),
                ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("rest", ctypes.c_char * 184)]
for m, f in ((0xa101, 0), (0xa003, 2**62), (0xa003, 1000), (0xa005, 0)):
    x = Timex2(modes=m, freq=f)
    t("adjtimex mode %#x freq %d" % (m, f), lambda: sysc(159, ctypes.byref(x)))
    x = Timex2(modes=m, freq=f)
    t("clock_adjtime mode %#x freq %d" % (m, f),
      lambda: sysc(305, 0, ctypes.byref(x)))
t("clock_adjtime fd clock", lambda: sysc(305, (~0 << 3) | 3,
                                         ctypes.byref(Timex())))
class Ts(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
good, bad = Ts(1000, 0), Ts(0, 2000000000)
for clk in (0, 1, 10, 99, -1, -2, -3, ~4194303 << 3):
    t("clock_settime %d" % clk, lambda: sysc(227, clk, ctypes.byref(good)))
t("clock_settime 0 null", lambda: sysc(227, 0, None))
t("clock_settime 0 badns", lambda: sysc(227, 0, ctypes.byref(bad)))
# The realtime clock's last settable second, and one past it; every
# negative id reads the time before it is looked up (EFAULT first).
for sec in (8277292035, 8277292036):
    late = Ts(sec, 0)
    t("clock_settime 0 sec %d" % sec, lambda: sysc(227, 0, ctypes.byref(late)))
for clk in (-6, -2, -1, -29, 1):
    t("clock_settime %d null" % clk, lambda: sysc(227, clk, None))
# CPU clocks of a child, of a thread of the caller's process: a thread
# clock names only a thread of the caller's process, a process clock only
# a process (a leader's pid).
import threading, time
child = os.fork()
if child == 0:
    time.sleep(5)
    os._exit(0)
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
def cpuclk(p, thread):
    return ((~p) << 3) | (4 if thread else 0) | 2
for label, p, thr in (("child process", child, False),
                      ("child thread", child, True),
                      ("own thread", th.native_id, True),
                      ("own thread as process", th.native_id, False)):
    t("clock_settime %s" % label,
      lambda: sysc(227, cpuclk(p, thr), ctypes.byref(good)))
ev.set()
th.join()
os.kill(child, 9)
os.waitpid(child, 0)
'''
    nat, cor, res = parity(t, body, name="clockq",
                           want={"adjtimex set": "EPERM",
                                 "clock_adjtime 1 query": "ENOTSUP",
                                 "clock_adjtime 99 query": "EINVAL",
                                 "clock_settime 1": "EINVAL",
                                 "clock_settime 0": "EPERM",
                                 "clock_settime 0 null": "EFAULT",
                                 "clock_settime 0 sec 8277292035": "EPERM",
                                 "clock_settime 0 sec 8277292036": "EINVAL",
                                 "clock_settime -6 null": "EFAULT",
                                 "clock_settime -1 null": "EFAULT",
                                 "clock_settime -29 null": "EFAULT",
                                 "clock_settime 1 null": "EINVAL",
                                 "clock_settime child process": "EPERM",
                                 "clock_settime child thread": "EINVAL",
                                 "clock_settime own thread": "EPERM",
                                 "clock_settime own thread as process": "EINVAL",
                                 "adjtimex mode 0xe001": "ok",
                                 "adjtimex mode 0x8000": "EINVAL",
                                 "adjtimex readonly query": "EFAULT",
                                 "clock_adjtime readonly set": "EPERM",
                                 "clock_adjtime readonly query": "EFAULT",
                                 "adjtimex mode 0xa101 freq 0": "EPERM",
                                 "clock_adjtime mode 0xa003 freq %d" % 2**62: "EINVAL",
                                 "clock_adjtime mode 0xa003 freq 1000": "ok",
                                 "adjtimex mode 0xa005 freq 0": "ok"})
    contains(nat, "adjtimex query ok", "native: the query answers")


UTIMENS_ORDER = r'''
class Ts(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
bad = (Ts * 2)(Ts(1, 1000000000), Ts(1, 0))
good = (Ts * 2)(Ts(1, 5), Ts(1, 0))
neg = (Ts * 2)(Ts(1, 0), Ts(1, -5))
with open("mine", "w") as f:
    f.write("x")
for p in ("/etc/passwd", "/", "/usr/bin", "mine", "nosuch", "/etc/nosuch"):
    for label, ts in (("bad", bad), ("neg", neg), ("good", good)):
        t("utimensat %s %s" % (label, p),
          lambda: sysc(280, -100, p.encode(), ctypes.byref(ts), 0))
fd = os.open("/etc/passwd", os.O_RDONLY)
t("futimens bad /etc/passwd", lambda: sysc(280, fd, None, ctypes.byref(bad), 0))
t("futimens good /etc/passwd", lambda: sysc(280, fd, None, ctypes.byref(good), 0))
t("utimensat cwd null empty", lambda: sysc(280, -100, None, None, 0x1000))
t("utimensat cwd null", lambda: sysc(280, -100, None, None, 0))
'''


@test
def errno_parity_utimensat_checks_times_before_permission(t):
    """utimensat with nanoseconds out of range: the kernel's vfs_utimes
    finds the object first, then answers EINVAL before any permission
    check; corral answered EPERM or EACCES for objects in a read-only
    root (and for the fd form), and EBADF for a NULL path at AT_FDCWD
    with AT_EMPTY_PATH, where the kernel says EFAULT (found by a
    differential probing session)."""
    parity(t, UTIMENS_ORDER, name="utimens",
           want={"utimensat bad /etc/passwd": "EINVAL",
                 "utimensat neg /usr/bin": "EINVAL",
                 "utimensat good /etc/passwd": "EPERM",
                 "utimensat bad nosuch": "ENOENT",
                 "futimens bad /etc/passwd": "EINVAL",
                 "utimensat cwd null empty": "EFAULT"})


EXECVEAT_FLAGS = r'''
argv = (ctypes.c_char_p * 2)(b"true", None)
for fl in (0x2, 0x400, 0x80000000, 0x1002):
    for p in (b"/bin/true", b"/usr/bin/true", b"nosuch", b"/etc/nosuch",
              b"/etc/passwd", b""):
        t("execveat %#x %r" % (fl, p),
          lambda: sysc(322, -100, p, argv, None, fl))
    t("execveat %#x fault" % fl, lambda: sysc(322, -100, ctypes.c_void_p(8),
                                               argv, None, fl))
'''


@test
def errno_parity_execveat_unknown_flag_first(t):
    """execveat with a flag the kernel does not know: EINVAL before any
    lookup (after the name's own EFAULT, and ENOENT for an empty name
    without AT_EMPTY_PATH); corral looked the path up first and answered
    ENOENT, EACCES or ELOOP (found by a differential probing session).
    Nothing is executed: every case fails natively too."""
    parity(t, EXECVEAT_FLAGS, name="execveat",
           want={"execveat 0x2 b'/bin/true'": "EINVAL",
                 "execveat 0x2 b'nosuch'": "EINVAL",
                 "execveat 0x2 b''": "ENOENT",
                 "execveat 0x1002 b''": "EINVAL",
                 "execveat 0x2 fault": "EFAULT"})


SLASH_CREATE = r'''
root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
etc = os.open("/etc", os.O_RDONLY | os.O_DIRECTORY)
for dname, d in (("/", root), ("/etc", etc), ("cwd", -100)):
    for name in (b"nosuchf/", b"nosuchf"):
        if dname == "cwd":
            name = b"/usr/" + name
        t("open-creat %s %r" % (dname, name),
          lambda: os.close(sysc(257, d, name, os.O_CREAT | os.O_WRONLY, 0o644)))
        t("mknod-fifo %s %r" % (dname, name),
          lambda: sysc(259, d, name, 0o10644, 0))
        t("symlink %s %r" % (dname, name), lambda: sysc(266, b"x", d, name))
        t("mkdir %s %r" % (dname, name), lambda: sysc(258, d, name, 0o755))
'''


@test
def errno_parity_trailing_slash_creation_before_permission(t):
    """Creating "x/" in a directory the program sees but may not write:
    the kernel answers before permission, open with O_CREAT EISDIR,
    mknod and symlink ENOENT (a name ending in '/' is a directory's);
    mkdir EACCES as for "x". corral answered EACCES to all (found by a
    differential probing session)."""
    parity(t, SLASH_CREATE, name="slashcreate",
           want={"open-creat / b'nosuchf/'": "EISDIR",
                 "mknod-fifo /etc b'nosuchf/'": "ENOENT",
                 "symlink / b'nosuchf/'": "ENOENT",
                 "mkdir / b'nosuchf/'": "EACCES",
                 "open-creat / b'nosuchf'": "EACCES"})


SOCKET_ORDER = r'''
import socket, struct
c = ctypes.c_char_p
def call(fn, *a):
    r = fn(*a)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
sin = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(9),
                  socket.inet_aton("127.0.0.1"))
d = os.open(".", os.O_RDONLY)
closed = 777
L = ctypes.c_int(0)
t("bind closed len200", lambda: call(libc.bind, closed, sin, 200))
t("bind file len1", lambda: call(libc.bind, d, sin, 1))
t("connect closed null", lambda: call(libc.connect, closed, None, 16))
t("connect file len1", lambda: call(libc.connect, d, sin, 1))
t("connect file null", lambda: call(libc.connect, d, None, 16))
t("sendto file len-1", lambda: call(libc.sendto, d, b"x", 1, 0, sin, -1))
t("sendmsg closed fault", lambda: call(libc.sendmsg, closed, ctypes.c_void_p(8), 0))
t("getsockname closed null", lambda: call(libc.getsockname, -1, None, None))
t("accept4 closed badflag", lambda: call(libc.accept4, closed, None, None, 1))
t("accept4 file badflag", lambda: call(libc.accept4, d, None, None, 1))
t("setsockopt file null", lambda: call(libc.setsockopt, d, 1, 2, None, 4))
t("setsockopt file len-1", lambda: call(libc.setsockopt, d, 1, 2, ctypes.byref(L), -1))
t("getsockopt closed null", lambda: call(libc.getsockopt, closed, 1, 2, None, None))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
t("getpeername unconnected nulllen",
  lambda: call(libc.getpeername, s6.fileno(), ctypes.create_string_buffer(64), None))
u = socket.socketpair()
t("setsockopt unix ip null", lambda: call(libc.setsockopt, u[0].fileno(), 0, 2, None, 4))
t("setsockopt unix zerocopy", lambda: call(libc.setsockopt, u[0].fileno(), 1, 60, ctypes.byref(ctypes.c_int(1)), 4))
t("setsockopt reuseaddr len0", lambda: call(libc.setsockopt, s6.fileno(), 1, 2, ctypes.byref(L), 0))
u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
t("setsockopt ipv6 hops null", lambda: call(libc.setsockopt, u6.fileno(), 41, 16, None, 4))
# A unix name of exactly 108 bytes (no NUL): bound, and reported with 111.
name = b"u" * 108
us = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sun = struct.pack("=H", socket.AF_UNIX) + name
t("bind unix 108", lambda: call(libc.bind, us.fileno(), sun, len(sun)))
buf = ctypes.create_string_buffer(128)
n = ctypes.c_int(128)
t("getsockname unix 108", lambda: call(libc.getsockname, us.fileno(), buf, ctypes.byref(n)))
print("unix 108 len", n.value, buf.raw[2:2 + 108] == name)
os.unlink(name)
# A connected TCP socket asked to connect elsewhere: EISCONN whatever the
# address's family.
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(1)
cl = socket.socket()
cl.connect(lst.getsockname())
t("reconnect tcp unix-address", lambda: call(libc.connect, cl.fileno(), sun, len(sun)))
sin6 = struct.pack("=HHI16sI", socket.AF_INET6, socket.htons(9), 0,
                   socket.inet_pton(socket.AF_INET6, "::1"), 0)
t("reconnect tcp inet6-address", lambda: call(libc.connect, cl.fileno(), sin6, len(sin6)))
# UDP connected to a loopback port nobody of the run holds: the peer as
# the kernel reports it.
for fam, addr, port in ((socket.AF_INET, "0.0.0.0", 9), (socket.AF_INET, "127.0.0.1", 0),
                        (socket.AF_INET6, "::", 9)):
    us = socket.socket(fam, socket.SOCK_DGRAM)
    us.connect((addr, port))
    try:
        print("udp peer", addr, port, us.getpeername()[:2])
    except OSError as e:
        print("udp peer", addr, port, errno.errorcode[e.errno])
'''


@test
def errno_parity_socket_calls_check_the_descriptor_first(t):
    """Socket calls answer the descriptor's EBADF or ENOTSOCK where the
    kernel does, before the address, length or pointer errors corral used
    to answer first (found by a differential probing session, ~1 300
    lines of its output); a NULL IPv6 option value is the kernel's 0; a
    unix name of exactly 108 bytes binds (it was ENAMETOOLONG); a UDP
    socket connected to a closed loopback port reports its peer as the
    kernel does (the program's bytes and length were echoed)."""
    parity(t, SOCKET_ORDER, name="sockorder",
           want={"bind closed len200": "EBADF",
                 "bind file len1": "ENOTSOCK",
                 "connect closed null": "EBADF",
                 "connect file null": "EFAULT",
                 "sendto file len-1": "ENOTSOCK",
                 "accept4 closed badflag": "EBADF",
                 "accept4 file badflag": "EINVAL",
                 "setsockopt file null": "ENOTSOCK",
                 "getpeername unconnected nulllen": "ENOTCONN",
                 "setsockopt unix ip null": "ENOTSUP",
                 "setsockopt ipv6 hops null": "ok",
                 "reconnect tcp unix-address": "EISCONN",
                 "bind unix 108": "ok",
                 "unix 108 len": "111 True",
                 "udp peer 0.0.0.0 9": "('127.0.0.1', 9)",
                 "udp peer 127.0.0.1 0": "ENOTCONN"})


SIGNAL_TYPE_ORDER = r'''
import socket
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
t("kill reaped 65", lambda: sysc(62, pid, 65))
t("tgkill self reaped 65", lambda: sysc(234, os.getpid(), pid, 65))
t("pidfd_open reaped flag1", lambda: sysc(434, pid, 1))
t("kill self 65", lambda: sysc(62, os.getpid(), 65))
t("socket packet badbit", lambda: sysc(41, 17, 2 | 0x100, 0))
t("socket inet type12", lambda: sysc(41, 2, 12, 0))
t("socket family60", lambda: sysc(41, 60, 1, 0))
sv = (ctypes.c_int * 2)()
t("socketpair netlink stream", lambda: sysc(53, 16, 1, 0, sv))
t("socketpair netlink dgram", lambda: sysc(53, 16, 2, 0, sv))
t("socketpair packet badbit", lambda: sysc(53, 17, 2 | 0x100, 0, sv))
t("setpriority pgrp absent", lambda: sysc(141, 1, 4194000, 0))
z = os.fork()
if z == 0:
    os._exit(0)
import time
time.sleep(0.3)        # a zombie: exited, not waited for
t("tkill zombie 65", lambda: sysc(200, z, 65))
t("tgkill zombie 65", lambda: sysc(234, z, z, 65))
t("kill group absent 65", lambda: sysc(62, -4194000, 65))
os.waitpid(z, 0)
'''


@test
def errno_parity_signal_targets_and_socket_types(t):
    """A signal number out of range to a process that is not there is
    ESRCH, as the kernel looks for the target first (corral answered
    EINVAL); pidfd_open's flags come before the target; a socket type
    with an unknown bit is EINVAL for every family, refused ones included
    (was EAFNOSUPPORT); a netlink pair of a type netlink lacks is
    ESOCKTNOSUPPORT; setpriority of a group that is not there looks
    absent (ESRCH, was EPERM). Found by a differential probing session."""
    parity(t, SIGNAL_TYPE_ORDER, name="sigtype",
           want={"kill reaped 65": "ESRCH",
                 "tgkill self reaped 65": "ESRCH",
                 "pidfd_open reaped flag1": "EINVAL",
                 "kill self 65": "EINVAL",
                 "socket packet badbit": "EINVAL",
                 "socket family60": "EAFNOSUPPORT",
                 "socketpair netlink stream": "ESOCKTNOSUPPORT",
                 "setpriority pgrp absent": "ESRCH",
                 "tkill zombie 65": "EINVAL",
                 "kill group absent 65": "ESRCH"})


ARGS_BEFORE_OBJECTS = r'''
import struct
# memfd_create: the flags before the name is read.
t("memfd null badflag", lambda: sysc(319, None, 0x40000000))
# inotify_add_watch: the mask, the instance, then the path (as a
# directory for IN_ONLYDIR), then corral's refusal of devices.
ino = os.open(".", os.O_RDONLY)
i = libc.inotify_init1(0)
t("inotify closed missing", lambda: sysc(254, 777, b"nothere", 2))
t("inotify file missing", lambda: sysc(254, ino, b"nothere", 2))
t("inotify devnull onlydir", lambda: sysc(254, i, b"/dev/null", 2 | 0x01000000))
t("inotify file onlydir", lambda: sysc(254, i, b".probe.py", 2 | 0x01000000))
# utimensat: any time given but "both now" is the owner's to set (EPERM),
# UTIME_OMIT beside UTIME_NOW too.
NOW, OMIT = (1 << 30) - 1, (1 << 30) - 2
ts = struct.pack("=qqqq", 0, NOW, 0, OMIT)
t("utimensat now-omit notmine", lambda: sysc(280, -100, b"/usr/lib/os-release", ts, 0))
t("utimensat now-now notmine", lambda: sysc(280, -100, b"/usr/lib/os-release",
                                            struct.pack("=qqqq", 0, NOW, 0, NOW), 0))
# sendfile: the output's EBADF before the input's seeking, an appending
# output before a zero count, a directory read for nothing, /dev/zero.
p = os.pipe()
os.write(p[1], b"xyz")
with open("g", "w"):
    pass
gro, gapp = os.open("g", os.O_RDONLY), os.open("g", os.O_WRONLY | os.O_APPEND)
gw = os.open("g", os.O_WRONLY)
h, z = os.open("/etc/hostname", os.O_RDONLY), os.open("/dev/zero", os.O_RDONLY)
t("sendfile out-ro in-pipe", lambda: sysc(40, gro, p[0], None, 1))
t("sendfile out-closed in-pipe", lambda: sysc(40, 777, p[0], None, 1))
t("sendfile out-append count0", lambda: sysc(40, gapp, h, None, 0))
t("sendfile in-pipe count0", lambda: sysc(40, gw, p[0], None, 0))
t("sendfile in-dir count0", lambda: sysc(40, gw, ino, None, 0))
t("sendfile in-dir count5", lambda: sysc(40, gw, ino, None, 5))
print("sendfile in-zero", libc.syscall(40, gw, z, None, 5))
'''


@test
def errno_parity_arguments_before_objects(t):
    """The kernel judges a call's own arguments before the objects they
    name, and corral answers in its order: memfd_create's flags before its
    name (was EFAULT), inotify's instance and IN_ONLYDIR before a device's
    refusal (was EACCES), utimensat's {NOW, OMIT} as an owner's change
    (EPERM, was EACCES), sendfile's output before the input's seeking
    (EBADF, was EINVAL) and an appending output before a zero count;
    sendfile reads /dev/zero (was EINVAL). Found by a differential
    probing session."""
    parity(t, ARGS_BEFORE_OBJECTS, name="argsfirst",
           want={"memfd null badflag": "EINVAL",
                 "inotify closed missing": "EBADF",
                 "inotify file missing": "EINVAL",
                 "inotify devnull onlydir": "ENOTDIR",
                 "utimensat now-omit notmine": "EPERM",
                 "utimensat now-now notmine": "EACCES",
                 "sendfile out-ro in-pipe": "EBADF",
                 "sendfile out-closed in-pipe": "EBADF",
                 "sendfile out-append count0": "EINVAL",
                 "sendfile in-pipe count0": "EINVAL",
                 "sendfile in-dir count0": "ok",
                 "sendfile in-zero": "5"})


XATTR_ORDER = r'''
import struct
c = ctypes.c_char_p
def lc(fn, *a):
    r = fn(*a)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
ro = os.open("/usr/lib/os-release", os.O_RDONLY)
t("fsetxattr closed badflag", lambda: lc(libc.fsetxattr, -1, b"user.n", b"v", 1, 4))
t("fgetxattr closed empty", lambda: lc(libc.fgetxattr, -1, b"", None, 0))
t("fsetxattr ro badflag", lambda: lc(libc.fsetxattr, ro, b"user.n", b"v", 1, 4))
t("fsetxattr ro empty", lambda: lc(libc.fsetxattr, ro, b"", b"v", 1, 0))
t("fsetxattr ro trusted", lambda: lc(libc.fsetxattr, ro, b"trusted.n", b"v", 1, 0))
t("fsetxattr ro bad-acl", lambda: lc(libc.fsetxattr, ro, b"system.posix_acl_access", b"abc", 3, 0))
t("setxattr ro bad-acl", lambda: os.setxattr("/usr/lib/os-release", "system.posix_acl_access", b"abc"))
t("removexattr ro security", lambda: os.removexattr("/usr/lib/os-release", "security.t"))
t("removexattr ro default-acl", lambda: os.removexattr("/etc/hostname", "system.posix_acl_default"))
t("setxattr root badns", lambda: os.setxattr("/", "bad.n", b"v"))
t("setxattr tmp badns", lambda: os.setxattr("/tmp", "bad.n", b"v"))
t("getxattr root user.", lambda: os.getxattr("/", "user."))
t("getxattr root badns", lambda: os.getxattr("/", "bad.t"))
t("getxattr root user.x", lambda: os.getxattr("/", "user.x"))
acl = struct.pack("<IHHIHHIHHI", 2, 1, 6, 0xffffffff, 4, 4, 0xffffffff,
                  0x20, 4, 0xffffffff)
t("setxattr ro acl notmine", lambda: os.setxattr("/usr/lib/os-release",
                                                  "system.posix_acl_access", acl))
'''


@test
def errno_parity_xattr_names_and_values_first(t):
    """An attribute call answers its name, value and namespace where the
    kernel does, before write access or corral's refusal: a bad flag or an
    empty name before the fd (was EBADF), an ACL it cannot parse (EINVAL),
    trusted.* and security.* and another's ACL (EPERM), a namespace no
    handler takes
    (EOPNOTSUPP, for a change where write is permitted), a default ACL removed from a file (a no-op, 0), all
    were EACCES or ENODATA on an object outside the writable roots. Found
    by a differential probing session."""
    parity(t, XATTR_ORDER, name="xattrorder",
           want={"fsetxattr closed badflag": "EINVAL",
                 "fgetxattr closed empty": "ERANGE",
                 "fsetxattr ro trusted": "EPERM",
                 "fsetxattr ro bad-acl": "EINVAL",
                 "setxattr ro bad-acl": "EINVAL",
                 "removexattr ro security": "EPERM",
                 "removexattr ro default-acl": "ok",
                 "setxattr root badns": "EACCES",
                 "setxattr tmp badns": "ENOTSUP",
                 "getxattr root user.": "EINVAL",
                 "getxattr root badns": "ENOTSUP",
                 "getxattr root user.x": "ENODATA",
                 "setxattr ro acl notmine": "EPERM"})


LINKS_ACLS_ATIMES = r'''
import struct, time
# A directory linked into one the caller may only search: the
# directory's own permission (EACCES) before "no directory is linked".
os.mkdir("d")
os.mkdir("x111")
os.chmod("x111", 0o111)
t("link dir into x111", lambda: os.link("d", "x111/n"))
os.chmod("x111", 0o755)
# An exchange with a missing name written as a directory: ENOENT first.
open("f", "w").close()
t("exchange onto missing/", lambda: sysc(316, -100, b"f", -100, b"missing/", 2))
# An empty ACL is no ACL: the kernel removes it.
open("af", "w").close()
acl = struct.pack("<IHHIHHIHHIHHIHHI", 2, 1, 6, 0xffffffff, 2, 6, 4242,
                  4, 4, 0xffffffff, 0x10, 6, 0xffffffff, 0x20, 4, 0xffffffff)
t("set acl", lambda: os.setxattr("af", "system.posix_acl_access", acl))
t("set empty acl", lambda: os.setxattr("af", "system.posix_acl_access", b""))
t("acl after", lambda: os.getxattr("af", "system.posix_acl_access"))
# A header of another version: EOPNOTSUPP before the entries are read.
t("acl version 3", lambda: os.setxattr("af", "system.posix_acl_access",
                                       struct.pack("<I", 3)))
t("acl version 3 on a pipe", lambda: libc.fsetxattr(
    os.pipe()[0], b"system.posix_acl_access", struct.pack("<I", 3), 4, 0)
    and (_ for _ in ()).throw(OSError(ctypes.get_errno(), "")))
# A directory's access time, set older than its change: nobody reads it
# while the program waits.
os.mkdir("dd")
for i in range(3):
    open("dd/f%d" % i, "w").close()
os.utime("dd", (1000, os.stat("dd").st_mtime))
open("other", "w").close()
time.sleep(1.5)
print("atime", int(os.stat("dd").st_atime))
# A rename whose one last name is too long: the other name's walk and
# "." come first.
L = "n" * 256
t("rename . to long", lambda: os.rename(".", L))
t("rename long to .", lambda: os.rename(L, "."))
t("rename long to empty", lambda: os.rename(L, ""))
os.mkdir("x000")
os.chmod("x000", 0)
t("rename long into x000", lambda: os.rename(L, "x000/n"))
os.chmod("x000", 0o755)
t("rename long to long", lambda: os.rename(L, L + "m"))
# The link of a working directory that was removed leads to it.
os.mkdir("gonecwd")
os.chdir("gonecwd")
os.rmdir("../gonecwd")
t("stat removed cwd", lambda: os.stat("/proc/self/cwd") and None)
t("list removed cwd", lambda: print("list", os.listdir("/proc/self/cwd")))
t("chmod removed cwd", lambda: os.chmod("/proc/self/cwd", 0o700))
t("below removed cwd", lambda: os.stat("/proc/self/cwd/x") and None)
'''


@test
def errno_parity_links_renames_acls_and_atimes(t):
    """Answers a differential probe found different: a directory linked
    into a directory its caller may only search was EPERM (the kernel's
    may_create first: EACCES); RENAME_EXCHANGE onto "missing/" was
    ENOTDIR (ENOENT first); an empty ACL value was EINVAL with the ACL
    left in place (the kernel removes it); and corral's own disk walk
    moved the access time of the directories it listed (O_NOATIME now,
    where the owner may ask it); /proc/self/cwd of a working directory
    that was removed was absent (ENOENT; natively the directory)."""
    parity(t, LINKS_ACLS_ATIMES, name="linksacls",
           want={"link dir into x111": "EACCES",
                 "exchange onto missing/": "ENOENT",
                 "set acl": "ok",
                 "set empty acl": "ok",
                 "acl after": "ENODATA",
                 "acl version 3": "ENOTSUP",
                 "acl version 3 on a pipe": "ENOTSUP",
                 "atime": "1000",
                 "rename . to long": "EBUSY",
                 "rename long to .": "EBUSY",
                 "rename long to empty": "ENOENT",
                 "rename long into x000": "EACCES",
                 "rename long to long": "ENAMETOOLONG",
                 "stat removed cwd": "ok",
                 "list removed cwd": "ok",
                 "chmod removed cwd": "ok",
                 "below removed cwd": "ENOENT"})


TMPFILE_MODE0 = r'''
import fcntl, shutil, struct, subprocess
# An O_TMPFILE made at mode 0, given a mode and a name, locked, closed:
# nothing of it is left held.
fd = os.open(".", os.O_TMPFILE | os.O_RDWR, 0)
os.fchmod(fd, 0o644)
sysc(265, fd, b"", -100, b"lockf", 0x1000)   # linkat, AT_EMPTY_PATH
fcntl.flock(fd, fcntl.LOCK_EX)
fcntl.fcntl(fd, 37, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLK
os.close(fd)
g = os.open("lockf", os.O_RDWR)
t("flock after close", lambda: fcntl.flock(g, fcntl.LOCK_EX | fcntl.LOCK_NB))
t("ofd lock after close", lambda: fcntl.fcntl(g, 37, struct.pack(
    "hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)) and None)
os.close(g)
# The same made a program: it runs once closed.
fd = os.open(".", os.O_TMPFILE | os.O_RDWR, 0)
with open(shutil.which("true"), "rb") as src:
    os.write(fd, src.read())
os.fchmod(fd, 0o755)
sysc(265, fd, b"", -100, b"truecopy", 0x1000)
os.close(fd)
t("exec after close", lambda: print("rc", subprocess.run(["./truecopy"]).returncode))
'''


@test
def errno_parity_tmpfile_at_mode_0_is_let_go(t):
    """An O_TMPFILE made at mode 0 could not be opened afresh by corral's
    ledger of files without a name, which kept a duplicate of the
    program's own open file instead: after the program's close its flock
    and OFD lock stayed (EAGAIN to the next taker, a blocking flock
    waited out the wall budget), and a program made that way could not
    run (ETXTBSY) for the rest of the run (found by a differential probe).
    The ledger keeps an O_PATH fd of its own now."""
    parity(t, TMPFILE_MODE0, name="tmpfile0",
           want={"flock after close": "ok", "ofd lock after close": "ok",
                 "exec after close": "ok"})


FD_CALLS = r'''
import fcntl
# splice from an O_DIRECT file into a pipe: aligned or EINVAL.
with open("direct", "wb") as f:
    f.write(os.urandom(16384))
d = os.open("direct", os.O_RDONLY | os.O_DIRECT)
for n, off in ((100, 0), (4096, 1), (4096, 16000), (4096, 0), (512, 20000)):
    r, w = os.pipe()
    t("splice %d at %d" % (n, off), lambda: print(
        "spliced", os.splice(d, w, n, offset_src=off)))
    os.close(r)
    os.close(w)
# statx of an fd's own object: unknown flags are the fd form's to ignore
# (since 6.11) or refuse (before), as the kernel says; not corral's.
buf = ctypes.create_string_buffer(256)
t("statx fd unknown flag", lambda: sysc(332, d, b"", 0x1000 | 0x10000000, 0x7ff, buf))
t("statx cwd unknown flag", lambda: sysc(332, -100, b"", 0x1000 | 0x10000000, 0x7ff, buf))
t("statx path unknown flag", lambda: sysc(332, -100, b"direct", 0x10000000, 0x7ff, buf))
# The 32-bit flags ioctl is no 64-bit program's.
flags = ctypes.c_int(0)
t("FS_IOC32_SETFLAGS", lambda: sysc(16, d, ctypes.c_ulong(0x40046602), ctypes.byref(flags)))
'''


@test
def errno_parity_descriptor_calls_corral_performs(t):
    """Calls on descriptors corral answers differently than the kernel
    (found by a differential probe): splice from an O_DIRECT file into a
    pipe read any length at any offset (the kernel's direct read needs
    both aligned: EINVAL); statx with AT_EMPTY_PATH of an fd refused an
    unknown flag that the kernel's fd form leaves alone; FS_IOC32_SETFLAGS
    from a 64-bit program set the flags (no 64-bit file answers that
    number: ENOTTY)."""
    parity(t, FD_CALLS, name="fdcalls",
           want={"splice 100 at 0": "EINVAL", "splice 4096 at 1": "EINVAL",
                 "splice 4096 at 16000": "EINVAL",
                 "FS_IOC32_SETFLAGS": "ENOTTY",
                 "statx path unknown flag": "EINVAL"})


PTRACE_ORDER = r"""
import signal, time
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
L = ctypes.c_long   # whole registers: syscall() reads longs
t("ptrace peekdata child", lambda: sysc(L(101), L(2), L(pid), L(0), L(0)))
t("ptrace getregs child", lambda: sysc(L(101), L(12), L(pid), L(0),
                                       ctypes.create_string_buffer(512)))
t("ptrace cont child", lambda: sysc(L(101), L(7), L(pid), L(0), L(0)))
t("ptrace unknown child", lambda: sysc(L(101), L(0x9999), L(pid), L(0), L(0)))
t("ptrace attach absent", lambda: sysc(L(101), L(16), L(4194000), L(0), L(0)))
t("ptrace seize child addr", lambda: sysc(L(101), L(0x4206), L(pid), L(1), L(0)))
t("ptrace seize child badopt", lambda: sysc(L(101), L(0x4206), L(pid), L(0),
                                            L(1 << 30)))
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
"""


@test
def errno_parity_ptrace_requests_answer_as_for_a_traced_process(t):
    """Every process of a run is traced, so the kernel refuses it every
    request: ESRCH for a request on a process it does not trace (its own
    child) and for one that is not there, EIO for a seize's own
    arguments; corral answered EPERM to all (strace -f inside a run
    printed errors it does not print under a native tracer; found by a
    compatibility probing session). TRACEME stays EPERM, recorded."""
    parity(t, PTRACE_ORDER, name="ptrace",
           want={"ptrace peekdata child": "ESRCH",
                 "ptrace unknown child": "ESRCH",
                 "ptrace attach absent": "ESRCH",
                 "ptrace seize child addr": "EIO",
                 "ptrace seize child badopt": "EIO"})


ATTR_IOCTLS = r'''
import fcntl
GETFLAGS, SETFLAGS = 0x80086601, 0x40086602
FSGETXATTR, FSSETXATTR = 0x801c581f, 0x401c5820
def put_back(fd, get, put, size):
    """Set what a get gave (zeros where it fails): a change of nothing."""
    b = bytearray(size)
    try:
        fcntl.ioctl(fd, get, b, True)
    except OSError:
        pass
    fcntl.ioctl(fd, put, bytes(b))
open("mine.txt", "w").close()
for p in ("/usr/lib/os-release", "/usr/share", "/dev/ptmx",
          "/proc/self/status", "mine.txt"):
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    t(p + " setflags", lambda: put_back(fd, GETFLAGS, SETFLAGS, 8))
    t(p + " fssetxattr", lambda: put_back(fd, FSGETXATTR, FSSETXATTR, 28))
    os.close(fd)
# The refused ioctls of a file system, on what no file system answers for.
import socket
SETVERSION, DEDUPE = 0x40087602, 0xc0189436
r, w = os.pipe()
sk = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
nul = os.open("/dev/null", os.O_RDWR)
dfd = os.open(".", os.O_RDONLY)
rng = bytes(24)
for what, fd in (("pipe", r), ("socket", sk.fileno()), ("null", nul),
                 ("dir", dfd)):
    if what != "dir":   # the owner's directory: refused (documented)
        t(what + " setversion", lambda: fcntl.ioctl(fd, SETVERSION, bytes(8)))
    t(what + " dedupe", lambda: fcntl.ioctl(fd, DEDUPE, rng))
    t(what + " dedupe fault", lambda: sysc(ctypes.c_long(16), ctypes.c_long(fd),
                                         ctypes.c_long(DEDUPE), ctypes.c_long(8)))
# A pty's slave: opened by its path, F_GETFL as an open leaves it (with
# O_LARGEFILE and O_APPEND); and by TIOCGPTPEER with flags beyond the
# four usual ones, which the kernel keeps.
m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(m, 0x40045431, b"\0\0\0\0")            # TIOCSPTLCK 0
n = int.from_bytes(fcntl.ioctl(m, 0x80045430, b"\0\0\0\0"), "little")
s = os.open("/dev/pts/%d" % n, os.O_RDWR | os.O_NOCTTY | os.O_APPEND)
print("pts by path flags", oct(fcntl.fcntl(s, fcntl.F_GETFL)))
for extra in (os.O_APPEND, os.O_SYNC, os.O_CREAT | os.O_DIRECTORY):
    def peer():
        fd = fcntl.ioctl(m, 0x5441, os.O_RDWR | os.O_NOCTTY | extra)
        print("ptpeer", oct(extra), oct(fcntl.fcntl(fd, fcntl.F_GETFL)))
        os.close(fd)
    t("ptpeer call %o" % extra, peer)
'''


@test
def errno_parity_attribute_ioctls_and_pty_flags(t):
    """FS_IOC_SETFLAGS and FS_IOC_FSSETXATTR answer ENOTTY on what has no
    attributes (a terminal, a /proc file) and EPERM on another's file, as
    the kernel's vfs_fileattr_set; an earlier build answered EACCES to all
    of them outside the writable roots. A pty's slave opened by its path
    shows the flags an open leaves (O_LARGEFILE, O_APPEND: 02 before), and
    TIOCGPTPEER takes the flags the kernel takes (EINVAL before). The
    refused file-system ioctls (an inode's generation, deduplication)
    answer on a pipe, a socket or a device as the kernel does (ENOTTY,
    EINVAL, EISDIR for a directory, EFAULT first), where they answered
    EPERM on every fd. Found by a differential probing session."""
    parity(t, ATTR_IOCTLS, name="attrioctl",
           want={"/usr/lib/os-release setflags": "EPERM",
                 "/dev/ptmx setflags": "ENOTTY",
                 "/proc/self/status fssetxattr": "ENOTTY",
                 "mine.txt setflags": "ok",
                 "pts by path flags": "0o102002",
                 "ptpeer": "0o2000 0o2002",
                 "pipe setversion": "ENOTTY", "pipe dedupe": "EINVAL",
                 "dir dedupe": "EISDIR", "pipe dedupe fault": "EFAULT"})


PTY_META = r'''
import pty
m, s = os.openpty()
name = os.ttyname(s)
t("chmod", lambda: os.chmod(name, 0o600))
print("mode", oct(os.stat(name).st_mode & 0o7777))
t("fchmod", lambda: os.fchmod(s, 0o620))
print("mode", oct(os.fstat(s).st_mode & 0o7777))
t("chown", lambda: os.chown(name, os.getuid(), -1))
t("fchown", lambda: os.fchown(s, -1, os.getgid()))
t("utime", lambda: os.utime(name, (1000000000, 1000000000)))
print("mtime", int(os.stat(name).st_mtime))
t("futimens", lambda: os.utime(s, (1100000000, 1100000000)))
print("mtime", int(os.stat(name).st_mtime))
t("chown other", lambda: os.chown(name, 0, -1))
'''


@test
def errno_parity_own_pty_metadata(t):
    """The run's own pty takes its owner's changes of mode, owner and times
    by path and by fd, as natively (`mesg`, screen and tmux make them);
    another owner is EPERM as natively. They answered EACCES and were
    recorded (found by a compatibility probing session: `mesg y` under
    `script` exited 2)."""
    nat, cor, res = parity(t, PTY_META, name="ptymeta",
                           want={"chmod": "ok", "fchmod": "ok", "utime": "ok",
                                 "chown other": "EPERM"})
    eq([d for d in res.get("denials", []) if d.get("layer") == "fs"], [],
       "no fs denial")


IGNORED_SIGNALS = r'''
import select, signal, socket, struct, time
L = ctypes.c_long
def child(delay, fn):
    """A child that sleeps, then acts; its exit is a SIGCHLD."""
    pid = os.fork()
    if pid == 0:
        time.sleep(delay)
        fn()
        os._exit(0)
    return pid
r, w = os.pipe()
ep = select.epoll()
ep.register(r, select.EPOLLIN)
ev = ctypes.create_string_buffer(48)
me = os.getpid()
# A child exits at 0.1 s (SIGCHLD, default: ignored); another writes at 0.4.
a, b = child(0.1, lambda: None), child(0.4, lambda: os.write(w, b"x"))
t("epoll_wait sigchld", lambda: sysc(L(232), L(ep.fileno()), ev, L(4), L(-1)))
os.read(r, 1); os.waitpid(a, 0); os.waitpid(b, 0)
# SIGUSR1 set to SIG_IGN, sent at 0.1 s.
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
a = child(0.1, lambda: os.kill(me, signal.SIGUSR1))
b = child(0.4, lambda: os.write(w, b"x"))
t("epoll_wait sig_ign", lambda: sysc(L(232), L(ep.fileno()), ev, L(4), L(-1)))
os.read(r, 1); os.waitpid(a, 0); os.waitpid(b, 0)
# sigtimedwait for a blocked SIGUSR2, 0.5 s: EAGAIN at its end.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
mask = ctypes.c_uint64(1 << (signal.SIGUSR2 - 1))
ts = struct.pack("qq", 0, 500000000)
a = child(0.1, lambda: None)
t("sigtimedwait sigchld", lambda: sysc(L(128), ctypes.byref(mask), None,
                                       ctypes.c_char_p(ts), L(8)))
os.waitpid(a, 0)
# A receive with SO_RCVTIMEO 0.5 s: EAGAIN at its end.
s1, s2 = socket.socketpair()
s1.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 500000))
rb = ctypes.create_string_buffer(8)
a = child(0.1, lambda: None)
t("recv rcvtimeo sigchld", lambda: sysc(L(45), L(s1.fileno()), rb, L(8), L(0),
                                        None, None))
os.waitpid(a, 0)
'''


@test(supervisor_only=True)
def errno_parity_ignored_signals_interrupt_nothing(t):
    """A signal the process ignores (SIGCHLD of a child that exits, one set
    to SIG_IGN) is dropped as it is sent, natively; a traced task keeps it
    for its tracer, and epoll_wait, sigtimedwait and a receive with
    SO_RCVTIMEO answered EINTR at once under corral (found by a
    differential probing session). They wait on, as natively."""
    parity(t, IGNORED_SIGNALS, name="ignsig",
           want={"epoll_wait sigchld": "ok", "epoll_wait sig_ign": "ok",
                 "sigtimedwait sigchld": "EAGAIN",
                 "recv rcvtimeo sigchld": "EAGAIN"})


STARVED_WAITS = r'''
import os, select, signal, socket, struct, sys, time
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
cli = socket.create_connection(srv.getsockname())
conn, _ = srv.accept()
for mode in ("epoll", "rcvtimeo", "sigtimedwait"):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        t0 = time.monotonic()
        if mode == "epoll":
            e = select.epoll()
            e.register(cli.fileno(), select.EPOLLIN)
            e.poll(1.0)
        elif mode == "rcvtimeo":
            cli.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                           struct.pack("ll", 1, 0))
            try:
                cli.recv(10)
            except BlockingIOError:
                pass
        else:
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
            signal.sigtimedwait([signal.SIGUSR1], 1.0)
        os.write(w, b"%.1f" % (time.monotonic() - t0))
        os._exit(0)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 6:
        time.sleep(0.2)
        if select.select([r], [], [], 0)[0]:
            break
        os.kill(pid, signal.SIGWINCH)
    if select.select([r], [], [], 0)[0]:
        took = float(os.read(r, 16))
        print(mode, "returned", "in time" if took < 3 else "late: %.1f" % took)
    else:
        print(mode, "still waiting after 6 s")
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
'''


@test(supervisor_only=True)
def ignored_signals_do_not_starve_timed_waits(t):
    """An ignored signal that keeps coming (SIGWINCH every 0.2 s here,
    SIGCHLD of short-lived children in real programs) made a timed
    epoll_wait, a receive with SO_RCVTIMEO and a sigtimedwait wait for
    good: each was made again with its whole timeout at every signal
    (asyncio.sleep(3) never returned; found by a side-by-side run of real
    suites). The same call counts from its first interruption now: each
    1 s wait returns in about its time, as natively (3 s is the test's
    "in time", 6 s its own bound)."""
    path = t.write("starved.py", STARVED_WAITS)
    run = t.corral(["run", "--json", "--ro", t.tmp, "--limit", "wall=60s",
                    "--", PY, path], timeout=90)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%r)" % r.get("message"))
    eq(r.get("stdout"), "epoll returned in time\nrcvtimeo returned in "
       "time\nsigtimedwait returned in time\n", "each wait")


STOPPED_WAITS = r"""
import ctypes, errno, os, select, signal, socket, struct, sys, threading
import time
libc = ctypes.CDLL(None, use_errno=True)


def call(mode):
    if mode == "epoll_wait":
        e = select.epoll()
        r, w = os.pipe()
        e.register(r, select.EPOLLIN)
        return libc.epoll_wait(e.fileno(), ctypes.create_string_buffer(12),
                               1, 3000)
    if mode == "semop":
        sid = libc.semget(0, 1, 0o600)
        rc = libc.semop(sid, ctypes.create_string_buffer(
            struct.pack("HhH", 0, -1, 0)), 1)
        err = ctypes.get_errno()
        libc.semctl(sid, 0, 0)
        ctypes.set_errno(err)
        return rc
    if mode == "sigtimedwait":
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
        mask = ctypes.create_string_buffer(
            struct.pack("Q", 1 << (signal.SIGUSR1 - 1)), 128)
        return libc.sigtimedwait(mask, None, ctypes.create_string_buffer(
            struct.pack("ll", 3, 0)))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    if mode == "accept_conth":
        # No timeout, but a SIGCONT handler (Python's: no SA_RESTART).
        signal.signal(signal.SIGCONT, lambda *a: None)
    else:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                     struct.pack("ll", 3, 0))
    return libc.accept(s.fileno(), None, None)


# The call, in this thread or (..._in_thread) another while this one
# waits: the process's stop is then taken by either.
def made(mode):
    if not mode.endswith("_in_thread"):
        return call(mode), ctypes.get_errno()
    out = []
    th = threading.Thread(target=lambda: out.append(made(mode[:-10])))
    th.start()
    th.join()
    return out[0]


for mode in sys.argv[1:]:
    r, w = os.pipe()
    gr, gw = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(gw, b"g")   # about to wait: a loaded machine is no matter
        t0 = time.monotonic()
        rc, err = made(mode)
        os.write(w, b"%d %s %.1f" % (rc, errno.errorcode.get(err, "?")
                                     .encode() if rc < 0 else b"-",
                                     time.monotonic() - t0))
        os._exit(0)
    os.read(gr, 1)
    time.sleep(0.4)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(0.3)
    os.kill(pid, signal.SIGCONT)
    if select.select([r], [], [], 6)[0]:
        rc, err, took = os.read(r, 200).decode().split(" ", 2)
        print(mode, rc, err, "in time" if float(took) < 2.5 else
              "late: " + took, flush=True)
    else:
        print(mode, "still waiting 6 s after SIGCONT", flush=True)
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


@test(supervisor_only=True)
def stopped_and_continued_waits_end_as_natively(t):
    """signal(7): a call with a timeout or none to restart (epoll_wait,
    semop, sigtimedwait, a receive or accept with SO_RCVTIMEO) fails
    EINTR once its process is stopped and continued. The ignored SIGCONT
    made it again (the semop waited for good, the others their whole
    timeout), and corral's own wait in an accept did not count the stop
    at all: the process did not even stop until it ended (found by a
    differential probing session), nor when another thread took the
    stop. Each ends EINTR at the SIGCONT now, as natively. An accept with
    no timeout but a SIGCONT handler without SA_RESTART ends EINTR too
    (a first form of the change made it again: a probing session)."""
    path = t.write("stopped.py", STOPPED_WAITS)
    modes = ["epoll_wait", "semop", "sigtimedwait", "accept",
             "accept_in_thread", "semop_in_thread", "accept_conth"]
    want = "".join("%s -1 EINTR in time\n" % m
                   for m in modes)
    nat = t.native([PY, path] + modes, timeout=60)
    eq(nat.out.decode(), want, "natively (the test's premise)")
    run = t.corral(["run", "--json", "--ro", t.tmp, "--limit", "wall=60s",
                    "--", PY, path] + modes, timeout=90)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%r)" % r.get("message"))
    eq(r.get("stdout"), want, "each wait")
    t.assert_next_run_ok()


JOB_STOPS = r'''
import signal, time
# The run's own group, whose only parent outside it is corral (natively:
# started without job control, an orphaned group): its own SIGTSTP,
# SIGTTIN and SIGTTOU do nothing.
for sig in (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
    os.kill(0, sig)
    print("went on after", signal.Signals(sig).name, flush=True)
# A child in a group of its own, whose parent (this process) is in the
# session outside it: the child stops, its parent sees it and goes on.
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.kill(os.getpid(), signal.SIGTSTP)
    print("child resumed", flush=True)
    os._exit(7)
_, st = os.waitpid(pid, os.WUNTRACED)
print("child stopped", os.WIFSTOPPED(st),
      os.WSTOPSIG(st) if os.WIFSTOPPED(st) else -1, flush=True)
os.kill(pid, signal.SIGCONT)
_, st = os.waitpid(pid, 0)
print("child exit", os.WEXITSTATUS(st))
'''


@test
def job_control_stops_of_an_orphaned_group_do_nothing(t):
    """A program started without job control (setsid, cron, CI) that sends
    its own group SIGTSTP, SIGTTIN or SIGTTOU goes on: the kernel drops
    job-control stops in an orphaned group. corral, the run's parent in
    the caller's session, kept the group from being orphaned, and the
    program stayed stopped until the wall limit (found by a differential
    probing session). A child in a group of its own under a parent of the
    run still stops, as natively."""
    ws = t.path("jobstops")
    os.makedirs(ws)
    os.chmod(ws, 0o755)
    script = t.write("jobstops.py", PRELUDE + JOB_STOPS)
    nat = t.native([PY, script, ws], start_new_session=True, timeout=30)
    eq(nat.code, 0, "native (premise)")
    want = ("went on after SIGTSTP\nwent on after SIGTTIN\n"
            "went on after SIGTTOU\nchild stopped True 20\n"
            "child resumed\nchild exit 7\n")
    eq(nat.out.decode(), want, "native (premise)")
    run = t.corral(["run", "--json", "--ro", t.tmp, "-w", ws,
                    "--limit", "wall=20s", "--", PY, script, "."], timeout=60)
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", want), "under corral")



ORPHANED = r"""
import ctypes, os, select, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)


def stopped_child(r, w, gw, pgid, move=False):
    # A child that moves to group pgid (None: stays), stops, and says what
    # it is sent; its pid goes to the top once it is stopped (and, with
    # move, once this process has moved it to a group of its own).
    c = os.fork()
    if c == 0:
        os.close(r)
        if pgid is not None:
            os.setpgid(0, pgid)
        signal.signal(signal.SIGHUP, lambda s, f: os.write(w, b"H"))
        signal.signal(signal.SIGCONT, lambda s, f: os.write(w, b"C"))
        os.kill(os.getpid(), signal.SIGSTOP)
        os.write(w, b"R")
        os._exit(0)
    os.waitpid(c, os.WUNTRACED)
    if move:
        os.setpgid(c, c)
    os.write(gw, b"%d" % c)


for mode in sys.argv[1:]:
    r, w = os.pipe()
    gr, gw = os.pipe()
    d = 0
    if mode == "linked":
        # A member of the child's group whose parent (this process, in
        # another group of the session) stays: the group keeps its link.
        d = os.fork()
        if d == 0:
            os.setpgid(0, 0)
            os.write(gw, b"d")
            while True:
                signal.pause()
        os.read(gr, 1)
    m = os.fork()
    if m == 0:
        if mode == "subreaper":
            # Its grandchild, orphaned, becomes its own (PR_SET_CHILD_
            # SUBREAPER): still linked; at its own end, orphaned.
            libc.prctl(36, 1, 0, 0, 0)
            a = os.fork()
            if a == 0:
                stopped_child(r, w, gw, 0)
                os._exit(0)
            os.waitpid(a, 0)
            time.sleep(0.5)
            os._exit(0)
        if mode == "group":
            os.setpgid(0, 0)    # its child below joins this group
        stopped_child(r, w, gw, {"child": 0, "killed": 0, "linked": d,
                                 "group": None, "same_group": None,
                                 "moved": None}[mode], mode == "moved")
        while mode == "killed":
            signal.pause()
        os._exit(0)
    os.close(w)
    c = int(os.read(gr, 20))
    if mode == "killed":
        os.kill(m, signal.SIGKILL)      # no exit stop to see it by
    os.waitpid(m, 0)
    # Sent at the exit's report, within milliseconds: the modes that
    # must get nothing wait 1.5 s for it.
    got, end = b"", time.monotonic() + 1.5
    while b"R" not in got:
        left = end - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            break
        b = os.read(r, 10)
        if not b:
            break
        got += b
    print(mode, got.decode() or "nothing", flush=True)
    try:
        os.kill(c, signal.SIGKILL)  # gone already once it ran on
    except ProcessLookupError:
        pass
    if d:
        os.kill(d, signal.SIGKILL)
        os.waitpid(d, 0)
    os.close(r)
"""


@test(supervisor_only=True)
def a_group_orphaned_with_a_stopped_member_is_hung_up(t):
    """POSIX and the kernel (kill_orphaned_pgrp): when an exit leaves a
    process group orphaned and a member of it is stopped, the group gets
    SIGHUP then SIGCONT, whether the exit took the group's last parent
    outside it (its child's group) or a member whose parent was outside
    (its own group). Under corral, whose processes' orphans become its
    own, in the caller's session, no group was ever orphaned and the
    stopped process waited until the wall limit (found by a differential
    probing session). Groups still linked, or never linked by the
    process that left, get nothing, as natively. A parent a SIGKILL ends
    (no exit stop) is judged too, and so is a subreaper of the run that
    adopted the stopped process, and a group the parent moved its stopped
    child to (probing sessions: they were not)."""
    script = t.write("orphaned.py", ORPHANED)
    modes = ["child", "group", "killed", "subreaper", "moved",
             "same_group", "linked"]
    want = ("child HCR\ngroup HCR\nkilled HCR\nsubreaper HCR\n"
            "moved HCR\nsame_group nothing\nlinked nothing\n")
    nat = t.native([PY, script] + modes, timeout=60)
    eq(nat.out.decode(), want, "natively (the test's premise)")
    run = t.corral(["run", "--json", "--ro", t.tmp, "--limit", "wall=60s",
                    "--", PY, script] + modes, timeout=90)
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", want), "under corral")
    t.assert_next_run_ok()



DENTS_FAULT = r"""
import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
os.chdir(sys.argv[1])
os.mkdir("d")
for i in range(40):
    open("d/f%02d" % i, "w").close()
page = mmap.PAGESIZE
area = libc.mmap(None, 2 * page, 3, 0x22, -1, 0)
libc.munmap(ctypes.c_void_p(area + page), page)   # a hole after it
ro = libc.mmap(None, page, 1, 0x22, -1, 0)          # read-only
good = ctypes.create_string_buffer(65536)

def names(fd):
    got = []
    while True:
        n = libc.syscall(217, fd, good, 65536)
        if n <= 0:
            return got
        off = 0
        while off < n:
            reclen = int.from_bytes(good.raw[off + 16:off + 18], "little")
            got.append(good.raw[off + 19:off + reclen].split(b"\0")[0])
            off += reclen

def entries(buf, n):
    k, off = 0, 0
    data = ctypes.string_at(buf, n)
    while off < n:
        off += int.from_bytes(data[off + 16:off + 18], "little")
        k += 1
    return k

for how, buf in (("NULL", 0), ("read-only", ro), ("straddling", area + page - 200)):
    fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
    n = libc.syscall(217, fd, ctypes.c_void_p(buf), 8192)
    first = (os.strerror(ctypes.get_errno()) if n < 0 else
             "%d entries" % entries(buf, n))
    rest = names(fd)
    print(how, first, "then", len(rest) + (entries(buf, n) if n > 0 else 0),
          "in all", flush=True)
    os.close(fd)
"""


@test
def a_listing_into_a_bad_buffer_loses_nothing(t):
    """getdents64 copies record by record: a buffer the kernel cannot
    write answers EFAULT and leaves the offset alone, and one that ends
    in a hole gets the records that fit before it. corral read the
    records, moved the offset past them all, and then failed to copy
    them: EFAULT for the partial buffer, and every read record lost to
    the next call (a differential probe; `rm -rf` or a walk would skip
    them)."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    script = t.write("dents.py", DENTS_FAULT)
    nat_ws = t.path("nat")
    os.makedirs(nat_ws, exist_ok=True)
    nat = t.native([PY, script, nat_ws])
    lines = nat.out.decode().splitlines()
    eq(len(lines), 3, "natively (the test's premise): %r" % lines)
    eq(lines[0], "NULL Bad address then 42 in all", "natively, NULL")
    eq(lines[1], "read-only Bad address then 42 in all",
       "natively, read-only")
    eq(lines[2].startswith("straddling ") and "entries then 42" in
       lines[2], True, "natively, straddling: %r" % lines[2])
    run = t.corral(["run", "--json", "-w", ws, "--ro", t.tmp, "--",
                    PY, script, ws])
    r = t.result(run)
    eq(r.get("stdout"), nat.out.decode(), "under corral")



@test
def a_rewind_during_a_filtered_listing_stands(t):
    """The kernel orders a getdents and another thread's lseek of the same
    open file by its position lock: a rewind made while a listing runs is
    seen by it or left as the offset. corral lists a directory whose names
    it partly hides on a private reopen and then put its final position
    on the program's file, over the rewind (15 of 20 lost for a probing
    session, listing the workspace's parent among 20 000 hidden names).
    The rewind stands now, as after the listing."""
    top, ws = t.workspace_among_hidden(20000)
    run = t.corral(["run", "--json", "-w", ws] + t.prog_roots() +
                   ["--limit", "wall=60s", "--",
                    t.prog("dirseek"), top, "20"], timeout=90)
    r = t.result(run)
    eq((r.get("status"), r.get("stdout")), ("ok", "0 of 20 rewinds lost\n"),
       "rewinds (stderr %r)" % r.get("stderr"))



RAISED = r"""
import os, resource, signal, sys, threading
os.chdir(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGXFSZ, signal.SIGPIPE})
open("data", "wb").close()
with open("src", "wb") as f:
    f.write(b"x" * 100)

def fallocate():
    fd = os.open("data", os.O_WRONLY)
    os.posix_fallocate(fd, 0, 8192)

def truncate():
    os.truncate("data", 8192)

def splice():
    r, w = os.pipe()
    os.close(r)
    src = os.open("src", os.O_RDONLY)
    os.splice(src, w, 100)

def call(name, fn, sig):
    out = []
    def body():
        try:
            fn()
            out.append("no error")
        except OSError as e:
            out.append(os.strerror(e.errno))
        # Thread-directed: pending here, not on the process.
        out.append(sig in signal.sigpending())
        out.append(signal.sigwaitinfo({sig}).si_pid == os.getpid())
    th = threading.Thread(target=body)
    th.start()
    th.join()
    print(name, out[0], "pending in the thread:", out[1],
          "sender itself:", out[2],
          "pending on the process:", sig in signal.sigpending(), flush=True)

call("fallocate", fallocate, signal.SIGXFSZ)
call("truncate", truncate, signal.SIGXFSZ)
call("splice", splice, signal.SIGPIPE)
"""


@test
def signals_a_call_raises_come_from_the_caller_to_the_caller(t):
    """SIGXFSZ at the file size limit and SIGPIPE at a broken pipe are the
    kernel's, sent to the calling thread by itself. For calls corral
    performs it sent them: fallocate's to the whole process (another
    thread took it), and every one with corral's pid as the sender (a
    differential probe). They go to the calling thread with its own
    process as the sender now."""
    ws = t.path("ws")
    os.makedirs(ws, exist_ok=True)
    script = t.write("raised.py", RAISED)
    nat_ws = t.path("nat")
    os.makedirs(nat_ws, exist_ok=True)
    want = "".join("%s %s pending in the thread: True sender itself: True "
                   "pending on the process: False\n" % (c, e)
                   for c, e in (("fallocate", "File too large"),
                                ("truncate", "File too large"),
                                ("splice", "Broken pipe")))
    nat = t.native([PY, script, nat_ws])
    eq(nat.out.decode(), want, "natively (the test's premise)")
    run = t.corral(["run", "--json", "-w", ws, "--ro", t.tmp, "--",
                    PY, script, ws])
    r = t.result(run)
    eq(r.get("stdout"), want, "under corral (stderr %r)" % r.get("stderr"))



SETOWN_GROUPS = r"""
import fcntl, os, signal, time
r, w = os.pipe()

def setown(what, who):
    try:
        fcntl.fcntl(r, fcntl.F_SETOWN, who)
        print(what, "ok", flush=True)
    except OSError as e:
        print(what, os.strerror(e.errno), flush=True)

live = os.fork()
if live == 0:
    os.setpgid(0, 0)
    time.sleep(30)
    os._exit(0)
gone = os.fork()
if gone == 0:
    os.setpgid(0, 0)
    os._exit(0)
time.sleep(0.5)              # both in groups of their own; gone exited
setown("a live child's group", -live)
setown("a zombie child", gone)
setown("a zombie's group", -gone)
# A group whose leader is gone, a member still in it.
lead = os.fork()
if lead == 0:
    os.setpgid(0, 0)
    m = os.fork()
    if m == 0:
        time.sleep(30)
        os._exit(0)
    os._exit(0)
os.waitpid(lead, 0)
time.sleep(0.3)
setown("a group its leader left", -lead)
os.kill(live, signal.SIGKILL)
os.killpg(lead, signal.SIGKILL)
"""


@test
def setown_takes_the_runs_other_groups_and_zombies(t):
    """fcntl(F_SETOWN) takes any process or group number still held: a
    zombie child's, another group of the caller's children, one whose
    leader has exited while a member lives. corral answered ESRCH for
    each (it let a group through only if it was the caller's own), and
    recorded them as reaches outside the run (a differential probe)."""
    script = t.write("setown.py", SETOWN_GROUPS)
    want = ("a live child's group ok\na zombie child ok\n"
            "a zombie's group ok\na group its leader left ok\n")
    nat = t.native([PY, script])
    eq(nat.out.decode(), want, "natively (the test's premise)")
    run = t.corral(["run", "--json", "--ro", t.tmp, "--", PY, script])
    r = t.result(run)
    eq(r.get("stdout"), want, "under corral (stderr %r)" % r.get("stderr"))
    eq(r.get("denials") or [], [], "no reach outside recorded")


@test(supervisor_only=True)
def a_childs_exit_its_pidfd_shows_is_the_parents_to_collect(t):
    """Once a child's pidfd polls readable, a wait with WNOHANG collects
    it natively, every time. Under corral, its tracer, the kernel held the
    zombie for corral's report first, and the wait answered "not yet" (0)
    in 36 (exit), 180 (SIGKILL), 24 (waitid on the pidfd) and 25 (SIGCHLD
    ignored: natively ECHILD) rounds of 200 (a differential probe; tokio
    1.36-1.43.1 panics on that answer, hence uv). corral takes its pending
    reports before a non-blocking wait now, and before any wait on a
    pidfd: one opened PIDFD_NONBLOCK makes a wait without WNOHANG
    non-blocking, and it answered EAGAIN (262 of 300, a second probe).
    A wait takes only exits so: a first form took a child's
    signal-delivery stop (the tracer is told of stops whatever the
    flags) and left it stopped for good (term: SIGTERM, then WNOHANG
    at once, hung every run)."""
    exe = t.prog("pidfd_nohang")
    modes = ("exit", "kill", "waitid", "ignored", "nonblock", "term")
    for m in modes:
        nat = t.native([exe, m, "200"])
        eq(nat.out.decode(), "%s missed 0 of 200\n" % m,
           "natively (the test's premise)")
    for m in modes:
        run = t.corral(["run", "--json"] + t.prog_roots() +
                       ["--limit", "wall=60s", "--", exe, m, "200"])
        r = t.result(run)
        eq((r.get("status"), r.get("stdout")),
           ("ok", "%s missed 0 of 200\n" % m), "under corral")
    t.assert_next_run_ok()


# ---- O_PATH descriptors of unix sockets ----

OPATH_SOCK = r'''
import socket
s = socket.socket(socket.AF_UNIX)
s.bind("sk")
s.listen(8)
fd = os.open("sk", os.O_PATH)
L = "/proc/self/fd/%d" % fd
t("fstat sock", lambda: print("fstat", stat.S_ISSOCK(os.fstat(fd).st_mode)))
t("chmod link", lambda: os.chmod(L, 0o600))
print("mode", oct(os.stat("sk").st_mode & 0o777))
t("stat link", lambda: print("stat", stat.S_ISSOCK(os.stat(L).st_mode)))
c = socket.socket(socket.AF_UNIX)
t("connect link", lambda: c.connect(L))
t("read", lambda: os.read(fd, 1))
t("fchmod", lambda: os.fchmod(fd, 0o644))
t("lchmod", lambda: os.chmod("sk", 0o640, follow_symlinks=False))
print("mode", oct(os.stat("sk").st_mode & 0o777))
t("nofollow", lambda: os.close(os.open("sk", os.O_PATH | os.O_NOFOLLOW)))
t("execveat", lambda: os.execve(fd, ["x"], {}))
t("reopen link", lambda: os.close(os.open(L, os.O_PATH)))
t("execve link", lambda: os.execve(L, ["x"], {}))
t("below link", lambda: os.stat(L + "/x"))
g = open("gone.txt", "w")
os.unlink("gone.txt")
t("below a removed file's link",
  lambda: os.stat("/proc/self/fd/%d/x" % g.fileno()))
# A file its owner may not read: O_PATH asks nothing of the mode.
for n, m in (("w200", 0o200), ("z000", 0)):
    open(n, "w").close()
    os.chmod(n, m)
    t(n + " opath", lambda: print(n, oct(os.fstat(os.open(n, os.O_PATH)).st_mode)))
    u = os.open(n, os.O_PATH)
    t(n + " reopen", lambda: os.open("/proc/self/fd/%d" % u, os.O_RDONLY))
    t(n + " chmod link", lambda: os.chmod("/proc/self/fd/%d" % u, 0o600))
    print(n, oct(os.stat(n).st_mode))
    os.chmod(n, m)
    t(n + " opath link", lambda: print(n, oct(os.fstat(
        os.open("/proc/self/fd/%d" % u, os.O_PATH)).st_mode)))
# A socket whose name is gone: its O_PATH fd's link still leads to it.
os.unlink("sk")
t("stat link after unlink", lambda: print("stat", stat.S_ISSOCK(os.stat(L).st_mode)))
c2 = socket.socket(socket.AF_UNIX)
t("connect link after unlink", lambda: c2.connect(L))
t("opath link after unlink", lambda: print("opath", stat.S_ISSOCK(os.fstat(
    os.open(L, os.O_PATH)).st_mode)))
'''


@test
def errno_parity_o_path_of_a_unix_socket(t):
    """An O_PATH open of a unix socket answered ENXIO (corral makes O_PATH
    a read-only open, which a socket refuses), so GNU Emacs's
    file-attributes of a socket failed, and glibc's lchmod of one (found
    by a compatibility probe). A socket now gets a stand-in as a link
    does: fstat, chmod through /proc/self/fd/N, connect through it and
    lchmod answer as natively. So does a file its owner may not read
    (0200, 0000), which the read-only open refused EACCES, and an O_PATH
    open of such a stand-in's link (EACCES before). A socket's link
    leads to it after its name is removed, as natively (judged where it
    was; refused as absent before)."""
    parity(t, OPATH_SOCK, want={"chmod link": "ok", "connect link": "ok",
                                "read": "EBADF", "execveat": "EACCES",
                                "reopen link": "ok",
                                "execve link": "EACCES",
                                "below link": "ENOTDIR",
                                "below a removed file's link": "ENOTDIR",
                                "w200 reopen": "EACCES",
                                "z000 chmod link": "ok",
                                "w200 opath link": "ok",
                                "z000 opath link": "ok",
                                "connect link after unlink": "ok",
                                "opath link after unlink": "ok"})


PEERNAME = r'''
import socket
srv = socket.socket(socket.AF_UNIX)
srv.bind("srv.sock")
srv.listen(1)
c = socket.socket(socket.AF_UNIX)
t("unconnected", lambda: c.getsockopt(socket.SOL_SOCKET, 28, 11))
c.connect("srv.sock")
for n in (110, 12, 11, 6):
    t("peername %d" % n,
      lambda: print("peername", n,
                    c.getsockopt(socket.SOL_SOCKET, 28, n).hex()))
print("getpeername", c.getpeername())
'''


@test
def errno_parity_so_peername_is_the_peer_as_bound(t):
    """getsockopt(SO_PEERNAME) reached the kernel, which reported corral's
    inner name of the peer (/proc/self/fd/N/srv.sock; found by a
    differential probe). It is the name getpeername reports now, under the
    kernel's rules: ENOTCONN unconnected, EINVAL for a buffer longer than
    the address, else that many bytes of it."""
    parity(t, PEERNAME, want={"unconnected": "ENOTCONN",
                              "peername 110": "EINVAL"})


ORDER_FIRST = r'''
import socket
# The image's own mode before its interpreter's place.
with open("s644", "w") as f:
    f.write("#!/root/nowhere/interp\n")
os.chmod("s644", 0o644)
t("exec 0644 script", lambda: os.execv("./s644", ["s644"]))
# No such fd before anything is run.
t("execveat badfd", lambda: sysc(322, 99, b"", None, None, 0x1000))
# A bit inotify does not define, before the path.
ino = libc.inotify_init1(0)
t("inotify odd bit", lambda: sysc(254, ino, b"missing", 0x1 | 0x100000))
# What the kernel says before a socket is reached.
open("file", "w").close()
b = socket.socket(socket.AF_UNIX)
t("bind file/", lambda: b.bind("file/"))
c = socket.socket(socket.AF_UNIX)
t("connect missing in a read root", lambda: c.connect("/usr/missing.sock"))
t("connect a read root's file", lambda: c.connect("/usr/bin/env"))
t("connect the cwd", lambda: c.connect("."))
# pidfd_getfd's flags before its descriptor.
t("pidfd_getfd flags", lambda: sysc(438, 999, 0, 1))
# A blocking accept on a full fd table: EMFILE at once, as the kernel
# takes the number before it waits.
import resource, signal
l = socket.socket(socket.AF_UNIX)
l.bind("acc.sock")
l.listen(1)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
held = []
try:
    while True:
        held.append(os.dup(0))
except OSError:
    pass
signal.signal(signal.SIGALRM, lambda *a: None)
signal.alarm(3)
t("accept on a full table", lambda: l.accept())
signal.alarm(0)
for h in held:
    os.close(h)
'''


@test
def errno_parity_what_the_kernel_asks_first(t):
    """Answers corral gave in another order than the kernel (found by a
    differential probe): a 0644 script whose interpreter lies outside
    every root (ENOENT, recorded, where the kernel refuses the image's
    mode first: EACCES); execveat of a closed fd with AT_EMPTY_PATH
    (EACCES recorded, not EBADF); inotify_add_watch with an undefined
    mask bit (the path's error first, not EINVAL); bind of "file/"
    (ENOTDIR, not EADDRINUSE); connect to a missing name in a read root
    or to a directory (EACCES, not ENOENT and ECONNREFUSED)."""
    parity(t, ORDER_FIRST, want={"exec 0644 script": "EACCES",
                                 "execveat badfd": "EBADF",
                                 "inotify odd bit": "EINVAL",
                                 "bind file/": "EADDRINUSE",
                                 "connect missing in a read root": "ENOENT",
                                 "connect a read root's file": "EACCES",
                                 "connect the cwd": "ECONNREFUSED",
                                 "pidfd_getfd flags": "EINVAL",
                                 "accept on a full table": "EMFILE"})


# ---- int arguments: the kernel reads 32 bits of the register ----

INT_ARGS = r'''
os.symlink("a-rather-long-target-name", "lnk")
open("f", "w").close()
L, UL = ctypes.c_long, ctypes.c_ulong
for nr, name, pre in ((267, "readlinkat", (L(-100),)), (89, "readlink", ())):
    for size in (0xffffffff, 0x100000004, 0x80000000, 0x100000000):
        buf = ctypes.create_string_buffer(b"#" * 40, 40)
        def call():
            n = sysc(L(nr), *pre, b"lnk", buf, UL(size))
            return "%d %r" % (n, buf.raw[:30])
        t("%s size=%#x" % (name, size), call)
for flags in (0x100000000, 0x100000001, 0x100000004):
    t("setxattr flags=%#x" % flags,
      lambda: sysc(L(188), b"f", b"user.k", b"v", UL(1), UL(flags)))
    fd = os.open("f", os.O_RDONLY)
    t("fsetxattr flags=%#x" % flags,
      lambda: sysc(L(190), L(fd), b"user.j", b"v", UL(1), UL(flags)))
    os.close(fd)
'''


@test
def errno_parity_int_arguments_read_as_ints(t):
    """readlink's bufsiz and the setxattr flags are ints to the kernel,
    which never reads the register's upper half: 0xffffffff is -1
    (EINVAL), 0x100000004 is 4 (4 bytes written). corral read all 64
    bits: it answered the link for -1, wrote the whole target past a
    4-byte bound, and refused flags with a high bit (found by a
    differential probing session)."""
    parity(t, INT_ARGS, want={"readlinkat size=0xffffffff": "EINVAL",
                              "readlink size=0x100000000": "EINVAL"})


# ---- F_NOTIFY clearings: the kernel drops watches before the type ----

DNOTIFY_CLEAR = r'''
import fcntl
open("f", "w").close()
r, w = os.pipe()
fd = os.open("f", os.O_RDONLY)
d = os.open(".", os.O_RDONLY)
for name, x in (("file", fd), ("pipe", r), ("dir", d)):
    for arg in (0, fcntl.DN_MULTISHOT, fcntl.DN_CREATE):
        t("%s %#x" % (name, arg), lambda: fcntl.fcntl(x, fcntl.F_NOTIFY, arg))
'''


@test
def errno_parity_dnotify_clearing_answers_as_the_kernel(t):
    """fcntl(F_NOTIFY, 0) or DN_MULTISHOT alone clears the caller's
    watches on that file before the kernel looks at its type: 0 on a
    regular file or a pipe, where corral answered ENOTDIR (found by a
    probing session); a watch asked of them stays ENOTDIR."""
    parity(t, DNOTIFY_CLEAR, want={"file 0x0": "ok", "pipe 0x80000000": "ok",
                                   "file 0x4": "ENOTDIR", "dir 0x4": "ok"})


# ---- arguments the kernel reads at their own width ----

WIDTHS = r'''
SYS_unshare, SYS_getdents64 = 272, 217
ul = ctypes.c_ulong
t("unshare high", lambda: sysc(SYS_unshare, ul(1 << 33)))
t("unshare FS", lambda: sysc(SYS_unshare, ul(0x200)))
os.mkdir("d")
for i in range(3):
    open("d/f%d" % i, "w").close()
buf = ctypes.create_string_buffer(65536)
fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
t("getdents64 2^31", lambda: sysc(SYS_getdents64, fd, buf, ul(1 << 31)))
t("getdents64 2^32-1", lambda: sysc(SYS_getdents64, fd, buf, ul((1 << 32) - 1)))
print("getdents64 whole", sysc(SYS_getdents64, fd, buf, ul(65536)) > 0)
t("getdents64 2^31 at the end", lambda: sysc(SYS_getdents64, fd, buf, ul(1 << 31)))
'''


@test
def errno_parity_argument_widths(t):
    """The kernel reads unshare's flags as an unsigned long and a listing's
    count as an int. corral truncated the flags to 32 bits and refused a
    high bit beside CLONE_NEWTIME as a namespace (EPERM, a denial) where
    the kernel answers EINVAL first, and clamped a count past INT_MAX to
    its buffer and listed where the kernel answers EINVAL (found by a
    probing session). (A high bit beside a namespace's is not asked
    here: the suite's wrapper that makes namespace creation fail answers
    it EPERM before corral sees it.)"""
    parity(t, WIDTHS, want={"unshare high": "EINVAL",
                            "getdents64 2^31": "EINVAL",
                            "getdents64 2^31 at the end": "ok"})
