/* tracer/handlers/open.c: open, openat, openat2, creat: resolved and opened
 * by the supervisor, the fd injected with ADDFD; FIFOs go to a worker. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "../fs/fsops.h"
#include "../budget/budget.h"

#ifndef RESOLVE_CACHED
#define RESOLVE_CACHED 0x20
#endif

static unsigned need_for(int flags, bool exists)
{
	unsigned need;

	if (!exists)
		return CR_FS_W;			/* O_CREAT of a new entry */
	/* O_TMPFILE names the directory to make a file in: the kernel asks
	 * write on it, whatever the new file's mode (O_RDWR asked read of
	 * /dev/shm, which gives none: EACCES, found by a probing session). */
	if ((flags & __O_TMPFILE) == __O_TMPFILE)
		return CR_FS_W;
	/* O_PATH becomes a read-only open (ADDFD cannot carry O_PATH), and
	 * a read-only fd on a directory can list it: so it needs read. */
	if (flags & O_PATH)
		return CR_FS_R;
	switch (flags & O_ACCMODE) {
	case O_WRONLY: need = CR_FS_W; break;
	case O_RDWR: need = CR_FS_R | CR_FS_W; break;
	default: need = CR_FS_R; break;
	}
	if (flags & O_TRUNC)
		need |= CR_FS_W;
	return need;
}

/* The link itself, held by corral, and a stand-in for the program. A
 * /proc link (a magic one: an fd, cwd or exe of the run) keeps the answer
 * glibc's fchmodat(AT_SYMLINK_NOFOLLOW) takes for "no modes on links":
 * an fd of it would name another process's file through the stand-in. So
 * does a run on the fast path, where the kernel answers fstat itself and
 * would show the stand-in as an empty file. */
