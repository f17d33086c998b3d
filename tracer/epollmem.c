/* tracer/epollmem.c: the watches of the run's epoll instances, those no fd
 * table shows included, for the memory budget. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/stat.h>

#include "budget.h"
#include "corral/util.h"

/*
 * Why: an epoll instance's watches are kernel memory no RSS shows (~205 B
 * each). The fd scan reads them from each instance's fdinfo through the
 * tables (budget.c, fdscan_anon). But a thread blocked in epoll_wait(), or
 * in poll() on the instance, keeps an instance alive after its last
 * descriptor was closed: 705 instances of 19 000 watches each held so ran
 * `ok` under memory=64MiB while the host lost ~1 GB (found by a probing
 * session).
 *
 * How: every instance is made by the supervisor (handlers/epoll.c), which
 * keeps a duplicate of it and adds one watch of its own: the read end of
 * a pipe only corral holds, watched for no event (a pipe with a writer
 * never reports an error or hang-up, so epoll_wait never returns it), its
 * data the instance's number. That line in the instance's fdinfo names
 * the instance wherever a table shows it (every epoll shares one
 * anonymous inode, so nothing else tells two apart), and no program can
 * forge it: its inode is the pipe's. (One pipe serves CR_EPOLL_MARK_SHARE
 * instances: the kernel limits the wake-up paths through one file when a
 * program nests instances.) An instance no table showed in a complete
 * scan is read through corral's duplicate and charged its watches; the
 * duplicate is let go when the instance has none, or when no task of the
 * run sits in a call that could hold it (epoll_wait and poll families),
 * so an instance the program closed lives on only while it could have
 * lived natively, or holds nothing.
 *
 * An instance kept by the duplicate stays in another instance that
 * watches it (a program nesting epolls) until it is let go, where the
 * kernel would drop it at the program's close (docs/limits.md).
 */

#define CR_EPOLL_MARK_SHARE 100
#define CR_EPOLL_HELD_MAX 1024

struct ep_rec {
	uint64_t seq;
	int fd;			/* owned: corral's duplicate */
	unsigned mark;		/* its marker (index in marks) */
	bool seen;		/* in a table in the scan under way */
	uint64_t count;		/* its watches there */
};

struct ep_mark {
	int fd[2];		/* owned, -1 once closed */
	uint64_t ino;
	unsigned made;		/* instances marked with it, ever */
	unsigned live;		/* ...and held now */
};

struct ep_seen {
	uint64_t seq, count;
};

struct cr_epollmem {
	uint64_t seq;		/* the next instance's number */
	uint64_t seq_scan;	/* the first the scan under way may miss */
	struct ep_rec *rec;	/* owned, by seq */
	size_t nrec, caprec;
	struct ep_mark *marks;	/* owned */
	size_t nmarks, capmarks;
	struct ep_seen *seen;	/* owned: this scan's */
	size_t nseen, capseen;
};

struct cr_epollmem *cr_epollmem_new(void)
{
	return calloc(1, sizeof(struct cr_epollmem));
}

void cr_epollmem_free(struct cr_epollmem *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nrec; i++)
		close(e->rec[i].fd);
	for (size_t i = 0; i < e->nmarks; i++)
		for (int k = 0; k < 2; k++)
			if (e->marks[i].fd[k] >= 0)
				close(e->marks[i].fd[k]);
	free(e->rec);
	free(e->marks);
	free(e->seen);
	free(e);
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *g;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 32;
	g = realloc(*v, c * size);
	if (!g)
		return -ENOMEM;
	*v = g;
	*cap = c;
	return 0;
}

static size_t held_max(void)
{
	/* A share of the supervisor's descriptors, as the other areas. */
	return cr_nofile_share(CR_EPOLL_HELD_MAX);
}

