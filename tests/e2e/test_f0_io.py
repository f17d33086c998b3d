"""Data in and out: inputs copied and archives extracted beneath the
workspace (hostile archives refused with the entry named, nothing written
outside, the next run fine), digests, and artifacts exported by allow-list."""

import hashlib
import io
import json
import lzma
import os
import shutil
import signal
import stat
import struct
import subprocess
import tarfile
import threading
import time
import zipfile
import zlib

from harness import CFG, eq, ne, true, contains, not_contains, test, lt, \
    wait_for, proc_state


# ---- helpers ----

def sha256sum(path):
    """The digest as the sha256sum tool prints it."""
    out = subprocess.run(["sha256sum", path], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return out.split()[0]


def sha_bytes(b):
    return hashlib.sha256(b).hexdigest()


def tree_digest(root):
    """docs/interface.md, "Digests": written again here from the
    definition, independently of corral's code."""
    recs = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).encode()
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                rec = b"l " + rel + b"\0" + os.readlink(full).encode() + b"\0"
            elif stat.S_ISDIR(st.st_mode):
                rec = b"d " + rel + b"\0"
            else:
                with open(full, "rb") as f:
                    data = f.read()
                rec = b"f %s %d %s " % (
                    b"x" if st.st_mode & stat.S_IXUSR else b"-", len(data),
                    sha_bytes(data).encode()) + rel + b"\0"
            recs.append((rel, rec))
    h = hashlib.sha256()
    for _, rec in sorted(recs):
        h.update(rec)
    return h.hexdigest()


def snapshot(root):
    """Every path under root with its type, mode, size and content."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            data = b""
            if stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    data = f.read()
            elif stat.S_ISLNK(st.st_mode):
                data = os.readlink(full).encode()
            # A directory's size moves with entries made and removed.
            size = 0 if stat.S_ISDIR(st.st_mode) else st.st_size
            snap[os.path.relpath(full, root)] = (st.st_mode, size,
                                                 sha_bytes(data))
    return snap


class Sentinel:
    """A tree outside the workspace that no input may touch, and the
    workspace's surroundings."""

    def __init__(self, t):
        self.t = t
        self.dir = t.path("sentinel")
        os.makedirs(os.path.join(self.dir, "sub"))
        with open(os.path.join(self.dir, "keep.txt"), "w") as f:
            f.write("untouched\n")
        self.ws = t.path("ws")
        os.mkdir(self.ws, 0o700)
        # The test's own archives go here, left out of the comparison.
        self.arch = t.path("arch")
        os.mkdir(self.arch)
        self.before = self.snap()

    def p(self, name):
        return os.path.join(self.arch, name)

    def snap(self):
        return {k: v for k, v in snapshot(self.t.tmp).items()
                if k != "arch" and not k.startswith("arch/")}

    def check(self, what):
        after = self.snap()
        # Only the files the test itself wrote before may differ: none.
        eq(sorted(set(after) - set(self.before)), [],
           "%s: new paths outside (or inside) the workspace" % what)
        for k, v in self.before.items():
            eq(after.get(k), v, "%s: %s changed" % (what, k))
        eq(os.listdir(self.ws), [], "%s: the refused input left entries "
           "in the workspace" % what)


def info(name, typ=tarfile.REGTYPE, size=0, mode=0o644, linkname=""):
    ti = tarfile.TarInfo(name)
    ti.type = typ
    ti.size = size
    ti.mode = mode
    ti.linkname = linkname
    return ti


def make_tar(path, members, mode="w:gz"):
    """members: (TarInfo, bytes or None)."""
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT) as tf:
        for ti, data in members:
            tf.addfile(ti, io.BytesIO(data) if data is not None else None)
    return path


def zip_symlink(zf, name, target):
    zi = zipfile.ZipInfo(name)
    zi.create_system = 3
    zi.external_attr = (stat.S_IFLNK | 0o777) << 16
    zf.writestr(zi, target)


def refused(t, s, archive, needle, dest="./", extra=(), what=None):
    """Run with the hostile input; assert the three things."""
    what = what or needle
    marker = t.path("ran")
    run = t.corral(["run", "--json", "-w", s.ws] + list(extra) +
                   ["--input", "%s:%s" % (archive, dest), "--",
                    "sh", "-c", "echo ran > %s" % marker], timeout=120)
    r = t.result(run)
    eq(run.code, 126, "%s: exit status (message %r)" % (what, r.get("message")))
    eq(r.get("status"), "policy_denied", "%s: status" % what)
    contains(r.get("message", ""), needle, "%s: message" % what)
    true("\n" not in r.get("message", ""), "%s: a one-line message" % what)
    eq([(d["syscall"], d["layer"], d["target"]) for d in r["denials"]],
       [("input", "fs", archive)], "%s: the denial recorded" % what)
    eq(r.get("inputs"), [], "%s: no input reported placed" % what)
    true(not os.path.exists(marker), "%s: the program ran" % what)
    s.check(what)
    t.assert_next_run_ok()
    return r


def ok_run(t, args, what="run", timeout=60):
    run = t.corral(["run", "--json"] + args, timeout=timeout)
    r = t.result(run)
    eq(r.get("status"), "ok", "%s: status (message %r, stderr %r)" % (
        what, r.get("message"), r.get("stderr")))
    eq(run.code, 0, "%s: exit status" % what)
    return r


# ---- hostile archives ----

@test
def io_tar_dotdot_refused(t):
    s = Sentinel(t)
    a = make_tar(s.p("a.tgz"), [(info("ok.txt", size=2), b"ok"),
                                   (info("../x", size=3), b"bad")])
    refused(t, s, a, '"../x"')
    # A name with a newline still gives a one-line message.
    a = make_tar(s.p("b.tgz"), [(info("a\nb/../../x", size=3), b"bad")])
    refused(t, s, a, '"..', what="newline in a name")


@test
def io_zip_dotdot_refused(t):
    s = Sentinel(t)
    a = s.p("a.zip")
    with zipfile.ZipFile(a, "w") as zf:
        zf.writestr("ok.txt", "ok")
        zf.writestr("../x", "bad")
    refused(t, s, a, '"../x"')


@test
def io_tar_absolute_refused(t):
    s = Sentinel(t)
    target = os.path.join(s.dir, "abs")
    a = make_tar(s.p("a.tgz"), [(info(target, size=3), b"bad")])
    r = refused(t, s, a, "an absolute name")
    contains(r["message"], '"' + target[:40], "the entry named")


@test
def io_zip_absolute_refused(t):
    s = Sentinel(t)
    target = os.path.join(s.dir, "abs")
    a = s.p("a.zip")
    with zipfile.ZipFile(a, "w") as zf:
        # zipfile strips a leading '/' from names: write it raw.
        zi = zipfile.ZipInfo("x" * len(target))
        zf.writestr(zi, "bad")
    raw = open(a, "rb").read().replace(b"x" * len(target), target.encode())
    with open(a, "wb") as f:
        f.write(raw)
    refused(t, s, a, "an absolute name")


@test
def io_tar_symlink_out_refused(t):
    """link -> the sentinel directory, then link/file."""
    s = Sentinel(t)
    a = make_tar(s.p("a.tgz"), [
        (info("link", tarfile.SYMTYPE, linkname=s.dir), None),
        (info("link/file", size=3), b"bad")])
    refused(t, s, a, '"link"')


@test
def io_zip_symlink_out_refused(t):
    s = Sentinel(t)
    a = s.p("a.zip")
    with zipfile.ZipFile(a, "w") as zf:
        zip_symlink(zf, "link", s.dir)
        zf.writestr("link/file", "bad")
    refused(t, s, a, '"link"')


@test
def io_tar_through_symlink_refused(t):
    """A link that stays inside is extracted, but nothing is written
    through it: link -> sub, then link/file."""
    s = Sentinel(t)
    a = make_tar(s.p("a.tgz"), [
        (info("sub", tarfile.DIRTYPE, mode=0o755), None),
        (info("link", tarfile.SYMTYPE, linkname="sub"), None),
        (info("link/file", size=3), b"bad")])
    refused(t, s, a, '"link/file"', what="write through a link")
    # A relative link escaping by ".." after a name (b -> ".", then
    # "b/../x") is refused too.
    a = make_tar(s.p("b.tgz"), [
        (info("b", tarfile.SYMTYPE, linkname="."), None),
        (info("c", tarfile.SYMTYPE, linkname="b/../keep"), None)])
    refused(t, s, a, '"c"', what="b/.. escape")


