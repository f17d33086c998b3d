/* tests/progs/inotify_churn.c: inotify instances hidden in flight with full
 * queues while a child keeps making fresh ones in a padded fd table.
 *
 *   inotify_churn HIDDEN FRESH SECS
 *
 * HIDDEN instances watch d/, are sent over a unix socket no one reads and
 * closed; writes to two long names fill each queue. A child (FRESH > 0)
 * pads its table with 12 000 descriptors, so that a scan of the tables
 * takes several steps, and keeps making FRESH instances the while: an
 * instance made during a scan must not stand for a hidden one. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAD 12000
#define FRESH_AT 15000

static void churn(int fresh)
{
	struct rlimit rl;
	int z = open("/dev/null", O_RDONLY);

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	for (int i = 0; i < PAD; i++)
		dup2(z, 100 + i);
	for (;;)
		for (int i = 0; i < fresh; i++) {
			int f = inotify_init1(0);

			if (f < 0) {
				usleep(200);
				continue;
			}
			dup2(f, FRESH_AT + i);
			close(f);
		}
}

int main(int argc, char **argv)
{
	int hidden = argc > 1 ? atoi(argv[1]) : 10;
	int fresh = argc > 2 ? atoi(argv[2]) : 10;
	int secs = argc > 3 ? atoi(argv[3]) : 8;
	char a[256] = "d/", b[256] = "d/", ctl[CMSG_SPACE(sizeof(int) * 32)];
	int sv[2], fds[32], fa, fb;
	pid_t kid = -1;

	if (hidden > 32)
		hidden = 32;
	memset(a + 2, 'a', 240);
	memset(b + 2, 'b', 240);
	mkdir("d", 0755);
	fa = open(a, O_CREAT | O_RDWR, 0644);
	fb = open(b, O_CREAT | O_RDWR, 0644);
	if (fa < 0 || fb < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		perror("set-up");
		return 2;
	}
	if (fresh > 0 && (kid = fork()) == 0)
		churn(fresh);
	sleep(1);
	for (int i = 0; i < hidden; i++) {
		while ((fds[i] = inotify_init1(0)) < 0)
			usleep(1000);
		if (inotify_add_watch(fds[i], "d", IN_MODIFY) < 0) {
			perror("inotify_add_watch");
			return 2;
		}
	}
	{
		char c = 'x';
		struct iovec io = { &c, 1 };
		struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1,
				    .msg_control = ctl,
				    .msg_controllen = CMSG_SPACE(sizeof(int) * hidden) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * hidden);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * hidden);
		if (sendmsg(sv[0], &m, 0) < 0) {
			perror("sendmsg");
			return 2;
		}
	}
	for (int i = 0; i < hidden; i++)
		close(fds[i]);
	/* Alternate two names: no two events in a row merge. */
	for (int i = 0; i < 17000; i++) {
		pwrite(fa, "x", 1, 0);
		pwrite(fb, "x", 1, 0);
	}
	printf("filled %d\n", hidden);
	fflush(stdout);
	sleep(secs);
	if (kid > 0) {
		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
	}
	printf("held\n");
	return 0;
}
