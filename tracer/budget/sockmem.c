/* tracer/budget/sockmem.c: the bytes queued in the run's sockets (unix, UDP,
 * TCP), wherever they are, for the memory budget. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>

#include "budget.h"

#ifndef TCP_NEW_SYN_RECV
#define TCP_NEW_SYN_RECV 12	/* include/net/tcp_states.h */
#endif

/*
 * Why: data written into a unix socket and never read sits in the
 * kernel, charged to the sender's send buffer, in nobody's resident size.
 * A socket pair holds ~250 KiB one way by default and up to twice
 * net.core.wmem_max (8 MiB here) once SO_SNDBUF is raised, and a program
 * may hold as many as its descriptors allow: 2000 pairs took 487 MiB of
 * the host's memory with a resident size of 2 MiB. Hidden further, a
 * socket can be sent into another socket's queue and closed: it lives on
 * in flight, in no fd table.
 *
 * How: the kernel lists every unix socket of the network namespace with
 * its queues (sock_diag, no privilege needed). The run's are those in its
 * tasks' fd tables (the fd scan gives their inodes) and those it ever sent
 * over SCM_RIGHTS (the supervisor performs every send, and remembers each
 * socket it passes until the listing no longer shows it: then it is gone).
 * For each: the bytes it sent and that wait unread (its write queue,
 * wherever they wait), plus what waits in its own receive queue when its
 * peer is not one of the run's (sent by a socket we do not count). An
 * inode number reused by a socket outside the run is counted too: an
 * error towards stopping.
 *
 * Internet sockets are alike (a UDP socket with SO_RCVBUF raised queues
 * 8 MiB here, on loopback, no grant needed): the same inodes, plus those
 * of the UDP sockets the supervisor holds for the run (tracer/net/udp.c),
 * are looked up in one listing per family and protocol (one_inet, below).
 * A kind the kernel cannot list (its diag module absent) is skipped for
 * the rest of the run.
 *
 * Each socket of the run also holds kernel memory of its own, queued
 * bytes or not: its sock, inode and file (CR_BUDGET_SOCK, measured:
 * 16 processes x 19 900 TCP sockets held 1.6 GB of slab for 22 MB
 * resident), and its option memory (a TCP-MD5 key list or a socket
 * filter, up to net.core.optmem_max each: 5.3 million MD5 keys held
 * ~1 GB from one process). Both count, as do the connections waiting
 * unaccepted on a listener of the run, which have no descriptor (100 000
 * of them held ~400 MB from 26 descriptors): a unix listener's backlog
 * (each waiting connection keeps its own sock and its client's), and a
 * TCP connection without an inode on a listener's port. (Found by a
 * probing session.)
 */

/* A list of socket inodes, each followed while a listing shows it, and
 * dropped only when two listings in a row did not (missed: those the
 * last one did not show). A dump resumes each chunk by position in a
 * hash chain, so sockets closed meanwhile make it skip live ones: a
 * probing session churning 9 000 sockets saw 3-12 live ones missing
 * from each listing, and a live, followed socket dropped. */
struct inolist {
	uint64_t *v;
	size_t n, cap;
	bool sorted;		/* v sorted, each inode once */
	uint64_t *missed;	/* sorted */
	size_t nmissed;
};

struct cr_sockmem {
	struct inolist sent;	/* sockets the run passed (in flight) */
	struct inolist follow;	/* sockets the run used (bound, connected,
				 * listening, accepted, made in pairs) */
	unsigned made;		/* internet kinds the run made (bits) */
	unsigned absent;	/* internet listings the kernel lacks */
};

struct cr_sockmem *cr_sockmem_new(void)
{
	return calloc(1, sizeof(struct cr_sockmem));
}

void cr_sockmem_free(struct cr_sockmem *s)
{
	if (s) {
		free(s->sent.v);
		free(s->follow.v);
		free(s->sent.missed);
		free(s->follow.missed);
	}
	free(s);
}

size_t cr_sockmem_sent_list(const struct cr_sockmem *s, const uint64_t **v)
{
	*v = s ? s->sent.v : NULL;
	return s ? s->sent.n : 0;
}

size_t cr_sockmem_follow_list(const struct cr_sockmem *s, const uint64_t **v)
{
	*v = s ? s->follow.v : NULL;
	return s ? s->follow.n : 0;
}

size_t cr_sockmem_follow_room(const struct cr_sockmem *s)
{
	return s ? CR_SOCKMEM_SENT_MAX - s->follow.n : 0;
}

