"""Filesystem confinement, attacked through the less obvious doors: metadata
calls, AF_UNIX socket paths, inotify, file handles, access upgrades through
/proc/self/fd, hard links from a read root into the workspace, the dynamic
loader, and exec from a --rw root. Same checks as test_d0_fs_attacks.
"""

import os
import shutil
import socket

from harness import (Fail, eq, true, contains, not_contains, test, _show,
                     metadata_fast)
from test_d0_fs_attacks import (FsFix, FS_STATUSES, lines_of, want_line,
                                want_denial, denials, pyops, q,
                                _exec_refused, snapshot)


@test
def fs_metadata_outside(t):
    """Outside the roots nothing is visible: not even stat, access,
    readlink, xattrs, chdir or an inotify watch."""
    fx = FsFix(t)
    os.symlink("secret.txt", os.path.join(fx.home, "lnk"))
    fx.snap = snapshot(fx.home)
    paths = {"stat": fx.secret_path, "lstat": fx.key_path,
             "statx": fx.secret_path, "access": fx.secret_path,
             "readlink": os.path.join(fx.home, "lnk"),
             "getxattr": fx.secret_path, "inotify": fx.home,
             "chdir": fx.home}
    ops = []
    for op, p in paths.items():
        ops += [op, p]
    nat = fx.native([t.prog("fs_probe")] + ops)
    for op, p in paths.items():
        want_line(lines_of(nat.out.decode()), "%s %s" % (op, p), "ok",
                  "native %s (test setup)" % op)
    run = fx.probe(ops)
    r = fx.result(run)
    res = lines_of(r.get("stdout", ""))
    fast = metadata_fast(r)
    for op, p in paths.items():
        # On the fast path (Landlock) stat, lstat, statx, access and
        # readlink are the kernel's: outside the roots they answer, by the
        # documented trade-off. xattrs, chdir and watches never do.
        meta = op in ("stat", "lstat", "statx", "access", "readlink")
        want_line(res, "%s %s" % (op, p), "ok" if fast and meta else "ENOENT")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home,
                what="stat (or, on the fast path, getxattr) of the secret")
    want_denial(r, targets=(fx.home,), syscalls=("inotify_add_watch",),
                what="inotify on the fake home")
    fx.check()


