/* tracer/net/defer.c: calls the supervisor performs for the program that
 * would block (a send to a full socket, an accept with nothing pending, a
 * unix recvfrom with nothing to read): kept, finished when the socket is
 * ready, answered from the loop. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>

#include "../budget/budget.h"
#include "net.h"
#include "../handlers/handlers.h"

struct cr_net_deferred {
	struct cr_net_deferred *next;
	uint64_t id;		/* the notification still waiting */
	uint64_t bytes;		/* its buffers, charged while it waits */
	pid_t tid;
	uint64_t held;		/* cr_tasks_would_take_signal's memory */
	struct cr_net_msg m;
	struct cr_watch *w;
	int tfd;		/* owned: the retry timer of a named unix
				 * datagram send, or -1 (w watches it) */
	int tofd;		/* owned: the timer of SO_SNDTIMEO, or -1 */
	struct cr_watch *tow;	/* watches tofd */
};

/* The check of waiting callers' signals (below cr_net_wait). */
static void sig_arm(struct cr_run *run);
static int sig_watch(struct cr_run *run);

void cr_net_msg_free(struct cr_net_msg *m)
{
	/* Copies of the program's sockets, maybe the last ones: a
	 * lingering close is bounded (tracer/guard.c). */
	cr_guard_close(m->dup);
	for (size_t i = 0; i < m->nfds; i++)
		cr_guard_close(m->fds[i]);
	free(m->fds);
	free(m->data);
	free(m->control);
	free(m->piov);
	if (m->hold >= 0)
		close(m->hold);
	if (m->file_src) {
		close(m->src);
		if (m->src_rd >= 0)
			close(m->src_rd);
	}
	memset(m, 0, sizeof(*m));
	m->dup = -1;
	m->hold = -1;
}

/* MSG_NOSIGNAL always: a SIGPIPE would hit the supervisor. The program's
 * own SIGPIPE is raised in its thread instead, as the kernel would. */
static ssize_t send_now(struct cr_run *run, struct cr_net_msg *m)
{
	int fl = m->flags | MSG_DONTWAIT | MSG_NOSIGNAL;
	ssize_t r;

	do
		/* Descriptors in flight count against the user's allowance
		 * at the sender's limit: sent at the run's (rights.c). */
		r = m->unix_dom && m->nfds && m->msg.msg_controllen ?
		    cr_net_rights_send(run, m->dup, &m->msg, fl, m->pid) :
		    sendmsg(m->dup, &m->msg, fl);
	while (r < 0 && errno == EINTR);
	return r;
}

/* The next piece of a whole send, read from the program's iovecs past
 * what was sent, or from its file. 0 or -errno (-EFAULT: nothing left). */
static int refill(struct cr_net_msg *m)
{
	size_t skip = m->sent, off = 0, take = m->total - m->sent;
	int rc = 0;

	if (take > CR_NET_STREAM_PIECE)
		take = CR_NET_STREAM_PIECE;
	if (m->file_src) {
		ssize_t r;

		/* The file may have shrunk meanwhile: what was sent is
		 * the answer then, as the kernel's answer at its EOF. */
		cr_slow_begin();	/* the program's write may hold the inode */
		do
			r = pread(m->src_rd >= 0 ? m->src_rd : m->src, m->data,
				  take, (off_t)(m->src_pos + (int64_t)m->sent));
		while (r < 0 && errno == EINTR);
		cr_slow_end();
		m->iov.iov_base = m->data;
		m->iov.iov_len = r > 0 ? (size_t)r : 0;
		return r > 0 ? 0 : r < 0 ? -errno : -EFAULT;
	}
	for (size_t i = 0; !rc && i < m->npiov && off < take; i++) {
		size_t len = m->piov[i].iov_len, k;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		k = len - skip < take - off ? len - skip : take - off;
		rc = cr_mem_read(m->pid,
				 (uint64_t)(uintptr_t)m->piov[i].iov_base + skip,
				 (char *)m->data + off, k);
		off += k;
		skip = 0;
	}
	m->iov.iov_base = m->data;
	m->iov.iov_len = rc ? 0 : off;
	return rc ? rc : off ? 0 : -EFAULT;
}

