/* tracer/handlers/splice.c: splice and tee, performed by the supervisor, so
 * that a file's pages are copied into a pipe, never lent to it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "handlers.h"
#include "../budget/budget.h"
#include "../fs/fsops.h"
#include "../net/net.h"

/*
 * Why not the kernel's: a pipe buffer spliced from a file keeps a
 * reference to its page-cache page, and so to its whole folio, after the
 * file let it go (syscalls.def: one byte per pipe slot pins gigabytes no
 * budget sees). What the kernel would lend, corral copies:
 * - file to pipe: the supervisor reads the file and writes the bytes into
 *   the pipe, as a write of the program's would put them;
 * - pipe to file, pipe to pipe, tee: the supervisor's own splice or tee on
 *   the program's open files (their pages are the pipes' own: none is
 *   lent, the file's are written, not referenced);
 * - anything else (a socket, a terminal, a file of procfs or sysfs on
 *   either side): EINVAL, as before, on which programs fall back to read
 *   and write (docs/compatibility.md).
 * The supervisor never waits: its calls are SPLICE_F_NONBLOCK, and a call
 * the program made blocking waits for its pipe (tracer/net/defer.c, which
 * answers a signal as the kernel's interrupted wait does).
 * Checks and errnos in the order of the kernel's splice (fs/splice.c):
 * the count, the flags, the descriptors, the offsets given for a pipe
 * (ESPIPE), reading them (EFAULT), the access modes, then per kind.
 */

#define SPLICE_ALL 0x0fu		/* MOVE | NONBLOCK | MORE | GIFT */
#define MAX_RW ((size_t)0x7ffff000)	/* the kernel's MAX_RW_COUNT */
#define PIPE_DEFAULT ((size_t)65536)	/* a pipe's size when unknown */

enum sp_kind { SP_PIPES, SP_TEE, SP_TO_FILE, SP_FROM_FILE };

struct sp_call {
	enum sp_kind kind;
	int in, out;		/* owned: copies of the program's files */
	int rd;			/* owned: in reopened without O_DIRECT, or -1 */
	size_t len;
	unsigned flags;		/* the program's, SPLICE_F_NONBLOCK cleared */
	bool has_off;		/* the file side's offset given by pointer */
	int64_t off;		/* ...its value, updated by a try */
	uint64_t off_ptr;	/* where it goes back, or 0 */
	bool seekless;		/* the input is a memory device */
	int waits;		/* 0: on in, 1: on out */
};

static void sp_close(struct sp_call *c)
{
	if (c->in >= 0)
		close(c->in);
	if (c->out >= 0)
		cr_guard_close(c->out);	/* maybe a socket's last copy */
	if (c->rd >= 0)
		close(c->rd);
	c->in = c->out = c->rd = -1;
}

static void sp_free(void *arg)
{
	sp_close(arg);
	free(arg);
}

/* rw_verify_area's checks of an offset and a count. */
static bool bad_area(int64_t pos, size_t len)
{
	return (ssize_t)len < 0 || pos < 0 ||
	       (uint64_t)pos + len > (uint64_t)INT64_MAX;
}

/* Pipe to pipe, or tee: the kernel's own, never waiting. */
static ssize_t try_pipes(struct sp_call *c, int *side, uint32_t *ev)
{
	unsigned fl = c->flags | SPLICE_F_NONBLOCK;
	ssize_t r;
	int avail = 0;

	if (c->kind == SP_TEE)
		r = tee(c->in, c->out, c->len, fl);
	else
		r = splice(c->in, NULL, c->out, NULL, c->len, fl);
	if (r >= 0)
		return r;
	if (errno != EAGAIN)
		return -errno;
	/* Which end it waits for: the input while it is empty, else the
	 * output's room (ipipe_prep, then opipe_prep). */
	if (ioctl(c->in, FIONREAD, &avail) == 0 && avail == 0) {
		*side = 0;
		*ev = EPOLLIN;
	} else {
		*side = 1;
		*ev = EPOLLOUT;
	}
	return -EAGAIN;
}

/* Pipe to a file: the kernel's splice, into the program's open file, with
 * the program's file-size limit and the disk budget's charge. */
