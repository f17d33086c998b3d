/* tracer/handlers/loopback.c: the run's own servers on loopback: bind and
 * listen of internet sockets, accept, connects and UDP sends to them. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "handlers.h"
#include "connwait.h"
#include "../budget/budget.h"
#include "../net/net.h"

/*
 * What is allowed and why it stays closed to others (docs/network.md,
 * "Servers on loopback"):
 * - bind: TCP and UDP, to a loopback address; a TCP 0.0.0.0 or [::] stays
 *   the wildcard restricted to the loopback device (SO_BINDTODEVICE "lo"),
 *   a UDP one (or where the device is refused) is bound as 127.0.0.1 or
 *   [::1] and getsockname still reports the wildcard. The
 *   socket's inode is recorded: it is the only proof a listener is the
 *   run's. SO_REUSEPORT is refused (it would let the run share a port with
 *   a host service of the same user).
 * - connect to loopback (not opened by an allow rule): performed only when
 *   every listener the kernel could pick is a socket the run bound, asked
 *   of the kernel (sock_diag) before the connect and again once its
 *   handshake is over (not over within the deadline: dissolved); the
 *   client's 4-tuple is recorded for the accept.
 * - accept: performed here, never in the kernel, so each accepted
 *   connection is checked: its 4-tuple must be one a task of the run
 *   connected, or its port published (--publish); others are closed and
 *   recorded, and the accept goes on waiting as the kernel's would.
 * - UDP: every socket with a port is a member of the run's set, filtered
 *   on the source of each datagram (tracer/net/udp.c); connects and sends
 *   to loopback reach members only.
 * Every address is read once into our copy; all calls are made on a
 * duplicate of the program's socket (EMULATED entries).
 */

#define ACCEPT_BATCH 64	/* strangers dropped per wake-up, then wait again */

static struct cr_verdict v_err(int e)
{
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = e };
}

static struct cr_verdict v_val(int64_t v)
{
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = v };
}

static bool sock_flag(int fd, int opt)
{
	int on = 0;
	socklen_t l = sizeof(on);

	return getsockopt(fd, SOL_SOCKET, opt, &on, &l) == 0 && on;
}

/* Set ep's address (its family's) into a sockaddr of family fam (the
 * socket's: an IPv4 endpoint on an IPv6 socket is IPv4-mapped). */
static socklen_t ep_to_sa(const struct cr_net_ep *ep, int fam,
			  union cr_sockaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (fam == AF_INET) {
		a->in4.sin_family = AF_INET;
		memcpy(&a->in4.sin_addr, ep->addr, 4);
		a->in4.sin_port = htons(ep->port);
		return sizeof(a->in4);
	}
	a->in6.sin6_family = AF_INET6;
	if (ep->family == AF_INET) {
		((uint8_t *)&a->in6.sin6_addr)[10] = 0xff;
		((uint8_t *)&a->in6.sin6_addr)[11] = 0xff;
		memcpy((uint8_t *)&a->in6.sin6_addr + 12, ep->addr, 4);
	} else {
		memcpy(&a->in6.sin6_addr, ep->addr, 16);
	}
	a->in6.sin6_port = htons(ep->port);
	return sizeof(a->in6);
}

static void ep_loopback(struct cr_net_ep *ep)
{
	memset(ep->addr, 0, sizeof(ep->addr));
	if (ep->family == AF_INET) {
		ep->addr[0] = 127;
		ep->addr[3] = 1;
	} else {
		ep->addr[15] = 1;
	}
}

static bool local_ep(int fd, struct cr_net_ep *ep, bool peer)
{
	union cr_sockaddr a;
	socklen_t l = sizeof(a);

	memset(&a, 0, sizeof(a));
	if ((peer ? getpeername(fd, &a.sa, &l) : getsockname(fd, &a.sa, &l)) < 0)
		return false;
	return cr_net_ep_of(&a, l, ep);
}

/* A port in use, for a socket the program asked to share one with
 * (SO_REUSEPORT, or SO_REUSEADDR on UDP: remembered, never applied,
 * docs/network.md "Sharing a port"): the kernel's EADDRINUSE, recorded, so
 * that a second worker's failure names corral and not a stranger (nginx's
 * "reuseport" and haproxy's reload failed with nothing in the result;
 * found by a compatibility probing session). */
#define CR_SHARED_PORT_REASON \
	"the port is in use: SO_REUSEPORT and a UDP SO_REUSEADDR are remembered, not applied (a port is never shared)"

static bool shared_port_asked(struct cr_run *run, const struct cr_sock *s)
{
	return cr_net_flag_get(run->net, s->dup, SO_REUSEPORT) == 1 ||
	       cr_net_flag_get(run->net, s->dup, SO_REUSEADDR) == 1;
}

/* Would the options have let this bind share the port? Only when both
 * sockets asked, and the one holding it is the run's: a port a stranger
 * holds, or one the run bound without asking, is EADDRINUSE natively
 * too (recording those blamed corral wrongly; found by a probing
 * session). */
static bool shared_port_refused(struct cr_run *run, const struct cr_sock *s,
				const struct cr_net_ep *ep)
{
	if (!shared_port_asked(run, s) || !ep->port)
		return false;
	return s->type == SOCK_DGRAM ?
	       cr_net_udp_port_shared(run->net, ep->family, ep->port) :
	       cr_net_local_port_shared(run->net, ep->family, ep->port);
}

/* A multicast or broadcast address (a group's, the link's). */
static bool ep_group(const struct cr_net_ep *ep)
{
	if (ep->family == AF_INET)
		return (ep->addr[0] & 0xf0) == 0xe0 ||
		       !memcmp(ep->addr, "\xff\xff\xff\xff", 4);
	return ep->addr[0] == 0xff;
}

