/* tests/progs/supervisor_doors.c: probes aimed at the supervisor's own
 * resources (its descriptor table, its one loop thread). One subcommand each:
 *   flood [MIB]        threads block in sendmsg on full unix stream sockets,
 *                      passing 253, then 16, then 1 descriptor, each size
 *                      until a send is refused at once: enough to fill
 *                      corral's table if waiting sends kept copies of all;
 *                      then an open and a fork ("... after flood: ok"), then
 *                      two children touch MIB MiB each (200) and wait.
 *   ledger MIB [SECS]  fill corral's table as far as it goes with such sends,
 *                      then fallocate MIB MiB in a file, map it, close it and
 *                      unlink it (with a drain and a retry per 1-fd send held
 *                      should the unlink fail), hold the mapping SECS (6).
 *   linger K [MIB SECS]
 *                      K loopback TCP connections with unsent data and
 *                      SO_LINGER 3600 s, passed in one blocked sendmsg by a
 *                      child killed meanwhile: corral's copies are the last.
 *                      The socket then drains; without MIB a thread burns CPU
 *                      and the program lives on; with MIB it touches MIB MiB,
 *                      holds them 2 s, gives them back and exits after SECS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void fill_pair(int fd)
{
	static char big[65536];

	while (send(fd, big, sizeof(big), MSG_DONTWAIT) > 0)
		;
}

static void drain(int fd)
{
	char buf[65536];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* One sender thread on its own full pair, started by a byte on go. */
struct job {
	int sv[2], go[2], nfds;
	volatile int state;	/* 0 idle, 1 sending, 2 sent, 3 failed */
	volatile int err;
};

static void *sender(void *arg)
{
	struct job *j = arg;
	char cbuf[CMSG_SPACE(253 * sizeof(int))], c;
	struct iovec iov = { .iov_base = "x", .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *h;
	int *fds;

	if (read(j->go[0], &c, 1) != 1)
		return NULL;
	j->state = 1;
	memset(cbuf, 0, sizeof(cbuf));
	m.msg_control = cbuf;
	m.msg_controllen = CMSG_SPACE(j->nfds * sizeof(int));
	h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(j->nfds * sizeof(int));
	fds = (int *)CMSG_DATA(h);
	for (int i = 0; i < j->nfds; i++)
		fds[i] = 0;
	if (sendmsg(j->sv[0], &m, 0) < 0) {
		j->err = errno;
		j->state = 3;
	} else {
		j->state = 2;
	}
	return NULL;
}

static struct job *job_new(int nfds)
{
	struct job *j = calloc(1, sizeof(*j));
	pthread_t t;

	j->nfds = nfds;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, j->sv) < 0 || pipe(j->go) < 0) {
		perror("socketpair/pipe");
		exit(1);
	}
	fill_pair(j->sv[0]);
	if (pthread_create(&t, NULL, sender, j)) {
		perror("pthread_create");
		exit(1);
	}
	return j;
}

/* Start the send; true when it still waits after wait_us (corral holds its
 * copies), false when it failed at once. */
static int job_go(struct job *j, int wait_us)
{
	struct timespec a, b;

	if (write(j->go[1], "g", 1) != 1)
		return 0;
	/* The thread may be slow to start on a busy machine: the window
	 * opens once it is in its call. */
	while (j->state == 0)
		sched_yield();
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while (j->state < 2 &&
		 (b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < wait_us);
	return j->state == 1;
}

static long nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > 1 << 20)
		return 1 << 20;
	return (long)rl.rlim_cur;
}

/* ---- flood ---- */

