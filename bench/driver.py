"""bench/driver.py: runs corral's workloads side by side with native, proot,
strace and bubblewrap in interleaved rounds; writes a markdown table and JSON.

usage: python3 bench/driver.py --corral PATH --bin DIR [--out FILE] [--quick]
           [--rounds N] [--tools native,corral,proot,strace,bwrap]
           [--workloads w1,...,w7] [--no-syscall] [--workdir DIR]

Method. Every workload runs once natively as a warm-up (page cache, dentry
cache), then ROUNDS rounds; in each round every tool runs the workload once,
in an order rotated from round to round (A B C, B C A, ...), so slow drift of
the machine's load falls on every tool alike. Per tool we report the median
wall time, min and max, and the median of the per-round ratios to the native
run of the same round. Python 3 standard library only.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TOOLS = ("native", "corral", "corral-off", "corral-open", "proot", "strace",
         "bwrap")
# corral's modes: the default (Landlock where the kernel has it, every path
# call still judged by the supervisor), the supervisor alone (no Landlock),
# and the fast path, metadata and read-only opens left to the kernel under
# Landlock (docs/threat-model.md, "The fast path").
CORRAL_MODES = {"corral": [], "corral-off": ["--landlock=off"],
                "corral-open": ["--fast-open"]}

# Targets (ratio to native; w6: ms added per run): with Landlock's fast
# path, judged on corral-open, and without Landlock, judged on corral-off.
TARGETS_FAST = {"w1": 1.5, "w2": 1.3, "w3": 1.25, "w4": 1.25}
TARGETS_OFF = {"w1": 10.0, "w2": 1.8, "w3": 1.8, "w4": 1.6}
W6_TARGET_MS = 5.0
# Against proot and strace on w1, w3, w4: this many times faster.
FASTER_FAST, FASTER_OFF = 5.0, 3.0

PY_IMPORTS = "import json, email, http.client, asyncio, unittest, xml.dom.minidom"


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.corral = os.path.abspath(args.corral)
        self.bin = os.path.abspath(args.bin)
        self.work = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="corral-bench-"))
        self.ws = os.path.join(self.work, "ws")
        self.inputs = os.path.join(self.work, "inputs")
        os.makedirs(self.ws, exist_ok=True)
        os.makedirs(self.inputs, exist_ok=True)
        self.rounds = args.rounds or (3 if self.quick else 7)
        # --quick keeps every workload's shape and scales its size so the
        # whole run takes under 3 minutes on an idle 2-vCPU machine.
        q = self.quick
        self.sizes = {
            "w1_files": 1000,
            "w1_iters": 5000 if q else 200000,
            "w2_files": 1000 if q else 3000,
            "w3_files": 8 if q else 20,
            "w4_runs": 2 if q else 10,
            "w5_rounds": 100_000_000 if q else 400_000_000,
            "w6_runs": 20 if q else 200,
            "w7_conns": 100 if q else 1000,
            "w7_mib": 32 if q else 256,
            "sys_calls": 2000 if q else 20000,
            "sys_rounds": 2 if q else 5,
        }
        self.server = None
        self.port = None
        self.notes = []
        self.tools = self.pick_tools(args.tools.split(","))

    # ---- tools ----

    def pick_tools(self, wanted):
        tools = []
        for t in wanted:
            if t not in TOOLS:
                sys.exit("bench: unknown tool %r (know %s)" % (t, ", ".join(TOOLS)))
            if t == "native":
                tools.append(t)
            elif t in CORRAL_MODES:
                if not os.access(self.corral, os.X_OK):
                    sys.exit("bench: %s is not executable" % self.corral)
                tools.append(t)
            elif not shutil.which(t):
                self.notes.append("%s: not installed, skipped" % t)
            elif t == "bwrap":
                probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "/bin/true"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                if probe.returncode != 0:
                    self.notes.append("bwrap: needs user namespaces (%s)"
                                      % probe.stderr.decode(errors="replace").strip())
                else:
                    tools.append(t)
            else:
                tools.append(t)
        if "native" not in tools:
            sys.exit("bench: the native tool is needed for ratios")
        return tools

    def prefix(self, tool, net=False, private=False):
        """The command words that put a program under `tool`."""
        if tool == "native":
            return []
        if tool in CORRAL_MODES:
            p = [self.corral, "run"] + CORRAL_MODES[tool]
            if not private:
                # Generous budgets: the bench measures speed, not limits.
                p += ["-w", self.ws, "--ro", self.inputs, "--exec", self.bin,
                      "--limit", "wall=30m", "--limit", "cpu=30m",
                      "--limit", "processes=512", "--limit", "memory=4GiB",
                      "--limit", "files=1000000", "--limit", "disk=8GiB",
                      "--limit", "output=64MiB"]
            if net:
                # The default class has no network budget: give one.
                p += ["--allow-net", "127.0.0.1:*",
                      "--limit", "net-connections=10000000",
                      "--limit", "net-bytes=64GiB",
                      "--limit", "net-conn-time=30m"]
            return p + ["--"]
        if tool == "proot":
            return ["proot"]
        if tool == "strace":
            return ["strace", "-f", "-qq", "-o", "/dev/null"]
        if tool == "bwrap":
            return ["bwrap", "--ro-bind", "/", "/", "--bind", self.work, self.work,
                    "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                    "--die-with-parent", "--chdir", self.ws]
        raise ValueError(tool)

    def run(self, argv, capture=False):
        """Run argv in the workspace; returns (seconds, stdout). A failed run
        stops the bench: a benchmark of an error path measures nothing."""
        t0 = time.perf_counter()
        p = subprocess.run(argv, cwd=self.ws, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (" ".join(argv), p.returncode,
                               p.stderr.decode(errors="replace")[-2000:]))
        return dt, (p.stdout.decode(errors="replace") if capture else "")

    # ---- inputs, all generated here ----

    def make_inputs(self):
        s = self.sizes
        tree = os.path.join(self.ws, "tree")
        if not os.path.isdir(tree):
            for i in range(s["w1_files"]):
                d = os.path.join(tree, "d%d" % (i // 10))
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "f%d" % i), "w") as f:
                    f.write("file %d\n" % i)
        # w2: an archive of small files, outside the workspace (read-only).
        arch = os.path.join(self.inputs, "small.tar")
        if not os.path.exists(arch):
            src = os.path.join(self.work, "tarsrc")
            for i in range(s["w2_files"]):
                d = os.path.join(src, "pkg", "m%02d" % (i // 100))
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "f%04d.txt" % i), "w") as f:
                    f.write(("line %d of a small file\n" % i) * (1 + i % 20))
            subprocess.run(["tar", "cf", arch, "-C", src, "pkg"], check=True)
            shutil.rmtree(src)
        # w3: a small C project with a Makefile.
        proj = os.path.join(self.ws, "proj")
        if not os.path.isdir(proj):
            os.makedirs(proj)
            n = s["w3_files"]
            for i in range(n):
                with open(os.path.join(proj, "m%02d.c" % i), "w") as f:
                    f.write('#include <stdio.h>\n#include <string.h>\n#include "common.h"\n')
                    f.write("int f%02d(int x)\n{\n\tchar b[64];\n" % i)
                    f.write("\tsnprintf(b, sizeof(b), \"%%d\", x * %d);\n" % (i + 3))
                    f.write("\treturn (int)strlen(b) + COMMON(x);\n}\n")
            with open(os.path.join(proj, "common.h"), "w") as f:
                f.write("#define COMMON(x) ((x) & 7)\n")
            with open(os.path.join(proj, "main.c"), "w") as f:
                for i in range(n):
                    f.write("int f%02d(int);\n" % i)
                f.write("int main(void)\n{\n\tint s = 0;\n")
                for i in range(n):
                    f.write("\ts += f%02d(%d);\n" % (i, i))
                f.write("\treturn s == 0;\n}\n")
            objs = " ".join("m%02d.o" % i for i in range(n))
            with open(os.path.join(proj, "Makefile"), "w") as f:
                f.write("CC = /usr/bin/cc\nCFLAGS = -O1\nOBJS = main.o %s\n" % objs)
                f.write("app: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n")
                f.write("%.o: %.c common.h\n\t$(CC) $(CFLAGS) -c $< -o $@\n")

    # ---- workloads: each returns argv (given the tool prefix) ----

    def workloads(self):
        s = self.sizes
        w = {
            "w1": ("stat+open+close storm, %d files, %d iterations"
                   % (s["w1_files"], s["w1_iters"]),
                   lambda p: p + [os.path.join(self.bin, "storm"), os.path.join(self.ws, "tree"),
                                  str(s["w1_files"]), str(s["w1_iters"])]),
            "w2": ("tar xf of %d small files into the workspace, then rm -rf" % s["w2_files"],
                   lambda p: p + ["/bin/sh", "-c",
                                  'rm -rf x && mkdir x && /bin/tar xf "$1" -C x && rm -rf x',
                                  "w2", os.path.join(self.inputs, "small.tar")]),
            "w3": ("make -j2 of %d small C files and a link" % (s["w3_files"] + 1),
                   lambda p: p + ["/usr/bin/make", "-s", "-B", "-j2", "-C",
                                  os.path.join(self.ws, "proj")]),
            "w4": ("%d x python3 -c '%s'" % (s["w4_runs"], PY_IMPORTS),
                   lambda p: p + ["/bin/sh", "-c",
                                  'i=0; while [ $i -lt %d ]; do /usr/bin/python3 -c "%s" '
                                  '|| exit 1; i=$((i+1)); done' % (s["w4_runs"], PY_IMPORTS)]),
            "w5": ("pure CPU loop (%d xorshift rounds)" % s["w5_rounds"],
                   lambda p: p + [os.path.join(self.bin, "cpu"), str(s["w5_rounds"])]),
            # w6 wraps every inner run, not the loop: the cost is start-up.
            "w6": ("start-up: %d x `TOOL true` against %d x `true`" % (s["w6_runs"], s["w6_runs"]),
                   None),
            "w7": ("loopback: %d connects, then %d MiB through one connection, "
                   "to a server outside the sandbox" % (s["w7_conns"], s["w7_mib"]),
                   lambda p: p + [os.path.join(self.bin, "net"), "client", str(self.port),
                                  str(s["w7_conns"]), str(s["w7_mib"])]),
        }
        return w

    def argv_for(self, wl, tool):
        if wl == "w6":
            inner = self.prefix(tool, private=True)
            return ["/bin/sh", "-c",
                    'i=0; while [ $i -lt %d ]; do "$@" /bin/true || exit 1; i=$((i+1)); done'
                    % self.sizes["w6_runs"], "w6"] + inner
        pre = self.prefix(tool, net=(wl == "w7"))
        return self.workloads()[wl][1](pre)

    def start_server(self, mode="serve"):
        self.server = subprocess.Popen([os.path.join(self.bin, "net"), mode],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.port = int(self.server.stdout.readline().strip())

    def stop_server(self):
        if self.server:
            self.server.stdin.close()
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
            self.server = None

    # ---- the rounds ----

    def bench_workload(self, wl):
        tools = list(self.tools)
        times = {t: [] for t in tools}
        ratios = {t: [] for t in tools}
        extra = {t: [] for t in tools}
        failed = {}
        self.run(self.argv_for(wl, "native"))   # warm-up, not counted
        for r in range(self.rounds):
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            got = {}
            for t in order:
                try:
                    dt, out = self.run(self.argv_for(wl, t), capture=(wl == "w7"))
                except RuntimeError as e:
                    if t == "native":
                        raise
                    # A tool that cannot run the workload (a denial, a
                    # missing feature) is dropped from it and reported; the
                    # other tools go on.
                    failed[t] = str(e).strip()[-300:]
                    continue
                got[t] = dt
                times[t].append(dt)
                if wl == "w7":
                    extra[t].append(json.loads(out.strip().splitlines()[-1]))
            for t in list(tools):
                if t in failed:
                    tools.remove(t)
                    continue
                ratios[t].append(got[t] / got["native"])
            print("  %s round %d/%d: %s" % (wl, r + 1, self.rounds,
                  ", ".join("%s %.3fs" % (t, got[t]) for t in tools)), file=sys.stderr)
        for t, why in failed.items():
            self.notes.append("%s under %s failed, left out: %s" % (wl, t, why))
        res = {}
        for t in tools:
            res[t] = {
                "times_s": times[t],
                "median_s": statistics.median(times[t]),
                "min_s": min(times[t]),
                "max_s": max(times[t]),
                "ratio_median": statistics.median(ratios[t]),
                "ratios": ratios[t],
            }
            if wl == "w6":
                n = self.sizes["w6_runs"]
                added = [(a - b) / n * 1000 for a, b in zip(times[t], times["native"])]
                res[t]["added_ms_per_run"] = statistics.median(added)
            if wl == "w7":
                res[t]["connect_us_median"] = statistics.median(e["connect_us"] for e in extra[t])
                res[t]["MiB_s_median"] = statistics.median(e["MiB_s"] for e in extra[t])
        return res

    def supervisor_usage(self, wl, mode="corral"):
        """One more corral run with --result: what the supervisor handled
        and what it cost it (usage.supervisor_*), apart from the program."""
        path = os.path.join(self.work, "result-%s-%s.json" % (wl, mode))
        argv = self.argv_for(wl, mode)
        if wl == "w6":
            argv = [self.corral, "run"] + CORRAL_MODES[mode] + \
                ["--result", path, "--", "/bin/true"]
        else:
            argv = argv[:2] + ["--result", path] + argv[2:]
        self.run(argv, capture=True)
        with open(path) as f:
            u = json.load(f)["usage"]
        return {k: u.get(k) for k in ("wall_ms", "cpu_ms", "supervisor_notifications",
                                      "supervisor_fds_injected", "supervisor_stops",
                                      "supervisor_cpu_ms")}

    # ---- per-call costs ----

    def bench_syscalls(self):
        prog = os.path.join(self.bin, "syscall")
        n, rounds = self.sizes["sys_calls"], self.sizes["sys_rounds"]
        target = os.path.join(self.ws, "tree", "d0", "f0")
        common = ["-n", str(n), "-b", "7", "-p", target]
        # connect goes to the bench's own server outside the sandbox: a run
        # may not listen (the default class has no listening ports).
        self.start_server("sink")
        try:
            return self._bench_syscalls(prog, n, rounds, target, common)
        finally:
            self.stop_server()

    def _bench_syscalls(self, prog, n, rounds, target, common):
        spawn = os.path.join(self.bin, "spawn")
        sp = {"native": [], "floor": []}
        calls = ["getppid", "stat", "open", "connect", "refused"]
        floors = ["floor", "floor-sync", "floor-sync-epoll", "floor-sync-poll", "floor-pinned", "floor-hop",
                  "floor-addfd", "floor-sync-addfd", "floor-sync-addfd-near", "floor-trace"]
        per = {c: {"native": [], "corral": []} for c in calls}
        fl = {f: [] for f in floors}
        broken = {}
        for r in range(rounds):
            for c in calls:
                if c in broken:
                    continue
                for tool in (("native", "corral") if r % 2 == 0 else ("corral", "native")):
                    extra = ["-c", str(self.port)] if c == "connect" else []
                    try:
                        _, out = self.run(self.prefix(tool, net=(c == "connect")) +
                                          [prog, c] + common + extra, capture=True)
                    except RuntimeError as e:
                        if tool == "native":
                            raise
                        broken[c] = str(e).strip()[-300:]
                        self.notes.append("per-call %s under corral failed, left out: %s"
                                          % (c, broken[c]))
                        break
                    per[c][tool].append(json.loads(out.strip().splitlines()[-1])["ns_per_call"])
            for f in floors:
                try:
                    _, out = self.run([prog, f] + common, capture=True)
                except RuntimeError as e:
                    self.notes.append("%s: %s" % (f, str(e).strip()[-200:]))
                    continue
                fl[f].append(json.loads(out.strip().splitlines()[-1])["ns_per_call"])
            # The start-up floor of the design: a minimal supervisor
            # (listener, PTRACE_SEIZE, exec, events, reap) around /bin/true.
            for m in (("native", "floor") if r % 2 == 0 else ("floor", "native")):
                try:
                    _, out = self.run([spawn, m, "-n", str(self.sizes["w6_runs"]),
                                       "/bin/true"], capture=True)
                    sp[m].append(json.loads(out.strip().splitlines()[-1])["ns_per_run"])
                except RuntimeError as e:
                    self.notes.append("spawn %s: %s" % (m, str(e).strip()[-200:]))
            print("  syscall round %d/%d done" % (r + 1, rounds), file=sys.stderr)
        res = {"calls_per_batch": n, "rounds": rounds, "calls": {}, "floors": {}}
        if sp["native"] and sp["floor"]:
            res["startup_floor"] = {
                "native_ms": statistics.median(sp["native"]) / 1e6,
                "floor_ms": statistics.median(sp["floor"]) / 1e6,
                "added_ms": (statistics.median(sp["floor"]) -
                             statistics.median(sp["native"])) / 1e6}
        for f in floors:
            if fl[f]:
                res["floors"][f] = {"ns_median": statistics.median(fl[f]), "ns": fl[f]}
        # Is the call intercepted in this build? Ask the supervisor itself.
        for c in calls:
            if c in broken:
                continue
            path = os.path.join(self.work, "result-syscall-%s.json" % c)
            pre = self.prefix("corral", net=(c == "connect"))
            extra = ["-c", str(self.port)] if c == "connect" else []
            self.run(pre[:2] + ["--result", path] + pre[2:] + [prog, c, "-n", "200", "-b", "1",
                                                             "-p", target] + extra, capture=True)
            with open(path) as f:
                notes = json.load(f)["usage"].get("supervisor_notifications", 0)
            # 201 calls were made (one check, 200 timed); connect makes
            # several intercepted calls per round, so "at least one each".
            res["calls"][c] = {
                "native_ns": statistics.median(per[c]["native"]),
                "corral_ns": statistics.median(per[c]["corral"]),
                "native_all": per[c]["native"],
                "corral_all": per[c]["corral"],
                "notifications_per_call": notes / 201.0,
                "intercepted": notes >= 200,
            }
        return res

    # ---- report ----

    def meta(self):
        def load():
            with open("/proc/loadavg") as f:
                return [float(x) for x in f.read().split()[:3]]
        ver = subprocess.run([self.corral, "version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL).stdout.decode().strip()
        return {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                "kernel": platform.release(), "cpus": os.cpu_count(),
                "corral": self.corral, "corral_version": ver, "quick": self.quick,
                "rounds": self.rounds, "sizes": self.sizes, "tools": self.tools,
                "loadavg_start": load(), "uid": os.getuid()}


def fmt_s(x):
    return "%.3f" % x if x < 10 else "%.1f" % x


def floor_of(fl):
    """The bare round trip of a supervisor that waits as corral does: in
    poll() on the listener and an epoll fd since the loop change, in
    epoll_wait before it (older JSON files have no poll figure)."""
    for k in ("floor-sync-poll", "floor-sync-epoll", "floor-sync", "floor"):
        if k in fl:
            return fl[k].get("ns_median")
    return None


def floor_bounds(res, mode="corral"):
    """Per workload: the ratio to native (w6: ms added per run) that the
    bare round trips alone would give, from the run's own counts (in the
    given corral mode) and the floors measured in the same run: each
    notification a bare round trip, each descriptor installed the ADDFD
    floor's excess over it, each ptrace stop the floor-trace round trip
    (counts missing from older JSON files count 0)."""
    sc = res.get("syscall") or {}
    fl = sc.get("floors", {})
    f = floor_of(fl)
    g = sc.get("calls", {}).get("getppid", {}).get("native_ns", 0.0)
    out = {}
    if not f:
        return out
    per = max(f - g, 0.0) / 1e9
    fdx = (fl.get("floor-sync-addfd-near", {}).get("ns_median") or
           fl.get("floor-sync-addfd", {}).get("ns_median"))
    per_fd = max(fdx - f, 0.0) / 1e9 if fdx else 0.0
    tr = fl.get("floor-trace", {}).get("ns_median")
    per_stop = max(tr - g, 0.0) / 1e9 if tr else 0.0
    if mode == "corral":
        usage = res.get("supervisor") or {}
    else:
        usage = {wl: m[mode] for wl, m in (res.get("supervisor_modes") or {}).items()
                 if mode in m}
    for wl, u in usage.items():
        nts = u.get("supervisor_notifications")
        w = res["workloads"].get(wl, {}).get("tools", {}).get("native")
        if nts is None or not w:
            continue
        cost = nts * per + (u.get("supervisor_fds_injected") or 0) * per_fd
        if wl == "w6":
            # The start-up floor already holds a run's stops.
            st = sc.get("startup_floor")
            out[wl] = cost * 1e3 + (st["added_ms"] if st else 0.0)
        elif wl == "w7":
            continue
        else:
            cost += (u.get("supervisor_stops") or 0) * per_stop
            out[wl] = 1.0 + cost / (2.0 if wl == "w3" else 1.0) / w["median_s"]
    return out


def met(ok):
    return "met" if ok else "NOT met"


def targets_cell(wl, tl):
    """The issue's targets for one workload: the fast path (corral-open)
    and no Landlock (corral-off), each judged on its own column."""
    parts = []
    for mode, tg, label in (("corral-open", TARGETS_FAST, "fast path"),
                            ("corral-off", TARGETS_OFF, "no Landlock")):
        x = tl.get(mode)
        if not x:
            continue
        if wl == "w6":
            parts.append("%s < %.0f ms: %s" % (label, W6_TARGET_MS,
                                              met(x["added_ms_per_run"] < W6_TARGET_MS)))
        elif wl in tg:
            parts.append("%s <= %.2f: %s" % (label, tg[wl], met(x["ratio_median"] <= tg[wl])))
    if wl in ("w1", "w3", "w4"):
        # Faster in wall time, and in time added over native (what an
        # interposer costs: wall time cannot go below native, so a ratio
        # of walls is capped at proot's own ratio to native).
        for mode, need in (("corral-open", FASTER_FAST), ("corral-off", FASTER_OFF)):
            c = tl.get(mode)
            for t in ("proot", "strace"):
                x = tl.get(t)
                if not c or not x:
                    continue
                wall = x["median_s"] / c["median_s"]
                over_c = c["ratio_median"] - 1.0
                over_x = x["ratio_median"] - 1.0
                over = over_x / over_c if over_c > 0 else float("inf")
                parts.append("%s vs %s: %.1fx faster, %.1fx less added (>= %.0f: %s)"
                             % (mode, t, wall, over, need, met(wall >= need or over >= need)))
    return "; ".join(parts) if parts else "-"


def markdown(res):
    out = []
    m = res["meta"]
    tools = [t for t in m["tools"] if t != "native"]
    out.append("corral benchmark, %s, kernel %s, %d CPUs, load average %.2f at start, "
               "%.2f at end%s; %d interleaved rounds%s."
               % (m["date"], m["kernel"], m["cpus"], m["loadavg_start"][0],
                  m["loadavg_end"][0],
                  " (UNDER LOAD: numbers are noisy)" if m["under_load"] else "",
                  m["rounds"], ", --quick sizes" if m["quick"] else ""))
    out.append("")
    out.append("Ratios are medians of per-round ratios to native; times are median (min-max) seconds.")
    out.append("")
    out.append("| workload | native s | " + " | ".join(tools) + " | targets |")
    out.append("|---|---|" + "---|" * len(tools) + "---|")
    for wl, w in res["workloads"].items():
        row = ["%s %s" % (wl, w["desc"])]
        n = w["tools"]["native"]
        row.append("%s (%s-%s)" % (fmt_s(n["median_s"]), fmt_s(n["min_s"]), fmt_s(n["max_s"])))
        for t in tools:
            x = w["tools"].get(t)
            if not x:
                row.append("-")
                continue
            cell = "%.2fx %s (%s-%s)" % (x["ratio_median"], fmt_s(x["median_s"]),
                                         fmt_s(x["min_s"]), fmt_s(x["max_s"]))
            if wl == "w6":
                cell = "+%.2f ms/run, %s" % (x["added_ms_per_run"], cell)
            if wl == "w7":
                cell += ", connect %.0f us, %.0f MiB/s" % (x["connect_us_median"], x["MiB_s_median"])
            row.append(cell)
        row.append(targets_cell(wl, w["tools"]))
        out.append("| " + " | ".join(row) + " |")
    if res.get("supervisor"):
        bounds = floor_bounds(res)
        out.append("")
        out.append("Floor bound: the ratio to native if every notification of the run cost only "
                   "the bare round trip of this machine (floor-sync-poll, or floor-sync-epoll in "
                   "older runs, less a native getppid), every descriptor the supervisor installed "
                   "only the excess of floor-sync-addfd-near (floor-sync-addfd in older runs) over that, every ptrace stop only "
                   "floor-trace (less a native getppid), "
                   "and nothing else; w3 divides it over its 2 jobs; w6 is ms per run, the start-up floor "
                   "(bench/spawn, stops included) plus its notifications and descriptors. No "
                   "design that sends these calls to a supervisor and tracks processes with ptrace "
                   "can be below it here.")
        out.append("")
        out.append("| workload | mode | corral wall ms | program cpu ms | supervisor notifications | "
                   "fds injected | ptrace stops | supervisor cpu ms | floor bound | target |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        modes = {"corral": res["supervisor"]}
        for wl, m in (res.get("supervisor_modes") or {}).items():
            for mode, u in m.items():
                modes.setdefault(mode, {})[wl] = u
        mb = {mode: floor_bounds(res, mode) for mode in modes}
        for wl in res["supervisor"]:
            for mode in ("corral-off", "corral", "corral-open"):
                u = modes.get(mode, {}).get(wl)
                if not u:
                    continue
                b = mb[mode].get(wl)
                bs = "-" if b is None else (("+%.1f ms/run" if wl == "w6" else "%.2fx") % b)
                tg = TARGETS_FAST if mode == "corral-open" else \
                    TARGETS_OFF if mode == "corral-off" else {}
                tgs = ("< %.0f ms" % W6_TARGET_MS) if wl == "w6" and tg else \
                    ("<= %.2f" % tg[wl] if wl in tg else "-")
                out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    wl, mode, u.get("wall_ms"), u.get("cpu_ms"),
                    u.get("supervisor_notifications"),
                    u.get("supervisor_fds_injected", "n/a"),
                    u.get("supervisor_stops", "n/a"),
                    u.get("supervisor_cpu_ms", "n/a"), bs, tgs))
    sc = res.get("syscall")
    if sc:
        fl = sc["floors"]
        floor = floor_of(fl)
        out.append("")
        out.append("Per-call cost, ns (median of %d rounds, each the median of 7 batches of %d calls)."
                   % (sc["rounds"], sc["calls_per_batch"]))
        out.append("")
        out.append("| call | native | corral | corral - native | intercepted here | above the floor (an open: the ADDFD floor) |")
        out.append("|---|---|---|---|---|---|")
        for c, x in sc["calls"].items():
            added = x["corral_ns"] - x["native_ns"]
            # An open is answered with a descriptor: its floor is ADDFD's.
            base = (fl.get("floor-sync-addfd-near", {}).get("ns_median") or
                    fl.get("floor-sync-addfd", {}).get("ns_median")) if c == "open" else None
            base = base or floor
            above = ("%+.0f" % (added - base)) if (x["intercepted"] and base) else \
                    "not intercepted in this build"
            out.append("| %s | %.0f | %.0f | %+.0f | %s (%.1f notifications/call) | %s |"
                       % (c, x["native_ns"], x["corral_ns"], added,
                          "yes" if x["intercepted"] else "no", x["notifications_per_call"], above))
        out.append("")
        out.append("| floor (own listener, nothing else) | ns per call |")
        out.append("|---|---|")
        labels = {"floor": "getppid round trip, unpinned",
                  "floor-sync": "the same with SYNC_WAKE_UP, a thread blocked in RECV",
                  "floor-sync-epoll": "the same, waiting in epoll_wait first (how corral ran "
                                      "before this round)",
                  "floor-sync-poll": "the same, waiting in poll() on the listener and an epoll "
                                     "fd (how corral runs)",
                  "floor-pinned": "the same, both on one CPU",
                  "floor-hop": "received by one thread, answered by a worker thread (handler pool)",
                  "floor-addfd": "openat performed by the listener, fd injected (ADDFD+SEND), plus close",
                  "floor-sync-addfd": "the same with SYNC_WAKE_UP, waiting in poll() (how corral "
                                      "answered an open before 2026-12-06)",
                  "floor-sync-addfd-near": "the same, the task's CPU mask narrowed to the "
                                           "listener's for the install, then SEND (how corral "
                                           "answers an open)",
                  "floor-trace": "getppid stopped by SECCOMP_RET_TRACE, resumed by PTRACE_CONT "
                                 "(ptrace interposition; strace stops twice per call)"}
        for f, x in fl.items():
            out.append("| %s | %.0f |" % (labels.get(f, f), x["ns_median"]))
        st = sc.get("startup_floor")
        if st:
            out.append("")
            out.append("Start-up floor (`bench/spawn`, fork + exec + wait of /bin/true): native "
                       "%.2f ms, with a minimal supervisor (listener taken with pidfd_getfd, "
                       "PTRACE_SEIZE, every event continued) %.2f ms: %+.2f ms per run."
                       % (st["native_ms"], st["floor_ms"], st["added_ms"]))
    if res["notes"]:
        out.append("")
        for n in res["notes"]:
            out.append("- %s" % n)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corral", required=True, help="the corral binary to measure")
    ap.add_argument("--bin", required=True, help="directory of the built bench programs")
    ap.add_argument("--out", default="bench-results.json")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, 3 rounds: under 3 minutes")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--workloads", default="w1,w2,w3,w4,w5,w6,w7")
    ap.add_argument("--no-syscall", action="store_true")
    ap.add_argument("--workdir", default=None, help="kept when given; else a temporary one, removed")
    ap.add_argument("--report", default=None, metavar="JSON",
                    help="print the table of an earlier run's JSON and stop")
    if "--report" in sys.argv:
        i = sys.argv.index("--report")
        if i + 1 >= len(sys.argv):
            sys.exit("bench: --report needs a JSON file")
        with open(sys.argv[i + 1]) as f:
            print(markdown(json.load(f)))
        return
    args = ap.parse_args()

    b = Bench(args)
    res = {"meta": b.meta(), "workloads": {}, "supervisor": {}, "notes": b.notes}
    t0 = time.time()
    try:
        b.make_inputs()
        wls = b.workloads()
        for wl in args.workloads.split(","):
            if wl not in wls:
                sys.exit("bench: unknown workload %r" % wl)
            print("bench: %s: %s" % (wl, wls[wl][0]), file=sys.stderr)
            if wl == "w7":
                b.start_server()
            try:
                res["workloads"][wl] = {"desc": wls[wl][0], "tools": b.bench_workload(wl)}
                if "corral" in res["workloads"][wl]["tools"]:
                    res["supervisor"][wl] = b.supervisor_usage(wl)
                for mode in ("corral-off", "corral-open"):
                    if mode in res["workloads"][wl]["tools"]:
                        res.setdefault("supervisor_modes", {}).setdefault(wl, {})[mode] = \
                            b.supervisor_usage(wl, mode)
            finally:
                if wl == "w7":
                    b.stop_server()
        if not args.no_syscall:
            print("bench: per-call costs", file=sys.stderr)
            res["syscall"] = b.bench_syscalls()
    finally:
        if not args.workdir:
            shutil.rmtree(b.work, ignore_errors=True)
    with open("/proc/loadavg") as f:
        res["meta"]["loadavg_end"] = [float(x) for x in f.read().split()[:3]]
    # "Under load": the machine was busier than half its CPUs before or after.
    res["meta"]["under_load"] = max(res["meta"]["loadavg_start"][0],
                                    res["meta"]["loadavg_end"][0]) > 0.5 * (os.cpu_count() or 1)
    res["meta"]["duration_s"] = round(time.time() - t0, 1)
    res["floor_bounds"] = floor_bounds(res)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(markdown(res))
    print("\nbench: %.0f s; JSON in %s" % (res["meta"]["duration_s"], args.out), file=sys.stderr)


if __name__ == "__main__":
    main()
