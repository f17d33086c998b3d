/* tracer/handlers/exec.c: execve, execveat (checked before, verified at
 * PTRACE_EVENT_EXEC on the image really loaded) and chdir. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "../fs/fsops.h"

/*
 * Why CONTINUE is safe here, and only here: the supervisor cannot perform an
 * exec for the task. The check at the notification gives a clean EACCES for
 * the common case (a PATH search, a script in a read-only root); the
 * decision that holds is taken again at PTRACE_EVENT_EXEC, when the new image
 * is mapped but has not run an instruction, on kernel state the program can
 * no longer change (/proc/<pid>/exe and the executable mappings). A thread
 * that swaps the path after this check gains nothing: the image it swapped
 * in is judged at the exec stop and the tree is killed if it is not allowed.
 */
/*
 * Under Landlock the kernel itself refuses a #! interpreter outside the
 * exec roots (EACCES from the execve), before the exec stop where the
 * supervisor would have judged and recorded it. So that the denial stays
 * recorded, the script's first line is read here and an interpreter
 * outside is refused with the same EACCES. Only a record: the kernel's
 * refusal holds whatever a racing thread does to the script meanwhile,
 * and without Landlock the exec stop judges as before.
 */
static bool interp_outside(struct cr_run *run, const struct seccomp_notif *n,
			   const char *sys, const struct cr_fsres *res)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	char line[PATH_MAX + 3], *p, *end;
	ssize_t len;
	int fd;

	fd = (int)syscall(SYS_openat2, res->dirfd, res->name, &how, sizeof(how));
	if (fd < 0)
		return false;
	len = pread(fd, line, sizeof(line) - 1, 0);
	close(fd);
	if (len < 3 || line[0] != '#' || line[1] != '!')
		return false;
	line[len] = 0;
	for (p = line + 2; *p == ' ' || *p == '\t'; p++)
		;
	end = p + strcspn(p, " \t\n");
	*end = 0;
	if (p[0] != '/' || (cr_fs_access(run, (pid_t)n->pid, p, (size_t)(end - p)) &
			    CR_FS_X))
		return false;
	cr_deny(run, (pid_t)n->pid, sys, p, "exec",
		"the #! interpreter is outside the exec roots");
	return true;
}

static struct cr_verdict do_exec(struct cr_run *run, const struct seccomp_notif *n,
				 const char *sys, int diri, int pathi, int flags)
{
	struct cr_fsres res;
	char c = 0;
	int rc;

	if ((flags & AT_EMPTY_PATH) &&
	    !cr_mem_read((pid_t)n->pid, n->data.args[pathi], &c, 1) && !c) {
		/* An fd of a file in an exec root may be run (fexecve); a
		 * memfd or a deleted file may not. The image is judged
		 * again at the exec stop whatever happens here. */
		char p[64], path[PATH_MAX];
		int fd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[diri]);
		ssize_t len = -1;

		if (fd >= 0) {
			cr_fs_fdpath(fd, p, sizeof(p));
			len = readlink(p, path, sizeof(path) - 1);
			close(fd);
		}
		if (len > 0) {
			path[len] = 0;
			if (path[0] == '/' &&
			    !(len > 10 && !strcmp(path + len - 10, " (deleted)")) &&
			    (cr_fs_access(run, (pid_t)n->pid, path, (size_t)len) & CR_FS_X))
				return CR_V_CONT;
		}
		cr_deny(run, (pid_t)n->pid, sys, len > 0 ? path : NULL, "exec",
			"fileless exec (a memfd, a deleted file or an fd outside the exec roots) is refused");
		return CR_V_ERR(EACCES);
	}
	rc = cr_fs_arg(run, n, sys, diri, pathi,
		       flags & AT_SYMLINK_NOFOLLOW ? 0 : CR_RES_FOLLOW, 0, &res);
	if (rc)
		return CR_V_ERR(-rc);
	if (!res.exists) {
		cr_fsres_free(&res);
		return CR_V_ERR(ENOENT);
	}
	if (!(res.acc & CR_FS_X) && S_ISREG(res.st.st_mode)) {
		res.layer = "exec";
		cr_fs_deny(run, n, sys, &res, "exec outside the exec roots");
		cr_fsres_free(&res);
		return CR_V_ERR(EACCES);
	}
	if (run->landlock_abi > 0 && S_ISREG(res.st.st_mode) &&
	    interp_outside(run, n, sys, &res)) {
		cr_fsres_free(&res);
		return CR_V_ERR(EACCES);
	}
	cr_fsres_free(&res);
	return CR_V_CONT;
}

struct cr_verdict cr_h_execve(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	return do_exec(run, n, e->name, -1, 0, 0);
}

struct cr_verdict cr_h_execveat(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	return do_exec(run, n, e->name, 0, 1, (int)n->data.args[4]);
}

/* The cwd is state every later decision re-checks: the resolver starts from
 * the task's real cwd and refuses a start outside the roots. So chdir may
 * continue once the target is a directory the rules let the task see. */
struct cr_verdict cr_h_chdir(struct cr_run *run, const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n)
{
	struct cr_fsres res;
	int rc = cr_fs_arg(run, n, e->name, -1, 0, CR_RES_FOLLOW, CR_FS_STAT, &res);

	if (rc)
		return CR_V_ERR(-rc);
	rc = !res.exists ? ENOENT : !S_ISDIR(res.st.st_mode) ? ENOTDIR : 0;
	cr_fsres_free(&res);
	return rc ? CR_V_ERR(rc) : CR_V_CONT;
}

/* At PTRACE_EVENT_EXEC: every file mapped executable (the program and its
 * ELF interpreter; for a script, its interpreter) must be allowed to run. */
int cr_fs_exec_verify(struct cr_run *run, pid_t pid, char *bad, size_t badlen)
{
	char path[64], line[PATH_MAX + 256];
	FILE *f;
	int rc = 0;

	if (!run->fs)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f) {
		/* An image the uid may run but not read (mode --x) makes the
		 * process undumpable: its maps, memory and fds are closed to
		 * corral, so nothing it does could be judged. */
		int e = errno;

		snprintf(bad, badlen, "%s",
			 e == EACCES || e == EPERM ?
			 "an image corral cannot read (execute-only?)" :
			 "an image corral cannot inspect");
		return -e;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char perms[8] = "", *file;
		size_t len;

		if (sscanf(line, "%*s %7s", perms) != 1 || perms[2] != 'x')
			continue;
		file = strchr(line, '/');
		if (!file)
			continue;	/* [vdso], anonymous */
		len = strcspn(file, "\n");
		file[len] = 0;
		if ((len > 10 && !strcmp(file + len - 10, " (deleted)")) ||
		    !(cr_fs_access(run, pid, file, len) & CR_FS_X)) {
			snprintf(bad, badlen, "%s", file);
			rc = -EACCES;
		}
	}
	fclose(f);
	if (!rc) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		l = readlink(path, line, sizeof(line) - 1);
		if (l <= 0) {
			snprintf(bad, badlen, "%s", "an image corral cannot inspect");
			return -ESRCH;
		}
		line[l] = 0;
		if (line[0] != '/' || (l > 10 && !strcmp(line + l - 10, " (deleted)")) ||
		    !(cr_fs_access(run, pid, line, (size_t)l) & CR_FS_X)) {
			snprintf(bad, badlen, "%s", line);
			rc = -EACCES;
		}
	}
	return rc;
}
