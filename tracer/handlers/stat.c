/* tracer/handlers/stat.c: stat, lstat, newfstatat, statx, statfs, access,
 * faccessat, faccessat2, readlink, readlinkat: answered from our own calls. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../fs/fsops.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

/* "" with AT_EMPTY_PATH names an fd the task holds: act on a copy of it.
 * The path is read once; a thread rewriting it later changes nothing,
 * because we never hand the call back to the kernel. null_ok: a NULL path
 * counts as "" (statx, as this kernel takes it). *is_empty false: a path
 * to resolve. Else the copy, -1000 for the cwd (resolve "." below), or
 * -errno. */
int cr_h_empty_path(struct cr_run *run, const struct seccomp_notif *n,
		    int pathi, int diri, bool null_ok, bool *is_empty)
{
	char c = 0;

	*is_empty = false;
	if (n->data.args[pathi] || !null_ok) {
		if (cr_mem_read((pid_t)n->pid, n->data.args[pathi], &c, 1))
			return 0;	/* let the full read report the fault */
		if (c)
			return 0;
	}
	if (!cr_notif_valid(run, n->id))
		return -ESRCH;
	*is_empty = true;
	if ((int)n->data.args[diri] == AT_FDCWD)
		return -1000;	/* "the cwd": resolve "." below */
	return cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[diri]);
}

/* Does this kernel take statx(fd, NULL, AT_EMPTY_PATH) as ""? (6.11+;
 * older ones answer EFAULT, and so do we.) Asked once, of our own cwd,
 * which is always there to name. */
static bool statx_null_ok(void)
{
	static int ok = -1;
	struct statx stx;

	if (ok < 0)
		ok = syscall(SYS_statx, AT_FDCWD, NULL, AT_EMPTY_PATH, 0,
			     &stx) == 0;
	return ok;
}

static struct cr_verdict write_back(const struct seccomp_notif *n, int argi,
				    const void *buf, size_t len)
{
	if (cr_mem_write((pid_t)n->pid, n->data.args[argi], buf, len))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL(0);
}

/* /dev/tty and /dev/ptmx are nodes every program of the host uses: their
 * access and modification times move when any process reads or writes a
 * terminal through them (a sudo or ssh prompt). Their times are answered
 * as their change time, which moves only with their owner or mode. Where
 * the kernel answers stat itself (the Landlock fast path) or for an fd
 * the program holds (fstat), the times are the kernel's: docs/threat-
 * model.md. */
static bool shared_terminal(const struct cr_fsres *res, mode_t mode)
{
	return S_ISCHR(mode) &&
	       (!strcmp(res->path, "/dev/tty") || !strcmp(res->path, "/dev/ptmx") ||
		!strcmp(res->path, "/dev/pts/ptmx"));
}

static struct cr_verdict do_stat(struct cr_run *run,
				 const struct seccomp_notif *n, const char *sys,
				 int diri, int pathi, int bufi, int flags)
{
	struct cr_fsres res;
	struct stat st;
	int rc;

	if ((flags & AT_EMPTY_PATH) && diri >= 0) {
		bool empty;
		/* A NULL path counts as "" where statx takes it so: the
		 * kernel does for newfstatat too (6.11+). */
		int fd = cr_h_empty_path(run, n, pathi, diri, statx_null_ok(),
					 &empty);

		if (empty && fd != -1000) {
			if (fd < 0)
				return CR_V_ERR(-fd);
			rc = fstat(fd, &st);
			close(fd);
			return rc < 0 ? CR_V_ERR(errno) : write_back(n, bufi, &st, sizeof(st));
		}
	}
	rc = cr_fs_arg(run, n, sys, diri, pathi,
		       (flags & AT_SYMLINK_NOFOLLOW ? 0 : CR_RES_FOLLOW) |
		       (flags & AT_EMPTY_PATH ? CR_RES_EMPTY_PATH : 0) |
		       ((flags & AT_EMPTY_PATH) && diri >= 0 && statx_null_ok() ?
			CR_RES_NULL_EMPTY : 0),
		       CR_FS_STAT, &res);
	if (rc)
		return CR_V_ERR(-rc);
	if (!res.exists) {
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	/* The resolver's lstat of the last component is the answer: it was
	 * followed if asked, so it is not a link unless the caller wanted the
	 * link itself. One syscall saved on the hottest path. */
	if (res.via_link) {
		rc = fstatat(res.dirfd, res.name, &st, 0);
	} else {
		st = res.st;
		rc = 0;
	}
	if (rc == 0 && shared_terminal(&res, st.st_mode))
		st.st_atim = st.st_mtim = st.st_ctim;
	cr_fsres_free(&res);
	if (rc < 0)
		return CR_V_ERR(errno);
	return write_back(n, bufi, &st, sizeof(st));
}

struct cr_verdict cr_h_stat(struct cr_run *run, const struct cr_syscall_entry *e,
			    const struct seccomp_notif *n)
{
	return do_stat(run, n, e->name, -1, 0, 1, 0);
}

struct cr_verdict cr_h_lstat(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	return do_stat(run, n, e->name, -1, 0, 1, AT_SYMLINK_NOFOLLOW);
}

struct cr_verdict cr_h_newfstatat(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n)
{
	int flags = (int)n->data.args[3];

	/* The sync flags are statx's, and the kernel's fstatat takes them
	 * too (vfs_statx's check). */
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT |
		      AT_STATX_SYNC_TYPE))
		return CR_V_ERR(EINVAL);
	return do_stat(run, n, e->name, 0, 1, 2, flags);
}

