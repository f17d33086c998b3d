/* tracer/budget/shanon.c: shared anonymous memory (MAP_SHARED anonymous or
 * /dev/zero), charged from its creation until gone. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shanon.h"

/*
 * Why creations and not pages: such an object is a file of the kernel's
 * own, held only by the mappings of it, and its pages stay when every
 * process drops them from its page tables (MADV_DONTNEED) or exits after
 * touching them. No RSS shows those pages, no fd reaches the object, and
 * nothing an unprivileged process may read counts them (map_files needs
 * CAP_CHECKPOINT_RESTORE): 4 GiB so held ran ok under memory=64MiB (found
 * by a probing session). What is known exactly is the size: the kernel
 * sizes the object to the mapping that makes it, for good.
 *
 * Every call that may make one is a candidate with its length: a shared
 * anonymous mapping or one of /dev/zero, charged at once; a shared
 * mapping of another file, uncharged ("maybe": a thread may swap the
 * descriptor for /dev/zero between corral's look and the kernel's, and a
 * writable /dev/zero can come in by SCM_RIGHTS, unseen). Scans of every
 * process's maps name the objects alive by inode:
 *
 * - An inode not seen before is an object made since: the largest
 *   lengths of the candidates are taken for the new ones and charged (a
 *   maybe's too). Every object is made by a candidate call, so the
 *   lengths taken are at least the new objects' sizes, whichever is
 *   which. More new objects than candidates: one made where no call was
 *   seen; the caller ends the run. A call still in flight stays a
 *   candidate when its length is taken (it may not have run yet), and
 *   the calls in flight known to have made an object are counted, so
 *   no more objects are taken for them than they can still make
 *   (cr_shanon_scan_end).
 * - An inode seen before and missing from CR_SHANON_MISSES scans in a
 *   row: as many of the smallest charges of the objects alive are taken
 *   back. The charges kept, sorted, stay at least the sizes alive,
 *   sorted. Not at the first miss: a maps file is read in pieces, and a
 *   thread moving the object (mremap) from the part not read yet to the
 *   part read had it missed by a scan, its charge given back and its
 *   return taken for a new object (440 MiB held ok under memory=256MiB,
 *   found by a probing session); an inode that comes back is the same
 *   object.
 * - A candidate whose call was done before the scan and whose length no
 *   new object took made nothing that lives: dropped (its charge too). A
 *   scan reads every maps file twice and takes what either read found:
 *   a file read while its process maps and unmaps can miss an object
 *   (a test's run was ended as holding an object no call made, its call
 *   dropped at a scan that had missed the object).
 *
 * Objects are passed on only by fork, which stops both sides until
 * corral has seen it, and a scan runs on the loop without a pause, so an
 * object alive when it began is in some map it reads. A maybe that made
 * an object is uncharged until the next scan: the overshoot of a tick.
 */

struct cand {
	uint64_t len;
	pid_t tid;	/* the calling thread; 0 once its call is done */
	bool charged;
	bool gated;	/* made while no /dev/zero could be had: no
			 * candidate unless ungated in flight */
};

struct known {
	uint64_t ino;
	unsigned misses;	/* scans in a row that did not find it */
};

struct cr_shanon {
	struct cand *c;
	size_t nc, capc, inflight;
	size_t ngated;		/* of the nc, gated */
	size_t spent;		/* calls in flight known to have made an
				 * object already found (which: not known) */
	uint64_t *pool;		/* charges of the objects alive */
	size_t np, capp;
	struct known *known;	/* their inodes, sorted */
	size_t nk, capk;
	uint64_t bytes;		/* charged: the pool and the charged cands */
	/* the scan in progress: the objects found (inodes, unsorted) */
	uint64_t *seen;
	size_t nseen, capseen;
};

struct cr_shanon *cr_shanon_new(void)
{
	return calloc(1, sizeof(struct cr_shanon));
}

void cr_shanon_free(struct cr_shanon *s)
{
	if (!s)
		return;
	free(s->c);
	free(s->pool);
	free(s->known);
	free(s->seen);
	free(s);
}

/* Room for one more in an array of u64 or of cands. */
static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *g;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	if (c > CR_SHANON_MAX)
		return -ENOMEM;
	g = realloc(*v, c * size);
	if (!g)
		return -ENOMEM;
	*v = g;
	*cap = c;
	return 0;
}

static int add_cand(struct cr_shanon *s, pid_t tid, uint64_t len, bool charged)
{
	int rc = grow((void **)&s->c, &s->capc, s->nc, sizeof(*s->c));

	if (rc)
		return rc;
	s->c[s->nc++] = (struct cand){ .len = len, .tid = tid,
				       .charged = charged };
	s->inflight++;
	if (charged)
		s->bytes += len;
	return 0;
}

