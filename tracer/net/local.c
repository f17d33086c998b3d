/* tracer/net/local.c: the run's own loopback servers: the sockets it bound,
 * the connections its tasks made to them, who listens on a port now, and
 * the port-sharing options the program set but corral never applies. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net.h"

#define TCP_LISTEN_STATE 10	/* TCP_LISTEN of the kernel's enum */
/* TCP_BOUND_INACTIVE (Linux 6.5+): bound sockets that neither listen nor
 * connect; older kernels ignore the bit. */
#define TCP_BOUND_INACTIVE_STATE 13

struct cr_net_lsn {
	uint64_t ino;
	struct cr_net_ep ep;	/* where it is bound (always loopback) */
	bool wildcard;		/* asked for 0.0.0.0 or [::] */
	bool live;		/* seen by the last prune */
	bool shared;		/* SO_REUSEPORT asked when it was bound */
};

struct cr_net_client {
	struct cr_net_ep local, remote;
	uint64_t ino;		/* the run's client socket */
	uint64_t server;	/* the listener's end's cookie, 0 unknown */
};

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool cr_net_ep_of(const union cr_sockaddr *a, socklen_t len,
		  struct cr_net_ep *ep)
{
	memset(ep, 0, sizeof(*ep));
	if (a->sa.sa_family == AF_INET && len >= sizeof(a->in4)) {
		ep->family = AF_INET;
		memcpy(ep->addr, &a->in4.sin_addr, 4);
		ep->port = ntohs(a->in4.sin_port);
		return true;
	}
	if (a->sa.sa_family != AF_INET6 || len < CR_SIN6_LEN_RFC2133)
		return false;
	ep->port = ntohs(a->in6.sin6_port);
	/* An IPv4-mapped address is the IPv4 endpoint the kernel uses. */
	if (!memcmp(&a->in6.sin6_addr, v4mapped, 12)) {
		ep->family = AF_INET;
		memcpy(ep->addr, (const uint8_t *)&a->in6.sin6_addr + 12, 4);
	} else {
		ep->family = AF_INET6;
		memcpy(ep->addr, &a->in6.sin6_addr, 16);
	}
	return true;
}

static bool ep_same(const struct cr_net_ep *a, const struct cr_net_ep *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

bool cr_net_ep_loopback(const struct cr_net_ep *ep)
{
	if (ep->family == AF_INET)
		return ep->addr[0] == 127;
	return !memcmp(ep->addr, &in6addr_loopback, 16);
}

bool cr_net_ep_any(const struct cr_net_ep *ep)
{
	static const uint8_t zero[16];

	return !memcmp(ep->addr, zero, ep->family == AF_INET ? 4 : 16);
}

static int diag_dump(int family, int proto, uint16_t port, uint32_t states,
		     int (*fn)(const struct cr_net_ep *,
			       const struct inet_diag_msg *, void *),
		     void *arg);

static int by_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct cr_net_lsn *)a)->ino;
	uint64_t y = ((const struct cr_net_lsn *)b)->ino;

	return x < y ? -1 : x > y;
}

static int mark_live(const struct cr_net_ep *ep,
		     const struct inet_diag_msg *m, void *arg)
{
	struct cr_netstate *ns = arg;
	struct cr_net_lsn key = { .ino = m->idiag_inode }, *l;

	(void)ep;
	l = bsearch(&key, ns->lsn, ns->nlsn, sizeof(key), by_ino);
	if (l)
		l->live = true;
	return 0;
}

/* The table is full: forget the sockets the kernel no longer has (a long
 * test suite binds a server per test). Sorted by inode first, so that
 * each socket of the host's dumps is one binary search. On a failure
 * nothing is forgotten. */
static void prune(struct cr_netstate *ns)
{
	uint32_t all = ~0u | (1u << TCP_BOUND_INACTIVE_STATE);
	size_t k = 0;

	qsort(ns->lsn, ns->nlsn, sizeof(*ns->lsn), by_ino);
	for (size_t i = 0; i < ns->nlsn; i++)
		ns->lsn[i].live = false;
	if (diag_dump(AF_INET, IPPROTO_TCP, 0, all, mark_live, ns) ||
	    diag_dump(AF_INET6, IPPROTO_TCP, 0, all, mark_live, ns))
		return;
	for (size_t i = 0; i < ns->nlsn; i++)
		if (ns->lsn[i].live)
			ns->lsn[k++] = ns->lsn[i];
	ns->nlsn = k;
}

