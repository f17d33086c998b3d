/* tests/unit/test_taskfd.c: tracer/taskfd.c on threads of this process: a
 * thread's own fd table is told from its leader's, never read in its place. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "harness.h"
#include "../../tracer/tracer.h"

#define TFD_N 777	/* "/dev/null" in the leader's table, "/" in B's */

struct tfd_thread {
	bool unshare;
	pid_t tid;
	int ready, quit;	/* under tfd_mu */
};

static pthread_mutex_t tfd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tfd_cv = PTHREAD_COND_INITIALIZER;

static void *tfd_main(void *arg)
{
	struct tfd_thread *th = arg;

	if (th->unshare) {
		int d;

		/* CLOSE_RANGE_UNSHARE: a table of its own, nothing closed */
		if (syscall(SYS_close_range, ~0U, ~0U, 2U) < 0)
			th->tid = -1;
		d = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d < 0 || dup2(d, TFD_N) < 0)
			th->tid = -1;
	}
	pthread_mutex_lock(&tfd_mu);
	if (!th->tid)
		th->tid = (pid_t)syscall(SYS_gettid);
	th->ready = 1;
	pthread_cond_broadcast(&tfd_cv);
	while (!th->quit)
		pthread_cond_wait(&tfd_cv, &tfd_mu);
	pthread_mutex_unlock(&tfd_mu);
	return NULL;
}

static mode_t type_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) < 0 ? 0 : st.st_mode & S_IFMT;
}

static void tfd_stop(struct tfd_thread *a, pthread_t ta, struct tfd_thread *b,
		     pthread_t tb, int pfd)
{
	pthread_mutex_lock(&tfd_mu);
	a->quit = b->quit = 1;
	pthread_cond_broadcast(&tfd_cv);
	pthread_mutex_unlock(&tfd_mu);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	close(TFD_N);
	if (pfd >= 0)
		close(pfd);
}

TEST_IMPL(taskfd_own_table)
{
	struct tfd_thread a = { .unshare = false }, b = { .unshare = true };
	pid_t me = getpid();
	pthread_t ta, tb;
	int pfd, c, n = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int rc_shared, rc_own, rc_own_absent, rc_self_absent;
	int same_a, same_b, via_a_type = -1, thread_type = -1;

	ASSERT(n >= 0);
	ASSERT(dup2(n, TFD_N) == TFD_N);
	close(n);
	pfd = (int)syscall(SYS_pidfd_open, me, 0);
	ASSERT(pfd >= 0);
	ASSERT(!pthread_create(&ta, NULL, tfd_main, &a));
	ASSERT(!pthread_create(&tb, NULL, tfd_main, &b));
	pthread_mutex_lock(&tfd_mu);
	while (!a.ready || !b.ready)
		pthread_cond_wait(&tfd_cv, &tfd_mu);
	pthread_mutex_unlock(&tfd_mu);

	same_a = cr_taskfd_same_table(me, a.tid);
	same_b = cr_taskfd_same_table(me, b.tid);
	c = cr_taskfd_via_leader(pfd, me, a.tid, TFD_N);
	rc_shared = c < 0 ? c : 0;
	if (c >= 0) {
		via_a_type = (int)type_of(c);
		close(c);
	}
	rc_own = cr_taskfd_via_leader(pfd, me, b.tid, TFD_N);
	if (rc_own >= 0)
		close(rc_own);
	rc_own_absent = cr_taskfd_via_leader(pfd, me, b.tid, 999);
	rc_self_absent = cr_taskfd_via_leader(pfd, me, me, 999);
	if (cr_taskfd_thread_pidfds()) {
		int tp = cr_taskfd_open(b.tid);

		c = tp < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, tp, TFD_N, 0);
		thread_type = c < 0 ? 0 : (int)type_of(c);
		if (c >= 0)
			close(c);
		if (tp >= 0)
			close(tp);
	}
	tfd_stop(&a, ta, &b, tb, pfd);

	ASSERT(a.tid > 0 && b.tid > 0);
	ASSERT_EQ(same_a, 1);
	ASSERT_EQ(same_b, 0);
	/* A thread on its leader's table: the leader's file. */
	ASSERT_EQ(rc_shared, 0);
	ASSERT_EQ(via_a_type, S_IFCHR);
	/* A table of its own: never the leader's file, nor its EBADF. */
	ASSERT_EQ(rc_own, -EPERM);
	ASSERT_EQ(rc_own_absent, -EPERM);
	ASSERT_EQ(rc_self_absent, -EBADF);
	/* PIDFD_THREAD (6.9+): the thread's own file. */
	if (thread_type != -1)
		ASSERT_EQ(thread_type, S_IFDIR);
}
