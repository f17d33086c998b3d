/* tracer/handlers/sockopt.c: getsockopt and setsockopt, the options that
 * would share a port of the run, route a packet off loopback or read memory. */
#include <errno.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "handlers.h"
#include "../fs/fsops.h"
#include "../net/net.h"
#include "netshare.h"

#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif
#define SOCKOPT_CAP 65536

#ifndef SO_DETACH_REUSEPORT_BPF
#define SO_DETACH_REUSEPORT_BPF 68
#endif

/*
 * SOL_SOCKET options that would let another socket share a port of the
 * run (SO_REUSEADDR on UDP, SO_REUSEPORT on TCP and UDP) or undo the
 * filter of its UDP sockets (tracer/net/udp.c). The sharing options are
 * remembered, never applied: getsockopt reports them as set, while no
 * other socket, of the run or a stranger's, can bind the same port. The
 * filter options are refused as a locked filter refuses them. True when
 * decided here.
 */
static bool share_sockopt(struct cr_run *run, const struct seccomp_notif *n,
			  const struct cr_syscall_entry *e, struct cr_sock *s,
			  int opt, const void *val, uint64_t len,
			  struct cr_verdict *v)
{
	bool udp = cr_net_udp_proto(s);
	int on = 0;

	if (s->domain != AF_INET && s->domain != AF_INET6)
		return false;
	if (val && len >= sizeof(int))
		memcpy(&on, val, sizeof(on));
	switch (opt) {
	case SO_REUSEADDR:
	case SO_REUSEPORT:
		if (len < sizeof(int) || (opt == SO_REUSEADDR && !udp))
			return false;	/* the kernel's answer */
		*v = cr_net_flag_set(run->net, s->dup, opt, on != 0) ?
		     v_err(ENOMEM) : v_val(0);
		return true;
	case SO_ATTACH_FILTER:
	case SO_DETACH_FILTER:
	case SO_LOCK_FILTER:
	case SO_ATTACH_BPF:
	case SO_ATTACH_REUSEPORT_CBPF:
	case SO_ATTACH_REUSEPORT_EBPF:
	case SO_DETACH_REUSEPORT_BPF:
		if (!udp)
			return false;
		*v = cr_net_deny(run, n, e, NULL, 0, "net",
				 "the filter of a UDP socket is corral's (it keeps strangers out)",
				 EPERM);
		return true;
	default:
		return false;
	}
}

/* SO_PEERCRED of one end of a pair corral made for the run (net/pairs.c):
 * the kernel's answer names corral; natively the pid is that of the
 * process that asked for the pair (its uid and gid are corral's too: the
 * same user). buf holds the first len bytes of the kernel's struct. */
static void peer_cred_fix(struct cr_run *run, uint64_t ino,
			  unsigned char *buf, socklen_t len)
{
	struct ucred c;
	uint64_t start;
	pid_t tgid;

	if (!cr_net_pair_creator(run->net, ino, &tgid, &start))
		return;
	memset(&c, 0, sizeof(c));
	memcpy(&c, buf, len < sizeof(c) ? len : sizeof(c));
	c.pid = tgid;
	memcpy(buf, &c, len < sizeof(c) ? len : sizeof(c));
}

/* getsockopt with optname 2, 15, 17 or 28 (SO_REUSEADDR, SO_REUSEPORT,
 * SO_PEERCRED, SO_PEERNAME at SOL_SOCKET; other levels' options of those
 * numbers are the kernel's): what the program set, as share_sockopt
 * remembered it; the peer of a pair corral made; the peer's name. */
struct cr_verdict cr_h_getsockopt(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n)
{
	int level = (int)n->data.args[1], opt = (int)n->data.args[2];
	uint64_t valp = n->data.args[3], lenp = n->data.args[4];
	unsigned char buf[256];
	socklen_t bl;
	struct cr_sock s;
	int ulen, rc, flag;

