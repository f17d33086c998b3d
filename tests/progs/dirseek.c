/* tests/progs/dirseek.c: lists a directory from a position past its
 * visible names while another thread rewinds the same open file.
 *
 *   dirseek DIR TRIES
 *     DIR's first listing gives the position of its last record read; each
 *     try seeks there, lists on (thread A) while thread B sleeps 3 ms and
 *     seeks to 0. The kernel orders the two calls by the file's position
 *     lock: either A listed from "." (B first) or the offset left is 0 (B
 *     after). Prints how many tries lost the rewind (neither). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fd;

static void *rewind_it(void *arg)
{
	usleep(3000);
	lseek(fd, 0, SEEK_SET);
	return arg;
}

int main(int argc, char **argv)
{
	static char buf[65536];
	int tries, lost = 0;
	int64_t mid = 0;
	long n;

	if (argc != 3 || (tries = atoi(argv[2])) <= 0)
		return 2;
	fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	/* The d_off of the first listing's second record: past "." at least. */
	n = syscall(SYS_getdents64, fd, buf, 64);
	if (n <= 0) {
		perror("getdents64");
		return 1;
	}
	memcpy(&mid, buf + 8, sizeof(mid));
	for (int i = 0; i < tries; i++) {
		pthread_t t;
		off_t after;

		lseek(fd, (off_t)mid, SEEK_SET);
		if (pthread_create(&t, NULL, rewind_it, NULL))
			return 1;
		n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		pthread_join(t, NULL);
		after = lseek(fd, 0, SEEK_CUR);
		if ((n <= 0 || strcmp(buf + 19, ".")) && after != 0)
			lost++;
	}
	printf("%d of %d rewinds lost\n", lost, tries);
	return 0;
}
