/* tracer/child.c: the spawned child from its birth to the program's exec:
 * signals, fds, cwd, limits, capabilities, Landlock, the seccomp filter. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>

#include "corral/result.h"
#include "child.h"
#include "rawsys.h"

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

/*
 * This code runs in a child that shares the supervisor's memory until its
 * exec (CLONE_VM, tracer/spawn.c): no copy of the supervisor's page tables
 * is made and neither side takes copy-on-write faults, which on a small VM
 * were a large part of a run's start-up. The price is that nothing here
 * may use libc's state: errno, malloc and stdio live in the supervisor's
 * thread, which runs meanwhile. Every call below is a system call made
 * directly (tracer/rawsys.h); results are -errno. Memory written: the
 * child's own stack, and sh_argv[1] of its arguments.
 */

CR_CHILD_CODE static __attribute__((noreturn)) void die(int code)
{
	for (;;)
		CR_RAW1(SYS_exit_group, code);
}

CR_CHILD_CODE static __attribute__((noreturn)) void fail(const struct cr_child_args *a,
					   int stage, long rc)
{
	struct cr_child_msg m = { .stage = stage, .err = (int)-rc, .fd = -1 };

	/* Nothing more to tell if this fails: the parent sees EOF. */
	CR_RAW3(SYS_write, a->report_fd, &m, sizeof(m));
	die(CR_EXIT_NOT_FOUND);
}

/* Nothing of the supervisor's signal state reaches the program: every
 * disposition back to default (a zeroed kernel sigaction is SIG_DFL on
 * every ABI), nothing blocked. */
CR_CHILD_CODE static void reset_signals(void)
{
	unsigned long act[4] = { 0, 0, 0, 0 };
	uint64_t none = 0;

	for (int s = 1; s < 65; s++)
		CR_RAW4(SYS_rt_sigaction, s, act, 0, sizeof(none));
	CR_RAW4(SYS_rt_sigprocmask, SIG_SETMASK, &none, 0, sizeof(none));
}

/*
 * No controlling terminal for the program, so none to type into (TIOCSTI
 * needs the caller's own terminal) or to be signalled through, and a
 * process group of its own (group signals reach only the run).
 *
 * Not setsid(): a new session puts the program in a scheduler autogroup of
 * its own, apart from the supervisor, and then every notification migrates
 * both between the CPUs (measured: 1.26 migrations a call, 26 us instead of
 * 15-16 us; docs/performance.md). TIOCNOTTY from a process that does not
 * lead its session drops that process's terminal and nothing else. Only if
 * that cannot be done (a terminal that cannot be opened for another reason
 * than not having one) does the program get a new session as before.
 */
CR_CHILD_CODE static long leave_terminal(void)
{
	long fd = CR_RAW4(SYS_openat, AT_FDCWD, "/dev/tty",
			  O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0);
	long rc = 0;

	if (fd >= 0) {
		rc = CR_RAW3(SYS_ioctl, fd, TIOCNOTTY, 0);
		CR_RAW1(SYS_close, fd);
	} else if (fd != -ENXIO) {
		rc = -1;	/* unsure: a terminal may still be ours */
	}
	if (rc < 0) {
		rc = CR_RAW0(SYS_setsid);
		return rc < 0 ? rc : 0;
	}
	return CR_RAW2(SYS_setpgid, 0, 0);
}

/* The three ends become 0, 1 and 2. An end that already sits on 0-2 (the
 * supervisor was started with a standard fd closed) is first moved above,
 * so no dup3 overwrites an end still to be placed. */
