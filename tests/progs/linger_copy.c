/* tests/progs/linger_copy.c: makes corral's copy of a socket its last
 * reference, with SO_LINGER and unsent data, while corral answers a call.
 *
 * usage: linger_copy SECONDS
 * A TCP connection to its own listener, whose server end reads nothing,
 * is filled, given SO_LINGER {1, 100000}; one thread asks an interface
 * ioctl (SIOCGIFFLAGS "lo") on it, which corral answers on a copy of the
 * socket, while another thread closes the program's own fd a few
 * microseconds later (the delay searched round by round). When corral's
 * close is the last, a plain close waits out the linger time on corral's
 * loop. Prints "hit" (the ioctl unanswered for 1.5 s) or "no hit ROUNDS
 * EARLY LATE" after SECONDS. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static atomic_int go, done, result, code;
static int sock;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *asker(void *arg)
{
	(void)arg;
	for (;;) {
		struct ifreq ifr;
		int r;

		while (!atomic_load(&go))
			;
		atomic_store(&go, 0);
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, "lo");
		r = ioctl(sock, SIOCGIFFLAGS, &ifr);
		atomic_store(&code, r < 0 ? errno : 0);
		atomic_store(&result, r);
		atomic_store(&done, 1);
	}
	return NULL;
}

static void *closer(void *arg)
{
	close((int)(long)arg);
	return NULL;
}

static void spin_us(int us)
{
	double t = now() + us / 1e6;

	while (now() < t)
		;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 4, t0 = now();
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	static char buf[1 << 16];
	long rounds = 0, early = 0, late = 0;
	int small = 4096, delay = 0, l;
	pthread_t th;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(l, 64) || getsockname(l, (struct sockaddr *)&a, &al)) {
		perror("listener");
		return 1;
	}
	pthread_create(&th, NULL, asker, NULL);
	while (now() - t0 < secs) {
		struct linger lg = { 1, 100000 };
		int c = socket(AF_INET, SOCK_STREAM, 0), s;
		pthread_t tc;
		double w;

		setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
		if (connect(c, (struct sockaddr *)&a, sizeof(a)) ||
		    (s = accept(l, NULL, NULL)) < 0) {
			perror("connect");
			return 1;
		}
		setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		fcntl(c, F_SETFL, O_NONBLOCK);
		while (write(c, buf, sizeof(buf)) > 0)
			;
		sock = c;
		atomic_store(&done, 0);
		rounds++;
		atomic_store(&go, 1);
		spin_us(delay);
		pthread_create(&tc, NULL, closer, (void *)(long)c);
		pthread_detach(tc);
		for (w = now(); !atomic_load(&done) && now() - w < 1.5;)
			;
		if (!atomic_load(&done)) {
			printf("hit\n");
			fflush(stdout);
			_exit(0);
		}
		if (atomic_load(&result) < 0 && atomic_load(&code) == EBADF) {
			early++;
			delay += 2;
		} else {
			late++;
			delay = delay > 3 ? delay - 3 : 0;
		}
		/* Let a lingering close end: read the server end dry. */
		fcntl(s, F_SETFL, O_NONBLOCK);
		for (w = now(); now() - w < 0.2;)
			if (read(s, buf, sizeof(buf)) == 0)
				break;
		close(s);
	}
	printf("no hit %ld %ld %ld\n", rounds, early, late);
	return 0;
}
