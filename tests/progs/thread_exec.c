/* tests/progs/thread_exec.c: a second thread re-execs the program N times
 * (thread_exec N), so the task table must forget each exec'ing thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *self;
static int left;

static void *again(void *arg)
{
	char n[16];
	char *av[] = { self, n, NULL };

	(void)arg;
	snprintf(n, sizeof(n), "%d", left - 1);
	execv("/proc/self/exe", av);
	perror("execv");
	exit(1);
}

int main(int argc, char **argv)
{
	pthread_t t;

	self = argv[0];
	left = argc > 1 ? atoi(argv[1]) : 0;
	if (left <= 0) {
		puts("done");
		return 0;
	}
	if (pthread_create(&t, NULL, again, NULL))
		return 1;
	for (;;)
		pause();
}