@test
def fs_unix_socket_outside(t):
    """connect(2) to an AF_UNIX socket by a path outside the roots is
    refused (the socket's server never sees a connection) and looks
    absent, as any path there does (ENOENT; it answered EACCES); bind in
    the workspace works."""
    fx = FsFix(t)
    sp = os.path.join(fx.home, "agent.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind(sp)
        srv.listen(8)
        srv.setblocking(False)
        fx.snap = snapshot(fx.home)
        run = fx.probe(["connect", sp, "connect", "../home/agent.sock",
                        "bind", "mine.sock", "connect", "mine.sock",
                        "bind", os.path.join(fx.home, "evil.sock")])
        r = fx.result(run)
        res = lines_of(r.get("stdout", ""))
        want_line(res, "connect " + sp, "ENOENT")
        want_line(res, "connect ../home/agent.sock", "ENOENT")
        want_line(res, "bind mine.sock", "ok")
        # Bound, not listening: the native answer is ECONNREFUSED.
        want_line(res, "connect mine.sock", "ECONNREFUSED")
        want_line(res, "bind " + os.path.join(fx.home, "evil.sock"),
                  "ENOENT")
        try:
            c, _ = srv.accept()
            c.close()
            raise Fail("the socket outside got a connection")
        except BlockingIOError:
            pass
        want_denial(r, layers=("fs", "net"), targets=(sp,), floor=fx.home,
                    what="connect to the outside socket")
        fx.check()
    finally:
        srv.close()
        try:
            os.unlink(sp)
        except OSError:
            pass


@test
def fs_handles_refused(t):
    """name_to_handle_at cannot be confined by path once a handle exists:
    refused, even in the workspace."""
    fx = FsFix(t)
    with open(fx.wsp("f"), "w") as f:
        f.write("x\n")
    run = fx.probe(["handle", "f", "handle", fx.secret_path])
    r = fx.result(run)
    res = lines_of(r.get("stdout", ""))
    for k in ("handle f", "handle " + fx.secret_path):
        true(k in res and not res[k].startswith("ok"),
             "%s: got %r, want a refusal" % (k, res.get(k)))
    true(len(denials(r, ("fs", "syscall"))) > 0, "no denial for "
         "name_to_handle_at: %s" % _show(r.get("denials")))
    fx.check()


@test
def fs_upgrade_through_proc_fd(t):
    """A read-only open of a read-root file, reopened for writing through
    /proc/self/fd/N, must not become writable."""
    fx = FsFix(t, ro=True)
    run = fx.probe(["reopen-w", fx.ro_file, "reopen-w", "/usr/bin/true"],
                   opts=["--ro", fx.ro])
    r = fx.result(run)
    res = lines_of(r.get("stdout", ""))
    want_line(res, "reopen-w " + fx.ro_file, "EACCES")
    want_line(res, "reopen-w /usr/bin/true", "EACCES")
    fx.check()


@test
def fs_hardlink_readroot_into_ws(t):
    """A hard link from a read root into the writable workspace would make
    the read-only file writable through the workspace path."""
    fx = FsFix(t, ro=True)
    ops = [["link_in", "link", fx.ro_file, fx.wsp("hl")],
           ["link_in_rel", "link", os.path.relpath(fx.ro_file, fx.ws),
            "hl2"]]
    run, r, res = pyops(fx, ops, opts=["--ro", fx.ro])
    want_line(res, "link_in", "EACCES")
    want_line(res, "link_in_rel", "EACCES")
    true(not os.path.lexists(fx.wsp("hl")), "hard link made")
    true(not os.path.lexists(fx.wsp("hl2")), "hard link made")
    want_denial(r, targets=(fx.ro_file,), syscalls=("link", "linkat"),
                what="link of the --ro file")
    fx.check()


@test
def fs_ldso_outside(t):
    """Running an outside binary through the dynamic loader: ld.so must
    open it, and that open is refused."""
    fx = FsFix(t)
    ldso = "/lib64/ld-linux-x86-64.so.2"
    true(os.path.exists(ldso), "%s missing (test setup)" % ldso)
    bin_ = os.path.join(fx.home, "mytouch")
    shutil.copy2("/usr/bin/touch", bin_)
    os.chmod(bin_, 0o755)
    fx.snap = snapshot(fx.home)
    run = fx.sh("%s %s made; echo rc=$?" % (ldso, q(bin_)))
    r = fx.result(run)
    true(not os.path.lexists(fx.wsp("made")), "the outside binary ran "
         "through ld.so")
    true(r.get("stdout") != "rc=0\n", "stdout %r" % r.get("stdout"))
    want_denial(r, targets=(bin_,), floor=fx.home, what="ld.so's open")
    fx.check()


@test
def fs_exec_rw_root(t):
    """A --rw root is read-write, not executable: only the exec roots and
    the workspace are."""
    fx = FsFix(t)
    rw = os.path.join(fx.root, "rw")
    os.mkdir(rw)
    shutil.copy2("/usr/bin/touch", os.path.join(rw, "mytouch"))
    os.chmod(os.path.join(rw, "mytouch"), 0o755)
    run = fx.sh("%s/mytouch made; echo rc=$?" % q(rw), opts=["--rw", rw])
    r = fx.result(run, statuses=FS_STATUSES + ("policy_denied",))
    _exec_refused(fx, run, r, fx.wsp("made"), "exec from a --rw root")
    fx.check()


@test
def fs_stdin_dirfd_proc(t):
    """stdin opened on "/": /proc/self/fd/0/<path> walks from it."""
    fx = FsFix(t)
    rel = fx.secret_path.lstrip("/")

    def pre():
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        os.dup2(fd, 0)
        os.close(fd)
    run = fx.probe(["read", "/proc/self/fd/0/" + rel,
                    "read", "/dev/stdin/" + rel,
                    "read", "/dev/fd/0/" + rel], preexec=pre)
    r = fx.result(run)
    res = lines_of(r.get("stdout", ""))
    eq(len(res), 3, "lines (%r)" % r.get("stdout"))
    for k, v in res.items():
        true(not v.startswith("ok"), "%s: got %r, want a failure" % (k, v))
    not_contains(r.get("stdout", ""), fx.secret, "stdout")
    fx.check()


@test
def fs_race_unlink_flip(t):
    """The path-buffer race on unlink: a lost race deletes a file in the
    fake home."""
    fx = FsFix(t)
    allowed = fx.wsp("junk")
    run = fx.run([t.prog("fs_race"), allowed, fx.sentinel, "0:0:0", "4",
                  "unlink"], opts=t.prog_roots(), timeout=120)
    r = fx.result(run, statuses=("ok",))
    c = dict(w.split("=", 1) for w in r.get("stdout", "").split())
    true(int(c.get("allowed", 0)) > 0, "no unlink of the workspace file "
         "succeeded: %s" % r.get("stdout"))
    # Refused outside every root answers ENOENT; the record proves it.
    true(int(c.get("denied", 0)) + int(c.get("enoent", 0)) > 0,
         "no unlink of the sentinel was refused: %s" % r.get("stdout"))
    true(os.path.exists(fx.sentinel), "the sentinel was deleted")
    want_denial(r, targets=(fx.sentinel,), floor=fx.home,
                what="unlink of the sentinel")
    fx.check()


@test
def fs_race_exec_swap(t):
    """The exec race: ./x swapped between a workspace copy of true and a
    symlink to a binary outside the exec roots while children exec it. The
    outside binary must never run (it would create the marker)."""
    fx = FsFix(t)
    bad = os.path.join(fx.home, "mytouch")
    shutil.copy2("/usr/bin/touch", bad)
    os.chmod(bad, 0o755)
    fx.snap = snapshot(fx.home)
    natws = os.path.join(fx.root, "natws")
    for ws in (fx.ws, natws):
        os.makedirs(ws, exist_ok=True)
        shutil.copy2("/usr/bin/true", os.path.join(ws, "x"))
        os.symlink(bad, os.path.join(ws, "y"))

    def pre():
        os.chdir(natws)
    nat = t.native([t.prog("fs_exec_race"), "x", "y", "MARK", "10", "stop"],
                   preexec=pre, timeout=60)
    true(os.path.exists(os.path.join(natws, "MARK")),
         "native exec race (test setup): the outside binary never ran: %r"
         % nat.out)
    shutil.rmtree(natws)
    run = fx.run([t.prog("fs_exec_race"), "x", "y", "MARK", "4"],
                 opts=t.prog_roots(), timeout=120)
    r = fx.result(run, statuses=FS_STATUSES + ("policy_denied",))
    true(not os.path.lexists(fx.wsp("MARK")), "the outside binary ran "
         "(%s; status %s)" % (r.get("stdout"), r.get("status")))
    if r.get("status") != "policy_denied":
        c = dict(w.split("=", 1) for w in r.get("stdout", "").split())
        true(int(c.get("ok", 0)) > 0, "no exec of the allowed binary "
             "succeeded: %s" % r.get("stdout"))
        true(int(c.get("swaps", 0)) > 0, "no swap: %s" % r.get("stdout"))
        true(len(denials(r, ("fs", "exec"))) > 0, "no denial recorded")
    fx.check()


@test
def fs_symlink_dir_writes(t):
    """A workspace symlink to the fake home used as a parent directory:
    creating, renaming into, linking and removing through it."""
    fx = FsFix(t)
    os.symlink(fx.home, fx.wsp("dl"))
    with open(fx.wsp("f"), "w") as f:
        f.write("ws\n")
    ops = [["mkdir", "mkdir", "dl/new"],
           ["create", "create", "dl/new2"],
           ["rename_in", "rename", "f", "dl/f"],
           ["link_in", "link", "f", "dl/f2"],
           ["symlink_in", "symlink", "x", "dl/l"],
           ["unlink", "unlink", "dl/sentinel"],
           ["rename_out", "rename", "dl/sentinel", "stolen"],
           ["chmod", "chmod", "dl/sentinel"],
           ["utime", "utime", "dl/sentinel"],
           ["truncate", "truncate", "dl/sentinel"]]
    run, r, res = pyops(fx, ops)
    for label, *_ in ops:
        want_line(res, label, "ENOENT")
    true(os.path.exists(fx.wsp("f")), "the workspace file moved")
    true(not os.path.lexists(fx.wsp("stolen")), "the sentinel was moved "
         "into the workspace")
    want_denial(r, targets=(fx.sentinel,), floor=fx.home,
                what="writes through dl/")
    fx.check()


@test
def fs_readroot_symlink_out(t):
    """A symlink inside a --ro root pointing to the fake home gives no more
    than the fake home itself does."""
    fx = FsFix(t, ro=True)
    os.symlink(fx.secret_path, os.path.join(fx.ro, "leak"))
    os.symlink("../home", os.path.join(fx.ro, "up"))
    fx.ro_snap = snapshot(fx.ro)
    run = fx.sh("cat %s/leak; echo rc=$?; cat %s/up/.ssh/id_rsa; echo rc=$?"
                % (q(fx.ro), q(fx.ro)), opts=["--ro", fx.ro])
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\n", "stdout")
    want_denial(r, targets=(fx.secret_path,), floor=fx.home,
                what="--ro symlink to the secret")
    fx.check()


@test
def fs_exec_by_fd(t):
    """execveat(fd, "", AT_EMPTY_PATH) on a readable file that is not under
    an exec root (a --ro root): refused like a path exec."""
    fx = FsFix(t, ro=True)
    ro_touch = os.path.join(fx.ro, "mytouch")
    shutil.copy2("/usr/bin/touch", ro_touch)
    os.chmod(ro_touch, 0o755)
    fx.ro_snap = snapshot(fx.ro)
    run = fx.probe(["fexec", ro_touch, "touch", "made"],
                   opts=["--ro", fx.ro])
    r = fx.result(run, statuses=FS_STATUSES + ("policy_denied",))
    _exec_refused(fx, run, r, fx.wsp("made"), "execveat of a --ro file")
    fx.check()


@test
def fs_exec_by_fd_workspace(t):
    """fexecve/execveat(AT_EMPTY_PATH) of a workspace file: the workspace
    is executable, and the fd names a file there (not a memfd), so it
    runs, as it does natively."""
    fx = FsFix(t)
    shutil.copy2("/usr/bin/touch", fx.wsp("wstouch"))
    run = fx.probe(["fexec", "wstouch", "touch", "made-ws"])
    r = fx.result(run, statuses=None)
    true(os.path.exists(fx.wsp("made-ws")), "execveat of a workspace file "
         "did not run: %s; denials %s" % (_show(r.get("stdout")),
                                         _show(r.get("denials"))))
    eq(r.get("status"), "ok", "status")
    fx.check()


@test
def fs_system_secrets(t):
    """What the default class never shows: shadow, root's and users' homes,
    /var, /run, /tmp's other entries, the kernel log, raw memory and
    disks, /sys (hardware addresses)."""
    fx = FsFix(t)
    checks = [("cat /etc/shadow", 1), ("ls /root", 2), ("ls /home", 2),
              ("ls /var/log", 2), ("ls /run", 2),
              ("ls /var | grep -v -x -e lib -e cache", 1),
              ("ls /var/cache | grep -v -x -e fontconfig"
               " -e dictionaries-common -e man -e apt", 1),
              ("head -c 64 /dev/kmsg", 1),
              ("head -c 64 /dev/mem", 1), ("ls /sys/class", 2),
              ("ls /sys | grep -v -x -e devices -e fs -e kernel", 1),
              ("ls /sys/kernel | grep -v -x mm", 1),
              ("ls /sys/kernel/mm/transparent_hugepage | "
               "grep -v -x -e enabled -e hpage_pmd_size", 1),
              ("cat /sys/class/net/lo/address", 1),
              ("cat /etc/gshadow", 1), ("cat /etc/machine-id", 1),
              ("ls /dev | grep -x -e kmsg -e mem -e sda -e vda -e tty0", 1)]
    # /tmp, /var, /sys and /dev are ancestors of roots: listed, but with
    # only the way into the roots (the tests' own tree under /tmp).
    if fx.root.startswith("/tmp/"):
        checks.append(("ls /tmp | grep -v -x %s" % fx.root.split("/")[2], 1))
    script = "".join("%s >/dev/null; echo $?; " % c for c, _ in checks)
    run = fx.sh(script)
    r = fx.result(run)
    got = r.get("stdout", "").split("\n")[:len(checks)]
    bad = [(c, g) for (c, want), g in zip(checks, got) if g != str(want)]
    eq(bad, [], "commands that did not fail as refused (command, status)")
    want_denial(r, targets=("/etc/shadow",), what="/etc/shadow")
    want_denial(r, targets=("/dev/kmsg",), what="/dev/kmsg")
    # Absence, not refusal: the program cannot tell them from missing.
    contains(r.get("stderr", ""), "/etc/shadow: No such file or directory",
             "stderr")
    fx.check()


@test
def fs_policy_deny_subtree(t):
    """A class's fs.deny carves a subtree out of a read root: refused by
    path, through a workspace symlink, through '..', and through a
    symlink inside the root itself."""
    import json
    from harness import CFG
    fx = FsFix(t, ro=True)
    priv = os.path.join(fx.ro, "private")
    os.mkdir(priv)
    with open(os.path.join(priv, "key"), "w") as f:
        f.write("deny-%s\n" % fx.secret)
    os.symlink("private/key", os.path.join(fx.ro, "alias"))
    os.symlink(os.path.join(priv, "key"), fx.wsp("l"))
    fx.ro_snap = snapshot(fx.ro)
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["read"].append(fx.ro)
    pol["classes"]["default"]["fs"]["deny"] = [priv]
    pfile = os.path.join(fx.root, "deny.json")
    with open(pfile, "w") as f:
        json.dump(pol, f, indent=1)
    paths = [os.path.join(priv, "key"), "l",
             os.path.join(priv, "..", "private", "key"),
             os.path.join(fx.ro, "alias"), priv]
    run = fx.sh("".join("cat %s; echo rc=$?; " % q(p) for p in paths[:4]) +
                "ls %s; echo rc=$?; cat %s/f.txt" % (q(priv), q(fx.ro)),
                opts=["--policy", pfile])
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\nrc=1\nrc=1\nrc=1\nrc=2\nread-only content\n",
       "stdout")
    want_denial(r, targets=(os.path.join(priv, "key"), priv),
                what="the denied subtree")
    # Its name is absent from the listing of the readable root, too.
    run = fx.sh("ls -a %s" % q(fx.ro), opts=["--policy", pfile])
    r = fx.result(run)
    eq(sorted(r.get("stdout", "").split()), [".", "..", "alias", "f.txt"],
       "listing of the read root")
    fx.check()


