/* tests/progs/nscheck.c: try each way of making or joining a namespace and
 * print what the kernel said, one "call: result" line each, so a test can
 * compare a native run with one under the nons wrapper.
 *
 *   nscheck          unshare, clone, clone3, setns, fork
 *   nscheck int80    one i386 system call (getpid) through int 0x80
 *
 * Results are "ok" or the errno's name. Namespaces made here are thrown away
 * at once (a child that exits). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef __NR_clone3
#define __NR_clone3 435
#endif

struct clone_args_v0 {	/* CLONE_ARGS_SIZE_VER0: the fields up to tls */
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
		stack_size, tls;
};

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static void report(const char *call, long rc, int err)
{
	printf("%s: %s\n", call, rc < 0 ? errname(err) : "ok");
}

/* rc of a fork-like call: reap the child, which exits at once. */
static long settle(long rc)
{
	if (rc == 0)
		_exit(0);
	if (rc > 0)
		waitpid((pid_t)rc, NULL, 0);
	return rc;
}

int main(int argc, char **argv)
{
	long rc;
	int fd;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && strcmp(argv[1], "int80") == 0) {
		long ret;
		/* 20 is getpid in the i386 table. */
		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
		printf("int80: %s\n", ret == getpid() ? "ok" : "wrong");
		return 0;
	}

	/* A child does the unshare, so this process keeps its namespaces. */
	rc = fork();
	if (rc == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno);
	if (rc > 0) {
		int st = 0;
		waitpid((pid_t)rc, &st, 0);
		int e = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
		report("unshare", e ? -1 : 0, e);
	}

	errno = 0;
	rc = settle(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
	report("clone", rc, errno);

	struct clone_args_v0 ca = { .exit_signal = SIGCHLD };
	errno = 0;
	rc = settle(syscall(__NR_clone3, &ca, sizeof(ca)));
	report("clone3", rc, errno);

	/* Joining one's own user namespace is EINVAL natively. */
	fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	errno = 0;
	rc = fd < 0 ? -1 : setns(fd, CLONE_NEWUSER);
	report("setns", rc, errno);
	if (fd >= 0)
		close(fd);

	errno = 0;
	rc = settle(fork());
	report("fork", rc, errno);
	return 0;
}