	/* The descriptor first, as the kernel; then a length that cannot
	 * be read, or a negative one, is the kernel's to answer, in its
	 * order among the level's checks (corral answered EFAULT or EINVAL
	 * before the descriptor's EBADF; found by a differential probing
	 * session). */
	rc = cr_sock_open(run, n, (int)n->data.args[0], &s);
	if (rc)
		return v_err(-rc);
	rc = lenp ? cr_mem_read((pid_t)n->pid, lenp, &ulen, sizeof(ulen)) :
		    -EFAULT;
	if (rc == -ESRCH || (rc && !cr_mem_unreadable())) {
		cr_sock_close(&s);
		return v_err(-rc);
	}
	if (rc || ulen < 0) {
		socklen_t *kl = rc ? cr_mem_unreadable() : (socklen_t *)&ulen;

		rc = getsockopt(s.dup, level, opt, buf, kl) < 0 ? errno : EINVAL;
		cr_sock_close(&s);
		return v_err(rc);
	}
	memset(buf, 0, sizeof(buf));
	bl = (socklen_t)ulen < sizeof(buf) ? (socklen_t)ulen : sizeof(buf);
	if (s.rtnl && level == SOL_SOCKET && opt == SO_PEERCRED) {
		/* A netlink socket has no peer: no pid, no ids (the pair's
		 * would name corral). */
		struct ucred none = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };

		bl = bl < sizeof(none) ? bl : sizeof(none);
		memcpy(buf, &none, bl);
		rc = 0;
	} else if (level == SOL_SOCKET && opt == SO_PEERNAME && run->net) {
		/* The peer as getpeername tells it (the kernel's would be
		 * corral's proxy, or a unix peer's inner name; found by a
		 * differential probe), under the kernel's rules: ENOTCONN
		 * without one, EINVAL for a buffer longer than the address,
		 * else the buffer's length of it. */
		union cr_sockaddr peer;
		socklen_t pl = 0;

		rc = cr_net_peer_name(run, &s, &peer, &pl) ? -ENOTCONN :
		     pl < (socklen_t)ulen ? -EINVAL : 0;
		if (!rc)
			memcpy(buf, &peer, bl);
	} else if (level == SOL_SOCKET && run->net &&
	    (flag = cr_net_flag_get(run->net, s.dup, opt)) >= 0) {
		/* As the kernel: an int, cut to the length given. */
		bl = bl < sizeof(int) ? bl : sizeof(int);
		memcpy(buf, &flag, bl);
		rc = 0;
	} else {
		rc = getsockopt(s.dup, level, opt, buf, &bl) < 0 ? -errno : 0;
	}
	if (!rc && level == SOL_SOCKET && opt == SO_PEERCRED)
		peer_cred_fix(run, s.ino, buf, bl);
	cr_sock_close(&s);
	if (rc)
		return v_err(-rc);
	if (bl)
		rc = cr_mem_write((pid_t)n->pid, valp, buf, bl);
	if (!rc) {
		ulen = (int)bl;
		rc = cr_mem_write((pid_t)n->pid, lenp, &ulen, sizeof(ulen));
	}
	return rc ? v_err(-rc) : v_val(0);
}

#ifndef SO_BINDTOIFINDEX
#define SO_BINDTOIFINDEX 62
#endif
#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef IPV6_FLOWLABEL_MGR
#define IPV6_FLOWLABEL_MGR 32	/* linux/in6.h */
#endif
#ifndef IPV6_MINHOPCOUNT
#define IPV6_MINHOPCOUNT 73
#endif

/* An option's value as the kernel reads an int: whole when there is room,
 * else its first byte (as the IPv4 options take it), else 0. */
static int opt_int(const void *val, uint64_t len)
{
	unsigned char c;
	int v = 0;

	if (val && len >= sizeof(int)) {
		memcpy(&v, val, sizeof(v));
	} else if (val && len) {
		memcpy(&c, val, 1);
		v = c;
	}
	return v;
}

static bool opt_always(const void *val, uint64_t len)
{
	return true;
}

static bool opt_set(const void *val, uint64_t len)
{
	return opt_int(val, len) != 0;
}

/* IPv4 options naming a source route (loose 131, strict 137), or ones
 * that cannot be read through (the kernel's own parser decides those:
 * refused, failing closed). Record route and timestamps stay the
 * kernel's, which lets any user set them. */
bool cr_net_opt_source_route(const void *val, uint64_t len)
{
	const unsigned char *o = val;

	if (len && !o)
		return true;
	for (uint64_t i = 0; i < len;) {
		if (o[i] == 0)		/* end of options */
			return false;
		if (o[i] == 1) {	/* no-op */
			i++;
			continue;
		}
		if (o[i] == 131 || o[i] == 137 || i + 1 >= len || o[i + 1] < 2)
			return true;
		i += o[i + 1];
	}
	return false;
}

static bool opt_devname(const void *val, uint64_t len)
{
	return !cr_net_ifname_ok(val ? val : "", val ? (size_t)len : 0);
}

static bool opt_ifindex(const void *val, uint64_t len)
{
	return !cr_net_ifindex_ok(opt_int(val, len));
}