static int open_link(struct cr_run *run, const struct cr_fsres *res)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	/* Without a stand-in: for a link the answer above; for a socket
	 * what a read-only open of it answers (the kernel's ENXIO). */
	int none = S_ISSOCK(res->st.st_mode) ? -ENXIO : -EOPNOTSUPP;
	struct stat st;
	int fd;

	/* A socket, or a file its owner may not read, reached through an
	 * fd's link (a stand-in's or a removed file's, fs/resolve.c): an
	 * O_PATH fd of the object corral holds for it, taken through its
	 * own link (no lookup, no mode asked), for a stand-in of its own. */
	if (res->via_link && res->linkfd >= 0 && !S_ISDIR(res->st.st_mode) &&
	    !S_ISLNK(res->st.st_mode) && run->fast_path == CR_FAST_OFF) {
		char own[32];

		snprintf(own, sizeof(own), "self/fd/%d", res->linkfd);
		fd = openat(run->fs->proc_fd, own, O_PATH | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		fd = cr_fs_linkfd_make(run->fs, fd);
		return fd == -EOPNOTSUPP ? none : fd;
	}
	if (res->via_link || run->fast_path != CR_FAST_OFF ||
	    cr_path_within("/proc", 5, res->path, res->plen))
		return none;
	fd = (int)syscall(SYS_openat2, res->dirfd, res->name, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	/* Replaced since it was resolved: what was judged is gone. */
	if (fstat(fd, &st) < 0 ||
	    (st.st_mode & S_IFMT) != (res->st.st_mode & S_IFMT) ||
	    st.st_ino != res->st.st_ino || st.st_dev != res->st.st_dev) {
		close(fd);
		return -ENOENT;
	}
	fd = cr_fs_linkfd_make(run->fs, fd);
	return fd == -EOPNOTSUPP ? none : fd;
}

/* Our open, on exactly what was resolved. ADDFD cannot carry an O_PATH fd,
 * so an O_PATH open becomes a read-only open of the same object (a
 * directory with O_DIRECTORY): the program gets a usable fd for fstat,
 * fchdir and *at calls; an object it may not read gives EACCES. An
 * O_PATH|O_NOFOLLOW open of a symlink gives a stand-in that the path
 * calls take for the link (fs/linkfd.c). See docs/policy.md. */
static int perform(struct cr_run *run, const struct seccomp_notif *n,
		   const struct cr_fsres *res, int flags, mode_t mode)
{
	struct open_how how = {
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	int of = flags;
	bool creating;
	mode_t um = 0;
	uint64_t t0;
	int fd;

	if (of & O_PATH) {
		/* A socket, which no read-only open reaches (ENXIO), has
		 * a stand-in as a link has: Emacs's file-attributes of a
		 * socket failed (found by a compatibility probe). */
		if (res->exists && (S_ISLNK(res->st.st_mode) ||
				    S_ISSOCK(res->st.st_mode)))
			return open_link(run, res);
		of = O_RDONLY | (res->exists && S_ISDIR(res->st.st_mode) ?
				 O_DIRECTORY : 0);
		/* An O_PATH open never blocks; a read-only open of a FIFO
		 * would, on the loop thread. */
		if (res->exists && S_ISFIFO(res->st.st_mode))
			of |= O_NONBLOCK;
	}
	of |= O_CLOEXEC | O_NOCTTY;
	creating = (of & O_CREAT) || (of & __O_TMPFILE) == __O_TMPFILE;
	if (creating) {
		how.mode = cr_fs_safe_mode(run, n, "open", res->path,
					   mode & 07777, false);
		um = cr_fs_umask_enter(run, (pid_t)n->pid);
		/* No O_NOFOLLOW: RESOLVE_NO_SYMLINKS already refuses a link
		 * put in the name's place since it was resolved, and the
		 * flag would stay in the file's flags (F_GETFL showed
		 * 0400000 on every file corral made; found by a
		 * differential probe). */
	}
	how.flags = (uint64_t)(unsigned)of;
	/* O_TRUNC takes the file's inode lock, which the program's own
	 * write can hold (tracer/budget/stall.c), and frees the file's pages
	 * in corral's time, which is the run's (handlers/alloc.c). */
	t0 = (of & O_TRUNC) ? cr_thread_cpu_ns() : 0;
	cr_slow_begin();
	if (res->via_link)
		fd = openat(res->dirfd, res->name, of & ~O_NOFOLLOW, how.mode);
	else
		fd = (int)syscall(SYS_openat2, res->dirfd, res->name, &how,
				  sizeof(how));
	cr_slow_end();
	if (t0)
		cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	if (creating)
		cr_fs_umask_leave(um);	/* umask() leaves errno alone */
	/* An O_PATH open asks nothing of the mode, the read-only open that
	 * stands for it does: a file its owner may not read (0200, 0000)
	 * gets a stand-in too, where the open would fail EACCES (GNU Emacs's
	 * file-attributes of such a file failed; found by a compatibility
	 * probe). A directory keeps the EACCES (docs/policy.md). */
	if (fd < 0 && errno == EACCES && (flags & O_PATH) && res->exists &&
	    !S_ISDIR(res->st.st_mode)) {
		fd = open_link(run, res);
		return fd >= 0 ? fd : -EACCES;
	}
	return fd < 0 ? -errno : fd;
}

/* A new master is opened here and its index remembered; a slave is never
 * opened by its path but through the run's master (fs/pty.c), and /dev/tty
 * means the slave of the run's pty the caller made its terminal. */
static int open_pty(struct cr_run *run, const struct seccomp_notif *n,
		    const char *sys, struct cr_fsres *res, int flags)
{
	const char *num = res->path + 9;
	int idx, fd;

	if (!strcmp(res->path, "/dev/ptmx") || !strcmp(res->path, "/dev/pts/ptmx")) {
		if (!cr_fs_pty_may_open(run)) {
			/* What the kernel says at kernel.pty.max. */
			cr_deny(run, (pid_t)n->pid, sys, res->path, "fs",
				"more ptys held at once than a run may (64)");
			return -ENOSPC;
		}
		fd = perform(run, n, res, flags & ~(O_CREAT | O_EXCL | O_TRUNC), 0);
		if (fd >= 0) {
			int rc = cr_fs_pty_note(run, fd, -1);

			if (rc < 0) {	/* uncounted, it must not reach the run */
				close(fd);
				return rc;
			}
		}
		return fd;
	}
	if (!strcmp(res->path, "/dev/tty"))
		idx = cr_fs_pty_ctty(run, (pid_t)n->pid);
	else if (*num && strspn(num, "0123456789") == strlen(num) &&
		 strlen(num) < 10)
		idx = atoi(num);
	else
		idx = -ENOENT;
	if (idx < 0)
		return idx;
	fd = cr_fs_pty_open_slave(run, (unsigned)idx, flags);
	if (fd == -ENOENT) {
		/* Its master was closed since the rules looked. */
		res->refused = true;
		cr_fs_deny(run, n, sys, res, "a terminal the run does not hold");
	}
	return fd;
}

static bool is_tmpfile(int flags)
{
	return (flags & __O_TMPFILE) == __O_TMPFILE;
}

/*
 * glibc's tmpfile() ignores TMPDIR and asks for an O_TMPFILE file in
 * /tmp, which is not the run's (docs/compatibility.md): GNU make -O, and
 * every C program with a scratch file, failed. The file has no name and
 * none is shown, so it is made in the workspace instead, where TMPDIR
 * points and the program could make the same one itself: counted by the
 * held-files ledger as any other, nothing of the host's /tmp reached.
 * res becomes the workspace's resolution; -ENOENT (and the refusal
 * recorded) if it cannot be had.
 */
static int tmp_to_workspace(struct cr_run *run, const struct seccomp_notif *n,
			    const char *sys, struct cr_fsres *res)
{
	const struct cr_fsrules *r = &run->fs->rules;
	const char *ws = run->cfg->workspace;
	int rc = ws ? 0 : -ENOENT;

	/* A policy that denies /tmp (or a subtree holding it) means it:
	 * refused and recorded, as every other spelling is. */
	for (size_t i = 0; !rc && i < r->ndeny; i++)
		if (cr_path_within(r->deny[i], strlen(r->deny[i]), "/tmp", 4))
			rc = -ENOENT;
	cr_fsres_free(res);
	if (!rc)
		rc = cr_fs_resolve(run, (pid_t)n->pid, AT_FDCWD, ws,
				   CR_RES_FOLLOW, res);
	if (!rc && (!res->exists || !S_ISDIR(res->st.st_mode) ||
		    !(res->acc & CR_FS_W)))
		rc = -ENOENT;
	if (rc) {
		cr_fsres_free(res);
		cr_fsres_init(res);
		memcpy(res->path, "/tmp", 5);
		res->plen = 4;
		res->refused = true;
		cr_fs_deny(run, n, sys, res, "outside every root");
		return -ENOENT;
	}
	return 0;
}

/* The kernel's own __O_TMPFILE (glibc's name includes O_DIRECTORY). */
#define CR_O_TMPFILE_BIT 020000000
/* What O_PATH keeps (O_PATH_FLAGS): open and openat drop the rest,
 * openat2 refuses it. */
#define CR_O_PATH_FLAGS (O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC)

/* The kernel's refusals of flags alone (build_open_flags), before any
 * path is looked at: O_CREAT with O_DIRECTORY (6.4+), and O_TMPFILE's
 * bit without O_DIRECTORY or without write access. */
static bool flags_possible(uint64_t flags)
{
	return (flags & (O_CREAT | O_DIRECTORY)) != (O_CREAT | O_DIRECTORY) &&
	       (!(flags & CR_O_TMPFILE_BIT) ||
		((flags & O_DIRECTORY) && (flags & O_ACCMODE) != O_RDONLY));
}

static struct cr_verdict do_open(struct cr_run *run,
				 const struct seccomp_notif *n, const char *sys,
				 int diri, int pathi, int flags, mode_t mode,
				 unsigned resolve)
{
	struct cr_fsres res;
	unsigned how = resolve, need;
	int rc, fd;

#ifdef CR_TEST_BYPASS_OPEN
	/* A test-only build (`make bypass`, never installed): the resolver
	 * is skipped and every open runs in the kernel as the program asked,
	 * so a test can show what Landlock alone refuses. A mode of
	 * 0xC0FFEE stalls the loop for good instead: the watchdog's test. */
	while (mode == 0xC0FFEE)
		sleep(3600);
	if (run)
		return CR_V_CONT;
#endif
	if (!flags_possible(flags))
		return CR_V_ERR(EINVAL);
	/* Access mode 3 (neither read nor write: ioctls only) needs read
	 * and write permission, and its fd counts in neither of the
	 * inode's reader and writer counts: the held-files ledger, which
	 * asks those counts whether the run still holds an unlinked file,
	 * let go of 8 GiB held so. Opened as O_RDWR, which it needs anyway
	 * (F_GETFL shows O_RDWR; docs/compatibility.md). O_PATH keeps its
	 * own meaning. */
	if ((flags & O_ACCMODE) == O_ACCMODE && !(flags & O_PATH))
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	if (!(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL)))
		how |= CR_RES_FOLLOW;
	if (flags & O_CREAT)
		how |= CR_RES_SLASH_OK;
	if (is_tmpfile(flags))
		how |= CR_RES_TMP_QUIET;
	rc = cr_fs_arg(run, n, sys, diri, pathi, how, 0, &res);
	if (rc && res.tmp_refused)
		rc = tmp_to_workspace(run, n, sys, &res);	/* /tmp unseen */
	if (rc)
		return CR_V_ERR((flags & O_CREAT) ?
				cr_fs_create_refusal(run, &res, -rc, EISDIR) :
				-rc);
	if (!res.exists && !(flags & O_CREAT)) {
		rc = -ENOENT;
		goto out;
	}
	/* ".", ".." and "/" are found, never created: O_EXCL says so before
	 * the directory is refused (do_open: EEXIST, then EISDIR). */
	if ((flags & O_CREAT) && res.exists && !strcmp(res.name, ".")) {
		rc = (flags & O_EXCL) ? -EEXIST : -EISDIR;
		goto out;
	}
	/* "x/" names a directory, and open never creates one: with O_CREAT
	 * the kernel answers EISDIR whatever x is. */
	if ((flags & O_CREAT) && res.trailing_slash) {
		rc = -EISDIR;
		goto out;
	}
	if (res.exists && (flags & O_CREAT) && (flags & O_EXCL)) {
		rc = -EEXIST;
		goto out;
	}
	/* do_open asks for a directory before may_open refuses a link:
	 * O_NOFOLLOW|O_DIRECTORY on a link is ENOTDIR. */
	if (res.exists && (flags & O_DIRECTORY) && !S_ISDIR(res.st.st_mode) &&
	    !res.via_link) {
		rc = -ENOTDIR;
		goto out;
	}
	if (res.exists && (flags & O_NOFOLLOW) && S_ISLNK(res.st.st_mode) &&
	    !(flags & O_PATH)) {
		rc = -ELOOP;
		goto out;
	}
	need = need_for(flags, res.exists);
	/* /dev/tty is the caller's controlling terminal, and the program
	 * starts with none: its open answers as the kernel's (stat and
	 * access see the node, as natively). Only a pty of the run that a
	 * process made its own terminal (setsid + TIOCSCTTY) is one, and
	 * open_pty opens that pty's slave through its master: never
	 * /dev/tty itself, which opened here would be corral's terminal
	 * (an O_PATH open too: ADDFD carries a read-only open). */
	if (res.exists && S_ISCHR(res.st.st_mode) &&
	    !strcmp(res.path, "/dev/tty") &&
	    cr_fs_pty_ctty(run, (pid_t)n->pid) < 0) {
		rc = -ENXIO;
		goto out;
	}
	/* An ancestor of a root (the workspace's parents, /etc above its
	 * listed files) opens read-only as a directory: its listing shows
	 * only the entries that lead into a root (dirents.c), so what lies
	 * outside stays absent. In /proc too: /proc/sys, /proc/sys/kernel
	 * and /proc/tty list the files the rules grant there (an earlier
	 * build answered EACCES, and `sysctl -a` or a walk of /proc/sys
	 * stopped at the parent of files it may read; found by a
	 * differential probing session). */
	if (need == CR_FS_R && res.exists && S_ISDIR(res.st.st_mode) &&
	    (res.acc & CR_FS_STAT) &&
	    ((flags & O_PATH) ||	/* which ignores the other flags */
	     ((flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC)))))
		need = CR_FS_STAT;
	/* An O_PATH fd of a link (its stand-in) shows what lstat and
	 * readlink show, which is all a link holds; changes through it are
	 * judged where they are made. */
	if ((flags & O_PATH) && res.exists && S_ISLNK(res.st.st_mode) &&
	    (res.acc & CR_FS_STAT))
		need = CR_FS_STAT;
	/* A terminal of the run opens for writing too: through its master,
	 * so what is opened is exactly what the rules found (open_pty). */
	if (res.exists && S_ISCHR(res.st.st_mode) && cr_fs_pty_path(&res) &&
	    (res.acc & CR_FS_R))
		res.acc |= CR_FS_W;
	/* A name made: inside a writable root, as mkdir judges it, never a
	 * root itself (open O_CREAT at a writable root not made yet made it,
	 * in a read root's directory or the host's /dev/shm; found by a
	 * probing session). */
	if (!res.exists && (flags & O_CREAT) && (res.acc & need) == need &&
	    !cr_fs_entry_writable(run, (pid_t)n->pid, &res))
		res.acc &= ~CR_FS_W;
	if ((res.acc & need) != need && is_tmpfile(flags) && res.exists &&
	    S_ISDIR(res.st.st_mode) && res.plen == 4 &&
	    !memcmp(res.path, "/tmp", 4)) {
		/* /tmp is seen (an ancestor of the workspace), not writable. */
		rc = tmp_to_workspace(run, n, sys, &res);
		if (rc)
			goto out;
	} else if ((res.acc & need) != need) {
		/* The kernel's do_open answers EISDIR for an existing
		 * directory opened with O_CREAT, a write mode or O_TRUNC
		 * before it asks for any permission (util-linux flock
		 * falls back to a read-only open on EISDIR only). O_PATH
		 * asks for no access; O_TMPFILE names the directory to
		 * create in. Only the errno of the refusal changes. */
		int kerr = res.exists && S_ISDIR(res.st.st_mode) &&
			   !(flags & O_PATH) &&
			   (flags & __O_TMPFILE) != __O_TMPFILE &&
			   ((flags & (O_CREAT | O_TRUNC)) ||
			    (flags & O_ACCMODE) != O_RDONLY) ? EISDIR : 0;

		res.refused = true;
		cr_fs_deny(run, n, sys, &res,
			   need & CR_FS_W ? "write outside the writable roots" :
			   "read outside the readable roots");
		rc = cr_fsrules_refusal_as(&run->fs->rules, res.acc, kerr);
		/* A name made in /proc (O_CREAT of a missing one, O_TMPFILE
		 * in a directory): procfs's answer. A write open of an
		 * existing entry keeps the permission's. */
		if ((!res.exists && (flags & O_CREAT)) ||
		    (flags & __O_TMPFILE) == __O_TMPFILE)
			rc = cr_fs_proc_refusal(run, &res, rc);
		rc = -rc;
		goto out;
	}
	if (res.exists && S_ISFIFO(res.st.st_mode) && !(flags & (O_NONBLOCK | O_PATH))) {
		/* Opening a FIFO blocks until its other end opens: never on
		 * the loop thread. */
		struct cr_verdict v = cr_fs_open_fifo(run, n, &res, flags);

		cr_fsres_free(&res);
		return v;
	}
	if (res.exists && S_ISCHR(res.st.st_mode) && cr_fs_pty_path(&res)) {
		fd = open_pty(run, n, sys, &res, flags);
		if (fd < 0) {
			rc = fd;
			goto out;
		}
		cr_fsres_free(&res);
		goto send;
	}
	/* /dev/shm itself opens as the run's private directory in it
	 * (fs/shm.c): its listing is of the run's objects only, and a
	 * name opened through the fd is one of them. */
	if (res.exists && S_ISDIR(res.st.st_mode) && res.plen == 8 &&
	    !memcmp(res.path, "/dev/shm", 8)) {
		int p = cr_fs_shm_dir(run);

		if (p < 0) {
			rc = p;
			goto out;
		}
		cr_fsres_free(&res);
		res.dirfd = p;
		res.dirfd_borrowed = true;
		strcpy(res.name, ".");
	}
	/* Every creation is counted against the files budget before it is
	 * made (tracer/budget/disk.c). */
	if (!res.exists && (rc = cr_budget_on_create(run, (pid_t)n->pid)))
		goto out;
	if ((flags & __O_TMPFILE) == __O_TMPFILE &&
	    ((rc = cr_fs_held_room(run)) || (rc = cr_budget_on_acl_copy(run))))
		goto out;
	fd = perform(run, n, &res, flags, mode);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	/* A FIFO, or a pipe reopened through /proc/PID/fd, keeps its pipe
	 * alive as the pipe's own ends do: followed like them (budget/pipes.c),
	 * or not given. Regular files and directories are neither. */
	if (res.exists && !S_ISREG(res.st.st_mode) && !S_ISDIR(res.st.st_mode) &&
	    (rc = cr_budget_on_opened(run, fd)) < 0) {
		close(fd);
		goto out;
	}
	/* A file born without a name: the ledger follows it (fs/held.c). */
	if ((flags & __O_TMPFILE) == __O_TMPFILE)
		cr_fs_held_add(run, fd);
	else if (!res.exists)
		cr_budget_on_placed(run, &res);
	/* Whatever the name looked like: what was opened (handlers/kmem.c). */
	cr_kmem_zero_seen(run, fd);
	if (res.exists && S_ISFIFO(res.st.st_mode)) {
		cr_fsres_free(&res);
		return cr_notif_give_fd_last(run, n->id, fd, flags & O_CLOEXEC);
	}
	cr_fsres_free(&res);
send:
	{
		struct cr_verdict v = cr_notif_send_fd(run, n, fd, flags & O_CLOEXEC);
		return v;
	}
out:
	cr_fsres_free(&res);
	return CR_V_ERR(-rc);
}

