/* tracer/echo.c: streams the program's captured output to corral's own
 * stdout and stderr from a thread, so a reader that stops never stalls the loop. */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <sys/signalfd.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"

/*
 * Without --json, what the program writes is echoed as it comes. A write to
 * corral's stdout blocks when whoever reads it stops reading; done on the
 * loop thread, that block would hold every notification, timer and budget
 * behind it (the wall limit would not fire). So the loop only queues: the
 * bytes are already in the stream's capture buffer (bounded by the output
 * budget), and the queue records which stream and which range, in arrival
 * order, so stdout and stderr keep their interleaving. This thread writes.
 * The mutex guards the queue and the capture buffers (which the loop may
 * move with realloc); it is never held across a write.
 */

/* Pending ranges kept apart at most: past this, a new range joins the last
 * pending range of its own stream (always contiguous with it), so memory
 * stays bounded however a program alternates its two streams while the
 * reader stalls; only the interleaving of such a flood is coarser. */
#define CR_ECHO_MAX_SEGS 1024

/* Write n bytes of s's output to its echo fd: as they are, or through the
 * terminal filter when that fd is a terminal. 0 or -errno. Only one thread
 * calls it for a stream at a time (the echo thread, or the loop when there
 * is none), so the filter's state needs no lock. */
static int echo_write(struct cr_stream *s, int fd, const char *p, size_t n)
{
	char safe[4096];

	if (!s->term_safe)
		return cr_write_all_wait(fd, p, n);
	while (n) {
		size_t used, k = cr_termsafe_feed(&s->term, p, n, safe,
						  sizeof(safe), &used);
		int rc = k ? cr_write_all_wait(fd, safe, k) : 0;

		if (rc < 0)
			return rc;
		p += used;
		n -= used;
	}
	return 0;
}

/* The end of the echo: a sequence or character the program left unended
 * is written, made visible, so no byte is lost and none is obeyed. */
static void echo_flush(struct cr_stream *s)
{
	char safe[CR_TERMSAFE_STEP];
	size_t k;

	if (!s->term_safe)
		return;
	k = cr_termsafe_flush(&s->term, safe);
	if (k && s->echo_fd >= 0 && cr_write_all_wait(s->echo_fd, safe, k) < 0)
		s->echo_fd = -1;
}

struct seg {
	struct cr_stream *s;	/* borrowed: run->out or run->err */
	size_t off, len;	/* a range of s->buf */
};

struct cr_echo {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct seg *q;		/* owned: pending ranges, q[head..n) */
	size_t head, n, cap;
	bool closing;		/* no more ranges: drain, then return */
	bool joined;		/* the thread is gone (cr_echo_finish) */
};

/* The echo of s could not be written (rc): no more echo. A reader gone
 * (EPIPE) is told to the program as natively: its pipe is closed at its
 * next write (capture.c), which then meets EPIPE and SIGPIPE, where it ran
 * on to the wall limit, its output echoed to nobody (`corral run -- prog |
 * head -1`; found by a probing session). */
static void stream_lost(struct cr_stream *s, int rc)
{
	s->echo_fd = -1;
	if (rc == -EPIPE)
		s->echo_gone = true;
}

