/* tracer/handlers/remove.c: unlink, unlinkat, rmdir, rename, renameat,
 * renameat2, link, linkat: entries changed only inside writable roots. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>

#include "../fs/fsops.h"
#include "../budget/budget.h"
#include "../net/net.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE (1 << 1)
#define RENAME_WHITEOUT (1 << 2)
#endif

static struct cr_verdict refuse(struct cr_run *run, const struct seccomp_notif *n,
				const char *sys, struct cr_fsres *res)
{
	res->refused = true;
	cr_fs_deny(run, n, sys, res, "write outside the writable roots");
	return CR_V_ERR(cr_fs_proc_entry_refusal(run, res,
			cr_fsrules_refusal(&run->fs->rules, res->acc)));
}

/* A refusal where the kernel would itself fail first with kerr (0: it
 * would not): its errno, the object being visible (policy/fsrules.c). */
static struct cr_verdict refuse_as(struct cr_run *run,
				   const struct seccomp_notif *n,
				   const char *sys, struct cr_fsres *res,
				   int kerr)
{
	res->refused = true;
	cr_fs_deny(run, n, sys, res, "write outside the writable roots");
	return CR_V_ERR(cr_fs_proc_entry_refusal(run, res,
			cr_fsrules_refusal_as(&run->fs->rules, res->acc, kerr)));
}

/* fs.protected_hardlinks (may_linkat): a link to a file the task
 * neither owns nor may read and write, or that is set-user-ID or
 * executable set-group-ID, is refused with EPERM. Unknown (no sysctl, a
 * capability, an unreadable status): false. */
static bool hardlink_protected(pid_t tid, const struct cr_fsres *a)
{
	const mode_t sgx = S_ISGID | S_IXGRP;
	char buf[8];
	uid_t fsuid;
	bool safe;
	int fd;

	if (cr_read_small(AT_FDCWD, "/proc/sys/fs/protected_hardlinks", buf,
			  sizeof(buf)) < 1 || buf[0] == '0')
		return false;
	if (cr_fs_task_fsuid(tid, &fsuid) || fsuid == a->st.st_uid)
		return false;
	if (!S_ISREG(a->st.st_mode) || (a->st.st_mode & S_ISUID) ||
	    (a->st.st_mode & sgx) == sgx)
		return true;
	fd = cr_fs_opath(a, false);
	if (fd < 0)
		return false;
	/* The supervisor runs as the program's user, without capability. */
	safe = faccessat(fd, "", R_OK | W_OK, AT_EMPTY_PATH | AT_EACCESS) == 0;
	close(fd);
	return !safe;
}

/* What the kernel's do_linkat answers before any permission is asked:
 * EEXIST for a new name that exists (filename_create), EXDEV across
 * mounts, EPERM for a source protected_hardlinks keeps (may_linkat),
 * then EPERM for a directory (vfs_link). */
static int link_kerr(pid_t tid, const struct cr_fsres *a,
		     const struct cr_fsres *b)
{
	struct stat d;

	if (b->exists)
		return EEXIST;
	if (fstat(b->dirfd, &d) < 0)
		return 0;
	if (d.st_dev != a->st.st_dev)
		return EXDEV;
	if (S_ISDIR(a->st.st_mode) || hardlink_protected(tid, a))
		return EPERM;
	return 0;
}

/* An entry of a process's own fd directory (/proc/<pid>/fd/N or
 * /proc/<pid>/task/<tid>/fd/N of the caller's thread group): procfs gives
 * the process itself every permission there (proc_fd_permission), so its
 * unlink fails where the directory has no unlink (EPERM) and its rmdir
 * where the victim is no directory (ENOTDIR). corral, another process,
 * is refused the permission first (EACCES); the program gets the
 * kernel's answer to itself (found by a differential check). */
static int own_fd_entry_err(struct cr_run *run, pid_t tid,
			    const struct cr_fsres *res, int flags, int err)
{
	int owner, task, fd, end = 0;
	pid_t me;

	if (err != EACCES || res->st.st_dev != run->fs->proc_dev)
		return err;
	if (sscanf(res->path, "/proc/%d/task/%d/fd/%d%n", &owner, &task, &fd,
		   &end) == 3 && !res->path[end])
		owner = task;
	else if (end = 0, sscanf(res->path, "/proc/%d/fd/%d%n", &owner, &fd,
				 &end) != 2 || res->path[end])
		return err;
	me = cr_tasks_tgid(&run->tasks, tid);
	if (!me || cr_tasks_tgid(&run->tasks, (pid_t)owner) != me)
		return err;
	return (flags & AT_REMOVEDIR) && !S_ISDIR(res->st.st_mode) ? ENOTDIR :
								   EPERM;
}

