/* tracer/net/udp.c: the run's own UDP sockets on loopback: the members the
 * supervisor holds, and the source filter that keeps every other sender out. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../budget/budget.h"
#include "../fs/fs.h"
#include "net.h"

/*
 * A bound UDP socket takes datagrams from anyone on the host, and the
 * supervisor does not see the program's reads. So every UDP socket of the
 * run that has a port is given one by the supervisor (bind, or a bind to
 * loopback before its first connect or send), and before it has the port
 * it gets a classic-BPF socket filter: a datagram is queued only when its
 * source address and port are corral's DNS responder's or those of a
 * member (a UDP socket of the run the supervisor holds) that this socket
 * has been sent to by. Every send naming an address and every connect is
 * performed by the supervisor, which first adds the sender to the
 * receiver's filter (one filter rebuilt per new pair of sockets, never
 * the whole set); a send on a connected socket goes where its connect,
 * already judged, pointed it.
 *
 * Why a source can be trusted: the supervisor holds a duplicate of every
 * member, so a member's address stays bound for as long as it is in the
 * set, even after the program closed its own descriptors; no member has
 * SO_REUSEADDR or SO_REUSEPORT (the setsockopt handler never applies
 * them), so no other socket can bind the same address; and unprivileged
 * senders cannot choose their source port. They can choose the source
 * address among the host's own (IP_PKTINFO): one who binds a member's port
 * on another local address can inject datagrams that look like the
 * member's (injection only; docs/network.md, "known limit"). A member leaves the set only when
 * no task of the run holds it (a scan of the tasks' descriptor tables, done
 * when the set is full or a bind finds its port taken): its filter then
 * drops everything, sockets connected to it are disconnected first, the
 * filters that named it are rebuilt without it, and only then is it
 * closed.
 *
 * UDP and UDP-Lite keep separate port tables: a UDP-Lite socket of the
 * run may hold the number of a host's UDP service. A member is therefore
 * its protocol, address and port, and every lookup names the protocol of
 * the socket that sends; an earlier build matched address and port only,
 * and a run's UDP sends reached a host UDP service through the run's
 * UDP-Lite socket of the same number, both ways.
 *
 * The program cannot change a filter: setsockopt of SO_ATTACH_FILTER and
 * its relatives on an internet datagram socket is refused (the handler),
 * and io_uring is refused outright. Sends to loopback go only to members.
 */

struct cr_net_udp {
	int dup;		/* owned */
	uint64_t ino;
	int proto;		/* IPPROTO_UDP or IPPROTO_UDPLITE */
	struct cr_net_ep ep;	/* bound (always loopback) */
	bool wildcard;		/* the program asked for 0.0.0.0 or [::] */
	bool connected;		/* to peer, a member's address */
	struct cr_net_ep peer;
	struct cr_net_ep *srcs;	/* owned: members it hears */
	size_t nsrcs, capsrcs;
	bool keep;		/* scratch: seen in a task's table */
};

#define NET_OFF(k) ((uint32_t)(SKF_NET_OFF + (k)))
#define ACCEPT 0xffffffffu
#define CHUNK 250		/* port tests per accept: jt is 8 bits */

struct prog {
	struct sock_filter *f;
	size_t n, cap;
	bool failed;
};

static size_t emit(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf,
		   uint32_t k)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct sock_filter *f = realloc(p->f, cap * sizeof(*f));

		if (!f) {
			p->failed = true;
			return p->n;
		}
		p->f = f;
		p->cap = cap;
	}
	p->f[p->n] = (struct sock_filter){ code, jt, jf, k };
	return p->n++;
}

static uint32_t word(const uint8_t *a, int i)
{
	return (uint32_t)a[4 * i] << 24 | (uint32_t)a[4 * i + 1] << 16 |
	       (uint32_t)a[4 * i + 2] << 8 | a[4 * i + 3];
}

/* The sources m hears (NULL: a DNS client, only the responders): the DNS
 * responders and the members that sent to it through the supervisor. */
