/* tracer/net/dns.c: the in-process DNS responder: the program's queries to
 * any port-53 address arrive here; allowed names are asked of the upstream
 * resolver (both ways charged to net-bytes), the rest get NXDOMAIN and never
 * leave; answers are checked for closed addresses (rebinding) and teach the
 * allow decision. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>

#include "corral/dnsmsg.h"
#include "net.h"

#define DNS_MAX CR_DNS_MAX
#define DNS_TIMEOUT_MS 5000
#define DNS_TTL_MAX 300

/* Where a query came from, so its answer goes back the same way. */
struct origin {
	int idx;		/* which UDP responder answers */
	union cr_sockaddr client;
	socklen_t clen;
	struct tcpdns *tc;	/* borrowed: a TCP client instead, or NULL */
};

/* One DNS-over-TCP client: length-prefixed queries in, answers out. */
struct tcpdns {
	struct tcpdns *next;
	int fd;			/* owned */
	struct cr_watch *w;
	uint8_t in[2 + DNS_MAX];
	size_t inlen;
	uint8_t out[4 * (2 + DNS_MAX)];
	size_t outlen;
};

/* A program socket allowed to ask, by its bound address. */
struct cr_net_dnsclient {
	union cr_sockaddr a;
	uint64_t ino;
	int dup;		/* owned: a datagram socket, held; -1 */
	bool tcp;		/* a stream to the TCP responder */
};

