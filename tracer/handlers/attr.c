/* tracer/handlers/attr.c: chmod, fchmodat, fchmodat2, chown, lchown,
 * fchownat, truncate, utime, utimes, utimensat, futimesat, and the inode
 * flag ioctls (chattr). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <linux/audit.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <utime.h>

#include "../budget/budget.h"
#include "../fs/fsops.h"

/* What the kernel would answer first for an attribute change of the
 * inode behind fd (st its stat) that the rules refuse: EROFS on a
 * read-only mount (mnt_want_write comes before anything), then, for a
 * change only the owner may make (chmod, chown, explicit times), EPERM
 * when the task's fsuid is not the owner (setattr_prepare). 0: nothing
 * the kernel would say first, and the refusal stays EACCES. The object
 * is visible, its owner no secret. */
static int attr_kerr(pid_t tid, int fd, const struct stat *st, bool owner)
{
	struct statfs sf;
	uid_t fsuid;

	if (fstatfs(fd, &sf) == 0 && (sf.f_flags & ST_RDONLY))
		return EROFS;
	if (owner && cr_fs_task_fsuid(tid, &fsuid) == 0 && fsuid != st->st_uid)
		return EPERM;
	return 0;
}

/* chown(obj, -1, -1) asks the kernel for no check on an inode without
 * set-user-ID, set-group-ID or file capabilities (which it would clear,
 * an owner's change): it succeeds on any such file, and so does ours,
 * without acting (the kernel would touch its ctime only). */
static bool chown_noop(int fd, const struct stat *st, uid_t uid, gid_t gid)
{
	char p[64];

	if (uid != (uid_t)-1 || gid != (gid_t)-1)
		return false;
	if (S_ISDIR(st->st_mode) || S_ISLNK(st->st_mode))
		return true;
	if (st->st_mode & (S_ISUID | S_ISGID))
		return false;
	cr_fs_fdpath(fd, p, sizeof(p));
	return getxattr(p, "security.capability", NULL, 0) < 0 &&
	       (errno == ENODATA || errno == EOPNOTSUPP);
}

/* How a refused change is answered (resolve_w). */
enum wkind {
	WK_WRITE,	/* EACCES (EROFS first) */
	WK_OWNER,	/* the owner's: EPERM to anyone else */
	WK_MODE,	/* as WK_OWNER; a link's mode EOPNOTSUPP first */
	WK_TRUNCATE,	/* EISDIR, EINVAL by type first */
	WK_CHOWN_NOOP,	/* chown(-1, -1): done without acting */
	WK_BAD_TIMES,	/* utimensat's invalid nanoseconds: EINVAL for
			 * any object found, before permission */
};

/* Metadata of an object is changed through an O_PATH fd on exactly that
 * object ("/proc/self/fd/N" or AT_EMPTY_PATH), or with AT_SYMLINK_NOFOLLOW
 * on a name we resolved: a link swapped in meanwhile is never followed.
 * 0: res is the object, in a writable root; 1: a no-op the kernel allows
 * (res freed); else -errno, for a refusal what the kernel would answer
 * first where the object is visible (only the errno changes). */
