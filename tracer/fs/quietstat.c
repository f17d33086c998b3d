/* tracer/fs/quietstat.c: the supervisor's own look at a file (type, mode,
 * owner, size, place, a listing), never touching or asking its times. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fs.h"

/*
 * Since Linux 6.13 a file's timestamps are "multigrain": an update is
 * coarse (the timer tick) unless somebody asked for the inode's times
 * since its last one, and a fine-grained stamp handed out moves every
 * later coarse one up to it. A stat the supervisor makes on its own (the
 * parent of a name to create, the disk walk) would make the program's next
 * change fine-grained where natively it is not: a configure script
 * measuring the filesystem's timestamp resolution finds 0.1 s instead of
 * 0.2 (found by a probing session). statx without STATX_MTIME|STATX_CTIME
 * does not ask. The times of *st are zero.
 */
int cr_quiet_fstatat(int dirfd, const char *name, struct stat *st, int flags)
{
	struct statx x;
	unsigned mask = STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID |
			STATX_GID | STATX_INO | STATX_SIZE | STATX_BLOCKS;

	if (statx(dirfd, name, flags, mask, &x) < 0)
		return -1;
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(x.stx_dev_major, x.stx_dev_minor);
	st->st_ino = x.stx_ino;
	st->st_mode = x.stx_mode;
	st->st_nlink = x.stx_nlink;
	st->st_uid = x.stx_uid;
	st->st_gid = x.stx_gid;
	st->st_rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor);
	st->st_size = (off_t)x.stx_size;
	st->st_blksize = (blksize_t)x.stx_blksize;
	st->st_blocks = (blkcnt_t)x.stx_blocks;
	return 0;
}

int cr_quiet_fstat(int fd, struct stat *st)
{
	return cr_quiet_fstatat(fd, "", st, AT_EMPTY_PATH);
}

/*
 * A directory the supervisor reads on its own (the disk walk, the run's
 * /dev/shm measure) would have its access time moved by the listing
 * (relatime: whenever it is older than the last change), which the
 * program sees in its stat (found by a differential probe). O_NOATIME,
 * which only the owner may ask (the run's uid owns what it made), else
 * a plain open.
 */
int cr_quiet_opendir(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_NOATIME);

	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags);
	return fd;
}