struct cr_net_dnsq {
	bool used;
	uint16_t id;		/* ours, towards the upstream */
	uint16_t orig_id;	/* the program's */
	bool rd;
	struct origin o;
	uint8_t question[260];	/* as the program wrote it */
	size_t qlen;
	char name[CR_NET_NAME_MAX];
	uint16_t qtype;
	uint64_t since_ms;
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void tcp_flush(struct cr_run *run, struct tcpdns *tc);
static struct cr_net_dnsclient *known_client(const struct cr_netstate *ns,
					     const union cr_sockaddr *a,
					     bool tcp);

static void reply(struct cr_run *run, const struct origin *o,
		  const uint8_t *msg, size_t len)
{
	if (o->tc) {
		struct tcpdns *tc = o->tc;

		/* A client that does not read its answers loses the ones
		 * that do not fit; it is bounded, never buffered forever. */
		if (tc->outlen + 2 + len > sizeof(tc->out))
			return;
		put16(tc->out + tc->outlen, (uint16_t)len);
		memcpy(tc->out + tc->outlen + 2, msg, len);
		tc->outlen += 2 + len;
		tcp_flush(run, tc);
		return;
	}
	/* Only to an address a held socket of the run still has: a record
	 * that went took its socket's port with it, and whoever binds that
	 * port next is not the one that asked. */
	if (!known_client(run->net, &o->client, false))
		return;
	/* Datagrams: a full socket buffer loses the answer and the client
	 * asks again, as with any DNS server. */
	sendto(run->net->dfd[o->idx], msg, len, MSG_DONTWAIT, &o->client.sa,
	       o->clen);
}

static bool same_addr(const union cr_sockaddr *c, const union cr_sockaddr *a)
{
	if (c->sa.sa_family != a->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return c->in4.sin_port == a->in4.sin_port &&
		       c->in4.sin_addr.s_addr == a->in4.sin_addr.s_addr;
	if (a->sa.sa_family == AF_INET6)
		return c->in6.sin6_port == a->in6.sin6_port &&
		       !memcmp(&c->in6.sin6_addr, &a->in6.sin6_addr, 16);
	return false;
}

/* The record of the program's socket at address a (datagram or stream). */
static struct cr_net_dnsclient *known_client(const struct cr_netstate *ns,
					     const union cr_sockaddr *a,
					     bool tcp)
{
	for (size_t i = 0; i < ns->nclients; i++)
		if (ns->clients[i].tcp == tcp && same_addr(&ns->clients[i].a, a))
			return &ns->clients[i];
	return NULL;
}

/* Forget records [i, i + n): the held sockets are let go (their queries
 * still in flight are then never answered: reply() finds no record). */
static void forget(struct cr_netstate *ns, size_t i, size_t n)
{
	for (size_t k = i; k < i + n; k++)
		if (ns->clients[k].dup >= 0)
			close(ns->clients[k].dup);
	memmove(ns->clients + i, ns->clients + i + n,
		(ns->nclients - i - n) * sizeof(*ns->clients));
	ns->nclients -= n;
}

int cr_dns_client(struct cr_netstate *ns, int dup, uint64_t ino, bool tcp)
{
	struct cr_net_dnsclient *c;
	union cr_sockaddr local;
	socklen_t ll = sizeof(local);

	memset(&local, 0, sizeof(local));
	if (getsockname(dup, &local.sa, &ll) < 0)
		return -errno;
	c = known_client(ns, &local, tcp);
	if (c && c->ino == ino)
		return 0;
	if (c)		/* an older socket's address, now this one's */
		forget(ns, (size_t)(c - ns->clients), 1);
	if (!ns->clients) {
		ns->clients = calloc(CR_NET_MAX_DNS_CLIENTS, sizeof(*ns->clients));
		if (!ns->clients)
			return -ENOMEM;
	}
	if (ns->nclients == CR_NET_MAX_DNS_CLIENTS)
		/* Forget the oldest half: a datagram client re-registers
		 * with its next send through corral. */
		forget(ns, 0, CR_NET_MAX_DNS_CLIENTS / 2);
	c = &ns->clients[ns->nclients];
	c->a = local;
	c->ino = ino;
	c->tcp = tcp;
	c->dup = -1;
	/* A datagram socket is held while its record lives: its port cannot
	 * pass to another socket (the run's UDP sockets never share a port:
	 * udp.c), so the address answers go to stays the one that asked,
	 * even after the program closed it with a question in flight. A
	 * stream socket is checked by inode at its accept instead. */
	if (!tcp && (c->dup = cr_guard_dup(dup)) < 0)
		return -errno;
	ns->nclients++;
	return 0;
}

void cr_dns_client_drop(struct cr_netstate *ns, uint64_t ino)
{
	for (size_t i = 0; i < ns->nclients;)
		if (!ns->clients[i].tcp && ns->clients[i].ino == ino)
			forget(ns, i, 1);
		else
			i++;
}

size_t cr_dns_client_inodes(const struct cr_netstate *ns, uint64_t *out,
			    size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; ns && i < ns->nclients && k < cap; i++)
		if (ns->clients[i].dup >= 0)
			out[k++] = ns->clients[i].ino;
	return k;
}

/* The table is made by the first query sent upstream (~80 KB: zeroed at
 * set-up it cost every run ~20 page faults, ~0.3 ms here). NULL when it
 * cannot be made: the query is then answered SERVFAIL. */
static struct cr_net_dnsq *slot_for(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;
	struct cr_net_dnsq *oldest;
	uint64_t now = cr_run_ms(run);

	if (!ns->dnsq &&
	    !(ns->dnsq = calloc(CR_NET_MAX_DNS_INFLIGHT, sizeof(*ns->dnsq))))
		return NULL;
	oldest = &ns->dnsq[0];

	for (size_t i = 0; i < CR_NET_MAX_DNS_INFLIGHT; i++) {
		struct cr_net_dnsq *s = &ns->dnsq[i];

		if (s->used && now - s->since_ms > DNS_TIMEOUT_MS)
			s->used = false;	/* the client has given up */
		if (!s->used)
			return s;
		if (s->since_ms < oldest->since_ms)
			oldest = s;
	}
	oldest->used = false;
	return oldest;
}

/* Ids towards the upstream are random and unused: an off-path sender
 * cannot guess them to slip a forged answer in first. */
static uint16_t fresh_id(struct cr_netstate *ns)
{
	for (;;) {
		uint16_t id;
		bool used = false;

		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = ++ns->next_id;
		for (size_t i = 0; ns->dnsq && i < CR_NET_MAX_DNS_INFLIGHT; i++)
			if (ns->dnsq[i].used && ns->dnsq[i].id == id)
				used = true;
		if (!used)
			return id;
	}
}

static void handle_query(struct cr_run *run, const uint8_t *m, size_t mlen,
			 const struct origin *o)
{
	struct cr_netstate *ns = run->net;
	uint8_t out[DNS_MAX];
	struct cr_dns_question q;
	size_t len;
	int rc;

	rc = cr_dns_parse_query(m, mlen, &q);
	if (rc < 0)
		return;
	if (rc == CR_DNS_NXDOMAIN && q.bad_name)
		cr_deny(run, 0, "dns", q.name, "net",
			"a byte no allowed name has (answered NXDOMAIN, never forwarded)");
	if (rc == CR_DNS_OK && !cr_netrules_allow_name(ns->rules, ns->nrules,
						   q.name)) {
		cr_deny(run, 0, "dns", q.name, "net",
			"the name is not on the allow list (answered NXDOMAIN, never forwarded)");
		rc = CR_DNS_NXDOMAIN;
	}
	if (rc == CR_DNS_OK && q.qtype != CR_DNS_A && q.qtype != CR_DNS_AAAA) {
		/* Only addresses are served: an empty answer. */
		len = cr_dns_build_answer(out, q.id, q.rd, m + 12, q.end - 12, CR_DNS_OK,
				   q.qtype, NULL, 0, 0);
		reply(run, o, out, len);
		return;
	}
	if (rc == CR_DNS_OK && !ns->have_upstream)
		rc = CR_DNS_SERVFAIL;
	if (rc != CR_DNS_OK) {
		len = cr_dns_build_answer(out, q.id, q.rd, m + 12,
				   q.end > 12 ? q.end - 12 : 0, rc, 0, NULL, 0, 0);
		reply(run, o, out, len);
		return;
	}
	{
		struct cr_net_dnsq *s = slot_for(run);
		uint8_t fwd[12 + sizeof(s->question)];

		if (!s) {
			len = cr_dns_build_answer(out, q.id, q.rd, m + 12,
					   q.end > 12 ? q.end - 12 : 0,
					   CR_DNS_SERVFAIL, 0, NULL, 0, 0);
			reply(run, o, out, len);
			return;
		}
		if (q.end - 12 > sizeof(s->question))
			return;
		memset(s, 0, sizeof(*s));
		s->used = true;
		s->id = fresh_id(ns);
		s->orig_id = q.id;
		s->rd = q.rd;
		s->o = *o;
		s->qlen = q.end - 12;
		memcpy(s->question, m + 12, s->qlen);
		snprintf(s->name, sizeof(s->name), "%s", q.name);
		s->qtype = q.qtype;
		s->since_ms = cr_run_ms(run);
		/* A fresh query of our own: only the allowed name, no
		 * program-chosen flags or extra records. */
		memset(fwd, 0, 12);
		put16(fwd, s->id);
		fwd[2] = 1;	/* RD */
		put16(fwd + 4, 1);
		memcpy(fwd + 12, s->question, s->qlen);
		/* Charged before it leaves: past the budget nothing more
		 * is asked of the operator's resolver (a program repeating
		 * one allowed name would otherwise drive it without end). */
		if (!cr_net_charge(run, 12 + s->qlen) ||
		    send(ns->upfd, fwd, 12 + s->qlen, MSG_DONTWAIT) < 0)
			s->used = false;
	}
}

static void on_query(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_netstate *ns = run->net;
	int idx = (int)(intptr_t)arg;

	/* A bounded batch: the watch is level-triggered, so what is left
	 * comes back next turn, after the loop has served its timers (a
	 * tree sending queries nonstop must not hold the wall budget). */
	for (int n = 0; n < 32; n++) {
		uint8_t m[DNS_MAX];
		struct origin o = { .idx = idx, .clen = sizeof(o.client) };
		ssize_t len = recvfrom(ns->dfd[idx], m, sizeof(m), MSG_DONTWAIT,
				       &o.client.sa, &o.clen);

		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0)
			return;
		/* Only sockets the program sent through our handlers may ask:
		 * the responder is no open resolver for the rest of the host. */
		if (!known_client(ns, &o.client, false))
			continue;
		handle_query(run, m, (size_t)len, &o);
	}
}

