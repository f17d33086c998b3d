/* tracer/loop.c: the supervisor's event loop: the seccomp listener and one
 * epoll over signals, the wall timer and the pipes, until the run ends. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "tracer.h"
#include "budget/budget.h"

/* Watches are owned by the loop. Unwatching marks a watch dead and takes
 * its fd out of epoll at once; the memory is freed after the current batch
 * of events, so a later event of the same batch never touches freed memory. */
struct cr_watch {
	int fd;			/* borrowed: the caller closes it */
	cr_watch_fn fn;
	void *arg;		/* borrowed */
	bool dead;
	struct cr_watch *next;	/* all watches of the run */
};

struct cr_watch *cr_loop_watch(struct cr_run *run, int fd, uint32_t events,
			       cr_watch_fn fn, void *arg)
{
	struct cr_watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { .events = events };

	if (!w)
		return NULL;
	w->fd = fd;
	w->fn = fn;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(run->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(w);
		return NULL;
	}
	w->next = run->watches;
	run->watches = w;
	return w;
}

int cr_loop_modify(struct cr_run *run, struct cr_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	return epoll_ctl(run->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0 ? -errno : 0;
}

void cr_loop_unwatch(struct cr_run *run, struct cr_watch *w)
{
	if (!w || w->dead)
		return;
	epoll_ctl(run->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
}

static void reap_watches(struct cr_run *run, bool all)
{
	struct cr_watch **pp = &run->watches;

	while (*pp) {
		struct cr_watch *w = *pp;

		if (w->dead || all) {
			*pp = w->next;
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

void cr_loop_free(struct cr_run *run)
{
	reap_watches(run, true);
}

/* The kernel discards SIGTSTP sent to an orphaned process group (no member
 * has a parent in another group of the session: nobody could continue
 * it); so does corral, which would otherwise stop itself and the tree for
 * good (started under setsid, say). Read from /proc, only when SIGTSTP
 * comes. Unreadable: not orphaned, as the common case is. */
static bool pgrp_orphaned(void)
{
	pid_t me = getpgrp(), sid = getsid(0);
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool orphaned = true;

	if (!d)
		return false;
	while (orphaned && (de = readdir(d))) {
		pid_t pp, pg, ps, qp, qg, qs;
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 ||
		    cr_proc_ids((pid_t)pid, &pp, &pg, &ps) < 0 || pg != me)
			continue;
		if (pp > 0 && cr_proc_ids(pp, &qp, &qg, &qs) == 0 && qg != me &&
		    qs == sid)
			orphaned = false;
	}
	closedir(d);
	return orphaned;
}

/* Read in batches: a read that does not fill the buffer emptied the
 * signalfd, so the usual wake-up (one SIGCHLD) costs one read, not a
 * second one that answers EAGAIN. */
static void on_signal(struct cr_run *run)
{
	struct signalfd_siginfo si[8];
	ssize_t n;

	do {
		n = read(run->sigfd, si, sizeof(si));
		for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof(si[0]); i++) {
			switch (si[i].ssi_signo) {
			case SIGCHLD:
				break;	/* reaped below, whatever woke us */
			case SIGTSTP:
				if (pgrp_orphaned())
					break;
				/* Job control: the tree stops with corral
				 * (never on its own: it runs in a process
				 * group of its own, and unsupervised it
				 * would run unmeasured), and goes on when
				 * corral is continued. */
				cr_tasks_freeze(run);
				raise(SIGSTOP);
				break;
			default: {
				char sn[24];

				cr_run_end(run, CR_ST_CANCELLED, NULL, "cancelled by %s",
					   cr_signame((int)si[i].ssi_signo, sn,
						      sizeof(sn)) + 3);
				break;
			}
			}
		}
	} while (n == (ssize_t)sizeof(si));
	run->reap_more = cr_tasks_reap(run);
}

int cr_loop_cancel_pending(struct cr_run *run)
{
	struct signalfd_siginfo si;

	while (run->sigfd >= 0 &&
	       read(run->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGTSTP) {
			if (!pgrp_orphaned())
				raise(SIGSTOP);	/* no tree to freeze */
		}
		else if (si.ssi_signo != SIGCHLD)
			return (int)si.ssi_signo;
	}
	return 0;
}

static void on_exec_report(struct cr_run *run, uint32_t events, void *arg)
{
	struct { int stage, err, fd; } m;
	ssize_t n = read(run->execfd, &m, sizeof(m));

	/* EOF: exec succeeded (the pipe is close-on-exec). A message: the
	 * exec failed and the child is exiting 127. */
	if (n == (ssize_t)sizeof(m))
		run->exec_errno = m.err ? m.err : ENOEXEC;
	cr_loop_unwatch(run, run->exec_watch);
	close(run->execfd);
	run->execfd = -1;
}

/* After the tree is gone: a report the loop did not read before the run
 * ended (the child's exit seen first) is read now, so a command that
 * could not be executed is still said to be so. Every writer is gone: the
 * read cannot block, and poll says whether there is anything. */
void cr_loop_exec_settle(struct cr_run *run)
{
	struct pollfd p = { .fd = run->execfd, .events = POLLIN };

	if (run->execfd >= 0 && poll(&p, 1, 0) > 0)
		on_exec_report(run, 0, NULL);
}

static void on_stdin(struct cr_run *run, uint32_t events, void *arg)
{
	const struct cr_run_config *cfg = run->cfg;

	while (run->stdin_off < cfg->stdin_len) {
		ssize_t n = write(run->stdin_fd, cfg->stdin_text + run->stdin_off,
				  cfg->stdin_len - run->stdin_off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;	/* EPIPE: the program closed its stdin */
		run->stdin_off += (size_t)n;
	}
	cr_loop_unwatch(run, run->stdin_watch);
	close(run->stdin_fd);
	run->stdin_fd = -1;
}

static int arm_wall(struct cr_run *run)
{
	uint64_t ms = run->cfg->limits.v[CR_LIM_WALL];
	struct itimerspec its = {
		.it_value.tv_sec = (time_t)(ms / 1000),
		.it_value.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	run->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (run->timerfd < 0)
		return -errno;
	if (timerfd_settime(run->timerfd, 0, &its, NULL) < 0)
		return -errno;
	return 0;
}

static void on_timer(struct cr_run *run, uint32_t events, void *arg)
{
	cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "wall", "the wall-time limit fired");
}

static void on_stream(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_stream *s = arg;
	struct cr_watch *w = s == &run->out ? run->out_watch : run->err_watch;

	if (!cr_stream_pump(run, s))
		cr_loop_unwatch(run, w);
}

int cr_loop(struct cr_run *run)
{
	struct epoll_event evs[32];
	int rc;

	rc = arm_wall(run);
	if (!rc && (!cr_loop_watch(run, run->timerfd, EPOLLIN, on_timer, NULL) ||
		    !(run->out_watch = cr_loop_watch(run, run->out.fd, EPOLLIN, on_stream, &run->out)) ||
		    !(run->err_watch = cr_loop_watch(run, run->err.fd, EPOLLIN, on_stream, &run->err)) ||
		    !(run->exec_watch = cr_loop_watch(run, run->execfd, EPOLLIN, on_exec_report, NULL)) ||
		    (run->stdin_fd >= 0 &&
		     !(run->stdin_watch = cr_loop_watch(run, run->stdin_fd, EPOLLOUT, on_stdin, NULL)))))
		rc = errno ? -errno : -ENOMEM;
	if (rc) {
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot set up the event loop: %s", strerror(-rc));
		return rc;
	}
	/* SIGCHLD may have come before the signalfd was watched. */
	run->reap_more = cr_tasks_reap(run);

	/*
	 * The listener is waited on directly, beside the epoll fd, not inside
	 * it. With SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP the kernel wakes the
	 * listener's waiters on the notifying task's CPU, which is about to
	 * sleep until we answer; a poll() waiter receives that hint, while
	 * epoll's own wake-up of its waiter drops it, so the supervisor was
	 * woken on its previous CPU: a cross-CPU wake-up per notification,
	 * and on a guest an idle vCPU's wake-up costs tens of us. Measured
	 * here: one python3 import run 0.30 s with epoll, 0.22 s pinned to
	 * one CPU (docs/performance.md).
	 *
	 * The signalfd is waited on directly too: every ptrace stop comes as
	 * a SIGCHLD, four per process, and each then cost an epoll_wait more.
	 */
	struct pollfd pf[3] = {
		{ .fd = run->listener, .events = POLLIN },
		{ .fd = run->sigfd, .events = POLLIN },
		{ .fd = run->epfd, .events = POLLIN },
	};

	while (!run->ending) {
		/* Stops left from a full batch: look at every fd without
		 * sleeping, serve them, then collect the next batch. */
		int n = poll(pf, 3, run->reap_more ? 0 : -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
				   "poll: %s", strerror(errno));
			break;
		}
		if (pf[0].revents & POLLIN)
			cr_notify_handle(run);
		else if (pf[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			pf[0].fd = -1;	/* every task of the filter is gone */
		if ((pf[1].revents & POLLIN) && !run->ending)
			on_signal(run);
		else if (run->reap_more && !run->ending)
			run->reap_more = cr_tasks_reap(run);
		if (!(pf[2].revents & POLLIN) || run->ending)
			continue;
		n = epoll_wait(run->epfd, evs, (int)CR_ARRAY_SIZE(evs), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
				   "epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n && !run->ending; i++) {
			struct cr_watch *w = evs[i].data.ptr;

			if (!w->dead)
				w->fn(run, evs[i].events, w->arg);
			cr_budget_overdue(run);
		}
		reap_watches(run, false);
	}
	return 0;
}