static struct cr_verdict do_unlink(struct cr_run *run,
				   const struct seccomp_notif *n,
				   const char *sys, int diri, int pathi,
				   int flags)
{
	struct cr_fsres res;
	struct cr_verdict v;
	int rc;

	if (flags & ~AT_REMOVEDIR)
		return CR_V_ERR(EINVAL);
	rc = cr_fs_arg(run, n, sys, diri, pathi, CR_RES_ENTRY, 0, &res);
	if (rc)
		return CR_V_ERR(-rc);
	if (!strcmp(res.name, ".")) {
		/* What the kernel's do_rmdir says by the last component
		 * ("x/.." is a directory with an entry, x); unlink of any
		 * of them is EISDIR. */
		v = CR_V_ERR(!(flags & AT_REMOVEDIR) ? EISDIR :
			     res.last == CR_LAST_DOTDOT ? ENOTEMPTY :
			     res.last == CR_LAST_ROOT ? EBUSY : EINVAL);
	} else if (!res.exists) {
		v = CR_V_ERR(ENOENT);
	} else if (res.trailing_slash && !(flags & AT_REMOVEDIR)) {
		/* "l/" names the entry l, never what a link l leads to: a
		 * link, as any non-directory, is not one; unlink of a
		 * directory is EISDIR (do_unlinkat, before any permission
		 * is asked). rmdir asks permission first (may_delete), and
		 * the kernel's own rmdir below then says ENOTDIR. */
		v = CR_V_ERR(S_ISDIR(res.st.st_mode) ? EISDIR : ENOTDIR);
	} else if (!cr_fs_entry_writable(run, (pid_t)n->pid, &res)) {
		v = refuse(run, n, sys, &res);
	} else if (!(flags & AT_REMOVEDIR) && S_ISREG(res.st.st_mode) &&
		   (rc = cr_fs_held_room(run))) {
		v = CR_V_ERR(-rc);
	} else {
		/* A file losing its last name may live on where no walk
		 * looks (a socket's queue, a mapping): the ledger follows
		 * it (fs/held.c). */
		struct cr_fs_keep keep = { .fd = -1 };
		struct cr_rmheld_tok gone = { .wd = -1 };

		rc = flags & AT_REMOVEDIR ?
		     cr_fs_rmheld_before(run->fs, res.dirfd, res.name, &gone) :
		     cr_fs_held_before_unlink(run, &res, &keep);
		if (rc) {
			cr_fsres_free(&res);
			return CR_V_ERR(-rc);
		}
		/* A file that keeps other names: a walk that met one of
		 * them counted only its share (budget/disk.c). */
		if (!(flags & AT_REMOVEDIR) && res.st.st_nlink > 1)
			cr_budget_on_placed(run, &res);
		cr_slow_begin();
		rc = unlinkat(res.dirfd, res.name, flags);
		cr_slow_end();
		v = rc < 0 ? CR_V_ERR(own_fd_entry_err(run, (pid_t)n->pid, &res,
							flags, errno)) :
			     CR_V_VAL(0);
		cr_fs_held_after_unlink(run, &keep, rc == 0);
		if (flags & AT_REMOVEDIR)
			cr_fs_rmheld_after(run->fs, &gone, rc == 0);
		if (!rc) {
			cr_budget_on_remove(run);
			cr_budget_on_unnamed(run, &res.st);
		}
	}
	cr_fsres_free(&res);
	return v;
}

struct cr_verdict cr_h_unlink(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	return do_unlink(run, n, e->name, -1, 0, 0);
}

struct cr_verdict cr_h_rmdir(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	return do_unlink(run, n, e->name, -1, 0, AT_REMOVEDIR);
}

struct cr_verdict cr_h_unlinkat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	return do_unlink(run, n, e->name, 0, 1, (int)n->data.args[2]);
}

/* A deny entry (a subtree refused even inside a writable root) is a path:
 * renaming a directory above it moved the subtree out from under the rule
 * (mv a b, then b/secret read and written). Such a rename is refused;
 * renaming the subtree itself already is (cr_fs_entry_writable). */
static bool holds_deny(const struct cr_run *run, const struct cr_fsres *r)
{
	const struct cr_fsrules *fr = &run->fs->rules;

	if (!r->exists || !S_ISDIR(r->st.st_mode))
		return false;
	for (size_t j = 0; j < fr->ndeny; j++)
		if (cr_path_within(r->path, r->plen, fr->deny[j],
				   strlen(fr->deny[j])))
			return true;
	return false;
}

/* Whether the entry r is the workspace or lies beneath it; true when the
 * workspace is not known (the callers then refuse). */
static bool in_workspace(const struct cr_run *run, const struct cr_fsres *r)
{
	const char *ws = run->net ? run->net->ws_real : NULL;

	return !ws || cr_path_within(ws, strlen(ws), r->path, r->plen);
}