static size_t sources(const struct cr_netstate *ns, const struct cr_net_udp *m,
		      int proto, struct cr_net_ep *out, size_t cap)
{
	size_t k = 0;

	/* The DNS responder is a UDP socket: a UDP-Lite socket hears its
	 * port's number only from another UDP-Lite socket, never its. */
	for (int i = 0; proto == IPPROTO_UDP && i < 2; i++) {
		socklen_t l = i ? sizeof(struct sockaddr_in6) :
				  sizeof(struct sockaddr_in);

		if (ns->dfd[i] >= 0 && k < cap &&
		    cr_net_ep_of(&ns->daddr[i], l, &out[k]))
			k++;
	}
	for (size_t i = 0; m && i < m->nsrcs && k < cap; i++)
		out[k++] = m->srcs[i];
	return k;
}

static bool same_addr(const struct cr_net_ep *a, const struct cr_net_ep *b)
{
	return a->family == b->family &&
	       !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

static bool same_ep(const struct cr_net_ep *a, const struct cr_net_ep *b)
{
	return same_addr(a, b) && a->port == b->port;
}

/* The tests of one address's ports, each chunk ending in its accept. */
static void emit_ports(struct prog *p, const struct cr_net_ep *src, size_t n,
		       const struct cr_net_ep *a)
{
	size_t idx[CHUNK], k = 0;

	emit(p, BPF_LD | BPF_H | BPF_ABS, 0, 0, 0);	/* UDP source port */
	for (size_t i = 0; i <= n; i++) {
		if (i < n && same_addr(&src[i], a))
			idx[k++] = emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 0,
					src[i].port);
		if (k && (k == CHUNK || i == n)) {
			size_t ja = emit(p, BPF_JMP | BPF_JA, 0, 0, 1);

			for (size_t j = 0; j < k && !p->failed; j++)
				p->f[idx[j]].jt = (uint8_t)(ja - idx[j]);
			emit(p, BPF_RET | BPF_K, 0, 0, ACCEPT);
			k = 0;
		}
	}
	emit(p, BPF_RET | BPF_K, 0, 0, 0);
}

/*
 * Pass a datagram whose source is in src: dispatch on the IP version, then
 * on the source address (each distinct one jumps to its ports), then the
 * UDP source port. Everything else is dropped. The program is built anew
 * for each change of the set; it is small (one test per member).
 */
static int build(const struct cr_net_ep *src, size_t n, struct prog *p)
{
	size_t to6, fix[2 * CR_NET_MAX_UDP + 4], nfix = 0, target[2 * CR_NET_MAX_UDP + 4];

	memset(p, 0, sizeof(*p));
	emit(p, BPF_LD | BPF_B | BPF_ABS, 0, 0, NET_OFF(0));
	emit(p, BPF_ALU | BPF_RSH | BPF_K, 0, 0, 4);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 6);
	to6 = emit(p, BPF_JMP | BPF_JA, 0, 0, 0);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 4);
	emit(p, BPF_RET | BPF_K, 0, 0, 0);
	/* IPv4: the source address at offset 12 of the network header */
	for (int fam = 0; fam < 2; fam++) {
		int want = fam ? AF_INET6 : AF_INET;

		if (fam && !p->failed)
			p->f[to6].k = (uint32_t)(p->n - to6 - 1);
		for (size_t i = 0; i < n; i++) {
			bool first = true;

			if (src[i].family != want)
				continue;
			for (size_t j = 0; j < i; j++)
				if (same_addr(&src[j], &src[i]))
					first = false;
			if (!first)
				continue;
			if (want == AF_INET) {
				emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, NET_OFF(12));
				emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1,
				     word(src[i].addr, 0));
			} else {
				for (int w = 0; w < 4; w++) {
					emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
					     NET_OFF(8 + 4 * w));
					emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0,
					     (uint8_t)(7 - 2 * w),
					     word(src[i].addr, w));
				}
			}
			fix[nfix] = emit(p, BPF_JMP | BPF_JA, 0, 0, 0);
			target[nfix++] = i;
		}
		emit(p, BPF_RET | BPF_K, 0, 0, 0);
	}
	/* the ports of each address */
	for (size_t f = 0; f < nfix && !p->failed; f++) {
		p->f[fix[f]].k = (uint32_t)(p->n - fix[f] - 1);
		emit_ports(p, src, n, &src[target[f]]);
	}
	if (p->failed || p->n > BPF_MAXINSNS) {
		free(p->f);
		p->f = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int attach(int fd, const struct prog *p)
{
	struct sock_fprog fp = { .len = (unsigned short)p->n, .filter = p->f };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp)) < 0 ?
	       -errno : 0;
}

