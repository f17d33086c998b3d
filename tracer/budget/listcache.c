/* tracer/budget/listcache.c: the names of each directory the disk walk
 * listed, kept while corral's own inotify watch on it reports no change. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>

#include "budget.h"

/*
 * Each listing is an open, a getdents and a close of the directory, which
 * an inotify watch of the program's there reports (OPEN, ACCESS,
 * CLOSE_NOWRITE: ~160 events a second per directory; a watcher reading in
 * batches lost its own events behind them, and dnotify's DN_ACCESS
 * signalled at each). So the walk keeps a directory's names and stats
 * them again through an O_PATH handle, which no watch reports, while the
 * directory's entries have not changed. How it knows: an inotify
 * instance of corral's own watches every directory whose names are kept,
 * for every event that changes its entries (made, removed, moved in or
 * out) or the directory itself (removed, moved, its mode or owner
 * changed: the walk's right to search it); the kernel queues them
 * in the call that made the change. The watch is placed before the
 * listing begins, and any event on it since, or a lost event
 * (IN_Q_OVERFLOW: every listing goes), or the watch's end (IN_IGNORED),
 * drops the names. Asking a directory's times instead (an earlier form)
 * made the program's timestamps fine-grained on Linux 6.13+ (multigrain
 * stamps: an inode whose times were asked for is stamped finely at its
 * next change); a watch asks nothing.
 *
 * Bounds: at most CR_LISTCACHE_WATCHES watches, and what the caller allows
 * (each pins an inode in the kernel and counts against the user's
 * fs.inotify.max_user_watches),
 * CR_LISTCACHE_DIR_BYTES of names for one directory and CR_LISTCACHE_BYTES
 * in all (names and table); the listings of directories a complete pass
 * did not meet are dropped at its end, their watches removed. Past a
 * bound, or when the instance or a watch cannot be made, a directory is
 * listed at each pass as before.
 *
 * Entries are keyed (dev + 1, ino); open addressing, linear probing, at
 * most half full; a second table finds an entry's key from its watch
 * descriptor, for the events. Both are made again at a sweep.
 */

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
		    IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB | IN_ONLYDIR)

struct lentry {
	uint64_t dev;		/* st_dev + 1; 0: empty */
	uint64_t ino;
	int wd;			/* our watch on it, -1 none */
	bool clean;		/* no event on wd since it was placed */
	uint64_t gen;		/* the last pass that met it */
	char *names;		/* owned, NUL-separated; NULL: none kept */
	size_t len;
};

struct wslot {			/* wd -> key */
	int wd;			/* -1: empty */
	uint64_t dev, ino;
};

struct cr_listcache {
	int ifd;		/* the inotify instance */
	struct lentry *v;
	size_t cap, n, bytes;
	struct wslot *w;
	size_t wcap, wn;
	uint64_t gen;		/* the pass in progress */
	size_t most;		/* entries (watches) at most */
	bool broken;		/* ifd could not be read: nothing kept */
	_Alignas(struct inotify_event) char buf[16384];
};

/* What an entry costs against CR_LISTCACHE_BYTES besides its names: its
 * share of the tables (an empty directory's listing is no free slot:
 * 900 000 made and removed grew corral by 125 MB, found by a probing
 * session). */
#define ENTRY_COST (2 * sizeof(struct lentry) + 2 * sizeof(struct wslot))

struct cr_listcache *cr_listcache_new(size_t watches)
{
	struct cr_listcache *c = calloc(1, sizeof(struct cr_listcache));

	if (!c)
		return NULL;
	c->most = watches < CR_LISTCACHE_WATCHES ? watches : CR_LISTCACHE_WATCHES;
	c->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (c->ifd < 0) {	/* the user's instances taken: every pass lists */
		free(c);
		return NULL;
	}
	return c;
}

void cr_listcache_free(struct cr_listcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		free(c->v[i].names);
	free(c->v);
	free(c->w);
	close(c->ifd);		/* and every watch with it */
	free(c);
}

static size_t slot(const struct cr_listcache *c, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino * 0x9e3779b97f4a7c15ull) ^ (dev * 0xc2b2ae3d27d4eb4full);

	return (size_t)(h >> 17) & (c->cap - 1);
}

