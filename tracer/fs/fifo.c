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
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>

#include "fsops.h"
#include "../budget/budget.h"

/* Opens waiting on a worker thread of their own at once; past that they
 * queue (no thread yet) and start as workers end, up to the last bound
 * and 1/16 of corral's descriptors (EAGAIN beyond: a blocking FIFO open
 * natively never gives it). */
#define CR_FIFO_WORKERS 256
/* Past CR_FIFO_WORKERS a FIFO no worker waits on still gets one, up to
 * this: two opens that are each other's partner must meet even while 256
 * others wait elsewhere (queued, neither would ever start). */
#define CR_FIFO_WORKERS_MAX 1024
#define CR_FIFO_QUEUED 4096
#define CR_FIFO_STACK (256 * 1024)

/* A job is owned by the list in struct cr_fsfifo; the worker thread only
 * touches its own job's fields and the completion pipe. It never calls
 * ptrace, wait or the listener: the loop answers. */
struct fifo_job {
	uint64_t id;
	pid_t tid;		/* the caller */
	bool answered;		/* interrupted or gone: nothing to give */
	bool started;		/* its worker runs (else: queued) */
	bool stopping;		/* its caller would take a signal: the
				 * worker's open is being interrupted, and
				 * its outcome is the caller's answer */
	uint64_t held;		/* its process's signals pending at the
				 * last check (cr_tasks_would_take_signal) */
	int flags;
	dev_t dev;		/* the FIFO's identity */
	ino_t ino;
	int opath;		/* owned: the FIFO itself, checked */
	int result;		/* fd (owned) or -errno */
	int done;		/* the worker's open returned (atomic) */
	int done_fd;		/* borrowed: completion pipe */
	pthread_t th;
	struct fifo_job *next;
};

struct cr_fsfifo {
	int pipe[2];
	struct cr_watch *watch;
	int tfd;		/* owned: the signal check's timer */
	struct cr_watch *twatch;
	long armed_ms;		/* the check's period now; 0: off */
	struct fifo_job *jobs;
	size_t njobs, nstarted;
};

/*
 * A signal for a caller waiting here would, natively, interrupt its open
 * (the handler runs, then EINTR or, with SA_RESTART, the open again; a
 * fatal one ends it). Waiting in a notification after corral received it,
 * the caller sleeps killable only, and a traced task's fatal signal is not
 * made a kill: `timeout 3 dd of=FIFO` waited for the run's wall limit.
 * So every CR_FIFO_CHECK_MS (longer with many waiting: check_period) the
 * callers are asked (/proc/TID/status) for
 * a signal they would take now; such a caller is answered ERESTARTSYS, as
 * the kernel's own interrupted open is (the kernel then runs the handler
 * and gives EINTR or restarts the call, or restarts it at once when no
 * handler runs), and its worker's open is interrupted by a signal of
 * corral's own (CR_FIFO_KICK). A caller whose notification is no longer
 * valid (killed while it waited) is let go the same way: its worker would
 * otherwise hold a slot, and an end of the FIFO no one will use.
 */
#define CR_FIFO_CHECK_MS 50
#define CR_FIFO_KICK (SIGRTMIN + 6)	/* +4, +5: tracer/guard.c */

static void kick_handler(int sig)
{
	(void)sig;	/* only to interrupt a worker's open */
}

/* The flags the worker opens with: the caller's, less what concerned the
 * name (already resolved: the FIFO is reopened through its own fd). */
static int reopen_flags(int flags)
{
	return (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_DIRECTORY |
			  O_TRUNC)) | O_CLOEXEC | O_NOCTTY;
}

/* The FIFO the check found, opened again through corral's own O_PATH fd
 * of it (a name another thread renames a new FIFO over meanwhile is not
 * looked up twice). */
static int reopen(const struct fifo_job *j, int flags)
{
	char p[64];
	int fd;

	cr_fs_fdpath(j->opath, p, sizeof(p));
	fd = open(p, reopen_flags(flags));
	return fd < 0 ? -errno : fd;
}

static void *worker(void *arg)
{
	struct fifo_job *j = arg;
	sigset_t kick;

	sigemptyset(&kick);
	sigaddset(&kick, CR_FIFO_KICK);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);
	j->result = reopen(j, j->flags);
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	if (write(j->done_fd, &j, sizeof(j)) != sizeof(j)) {
		/* the loop drains the job list at cleanup anyway */
	}
	return NULL;
}

