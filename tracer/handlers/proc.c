/* tracer/handlers/proc.c: pidfd_getfd, process_madvise, process_vm_readv,
 * process_vm_writev, kcmp, prlimit64, get_robust_list, sched_set* and
 * sched_get*, getpgid, getsid, get/setpriority, ioprio_get/set, capget,
 * prctl(PR_SET_DUMPABLE, PR_SCHED_CORE), clock_gettime, clock_getres,
 * clock_nanosleep and timer_create on a process CPU clock: calls that name
 * or hide from another process. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include "handlers.h"
#include "../budget/budget.h"
#include "../surface.h"

/*
 * Why this is safe against the program it supervises: a pid outside the
 * task table is refused (ESRCH, recorded, layer "proc") before the kernel sees it,
 * so the user's other processes cannot be read, written, compared, reniced
 * or limited. Calls naming the caller itself are always safe to CONTINUE.
 *
 * Calls naming another task of the run are CONTINUEd too, and keep one
 * documented window: if that task exits, corral reaps it, and the kernel
 * hands its number to a new outside process, all between corral's answer
 * and the kernel running the call, the call reaches that process. The pid
 * allocator is cyclic, so the number comes back only after every other
 * free number has been used. The calls where that would matter most have
 * no such window: process_vm_readv/writev (memory) are performed by corral
 * while the number is known to be ours, and the fd-based calls
 * (pidfd_getfd, process_madvise) act on corral's copy of the pidfd.
 */

static struct cr_verdict refuse(struct cr_run *run,
				const struct seccomp_notif *n,
				const char *call, const char *why, long who)
{
	char target[48];

	snprintf(target, sizeof(target), "pid %ld", who);
	cr_deny(run, (pid_t)n->pid, call, target, "proc", why);
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
}

static struct cr_verdict err(int e)
{
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = e };
}

/* A process outside the run looks absent (ESRCH), as in its /proc; the
 * reach is recorded unless the number was a task of the run, reaped. */
static struct cr_verdict absent(struct cr_run *run,
				const struct seccomp_notif *n,
				const char *call, long who)
{
	if (who > 0 && cr_tasks_was_ours(&run->tasks, (pid_t)who))
		return err(ESRCH);
	refuse(run, n, call, "the target is not a process of the run", who);
	return err(ESRCH);
}

/*
 * A query about a zombie of the run (ended, not yet waited for by its
 * parent): the kernel answers it, and so does corral, but not by a
 * CONTINUE, since the parent may collect it at any moment and the number
 * go to another process. The call is made here, into buffers of ours;
 * then the zombie's pidfd, which the budgets keep, is asked whether the
 * number is still its own: if so the answer was about it, and only then
 * is it written into the caller. Otherwise the kernel's answer for a
 * collected child, ESRCH. What each query writes: out, the first outlen
 * bytes (0: a value only); sched_getattr says its own size.
 */
#define CR_ZQ_MASK 8192		/* sched_getaffinity: bytes asked at most */

/* zombie false: the same query of a live task (a CPU mask asked by pid in
 * runs that narrow masks: affinity() below), without the zombie's check. */
