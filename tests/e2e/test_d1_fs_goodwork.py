"""Filesystem confinement, used: known-good workloads inside the workspace
under the default policy must succeed with the expected output. A sandbox
that blocks attacks by blocking real work is not ready.

Each test runs in a workspace T/ws (-w) beside a fake home T/home (see
test_d0_fs_attacks), so the same secret/sentinel checks apply: real work
must not wander outside either.
"""

import json
import os
import re
import shutil
import subprocess
import socket
import tempfile
import time

from harness import CFG, Fail, eq, true, contains, test, _show
from test_d0_fs_attacks import FsFix, q, denials


def _ok(fx, run, what="run"):
    r = fx.result(run, statuses=None)
    if r.get("status") != "ok":
        raise Fail("%s: status %r exit_code %r; stderr %s; denials %s" % (
            what, r.get("status"), r.get("exit_code"),
            _show(r.get("stderr"), 900), _show(r.get("denials"), 900)))
    eq(run.code, 0, "%s: corral's exit status" % what)
    return r


@test
def fs_good_gcc(t):
    fx = FsFix(t)
    with open(fx.wsp("hello.c"), "w") as f:
        f.write('#include <stdio.h>\n#include <math.h>\n'
                'int main(void) { printf("hello %d\\n", (int)sqrt(1764.0));'
                ' return 0; }\n')
    run = fx.sh("gcc -O1 -o hello hello.c -lm && ./hello", timeout=120)
    r = _ok(fx, run, "gcc + ./hello")
    eq(r.get("stdout"), "hello 42\n", "stdout")
    true(os.path.isfile(fx.wsp("hello")), "the binary is in the workspace")
    fx.check()


@test
def fs_good_python_files(t):
    fx = FsFix(t)
    script = r'''
import os, shutil
os.makedirs("a/b/c")
for i in range(5):
    with open("a/b/f%d.txt" % i, "w") as f:
        f.write("n=%d\n" % i)
print(sorted(os.listdir("a/b")))
os.rename("a/b/f0.txt", "a/g0.txt")
os.replace("a/b/f1.txt", "a/b/f2.txt")
os.symlink("g0.txt", "a/lnk")
print(open("a/lnk").read().strip(), os.readlink("a/lnk"))
os.chmod("a/g0.txt", 0o600)
print(oct(os.stat("a/g0.txt").st_mode & 0o777))
os.unlink("a/b/f3.txt")
os.link("a/b/f4.txt", "a/b/h4.txt")
print(os.stat("a/b/h4.txt").st_nlink)
print(sorted(os.listdir("a/b")), sorted(os.listdir("a")))
shutil.rmtree("a/b")
os.rmdir("a/lnk") if False else os.unlink("a/lnk")
print(sorted(os.listdir("a")))
print([e.name for e in os.scandir(".") if e.name == "a"])
import tempfile
with tempfile.NamedTemporaryFile(dir=".", delete=True) as tf:
    tf.write(b"x"); tf.flush()
    print(os.path.exists(tf.name))
with tempfile.TemporaryDirectory() as td:
    print(td.startswith(os.getcwd()))
'''
    with open(fx.wsp("files.py"), "w") as f:
        f.write(script)
    run = fx.run(["python3", "files.py"])
    r = _ok(fx, run, "python3 files.py")
    eq(r.get("stdout"),
       "['c', 'f0.txt', 'f1.txt', 'f2.txt', 'f3.txt', 'f4.txt']\n"
       "n=0 g0.txt\n"
       "0o600\n"
       "2\n"
       "['c', 'f2.txt', 'f4.txt', 'h4.txt'] ['b', 'g0.txt', 'lnk']\n"
       "['g0.txt']\n"
       "['a']\n"
       "True\n"
       "True\n", "stdout")
    eq(sorted(os.listdir(fx.wsp("a"))), ["g0.txt"], "a/ after the run")
    fx.check()


@test
def fs_good_tar(t):
    fx = FsFix(t)
    d = fx.wsp("dir")
    os.makedirs(os.path.join(d, "sub", "deep"))
    files = {"a.txt": "alpha\n", "sub/b.bin": "\x00\x01binary\xff",
             "sub/deep/c.txt": "gamma\n" * 1000}
    for n, c in files.items():
        with open(os.path.join(d, n), "w", encoding="latin-1") as f:
            f.write(c)
    os.chmod(os.path.join(d, "a.txt"), 0o640)
    os.symlink("a.txt", os.path.join(d, "l"))
    run = fx.sh("tar czf a.tgz dir && mkdir out && tar xzf a.tgz -C out && "
                "diff -r dir out/dir && echo same && tar tzf a.tgz | sort")
    r = _ok(fx, run, "tar czf / xzf")
    eq(r.get("stdout"), "same\ndir/\ndir/a.txt\ndir/l\ndir/sub/\n"
       "dir/sub/b.bin\ndir/sub/deep/\ndir/sub/deep/c.txt\n", "stdout")
    for n, c in files.items():
        with open(os.path.join(fx.wsp("out", "dir"), n),
                  encoding="latin-1") as f:
            eq(f.read(), c, "extracted %s" % n)
    eq(os.readlink(fx.wsp("out", "dir", "l")), "a.txt", "extracted link")
    eq(oct(os.stat(fx.wsp("out", "dir", "a.txt")).st_mode & 0o777),
       oct(0o640), "extracted mode")
    fx.check()


@test
def fs_good_tree_churn(t):
    """Directories removed while the budgets' walk of the workspace reads
    them: their end, not an unmeasurable root. A build that took
    getdents64's ENOENT on a removed directory for an error ended `tar x`
    + `rm -rf` loops on 'disk' (4 runs in 5, found by the bench's w2).
    Here a tree bigger than a tick's share of the walk (2048 entries)
    moves in and out of a directory made and removed around it, so the
    walk holds that directory open across ticks and finds it removed;
    then tar x and rm -rf themselves."""
    fx = FsFix(t)
    big = fx.wsp("big")
    os.makedirs(big)
    for f in range(4000):
        with open(os.path.join(big, "f%d" % f), "w") as fh:
            fh.write("x\n")
    prog = ("import os, time\n"
            "end = time.monotonic() + 1.5\n"
            "n = 0\n"
            "while time.monotonic() < end:\n"
            "    os.mkdir('x'); os.rename('big', 'x/big')\n"
            "    time.sleep(0.002)\n"
            "    os.rename('x/big', 'big'); os.rmdir('x'); n += 1\n"
            "print('moved', n > 0, len(os.listdir('big')))\n")
    for ll in ("auto", "off"):
        run = fx.run(["python3", "-c", prog],
                     opts=["--landlock=" + ll, "--limit", "wall=60s"],
                     timeout=90)
        r = _ok(fx, run, "moves around removed directories, "
                "--landlock=%s" % ll)
        eq(r.get("stdout"), "moved True 4000\n",
           "stdout (--landlock=%s)" % ll)
    run = fx.sh("tar cf t.tar big && rm -rf big && for i in 1 2 3; do "
                "mkdir x && tar xf t.tar -C x && rm -rf x || exit 1; done "
                "&& echo churned", opts=["--limit", "wall=60s"], timeout=90)
    r = _ok(fx, run, "tar x + rm -rf")
    eq(r.get("stdout"), "churned\n", "stdout")
    fx.check()


@test
def fs_good_git(t):
    fx = FsFix(t)
    with open(fx.wsp("README"), "w") as f:
        f.write("hello\n")
    os.mkdir(fx.wsp("src"))
    with open(fx.wsp("src", "m.c"), "w") as f:
        f.write("int main(void){return 0;}\n")
    run = fx.sh("git init -q && git add . && "
                "git -c user.email=a@b -c user.name=n commit -q -m first && "
                "echo more >> README && git -c user.email=a@b "
                "-c user.name=n commit -q -am second && "
                "git log --format=%s && git status --porcelain && "
                "git ls-files", timeout=120)
    r = _ok(fx, run, "git")
    eq(r.get("stdout"), "second\nfirst\nREADME\nsrc/m.c\n", "stdout")
    true(os.path.isdir(fx.wsp(".git", "objects")), ".git made")
    # The repository is sound when checked from outside.
    chk = subprocess.run(["git", "-C", fx.ws, "fsck", "--no-progress"],
                         capture_output=True, env={"PATH": "/usr/bin:/bin",
                                                   "HOME": fx.ws})
    eq(chk.returncode, 0, "git fsck outside (%r)" % chk.stderr)
    fx.check()


@test
def fs_good_shell_pipeline(t):
    fx = FsFix(t)
    for p, text in (("a/x.txt", "needle one\n"), ("a/y.txt", "hay\n"),
                    ("b/c/z.txt", "more needle\nneedle\n"),
                    ("b/w.log", "needle\n")):
        os.makedirs(os.path.dirname(fx.wsp(p)), exist_ok=True)
        with open(fx.wsp(p), "w") as f:
            f.write(text)
    run = fx.run(["bash", "-c",
                  "set -o pipefail; find . -name '*.txt' -type f | sort | "
                  "xargs grep -c needle | sed -e 's#^\\./##' -e 's/:/ /' | "
                  "grep -v ' 0$' > counts && cat counts && "
                  "sed -i 's/needle/pin/g' b/c/z.txt && cat b/c/z.txt && "
                  "grep -rl needle . | sort && wc -l < counts"])
    r = _ok(fx, run, "bash pipeline")
    eq(r.get("stdout"), "a/x.txt 1\nb/c/z.txt 2\nmore pin\npin\n"
       "./a/x.txt\n./b/w.log\n2\n", "stdout")
    fx.check()


