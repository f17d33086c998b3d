/* tracer/handlers/exec.c: execve, execveat (checked before, verified at
 * PTRACE_EVENT_EXEC on the image really loaded) and chdir. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "../budget/budget.h"
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
 * The interpreters the kernel opens for an image are not names the program
 * passes to a notified call: a script's #! line and an ELF's PT_INTERP,
 * looked up by the kernel itself (a relative one from the caller's cwd),
 * and for a script whose interpreter is a script, again, up to the
 * kernel's nesting. Left to the kernel, the execve's errno told an
 * existing path outside every root (EACCES) from a missing one (ENOENT),
 * and without Landlock a host script named as an interpreter ran under the
 * interpreter its own first line names, which the exec stop sees as
 * allowed. So each level is read here through corral's own fd of what it
 * resolved, its interpreter resolved as the caller would and judged: one
 * outside every root answers ENOENT (absent, as every such path does), one
 * visible but not executable EACCES, both recorded. A thread rewriting
 * the script between this read and the kernel's is the remaining window
 * (docs/threat-model.md, P1): with Landlock the kernel refuses such an
 * interpreter itself, without it the exec stop judges the image.
 */
/* The kernel's exec_binprm loads images at depths 0..5 and, at each, opens
 * what the image names (a script's interpreter, an ELF's loader) before it
 * fails ELOOP at depth 6: six paths it looks up past the image. */
#define CR_INTERP_OPENED 6

/* A 32-bit image's PT_INTERP: the kernel (with IA32 emulation) opens it
 * at the execve itself, before the filter's arch check can kill the new
 * image's first call. Read as the 64-bit table below. */
static int elf32_interp(int fd, const unsigned char *buf, size_t len,
			char *out, size_t outlen)
{
	Elf32_Ehdr eh;

	memcpy(&eh, buf, sizeof(eh));
	if (eh.e_phentsize != sizeof(Elf32_Phdr) || !eh.e_phnum ||
	    eh.e_phnum > 65536 / sizeof(Elf32_Phdr))
		return 0;
	for (unsigned k = 0; k < eh.e_phnum; k++) {
		Elf32_Phdr ph;
		uint64_t off = (uint64_t)eh.e_phoff + (uint64_t)k * sizeof(ph);

		if (off + sizeof(ph) <= len)
			memcpy(&ph, buf + off, sizeof(ph));
		else if (pread(fd, &ph, sizeof(ph), (off_t)off) != (ssize_t)sizeof(ph))
			return 0;
		if (ph.p_type != PT_INTERP)
			continue;
		if (ph.p_filesz >= 2 && ph.p_filesz <= outlen &&
		    pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) ==
		    (ssize_t)ph.p_filesz && !out[ph.p_filesz - 1])
			return 2;
		return 0;
	}
	return 0;
}

/* A 64-bit image's PT_INTERP (the table read from buf, or from fd past it). */
static int elf64_interp(int fd, const unsigned char *buf, size_t len,
			char *out, size_t outlen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr *ph, *heap = NULL;
	size_t tlen;
	int rc = 0;

	memcpy(&eh, buf, sizeof(eh));
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum ||
	    eh.e_phnum > 65536 / sizeof(Elf64_Phdr))
		return 0;
	tlen = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
	if (eh.e_phoff <= (uint64_t)len && tlen <= len - eh.e_phoff &&
	    eh.e_phoff % _Alignof(Elf64_Phdr) == 0) {
		ph = (Elf64_Phdr *)(void *)(buf + eh.e_phoff);
	} else {
		heap = malloc(tlen);
		if (!heap || pread(fd, heap, tlen, (off_t)eh.e_phoff) !=
			     (ssize_t)tlen) {
			free(heap);
			return 0;
		}
		ph = heap;
	}
	for (unsigned k = 0; k < eh.e_phnum; k++) {
		if (ph[k].p_type != PT_INTERP)
			continue;
		if (ph[k].p_filesz >= 2 && ph[k].p_filesz <= outlen &&
		    pread(fd, out, ph[k].p_filesz, (off_t)ph[k].p_offset) ==
		    (ssize_t)ph[k].p_filesz && !out[ph[k].p_filesz - 1])
			rc = 2;	/* else the kernel refuses it */
		break;
	}
	free(heap);
	return rc;
}