/* Is the socket on the loopback device already? A bind of the wildcard
 * that failed (EADDRINUSE) left it there, and a second setting needs
 * CAP_NET_RAW: a retry must still be the wildcard on lo, not loopback's
 * address, which a host service's 127.0.0.1:P does not collide with (a
 * differential probe). The program may have named "lo" itself too. */
static bool on_lo(int fd)
{
	char name[IF_NAMESIZE] = "";
	socklen_t l = sizeof(name);

	return getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, &l) == 0 &&
	       l <= sizeof(name) && !strncmp(name, "lo", sizeof(name));
}

/* An IPv6 address that is an interface's only: link-local unicast
 * (fe80::/10), or multicast of interface or link scope. */
static bool needs_scope(const struct cr_net_ep *ep)
{
	return (ep->addr[0] == 0xfe && (ep->addr[1] & 0xc0) == 0x80) ||
	       (ep->addr[0] == 0xff && ((ep->addr[1] & 0x0f) == 1 ||
					(ep->addr[1] & 0x0f) == 2));
}

struct cr_verdict cr_net_bind_inet(struct cr_run *run,
				   const struct seccomp_notif *n,
				   const struct cr_syscall_entry *e,
				   struct cr_sock *s, const union cr_sockaddr *a,
				   socklen_t alen)
{
	struct cr_net_ep ep, real;
	union cr_sockaddr t;
	socklen_t tl;
	bool wildcard, wildcard_on_lo = false;

	if (a->sa.sa_family != s->domain)
		return v_err(EAFNOSUPPORT);
	if (!cr_net_ep_of(a, alen, &ep))
		return v_err(EINVAL);
	if (!cr_net_udp_proto(s) &&
	    (s->type != SOCK_STREAM || s->protocol != IPPROTO_TCP))
		return cr_net_deny(run, n, e, a, alen, "net",
				   "only TCP and UDP sockets may be bound", EACCES);
	wildcard = cr_net_ep_any(&ep);
	/* An address of no interface the run sees (it sees loopback alone)
	 * is the kernel's EADDRNOTAVAIL, whether or not the host has it: a
	 * program falls back on that errno (curl's FTP -P; a differential
	 * run of curl's and libuv's suites), and the answer says nothing
	 * of the host's addresses. A multicast or broadcast address, which
	 * a socket may bind, stays refused. */
	/* __inet6_bind's own EINVALs come before any address is looked
	 * for: a multicast address for a stream socket, and a link-local one
	 * that names no interface (no scope id, no device) (was
	 * EADDRNOTAVAIL; found by a differential probe). */
	if (!wildcard && s->domain == AF_INET6 && ep.family == AF_INET6 &&
	    ((ep.addr[0] == 0xff && s->type == SOCK_STREAM) ||
	     (needs_scope(&ep) && !on_lo(s->dup) &&
	      (alen < sizeof(struct sockaddr_in6) || !a->in6.sin6_scope_id))))
		return v_err(EINVAL);
	if (!wildcard && !cr_net_ep_loopback(&ep))
		return cr_net_deny(run, n, e, a, alen, "net",
				   "the run's servers live on loopback: a non-loopback address is refused",
				   ep_group(&ep) ? EACCES : EADDRNOTAVAIL);
	if (sock_flag(s->dup, SO_REUSEPORT))
		return cr_net_deny(run, n, e, a, alen, "net",
				   "SO_REUSEPORT is refused: it could share a host service's port",
				   EACCES);
	/* A TCP wildcard stays the wildcard, restricted to the loopback
	 * device (SO_BINDTODEVICE, unprivileged since Linux 5.7): reachable
	 * from this host only, by every loopback address, and a dual-stack
	 * [::] by IPv4 clients too, as natively (Node's default listen is
	 * on [::], its clients go to 127.0.0.1). Once set, only
	 * CAP_NET_RAW could unset it, and corral refuses the option for
	 * any other device. Where the kernel refuses the device (or for
	 * UDP), the wildcard becomes loopback's address. The accept checks
	 * who it is, either way. */
	if (wildcard && s->type == SOCK_STREAM &&
	    (setsockopt(s->dup, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3) == 0 ||
	     on_lo(s->dup)))
		wildcard_on_lo = true;
	if (wildcard && !wildcard_on_lo)
		ep_loopback(&ep);
	tl = ep_to_sa(&ep, s->domain, &t);
	if (s->domain == AF_INET6)
		t.in6.sin6_flowinfo = a->in6.sin6_flowinfo;
	if (s->type == SOCK_DGRAM) {
		/* A member of the run's UDP set, heard only by the run. */
		int rc = cr_net_udp_adopt(run, s->dup, s->ino, s->domain, &t,
					  tl, wildcard);

		if (rc == -ENOBUFS)
			return cr_net_deny(run, n, e, a, alen, "net",
					   "the run holds too many UDP sockets",
					   ENOBUFS);
		if (rc == -EADDRINUSE && shared_port_refused(run, s, &ep))
			return cr_net_deny(run, n, e, a, alen, "net",
					   CR_SHARED_PORT_REASON, EADDRINUSE);
		return rc ? v_err(-rc) : v_val(0);
	}
	if (cr_net_local_room(run->net) < 0)
		return cr_net_deny(run, n, e, a, alen, "net",
				   "the run holds too many bound sockets",
				   ENOBUFS);
	if (bind(s->dup, &t.sa, tl) < 0) {
		int err = errno;

		if (err == EADDRINUSE && shared_port_refused(run, s, &ep))
			return cr_net_deny(run, n, e, a, alen, "net",
					   CR_SHARED_PORT_REASON, EADDRINUSE);
		return v_err(err);
	}
	if (!local_ep(s->dup, &real, false) ||
	    cr_net_local_bound(run->net, s->ino, &real, wildcard) < 0)
		/* Bound but unrecorded: its listen is refused (fail closed). */
		return v_err(ENOBUFS);
	if (shared_port_asked(run, s))
		cr_net_local_mark_shared(run->net, s->ino);
	return v_val(0);
}

