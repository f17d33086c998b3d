/* tracer/net/proxy.c: the in-process proxy: loopback listeners the program's
 * allowed connects are redirected to, upstream connects made without
 * blocking, splice relays, and the net-bytes / net-conn-time budgets. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <cJSON.h>

#include "corral/tlssni.h"
#include "net.h"
#include "../broker/broker.h"

#define RELAY_CHUNK (1024 * 1024)	/* pipe-max-size's default */
#define RELAY_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET)

/* Where one accepted connection must go, recorded by the connect handler
 * under the program socket's local address, with the socket itself held
 * until its connection is accepted (on_accept). */
struct cr_net_pending {
	union cr_sockaddr local;	/* the program socket's own address */
	union cr_sockaddr dest;		/* what it asked for, as decided */
	socklen_t destlen;
	uint64_t ino;
	int dup;			/* owned: the program's socket */
	int up;				/* owned: the upstream made before, or -1 */
	uint64_t up_ino;
	uint64_t since_ms;		/* cr_run_ms when up was made */
	bool check_sni;			/* allowed by name, not by address */
};

struct cr_net_side {
	struct cr_net_conn *c;
	int i;			/* 0: program side, 1: upstream */
};

struct cr_net_conn {
	struct cr_net_conn *next;
	int fd[2];		/* owned: accepted program side, upstream */
	struct cr_watch *w[2];	/* borrowed from the loop */
	struct cr_net_side side[2];
	int pipe[2][2];		/* owned: pipe[d] carries fd[d] -> fd[!d] */
	size_t inpipe[2];
	size_t pipesz[2];	/* capacity of pipe[d] */
	bool eof[2];
	bool shut[2];		/* fd[!d] was shut for writing */
	bool rst[2];		/* fd[d] ended in an error (a reset): once
				 * what it sent is delivered, fd[!d] is
				 * reset in turn */
	int dfd;		/* owned: the reset's wait for fd[!d]'s
				 * queue to empty, a timerfd, or -1 */
	struct cr_watch *dw;
	uint64_t dwait_ms;	/* that wait's start (cr_run_ms) */
	unsigned dticks;	/* its looks so far */
	bool urg[2];		/* fd[d] said it holds urgent data */
	int oob[2];		/* an urgent byte read from fd[d], not yet
				 * sent on fd[!d] as urgent; or -1 */
	bool connecting;	/* the upstream connect is in progress */
	bool check_sni;		/* the program's first bytes not yet checked */
	uint16_t port;		/* the destination port */
	int tfd;		/* owned: net-conn-time timer */
	struct cr_watch *tw;
	uint64_t ino;		/* the program socket, for getpeername */
	uint64_t own_ino[2];	/* fd[0]'s and fd[1]'s, for the memory budget */
	char dest[80];		/* for messages */
	bool by_name;		/* allowed through a name, not an address */
	uint64_t bytes[2];	/* read from fd[d] */
	uint64_t start_ms;
};

#define CR_NET_AUDIT_MAX 1000	/* "net" audit events per run */

/* One audit line per relayed connection: where, why it was allowed, how
 * much and how long. Never contents. */
static void audit_conn(struct cr_run *run, const struct cr_net_conn *c,
		       bool reset)
{
	cJSON *f;

	if (run->audit_fd < 0 || run->net->audited++ >= CR_NET_AUDIT_MAX)
		return;
	f = cJSON_CreateObject();
	if (!f)
		return;
	cJSON_AddStringToObject(f, "target", c->dest);
	cJSON_AddStringToObject(f, "allowed_by", c->by_name ? "name" : "address");
	cJSON_AddNumberToObject(f, "bytes_sent", (double)c->bytes[0]);
	cJSON_AddNumberToObject(f, "bytes_received", (double)c->bytes[1]);
	cJSON_AddNumberToObject(f, "ms", (double)(cr_run_ms(run) - c->start_ms));
	cJSON_AddStringToObject(f, "end", reset ? "reset" : "closed");
	cr_audit_event(run, "net", f);
}

