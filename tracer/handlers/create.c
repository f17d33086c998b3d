/* tracer/handlers/create.c: mkdir, mkdirat, mknod, mknodat, symlink,
 * symlinkat, performed by the supervisor in a directory it resolved; umask,
 * watched so the umask creations are made under can be kept. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../fs/fsops.h"
#include "../budget/budget.h"

/* The new entry must be inside a writable root, and so must its directory:
 * a root itself is never created, removed or renamed by the program. */
int cr_fs_entry_writable(struct cr_run *run, pid_t tid, const struct cr_fsres *res)
{
	const char *slash = strrchr(res->path, '/');
	size_t plen = slash == res->path ? 1 : (size_t)(slash - res->path);

	if (!(res->acc & CR_FS_W) && !((res->acc & CR_FS_NEW) && !res->exists))
		return 0;
	/* A root the caller named in the host's /dev/shm: its directory's
	 * W is corral's own grant for the run's names there (moved into its
	 * private directory), never the roots': the root was renamed over
	 * another, removed and made afresh (found by a probing session). */
	if (res->plen > 9 && !memcmp(res->path, "/dev/shm/", 9))
		for (size_t i = 0; i < run->fs->rules.nroots; i++)
			if (run->fs->rules.roots[i].len == res->plen &&
			    !memcmp(run->fs->rules.roots[i].path, res->path,
				    res->plen))
				return 0;
	return (cr_fs_access(run, tid, res->path, plen) & CR_FS_W) != 0;
}

/* In /dev/shm (the run's private directory there, fs/shm.c) only files
 * and directories are made: all POSIX shared memory and semaphores make,
 * and nothing the removal of a dead run's directory has to judge. */
static bool shm_kind_refused(struct cr_run *run, const struct seccomp_notif *n,
			     const char *sys, struct cr_fsres *res,
			     mode_t type)
{
	if (!(res->plen > 9 && !memcmp(res->path, "/dev/shm/", 9)) ||
	    type == S_IFREG || type == S_IFDIR)
		return false;
	res->refused = true;
	cr_fs_deny(run, n, sys, res,
		   "only files and directories may be made in /dev/shm");
	cr_fsres_free(res);
	return true;
}

static struct cr_verdict refuse_write(struct cr_run *run,
				      const struct seccomp_notif *n,
				      const char *sys, struct cr_fsres *res)
{
	int err = cr_fs_proc_refusal(run, res,
				     cr_fsrules_refusal(&run->fs->rules, res->acc));

	res->refused = true;
	cr_fs_deny(run, n, sys, res, "write outside the writable roots");
	cr_fsres_free(res);
	return CR_V_ERR(err);
}

