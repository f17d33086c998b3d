/* tracer/fs/fifo.c: opens of FIFOs, which block until the other end opens,
 * done on a worker thread and answered by the loop when they complete. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "fsops.h"
#include "../budget.h"

#define CR_MAX_FIFO_JOBS 64

/* A job is owned by the list in struct cr_fsfifo; the worker thread only
 * touches its own job's fields and the completion pipe. It never calls
 * ptrace, wait or the listener: the loop answers. */
struct fifo_job {
	uint64_t id;
	pid_t tid;		/* the caller */
	bool answered;		/* interrupted: the caller was answered */
	uint64_t held;		/* its process's signals pending at the
				 * last check (cr_tasks_would_take_signal) */
	int dirfd;		/* owned */
	char name[NAME_MAX + 1];
	int flags;
	int opath;		/* owned: the FIFO itself, to unblock it */
	int result;		/* fd (owned) or -errno */
	int done_fd;		/* borrowed: completion pipe */
	pthread_t th;
	struct fifo_job *next;
};

struct cr_fsfifo {
	int pipe[2];
	struct cr_watch *watch;
	int tfd;		/* owned: the signal check's timer */
	struct cr_watch *twatch;
	bool armed;
	struct fifo_job *jobs;
	size_t njobs;
};

/*
 * A signal for a caller waiting here would, natively, interrupt its open
 * (the handler runs, then EINTR or, with SA_RESTART, the open again; a
 * fatal one ends it). Waiting in a notification after corral received it,
 * the caller sleeps killable only, and a traced task's fatal signal is not
 * made a kill: `timeout 3 dd of=FIFO` waited for the run's wall limit.
 * So every CR_FIFO_CHECK_MS the callers are asked (/proc/TID/status) for
 * a signal they would take now; such a caller is answered ERESTARTSYS, as
 * the kernel's own interrupted open is (the kernel then runs the handler
 * and gives EINTR or restarts the call, or restarts it at once when no
 * handler runs), and its worker's open is interrupted by a signal of
 * corral's own (CR_FIFO_KICK). A signal pending for the whole process is
 * taken only from a process of one thread, where no other thread can take
 * it first.
 */
#define CR_FIFO_CHECK_MS 50
#define CR_FIFO_KICK (SIGRTMIN + 6)	/* +4, +5: tracer/guard.c */

static void kick_handler(int sig)
{
	(void)sig;	/* only to interrupt a worker's open */
}

static void *worker(void *arg)
{
	struct fifo_job *j = arg;
	sigset_t kick;

	sigemptyset(&kick);
	sigaddset(&kick, CR_FIFO_KICK);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);
	struct open_how how = {
		.flags = (uint64_t)(unsigned)(j->flags | O_CLOEXEC | O_NOCTTY),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, j->dirfd, j->name, &how, sizeof(how));

	j->result = fd < 0 ? -errno : fd;
	if (write(j->done_fd, &j, sizeof(j)) != sizeof(j)) {
		/* the loop drains the job list at cleanup anyway */
	}
	return NULL;
}

static void unlink_job(struct cr_fsfifo *f, struct fifo_job *j)
{
	for (struct fifo_job **pp = &f->jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			f->njobs--;
			return;
		}
}

static void job_free(struct fifo_job *j)
{
	pthread_join(j->th, NULL);
	if (j->result >= 0)
		close(j->result);
	close(j->dirfd);
	if (j->opath >= 0)
		close(j->opath);
	free(j);
}

static void on_done(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_fsfifo *f = arg;
	struct fifo_job *j;

	while (read(f->pipe[0], &j, sizeof(j)) == sizeof(j)) {
		struct cr_verdict v;

		int rc = 0;

		unlink_job(f, j);
		if (j->answered) {
			/* interrupted and answered: nothing to give */
			job_free(j);
			continue;
		}
		/* Followed as the pipe's own ends are (budget.c): a FIFO
		 * held by a blocked poll() keeps its buffers. */
		if (j->result >= 0 && !run->ending)
			rc = cr_budget_on_opened(run, j->result);
		if (run->ending)
			v = CR_V_ERR(EINTR);
		else if (rc < 0)
			v = CR_V_ERR(-rc);
		else if (j->result >= 0)
			v = cr_notif_send_fd_id(run, j->id, j->result,
						j->flags & O_CLOEXEC);
		else
			v = CR_V_ERR(-j->result);
		cr_notif_reply(run, j->id, v);
		job_free(j);
	}
}

