/* tracer/handlers/wait.c: a parent's non-blocking wait collects what the
 * kernel would let it collect: corral's own exit reports are taken first. */
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/wait.h>

#include "handlers.h"
#include "../surface.h"
#include "../budget/budget.h"

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

/* The process a pidfd of the caller's names, or 0: read on corral's own
 * copy of the descriptor, which the caller cannot swap between a look
 * and a read (a thread swapping its fd between a pidfd and an epoll of
 * 480 000 watches made corral read the epoll's whole fdinfo, 0.2-0.8 s a
 * call; found by a probing session). */
static pid_t pidfd_pid(struct cr_run *run, pid_t tid, int fd)
{
	int c = fd >= 0 ? cr_tasks_getfd(run, tid, fd) : -EBADF;
	pid_t p;

	if (c < 0)
		return 0;
	p = cr_surface_pidfd_pid(c);
	close(c);
	return p > 0 ? p : 0;
}

/* Options the kernel answers EINVAL to at once: nothing to take. */
static bool invalid(const struct seccomp_notif *n)
{
	unsigned o;

	if (n->data.nr == __NR_wait4) {
		o = (unsigned)n->data.args[2];
		return o & ~(unsigned)(WNOHANG | WUNTRACED | WCONTINUED |
				       __WNOTHREAD | __WCLONE | __WALL);
	}
	o = (unsigned)n->data.args[3];
	return !(o & (WEXITED | WSTOPPED | WCONTINUED)) ||
	       (o & ~(unsigned)(WNOHANG | WNOWAIT | WEXITED | WSTOPPED |
				WCONTINUED | __WNOTHREAD | __WCLONE | __WALL));
}

CR_HANDLER(cr_h_wait_nohang)
{
	uint64_t t0 = cr_thread_cpu_ns();
	pid_t target = 0;

	(void)e;
	if (invalid(n))
		return CR_V_CONT;
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
		target = pidfd_pid(run, (pid_t)n->pid, (int)n->data.args[1]);
	}
	if (target > 0)
		cr_tasks_reap_exit(run, target);
	else
		cr_tasks_reap_children(run, (pid_t)n->pid);
	for (int i = 0; i < WAIT_REAP_BATCHES && !run->ending; i++)
		if (!(run->reap_more = cr_tasks_reap(run)))
			break;
	/* Up to a waitid per child and four batches a call: the run's CPU
	 * (a loop of waits beside 256 idle children cost corral 111 us a
	 * call, 35 s under cpu=1s, uncharged: found by a probing session). */
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return CR_V_CONT;
}
