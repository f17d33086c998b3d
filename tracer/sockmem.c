/* tracer/sockmem.c: the bytes queued in the run's unix sockets, wherever the
 * sockets are (tasks' tables or in flight), for the memory budget. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>

#include "budget.h"

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
 */

struct cr_sockmem {
	uint64_t *sent;		/* inodes of sockets the run passed */
	size_t nsent, cap;
};

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool has(const uint64_t *v, size_t n, uint64_t ino)
{
	return n && bsearch(&ino, v, n, sizeof(*v), cmp_ino);
}

struct cr_sockmem *cr_sockmem_new(void)
{
	return calloc(1, sizeof(struct cr_sockmem));
}

void cr_sockmem_free(struct cr_sockmem *s)
{
	if (s)
		free(s->sent);
	free(s);
}

int cr_sockmem_sent(struct cr_sockmem *s, uint64_t ino)
{
	if (!s)
		return -ETOOMANYREFS;
	for (size_t i = 0; i < s->nsent; i++)
		if (s->sent[i] == ino)
			return 0;
	if (s->nsent == CR_SOCKMEM_SENT_MAX)
		return -ETOOMANYREFS;
	if (s->nsent == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint64_t *g = realloc(s->sent, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		s->sent = g;
		s->cap = cap;
	}
	s->sent[s->nsent++] = ino;
	return 0;
}

struct dump {
	const uint64_t *ours;	/* sorted: the tables' and the sent */
	size_t nours;
	uint64_t *seen;		/* sent inodes the listing showed */
	size_t nseen;
	uint64_t bytes;
};

static void one(struct dump *d, const struct unix_diag_msg *m, size_t len)
{
	const struct rtattr *a = (const void *)(m + 1);
	unsigned int left = (unsigned int)(len - NLMSG_ALIGN(sizeof(*m)));
	struct unix_diag_rqlen q = { 0 };
	bool have_q = false;
	uint32_t peer = 0;

	if (!has(d->ours, d->nours, m->udiag_ino))
		return;
	/* A dump the kernel restarted may list a socket twice. */
	if (d->nseen < d->nours)
		d->seen[d->nseen++] = m->udiag_ino;
	for (; RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		if (a->rta_type == UNIX_DIAG_PEER &&
		    RTA_PAYLOAD(a) >= (int)sizeof(peer))
			memcpy(&peer, RTA_DATA(a), sizeof(peer));
		else if (a->rta_type == UNIX_DIAG_RQLEN &&
			 RTA_PAYLOAD(a) >= (int)sizeof(q)) {
			memcpy(&q, RTA_DATA(a), sizeof(q));
			have_q = true;
		}
	}
	/* A listener's figures are its backlog's lengths, not bytes. */
	if (!have_q || m->udiag_state == 10 /* TCP_LISTEN */)
		return;
	d->bytes += q.udiag_wqueue;
	if (!peer || !has(d->ours, d->nours, peer))
		d->bytes += q.udiag_rqueue;
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
		       .udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN },
	};
	size_t n = ntables + (s ? s->nsent : 0);
	struct dump d = { 0 };
	uint64_t *ours;
	char buf[32768];
	bool done = false;
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
	memcpy(ours, tables, ntables * sizeof(*ours));
	if (s && s->nsent)
		memcpy(ours + ntables, s->sent, s->nsent * sizeof(*ours));
	qsort(ours, n, sizeof(*ours), cmp_ino);
	d.ours = ours;
	d.nours = n;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0 || send(fd, &req, sizeof(req), 0) < 0)
		rc = -errno;
	while (!rc && !done) {
		ssize_t got = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		size_t left = got > 0 ? (size_t)got : 0;

		if (got <= 0) {
			rc = got < 0 ? -errno : -EIO;
			break;
		}
		for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				rc = -EIO;
				break;
			}
			if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
				one(&d, NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN);
		}
	}
	if (fd >= 0)
		close(fd);
	if (!rc && s) {
		/* A sent socket the listing no longer shows is gone. */
		size_t j = 0;

		qsort(d.seen, d.nseen, sizeof(*d.seen), cmp_ino);
		for (size_t i = 0; i < s->nsent; i++)
			if (has(d.seen, d.nseen, s->sent[i]))
				s->sent[j++] = s->sent[i];
		s->nsent = j;
	}
	*bytes = d.bytes;
	free(ours);
	free(d.seen);
	return rc;
}
