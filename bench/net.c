/* bench/net.c: workload w7, loopback connect latency and throughput to a
 * server the driver runs outside the sandbox (through the proxy under corral). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>

/*
 * usage: net serve            listen on 127.0.0.1, print the port, serve
 *                             until stdin closes: each connection is read
 *                             to EOF and answered with one byte
 *        net sink             listen on 127.0.0.1, print the port, accept
 *                             and close every connection at once
 *        net client PORT CONNECTIONS MIB
 *                             CONNECTIONS connect+1-byte-exchange+close,
 *                             then one connection sending MIB MiB; prints
 *                             JSON with connect_us (median) and MiB_s
 */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int serve(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	static char buf[1 << 16];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(l, 128) < 0 || getsockname(l, (struct sockaddr *)&sa, &sl) < 0) {
		perror("net serve");
		return 2;
	}
	printf("%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	/* Clients may reset (bench/syscall connect closes with RST): a
	 * failed answer must not end the server. */
	signal(SIGPIPE, SIG_IGN);
	/* A child watches stdin: when the driver closes it, the server ends. */
	if (fork() == 0) {
		char c;

		while (read(0, &c, 1) > 0)
			;
		kill(getppid(), SIGTERM);
		_exit(0);
	}
	for (;;) {
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		ssize_t n;

		if (c < 0) {
			if (errno == EINTR)
				continue;
			perror("accept");
			return 2;
		}
		while ((n = read(c, buf, sizeof(buf))) > 0)
			if (n == 1 && buf[0] == 'p')
				break;	/* a latency probe: answer at once */
		if (write(c, "k", 1) != 1) {
			/* the client went away: nothing to answer */
		}
		close(c);
	}
}

/* sink: accept and close at once, with a deep backlog, so a client timing
 * connect (bench/syscall connect -c PORT) never waits on this server. */
static int sink(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(l, 4096) < 0 || getsockname(l, (struct sockaddr *)&sa, &sl) < 0) {
		perror("net sink");
		return 2;
	}
	printf("%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	if (fork() == 0) {
		char c;

		while (read(0, &c, 1) > 0)
			;
		kill(getppid(), SIGTERM);
		_exit(0);
	}
	for (;;) {
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);

		if (c >= 0)
			close(c);
		else if (errno != EINTR && errno != ECONNABORTED)
			return 2;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int dial(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0)
		return -1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(s);
		return -1;
	}
	return s;
}

static int client(int port, int conns, long mib)
{
	uint64_t *lat = calloc((size_t)conns, sizeof(*lat));
	static char buf[1 << 16];
	uint64_t t0, t;
	char c;
	int s;

	if (!lat)
		return 2;
	for (int i = 0; i < conns; i++) {
		t0 = now_ns();
		s = dial(port);
		if (s < 0 || write(s, "p", 1) != 1 || read(s, &c, 1) != 1) {
			perror("net client connect");
			return 1;
		}
		lat[i] = now_ns() - t0;
		close(s);
	}
	qsort(lat, (size_t)conns, sizeof(*lat), cmp_u64);
	memset(buf, 'x', sizeof(buf));
	s = dial(port);
	if (s < 0) {
		perror("net client stream");
		return 1;
	}
	t0 = now_ns();
	for (long i = 0; i < mib * 16; i++)
		for (size_t off = 0; off < sizeof(buf);) {
			ssize_t n = write(s, buf + off, sizeof(buf) - off);

			if (n <= 0) {
				perror("net client write");
				return 1;
			}
			off += (size_t)n;
		}
	shutdown(s, SHUT_WR);
	if (read(s, &c, 1) != 1) {
		perror("net client ack");
		return 1;
	}
	t = now_ns() - t0;
	close(s);
	printf("{\"connect_us\":%.1f,\"MiB_s\":%.1f}\n",
	       (double)lat[conns / 2] / 1000.0, (double)mib / ((double)t / 1e9));
	free(lat);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "serve"))
		return serve();
	if (argc == 2 && !strcmp(argv[1], "sink"))
		return sink();
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(atoi(argv[2]), atoi(argv[3]), atol(argv[4]));
	fprintf(stderr, "usage: net serve | net sink | net client PORT CONNECTIONS MIB\n");
	return 2;
}