static int sock_proto(int fd)
{
	int proto = 0;
	socklen_t l = sizeof(proto);

	return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) < 0 ?
	       -errno : proto;
}

static int attach_sources(int fd, const struct cr_netstate *ns,
			  const struct cr_net_udp *m)
{
	struct cr_net_ep src[CR_NET_MAX_UDP + 2];
	struct prog p;
	int proto = m ? m->proto : sock_proto(fd), rc;

	if (proto < 0)
		return proto;
	rc = build(src, sources(ns, m, proto, src, CR_NET_MAX_UDP + 2), &p);
	if (rc)
		return rc;
	rc = attach(fd, &p);
	free(p.f);
	return rc;
}

static void deafen(int fd)
{
	struct sock_filter none = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog fp = { .len = 1, .filter = &none };

	setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp));
}

/* The socket inodes in the descriptor tables of the run's tasks (a thread
 * made without CLONE_FILES has one apart from its leader's), sorted; -1
 * when a table could not be read (then nothing is dropped). */
static int held_inodes(struct cr_run *run, uint64_t **out, size_t *nout)
{
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;

	for (size_t s = 0; s < run->tasks.cap; s++) {
		const struct cr_task *t = &run->tasks.slots[s];
		char dir[48];
		struct dirent *d;
		DIR *dp;

		if (!t->tid || !cr_tasks_own_table(t))
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/fd", t->tid);
		dp = opendir(dir);
		if (!dp) {
			if (errno == ENOENT || errno == ESRCH)
				continue;	/* gone: it holds nothing */
			free(v);
			return -1;
		}
		while ((d = readdir(dp))) {
			struct stat st;
			uint64_t ino;

			if (d->d_name[0] == '.')
				continue;
			if (!cr_tables_step(run)) {
				/* Spent: every member is kept. */
				closedir(dp);
				free(v);
				return -1;
			}
			/* statx, not readlink: the same cost however deep a
			 * file's path (fs/pty.c), and no server asked. */
			if (cr_quiet_fstatat(dirfd(dp), d->d_name, &st,
					     AT_STATX_DONT_SYNC |
					     AT_NO_AUTOMOUNT) < 0 ||
			    !S_ISSOCK(st.st_mode))
				continue;
			ino = st.st_ino;
			if (n == cap) {
				size_t c = cap ? cap * 2 : 256;
				uint64_t *g = realloc(v, c * sizeof(*g));

				if (!g) {
					closedir(dp);
					free(v);
					return -1;
				}
				v = g;
				cap = c;
			}
			v[n++] = ino;
		}
		closedir(dp);
	}
	if (n)
		cr_u64_sort(v, n);
	*out = v;
	*nout = n;
	return 0;
}

static bool is_member(const struct cr_netstate *ns, const struct cr_net_ep *ep,
		      int proto);

/* Kept member m forgets the sources that are no longer members: its new
 * filter is on before their addresses are freed. One that cannot be
 * rebuilt hears nothing more (fail closed). */
static void forget_gone(struct cr_netstate *ns, struct cr_net_udp *m)
{
	size_t k = 0;

	for (size_t j = 0; j < m->nsrcs; j++)
		if (is_member(ns, &m->srcs[j], m->proto))
			m->srcs[k++] = m->srcs[j];
	if (k == m->nsrcs)
		return;
	m->nsrcs = k;
	if (attach_sources(m->dup, ns, m))
		deafen(m->dup);
}