static struct cr_verdict do_mknod(struct cr_run *run,
				  const struct seccomp_notif *n, const char *sys,
				  int diri, int pathi, mode_t mode, bool dir)
{
	struct cr_fsres res;
	mode_t type = mode & S_IFMT, um;
	int rc;

	/* The kernel's may_mknod, before the path is looked at: no file
	 * type is EINVAL, a directory EPERM (mkdir makes those). */
	if (!dir && type != 0 && type != S_IFREG && type != S_IFIFO &&
	    type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK)
		return CR_V_ERR(type == S_IFDIR ? EPERM : EINVAL);
	rc = cr_fs_arg(run, n, sys, diri, pathi, CR_RES_ENTRY, 0, &res);
	if (rc)
		return CR_V_ERR(cr_fs_create_refusal(run, &res, -rc,
						     dir ? 0 : ENOENT));
	if (res.exists) {
		cr_fsres_free(&res);
		return CR_V_ERR(EEXIST);
	}
	/* Only a directory may be made under a name ending in '/'. */
	if (!dir && res.trailing_slash) {
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	if (!cr_fs_entry_writable(run, (pid_t)n->pid, &res))
		return refuse_write(run, n, sys, &res);
	/* A device node: the kernel's EPERM (no CAP_MKNOD) comes after the
	 * name and the permission to make it were judged (vfs_mknod). */
	if (!dir && (type == S_IFCHR || type == S_IFBLK)) {
		/* The directory's own permission first (may_create), as
		 * the kernel asks it: corral has the program's uid. */
		if (syscall(SYS_faccessat2, res.dirfd, "", W_OK | X_OK,
			    AT_EACCESS | AT_EMPTY_PATH) < 0 && errno == EACCES) {
			cr_fsres_free(&res);
			return CR_V_ERR(EACCES);
		}
		res.refused = true;
		cr_fs_deny(run, n, sys, &res, "device nodes are refused");
		cr_fsres_free(&res);
		return CR_V_ERR(EPERM);
	}
	if (shm_kind_refused(run, n, sys, &res,
			     dir ? S_IFDIR : type ? type : S_IFREG))
		return CR_V_ERR(EPERM);
	if ((rc = cr_budget_on_create(run, (pid_t)n->pid))) {
		cr_fsres_free(&res);
		return CR_V_ERR(-rc);
	}
	mode = (mode & S_IFMT) | cr_fs_safe_mode(run, n, sys, res.path,
						 mode & 07777, dir);
	um = cr_fs_umask_enter(run, (pid_t)n->pid);
	rc = dir ? mkdirat(res.dirfd, res.name, mode & 07777) :
		   mknodat(res.dirfd, res.name, mode, 0);
	rc = rc < 0 ? errno : 0;
	cr_fs_umask_leave(um);
	if (!rc)
		cr_budget_on_placed(run, &res);
	cr_fsres_free(&res);
	return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
}

struct cr_verdict cr_h_mkdir(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	return do_mknod(run, n, e->name, -1, 0, (mode_t)n->data.args[1], true);
}

struct cr_verdict cr_h_mkdirat(struct cr_run *run, const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n)
{
	return do_mknod(run, n, e->name, 0, 1, (mode_t)n->data.args[2], true);
}

struct cr_verdict cr_h_mknod(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	return do_mknod(run, n, e->name, -1, 0, (mode_t)n->data.args[1], false);
}

struct cr_verdict cr_h_mknodat(struct cr_run *run, const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n)
{
	return do_mknod(run, n, e->name, 0, 1, (mode_t)n->data.args[2], false);
}

/* The link's text is data, not a path we follow: it is checked whenever
 * something later resolves through the link. */
static struct cr_verdict do_symlink(struct cr_run *run,
				    const struct seccomp_notif *n,
				    const char *sys, int diri, int pathi)
{
	char target[PATH_MAX];
	struct cr_fsres res;
	int rc;

	rc = cr_fs_read_path(run, n, 0, target, sizeof(target));
	if (rc)
		return CR_V_ERR(-rc);
	if (!target[0])
		return CR_V_ERR(ENOENT);
	rc = cr_fs_arg(run, n, sys, diri, pathi, CR_RES_ENTRY, 0, &res);
	if (rc)
		return CR_V_ERR(cr_fs_create_refusal(run, &res, -rc, ENOENT));
	if (res.exists) {
		cr_fsres_free(&res);
		return CR_V_ERR(EEXIST);
	}
	if (res.trailing_slash) {	/* a link is not a directory */
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	if (!cr_fs_entry_writable(run, (pid_t)n->pid, &res))
		return refuse_write(run, n, sys, &res);
	if (shm_kind_refused(run, n, sys, &res, S_IFLNK))
		return CR_V_ERR(EPERM);
	rc = -cr_budget_on_create(run, (pid_t)n->pid);
	if (!rc)
		rc = symlinkat(target, res.dirfd, res.name) < 0 ? errno : 0;
	if (!rc)
		cr_budget_on_placed(run, &res);
	cr_fsres_free(&res);
	return rc ? CR_V_ERR(rc) : CR_V_VAL(0);
}

struct cr_verdict cr_h_symlink(struct cr_run *run, const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n)
{
	return do_symlink(run, n, e->name, -1, 1);
}

struct cr_verdict cr_h_symlinkat(struct cr_run *run,
				 const struct cr_syscall_entry *e,
				 const struct seccomp_notif *n)
{
	return do_symlink(run, n, e->name, 1, 2);
}

/* umask(mask): only the register, and the call itself is the program's
 * (CONTINUE): corral creates files under the task's umask (fs.c), kept
 * between creations; a call forgets every kept value (threads and CLONE_FS
 * children share it) until the caller is seen making its next call. */
struct cr_verdict cr_h_umask(struct cr_run *run,
			     const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	(void)e;
	cr_tasks_umask_call(&run->tasks, (pid_t)n->pid);
	return CR_V_CONT;
}
