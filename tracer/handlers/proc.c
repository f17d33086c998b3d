/* tracer/handlers/proc.c: pidfd_getfd, process_madvise, process_vm_readv,
 * process_vm_writev, kcmp, prlimit64, get_robust_list, sched_set*,
 * setpriority, ioprio_set: calls that name another process. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "handlers.h"
#include "../surface.h"

/*
 * Why this is safe against the program it supervises: a pid outside the
 * task table is refused (EPERM, layer "proc") before the kernel sees it,
 * so the user's other processes cannot be read, written, compared, reniced
 * or limited. Calls naming the caller itself are always safe to CONTINUE.
 *
 * Calls naming another task of the run are CONTINUEd too, and keep one
 * documented window: if that task exits, corral reaps it, and the kernel
 * hands its number to a new outside process, all between corral's answer
 * and the kernel running the call, the call reaches that process. The pid
 * allocator is cyclic, so the number comes back only after every other
 * free number has been used; the fd-based calls below (pidfd_getfd,
 * process_madvise) have no such window, as corral acts on a copy of the
 * pidfd itself.
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

/* Which arguments of each call are pids (0 means the caller). */
static const struct {
	const char *name;
	int args[2];	/* -1: none */
} pid_args[] = {
	{ "process_vm_readv", { 0, -1 } },
	{ "process_vm_writev", { 0, -1 } },
	{ "kcmp", { 0, 1 } },
	{ "prlimit64", { 0, -1 } },
	{ "get_robust_list", { 0, -1 } },
	{ "sched_setaffinity", { 0, -1 } },
	{ "sched_setparam", { 0, -1 } },
	{ "sched_setscheduler", { 0, -1 } },
	{ "sched_setattr", { 0, -1 } },
};

CR_HANDLER(cr_h_proc_pid)
{
	for (size_t i = 0; i < CR_ARRAY_SIZE(pid_args); i++) {
		if (strcmp(pid_args[i].name, e->name))
			continue;
		for (int k = 0; k < 2; k++) {
			int a = pid_args[i].args[k];
			pid_t pid;

			if (a < 0)
				continue;
			pid = (pid_t)(int)n->data.args[a];
			if (pid < 0)
				return err(ESRCH);
			switch (cr_surface_target(run, (pid_t)n->pid, pid)) {
			case CR_TARGET_OUTSIDE:
				return refuse(run, n, e->name,
					      "the target is not a process of the run",
					      pid);
			case CR_TARGET_ZOMBIE:
				return err(ESRCH);
			default:
				break;
			}
		}
		return (struct cr_verdict){ .kind = CR_V_CONTINUE };
	}
	/* A table entry without a row here: fail closed. */
	return refuse(run, n, e->name, "internal: no pid rule for this call", 0);
}

/* setpriority(which, who, prio) and ioprio_set(which, who, prio): a
 * process, a process group or a whole user. A user's processes are the
 * host's, so that form is refused; a group only when it is the caller's
 * own (pinned by the caller's membership, and inside the run's session). */
CR_HANDLER(cr_h_proc_prio)
{
	bool io = !strcmp(e->name, "ioprio_set");
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
			return refuse(run, n, e->name,
				      "the target is not a process of the run",
				      who);
		case CR_TARGET_ZOMBIE:
			return err(ESRCH);
		default:
			break;
		}
	} else if (which == w_pgrp) {
		if (who != 0 && who != cr_surface_pgrp((pid_t)n->pid))
			return refuse(run, n, e->name,
				      "only the caller's own process group",
				      who);
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

	r = cr_surface_take_pidfd(run, caller, fd, &copy, &pid);
	if (r == -EINVAL)
		return err(EBADF);
	if (r)
		return err(-r);
	if (pid <= 0)
		return err(ESRCH);
	switch (cr_surface_target(run, caller, pid)) {
	case CR_TARGET_OUTSIDE:
		return refuse(run, n, e->name,
			      "the target is not a process of the run", pid);
	case CR_TARGET_ZOMBIE:
		return err(ESRCH);
	default:
		break;
	}
	got = (int)syscall(SYS_pidfd_getfd, copy, target, flags);
	if (got < 0)
		return err(errno);
	/* pidfd_getfd always makes the new fd close-on-exec. */
	v = cr_notif_send_fd(run, n, got, true);
	close(got);
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
		return refuse(run, n, e->name,
			      "the target is not a process of the run", pid);
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
	rc = syscall(SYS_process_madvise, copy, iov, vlen, advice, flags);
	return rc < 0 ? err(errno) :
		(struct cr_verdict){ .kind = CR_V_VALUE, .val = rc };
}
