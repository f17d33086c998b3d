/* tracer/handlers/wait.c: a parent's non-blocking wait collects what the
 * kernel would let it collect: corral's own exit reports are taken first. */
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

CR_HANDLER(cr_h_wait_nohang)
{
	(void)e;
	(void)n;
	for (int i = 0; i < WAIT_REAP_BATCHES && !run->ending; i++)
		if (!(run->reap_more = cr_tasks_reap(run)))
			break;
	return CR_V_CONT;
}
