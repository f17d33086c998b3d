/* tests/progs/joincount.c: counts its own threads in /proc right after
 * joining the ones it started, as a program deciding whether it may fork.
 *
 * usage: joincount THREADS ROUNDS
 * Each round starts THREADS threads, joins them all, then reads Threads:
 * of /proc/self/status and field 20 (num_threads) of /proc/self/stat.
 * Prints "joined ROUNDS: status N, stat M": the rounds in which each
 * counted more than the one thread left. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *nothing(void *arg)
{
	return arg;
}

static long read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static int status_threads(void)
{
	char b[4096];
	const char *p;

	if (read_file("/proc/self/status", b, sizeof(b)) < 0 ||
	    !(p = strstr(b, "\nThreads:")))
		return -1;
	return atoi(p + 9);
}

static int stat_threads(void)
{
	char b[1024];
	char *p;

	if (read_file("/proc/self/stat", b, sizeof(b)) < 0 ||
	    !(p = strrchr(b, ')')))
		return -1;
	p += 2;				/* field 3, the state */
	for (int i = 3; i < 20 && p; i++)
		if ((p = strchr(p, ' ')))
			p++;
	return p ? atoi(p) : -1;
}

int main(int argc, char **argv)
{
	int n, rounds, bad_status = 0, bad_stat = 0;
	pthread_t *t;

	if (argc != 3 || (n = atoi(argv[1])) < 1 || (rounds = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: joincount THREADS ROUNDS\n");
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++)
			if (pthread_create(&t[i], NULL, nothing, NULL)) {
				perror("pthread_create");
				return 1;
			}
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		if (status_threads() != 1)
			bad_status++;
		if (stat_threads() != 1)
			bad_stat++;
	}
	printf("joined %d: status %d, stat %d\n", rounds, bad_status, bad_stat);
	free(t);
	return 0;
}
