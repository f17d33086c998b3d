/* tests/progs/net_doors.c: network probes for the ways a run's packets or
 * connections could reach past corral (tests/e2e/test_db_net_doors.py).
 * Each subcommand prints "NAME RESULT" lines; RESULT is "ok", a value,
 * or the errno text.
 *
 * Loopback only: pktinfo, pktinfo6, sticky6, binddev, bindifindex and
 * unicastif with an interface other than lo and without "probe" would put
 * a packet on that interface, and outside corral their documentation-address
 * destinations are not redirected: run them with "probe" (MSG_PROBE: route
 * lookup, nothing is sent) or with lo only.
 *
 *   tcp IP PORT               connect (v4 or v6 by the address's form),
 *                             send "ping\n", print the first reply line
 *   bindscan IP PORT...       bind a TCP socket to IP:PORT for each PORT
 *                             and report the answer (a host's port in use
 *                             answers EADDRINUSE, a free one ok)
 *   connscan IP PORT...       connect to IP:PORT for each PORT
 *   v6opts                    unprivileged IPv6 options and control
 *                             messages that change a packet's route or
 *                             family (IPV6_ADDRFORM, IPV6_NEXTHOP)
 *   tfo IP PORT               TCP_FASTOPEN_CONNECT, then connect + send
 *   procnet                   the host's socket tables through /proc
 *   tfoswap PORT              listen on 127.0.0.1:PORT, connect a client
 *                             with TCP_FASTOPEN_NO_COOKIE+CONNECT (the SYN
 *                             waits for the first write), close the
 *                             listener, wait (bind test) until someone else
 *                             holds the port, then write and read
 *   filterswap PORT           the same without fast open: the run's
 *                             listener drops every SYN (a socket filter
 *                             on it), a non-blocking client connects
 *                             (EINPROGRESS), the listener is closed, and
 *                             the SYN's retransmission finds the next
 *                             holder of the port
 *   ifconf                    the host's interface addresses (SIOCGIFCONF)
 *   peerleak N                a TCP connect to 192.0.2.53:53 (corral's DNS
 *                             responder takes it), getpeername; then N more
 *                             such connects, each closed; getpeername again
 *   families                  socket() of every family/type the kernel has
 *   minttlswap PORT           the same without fast open or a filter: the
 *                             client sets IP_MINTTL 255, so it drops the
 *                             run listener's SYN-ACK and keeps sending
 *                             SYNs; the listener is closed, someone else
 *                             binds the port, IP_MINTTL goes back to 0 and
 *                             the next retransmitted SYN is answered
 *   pktinfo IF SRC [probe]    a datagram to 192.0.2.53:53 (corral sends it
 *                             to its DNS responder on 127.0.0.1) with an
 *                             IP_PKTINFO control message naming interface
 *                             IF and source SRC. With "probe", MSG_PROBE:
 *                             the kernel looks the route up and sends
 *                             nothing (a success means it would have left
 *                             by IF)
 *   pktinfo6 IF SRC [probe]   the same over IPv6 (IPV6_PKTINFO), to
 *                             [2001:db8::53]:53 (corral's responder on ::1)
 *   sticky6 IF SRC [probe]    a UDP socket connected to [2001:db8::53]:53
 *                             (corral connects it to its responder on
 *                             ::1), a sticky IPV6_PKTINFO naming IF and
 *                             SRC, then a plain send() (not notified)
 *   binddev FAMILY IF [probe] a UDP socket connected to port 53 of a
 *                             documentation address (corral connects it to
 *                             its responder on loopback), SO_BINDTODEVICE
 *                             IF, then a plain send()
 *   bindifindex FAMILY IF [probe]  the same with SO_BINDTOIFINDEX
 *   unicastif FAMILY IF [probe]    the same with IP_UNICAST_IF or
 *                             IPV6_UNICAST_IF
 *   md5swap PORT              the same as minttlswap with a TCP_MD5SIG key
 *                             for any peer instead of IP_MINTTL: the run's
 *                             listener has no key and drops every SYN; the
 *                             key is deleted once someone else holds the
 *                             port
 *   fds                       every open descriptor the program starts with
 *   name NAME PORT            getaddrinfo(NAME) through the C library, then
 *                             connect to each IPv4 answer as "tcp" does
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/filter.h>
#include <net/if.h>
#include <netdb.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static const char *ans(int rc)
{
	return rc < 0 ? strerror(errno) : "ok";
}

static socklen_t parse(const char *ip, int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		return sizeof(*a4);
	}
	if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		return sizeof(*a6);
	}
	fprintf(stderr, "bad address %s\n", ip);
	exit(2);
}

static void timeouts(int fd)
{
	struct timeval tv = { 2, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int talk(int fd, const char *tag)
{
	char buf[256];
	ssize_t k;

	if (send(fd, "ping\n", 5, MSG_NOSIGNAL) < 0) {
		printf("%s-send %s\n", tag, strerror(errno));
		return 1;
	}
	k = recv(fd, buf, sizeof(buf) - 1, 0);
	if (k < 0) {
		printf("%s-recv %s\n", tag, strerror(errno));
		return 1;
	}
	buf[k] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	printf("%s-reply \"%s\"\n", tag, buf);
	return 0;
}

static int cmd_tcp(const char *ip, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = parse(ip, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);

	timeouts(fd);
	if (connect(fd, (struct sockaddr *)&ss, l) < 0) {
		printf("connect %s\n", strerror(errno));
		return 1;
	}
	printf("connect ok\n");
	return talk(fd, "tcp");
}

static int cmd_bindscan(const char *ip, char **ports, int n)
{
	for (int i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		socklen_t l = parse(ip, atoi(ports[i]), &ss);
		int fd = socket(ss.ss_family, SOCK_STREAM, 0);

		printf("bind %s:%s %s\n", ip, ports[i],
		       ans(bind(fd, (struct sockaddr *)&ss, l)));
		close(fd);
	}
	return 0;
}

static int cmd_connscan(const char *ip, char **ports, int n)
{
	for (int i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		socklen_t l = parse(ip, atoi(ports[i]), &ss);
		int fd = socket(ss.ss_family, SOCK_STREAM, 0);
		struct timeval a, b;

		gettimeofday(&a, NULL);
		int rc = connect(fd, (struct sockaddr *)&ss, l);
		gettimeofday(&b, NULL);
		printf("connect %s:%s %s %ldus\n", ip, ports[i], ans(rc),
		       (long)((b.tv_sec - a.tv_sec) * 1000000 + b.tv_usec - a.tv_usec));
		close(fd);
	}
	return 0;
}

static int cmd_v6opts(void)
{
	int fd = socket(AF_INET6, SOCK_DGRAM, 0), v = AF_INET;
	struct sockaddr_in6 dst = { .sin6_family = AF_INET6,
				    .sin6_port = htons(53),
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	char cbuf[CMSG_SPACE(sizeof(struct sockaddr_in6))];
	struct iovec iov = { "x", 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = (struct cmsghdr *)cbuf;
	struct sockaddr_in6 hop = { .sin6_family = AF_INET6,
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT };

	printf("addrform-unconnected %s\n",
	       ans(setsockopt(fd, IPPROTO_IPV6, IPV6_ADDRFORM, &v, sizeof(v))));
	connect(fd, (struct sockaddr *)&dst, sizeof(dst));
	memset(cbuf, 0, sizeof(cbuf));
	c->cmsg_level = IPPROTO_IPV6;
	c->cmsg_type = IPV6_NEXTHOP;
	c->cmsg_len = CMSG_LEN(sizeof(hop));
	memcpy(CMSG_DATA(c), &hop, sizeof(hop));
	printf("nexthop-cmsg %s\n", ans((int)sendmsg(fd, &m, 0)));
	close(fd);
	return 0;
}

static int cmd_tfo(const char *ip, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = parse(ip, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM, 0), on = 1;

	timeouts(fd);
	printf("tfo-connect-opt %s\n",
	       ans(setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &on, sizeof(on))));
	if (connect(fd, (struct sockaddr *)&ss, l) < 0) {
		printf("connect %s\n", strerror(errno));
		return 1;
	}
	printf("connect ok\n");
	return talk(fd, "tfo");
}

static int cmd_procnet(void)
{
	const char *f[] = { "/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp",
			    "/proc/net/unix", "/proc/self/net/tcp", NULL };

	for (int i = 0; f[i]; i++) {
		char buf[4096];
		int fd = open(f[i], O_RDONLY);
		ssize_t k = fd < 0 ? -1 : read(fd, buf, sizeof(buf));

		printf("read %s %s %zd\n", f[i], fd < 0 ? strerror(errno) : "ok", k);
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

#ifndef TCP_FASTOPEN_NO_COOKIE
#define TCP_FASTOPEN_NO_COOKIE 34
#endif
static int cmd_tfoswap(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), on = 1;

	timeouts(c);
	printf("listen %s\n", ans(bind(l, (struct sockaddr *)&a, sizeof(a)) ||
				  listen(l, 4) ? -1 : 0));
	printf("nocookie %s\n", ans(setsockopt(c, IPPROTO_TCP, TCP_FASTOPEN_NO_COOKIE, &on, sizeof(on))));
	printf("tfoconnect %s\n", ans(setsockopt(c, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &on, sizeof(on))));
	printf("connect %s\n", ans(connect(c, (struct sockaddr *)&a, sizeof(a))));
	usleep(500000);	/* the host side sees the run's listener */
	close(l);
	printf("released\n");
	for (int i = 0; i < 160; i++) {
		int t = socket(AF_INET, SOCK_STREAM, 0);
		int rc = bind(t, (struct sockaddr *)&a, sizeof(a));
		int e = errno;

		close(t);
		if (rc < 0 && e == EADDRINUSE) {
			printf("taken-after %dms\n", i * 50);
			break;
		}
		usleep(50000);
	}
	return talk(c, "tfoswap");
}

