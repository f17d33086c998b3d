/* tracer/watchdog.c: the last line of defence if the supervisor's own loop
 * ever stops turning: past the wall budget plus a grace, end the process. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"

/* Cleanup may legitimately take its kill deadline (10 s) and more: the
 * grace is well past it. */
#define CR_WATCHDOG_GRACE_S 60

static void *watch(void *arg)
{
	const struct timespec *deadline = arg;
	static const char msg[] =
		"corral: platform_failure: the supervisor stopped making progress past the wall budget; exiting so that every sandboxed task is killed (PTRACE_O_EXITKILL)\n";

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL) == EINTR)
		;
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
 * detached thread sleeps until wall budget + grace and then exits the whole
 * process. It is started after the child exists and is cancelled (with the
 * process) when corral returns normally.
 */
int cr_watchdog_start(const struct cr_run *run)
{
	static struct timespec deadline;	/* one run per process */
	uint64_t ms = run->cfg->limits.v[CR_LIM_WALL];
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	if (ms / 1000 > (uint64_t)(INT32_MAX - CR_WATCHDOG_GRACE_S))
		return 0;	/* a wall budget of decades: nothing to watch */
	deadline.tv_sec += (time_t)(ms / 1000) + CR_WATCHDOG_GRACE_S;
	deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	rc = -pthread_create(&th, &attr, watch, &deadline);
	pthread_attr_destroy(&attr);
	return rc;
}