/* Has `ms` passed since *last (then it is now)? */
static bool due_every(struct timespec *last, long ms)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((last->tv_sec || last->tv_nsec) &&
	    (now.tv_sec - last->tv_sec) * 1000 +
	    (now.tv_nsec - last->tv_nsec) / 1000000 < ms)
		return false;
	*last = now;
	return true;
}

/* A table at its largest is pruned at most once a second: each prune of
 * a table full of live entries costs the loop the same again. */
static bool prune_due(struct timespec *last)
{
	return due_every(last, 1000);
}

/* A full table from CR_NET_PRUNE_FROM on is pruned before it grows. */
static bool prune_first(size_t cap, struct timespec *pruned)
{
	return cap >= CR_NET_PRUNE_FROM &&
	       (cap < CR_NET_MAX_LOCAL || prune_due(pruned));
}

/* The capacity a table of n entries (after its prune) grows to: doubled
 * when more than half stayed, so that the next prune is at least as many
 * additions away as this one's entries; 0 when it keeps its size (room
 * enough, or at its largest). */
static size_t grown(size_t n, size_t cap)
{
	size_t c = cap ? cap * 2 : 16;

	if (n < cap && n <= cap / 2)
		return 0;
	return c > CR_NET_MAX_LOCAL ? 0 : c;
}

struct each_ino {
	int (*fn)(uint64_t, void *);
	void *arg;
};

static int call_each(const struct cr_net_ep *ep,
		     const struct inet_diag_msg *m, void *arg)
{
	const struct each_ino *e = arg;

	(void)ep;
	return e->fn(m->idiag_inode, e->arg);
}

int cr_net_each_inet_socket(int (*fn)(uint64_t ino, void *arg), void *arg)
{
	static const int fam[] = { AF_INET, AF_INET6 };
	static const int proto[] = { IPPROTO_TCP, IPPROTO_UDP };
	uint32_t all = ~0u | (1u << TCP_BOUND_INACTIVE_STATE);
	struct each_ino e = { fn, arg };
	int rc = 0;

	for (size_t f = 0; f < 2 && !rc; f++)
		for (size_t p = 0; p < 2 && !rc; p++)
			rc = diag_dump(fam[f], proto[p], 0, all, call_each, &e);
	return rc;
}

/*
 * Every TCP port the run binds is the host's: bound to 127.0.0.1:0 it is
 * taken from the host's ephemeral range (32768-60999 here), which every
 * user's connect() draws from too, and a port held by bind() is not
 * given to a connect. 10 000 bound so under the default class left the
 * host a third of its range less (found by a probing session). The run
 * holds at most a quarter of the range at once (CR_NET_MAX_LOCAL past
 * that); past it a bind (or a listen that would bind) answers ENOBUFS,
 * recorded. The table is pruned of sockets gone before it refuses; while
 * a prune keeps three quarters of it, at most ten times a second (a
 * program binding and closing servers fast met ENOBUFS far below the cap
 * when every prune waited; found by a probing session).
 */
void cr_net_local_limits(struct cr_netstate *ns)
{
	char buf[64] = "";
	unsigned long lo = 0, hi = 0;
	size_t most = CR_NET_MAX_LOCAL;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");

	if (f) {
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%lu %lu", &lo, &hi) == 2 && hi >= lo &&
		    (hi - lo + 1) / 4 < most)
			most = (hi - lo + 1) / 4;
		fclose(f);
	}
	ns->lsn_most = most < CR_NET_MIN_LOCAL ? CR_NET_MIN_LOCAL : most;
}