static void arm(struct cr_fsfifo *f, bool on)
{
	struct itimerspec it = { { 0, 0 }, { 0, 0 } };

	if (f->armed == on)
		return;
	if (on)
		it.it_interval.tv_nsec = it.it_value.tv_nsec =
			CR_FIFO_CHECK_MS * 1000000L;
	if (timerfd_settime(f->tfd, 0, &it, NULL) == 0)
		f->armed = on;
}

static void on_tick(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_fsfifo *f = arg;
	uint64_t n;

	(void)events;
	if (read(f->tfd, &n, sizeof(n)) < 0) {
		/* EAGAIN: a tick already read */
	}
	for (struct fifo_job *j = f->jobs; j; j = j->next) {
		if (!j->answered && !run->ending && cr_tasks_would_take_signal(j->tid, &j->held)) {
			cr_notif_reply(run, j->id, CR_V_ERR(CR_ERESTARTSYS));
			cr_notif_restart_native(run, j->tid);
			j->answered = true;
		}
		/* Until its open returns (a kick before the open began
		 * is lost: sent again each tick). */
		if (j->answered)
			pthread_kill(j->th, CR_FIFO_KICK);
	}
	if (!f->jobs)
		arm(f, false);
}

static struct cr_fsfifo *fifo_state(struct cr_run *run)
{
	struct cr_fsfifo *f = run->fs->fifo;

	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	if (pipe2(f->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(f);
		return NULL;
	}
	f->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	f->watch = cr_loop_watch(run, f->pipe[0], EPOLLIN, on_done, f);
	f->twatch = f->tfd >= 0 ?
		    cr_loop_watch(run, f->tfd, EPOLLIN, on_tick, f) : NULL;
	if (!f->watch || !f->twatch) {
		if (f->watch)
			cr_loop_unwatch(run, f->watch);
		if (f->tfd >= 0)
			close(f->tfd);
		close(f->pipe[0]);
		close(f->pipe[1]);
		free(f);
		return NULL;
	}
	{
		struct sigaction sa = { .sa_handler = kick_handler };

		sigemptyset(&sa.sa_mask);	/* no SA_RESTART */
		sigaction(CR_FIFO_KICK, &sa, NULL);
	}
	run->fs->fifo = f;
	return f;
}

struct cr_verdict cr_fs_open_fifo(struct cr_run *run,
				  const struct seccomp_notif *n,
				  const struct cr_fsres *res, int flags)
{
	struct cr_fsfifo *f = fifo_state(run);
	struct fifo_job *j;

	if (!f || f->njobs >= CR_MAX_FIFO_JOBS)
		return CR_V_ERR(f ? EAGAIN : ENOMEM);
	j = calloc(1, sizeof(*j));
	if (!j)
		return CR_V_ERR(ENOMEM);
	j->id = n->id;
	j->tid = (pid_t)n->pid;
	j->flags = flags;
	j->result = -EINTR;
	j->done_fd = f->pipe[1];
	memcpy(j->name, res->name, sizeof(j->name));
	j->dirfd = fcntl(res->dirfd, F_DUPFD_CLOEXEC, 3);
	j->opath = cr_fs_opath(res, false);
	if (j->dirfd < 0 || j->opath < 0 ||
	    pthread_create(&j->th, NULL, worker, j)) {
		if (j->dirfd >= 0)
			close(j->dirfd);
		if (j->opath >= 0)
			close(j->opath);
		free(j);
		return CR_V_ERR(EAGAIN);
	}
	j->next = f->jobs;
	f->jobs = j;
	f->njobs++;
	arm(f, true);
	/* Answered later by on_done. */
	return (struct cr_verdict){ .kind = CR_V_SENT };
}

/* After the tree is dead: a worker still blocked in open() is released by
 * opening its FIFO for reading and writing ourselves (never blocks). */
void cr_fs_fifo_finish(struct cr_run *run)
{
	struct cr_fsfifo *f = run->fs ? run->fs->fifo : NULL;

	if (!f)
		return;
	while (f->jobs) {
		struct fifo_job *j = f->jobs;
		char p[64];
		int fd;

		cr_fs_fdpath(j->opath, p, sizeof(p));
		fd = open(p, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		f->jobs = j->next;
		job_free(j);
		if (fd >= 0)
			close(fd);
	}
	cr_loop_unwatch(run, f->watch);
	cr_loop_unwatch(run, f->twatch);
	close(f->tfd);
	close(f->pipe[0]);
	close(f->pipe[1]);
	free(f);
	run->fs->fifo = NULL;
}
