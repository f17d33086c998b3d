/* tracer/budget/disk.c: the disk and files budgets: the incremental walk of the
 * writable roots, and the charges of creations, writes and allocations. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <sys/types.h>
#include <linux/openat2.h>

#include "internal.h"
#include "../fs/fs.h"
#include "../net/net.h"

static int walk_sync(struct cr_budgets *b, int fd, int depth);
static int confirm_paced(struct cr_run *run);
static int alloc_confirm(struct cr_run *run);

/* ---- disk and files: the workspace walk ----
 *
 * The program can change the workspace while we walk it. The walk opens
 * each directory with O_NOFOLLOW | O_DIRECTORY relative to its parent's fd,
 * so a directory swapped for a symlink is never followed out of the
 * workspace, and lstat-like fstatat(AT_SYMLINK_NOFOLLOW) sizes the entries.
 * A pass spread over ticks lets the loop move entries between two of its
 * slices: one met twice counts once (the pass keeps the inodes it met), and
 * one given a name behind the walker is measured at the end of the pass
 * (walk_fixup); the hooks of the filesystem layer make creation counts
 * exact. A directory the program made unreadable is measured with
 * the owner's bits lent for the moment (walk_locked); one we still cannot
 * read would hide what is below it, so it stops the run (fail closed),
 * unless it is another user's that the run cannot even search
 * (walk_unlisted). */

void bg_walk_reset(struct cr_budgets *b)
{
	while (b->depth > 0)
		cr_dir_close(b->stack[--b->depth]);
	b->w_bytes = b->w_files = 0;
	b->root = 0;
	b->in_pass = false;
	b->redo = false;
	b->fixing = false;
	if (b->ws)
		cr_walkset_clear(b->ws, b->seen_max);
}

/* A directory's reading buffer: large near the roots, where directories
 * are wide, small deep down, where a configure check's chain of hundreds
 * of nested directories holds one entry each (an open DIR took 32 KiB). */
static size_t walk_buf(int depth)
{
	return depth < 32 ? 32768 : 2048;
}