/* Let go of the members no task of the run holds any more. */
static void collect(struct cr_run *run);

/* For a connect to a member (loopback.c), a bind whose port is taken and
 * a table full: the kernel would find a port the program closed closed,
 * so members no task holds are let go first.
 * The reading of every fd table grows with the run's descriptors, and a
 * connect is cheap for the program (a connect in a loop had the supervisor
 * read 300 000 fds a call, 1.4 s each): its cost is charged to the run's
 * CPU, and one dearer than CR_NET_COLLECT_FREE_US is made again only after
 * 30 times its cost. In between, a member closed meanwhile still takes
 * datagrams into corral's copy, as before. A small run's costs a few
 * hundred microseconds: every connect asks. */
#define CR_NET_COLLECT_IDLE 30
#define CR_NET_COLLECT_FREE_US 2000

void cr_net_udp_collect(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;
	uint64_t t0, cost, wait;

	if (cr_now_ns() < ns->collect_next_ns)
		return;
	t0 = cr_thread_cpu_ns();
	collect(run);
	cost = cr_thread_cpu_ns() - t0;
	cr_budget_charge_cpu(run, cost);
	wait = cost > CR_NET_COLLECT_FREE_US * 1000ull ?
	       cost * CR_NET_COLLECT_IDLE : 0;
	ns->collect_next_ns = cr_now_ns() + wait;
}

static void collect(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;
	uint64_t *held = NULL;
	size_t nheld = 0, k = 0;
	bool changed = true;
	int rc;

	/* The tables' reading is the long part (a readlink per fd of every
	 * table: 1.4 s for 16 x 19 000 fds): marked, so the watchdog ticks
	 * for the loop meanwhile; it reads the task table only. */
	cr_slow_begin();
	rc = held_inodes(run, &held, &nheld);
	cr_slow_end();
	if (rc < 0)
		return;
	for (size_t i = 0; i < ns->nudp; i++)
		ns->udp[i].keep = cr_u64_has(held, nheld,
						  ns->udp[i].ino);
	free(held);
	/* A kept socket connected to a member keeps that member bound:
	 * else a stranger could take its address and receive the sends. */
	while (changed) {
		changed = false;
		for (size_t i = 0; i < ns->nudp; i++) {
			if (!ns->udp[i].keep || !ns->udp[i].connected)
				continue;
			for (size_t j = 0; j < ns->nudp; j++)
				if (!ns->udp[j].keep &&
				    same_ep(&ns->udp[j].ep, &ns->udp[i].peer)) {
					ns->udp[j].keep = true;
					changed = true;
				}
		}
	}
	for (size_t i = 0; i < ns->nudp; i++) {
		if (ns->udp[i].keep)
			continue;
		free(ns->udp[i].srcs);
		/* Perhaps still in flight in a unix socket's queue: if it is
		 * ever received, it hears nothing and sends nowhere. */
		if (ns->udp[i].connected) {
			union cr_sockaddr un = { .sa.sa_family = AF_UNSPEC };

			connect(ns->udp[i].dup, &un.sa, sizeof(un.sa));
		}
		deafen(ns->udp[i].dup);
	}
	/* The others forget them before their addresses are freed. */
	{
		int gone[CR_NET_MAX_UDP];
		size_t g = 0;

		for (size_t i = 0; i < ns->nudp; i++) {
			if (ns->udp[i].keep)
				ns->udp[k++] = ns->udp[i];
			else
				gone[g++] = ns->udp[i].dup;
		}
		if (!g)
			return;
		ns->nudp = k;
		for (size_t i = 0; i < k; i++)
			forget_gone(ns, &ns->udp[i]);
		for (size_t i = 0; i < g; i++)
			close(gone[i]);
	}
}

static struct cr_net_udp *find(const struct cr_netstate *ns, uint64_t ino)
{
	for (size_t i = 0; i < ns->nudp; i++)
		if (ns->udp[i].ino == ino)
			return &ns->udp[i];
	return NULL;
}