static void conn_close(struct cr_run *run, struct cr_net_conn *c, bool reset)
{
	struct cr_netstate *ns = run->net;

	audit_conn(run, c, reset);

	for (struct cr_net_conn **pp = &ns->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	ns->nconns--;
	/* Unwatched before the memory goes: a later event of the same batch
	 * sees a dead watch and never reaches this freed connection. */
	for (int i = 0; i < 2; i++) {
		cr_loop_unwatch(run, c->w[i]);
		if (c->fd[i] >= 0) {
			/* A reset goes both ways: the program's abort (its
			 * SO_LINGER 0) reaches the server as a reset, as
			 * natively, not as an orderly end. */
			if (reset) {
				struct linger l = { .l_onoff = 1, .l_linger = 0 };

				setsockopt(c->fd[i], SOL_SOCKET, SO_LINGER, &l,
					   sizeof(l));
			}
			/* A connection to the broker it has not taken
			 * yet is handed to it, not closed. */
			if (i == 0 || !cr_broker_forget(run, c->fd[i]))
				close(c->fd[i]);
		}
		for (int j = 0; j < 2; j++)
			if (c->pipe[i][j] >= 0)
				close(c->pipe[i][j]);
	}
	cr_loop_unwatch(run, c->tw);
	if (c->tfd >= 0)
		close(c->tfd);
	cr_loop_unwatch(run, c->dw);
	if (c->dfd >= 0)
		close(c->dfd);
	/* The peer entry stays: the program's socket outlives the relay and
	 * getpeername must keep its answer (socket inode numbers are not
	 * reused before 2^32 sockets; the table is bounded). */
	free(c);
}

enum pump_rc { PUMP_OK, PUMP_ERR, PUMP_BREACH };

/* Is fd's send queue empty (or the socket past asking)? */
static bool sent_all(int fd)
{
	int q = 0;

	return ioctl(fd, SIOCOUTQ, &q) < 0 || q <= 0;
}

bool cr_net_charge(struct cr_run *run, uint64_t n)
{
	uint64_t lim = run->cfg->limits.v[CR_LIM_NET_BYTES];
	char b[32];

	run->usage.net_bytes += n;
	if (run->usage.net_bytes <= lim)
		return true;
	cr_limit_format(CR_LIM_NET_BYTES, lim, b, sizeof(b));
	cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "net-bytes",
		   "the network byte budget (%s) was spent", b);
	return false;
}

/* Move what can move from fd[d] to fd[!d] without blocking: the pipe is
 * filled from the source while it has room and drained into the sink while
 * the sink takes it, until neither moves. Bytes are counted as they leave
 * the source; at most one byte past the budget is read (that is how a
 * breach is seen), and it is never forwarded. */