static int cmd_filterswap(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sock_filter drop[] = { { BPF_RET | BPF_K, 0, 0, 0 } };
	struct sock_fprog prog = { 1, drop };
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct pollfd p = { .fd = c, .events = POLLOUT };
	int err = 0;
	socklen_t el = sizeof(err);

	printf("listen %s\n", ans(bind(l, (struct sockaddr *)&a, sizeof(a)) ||
				  listen(l, 4) ? -1 : 0));
	printf("filter %s\n", ans(setsockopt(l, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog))));
	printf("connect %s\n", ans(connect(c, (struct sockaddr *)&a, sizeof(a))));
	close(l);
	printf("released\n");
	printf("poll %d\n", poll(&p, 1, 8000));
	getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el);
	printf("so_error %s\n", err ? strerror(err) : "none");
	fcntl(c, F_SETFL, 0);
	timeouts(c);
	return talk(c, "filterswap");
}

static int cmd_ifconf(void)
{
	struct ifreq r[16];
	struct ifconf ic = { .ifc_len = sizeof(r), .ifc_req = r };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (ioctl(fd, SIOCGIFCONF, &ic) < 0) {
		printf("ifconf %s\n", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < ic.ifc_len / sizeof(r[0]); i++)
		printf("if %s %s\n", r[i].ifr_name,
		       inet_ntoa(((struct sockaddr_in *)&r[i].ifr_addr)->sin_addr));
	return 0;
}

static void peer(int fd, const char *tag)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	char t[64] = "?";
	int port = 0;

	if (getpeername(fd, (struct sockaddr *)&ss, &l) < 0) {
		printf("%s %s\n", tag, strerror(errno));
		return;
	}
	inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, t, sizeof(t));
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	printf("%s %s:%d\n", tag, t, port);
}

