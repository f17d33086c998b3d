/* tracer/guard.c: a deadline for the calls the loop makes on sockets the
 * program shares, which the program can make block (docs/threat-model.md). */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
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

static void on_guard(int sig)
{
	(void)sig;
	guard_fired = 1;
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
	return 0;
}

void cr_guard_arm(unsigned ms)
{
	struct itimerspec its = {
		.it_value.tv_sec = ms / 1000,
		.it_value.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	if (!guard_ok)
		return;
	guard_fired = 0;
	timer_settime(guard_timer, 0, &its, NULL);
}

bool cr_guard_disarm(void)
{
	struct itimerspec its;

	if (!guard_ok)
		return false;
	memset(&its, 0, sizeof(its));
	timer_settime(guard_timer, 0, &its, NULL);
	return guard_fired != 0;
}

/* The last close of a socket copy: SO_LINGER would make it wait. */
void cr_guard_close(int fd)
{
	if (fd < 0)
		return;
	cr_guard_arm(CR_GUARD_MS);
	close(fd);
	cr_guard_disarm();
}