static enum pump_rc pump(struct cr_run *run, struct cr_net_conn *c, int d,
			 bool *progress)
{
	uint64_t lim = run->cfg->limits.v[CR_LIM_NET_BYTES];

	for (;;) {
		bool moved = false;
		ssize_t n;

		if (c->inpipe[d]) {
			n = splice(c->pipe[d][0], NULL, c->fd[!d], NULL,
				   c->inpipe[d], SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return PUMP_ERR;
			if (n > 0) {
				c->inpipe[d] -= (size_t)n;
				moved = true;
			}
		}
		/* An urgent byte goes on as urgent, in its place: after
		 * everything before it, before anything after it. */
		if (c->oob[d] >= 0 && !c->inpipe[d]) {
			unsigned char b = (unsigned char)c->oob[d];

			n = send(c->fd[!d], &b, 1, MSG_OOB | MSG_DONTWAIT |
				 MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return PUMP_ERR;
			if (n == 1) {
				c->oob[d] = -1;
				moved = true;
			}
		}
		if (!c->eof[d] && !c->connecting && !(d == 0 && c->check_sni) &&
		    c->oob[d] < 0 && c->inpipe[d] < c->pipesz[d]) {
			uint64_t used = run->usage.net_bytes;
			size_t want = c->pipesz[d] - c->inpipe[d];

			if (used >= lim)
				want = 1;
			else if (lim - used < want)
				want = (size_t)(lim - used) + 1;
			n = splice(c->fd[d], NULL, c->pipe[d][1], NULL, want,
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n <= 0 && (n == 0 || errno == EAGAIN) &&
			    (c->urg[d] || n == 0)) {
				/* TCP's splice stops at the urgent mark, for
				 * good (EAGAIN, or 0 once the peer closed):
				 * the byte there is taken with recv (inline:
				 * SO_OOBINLINE) and the splice goes past. A
				 * 0 is never taken for the end before the
				 * mark is asked: the urgency may not have been
				 * heard (the bytes after the mark were lost
				 * behind a clean end). */
				int at = 0;
				unsigned char b;

				if (ioctl(c->fd[d], SIOCATMARK, &at) == 0 && at &&
				    recv(c->fd[d], &b, 1, MSG_DONTWAIT) == 1) {
					c->bytes[d]++;
					c->oob[d] = b;
					if (!cr_net_charge(run, 1))
						return PUMP_BREACH;
					*progress = true;
					continue;
				}
				/* Not at the mark: forgotten only once the
				 * kernel holds no urgent data (POLLPRI is its
				 * level), so a pointer that came ahead of its
				 * byte is still looked for when the byte comes. */
				if (!at) {
					struct pollfd pf = { .fd = c->fd[d],
							     .events = POLLPRI };

					if (poll(&pf, 1, 0) == 0)
						c->urg[d] = false;
				}
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				/* A reset from the source: what it sent
				 * before is still delivered, then the sink
				 * is reset in turn (on_side), as natively a
				 * reader gets the bytes and then the error. */
				c->rst[d] = c->eof[d] = true;
				moved = true;
			} else if (n == 0) {
				c->eof[d] = true;
				moved = true;
			} else if (n > 0) {
				c->bytes[d] += (uint64_t)n;
				c->inpipe[d] += (size_t)n;
				moved = true;
				if (!cr_net_charge(run, (uint64_t)n))
					return PUMP_BREACH;
			}
		}
		if (c->eof[d] && !c->rst[d] && !c->inpipe[d] && !c->shut[d]) {
			/* Everything the source sent has been delivered:
			 * pass its half-close on. */
			shutdown(c->fd[!d], SHUT_WR);
			c->shut[d] = true;
		}
		if (!moved)
			return PUMP_OK;
		*progress = true;
	}
}

/*
 * A connection allowed only because an allowed name resolved to its
 * address: before anything of the program's is relayed, a TLS ClientHello
 * must name a host the allow list opens on this port. Otherwise the same
 * address (a CDN's, shared by many sites) would carry traffic for any
 * other site behind it. The first bytes are peeked, never consumed; a
 * protocol that is not TLS is relayed as is (docs/network.md). Returns 1 to
 * go on, 0 to wait for more bytes, -1 when the connection was refused.
 */
static int sni_check(struct cr_run *run, struct cr_net_conn *c)
{
	static uint8_t buf[CR_TLS_PEEK_MAX];
	char name[CR_NET_NAME_MAX];
	const struct cr_netstate *ns = run->net;
	struct pollfd pf = { .fd = c->fd[0], .events = POLLPRI };
	ssize_t n;
	int rc;

	/* Urgent data before the name is checked: read inline here, it
	 * would make the peeked bytes other than the stream the server
	 * reads (which skips it), so a ClientHello could hide behind it.
	 * TLS never sends any: refused. */
	if (c->urg[0] || (poll(&pf, 1, 0) > 0 && (pf.revents & POLLPRI))) {
		cr_deny(run, 0, "connect", c->dest, "net",
			"urgent data before the TLS server name was checked");
		conn_close(run, c, true);
		return -1;
	}
	n = recv(c->fd[0], buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		c->check_sni = false;	/* EOF or error: the pump sees it */
		return 1;
	}
	rc = cr_tls_sni(buf, (size_t)n, name, sizeof(name));
	if (rc == -EAGAIN)
		return 0;
	if (rc == -EPROTO ||
	    (rc == 0 && cr_netrules_allow_name_port(ns->rules, ns->nrules,
						    name, c->port))) {
		c->check_sni = false;
		return 1;
	}
	cr_deny(run, 0, "connect", rc == 0 ? name : c->dest, "net",
		rc == 0 ? "the TLS server name is not on the allow list for this port" :
		"a TLS connection without a server name to an address allowed only by name");
	conn_close(run, c, true);
	return -1;
}

/* A reset waits at most this long for its reader to take the bytes
 * before it: a reader that never reads gets the reset then. */
#define CR_PROXY_RESET_WAIT_MS 5000

/* A relay with no end left but a reset: its net-conn-time no longer runs
 * (the connection ended when the reset came; a program reading the bytes
 * before it late was ended on net-conn-time; found by a probing session). */
static void conn_timer_stop(struct cr_net_conn *c)
{
	static const struct itimerspec off;

	if (c->tfd >= 0)
		timerfd_settime(c->tfd, 0, &off, NULL);
}

static void on_reset_wait(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_net_conn *c = arg;
	struct itimerspec next = { 0 };
	uint64_t ticks;
	long ms;

	(void)events;
	if (read(c->dfd, &ticks, sizeof(ticks)) < 0 && errno == EAGAIN)
		return;
	for (int d = 0; d < 2; d++)
		if (c->rst[d] && (sent_all(c->fd[!d]) ||
				  cr_run_ms(run) - c->dwait_ms >=
				  CR_PROXY_RESET_WAIT_MS)) {
			conn_close(run, c, true);
			return;
		}
	/* Looked at less and less often (10 ms, doubling to 320 ms): a
	 * thousand relays whose readers never read cost corral 8 s of CPU
	 * in 10 s at a steady 10 ms (found by a probing session). */
	ms = 10L << (c->dticks < 5 ? c->dticks : 5);
	c->dticks++;
	next.it_value.tv_sec = ms / 1000;
	next.it_value.tv_nsec = (ms % 1000) * 1000000L;
	if (timerfd_settime(c->dfd, 0, &next, NULL) < 0)
		conn_close(run, c, true);
}

/*
 * fd[d] was reset and everything it sent is in fd[!d]'s send queue: fd[!d]
 * is reset too, once that queue has emptied (a reset drops what it still
 * holds, and natively those bytes reached the reader before the error).
 * The queue empties as the reader reads, with no event to say so: it is
 * looked at from 10 ms on, less and less often, for at most
 * CR_PROXY_RESET_WAIT_MS; the connection is reset at once when no timer
 * can be had.
 */
static void reset_when_sent(struct cr_run *run, struct cr_net_conn *c, int d)
{
	static const struct itimerspec tick = {
		.it_value = { .tv_nsec = 10000000 },
	};

	if (sent_all(c->fd[!d]) || c->dfd >= 0) {
		if (c->dfd < 0)
			conn_close(run, c, true);
		return;
	}
	conn_timer_stop(c);
	c->dwait_ms = cr_run_ms(run);
	c->dfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->dfd < 0 || timerfd_settime(c->dfd, 0, &tick, NULL) < 0 ||
	    !(c->dw = cr_loop_watch(run, c->dfd, EPOLLIN, on_reset_wait, c)))
		conn_close(run, c, true);
}

static void on_side(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_net_side *s = arg;
	struct cr_net_conn *c = s->c;
	bool progress = false;

	if (c->connecting && s->i == 1) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			err = errno;
		if (err) {
			/* The program sees the upstream's refusal as a
			 * reset of its own connection. */
			conn_close(run, c, true);
			return;
		}
		c->connecting = false;
		progress = true;
	}
	if (events & EPOLLPRI)
		c->urg[s->i] = true;
	/* An error on a side (a reset) ends the connection there, whatever
	 * is still to move: its net-conn-time stops. What that side sent
	 * before still moves as its reader takes it, and the reset follows
	 * (pump, reset_when_sent). */
	if (events & EPOLLERR)
		conn_timer_stop(c);
	if (c->check_sni && sni_check(run, c) < 0)
		return;
	for (int d = 0; d < 2; d++) {
		enum pump_rc rc = pump(run, c, d, &progress);

		if (rc == PUMP_BREACH) {
			conn_close(run, c, true);
			return;
		}
		if (rc == PUMP_ERR) {
			conn_close(run, c, true);
			return;
		}
	}
	/* A hang-up or an error is not the end by itself: what is still
	 * queued on the socket that hung up, or in a pipe, is delivered
	 * first (closing then lost the rest of a half-closed download the
	 * program read slowly; found by a probing session). The end is when
	 * both ways are done, or a way reset and delivered. */
	for (int d = 0; d < 2; d++)
		if (c->rst[d] && !c->inpipe[d] && c->oob[d] < 0) {
			reset_when_sent(run, c, d);
			return;
		}
	if (c->eof[0] && c->eof[1] && !c->inpipe[0] && !c->inpipe[1]) {
		conn_close(run, c, false);
		return;
	}
}

