/* policy/fsrules.c: answers "what may be done at this path?" from the run's
 * roots and denied subtrees; pure string logic, no system calls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "corral/fsrules.h"

int cr_fsrules_add(struct cr_fsrules *r, const char *path, unsigned acc)
{
	size_t len = strlen(path);
	struct cr_fsroot *nr;

	while (len > 1 && path[len - 1] == '/')
		len--;
	if (!len || path[0] != '/')
		return -EINVAL;
	for (size_t i = 0; i < r->nroots; i++)
		if (r->roots[i].len == len && !memcmp(r->roots[i].path, path, len)) {
			r->roots[i].acc |= acc;
			return 0;
		}
	nr = realloc(r->roots, (r->nroots + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	r->roots = nr;
	nr[r->nroots].path = strndup(path, len);
	if (!nr[r->nroots].path)
		return -ENOMEM;
	nr[r->nroots].len = len;
	nr[r->nroots].acc = acc | CR_FS_STAT;
	r->nroots++;
	return 0;
}

int cr_fsrules_add_deny(struct cr_fsrules *r, const char *path)
{
	char **nd;

	if (path[0] != '/')
		return -EINVAL;
	nd = realloc(r->deny, (r->ndeny + 1) * sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	r->deny = nd;
	nd[r->ndeny] = strdup(path);
	if (!nd[r->ndeny])
		return -ENOMEM;
	r->ndeny++;
	return 0;
}

void cr_fsrules_free(struct cr_fsrules *r)
{
	for (size_t i = 0; i < r->nroots; i++)
		free(r->roots[i].path);
	for (size_t i = 0; i < r->ndeny; i++)
		free(r->deny[i]);
	free(r->roots);
	free(r->deny);
	memset(r, 0, sizeof(*r));
}

bool cr_fsrules_denied(const struct cr_fsrules *r, const char *path,
		       size_t len)
{
	for (size_t i = 0; i < r->ndeny; i++)
		if (cr_path_within(r->deny[i], strlen(r->deny[i]), path, len))
			return true;
	return false;
}

unsigned cr_fsrules_access(const struct cr_fsrules *r, const char *path,
			   size_t len)
{
	unsigned acc = 0;

	if (cr_fsrules_denied(r, path, len))
		return 0;
	/* One comparison per root for both questions (is the path in it,
	 * is it an ancestor of the root); roots whose second byte differs
	 * are neither, without a memcmp. */
	for (size_t i = 0; i < r->nroots; i++) {
		const struct cr_fsroot *root = &r->roots[i];
		size_t rl = root->len;

		if (rl == 1) {				/* "/" */
			acc |= root->acc;
			continue;
		}
		if (len > 1 && root->path[1] != path[1])
			continue;
		if (memcmp(root->path, path, rl < len ? rl : len))
			continue;
		if (rl <= len) {
			if (rl == len || path[rl] == '/')
				acc |= root->acc;
		} else if (len == 1 || root->path[len] == '/') {
			acc |= CR_FS_STAT;	/* a strict ancestor */
		}
	}
	return acc;
}

int cr_fsrules_refusal(const struct cr_fsrules *r, unsigned acc)
{
	/* What the program cannot even see must look absent: a program that
	 * probes /etc/debian_version or a parent's pytest.ini handles "no
	 * such file" and dies on "permission denied". Only an object it can
	 * see (a root, inside one, an ancestor of one) answers EACCES, as
	 * the kernel would for a file it may look at but not use. */
	if (r->hide || !(acc & (CR_FS_STAT | CR_FS_R | CR_FS_W | CR_FS_X)))
		return ENOENT;
	return EACCES;
}

int cr_fsrules_refusal_as(const struct cr_fsrules *r, unsigned acc, int kerr)
{
	int e = cr_fsrules_refusal(r, acc);

	return e == EACCES && kerr > 0 ? kerr : e;
}