/* Room for one more directory on the stack (and its listing's note). */
static int walk_grow(struct cr_budgets *b)
{
	if (b->depth == b->stackcap) {
		int cap = b->stackcap ? b->stackcap * 2 : 64;
		struct cr_dir **g = realloc(b->stack, (size_t)cap * sizeof(*g));
		struct bg_listing *l;

		if (!g)
			return -ENOMEM;
		b->stack = g;
		l = realloc(b->listing, (size_t)cap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		b->listing = l;
		b->stackcap = cap;
	}
	return 0;
}

static int walk_push(struct cr_budgets *b, int fd)
{
	struct cr_dir *d;
	int rc;

	if (b->depth >= CR_BUDGET_WALK_DEPTH) {
		close(fd);
		return -ELOOP;
	}
	if ((rc = walk_grow(b)) < 0) {
		close(fd);
		return rc;
	}
	d = cr_dir_open(fd, walk_buf(b->depth));
	if (!d)
		return -errno;
	b->listing[b->depth].record = false;
	b->stack[b->depth++] = d;
	return 0;
}

/* Does the filesystem of opath (device dev) report every change of a
 * directory's entries to an inotify watch, in the call that makes it? The
 * local ones; not a network or FUSE one, where another machine or the
 * server can change entries no watch here sees. Remembered for the last
 * device asked. */
static bool watchable_fs(struct cr_budgets *b, int opath, dev_t dev)
{
	struct statfs sf;

	if (b->lc_dev_known && b->lc_dev == dev)
		return b->lc_dev_ok;
	if (fstatfs(opath, &sf) < 0)
		return false;
	b->lc_dev = dev;
	b->lc_dev_known = true;
	b->lc_dev_ok = sf.f_type == TMPFS_MAGIC ||
		       sf.f_type == EXT4_SUPER_MAGIC ||	/* ext2/3/4 */
		       sf.f_type == XFS_SUPER_MAGIC ||
		       sf.f_type == BTRFS_SUPER_MAGIC;
	return b->lc_dev_ok;
}

/*
 * A directory the pass goes into, from an O_PATH handle of it (taken): its
 * names as last listed while corral's watch on it reported no change
 * (listcache.c: no open, no getdents, nothing a watch of the program's
 * reports), else listed, the watch placed first, and the listing recorded
 * for the next pass. Its stat asks no times (quietstat.c). -errno with
 * errno set when it cannot be listed (EACCES: the caller's unreadable
 * directory).
 */
static int walk_enter(struct cr_budgets *b, int opath)
{
	struct bg_listing *l;
	const char *names = NULL;
	struct stat st;
	size_t len;
	bool keep;
	int fd, rc, wd = -1;

	if (cr_quiet_fstat(opath, &st) < 0) {
		rc = -errno;
		close(opath);
		errno = -rc;
		return rc;
	}
	keep = b->lc && watchable_fs(b, opath, st.st_dev);
	if (keep)
		names = cr_listcache_get(b->lc, &st, &len);
	if (names) {
		struct cr_dir *d;

		rc = b->depth >= CR_BUDGET_WALK_DEPTH ? -ELOOP : walk_grow(b);
		if (rc < 0) {
			close(opath);
			errno = -rc;
			return rc;
		}
		if (!(d = cr_dir_given(opath, names, len)))
			return -errno;
		b->listing[b->depth].record = false;
		b->stack[b->depth++] = d;
		return 0;
	}
	if (keep)
		wd = cr_listcache_watch(b->lc, opath, &st);
	fd = cr_quiet_opendir(opath, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = fd < 0 ? -errno : 0;
	close(opath);
	if (rc) {
		errno = -rc;
		return rc;
	}
	if ((rc = walk_push(b, fd))) {
		errno = -rc;
		return rc;
	}
	if (wd < 0)
		return 0;
	l = &b->listing[b->depth - 1];
	l->record = true;
	l->st = st;
	l->wd = wd;
	cr_dir_record(b->stack[b->depth - 1], CR_LISTCACHE_DIR_BYTES);
	return 0;
}

/* The directory at the top of the stack was read to its end: its listing
 * kept if it was recorded (walk_enter). */
static void walk_listed(struct cr_budgets *b)
{
	const struct bg_listing *l = &b->listing[b->depth - 1];
	const char *names;
	size_t len;

	if (l->record &&
	    (names = cr_dir_recorded(b->stack[b->depth - 1], &len)))
		cr_listcache_put(b->lc, &l->st, l->wd, names, len);
}

static uint64_t entry_bytes(const struct stat *st)
{
	uint64_t bytes = (uint64_t)st->st_blocks * 512;

	/* A file with several names is shared by them. */
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1)
		bytes /= st->st_nlink;
	return bytes;
}


/* Count an entry the pass meets. False when the pass met its inode before
 * (it was moved while the pass ran) and must not count it again: a
 * directory is then not entered again either. A file of several names
 * adds its share per name, never more than its blocks in all. */
static bool count_entry(struct cr_budgets *b, const struct stat *st)
{
	uint64_t blocks = (uint64_t)st->st_blocks * 512;
	uint64_t add = entry_bytes(st), *counted;
	int rc;

	if (b->fixing) {
		if (!b->fix_left) {
			b->redo = true;
			return false;
		}
		b->fix_left--;
	}
	if (!b->tracking) {
		b->w_files++;
		b->w_bytes += add;
		return true;
	}
	rc = cr_walkset_see(b->ws, st->st_dev, st->st_ino, &counted);
	if (rc < 0) {
		/* Cannot remember it: counted as met, and the pass is
		 * redone in one go at its end. */
		b->redo = true;
		b->w_files++;
		b->w_bytes += add;
		return true;
	}
	if (rc == 1 && (S_ISDIR(st->st_mode) || st->st_nlink <= 1))
		return false;
	if (add > blocks - (*counted < blocks ? *counted : blocks))
		add = blocks - (*counted < blocks ? *counted : blocks);
	*counted += add;
	b->w_files++;
	b->w_bytes += add;
	return true;
}

/* A directory of ours whose owner may not list or search it. */
static bool locked(const struct stat *st, uid_t uid)
{
	return S_ISDIR(st->st_mode) && st->st_uid == uid &&
	       (st->st_mode & (S_IRUSR | S_IXUSR)) != (S_IRUSR | S_IXUSR);
}

/* A directory of the run's own that the program made unreadable (test
 * suites chmod 0 their own directories to test error paths). We run as the
 * same uid without DAC overrides, so we lend ourselves the owner's read and
 * search bits on the inode itself (an O_PATH fd, never the name, which the
 * program may move), measure everything beneath in one go and put the mode
 * back. Synchronous on purpose: every call the program makes on a path is
 * performed by this thread, so none of them can meet the lent mode. */
static int walk_lent(struct cr_budgets *b, int opath, int depth)
{
	char p[64];
	struct stat st;
	int fd, rc;

	if (fstat(opath, &st) < 0 || st.st_uid != b->uid)
		return -EACCES;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", opath);
	if (chmod(p, (st.st_mode & 07777) | S_IRUSR | S_IXUSR) < 0)
		return -errno;
	fd = cr_quiet_opendir(opath, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = fd < 0 ? -errno : walk_sync(b, fd, depth);
	if (chmod(p, st.st_mode & 07777) < 0 && !rc)
		rc = -errno;
	return rc;
}

static int walk_locked(struct cr_budgets *b, int parent, const char *name,
		       int depth)
{
	int opath, rc;

	opath = openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (opath < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ?
		       0 : -errno;
	rc = walk_lent(b, opath, depth);
	close(opath);
	return rc;
}

/* A directory of another user that we may not list (opath: an O_PATH
 * handle of it). Not listing it is safe only if the run cannot reach
 * beneath it either: every path call of the run that makes, opens for
 * writing, links or renames is performed by this supervisor, with these
 * very credentials, so when we may not search the directory, no name
 * beneath it can be made, grown or linked by the run, and it is skipped
 * (0). One we may search but not list (a drop box: 0733, 1733, or 0711
 * over a file the run may write) lets the run create and grow files by
 * name that no pass would ever see, its names divide the blocks of files
 * linked there, and what was left there before the run can grow too: the
 * pass cannot measure the roots (-EACCES, fail closed; its path is kept
 * for the message). The kernel judges the search itself (a lookup of "."
 * in it), groups and ACLs included. */
static int other_unlisted(struct cr_budgets *b, int opath)
{
	char p[64], path[PATH_MAX];
	ssize_t n;
	int fd = openat(opath, ".", O_PATH | O_CLOEXEC);

	if (fd < 0)
		return errno == EACCES ? 0 : -errno;
	close(fd);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", opath);
	n = readlink(p, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = 0;
	free(b->fail_dir);
	b->fail_dir = n > 0 ? strdup(path) : NULL;	/* for the message */
	return -EACCES;
}

/* A directory the walk met and may not open for listing (EACCES): one of
 * ours, whatever its name now leads to, is measured with the owner's bits
 * lent (the program may have made it unreadable to hide what is below);
 * one of another user's as other_unlisted says. */
static int walk_unlisted(struct cr_budgets *b, int parent, const char *name,
			 int depth)
{
	struct stat st;
	int opath, rc;

	opath = openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (opath < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ?
		       0 : -errno;	/* replaced meanwhile */
	if (fstat(opath, &st) < 0)
		rc = -errno;
	else if (st.st_uid == b->uid)
		rc = walk_lent(b, opath, depth);
	else
		rc = other_unlisted(b, opath);
	close(opath);
	return rc;
}

/* Measure a whole subtree now (fd is consumed); the counts go to the pass
 * in progress. */
/* One entry of the directory dfd, at depth (the directory's): counted,
 * and a directory walked to its end. 0 or -errno. */
static int walk_entry(struct cr_budgets *b, int dfd, const char *name,
		      int depth)
{
	struct stat st;
	int sub;

	if (cr_quiet_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!count_entry(b, &st) || !S_ISDIR(st.st_mode))
		return 0;
	if (locked(&st, b->uid))
		return walk_locked(b, dfd, name, depth + 1);
	sub = cr_quiet_opendir(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub >= 0)
		return walk_sync(b, sub, depth + 1);
	if (errno == EACCES)
		return walk_unlisted(b, dfd, name, depth + 1);
	return errno != ENOENT && errno != ENOTDIR && errno != ELOOP ?
	       -errno : 0;
}

/* walk_sync recurses once per level beneath a directory made unreadable
 * (its mode lent), on the loop thread's stack: a tree 4090 levels deep
 * under a chmod-000 directory overflowed a 1 MiB stack (`ulimit -s 1024`,
 * the supervisor killed by SIGSEGV, the lent mode left; found by a probing
 * session). Past the room the stack limit leaves, the tree is not
 * measurable: -EOVERFLOW, and the run ends (fail closed). */
static bool sync_stack_full(const struct cr_budgets *b)
{
	/* The frame's own address: a sanitizer's fake stack would move a
	 * local's elsewhere. */
	uintptr_t at = (uintptr_t)__builtin_frame_address(0);

	return b->sync_top && pthread_equal(pthread_self(), b->sync_thread) &&
	       at < b->sync_top && b->sync_top - at > b->sync_room;
}

static int walk_sync(struct cr_budgets *b, int fd, int depth)
{
	const char *name;
	struct cr_dir *d;
	int rc = 0;

	if (depth >= CR_BUDGET_WALK_DEPTH) {
		close(fd);
		return -ELOOP;
	}
	if (sync_stack_full(b)) {
		close(fd);
		return -EOVERFLOW;
	}
	d = cr_dir_open(fd, walk_buf(depth));
	if (!d)
		return -errno;
	while (!b->redo && !rc) {
		errno = 0;
		name = cr_dir_next(d);
		if (!name) {
			rc = errno ? -errno : 0;
			break;
		}
		if (strcmp(name, ".") && strcmp(name, ".."))
			rc = walk_entry(b, cr_dir_fd(d), name, depth);
	}
	cr_dir_close(d);
	return rc;
}

/* The program took its own read or search bit from a directory the pass
 * holds open across ticks (a test suite toggling a directory's mode):
 * its entries can no longer be looked at. The owner's bits are lent on
 * the inode (as walk_lent does), the rest of the directory, from the
 * entry that failed, is walked now in one go, and the mode put back:
 * synchronous, so no call of the program meets the lent mode. Ending the
 * run there ended ~3 % of a differential probe's runs with no intent in
 * the program; abandoning the pass would let a program that keeps
 * toggling keep every pass from finishing. 0 or -errno. */
static int walk_finish_lent(struct cr_budgets *b, struct cr_dir *d,
			    const char *first, int depth)
{
	char p[64];
	struct stat st;
	const char *name;
	int fd = cr_dir_fd(d), rc;

	if (fstat(fd, &st) < 0 || st.st_uid != b->uid)
		return -EACCES;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (chmod(p, (st.st_mode & 07777) | S_IRUSR | S_IXUSR) < 0)
		return -errno;
	rc = walk_entry(b, fd, first, depth);
	while (!rc && !b->redo) {
		errno = 0;
		name = cr_dir_next(d);
		if (!name) {
			rc = errno ? -errno : 0;
			break;
		}
		if (strcmp(name, ".") && strcmp(name, ".."))
			rc = walk_entry(b, fd, name, depth);
	}
	if (chmod(p, st.st_mode & 07777) < 0 && !rc)
		rc = -errno;
	return rc;
}

/* The last complete figure of the fd scan, a scan started or advanced
 * when due. The finisher's pass (the tree is dead) always completes one. */
static uint64_t deleted_bytes(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	if (!run->tasks.count)
		bg_fdscan_run(run, SIZE_MAX);
	else if (b->fs_on || cr_now_ns() >= b->fdscan_next_ns)
		bg_fdscan_run(run, CR_BUDGET_FDSCAN_STEP);
	return b->deleted;
}

/* A directory the end of a pass measures (opath: its O_PATH handle), as
 * the walk would: with the owner's bits lent when they are missing, one
 * of another user's that we may not read as other_unlisted says. */
static int fixup_dir(struct cr_budgets *b, int opath, const struct stat *st)
{
	int fd;

	if (locked(st, b->uid))
		return walk_lent(b, opath, 1);
	fd = cr_quiet_opendir(opath, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		return walk_sync(b, fd, 1);
	if (errno != EACCES)
		return -errno;
	return st->st_uid == b->uid ? walk_lent(b, opath, 1) :
	       other_unlisted(b, opath);
}

/* The end of a pass spread over ticks: each object the run gave a name
 * to while it ran (moved, linked, made) and the walk did not meet is
 * measured now, wherever it is; a directory with its whole subtree,
 * nothing met twice. A file followed is counted whole: its other names,
 * met or not, cannot make it count less. Synchronous, so nothing moves
 * meanwhile. Whatever cannot be done within CR_BUDGET_FIXUP_MAX entries,
 * or fails, sets b->redo: the caller redoes the pass in one go. */
static void walk_fixup(struct cr_budgets *b)
{
	size_t n = cr_walkset_nplaced(b->ws);

	b->fixing = true;
	b->fix_left = CR_BUDGET_FIXUP_MAX;
	for (size_t i = 0; i < n && !b->redo; i++) {
		int fd = cr_walkset_placed_fd(b->ws, i);
		uint64_t blocks, *counted;
		struct stat st;
		int rc;

		if (fstat(fd, &st) < 0) {
			b->redo = true;
			break;
		}
		if (!st.st_nlink)
			continue;	/* no name left: the ledger's, if held */
		if (!b->fix_left) {
			b->redo = true;
			break;
		}
		b->fix_left--;
		rc = cr_walkset_see(b->ws, st.st_dev, st.st_ino, &counted);
		if (rc < 0) {
			b->redo = true;
			break;
		}
		if (rc == 1 && S_ISDIR(st.st_mode))
			continue;	/* the walk went through it */
		if (rc == 0)
			b->w_files++;
		blocks = (uint64_t)st.st_blocks * 512;
		if (blocks > *counted) {
			b->w_bytes += blocks - *counted;
			*counted = blocks;
		}
		if (S_ISDIR(st.st_mode) && fixup_dir(b, fd, &st) < 0)
			b->redo = true;
	}
	b->fixing = false;
}

/* Advance the walk by at most `budget` entries. Returns 1 when a pass over
 * every root just completed, 0 when it is still going, -errno when a root
 * cannot be measured (the pass is abandoned). */
static int walk_step(struct cr_run *run, size_t budget)
{
	struct cr_budgets *b = run->budgets;
	int rc;

	if (!b->in_pass) {
		bg_walk_reset(b);
		cr_listcache_pass(b->lc);
		b->in_pass = true;
		b->fail_root = NULL;
		free(b->fail_dir);
		b->fail_dir = NULL;
	}
	while (budget) {
		struct cr_dir *d;
		const char *name;
		struct stat st;

		if (b->depth == 0) {
			int fd;

			if (b->root == b->nroots) {
				if (b->tracking && !b->redo)
					walk_fixup(b);
				b->pass_deleted = deleted_bytes(run);
				b->w_bytes += b->pass_deleted;
				b->lq_in = b->lq_scan;
				b->lq_in_shm = b->lq_scan_shm;
				b->in_pass = false;
				/* What the pass did not meet is gone. */
				cr_listcache_sweep(b->lc);
				return 1;
			}
			if (b->root_named[b->root]) {
				/* Absent when the run was set up: reached
				 * through a link now, it is no place the
				 * program can write (its calls are judged
				 * where the link leads), and what lies there
				 * is not the run's (another run's link made
				 * it charge a tree it could not touch; found
				 * by a probing session). */
				struct open_how how = {
					.flags = O_PATH | O_DIRECTORY |
						 O_NOFOLLOW | O_CLOEXEC,
					.resolve = RESOLVE_NO_SYMLINKS,
				};

				fd = (int)syscall(SYS_openat2, AT_FDCWD,
						  b->roots[b->root++], &how,
						  sizeof(how));
				if (fd < 0 && errno == ELOOP)
					continue;
			} else {
				fd = openat(AT_FDCWD, b->roots[b->root++],
					    O_PATH | O_DIRECTORY | O_NOFOLLOW |
					    O_CLOEXEC);
			}
			/* An O_PATH handle, then its names (walk_enter): a
			 * root that cannot be listed fails there. */
			if (fd >= 0 && walk_enter(b, fd) < 0)
				fd = -1;
			else if (fd >= 0)
				continue;
			if (fd < 0 && errno == ENOENT)
				continue;	/* an absent root holds nothing */
			if (fd < 0 && errno == ENOTDIR &&
			    fstatat(AT_FDCWD, b->roots[b->root - 1], &st,
				    AT_SYMLINK_NOFOLLOW) == 0 &&
			    !S_ISDIR(st.st_mode)) {
				/* A root that is one file (--rw FILE): its
				 * blocks. The run may write it, never
				 * rename or remove it (its parent is not
				 * a root). */
				count_entry(b, &st);
				continue;
			}
			if (errno == EACCES)	/* chmod 0 on a root */
				rc = walk_locked(b, AT_FDCWD, b->roots[b->root - 1], 0);
			else
				rc = -errno;
			if (rc)
				goto fail;
			continue;
		}
		budget--;
		d = b->stack[b->depth - 1];
		errno = 0;
		name = cr_dir_next(d);
		if (!name) {
			if (errno) {
				rc = -errno;
				goto fail;
			}
			walk_listed(b);
			cr_dir_close(d);
			b->depth--;
			continue;
		}
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (cr_quiet_fstatat(cr_dir_fd(d), name, &st,
				     AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;	/* removed meanwhile */
			if (errno != EACCES) {
				rc = -errno;
				goto fail;
			}
			rc = walk_finish_lent(b, d, name, b->depth - 1);
			if (rc)
				goto fail;
			cr_dir_close(d);
			b->depth--;
			continue;
		}
		if (!count_entry(b, &st))
			continue;
		if (locked(&st, b->uid)) {
			rc = walk_locked(b, cr_dir_fd(d), name, b->depth);
			if (rc)
				goto fail;
		} else if (S_ISDIR(st.st_mode)) {
			int fd = openat(cr_dir_fd(d), name, O_PATH |
					O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd < 0 && (errno == ENOENT || errno == ENOTDIR ||
				       errno == ELOOP))
				continue;	/* replaced meanwhile */
			/* walk_enter's own ELOOP is the walk's depth. */
			rc = fd < 0 ? -errno : walk_enter(b, fd);
			if (rc == -ENOENT)
				continue;	/* removed meanwhile */
			if (rc == -EACCES) {
				rc = walk_unlisted(b, cr_dir_fd(d), name,
						   b->depth);
				if (rc)
					goto fail;
				continue;
			}
			if (rc)
				goto fail;
		}
	}
	return 0;
fail:
	/* The reset forgets which root the pass was in: the messages
	 * name it. */
	b->fail_root = b->roots[b->root ? b->root - 1 : 0];
	bg_walk_reset(b);
	return rc;
}

uint64_t bg_over(uint64_t v, uint64_t base)
{
	return v > base ? v - base : 0;
}


/* The last complete figure with the allocations not yet measured. */
static uint64_t alloc_judged(const struct cr_budgets *b)
{
	return (b->disk > b->hook_bytes ? b->disk : b->hook_bytes) +
	       b->al_pend + b->al_scan;
}

/* Judge what is known: a pass in progress already proves at least its
 * partial sums exist. */

static void judge_disk(struct cr_run *run, bool complete)
{
	struct cr_budgets *b = run->budgets;
	uint64_t files = bg_over(b->w_files, b->base_files);
	uint64_t disk = bg_over(b->w_bytes, b->base_bytes);
	bool stale;

	if (complete) {
		b->files = files;
		b->disk = disk;
		b->al_scan = 0;
	}
	if (b->hook_files > files)
		files = b->hook_files;
	if (b->hook_bytes > disk)
		disk = b->hook_bytes;
	/* A complete figure with files without a name in it: those are the
	 * last fd scan's, maybe freed since, and a file unlinked then freed
	 * and a new one named counted twice (a run that never held more
	 * than 40 MiB ended on disk=64MiB; found by a probing session). */
	stale = complete && b->pass_deleted;
	if (disk > b->disk_peak && (!stale || disk <= bg_lim(run, CR_LIM_DISK)))
		b->disk_peak = disk;
	disk += b->al_pend + b->al_scan;
	/* Over with allocations charged (they may be in the pass's figure
	 * too) or on a stale part: alloc_confirm measures again before a
	 * breach; a stale part waits for the next confirmation allowed. */
	if (disk > bg_lim(run, CR_LIM_DISK) && !(b->al_pend + b->al_scan) &&
	    stale && cr_now_ns() < b->lq_next_ns) {
		/* Not confirmable yet: files are judged, disk at the next
		 * confirmation allowed. */
		if (files > bg_lim(run, CR_LIM_FILES))
			bg_breach(run, CR_LIM_FILES, files);
		return;
	}
	if (disk > bg_lim(run, CR_LIM_DISK) && (b->al_pend + b->al_scan || stale)) {
		int rc = confirm_paced(run);

		if (rc < 0) {
			bg_unmeasurable(run, rc);
			return;
		}
		files = b->hook_files > b->files ? b->hook_files : b->files;
		disk = alloc_judged(b);
		if (disk > b->disk_peak)
			b->disk_peak = disk;
	}
	if (files > bg_lim(run, CR_LIM_FILES))
		bg_breach(run, CR_LIM_FILES, files);
	else if (disk > bg_lim(run, CR_LIM_DISK))
		bg_breach(run, CR_LIM_DISK, disk);
}

void bg_unmeasurable(struct cr_run *run, int rc)
{
	struct cr_budgets *b = run->budgets;

	if (run->ending)
		return;
	enum cr_limit_id id = rc == -ELOOP || rc == -EOVERFLOW ||
			      rc == -EMFILE ? CR_LIM_FILES : CR_LIM_DISK;

	if (b->fail_dir)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: %s, in the writable root %s, belongs to another user and may be written beneath but not listed",
			   cr_limit_name(id), b->fail_dir,
			   b->fail_root ? b->fail_root : "?");
	else if (rc == -ELOOP)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: the writable root %s holds directories nested deeper than %d levels, which corral cannot measure",
			   cr_limit_name(id), b->fail_root ? b->fail_root : "?",
			   CR_BUDGET_WALK_DEPTH);
	else if (rc == -EOVERFLOW)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: the writable root %s holds directories nested deeper beneath a directory made unreadable than corral's stack limit (ulimit -s) allows it to measure",
			   cr_limit_name(id), b->fail_root ? b->fail_root : "?");
	else if (rc == -EMFILE)
		/* Deep trees hold a descriptor a level; so may the run. */
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: corral ran out of descriptors (its RLIMIT_NOFILE) measuring the writable root %s",
			   cr_limit_name(id), b->fail_root ? b->fail_root : "?");
	else
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: the writable root %s cannot be measured (an unreadable entry: %s)",
			   cr_limit_name(id), b->fail_root ? b->fail_root : "?",
			   strerror(-rc));
}

/*
 * Files without a name and /dev/shm objects between fd scans. Their
 * writes are not notified, and the scan that measures them comes at most
 * every CR_BUDGET_FDSCAN_MIN_MS: a memfd written straight through at the
 * page cache's speed (~4.5 GiB/s on a fast machine) reached 1.3-1.5 GB
 * under disk=64MiB, and a program that saw when a scan had run filled
 * one after each and emptied it before the next (found by a probing
 * session). So the ledger's own descriptors are measured at every tick
 * (fstat), all of them as often as their cost allows (CR_BUDGET_QUICK_IDLE
 * times the last measure's CPU; 512 a tick in turn let a large memfd
 * among 3 900 others be seen once in 8 ticks: 512 MiB held 0.2 s under
 * disk=64MiB ended ok; found by a probing session), and /dev/shm with
 * them, likewise. Growth there, added to the last complete figure, is
 * only a suspicion (the figure may count a file twice while it moves
 * between a name and none): past the budget, a scan and a full pass
 * measure at once, their CPU the run's, and those decide. At most one
 * such confirmation per CR_BUDGET_RESCAN_NOW_NS, and after one, not
 * before CR_BUDGET_WALK_IDLE_NEAR times its cost: a program that fills
 * and empties a memfd past its budget pays for the measures and cannot
 * hold the loop.
 */
/* alloc_confirm, the next one not before CR_BUDGET_WALK_IDLE_NEAR times
 * its cost (at least CR_BUDGET_RESCAN_NOW_NS). */
static int confirm_paced(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns(), cost;
	int rc = alloc_confirm(run);

	cost = cr_thread_cpu_ns() - t0;
	b->lq_next_ns = cr_now_ns() +
		(cost * CR_BUDGET_WALK_IDLE_NEAR > CR_BUDGET_RESCAN_NOW_NS ?
		 cost * CR_BUDGET_WALK_IDLE_NEAR : CR_BUDGET_RESCAN_NOW_NS);
	return rc;
}

void bg_ledger_tick(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t now_l, now_s, grown, disk, t0, now;
	int rc;

	if (!run->fs || (!run->fs->nheld && run->fs->shm_priv < 0 &&
			 !run->fs->nrmheld && !run->fs->rmheld_lost)) {
		b->disk_est = alloc_judged(b);
		return;
	}
	now = cr_now_ns();
	if (now >= b->lq_held_next_ns) {
		t0 = cr_thread_cpu_ns();
		now_l = cr_fs_held_bytes(run->fs, SIZE_MAX);
		b->lq_held_next_ns = now + (cr_thread_cpu_ns() - t0) *
					   CR_BUDGET_QUICK_IDLE;
	} else {
		now_l = cr_fs_held_bytes(run->fs, 0);
	}
	now_s = bg_shm_quick(run, false);
	grown = bg_over(now_l + now_s, b->lq_in + b->lq_in_shm);
	disk = alloc_judged(b);
	b->disk_est = disk + grown;
	now = cr_now_ns();
	if (!grown || b->disk_est <= bg_lim(run, CR_LIM_DISK) ||
	    now < b->lq_next_ns)
		return;
	rc = confirm_paced(run);
	if (rc < 0) {
		bg_unmeasurable(run, rc);
		return;
	}
	disk = alloc_judged(b);
	b->disk_est = disk;
	if (disk > b->disk_peak)
		b->disk_peak = disk;	/* measured just now */
	if (b->files > bg_lim(run, CR_LIM_FILES))
		bg_breach(run, CR_LIM_FILES, b->files);
	else if (disk > bg_lim(run, CR_LIM_DISK))
		bg_breach(run, CR_LIM_DISK, disk);
}

/* A pass costs the supervisor CPU in proportion to what the roots hold;
 * the next one starts only after CR_BUDGET_WALK_IDLE times that much
 * time, so walking takes at most ~1/(1+IDLE) of a core however large the
 * workspace grows, and a small workspace is still walked every tick. Past
 * half of the disk or files budget the wait shrinks to IDLE_NEAR times. */

void bg_walk_tick(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0, now = cr_now_ns();
	int rc;

	if (!b->in_pass && now < b->next_pass_ns)
		return;
	/* A pass begins at the usual tick's pace, unless disk's growth
	 * asked for the fast one: memory's fast ticks (and a run's first
	 * ones) would show a program watching the workspace with inotify
	 * five times the walks (docs/limits.md, "The walk is seen by
	 * inotify"). */
	if (!b->in_pass && now >= b->disk_fast_until_ns &&
	    now - b->pass_begun_ns < CR_BUDGET_TICK_MS * 900000ull)
		return;
	if (!b->in_pass) {
		b->pass_cpu_ns = 0;
		b->pass_begun_ns = now;
	}
	t0 = cr_thread_cpu_ns();
	rc = walk_step(run, CR_BUDGET_WALK_PER_TICK);
	/* What moved during the pass could not be followed: the whole pass
	 * again, in one go (the program's renames wait for it), its cost
	 * counted in the pass's. */
	if (rc == 1 && b->redo) {
		int full = bg_walk_full(run);

		rc = full < 0 ? full : 1;
	}
	b->pass_cpu_ns += cr_thread_cpu_ns() - t0;
	if (rc < 0) {
		bg_unmeasurable(run, rc);
		return;
	}
	judge_disk(run, rc == 1);
	if (rc == 1) {
		/* Past half of a budget, precision is worth more CPU. */
		uint64_t idle = b->disk * 2 > bg_lim(run, CR_LIM_DISK) ||
				b->files * 2 > bg_lim(run, CR_LIM_FILES) ?
				CR_BUDGET_WALK_IDLE_NEAR : CR_BUDGET_WALK_IDLE;

		b->next_pass_ns = now + b->pass_cpu_ns * idle;
	}
}

/* One full pass, however long it takes: the baseline and the last word. */
int bg_add_walk_root(struct cr_budgets *b,
		     const struct cr_run_config *cfg, const char *root)
{
	/* Where the walk before the run led (run.c), else the name's real
	 * path; unresolvable (absent, unreachable): as written; the walk
	 * skips an absent root and says why for the rest. */
	const struct cr_pin *pin = cr_pin_find(cfg, root);
	char *real = !pin ? realpath(root, NULL) :
		     pin->fd >= 0 ? strdup(pin->real) : NULL;

	b->roots[b->nroots] = real ? real : strdup(root);
	if (!b->roots[b->nroots])
		return -ENOMEM;
	b->root_named[b->nroots] = !real;
	b->nroots++;
	return 0;
}

/* A root inside another (--rw WS/sub beside -w WS), or named twice, is
 * walked as part of the outer one only: the full passes (the baseline
 * and the last word) do not remember inodes, and counted it twice, so a
 * run ended on "disk" at half its budget (found by a probing session).
 * The workspace, first, is never the one dropped for an equal root. */
void bg_nested_roots_out(struct cr_budgets *b)
{
	bool inner[CR_BUDGET_MAX_ROOTS] = { false };
	size_t k = 0;

	/* All judged before any is freed: an earlier build freed an inner
	 * root while later ones were still compared with it (a --rw root
	 * holding the workspace: a use after free, found under
	 * AddressSanitizer). */
	for (size_t i = 0; i < b->nroots; i++) {
		for (size_t j = 0; j < b->nroots && !inner[i]; j++) {
			size_t li = strlen(b->roots[i]), lj = strlen(b->roots[j]);

			if (i == j || !cr_path_within(b->roots[j], lj,
						      b->roots[i], li))
				continue;
			/* Equal paths: the first one stays. */
			inner[i] = li != lj || j < i;
		}
	}
	for (size_t i = 0; i < b->nroots; i++) {
		if (inner[i]) {
			free(b->roots[i]);
		} else {
			b->root_named[k] = b->root_named[i];
			b->roots[k++] = b->roots[i];
		}
	}
	b->nroots = k;
}

/* Nothing moves while it runs: it needs neither the set of what it met
 * nor what moved. */
int bg_walk_full(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	bool tracking = b->tracking;
	int rc;

	b->tracking = false;
	bg_walk_reset(b);
	while ((rc = walk_step(run, 1 << 20)) == 0)
		;
	b->tracking = tracking;
	return rc < 0 ? rc : 0;
}

/* An ACL in memory: its entries (8 bytes each, as in the attribute, whose
 * 4-byte header the kernel's 32 replace), rounded up by the allocator. */
static uint64_t acl_slab(uint64_t xattr_size)
{
	uint64_t n = xattr_size + 28, r = 32;

	while (r < n)
		r <<= 1;
	return r;
}

int cr_budget_on_create(struct cr_run *run, pid_t pid)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return -EDQUOT;	/* fail closed */
	if (b->hook_files + 1 > bg_lim(run, CR_LIM_FILES)) {
		bg_breach_how(run, CR_LIM_FILES, b->hook_files + 1, true);
		return -EDQUOT;
	}
	b->hook_files++;
	return cr_budget_on_acl_copy(run);
}

int cr_budget_on_acl_copy(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	/* Each inode made after a default ACL was set on tmpfs may copy it
	 * twice in memory (handlers/xattr.c): charged, up to what the files
	 * budget's worth of inodes and the unnamed files could hold at
	 * once. */
	if (b && run->tmpfs_acl_max) {
		uint64_t one = 2 * acl_slab(run->tmpfs_acl_max);
		uint64_t most = bg_lim(run, CR_LIM_FILES);

		most = most > UINT64_MAX / one - CR_FS_HELD_MAX ? UINT64_MAX :
		       (most + CR_FS_HELD_MAX) * one;
		if (b->acl_bytes + one <= most) {
			b->acl_bytes += one;
			if (bg_charge_for_good(run, one))
				return -ENOMEM;
		}
	}
	return 0;
}

void cr_budget_on_placed(struct cr_run *run, const struct cr_fsres *res)
{
	struct cr_budgets *b = run->budgets;
	struct stat st;
	int fd;

	/* A pass done within one tick cannot meet a move: only one spread
	 * over ticks is in progress while the loop serves the program. */
	/* The run's own /dev/shm objects (/dev/shm/NAME, in its private
	 * directory) are measured apart (fs/shm.c); a root the caller
	 * named under /dev/shm is walked like any other. */
	if (!b || !b->in_pass || !b->tracking || b->redo || res->via_link ||
	    (res->plen > 9 && !memcmp(res->path, "/dev/shm/", 9) &&
	     !memchr(res->path + 9, '/', res->plen - 9)))
		return;
	fd = openat(res->dirfd, res->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		/* Cannot follow it: the pass is redone in one go. */
		if (fd >= 0)
			close(fd);
		b->redo = true;
		return;
	}
	if (cr_walkset_place(b->ws, fd, st.st_dev, st.st_ino))
		b->redo = true;
}

void cr_budget_on_unnamed(struct cr_run *run, const struct stat *st)
{
	struct cr_budgets *b = run->budgets;

	if (b && b->ws && (S_ISDIR(st->st_mode) || st->st_nlink <= 1))
		cr_walkset_forget(b->ws, st->st_dev, st->st_ino);
}

void cr_budget_on_remove(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	/* Net entries: a run that makes and deletes temporary files all day
	 * holds few of them at once. */
	if (b && b->hook_files)
		b->hook_files--;
}

int cr_budget_on_write(struct cr_run *run, pid_t pid, uint64_t bytes)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return -EDQUOT;
	if (b->hook_bytes + bytes > bg_lim(run, CR_LIM_DISK) ||
	    b->hook_bytes + bytes < b->hook_bytes) {
		bg_breach_how(run, CR_LIM_DISK, b->hook_bytes + bytes, true);
		return -EDQUOT;
	}
	b->hook_bytes += bytes;
	return 0;
}