/* The kernel's VALID_OPEN_FLAGS (include/linux/fcntl.h; x86-64 values,
 * O_LARGEFILE the kernel's own, which glibc defines as 0 here): open and
 * openat drop any other bit, as GNU dd relies on (it keeps its own
 * iflag/oflag bits in spare ones), and openat2 refuses them (EINVAL). */
#define CR_VALID_OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | \
	O_TRUNC | O_APPEND | O_NONBLOCK | O_DSYNC | O_ASYNC | O_DIRECT | \
	00100000 | O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | \
	O_SYNC | O_PATH | __O_TMPFILE)

/* open's and openat's flags as the kernel takes them (build_open_how). */
static int legacy_flags(uint64_t arg)
{
	int flags = (int)arg & CR_VALID_OPEN_FLAGS;

	return flags & O_PATH ? flags & CR_O_PATH_FLAGS : flags;
}

struct cr_verdict cr_h_open(struct cr_run *run, const struct cr_syscall_entry *e,
			    const struct seccomp_notif *n)
{
	return do_open(run, n, e->name, -1, 0, legacy_flags(n->data.args[1]),
		       (mode_t)n->data.args[2], 0);
}

struct cr_verdict cr_h_openat(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	return do_open(run, n, e->name, 0, 1, legacy_flags(n->data.args[2]),
		       (mode_t)n->data.args[3], 0);
}

