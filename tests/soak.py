"""tests/soak.py: many runs, many at once, and corral killed at random points
of a forking, writing workload; then count what is left on the host.

    soak.py --corral PATH [--n 1000] [--m 16] [--k 100] [--batches 8]

SOAK_N, SOAK_M, SOAK_K, SOAK_BATCHES and SOAK_SEED override the defaults
(make soak passes them). Phases:

  1. sequential: N runs of a workload that forks, writes files, a pipe and a
     /dev/shm object; every run must end ok. Every 100th run also measures
     the supervisor's descriptors: the workload makes 20 rounds, then 200
     more, pausing after each batch, and the supervisor's fd count at both
     pauses (same tasks alive) must be equal (needs to read /proc/PID/fd of
     an undumpable process: root; otherwise reported as not measured).
  2. concurrent: BATCHES batches of M runs at once, every one ok.
  3. kills: K runs of an endless forking, writing workload, each supervisor
     SIGKILLed at a random moment in its first 1.5 s.
  4. one last ordinary run (it sweeps the killed runs' workspaces).

It then counts: live processes carrying the soak's marker (zombies aside),
private workspaces and lock files left under its TMPDIR (after the kills,
and after the last run), /dev/shm entries made by the workload still there,
and the supervisor fd growth. Prints one line per figure and "soak: ok" or
"soak: FAIL"; exit status 0 only when every figure is zero.

Python 3 standard library only.
"""

import argparse
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import time

SHM = "/dev/shm"


def workload(marker, rounds=3):
    # Forks (a pipeline and background children), writes files and a
    # /dev/shm object named with the marker, removes some of them.
    return ("for i in $(seq %d); do "
            "(echo $i > f$i; cat f$i | wc -c > g$i) & "
            "echo data > %s/%s-$$-$i; "
            "sh -c 'echo child > c$$' & wait; done; "
            "rm -f f*; echo done" % (rounds, SHM, marker))


def fd_workload(marker):
    # Two pauses with the same tasks alive: after 20 rounds and after 220.
    body = ("(echo $i > f; cat f > /dev/null) & "
            "exec 3<>p$i; exec 3>&-; rm -f p$i; wait")
    # Each pause is the shell alone, blocked opening a FIFO (no child
    # alive, the same state both times); the driver opens it to go on.
    return ("for i in $(seq 20); do %s; done; mkfifo go1; touch mark1; "
            "read x < go1; "
            "for i in $(seq 200); do %s; done; mkfifo go2; touch mark2; "
            "read x < go2; echo done"
            % (body, body))


def marker_processes(marker):
    m = marker.encode()
    found = []
    for ent in os.listdir("/proc"):
        if not ent.isdigit() or int(ent) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % ent, "rb") as f:
                st = f.read()
            if st[st.rindex(b")") + 2:st.rindex(b")") + 3] == b"Z":
                continue    # zombies aside
            with open("/proc/%s/cmdline" % ent, "rb") as f:
                cmd = f.read()
            env = b""
            try:
                with open("/proc/%s/environ" % ent, "rb") as f:
                    env = f.read()
            except OSError:
                pass
        except (OSError, ValueError):
            continue
        if m in cmd or m in env:
            found.append(int(ent))
    return found


def shm_entries(marker):
    try:
        return [e for e in os.listdir(SHM) if e.startswith(marker)]
    except OSError:
        return []


def private_left(tmp):
    return sorted(e for e in os.listdir(tmp) if e.startswith("corral-"))


def fd_set(pid):
    """The supervisor's descriptors as {fd: target}: the fewest of five
    looks 0.1 s apart (a task still exiting holds a pidfd a moment)."""
    best = None
    for _ in range(5):
        try:
            d = "/proc/%d/fd" % pid
            cur = {}
            for fd in os.listdir(d):
                try:
                    cur[fd] = os.readlink(os.path.join(d, fd))
                except OSError:
                    pass
        except OSError:
            return None
        if best is None or len(cur) < len(best):
            best = cur
        time.sleep(0.1)
    return best


