/* tests/progs/stall_call.c: burns CPU on two threads while a third makes
 * one call on a file that corral performs itself, for the stall tests.
 *
 *   stall_call OP FILE   OP: chmod, trunc (an O_TRUNC open), utimes,
 *                        setxattr, unlink or rename (FILE to FILE.new).
 *                        Prints "done RC ERRNO" when the call returns,
 *                        then exits; the burners run until then. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static void *burn(void *arg)
{
	volatile unsigned long x = (unsigned long)arg;

	for (;;)
		x = x * 6364136223846793005ul + 1;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *op, *f;
	char to[4096];
	pthread_t th;
	int rc = -1;

	if (argc != 3) {
		fprintf(stderr, "usage: stall_call OP FILE\n");
		return 2;
	}
	op = argv[1];
	f = argv[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th, NULL, burn, (void *)(long)i)) {
			perror("stall_call: pthread_create");
			return 2;
		}
	usleep(100 * 1000);	/* the burners are running */
	if (!strcmp(op, "chmod")) {
		rc = chmod(f, 0640);
	} else if (!strcmp(op, "trunc")) {
		rc = open(f, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (rc >= 0)
			close(rc), rc = 0;
	} else if (!strcmp(op, "utimes")) {
		rc = utimensat(AT_FDCWD, f, NULL, 0);
	} else if (!strcmp(op, "setxattr")) {
		rc = setxattr(f, "user.stall", "1", 1, 0);
	} else if (!strcmp(op, "unlink")) {
		rc = unlink(f);
	} else if (!strcmp(op, "rename")) {
		snprintf(to, sizeof(to), "%s.new", f);
		rc = rename(f, to);
	} else {
		fprintf(stderr, "stall_call: unknown op %s\n", op);
		return 2;
	}
	printf("done %d %d\n", rc, rc < 0 ? errno : 0);
	fflush(stdout);
	_exit(0);
}