@test
def fs_good_multiprocessing(t):
    fx = FsFix(t)
    run = fx.run(["python3", "-c",
                  "import multiprocessing as m\n"
                  "if __name__ == '__main__':\n"
                  "    with m.Pool(3) as p:\n"
                  "        print(sum(p.map(abs, range(-10, 0))))\n"
                  "    l = m.Lock(); l.acquire(); l.release()\n"
                  "    q = m.Queue(); q.put('queued'); print(q.get())\n"],
                 timeout=120)
    r = _ok(fx, run, "multiprocessing.Pool")
    eq(r.get("stdout"), "55\nqueued\n", "stdout")
    fx.check()


@test
def fs_good_fifo(t):
    fx = FsFix(t)
    # Reader first (its open blocks until the writer comes), then the
    # other order; a blocked open must not hold up the other task's calls.
    run = fx.sh("mkfifo p && cat p > got & sleep 1; ls > /dev/null; "
                "echo hi > p; wait; cat got; "
                "mkfifo p2 && (echo there > p2 &) ; sleep 1; cat p2",
                timeout=90)
    r = _ok(fx, run, "FIFO")
    eq(r.get("stdout"), "hi\nthere\n", "stdout")
    true(r.get("usage", {}).get("wall_ms", 0) < 60000, "wall time")
    fx.check()


# Normalise what legitimately differs between two listings of the same
# tree taken at different times: nothing, given the mtimes are pinned. The
# atime is never shown.
def _pin_times(top):
    for base, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(base, n)
            os.utime(p, (1_600_000_000, 1_600_000_000), follow_symlinks=False)
    os.utime(top, (1_600_000_000, 1_600_000_000))


@test
def fs_good_differential_listing(t):
    fx = FsFix(t)
    os.makedirs(fx.wsp("d", "e"))
    for p, text, mode in (("f1", "one\n", 0o644), ("d/f2", "two two\n",
                                                   0o600),
                          ("d/e/x.sh", "#!/bin/sh\n", 0o755),
                          (".hidden", "", 0o640)):
        with open(fx.wsp(p), "w") as f:
            f.write(text)
        os.chmod(fx.wsp(p), mode)
    os.symlink("d/f2", fx.wsp("ln"))
    os.mkfifo(fx.wsp("fifo"))
    script = ("ls -la --time-style=+%s; echo ---; ls -laR --time-style=+%s d;"
              " echo ---; stat -c '%n|%s|%F|%a|%h|%u|%g|%i|%Y' * .hidden d/* "
              "d/e/*; echo ---; stat -L -c '%n|%s|%F|%i' ln; echo ---; "
              "find . -type f | sort; echo ---; find . | sort; echo ---; "
              "python3 -c 'import os; print(sorted(os.listdir(\".\"))); "
              "print(sorted((e.name, e.is_dir(), e.is_symlink()) "
              "for e in os.scandir(\"d\")))'; du -a --apparent-size -b d | "
              "sort -k2")
    _pin_times(fx.ws)
    run = fx.sh(script)
    r = _ok(fx, run, "listing under corral")
    _pin_times(fx.ws)
    nat = fx.native(["sh", "-c", script],
                    env={"HOME": fx.ws, "TMPDIR": fx.ws})
    eq(nat.code, 0, "native listing (%r)" % nat.err)
    got = r.get("stdout", "").split("\n")
    want = nat.out.decode().split("\n")
    if got != want:
        diffs = [(i, g, w) for i, (g, w) in enumerate(zip(got, want))
                 if g != w]
        raise Fail("listing differs from the native one: %d vs %d lines; "
                    "first differences (line, corral, native): %s" % (
                        len(got), len(want), _show(diffs[:6], 900)))
    contains(r.get("stdout"), "x.sh", "listing")
    fx.check()


@test
def fs_good_extra_roots(t):
    """--rw, --ro and --exec add roots with exactly that access."""
    fx = FsFix(t)
    rw = os.path.join(fx.root, "rw")
    ro = os.path.join(fx.root, "ro")
    ex = os.path.join(fx.root, "ex")
    for d in (rw, ro, ex):
        os.mkdir(d)
    with open(os.path.join(ro, "data"), "w") as f:
        f.write("ro data\n")
    with open(os.path.join(rw, "old"), "w") as f:
        f.write("rw old\n")
    import shutil
    shutil.copy2("/usr/bin/touch", os.path.join(ex, "mytouch"))
    os.chmod(os.path.join(ex, "mytouch"), 0o755)
    run = fx.sh(
        "cat %(ro)s/data && cat %(rw)s/old && echo new > %(rw)s/new && "
        "mkdir %(rw)s/sub && mv %(rw)s/old %(rw)s/sub/moved && "
        "%(ex)s/mytouch made && ls %(ro)s %(rw)s && cp %(ro)s/data copy && "
        "if echo x > %(ro)s/data; then echo ro-writable; fi; "
        "ls %(ex)s"
        % {"ro": q(ro), "rw": q(rw), "ex": q(ex)},
        opts=["--ro", ro, "--rw", rw, "--exec", ex])
    r = _ok(fx, run, "extra roots")
    eq(r.get("stdout"), "ro data\nrw old\n%s:\ndata\n\n%s:\nnew\nsub\n"
       "mytouch\n" % (ro, rw), "stdout")
    with open(os.path.join(rw, "new")) as f:
        eq(f.read(), "new\n", "file written in the --rw root")
    true(os.path.exists(os.path.join(rw, "sub", "moved")), "rename in the "
         "--rw root")
    true(os.path.exists(fx.wsp("made")), "the --exec binary ran")
    with open(os.path.join(ro, "data")) as f:
        eq(f.read(), "ro data\n", "the --ro file")
    targets = [d.get("target") for d in denials(r)]
    true(os.path.join(ro, "data") in targets, "no denial for the write to "
         "the --ro file: %s" % _show(r.get("denials"), 900))
    bad = [x for x in targets if x and (x.startswith(rw) or x.startswith(ex)
                                        or x.startswith(fx.ws))]
    eq(bad, [], "denials inside the --rw/--exec roots or the workspace")
    fx.check()


@test
def fs_good_default_tools(t):
    """Everyday commands that read the system's configuration: they must
    work with the default read roots (locale, passwd, certificates...)."""
    fx = FsFix(t)
    run = fx.sh("id -un; ls -ld /usr/bin >/dev/null && echo ls; "
                "date -u -d @0 +%Y; "
                "python3 -c 'import ssl, json, sqlite3, locale; "
                "ssl.create_default_context(); print(\"py\")'; "
                "printf 'b\\na\\n' | sort; make --version | head -1 | "
                "cut -d' ' -f1-2; env | grep -c '^HOME='; "
                "mktemp -d | grep -c \"^$PWD\"",
                env={"LANG": "C.UTF-8"})
    r = _ok(fx, run, "default tools")
    lines = r.get("stdout", "").split("\n")
    true(len(lines) >= 8, "stdout %r" % r.get("stdout"))
    true(re.match(r"^\S+$", lines[0]), "id -un: %r" % lines[0])
    eq(lines[1:8], ["ls", "1970", "py", "a", "b", "GNU Make", "1"],
       "stdout lines 2-8")
    eq(lines[8:9], ["1"], "mktemp -d under the workspace")
    fx.check()