/* IP_UNICAST_IF and IPV6_UNICAST_IF take the index in network order. */
static bool opt_ifindex_be(const void *val, uint64_t len)
{
	return !cr_net_ifindex_ok((int)ntohl((uint32_t)opt_int(val, len)));
}

/* A sticky IPV6_PKTINFO: the interface and source of every later send,
 * including the plain send() corral never sees. Short: the kernel's
 * EINVAL. */
static bool opt_pktinfo6(const void *val, uint64_t len)
{
	struct in6_pktinfo pi;

	if (!val || len < sizeof(pi))
		return false;
	memcpy(&pi, val, sizeof(pi));
	return !cr_net_ifindex_ok(pi.ipi6_ifindex) ||
	       !cr_net_src_ok(AF_INET6, pi.ipi6_addr.s6_addr);
}

/* Multicast memberships: joining a group makes the kernel send membership
 * reports (IGMP, MLD) out of the interface of the join, and the group and
 * source addresses in them are the program's bytes (measured: ~2.7 KB of
 * chosen groups a second seen on the wire from a run with no network
 * rule). Allowed on the loopback interface only, named by index or, for
 * IPv4, by a 127/8 address; a join that names no interface takes the
 * route's, out of the host. Short values: the kernel's EINVAL. */
static bool mcast_v4_dev(const uint8_t *ifaddr, int ifindex)
{
	if (ifindex)
		return ifindex != CR_NET_LOOPBACK_IFINDEX;
	return ifaddr[0] != 127;
}

/* IP_ADD_MEMBERSHIP (ip_mreqn or ip_mreq), IP_ADD_SOURCE_MEMBERSHIP
 * (ip_mreq_source) and IP_MSFILTER (ip_msfilter): the interface address is
 * the second 4 bytes of each, the index the third of ip_mreqn. */
static bool opt_mcast_v4(const void *val, uint64_t len)
{
	const uint8_t *v = val;
	int32_t idx = 0;

	if (!val || len < 8)
		return false;
	if (len >= sizeof(struct ip_mreqn))
		memcpy(&idx, v + 8, sizeof(idx));
	return mcast_v4_dev(v + 4, idx);
}

static bool opt_mcast_v4_addr(const void *val, uint64_t len)
{
	if (!val || len < 8)
		return false;
	return mcast_v4_dev((const uint8_t *)val + 4, 0);
}

/* MCAST_JOIN_GROUP, MCAST_JOIN_SOURCE_GROUP, MCAST_MSFILTER (group_req,
 * group_source_req, group_filter) and IPV6_ADD_MEMBERSHIP (ipv6_mreq):
 * an interface index, first or after the group. */
static bool mcast_index(const void *val, uint64_t len, size_t at)
{
	int32_t idx;

	if (!val || len < at + sizeof(idx))
		return false;
	memcpy(&idx, (const uint8_t *)val + at, sizeof(idx));
	return idx != CR_NET_LOOPBACK_IFINDEX;
}

static bool opt_mcast_group(const void *val, uint64_t len)
{
	return mcast_index(val, len, 0);
}

static bool opt_mcast_v6(const void *val, uint64_t len)
{
	return mcast_index(val, len, offsetof(struct ipv6_mreq, ipv6mr_interface));
}

#define MCAST_WHY "a multicast membership off the loopback interface would send membership reports, carrying the program's group and source addresses, out of the host"
#define RTHDR_WHY "a routing header would choose the packets' first hop"
#define HANDSHAKE_WHY "the option would hold a connect's handshake open (the client drops the answers) until after corral checked who listens"

/*
 * Options of internet sockets that corral refuses (tracer/syscalls.def
 * notifies their numbers; every other level's option of the same number
 * is performed as asked):
 * - a routing header: a type 4 (segment routing) header is accepted from
 *   anyone, and every packet of the socket would go to the program's
 *   first segment, corral's destination only the last;
 * - an interface or source other than loopback: every packet corral lets
 *   a run send goes to a loopback address, and the kernel would route it
 *   by the interface named (out of eth0, with the destination 127.0.0.1
 *   or ::1) — the sends after the option are plain send()s corral never
 *   sees. Loopback and "none" stay allowed;
 * - a handshake that ends later than corral's check of who listens on a
 *   loopback port (tracer/handlers/loopback.c): TCP fast open sends no
 *   SYN until the first write, and with a minimum TTL or hop count of 255
 *   the client drops the listener's SYN-ACK and retries the SYN for
 *   minutes, reaching whoever binds the port meanwhile. Fast open is
 *   answered as a kernel with client fast open disabled answers it;
 * - a multicast membership on any interface but loopback (MCAST_WHY).
 */
