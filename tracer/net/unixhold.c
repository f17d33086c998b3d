/* tracer/net/unixhold.c: unix stream connections the run made, held open by
 * the supervisor until accepted, so what waits in them stays counted. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "net.h"

/*
 * Why: bytes a client writes into a connection no listener has accepted
 * yet wait in the embryo socket's queue, charged to the client. Once the
 * program closes the client, the client leaves the kernel's socket list
 * and the embryo has no inode: nothing the memory budget reads shows
 * them. One listener with listen(fd, 4096) and clients that fill and
 * close held 2.5 GB of host memory under memory=64MiB (found by a
 * probing session).
 *
 * How: every unix stream or seqpacket connect is performed by the
 * supervisor (tracer/handlers/net.c); it keeps a duplicate of the client,
 * so the client stays listed, with its queue, whatever the program does
 * with its own descriptor. The duplicate goes when the connection is
 * accepted by the run (the accept, performed here too, names the client:
 * released before the accepted socket reaches the program, so the server
 * reads end of file exactly when it would natively), or when nothing waits
 * in it (SIOCOUTQ 0) and no task of the run holds it any more (the fd
 * scan's list, and the sockets in flight). A connection accepted outside
 * the run keeps its duplicate until its bytes are read: the outside server
 * sees end of file that much later.
 *
 * Datagram sockets are alike: a socket that sent datagrams and was closed
 * leaves the list while they wait at the receiver, whose own figure is the
 * first datagram's length only (100 socket pairs, each sender filled to
 * 8 MB and closed: 816 MB held, found by the same probe). socket() and
 * socketpair() of AF_UNIX datagram sockets are performed by the supervisor
 * (tracer/handlers/socket.c), which holds each from birth on the same
 * terms. While held, a closed datagram socket still takes what is sent to
 * it, where the kernel would answer ECONNREFUSED: only until its own
 * datagrams are read.
 */

struct cr_unix_held {
	int fd;			/* owned */
	uint64_t ino;
	uint64_t since_ns;	/* held since (CLOCK_MONOTONIC) */
};

static size_t held_max(void)
{
	/* A share of the supervisor's descriptors, as the other areas. */
	return cr_nofile_share(CR_NET_UNIX_HELD_MAX);
}

static void drop(struct cr_netstate *ns, size_t i)
{
	close(ns->uheld[i].fd);
	ns->uheld[i] = ns->uheld[--ns->nuheld];
}

bool cr_unix_hold_room(struct cr_netstate *ns)
{
	/* Full until the next fd scan's sweep lets some go: which of them
	 * the program still holds is known only from a scan. */
	return ns->nuheld < held_max();
}

bool cr_unix_hold_scan_earned(struct cr_netstate *ns)
{
	/* A quarter of the table made since the last scan a full table
	 * asked for: the calls that made them paid for one more. */
	return ns->uheld_made - ns->uheld_made_at_scan >= held_max() / 4;
}

int cr_unix_hold(struct cr_netstate *ns, int sock, uint64_t ino)
{
	int fd;

	if (ns->nuheld == ns->capuheld) {
		size_t cap = ns->capuheld ? ns->capuheld * 2 : 16;
		struct cr_unix_held *g = realloc(ns->uheld, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		ns->uheld = g;
		ns->capuheld = cap;
	}
	fd = cr_guard_dup(sock);
	if (fd < 0)
		return -errno;
	ns->uheld[ns->nuheld++] = (struct cr_unix_held){ fd, ino, cr_now_ns() };
	ns->uheld_made++;
	return 0;
}

/* The inode of the socket at the other end of unix socket fd (0: none,
 * or it cannot be asked): sock_diag's exact lookup. */
static uint64_t peer_of(int fd)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = AF_UNIX, .udiag_states = ~0u,
		       .udiag_show = UDIAG_SHOW_PEER,
		       .udiag_cookie = { ~0u, ~0u } },
	};
	union {
		struct nlmsghdr h;
		char buf[1024];
	} u;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	struct stat st;
	uint64_t peer = 0;
	ssize_t got;
	int nfd;

	if (fstat(fd, &st) < 0)
		return 0;
	req.r.udiag_ino = (uint32_t)st.st_ino;
	nfd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nfd < 0)
		return 0;
	if (sendto(nfd, &req, sizeof(req), 0, (struct sockaddr *)&nl,
		   sizeof(nl)) != (ssize_t)sizeof(req) ||
	    (got = recv(nfd, &u, sizeof(u), 0)) < (ssize_t)NLMSG_LENGTH(sizeof(struct unix_diag_msg)) ||
	    u.h.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    u.h.nlmsg_len > (size_t)got) {
		close(nfd);
		return 0;
	}
	{
		const struct unix_diag_msg *m = NLMSG_DATA(&u.h);
		const struct rtattr *a = (const void *)(m + 1);
		unsigned int left = (unsigned int)(u.h.nlmsg_len - NLMSG_HDRLEN -
						   NLMSG_ALIGN(sizeof(*m)));
		uint32_t p;

		for (; RTA_OK(a, left); a = RTA_NEXT(a, left))
			if (a->rta_type == UNIX_DIAG_PEER &&
			    RTA_PAYLOAD(a) >= (int)sizeof(p)) {
				memcpy(&p, RTA_DATA(a), sizeof(p));
				peer = p;
			}
	}
	close(nfd);
	return peer;
}

void cr_unix_accepted(struct cr_netstate *ns, int fd)
{
	uint64_t client;

	if (!ns || !ns->nuheld || !(client = peer_of(fd)))
		return;
	for (size_t i = 0; i < ns->nuheld; i++)
		if (ns->uheld[i].ino == client) {
			drop(ns, i);
			return;
		}
}

size_t cr_unix_held_sweep(struct cr_netstate *ns, const uint64_t *tasks,
			  size_t ntasks, const uint64_t *sent, size_t nsent,
			  uint64_t scan_ns, uint64_t *out, size_t cap)
{
	uint64_t *sorted = NULL;
	size_t k = 0, n = ntasks + nsent;

	if (!ns || !ns->nuheld)
		return 0;
	if (n && !(sorted = malloc(n * sizeof(*sorted))))
		scan_ns = 0;	/* nothing let go this time */
	if (sorted) {
		if (ntasks)
			memcpy(sorted, tasks, ntasks * sizeof(*sorted));
		if (nsent)
			memcpy(sorted + ntasks, sent, nsent * sizeof(*sorted));
		cr_u64_sort(sorted, n);
	}
	for (size_t i = 0; i < ns->nuheld;) {
		int q = -1;

		/* Let go only of one held since before the scan began, in
		 * no task's table and not in flight, nothing queued: the
		 * program can no longer write into it. */
		if (ns->uheld[i].since_ns < scan_ns &&
		    !cr_u64_has(sorted, n, ns->uheld[i].ino) &&
		    ioctl(ns->uheld[i].fd, SIOCOUTQ, &q) == 0 && q == 0) {
			drop(ns, i);
			continue;
		}
		if (k < cap)
			out[k++] = ns->uheld[i].ino;
		i++;
	}
	free(sorted);
	return k;
}

void cr_unix_held_finish(struct cr_netstate *ns)
{
	while (ns->nuheld)
		drop(ns, ns->nuheld - 1);
	free(ns->uheld);
	ns->uheld = NULL;
	ns->capuheld = 0;
}
