/* tests/progs/third_doors.c: probes for tests/e2e/test_d8_third_doors.py.
 *
 * Each mode prints "NAME RESULT..." lines:
 *   md5 IP PORT [SYNCNT]   blocking TCP connect with a TCP_MD5SIG key set for
 *                          the peer's address (the SYN then carries an MD5
 *                          option a keyless listener drops); prints the
 *                          connect's answer and how long it took
 *   lsrr HOP IP PORT [SYNCNT]  the same with IP_OPTIONS carrying a loose
 *                          source route through HOP (the SYN's first hop)
 *   optsrr HOP             setsockopt(IP_OPTIONS, LSRR via HOP) on a UDP and
 *                          a TCP socket: accepted or refused
 *   udpsrr HOP             a UDP socket of the run bound to loopback, a
 *                          second one sending to it with IP_OPTIONS LSRR via
 *                          HOP (sendto through corral, then send on a
 *                          connected socket): where the datagrams went
 *   cmsgsrr HOP            the same with the route in an IP_RETOPTS control
 *                          message of sendmsg (performed by corral)
 *   srh SEG PORT [SYNCNT]  an IPv6 TCP socket with an IPV6_RTHDR segment
 *                          routing header (type 4) naming SEG as its only
 *                          segment, blocking connect to [::1]:PORT; prints
 *                          the setsockopt's and the connect's answers
 *   acceptrace SECS        a listener of the run whose O_NONBLOCK flag a
 *                          second thread flips without pause while the
 *                          main thread calls accept and a third connects
 *                          to it every few ms (so a waiting accept is
 *                          served); corral sets and clears the flag on
 *                          the shared open file around its own accept4;
 *                          prints the attempts made after SECS seconds
 *   linger SECS            a TCP connection of the run whose client has
 *                          unsent data (the server never reads) and
 *                          SO_LINGER {1, SECS}; the client is passed over
 *                          SCM_RIGHTS in a sendmsg that corral must defer
 *                          (the unix peer is full), the program closes its
 *                          own copy, then the unix peer: the send fails and
 *                          corral's duplicate is the client's last reference
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *ans(int rc)
{
	return rc < 0 ? strerror(errno) : "ok";
}

static struct sockaddr_in sin_of(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* An LSRR option naming HOP as the only hop: the kernel routes the packet
 * to HOP and writes the real destination as the last slot. */
static int set_lsrr(int fd, const char *hop)
{
	unsigned char opt[8] = { IPOPT_NOP, IPOPT_LSRR, 7, 4 };

	inet_pton(AF_INET, hop, opt + 4);
	return setsockopt(fd, IPPROTO_IP, IP_OPTIONS, opt, sizeof(opt));
}

static int tcp_connect(const char *ip, int port, int syncnt, const char *hop,
		       int md5)
{
	struct sockaddr_in a = sin_of(ip, port);
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc;
	double t0;

	if (syncnt > 0 &&
	    setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &syncnt, sizeof(syncnt)) < 0)
		printf("syncnt %s\n", strerror(errno));
	if (md5) {
		struct tcp_md5sig m = { 0 };
		struct sockaddr_in *p = (struct sockaddr_in *)&m.tcpm_addr;

		/* The key is for any peer address: corral connects the
		 * socket to its own listener, not to IP. */
		m.tcpm_flags = TCP_MD5SIG_FLAG_PREFIX;
		m.tcpm_prefixlen = 0;
		p->sin_family = AF_INET;
		m.tcpm_keylen = 8;
		memcpy(m.tcpm_key, "corral!!", 8);
		rc = setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG_EXT, &m, sizeof(m));
		printf("md5sig %s\n", ans(rc));
	}
	if (hop)
		printf("ipoptions %s\n", ans(set_lsrr(fd, hop)));
	fflush(stdout);
	t0 = now();
	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	printf("connect %s %.1f\n", ans(rc), now() - t0);
	fflush(stdout);
	close(fd);
	return 0;
}