static void tcp_close(struct cr_run *run, struct tcpdns *tc)
{
	struct cr_netstate *ns = run->net;

	for (struct tcpdns **pp = &ns->tcps; *pp; pp = &(*pp)->next)
		if (*pp == tc) {
			*pp = tc->next;
			break;
		}
	for (size_t i = 0; ns->dnsq && i < CR_NET_MAX_DNS_INFLIGHT; i++)
		if (ns->dnsq[i].used && ns->dnsq[i].o.tc == tc)
			ns->dnsq[i].used = false;
	cr_loop_unwatch(run, tc->w);
	close(tc->fd);
	free(tc);
}

static void tcp_flush(struct cr_run *run, struct tcpdns *tc)
{
	while (tc->outlen) {
		ssize_t n = send(tc->fd, tc->out, tc->outlen,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		memmove(tc->out, tc->out + n, tc->outlen - (size_t)n);
		tc->outlen -= (size_t)n;
	}
	cr_loop_modify(run, tc->w, EPOLLIN | (tc->outlen ? EPOLLOUT : 0));
}

static void on_tcp_client(struct cr_run *run, uint32_t events, void *arg)
{
	struct tcpdns *tc = arg;

	if (events & EPOLLOUT)
		tcp_flush(run, tc);
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	/* Bounded, as on_query: the rest comes back next turn. */
	for (int k = 0; k < 32; k++) {
		ssize_t n = recv(tc->fd, tc->in + tc->inlen,
				 sizeof(tc->in) - tc->inlen, MSG_DONTWAIT);
		size_t need;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			tcp_close(run, tc);
			return;
		}
		tc->inlen += (size_t)n;
		/* Every complete message in the buffer, in order. */
		while (tc->inlen >= 2 &&
		       tc->inlen >= 2 + (need = get16(tc->in))) {
			struct origin o = { .tc = tc };

			if (need > DNS_MAX) {
				tcp_close(run, tc);
				return;
			}
			handle_query(run, tc->in + 2, need, &o);
			memmove(tc->in, tc->in + 2 + need, tc->inlen - 2 - need);
			tc->inlen -= 2 + need;
		}
		if (tc->inlen >= 2 && get16(tc->in) > DNS_MAX) {
			tcp_close(run, tc);
			return;
		}
	}
}

