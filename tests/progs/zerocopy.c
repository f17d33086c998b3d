/* tests/progs/zerocopy.c: probes for tests/e2e/test_di_zerocopy_doors.py.
 *
 *   zerocopy calls
 *       One call of each zero-copy door, each on valid descriptors (so the
 *       kernel would perform it): vmsplice of user memory into a pipe,
 *       splice of a file into a pipe, tee of that pipe into another,
 *       sendfile of a file into a socket, setsockopt(SO_ZEROCOPY) on a TCP
 *       socket; and copy_file_range between two files, which stays.
 *       Prints "CALL ok" or "CALL ERRNONAME", one line per call.
 *   zerocopy thp PIPES
 *       The pinning pattern: per pipe slot, one 2 MiB THP is touched,
 *       one byte of it vmspliced into the pipe, the mapping unmapped;
 *       prints "pinned_mib N" (what the pipes were made to hold) and
 *       "vmsplice ok|ERRNONAME" (the first call's answer).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#define HP (2UL << 20)

static void say(const char *call, long r, int e)
{
	printf("%s %s\n", call, r >= 0 ? "ok" :
	       e == EINVAL ? "EINVAL" : e == ENOPROTOOPT ? "ENOPROTOOPT" :
	       e == EPERM ? "EPERM" : e == ENOSYS ? "ENOSYS" :
	       e == EOPNOTSUPP ? "EOPNOTSUPP" : strerror(e));
}

/* A file of the workspace holding `n` bytes, open for reading. */
static int data_file(const char *name, size_t n)
{
	char buf[4096];
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return -1;
	memset(buf, 'z', sizeof(buf));
	for (size_t done = 0; done < n; done += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return -1;
	return lseek(fd, 0, SEEK_SET) == 0 ? fd : -1;
}

static int calls(void)
{
	int in = data_file("zc.in", 65536), out, p[2], q[2], sv[2], tcp;
	char byte = 'x';
	struct iovec iov = { &byte, 1 };
	loff_t off = 0;
	long r;
	int one = 1;

	if (in < 0 || pipe(p) || pipe(q) ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("setup");
		return 1;
	}
	r = vmsplice(p[1], &iov, 1, 0);
	say("vmsplice", r, errno);
	r = splice(in, &off, p[1], NULL, 4096, 0);
	say("splice", r, errno);
	/* tee needs bytes in the pipe: write them if the splice could not. */
	if (r < 0 && write(p[1], "tee", 3) != 3)
		return 1;
	r = tee(p[0], q[1], 4096, 0);
	say("tee", r, errno);
	off = 0;
	r = sendfile(sv[0], in, &off, 4096);
	say("sendfile", r, errno);
	tcp = socket(AF_INET, SOCK_STREAM, 0);
	r = tcp < 0 ? -1 : setsockopt(tcp, SOL_SOCKET, SO_ZEROCOPY, &one,
				      sizeof(one));
	say("so_zerocopy", r, errno);
	out = open("zc.out", O_RDWR | O_CREAT | O_TRUNC, 0600);
	off = 0;
	r = out < 0 ? -1 : copy_file_range(in, &off, out, NULL, 65536, 0);
	say("copy_file_range", r == 65536 ? 0 : -1, r < 0 ? errno : EIO);
	return 0;
}

static int thp(long npipes)
{
	long pinned = 0;
	int first = -2;

	for (long i = 0; i < npipes; i++) {
		int fd[2], slots;

		if (pipe(fd)) {
			perror("pipe");
			break;
		}
		slots = fcntl(fd[1], F_GETPIPE_SZ) / 4096;
		fcntl(fd[1], F_SETFL, O_NONBLOCK);
		for (int s = 0; s < slots; s++) {
			char *raw = mmap(NULL, 2 * HP, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			char *a;
			struct iovec iov;
			ssize_t n;

			if (raw == MAP_FAILED) {
				perror("mmap");
				goto out;
			}
			a = (char *)(((unsigned long)raw + HP - 1) & ~(HP - 1));
			madvise(a, HP, MADV_HUGEPAGE);
			memset(a, 1, HP);
			iov.iov_base = a;
			iov.iov_len = 1;
			n = vmsplice(fd[1], &iov, 1, 0);
			if (first == -2)
				first = n == 1 ? 0 : errno;
			munmap(raw, 2 * HP);
			if (n != 1)
				goto out;
			pinned += HP;
		}
	}
out:
	printf("pinned_mib %ld\n", pinned >> 20);
	say("vmsplice", first ? -1 : 0, first);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "calls"))
		return calls();
	if (argc > 2 && !strcmp(argv[1], "thp"))
		return thp(atol(argv[2]));
	fprintf(stderr, "usage: zerocopy calls | thp PIPES\n");
	return 2;
}