@test
def io_tar_hardlink_outside_refused(t):
    s = Sentinel(t)
    a = make_tar(s.p("a.tgz"), [
        (info("passwd", tarfile.LNKTYPE, linkname="/etc/passwd"), None)])
    refused(t, s, a, '"passwd"', what="hard link to /etc/passwd")
    a = make_tar(s.p("b.tgz"), [
        (info("keep", tarfile.LNKTYPE, linkname="../sentinel/keep.txt"), None)])
    refused(t, s, a, '"keep"', what="hard link to ../sentinel")
    # A name not yet extracted (a later entry) is refused too.
    a = make_tar(s.p("c.tgz"), [
        (info("early", tarfile.LNKTYPE, linkname="late"), None),
        (info("late", size=1), b"x")])
    refused(t, s, a, '"early"', what="hard link forward")


@test
def io_tar_hardlink_inside_works(t):
    a = make_tar(t.path("a.tgz"), [
        (info("f", size=5), b"hello"),
        (info("g", tarfile.LNKTYPE, linkname="f"), None)])
    r = ok_run(t, ["--input", a + ":d/", "--", "sh", "-c",
                   "cat d/g; stat -c %h d/f"])
    eq(r["stdout"], "hello2\n", "the linked file and its link count")


@test
def io_tar_fifo_device_refused(t):
    s = Sentinel(t)
    a = make_tar(s.p("a.tgz"), [(info("pipe", tarfile.FIFOTYPE), None)])
    refused(t, s, a, "a fifo")
    ti = info("dev", tarfile.CHRTYPE)
    ti.devmajor, ti.devminor = 1, 3
    a = make_tar(s.p("b.tgz"), [(ti, None)])
    refused(t, s, a, "a character device")


class Zeros(io.RawIOBase):
    """n zero bytes, produced as read: the test never holds them."""

    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


@test
def io_tar_bomb_stopped(t):
    """1 GiB of zeros (about 1 MiB compressed) against disk=64MiB: stopped
    while it inflates, at the block that crosses the budget."""
    s = Sentinel(t)
    a = s.p("bomb.tgz")
    with tarfile.open(a, "w:gz", compresslevel=1) as tf:
        tf.addfile(info("zeros", size=1 << 30), Zeros(1 << 30))
    lt(os.path.getsize(a), 8 << 20, "the bomb's compressed size")
    r = refused(t, s, a, "disk budget", extra=["--limit", "disk=64MiB"])
    contains(r["message"], '"zeros"', "the entry named")
    written = int(r["message"].split("stopped with ")[1].split()[0])
    true(written <= 64 << 20, "bytes written %d past the budget" % written)