CR_CHILD_CODE static long std_fds(const struct cr_child_args *a)
{
	long fd[3] = { a->in_fd, a->out_fd, a->err_fd };

	for (int i = 0; i < 3; i++)
		if (fd[i] < 3) {
			fd[i] = CR_RAW3(SYS_fcntl, fd[i], F_DUPFD_CLOEXEC, 3);
			if (fd[i] < 0)
				return fd[i];
		}
	for (int i = 0; i < 3; i++) {
		long rc = CR_RAW3(SYS_dup3, fd[i], i, 0);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Close every fd from 3 up except the few the child still needs; those are
 * O_CLOEXEC, so exec closes them too. (-1, no ruleset, sorts first and is
 * skipped.) */
CR_CHILD_CODE static long close_others(const struct cr_child_args *a)
{
	int keep[] = { a->report_fd, a->go_fd, a->ws_fd, a->landlock_fd };
	unsigned lo = 3;
	long rc;

	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			if (keep[j] < keep[i]) {
				int t = keep[i];

				keep[i] = keep[j];
				keep[j] = t;
			}
	for (int i = 0; i < 4; i++) {
		if (keep[i] < 0)
			continue;
		if ((unsigned)keep[i] > lo &&
		    (rc = CR_RAW3(SYS_close_range, lo, (unsigned)keep[i] - 1, 0)) < 0)
			return rc;
		if ((unsigned)keep[i] + 1 > lo)
			lo = (unsigned)keep[i] + 1;
	}
	rc = CR_RAW3(SYS_close_range, lo, ~0U, 0);
	return rc < 0 ? rc : 0;
}

/* The working directory must stay inside the workspace even if the
 * workspace holds symlinks made by an earlier run. */
CR_CHILD_CODE static long enter_cwd(const struct cr_child_args *a)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd, rc;

	if (!a->cwd || !a->cwd[0]) {
		rc = CR_RAW1(SYS_fchdir, a->ws_fd);
		return rc < 0 ? rc : 0;
	}
	fd = CR_RAW4(SYS_openat2, a->ws_fd, a->cwd, &how, sizeof(how));
	if (fd < 0)
		return fd;
	rc = CR_RAW1(SYS_fchdir, fd);
	CR_RAW1(SYS_close, fd);
	return rc < 0 ? rc : 0;
}

CR_CHILD_CODE static long prctl5(long op, long a2, long a3)
{
	return CR_RAW5(SYS_prctl, op, a2, a3, 0, 0);
}

/*
 * As root (or with any capability), make the child hold none. With
 * CAP_SETPCAP (root has it): lock the securebits so exec as uid 0 cannot
 * regain capabilities, and empty the bounding set. Then empty the ambient
 * and process sets, and verify. Without CAP_SETPCAP the bounding set cannot
 * be touched; no_new_privs (set before) already stops exec from granting
 * anything beyond the (now empty) permitted set.
 */
CR_CHILD_CODE static long drop_capabilities(unsigned ncaps)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	bool setpcap;
	long rc;

	memset(d, 0, sizeof(d));
	rc = CR_RAW2(SYS_capget, &h, d);
	if (rc < 0)
		return rc;
	setpcap = d[CAP_TO_INDEX(CAP_SETPCAP)].effective &
		  CAP_TO_MASK(CAP_SETPCAP);
	if (setpcap) {
		rc = prctl5(PR_SET_SECUREBITS,
			    SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
			    SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
			    SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
			    SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0);
		if (rc < 0)
			return rc;
		for (unsigned c = 0; c < ncaps; c++) {
			rc = prctl5(PR_CAPBSET_DROP, c, 0);
			if (rc < 0 && rc != -EINVAL)
				return rc;
		}
	}
	rc = prctl5(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0);
	if (rc < 0)
		return rc;
	memset(d, 0, sizeof(d));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	h.pid = 0;
	rc = CR_RAW2(SYS_capset, &h, d);
	if (rc < 0)
		return rc;
	for (unsigned c = 0; c < ncaps; c++)
		if ((setpcap && prctl5(PR_CAPBSET_READ, c, 0) == 1) ||
		    prctl5(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c) == 1)
			return -EPERM;
	rc = CR_RAW2(SYS_capget, &h, d);
	if (rc < 0)
		return rc;
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			return -EPERM;
	return 0;
}

/* One candidate; a file that is no executable format runs under /bin/sh
 * with the same arguments, as libc's execvpe does. Returns only on
 * failure, with -errno of the last attempt. */
CR_CHILD_CODE static long try_exec(struct cr_child_args *a, char *path)
{
	long rc = CR_RAW3(SYS_execve, path, a->argv, a->envp);

	if (rc == -ENOEXEC) {
		a->sh_argv[1] = path;
		rc = CR_RAW3(SYS_execve, a->sh_argv[0], a->sh_argv, a->envp);
	}
	return rc;
}

/* execvpe's answer: a named file's own error; in a PATH search, the
 * candidates in order past the "not here" errors, EACCES if any candidate
 * was refused, else the last error. */
CR_CHILD_CODE static __attribute__((noreturn)) void exec_program(struct cr_child_args *a)
{
	bool eacces = false;
	long rc = -ENOENT;

	if (a->exec_err)
		fail(a, CR_ST_EXEC, -a->exec_err);
	for (size_t i = 0; i < a->npaths; i++) {
		rc = try_exec(a, a->paths[i]);
		if (!a->search)
			break;
		if (rc == -EACCES)
			eacces = true;
		else if (rc != -ENOENT && rc != -ESTALE && rc != -ENOTDIR &&
			 rc != -ENODEV && rc != -ETIMEDOUT)
			break;
		if (i + 1 == a->npaths && eacces)
			rc = -EACCES;
	}
	fail(a, CR_ST_EXEC, rc);
}

