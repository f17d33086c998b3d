/* tests/progs/more_doors.c: probes for tests/e2e/test_d7_more_doors.py.
 *
 *   more_doors capget PID
 *       capget with a header naming PID; prints "capget ok EFF" or the error.
 *   more_doors ptracer PID
 *       prctl(PR_SET_PTRACER, PID); prints the answer.
 *   more_doors clone-parent SECS
 *       clone(CLONE_PARENT) a child that sleeps SECS, then exit at once.
 *   more_doors subreaper SECS
 *       become a subreaper, fork a grandchild that sleeps SECS, exit.
 *   more_doors aio FILE
 *       io_setup + io_submit PREAD/PWRITE/FSYNC/POLL on FILE.
 *   more_doors fdscan NFDS NTHREADS [NPROC]
 *       Fill the fd table with NFDS duplicates of stdout (the soft
 *       RLIMIT_NOFILE raised to the hard one), fork NPROC - 1 copies of
 *       the process (each its own table), start NTHREADS threads that
 *       sleep, print "ready", then wait. A child forked first burns CPU
 *       from the start.
 *   more_doors sigstorm NTHREADS
 *       NTHREADS threads (and the main one) read a PROT_NONE page in a
 *       loop; the SIGSEGV handler returns, so each read faults again:
 *       one signal-delivery stop per fault, no system call at all.
 *       The threads start faulting together, once all exist. Prints
 *       "ready" first.
 *   more_doors timerstorm NTHREADS USEC
 *       NTHREADS threads each arm a timer of their own (SIGEV_THREAD_ID,
 *       every USEC microseconds, SIGUSR1 with an empty handler) and wait
 *       in pause(): one signal-delivery stop per expiry, and almost no
 *       CPU of the program's. The timers are armed together once every
 *       thread exists (after "ready").
 *   more_doors spin NTHREADS
 *       NTHREADS threads (and the main one) burn CPU; prints "ready".
 *   more_doors dnsflood NTHREADS ADDR
 *       NTHREADS threads each connect a UDP socket to ADDR:53 (the run's
 *       nameserver) and send the same query for a name off the allow
 *       list, without pause and without reading the answers (a connected
 *       send names no address, so it is not notified). The threads start
 *       sending together, once all have connected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void say(const char *what, long rc)
{
	if (rc < 0)
		printf("%s %s\n", what, strerror(errno));
	else
		printf("%s ok\n", what);
	fflush(stdout);
}

static int do_capget(pid_t pid)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, pid };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	long rc = syscall(SYS_capget, &h, d);
	if (rc < 0)
		printf("capget %s\n", strerror(errno));
	else
		printf("capget ok %x\n", d[0].effective);
	/* capset on another pid: the kernel refuses (EPERM) */
	h.version = _LINUX_CAPABILITY_VERSION_3;
	h.pid = pid;
	memset(d, 0, sizeof(d));
	say("capset", syscall(SYS_capset, &h, d));
	return 0;
}

static int do_ptracer(pid_t pid)
{
	say("ptracer", prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0));
	return 0;
}

static char stk[65536] __attribute__((aligned(16)));

static int sleeper(void *arg)
{
	int secs = (int)(long)arg;
	struct timespec ts = { secs, 0 };

	syscall(SYS_nanosleep, &ts, NULL);
	syscall(SYS_exit, 0);
	return 0;
}

static int clone_parent(int secs)
{
	long rc = clone(sleeper, stk + sizeof(stk), CLONE_PARENT | SIGCHLD,
			(void *)(long)secs);
	say("clone-parent", rc);
	return 0;
}

static int subreaper(int secs)
{
	say("subreaper", prctl(PR_SET_CHILD_SUBREAPER, 1));
	pid_t c = fork();
	if (c == 0) {
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, 0);
			sleep(secs);
			_exit(0);
		}
		_exit(0);
	}
	waitpid(c, NULL, 0);
	return 0;
}

static int aio(const char *file)
{
	aio_context_t ctx = 0;
	char buf[64] = "aio-written\n";
	int fd = open(file, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		say("open", -1);
		return 1;
	}
	say("io_setup", syscall(SYS_io_setup, 8, &ctx));
	struct iocb cb[4];
	struct iocb *cbs[4];
	memset(cb, 0, sizeof(cb));
	cb[0].aio_lio_opcode = IOCB_CMD_PWRITE;
	cb[0].aio_fildes = fd;
	cb[0].aio_buf = (unsigned long)buf;
	cb[0].aio_nbytes = strlen(buf);
	cb[1].aio_lio_opcode = IOCB_CMD_FSYNC;
	cb[1].aio_fildes = fd;
	cb[2].aio_lio_opcode = IOCB_CMD_PREAD;
	cb[2].aio_fildes = fd;
	cb[2].aio_buf = (unsigned long)buf;
	cb[2].aio_nbytes = sizeof(buf);
	cb[3].aio_lio_opcode = IOCB_CMD_POLL;
	cb[3].aio_fildes = fd;
	cb[3].aio_buf = POLLIN;
	for (int i = 0; i < 4; i++) {
		cbs[i] = &cb[i];
		long rc = syscall(SYS_io_submit, ctx, 1, &cbs[i]);
		char w[32];
		snprintf(w, sizeof(w), "submit%d", i);
		say(w, rc);
		struct io_event ev;
		struct timespec ts = { 2, 0 };
		rc = syscall(SYS_io_getevents, ctx, 1, 1, &ev, &ts);
		printf("event%d %ld %lld\n", i, rc, rc > 0 ? (long long)ev.res : 0);
	}
	return 0;
}

