/* tracer/fs/fifo.c: opens of FIFOs, which block until the other end opens,
 * done on a worker thread and answered by the loop when they complete. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
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
	struct fifo_job *jobs;
	size_t njobs;
};

static void *worker(void *arg)
{
	struct fifo_job *j = arg;
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

		unlink_job(f, j);
		int rc = 0;

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
	f->watch = cr_loop_watch(run, f->pipe[0], EPOLLIN, on_done, f);
	if (!f->watch) {
		close(f->pipe[0]);
		close(f->pipe[1]);
		free(f);
		return NULL;
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
	close(f->pipe[0]);
	close(f->pipe[1]);
	free(f);
	run->fs->fifo = NULL;
}