SYMLINK_META = r'''
import os, stat
def tryit(name, f):
    try:
        print(name, f())
    except OSError as e:
        print(name, "errno", e.errno)
    except NotImplementedError as e:
        print(name, "notimpl")
tryit("lstat", lambda: stat.S_ISLNK(os.lstat("l").st_mode))
tryit("stat", lambda: os.stat("l").st_size)
tryit("readlink", lambda: os.readlink("l"))
# readlink of what is no link (answered from the resolution's lstat),
# and through trailing slashes and dot components (asked of the kernel).
tryit("readlink_file", lambda: os.readlink("target"))
tryit("readlink_dir", lambda: os.readlink("dd"))
tryit("readlink_missing", lambda: os.readlink("nothere"))
tryit("readlink_dot", lambda: os.readlink("dd/."))
tryit("readlink_dotdot", lambda: os.readlink("dd/sub/.."))
tryit("readlink_dirlink_slash", lambda: os.readlink("dl/"))
tryit("readlink_filelink_slash", lambda: os.readlink("l/"))
tryit("readlink_file_slash", lambda: os.readlink("target/"))
tryit("readlink_dangling_slash", lambda: os.readlink("dang/"))
tryit("opath_nofollow", lambda: stat.S_ISLNK(os.fstat(
    os.open("l", os.O_PATH | os.O_NOFOLLOW)).st_mode))
tryit("rdonly_nofollow", lambda: os.open("l", os.O_RDONLY | os.O_NOFOLLOW))
tryit("utime_nofollow", lambda: os.utime("l", (5, 5), follow_symlinks=False)
      or os.lstat("l").st_mtime)
tryit("chown_nofollow", lambda: os.chown("l", os.getuid(), os.getgid(),
                                         follow_symlinks=False))
tryit("access", lambda: os.access("l", os.R_OK))
# The "" forms on an O_PATH fd of the link: its times set, no modes
# (EOPNOTSUPP); an earlier build answered EBADF to both (found by a
# differential probing session).
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
def _empty(nr, fd, *rest):
    if _libc.syscall(nr, fd, b"", *rest) < 0:
        raise OSError(ctypes.get_errno(), "")
    return 0
_lfd = os.open("l", os.O_PATH | os.O_NOFOLLOW)
_ts = (ctypes.c_long * 4)(7, 0, 7, 0)
tryit("opath_link_utimensat_empty",
      lambda: _empty(280, _lfd, _ts, 0x1000) or os.lstat("l").st_mtime)
tryit("opath_link_fchmodat2_empty", lambda: _empty(452, _lfd, 0o600, 0x1000))
tryit("dangling_lstat", lambda: stat.S_ISLNK(os.lstat("dang").st_mode))
tryit("dangling_stat", lambda: os.stat("dang"))
tryit("dir_slash", lambda: os.stat("dl/").st_size > 0)
tryit("file_slash", lambda: os.stat("target/"))
tryit("enotdir", lambda: os.stat("target/x"))
tryit("exist", lambda: os.mkdir("dd"))
tryit("notempty", lambda: os.rmdir("dl"))
tryit("eexist_link", lambda: os.symlink("x", "l"))
tryit("isdir", lambda: os.open("dd", os.O_WRONLY))
# O_CREAT through a dangling symlink creates its target (inside the root).
tryit("create_through_dangling", lambda: open("dang2", "w").close()
      or os.path.exists("created"))
tryit("excl_through_symlink", lambda: os.open("dang", os.O_WRONLY |
                                              os.O_CREAT | os.O_EXCL))
# O_PATH needs no permission on the object and never blocks on a FIFO.
tryit("opath_noperm", lambda: stat.S_IMODE(os.fstat(
    os.open("noperm", os.O_PATH)).st_mode))
tryit("opath_dir_fchdir", lambda: os.fchdir(os.open("dd", os.O_PATH))
      or os.path.basename(os.getcwd()))
# An O_PATH fd of a link is the link to the calls that take it (GNU Emacs's
# file-attributes, glibc's lchmod), and nothing to read or write through.
os.chdir("..")
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def c_call(fn, *a):
    r = fn(*a)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
lfd = os.open("l", os.O_PATH | os.O_NOFOLLOW)
tryit("opath_link_fstat_size", lambda: os.fstat(lfd).st_size)
tryit("opath_link_readlinkat", lambda: os.readlink("", dir_fd=lfd))
tryit("opath_link_read", lambda: os.read(lfd, 1))
tryit("opath_link_write", lambda: os.write(lfd, b"x"))
tryit("opath_link_ftruncate", lambda: os.ftruncate(lfd, 4096))
tryit("opath_link_fchdir", lambda: os.fchdir(lfd))
tryit("opath_link_below", lambda: os.open("x", os.O_RDONLY, dir_fd=lfd))
tryit("opath_link_fchown", lambda: os.fchown(lfd, os.getuid(), os.getgid()))
tryit("opath_link_fchownat", lambda: c_call(
    libc.fchownat, lfd, b"", os.getuid(), os.getgid(), 0x1000))
tryit("opath_link_linkat", lambda: c_call(
    libc.linkat, lfd, b"", -100, b"hardl", 0x1000) or
      stat.S_ISLNK(os.lstat("hardl").st_mode))
tryit("opath_link_dir", lambda: os.open("l", os.O_PATH | os.O_NOFOLLOW |
                                        os.O_DIRECTORY))
tryit("opath_dangling", lambda: os.readlink("", dir_fd=os.open(
    "dang", os.O_PATH | os.O_NOFOLLOW)))
tryit("lchmod_link", lambda: os.chmod("l", 0o600, follow_symlinks=False))
os.close(lfd)
def churn():
    for i in range(600):
        os.close(os.open("l", os.O_PATH | os.O_NOFOLLOW))
    return i
tryit("opath_link_churn", churn)
'''


@test
def fs_good_symlink_metadata(t):
    """Operations on symlinks themselves, O_PATH opens and the native errno
    values: the same natively and under corral (tar, cp -a, rsync and
    glibc's fchmodat(AT_SYMLINK_NOFOLLOW) rely on them)."""
    fx = FsFix(t)
    for ws in (fx.ws, os.path.join(fx.root, "natws")):
        os.makedirs(os.path.join(ws, "dd", "sub"), exist_ok=True)
        with open(os.path.join(ws, "target"), "w") as f:
            f.write("target\n")
        os.symlink("target", os.path.join(ws, "l"))
        os.symlink("missing", os.path.join(ws, "dang"))
        os.symlink("dd", os.path.join(ws, "dl"))
        os.symlink("created", os.path.join(ws, "dang2"))
        with open(os.path.join(ws, "noperm"), "w") as f:
            f.write("x")
        os.chmod(os.path.join(ws, "noperm"), 0)
    natws = os.path.join(fx.root, "natws")

    def pre():
        os.chdir(natws)
    nat = t.native(["python3", "-c", SYMLINK_META], preexec=pre)
    eq(nat.code, 0, "native run (%r)" % nat.err)
    run = fx.run(["python3", "-c", SYMLINK_META])
    r = _ok(fx, run, "symlink metadata")
    got = r.get("stdout", "").split("\n")
    want = nat.out.decode().split("\n")
    # A documented difference (docs/policy.md): ADDFD cannot carry an
    # O_PATH fd, so O_PATH opens become read-only opens. Of a link, a
    # stand-in that the path calls take for the link.
    # ftruncate is not notified: on the stand-in, a file open neither to
    # read nor to write, it is EINVAL where an O_PATH fd gives EBADF.
    documented = {"opath_noperm errno 13", "opath_link_ftruncate errno 22"}
    diffs = [(w.split(" ")[0], g, w) for g, w in zip(got, want)
             if g != w and g not in documented]
    eq(diffs, [], "differences from native (op, corral, native)")
    eq(len(got), len(want), "lines")
    fx.check()


def _bounded(fx, cmd, opts, what, timeout=45):
    """Run with a wall limit well below timeout: a run that outlives it
    means the supervisor itself is stuck (it enforces the limit)."""
    try:
        return fx.run(cmd, opts=opts, timeout=timeout)
    except Fail as e:
        raise Fail("%s: corral did not finish within %ds despite %s: the "
                   "supervisor itself is blocked (%s)" % (
                       what, timeout, " ".join(opts), e))


@test
def fs_opath_fifo_no_block(t):
    """open(fifo, O_PATH) never blocks natively; under corral it must not
    block the program, nor the supervisor (which enforces the limits)."""
    fx = FsFix(t)
    os.mkfifo(fx.wsp("fifo"))
    run = _bounded(fx, ["python3", "-c",
                        "import os, stat\n"
                        "fd = os.open('fifo', os.O_PATH)\n"
                        "print(stat.S_ISFIFO(os.fstat(fd).st_mode))"],
                   ["--limit", "wall=10s"], "O_PATH open of a FIFO")
    r = _ok(fx, run, "O_PATH open of a FIFO")
    eq(r.get("stdout"), "True\n", "stdout")
    fx.check()


@test
def fs_fifo_blocked_open_limits(t):
    """A task blocked opening a FIFO nobody will ever write: the other
    tasks are still served, and the wall limit still ends the run."""
    fx = FsFix(t)
    run = _bounded(fx, ["sh", "-c",
                        "mkfifo p; cat p & sleep 1; ls -la >/dev/null && "
                        "stat p >/dev/null && echo served; wait"],
                   ["--limit", "wall=8s"], "blocked FIFO open")
    r = fx.result(run, statuses=("limit_exceeded",))
    eq(r.get("limit"), "wall", "limit")
    eq(r.get("stdout"), "served\n", "stdout (other tasks served)")
    eq(r.get("cleanup", {}).get("leftover_processes"), 0,
       "cleanup.leftover_processes")
    fx.check()


@test
def fs_good_make_and_scripts(t):
    """make driving gcc, and scripts written in the workspace run through
    their #! interpreter (an exec root)."""
    fx = FsFix(t)
    with open(fx.wsp("Makefile"), "w") as f:
        f.write("all: prog\n\tmkdir -p out && ./prog > out/result\n"
                "prog: prog.o util.o\n\t$(CC) -o $@ $^\n"
                "%.o: %.c\n\t$(CC) -c -O1 -o $@ $<\n"
                "clean:\n\trm -f prog *.o\n")
    with open(fx.wsp("prog.c"), "w") as f:
        f.write("int twice(int);\n#include <stdio.h>\n"
                "int main(void){printf(\"%d\\n\", twice(21));return 0;}\n")
    with open(fx.wsp("util.c"), "w") as f:
        f.write("int twice(int x){return 2*x;}\n")
    run = fx.sh("make -s CC=gcc && cat out/result && "
                "printf '#!/bin/sh\\necho script \"$@\"\\n' > s.sh && "
                "chmod +x s.sh && ./s.sh one && "
                "printf '#!/usr/bin/env python3\\nprint(\"py-script\")\\n'"
                " > p.py && chmod 755 p.py && ./p.py && make -s clean && ls",
                timeout=120)
    r = _ok(fx, run, "make and scripts")
    eq(r.get("stdout"), "42\nscript one\npy-script\nMakefile\nout\n"
       "p.py\nprog.c\ns.sh\nutil.c\n", "stdout")
    fx.check()