int cr_shanon_made(struct cr_shanon *s, pid_t tid, uint64_t len)
{
	return add_cand(s, tid, len, true);
}

int cr_shanon_maybe(struct cr_shanon *s, pid_t tid, uint64_t len)
{
	return add_cand(s, tid, len, false);
}

int cr_shanon_gated(struct cr_shanon *s, pid_t tid, uint64_t len)
{
	int rc = add_cand(s, tid, len, false);

	if (!rc) {
		s->c[s->nc - 1].gated = true;
		s->ngated++;
	}
	return rc;
}

void cr_shanon_ungate(struct cr_shanon *s)
{
	if (!s || !s->ngated)
		return;
	for (size_t i = 0; i < s->nc; i++)
		if (s->c[i].gated && s->c[i].tid > 0) {
			s->c[i].gated = false;
			s->ngated--;
		}
}

void cr_shanon_done(struct cr_shanon *s, pid_t tid)
{
	if (!s || !s->inflight)
		return;
	for (size_t i = 0; i < s->nc;) {
		if (s->c[i].tid != tid) {
			i++;
			continue;
		}
		s->inflight--;
		if (!s->c[i].gated) {
			s->c[i++].tid = 0;
			continue;
		}
		/* Gated and done: it ran before any /dev/zero could be had,
		 * and made nothing. Gone now, scan or not (none may run). */
		s->c[i] = s->c[--s->nc];
		s->ngated--;
	}
}

size_t cr_shanon_inflight(const struct cr_shanon *s, pid_t *tids,
			  size_t max)
{
	size_t n = 0;

	for (size_t i = 0; s && i < s->nc && n < max; i++)
		if (s->c[i].tid > 0)
			tids[n++] = s->c[i].tid;
	return n;
}

bool cr_shanon_active(const struct cr_shanon *s)
{
	return s && (s->nc > s->ngated || s->nk);
}

uint64_t cr_shanon_bytes(const struct cr_shanon *s)
{
	return s ? s->bytes : 0;
}

size_t cr_shanon_count(const struct cr_shanon *s)
{
	return s ? s->nc - s->ngated + s->np : 0;
}

void cr_shanon_scan_begin(struct cr_shanon *s)
{
	s->nseen = 0;
}

/* Is this line of a maps file, its kernel fields first, a shared mapping
 * of an object of the kind? "/dev/zero (deleted)" is how the kernel names
 * one, "[anon_shmem:NAME]" one named with PR_SET_VMA_ANON_NAME. No file a
 * program can make has either path: /dev is not writable, and a file's
 * path is absolute. */
static bool object_line(const char *line, uint64_t *ino)
{
	char perms[8];
	unsigned long long i;
	int off = -1;

	if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %llu %n", perms, &i,
		   &off) < 2 || off < 0 || strlen(perms) < 4 || perms[3] != 's')
		return false;
	if (strcmp(line + off, "/dev/zero (deleted)") &&
	    strncmp(line + off, "[anon_shmem:", 12))
		return false;
	*ino = i;
	return true;
}

int cr_shanon_scan_fd(struct cr_shanon *s, int fd)
{
	char buf[16384], line[512];
	size_t ll = 0;
	bool over = false;
	ssize_t got;
	int lines = 0;

	while ((got = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t k = 0; k < got; k++) {
			uint64_t ino;

			if (buf[k] != '\n') {
				/* Only the first bytes matter: the kernel's
				 * fields and the start of the path. */
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[k];
				else
					over = true;
				continue;
			}
			line[ll] = 0;
			if (lines < INT_MAX)
				lines++;
			if (!over && object_line(line, &ino)) {
				if (grow((void **)&s->seen, &s->capseen,
					 s->nseen, sizeof(*s->seen)))
					return -ENOMEM;
				s->seen[s->nseen++] = ino;
			}
			ll = 0;
			over = false;
		}
	}
	return got < 0 ? -errno : lines;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Gated calls last; then larger first; among equals a call done first
 * (taken with its object rather than copied from a call that may still
 * make one). */
static int cmp_take(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->gated != y->gated)
		return x->gated ? 1 : -1;	/* no candidates: last */
	if (x->len != y->len)
		return x->len < y->len ? 1 : -1;
	return (x->tid > 0) - (y->tid > 0);
}

static int cmp_known(const void *a, const void *b)
{
	return cmp_u64(&((const struct known *)a)->ino,
		       &((const struct known *)b)->ino);
}

static bool is_known(const struct cr_shanon *s, uint64_t ino)
{
	struct known key = { .ino = ino };

	return s->nk && bsearch(&key, s->known, s->nk, sizeof(key), cmp_known);
}