static int resolve_w(struct cr_run *run, const struct seccomp_notif *n,
		     const char *sys, int diri, int pathi, bool follow,
		     bool empty_ok, enum wkind k, struct cr_fsres *res)
{
	int rc = cr_fs_arg(run, n, sys, diri, pathi,
			   (follow ? CR_RES_FOLLOW : 0) |
			   (empty_ok ? CR_RES_EMPTY_PATH : 0), 0, res);
	int kerr = 0, fd;

	if (rc)
		return rc;
	if (!res->exists) {
		cr_fsres_free(res);
		return -ENOENT;
	}
	if (k == WK_BAD_TIMES) {
		cr_fsres_free(res);
		return -EINVAL;
	}
	if (res->w_by_fd && k != WK_TRUNCATE)
		res->acc &= ~CR_FS_W;	/* metadata: the place's (resolve.c) */
	if (res->acc & CR_FS_W)
		return 0;
	/* One of the run's ptys: its owner's changes (mode, owner, times:
	 * `mesg`, screen, a chown to the tty group) are the kernel's to
	 * answer, as for a file of a writable root. Each is made on an fd
	 * checked to be that pty (pty_gate): a number the run let go and
	 * another's pty took meanwhile is refused. They answered EACCES
	 * (found by a compatibility probing session: `mesg y` under
	 * `script` exited 2). */
	if ((k == WK_MODE || k == WK_OWNER || k == WK_CHOWN_NOOP ||
	     k == WK_WRITE) && S_ISCHR(res->st.st_mode) && res->plen > 9 &&
	    !memcmp(res->path, "/dev/pts/", 9) &&
	    strspn(res->path + 9, "0123456789") == res->plen - 9 &&
	    res->plen - 9 < 10 &&
	    cr_fs_pty_allocated(run, (unsigned)atoi(res->path + 9))) {
		res->pty = true;
		return 0;
	}
	/* notify_change refuses a link's mode before the owner is asked
	 * (EPERM came first in a read root, found by a differential probing
	 * session): the caller answers it (do_chmod). */
	if (k == WK_MODE && S_ISLNK(res->st.st_mode))
		return 0;
	if (k == WK_TRUNCATE && !S_ISREG(res->st.st_mode))
		kerr = S_ISDIR(res->st.st_mode) ? EISDIR : EINVAL;
	if (!kerr && cr_fsrules_refusal(&run->fs->rules, res->acc) == EACCES &&
	    (fd = cr_fs_opath(res, res->via_link)) >= 0) {
		struct stat st;

		if (fstat(fd, &st) == 0) {
			kerr = attr_kerr((pid_t)n->pid, fd, &st,
					 k == WK_OWNER || k == WK_MODE ||
					 k == WK_CHOWN_NOOP);
			if (k == WK_CHOWN_NOOP && kerr != EROFS &&
			    chown_noop(fd, &st, (uid_t)-1, (gid_t)-1)) {
				close(fd);
				cr_fsres_free(res);
				return 1;
			}
		}
		close(fd);
	}
	res->refused = true;
	cr_fs_deny(run, n, sys, res, "write outside the writable roots");
	kerr = cr_fsrules_refusal_as(&run->fs->rules, res->acc, kerr);
	/* A mode change: procfs's own answer there (its owner changes and
	 * times are other questions, left as they were). */
	if (k == WK_MODE)
		kerr = cr_fs_proc_refusal(run, res, kerr);
	cr_fsres_free(res);
	return -kerr;
}

/* For a pty of the run named by its path (resolve_w): is fd, the one a
 * change acts on, still that pty? 0, or -EACCES, recorded, as any
 * change outside the writable roots. */
static int pty_gate(struct cr_run *run, const struct seccomp_notif *n,
		    const char *sys, struct cr_fsres *res, int fd)
{
	if (!res->pty || cr_fs_pty_is_runs(run, fd))
		return 0;
	res->refused = true;
	cr_fs_deny(run, n, sys, res, "a terminal the run does not hold");
	return -EACCES;
}

/* The fd forms' check (cr_fs_fd_writable), with the kernel's errno in
 * place of a visible refusal's EACCES, as resolve_w. */
static int fd_writable_as(struct cr_run *run, const struct seccomp_notif *n,
			  const char *sys, int fd, bool owner)
{
	int rc = cr_fs_fd_writable(run, n, sys, fd);
	struct stat st;

	if (rc == -EACCES && fstat(fd, &st) == 0) {
		int kerr = attr_kerr((pid_t)n->pid, fd, &st, owner);

		if (kerr)
			rc = -kerr;
	}
	return rc;
}