/*
 * A whole send goes on after *r bytes went (the result of the last
 * send_now): 1 when the socket is full again (wait for room), 0 when it
 * is answered, with *r the count (everything, or what went before an
 * error or an unreadable piece: the kernel's stream send answers what it
 * copied once it copied anything) or -1 with errno when nothing went.
 * Rights and credentials ride with the first bytes only.
 */
static int push(struct cr_run *run, struct cr_net_msg *m, ssize_t *r)
{
	int err;

	while (*r > 0) {
		m->sent += (size_t)*r;
		m->msg.msg_control = NULL;
		m->msg.msg_controllen = 0;
		m->iov.iov_base = (char *)m->iov.iov_base + *r;
		m->iov.iov_len -= (size_t)*r;
		if (m->sent >= m->total ||
		    (!m->iov.iov_len && ((!m->piov && !m->file_src) ||
					 refill(m) < 0))) {
			*r = (ssize_t)m->sent;
			return 0;
		}
		*r = send_now(run, m);
	}
	err = errno;
	if (*r < 0 && err == EAGAIN)
		return 1;
	if (m->sent) {
		*r = (ssize_t)m->sent;
		return 0;
	}
	errno = err;
	return 0;
}

/* What a send that cannot wait answers: the count of a whole send's
 * bytes that went already, else r. */
static ssize_t so_far(const struct cr_net_msg *m, ssize_t r)
{
	return m->sent ? (ssize_t)m->sent : r;
}

/* A sendfile's offset moved by the r bytes that went, once: the
 * program's loff_t (EFAULT if it cannot be written, as the kernel's
 * put_user after the transfer), or the file's position. 0 or -errno. */
static int settle(struct cr_net_msg *m, pid_t tid, ssize_t r)
{
	int64_t pos = m->src_pos + r;
	int rc = 0;

	if (!m->file_src || r < 0)
		return 0;
	if (m->src_ptr)
		rc = cr_mem_write(tid, m->src_ptr, &pos, sizeof(pos)) ? -EFAULT : 0;
	else if (lseek(m->src, (off_t)pos, SEEK_SET) < 0)
		rc = -errno;
	close(m->src);
	if (m->src_rd >= 0)
		close(m->src_rd);
	m->file_src = false;
	return rc;
}

static struct cr_verdict done(struct cr_net_msg *m, pid_t tid, ssize_t r,
			      int err)
{
	if (r < 0 && err == EPIPE && m->sigpipe)
		cr_signal_raise(tid, SIGPIPE);
	if (r >= 0 && (err = -settle(m, tid, r)) != 0)
		r = -1;
	cr_net_msg_free(m);
	if (r < 0)
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = err };
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = r };
}

static void drop(struct cr_run *run, struct cr_net_deferred *d)
{
	struct cr_netstate *ns = run->net;

	for (struct cr_net_deferred **pp = &ns->deferred; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	ns->ndeferred--;
	ns->deferred_fds -= d->m.nfds;
	ns->deferred_bytes -= d->bytes;
	cr_loop_unwatch(run, d->w);
	if (d->tow)
		cr_loop_unwatch(run, d->tow);
	if (d->tfd >= 0)
		close(d->tfd);
	if (d->tofd >= 0)
		close(d->tofd);
	cr_net_msg_free(&d->m);
	free(d);
}

/* The answer of a waiting send after r >= 0 bytes went: the count, or for
 * sendmmsg a count of 1 with r in the first message's msg_len. */
static struct cr_verdict count_answer(struct cr_net_deferred *d, ssize_t r)
{
	unsigned len = (unsigned)r;
	int rc = settle(&d->m, d->tid, r);

	if (rc)
		return CR_V_ERR(-rc);
	if (!d->m.mmsg_len)
		return (struct cr_verdict){ .kind = CR_V_VALUE, .val = r };
	if (cr_mem_write(d->tid, d->m.mmsg_len, &len, sizeof(len)))
		return CR_V_ERR(EFAULT);
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = 1 };
}

/* The socket's own send timeout ran out first: what went, or EAGAIN when
 * nothing did, as the kernel's timed-out send answers. */
static void on_send_timeout(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_net_deferred *d = arg;

	(void)events;
	if (cr_notif_valid(run, d->id))
		cr_notif_reply(run, d->id, d->m.sent ?
			       count_answer(d, (ssize_t)d->m.sent) :
			       CR_V_ERR(EAGAIN));
	drop(run, d);
}