/* j's worker's open interrupted now (~20 ms at most): its end of the FIFO
 * is gone before anyone else can look. */
static void stop_open(struct fifo_job *j)
{
	for (int i = 0; i < 20 &&
	     !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE); i++) {
		struct timespec ms = { 0, 1000000L };

		pthread_kill(j->th, CR_FIFO_KICK);
		nanosleep(&ms, NULL);
	}
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
	if (j->started)
		pthread_join(j->th, NULL);
	if (j->result >= 0)
		close(j->result);
	if (j->opath >= 0)
		close(j->opath);
	free(j);
}

/* A thread for j, with a small stack (it makes one call). 0 or -errno. */
static int start(struct cr_fsfifo *f, struct fifo_job *j)
{
	pthread_attr_t a;
	int rc;

	if (pthread_attr_init(&a))
		return -ENOMEM;
	pthread_attr_setstacksize(&a, CR_FIFO_STACK);
	rc = pthread_create(&j->th, &a, worker, j);
	pthread_attr_destroy(&a);
	if (rc)
		return -rc;
	j->started = true;
	f->nstarted++;
	return 0;
}

/* Whether a worker already waits on j's FIFO. */
static bool waited_on(const struct cr_fsfifo *f, const struct fifo_job *j)
{
	for (const struct fifo_job *o = f->jobs; o; o = o->next)
		if (o->started && !o->answered && o->dev == j->dev &&
		    o->ino == j->ino)
			return true;
	return false;
}

/*
 * Whether an end of the FIFO dev:ino that no caller will get may still be
 * open or opening: the worker of an open answered as interrupted (or whose
 * caller died) that has not been freed. A new open would meet that end as
 * its partner: a writer found the stale reader there and opened, with
 * nobody at the other end (found by a differential probing session, 3
 * times in ~2 600 interrupted opens, the machine loaded: a worker not
 * yet in its open when the interruption's kicks came). Such an end
 * already opened is closed now; one still opening is kicked again (and
 * at every check after), and true is returned: the new open waits,
 * queued, until on_done frees that job. The loop never waits here.
 */
static bool stale_end(struct cr_fsfifo *f, dev_t dev, ino_t ino)
{
	bool left = false;

	for (struct fifo_job *o = f->jobs; o; o = o->next) {
		if (!o->started || !o->answered || o->dev != dev ||
		    o->ino != ino)
			continue;
		if (!__atomic_load_n(&o->done, __ATOMIC_ACQUIRE)) {
			pthread_kill(o->th, CR_FIFO_KICK);
			left = true;
			continue;
		}
		if (o->result >= 0) {
			close(o->result);
			o->result = -EBADF;
		}
	}
	return left;
}

/* Queued jobs, oldest first, take the workers that ended; one whose FIFO
 * still has a stale end waits for it to go (looked for only while some
 * answered job's worker is left: rare, and gone within a check). */
static void start_queued(struct cr_run *run, struct cr_fsfifo *f)
{
	bool stale_any = false;

	for (struct fifo_job *j = f->jobs; j && !stale_any; j = j->next)
		stale_any = j->started && j->answered;
	while (f->nstarted < CR_FIFO_WORKERS) {
		struct fifo_job *last = NULL;

		for (struct fifo_job *j = f->jobs; j; j = j->next)
			if (!j->started && !j->answered &&
			    !(stale_any && stale_end(f, j->dev, j->ino)))
				last = j;	/* the list is newest first */
		if (!last)
			return;
		if (start(f, last) < 0) {
			unlink_job(f, last);
			cr_notif_reply(run, last->id, CR_V_ERR(EAGAIN));
			job_free(last);
		}
	}
}

static void arm(struct cr_fsfifo *f)
{
	long ms = f->njobs ? cr_signal_check_period(CR_FIFO_CHECK_MS,
						    f->njobs) : 0;
	struct itimerspec it = { { 0, 0 }, { 0, 0 } };

	if (f->armed_ms == ms)
		return;
	it.it_interval.tv_sec = it.it_value.tv_sec = ms / 1000;
	it.it_interval.tv_nsec = it.it_value.tv_nsec = ms % 1000 * 1000000L;
	if (timerfd_settime(f->tfd, 0, &it, NULL) == 0)
		f->armed_ms = ms;
}