/* A unix socket is reachable only inside the workspace (net.c), judged by
 * where its name is when it is reached. So no name of another writable
 * root may bring one in: a hard link or a rename of a socket, or a rename
 * of a directory (which may hold sockets at any depth: the session bus,
 * an ssh or gpg agent under a writable /tmp or $XDG_RUNTIME_DIR), from
 * outside the workspace into it. A hard link of an outside server's
 * socket into the workspace reached that server (found by a probing
 * session). Answered EXDEV, as for two filesystems: mv, shutil.move and
 * package managers then copy, and a copied socket reaches nobody. An
 * exchange moves both ways. */
/* Are the two names' directories on one filesystem? The kernel's EXDEV
 * (a mount apart) comes before what it says of the names. */
static bool same_dirs_dev(const struct cr_fsres *a, const struct cr_fsres *b)
{
	struct stat da, db;

	return fstat(a->dirfd, &da) == 0 && fstat(b->dirfd, &db) == 0 &&
	       da.st_dev == db.st_dev;
}

/* Is the directory fd on the filesystem of st (the kernel's EXDEV test
 * is the mount; one filesystem is what corral can tell)? */
static bool same_dev(int dirfd, const struct stat *st)
{
	struct stat d;

	return fstat(dirfd, &d) == 0 && d.st_dev == st->st_dev;
}

/* What do_renameat2 answers from the two parents' mounts, before it looks
 * at the names: EXDEV across mounts (one filesystem bound twice too; the
 * names' own EBUSY comes after it), EROFS on a read-only one (after
 * EBUSY: ro set). 0 when neither (or when the kernel cannot say: then
 * the rules decide). No times are asked. */
static int mount_answer(const struct cr_fsres *a, const struct cr_fsres *b,
			bool ro)
{
	struct statx sa, sb;
	struct statvfs v;

	if (!ro) {
		if (statx(a->dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sa) < 0 ||
		    statx(b->dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sb) < 0 ||
		    !(sa.stx_mask & sb.stx_mask & STATX_MNT_ID))
			return 0;
		return sa.stx_mnt_id != sb.stx_mnt_id ? -EXDEV : 0;
	}
	return fstatvfs(a->dirfd, &v) == 0 && (v.f_flag & ST_RDONLY) ?
	       -EROFS : 0;
}

/* Is the directory d the one dirfd names, or one of its ancestors? Walked
 * up by "..", compared by inode, no times asked (multigrain stamps). */
static bool holds_dir(int dirfd, const struct stat *d)
{
	struct stat st, up_st;
	int fd = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool found = false;

	for (int depth = 0; fd >= 0 && depth < 4096; depth++) {
		int up;

		if (cr_quiet_fstat(fd, &st) < 0)
			break;
		if (st.st_dev == d->st_dev && st.st_ino == d->st_ino) {
			found = true;
			break;
		}
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0 || cr_quiet_fstat(up, &up_st) < 0 ||
		    (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino)) {
			if (up >= 0)
				close(up);
			break;	/* the top of the tree */
		}
		close(fd);
		fd = up;
	}
	if (fd >= 0)
		close(fd);
	return found;
}

/*
 * What do_renameat2 answers from its lookups alone, before vfs_rename asks
 * for any permission: two names of one file succeed and nothing moves; a
 * directory moved beneath itself is EINVAL, and one moved over its own
 * ancestor ENOTEMPTY (EINVAL for an exchange). 1: success, -errno, or 0
 * when the kernel would go on to the permissions. Asked where corral
 * refuses for the roots: EACCES came first in a read root (found by a
 * differential probing session).
 */
static int rename_lookup_answer(const struct cr_fsres *a,
				const struct cr_fsres *b, unsigned flags)
{
	if (!a->exists || !same_dirs_dev(a, b))
		return 0;
	if (b->exists && a->st.st_dev == b->st.st_dev &&
	    a->st.st_ino == b->st.st_ino)
		return 1;
	if (S_ISDIR(a->st.st_mode) && holds_dir(b->dirfd, &a->st))
		return -EINVAL;
	if (b->exists && S_ISDIR(b->st.st_mode) && holds_dir(a->dirfd, &b->st))
		return flags & RENAME_EXCHANGE ? -EINVAL : -ENOTEMPTY;
	return 0;
}

static bool brings_in(const struct cr_run *run, const struct cr_fsres *from,
		      const struct cr_fsres *to)
{
	return from->exists &&
	       (S_ISSOCK(from->st.st_mode) || S_ISDIR(from->st.st_mode)) &&
	       !in_workspace(run, from) && in_workspace(run, to);
}

/* The fd form of brings_in: is fd (corral's copy of the program's, a
 * stand-in already swapped for its socket) a socket whose name is not in
 * the workspace, to be linked at to inside it? An O_PATH fd of a socket
 * in another writable root, linked with AT_EMPTY_PATH, reached the server
 * behind it (found by a probing session). A socket whose place cannot be
 * read (its name gone) is taken as outside: fail closed. */
