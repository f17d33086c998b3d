/* tests/progs/fs_race.c: the path-buffer race (time of check vs time of use).
 *
 *   fs_race ALLOWED SECRET DEV:INO SECONDS [stop]
 *
 * One thread flips a shared path buffer between ALLOWED and SECRET as fast
 * as it can; the main thread opens whatever the buffer holds, in a loop, for
 * SECONDS (or 1,000,000 opens), and identifies what it got with fstat: the
 * object DEV:INO (the secret, identified by the test from outside) counts as
 * "secret", anything else readable as "allowed". A supervisor that checks the
 * path it read and then lets the kernel read it again loses this race.
 * With "stop", it stops as soon as both counts are non-zero (the native
 * check that the race is winnable at all).
 *
 * Prints one line: "opens=N allowed=A secret=S denied=D enoent=E other=O
 * flips=F". Content is never printed.
 *
 * With "unlink" instead of "stop", the main thread (re)creates ALLOWED by
 * its own fixed string and calls unlink() on the flipping buffer: a lost
 * race deletes SECRET (the test then finds it gone). "opens" counts the
 * unlink calls, "allowed" the successful ones. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static char pathbuf[4096];
static const char *names[2];
static size_t lens[2];
static atomic_int done;
static atomic_ullong flips;

static void *flipper(void *arg)
{
	unsigned long long n = 0;

	(void)arg;
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		int w = (int)(n & 1);
		/* Byte by byte through a volatile pointer: the compiler
		 * cannot merge the stores, the reader sees every state. */
		volatile char *p = pathbuf;
		for (size_t i = 0; i <= lens[w]; i++)
			p[i] = names[w][i];
		n++;
		if ((n & 1023) == 0)
			atomic_store_explicit(&flips, n,
					      memory_order_relaxed);
	}
	atomic_store(&flips, n);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long long opens = 0, allowed = 0, secret = 0, denied = 0,
			   enoent = 0, other = 0;
	unsigned int maj, min;
	unsigned long long ino;
	double end;
	int stop, unl;
	pthread_t th;

	if (argc < 5 || sscanf(argv[3], "%u:%u:%llu", &maj, &min, &ino) != 3) {
		fprintf(stderr, "usage: fs_race ALLOWED SECRET MAJ:MIN:INO "
				"SECONDS [stop]\n");
		return 2;
	}
	names[0] = argv[1];
	names[1] = argv[2];
	lens[0] = strlen(argv[1]);
	lens[1] = strlen(argv[2]);
	stop = argc > 5 && !strcmp(argv[5], "stop");
	unl = argc > 5 && !strcmp(argv[5], "unlink");
	memcpy(pathbuf, argv[1], lens[0] + 1);
	end = now() + atof(argv[4]);
	if (pthread_create(&th, NULL, flipper, NULL) != 0) {
		perror("fs_race: pthread_create");
		return 1;
	}
	while (opens < 1000000 && now() < end) {
		int fd;
		struct stat st;

		if (unl) {
			fd = open(argv[1], O_WRONLY | O_CREAT, 0644);
			if (fd >= 0)
				close(fd);
			opens++;
			if (unlink(pathbuf) == 0)
				allowed++;
			else if (errno == EACCES || errno == EPERM)
				denied++;
			else if (errno == ENOENT)
				enoent++;
			else
				other++;
			continue;
		}
		fd = open(pathbuf, O_RDONLY);
		opens++;
		if (fd < 0) {
			if (errno == EACCES || errno == EPERM)
				denied++;
			else if (errno == ENOENT)
				enoent++;
			else
				other++;
			continue;
		}
		if (fstat(fd, &st) == 0 && st.st_ino == ino &&
		    major(st.st_dev) == maj && minor(st.st_dev) == min) {
			secret++;
		} else {
			char c;
			if (read(fd, &c, 1) >= 0)
				allowed++;
			else
				other++;
		}
		close(fd);
		if (stop && secret && allowed)
			break;
	}
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	printf("opens=%llu allowed=%llu secret=%llu denied=%llu enoent=%llu "
	       "other=%llu flips=%llu\n", opens, allowed, secret, denied,
	       enoent, other, (unsigned long long)atomic_load(&flips));
	return 0;
}