/* fd (owned: closed here) given as the caller's open, followed as the
 * pipe's own ends are (budget/pipes.c): a FIFO held by a blocked poll() keeps
 * its buffers. */
static struct cr_verdict fifo_give(struct cr_run *run, uint64_t id, int fd,
				   int flags)
{
	int rc = cr_budget_on_opened(run, fd);

	if (rc < 0) {
		close(fd);
		return CR_V_ERR(-rc);
	}
	/* corral's copy is closed before the answer: a reader polled right
	 * after the program closed its only write end saw that copy as a
	 * writer still (EAGAIN where the kernel gives end of file, found by
	 * a compatibility probe). */
	return cr_notif_give_fd_last(run, id, fd, flags & O_CLOEXEC);
}

static void on_done(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_fsfifo *f = arg;
	struct fifo_job *j;

	while (read(f->pipe[0], &j, sizeof(j)) == sizeof(j)) {
		struct cr_verdict v;

		unlink_job(f, j);
		f->nstarted--;
		if (j->answered) {
			/* interrupted and answered: nothing to give */
			job_free(j);
			continue;
		}
		if (run->ending) {
			v = CR_V_ERR(EINTR);
		} else if (j->result >= 0) {
			v = fifo_give(run, j->id, j->result, j->flags);
			j->result = -EBADF;
		} else if (j->stopping && j->result == -EINTR) {
			/* interrupted for its caller's signal */
			v = CR_V_ERR(CR_ERESTARTSYS);
			cr_notif_restart_native(run, j->tid);
		} else {
			v = CR_V_ERR(-j->result);
		}
		cr_notif_reply(run, j->id, v);
		job_free(j);
	}
	if (!run->ending)
		start_queued(run, f);
	arm(f);
}


static void on_tick(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_fsfifo *f = arg;
	uint64_t n;

	(void)events;
	if (read(f->tfd, &n, sizeof(n)) < 0) {
		/* EAGAIN: a tick already read */
	}
	for (struct fifo_job *j = f->jobs, *next; j; j = next) {
		next = j->next;
		if (!j->answered && !run->ending &&
		    !cr_notif_valid(run, j->id)) {
			j->answered = true;	/* its caller is gone */
		} else if (j->stopping) {
			/* Its worker's open has not returned yet: kicked
			 * again, and on_done answers. */
			pthread_kill(j->th, CR_FIFO_KICK);
			continue;
		} else if (!j->answered && !run->ending &&
			   (cr_tasks_stop_kicked(run, j->tid) ||
			    cr_tasks_would_take_signal(j->tid, &j->held))) {
			/* The worker's end goes first: the caller's
			 * handler may look for a reader at once. An open
			 * that met its partner first is the caller's, as
			 * the kernel returns it with the signal pending:
			 * thrown away, its partner would read an end of
			 * file or lose what it wrote (on_done gives it).
			 * So the caller is answered only once the worker's
			 * open has returned: one still running past the
			 * kicks (not yet in its open, or not scheduled on
			 * a loaded machine) could meet a partner already
			 * waiting after the answer, and that partner read
			 * an end of file (a rendezvous interrupted every 2
			 * ms hung in ~1 of 10 runs, the machine loaded). */
			if (j->started) {
				stop_open(j);
				if (!__atomic_load_n(&j->done,
						     __ATOMIC_ACQUIRE)) {
					j->stopping = true;
					continue;
				}
				if (j->result >= 0)
					continue;
			}
			j->answered = true;
			cr_notif_reply(run, j->id, CR_V_ERR(CR_ERESTARTSYS));
			cr_notif_restart_native(run, j->tid);
		}
		if (j->answered && !j->started) {
			unlink_job(f, j);	/* queued: no worker to stop */
			job_free(j);
			continue;
		}
		/* Until its open returns (a kick before the open began
		 * is lost: sent again each tick). */
		if (j->answered)
			pthread_kill(j->th, CR_FIFO_KICK);
	}
	arm(f);
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
	struct stat st;
	int fd;

	/* Each holds an O_PATH fd of corral's: a share of them only. */
	if (!f || f->njobs >= cr_nofile_share(CR_FIFO_QUEUED))
		return CR_V_ERR(f ? EAGAIN : ENOMEM);
	j = calloc(1, sizeof(*j));
	if (!j)
		return CR_V_ERR(ENOMEM);
	j->id = n->id;
	j->tid = (pid_t)n->pid;
	j->flags = flags;
	j->result = -EINTR;
	j->done_fd = f->pipe[1];
	j->opath = cr_fs_opath(res, false);
	if (j->opath < 0 || fstat(j->opath, &st) < 0 || !S_ISFIFO(st.st_mode) ||
	    st.st_dev != res->st.st_dev || st.st_ino != res->st.st_ino) {
		/* Not the FIFO the check saw (renamed over, or the fd a
		 * /proc/PID/fd name stood for replaced, meanwhile: another
		 * file the program holds, which the check did not judge for
		 * this access): the call is made again, as the kernel
		 * restarts one interrupted for nothing, and checked afresh. */
		job_free(j);
		return CR_V_ERR(CR_ERESTARTSYS);
	}
	j->dev = st.st_dev;
	j->ino = st.st_ino;
	/* A writer opens at once when a reader is there (a blocked one
	 * included), as natively; only a wait takes a worker. Not while an
	 * end no caller will get may still be there: queued until it goes. */
	if (stale_end(f, j->dev, j->ino)) {
		j->next = f->jobs;
		f->jobs = j;
		f->njobs++;
		arm(f);
		return (struct cr_verdict){ .kind = CR_V_SENT };
	}
	if ((flags & O_ACCMODE) == O_WRONLY) {
		fd = reopen(j, flags | O_NONBLOCK);
		if (fd >= 0 && !(flags & O_NONBLOCK) &&
		    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
			close(fd);
			fd = -EIO;
		}
		if (fd != -ENXIO) {
			job_free(j);
			return fd < 0 ? CR_V_ERR(-fd) :
					fifo_give(run, n->id, fd, flags);
		}
	}
	if ((f->nstarted < CR_FIFO_WORKERS ||
	     (f->nstarted < CR_FIFO_WORKERS_MAX && !waited_on(f, j))) &&
	    start(f, j) < 0) {
		job_free(j);
		return CR_V_ERR(EAGAIN);
	}
	j->next = f->jobs;
	f->jobs = j;
	f->njobs++;
	arm(f);
	/* Answered later by on_done (queued: when a worker is free). */
	return (struct cr_verdict){ .kind = CR_V_SENT };
}