static struct cr_verdict do_chmod(struct cr_run *run,
				  const struct seccomp_notif *n, const char *sys,
				  int diri, int pathi, mode_t mode, int flags)
{
	struct cr_fsres res;
	struct stat st;
	char p[64];
	bool piped;
	int rc, fd;

	if ((flags & AT_EMPTY_PATH) && diri >= 0) {
		/* fchmodat2(fd, "", mode, AT_EMPTY_PATH): fchmod(fd). */
		bool empty;

		fd = cr_h_empty_path(run, n, pathi, diri, false, &empty);
		if (empty && fd != -1000) {
			if (fd < 0)
				return CR_V_ERR(-fd);
			/* A link (the stand-in of its O_PATH fd) has no
			 * modes: EOPNOTSUPP, as the kernel's (found by a
			 * differential probing session: EBADF). */
			rc = fstat(fd, &st) < 0 ? errno :
			     S_ISLNK(st.st_mode) ? EOPNOTSUPP :
			     -fd_writable_as(run, n, sys, fd, true);
			if (!rc) {
				mode = cr_fs_top_mode(run, n, sys, NULL, fd, &st,
						      mode & 07777);
				mode = cr_fs_safe_mode(run, n, sys, NULL, mode,
						       S_ISDIR(st.st_mode));
				/* An O_PATH fd is EBADF to fchmod; its path
				 * in /proc names the same inode. */
				cr_fs_fdpath(fd, p, sizeof(p));
				cr_slow_begin();
				rc = ((fcntl(fd, F_GETFL) & O_PATH) ?
				      chmod(p, mode) : fchmod(fd, mode)) < 0 ?
				     errno : 0;
				cr_slow_end();
			}
			close(fd);
			return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
		}
		/* "" of the cwd (fd -1000): resolved below, as stat does. */
	}
	rc = resolve_w(run, n, sys, diri, pathi, !(flags & AT_SYMLINK_NOFOLLOW),
		       flags & AT_EMPTY_PATH, WK_MODE, &res);
	if (rc)
		return CR_V_ERR(-rc);
	/* /proc/<pid>/fd/N of a pipe: the link is followed to the pipe, as
	 * the kernel's chmod does (its mode then changes; found by a
	 * differential check: EOPNOTSUPP, the link's answer, before). */
	piped = res.via_link && res.linkfd >= 0 &&
		fstat(res.linkfd, &st) == 0 && S_ISFIFO(st.st_mode);
	if (S_ISLNK(res.st.st_mode) && !piped) {
		cr_fsres_free(&res);
		return CR_V_ERR(EOPNOTSUPP);
	}
	fd = piped ? fcntl(res.linkfd, F_DUPFD_CLOEXEC, 0) :
		     cr_fs_opath(&res, false);
	if (piped && fd < 0)
		fd = -errno;
	if (fd < 0) {
		cr_fsres_free(&res);
		return CR_V_ERR(-fd);
	}
	/* Judged on the inode opened: the one chmod acts on. */
	rc = -pty_gate(run, n, sys, &res, fd);
	if (!rc && fstat(fd, &st) < 0)
		rc = errno;
	if (!rc) {
		mode = cr_fs_top_mode(run, n, sys, res.path, fd, &st,
				      mode & 07777);
		mode = cr_fs_safe_mode(run, n, sys, res.path, mode,
				       S_ISDIR(st.st_mode));
		cr_fs_fdpath(fd, p, sizeof(p));
		cr_slow_begin();
		rc = chmod(p, mode & 07777) < 0 ? errno : 0;
		cr_slow_end();
	}
	cr_fsres_free(&res);
	close(fd);
	return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
}

struct cr_verdict cr_h_chmod(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	return do_chmod(run, n, e->name, -1, 0, (mode_t)n->data.args[1], 0);
}

struct cr_verdict cr_h_fchmodat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	return do_chmod(run, n, e->name, 0, 1, (mode_t)n->data.args[2], 0);
}

struct cr_verdict cr_h_fchmodat2(struct cr_run *run,
				 const struct cr_syscall_entry *e,
				 const struct seccomp_notif *n)
{
	int flags = (int)n->data.args[3];

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return CR_V_ERR(EINVAL);
	return do_chmod(run, n, e->name, 0, 1, (mode_t)n->data.args[2], flags);
}

static struct cr_verdict chown_fd(struct cr_run *run,
				  const struct seccomp_notif *n, const char *sys,
				  int fd, uid_t uid, gid_t gid, bool at_empty);