static void *idle_thread(void *arg)
{
	for (;;)
		pause();
	return arg;
}

static int fdscan(int nfds, int nthreads, int nproc)
{
	struct rlimit rl;
	pthread_attr_t a;
	int made = 0, started = 0;

	if (fork() == 0)
		for (volatile unsigned long x = 0;; x++)
			;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int i = 3; made < nfds && i < (int)rl.rlim_cur; i++)
		if (dup2(1, i) == i)
			made++;
	for (int i = 1; i < nproc; i++)
		if (fork() == 0)
			break;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 32768);
	for (int i = 0; i < nthreads; i++) {
		pthread_t th;

		if (pthread_create(&th, &a, idle_thread, NULL) == 0)
			started++;
	}
	printf("ready fds=%d threads=%d\n", made, started);
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

static volatile int *bad_page;

static void on_segv(int sig)
{
	(void)sig;
}

static volatile int go;

static void *faulter(void *arg)
{
	while (!go)
		usleep(1000);
	for (;;)
		(void)*bad_page;
	return arg;
}

static int sigstorm(int nthreads)
{
	struct sigaction sa;
	pthread_attr_t a;

	bad_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 65536);
	for (int i = 0; i < nthreads; i++) {
		pthread_t th;

		pthread_create(&th, &a, faulter, NULL);
	}
	go = 1;
	faulter(NULL);
	return 0;
}

static int storm_gate[2];
static struct sockaddr_in dns_addr;

static void *dns_sender(void *arg)
{
	static const unsigned char q[] = {
		0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x01, 'x', 0x07, 'i', 'n', 'v', 'a', 'l', 'i', 'd',
		0x00, 0x00, 0x01, 0x00, 0x01,
	};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&dns_addr,
			      sizeof(dns_addr)) < 0) {
		printf("connect %s\n", strerror(errno));
		return arg;
	}
	if (arg) {
		char c;

		if (read(storm_gate[0], &c, 1) != 1)
			return arg;
	}
	for (;;)
		(void)send(fd, q, sizeof(q), 0);
	return arg;
}

static int dnsflood(int nthreads, const char *addr)
{
	pthread_attr_t a;

	dns_addr.sin_family = AF_INET;
	dns_addr.sin_port = htons(53);
	if (inet_pton(AF_INET, addr, &dns_addr.sin_addr) != 1)
		return 2;
	if (pipe(storm_gate) < 0)
		return 1;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 65536);
	for (int i = 0; i < nthreads; i++) {
		pthread_t th;

		pthread_create(&th, &a, dns_sender, (void *)1);
	}
	usleep(200000);
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < nthreads; i++)
		if (write(storm_gate[1], "g", 1) != 1)
			break;
	dns_sender(NULL);
	return 0;
}

static int storm_usec;
static volatile int armed;

static void on_usr1(int sig)
{
	(void)sig;
}

static void *timer_thread(void *arg)
{
	struct sigevent ev;
	struct itimerspec its;
	timer_t tm;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGUSR1;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	memset(&its, 0, sizeof(its));
	its.it_value.tv_nsec = storm_usec * 1000L;
	its.it_interval.tv_nsec = storm_usec * 1000L;
	__sync_fetch_and_add(&armed, 1);
	{
		char c;

		if (read(storm_gate[0], &c, 1) != 1)
			return arg;
	}
	if (timer_create(CLOCK_MONOTONIC, &ev, &tm) == 0 &&
	    timer_settime(tm, 0, &its, NULL) < 0)
		printf("timer %s\n", strerror(errno));
	for (;;)
		pause();
	return arg;
}

static int timerstorm(int nthreads, int usec)
{
	struct sigaction sa;
	pthread_attr_t a;

	storm_usec = usec;
	if (pipe(storm_gate) < 0)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 65536);
	for (int i = 0; i < nthreads; i++) {
		pthread_t th;

		pthread_create(&th, &a, timer_thread, NULL);
	}
	while (armed < nthreads)
		usleep(1000);
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < nthreads; i++)
		if (write(storm_gate[1], "g", 1) != 1)
			break;
	for (;;)
		pause();
	return 0;
}

static void *spinner(void *arg)
{
	for (volatile unsigned long x = 0;; x++)
		;
	return arg;
}

static int spin(int nthreads)
{
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 65536);
	for (int i = 0; i < nthreads; i++) {
		pthread_t th;

		pthread_create(&th, &a, spinner, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	spinner(NULL);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "capget"))
		return do_capget(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "ptracer"))
		return do_ptracer(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "clone-parent"))
		return clone_parent(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "subreaper"))
		return subreaper(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "fdscan"))
		return fdscan(atoi(argv[2]), atoi(argv[3]),
			      argc >= 5 ? atoi(argv[4]) : 1);
	if (argc >= 3 && !strcmp(argv[1], "sigstorm"))
		return sigstorm(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "timerstorm"))
		return timerstorm(atoi(argv[2]), atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "spin"))
		return spin(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "dnsflood"))
		return dnsflood(atoi(argv[2]), argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "aio"))
		return aio(argv[2]);
	fprintf(stderr, "usage: more_doors capget|ptracer|clone-parent|subreaper|aio ARG\n");
	return 2;
}
