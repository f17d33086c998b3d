/* tests/progs/pid_reuse.c: numbers once the run's, later someone else's.
 *
 *   pid_reuse probe DIR N   (in the run) forks N children that exit at
 *       once, reaps them, writes their pids to DIR/pids, waits for
 *       DIR/held (pids now held by processes outside the run), then aims
 *       kill, /proc, prlimit, pidfd_open, kcmp and sched_setaffinity at each
 *       and prints what it got.
 *   pid_reuse stale DIR N   (in the run) N times: a child whose second
 *       thread execs /bin/true as its parent SIGKILLs it, so the thread's
 *       number vanishes without a report when the exec event is skipped;
 *       writes those numbers to DIR/pids, waits for DIR/held, exits 0.
 *   pid_reuse cycle DIR [K] (outside) forks until it holds K (3) of the
 *       numbers in DIR/pids (the pid allocator is cyclic: they come back
 *       after a wrap), keeps those children alive, writes DIR/held, then
 *       waits for its stdin to close and reports whether they all still
 *       live ("alive K/K"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define MAXP 256

static int load(const char *path, int *v)
{
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (n < MAXP && fscanf(f, "%d", &v[n]) == 1)
		n++;
	fclose(f);
	return n;
}

static const char *en(int rc)
{
	return rc < 0 ? strerrorname_np(errno) : "ok";
}

static int probe(const char *dir, int n)
{
	char path[4096], tmp[4096];
	int held[MAXP], k = -1;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/pids.tmp", dir);
	f = fopen(tmp, "w");
	for (int i = 0; i < n; i++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		waitpid(p, NULL, 0);
		fprintf(f, "%d\n", p);
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/pids", dir);
	rename(tmp, path);
	snprintf(path, sizeof(path), "%s/held", dir);
	for (int i = 0; i < 12000 && (k = load(path, held)) < 0; i++)
		usleep(10000);
	if (k <= 0) {
		puts("nothing held");
		return 1;
	}
	for (int i = 0; i < k; i++) {
		struct rlimit rl;
		cpu_set_t set;
		int rk, rp, rl2, rpf, rkc, rsa;

		CPU_ZERO(&set);
		CPU_SET(0, &set);
		rk = kill(held[i], SIGTERM);
		printf("pid %d kill=%s", held[i], en(rk));
		snprintf(path, sizeof(path), "/proc/%d/status", held[i]);
		rp = open(path, O_RDONLY);
		printf(" proc=%s", en(rp));
		rl2 = prlimit(held[i], RLIMIT_NOFILE, NULL, &rl);
		printf(" prlimit=%s", en(rl2));
		rpf = (int)syscall(SYS_pidfd_open, held[i], 0);
		printf(" pidfd_open=%s", en(rpf));
		rkc = (int)syscall(SYS_kcmp, getpid(), held[i], 0, 0, 0);
		printf(" kcmp=%s", en(rkc));
		rsa = sched_setaffinity(held[i], sizeof(set), &set);
		printf(" affinity=%s\n", en(rsa));
	}
	return 0;
}

static int stale_pipe[2];

static void *stale_exec(void *arg)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	char *av[] = { "true", NULL };

	(void)arg;
	if (write(stale_pipe[1], &tid, sizeof(tid)) != sizeof(tid))
		_exit(1);
	execv("/bin/true", av);
	_exit(1);
}

static int stale(const char *dir, int n)
{
	char path[4096], tmp[4096];
	int held[MAXP];
	FILE *f;

	srand((unsigned)getpid());
	snprintf(tmp, sizeof(tmp), "%s/pids.tmp", dir);
	f = fopen(tmp, "w");
	if (!f)
		return 1;
	for (int i = 0; i < n && i < MAXP; i++) {
		struct timespec ts = { 0, (rand() % 3000) * 1000L };
		pid_t tid = 0, p;

		if (pipe(stale_pipe) < 0)
			return 1;
		p = fork();
		if (p == 0) {
			pthread_t th;

			pthread_create(&th, NULL, stale_exec, NULL);
			for (;;)
				pause();
		}
		if (read(stale_pipe[0], &tid, sizeof(tid)) != sizeof(tid))
			tid = 0;
		nanosleep(&ts, NULL);
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
		close(stale_pipe[0]);
		close(stale_pipe[1]);
		if (tid > 0)
			fprintf(f, "%d\n", tid);
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/pids", dir);
	rename(tmp, path);
	snprintf(path, sizeof(path), "%s/held", dir);
	for (int i = 0; i < 12000 && load(path, held) < 0; i++)
		usleep(10000);
	puts("stale done");
	return 0;
}

static int cycle(const char *dir, int most)
{
	char path[4096], tmp[4096];
	int want[MAXP], n, held[MAXP], k = 0, alive = 0;
	long max = 32768;
	FILE *f;
	char c;

	snprintf(path, sizeof(path), "%s/pids", dir);
	for (int i = 0; i < 12000 && (n = load(path, want)) <= 0; i++)
		usleep(10000);
	if (n <= 0)
		return 2;
	f = fopen("/proc/sys/kernel/pid_max", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 32768;
		fclose(f);
	}
	/* Two full turns of the allocator at most. vfork is cheap; a real
	 * fork (whose child stays) when the next number is one we want. */
	for (long tries = 0, last = 0; tries < 2 * max && k < most; tries++) {
		int next = 0;
		pid_t p;

		for (int i = 0; i < n; i++)
			if (want[i] == last + 1)
				next = 1;
		p = next ? fork() : vfork();
		if (p < 0)
			break;
		if (p == 0) {
			for (int i = 0; next && i < n; i++)
				if (want[i] == getpid())
					for (;;)
						pause();
			_exit(0);
		}
		last = p;
		/* Only a forked child stays; a vforked one exits even on a
		 * wanted number (someone else took the one we expected). */
		for (int i = 0; next && i < n; i++)
			if (want[i] == p) {
				held[k++] = p;
				next = 2;
			}
		if (next != 2)
			waitpid(p, NULL, 0);
	}
	snprintf(tmp, sizeof(tmp), "%s/held.tmp", dir);
	f = fopen(tmp, "w");
	for (int i = 0; i < k; i++)
		fprintf(f, "%d\n", held[i]);
	fclose(f);
	snprintf(path, sizeof(path), "%s/held", dir);
	rename(tmp, path);
	printf("held %d\n", k);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	for (int i = 0; i < k; i++) {
		if (waitpid(held[i], NULL, WNOHANG) == 0)
			alive++;
		kill(held[i], SIGKILL);
		waitpid(held[i], NULL, 0);
	}
	printf("alive %d/%d\n", alive, k);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "probe"))
		return probe(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "stale"))
		return stale(argv[2], atoi(argv[3]));
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "cycle"))
		return cycle(argv[2], argc == 4 && atoi(argv[3]) > 0 &&
				      atoi(argv[3]) < MAXP ? atoi(argv[3]) : 3);
	fprintf(stderr, "usage: pid_reuse probe DIR N | stale DIR N | cycle DIR [K]\n");
	return 2;
}
