/* tests/progs/mapstall.c: keeps its own memory-map lock taken for writing,
 * so that corral's reads of its memory and maps wait, for the stall tests.
 *
 *   mapstall GIB WRITERS SECS HOG [calls|pipe|sleep] [lone]
 *     maps GIB GiB read-only and fills it with the zero page (page tables
 *     only: 2 MiB a GiB), then WRITERS threads mprotect the whole range
 *     back and forth without pause, each call holding the lock for
 *     writing for tenths of a second. A forked child then touches HOG MiB
 *     a second (0: none) of a mapping made first, up to 1 GiB, and holds
 *     it.
 *     With "calls", the main thread opens a file (a notified call: corral
 *     reads its path) in a loop for SECS seconds; with "pipe", a thread
 *     writes one byte to stdout (corral's capture pipe) from a page of the
 *     range, over and over, so that the pipe's lock is held while its
 *     copy waits for the memory-map lock, and another writes a byte every
 *     2 ms from its stack, so that corral comes to read the pipe; else it
 *     sleeps SECS seconds (only corral's own reads of the maps wait).
 *     With "lone", the child's main thread exits once a thread of its own
 *     runs the hog: its process's /proc/PID/statm then reads zeros.
 *     Prints "ready" once the writers run, "done" at the end.
 *     A kernel that maps no shared zero page for a read of anonymous
 *     memory (seen here: a read-only GiB so populated is a GiB resident)
 *     would make GIB GiB resident: there the range is instead up to
 *     60 000 one-page mappings of one page of a memfd, never touched but
 *     by the pipe's thread, which no merge joins; an mprotect of it holds
 *     the lock ~15 ms, not tenths of a second, and costs no memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static char *base;
static size_t nmaps;
static size_t len;
static volatile int go, hold;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *writer(void *arg)
{
	(void)arg;
	while (!go)
		usleep(1000);
	for (;;) {
		mprotect(base, len, PROT_NONE);
		mprotect(base, len, PROT_READ);
	}
	return NULL;
}

static void *pipe_holder(void *arg)
{
	(void)arg;
	while (!hold)
		usleep(1000);
	for (size_t k = 0;; k = (k + 1) % (len >> 12))
		if (write(1, base + (k << 12), 1) < 0 && errno != EFAULT)
			usleep(1000);
	return NULL;
}

static void *ticker(void *arg)
{
	char c = '.';

	(void)arg;
	while (!hold)
		usleep(1000);
	for (;;) {
		if (write(1, &c, 1) < 0)
			return NULL;
		usleep(2000);
	}
}

/* Touches HOG MiB a second of one mapping made before: page faults in
 * its own address space, no call corral answers, so it grows at its pace
 * however long the held loop takes to answer anything. */
static void hog(char *p, int rate)
{
	double t0 = now();

	for (int got = 1; p && got <= 1024; got++) {
		memset(p + ((size_t)(got - 1) << 20), 1, 1 << 20);
		while (now() < t0 + (double)got / rate)
			usleep(1000);
	}
	for (;;)
		pause();
}

static char *hog_at;
static int hog_rate, hog_go;

static void *hog_thread(void *arg)
{
	char c;

	(void)arg;
	if (read(hog_go, &c, 1) == 1)
		hog(hog_at, hog_rate);
	_exit(0);
}

static long rss_kb(void)
{
	char b[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(b, sizeof(b), f))
		if (!strncmp(b, "VmRSS:", 6))
			v = atol(b + 6);
	if (f)
		fclose(f);
	return v;
}

