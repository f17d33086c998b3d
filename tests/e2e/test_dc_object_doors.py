"""Doors through the objects a program holds rather than the paths it
names: the offsets of a filtered directory listing, and the peer process of
a socket. The probes are tests/progs/object_doors.c.

A directory the run may see but not read (an ancestor of a root, such as
`/`) is listed with only the entries that lead into a root. Each record's
d_off is the position of the entry after it, and on ext4 a position is the
hash of the name: a program that makes a candidate name in its workspace
(same filesystem, same hash seed) and reads its position back learns
whether a hidden entry of that name exists. Every position corral hands
out, as a d_off or as the offset left on the file, must be that of a kept
record or the end.

corral connects and listens the run's unix sockets itself, so the kernel
records corral as the peer of both ends; a socket passed as stdin has the
caller as its peer. SO_PEERPIDFD, and SCM_PIDFD of a message corral sent
for the program, would hand the program a pidfd of a process outside the
run, and PIDFD_GET_INFO on it that process's parent, credentials and
cgroup.
"""

import os
import socket

from harness import eq, true, test, _show, denials_of


# ---- listings ----

def parse_dents(text):
    """(records [(name, d_off)], offsets after each call, how it ended)."""
    recs, pos, end = [], [], None
    for ln in text.splitlines():
        p = ln.split(" ")
        if p[0] == "dent" and len(p) == 3:
            recs.append((p[1], int(p[2])))
        elif p[0] == "pos" and len(p) == 2:
            pos.append(int(p[1]))
        elif p[0] in ("end", "err", "open", "lseek"):
            end = ln
    return recs, pos, end


def native_positions(t, d):
    """The kernel's own listing of d: names in order, the position of
    each (where a listing starting there begins with it) and the end's."""
    run = t.native([t.prog("object_doors"), "dents", d, "65536"])
    recs, _, end = parse_dents(run.out.decode())
    eq(end, "end", "native listing of %s" % d)
    true(recs, "native listing of %s is empty" % d)
    names = [n for n, _ in recs]
    at = {names[0]: 0}
    for i in range(1, len(recs)):
        at[names[i]] = recs[i - 1][1]
    return names, at, recs[-1][1]


def check_listing(t, d, names, at, eof, out, what):
    """A filtered listing's records and offsets against the native ones:
    the kept names in native order, each d_off the position of the next
    kept record (or the end), every offset left a kept position or the
    end. Returns the names shown."""
    recs, pos, end = parse_dents(out)
    eq(end, "end", "%s: how the listing ended" % what)
    shown = [n for n, _ in recs]
    true(set(shown) <= set(names),
         "%s: names the directory does not hold: %s" % (
             what, _show(sorted(set(shown) - set(names)))))
    eq(shown, [n for n in names if n in set(shown)],
       "%s: records in the kernel's order" % what)
    for i, (n, off) in enumerate(recs):
        want = at[shown[i + 1]] if i + 1 < len(shown) else eof
        eq(off, want, "%s: d_off of %r (the position of %r)" % (
            what, n, shown[i + 1] if i + 1 < len(shown) else "the end"))
    kept = {at[n] for n in shown} | {eof}
    bad = [p for p in pos if p not in kept]
    eq(bad, [], "%s: offsets left on a hidden entry" % what)
    return shown


def hidden_follows(names, shown):
    """Does a hidden entry follow a shown one in the kernel's order (so a
    copied d_off would have named it)?"""
    s = set(shown)
    return any(names[i] in s and names[i + 1] not in s
               for i in range(len(names) - 1))