/*
 * Is the connection accepted from peer the run's: the record its connect
 * made (taken: one accept per connect), and the socket at the other end of
 * this very connection the one recorded (sock_diag). A socket that went
 * leaves its address free for a stranger to connect from; its inode is
 * then another, or 0 for one closed before the accept, which had no one
 * left to read an answer either.
 */
static bool tcp_client_take(struct cr_netstate *ns, int idx,
			    const union cr_sockaddr *peer, socklen_t pl)
{
	struct cr_net_dnsclient *c = known_client(ns, peer, true);
	struct cr_net_ep self, other;
	uint64_t ino, want;

	if (!c)
		return false;
	want = c->ino;
	forget(ns, (size_t)(c - ns->clients), 1);
	if (!cr_net_ep_of(peer, pl, &self) ||
	    !cr_net_ep_of(&ns->taddr[idx], idx ? sizeof(struct sockaddr_in6) :
			  sizeof(struct sockaddr_in), &other))
		return false;
	return cr_net_tcp_inode(&self, &other, &ino) == 1 && ino && ino == want;
}

static void on_tcp_accept(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_netstate *ns = run->net;
	int idx = (int)(intptr_t)arg;

	for (;;) {
		union cr_sockaddr peer;
		socklen_t pl = sizeof(peer);
		int fd = accept4(ns->tfd[idx], &peer.sa, &pl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct tcpdns *tc;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if (!tcp_client_take(ns, idx, &peer, pl) ||
		    ns->ntcps >= CR_NET_MAX_DNS_CLIENTS ||
		    !(tc = calloc(1, sizeof(*tc)))) {
			close(fd);
			continue;
		}
		tc->fd = fd;
		tc->w = cr_loop_watch(run, fd, EPOLLIN, on_tcp_client, tc);
		if (!tc->w) {
			close(fd);
			free(tc);
			continue;
		}
		tc->next = ns->tcps;
		ns->tcps = tc;
		ns->ntcps++;
	}
}

static void on_upstream(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_netstate *ns = run->net;

	for (;;) {
		uint8_t m[4096], out[DNS_MAX];
		ssize_t len = recv(ns->upfd, m, sizeof(m), MSG_DONTWAIT);
		struct cr_net_dnsq *s = NULL;
		struct cr_dns_answer ans;
		uint8_t keep[CR_DNS_MAX_ADDRS][16];
		size_t nkeep = 0, dropped = 0;
		int fam;

		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0)
			return;
		if (len < 12)
			continue;
		for (size_t i = 0; ns->dnsq && i < CR_NET_MAX_DNS_INFLIGHT; i++)
			if (ns->dnsq[i].used && ns->dnsq[i].id == get16(m))
				s = &ns->dnsq[i];
		/* The answer must be to the very question we asked. */
		if (!s || cr_dns_parse_answer(m, (size_t)len, s->id, s->question,
					      s->qlen, s->qtype, DNS_TTL_MAX,
					      &ans))
			continue;
		/* The answer is the run's traffic too; past the budget the
		 * run ends and it is not passed on. */
		if (!cr_net_charge(run, (uint64_t)len)) {
			s->used = false;
			continue;
		}
		fam = s->qtype == CR_DNS_A ? AF_INET : AF_INET6;
		for (size_t i = 0; i < ans.naddrs; i++) {
			const char *why = cr_net_addr_closed(fam, ans.addrs[i]);

			/* The host's own addresses are as closed as
			 * loopback (a failure to ask drops the address). */
			if (!why && cr_net_host_owned(fam, ans.addrs[i]) != 0)
				why = "one of the host's own addresses";

			if (why) {
				char t[300];

				snprintf(t, sizeof(t),
					 "the name resolves to %s: refused (DNS rebinding)",
					 why);
				cr_deny(run, 0, "dns", s->name, "net", t);
				dropped++;
				continue;
			}
			memcpy(keep[nkeep++], ans.addrs[i], 16);
			cr_net_learn(ns, fam, ans.addrs[i], s->name);
		}
		if (dropped && !nkeep)
			ans.rcode = CR_DNS_REFUSED;	/* everything was closed */
		len = (ssize_t)cr_dns_build_answer(out, s->orig_id, s->rd,
						   s->question, s->qlen,
						   ans.rcode, s->qtype,
						   (const uint8_t (*)[16])keep,
						   nkeep, ans.ttl);
		reply(run, &s->o, out, (size_t)len);
		s->used = false;
	}
}