static int cmd_peerleak(int n)
{
	struct sockaddr_storage ss;
	socklen_t l = parse("192.0.2.53", 53, &ss);
	int a = socket(AF_INET, SOCK_STREAM, 0);

	printf("connect %s\n", ans(connect(a, (struct sockaddr *)&ss, l)));
	peer(a, "peer-before");
	for (int i = 0; i < n; i++) {
		int b = socket(AF_INET, SOCK_STREAM, 0);

		if (connect(b, (struct sockaddr *)&ss, l) < 0) {
			printf("connect-%d %s\n", i, strerror(errno));
			close(b);
			break;
		}
		close(b);
	}
	peer(a, "peer-after");
	return 0;
}

static int cmd_families(void)
{
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET, SOCK_RDM };
	static const int protos[][2] = { { AF_INET, IPPROTO_ICMP }, { AF_INET, IPPROTO_SCTP },
					 { AF_INET, 262 }, { AF_INET6, IPPROTO_ICMPV6 },
					 { AF_INET, IPPROTO_RAW }, { AF_INET6, IPPROTO_SCTP } };

	for (int f = 0; f < 46; f++)
		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			int fd = socket(f, types[t], 0);

			if (fd >= 0) {
				printf("socket %d %d 0 ok\n", f, types[t]);
				close(fd);
			}
		}
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		for (size_t t = 0; t < 3; t++) {
			int fd = socket(protos[i][0], types[t], protos[i][1]);

			if (fd >= 0) {
				printf("socket %d %d %d ok\n", protos[i][0], types[t], protos[i][1]);
				close(fd);
			}
		}
	return 0;
}

