/* tracer/net/rtnl.c: a run's route netlink sockets, emulated: each is one end
 * of a pair whose other end corral holds and answers (policy/rtnlmsg.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "corral/rtnlmsg.h"
#include "net.h"
#include "../budget/budget.h"

/*
 * Programs list the interfaces through NETLINK_ROUTE (glibc's getifaddrs
 * and if_nameindex, so Node's os.networkInterfaces(), Python's
 * socket.if_nameindex(); Go's net.Interfaces; iproute2). A real one would
 * show the host's interfaces, addresses, routes and neighbours, so the
 * kernel's is never made; the program gets one end of a unix seqpacket
 * pair instead, and corral answers what is sent to the other end with
 * the run's view: lo alone.
 *
 * Readers check that an answer comes from the kernel: glibc and iproute2
 * skip any whose sender's nl_pid is not 0, iproute2 and libmnl refuse a
 * sender address that is not exactly a sockaddr_nl long. corral's end is
 * bound to an abstract name of ten bytes, so the sender address the
 * program receives is twelve bytes long and its bytes 4-7, where
 * sockaddr_nl keeps nl_pid, are zero. Its family reads AF_UNIX, which
 * none of them checks (recvfrom, which corral sees, reports AF_NETLINK).
 *
 * Requests come two ways: an addressed send (sendto, sendmsg, sendmmsg:
 * every one is notified) is answered before the call returns, as the
 * kernel answers a dump request within the send; a write or an
 * unaddressed send reaches corral's end directly and is answered from
 * the loop, moments later (a reader polling with MSG_DONTWAIT at once,
 * as musl's getifaddrs does, may find nothing yet). When every
 * descriptor of the program's end is closed, corral's end hangs up and
 * the record goes.
 *
 * One request is refused as if netlink were not there: glibc's
 * getaddrinfo asks a fresh socket for an address dump (__check_pf: a
 * 20-byte RTM_GETADDR dump request of AF_UNSPEC, the socket's first,
 * sent with sendto and the kernel's address) to learn whether
 * the host has IPv4 and IPv6 addresses besides loopback; with lo alone it
 * would conclude it has neither, and every AF_INET or AF_INET6 lookup
 * with AI_ADDRCONFIG would fail (EAI_NONAME) where the host and earlier
 * builds answered. Refused (ECONNREFUSED), glibc assumes both, as it did
 * while netlink was refused. getifaddrs asks for links first and is
 * answered.
 */

#define RTNL_SNDBUF 131072	/* doubled by the kernel: what may wait unread
				 * (a datagram's 64 answers, with room) */
#define RTNL_READ_MAX CR_RTNL_SEND_MAX	/* the largest request read */
#define RTNL_BATCH 16		/* datagrams answered per wake-up */
/* Requests answered in one datagram: the kernel answers them all, but a
 * datagram of ~208 KiB holds 10 000 of them, and each answer is corral's
 * work (a probing session bought 13.6 s of it with 139 ms of its own);
 * the rest of the datagram is not looked at. */
#define RTNL_PER_DATAGRAM 64

struct cr_rtnl {
	bool used;
	uint64_t ino;		/* the program's end */
	int fd;			/* owned: corral's end, bound to the name */
	struct cr_watch *w;
	struct cr_run *run;	/* borrowed, for the watch */
	int type;		/* SOCK_RAW or SOCK_DGRAM, as asked */
	pid_t tgid;		/* who made it: the portid autobind gives */
	uint32_t portid;	/* 0 until bound */
	uint32_t groups;
	bool bound, cap_ack;
	bool asked;		/* a request came before */
};

static struct cr_rtnl_view view_of(struct cr_netstate *ns)
{
	/* ::1 is shown when the host's lo has it (IPv6 may be off). */
	if (!ns->rtnl_view_known) {
		FILE *f = fopen("/proc/net/if_inet6", "re");
		char line[128];

		ns->rtnl_ipv6 = false;
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "00000000000000000000000000000001", 32))
				ns->rtnl_ipv6 = true;
		if (f)
			fclose(f);
		ns->rtnl_view_known = true;
	}
	return (struct cr_rtnl_view){ .ipv6 = ns->rtnl_ipv6 };
}

static void release(struct cr_rtnl *r)
{
	if (!r->used)
		return;
	cr_loop_unwatch(r->run, r->w);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* Let go of every record whose program's end is closed (corral's end hung
 * up), without waiting for the loop to say so. */
