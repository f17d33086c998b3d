/* bench/fsloop.c: the loop bench/fs times: N x (stat + open + close) over a
 * set of files, printing nanoseconds per iteration. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int files = argc > 2 ? atoi(argv[2]) : 100;
	struct timespec a, b;
	struct stat st;
	char name[64];

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(name, sizeof(name), "f%ld", i % files);
		if (stat(name, &st) < 0)
			return 1;
		fd = open(name, O_RDONLY);
		if (fd < 0)
			return 1;
		close(fd);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
