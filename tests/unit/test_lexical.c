/* tests/unit/test_lexical.c: cr_path_lexical (policy/util.c), the one
 * spelling under which the audit's alerts count a denied path; and the
 * sorted number sets beside it. */
#include <limits.h>

#include "harness.h"

static const char *lex(const char *base, const char *path)
{
	static char out[PATH_MAX];
	int rc = cr_path_lexical(base, path, out, sizeof(out));

	return rc ? "(error)" : out;
}

TEST_IMPL(path_lexical)
{
	ASSERT_STREQ(lex(NULL, "/root/.ssh/id_rsa"), "/root/.ssh/id_rsa");
	ASSERT_STREQ(lex(NULL, "/root/.ssh/./id_rsa"), "/root/.ssh/id_rsa");
	ASSERT_STREQ(lex(NULL, "/root/.ssh/././././id_rsa"),
		     "/root/.ssh/id_rsa");
	ASSERT_STREQ(lex(NULL, "//root//.ssh///id_rsa/"), "/root/.ssh/id_rsa");
	ASSERT_STREQ(lex(NULL, "/root/.ssh/../.ssh/id_rsa"),
		     "/root/.ssh/id_rsa");
	ASSERT_STREQ(lex(NULL, "/root/x/y/../../.ssh/id_rsa"),
		     "/root/.ssh/id_rsa");
	ASSERT_STREQ(lex(NULL, "/../../root/.ssh/id_rsa"), "/root/.ssh/id_rsa");
	ASSERT_STREQ(lex(NULL, "/etc/./shadow"), "/etc/shadow");
	ASSERT_STREQ(lex(NULL, "/"), "/");
	ASSERT_STREQ(lex(NULL, "/.."), "/");
	ASSERT_STREQ(lex(NULL, "/a/.."), "/");
	ASSERT_STREQ(lex(NULL, "/a/b/.."), "/a");
	ASSERT_STREQ(lex(NULL, "/..a/b../..."), "/..a/b../...");
	/* Relative: against base, or kept relative. */
	ASSERT_STREQ(lex("/home/u/ws", "../.ssh/./id_rsa"), "/home/u/.ssh/id_rsa");
	ASSERT_STREQ(lex("/home/u/ws/", "./../../u/.ssh//id_rsa"),
		     "/home/u/.ssh/id_rsa");
	ASSERT_STREQ(lex("/", "../../etc/shadow"), "/etc/shadow");
	ASSERT_STREQ(lex("/ws", "/etc//shadow"), "/etc/shadow");
	ASSERT_STREQ(lex(NULL, "a/./b//c/"), "a/b/c");
	ASSERT_STREQ(lex(NULL, "a/../../b"), "../b");
	ASSERT_STREQ(lex(NULL, "../../b/../c"), "../../c");
	ASSERT_STREQ(lex(NULL, "./.."), "..");
	ASSERT_STREQ(lex(NULL, "a/.."), "");
	ASSERT_STREQ(lex(NULL, "."), "");
	{
		char small[8];

		ASSERT_EQ(cr_path_lexical(NULL, "/abcdefgh", small,
					  sizeof(small)), -ENAMETOOLONG);
		ASSERT_EQ(cr_path_lexical(NULL, "/abcdef", small,
					  sizeof(small)), 0);
		ASSERT_STREQ(small, "/abcdef");
		ASSERT_EQ(cr_path_lexical("/abc", "defg", small,
					  sizeof(small)), -ENAMETOOLONG);
	}
}

TEST_IMPL(u64_set)
{
	uint64_t v[] = { 9, UINT64_MAX, 0, 3, 9, 1ULL << 63, 2 };
	size_t n = sizeof(v) / sizeof(v[0]);

	cr_u64_sort(v, n);
	for (size_t i = 1; i < n; i++)
		ASSERT(v[i - 1] <= v[i]);
	/* Large values sort above small ones: no subtraction overflow. */
	ASSERT_UEQ(v[n - 1], UINT64_MAX);
	ASSERT_UEQ(v[n - 2], 1ULL << 63);
	ASSERT(cr_u64_has(v, n, 0));
	ASSERT(cr_u64_has(v, n, UINT64_MAX));
	ASSERT(cr_u64_has(v, n, 1ULL << 63));
	ASSERT(!cr_u64_has(v, n, 1));
	ASSERT(!cr_u64_has(v, n, UINT64_MAX - 1));
	ASSERT(cr_u64_find(v, n, 3) && *cr_u64_find(v, n, 3) == 3);
	ASSERT(!cr_u64_find(v, n, 4));
	ASSERT(!cr_u64_has(NULL, 0, 0));
	ASSERT(!cr_u64_has(v, 0, 0));
	cr_u64_sort(NULL, 0);
}
