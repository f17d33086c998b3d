/* tracer/handlers/connwait.h: a connect waiting for room (a full listener's
 * backlog, TCP or unix), its caller held and the loop free. */
#ifndef CR_HANDLERS_CONNWAIT_H
#define CR_HANDLERS_CONNWAIT_H

#include "handlers.h"
#include "../net/net.h"

/* What a try needs again: the call, the program's address as read once,
 * and a duplicate of its socket, kept while it waits. */
struct cr_connect_wait {
	struct seccomp_notif n;		/* a copy, for the records */
	const struct cr_syscall_entry *e;
	struct cr_sock s;		/* s.dup owned */
	union cr_sockaddr a;
	socklen_t alen;
	bool by_rule;			/* the TCP wait's: an allow rule named it */
	unsigned ms;			/* the next wait: 1, 2, 4 ... 32 ms */
	uint64_t until_ns;		/* the caller's deadline, 0 for none */
};

/* Start waiting: fn (its arg the record) tries again at each expiry; a
 * signal the caller would take asks sock's SO_SNDTIMEO. True with *v
 * CR_V_SENT, false when the wait cannot be kept (*v untouched, nothing
 * held). */
bool cr_connect_wait_start(struct cr_run *run, const struct seccomp_notif *n,
			   const struct cr_syscall_entry *e,
			   const struct cr_sock *s, const union cr_sockaddr *a,
			   socklen_t alen, bool by_rule, uint64_t until_ns,
			   cr_net_wait_fn fn, struct cr_verdict *v);
/* After a try that found no room: the next wait (doubled up to 32 ms, not
 * past the deadline) armed on tfd. False when the deadline has passed or
 * the timer cannot be set: the try's answer is then the last. */
bool cr_connect_wait_again(struct cr_connect_wait *cw, int tfd);

#endif