int cr_net_local_room(struct cr_netstate *ns)
{
	struct cr_net_lsn *l;
	size_t c;

	if (ns->lsn_most && ns->nlsn >= ns->lsn_most) {
		if (due_every(&ns->lsn_capped, 100) || !ns->lsn_capped_kept) {
			size_t was = ns->nlsn;

			prune(ns);
			ns->lsn_capped_kept = ns->nlsn * 4 >= was * 3;
		}
		if (ns->nlsn >= ns->lsn_most)
			return -ENOSPC;
	}
	if (ns->nlsn < ns->caplsn)
		return 0;
	if (prune_first(ns->caplsn, &ns->lsn_pruned))
		prune(ns);
	if (!(c = grown(ns->nlsn, ns->caplsn)))
		return ns->nlsn < ns->caplsn ? 0 : -ENOSPC;
	if (!(l = realloc(ns->lsn, c * sizeof(*l))))
		return ns->nlsn < ns->caplsn ? 0 : -ENOMEM;
	ns->lsn = l;
	ns->caplsn = c;
	return 0;
}

int cr_net_local_bound(struct cr_netstate *ns, uint64_t ino,
		       const struct cr_net_ep *ep, bool wildcard)
{
	struct cr_net_lsn *l;
	int rc;

	for (size_t i = 0; i < ns->nlsn; i++)
		if (ns->lsn[i].ino == ino) {
			ns->lsn[i].ep = *ep;
			ns->lsn[i].wildcard = wildcard;
			return 0;
		}
	rc = cr_net_local_room(ns);
	if (rc < 0)
		return rc;	/* the bind is refused: fail closed */
	l = &ns->lsn[ns->nlsn++];
	l->ino = ino;
	l->ep = *ep;
	l->wildcard = wildcard;
	l->shared = false;
	return 0;
}

void cr_net_local_mark_shared(struct cr_netstate *ns, uint64_t ino)
{
	for (size_t i = 0; i < ns->nlsn; i++)
		if (ns->lsn[i].ino == ino)
			ns->lsn[i].shared = true;
}

bool cr_net_local_port_shared(const struct cr_netstate *ns, int family,
			      uint16_t port)
{
	for (size_t i = 0; i < ns->nlsn; i++)
		if (ns->lsn[i].shared && ns->lsn[i].ep.family == family &&
		    ns->lsn[i].ep.port == port)
			return true;
	return false;
}

bool cr_net_local_find(const struct cr_netstate *ns, uint64_t ino,
		       struct cr_net_ep *ep, bool *wildcard)
{
	for (size_t i = 0; i < ns->nlsn; i++)
		if (ns->lsn[i].ino == ino) {
			if (ep)
				*ep = ns->lsn[i].ep;
			if (wildcard)
				*wildcard = ns->lsn[i].wildcard;
			return true;
		}
	return false;
}

bool cr_net_local_holds(const struct cr_netstate *ns,
			const struct cr_net_ep *dst)
{
	for (size_t i = 0; i < ns->nlsn; i++)
		if (ns->lsn[i].ep.family == dst->family &&
		    ns->lsn[i].ep.port == dst->port &&
		    (ns->lsn[i].wildcard ||
		     !memcmp(ns->lsn[i].ep.addr, dst->addr, sizeof(dst->addr))))
			return true;
	return false;
}

bool cr_net_published(const struct cr_netstate *ns, uint16_t port)
{
	const struct cr_run_config *cfg = ns->cfg;

	for (size_t i = 0; i < cfg->npublish; i++)
		if (cfg->publish[i] == port)
			return true;
	return false;
}

/* Could a listener bound at l receive a connection to dst? Wildcards are
 * counted whatever their IPV6_V6ONLY: one more listener to vouch for only
 * ever refuses more. */
static bool could_receive(const struct cr_net_ep *l, const struct cr_net_ep *dst)
{
	if (l->family == dst->family &&
	    (cr_net_ep_any(l) ||
	     !memcmp(l->addr, dst->addr, l->family == AF_INET ? 4 : 16)))
		return true;
	/* An IPv6 listener on [::] takes IPv4 connections too. */
	return l->family == AF_INET6 && dst->family == AF_INET &&
	       cr_net_ep_any(l);
}

