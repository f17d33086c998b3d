/* tracer/handlers/xattr.c: getxattr, lgetxattr, setxattr, lsetxattr,
 * listxattr, llistxattr, removexattr, lremovexattr, their fd forms, and the
 * watches: inotify_add_watch, fcntl(F_NOTIFY). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/xattr.h>

#include "../fs/fsops.h"
#include "../budget/budget.h"

#define CR_XATTR_MAX 65536

enum xop { X_GET, X_SET, X_LIST, X_REMOVE };

/* corral's own attributes (the tag that lets a later sweep find what a
 * killed supervisor left in /dev/shm, fs/shm.c): the program may read them,
 * never write or remove them. Prefix matched case-sensitively, as the
 * kernel stores names. */
static bool corral_name(const char *name)
{
	return !strncmp(name, "user.corral.", 12);
}

/* Extended attributes on tmpfs (/dev/shm, a tmpfs root) are kernel memory
 * that no st_blocks shows: no budget would see them (8192 values of 64 KiB
 * on one /dev/shm object held 512 MiB through a run that ended "ok"). A
 * run may set at most this much there; past it ENOSPC, what a full tmpfs
 * answers, and a denial. Removals give nothing back. */
#define CR_TMPFS_XATTR_MAX (1u << 20)

/* What one attribute holds there: its name and its value, each in an
 * allocation of its own rounded up by the allocator, and the entry
 * around them. The name counts even with an empty value: 493 753
 * attributes of a 250-byte name and no value held ~150 MB of slab and
 * were counted as nothing (found by a probing session). */
static uint64_t slab_size(uint64_t n)
{
	uint64_t r = 8;

	while (r < n && r < 8192)
		r <<= 1;
	return n <= r ? r : (n + 4095) & ~(uint64_t)4095;
}

static uint64_t tmpfs_xattr_cost(const char *name, size_t size)
{
	return slab_size(strlen(name) + 1) + slab_size(48 + (uint64_t)size);
}

/* A default ACL on a tmpfs directory is copied into every inode made
 * beneath it (an access ACL each, a default ACL more for a directory),
 * in memory: 9 000 entries under a 64 KiB one held 1.17 GB, where only
 * the attribute itself was counted (found by a probing session). The
 * largest the run set is charged at each creation (cr_budget_on_create). */
static int tmpfs_room(struct cr_run *run, const struct seccomp_notif *n,
		      const char *sys, int fd, const char *name, size_t size)
{
	struct statfs sf;
	uint64_t cost = tmpfs_xattr_cost(name, size);

	if (fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC)
		return 0;
	if (run->tmpfs_xattr_bytes + cost > CR_TMPFS_XATTR_MAX) {
		cr_deny(run, (pid_t)n->pid, sys, NULL, "fs",
			"extended attributes on tmpfs past 1 MiB a run (memory no budget measures)");
		return -ENOSPC;
	}
	run->tmpfs_xattr_bytes += cost;
	if (!strcmp(name, "system.posix_acl_default") &&
	    size > run->tmpfs_acl_max)
		run->tmpfs_acl_max = size;
	return 0;
}

/* A symbolic link's attributes by name, as the kernel answers them with
 * no security module: an unknown namespace, and system.* (ACLs: a link
 * has none), are EOPNOTSUPP; user.* exists only on files and
 * directories, and trusted.* and security.* need capabilities the run
 * has not: nothing to read (ENODATA), nothing to change (EPERM); those
 * checks come before the filesystem is asked. A read of security.* goes
 * to it, and a link of /proc (self, an fd's) has no handler: EOPNOTSUPP
 * (a change is the security hook's EPERM first).
 * Values the kernel parses before it asks for permission are judged
 * first: an ACL that is not a header and whole entries, and a file
 * capability of the wrong size or revision, are EINVAL. */