static struct cr_verdict made_query(struct cr_run *run,
				    const struct seccomp_notif *n,
				    const char *name, pid_t pid, bool zombie)
{
	union {
		unsigned char b[CR_ZQ_MASK];
		uint32_t size;	/* struct sched_attr's first field */
	} out;
	const __u64 *a = n->data.args;
	uint64_t uaddr = 0;
	size_t outlen = 0;
	long rc;

	memset(&out, 0, sizeof(out));
	if (!strcmp(name, "getpgid") || !strcmp(name, "getsid") ||
	    !strcmp(name, "sched_getscheduler")) {
		rc = syscall(n->data.nr, pid);
	} else if (!strcmp(name, "getpriority") ||
		   !strcmp(name, "ioprio_get")) {
		rc = syscall(n->data.nr, a[0], pid);
	} else if (!strcmp(name, "sched_getparam") ||
		   !strcmp(name, "sched_rr_get_interval")) {
		uaddr = a[1];
		outlen = !strcmp(name, "sched_getparam") ?
			 sizeof(struct sched_param) : sizeof(struct timespec);
		rc = syscall(n->data.nr, pid, uaddr ? out.b : NULL);
	} else if (!strcmp(name, "sched_getaffinity")) {
		/* The kernel reads the length as 32 bits, checks it as it
		 * is, and writes at most its own mask's size (at most 1 KiB,
		 * 8192 CPUs) into our buffer. */
		uaddr = a[2];
		rc = syscall(n->data.nr, pid, (unsigned int)a[1],
			     uaddr ? out.b : NULL);
		if (rc > 0)
			outlen = (size_t)rc;
	} else if (!strcmp(name, "sched_getattr")) {
		/* The same: a size past a page is refused, and it writes
		 * at most its own struct's. */
		unsigned int len = (unsigned int)a[2];

		uaddr = a[1];
		rc = syscall(n->data.nr, pid, uaddr ? out.b : NULL, len,
			     (unsigned int)a[3]);
		if (rc == 0)
			outlen = out.size <= len ? out.size : len;
	} else if (!strcmp(name, "prlimit64") && !a[2]) {
		uaddr = a[3];
		outlen = uaddr ? sizeof(struct rlimit) : 0;
		rc = syscall(n->data.nr, pid, a[1], NULL, uaddr ? out.b : NULL);
	} else {
		return err(ESRCH);	/* a change, or a call on its memory */
	}
	if (rc < 0)
		rc = -errno;
	if (zombie && !cr_budget_zombie(run, pid))
		return err(ESRCH);	/* collected meanwhile */
	if (rc < 0)
		return err((int)-rc);
	if (uaddr && outlen) {
		int w = cr_mem_write((pid_t)n->pid, uaddr, out.b, outlen);

		if (w)
			return err(-w);
	}
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = rc };
}

/* The size of the kernel's CPU masks (what sched_getaffinity answers for
 * any length past it). */
static size_t cpumask_bytes(void)
{
	static size_t size;
	unsigned char b[CR_ZQ_MASK];
	long rc;

	if (!size) {
		rc = syscall(SYS_sched_getaffinity, 0, sizeof(b), b);
		size = rc > 0 ? (size_t)rc : sizeof(cpu_set_t);
	}
	return size;
}

/*
 * sched_getaffinity and sched_setaffinity by pid (the filter notifies
 * those whose pid is not 0 in any of its 64 bits). The kernel takes the
 * pid and the length as 32 bits, and checks the length (a query) or reads
 * the mask (a change) before it looks the pid up; so does this. A task of
 * the run is answered by CONTINUE, except in runs that narrow a task's
 * mask while installing a descriptor (notify.c): there the call is made
 * here, between installs, so that a query never sees a narrowed mask and
 * a change is never undone by the mask put back (a change continued ran
 * after the answer, and 40-60 % of them were lost under a loop of opens:
 * found by a probing session).
 */
static struct cr_verdict affinity(struct cr_run *run,
				  const struct seccomp_notif *n, bool set)
{
	const __u64 *a = n->data.args;
	pid_t pid = (pid_t)(int)a[0];
	unsigned int len = (unsigned int)a[1];
	unsigned char mask[CR_ZQ_MASK];
	size_t take = len < cpumask_bytes() ? len : cpumask_bytes();
	enum cr_target target;
	bool gone;
	long rc;

	if (pid < 0)	/* the kernel's own ESRCH */
		return (struct cr_verdict){ .kind = CR_V_CONTINUE };
	if (pid == 0)	/* the high bits set, the low ones 0: the caller */
		pid = (pid_t)n->pid;
	target = cr_surface_target(run, (pid_t)n->pid, pid);
	gone = target == CR_TARGET_RUN && cr_tasks_thread_gone(&run->tasks, pid);
	if (target == CR_TARGET_OUTSIDE || gone || (set && run->near_addfd)) {
		/* What the kernel refuses before it looks for the pid. */
		if (!set && syscall(SYS_sched_getaffinity, 0, len, NULL) < 0 &&
		    errno == EINVAL)
			return err(EINVAL);
		memset(mask, 0, sizeof(mask));
		if (set && take && cr_mem_read((pid_t)n->pid, a[2], mask, take))
			return err(EFAULT);
	}
	if (gone)
		return err(ESRCH);
	switch (target) {
	case CR_TARGET_OUTSIDE:
		return absent(run, n, set ? "sched_setaffinity" :
					    "sched_getaffinity", pid);
	case CR_TARGET_ZOMBIE:
		return set ? err(ESRCH) :
		       made_query(run, n, "sched_getaffinity", pid, true);
	default:
		break;
	}
	if (!run->near_addfd)
		return (struct cr_verdict){ .kind = CR_V_CONTINUE };
	if (!set)
		return made_query(run, n, "sched_getaffinity", pid, false);
	if (!cr_notif_valid(run, n->id))
		return err(EINTR);	/* gone: nobody reads the answer */
	rc = syscall(SYS_sched_setaffinity, pid, take, mask);
	return rc < 0 ? err(errno) : (struct cr_verdict){ .kind = CR_V_VALUE };
}