@test
def fs_root_named_through_a_link_the_program_can_change(t):
    """A root named through a symlink the program may rewrite (it sits in
    the workspace): after the program points it elsewhere, a path through
    it reaches what the kernel would reach now, judged by that place's
    rules, never the target the link had when the run started."""
    fx = FsFix(t, ro=True)
    other = os.path.join(fx.root, "other")
    os.mkdir(other, 0o755)
    with open(os.path.join(other, "f.txt"), "w") as f:
        f.write("other content\n")
    link = fx.wsp("view")
    os.symlink(fx.ro, link)
    run = fx.sh("cat view/f.txt; ln -sfn %s view; cat view/f.txt; "
                "cat %s/f.txt; echo rc=$?" % (q(other), q(link)),
                opts=["--ro", link, "--ro", other])
    r = fx.result(run)
    eq(r.get("stdout"), "read-only content\nother content\nother content\n"
       "rc=0\n", "stdout")
    # The link now lies in the workspace of a run that ended, and leads
    # where that run's program pointed it: a later run naming a root
    # through it is refused at the start (tests/e2e/test_e1_hygiene.py)...
    run = fx.sh("echo ran", opts=["--ro", link])
    r = fx.result(run, statuses=("policy_denied",))
    eq(r.get("stdout"), "", "a root through a planted link: never ran")
    # ...unless the caller vouches for it. Re-pointed outside every root
    # during the run: absent, as any path outside is.
    run = fx.sh("ln -sfn %s view; cat %s/secret.txt; echo rc=$?" % (
        q(fx.home), q(link)), opts=["--ro", link, "--workspace-unsafe"])
    r = fx.result(run)
    eq(r.get("stdout"), "rc=1\n", "stdout after the link leads home")
    want_denial(r, target_prefix=fx.home, what="the re-pointed link")
    fx.check()