static int list_add(struct inolist *l, uint64_t ino)
{
	if (l->n == CR_SOCKMEM_SENT_MAX)
		return -ETOOMANYREFS;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		uint64_t *g = realloc(l->v, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		l->v = g;
		l->cap = cap;
	}
	l->v[l->n++] = ino;
	l->sorted = false;
	return 0;
}

/* Sorted, each inode once; nothing to do when nothing was added since
 * (a full list met at every socket call was sorted each time: 12 ms of
 * the supervisor's CPU per call, found by a probing session). */
static void list_unique(struct inolist *l)
{
	size_t j = 1;

	if (l->sorted || l->n < 2) {
		l->sorted = true;
		return;
	}
	cr_u64_sort(l->v, l->n);
	for (size_t i = 1; i < l->n; i++)
		if (l->v[i] != l->v[j - 1])
			l->v[j++] = l->v[i];
	l->n = j;
	l->sorted = true;
}

int cr_sockmem_sent(struct cr_sockmem *s, uint64_t ino)
{
	if (!s)
		return -ETOOMANYREFS;
	for (size_t i = 0; i < s->sent.n; i++)
		if (s->sent.v[i] == ino)
			return 0;
	return list_add(&s->sent, ino);
}

int cr_sockmem_follow(struct cr_sockmem *s, uint64_t ino)
{
	if (!s)
		return -ENOMEM;
	/* The same socket bound, then connected or listening: the last
	 * few are enough to spare most repeats; the rest go at the next
	 * measure (cr_sockmem_measure). */
	for (size_t i = s->follow.n > 8 ? s->follow.n - 8 : 0;
	     i < s->follow.n; i++)
		if (s->follow.v[i] == ino)
			return 0;
	/* Full: repeats further back (a socket listened on again and
	 * again) are squeezed out before the caller is refused, and one
	 * already followed is never refused. */
	if (s->follow.n == CR_SOCKMEM_SENT_MAX) {
		list_unique(&s->follow);
		if (cr_u64_has(s->follow.v, s->follow.n, ino))
			return 0;
	}
	return list_add(&s->follow, ino);
}

/* Internet protocols listed per family: TCP, UDP, UDP-Lite (the only
 * internet sockets a run may make, tracer/handlers/socket.c). */
static const uint8_t inet_protos[] = { IPPROTO_TCP, IPPROTO_UDP,
				       IPPROTO_UDPLITE };

/* A kind's bit: family (AF_INET, AF_INET6) times protocol. */
static unsigned kind_bit(int f6, size_t proto_idx)
{
	return 1u << (f6 * sizeof(inet_protos) + proto_idx);
}

void cr_sockmem_kind(struct cr_sockmem *s, int domain, int type, int proto)
{
	size_t p = type == SOCK_STREAM ? 0 : proto == IPPROTO_UDPLITE ? 2 : 1;

	if (s)
		s->made |= kind_bit(domain == AF_INET6, p);
}

bool cr_sockmem_tcp_made(const struct cr_sockmem *s)
{
	return !s || (s->made & (kind_bit(0, 0) | kind_bit(1, 0)));
}

#define UNIX_BIT (1u << 31)

struct dump {
	const uint64_t *ours;	/* sorted: the tables' and the sent */
	size_t nours;
	uint64_t *seen;		/* sent inodes the listing showed */
	size_t nseen;
	uint64_t bytes;
	/* TCP: local ports of the run's listeners in this listing */
	uint16_t *lports;
	size_t nlports, caplports;
};

static bool ours(struct dump *d, uint64_t ino)
{
	if (!cr_u64_has(d->ours, d->nours, ino))
		return false;
	/* A dump the kernel restarted may list a socket twice. */
	if (d->nseen < d->nours)
		d->seen[d->nseen++] = ino;
	return true;
}

/* The option memory in a SK_MEMINFO attribute (0 when it is short). */
static uint64_t optmem_of(const struct rtattr *a)
{
	uint32_t mi[SK_MEMINFO_VARS] = { 0 };
	size_t n = (size_t)RTA_PAYLOAD(a);

	if (n > sizeof(mi))
		n = sizeof(mi);
	memcpy(mi, RTA_DATA(a), n);
	return n > SK_MEMINFO_OPTMEM * sizeof(uint32_t) ?
	       mi[SK_MEMINFO_OPTMEM] : 0;
}