/* Which arguments of each call are pids (0 means the caller). */
static const struct {
	const char *name;
	int args[2];	/* -1: none */
} pid_args[] = {
	{ "kcmp", { 0, 1 } },
	{ "prlimit64", { 0, -1 } },
	{ "get_robust_list", { 0, -1 } },
	{ "sched_setaffinity", { 0, -1 } },
	{ "sched_setparam", { 0, -1 } },
	{ "sched_setscheduler", { 0, -1 } },
	{ "sched_setattr", { 0, -1 } },
	/* Queries: what they answer of a process outside the run (its
	 * group and session, its scheduling) is more than "absent". */
	{ "getpgid", { 0, -1 } },
	{ "getsid", { 0, -1 } },
	{ "sched_getaffinity", { 0, -1 } },
	{ "sched_getparam", { 0, -1 } },
	{ "sched_getscheduler", { 0, -1 } },
	{ "sched_getattr", { 0, -1 } },
	{ "sched_rr_get_interval", { 0, -1 } },
};

/* A query of corral itself, the first process's parent: the kernel's
 * answer (corral's pid cannot be freed while the run lasts). The parent
 * looked gone (ESRCH) where natively it is there, and CPython's
 * test_posix failed on sched_getscheduler(getppid()); found by two
 * probing sessions. Only what reads: never prlimit64 or the affinity. */
static bool parent_query(const char *name, pid_t pid)
{
	return pid == getpid() &&
	       (!strcmp(name, "getpgid") || !strcmp(name, "getsid") ||
		!strcmp(name, "sched_getparam") ||
		!strcmp(name, "sched_getscheduler") ||
		!strcmp(name, "sched_getattr") ||
		!strcmp(name, "sched_rr_get_interval"));
}

CR_HANDLER(cr_h_proc_pid)
{
	if (!strcmp(e->name, "sched_getaffinity") ||
	    !strcmp(e->name, "sched_setaffinity"))
		return affinity(run, n, !strcmp(e->name, "sched_setaffinity"));
	for (size_t i = 0; i < CR_ARRAY_SIZE(pid_args); i++) {
		if (strcmp(pid_args[i].name, e->name))
			continue;
		for (int k = 0; k < 2; k++) {
			int a = pid_args[i].args[k];
			pid_t pid;

			if (a < 0)
				continue;
			pid = (pid_t)(int)n->data.args[a];
			/* No call of this table takes a negative pid for
			 * a group: the kernel's own answer (EINVAL or
			 * ESRCH) is the right one. */
			if (pid < 0)
				continue;
			switch (cr_surface_target(run, (pid_t)n->pid, pid)) {
			case CR_TARGET_OUTSIDE:
				if (parent_query(e->name, pid))
					return (struct cr_verdict){
						.kind = CR_V_CONTINUE };
				return absent(run, n, e->name, pid);
			case CR_TARGET_ZOMBIE:
				return pid_args[i].args[1] < 0 ?
				       made_query(run, n, e->name, pid, true) :
				       err(ESRCH);
			default:
				if (cr_tasks_thread_gone(&run->tasks, pid))
					return err(ESRCH);
				break;
			}
		}
		return (struct cr_verdict){ .kind = CR_V_CONTINUE };
	}
	/* A table entry without a row here: fail closed. */
	return refuse(run, n, e->name, "internal: no pid rule for this call", 0);
}

/*
 * A process CPU clock, (~pid << 3) | type in the 32-bit clockid (the
 * filter notifies only those whose pid is not 0). A process of the run
 * (or the caller's own number, or a dead child of the run not yet waited
 * for) runs in the kernel: the verdict is from a register, and the number
 * cannot name another process meanwhile, because a traced task's pid is
 * held by its zombie until corral, its tracer, has reaped it (the window
 * after that is the one documented at the top of this file). Any other
 * pid answers EINVAL, as the kernel does for a free pid (glibc's
 * clock_getcpuclockid turns it into ESRCH), and is recorded.
 */