static struct cr_verdict do_chown(struct cr_run *run,
				  const struct seccomp_notif *n, const char *sys,
				  int diri, int pathi, int ui, int flags)
{
	struct cr_fsres res;
	struct stat st;
	int rc, fd;

	if ((flags & AT_EMPTY_PATH) && diri >= 0) {
		/* fchownat(fd, "", uid, gid, AT_EMPTY_PATH): fchown(fd),
		 * as fchmodat2's AT_EMPTY_PATH is fchmod(fd). */
		bool empty;

		fd = cr_h_empty_path(run, n, pathi, diri, false, &empty);
		if (empty && fd != -1000)
			return chown_fd(run, n, sys, fd,
					(uid_t)n->data.args[ui],
					(gid_t)n->data.args[ui + 1], true);
		/* "" of the cwd (fd -1000): resolved below, as stat does. */
	}
	rc = resolve_w(run, n, sys, diri, pathi, !(flags & AT_SYMLINK_NOFOLLOW),
		       flags & AT_EMPTY_PATH,
		       (uid_t)n->data.args[ui] == (uid_t)-1 &&
		       (gid_t)n->data.args[ui + 1] == (gid_t)-1 ?
		       WK_CHOWN_NOOP : WK_OWNER, &res);
	if (rc)
		return rc > 0 ? CR_V_VAL(0) : CR_V_ERR(-rc);
	/* On an fd of the object (a link itself when not followed), the
	 * inode judged: a name swapped meanwhile changes nothing. */
	fd = cr_fs_opath(&res, false);
	if (fd < 0) {
		cr_fsres_free(&res);
		return CR_V_ERR(-fd);
	}
	rc = -pty_gate(run, n, sys, &res, fd);
	if (!rc)
		rc = fstat(fd, &st) < 0 ? errno :
		     -cr_fs_top_chown(run, n, sys, res.path, fd, &st,
				      (uid_t)n->data.args[ui],
				      (gid_t)n->data.args[ui + 1]);
	if (!rc) {
		cr_slow_begin();
		rc = fchownat(fd, "", (uid_t)n->data.args[ui],
			      (gid_t)n->data.args[ui + 1], AT_EMPTY_PATH) < 0 ?
		     errno : 0;
		cr_slow_end();
	}
	close(fd);
	cr_fsres_free(&res);
	return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
}

struct cr_verdict cr_h_chown(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	return do_chown(run, n, e->name, -1, 0, 1, 0);
}

struct cr_verdict cr_h_lchown(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	return do_chown(run, n, e->name, -1, 0, 1, AT_SYMLINK_NOFOLLOW);
}

struct cr_verdict cr_h_fchownat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	int flags = (int)n->data.args[4];

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return CR_V_ERR(EINVAL);
	return do_chown(run, n, e->name, 0, 1, 2, flags);
}

