/* tracer/shanon.c: shared anonymous memory (MAP_SHARED anonymous, or of
 * /dev/zero) for the memory budget: charged from its creation until it is gone. */
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
 * sizes the object to the mapping that makes it, for good (nothing can
 * truncate or grow a file nobody has open). So every creation is charged
 * its size before the kernel makes it, and taken back when scans of every
 * process's maps show fewer objects alive than creations charged:
 *
 * - A scan counts the distinct objects it finds (n). Objects are passed
 *   on only by fork, which stops both sides until corral has seen it, and
 *   the scan runs on the loop without a pause, so an object alive when it
 *   began is in some map it reads.
 * - Of the creations whose calls are done (their thread has since been
 *   seen again, or is gone), at most n can be alive: the n largest stay
 *   charged, the others are dropped. Creations still in flight stay
 *   charged whatever the scan finds.
 * - More objects than creations charged means one was made where no
 *   creation was seen (an fd swapped for one of /dev/zero between corral's
 *   look and the kernel's mapping): the caller ends the run.
 *
 * Charging the largest keeps the sum an upper bound whichever objects are
 * the live ones; a program that once held a large object and keeps a small
 * one may stay charged for the large one (towards stopping).
 */

struct ent {
	uint64_t len;
	pid_t tid;	/* the creating thread while its call may be in flight */
};

struct cr_shanon {
	struct ent *e;
	size_t n, cap, inflight;
	/* shared mappings of files other than /dev/zero, their calls in
	 * flight: charged only if a writable /dev/zero becomes the run's
	 * before they are done (cr_shanon_flip) */
	struct ent *m;
	size_t nm, capm;
	uint64_t bytes;		/* the sum of every entry's len */
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
	free(s->e);
	free(s->m);
	free(s->seen);
	free(s);
}

int cr_shanon_made(struct cr_shanon *s, pid_t tid, uint64_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct ent *g;

		if (cap > CR_SHANON_MAX)
			return -ENOMEM;
		g = realloc(s->e, cap * sizeof(*g));
		if (!g)
			return -ENOMEM;
		s->e = g;
		s->cap = cap;
	}
	s->e[s->n++] = (struct ent){ .len = len, .tid = tid };
	s->inflight++;
	s->bytes += len;
	return 0;
}

int cr_shanon_maybe(struct cr_shanon *s, pid_t tid, uint64_t len)
{
	if (s->nm == s->capm) {
		size_t cap = s->capm ? s->capm * 2 : 16;
		struct ent *g;

		if (cap > CR_SHANON_MAX)
			return -ENOMEM;
		g = realloc(s->m, cap * sizeof(*g));
		if (!g)
			return -ENOMEM;
		s->m = g;
		s->capm = cap;
	}
	s->m[s->nm++] = (struct ent){ .len = len, .tid = tid };
	return 0;
}

int cr_shanon_flip(struct cr_shanon *s, uint64_t *added)
{
	*added = 0;
	while (s->nm) {
		struct ent *m = &s->m[s->nm - 1];
		int rc = cr_shanon_made(s, m->tid, m->len);

		if (rc)
			return rc;
		*added += m->len;
		s->nm--;
	}
	return 0;
}

void cr_shanon_done(struct cr_shanon *s, pid_t tid)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nm;)
		if (s->m[i].tid == tid)
			s->m[i] = s->m[--s->nm];
		else
			i++;
	if (!s->inflight)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].tid == tid) {
			s->e[i].tid = 0;
			s->inflight--;
		}
}

bool cr_shanon_active(const struct cr_shanon *s)
{
	return s && s->n;
}

uint64_t cr_shanon_bytes(const struct cr_shanon *s)
{
	return s ? s->bytes : 0;
}

size_t cr_shanon_count(const struct cr_shanon *s)
{
	return s ? s->n : 0;
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

static int add_seen(struct cr_shanon *s, uint64_t ino)
{
	if (s->nseen == s->capseen) {
		size_t cap = s->capseen ? s->capseen * 2 : 16;
		uint64_t *g = realloc(s->seen, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		s->seen = g;
		s->capseen = cap;
	}
	s->seen[s->nseen++] = ino;
	return 0;
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
			if (!over && object_line(line, &ino) &&
			    add_seen(s, ino) < 0)
				return -ENOMEM;
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

/* Larger first; entries in flight before the done ones of the same
 * size (the order only matters among the done ones). */
static int cmp_ent(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? 1 : -1;
	return (y->tid != 0) - (x->tid != 0);
}

int cr_shanon_scan_end(struct cr_shanon *s)
{
	size_t n = 0, keep = 0, d = 0;

	if (s->nseen) {
		qsort(s->seen, s->nseen, sizeof(*s->seen), cmp_u64);
		for (size_t i = 0; i < s->nseen; i++)
			if (!i || s->seen[i] != s->seen[i - 1])
				n++;
	}
	if (n > s->n)
		return (int)(n - s->n);	/* made where no creation was seen */
	qsort(s->e, s->n, sizeof(*s->e), cmp_ent);
	s->bytes = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->e[i].tid || keep < n) {
			keep += !s->e[i].tid;
			s->bytes += s->e[i].len;
			s->e[d++] = s->e[i];
		}
	}
	s->n = d;
	return 0;
}
