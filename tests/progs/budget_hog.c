/* tests/progs/budget_hog.c: spends one resource on purpose, within a cap of
 * its own, so the budget tests can watch corral stop it.
 *
 *   budget_hog fork MAX            fork bomb: every process forks until MAX
 *                                  forks happened in all (then they wait)
 *   budget_hog threads MAX         thread bomb: up to MAX sleeping threads
 *   budget_hog race THREADS KEEP N THREADS threads each keep KEEP children
 *                                  alive, N forks each; prints the most
 *                                  tasks seen alive at once
 *   budget_hog mem MIB PROCS       PROCS processes each touch MIB MiB, then
 *                                  wait
 *   budget_hog cpu PROCS           PROCS processes burn CPU forever
 *   budget_hog spinners N          N threads that wait until all exist,
 *                                  then all burn CPU forever
 *   budget_hog bigfile MIB         one file of MIB MiB in the cwd, then wait
 *   budget_hog smallfiles N BYTES  N files of BYTES bytes, then wait
 *   budget_hog memrate MIB RATE PROCS  like mem, each process touching RATE
 *                                  MiB/s (for bench/limits)
 *   budget_hog diskrate MIB RATE   like bigfile, writing RATE MiB/s
 *   budget_hog filesrate N RATE    like smallfiles (1 byte), RATE files/s
 *   budget_hog unlinked MIB COUNT  COUNT files of MIB MiB each, unlinked
 *                                  at once and held open
 *   budget_hog memshared MIB       touches MIB MiB of a MAP_SHARED anonymous
 *                                  mapping (outside RLIMIT_DATA)
 *   budget_hog shdrop MIB HOW      MIB MiB of shared anonymous memory
 *                                  (HOW 0: MAP_ANONYMOUS, 1: /dev/zero,
 *                                  2: filled by children that exit),
 *                                  each MiB dropped from the page table
 *                                  (MADV_DONTNEED) once written; prints
 *                                  "dropped N", then waits
 *   budget_hog shrefused N MIB MS  N threads, one after the other, each
 *                                  mapping MIB MiB shared anonymous over
 *                                  a mapping (MAP_FIXED_NOREPLACE: the
 *                                  kernel refuses it), then waiting in
 *                                  pause, MS ms after the start; MS ms
 *                                  later "refused N", exit 0
 *   budget_hog shchurn N MIB       N times: MIB MiB of shared anonymous
 *                                  memory mapped, one page written,
 *                                  unmapped; prints "churned N"
 *   budget_hog shswap MS MIB D     for MS ms (and on, up to 6 x MS, until
 *                                  it kept 8: the race is won less often
 *                                  on a loaded machine), one thread maps MIB MiB
 *                                  MAP_SHARED from fd 100 and keeps each
 *                                  mapping of /dev/zero (filled, then
 *                                  dropped but a page), while another
 *                                  swaps fd 100 between a file and
 *                                  /dev/zero; D small shared anonymous
 *                                  objects are made first and one is
 *                                  unmapped per mapping kept (decoys for
 *                                  a count); prints "kept N". A fifth
 *                                  argument 1: the swapper is a process
 *                                  sharing the fd table and memory
 *                                  (clone(CLONE_VM | CLONE_FILES)), not
 *                                  a thread; 2: the /dev/zero is stdin,
 *                                  the program opens none; 3: it comes
 *                                  by SCM_RIGHTS from whoever listens
 *                                  at ./zsock; 4: through a stream pair
 *                                  whose one end ./zpid names ("PID
 *                                  FD") for a process outside to take
 *   budget_hog memfd MIB COUNT     COUNT memfds of MIB MiB each, written,
 *                                  never mapped
 *   budget_hog badclone N          N clones the kernel refuses (EINVAL),
 *                                  then one fork; prints "badclone ok" when
 *                                  the fork worked
 *   budget_hog zombies MAX         forks MAX children that exit at once and
 *                                  are never waited for (zombies)
 *   budget_hog untraced X          one clone(CLONE_UNTRACED); prints
 *                                  "untraced: ok" or the errno's name
 *   budget_hog cpukill N MS        N times: a child burns CPU, and is
 *                                  SIGKILLed by its parent after MS ms
 *   budget_hog cpuauto N MS        N times: a child burns MS ms of CPU and
 *                                  exits, with SIGCHLD ignored (autoreap)
 *   budget_hog memzombie MIB       the main thread exits (pthread_exit); a
 *                                  thread touches MIB MiB and waits
 *   budget_hog hidden KIB          writes KIB KiB under h/, then makes h
 *                                  unreadable (chmod 000) and waits
 *   budget_hog memburst MIB HOW    touches MIB MiB of huge pages as fast as
 *                                  the kernel allows (MADV_HUGEPAGE), then
 *                                  at once: HOW 0 exits 0, HOW 1 execs
 *                                  /bin/true, HOW 2 unmaps it, sleeps
 *                                  200 ms and exits 0; prints nothing
 *   budget_hog memforked MIB PROCS GROW  touches MIB MiB of private memory,
 *                                  then forks into PROCS processes sharing
 *                                  it (RSS sum PROCS x MIB, PSS ~MIB);
 *                                  after 2 s each child touches GROW MiB of
 *                                  its own (0: none), then all wait
 *   budget_hog memvm MIB PROCS GROW  touches MIB MiB, then makes PROCS-1
 *                                  processes sharing its address space
 *                                  (clone(CLONE_VM), as posix_spawn's
 *                                  child); prints "shared PROCS", then
 *                                  touches GROW MiB more of that one
 *                                  address space and waits
 *
 * Every mode prints what it managed on stdout ("made N") as it goes,
 * unbuffered, and then waits (pause) so corral, not the program, ends the
 * run. Caps are the program's own: run natively it stops at MAX. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

struct shared {
	atomic_long forks;	/* fork attempts made, all processes */
	atomic_long alive;	/* tasks alive now (race mode) */
	atomic_long peak;
	atomic_long eagain;
};

