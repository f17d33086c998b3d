/* bench/threadfd.c: the cost of fd-relative calls from the main thread, a
 * thread sharing its table and a thread with a table of its own.
 *
 *   threadfd N DIR [MODES]  N x getdents64(DIR) (rewound with lseek, which
 *                    is not notified) and N x fstatat(DIR fd, "x", ...) in
 *                    each of MODES (default "mso": m main thread, s a thread
 *                    sharing the table, o one with its own); prints
 *                    nanoseconds per call.
 *
 * Under corral, getdents64 takes a copy of the caller's fd (pidfd_getfd)
 * and fstatat resolves through /proc/TID/fd/N. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long n;
static const char *dir;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void loop(const char *mode)
{
	char buf[4096];
	struct stat st;
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	double a, b, c;

	if (d < 0) {
		perror(dir);
		exit(1);
	}
	a = now_ns();
	for (long i = 0; i < n; i++) {
		lseek(d, 0, SEEK_SET);
		if (syscall(SYS_getdents64, d, buf, sizeof(buf)) < 0) {
			perror("getdents64");
			exit(1);
		}
	}
	b = now_ns();
	for (long i = 0; i < n; i++)
		fstatat(d, "x", &st, AT_SYMLINK_NOFOLLOW);
	c = now_ns();
	printf("%-8s getdents64 %6.0f ns  fstatat %6.0f ns\n", mode,
	       (b - a) / n, (c - b) / n);
	close(d);
}

static void *shared(void *arg)
{
	(void)arg;
	loop("shared");
	return NULL;
}

static void *own(void *arg)
{
	(void)arg;
	/* CLOSE_RANGE_UNSHARE: a table of its own, nothing closed */
	if (syscall(SYS_close_range, ~0U, ~0U, 2U) < 0) {
		perror("close_range");
		exit(1);
	}
	loop("own");
	return NULL;
}

int main(int argc, char **argv)
{
	const char *modes = argc > 3 ? argv[3] : "mso";
	pthread_t t;

	n = argc > 1 ? atol(argv[1]) : 20000;
	dir = argc > 2 ? argv[2] : ".";
	if (n <= 0)
		return 2;
	for (const char *m = modes; *m; m++) {
		if (*m == 'm')
			loop("main");
		if (*m != 's' && *m != 'o')
			continue;
		pthread_create(&t, NULL, *m == 's' ? shared : own, NULL);
		pthread_join(t, NULL);
	}
	return 0;
}