static void on_conn_timer(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_net_conn *c = arg;
	char b[32];

	cr_limit_format(CR_LIM_NET_CONN_TIME,
			run->cfg->limits.v[CR_LIM_NET_CONN_TIME], b, sizeof(b));
	cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "net-conn-time",
		   "a connection to %s stayed open longer than %s", c->dest, b);
	conn_close(run, c, true);
}

static bool same_local(const union cr_sockaddr *a, const union cr_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in4.sin_port == b->in4.sin_port &&
		       a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr;
	return a->in6.sin6_port == b->in6.sin6_port &&
	       !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16);
}

static void start_conn(struct cr_run *run, int fd,
		       const struct cr_net_pending *p)
{
	struct cr_netstate *ns = run->net;
	struct cr_net_conn *c = calloc(1, sizeof(*c));
	uint64_t ms = run->cfg->limits.v[CR_LIM_NET_CONN_TIME];
	uint64_t now = cr_run_ms(run), begun, left;
	struct itimerspec its = { 0 };
	int rc;

	/* An upstream made at the connect has been open since then: its
	 * time counts from there, not from this accept. */
	begun = p->up >= 0 && p->since_ms <= now ? p->since_ms : now;
	left = ms > now - begun ? ms - (now - begun) : 1;
	its.it_value.tv_sec = (time_t)(left / 1000);
	its.it_value.tv_nsec = (long)(left % 1000) * 1000000L;
	if (!ms)
		its.it_value = (struct timespec){ 0, 0 };
	if (!c) {
		close(fd);
		if (p->up >= 0)
			close(p->up);
		return;
	}
	c->fd[0] = fd;
	c->tfd = c->dfd = -1;
	c->fd[1] = p->up;	/* made by the connect handler, or -1: now */
	c->oob[0] = c->oob[1] = -1;
	for (int i = 0; i < 2; i++) {
		c->pipe[i][0] = c->pipe[i][1] = -1;
		c->side[i] = (struct cr_net_side){ c, i };
	}
	c->ino = p->ino;
	c->check_sni = c->by_name = p->check_sni;
#ifdef CR_TEST_BYPASS_OPEN
	/* The test-only build (Makefile, bypass) checks every connection's
	 * first bytes as a name-allowed one's: loopback can never be allowed
	 * by name, so this is how the suite reaches the check. */
	c->check_sni = true;
#endif
	c->start_ms = begun;
	c->port = ntohs(p->dest.sa.sa_family == AF_INET ? p->dest.in4.sin_port :
			p->dest.in6.sin6_port);
	cr_net_addr_text(&p->dest, p->destlen, c->dest, sizeof(c->dest));
	c->next = ns->conns;
	ns->conns = c;
	ns->nconns++;
	for (int i = 0; i < 2; i++) {
		if (pipe2(c->pipe[i], O_NONBLOCK | O_CLOEXEC) < 0)
			goto fail;
		/* A larger pipe moves more per splice; the default is kept
		 * when the user's pipe quota says no. */
		fcntl(c->pipe[i][0], F_SETPIPE_SZ, RELAY_CHUNK);
		rc = fcntl(c->pipe[i][0], F_GETPIPE_SZ);
		c->pipesz[i] = rc > 0 ? (size_t)rc : 65536;
	}
	if (c->fd[1] < 0)
		c->fd[1] = socket(p->dest.sa.sa_family,
				  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd[1] < 0)
		goto fail;
	for (int i = 0; i < 2; i++) {
		static const int one = 1;
		struct stat st;

		if (fstat(c->fd[i], &st) < 0)
			goto fail;
		c->own_ino[i] = st.st_ino;
		/* The program's own socket coalesces (or not, TCP_NODELAY)
		 * what it writes; corral's legs add no Nagle delay of their
		 * own (a request written in two pieces waited ~40 ms for a
		 * delayed ACK). Urgent data is read inline, so the relay can
		 * carry it past the mark (pump). */
		if (setsockopt(c->fd[i], IPPROTO_TCP, TCP_NODELAY, &one,
			       sizeof(one)) < 0 ||
		    setsockopt(c->fd[i], SOL_SOCKET, SO_OOBINLINE, &one,
			       sizeof(one)) < 0)
			goto fail;
	}
	if (p->up >= 0) {
		/* Its end, if it came already, is the first event of the
		 * edge-triggered watch below. */
		c->connecting = true;
	} else {
		/* A connection to the broker is announced to it first: the
		 * broker serves only peers so announced (tracer/broker/). */
		if (cr_broker_expect(run, c->fd[1], &p->dest.sa, p->destlen))
			goto fail;
		/* Never a blocking call on the loop: the upstream connect
		 * runs in the background and its end is seen as EPOLLOUT. */
		rc = connect(c->fd[1], &p->dest.sa, p->destlen);
		if (rc < 0 && errno != EINPROGRESS)
			goto fail;
		c->connecting = rc < 0;
	}
	c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->tfd < 0 || timerfd_settime(c->tfd, 0, &its, NULL) < 0)
		goto fail;
	/* Edge-triggered, registered once: every event pumps both ways
	 * until nothing moves, and each way stops only on EAGAIN from a
	 * socket (whose next edge will come) or a full pipe (which means its
	 * sink said EAGAIN in the same pass). No epoll_ctl per chunk. */
	c->w[0] = cr_loop_watch(run, c->fd[0], RELAY_EVENTS, on_side, &c->side[0]);
	c->w[1] = cr_loop_watch(run, c->fd[1], RELAY_EVENTS, on_side, &c->side[1]);
	c->tw = cr_loop_watch(run, c->tfd, EPOLLIN, on_conn_timer, c);
	if (!c->w[0] || !c->w[1] || !c->tw)
		goto fail;
	return;
