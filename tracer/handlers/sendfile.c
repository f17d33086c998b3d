/* tracer/handlers/sendfile.c: sendfile, performed by the supervisor so that
 * no page the program could let go of stays held by a socket past the call. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "handlers.h"
#include "../budget/budget.h"
#include "../fs/fsops.h"
#include "../net/net.h"

/*
 * The kernel's sendfile splices: a socket's skb keeps a reference to each
 * page-cache page it was given, and so to its whole folio, after the file
 * is truncated; one byte sent per page pins a page per byte charged to the
 * socket (docs/limits.md). So the calls whose pages would outlive them are
 * not the kernel's:
 * - into a stream socket, the bytes are read by the supervisor into its
 *   own memory and sent as a send(2) of the program's would be: whole on a
 *   blocking socket (tracer/net/defer.c), what fits on a non-blocking one;
 * - into a regular file, the supervisor's own sendfile (its splice pipe is
 *   empty again when the call returns), at most FILE_STEP a call;
 * - into a pipe or anything else: EINVAL, as before, on which programs
 *   fall back to read and write.
 * Checks and errnos in do_sendfile's order: the offset read, then the
 * input, then the output.
 */

#define MAX_RW ((size_t)0x7ffff000)	/* the kernel's MAX_RW_COUNT */
#define FILE_STEP ((size_t)64 << 20)	/* the supervisor's loop waits on it */
#define CHARGE_STEP ((size_t)8 << 20)	/* a file's growth charged per step */
#define DIRECT_UNIT 512			/* O_DIRECT's unit where statx has none */
#define SPLICE_PIPE ((size_t)65536)	/* the kernel's splice pipe: 16 pages */

/* Filesystems whose files answer by who reads or writes them (a sysfs
 * attribute asking CAP_SYS_ADMIN of the reader, a cgroup file moving the
 * writer's pids): never read or written by the supervisor for the program
 * (EINVAL, as for a pipe). */
bool cr_copy_special_fs(int fd)
{
	static const long magic[] = {
		PROC_SUPER_MAGIC, SYSFS_MAGIC, CGROUP_SUPER_MAGIC,
		CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC,
		SECURITYFS_MAGIC, BPF_FS_MAGIC, EFIVARFS_MAGIC, PSTOREFS_MAGIC,
		0x62656570 /* configfs */, 0x65735546 /* fuse */,
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return true;
	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if ((long)sf.f_type == magic[i])
			return true;
	return false;
}

/* /dev/zero, /dev/random, /dev/urandom: read without ever waiting. */
bool cr_copy_memory_device(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 &&
	       (minor(st->st_rdev) == 5 || minor(st->st_rdev) == 8 ||
		minor(st->st_rdev) == 9);
}

size_t cr_copy_direct_unit(int fd)
{
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
	    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align)
		return sx.stx_dio_offset_align;
	return DIRECT_UNIT;
}

/* The open file's access mode: readable (want_read) or writable; O_PATH
 * is neither (EBADF, as fdget's FMODE checks answer). */
bool cr_copy_has_mode(int fd, bool want_read)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || (fl & O_PATH))
		return false;
	fl &= O_ACCMODE;
	return want_read ? fl != O_WRONLY : fl != O_RDONLY;
}

/* RLIMIT_FSIZE of the caller, as generic_write_check_limits applies it:
 * past it EFBIG and SIGXFSZ, else the count cut to it (*cut). 0 or
 * -EFBIG. at: where the write begins, or -1 for out's position. */
int cr_copy_fsize_limit(pid_t tid, int out, off_t at, size_t *count,
			bool *cut)
{
	struct rlimit rl;

	if (prlimit(tid, RLIMIT_FSIZE, NULL, &rl) < 0 ||
	    rl.rlim_cur == RLIM_INFINITY)
		return 0;
	if (at < 0)
		at = lseek(out, 0, SEEK_CUR);
	if (at < 0)
		return 0;
	if ((uint64_t)at >= rl.rlim_cur) {
		cr_signal_raise(tid, SIGXFSZ);
		return -EFBIG;
	}
	if (*count > rl.rlim_cur - (uint64_t)at) {
		*count = (size_t)(rl.rlim_cur - (uint64_t)at);
		*cut = true;
	}
	return 0;
}

/* The program's limit is applied by the caller; corral's own is the
 * caller's shell's (ulimit -f), not the program's: lifted to its hard
 * limit for the call (SIGXFSZ is ignored here: run.c). */
bool cr_copy_lift_fsize(struct rlimit *own)
{
	return getrlimit(RLIMIT_FSIZE, own) == 0 &&
	       own->rlim_cur != own->rlim_max &&
	       setrlimit(RLIMIT_FSIZE, &(struct rlimit){ own->rlim_max,
							 own->rlim_max }) == 0;
}

/* A set-id file loses its bits to a write of the program's, not to one of
 * a supervisor holding CAP_FSETID: written by the program only. */
