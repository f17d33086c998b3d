/* tests/unit/test_listcache.c: the disk walk's kept listings
 * (tracer/budget/listcache.c): kept while corral's watch reports no change. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "harness.h"
#include "../../tracer/budget/budget.h"

/* A fresh directory under TMPDIR (or /tmp), and an O_PATH handle of it. */
static int fresh_dir(char *path, size_t cap, struct stat *st)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(path, cap, "%s/lc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(path))
		return -1;
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, st) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void in(char *out, size_t cap, const char *dir, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

/* Listed after the watch: kept; each kind of change of the entries (and
 * the directory's own removal) drops it, and a new listing keeps again. */
TEST_IMPL(listcache_kept_until_a_change_is_reported)
{
	struct cr_listcache *c = cr_listcache_new(CR_LISTCACHE_WATCHES);
	char dir[256], p[300], q[300];
	const char names[] = "a\0bb\0";
	struct stat st;
	size_t len = 0;
	int fd, wd;
	static const char *how[] = { "create", "mkdir", "unlink", "rename out",
				     "rename in", "link", "chmod", NULL };

	ASSERT(c);
	fd = fresh_dir(dir, sizeof(dir), &st);
	ASSERT(fd >= 0);
	in(p, sizeof(p), dir, "f");
	ASSERT(close(open(p, O_CREAT | O_WRONLY, 0600)) == 0);
	for (int k = 0; how[k]; k++) {
		ASSERT(!cr_listcache_get(c, &st, &len));
		wd = cr_listcache_watch(c, fd, &st);
		ASSERT(wd >= 0);
		cr_listcache_put(c, &st, wd, names, sizeof(names) - 1);
		ASSERT(cr_listcache_get(c, &st, &len));
		ASSERT_UEQ(len, sizeof(names) - 1);
		ASSERT(!memcmp(cr_listcache_get(c, &st, &len), names, len));
		/* What changes no name keeps it: a write into an entry, an
		 * entry's mode. */
		{
			int w = open(p, O_WRONLY | O_APPEND);

			ASSERT(w >= 0);
			ASSERT(write(w, "x", 1) == 1);
			close(w);
			ASSERT(chmod(p, 0600) == 0);
			ASSERT(cr_listcache_get(c, &st, &len));
		}
		in(q, sizeof(q), dir, "g");
		if (!strcmp(how[k], "create"))
			ASSERT(close(open(q, O_CREAT | O_WRONLY, 0600)) == 0);
		else if (!strcmp(how[k], "mkdir")) {
			char d[300];

			in(d, sizeof(d), dir, "d");
			ASSERT(mkdir(d, 0700) == 0 && rmdir(d) == 0);
		}
		else if (!strcmp(how[k], "unlink"))
			ASSERT(unlink(q) == 0);
		else if (!strcmp(how[k], "rename out")) {
			char out[300];

			snprintf(out, sizeof(out), "%s.out", dir);
			ASSERT(rename(p, out) == 0);
			ASSERT(rename(out, p) == 0);
		} else if (!strcmp(how[k], "rename in")) {
			ASSERT(rename(p, q) == 0 && rename(q, p) == 0);
		} else if (!strcmp(how[k], "link")) {
			ASSERT(link(p, q) == 0 && unlink(q) == 0);
		} else {	/* the directory's own mode: our search of it */
			ASSERT(chmod(dir, 0700) == 0);
		}
		ASSERT(!cr_listcache_get(c, &st, &len));
	}
	unlink(p);
	close(fd);
	rmdir(dir);
	cr_listcache_free(c);
}

/* A change between the watch and the put (while the walk lists): nothing
 * is kept; a put for an older watch of the same directory neither. */
TEST_IMPL(listcache_change_during_the_listing_keeps_nothing)
{
	struct cr_listcache *c = cr_listcache_new(CR_LISTCACHE_WATCHES);
	char dir[256], p[300];
	struct stat st;
	size_t len;
	int fd, wd, wd2;

	ASSERT(c);
	fd = fresh_dir(dir, sizeof(dir), &st);
	ASSERT(fd >= 0);
	wd = cr_listcache_watch(c, fd, &st);
	ASSERT(wd >= 0);
	in(p, sizeof(p), dir, "late");
	ASSERT(mkdir(p, 0700) == 0);
	cr_listcache_put(c, &st, wd, "", 0);
	ASSERT(!cr_listcache_get(c, &st, &len));
	wd2 = cr_listcache_watch(c, fd, &st);
	ASSERT_EQ(wd2, wd);		/* the same inode, the same watch */
	cr_listcache_put(c, &st, wd2, "late", 5);
	ASSERT(cr_listcache_get(c, &st, &len));
	/* The directory removed and its handle's inode gone: dropped. */
	ASSERT(rmdir(p) == 0);
	ASSERT(!cr_listcache_get(c, &st, &len));
	close(fd);
	ASSERT(rmdir(dir) == 0);
	ASSERT(!cr_listcache_get(c, &st, &len));
	cr_listcache_free(c);
}

/* A complete pass drops what it did not meet; at most
 * CR_LISTCACHE_WATCHES directories are watched, and their room comes back
 * after a sweep. */
TEST_IMPL(listcache_pass_drops_what_it_did_not_meet)
{
	struct cr_listcache *c = cr_listcache_new(CR_LISTCACHE_WATCHES);
	char dir[256], p[300];
	struct stat st, sa, sb;
	size_t len;
	int fd, fa, fb, wa, wb;

	ASSERT(c);
	fd = fresh_dir(dir, sizeof(dir), &st);
	ASSERT(fd >= 0);
	in(p, sizeof(p), dir, "a");
	ASSERT(mkdir(p, 0700) == 0);
	fa = open(p, O_PATH | O_DIRECTORY);
	in(p, sizeof(p), dir, "b");
	ASSERT(mkdir(p, 0700) == 0);
	fb = open(p, O_PATH | O_DIRECTORY);
	ASSERT(fa >= 0 && fb >= 0 && fstat(fa, &sa) == 0 && fstat(fb, &sb) == 0);
	cr_listcache_pass(c);
	wa = cr_listcache_watch(c, fa, &sa);
	wb = cr_listcache_watch(c, fb, &sb);
	ASSERT(wa >= 0 && wb >= 0 && wa != wb);
	cr_listcache_put(c, &sa, wa, "x", 2);
	cr_listcache_put(c, &sb, wb, "y", 2);
	cr_listcache_sweep(c);
	ASSERT(cr_listcache_get(c, &sa, &len));
	ASSERT(cr_listcache_get(c, &sb, &len));
	/* The next pass meets a only: b's listing goes at its end. */
	cr_listcache_pass(c);
	ASSERT(cr_listcache_get(c, &sa, &len));
	cr_listcache_sweep(c);
	ASSERT(!memcmp(cr_listcache_get(c, &sa, &len), "x", 2));
	ASSERT(!cr_listcache_get(c, &sb, &len));
	close(fa);
	close(fb);
	in(p, sizeof(p), dir, "a");
	rmdir(p);
	in(p, sizeof(p), dir, "b");
	rmdir(p);
	close(fd);
	rmdir(dir);
	cr_listcache_free(c);
}

/* Bounds: one directory's names past CR_LISTCACHE_DIR_BYTES are not kept;
 * directories past CR_LISTCACHE_WATCHES get no watch. */
TEST_IMPL(listcache_bounded)
{
	static char big[CR_LISTCACHE_DIR_BYTES + 1];
	struct cr_listcache *c = cr_listcache_new(CR_LISTCACHE_WATCHES);
	char dir[256], p[300];
	struct stat st;
	size_t len, watched = 0, n = CR_LISTCACHE_WATCHES + 8;
	int fd, wd, *fds;

	ASSERT(c);
	fd = fresh_dir(dir, sizeof(dir), &st);
	ASSERT(fd >= 0);
	memset(big, 'x', sizeof(big));
	wd = cr_listcache_watch(c, fd, &st);
	ASSERT(wd >= 0);
	cr_listcache_put(c, &st, wd, big, sizeof(big));
	ASSERT(!cr_listcache_get(c, &st, &len));
	fds = calloc(n, sizeof(int));
	ASSERT(fds);
	for (size_t i = 0; i < n; i++) {
		struct stat s;

		snprintf(p, sizeof(p), "%s/%zu", dir, i);
		ASSERT(mkdir(p, 0700) == 0);
		fds[i] = open(p, O_PATH | O_DIRECTORY);
		ASSERT(fds[i] >= 0 && fstat(fds[i], &s) == 0);
		watched += cr_listcache_watch(c, fds[i], &s) >= 0;
	}
	/* The top directory holds one of the watches. */
	ASSERT_UEQ(watched, (size_t)CR_LISTCACHE_WATCHES - 1);
	cr_listcache_free(c);
	/* A caller's smaller bound. */
	c = cr_listcache_new(3);
	ASSERT(c);
	watched = 0;
	for (size_t i = 0; i < 8; i++) {
		struct stat s;

		ASSERT(fstat(fds[i], &s) == 0);
		watched += cr_listcache_watch(c, fds[i], &s) >= 0;
	}
	ASSERT_UEQ(watched, (size_t)3);
	for (size_t i = 0; i < n; i++) {
		close(fds[i]);
		snprintf(p, sizeof(p), "%s/%zu", dir, i);
		rmdir(p);
	}
	free(fds);
	close(fd);
	rmdir(dir);
	cr_listcache_free(c);
}