struct cr_verdict cr_h_statx(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	int flags = (int)n->data.args[2];
	unsigned mask = (unsigned)n->data.args[3];
	struct cr_fsres res;
	struct statx stx;
	int rc;

	bool unknown = flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT |
				 AT_EMPTY_PATH | AT_STATX_SYNC_TYPE);

	/* The kernel's checks of the flags and the mask come before the
	 * path is looked up (do_statx, vfs_statx); those of an fd's own
	 * statx (an empty path with AT_EMPTY_PATH and a real dirfd:
	 * do_statx_fd) leave other flags to the kernel, which corral's own
	 * statx of its copy asks (since 6.11 it ignores them; before, it
	 * refused them as vfs_statx does; a differential probe). */
	if ((mask & STATX__RESERVED) ||
	    (flags & AT_STATX_SYNC_TYPE) == AT_STATX_SYNC_TYPE)
		return CR_V_ERR(EINVAL);
	if (flags & AT_EMPTY_PATH) {
		bool empty;
		int fd = cr_h_empty_path(run, n, 1, 0, statx_null_ok(),
					  &empty);

		if (empty && fd != -1000) {
			if (fd < 0)
				return CR_V_ERR(-fd);
			if (unknown && (int)n->data.args[0] < 0) {
				close(fd);
				return CR_V_ERR(EINVAL);
			}
			rc = statx(fd, "", flags, mask, &stx);
			close(fd);
			return rc < 0 ? CR_V_ERR(errno) : write_back(n, 4, &stx, sizeof(stx));
		}
	}
	if (unknown)
		return CR_V_ERR(EINVAL);
	rc = cr_fs_arg(run, n, e->name, 0, 1,
		       (flags & AT_SYMLINK_NOFOLLOW ? 0 : CR_RES_FOLLOW) |
		       (flags & AT_EMPTY_PATH ? CR_RES_EMPTY_PATH : 0) |
		       ((flags & AT_EMPTY_PATH) && statx_null_ok() ?
			CR_RES_NULL_EMPTY : 0),
		       CR_FS_STAT, &res);
	if (rc)
		return CR_V_ERR(-rc);
	if (!res.exists) {
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	rc = statx(res.dirfd, res.name,
		   (flags & ~(AT_EMPTY_PATH)) | (res.via_link ? 0 : AT_SYMLINK_NOFOLLOW),
		   mask, &stx);
	if (rc == 0 && (stx.stx_mask & STATX_CTIME) &&
	    shared_terminal(&res, stx.stx_mode))
		stx.stx_atime = stx.stx_mtime = stx.stx_ctime;
	cr_fsres_free(&res);
	if (rc < 0)
		return CR_V_ERR(errno);
	return write_back(n, 4, &stx, sizeof(stx));
}

