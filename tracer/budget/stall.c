/* tracer/budget/stall.c: the budgets while the loop waits in a call the
 * program can hold up: the watchdog thread ticks instead. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "../tracer.h"
#include "budget.h"

/*
 * corral performs some calls on the program's files itself: chmod, chown,
 * utimes, truncate, an O_TRUNC open, xattrs, unlink, rename, link. Each
 * takes the file's inode lock, which a filesystem holds for the whole of a
 * write: one O_DIRECT write of 2 GiB by a thread of the program kept the
 * loop in such a call for seconds, uninterruptibly, and no tick ran: the
 * wall and CPU budgets fired seconds late while the program's other
 * threads burned on.
 *
 * So can a program's own memory-map lock: every read of its memory or of
 * its maps takes it (process_vm_readv waits uninterruptibly), and threads
 * that mprotect a large range without pause kept the loop in one read for
 * tens of seconds (found by a probing session).
 *
 * The loop marks such a call (cr_slow_begin/cr_slow_end around the call
 * alone). While it is marked, the loop thread touches none of the run's
 * state, so the watchdog thread may act for it: past one tick it ends the
 * run on a pending cancel (SIGTERM and the rest, left for the loop to
 * read), measures the tree as a tick would (no read that takes a memory-
 * map lock), judges the wall and CPU and memory budgets, and on a breach
 * or a cancel kills every task. It never reaps and never calls
 * ptrace (the loop thread is the tracer); the loop, back from its call,
 * waits for a step in progress to finish (the mutex) and then sees the
 * run ending as after any tick.
 *
 * One run per process: the state is static. The run is attached once its
 * tasks exist and detached when cleanup starts, before anything the step
 * reads is freed.
 */

static pthread_mutex_t stall_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cr_run *stall_run;	/* under stall_lock */
static _Atomic uint64_t stall_since;	/* ns; 0: the loop is not in a call */
static uint64_t stall_last;		/* under stall_lock: the last step's tick */
static pthread_t stall_loop;		/* the loop thread, once attached */
static _Atomic bool stall_loop_set;
static unsigned stall_depth;		/* the loop's own: marks nest */

void cr_stall_attach(struct cr_run *run)
{
	pthread_mutex_lock(&stall_lock);
	stall_run = run;
	pthread_mutex_unlock(&stall_lock);
	stall_loop = pthread_self();
	atomic_store(&stall_loop_set, true);
}

/* Only the loop's marks count: another thread of corral's (a FIFO's
 * worker) reading or calling the same way is not the loop waiting, and
 * its mark would let the watchdog act while the loop changes the run.
 * A mark inside a mark (a memory read within a marked search) extends
 * the outer one. */
static bool on_loop(void)
{
	return atomic_load(&stall_loop_set) &&
	       pthread_equal(pthread_self(), stall_loop);
}

void cr_stall_detach(void)
{
	pthread_mutex_lock(&stall_lock);
	stall_run = NULL;
	pthread_mutex_unlock(&stall_lock);
}

void cr_slow_begin(void)
{
	int e = errno;

	if (on_loop() && stall_depth++ == 0)
		atomic_store(&stall_since, cr_now_ns());
	errno = e;
}

/* Preserves errno: callers read it after the call. */
void cr_slow_end(void)
{
	int e = errno;

	if (!on_loop() || !stall_depth || --stall_depth)
		return;
	atomic_store(&stall_since, 0);
	/* A step that saw the mark finishes before the loop goes on. */
	pthread_mutex_lock(&stall_lock);
	pthread_mutex_unlock(&stall_lock);
	errno = e;
}

void cr_stall_step(void)
{
	uint64_t since, now, tick = CR_BUDGET_TICK_MS * 1000000ull;

	pthread_mutex_lock(&stall_lock);
	since = atomic_load(&stall_since);
	now = cr_now_ns();
	if (stall_run && since && now - since >= tick &&
	    now - stall_last >= tick) {
		stall_last = now;
		cr_budget_stall_tick(stall_run, now - since);
	}
	pthread_mutex_unlock(&stall_lock);
}
