/* tracer/taskfd.c: copies of a thread's own fds (pidfd_getfd), from the
 * table that thread uses, which need not be its process's. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>

#include "tracer.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL	/* Linux 6.9 */
#endif

/*
 * A thread made without CLONE_FILES (or after unshare(CLONE_FILES), or
 * close_range(CLOSE_RANGE_UNSHARE)) has an fd table of its own: fd N of
 * the thread and fd N of its process's leader are then different files.
 * pidfd_getfd takes the fd from the task its pidfd names, so a copy of
 * the calling thread's fd needs a pidfd of that thread: PIDFD_THREAD
 * (6.9). Asked once of our own thread: EINVAL there means the flag is
 * unknown to this kernel, not a problem with some task.
 */
bool cr_taskfd_thread_pidfds(void)
{
	static int have = -1;

	if (have < 0) {
		int fd = (int)syscall(SYS_pidfd_open, (pid_t)syscall(SYS_gettid),
				      PIDFD_THREAD);

		have = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return have;
}

int cr_taskfd_open(pid_t tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);

	return fd < 0 ? -errno : fd;
}

int cr_taskfd_same_table(pid_t a, pid_t b)
{
	long r;

	if (a == b)
		return 1;
	r = syscall(SYS_kcmp, a, b, KCMP_FILES, 0, 0);
	if (r < 0)
		return -errno;
	return r == 0;
}

/*
 * Kernels without PIDFD_THREAD: the leader's pidfd reaches the leader's
 * table only. The copy is kept when the thread uses that same table,
 * compared after the copy was made: the caller is blocked in its
 * notification and cannot leave its table, and a leader that left it
 * (unshare) can never come back to it, so "the same after" means "the
 * same throughout". Otherwise (or when kcmp cannot tell) the thread's fd
 * is out of reach: -EPERM, never another file (fail closed).
 */
int cr_taskfd_via_leader(int leader_pidfd, pid_t tgid, pid_t tid, int fd)
{
	int c = (int)syscall(SYS_pidfd_getfd, leader_pidfd, fd, 0);
	int e = c < 0 ? errno : 0;

	cr_guard_note_copy(c);

	if (tid != tgid && cr_taskfd_same_table(tgid, tid) != 1) {
		if (c >= 0)
			close(c);
		return -EPERM;
	}
	return c < 0 ? -e : c;
}
