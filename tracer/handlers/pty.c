/* tracer/handlers/pty.c: ioctl TIOCGPTPEER, the slave of a master, performed
 * by the supervisor and only on a master the run allocated. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "../fs/fsops.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/*
 * The fd number names a file only at the instant the kernel looks: the
 * check and the call are both made on our copy of that file (pidfd_getfd),
 * never by letting the program's call through. A master the caller passed
 * in (fds 0-2) is not the run's: its slave would be one of the user's
 * terminals.
 */
struct cr_verdict cr_h_tiocgptpeer(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n)
{
	int flags = (int)n->data.args[2];
	int m = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]);
	unsigned idx;
	int s;

	if (m < 0)
		return CR_V_ERR(-m);
	if (ioctl(m, TIOCGPTN, &idx) < 0) {
		/* Not a pty: the kernel's own answer (ENOTTY) from our copy. */
		s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (s >= 0) {	/* cannot happen for a non-pty; fail closed */
			close(s);
			errno = EIO;
		}
		s = errno;
		close(m);
		return CR_V_ERR(s);
	}
	if (!cr_fs_pty_allocated(run, idx)) {
		char what[32];

		close(m);
		snprintf(what, sizeof(what), "/dev/pts/%u", idx);
		cr_deny(run, (pid_t)n->pid, e->name, what, "fs",
			"a terminal the run did not allocate");
		return CR_V_ERR(EPERM);
	}
	/* The kernel takes any flags here (dentry_open keeps what an open
	 * would: O_APPEND, O_SYNC...); an earlier build answered EINVAL past
	 * the four usual ones (found by a differential probing session).
	 * O_NOCTTY always: never the supervisor's controlling terminal.
	 * O_CLOEXEC as the program asked: the ioctl keeps it in the file's
	 * status flags (F_GETFL shows it natively too), so our copy is
	 * marked apart when it was not asked. */
	/* Not O_PATH: ADDFD carries no O_PATH file (a read-only open, as
	 * an O_PATH open of the slave by its path gets; docs/policy.md). */
	s = ioctl(m, TIOCGPTPEER, (flags & ~O_PATH) | O_NOCTTY);
	if (s >= 0 && !(flags & O_CLOEXEC) && fcntl(s, F_SETFD, FD_CLOEXEC) < 0) {
		close(s);
		s = -1;
	}
	if (s < 0) {
		s = errno;
		close(m);
		return CR_V_ERR(s);
	}
	close(m);
	m = cr_fs_pty_note(run, s, (int)idx);	/* a slave alone keeps it */
	if (m < 0) {
		close(s);
		return CR_V_ERR(-m);
	}
	{
		struct cr_verdict v = cr_notif_send_fd(run, n, s, flags & O_CLOEXEC);
		return v;
	}
}
