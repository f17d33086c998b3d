/* tests/progs/side_doors.c: probes for tests/e2e/test_d6_side_doors.py,
 * reaches for what the run must not touch by less obvious calls.
 *
 *   side_doors lease-stall FILE ROUNDS
 *       Take a read lease on FILE (in the workspace), then have a child
 *       open it for writing: the supervisor performs that open, and the
 *       kernel makes an open wait for the lease holder (up to
 *       /proc/sys/fs/lease-break-time, 45 s). ROUNDS times. Meanwhile a
 *       third process burns CPU. Prints "done".
 *   side_doors lease-chain FILE PAR
 *       PAR lease-stall holders at once, each on FILE.N.
 *   side_doors pgrp-kill sid|parent SIG
 *       setpgid into the session leader's (or corral's) process group,
 *       then kill(0, SIG) and kill(-pgrp, SIG).
 *   side_doors setflags FILE
 *       FS_IOC_SETFLAGS (nodump, noatime, sync) through a read-only fd.
 *   side_doors fsattr FILE
 *       FS_IOC_FSSETXATTR (unchanged) and FS_IOC_SETVERSION through a
 *       read-only fd.
 *   side_doors pgrp-own
 *       Make a group, join a second child to it, signal it.
 *   side_doors peek PID
 *       getpgid, getsid, getpriority, sched_get*, ioprio_get of PID.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/resource.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int lease_stall(const char *file, int rounds);

/* PAR lease holders at once, each on its own file, each with a writer:
 * their opens queue up on the one loop thread, one break time each. */
static int lease_chain(const char *file, int par)
{
	char name[4096];

	for (int i = 0; i < par; i++) {
		if (fork() == 0) {
			snprintf(name, sizeof(name), "%s.%d", file, i);
			_exit(lease_stall(name, 1));
		}
	}
	while (wait(NULL) > 0)
		;
	printf("chain done\n");
	return 0;
}

