"""More doors a hostile program may try: budgets left unenforced while the
supervisor is busy on the program's behalf, and process queries that
answer for processes outside the run. The probes are tests/progs/
more_doors.c. Each test states what the docs promise and checks it.
"""

import json
import subprocess

from harness import eq, true, lt, test, _show, answers, denials_of


@test
def capget_of_an_outside_process_answers_absent(t):
    """capget(2) takes a pid in its header and answers with that process's
    capability sets, or ESRCH when there is none: an existence oracle for
    every pid of the host (and the capabilities of root's daemons), the
    same door the getpgid/getsid/sched_get* fix closed. It was not in
    tracer/syscalls.def, so the kernel answered it. Promised
    (docs/policy.md, docs/threat-model.md P6): a process outside the run
    answers ESRCH, and the refusal is recorded (layer proc). The run's own
    pid still answers."""
    victim = subprocess.Popen(["sleep", "60"])
    try:
        run = t.corral(["run", "--json"] + t.prog_roots() +
                       ["--", t.prog("more_doors"), "capget",
                        str(victim.pid)])
        r = t.result(run)
        res = answers(r.get("stdout"))
        eq(res.get("capget"), "No such process",
           "capget of an outside pid (stdout %s)" % _show(r.get("stdout")))
        true(denials_of(r, "capget", "proc"),
             "no denial for capget of an outside pid: %s" %
             _show(r.get("denials")))
    finally:
        victim.kill()
        victim.wait()
    run = t.corral(["run", "--json"] + t.prog_roots() +
                   ["--", "/bin/sh", "-c",
                    'exec %s capget $$' % t.prog("more_doors")])
    r = t.result(run)
    true(answers(r.get("stdout")).get("capget", "").startswith("ok"),
         "capget of the run's own pid: %s" % _show(r.get("stdout")))


@test(supervisor_only=True)
def fd_table_scan_cannot_hold_the_budgets(t):
    """The disk budget's pass ends by reading every task's fd table
    (/proc/TID/task/TID/fd, one fstatat per fd); it read all of it in
    one go on the loop thread, once per task even when threads share one
    table (now 4096 entries a tick, each shared table once).
    A program that fills its table (the hard RLIMIT_NOFILE, 20000 here)
    and starts a few hundred idle threads makes one pass millions of
    fstatat calls: while it runs nothing is answered and neither the wall
    nor the cpu budget is looked at, while a second process burns CPU.
    Measured on the build this was written against: wall=5s ran 35-45 s
    (supervisor_cpu_ms ~38000); with a couple of thousand threads the
    pass outlasts the watchdog (wall + 60 s) and the run ends as a
    platform failure. Promised (docs/limits.md): a breach ends the run,
    the wall budget within its tick."""
    run = t.corral(["run", "--json", "--limit", "wall=5s",
                    "--limit", "cpu=2s"] + t.prog_roots() +
                   ["--", t.prog("more_doors"), "fdscan", "19990", "300"],
                   timeout=200)
    r = t.result(run)
    u = r.get("usage") or {}
    eq(r.get("status"), "limit_exceeded", "status")
    lt(u.get("wall_ms", 10 ** 9), 12000,
       "usage.wall_ms of a wall=5s run (supervisor_cpu_ms %s, limit %s)" %
       (u.get("supervisor_cpu_ms"), r.get("limit")))
    lt(run.elapsed, 15, "seconds until corral returned")
    t.assert_next_run_ok()


@test(supervisor_only=True)
def signal_stop_storm_cannot_starve_the_budgets(t):
    """Every signal a traced task receives is a ptrace stop the supervisor
    must collect and resume, and cr_tasks_reap (tracer/tasks.c) collected
    stops until none was waiting before the loop looked at its timer or
    listener again (now 64 a turn). A program whose 400 threads each arm a timer of
    their own (SIGEV_THREAD_ID, every 20 us) and sit in pause() keeps a
    stop always waiting, at almost no CPU of its own: the wall and cpu
    budgets are never looked at again. Measured on the build this was
    written against: wall=3s (cpu=30s) ran until the watchdog (wall +
    60 s), exit 125 with no result JSON and the private workspace left
    in TMPDIR, the tree burning CPU all along; with 100 threads, 15.8 s;
    with cpu=2s it ended at 4.1 s with 3.9 s of CPU. (`sigstorm`, SIGSEGV faults in a loop,
    does the same less reliably.) Promised (docs/limits.md): a breach
    ends the run within a tick or so."""
    run = t.corral(["run", "--json", "--limit", "wall=3s",
                    "--limit", "cpu=30s"] + t.prog_roots() +
                   ["--", t.prog("more_doors"), "timerstorm", "400", "20"],
                   timeout=150)
    true(run.result is not None,
         "no result JSON after %.1fs, exit %s, stderr %s" % (
             run.elapsed, run.code, _show(run.err)))
    r = t.result(run)
    eq(r.get("status"), "limit_exceeded", "status")
    lt(run.elapsed, 12, "seconds until corral returned (wall=3s; limit "
       "%s, usage %s)" % (r.get("limit"), _show(r.get("usage"))))
    t.assert_next_run_ok()


