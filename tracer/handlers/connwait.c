/* tracer/handlers/connwait.c: a connect waiting for room, the record kept
 * while it waits and its timer (the TCP and unix connects share them). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connwait.h"

#define CONNWAIT_MAX_MS 32

static void connwait_free(void *arg)
{
	struct cr_connect_wait *cw = arg;

	cr_sock_close(&cw->s);
	free(cw);
}

bool cr_connect_wait_start(struct cr_run *run, const struct seccomp_notif *n,
			   const struct cr_syscall_entry *e,
			   const struct cr_sock *s, const union cr_sockaddr *a,
			   socklen_t alen, bool by_rule, uint64_t until_ns,
			   cr_net_wait_fn fn, struct cr_verdict *v)
{
	struct cr_connect_wait *cw;
	struct cr_verdict w;

	if ((size_t)alen > sizeof(cw->a) || !(cw = calloc(1, sizeof(*cw))))
		return false;
	cw->n = *n;
	cw->e = e;
	cw->s = *s;
	cw->s.dup = cr_guard_dup(s->dup);
	if (cw->s.dup < 0) {
		free(cw);
		return false;
	}
	memcpy(&cw->a, a, (size_t)alen);
	cw->alen = alen;
	cw->by_rule = by_rule;
	cw->ms = 1;
	cw->until_ns = until_ns;
	/* On failure the record is freed by the wait (connwait_free). */
	w = cr_net_wait_timer(run, n, cw->ms, fn, cw, connwait_free,
			      cw->s.dup, SO_SNDTIMEO);
	if (w.kind != CR_V_SENT)
		return false;
	*v = w;
	return true;
}

bool cr_connect_wait_again(struct cr_connect_wait *cw, int tfd)
{
	cw->ms = cw->ms * 2 > CONNWAIT_MAX_MS ? CONNWAIT_MAX_MS : cw->ms * 2;
	if (cw->until_ns) {
		uint64_t now = cr_now_ns(), left;

		if (now >= cw->until_ns)
			return false;
		left = (cw->until_ns - now) / 1000000u;
		if (left < cw->ms)
			cw->ms = left ? (unsigned)left : 1;
	}
	return cr_net_wait_rearm(tfd, cw->ms) == 0;
}