/* The upstream: CORRAL_DNS_UPSTREAM (IP:PORT or [IPv6]:PORT, set by the
 * operator, never by the program) or the first nameserver of
 * /etc/resolv.conf on port 53. */
static int find_upstream(struct cr_netstate *ns)
{
	const char *env = getenv("CORRAL_DNS_UPSTREAM");
	char host[INET6_ADDRSTRLEN + 1] = "";
	unsigned port = 53;

	if (env && *env) {
		const char *colon = strrchr(env, ':');
		size_t hl;

		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - env);
		if (env[0] == '[' && hl >= 2 && env[hl - 1] == ']') {
			env++;
			hl -= 2;
		}
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, env, hl);
		host[hl] = '\0';
		/* Digits only: strtoul took "53abc", " 53" and "+53". */
		if (!colon[1] || strspn(colon + 1, "0123456789") !=
				 strlen(colon + 1) || strlen(colon + 1) > 5)
			return -EINVAL;
		port = (unsigned)strtoul(colon + 1, NULL, 10);
		if (!port || port > 65535)
			return -EINVAL;
	} else {
		FILE *f = fopen("/etc/resolv.conf", "re");
		char line[512];

		if (!f)
			return 0;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, " nameserver %46s", host) == 1)
				break;
		fclose(f);
		if (!host[0])
			return 0;
	}
	memset(&ns->upstream, 0, sizeof(ns->upstream));
	if (inet_pton(AF_INET, host, &ns->upstream.in4.sin_addr) == 1) {
		ns->upstream.in4.sin_family = AF_INET;
		ns->upstream.in4.sin_port = htons((uint16_t)port);
		ns->uplen = sizeof(ns->upstream.in4);
	} else if (inet_pton(AF_INET6, host, &ns->upstream.in6.sin6_addr) == 1) {
		ns->upstream.in6.sin6_family = AF_INET6;
		ns->upstream.in6.sin6_port = htons((uint16_t)port);
		ns->uplen = sizeof(ns->upstream.in6);
	} else {
		return env && *env ? -EINVAL : 0;
	}
	ns->have_upstream = true;
	return 0;
}

