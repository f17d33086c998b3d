/* tests/progs/timer_hoard.c: POSIX timers made until the kernel refuses
 * (each takes one of the user's pending signals), the count written down. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sigevent sev;
	long n = 0;
	timer_t t;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: timer_hoard FILE SECONDS\n");
		return 2;
	}
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_NONE;
	while (timer_create(CLOCK_MONOTONIC, &sev, &t) == 0)
		n++;
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%ld %s\n", n, strerrorname_np(errno));
	fclose(f);
	sleep((unsigned)atoi(argv[2]));
	return 0;
}
