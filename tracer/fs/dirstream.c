/* tracer/fs/dirstream.c: a directory read entry by entry with getdents64
 * into a buffer of the caller's size, so a walk can hold thousands open;
 * or a listing recorded before, given back name by name. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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
	/* A listing given (cr_dir_given): names[] NUL-separated, read from
	 * gpos; no getdents. */
	char *names;
	size_t gpos, glen;
	/* A listing recorded as it is read (cr_dir_record): NUL-separated,
	 * up to rcap bytes; given up (rec_off) past that. */
	char *rec;
	size_t rlen, ralloc, rcap;
	bool recording, rec_off, ended;
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
	memset(d, 0, sizeof(*d));
	d->fd = fd;
	d->cap = bufsz;
	return d;
}

struct cr_dir *cr_dir_given(int fd, const char *names, size_t len)
{
	struct cr_dir *d = malloc(sizeof(*d));
	char *copy = malloc(len ? len : 1);

	if (!d || !copy) {
		free(d);
		free(copy);
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	memset(d, 0, sizeof(*d));
	d->fd = fd;
	memcpy(copy, names, len);
	d->names = copy;
	d->glen = len;
	return d;
}

void cr_dir_record(struct cr_dir *d, size_t cap)
{
	d->recording = true;
	d->rcap = cap;
}

const char *cr_dir_recorded(const struct cr_dir *d, size_t *len)
{
	if (!d->recording || d->rec_off || !d->ended)
		return NULL;
	*len = d->rlen;
	return d->rec ? d->rec : "";
}

static void record(struct cr_dir *d, const char *name)
{
	size_t n = strlen(name) + 1;

	if (d->rec_off || (name[0] == '.' && (!name[1] ||
	    (name[1] == '.' && !name[2]))))
		return;
	if (d->rlen + n > d->rcap) {
		d->rec_off = true;
		return;
	}
	if (d->rlen + n > d->ralloc) {
		size_t cap = d->ralloc ? d->ralloc * 2 : 4096;
		char *g;

		while (cap < d->rlen + n)
			cap *= 2;
		if (!(g = realloc(d->rec, cap))) {
			d->rec_off = true;
			return;
		}
		d->rec = g;
		d->ralloc = cap;
	}
	memcpy(d->rec + d->rlen, name, n);
	d->rlen += n;
}

const char *cr_dir_next(struct cr_dir *d)
{
	const struct dirent64_rec *e;

	if (d->names) {
		const char *name;

		if (d->gpos >= d->glen) {
			errno = 0;
			return NULL;
		}
		name = d->names + d->gpos;
		d->gpos += strlen(name) + 1;
		return name;
	}
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
			d->ended = true;
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
	if (d->recording)
		record(d, e->d_name);
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
	free(d->names);
	free(d->rec);
	free(d);
}