/* One sock_diag dump of the TCP listeners of family on port. Calls back
 * with each one's address and socket inode. */
static int diag_dump(int family, int proto, uint16_t port, uint32_t states,
		     int (*fn)(const struct cr_net_ep *,
			       const struct inet_diag_msg *, void *),
		     void *arg)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	int fd, rc = 0;
	bool done = false;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.r.sdiag_family = (uint8_t)family;
	req.r.sdiag_protocol = (uint8_t)proto;
	req.r.idiag_states = states;
	req.r.id.idiag_sport = htons(port);
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (!done && !rc) {
		ssize_t got = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		size_t left;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (!got) {
			rc = -EIO;
			break;
		}
		left = (size_t)got;
		for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			struct cr_net_ep ep = { 0 };

			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				rc = e->error < 0 ? e->error : -EIO;
				break;
			}
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m))) {
				rc = -EIO;
				break;
			}
			if (m->idiag_family != family ||
			    (port && ntohs(m->id.idiag_sport) != port))
				continue;
			ep.family = m->idiag_family;
			ep.port = port;
			memcpy(ep.addr, m->id.idiag_src,
			       family == AF_INET ? 4 : 16);
			/* A dual-stack socket bound to a mapped address
			 * is that IPv4 endpoint. */
			if (family == AF_INET6 && !memcmp(ep.addr, v4mapped, 12)) {
				ep.family = AF_INET;
				memmove(ep.addr, ep.addr + 12, 4);
				memset(ep.addr + 4, 0, 12);
			}
			rc = fn(&ep, m, arg);
			if (rc)
				break;
		}
	}
	close(fd);
	return rc;
}

struct judge {
	const struct cr_netstate *ns;
	const struct cr_net_ep *dst;
	int listeners;
	bool stranger;
	bool full;
};

static int judge_one(const struct cr_net_ep *l, const struct inet_diag_msg *m,
		     void *arg)
{
	struct judge *j = arg;

	if (!could_receive(l, j->dst))
		return 0;
	j->listeners++;
	if (!cr_net_local_find(j->ns, m->idiag_inode, NULL, NULL))
		j->stranger = true;
	/* A listener's queue: rqueue taken, wqueue its backlog; the
	 * kernel drops a SYN once more than the backlog wait
	 * (sk_acceptq_is_full). */
	if (m->idiag_rqueue > m->idiag_wqueue)
		j->full = true;
	return 0;
}

/*
 * Who would take a TCP connection to dst now: 1 when there are listeners
 * and every one the kernel could pick is a socket the run bound (its
 * inode is recorded at bind; inodes are not reused while a socket lives,
 * so a port the run closed and a stranger re-bound does not count), 0
 * when nobody listens, -EACCES when a listener is not the run's, another
 * negative errno when the kernel could not be asked (the caller refuses).
 */
int cr_net_local_listener(const struct cr_netstate *ns,
			  const struct cr_net_ep *dst, bool *full)
{
	struct judge j = { .ns = ns, .dst = dst };
	uint32_t listen = 1u << TCP_LISTEN_STATE;
	int rc = diag_dump(AF_INET6, IPPROTO_TCP, dst->port, listen,
			   judge_one, &j);

	if (!rc && dst->family == AF_INET)
		rc = diag_dump(AF_INET, IPPROTO_TCP, dst->port, listen,
			       judge_one, &j);
	if (rc)
		return rc;
	if (j.stranger)
		return -EACCES;
	if (full)
		*full = j.full;
	return j.listeners ? 1 : 0;
}

/* Forget the connections no longer waiting for an accept: the listener's
 * end of each is asked of the kernel (an exact lookup); kept when it is
 * there and no file holds it yet (queued), when the run's client socket
 * is still open (a dual-stack listener's end may be filed under the other
 * family), or when the kernel could not be asked. */
static void clients_prune(struct cr_netstate *ns)
{
	size_t k = 0;

	for (size_t i = 0; i < ns->nlocal_clients; i++) {
		const struct cr_net_client *c = &ns->clients_local[i];
		uint64_t ino;
		int found = cr_net_tcp_inode(&c->remote, &c->local, &ino);

		if (found == 1 && ino)
			continue;	/* accepted: nothing waits */
		if (found != 0 ||
		    cr_net_tcp_inode(&c->local, &c->remote, &ino) != 0)
			ns->clients_local[k++] = *c;
	}
	ns->nlocal_clients = k;
}

