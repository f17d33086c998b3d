/* tests/progs/pidfd_nohang.c: once a child's pidfd polls readable, does a
 * non-blocking wait collect it, as the kernel promises an untraced parent?
 *
 *   pidfd_nohang MODE N	MODE: exit, kill, waitid, ignored, nonblock, term
 *
 * Each of N rounds forks a child, waits in poll() until its pidfd is
 * readable (the child exited, or was killed with SIGKILL), then asks once
 * with WNOHANG: waitpid(pid) for exit and kill, waitid(P_PIDFD) for
 * waitid, waitpid(-1) with SIGCHLD ignored for ignored (natively ECHILD:
 * the kernel released the child at its exit); nonblock opens the pidfd
 * with PIDFD_NONBLOCK and waits on it without WNOHANG (EAGAIN is "not
 * yet"); term sends the child SIGTERM and at once polls with
 * waitpid(pid, WNOHANG) until it has it, 5 s at most (a round that ends
 * without it is missed: a build that took the child's signal-delivery
 * stop for an exit left it stopped for good). Prints "MODE missed M of N":
 * the rounds whose answer was "not yet" (0), which natively never happens.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK O_NONBLOCK
#endif

static int term(int n)
{
	int missed = 0;

	for (int i = 0; i < n; i++) {
		struct timespec t0, t;
		pid_t c = fork(), w = 0;
		int st;

		if (c < 0)
			return perror("fork"), 2;
		if (c == 0)
			for (;;)
				pause();
		kill(c, SIGTERM);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			w = waitpid(c, &st, WNOHANG);
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while (w == 0 && t.tv_sec - t0.tv_sec < 5);
		if (w != c) {
			missed++;
			kill(c, SIGKILL);
			waitpid(c, &st, 0);
		}
	}
	printf("term missed %d of %d\n", missed, n);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	int n = argc > 2 ? atoi(argv[2]) : 100, missed = 0, odd = 0;

	if (!strcmp(mode, "ignored"))
		signal(SIGCHLD, SIG_IGN);
	if (!strcmp(mode, "term"))
		return term(n);
	for (int i = 0; i < n; i++) {
		int go[2], fd, st;
		char b;
		pid_t c;

		if (pipe(go) < 0 || (c = fork()) < 0)
			return perror("pipe or fork"), 2;
		if (c == 0) {	/* ends once its pidfd is open */
			close(go[1]);
			if (read(go[0], &b, 1) < 0 || !strcmp(mode, "kill"))
				for (;;)
					pause();
			_exit(3);
		}
		close(go[0]);
		fd = (int)syscall(SYS_pidfd_open, c,
				  strcmp(mode, "nonblock") ? 0 : PIDFD_NONBLOCK);
		if (fd < 0)
			return perror("pidfd_open"), 2;
		if (!strcmp(mode, "kill"))
			kill(c, SIGKILL);
		close(go[1]);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		if (!strcmp(mode, "waitid") || !strcmp(mode, "nonblock")) {
			siginfo_t si;
			int opt = WEXITED | (strcmp(mode, "nonblock") ? WNOHANG : 0);

			memset(&si, 0, sizeof(si));
			if (waitid(P_PIDFD, (id_t)fd, &si, opt) < 0)
				errno == EAGAIN ? missed++ : odd++;
			else if (si.si_pid == 0)
				missed++;
			else if (si.si_pid != c || si.si_status != 3)
				odd++;
		} else if (!strcmp(mode, "ignored")) {
			pid_t w = waitpid(-1, &st, WNOHANG);

			if (w == 0)
				missed++;
			else if (!(w < 0 && errno == ECHILD))
				odd++;
		} else {
			pid_t w = waitpid(c, &st, WNOHANG);

			if (w == 0) {
				missed++;
				waitpid(c, &st, 0);
			} else if (w != c)
				odd++;
		}
		close(fd);
	}
	printf("%s missed %d of %d%s\n", mode, missed, n, odd ? " (odd answers)" : "");
	return 0;
}
