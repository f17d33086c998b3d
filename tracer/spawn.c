/* tracer/spawn.c: creates the sandboxed child (session, fds, environment,
 * no_new_privs, capabilities, seccomp listener, ptrace seize) and execs it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/securebits.h>

#include "tracer.h"
#include "budget.h"
#include "landlock/landlock.h"

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
/* Debian 12's headers predate these (Linux 6.6). */
#define CR_USER_NOTIF_FD_SYNC_WAKE_UP 1ULL
#define CR_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Stages the child reports on its pipe; READY carries the listener fd. */
enum child_stage {
	ST_READY = 1,
	ST_SESSION,
	ST_FDS,
	ST_CWD,
	ST_NNP,
	ST_CAPS,
	ST_LANDLOCK,
	ST_RLIMIT,
	ST_SECCOMP,
	ST_EXEC,
};

struct child_msg {
	int stage;
	int err;	/* positive errno, 0 for READY */
	int fd;		/* the listener's number in the child, for READY */
	unsigned flags;	/* the seccomp filter flags the kernel took */
};

static const char *stage_name(int st)
{
	switch (st) {
	case ST_SESSION: return "starting a new session";
	case ST_FDS: return "setting up standard fds";
	case ST_CWD: return "entering the working directory";
	case ST_NNP: return "setting no_new_privs";
	case ST_CAPS: return "dropping capabilities";
	case ST_LANDLOCK: return "applying the Landlock ruleset";
	case ST_RLIMIT: return "setting resource limits";
	case ST_SECCOMP: return "installing the seccomp filter";
	case ST_EXEC: return "executing the command";
	default: return "starting the child";
	}
}

struct child_args {
	const struct cr_run_config *cfg;
	const struct cr_filter *filter;
	pid_t parent;
	int in_fd, out_fd, err_fd;	/* become 0, 1, 2 */
	int report_fd;			/* child -> parent */
	int go_fd;			/* parent -> child */
	int ws_fd;			/* the workspace, O_PATH */
	int landlock_fd;		/* the ruleset, or -1 */
	bool drop_caps;
	unsigned seccomp_flags;
	mode_t umask;			/* the caller's, for the program */
};

static __attribute__((noreturn)) void child_fail(const struct child_args *a,
						 int stage, int err)
{
	struct child_msg m = { .stage = stage, .err = err, .fd = -1 };

	if (write(a->report_fd, &m, sizeof(m)) < 0) {
		/* nothing more to tell: the parent sees EOF */
	}
	_exit(CR_EXIT_NOT_FOUND);
}

static int close_others(const struct child_args *a)
{
	int keep[] = { a->report_fd, a->go_fd, a->ws_fd, a->landlock_fd };
	unsigned lo = 3;

	/* Close every fd from 3 up except the few the child still needs;
	 * those are O_CLOEXEC, so exec closes them too. Sorting four numbers
	 * by hand keeps this free of allocation (-1, no ruleset, sorts
	 * first and is skipped). */
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
		    syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0) < 0)
			return -errno;
		if ((unsigned)keep[i] + 1 > lo)
			lo = (unsigned)keep[i] + 1;
	}
	if (syscall(SYS_close_range, lo, ~0U, 0) < 0)
		return -errno;
	return 0;
}

/* As root (or with any capability), make the child hold none. With
 * CAP_SETPCAP (root has it): lock the securebits so exec as uid 0 cannot
 * regain capabilities, and empty the bounding set. Then empty the ambient
 * and process sets, and verify. Without CAP_SETPCAP the bounding set cannot
 * be touched; no_new_privs (set before) already stops exec from granting
 * anything beyond the (now empty) permitted set. */
