/* tests/progs/fs_swap.c: the directory/symlink swap race.
 *
 *   fs_swap DIR LINK NAME MAJ:MIN:INO SECONDS [stop]
 *
 * In the current directory, DIR is a real directory holding NAME and LINK is
 * a symlink to a directory outside the sandbox that also holds NAME (the
 * secret, identified by MAJ:MIN:INO). One thread swaps DIR and LINK over and
 * over (renameat2 RENAME_EXCHANGE, or four plain renames if that is
 * refused), so DIR is alternately the directory and the symlink; the main
 * thread opens "DIR/NAME" in a loop for SECONDS (at most 1,000,000 times). A
 * supervisor that resolves the path and then lets the kernel walk it again
 * opens the outside file through the freshly swapped-in symlink.
 *
 * Prints one line: "opens=N allowed=A secret=S denied=D enoent=E other=O
 * swaps=W mode=exchange|rename swaperr=ERRNO". Content is never printed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static const char *dir, *lnk;
static char tmpname[4096];
static atomic_int done;
static atomic_ullong swaps;
static int use_rename;
static int swaperr;

static void *swapper(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		if (!use_rename) {
			if (syscall(SYS_renameat2, AT_FDCWD, dir, AT_FDCWD,
				    lnk, RENAME_EXCHANGE) == 0) {
				atomic_fetch_add(&swaps, 1);
				continue;
			}
			swaperr = errno;
			use_rename = 1;
		}
		/* DIR -> tmp, LINK -> DIR, (now DIR is the link), then back. */
		if (rename(dir, tmpname) != 0) {
			swaperr = errno;
			usleep(1000);
			continue;
		}
		if (rename(lnk, dir) == 0) {
			atomic_fetch_add(&swaps, 1);
			if (rename(dir, lnk) != 0)
				swaperr = errno;
		} else {
			swaperr = errno;
		}
		if (rename(tmpname, dir) != 0)
			swaperr = errno;
	}
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
	char path[4096];
	double end;
	int stop;
	pthread_t th;

	if (argc < 6 || sscanf(argv[4], "%u:%u:%llu", &maj, &min, &ino) != 3) {
		fprintf(stderr, "usage: fs_swap DIR LINK NAME MAJ:MIN:INO "
				"SECONDS [stop]\n");
		return 2;
	}
	dir = argv[1];
	lnk = argv[2];
	snprintf(tmpname, sizeof(tmpname), "%s.swaptmp", dir);
	snprintf(path, sizeof(path), "%s/%s", dir, argv[3]);
	stop = argc > 6 && !strcmp(argv[6], "stop");
	end = now() + atof(argv[5]);
	if (pthread_create(&th, NULL, swapper, NULL) != 0) {
		perror("fs_swap: pthread_create");
		return 1;
	}
	while (opens < 1000000 && now() < end) {
		int fd = open(path, O_RDONLY);
		struct stat st;

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
		    major(st.st_dev) == maj && minor(st.st_dev) == min)
			secret++;
		else
			allowed++;
		close(fd);
		if (stop && secret && allowed)
			break;
	}
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	printf("opens=%llu allowed=%llu secret=%llu denied=%llu enoent=%llu "
	       "other=%llu swaps=%llu mode=%s swaperr=%s\n", opens, allowed,
	       secret, denied, enoent, other,
	       (unsigned long long)atomic_load(&swaps),
	       use_rename ? "rename" : "exchange",
	       swaperr ? strerrorname_np(swaperr) : "none");
	return 0;
}
