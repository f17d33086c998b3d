/* tracer/fs/tops.c: the top of every writable root (the workspace above
 * all) keeps the access it gives other users as the run found it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fs.h"
#include "fsops.h"

/*
 * A private workspace is 0700: other local users reach nothing in it,
 * whatever the program does to the files inside. The program owns that
 * directory, so the kernel would let it `chmod 0755 .`, set a POSIX ACL
 * naming another user on it (`system.posix_acl_access`; a default ACL
 * outlives a kept workspace and reaches what later runs write there), or
 * give it to a group another user is in; then the read roots' files it
 * copied there, and the run's inputs, are readable by others, and an
 * account given write access can plant a directory corral cannot remove.
 * So the tops of the writable roots, recorded here by (dev, ino) at
 * set-up, may lose permission bits but never gain a group or other bit
 * they did not have: such a bit is cleared and the call succeeds, as for
 * set-user-ID (fs.c), because `tar xf` of an archive holding "./" sets
 * the mode of the directory it extracts into, and failing it ended tar
 * with status 2. No attribute outside the "user." namespace (ACLs,
 * NFSv4 and CIFS ACLs, security labels) is set or removed on them, and
 * their owner and group do not change: EPERM. Everything is judged on
 * the inode the call would act on (an fd of ours), so a name moved
 * meanwhile changes nothing.
 */
int cr_fs_tops_setup(struct cr_fsstate *fs)
{
	for (size_t i = 0; i < fs->rules.nroots; i++) {
		const struct cr_fsroot *r = &fs->rules.roots[i];
		struct cr_fstop *nt;
		struct stat st;
		bool seen = false;

		if (!(r->acc & CR_FS_W))
			continue;
		if (fs->root_fds[i] >= 0 ? fstat(fs->root_fds[i], &st) < 0 :
		    stat(r->path, &st) < 0)
			continue;	/* nothing there yet: made inside a top */
		for (size_t k = 0; k < fs->ntops; k++)
			seen = seen || (fs->tops[k].dev == st.st_dev &&
					fs->tops[k].ino == st.st_ino);
		if (seen)
			continue;	/* named twice: as written and real */
		nt = realloc(fs->tops, (fs->ntops + 1) * sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		fs->tops = nt;
		nt[fs->ntops++] = (struct cr_fstop){
			.dev = st.st_dev, .ino = st.st_ino,
			.mode = st.st_mode & 07777,
		};
	}
	return 0;
}

static const struct cr_fstop *top_of(const struct cr_run *run,
				     const struct stat *st)
{
	const struct cr_fsstate *fs = run->fs;

	for (size_t i = 0; fs && i < fs->ntops; i++)
		if (fs->tops[i].dev == st->st_dev && fs->tops[i].ino == st->st_ino)
			return &fs->tops[i];
	return NULL;
}

/* The denial, naming the object: target when given, else fd's path. */
static void deny_top(struct cr_run *run, const struct seccomp_notif *n,
		     const char *sys, const char *target, int fd,
		     const char *why)
{
	char p[64], path[PATH_MAX];

	if (!target && fd >= 0) {
		ssize_t len;

		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		len = readlink(p, path, sizeof(path) - 1);
		if (len > 0) {
			path[len] = 0;
			target = path;
		}
	}
	cr_deny(run, (pid_t)n->pid, sys, target, "fs", why);
}

mode_t cr_fs_top_mode(struct cr_run *run, const struct seccomp_notif *n,
		      const char *sys, const char *target, int fd,
		      const struct stat *st, mode_t mode)
{
	const struct cr_fstop *t = top_of(run, st);
	mode_t extra = t ? mode & 077 & ~t->mode : 0;

	if (!extra)
		return mode;
	deny_top(run, n, sys, target, fd,
		 "the top of a writable root gives group and other no more than it did when the run started: those bits are not set");
	return mode & ~extra;
}

int cr_fs_top_chown(struct cr_run *run, const struct seccomp_notif *n,
		    const char *sys, const char *target, int fd,
		    const struct stat *st, uid_t uid, gid_t gid)
{
	if (!top_of(run, st) || ((uid == (uid_t)-1 || uid == st->st_uid) &&
		   (gid == (gid_t)-1 || gid == st->st_gid)))
		return 0;
	deny_top(run, n, sys, target, fd,
		 "the owner and group of the top of a writable root do not change");
	return -EPERM;
}

int cr_fs_top_xattr(struct cr_run *run, const struct seccomp_notif *n,
		    const char *sys, const char *target, int fd,
		    const struct stat *st, const char *name)
{
	if (!strncmp(name, "user.", 5) || !top_of(run, st))
		return 0;
	deny_top(run, n, sys, target, fd,
		 "access control lists and other system attributes of the top of a writable root do not change");
	return -EPERM;
}

/* The run's end: a top whose owner bits the program took away gets them
 * back as the run found them. The program may narrow the top (`chmod 0
 * .` is its own business while it runs), but a workspace given with -w
 * left without its owner's search bit made every later run in it end in
 * platform_failure, and nothing repaired it (found by a probing
 * session). Only the owner's bits, and only on the inode recorded. */
void cr_fs_tops_finish(struct cr_fsstate *fs)
{
	for (size_t i = 0; fs->root_fds && i < fs->rules.nroots; i++) {
		char p[64];
		struct stat st;

		if (fs->root_fds[i] < 0 || !(fs->rules.roots[i].acc & CR_FS_W) ||
		    fstat(fs->root_fds[i], &st) < 0 || st.st_uid != geteuid())
			continue;
		for (size_t k = 0; k < fs->ntops; k++) {
			const struct cr_fstop *t = &fs->tops[k];

			if (t->dev != st.st_dev || t->ino != st.st_ino ||
			    (st.st_mode & 0700) == (t->mode & 0700))
				continue;
			cr_fs_fdpath(fs->root_fds[i], p, sizeof(p));
			if (chmod(p, (st.st_mode & 07077) | (t->mode & 0700)) < 0)
				fprintf(stderr, "corral: could not give %s its owner's rights back: %s\n",
					fs->rules.roots[i].path, strerror(errno));
		}
	}
}
