/* tests/progs/linger_pending.c: makes the proxy's copy of a pending
 * connect the socket's last reference, with SO_LINGER and unsent data.
 *
 * usage: linger_pending PORT    (in a run allowed 127.0.0.1:PORT)
 * Helper threads keep corral's loop busy with connects to the program's own
 * listener whose SYNs carry a TCP-MD5 key it lacks (each holds the loop up
 * to its deadline). The allowed connect carries such a key too, so its SYN
 * is dropped until the key is removed; the retransmitted SYN then lands
 * while the loop is busy, and before the proxy accepts it the program sets
 * SO_LINGER {1, 100000}, fills the connection and closes its fd: corral's
 * copy in the proxy's pending record is the last. Then one call corral
 * answers, timed: prints "answered in SECONDS". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in own;
static atomic_int stop;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int md5_key(int s, int len)
{
	struct tcp_md5sig md;
	struct sockaddr_in *a = (struct sockaddr_in *)&md.tcpm_addr;

	memset(&md, 0, sizeof(md));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	md.tcpm_keylen = (unsigned short)len;
	memcpy(md.tcpm_key, "abcdefgh", 8);
	return setsockopt(s, IPPROTO_TCP, TCP_MD5SIG, &md, sizeof(md));
}

static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		md5_key(s, 8);
		connect(s, (struct sockaddr *)&own, sizeof(own));
		close(s);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct linger lg = { 1, 100000 };
	socklen_t ol = sizeof(own);
	static char buf[1 << 22];
	struct pollfd pf;
	pthread_t th[4];
	double t0;
	int l, s;

	if (argc < 2)
		return 2;
	own.sin_family = AF_INET;
	own.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(l, (struct sockaddr *)&own, sizeof(own)) || listen(l, 16) ||
	    getsockname(l, (struct sockaddr *)&own, &ol)) {
		perror("listener");
		return 1;
	}
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, busy, NULL);
	usleep(300000);
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	md5_key(s, 8);
	connect(s, (struct sockaddr *)&a, sizeof(a));
	md5_key(s, 0);
	setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	pf.fd = s;
	pf.events = POLLOUT;
	poll(&pf, 1, 8000);
	while (write(s, buf, sizeof(buf)) > 0)
		;
	close(s);
	usleep(500000);
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	t0 = now();
	getsockname(l, (struct sockaddr *)&a, &ol);	/* corral answers it */
	printf("answered in %.3f\n", now() - t0);
	return 0;
}
