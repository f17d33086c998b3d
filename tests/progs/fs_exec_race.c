/* tests/progs/fs_exec_race.c: the exec check vs the image really loaded.
 *
 *   fs_exec_race NAME OTHER MARKER SECONDS [stop]
 *
 * In the current directory NAME is an allowed executable (a copy of
 * /usr/bin/true made in the workspace) and OTHER a symlink to a binary
 * outside the exec roots (a copy of /usr/bin/touch). One thread swaps them
 * over and over (renameat2 RENAME_EXCHANGE); the main thread forks children
 * that execute "./NAME MARKER" in a loop. A supervisor that checks the path
 * at execve and lets the kernel resolve it again loses the race: the outside
 * touch runs and creates MARKER. With "stop" the loop ends when MARKER
 * exists (the native check that the race is winnable).
 *
 * Prints one line: "execs=N ok=A refused=R other=O swaps=S marker=yes|no".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static const char *name, *other;
static atomic_int done;
static atomic_ullong swaps;

static void *swapper(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		if (syscall(SYS_renameat2, AT_FDCWD, name, AT_FDCWD, other,
			    RENAME_EXCHANGE) == 0)
			atomic_fetch_add(&swaps, 1);
		else
			usleep(1000);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long long execs = 0, ok = 0, refused = 0, other_st = 0;
	char path[4096];
	double end;
	int stop;
	pthread_t th;

	if (argc < 5) {
		fprintf(stderr, "usage: fs_exec_race NAME OTHER MARKER SECONDS "
				"[stop]\n");
		return 2;
	}
	name = argv[1];
	other = argv[2];
	stop = argc > 5 && !strcmp(argv[5], "stop");
	snprintf(path, sizeof(path), "./%s", name);
	end = now() + atof(argv[4]);
	if (pthread_create(&th, NULL, swapper, NULL) != 0) {
		perror("fs_exec_race: pthread_create");
		return 1;
	}
	while (execs < 100000 && now() < end) {
		pid_t c = fork();
		int st;

		if (c < 0) {
			usleep(10000);
			continue;
		}
		if (c == 0) {
			execl(path, name, argv[3], (char *)NULL);
			_exit(errno == EACCES || errno == EPERM ? 126 : 127);
		}
		execs++;
		if (waitpid(c, &st, 0) < 0)
			break;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 126)
			refused++;
		else
			other_st++;
		if (stop && access(argv[3], F_OK) == 0)
			break;
	}
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	printf("execs=%llu ok=%llu refused=%llu other=%llu swaps=%llu "
	       "marker=%s\n", execs, ok, refused, other_st,
	       (unsigned long long)atomic_load(&swaps),
	       access(argv[3], F_OK) == 0 ? "yes" : "no");
	return 0;
}