@test
def io_zip_bomb_stopped(t):
    s = Sentinel(t)
    a = s.p("bomb.zip")
    with zipfile.ZipFile(a, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("zeros", "w", force_zip64=True) as f:
            chunk = bytes(1 << 20)
            for _ in range(1024):
                f.write(chunk)
    r = refused(t, s, a, "disk budget", extra=["--limit", "disk=64MiB"])
    written = int(r["message"].split("stopped with ")[1].split()[0])
    true(written <= 64 << 20, "bytes written %d past the budget" % written)


# ---- data decoded and never written; time, cancellation, memory ----

def _ustar(name, typ, size, link=b""):
    """One ustar header block (size in base-256 past 8 GiB)."""
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = (b"%011o\0" % size if size < 8 ** 11 else
                  b"\x80" + size.to_bytes(11, "big"))
    h[136:148] = b"00000000000\0"
    h[156] = ord(typ)
    h[157:157 + len(link)] = link
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def _pad(n):
    return b"\0" * (-n % 512)


def _gz(b):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(b) + c.flush()


def hardlink_bomb(path, gib, outer=0):
    """A pax tar.gz: a.txt, then b.txt, a hard link to it that declares
    gib GiB of zero data (libarchive keeps a pax hard link's size), then
    c.txt. The data is gzip members of 64 MiB of zeros, concatenated;
    outer gzip layers shrink the file further."""
    rec = b"%d path=b.txt\n" % (len(b" path=b.txt\n") + 2)
    head = (_ustar(b"a.txt", "0", 3) + b"hi\n" + _pad(3) +
            _ustar(b"PaxHeaders/b", "x", len(rec)) + rec + _pad(len(rec)) +
            _ustar(b"b.txt", "1", gib << 30, b"a.txt"))
    member = _gz(bytes(64 << 20))
    data = (_gz(head) + member * (gib * 16) +
            _gz(_ustar(b"c.txt", "0", 3) + b"yo\n" + _pad(3) + bytes(1024)))
    for _ in range(outer):
        data = _gz(data)
    with open(path, "wb") as f:
        f.write(data)
    return path


@test
def io_hardlink_data_bomb_refused(t):
    """A pax hard link declaring 4 GiB of data (4 MB of gzip): corral placed
    the link and never read the data, so nothing counted it, and
    libarchive inflated all of it to reach the next header (2.6 s of
    supervisor CPU per GiB, status ok, outside the wall and cpu budgets).
    The data is read and counted against the disk budget now: refused at
    the budget, well before the wall budget, the entry named."""
    s = Sentinel(t)
    a = hardlink_bomb(s.p("hl.tgz"), 4)
    lt(os.path.getsize(a), 8 << 20, "the bomb's compressed size")
    r = refused(t, s, a, "disk budget",
                extra=["--limit", "disk=32MiB", "--limit", "wall=60s"])
    contains(r["message"], '"b.txt"', "the hard link named")
    contains(r["message"], "decoded and not written", "what was counted")
    skipped = int(r["message"].split("bytes written and ")[1].split()[0])
    true(skipped <= 32 << 20, "bytes decoded %d past the budget" % skipped)


def _slow_extraction(t, extra):
    """corral extracting 64 GiB of a hard link's data (110 KB of nested
    gzip) under a disk budget that allows it: minutes of inflating."""
    ws = t.path("ws")
    os.mkdir(ws, 0o700)
    a = hardlink_bomb(t.path("slow.tgz"), 64, outer=1)
    marker = t.path("ran")
    p = t.spawn(["run", "--json", "-w", ws, "--limit", "disk=100GiB"] +
                extra + ["--input", "%s:in/" % a, "--", "sh", "-c",
                         "echo ran > %s" % marker])
    return p, ws, a, marker


@test
def io_extraction_cancelled_by_sigterm(t):
    """SIGTERM while an archive is extracted: it was acted on only once
    extraction ended (46 s later in the report; minutes here). The signalfd
    is read between blocks now: the run ends cancelled, promptly, with
    nothing placed and the program never started."""
    p, ws, a, marker = _slow_extraction(t, ["--limit", "wall=600s"])
    # DEST is made just before the archive is read.
    true(wait_for(lambda: os.path.isdir(os.path.join(ws, "in")), 30),
         "extraction started")
    time.sleep(0.5)
    os.kill(p.pid, signal.SIGTERM)
    run = t.finish(p, timeout=30)
    r = t.result(run)
    eq(run.code, 130, "exit status (message %r)" % r.get("message"))
    eq(r.get("status"), "cancelled", "status")
    contains(r.get("message", ""), "cancelled by TERM", "message")
    contains(r.get("message", ""), a, "the input named")
    eq(r.get("inputs"), [], "no input reported placed")
    eq(os.listdir(ws), [], "what the input placed is removed")
    true(not os.path.exists(marker), "the program ran")
    t.assert_next_run_ok()


@test
def io_extraction_stopped_by_sigtstp_is_not_cancelled(t):
    """^Z while an archive is extracted stops corral (no tree exists yet)
    and the extraction goes on when it is continued: SIGTSTP is one of the
    signals read from the signalfd, and must not be taken for a cancel."""
    p, ws, a, marker = _slow_extraction(t, ["--limit", "wall=600s"])
    true(wait_for(lambda: os.path.isdir(os.path.join(ws, "in")), 30),
         "extraction started")
    time.sleep(0.3)
    os.kill(p.pid, signal.SIGTSTP)
    stopped = wait_for(lambda: proc_state(p.pid) == "T", 10)
    os.kill(p.pid, signal.SIGCONT)
    true(stopped, "corral stopped (state %s)" % proc_state(p.pid))
    true(wait_for(lambda: proc_state(p.pid) not in ("T", "gone"), 10),
         "corral continued")
    time.sleep(0.3)
    os.kill(p.pid, signal.SIGTERM)
    run = t.finish(p, timeout=30)
    r = t.result(run)
    eq(r.get("status"), "cancelled", "status")
    contains(r.get("message", ""), "cancelled by TERM", "message")
    true(not os.path.exists(marker), "the program ran")


@test
def io_extraction_has_a_deadline(t):
    """Extraction runs before the wall timer starts: it had no deadline at
    all (usage.wall_ms ~20 after 74 s). It is bounded by the wall budget
    now: limit_exceeded, limit wall, nothing placed."""
    p, ws, a, marker = _slow_extraction(t, ["--limit", "wall=2s"])
    run = t.finish(p, timeout=60)
    r = t.result(run)
    eq(r.get("status"), "limit_exceeded", "status (message %r)" %
       r.get("message"))
    eq(r.get("limit"), "wall", "limit")
    eq(run.code, 124, "exit status")
    contains(r.get("message", ""), "took longer than the wall budget (2s)",
             "message")
    contains(r.get("message", ""), '"b.txt"', "the entry named")
    eq(r.get("inputs"), [], "no input reported placed")
    eq(os.listdir(ws), [], "what the input placed is removed")
    true(not os.path.exists(marker), "the program ran")
    t.assert_next_run_ok()


@test
def io_sparse_hole_and_big_archive_keep_the_deadline(t):
    """A 10 KB tar whose one member is a 40 GiB hole: the hole is hashed
    as the zeros it reads as, with no deadline or cancel looked at (a
    20 GiB one held corral 16-26 s past wall=2s, found by a probing
    session); and an archive input's own bytes, hashed whole before it is
    opened, the same (a 16 GiB sparse file an earlier run can leave). Both
    end on the wall budget now, in seconds, nothing placed."""
    d = t.path("sparse")
    os.makedirs(d)
    with open(os.path.join(d, "f"), "wb") as f:
        f.truncate(40 << 30)
    a = t.path("hole.tar")
    subprocess.run(["tar", "--sparse", "-cf", a, "-C", d, "f"], check=True)
    os.unlink(os.path.join(d, "f"))
    lt(os.path.getsize(a), 1 << 20, "the archive's size")
    big = t.path("big.tar")
    with open(big, "wb") as f:
        f.truncate(40 << 30)
    for arch in (a, big):
        ws = t.path("ws-" + os.path.basename(arch))
        os.mkdir(ws, 0o700)
        t0 = time.monotonic()
        run = t.corral(["run", "--json", "-w", ws, "--limit", "disk=41GiB",
                        "--limit", "wall=2s", "--input", "%s:in/" % arch,
                        "--", "true"], timeout=120)
        took = time.monotonic() - t0
        r = t.result(run)
        eq((r.get("status"), r.get("limit")), ("limit_exceeded", "wall"),
           "%s (message %r)" % (arch, r.get("message")))
        lt(took, 15, "seconds until %s ended" % arch)
        eq(os.listdir(ws), [], "what the input placed is removed")
    t.assert_next_run_ok()


@test
def io_many_hardlinks_extract_in_linear_time(t):
    """40 000 hard links to a file whose path is 3.7 KB: each link's target
    was found by a strcmp scan back over every earlier entry, O(n^2)
    (9 979 links: 20-29 s of supervisor CPU; 20 000: under a minute idle,
    94 s loaded; 40 000: minutes). A hash index finds it now: seconds."""
    pre = "/".join(["d" * 250] * 15) + "/"
    a = t.path("hl.tgz")
    n = 40000
    with tarfile.open(a, "w:gz", format=tarfile.PAX_FORMAT,
                      compresslevel=1) as tf:
        tf.addfile(info(pre + "f", size=2), io.BytesIO(b"hi"))
        for k in range(n - 1):
            tf.addfile(info(pre + "h%06d" % k, tarfile.LNKTYPE,
                            linkname=pre + "f"))
    r = ok_run(t, ["--limit", "files=50000", "--input", a + ":in/", "--",
                   "sh", "-c", "cat in/%sh039998" % pre],
               "40 000 hard links", timeout=60)
    eq(r.get("stdout"), "hi", "the last link reads the file")
    eq(r["inputs"][0]["files"], n + 16, "entries placed")


def _xz_declaring(path, code, data):
    """data as .xz with a 1 MiB dictionary, the block header then patched
    to declare dictionary code (LZMA2: 28 = 64 MiB, 36 = 1 GiB): liblzma
    allocates what is declared."""
    c = lzma.LZMACompressor(format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32,
                            filters=[{"id": lzma.FILTER_LZMA2,
                                      "dict_size": 1 << 20}])
    d = bytearray(c.compress(data) + c.flush())
    size = (d[12] + 1) * 4              # the block header, after the stream's
    blk = d[12:12 + size]
    i = 2
    for flag in (0x40, 0x80):           # compressed, uncompressed size
        if blk[1] & flag:
            while blk[i] & 0x80:
                i += 1
            i += 1
    eq((blk[i], blk[i + 1]), (0x21, 1), "the LZMA2 filter flags")
    blk[i + 2] = code
    blk[size - 4:size] = struct.pack("<I", zlib.crc32(bytes(blk[:size - 4])))
    d[12:12 + size] = blk
    with open(path, "wb") as f:
        f.write(d)
    return path


@test
def io_xz_dictionary_bounded(t):
    """A .tar.xz whose block header declares a 1 GiB dictionary (a few KB
    of archive): liblzma, given no memory limit by libarchive, allocated it
    and filled it with what passed (corral reached 2 GiB resident with a
    2 GiB one). Decoding is bounded now: refused, saying why; a declared
    64 MiB (xz -9) still extracts."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(info("a.txt", size=3), io.BytesIO(b"hi\n"))
    ok = _xz_declaring(t.path("ok.tar.xz"), 28, buf.getvalue())
    r = ok_run(t, ["--input", ok + ":in/", "--", "cat", "in/a.txt"],
               "a 64 MiB dictionary")
    eq(r.get("stdout"), "hi\n", "extracted")
    s = Sentinel(t)
    big = _xz_declaring(s.p("big.tar.xz"), 36, buf.getvalue())
    r = refused(t, s, big, "more memory than corral gives it",
                extra=["--limit", "files=1000"], what="a 1 GiB dictionary")
    # 256 MiB for decoding, 4.5 KiB per entry of the files budget.
    contains(r["message"], "(260 MiB", "the bound stated")


@test
def io_tar_many_entries_refused(t):
    s = Sentinel(t)
    a = s.p("many.tgz")
    with tarfile.open(a, "w:gz", compresslevel=1) as tf:
        for i in range(100000):
            tf.addfile(info("f%06d" % i))
    r = refused(t, s, a, "files budget", extra=["--limit", "files=1000"])
    contains(r["message"], '"f001000"', "the first entry past the budget")


@test
def io_zip_many_entries_refused(t):
    s = Sentinel(t)
    a = s.p("many.zip")
    with zipfile.ZipFile(a, "w") as zf:
        for i in range(2000):
            zf.writestr("f%06d" % i, "")
    refused(t, s, a, "files budget", extra=["--limit", "files=1000"])


@test
def io_setuid_dropped(t):
    a = make_tar(t.path("a.tgz"), [
        (info("suid", size=4, mode=0o4755), b"#!x\n"),
        (info("sgid", size=4, mode=0o2755), b"#!x\n"),
        (info("sticky", tarfile.DIRTYPE, mode=0o3777), None)])
    src = t.path("src")
    os.mkdir(src)
    t.write("src/suid", "x")
    os.chmod(os.path.join(src, "suid"), 0o4755)
    ws = t.path("ws")
    r = ok_run(t, ["-w", ws, "--input", a + ":a/", "--input", src + ":d",
                   "--", "stat", "-c", "%n %a", "a/suid", "a/sgid",
                   "a/sticky", "d/suid"])
    for line in r["stdout"].splitlines():
        name, mode = line.split()
        eq(int(mode, 8) & 0o7000, 0, "%s: set-id or sticky bits" % name)
    eq(stat.S_IMODE(os.stat(os.path.join(ws, "a/suid")).st_mode) & 0o111,
       0o111 & ~_umask(), "the execute bits kept")


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


@test
def io_dir_special_and_escaping_link_refused(t):
    s = Sentinel(t)
    src = s.p("srcdir")
    os.mkdir(src)
    with open(os.path.join(src, "ok"), "w") as f:
        f.write("ok")
    os.mkfifo(os.path.join(src, "pipe"))
    refused(t, s, src, '"pipe"', dest="d", what="fifo in a directory")
    os.unlink(os.path.join(src, "pipe"))
    os.symlink(s.dir, os.path.join(src, "out"))
    refused(t, s, src, '"out"', dest="d", what="link out of a directory")


# ---- good inputs and digests ----

def _tree(t, name):
    root = t.path(name)
    os.makedirs(os.path.join(root, "pkg", "empty"))
    t.write(name + "/README", "read me\n")
    t.write(name + "/pkg/run.sh", "#!/bin/sh\necho run\n", mode=0o755)
    t.write(name + "/pkg/data.bin", bytes(range(256)) * 40)
    os.symlink("pkg/run.sh", os.path.join(root, "run"))
    return root


@test
def io_archive_round_trip(t):
    """tar (plain, gz, bz2, xz) and zip in, the same tree out, the digests
    as sha256sum and the definition give them."""
    root = _tree(t, "tree")
    want_tree = tree_digest(root)
    archives = []
    for ext, mode in (("tar", "w"), ("tgz", "w:gz"), ("tbz", "w:bz2"),
                      ("txz", "w:xz")):
        p = t.path("in." + ext)
        with tarfile.open(p, mode) as tf:
            for name in sorted(os.listdir(root)):
                tf.add(os.path.join(root, name), name)
        archives.append(p)
    p = t.path("in.zip")
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as zf:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in sorted(dirnames):
                full = os.path.join(dirpath, name)
                zf.write(full, os.path.relpath(full, root) + "/")
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                if os.path.islink(full):
                    zip_symlink(zf, rel, os.readlink(full))
                else:
                    zf.write(full, rel)
    archives.append(p)
    for a in archives:
        out = t.path("out-" + os.path.basename(a))
        r = ok_run(t, ["--input", a + ":src/", "--output", "src/**",
                       "--output-dir", out, "--", "sh", "-c",
                       "./src/run; cat src/README"], what=a)
        eq(r["stdout"], "run\nread me\n", "%s: the program's view" % a)
        ins = r["inputs"]
        eq(len(ins), 1, "%s: inputs" % a)
        eq(ins[0]["kind"], "archive", "%s: kind" % a)
        eq(ins[0]["to"], "src", "%s: to" % a)
        eq(ins[0]["archive_sha256"], sha256sum(a), "%s: archive_sha256" % a)
        eq(ins[0]["sha256"], want_tree, "%s: the tree digest" % a)
        # Six entries and DEST itself.
        eq(ins[0]["files"], 7, "%s: entries" % a)
        # Artifacts: every regular file, each digest as sha256sum says.
        got = {x["path"]: x for x in r["artifacts"]}
        eq(sorted(got), ["src/README", "src/pkg/data.bin", "src/pkg/run.sh"],
           "%s: artifacts" % a)
        for path, x in got.items():
            exported = os.path.join(out, path)
            eq(x["sha256"], sha256sum(exported), "%s: %s digest" % (a, path))
            eq(x["sha256"], sha256sum(os.path.join(root, path[4:])),
               "%s: %s digest against the source" % (a, path))
            eq(x["bytes"], os.path.getsize(exported), "%s: %s bytes" % (a, path))
        eq([x["path"] for x in r["artifacts_skipped"]], ["src/run"],
           "%s: the link is skipped, not followed" % a)


@test
def io_directory_and_file_inputs(t):
    root = _tree(t, "tree")
    f = t.write("single.txt", "one file\n")
    r = ok_run(t, ["--input", root + ":copy", "--input", f + ":in/one.txt",
                   "--", "sh", "-c", "cat in/one.txt copy/README; "
                   "readlink copy/run; test -d copy/pkg/empty && echo empty"])
    eq(r["stdout"], "one file\nread me\npkg/run.sh\nempty\n", "the view")
    d, s1 = r["inputs"]
    eq((d["kind"], d["to"], d["sha256"]),
       ("directory", "copy", tree_digest(root)), "directory input")
    eq((s1["kind"], s1["to"], s1["sha256"], s1["bytes"]),
       ("file", "in/one.txt", sha256sum(f), 9), "file input")
    # Inputs never replace: the same DEST twice is refused.
    run = t.corral(["run", "--json", "--input", f + ":x", "--input",
                    f + ":x", "--", "true"])
    eq(run.code, 126, "the same destination twice: exit status")
    contains(t.result(run)["message"], "already exists", "message")


@test
def io_digests_of_documents(t):
    pol = t.path("pol.json")
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        text = f.read()
    with open(pol, "w") as f:
        f.write(text)
    req = t.write("req.json", json.dumps({"command": ["echo", "a b", "c"]}))
    audit = t.path("audit.jsonl")
    r = ok_run(t, ["--policy", pol, "--request", req, "--audit", audit])
    dg = r["digests"]
    eq(dg["policy"], sha256sum(pol), "digests.policy")
    eq(dg["request"], sha256sum(req), "digests.request")
    eq(dg["command"], sha_bytes(b"echo\0a b\0c\0"), "digests.command")
    start = [json.loads(x) for x in open(audit) if '"start"' in x][0]
    eq(start["digests"], dg, "audit start: digests")
    eq(start["inputs"], [], "audit start: inputs")
    # The built-in policy is digested as carried.
    r = ok_run(t, ["--", "true"])
    eq(r["digests"]["request"], None, "no request")
    eq(r["digests"]["policy"], sha256sum(os.path.join(CFG.policy_dir,
                                                      "default.json")),
       "the built-in policy, as policy/default.json")


@test
def io_audit_start_inputs(t):
    f = t.write("in.txt", "data\n")
    audit = t.path("audit.jsonl")
    ok_run(t, ["--audit", audit, "--input", f + ":in.txt", "--", "true"])
    start = [json.loads(x) for x in open(audit) if '"start"' in x][0]
    eq([(i["from"], i["to"], i["sha256"]) for i in start["inputs"]],
       [(f, "in.txt", sha256sum(f))], "audit start: inputs")


@test
def io_request_inputs(t):
    """A request is the agent's data: it may bring in what the class lets
    the program read, nothing else."""
    src = t.path("data")
    os.mkdir(src)
    f = t.write("data/in.txt", "from the request\n")
    req = t.write("req.json", json.dumps({
        "command": ["cat", "in.txt"],
        "inputs": [{"from": f, "to": "in.txt"}]}))
    r = ok_run(t, ["--request", req, "--ro", src])
    eq(r["stdout"], "from the request\n", "stdout")
    eq(r["inputs"][0]["sha256"], sha256sum(f), "digest")
    run = t.corral(["run", "--json", "--request", req])
    eq(run.code, 126, "outside the class: exit status")
    contains(t.result(run)["message"], "not readable by the class", "message")
    # Through a link inside a read root to a file outside it: judged on
    # where it leads.
    secret = t.write("secret.txt", "secret\n")
    os.symlink(secret, os.path.join(src, "link"))
    req2 = t.write("req2.json", json.dumps({
        "command": ["cat", "in.txt"],
        "inputs": [{"from": os.path.join(src, "link"), "to": "in.txt"}]}))
    run = t.corral(["run", "--json", "--request", req2, "--ro", src])
    eq(run.code, 126, "a link out of the read root: exit status")
    not_contains(t.result(run)["stdout"], "secret", "stdout")
    # corral's own /proc/self, even under --ro /.
    req3 = t.write("req3.json", json.dumps({
        "command": ["cat", "env"],
        "inputs": [{"from": "/proc/self/environ", "to": "env"}]}))
    run = t.corral(["run", "--json", "--request", req3, "--ro", "/"],
                   env={"IO_SECRET_MARK": "s3cr3t"})
    eq(run.code, 126, "/proc/self/environ: exit status")
    contains(t.result(run)["message"], "pseudo-filesystem", "message")
    not_contains(t.result(run)["stdout"], "s3cr3t", "stdout")


@test
def io_request_extract(t):
    src = t.path("data")
    os.mkdir(src)
    a = make_tar(os.path.join(src, "a.tgz"), [(info("x/y.txt", size=2), b"hi")])
    req = t.write("req.json", json.dumps({
        "command": ["cat", "repo/x/y.txt"],
        "inputs": [{"from": a, "to": "repo/", "extract": True}]}))
    r = ok_run(t, ["--request", req, "--ro", src])
    eq(r["stdout"], "hi", "stdout")
    eq(r["inputs"][0]["archive_sha256"], sha256sum(a), "archive digest")


# ---- artifacts ----

@test
def io_artifacts_hostile(t):
    """A symlink named like an allowed output pointing at a secret, a fifo,
    a device-like name: skipped and reported, never followed or opened (a
    fifo would block an open without O_NONBLOCK)."""
    secret = t.write("secret.txt", "the secret\n")
    out = t.path("out")
    r = ok_run(t, ["--output", "out/*", "--output-dir", out, "--", "sh",
                   "-c", "mkdir out; ln -s %s out/report.json; "
                   "mkfifo out/pipe.json; echo good > out/good.json; "
                   "ln -s /dev/zero out/zero.json" % secret])
    eq([a["path"] for a in r["artifacts"]], ["out/good.json"], "artifacts")
    skipped = {s["path"]: s["reason"] for s in r["artifacts_skipped"]}
    eq(skipped, {"out/report.json": "a symbolic link",
                 "out/pipe.json": "a fifo",
                 "out/zero.json": "a symbolic link"}, "skipped")
    eq(sorted(os.listdir(os.path.join(out, "out"))), ["good.json"],
       "what the output directory holds")
    eq(r["artifacts"][0]["sha256"],
       sha256sum(os.path.join(out, "out/good.json")), "digest")
    # A directory named like the output, swapped for a link to outside:
    # the walk never enters it.
    out2 = t.path("out2")
    r = ok_run(t, ["--output", "d/**", "--output-dir", out2, "--", "sh",
                   "-c", "ln -s %s d" % os.path.dirname(secret)])
    eq(r["artifacts"], [], "through a directory link")
    eq(os.listdir(out2), [], "the output directory")


@test
def io_artifacts_links_on_the_way_and_deep_matches_are_named(t):
    """A link on the way to a pattern (out -> build/output, pattern
    out/*.txt) is not followed, and was not named either: nothing
    exported, nothing skipped. A match deeper than 128 components was
    judged as its ancestor and lost unnamed. A pattern longer than 128
    components was cut short and exported its directory's every file
    (found by a probing session). Now: the link is named, the deep match
    exported, a pattern past 257 components refused (125), and a long
    one matches what it names only."""
    out = t.path("out")
    deep = "/".join(["d"] * 140)
    r = ok_run(t, ["--output", "out/*.txt", "--output", "**/deep.txt",
                   "--output-dir", out, "--", "sh", "-c",
                   "mkdir -p build/output %s && echo r > "
                   "build/output/report.txt && ln -s build/output out && "
                   "echo d > %s/deep.txt" % (deep, deep)])
    eq([a["path"] for a in r["artifacts"]], [deep + "/deep.txt"],
       "artifacts (the deep match)")
    eq(r["artifacts_skipped"], [{"path": "out", "reason": "a symbolic "
       "link on the way to an output pattern: not followed"}], "skipped")
    long_glob = "/".join(["d"] * 200) + "/keep.txt"
    out2 = t.path("out2")
    r = ok_run(t, ["--output", long_glob, "--output-dir", out2, "--",
                   "sh", "-c", "mkdir -p %s && echo k > %s/keep.txt && "
                   "echo o > %s/other.txt" % ((long_glob[:-9],) * 3)])
    eq([a["path"] for a in r["artifacts"]], [long_glob],
       "a 201-component pattern exports what it names only")
    run = t.corral(["run", "--json", "--output", "/".join(["d"] * 258),
                    "--output-dir", t.path("out3"), "--", "true"])
    eq(run.code, 125, "a 258-component pattern: exit status (stderr %r)"
       % run.err)
    contains(run.err.decode(), "at most 257", "the reason")