static int cmd_minttlswap(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int ttl = 255, zero = 0, err = 0;
	struct pollfd p = { .fd = c, .events = POLLOUT };
	socklen_t el = sizeof(err);

	printf("listen %s\n", ans(bind(l, (struct sockaddr *)&a, sizeof(a)) ||
				  listen(l, 4) ? -1 : 0));
	printf("minttl %s\n", ans(setsockopt(c, IPPROTO_IP, IP_MINTTL, &ttl, sizeof(ttl))));
	printf("connect %s\n", ans(connect(c, (struct sockaddr *)&a, sizeof(a))));
	usleep(500000);
	close(l);
	printf("released\n");
	for (int i = 0; i < 160; i++) {
		int t = socket(AF_INET, SOCK_STREAM, 0);
		int rc = bind(t, (struct sockaddr *)&a, sizeof(a));
		int e = errno;

		close(t);
		if (rc < 0 && e == EADDRINUSE) {
			printf("taken-after %dms\n", i * 50);
			break;
		}
		usleep(50000);
	}
	printf("minttl-off %s\n", ans(setsockopt(c, IPPROTO_IP, IP_MINTTL, &zero, sizeof(zero))));
	printf("poll %d\n", poll(&p, 1, 9000));
	getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el);
	printf("so_error %s\n", err ? strerror(err) : "none");
	fcntl(c, F_SETFL, 0);
	timeouts(c);
	return talk(c, "minttlswap");
}

#ifndef MSG_PROBE
#define MSG_PROBE 0x10	/* the kernel's: route only, send nothing (glibc: MSG_PROXY) */
#endif
/* An interface as "NAME" or "NAME=INDEX": a run that sees lo alone cannot
 * ask for a host interface's index (ENODEV), so a test passes it. */
static unsigned ifindex_of(const char *ifname)
{
	const char *eq = strchr(ifname, '=');

	return eq ? (unsigned)strtoul(eq + 1, NULL, 10) : if_nametoindex(ifname);
}

static int cmd_pktinfo(const char *ifname, const char *src, bool probe)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(53) };
	char cbuf[CMSG_SPACE(sizeof(struct in_pktinfo))];
	struct iovec iov = { "\0\1\1\0\0\1\0\0\0\0\0\0\0\0\1\0\1", 17 };
	struct msghdr m = { .msg_name = &dst, .msg_namelen = sizeof(dst),
			    .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = (struct cmsghdr *)cbuf;
	struct in_pktinfo pi = { 0 };
	ssize_t k;

	inet_pton(AF_INET, "192.0.2.53", &dst.sin_addr);
	pi.ipi_ifindex = (int)ifindex_of(ifname);
	inet_pton(AF_INET, src, &pi.ipi_spec_dst);
	memset(cbuf, 0, sizeof(cbuf));
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	k = sendmsg(fd, &m, probe ? MSG_PROBE : 0);
	printf("pktinfo %s(%d) src %s %s: %s\n", ifname, pi.ipi_ifindex, src,
	       probe ? "probe" : "send", k < 0 ? strerror(errno) : "sent");
	return 0;
}

