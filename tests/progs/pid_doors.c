/* tests/progs/pid_doors.c: probes for tests/e2e/test_dh_pid_doors.py.
 *
 *   pid_doors clock NAME=PID...
 *       For each PID, its process CPU clock (and its thread clock form)
 *       through clock_getres, clock_gettime, clock_nanosleep (absolute,
 *       at 0: answers at once, even for an idle process's utime) and
 *       timer_create; prints
 *       "NAME.CALL ok" or "NAME.CALL ERRNONAME", one line per call.
 *   pid_doors futex NAME=PID...
 *       For each PID, FUTEX_LOCK_PI (100 ms timeout), FUTEX_TRYLOCK_PI and
 *       FUTEX_LOCK_PI2 on a word naming PID as the owner, private and
 *       shared (and LOCK_PI2 on CLOCK_REALTIME with the register's upper
 *       half set); then the glibc view: a PTHREAD_PRIO_INHERIT mutex's init.
 *   pid_doors goodwork
 *       The CPU clocks a program may read of its own: each thread's (by
 *       pthread_getcpuclockid from another thread), its own process's by
 *       its pid, a child's (clock_getcpuclockid) while it runs and after
 *       it burnt some CPU, a timer on the child's clock; and plain mutex
 *       and condvar use between threads. Prints "NAME ok" or an error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#define PROCESS_CLOCK(pid, type) ((clockid_t)((~(unsigned)(pid) << 3) | (type)))
#define THREAD_CLOCK(tid, type) ((clockid_t)((~(unsigned)(tid) << 3) | 4 | (type)))

static void say(const char *name, const char *call, long r, int e)
{
	printf("%s.%s %s\n", name, call, r == 0 ? "ok" :
	       r > 0 ? "value" : strerrorname_np(e));
}

static long sc(long nr, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(nr, a, b, c, d, e, f);

	return r < 0 ? -1 : r;
}

static void clocks(const char *name, pid_t pid)
{
	struct timespec ts = { 0 }, past = { 0, 0 };
	struct sigevent se = { .sigev_notify = SIGEV_NONE };
	timer_t t;
	char call[64];
	long r;

	for (int form = 0; form < 2; form++) {
		for (int type = 0; type < 3; type++) {
			clockid_t id = form ? THREAD_CLOCK(pid, type) :
				       PROCESS_CLOCK(pid, type);
			const char *f = form ? "thread" : "process";

			snprintf(call, sizeof(call), "%s%d.getres", f, type);
			r = sc(SYS_clock_getres, id, (long)&ts, 0, 0, 0, 0);
			say(name, call, r, errno);
			snprintf(call, sizeof(call), "%s%d.gettime", f, type);
			r = sc(SYS_clock_gettime, id, (long)&ts, 0, 0, 0, 0);
			say(name, call, r, errno);
			snprintf(call, sizeof(call), "%s%d.nanosleep", f, type);
			/* clock_nanosleep returns the error, not -1. */
			r = sc(SYS_clock_nanosleep, id, TIMER_ABSTIME,
			       (long)&past, 0, 0, 0);
			say(name, call, r, errno);
			snprintf(call, sizeof(call), "%s%d.timer_create", f, type);
			r = sc(SYS_timer_create, id, (long)&se, (long)&t, 0, 0, 0);
			say(name, call, r, errno);
			if (r == 0)
				syscall(SYS_timer_delete, t);
		}
	}
	/* The same number with garbage in the register's upper half: the
	 * kernel reads the 32-bit clockid only. */
	r = sc(SYS_clock_gettime,
	       (long)(0xdead000000000000ULL | (uint32_t)PROCESS_CLOCK(pid, 2)),
	       (long)&ts, 0, 0, 0, 0);
	say(name, "upper.gettime", r, errno);
}

