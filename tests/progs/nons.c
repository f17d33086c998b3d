/* tests/progs/nons.c: run a program with every namespace-creating call
 * refused, so a passing end-to-end test shows corral never needed one.
 *
 *   nons [-P] [-L] PROGRAM [ARG...]
 *
 * Installs a classic-BPF seccomp filter (no libseccomp: test programs link
 * only libc) that kills any syscall not made through the x86-64 ABI, answers
 * EPERM to setns, and to unshare and clone with a CLONE_NEW* flag (as a host
 * without user namespaces: unshare(CLONE_FS) still works), and ENOSYS to
 * clone3 (whose flags live in memory the filter cannot read; glibc then falls
 * back to clone, which the filter can judge). Then execvp()s PROGRAM.
 *
 * Without -P it first sets PR_SET_NO_NEW_PRIVS, as any unprivileged caller
 * must. -P (needs CAP_SYS_ADMIN, i.e. root) installs the filter without it,
 * so a test run as root can show that corral itself sets no_new_privs rather
 * than inheriting it from this wrapper. -L also answers ENOSYS to
 * landlock_create_ruleset, as a kernel without Landlock would.
 *
 * PROGRAM starts with default dispositions for the signals the tests send and
 * an empty signal mask, whatever the shell that started the suite left. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif

#define NS_FLAGS                                                           \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |     \
	 CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)

/* x32 system calls carry this bit in their number on an x86-64 arch. */
#define X32_SYSCALL_BIT 0x40000000u

#define ARG0_LO offsetof(struct seccomp_data, args[0])

/* Jump offsets count instructions; the index of each is in the comment. */
static struct sock_filter filter[] = {
	/* Another ABI (i386 via int 0x80) has other numbers: kill. */
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), /* 0 */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0), /* 1 */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS), /* 2 */
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), /* 3 */
	/* x32 numbers alias the x86-64 ones with a bit set: kill. */
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1), /* 4 */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS), /* 5 */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 6, 0), /* 6 */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setns, 3, 0), /* 7 */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 3, 0), /* 8 */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 3, 0), /* 9 */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* 10 */
	/* setns */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM), /* 11 */
	/* clone3 */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS), /* 12 */
	/* unshare, clone: flags are the first argument on x86-64, all in the
	 * low word. */
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO), /* 13 */
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1), /* 14 */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM), /* 15 */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* 16 */
};

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif

/* -L: a kernel without Landlock (the arch was checked by the first). */
static struct sock_filter no_landlock[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_landlock_create_ruleset, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static void usage(void)
{
	fprintf(stderr, "usage: nons [-P] [-L] PROGRAM [ARG...]\n");
	_exit(125);
}

int main(int argc, char **argv)
{
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};
	struct sock_fprog nll = {
		.len = sizeof(no_landlock) / sizeof(no_landlock[0]),
		.filter = no_landlock,
	};
	int privileged = 0, landlock = 1;
	int i = 1;
	static const int sigs[] = { SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGPIPE,
				    SIGCHLD, SIGUSR1, SIGUSR2 };
	sigset_t none;

	if (i < argc && strcmp(argv[i], "-P") == 0) {
		privileged = 1;
		i++;
	}
	if (i < argc && strcmp(argv[i], "-L") == 0) {
		landlock = 0;
		i++;
	}
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc)
		usage();

	if (!privileged && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("nons: PR_SET_NO_NEW_PRIVS");
		return 125;
	}
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0 ||
	    (!landlock &&
	     syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &nll) != 0)) {
		perror("nons: seccomp");
		return 125;
	}

	for (size_t s = 0; s < sizeof(sigs) / sizeof(sigs[0]); s++)
		signal(sigs[s], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	execvp(argv[i], argv + i);
	fprintf(stderr, "nons: %s: %s\n", argv[i], strerror(errno));
	return 127;
}