struct cr_verdict cr_h_truncate(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	struct cr_fsres res;
	char p[64];
	uint64_t t0;
	int rc, fd;

	if ((int64_t)n->data.args[1] < 0)
		return CR_V_ERR(EINVAL);
	rc = resolve_w(run, n, e->name, -1, 0, true, false, WK_TRUNCATE, &res);
	if (rc)
		return CR_V_ERR(-rc);
	if (!S_ISREG(res.st.st_mode)) {
		rc = S_ISDIR(res.st.st_mode) ? EISDIR : EINVAL;
		cr_fsres_free(&res);
		return CR_V_ERR(rc);
	}
	fd = cr_fs_opath(&res, false);
	cr_fsres_free(&res);
	if (fd < 0)
		return CR_V_ERR(-fd);
	/* The caller's file size limit, as the kernel's inode_newsize_ok
	 * applies it to a file that grows: SIGXFSZ and EFBIG (corral's own
	 * limit is not the program's; found by a probing session). */
	{
		struct rlimit rl;
		struct stat st;
		off_t len = (off_t)n->data.args[1];

		if (cr_quiet_fstat(fd, &st) == 0 && st.st_size < len &&
		    prlimit((pid_t)n->pid, RLIMIT_FSIZE, NULL, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY && (rlim_t)len > rl.rlim_cur) {
			close(fd);
			cr_signal_raise((pid_t)n->pid, SIGXFSZ);
			return CR_V_ERR(EFBIG);
		}
	}
	/* truncate(2) of the inode resolved, through its O_PATH fd: the
	 * kernel's own path form, with its permission checks, and no open
	 * (an open for writing and its close showed watchers IN_OPEN and
	 * IN_CLOSE_WRITE, a finished write, where the kernel reports
	 * IN_MODIFY alone; found by a differential probing session). */
	cr_fs_fdpath(fd, p, sizeof(p));
	t0 = cr_thread_cpu_ns();
	cr_slow_begin();
	rc = truncate(p, (off_t)n->data.args[1]) < 0 ? errno : 0;
	cr_slow_end();
	/* Freeing a large file's pages is kernel work in corral's time:
	 * the run's (handlers/alloc.c). */
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	close(fd);
	return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
}

static bool nsec_ok(long ns)
{
	return (ns >= 0 && ns <= 999999999L) || ns == UTIME_NOW ||
	       ns == UTIME_OMIT;
}

/* times: NULL (now) or two timespecs already converted from the caller's
 * layout. path_null: the fd form (futimens), which acts on the task's fd. */
static struct cr_verdict do_utimens(struct cr_run *run,
				    const struct seccomp_notif *n,
				    const char *sys, int diri, int pathi,
				    const struct timespec *times, int flags)
{
	struct cr_fsres res;
	/* Times given are the owner's to set (ATTR_TIMES_SET), UTIME_OMIT
	 * for one of them too; only both now (the kernel's times = NULL)
	 * needs no more than write permission (found by a differential
	 * probing session: {NOW, OMIT} answered EACCES for EPERM). */
	bool explicit = times &&
		!(times[0].tv_nsec == UTIME_NOW &&
		  times[1].tv_nsec == UTIME_NOW);
	/* vfs_utimes checks the nanoseconds after the lookup and before
	 * any permission: an object found, in a read-only root too, gives
	 * EINVAL (EPERM or EACCES came first; found by a differential
	 * probing session). */
	bool bad = times && (!nsec_ok(times[0].tv_nsec) ||
			     !nsec_ok(times[1].tv_nsec));
	int rc;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return CR_V_ERR(EINVAL);
	/* The kernel's do_utimes: a NULL path is the fd form, which takes
	 * no flags, except at AT_FDCWD, where it is a path that cannot be
	 * read, AT_EMPTY_PATH or not. */
	if (diri >= 0 && n->data.args[pathi] == 0) {
		if ((int)n->data.args[diri] == AT_FDCWD)
			return CR_V_ERR(EFAULT);
		if ((int)n->data.args[diri] != AT_FDCWD && flags)
			return CR_V_ERR(EINVAL);
	}
	if (diri >= 0 && (n->data.args[pathi] == 0 || (flags & AT_EMPTY_PATH))) {
		/* The fd form: a NULL path (futimens), or "" with
		 * AT_EMPTY_PATH. The times were read from the task: the
		 * check that it is still the same task follows the path's
		 * read. */
		bool empty = n->data.args[pathi] == 0;
		int fd;

		if (empty) {
			if (!cr_notif_valid(run, n->id))
				return CR_V_ERR(ESRCH);
			fd = cr_fs_task_fd(run, (pid_t)n->pid,
					   (int)n->data.args[diri]);
		} else {
			fd = cr_h_empty_path(run, n, pathi, diri, false, &empty);
			if (!empty)
				goto by_path;
			if (fd == -1000)	/* the cwd: as in do_chmod */
				goto by_path;
		}
		if (fd < 0)
			return CR_V_ERR(-fd);
		rc = bad ? EINVAL : -fd_writable_as(run, n, sys, fd, explicit);
		if (!rc) {
			/* "" with AT_EMPTY_PATH as the kernel has it: it
			 * works on an O_PATH fd (a link's stand-in: the
			 * link's times), where a NULL path is EBADF (found
			 * by a differential probing session). */
			cr_slow_begin();
			rc = (n->data.args[pathi] == 0 ? futimens(fd, times) :
			      utimensat(fd, "", times, AT_EMPTY_PATH)) < 0 ?
			     errno : 0;
			cr_slow_end();
		}
		close(fd);
		return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
	}
by_path:
	rc = resolve_w(run, n, sys, diri, pathi, !(flags & AT_SYMLINK_NOFOLLOW),
		       flags & AT_EMPTY_PATH,
		       bad ? WK_BAD_TIMES : explicit ? WK_OWNER : WK_WRITE,
		       &res);
	if (rc)
		return CR_V_ERR(-rc);
	if (res.pty) {	/* through an fd checked to be the run's pty */
		int fd = cr_fs_opath(&res, false);
		char p[64];

		rc = fd < 0 ? -fd : -pty_gate(run, n, sys, &res, fd);
		if (!rc) {
			cr_fs_fdpath(fd, p, sizeof(p));
			rc = utimensat(AT_FDCWD, p, times, 0) < 0 ? errno : 0;
		}
		if (fd >= 0)
			close(fd);
		cr_fsres_free(&res);
		return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
	}
	cr_slow_begin();
	rc = utimensat(res.dirfd, res.name, times,
		       res.via_link ? 0 : AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
	cr_slow_end();
	cr_fsres_free(&res);
	return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
}

static int read_timevals(const struct seccomp_notif *n, int argi,
			 struct timespec ts[2], bool *null)
{
	struct timeval tv[2];

	*null = n->data.args[argi] == 0;
	if (*null)
		return 0;
	if (cr_mem_read((pid_t)n->pid, n->data.args[argi], tv, sizeof(tv)))
		return -EFAULT;
	for (int i = 0; i < 2; i++) {
		if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000)
			return -EINVAL;
		ts[i].tv_sec = tv[i].tv_sec;
		ts[i].tv_nsec = tv[i].tv_usec * 1000;
	}
	return 0;
}

struct cr_verdict cr_h_utimensat(struct cr_run *run,
				 const struct cr_syscall_entry *e,
				 const struct seccomp_notif *n)
{
	struct timespec ts[2];
	bool null = n->data.args[2] == 0;

	if (!null && cr_mem_read((pid_t)n->pid, n->data.args[2], ts, sizeof(ts)))
		return CR_V_ERR(EFAULT);
	/* Nothing to do: the kernel does not even look at the path. */
	if (!null && ts[0].tv_nsec == UTIME_OMIT && ts[1].tv_nsec == UTIME_OMIT)
		return CR_V_VAL(0);
	return do_utimens(run, n, e->name, 0, 1, null ? NULL : ts,
			  (int)n->data.args[3]);
}

struct cr_verdict cr_h_utimes(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	struct timespec ts[2];
	bool null;
	int rc = read_timevals(n, 1, ts, &null);

	if (rc)
		return CR_V_ERR(-rc);
	return do_utimens(run, n, e->name, -1, 0, null ? NULL : ts, 0);
}

struct cr_verdict cr_h_futimesat(struct cr_run *run,
				 const struct cr_syscall_entry *e,
				 const struct seccomp_notif *n)
{
	struct timespec ts[2];
	bool null;
	int rc = read_timevals(n, 2, ts, &null);

	if (rc)
		return CR_V_ERR(-rc);
	/* futimesat(fd, NULL, tv) acts on fd, as futimens (do_utimens). */
	return do_utimens(run, n, e->name, 0, 1, null ? NULL : ts, 0);
}

struct cr_verdict cr_h_utime(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	struct utimbuf ub;
	struct timespec ts[2];

	if (!n->data.args[1])
		return do_utimens(run, n, e->name, -1, 0, NULL, 0);
	if (cr_mem_read((pid_t)n->pid, n->data.args[1], &ub, sizeof(ub)))
		return CR_V_ERR(EFAULT);
	ts[0] = (struct timespec){ .tv_sec = ub.actime };
	ts[1] = (struct timespec){ .tv_sec = ub.modtime };
	return do_utimens(run, n, e->name, -1, 0, ts, 0);
}

/* The fd forms (fchmod, fchown, futimens, fsetxattr, fremovexattr) change
 * metadata through an fd the program holds. Owning a file is enough for the
 * kernel, and the program may own files in a read-only root (its own
 * project under --ro, or every system file when run as root): so these are
 * decided on where the fd really points, and performed on a copy of it. */
/* Where fd really points: its path in path (empty for a pipe or socket,
 * which no root rules), the access the rules grant there (every bit for
 * no path). */
static unsigned fd_access(struct cr_run *run, pid_t tid, int fd,
			  char *path, size_t size)
{
	char p[64];
	ssize_t len;

	path[0] = 0;
	cr_fs_fdpath(fd, p, sizeof(p));
	len = readlink(p, path, size - 1);
	if (len <= 0) {
		path[0] = 0;
		return 0;
	}
	path[len] = 0;
	if (len > 10 && !strcmp(path + len - 10, " (deleted)")) {
		struct stat st;

		/* A live file may be named so: only a removed one (no link
		 * left) loses the suffix, and is judged where it was. */
		if (fstat(fd, &st) == 0 && st.st_nlink > 0)
			return cr_fs_access(run, tid, path, (size_t)len);
		len -= 10;
		path[len] = 0;
		/* A memfd (the run's: memfd_create is performed for it,
		 * handlers/memfd.c) shows as "/memfd:NAME (deleted)", no
		 * path of any root: like a pipe, no root rules it (an
		 * earlier build took it for a host file outside the roots,
		 * and fchmod, fchown and faccessat2 on it were refused). */
		if (!strncmp(path, "/memfd:", 7) && fstat(fd, &st) == 0 &&
		    st.st_nlink == 0)
			path[0] = 0;
	}
	if (path[0] != '/') {
		path[0] = 0;
		return CR_FS_R | CR_FS_W | CR_FS_X | CR_FS_STAT;
	}
	return cr_fs_access(run, tid, path, (size_t)len);
}

unsigned cr_fs_fd_access(struct cr_run *run, pid_t tid, int fd)
{
	char path[PATH_MAX];

	return fd_access(run, tid, fd, path, sizeof(path));
}

unsigned cr_fs_fd_where(struct cr_run *run, pid_t tid, int fd, char *path,
			size_t size)
{
	return fd_access(run, tid, fd, path, size);
}

int cr_fs_fd_writable(struct cr_run *run, const struct seccomp_notif *n,
		      const char *sys, int fd)
{
	char path[PATH_MAX];
	unsigned acc = fd_access(run, (pid_t)n->pid, fd, path, sizeof(path));

	if (!acc && !path[0])
		return -EBADF;
	/* The run's own pty, this very open of it (resolve_w). */
	if (!(acc & CR_FS_W) && !strncmp(path, "/dev/pts/", 9) &&
	    cr_fs_pty_is_runs(run, fd))
		return 0;
	if (!(acc & CR_FS_W)) {
		cr_deny(run, (pid_t)n->pid, sys, path, "fs",
			"write outside the writable roots");
		/* The program holds the fd: the object is not hidden from it. */
		return -cr_fsrules_refusal(&run->fs->rules, CR_FS_STAT);
	}
	return 0;
}

struct cr_verdict cr_h_fchmod(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	int fd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]);
	int rc;

	if (fd < 0)
		return CR_V_ERR(-fd);
	if (fcntl(fd, F_GETFL) & O_PATH) {	/* a link's stand-in */
		close(fd);
		return CR_V_ERR(EBADF);
	}
	rc = fd_writable_as(run, n, e->name, fd, true);
	if (!rc) {
		struct stat st;
		mode_t mode = (mode_t)n->data.args[1] & 07777;

		if (fstat(fd, &st) < 0) {
			rc = -errno;
		} else {
			mode = cr_fs_top_mode(run, n, e->name, NULL, fd, &st,
					      mode);
			mode = cr_fs_safe_mode(run, n, e->name, NULL, mode,
					       S_ISDIR(st.st_mode));
		}
		if (!rc) {
			cr_slow_begin();
			rc = fchmod(fd, mode) < 0 ? -errno : 0;
			cr_slow_end();
		}
	}
	close(fd);
	return rc ? CR_V_ERR(-rc) : CR_V_VAL(0);
}

