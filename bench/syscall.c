/* bench/syscall.c: per-call costs (getppid, stat, open+close, getdents, connect) and
 * the floor of the design, a bare seccomp-notify round trip with its own listener. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/*
 * usage: syscall MODE [-n CALLS] [-b BATCHES] [-p PATH] [-c PORT]
 *   MODE: getppid | stat | open | connect      run the call in this process
 *         getdents                             getdents64 of /usr (-p DIR)
 *         listing                              a whole listing of -p DIR: from
 *                                              offset 0, getdents64 of 32 KiB
 *                                              until it returns 0
 *                                              from offset 0, on one fd
 *         refused                              keyctl, refused by corral
 *         floor | floor-sync[-epoll|-poll] | floor-pinned
 *                                              getppid answered by our own
 *                                              seccomp listener in a parent
 *         floor-addfd                          openat answered with an fd
 *                                              opened by the parent (ADDFD)
 *         floor-sync-addfd                     the same with SYNC_WAKE_UP, in
 *                                              poll() as corral waits
 *         floor-sync-addfd-near                the same, the child's CPU mask
 *                                              narrowed to ours for the
 *                                              install (ADDFD, then SEND), as
 *                                              corral answers
 *         floor-sync-addfd-narrow              ADDFD|SEND under the narrowed
 *                                              mask, put back after
 *         floor-trace                          getppid stopped by SECCOMP_RET_TRACE
 *                                              and resumed by a ptrace parent
 *         floor-hop                            getppid received by one thread
 *                                              and answered by a worker thread
 *                                              (the cost of a handler pool)
 * Prints one JSON object: the median over batches of the mean ns per call,
 * and every batch's figure. Timing only: no verdict depends on it.
 */

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif

#define MAX_BATCHES 64
/* The floor child's last call carries this in every argument. */
#define FLOOR_END 0x5eed0000f1002ull

static long calls = 20000;
static int batches = 11;
static const char *path = "/etc/passwd";
static int port;

