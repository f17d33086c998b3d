/* tests/progs/tree.c: a small process tree that stays up.
 *
 *   tree MARKER N [SECONDS]
 *
 * Forks N children, each exec'ing `sleep SECONDS` (default 1000) with MARKER
 * as argv[0], then waits for them. Every process of the tree has MARKER in
 * its command line (this one as argv[1]), so a test can tell whether any of
 * it survived. Prints "tree N" once all children are started. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n;

	if (argc < 3) {
		fprintf(stderr, "usage: tree MARKER N [SECONDS]\n");
		return 2;
	}
	n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		pid_t c = fork();
		if (c < 0) {
			perror("tree: fork");
			return 1;
		}
		if (c == 0) {
			char *av[] = { argv[1], argc > 3 ? argv[3] : "1000",
				       NULL };
			execvp("sleep", av);
			perror("tree: exec sleep");
			_exit(127);
		}
	}
	printf("tree %d\n", n);
	fflush(stdout);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return 0;
}
