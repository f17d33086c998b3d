/* tracer/handlers/signal.c: kill, tkill, tgkill, rt_sigqueueinfo,
 * rt_tgsigqueueinfo, pidfd_open, pidfd_send_signal, fcntl F_SETOWN(_EX),
 * setpgid: signals reach only the run's tasks. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "handlers.h"
#include "../budget/budget.h"
#include "../surface.h"

/*
 * Why this is safe against the program it supervises.
 *
 * Without a pid namespace a pid is just a number, and the user's other
 * processes (their shell, ssh-agent, corral itself) share the number space.
 * A target is ours when cr_tasks_ours says so: its tid is in the task table
 * and names the same task (the leader's pidfd still reaches it, a thread's
 * start time is unchanged). The table holds every task until corral reaps
 * it, and a zombie tracee can be reaped by its tracer only, so while the
 * number is in the table it names our task; the identity check makes an
 * entry the table failed to forget harmless after the number is reused. But
 * the kernel runs a CONTINUEd call later, after corral may have reaped the
 * target and the number gone to a new outside process. So:
 *
 *   - a call aimed at the caller itself (its tid, its process, its own
 *     process group) is CONTINUEd: the caller is blocked in the call, so
 *     those ids cannot be freed before the kernel runs it;
 *   - a signal to another task of the run is sent by corral, through the
 *     task's pidfd (or to a tid it holds), in this handler, before the loop
 *     can reap anything: the number still names our task when it is sent;
 *   - everything else is refused and recorded (layer "signal"), answered
 *     ESRCH: outside the run, a process looks absent.
 *
 * The trade-off: a signal corral relays arrives with si_code SI_QUEUE and
 * si_pid of the sending process (the kernel lets only a process itself
 * claim SI_USER/SI_TKILL), where a direct kill() would give SI_USER. The
 * signal number, target and sender pid are what the program asked.
 */

static struct cr_verdict ok(int64_t v)
{
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = v };
}

static struct cr_verdict err(int e)
{
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = e };
}

static struct cr_verdict cont(void)
{
	return (struct cr_verdict){ .kind = CR_V_CONTINUE };
}

/* A process outside the run looks absent, as in the run's /proc: ESRCH,
 * which is also what the kernel answers for a child the run has already
 * reaped (multiprocessing and subprocess signal such children). A reach
 * outside is recorded; a late signal to a task of our own is not. */
static struct cr_verdict outside(struct cr_run *run,
				 const struct seccomp_notif *n,
				 const char *call, const char *layer, long pid)
{
	char target[48];

	if (pid > 0 && cr_tasks_was_ours(&run->tasks, (pid_t)pid))
		return err(ESRCH);
	snprintf(target, sizeof(target), "pid %ld", pid);
	cr_deny(run, (pid_t)n->pid, call, target, layer,
		"the target is not a process of the run");
	return err(ESRCH);
}

/* A tid not in the table: a zombie still waited for by its parent in the
 * run takes signals without effect; anything else is outside. */
static bool bad_signal(int sig);

static struct cr_verdict dead_or_outside(struct cr_run *run,
					 const struct seccomp_notif *n,
					 const char *call, pid_t caller, pid_t tid,
					 int sig)
{
	/* A zombie is there: the signal's own check applies to it (was
	 * success for a bad signal; found by a probing session). */
	if (cr_surface_target(run, caller, tid) == CR_TARGET_ZOMBIE)
		return bad_signal(sig) ? err(EINVAL) : ok(0);
	return outside(run, n, call, "signal", tid);
}

static void relay_info(siginfo_t *si, int sig, pid_t sender)
{
	/* sender is the caller's process; a failed lookup leaves it 0. */
	if (sender < 0)
		sender = 0;
	memset(si, 0, sizeof(*si));
	si->si_signo = sig;
	si->si_code = SI_QUEUE;
	si->si_pid = sender;
	si->si_uid = getuid();
}