CR_HANDLER(cr_h_cpuclock)
{
	int32_t id = (int32_t)(uint32_t)n->data.args[0];
	pid_t pid;
	char target[48];

	/* Not a process clock (the filter's condition, checked again), or a
	 * clock named by an fd (type 3, CLOCKFD: the caller's own fd). */
	if (id >= 0 || (id & 4) || (id & 3) == 3)
		return (struct cr_verdict){ .kind = CR_V_CONTINUE };
	pid = (pid_t)~(id >> 3);
	switch (cr_surface_target(run, (pid_t)n->pid, pid)) {
	case CR_TARGET_SELF:
	case CR_TARGET_RUN:
	case CR_TARGET_ZOMBIE:
		return (struct cr_verdict){ .kind = CR_V_CONTINUE };
	default:
		break;
	}
	if (!cr_tasks_was_ours(&run->tasks, pid)) {
		snprintf(target, sizeof(target), "cpu clock of pid %ld",
			 (long)pid);
		cr_deny(run, (pid_t)n->pid, e->name, target, "proc",
			"the target is not a process of the run");
	}
	return err(EINVAL);
}

/* setpriority(which, who, prio), ioprio_set(which, who, prio) and their
 * queries getpriority and ioprio_get: a process, a process group or a
 * whole user. A user's processes are the host's, so that form is refused;
 * a group only when it is the caller's own (pinned by the caller's
 * membership, and one the run made: signal.c, setpgid). */
CR_HANDLER(cr_h_proc_prio)
{
	bool io = !strncmp(e->name, "ioprio_", 7);
	bool query = !strcmp(e->name, "getpriority") ||
		     !strcmp(e->name, "ioprio_get");
	int which = (int)n->data.args[0];
	pid_t who = (pid_t)(int)n->data.args[1];
	int w_proc = io ? 1 : PRIO_PROCESS;	/* IOPRIO_WHO_PROCESS */
	int w_pgrp = io ? 2 : PRIO_PGRP;	/* IOPRIO_WHO_PGRP */
	int w_user = io ? 3 : PRIO_USER;	/* IOPRIO_WHO_USER */

	if (which == w_proc) {
		if (who < 0)
			return err(ESRCH);
		switch (cr_surface_target(run, (pid_t)n->pid, who)) {
		case CR_TARGET_OUTSIDE:
			/* corral, the parent: as parent_query. */
			if (query && who == getpid())
				return (struct cr_verdict){
					.kind = CR_V_CONTINUE };
			return absent(run, n, e->name, who);
		case CR_TARGET_ZOMBIE:
			return query ? made_query(run, n, e->name, who, true) :
			       err(ESRCH);
		default:
			if (cr_tasks_thread_gone(&run->tasks, who))
				return err(ESRCH);
			break;
		}
	} else if (which == w_pgrp) {
		/* Another group looks absent, as its query answers (it
		 * was EPERM where the query said ESRCH; found by a
		 * differential probing session). */
		if (who != 0 && who != cr_surface_pgrp((pid_t)n->pid)) {
			if (query)
				return absent(run, n, e->name, -(long)who);
			refuse(run, n, e->name,
			       "only the caller's own process group", who);
			return err(ESRCH);
		}
	} else if (which == w_user) {
		return refuse(run, n, e->name,
			      "a user's processes include the host's", who);
	} else {
		return err(EINVAL);
	}
	return (struct cr_verdict){ .kind = CR_V_CONTINUE };
}

/* pidfd_getfd(pidfd, fd, flags): corral takes the pidfd the caller holds,
 * checks the process it names, and fetches the fd itself through that
 * copy, then installs it in the caller. */