@test
def fs_root_named_through_a_fixed_link(t):
    """A root named through a link the program cannot change (outside
    every writable root; on a merged-/usr host also /lib and /bin): paths
    through it answer as natively (the resolver's fast path follows the
    link to its real root), and a deny entry under the real path holds
    through the link."""
    import json
    from harness import CFG
    fx = FsFix(t)
    real_dir = os.path.join(fx.root, "real")
    os.makedirs(os.path.join(real_dir, "sub"))
    for name, text in (("sub/f.txt", "through the link\n"),
                       ("private.txt", "deny-%s\n" % fx.secret)):
        with open(os.path.join(real_dir, name), "w") as f:
            f.write(text)
    lnk = os.path.join(fx.root, "lnk")
    os.symlink(real_dir, lnk)
    probe = ("import os,sys\n"
             "for p in sys.argv[1:]:\n"
             "    try:\n"
             "        st=os.stat(p); fd=os.open(p, os.O_RDONLY); "
             "os.close(fd); print(p, st.st_ino, st.st_size)\n"
             "    except OSError as e: print(p, 'err', e.errno)\n")
    paths = [lnk + "/sub/f.txt", lnk + "/sub", lnk + "/sub/none",
             lnk + "/sub/f.txt/x"]
    if os.path.islink("/lib") and os.path.isdir("/usr/lib"):
        libc = "/lib/x86_64-linux-gnu/libc.so.6"
        paths += [libc if os.path.exists(libc) else "/lib/os-release",
                  "/lib/os-release", "/lib/no-such-file", "/bin/sh"]
    nat = fx.native(["python3", "-c", probe] + paths)
    run = fx.run(["python3", "-c", probe] + paths, opts=["--ro", lnk])
    r = fx.result(run)
    eq(r.get("stdout"), nat.out.decode(), "stat and open through the links")
    # A deny entry under the real path refuses the path through the link.
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["deny"] = [real_dir + "/private.txt"]
    pfile = os.path.join(fx.root, "deny.json")
    with open(pfile, "w") as f:
        json.dump(pol, f, indent=1)
    run = fx.run(["python3", "-c", probe, lnk + "/private.txt",
                  real_dir + "/private.txt", lnk + "/sub/f.txt"],
                 opts=["--policy", pfile, "--ro", lnk])
    r = fx.result(run)
    size = len("through the link\n")
    ino = os.stat(real_dir + "/sub/f.txt").st_ino
    eq(r.get("stdout"), "%s/private.txt err 2\n%s/private.txt err 2\n"
       "%s/sub/f.txt %d %d\n" % (lnk, real_dir, lnk, ino, size),
       "the denied file through the link and by its real path")
    want_denial(r, targets=(real_dir + "/private.txt",),
                what="the deny entry")
    fx.check()