/* A signal the kernel raises in the calling thread itself (SIGXFSZ at the
 * file size limit, SIGPIPE at a broken pipe) for a call corral performs:
 * thread-directed, its own pid as the sender. The kernel's SI_USER from
 * the thread itself is not another process's to give, so it comes as
 * SI_QUEUE (a plain tkill carried corral's pid, and fallocate's kill was
 * taken by any thread of the process: a differential probe). */
void cr_signal_raise(pid_t tid, int sig)
{
	char path[64], buf[1024], *p;
	pid_t tgid = 0;
	siginfo_t si;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) >= 0 &&
	    (p = strstr(buf, "\nTgid:")))
		tgid = (pid_t)atoi(p + 6);
	relay_info(&si, sig, tgid);
	if (tgid <= 0 ||
	    syscall(SYS_rt_tgsigqueueinfo, tgid, tid, sig, &si) < 0)
		syscall(SYS_tkill, tid, sig);
}

/* Process-directed signal to task t, as sender. 0 or -errno. Signal 0
 * only asks whether the target exists: it is in the table, so it does. */
static int send_process(const struct cr_task *t, int sig, pid_t sender)
{
	siginfo_t si;
	long rc;

	if (!sig)
		return 0;
	relay_info(&si, sig, sender);
	if (t->pidfd >= 0)
		rc = syscall(SYS_pidfd_send_signal, t->pidfd, sig, &si, 0);
	else	/* a thread's tid names its whole process for kill() */
		rc = syscall(SYS_rt_sigqueueinfo, t->tid, sig, &si);
	/* The user's pending-signal count is full: the kernel refuses a
	 * queued real-time signal, but delivers a kill()'s, without its
	 * information (SI_USER). So does corral then, as itself. */
	if (rc < 0 && errno == EAGAIN && sig >= SIGRTMIN)
		rc = t->pidfd >= 0 ?
		     syscall(SYS_pidfd_send_signal, t->pidfd, sig, NULL, 0) :
		     kill(t->tid, sig);
	return rc < 0 ? -errno : 0;
}

static int send_thread(pid_t tgid, pid_t tid, int sig, pid_t sender)
{
	siginfo_t si;

	if (!sig)
		return 0;
	relay_info(&si, sig, sender);
	return syscall(SYS_rt_tgsigqueueinfo, tgid, tid, sig, &si) < 0 ?
	       -errno : 0;
}

static bool bad_signal(int sig)
{
	return sig < 0 || sig >= _NSIG;
}

/* A siginfo only its target may send itself: a kill's or tgkill's, or
 * the kernel's own (si_code >= 0, SI_TKILL). */
static bool claims_kernel_code(const siginfo_t *si)
{
	return si->si_code >= 0 || si->si_code == SI_TKILL;
}

/* Is some process of the run that has exited, and that a process of the
 * run has not yet waited for, a member of pgrp? The kernel accepts a
 * signal to such a group (its zombies are still members) and it has no
 * effect: a server's group signalled just after the server exited
 * (Python's os.killpg of a start_new_session child, PostgreSQL's
 * postmaster to a backend's group). */
static bool zombie_in_group(struct cr_run *run, pid_t pgrp)
{
	const struct cr_tasks *ts = &run->tasks;
	uint64_t t0 = cr_thread_cpu_ns();
	bool found = false;

	/* Only processes stay zombies: a thread left is reaped as it goes.
	 * A ring of processes gone costs a read of /proc each (~6 us): 1 100
	 * threads joined once made every kill(-pgrp) of a group outside
	 * the run cost corral 6-7 ms, uncharged (found by a probing session),
	 * so what it costs is the run's CPU. */
	for (size_t i = 0; ts->gone && i < CR_TASKS_GONE && !found; i++) {
		pid_t tid = ts->gone[i].tid, ppid, g = 0;
		char st = 0;

		if (!tid || !ts->gone[i].leader)
			continue;
		ppid = cr_surface_stat(tid, &st, &g);
		found = st == 'Z' && g == pgrp && ppid > 0 &&
			cr_tasks_ours(&run->tasks, ppid) &&
			cr_tasks_was_ours(ts, tid);
	}
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return found;
}

