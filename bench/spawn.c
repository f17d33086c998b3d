/* bench/spawn.c: the start-up floor of this design: fork, a seccomp listener
 * taken over by the parent, PTRACE_SEIZE, exec of a program, its events, reap. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/*
 * usage: spawn native|floor [-n RUNS] [PROGRAM]
 *   native  fork, exec PROGRAM (default /bin/true), wait
 *   floor   the same, but the child first installs a filter with a
 *           listener (notifying one call PROGRAM never makes), hands the
 *           listener to the parent (pidfd_getfd) and waits to be seized
 *           with corral's ptrace options; the parent continues every stop
 *           until the child is reaped. No policy, no workspace, no result:
 *           what any supervisor of this design pays per run on this machine.
 * Prints one JSON object with the median ns per run. Timing only.
 */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "spawn: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void child(const char *prog, int report, int go, int floor)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_keyctl, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fp = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	char c;
	int lfd;

	if (floor) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(120);
		lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				   SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
		if (lfd < 0 || write(report, &lfd, sizeof(lfd)) != sizeof(lfd) ||
		    read(go, &c, 1) != 1)
			_exit(121);
		close(lfd);
	}
	execl(prog, prog, (char *)NULL);
	_exit(127);
}

static void one_run(const char *prog, int floor)
{
	int rp[2], gp[2], lfd = -1, cfd, status;
	pid_t pid;

	if (floor && (pipe2(rp, O_CLOEXEC) < 0 || pipe2(gp, O_CLOEXEC) < 0))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		child(prog, floor ? rp[1] : -1, floor ? gp[0] : -1, floor);
	if (floor) {
		int pidfd;

		close(rp[1]);
		close(gp[0]);
		if (read(rp[0], &cfd, sizeof(cfd)) != sizeof(cfd))
			die("child did not report");
		if (ptrace(PTRACE_SEIZE, pid, NULL,
			   (void *)(long)(PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK |
					  PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
					  PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT)) < 0)
			die("PTRACE_SEIZE");
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0)
			die("pidfd_open");
		lfd = (int)syscall(SYS_pidfd_getfd, pidfd, cfd, 0);
		if (lfd < 0)
			die("pidfd_getfd");
		close(pidfd);
		if (write(gp[1], "g", 1) != 1)
			die("go");
		close(rp[0]);
		close(gp[1]);
	}
	for (;;) {
		pid_t w = waitpid(-1, &status, __WALL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			die("waitpid");
		}
		if (WIFSTOPPED(status)) {
			int sig = WSTOPSIG(status);

			/* event stops and SIGTRAP/SIGSTOP carry no signal */
			if ((status >> 16) || sig == SIGTRAP || sig == SIGSTOP)
				sig = 0;
			ptrace(PTRACE_CONT, w, NULL, (void *)(long)sig);
		}
	}
	if (lfd >= 0)
		close(lfd);
}

int main(int argc, char **argv)
{
	const char *mode, *prog = "/bin/true";
	long runs = 200;
	uint64_t *t;
	int opt, floor;

	if (argc < 2 || (strcmp(argv[1], "native") && strcmp(argv[1], "floor"))) {
		fprintf(stderr, "usage: spawn native|floor [-n RUNS] [PROGRAM]\n");
		return 2;
	}
	mode = argv[1];
	floor = !strcmp(mode, "floor");
	optind = 2;
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n')
			return 2;
		runs = atol(optarg);
	}
	if (optind < argc)
		prog = argv[optind];
	if (runs < 1)
		return 2;
	t = calloc((size_t)runs, sizeof(*t));
	if (!t)
		die("calloc");
	for (long i = 0; i < runs; i++) {
		uint64_t t0 = now_ns();

		one_run(prog, floor);
		t[i] = now_ns() - t0;
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp_u64);
	printf("{\"mode\":\"%s\",\"runs\":%ld,\"ns_per_run\":%llu}\n", mode, runs,
	       (unsigned long long)t[runs / 2]);
	free(t);
	return 0;
}