@test
def io_output_dir_that_is_a_file_refused(t):
    """--output-dir naming a regular file or a fifo: the run went on and
    its artifacts were skipped with a reason only (found by a probing
    session). Refused before anything starts now (125)."""
    f = t.write("afile", "x\n")
    fifo = t.path("afifo")
    os.mkfifo(fifo)
    for d in (f, fifo):
        marker = t.path("ran")
        run = t.corral(["run", "--json", "--output", "x", "--output-dir",
                        d, "--", "touch", marker])
        r = t.result(run)
        eq((run.code, r.get("status")), (125, "platform_failure"),
           "%s: exit status and status" % d)
        contains(r.get("message") or "", "Not a directory",
                 "%s: the reason" % d)
        eq(os.path.exists(marker), False, "%s: the program never ran" % d)
    t.assert_next_run_ok()


@test
def a_caller_umask_without_owner_search_keeps_workspaces_0700(t):
    """A caller's umask 0177 made the private workspace, and a -w
    directory corral made, 0600: its owner could not enter it and every
    run failed (found by a probing session). Both are 0700 now, as
    documented; files the program makes keep the caller's umask."""
    umask = lambda: os.umask(0o177)
    r = t.result(t.corral(["run", "--json", "--", "sh", "-c",
                           "touch f && stat -c %a . f"], preexec=umask))
    eq((r.get("status"), r.get("stdout")), ("ok", "700\n600\n"),
       "private workspace (message %r)" % r.get("message"))
    ws = t.path("made")
    r = t.result(t.corral(["run", "--json", "-w", ws, "--", "true"],
                          preexec=umask))
    eq(r.get("status"), "ok", "-w made (message %r)" % r.get("message"))
    eq(stat.S_IMODE(os.stat(ws).st_mode), 0o700, "the mode of -w made")