/* fchown(fd) and fchownat(fd, "", AT_EMPTY_PATH) (at_empty): on our copy
 * of the task's fd (consumed). An O_PATH fd (the stand-in of a link, which
 * the copy is: fs/linkfd.c) is EBADF to fchown and the link to the other,
 * as the kernel has them. */
static struct cr_verdict chown_fd(struct cr_run *run,
				  const struct seccomp_notif *n, const char *sys,
				  int fd, uid_t uid, gid_t gid, bool at_empty)
{
	int rc;

	if (fd < 0)
		return CR_V_ERR(-fd);
	if (!at_empty && (fcntl(fd, F_GETFL) & O_PATH)) {
		close(fd);
		return CR_V_ERR(EBADF);
	}
	if (uid == (uid_t)-1 && gid == (gid_t)-1 &&
	    !(cr_fs_fd_access(run, (pid_t)n->pid, fd) & CR_FS_W) &&
	    cr_fsrules_refusal(&run->fs->rules, CR_FS_STAT) == EACCES) {
		/* A no-op on a file the program holds (see chown_noop). */
		struct stat st;

		if (fstat(fd, &st) == 0 &&
		    attr_kerr((pid_t)n->pid, fd, &st, false) != EROFS &&
		    chown_noop(fd, &st, uid, gid)) {
			close(fd);
			return CR_V_VAL(0);
		}
	}
	rc = fd_writable_as(run, n, sys, fd, true);
	if (!rc) {
		struct stat st;

		rc = fstat(fd, &st) < 0 ? -errno :
		     cr_fs_top_chown(run, n, sys, NULL, fd, &st, uid, gid);
	}
	if (!rc) {
		cr_slow_begin();
		rc = fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0 ? -errno : 0;
		cr_slow_end();
	}
	close(fd);
	return rc ? CR_V_ERR(-rc) : CR_V_VAL(0);
}