static struct shared *sh;

static void hold(void)
{
	for (;;)
		pause();
}

static void note_alive(long d)
{
	long now = atomic_fetch_add(&sh->alive, d) + d;
	long p = atomic_load(&sh->peak);

	while (now > p) {
		if (atomic_compare_exchange_weak(&sh->peak, &p, now)) {
			printf("peak %ld\n", now);
			break;
		}
	}
}

static void fork_bomb(long max)
{
	for (;;) {
		pid_t c;

		if (atomic_fetch_add(&sh->forks, 1) >= max)
			hold();
		c = fork();
		if (c < 0) {
			atomic_fetch_add(&sh->eagain, 1);
			usleep(1000);
		}
		/* parent and child both go on forking */
	}
}

static void *sleeper(void *arg)
{
	hold();
	return NULL;
}

static void thread_bomb(long max)
{
	long made = 0;
	pthread_attr_t a;

	/* Small stacks: the bomb is about tasks, not the memory backstop. */
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	for (; made < max; made++) {
		pthread_t t;

		if (pthread_create(&t, &a, sleeper, NULL))
			break;
	}
	printf("made %ld\n", made);
	hold();
}

static long race_keep, race_n;

static void *racer(void *arg)
{
	long live = 0;

	for (long i = 0; i < race_n; i++) {
		pid_t c;

		while (live >= race_keep) {
			if (waitpid(-1, NULL, __WALL) > 0)
				live--;
			else
				break;
		}
		c = fork();
		if (c == 0) {
			note_alive(1);
			usleep(2000);
			note_alive(-1);
			_exit(0);
		}
		if (c > 0)
			live++;
		else
			atomic_fetch_add(&sh->eagain, 1);
	}
	return NULL;
}

static void race(long threads, long keep, long n)
{
	pthread_t t[64];

	race_keep = keep;
	race_n = n;
	if (threads > 64)
		threads = 64;
	note_alive(1 + threads);	/* this process's threads */
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, racer, NULL);
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	while (waitpid(-1, NULL, 0) > 0)
		;
	printf("peak %ld eagain %ld\n", atomic_load(&sh->peak),
	       atomic_load(&sh->eagain));
}