struct inet_sockopt {
	int level, opt;
	bool (*refused)(const void *val, uint64_t len);
	int err;
	const char *why;
};

static const struct inet_sockopt inet_sockopts[] = {
	{ IPPROTO_IPV6, IPV6_RTHDR, opt_always, EPERM, RTHDR_WHY },
	{ IPPROTO_IPV6, IPV6_2292PKTOPTIONS, opt_always, EPERM, RTHDR_WHY },
	{ IPPROTO_IPV6, IPV6_FLOWLABEL_MGR, opt_always, EPERM,
	  "IPv6 flow labels are one table for the whole host" },
	/* IPv4's twin: a loose or strict source route among the options
	 * picks the first hop of every later send (and of corral's own
	 * connect). This kernel refuses it to an unprivileged caller; one
	 * that allows it would not be asked. Other options are the
	 * kernel's. */
	{ IPPROTO_IP, IP_OPTIONS, cr_net_opt_source_route, EPERM, RTHDR_WHY },
	{ SOL_SOCKET, SO_BINDTODEVICE, opt_devname, EPERM, WAY_OUT_WHY },
	{ SOL_SOCKET, SO_BINDTOIFINDEX, opt_ifindex, EPERM, WAY_OUT_WHY },
	{ IPPROTO_IP, IP_UNICAST_IF, opt_ifindex_be, EPERM, WAY_OUT_WHY },
	{ IPPROTO_IPV6, IPV6_UNICAST_IF, opt_ifindex_be, EPERM, WAY_OUT_WHY },
	{ IPPROTO_IPV6, IPV6_PKTINFO, opt_pktinfo6, EPERM, WAY_OUT_WHY },
	{ IPPROTO_TCP, TCP_FASTOPEN_CONNECT, opt_set, EOPNOTSUPP,
	  "TCP fast open would send the SYN at the first write, after corral checked who listens" },
	{ IPPROTO_IP, IP_MINTTL, opt_set, EPERM, HANDSHAKE_WHY },
	{ IPPROTO_IPV6, IPV6_MINHOPCOUNT, opt_set, EPERM, HANDSHAKE_WHY },
	{ IPPROTO_IP, IP_ADD_MEMBERSHIP, opt_mcast_v4, EPERM, MCAST_WHY },
	{ IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, opt_mcast_v4_addr, EPERM, MCAST_WHY },
	{ IPPROTO_IP, IP_MSFILTER, opt_mcast_v4_addr, EPERM, MCAST_WHY },
	{ IPPROTO_IP, MCAST_JOIN_GROUP, opt_mcast_group, EPERM, MCAST_WHY },
	{ IPPROTO_IP, MCAST_JOIN_SOURCE_GROUP, opt_mcast_group, EPERM, MCAST_WHY },
	{ IPPROTO_IP, MCAST_MSFILTER, opt_mcast_group, EPERM, MCAST_WHY },
	{ IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, opt_mcast_v6, EPERM, MCAST_WHY },
	{ IPPROTO_IPV6, MCAST_JOIN_GROUP, opt_mcast_group, EPERM, MCAST_WHY },
	{ IPPROTO_IPV6, MCAST_JOIN_SOURCE_GROUP, opt_mcast_group, EPERM, MCAST_WHY },
	{ IPPROTO_IPV6, MCAST_MSFILTER, opt_mcast_group, EPERM, MCAST_WHY },
};

static const struct inet_sockopt *inet_sockopt_refused(int level, int opt,
							const void *val,
							uint64_t len)
{
	for (size_t i = 0; i < sizeof(inet_sockopts) / sizeof(inet_sockopts[0]); i++) {
		const struct inet_sockopt *r = &inet_sockopts[i];

		if (r->level == level && r->opt == opt && r->refused(val, len))
			return r;
	}
	return NULL;
}

/*
 * setsockopt with an optname tracer/syscalls.def notifies, any level (the
 * filter can test one argument). SO_PASSCRED (16) or SO_PASSPIDFD: on an
 * unnamed unix datagram socket the kernel autobinds an abstract name at
 * the first send or connect, and any local user may then send it
 * datagrams: refused there. The sharing and filter options: share_sockopt.
 * Internet sockets' route, interface and handshake options: inet_sockopts.
 * SO_ZEROCOPY on an internet socket: ENOPROTOOPT, a kernel without it
 * (send then copies); on the others the kernel's EOPNOTSUPP.
 * Every other call of these numbers is performed here, on our duplicate,
 * with the value read once (EMULATED: a thread could swap the fd number or
 * the value after a check).
 */