@test(supervisor_only=True)
def dns_flood_cannot_hold_the_wall_budget(t):
    """The DNS responder (tracer/net/dns.c, on_query) answered datagrams
    until recvfrom said EAGAIN, inside one turn of the loop (now 32). After one
    connect to the run's nameserver a UDP socket sends with no address,
    which is not notified: 100 threads sending the same query for a name
    off the allow list at kernel speed keep the socket from ever running
    dry, and the loop's timer waits. Measured on the build this was
    written against: wall=3s ran 10.5-13 s (the tree using 20 s of CPU
    on two CPUs meanwhile). Promised (docs/limits.md): the wall budget
    ends the run when it fires."""
    nameserver = "10.255.255.53"
    run = t.corral(["run", "--json", "--limit", "wall=3s",
                    "--limit", "cpu=30s"] + t.prog_roots() +
                   ["--", "/bin/sh", "-c",
                    'ns=$(sed -n "s/^nameserver //p" /etc/resolv.conf | '
                    'head -n1); exec %s dnsflood 100 "${ns:-%s}"' % (
                        t.prog("more_doors"), nameserver)],
                   timeout=150)
    r = t.result(run)
    eq(r.get("status"), "limit_exceeded", "status")
    lt(run.elapsed, 8, "seconds until corral returned (wall=3s; limit "
       "%s, usage %s)" % (r.get("limit"), _show(r.get("usage"))))
    t.assert_next_run_ok()


@test
def secret_alert_cannot_be_crowded_out_by_decoys(t):
    """alerts.secret_denials (default 3) denials of one secret-looking
    path raise a secret_path alert (docs/threat-model.md P8, "Alerts").
    tracer/audit/alert.c watched only the first 32 such paths it saw:
    a program that first touches 32 decoys (/decoyN/x.pem, once each,
    below the threshold) can then hammer ~/.ssh/id_rsa as often as it
    likes and no alert is raised. Measured: 10 denials of
    /root/.ssh/id_rsa after 32 decoys, alerts []; without the decoys
    the alert comes at the third."""
    script = ('i=0; while [ $i -lt 32 ]; do cat /decoy$i/x.pem 2>/dev/null;'
              ' i=$((i+1)); done; '
              'for i in 1 2 3 4 5 6 7 8 9 10; do '
              'cat /root/.ssh/id_rsa 2>/dev/null; done; echo done')
    run = t.corral(["run", "--json", "--", "/bin/sh", "-c", script])
    r = t.result(run)
    eq(r.get("stdout"), "done\n", "stdout")
    ssh = [d for d in (r.get("denials") or [])
           if d.get("target") == "/root/.ssh/id_rsa"]
    true(ssh and ssh[0].get("count") == 10,
         "the ten denials of the key: %s" % _show(ssh))
    true("secret_path" in (r.get("alerts") or []),
         "no secret_path alert after ten denials of /root/.ssh/id_rsa "
         "(alerts %s)" % _show(r.get("alerts")))


