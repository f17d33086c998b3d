/* tests/progs/spew.c: write exactly BYTES bytes ("y\n" repeated) to standard
 * output, then exit 0.
 *
 *   spew BYTES
 *
 * A write error is reported on stderr and ends it with status 3, so a test
 * can tell a stream closed early from a normal finish. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[8192];
	unsigned long long left;

	if (argc < 2) {
		fprintf(stderr, "usage: spew BYTES\n");
		return 2;
	}
	left = strtoull(argv[1], NULL, 10);
	for (size_t i = 0; i < sizeof(buf); i += 2)
		memcpy(buf + i, "y\n", 2);
	while (left > 0) {
		size_t chunk = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		ssize_t w = write(1, buf, chunk);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "spew: write: %s\n", strerror(errno));
			return 3;
		}
		left -= (unsigned long long)w;
	}
	return 0;
}