/*
 * Options whose value points elsewhere in the program or names one of its
 * descriptors, at SOL_SOCKET: a classic BPF program (SO_ATTACH_FILTER,
 * SO_ATTACH_REUSEPORT_CBPF: a struct sock_fprog whose `filter` is the
 * program's address) and an eBPF program's fd (SO_ATTACH_BPF,
 * SO_ATTACH_REUSEPORT_EBPF). Performed here, the kernel would read that
 * address in corral's memory and that number in corral's table: an
 * earlier build did, so every attach failed EFAULT where it works
 * natively, and the EFAULT/EINVAL answers mapped corral's address space
 * (found by a probing session). The instructions are read from the
 * program into our copy, the fd taken from its table, and the call made
 * with those, answering as the kernel would (its checks in order:
 * optlen, a NULL or empty or too long program, then the copy). True when
 * decided here (*v the answer; *call the call to make, with *fp or *fd).
 */
static bool sockopt_by_reference(const struct seccomp_notif *n,
				 struct cr_run *run, int level, int opt,
				 const void *val, uint64_t len,
				 struct sock_fprog *fp, struct sock_filter **ins,
				 int *fd, struct cr_verdict *v)
{
	struct sock_fprog u;
	int rc, num;

	if (level != SOL_SOCKET)
		return false;
	switch (opt) {
	case SO_ATTACH_FILTER:
	case SO_ATTACH_REUSEPORT_CBPF:
		if (len != sizeof(u) || !val) {
			*v = v_err(EINVAL);
			return true;
		}
		memcpy(&u, val, sizeof(u));
		if (!u.filter || !u.len || u.len > BPF_MAXINSNS) {
			*v = v_err(EINVAL);
			return true;
		}
		*ins = malloc((size_t)u.len * sizeof(**ins));
		if (!*ins) {
			*v = v_err(ENOMEM);
			return true;
		}
		rc = cr_mem_read((pid_t)n->pid, (uint64_t)(uintptr_t)u.filter,
				 *ins, (size_t)u.len * sizeof(**ins));
		if (rc) {
			*v = v_err(EFAULT);
			return true;
		}
		fp->len = u.len;
		fp->filter = *ins;
		return false;
	case SO_ATTACH_BPF:
	case SO_ATTACH_REUSEPORT_EBPF:
		if (len != sizeof(num) || !val) {	/* the kernel's test */
			*v = v_err(EINVAL);
			return true;
		}
		memcpy(&num, val, sizeof(num));
		*fd = cr_fs_task_fd(run, (pid_t)n->pid, num);
		if (*fd < 0) {
			*v = v_err(-*fd);
			return true;
		}
		return false;
	default:
		return false;
	}
}

struct cr_verdict cr_h_setsockopt(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n)
{
	struct sock_filter *ins = NULL;
	struct sock_fprog fp = { 0 };
	int ofd = -1;
	int level = (int)n->data.args[1], opt = (int)n->data.args[2];
	uint64_t len = (uint32_t)n->data.args[4];
	const struct inet_sockopt *rule;
	union cr_sockaddr a;
	socklen_t al = sizeof(a);
	struct cr_verdict v;
	struct cr_sock s;
	void *val = NULL, *kval;
	uint64_t have = 0;	/* the bytes of val read */
	int rc;