void cr_net_local_client(struct cr_netstate *ns, uint64_t ino,
			 const struct cr_net_ep *local,
			 const struct cr_net_ep *remote, uint64_t server)
{
	struct cr_net_client *c;
	size_t cap;

	if (ns->nlocal_clients == ns->caplocal_clients) {
		if (prune_first(ns->caplocal_clients, &ns->clients_pruned))
			clients_prune(ns);
		if ((cap = grown(ns->nlocal_clients, ns->caplocal_clients)) &&
		    (c = realloc(ns->clients_local, cap * sizeof(*c)))) {
			ns->clients_local = c;
			ns->caplocal_clients = cap;
		}
	}
	if (ns->nlocal_clients == ns->caplocal_clients) {
		if (!ns->nlocal_clients)
			return;	/* fail closed: the accept will refuse it */
		/* CR_NET_MAX_LOCAL connections waiting at once: one of
		 * them is forgotten, and its accept then refuses it. */
		ns->clients_local[0] = ns->clients_local[--ns->nlocal_clients];
	}
	c = &ns->clients_local[ns->nlocal_clients++];
	c->local = *local;
	c->remote = *remote;
	c->ino = ino;
	c->server = server;
}

int cr_net_tcp_inode(const struct cr_net_ep *self,
		     const struct cr_net_ep *other, uint64_t *ino)
{
	uint64_t cookie;
	int state;

	return cr_net_tcp_find(self, other, ino, &cookie, &state);
}

int cr_net_tcp_find(const struct cr_net_ep *self, const struct cr_net_ep *other,
		    uint64_t *ino, uint64_t *cookie, int *state)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	const struct inet_diag_msg *m;
	ssize_t got;
	int fd, rc = -1;

	*ino = 0;
	*cookie = 0;
	*state = -1;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (uint8_t)self->family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_sport = htons(self->port);
	req.r.id.idiag_dport = htons(other->port);
	memcpy(req.r.id.idiag_src, self->addr, self->family == AF_INET ? 4 : 16);
	memcpy(req.r.id.idiag_dst, other->addr, other->family == AF_INET ? 4 : 16);
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	/* Every socket asked about is on loopback; a listener's end bound
	 * to the device (a wildcard, SO_BINDTODEVICE "lo") is found only
	 * when the lookup names it, and an unbound one either way. */
	req.r.id.idiag_if = CR_NET_LOOPBACK_IFINDEX;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) == sizeof(req)) {
		do
			got = recv(fd, buf, sizeof(buf), 0);
		while (got < 0 && errno == EINTR);
		m = NLMSG_DATA(h);
		if (got > 0 && NLMSG_OK(h, (size_t)got) &&
		    h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(*m)) &&
		    ntohs(m->id.idiag_sport) == self->port &&
		    ntohs(m->id.idiag_dport) == other->port) {
			*ino = m->idiag_inode;
			*cookie = (uint64_t)m->id.idiag_cookie[1] << 32 |
				  m->id.idiag_cookie[0];
			*state = m->idiag_state;
			rc = 1;
		} else if (got > 0 && NLMSG_OK(h, (size_t)got) &&
			   h->nlmsg_type == NLMSG_ERROR &&
			   h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr)) &&
			   ((const struct nlmsgerr *)NLMSG_DATA(h))->error == -ENOENT) {
			rc = 0;
		}
	}
	close(fd);
	return rc;
}

