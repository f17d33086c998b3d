/* tracer/budget/walkset.c: what one pass of the disk walk has measured (a set
 * of inodes), and what the run moved or made in the writable roots meanwhile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"

/*
 * A pass over a large tree is spread over ticks, and the loop performs the
 * program's renames, links and creations between two slices of it: an
 * object can go from the part not walked yet to the part already walked
 * and miss the pass. The pass keeps here every inode it measured and a
 * handle (an O_PATH descriptor, which follows the inode wherever its names
 * go) on every object given a new name while it ran; disk.c measures at
 * the end of the pass what the walk did not meet.
 *
 * An inode is a key (dev + 1, ino): 0 marks an empty slot. The table is
 * open addressing with linear probing, at most half full, cleared at each
 * pass. Growing past `max` entries or failing to allocate is answered with
 * an error: the caller then redoes the pass in one go rather than count
 * less.
 */

struct seen {
	uint64_t dev;		/* st_dev + 1; 0: empty */
	uint64_t ino;
	uint64_t counted;	/* bytes the pass counted for it */
};

struct placed {
	uint64_t dev, ino;
	int fd;			/* owned, O_PATH */
};

struct cr_walkset {
	struct seen *v;		/* owned */
	size_t cap, n, max;	/* cap: a power of two, or 0 */
	struct placed *p;	/* owned */
	size_t np, pcap, pmax;
};

struct cr_walkset *cr_walkset_new(size_t placed_max)
{
	struct cr_walkset *w = calloc(1, sizeof(*w));

	if (w)
		w->pmax = placed_max;
	return w;
}

static void drop_placed(struct cr_walkset *w)
{
	for (size_t i = 0; i < w->np; i++)
		close(w->p[i].fd);
	w->np = 0;
}

void cr_walkset_free(struct cr_walkset *w)
{
	if (!w)
		return;
	drop_placed(w);
	free(w->p);
	free(w->v);
	free(w);
}

void cr_walkset_clear(struct cr_walkset *w, size_t max)
{
	if (w->n)
		memset(w->v, 0, w->cap * sizeof(*w->v));
	w->n = 0;
	w->max = max;
	drop_placed(w);
}

static size_t slot_of(uint64_t dev, uint64_t ino, size_t cap)
{
	uint64_t h = (ino ^ (dev * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (size_t)(h ^ (h >> 32)) & (cap - 1);
}

static struct seen *find(struct cr_walkset *w, uint64_t dev, uint64_t ino)
{
	size_t i = slot_of(dev, ino, w->cap);

	while (w->v[i].dev && !(w->v[i].dev == dev && w->v[i].ino == ino))
		i = (i + 1) & (w->cap - 1);
	return &w->v[i];
}

static int grow(struct cr_walkset *w)
{
	size_t cap = w->cap ? w->cap * 2 : 1024;
	struct seen *old = w->v, *v;

	if (cap / 2 < w->cap || cap > SIZE_MAX / sizeof(*v))
		return -E2BIG;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->v = v;
	w->cap = cap;
	for (size_t i = 0; old && i < cap / 2; i++)
		if (old[i].dev)
			*find(w, old[i].dev, old[i].ino) = old[i];
	free(old);
	return 0;
}

int cr_walkset_see(struct cr_walkset *w, dev_t dev, ino_t ino,
		   uint64_t **counted)
{
	uint64_t d = (uint64_t)dev + 1;
	struct seen *s;
	int rc;

	if (w->cap) {
		s = find(w, d, (uint64_t)ino);
		if (s->dev) {
			*counted = &s->counted;
			return 1;
		}
	}
	if (w->n >= w->max)
		return -E2BIG;
	if (w->n + 1 > w->cap / 2 && (rc = grow(w)))
		return rc;
	s = find(w, d, (uint64_t)ino);
	*s = (struct seen){ d, (uint64_t)ino, 0 };
	w->n++;
	*counted = &s->counted;
	return 0;
}

int cr_walkset_place(struct cr_walkset *w, int fd, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < w->np; i++)
		if (w->p[i].dev == (uint64_t)dev && w->p[i].ino == (uint64_t)ino) {
			close(fd);	/* the handle we hold follows it */
			return 0;
		}
	if (w->np >= w->pmax) {
		close(fd);
		return -E2BIG;
	}
	if (w->np == w->pcap) {
		size_t cap = w->pcap ? w->pcap * 2 : 64;
		struct placed *p = realloc(w->p, cap * sizeof(*p));

		if (!p) {
			close(fd);
			return -ENOMEM;
		}
		w->p = p;
		w->pcap = cap;
	}
	w->p[w->np++] = (struct placed){ (uint64_t)dev, (uint64_t)ino, fd };
	return 0;
}

void cr_walkset_forget(struct cr_walkset *w, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < w->np; i++)
		if (w->p[i].dev == (uint64_t)dev && w->p[i].ino == (uint64_t)ino) {
			close(w->p[i].fd);
			w->p[i] = w->p[--w->np];
			return;
		}
}

size_t cr_walkset_nplaced(const struct cr_walkset *w)
{
	return w->np;
}

int cr_walkset_placed_fd(const struct cr_walkset *w, size_t i)
{
	return w->p[i].fd;
}