struct cr_verdict cr_net_listen_inet(struct cr_run *run,
				     const struct seccomp_notif *n,
				     const struct cr_syscall_entry *e,
				     struct cr_sock *s, int backlog)
{
	struct cr_net_ep ep;
	union cr_sockaddr peer;
	socklen_t pl = sizeof(peer);

	if (s->type != SOCK_STREAM)
		return v_err(EOPNOTSUPP);
	if (s->protocol != IPPROTO_TCP)
		return cr_net_deny(run, n, e, NULL, 0, "net",
				   "only TCP sockets may listen", EACCES);
	if (getpeername(s->dup, &peer.sa, &pl) == 0)
		return v_err(EINVAL);
	if (!local_ep(s->dup, &ep, false))
		return v_err(errno ? errno : EINVAL);
	if (sock_flag(s->dup, SO_REUSEPORT))
		return cr_net_deny(run, n, e, NULL, 0, "net",
				   "SO_REUSEPORT is refused: it could share a host service's port",
				   EACCES);
	if (!ep.port) {
		/* listen would bind an unbound socket to every interface:
		 * bound to loopback instead, reported as the wildcard. */
		union cr_sockaddr t;
		socklen_t tl;

		ep.family = s->domain;
		ep_loopback(&ep);
		tl = ep_to_sa(&ep, s->domain, &t);
		if (cr_net_local_room(run->net) < 0)
			return cr_net_deny(run, n, e, NULL, 0, "net",
					   "the run holds too many bound sockets",
					   ENOBUFS);
		if (bind(s->dup, &t.sa, tl) < 0)
			return v_err(errno);
		if (!local_ep(s->dup, &ep, false) ||
		    cr_net_local_bound(run->net, s->ino, &ep, true) < 0)
			return v_err(ENOBUFS);
	} else if (!cr_net_local_find(run->net, s->ino, NULL, NULL)) {
		return cr_net_deny(run, n, e, NULL, 0, "net",
				   "listening on a socket corral did not bind is refused",
				   EACCES);
	}
	return listen(s->dup, backlog) < 0 ? v_err(errno) : v_val(0);
}

/* ---- connect to the run's own listeners ---- */

/* The cookie of the listener's end of a connection just established
 * (from local to dst), which its accept will hand over: 0 when it is not
 * there yet (the client's last handshake packet still on its way, or a
 * listener deferring the accept keeping a request only). Asked a few
 * times: on loopback the packet is a moment behind. */
static uint64_t server_end(const struct cr_net_ep *dst,
			   const struct cr_net_ep *local)
{
	for (int k = 0; k < 4; k++) {
		uint64_t ino, cookie;
		int state;

		if (cr_net_tcp_find(dst, local, &ino, &cookie, &state) == 1 &&
		    state != TCP_SYN_RECV && state != 12 /* NEW_SYN_RECV */)
			return cookie;
		sched_yield();
	}
	return 0;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Wait for the handshake of a connect corral just made to end: 1 when the
 * connection is established (or was, and the peer has since closed its
 * side), 0 when it failed (*err), -1 when it has not ended within the
 * deadline (CR_GUARD_MS: the handler's guard, armed by cr_h_connect, ends
 * the wait at the latest). Until it ends, the SYN may still reach whoever
 * listens on the port later: the client can drop the listener's answers
 * (a TCP-MD5 key the listener lacks, a minimum TTL), or send no SYN at all
 * yet. On loopback the handshake normally ends within the connect call.
 */
static int handshake_wait(int fd, int *err)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct tcp_info ti;
		socklen_t l = sizeof(ti);
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		long left;

		memset(&ti, 0, sizeof(ti));
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0) {
			*err = errno;
			return 0;
		}
		if (ti.tcpi_state == TCP_CLOSE) {
			l = sizeof(*err);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, err, &l) < 0 ||
			    !*err)
				*err = ECONNREFUSED;
			return 0;
		}
		if (ti.tcpi_state != TCP_SYN_SENT && ti.tcpi_state != TCP_SYN_RECV)
			return 1;
		left = CR_GUARD_MS - ms_since(&t0);
		if (left <= 0 || poll(&p, 1, (int)left) < 0)
			return -1;	/* the deadline, or the guard's EINTR */
	}
}

/* The wait touches nothing of the run's: marked, so the watchdog keeps
 * the budgets while it lasts (tracer/budget/stall.c). */
static int handshake_end(int fd, int *err)
{
	int rc;

	cr_slow_begin();
	rc = handshake_wait(fd, err);
	cr_slow_end();
	return rc;
}

static struct cr_verdict refuse_local(struct cr_run *run,
				      const struct seccomp_notif *n,
				      const struct cr_syscall_entry *e,
				      const union cr_sockaddr *a, socklen_t alen)
{
	return cr_net_deny(run, n, e, a, alen, "net",
			   "loopback is open only to the run's own listeners (a host service's port is refused)",
			   ECONNREFUSED);
}

/* What connect_local did: not a loopback connect of the run's (the
 * caller goes on), answered (*v), or found the listener's queue full
 * where it may wait for room. */
enum { LOCAL_NO, LOCAL_DONE, LOCAL_FULL };