@test
def fs_good_deep_paths(t):
    """A tree deeper than PATH_MAX as an absolute path: natively fine when
    walked relatively; under corral the same (or a clean error), never a
    crash of the supervisor."""
    fx = FsFix(t)
    script = r'''
import os
name = "d" * 200
for i in range(30):
    os.mkdir(name)
    os.chdir(name)
with open("f", "w") as f:
    f.write("deep\n")
print(open("f").read().strip(), sorted(os.listdir(".")), os.stat("f").st_size)
os.rename("f", "g")
os.symlink("g", "l")
print(open("l").read().strip(), len(os.getcwd()) > 4096)
'''
    nat = _native_beside(t, fx, ["python3", "-c", script])
    run = fx.run(["python3", "-c", script])
    r = fx.result(run, statuses=None)
    true(r.get("status") in ("ok", "program_error"), "status %r (%s)" % (
        r.get("status"), r.get("message")))
    # docs/policy.md: a cwd deeper than PATH_MAX cannot be named, so
    # corral answers ENAMETOOLONG there (fails closed) instead of guessing.
    if r.get("stdout") != nat.out.decode():
        contains(r.get("stderr", ""), "File name too long",
                 "stdout differs from native (%r) and the error is not the "
                 "documented ENAMETOOLONG" % nat.out)
        eq(r.get("status"), "program_error", "status")
    # Remove it from outside (rmtree copes with the depth).
    fx.check()


@test
def fs_good_odd_names(t):
    """File names with newlines, spaces and bytes that are not UTF-8: the
    same natively and under corral."""
    fx = FsFix(t)
    script = r'''
import os
names = [b"caf\xe9", b"new\nline", b" sp ace ", b"-dash", b"\xff\xfe"]
for n in names:
    with open(n, "wb") as f:
        f.write(n)
# Hex: corral's result escapes non-UTF-8 bytes and backslashes by design.
print(sorted(n.hex() for n in os.listdir(b".")))
for n in names:
    os.rename(n, n + b".x")
    with open(n + b".x", "rb") as f:
        assert f.read() == n
print(sorted(n.hex() for n in os.listdir(b".")))
'''
    nat = _native_beside(t, fx, ["python3", "-c", script])
    run = fx.run(["python3", "-c", script])
    r = _ok(fx, run, "odd names")
    eq(r.get("stdout"), nat.out.decode(), "stdout")
    fx.check()


def _native_beside(t, fx, argv):
    """argv run natively in a fresh directory beside the workspace, for a
    side-by-side comparison; it must succeed."""
    natws = os.path.join(fx.root, "natws")
    os.mkdir(natws)

    def pre():
        os.chdir(natws)
    nat = t.native(argv, preexec=pre)
    eq(nat.code, 0, "native (%r)" % nat.err[-300:])
    return nat


@test
def fs_good_umask_cloexec(t):
    """Files the supervisor creates for the program get the program's
    umask; O_CLOEXEC is honoured on the descriptors it injects."""
    fx = FsFix(t)
    script = ("umask 077; touch a; mkdir da; umask 022; touch b; mkdir db; "
              "umask 0; mkfifo p; stat -c '%n %a' a da b db p; "
              "exec 3<a; sh -c 'cat <&3 >/dev/null && echo inherited'; "
              "python3 -c 'import os; fd = os.open(\"b\", os.O_RDONLY); "
              "print(os.get_inheritable(fd)); os.execv(\"/bin/ls\", "
              "[\"ls\", \"/proc/self/fd\"])'")
    nat = _native_beside(t, fx, ["sh", "-c", script])
    run = fx.sh(script)
    r = _ok(fx, run, "umask and O_CLOEXEC")
    eq(r.get("stdout"), nat.out.decode(), "stdout")
    fx.check()


@test
def fs_good_empty_path_forms_on_an_fd(t):
    """statx(fd, NULL, AT_EMPTY_PATH) (Linux 6.11+ takes NULL as ""),
    fchmodat2(fd, "", mode, AT_EMPTY_PATH) and utimensat(fd, "", NULL,
    AT_EMPTY_PATH) act on the fd's object, natively and under corral (an
    earlier build answered EFAULT, ENOENT and ENOENT); on a file of a read
    root the two changes are still refused."""
    fx = FsFix(t, ro=True)
    with open(fx.wsp("f"), "w") as f:
        f.write("x")
    os.chmod(fx.wsp("f"), 0o644)
    nat = fx.native([t.prog("fs_probe"), "fdforms", "f"])
    run = fx.probe(["fdforms", fx.wsp("f"), "fdforms", fx.ro_file],
                   opts=["--ro", fx.ro])
    r = _ok(fx, run)
    out = r.get("stdout", "")
    for op in ("statx0", "fchmodat2", "utimensat"):
        ok_native = "%s f: ok" % op in nat.out.decode()
        contains(out, "%s %s: %s" % (op, fx.wsp("f"),
                                     "ok" if ok_native else ""),
                 "%s in the workspace as natively" % op)
    os.mkdir(fx.wsp("d"))
    run = fx.probe(["cwdforms", fx.wsp("d")])
    out2 = _ok(fx, run).get("stdout", "")
    for op in ("cwd-fchmodat2", "cwd-utimensat"):
        contains(out2, "%s %s: ok" % (op, fx.wsp("d")),
                 "%s of the cwd (an earlier build: ENOENT)" % op)
    contains(out, "statx0 %s: ok" % fx.ro_file, "statx of a read-root file")
    contains(out, "fchmodat2 %s: EACCES" % fx.ro_file, "chmod refused")
    contains(out, "utimensat %s: EACCES" % fx.ro_file, "utimes refused")
    fx.check()


@test
def fs_good_creation_modes_follow_umask_and_default_acl(t):
    """The supervisor creates files, directories, FIFOs and unix sockets
    for the program: each must get the mode the kernel would give the
    program. A unix bind ignored the umask (0777: any local user could
    connect to a socket made under umask 077), and under a directory
    with a default ACL the umask was applied where the kernel skips it.
    Compared with the same script run natively."""
    fx = FsFix(t)
    script = (
        "import os, socket, stat, struct\n"
        "def m(p):\n"
        "    return '%s %o' % (p, stat.S_IMODE(os.lstat(p).st_mode))\n"
        "os.umask(0o077)\n"
        "s = socket.socket(socket.AF_UNIX); s.bind('s077')\n"
        "os.umask(0o022)\n"
        "d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind('d022')\n"
        "os.mkdir('shared')\n"
        "acl = struct.pack('<I', 2) + b''.join(\n"
        "    struct.pack('<HHI', tag, 7, 0xffffffff) for tag in (1, 4, 0x20))\n"
        "os.setxattr('shared', 'system.posix_acl_default', acl)\n"
        "os.umask(0o077)\n"
        "open('shared/f', 'w').close()\n"
        "os.mkdir('shared/d')\n"
        "os.mkfifo('shared/p')\n"
        "a = socket.socket(socket.AF_UNIX); a.bind('shared/s')\n"
        "open('plain', 'w').close()\n"
        "for p in ('s077', 'd022', 'shared/f', 'shared/d', 'shared/p',\n"
        "          'shared/s', 'plain'):\n"
        "    print(m(p))\n")
    nat = _native_beside(t, fx, ["python3", "-c", script])
    contains(nat.out.decode(), "s077 700\n", "native socket mode (setup)")
    contains(nat.out.decode(), "shared/f 666\n", "native ACL mode (setup)")
    run = fx.run(["python3", "-c", script])
    r = _ok(fx, run, "creation modes")
    eq(r.get("stdout"), nat.out.decode(), "stdout")
    fx.check()


@test
def fs_good_umask_changes_are_seen_by_every_sharer(t):
    """The umask corral creates files under is kept between creations
    (read once from /proc, forgotten at every umask call): a change by
    another thread (threads share it), by a thread still running when the
    next file is made, in a forked child (its own copy), and the
    read-and-restore idiom must all give the modes the kernel gives.
    Compared with the same script run natively."""
    fx = FsFix(t)
    script = (
        "import os, stat, threading\n"
        "def m(p):\n"
        "    return '%s %o' % (p, stat.S_IMODE(os.lstat(p).st_mode))\n"
        "os.umask(0o022)\n"
        "open('a', 'w').close()\n"
        "th = threading.Thread(target=os.umask, args=(0o077,))\n"
        "th.start(); th.join()\n"
        "open('b', 'w').close()\n"
        "e1, e2 = threading.Event(), threading.Event()\n"
        "def t2():\n"
        "    os.umask(0o027); e1.set(); e2.wait()\n"
        "th = threading.Thread(target=t2); th.start(); e1.wait()\n"
        "open('c', 'w').close()\n"
        "e2.set(); th.join()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.umask(0o002); open('d', 'w').close(); os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "open('e', 'w').close()\n"
        "os.mkdir('f'); os.mkfifo('g')\n"
        "old = os.umask(0); os.umask(old)\n"
        "open('h', 'w').close()\n"
        "os.umask(0)\n"
        "open('i', 'w').close()\n"
        "for p in 'abcdefghi':\n"
        "    print(m(p))\n")
    nat = _native_beside(t, fx, ["python3", "-c", script])
    eq(nat.out.decode(), "a 644\nb 600\nc 640\nd 664\ne 640\nf 750\n"
       "g 640\nh 640\ni 666\n", "native modes (setup)")
    for mode in ("--landlock=off", "--landlock=auto"):
        for p in "abcdefghi":
            q = fx.wsp(p)
            if os.path.isdir(q):
                os.rmdir(q)
            elif os.path.lexists(q):
                os.unlink(q)
        run = fx.run(["python3", "-c", script], opts=[mode])
        r = _ok(fx, run, "umask changes " + mode)
        eq(r.get("stdout"), nat.out.decode(), mode + ": stdout")
    fx.check()


