/* tracer/loop.c: the supervisor's event loop: one epoll over signals, the
 * wall timer, the seccomp listener and the output pipes, until the run ends. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#include "tracer.h"

enum tag { TAG_SIG = 1, TAG_TIMER, TAG_LISTENER, TAG_OUT, TAG_ERR, TAG_EXEC,
	   TAG_STDIN };

static int watch(struct cr_run *run, int fd, uint32_t events, enum tag tag)
{
	struct epoll_event ev = { .events = events, .data.u32 = tag };

	if (fd < 0)
		return 0;
	return epoll_ctl(run->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void unwatch(struct cr_run *run, int fd)
{
	if (fd >= 0)
		epoll_ctl(run->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static void on_signal(struct cr_run *run)
{
	struct signalfd_siginfo si;

	while (read(run->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			break;	/* reaped below, whatever woke us */
		case SIGINT:
		case SIGTERM:
		case SIGHUP:
			cr_run_end(run, CR_ST_CANCELLED, NULL,
				   "cancelled by %s", sigabbrev_np((int)si.ssi_signo));
			break;
		default:
			break;
		}
	}
	cr_tasks_reap(run);
}

static void on_exec_report(struct cr_run *run)
{
	struct { int stage, err, fd; } m;
	ssize_t n = read(run->execfd, &m, sizeof(m));

	/* EOF: exec succeeded (the pipe is close-on-exec). A message: the
	 * exec failed and the child is exiting 127. */
	if (n == (ssize_t)sizeof(m))
		run->exec_errno = m.err ? m.err : ENOEXEC;
	unwatch(run, run->execfd);
	close(run->execfd);
	run->execfd = -1;
}

static void on_stdin(struct cr_run *run)
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
	unwatch(run, run->stdin_fd);
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

int cr_loop(struct cr_run *run)
{
	struct epoll_event evs[16];
	int rc;

	rc = arm_wall(run);
	if (!rc)
		rc = watch(run, run->sigfd, EPOLLIN, TAG_SIG);
	if (!rc)
		rc = watch(run, run->timerfd, EPOLLIN, TAG_TIMER);
	if (!rc)
		rc = watch(run, run->listener, EPOLLIN, TAG_LISTENER);
	if (!rc)
		rc = watch(run, run->out.fd, EPOLLIN, TAG_OUT);
	if (!rc)
		rc = watch(run, run->err.fd, EPOLLIN, TAG_ERR);
	if (!rc)
		rc = watch(run, run->execfd, EPOLLIN, TAG_EXEC);
	if (!rc)
		rc = watch(run, run->stdin_fd, EPOLLOUT, TAG_STDIN);
	if (rc) {
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot set up the event loop: %s", strerror(-rc));
		return rc;
	}
	/* SIGCHLD may have come before the signalfd was watched. */
	cr_tasks_reap(run);

	while (!run->ending) {
		int n = epoll_wait(run->epfd, evs, (int)CR_ARRAY_SIZE(evs), -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
				   "epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n && !run->ending; i++) {
			switch (evs[i].data.u32) {
			case TAG_SIG:
				on_signal(run);
				break;
			case TAG_TIMER:
				cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "wall",
					   "the wall-time limit fired");
				break;
			case TAG_LISTENER:
				if (evs[i].events & EPOLLIN)
					cr_notify_handle(run);
				else if (evs[i].events & (EPOLLHUP | EPOLLERR))
					/* every task of the filter is gone */
					unwatch(run, run->listener);
				break;
			case TAG_OUT:
				if (!cr_stream_pump(run, &run->out))
					unwatch(run, -1);
				break;
			case TAG_ERR:
				if (!cr_stream_pump(run, &run->err))
					unwatch(run, -1);
				break;
			case TAG_EXEC:
				on_exec_report(run);
				break;
			case TAG_STDIN:
				on_stdin(run);
				break;
			}
		}
	}
	return 0;
}