static void die(const char *what)
{
	fprintf(stderr, "syscall: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

enum op { OP_GETPPID, OP_STAT, OP_OPEN, OP_CONNECT, OP_REFUSED, OP_GETDENTS,
	  OP_LISTING };

static enum op op_of(const char *mode)
{
	if (!strcmp(mode, "stat"))
		return OP_STAT;
	if (!strcmp(mode, "open") || !strncmp(mode, "floor-addfd", 11) ||
	    !strncmp(mode, "floor-sync-addfd", 16))
		return OP_OPEN;
	if (!strcmp(mode, "connect"))
		return OP_CONNECT;
	if (!strcmp(mode, "refused"))
		return OP_REFUSED;
	if (!strcmp(mode, "getdents"))
		return OP_GETDENTS;
	if (!strcmp(mode, "listing"))
		return OP_LISTING;
	return OP_GETPPID;	/* getppid and the plain floors */
}

/* One call of the measured operation; returns 0 or -errno. */
static int one_call(enum op op, const struct sockaddr_in *sa, int lfd)
{
	switch (op) {
	case OP_GETPPID:
		return syscall(SYS_getppid) < 0 ? -errno : 0;
	case OP_REFUSED:
		/* keyctl(KEYCTL_GET_KEYRING_ID, 0, 0): on corral's refused
		 * list, so under corral every call is a full trip through its
		 * notification path (loop, table, denial record, answer);
		 * natively a cheap error. Either result is expected. */
		syscall(SYS_keyctl, 0, 0, 0, 0, 0);
		return 0;
	case OP_STAT: {
		struct stat st;

		return stat(path, &st) < 0 ? -errno : 0;
	}
	case OP_GETDENTS: {
		/* One listing call of a small directory from its start; the
		 * lseek is not intercepted, so it is one notification. */
		static int dfd = -1;
		static char buf[32768];

		if (dfd < 0 && (dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return -errno;
		if (lseek(dfd, 0, SEEK_SET) < 0)
			return -errno;
		return syscall(SYS_getdents64, dfd, buf, sizeof(buf)) <= 0 ? -EIO : 0;
	}
	case OP_LISTING: {
		/* What readdir does to the end (glibc's buffer is 32 KiB):
		 * a notification per call, the last one returning 0. */
		static int dfd = -1;
		static char buf[32768];
		long r;

		if (dfd < 0 && (dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return -errno;
		if (lseek(dfd, 0, SEEK_SET) < 0)
			return -errno;
		while ((r = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0)
			;
		return r < 0 ? -errno : 0;
	}
	case OP_OPEN: {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	}
	case OP_CONNECT: {
		/* One client connection: socket, connect, and (on our own
		 * listener) accept; closed with RST (linger 0) so no
		 * TIME_WAIT piles up across thousands of calls. */
		struct linger lg = { 1, 0 };
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int a, rc = 0;

		if (s < 0)
			return -errno;
		setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		if (connect(s, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
			rc = -errno;
		if (!rc && lfd >= 0) {
			a = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (a >= 0)
				close(a);
		}
		close(s);
		return rc;
	}
	}
	return -EINVAL;
}

/* Runs the batches and prints the JSON line; returns the exit status. */
static int measure(const char *mode, const char *label)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	double per[MAX_BATCHES], sorted[MAX_BATCHES];
	enum op op = op_of(mode);
	int lfd = -1, rc;

	if (op == OP_CONNECT) {
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (port) {
			sa.sin_port = htons((uint16_t)port);
		} else {
			/* No server given: our own listener on an ephemeral
			 * loopback port. */
			socklen_t sl = sizeof(sa);

			lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
			    listen(lfd, 64) < 0 ||
			    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0)
				die("loopback listener");
		}
	}
	/* A failing call would measure the error path: refuse to report. */
	rc = one_call(op, &sa, lfd);
	if (rc) {
		fprintf(stderr, "syscall: %s fails here: %s\n", mode, strerror(-rc));
		return 2;
	}
	for (int b = 0; b < batches; b++) {
		uint64_t t0 = now_ns();

		for (long i = 0; i < calls; i++)
			if (one_call(op, &sa, lfd)) {
				fprintf(stderr, "syscall: %s failed mid-run\n", mode);
				return 2;
			}
		per[b] = (double)(now_ns() - t0) / (double)calls;
	}
	memcpy(sorted, per, sizeof(double) * (size_t)batches);
	qsort(sorted, (size_t)batches, sizeof(double), cmp_double);
	printf("{\"mode\":\"%s\",\"calls\":%ld,\"ns_per_call\":%.1f,\"batches\":[",
	       label, calls, sorted[batches / 2]);
	for (int b = 0; b < batches; b++)
		printf("%s%.1f", b ? "," : "", per[b]);
	printf("]}\n");
	if (lfd >= 0)
		close(lfd);
	return 0;
}

static volatile sig_atomic_t child_done;

/* floor-hop: the receiving thread hands each notification id to a worker
 * over a pipe, as a supervisor with a handler pool would; the worker
 * answers. */
struct hop {
	int listener;
	int rfd;
};

static void *hop_worker(void *arg)
{
	const struct hop *h = arg;
	uint64_t id;

	while (read(h->rfd, &id, sizeof(id)) == sizeof(id)) {
		struct seccomp_notif_resp resp = { .id = id, .val = 1 };

		ioctl(h->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

static void on_chld(int sig)
{
	(void)sig;
	child_done = 1;
}

/* The floor: the child notifies on one call (getppid, or openat for the
 * ADDFD variant); this process answers each notification at once, doing
 * nothing else, exactly the minimum any seccomp-notify supervisor pays. */
static int floor_mode(const char *mode)
{
	int addfd = !strncmp(mode, "floor-addfd", 11) ||
		    !strncmp(mode, "floor-sync-addfd", 16);
	/* -near: the task's mask narrowed to this CPU for the install,
	 * ADDFD without SEND, the mask put back, then SEND (how corral
	 * answers with a descriptor); -narrow: ADDFD|SEND with the mask
	 * narrowed and put back after, when the task may already run. */
	bool near = !strcmp(mode, "floor-sync-addfd-near");
	bool narrow = near || !strcmp(mode, "floor-sync-addfd-narrow");
	int nr = addfd ? SYS_openat : SYS_getppid;
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };
	int pipefd[2], gofd[2], pidfd, listener, cfd, status;
	char go = 'g';
	struct seccomp_notif_sizes sizes;
	struct seccomp_notif *n;
	pthread_t worker;
	int hop_wfd = -1;
	int epfd = -1, waitpoll = 0;
	pid_t pid;

	if (!strcmp(mode, "floor-pinned")) {
		cpu_set_t set;

		/* Both ends on one CPU: the best case, no cross-CPU wake-up. */
		CPU_ZERO(&set);
		CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			die("sched_setaffinity");
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0 || pipe2(gofd, O_CLOEXEC) < 0)
		die("pipe");
	{
		struct sigaction sa = { .sa_handler = on_chld };

		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGCHLD, &sa, NULL) < 0)
			die("sigaction");
	}
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int lfd;

		close(pipefd[0]);
		close(gofd[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			die("no_new_privs");
		lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				   SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
		if (lfd < 0)
			die("seccomp NEW_LISTENER");
		if (write(pipefd[1], &lfd, sizeof(lfd)) != sizeof(lfd))
			_exit(2);
		/* Wait for the parent to hold the listener: our copy goes
		 * away so the parent sees HUP when we exit. */
		if (read(gofd[0], &go, 1) != 1)
			_exit(2);
		close(lfd);
		status = measure(mode, mode);
		fflush(stdout);
		/* Tell the parent we are done with one last notified call
		 * carrying a marker it recognises: unlike our exit, it cannot
		 * slip between the parent's checks and its next RECV. */
		syscall(nr, FLOOR_END, FLOOR_END, FLOOR_END, FLOOR_END);
		_exit(status);
	}
	close(pipefd[1]);
	close(gofd[0]);
	if (read(pipefd[0], &cfd, sizeof(cfd)) != sizeof(cfd))
		die("child did not report");
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		die("pidfd_open");
	listener = (int)syscall(SYS_pidfd_getfd, pidfd, cfd, 0);
	if (listener < 0)
		die("pidfd_getfd");
	if (write(gofd[1], &go, 1) != 1)
		die("go");
	if (!strncmp(mode, "floor-sync", 10) &&
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
		  (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) < 0)
		die("SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (needs Linux 6.6+)");
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		die("GET_NOTIF_SIZES");
	if (!strcmp(mode, "floor-hop")) {
		static struct hop h;
		int hp[2];

		if (pipe2(hp, O_CLOEXEC) < 0)
			die("pipe");
		h.listener = listener;
		h.rfd = hp[0];
		sigset_t chld, old;

		/* The worker must never take the SIGCHLD that ends the
		 * receiving thread's RECV: it starts with SIGCHLD blocked. */
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		pthread_sigmask(SIG_BLOCK, &chld, &old);
		if (pthread_create(&worker, NULL, hop_worker, &h))
			die("pthread_create");
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		hop_wfd = hp[1];
	}
	/* floor-sync-epoll waits in epoll_wait before each RECV, as an
	 * event-loop supervisor does; floor-sync-poll waits in poll() on the
	 * listener and an epoll fd (the loop's other events), as does
	 * floor-sync-addfd. */
	if (!strcmp(mode, "floor-sync-epoll") || !strcmp(mode, "floor-sync-poll") ||
	    !strncmp(mode, "floor-sync-addfd", 16)) {
		struct epoll_event ev = { .events = EPOLLIN };

		epfd = epoll_create1(EPOLL_CLOEXEC);
		if (epfd < 0)
			die("epoll_create1");
		if (!strcmp(mode, "floor-sync-epoll") &&
		    epoll_ctl(epfd, EPOLL_CTL_ADD, listener, &ev) < 0)
			die("epoll_ctl");
		waitpoll = strcmp(mode, "floor-sync-epoll") != 0;
	}
	n = calloc(1, sizes.seccomp_notif > sizeof(*n) ? sizes.seccomp_notif : sizeof(*n));
	if (!n)
		die("calloc");
	for (;;) {
		struct seccomp_notif_resp resp = { 0 };

		memset(n, 0, sizes.seccomp_notif > sizeof(*n) ? sizes.seccomp_notif : sizeof(*n));
		/* A blocking RECV, as lean as a supervisor can be. The child
		 * ends with a marked call; should it die first, SIGCHLD
		 * (installed without SA_RESTART) interrupts the RECV. */
		if (child_done)
			break;
		if (epfd >= 0 && !waitpoll) {
			struct epoll_event ev;

			if (epoll_wait(epfd, &ev, 1, -1) < 0)
				continue;
		} else if (epfd >= 0) {
			struct pollfd p[2] = { { .fd = listener, .events = POLLIN },
					       { .fd = epfd, .events = POLLIN } };

			if (poll(p, 2, -1) < 0)
				continue;
		}
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, n) < 0) {
			if (child_done)
				break;
			continue;	/* ENOENT: the call went away */
		}
		resp.id = n->id;
		if (n->data.args[3] == FLOOR_END) {
			resp.error = -ECANCELED;
			ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
			break;
		}
		if (addfd) {
			/* The emulated open: perform it here, install the fd
			 * in the child and answer in one ioctl. */
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			struct seccomp_notif_addfd a = {
				.id = n->id,
				.flags = SECCOMP_ADDFD_FLAG_SEND,
				.srcfd = (uint32_t)fd,
				.newfd_flags = O_CLOEXEC,
			};

			cpu_set_t one, orig;
			int cpu = sched_getcpu(), r;

			if (narrow) {
				CPU_ZERO(&one);
				CPU_SET(cpu, &one);
				if (sched_getaffinity((pid_t)n->pid, sizeof(orig), &orig) < 0 ||
				    sched_setaffinity((pid_t)n->pid, sizeof(one), &one) < 0)
					die("sched_setaffinity");
			}
			if (near)
				a.flags = 0;
			r = fd < 0 ? -1 : ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
			if (narrow &&
			    sched_setaffinity((pid_t)n->pid, sizeof(orig), &orig) < 0)
				die("sched_setaffinity");
			if (near && r >= 0) {
				resp.val = r;
				ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
			}
			if (r < 0) {
				resp.error = -EIO;
				ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
			}
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (hop_wfd >= 0) {
			if (write(hop_wfd, &n->id, sizeof(n->id)) != sizeof(n->id))
				die("hop");
			continue;
		}
		resp.val = getppid();
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	if (hop_wfd >= 0) {
		close(hop_wfd);
		pthread_join(worker, NULL);
	}
	free(n);
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

/* floor-trace: the same getppid stopped with SECCOMP_RET_TRACE and resumed
 * with PTRACE_CONT: the floor of ptrace-based interposition (what a tracer
 * such as proot pays per call it looks at; strace pays two such stops per
 * call, at entry and exit, for every call). */
static int floor_trace(void)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };
	int gofd[2], status;
	char go = 'g';
	pid_t pid;

	if (pipe2(gofd, O_CLOEXEC) < 0)
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(gofd[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (read(gofd[0], &go, 1) != 1)
			_exit(2);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
			die("seccomp");
		status = measure("floor-trace", "floor-trace");
		fflush(stdout);
		_exit(status);
	}
	close(gofd[0]);
	if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)(PTRACE_O_TRACESECCOMP |
							  PTRACE_O_EXITKILL)) < 0)
		die("PTRACE_SEIZE");
	if (write(gofd[1], &go, 1) != 1)
		die("go");
	close(gofd[1]);
	for (;;) {
		if (waitpid(pid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			die("waitpid");
		}
		if (WIFEXITED(status))
			return WEXITSTATUS(status);
		if (WIFSIGNALED(status))
			return 2;
		if (WIFSTOPPED(status)) {
			int sig = WSTOPSIG(status);

			if ((status >> 16) || sig == SIGTRAP)
				sig = 0;
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
		}
	}
}

int main(int argc, char **argv)
{
	const char *mode;
	int opt;

	if (argc < 2) {
		fprintf(stderr, "usage: syscall getppid|stat|open|connect|refused|floor|floor-sync|floor-sync-epoll|floor-sync-poll|floor-pinned|floor-addfd|floor-sync-addfd[-near|-narrow]|floor-hop|floor-trace [-n CALLS] [-b BATCHES] [-p PATH] [-c PORT]\n");
		return 2;
	}
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "n:b:p:c:")) != -1) {
		switch (opt) {
		case 'n': calls = atol(optarg); break;
		case 'b': batches = atoi(optarg); break;
		case 'p': path = optarg; break;
		case 'c': port = atoi(optarg); break;
		default: return 2;
		}
	}
	if (calls < 1 || batches < 1 || batches > MAX_BATCHES) {
		fprintf(stderr, "syscall: bad -n or -b\n");
		return 2;
	}
	if (!strcmp(mode, "floor-trace"))
		return floor_trace();
	if (!strncmp(mode, "floor", 5))
		return floor_mode(mode);
	return measure(mode, mode);
}