@test
def fs_good_umask_of_a_thread_that_execs(t):
    """A thread with a filesystem context of its own (unshare(CLONE_FS),
    as Go's LockOSThread does) and its own umask execs: the process's tid
    now carries that umask. The umask corral kept for the tid was the
    old leader's (read for a file the leader made after the thread's
    umask call had run), and files, directories and unix sockets of the new
    image were made 666/777 where the kernel gives 600/700 (found by a
    probing session). Compared with a native run."""
    fx = FsFix(t)
    script = (
        "import ctypes, os, socket, stat, sys, threading\n"
        "def m(p):\n"
        "    return '%s %o' % (p, stat.S_IMODE(os.lstat(p).st_mode))\n"
        "if sys.argv[1:] == ['after']:\n"
        "    open('c', 'w').close(); os.mkdir('d')\n"
        "    socket.socket(socket.AF_UNIX).bind('s')\n"
        "    for p in ('a', 'b', 'a2', 'c', 'd', 's'):\n"
        "        print(m(p))\n"
        "    sys.exit(0)\n"
        "os.umask(0)\n"
        "open('a', 'w').close()\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "own, made = threading.Event(), threading.Event()\n"
        "def th():\n"
        "    if libc.unshare(0x200):\n"
        "        print('unshare', ctypes.get_errno()); os._exit(1)\n"
        "    os.umask(0o077)\n"
        "    open('b', 'w').close()\n"
        "    own.set(); made.wait(30)\n"
        "    os.execv(sys.executable, [sys.executable, sys.argv[0], 'after'])\n"
        "threading.Thread(target=th).start()\n"
        "own.wait(30)\n"
        "open('a2', 'w').close()\n"
        "made.set()\n"
        "threading.Event().wait(30)\n")
    path = os.path.join(fx.root, "umexec.py")
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, 0o644)
    nat = _native_beside(t, fx, ["python3", path])
    eq(nat.out.decode(), "a 666\nb 600\na2 666\nc 600\nd 700\ns 700\n",
       "native modes (setup)")
    for mode in ("--landlock=off", "--landlock=auto"):
        for p in ("a", "b", "a2", "c", "d", "s"):
            q = fx.wsp(p)
            if os.path.isdir(q):
                os.rmdir(q)
            elif os.path.lexists(q):
                os.unlink(q)
        run = fx.run(["python3", path], opts=[mode, "--ro", path])
        r = _ok(fx, run, "umask after exec " + mode)
        eq(r.get("stdout"), nat.out.decode(), mode + ": stdout")
    fx.check()


