/* tracer/cleanup.c: the one cleanup path every ending takes: stop answering,
 * kill the tree, stop capture, collect, remove the workspace, measure. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include "tracer.h"
#include "broker/broker.h"
#include "fs/fs.h"
#include "budget/budget.h"
#include "surface.h"
#include "net/net.h"
#include "io/io.h"
#include "ipc/sysv.h"

#define CR_KILL_DEADLINE_MS 10000

/* Kill every task and reap until none is left. Tasks created while the kill
 * runs are killed as their first stop or fork event arrives (run->killing),
 * and a fork cannot complete in a task with SIGKILL pending, so the tree
 * cannot grow its way out. */
static void kill_tree(struct cr_run *run)
{
	uint64_t deadline = cr_now_ns() + CR_KILL_DEADLINE_MS * 1000000ull;
	struct pollfd p = { .fd = run->sigfd, .events = POLLIN };

	cr_tasks_kill_all(run);
	for (;;) {
		while (cr_tasks_reap(run) && cr_now_ns() < deadline)
			;
		if (waitid(P_ALL, 0, NULL, WEXITED | WSTOPPED | WNOHANG | __WALL |
			   WNOWAIT) < 0 && errno == ECHILD)
			break;
		if (cr_now_ns() > deadline)
			break;
		/* Re-send to whatever is still known: a task that was
		 * mid-creation when the first signal went out. */
		cr_tasks_kill_all(run);
		if (poll(&p, 1, 50) > 0) {
			struct signalfd_siginfo si;

			while (read(run->sigfd, &si, sizeof(si)) > 0)
				;
		}
	}
}

/* Count processes still traced by us, from /proc: the measurement behind
 * cleanup.leftover_processes, independent of our own table. */
static uint64_t count_traced(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	uint64_t n = 0;
	pid_t self = getpid();

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[300], buf[4096];
		char *tp;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0)
			continue;
		tp = strstr(buf, "\nTracerPid:");
		if (tp && atoi(tp + 11) == self)
			n++;
	}
	closedir(d);
	return n;
}

/* The kernel's answer first: waitid(__WALL) fails with ECHILD only when this
 * process has neither a child nor a tracee left (the kernel searches both its
 * children and its ptraced lists), and then no process can show our pid as
 * its TracerPid. Only otherwise is /proc scanned: the scan reads the status
 * file of every process on the host, which cost a few ms of every run here
 * and grows with the host, not with the run. */
static bool tracees_possible(void)
{
	siginfo_t si;

	return !(waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WNOHANG | __WALL |
			WNOWAIT) < 0 && errno == ECHILD);
}

static void drain(struct cr_run *run, struct cr_stream *s)
{
	while (s->fd >= 0) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };

		/* All writers are dead, so what is left is in the pipe now;
		 * no wait is needed (or allowed: an fd smuggled elsewhere
		 * must not hold corral). */
		if (poll(&p, 1, 0) <= 0) {
			cr_stream_close(s);
			break;
		}
		if (!cr_stream_pump(run, s))
			break;
	}
}

void cr_cleanup(struct cr_run *run)
{
	/* 0. The watchdog no longer stands in for the loop (budget/stall.c): what
	 *    its step reads is about to go. */
	cr_stall_detach();
	/* 1. Stop answering new requests: the loop has stopped reading the
	 *    listener; tasks blocked in a notification die with the tree. */
	run->ending = true;
	/* 2. Kill the tree. */
	if (run->tasks.count)
		kill_tree(run);
	run->leftover = run->tasks.count;
	cr_loop_exec_settle(run);
	{
		uint64_t traced = tracees_possible() ? count_traced() : 0;

		if (traced > run->leftover)
			run->leftover = traced;
	}
	if (run->listener >= 0) {
		close(run->listener);
		run->listener = -1;
	}
	/* Area finishers (one line each): revoke what the run was given,
	 * close its routes, settle its usage. */
	/* The budgets' last word first: it still sees the run's /dev/shm
	 * objects and the files it held without a name. */
	cr_budget_finish(run);		/* tracer/budget/budget.c */
	cr_fs_finish(run);
	cr_sysv_finish(run);		/* tracer/ipc/ */
	cr_surface_finish(run);
	cr_broker_finish(run);		/* tracer/broker/ */
	cr_net_finish(run);

	/* 3. Stop capture (the echo of it ends in cr_result_emit). */
	drain(run, &run->out);
	drain(run, &run->err);
	if (run->stdin_fd >= 0) {
		close(run->stdin_fd);
		run->stdin_fd = -1;
	}
	/* 4. Collect the allow-listed artifacts (tracer/io/artifacts.c);
	 *    nothing else leaves the workspace. */
	cr_io_finish(run);
	/* 5. Remove the private workspace. */
	if (run->cfg->ws_private) {
		int rc = cr_workspace_remove(run->cfg->workspace);

		run->workspace_removed = rc == 0;
		cr_workspace_unlock(run->cfg, rc == 0);
		if (rc)
			fprintf(stderr, "corral: could not remove %s: %s\n",
				run->cfg->workspace, strerror(-rc));
	}
}
