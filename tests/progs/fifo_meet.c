/* tests/progs/fifo_meet.c: FIFO rendezvous in strict turns while one side
 * is signalled every 2 ms, to show no open corral performs loses its end.
 *
 *   fifo_meet N r|w PAIRS DELAY_MS [chld]
 *	PAIRS independent pairs (FIFO mN each) meet N times: each side opens
 *	only after the other closed its previous fd (tokens on two pipes),
 *	so the FIFO never holds a stale end. The reader (r) or the writer
 *	(w) waits in its blocking open while signalled every 2 ms (SIGUSR1
 *	with an SA_RESTART handler, or with "chld" SIGCHLD left at its
 *	default: ignored); the other side waits 0..DELAY_MS before each
 *	open. Natively every write succeeds and every read gets its byte:
 *	an open that met its partner returns its fd with a signal pending.
 *	Prints "PAIR mode M: ok=K lost=L"; exits 0 when nothing was lost. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char fifo[32] = "m0";
static int delay_ms, mode_r;

static void on_sig(int s)
{
	(void)s;
}

static void put(int fd)
{
	if (write(fd, "t", 1) != 1)
		_exit(5);
}

static void get(int fd)
{
	char c;
	ssize_t k;

	do
		k = read(fd, &c, 1);
	while (k < 0 && errno == EINTR);
	if (k != 1)
		_exit(4);
}

/* One side's turn: 1 when its byte went or came, 0 when lost. */
static int turn(int rd, int in, int out, int i)
{
	char c;
	ssize_t k;
	int fd, ok;

	if (i > 0)
		get(in);
	if (delay_ms && rd != mode_r)
		usleep((useconds_t)(rand() % delay_ms) * 1000);
	fd = open(fifo, rd ? O_RDONLY : O_WRONLY);
	if (fd < 0) {
		printf("%s open: %s\n", rd ? "reader" : "writer", strerror(errno));
		fflush(stdout);
		_exit(3);
	}
	if (rd) {
		do
			k = read(fd, &c, 1);
		while (k < 0 && errno == EINTR);
		ok = k == 1;
	} else {
		ok = write(fd, "x", 1) == 1;
	}
	close(fd);
	put(out);
	return ok;
}

int main(int argc, char **argv)
{
	int n, pairs, a[2], b[2], ok = 0, lost = 0, sig, st, bad = 0;
	struct sigaction sa;
	pid_t v, s;

	if (argc < 5)
		return 2;
	n = atoi(argv[1]);
	mode_r = argv[2][0] == 'r';
	pairs = atoi(argv[3]);
	delay_ms = atoi(argv[4]);
	sig = argc > 5 && !strcmp(argv[5], "chld") ? SIGCHLD : SIGUSR1;
	for (int j = 1; j < pairs; j++)
		if (fork() == 0) {
			snprintf(fifo, sizeof(fifo), "m%d", j);
			break;
		}
	srand((unsigned)getpid());
	if (pipe(a) || pipe(b) || (unlink(fifo), mkfifo(fifo, 0600)))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sa.sa_flags = SA_RESTART;
	if (sig == SIGUSR1)
		sigaction(SIGUSR1, &sa, NULL);
	v = fork();			/* the signalled side */
	if (v == 0) {
		for (int i = 0; i < n; i++)
			turn(mode_r, b[0], a[1], i);
		_exit(0);
	}
	s = fork();			/* the signaller */
	if (s == 0) {
		struct timespec ts = { 0, 2000000 };

		while (kill(v, sig) == 0)
			nanosleep(&ts, NULL);
		_exit(0);
	}
	for (int i = 0; i < n && lost <= 5; i++) {
		if (turn(!mode_r, a[0], b[1], i))
			ok++;
		else
			lost++;
	}
	printf("%s mode %c: ok=%d lost=%d\n", fifo, mode_r ? 'r' : 'w', ok, lost);
	fflush(stdout);
	kill(v, SIGKILL);
	kill(s, SIGKILL);
	waitpid(v, NULL, 0);
	waitpid(s, NULL, 0);
	if (strcmp(fifo, "m0"))
		return lost ? 1 : 0;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	return lost || bad ? 1 : 0;
}