static bool fd_brings_in(const struct cr_run *run, int fd,
			 const struct cr_fsres *to)
{
	const char *ws = run->net ? run->net->ws_real : NULL;
	char p[64], at[PATH_MAX];
	struct stat st;
	ssize_t l;

	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
	    !in_workspace(run, to))
		return false;
	if (!ws)
		return false;
	cr_fs_fdpath(fd, p, sizeof(p));
	l = readlink(p, at, sizeof(at) - 1);
	if (l <= 0 || at[0] != '/' ||
	    (l > 10 && !memcmp(at + l - 10, " (deleted)", 10)))
		return true;
	return !cr_path_within(ws, strlen(ws), at, (size_t)l);
}

/* Whether r names the workspace or a directory above it. The rules and the
 * socket check above judge paths as text, while the resolver reaches the
 * workspace by the directory it holds: a rename of the workspace (or of
 * an ancestor, in a writable root that holds it) would part the two, and
 * a socket linked under the moved workspace's new name, outside by text,
 * was then reached through the old one (found by a probing session). So
 * neither may move, nor be replaced: EBUSY, as for a mount point. */
static bool holds_workspace(const struct cr_run *run, const struct cr_fsres *r)
{
	const char *ws = run->net ? run->net->ws_real : NULL;

	return !ws || cr_path_within(r->path, r->plen, ws, strlen(ws));
}

/* Would the directory at from move deeper into the run's /dev/shm tree,
 * or into it from elsewhere (a workspace on the same tmpfs: its tree may
 * be of any depth), by taking to's place? */
static bool deeper_in_shm(struct cr_run *run, const struct cr_fsres *from,
			  const struct cr_fsres *to)
{
	size_t d = cr_fs_shm_depth(run->fs, to->path, to->plen);

	return from->exists && S_ISDIR(from->st.st_mode) && d &&
	       cr_fs_shm_depth(run->fs, from->path, from->plen) < d;
}

/* Is the path argument's last name longer than a name may be, with every
 * name before it whole? Only then is its ENAMETOOLONG the last component's
 * lookup, which the kernel's rename makes after both parents' walks. (A
 * second read of the argument: it orders two refusals, decides nothing.) */
static bool last_name_too_long(struct cr_run *run,
			       const struct seccomp_notif *n, int pathi)
{
	char p[PATH_MAX];
	size_t len, end, start, k = 0;

	if (cr_fs_read_path(run, n, pathi, p, sizeof(p)))
		return false;
	len = strlen(p);
	for (end = len; end && p[end - 1] == '/'; end--)
		;
	for (start = end; start && p[start - 1] != '/'; start--)
		;
	if (end - start <= NAME_MAX)
		return false;
	while (k < start) {
		size_t c = strcspn(p + k, "/");

		if (c > NAME_MAX)
			return false;
		k += c + 1;
	}
	return true;
}

/* Two paths: both resolved without following the last component, both
 * entries inside writable roots. A link gives write access to its target,
 * so link's source must be writable too (a hard link from a read-only root
 * into the workspace would make that file writable). */