static bool acl_name(const char *name)
{
	return !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

/* A value the kernel parses before it asks for permission and cannot
 * parse, its errno (0: parsed): an ACL shorter than its header (EINVAL),
 * of another version than 2 (EOPNOTSUPP, posix_acl_from_xattr's order;
 * both were EINVAL here, found by a differential probe) or not whole
 * entries (EINVAL); a file capability of the wrong size or revision
 * (EINVAL). An empty ACL is none: the kernel removes the ACL (it was
 * EINVAL here, the ACL left in place; a differential probe). */
static int value_error(const char *name, const unsigned char *val,
		       size_t size)
{
	if (acl_name(name)) {
		if (!size)
			return 0;
		if (size < 4)
			return EINVAL;
		if (val[0] != 2 || val[1] || val[2] || val[3])
			return EOPNOTSUPP;
		return (size - 4) % 8 ? EINVAL : 0;
	}
	if (!strcmp(name, "security.capability")) {
		unsigned rev = size >= 4 ? (unsigned)val[3] : 0;

		return (size == 12 && rev == 1) || (size == 20 && rev == 2) ||
		       (size == 24 && rev == 3) ? 0 : EINVAL;
	}
	return 0;
}

static bool known_namespace(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9) || acl_name(name);
}

/* A change of a file's or directory's attribute, answered by the kernel
 * before it asks for write access: an unparsable value (EINVAL),
 * trusted.* without CAP_SYS_ADMIN and user.* on anything but a file or a
 * directory (EPERM); -1 for a no-op it allows (a default ACL removed
 * from what is no directory); else 0. */
static int change_first(const char *name, enum xop op,
			const unsigned char *val, size_t size, mode_t mode)
{
	if (op == X_SET && value_error(name, val, size))
		return value_error(name, val, size);
	if (op == X_REMOVE && !strcmp(name, "system.posix_acl_default") &&
	    !S_ISDIR(mode))
		return -1;
	if (!strncmp(name, "trusted.", 8) ||
	    (!strncmp(name, "user.", 5) && !S_ISREG(mode) && !S_ISDIR(mode)))
		return EPERM;
	return 0;
}

/* A read of an attribute an object is shown without: what the kernel
 * answers by the name alone (a namespace no handler takes, a prefix with
 * nothing after it), else "none" (ENODATA). */
static int read_first(const char *name)
{
	if (!strcmp(name, "user.") || !strcmp(name, "security."))
		return EINVAL;
	if (strncmp(name, "user.", 5) && strncmp(name, "trusted.", 8) &&
	    strncmp(name, "security.", 9) && !acl_name(name))
		return EOPNOTSUPP;
	return ENODATA;
}

/* The refusal of a change outside the writable roots, where the kernel
 * would answer whatever the roots say: security.* is the capability
 * hook's EPERM to a run, and so is an ACL to anyone but the owner; a
 * namespace no handler takes is EOPNOTSUPP once write permission is
 * granted (the object at dfd/nm, AT_EMPTY_PATH for an fd). */
static int change_refusal(struct cr_run *run, pid_t tid, const char *name,
			  unsigned acc, int dfd, const char *nm)
{
	struct stat st;
	uid_t fsuid;

	if (!strncmp(name, "security.", 9))
		return EPERM;
	if (acl_name(name) &&
	    fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW |
		    (*nm ? 0 : AT_EMPTY_PATH)) == 0 &&
	    cr_fs_task_fsuid(tid, &fsuid) == 0 && fsuid != st.st_uid)
		return EPERM;
	if (!known_namespace(name) &&
	    faccessat(dfd, nm, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW |
		      (*nm ? 0 : AT_EMPTY_PATH)) == 0)
		return EOPNOTSUPP;
	return cr_fsrules_refusal(&run->fs->rules, acc);
}

static struct cr_verdict link_answer(const char *name, enum xop op,
				     const unsigned char *val, size_t size,
				     bool procfs)
{
	if (op == X_SET && value_error(name, val, size))
		return CR_V_ERR(value_error(name, val, size));
	if (strncmp(name, "user.", 5) && strncmp(name, "trusted.", 8) &&
	    (strncmp(name, "security.", 9) || (procfs && op == X_GET)))
		return CR_V_ERR(EOPNOTSUPP);
	return CR_V_ERR(op == X_GET ? ENODATA : EPERM);
}