static ssize_t try_to_file(struct cr_run *run, pid_t tid, struct sp_call *c,
			   int *side, uint32_t *ev)
{
	size_t count = c->len > MAX_RW ? MAX_RW : c->len;
	loff_t off = c->off;
	struct rlimit own;
	struct stat a, b;
	bool cut = false, lifted, known;
	int avail = 0, err;
	uint64_t t0;
	ssize_t r;

	/* The limit judges a write, and there is one only with bytes to
	 * write: an empty pipe answers first (0 without writers, or a
	 * wait). */
	if (ioctl(c->in, FIONREAD, &avail) == 0 && avail > 0) {
		int rc = cr_copy_fsize_limit(tid, c->out,
					     c->has_off ? (off_t)c->off : -1,
					     &count, &cut);

		if (rc)
			return rc;
	}
	known = fstat(c->out, &a) == 0;
	lifted = cr_copy_lift_fsize(&own);
	t0 = cr_thread_cpu_ns();
	cr_slow_begin();	/* the program's write may hold the inode */
	r = splice(c->in, NULL, c->out, c->has_off ? &off : NULL, count,
		   c->flags | SPLICE_F_NONBLOCK);
	err = errno;
	cr_slow_end();
	if (lifted)
		setrlimit(RLIMIT_FSIZE, &own);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	if (known && fstat(c->out, &b) == 0 && b.st_blocks > a.st_blocks &&
	    cr_budget_on_alloc(run, tid,
			       (uint64_t)(b.st_blocks - a.st_blocks) * 512) &&
	    r <= 0)
		return -ENOSPC;
	if (r < 0 && err == EAGAIN) {
		*side = 0;
		*ev = EPOLLIN;
		return -EAGAIN;
	}
	if (r < 0)
		return -err;
	/* The kernel's write at the limit sends SIGXFSZ (sendfile.c). */
	if (cut && (size_t)r == count)
		cr_signal_raise(tid, SIGXFSZ);
	c->off = off;
	return r;
}

/* Bytes written into the pipe out without waiting: RWF_NOWAIT, or an open
 * of its own with O_NONBLOCK where the file no longer takes it (a splice
 * of the kernel's clears FMODE_NOWAIT on a pipe). */
static ssize_t pipe_put(int out, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };
	char p[64];
	ssize_t r;
	int fd;

	r = pwritev2(out, &iov, 1, -1, RWF_NOWAIT);
	if (r >= 0 || errno != EOPNOTSUPP)
		return r < 0 ? -errno : r;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", out);
	fd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENXIO ? -EPIPE : -errno;
	r = write(fd, buf, len);
	r = r < 0 ? -errno : r;
	close(fd);
	return r;
}

/* A file to a pipe: read by the supervisor, written into the pipe. */
static ssize_t try_from_file(struct cr_run *run, struct sp_call *c,
			     int *side, uint32_t *ev)
{
	struct pollfd p = { .fd = c->out, .events = POLLOUT };
	size_t count = c->len > MAX_RW ? MAX_RW : c->len;
	int64_t pos;
	int cap;
	void *buf;
	ssize_t r, w;
	uint64_t t0;

	/* wait_for_space: no reader (EPIPE), then a full pipe. */
	if (poll(&p, 1, 0) < 0)
		return -errno;
	if (p.revents & POLLERR)
		return -EPIPE;
	if (!(p.revents & POLLOUT)) {
		*side = 1;
		*ev = EPOLLOUT;
		return -EAGAIN;
	}
	/* Then vfs_splice_read: the offset and count, as for a read. */
	pos = c->has_off ? c->off : c->seekless ? 0 : lseek(c->in, 0, SEEK_CUR);
	if (pos < 0 && !c->has_off)
		return -errno;
	if (bad_area(pos, c->len))
		return -EINVAL;
	/* At most what the pipe holds: a pipe's write takes what fits. */
	cap = fcntl(c->out, F_GETPIPE_SZ);
	if (count > (cap > 0 ? (size_t)cap : PIPE_DEFAULT))
		count = cap > 0 ? (size_t)cap : PIPE_DEFAULT;
	buf = malloc(count);
	if (!buf)
		return -ENOMEM;
	t0 = cr_thread_cpu_ns();
	cr_slow_begin();	/* the program's write may hold the inode */
	do
		r = c->seekless ? read(c->in, buf, count) :
		    pread(c->rd >= 0 ? c->rd : c->in, buf, count, (off_t)pos);
	while (r < 0 && errno == EINTR);
	r = r < 0 ? -errno : r;
	cr_slow_end();
	w = r > 0 ? pipe_put(c->out, buf, (size_t)r) : r;
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	free(buf);
	if (w == -EAGAIN) {	/* filled meanwhile: nothing taken */
		*side = 1;
		*ev = EPOLLOUT;
		return -EAGAIN;
	}
	if (w <= 0)
		return w;
	/* What went into the pipe, and only that, moves the input (a memory
	 * device's reads move no offset). */
	if (c->seekless)
		return w;
	if (c->has_off)
		c->off = pos + w;
	else
		lseek(c->in, (off_t)(pos + w), SEEK_SET);
	return w;
}