static int drop_capabilities(void)
{
	cap_flag_value_t setpcap = CAP_CLEAR;
	cap_t cur = cap_get_proc(), none;
	int rc = 0;

	if (!cur)
		return -errno;
	cap_get_flag(cur, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
	cap_free(cur);
	if (setpcap == CAP_SET) {
		if (cap_set_secbits(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
				    SECBIT_NO_SETUID_FIXUP |
				    SECBIT_NO_SETUID_FIXUP_LOCKED |
				    SECBIT_KEEP_CAPS_LOCKED |
				    SECBIT_NO_CAP_AMBIENT_RAISE |
				    SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
			return -errno;
		for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++)
			if (cap_drop_bound(c) < 0 && errno != EINVAL)
				return -errno;
	}
	if (cap_reset_ambient() < 0)
		return -errno;
	none = cap_init();
	if (!none)
		return -ENOMEM;
	if (cap_set_proc(none) < 0)
		rc = -errno;
	cap_free(none);
	if (rc)
		return rc;
	for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++)
		if ((setpcap == CAP_SET && prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1) ||
		    cap_get_ambient(c) == 1)
			return -EPERM;
	cur = cap_get_proc();
	if (!cur)
		return -errno;
	rc = cap_compare(cur, none = cap_init()) ? -EPERM : 0;
	cap_free(cur);
	cap_free(none);
	return rc;
}

static int enter_cwd(const struct child_args *a)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (!a->cfg->cwd || !a->cfg->cwd[0])
		return fchdir(a->ws_fd) < 0 ? -errno : 0;
	/* The working directory must stay inside the workspace even if the
	 * workspace holds symlinks made by an earlier run. */
	fd = (int)syscall(SYS_openat2, a->ws_fd, a->cfg->cwd, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	if (fchdir(fd) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	return 0;
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
static int leave_terminal(void)
{
	int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	int rc = 0;

	if (fd >= 0) {
		rc = ioctl(fd, TIOCNOTTY);
		close(fd);
	} else if (errno != ENXIO) {
		rc = -1;	/* unsure: a terminal may still be ours */
	}
	if (rc < 0)
		return setsid() < 0 ? -1 : 0;
	return setpgid(0, 0);
}

static __attribute__((noreturn)) void child_main(const struct child_args *a)
{
	extern char **environ;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	struct rlimit no_core = { 0, 0 };
	struct sock_fprog prog = {
		.len = a->filter->len,
		.filter = a->filter->bpf,
	};
	struct child_msg m = { .stage = ST_READY };
	char go;
	int rc, lfd;
	sigset_t all;

	/* Nothing of the supervisor's signal state leaks into the program. */
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);

	/* If the supervisor dies before the seize, take the child with it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != a->parent)
		_exit(CR_EXIT_USAGE);
	if (leave_terminal() < 0)
		child_fail(a, ST_SESSION, errno);

	if (dup2(a->in_fd, 0) < 0 || dup2(a->out_fd, 1) < 0 ||
	    dup2(a->err_fd, 2) < 0)
		child_fail(a, ST_FDS, errno);
	rc = close_others(a);
	if (rc)
		child_fail(a, ST_FDS, -rc);

	rc = enter_cwd(a);
	if (rc)
		child_fail(a, ST_CWD, -rc);
	close(a->ws_fd);

	/* The caller's umask (the supervisor runs with 0 and applies the
	 * program's by hand to what it creates). */
	umask(a->umask);
	/* Core dumps would write the program's memory into its cwd. */
	if (setrlimit(RLIMIT_CORE, &no_core) < 0)
		child_fail(a, ST_RLIMIT, errno);
	/* Budgets: per-process backstops (tracer/budget.c). */
	rc = cr_budget_child_rlimits(&a->cfg->limits);
	if (rc)
		child_fail(a, ST_RLIMIT, -rc);

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(a, ST_NNP, errno);
	if (a->drop_caps) {
		rc = drop_capabilities();
		if (rc)
			child_fail(a, ST_CAPS, -rc);
	}
	/* After no_new_privs (Landlock needs it without CAP_SYS_ADMIN) and
	 * before the seccomp filter (which would notify nothing here, but
	 * the order keeps the filter the last thing set up). The domain is
	 * inherited by every task of the run, across fork and exec. */
	if (a->landlock_fd >= 0) {
		rc = cr_landlock_child_apply(a->landlock_fd);
		if (rc)
			child_fail(a, ST_LANDLOCK, -rc);
	}

	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			   a->seccomp_flags, &prog);
	/* Kernels before 5.19 lack WAIT_KILLABLE_RECV: try without it
	 * rather than paying for a probe fork on every run. */
	m.flags = a->seccomp_flags;
	if (lfd < 0 && errno == EINVAL &&
	    (a->seccomp_flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)) {
		m.flags &= ~SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
		lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				   m.flags, &prog);
	}
	if (lfd < 0)
		child_fail(a, ST_SECCOMP, errno);

	/* The supervisor takes the listener with pidfd_getfd while we wait;
	 * only write and read run between the filter and exec, and neither is
	 * intercepted. */
	m.fd = lfd;
	if (write(a->report_fd, &m, sizeof(m)) != sizeof(m))
		_exit(CR_EXIT_USAGE);
	if (read(a->go_fd, &go, 1) != 1)
		_exit(CR_EXIT_USAGE);
	/* The program must never hold its own listener: it could answer its
	 * own notifications. */
	close(lfd);

	environ = a->cfg->envp;
	execvpe(a->cfg->argv[0], a->cfg->argv, a->cfg->envp);
	child_fail(a, ST_EXEC, errno);
}

