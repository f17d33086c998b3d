/* tracer/net/net.c: the network area's set-up and teardown, the allow
 * decision over rules and learned addresses, socket duplication, and the
 * table of peer addresses getpeername must report. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "net.h"

struct cr_net_peer {
	uint64_t ino;
	union cr_sockaddr addr;
	socklen_t len;
	bool connected;
};

struct cr_net_learned {
	int family;
	uint8_t addr[16];
	char name[CR_NET_NAME_MAX];
};

static int add_rules(struct cr_netstate *ns, const struct cr_strlist *l)
{
	struct cr_netrule *r;

	if (!l->n)
		return 0;
	r = realloc(ns->rules, (ns->nrules + l->n) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	ns->rules = r;
	for (size_t i = 0; i < l->n; i++) {
		/* Every entry was validated when the policy, the request or
		 * the command line was read; a failure here is a bug, and
		 * the entry is left out (fail closed). */
		if (cr_netrule_parse(l->v[i], &ns->rules[ns->nrules]) == 0)
			ns->nrules++;
	}
	return 0;
}

int cr_net_setup(struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;
	struct cr_netstate *ns = calloc(1, sizeof(*ns));
	int rc;

	if (!ns)
		return -ENOMEM;
	run->net = ns;
	ns->cfg = cfg;
	ns->wsfd = ns->upfd = -1;
	ns->lfd[0] = ns->lfd[1] = ns->dfd[0] = ns->dfd[1] = -1;
	ns->ptfd = -1;
	ns->names_weak = -1;
	ns->tfd[0] = ns->tfd[1] = -1;
	ns->sink[0][0] = ns->sink[0][1] = ns->sink[1][0] = ns->sink[1][1] = -1;
	ns->tref[0] = ns->tref[1] = -1;
	cr_net_local_limits(ns);
	/* A request narrows its class (checked when it was read), so when
	 * there is one its list is the whole list; the operator's
	 * --allow-net adds to either. */
	rc = add_rules(ns, cfg->req ? &cfg->req->network : &cfg->cls->net_allow);
	if (!rc)
		rc = add_rules(ns, &cfg->allow_net);
	if (rc)
		return rc;
	if (ns->nrules && (!cfg->limits.v[CR_LIM_NET_CONNECTIONS] ||
			   !cfg->limits.v[CR_LIM_NET_BYTES]))
		fprintf(stderr, "corral: destinations are allowed but the net-connections or net-bytes budget is 0: the first connection or byte ends the run (--limit net-connections=N --limit net-bytes=SIZE)\n");
	ns->ws_real = realpath(cfg->workspace, NULL);
	if (!ns->ws_real)
		return -errno;
	ns->wsfd = open(ns->ws_real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ns->wsfd < 0)
		return -errno;
	/* No destination allowed, no proxy: every connect to a non-local
	 * address is refused before the proxy would be asked (handlers/
	 * net.c, inet_refusal), so its listeners would only cost the start. */
	rc = ns->nrules ? cr_proxy_setup(run) : 0;
	if (!rc)
		rc = cr_dns_setup(run);
	return rc;
}

void cr_net_finish(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;

	if (!ns)
		return;
	cr_net_defer_finish(run);
	cr_proxy_finish(run);
	cr_dns_finish(run);
	if (ns->wsfd >= 0)
		close(ns->wsfd);
	free(ns->ws_real);
	free(ns->rules);
	free(ns->peers);
	free(ns->learned);
	cr_net_local_finish(ns);
	cr_net_udp_finish(ns);
	for (int i = 0; i < 2; i++)
		if (ns->tref[i] >= 0)
			close(ns->tref[i]);
	cr_net_unix_finish(ns);
	cr_unix_held_finish(ns);
	cr_net_pairs_finish(ns);
	cr_net_abstract_finish(ns);
	cr_rtnl_finish(ns);
	cr_ownsend_finish(ns);
	free(ns);
	run->net = NULL;
}

/* The calling thread's fd, from the table it uses (tasks.c: a thread
 * made without CLONE_FILES holds other sockets at the same numbers as its
 * leader). The caller checks the notification is still live after using
 * the descriptor. */