fail:
	conn_close(run, c, true);
}

/*
 * Is the connection accepted from peer the one the record's socket made:
 * is the socket at its other end (sock_diag's exact lookup) the recorded
 * inode? The address alone is not enough: a connect whose SYN never
 * reaches the listener (a TCP-MD5 key on the program's socket, say) leaves
 * its record, and once that socket is gone any local process can bind its
 * port and connect from there. The socket is held while its record lives,
 * so the run's own connection always has the inode, even when the program
 * closed it before the accept; a stranger's has its own, or 0 once closed.
 */
static bool is_ours(const struct cr_netstate *ns, int idx,
		    const struct cr_net_pending *p,
		    const union cr_sockaddr *peer, socklen_t pl)
{
	struct cr_net_ep self, other;
	uint64_t ino;

	if (!cr_net_ep_of(peer, pl, &self) ||
	    !cr_net_ep_of(&ns->laddr[idx], idx ? sizeof(struct sockaddr_in6) :
			  sizeof(struct sockaddr_in), &other))
		return false;
	return cr_net_tcp_inode(&self, &other, &ino) == 1 && ino &&
	       ino == p->ino;
}

/*
 * An upstream made at the connect (cr_proxy_preconnect) is open before the
 * proxy accepts the program's side, and a program socket whose SYN never
 * reaches the proxy (a TCP-MD5 key, say) left it open with no relay and
 * no timer of its own: 64 such held an allowed server's connections 15 s
 * under net-conn-time=1s, the run ending ok (found by a probing session).
 * One timer covers them all: a record whose upstream has been open for
 * net-conn-time is let go, upstream and held socket closed. The run is not
 * ended: its program never had that connection (natively the server would
 * not even have seen it), and may have closed its socket long ago; a SYN
 * arriving later finds no record and is refused.
 */
static void pending_arm(struct cr_run *run);

static void on_pending_timer(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_netstate *ns = run->net;
	uint64_t ms = run->cfg->limits.v[CR_LIM_NET_CONN_TIME];
	uint64_t now = cr_run_ms(run), ticks;

	(void)events;
	(void)arg;
	if (read(ns->ptfd, &ticks, sizeof(ticks)) < 0) {
		/* EAGAIN: a tick already read */
	}
	for (size_t i = 0; ms && i < ns->npending;) {
		struct cr_net_pending *p = &ns->pending[i];

		if (p->up < 0 || now - p->since_ms < ms) {
			i++;
			continue;
		}
		close(p->up);
		close(p->dup);
		ns->pending[i] = ns->pending[--ns->npending];
	}
	pending_arm(run);
}