@test
def io_artifacts_audit(t):
    out = t.path("out")
    audit = t.path("audit.jsonl")
    r = ok_run(t, ["--audit", audit, "--output", "*.txt", "--output-dir",
                   out, "--", "sh", "-c", "echo a > a.txt; ln -s a.txt b.txt"])
    ev = [json.loads(x) for x in open(audit)]
    arts = [e for e in ev if e["event"] == "artifacts"]
    eq(len(arts), 1, "one artifacts event")
    eq(arts[0]["artifacts"], r["artifacts"], "the exported ones")
    eq(arts[0]["skipped"], 1, "skipped")
    eq([e["event"] for e in ev][-3:], ["artifacts", "exit", "cleanup"],
       "the event order")


@test
def io_artifacts_no_overwrite(t):
    out = t.path("out")
    os.mkdir(out)
    with open(os.path.join(out, "r.txt"), "w") as f:
        f.write("mine\n")
    os.symlink(t.path("elsewhere"), os.path.join(out, "l.txt"))
    args = ["--output", "*.txt", "--output-dir", out, "--", "sh", "-c",
            "echo new > r.txt; echo new > l.txt; echo new > n.txt"]
    r = ok_run(t, args)
    eq(open(os.path.join(out, "r.txt")).read(), "mine\n", "kept")
    true(os.path.islink(os.path.join(out, "l.txt")), "link kept")
    true(not os.path.exists(t.path("elsewhere")), "written through a link")
    eq([a["path"] for a in r["artifacts"]], ["n.txt"], "exported")
    eq(sorted(s["path"] for s in r["artifacts_skipped"]), ["l.txt", "r.txt"],
       "skipped")
    contains(r["artifacts_skipped"][0]["reason"], "not overwritten", "reason")
    r = ok_run(t, ["--output-overwrite"] + args)
    eq(open(os.path.join(out, "r.txt")).read(), "new\n", "overwritten")
    true(not os.path.islink(os.path.join(out, "l.txt")), "link replaced")
    true(not os.path.exists(t.path("elsewhere")), "written through a link")
    eq(len(r["artifacts"]), 3, "exported with --output-overwrite")


@test
def io_artifacts_bounds(t):
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["artifacts"] = {"files": 2, "bytes": "1KiB"}
    p = t.write("pol.json", json.dumps(pol))
    out = t.path("out")
    r = ok_run(t, ["--policy", p, "--output", "*", "--output-dir", out,
                   "--", "sh", "-c", "head -c 2000 /dev/zero > 1big; "
                   "echo a > a; echo b > b; echo c > c"])
    eq([a["path"] for a in r["artifacts"]], ["a", "b"], "exported")
    eq({s["path"]: s["reason"] for s in r["artifacts_skipped"]},
       {"1big": "over the artifacts' bytes bound",
        "c": "over the artifacts' files bound"}, "skipped")
    chk = t.corral(["policy", "check", p])
    eq(chk.code, 0, "policy check")
    contains(chk.out.decode(), '"artifacts": {', "printed")
    bad = dict(pol)
    bad["classes"]["default"]["artifacts"] = {"files": 2, "size": 1}
    p2 = t.write("bad.json", json.dumps(bad))
    chk = t.corral(["policy", "check", p2])
    eq(chk.code, 1, "unknown artifacts key")
    contains(chk.err.decode(), "artifacts", "error names the key")


@test
def io_usage_errors(t):
    ws = t.path("ws")
    os.mkdir(ws)
    for args, needle in (
            (["--output", "x"], "--output-dir"),
            (["--output", "/etc/*", "--output-dir", t.path("o")], "absolute"),
            (["--input", t.path("nope") + ":../x"], ".."),
            (["-w", ws, "--output", "x", "--output-dir",
              os.path.join(ws, "o")], "workspace"),
            (["--input", t.path("missing") + ":m"], "cannot open"),
            # "." matched nothing, silently (found by a probing session)
            (["--output", ".", "--output-dir", t.path("o")], "names no file"),
            (["--output", "./", "--output-dir", t.path("o")], "names no file")):
        run = t.corral(["run"] + args + ["--", "true"])
        eq(run.code, 125, "%s: exit status (stderr %r)" % (args, run.err))
        contains(run.err.decode(), needle, "%s: stderr" % args)
    t.assert_next_run_ok()


@test
def io_artifacts_skipped_bounded(t):
    """A program leaving a flood of links matching the glob: the result
    lists the first 256 and counts the rest."""
    out = t.path("out")
    r = ok_run(t, ["--output", "*", "--output-dir", out, "--", "sh", "-c",
                   "i=0; while [ $i -lt 300 ]; do ln -s /etc/passwd l$i; "
                   "i=$((i+1)); done"])
    eq(len(r["artifacts_skipped"]), 256, "listed")
    eq(r["artifacts_skipped_dropped"], 44, "counted")
    eq(os.listdir(out), [], "the output directory")
    # Files the program made unreadable were listed past the bound and
    # left out of the audit's count (found by a probing session). As
    # root corral reads them anyway: exported then, never more listed.
    audit = t.path("audit.jsonl")
    r = ok_run(t, ["--audit", audit, "--output", "*", "--output-dir",
                   t.path("out2"), "--", "sh", "-c",
                   "i=0; while [ $i -lt 300 ]; do ln -s /etc/passwd l$i; "
                   ": > f$i; i=$((i+1)); done; chmod 000 f*"])
    listed, dropped = len(r["artifacts_skipped"]), r["artifacts_skipped_dropped"]
    eq(listed, 256, "listed, with unreadable files")
    eq(listed + dropped + len(r["artifacts"]), 600, "every name accounted")
    with open(audit) as f:
        ev = [json.loads(line) for line in f]
    art = [e for e in ev if e.get("event") == "artifacts"]
    eq([e.get("skipped") for e in art], [listed + dropped],
       "the audit's count of skipped names")