/* The marker for the next instance: the last pipe, or a new one. */
static int mark_get(struct cr_epollmem *e, unsigned *idx)
{
	struct ep_mark *m;
	struct stat st;
	int rc;

	if (e->nmarks && e->marks[e->nmarks - 1].fd[0] >= 0 &&
	    e->marks[e->nmarks - 1].made < CR_EPOLL_MARK_SHARE) {
		*idx = (unsigned)(e->nmarks - 1);
		return 0;
	}
	if ((rc = grow((void **)&e->marks, &e->capmarks, e->nmarks,
		       sizeof(*e->marks))))
		return rc;
	m = &e->marks[e->nmarks];
	if (pipe2(m->fd, O_CLOEXEC) < 0)
		return -errno;
	if (fstat(m->fd[0], &st) < 0) {
		rc = -errno;
		close(m->fd[0]);
		close(m->fd[1]);
		return rc;
	}
	m->ino = st.st_ino;
	m->made = m->live = 0;
	*idx = (unsigned)e->nmarks++;
	return 0;
}

static void mark_put(struct cr_epollmem *e, unsigned idx)
{
	struct ep_mark *m = &e->marks[idx];

	/* The last instance of a full marker gone: its pipe goes too. */
	if (--m->live == 0 && m->made >= CR_EPOLL_MARK_SHARE) {
		close(m->fd[0]);
		close(m->fd[1]);
		m->fd[0] = m->fd[1] = -1;
	}
}

/* Hold fd (an instance, marked with marker idx or to be marked) as seq. */
static int hold(struct cr_epollmem *e, int fd, uint64_t seq, unsigned idx)
{
	int dup, rc;

	if (e->nrec >= held_max())
		return -EMFILE;
	if ((rc = grow((void **)&e->rec, &e->caprec, e->nrec,
		       sizeof(*e->rec))))
		return rc;
	dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup < 0)
		return -errno;
	/* Kept sorted by seq: a retaken one goes in its place. */
	{
		size_t at = e->nrec;

		while (at > 0 && e->rec[at - 1].seq > seq)
			at--;
		memmove(&e->rec[at + 1], &e->rec[at],
			(e->nrec - at) * sizeof(*e->rec));
		e->rec[at] = (struct ep_rec){ .seq = seq, .fd = dup,
					      .mark = idx };
		e->nrec++;
	}
	e->marks[idx].live++;
	return 0;
}

int cr_epollmem_made(struct cr_epollmem *e, int fd)
{
	struct epoll_event ev = { .events = 0 };
	unsigned idx = 0;
	int rc;

	if (e->nrec >= held_max())
		return -EMFILE;
	if ((rc = mark_get(e, &idx)))
		return rc;
	ev.data.u64 = e->seq;
	if (epoll_ctl(fd, EPOLL_CTL_ADD, e->marks[idx].fd[0], &ev) < 0)
		return -errno;
	if ((rc = hold(e, fd, e->seq, idx)))
		return rc;
	e->marks[idx].made++;
	e->seq++;
	return 0;
}

void cr_epollmem_scan_start(struct cr_epollmem *e)
{
	if (!e)
		return;
	e->seq_scan = e->seq;
	e->nseen = 0;
}

/* One "tfd:" line: is it one of corral's markers (its index), and of
 * which instance? */
static bool marker(const struct cr_epollmem *e, const char *line,
		   uint64_t *seq, unsigned *idx)
{
	int tfd;
	unsigned ev;
	unsigned long long data, ino;
	long long pos;

	if (sscanf(line, "tfd: %d events: %x data: %llx pos:%lli ino:%llx",
		   &tfd, &ev, &data, &pos, &ino) != 5)
		return false;
	for (size_t i = 0; i < e->nmarks; i++)
		if (e->marks[i].fd[0] == tfd && e->marks[i].ino == ino) {
			*seq = data;
			*idx = (unsigned)i;
			return true;
		}
	return false;
}

struct listing {
	const struct cr_epollmem *e;
	int64_t count;
	bool named;
	uint64_t seq;
	unsigned idx;
};