static int connect_local(struct cr_run *run, const struct seccomp_notif *n,
			 const struct cr_syscall_entry *e, struct cr_sock *s,
			 const union cr_sockaddr *a, socklen_t alen,
			 bool by_rule, bool may_wait, struct cr_verdict *v)
{
	struct cr_netstate *ns = run->net;
	struct cr_net_ep dst, local;
	union cr_sockaddr t, un = { .sa.sa_family = AF_UNSPEC };
	socklen_t tl;
	int judged, rc, err, fl;
	bool full = false;

	if (!cr_net_ep_of(a, alen, &dst))
		return LOCAL_NO;
	/* connect to 0.0.0.0 or [::] reaches loopback, as in the kernel */
	if (cr_net_ep_any(&dst))
		ep_loopback(&dst);
	if (!cr_net_ep_loopback(&dst))
		return LOCAL_NO;
	/* A host service an allow rule names goes through the proxy. */
	if (by_rule && !cr_net_local_holds(ns, &dst))
		return LOCAL_NO;
	judged = cr_net_local_listener(ns, &dst, &full);
	if (judged < 0 || (judged == 0 && !cr_net_local_holds(ns, &dst))) {
		*v = cr_net_refused_later(ns, s, refuse_local(run, n, e, a, alen));
		return LOCAL_DONE;
	}
	if (judged == 0) {	/* the run's port, nobody listens now */
		*v = cr_net_refused_later(ns, s, v_err(ECONNREFUSED));
		return LOCAL_DONE;
	}
	/* The kernel would drop the SYN and send it again a second later,
	 * past the handshake's deadline below: wait for room first, off the
	 * loop (room_wait_start). Past the wait, a SYN now would be dropped
	 * the same way: the connect is not made, and the loop does not sit
	 * out a handshake that cannot end (with a program's many threads
	 * connecting, those waits held every tick back: found by a probing
	 * session). */
	if (full && may_wait)
		return LOCAL_FULL;
	if (full) {
		*v = cr_net_deny(run, n, e, a, alen, "net",
				 "the run's listener's queue stayed full; the connection timed out",
				 ETIMEDOUT);
		return LOCAL_DONE;
	}
	tl = ep_to_sa(&dst, s->domain, &t);
	/* Performed non-blocking (the flag lives on the shared open file,
	 * so only around the call): a full backlog must not hold the loop. */
	fl = fcntl(s->dup, F_GETFL);
	if (fl < 0) {
		*v = v_err(errno);
		return LOCAL_DONE;
	}
	if (!(fl & O_NONBLOCK))
		fcntl(s->dup, F_SETFL, fl | O_NONBLOCK);
	rc = connect(s->dup, &t.sa, tl);
	err = errno;
	if (!(fl & O_NONBLOCK))
		fcntl(s->dup, F_SETFL, fl);
	if (rc < 0 && err != EINPROGRESS) {
		*v = v_err(err);
		return LOCAL_DONE;
	}
	/* The connection is answered only once its handshake is over, on
	 * this thread, so nothing of the run can bind or listen meanwhile:
	 * a SYN still in flight (or not sent) could reach a listener that
	 * takes the port after the check below. Not over within the
	 * deadline (a full backlog, or a client dropping the answers):
	 * dissolved. */
	switch (handshake_end(s->dup, &err)) {
	case 0:
		*v = v_err(err);
		return LOCAL_DONE;
	case -1:
		connect(s->dup, &un.sa, sizeof(un.sa));
		*v = cr_net_deny(run, n, e, a, alen, "net",
				 "the connection to the run's listener was not established within the deadline (a full backlog, or a client that drops the listener's answers); dissolved",
				 ETIMEDOUT);
		return LOCAL_DONE;
	}
	/* The SYN went to whoever listened when the handshake ended: asked
	 * again, so a listener closed and re-bound by a stranger in between
	 * is caught. The connection is then dissolved. */
	if (cr_net_local_listener(ns, &dst, NULL) != 1 ||
	    !local_ep(s->dup, &local, false)) {
		connect(s->dup, &un.sa, sizeof(un.sa));
		*v = refuse_local(run, n, e, a, alen);
		return LOCAL_DONE;
	}
	cr_net_local_client(ns, s->ino, &local, &dst, server_end(&dst, &local));
	cr_net_peer_drop(ns, s->ino);
	/* Established: a blocking connect is done; a non-blocking one
	 * answers as the kernel did, and its poll sees it writable. The
	 * blocking one was performed non-blocking, which left the socket
	 * "connecting" for the kernel: a second connect answered 0 where
	 * natively it is EISCONN (found by a differential probing
	 * session). Asked once more, the established socket becomes
	 * connected (the kernel answers 0 and moves it). */
	if (rc < 0 && !(fl & O_NONBLOCK)) {
		fcntl(s->dup, F_SETFL, fl | O_NONBLOCK);
		connect(s->dup, &t.sa, tl);
		fcntl(s->dup, F_SETFL, fl);
	}
	*v = rc == 0 || !(fl & O_NONBLOCK) ? v_val(0) : v_err(EINPROGRESS);
	return LOCAL_DONE;
}

/*
 * A connect to the run's listener whose queue is full waits for room,
 * its caller held (a non-blocking one too: natively its SYN would be
 * dropped and sent again a second later, so its connection would not be
 * made sooner), the loop free: the queue is asked again after 1, 2, 4 ...
 * 32 ms. Past ROOM_WAIT_MS (a non-blocking caller: ROOM_WAIT_NB_MS) the
 * queue is asked once more: with room the connect is made, still full it
 * answers ETIMEDOUT unmade (connect_local). An earlier build made it at
 * once: the dropped SYN held the loop its 200 ms deadline, then
 * ETIMEDOUT; a JDK HttpServer (backlog 50) under 200 concurrent clients
 * failed in 7 of 9 runs (found by a compatibility probe).
 */
#define ROOM_WAIT_MS 30000
#define ROOM_WAIT_NB_MS 1000