static void sweep(struct cr_netstate *ns)
{
	struct pollfd p[CR_NET_MAX_RTNL];

	for (size_t i = 0; i < CR_NET_MAX_RTNL; i++)
		p[i] = (struct pollfd){ .fd = ns->rtnl[i].used ? ns->rtnl[i].fd : -1 };
	if (poll(p, CR_NET_MAX_RTNL, 0) <= 0)
		return;
	for (size_t i = 0; i < CR_NET_MAX_RTNL; i++)
		if (p[i].revents & (POLLHUP | POLLERR))
			release(&ns->rtnl[i]);
}

struct cr_rtnl *cr_rtnl_find(struct cr_netstate *ns, uint64_t ino)
{
	for (size_t i = 0; ns->rtnl && i < CR_NET_MAX_RTNL; i++)
		if (ns->rtnl[i].used && ns->rtnl[i].ino == ino)
			return &ns->rtnl[i];
	return NULL;
}

int cr_rtnl_type(const struct cr_rtnl *r)
{
	return r->type;
}

static bool portid_taken(const struct cr_netstate *ns, uint32_t portid)
{
	for (size_t i = 0; i < CR_NET_MAX_RTNL; i++)
		if (ns->rtnl[i].used && ns->rtnl[i].bound &&
		    ns->rtnl[i].portid == portid)
			return true;
	return false;
}

/* netlink_autobind: the process's id for its first socket, then a
 * negative id below -4096 chosen at random. */
static void autobind(struct cr_netstate *ns, struct cr_rtnl *r)
{
	uint32_t id = r->tgid > 0 ? (uint32_t)r->tgid : 0;

	if (r->bound)
		return;
	while (!id || portid_taken(ns, id)) {
		uint32_t x = 0;

		if (getrandom(&x, sizeof(x), 0) != sizeof(x))
			x = ns->rtnl_rover++;
		id = (uint32_t)-(int64_t)(4096 + x % (0x7fffffffu - 4096));
	}
	r->portid = id;
	r->bound = true;
}

/* Answer the requests of one datagram (RTNL_PER_DATAGRAM at most), each
 * answer a datagram of its own on corral's end; one the program's end has
 * no room for is dropped. The callers charge the time to the run. */
