/* tracer/spawn.c: creates the sandboxed child (tracer/child.c runs it to
 * exec): its pipes, arguments and stack, the ptrace seize, the listener. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <paths.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tracer.h"
#include "budget/budget.h"
#include "child.h"
#include "handlers/handlers.h"
#include "rawsys.h"

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
/* Debian 12's headers predate these (Linux 6.6). */
#define CR_USER_NOTIF_FD_SYNC_WAKE_UP 1ULL
#define CR_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)

/* The child's stack: its deepest frame is a few hundred bytes. */
#define CHILD_STACK (64u * 1024)

static const char *stage_name(int st)
{
	switch (st) {
	case CR_ST_SESSION: return "starting a new session";
	case CR_ST_FDS: return "setting up standard fds";
	case CR_ST_CWD: return "entering the working directory";
	case CR_ST_NNP: return "setting no_new_privs";
	case CR_ST_CAPS: return "dropping capabilities";
	case CR_ST_LANDLOCK: return "applying the Landlock ruleset";
	case CR_ST_RLIMIT: return "setting resource limits";
	case CR_ST_SECCOMP: return "installing the seccomp filter";
	case CR_ST_EXEC: return "executing the command";
	default: return "starting the child";
	}
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

static int read_msg(int fd, struct cr_child_msg *m, int timeout_ms)
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

static const char *env_path(char *const *envp)
{
	for (; envp && *envp; envp++)
		if (!strncmp(*envp, "PATH=", 5))
			return *envp + 5;
	return NULL;
}

/*
 * execvpe, decided before the child exists (it cannot allocate): the
 * candidates libc's execvpe would try, in its order. A name with a slash
 * is the one candidate; otherwise each element of the program's PATH
 * (its environment's, not ours; libc's default when it has none), an
 * empty element meaning the working directory.
 *
 * The arguments, candidates, /bin/sh's argument list and their strings go
 * at the top of one mapping whose rest is the child's stack (a guard page
 * at the bottom): the child reads them until its exec, so they live until
 * the run ends (run->child_mem).
 */
static struct cr_child_args *child_mem(struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;
	const char *file = cfg->argv[0];
	const char *path = env_path(cfg->envp);
	size_t flen = strlen(file), argc = 0, n = 1, need, len;
	bool search = !strchr(file, '/');
	struct cr_child_args *a;
	char *p, *mem, **paths;

	if (!path)
		path = "/bin:/usr/bin";
	while (cfg->argv[argc])
		argc++;
	if (search)
		for (const char *c = path; *c; c++)
			n += *c == ':';
	need = sizeof(*a) + (n + argc + 2) * sizeof(char *) +
	       (search ? strlen(path) + n * (flen + 2) : 0);
	need = (need + 4095) & ~(size_t)4095;
	len = 4096 + CHILD_STACK + need;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	if (mprotect(mem, 4096, PROT_NONE) < 0) {
		munmap(mem, len);
		return NULL;
	}
	run->child_mem = mem;
	run->child_mem_len = len;
	a = (struct cr_child_args *)(mem + len - need);
	a->argv = cfg->argv;
	a->envp = cfg->envp;
	a->sh_argv = (char **)(a + 1);
	a->sh_argv[0] = (char *)_PATH_BSHELL;
	a->sh_argv[1] = NULL;	/* the candidate, set by the child */
	for (size_t i = 1; i <= argc; i++)
		a->sh_argv[i + 1] = cfg->argv[i];	/* and the NULL */
	paths = a->sh_argv + argc + 2;
	a->paths = paths;
	a->search = search;
	if (!*file) {
		a->exec_err = ENOENT;
		return a;
	}
	if (!search) {
		paths[a->npaths++] = (char *)file;
		return a;
	}
	if (flen > NAME_MAX) {
		a->exec_err = ENAMETOOLONG;
		return a;
	}
	p = (char *)(paths + n);
	for (const char *e = path;; ) {
		size_t el = strcspn(e, ":");

		if (el < PATH_MAX) {
			paths[a->npaths++] = p;
			memcpy(p, e, el);
			p += el;
			if (el)
				*p++ = '/';
			memcpy(p, file, flen + 1);
			p += flen + 1;
		}
		if (!e[el])
			break;
		e += el + 1;
	}
	return a;
}

#if CR_RAWSYS_SHARED_VM
CR_CHILD_CODE static int child_entry(void *arg)
{
	cr_child_main(arg);
}
#endif

/*
 * The child shares our memory until its exec (CLONE_VM, as posix_spawn's
 * child does): no page tables are copied, and neither side takes a
 * copy-on-write fault on every page it touches afterwards. Measured on
 * `corral run -- /bin/true`: docs/performance.md. Where tracer/rawsys.h
 * has no direct system calls, a plain fork.
 */
static pid_t start_child(struct cr_child_args *a, void *stack_top, int *pidfd)
{
#if CR_RAWSYS_SHARED_VM
	return clone(child_entry, stack_top,
		     CLONE_VM | CLONE_PIDFD | SIGCHLD, a, pidfd);
#else
	pid_t pid = fork();

	(void)stack_top;
	if (pid == 0)
		cr_child_main(a);
	if (pid > 0) {
		*pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (*pidfd < 0) {
			int e = errno;

			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
				;
			errno = e;
			return -1;
		}
	}
	return pid;
#endif
}

int cr_spawn(struct cr_run *run, const struct cr_filter *f,
	     void (*meanwhile)(struct cr_run *))
{
	struct cr_run_config *cfg = run->cfg;
	bool drop_caps = holds_capabilities();
	int rep[2] = { -1, -1 }, go[2] = { -1, -1 };
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int in_fd = -1, ws_fd, rc = 0, feeder = -1;
	struct cr_child_args *a;
	struct cr_child_msg m;
	pid_t pid;

	ws_fd = cr_workspace_fd(cfg);	/* the directory judged */
	if (ws_fd < 0)
		return ws_fd;
	if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 ||
	    pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	rc = open_stdin(run, &in_fd, &feeder);
	if (rc)
		goto out;
	/* `corral run ... </dev/zero` hands the run a /dev/zero, a socket
	 * as stdin may bring one from its peer, and a read-only open the
	 * kernel decides may make one (handlers/kmem.c). */
	if (cr_is_dev_zero(in_fd) || cr_is_socket(in_fd) ||
	    run->fast_path >= CR_FAST_OPEN)
		run->zero_reachable = true;
	a = child_mem(run);
	if (!a) {
		rc = -ENOMEM;
		goto out;
	}
	a->parent = getpid();
	a->in_fd = in_fd;
	a->out_fd = outp[1];
	a->err_fd = errp[1];
	a->report_fd = rep[1];
	a->go_fd = go[0];
	a->ws_fd = ws_fd;
	a->landlock_fd = run->landlock_fd;
	a->cwd = cfg->cwd;
	a->umask = run->caller_umask;
	a->rlim[0] = (struct cr_child_rlimit){ RLIMIT_CORE, { 0, 0 } };
	/* The program's descriptor limit is the caller's, not the one
	 * corral raised for itself (run.c; unknown there: not raised). */
	a->rlim[1] = (struct cr_child_rlimit){ RLIMIT_NOFILE,
					       run->caller_nofile };
	if (run->caller_nofile.rlim_cur == RLIM_INFINITY &&
	    getrlimit(RLIMIT_NOFILE, &a->rlim[1].lim) < 0) {
		rc = -errno;
		goto out;
	}
	/* No nice value below its own: a tree tasks.c lowers stays low. */
	a->rlim[2] = (struct cr_child_rlimit){ RLIMIT_NICE, { 0, 0 } };
	/* No real-time policy (child.c leaves the caller's): a FIFO thread
	 * holds the supervisor off its CPU at any priority not above its
	 * own. */
	a->rlim[3] = (struct cr_child_rlimit){ RLIMIT_RTPRIO, { 0, 0 } };
	a->nrlim = 4 + cr_budget_child_rlimits(&cfg->limits, cfg->data_backstop,
						 a->rlim + 4);
	a->drop_caps = drop_caps;
	a->ncaps = drop_caps ? (unsigned)cap_max_bits() : 0;
	/* A task that has received a notification waits killably, so a
	 * non-fatal signal cannot make it restart a call the supervisor has
	 * already performed for it. */
	a->seccomp_flags = SECCOMP_FILTER_FLAG_NEW_LISTENER |
			   SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
	a->prog.len = (unsigned short)f->len;
	a->prog.filter = f->bpf;

	pid = start_child(a, a, &run->child_pidfd);
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	run->child = pid;
	/* Seize before the child may exec: every task it ever creates is
	 * then traced from birth (TRACEFORK/VFORK/CLONE), and all of them die
	 * with the supervisor (EXITKILL). */
	if (ptrace(PTRACE_SEIZE, pid, 0,
		   PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
		   PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
		   PTRACE_O_TRACEEXIT | PTRACE_O_TRACESYSGOOD) < 0) {
		rc = -errno;
		/* A child that failed at once (its cwd unreachable, say)
		 * may be exiting or gone before the seize (EPERM, ESRCH):
		 * its own report says why, not ptrace. One that reports
		 * ready was refused by ptrace indeed. */
		close(rep[1]);
		rep[1] = -1;
		if (read_msg(rep[0], &m, 1000) == 0 && m.stage != CR_ST_READY) {
			snprintf(run->message, sizeof(run->message),
				 "the child failed %s: %s", stage_name(m.stage),
				 strerror(m.err));
			rc = -m.err;
			goto kill;
		}
		snprintf(run->message, sizeof(run->message),
			 "cannot trace the child (%s): ptrace is restricted on this host (Yama ptrace_scope 3, or a seccomp profile refusing ptrace)",
			 strerror(-rc));
		goto kill;
	}
	close(rep[1]);
	rep[1] = -1;
	cr_stream_init(&run->out, outp[0], cfg->json ? -1 : 1);
	cr_stream_init(&run->err, errp[0], cfg->json ? -1 : 2);
	outp[0] = errp[0] = -1;
	/* The child installs its filter now (~0.5 ms, docs/performance.md). */
	rc = read_msg(rep[0], &m, 10000);
	if (!rc && m.stage != CR_ST_READY) {
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
	run->killable_recv = (m.flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) != 0;
	run->near_addfd = ioctl(run->listener, CR_IOCTL_NOTIF_SET_FLAGS,
				(unsigned long)CR_USER_NOTIF_FD_SYNC_WAKE_UP) == 0 &&
			  (m.flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) &&
			  cr_notif_near_possible();
	/* What is really on, read from the kernel while the child waits
	 * with its filter, before any of the program runs; --require
	 * refuses here (tracer/assurance/). */
	run->filter = f;
	rc = cr_assurance_observe(run, pid, m.flags);
	if (rc)
		goto kill;
	/* Into the table (its pidfd, its start time from /proc/PID/stat)
	 * while it still waits: once it runs, its execve holds the locks a
	 * read of its /proc files waits on, and the exec's own notification
	 * waits for this thread (the loop's stand-in answered it ~12 ms
	 * later; w6 measured +18 ms a run). */
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
	/* The helper threads start only now, the child waiting with its
	 * filter: started while it set itself up, in the memory it shares
	 * with us until its exec, they held the read of its /proc status
	 * back 12-17 ms in some runs (without Landlock, with no descriptor
	 * inherited past stderr, and enough roots: w6 measured +18 ms a run
	 * against +4; what exactly contends was not pinned down). Still
	 * before the program runs. */
	if (meanwhile)
		meanwhile(run);
	if (write(go[1], "g", 1) != 1) {
		rc = -errno;
		goto kill;
	}
	/* As root, the supervisor gives up its own capabilities too: it acts
	 * on files for the program, so it must meet the same permission
	 * checks the program would (CAP_DAC_OVERRIDE would let it read a
	 * 0600 file inside a read root). Tracing our own uid needs none. */
	if (drop_caps) {
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
			      errp[0], errp[1], in_fd, ws_fd, feeder };

		for (size_t i = 0; i < CR_ARRAY_SIZE(fds); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	return rc;
}