static struct cr_verdict room_again(struct cr_run *run, uint64_t id,
				    pid_t tid, int tfd, void *arg, bool *again)
{
	struct cr_connect_wait *rw = arg;
	struct cr_verdict v = v_err(ECONNREFUSED);
	uint64_t t0 = cr_thread_cpu_ns();
	int rc;

	(void)id;
	(void)tid;
	/* Bounded as cr_h_connect bounds its connects (tracer/guard.c). */
	cr_guard_arm(CR_GUARD_MS);
	rc = connect_local(run, &rw->n, rw->e, &rw->s, &rw->a, rw->alen,
			   rw->by_rule, cr_now_ns() < rw->until_ns, &v);
	if (rc == LOCAL_FULL) {
		if (cr_connect_wait_again(rw, tfd)) {
			cr_guard_disarm();
			*again = true;
		} else {
			rc = connect_local(run, &rw->n, rw->e, &rw->s, &rw->a,
					   rw->alen, rw->by_rule, false, &v);
		}
	}
	if (!*again && cr_guard_disarm() && v.kind == CR_V_ERRNO &&
	    v.error == EINTR)
		v = v_err(ETIMEDOUT);
	/* Asking the kernel again and again is work done for the run: its
	 * CPU, so a run cannot keep corral asking past its budget. */
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	if (*again)
		return v;
	/* No longer a connect of the run's to loopback: refused, as the
	 * listener's address is the run's own. */
	return rc == LOCAL_DONE ? v : v_err(ECONNREFUSED);
}

/* Start the wait: true with *v CR_V_SENT, false when it cannot be kept
 * (the connect is then made at once). */
