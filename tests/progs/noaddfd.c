/* tests/progs/noaddfd.c: run a program where SECCOMP_IOCTL_NOTIF_ADDFD
 * fails with EINVAL, as on a kernel before 5.9: a degraded host, made.
 *
 *   noaddfd PROGRAM [ARG...]
 *
 * Sets PR_SET_NO_NEW_PRIVS, installs a classic-BPF filter answering EINVAL
 * to ioctl(fd, SECCOMP_IOCTL_NOTIF_ADDFD, ...) and allowing everything
 * else, then execvp()s PROGRAM. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* SECCOMP_IOCTL_NOTIF_ADDFD: _IOW('!', 3, struct seccomp_notif_addfd),
 * the struct being 24 bytes; spelled out for headers older than 5.9. */
#define NOTIF_ADDFD 0x40182103u

static struct sock_filter filter[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), /* 0 */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3), /* 1 */
	/* The request is the second argument; its low word on x86-64. */
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])), /* 2 */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOTIF_ADDFD, 0, 1), /* 3 */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL), /* 4 */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* 5 */
};

int main(int argc, char **argv)
{
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	if (argc < 2) {
		fprintf(stderr, "usage: noaddfd PROGRAM [ARG...]\n");
		return 125;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		perror("noaddfd: seccomp");
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "noaddfd: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