/* The interpreter fd's image asks for: a #! line's first word (1), or an
 * ELF's PT_INTERP (2), in out; 0 when none, -1 when unreadable. */
static int image_interp(int fd, char *out, size_t outlen)
{
	/* The first KiB holds a #! line (the kernel reads 256 bytes) and,
	 * for most ELF images, the whole program header table: one read. */
	_Alignas(Elf64_Phdr) unsigned char buf[1024];
	ssize_t len = pread(fd, buf, sizeof(buf), 0);

	if (len < 0)
		return -1;
	if (len >= 2 && buf[0] == '#' && buf[1] == '!') {
		size_t i = 2, j, lim = len < 256 ? (size_t)len : 256;

		while (i < lim && (buf[i] == ' ' || buf[i] == '\t'))
			i++;
		for (j = i; j < lim && buf[j] != ' ' && buf[j] != '\t' &&
			    buf[j] != '\n' && buf[j]; j++)
			;
		if (j == i || j - i >= outlen)
			return 0;	/* the kernel's ENOEXEC or ENAMETOOLONG */
		/* A full buffer with no newline must show a space, tab or NUL
		 * after the name within its 256 bytes (the kernel's
		 * next_terminator reads up to the last one, inclusive), or the
		 * kernel takes the name for cut (ENOEXEC: a shell then runs
		 * the file as a script); the cut name is not what it opens.
		 * A name ending at the last byte is opened, and judged. */
		if (len >= 256 && j >= 256 && !memchr(buf, '\n', 256))
			return 0;
		memcpy(out, buf + i, j - i);
		out[j - i] = 0;
		return 1;
	}
	if (len >= (ssize_t)sizeof(Elf32_Ehdr) && !memcmp(buf, ELFMAG, SELFMAG)) {
		/* The header's layout as the kernel chooses it: binfmt_elf
		 * takes any image whose e_machine is this machine's, and
		 * never looks at EI_CLASS; the compat loader takes the 32-bit
		 * ones. Chosen by EI_CLASS, an x86-64 image marked class 0, 1
		 * or 3 had its loader opened by the kernel unjudged: the
		 * execve's errno told an existing path outside every root
		 * from a missing one. Where neither layout fits, the kernel
		 * loads no ELF (ENOEXEC) and no interpreter is opened. */
		uint16_t mach;
		Elf64_Ehdr e64;

		memcpy(&mach, buf + offsetof(Elf32_Ehdr, e_machine), sizeof(mach));
		if (mach == EM_X86_64 && len >= (ssize_t)sizeof(Elf64_Ehdr)) {
			memcpy(&e64, buf, sizeof(e64));
			if (e64.e_phentsize == sizeof(Elf64_Phdr))
				return elf64_interp(fd, buf, (size_t)len, out, outlen);
		}
		if (mach == EM_X86_64 || mach == EM_386 || mach == 6 /* EM_486 */)
			return elf32_interp(fd, buf, (size_t)len, out, outlen);
		return 0;
	}
	return 0;	/* no interpreter (or another format: i386 and x32
			 * images are killed by the filter's arch check) */
}

/* An ELF interpreter named by a plain absolute path (the loader, on
 * every dynamic exec) none of whose prefixes the run may write: nothing
 * along it is the program's to change, so once the walk has judged it
 * runnable (its links followed and judged where they lead: an earlier
 * build trusted the text, and a system link inside an exec root such as
 * /usr/lib/ssl/private -> /etc/ssl/private let the kernel look outside
 * every root, its errno telling what exists there), the verdict is kept
 * for the run, sparing the walk through the loader's links (/lib64 ->
 * usr/lib64 -> ...) on every exec. A system link re-pointed meanwhile is
 * still judged at the exec stop, on the loader really mapped. */
