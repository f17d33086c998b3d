/* policy/util.c: the small shared utilities declared in util.h: bounded
 * error formatting, bounded whole-file reads and whole writes, lexical paths,
 * sorted sets of numbers. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral/util.h"

void cr_errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	if (vsnprintf(err, len, fmt, ap) < 0)
		err[0] = '\0';
	va_end(ap);
}

/* Reads at most max bytes; a longer file is -EFBIG rather than a silently
 * truncated document. Works for pipes and /dev/stdin as well as files. */
int cr_read_file(const char *path, size_t max, char **out, size_t *outlen)
{
	int fd cr_autoclose = -1;
	char *buf cr_autofree = NULL;
	size_t cap, len = 0;
	struct stat st;

	*out = NULL;
	if (outlen)
		*outlen = 0;
	if (max >= SIZE_MAX - 1)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	cap = 4096;
	if (S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size < (uint64_t)max)
		cap = (size_t)st.st_size + 1;
	if (cap > max + 1)
		cap = max + 1;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb;

			if (ncap <= cap)
				break;
			nb = realloc(buf, ncap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		return -EFBIG;
	buf[len] = '\0';
	*out = cr_steal_ptr(&buf);
	if (outlen)
		*outlen = len;
	return 0;
}

/* The whole of p, retrying short writes and EINTR; with wait, EAGAIN of
 * a non-blocking file waits for room (poll) instead of failing. */
static int write_all(int fd, const void *p, size_t n, bool wait)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (wait && w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };

			/* A reader gone shows as POLLERR: the write
			 * then answers EPIPE. */
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int cr_write_all(int fd, const void *p, size_t n)
{
	return write_all(fd, p, n, false);
}

int cr_write_all_wait(int fd, const void *p, size_t n)
{
	return write_all(fd, p, n, true);
}

ssize_t cr_read_small(int dirfd, const char *path, char *buf, size_t size)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = size ? read(fd, buf, size - 1) : -1;
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	return n;
}

size_t cr_nofile_share(size_t max)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 16 < max)
		return (size_t)(rl.rlim_cur / 16);
	return max;
}

int cr_lines_at(int dirfd, const char *path,
		void (*fn)(void *arg, char *line), void *arg)
{
	char buf[16384];
	size_t carry = 0;
	ssize_t got;
	int fd, e;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == EMFILE || errno == ENFILE ? -errno : -ENOENT;
	while ((got = read(fd, buf + carry, sizeof(buf) - carry - 1)) > 0) {
		char *p = buf, *end = buf + carry + got, *nl;

		*end = 0;
		while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
			*nl = 0;
			fn(arg, p);
			p = nl + 1;
		}
		carry = (size_t)(end - p);
		memmove(buf, p, carry);
	}
	e = errno;
	close(fd);
	return got < 0 ? -e : 0;
}

/* Append the components of p to out (length *n), lexically. abs: out is an
 * absolute path ("/" at least) and ".." never climbs above it. */
static int lexical_add(char *out, size_t outsz, size_t *n, bool abs,
		       const char *p)
{
	while (*p) {
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		bool dotdot = len == 2 && p[0] == '.' && p[1] == '.';

		if (!len || (len == 1 && p[0] == '.')) {
			/* "//" or ".": nothing */
		} else if (dotdot && abs && *n == 1) {
			/* ".." of "/" is "/" */
		} else if (dotdot && (abs || (*n &&
				       !(*n == 2 && !memcmp(out, "..", 2)) &&
				       !(*n >= 3 && !memcmp(out + *n - 3, "/..", 3))))) {
			/* Drop the last component (never a ".." kept). */
			while (*n && out[*n - 1] != '/')
				(*n)--;
			if (*n > 1 || (!abs && *n))
				(*n)--;	/* its slash, unless it is the root */
		} else {
			bool sep = abs ? *n > 1 : *n > 0;

			if (*n + sep + len + 1 > outsz)
				return -ENAMETOOLONG;
			if (sep)
				out[(*n)++] = '/';
			memcpy(out + *n, p, len);
			*n += len;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	out[*n] = 0;
	return 0;
}

int cr_path_lexical(const char *base, const char *path, char *out,
		    size_t outsz)
{
	bool abs = path[0] == '/' || (base && base[0] == '/');
	size_t n = 0;
	int rc;

	if (outsz < 2)
		return -ENAMETOOLONG;
	out[0] = 0;
	if (abs) {
		out[n++] = '/';
		out[n] = 0;
	}
	if (path[0] != '/' && abs) {
		rc = lexical_add(out, outsz, &n, true, base);
		if (rc)
			return rc;
	}
	return lexical_add(out, outsz, &n, abs, path);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void cr_u64_sort(uint64_t *v, size_t n)
{
	if (v && n > 1)
		qsort(v, n, sizeof(*v), u64_cmp);
}

const uint64_t *cr_u64_find(const uint64_t *sorted, size_t n, uint64_t x)
{
	if (!sorted || !n)
		return NULL;
	return bsearch(&x, sorted, n, sizeof(*sorted), u64_cmp);
}

bool cr_u64_has(const uint64_t *sorted, size_t n, uint64_t x)
{
	return cr_u64_find(sorted, n, x) != NULL;
}