static size_t wslot_of(const struct cr_listcache *c, int wd)
{
	return (size_t)(((uint64_t)(unsigned)wd * 0x9e3779b97f4a7c15ull) >> 17) &
	       (c->wcap - 1);
}

static struct lentry *find(const struct cr_listcache *c, uint64_t dev,
			   uint64_t ino)
{
	if (!c->cap)
		return NULL;
	for (size_t i = slot(c, dev, ino);; i = (i + 1) & (c->cap - 1)) {
		if (!c->v[i].dev)
			return NULL;
		if (c->v[i].dev == dev && c->v[i].ino == ino)
			return &c->v[i];
	}
}

static struct wslot *wfind(const struct cr_listcache *c, int wd)
{
	if (!c->wcap)
		return NULL;
	for (size_t i = wslot_of(c, wd);; i = (i + 1) & (c->wcap - 1)) {
		if (c->w[i].wd < 0)
			return NULL;
		if (c->w[i].wd == wd)
			return &c->w[i];
	}
}

static void drop_names(struct cr_listcache *c, struct lentry *e)
{
	if (e->names)
		c->bytes -= e->len;
	free(e->names);
	e->names = NULL;
	e->len = 0;
	e->clean = false;
}

static void drop_all(struct cr_listcache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		if (c->v[i].dev)
			drop_names(c, &c->v[i]);
}

/* Read what the kernel queued: every entry an event names loses its
 * names; a lost event loses them all. An instance that cannot be read
 * keeps nothing from now on (the caller sees no listing kept). */
static void drain(struct cr_listcache *c)
{
	for (;;) {
		ssize_t n = read(c->ifd, c->buf, sizeof(c->buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN) {
				drop_all(c);
				c->broken = true;
			}
			return;
		}
		for (ssize_t i = 0; i + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev =
				(const struct inotify_event *)(c->buf + i);
			struct wslot *s;
			struct lentry *e;

			i += (ssize_t)(sizeof(*ev) + ev->len);
			if (ev->mask & IN_Q_OVERFLOW) {
				drop_all(c);
				continue;
			}
			/* A mode or owner changed: the directory's own may
			 * take away our search of its names (another
			 * user's made 0700 ended a run on a kept listing,
			 * found by a probing session); an entry's changes
			 * no name. */
			if ((ev->mask & IN_ATTRIB) && ev->len)
				continue;
			if (!(s = wfind(c, ev->wd)))
				continue;
			e = find(c, s->dev, s->ino);
			if (e && e->wd == ev->wd) {
				drop_names(c, e);
				if (ev->mask & IN_IGNORED)
					e->wd = -1;	/* the watch is gone */
			}
		}
	}
}