/* The socket's own timeout opt (SO_SNDTIMEO or SO_RCVTIMEO) as a timer
 * beside a wait: *tfd and *tw set when one is set, fn(arg) called when it
 * runs out. 0: no timeout, or it is kept; -errno when one is set but
 * cannot be kept (the caller closes *tfd). */
static int arm_sock_timeout(struct cr_run *run, int sock, int opt, int *tfd,
			    struct cr_watch **tw, cr_watch_fn fn, void *arg)
{
	struct timeval tv = { 0 };
	socklen_t tl = sizeof(tv);
	struct itimerspec its = { 0 };

	if (getsockopt(sock, SOL_SOCKET, opt, &tv, &tl) < 0 ||
	    (!tv.tv_sec && !tv.tv_usec))
		return 0;
	*tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (*tfd < 0)
		return -errno;
	its.it_value.tv_sec = tv.tv_sec;
	its.it_value.tv_nsec = tv.tv_usec * 1000L;
	if (timerfd_settime(*tfd, 0, &its, NULL) < 0)
		return -errno;
	*tw = cr_loop_watch(run, *tfd, EPOLLIN, fn, arg);
	return *tw ? 0 : -ENOMEM;
}

/* A waiting send on a socket with SO_SNDTIMEO gives up after it, counted
 * from the wait's start (the kernel's timeout covers the whole call, and
 * its first try did not wait). */
static int arm_send_timeout(struct cr_run *run, struct cr_net_deferred *d)
{
	return arm_sock_timeout(run, d->m.dup, SO_SNDTIMEO, &d->tofd, &d->tow,
				on_send_timeout, d);
}

/* A send that copies much (a big buffer, a file's pieces) is the
 * program's work done by corral: its CPU is the run's, as process_vm's
 * copies are (handlers/proc.c). A small one costs less than the clock
 * reads that would measure it. */
#define CR_NET_CHARGE_MIN (64 * 1024)

static uint64_t charge_begin(const struct cr_net_msg *m)
{
	return m->file_src || m->total >= CR_NET_CHARGE_MIN ?
	       cr_thread_cpu_ns() : 0;
}

static void charge_end(struct cr_run *run, uint64_t t0)
{
	if (t0)
		cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
}

static void writable(struct cr_run *run, struct cr_net_deferred *d);

static void on_writable(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_net_deferred *d = arg;
	uint64_t t0 = charge_begin(&d->m);

	(void)events;
	writable(run, d);	/* may free d */
	charge_end(run, t0);
}