	/* The kernel's order: the descriptor, a socket, a negative length;
	 * then the level's own checks, in the kernel (val unreadable:
	 * corral's unreadable page in its place) or as below. */
	rc = cr_sock_open(run, n, (int)n->data.args[0], &s);
	if (rc)
		return v_err(-rc);
	if ((int)len < 0 || len > SOCKOPT_CAP) {
		cr_sock_close(&s);
		return v_err(EINVAL);
	}
	/* NULL stays NULL; any other pointer of the program's is never
	 * handed to the kernel as such (it would read corral's memory
	 * there): a copy, or corral's unreadable page. */
	kval = n->data.args[3] ? cr_mem_unreadable() : NULL;
	if (n->data.args[3] && !kval) {
		cr_sock_close(&s);
		return v_err(ENOMEM);
	}
	if (len && kval) {
		val = malloc(len);
		if (!val) {
			cr_sock_close(&s);
			return v_err(ENOMEM);
		}
		rc = cr_mem_read((pid_t)n->pid, n->data.args[3], val, len);
		if (rc == -ESRCH) {
			free(val);
			cr_sock_close(&s);
			return v_err(ESRCH);
		}
		/* Readable only in part: the kernel may need only that
		 * part (an int of a longer value), so the part is handed
		 * over ending where corral's unreadable page begins (it was
		 * EFAULT where the kernel succeeds; found by a probing
		 * session). Every decision below sees only the part read. */
		have = rc ? cr_mem_read_prefix((pid_t)n->pid,
					       n->data.args[3], val, len) :
			    len;
		if (have < len)
			memset((char *)val + have, 0, len - have);
		kval = have == len ? val : have ? cr_mem_edge(have) :
		       cr_mem_unreadable();
		if (kval && have && have < len)
			memcpy(kval, val, have);
		if (!have) {
			free(val);
			val = NULL;
		}
		if (!kval) {
			cr_sock_close(&s);
			free(val);
			return v_err(EFAULT);
		}
	}
	/* sk_setsockopt: every option but SO_BINDTODEVICE is an int
	 * first, read before the option is looked at (refusals below came
	 * before it: EPERM for a length of 0; found by a differential
	 * probing session). */
	if (level == SOL_SOCKET && opt != SO_BINDTODEVICE &&
	    (len < sizeof(int) || have < sizeof(int))) {
		cr_sock_close(&s);
		free(val);
		return v_err(len < sizeof(int) ? EINVAL : EFAULT);
	}
	memset(&a, 0, sizeof(a));
	if (s.rtnl && level == SOL_NETLINK) {
		rc = cr_rtnl_setsockopt(s.rtnl, opt, have == len ? val : NULL,
					len);
		cr_sock_close(&s);
		free(val);
		return v_neg(rc);
	}
	if (level == SOL_SOCKET && run->net &&
	    share_sockopt(run, n, e, &s, opt, val, have, &v)) {
		cr_sock_close(&s);
		free(val);
		return v;
	}
	if (sockopt_by_reference(n, run, level, opt,
				 have == len ? val : NULL, len, &fp, &ins,
				 &ofd, &v))
		;	/* answered */
	else if (level == SOL_SOCKET && opt == SO_SNDBUFFORCE)
		/* The program never holds CAP_NET_ADMIN (corral drops it),
		 * while a supervisor run as root might: the kernel's answer
		 * to the program, not what corral's credentials would get. */
		v = v_err(EPERM);
	else if (level == SOL_SOCKET && opt == SO_ZEROCOPY &&
		 (s.domain == AF_INET || s.domain == AF_INET6))
		v = cr_net_deny(run, n, e, NULL, 0, "net",
				"MSG_ZEROCOPY would pin the program's pages in socket queues, past every budget",
				ENOPROTOOPT);
	else if ((s.domain == AF_INET6 ||
		  (s.domain == AF_INET && level != IPPROTO_IPV6)) &&
		 (rule = inet_sockopt_refused(level, opt, val, have)))
		v = cr_net_deny(run, n, e, NULL, 0, "net", rule->why, rule->err);
	else if (level == SOL_SOCKET && (opt == SO_PASSCRED || opt == SO_PASSPIDFD) &&
	    s.domain == AF_UNIX && s.type == SOCK_DGRAM &&
	    getsockname(s.dup, &a.sa, &al) == 0 &&
	    cr_net_abstract_or_unnamed(&a, al))
		v = cr_net_deny(run, n, e, NULL, 0, "net",
				"credentials on an unnamed unix datagram socket would autobind it to an abstract name",
				EACCES);
	else if (fp.filter)
		v = v_rc(setsockopt(s.dup, level, opt, &fp, sizeof(fp)));
	else if (ofd >= 0)
		v = v_rc(setsockopt(s.dup, level, opt, &ofd, sizeof(ofd)));
	else
		v = v_rc(setsockopt(s.dup, level, opt, kval, (socklen_t)len));
	/* A receiver of the run that reads its senders' credentials: from
	 * here a checked unix send is handed back to its task, so that they
	 * are the sender's (net/ownsend.c). */
	if (v.kind == CR_V_VALUE && run->net && level == SOL_SOCKET &&
	    s.domain == AF_UNIX && (opt == SO_PASSCRED || opt == SO_PASSPIDFD))
		run->net->passcred = true;
	if (ofd >= 0)
		close(ofd);
	free(ins);
	cr_sock_close(&s);
	free(val);
	return v;
}
