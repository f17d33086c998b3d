/* tests/unit/test_listcache.c: the disk walk's kept listings
 * (tracer/budget/listcache.c): kept while the directory stands still. */
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "../../tracer/budget/budget.h"

#define S (1000000000ull)

static struct stat dir_at(uint64_t ino, time_t ct, long ns)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_dev = 2049;
	st.st_ino = ino;
	st.st_ctim.tv_sec = ct;
	st.st_ctim.tv_nsec = ns;
	st.st_mtim = st.st_ctim;
	st.st_size = 4096;
	st.st_nlink = 2;
	return st;
}

TEST_IMPL(listcache_kept_while_the_ctime_stands)
{
	struct cr_listcache *c = cr_listcache_new();
	struct stat st = dir_at(7, 1000, 5), moved;
	const char names[] = "a\0bb\0";
	const char *got;
	size_t len = 0;

	ASSERT(c);
	ASSERT(!cr_listcache_get(c, &st, &len));
	/* Listed a second after its last change: kept. */
	cr_listcache_put(c, &st, 1001 * S + 5, names, sizeof(names) - 1);
	got = cr_listcache_get(c, &st, &len);
	ASSERT(got);
	ASSERT_UEQ(len, sizeof(names) - 1);
	ASSERT(!memcmp(got, names, len));
	/* Any of ctime, mtime, size, links moved: not its names any more. */
	moved = st;
	moved.st_ctim.tv_nsec++;
	ASSERT(!cr_listcache_get(c, &moved, &len));
	moved = st;
	moved.st_mtim.tv_sec++;
	ASSERT(!cr_listcache_get(c, &moved, &len));
	moved = st;
	moved.st_size += 4096;
	ASSERT(!cr_listcache_get(c, &moved, &len));
	moved = st;
	moved.st_nlink++;
	ASSERT(!cr_listcache_get(c, &moved, &len));
	/* Another inode, or the same number on another device. */
	moved = st;
	moved.st_ino = 8;
	ASSERT(!cr_listcache_get(c, &moved, &len));
	moved = st;
	moved.st_dev = 2050;
	ASSERT(!cr_listcache_get(c, &moved, &len));
	cr_listcache_free(c);
}

TEST_IMPL(listcache_unsettled_ctime_keeps_nothing)
{
	struct cr_listcache *c = cr_listcache_new();
	struct stat st = dir_at(7, 1000, 1), whole = dir_at(8, 1000, 0);
	size_t len;

	ASSERT(c);
	cr_listcache_put(c, &st, 1000 * S + 1, "a", 2);
	/* Listed within the settling margin of its change: not kept. */
	cr_listcache_put(c, &st, 1000 * S + CR_LISTCACHE_SETTLED_NS, "a", 2);
	ASSERT(!cr_listcache_get(c, &st, &len));
	cr_listcache_put(c, &st, 1000 * S + 1 + CR_LISTCACHE_SETTLED_NS,
			 "a", 2);
	ASSERT(cr_listcache_get(c, &st, &len));
	/* A later listing that cannot be kept drops the older one. */
	cr_listcache_put(c, &st, 1000 * S, "a", 2);
	ASSERT(!cr_listcache_get(c, &st, &len));
	/* A ctime of whole seconds may be the filesystem's granularity:
	 * never kept, however old. */
	cr_listcache_put(c, &whole, 5000 * S, "a", 2);
	ASSERT(!cr_listcache_get(c, &whole, &len));
	cr_listcache_free(c);
}

TEST_IMPL(listcache_pass_drops_what_it_did_not_meet)
{
	struct cr_listcache *c = cr_listcache_new();
	struct stat a = dir_at(1, 10, 3), b = dir_at(2, 10, 3);
	size_t len;

	ASSERT(c);
	cr_listcache_pass(c);
	cr_listcache_put(c, &a, 20 * S, "x", 2);
	cr_listcache_put(c, &b, 20 * S, "y", 2);
	cr_listcache_sweep(c);
	ASSERT(cr_listcache_get(c, &a, &len));
	ASSERT(cr_listcache_get(c, &b, &len));
	/* The next pass meets a only: b (removed) goes at its end. */
	cr_listcache_pass(c);
	ASSERT(cr_listcache_get(c, &a, &len));
	cr_listcache_sweep(c);
	ASSERT(cr_listcache_get(c, &a, &len));
	ASSERT(!memcmp(cr_listcache_get(c, &a, &len), "x", 2));
	ASSERT(!cr_listcache_get(c, &b, &len));
	cr_listcache_free(c);
}

TEST_IMPL(listcache_empty_listings_are_bounded_too)
{
	struct cr_listcache *c = cr_listcache_new();
	size_t len, kept = 0, n = 400000;

	ASSERT(c);
	for (uint64_t i = 0; i < n; i++) {
		struct stat st = dir_at(1000 + i, 10, 3);

		cr_listcache_put(c, &st, 20 * S, "", 0);
	}
	for (uint64_t i = 0; i < n; i++) {
		struct stat st = dir_at(1000 + i, 10, 3);

		kept += cr_listcache_get(c, &st, &len) != NULL;
	}
	ASSERT(kept > 0);
	ASSERT(kept < n);
	cr_listcache_free(c);
}

TEST_IMPL(listcache_bounded)
{
	static char big[CR_LISTCACHE_DIR_BYTES + 1];
	struct cr_listcache *c = cr_listcache_new();
	size_t len, kept = 0;

	ASSERT(c);
	memset(big, 'x', sizeof(big));
	/* One directory past its bound: not kept. */
	{
		struct stat st = dir_at(1, 1, 7);

		cr_listcache_put(c, &st, 10 * S, big, sizeof(big));
		ASSERT(!cr_listcache_get(c, &st, &len));
	}
	/* Many at their bound: no more than the whole's bound kept. */
	for (uint64_t i = 0; i < 2 * CR_LISTCACHE_BYTES / CR_LISTCACHE_DIR_BYTES; i++) {
		struct stat st = dir_at(100 + i, 1, 7);

		cr_listcache_put(c, &st, 10 * S, big, CR_LISTCACHE_DIR_BYTES);
		if (cr_listcache_get(c, &st, &len))
			kept += len;
	}
	ASSERT(kept > 0);
	ASSERT(kept <= CR_LISTCACHE_BYTES);
	cr_listcache_free(c);
}