static void pending_arm(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;
	uint64_t ms = run->cfg->limits.v[CR_LIM_NET_CONN_TIME];
	uint64_t now = cr_run_ms(run), oldest = UINT64_MAX, left;
	struct itimerspec its = { 0 };

	for (size_t i = 0; i < ns->npending; i++)
		if (ns->pending[i].up >= 0 && ns->pending[i].since_ms < oldest)
			oldest = ns->pending[i].since_ms;
	if (ns->ptfd < 0) {
		if (oldest == UINT64_MAX || !ms)
			return;
		ns->ptfd = timerfd_create(CLOCK_MONOTONIC,
					  TFD_NONBLOCK | TFD_CLOEXEC);
		if (ns->ptfd < 0)
			return;	/* cr_proxy_expect refuses then */
		ns->ptw = cr_loop_watch(run, ns->ptfd, EPOLLIN,
					on_pending_timer, NULL);
		if (!ns->ptw) {
			close(ns->ptfd);
			ns->ptfd = -1;
			return;
		}
	}
	if (oldest != UINT64_MAX && ms) {
		left = now - oldest < ms ? ms - (now - oldest) : 1;
		its.it_value.tv_sec = (time_t)(left / 1000);
		its.it_value.tv_nsec = (long)(left % 1000) * 1000000L;
	}
	timerfd_settime(ns->ptfd, 0, &its, NULL);
}

static void on_accept(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_netstate *ns = run->net;
	int idx = (int)(intptr_t)arg;

	for (;;) {
		union cr_sockaddr peer;
		socklen_t pl = sizeof(peer);
		int fd = accept4(ns->lfd[idx], &peer.sa, &pl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		size_t i;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			pending_arm(run);
			return;	/* EAGAIN, or EMFILE: the program's connect
				 * then sees its peer never answer */
		}
		/* Only connections the connect handler announced are
		 * served: anything else on the host that finds this port
		 * gets nothing through it. */
		for (i = 0; i < ns->npending; i++)
			if (same_local(&ns->pending[i].local, &peer))
				break;
		if (i == ns->npending) {
			close(fd);
			continue;
		}
		{
			struct cr_net_pending p = ns->pending[i];
			bool ours = is_ours(ns, idx, &p, &peer, pl);

			/* Taken either way: a socket that is not the
			 * recorded one holds the address, so the recorded
			 * one's connection is gone. */
			ns->pending[i] = ns->pending[--ns->npending];
			close(p.dup);
			if (ours) {
				start_conn(run, fd, &p);	/* takes p.up */
			} else {
				close(fd);
				if (p.up >= 0)
					close(p.up);
			}
		}
	}
}

size_t cr_proxy_inodes(const struct cr_netstate *ns, uint64_t *out,
		       size_t cap, uint64_t *piped)
{
	size_t k = 0;

	*piped = 0;
	for (const struct cr_net_conn *c = ns ? ns->conns : NULL; c; c = c->next) {
		for (int i = 0; i < 2 && k < cap; i++)
			out[k++] = c->own_ino[i];
		*piped += c->inpipe[0] + c->inpipe[1];
	}
	/* Upstream connections made before the program's was accepted. */
	for (size_t i = 0; ns && i < ns->npending && k < cap; i++)
		if (ns->pending[i].up_ino)
			out[k++] = ns->pending[i].up_ino;
	return k;
}

/* Is the held socket still connecting or connected? Its SYN may never
 * have arrived (nothing else takes a record away), and it failed or was
 * dissolved since: the record can never be claimed by it. */
static bool still_connecting(int fd)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0)
		return false;
	return ti.tcpi_state == TCP_SYN_SENT || ti.tcpi_state == TCP_ESTABLISHED;
}

bool cr_proxy_room(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;

	/* Swept only when full: a record costs one descriptor and nothing
	 * per connect until then. */
	if (ns->npending < CR_NET_MAX_PENDING)
		return true;
	for (size_t i = 0; i < ns->npending;)
		if (!still_connecting(ns->pending[i].dup)) {
			close(ns->pending[i].dup);
			if (ns->pending[i].up >= 0)
				close(ns->pending[i].up);
			ns->pending[i] = ns->pending[--ns->npending];
		} else {
			i++;
		}
	pending_arm(run);
	return ns->npending < CR_NET_MAX_PENDING;
}