/*
 * The charges say the run is past its disk budget; but a charge may
 * already be in what was measured since (a file with a name, met by a
 * pass after it grew: a 200 MiB fallocate in the workspace was judged
 * 409 MiB). So before a breach everything is measured again, now, in one
 * go: the fd scan under way is finished, a new one made, then a full
 * pass; both start after every charge, so the charges are dropped and the
 * figure is exact. Its CPU is the run's (a program at the edge of its
 * budget could otherwise have the supervisor walk for it at every call).
 * 0, or -errno when a root cannot be measured (the run then ends).
 */
static int alloc_confirm(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns();
	int rc;

	if (b->fs_on)
		bg_fdscan_run(run, SIZE_MAX);	/* started before the charge */
	bg_fdscan_run(run, SIZE_MAX);
	rc = bg_walk_full(run);
	if (!rc) {
		b->files = bg_over(b->w_files, b->base_files);
		b->disk = bg_over(b->w_bytes, b->base_bytes);
		b->al_scan = 0;
	}
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return rc;
}

int cr_budget_on_alloc(struct cr_run *run, pid_t pid, uint64_t bytes)
{
	struct cr_budgets *b = run->budgets;
	uint64_t disk;
	int rc;

	(void)pid;
	if (!b)
		return -EDQUOT;
	b->al_pend += bytes;
	disk = alloc_judged(b);
	if (disk > bg_lim(run, CR_LIM_DISK)) {
		rc = alloc_confirm(run);
		if (rc < 0) {
			bg_unmeasurable(run, rc);
			return -EDQUOT;
		}
		disk = alloc_judged(b);
		if (disk > b->disk_peak)
			b->disk_peak = disk;	/* measured just now */
	}
	if (disk > bg_lim(run, CR_LIM_DISK)) {
		bg_breach_how(run, CR_LIM_DISK, disk, true);
		return -EDQUOT;
	}
	return 0;
}
