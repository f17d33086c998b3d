/* include/corral/util.h: ownership helpers (scoped free/close), error
 * conventions and small utilities shared by policy/ and tracer/. */
#ifndef CORRAL_UTIL_H
#define CORRAL_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Internal functions return 0 or -errno. Cleanup paths save errno. */

static inline void cr_freep(void *p)
{
	free(*(void **)p);
}

static inline void cr_closep(const int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

/* Scoped ownership: the pointer is freed / the fd closed when the variable
 * goes out of scope, unless ownership is handed on with cr_steal_*(). */
#define cr_autofree __attribute__((cleanup(cr_freep)))
#define cr_autoclose __attribute__((cleanup(cr_closep)))

static inline void *cr_steal_ptr_(void *pp)
{
	void **p = pp;
	void *v = *p;
	*p = NULL;
	return v;
}
#define cr_steal_ptr(pp) \
	((__typeof__(*(pp)))cr_steal_ptr_((void *)(pp)))

static inline int cr_steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}

#define CR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Bounded formatting into an error buffer; never fails, always terminates. */
void cr_errf(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Read a whole file (at most max bytes) into a NUL-terminated buffer. */
int cr_read_file(const char *path, size_t max, char **out, size_t *outlen);
/* One read of a small file (a /proc entry) at path, relative to dirfd
 * (AT_FDCWD: as given), into buf, NUL-terminated: its length (> 0), or
 * -errno (-EIO when it read nothing). */
ssize_t cr_read_small(int dirfd, const char *path, char *buf, size_t size);
/* max, or a sixteenth of the process's descriptors (RLIMIT_NOFILE's soft
 * limit) when that is fewer: the share one area of the supervisor may
 * hold. */
size_t cr_nofile_share(size_t max);
/* Each line of the file at path (relative to dirfd), its newline made a
 * NUL, to fn; a line cut by the 16 KiB buffer's end is carried over whole
 * (for /proc texts of short lines). 0, or -errno: -EMFILE or -ENFILE when
 * it cannot be opened for want of descriptors, -ENOENT when it cannot be
 * opened otherwise (a descriptor closed, a task exiting) or when the read
 * finds it closed meanwhile, another -errno when it could not be read
 * whole. */
int cr_lines_at(int dirfd, const char *path,
		void (*fn)(void *arg, char *line), void *arg);
/* Write all n bytes to fd, retrying short writes and EINTR: 0, or -errno
 * (-EIO for a write that wrote nothing). The supervisor ignores SIGPIPE,
 * so a closed reader is -EPIPE, never a signal. */
int cr_write_all(int fd, const void *p, size_t n);
/* The same, waiting (poll) when fd's open file is non-blocking and full
 * (EAGAIN): for corral's own stdout and stderr, which a caller may share
 * with others in O_NONBLOCK mode (a Node.js parent leaves its pipes so). */
int cr_write_all_wait(int fd, const void *p, size_t n);
/* path with "//", "." and ".." worked out on the text alone (no link is
 * read), against base when path is relative and base is given (absolute),
 * into out: "/a//b/./c/../d/" -> "/a/b/d"; a ".." at "/" stays there; a
 * relative path without base stays relative, leading ".." kept. 0, or
 * -ENAMETOOLONG when out is too small. One spelling per path as text, for
 * counting: it may name another file than the kernel would reach. */
int cr_path_lexical(const char *base, const char *path, char *out,
		    size_t outsz);
/* Sets of 64-bit numbers (socket inodes) as sorted arrays: sort v in
 * place; whether sorted v holds x. */
void cr_u64_sort(uint64_t *v, size_t n);
bool cr_u64_has(const uint64_t *sorted, size_t n, uint64_t x);
/* The element of sorted v equal to x, or NULL. */
const uint64_t *cr_u64_find(const uint64_t *sorted, size_t n, uint64_t x);

#endif