static void writable(struct cr_run *run, struct cr_net_deferred *d)
{
	struct seccomp_notif_resp resp = { .id = d->id };
	struct cr_verdict v;
	ssize_t r;
	int err;

	if (d->tfd >= 0) {
		uint64_t ticks;

		if (read(d->tfd, &ticks, sizeof(ticks)) < 0) {
			/* EAGAIN: a tick already read */
		}
	}
	/* The task may have died or been killed meanwhile. */
	if (!cr_notif_valid(run, d->id)) {
		drop(run, d);
		return;
	}
	r = send_now(run, &d->m);
	if (d->m.whole && push(run, &d->m, &r))
		return;	/* more to send: wait for room again */
	if (r < 0 && errno == EAGAIN)
		return;	/* still full: wait for the next EPOLLOUT or tick */
	/* Out of epoll before done() closes the duplicate: epoll keys on
	 * the open file, which the program still holds, so a registration
	 * left behind a closed fd number would refuse the next one. */
	err = errno;
	cr_loop_unwatch(run, d->w);
	if (d->tfd >= 0)
		close(d->tfd);
	d->tfd = -1;
	/* sendmmsg: the first message's length, and a count of 1. */
	v = r >= 0 ? count_answer(d, r) : (struct cr_verdict){ 0 };
	/* done() frees the copies (and zeroes nfds for drop). */
	run->net->deferred_fds -= d->m.nfds;
	if (r >= 0 && v.kind != CR_V_VALUE) {
		r = -1;
		err = v.error;
	} else if (r >= 0) {
		r = (ssize_t)v.val;
	}
	v = done(&d->m, d->tid, r, err);
	if (v.kind == CR_V_VALUE)
		resp.val = v.val;
	else
		resp.error = -v.error;
	/* Answered here, on the loop thread, like every other answer; ENOENT
	 * means the task is gone, which needs nothing more. */
	ioctl(run->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	drop(run, d);
}

static size_t defer_fds_max(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 256;
	return (size_t)rl.rlim_cur / CR_NET_DEFER_FDS_DIV;
}

#define CR_NET_DGRAM_RETRY_MS 5

static struct cr_verdict send_or_defer(struct cr_run *run,
					const struct seccomp_notif *n,
					struct cr_net_msg *m, bool may_defer);

/* What a waiting send keeps in corral: its data (a piece at most, for a
 * whole stream send read as it goes; a datagram whole, up to the
 * socket's buffer: 4 MiB here), its control data and the struct. */
static uint64_t held_bytes(const struct cr_net_msg *m)
{
	uint64_t data = !m->stream || m->total < CR_NET_STREAM_PIECE ?
			m->total : CR_NET_STREAM_PIECE;

	return data + m->msg.msg_controllen + sizeof(struct cr_net_deferred);
}

uint64_t cr_net_deferred_bytes(const struct cr_run *run)
{
	return run->net ? run->net->deferred_bytes : 0;
}

struct cr_verdict cr_net_send(struct cr_run *run,
			      const struct seccomp_notif *n,
			      struct cr_net_msg *m, bool may_defer)
{
	uint64_t t0 = charge_begin(m);
	struct cr_verdict v = send_or_defer(run, n, m, may_defer);

	charge_end(run, t0);
	return v;
}

static struct cr_verdict send_or_defer(struct cr_run *run,
					const struct seccomp_notif *n,
					struct cr_net_msg *m, bool may_defer)
{
	struct cr_netstate *ns = run->net;
	struct cr_net_deferred *d;
	ssize_t r = send_now(run, m);
	int err = errno, fl;

	/* A blocking stream socket: the kernel's send waits until all is
	 * queued, and answers a short count only when a signal cuts it
	 * (then the count of what went: on_sig_tick). An earlier build
	 * answered the first piece that went at once: a 1 MiB sendmsg
	 * answered 219 264 bytes, and a program taking it as whole lost the
	 * rest (found by a differential probing session). */
	if (m->stream && m->total && may_defer && !(m->flags & MSG_DONTWAIT) &&
	    ((r >= 0 && (size_t)r < m->total) || (r < 0 && err == EAGAIN)) &&
	    (fl = fcntl(m->dup, F_GETFL)) >= 0 && !(fl & O_NONBLOCK)) {
		m->whole = true;
		if (!push(run, m, &r))
			return done(m, (pid_t)n->pid, r, errno);
		r = -1;
		err = EAGAIN;
	}
	if (r >= 0 || err != EAGAIN || !may_defer || (m->flags & MSG_DONTWAIT))
		return done(m, (pid_t)n->pid, r, err);
	fl = fcntl(m->dup, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK) || ns->ndeferred >= CR_NET_MAX_DEFERRED)
		return done(m, (pid_t)n->pid, so_far(m, r), err);
	/* A waiting send keeps a copy of every descriptor it passes, and
	 * 256 of them could hold 64,768: enough to leave the supervisor
	 * none for measuring the budgets. Past the share they may take, the
	 * kernel's own answer to too many descriptors in flight. */
	if (m->nfds && ns->deferred_fds + cr_guard_backlog() + m->nfds >
		       defer_fds_max())
		return done(m, (pid_t)n->pid, so_far(m, -1), ETOOMANYREFS);
	/* Its buffers stay in corral while it waits: the run's memory (a
	 * probing session held 64 MiB so, 250 sendfiles into a socket
	 * nobody read, under memory=16MiB). Past the budget the run ends. */
	if (cr_budget_on_held(run, held_bytes(m)) < 0)
		return done(m, (pid_t)n->pid, so_far(m, -1), ENOMEM);
	d = sig_watch(run) < 0 ? NULL : calloc(1, sizeof(*d));
	if (!d)
		return done(m, (pid_t)n->pid, so_far(m, r), err);
	d->bytes = held_bytes(m);
	d->id = n->id;
	d->tid = (pid_t)n->pid;
	d->tfd = -1;
	d->tofd = -1;
	d->m = *m;
	/* The message's pointers point into m's own fields: re-aim them at
	 * the copy's. */
	d->m.msg.msg_iov = &d->m.iov;
	if (d->m.msg.msg_name)
		d->m.msg.msg_name = &d->m.name;
	memset(m, 0, sizeof(*m));
	m->dup = -1;
	m->hold = -1;
	/* A datagram to a named unix socket waits for room in the
	 * receiver's queue, which no poll of the sender reports (its own
	 * buffer is writable all along: EPOLLOUT would spin): retried on a
	 * timer instead, every CR_NET_DGRAM_RETRY_MS. */
	if (d->m.msg.msg_name && d->m.name.sa.sa_family == AF_UNIX) {
		struct itimerspec it = {
			{ 0, CR_NET_DGRAM_RETRY_MS * 1000000L },
			{ 0, CR_NET_DGRAM_RETRY_MS * 1000000L } };

		d->tfd = timerfd_create(CLOCK_MONOTONIC,
					TFD_CLOEXEC | TFD_NONBLOCK);
		if (d->tfd >= 0 && timerfd_settime(d->tfd, 0, &it, NULL) == 0)
			d->w = cr_loop_watch(run, d->tfd, EPOLLIN, on_writable, d);
	} else {
		d->w = cr_loop_watch(run, d->m.dup, EPOLLOUT, on_writable, d);
	}
	if (!d->w || arm_send_timeout(run, d) < 0) {
		struct cr_verdict v = done(&d->m, d->tid, so_far(&d->m, -1),
					   EAGAIN);

		if (d->w)
			cr_loop_unwatch(run, d->w);
		if (d->tow)
			cr_loop_unwatch(run, d->tow);
		if (d->tfd >= 0)
			close(d->tfd);
		if (d->tofd >= 0)
			close(d->tofd);
		free(d);
		return v;
	}
	d->next = ns->deferred;
	ns->deferred = d;
	ns->ndeferred++;
	ns->deferred_fds += d->m.nfds;
	ns->deferred_bytes += d->bytes;
	sig_arm(run);
	return (struct cr_verdict){ .kind = CR_V_SENT };
}