/* Acted on through "/proc/self/fd/N" of an O_PATH fd on the object itself;
 * the l* forms on a symlink act on nothing (our path would follow it):
 * they answer as the kernel does for such a link (link_answer). */
static struct cr_verdict do_xattr(struct cr_run *run,
				  const struct seccomp_notif *n, const char *sys,
				  enum xop op, bool follow)
{
	static const unsigned need[] = { CR_FS_R, CR_FS_W, CR_FS_R, CR_FS_W };
	char name[XATTR_NAME_MAX + 1] = "", p[64];
	struct cr_fsres res;
	size_t size = op == X_REMOVE ? 0 : (size_t)n->data.args[op == X_LIST ? 2 : 3];
	char *buf = NULL;
	ssize_t r = 0;
	int rc, fd;

	/* The kernel's order (setxattr_copy, import_xattr_name): a set's
	 * flags, then the name (empty or too long: ERANGE), then a set's
	 * value (too large: E2BIG; unreadable: EFAULT), all before the path
	 * is looked up (an earlier build looked it up first; found by a
	 * differential probing session). A read's buffer is only clamped
	 * (an earlier build clamped a set's too, and stored the first 64 KiB
	 * of a larger value on tmpfs). */
	if (op == X_SET &&	/* an int: the register's upper half unread */
	    ((unsigned)n->data.args[4] & ~(unsigned)(XATTR_CREATE | XATTR_REPLACE)))
		return CR_V_ERR(EINVAL);
	if (op != X_LIST) {
		rc = cr_mem_read_str((pid_t)n->pid, n->data.args[1], name, sizeof(name));
		if (rc)
			return CR_V_ERR(rc == -ENAMETOOLONG ? ERANGE : EFAULT);
		if (!name[0])
			return CR_V_ERR(ERANGE);
	}
	if (op == X_SET && size > CR_XATTR_MAX)
		return CR_V_ERR(E2BIG);
	if (size > CR_XATTR_MAX)
		size = CR_XATTR_MAX;
	if (size) {
		buf = malloc(size);
		if (!buf)
			return CR_V_ERR(ENOMEM);
		if (op == X_SET &&
		    (cr_mem_read((pid_t)n->pid, n->data.args[2], buf, size) ||
		     !cr_notif_valid(run, n->id))) {
			free(buf);
			return CR_V_ERR(EFAULT);
		}
	}
	if ((op == X_SET || op == X_REMOVE) && corral_name(name)) {
		free(buf);
		cr_deny(run, (pid_t)n->pid, sys, name, "fs",
			"corral's own attributes may not be changed");
		return CR_V_ERR(EPERM);
	}
	/* Reading needs only sight of the object: an ancestor of a root
	 * (the workspace's parent that `ls -la` shows as "..") answers as
	 * an object without attributes, rather than a refusal no native
	 * run would meet. Its real attributes stay unread. */
	rc = cr_fs_arg(run, n, sys, -1, 0, follow ? CR_RES_FOLLOW : 0,
		       CR_FS_STAT, &res);
	if (rc) {
		free(buf);
		return CR_V_ERR(-rc);
	}
	if (!res.exists) {
		free(buf);
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	/* A removed file's fd mode writes its data, not its attributes:
	 * those are the place's (fs/resolve.c deleted_link). */
	if (res.w_by_fd)
		res.acc &= ~CR_FS_W;
	if (S_ISLNK(res.st.st_mode)) {
		/* A link's own attributes cannot be reached through our
		 * /proc path (it is followed): answered as the kernel
		 * answers without a security module, by the name. Before
		 * the roots are asked: a link's mode lets anyone write it,
		 * so the kernel's answer never turns on that; none of the
		 * answers reads or changes anything. */
		bool procfs = cr_path_within("/proc", 5, res.path, res.plen);
		struct cr_verdict v = op == X_LIST ? CR_V_VAL(0) :
			link_answer(name, op, (const unsigned char *)buf, size,
				    procfs);

		free(buf);
		cr_fsres_free(&res);
		return v;
	}
	/* A change: the kernel's xattr_permission answers by the name's
	 * namespace before it asks for write access (inode_permission):
	 * trusted.* needs CAP_SYS_ADMIN, which no run has; user.* exists
	 * only on files and directories. Then the roots say (EACCES came
	 * first in a read root, found by a probing session). */
	if (op == X_SET || op == X_REMOVE) {
		int e = change_first(name, op, (const unsigned char *)buf, size,
				     res.st.st_mode);

		if (!e && (res.acc & CR_FS_W) != CR_FS_W) {
			res.refused = true;
			cr_fs_deny(run, n, sys, &res,
				   "write outside the writable roots");
			e = change_refusal(run, (pid_t)n->pid, name, res.acc,
					   res.dirfd, res.name);
		}
		if (e) {
			free(buf);
			cr_fsres_free(&res);
			return e < 0 ? CR_V_VAL(0) : CR_V_ERR(e);
		}
	}
	if ((res.acc & need[op]) != need[op]) {
		res.refused = true;
		cr_fs_deny(run, n, sys, &res,
			   "attributes of an ancestor of a root are not shown");
		free(buf);
		cr_fsres_free(&res);
		return op == X_LIST ? CR_V_VAL(0) : CR_V_ERR(read_first(name));
	}
	fd = cr_fs_opath(&res, false);
	cr_fsres_free(&res);
	if (fd < 0) {
		free(buf);
		return CR_V_ERR(-fd);
	}
	if (op == X_SET || op == X_REMOVE) {
		struct stat st;

		rc = fstat(fd, &st) < 0 ? -errno :
		     cr_fs_top_xattr(run, n, sys, NULL, fd, &st, name);
		if (rc) {
			free(buf);
			close(fd);
			return CR_V_ERR(-rc);
		}
	}
	cr_fs_fdpath(fd, p, sizeof(p));
	switch (op) {
	case X_GET:
		r = getxattr(p, name, buf, size);
		break;
	case X_LIST:
		r = listxattr(p, buf, size);
		break;
	case X_SET:
		if ((rc = tmpfs_room(run, n, sys, fd, name, size))) {
			r = -1;
			errno = -rc;
			break;
		}
		cr_slow_begin();
		r = setxattr(p, name, buf, size, (int)n->data.args[4]);
		cr_slow_end();
		break;
	case X_REMOVE:
		cr_slow_begin();
		r = removexattr(p, name);
		cr_slow_end();
		break;
	}
	rc = r < 0 ? errno : 0;
	close(fd);
	if (!rc && (op == X_GET || op == X_LIST) && size && r > 0 &&
	    cr_mem_write((pid_t)n->pid, n->data.args[op == X_LIST ? 1 : 2], buf,
			 (size_t)r))
		rc = EFAULT;
	free(buf);
	return rc ? CR_V_ERR(rc) : CR_V_VAL(r);
}

#define XH(fn, op, follow)						\
struct cr_verdict fn(struct cr_run *run, const struct cr_syscall_entry *e, \
		     const struct seccomp_notif *n)			\
{									\
	return do_xattr(run, n, e->name, op, follow);			\
}
XH(cr_h_getxattr, X_GET, true)
XH(cr_h_lgetxattr, X_GET, false)
XH(cr_h_setxattr, X_SET, true)
XH(cr_h_lsetxattr, X_SET, false)
XH(cr_h_listxattr, X_LIST, true)
XH(cr_h_llistxattr, X_LIST, false)
XH(cr_h_removexattr, X_REMOVE, true)
XH(cr_h_lremovexattr, X_REMOVE, false)

/*
 * fcntl(fd, F_NOTIFY) (dnotify): the kernel then signals the caller on
 * every change of the directory's entries, made by anyone. Allowed on a
 * directory inside a root the run reads (CPython's test_fcntl asks it of
 * its temporary directory); on an ancestor of a root (open only for a
 * listing) or a terminal directory it would report activity outside the
 * run: refused, recorded. corral cannot perform it (the kernel makes the
 * performer the signals' target, and the program chooses the signal), so
 * the fd is judged on corral's copy and the call continued, which holds
 * only while no other task can change the caller's descriptors: a thread
 * swapping the number (dup2 is not notified) between the judgement and the
 * kernel's lookup put the watch on /dev/pts or the home directory (found
 * by a probing session). So a caller whose table another thread or
 * process shares is refused too (inotify, which names a path, is the way
 * there), and every answer but the continued one is corral's own.
 */
CR_HANDLER(cr_h_fcntl_notify)
{
	char p[64], path[PATH_MAX];
	struct stat st;
	ssize_t len = 0;
	int fd, fl;
	const char *why = "directory change notification outside the roots is refused";

	(void)e;
	/* A clearing (no event asked) drops the caller's watches on that
	 * file before the kernel looks at its type: it reaches nothing
	 * outside the run whatever file the number names, so the kernel
	 * answers it (corral answered ENOTDIR for a regular file, found by
	 * a probing session). */
	if (!((unsigned)n->data.args[2] & ~(unsigned)DN_MULTISHOT))
		return CR_V_CONT;
	fd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]);
	if (fd < 0)
		return CR_V_ERR(-fd);	/* EBADF: none open */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fstat(fd, &st) < 0) {
		close(fd);
		return CR_V_ERR(EBADF);
	}
	if (fl & O_PATH) {
		close(fd);
		return CR_V_ERR(EBADF);	/* fcntl's answer for O_PATH */
	}
	if (!S_ISDIR(st.st_mode)) {
		close(fd);
		return CR_V_ERR(ENOTDIR);
	}
	cr_fs_fdpath(fd, p, sizeof(p));
	len = readlink(p, path, sizeof(path) - 1);
	close(fd);
	if (len > 0) {
		path[len] = 0;
		if (path[0] == '/' && !cr_path_within("/dev", 4, path, (size_t)len) &&
		    !cr_path_within("/proc", 5, path, (size_t)len) &&
		    (cr_fs_access(run, (pid_t)n->pid, path, (size_t)len) & CR_FS_R)) {
			if (cr_tasks_table_alone(run, (pid_t)n->pid))
				return CR_V_CONT;
			why = "directory change notification from a process whose "
			      "descriptors another task can change is refused";
		}
	}
	/* EACCES, as inotify_add_watch there and as documented (it was
	 * EPERM; found by a differential probe). */
	cr_deny(run, (pid_t)n->pid, "fcntl", len > 0 ? path : NULL, "fs", why);
	return CR_V_ERR(EACCES);
}