static bool fixed_runnable(struct cr_run *run, const struct seccomp_notif *n,
			   const char *p)
{
	static char known[4][PATH_MAX];
	static size_t nknown;
	size_t len = strlen(p);
	struct cr_fsres res;
	bool ok;
	int rc;

	if (p[0] != '/' || strstr(p, "//") || strstr(p, "/./") ||
	    strstr(p, "/../") || p[len - 1] == '/' || p[len - 1] == '.' ||
	    len >= PATH_MAX ||
	    !(cr_fs_access(run, (pid_t)n->pid, p, len) & CR_FS_X))
		return false;
	for (size_t i = 1; i <= len; i++)
		if ((p[i] == '/' || !p[i]) &&
		    (cr_fs_access(run, (pid_t)n->pid, p, i) & CR_FS_W))
			return false;
	for (size_t i = 0; i < nknown; i++)
		if (!strcmp(known[i], p))
			return true;
	rc = cr_fs_resolve(run, (pid_t)n->pid, AT_FDCWD, p, CR_RES_FOLLOW,
			   &res);
	ok = !rc && res.exists && (res.acc & CR_FS_X) &&
	     S_ISREG(res.st.st_mode);
	if (!rc)
		cr_fsres_free(&res);
	if (ok && nknown < CR_ARRAY_SIZE(known))
		memcpy(known[nknown++], p, len + 1);
	return ok;
}

/* Lookup errors the kernel meets the same way on the same path. */
static bool kernel_says_as_much(int rc)
{
	return rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP ||
	       rc == -EACCES || rc == -ENAMETOOLONG;
}

/* The kernel refuses an image it may not execute (its mode, a noexec
 * mount) before it reads a line of it: EACCES there, first, unrecorded,
 * not what its interpreter's place would answer (a 0644 script naming an
 * interpreter outside every root answered ENOENT; found by a differential
 * probe). fd: the image (kept). */
static bool image_not_executable(int fd)
{
	return fd >= 0 &&
	       syscall(SYS_faccessat2, fd, "", X_OK,
		       AT_EACCESS | AT_EMPTY_PATH) < 0 && errno == EACCES;
}

/* 0 when every interpreter of the image may run, or the errno to answer
 * (recorded). fd: the image open for reading (taken over), or -1 when
 * corral could not open it. */
