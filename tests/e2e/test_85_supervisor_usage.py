"""The supervisor's own accounting in the result: how many notifications it
answered and how much CPU it spent, apart from the program's."""

import os

from harness import eq, ge, lt, true, is_int, test

# keyctl(2) on x86_64: on the refused list, so every call is a notification
# the supervisor answers, without touching anything else.
KEYCTL_CALLS = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
n = int(sys.argv[1])
for i in range(n):
    if libc.syscall(250, 0, 0, 0, 0, 0) != -1:
        sys.exit(3)
"""


def supervisor_usage(t, calls):
    run = t.corral(["run", "--json", "--", "/usr/bin/python3", "-c",
                    KEYCTL_CALLS, str(calls)])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    u = r["usage"]
    for k in ("supervisor_notifications", "supervisor_cpu_ms"):
        true(k in u, "usage.%s missing (usage %r)" % (k, u))
        is_int(u[k], "usage." + k)
        ge(u[k], 0, "usage." + k)
    return r


@test
def supervisor_counts_its_notifications(t):
    # Two runs that differ only in the number of refused calls: the counter
    # must follow the program, exactly (python makes no keyctl of its own).
    few = supervisor_usage(t, 3)
    many = supervisor_usage(t, 40)
    eq(many["usage"]["supervisor_notifications"] -
       few["usage"]["supervisor_notifications"], 37,
       "notifications added by 37 more keyctl calls")
    ge(few["usage"]["supervisor_notifications"], 3, "notifications of 3 calls")
    # Each refused call is a denial at the syscall layer.
    d = [x for x in many["denials"] if x.get("syscall") == "keyctl"]
    # Recorded once per (syscall, layer, reason, target), with a count.
    eq(sum(x.get("count", 1) for x in d) + many["denials_dropped"] >= 40,
       True, "keyctl denials listed")
    eq(d[0].get("layer"), "syscall", "denial layer")


@test
def supervisor_cpu_is_reported_apart(t):
    # A run that spins in the program: its CPU is the program's, not the
    # supervisor's, which only waits. Generous bounds: the machine is shared.
    run = t.corral(["run", "--json", "--", "/usr/bin/python3", "-c",
                    "import time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.6: pass"])
    r = t.result(run)
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    u = r["usage"]
    is_int(u.get("supervisor_cpu_ms"), "usage.supervisor_cpu_ms")
    ge(u["cpu_ms"], 500, "usage.cpu_ms of a 0.6 s spin")
    lt(u["supervisor_cpu_ms"], u["cpu_ms"],
       "usage.supervisor_cpu_ms while the program spins")
    # And the next run still works.
    again = t.result(t.corral(["run", "--json", "--", "/bin/true"]))
    eq(again.get("status"), "ok", "next run")


# N opens of a file in the workspace under --landlock=off (every open
# notified, answered with ADDFD), then M children (each a fork event, the
# new task's stop, an exec stop and an exit stop).
OPENS_AND_CHILDREN = """
import os, subprocess, sys
n, m = int(sys.argv[1]), int(sys.argv[2])
with open("f", "w") as f:
    f.write("x")
for i in range(n):
    os.close(os.open("f", os.O_RDONLY))
for i in range(m):
    subprocess.run(["/bin/true"], check=True)
"""


def opens_and_children(t, n, m):
    ws = t.path("ws-%d-%d" % (n, m))
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    r = t.result(t.corral(["run", "--json", "--landlock=off", "-w", ws,
                           "--", "/usr/bin/python3", "-c",
                           OPENS_AND_CHILDREN, str(n), str(m)]))
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    for k in ("supervisor_fds_injected", "supervisor_stops"):
        is_int(r["usage"].get(k), "usage." + k)
    return r["usage"]


@test
def supervisor_counts_fds_and_stops(t):
    base = opens_and_children(t, 2, 1)
    opens = opens_and_children(t, 52, 1)
    kids = opens_and_children(t, 2, 11)
    # 50 more opens: 50 more descriptors installed, exactly; no more stops.
    eq(opens["supervisor_fds_injected"] - base["supervisor_fds_injected"],
       50, "descriptors installed by 50 more opens")
    eq(opens["supervisor_stops"], base["supervisor_stops"],
       "stops of a run with 50 more opens")
    # 10 more children: at least 4 stops each (fork event, first stop,
    # exec, exit), and each exec's loader opens its libraries.
    ge(kids["supervisor_stops"] - base["supervisor_stops"], 40,
       "stops added by 10 more children")
    ge(kids["supervisor_fds_injected"] - base["supervisor_fds_injected"],
       10, "descriptors installed for 10 more children's loaders")
    ge(base["supervisor_notifications"], base["supervisor_fds_injected"],
       "notifications against descriptors installed")


# prlimit64 (302) and sched_setaffinity (203) naming pid 0, the caller:
# decided by the filter (the handler's only question, "is the target the
# run's own?", has its answer in the register), so they cost no round trip.
# The same calls naming another pid are still notified and, for a pid
# outside the run, refused as absent.
SELF_CALLS = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
n, pid = int(sys.argv[1]), int(sys.argv[2])
lim = (ctypes.c_ulonglong * 2)()
mask = ctypes.c_ulong(1)
bad = 0
for i in range(n):
    if libc.syscall(302, pid, 7, None, lim) != 0:
        bad += 1
    if libc.syscall(203, pid, ctypes.sizeof(mask), ctypes.byref(mask)) != 0:
        bad += 1
print(bad)
"""


def self_calls(t, calls, pid):
    r = t.result(t.corral(["run", "--json", "--", "/usr/bin/python3", "-c",
                           SELF_CALLS, str(calls), str(pid)]))
    eq(r.get("status"), "ok", "status (message %r)" % r.get("message"))
    return r


@test
def self_targeted_pid_calls_cost_no_notification(t):
    few = self_calls(t, 2, 0)
    many = self_calls(t, 200, 0)
    eq(few["stdout"].strip(), "0", "prlimit64/sched_setaffinity on self work")
    eq(many["stdout"].strip(), "0", "prlimit64/sched_setaffinity on self work")
    # 396 more calls, and (python's own start being the same) not one more
    # notification for them; a little slack for the interpreter's noise.
    lt(many["usage"]["supervisor_notifications"] -
       few["usage"]["supervisor_notifications"], 20,
       "notifications added by 396 calls naming pid 0")
    # pid 1 is never a process of the run: notified, refused as absent.
    far = self_calls(t, 3, 1)
    eq(far["stdout"].strip(), "6", "calls naming pid 1 fail")
    d = [x for x in far["denials"] if x.get("syscall") in
         ("prlimit64", "sched_setaffinity")]
    true(d, "calls naming pid 1 are recorded (denials %r)" % far["denials"])
    eq(d[0].get("layer"), "proc", "denial layer")