static int cmd_pktinfo6(const char *ifname, const char *src, bool probe)
{
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 dst = { .sin6_family = AF_INET6, .sin6_port = htons(53) };
	char cbuf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
	struct iovec iov = { "\0\1\1\0\0\1\0\0\0\0\0\0\0\0\1\0\1", 17 };
	struct msghdr m = { .msg_name = &dst, .msg_namelen = sizeof(dst),
			    .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = (struct cmsghdr *)cbuf;
	struct in6_pktinfo pi;
	ssize_t k;

	memset(&pi, 0, sizeof(pi));
	inet_pton(AF_INET6, "2001:db8::53", &dst.sin6_addr);
	pi.ipi6_ifindex = ifindex_of(ifname);
	inet_pton(AF_INET6, src, &pi.ipi6_addr);
	memset(cbuf, 0, sizeof(cbuf));
	c->cmsg_level = IPPROTO_IPV6;
	c->cmsg_type = IPV6_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	k = sendmsg(fd, &m, probe ? MSG_PROBE : 0);
	printf("pktinfo6 %s(%d) src %s %s: %s\n", ifname, pi.ipi6_ifindex, src,
	       probe ? "probe" : "send", k < 0 ? strerror(errno) : "sent");
	return 0;
}

static int cmd_sticky6(const char *ifname, const char *src, bool probe)
{
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 dst = { .sin6_family = AF_INET6, .sin6_port = htons(53) };
	struct in6_pktinfo pi;
	ssize_t k;

	memset(&pi, 0, sizeof(pi));
	inet_pton(AF_INET6, "2001:db8::53", &dst.sin6_addr);
	printf("connect %s\n", ans(connect(fd, (struct sockaddr *)&dst, sizeof(dst))));
	pi.ipi6_ifindex = ifindex_of(ifname);
	inet_pton(AF_INET6, src, &pi.ipi6_addr);
	printf("sticky %s\n", ans(setsockopt(fd, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi))));
	k = send(fd, "\0\1\1\0\0\1\0\0\0\0\0\0\0\0\1\0\1", 17, probe ? MSG_PROBE : 0);
	printf("sticky6 %s(%d) src %s %s: %s\n", ifname, pi.ipi6_ifindex, src,
	       probe ? "probe" : "send", k < 0 ? strerror(errno) : "sent");
	return 0;
}

#ifndef SO_BINDTOIFINDEX
#define SO_BINDTOIFINDEX 62
#endif
#ifndef IP_UNICAST_IF
#define IP_UNICAST_IF 50
#endif
#ifndef IPV6_UNICAST_IF
#define IPV6_UNICAST_IF 76
#endif

/* how: 0 SO_BINDTODEVICE, 1 SO_BINDTOIFINDEX, 2 IP(V6)_UNICAST_IF */
static int cmd_binddev(int v6, const char *ifname, bool probe, int how)
{
	static const char *names[] = { "bindtodevice", "bindtoifindex", "unicastif" };
	struct sockaddr_storage ss;
	socklen_t l = parse(v6 ? "2001:db8::53" : "192.0.2.53", 53, &ss);
	int fd = socket(ss.ss_family, SOCK_DGRAM, 0), rc;
	int idx = (int)ifindex_of(ifname), be = (int)htonl((uint32_t)idx);
	char name[64];
	ssize_t k;

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(ifname, "="), ifname);

	printf("connect %s\n", ans(connect(fd, (struct sockaddr *)&ss, l)));
	if (how == 0)
		rc = setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name,
				(socklen_t)strlen(name) + 1);
	else if (how == 1)
		rc = setsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &idx, sizeof(idx));
	else
		rc = setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
				v6 ? IPV6_UNICAST_IF : IP_UNICAST_IF, &be, sizeof(be));
	printf("%s %s\n", names[how], ans(rc));
	k = send(fd, "\0\1\1\0\0\1\0\0\0\0\0\0\0\0\1\0\1", 17, probe ? MSG_PROBE : 0);
	printf("%s%s %s %s: %s\n", names[how], v6 ? "6" : "4", ifname,
	       probe ? "probe" : "send", k < 0 ? strerror(errno) : "sent");
	return 0;
}

/* A TCP_MD5SIG key for any IPv4 peer (keylen 0 deletes it). */
static int md5key(int fd, int keylen)
{
	struct tcp_md5sig m;
	struct sockaddr_in *p = (struct sockaddr_in *)&m.tcpm_addr;

	memset(&m, 0, sizeof(m));
	m.tcpm_flags = TCP_MD5SIG_FLAG_PREFIX;
	m.tcpm_prefixlen = 0;
	p->sin_family = AF_INET;
	m.tcpm_keylen = (uint16_t)keylen;
	memcpy(m.tcpm_key, "netdoors", 8);
	return setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG_EXT, &m, sizeof(m));
}