static bool room_wait_start(struct cr_run *run, const struct seccomp_notif *n,
			    const struct cr_syscall_entry *e,
			    const struct cr_sock *s, const union cr_sockaddr *a,
			    socklen_t alen, bool by_rule, struct cr_verdict *v)
{
	struct timeval tv = { 0, 0 };
	socklen_t tvl = sizeof(tv);
	int fl = fcntl(s->dup, F_GETFL);
	uint64_t wait;

	if (fl < 0)
		return false;
	wait = 1000000ull * (fl & O_NONBLOCK ? ROOM_WAIT_NB_MS : ROOM_WAIT_MS);
	/* A blocking caller's SO_SNDTIMEO bounds its connect (natively
	 * EINPROGRESS then, the handshake going on; here ETIMEDOUT, not
	 * made, as past any wait). An earlier build waited for room up to
	 * ROOM_WAIT_MS whatever the timeout: a 500 ms connect returned
	 * connected after 10 s (found by a differential probing session). */
	if (!(fl & O_NONBLOCK) &&
	    getsockopt(s->dup, SOL_SOCKET, SO_SNDTIMEO, &tv, &tvl) == 0 &&
	    (tv.tv_sec || tv.tv_usec) && tv.tv_sec >= 0 &&
	    (uint64_t)tv.tv_sec < wait / 1000000000ull &&	/* no overflow */
	    (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull <
	    wait)
		wait = (uint64_t)tv.tv_sec * 1000000000ull +
		       (uint64_t)tv.tv_usec * 1000ull;
	return cr_connect_wait_start(run, n, e, s, a, alen, by_rule,
				     cr_now_ns() + wait, room_again, v);
}

bool cr_net_connect_local(struct cr_run *run, const struct seccomp_notif *n,
			  const struct cr_syscall_entry *e, struct cr_sock *s,
			  const union cr_sockaddr *a, socklen_t alen,
			  bool by_rule, struct cr_verdict *v)
{
	int rc = connect_local(run, n, e, s, a, alen, by_rule, true, v);

	if (rc == LOCAL_FULL) {
		if (room_wait_start(run, n, e, s, a, alen, by_rule, v))
			return true;
		rc = connect_local(run, n, e, s, a, alen, by_rule, false, v);
	}
	return rc == LOCAL_DONE;
}

/* ---- UDP to the run's own sockets ---- */

bool cr_net_udp_proto(const struct cr_sock *s)
{
	return s->type == SOCK_DGRAM && (s->domain == AF_INET ||
					 s->domain == AF_INET6) &&
	       (s->protocol == IPPROTO_UDP || s->protocol == IPPROTO_UDPLITE);
}

/* The address an unbound socket gets at its first send or connect: the
 * loopback of its family, or, for a dual-stack AF_INET6 socket whose
 * destination is IPv4-mapped, the mapped IPv4 loopback (bound to [::1],
 * the kernel answers ENETUNREACH for a mapped destination, where its own
 * implicit [::] reaches both). NULL: the family's loopback. */
static const union cr_sockaddr *implicit_src(const struct cr_sock *s,
					     const union cr_sockaddr *a,
					     union cr_sockaddr *src,
					     socklen_t *len)
{
	if (s->domain != AF_INET6 || a->sa.sa_family != AF_INET6 ||
	    !IN6_IS_ADDR_V4MAPPED(&a->in6.sin6_addr))
		return NULL;
	memset(src, 0, sizeof(*src));
	src->in6.sin6_family = AF_INET6;
	src->in6.sin6_addr.s6_addr[10] = src->in6.sin6_addr.s6_addr[11] = 0xff;
	src->in6.sin6_addr.s6_addr[12] = 127;
	src->in6.sin6_addr.s6_addr[15] = 1;
	*len = sizeof(src->in6);
	return src;
}

/* corral's UDP sink (or refuser) as this socket reaches it: for a mapped
 * destination the IPv4 one, named through its mapped address (a socket
 * bound to the mapped loopback cannot send to [::1]; an IPV6_V6ONLY one
 * then answers ENETUNREACH, as the kernel for a mapped destination). */
static int sink_for(struct cr_netstate *ns, const struct cr_sock *s,
		    bool mapped, bool refuse, union cr_sockaddr *t,
		    socklen_t *tl)
{
	union cr_sockaddr v4;
	socklen_t l;
	int rc;

	if (!mapped)
		return cr_net_udp_sink(ns, s->domain, refuse, t, tl);
	rc = cr_net_udp_sink(ns, AF_INET, refuse, &v4, &l);
	if (rc)
		return rc;
	memset(t, 0, sizeof(*t));
	t->in6.sin6_family = AF_INET6;
	t->in6.sin6_port = v4.in4.sin_port;
	t->in6.sin6_addr.s6_addr[10] = t->in6.sin6_addr.s6_addr[11] = 0xff;
	memcpy(&t->in6.sin6_addr.s6_addr[12], &v4.in4.sin_addr, 4);
	*tl = sizeof(t->in6);
	return 0;
}

int cr_net_udp_local(struct cr_run *run, const struct seccomp_notif *n,
		     const struct cr_syscall_entry *e, struct cr_sock *s,
		     const union cr_sockaddr *a, socklen_t alen, bool send,
		     union cr_sockaddr *t, socklen_t *tl, struct cr_verdict *v)
{
	struct cr_net_ep dst;
	union cr_sockaddr srcbuf;
	socklen_t srclen = 0;
	const union cr_sockaddr *src;
	bool bcast;
	int rc;

	if (!cr_net_udp_proto(s) || !cr_net_ep_of(a, alen, &dst))
		return 0;
	src = implicit_src(s, a, &srcbuf, &srclen);
	if (src) {
		int only = 0;
		socklen_t ol = sizeof(only);

		/* No route from an IPV6_V6ONLY socket to a mapped address. */
		if (getsockopt(s->dup, IPPROTO_IPV6, IPV6_V6ONLY, &only,
			       &ol) == 0 && only) {
			*v = v_err(ENETUNREACH);
			return -1;
		}
	}
	/* A send to port 0: the kernel's EINVAL (udp_sendmsg,
	 * udpv6_sendmsg), before any route; corral's sink answered the
	 * length (found by a probing session). */
	if (send && dst.port == 0) {
		*v = v_err(EINVAL);
		return -1;
	}
	/* 0.0.0.0 and [::] reach loopback, as in the kernel */
	if (cr_net_ep_any(&dst))
		ep_loopback(&dst);
	/* The loopback network's broadcast address and the limited one: the
	 * kernel refuses them to a socket without SO_BROADCAST (EACCES:
	 * udp_sendmsg, ip4_datagram_connect), a check corral's redirect to
	 * its sink, or its refusal, skipped (found by probing sessions). */
	bcast = dst.family == AF_INET &&
		(dst.addr[0] == 127 || dst.addr[0] == 255) &&
		dst.addr[1] == 255 && dst.addr[2] == 255 && dst.addr[3] == 255;
	if (bcast) {
		int on = 0;
		socklen_t ol = sizeof(on);

		if (getsockopt(s->dup, SOL_SOCKET, SO_BROADCAST, &on, &ol) < 0 ||
		    !on) {
			*v = v_err(EACCES);
			return -1;
		}
	}
	if (!cr_net_ep_loopback(&dst))
		return 0;
	/* A connect to a member the program has closed, whose port only
	 * corral's duplicate still holds: the kernel would find the port
	 * closed (a free port is found by binding and closing a socket).
	 * Members no task holds are let go first; a scan of the tables,
	 * made for connects only (sends stay cheap: an unconnected send
	 * to a closed port answers its length either way). */
	if (!send && cr_net_udp_member(run->net, &dst, s->protocol))
		cr_net_udp_collect(run);
	if (!cr_net_udp_member(run->net, &dst, s->protocol)) {
		*v = cr_net_deny(run, n, e, a, alen, "net",
				 "loopback is open only to the run's own UDP sockets (another port, a host service's or none, is refused and answered as a closed port)",
				 ECONNREFUSED);
		/* A send (not a connect) of plain UDP: as the kernel, the
		 * length, the datagram dropped (cr_net_udp_sink). UDP-Lite
		 * ports are another space, where corral's sink's number could
		 * be a host service's: refused. The socket gets its own
		 * port and source filter first, as at a connect: corral's
		 * send on an unbound socket made the kernel bind it to the
		 * wildcard, unfiltered, and any sender on the host (or the
		 * network) was heard, while the run's own sockets were out
		 * of its reach (found by a probing session). */
		/* A connect: pointed at corral's refuser, which the kernel
		 * answers as a closed port (connect succeeds, a later call
		 * says ECONNREFUSED); the socket gets its own port first,
		 * as any member does (its source filter). A broadcast has
		 * no port to be closed: its sends go on without an error,
		 * to the sink. A member already keeps its port (the mapped
		 * source asked of it again failed EINVAL, and a connect
		 * after a send to a closed mapped port was refused; found
		 * by a probing session). */
		if (s->protocol == IPPROTO_UDP) {
			rc = cr_net_udp_adopt(run, s->dup, s->ino, s->domain,
					      src, srclen, false);
			if (rc == -EINVAL && src)
				rc = cr_net_udp_adopt(run, s->dup, s->ino,
						      s->domain, NULL, 0, false);
			if (!rc && sink_for(run->net, s, src != NULL,
					    !send && !bcast, t, tl) == 0)
				return send ? 1 : 2;
		}
		return -1;
	}
	rc = cr_net_udp_adopt(run, s->dup, s->ino, s->domain, src, srclen,
			      false);
	if (rc == -EINVAL && src)	/* IPV6_V6ONLY: as the kernel, later */
		rc = cr_net_udp_adopt(run, s->dup, s->ino, s->domain, NULL, 0,
				      false);
	if (!rc)
		rc = cr_net_udp_hear(run->net, &dst, s->ino);
	if (rc) {
		*v = rc == -ENOBUFS ?
		     cr_net_deny(run, n, e, a, alen, "net",
				 "the run holds too many UDP sockets", ENOBUFS) :
		     v_err(-rc);
		return -1;
	}
	*tl = ep_to_sa(&dst, s->domain, t);
	return 1;
}

/* ---- accept ---- */

struct accept_args {
	uint64_t addr, lenp;	/* the program's pointers */
	int flags;		/* SOCK_NONBLOCK | SOCK_CLOEXEC */
	bool inet;
	bool abstract;		/* a unix listener on an abstract name */
};

/* Is this accepted connection one the run may see? The peer is the
 * address accept itself gave (pa): getpeername fails on a connection its
 * client reset before the accept, which the kernel still hands over. */
static bool peer_ok(struct cr_run *run, pid_t tid, int fd,
		    const union cr_sockaddr *pa, socklen_t pl)
{
	struct cr_net_ep peer, local;
	char target[96];
	union cr_sockaddr la;
	socklen_t ll = sizeof(la);
	uint64_t cookie;

	socklen_t cl = sizeof(cookie);

	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &cl) < 0)
		cookie = 0;	/* no record vouches for it then */
	if (!cr_net_ep_of(pa, pl, &peer) || !local_ep(fd, &local, false)) {
		cr_deny(run, tid, "accept", NULL, "net",
			"a connection whose ends cannot be read was dropped");
		return false;
	}
	if (cr_net_published(run->net, local.port) ||
	    cr_net_local_client_take(run->net, &peer, &local, cookie))
		return true;
	if (getsockname(fd, &la.sa, &ll) == 0)
		cr_net_addr_text(&la, ll, target, sizeof(target));
	else
		snprintf(target, sizeof(target), "port %u", local.port);
	cr_deny(run, tid, "accept", target, "net",
		"a connection from outside the run was dropped (--publish PORT lets others in)");
	return false;
}

