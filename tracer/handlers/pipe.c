/* tracer/handlers/pipe.c: pipe, pipe2 and F_SETPIPE_SZ: performed by the
 * supervisor, so each pipe is followed for the memory budget and the share. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "handlers.h"
#include "../budget/budget.h"

/*
 * A pipe's buffers are kernel memory in no process's RSS; the fd scan
 * reads them through the tables (budget/fdscan.c, fdscan_pipe). A pipe whose
 * descriptors are all closed may live on where no table shows it: in
 * flight in a unix socket's queue, or held by a thread blocked in poll()
 * or select(). So the supervisor makes every pipe, with the program's
 * flags (the kernel's EINVAL for bad ones), follows both ends without a
 * reference (cr_budget_on_pipe) and installs them. The array is tried for
 * writing first: EFAULT, nothing made, as natively. Nothing here reads a
 * path or decides an access: the pipe is the program's, as the kernel
 * would make it.
 */
CR_HANDLER(cr_h_pipe)
{
	pid_t pid = (pid_t)n->pid;
	int flags = !strcmp(e->name, "pipe2") ? (int)n->data.args[1] : 0;
	bool cloexec = (flags & O_CLOEXEC) != 0;
	int p[2], got[2] = { -1, -1 }, cur[2], err = 0;

	if (cr_mem_read(pid, n->data.args[0], cur, sizeof(cur)) ||
	    cr_mem_write(pid, n->data.args[0], cur, sizeof(cur)))
		return CR_V_ERR(EFAULT);
	if (pipe2(p, flags | O_CLOEXEC) < 0)
		return CR_V_ERR(errno);
	err = -cr_budget_on_pipe(run, p);
	for (int i = 0; i < 2 && !err; i++)
		if ((got[i] = cr_notif_add_fd(run, n->id, p[i], cloexec)) < 0)
			err = -got[i] == EMFILE ? EMFILE : EIO;
	close(p[0]);
	close(p[1]);
	if (err)
		return CR_V_ERR(err);
	if (cr_mem_write(pid, n->data.args[0], got, sizeof(got)))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL(0);
}

/*
 * fcntl(F_SETPIPE_SZ): a pipe's slots count against its user's allowance
 * (fs.pipe-user-pages-soft), which the run shares with the user's other
 * programs. Performed on corral's copy of the descriptor (the same open
 * file: the kernel's answers for anything but a pipe), so the run's pipes
 * keep to half the allowance (cr_budget_pipe_resize): past it, EPERM,
 * what the kernel answers a user past the soft limit.
 */
CR_HANDLER(cr_h_fcntl_pipe_size)
{
	int fd = cr_tasks_getfd(run, (pid_t)n->pid, (int)n->data.args[0]);
	int rc;

	(void)e;
	if (fd < 0)
		return CR_V_ERR(-fd);
	rc = cr_budget_pipe_resize(run, fd, (unsigned long)n->data.args[2]);
	close(fd);
	return rc < 0 ? CR_V_ERR(-rc) : CR_V_VAL(rc);
}
