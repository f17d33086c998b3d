/* tracer/net/iface.c: the host's ways out and its own addresses: which
 * interface and source choices a run may make, and which addresses the host owns. */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "net.h"

/*
 * Every packet corral lets a run send goes to a loopback address (its
 * proxy, its DNS responder, the run's own sockets). The kernel still
 * routes it by whatever the socket or the message names: an interface
 * (SO_BINDTODEVICE, IP_UNICAST_IF, the ifindex of IP_PKTINFO) or a
 * source address of another interface turns a datagram for 127.0.0.1
 * into one sent out of eth0. So the only interface a run may name is
 * loopback, and the only sources are loopback or the unspecified one.
 */

bool cr_net_ifindex_ok(int ifindex)
{
	return ifindex == 0 || ifindex == CR_NET_LOOPBACK_IFINDEX;
}

bool cr_net_ifname_ok(const char *name, size_t len)
{
	char n[IF_NAMESIZE];
	size_t k = len < sizeof(n) - 1 ? len : sizeof(n) - 1;

	/* As the kernel reads it: at most IFNAMSIZ-1 bytes, up to a NUL;
	 * an empty name unbinds. */
	memset(n, 0, sizeof(n));
	memcpy(n, name, k);
	if (!n[0])
		return true;
	return if_nametoindex(n) == CR_NET_LOOPBACK_IFINDEX;
}

bool cr_net_src_ok(int family, const uint8_t *addr)
{
	static const uint8_t zero[16];

	if (family == AF_INET)
		return !memcmp(addr, zero, 4) || addr[0] == 127;
	/* IPv4-mapped: what an IPv6 socket sending to a mapped address
	 * uses as its IPv4 source. */
	if (!memcmp(addr, zero, 10) && addr[10] == 0xff && addr[11] == 0xff)
		return !memcmp(addr + 12, zero, 4) || addr[12] == 127;
	return !memcmp(addr, zero, 15) && (addr[15] == 0 || addr[15] == 1);
}

bool cr_net_sock_dev_ok(int fd)
{
	int idx = 0;
	socklen_t l = sizeof(idx);
	char name[IF_NAMESIZE];

	if (getsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &idx, &l) == 0)
		return cr_net_ifindex_ok(idx);
	if (errno != ENOPROTOOPT)
		return false;
	/* Kernels before SO_BINDTOIFINDEX: the name, empty when unbound. */
	l = sizeof(name);
	if (getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, &l) < 0)
		return false;
	return cr_net_ifname_ok(name, l);
}

/*
 * Is addr one of the host's own? Asked of the kernel as `ip route get`
 * does (RTM_GETROUTE, unprivileged): the route to an address the host
 * owns is a local one (or a broadcast or anycast one, still this host),
 * whatever range it lies in, so a host service bound to 0.0.0.0 is not
 * reachable through the host's public address either. Asked per decision,
 * never at start-up: a run without network rules never asks, and an
 * address the host gains during the run is seen. 1 owned, 0 not, -1 when
 * the kernel could not be asked (the caller treats it as owned).
 */
int cr_net_host_owned(int family, const uint8_t *addr)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg r;
		char attrs[RTA_SPACE(16)];
	} req;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	struct rtattr *a;
	size_t alen = family == AF_INET ? 4 : 16;
	struct timeval tv = { 1, 0 };
	ssize_t got;
	int fd, rc = -1;

	if (family != AF_INET && family != AF_INET6)
		return -1;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -1;
	/* The kernel answers at once; bounded all the same. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.r)) + RTA_LENGTH(alen);
	req.h.nlmsg_type = RTM_GETROUTE;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = 1;
	req.r.rtm_family = (unsigned char)family;
	req.r.rtm_dst_len = (unsigned char)(alen * 8);
	a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(NLMSG_LENGTH(sizeof(req.r))));
	a->rta_type = RTA_DST;
	a->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(a), addr, alen);
	if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0)
		goto out;
	do
		got = recv(fd, buf, sizeof(buf), 0);
	while (got < 0 && errno == EINTR);
	if (got < (ssize_t)sizeof(*h) || !NLMSG_OK(h, (size_t)got))
		goto out;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		/* No route at all: not an address of this host. */
		if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) &&
		    (e->error == -ENETUNREACH || e->error == -EHOSTUNREACH))
			rc = 0;
		goto out;
	}
	if (h->nlmsg_type == RTM_NEWROUTE &&
	    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct rtmsg))) {
		const struct rtmsg *r = NLMSG_DATA(h);

		rc = r->rtm_type == RTN_LOCAL || r->rtm_type == RTN_BROADCAST ||
		     r->rtm_type == RTN_ANYCAST;
	}
out:
	close(fd);
	return rc;
}