static struct cr_verdict do_two(struct cr_run *run, const struct seccomp_notif *n,
				const char *sys, int odi, int opi, int ndi,
				int npi, unsigned flags, bool link)
{
	struct cr_fsres a, b;
	struct cr_verdict v;
	int rc;

	/* A link's source is looked up whole (a trailing '/' follows a
	 * link there, as in the kernel); a rename's source and either new
	 * name are entries of their parents. */
	rc = cr_fs_arg(run, n, sys, odi, opi,
		       !link ? CR_RES_ENTRY :
		       flags & AT_SYMLINK_FOLLOW ? CR_RES_FOLLOW : 0, 0, &a);
	if (rc == -ENAMETOOLONG && !link && last_name_too_long(run, n, opi)) {
		/* rename walks both parents and refuses "." or ".." as
		 * either last name before it looks a last name up: the new
		 * name's errors first (found by a differential probe). */
		rc = cr_fs_arg(run, n, sys, ndi, npi, CR_RES_ENTRY, 0, &b);
		if (rc && (rc != -ENAMETOOLONG ||
			   !last_name_too_long(run, n, npi)))
			return CR_V_ERR(-rc);
		if (!rc) {
			bool dot = !strcmp(b.name, ".");

			cr_fsres_free(&b);
			if (dot)
				return CR_V_ERR(flags & RENAME_NOREPLACE ?
						EEXIST : EBUSY);
		}
		return CR_V_ERR(ENAMETOOLONG);
	}
	if (rc)
		return CR_V_ERR(-rc);
	/* The kernel's order: link looks its source up whole before the
	 * new name's parent (ENOENT first); rename looks up both parents,
	 * refuses "." and ".." as either last name (EBUSY, or EEXIST for a
	 * new one under RENAME_NOREPLACE), then the source, then the new
	 * name (a name too long there comes after the source's ENOENT). */
	if (link && !a.exists) {
		cr_fsres_free(&a);
		return CR_V_ERR(ENOENT);
	}
	rc = cr_fs_arg(run, n, sys, ndi, npi, CR_RES_ENTRY, 0, &b);
	if (rc) {
		if (!link && rc == -ENAMETOOLONG && !strcmp(a.name, ".") &&
		    last_name_too_long(run, n, npi))
			rc = -EBUSY;	/* "." refused before the lookup */
		else if (rc == -ENAMETOOLONG && !a.exists && strcmp(a.name, "."))
			rc = -ENOENT;
		/* The new name is made (an exchange's must exist): refused
		 * in a directory the program sees, it is EACCES. */
		else if (a.exists && (link || !(flags & RENAME_EXCHANGE)))
			rc = -cr_fs_create_refusal(run, &b, -rc, 0);
		cr_fsres_free(&a);
		return CR_V_ERR(-rc);
	}
	if (!link && (rc = mount_answer(&a, &b, false)) != 0) {
		v = CR_V_ERR(-rc);
	} else if (!link && !strcmp(a.name, ".")) {
		v = CR_V_ERR(EBUSY);
	} else if (!link && !strcmp(b.name, ".")) {
		v = CR_V_ERR(flags & RENAME_NOREPLACE ? EEXIST : EBUSY);
	} else if (!link && (rc = mount_answer(&a, &b, true)) != 0) {
		v = CR_V_ERR(-rc);
	} else if (!a.exists) {
		v = CR_V_ERR(ENOENT);
	} else if (!link && (flags & RENAME_WHITEOUT)) {
		/* A whiteout is a device node, never made (docs/policy.md);
		 * refused once the names were looked up, as mknod's (ENOENT
		 * came after it, found by a differential probing session). */
		v = CR_V_ERR(EPERM);
	} else if (!link && !S_ISDIR(a.st.st_mode) &&
		   !((flags & RENAME_EXCHANGE) && !b.exists) &&
		   !((flags & RENAME_NOREPLACE) && b.exists) &&
		   (a.trailing_slash ||
		    (!(flags & RENAME_EXCHANGE) && b.trailing_slash))) {
		/* do_renameat2: a source that is not a directory (a link
		 * included, never followed) under a name ending in '/',
		 * after its ENOENT (exchange) and EEXIST (noreplace). */
		v = CR_V_ERR(ENOTDIR);
	} else if (!link && (flags & RENAME_EXCHANGE) && b.exists &&
		   b.trailing_slash && !S_ISDIR(b.st.st_mode)) {
		v = CR_V_ERR(ENOTDIR);
	} else if (!b.exists && b.trailing_slash &&
		   (link || !S_ISDIR(a.st.st_mode)) &&
		   !(!link && (flags & RENAME_EXCHANGE))) {
		/* A new name ending in '/' must become a directory: a link
		 * never does, a rename only when it moves one. */
		v = CR_V_ERR(link ? ENOENT : ENOTDIR);
	} else if (link && !strcmp(b.name, ".")) {
		/* A new name that is no name ("d/.", "d/..", "/") exists:
		 * the kernel's filename_create. A source "d/.." is a
		 * directory, refused with EPERM below, as vfs_link does. */
		v = CR_V_ERR(EEXIST);
	} else if (!link && (flags & RENAME_NOREPLACE) && b.exists &&
		   same_dirs_dev(&a, &b)) {
		/* do_renameat2 answers these from the lookups, before
		 * any permission (vfs_rename): EACCES came first in a read
		 * root (found by a probing session). Both names are seen.
		 * Across filesystems its EXDEV comes first (below). */
		v = CR_V_ERR(EEXIST);
	} else if (!link && (flags & RENAME_EXCHANGE) && !b.exists &&
		   same_dirs_dev(&a, &b)) {
		v = CR_V_ERR(ENOENT);
	} else if (!link &&
		   (!cr_fs_entry_writable(run, (pid_t)n->pid, &a) ||
		    !cr_fs_entry_writable(run, (pid_t)n->pid, &b)) &&
		   (rc = rename_lookup_answer(&a, &b, flags)) != 0) {
		v = rc > 0 ? CR_V_VAL(0) : CR_V_ERR(-rc);
	} else if (!b.exists && cr_path_within("/proc", 5, b.path, b.plen) &&
		   !cr_fs_entry_writable(run, (pid_t)n->pid, &b)) {
		/* procfs's lookup of the new name fails first (ENOENT,
		 * cr_fs_proc_refusal), whatever the old one is. */
		v = refuse_as(run, n, sys, &b, 0);
	} else if (!cr_fs_entry_writable(run, (pid_t)n->pid, &a)) {
		v = refuse_as(run, n, sys, &a, link ? link_kerr((pid_t)n->pid, &a, &b) : 0);
	} else if (!cr_fs_entry_writable(run, (pid_t)n->pid, &b)) {
		v = refuse_as(run, n, sys, &b, link ? link_kerr((pid_t)n->pid, &a, &b) : 0);
	} else if (!link && ((a.exists && holds_workspace(run, &a)) ||
			     (b.exists && holds_workspace(run, &b)))) {
		struct cr_fsres *m = a.exists && holds_workspace(run, &a) ?
				     &a : &b;

		m->refused = true;
		cr_fs_deny(run, n, sys, m,
			   "the workspace and the directories above it do not move");
		v = CR_V_ERR(EBUSY);
	} else if (link && S_ISDIR(a.st.st_mode) && !b.exists &&
		   same_dev(b.dirfd, &a.st)) {
		/* No directory is ever linked (vfs_link: EPERM), whatever
		 * the places; EXDEV came first across roots (found by a
		 * probing session), and the new name's directory's own
		 * permission (may_create: EACCES; corral has the program's
		 * uid; a differential probe). */
		v = syscall(SYS_faccessat2, b.dirfd, "", W_OK | X_OK,
			    AT_EACCESS | AT_EMPTY_PATH) < 0 && errno == EACCES ?
		    CR_V_ERR(EACCES) : CR_V_ERR(EPERM);
	} else if (brings_in(run, &a, &b) ||
		   (!link && (flags & RENAME_EXCHANGE) &&
		    brings_in(run, &b, &a))) {
		struct cr_fsres *m = brings_in(run, &a, &b) ? &a : &b;

		m->refused = true;
		cr_fs_deny(run, n, sys, m,
			   S_ISSOCK(m->st.st_mode) ?
			   "a unix socket may not be brought into the workspace from outside it" :
			   "a directory may not be moved into the workspace from outside it (it may hold unix sockets)");
		v = CR_V_ERR(EXDEV);
	} else if (!link && (deeper_in_shm(run, &a, &b) ||
			     ((flags & RENAME_EXCHANGE) &&
			      deeper_in_shm(run, &b, &a)))) {
		/* The run's /dev/shm tree is measured and removed down to
		 * CR_SHM_DEPTH (fs/shm.c), and made no deeper: a directory
		 * moving deeper into it, or into it from elsewhere, could
		 * carry its tree past that. Programs fall back to a copy,
		 * as across filesystems. */
		struct cr_fsres *m = deeper_in_shm(run, &a, &b) ? &a : &b;

		m->refused = true;
		cr_fs_deny(run, n, sys, m,
			   "a directory may not move into /dev/shm from elsewhere, nor deeper in it");
		v = CR_V_ERR(EXDEV);
	} else if (!link && (holds_deny(run, &a) ||
			     ((flags & RENAME_EXCHANGE) && holds_deny(run, &b)))) {
		struct cr_fsres *m = holds_deny(run, &a) ? &a : &b;

		m->refused = true;
		cr_fs_deny(run, n, sys, m, "would move a denied subtree");
		v = CR_V_ERR(EACCES);
	} else if (link && !b.exists &&
		   (rc = cr_budget_on_create(run, (pid_t)n->pid))) {
		/* A link adds a name; a rename to a new name only moves one
		 * (an earlier build counted it as made, so writing files
		 * by temporary name and rename ended a run at half its
		 * files budget). */
		v = CR_V_ERR(-rc);
	} else if (!link && b.exists && a.st.st_dev == b.st.st_dev &&
		   a.st.st_ino == b.st.st_ino) {
		/* Two names of one file: rename does nothing and succeeds
		 * (rename(2)), and no name goes. */
		cr_slow_begin();
		rc = (int)syscall(SYS_renameat2, a.dirfd, a.name, b.dirfd,
				  b.name, flags);
		cr_slow_end();
		v = rc < 0 ? CR_V_ERR(errno) : CR_V_VAL(0);
	} else if (link) {
		if (b.exists)
			v = CR_V_ERR(EEXIST);
		else if (S_ISDIR(a.st.st_mode))
			v = CR_V_ERR(EPERM);
		else {
			cr_slow_begin();
			v = linkat(a.dirfd, a.name, b.dirfd, b.name, 0) < 0 ?
			    CR_V_ERR(errno) : CR_V_VAL(0);
			cr_slow_end();
		}
		if (v.kind == CR_V_VALUE)
			cr_budget_on_placed(run, &b);
	} else if (b.exists && S_ISREG(b.st.st_mode) &&
		   !(flags & RENAME_EXCHANGE) &&
		   (rc = cr_fs_held_room(run))) {
		v = CR_V_ERR(-rc);
	} else {
		/* Renaming over a file removes its name: see do_unlink;
		 * over a directory, the directory (fs/rmheld.c). */
		struct cr_fs_keep keep = { .fd = -1 };
		struct cr_rmheld_tok gone = { .wd = -1 };
		bool overdir = b.exists && S_ISDIR(b.st.st_mode) &&
			       !(flags & RENAME_EXCHANGE);

		rc = flags & RENAME_EXCHANGE ? 0 :
		     overdir ? cr_fs_rmheld_before(run->fs, b.dirfd, b.name,
						   &gone) :
		     cr_fs_held_before_unlink(run, &b, &keep);
		if (rc) {
			cr_fsres_free(&a);
			cr_fsres_free(&b);
			return CR_V_ERR(-rc);
		}
		if (b.exists && !(flags & RENAME_EXCHANGE) &&
		    !S_ISDIR(b.st.st_mode) && b.st.st_nlink > 1)
			cr_budget_on_placed(run, &b);	/* see do_unlink */
		cr_slow_begin();
		rc = (int)syscall(SYS_renameat2, a.dirfd, a.name, b.dirfd,
				  b.name, flags);
		cr_slow_end();
		v = rc < 0 ? CR_V_ERR(errno) : CR_V_VAL(0);
		cr_fs_held_after_unlink(run, &keep, rc == 0);
		if (overdir)
			cr_fs_rmheld_after(run->fs, &gone, rc == 0);
		if (!rc) {
			struct stat now;

			/* A name went only if the old one did: another
			 * thread may have made the new name a link of the
			 * same file since the check, and rename then does
			 * nothing. */
			if (b.exists && !(flags & RENAME_EXCHANGE) &&
			    !(fstatat(a.dirfd, a.name, &now,
				      AT_SYMLINK_NOFOLLOW) == 0 &&
			      now.st_dev == a.st.st_dev &&
			      now.st_ino == a.st.st_ino)) {
				cr_budget_on_remove(run);
				cr_budget_on_unnamed(run, &b.st);
			}
			/* The object moved, maybe behind the walk (budget/disk.c);
			 * an exchange moved two. */
			cr_budget_on_placed(run, &b);
			if (flags & RENAME_EXCHANGE)
				cr_budget_on_placed(run, &a);
		}
	}
	cr_fsres_free(&a);
	cr_fsres_free(&b);
	return v;
}