CR_HANDLER(cr_h_pidfd_getfd)
{
	pid_t caller = (pid_t)n->pid, pid;
	int fd = (int)n->data.args[0], target = (int)n->data.args[1];
	unsigned flags = (unsigned)n->data.args[2];
	cr_autoclose int copy = -1;
	struct cr_verdict v;
	int r, got;

	/* The kernel's first check: no flag is defined (EINVAL before the
	 * descriptor is looked at; found by a differential probe). */
	if (flags)
		return err(EINVAL);
	r = cr_surface_take_pidfd(run, caller, fd, &copy, &pid);
	if (r == -EINVAL)
		return err(EBADF);
	if (r)
		return err(-r);
	if (pid <= 0)
		return err(ESRCH);
	switch (cr_surface_target(run, caller, pid)) {
	case CR_TARGET_OUTSIDE:
		return absent(run, n, e->name, pid);
	case CR_TARGET_ZOMBIE:
		return err(ESRCH);
	default:
		break;
	}
	got = (int)syscall(SYS_pidfd_getfd, copy, target, flags);
	if (got < 0)
		return err(errno);
	cr_guard_note_copy(got);	/* maybe a socket; ours closed last */
	/* pidfd_getfd always makes the new fd close-on-exec. */
	v = cr_notif_send_fd(run, n, got, true);
	return v;
}

/* process_madvise(pidfd, iovec, vlen, advice, flags): the ranges are
 * addresses in the target; corral reads the iovec array from the caller
 * and gives the advice through its copy of the pidfd. */
CR_HANDLER(cr_h_process_madvise)
{
	pid_t caller = (pid_t)n->pid, pid;
	int fd = (int)n->data.args[0];
	uint64_t uvec = n->data.args[1];
	size_t vlen = (size_t)n->data.args[2];
	int advice = (int)n->data.args[3];
	unsigned flags = (unsigned)n->data.args[4];
	cr_autoclose int copy = -1;
	cr_autofree struct iovec *iov = NULL;
	long rc;
	int r;

	if (vlen > IOV_MAX)
		return err(EINVAL);
	r = cr_surface_take_pidfd(run, caller, fd, &copy, &pid);
	if (r == -EINVAL)
		return err(EBADF);
	if (r)
		return err(-r);
	if (pid <= 0)
		return err(ESRCH);
	switch (cr_surface_target(run, caller, pid)) {
	case CR_TARGET_OUTSIDE:
		return absent(run, n, e->name, pid);
	case CR_TARGET_ZOMBIE:
		return err(ESRCH);
	default:
		break;
	}
	if (vlen) {
		iov = calloc(vlen, sizeof(*iov));
		if (!iov)
			return err(ENOMEM);
		r = cr_mem_read(caller, uvec, iov, vlen * sizeof(*iov));
		if (r)
			return err(-r);
		if (!cr_notif_valid(run, n->id))
			return err(EINTR);
	}
	cr_slow_begin();	/* the target's memory-map lock (mem.c) */
	rc = syscall(SYS_process_madvise, copy, iov, vlen, advice, flags);
	cr_slow_end();
	return rc < 0 ? err(errno) :
		(struct cr_verdict){ .kind = CR_V_VALUE, .val = rc };
}

/* Bytes one process_vm_* call moves at most; the calls may return less
 * than asked, and callers loop. */
#define CR_VM_MAX (16u << 20)

/* import_iovec's checks: a length with the sign bit set is EINVAL; on
 * the caller's own side (user) a range beyond user space, an empty one
 * too, EFAULT (access_ok). */
static int iov_check(const struct iovec *v, size_t n, bool user)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t b = (uint64_t)(uintptr_t)v[i].iov_base;

		if ((ssize_t)v[i].iov_len < 0)
			return EINVAL;
		if (user && (b > CR_USER_TOP || v[i].iov_len > CR_USER_TOP - b))
			return EFAULT;
	}
	return 0;
}

static size_t iov_total(const struct iovec *v, size_t n)
{
	size_t t = 0;

	for (size_t i = 0; i < n; i++)
		t = v[i].iov_len > SIZE_MAX - t ? SIZE_MAX : t + v[i].iov_len;
	return t;
}

/* process_vm_readv/writev(pid, local, liovcnt, remote, riovcnt, flags),
 * performed by corral through a bounce buffer: read from the source
 * process, write into the destination, both by pid while the target's
 * number is known to be ours (in the table, not reaped: this handler runs
 * on the loop thread, which alone reaps). A CONTINUE would leave the
 * kernel to resolve the number later, after a possible reuse. */
