/* tracer/watchdog.c: the last line of defence if the supervisor's own loop
 * ever stops turning: past the wall budget plus a grace, end the process. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"
#include "budget/budget.h"

/* Cleanup may legitimately take its kill deadline (10 s) and more: the
 * grace is well past it. The test-only build (`make bypass`) waits 2 s, so
 * a test can watch it fire. */
#ifdef CR_TEST_BYPASS_OPEN
#define CR_WATCHDOG_GRACE_S 2
#else
#define CR_WATCHDOG_GRACE_S 60
#endif

/* Where the usage's wall_ms sits in the prepared result: a number no run
 * reaches, replaced by the real figure when the watchdog fires. */
#define CR_WATCHDOG_MARK 4503599627370495.0	/* 2^52 - 1 */
#define CR_WATCHDOG_MARK_TEXT "4503599627370495"

/* Everything the watchdog needs, prepared by the main thread before the
 * program runs: when it fires, it reads nothing the stuck loop may be
 * changing and allocates nothing (the loop may hold the allocator's
 * lock). One run per process. */
static struct {
	uint64_t total_ms;	/* wall budget + grace, or UINT64_MAX */
	uint64_t t0_ms;		/* CLOCK_MONOTONIC when it started */
	uint64_t run0_ms;	/* the run's own clock then */
	char *text;		/* the result, split at the mark: */
	size_t head, tail;	/* text[0, head) and text + tail */
	int dirfd;		/* the --result directory, or -1 */
	const char *name;	/* the --result name in it */
	bool json;		/* --json: the result goes to stdout too */
} wd = { .dirfd = -1 };

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void put(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void put_result(int fd, const char *num)
{
	put(fd, wd.text, wd.head);
	put(fd, num, strlen(num));
	put(fd, wd.text + wd.tail, strlen(wd.text + wd.tail));
	put(fd, "\n", 1);
}

static bool regular(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

static void decimal(uint64_t v, char *out, size_t size)
{
	char tmp[24];
	size_t n = 0, i = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < sizeof(tmp));
	while (n && i + 1 < size)
		out[i++] = tmp[--n];
	out[i] = 0;
}

/* One walk of /proc: fn for every process this one traces (its
 * TracerPid). Nothing allocated. */
static void traced_walk(int dfd, pid_t me, void (*fn)(pid_t, void *),
			void *arg)
{
	static char dents[16384], buf[4096];
	struct dent { uint64_t ino; int64_t off; unsigned short reclen;
		      unsigned char type; char name[]; };
	char path[48], num[24];
	long n;

	while ((n = syscall(SYS_getdents64, dfd, dents, sizeof(dents))) > 0) {
		for (long off = 0; off < n;) {
			const struct dent *d = (const void *)(dents + off);
			const char *p;
			long pid = 0;
			ssize_t got;
			int fd;

			off += d->reclen;
			for (p = d->name; *p >= '0' && *p <= '9' && pid < INT32_MAX; p++)
				pid = pid * 10 + (*p - '0');
			if (*p || !pid || pid == me)
				continue;
			decimal((uint64_t)pid, num, sizeof(num));
			strcpy(path, "/proc/");
			strcat(path, num);
			strcat(path, "/status");
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			got = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (got <= 0)
				continue;
			buf[got] = 0;
			p = strstr(buf, "\nTracerPid:\t");
			if (p && strtol(p + 12, NULL, 10) == me)
				fn((pid_t)pid, arg);
		}
	}
}

/* Every process this one traces, killed. The task table is the loop's,
 * which may be stuck half way through a change: /proc is walked instead.
 * And a loop stuck in the kernel on a lock a task holds (its memory-map
 * lock: a read of its memory or maps) keeps this process from exiting,
 * and PTRACE_O_EXITKILL from acting, until that wait ends: a probing
 * session's tree ran on 60 s past the watchdog's result. Killed first,
 * the tasks free the lock. A traced process is ours until reaped, which
 * only the stuck loop does, so its number cannot have been reused. Twice:
 * a process forked while the first walk read on (it starts stopped,
 * traced) is met by the second. */
static void kill_one(pid_t pid, void *arg)
{
	(void)arg;
	kill(pid, SIGKILL);
}

void cr_watchdog_kill_traced(void)
{
	int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	for (int pass = 0; pass < 2 && lseek(dfd, 0, SEEK_SET) == 0; pass++)
		traced_walk(dfd, getpid(), kill_one, NULL);
	close(dfd);
}

void cr_watchdog_each_traced(void (*fn)(pid_t pid, void *arg), void *arg)
{
	int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	traced_walk(dfd, getpid(), fn, arg);
	close(dfd);
}

/*
 * The end: the process exits, and with it every tracee (PTRACE_O_EXITKILL).
 * Before that, the result file, as the run's end writes it (a name replaced,
 * never written through), unless the end already claimed the result. What
 * may block for ever (stdout and stderr as the caller's pipes, which it may
 * not be reading) is written by a child made for it, with nothing of
 * corral's open and ten seconds to live, after the tree is gone; regular
 * files are written before the exit, so a caller that reads them once
 * corral has exited finds them whole. An earlier
 * build wrote its last line to stderr first, and a full pipe there would
 * have kept the tree running unsupervised.
 */
static void fire(void)
{
	static const char msg[] =
		"corral: platform_failure: the supervisor stopped making progress past the wall budget; exiting so that every sandboxed task is killed (PTRACE_O_EXITKILL)\n";
	bool mine, to_out, to_err = true;
	char num[24];
	pid_t pid;

	/* The run's end has claimed the result: its tree is killed and
	 * reaped, and what is left is corral's own output, which may wait
	 * for a reader as long as the caller likes (a probing session saw
	 * an earlier build end such a run, whose result said ok, as a
	 * platform_failure, and lose its stdout). Nothing to do. */
	if (!cr_result_claim())
		return;
	cr_watchdog_kill_traced();
	mine = wd.text != NULL;
	to_out = mine && wd.json;
	decimal(wd.run0_ms + (mono_ms() - wd.t0_ms), num, sizeof(num));
	if (mine && wd.dirfd >= 0 &&
	    (unlinkat(wd.dirfd, wd.name, 0) == 0 || errno == ENOENT)) {
		int fd = openat(wd.dirfd, wd.name, O_WRONLY | O_CREAT | O_EXCL |
				O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd >= 0) {
			put_result(fd, num);
			close(fd);
		}
	}
	/* A regular file cannot hold us up: written now, before the exit. */
	if (regular(1) && mine && wd.json) {
		put_result(1, num);
		to_out = false;
	}
	if (regular(2)) {
		put(2, msg, sizeof(msg) - 1);
		to_err = false;
	}
	pid = to_out || to_err ? fork() : -1;
	if (pid == 0) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigset_t alrm;

		sigaction(SIGALRM, &dfl, NULL);
		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		sigprocmask(SIG_UNBLOCK, &alrm, NULL);
		alarm(10);
		syscall(SYS_close_range, 3U, ~0U, 0U);
		if (to_out)
			put_result(1, num);
		if (to_err)
			put(2, msg, sizeof(msg) - 1);
		_exit(0);
	}
	_exit(CR_EXIT_USAGE);
}