struct cr_verdict cr_h_rename(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	return do_two(run, n, e->name, -1, 0, -1, 1, 0, false);
}

struct cr_verdict cr_h_renameat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	return do_two(run, n, e->name, 0, 1, 2, 3, 0, false);
}

struct cr_verdict cr_h_renameat2(struct cr_run *run,
				 const struct cr_syscall_entry *e,
				 const struct seccomp_notif *n)
{
	unsigned flags = (unsigned)n->data.args[4];

	/* The kernel's order (do_renameat2): unknown bits, then flags that
	 * exclude each other, before any name is looked at. */
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE |
				RENAME_WHITEOUT) ||
	    ((flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)) &&
	     (flags & RENAME_EXCHANGE)))
		return CR_V_ERR(EINVAL);
	return do_two(run, n, e->name, 0, 1, 2, 3, flags, false);
}

struct cr_verdict cr_h_link(struct cr_run *run, const struct cr_syscall_entry *e,
			    const struct seccomp_notif *n)
{
	return do_two(run, n, e->name, -1, 0, -1, 1, 0, true);
}

/* N when p names the caller's own descriptor N absolutely:
 * "/proc/self/fd/N", "/proc/thread-self/fd/N", "/dev/fd/N" or
 * "/proc/<its pid or tid>/fd/N"; else -1. */
