/* tests/unit/test_io.c: the pure parts of tracer/io/: entry names, which
 * links stay inside, and the tree digest against a vector computed apart. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "harness.h"
#include "../../tracer/io/io.h"

static const char *norm(const char *raw, int *rc)
{
	static char out[PATH_MAX];
	static char why[128];

	*rc = cr_io_name_norm(raw, out, sizeof(out), why, sizeof(why));
	return *rc ? why : out;
}

TEST_IMPL(io_name_norm)
{
	int rc;

	ASSERT_STREQ(norm("a/b", &rc), "a/b");
	ASSERT_STREQ(norm("./a//b/", &rc), "a/b");
	ASSERT_STREQ(norm("./", &rc), "");
	ASSERT_STREQ(norm("a/./b/.", &rc), "a/b");
	ASSERT_STREQ(norm("..a/b..", &rc), "..a/b..");
	ASSERT_CONTAINS(norm("/etc/passwd", &rc), "absolute");
	ASSERT_EQ(rc, -EPERM);
	ASSERT_CONTAINS(norm("../x", &rc), "\"..\"");
	ASSERT_EQ(rc, -EPERM);
	ASSERT_CONTAINS(norm("a/../../x", &rc), "\"..\"");
	ASSERT_CONTAINS(norm("a/..", &rc), "\"..\"");
	{
		char longname[NAME_MAX + 3];

		memset(longname, 'n', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = 0;
		ASSERT_CONTAINS(norm(longname, &rc), "longer than");
		ASSERT_EQ(rc, -EPERM);
	}
}

TEST_IMPL(io_link_inside)
{
	ASSERT(cr_io_link_inside("l", "f"));
	ASSERT(cr_io_link_inside("l", "d/f"));
	ASSERT(cr_io_link_inside("l", "."));
	ASSERT(cr_io_link_inside("a/l", "../f"));
	ASSERT(cr_io_link_inside("a/b/l", "../../f"));
	ASSERT(cr_io_link_inside("a/b/l", "./../x/./y"));
	ASSERT(!cr_io_link_inside("l", ""));
	ASSERT(!cr_io_link_inside("l", "/etc/passwd"));
	ASSERT(!cr_io_link_inside("l", ".."));
	ASSERT(!cr_io_link_inside("a/l", "../../f"));
	/* ".." after a name could leave through another link (b -> "."). */
	ASSERT(!cr_io_link_inside("c", "b/../x"));
	ASSERT(!cr_io_link_inside("a/l", "x/../../y"));
}

TEST_IMPL(io_tree_digest)
{
	struct cr_io_entry e[5];
	unsigned char d[CR_SHA256_LEN];
	char hex[CR_SHA256_HEX];

	memset(e, 0, sizeof(e));
	/* Given out of order, with DEST itself ("dest", skip past it). */
	e[0] = (struct cr_io_entry){ .path = "dest/l", .skip = 5,
				     .kind = CR_IO_SYMLINK, .target = "d/f" };
	e[1] = (struct cr_io_entry){ .path = "dest/d/f", .skip = 5,
				     .kind = CR_IO_FILE, .exec = true, .size = 5 };
	cr_sha256_buf("hello", 5, e[1].sha);
	e[2] = (struct cr_io_entry){ .path = "dest", .skip = 4,
				     .kind = CR_IO_DIR };
	e[3] = (struct cr_io_entry){ .path = "dest/d", .skip = 5,
				     .kind = CR_IO_DIR };
	e[4] = (struct cr_io_entry){ .path = "dest/a b", .skip = 5,
				     .kind = CR_IO_FILE };
	cr_sha256_buf("", 0, e[4].sha);
	cr_io_tree_digest(e, 5, d);
	cr_sha256_tohex(d, hex);
	/* Python: records "f - 0 <sha('')> a b\0", "d d\0",
	 * "f x 5 <sha('hello')> d/f\0", "l l\0d/f\0", sorted, hashed. */
	ASSERT_STREQ(hex, "f493977f1cff8984d9af51d0d70f23a78e0af7b3df677b2acd5541a5be19b168");
	cr_io_tree_digest(e, 0, d);
	cr_sha256_tohex(d, hex);
	ASSERT_STREQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_IMPL(io_sha256_argv)
{
	char *argv[] = { "echo", "a b", NULL };
	unsigned char d[CR_SHA256_LEN];
	char hex[CR_SHA256_HEX];

	cr_sha256_argv(argv, d);
	cr_sha256_tohex(d, hex);
	ASSERT_STREQ(hex, "c524c509166da4c1b941bf02154706398d1f0f8f2d7a3fedecc9e88e0ebd56c3");
}