/* Is a live process of the run in group pgrp? A read of /proc/PID/stat
 * per process of the run until one is: a group outside the run (the
 * refusal's way) reads them all, 0.6 ms a call beside 62 children, so
 * that is the run's CPU (found by a probing session). */
static bool member_in_group(struct cr_run *run, pid_t pgrp)
{
	const struct cr_tasks *ts = &run->tasks;
	uint64_t t0 = cr_thread_cpu_ns();
	bool found = false;

	for (size_t i = 0; i < ts->cap && !found; i++) {
		const struct cr_task *t = &ts->slots[i];

		found = t->tid && t->leader && cr_surface_pgrp(t->tid) == pgrp;
	}
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return found;
}

/* kill(-1, sig) and kill(-pgrp, sig): every process of the run in scope,
 * never another. pgrp < 0 means all but the caller's own process. */
static struct cr_verdict kill_many(struct cr_run *run, pid_t caller_tgid,
				   pid_t pgrp, int sig)
{
	struct cr_tasks *ts = &run->tasks;
	bool matched = false, sent = false;
	int last = ESRCH;
	uint64_t t0;

	/* A group of the run: signalled by the kernel in one step, through
	 * its leader's pidfd (6.9+), so a child a member is forking right now
	 * gets it too, as with the kernel's own kill(-pgrp). Member by
	 * member, a child not yet in corral's table was missed and ran on
	 * after a SIGKILL or SIGSTOP of its group (found by a probing
	 * session: test runners kill groups on timeout). */
	if (sig && pgrp > 0) {
		/* The pidfd must be the group leader's (the kernel takes its
		 * pid as the group's); a leader gone leaves the slow way. */
		const struct cr_task *t = cr_tasks_find(ts, pgrp);
		siginfo_t si;

		relay_info(&si, sig, caller_tgid);
		if (t && t->leader && t->pidfd >= 0 &&
		    cr_surface_pgrp(t->tid) == pgrp &&
		    syscall(SYS_pidfd_send_signal, t->pidfd, sig, &si,
			    4 /* PIDFD_SIGNAL_PROCESS_GROUP */) == 0)
			return ok(0);
		/* an older kernel, or a full queue: one by one */
	}
	/* Member by member: a read of /proc per process of the run, the
	 * run's CPU (as member_in_group). */
	t0 = cr_thread_cpu_ns();
	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *t = &ts->slots[i];
		int rc;

		if (!t->tid || !t->leader)
			continue;
		if (pgrp < 0 ? t->tid == caller_tgid :
			       cr_surface_pgrp(t->tid) != pgrp)
			continue;
		matched = true;
		rc = send_process(t, sig, caller_tgid);
		if (!rc)
			sent = true;
		else
			last = -rc;
	}
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	if (sent)
		return ok(0);
	if (!matched && pgrp > 0 && zombie_in_group(run, pgrp))
		return ok(0);
	return err(matched ? last : ESRCH);
}