static int interp_refused(struct cr_run *run, const struct seccomp_notif *n,
			  const char *sys, int fd, const char *image_path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	char interp[PATH_MAX];
	int rc = 0;

	for (int depth = 1; depth <= CR_INTERP_OPENED; depth++) {
		struct cr_fsres res;
		int got;

		/* An image corral cannot read (mode --x: same uid, no
		 * capability) names interpreters corral cannot see: the
		 * kernel would open them unjudged. Refused; an ELF of that
		 * kind is refused at the exec stop anyway. */
		if (fd < 0 || (got = image_interp(fd, interp, sizeof(interp))) < 0) {
			if (fd >= 0)
				close(fd);
			cr_deny(run, (pid_t)n->pid, sys,
				depth == 1 ? image_path : interp, "exec",
				"an image corral cannot read (execute-only?)");
			return EACCES;
		}
		close(fd);
		fd = -1;
		if (!got || (got == 2 && fixed_runnable(run, n, interp)))
			break;
		rc = cr_fs_resolve(run, (pid_t)n->pid, AT_FDCWD, interp,
				   CR_RES_FOLLOW, &res);
		/* (An ELOOP of corral's bound on walks is not the kernel's:
		 * the kernel would open it, unjudged.) */
		if ((rc && !res.refused && !res.walk_capped &&
		     kernel_says_as_much(rc)) ||
		    (!rc && !res.exists)) {
			/* Missing, or a lookup error inside the roots: the
			 * kernel's own answer says no more than a stat. */
			cr_fsres_free(&res);
			return 0;
		}
		if (rc && !res.refused) {
			/* corral could not look (EMFILE, ENOMEM...): the
			 * kernel would open it unjudged. */
			cr_deny(run, (pid_t)n->pid, sys, interp, "exec",
				"the image's interpreter could not be judged");
			cr_fsres_free(&res);
			return EACCES;
		}
		if (rc || !(res.acc & CR_FS_X)) {
			cr_deny(run, (pid_t)n->pid, sys,
				res.plen ? res.path : interp, "exec",
				"the image's interpreter is outside the exec roots");
			cr_fsres_free(&res);
			/* Absent outside every root; visible, not runnable,
			 * EACCES as for the image itself. */
			return rc ? -rc : res.acc ? EACCES : ENOENT;
		}
		/* An ELF interpreter is loaded as ELF, never as a script or
		 * with one of its own: the chain ends there. */
		if (got != 1 || !S_ISREG(res.st.st_mode)) {
			cr_fsres_free(&res);
			break;
		}
		snprintf(interp, sizeof(interp), "%s", res.path);
		fd = (int)syscall(SYS_openat2, res.dirfd, res.name, &how,
				  sizeof(how));
		cr_fsres_free(&res);
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

#ifndef AT_EXECVE_CHECK
#define AT_EXECVE_CHECK 0x10000
#endif

/* AT_EXECVE_CHECK made by corral on the file it judged (fd: any open of
 * it, taken over). Continued, the kernel would look the path up again: a
 * thread swapping a workspace name for a link to a host file learned,
 * without Landlock, whether that file exists and may be run (0, EACCES,
 * ENOENT), with no exec stop to see it (found by a probing session). A
 * kernel without the flag refuses it (EINVAL) before it opens anything:
 * asked once with no file, so that corral never makes an exec that the
 * kernel would take for a real one. The program's own argument vectors
 * are not copied (an EFAULT or E2BIG of theirs is not answered). */
static struct cr_verdict check_self(int fd)
{
	static const char *const argv[] = { "", NULL };
	static int known = -1;	/* the kernel knows the flag: 1, 0; -1: not asked */
	int rc, e;

	if (known < 0)
		known = syscall(SYS_execveat, -1, "", argv, argv + 1,
				AT_EMPTY_PATH | AT_EXECVE_CHECK) < 0 &&
			errno == EBADF;
	if (!known) {
		close(fd);
		return CR_V_ERR(EINVAL);
	}
	rc = (int)syscall(SYS_execveat, fd, "", argv, argv + 1,
			  AT_EMPTY_PATH | AT_EXECVE_CHECK);
	e = errno;
	close(fd);
	return rc == 0 ? CR_V_VAL(0) : CR_V_ERR(e);
}

/* An exec's judgement. With AT_EXECVE_CHECK (Linux 6.14) the kernel only
 * asks whether the file may be run, as an interpreter asks of a script it
 * is about to read: no binary handler, no interpreter opened, nothing run
 * (no exec stop, no exec for the budgets): the image is judged, its
 * interpreters are not (a script naming one outside the roots answered
 * ENOENT where the kernel answers 0; found by a differential probe), and
 * corral makes the check itself (check_self). */
static struct cr_verdict do_exec(struct cr_run *run, const struct seccomp_notif *n,
				 const char *sys, int diri, int pathi, int flags)
{
	bool check = flags & AT_EXECVE_CHECK;
	struct cr_fsres res;
	char c = 0;
	int rc;

	if (!(flags & AT_EXECVE_CHECK))
		cr_budget_before_exec(run, (pid_t)n->pid);
	if ((flags & AT_EMPTY_PATH) &&
	    !cr_mem_read((pid_t)n->pid, n->data.args[pathi], &c, 1) && !c) {
		/* An fd of a file in an exec root may be run (fexecve); a
		 * memfd or a deleted file may not. The image is judged
		 * again at the exec stop whatever happens here. */
		char p[64], path[PATH_MAX];
		int fd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[diri]);
		ssize_t len = -1;
		struct stat st;

		/* No such fd: the kernel's EBADF, before anything is run
		 * (a refusal was recorded; found by a differential probe). */
		if (fd == -EBADF && (int)n->data.args[diri] != AT_FDCWD)
			return CR_V_ERR(EBADF);
		if (fd >= 0 && fstat(fd, &st) == 0 &&
		    (S_ISLNK(st.st_mode) || S_ISSOCK(st.st_mode))) {
			/* The stand-in of a link's or a socket's O_PATH fd
			 * (fs/linkfd.c): the kernel's open of a link to run
			 * it, or its refusal of what is not a file. */
			close(fd);
			return CR_V_ERR(S_ISLNK(st.st_mode) ? ELOOP : EACCES);
		}
		if (fd >= 0) {
			cr_fs_fdpath(fd, p, sizeof(p));
			len = readlink(p, path, sizeof(path) - 1);
		}
		if (len > 0) {
			path[len] = 0;
			if (path[0] == '/' &&
			    !(len > 10 && !strcmp(path + len - 10, " (deleted)")) &&
			    (cr_fs_access(run, (pid_t)n->pid, path, (size_t)len) & CR_FS_X)) {
				/* The interpreters the kernel will open from
				 * this image are judged as for a path: read
				 * through corral's copy of the same open
				 * file (no lookup; a non-regular file the
				 * kernel refuses itself). */
				int rfd = -1;

				if (check)
					return check_self(fd);
				if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
					close(fd);
					return CR_V_CONT;
				}
				rfd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
				close(fd);
				if (image_not_executable(rfd)) {
					close(rfd);
					return CR_V_ERR(EACCES);
				}
				rc = interp_refused(run, n, sys, rfd, path);
				return rc ? CR_V_ERR(rc) : CR_V_CONT;
			}
		}
		if (fd >= 0)
			close(fd);
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
	if (res.diverged) {
		/* Continued, the kernel would find another file than the
		 * one judged (/dev/shm is the run's own directory). */
		res.refused = true;
		res.layer = "exec";
		cr_fs_deny(run, n, sys, &res,
			   "the kernel would resolve this path elsewhere (the run's /dev/shm is its own)");
		cr_fsres_free(&res);
		return CR_V_ERR(EACCES);
	}
	if (!(res.acc & CR_FS_X) && S_ISREG(res.st.st_mode)) {
		res.layer = "exec";
		cr_fs_deny(run, n, sys, &res, res.via_link ?
			   "exec through an fd's link (an O_PATH stand-in or a removed file) is refused" :
			   "exec outside the exec roots");
		cr_fsres_free(&res);
		return CR_V_ERR(EACCES);
	}
	/* Not a file: the kernel's EACCES (do_open_execat). Continued, a
	 * socket met through its O_PATH stand-in's link would be the
	 * stand-in to the kernel, an empty file: ENOEXEC (found by a
	 * differential probe). */
	if (!S_ISREG(res.st.st_mode) && res.via_link) {
		cr_fsres_free(&res);
		return CR_V_ERR(EACCES);
	}
	if (check) {
		/* A link not followed: the kernel's ELOOP; what is not a
		 * file: its EACCES (do_open_execat), nothing opened. */
		struct open_how how = {
			.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
		};
		int fd = -1;

		rc = S_ISLNK(res.st.st_mode) ? ELOOP :
		     !S_ISREG(res.st.st_mode) ? EACCES : 0;
		if (!rc) {
			fd = res.via_link ?
			     openat(res.dirfd, res.name, O_PATH | O_CLOEXEC) :
			     (int)syscall(SYS_openat2, res.dirfd, res.name,
					  &how, sizeof(how));
			rc = fd < 0 ? errno : 0;
		}
		cr_fsres_free(&res);
		return rc ? CR_V_ERR(rc) : check_self(fd);
	}
	if (S_ISREG(res.st.st_mode)) {
		struct open_how how = {
			.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
		};
		int fd = (int)syscall(SYS_openat2, res.dirfd, res.name, &how,
				      sizeof(how));

		if (image_not_executable(fd)) {
			close(fd);
			cr_fsres_free(&res);
			return CR_V_ERR(EACCES);
		}
		if ((rc = interp_refused(run, n, sys, fd, res.path))) {
			cr_fsres_free(&res);
			return CR_V_ERR(rc);
		}
	}
	cr_fsres_free(&res);
	return CR_V_CONT;
}

/* do_exec with one allowance of path steps for the image's walk and its
 * interpreters' (fs/resolve.c). */
static struct cr_verdict exec_walked(struct cr_run *run,
				     const struct seccomp_notif *n,
				     const char *sys, int dirfd_arg,
				     int path_arg, int flags)
{
	struct cr_verdict v;

	cr_fs_walks_begin(run);
	v = do_exec(run, n, sys, dirfd_arg, path_arg, flags);
	cr_fs_walks_end(run);
	return v;
}

struct cr_verdict cr_h_execve(struct cr_run *run, const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	return exec_walked(run, n, e->name, -1, 0, 0);
}

struct cr_verdict cr_h_execveat(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	int flags = (int)n->data.args[4];

	/* The kernel copies the name (EFAULT, ENAMETOOLONG, ENOENT for ""
	 * without AT_EMPTY_PATH) and then, opening the file, refuses a flag
	 * it does not know: EINVAL before any lookup (corral looked the path
	 * up first; found by a differential probing session). */
	if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_EXECVE_CHECK)) {
		char path[PATH_MAX];
		int rc = cr_fs_read_path(run, n, 1, path, sizeof(path));

		if (rc)
			return CR_V_ERR(rc == -ESRCH ? EINVAL : -rc);
		return CR_V_ERR(!path[0] && !(flags & AT_EMPTY_PATH) ?
				ENOENT : EINVAL);
	}
	return exec_walked(run, n, e->name, 0, 1, flags);
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
	if (!rc && (res.diverged ||
		    cr_fs_shm_depth(run->fs, res.path, res.plen))) {
		/* /dev/shm/NAME is NAME in the run's private directory, a
		 * translation the kernel does not make: continued, the
		 * chdir would enter the host's /dev/shm/NAME. fchdir of a
		 * descriptor of it works (the descriptor is the private
		 * directory's). docs/limits.md. */
		res.refused = true;
		cr_fs_deny(run, n, e->name, &res, res.diverged ?
			   "the kernel would resolve this path elsewhere (the run's /dev/shm is its own)" :
			   "a working directory below /dev/shm is entered by fchdir only");
		rc = EACCES;
	}
	cr_fsres_free(&res);
	return rc ? CR_V_ERR(rc) : CR_V_CONT;
}

