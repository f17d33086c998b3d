/* tracer/budget/listcache.c: the names of each directory the disk walk
 * listed, kept while its ctime stands still, so a pass need not list it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "budget.h"

/*
 * Each listing is an open, a getdents and a close of the directory, which
 * an inotify watch there reports (OPEN, ACCESS, CLOSE_NOWRITE: ~160 events
 * a second per directory; a watcher reading in batches lost its own events
 * behind them, and dnotify's DN_ACCESS signalled at each). A directory's
 * ctime moves whenever an entry is made, removed or renamed in it (and on
 * any change of its own inode), so names listed when the ctime was C are
 * still its names while the ctime is C: the walk then stats them through
 * an O_PATH handle, which no watch reports. Two guards:
 * - timestamps are as coarse as the kernel's clock tick on some
 *   filesystems and kernels: a listing is kept only if the ctime was at
 *   least CR_LISTCACHE_SETTLED_NS older than the moment the listing began
 *   (a change in the same tick after the listing would leave the ctime
 *   as it was);
 * - at most CR_LISTCACHE_BYTES in all (names and table: cost()), and none
 *   of a directory past CR_LISTCACHE_DIR_BYTES: past that, listed every
 *   pass as before; the listings of directories a complete pass did not
 *   meet are dropped at its end (cr_listcache_sweep);
 * - a ctime of whole seconds is not trusted (a filesystem's granularity).
 * A listing that cannot be kept is simply not kept: the walk then lists.
 *
 * Keyed (dev + 1, ino) with the ctime (and the mtime, size and link count,
 * which move with the entries on these filesystems too: a second witness
 * should a clock stepped back give a change its listing's ctime); open
 * addressing, linear probing, at
 * most half full. An entry is replaced by the next listing of its inode.
 */

struct lentry {
	uint64_t dev;		/* st_dev + 1; 0: empty */
	uint64_t ino;
	int64_t ct_sec, ct_nsec;
	int64_t mt_sec, mt_nsec;	/* and its mtime, size and links: */
	int64_t size;			/* any one moved is a change */
	uint64_t nlink;
	uint64_t gen;		/* the last pass that met it */
	char *names;		/* owned, NUL-separated */
	size_t len;
};

struct cr_listcache {
	struct lentry *v;
	size_t cap, n, bytes;
	uint64_t gen;		/* the pass in progress */
};

/* What an entry costs against CR_LISTCACHE_BYTES: its names and its share
 * of the table (an empty directory's listing is no free slot: 900 000
 * made and removed grew corral by 125 MB, found by a probing session). */
static size_t cost(size_t len)
{
	return len + 2 * sizeof(struct lentry);
}

struct cr_listcache *cr_listcache_new(void)
{
	return calloc(1, sizeof(struct cr_listcache));
}

void cr_listcache_free(struct cr_listcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		free(c->v[i].names);
	free(c->v);
	free(c);
}

static size_t slot(const struct cr_listcache *c, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino * 0x9e3779b97f4a7c15ull) ^ (dev * 0xc2b2ae3d27d4eb4full);

	return (size_t)(h >> 17) & (c->cap - 1);
}

static struct lentry *find(const struct cr_listcache *c, uint64_t dev,
			   uint64_t ino)
{
	if (!c || !c->cap)
		return NULL;
	for (size_t i = slot(c, dev, ino);; i = (i + 1) & (c->cap - 1)) {
		if (!c->v[i].dev)
			return NULL;
		if (c->v[i].dev == dev && c->v[i].ino == ino)
			return &c->v[i];
	}
}

const char *cr_listcache_get(struct cr_listcache *c,
			     const struct stat *st, size_t *len)
{
	struct lentry *e = find(c, (uint64_t)st->st_dev + 1,
				(uint64_t)st->st_ino);

	if (e)
		e->gen = c->gen;	/* met: kept past this pass's sweep */
	if (!e || !e->names || e->ct_sec != (int64_t)st->st_ctim.tv_sec ||
	    e->ct_nsec != (int64_t)st->st_ctim.tv_nsec ||
	    e->mt_sec != (int64_t)st->st_mtim.tv_sec ||
	    e->mt_nsec != (int64_t)st->st_mtim.tv_nsec ||
	    e->size != (int64_t)st->st_size ||
	    e->nlink != (uint64_t)st->st_nlink)
		return NULL;
	*len = e->len;
	return e->names;
}