CR_HANDLER(cr_h_process_vm)
{
	bool wr = !strcmp(e->name, "process_vm_writev");
	pid_t caller = (pid_t)n->pid, pid = (pid_t)(int)n->data.args[0];
	size_t lcnt = (size_t)n->data.args[2], rcnt = (size_t)n->data.args[4];
	cr_autofree struct iovec *local = NULL, *remote = NULL;
	cr_autofree char *buf = NULL;
	struct iovec b;
	size_t len;
	ssize_t got, put;
	uint64_t t0;
	int r;

	/* The kernel's order (process_vm_rw): the flags, the local
	 * vectors (EINVAL, EFAULT), nothing to copy (0), the remote ones,
	 * nothing to copy there (0), and only then the pid. */
	if (n->data.args[5] || lcnt > IOV_MAX)
		return err(EINVAL);
	if (!lcnt)
		return (struct cr_verdict){ .kind = CR_V_VALUE, .val = 0 };
	local = calloc(lcnt, sizeof(*local));
	if (!local)
		return err(ENOMEM);
	if ((r = cr_mem_read(caller, n->data.args[1], local,
			     lcnt * sizeof(*local))))
		return err(-r);
	if ((r = iov_check(local, lcnt, true)) || !iov_total(local, lcnt))
		return r ? err(r) : (struct cr_verdict){ .kind = CR_V_VALUE };
	if (rcnt > IOV_MAX)
		return err(EINVAL);
	remote = calloc(rcnt ? rcnt : 1, sizeof(*remote));
	if (!remote)
		return err(ENOMEM);
	if (rcnt && (r = cr_mem_read(caller, n->data.args[3], remote,
				     rcnt * sizeof(*remote))))
		return err(-r);
	if ((r = iov_check(remote, rcnt, false)) || !iov_total(remote, rcnt))
		return r ? err(r) : (struct cr_verdict){ .kind = CR_V_VALUE };
	if (!cr_notif_valid(run, n->id))
		return err(EINTR);
	if (pid <= 0)
		return err(ESRCH);
	switch (cr_surface_target(run, caller, pid)) {
	case CR_TARGET_OUTSIDE:
		return absent(run, n, e->name, pid);
	case CR_TARGET_ZOMBIE:
		return err(ESRCH);
	default:
		break;
	}
	len = iov_total(local, lcnt);
	if (iov_total(remote, rcnt) < len)
		len = iov_total(remote, rcnt);
	if (len > CR_VM_MAX)
		len = CR_VM_MAX;
	if (!len)
		return (struct cr_verdict){ .kind = CR_V_VALUE, .val = 0 };
	buf = malloc(len);
	if (!buf)
		return err(ENOMEM);
	b = (struct iovec){ .iov_base = buf, .iov_len = len };
	t0 = cr_thread_cpu_ns();
	/* Source first: the target (readv) or the caller's own buffers
	 * (writev); then the destination. A fault on the caller's side is
	 * EFAULT, as the kernel reports it. */
	cr_slow_begin();	/* memory-map locks the program can hold (mem.c) */
	if (wr)
		got = process_vm_readv(caller, &b, 1, local, lcnt, 0);
	else
		got = process_vm_readv(pid, &b, 1, remote, rcnt, 0);
	if (got < 0) {
		put = -1;
		r = wr ? EFAULT : errno;
	} else {
		b.iov_len = (size_t)got;
		if (wr)
			put = process_vm_writev(pid, &b, 1, remote, rcnt, 0);
		else
			put = process_vm_writev(caller, &b, 1, local, lcnt, 0);
		r = put >= 0 ? 0 : wr ? errno : EFAULT;
	}
	cr_slow_end();
	/* Natively the copy is the caller's own CPU time; here corral's loop
	 * does it (up to 16 MiB a call, the fresh buffer's page faults
	 * included): charged to the run's cpu budget, or a program could
	 * have corral copy for it past its budget. */
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return r ? err(r) : (struct cr_verdict){ .kind = CR_V_VALUE, .val = put };
}

/*
 * prctl(PR_SET_DUMPABLE, 0): an undumpable process's /proc files turn
 * root's and pidfd_getfd and process_vm_* on it fail for corral, which
 * has the uid but no capability: its fd table (unlinked files, unix
 * socket queues, pty masters the budgets count) and its memory (every
 * path it passes) could no longer be read. So it is not made. It was
 * refused (EPERM) until GNU timeout, which asks it before raising the
 * signal its command died of, printed a warning and exited 128+N
 * instead of dying by the signal (coreutils' tee.sh). What a program
 * asks it for is done for the whole run already: core dumps are off
 * (RLIMIT_CORE 0, tracer/spawn.c), and no process outside the run can
 * read it. So it is answered 0 and remembered for the process, which
 * PR_GET_DUMPABLE then tells (forks inherit it, exec ends it, as the
 * kernel's). What differs: other processes of the run may still read
 * its /proc files and trace it no more than any other (ptrace is the
 * kernel's refusal under corral in any case). 1 and the kernel's EINVAL
 * for other values stay in the kernel.
 */
