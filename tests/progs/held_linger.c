/* tests/progs/held_linger.c: a lingering TCP socket in flight in a unix
 * datagram socket whose last reference is corral's hold of it.
 *
 * usage: held_linger SECONDS
 * A TCP connection to the program's own listener (whose server end it
 * keeps and never reads) is filled and given SO_LINGER {1, 100000}, sent
 * with SCM_RIGHTS into a datagram socketpair (corral makes such pairs and
 * holds a duplicate of each end, net/unixhold.c), then closed, and the
 * receiving end closed: only corral's hold keeps the queue, and the TCP
 * socket in it. When corral lets its hold go, the TCP socket's last close
 * runs in corral. Then stat("/") (a call corral answers) every 20 ms for
 * SECONDS: prints "worst W", the longest it waited. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int send_fd(int via, int fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	char c = 'x';
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	struct cmsghdr *h;

	memset(&u, 0, sizeof(u));
	h = CMSG_FIRSTHDR(&mh);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	return (int)sendmsg(via, &mh, 0);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 4, t0, worst = 0, tf;
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct linger lg = { 1, 100000 };
	socklen_t al = sizeof(a);
	static char buf[1 << 16];
	int small = 4096, l, c, s, ab[2];

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	c = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *)&a, &al) ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)) ||
	    (s = accept(l, NULL, NULL)) < 0) {
		perror("connection");
		return 1;
	}
	setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	fcntl(c, F_SETFL, O_NONBLOCK);
	for (tf = now(); now() - tf < 0.5;)
		if (write(c, buf, sizeof(buf)) <= 0)
			usleep(10000);
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, ab) || send_fd(ab[0], c) < 0) {
		perror("in flight");
		return 1;
	}
	close(c);
	close(l);
	close(ab[1]);
	for (t0 = now(); now() - t0 < secs;) {
		struct stat st;
		double t = now();

		stat("/", &st);
		if (now() - t > worst)
			worst = now() - t;
		usleep(20000);
	}
	printf("worst %.3f\n", worst);
	close(s);
	return 0;
}