/* A mapping's name as /proc shows it ends in " (deleted)" when its file has
 * no name left: such an image cannot be judged by path. A file really so
 * named (the mapping's own device and inode at that path) is judged as any
 * other: an earlier build killed a workspace program named "x (deleted)". */
static bool gone(const char *file, size_t len, dev_t dev, ino_t ino)
{
	struct stat st;

	if (len <= 10 || strcmp(file + len - 10, " (deleted)"))
		return false;
	return !ino || stat(file, &st) < 0 || st.st_dev != dev ||
	       st.st_ino != ino;
}

/* The maps file's reads: each takes the process's memory-map lock, which
 * the program can hold, so each is marked (mem.c, budget/stall.c). */
static ssize_t maps_read(void *cookie, char *buf, size_t len)
{
	ssize_t n;

	cr_slow_begin();
	n = read(*(int *)cookie, buf, len);
	cr_slow_end();
	return n;
}

static int maps_close(void *cookie)
{
	return close(*(int *)cookie);
}

static FILE *maps_open(const char *path, int *fd)
{
	cookie_io_functions_t io = { .read = maps_read, .close = maps_close };
	FILE *f;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	f = fopencookie(fd, "r", io);
	if (!f) {
		int e = errno;

		close(*fd);
		errno = e;
	}
	return f;
}