static int responder(struct cr_run *run, int idx)
{
	struct cr_netstate *ns = run->net;
	union cr_sockaddr a;
	socklen_t al;
	int fd, one = 1;

	al = cr_net_loopback(idx ? AF_INET6 : AF_INET, &a);
	fd = socket(idx ? AF_INET6 : AF_INET,
		    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (idx)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, &a.sa, al) < 0 ||
	    getsockname(fd, &ns->daddr[idx].sa, &al) < 0 ||
	    !cr_loop_watch(run, fd, EPOLLIN, on_query, (void *)(intptr_t)idx)) {
		int e = errno ? errno : ENOMEM;

		close(fd);
		return -e;
	}
	ns->dfd[idx] = fd;
	/* DNS over TCP, same address, its own port. */
	fd = socket(idx ? AF_INET6 : AF_INET,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	al = idx ? sizeof(a.in6) : sizeof(a.in4);
	if (idx)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, &a.sa, al) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, &ns->taddr[idx].sa, &al) < 0 ||
	    !cr_loop_watch(run, fd, EPOLLIN, on_tcp_accept,
			   (void *)(intptr_t)idx)) {
		close(fd);
		return 0;	/* TCP queries are then refused */
	}
	ns->tfd[idx] = fd;
	return 0;
}

int cr_dns_setup(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;
	int rc;

	rc = find_upstream(ns);
	if (rc) {
		snprintf(run->message, sizeof(run->message),
			 "CORRAL_DNS_UPSTREAM must be IP:PORT or [IPv6]:PORT");
		return rc;
	}
	rc = responder(run, 0);
	if (rc)
		return rc;
	responder(run, 1);
	if (ns->have_upstream) {
		ns->upfd = socket(ns->upstream.sa.sa_family,
				  SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		/* connect: replies from anywhere but the upstream are
		 * dropped by the kernel. */
		if (ns->upfd < 0 ||
		    connect(ns->upfd, &ns->upstream.sa, ns->uplen) < 0 ||
		    !cr_loop_watch(run, ns->upfd, EPOLLIN, on_upstream, NULL))
			ns->have_upstream = false;	/* SERVFAIL to all */
	}
	return 0;
}

void cr_dns_finish(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;

	while (ns->tcps)
		tcp_close(run, ns->tcps);
	for (int i = 0; i < 2; i++) {
		if (ns->dfd[i] >= 0)
			close(ns->dfd[i]);
		if (ns->tfd[i] >= 0)
			close(ns->tfd[i]);
		ns->dfd[i] = ns->tfd[i] = -1;
	}
	if (ns->upfd >= 0)
		close(ns->upfd);
	ns->upfd = -1;
	free(ns->dnsq);
	if (ns->clients)
		forget(ns, 0, ns->nclients);
	free(ns->clients);
	ns->dnsq = NULL;
	ns->clients = NULL;
}