CR_HANDLER(cr_h_kill)
{
	pid_t caller = (pid_t)n->pid, pid = (pid_t)(int)n->data.args[0];
	int sig = (int)n->data.args[1];
	pid_t tgid, own_pgrp;

	/* A process that is not there is ESRCH before the signal is
	 * looked at (check_kill_permission's EINVAL comes with a target;
	 * corral answered EINVAL first; found by a differential probing
	 * session). */
	if (bad_signal(sig) && (pid == 0 || pid == -1))
		return pid == 0 ? cont() : err(EINVAL);
	if (pid > 0) {
		enum cr_target tg = cr_surface_target(run, caller, pid);

		if (bad_signal(sig) &&
		    (tg == CR_TARGET_RUN || tg == CR_TARGET_ZOMBIE))
			return err(EINVAL);
		switch (tg) {
		case CR_TARGET_SELF:
			return cont();
		case CR_TARGET_RUN: {
			int rc = send_process(cr_tasks_find(&run->tasks, pid),
					      sig, cr_surface_tgid(run, caller));

			return rc ? err(-rc) : ok(0);
		}
		case CR_TARGET_ZOMBIE:
			return ok(0);	/* as the kernel: accepted, no effect */
		case CR_TARGET_OUTSIDE:
			break;
		}
		/* corral itself, the first process's parent, is there: a
		 * "kill -0 $PPID" loop ended at once when it looked gone
		 * (found by two probing sessions). A signal to it is
		 * refused, as one the program may not send. */
		if (pid == getpid() && !sig)
			return ok(0);
		if (pid == getpid()) {
			char target[48];

			snprintf(target, sizeof(target), "pid %ld", (long)pid);
			cr_deny(run, caller, e->name, target, "signal",
				"corral itself (the first process's parent) is not the run's to signal");
			return err(EPERM);
		}
		return outside(run, n, e->name, "signal", pid);
	}
	/* The caller's own process group is one the run made (setpgid
	 * below lets no process of the run join another), and cannot be
	 * freed while the caller is a member: the kernel may do it. */
	if (pid == 0)
		return cont();
	tgid = cr_surface_tgid(run, caller);
	if (tgid <= 0)
		return err(ESRCH);
	if (pid == -1)
		return kill_many(run, tgid, -1, sig);
	if (pid == INT32_MIN)
		return err(ESRCH);
	own_pgrp = cr_surface_pgrp(caller);
	if (own_pgrp > 0 && -pid == own_pgrp)
		return cont();
	{
		/* A bad signal: asked as signal 0, a group there is EINVAL. */
		struct cr_verdict v = kill_many(run, tgid, -pid,
						bad_signal(sig) ? 0 : sig);

		/* No process of the run is in that group: it is someone
		 * else's (or nobody's). A group numbered after a process of
		 * the run that is gone, its number not yet reused, was the
		 * run's: it is gone too (no other group can take the number
		 * while no process has it), as kill(pid) of such a pid. */
		if (v.kind == CR_V_ERRNO && v.error == ESRCH &&
		    !cr_tasks_was_ours(&run->tasks, -pid))
			return outside(run, n, e->name, "signal", pid);
		if (bad_signal(sig) && v.kind == CR_V_VALUE)
			return err(EINVAL);
		return v;
	}
}

CR_HANDLER(cr_h_tkill)
{
	pid_t caller = (pid_t)n->pid, tid = (pid_t)(int)n->data.args[0];
	int sig = (int)n->data.args[1];
	pid_t tgid;
	int rc;

	/* The kernel's order: the id, the target (ESRCH), the signal. */
	if (tid <= 0)
		return err(EINVAL);
	if (tid == caller)
		return cont();
	if (!cr_tasks_ours(&run->tasks, tid))
		return dead_or_outside(run, n, e->name, caller, tid, sig);
	if (cr_tasks_thread_gone(&run->tasks, tid))
		return err(ESRCH);
	if (bad_signal(sig))
		return err(EINVAL);
	tgid = cr_surface_tgid(run, tid);
	if (tgid <= 0)
		return err(ESRCH);
	rc = send_thread(tgid, tid, sig, cr_surface_tgid(run, caller));
	return rc ? err(-rc) : ok(0);
}