int cr_proxy_preconnect(struct cr_run *run, const union cr_sockaddr *dest,
			socklen_t destlen)
{
	struct pollfd pf = { .events = POLLOUT };
	int err = 0;
	socklen_t el = sizeof(err);

	if (cr_broker_is_dest(run, &dest->sa, destlen))
		return -EOPNOTSUPP;	/* announced first: the proxy's */
	pf.fd = socket(dest->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, 0);
	if (pf.fd < 0)
		return -EOPNOTSUPP;
	if (connect(pf.fd, &dest->sa, destlen) == 0)
		return pf.fd;
	if (errno != EINPROGRESS) {
		err = errno;
		close(pf.fd);
		return err == ECONNREFUSED || err == ENETUNREACH ||
		       err == EHOSTUNREACH ? -err : -EOPNOTSUPP;
	}
	/* A loopback peer has answered by now (the handshake runs as the
	 * connect returns); a remote one goes on in the proxy's hands. */
	if (poll(&pf, 1, 0) == 1 && (pf.revents & (POLLERR | POLLHUP)) &&
	    getsockopt(pf.fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
	    (err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH)) {
		close(pf.fd);
		return -err;
	}
	return pf.fd;
}

int cr_proxy_expect(struct cr_run *run, int dup, const union cr_sockaddr *dest,
		    socklen_t destlen, uint64_t ino, bool check_sni, int up)
{
	struct cr_netstate *ns = run->net;
	struct cr_net_pending *p;
	socklen_t ll = sizeof(p->local);

	if (!cr_proxy_room(run))
		return -EAGAIN;
	/* Made by the first connection (~120 KB zeroed at set-up was ~30
	 * page faults of every run's start, ~0.5 ms on a guest). */
	if (!ns->pending &&
	    !(ns->pending = calloc(CR_NET_MAX_PENDING, sizeof(*ns->pending))))
		return -ENOMEM;
	p = &ns->pending[ns->npending];
	memset(p, 0, sizeof(*p));
	if (getsockname(dup, &p->local.sa, &ll) < 0 ||
	    (p->dup = cr_guard_dup(dup)) < 0)
		return -errno;
	p->dest = *dest;
	p->destlen = destlen;
	p->ino = ino;
	p->check_sni = check_sni;
	p->up = up;
	p->since_ms = cr_run_ms(run);
	{
		struct stat st;

		p->up_ino = up >= 0 && fstat(up, &st) == 0 ? st.st_ino : 0;
	}
	ns->npending++;
	if (up >= 0 && run->cfg->limits.v[CR_LIM_NET_CONN_TIME]) {
		pending_arm(run);
		if (ns->ptfd < 0) {
			/* No timer, no upstream held: the record goes. */
			ns->npending--;
			close(p->dup);
			return -ENOMEM;
		}
	}
	return 0;
}

static int listen_on(struct cr_run *run, int idx)
{
	struct cr_netstate *ns = run->net;
	int family = idx ? AF_INET6 : AF_INET;
	union cr_sockaddr a;
	socklen_t al;
	int fd, one = 1;

	al = cr_net_loopback(idx ? AF_INET6 : AF_INET, &a);
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (idx)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, &a.sa, al) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, &ns->laddr[idx].sa, &al) < 0 ||
	    !cr_loop_watch(run, fd, EPOLLIN, on_accept, (void *)(intptr_t)idx)) {
		int e = errno ? errno : ENOMEM;

		close(fd);
		return -e;
	}
	ns->lfd[idx] = fd;
	return 0;
}

int cr_proxy_setup(struct cr_run *run)
{
	int rc = listen_on(run, 0);

	if (rc)
		return rc;
	/* A host without IPv6 loopback still runs; v6 connects are then
	 * refused. */
	listen_on(run, 1);
	return 0;
}

/*
 * What the program sent and closed behind it is delivered, as the kernel
 * delivers a closed socket's queue after its process is gone (a program
 * that sends 2 MB, closes and exits: its server got the first 128 KB and
 * a reset, the result said ok; found by a probing session). At an orderly
 * end (ok, program_error) each relay with bytes left towards its
 * destination is pumped that way alone, for at most CR_PROXY_DRAIN_MS,
 * never past the wall budget or the connection's own time budget, and
 * under the net-bytes budget as before; its end is then passed on. A relay
 * still holding bytes after that is reset, as every relay was. What the
 * destination sends meanwhile is left unread: the program is gone, and
 * its kernel would answer such bytes with a reset too.
 */
#define CR_PROXY_DRAIN_MS 5000

/* The time a relay may still drain, in ms past the run's start. */
static uint64_t drain_until(const struct cr_run *run,
			    const struct cr_net_conn *c, uint64_t end)
{
	uint64_t ct = run->cfg->limits.v[CR_LIM_NET_CONN_TIME];

	return ct && c->start_ms + ct < end ? c->start_ms + ct : end;
}

/* Set up c's poll entries for its way out; false when it has no bytes
 * left to move (its end was passed on) or no time left. */
static bool drain_want(struct cr_run *run, struct cr_net_conn *c,
		       uint64_t end, struct pollfd pf[2])
{
	pf[0] = (struct pollfd){ .fd = c->fd[0] };
	pf[1] = (struct pollfd){ .fd = c->fd[1] };
	if (c->shut[0] || cr_run_ms(run) >= drain_until(run, c, end))
		return false;
	/* Either side, never both: bytes in the pipe (or an urgent byte)
	 * wait for room towards the destination, and the pump reads more
	 * once they move. Polling the program's side meanwhile spun: the
	 * pipe counts slots, not bytes (256 one-byte segments fill 1 MiB),
	 * and an urgent byte stops the reading, while the program's later
	 * bytes kept POLLIN up (found by probing sessions). */
	if (c->inpipe[0] || c->oob[0] >= 0)
		pf[1].events = POLLOUT;
	else if (!c->eof[0])
		pf[0].events = POLLIN | POLLRDHUP;
	/* A side not waited on is left out: a closed one would report
	 * POLLHUP to every poll. */
	for (int i = 0; i < 2; i++)
		if (!pf[i].events)
			pf[i].fd = -1;
	return pf[0].fd >= 0 || pf[1].fd >= 0;
}