bool cr_copy_plain_file(int fd, const struct stat *st)
{
	return S_ISREG(st->st_mode) && !cr_copy_special_fs(fd) &&
	       !(st->st_mode & S_ISUID) &&
	       (st->st_mode & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP);
}

static struct cr_verdict to_file(struct cr_run *run,
				 const struct seccomp_notif *n, int in, int out,
				 int64_t pos, size_t count)
{
	uint64_t ptr = n->data.args[2], t0;
	struct rlimit own;
	loff_t off = pos;
	size_t done = 0;
	bool lifted, cut = false;
	ssize_t r;
	int rc, err;

	if (count > FILE_STEP)
		count = FILE_STEP;
	/* Past the kernel's earlier answers only: nothing to send (0), an
	 * appending output (EINVAL, do_splice_direct). */
	rc = count && !(fcntl(out, F_GETFL) & O_APPEND) ?
	     cr_copy_fsize_limit((pid_t)n->pid, out, -1, &count, &cut) : 0;
	if (rc)
		return CR_V_ERR(-rc);
	/* The program's limit was applied above; corral's own is the
	 * caller's shell's (ulimit -f), not the program's: lifted to its
	 * hard limit for the call (SIGXFSZ is ignored here: run.c). */
	lifted = cr_copy_lift_fsize(&own);
	t0 = cr_thread_cpu_ns();
	/* In steps, each one's growth (st_blocks) charged at once, as
	 * fallocate's (handlers/alloc.c): 64 MiB in one call went past a
	 * disk budget of 1 MiB before the walk saw it (a probing session).
	 * Only the kernel's call is marked slow: the charge may measure the
	 * roots, which the stall watcher's tick touches too. */
	err = 0;
	while (done < count) {
		size_t step = count - done < CHARGE_STEP ? count - done :
			      CHARGE_STEP;
		struct stat a, b;
		bool known = fstat(out, &a) == 0;

		cr_slow_begin();
		r = sendfile(out, in, ptr ? &off : NULL, step);
		cr_slow_end();
		err = r < 0 ? errno : 0;
		if (known && fstat(out, &b) == 0 && b.st_blocks > a.st_blocks &&
		    cr_budget_on_alloc(run, (pid_t)n->pid,
				       (uint64_t)(b.st_blocks - a.st_blocks) * 512)) {
			if (r > 0)
				done += (size_t)r;
			err = done ? 0 : ENOSPC;
			break;
		}
		if (r <= 0)
			break;
		done += (size_t)r;
		if ((size_t)r < step)
			break;	/* the input's end, or the output's room */
	}
	if (lifted)
		setrlimit(RLIMIT_FSIZE, &own);
	/* The kernel's copy, in corral's time: the run's (handlers/proc.c). */
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	/* The kernel's splice goes on writing what it read past the limit:
	 * that write, at the limit, sends SIGXFSZ (it killed the program
	 * during the call natively, and only at its next call under corral;
	 * found by a probing session). The bytes before it are answered. */
	if (cut && done == count)
		cr_signal_raise((pid_t)n->pid, SIGXFSZ);
	/* As the kernel's: an error after bytes went answers the bytes. */
	if (!done && err)
		return CR_V_ERR(err);
	if (ptr && cr_mem_write((pid_t)n->pid, ptr, &off, sizeof(off)))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL((int64_t)done);
}

static struct cr_verdict to_socket(struct cr_run *run,
				   const struct seccomp_notif *n, int *in,
				   int *out, int64_t pos, size_t count)
{
	struct cr_net_msg m;
	size_t first = count < CR_NET_STREAM_PIECE ? count : CR_NET_STREAM_PIECE;
	uint64_t t0;
	ssize_t r;

	memset(&m, 0, sizeof(m));
	m.hold = -1;
	m.data = malloc(first ? first : 1);
	if (!m.data)
		return CR_V_ERR(ENOMEM);
	/* A file the program opened O_DIRECT needs aligned buffers and
	 * offsets, which the kernel's splice through the page cache does
	 * not: read through an open of our own without it (found by a
	 * probing session: EINVAL, or not, by the allocator's alignment). */
	m.src_rd = -1;
	if (fcntl(*in, F_GETFL) & O_DIRECT) {
		char p[64];
		size_t unit = cr_copy_direct_unit(*in);

		/* The kernel's splice reads it a pipe (64 KiB) at a time,
		 * each a direct read that needs the file's own alignment of
		 * offset and length: a last piece out of line is not read,
		 * and with nothing read the answer is EINVAL. So is this
		 * one's. */
		if ((count % SPLICE_PIPE) % unit)
			count -= count % SPLICE_PIPE;
		if (!count || pos % (int64_t)unit) {
			free(m.data);
			return CR_V_ERR(EINVAL);
		}
		if (first > count)
			first = count;

		snprintf(p, sizeof(p), "/proc/self/fd/%d", *in);
		m.src_rd = open(p, O_RDONLY | O_CLOEXEC);
		if (m.src_rd < 0) {	/* its mode changed since: EINVAL,
					 * on which programs fall back */
			free(m.data);
			return CR_V_ERR(EINVAL);
		}
	}
	t0 = cr_thread_cpu_ns();
	cr_slow_begin();	/* the program's write may hold the inode */
	do
		r = pread(m.src_rd >= 0 ? m.src_rd : *in, m.data, first,
			  (off_t)pos);
	while (r < 0 && errno == EINTR);
	cr_slow_end();
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	if (r <= 0) {
		int e = errno;

		free(m.data);
		if (m.src_rd >= 0)
			close(m.src_rd);
		return r < 0 ? CR_V_ERR(e) : CR_V_VAL(0);
	}
	m.dup = *out;
	*out = -1;
	m.msg.msg_iov = &m.iov;
	m.msg.msg_iovlen = 1;
	m.iov.iov_base = m.data;
	m.iov.iov_len = (size_t)r;
	m.sigpipe = true;
	m.stream = true;
	m.total = count;
	m.file_src = true;
	m.src = *in;
	*in = -1;
	m.src_pos = pos;
	m.src_ptr = n->data.args[2];
	return cr_net_send(run, n, &m, true);
}