CR_HANDLER(cr_h_tgkill)
{
	pid_t caller = (pid_t)n->pid;
	pid_t tgid = (pid_t)(int)n->data.args[0];
	pid_t tid = (pid_t)(int)n->data.args[1];
	int sig = (int)n->data.args[2];
	pid_t own;
	int rc;

	/* The kernel's order: the ids, the target (ESRCH), the signal. */
	if (tgid <= 0 || tid <= 0)
		return err(EINVAL);
	/* Within the caller's own process the kernel checks that tid
	 * belongs to it, and the process cannot go away: a recycled tid
	 * would not match. (glibc's raise and pthread_kill.) */
	own = cr_surface_tgid(run, caller);
	if (own > 0 && tgid == own)
		return tid != caller && cr_tasks_thread_gone(&run->tasks, tid) ?
		       err(ESRCH) : cont();
	/* corral's own main thread, the parent, is there (cr_h_kill). */
	if (tgid == getpid() && tid == getpid() && !sig)
		return ok(0);
	if (!cr_tasks_ours(&run->tasks, tid))
		return dead_or_outside(run, n, e->name, caller, tid, sig);
	if (cr_tasks_thread_gone(&run->tasks, tid))
		return err(ESRCH);
	if (bad_signal(sig))
		return cr_surface_tgid(run, tid) == tgid ? err(EINVAL) :
							   err(ESRCH);
	/* Signal 0 sends nothing, so nothing checks the pair: the kernel
	 * answers ESRCH for a thread of another process. */
	if (!sig)
		return cr_surface_tgid(run, tid) == tgid ? ok(0) : err(ESRCH);
	rc = send_thread(tgid, tid, sig, own);
	return rc ? err(-rc) : ok(0);
}

/* rt_sigqueueinfo(pid, sig, info), rt_tgsigqueueinfo(tgid, tid, sig, info):
 * the siginfo is read from the caller and relayed as written. The kernel
 * then applies to corral the rule it applies to the caller (only a process
 * itself may claim si_code >= 0 or SI_TKILL), so a forged SI_USER from
 * the program is refused. One loss: a process queueing such a siginfo to
 * itself gets EPERM here where the kernel would allow it. */
CR_HANDLER(cr_h_sigqueue)
{
	bool tg = !strcmp(e->name, "rt_tgsigqueueinfo");
	pid_t caller = (pid_t)n->pid;
	pid_t a0 = (pid_t)(int)n->data.args[0];
	pid_t tid = tg ? (pid_t)(int)n->data.args[1] : a0;
	int sig = (int)n->data.args[tg ? 2 : 1];
	uint64_t uinfo = n->data.args[tg ? 3 : 2];
	siginfo_t si;
	long rc;
	int r;

	/* The kernel's order: the siginfo copied (EFAULT), the ids
	 * (EINVAL, tgsigqueueinfo), the code only the target itself may
	 * claim (EPERM), the target (ESRCH), the signal (EINVAL); a zombie
	 * takes the signal with no effect only past all of those. */
	r = cr_mem_read(caller, uinfo, &si, sizeof(si));
	if (r)
		return err(-r);
	if (!cr_notif_valid(run, n->id))
		return err(EINTR);	/* the caller is gone; unanswered */
	if (tg && (a0 <= 0 || tid <= 0))
		return err(EINVAL);
	if (claims_kernel_code(&si) && tid != caller)
		return err(EPERM);
	if (a0 <= 0 || tid <= 0)
		return err(ESRCH);
	switch (cr_surface_target(run, caller, tid)) {
	case CR_TARGET_OUTSIDE:
		/* corral, the parent, is there (cr_h_kill). */
		if (!sig && tid == getpid() && a0 == getpid())
			return ok(0);
		return outside(run, n, e->name, "signal", tid);
	case CR_TARGET_ZOMBIE:
		return bad_signal(sig) ? err(EINVAL) : ok(0);
	default:
		break;
	}
	if (bad_signal(sig))
		return err(EINVAL);
	if (tg)
		rc = syscall(SYS_rt_tgsigqueueinfo, a0, tid, sig, &si);
	else
		rc = syscall(SYS_rt_sigqueueinfo, a0, sig, &si);
	return rc < 0 ? err(errno) : ok(0);
}

