/* tracer/fs/weak.c: files followed without a reference: an epoll instance
 * whose fdinfo lists those alive, or inotify watches the kernel drops. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/inotify.h>

#include "fs.h"

/*
 * An epoll watch holds no reference on its file: the kernel removes it
 * when the file is freed (the last descriptor closed, the last message
 * carrying it freed, the last blocked call holding it returned), whatever
 * descriptor it was added through. So a file the supervisor adds and then
 * closes its own descriptor of is followed to its end, and nothing of the
 * program's changes (no reader, writer or EOF is added). The instance is
 * never waited on.
 */

int cr_weak_add(int *set, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = 0, .data.u64 = data };

	if (*set < 0) {
		*set = epoll_create1(EPOLL_CLOEXEC);
		if (*set < 0)
			return -errno;
	}
	if (epoll_ctl(*set, EPOLL_CTL_ADD, fd, &ev) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int cr_weak_each(int set, void (*fn)(void *arg, uint64_t data, uint64_t ino),
		 void *arg)
{
	char path[64], *buf = NULL, *p, *nl;
	size_t cap = 0, len = 0;
	int fd, e = 0;

	if (set < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", set);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb) {
				e = ENOMEM;
				break;
			}
			buf = nb;
			cap += 65536;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			e = r < 0 ? errno : 0;
			break;
		}
		len += (size_t)r;
	}
	close(fd);
	if (e) {
		free(buf);
		return -e;
	}
	if (!buf)
		return 0;
	buf[len] = 0;
	/* "tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x",
	 * each line cut off before it is searched: a search of the rest of
	 * the text at every line (megabytes, for 32 000 pipes) made a
	 * sanitizer build's string checks quadratic. */
	for (p = buf; p < buf + len; p = nl + 1) {
		char *d, *i;

		nl = memchr(p, '\n', (size_t)(buf + len - p));
		if (!nl)
			nl = buf + len;
		*nl = 0;
		if (strncmp(p, "tfd:", 4) || !(d = strstr(p, "data:")) ||
		    !(i = strstr(p, "ino:")))
			continue;
		fn(arg, strtoull(d + 5, NULL, 16), strtoull(i + 4, NULL, 16));
	}
	free(buf);
	return 0;
}

/* An inotify watch pins the inode but no dentry: the kernel drops it
 * (IN_IGNORED) when the dentry dies, that is when nothing holds the file
 * or directory any more (linkfd.c, rmheld.c). Every drop queued on the
 * non-blocking instance in is handed to gone. */
void cr_weak_dropped(int in, void (*gone)(void *arg, int wd), void *arg)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t r;

	if (in < 0)
		return;
	while ((r = read(in, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + r;) {
			const struct inotify_event *e = (const void *)p;

			if (e->mask & IN_IGNORED)
				gone(arg, e->wd);
			p += sizeof(*e) + e->len;
		}
}