static void one_unix(struct dump *d, const struct nlmsghdr *h)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	const struct rtattr *a = (const void *)(m + 1);
	unsigned int left;
	struct unix_diag_rqlen q = { 0 };
	bool have_q = false;
	uint32_t peer = 0;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)) || !ours(d, m->udiag_ino))
		return;
	left = (unsigned int)(h->nlmsg_len - NLMSG_HDRLEN -
			      NLMSG_ALIGN(sizeof(*m)));
	for (; RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		if (a->rta_type == UNIX_DIAG_PEER &&
		    RTA_PAYLOAD(a) >= (int)sizeof(peer))
			memcpy(&peer, RTA_DATA(a), sizeof(peer));
		else if (a->rta_type == UNIX_DIAG_RQLEN &&
			 RTA_PAYLOAD(a) >= (int)sizeof(q)) {
			memcpy(&q, RTA_DATA(a), sizeof(q));
			have_q = true;
		} else if (a->rta_type == UNIX_DIAG_MEMINFO) {
			d->bytes += optmem_of(a);
		}
	}
	if (!have_q)
		return;
	/* A listener's figures are its backlog's lengths, not bytes: the
	 * connections waiting, each a sock of its own and its client's. */
	if (m->udiag_state == TCP_LISTEN) {
		d->bytes += (uint64_t)q.udiag_rqueue * 2 * CR_BUDGET_SOCK;
		return;
	}
	d->bytes += q.udiag_wqueue;
	if (!peer || !cr_u64_has(d->ours, d->nours, peer))
		d->bytes += q.udiag_rqueue;
}

/*
 * An internet socket of the run: its receive and send queues. For UDP the
 * kernel gives the memory each queue holds (rmem and wmem allocated); for
 * TCP the bytes not yet read and those not yet acknowledged. A datagram
 * sent on loopback leaves the sender's count when it is queued at the
 * receiver, and a TCP segment leaves the sender's when acknowledged, so
 * bytes passed between two of the run's sockets are counted about once.
 *
 * A connection a listener of the run has not accepted yet has no
 * descriptor, hence no inode, though data sent to it waits in its queue:
 * those (inode 0) on the local port of one of the run's listeners count
 * too. The kernel lists listeners before connections; a stranger's
 * connection on the same port number and another address counts as well:
 * an error towards stopping.
 */
static bool has_port(const struct dump *d, uint16_t port)
{
	for (size_t i = 0; i < d->nlports; i++)
		if (d->lports[i] == port)
			return true;
	return false;
}

/* A listed socket's option memory. */
static void inet_optmem(struct dump *d, const struct nlmsghdr *h)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	const struct rtattr *a = (const void *)(m + 1);
	unsigned int left = (unsigned int)(h->nlmsg_len - NLMSG_HDRLEN -
					   NLMSG_ALIGN(sizeof(*m)));

	for (; RTA_OK(a, left); a = RTA_NEXT(a, left))
		if (a->rta_type == INET_DIAG_SKMEMINFO)
			d->bytes += optmem_of(a);
}

static void one_inet(struct dump *d, const struct nlmsghdr *h)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return;
	if (m->idiag_state == TCP_LISTEN) {
		/* Its figures are its backlog's lengths, not bytes. */
		if (!ours(d, m->idiag_inode))
			return;
		inet_optmem(d, h);
		if (has_port(d, m->id.idiag_sport))
			return;
		if (d->nlports == d->caplports) {
			size_t cap = d->caplports ? d->caplports * 2 : 16;
			uint16_t *g = realloc(d->lports, cap * sizeof(*g));

			if (!g)
				return;	/* its connections go uncounted */
			d->lports = g;
			d->caplports = cap;
		}
		d->lports[d->nlports++] = m->id.idiag_sport;
		return;
	}
	if (m->idiag_inode) {
		if (!ours(d, m->idiag_inode))
			return;
		inet_optmem(d, h);
	} else if (!has_port(d, m->id.idiag_sport)) {
		return;	/* behind no listener of ours */
	} else if (m->idiag_state != TCP_TIME_WAIT &&
		   m->idiag_state != TCP_NEW_SYN_RECV) {
		/* Waiting to be accepted (or orphaned after): a whole sock
		 * with no descriptor. A time-wait or request entry is a
		 * small one that the kernel bounds and frees by itself. */
		d->bytes += CR_BUDGET_SOCK;
		inet_optmem(d, h);
	}
	d->bytes += (uint64_t)m->idiag_rqueue + m->idiag_wqueue;
}

/* One dump: each message to fn. 0, or -errno (the kernel's answer to the
 * request, or the socket's; -EIO for a reply cut short). */
static int listing(int fd, const void *req, size_t len, struct dump *d,
		   void (*fn)(struct dump *, const struct nlmsghdr *))
{
	char buf[32768];

	if (send(fd, req, len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t got = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		size_t left = got > 0 ? (size_t)got : 0;

		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				return h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) &&
				       e->error < 0 ? e->error : -EIO;
			}
			fn(d, h);
		}
	}
}

