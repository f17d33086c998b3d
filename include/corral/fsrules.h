/* include/corral/fsrules.h: the filesystem view of one run as pure data —
 * roots with their access, denied subtrees — and the questions asked of it. */
#ifndef CORRAL_FSRULES_H
#define CORRAL_FSRULES_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Access bits a path may be granted. */
#define CR_FS_X    1u	/* execute (exec roots, the workspace) */
#define CR_FS_W    2u	/* create, modify, remove */
#define CR_FS_R    4u	/* read contents, list */
#define CR_FS_STAT 8u	/* see metadata, traverse (every root, and ancestors of roots) */
#define CR_FS_NEW 16u	/* may be created afresh, nothing else (/dev/shm names) */

struct cr_fsroot {
	char *path;	/* owned; absolute, normal, no trailing slash ("/" alone allowed) */
	size_t len;
	unsigned acc;
};

struct cr_fsrules {
	struct cr_fsroot *roots;	/* owned */
	size_t nroots;
	char **deny;			/* owned; subtrees refused even inside roots */
	size_t ndeny;
	bool hide;			/* ENOENT for every refusal, even of visible objects */
};

/* Add a root; the same path twice unions the access. 0 or -errno. */
int cr_fsrules_add(struct cr_fsrules *r, const char *path, unsigned acc);
int cr_fsrules_add_deny(struct cr_fsrules *r, const char *path);
void cr_fsrules_free(struct cr_fsrules *r);

/* Is path equal to root or below it? Both absolute and normal. Inline:
 * every step of every path call asks it of every root (the second byte
 * settles most of them without a memcmp). */
static inline bool cr_path_within(const char *root, size_t rlen,
				  const char *path, size_t plen)
{
	if (rlen == 1 && root[0] == '/')
		return plen && path[0] == '/';
	if (plen < rlen || (rlen > 1 && root[1] != path[1]) ||
	    memcmp(root, path, rlen))
		return false;
	return plen == rlen || path[rlen] == '/';
}

/* Is path inside a denied subtree (nothing there, even inside a root)? */
bool cr_fsrules_denied(const struct cr_fsrules *r, const char *path,
		       size_t len);

/* The access the rules grant at an absolute, normal path: the union of the
 * roots containing it, plus CR_FS_STAT on strict ancestors of roots; 0
 * inside a denied subtree. */
unsigned cr_fsrules_access(const struct cr_fsrules *r, const char *path,
			   size_t len);

/* The errno for a refusal of something the rules grant acc at: ENOENT when
 * nothing there is visible (or the class hides everything), EACCES for a
 * visible object used beyond its access. */
int cr_fsrules_refusal(const struct cr_fsrules *r, unsigned acc);

/* The same refusal where the kernel, asked, would itself fail first with
 * kerr (EISDIR, EPERM, EEXIST...; 0 when it would not): kerr in place of
 * EACCES, since the object is visible and its type and owner no secret;
 * ENOENT still where cr_fsrules_refusal says ENOENT. */
int cr_fsrules_refusal_as(const struct cr_fsrules *r, unsigned acc, int kerr);

#endif
