/* deepnest: a directory tree deeper than any walk's bound, built in a few
 * milliseconds by renaming whole chains into one another.
 *
 *   deepnest CHAINS DEPTH [MIB]
 *
 * Makes CHAINS chains c0..cN-1 in the cwd, each DEPTH directories deep
 * (every chain alone shallower than the walk's limit), keeping a descriptor
 * on the bottom of each; allocates a file of MIB MiB at the bottom of the last
 * chain (fallocate: allocated at once); then renames chain k into the bottom of chain k-1, last first, so
 * the tree becomes CHAINS * DEPTH levels deep in CHAINS-1 renames. Prints
 * "built N" (the depth) and "joined N", then sleeps (until killed) or exits
 * when the environment has DEEPNEST_EXIT. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int n, depth, mib, *bottom;
	char name[32];

	if (argc < 3)
		return 2;
	n = atoi(argv[1]);
	depth = atoi(argv[2]);
	mib = argc > 3 ? atoi(argv[3]) : 0;
	bottom = calloc(n, sizeof(*bottom));
	for (int k = 0; k < n; k++) {
		int fd;

		snprintf(name, sizeof(name), "c%d", k);
		if (mkdir(name, 0700) < 0) {
			printf("mkdir %s: %s\n", name, strerror(errno));
			return 1;
		}
		fd = open(name, O_RDONLY | O_DIRECTORY);
		for (int i = 1; i < depth && fd >= 0; i++) {
			int sub;

			if (mkdirat(fd, "d", 0700) < 0) {
				printf("mkdirat: %s\n", strerror(errno));
				return 1;
			}
			sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
			close(fd);
			fd = sub;
		}
		if (fd < 0) {
			printf("open: %s\n", strerror(errno));
			return 1;
		}
		bottom[k] = fd;
	}
	if (mib > 0) {
		int f = openat(bottom[n - 1], "blob", O_WRONLY | O_CREAT, 0600);

		if (f < 0 || fallocate(f, 0, 0, (off_t)mib << 20) < 0) {
			printf("fallocate: %s\n", strerror(errno));
			return 1;
		}
		close(f);
	}
	printf("built %d\n", depth);
	fflush(stdout);
	double t0 = now_ms();
	for (int k = n - 1; k >= 1; k--) {
		snprintf(name, sizeof(name), "c%d", k);
		if (renameat(AT_FDCWD, name, bottom[k - 1], "n") < 0) {
			printf("rename %s: %s\n", name, strerror(errno));
			return 1;
		}
		if (getenv("DEEPNEST_TRACE"))
			fprintf(stderr, "rename %d at %.1f ms\n", k, now_ms() - t0);
	}
	printf("joined %d\n", n * depth);
	fflush(stdout);
	if (getenv("DEEPNEST_EXIT"))
		return 0;
	for (;;)
		pause();
}