static void one_line(void *arg, char *line)
{
	struct listing *l = arg;

	if (strncmp(line, "tfd:", 4))
		return;
	if (l->e && !l->named && marker(l->e, line, &l->seq, &l->idx))
		l->named = true;
	else
		l->count++;
}

/* The watches listed in the fdinfo at path (dir-relative), corral's
 * marker not counted; the marker's instance in *seq and *idx (*named). */
static int64_t watches(const struct cr_epollmem *e, int dir, const char *path,
		       bool *named, uint64_t *seq, unsigned *idx)
{
	struct listing l = { .e = e };
	int rc = cr_lines_at(dir, path, one_line, &l);

	*named = l.named;
	*seq = l.seq;
	*idx = l.idx;
	return rc < 0 ? rc : l.count;
}

static struct ep_rec *rec_of(struct cr_epollmem *e, uint64_t seq)
{
	size_t lo = 0, hi = e->nrec;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->rec[mid].seq == seq)
			return &e->rec[mid];
		if (e->rec[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int64_t cr_epollmem_read(struct cr_epollmem *e, int dir, const char *name,
			 int (*take)(void *arg), void *arg)
{
	char path[NAME_MAX + 16];
	uint64_t seq = 0;
	unsigned idx = 0;
	bool named;
	int64_t count;

	snprintf(path, sizeof(path), "../fdinfo/%s", name);
	count = watches(e, dir, path, &named, &seq, &idx);
	if (count < 0 || !named)
		return count;
	if (!rec_of(e, seq)) {
		/* Let go earlier (nothing could hold it then), in a table
		 * again: held again, or it could hide for good. */
		int fd = take(arg);

		if (fd >= 0) {
			if (hold(e, fd, seq, idx) < 0)
				count = -EMFILE;
			close(fd);
		}
	}
	if (!grow((void **)&e->seen, &e->capseen, e->nseen, sizeof(*e->seen)))
		e->seen[e->nseen++] = (struct ep_seen){ seq, (uint64_t)count };
	/* Not remembered (no memory): read again through corral's copy at
	 * the end of the scan, as if hidden. */
	return count;
}

static int cmp_seen(const void *a, const void *b)
{
	uint64_t x = ((const struct ep_seen *)a)->seq;
	uint64_t y = ((const struct ep_seen *)b)->seq;

	return x < y ? -1 : x > y;
}

int cr_epollmem_finish(struct cr_epollmem *e, uint64_t max,
		       bool (*waits)(void *arg), void *arg, uint64_t *hidden)
{
	size_t j = 0;
	int rc = 0, waiting = -1;	/* asked once, when needed */

	*hidden = 0;
	if (!e || !e->nrec)
		return 0;
	if (e->nseen)	/* none: seen may be NULL */
		qsort(e->seen, e->nseen, sizeof(*e->seen), cmp_seen);
	for (size_t i = 0; i < e->nrec; i++) {
		struct ep_rec *r = &e->rec[i];
		struct ep_seen key = { .seq = r->seq };
		char path[64];
		uint64_t seq;
		unsigned idx;
		bool named;
		int64_t c;

		if (r->seq >= e->seq_scan ||
		    (e->nseen && bsearch(&key, e->seen, e->nseen,
					 sizeof(*e->seen), cmp_seen))) {
			e->rec[j++] = *r;	/* in a table: counted there */
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", r->fd);
		c = watches(e, AT_FDCWD, path, &named, &seq, &idx);
		if (c < 0) {
			rc = rc ? rc : (int)c;
			c = (int64_t)max;	/* unreadable: at the bound */
		}
		if (c > 0 && waiting < 0)
			waiting = waits(arg);
		if (c > 0 && waiting) {
			/* A blocked call may hold it: charged, kept. */
			*hidden += (uint64_t)c < max ? (uint64_t)c : max;
			e->rec[j++] = *r;
			continue;
		}
		/* Nothing in it, or nothing could hold it but us. */
		close(r->fd);
		mark_put(e, r->mark);
	}
	e->nrec = j;
	return rc;
}