@test
def listing_root_offsets_name_no_hidden_entry(t):
    """`/` is an ancestor of the roots: listed with the entries that lead
    into one. Before, each kept record kept the kernel's d_off, often the
    hash position of a hidden name that follows it (the probing session
    found seven real hidden names of `/` so), and the offset after a batch
    could rest on a hidden entry. Now every d_off is the position of the
    next kept record, and the offset after each call a kept position or
    the end, whatever the buffer size."""
    names, at, eof = native_positions(t, "/")
    for count in ("65536", "200"):
        run = t.corral(["run", "--json"] + t.prog_roots() +
                       ["--", t.prog("object_doors"), "dents", "/", count])
        r = t.result(run)
        eq(r.get("status"), "ok", "status (%s)" % count)
        shown = check_listing(t, "/", names, at, eof, r.get("stdout"),
                              "/ with %s-byte calls" % count)
        true(len(shown) < len(names) and hidden_follows(names, shown),
             "precondition: a hidden entry of / follows a shown one "
             "(shown %s of %s)" % (_show(shown), _show(names)))


def crowd(t, n=300, every=7):
    """A directory of n entries of which every `every`th (a directory
    k...) is made a root: the directory is then an ancestor, listed with
    those only. Returns (path, kept names, hidden names)."""
    d = t.path("crowd")
    os.mkdir(d)
    kept, hidden = [], []
    for i in range(n):
        name = "%s%03d-%s" % ("k" if i % every == 0 else "h", i,
                              "x" * (i % 13))
        if i % every == 0:
            os.mkdir(os.path.join(d, name))
            kept.append(name)
        else:
            open(os.path.join(d, name), "w").close()
            hidden.append(name)
    return d, kept, hidden


def crowd_run(t, d, kept, args):
    roots = []
    for k in kept:
        roots += ["--ro", os.path.join(d, k)]
    run = t.corral(["run", "--json"] + t.prog_roots() + roots +
                   ["--", t.prog("object_doors")] + args)
    r = t.result(run)
    eq(r.get("status"), "ok", "status of %s" % " ".join(args[:1]))
    return r.get("stdout")


@test
def listing_padding_holds_nothing_of_an_earlier_listing(t):
    """The kernel writes each directory record but not the bytes that pad
    it to 8. corral performs the read into a buffer of its own and hands
    records over whole: the padding held what its earlier reads had put
    there, hidden names of a root's ancestor and of /proc among them (a
    probing session rebuilt 7 bytes in 8 of them). The program fills its
    buffer with 0xCC; natively the padding is that, under corral zero,
    never a byte of another listing."""
    d, kept, hidden = crowd(t)
    own = t.path("own")
    os.mkdir(own)
    for i in range(1, 40):
        open(os.path.join(own, "n" * i), "w").close()
    for h in (d, "/proc"):
        out = crowd_run(t, d, kept + [own], ["pads", h, own])
        p = [ln.split() for ln in out.splitlines() if ln.startswith("pads")]
        eq(len(p), 1, "pads line after listing %s (stdout %r)" % (h, out))
        true(int(p[0][1]) > 100, "precondition: records with padding (%s)"
             % p[0][1])
        eq(p[0][3], "0", "padding bytes from elsewhere after listing %s" % h)
    t.assert_next_run_ok()


