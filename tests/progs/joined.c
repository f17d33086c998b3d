/* tests/progs/joined.c: asks about threads just joined, by their tid;
 * natively every such call finds the thread gone (ESRCH).
 *
 * usage: joined N    N threads made and joined one after another; after
 *                    each join, tgkill or tkill (signal 0, each every second
 *                    round), sched_getaffinity, getpriority,
 *                    sched_getparam and sched_setaffinity of its tid;
 *                    prints how many of each found it */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t tid;

static void *thread(void *arg)
{
	(void)arg;
	tid = (pid_t)syscall(SYS_gettid);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	long aff = 0, prio = 0, param = 0, set = 0, tg = 0, tk = 0;
	cpu_set_t m;
	struct sched_param sp;

	for (long i = 0; i < n; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, thread, NULL) ||
		    pthread_join(th, NULL))
			return 1;
		/* Right after the join, before corral has had time to
		 * reap: tgkill on even rounds, tkill on odd ones. */
		if (i % 2)
			tk += syscall(SYS_tkill, tid, 0) == 0;
		else
			tg += syscall(SYS_tgkill, getpid(), tid, 0) == 0;
		aff += sched_getaffinity(tid, sizeof(m), &m) == 0;
		errno = 0;
		getpriority(PRIO_PROCESS, (id_t)tid);
		prio += errno == 0;
		param += sched_getparam(tid, &sp) == 0;
		CPU_ZERO(&m);
		CPU_SET(0, &m);
		set += sched_setaffinity(tid, sizeof(m), &m) == 0;
	}
	printf("joined %ld: getaffinity %ld getpriority %ld getparam %ld setaffinity %ld tgkill %ld tkill %ld\n",
	       n, aff, prio, param, set, tg, tk);
	return 0;
}