static void *echo_main(void *arg)
{
	struct cr_echo *e = arg;
	static char chunk[65536];	/* only this thread touches it */

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&e->mu);
	for (;;) {
		struct cr_stream *s;
		size_t k;
		int fd, rc;

		while (e->head == e->n && !e->closing)
			pthread_cond_wait(&e->cv, &e->mu);
		if (e->head == e->n)
			break;
		s = e->q[e->head].s;
		k = e->q[e->head].len < sizeof(chunk) ? e->q[e->head].len :
							 sizeof(chunk);
		memcpy(chunk, s->buf + e->q[e->head].off, k);
		e->q[e->head].off += k;
		e->q[e->head].len -= k;
		if (!e->q[e->head].len && ++e->head == e->n)
			e->head = e->n = 0;
		fd = s->echo_fd;
		pthread_mutex_unlock(&e->mu);
		/* Only while writing, with the lock not held, may the end of
		 * the run give the echo up (cr_echo_finish). */
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		rc = fd >= 0 ? echo_write(s, fd, chunk, k) : 0;
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_mutex_lock(&e->mu);
		/* EPIPE and the like: our reader went away; the rest of this
		 * stream is captured but no longer echoed. */
		if (rc < 0)
			stream_lost(s, rc);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

static int echo_start(struct cr_run *run)
{
	struct cr_echo *e;
	int rc;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	/* The thread inherits the loop's blocked signals (signalfd). */
	rc = pthread_create(&e->th, NULL, echo_main, e);
	if (rc) {
		pthread_cond_destroy(&e->cv);
		pthread_mutex_destroy(&e->mu);
		free(e);
		return -rc;
	}
	run->echo = e;
	return 0;
}

/* A run whose program writes nothing (or with --json, where nothing is
 * echoed) never makes the thread: making it and ending it cost ~0.5 ms of
 * every run's start-up and exit (docs/performance.md). */
void cr_echo_need(struct cr_run *run)
{
	int rc;

	if (run->echo || run->echo_tried ||
	    (run->out.echo_fd < 0 && run->err.echo_fd < 0))
		return;
	run->echo_tried = true;
	rc = echo_start(run);
	if (rc < 0)
		fprintf(stderr, "corral: warning: no echo thread (%s): output is echoed by the loop\n",
			strerror(-rc));
}

void cr_echo_lock(struct cr_run *run)
{
	if (run->echo)
		pthread_mutex_lock(&run->echo->mu);
}

void cr_echo_unlock(struct cr_run *run)
{
	if (run->echo)
		pthread_mutex_unlock(&run->echo->mu);
}

void cr_echo_push(struct cr_run *run, struct cr_stream *s, size_t off,
		  size_t len)
{
	struct cr_echo *e = run->echo;
	struct seg *last;

	if (s->echo_fd < 0 || !len)
		return;
	if (!e) {
		/* No thread (it could not start): echo in place, as
		 * before, blocking the loop if the reader does not read. */
		int rc = echo_write(s, s->echo_fd, s->buf + off, len);

		if (rc < 0)
			stream_lost(s, rc);
		return;
	}
	last = e->n > e->head ? &e->q[e->n - 1] : NULL;
	if (e->n - e->head >= CR_ECHO_MAX_SEGS) {
		/* Every captured byte of s is queued in order, so its last
		 * pending range ends exactly at off. */
		for (size_t i = e->n; i > e->head; i--)
			if (e->q[i - 1].s == s) {
				last = &e->q[i - 1];
				break;
			}
	}
	if (last && last->s == s && last->off + last->len == off) {
		last->len += len;
	} else {
		if (e->n == e->cap) {
			size_t cap = e->cap ? e->cap * 2 : 64;
			struct seg *q = realloc(e->q, cap * sizeof(*q));

			if (!q) {
				/* Out of memory: this range is captured (the
				 * result has it) but not echoed. */
				return;
			}
			e->q = q;
			e->cap = cap;
		}
		e->q[e->n++] = (struct seg){ .s = s, .off = off, .len = len };
	}
	pthread_cond_signal(&e->cv);
}

/* Whether the thread wrote everything queued, waiting for it in steps;
 * false when a signal that ends corral (any but SIGCHLD and SIGTSTP, which
 * the loop's signalfd keeps) came meanwhile, or 0.5 s passed in a
 * cancelled run. */
static bool drained(struct cr_run *run, struct cr_echo *e)
{
	bool cancelled = run->status == CR_ST_CANCELLED;
	struct timespec until;
	int waited = 0;

	for (;;) {
		struct signalfd_siginfo si;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 50 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_timedjoin_np(e->th, NULL, &until) == 0) {
			e->joined = true;
			return true;
		}
		while (run->sigfd >= 0 &&
		       read(run->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGTSTP) {
				run->echo_cut = true;	/* said by result.c */
				return false;
			}
		if (cancelled && ++waited >= 10)
			return false;
	}
}

void cr_echo_finish(struct cr_run *run)
{
	struct cr_echo *e = run->echo;

	if (!e) {
		/* No thread (--json, or it could not start): what was echoed
		 * in place may have left a sequence pending. */
		echo_flush(&run->out);
		echo_flush(&run->err);
		return;
	}
	pthread_mutex_lock(&e->mu);
	e->closing = true;
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
	/* Waits for what is queued to be written: the program's last output
	 * comes before corral's own last words on stderr, as when echoed in
	 * place. A reader that never reads holds corral here, as it would
	 * hold any program writing to it; the tree is already gone. But a
	 * signal that would end such a program ends the wait (SIGTERM to a
	 * corral whose reader had stopped did nothing until the reader
	 * read, found by a probing session), and so does a run cancelled
	 * 0.5 s into it: natively the writer dies at the signal, and what
	 * a slow reader has not taken yet is never written. */
	if (!drained(run, e)) {
		pthread_mutex_lock(&e->mu);
		run->out.echo_fd = run->err.echo_fd = -1;	/* no flush */
		pthread_mutex_unlock(&e->mu);
		pthread_cancel(e->th);	/* acts in a write only */
	}
	if (!e->joined)
		pthread_join(e->th, NULL);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	free(e->q);
	free(e);
	run->echo = NULL;
	echo_flush(&run->out);
	echo_flush(&run->err);
}
