/* tracer/handlers/fork.c: fork, vfork, clone: the processes budget's
 * reservation, and the clone flags that would leave the tracer's reach. */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "handlers.h"
#include "../budget/budget.h"

/* clone flags that make a namespace. CLONE_NEWTIME is not here: clone()
 * cannot pass it (its bit is part of the exit signal byte); only clone3,
 * refused in the filter, and unshare, refused, can. */
#define CR_CLONE_NS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | \
		     CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

/* Safe against a racing thread: the verdict reads registers only (the
 * syscall number and clone's flags word), which the kernel copied when the
 * call trapped; another thread cannot change them. The budget's slot is
 * taken here, on the loop thread, before the kernel creates the task, so
 * many threads cloning at once are counted one after another. */
struct cr_verdict cr_h_fork(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	pid_t tid = (pid_t)n->pid;
	bool thread = false;

	if (!strcmp(e->name, "clone")) {
		uint64_t flags = n->data.args[0];

		if (flags & CR_CLONE_NS) {
			cr_deny(run, tid, e->name, NULL, "syscall",
				"namespaces are refused");
			return (struct cr_verdict){ .kind = CR_V_ERRNO,
						    .error = EPERM };
		}
		/* CLONE_UNTRACED would make a child that ptrace does not
		 * follow: uncounted, unkillable by the tree kill. */
		if (flags & CLONE_UNTRACED) {
			cr_deny(run, tid, e->name, NULL, "syscall",
				"untraced children are refused");
			return (struct cr_verdict){ .kind = CR_V_ERRNO,
						    .error = EPERM };
		}
		thread = (flags & CLONE_THREAD) != 0;
		/* From here a process's fd table may have another owner:
		 * handlers/kmem.c cannot rule out a number swapped under a
		 * call by the thread count alone. */
		if ((flags & CLONE_FILES) && !thread)
			run->files_cloned = true;
	}
	if (cr_budget_reserve(run, tid, thread) < 0) {
		cr_deny(run, tid, e->name, NULL, "proc",
			"the processes budget is spent");
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EAGAIN };
	}
	return (struct cr_verdict){ .kind = CR_V_CONTINUE };
}

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/*
 * unshare(flags): a namespace of any kind is refused, as for clone; what
 * only gives the caller a private copy of something it shares (its fd
 * table, its cwd and umask, its System V undo list) is the kernel's, as a
 * thread cloned without CLONE_FILES or CLONE_FS already has: the fd calls
 * and the resolver read each thread's own (/proc/TID). An earlier build
 * refused every unshare: Go's LockOSThread + Unshare(CLONE_FS) for a
 * per-thread cwd failed EPERM (found by a side-by-side run of Go's suite).
 * A bit the kernel does not know is its EINVAL, answered here so that a
 * namespace a later kernel adds is not let through. Registers only.
 */
struct cr_verdict cr_h_unshare(struct cr_run *run,
			       const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n)
{
	const uint64_t own = CLONE_FILES | CLONE_FS | CLONE_SYSVSEM |
			     CLONE_THREAD | CLONE_SIGHAND | CLONE_VM;
	/* All 64 bits: the kernel's flags are an unsigned long, and a bit it
	 * does not know, high ones too, is EINVAL before any namespace is
	 * looked at (a high bit beside CLONE_NEWTIME was refused EPERM with
	 * a denial where the kernel answers EINVAL; a probing session). */
	uint64_t flags = n->data.args[0];

	if (flags & ~(own | CR_CLONE_NS | (uint64_t)CLONE_NEWTIME))
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EINVAL };
	if (flags & (CR_CLONE_NS | CLONE_NEWTIME)) {
		cr_deny(run, (pid_t)n->pid, e->name, NULL, "syscall",
			"namespaces are refused");
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
	}
	return (struct cr_verdict){ .kind = CR_V_CONTINUE };
}