/* "Holds a capability": any in the permitted, effective, inheritable or
 * ambient sets. An ordinary user's full bounding set is not holding one (and
 * cannot be emptied without CAP_SETPCAP). */
static bool holds_capabilities(void)
{
	cap_t c = cap_get_proc();
	cap_t none = cap_init();
	bool any = true;

	if (c && none)
		any = cap_compare(c, none) != 0;
	cap_free(c);
	cap_free(none);
	for (cap_value_t v = 0; !any && v < (cap_value_t)cap_max_bits(); v++)
		if (cap_get_ambient(v) == 1)
			any = true;
	return any;
}

static int read_msg(int fd, struct child_msg *m, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, timeout_ms) <= 0)
		return -ETIMEDOUT;
	n = read(fd, m, sizeof(*m));
	if (n == 0)
		return -EPIPE;
	if (n != sizeof(*m))
		return n < 0 ? -errno : -EIO;
	return 0;
}

static int open_stdin(const struct cr_run *run, int *child_end, int *feeder)
{
	const struct cr_run_config *cfg = run->cfg;
	int p[2];

	*feeder = -1;
	if (cfg->stdin_text) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		if (fcntl(p[1], F_SETFL, O_NONBLOCK) < 0) {
			close(p[0]);
			close(p[1]);
			return -errno;
		}
		*child_end = p[0];
		*feeder = p[1];
		return 0;
	}
	/* A terminal stays with the user: the program gets /dev/null rather
	 * than a way to read (or, with TIOCSTI, type into) their session. A
	 * closed fd 0 becomes /dev/null too. */
	if (fcntl(0, F_GETFD) < 0 || isatty(0)) {
		*child_end = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return *child_end < 0 ? -errno : 0;
	}
	*child_end = fcntl(0, F_DUPFD_CLOEXEC, 3);
	return *child_end < 0 ? -errno : 0;
}