# ---- what the program chose crossing back: a fifth probing round ----

@test
def io_request_outputs_cannot_hold_the_collection(t):
    """A request's outputs of many "**" over a deep chain of directories
    the program made: matching backtracked, ~12 times slower per "**",
    after the wall budget and before the watchdog; with six the watchdog
    ended corral with no result and no closing audit event. Now the
    match is linear in the pattern and the collection has a time bound."""
    out = t.path("out")
    audit = t.path("audit.jsonl")
    req = t.write("req.json", json.dumps({
        "command": ["python3", "-c",
                    "import os\np='.'\n"
                    "for i in range(100):\n p=os.path.join(p,'d')\n"
                    "os.makedirs(p)\nopen(os.path.join(p,'x'),'w').write('x')"],
        "outputs": ["/".join(["**"] * 6) + "/x"]}))
    run = t.corral(["run", "--json", "--request", req, "--output-dir", out,
                    "--audit", audit, "--limit", "wall=5s"], timeout=120)
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq([a["path"] for a in r.get("artifacts") or []],
       ["/".join(["d"] * 100) + "/x"], "the one file the pattern names")
    lt(run.elapsed, 30, "seconds until corral returned")
    last = [json.loads(x)["event"] for x in open(audit)][-1]
    eq(last, "cleanup", "the trail's last event")


@test
def io_export_cannot_take_the_result_or_audit_names(t):
    """The result and the audit trail inside --output-dir: an exported
    directory at the result's name kept corral from writing the result
    (stderr said so, exit 0, no file), and with --output-overwrite an
    exported file replaced the whole trail. Those names are never an
    export's now, and a result corral cannot write is exit 125."""
    out = t.path("out")
    os.mkdir(out)
    res = os.path.join(out, "result.json")
    audit = os.path.join(out, "audit.jsonl")
    ok_run(t, ["--audit", audit, "--", "true"], what="an earlier run")
    before = open(audit).read()
    run = t.corral(["run", "--result", res, "--audit", audit,
                    "--output-dir", out, "--output-overwrite",
                    "--output", "result.json/**", "--output", "*.jsonl",
                    "--", "sh", "-c",
                    "mkdir result.json; echo forged > result.json/f; "
                    "echo '{\"forged\":1}' > audit.jsonl"])
    eq(run.code, 0, "exit status (stderr %r)" % run.err)
    with open(res) as f:
        r = json.load(f)
    eq(r.get("status"), "ok", "the result file is corral's")
    skipped = {s["path"]: s["reason"] for s in r.get("artifacts_skipped", [])}
    contains(skipped.get("audit.jsonl", ""), "audit trail",
             "the trail's name is not exported")
    contains(skipped.get("result.json/f", ""), "result file",
             "nothing through the result's name")
    true(open(audit).read().startswith(before),
         "the earlier chain is still the trail's start")
    v = t.corral(["audit", "verify", audit])
    eq(v.code, 0, "corral audit verify (stdout %r)" % v.out)
    # A result that cannot be written fails the run: a directory put at
    # its name while the program runs (by the caller here; if it came
    # before corral's start-up check, that check refuses: 125 either way).
    res2 = t.path("r2.json")
    p = t.spawn(["run", "--result", res2, "--", "sleep", "2"])
    time.sleep(0.5)
    os.mkdir(res2)
    run = t.finish(p, timeout=60, want_json=False)
    eq(run.code, 125, "a result corral could not write: exit status "
       "(stderr %r)" % run.err)
    t.assert_next_run_ok()


@test
def io_output_dir_judged_on_real_paths(t):
    """--output-dir inside a --rw root written "ROOT/" or "A/../ROOT" was
    accepted (the check compared the strings): the program planted the
    names the user then read. Around a root it is refused too."""
    root = t.path("proj")
    os.makedirs(os.path.join(root, "sub"))
    for rw, od in ((root + "/", os.path.join(root, "out")),
                   (os.path.join(root, "sub", ".."), os.path.join(root, "out")),
                   (os.path.join(root, "sub"), root)):
        run = t.corral(["run", "--rw", rw, "--output", "*",
                        "--output-dir", od, "--", "true"])
        eq(run.code, 125, "--rw %s --output-dir %s: exit status (stderr %r)"
           % (rw, od, run.err))
        contains(run.err.decode(), "may write", "--rw %s: the reason" % rw)
    t.assert_next_run_ok()


@test
def io_request_input_outside_answers_alike(t):
    """A request's input outside the class's roots: an existing file was
    refused "not readable by the class" (policy_denied) and a missing one
    "cannot open: No such file or directory" (platform_failure): the
    result told which host files exist. Both answer alike now."""
    secret = t.write("secret.txt", "s\n")
    answers = []
    for p in (secret, t.path("missing.txt"),
              os.path.join(t.path("ws-none"), "..", "secret.txt"),
              os.path.join(t.path("ws-none"), "..", "missing.txt")):
        req = t.write("req.json", json.dumps({
            "command": ["true"], "inputs": [{"from": p, "to": "in.txt"}]}))
        run = t.corral(["run", "--json", "--request", req])
        r = t.result(run)
        answers.append((run.code, r.get("status"),
                        (r.get("message") or "").replace(p, "PATH")))
    eq(len(set(answers)), 1, "the answers: %s" % answers)
    eq(answers[0][1], "policy_denied", "status")


def _request_answer(t, frm, args=()):
    """(exit status, status, message with the input's path masked) of a
    request bringing in frm, and the result."""
    req = t.write("req.json", json.dumps({
        "command": ["true"], "inputs": [{"from": frm, "to": "in"}]}))
    run = t.corral(["run", "--json", "--request", req] + list(args))
    r = t.result(run)
    return (run.code, r.get("status"),
            (r.get("message") or "").replace(frm, "PATH")), r


@test
def io_request_input_through_a_link_answers_alike(t):
    """A link in a read root leading outside the class (a stock one:
    /usr/share/maven/conf -> /etc/maven): a request's input of an existing
    file below it was refused (policy_denied), a missing one "cannot open:
    No such file" (platform_failure), telling which files exist out there.
    The path is judged as the open walks it now, each name before it is
    looked at: every file below such a link, present or not, and a link
    whose target is missing, answer alike."""
    src = t.path("proj")
    os.makedirs(os.path.join(src, "sub"))
    t.write("proj/sub/f.txt", "inside\n")
    out = t.path("outside")
    os.makedirs(os.path.join(out, "dir"))
    t.write("outside/present.txt", "secret\n")
    os.symlink(out, os.path.join(src, "out"))
    os.symlink(t.path("no-such-dir"), os.path.join(src, "dangling"))
    os.symlink("sub", os.path.join(src, "in"))
    ro = ["--ro", src]
    answers = {}
    for rel in ("out/present.txt", "out/missing.txt", "out/dir/x",
                "out/nodir/x", "out/dir/../present.txt",
                "out/nodir/../present.txt", "dangling/x", "dangling", "out"):
        answers[rel] = _request_answer(t, os.path.join(src, rel), ro)[0]
    eq(len(set(answers.values())), 1, "the answers: %s" % answers)
    eq(answers["out/present.txt"][1], "policy_denied", "status")
    # Links that stay where the class reads still work, and a missing
    # file there is still told apart (the program sees it missing too).
    got, r = _request_answer(t, os.path.join(src, "in", "f.txt"), ro)
    eq(got[1], "ok", "a link inside the read root (message %r)" % got[2])
    got, r = _request_answer(t, os.path.join(src, "in", "nope.txt"), ro)
    eq(got[1], "platform_failure", "a missing file inside the read root")