CR_CHILD_CODE void cr_child_main(struct cr_child_args *a)
{
	struct cr_child_msg m = { .stage = CR_ST_READY };
	long rc, lfd;
	char go;

	reset_signals();
	/* If the supervisor dies before the seize, take the child with it. */
	if (prctl5(PR_SET_PDEATHSIG, SIGKILL, 0) < 0 ||
	    CR_RAW0(SYS_getppid) != a->parent)
		die(CR_EXIT_USAGE);
	if ((rc = leave_terminal()) < 0)
		fail(a, CR_ST_SESSION, rc);
	if ((rc = std_fds(a)) < 0 || (rc = close_others(a)) < 0)
		fail(a, CR_ST_FDS, rc);
	if ((rc = enter_cwd(a)) < 0)
		fail(a, CR_ST_CWD, rc);
	CR_RAW1(SYS_close, a->ws_fd);

	/* The caller's umask (the supervisor runs with 0 and applies the
	 * program's by hand to what it creates). */
	CR_RAW1(SYS_umask, a->umask);
	/* A real-time policy of the caller's (chrt -f) is not passed on: the
	 * program's FIFO threads would hold the supervisor and its watchdog,
	 * at the same priority, off their CPUs past every budget (found by
	 * a probing session: wall=1s ran 5 s, cpu=500ms took 8 s). Lowering
	 * a policy needs no privilege; the caller's nice value stays. */
	rc = CR_RAW1(SYS_sched_getscheduler, 0);
	if (rc >= 0 && ((rc & ~(long)SCHED_RESET_ON_FORK) == SCHED_FIFO ||
			(rc & ~(long)SCHED_RESET_ON_FORK) == SCHED_RR)) {
		struct sched_param sp = { .sched_priority = 0 };

		rc = CR_RAW3(SYS_sched_setscheduler, 0, SCHED_OTHER, &sp);
		if (rc < 0)
			fail(a, CR_ST_RLIMIT, rc);
	}
	/* No core dumps (they would write the program's memory into its
	 * cwd), no nice value below the one it starts with (tasks.c may
	 * lower the tree's priority for good), no real-time policy, and the
	 * budgets' per-process backstops. */
	for (size_t i = 0; i < a->nrlim; i++)
		if ((rc = CR_RAW4(SYS_prlimit64, 0, a->rlim[i].resource,
				  &a->rlim[i].lim, 0)) < 0)
			fail(a, CR_ST_RLIMIT, rc);

	if ((rc = prctl5(PR_SET_NO_NEW_PRIVS, 1, 0)) < 0)
		fail(a, CR_ST_NNP, rc);
	if (a->drop_caps && (rc = drop_capabilities(a->ncaps)) < 0)
		fail(a, CR_ST_CAPS, rc);
	/* After no_new_privs (Landlock needs it without CAP_SYS_ADMIN) and
	 * before the seccomp filter (which would notify nothing here, but
	 * the order keeps the filter the last thing set up). The domain is
	 * inherited by every task of the run, across fork and exec. */
	if (a->landlock_fd >= 0) {
		rc = CR_RAW2(SYS_landlock_restrict_self, a->landlock_fd, 0);
		if (rc < 0)
			fail(a, CR_ST_LANDLOCK, rc);
		CR_RAW1(SYS_close, a->landlock_fd);
	}

	m.flags = a->seccomp_flags;
	lfd = CR_RAW3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, m.flags, &a->prog);
	/* Kernels before 5.19 lack WAIT_KILLABLE_RECV: try without it
	 * rather than paying for a probe on every run. */
	if (lfd == -EINVAL &&
	    (m.flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)) {
		m.flags &= ~(unsigned)SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
		lfd = CR_RAW3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, m.flags,
			      &a->prog);
	}
	if (lfd < 0)
		fail(a, CR_ST_SECCOMP, lfd);

	/* The supervisor takes the listener with pidfd_getfd while we wait;
	 * only write, read and prctl run between the filter and exec, and
	 * none is intercepted. */
	m.fd = (int)lfd;
	if (CR_RAW3(SYS_write, a->report_fd, &m, sizeof(m)) != sizeof(m) ||
	    CR_RAW3(SYS_read, a->go_fd, &go, 1) != 1)
		die(CR_EXIT_USAGE);
	/* Seized by now (PTRACE_O_EXITKILL takes the tree with a dying
	 * supervisor): the death signal goes, or the program would find
	 * corral's PR_SET_PDEATHSIG for its whole life (PR_GET_PDEATHSIG
	 * answered 9 where natively 0). */
	if (prctl5(PR_SET_PDEATHSIG, 0, 0) < 0)
		die(CR_EXIT_USAGE);
	/* The program must never hold its own listener: it could answer its
	 * own notifications. */
	CR_RAW1(SYS_close, lfd);
	exec_program(a);
}