static void answer(struct cr_run *run, struct cr_rtnl *r, const uint8_t *m,
		   size_t len)
{
	struct cr_rtnl_view view = view_of(run->net);
	size_t cap = CR_RTNL_ANSWER_BASE + len, used;
	uint8_t *out = malloc(cap);
	int k = 0;

	if (!out)
		return;
	for (size_t off = 0; off < len && k++ < RTNL_PER_DATAGRAM; off += used) {
		size_t n = cr_rtnl_answer(m + off, len - off, &used, r->portid,
					  r->cap_ack, &view, out, cap);

		if (n)
			(void)send(r->fd, out, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (!used)
			break;
	}
	free(out);
}

/* glibc's address-family probe (see above), exactly as __check_pf sends
 * it: the socket's first request, sent with an address, a datagram of
 * one 20-byte RTM_GETADDR dump request of every family. A write or an
 * unaddressed send is never refused: it has no error to give, and its
 * reader would wait for ever for an answer (found by a probing session). */
static bool family_probe(const uint8_t *m, size_t len)
{
	struct nlmsghdr h;

	if (len != 20)
		return false;
	memcpy(&h, m, sizeof(h));
	return h.nlmsg_type == RTM_GETADDR && h.nlmsg_len == 20 &&
	       h.nlmsg_flags == (NLM_F_REQUEST | NLM_F_DUMP) &&
	       m[NLMSG_HDRLEN] == AF_UNSPEC;
}

static void on_request(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_rtnl *r = arg;
	uint64_t t0;
	uint8_t *buf;

	if (!run->net || !r->used)
		return;
	/* All of it is the run's CPU: reading what it wrote as well as
	 * answering (a write is no notification; a probing session made
	 * corral read 208 KiB datagrams of no request, uncharged). */
	t0 = cr_thread_cpu_ns();
	/* Every copy of the program's end closed: nobody could read an
	 * answer, and nobody can send again. */
	if (events & (EPOLLHUP | EPOLLERR)) {
		release(r);
		return;
	}
	buf = malloc(RTNL_READ_MAX);
	if (!buf)
		return;
	for (int i = 0; i < RTNL_BATCH; i++) {
		ssize_t got = recv(r->fd, buf, RTNL_READ_MAX,
				   MSG_DONTWAIT | MSG_TRUNC);

		if (got < 0)
			break;	/* EAGAIN: all answered */
		/* An empty record (answered by nothing, as an empty skb),
		 * or the end of what the program may still write (it shut
		 * its end down for writing): then only the hang-up is
		 * waited for, or the loop would wake for ever. */
		if (got == 0) {
			if (events & EPOLLRDHUP) {
				cr_loop_modify(run, r->w, 0);
				break;
			}
			continue;
		}
		/* Longer than read: the kernel would have refused its send
		 * (EMSGSIZE past the buffer); nothing is answered. */
		if ((size_t)got > RTNL_READ_MAX)
			continue;
		autobind(run->net, r);
		r->asked = true;
		answer(run, r, buf, (size_t)got);
	}
	free(buf);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
}

/* corral's end: an abstract name of ten bytes, bytes 2-5 zero (nl_pid as
 * the program reads it). Bytes 2-9 all zero when one of those 256 names is
 * free, so nl_groups reads 0 as well; else 6-9 at random, which no one
 * on the host can take ahead (a probing session, as another uid, held
 * names derived from corral's pid and the socket's inode, and the run's
 * socket() failed). */
static int bind_sender(int fd)
{
	struct sockaddr_un a;
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 10);
	uint8_t start = 0;

	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = 0;
	for (unsigned t = 0; t < 256 + 64; t++) {
		uint32_t y = 0;

		if (t >= 256 && getrandom(&y, sizeof(y), 0) != sizeof(y))
			return -EAGAIN;
		memset(&a, 0, sizeof(a));
		a.sun_family = AF_UNIX;
		a.sun_path[1] = (char)(uint8_t)(start + t);
		memcpy(a.sun_path + 6, &y, sizeof(y));
		if (bind(fd, (struct sockaddr *)&a, len) == 0)
			return 0;
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -EADDRINUSE;
}

struct cr_verdict cr_rtnl_socket(struct cr_run *run,
				 const struct seccomp_notif *n, int type)
{
	struct cr_netstate *ns = run->net;
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	int sv[2] = { -1, -1 }, sndbuf = RTNL_SNDBUF, err = 0;
	struct cr_rtnl *r = NULL;
	struct cr_verdict v;
	struct stat st;

	/* __sys_socket's flag check, then netlink_create's type check. */
	if (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC | 0xf))
		return CR_V_ERR(EINVAL);
	if (base != SOCK_RAW && base != SOCK_DGRAM)
		return CR_V_ERR(ESOCKTNOSUPPORT);
	if (!ns->rtnl && !(ns->rtnl = calloc(CR_NET_MAX_RTNL, sizeof(*ns->rtnl))))
		return CR_V_ERR(ENOMEM);
	for (int pass = 0; !r && pass < 2; pass++) {
		/* Full: those closed by now go first, their hang-ups maybe
		 * still queued behind this call in the loop (a program that
		 * closed 64 and made one more met ENOBUFS under the
		 * sanitizer build). */
		if (pass)
			sweep(ns);
		for (size_t i = 0; !r && i < CR_NET_MAX_RTNL; i++)
			if (!ns->rtnl[i].used)
				r = &ns->rtnl[i];
	}
	if (!r)
		return CR_V_ERR(ENOBUFS);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
		       sv) < 0)
		return CR_V_ERR(errno == EMFILE || errno == ENFILE ? errno : ENOBUFS);
	/* The program's end may carry descriptors into corral's: closed
	 * guarded (tracer/guard.c), both. */
	cr_guard_note_socket(sv[0]);
	cr_guard_note_socket(sv[1]);
	if ((!(type & SOCK_NONBLOCK) && fcntl(sv[1], F_SETFL, 0) < 0) ||
	    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0 ||
	    fstat(sv[1], &st) < 0)
		err = errno;
	if (!err)
		err = -bind_sender(sv[0]);
	if (!err) {
		memset(r, 0, sizeof(*r));
		r->used = true;
		r->run = run;
		r->fd = sv[0];
		r->ino = (uint64_t)st.st_ino;
		r->type = base;
		r->tgid = cr_tasks_tgid(&run->tasks, (pid_t)n->pid);
		r->w = cr_loop_watch(run, sv[0], EPOLLIN | EPOLLRDHUP, on_request, r);
		if (!r->w) {
			err = ENOBUFS;
			r->used = false;
		}
	}
	if (err) {
		close(sv[0]);
		close(sv[1]);
		return CR_V_ERR(err == EMFILE || err == ENFILE || err == ENOMEM ?
				err : ENOBUFS);
	}
	/* sv[1] is closed there either way; not handed over, corral's end
	 * hangs up. */
	v = cr_notif_send_fd(run, n, sv[1], (type & SOCK_CLOEXEC) != 0);
	return v;
}