CR_HANDLER(cr_h_sendfile)
{
	pid_t pid = (pid_t)n->pid;
	uint64_t ptr = n->data.args[2];
	size_t count = (size_t)n->data.args[3];
	int in = -1, out = -1, type = 0;
	bool seekable;
	off_t cur;
	socklen_t tl = sizeof(type);
	struct stat ist, ost;
	struct cr_verdict v;
	int64_t pos = 0;

	(void)e;
	if (ptr) {
		if (cr_mem_read(pid, ptr, &pos, sizeof(pos)))
			return CR_V_ERR(EFAULT);
		if (!cr_notif_valid(run, n->id))
			return CR_V_ERR(EINTR);
	}
	in = cr_fs_task_fd(run, pid, (int)n->data.args[1]);
	if (in < 0)
		return CR_V_ERR(EBADF);
	if (!cr_copy_has_mode(in, true) || fstat(in, &ist) < 0) {
		v = CR_V_ERR(EBADF);
		goto out;
	}
	/* No pread on it (FMODE_PREAD): a FIFO, a socket, an anonymous
	 * inode (eventfd, timerfd, epoll: no file type bits). */
	if (ptr && (S_ISFIFO(ist.st_mode) || S_ISSOCK(ist.st_mode) ||
		    !(ist.st_mode & S_IFMT))) {
		v = CR_V_ERR(ESPIPE);
		goto out;
	}
	/* The input's f_pos: 0 for what has no offset (a pipe), as the
	 * kernel reads it, which judges seeking later. */
	cur = lseek(in, 0, SEEK_CUR);
	seekable = cur >= 0;
	if (!ptr)
		pos = seekable ? cur : 0;
	/* rw_verify_area: a count with its sign bit set, a negative
	 * offset, an end past the largest offset. */
	if ((ssize_t)count < 0 || pos < 0 ||
	    (uint64_t)pos + count > (uint64_t)INT64_MAX) {
		v = CR_V_ERR(EINVAL);
		goto out;
	}
	if (count > MAX_RW)
		count = MAX_RW;
	out = cr_fs_task_fd(run, pid, (int)n->data.args[0]);
	if (out < 0 || !cr_copy_has_mode(out, false) || fstat(out, &ost) < 0) {
		v = CR_V_ERR(EBADF);
		goto out;
	}
	/* do_splice_direct: an appending output (a pipe is spliced into
	 * otherwise, and corral does not: EINVAL below). Then
	 * splice_direct_to_actor: an input that cannot seek, then nothing
	 * to do, then an input without splice_read. corral reads only files,
	 * block devices and the memory devices that never block (/dev/zero,
	 * /dev/random, /dev/urandom): a terminal would stall the supervisor. */
	if (!S_ISFIFO(ost.st_mode) && (fcntl(out, F_GETFL) & O_APPEND)) {
		v = CR_V_ERR(EINVAL);
		goto out;
	}
	if (S_ISFIFO(ost.st_mode) || !seekable) {
		v = CR_V_ERR(EINVAL);
		goto out;
	}
	if (!count) {
		v = CR_V_VAL(0);
		goto out;
	}
	if ((!S_ISREG(ist.st_mode) && !S_ISBLK(ist.st_mode) &&
	     !cr_copy_memory_device(&ist)) || cr_copy_special_fs(in)) {
		v = CR_V_ERR(EINVAL);
		goto out;
	}
	/* A set-id file loses its bits to a write of the program's, not to
	 * one of a supervisor holding CAP_FSETID: the program's own write. */
	if (cr_copy_plain_file(out, &ost)) {
		v = to_file(run, n, in, out, pos, count);
	} else if (S_ISSOCK(ost.st_mode) && run->net &&
		   getsockopt(out, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
		   type == SOCK_STREAM) {
		v = to_socket(run, n, &in, &out, pos, count);
	} else {
		v = CR_V_ERR(EINVAL);
	}
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		cr_guard_close(out);
	return v;
}