/* Bytes the program left behind that pass net-bytes: the budget was
 * spent, so the run that ended on its own is limit_exceeded after all,
 * as a late disk breach makes it (budget/budget.c late_breach); the bytes
 * past it are never sent. */
static void late_breach(struct cr_run *run)
{
	uint64_t end_ms = run->end_ms;

	if (run->status != CR_ST_OK && run->status != CR_ST_PROGRAM_ERROR)
		return;
	run->ending = false;
	cr_net_charge(run, 0);
	run->ending = true;
	run->end_ms = end_ms;
}

/* One relay's turn after a poll: false when it was closed. */
static bool drain_step(struct cr_run *run, struct cr_net_conn *c)
{
	bool progress = false;

	/* A connection still being made was never the program's to send
	 * on: natively its socket was in SYN_SENT, what it wrote was refused
	 * (EAGAIN) and its close aborted the connect (corral's leg to the
	 * program was up at once: found by a probing session). Nor will a
	 * server name still incomplete be finished: the program that would
	 * send the rest is gone. Both are reset. */
	if (c->check_sni && !c->connecting && sni_check(run, c) < 0)
		return false;
	if (c->connecting || c->check_sni) {
		conn_close(run, c, true);
		return false;
	}
	/* A program side that was reset (the program's abort, SO_LINGER 0)
	 * left nothing to deliver: natively its kernel drops what it had not
	 * sent, and the server sees the reset (corral drained it for 5 s
	 * before; found by a probing session). */
	{
		struct pollfd pf = { .fd = c->fd[0] };

		if (c->rst[0] ||
		    (poll(&pf, 1, 0) > 0 && (pf.revents & POLLERR))) {
			conn_close(run, c, true);
			return false;
		}
	}
	/* Urgent data is heard here as the loop hears EPOLLPRI: a splice
	 * stopped at its mark would otherwise leave POLLIN up for good. */
	if (!c->eof[0]) {
		struct pollfd pf = { .fd = c->fd[0], .events = POLLPRI };

		if (poll(&pf, 1, 0) > 0 && (pf.revents & POLLPRI))
			c->urg[0] = true;
	}
	switch (pump(run, c, 0, &progress)) {
	case PUMP_OK:
		return true;
	case PUMP_BREACH:
		late_breach(run);
		break;
	case PUMP_ERR:
		break;
	}
	conn_close(run, c, true);
	return false;
}

static void drain(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;
	uint64_t wall = run->cfg->limits.v[CR_LIM_WALL];
	uint64_t end = cr_run_ms(run) + CR_PROXY_DRAIN_MS;
	size_t cap = ns->nconns;	/* no relay is added from here on */
	struct pollfd *pf;

	if ((run->status != CR_ST_OK && run->status != CR_ST_PROGRAM_ERROR) ||
	    !ns->conns)
		return;
	if (wall && wall < end)
		end = wall;
	pf = calloc(2 * cap, sizeof(*pf));
	while (pf) {
		uint64_t now = cr_run_ms(run), first = end;
		size_t n = 0;

		/* A relay's first turn comes before any wait: bytes the
		 * loop never pumped may move at once. One whose time is
		 * out is left as it is (reset below). */
		for (struct cr_net_conn *c = ns->conns, *next; c; c = next) {
			uint64_t until = drain_until(run, c, end);

			next = c->next;
			if (n >= cap || now >= until ||
			    !drain_step(run, c) ||
			    !drain_want(run, c, end, &pf[2 * n]))
				continue;
			if (until < first)
				first = until;
			n++;
		}
		/* A late breach ends every relay as a limit does. */
		if (!n || now >= first || run->status == CR_ST_LIMIT_EXCEEDED)
			break;
		if (poll(pf, 2 * n, (int)(first - now)) < 0 && errno != EINTR)
			break;
	}
	free(pf);
}

void cr_proxy_finish(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;

	drain(run);
	/* A relay whose program side ended and was passed on closes as an
	 * end; any other is reset. */
	while (ns->conns)
		conn_close(run, ns->conns, !ns->conns->shut[0]);
	for (int i = 0; i < 2; i++)
		if (ns->lfd[i] >= 0) {
			close(ns->lfd[i]);
			ns->lfd[i] = -1;
		}
	for (size_t i = 0; i < ns->npending; i++) {
		close(ns->pending[i].dup);
		if (ns->pending[i].up >= 0)
			close(ns->pending[i].up);
	}
	ns->npending = 0;
	free(ns->pending);
	ns->pending = NULL;
	if (ns->ptw) {
		cr_loop_unwatch(run, ns->ptw);
		ns->ptw = NULL;
	}
	if (ns->ptfd >= 0) {
		close(ns->ptfd);
		ns->ptfd = -1;
	}
}
