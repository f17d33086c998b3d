/* tracer/fs/fsops.h: what the filesystem handlers share: argument decoding
 * and the race-free ways of acting on a resolved object. */
#ifndef CORRAL_FSOPS_H
#define CORRAL_FSOPS_H

#include "fs.h"
#include "../handlers/handlers.h"

/* Read the path at args[argi]: 0, -EFAULT, -ENAMETOOLONG, or -ESRCH when
 * the notification died meanwhile. */
int cr_fs_read_path(struct cr_run *run, const struct seccomp_notif *n,
		    int argi, char *buf, size_t len);
/* Read, resolve and check one path argument (dirfd at args[diri], or the
 * cwd when diri < 0). need: access bits required at the object. A refusal
 * is recorded as a denial. 0 or -errno. */
int cr_fs_arg(struct cr_run *run, const struct seccomp_notif *n,
	      const char *sys, int diri, int pathi, unsigned how,
	      unsigned need, struct cr_fsres *res);
/* An O_PATH fd on exactly the resolved object (never through a link that
 * appeared since), or -errno. */
int cr_fs_opath(const struct cr_fsres *res, bool follow_link);
/* The errno err of a refused creation, or EACCES where the name refused
 * was the last, in a directory the program can see: the kernel answers a
 * creation there EACCES (ENOENT said "no such directory" of a directory a
 * stat had just shown); the name's existence is told no more than by a
 * stat, which still answers ENOENT. slash_err: what the kernel answers
 * before permission when that name ends in '/' (open's EISDIR, mknod's
 * and symlink's ENOENT; 0 where a directory may be made). */
int cr_fs_create_refusal(const struct cr_run *run, const struct cr_fsres *res,
			 int err, int slash_err);
/* A copy of the task's fd (pidfd_getfd), for calls on "" + AT_EMPTY_PATH:
 * the object the task already holds. Caller closes. */
int cr_fs_task_fd(struct cr_run *run, pid_t tid, int fd);
/* "/proc/self/fd/N": names the inode behind fd, whatever its path now. */
void cr_fs_fdpath(int fd, char *buf, size_t len);

#endif