struct cr_net_wait {
	struct cr_net_wait *next;
	uint64_t id;
	pid_t tid;
	uint64_t held;		/* cr_tasks_would_take_signal's memory */
	int dup;		/* owned */
	cr_net_wait_fn fn;
	void *arg;		/* owned */
	void (*free_arg)(void *);	/* or free() */
	struct cr_watch *w;
	int tfd;		/* owned timerfd of SO_RCVTIMEO, or -1 */
	struct cr_watch *tw;
	int sock;		/* the socket whose timeout a signal asks */
	int opt;		/* ...and which: SO_RCVTIMEO or SO_SNDTIMEO */
};

static void wait_drop(struct cr_run *run, struct cr_net_wait *w)
{
	struct cr_netstate *ns = run->net;

	for (struct cr_net_wait **pp = &ns->waits; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	ns->nwaits--;
	/* Out of epoll before the duplicate is closed (see on_writable). */
	if (w->w)
		cr_loop_unwatch(run, w->w);
	if (w->tw)
		cr_loop_unwatch(run, w->tw);
	if (w->tfd >= 0)
		close(w->tfd);
	cr_guard_close(w->dup);
	if (w->free_arg)
		w->free_arg(w->arg);
	else
		free(w->arg);
	free(w);
}

static void on_ready(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_net_wait *w = arg;
	struct cr_verdict v;
	bool again = false;

	/* The task may have died, or a signal may have ended its call. */
	if (!cr_notif_valid(run, w->id)) {
		wait_drop(run, w);
		return;
	}
	v = w->fn(run, w->id, w->tid, w->dup, w->arg, &again);
	if (again)
		return;
	cr_notif_reply(run, w->id, v);
	wait_drop(run, w);
}

/* The socket's own receive timeout ran out first: the kernel's answer. */
static void on_timeout(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_net_wait *w = arg;

	if (cr_notif_valid(run, w->id))
		cr_notif_reply(run, w->id, (struct cr_verdict){
					.kind = CR_V_ERRNO, .error = EAGAIN });
	wait_drop(run, w);
}

/* A blocking accept or receive the program gave SO_RCVTIMEO gives up
 * after it, EAGAIN, as the kernel's would (an earlier build waited until
 * the wall budget: a C server's accept loop with a timeout hung). 0: no
 * timeout; -errno when one is set but cannot be kept. */
static int arm_timeout(struct cr_run *run, struct cr_net_wait *w,
		       uint32_t events)
{
	if (!(events & EPOLLIN))
		return 0;
	return arm_sock_timeout(run, w->dup, SO_RCVTIMEO, &w->tfd, &w->tw,
				on_timeout, w);
}

/*
 * A waiting caller sleeps in its notification, killable only, and a
 * traced task's fatal signal is not made a kill: a server blocked in
 * accept() that its test suite terminated (SIGTERM) held the run to its
 * wall limit. So while calls wait here, every CR_NET_SIG_CHECK_MS the
 * callers are asked for a signal they would take now
 * (cr_tasks_would_take_signal); such a call is answered ERESTARTSYS, as
 * the kernel's own interrupted wait is (nothing was taken from or put in
 * the socket yet), and forgotten.
 */
#define CR_NET_SIG_CHECK_MS 50

/* The kernel never restarts a socket call that has a timeout
 * (sock_intr_errno): with SO_RCVTIMEO or SO_SNDTIMEO (opt) set on sock,
 * EINTR whatever the handler's SA_RESTART; else ERESTARTSYS. */
static void interrupted(struct cr_run *run, uint64_t id, pid_t tid,
			int sock, int opt)
{
	struct timeval tv = { 0, 0 };
	socklen_t tl = sizeof(tv);

	if (!cr_notif_valid(run, id))
		return;
	if (getsockopt(sock, SOL_SOCKET, opt, &tv, &tl) == 0 &&
	    (tv.tv_sec || tv.tv_usec)) {
		cr_notif_reply(run, id, CR_V_ERR(EINTR));
		return;
	}
	cr_notif_reply(run, id, (struct cr_verdict){ .kind = CR_V_ERRNO,
						     .error = CR_ERESTARTSYS });
	cr_notif_restart_native(run, tid);
}

static void sig_arm(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;
	struct itimerspec it = { { 0, 0 }, { 0, 0 } };
	size_t waiting = 0;
	long ms;

	for (const struct cr_net_wait *w = ns->waits; w; w = w->next)
		waiting++;
	for (const struct cr_net_deferred *d = ns->deferred; d; d = d->next)
		waiting++;
	ms = waiting ? cr_signal_check_period(CR_NET_SIG_CHECK_MS, waiting) : 0;
	if (ns->sigarmed == ms || (!ns->sigw && !ms))
		return;
	it.it_interval.tv_sec = it.it_value.tv_sec = ms / 1000;
	it.it_interval.tv_nsec = it.it_value.tv_nsec = ms % 1000 * 1000000L;
	if (timerfd_settime(ns->sigtfd, 0, &it, NULL) == 0)
		ns->sigarmed = ms;
}

static void on_sig_tick(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_netstate *ns = run->net;
	uint64_t n;

	(void)events;
	(void)arg;
	if (read(ns->sigtfd, &n, sizeof(n)) < 0) {
		/* EAGAIN: read already */
	}
	for (struct cr_net_wait *w = ns->waits, *next; w; w = next) {
		next = w->next;
		if (!run->ending && (cr_tasks_stop_kicked(run, w->tid) ||
				     cr_tasks_would_take_signal(w->tid, &w->held))) {
			interrupted(run, w->id, w->tid, w->sock, w->opt);
			wait_drop(run, w);
		}
	}
	for (struct cr_net_deferred *d = ns->deferred, *next; d; d = next) {
		next = d->next;
		if (!run->ending && (cr_tasks_stop_kicked(run, d->tid) ||
				     cr_tasks_would_take_signal(d->tid, &d->held))) {
			/* Some of a whole send went: its count, as the
			 * kernel's interrupted stream send answers. */
			if (d->m.sent) {
				if (cr_notif_valid(run, d->id))
					cr_notif_reply(run, d->id,
						       count_answer(d, (ssize_t)d->m.sent));
			} else {
				interrupted(run, d->id, d->tid, d->m.dup,
					    SO_SNDTIMEO);
			}
			drop(run, d);
		}
	}
	sig_arm(run);
}

/* A call is about to wait: the signal check runs while any does. 0, or
 * -errno (then the call is not kept). */
static int sig_watch(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;

	if (!ns->sigw) {
		int fd = timerfd_create(CLOCK_MONOTONIC,
					TFD_CLOEXEC | TFD_NONBLOCK);

		if (fd < 0)
			return -errno;
		ns->sigw = cr_loop_watch(run, fd, EPOLLIN, on_sig_tick, NULL);
		if (!ns->sigw) {
			close(fd);
			return -ENOMEM;
		}
		ns->sigtfd = fd;
		ns->sigarmed = 0;
	}
	return 0;
}

static struct cr_verdict wait_on(struct cr_run *run,
				 const struct seccomp_notif *n, int dup,
				 uint32_t events, cr_net_wait_fn fn, void *arg,
				 void (*free_arg)(void *), int sock, int opt)
{
	struct cr_netstate *ns = run->net;
	struct cr_net_wait *w;

	if (ns->nwaits >= CR_NET_MAX_WAITS || sig_watch(run) < 0 ||
	    !(w = calloc(1, sizeof(*w)))) {
		close(dup);
		if (free_arg)
			free_arg(arg);
		else
			free(arg);
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EAGAIN };
	}
	w->id = n->id;
	w->tid = (pid_t)n->pid;
	w->tfd = -1;
	w->dup = dup;
	w->sock = sock;
	w->opt = opt;
	w->fn = fn;
	w->arg = arg;
	w->free_arg = free_arg;
	w->next = ns->waits;
	ns->waits = w;
	ns->nwaits++;
	w->w = cr_loop_watch(run, dup, events, on_ready, w);
	if (!w->w || arm_timeout(run, w, events) < 0) {
		wait_drop(run, w);
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EAGAIN };
	}
	sig_arm(run);
	return (struct cr_verdict){ .kind = CR_V_SENT };
}