bool cr_net_local_client_take(struct cr_netstate *ns,
			      const struct cr_net_ep *peer,
			      const struct cr_net_ep *local, uint64_t accepted)
{
	size_t i = 0;

	while (i < ns->nlocal_clients) {
		struct cr_net_client *c = &ns->clients_local[i];

		/* One accepted connection per connect the run made, and
		 * only the very one: the listener's end the connect made has
		 * its cookie recorded, and the accepted socket is that end
		 * or not. A 4-tuple alone does not do: a record whose
		 * connection went (its listener closed before the accept)
		 * would vouch for a stranger's later connection from the
		 * same port to a new listener on the same port, sent and
		 * closed before the accept (found by a probing session).
		 * Where the end was not seen at the connect (a listener
		 * deferring its accept until data comes keeps only a
		 * request until then), the run's client socket must still
		 * be open: a client gone cannot be told from a stranger's
		 * that came from its port. (Naming the listener is not
		 * enough: a request the run's client reset leaves its record
		 * behind while the listener stays.) */
		uint64_t now, was = c->ino, server = c->server;
		bool mine;

		if (!ep_same(&c->local, peer) || !ep_same(&c->remote, local)) {
			i++;
			continue;
		}
		if (server)
			mine = accepted && server == accepted;
		else
			mine = was && cr_net_tcp_inode(peer, local, &now) == 1 &&
			       now == was;
		/* Used up, or gone: the accepted connection holds the
		 * 4-tuple now, so another record of it is a dead one. */
		*c = ns->clients_local[--ns->nlocal_clients];
		if (mine)
			return true;
	}
	return false;
}

void cr_net_local_finish(struct cr_netstate *ns)
{
	free(ns->lsn);
	free(ns->clients_local);
	free(ns->flags);
	ns->lsn = NULL;
	ns->clients_local = NULL;
	ns->flags = NULL;
}

/* ---- SO_REUSEADDR (UDP) and SO_REUSEPORT: remembered, not applied ---- */

struct cr_net_flag {
	uint64_t cookie;	/* SO_COOKIE: one socket, never reused */
	bool reuseaddr, reuseport;
};

static bool cookie_of(int fd, uint64_t *c)
{
	socklen_t l = sizeof(*c);

	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, c, &l) == 0 && *c;
}

static struct cr_net_flag *flag_find(const struct cr_netstate *ns, uint64_t c)
{
	for (size_t i = 0; i < ns->nflags; i++)
		if (ns->flags[i].cookie == c)
			return &ns->flags[i];
	return NULL;
}

int cr_net_flag_set(struct cr_netstate *ns, int fd, int opt, bool on)
{
	struct cr_net_flag *f;
	uint64_t c;

	if (!cookie_of(fd, &c))
		return -1;
	f = flag_find(ns, c);
	if (!f) {
		if (!on)
			return 0;	/* off is what an unknown socket has */
		if (!ns->flags) {
			ns->flags = calloc(CR_NET_MAX_FLAGS, sizeof(*ns->flags));
			if (!ns->flags)
				return -1;
		}
		/* Full: the oldest entry goes (its socket then reads 0). */
		if (ns->nflags < CR_NET_MAX_FLAGS)
			f = &ns->flags[ns->nflags++];
		else
			f = &ns->flags[ns->flag_next++ % CR_NET_MAX_FLAGS];
		memset(f, 0, sizeof(*f));
		f->cookie = c;
	}
	if (opt == SO_REUSEADDR)
		f->reuseaddr = on;
	else
		f->reuseport = on;
	return 0;
}

int cr_net_flag_get(const struct cr_netstate *ns, int fd, int opt)
{
	const struct cr_net_flag *f;
	int type = 0;
	socklen_t l = sizeof(type);
	uint64_t c;

	if (opt != SO_REUSEADDR && opt != SO_REUSEPORT)
		return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0)
		return -1;
	/* A TCP socket's SO_REUSEADDR is applied: the kernel's answer. */
	if (opt == SO_REUSEADDR && type != SOCK_DGRAM)
		return -1;
	{
		union cr_sockaddr a;
		socklen_t al = sizeof(a);

		if (getsockname(fd, &a.sa, &al) < 0 ||
		    (a.sa.sa_family != AF_INET && a.sa.sa_family != AF_INET6))
			return -1;
	}
	if (!cookie_of(fd, &c))
		return -1;
	f = flag_find(ns, c);
	if (!f)
		return 0;
	return opt == SO_REUSEADDR ? f->reuseaddr : f->reuseport;
}