static int lease_stall(const char *file, int rounds)
{
	int fd = open(file, O_CREAT | O_RDWR, 0644);
	pid_t burner;

	if (fd < 0) {
		printf("create %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	signal(SIGIO, SIG_IGN);
	burner = fork();
	if (burner == 0) {
		volatile unsigned long x = 0;

		for (;;)
			x++;
	}
	for (int i = 0; i < rounds; i++) {
		double t0;
		pid_t c;
		int st;

		fd = open(file, O_RDONLY);
		if (fd < 0 || fcntl(fd, F_SETLEASE, F_RDLCK) < 0) {
			printf("lease %s\n", strerror(errno));
			kill(burner, SIGKILL);
			waitpid(burner, NULL, 0);
			return 1;
		}
		t0 = now();
		c = fork();
		if (c == 0) {
			int w = open(file, O_WRONLY);

			_exit(w < 0 ? 1 : 0);
		}
		waitpid(c, &st, 0);
		printf("round %d: the writer's open took %.1f s\n", i, now() - t0);
		fflush(stdout);
		close(fd);
	}
	kill(burner, SIGKILL);
	waitpid(burner, NULL, 0);
	printf("done\n");
	return 0;
}

/* Join another process group of the session (the kernel allows any group
 * of the caller's session) and signal "my own group": kill(0, SIG). WHICH
 * is "sid" (the session leader's group) or "parent" (the group of the
 * first process's parent: corral). */
static int pgrp_kill(const char *which, int sig)
{
	pid_t target = !strcmp(which, "sid") ? getsid(0) : getpgid(getppid());
	int rc;

	printf("me %d pgrp %d sid %d ppid %d target %d\n", getpid(), getpgrp(),
	       getsid(0), getppid(), target);
	rc = setpgid(0, target);
	printf("setpgid %s\n", rc ? strerror(errno) : "ok");
	printf("joined %d\n", getpgrp());
	signal(sig, SIG_IGN);
	rc = kill(0, sig);
	printf("kill(0) %s\n", rc ? strerror(errno) : "ok");
	rc = kill(-target, sig);
	printf("kill(-pgrp) %s\n", rc ? strerror(errno) : "ok");
	sleep(1);
	return 0;
}

/* The groups a run makes stay usable: a child leads a new group, a second
 * child joins it, and a signal to the group reaches both. */
static int pgrp_own(void)
{
	pid_t a, b;
	int st, rc;

	a = fork();
	if (a == 0) {
		pause();
		_exit(0);
	}
	b = fork();
	if (b == 0) {
		pause();
		_exit(0);
	}
	rc = setpgid(a, a);
	printf("new-group %s\n", rc ? strerror(errno) : "ok");
	rc = setpgid(b, a);
	printf("join-run-group %s\n", rc ? strerror(errno) : "ok");
	rc = setpgid(0, getpgrp());
	printf("own-group %s\n", rc ? strerror(errno) : "ok");
	rc = kill(-a, SIGTERM);
	printf("kill-group %s\n", rc ? strerror(errno) : "ok");
	waitpid(a, &st, 0);
	printf("a %s\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM ? "terminated" : "other");
	waitpid(b, &st, 0);
	printf("b %s\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM ? "terminated" : "other");
	return 0;
}

/* FILE lies in a read root: change its inode flags through a read-only
 * fd (FS_IOC_SETFLAGS needs ownership, not a writable open). */
static int setflags(const char *file)
{
	int fd = open(file, O_RDONLY), fl = 0, now2 = 0;

	if (fd < 0) {
		printf("open %s\n", strerror(errno));
		return 1;
	}
	if (ioctl(fd, FS_IOC_GETFLAGS, &fl) < 0) {
		printf("getflags %s\n", strerror(errno));
		return 1;
	}
	fl |= FS_NODUMP_FL | FS_NOATIME_FL | FS_SYNC_FL;
	printf("setflags %s\n", ioctl(fd, FS_IOC_SETFLAGS, &fl) < 0 ?
	       strerror(errno) : "ok");
	ioctl(fd, FS_IOC_GETFLAGS, &now2);
	printf("flags now %#x\n", now2);
	return 0;
}

/* FILE: FS_IOC_FSSETXATTR with what FS_IOC_FSGETXATTR gave (a change of
 * nothing, still a write of the inode's attributes), and FS_IOC_SETVERSION
 * (the inode's generation), each through a read-only fd. */
static int fsattr(const char *file)
{
	struct fsxattr fx;
	int fd = open(file, O_RDONLY), v = 0;

	if (fd < 0) {
		printf("open %s\n", strerror(errno));
		return 1;
	}
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fx) < 0)
		printf("fsgetxattr %s\n", strerror(errno));
	else
		printf("fssetxattr %s\n", ioctl(fd, FS_IOC_FSSETXATTR, &fx) < 0 ?
		       strerror(errno) : "ok");
	printf("setversion %s\n", ioctl(fd, FS_IOC_SETVERSION, &v) < 0 ?
	       strerror(errno) : "ok");
	return 0;
}

/* What the run learns of a process outside it (PID) by the id calls the
 * filter lets through. */
static int peek(pid_t pid)
{
	cpu_set_t set;
	struct sched_param sp;
	struct timespec ts;
	long r;

	errno = 0;
	r = getpgid(pid);
	printf("getpgid %ld %s\n", r, r < 0 ? strerror(errno) : "ok");
	r = getsid(pid);
	printf("getsid %ld %s\n", r, r < 0 ? strerror(errno) : "ok");
	errno = 0;
	r = getpriority(PRIO_PROCESS, pid);
	printf("getpriority %ld %s\n", r, errno ? strerror(errno) : "ok");
	r = sched_getaffinity(pid, sizeof(set), &set);
	printf("sched_getaffinity %s\n", r < 0 ? strerror(errno) : "ok");
	r = sched_getscheduler(pid);
	printf("sched_getscheduler %s\n", r < 0 ? strerror(errno) : "ok");
	r = sched_getparam(pid, &sp);
	printf("sched_getparam %s\n", r < 0 ? strerror(errno) : "ok");
	r = sched_rr_get_interval(pid, &ts);
	printf("sched_rr_get_interval %s\n", r < 0 ? strerror(errno) : "ok");
	r = syscall(SYS_ioprio_get, 1, pid);
	printf("ioprio_get %s\n", r < 0 ? strerror(errno) : "ok");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "setflags"))
		return setflags(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "fsattr"))
		return fsattr(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "peek"))
		return peek(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "pgrp-kill"))
		return pgrp_kill(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "lease-chain"))
		return lease_chain(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "lease-stall"))
		return lease_stall(argv[2], atoi(argv[3]));
	if (argc >= 2 && !strcmp(argv[1], "pgrp-own"))
		return pgrp_own();
	fprintf(stderr, "usage: side_doors lease-stall|lease-chain|pgrp-kill|pgrp-own|setflags|peek ...\n");
	return 2;
}