int cr_shanon_scan_end(struct cr_shanon *s)
{
	size_t n = 0, fresh = 0, dead, d = 0, over = 0, nd = 0, room;

	/* The objects alive, each once. */
	if (s->nseen)
		qsort(s->seen, s->nseen, sizeof(*s->seen), cmp_u64);
	for (size_t i = 0; i < s->nseen; i++)
		if (!i || s->seen[i] != s->seen[i - 1])
			s->seen[n++] = s->seen[i];
	for (size_t i = 0; i < n; i++)
		fresh += !is_known(s, s->seen[i]);
	/* Known: found again, or missed once more; gone after
	 * CR_SHANON_MISSES misses in a row, and the smallest charges of the
	 * pool go with them. */
	dead = 0;
	for (size_t i = 0, j = 0; i < s->nk; i++) {
		while (j < n && s->seen[j] < s->known[i].ino)
			j++;
		if (j < n && s->seen[j] == s->known[i].ino)
			s->known[i].misses = 0;
		else if (++s->known[i].misses >= CR_SHANON_MISSES)
			dead++;
	}
	if (s->np)
		qsort(s->pool, s->np, sizeof(*s->pool), cmp_u64);
	for (size_t i = 0; i < dead && i < s->np; i++)
		s->bytes -= s->pool[i];
	if (dead && s->np) {
		size_t k = dead < s->np ? dead : s->np;

		memmove(s->pool, s->pool + k, (s->np - k) * sizeof(*s->pool));
		s->np -= k;
	}
	/*
	 * New: each was made by a distinct call, done or in flight, that
	 * has made no object found before. The calls in flight that made
	 * one are known only by count (spent): which of them ran, no
	 * scan tells. So a new object takes the largest length of all the
	 * calls (at least the size of whichever made it): a call done is
	 * taken with it; a call in flight stays, its length copied (its
	 * charge, if any, moving to the object), for the object it may
	 * still make. More new objects than calls that may still have made
	 * one: one made where no call was seen; the caller ends the run.
	 * Taking a call in flight with the object ended runs falsely (the
	 * object it made next had none left: a test's run, 1 in 3); giving
	 * it another's length in place of its own, or none, let a length
	 * go with a call done (charged less than held) and a call of
	 * length 0 take objects no call made (found by a probing session).
	 */
	for (size_t i = 0; i < s->nc; i++)
		nd += !s->c[i].tid && !s->c[i].gated;
	room = s->nc - s->ngated;
	room -= s->spent < room ? s->spent : room;
	if (fresh > room) {
		over = fresh - room;
		fresh = room;
	}
	while (s->capp < s->np + fresh)
		if (grow((void **)&s->pool, &s->capp, s->capp, sizeof(*s->pool)))
			return -ENOMEM;
	if (s->nc)
		qsort(s->c, s->nc, sizeof(*s->c), cmp_take);
	for (size_t i = 0; i < fresh; i++) {
		struct cand *c = &s->c[i];

		s->pool[s->np++] = c->len;
		if (!c->charged)
			s->bytes += c->len;
		c->charged = false;
		if (!c->tid)
			c->tid = -1;	/* taken */
	}
	/* At least fresh - nd of the new ones are of calls in flight, and
	 * no more than nd of those spent before are among the calls done. */
	s->spent = s->spent + fresh > nd ? s->spent + fresh - nd : 0;
	/* The calls done and not taken made nothing alive (a gated one done
	 * ran before any /dev/zero could be had). */
	s->ngated = 0;
	for (size_t i = 0; i < s->nc; i++) {
		struct cand *c = &s->c[i];

		if (c->tid > 0) {
			s->ngated += c->gated;
			s->c[d++] = *c;
		} else if (!c->tid && c->charged) {
			s->bytes -= c->len;
		}
	}
	s->nc = s->inflight = d;
	if (s->spent > s->nc - s->ngated)
		s->spent = s->nc - s->ngated;
	/* Known now: those kept, and the new ones. */
	d = 0;
	for (size_t i = 0; i < s->nk; i++)
		if (s->known[i].misses < CR_SHANON_MISSES)
			s->known[d++] = s->known[i];
	s->nk = d;
	if (s->nk + fresh + over > s->capk) {
		size_t cap = s->nk + fresh + over;
		struct known *g = realloc(s->known, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		s->known = g;
		s->capk = cap;
	}
	d = 0;
	for (size_t i = 0; i < n; i++)
		if (!is_known(s, s->seen[i]))
			s->known[s->nk + d++] = (struct known){
				.ino = s->seen[i] };
	s->nk += d;
	if (s->nk)
		qsort(s->known, s->nk, sizeof(*s->known), cmp_known);
	return over > INT_MAX ? INT_MAX : (int)over;
}
