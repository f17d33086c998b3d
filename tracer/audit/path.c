/* tracer/audit/path.c: is a place corral writes (the audit trail, the
 * result, the output directory) inside or around a root the program may
 * write? Judged on real paths. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral/fsrules.h"
#include "../tracer.h"

/* A root as the kernel reaches it: realpath when it exists, else its
 * parent's realpath and its last name (-w DIR is made one level deep
 * later). NULL when neither resolves. */
static char *root_real(const char *root)
{
	char *copy, *slash, *parent, *out = NULL;

	out = realpath(root, NULL);
	if (out)
		return out;
	copy = strdup(root);
	if (!copy)
		return NULL;
	/* "X/d/" not made yet is X/d: its last name, not "" under X/d
	 * (a --result named X/d with -w X/d/ passed as another place;
	 * found by a probing session). */
	for (size_t n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
		copy[n - 1] = 0;
	slash = strrchr(copy, '/');
	if (slash) {
		*slash = 0;
		parent = realpath(slash == copy ? "/" : copy, NULL);
	} else {
		parent = realpath(".", NULL);
	}
	if (parent && asprintf(&out, "%s/%s", strcmp(parent, "/") ? parent : "",
			       slash ? slash + 1 : copy) < 0)
		out = NULL;
	free(parent);
	free(copy);
	return out;
}

char *cr_audit_root_real(const char *root)
{
	return root_real(root);
}

/* Judged against the root as written and as resolved: a root reached
 * through a link is the same directory. */
static int within_root(const char *root, const char *real, const char *kind,
		       char *which, size_t len)
{
	char *rr = root_real(root);
	int hit = 0;

	if ((root[0] == '/' &&
	     cr_path_within(root, strlen(root), real, strlen(real))) ||
	    (rr && cr_path_within(rr, strlen(rr), real, strlen(real)))) {
		snprintf(which, len,
			 "inside %s %s, which the program may write",
			 kind, root);
		hit = 1;
	}
	free(rr);
	return hit;
}

int cr_audit_path_writable(const struct cr_run_config *cfg, const char *ws,
			   const char *real, char *which, size_t len)
{
	const struct cr_strlist *lists[] = { &cfg->cls->fs_write,
					     &cfg->extra_rw };
	int hit = 0;

	if (ws)
		hit = within_root(ws, real, "the workspace", which, len);
	for (size_t l = 0; !hit && l < CR_ARRAY_SIZE(lists); l++)
		for (size_t i = 0; !hit && i < lists[l]->n; i++)
			hit = within_root(lists[l]->v[i], real,
					  "the writable root", which, len);
	return hit;
}

/* The other way: a root the program may write inside real (or real
 * itself), as written or as resolved. */
int cr_audit_path_holds_writable(const struct cr_run_config *cfg,
				 const char *real, char *which, size_t len)
{
	const struct cr_strlist *lists[] = { &cfg->cls->fs_write,
					     &cfg->extra_rw };
	size_t rl = strlen(real);

	for (size_t l = 0; l < CR_ARRAY_SIZE(lists); l++)
		for (size_t i = 0; i < lists[l]->n; i++) {
			const char *root = lists[l]->v[i];
			char *rr = root_real(root);
			bool hit = (root[0] == '/' &&
				    cr_path_within(real, rl, root, strlen(root))) ||
				   (rr && cr_path_within(real, rl, rr, strlen(rr)));

			free(rr);
			if (hit) {
				snprintf(which, len,
					 "around the writable root %s, which the program may write",
					 root);
				return 1;
			}
		}
	return 0;
}

/* An exec root holding real, or real holding an exec or read root, as
 * written or as resolved: 1 (the root named in which), else 0. */
int cr_audit_path_near_roots(const struct cr_run_config *cfg,
			     const char *real, char *which, size_t len)
{
	const struct {
		const struct cr_strlist *l;
		const char *kind;
		bool inside;	/* real inside the root counts too */
	} lists[] = {
		{ &cfg->cls->fs_exec, "the exec root", true },
		{ &cfg->extra_exec, "the exec root", true },
		{ &cfg->cls->fs_read, "the read root", false },
		{ &cfg->extra_ro, "the read root", false },
	};
	size_t rl = strlen(real);

	for (size_t l = 0; l < CR_ARRAY_SIZE(lists); l++)
		for (size_t i = 0; i < lists[l].l->n; i++) {
			const char *root = lists[l].l->v[i];
			char *rr = root_real(root);
			bool around = (root[0] == '/' &&
				       cr_path_within(real, rl, root, strlen(root))) ||
				      (rr && cr_path_within(real, rl, rr, strlen(rr)));
			bool in = lists[l].inside &&
				  ((root[0] == '/' &&
				    cr_path_within(root, strlen(root), real, rl)) ||
				   (rr && cr_path_within(rr, strlen(rr), real, rl)));

			free(rr);
			if (around || in) {
				snprintf(which, len, "%s %s, where the program's files would become the run's own",
					 in ? "inside" : "around", root);
				snprintf(which + strlen(which), len - strlen(which), " (%s)",
					 lists[l].kind);
				return 1;
			}
		}
	return 0;
}