static int grow(struct cr_listcache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 256;
	struct lentry *v = calloc(cap, sizeof(*v)), *old = c->v;
	size_t ocap = c->cap;

	if (!v)
		return -1;
	c->v = v;
	c->cap = cap;
	for (size_t i = 0; i < ocap; i++) {
		size_t j;

		if (!old[i].dev)
			continue;
		for (j = slot(c, old[i].dev, old[i].ino); v[j].dev;
		     j = (j + 1) & (cap - 1))
			;
		v[j] = old[i];
	}
	free(old);
	return 0;
}

void cr_listcache_put(struct cr_listcache *c, const struct stat *st,
		      uint64_t listed_ns, const char *names, size_t len)
{
	uint64_t dev = (uint64_t)st->st_dev + 1, ino = (uint64_t)st->st_ino;
	uint64_t ct = (uint64_t)st->st_ctim.tv_sec * 1000000000ull +
		      (uint64_t)st->st_ctim.tv_nsec;
	struct lentry *e;
	char *copy;

	if (!c)
		return;
	e = find(c, dev, ino);
	if (e) {		/* the older listing goes whatever follows */
		if (e->names)
			c->bytes -= cost(e->len);
		free(e->names);
		e->names = NULL;
		e->len = 0;
		e->gen = c->gen;
	}
	/* A ctime of whole seconds may be a filesystem's granularity (ext4
	 * with 128-byte inodes): a change within that second would leave it
	 * as it was, past any margin in nanoseconds (found by a probing
	 * session, from the kernel's source). Not kept. */
	if (st->st_ctim.tv_sec < 0 || !st->st_ctim.tv_nsec ||
	    ct + CR_LISTCACHE_SETTLED_NS > listed_ns ||
	    len > CR_LISTCACHE_DIR_BYTES ||
	    c->bytes + cost(len) > CR_LISTCACHE_BYTES)
		return;
	if (!e && (c->n + 1) * 2 > c->cap) {
		if (grow(c) < 0)
			return;
	}
	if (!(copy = malloc(len ? len : 1)))
		return;
	memcpy(copy, names, len);
	if (!e) {
		size_t i;

		for (i = slot(c, dev, ino); c->v[i].dev; i = (i + 1) & (c->cap - 1))
			;
		e = &c->v[i];
		e->dev = dev;
		e->ino = ino;
		c->n++;
	}
	e->ct_sec = (int64_t)st->st_ctim.tv_sec;
	e->ct_nsec = (int64_t)st->st_ctim.tv_nsec;
	e->mt_sec = (int64_t)st->st_mtim.tv_sec;
	e->mt_nsec = (int64_t)st->st_mtim.tv_nsec;
	e->size = (int64_t)st->st_size;
	e->nlink = (uint64_t)st->st_nlink;
	e->names = copy;
	e->len = len;
	e->gen = c->gen;
	c->bytes += cost(len);
}

void cr_listcache_pass(struct cr_listcache *c)
{
	if (c)
		c->gen++;
}

void cr_listcache_sweep(struct cr_listcache *c)
{
	struct lentry *old;
	size_t ocap, live = 0;

	if (!c || !c->cap)
		return;
	for (size_t i = 0; i < c->cap; i++)
		if (c->v[i].dev && c->v[i].gen == c->gen)
			live++;
	if (live == c->n)
		return;
	/* Directories the pass did not meet are gone (or moved out of the
	 * roots): their listings go, and the table is made again with the
	 * others (open addressing leaves no hole to punch). */
	old = c->v;
	ocap = c->cap;
	c->v = NULL;
	c->cap = c->n = c->bytes = 0;
	for (size_t i = 0; i < ocap; i++) {
		struct lentry *e = &old[i], *d;
		size_t j;

		if (!e->dev)
			continue;
		if (e->gen != c->gen || !e->names ||
		    ((c->n + 1) * 2 > c->cap && grow(c) < 0)) {
			free(e->names);
			continue;
		}
		for (j = slot(c, e->dev, e->ino); c->v[j].dev;
		     j = (j + 1) & (c->cap - 1))
			;
		d = &c->v[j];
		*d = *e;
		c->n++;
		c->bytes += cost(e->len);
	}
	free(old);
}

uint64_t cr_listcache_now_ns(void)
{
	struct timespec ts;

	/* The clock the kernel stamps ctimes with (a coarse reading of it;
	 * the settled margin covers the difference). */
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