struct watch_find {
	unsigned long long dev, ino;
	bool found;
};

static void watch_line(void *arg, char *line)
{
	struct watch_find *w = arg;
	unsigned long long ino, sdev;

	/* "inotify wd:a ino:a3e sdev:800001 mask:...", all hex; the kernel's dev_t
	 * (major << 20 | minor), in hex. */
	if (sscanf(line, "inotify wd:%*x ino:%llx sdev:%llx", &ino, &sdev) == 2 &&
	    ino == w->ino && sdev == w->dev)
		w->found = true;
}

/* Has the instance ifd a watch on the inode of fd already? (Then adding
 * one changes it: no new watch.) False when it cannot be told. */
static bool watched(int ifd, int fd)
{
	struct watch_find w = { 0, 0, false };
	struct stat st;
	char path[48];

	if (fstat(fd, &st) < 0)
		return false;
	w.dev = ((unsigned long long)major(st.st_dev) << 20) | minor(st.st_dev);
	w.ino = st.st_ino;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", ifd);
	return cr_lines_at(AT_FDCWD, path, watch_line, &w) == 0 && w.found;
}

struct cr_verdict cr_h_inotify_add_watch(struct cr_run *run,
					 const struct cr_syscall_entry *e,
					 const struct seccomp_notif *n)
{
	uint32_t mask = (uint32_t)n->data.args[2];
	struct cr_fsres res;
	char p[64];
	int rc, fd, ifd, wd;

	/* The kernel's checks of the mask, before anything else: corral's
	 * own IN_MASK_CREATE (below) made an empty mask pass them, and a
	 * bit inotify does not define beside a known one was looked for
	 * after the path (found by differential probing sessions). */
	const uint32_t all = IN_ALL_EVENTS | IN_UNMOUNT | IN_Q_OVERFLOW |
			     IN_IGNORED | IN_ONLYDIR | IN_DONT_FOLLOW |
			     IN_EXCL_UNLINK | IN_MASK_CREATE | IN_MASK_ADD |
			     IN_ISDIR | IN_ONESHOT;

	if (((mask & IN_MASK_ADD) && (mask & IN_MASK_CREATE)) ||
	    (mask & ~all) || !(mask & all))
		return CR_V_ERR(EINVAL);
	/* Then the instance (EBADF, EINVAL for another file), then the
	 * path, looked up as a directory for IN_ONLYDIR. */
	ifd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]);
	if (ifd < 0)
		return CR_V_ERR(-ifd);
	{
		char what[32];
		ssize_t l;

		cr_fs_fdpath(ifd, p, sizeof(p));
		l = readlink(p, what, sizeof(what) - 1);
		if (l != 18 || memcmp(what, "anon_inode:inotify", 18)) {
			close(ifd);
			return CR_V_ERR(EINVAL);
		}
	}
	rc = cr_fs_arg(run, n, e->name, -1, 1,
		       mask & IN_DONT_FOLLOW ? 0 : CR_RES_FOLLOW, CR_FS_R, &res);
	if (!rc && !res.exists) {
		cr_fsres_free(&res);
		rc = -ENOENT;
	}
	if (!rc && (mask & IN_ONLYDIR) && !S_ISDIR(res.st.st_mode)) {
		cr_fsres_free(&res);
		rc = -ENOTDIR;
	}
	if (rc) {
		close(ifd);
		return CR_V_ERR(-rc);
	}
	/* A watch on /dev/pts would report the user's other terminals as
	 * they are made and used (names, timing): refused. */
	if (cr_path_within("/dev/pts", 8, res.path, res.plen)) {
		res.refused = true;
		cr_fs_deny(run, n, e->name, &res, "watching terminals is refused");
		cr_fsres_free(&res);
		close(ifd);
		return CR_V_ERR(cr_fsrules_refusal(&run->fs->rules, res.acc));
	}
	fd = cr_fs_opath(&res, false);
	if (fd < 0) {
		cr_fsres_free(&res);
		close(ifd);
		return CR_V_ERR(-fd);
	}
	/* A device node (/dev/null, /dev/urandom, a terminal) is a meeting
	 * point of every program of the host, never the run's own: a watch
	 * reports when others open, read, write and close it. Judged on the
	 * inode opened. */
	{
		struct stat st;

		if (fstat(fd, &st) < 0 || S_ISCHR(st.st_mode) ||
		    S_ISBLK(st.st_mode)) {
			close(fd);
			res.refused = true;
			cr_fs_deny(run, n, e->name, &res,
				   "watching a device is refused");
			cr_fsres_free(&res);
			close(ifd);
			return CR_V_ERR(cr_fsrules_refusal(&run->fs->rules,
							   res.acc));
		}
	}
	cr_fsres_free(&res);
	rc = cr_budget_watch_room(run);
	if (rc && !(mask & IN_MASK_CREATE)) {
		/* A change of a watch, as the kernel allows at its limit.
		 * The instance's fdinfo is as long as its watches: a read
		 * dearer than 2 ms is the program's to pay. */
		uint64_t t0 = cr_thread_cpu_ns(), cost;

		if (watched(ifd, fd))
			rc = 0;
		cost = cr_thread_cpu_ns() - t0;
		if (cost > 2000000ull)
			cr_budget_charge_cpu(run, cost);
	}
	if (rc) {
		close(ifd);
		close(fd);
		cr_deny(run, (pid_t)n->pid, e->name, NULL, "fs",
			"more inotify watches than a run may hold (the user's allowance is the host's)");
		return CR_V_ERR(-rc);
	}
	cr_fs_fdpath(fd, p, sizeof(p));
	/* Our path is a magic link to follow. A mask of nothing else is a
	 * watch of no events (the kernel stores IN_IGNORED in every mask):
	 * asked so, as 0 would be refused. */
	mask &= ~IN_DONT_FOLLOW;
	if (!mask)
		mask = IN_IGNORED;
	/* Is the watch new, or a change of one the instance has on the
	 * inode? IN_MASK_CREATE asks the kernel (EEXIST: there is one);
	 * with IN_MASK_ADD it cannot be asked, and the watch counts as new. */
	if (!(mask & (IN_MASK_ADD | IN_MASK_CREATE))) {
		wd = inotify_add_watch(ifd, p, mask | IN_MASK_CREATE);
		if (wd < 0 && errno == EEXIST)
			wd = inotify_add_watch(ifd, p, mask);
		else if (wd >= 0)
			cr_budget_on_watch(run);
	} else {
		/* IN_MASK_ADD cannot be asked so: the instance's fdinfo tells
		 * (a watcher re-arming its masks counted a new watch at each
		 * call, and was ended on memory, found by a probing session).
		 * The read is charged as at the cap. */
		uint64_t t0 = cr_thread_cpu_ns(), cost;
		bool had = (mask & IN_MASK_ADD) && watched(ifd, fd);

		cost = cr_thread_cpu_ns() - t0;
		if (cost > 2000000ull)
			cr_budget_charge_cpu(run, cost);
		wd = inotify_add_watch(ifd, p, mask);
		if (wd >= 0 && !had)
			cr_budget_on_watch(run);
	}
	rc = wd < 0 ? errno : 0;
	close(ifd);
	close(fd);
	return rc ? CR_V_ERR(rc) : CR_V_VAL(wd);
}