/* The pidfd is opened by corral while the number is known to be ours, and
 * installed in the caller: it then names that task for good, whatever
 * happens to the number. A zombie of the run (its parent may collect it
 * at any moment) gets one too, as from the kernel, when the zombie's own
 * pidfd, kept by the budgets, still answers after the open: the number
 * was the zombie's throughout. */
CR_HANDLER(cr_h_pidfd_open)
{
	pid_t caller = (pid_t)n->pid, pid = (pid_t)(int)n->data.args[0];
	unsigned flags = (unsigned)n->data.args[1];
	enum cr_target tg;
	struct cr_verdict v;
	int fd;

	/* The kernel's order: the flags, the pid, the target (ESRCH was
	 * answered for an unknown flag; found by a differential probing
	 * session). */
	if (flags & ~(unsigned)(O_NONBLOCK | O_EXCL) || pid <= 0)
		return err(EINVAL);
	tg = cr_surface_target(run, caller, pid);
	if (tg == CR_TARGET_OUTSIDE)
		return outside(run, n, e->name, "proc", pid);
	fd = (int)syscall(SYS_pidfd_open, pid, flags);
	if (fd < 0)
		return err(errno);
	if (tg == CR_TARGET_ZOMBIE && !cr_budget_zombie(run, pid)) {
		close(fd);
		return err(ESRCH);	/* collected meanwhile */
	}
	v = cr_notif_send_fd(run, n, fd, true);
	return v;
}

/* pidfd_send_signal(fd, sig, info, flags). The fd may have come from our
 * pidfd_open, from clone(CLONE_PIDFD) (a child: ours), or be a /proc/<pid>
 * directory the kernel also accepts. corral takes a copy of the very object
 * the caller holds, asks it which pid it names, and sends through that
 * copy: replacing the fd in another thread meanwhile changes nothing, and
 * the copy pins the process it named (a recycled number is not it). */
CR_HANDLER(cr_h_pidfd_send_signal)
{
	pid_t caller = (pid_t)n->pid, pid;
	int fd = (int)n->data.args[0], sig = (int)n->data.args[1];
	uint64_t uinfo = n->data.args[2];
	unsigned flags = (unsigned)n->data.args[3];
	cr_autoclose int copy = -1;
	siginfo_t si;
	long rc;
	int r;

	/* The kernel's order: the flags (one scope at most), the fd, the
	 * siginfo (EFAULT, its signal, the code only the target itself may
	 * claim), the target, the signal; a zombie takes it with no effect
	 * only past all of those. */
	if ((flags & ~7u) || (flags & (flags - 1)))
		return err(EINVAL);
	r = cr_surface_take_pidfd(run, caller, fd, &copy, &pid);
	if (r == -EINVAL)
		return err(EBADF);	/* what the kernel says of any other fd */
	if (r)
		return err(-r);
	if (uinfo) {
		r = cr_mem_read(caller, uinfo, &si, sizeof(si));
		if (r)
			return err(-r);
		if (!cr_notif_valid(run, n->id))
			return err(EINTR);
		if (si.si_signo != sig)
			return err(EINVAL);
		/* The caller's own thread, not its group: the kernel would
		 * take the code from it; relayed, it refuses corral (EPERM,
		 * docs/interface.md). */
		if (claims_kernel_code(&si) && (pid != caller || (flags & 4)))
			return err(EPERM);
	} else {
		relay_info(&si, sig, cr_surface_tgid(run, caller));
	}
	if (pid <= 0)
		return err(ESRCH);
	switch (cr_surface_target(run, caller, pid)) {
	case CR_TARGET_OUTSIDE:
		return outside(run, n, e->name, "signal", pid);
	case CR_TARGET_ZOMBIE:
		/* A leader gone, its group still alive (a group the run
		 * made: setpgid below): the kernel signals the members. */
		if (flags & 4 /* PIDFD_SIGNAL_PROCESS_GROUP */)
			break;
		return bad_signal(sig) ? err(EINVAL) : ok(0);
	default:
		break;
	}
	if (bad_signal(sig))
		return err(EINVAL);
	rc = syscall(SYS_pidfd_send_signal, copy, sig,
		     sig || uinfo ? &si : NULL, flags);
	return rc < 0 ? err(errno) : ok(0);
}