@test
def io_request_input_leaves_out_denied_entries(t):
    """A request's input of a readable directory holding an entry the class
    denies was refused naming that entry ("entry \\"secret\\": not readable
    by the class"), and accepted once it was deleted: the result told the
    names the program's own listing hides. The entry is left out now, as
    the listing leaves it out: the same result, digest included, whether it
    exists or not."""
    rd = t.path("rd")
    os.makedirs(os.path.join(rd, "sub"))
    t.write("rd/pub", "pub\n")
    t.write("rd/sub/secret2", "s2\n")
    t.write("rd/secret", "s\n")
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        pol = json.load(f)
    pol["classes"]["default"]["fs"]["read"].append(rd)
    pol["classes"]["default"]["fs"]["deny"] = [os.path.join(rd, "secret"),
                                               os.path.join(rd, "sub")]
    pfile = t.path("deny.json")
    with open(pfile, "w") as f:
        json.dump(pol, f)
    req = t.write("req.json", json.dumps({
        "command": ["sh", "-c", "ls -A in"],
        "inputs": [{"from": rd, "to": "in"}]}))
    seen = []
    for step in ("with", "without"):
        r = ok_run(t, ["--policy", pfile, "--request", req], step)
        i = r["inputs"][0]
        seen.append((r["stdout"], i["sha256"], i["files"], i["bytes"],
                     r.get("message")))
        not_contains(json.dumps(r), "secret", "the result (%s)" % step)
        if step == "with":
            os.unlink(os.path.join(rd, "secret"))
            shutil.rmtree(os.path.join(rd, "sub"))
    eq(seen[0], seen[1], "with and without the denied entries")
    eq(seen[0][0], "pub\n", "what was copied")


@test
def io_artifacts_below_a_locked_directory_are_named(t):
    """A matched file below a directory the program made unsearchable
    (chmod 000 out/locked, with --output 'out/**') was neither exported nor
    listed in artifacts_skipped: the result lied by omission. Every
    directory that cannot be opened (matched, or one a match could lie
    below) and every entry that cannot be looked at is listed now, with
    the reason; the program's modes are not overridden for the export."""
    out = t.path("out")
    run = t.corral([
        "run", "--json", "--output", "out/**", "--output", "deep/x/*.txt",
        "--output-dir", out, "--", "sh", "-c",
        "mkdir -p out/locked/sub out/noexec deep/x && "
        "echo important > out/locked/report.txt && "
        "echo r > out/noexec/r.txt && echo visible > out/a.txt && "
        "echo d > deep/x/d.txt && "
        "chmod 000 out/locked deep/x && chmod 0400 out/noexec"])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    eq([a["path"] for a in r["artifacts"]], ["out/a.txt"], "exported")
    got = {s["path"]: s["reason"] for s in r["artifacts_skipped"]}
    eq(sorted(got), ["deep/x", "out/locked", "out/noexec/r.txt"],
       "skipped: %s" % got)
    contains(got["out/locked"], "cannot be opened", "out/locked's reason")
    contains(got["deep/x"], "cannot be opened", "deep/x's reason")
    contains(got["out/noexec/r.txt"], "cannot be looked at",
             "out/noexec/r.txt's reason")
    eq(r.get("artifacts_skipped_dropped"), 0, "dropped")
    eq(r.get("cleanup", {}).get("workspace_removed"), True,
       "cleanup.workspace_removed")


_BIG = ("for n in 1 2 3; do head -c 83886080 /dev/zero > big$n; done")


def _export_started(t, out, p):
    """Wait until the first big artifact is in the output directory."""
    def first():
        try:
            return os.path.getsize(os.path.join(out, "big1")) == 83886080
        except OSError:
            return False
    true(wait_for(lambda: first() or p.poll() is not None, 60, interval=0.002),
         "the export started")
    true(p.poll() is None, "corral still exporting")


@test
def io_artifacts_cancel_stops_the_export(t):
    """SIGTERM while artifacts are copied out: an earlier build went on to
    the end (up to the collection's 20 s bound) and reported ok, exit 0,
    with no trace of the cancel. Now the export stops there, the rest is
    skipped as cancelled and the run ends cancelled (130)."""
    out = t.path("out")
    p = t.spawn(["run", "--json", "--limit", "disk=1GiB", "--output", "big*",
                 "--output-dir", out, "--", "sh", "-c", _BIG])
    _export_started(t, out, p)
    os.kill(p.pid, signal.SIGTERM)
    run = t.finish(p, timeout=60)
    r = t.result(run)
    eq(run.code, 130, "exit status")
    eq(r.get("status"), "cancelled", "status")
    contains(r.get("message", ""), "cancelled by TERM while the artifacts were exported (the program exited with status 0)", "message")
    eq(r.get("exit_code"), 0, "the program's own exit code, kept")
    reasons = [s["reason"] for s in r.get("artifacts_skipped", [])]
    true(any("cancelled" in x for x in reasons), "a skipped artifact says cancelled: %r" % reasons)
    lt(len(r.get("artifacts", [])), 3, "artifacts exported")
    eq([n for n in os.listdir(out) if n.startswith(".corral-")], [],
       "temporaries left in the output directory")


@test
def io_artifacts_kill_mid_export_leaves_no_partial_file(t):
    """corral killed with -9 while it copies an artifact: an earlier build
    left a partial .corral-<hex> in the output directory that no sweep
    knew of. The copy now has no name until it is whole."""
    tmp = t.path("tmp")
    os.mkdir(tmp, 0o700)
    out = t.path("out")
    p = t.spawn(["run", "--limit", "disk=1GiB", "--output", "big*",
                 "--output-dir", out, "--", "sh", "-c", _BIG],
                env={"TMPDIR": tmp})
    _export_started(t, out, p)
    os.kill(p.pid, signal.SIGKILL)
    t.finish(p, timeout=30)
    left = os.listdir(out)
    eq([n for n in left if n.startswith(".corral-")], [],
       "temporaries left in the output directory")
    for n in left:
        eq(os.path.getsize(os.path.join(out, n)), 83886080, "size of %s" % n)
    ok = t.corral(["run", "--", "true"], env={"TMPDIR": tmp})
    eq(ok.code, 0, "the next run")


@test
def io_refused_input_is_audited_from_its_start(t):
    """A run refused while its inputs are placed has its whole trail:
    start (the command, the policy's digest), then the deny, exit and
    cleanup (an earlier build had no start). An input whose name is not
    UTF-8 gives a result and a trail that are (the denial's reason quoted
    the raw name: a line no strict reader took). Found by a probing
    session."""
    s = Sentinel(t)
    bad = os.fsdecode(os.fsencode(s.arch) + b"/bad\xffname.tar")
    make_tar(bad, [(info("../x", size=3), b"bad")])
    audit = s.p("audit.jsonl")
    run = t.corral(["run", "--json", "-w", s.ws, "--audit", audit,
                    "--input", bad + ":x/", "--", "echo", "hello"],
                   timeout=120)
    r = t.result(run)     # the harness decodes it as strict UTF-8
    eq(r.get("status"), "policy_denied", "status")
    contains(r["denials"][0].get("reason", ""), "\\xff", "reason escaped")
    with open(audit, "rb") as f:
        lines = [json.loads(ln.decode("utf-8")) for ln in f]
    eq([e["event"] for e in lines], ["start", "deny", "exit", "cleanup"],
       "events")
    eq(lines[0].get("command"), ["echo", "hello"], "start's command")
    eq(lines[0].get("inputs"), [], "start's inputs: none placed")
    true(lines[0].get("digests", {}).get("policy"), "start's policy digest")
    s.check("non-UTF-8 input name")


def _one_file_tar(text):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w",
                      format=tarfile.USTAR_FORMAT) as tf:
        data = text.encode()
        ti = tarfile.TarInfo("payload")
        ti.size = len(data)
        ti.mtime = 0
        tf.addfile(ti, io.BytesIO(data))
    return b.getvalue()


@test
def input_archive_digest_names_the_archive_extracted(t):
    """An archive input was read twice, for its digest and then by the
    extraction: rewritten in place between the two (another run's
    program with the file in its writable root), the result's
    archive_sha256 named one archive and the tree came from the other (6
    of 20 runs; found by a probing session). It is read once now, into
    corral's own unnamed copy, hashed on the way. A writer flips two
    archives of one size in place while 12 runs extract it: no run may
    pair one archive's digest with the other's payload (4 of 12 did on
    the build before)."""
    good, evil = _one_file_tar("GOOD\n"), _one_file_tar("EVIL\n")
    which = {hashlib.sha256(good).hexdigest(): "GOOD\n",
             hashlib.sha256(evil).hexdigest(): "EVIL\n"}
    path = t.path("in.tar")
    with open(path, "wb") as f:
        f.write(good)
    stop = threading.Event()

    def flip():
        fd = os.open(path, os.O_WRONLY)
        i = 0
        while not stop.is_set():
            os.pwrite(fd, evil if i % 2 else good, 0)
            i += 1
        os.close(fd)

    th = threading.Thread(target=flip)
    th.start()
    seen = []
    try:
        for k in range(12):
            ws = t.path("ws%d" % k)
            os.mkdir(ws)
            r = t.result(t.corral(["run", "--json", "-w", ws, "--input",
                                   path + ":x/", "--", "cat", "x/payload"]))
            digest = (r.get("inputs") or [{}])[0].get("archive_sha256")
            seen.append((r.get("status"), digest and which.get(digest),
                         r.get("stdout")))
    finally:
        stop.set()
        th.join()
    bad = [x for x in seen if x[0] == "ok" and x[1] and x[1] != x[2]]
    eq(bad, [], "runs whose digest names the other archive")
    true(any(x[0] == "ok" and x[1] for x in seen),
         "some run extracted one of the two (%r)" % seen)
    t.assert_next_run_ok()