/* The kernel lists no sockets of this kind (its diag module is absent, or
 * the protocol itself): nothing of it to measure. */
static bool kind_absent(int rc)
{
	return rc == -ENOENT || rc == -EOPNOTSUPP || rc == -EPROTONOSUPPORT ||
	       rc == -EINVAL;
}

static int inet_listings(struct cr_sockmem *s, int fd, struct dump *d)
{
	for (int f = 0; f < 2; f++) {
		for (size_t p = 0; p < sizeof(inet_protos); p++) {
			unsigned bit = kind_bit(f, p);
			struct {
				struct nlmsghdr nlh;
				struct inet_diag_req_v2 r;
			} req = {
				.nlh = { .nlmsg_len = sizeof(req),
					 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
					 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
				.r = { .sdiag_family = f ? AF_INET6 : AF_INET,
				       .sdiag_protocol = inet_protos[p],
				       .idiag_ext = 1u << (INET_DIAG_SKMEMINFO - 1),
				       .idiag_states = ~0u },
			};
			int rc;

			/* None made (a run's internet sockets all come
			 * from its own socket() calls and accepts), or
			 * none listed: a TCP listing walks the host's whole
			 * connection table (~1.3 ms here). */
			if (s && (!(s->made & bit) || (s->absent & bit)))
				continue;
			d->nlports = 0;
			rc = listing(fd, &req, sizeof(req), d, one_inet);
			if (rc && kind_absent(rc) && s)
				s->absent |= bit;
			else if (rc)
				return rc;
		}
	}
	return 0;
}

/* A socket two listings in a row did not show is gone; one listed twice
 * is kept once (seen: sorted). With no memory for the missed, nothing
 * is dropped (counted longer: towards stopping). */
static void list_prune(struct inolist *l, const uint64_t *seen, size_t nseen)
{
	uint64_t *m;
	size_t j = 0, nm = 0;

	list_unique(l);
	if (!l->n)
		return;
	m = malloc(l->n * sizeof(*m));
	if (!m)
		return;
	for (size_t i = 0; i < l->n; i++) {
		uint64_t v = l->v[i];

		if (cr_u64_has(seen, nseen, v))
			l->v[j++] = v;
		else if (!cr_u64_has(l->missed, l->nmissed, v))
			l->v[j++] = m[nm++] = v;	/* missed once: kept */
	}
	l->n = j;	/* still sorted */
	free(l->missed);
	l->missed = m;
	l->nmissed = nm;
}

int cr_sockmem_measure(struct cr_sockmem *s, const uint64_t *tables,
		       size_t ntables, uint64_t *bytes)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = AF_UNIX, .udiag_states = ~0u,
		       .udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN |
				     UDIAG_SHOW_MEMINFO },
	};
	size_t n = ntables + (s ? s->sent.n + s->follow.n : 0);
	struct dump d = { 0 };
	uint64_t *ours;
	int fd, rc = 0;

	*bytes = 0;
	if (!n)
		return 0;
	ours = malloc(n * sizeof(*ours));
	d.seen = malloc(n * sizeof(*d.seen));
	if (!ours || !d.seen) {
		free(ours);
		free(d.seen);
		return -ENOMEM;
	}
	if (ntables)	/* none in the tables: tables may be NULL */
		memcpy(ours, tables, ntables * sizeof(*ours));
	if (s && s->sent.n)
		memcpy(ours + ntables, s->sent.v, s->sent.n * sizeof(*ours));
	if (s && s->follow.n)
		memcpy(ours + ntables + s->sent.n, s->follow.v,
		       s->follow.n * sizeof(*ours));
	cr_u64_sort(ours, n);
	d.ours = ours;
	d.nours = n;
	/* Each socket's own memory, listed or not (an unbound internet
	 * socket is in no listing); one met in two tables counts once. */
	for (size_t i = 0; i < n; i++)
		if (!i || ours[i] != ours[i - 1])
			d.bytes += CR_BUDGET_SOCK;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		rc = -errno;
	if (!rc && !(s && (s->absent & UNIX_BIT))) {
		rc = listing(fd, &req, sizeof(req), &d, one_unix);
		if (rc && kind_absent(rc) && s) {
			s->absent |= UNIX_BIT;
			rc = 0;
		}
	}
	if (!rc)
		rc = inet_listings(s, fd, &d);
	if (fd >= 0)
		close(fd);
	if (!rc && s) {
		cr_u64_sort(d.seen, d.nseen);
		list_prune(&s->sent, d.seen, d.nseen);
		list_prune(&s->follow, d.seen, d.nseen);
	}
	*bytes = d.bytes;
	free(ours);
	free(d.seen);
	free(d.lports);
	return rc;
}