/* fcntl(fd, F_SETOWN, who): who > 0 a process, < 0 a process group, 0 none.
 * The kernel keeps a reference to the owner's struct pid, so once set the
 * owner cannot change with the number; the check is made on registers, and
 * the CONTINUE keeps the usual window for another run task's number. The
 * caller, its process and its own group are pinned by the caller itself.
 * F_SETOWN_EX (pid in memory) is refused outright. */
CR_HANDLER(cr_h_fcntl_owner)
{
	pid_t caller = (pid_t)n->pid, who = (pid_t)(int)n->data.args[2];
	int cmd = (int)n->data.args[1];

	if (cmd != 8 /* F_SETOWN */) {
		cr_deny(run, caller, e->name, NULL, "signal",
			"F_SETOWN_EX is refused (F_SETOWN is confined to the run)");
		return err(EPERM);
	}
	if (who == 0)
		return cont();
	/* The kernel's f_setown refuses the one group it cannot negate
	 * before it looks anything up. */
	if (who == INT32_MIN)
		return err(EINVAL);
	/* The kernel takes any number a process or group still holds: a
	 * zombie child's (its SIGIO then reaches no one), another group of
	 * the run's, one whose leader is gone but a member lives (ESRCH
	 * here was corral's: a differential probe). A group is the run's
	 * when a process of the run is in it or its number is one of the
	 * run's processes: setpgid lets none join another. */
	if (who < 0 && -who == cr_surface_pgrp(caller))
		return cont();	/* its own group */
	if (cr_surface_target(run, caller, who > 0 ? who : -who) !=
	    CR_TARGET_OUTSIDE)
		return cont();
	if (who > 0)
		return outside(run, n, "fcntl", "signal", who);
	if (zombie_in_group(run, -who) || member_in_group(run, -who))
		return cont();
	return outside(run, n, "fcntl", "signal", who);
}

/*
 * setpgid(pid, pgid). The run shares corral's session (the child only
 * takes a process group of its own: docs/threat-model.md, P4), and the
 * kernel lets a process join any group of its session: a group of the
 * invoking shell or of another job would become "the caller's own" to
 * kill(0), kill(-pgrp) and F_SETOWN, which are let through for it. So a
 * process of the run may make a new group (pgid 0, or the target's own
 * pid) or join one the run made: a group whose id is the pid of a process
 * of the run (a group's id is its maker's pid, and the kernel does not
 * give that number to another process while the group lives), or one a
 * process of the run is in. Anything else is refused as the kernel
 * refuses a group it does not see: EPERM. The kernel checks the rest
 * (the target is the caller or its child, same session).
 */
CR_HANDLER(cr_h_setpgid)
{
	pid_t caller = (pid_t)n->pid;
	pid_t pid = (pid_t)(int)n->data.args[0];
	pid_t pgid = (pid_t)(int)n->data.args[1];
	char target[48];

	/* 0 makes a group of the target's own; a negative id is EINVAL. */
	if (pgid <= 0 || pgid == pid ||
	    (pid == 0 && pgid == cr_surface_tgid(run, caller)))
		return cont();
	if (cr_surface_target(run, caller, pgid) != CR_TARGET_OUTSIDE ||
	    member_in_group(run, pgid))
		return cont();
	snprintf(target, sizeof(target), "process group %ld", (long)pgid);
	cr_deny(run, caller, e->name, target, "signal",
		"a process group the run did not make");
	return err(EPERM);
}
