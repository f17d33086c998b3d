/* tracer/capture.c: reads the program's stdout and stderr pipes, bounded by
 * the output budget: capture stops at the bound, then the rest is discarded. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracer.h"

/* Past the bound, this much more is read and thrown away (per stream) so a
 * program that overshoots a little still finishes normally; beyond it the
 * stream is closed and the writer gets EPIPE/SIGPIPE, as under `| head`.
 * Without that, a flood such as `yes` would hold its slot until the wall
 * limit. The allowance is the budget itself, at least 1 MiB. */
#define CR_DISCARD_MIN (1u << 20)

void cr_stream_init(struct cr_stream *s, int fd, int echo_fd)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->echo_fd = echo_fd;
	/* A terminal obeys what it is sent: the echo to one is filtered
	 * (tracer/termsafe.c); to a pipe or file it stays byte for byte. */
	s->term_safe = echo_fd >= 0 && isatty(echo_fd);
	if (fd >= 0)
		fcntl(fd, F_SETFL, O_NONBLOCK);
}

bool cr_stream_is(const struct cr_stream *s, const struct stat *st)
{
	struct stat own;

	return s->fd >= 0 && fstat(s->fd, &own) == 0 &&
	       own.st_dev == st->st_dev && own.st_ino == st->st_ino;
}

void cr_stream_close(struct cr_stream *s)
{
	if (s->fd >= 0)
		close(s->fd);	/* also leaves the epoll set */
	s->fd = -1;
}

static int keep(struct cr_run *run, struct cr_stream *s, const char *p,
		size_t n)
{
	uint64_t limit = run->cfg->limits.v[CR_LIM_OUTPUT];
	uint64_t used = run->out.len + run->err.len;
	size_t room = used >= limit ? 0 : (size_t)(limit - used);
	size_t take = n < room ? n : room;

	if (take) {
		char *nb;

		if (s->echo_fd >= 0)
			cr_echo_need(run);
		/* The echo thread reads the buffer: it moves under its lock. */
		cr_echo_lock(run);
		nb = realloc(s->buf, s->len + take);
		if (!nb) {
			cr_echo_unlock(run);
			return -ENOMEM;
		}
		s->buf = nb;
		memcpy(s->buf + s->len, p, take);
		cr_echo_push(run, s, s->len, take);
		s->len += take;
		cr_echo_unlock(run);
	}
	if (take < n) {
		s->truncated = true;
		s->discarded += n - take;
	}
	return 0;
}

bool cr_stream_pump(struct cr_run *run, struct cr_stream *s)
{
	uint64_t allowance = run->cfg->limits.v[CR_LIM_OUTPUT];
	char chunk[65536];

	if (allowance < CR_DISCARD_MIN)
		allowance = CR_DISCARD_MIN;
	/* The echo's reader went away (echo.c): the program's next write
	 * meets a closed pipe, as under `| head`. What it wrote since is
	 * counted, never read. */
	cr_echo_lock(run);
	if (s->echo_gone && s->fd >= 0) {
		int pending = 0;

		cr_echo_unlock(run);
		if (ioctl(s->fd, FIONREAD, &pending) == 0 && pending > 0)
			s->total += (uint64_t)pending;
		cr_stream_close(s);
		return false;
	}
	cr_echo_unlock(run);
	/* A bounded number of reads per wake-up, so a flooding stream cannot
	 * starve the notifications and signals behind it. */
	for (int i = 0; i < 16 && s->fd >= 0; i++) {
		ssize_t n = read(s->fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) {
			cr_stream_close(s);
			return false;
		}
		s->total += (uint64_t)n;
		if (keep(run, s, chunk, (size_t)n) < 0) {
			cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
				   "out of memory capturing output");
			return true;
		}
		if (s->discarded > allowance) {
			int pending = 0;

			/* What the program's write() already put in the pipe
			 * was written: counted, though never read (up to the
			 * pipe's size, 1 MiB with F_SETPIPE_SZ, was lost). */
			if (ioctl(s->fd, FIONREAD, &pending) == 0 &&
			    pending > 0) {
				s->total += (uint64_t)pending;
				s->discarded += (uint64_t)pending;
			}
			cr_stream_close(s);
			return false;
		}
	}
	return s->fd >= 0;
}