static struct cr_task *process_of(struct cr_run *run, pid_t tid)
{
	pid_t tgid = cr_tasks_tgid(&run->tasks, tid);

	return tgid ? cr_tasks_find(&run->tasks, tgid) : NULL;
}

CR_HANDLER(cr_h_prctl_dumpable)
{
	struct cr_task *p = process_of(run, (pid_t)n->pid);

	(void)e;
	if (n->data.args[1] != 0) {
		if (p && n->data.args[1] == 1)
			p->undumpable = false;
		return CR_V_CONT;
	}
	if (!p)
		return err(EPERM);	/* not ours to answer for: refused */
	p->undumpable = true;
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = 0 };
}

CR_HANDLER(cr_h_prctl_get_dumpable)
{
	struct cr_task *p = process_of(run, (pid_t)n->pid);

	(void)e;
	if (p && p->undumpable)
		return (struct cr_verdict){ .kind = CR_V_VALUE, .val = 0 };
	return CR_V_CONT;
}

/*
 * prctl(PR_SCHED_CORE, cmd, pid, scope, cookie): with pid set, the kernel
 * reads, gives or takes the core-scheduling cookie of any process the
 * caller may ptrace-read: every process of the uid, outside the run too
 * (its scheduling changed, its existence told). pid 0 is the caller (its
 * thread, process, or process group: a group of the run, see setpgid) and
 * stays in the kernel. Any other pid is refused, recorded, with EINVAL:
 * what a kernel without CONFIG_SCHED_CORE answers to every form, so a
 * program cannot tell the refusal from a kernel without the feature. The
 * kernel reads the pid as an int.
 */
CR_HANDLER(cr_h_prctl_sched_core)
{
	pid_t pid = (pid_t)(int)n->data.args[2];
	char target[48];

	(void)e;
	if (pid == 0)
		return CR_V_CONT;
	snprintf(target, sizeof(target), "PR_SCHED_CORE pid %ld", (long)pid);
	cr_deny(run, (pid_t)n->pid, "prctl", target, "proc",
		"core scheduling of another process is refused");
	return err(EINVAL);
}

/*
 * capget(header, data) with data set: the header's pid (in memory, 0 the
 * caller) names whose capabilities to read, any process of the host for
 * the kernel. Read once; a process outside the run answers ESRCH as its
 * /proc entry does; otherwise corral asks the kernel for that task and
 * writes what it answers back, so a racing thread cannot change the pid
 * after the check. capget with no data (the version probe) names no one
 * and stays in the kernel.
 */
CR_HANDLER(cr_h_capget)
{
	pid_t caller = (pid_t)n->pid;
	struct __user_cap_header_struct h, mine;
	struct __user_cap_data_struct data[2];
	size_t words;

	if (cr_mem_read(caller, n->data.args[0], &h, sizeof(h)))
		return err(EFAULT);
	if (!cr_notif_valid(run, n->id))
		return err(ESRCH);
	if (h.pid < 0)
		return err(EINVAL);
	mine.version = h.version;
	mine.pid = h.pid ? h.pid : caller;
	if (h.pid) {
		switch (cr_surface_target(run, caller, h.pid)) {
		case CR_TARGET_OUTSIDE:
			return absent(run, n, e->name, h.pid);
		case CR_TARGET_ZOMBIE:
			return err(ESRCH);
		default:
			break;
		}
	}
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &mine, data) < 0) {
		int e2 = errno;

		/* An unknown version: the kernel tells the caller which one
		 * it prefers, in the header. */
		if (e2 == EINVAL && mine.version != h.version &&
		    cr_mem_write(caller, n->data.args[0], &mine.version,
				 sizeof(mine.version)))
			return err(EFAULT);
		return err(e2);
	}
	words = h.version == _LINUX_CAPABILITY_VERSION_1 ? 1 : 2;
	if (cr_mem_write(caller, n->data.args[1], data, words * sizeof(data[0])))
		return err(EFAULT);
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = 0 };
}