static bool bound_ep(int fd, struct cr_net_ep *ep)
{
	union cr_sockaddr a;
	socklen_t l = sizeof(a);

	memset(&a, 0, sizeof(a));
	return getsockname(fd, &a.sa, &l) == 0 && cr_net_ep_of(&a, l, ep);
}

int cr_net_udp_adopt(struct cr_run *run, int dup, uint64_t ino, int domain,
		     const union cr_sockaddr *want, socklen_t wantlen,
		     bool wildcard)
{
	struct cr_netstate *ns = run->net;
	struct cr_net_udp *m = find(ns, ino);
	struct cr_net_ep ep;
	union cr_sockaddr lo;
	int off = 0, rc, keep, proto;

	if (m) {
		/* Already a member: a second bind fails as the kernel's. */
		if (want && bind(dup, &want->sa, wantlen) < 0)
			return -errno;
		return want ? -EINVAL : 0;
	}
	if (ns->nudp == CR_NET_MAX_UDP)
		cr_net_udp_collect(run);
	if (ns->nudp == CR_NET_MAX_UDP)
		return -ENOBUFS;
	if (ns->nudp == ns->capudp) {
		size_t cap = ns->capudp ? ns->capudp * 2 : 16;
		struct cr_net_udp *g = realloc(ns->udp, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		ns->udp = g;
		ns->capudp = cap;
	}
	proto = sock_proto(dup);
	if (proto != IPPROTO_UDP && proto != IPPROTO_UDPLITE)
		return proto < 0 ? proto : -EINVAL;
	/* The filter before the port: no datagram is queued unfiltered. */
	rc = attach_sources(dup, ns, NULL);
	if (rc)
		return rc;
	if (setsockopt(dup, SOL_SOCKET, SO_REUSEADDR, &off, sizeof(off)) < 0 ||
	    setsockopt(dup, SOL_SOCKET, SO_REUSEPORT, &off, sizeof(off)) < 0)
		return -errno;
	if (bound_ep(dup, &ep) && ep.port) {
		/* Bound before (a DNS client's loopback port): adopted. */
		if (want)
			return -EINVAL;
		if (!cr_net_ep_loopback(&ep))
			return -EACCES;
	} else {
		int noport = 0, off0 = 0, on = 1;
		socklen_t nl = sizeof(noport);

		if (!want) {
			wantlen = cr_net_loopback(domain, &lo);
			want = &lo;
		}
		/* IP_BIND_ADDRESS_NO_PORT leaves a bind to port 0 without a
		 * port until the first send, and the member's filter entry
		 * would name port 0: every datagram the socket sent was
		 * dropped (curl --interface over TFTP; a differential run of
		 * curl's suite). The port is taken now, the option put back. */
		if (getsockopt(dup, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &noport,
			       &nl) < 0)
			noport = 0;
		if (noport)
			setsockopt(dup, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT,
				   &off0, sizeof(off0));
		rc = bind(dup, &want->sa, wantlen);
		if (noport)
			setsockopt(dup, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT,
				   &on, sizeof(on));
		if (rc < 0 && errno == EADDRINUSE && ns->nudp) {
			/* Perhaps our own hold on a socket the program closed:
			 * let go of those, charged and paced as for a connect
			 * (one bind that failed in a loop had every table read
			 * at each, uncharged: 21 ms of the supervisor's CPU a
			 * call with 19 000 fds, found by a probing session). */
			cr_net_udp_collect(run);
			rc = bind(dup, &want->sa, wantlen);
		}
		if (rc < 0)
			return -errno;
		if (!bound_ep(dup, &ep))
			return -errno;
	}
	keep = cr_guard_dup(dup);
	if (keep < 0)
		return -errno;	/* bound but no member: it hears only DNS */
	m = &ns->udp[ns->nudp++];
	memset(m, 0, sizeof(*m));
	m->dup = keep;
	m->ino = ino;
	m->proto = proto;
	m->ep = ep;
	m->wildcard = wildcard;
	return 0;
}

int cr_net_udp_dns_only(struct cr_netstate *ns, int dup, uint64_t ino)
{
	if (find(ns, ino))
		return 0;
	return attach_sources(dup, ns, NULL);
}

static struct cr_net_udp *at(const struct cr_netstate *ns,
			     const struct cr_net_ep *ep, int proto)
{
	for (size_t i = 0; i < ns->nudp; i++)
		if (ns->udp[i].proto == proto && same_ep(&ns->udp[i].ep, ep))
			return &ns->udp[i];
	return NULL;
}

static bool is_member(const struct cr_netstate *ns, const struct cr_net_ep *ep,
		      int proto)
{
	return at(ns, ep, proto) != NULL;
}

bool cr_net_udp_member(const struct cr_netstate *ns,
		       const struct cr_net_ep *dst, int proto)
{
	return is_member(ns, dst, proto);
}

int cr_net_udp_hear(struct cr_netstate *ns, const struct cr_net_ep *dst,
		    uint64_t src_ino)
{
	struct cr_net_udp *src = find(ns, src_ino);
	struct cr_net_udp *d = src ? at(ns, dst, src->proto) : NULL;
	int rc;

	if (!d || !src)
		return -ECONNREFUSED;
	for (size_t i = 0; i < d->nsrcs; i++)
		if (same_ep(&d->srcs[i], &src->ep))
			return 0;
	if (d->nsrcs == d->capsrcs) {
		size_t cap = d->capsrcs ? d->capsrcs * 2 : 4;
		struct cr_net_ep *g;

		if (cap > CR_NET_MAX_UDP)
			return -ENOBUFS;
		g = realloc(d->srcs, cap * sizeof(*g));
		if (!g)
			return -ENOMEM;
		d->srcs = g;
		d->capsrcs = cap;
	}
	d->srcs[d->nsrcs++] = src->ep;
	rc = attach_sources(d->dup, ns, d);
	if (rc)
		d->nsrcs--;	/* its filter is the old one, without it */
	return rc;
}

void cr_net_udp_connected(struct cr_netstate *ns, uint64_t ino,
			  const struct cr_net_ep *peer)
{
	struct cr_net_udp *m = find(ns, ino);

	if (!m)
		return;
	m->connected = peer != NULL;
	if (peer)
		m->peer = *peer;
}

/*
 * connect(AF_UNSPEC) was performed on member ino's socket (dup). Unless
 * its bind named the port, the kernel gives the port up (udp_disconnect),
 * while the member still lists it: a host process that took it was heard
 * as the run's own socket and reached by the run's sends, both ways, with
 * nothing recorded. So the socket is bound again at once by its number
 * (which also locks it, as a named port is); if another process took it
 * in between, the member is forgotten (its next send binds anew, as a
 * new member) and the others stop hearing that address.
 */
void cr_net_udp_disconnected(struct cr_netstate *ns, int dup, uint64_t ino)
{
	struct cr_net_udp *m = find(ns, ino);
	union cr_sockaddr a;
	struct cr_net_ep ep;
	socklen_t al;
	int domain = 0, d;
	socklen_t dl = sizeof(domain);
	size_t idx;

	if (!m)
		return;
	m->connected = false;
	if (bound_ep(dup, &ep) && ep.port)
		return;		/* its port was named: still its own */
	memset(&a, 0, sizeof(a));
	if (getsockopt(dup, SOL_SOCKET, SO_DOMAIN, &domain, &dl) == 0 &&
	    domain == AF_INET6) {
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(m->ep.port);
		if (m->ep.family == AF_INET) {
			a.in6.sin6_addr.s6_addr[10] = 0xff;
			a.in6.sin6_addr.s6_addr[11] = 0xff;
			memcpy(&a.in6.sin6_addr.s6_addr[12], m->ep.addr, 4);
		} else {
			memcpy(&a.in6.sin6_addr, m->ep.addr, 16);
		}
		al = sizeof(a.in6);
	} else {
		a.in4.sin_family = AF_INET;
		a.in4.sin_port = htons(m->ep.port);
		memcpy(&a.in4.sin_addr, m->ep.addr, 4);
		al = sizeof(a.in4);
	}
	if (domain && bind(dup, &a.sa, al) == 0)
		return;
	idx = (size_t)(m - ns->udp);
	d = m->dup;
	free(m->srcs);
	deafen(d);
	ns->udp[idx] = ns->udp[--ns->nudp];
	for (size_t i = 0; i < ns->nudp; i++)
		forget_gone(ns, &ns->udp[i]);
	close(d);
}

bool cr_net_udp_find(const struct cr_netstate *ns, uint64_t ino,
		     struct cr_net_ep *ep, bool *wildcard)
{
	const struct cr_net_udp *m = find(ns, ino);

	if (!m)
		return false;
	if (ep)
		*ep = m->ep;
	if (wildcard)
		*wildcard = m->wildcard;
	return true;
}

bool cr_net_udp_port_shared(const struct cr_netstate *ns, int family,
			    uint16_t port)
{
	for (size_t i = 0; ns && i < ns->nudp; i++) {
		const struct cr_net_udp *m = &ns->udp[i];

		if (m->ep.family == family && m->ep.port == port &&
		    (cr_net_flag_get(ns, m->dup, SO_REUSEPORT) == 1 ||
		     cr_net_flag_get(ns, m->dup, SO_REUSEADDR) == 1))
			return true;
	}
	return false;
}

size_t cr_net_udp_inodes(const struct cr_netstate *ns, uint64_t *out,
			 size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; ns && i < ns->nudp && k < cap; i++)
		out[k++] = ns->udp[i].ino;
	return k;
}