@test
def listing_a_crowded_ancestor_reads_ahead_to_the_next_kept(t):
    """A directory of 300 entries, 43 of them roots: listed with small
    buffers (a few records per call, many calls, hidden runs across
    calls), the names shown are exactly the kept ones, each d_off the
    position of the next kept record, each offset left a kept position or
    the end. glibc's telldir/seekdir round trips over the filtered listing
    land on the entry that followed. An lseek of the program's own choosing
    to a hidden entry's position starts the next listing at the first kept
    entry after it, and hands out kept positions only."""
    d, kept, hidden = crowd(t)
    names, at, eof = native_positions(t, d)
    true(hidden_follows(names, kept),
         "precondition: a hidden entry follows a kept one")
    want = sorted(kept + [".", ".."])
    for count in ("65536", "4096", "96"):
        out = crowd_run(t, d, kept, ["dents", d, count])
        shown = check_listing(t, d, names, at, eof, out,
                              "crowd with %s-byte calls" % count)
        eq(sorted(shown), want, "names shown (%s-byte calls)" % count)
    out = crowd_run(t, d, kept, ["walk", d])
    true("roundtrip ok %d" % len(want) in out,
         "telldir/seekdir round trips: %s" % _show(out, 800))
    order = [n for n in names if n in set(want)]
    for h in (hidden[0], hidden[len(hidden) // 2], hidden[-1]):
        for p in (at[h], at[h] + 1):
            out = crowd_run(t, d, kept, ["seekto", d, str(p), "200"])
            recs, pos, end = parse_dents(out)
            eq(end, "end", "listing from %d" % p)
            after = [n for n in names[names.index(h) + 1:] if n in set(want)]
            if p == at[h]:
                eq([n for n, _ in recs], after,
                   "records from the position of hidden %r" % h)
            keptpos = {at[n] for n in order} | {eof}
            eq([o for _, o in recs if o not in keptpos], [],
               "d_off after an lseek to %d" % p)
            eq([o for o in pos if o not in keptpos], [],
               "offsets after an lseek to %d" % p)


@test
def listing_while_another_thread_seeks_names_no_hidden_entry(t):
    """The offset of an open directory is shared by the program's threads,
    and lseek is not intercepted: a thread rewinding the fd in a loop
    while another lists it would make a record read after the rewind take
    the position of the record read before it (a hidden one) if corral
    read ahead on the program's own offset. corral reads on a private open
    file of the directory and only puts the final position on the
    program's: every d_off is still a kept record's position or the end,
    whatever the interleaving."""
    d, kept, hidden = crowd(t, 2000, 97)  # long hidden runs: many reads
    names, at, eof = native_positions(t, d)
    keptpos = {at[n] for n in kept + [".", ".."]} | {eof}
    for rnd in range(6):
        out = crowd_run(t, d, kept, ["race", d, "96", "400"])
        recs, _, end = parse_dents(out)
        eq(end, "end", "the probe ran (%s)" % _show(out, 300))
        true(recs, "records listed")
        eq(sorted({n for n, _ in recs} - set(kept + [".", ".."])), [],
           "hidden names shown")
        eq([(n, o) for n, o in recs if o not in keptpos], [],
           "d_off naming no kept record (round %d)" % rnd)


@test
def listings_still_list(t):
    """The tools a program lists with still see what they should: `ls`,
    `find`, Python's os.scandir and glibc's readdir agree on `/` (filtered)
    and on a workspace directory of 600 entries (unfiltered), and
    telldir/seekdir round trips hold on both."""
    script = (
        "set -e\n"
        "mkdir many\n"
        "i=0; while [ $i -lt 600 ]; do : > many/f$i; i=$((i+1)); done\n"
        "echo ls-many $(ls -a many | wc -l)\n"
        "echo find-many $(find many -mindepth 1 -maxdepth 1 | wc -l)\n"
        "python3 -c 'import os; print(\"py-many\", "
        "len(list(os.scandir(\"many\"))))'\n"
        "echo ls-root $(ls -a / | sort | tr \"\\n\" \" \")\n"
        "echo find-root $(find / -mindepth 1 -maxdepth 1 | sed 's,^/,,' | "
        "sort | tr \"\\n\" \" \")\n"
        "python3 -c 'import os; print(\"py-root\", "
        "\" \".join(sorted(e.name for e in os.scandir(\"/\"))))'\n"
        "%s walk many | tail -1\n"
        "%s walk / | tail -1\n"
        "%s dents / 65536\n" % ((t.prog("object_doors"),) * 3))
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", "sh", "-c", script])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (stderr %s)" % _show(r.get("stderr")))
    out = r.get("stdout")
    lines = {}
    for ln in out.splitlines():
        k, _, v = ln.partition(" ")
        lines.setdefault(k, []).append(v)
    eq(lines.get("ls-many"), ["602"], "ls -a of 600 files")
    eq(lines.get("find-many"), ["600"], "find of 600 files")
    eq(lines.get("py-many"), ["600"], "os.scandir of 600 files")
    roots = [v for v in lines.get("roundtrip", [])]
    eq(len(roots), 2, "two walks with round trips: %s" % _show(out, 600))
    true(roots[0] == "ok 602", "round trips in many: %s" % roots[0])
    true(roots[1].startswith("ok "), "round trips in /: %s" % roots[1])
    recs, _, end = parse_dents(out)
    eq(end, "end", "the probe's listing of /")
    seen = sorted(n for n, _ in recs)
    true(len(seen) > 2, "/ shows entries: %s" % _show(seen))
    eq(sorted(lines.get("ls-root", [""])[0].split()), seen, "ls -a /")
    eq(sorted(lines.get("find-root", [""])[0].split()),
       [n for n in seen if n not in (".", "..")], "find /")
    eq(sorted(lines.get("py-root", [""])[0].split()),
       [n for n in seen if n not in (".", "..")], "os.scandir('/')")
    eq(int(roots[1].split()[1]), len(seen), "readdir of / count")


# ---- peers ----

def peer_lines(out, tag):
    """The probe's TAG lines as {what: rest}."""
    res = {}
    for ln in out.splitlines():
        p = ln.split(" ", 2)
        if len(p) >= 2 and p[0] == tag:
            res[p[1]] = p[2] if len(p) > 2 else ""
    return res


def reveals_nothing(res, what):
    """A pidfd given for a process outside the run is one of a process
    that has gone: no live pid, no information, no namespace."""
    if res.get("peerpidfd", "ok") != "ok":
        return  # the kernel's error for a peer gone (older kernels)
    eq(res.get("pidfd-pid"), "-1", "%s: the pid the pidfd names" % what)
    true(not res.get("info", "").startswith("ok"),
         "%s: PIDFD_GET_INFO answered %s" % (what, _show(res.get("info"))))
    for k, v in res.items():
        if k.startswith("ns-"):
            true(v != "ok", "%s: PIDFD_GET_%s_NAMESPACE answered ok" % (
                what, k[3:].upper()))


@test
def peer_pidfd_of_a_connection_corral_made_is_no_outside_process(t):
    """A unix stream connection through a workspace path: corral binds,
    listens and connects for the program, so the kernel records corral as
    the peer of both ends. Before, SO_PEERPIDFD gave a pidfd of corral
    and PIDFD_GET_INFO on it corral's parent (the caller), uid and cgroup.
    Now it answers as for a peer that has gone (a pidfd of a reaped
    process, or the kernel's error for one), and the call is recorded."""
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", t.prog("object_doors"), "wsunix"])
    r = t.result(run)
    out = r.get("stdout")
    eq(r.get("status"), "ok", "status")
    for tag in ("client", "server"):
        res = peer_lines(out, tag)
        true("peerpidfd" in res, "%s: no SO_PEERPIDFD answer: %s" % (
            tag, _show(out, 600)))
        reveals_nothing(res, tag)
    true(denials_of(r, "getsockopt", "proc"),
         "the reach is recorded: %s" % _show(r.get("denials")))


@test
def peer_pidfd_of_a_socketpair_is_the_process_of_the_run(t):
    """A socketpair made by the program has the program as its peer: its
    pidfd is given as the kernel gives it (close-on-exec), and
    PIDFD_GET_INFO and the namespace ioctls on it work."""
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", t.prog("object_doors"), "pair"])
    r = t.result(run)
    out = r.get("stdout")
    me = out.splitlines()[0].split()[1]
    res = peer_lines(out, "pair")
    eq(res.get("peerpidfd"), "ok", "SO_PEERPIDFD (%s)" % _show(out, 600))
    eq(res.get("cloexec"), "1", "the pidfd is close-on-exec")
    eq(res.get("pidfd-pid"), me, "the pidfd names the program")
    eq(res.get("info", "").split()[:2], ["ok", me], "PIDFD_GET_INFO")
    eq(res.get("ns-mnt"), "ok", "PIDFD_GET_MNT_NAMESPACE")
    eq(denials_of(r, "getsockopt"), [], "denials")


@test
def peer_pidfd_of_an_inherited_socket_is_no_caller(t):
    """corral passes its stdin on; a unix socket there has the caller
    (this test process) as its peer. Before, SO_PEERPIDFD gave a pidfd of
    the caller: PIDFD_GET_INFO said its pid, parent and uid, and with
    Landlock off PIDFD_GET_*_NAMESPACE gave its namespaces. Now it is a
    peer that has gone."""
    a, b = socket.socketpair()
    try:
        bfd = b.fileno()
        p = t.spawn(["run", "--json"] + t.prog_roots() +
                    ["--", t.prog("object_doors"), "stdin"],
                    pass_fds=(bfd,), preexec=lambda: os.dup2(bfd, 0))
        b.close()
        run = t.finish(p)
    finally:
        a.close()
    r = t.result(run)
    out = r.get("stdout")
    res = peer_lines(out, "stdin")
    true(res.get("peercred", "").split()[:1] == [str(os.getpid())],
         "precondition: fd 0 is this test's socket: %s" % _show(out, 600))
    true("peerpidfd" in res, "no SO_PEERPIDFD answer: %s" % _show(out, 600))
    reveals_nothing(res, "stdin")


@test
def scm_pidfd_of_a_message_corral_sent_reveals_nothing(t):
    """corral performs a sendmsg of several buffers (one buffer without
    address or control data the task makes itself: test
    unix_sendmsg_carries_the_senders_credentials), so a receiver with
    SO_PASSPIDFD gets SCM_PIDFD naming corral: a pidfd of a process
    outside the run that no
    getsockopt hands out. Before, PIDFD_GET_INFO on it gave corral's
    parent, uid and cgroup. Now every pidfs ioctl (type 0xFF) is performed
    by corral, on a process of the run only: this one answers ESRCH, as
    for a process that has gone, and is recorded."""
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", t.prog("object_doors"), "scm"])
    r = t.result(run)
    out = r.get("stdout")
    res = peer_lines(out, "scm")
    eq(res.get("pidfd"), "ok", "precondition: an SCM_PIDFD arrived (%s)" %
       _show(out, 600))
    eq(res.get("info"), "ESRCH", "PIDFD_GET_INFO")
    eq(res.get("info-exit"), "ESRCH", "PIDFD_GET_INFO with PIDFD_INFO_EXIT")
    for k, v in res.items():
        if k.startswith("ns-"):
            eq(v, "ESRCH", "PIDFD_GET_%s_NAMESPACE" % k[3:].upper())
    true(denials_of(r, "ioctl", "proc"),
         "the reach is recorded: %s" % _show(r.get("denials")))


@test
def namespace_fd_translates_no_outside_pid(t):
    """The run's own pidfd gives its pid namespace (PIDFD_GET_PID_NAMESPACE);
    on that fd NS_GET_PID_FROM_PIDNS and NS_GET_TGID_FROM_PIDNS answered
    for any pid of the host (an earlier build: the test's own pid, and
    whether a tid is a thread), where every other call naming it answers
    ESRCH. The nsfs ioctls are now refused and recorded."""
    outside = os.getpid()
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", t.prog("object_doors"), "nspid", str(outside)])
    r = t.result(run)
    out = r.get("stdout")
    eq(r.get("status"), "ok", "status")
    true("pidfd nspid " in out, "no answer: %s" % _show(out, 600))
    for tag in ("pidfd", "proc"):
        for q in ("nspid", "nstgid"):
            true("%s %s %d" % (tag, q, outside) not in out,
                 "%s %s names the outside pid: %s" % (tag, q, _show(out)))
    true("pidfd nspid EPERM" in out and "pidfd nstgid EPERM" in out,
         "refused: %s" % _show(out, 600))
    d = denials_of(r, "ioctl", "syscall")
    true(d and "namespace" in d[0].get("reason", ""),
         "the query is recorded: %s" % _show(r.get("denials")))
    t.assert_next_run_ok()