int cr_spawn(struct cr_run *run, const struct cr_filter *f)
{
	struct cr_run_config *cfg = run->cfg;
	struct child_args a = {
		.cfg = cfg,
		.filter = f,
		.parent = getpid(),
		.drop_caps = holds_capabilities(),
		/* A task that has received a notification waits
		 * killably, so a non-fatal signal cannot make it restart a
		 * call the supervisor has already performed for it. */
		.seccomp_flags = SECCOMP_FILTER_FLAG_NEW_LISTENER |
				 SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
	};
	int rep[2] = { -1, -1 }, go[2] = { -1, -1 };
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	struct child_msg m;
	int rc = 0, feeder = -1;
	pid_t pid;

	a.in_fd = a.out_fd = a.err_fd = a.ws_fd = -1;
	a.landlock_fd = run->landlock_fd;
	a.umask = run->caller_umask;
	a.ws_fd = open(cfg->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (a.ws_fd < 0)
		return -errno;
	if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 ||
	    pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	rc = open_stdin(run, &a.in_fd, &feeder);
	if (rc)
		goto out;
	a.out_fd = outp[1];
	a.err_fd = errp[1];
	a.report_fd = rep[1];
	a.go_fd = go[0];

	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	if (pid == 0)
		child_main(&a);

	run->child = pid;
	run->child_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (run->child_pidfd < 0) {
		rc = -errno;
		goto kill;
	}
	/* Seize before the child may exec: every task it ever creates is
	 * then traced from birth (TRACEFORK/VFORK/CLONE), and all of them die
	 * with the supervisor (EXITKILL). */
	if (ptrace(PTRACE_SEIZE, pid, 0,
		   PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
		   PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
		   PTRACE_O_TRACEEXIT) < 0) {
		rc = -errno;
		snprintf(run->message, sizeof(run->message),
			 "cannot trace the child (%s): ptrace is restricted on this host (Yama ptrace_scope 3, or a seccomp profile refusing ptrace)",
			 strerror(-rc));
		goto kill;
	}
	close(rep[1]);
	rep[1] = -1;
	rc = read_msg(rep[0], &m, 10000);
	if (!rc && m.stage != ST_READY) {
		snprintf(run->message, sizeof(run->message),
			 "the child failed %s: %s", stage_name(m.stage),
			 strerror(m.err));
		rc = -m.err;
		goto kill;
	}
	if (rc) {
		snprintf(run->message, sizeof(run->message),
			 "the child did not report ready: %s", strerror(-rc));
		goto kill;
	}
	run->listener = (int)syscall(SYS_pidfd_getfd, run->child_pidfd, m.fd, 0);
	if (run->listener < 0) {
		rc = -errno;
		snprintf(run->message, sizeof(run->message),
			 "cannot take the seccomp listener (pidfd_getfd: %s): needs Linux 5.6+",
			 strerror(-rc));
		goto kill;
	}
	/* Wake the supervisor on the notifying task's CPU (Linux 6.6+): on
	 * a small VM, waking an idle second vCPU costs ~20 us each way
	 * (kernel-facts). Older kernels refuse the ioctl; nothing else
	 * changes. */
	/* The flags are the ioctl's argument itself, not a pointer. */
	ioctl(run->listener, CR_IOCTL_NOTIF_SET_FLAGS,
	      (unsigned long)CR_USER_NOTIF_FD_SYNC_WAKE_UP);
	/* What is really on, read from the kernel while the child waits
	 * with its filter, before any of the program runs; --require
	 * refuses here (tracer/assurance/). */
	run->filter = f;
	rc = cr_assurance_observe(run, pid, m.flags);
	if (rc)
		goto kill;
	if (write(go[1], "g", 1) != 1) {
		rc = -errno;
		goto kill;
	}
	/* As root, the supervisor gives up its own capabilities too: it acts
	 * on files for the program, so it must meet the same permission
	 * checks the program would (CAP_DAC_OVERRIDE would let it read a
	 * 0600 file inside a read root). Tracing our own uid needs none. */
	if (a.drop_caps) {
		cap_t none = cap_init();

		rc = none && cap_set_proc(none) == 0 ? 0 : -EPERM;
		cap_free(none);
		if (rc) {
			snprintf(run->message, sizeof(run->message),
				 "cannot drop the supervisor's capabilities");
			goto kill;
		}
	}
	run->execfd = rep[0];
	rep[0] = -1;
	run->stdin_fd = feeder;
	feeder = -1;
	cr_stream_init(&run->out, outp[0], cfg->json ? -1 : 1);
	cr_stream_init(&run->err, errp[0], cfg->json ? -1 : 2);
	outp[0] = errp[0] = -1;
	{
		struct cr_task *t = cr_tasks_add(&run->tasks, pid);

		if (!t) {
			rc = -ENOMEM;
			goto kill;
		}
		/* Seized, not auto-attached: it has no first stop to wait
		 * for. */
		t->initial = true;
		t->state = CR_TS_RUNNING;
	}
	goto out;

kill:
	/* Before the child execs nothing else exists: kill and reap it. */
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	run->child = 0;
out:
	{
		int fds[] = { rep[0], rep[1], go[0], go[1], outp[0], outp[1],
			      errp[0], errp[1], a.in_fd, a.ws_fd, feeder };

		for (size_t i = 0; i < CR_ARRAY_SIZE(fds); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	return rc;
}
