/* tests/progs/fdtables.c: many fd tables full of descriptors, then calls that
 * make the supervisor search every table, in a loop, for the budget tests.
 *
 *   fdtables PROCS FDS pty   FDS descriptors (/dev/null), PROCS children
 *                            holding a copy each; a pty whose master is
 *                            closed, its slave kept; then opens of the
 *                            slave's path forever (the run's master is
 *                            searched for in every table)
 *   fdtables PROCS FDS udp   the same tables; a UDP socket bound on
 *                            127.0.0.1; then binds of other sockets to its
 *                            port forever (EADDRINUSE: the supervisor looks
 *                            for sockets it holds that no table holds)
 *
 * FDS is cut to what the hard RLIMIT_NOFILE allows. Prints "ready" once
 * the tables are made; the children die with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static void pty_loop(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), s;
	char name[64];

	if (m < 0 || grantpt(m) || unlockpt(m) ||
	    ptsname_r(m, name, sizeof(name))) {
		perror("posix_openpt");
		exit(1);
	}
	s = open(name, O_RDWR | O_NOCTTY);
	if (s < 0) {
		perror(name);
		exit(1);
	}
	close(m);	/* the slave alone keeps the pty */
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int f = open(name, O_RDWR | O_NOCTTY);

		if (f >= 0)
			close(f);
	}
}

static void udp_loop(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(s, (struct sockaddr *)&a, &l)) {
		perror("udp");
		exit(1);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int t = socket(AF_INET, SOCK_DGRAM, 0);

		if (t < 0)
			continue;
		if (bind(t, (struct sockaddr *)&a, sizeof(a)) == 0) {
			printf("bound twice\n");
			exit(1);
		}
		close(t);
	}
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	int procs, fds;

	if (argc != 4) {
		fprintf(stderr, "usage: fdtables PROCS FDS pty|udp\n");
		return 2;
	}
	procs = atoi(argv[1]);
	fds = atoi(argv[2]);
	/* As many as the hard limit allows, short of FDS. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)fds + 64)
			fds = rl.rlim_max > 128 ? (int)rl.rlim_max - 64 : 64;
		rl.rlim_cur = (rlim_t)fds + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int i = 0; i < fds; i++)
		if (open("/dev/null", O_RDONLY) < 0) {
			perror("open");
			return 1;
		}
	for (int i = 0; i < procs; i++) {
		pid_t p = fork();

		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pause();
			_exit(0);
		}
	}
	if (!strcmp(argv[3], "pty"))
		pty_loop();
	udp_loop();
	return 0;
}