static struct cr_verdict do_fxattr(struct cr_run *run,
				   const struct seccomp_notif *n, const char *sys,
				   bool set)
{
	char name[XATTR_NAME_MAX + 1];
	size_t size = set ? (size_t)n->data.args[3] : 0;
	cr_autofree char *buf = NULL;
	struct stat st;
	int rc, fd;

	/* The kernel's order, as for the path forms: a set's flags, the
	 * name, a set's value, then the fd, then what the name and value
	 * are answered before write access (change_first). */
	if (set && ((unsigned)n->data.args[4] &	/* an int, as above */
		    ~(unsigned)(XATTR_CREATE | XATTR_REPLACE)))
		return CR_V_ERR(EINVAL);
	rc = cr_mem_read_str((pid_t)n->pid, n->data.args[1], name, sizeof(name));
	if (rc)
		return CR_V_ERR(rc == -ENAMETOOLONG ? ERANGE : EFAULT);
	if (!name[0])
		return CR_V_ERR(ERANGE);
	if (size > CR_XATTR_MAX)
		return CR_V_ERR(E2BIG);
	if (size) {
		buf = malloc(size);
		if (!buf)
			return CR_V_ERR(ENOMEM);
		if (cr_mem_read((pid_t)n->pid, n->data.args[2], buf, size) ||
		    !cr_notif_valid(run, n->id))
			return CR_V_ERR(EFAULT);
	}
	if (corral_name(name)) {
		cr_deny(run, (pid_t)n->pid, sys, name, "fs",
			"corral's own attributes may not be changed");
		return CR_V_ERR(EPERM);
	}
	fd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]);
	if (fd < 0)
		return CR_V_ERR(-fd);
	if (fcntl(fd, F_GETFL) & O_PATH) {	/* a link's stand-in: linkfd.c */
		close(fd);
		return CR_V_ERR(EBADF);
	}
	rc = fstat(fd, &st) < 0 ? -errno :
	     -change_first(name, set ? X_SET : X_REMOVE,
			   (const unsigned char *)buf, size, st.st_mode);
	if (rc == 1) {		/* a no-op the kernel allows */
		close(fd);
		return CR_V_VAL(0);
	}
	if (!rc) {
		unsigned acc = cr_fs_fd_access(run, (pid_t)n->pid, fd);

		if (!(acc & CR_FS_W)) {
			int e = change_refusal(run, (pid_t)n->pid, name, acc,
					       fd, "");

			if (e == EPERM || e == EOPNOTSUPP)
				rc = -e;
		}
	}
	if (!rc)
		rc = cr_fs_fd_writable(run, n, sys, fd);
	if (!rc)
		rc = cr_fs_top_xattr(run, n, sys, NULL, fd, &st, name);
	if (!rc && set)
		rc = tmpfs_room(run, n, sys, fd, name, size);
	if (!rc) {
		cr_slow_begin();
		rc = (set ? fsetxattr(fd, name, buf, size, (int)n->data.args[4]) :
			    fremovexattr(fd, name)) < 0 ? -errno : 0;
		cr_slow_end();
	}
	close(fd);
	return rc ? CR_V_ERR(-rc) : CR_V_VAL(0);
}