int cr_rtnl_bind(struct cr_run *run, struct cr_rtnl *r,
		 const union cr_sockaddr *a, socklen_t alen)
{
	struct sockaddr_nl nl;

	/* netlink_bind, in its order. */
	if (alen < sizeof(nl))
		return -EINVAL;
	memcpy(&nl, a, sizeof(nl));
	if (nl.nl_family != AF_NETLINK)
		return -EINVAL;
	if (r->bound && nl.nl_pid != r->portid)
		return -EINVAL;
	if (!r->bound) {
		if (nl.nl_pid) {
			if (portid_taken(run->net, nl.nl_pid))
				return -EADDRINUSE;
			r->portid = nl.nl_pid;
			r->bound = true;
		} else {
			autobind(run->net, r);
		}
	}
	/* Route groups may be joined without privilege; nothing is ever
	 * announced on them here (nothing changes in the view). */
	r->groups = nl.nl_groups;
	return 0;
}

int cr_rtnl_connect(struct cr_run *run, struct cr_rtnl *r,
		    const union cr_sockaddr *a, socklen_t alen)
{
	struct sockaddr_nl nl;

	/* netlink_connect: AF_UNSPEC disconnects; only the kernel may be
	 * named without CAP_NET_ADMIN (NL_CFG_F_NONROOT_SEND is not set for
	 * NETLINK_ROUTE). */
	if (alen < sizeof(sa_family_t))
		return -EINVAL;
	if (a->sa.sa_family == AF_UNSPEC)
		return 0;
	if (a->sa.sa_family != AF_NETLINK || alen < sizeof(nl))
		return -EINVAL;
	memcpy(&nl, a, sizeof(nl));
	if (nl.nl_pid || nl.nl_groups)
		return -EPERM;
	autobind(run->net, r);
	return 0;
}

socklen_t cr_rtnl_name(const struct cr_rtnl *r, bool peer, union cr_sockaddr *a)
{
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };

	/* netlink_getname: the peer is always the kernel here. */
	if (!peer) {
		nl.nl_pid = r->portid;
		nl.nl_groups = r->groups;
	}
	memset(a, 0, sizeof(*a));
	memcpy(a, &nl, sizeof(nl));
	return sizeof(nl);
}

struct cr_verdict cr_rtnl_send(struct cr_run *run, struct cr_rtnl *r,
			       const void *data, size_t len,
			       const union cr_sockaddr *a, socklen_t alen,
			       int flags)
{
	uint64_t t0;
	bool first;

	/* netlink_sendmsg, in its order. */
	if (flags & MSG_OOB)
		return CR_V_ERR(EOPNOTSUPP);
	if (!len)
		return CR_V_ERR(ENODATA);	/* "an empty skb" */
	if (alen) {
		struct sockaddr_nl nl;

		if (alen < sizeof(nl) || a->sa.sa_family != AF_NETLINK)
			return CR_V_ERR(EINVAL);
		memcpy(&nl, a, sizeof(nl));
		if (nl.nl_pid || nl.nl_groups)
			return CR_V_ERR(EPERM);
	}
	autobind(run->net, r);
	first = !r->asked;
	r->asked = true;
	if (alen && first && family_probe(data, len))
		return CR_V_ERR(ECONNREFUSED);
	t0 = cr_thread_cpu_ns();
	answer(run, r, data, len);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return CR_V_VAL((int64_t)len);
}

int cr_rtnl_setsockopt(struct cr_rtnl *r, int opt, const void *val,
		       size_t len)
{
	int v = 0;

	/* netlink_setsockopt: the value is an int when at least one is
	 * given, else 0. Memberships are taken (no event is ever sent
	 * here) when they name a route group; the modes are taken and do
	 * nothing but CAP_ACK, which shapes an error answer;
	 * NETLINK_LISTEN_ALL_NSID needs CAP_NET_BROADCAST. */
	if (len >= sizeof(int))
		memcpy(&v, val, sizeof(v));
	switch (opt) {
	case NETLINK_ADD_MEMBERSHIP:
	case NETLINK_DROP_MEMBERSHIP:
		if (!v || (unsigned)v - 1 >= RTNLGRP_MAX)
			return -EINVAL;
		return 0;
	case NETLINK_PKTINFO:
	case NETLINK_BROADCAST_ERROR:
	case NETLINK_NO_ENOBUFS:
	case NETLINK_EXT_ACK:
	case NETLINK_GET_STRICT_CHK:
		return 0;
	case NETLINK_CAP_ACK:
		r->cap_ack = v != 0;
		return 0;
	case NETLINK_LISTEN_ALL_NSID:
		return -EPERM;
	default:
		return -ENOPROTOOPT;
	}
}

void cr_rtnl_finish(struct cr_netstate *ns)
{
	for (size_t i = 0; ns->rtnl && i < CR_NET_MAX_RTNL; i++)
		release(&ns->rtnl[i]);
	free(ns->rtnl);
	ns->rtnl = NULL;
}