@test
def input_archive_copy_keeps_holes_and_its_bound(t):
    """The archive's private copy wrote a 4 GiB sparse input out whole
    (1.8 GiB into $TMPDIR before the wall limit, or a 2 GiB memfd) under
    disk=1MiB (found by a probing session). An archive larger than the
    disk and files budgets could ever let it place is refused before it
    is read; a sparse one within them is copied with its holes, its
    digest that of the file (what sha256sum prints)."""
    def placed(name, size, disk):
        path = t.path(name + ".tar")
        with open(path, "wb") as f:
            f.write(_one_file_tar("hello\n"))
            f.truncate(size)
        ws = t.path(name)
        os.mkdir(ws)
        return path, t.result(t.corral(
            ["run", "--json", "-w", ws, "--limit", "disk=" + disk,
             "--input", path + ":x/", "--", "cat", "x/payload"]))

    _, r = placed("big", 4 << 30, "1MiB")
    eq(r.get("status"), "policy_denied", "a 4 GiB archive under disk=1MiB")
    contains(r.get("message") or "", "larger than the disk and files "
             "budgets", "the reason")
    small, r = placed("small", 40 << 20, "64MiB")
    eq((r.get("status"), r.get("stdout")), ("ok", "hello\n"),
       "a 40 MiB sparse archive (message %r)" % r.get("message"))
    eq(r["inputs"][0]["archive_sha256"], sha256sum(small), "its digest")
    t.assert_next_run_ok()



@test
def io_the_runs_policy_and_request_are_not_the_programs_to_rewrite(t):
    """The --policy the run was started with inside the workspace: the
    program rewrote it, and the next run of the same command line wrote
    where the first could not; an export with --output-overwrite replaced
    it the same way from the output directory (found by a probing
    session). Inside a root the program may write, or of several names,
    it is refused as a record is (125, nothing runs); in the output
    directory its name and the request's are never an export's."""
    ws = t.path("ws")
    os.makedirs(ws)
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        text = f.read()
    inside = os.path.join(ws, "policy.json")
    with open(inside, "w") as f:
        f.write(text)
    marker = os.path.join(ws, "ran")
    run = t.corral(["run", "-w", ws, "--policy", inside, "--",
                    "touch", marker])
    eq(run.code, 125, "policy in the workspace: exit status (stderr %r)"
       % run.err)
    contains(run.err.decode(), "rules of a later run", "the reason")
    eq(os.path.exists(marker), False, "the program never ran")
    req = os.path.join(ws, "req.json")
    with open(req, "w") as f:
        json.dump({"command": ["touch", marker]}, f)
    run = t.corral(["run", "-w", ws, "--request", req])
    eq(run.code, 125, "request in the workspace: exit status (stderr %r)"
       % run.err)
    eq(os.path.exists(marker), False, "the program never ran")
    rw = t.path("rw")
    os.makedirs(rw)
    in_rw = os.path.join(rw, "policy.json")
    with open(in_rw, "w") as f:
        f.write(text)
    run = t.corral(["run", "--rw", rw, "--policy", in_rw, "--", "true"])
    eq(run.code, 125, "policy in a --rw root: exit status (stderr %r)"
       % run.err)
    two = t.path("policy2.json")
    os.link(in_rw, two)
    run = t.corral(["run", "--policy", two, "--", "true"])
    eq(run.code, 125, "a policy of two names: exit status (stderr %r)"
       % run.err)
    contains(run.err.decode(), "2 names", "the reason")
    # A policy read from a pipe (`--policy <(...)`) is nobody's to
    # rewrite: taken as before.
    pr, pw = os.pipe()
    os.write(pw, text.encode())
    os.close(pw)
    try:
        run = t.corral(["run", "--policy", "/dev/fd/%d" % pr, "--", "true"],
                       pass_fds=(pr,))
    finally:
        os.close(pr)
    eq(run.code, 0, "a policy from a pipe: exit status (stderr %r)" % run.err)
    # A named pipe in the workspace is judged by its name: whoever writes
    # into it would give the next run its rules.
    fifo = os.path.join(ws, "policy.fifo")
    os.mkfifo(fifo)

    def feed():
        fd = os.open(fifo, os.O_WRONLY)    # until corral opens it
        os.write(fd, text.encode())
        os.close(fd)
    import threading
    th = threading.Thread(target=feed, daemon=True)
    th.start()
    run = t.corral(["run", "-w", ws, "--policy", fifo, "--", "touch",
                    marker])
    th.join(10)
    eq(run.code, 125, "a named pipe in the workspace: exit status "
       "(stderr %r)" % run.err)
    eq(os.path.exists(marker), False, "the program never ran")
    # In the output directory: kept, and named in artifacts_skipped.
    out = t.path("out")
    os.makedirs(out)
    pol = os.path.join(out, "policy.json")
    with open(pol, "w") as f:
        f.write(text)
    r = ok_run(t, ["--policy", pol, "--output-dir", out,
                   "--output-overwrite", "--output", "*.json", "--",
                   "sh", "-c", "echo '{}' > policy.json; echo x > other.json"])
    with open(pol) as f:
        eq(f.read(), text, "the policy file is the caller's")
    skipped = {s["path"]: s["reason"] for s in r.get("artifacts_skipped", [])}
    contains(skipped.get("policy.json", ""), "the policy or request",
             "the policy's name is not exported")
    eq([a["path"] for a in r.get("artifacts", [])], ["other.json"],
       "the other file is")
    t.assert_next_run_ok()


@test
def io_output_dir_is_never_where_the_programs_files_become_the_callers(t):
    """--output-dir was judged against the workspace and the writable
    roots only: the program's files, modes kept, landed in the caller's
    home (.bash_login), in a directory the class denies (an
    authorized_keys in ~/.ssh, which the program itself could not see),
    and as a new tool inside an exec root (found by a probing session).
    Those places are refused as a workspace there is (125, nothing runs),
    and --workspace-unsafe lifts it, as it does for -w."""
    home = t.path("home")
    ssh = os.path.join(home, ".ssh")
    os.makedirs(ssh)
    tools = t.path("tools")
    os.makedirs(os.path.join(tools, "bin"))
    with open(os.path.join(CFG.policy_dir, "default.json")) as f:
        doc = json.load(f)
    doc["classes"]["default"]["fs"]["deny"] = \
        doc["classes"]["default"]["fs"].get("deny", []) + [ssh]
    pol = t.write("policy.json", json.dumps(doc))
    marker = t.path("ran")
    cases = (
        (["--output-dir", home], {"HOME": home}, "home directory"),
        (["--output-dir", ssh], {}, "denies"),
        (["--exec", os.path.join(tools, "bin"), "--output-dir", tools], {},
         "around"),
        (["--exec", tools, "--output-dir", os.path.join(tools, "bin")], {},
         "inside"),
        (["--ro", os.path.join(tools, "bin"), "--output-dir", tools], {},
         "read root"))
    for extra, env, needle in cases:
        run = t.corral(["run", "--policy", pol, "--output", "**"] + extra +
                       ["--", "touch", marker], env=env or None)
        eq(run.code, 125, "%s: exit status (stderr %r)" % (extra, run.err))
        contains(run.err.decode(), needle, "%s: the reason" % extra)
        eq(os.path.exists(marker), False, "%s: the program never ran" % extra)
    # A deny entry written through a link is the same place (found by a
    # probing session): the output directory named by its real path.
    real = t.path("real")
    os.makedirs(os.path.join(real, "sec"))
    os.symlink(real, t.path("link"))
    doc["classes"]["default"]["fs"]["deny"].append(
        os.path.join(t.path("link"), "sec"))
    pol2 = t.write("policy2.json", json.dumps(doc))
    run = t.corral(["run", "--policy", pol2, "--output", "**",
                    "--output-dir", os.path.join(real, "sec"), "--",
                    "touch", marker])
    eq(run.code, 125, "a deny entry through a link: exit status (stderr %r)"
       % run.err)
    contains(run.err.decode(), "denies", "through a link: the reason")
    eq(sorted(os.listdir(home)), [".ssh"], "nothing planted in the home")
    # Lifted by --workspace-unsafe, as -w's refusals are.
    r = ok_run(t, ["--workspace-unsafe", "--exec", os.path.join(tools, "bin"),
                   "--output-dir", tools, "--output", "bin/x", "--", "sh",
                   "-c", "mkdir bin; echo x > bin/x"])
    eq([a["path"] for a in r["artifacts"]], ["bin/x"], "exported when lifted")
    t.assert_next_run_ok()
