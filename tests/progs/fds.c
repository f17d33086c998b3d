/* tests/progs/fds.c: print the file descriptors above 2 that are open, as
 * "open fds: none" or "open fds: 5=/path 7=pipe:[123]", to show which ones a
 * program inherited. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
	char buf[1024];
	int any = 0;

	fputs("open fds:", stdout);
	for (int fd = 3; fd < 1024; fd++) {
		struct stat st;
		char link[64];
		ssize_t n;

		if (fstat(fd, &st) != 0)
			continue;
		any = 1;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		printf(" %d=%s", fd, n > 0 ? buf : "?");
	}
	puts(any ? "" : " none");
	return 0;
}
