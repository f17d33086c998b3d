/* tracer/budget/stall.c: the budgets while the loop waits in a call the
 * program can hold up: the watchdog thread ticks instead. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../tracer.h"
#include "budget.h"
#include "internal.h"
#include "corral/policy.h"

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

/* A wait the loop did not mark (below): when the loop last judged the
 * budgets (0: not yet), and what the watchdog decided meanwhile. */
static _Atomic uint64_t tick_seen_ns;
static _Atomic int blind_kind;		/* enum blind_kind; 0: none */
static _Atomic uint64_t blind_value;	/* ms, bytes, or the signal */
static uint64_t blind_prev;		/* the watchdog's last look */
static uint64_t blind_marked;		/* its last look at a marked wait */
enum blind_kind { BLIND_NONE, BLIND_CANCEL, BLIND_WALL, BLIND_CPU,
		  BLIND_MEMORY };

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

int cr_stall_cancel_pending(void)
{
	sigset_t p;

	if (sigpending(&p) < 0)
		return 0;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGCHLD && sig != SIGTSTP && sigismember(&p, sig) == 1)
			return sig;
	return 0;
}

/*
 * A wait the loop did not mark: the program holds a kernel object's lock
 * in a call of its own whose copy from or to its memory waits for its
 * memory-map lock, which other threads of it take for writing without
 * pause; corral's next call on that object (the fd scan's look at a pipe,
 * the read of the program's output, an ioctl on its file, an epoll's
 * fdinfo) waits behind it, unmarked. A probing session so held the loop
 * 26-82 s: 6-10 times the memory budget, the wall limit named 28 s late,
 * a SIGTERM acted on 31 s after. Every call on an object the program
 * shares can be held so (and one call after another, each held less
 * than a second, held the loop as well), so the watchdog looks at what
 * the loop does: the budgets are judged every 50 ms at most, and when
 * they have not been for a second, the loop is held. Then the watchdog
 * touches nothing of the run's state (the loop may come back at any
 * moment): it judges from what never changes (the limits, the start),
 * the pending signals and /proc (every process this one traces: their
 * CPU, a lower bound, and their resident sizes, which err high and so
 * count only past two seconds held), and on a cancel or a breach it
 * records the verdict and kills every traced process (watchdog.c), which
 * frees whatever lock they held.
 * The loop, back, ends the run with that verdict whatever ending it meets
 * first (cr_stall_verdict, from cr_run_end).
 */
#define CR_STALL_BLIND_MS 1000
#define CR_STALL_BLIND_MEM_MS 2000

struct blind_sum {
	uint64_t cpu_ns, rss;
};

static void blind_add(pid_t pid, void *arg)
{
	struct blind_sum *b = arg;

	bg_proc_use(pid, &b->cpu_ns, &b->rss);
}

static void blind_step(uint64_t now)
{
	struct cr_run *run = stall_run;
	struct blind_sum sum = { 0, 0 };
	enum blind_kind kind = BLIND_NONE;
	uint64_t value = 0, seen = atomic_load(&tick_seen_ns), held;
	int sig;

	/* The watchdog itself did not run for two seconds: the whole
	 * process was stopped (job control, SIGSTOP), not the loop held.
	 * The hold, if it is one, counts from now. */
	if (blind_prev && now - blind_prev > 2000000000ull && seen) {
		atomic_compare_exchange_strong(&tick_seen_ns, &seen, now);
		seen = atomic_load(&tick_seen_ns);
	}
	blind_prev = now;
	/* A marked wait just over is the loop's progress too: the ticks
	 * it held back come next. */
	if (seen && blind_marked > seen)
		seen = blind_marked;
	if (!seen || now < seen)
		return;
	held = (now - seen) / 1000000ull;
	if (held < CR_STALL_BLIND_MS || atomic_load(&blind_kind))
		return;
	if ((sig = cr_stall_cancel_pending())) {
		kind = BLIND_CANCEL;
		value = (uint64_t)sig;
	} else if (cr_run_ms(run) >= run->cfg->limits.v[CR_LIM_WALL]) {
		kind = BLIND_WALL;
		value = cr_run_ms(run);
	} else {
		cr_watchdog_each_traced(blind_add, &sum);
		if (sum.cpu_ns / 1000000ull > run->cfg->limits.v[CR_LIM_CPU]) {
			kind = BLIND_CPU;
			value = sum.cpu_ns / 1000000ull;
		} else if (held >= CR_STALL_BLIND_MEM_MS &&
			   sum.rss > run->cfg->limits.v[CR_LIM_MEMORY]) {
			kind = BLIND_MEMORY;
			value = sum.rss;
		}
	}
	if (kind == BLIND_NONE)
		return;
	atomic_store(&blind_value, value);
	atomic_store(&blind_kind, kind);
	cr_watchdog_kill_traced();
}

void cr_stall_tick_seen(void)
{
	atomic_store(&tick_seen_ns, cr_now_ns());
}

bool cr_stall_verdict(struct cr_run *run)
{
	int kind = atomic_exchange(&blind_kind, BLIND_NONE);
	uint64_t v = atomic_load(&blind_value);
	char a[32], b[32], sn[24];

	switch (kind) {
	case BLIND_CANCEL:
		cr_run_end(run, CR_ST_CANCELLED, NULL, "cancelled by %s",
			   cr_signame((int)v, sn, sizeof(sn)) + 3);
		return true;
	case BLIND_WALL:
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "wall",
			   "the wall-time limit fired");
		return true;
	case BLIND_CPU:
	case BLIND_MEMORY: {
		enum cr_limit_id id = kind == BLIND_CPU ? CR_LIM_CPU :
						       CR_LIM_MEMORY;

		if (id == CR_LIM_MEMORY)
			cr_budget_note_peak(run, v);
		cr_limit_format(id, v, a, sizeof(a));
		cr_limit_format(id, run->cfg->limits.v[id], b, sizeof(b));
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget is spent: %s used of %s",
			   cr_limit_name(id), a, b);
		return true;
	}
	default:
		return false;
	}
}

void cr_stall_step(void)
{
	uint64_t since, now, tick = CR_BUDGET_TICK_MS * 1000000ull;

	pthread_mutex_lock(&stall_lock);
	since = atomic_load(&stall_since);
	now = cr_now_ns();
	if (since)
		blind_marked = now;
	if (stall_run && since && now - since >= tick &&
	    now - stall_last >= tick) {
		stall_last = now;
		cr_budget_stall_tick(stall_run, now - since);
	} else if (stall_run && !since) {
		blind_step(now);
	}
	pthread_mutex_unlock(&stall_lock);
}