/* A worker's open interrupted until it returns (a kick before the open
 * began is lost: sent again). Opening the FIFO ourselves would not do:
 * the program may have taken our permission to it (chmod 0). false if
 * it did not end within ~2 s (then it is left, and its job with it). */
static bool release(struct fifo_job *j)
{
	for (int i = 0; i < 400; i++) {
		struct timespec ts;

		pthread_kill(j->th, CR_FIFO_KICK);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 5000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_timedjoin_np(j->th, NULL, &ts) == 0) {
			j->started = false;
			return true;
		}
	}
	return false;
}


/* A caller that died waiting: its worker's open is ended now, not at the
 * next check, so no end of the FIFO outlives it (natively a writer that
 * comes after sees no reader: ENXIO, or a wait). Freed by on_done. */
void cr_fs_fifo_on_gone(struct cr_run *run, pid_t tid)
{
	struct cr_fsfifo *f = run->fs ? run->fs->fifo : NULL;

	for (struct fifo_job *j = f ? f->jobs : NULL, *next; j; j = next) {
		next = j->next;
		if (j->tid != tid || j->answered)
			continue;
		j->answered = true;
		if (!j->started) {
			unlink_job(f, j);
			job_free(j);
			continue;
		}
		stop_open(j);
	}
}

/* After the tree is dead: every worker still in open() is released. */
void cr_fs_fifo_finish(struct cr_run *run)
{
	struct cr_fsfifo *f = run->fs ? run->fs->fifo : NULL;
	bool left = false;

	if (!f)
		return;
	while (f->jobs) {
		struct fifo_job *j = f->jobs;

		f->jobs = j->next;
		if (j->started && !release(j)) {
			left = true;	/* it may still write its job */
			continue;
		}
		job_free(j);
	}
	if (left) {
		cr_loop_unwatch(run, f->watch);
		cr_loop_unwatch(run, f->twatch);
		run->fs->fifo = NULL;
		return;
	}
	cr_loop_unwatch(run, f->watch);
	cr_loop_unwatch(run, f->twatch);
	close(f->tfd);
	close(f->pipe[0]);
	close(f->pipe[1]);
	free(f);
	run->fs->fifo = NULL;
}