struct cr_verdict cr_h_fchown(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	return chown_fd(run, n, e->name,
			cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]),
			(uid_t)n->data.args[1], (gid_t)n->data.args[2], false);
}

/*
 * ioctl(fd, FS_IOC_SETFLAGS or FS_IOC_FSSETXATTR, arg): the inode's flags
 * (chattr: append-only, no-dump, no-atime, sync...) and its extended
 * attributes' project and extent size. The kernel asks only that the
 * caller own the inode, not that the fd be open for writing, so a
 * read-only open of the user's own file in a read root would do. As for
 * fchmod: the change is made here, on corral's copy of the fd, and only
 * when the object lies in a writable root; the argument is read from the
 * task first (its size fixed by the command), so a racing thread can
 * change neither the fd nor the flags after the check.
 */
struct cr_verdict cr_h_ioctl_attr(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n)
{
	unsigned cmd = (unsigned)n->data.args[1];
	union {
		int flags;
		struct fsxattr fsx;
	} arg;
	size_t size;
	unsigned how;
	int fd, rc;

	switch (cmd) {
	case FS_IOC_SETFLAGS:
	case FS_IOC32_SETFLAGS:
		/* Both forms read an int (the kernel's ioctl_setflags). */
		size = sizeof(arg.flags);
		how = FS_IOC_SETFLAGS;
		break;
	case FS_IOC_FSSETXATTR:
		size = sizeof(arg.fsx);
		how = FS_IOC_FSSETXATTR;
		break;
	default:
		/* A table entry without a rule here: fail closed. */
		cr_deny(run, (pid_t)n->pid, e->name, NULL, "syscall",
			"internal: no rule for this ioctl");
		return CR_V_ERR(EPERM);
	}
	fd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]);
	if (fd < 0)
		return CR_V_ERR(-fd);
	/* The 32-bit number is the compat path's alone: to a 64-bit
	 * program no file answers it (it set the flags here; a
	 * differential probe). */
	if (cmd == FS_IOC32_SETFLAGS && n->data.arch == AUDIT_ARCH_X86_64) {
		close(fd);
		return CR_V_ERR(ENOTTY);
	}
	if (cr_mem_read((pid_t)n->pid, n->data.args[2], &arg, size)) {
		close(fd);
		return CR_V_ERR(EFAULT);
	}
	if (!cr_notif_valid(run, n->id)) {
		close(fd);
		return CR_V_ERR(ESRCH);
	}
	/* vfs_fileattr_set's order: an object without attributes (a pipe,
	 * a terminal, a /proc file) is ENOTTY, found by the matching get on
	 * our copy, before the owner's check (EPERM to another's file; an
	 * earlier build answered EACCES on /dev/ptmx, /proc/self/status and
	 * /usr alike; found by a differential probing session). The
	 * owner's own file outside the writable roots stays EACCES, the
	 * visible refusal chmod gives it too. */
	{
		union {
			int flags;
			struct fsxattr fsx;
		} cur;

		if (ioctl(fd, how == FS_IOC_SETFLAGS ? FS_IOC_GETFLAGS :
			  FS_IOC_FSGETXATTR, &cur) < 0 && errno == ENOTTY) {
			close(fd);
			return CR_V_ERR(ENOTTY);
		}
	}
	rc = fd_writable_as(run, n, e->name, fd, true);
	if (!rc)
		rc = ioctl(fd, how, &arg) < 0 ? -errno : 0;
	close(fd);
	return rc ? CR_V_ERR(-rc) : CR_V_VAL(0);
}