/* At PTRACE_EVENT_EXEC: every file mapped executable (the program and its
 * ELF interpreter; for a script, its interpreter) must be allowed to run. */
int cr_fs_exec_verify(struct cr_run *run, pid_t pid, char *bad, size_t badlen)
{
	char path[64], line[PATH_MAX + 256];
	FILE *f;
	int rc = 0, fd;

	if (!run->fs)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = maps_open(path, &fd);
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

		unsigned maj = 0, mnr = 0;
		unsigned long long ino = 0;

		if (sscanf(line, "%*s %7s %*s %x:%x %llu", perms, &maj, &mnr,
			   &ino) != 4 || perms[2] != 'x')
			continue;
		file = strchr(line, '/');
		if (!file)
			continue;	/* [vdso], anonymous */
		len = strcspn(file, "\n");
		file[len] = 0;
		if (gone(file, len, makedev(maj, mnr), (ino_t)ino) ||
		    !(cr_fs_access(run, pid, file, len) & CR_FS_X)) {
			snprintf(bad, badlen, "%s", file);
			rc = -EACCES;
		}
	}
	fclose(f);
	if (!rc) {
		struct stat ex;
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		l = readlink(path, line, sizeof(line) - 1);
		if (l <= 0) {
			snprintf(bad, badlen, "%s", "an image corral cannot inspect");
			return -ESRCH;
		}
		line[l] = 0;
		if (stat(path, &ex) < 0)
			ex.st_ino = 0;	/* judged gone below if so named */
		if (line[0] != '/' || gone(line, (size_t)l, ex.st_dev, ex.st_ino) ||
		    !(cr_fs_access(run, pid, line, (size_t)l) & CR_FS_X)) {
			snprintf(bad, badlen, "%s", line);
			rc = -EACCES;
		}
	}
	return rc;
}