struct cr_verdict cr_net_wait(struct cr_run *run, const struct seccomp_notif *n,
			      int dup, uint32_t events, cr_net_wait_fn fn,
			      void *arg)
{
	return wait_on(run, n, dup, events, fn, arg, NULL, dup, SO_RCVTIMEO);
}

struct cr_verdict cr_net_wait_owned(struct cr_run *run,
				    const struct seccomp_notif *n, int dup,
				    uint32_t events, cr_net_wait_fn fn,
				    void *arg, void (*free_arg)(void *))
{
	return wait_on(run, n, dup, events, fn, arg, free_arg, dup,
		       SO_RCVTIMEO);
}

int cr_net_wait_rearm(int tfd, unsigned ms)
{
	struct itimerspec it = { { 0, 0 }, { ms / 1000, ms % 1000 * 1000000L } };
	uint64_t ticks;

	if (read(tfd, &ticks, sizeof(ticks)) < 0) {
		/* EAGAIN: nothing to clear */
	}
	return timerfd_settime(tfd, 0, &it, NULL) < 0 ? -errno : 0;
}

struct cr_verdict cr_net_wait_timer(struct cr_run *run,
				    const struct seccomp_notif *n, unsigned ms,
				    cr_net_wait_fn fn, void *arg,
				    void (*free_arg)(void *), int sock, int opt)
{
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (tfd < 0 || cr_net_wait_rearm(tfd, ms ? ms : 1) < 0) {
		if (tfd >= 0)
			close(tfd);
		free_arg(arg);
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EAGAIN };
	}
	return wait_on(run, n, tfd, EPOLLIN, fn, arg, free_arg, sock, opt);
}

void cr_net_defer_on_gone(struct cr_run *run, pid_t tid)
{
	struct cr_netstate *ns = run->net;

	if (!ns)
		return;
	for (struct cr_net_wait *w = ns->waits, *next; w; w = next) {
		next = w->next;
		if (w->tid == tid)
			wait_drop(run, w);
	}
	for (struct cr_net_deferred *d = ns->deferred, *next; d; d = next) {
		next = d->next;
		if (d->tid == tid)
			drop(run, d);
	}
	sig_arm(run);
}

void cr_net_defer_finish(struct cr_run *run)
{
	struct cr_netstate *ns = run->net;

	while (ns->deferred)
		drop(run, ns->deferred);
	while (ns->waits)
		wait_drop(run, ns->waits);
	if (ns->sigw) {
		cr_loop_unwatch(run, ns->sigw);
		close(ns->sigtfd);
		ns->sigw = NULL;
	}
}