static int own_fd_path(struct cr_run *run, pid_t tid, const char *p)
{
	const struct cr_task *t = cr_tasks_find(&run->tasks, tid);
	const char *rest = NULL;
	char *end;
	long v;

	if (!strncmp(p, "/dev/fd/", 8)) {
		rest = p + 8;
	} else if (!strncmp(p, "/proc/", 6)) {
		p += 6;
		if (!strncmp(p, "self/fd/", 8)) {
			rest = p + 8;
		} else if (!strncmp(p, "thread-self/fd/", 15)) {
			rest = p + 15;
		} else if (*p >= '1' && *p <= '9') {
			v = strtol(p, &end, 10);
			if (!strncmp(end, "/fd/", 4) && t &&
			    (v == tid || v == t->tgid))
				rest = end + 4;
		}
	}
	if (!rest || *rest < '0' || *rest > '9')
		return -1;
	v = strtol(rest, &end, 10);
	return *end || v > INT_MAX ? -1 : (int)v;
}

/* linkat(fd, "", ..., AT_EMPTY_PATH): give a name to an open file, e.g. an
 * O_TMPFILE. Allowed when the fd's file lives in a writable root; done
 * through "/proc/self/fd/N", which needs no capability. */
static struct cr_verdict link_fd(struct cr_run *run, const struct seccomp_notif *n,
				 const char *sys, int taskfd, bool by_path)
{
	struct cr_fsres b;
	char p[64];
	int fd, rc;

	if (taskfd == AT_FDCWD && !by_path) {
		/* The kernel links the cwd itself: a directory, EPERM,
		 * once the new name is found free. */
		rc = cr_fs_arg(run, n, sys, 2, 3, CR_RES_ENTRY, 0, &b);
		if (rc)
			return CR_V_ERR(-rc);
		rc = b.exists ? EEXIST : b.trailing_slash ? ENOENT : EPERM;
		cr_fsres_free(&b);
		return CR_V_ERR(rc);
	}
	fd = cr_fs_task_fd(run, (pid_t)n->pid, taskfd);
	/* Named as /proc/self/fd/N, a descriptor not open is a name that
	 * does not exist. */
	if (fd == -EBADF && by_path)
		fd = -ENOENT;
	if (fd < 0)
		return CR_V_ERR(-fd);
	rc = cr_fs_fd_writable(run, n, sys, fd);
	if (!rc)
		rc = cr_fs_arg(run, n, sys, 2, 3, CR_RES_ENTRY, 0, &b);
	if (rc) {
		close(fd);
		return CR_V_ERR(-rc);
	}
	if (b.exists) {
		rc = -EEXIST;
	} else if (b.trailing_slash) {
		rc = -ENOENT;	/* the kernel's: "n/" asks for a directory */
	} else if (!cr_fs_entry_writable(run, (pid_t)n->pid, &b)) {
		rc = -cr_fsrules_refusal(&run->fs->rules, b.acc);
	} else if (fd_brings_in(run, fd, &b)) {
		b.refused = true;
		cr_fs_deny(run, n, sys, &b,
			   "a unix socket may not be brought into the workspace from outside it");
		rc = -EXDEV;
	} else if (b.plen > 9 && !memcmp(b.path, "/dev/shm/", 9)) {
		/* Only files may be made there (create.c), and each is
		 * tagged and swept as any other of the run's objects. */
		struct stat st;

		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			b.refused = true;
			cr_fs_deny(run, n, sys, &b,
				   "only files and directories may be made in /dev/shm");
			rc = -EPERM;
		}
	}
	/* A name given to an open file is an entry made, as by link(2):
	 * counted (an earlier build did not, and a second name of a run's
	 * /dev/shm object, the first unlinked, outlived the run uncounted;
	 * in /dev/shm it is made in the run's private directory, which
	 * cleanup removes whole). */
	if (!rc)
		rc = cr_budget_on_create(run, (pid_t)n->pid);
	if (!rc) {
		cr_fs_fdpath(fd, p, sizeof(p));
		cr_slow_begin();
		rc = linkat(AT_FDCWD, p, b.dirfd, b.name, AT_SYMLINK_FOLLOW) < 0 ?
		     -errno : 0;
		cr_slow_end();
		if (rc) {
			cr_budget_on_remove(run);
		} else {
			cr_budget_on_placed(run, &b);
		}
	}
	cr_fsres_free(&b);
	close(fd);
	return rc ? CR_V_ERR(-rc) : CR_V_VAL(0);
}