static int cmd_md5swap(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int err = 0;
	struct pollfd p = { .fd = c, .events = POLLOUT };
	socklen_t el = sizeof(err);

	printf("listen %s\n", ans(bind(l, (struct sockaddr *)&a, sizeof(a)) ||
				  listen(l, 4) ? -1 : 0));
	printf("md5 %s\n", ans(md5key(c, 8)));
	printf("connect %s\n", ans(connect(c, (struct sockaddr *)&a, sizeof(a))));
	usleep(500000);	/* the host side sees the run's listener */
	close(l);
	printf("released\n");
	for (int i = 0; i < 160; i++) {
		int t = socket(AF_INET, SOCK_STREAM, 0);
		int rc = bind(t, (struct sockaddr *)&a, sizeof(a));
		int e = errno;

		close(t);
		if (rc < 0 && e == EADDRINUSE) {
			printf("taken-after %dms\n", i * 50);
			break;
		}
		usleep(50000);
	}
	printf("md5-off %s\n", ans(md5key(c, 0)));
	printf("poll %d\n", poll(&p, 1, 9000));
	getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el);
	printf("so_error %s\n", err ? strerror(err) : "none");
	fcntl(c, F_SETFL, 0);
	timeouts(c);
	return talk(c, "md5swap");
}

static int cmd_fds(void)
{
	for (int fd = 0; fd < 4096; fd++) {
		struct stat st;
		char l[64], t[256];
		ssize_t k;

		if (fstat(fd, &st) < 0)
			continue;
		snprintf(l, sizeof(l), "/proc/self/fd/%d", fd);
		k = readlink(l, t, sizeof(t) - 1);
		t[k > 0 ? k : 0] = '\0';
		printf("fd %d mode %o %s\n", fd, st.st_mode & S_IFMT, t);
	}
	return 0;
}

static int cmd_name(const char *name, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res, *r;
	int rc = getaddrinfo(name, NULL, &hints, &res);

	if (rc) {
		printf("resolve %s\n", gai_strerror(rc));
		return 1;
	}
	for (r = res; r; r = r->ai_next) {
		char ip[64];

		inet_ntop(AF_INET, &((struct sockaddr_in *)r->ai_addr)->sin_addr, ip, sizeof(ip));
		printf("resolved %s\n", ip);
		cmd_tcp(ip, port);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "tcp"))
		return cmd_tcp(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "bindscan"))
		return cmd_bindscan(argv[2], argv + 3, argc - 3);
	if (argc >= 4 && !strcmp(argv[1], "connscan"))
		return cmd_connscan(argv[2], argv + 3, argc - 3);
	if (argc >= 2 && !strcmp(argv[1], "v6opts"))
		return cmd_v6opts();
	if (argc >= 4 && !strcmp(argv[1], "tfo"))
		return cmd_tfo(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "name"))
		return cmd_name(argv[2], atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "tfoswap"))
		return cmd_tfoswap(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "filterswap"))
		return cmd_filterswap(atoi(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "ifconf"))
		return cmd_ifconf();
	if (argc >= 3 && !strcmp(argv[1], "peerleak"))
		return cmd_peerleak(atoi(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "families"))
		return cmd_families();
	if (argc >= 3 && !strcmp(argv[1], "minttlswap"))
		return cmd_minttlswap(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "pktinfo"))
		return cmd_pktinfo(argv[2], argv[3], argc >= 5 && !strcmp(argv[4], "probe"));
	if (argc >= 4 && !strcmp(argv[1], "pktinfo6"))
		return cmd_pktinfo6(argv[2], argv[3], argc >= 5 && !strcmp(argv[4], "probe"));
	if (argc >= 4 && !strcmp(argv[1], "sticky6"))
		return cmd_sticky6(argv[2], argv[3], argc >= 5 && !strcmp(argv[4], "probe"));
	if (argc >= 4 && !strcmp(argv[1], "binddev"))
		return cmd_binddev(!strcmp(argv[2], "6"), argv[3], argc >= 5 && !strcmp(argv[4], "probe"), 0);
	if (argc >= 4 && !strcmp(argv[1], "bindifindex"))
		return cmd_binddev(!strcmp(argv[2], "6"), argv[3], argc >= 5 && !strcmp(argv[4], "probe"), 1);
	if (argc >= 4 && !strcmp(argv[1], "unicastif"))
		return cmd_binddev(!strcmp(argv[2], "6"), argv[3], argc >= 5 && !strcmp(argv[4], "probe"), 2);
	if (argc >= 3 && !strcmp(argv[1], "md5swap"))
		return cmd_md5swap(atoi(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "fds"))
		return cmd_fds();
	if (argc >= 2 && !strcmp(argv[1], "procnet"))
		return cmd_procnet();
	fprintf(stderr, "usage: see the comment at the top\n");
	return 2;
}