static ssize_t sp_try(struct cr_run *run, pid_t tid, struct sp_call *c,
		      int *side, uint32_t *ev)
{
	switch (c->kind) {
	case SP_PIPES:
	case SP_TEE:
		return try_pipes(c, side, ev);
	case SP_TO_FILE:
		return try_to_file(run, tid, c, side, ev);
	case SP_FROM_FILE:
		return try_from_file(run, c, side, ev);
	}
	return -EINVAL;
}

/* The answer of a try that did not wait: the count (and the offset the
 * program gave, moved), or the error, EPIPE with its SIGPIPE. */
static struct cr_verdict sp_answer(pid_t tid, const struct sp_call *c,
				   ssize_t r)
{
	if (r == -EPIPE)
		cr_signal_raise(tid, SIGPIPE);
	if (r < 0)
		return CR_V_ERR((int)-r);
	if (c->off_ptr &&
	    cr_mem_write(tid, c->off_ptr, &c->off, sizeof(c->off)))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL(r);
}

static struct cr_verdict sp_wait(struct cr_run *run, uint64_t id, pid_t tid,
				 struct sp_call *c, int side, uint32_t ev);

/* The end it waited for is ready: try again, and wait again (maybe for
 * the other end) while it would still block. */
static struct cr_verdict sp_again(struct cr_run *run, uint64_t id, pid_t tid,
				  int dup, void *arg, bool *again)
{
	struct sp_call *c = arg, *moved;
	uint32_t ev = 0;
	int side = 0;
	ssize_t r;

	(void)dup;
	r = sp_try(run, tid, c, &side, &ev);
	if (r != -EAGAIN)
		return sp_answer(tid, c, r);
	if (side == c->waits) {
		*again = true;
		return CR_V_ERR(EAGAIN);	/* not answered */
	}
	/* The other end now: a wait of its own, c's files moved to it (this
	 * one's release frees an empty c). */
	moved = malloc(sizeof(*moved));
	if (!moved)
		return CR_V_ERR(ENOMEM);
	*moved = *c;
	c->in = c->out = c->rd = -1;
	return sp_wait(run, id, tid, moved, side, ev);
}

/* c (heap, owned) waits for its end side to report ev. */
static struct cr_verdict sp_wait(struct cr_run *run, uint64_t id, pid_t tid,
				 struct sp_call *c, int side, uint32_t ev)
{
	struct seccomp_notif n;
	int dup = cr_guard_dup(side ? c->out : c->in);

	if (dup < 0) {
		sp_free(c);
		return CR_V_ERR(EAGAIN);
	}
	memset(&n, 0, sizeof(n));
	n.id = id;
	n.pid = (uint32_t)tid;
	c->waits = side;
	return cr_net_wait_owned(run, &n, dup, ev, sp_again, c, sp_free);
}

/* Try once; a call the program made blocking waits when it would block. */
static struct cr_verdict sp_run(struct cr_run *run,
				const struct seccomp_notif *n,
				struct sp_call *c, bool nonblock)
{
	struct sp_call *held;
	uint32_t ev = 0;
	int side = 0;
	ssize_t r = sp_try(run, (pid_t)n->pid, c, &side, &ev);