const char *cr_listcache_get(struct cr_listcache *c,
			     const struct stat *st, size_t *len)
{
	struct lentry *e;

	if (!c)
		return NULL;
	drain(c);
	e = find(c, (uint64_t)st->st_dev + 1, (uint64_t)st->st_ino);
	if (e)
		e->gen = c->gen;	/* met: kept past this pass's sweep */
	if (c->broken || !e || !e->names || !e->clean || e->wd < 0)
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

static int wgrow(struct cr_listcache *c)
{
	size_t cap = c->wcap ? c->wcap * 2 : 256;
	struct wslot *w = malloc(cap * sizeof(*w)), *old = c->w;
	size_t ocap = c->wcap;

	if (!w)
		return -1;
	for (size_t i = 0; i < cap; i++)
		w[i].wd = -1;
	c->w = w;
	c->wcap = cap;
	for (size_t i = 0; i < ocap; i++) {
		size_t j;

		if (old[i].wd < 0)
			continue;
		for (j = wslot_of(c, old[i].wd); w[j].wd >= 0;
		     j = (j + 1) & (cap - 1))
			;
		w[j] = old[i];
	}
	free(old);
	return 0;
}

/* Index wd -> (dev, ino); a wd already there is pointed at the key. */
static int windex(struct cr_listcache *c, int wd, uint64_t dev, uint64_t ino)
{
	struct wslot *s = wfind(c, wd);
	size_t j;

	if (s) {
		s->dev = dev;
		s->ino = ino;
		return 0;
	}
	if ((c->wn + 1) * 2 > c->wcap && wgrow(c) < 0)
		return -1;
	for (j = wslot_of(c, wd); c->w[j].wd >= 0; j = (j + 1) & (c->wcap - 1))
		;
	c->w[j].wd = wd;
	c->w[j].dev = dev;
	c->w[j].ino = ino;
	c->wn++;
	return 0;
}

int cr_listcache_watch(struct cr_listcache *c, int opath, const struct stat *st)
{
	uint64_t dev = (uint64_t)st->st_dev + 1, ino = (uint64_t)st->st_ino;
	char p[64];
	struct lentry *e;
	int wd;

	if (!c)
		return -1;
	drain(c);
	if (c->broken)
		return -1;
	e = find(c, dev, ino);
	if (e) {		/* the older listing goes whatever follows */
		drop_names(c, e);
		e->gen = c->gen;
	}
	if (!e && (c->n >= c->most ||
		   c->bytes + ENTRY_COST > CR_LISTCACHE_BYTES))
		return -1;
	if (!e && (c->n + 1) * 2 > c->cap && grow(c) < 0)
		return -1;
	/* The handle's inode, whatever name it has now (the magic link is
	 * followed to it, never a path the program could swap). */
	snprintf(p, sizeof(p), "/proc/self/fd/%d", opath);
	wd = inotify_add_watch(c->ifd, p, WATCH_MASK);
	if (wd < 0)
		return -1;
	/* The same number, another inode (the old one's watch outlived
	 * it in our tables): that watch goes. Its stale index slot is
	 * ignored (an event counts only for the entry's own wd). */
	if (e && e->wd >= 0 && e->wd != wd)
		inotify_rm_watch(c->ifd, e->wd);
	if (windex(c, wd, dev, ino) < 0) {
		inotify_rm_watch(c->ifd, wd);
		if (e)
			e->wd = -1;
		return -1;
	}
	if (!e) {
		size_t i;

		for (i = slot(c, dev, ino); c->v[i].dev; i = (i + 1) & (c->cap - 1))
			;
		e = &c->v[i];
		e->dev = dev;
		e->ino = ino;
		c->n++;
		c->bytes += ENTRY_COST;
	}
	e->wd = wd;
	e->clean = true;	/* from now on, any event drops it */
	e->gen = c->gen;
	return wd;
}

void cr_listcache_put(struct cr_listcache *c, const struct stat *st, int wd,
		      const char *names, size_t len)
{
	struct lentry *e;
	char *copy;

	if (!c || wd < 0)
		return;
	drain(c);
	e = find(c, (uint64_t)st->st_dev + 1, (uint64_t)st->st_ino);
	/* Changed while it was listed, or watched again since: not kept. */
	if (!e || e->wd != wd || !e->clean || e->names ||
	    len > CR_LISTCACHE_DIR_BYTES ||
	    c->bytes + len > CR_LISTCACHE_BYTES)
		return;
	if (!(copy = malloc(len ? len : 1)))
		return;
	memcpy(copy, names, len);
	e->names = copy;
	e->len = len;
	c->bytes += len;
	e->gen = c->gen;
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
	drain(c);
	for (size_t i = 0; i < c->cap; i++)
		if (c->v[i].dev && c->v[i].gen == c->gen && c->v[i].wd >= 0)
			live++;
	if (live == c->n)
		return;
	/* Directories the pass did not meet are gone (or moved out of the
	 * roots): their listings and watches go, and the tables are made
	 * again with the others (open addressing leaves no hole to punch). */
	old = c->v;
	ocap = c->cap;
	c->v = NULL;
	c->cap = c->n = c->bytes = 0;
	for (size_t i = 0; i < c->wcap; i++)
		c->w[i].wd = -1;
	c->wn = 0;
	for (size_t i = 0; i < ocap; i++) {
		struct lentry *e = &old[i], *d;
		size_t j;

		if (!e->dev)
			continue;
		if (e->gen != c->gen || e->wd < 0 ||
		    ((c->n + 1) * 2 > c->cap && grow(c) < 0) ||
		    windex(c, e->wd, e->dev, e->ino) < 0) {
			if (e->wd >= 0)
				inotify_rm_watch(c->ifd, e->wd);
			free(e->names);
			continue;
		}
		for (j = slot(c, e->dev, e->ino); c->v[j].dev;
		     j = (j + 1) & (c->cap - 1))
			;
		d = &c->v[j];
		*d = *e;
		c->n++;
		c->bytes += ENTRY_COST + (e->names ? e->len : 0);
	}
	free(old);
}