/* fgetxattr / flistxattr: the fd may be one the rules open only for a
 * listing (an ancestor of a root, "..") whose attributes the path forms
 * do not show; judged on where our copy of the fd really points, and
 * read from that copy, so a dup2 racing the check changes nothing. */
static struct cr_verdict do_fxattr_read(struct cr_run *run,
					const struct seccomp_notif *n,
					const char *sys, bool list)
{
	char name[XATTR_NAME_MAX + 1] = "", path[PATH_MAX];
	size_t size = (size_t)n->data.args[list ? 2 : 3];
	cr_autofree char *buf = NULL;
	unsigned acc;
	ssize_t r;
	int rc, fd;

	if (!list) {
		rc = cr_mem_read_str((pid_t)n->pid, n->data.args[1], name,
				     sizeof(name));
		if (rc)
			return CR_V_ERR(rc == -ENAMETOOLONG ? ERANGE : EFAULT);
		if (!name[0])
			return CR_V_ERR(ERANGE);
	}
	if (size > CR_XATTR_MAX)
		size = CR_XATTR_MAX;
	fd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]);
	if (fd < 0)
		return CR_V_ERR(-fd);
	/* Where it points, as the other fd forms judge it: a memfd's or a
	 * pipe's link names no root (an earlier build took "/memfd:NAME"
	 * for a host path and hid what fsetxattr had just stored; found by
	 * a differential probing session). */
	acc = cr_fs_fd_where(run, (pid_t)n->pid, fd, path, sizeof(path));
	if (!acc && !path[0]) {
		close(fd);
		return CR_V_ERR(EBADF);
	}
	if (!(acc & CR_FS_R)) {
		close(fd);
		cr_deny(run, (pid_t)n->pid, sys, path, "fs",
			"attributes of an ancestor of a root are not shown");
		return list ? CR_V_VAL(0) : CR_V_ERR(read_first(name));
	}
	if (size && !(buf = malloc(size))) {
		close(fd);
		return CR_V_ERR(ENOMEM);
	}
	r = list ? flistxattr(fd, buf, size) : fgetxattr(fd, name, buf, size);
	rc = r < 0 ? errno : 0;
	close(fd);
	if (!rc && size && r > 0 &&
	    cr_mem_write((pid_t)n->pid, n->data.args[list ? 1 : 2], buf,
			 (size_t)r))
		rc = EFAULT;
	return rc ? CR_V_ERR(rc) : CR_V_VAL(r);
}

struct cr_verdict cr_h_fgetxattr(struct cr_run *run,
				 const struct cr_syscall_entry *e,
				 const struct seccomp_notif *n)
{
	return do_fxattr_read(run, n, e->name, false);
}

struct cr_verdict cr_h_flistxattr(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n)
{
	return do_fxattr_read(run, n, e->name, true);
}

struct cr_verdict cr_h_fsetxattr(struct cr_run *run,
				 const struct cr_syscall_entry *e,
				 const struct seccomp_notif *n)
{
	return do_fxattr(run, n, e->name, true);
}

struct cr_verdict cr_h_fremovexattr(struct cr_run *run,
				    const struct cr_syscall_entry *e,
				    const struct seccomp_notif *n)
{
	return do_fxattr(run, n, e->name, false);
}