	if (r != -EAGAIN || nonblock)
		return sp_answer((pid_t)n->pid, c, r);
	held = malloc(sizeof(*held));
	if (!held)
		return CR_V_ERR(ENOMEM);
	*held = *c;
	c->in = c->out = c->rd = -1;
	return sp_wait(run, n->id, (pid_t)n->pid, held, side, ev);
}

/* What the input of a copy into a pipe may be: a file of no special file
 * system, a block device, a memory device (no terminal: it would wait). */
static bool copy_source(int fd, const struct stat *st)
{
	return ((S_ISREG(st->st_mode) || S_ISBLK(st->st_mode)) &&
		!cr_copy_special_fs(fd)) || cr_copy_memory_device(st);
}

/* /dev/null: the kernel's splice into it takes everything. */
static bool null_device(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 &&
	       minor(st->st_rdev) == 3;
}

/* Is fd (a copy of the program's, not O_PATH) a pipe or FIFO's end? */
static bool is_pipe(int fd, const struct stat *st)
{
	int fl = fcntl(fd, F_GETFL);

	return S_ISFIFO(st->st_mode) && fl >= 0 && !(fl & O_PATH);
}

/* The kinds splice judges, the files' modes checked. 0 or -errno. */
static int splice_kind(struct sp_call *c, const struct stat *ist,
		       const struct stat *ost, bool ipipe, bool opipe,
		       bool *nonblock)
{
	int fin = fcntl(c->in, F_GETFL), fout = fcntl(c->out, F_GETFL);

	if (fin < 0 || fout < 0)
		return -EBADF;
	if (ipipe && opipe) {
		if (ist->st_dev == ost->st_dev && ist->st_ino == ost->st_ino)
			return -EINVAL;
		c->kind = SP_PIPES;
		*nonblock = (fin | fout) & O_NONBLOCK;
		return 0;
	}
	if (ipipe) {
		int64_t at = c->has_off ? c->off : lseek(c->out, 0, SEEK_CUR);

		/* Outputs corral writes: a plain file, /dev/null. Others
		 * (a socket, a terminal): EINVAL, as before. Then
		 * do_splice's own: no pwrite, appending, the area. */
		if ((!cr_copy_plain_file(c->out, ost) && !null_device(ost)) ||
		    (fout & O_APPEND) || bad_area(null_device(ost) ? 0 : at,
						 c->len))
			return -EINVAL;
		c->kind = SP_TO_FILE;
		*nonblock = fin & O_NONBLOCK;
		return 0;
	}
	if (opipe) {
		if (!copy_source(c->in, ist))
			return -EINVAL;
		c->kind = SP_FROM_FILE;
		c->seekless = cr_copy_memory_device(ist);
		*nonblock = fout & O_NONBLOCK;
		/* A file the program opened O_DIRECT: the kernel's splice
		 * reads it directly into the pipe's pages, as much as the
		 * pipe has room for, which must be aligned as the file's
		 * direct I/O asks, offset and length (else EINVAL; an
		 * earlier build read any; a differential probe). corral
		 * reads through an open of its own without O_DIRECT. */
		if (fin & O_DIRECT) {
			int64_t at = c->has_off ? c->off : lseek(c->in, 0, SEEK_CUR);
			size_t unit = cr_copy_direct_unit(c->in), len = c->len;
			int cap = fcntl(c->out, F_GETPIPE_SZ), queued = 0;
			char p[64];

			if (cap > 0 && ioctl(c->out, FIONREAD, &queued) == 0) {
				size_t room = cap > queued ?
					(size_t)(cap - queued) / 4096 * 4096 : 0;

				if (len > (room ? room : 4096))
					len = room ? room : 4096;
			}
			/* (At or past the end, nothing is read: 0.) */
			if (at < 0 || (at < ist->st_size &&
				       (at % (int64_t)unit || len % unit)))
				return -EINVAL;
			snprintf(p, sizeof(p), "/proc/self/fd/%d", c->in);
			c->rd = open(p, O_RDONLY | O_CLOEXEC);
			if (c->rd < 0)
				return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

CR_HANDLER(cr_h_splice)
{
	pid_t pid = (pid_t)n->pid;
	uint64_t pin = n->data.args[1], pout = n->data.args[3];
	size_t len = (size_t)n->data.args[4];
	unsigned flags = (unsigned)n->data.args[5];
	struct sp_call c = { .in = -1, .out = -1, .rd = -1 };
	int64_t oin = 0, oout = 0;
	struct stat ist, ost;
	struct cr_verdict v;
	bool ipipe, opipe, nonblock = false;
	int rc;

	(void)e;
	if (!len)
		return CR_V_VAL(0);
	if (flags & ~SPLICE_ALL)
		return CR_V_ERR(EINVAL);
	c.in = cr_fs_task_fd(run, pid, (int)n->data.args[0]);
	if (c.in < 0)
		return CR_V_ERR(EBADF);
	c.out = cr_fs_task_fd(run, pid, (int)n->data.args[2]);
	if (c.out < 0 || fstat(c.in, &ist) < 0 || fstat(c.out, &ost) < 0) {
		v = CR_V_ERR(EBADF);
		goto out;
	}
	ipipe = is_pipe(c.in, &ist);
	opipe = is_pipe(c.out, &ost);
	if ((ipipe && pin) || (opipe && pout)) {
		v = CR_V_ERR(ESPIPE);
		goto out;
	}
	if ((pout && cr_mem_read(pid, pout, &oout, sizeof(oout))) ||
	    (pin && cr_mem_read(pid, pin, &oin, sizeof(oin)))) {
		v = CR_V_ERR(EFAULT);
		goto out;
	}
	if ((pin || pout) && !cr_notif_valid(run, n->id)) {
		v = CR_V_ERR(EINTR);
		goto out;
	}
	if (!cr_copy_has_mode(c.in, true) || !cr_copy_has_mode(c.out, false)) {
		v = CR_V_ERR(EBADF);
		goto out;
	}
	c.len = len;
	c.flags = flags & ~(unsigned)SPLICE_F_NONBLOCK;
	c.has_off = pin || pout;
	c.off = pin ? oin : oout;
	c.off_ptr = pin ? pin : pout;
	rc = splice_kind(&c, &ist, &ost, ipipe, opipe, &nonblock);
	if (rc) {
		v = CR_V_ERR(-rc);
		goto out;
	}
	v = sp_run(run, n, &c, nonblock || (flags & SPLICE_F_NONBLOCK));
out:
	sp_close(&c);
	return v;
}

CR_HANDLER(cr_h_tee)
{
	pid_t pid = (pid_t)n->pid;
	size_t len = (size_t)n->data.args[2];
	unsigned flags = (unsigned)n->data.args[3];
	struct sp_call c = { .in = -1, .out = -1, .rd = -1 };
	struct stat ist, ost;
	struct cr_verdict v;
	int fin, fout;

	(void)e;
	if (flags & ~SPLICE_ALL)
		return CR_V_ERR(EINVAL);
	if (!len)
		return CR_V_VAL(0);
	c.in = cr_fs_task_fd(run, pid, (int)n->data.args[0]);
	if (c.in < 0)
		return CR_V_ERR(EBADF);
	c.out = cr_fs_task_fd(run, pid, (int)n->data.args[1]);
	if (c.out < 0 || fstat(c.in, &ist) < 0 || fstat(c.out, &ost) < 0 ||
	    !cr_copy_has_mode(c.in, true) || !cr_copy_has_mode(c.out, false)) {
		v = CR_V_ERR(EBADF);
		goto out;
	}
	fin = fcntl(c.in, F_GETFL);
	fout = fcntl(c.out, F_GETFL);
	if (!is_pipe(c.in, &ist) || !is_pipe(c.out, &ost) ||
	    (ist.st_dev == ost.st_dev && ist.st_ino == ost.st_ino)) {
		v = CR_V_ERR(EINVAL);
		goto out;
	}
	c.kind = SP_TEE;
	c.len = len;
	c.flags = flags & ~(unsigned)SPLICE_F_NONBLOCK;
	v = sp_run(run, n, &c, ((fin | fout) & O_NONBLOCK) ||
			       (flags & SPLICE_F_NONBLOCK));
out:
	sp_close(&c);
	return v;
}
