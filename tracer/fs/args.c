/* tracer/fs/args.c: the shared decoding of path arguments: read the path
 * from the tracee, check the notification is live, resolve, check access. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "fsops.h"

static const char *need_word(unsigned need)
{
	if (need & CR_FS_W)
		return "write outside the writable roots";
	if (need & CR_FS_X)
		return "execute outside the exec roots";
	if (need & CR_FS_R)
		return "read outside the readable roots";
	return "outside every root";
}

int cr_fs_read_path(struct cr_run *run, const struct seccomp_notif *n,
		    int argi, char *buf, size_t len)
{
	int rc = cr_mem_read_str((pid_t)n->pid, n->data.args[argi], buf, len);

	if (rc == -ENAMETOOLONG || rc == -EFAULT)
		return rc;
	if (rc)
		return -ESRCH;
	/* What we read belonged to this task only if the notification is
	 * still live: the pid could have died and been reused meanwhile. */
	if (!cr_notif_valid(run, n->id))
		return -ESRCH;
	return 0;
}

/* "/tmp" itself, as glibc's tmpfile() names it (also "//tmp/"). */
static bool names_tmp(const char *p)
{
	if (*p != '/')
		return false;
	p += strspn(p, "/");
	if (strncmp(p, "tmp", 3))
		return false;
	p += 3;
	return p[strspn(p, "/")] == 0;
}

int cr_fs_arg(struct cr_run *run, const struct seccomp_notif *n,
	      const char *sys, int diri, int pathi, unsigned how,
	      unsigned need, struct cr_fsres *res)
{
	char path[PATH_MAX];
	int dirfd = diri < 0 ? AT_FDCWD : (int)n->data.args[diri];
	bool quiet_tmp = how & CR_RES_TMP_QUIET;
	int rc;

	cr_fsres_init(res);
	if ((how & CR_RES_NULL_EMPTY) && !n->data.args[pathi])
		path[0] = 0;
	else if ((rc = cr_fs_read_path(run, n, pathi, path, sizeof(path))))
		return rc;
	how &= ~(CR_RES_NULL_EMPTY | CR_RES_TMP_QUIET);
	rc = cr_fs_resolve(run, (pid_t)n->pid, dirfd, path, how, res);
	/* A path refused for an exec is an exec denial, wherever it led. */
	if (!strncmp(sys, "execve", 6))
		res->layer = "exec";
	if (rc) {
		res->tmp_refused = res->refused && quiet_tmp &&
				   names_tmp(path);
		if (res->refused && !res->tmp_refused)
			cr_fs_deny(run, n, sys, res, "outside every root");
		return rc;
	}
	if ((res->acc & need) != need) {
		if ((res->acc & CR_FS_NEW) && !res->exists) {
			/* A name that may still be created: it is simply not
			 * there (and an existing one of another process is
			 * not shown). */
			if (!(need & ~(CR_FS_STAT | CR_FS_NEW)) || (need & CR_FS_W))
				return 0;
		}
		res->refused = true;
		cr_fs_deny(run, n, sys, res, need_word(need & ~res->acc));
		cr_fsres_free(res);
		return -cr_fsrules_refusal(&run->fs->rules, res->acc);
	}
	return 0;
}

int cr_fs_opath(const struct cr_fsres *res, bool follow_link)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (follow_link ? 0 : O_NOFOLLOW),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
			   (follow_link ? 0 : RESOLVE_NO_SYMLINKS),
	};
	int fd;

	if (res->via_link)
		fd = openat(res->dirfd, res->name, O_PATH | O_CLOEXEC);
	else
		fd = (int)syscall(SYS_openat2, res->dirfd, res->name, &how,
				  sizeof(how));
	return fd < 0 ? -errno : fd;
}

void cr_fs_fdpath(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* The calling thread's fd, from the table it uses (tasks.c): a thread
 * made without CLONE_FILES holds other files at the same numbers as its
 * leader. A stand-in for the O_PATH fd of a link is the link (linkfd.c). */
int cr_fs_task_fd(struct cr_run *run, pid_t tid, int fd)
{
	return cr_fs_linkfd_swap(run->fs, cr_tasks_getfd(run, tid, fd));
}

int cr_fs_proc_refusal(const struct cr_run *run, const struct cr_fsres *res,
		       int err)
{
	struct stat pst;

	/* procfs makes no name and removes or re-modes none: its lookup
	 * of a missing name fails ENOENT before any creation is asked
	 * (no negative entries), and an existing entry has no unlink,
	 * rename or mode change (EPERM). A refusal there answers so, not
	 * EACCES (found by a differential probing session). Only for an
	 * object of procfs itself, or a name missing in a directory of it:
	 * a file reached through /proc/self/fd/N is the file's. */
	if (err != EACCES || res->plen < 7 ||
	    memcmp(res->path, "/proc/", 6) || res->path[6] < '0' ||
	    res->path[6] > '9')
		return err;	/* /proc's own top (root's, 0555): EACCES first */
	if (res->exists)
		return res->st.st_dev == run->fs->proc_dev ? EPERM : err;
	return res->dirfd >= 0 && fstat(res->dirfd, &pst) == 0 &&
	       pst.st_dev == run->fs->proc_dev ? ENOENT : err;
}

/* Is path an entry of a process's or a thread's own directory,
 * /proc/<pid>/<name> or /proc/<pid>/task/<tid>/<name>? */
static bool in_pid_dir(const char *path)
{
	int a, b, end = 0;

	if (sscanf(path, "/proc/%d/task/%d/%n", &a, &b, &end) == 2 && end &&
	    path[end] && !strchr(path + end, '/'))
		return true;
	end = 0;
	return sscanf(path, "/proc/%d/%n", &a, &end) == 1 && end &&
	       path[end] && !strchr(path + end, '/');
}

int cr_fs_proc_entry_refusal(const struct cr_run *run,
			     const struct cr_fsres *res, int err)
{
	/* An existing entry's removal asks the directory's permission
	 * first (may_delete): a process's own directory gives it and then
	 * has no unlink (EPERM); fdinfo/, ns/, attr/, net/ and the others
	 * give no write (EACCES), as corral's refusal says (found by a
	 * differential sweep of /proc/self). */
	if (res->exists && res->st.st_dev == run->fs->proc_dev &&
	    !in_pid_dir(res->path))
		return err;
	return cr_fs_proc_refusal(run, res, err);
}

int cr_fs_create_refusal(const struct cr_run *run, const struct cr_fsres *res,
			 int err, int slash_err)
{
	if (err != ENOENT || !res->refused || !res->refused_last ||
	    run->fs->rules.hide)
		return err;
	/* "x/" is a directory's name: a creation of anything else there
	 * fails before permission is asked (found by a differential
	 * probing session: EACCES where the kernel says EISDIR or
	 * ENOENT). */
	return slash_err && res->trailing_slash ? slash_err : EACCES;
}
