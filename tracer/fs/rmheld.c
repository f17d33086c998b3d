/* tracer/fs/rmheld.c: directories the run removed that something still
 * holds (an fd, a cwd, a file below), whose blocks no walk then sees. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

/*
 * A directory keeps its blocks (ext4 never shrinks one) until its inode
 * is freed, and its inode lives while anything holds its dentry: a
 * descriptor or working directory of the program, a file below it that is
 * held open, the O_PATH fd corral keeps behind a link's stand-in. A run
 * that filled a directory under its disk budget, held it and removed it
 * could do that again and again: each removed one left the walk and kept
 * its blocks (found by a probing session: 40 MiB held under disk=4MiB,
 * the run "ok").
 *
 * Every rmdir and rename over a directory is corral's own call. Before it,
 * the directory is measured and an inotify watch put on it: the watch
 * holds no dentry, and the kernel drops it (IN_IGNORED) when the dentry
 * dies, that is when nothing holds the directory any more. Until then its
 * blocks count against the disk budget. Past CR_RMHELD_MAX entries, or
 * when a watch cannot be made, the blocks count for the rest of the run:
 * what cannot be followed is assumed held.
 */

#define CR_RMHELD_MAX 4096

struct cr_rmheld {
	int wd;
	uint64_t bytes;
};

static void gone(void *arg, int wd)
{
	struct cr_fsstate *fs = arg;

	for (size_t i = 0; i < fs->nrmheld; i++)
		if (fs->rmheld[i].wd == wd) {
			fs->rmheld[i] = fs->rmheld[--fs->nrmheld];
			return;
		}
}

static void reap(struct cr_fsstate *fs)
{
	if (fs->nrmheld)
		cr_weak_dropped(fs->rmheld_in, gone, fs);
}

int cr_fs_rmheld_before(struct cr_fsstate *fs, int dirfd, const char *name,
			struct cr_rmheld_tok *tok)
{
	struct stat st;
	char p[PATH_MAX];

	tok->wd = -1;
	tok->bytes = 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode))
		return 0;	/* nothing to remove, or no directory */
	tok->bytes = (uint64_t)st.st_blocks * 512;
	if (fs->rmheld_in < 0)
		fs->rmheld_in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fs->rmheld_in < 0)
		return 0;	/* not followed: held for good, after */
	snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", dirfd, name);
	tok->wd = inotify_add_watch(fs->rmheld_in, p, IN_DELETE_SELF |
				    IN_DONT_FOLLOW | IN_ONLYDIR);
	return 0;
}

void cr_fs_rmheld_after(struct cr_fsstate *fs, struct cr_rmheld_tok *tok,
			bool removed)
{
	if (!removed) {
		if (tok->wd >= 0)
			inotify_rm_watch(fs->rmheld_in, tok->wd);
		return;
	}
	if (!tok->bytes)
		return;
	if (!fs->rmheld)
		fs->rmheld = calloc(CR_RMHELD_MAX, sizeof(*fs->rmheld));
	if (fs->nrmheld >= CR_RMHELD_MAX)
		reap(fs);
	if (tok->wd < 0 || !fs->rmheld || fs->nrmheld >= CR_RMHELD_MAX) {
		if (tok->wd >= 0)
			inotify_rm_watch(fs->rmheld_in, tok->wd);
		fs->rmheld_lost += tok->bytes;
		return;
	}
	/* Entered before any read of the instance: the drop of a directory
	 * nothing held is already queued, and is read with the entry there
	 * to drop. */
	fs->rmheld[fs->nrmheld++] = (struct cr_rmheld){ tok->wd, tok->bytes };
}

uint64_t cr_fs_rmheld_bytes(struct cr_fsstate *fs)
{
	uint64_t total;

	if (!fs)
		return 0;
	reap(fs);
	total = fs->rmheld_lost;
	for (size_t i = 0; i < fs->nrmheld; i++)
		total += fs->rmheld[i].bytes;
	return total;
}

void cr_fs_rmheld_free(struct cr_fsstate *fs)
{
	free(fs->rmheld);
	fs->rmheld = NULL;
	fs->nrmheld = 0;
	if (fs->rmheld_in >= 0)
		close(fs->rmheld_in);
	fs->rmheld_in = -1;
}