int cr_net_task_fd(struct cr_run *run, pid_t tid, int fd)
{
	return cr_tasks_getfd(run, tid, fd);
}

const char *cr_net_refusal(const struct cr_netstate *ns, int family,
			   const uint8_t *addr, uint16_t port)
{
	static char why[200];
	size_t alen = family == AF_INET ? 4 : 16;
	const char *closed;
	bool open = false;

	/* Named exactly: the operator's decision, whatever the address. */
	if (cr_netrules_allow_exact(ns->rules, ns->nrules, family, addr, port))
		return NULL;
	closed = cr_net_addr_closed(family, addr);
	if (closed) {
		snprintf(why, sizeof(why),
			 "%s is closed unless allowed by its exact address",
			 closed);
		return why;
	}
	open = cr_netrules_allow_addr(ns->rules, ns->nrules, family, addr, port);
	/* Learned addresses are never closed ones (the resolver drops
	 * those), and each opens only the ports of the name it came from. */
	for (size_t i = 0; !open && i < ns->nlearned; i++) {
		const struct cr_net_learned *l = &ns->learned[i];

		open = l->family == family && !memcmp(l->addr, addr, alen) &&
		       cr_netrules_allow_name_port(ns->rules, ns->nrules,
						   l->name, port);
	}
	if (!open)
		return "the destination is not on the allow list";
	/* The host's own addresses are as closed as loopback, whatever
	 * range they lie in (a public one is not in the closed list): a
	 * host service bound to 0.0.0.0 answers on them. Asked only of a
	 * destination a rule would open, so a run without rules never
	 * asks; a failure to ask refuses. */
	if (cr_net_host_owned(family, addr) != 0)
		return "one of the host's own addresses is closed unless allowed by its exact address";
	return NULL;
}

bool cr_net_allowed(const struct cr_netstate *ns, int family,
		    const uint8_t *addr, uint16_t port)
{
	return cr_net_refusal(ns, family, addr, port) == NULL;
}

void cr_net_learn(struct cr_netstate *ns, int family, const uint8_t *addr,
		  const char *name)
{
	struct cr_net_learned *l;
	size_t alen = family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < ns->nlearned; i++) {
		l = &ns->learned[i];
		if (l->family == family && !memcmp(l->addr, addr, alen) &&
		    !strcasecmp(l->name, name))
			return;
	}
	if (!ns->learned) {
		ns->learned = calloc(CR_NET_MAX_LEARNED, sizeof(*ns->learned));
		if (!ns->learned)
			return;	/* fail closed: the address stays unknown */
	}
	/* A ring: the oldest answers are forgotten first. */
	l = &ns->learned[ns->learned_next];
	ns->learned_next = (ns->learned_next + 1) % CR_NET_MAX_LEARNED;
	if (ns->nlearned < CR_NET_MAX_LEARNED)
		ns->nlearned++;
	memset(l, 0, sizeof(*l));
	l->family = family;
	memcpy(l->addr, addr, alen);
	snprintf(l->name, sizeof(l->name), "%s", name);
}

socklen_t cr_net_loopback(int family, union cr_sockaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (family == AF_INET6) {
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_addr = in6addr_loopback;
		return sizeof(a->in6);
	}
	a->in4.sin_family = AF_INET;
	a->in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sizeof(a->in4);
}

void cr_net_addr_text(const union cr_sockaddr *a, socklen_t len, char *buf,
		      size_t buflen)
{
	char ip[INET6_ADDRSTRLEN];

	if (len < (socklen_t)sizeof(sa_family_t)) {
		snprintf(buf, buflen, "(no address)");
		return;
	}
	switch (a->sa.sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &a->in4.sin_addr, ip, sizeof(ip));
		snprintf(buf, buflen, "%s:%u", ip, ntohs(a->in4.sin_port));
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
		snprintf(buf, buflen, "[%s]:%u", ip, ntohs(a->in6.sin6_port));
		break;
	case AF_UNIX: {
		size_t n = len - offsetof(struct sockaddr_un, sun_path);

		if (n > sizeof(a->un.sun_path))
			n = sizeof(a->un.sun_path);
		if (!n)
			snprintf(buf, buflen, "unix:(unnamed)");
		else if (!a->un.sun_path[0])
			snprintf(buf, buflen, "unix:@%.*s", (int)(n - 1),
				 a->un.sun_path + 1);
		else
			snprintf(buf, buflen, "%.*s", (int)strnlen(a->un.sun_path, n),
				 a->un.sun_path);
		break;
	}
	default:
		snprintf(buf, buflen, "family %u", a->sa.sa_family);
		break;
	}
}