static int udp_srr(const char *hop, int cmsg)
{
	struct sockaddr_in a = sin_of("127.0.0.1", 0), b;
	socklen_t l = sizeof(a);
	int r = socket(AF_INET, SOCK_DGRAM, 0);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	char buf[64];
	int rc;

	if (bind(r, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(r, (struct sockaddr *)&a, &l) < 0) {
		printf("bind %s\n", strerror(errno));
		return 1;
	}
	/* Control: a plain datagram arrives. */
	rc = (int)sendto(s, "plain", 5, 0, (struct sockaddr *)&a, sizeof(a));
	printf("plain_send %s\n", ans(rc));
	{
		struct pollfd p = { .fd = r, .events = POLLIN };

		rc = poll(&p, 1, 1000) > 0 ?
		     (int)recv(r, buf, sizeof(buf), MSG_DONTWAIT) : -1;
		printf("plain_recv %s\n", rc > 0 ? "arrived" : "lost");
	}
	if (!cmsg) {
		printf("ipoptions %s\n", ans(set_lsrr(s, hop)));
		rc = (int)sendto(s, "routed", 6, 0, (struct sockaddr *)&a,
				 sizeof(a));
		printf("routed_send %s\n", ans(rc));
	} else {
		unsigned char opt[8] = { IPOPT_NOP, IPOPT_LSRR, 7, 4 };
		char cb[CMSG_SPACE(sizeof(opt))] = { 0 };
		struct iovec iov = { .iov_base = "routed", .iov_len = 6 };
		struct msghdr m = { .msg_name = &a, .msg_namelen = sizeof(a),
				    .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cb,
				    .msg_controllen = sizeof(cb) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);

		inet_pton(AF_INET, hop, opt + 4);
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_RETOPTS;
		c->cmsg_len = CMSG_LEN(sizeof(opt));
		memcpy(CMSG_DATA(c), opt, sizeof(opt));
		rc = (int)sendmsg(s, &m, 0);
		printf("routed_send %s\n", ans(rc));
	}
	{
		struct pollfd p = { .fd = r, .events = POLLIN };

		rc = poll(&p, 1, 1000) > 0 ?
		     (int)recv(r, buf, sizeof(buf), MSG_DONTWAIT) : -1;
		printf("routed_recv %s\n", rc > 0 ? "arrived" : "lost");
	}
	(void)b;
	fflush(stdout);
	return 0;
}

static int srh_connect(const char *seg, int port, int syncnt)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_port = htons((uint16_t)port),
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	unsigned char h[8 + 16] = { 0, 2, 4, 0, 0, 0, 0, 0 };
	int fd = socket(AF_INET6, SOCK_STREAM, 0), rc;
	double t0;

	inet_pton(AF_INET6, seg, h + 8);
	if (syncnt > 0)
		setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &syncnt, sizeof(syncnt));
	rc = setsockopt(fd, IPPROTO_IPV6, IPV6_RTHDR, h, sizeof(h));
	printf("rthdr %s\n", ans(rc));
	t0 = now();
	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	printf("connect %s %.1f\n", ans(rc), now() - t0);
	close(fd);
	return 0;
}

static volatile int ar_stop;
static int ar_fd;
static struct sockaddr_in ar_addr;

static void *ar_flip(void *arg)
{
	while (!ar_stop) {
		fcntl(ar_fd, F_SETFL, O_NONBLOCK);
		fcntl(ar_fd, F_SETFL, 0);
	}
	return NULL;
}

static void *ar_connect(void *arg)
{
	while (!ar_stop) {
		int c = socket(AF_INET, SOCK_STREAM, 0);

		connect(c, (struct sockaddr *)&ar_addr, sizeof(ar_addr));
		close(c);
		usleep(2000);
	}
	return NULL;
}

