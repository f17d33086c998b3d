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