@test
def fs_unix_connect_outside_every_root_looks_absent(t):
    """A unix socket path outside every root answers ENOENT, as any path
    there does (a missing /dev/log or daemon socket is ENOENT natively);
    it answered EACCES. A socket that exists there answers the same, and
    is recorded."""
    fx = FsFix(t)
    host = os.path.join(fx.root, "host.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(host)
    srv.listen(1)
    os.chmod(host, 0o777)
    try:
        code = (
            "import errno, socket, sys\n"
            "for p in sys.argv[1:]:\n"
            "    c = socket.socket(socket.AF_UNIX)\n"
            "    try:\n"
            "        c.connect(p); print(p, 'connected')\n"
            "    except OSError as e:\n"
            "        print(p, errno.errorcode[e.errno])\n")
        run = fx.run(["python3", "-c", code, "/nonexistent-dir/x.sock",
                      host])
        r = _ok(fx, run, "unix connects")
        eq(r.get("stdout"), "/nonexistent-dir/x.sock ENOENT\n%s ENOENT\n"
           % host, "stdout")
        true(any(d.get("target") == host for d in denials(r)),
             "no denial for the host socket: %s" % _show(r.get("denials")))
    finally:
        srv.close()
    fx.check()


TMPFILE_SCRIPT = r'''
import ctypes, errno, os
libc = ctypes.CDLL(None)
libc.tmpfile.restype = ctypes.c_void_p
libc.fileno.argtypes = [ctypes.c_void_p]
f = libc.tmpfile()
print("tmpfile", bool(f))
fd = libc.fileno(f)
os.write(fd, b"hello")
os.lseek(fd, 0, 0)
print(os.read(fd, 5).decode(), os.fstat(fd).st_nlink)
t = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)
print(oct(os.fstat(t).st_mode & 0o777))
def err(path, flags):
    try:
        os.open(path, flags, 0o600)
        return "opened"
    except OSError as e:
        return errno.errorcode[e.errno]
print("rdonly", err("/tmp", os.O_TMPFILE | os.O_RDONLY))
print("below", err("/tmp/no-such-dir-e2e", os.O_TMPFILE | os.O_RDWR))
print("creat", err("/tmp/e2e-named-%d" % os.getpid(), os.O_CREAT | os.O_WRONLY))
print(sorted(os.listdir(".")))
'''


def _tmpfile_in(t, fx_ws_parent):
    """The script and `make -O -j2` in a workspace under fx_ws_parent."""
    ws = tempfile.mkdtemp(prefix="e2e-tmpfile-", dir=fx_ws_parent)
    try:
        with open(os.path.join(ws, "t.py"), "w") as f:
            f.write(TMPFILE_SCRIPT)
        with open(os.path.join(ws, "Makefile"), "w") as f:
            f.write("all: a b\na:\n\t@echo A1; echo A2\n"
                    "b:\n\t@echo B1; echo B2\n")
        run = t.corral(["run", "--json", "-w", ws, "--", "sh", "-c",
                        "python3 t.py && make -s -O -j2"], timeout=60)
        r = t.result(run)
        eq(r.get("status"), "ok", "status (stderr %r, denials %r)" %
           (r.get("stderr", "")[-400:], r.get("denials")))
        out = r.get("stdout", "")
        # A name made in /tmp: refused as in a directory seen but not
        # writable where /tmp is the workspace's ancestor, else absent.
        seen = os.path.realpath(ws).startswith("/tmp/")
        eq(out.split("\n")[:7],
           ["tmpfile True", "hello 0", "0o600", "rdonly EINVAL",
            "below ENOENT", "creat %s" % ("EACCES" if seen else "ENOENT"),
            "['Makefile', 't.py']"],
           "tmpfile() and O_TMPFILE of /tmp (stdout %r)" % out)
        # make -O holds each job's output in a tmpfile(): whole, in order.
        true("A1\nA2\n" in out and "B1\nB2\n" in out,
             "make -O output kept together: %r" % out)
        eq(sorted(os.listdir(ws)), ["Makefile", "t.py"],
           "nothing named left in the workspace")
        # Only the names outside the run were refused, not /tmp itself.
        targets = sorted(d.get("target", "") for d in r.get("denials", []))
        true(all(x.startswith("/tmp/") for x in targets),
             "denials only for the names below /tmp: %r" % targets)
    finally:
        shutil.rmtree(ws, ignore_errors=True)


@test
def fs_good_tmpfile_in_tmp_is_made_in_the_workspace(t):
    """glibc's tmpfile() ignores TMPDIR and opens /tmp with O_TMPFILE;
    /tmp is not the run's, so tmpfile() failed and GNU make -O (each
    job's output in a tmpfile) failed with it. An O_TMPFILE open of /tmp
    itself is now made in the workspace: no name anywhere, nothing of
    the host's /tmp reached, a name below /tmp still absent. Both where
    /tmp is seen (the workspace's ancestor) and where it is not."""
    _tmpfile_in(t, t.tmp)
    _tmpfile_in(t, "/var/tmp")


@test
def fs_tmpfile_in_tmp_stays_refused_where_the_policy_denies_tmp(t):
    """A class that denies /tmp means it: tmpfile()'s O_TMPFILE open of
    /tmp is refused and recorded, as every other spelling of /tmp is,
    rather than made in the workspace unrecorded (found by a probing
    session)."""
    import json
    from harness import CFG
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["deny"] = ["/tmp"]
    pfile = t.path("deny-tmp.json")
    with open(pfile, "w") as f:
        json.dump(pol, f)
    ws = tempfile.mkdtemp(prefix="e2e-tmpdeny-", dir="/var/tmp")
    try:
        script = ("import errno, os\n"
                  "try:\n"
                  "    os.open('/tmp', os.O_TMPFILE | os.O_RDWR, 0o600)\n"
                  "    print('opened')\n"
                  "except OSError as e:\n"
                  "    print(errno.errorcode[e.errno])\n")
        run = t.corral(["run", "--json", "--policy", pfile, "-w", ws, "--",
                        "python3", "-c", script])
        r = t.result(run)
        eq(r.get("stdout"), "ENOENT\n", "O_TMPFILE of a denied /tmp (stderr %r)"
           % r.get("stderr"))
        true(any(d.get("target") == "/tmp" and d.get("syscall") == "openat"
                 for d in r.get("denials", [])),
             "a denial for /tmp: %r" % r.get("denials"))
        eq(os.listdir(ws), [], "nothing in the workspace")
    finally:
        shutil.rmtree(ws, ignore_errors=True)


@test
def fs_good_tmpfile_named_through_proc_self_fd(t):
    """open(2)'s way of giving an O_TMPFILE a name without a capability:
    linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD, name, AT_SYMLINK_FOLLOW).
    The walk cannot follow a link to a file without a name, so it failed
    ENOENT under corral (found by a probing session); it now names the
    caller's own fd, as AT_EMPTY_PATH does. A file outside the writable
    roots named the same way is still not linked in."""
    fx = FsFix(t)
    script = (
        "import ctypes, errno, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def link(src, dst):\n"
        "    if libc.linkat(-100, src.encode(), -100, dst.encode(), 0x400) < 0:\n"
        "        return errno.errorcode[ctypes.get_errno()]\n"
        "    return 'linked'\n"
        "forms = ('/proc/self/fd/%d', '/dev/fd/%d', '/proc/%d/fd/%%d' % os.getpid())\n"
        "for i, form in enumerate(forms):\n"
        "    fd = os.open('.', os.O_TMPFILE | os.O_RDWR, 0o600)\n"
        "    os.write(fd, form.encode())\n"
        "    name = 'n%d' % i\n"
        "    print(link(form % fd, name), open(name).read() == form)\n"
        "    os.close(fd)\n"
        "print('badfd', link('/proc/self/fd/999', 'never'))\n"
        "ro = os.open('/etc/hostname', os.O_RDONLY)\n"
        "print('ro', link('/proc/self/fd/%d' % ro, 'host'), os.path.exists('host'))\n")
    run = fx.run(["python3", "-c", script])
    r = _ok(fx, run, "link through /proc/self/fd")
    out = r.get("stdout", "")
    eq(out.split("\n")[:3], ["linked True"] * 3, "the three forms (%r)" % out)
    eq(out.split("\n")[3], "badfd ENOENT",
       "a descriptor not open is a name that does not exist, as natively")
    true(out.split("\n")[4].startswith("ro ") and
         out.split("\n")[4].endswith(" False") and "linked" not in out.split("\n")[4],
         "a read-only root's file is not linked in: %r" % out)
    fx.check()


TOGGLE = r"""
import os, time
os.mkdir("D")
for i in range(6000):
    open("D/f%d" % i, "w").close()
end = time.time() + 3
n = 0
while time.time() < end:
    os.chmod("D", 0o600)    # readable, not searchable
    time.sleep(0.02)
    os.chmod("D", 0o755)
    time.sleep(0.02)
    n += 1
print("flipped", n > 10)
"""


@test
def fs_directory_toggled_unsearchable_during_the_walk(t):
    """A test suite that takes the search bit from a large directory of
    its own now and then: the disk walk, which holds a directory open
    across ticks, could no longer look at its entries and ended the run
    ("cannot be measured"), 6 runs in 6 (found by a differential probe).
    It now lends itself the owner's bits and finishes that directory in
    one go; every file is counted."""
    ws = t.path("ws")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    script = os.path.join(ws, "toggle.py")
    with open(script, "w") as f:
        f.write(TOGGLE)
    run = t.corral(["run", "--json", "-w", ws, "--", "python3", script],
                   timeout=120)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (%r)" % r.get("message"))
    eq(r.get("stdout"), "flipped True\n", "stdout")
    true(r["usage"]["files"] >= 6001, "usage.files %d" % r["usage"]["files"])


@test
def fs_good_timestamps_keep_their_grain(t):
    """Two files made one after the other, in the workspace and in a
    directory of it, get the same coarse timestamp when no tick passed
    between them, as natively: since Linux 6.13 a stamp is fine-grained
    only when somebody asked for the inode's times since its last change,
    and the supervisor's own look at the parent (or the disk walk's) must
    not count as asking. An earlier build stat'ed the parent of every
    name it created: every pair differed, and automake's configure found
    a timestamp resolution of 0.1 s where natively it finds 0.2 (found by
    a probing session). Of 20 pairs, natively nearly all are equal; with
    fine-grained stamps none is (a tick is 4 ms or less)."""
    fx = FsFix(t)
    os.mkdir(fx.wsp("sub"))
    script = r'''
import os
equal = {}
for d in (".", "sub"):
    n = 0
    for i in range(20):
        a, b = os.path.join(d, "ta%d" % i), os.path.join(d, "tb%d" % i)
        os.close(os.open(a, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        fd = os.open(b, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"x")
        os.close(fd)
        n += os.stat(a).st_mtime_ns == os.stat(b).st_mtime_ns
    equal[d] = n
print(equal["."] > 0, equal["sub"] > 0, equal)
'''
    run = fx.sh("python3 -c %s" % q(script), timeout=120)
    r = _ok(fx, run, "pairs of files")
    contains(r.get("stdout"), "True True", "some pairs share their stamp")
    fx.check()


@test
def fs_good_dpkg_queries(t):
    """dpkg's configuration and database are read as natively (policy
    2026-12-06.1): dpkg-query, dpkg-vendor and dpkg's architecture, which
    a Debian package build asks first; before, "package 'libc6' is not
    installed" and no vendor (found by a compatibility probing session)."""
    cmd = ("dpkg-query -W -f='${Package} ${Status}\\n' libc6; "
           "dpkg-vendor --query vendor; dpkg --print-architecture")
    nat = t.native(["sh", "-c", cmd])
    eq(nat.code, 0, "native (premise)")
    fx = FsFix(t)
    r = _ok(fx, fx.sh(cmd), "dpkg queries")
    eq(r.get("stdout"), nat.out.decode(), "the same answers as natively")
    eq(r.get("denials") or [], [], "denials")


@test
def fs_good_opens_keep_the_cpu_mask(t):
    """corral narrows a task's CPU mask to its own CPU while it installs a
    descriptor the task waits for, and puts it back before the answer
    (tracer/notify.c, "Installing a descriptor near"). What the program
    sees must not change: its mask after every open, the mask another
    thread reads of it meanwhile, a thread started right after, and a
    task pinned to one CPU stays on that CPU."""
    fx = FsFix(t)
    script = r'''
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
# The mask the run began with (its start opened files already).
full = set(map(int, sys.argv[1].split(",")))
def status():
    return [l for l in open("/proc/self/status")
            if l.startswith("Cpus_allowed_list")][0].split()[1]
def opens(n):
    bad = 0
    for i in range(n):
        fd = os.open("f%d" % (i % 8), os.O_CREAT | os.O_WRONLY, 0o644)
        bad += os.sched_getaffinity(0) != full
        os.close(fd)
        r, w = os.pipe()
        os.close(r)
        os.close(w)
    return bad
# Another process reads this one's mask while it opens (a call naming a
# pid, so notified: it must come after the mask is back).
me = os.getpid()
stop_r, stop_w = os.pipe()
res_r, res_w = os.pipe()
watcher = os.fork()
if watcher == 0:
    os.close(stop_w)
    os.set_blocking(stop_r, False)
    n = wrong = 0
    while True:
        try:
            if os.read(stop_r, 1) == b"":
                break
        except BlockingIOError:
            pass
        n += 1
        wrong += os.sched_getaffinity(me) != full
    os.write(res_w, b"%d %d" % (n, wrong))
    os._exit(0)
os.close(stop_r)
bad = opens(1000)
os.close(stop_w)
os.waitpid(watcher, 0)
n, wrong = map(int, os.read(res_r, 64).split())
kids = []
for i in range(40):
    fd = os.open("/etc/passwd", os.O_RDONLY)
    th = threading.Thread(target=lambda: kids.append(os.sched_getaffinity(0)))
    th.start(); th.join(); os.close(fd)
off = 0
if len(full) > 1:
    for c in sorted(full):
        os.sched_setaffinity(0, {c})
        for i in range(300):
            os.close(os.open("/etc/passwd", os.O_RDONLY))
            off += libc.sched_getcpu() != c
        off += os.sched_getaffinity(0) != {c}
    os.sched_setaffinity(0, full)
print("masks", bad, wrong, n > 0,
      sum(k != full for k in kids), status() == sys.argv[2], off)
'''
    mask = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    with open("/proc/self/status") as f:
        listed = [ln.split()[1] for ln in f
                  if ln.startswith("Cpus_allowed_list")][0]
    for mode in ("--landlock=off", "--landlock=auto"):
        run = fx.run(["python3", "-c", script, mask, listed], opts=[mode],
                     timeout=120)
        r = _ok(fx, run, "opens and masks " + mode)
        eq(r.get("stdout"), "masks 0 0 True 0 True 0\n", mode + ": stdout")
    fx.check()


@test
def fs_good_a_mask_set_by_pid_holds_beside_opens(t):
    """A task sets another's CPU mask by pid (as `taskset -p` does) while
    that one opens files in a loop: the mask set stays. corral puts a
    task's own mask back after each install; a change continued to the
    kernel ran after corral's answer and was overwritten by that restore
    in 40-60 % of rounds (found by a probing session), so in runs that
    narrow, corral makes the change itself, between installs."""
    fx = FsFix(t)
    script = r'''
import os, sys, time
full = set(map(int, sys.argv[1].split(",")))
if len(full) < 2:
    print("rounds 0 lost 0")
    sys.exit(0)
r, w = os.pipe()
kid = os.fork()
if kid == 0:
    os.close(w)
    os.set_blocking(r, False)
    while True:
        try:
            if os.read(r, 1) == b"":
                break
        except BlockingIOError:
            pass
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o644))
    os._exit(0)
os.close(r)
lost = 0
cpus = sorted(full)
for i in range(60):
    c = cpus[i % len(cpus)]
    os.sched_setaffinity(kid, {c})
    time.sleep(0.005)
    lost += os.sched_getaffinity(kid) != {c}
    os.sched_setaffinity(kid, full)
os.close(w)
os.waitpid(kid, 0)
print("rounds 60 lost", lost)
'''
    mask = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    want = "rounds 60 lost 0\n" if len(os.sched_getaffinity(0)) > 1 else \
        "rounds 0 lost 0\n"
    for mode in ("--landlock=off", "--landlock=auto"):
        run = fx.run(["python3", "-c", script, mask], opts=[mode],
                     timeout=120)
        r = _ok(fx, run, "masks set by pid " + mode)
        eq(r.get("stdout"), want, mode + ": stdout")
    fx.check()


@test
def fs_good_affinity_by_pid_answers_as_the_kernel(t):
    """sched_getaffinity and sched_setaffinity by pid with arguments the
    kernel reads as 32 bits (a pid whose low half is 0 is the caller; a
    length past 4 GiB is its low half) or refuses (a length not a multiple
    of 8, or one whose bits overflow): the same results and the same bytes
    written as natively. corral answered the supervisor's own mask for
    pid 1 << 32 and took lengths the kernel refuses (a probing session)."""
    fx = FsFix(t)
    script = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
GET, SET = 204, 203
me = os.getpid()
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
def get(name, pid, ln):
    buf = (ctypes.c_ubyte * 64)(*([0xAA] * 64))
    rc = libc.syscall(ctypes.c_long(GET), ctypes.c_long(pid),
                      ctypes.c_ulong(ln), buf)
    e = ctypes.get_errno() if rc < 0 else 0
    return "get %s %#x: %d %d %s" % (name, ln, rc, e, bytes(buf[:40]).hex())
def put(name, pid, ln, mask):
    buf = (ctypes.c_ubyte * 64)(*mask)
    rc = libc.syscall(ctypes.c_long(SET), ctypes.c_long(pid),
                      ctypes.c_ulong(ln), buf)
    e = ctypes.get_errno() if rc < 0 else 0
    return "set %s %#x: %d %d %s" % (name, ln, rc, e,
                                     sorted(os.sched_getaffinity(0)))
for name, pid in (("me", me), ("me|1<<32", me | (1 << 32)),
                  ("1<<32", 1 << 32)):
    for ln in (8, 4, 0x2004, 0x20000000, 1 << 32, (1 << 32) | 8, 32):
        print(get(name, pid, ln))
one = [1 << min(os.sched_getaffinity(0))] + [0] * 63
print(put("1<<32", 1 << 32, 8, one))
print(put("me", me, (1 << 32) | 8, one))
print(put("me", me, 0, one))
'''
    nat = _native_beside(t, fx, ["python3", "-c", script])
    for mode in ("--landlock=off", "--landlock=auto"):
        run = fx.run(["python3", "-c", script], opts=[mode], timeout=120)
        r = _ok(fx, run, "affinity arguments " + mode)
        eq(r.get("stdout"), nat.out.decode(), mode + ": stdout")
    fx.check()


@test
def joined_threads_are_gone_to_calls_by_tid(t):
    """A thread just joined is released natively (the kernel reaps a
    thread at its exit), so a query or change by its tid finds it gone:
    ESRCH (natively 0-1 of 1 000 find it, in the moment between the
    join's wake-up and the release). A traced thread stays a zombie until
    corral reaps it, and a call continued meanwhile found it: 9-24 of 300
    sched_getaffinity (found by a probing session), and 70 of 200
    tgkill(pid, tid, 0) within the thread's own process (found by a
    differential probe): those and tkill answer ESRCH now too."""
    for mode in ("--landlock=off", "--landlock=auto"):
        run = t.corral(["run", "--json", mode] + t.prog_roots() +
                       ["--", t.prog("joined"), "300"], timeout=120)
        r = t.result(run)
        eq(r.get("status"), "ok", mode + ": status")
        counts = [int(x) for x in re.findall(r" (\d+)", r.get("stdout", ""))]
        eq(len(counts), 7, mode + ": output %r" % r.get("stdout"))
        eq(counts[0], 300, mode + ": threads joined")
        for name, c in zip(("getaffinity", "getpriority", "getparam",
                            "setaffinity", "tgkill", "tkill"), counts[1:]):
            true(c <= 3, "%s: %s found %d of 300 joined threads" % (
                mode, name, c))
    t.assert_next_run_ok()


@test
def joined_threads_are_not_counted_in_proc(t):
    """Right after pthread_join, /proc/self/status's Threads: and
    /proc/self/stat's num_threads count the threads left, as natively:
    the joined thread, a zombie until corral reaps it, was counted in
    14-62 of 200 rounds (CPython's fork reads /proc/self/stat to warn a
    multi-threaded process; found by a differential probe). Zombies of
    exited threads are reaped before an open now. Natively 0 of 200; the
    moment between the join's wake-up and the thread's release allows a
    few."""
    for mode in ("--landlock=off", "--landlock=auto"):
        for n, rounds in ((1, 200), (20, 50)):
            run = t.corral(["run", "--json", mode] + t.prog_roots() +
                           ["--", t.prog("joincount"), str(n), str(rounds)],
                           timeout=120)
            r = t.result(run)
            eq(r.get("status"), "ok", mode + ": status")
            m = re.match(r"joined (\d+): status (\d+), stat (\d+)$",
                         r.get("stdout", "").strip())
            true(m, "%s: output %r" % (mode, r.get("stdout")))
            true(int(m.group(2)) <= 3 and int(m.group(3)) <= 3,
                 "%s, %d threads: rounds counting more than one: %r"
                 % (mode, n, r["stdout"]))
    t.assert_next_run_ok()


DELETED_PROG = r'''
import os
def tryp(what, fn):
    try:
        r = fn()
        print(what, "ok" if r is None or isinstance(r, int) else r)
    except OSError as e:
        print(what, "errno", e.errno)
with open("f", "w") as f:
    f.write("kept")
fd = os.open("f", os.O_RDONLY)
os.unlink("f")
p = "/proc/self/fd/%d" % fd
tryp("stat", lambda: os.stat(p).st_nlink)
tryp("access", lambda: 0 if os.access(p, os.R_OK) else 1)
tryp("chmod", lambda: os.chmod(p, 0o600))
with open(p) as g:
    print("reopened", g.read())
os.mkdir("d")
dfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
os.rmdir("d")
tryp("dir stat", lambda: os.stat("/proc/self/fd/%d" % dfd).st_nlink)
tryp("dir listing", lambda: str(os.listdir("/proc/self/fd/%d" % dfd)))
r, w = os.pipe()
tryp("pipe slash", lambda: os.stat("/proc/self/fd/%d/" % r))
tryp("pipe below", lambda: os.stat("/proc/self/fd/%d/x" % r))
'''


@test
def fs_good_files_that_lost_their_name_reopen_through_their_fd(t):
    """A file or directory removed while an fd holds it is still reached
    through /proc/self/fd/N, as natively: bash hands a here-document of
    more than 64 KiB to its command as a removed file on stdin, and `cat
    /dev/stdin` reopens it. An earlier build answered ENOENT for every
    such link (found by a differential probing session). A pipe's link
    with a trailing slash, or with a name below it, is ENOTDIR, as the
    kernel's."""
    fx = FsFix(t)
    run = fx.run(["bash", "-c",
                  "big=$(head -c 70000 /dev/zero | tr '\\0' x); "
                  "cat /dev/stdin <<EOF | wc -c\n$big\nEOF\n"
                  "echo data > in.txt; ( rm in.txt; cat /dev/stdin ) < in.txt"])
    r = _ok(fx, run, "bash here-document")
    eq(r.get("stdout"), "70001\ndata\n", "stdout")
    with open(fx.wsp("deleted.py"), "w") as f:
        f.write(DELETED_PROG)
    run = fx.run(["python3", "deleted.py"])
    r = _ok(fx, run, "python")
    eq(r.get("stdout"), "stat ok\naccess ok\nchmod ok\nreopened kept\n"
       "dir stat ok\ndir listing []\npipe slash errno 20\n"
       "pipe below errno 20\n", "stdout")
    eq(r.get("denials"), [], "denials")
    fx.check()


CHAIN = r'''
import os, subprocess, sys
L = sys.argv[1]
def t(name, f):
    try:
        print(name, repr(f()))
    except OSError as e:
        print(name, "errno", e.errno)
t("read", lambda: open(L + "/d2").read())
t("exec", lambda: subprocess.run([L + "/t2"]).returncode)
t("list", lambda: sorted(os.listdir(L + "/dir2")))
t("read-in", lambda: open(L + "/dir2/data").read())
t("middle", lambda: open(L + "/mid2/sub/data").read())
t("venv", lambda: subprocess.run([L + "/py", "-c", "print(6*7)"],
                                  capture_output=True).stdout.decode())
t("home", lambda: open(L + "/home2").read())
t("links", lambda: sorted(os.listdir(L)))
'''


@test
def fs_good_roots_named_through_chains_of_links(t):
    """A root named through two links (d2 -> d1 -> ../real/data; a venv's
    bin/python -> python3 -> /usr/bin/python3) passes a link that is
    neither its name nor its real path: the walk judged that middle link
    "outside every root", so the file could not be read, the tool not run,
    the directory not listed, the venv's interpreter not started (found by
    a probing session). Every link on the way is granted with the root's
    access now, and nothing more: the links' own directory, an ancestor
    of roots, lists the roots only (not the chain to the fake home, which
    stays absent)."""
    fx = FsFix(t)
    base = os.path.join(fx.root, "chain")
    L = os.path.join(base, "links")
    R = os.path.join(base, "real")
    os.makedirs(L)
    os.makedirs(os.path.join(R, "sub"))
    for p in ("data", "sub/data"):
        with open(os.path.join(R, p), "w") as f:
            f.write("chained\n")
    shutil.copy("/bin/true", os.path.join(R, "tool"))
    os.symlink("../real/data", os.path.join(L, "d1"))
    os.symlink("d1", os.path.join(L, "d2"))
    os.symlink(os.path.join(R, "tool"), os.path.join(L, "t1"))
    os.symlink("t1", os.path.join(L, "t2"))
    os.symlink("../real", os.path.join(L, "dir1"))
    os.symlink("dir1", os.path.join(L, "dir2"))
    os.symlink("../real", os.path.join(L, "mid1"))
    os.symlink("mid1", os.path.join(L, "mid2"))
    os.symlink("python3", os.path.join(L, "py"))
    os.symlink("/usr/bin/python3", os.path.join(L, "python3"))
    os.symlink(fx.secret_path, os.path.join(L, "home1"))
    os.symlink("home1", os.path.join(L, "home2"))
    for b, ds, fs in os.walk(base):
        for n in ds + fs:
            os.lchown(os.path.join(b, n), os.getuid(), os.getgid())
    prog = fx.wsp("chain.py")
    with open(prog, "w") as f:
        f.write(CHAIN)
    run = fx.run(["python3", prog, L],
                 opts=["--ro", L + "/d2", "--exec", L + "/t2",
                       "--ro", L + "/dir2", "--ro", L + "/mid2/sub/data",
                       "--exec", L + "/py", "--limit", "wall=60s"])
    r = _ok(fx, run, "roots through chains")
    eq(r.get("stdout"),
       "read 'chained\\n'\nexec 0\nlist ['data', 'sub', 'tool']\n"
       "read-in 'chained\\n'\nmiddle 'chained\\n'\nvenv '42\\n'\n"
       "home errno 2\nlinks ['d1', 'd2', 'dir1', 'dir2', 'mid1', "
       "'mid2', 'py', 'python3', 't1', 't2']\n", "stdout")
    fx.check()


HOP_MOVED = r'''
import os, sys, time
L, R = sys.argv[1], sys.argv[2]
def t(p):
    try:
        return open(p).read().strip()
    except OSError as e:
        return "errno %d" % e.errno
print("before", t(L + "/m1/sub/f"), flush=True)
open("ready", "w").close()
while not os.path.exists("moved"):
    time.sleep(0.02)
print("after", t(L + "/m1/sub/f"), t(R + "/other/sub/f"))
'''


@test
def fs_a_middle_link_is_followed_at_each_call(t):
    """A link a root's name passes (d2 -> m1 -> real) is granted as a
    root of its own, but never opened by name: a descriptor opened after
    the chain was checked served, under the link's name, whatever the
    link led to at that moment, a directory of the user's that no root
    names (found by a probing session, racing another user's re-pointing
    of the link). Re-pointed during the run, the middle link now leads
    where it leads: outside every root, absent."""
    fx = FsFix(t)
    base = os.path.join(fx.root, "hop")
    L = os.path.join(base, "links")
    R = os.path.join(base, "real")
    for d in ("data/sub", "other/sub"):
        os.makedirs(os.path.join(R, d))
    with open(os.path.join(R, "data/sub/f"), "w") as f:
        f.write("granted\n")
    with open(os.path.join(R, "other/sub/f"), "w") as f:
        f.write("not named\n")
    os.makedirs(L)
    os.symlink(os.path.join(R, "data"), os.path.join(L, "m1"))
    os.symlink("m1", os.path.join(L, "d2"))
    prog = fx.wsp("hop.py")
    with open(prog, "w") as f:
        f.write(HOP_MOVED)
    p = t.spawn(["run", "--json", "-w", fx.ws, "--ro", L + "/d2/sub",
                 "--limit", "wall=60s", "--", "python3", prog, L, R])
    for _ in range(600):
        if os.path.exists(fx.wsp("ready")) or p.poll() is not None:
            break
        time.sleep(0.02)
    true(os.path.exists(fx.wsp("ready")), "the run started")
    os.symlink(os.path.join(R, "other"), os.path.join(L, "m1.new"))
    os.rename(os.path.join(L, "m1.new"), os.path.join(L, "m1"))
    open(fx.wsp("moved"), "w").close()
    run = t.finish(p, timeout=90)
    fx.runs.append(run)
    r = _ok(fx, run, "a middle link re-pointed")
    eq(r.get("stdout"), "before granted\nafter errno 2 errno 2\n", "stdout")
    fx.check()


DENY_THROUGH = r'''
import os, sys
def t(p):
    try:
        return open(p).read().strip()
    except OSError as e:
        return "errno %d" % e.errno
def w(p):
    try:
        open(p, "w").close()
        return "written"
    except OSError as e:
        return "errno %d" % e.errno
for name in sys.argv[1:]:
    print(t(name + "/pub"), t(name + "/secret/key"), w(name + "/secret/new"))
'''


@test
def fs_deny_holds_under_a_root_named_through_links(t):
    """A policy's deny entry carved out of a directory a root reaches
    through links (read root x/d2/sub, x/d2 -> y/d1 -> ../data, deny
    data/sub/secret): the root holds the directory it leads to, and the
    deny entry, compared by its text only, did not cover the root's
    name: the denied files were read and written as x/d2/sub/secret
    (found by a probing session). They are absent by every name now."""
    fx = FsFix(t)
    base = os.path.join(fx.root, "dh")
    sub = os.path.join(base, "data", "sub")
    os.makedirs(os.path.join(sub, "secret"))
    with open(os.path.join(sub, "pub"), "w") as f:
        f.write("public\n")
    with open(os.path.join(sub, "secret", "key"), "w") as f:
        f.write("denied\n")
    os.chmod(base, 0o777)
    for b, ds, fs in os.walk(base):
        for n in ds:
            os.chmod(os.path.join(b, n), 0o777)
        for n in fs:
            os.chmod(os.path.join(b, n), 0o666)
    os.makedirs(os.path.join(base, "x"))
    os.makedirs(os.path.join(base, "y"))
    os.symlink("../data", os.path.join(base, "y", "d1"))
    os.symlink(os.path.join(base, "y", "d1"), os.path.join(base, "x", "d2"))
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        doc = json.load(f)
    cls = doc["classes"]["default"]
    for key, root in (("read", "x/d2/sub"), ("write", "x/d2/sub")):
        c = json.loads(json.dumps(cls))
        c["fs"][key] = list(c["fs"].get(key, [])) + [os.path.join(base, root)]
        c["fs"]["deny"] = [os.path.join(sub, "secret")]
        d = json.loads(json.dumps(doc))
        d["classes"]["default"] = c
        pol = os.path.join(fx.root, "pol-%s.json" % key)
        with open(pol, "w") as f:
            json.dump(d, f)
        prog = fx.wsp("deny.py")
        with open(prog, "w") as f:
            f.write(DENY_THROUGH)
        run = fx.run(["python3", prog, os.path.join(base, "x/d2/sub"),
                      os.path.join(base, "y/d1/sub"), sub],
                     opts=["--policy", pol, "--limit", "wall=60s"])
        r = _ok(fx, run, "deny through links, %s root" % key)
        lines = r.get("stdout", "").splitlines()
        eq(len(lines), 3, "three names (%s root): %r" % (key, lines))
        for line in lines:
            eq(line.split()[1:], ["errno", "2", "errno", "2"],
               "the denied subtree by every name (%s root): %r" % (key, line))
        true(lines[0].startswith("public"),
             "the root itself still serves (%s root): %r" % (key, lines[0]))
    true(not os.path.exists(os.path.join(sub, "secret", "new")),
         "nothing was written in the denied subtree")
    fx.check()


@test
def fs_a_writable_root_not_made_is_not_made_by_open(t):
    """A writable root that does not exist yet: mkdir and symlink at its
    name were refused (a root is never made by the program), but open
    with O_CREAT made it, in a read root's directory too, where it
    stayed (found by a probing session). Refused alike now."""
    fx = FsFix(t)
    par = os.path.join(fx.root, "par")
    os.makedirs(par)
    os.chmod(par, 0o777)
    lone = os.path.join(fx.root, "lone")
    inner = os.path.join(par, "nx")
    run = fx.sh("for p in %s %s; do (echo x > $p) 2>/dev/null && "
                "echo made $p || echo refused; done" % (lone, inner),
                opts=["--rw", lone, "--ro", par, "--rw", inner,
                      "--limit", "wall=60s"])
    r = _ok(fx, run, "open O_CREAT at roots not made")
    eq(r.get("stdout"), "refused\nrefused\n", "stdout")
    true(not os.path.exists(lone) and not os.path.exists(inner),
         "neither root was made")
    ds = [d for d in r.get("denials") or [] if d.get("syscall") == "openat"]
    eq(len(ds), 2, "both refusals recorded: %r" % ds)
    fx.check()