struct cr_verdict cr_h_statfs(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	struct cr_fsres res;
	struct statfs sf;
	int rc, fd;

	rc = cr_fs_arg(run, n, e->name, -1, 0, CR_RES_FOLLOW, CR_FS_STAT, &res);
	if (rc)
		return CR_V_ERR(-rc);
	if (!res.exists) {
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	fd = cr_fs_opath(&res, res.via_link);
	cr_fsres_free(&res);
	if (fd < 0)
		return CR_V_ERR(-fd);
	rc = fstatfs(fd, &sf);
	close(fd);
	if (rc < 0)
		return CR_V_ERR(errno);
	return write_back(n, 1, &sf, sizeof(sf));
}

/* access: the answer is the sandbox's view: the kernel's permission check
 * AND what the rules grant (a file in a read-only root is not writable). */
static struct cr_verdict do_access(struct cr_run *run,
				   const struct seccomp_notif *n,
				   const char *sys, int diri, int pathi,
				   int mode, int flags)
{
	struct cr_fsres res;
	unsigned need = CR_FS_STAT;
	int rc;

	if (mode & ~(R_OK | W_OK | X_OK))
		return CR_V_ERR(EINVAL);
	if ((flags & AT_EMPTY_PATH) && diri >= 0) {
		/* faccessat2(fd, "", mode, AT_EMPTY_PATH) of a file the task
		 * holds: judged where the fd points, then asked of the
		 * kernel on our copy. A directory fd takes the resolver
		 * below (its /proc and ancestor rules). */
		bool empty;
		int fd = cr_h_empty_path(run, n, pathi, diri, false, &empty);
		struct stat st;

		if (empty && fd != -1000) {
			if (fd < 0)
				return CR_V_ERR(-fd);
			if (fstat(fd, &st) < 0) {
				rc = errno;
				close(fd);
				return CR_V_ERR(rc);
			}
			if (!S_ISDIR(st.st_mode)) {
				unsigned want = 0, acc;
				char where[PATH_MAX];

				if (mode & R_OK)
					want |= CR_FS_R;
				if (mode & W_OK)
					want |= CR_FS_W;
				if (mode & X_OK)
					want |= CR_FS_X;
				acc = cr_fs_fd_where(run, (pid_t)n->pid, fd, where,
						     sizeof(where));
				/* The run's own terminal, as its path and
				 * open grant it (a master is only ever the
				 * run's: corral opened it; found by a
				 * differential probing session). */
				if ((want & CR_FS_W) && !(acc & CR_FS_W) &&
				    (!strcmp(where, "/dev/ptmx") ||
				     (!strncmp(where, "/dev/pts/", 9) &&
				      cr_fs_pty_is_runs(run, fd))))
					acc |= CR_FS_R | CR_FS_W;
				rc = (acc & want) != want ? EACCES :
				     syscall(SYS_faccessat2, fd, "", mode,
					     (flags & AT_EACCESS) |
					     AT_EMPTY_PATH) < 0 ? errno : 0;
				close(fd);
				return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
			}
			close(fd);
		}
	}
	rc = cr_fs_arg(run, n, sys, diri, pathi,
		       (flags & AT_SYMLINK_NOFOLLOW ? 0 : CR_RES_FOLLOW) |
		       (flags & AT_EMPTY_PATH ? CR_RES_EMPTY_PATH : 0),
		       CR_FS_STAT, &res);
	if (rc)
		return CR_V_ERR(-rc);
	if (!res.exists) {
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	if (mode & R_OK)
		need |= CR_FS_R;
	if (mode & W_OK)
		need |= CR_FS_W;
	/* X on a directory is search: traversal, which STAT already means.
	 * A link asked about itself (AT_SYMLINK_NOFOLLOW) has mode 0777 and
	 * is never executed: the kernel's answer on its mode stands (EACCES
	 * answered it outside the exec roots, found by a probing session). */
	if ((mode & X_OK) && !S_ISDIR(res.st.st_mode) &&
	    !S_ISLNK(res.st.st_mode))
		need |= CR_FS_X;
	/* R on an ancestor of a root: it opens for reading (its listing
	 * shows what leads into a root, open.c), so the kernel's answer on
	 * its mode stands (EACCES answered "/" and /etc, found by a
	 * differential probe). /proc keeps its own rules. */
	if ((need & CR_FS_R) && S_ISDIR(res.st.st_mode) &&
	    (res.acc & CR_FS_STAT) &&
	    !cr_path_within("/proc", 5, res.path, res.plen))
		need &= ~CR_FS_R;
	/* A terminal node the rules show (/dev/tty, the run's ptys): the
	 * question is its mode bits, which stat shows anyway; what opening
	 * it gives stays the open handler's (the caller's terminal, ENXIO). */
	if (S_ISCHR(res.st.st_mode) && cr_fs_pty_path(&res))
		need &= ~(CR_FS_R | CR_FS_W);
	if ((res.acc & need) != need) {
		cr_fsres_free(&res);
		return CR_V_ERR(EACCES);
	}
	rc = (int)syscall(SYS_faccessat2, res.dirfd, res.name, mode,
			  (flags & AT_EACCESS) |
			  (res.via_link ? 0 : AT_SYMLINK_NOFOLLOW));
	cr_fsres_free(&res);
	return rc < 0 ? CR_V_ERR(errno) : CR_V_VAL(0);
}

struct cr_verdict cr_h_access(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	return do_access(run, n, e->name, -1, 0, (int)n->data.args[1], 0);
}

struct cr_verdict cr_h_faccessat(struct cr_run *run,
				 const struct cr_syscall_entry *e,
				 const struct seccomp_notif *n)
{
	return do_access(run, n, e->name, 0, 1, (int)n->data.args[2], 0);
}

struct cr_verdict cr_h_faccessat2(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n)
{
	int flags = (int)n->data.args[3];

	if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return CR_V_ERR(EINVAL);
	return do_access(run, n, e->name, 0, 1, (int)n->data.args[2], flags);
}

/* readlink's answer: len bytes of buf (or -1 and errno), cut to size. */
static struct cr_verdict link_reply(const struct seccomp_notif *n, int bufi,
				    int64_t size, const char *buf, ssize_t len)
{
	if (len < 0)
		return CR_V_ERR(errno);
	if (len > size)
		len = size;
	if (cr_mem_write((pid_t)n->pid, n->data.args[bufi], buf, (size_t)len))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL(len);
}

static struct cr_verdict do_readlink(struct cr_run *run,
				     const struct seccomp_notif *n,
				     const char *sys, int diri, int pathi,
				     int bufi, int sizei)
{
	struct cr_fsres res;
	char buf[PATH_MAX];
	/* The kernel's bufsiz is an int: the register's upper half is not
	 * read (0x100000004 is 4 bytes; 0xffffffff is -1, EINVAL). */
	int64_t size = (int)n->data.args[sizei];
	ssize_t len;
	int rc;

	if (size <= 0)
		return CR_V_ERR(EINVAL);
	rc = cr_fs_arg(run, n, sys, diri, pathi, 0, CR_FS_STAT, &res);
	if (rc == -ENOENT && diri >= 0 &&
	    (int)n->data.args[diri] != AT_FDCWD) {
		char c = 1;

		/* readlinkat(fd, ""): the kernel looks at fd first (EBADF
		 * for one not open), then answers ENOENT for anything but
		 * a link opened with O_PATH: the stand-in corral gave for
		 * one is that link here (fs/linkfd.c). Asked only on the
		 * way to ENOENT. */
		if (!cr_mem_read((pid_t)n->pid, n->data.args[pathi], &c, 1) &&
		    !c) {
			int fd = cr_fs_task_fd(run, (pid_t)n->pid,
					       (int)n->data.args[diri]);
			struct stat st;

			if (fd < 0)
				return CR_V_ERR(-fd);
			if (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
				len = readlinkat(fd, "", buf, sizeof(buf));
				close(fd);
				return link_reply(n, bufi, size, buf, len);
			}
			close(fd);
		}
	}
	if (rc)
		return CR_V_ERR(-rc);
	if (!res.exists) {
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	if (res.link_text[0]) {
		len = (ssize_t)strlen(res.link_text);
		memcpy(buf, res.link_text, (size_t)len);
	} else if (!S_ISLNK(res.st.st_mode) && !res.trailing_slash) {
		/* The resolution's lstat already says it is no link: the
		 * kernel's answer, without asking it again (realpath asks
		 * this of every component it walks: cc1 does it ~500 times
		 * per compilation). */
		errno = EINVAL;
		len = -1;
	} else {
		len = readlinkat(res.dirfd, res.name, buf, sizeof(buf));
	}
	cr_fsres_free(&res);
	return link_reply(n, bufi, size, buf, len);
}

struct cr_verdict cr_h_readlink(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	return do_readlink(run, n, e->name, -1, 0, 1, 2);
}

struct cr_verdict cr_h_readlinkat(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n)
{
	return do_readlink(run, n, e->name, 0, 1, 2, 3);
}
