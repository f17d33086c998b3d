/* tests/progs/detach.c: leave a process behind, the way a daemon does.
 *
 *   detach MARKER [SECONDS]
 *
 * Forks a child that forks a grandchild and exits; the grandchild calls
 * setsid() and execs `sleep SECONDS` (default 1000) with MARKER as argv[0],
 * so it is orphaned, in its own session, and findable in /proc. This process
 * returns only once the grandchild has exec'd (a close-on-exec pipe reaches
 * end of file), prints "detached PID" and exits 0; it exits 1 when the
 * grandchild could not exec. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int p[2];
	pid_t child, grandchild = 0;
	char c;

	if (argc < 2) {
		fprintf(stderr, "usage: detach MARKER [SECONDS]\n");
		return 2;
	}
	if (pipe2(p, O_CLOEXEC) != 0) {
		perror("detach: pipe2");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("detach: fork");
		return 1;
	}
	if (child == 0) {
		pid_t g = fork();
		if (g == 0) {
			char *av[] = { argv[1], argc > 2 ? argv[2] : "1000",
				       NULL };
			close(p[0]);
			setsid();
			execvp("sleep", av);
			perror("detach: exec sleep");
			/* One byte after the pid says the exec failed. */
			if (write(p[1], "E", 1) != 1)
				_exit(126);
			_exit(127);
		}
		/* Tell the parent the grandchild's pid, then leave. */
		if (g > 0 && write(p[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		_exit(g > 0 ? 0 : 1);
	}
	close(p[1]);
	waitpid(child, NULL, 0);
	if (read(p[0], &grandchild, sizeof(grandchild)) != sizeof(grandchild)) {
		fprintf(stderr, "detach: no grandchild\n");
		return 1;
	}
	/* End of file: the grandchild has exec'd; a byte: it could not. */
	if (read(p[0], &c, 1) > 0) {
		fprintf(stderr, "detach: the grandchild could not exec sleep\n");
		return 1;
	}
	printf("detached %d\n", (int)grandchild);
	return 0;
}