/* An unconnected socket never hears of a datagram nobody took (the
 * ICMP error is reported only to a connected one): the kernel answers the
 * send with its length. corral cannot let it reach a host service's port,
 * so it sends it to its own socket of that family and protocol (UDP),
 * which drops it: the receive buffer at its least and never read, the
 * kernel discards what does not fit.
 *
 * A connect to such a port succeeds in the kernel, and the refusal comes
 * later: the first datagram draws an ICMP port unreachable, and the
 * socket's next call answers ECONNREFUSED. So the program's socket is
 * connected to the refuser, corral's socket connected to its own address:
 * the kernel delivers a datagram to a connected socket only from its
 * peer, so one from anywhere else finds no socket on that port and is
 * answered with the ICMP error (never rate-limited on loopback). The
 * port stays corral's while the run lasts (no SO_REUSEADDR), so no other
 * program can take it. 0 with *t, *tl set, or -errno. */
int cr_net_udp_sink(struct cr_netstate *ns, int domain, bool refuse,
		    union cr_sockaddr *t, socklen_t *tl)
{
	int i = domain == AF_INET6, k = refuse, fd, one = 1;
	socklen_t l = i ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	union cr_sockaddr a;

	if (ns->sink[k][i] < 0) {
		memset(&a, 0, sizeof(a));
		if (i) {
			a.in6.sin6_family = AF_INET6;
			a.in6.sin6_addr = in6addr_loopback;
		} else {
			a.in4.sin_family = AF_INET;
			a.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		}
		fd = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    IPPROTO_UDP);
		if (fd < 0)
			return -errno;
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){ 0 },
			       sizeof(int)) < 0 ||
		    (i && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				     sizeof(one)) < 0) ||
		    bind(fd, &a.sa, l) < 0 || getsockname(fd, &a.sa, &l) < 0 ||
		    (refuse && connect(fd, &a.sa, l) < 0)) {
			int err = errno;

			close(fd);
			return -err;
		}
		ns->sink[k][i] = fd;
		ns->saddr[k][i] = a;
	}
	*t = ns->saddr[k][i];
	*tl = i ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	return 0;
}

void cr_net_udp_finish(struct cr_netstate *ns)
{
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 2; i++)
			if (ns->sink[k][i] >= 0)
				close(ns->sink[k][i]);
	for (size_t i = 0; i < ns->nudp; i++) {
		close(ns->udp[i].dup);
		free(ns->udp[i].srcs);
	}
	free(ns->udp);
	ns->udp = NULL;
	ns->nudp = ns->capudp = 0;
}