struct peer_live {
	uint64_t *inos;		/* the table's inodes, sorted */
	bool *live;		/* by position in inos */
	size_t n;
};

static int mark_peer(uint64_t ino, void *arg)
{
	struct peer_live *pl = arg;
	const uint64_t *hit = cr_u64_find(pl->inos, pl->n, ino);

	if (hit)
		pl->live[hit - pl->inos] = true;
	return 0;
}

/* The table is full: forget the records of sockets the kernel no longer
 * has, keeping the order of the rest (the oldest go first below). A
 * program that closes its sockets then never loses a live record; on any
 * failure nothing is pruned here. */
static void prune_peers(struct cr_netstate *ns)
{
	struct peer_live pl = { .n = ns->npeers };
	size_t k = 0;

	pl.inos = malloc(pl.n * sizeof(*pl.inos));
	pl.live = calloc(pl.n, sizeof(*pl.live));
	if (!pl.inos || !pl.live)
		goto out;
	for (size_t i = 0; i < pl.n; i++)
		pl.inos[i] = ns->peers[i].ino;
	cr_u64_sort(pl.inos, pl.n);
	if (cr_net_each_inet_socket(mark_peer, &pl))
		goto out;
	for (size_t i = 0; i < ns->npeers; i++) {
		const uint64_t *hit = cr_u64_find(pl.inos, pl.n,
						  ns->peers[i].ino);

		if (hit && pl.live[hit - pl.inos])
			ns->peers[k++] = ns->peers[i];
	}
	ns->npeers = k;
out:
	free(pl.inos);
	free(pl.live);
}

int cr_net_peer_set(struct cr_netstate *ns, uint64_t ino,
		    const union cr_sockaddr *a, socklen_t len, bool connected)
{
	struct cr_net_peer *p;

	cr_net_peer_drop(ns, ino);
	if (ns->npeers >= CR_NET_MAX_PEERS)
		prune_peers(ns);
	else
		goto add;
	if (ns->npeers > CR_NET_MAX_PEERS / 4 * 3) {
		/* Still mostly live sockets: the oldest half is forgotten
		 * (their getpeername then reports the kernel's answer), so
		 * the kernel is asked at most once per quarter table. */
		memmove(ns->peers, ns->peers + CR_NET_MAX_PEERS / 2,
			(ns->npeers - CR_NET_MAX_PEERS / 2) * sizeof(*ns->peers));
		ns->npeers -= CR_NET_MAX_PEERS / 2;
	}
add:
	if (ns->npeers == ns->cappeers) {
		size_t cap = ns->cappeers ? ns->cappeers * 2 : 16;

		p = realloc(ns->peers, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ns->peers = p;
		ns->cappeers = cap;
	}
	p = &ns->peers[ns->npeers++];
	p->ino = ino;
	p->addr = *a;
	p->len = len;
	p->connected = connected;
	return 0;
}

const union cr_sockaddr *cr_net_peer_get(const struct cr_netstate *ns,
					 uint64_t ino, socklen_t *len,
					 bool connected_only)
{
	for (size_t i = 0; i < ns->npeers; i++)
		if (ns->peers[i].ino == ino &&
		    (ns->peers[i].connected || !connected_only)) {
			*len = ns->peers[i].len;
			return &ns->peers[i].addr;
		}
	return NULL;
}

void cr_net_peer_drop(struct cr_netstate *ns, uint64_t ino)
{
	for (size_t i = 0; i < ns->npeers; i++)
		if (ns->peers[i].ino == ino) {
			ns->peers[i] = ns->peers[--ns->npeers];
			return;
		}
}