static int flood(int mib)
{
	/* corral's limit is ours (inherited): sends of 253 descriptors
	 * enough to fill it, then of 16, then of 1, each size until one is
	 * refused at once. */
	static const int sizes[] = { 253, 16, 1 };
	long held = 0, refused = 0, lasterr = 0;

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		long n = k ? 400 : nofile() / 253 + 8;

		for (long i = 0; i < n; i++) {
			struct job *j = job_new(sizes[k]);

			if (job_go(j, 20000)) {
				held += sizes[k];
				continue;
			}
			refused++;
			lasterr = j->err;
			break;
		}
	}
	printf("flood: %ld descriptors held, %ld refused (%s)\n", held, refused,
	       refused ? strerror((int)lasterr) : "-");
	{
		int fd = open("/etc/hostname", O_RDONLY);
		pid_t p;

		printf("open after flood: %s\n", fd < 0 ? strerror(errno) : "ok");
		p = fork();
		if (p == 0)
			_exit(0);
		printf("fork after flood: %s\n", p < 0 ? strerror(errno) : "ok");
		if (p > 0)
			waitpid(p, NULL, 0);
	}
	for (int i = 0; i < 2; i++) {
		pid_t p = fork();

		if (p == 0) {
			size_t sz = (size_t)mib << 20;
			char *m = malloc(sz);

			for (size_t o = 0; m && o < sz; o += 4096)
				m[o] = 1;
			sleep(20);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	printf("children done\n");
	_exit(0);
}

/* ---- ledger ---- */

static int ledger(int mib, int hold)
{
	enum { NBIG = 120, NMID = 120, NONE = 64 };
	struct job *big[NBIG], *mid[NMID], *one[NONE];
	int nbig = 0, nmid = 0, none = 0, fd, tries = 0;
	size_t sz = (size_t)mib << 20;
	char *map;

	fd = open("big", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror("open big");
		return 1;
	}
	for (int i = 0; i < NBIG; i++)
		big[i] = job_new(253);
	for (int i = 0; i < NMID; i++)
		mid[i] = job_new(16);
	for (int i = 0; i < NONE; i++)
		one[i] = job_new(1);
	sleep(1);
	while (nbig < NBIG && job_go(big[nbig], 20000))
		nbig++;
	while (nmid < NMID && job_go(mid[nmid], 20000))
		nmid++;
	/* Quick from here: top up with single descriptors until refused. */
	while (none < NONE) {
		job_go(one[none], 10000);
		if (one[none]->state == 3)
			break;
		none++;
	}
	printf("held: %d x 253 + %d x 16 + %d x 1\n", nbig, nmid, none);
	if (fallocate(fd, 0, 0, (off_t)sz) < 0) {
		perror("fallocate");
		return 1;
	}
	map = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	close(fd);
	/* A descriptor corral let go of meanwhile: take it again. */
	if (none < NONE) {
		one[none] = job_new(1);
		usleep(2000);
		while (none < NONE) {
			job_go(one[none], 3000);
			if (one[none]->state == 3)
				break;
			none++;
		}
	}
	/* The unlink; when refused, give corral one descriptor back and
	 * retry: the first that gets through may find none for its ledger. */
	for (int k = 0; k <= none; k++) {
		tries++;
		if (unlink("big") == 0)
			break;
		printf("unlink: %s\n", strerror(errno));
		if (k < none) {
			drain(one[k]->sv[1]);
			usleep(300);
		}
	}
	printf("unlink after %d tries: %s\n", tries,
	       access("big", F_OK) ? "gone" : "still there");
	for (int k = 0; k < none; k++)
		drain(one[k]->sv[1]);
	for (int k = 0; k < nmid; k++)
		drain(mid[k]->sv[1]);
	for (int k = 0; k < nbig; k++)
		drain(big[k]->sv[1]);
	printf("holding %d MiB by a mapping only\n", mib);
	sleep(hold);
	map[0] = 1;
	printf("done\n");
	_exit(0);
}

/* ---- linger ---- */

static int usock[2], nstall, *stall_fds;

static void stall_send(void)
{
	size_t cl = CMSG_SPACE(nstall * sizeof(int));
	char *cbuf = calloc(1, cl);
	struct iovec iov = { .iov_base = "x", .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *h;

	m.msg_control = cbuf;
	m.msg_controllen = cl;
	h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(nstall * sizeof(int));
	memcpy(CMSG_DATA(h), stall_fds, nstall * sizeof(int));
	sendmsg(usock[0], &m, 0);
}

static void *burner(void *arg)
{
	(void)arg;
	for (;;)
		;
	return NULL;
}

static int linger(int k, int mib, int secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	struct linger lg = { .l_onoff = 1, .l_linger = 3600 };
	int small = 2048, lsn, one = 1;
	char buf[4096];
	pid_t c;

	if (k > 253)
		k = 253;
	memset(buf, 'z', sizeof(buf));
	nstall = k;
	stall_fds = calloc(k, sizeof(int));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lsn = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lsn, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (bind(lsn, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(lsn, 1024) < 0 ||
	    getsockname(lsn, (struct sockaddr *)&a, &al) < 0) {
		perror("listener");
		return 1;
	}
	for (int i = 0; i < k; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(s, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    accept(lsn, NULL, NULL) < 0) {
			fprintf(stderr, "connection %d: %s\n", i, strerror(errno));
			return 1;
		}
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		/* The peer reads nothing: data stays unsent. */
		for (int tries = 0, again = 0; tries < 200 && again < 3; tries++)
			if (send(s, buf, sizeof(buf), MSG_DONTWAIT) <= 0) {
				again++;
				usleep(1000);
			}
		setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		stall_fds[i] = s;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, usock) < 0)
		return 1;
	fill_pair(usock[0]);
	/* A child sends and is killed while its send waits: corral's copies
	 * of the connections become their last holders. */
	c = fork();
	if (c == 0) {
		stall_send();
		_exit(0);
	}
	usleep(300000);
	for (int i = 0; i < k; i++)
		close(stall_fds[i]);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	drain(usock[1]);
	printf("linger: %d connections left to corral\n", k);
	if (mib) {
		size_t sz = (size_t)mib << 20;
		char *m;

		usleep(500000);
		m = mmap(NULL, sz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		printf("%d MiB resident: %s\n", mib,
		       m == MAP_FAILED ? strerror(errno) : "ok");
		sleep(2);
		if (m != MAP_FAILED)
			munmap(m, sz);
		sleep(secs);
		printf("done\n");
		_exit(0);
	}
	{
		pthread_t b;

		pthread_create(&b, NULL, burner, NULL);
	}
	for (;;)
		sleep(1);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "flood"))
		return flood(argc > 2 ? atoi(argv[2]) : 200);
	if (!strcmp(argv[1], "ledger") && argc > 2)
		return ledger(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 6);
	if (!strcmp(argv[1], "linger") && argc > 2)
		return linger(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 0,
			      argc > 4 ? atoi(argv[4]) : 0);
	return 2;
}
