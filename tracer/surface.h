/* tracer/surface.h: the kernel-surface area: the syscall profile's answers,
 * foreign-ABI deaths, denial stacks, and helpers for pid-naming calls. */
#ifndef CORRAL_SURFACE_H
#define CORRAL_SURFACE_H

#include "tracer.h"

#define CR_STACK_FRAMES 8
/* The loop's wait for the unwinder: per stack, and in all per run. */
#define CR_STACK_WAIT_NS (500ull * 1000 * 1000)
#define CR_STACKS_WAIT_NS (2000ull * 1000 * 1000)

struct cr_surface {
	const struct cr_profile *profile;	/* borrowed (static) */
	bool stacks;			/* --stacks: unwind denied callers */
	pid_t stack_tid;		/* waiting for its stop, 0: none */
	size_t stack_denial;		/* index into run->denials */
	bool stack_interrupted;		/* PTRACE_INTERRUPT sent */
	uint64_t stack_ns;		/* time spent unwinding (bounded a run) */
	unsigned stacks_taken;
	/* A SIGSYS went through a signal-delivery stop: a later death by
	 * SIGSYS may be that signal rather than the filter's kill. */
	bool sigsys_signalled;
	bool foreign_abi_seen;
	bool undumpable;		/* corral made itself undumpable */
};

/* Area set-up and finisher (run.c, cleanup.c). */
int cr_surface_setup(struct cr_run *run);
void cr_surface_finish(struct cr_run *run);

/* The answer to a call no table entry handles: it reached the notifier
 * because the profile does not allow it (ENOSYS, or EPERM when the profile
 * refuses it); recorded once per call with a count. */
struct cr_verdict cr_surface_unlisted(struct cr_run *run,
				      const struct seccomp_notif *n);

/* tasks.c: every ptrace stop and every death passes here first. */
void cr_surface_on_stop(struct cr_run *run, pid_t tid, int status);
/* exit_seen: the task's exit stop was seen (and judged there). */
void cr_surface_on_gone(struct cr_run *run, pid_t tid, int status,
			bool exit_seen);
/* notify.c: just before each answer (arms a pending --stacks unwind). */
void cr_surface_answering(struct cr_run *run, const struct seccomp_notif *n);
/* notify.c: a new denial was recorded at index i for tid. */
void cr_surface_denied(struct cr_run *run, pid_t tid, size_t i);

/* unwind.c: libunwind, loaded at set-up for --stacks (0, or -ENOENT with
 * why in msg). */
int cr_unwind_load(char *msg, size_t msglen);
/* The top frames of tid, in a ptrace-stop, unwound by a confined helper
 * the loop waits for wait_ns at most: 0 with frames (owned), or -errno
 * with why (static) the stack is missing. */
int cr_unwind_take(pid_t tid, uint64_t wait_ns, char ***frames, size_t *n,
		   const char **why);

/* Where a pid named by a call points, seen from the calling task. */
enum cr_target {
	CR_TARGET_SELF,		/* 0, the caller's tid or its process */
	CR_TARGET_RUN,		/* another task of the run (in the table) */
	CR_TARGET_ZOMBIE,	/* a dead child of a run task, not yet waited
				 * for by it: ours, but nothing to act on */
	CR_TARGET_OUTSIDE,	/* anything else: not ours to reach */
};
/* The caller's thread-group id (its process), or -errno. Safe to read from
 * /proc: the caller is blocked in its call, so its ids cannot be reused. */
pid_t cr_surface_tgid(struct cr_run *run, pid_t tid);
enum cr_target cr_surface_target(struct cr_run *run, pid_t caller, pid_t pid);
/* Process group of a task of the run (from /proc/<pid>/stat), or -errno. */
pid_t cr_surface_pgrp(pid_t pid);
/* Parent pid of pid, with its state letter and process group, or -errno. */
pid_t cr_surface_stat(pid_t pid, char *state, pid_t *pgrp);
/* The pid a pidfd of the supervisor's own table refers to now (-1: the
 * process was reaped, 0: not in our pid namespace), -ENOENT when fd is not
 * a pidfd, or -errno. */
pid_t cr_surface_pidfd_pid(int fd);
/* Duplicate the caller's fd into the supervisor (pidfd_getfd) and, when it
 * is a pidfd, say which pid it refers to now (-1: exited). */
#define CR_PIDFD_SELF_THREAD (-10000)
#define CR_PIDFD_SELF_THREAD_GROUP (-10001)
int cr_surface_take_pidfd(struct cr_run *run, pid_t caller, int fd,
			  int *copy, pid_t *pid);
/* A later table entry of the same call, for handlers that check first and
 * then hand the call on to another area's handler. */
struct cr_verdict cr_surface_chain(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n);

#endif
