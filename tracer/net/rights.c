/* tracer/net/rights.c: a send carrying descriptors (SCM_RIGHTS), made by a
 * short-lived helper process held to the run's share of the user's allowance. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "net.h"
#include "../rawsys.h"

/*
 * The kernel counts the descriptors in flight in unix sockets per user,
 * and refuses a send of more (ETOOMANYREFS) once that count passes the
 * sending process's RLIMIT_NOFILE. The supervisor performs every send of
 * the program, and its own limit is raised to the hard limit (run.c): a
 * run put 20 240 in flight where its program, at its own limit of 64,
 * stopped at 253 natively, and every other program of the user, and every
 * other run, had its sends refused until it ended (found by a probing
 * session). So a send that carries descriptors is made by a process of
 * its own whose limit is the program's, and at most a quarter of the
 * caller's (as a run's pending signals are: the runs together leave the
 * rest to the user's other programs). The process shares corral's memory
 * and descriptor table (CLONE_VM | CLONE_FILES, as the spawned child
 * shares its memory), makes the one call with system calls only, and
 * exits; corral waits for it there (CLONE_VFORK). A process, not a
 * thread: a thread shares corral's limits.
 */

#define SHARE_MIN 64		/* never less: a message carries up to 253 */
/* The first descriptors a run sends go from corral itself: however long
 * they stay in flight, the run cannot have more there than it sent. Past
 * this many, each send of descriptors pays the helper (~0.1 ms here),
 * which a program passing a few (multiprocessing, a pidfd to a parent)
 * then never does. */
#define DIRECT_MAX 64
#define HELPER_STACK (16u * 1024)

struct job {
	int fd;
	const struct msghdr *msg;
	int flags;
	struct rlimit lim;
	long ret;		/* the call's result, or -errno */
};

#if CR_RAWSYS_SHARED_VM
CR_CHILD_CODE static int helper(void *arg)
{
	struct job *j = arg;
	long r = cr_raw6(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&j->lim, 0,
			 0, 0);

	if (r == 0)
		r = cr_raw6(SYS_sendmsg, j->fd, (long)j->msg, j->flags, 0, 0, 0);
	j->ret = r;
	cr_raw6(SYS_exit, 0, 0, 0, 0, 0, 0);
	return 0;
}
#endif

/* The limit the helper runs under: the program's soft limit, at most the
 * run's share, never below SHARE_MIN. */
static rlim_t share(const struct cr_run *run, pid_t tid)
{
	rlim_t caller = run->caller_nofile.rlim_cur, s, own;
	struct rlimit pl;

	s = caller == RLIM_INFINITY ? 65536 / 4 : caller / 4;
	if (tid > 0 && syscall(SYS_prlimit64, tid, RLIMIT_NOFILE, NULL, &pl) == 0)
		own = pl.rlim_cur;
	else
		own = s;	/* gone: its answer will not be read */
	if (own < s)
		s = own;
	return s < SHARE_MIN ? SHARE_MIN : s;
}

ssize_t cr_net_rights_send(struct cr_run *run, int fd, const struct msghdr *msg,
			   int flags, pid_t tid)
{
#if CR_RAWSYS_SHARED_VM
	struct job j = { .fd = fd, .msg = msg, .flags = flags, .ret = -EIO };
	size_t n = 0;
	sigset_t all, old;
	char *stack;
	pid_t pid;
	int e;

	for (const struct cmsghdr *h = CMSG_FIRSTHDR((struct msghdr *)msg); h;
	     h = CMSG_NXTHDR((struct msghdr *)msg, (struct cmsghdr *)h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
			n += (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	if (run->net && run->net->rights_direct + n <= DIRECT_MAX) {
		ssize_t r = sendmsg(fd, msg, flags);

		if (r >= 0)
			run->net->rights_direct += n;
		return r;
	}
	if (getrlimit(RLIMIT_NOFILE, &j.lim) < 0)
		return -1;
	j.lim.rlim_cur = share(run, tid);
	if (j.lim.rlim_cur > j.lim.rlim_max)
		j.lim.rlim_cur = j.lim.rlim_max;
	stack = mmap(NULL, HELPER_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	/* No signal may run corral's handlers on the helper's stack: it
	 * starts with every signal blocked, as this thread is meanwhile. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(helper, stack + HELPER_STACK,
		    CLONE_VM | CLONE_FILES | CLONE_VFORK, &j);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid > 0) {
		siginfo_t si;

		/* Exited already (CLONE_VFORK): collected here, by number,
		 * never by the loop's waits of the run's tasks. */
		while (waitid(P_PID, (id_t)pid, &si, WEXITED | __WALL) < 0 &&
		       errno == EINTR)
			;
	}
	munmap(stack, HELPER_STACK);
	if (pid < 0) {
		/* No process for the send (the user's RLIMIT_NPROC filled,
		 * which the program can do): the share cannot be kept, so
		 * the send is refused, as the kernel refuses past the limit,
		 * and recorded. Not EAGAIN, which the loop would take for a
		 * full socket and wait on (found by a probing session: the
		 * loop spun on a writable socket). */
		char why[128];

		snprintf(why, sizeof(why),
			 "no process could be made to send it at the run's limit (%s)",
			 strerror(e));
		cr_deny(run, tid, "sendmsg", "descriptors in flight", "net", why);
		errno = ETOOMANYREFS;
		return -1;
	}
	if (j.ret < 0) {
		errno = (int)-j.ret;
		return -1;
	}
	return (ssize_t)j.ret;
#else
	/* No direct system calls here: sent by corral, at its own limit
	 * (docs/limits.md). */
	(void)run;
	(void)tid;
	return sendmsg(fd, msg, flags);
#endif
}
