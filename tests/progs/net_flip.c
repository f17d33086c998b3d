/* tests/progs/net_flip.c: one thread flips a sockaddr's port between an
 * allowed and a refused one while another connects with it in a loop.
 * Usage: net_flip ALLOWED_PORT REFUSED_PORT ROUNDS. Prints "ok N" with the
 * number of connects that succeeded. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in sa;
static atomic_int stop;
static uint16_t good, bad;

static void *flipper(void *arg)
{
	volatile uint16_t *port = &sa.sin_port;

	(void)arg;
	/* Each value is held for a while, so a read sees either one with
	 * some probability (back-to-back stores left the good port visible
	 * for a single instruction, and a run could see only the bad one). */
	while (!atomic_load(&stop)) {
		*port = htons(good);
		for (volatile int i = 0; i < 200; i++)
			;
		*port = htons(bad);
		for (volatile int i = 0; i < 200; i++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	int rounds, ok = 0;

	if (argc != 4)
		return 2;
	good = (uint16_t)atoi(argv[1]);
	bad = (uint16_t)atoi(argv[2]);
	rounds = atoi(argv[3]);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(good);
	pthread_create(&th, NULL, flipper, NULL);
	for (int i = 0; i < rounds; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0)
			return 3;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			ok++;
		close(fd);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("ok %d\n", ok);
	return 0;
}
