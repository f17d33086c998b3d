"""The result's assurance object: which protections the run really had,
read from the kernel, its level, and --require refusing to start a run
that would have less."""

import json
import os

from harness import CFG, eq, true, contains, not_contains, test

COUNTED = ("seccomp_notify", "fd_injection", "killable_wait", "ptrace_seize",
           "no_new_privs", "capabilities_dropped", "filter_checks_arch")


@test
def assurance_full_on_this_host(t):
    r = t.result(t.corral(["run", "--json", "--", "true"]))
    a = r.get("assurance")
    true(isinstance(a, dict), "assurance object: %r" % a)
    eq(a.get("level"), "full", "level (reasons %r)" % a.get("reasons"))
    eq(a.get("reasons"), [], "reasons")
    m = a.get("mechanisms", {})
    for name in COUNTED:
        true(name in m, "mechanism %s reported" % name)
        eq(m[name].get("active"), True, "%s active (%r)" % (name, m[name]))
        eq(m[name].get("counts"), True, "%s counts toward the level" % name)
    contains(m["seccomp_notify"]["detail"], "Seccomp 2", "seen in /proc")
    contains(m["no_new_privs"]["detail"], "NoNewPrivs 1", "seen in /proc")
    contains(m["capabilities_dropped"]["detail"], "CapEff 0", "seen in /proc")
    contains(m["ptrace_seize"]["detail"], "TracerPid ", "tracer")
    ll = m.get("landlock", {})
    true(isinstance(ll.get("abi"), int), "landlock abi: %r" % ll)
    # Landlock counts wherever the kernel has it, and is then applied by
    # default (--landlock=auto): the result's landlock object agrees.
    eq(ll.get("counts"), ll["abi"] > 0, "landlock counts with the kernel's")
    eq(ll.get("applied"), ll["abi"] > 0, "landlock applied (%r)" % ll)
    eq(ll.get("applied"), r.get("landlock", {}).get("applied"),
       "assurance and the landlock object agree")
    if ll["abi"] > 0:
        # turned off where the kernel has it: one layer fewer
        r2 = t.result(t.corral(["run", "--json", "--landlock=off", "--",
                                "true"]))
        a2 = r2["assurance"]
        eq(a2.get("level"), "degraded", "--landlock=off: level")
        true(any("landlock" in x for x in a2.get("reasons", [])),
             "--landlock=off: the reason names it (%r)" % a2.get("reasons"))
        eq(a2["mechanisms"]["landlock"]["applied"], False,
           "--landlock=off: applied")
    eq(m.get("namespaces", {}).get("active"), False, "namespaces used")
    eq(m.get("delegated_cgroup", {}).get("active"), False, "cgroup used")
    eq(a.get("syscall_profile"), r.get("syscall_profile"), "syscall profile")


@test
def assurance_tracer_is_corral(t):
    """The TracerPid seen in the child's status is corral's own pid."""
    p = t.spawn(["run", "--json", "--", "true"])
    run = t.finish(p)
    r = t.result(run)
    # nons execs corral in place: the pid of the Popen is corral's.
    det = r["assurance"]["mechanisms"]["ptrace_seize"]["detail"]
    eq(det, "TracerPid %d" % p.pid, "tracer pid")


@test
def assurance_require_full_runs(t):
    run = t.corral(["run", "--json", "--require", "full", "--", "echo", "ok"])
    eq(run.code, 0, "exit (%s)" % run.summary())
    eq(t.result(run).get("stdout"), "ok\n", "the program ran")
    run = t.corral(["run", "--require", "degraded", "--", "true"])
    eq(run.code, 0, "--require degraded accepts a full run")
    run = t.corral(["run", "--require", "most", "--", "true"])
    eq(run.code, 125, "--require of an unknown level")
    contains(run.err.decode(), "--require most", "message")


@test
def assurance_audited(t):
    path = t.path("audit.jsonl")
    t.corral(["run", "--audit", path, "--", "true"])
    evs = [json.loads(l) for l in open(path)]
    names = [e["event"] for e in evs]
    eq(names[:2], ["start", "assurance"], "assurance after start")
    eq(evs[1].get("level"), "full", "level in the trail")


@test
def assurance_null_when_nothing_ran(t):
    # A workspace that cannot be made: the program never exists.
    run = t.corral(["run", "--json", "-w", "/proc/self/nonexistent/ws",
                    "--", "true"])
    r = t.result(run)
    eq(r.get("status"), "platform_failure", "status")
    true("assurance" in r and r["assurance"] is None,
         "assurance null: %r" % r.get("assurance"))


def _degraded(t, args):
    """corral on a host where SECCOMP_IOCTL_NOTIF_ADDFD fails, as before
    Linux 5.9 (tests/progs/noaddfd)."""
    argv = [t.prog("nons"), t.prog("noaddfd"), CFG.corral] + args
    p = t.spawn(argv, native=True)
    return t.finish(p, timeout=60)


@test
def assurance_degraded_is_said(t):
    run = _degraded(t, ["run", "--json", "--", "true"])
    r = t.result(run)
    a = r.get("assurance") or {}
    eq(a.get("level"), "degraded", "level (%s)" % run.summary())
    true("fd_injection" in a.get("reasons", []), "reasons: %r" %
         a.get("reasons"))
    eq(a["mechanisms"]["fd_injection"]["active"], False, "fd_injection")


@test
def assurance_require_full_refuses_degraded(t):
    ws = t.path("ws")
    os.mkdir(ws)
    os.chmod(ws, 0o777)
    run = _degraded(t, ["run", "--json", "-w", ws, "--require", "full",
                        "--", "sh", "-c", "echo ran > ran.txt"])
    eq(run.code, 125, "exit status (%s)" % run.summary())
    r = t.result(run)
    eq(r.get("status"), "platform_failure", "status")
    contains(r.get("message", ""), "fd_injection", "message names the gap")
    contains(r.get("message", ""), "not started", "message")
    true(not os.path.exists(os.path.join(ws, "ran.txt")),
         "the program did not run")
    eq(r["assurance"]["level"], "degraded", "the result still says why")
