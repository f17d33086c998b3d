/* bench/storm.c: workload w1, a stat+open+close storm over a tree of files
 * (the pattern of a build tool or language server scanning a project). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/*
 * usage: storm DIR FILES ITERATIONS
 * DIR holds d<k>/f<i> for i < FILES, ten files a directory (made by the
 * driver). Each iteration stats one file, opens it and closes it. Paths are
 * relative to DIR (the cwd after chdir), as a build tool's usually are.
 */
int main(int argc, char **argv)
{
	long files, iters;

	if (argc != 4) {
		fprintf(stderr, "usage: storm DIR FILES ITERATIONS\n");
		return 2;
	}
	files = atol(argv[2]);
	iters = atol(argv[3]);
	if (files < 1 || iters < 1 || chdir(argv[1]) < 0) {
		perror("storm");
		return 2;
	}
	for (long i = 0; i < iters; i++) {
		char p[64];
		struct stat st;
		long f = i % files;
		int fd;

		snprintf(p, sizeof(p), "d%ld/f%ld", f / 10, f);
		if (stat(p, &st) < 0 || (fd = open(p, O_RDONLY | O_CLOEXEC)) < 0) {
			perror(p);
			return 1;
		}
		close(fd);
	}
	return 0;
}