struct cr_verdict cr_h_creat(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	return do_open(run, n, e->name, -1, 0, O_CREAT | O_WRONLY | O_TRUNC,
		       (mode_t)n->data.args[1], 0);
}

struct cr_verdict cr_h_openat2(struct cr_run *run, const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n)
{
	struct open_how how;
	size_t size = (size_t)n->data.args[3];
	unsigned res = 0;
	int rc;

	if (size < sizeof(how))
		return CR_V_ERR(EINVAL);
	if (size > 4096)
		return CR_V_ERR(E2BIG);
	rc = cr_mem_read((pid_t)n->pid, n->data.args[2], &how, sizeof(how));
	if (rc)
		return CR_V_ERR(EFAULT);
	/* A larger struct from a newer libc: its extra bytes must be zero,
	 * as the kernel requires. */
	for (size_t off = sizeof(how); off < size; off += 64) {
		unsigned char extra[64] = { 0 }, zero[64] = { 0 };
		size_t chunk = size - off < 64 ? size - off : 64;

		if (cr_mem_read((pid_t)n->pid, n->data.args[2] + off, extra, chunk))
			return CR_V_ERR(EFAULT);
		if (memcmp(extra, zero, chunk))
			return CR_V_ERR(E2BIG);
	}
	if (how.flags & ~(uint64_t)CR_VALID_OPEN_FLAGS ||
	    how.resolve & ~(uint64_t)(RESOLVE_NO_XDEV |
		RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH |
		RESOLVE_IN_ROOT | RESOLVE_CACHED))
		return CR_V_ERR(EINVAL);
	if ((how.resolve & RESOLVE_BENEATH) && (how.resolve & RESOLVE_IN_ROOT))
		return CR_V_ERR(EINVAL);	/* scopes exclude each other */
	if (how.flags & (O_CREAT | CR_O_TMPFILE_BIT) ?
	    how.mode & ~(uint64_t)07777 : how.mode != 0)
		return CR_V_ERR(EINVAL);
	if (!flags_possible(how.flags) ||
	    ((how.flags & O_PATH) && (how.flags & ~(uint64_t)CR_O_PATH_FLAGS)))
		return CR_V_ERR(EINVAL);
	if (how.resolve & RESOLVE_CACHED)
		return CR_V_ERR(EAGAIN);	/* "retry without": allowed by the ABI */
	if (how.resolve & RESOLVE_NO_SYMLINKS)
		res |= CR_RES_NO_SYMLINKS;
	if (how.resolve & RESOLVE_NO_MAGICLINKS)
		res |= CR_RES_NO_MAGICLINKS;
	if (how.resolve & RESOLVE_BENEATH)
		res |= CR_RES_BENEATH;
	if (how.resolve & RESOLVE_IN_ROOT)
		res |= CR_RES_IN_ROOT;
	return do_open(run, n, e->name, 0, 1, (int)how.flags,
		       (mode_t)how.mode, res);
}
