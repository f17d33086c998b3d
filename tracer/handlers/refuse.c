/* tracer/handlers/refuse.c: ptrace, bpf, keyrings, modules, mounts,
 * namespaces, clocks, io_uring... every call the profile refuses outright. */
#include <errno.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <termios.h>
#include <unistd.h>

#include "handlers.h"

#define CR_NSFS_MAGIC 0x6e736673

/* Safe against a racing thread by construction: the verdict depends on the
 * syscall number (and, for ARG entries, a register the filter already
 * matched), never on tracee memory, and the answer is always an error. */
struct cr_verdict cr_h_refuse(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	const char *why = e->reason;

	/* Entries of one call share the first entry's handler: for argument
	 * entries, give the reason of the entry whose condition matched
	 * (ioctl TIOCSTI and ioctl FIOSETOWN are refused for different
	 * reasons). */
	if (e->arg >= 0)
		for (size_t i = (size_t)(e - cr_syscalls); i < cr_nsyscalls; i++) {
			const struct cr_syscall_entry *o = &cr_syscalls[i];

			if (o->nr == e->nr && o->arg >= 0 && o->arg < 6 &&
			    (n->data.args[o->arg] & o->mask) == o->value) {
				why = o->reason;
				break;
			}
		}
	cr_deny(run, (pid_t)n->pid, e->name, NULL, "syscall",
		why ? why : "refused");
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
}

/* Is the program's fd of the kind an ioctl acts on: a terminal (0), a
 * namespace file (1), a socket (2)? Asked of corral's copy of it; 1 yes,
 * 0 no, -EBADF for no such fd, and yes when it cannot be told (the
 * refusal then stands). */
int cr_ioctl_fd_kind(struct cr_run *run, const struct seccomp_notif *n,
		     int kind)
{
	int c = cr_tasks_getfd(run, (pid_t)n->pid, (int)n->data.args[0]);
	struct termios tio;
	struct statfs sf;
	struct stat st;
	int r = 1;

	if (c == -EBADF)
		return -EBADF;
	if (c < 0)
		return 1;
	if (kind == 0)
		r = ioctl(c, TCGETS, &tio) == 0 || errno != ENOTTY;
	else if (kind == 1)
		r = fstatfs(c, &sf) < 0 || sf.f_type == CR_NSFS_MAGIC;
	else
		r = fstat(c, &st) < 0 || S_ISSOCK(st.st_mode);
	close(c);
	return r;
}

/* The refused ioctls that act on one kind of file (TIOCSTI, TIOCLINUX and
 * TIOCSETD on a terminal, the namespace queries on an nsfs file,
 * FIOSETOWN and SIOCSPGRP on a socket): on any other fd the kernel answers
 * ENOTTY before anything, and so does corral, with no denial (a program
 * asking "is this a terminal?" attacks nothing). Racing threads can only
 * change which error is answered. */
struct cr_verdict cr_h_refuse_kind(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n)
{
	unsigned cmd = (unsigned)n->data.args[1];
	int kind = (cmd & 0xff00) == 0xb700 ? 1 :
		   (cmd == 0x8901 || cmd == 0x8902) ? 2 : 0;
	int r = cr_ioctl_fd_kind(run, n, kind);

	if (r <= 0)
		return (struct cr_verdict){ .kind = CR_V_ERRNO,
					    .error = r ? EBADF : ENOTTY };
	return cr_h_refuse(run, e, n);
}

/* The refused ioctls of a file system (an inode's generation, block
 * mapping, verity, encryption): on what is not a file or directory (a
 * pipe, a socket, a device, an anonymous inode) no file system answers
 * them, and the kernel says ENOTTY, with nothing to record; an earlier
 * build answered EPERM and a denial on every fd (found by a differential
 * probing session). On a file or directory the refusal stands. */
CR_HANDLER(cr_h_refuse_file)
{
	int c = cr_tasks_getfd(run, (pid_t)n->pid, (int)n->data.args[0]);
	struct stat st;
	bool file;

	if (c == -EBADF)
		return CR_V_ERR(EBADF);
	file = c < 0 || fstat(c, &st) < 0 || S_ISREG(st.st_mode) ||
	       S_ISDIR(st.st_mode);
	if (c >= 0)
		close(c);
	return file ? cr_h_refuse(run, e, n) : CR_V_ERR(ENOTTY);
}

/* FIDEDUPERANGE: the kernel reads the request's count first (EFAULT),
 * then judges the source: a directory EISDIR, anything but a file
 * EINVAL; on a file it is refused (it needs no fd open for writing). */
CR_HANDLER(cr_h_dedupe)
{
	int c = cr_tasks_getfd(run, (pid_t)n->pid, (int)n->data.args[0]);
	uint16_t count;
	struct stat st;
	int err = 0;

	if (c == -EBADF)
		return CR_V_ERR(EBADF);
	if (cr_mem_read((pid_t)n->pid, n->data.args[2] + 16, &count,
			sizeof(count)))
		err = EFAULT;
	else if (c >= 0 && fstat(c, &st) == 0 && S_ISDIR(st.st_mode))
		err = EISDIR;
	else if (c >= 0 && fstat(c, &st) == 0 && !S_ISREG(st.st_mode))
		err = EINVAL;
	if (c >= 0)
		close(c);
	return err ? CR_V_ERR(err) : cr_h_refuse(run, e, n);
}

/* ptrace: the whole tree is corral's tracee, so the kernel itself would
 * refuse the program every tracing request: PTRACE_TRACEME (already
 * traced) and an attach to a task of the run (EPERM; a seize's own
 * argument errors first), and ESRCH for any other request (nobody is the
 * program's tracee). A process outside the run looks absent (ESRCH), as
 * to kill(); an attach to one is recorded all the same, as the reach it
 * is. Registers and the task table only. */
CR_HANDLER(cr_h_ptrace)
{
	long req = (long)n->data.args[0];
	pid_t pid = (pid_t)n->data.args[1];
	char target[32];

	if (req != PTRACE_TRACEME && req != PTRACE_ATTACH &&
	    req != PTRACE_SEIZE)
		return CR_V_ERR(ESRCH);
	if (req == PTRACE_TRACEME || (pid > 0 && cr_tasks_ours(&run->tasks, pid))) {
		/* ptrace_attach: a seize's address, then its options (an
		 * unknown one is EIO there, unlike PTRACE_SETOPTIONS). */
		if (req == PTRACE_SEIZE &&
		    (n->data.args[2] || (n->data.args[3] & ~(uint64_t)0x003000ff)))
			return CR_V_ERR(EIO);
		return cr_h_refuse(run, e, n);
	}
	if (pid > 0 && !cr_tasks_was_ours(&run->tasks, pid)) {
		snprintf(target, sizeof(target), "pid %d", (int)pid);
		cr_deny(run, (pid_t)n->pid, e->name, target, "syscall",
			"tracing is refused");
	}
	return CR_V_ERR(ESRCH);
}
