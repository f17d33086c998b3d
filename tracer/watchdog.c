/* tracer/watchdog.c: the last line of defence if the supervisor's own loop
 * ever stops turning: past the wall budget plus a grace, end the process. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"
#include "budget.h"

/* Cleanup may legitimately take its kill deadline (10 s) and more: the
 * grace is well past it. */
#define CR_WATCHDOG_GRACE_S 60

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Time is counted in steps of a tick, each worth at most a second: a step
 * that took much longer means the whole process was stopped (Ctrl-Z,
 * SIGSTOP), not that the loop stalled. An earlier build slept to a fixed
 * deadline, so a run stopped past its wall budget plus the grace and then
 * continued was ended here, with no result, before the loop could end it
 * by its wall limit. Each step also stands in for the loop while it waits
 * in a call the program can hold up (tracer/stall.c). */
static void *watch(void *arg)
{
	const uint64_t *budget_ms = arg;
	static const char msg[] =
		"corral: platform_failure: the supervisor stopped making progress past the wall budget; exiting so that every sandboxed task is killed (PTRACE_O_EXITKILL)\n";
	uint64_t counted = 0;

	while (counted < *budget_ms) {
		struct timespec step = {
			.tv_nsec = CR_BUDGET_TICK_MS * 1000000L,
		};
		uint64_t t0 = mono_ms(), took;

		while (nanosleep(&step, &step) < 0 && errno == EINTR)
			;
		took = mono_ms() - t0;
		counted += took < 1000 ? took : 1000;
		cr_stall_step();
	}
	/* The main thread is the tracer: when this process exits, the kernel
	 * kills every tracee. Nothing here touches the run's state, which the
	 * stuck thread may hold half-changed. */
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to say */
	}
	_exit(CR_EXIT_USAGE);
	return NULL;
}

/*
 * A bug or a kernel stall that blocks the loop would also stop the wall
 * timer, leaving the tree running with nobody enforcing anything. This
 * detached thread counts to wall budget + grace and then exits the whole
 * process. It is started after the child exists and is cancelled (with the
 * process) when corral returns normally.
 */
int cr_watchdog_start(const struct cr_run *run)
{
	static uint64_t total_ms;	/* one run per process */
	uint64_t ms = run->cfg->limits.v[CR_LIM_WALL];
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	/* A wall budget of decades: never ends the process, but still
	 * stands in for a stalled loop. */
	total_ms = ms / 1000 > (uint64_t)(INT32_MAX - CR_WATCHDOG_GRACE_S) ?
		   UINT64_MAX : ms + CR_WATCHDOG_GRACE_S * 1000u;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	rc = -pthread_create(&th, &attr, watch, &total_ms);
	pthread_attr_destroy(&attr);
	return rc;
}
