/* tracer/handlers/inotify.c: inotify_init, inotify_init1: made by the
 * supervisor, so that each instance of the run is followed to its end. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>

#include "handlers.h"
#include "../budget/budget.h"

/*
 * An instance's queue is kernel memory in no process's RSS, up to
 * fs.inotify.max_queued_events events; the fd scan reads it through the
 * tables (budget/fdscan.c, fdscan_inotify). An instance whose descriptors are all
 * closed may live on where no table shows it (held by a blocked poll, in
 * flight in a message): the supervisor makes every instance, follows it
 * without a reference (cr_budget_on_inotify, which also keeps the run to
 * CR_BUDGET_INOTIFY_MAX alive: the user's allowance is shared with the
 * host) and installs it. Nothing here reads memory or decides an access:
 * the instance is the program's, as the kernel would make it.
 */
CR_HANDLER(cr_h_inotify_init)
{
	int flags = !strcmp(e->name, "inotify_init1") ? (int)n->data.args[0] : 0;
	int fd, got, rc;

	/* The kernel's own check first: EINVAL for unknown bits. */
	fd = inotify_init1(flags | IN_CLOEXEC);
	if (fd < 0)
		return CR_V_ERR(errno);
	rc = cr_budget_on_inotify(run, fd);
	if (rc) {
		close(fd);
		if (rc == -EMFILE)
			cr_deny(run, (pid_t)n->pid, e->name, NULL, "fs",
				"more inotify instances alive than a run may hold (the user's allowance is the host's)");
		return CR_V_ERR(-rc);
	}
	got = cr_notif_add_fd(run, n->id, fd, (flags & IN_CLOEXEC) != 0);
	close(fd);
	if (got < 0)
		return CR_V_ERR(-got == EMFILE ? EMFILE : EIO);
	return CR_V_VAL(got);
}