@test
def secret_alert_counts_one_path_however_spelled(t):
    """The secret_path alert counts denials per path, not per spelling
    (docs/threat-model.md P8, "Alerts"). tracer/audit/alert.c counted by
    the denial's target, whose part past the first component outside the
    roots is the program's own text: /root/.ssh/id_rsa,
    /root/.ssh/./id_rsa, //root/.ssh/id_rsa... each took a slot at count
    1. Measured before the fix: 34 spellings, 34 denials, alerts []. Now
    "//", "." and ".." are worked out on the text (relative paths against
    the caller's working directory) and the alert comes at the third."""
    audit = t.path("audit.jsonl")
    # 30 spellings with "./" repeated, and four more: "//", "..", a
    # detour through /tmp, and relative from the workspace.
    script = ('p=/root/.ssh/; i=0; while [ $i -lt 30 ]; do '
              'cat "${p}id_rsa" 2>/dev/null; p="${p}./"; i=$((i+1)); done; '
              'for q in //root//.ssh//id_rsa /root/.ssh/../.ssh/id_rsa '
              '/tmp/../root/.ssh/x/../id_rsa '
              '../../../../../../../../../../../../root/.ssh/id_rsa; do '
              'cat "$q" 2>/dev/null; done; echo done')
    run = t.corral(["run", "--json", "--audit", audit, "--", "/bin/sh",
                    "-c", script])
    r = t.result(run)
    eq(r.get("stdout"), "done\n", "stdout")
    tries = [d for d in denials_of(r, layer="fs")
             if "id_rsa" in (d.get("target") or "")]
    eq(sum(d.get("count", 0) for d in tries), 34,
       "denials of the key under its spellings: %s" % _show(tries, 900))
    true("secret_path" in (r.get("alerts") or []),
         "no secret_path alert after 34 spellings of /root/.ssh/id_rsa "
         "(alerts %s)" % _show(r.get("alerts")))
    with open(audit) as f:
        evs = [json.loads(ln) for ln in f if ln.strip()]
    al = [e for e in evs if e.get("event") == "alert"]
    eq([(a.get("kind"), a.get("target"), a.get("denials")) for a in al],
       [("secret_path", "/root/.ssh/id_rsa", 3)],
       "the alert: one path, at the threshold")


def _dir_bomb(path, depth, count):
    """A gzip'd tar of one directory entry, DEPTH components deep,
    repeated COUNT times: one entry's bytes built by tarfile, then
    repeated (fast, and it compresses ~1000:1)."""
    import gzip
    import io
    import tarfile
    one = io.BytesIO()
    with tarfile.open(fileobj=one, mode="w", format=tarfile.GNU_FORMAT) as tf:
        ti = tarfile.TarInfo("/".join(["a"] * depth))
        ti.type = tarfile.DIRTYPE
        ti.mode = 0o755
        tf.addfile(ti)
    raw = one.getvalue()
    # Drop tarfile's end-of-archive blocks and record padding: the
    # entry is its header blocks alone (GNU longname + dir header).
    entry = raw[:raw.index(b"\0" * 1024, 512 * 3)] if len(raw) > 2048 else raw
    entry = entry[:len(entry) - len(entry) % 512]
    with gzip.open(path, "wb", compresslevel=6) as g:
        chunk = entry * 1000
        for _ in range(count // 1000):
            g.write(chunk)
        g.write(b"\0" * 10240)


@test(supervisor_only=True)
def input_archive_of_repeated_directories_is_bounded(t):
    """An archive input is unpacked by the supervisor before the program
    starts, bounded by the disk and files budgets ("a compression bomb
    stops at the budget, not after", docs/interface.md). A directory
    entry that already existed was entered and counted nothing, and each
    entry is walked component by component (one openat2 each); every
    entry now counts against files. So an
    800 KB .tar.gz of one 100-deep directory entry repeated 100000 times
    places 101 directories and costs corral ~10 million opens: measured
    36 s of supervisor CPU with wall=5s and cpu=2s, before the program
    ran and with no watchdog yet, and the result says ok with wall_ms 10.
    Ten times the entries (an 8 MB archive) is ten times the time. The
    run should end within its budgets: entries counted whatever they
    place, or the placement under the wall budget."""
    bomb = t.path("bomb.tar.gz")
    _dir_bomb(bomb, 100, 100000)
    run = t.corral(["run", "--json", "--limit", "wall=5s",
                    "--limit", "cpu=2s", "--input", bomb + ":x/", "--",
                    "true"], timeout=300)
    r = t.result(run)
    lt(run.elapsed, 15, "seconds until corral returned (wall=5s; status "
       "%s, supervisor_cpu_ms %s)" % (
           r.get("status"),
           (r.get("usage") or {}).get("supervisor_cpu_ms")))