static void touch(long mib)
{
	long done = 0;

	for (; done < mib; done++) {
		char *p = malloc(1 << 20);

		if (!p)
			break;
		memset(p, 1, 1 << 20);
	}
	printf("touched %ld\n", done);
	hold();
}

static void mem(long mib, long procs)
{
	for (long i = 1; i < procs; i++)
		if (fork() == 0)
			touch(mib);
	touch(mib);
}

/* MIB MiB of private memory, touched (exits on failure). */
static void touch_private(long mib)
{
	size_t len = (size_t)mib << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		exit(1);
	memset(p, 1, len);
}

static void memforked(long mib, long procs, long grow)
{
	touch_private(mib);
	for (long i = 1; i < procs; i++) {
		if (fork() != 0)
			continue;
		if (grow > 0) {
			char *q;

			sleep(2);
			q = mmap(NULL, (size_t)grow << 20,
				 PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (q != MAP_FAILED)
				memset(q, 2, (size_t)grow << 20);
		}
		hold();
	}
	printf("forked %ld\n", procs);
	hold();
}

static int vm_child(void *arg)
{
	(void)arg;
	hold();
	return 0;
}

static void memvm(long mib, long procs, long grow)
{
	touch_private(mib);
	for (long i = 1; i < procs; i++) {
		char *stk = malloc(64 << 10);

		if (!stk || clone(vm_child, stk + (64 << 10),
				  CLONE_VM | SIGCHLD, NULL) < 0)
			exit(1);
	}
	printf("shared %ld\n", procs);
	if (grow > 0)
		touch_private(grow);
	hold();
}

static void cpu(long procs)
{
	volatile unsigned long x = 0;

	for (long i = 1; i < procs; i++)
		if (fork() == 0)
			break;
	for (;;)
		x++;
}

static pthread_mutex_t spin_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t spin_cv = PTHREAD_COND_INITIALIZER;
static bool spin_go;

static void *spinner(void *arg)
{
	volatile unsigned long x = 0;

	(void)arg;
	pthread_mutex_lock(&spin_mu);
	while (!spin_go)
		pthread_cond_wait(&spin_cv, &spin_mu);
	pthread_mutex_unlock(&spin_mu);
	for (;;)
		x++;
	return NULL;
}

/* Many runnable threads at once: made while none of them runs (each
 * blocks until all exist), then all spinning. */
static void spinners(long n)
{
	pthread_attr_t a;
	long made = 0;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	for (; made < n; made++) {
		pthread_t t;

		if (pthread_create(&t, &a, spinner, NULL))
			break;
	}
	printf("made %ld\n", made);
	pthread_mutex_lock(&spin_mu);
	spin_go = true;
	pthread_cond_broadcast(&spin_cv);
	pthread_mutex_unlock(&spin_mu);
	spinner(NULL);
}

static void bigfile(long mib)
{
	static char buf[1 << 20];
	int fd = open("big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	long done = 0;

	memset(buf, 'x', sizeof(buf));
	signal(SIGXFSZ, SIG_IGN);	/* see EFBIG instead of dying */
	for (; fd >= 0 && done < mib; done++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			break;
	printf("wrote %ld\n", done);
	hold();
}

static void smallfiles(long n, long bytes)
{
	char *buf = calloc(1, (size_t)bytes + 1);
	long done = 0;

	memset(buf, 'y', (size_t)bytes);
	mkdir("d", 0755);
	for (; done < n; done++) {
		char name[64];
		int fd;

		snprintf(name, sizeof(name), "d/%ld", done);
		fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			break;
		if (bytes && write(fd, buf, (size_t)bytes) != bytes) {
			close(fd);
			break;
		}
		close(fd);
	}
	printf("made %ld\n", done);
	hold();
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep until `done` units at `rate` per second are due since t0. */
static void pace(double t0, long done, long rate)
{
	double due = t0 + (double)done / (double)rate, now = now_s();

	if (rate > 0 && due > now)
		usleep((useconds_t)((due - now) * 1e6));
}

static void memrate(long mib, long rate, long procs)
{
	double t0;
	long done = 0;

	for (long i = 1; i < procs; i++)
		if (fork() == 0)
			break;
	t0 = now_s();
	for (; done < mib; done++) {
		char *p = malloc(1 << 20);

		if (!p)
			break;
		memset(p, 1, 1 << 20);
		pace(t0, done + 1, rate);
	}
	hold();
}

static void diskrate(long mib, long rate)
{
	static char buf[1 << 20];
	int fd = open("big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	double t0 = now_s();

	memset(buf, 'x', sizeof(buf));
	signal(SIGXFSZ, SIG_IGN);
	for (long done = 0; fd >= 0 && done < mib; done++) {
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			break;
		pace(t0, done + 1, rate);
	}
	hold();
}

static void filesrate(long n, long rate)
{
	double t0 = now_s();

	mkdir("d", 0755);
	for (long done = 0; done < n; done++) {
		char name[64];
		int fd;

		snprintf(name, sizeof(name), "d/%ld", done);
		fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "z", 1) != 1)
			break;
		close(fd);
		pace(t0, done + 1, rate);
	}
	hold();
}

static void unlinked(long mib, long count)
{
	static char buf[1 << 20];
	long done = 0;

	memset(buf, 'u', sizeof(buf));
	signal(SIGXFSZ, SIG_IGN);
	for (long i = 0; i < count; i++) {
		int fd = open("gone", O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			break;
		unlink("gone");
		for (long m = 0; m < mib; m++, done++)
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				break;
		/* fd stays open */
	}
	printf("unlinked %ld\n", done);
	hold();
}

static void memshared(long mib)
{
	char *p = mmap(NULL, (size_t)mib << 20, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long done = 0;

	for (; p != MAP_FAILED && done < mib; done++)
		memset(p + (done << 20), 1, 1 << 20);
	printf("touched %ld\n", done);
	hold();
}

static void shdrop(long mib, long how)
{
	size_t len = (size_t)mib << 20;
	int fd = how == 1 ? open("/dev/zero", O_RDWR) : -1;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       how == 1 ? MAP_SHARED : MAP_SHARED | MAP_ANONYMOUS, fd, 0);
	long done = 0;

	if (fd >= 0)
		close(fd);
	for (; p != MAP_FAILED && done < mib; done++) {
		char *c = p + ((size_t)done << 20);

		if (how == 2) {
			pid_t k = fork();

			if (k == 0) {
				memset(c, 1, 1 << 20);
				_exit(0);
			}
			if (k < 0 || waitpid(k, NULL, 0) < 0)
				break;
		} else {
			memset(c, 1, 1 << 20);
			madvise(c, 1 << 20, MADV_DONTNEED);
		}
	}
	printf("dropped %ld\n", done);
	fflush(stdout);
	hold();
}

/* shrefused: each thread's one shared mapping refused by the kernel
 * (MAP_FIXED_NOREPLACE over a page mapped), then it only waits. */
static char *shrefused_at;
static long shrefused_len;

static void *shrefused_thread(void *arg)
{
	(void)arg;
	if (mmap(shrefused_at, (size_t)shrefused_len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) !=
	    MAP_FAILED)
		exit(4);
	for (;;)
		pause();
	return NULL;
}

/* Whether thread tid waits in pause (its /proc syscall line). */
static bool shrefused_waits(pid_t tid)
{
	char path[64], b[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return false;
	b[n] = 0;
	return atol(b) == SYS_pause;
}

static _Atomic pid_t shrefused_tid;

static void *shrefused_start(void *arg)
{
	atomic_store(&shrefused_tid, (pid_t)syscall(SYS_gettid));
	return shrefused_thread(arg);
}

static void shrefused(long n, long mib, long ms)
{
	shrefused_len = mib << 20;
	shrefused_at = mmap(NULL, (size_t)shrefused_len, PROT_READ,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shrefused_at == MAP_FAILED)
		exit(1);
	/* The page main() shares is found by a scan first, on its own. */
	usleep((useconds_t)ms * 1000);
	for (long i = 0; i < n; i++) {
		pthread_t th;
		pid_t tid;

		atomic_store(&shrefused_tid, 0);
		if (pthread_create(&th, NULL, shrefused_start, NULL))
			exit(1);
		while (!(tid = atomic_load(&shrefused_tid)))
			usleep(1000);
		while (!shrefused_waits(tid))
			usleep(1000);
	}
	usleep((useconds_t)ms * 1000);
	printf("refused %ld\n", n);
	exit(0);
}

static void shchurn(long n, long mib)
{
	long done = 0;

	for (; done < n; done++) {
		char *p = mmap(NULL, (size_t)mib << 20, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			break;
		p[0] = 1;
		munmap(p, (size_t)mib << 20);
	}
	printf("churned %ld\n", done);
	fflush(stdout);
}

/* shswap: the thread that maps waits in its notification (state S) while
 * corral looks at fd 100, a file; once it leaves that wait, corral has
 * answered, and the swapper puts /dev/zero at 100 before the kernel
 * takes the descriptor (a probing session's race). */
static atomic_int shswap_go, shswap_done, shswap_ret, shswap_stop;
static int shswap_zero, shswap_stat;

static char shswap_state(void)
{
	char b[512], *p;
	ssize_t n = pread(shswap_stat, b, sizeof(b) - 1, 0);

	if (n <= 0)
		return '?';
	b[n] = 0;
	p = strrchr(b, ')');
	return p && p[1] ? p[2] : '?';
}

static void *shswap_swapper(void *arg)
{
	(void)arg;
	while (!atomic_load(&shswap_stop)) {
		bool waited = false;

		if (!atomic_exchange(&shswap_go, 0))
			continue;
		while (!atomic_load(&shswap_ret)) {
			char st = shswap_state();

			if (st == 'S')
				waited = true;
			else if (waited) {
				dup2(shswap_zero, 100);
				break;
			}
		}
		atomic_store(&shswap_done, 1);
	}
	return NULL;
}

static int shswap_proc(void *arg)
{
	shswap_swapper(arg);
	return 0;
}

static bool is_dev_zero(int fd)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
	       major(st.st_rdev) == 1 && minor(st.st_rdev) == 5;
}

/* The fd of a received SCM_RIGHTS message on s, or -1. */
static int fd_from(int s)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd = -1;

	if (recvmsg(s, &m, 0) < 0)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

/* A descriptor from whoever listens at path (SCM_RIGHTS), or -1. */
static int zero_from(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM, 0), fd;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	fd = fd_from(s);
	close(s);
	return fd;
}

/* A stream pair; "PID FD" of one end in ./zpid for a process outside to
 * take it (pidfd_getfd) and send through; what comes on the other end. */
static int zero_through_pair(void)
{
	struct timeval tv = { .tv_sec = 20 };
	int sv[2], fd;
	FILE *f;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 ||
	    setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    !(f = fopen("zpid.tmp", "w")))
		return -1;
	fprintf(f, "%d %d\n", (int)getpid(), sv[0]);
	if (fclose(f) || rename("zpid.tmp", "zpid"))
		return -1;
	fd = fd_from(sv[1]);
	close(sv[0]);
	close(sv[1]);
	return fd;
}

/* Milliseconds since t0. */
static long shswap_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void shswap(long ms, long mib, long decoys, long how)
{
	bool proc = how == 1;
	static char stack[1 << 16] __attribute__((aligned(16)));
	pid_t swapper = -1;
	size_t len = (size_t)mib << 20;
	int file = open("swapfile", O_RDWR | O_CREAT, 0600);
	char path[64], *decoy[64];
	struct timespec t0;
	pthread_t th;
	long kept = 0, nd = 0, el;

	shswap_zero = how == 2 ? dup(0) : how == 3 ? zero_from("zsock") :
		      how == 4 ? zero_through_pair() : open("/dev/zero", O_RDWR);
	if (how >= 2 && !is_dev_zero(shswap_zero))
		exit(3);
	snprintf(path, sizeof(path), "/proc/self/task/%ld/stat",
		 (long)syscall(SYS_gettid));
	shswap_stat = open(path, O_RDONLY);
	if (file < 0 || shswap_zero < 0 || shswap_stat < 0 ||
	    ftruncate(file, (off_t)len) < 0)
		exit(1);
	for (; nd < decoys && nd < 64; nd++) {
		decoy[nd] = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (decoy[nd] == MAP_FAILED)
			exit(1);
		decoy[nd][0] = 1;
	}
	if (proc) {
		swapper = clone(shswap_proc, stack + sizeof(stack),
				CLONE_VM | CLONE_FILES | SIGCHLD, NULL);
		if (swapper < 0)
			exit(1);
	} else if (pthread_create(&th, NULL, shswap_swapper, NULL)) {
		exit(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		char *p;

		dup2(file, 100);
		atomic_store(&shswap_ret, 0);
		atomic_store(&shswap_done, 0);
		atomic_store(&shswap_go, 1);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, 100, 0);
		atomic_store(&shswap_ret, 1);
		while (!atomic_load(&shswap_done))
			;
		if (p == MAP_FAILED)
			continue;
		/* The file was truncated to its size: zeros in either case;
		 * /dev/zero's is told by the file not changing. */
		p[0] = 'x';
		if (pread(file, path, 1, 0) == 1 && path[0] != 'x') {
			memset(p, 1, len);
			madvise(p + 4096, len - 4096, MADV_DONTNEED);
			kept++;
			if (nd > 0)
				munmap(decoy[--nd], 4096);
		} else {
			p[0] = 0;
			munmap(p, len);
		}
	} while ((el = shswap_ms(&t0)) < ms || (kept < 8 && el < 6 * ms));
	atomic_store(&shswap_stop, 1);
	if (proc)
		waitpid(swapper, NULL, 0);
	else
		pthread_join(th, NULL);
	printf("kept %ld\n", kept);
	fflush(stdout);
	hold();
}

static void memfds(long mib, long count)
{
	static char buf[1 << 20];
	long done = 0;

	memset(buf, 'm', sizeof(buf));
	signal(SIGXFSZ, SIG_IGN);
	for (long i = 0; i < count; i++) {
		int fd = memfd_create("hog", 0);

		for (long m = 0; fd >= 0 && m < mib; m++, done++)
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				break;
	}
	printf("memfd %ld\n", done);
	hold();
}

static void badclone(long n)
{
	long einval = 0;
	pid_t c;

	/* CLONE_THREAD without CLONE_SIGHAND and CLONE_VM: EINVAL from the
	 * kernel, after corral has reserved a slot for it. */
	for (long i = 0; i < n; i++)
		if (syscall(SYS_clone, CLONE_THREAD | SIGCHLD, 0, 0, 0, 0) < 0 &&
		    errno == EINVAL)
			einval++;
	c = fork();
	if (c == 0)
		_exit(0);
	if (c > 0)
		waitpid(c, NULL, 0);
	printf("badclone %s einval %ld\n", c > 0 ? "ok" : strerrorname_np(errno),
	       einval);
}

static void zombies(long max)
{
	long made = 0;

	for (; made < max; made++) {
		pid_t c = fork();

		if (c == 0)
			_exit(0);
		if (c < 0)
			break;
	}
	printf("zombies %ld\n", made);
	hold();
}

static void untraced(void)
{
	long rc = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0);

	if (rc == 0)
		_exit(0);
	if (rc > 0)
		waitpid((pid_t)rc, NULL, 0);
	printf("untraced: %s\n", rc < 0 ? strerrorname_np(errno) : "ok");
}

static void burn(double secs)
{
	struct timespec ts;
	double end;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + secs;
	for (;;) {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 >= end)
			return;
	}
}

static void cpukill(long n, long ms, bool autoreap)
{
	if (autoreap)
		signal(SIGCHLD, SIG_IGN);
	for (long i = 0; i < n; i++) {
		pid_t c = fork();

		if (c == 0) {
			if (autoreap) {
				burn((double)ms / 1000);
				_exit(0);
			}
			for (;;)
				;
		}
		if (c < 0)
			continue;
		if (autoreap) {
			/* wait for it to be gone without waitpid */
			double t0 = now_s();

			while (kill(c, 0) == 0 && now_s() - t0 < 10)
				usleep(1000);
		} else {
			usleep((useconds_t)ms * 1000);
			kill(c, SIGKILL);
			waitpid(c, NULL, 0);
		}
		printf("round %ld\n", i + 1);
	}
	printf("done\n");
}

static long zombie_mib;

static void *zombie_thread(void *arg)
{
	touch(zombie_mib);
	return NULL;
}

static void memzombie(long mib)
{
	pthread_t t;

	zombie_mib = mib;
	pthread_create(&t, NULL, zombie_thread, NULL);
	pthread_exit(NULL);
}

static void hidden(long kib)
{
	static char buf[1024];
	int fd;

	memset(buf, 'h', sizeof(buf));
	mkdir("h", 0755);
	fd = open("h/f", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (long i = 0; fd >= 0 && i < kib; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			break;
	close(fd);
	chmod("h", 0);
	printf("hidden\n");
	hold();
}

/* A burst shorter than a tick: ~7 ms for 110 MiB here with huge pages. */
static void memburst(long mib, long how)
{
	size_t n = (size_t)mib << 20, huge = 2UL << 20;
	char *p = mmap(NULL, n + huge, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		exit(3);
	char *q = (char *)(((unsigned long)p + huge - 1) & ~(huge - 1));

	madvise(q, n, MADV_HUGEPAGE);
	for (size_t i = 0; i < n; i += 4096)
		q[i] = 1;
	if (how == 2) {
		munmap(p, n + huge);
		usleep(200000);
	}
	if (how == 1) {
		execl("/bin/true", "true", (char *)NULL);
		exit(4);
	}
	exit(0);
}

int main(int argc, char **argv)
{
	long a = argc > 2 ? atol(argv[2]) : 0;
	long b = argc > 3 ? atol(argv[3]) : 0;
	long c = argc > 4 ? atol(argv[4]) : 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || argc < 3) {
		fprintf(stderr, "usage: see the comment at the top\n");
		return 2;
	}
	if (!strcmp(argv[1], "fork"))
		fork_bomb(a);
	else if (!strcmp(argv[1], "threads"))
		thread_bomb(a);
	else if (!strcmp(argv[1], "race"))
		race(a, b, c);
	else if (!strcmp(argv[1], "mem"))
		mem(a, b > 0 ? b : 1);
	else if (!strcmp(argv[1], "cpu"))
		cpu(a);
	else if (!strcmp(argv[1], "spinners"))
		spinners(a);
	else if (!strcmp(argv[1], "bigfile"))
		bigfile(a);
	else if (!strcmp(argv[1], "smallfiles"))
		smallfiles(a, b);
	else if (!strcmp(argv[1], "memrate"))
		memrate(a, b, c > 0 ? c : 1);
	else if (!strcmp(argv[1], "diskrate"))
		diskrate(a, b);
	else if (!strcmp(argv[1], "filesrate"))
		filesrate(a, b);
	else if (!strcmp(argv[1], "unlinked"))
		unlinked(a, b);
	else if (!strcmp(argv[1], "memshared"))
		memshared(a);
	else if (!strcmp(argv[1], "shdrop"))
		shdrop(a, b);
	else if (!strcmp(argv[1], "shrefused"))
		shrefused(a, b, c);
	else if (!strcmp(argv[1], "shchurn"))
		shchurn(a, b);
	else if (!strcmp(argv[1], "shswap"))
		shswap(a, b, c, argc > 5 ? atol(argv[5]) : 0);

	else if (!strcmp(argv[1], "memfd"))
		memfds(a, b);
	else if (!strcmp(argv[1], "badclone"))
		badclone(a);
	else if (!strcmp(argv[1], "zombies"))
		zombies(a);
	else if (!strcmp(argv[1], "untraced"))
		untraced();
	else if (!strcmp(argv[1], "cpukill"))
		cpukill(a, b, false);
	else if (!strcmp(argv[1], "cpuauto"))
		cpukill(a, b, true);
	else if (!strcmp(argv[1], "memzombie"))
		memzombie(a);
	else if (!strcmp(argv[1], "hidden"))
		hidden(a);
	else if (!strcmp(argv[1], "memburst"))
		memburst(a, b);
	else if (!strcmp(argv[1], "memforked"))
		memforked(a, b, c);
	else if (!strcmp(argv[1], "memvm"))
		memvm(a, b, c);
	else
		return 2;
	return 0;
}