struct cr_verdict cr_h_linkat(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	unsigned flags = (unsigned)n->data.args[4];

	if (flags & ~(unsigned)(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return CR_V_ERR(EINVAL);
	if (flags & AT_EMPTY_PATH) {
		char c = 1;

		if (!cr_mem_read((pid_t)n->pid, n->data.args[1], &c, 1) && !c)
			return link_fd(run, n, e->name, (int)n->data.args[0], false);
	}
	if (flags & AT_SYMLINK_FOLLOW) {
		char old[64];
		int fd;

		/* The form open(2) gives for naming an O_TMPFILE without a
		 * capability: linkat(AT_FDCWD, "/proc/self/fd/N", ...,
		 * AT_SYMLINK_FOLLOW). The walk cannot follow a link to a file
		 * without a name (ENOENT), so the caller's own fd is taken, as
		 * for AT_EMPTY_PATH. The path is read once and not looked at
		 * again: the fd named is the one linked. */
		if (cr_mem_read_str((pid_t)n->pid, n->data.args[1], old,
				    sizeof(old)) == 0 &&
		    (fd = own_fd_path(run, (pid_t)n->pid, old)) >= 0)
			return link_fd(run, n, e->name, fd, true);
	}
	return do_two(run, n, e->name, 0, 1, 2, 3, flags & AT_SYMLINK_FOLLOW, true);
}
