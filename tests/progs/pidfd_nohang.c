/* tests/progs/pidfd_nohang.c: once a child's pidfd polls readable, does a
 * non-blocking wait collect it, as the kernel promises an untraced parent?
 *
 *   pidfd_nohang MODE N	MODE: exit, kill, waitid, ignored
 *
 * Each of N rounds forks a child, waits in poll() until its pidfd is
 * readable (the child exited, or was killed with SIGKILL), then asks once
 * with WNOHANG: waitpid(pid) for exit and kill, waitid(P_PIDFD) for
 * waitid, waitpid(-1) with SIGCHLD ignored for ignored (natively ECHILD:
 * the kernel released the child at its exit). Prints "MODE missed M of N":
 * the rounds whose answer was "not yet" (0), which natively never happens.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	int n = argc > 2 ? atoi(argv[2]) : 100, missed = 0, odd = 0;

	if (!strcmp(mode, "ignored"))
		signal(SIGCHLD, SIG_IGN);
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
		fd = (int)syscall(SYS_pidfd_open, c, 0);
		if (fd < 0)
			return perror("pidfd_open"), 2;
		if (!strcmp(mode, "kill"))
			kill(c, SIGKILL);
		close(go[1]);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		if (!strcmp(mode, "waitid")) {
			siginfo_t si;

			memset(&si, 0, sizeof(si));
			if (waitid(P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG) < 0)
				odd++;
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
