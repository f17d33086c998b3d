/* tracer/net/abstract.c: abstract unix socket names of the run: each name the
 * program binds is given a private inner name only the run's connects reach. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "net.h"

/*
 * The abstract namespace is host-wide: any local user may connect to any
 * name, and the host's own services live there (X11, D-Bus, systemd). So a
 * name the program binds ("\0foo") is bound as "\0corral-NONCE-SEQ" and
 * remembered; a connect names only remembered names (the inner one is used),
 * and every other abstract name is refused, as a name nobody bound is by
 * the kernel (ECONNREFUSED). Addresses handed back (getsockname,
 * getpeername, accept) say the program's name. The inner name is visible
 * to everyone in /proc/net/unix: a stranger may connect to it, which the
 * accept check drops (the peer of every connection the run made is the
 * supervisor, which performs each connect), or bind it once the run's
 * socket is gone, which the connect check catches (the listener's
 * credentials are the supervisor's, which performs each listen).
 * Only stream and seqpacket sockets: a datagram socket bound to a name
 * takes datagrams from anyone, unsortable.
 */

struct cr_net_aname {
	uint8_t given[SUN_LEN_MAX];	/* the name, from its leading NUL */
	uint8_t inner[SUN_LEN_MAX];
	size_t glen, ilen;
	uint64_t ino;			/* the bound socket */
	uint64_t id;			/* cr_net_name_follow's, or 0 */
};

/* A full table forgets the names of sockets gone first (unixname.c);
 * an earlier build forgot the oldest, live or not: after 1 024 binds in
 * a run a live listener's name was refused (found by a probing
 * session). */
static void sweep(struct cr_netstate *ns)
{
	size_t k = cr_net_names_sweep(ns, ns->anames, ns->nanames,
				      sizeof(*ns->anames),
				      offsetof(struct cr_net_aname, id));

	if (k < ns->nanames)
		ns->aname_next = 0;
	ns->nanames = k;
}

static int record(struct cr_netstate *ns, const uint8_t *given, size_t glen,
		  const uint8_t *inner, size_t ilen, uint64_t ino, int fd)
{
	struct cr_net_aname *a;

	if (ns->nanames == ns->capanames)
		sweep(ns);
	if (ns->nanames == ns->capanames && ns->capanames < CR_NET_MAX_ANAMES) {
		size_t cap = ns->capanames ? ns->capanames * 2 : 64;
		struct cr_net_aname *g;

		if (cap > CR_NET_MAX_ANAMES)
			cap = CR_NET_MAX_ANAMES;
		g = realloc(ns->anames, cap * sizeof(*g));
		if (!g && !ns->capanames)
			return -ENOMEM;
		if (g) {
			ns->anames = g;
			ns->capanames = cap;
		}
	}
	if (ns->nanames < ns->capanames) {
		a = &ns->anames[ns->nanames++];
	} else {
		/* Bounded: the oldest name is forgotten (then unreachable). */
		a = &ns->anames[ns->aname_next];
		ns->aname_next = (ns->aname_next + 1) % ns->nanames;
	}
	memset(a, 0, sizeof(*a));
	memcpy(a->given, given, glen);
	a->glen = glen;
	memcpy(a->inner, inner, ilen);
	a->ilen = ilen;
	a->ino = ino;
	a->id = cr_net_name_follow(ns, fd);
	return 0;
}

int cr_net_abstract_name(struct cr_netstate *ns, const uint8_t *given,
			 size_t glen, uint8_t *inner, size_t *ilen)
{
	char tail[64];
	int n;

	if (!glen || glen > SUN_LEN_MAX)
		return -EINVAL;
	if (!ns->anonce && getrandom(&ns->anonce, sizeof(ns->anonce), 0) !=
			   sizeof(ns->anonce))
		return -EAGAIN;
	n = snprintf(tail, sizeof(tail), "corral-%016llx-%llu",
		     (unsigned long long)ns->anonce,
		     (unsigned long long)++ns->aseq);
	inner[0] = '\0';
	memcpy(inner + 1, tail, (size_t)n);
	*ilen = (size_t)n + 1;
	return 0;
}

int cr_net_abstract_bound(struct cr_netstate *ns, const uint8_t *given,
			  size_t glen, const uint8_t *inner, size_t ilen,
			  uint64_t ino, int fd)
{
	if (!glen || glen > SUN_LEN_MAX || !ilen || ilen > SUN_LEN_MAX)
		return -EINVAL;
	return record(ns, given, glen, inner, ilen, ino, fd);
}

bool cr_net_abstract_inner(const struct cr_netstate *ns, const uint8_t *given,
			   size_t glen, uint8_t *inner, size_t *ilen)
{
	/* The newest binding of a name wins (an older socket may be gone). */
	for (size_t k = ns->nanames; k-- > 0;) {
		const struct cr_net_aname *a = &ns->anames[k];

		if (a->glen == glen && !memcmp(a->given, given, glen)) {
			memcpy(inner, a->inner, a->ilen);
			*ilen = a->ilen;
			return true;
		}
	}
	return false;
}

bool cr_net_abstract_ours(const struct cr_netstate *ns, const uint8_t *inner,
			  size_t ilen, uint64_t ino)
{
	for (size_t i = 0; i < ns->nanames; i++)
		if (ns->anames[i].ino == ino && ns->anames[i].ilen == ilen &&
		    !memcmp(ns->anames[i].inner, inner, ilen))
			return true;
	return false;
}

bool cr_net_abstract_fix(const struct cr_netstate *ns, union cr_sockaddr *a,
			 socklen_t *len)
{
	size_t off = offsetof(struct sockaddr_un, sun_path), n;

	if (*len <= off + 1 || a->sa.sa_family != AF_UNIX || a->un.sun_path[0])
		return false;
	n = *len - off;
	for (size_t i = 0; i < ns->nanames; i++) {
		const struct cr_net_aname *an = &ns->anames[i];

		if (an->ilen != n || memcmp(an->inner, a->un.sun_path, n))
			continue;
		memset(a->un.sun_path, 0, sizeof(a->un.sun_path));
		memcpy(a->un.sun_path, an->given, an->glen);
		*len = (socklen_t)(off + an->glen);
		return true;
	}
	return false;
}

void cr_net_abstract_finish(struct cr_netstate *ns)
{
	free(ns->anames);
	ns->anames = NULL;
	ns->nanames = 0;
	ns->capanames = 0;
}