/* A connection to an abstract name of the run: anyone on the host may
 * connect there, while every connect of the run is performed by the
 * supervisor, whose credentials the connection then carries. */
static bool unix_peer_ok(struct cr_run *run, pid_t tid, int lfd, int fd)
{
	union cr_sockaddr la;
	socklen_t ll = sizeof(la);
	struct ucred c;
	socklen_t cl = sizeof(c);
	char target[96] = "an abstract name";

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &cl) == 0 &&
	    c.pid == getpid())
		return true;
	memset(&la, 0, sizeof(la));
	if (getsockname(lfd, &la.sa, &ll) == 0) {
		cr_net_unix_fix(run->net, &la, &ll);
		cr_net_addr_text(&la, ll, target, sizeof(target));
	}
	cr_deny(run, tid, "accept", target, "net",
		"a connection from outside the run was dropped");
	return false;
}

static struct cr_verdict accept_try(struct cr_run *run, uint64_t id,
				    pid_t tid, int dup, void *arg, bool *again)
{
	struct accept_args *aa = arg;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		union cr_sockaddr pa;
		socklen_t pl = sizeof(pa);
		int fl = fcntl(dup, F_GETFL), fd, err, rc = 0;
		struct cr_verdict v;

		if (fl < 0)
			return v_err(errno);
		memset(&pa, 0, sizeof(pa));
		/* Every accept of the run comes here, on this one thread, so
		 * no other accept races ours; non-blocking only around it. */
		if (!(fl & O_NONBLOCK))
			fcntl(dup, F_SETFL, fl | O_NONBLOCK);
		/* The program can clear the flag between ours and the call:
		 * bounded (tracer/guard.c), and taken as "none waiting". */
		cr_guard_arm(CR_GUARD_MS);
		fd = accept4(dup, &pa.sa, &pl,
			     SOCK_CLOEXEC | (aa->flags & SOCK_NONBLOCK));
		err = errno;
		if (cr_guard_disarm() && fd < 0 && err == EINTR)
			err = EAGAIN;
		if (!(fl & O_NONBLOCK))
			fcntl(dup, F_SETFL, fl);
		if (fd < 0) {
			if ((err == EAGAIN || err == EWOULDBLOCK) &&
			    !(fl & O_NONBLOCK)) {
				*again = true;
				return v_err(EAGAIN);
			}
			return v_err(err);
		}
		if (aa->inet && !peer_ok(run, tid, fd, &pa, pl)) {
			close(fd);
			continue;
		}
		{
			struct stat st;

			/* Unix ones too: see addr_call_open (net.c). One
			 * that cannot be followed is not given (ENOBUFS:
			 * the kernel's answer when it has no buffer). */
			if (fstat(fd, &st) < 0 ||
			    cr_budget_on_socket_used(run, st.st_ino) < 0) {
				close(fd);
				return v_err(ENOBUFS);
			}
		}
		if (aa->abstract && !unix_peer_ok(run, tid, dup, fd)) {
			close(fd);
			continue;
		}
		/* Its client, held by corral until now, is let go before
		 * the program can read: end of file comes as natively. */
		if (!aa->inet)
			cr_unix_accepted(run->net, fd);
		if (pa.sa.sa_family == AF_UNIX)
			cr_net_unix_fix(run->net, &pa, &pl);
		/* The address's length is read once the connection is taken,
		 * as do_accept's move_addr_to_user reads it: a bad one loses
		 * the connection (a length pointer of NULL handed it over,
		 * one unreadable left it queued; found by a differential
		 * probing session). */
		if (aa->addr) {
			int ulen = 0;

			rc = cr_mem_read(tid, aa->lenp, &ulen, sizeof(ulen));
			if (!rc && ulen < 0)
				rc = -EINVAL;
			/* The length before the address, as this kernel's
			 * move_addr_to_user writes them. */
			if (!rc) {
				int out = (int)pl;

				rc = cr_mem_write(tid, aa->lenp, &out, sizeof(out));
			}
			if (!rc)
				rc = cr_mem_write(tid, aa->addr, &pa,
						  (size_t)ulen < pl ? (size_t)ulen : pl);
		}
		if (rc) {
			/* As the kernel: the connection is lost. */
			close(fd);
			return v_err(-rc);
		}
		/* Installed, then ours closed: another thread of the
		 * program may close the new number in between (close_range),
		 * leaving ours the last, maybe lingering: guarded. */
		cr_guard_note_copy(fd);
		v = cr_notif_send_fd_id(run, id, fd,
					(aa->flags & SOCK_CLOEXEC) != 0);
		return v;
	}
	/* A flood of strangers: the rest on the next wake-up. */
	*again = true;
	return v_err(EAGAIN);
}