static int accept_race(int secs)
{
	socklen_t l = sizeof(ar_addr);
	pthread_t f, c;
	long tries = 0, got = 0;
	double end;

	ar_addr = sin_of("127.0.0.1", 0);
	ar_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(ar_fd, (struct sockaddr *)&ar_addr, sizeof(ar_addr)) < 0 ||
	    listen(ar_fd, 64) < 0 ||
	    getsockname(ar_fd, (struct sockaddr *)&ar_addr, &l) < 0) {
		printf("setup %s\n", strerror(errno));
		return 1;
	}
	pthread_create(&f, NULL, ar_flip, NULL);
	pthread_create(&c, NULL, ar_connect, NULL);
	end = now() + secs;
	while (now() < end) {
		int a = accept(ar_fd, NULL, NULL);

		tries++;
		if (a >= 0) {
			got++;
			close(a);
		}
	}
	ar_stop = 1;
	printf("accepts %ld %ld\n", tries, got);
	return 0;
}

static int lg_unix = -1, lg_fd = -1;

static void *lg_send(void *arg)
{
	char cb[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = "x", .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb, .msg_controllen = sizeof(cb) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	double t0 = now();
	int rc;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &lg_fd, sizeof(int));
	rc = (int)sendmsg(lg_unix, &m, MSG_NOSIGNAL);
	printf("sendmsg %s %.1f\n", ans(rc), now() - t0);
	return NULL;
}

static void fill(int fd)
{
	static char junk[65536];
	int fl = fcntl(fd, F_GETFL);
	long n = 0;
	ssize_t w;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while ((w = write(fd, junk, sizeof(junk))) > 0)
		n += w;
	fcntl(fd, F_SETFL, fl);
	printf("filled %ld\n", n);
}

static int linger_close(int secs)
{
	struct sockaddr_in a = sin_of("127.0.0.1", 0);
	socklen_t l = sizeof(a);
	int lsn = socket(AF_INET, SOCK_STREAM, 0);
	int c = socket(AF_INET, SOCK_STREAM, 0), s, u[2], small = 4096;
	struct linger lg = { .l_onoff = 1, .l_linger = secs };
	pthread_t th;
	double t0;

	setsockopt(lsn, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (bind(lsn, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(lsn, 4) < 0 ||
	    getsockname(lsn, (struct sockaddr *)&a, &l) < 0 ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    (s = accept(lsn, NULL, NULL)) < 0) {
		printf("setup %s\n", strerror(errno));
		return 1;
	}
	fill(c);	/* the server never reads: the rest stays unsent */
	printf("linger %s\n",
	       ans(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg))));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, u) < 0)
		return 1;
	fill(u[0]);
	lg_unix = u[0];
	lg_fd = c;
	pthread_create(&th, NULL, lg_send, NULL);
	usleep(500000);
	close(c);
	usleep(200000);
	t0 = now();
	close(u[1]);
	pthread_join(th, NULL);
	printf("after %.1f\n", now() - t0);
	(void)s;
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "md5"))
		return tcp_connect(argv[2], atoi(argv[3]),
				   argc > 4 ? atoi(argv[4]) : 0, NULL, 1);
	if (argc >= 5 && !strcmp(argv[1], "lsrr"))
		return tcp_connect(argv[3], atoi(argv[4]),
				   argc > 5 ? atoi(argv[5]) : 0, argv[2], 0);
	if (argc >= 3 && !strcmp(argv[1], "optsrr")) {
		int u = socket(AF_INET, SOCK_DGRAM, 0);
		int t = socket(AF_INET, SOCK_STREAM, 0);

		printf("udp %s\n", ans(set_lsrr(u, argv[2])));
		printf("tcp %s\n", ans(set_lsrr(t, argv[2])));
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "udpsrr"))
		return udp_srr(argv[2], 0);
	if (argc >= 3 && !strcmp(argv[1], "cmsgsrr"))
		return udp_srr(argv[2], 1);
	if (argc >= 4 && !strcmp(argv[1], "srh"))
		return srh_connect(argv[2], atoi(argv[3]),
				   argc > 4 ? atoi(argv[4]) : 0);
	if (argc >= 3 && !strcmp(argv[1], "acceptrace"))
		return accept_race(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "linger"))
		return linger_close(atoi(argv[2]));
	fprintf(stderr, "usage: third_doors MODE ...\n");
	return 2;
}