/* Does a read of anonymous memory map the shared zero page (no memory)? */
static int zero_page_shared(void)
{
	size_t n = 8 << 20;
	char *m = mmap(NULL, n, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	long before = rss_kb(), after;

	if (m == MAP_FAILED || madvise(m, n, MADV_POPULATE_READ) < 0)
		return 0;
	after = rss_kb();
	munmap(m, n);
	return before >= 0 && after - before < 4096;
}

/* The range as one-page mappings of one memfd page (see the top). */
static char *many_maps(void)
{
	char b[32];
	long max = 0;
	int fd = memfd_create("mapstall", 0);
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	char *m;

	if (f && fgets(b, sizeof(b), f))
		max = atol(b);
	if (f)
		fclose(f);
	nmaps = max > 8192 ? (size_t)max - 4096 : 4096;
	if (nmaps > 60000)
		nmaps = 60000;
	if (fd < 0 || ftruncate(fd, 4096) < 0)
		return MAP_FAILED;
	len = nmaps << 12;
	m = mmap(NULL, len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	for (size_t i = 0; m != MAP_FAILED && i < nmaps; i++)
		if (mmap(m + (i << 12), 4096, PROT_READ, MAP_SHARED | MAP_FIXED,
			 fd, 0) == MAP_FAILED)
			return MAP_FAILED;
	close(fd);
	return m;
}

int main(int argc, char **argv)
{
	pthread_attr_t at;
	pthread_t th;
	double end;
	int nw, secs, rate, calls, piped, p[2];
	char *m;

	if (argc < 5)
		return 2;
	len = (size_t)atoi(argv[1]) << 30;
	nw = atoi(argv[2]);
	secs = atoi(argv[3]);
	rate = atoi(argv[4]);
	calls = argc > 5 && !strcmp(argv[5], "calls");
	piped = argc > 5 && !strcmp(argv[5], "pipe");
	setvbuf(stdout, NULL, _IONBF, 0);
	if (pipe(p) < 0)
		return 2;
	if (rate > 0 && fork() == 0) {
		char *h = mmap(NULL, 1ul << 30, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);
		char c;

		close(p[1]);
		if (argc > 6 && !strcmp(argv[6], "lone")) {
			pthread_t ht;

			hog_at = h == MAP_FAILED ? NULL : h;
			hog_rate = rate;
			hog_go = p[0];
			if (pthread_create(&ht, NULL, hog_thread, NULL))
				_exit(2);
			syscall(SYS_exit, 0);	/* this thread only */
		}
		if (read(p[0], &c, 1) == 1)
			hog(h == MAP_FAILED ? NULL : h, rate);
		_exit(0);
	}
	close(p[0]);
	if (!zero_page_shared()) {
		m = many_maps();
		base = m;
	} else {
		m = mmap(NULL, len + (2 << 20), PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		base = (char *)(((unsigned long)m + (2 << 20) - 1) &
				~((2ul << 20) - 1));
	}
	if (m == MAP_FAILED) {
		printf("mmap %d\n", errno);
		return 1;
	}
	/* The threads before the writers start: a thread's stack is a
	 * mapping, which would wait for the lock they take. */
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (int i = 0; i < nw; i++)
		if (pthread_create(&th, &at, writer, NULL))
			return 2;
	/* The pipe's threads too, and they wait until "ready" and the
	 * child's go are written: a thread made once the writers run waits
	 * for their lock, and its clone stop waits for corral's loop, which
	 * the pipe's holder holds, so the child's go came seconds late
	 * (tens under load) and the run met its wall before its memory. */
	if (piped && (pthread_create(&th, &at, pipe_holder, NULL) ||
		      pthread_create(&th, &at, ticker, NULL)))
		return 2;
	if (!nmaps && madvise(base, len, MADV_POPULATE_READ) < 0) {
		printf("populate %d\n", errno);
		return 1;
	}
	go = 1;
	printf("ready\n");
	if (rate > 0 && write(p[1], "g", 1) != 1)
		return 2;
	hold = 1;
	end = now() + secs;
	while (now() < end) {
		if (calls) {
			int fd = open("mapstall.c", O_RDONLY);

			if (fd >= 0)
				close(fd);
		} else {
			usleep(100000);
		}
	}
	printf("done\n");
	_exit(0);
}
