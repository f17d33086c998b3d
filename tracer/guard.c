/* tracer/guard.c: a deadline for the calls the loop makes on sockets the
 * program shares, which the program can make block (docs/threat-model.md). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "tracer.h"

/*
 * corral performs connects, accepts and the last close of a socket copy on
 * its one loop thread, on an open file the program shares. The program can
 * make those wait: clear O_NONBLOCK between corral's F_SETFL and its call,
 * keep a SYN unanswered (a TCP-MD5 key corral's listener lacks), or set
 * SO_LINGER on a socket whose last copy corral holds. While the loop
 * waits, no budget is checked. So such a call runs under a timer of the
 * loop thread's own (SIGEV_THREAD_ID), whose signal has a handler without
 * SA_RESTART: at the deadline the call returns EINTR. The timer runs
 * only while a deadline is armed (disarming is atomic: an expiry already
 * generated is handled on the way out of timer_settime), so no other call
 * of the loop ever sees the signal; no other thread is sent it.
 */

static timer_t guard_timer;
static int guard_sig;
static bool guard_ok;
static volatile sig_atomic_t guard_fired;
/* The loop thread: the one that set the guard up. */
static _Thread_local bool on_loop;
/* A deadline is armed (a connect's, say): a close made meanwhile runs
 * under it rather than re-arming and then disarming it early. */
static bool armed;

static void on_guard(int sig)
{
	(void)sig;
	guard_fired = 1;
}

/* A helper forked from the loop (unwind.c, probe.c) is no loop: its closes
 * are plain (it has neither the timer nor the closer thread). */
static void forked_child(void)
{
	on_loop = false;
}

int cr_guard_setup(void)
{
	struct sigaction sa;
	struct sigevent sev;
	sigset_t set;

	guard_sig = SIGRTMIN + 4;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_guard;	/* no SA_RESTART: the call ends */
	sigemptyset(&sa.sa_mask);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = guard_sig;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	sigemptyset(&set);
	sigaddset(&set, guard_sig);
	if (sigaction(guard_sig, &sa, NULL) < 0 ||
	    sigprocmask(SIG_UNBLOCK, &set, NULL) < 0 ||
	    timer_create(CLOCK_MONOTONIC, &sev, &guard_timer) < 0)
		return -errno;
	guard_ok = true;
	on_loop = true;
	pthread_atfork(NULL, NULL, forked_child);
	return 0;
}

static void arm_ns(uint64_t ns)
{
	struct itimerspec its = {
		.it_value.tv_sec = (time_t)(ns / 1000000000ull),
		.it_value.tv_nsec = (long)(ns % 1000000000ull),
	};

	if (!guard_ok)
		return;
	guard_fired = 0;
	armed = true;
	timer_settime(guard_timer, 0, &its, NULL);
}

void cr_guard_arm(unsigned ms)
{
	arm_ns((uint64_t)ms * 1000000ull);
}

bool cr_guard_disarm(void)
{
	struct itimerspec its;

	if (!guard_ok)
		return false;
	memset(&its, 0, sizeof(its));
	timer_settime(guard_timer, 0, &its, NULL);
	armed = false;
	return guard_fired != 0;
}

/*
 * The last close of a socket copy. One close waits at most CR_GUARD_MS, but
 * a program can make many at once: each SCM_RIGHTS copy of a dropped
 * deferred send, each of them a TCP socket with SO_LINGER and unsent data.
 * So the loop spends at most CR_GUARD_MS per CR_GUARD_WINDOW_MS in such
 * closes, all of them together; past that, the copies go to the closer
 * thread, which waits for nobody. A close that does not linger takes
 * microseconds and stays on the loop, in order with its answer (a port
 * is free again when the program's call returns, as without corral).
 */
#define CR_GUARD_WINDOW_MS 1000
#define CR_CLOSER_MS 1		/* a lingering close on the closer */

static uint64_t win_start_ns, win_spent_ns;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The closer: one thread of its own, with its own timer and signal (so
 * the loop's guard_fired never hears of it), closing what the loop hands
 * over, each close bounded at CR_CLOSER_MS: a lingering close ended early
 * still sends its FIN and lets the kernel finish in the background,
 * exactly as at the deadline on the loop. It touches nothing but its
 * queue: the numbers it holds are closed only by it.
 */
static pthread_mutex_t cl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cl_cv = PTHREAD_COND_INITIALIZER;
static int *cl_q;
static size_t cl_n, cl_cap, cl_busy;
static int cl_state;		/* 0 not started, 1 running, -1 failed */

static void on_closer(int sig)
{
	(void)sig;
}

static void *closer(void *arg)
{
	struct sigevent sev;
	timer_t tm;
	bool timed;

	(void)arg;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGRTMIN + 5;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timed = timer_create(CLOCK_MONOTONIC, &sev, &tm) == 0;
	for (;;) {
		struct itimerspec its = {
			.it_value.tv_nsec = CR_CLOSER_MS * 1000000L,
		};
		int fd;

		pthread_mutex_lock(&cl_mu);
		while (!cl_n)
			pthread_cond_wait(&cl_cv, &cl_mu);
		fd = cl_q[--cl_n];
		cl_busy = 1;	/* counted until closed: it is ours still */
		pthread_mutex_unlock(&cl_mu);
		if (timed)
			timer_settime(tm, 0, &its, NULL);
		close(fd);
		if (timed) {
			memset(&its, 0, sizeof(its));
			timer_settime(tm, 0, &its, NULL);
		}
		pthread_mutex_lock(&cl_mu);
		cl_busy = 0;
		pthread_mutex_unlock(&cl_mu);
	}
	return NULL;
}

static bool closer_start(void)
{
	struct sigaction sa;
	sigset_t set, old;
	pthread_t th;
	int rc;

	if (cl_state)
		return cl_state > 0;
	cl_state = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_closer;	/* no SA_RESTART: the close ends */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGRTMIN + 5, &sa, NULL) < 0)
		return false;
	/* The closer takes no signal but its timer's. */
	sigfillset(&set);
	sigdelset(&set, SIGRTMIN + 5);
	pthread_sigmask(SIG_SETMASK, &set, &old);
	rc = pthread_create(&th, NULL, closer, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return false;
	pthread_detach(th);
	cl_state = 1;
	return true;
}

