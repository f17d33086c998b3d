/* tracer/budget/pipeshare.c: the run's share of its user's pipe allowance
 * (fs.pipe-user-pages-soft): the slots of the run's live pipes, counted. */
#include <errno.h>
#include <stdlib.h>

#include "pipeshare.h"

/*
 * The kernel counts every pipe's slots against its owner's allowance,
 * and past the soft limit gives that user's new pipes 2 slots and refuses
 * to grow any (EPERM). corral makes the run's pipes as the same user, so
 * a run of 63 empty pipes raised to 1 MiB took the whole allowance from
 * the user's other programs while it lived (found by a probing session).
 * The run keeps to a share: its pipes are recorded with their slots, and
 * past the share it gets what the kernel gives a user past the soft
 * limit. Pipes go without notice; the table is refreshed from the weak
 * set of the run's pipes (pipes.c) when the share would be passed or the
 * table has doubled since the last refresh, so the sum errs high between.
 */

struct ent {
	uint64_t ino;
	uint32_t slots;
	uint32_t alive;	/* during a refresh */
};

struct cr_pipeshare {
	struct ent *e;
	size_t n, cap, at_refresh;
	uint64_t total, share;
};

struct cr_pipeshare *cr_pipeshare_new(uint64_t share)
{
	struct cr_pipeshare *s = calloc(1, sizeof(*s));

	if (s)
		s->share = share;
	return s;
}

void cr_pipeshare_free(struct cr_pipeshare *s)
{
	if (s)
		free(s->e);
	free(s);
}

static struct ent *find(struct cr_pipeshare *s, uint64_t ino)
{
	for (size_t i = s->n; i-- > 0;)
		if (s->e[i].ino == ino)
			return &s->e[i];
	return NULL;
}

int cr_pipeshare_set(struct cr_pipeshare *s, uint64_t ino, unsigned slots,
		     bool fresh)
{
	struct ent *e = fresh ? NULL : find(s, ino);

	if (e) {
		s->total += slots;
		s->total -= e->slots;
		e->slots = slots;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct ent *g = realloc(s->e, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		s->e = g;
		s->cap = cap;
	}
	s->e[s->n++] = (struct ent){ .ino = ino, .slots = slots };
	s->total += slots;
	return 0;
}

unsigned cr_pipeshare_slots(struct cr_pipeshare *s, uint64_t ino)
{
	struct ent *e = find(s, ino);

	return e ? e->slots : 0;
}

bool cr_pipeshare_fits(const struct cr_pipeshare *s, uint64_t more)
{
	return !s->share || s->total + more <= s->share;
}

bool cr_pipeshare_stale(const struct cr_pipeshare *s)
{
	return s->n > 2 * s->at_refresh + 1024;
}

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct ent *)a)->ino;
	uint64_t y = ((const struct ent *)b)->ino;

	return x < y ? -1 : x > y;
}

void cr_pipeshare_refresh_begin(struct cr_pipeshare *s)
{
	if (s->n)
		qsort(s->e, s->n, sizeof(*s->e), cmp_ino);
	for (size_t i = 0; i < s->n; i++)
		s->e[i].alive = 0;
}

void cr_pipeshare_alive(struct cr_pipeshare *s, uint64_t ino)
{
	struct ent key = { .ino = ino };
	struct ent *e = s->n ? bsearch(&key, s->e, s->n, sizeof(*s->e),
				       cmp_ino) : NULL;

	if (e)
		e->alive = 1;
}

void cr_pipeshare_refresh_end(struct cr_pipeshare *s)
{
	size_t d = 0;

	s->total = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].alive) {
			s->total += s->e[i].slots;
			s->e[d++] = s->e[i];
		}
	s->n = d;
	s->at_refresh = d;
}

uint64_t cr_pipeshare_total(const struct cr_pipeshare *s)
{
	return s->total;
}

size_t cr_pipeshare_count(const struct cr_pipeshare *s)
{
	return s->n;
}
