/* tests/progs/thread_exec.c: a second thread re-execs the program N times
 * (thread_exec N [BURN_MS]), so the task table must forget each exec'ing
 * thread. With BURN_MS, the leader first burns that much CPU and the
 * thread execs only then (the old leader's time must still be counted);
 * the last image prints the process's CPU time, which exec keeps. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char *self;
static int left;
static long burn_ms;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int burnt;

static double cpu_ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *again(void *arg)
{
	char n[16], b[24];
	char *av[] = { self, n, b, NULL };

	(void)arg;
	pthread_mutex_lock(&mu);
	while (burn_ms && !burnt)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	snprintf(n, sizeof(n), "%d", left - 1);
	snprintf(b, sizeof(b), "%ld", burn_ms);
	execv("/proc/self/exe", av);
	perror("execv");
	exit(1);
}

int main(int argc, char **argv)
{
	pthread_t t;
	double t0;

	self = argv[0];
	left = argc > 1 ? atoi(argv[1]) : 0;
	burn_ms = argc > 2 ? atol(argv[2]) : 0;
	if (left <= 0) {
		if (burn_ms)
			printf("cpu_ms=%.0f\n", cpu_ms(CLOCK_PROCESS_CPUTIME_ID));
		puts("done");
		return 0;
	}
	if (pthread_create(&t, NULL, again, NULL))
		return 1;
	if (burn_ms) {
		t0 = cpu_ms(CLOCK_THREAD_CPUTIME_ID);
		while (cpu_ms(CLOCK_THREAD_CPUTIME_ID) - t0 < burn_ms)
			;
		pthread_mutex_lock(&mu);
		burnt = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	for (;;)
		pause();
}