static void futexes(const char *name, pid_t pid)
{
	static const struct { const char *n; int op; } ops[] = {
		{ "lock_pi", FUTEX_LOCK_PI },
		{ "trylock_pi", FUTEX_TRYLOCK_PI },
		{ "lock_pi2", 13 /* FUTEX_LOCK_PI2 */ },
	};
	char call[64];

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		for (int priv = 0; priv < 2; priv++) {
			/* A fresh word each time: a refused op leaves the
			 * kernel's state of the last one behind. */
			static uint32_t words[16];
			uint32_t *w = &words[i * 2 + (size_t)priv];
			struct timespec ts;
			long r;

			*w = (uint32_t)pid;
			/* LOCK_PI's timeout is on CLOCK_REALTIME, LOCK_PI2's
			 * on CLOCK_MONOTONIC; TRYLOCK_PI takes none. */
			clock_gettime(ops[i].op == FUTEX_LOCK_PI ?
				      CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 100000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			snprintf(call, sizeof(call), "%s%s", ops[i].n,
				 priv ? "_private" : "");
			r = sc(SYS_futex, (long)w,
			       ops[i].op | (priv ? FUTEX_PRIVATE_FLAG : 0), 0,
			       (long)&ts, 0, 0);
			say(name, call, r, errno);
		}
	}
	/* FUTEX_LOCK_PI2 on CLOCK_REALTIME, with garbage in the register's
	 * upper half (the kernel reads the op's 32 bits). */
	{
		static uint32_t word;
		struct timespec ts;
		long r;

		word = (uint32_t)pid;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec++;
		r = sc(SYS_futex, (long)&word,
		       (long)(0xdead00000000ULL | 13 | FUTEX_CLOCK_REALTIME |
			      FUTEX_PRIVATE_FLAG), 0, (long)&ts, 0, 0);
		say(name, "lock_pi2_rt_upper", r, errno);
	}
}

static int pi_mutex(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	int rc;

	pthread_mutexattr_init(&a);
	rc = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	if (!rc)
		rc = pthread_mutex_init(&m, &a);
	if (!rc) {
		rc = pthread_mutex_lock(&m);
		if (!rc)
			rc = pthread_mutex_unlock(&m);
		pthread_mutex_destroy(&m);
	}
	return rc;
}

/* goodwork */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void *worker(void *arg)
{
	volatile unsigned long x = 0;

	(void)arg;
	for (unsigned long i = 0; i < 20000000; i++)
		x += i;
	pthread_mutex_lock(&mu);
	stage = 1;
	pthread_cond_broadcast(&cv);
	while (stage != 2)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void check(const char *name, int ok, const char *why)
{
	printf("%s %s\n", name, ok ? "ok" : why);
}

static double secs(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

static void goodwork(void)
{
	pthread_t th;
	clockid_t ck;
	struct timespec ts;
	pid_t child;
	int rc, status;

	pthread_create(&th, NULL, worker, NULL);
	pthread_mutex_lock(&mu);
	while (stage != 1)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	rc = pthread_getcpuclockid(th, &ck);
	check("thread_clockid", !rc, strerror(rc));
	rc = rc ? rc : clock_gettime(ck, &ts) ? errno : 0;
	check("thread_gettime", !rc && secs(&ts) > 0.001,
	      rc ? strerror(rc) : "no cpu time");
	rc = pthread_getcpuclockid(pthread_self(), &ck);
	rc = rc ? rc : clock_gettime(ck, &ts) ? errno : 0;
	check("self_thread_gettime", !rc, strerror(rc));
	pthread_mutex_lock(&mu);
	stage = 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);

	rc = clock_getcpuclockid(getpid(), &ck);
	rc = rc ? rc : clock_gettime(ck, &ts) ? errno : 0;
	check("own_pid_gettime", !rc && secs(&ts) > 0.001,
	      rc ? strerror(rc) : "no cpu time");

	child = fork();
	if (child == 0) {
		volatile unsigned long x = 0;

		for (unsigned long i = 0; i < 50000000; i++)
			x += i;
		pause();
		_exit(0);
	}
	rc = clock_getcpuclockid(child, &ck);
	check("child_clockid", !rc, strerror(rc));
	if (!rc) {
		struct timespec until = { 0, 5000000 };
		struct sigevent se = { .sigev_notify = SIGEV_NONE };
		timer_t t;

		/* Sleep on the child's clock until it has used 5 ms. */
		rc = clock_nanosleep(ck, TIMER_ABSTIME, &until, NULL);
		check("child_nanosleep", !rc, strerror(rc));
		rc = clock_gettime(ck, &ts) ? errno : 0;
		check("child_gettime", !rc && secs(&ts) >= 0.005,
		      rc ? strerror(rc) : "less cpu time than slept for");
		rc = clock_getres(ck, &ts) ? errno : 0;
		check("child_getres", !rc, strerror(rc));
		rc = timer_create(ck, &se, &t) ? errno : 0;
		check("child_timer_create", !rc, strerror(rc));
		if (!rc)
			timer_delete(t);
	}
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "goodwork")) {
		goodwork();
		return 0;
	}
	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq)
			return 2;
		*eq = 0;
		if (!strcmp(argv[1], "clock"))
			clocks(argv[i], (pid_t)atoi(eq + 1));
		else if (!strcmp(argv[1], "futex"))
			futexes(argv[i], (pid_t)atoi(eq + 1));
		else
			return 2;
	}
	if (!strcmp(argv[1], "futex")) {
		int rc = pi_mutex();

		printf("pi_mutex %s\n", rc ? strerrorname_np(rc) : "ok");
	}
	return 0;
}
