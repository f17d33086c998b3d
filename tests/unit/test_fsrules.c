/* tests/unit/test_fsrules.c: the filesystem rules: roots, ancestors, deny
 * subtrees and the separator edge cases of path containment. */
#include <errno.h>
#include <string.h>

#include "corral/fsrules.h"
#include "harness.h"

static unsigned acc(const struct cr_fsrules *r, const char *p)
{
	return cr_fsrules_access(r, p, strlen(p));
}

TEST_IMPL(fsrules_within)
{
	ASSERT(cr_path_within("/usr", 4, "/usr", 4));
	ASSERT(cr_path_within("/usr", 4, "/usr/bin", 8));
	ASSERT(!cr_path_within("/usr", 4, "/usrx", 5));
	ASSERT(!cr_path_within("/usr", 4, "/us", 3));
	ASSERT(cr_path_within("/", 1, "/etc", 4));
	ASSERT(cr_path_within("/", 1, "/", 1));
}

TEST_IMPL(fsrules_access)
{
	struct cr_fsrules r = { 0 };

	ASSERT_EQ(cr_fsrules_add(&r, "/usr", CR_FS_R), 0);
	ASSERT_EQ(cr_fsrules_add(&r, "/usr/bin/", CR_FS_R | CR_FS_X), 0);
	ASSERT_EQ(cr_fsrules_add(&r, "/tmp/ws", CR_FS_R | CR_FS_W | CR_FS_X), 0);
	ASSERT_EQ(cr_fsrules_add_deny(&r, "/tmp/ws/.git/hooks"), 0);
	ASSERT_EQ(cr_fsrules_add(&r, "relative", CR_FS_R), -EINVAL);
	ASSERT_UEQ(acc(&r, "/usr/lib/x"), CR_FS_R | CR_FS_STAT);
	ASSERT_UEQ(acc(&r, "/usr/bin/ls"), CR_FS_R | CR_FS_X | CR_FS_STAT);
	ASSERT_UEQ(acc(&r, "/tmp/ws/a/b"), CR_FS_R | CR_FS_W | CR_FS_X | CR_FS_STAT);
	/* ancestors: metadata only */
	ASSERT_UEQ(acc(&r, "/"), CR_FS_STAT);
	ASSERT_UEQ(acc(&r, "/tmp"), CR_FS_STAT);
	/* siblings and prefixes that are not path prefixes: nothing */
	ASSERT_UEQ(acc(&r, "/tmp/wsx"), 0u);
	ASSERT_UEQ(acc(&r, "/tmp/other"), 0u);
	ASSERT_UEQ(acc(&r, "/home/u/.ssh/id_rsa"), 0u);
	/* denied subtree inside a root */
	ASSERT_UEQ(acc(&r, "/tmp/ws/.git/hooks/pre-commit"), 0u);
	ASSERT_UEQ(acc(&r, "/tmp/ws/.git/config"), CR_FS_R | CR_FS_W | CR_FS_X | CR_FS_STAT);
	/* refusals: absent where nothing is visible, EACCES where it is */
	ASSERT_EQ(cr_fsrules_refusal(&r, acc(&r, "/home/u/.ssh/id_rsa")), ENOENT);
	ASSERT_EQ(cr_fsrules_refusal(&r, acc(&r, "/tmp/ws/.git/hooks/x")), ENOENT);
	ASSERT_EQ(cr_fsrules_refusal(&r, acc(&r, "/tmp")), EACCES);
	ASSERT_EQ(cr_fsrules_refusal(&r, acc(&r, "/usr/lib")), EACCES);
	/* the kernel's own errno only where the object is visible */
	ASSERT_EQ(cr_fsrules_refusal_as(&r, acc(&r, "/usr/lib"), EISDIR), EISDIR);
	ASSERT_EQ(cr_fsrules_refusal_as(&r, acc(&r, "/usr/lib"), 0), EACCES);
	ASSERT_EQ(cr_fsrules_refusal_as(&r, acc(&r, "/home/u/.ssh"), EISDIR), ENOENT);
	r.hide = true;
	ASSERT_EQ(cr_fsrules_refusal(&r, acc(&r, "/tmp")), ENOENT);
	ASSERT_EQ(cr_fsrules_refusal(&r, acc(&r, "/usr/lib")), ENOENT);
	ASSERT_EQ(cr_fsrules_refusal_as(&r, acc(&r, "/usr/lib"), EPERM), ENOENT);
	/* the same root twice unions */
	ASSERT_EQ(cr_fsrules_add(&r, "/usr", CR_FS_W), 0);
	ASSERT_UEQ(acc(&r, "/usr/lib"), CR_FS_R | CR_FS_W | CR_FS_STAT);
	cr_fsrules_free(&r);
}

/* The definition, one question at a time: in a root, or a strict
 * ancestor of one. The scan (one comparison per root, the second byte
 * first) must answer as this does for every pair. */
static unsigned plain_access(const struct cr_fsrules *r, const char *p,
			     size_t len)
{
	unsigned a = 0;

	for (size_t i = 0; i < r->ndeny; i++)
		if (cr_path_within(r->deny[i], strlen(r->deny[i]), p, len))
			return 0;
	for (size_t i = 0; i < r->nroots; i++) {
		const struct cr_fsroot *root = &r->roots[i];
		bool in = root->len == 1 ||
			  (len >= root->len && !memcmp(root->path, p, root->len) &&
			   (len == root->len || p[root->len] == '/'));
		bool above = !in && (len == 1 ||
			     (root->len > len && !memcmp(root->path, p, len) &&
			      root->path[len] == '/'));

		a |= in ? root->acc : above ? CR_FS_STAT : 0;
	}
	return a;
}

TEST_IMPL(fsrules_access_matches_definition)
{
	static const char *const roots[] = {
		"/usr", "/usr/bin", "/u", "/us", "/usrx", "/etc/passwd",
		"/etc", "/e", "/tmp/ws", "/tmp/w", "/a/b/c", "/ab",
	};
	/* Components, and pieces of them that name no root ("bi", "pass",
	 * "tm"): a path that is a byte prefix of a root but no ancestor. */
	static const char *const parts[] = { "usr", "u", "us", "usrx", "bin",
		"etc", "passwd", "e", "tmp", "ws", "w", "a", "b", "c", "ab",
		"bi", "pass", "et", "tm", "d" };
	struct cr_fsrules r = { 0 };
	char p[64];
	unsigned seed = 7;
	int n = 0;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		ASSERT_EQ(cr_fsrules_add(&r, roots[i], 1u << (i % 3)), 0);
	ASSERT_EQ(cr_fsrules_add_deny(&r, "/tmp/ws/d"), 0);
	ASSERT_UEQ(cr_fsrules_access(&r, "/", 1), plain_access(&r, "/", 1));
	for (int k = 0; k < 20000; k++) {
		size_t len = 0;
		int depth;

		seed = seed * 1103515245u + 12345u;
		depth = 1 + (int)((seed >> 16) % 4);
		for (int d = 0; d < depth; d++) {
			const char *c;

			seed = seed * 1103515245u + 12345u;
			c = parts[(seed >> 16) % (sizeof(parts) / sizeof(parts[0]))];
			p[len++] = '/';
			memcpy(p + len, c, strlen(c));
			len += strlen(c);
		}
		p[len] = 0;
		ASSERT_UEQ(cr_fsrules_access(&r, p, len), plain_access(&r, p, len));
		n += cr_fsrules_access(&r, p, len) != 0;
	}
	ASSERT(n > 1000);	/* the pairs met roots, not only misses */
	cr_fsrules_free(&r);
}