@test
def fs_policy_deny_subtree_cannot_be_moved_out(t):
    """A deny entry is a path: inside a writable root, renaming a
    directory above it moved the subtree to a path no entry names (mv a
    b, then b/secret/file read and written). Such a rename is refused, an
    exchange too; the subtree stays where the rule is."""
    import json
    from harness import CFG
    rw = t.path("rw")
    os.makedirs(os.path.join(rw, "a", "secret"))
    os.makedirs(os.path.join(rw, "c"))
    token = "deny-moved-%d" % os.getpid()
    with open(os.path.join(rw, "a", "secret", "file"), "w") as f:
        f.write(token + "\n")
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["deny"] = [os.path.join(rw, "a", "secret")]
    pfile = t.path("deny.json")
    with open(pfile, "w") as f:
        json.dump(pol, f)
    script = ("import ctypes, os\n"
              "os.chdir(%r)\n"
              "def tryit(what, f):\n"
              "    try:\n"
              "        f(); print(what, 'ok')\n"
              "    except OSError as e:\n"
              "        print(what, e.errno)\n"
              "tryit('rename', lambda: os.rename('a', 'b'))\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "def exch():\n"
              "    if libc.renameat2(-100, b'c', -100, b'a', 2) < 0:\n"
              "        raise OSError(ctypes.get_errno(), 'exchange')\n"
              "tryit('exchange', exch)\n"
              "for p in ('a/secret/file', 'b/secret/file', 'c/secret/file'):\n"
              "    try:\n"
              "        print(p, open(p).read().strip())\n"
              "    except OSError as e:\n"
              "        print(p, e.errno)\n" % rw)
    run = t.corral(["run", "--json", "--policy", pfile, "--rw", rw, "--",
                    "python3", "-c", script])
    r = t.result(run)
    out = r.get("stdout") or ""
    true(token not in out, "the denied file was read: %s" % _show(out))
    eq(out, "rename 13\nexchange 13\na/secret/file 2\nb/secret/file 2\n"
       "c/secret/file 2\n", "answers")
    true(os.path.exists(os.path.join(rw, "a", "secret", "file")),
         "the subtree is where it was")