/* Hand fd to the closer; false when it cannot take it. */
static bool closer_give(int fd)
{
	bool ok = false;

	if (!closer_start())
		return false;
	pthread_mutex_lock(&cl_mu);
	if (cl_n == cl_cap) {
		size_t cap = cl_cap ? cl_cap * 2 : 64;
		int *g = realloc(cl_q, cap * sizeof(*g));

		if (g) {
			cl_q = g;
			cl_cap = cap;
		}
	}
	if (cl_n < cl_cap) {
		cl_q[cl_n++] = fd;
		pthread_cond_signal(&cl_cv);
		ok = true;
	}
	pthread_mutex_unlock(&cl_mu);
	return ok;
}

size_t cr_guard_backlog(void)
{
	size_t n;

	if (cl_state <= 0)
		return 0;
	pthread_mutex_lock(&cl_mu);
	n = cl_n + cl_busy;
	pthread_mutex_unlock(&cl_mu);
	return n;
}

void cr_guard_close(int fd)
{
	const uint64_t max = CR_GUARD_MS * 1000000ull;
	uint64_t t0;

	if (fd < 0)
		return;
	if (armed) {
		/* Inside another call's deadline (a connect's error path
		 * closing a copy): bounded by it; its caller disarms. */
		close(fd);
		return;
	}
	t0 = mono_ns();
	if (t0 - win_start_ns >= CR_GUARD_WINDOW_MS * 1000000ull) {
		win_start_ns = t0;
		win_spent_ns = 0;
	}
	/* The window's time is spent: the closer takes it (when it cannot,
	 * the loop closes it, bounded as ever). */
	if ((win_spent_ns >= max || !guard_ok) && closer_give(fd))
		return;
	arm_ns(win_spent_ns < max ? max - win_spent_ns : max);
	close(fd);
	cr_guard_disarm();
	win_spent_ns += mono_ns() - t0;
}

/*
 * Every copy of a program's fd the loop takes (pidfd_getfd: tasks.c,
 * taskfd.c) may be a socket whose last reference it becomes, when the
 * program closes its own meanwhile (another thread, a few microseconds
 * after its call); with SO_LINGER and unsent data that last close waited
 * the whole linger time on the loop, past the wall budget and a cancel
 * (found by a probing session, through an interface ioctl's look at the
 * fd and the proxy's copy of a pending connect; a unix socket's, whose
 * queue held such a socket in flight). So the loop notes which of its
 * copies, and of their duplicates (cr_guard_dup), are sockets, and every
 * close() of the supervisor is linked through __wrap_close (the
 * Makefile's --wrap=close): on the loop, a noted socket's close goes
 * through cr_guard_close, whatever handler made it. The notes are the loop's alone (only it writes or reads
 * them); corral's descriptors stay below CR_NOFILE_MAX (run.c).
 */
static unsigned char sock_copy[CR_NOFILE_MAX / 8];

void cr_guard_note_copy(int fd)
{
	struct stat st;

	if (!on_loop || fd < 0 || fd >= CR_NOFILE_MAX)
		return;
	if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
		sock_copy[fd / 8] |= (unsigned char)(1u << (fd % 8));
	else
		sock_copy[fd / 8] &= (unsigned char)~(1u << (fd % 8));
}

void cr_guard_note_socket(int fd)
{
	if (on_loop && fd >= 0 && fd < CR_NOFILE_MAX)
		sock_copy[fd / 8] |= (unsigned char)(1u << (fd % 8));
}

int cr_guard_dup(int fd)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	cr_guard_note_copy(d);
	return d;
}

int __real_close(int fd);
int __wrap_close(int fd);

int __wrap_close(int fd)
{
	if (on_loop && fd >= 0 && fd < CR_NOFILE_MAX &&
	    (sock_copy[fd / 8] & (1u << (fd % 8)))) {
		sock_copy[fd / 8] &= (unsigned char)~(1u << (fd % 8));
		cr_guard_close(fd);
		return 0;
	}
	return __real_close(fd);
}