/* Time is counted in steps of a tick, each worth at most a second: a step
 * that took much longer means the whole process was stopped (Ctrl-Z,
 * SIGSTOP), not that the loop stalled. An earlier build slept to a fixed
 * deadline, so a run stopped past its wall budget plus the grace and then
 * continued was ended here, with no result, before the loop could end it
 * by its wall limit. Each step also stands in for the loop while it waits
 * in a call the program can hold up (tracer/budget/stall.c). */
static void *watch(void *arg)
{
	uint64_t counted = 0;

	(void)arg;
	while (counted < wd.total_ms && !cr_result_claimed()) {
		struct timespec step = {
			.tv_nsec = CR_BUDGET_TICK_MS * 1000000L,
		};
		uint64_t t0 = mono_ms(), took;

		while (nanosleep(&step, &step) < 0 && errno == EINTR)
			;
		took = mono_ms() - t0;
		counted += took < 1000 ? took : 1000;
		cr_stall_step();
	}
	fire();
	return NULL;
}

/* The prepared result, split around the mark; without it (out of memory)
 * the watchdog still ends the run, with no result. */
static void prepare(const struct cr_run *run)
{
	char *at;

	wd.text = cr_result_stalled(run, CR_WATCHDOG_MARK);
	at = wd.text ? strstr(wd.text, CR_WATCHDOG_MARK_TEXT) : NULL;
	if (!at) {
		free(wd.text);
		wd.text = NULL;
		return;
	}
	wd.head = (size_t)(at - wd.text);
	wd.tail = wd.head + strlen(CR_WATCHDOG_MARK_TEXT);
	wd.json = run->cfg->json;
	if (run->cfg->result_file && run->cfg->result_dirfd >= 0) {
		const char *slash = strrchr(run->cfg->result_file, '/');

		wd.dirfd = run->cfg->result_dirfd;
		wd.name = slash ? slash + 1 : run->cfg->result_file;
	}
}

/*
 * A bug or a kernel stall that blocks the loop would also stop the wall
 * timer, leaving the tree running with nobody enforcing anything. This
 * detached thread counts to wall budget + grace and then exits the whole
 * process. It is started after the child exists and is cancelled (with the
 * process) when corral returns normally.
 */
int cr_watchdog_start(const struct cr_run *run)
{
	uint64_t ms = run->cfg->limits.v[CR_LIM_WALL];
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	/* A wall budget of decades: never ends the process, but still
	 * stands in for a stalled loop. */
	wd.total_ms = ms / 1000 > (uint64_t)(INT32_MAX - CR_WATCHDOG_GRACE_S) ?
		      UINT64_MAX : ms + CR_WATCHDOG_GRACE_S * 1000u;
	wd.t0_ms = mono_ms();
	wd.run0_ms = cr_run_ms(run);
	prepare(run);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	rc = -pthread_create(&th, &attr, watch, NULL);
	pthread_attr_destroy(&attr);
	return rc;
}