DELETED_SUFFIX = r'''
import errno, os
def t(label, f):
    try:
        f(); print(label, "ok")
    except OSError as e:
        print(label, errno.errorcode[e.errno])
fd = os.open("secret (deleted)", os.O_CREAT | os.O_RDWR, 0o644)
t("fchmod", lambda: os.fchmod(fd, 0o600))
t("fchown", lambda: os.fchown(fd, -1, -1))
t("futimes", lambda: os.utime(fd, (1, 1)))
os.unlink("secret (deleted)")
t("fchmod unlinked", lambda: os.fchmod(fd, 0o644))
'''


@test
def fs_fd_forms_judge_a_live_file_named_deleted_by_its_name(t):
    """The fd forms (fchmod, futimens, fchown) judge where the fd points
    by its /proc link, where a removed file's path ends in " (deleted)".
    A live file may be named so: "secret (deleted)" was judged as
    "secret", and with "secret" denied, fchmod and futimens of the live
    file were refused (found by reading the code after a probe's report
    of the same with directories). Only a file with no link left loses
    the suffix now. Compared with the kernel's answers."""
    import json
    from harness import CFG
    fx = FsFix(t)
    nat = fx.native(["python3", "-c", DELETED_SUFFIX])
    eq(nat.out.decode(), "fchmod ok\nfchown ok\nfutimes ok\n"
       "fchmod unlinked ok\n", "native (setup)")
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["deny"] = [fx.wsp("secret")]
    pfile = os.path.join(fx.root, "deny.json")
    with open(pfile, "w") as f:
        json.dump(pol, f, indent=1)
    run = fx.run(["python3", "-c", DELETED_SUFFIX],
                 opts=["--policy", pfile, "--workspace-unsafe"])
    r = fx.result(run)
    eq(r.get("stdout"), nat.out.decode(), "stdout (stderr %r)" %
       r.get("stderr"))
    fx.check()