/* Has the task's fd table a number free below its RLIMIT_NOFILE? Counted
 * from /proc/TID/fd (its own table, shared or not); unknown is room. */
static bool fd_room(pid_t tid)
{
	struct rlimit rl;
	struct dirent *d;
	char path[48];
	unsigned long below = 0;
	DIR *dir;

	if (prlimit(tid, RLIMIT_NOFILE, NULL, &rl) < 0 ||
	    rl.rlim_cur == RLIM_INFINITY)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)tid);
	if (!(dir = opendir(path)))
		return true;
	while ((d = readdir(dir)))
		if (d->d_name[0] >= '0' && d->d_name[0] <= '9' &&
		    strtoul(d->d_name, NULL, 10) < rl.rlim_cur)
			below++;
	closedir(dir);
	return below < rl.rlim_cur;
}

struct cr_verdict cr_h_accept(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	struct accept_args *aa;
	struct cr_sock s;
	struct cr_verdict v;
	bool again = false;
	int rc, fl;

	if (!run->net)
		return v_err(EACCES);
	aa = calloc(1, sizeof(*aa));
	if (!aa)
		return v_err(ENOMEM);
	aa->addr = n->data.args[1];
	aa->lenp = n->data.args[2];
	if (!strcmp(e->name, "accept4"))
		aa->flags = (int)n->data.args[3];
	/* The kernel's order: the descriptor, the flags, a socket (the
	 * flags came first: EINVAL for a closed descriptor; found by a
	 * differential probing session). */
	rc = cr_sock_open(run, n, (int)n->data.args[0], &s);
	if (rc == -EBADF || rc == -ESRCH ||
	    !(aa->flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))) {
		if (rc) {
			free(aa);
			return v_err(-rc);
		}
	} else {
		cr_sock_close(&s);
		free(aa);
		return v_err(EINVAL);
	}
	if (s.rtnl) {	/* netlink has no accept: sock_no_accept */
		cr_sock_close(&s);
		free(aa);
		return v_err(EOPNOTSUPP);
	}
	aa->inet = s.domain == AF_INET || s.domain == AF_INET6;
	if (s.domain == AF_UNIX) {
		union cr_sockaddr l;
		socklen_t ll = sizeof(l);

		aa->abstract = getsockname(s.dup, &l.sa, &ll) == 0 &&
			       ll > offsetof(struct sockaddr_un, sun_path) &&
			       !l.un.sun_path[0];
	}
	v = accept_try(run, n->id, (pid_t)n->pid, s.dup, aa, &again);
	if (!again) {
		cr_sock_close(&s);
		free(aa);
		return v;
	}
	/* Nothing to take yet on a blocking socket: wait for it without
	 * holding the loop. */
	fl = fcntl(s.dup, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK)) {
		cr_sock_close(&s);
		free(aa);
		return v_err(EAGAIN);
	}
	/* The kernel takes the new fd's number before it waits: a full
	 * table is EMFILE at once, not after a connection came (and was
	 * taken; found by a differential probe). */
	{
		/* The count's CPU grows with the table: the run's. */
		uint64_t t0 = cr_thread_cpu_ns();
		bool room = fd_room((pid_t)n->pid);

		cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
		if (!room) {
			cr_sock_close(&s);
			free(aa);
			return v_err(EMFILE);
		}
	}
	v = cr_net_wait(run, n, s.dup, EPOLLIN, accept_try, aa);
	s.dup = -1;
	return v;
}

/* ---- getsockname ---- */

struct cr_verdict cr_h_getsockname(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n)
{
	union cr_sockaddr a;
	socklen_t al = sizeof(a);
	struct cr_net_ep ep;
	struct cr_sock s;
	bool wildcard = false;
	int rc;

	rc = cr_sock_name_open(run, n, &s);
	if (rc)
		return v_err(-rc);
	if (s.rtnl) {
		al = cr_rtnl_name(s.rtnl, false, &a);
		cr_sock_close(&s);
		return cr_sock_name_reply(n, &a, al);
	}
	memset(&a, 0, sizeof(a));
	if (getsockname(s.dup, &a.sa, &al) < 0) {
		rc = errno;
		cr_sock_close(&s);
		return v_err(rc);
	}
	if (a.sa.sa_family == AF_UNIX) {
		cr_net_unix_fix(run->net, &a, &al);
	} else if ((a.sa.sa_family == AF_INET || a.sa.sa_family == AF_INET6) &&
		   (cr_net_local_find(run->net, s.ino, &ep, &wildcard) ||
		    cr_net_udp_find(run->net, s.ino, &ep, &wildcard)) &&
		   wildcard && !local_ep(s.dup, &ep, true) &&
		   cr_net_ep_of(&a, al, &ep)) {
		/* Bound as loopback for a wildcard (and not connected,
		 * which would give it a concrete address): the program is
		 * told what the kernel would have said, the wildcard and
		 * the real port. */
		memset(ep.addr, 0, sizeof(ep.addr));
		al = ep_to_sa(&ep, a.sa.sa_family, &a);
	}
	cr_sock_close(&s);
	return cr_sock_name_reply(n, &a, al);
}
