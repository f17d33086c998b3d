/* tracer/fs/dirstream.c: a directory read entry by entry with getdents64
 * into a buffer of the caller's size, so a walk can hold thousands open. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs.h"

/* The kernel's record; one of the longest name takes 280 bytes. */
struct dirent64_rec {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

#define CR_DIR_MIN_BUF 1024

struct cr_dir {
	int fd;
	size_t pos, len, cap;
	_Alignas(8) char buf[];
};

struct cr_dir *cr_dir_open(int fd, size_t bufsz)
{
	struct cr_dir *d;

	if (bufsz < CR_DIR_MIN_BUF)
		bufsz = CR_DIR_MIN_BUF;
	d = malloc(sizeof(*d) + bufsz);
	if (!d) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	d->fd = fd;
	d->pos = d->len = 0;
	d->cap = bufsz;
	return d;
}

const char *cr_dir_next(struct cr_dir *d)
{
	const struct dirent64_rec *e;

	if (d->pos >= d->len) {
		long n;

		do
			n = syscall(SYS_getdents64, d->fd, d->buf, d->cap);
		while (n < 0 && errno == EINTR);
		/* A directory removed while open reads as ENOENT: it is
		 * empty (rmdir removes only empty ones), so that is its end,
		 * as glibc's readdir treats it. A walk racing `rm -rf` ended
		 * runs as unmeasurable before. */
		if (n == 0 || (n < 0 && errno == ENOENT)) {
			errno = 0;
			return NULL;
		}
		if (n < 0)
			return NULL;
		d->len = (size_t)n;
		d->pos = 0;
	}
	e = (const struct dirent64_rec *)(const void *)(d->buf + d->pos);
	d->pos += e->d_reclen;
	return e->d_name;
}

int cr_dir_fd(const struct cr_dir *d)
{
	return d->fd;
}

void cr_dir_close(struct cr_dir *d)
{
	if (!d)
		return;
	close(d->fd);
	free(d);
}
