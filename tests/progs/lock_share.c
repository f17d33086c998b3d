/* tests/progs/lock_share.c: N processes map one file and each locks its own
 * slice of it (RLIMIT_MEMLOCK is per process): unevictable page cache. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* usage: lock_share TOTAL_MIB HOLD_S — slices of min(RLIMIT_MEMLOCK, 8 MiB). */
int main(int argc, char **argv)
{
	static char buf[1 << 16];
	struct rlimit rl;
	size_t slice, total, n;
	volatile char sum = 0;
	char *p;
	int fd;

	if (argc != 3 || getrlimit(RLIMIT_MEMLOCK, &rl))
		return 2;
	slice = rl.rlim_cur < (8u << 20) ? (size_t)rl.rlim_cur : 8u << 20;
	slice &= ~(size_t)4095;
	if (!slice)
		return 2;
	n = ((size_t)atol(argv[1]) << 20) / slice + 1;
	total = n * slice;
	fd = open("lockfile", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	memset(buf, 'x', sizeof(buf));
	for (size_t o = 0; o < total; o += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 1;
	fsync(fd);
	p = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < total; i += 4096)
		sum += p[i];
	for (size_t k = 0; k < n; k++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			/* Only its own slice mapped (few page tables), the
			 * whole file still mapped by the parent. */
			char *q;

			munmap(p, total);
			q = mmap(NULL, slice, PROT_READ, MAP_SHARED, fd,
				 (off_t)(k * slice));
			if (q == MAP_FAILED || mlock(q, slice))
				_exit(3);
			sleep((unsigned)atoi(argv[2]));
			_exit(0);
		}
	}
	sleep(1);
	printf("locked %zu MiB in %zu\n", total >> 20, n);
	fflush(stdout);
	while (wait(NULL) > 0)
		;
	return 0;
}
