/* tracer/fs/linkfd.c: stand-ins for O_PATH descriptors of symbolic links
 * and sockets, which ADDFD cannot install; calls naming one act on it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

/*
 * open(link, O_PATH | O_NOFOLLOW) gives the kernel's fd of the link itself,
 * and the calls that take such an fd (fstatat and statx with AT_EMPTY_PATH,
 * readlinkat(fd, ""), fchownat, linkat) act on the link. ADDFD refuses
 * O_PATH files, so the program gets a stand-in: a sealed, empty memfd of
 * its own inode, opened with neither read nor write (open mode 3), so that
 * read and write on it fail EBADF as on an O_PATH fd. corral keeps an
 * O_PATH fd of the link for it, and every fd of the program it copies for
 * a path call (cr_fs_task_fd) is swapped for that link fd when it is a
 * stand-in: the handlers then act on the link, as the kernel would.
 *
 * A stand-in lives as long as some file of its inode does. corral keeps no
 * reference to it, only an inotify watch: when the inode's last file goes,
 * the watch reports IN_IGNORED and the entry, with its link fd, is
 * dropped. At most CR_LINKFD_MAX are held at once (each keeps a link of at
 * most a page alive, unlinked or not); past that, or when the means fail
 * (the user's inotify instances used up, corral out of descriptors), the
 * open answers as it did before stand-ins existed (EOPNOTSUPP,
 * docs/policy.md): never an errno that blames the program's own limits.
 * A unix socket's O_PATH open gets the same (no read-only open reaches a
 * socket); without one it answers ENXIO, as before.
 */

#define CR_LINKFD_MAX 256

struct cr_linkfd {
	dev_t dev;
	ino_t ino;		/* the stand-in's inode */
	int wd;			/* its inotify watch */
	int link;		/* owned: O_PATH | O_NOFOLLOW of the link */
};

static void drop(struct cr_fsstate *fs, size_t i)
{
	close(fs->linkfds[i].link);
	fs->linkfds[i] = fs->linkfds[--fs->nlinkfds];
}

static void gone(void *arg, int wd)
{
	struct cr_fsstate *fs = arg;

	for (size_t i = 0; i < fs->nlinkfds; i++)
		if (fs->linkfds[i].wd == wd) {
			drop(fs, i);
			return;
		}
}

/* Forget the stand-ins whose inode is gone: their watches said so. */
static void reap(struct cr_fsstate *fs)
{
	if (fs->nlinkfds)
		cr_weak_dropped(fs->linkfd_in, gone, fs);
}

int cr_fs_linkfd_make(struct cr_fsstate *fs, int link)
{
	struct cr_linkfd *e;
	struct stat st;
	char p[64];
	int m, fd = -1, wd;

	reap(fs);
	if (fs->nlinkfds >= CR_LINKFD_MAX) {
		close(link);
		return -EOPNOTSUPP;
	}
	if (!fs->linkfds)
		fs->linkfds = calloc(CR_LINKFD_MAX, sizeof(*fs->linkfds));
	if (fs->linkfd_in < 0)
		fs->linkfd_in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (!fs->linkfds || fs->linkfd_in < 0) {
		close(link);
		return -EOPNOTSUPP;
	}
	m = memfd_create("corral-link", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0) {
		close(link);
		return -EOPNOTSUPP;
	}
	/* Empty for good: the stand-in can never hold a byte. */
	if (fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
		  F_SEAL_SEAL) < 0)
		goto fail;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", m);
	fd = open(p, 3 | O_CLOEXEC);	/* neither read nor write */
	if (fd < 0 || fstat(fd, &st) < 0)
		goto fail;
	wd = inotify_add_watch(fs->linkfd_in, p, IN_DELETE_SELF);
	if (wd < 0)
		goto fail;
	close(m);
	e = &fs->linkfds[fs->nlinkfds++];
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->wd = wd;
	e->link = link;
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	close(m);
	close(link);
	return -EOPNOTSUPP;
}

int cr_fs_linkfd_swap(struct cr_fsstate *fs, int fd)
{
	struct stat st;
	int l;

	if (fd < 0 || !fs->nlinkfds)
		return fd;
	reap(fs);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink)
		return fd;
	for (size_t i = 0; i < fs->nlinkfds; i++) {
		if (fs->linkfds[i].ino != st.st_ino ||
		    fs->linkfds[i].dev != st.st_dev)
			continue;
		l = fcntl(fs->linkfds[i].link, F_DUPFD_CLOEXEC, 0);
		close(fd);
		return l < 0 ? -errno : l;
	}
	return fd;
}

void cr_fs_linkfd_free(struct cr_fsstate *fs)
{
	while (fs->nlinkfds)
		drop(fs, fs->nlinkfds - 1);
	free(fs->linkfds);
	fs->linkfds = NULL;
	if (fs->linkfd_in >= 0)
		close(fs->linkfd_in);
	fs->linkfd_in = -1;
}