class Soak:
    def __init__(self, a):
        self.a = a
        self.marker = "crsoak" + secrets.token_hex(6)
        self.tmp = tempfile.mkdtemp(prefix="crsoak-")
        os.chmod(self.tmp, 0o700)
        self.env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                    "HOME": self.tmp, "TMPDIR": self.tmp,
                    "SOAK_MARKER": self.marker}
        self.failures = []
        self.fd_growth = []

    def argv(self, script, ws=None, extra=()):
        av = [self.a.corral, "run", "--json", "--env", "SOAK_MARKER"]
        if ws:
            av += ["-w", ws]
        return av + list(extra) + ["--", "sh", "-c", script, self.marker]

    def spawn(self, av):
        return subprocess.Popen(av, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    def check_ok(self, p, what):
        out, err = p.communicate(timeout=120)
        try:
            r = json.loads(out)
        except ValueError:
            r = {}
        if p.returncode != 0 or r.get("status") != "ok" or \
                r.get("cleanup", {}).get("leftover_processes") != 0:
            self.failures.append("%s: rc=%s status=%s message=%s" % (
                what, p.returncode, r.get("status"), r.get("message")))

    def measure_fds(self, i):
        ws = os.path.join(self.tmp, "fdws-%d" % i)
        p = self.spawn(self.argv(fd_workload(self.marker), ws=ws))
        counts = []
        for k in (1, 2):
            end = time.monotonic() + 120
            while not os.path.exists(os.path.join(ws, "mark%d" % k)):
                if time.monotonic() > end or p.poll() is not None:
                    break
                time.sleep(0.02)
            time.sleep(0.2)     # the last round's children reaped
            counts.append(fd_set(p.pid))
            try:
                fd = os.open(os.path.join(ws, "go%d" % k),
                             os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, b"go\n")
                os.close(fd)
            except OSError as e:
                self.failures.append("fd run %d: pause %d: %s" % (i, k, e))
                p.kill()
        self.check_ok(p, "fd run %d" % i)
        subprocess.run(["rm", "-rf", ws])
        if None in counts:
            return None
        grown = len(counts[1]) - len(counts[0])
        if grown > 0:
            was = sorted(counts[0].values())
            print("fd growth %d in run %d: before %s, after %s" % (
                grown, i, was, sorted(counts[1].values())))
        return grown

    def sequential(self):
        t0 = time.monotonic()
        for i in range(self.a.n):
            if i % 100 == 0:
                g = self.measure_fds(i)
                if g is not None:
                    self.fd_growth.append(g)
                continue
            self.check_ok(self.spawn(self.argv(workload(self.marker))),
                          "sequential run %d" % i)
        return time.monotonic() - t0

    def concurrent(self):
        t0 = time.monotonic()
        for b in range(self.a.batches):
            ps = [self.spawn(self.argv(workload(self.marker, 5)))
                  for _ in range(self.a.m)]
            for j, p in enumerate(ps):
                self.check_ok(p, "batch %d run %d" % (b, j))
        return time.monotonic() - t0

    def kills(self):
        rnd = random.Random(self.a.seed)
        endless = ("while :; do (echo x > a; cat a > b) & "
                   "echo d > %s/%s-$$; sh -c 'echo y > c' & wait; done"
                   % (SHM, self.marker))
        t0 = time.monotonic()
        for i in range(self.a.k):
            p = self.spawn(self.argv(endless))
            time.sleep(rnd.uniform(0.0, 1.5))
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
        # The tree dies with its supervisor (PTRACE_O_EXITKILL): give the
        # kernel a moment to finish the last ones.
        end = time.monotonic() + 10
        while marker_processes(self.marker) and time.monotonic() < end:
            time.sleep(0.1)
        return time.monotonic() - t0

    def run(self):
        fig = {}
        fig["sequential_s"] = round(self.sequential(), 1)
        fig["concurrent_s"] = round(self.concurrent(), 1)
        fig["kills_s"] = round(self.kills(), 1)
        fig["processes_left"] = len(marker_processes(self.marker))
        fig["workspaces_after_kills"] = len(private_left(self.tmp))
        fig["shm_after_kills"] = len(shm_entries(self.marker))
        self.check_ok(self.spawn(self.argv("echo last")), "last run")
        fig["workspaces_left"] = len(private_left(self.tmp))
        fig["shm_left"] = len(shm_entries(self.marker))
        fig["processes_left_end"] = len(marker_processes(self.marker))
        fig["fd_samples"] = len(self.fd_growth)
        fig["fd_growth_max"] = max(self.fd_growth) if self.fd_growth else None
        fig["failed_runs"] = len(self.failures)
        for f in self.failures[:20]:
            print("failure: " + f)
        print("soak: n=%d m=%d batches=%d k=%d" % (
            self.a.n, self.a.m, self.a.batches, self.a.k))
        for k, v in fig.items():
            print("soak: %s = %s" % (k, "not measured (needs root)"
                                     if v is None else v))
        bad = (fig["processes_left"] or fig["processes_left_end"] or
               fig["workspaces_left"] or fig["shm_left"] or
               fig["failed_runs"] or (fig["fd_growth_max"] or 0) > 0)
        # Leftovers are this soak's own (they carry its marker).
        for pid in marker_processes(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for e in shm_entries(self.marker):
            try:
                os.unlink(os.path.join(SHM, e))
            except OSError:
                pass
        subprocess.run([self.a.corral, "gc"], env=self.env,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", self.tmp])
        print("soak: %s" % ("FAIL" if bad else "ok"))
        return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corral", required=True)
    env = os.environ.get
    ap.add_argument("--n", type=int, default=int(env("SOAK_N", 1000)))
    ap.add_argument("--m", type=int, default=int(env("SOAK_M", 16)))
    ap.add_argument("--k", type=int, default=int(env("SOAK_K", 100)))
    ap.add_argument("--batches", type=int,
                    default=int(env("SOAK_BATCHES", 8)))
    ap.add_argument("--seed", type=int, default=int(env("SOAK_SEED", 1)))
    a = ap.parse_args()
    a.corral = os.path.abspath(a.corral)
    sys.exit(Soak(a).run())


if __name__ == "__main__":
    main()
