/* bench/relay.c: the floor of any relaying proxy on this machine: a minimal
 * splice relay with one blocking thread per direction, no checks, no budget. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/*
 * usage: relay PORT   listen on 127.0.0.1, print the port; every accepted
 *                     connection is joined to 127.0.0.1:PORT and relayed
 *                     both ways with splice until stdin closes.
 * Timing only: bench/net compares corral's proxy with it.
 */

struct half {
	int from, to;
};

static void *pump(void *arg)
{
	struct half *h = arg;
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return NULL;
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	for (;;) {
		ssize_t n = splice(h->from, NULL, p[1], NULL, 1 << 20, SPLICE_F_MOVE);

		if (n <= 0)
			break;
		while (n > 0) {
			ssize_t m = splice(p[0], NULL, h->to, NULL, (size_t)n, SPLICE_F_MOVE);

			if (m <= 0)
				goto out;
			n -= m;
		}
	}
out:
	shutdown(h->to, SHUT_WR);
	close(p[0]);
	close(p[1]);
	return NULL;
}

static void *conn(void *arg)
{
	int *fds = arg;
	struct half h[2] = { { fds[0], fds[1] }, { fds[1], fds[0] } };
	pthread_t t;

	if (pthread_create(&t, NULL, pump, &h[1]) == 0) {
		pump(&h[0]);
		pthread_join(t, NULL);
	}
	close(fds[0]);
	close(fds[1]);
	free(fds);
	return NULL;
}

static void *watch_stdin(void *arg)
{
	char c;

	(void)arg;
	while (read(0, &c, 1) > 0)
		;
	exit(0);
}

int main(int argc, char **argv)
{
	struct sockaddr_in up = { .sin_family = AF_INET }, sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	pthread_t t;
	int l;

	if (argc != 2) {
		fprintf(stderr, "usage: relay PORT\n");
		return 2;
	}
	up.sin_addr.s_addr = sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	up.sin_port = htons((uint16_t)atoi(argv[1]));
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(l, 512) < 0 || getsockname(l, (struct sockaddr *)&sa, &sl) < 0) {
		perror("relay");
		return 2;
	}
	printf("%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	if (pthread_create(&t, NULL, watch_stdin, NULL) != 0)
		return 2;
	for (;;) {
		int *fds = malloc(2 * sizeof(int));

		if (!fds)
			return 2;
		fds[0] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (fds[0] < 0) {
			free(fds);
			if (errno == EINTR)
				continue;
			perror("relay accept");
			return 2;
		}
		fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[1] < 0 || connect(fds[1], (struct sockaddr *)&up, sizeof(up)) < 0 ||
		    pthread_create(&t, NULL, conn, fds) != 0) {
			close(fds[0]);
			if (fds[1] >= 0)
				close(fds[1]);
			free(fds);
			continue;
		}
		pthread_detach(t);
	}
}
