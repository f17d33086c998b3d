/* tracer/handlers/wait.c: a parent's non-blocking wait collects what the
 * kernel would let it collect: corral's own exit reports are taken first. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/wait.h>

#include "handlers.h"

/*
 * Why: a traced process that exits is a zombie only its tracer may
 * collect until the tracer has taken the report; its pidfd polls readable
 * and its parent's SIGCHLD is due from the exit on. A parent that polls
 * the pidfd (tokio, hence uv; asyncio) or loops on WNOHANG then asks with
 * WNOHANG and is told "not yet" (0), which the kernel never answers an
 * untraced parent once the pidfd is readable: tokio 1.36 to 1.43.1
 * panics ("pidfd is ready to read, the process should have exited"), and
 * a parent ignoring SIGCHLD got 0 where natively ECHILD. corral collects
 * its tracees' pending stops and exits (a few batches, each bounded like
 * the loop's) before the kernel answers the wait: only registers decide
 * (the WNOHANG bit, in the filter), and the call is the program's.
 */
#define WAIT_REAP_BATCHES 4

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* The process a pidfd of the caller's names, or 0. Its fdinfo is read
 * only once its link says pidfd: the kernel makes a file's whole fdinfo
 * text for a read, and an epoll instance of 480 000 watches named here
 * cost corral 0.75 s a call (found by a probing session). */
static pid_t pidfd_pid(pid_t tid, int fd)
{
	char path[64], buf[4096], *p;
	ssize_t len;

	if (fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)tid, fd);
	len = readlink(path, buf, sizeof(buf) - 1);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	if (strcmp(buf, "anon_inode:[pidfd]") && strncmp(buf, "pidfd:", 6))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)tid, fd);
	len = cr_read_small(AT_FDCWD, path, buf, sizeof(buf));
	if (len <= 0)
		return 0;
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, "Pid:", 4))
			return (pid_t)strtol(p + 4, NULL, 10);
	return 0;
}

CR_HANDLER(cr_h_wait_nohang)
{
	pid_t target = 0;

	(void)e;
	/* What the call names first: one process (a pid, P_PID, a pidfd,
	 * read from its fdinfo), else the caller's children; then the
	 * loop's batches for the rest (stops, others' exits). Only
	 * registers decide; the fdinfo read only says whose report to take
	 * first, and a swapped descriptor makes nothing but a report taken
	 * sooner. */
	if (n->data.nr == __NR_wait4) {
		if ((int)n->data.args[0] > 0)
			target = (pid_t)(int)n->data.args[0];
	} else if ((int)n->data.args[0] == P_PID) {
		target = (pid_t)(int)n->data.args[1];
	} else if ((int)n->data.args[0] == P_PIDFD) {
		target = pidfd_pid((pid_t)n->pid, (int)n->data.args[1]);
	}
	if (target > 0)
		cr_tasks_reap_exit(run, target);
	else
		cr_tasks_reap_children(run, (pid_t)n->pid);
	for (int i = 0; i < WAIT_REAP_BATCHES && !run->ending; i++)
		if (!(run->reap_more = cr_tasks_reap(run)))
			break;
	return CR_V_CONT;
}
