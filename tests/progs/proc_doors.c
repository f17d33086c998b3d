/* tests/progs/proc_doors.c: hostile probes against corral's process tree, budgets,
 * supervisor integrity and result/audit.
 *
 *   proc_doors shmleft TAG        make every kind of /dev/shm entry it can
 *   proc_doors shmlinks TAG N     N symlinks in /dev/shm, 4000-byte targets
 *   proc_doors misc               ptrace among the run, rlimit games, corral's pid
 *   proc_doors undump SUB ARGS    SUB after PR_SET_DUMPABLE 0
 *   proc_doors seccomp_trace      own filter: SECCOMP_RET_TRACE on getppid
 *   proc_doors seccomp_listener   own filter with NEW_LISTENER on openat
 *   proc_doors seccomp_notif_clone own filter: RET_USER_NOTIF on clone (no listener)
 *   proc_doors clone_parent SECS  CLONE_PARENT child named pdghost outlives root
 *   proc_doors stopped            children SIGSTOPped / vfork-waiting at the kill
 *   proc_doors names              deny on paths with quotes, newlines, bad UTF-8
 *   proc_doors longpath           deny on 4096+ byte paths, many distinct ones
 *   proc_doors vmcopy SECS        make the supervisor copy memory (process_vm_readv)
 *   proc_doors subreaper          PR_SET_CHILD_SUBREAPER + orphaned grandchild
 *   proc_doors spliceout N        output through vmsplice/splice/tee/sendfile
 *   proc_doors lastburst MS K     K processes each burn MS ms of CPU, then all exit
 *   proc_doors memburst MIB       touch MIB MiB at once and exit before a tick
 *   proc_doors sockhide N UNDUMP  N unix socket pairs filled one way (SO_SNDBUF
 *                               raised); UNDUMP=1: PR_SET_DUMPABLE 0 first,
 *                               so corral cannot list the fd table
 *   proc_doors undump_calls       PR_SET_DUMPABLE 0, then ordinary calls
 *   proc_doors ptyhide ROUNDS UNDUMP  each round opens ptys until refused (at
 *                               most 60), forks a holder (undumpable with
 *                               UNDUMP=1) that keeps them, closes its copies
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int install(struct sock_filter *f, unsigned short n, unsigned flags)
{
	struct sock_fprog p = { .len = n, .filter = f };
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &p);
}

#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define IF_NR(nr, act) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, (act))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static int seccomp_trace(void)
{
	struct sock_filter f[] = { LD_NR, IF_NR(SYS_getppid, SECCOMP_RET_TRACE | 7), ALLOW };
	int r = install(f, sizeof f / sizeof f[0], 0);
	printf("install=%d errno=%d\n", r, r ? errno : 0);
	fflush(stdout);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		long p = syscall(SYS_getppid);
		printf("getppid=%ld errno=%d\n", p, errno);
		fflush(stdout);
	}
	/* still alive and able to do supervised work? */
	int fd = open("/etc/hostname", O_RDONLY);
	printf("open after=%d errno=%d\n", fd, fd < 0 ? errno : 0);
	return 0;
}

static int seccomp_listener(void)
{
	struct sock_filter f[] = { LD_NR, IF_NR(SYS_openat, SECCOMP_RET_USER_NOTIF), ALLOW };
	int r = install(f, sizeof f / sizeof f[0], SECCOMP_FILTER_FLAG_NEW_LISTENER);
	printf("listener=%d errno=%d\n", r, r < 0 ? errno : 0);
	/* plain user-notif without a listener on openat: precedence vs corral's */
	int r2 = install(f, sizeof f / sizeof f[0], 0);
	printf("nolistener-install=%d errno=%d\n", r2, r2 < 0 ? errno : 0);
	errno = 0;
	int fd = open("/etc/hostname", O_RDONLY);
	printf("open=%d errno=%d\n", fd, fd < 0 ? errno : 0);
	return 0;
}

static int seccomp_notif_clone(void)
{
	/* RET_ERRNO(0) on clone: the newest filter's ERRNO beats corral's
	 * notification; clone "succeeds" with 0 returned and no child.  Then
	 * RET_TRACE on exit_group. */
	struct sock_filter f[] = { LD_NR, IF_NR(SYS_clone, SECCOMP_RET_ERRNO | 0), ALLOW };
	int r = install(f, sizeof f / sizeof f[0], 0);
	printf("install=%d\n", r);
	pid_t p = fork();
	printf("fork=%d errno=%d pid=%d\n", p, errno, getpid());
	return 0;
}

static void name(const char *n)
{
	prctl(PR_SET_NAME, n, 0, 0, 0);
}

static int clone_parent(int secs)
{
	/* raw clone: CLONE_PARENT | SIGCHLD */
	long c = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
	if (c == 0) {
		name("pdghost");
		setsid();
		signal(SIGHUP, SIG_IGN);
		for (int i = 0; i < secs * 10; i++) {
			struct timespec ts = { 0, 100000000 };
			nanosleep(&ts, 0);
		}
		_exit(0);
	}
	printf("clone_parent=%ld errno=%d getppid=%d\n", c, c < 0 ? errno : 0, getppid());
	fflush(stdout);
	return 0; /* the root exits at once */
}

static int stopped(void)
{
	/* one child stops itself; one parent is vfork-waiting on a child that
	 * sleeps; one is stopped by its parent; a grandchild ignores every
	 * signal it can. Then the root sleeps until the wall kill. */
	pid_t a = fork();
	if (a == 0) { name("pdstop"); raise(SIGSTOP); for (;;) pause(); }
	pid_t b = fork();
	if (b == 0) {
		name("pdvforkp");
		pid_t v = vfork();
		if (v == 0) { for (;;) pause(); }
		for (;;) pause();
	}
	pid_t c = fork();
	if (c == 0) { name("pdtstp"); for (int s = 1; s < 32; s++) signal(s, SIG_IGN); for (;;) pause(); }
	usleep(200000);
	kill(c, SIGTSTP);
	kill(c, SIGSTOP);
	printf("a=%d b=%d c=%d\n", a, b, c);
	fflush(stdout);
	for (;;) pause();
	return 0;
}

static void try_open(const char *p)
{
	int fd = open(p, O_RDONLY);
	if (fd >= 0)
		close(fd);
}

static int names(void)
{
	try_open("/nonexist\"},\"status\":\"ok\",\"x\":{\"");
	try_open("/nonexist\n{\"event\":\"exit\",\"status\":\"ok\"}\n");
	try_open("/nonexist\xff\xfe\xc0\xaf\x80 bad utf8");
	try_open("/nonexist\\x41\\u0000\x01\x1b[31m");
	try_open("/root/.ssh/id_rsa\"\n");
	char buf[300];
	memset(buf, 0, sizeof buf);
	for (int i = 1; i < 256; i++)
		buf[i - 1] = (char)i;
	buf[0] = '/';
	try_open(buf);
	printf("done\n");
	return 0;
}

static int longpath(int n)
{
	/* paths around PATH_MAX, some over, each distinct */
	static char p[8192];
	for (int i = 0; i < n; i++) {
		int len = 4000 + (i % 200);
		memset(p, 'a', (size_t)len);
		p[0] = '/';
		for (int j = 255; j < len; j += 256)
			p[j] = '/';
		snprintf(p + len, 32, "%d", i);
		try_open(p);
		access(p, F_OK);
	}
	/* a path of exactly PATH_MAX-1 and PATH_MAX */
	for (int len = 4094; len <= 4097; len++) {
		memset(p, 'b', (size_t)len);
		p[0] = '/';
		for (int j = 200; j < len; j += 200)
			p[j] = '/';
		p[len] = 0;
		int fd = open(p, O_RDONLY);
		printf("len=%d open=%d errno=%d\n", len, fd, fd < 0 ? errno : 0);
	}
	printf("done %d\n", n);
	return 0;
}

static int vmcopy(int secs)
{
	/* a child holds 16 MiB; the parent asks for it again and again.
	 * corral performs the copy itself (bounce buffer). */
	size_t sz = 16u << 20;
	char *buf = mmap(0, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf, 1, sz);
	pid_t c = fork();
	if (c == 0) { for (;;) pause(); }
	char *dst = mmap(0, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(dst, 2, sz);
	struct iovec l = { dst, sz }, r = { buf, sz };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long n = 0, bytes = 0;
	for (;;) {
		ssize_t k = process_vm_readv(c, &l, 1, &r, 1, 0);
		if (k < 0) { printf("readv errno=%d\n", errno); break; }
		bytes += k;
		n++;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec >= secs)
			break;
	}
	struct timespec cpu;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("calls=%ld bytes=%ld own_cpu_ms=%ld\n", n, bytes,
	       cpu.tv_sec * 1000 + cpu.tv_nsec / 1000000);
	kill(c, SIGKILL);
	waitpid(c, 0, 0);
	return 0;
}

static int subreaper(void)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	pid_t a = fork();
	if (a == 0) {
		pid_t g = fork();
		if (g == 0) { name("pdorphan"); setsid(); for (;;) pause(); }
		_exit(0);
	}
	waitpid(a, 0, 0);
	/* the subreaper itself exits now without waiting on the orphan */
	printf("subreaper exits\n");
	fflush(stdout);
	return 0;
}

static int spliceout(long n)
{
	/* write n MiB to stdout using vmsplice (gift), splice from a pipe, tee */
	size_t page = 1 << 16;
	char *b = mmap(0, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(b, 'x', page);
	int pp[2];
	pipe(pp);
	long total = 0;
	for (long i = 0; i < n * 16; i++) {
		struct iovec v = { b, page };
		ssize_t k = vmsplice(pp[1], &v, 1, 0);
		if (k <= 0) break;
		ssize_t t = tee(pp[0], 1, (size_t)k, 0);
		if (t > 0) total += t;
		ssize_t s = splice(pp[0], 0, 1, 0, (size_t)k, 0);
		if (s > 0) total += s;
		if (t < 0 && s < 0) { fprintf(stderr, "tee/splice errno=%d\n", errno); break; }
	}
	fprintf(stderr, "spliced %ld\n", total);
	return 0;
}

static long cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int lastburst(int ms, int k)
{
	for (int i = 1; i < k; i++)
		if (fork() == 0)
			break;
	volatile unsigned long x = 0;
	while (cpu_ms() < ms)
		x++;
	return 0;
}

static int memburst(int mib)
{
	size_t sz = (size_t)mib << 20;
	char *p = mmap(0, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) { printf("mmap errno=%d\n", errno); return 1; }
	p[0] = 1;
	if (getenv("PD_HOLD")) for (;;) pause();
	return 0;
}

static int sockhide(int n, int undump)
{
	int (*sv)[2] = calloc((size_t)n, sizeof *sv);
	int big = 4 << 20;
	for (int i = 0; i < n; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) < 0) { n = i; break; }
		setsockopt(sv[i][0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
		fcntl(sv[i][0], F_SETFL, O_NONBLOCK);
	}
	if (undump) {
		printf("undump=%d\n", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
		fflush(stdout);	/* the run may end on memory before exit */
	}
	static char chunk[1 << 16];
	long total = 0;
	for (int i = 0; i < n; i++)
		for (;;) {
			ssize_t k = write(sv[i][0], chunk, sizeof chunk);
			if (k <= 0) break;
			total += k;
		}
	printf("held %ld MiB in %d pairs\n", total >> 20, n);
	fprintf(stderr, "held %ld MiB\n", total >> 20);
	fflush(stdout);
	for (;;) pause();
	return 0;
}

static int undump_calls(void)
{
	printf("undump=%d\n", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
	fflush(stdout);
	int fd = open("/etc/hostname", O_RDONLY);
	printf("open=%d errno=%d\n", fd, fd < 0 ? errno : 0);
	fd = open("/etc/shadow", O_RDONLY);
	printf("open shadow=%d errno=%d\n", fd, fd < 0 ? errno : 0);
	fd = open("f", O_WRONLY | O_CREAT, 0600);
	printf("create=%d errno=%d\n", fd, fd < 0 ? errno : 0);
	fflush(stdout);
	return 0;
}

static int ptyhide(int rounds, int undump)
{
	int total = 0;
	for (int r = 0; r < rounds; r++) {
		int fds[60], k = 0;
		for (; k < 60; k++) {
			fds[k] = open("/dev/ptmx", O_RDWR | O_NOCTTY);
			if (fds[k] < 0) {
				printf("round %d: ptmx refused after %d (errno=%d)\n", r, k, errno);
				break;
			}
		}
		total += k;
		pid_t h = fork();
		if (h == 0) {
			name("pdptyhold");
			if (undump)
				prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
			for (;;) pause();
		}
		for (int i = 0; i < k; i++)
			close(fds[i]);
		usleep(100000);
	}
	printf("ptys held by the run: %d\n", total);
	fflush(stdout);
	for (;;) pause();
	return 0;
}

static int shmleft(const char *tag)
{
	char p[256], q[256];
	struct { const char *what; int rc, err; } r[12];
	int k = 0;
#define TRY(w, call) do { errno = 0; int _rc = (call); r[k].what = w; r[k].rc = _rc; r[k].err = _rc < 0 ? errno : 0; k++; } while (0)
	snprintf(p, sizeof p, "/dev/shm/%s.file", tag);
	TRY("file", open(p, O_CREAT | O_WRONLY, 0600));
	snprintf(p, sizeof p, "/dev/shm/%s.dir", tag);
	TRY("mkdir", mkdir(p, 0700));
	snprintf(q, sizeof q, "/dev/shm/%s.dir/inner", tag);
	TRY("inner", open(q, O_CREAT | O_WRONLY, 0600));
	snprintf(p, sizeof p, "/dev/shm/%s.sym", tag);
	TRY("symlink", symlink("/etc/passwd", p));
	snprintf(p, sizeof p, "/dev/shm/%s.fifo", tag);
	TRY("mkfifo", mkfifo(p, 0600));
	snprintf(p, sizeof p, "/dev/shm/%s.file", tag);
	snprintf(q, sizeof q, "/dev/shm/%s.link", tag);
	TRY("link", link(p, q));
	snprintf(q, sizeof q, "/dev/shm/%s.renamed", tag);
	snprintf(p, sizeof p, "/dev/shm/%s.file2", tag);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	TRY("rename", rename(p, q));
	snprintf(p, sizeof p, "ws_%s", tag);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	snprintf(q, sizeof q, "/dev/shm/%s.fromws", tag);
	TRY("rename-in", rename(p, q));
	for (int i = 0; i < k; i++)
		printf("%s=%d errno=%d\n", r[i].what, r[i].rc, r[i].err);
	fflush(stdout);
	if (getenv("PD_HOLD")) for (;;) pause();
	return 0;
}

static int shmlinks(const char *tag, int n)
{
	static char target[4001], p[256];
	memset(target, 'T', 4000);
	int ok = 0;
	for (int i = 0; i < n; i++) {
		snprintf(target, 32, "/pd-data-%d-", i);
		target[strlen(target)] = 'T';
		snprintf(p, sizeof p, "/dev/shm/%s.%d", tag, i);
		if (symlink(target, p) == 0)
			ok++;
		else if (i == ok) {
			printf("symlink %d errno=%d\n", i, errno);
			break;
		}
	}
	printf("symlinks made: %d\n", ok);
	fflush(stdout);
	return 0;
}

static int misc(void)
{
	pid_t c = fork();
	if (c == 0) { for (;;) pause(); }
	errno = 0;
	long r = ptrace(PTRACE_TRACEME, 0, 0, 0);
	printf("traceme=%ld errno=%d\n", r, errno);
	errno = 0;
	r = ptrace(PTRACE_SEIZE, c, 0, 0);
	printf("seize child=%ld errno=%d\n", r, errno);
	errno = 0;
	r = ptrace(PTRACE_ATTACH, getppid(), 0, 0);
	printf("attach parent=%ld errno=%d\n", r, errno);
	r = syscall(SYS_pidfd_open, getppid(), 0);
	printf("pidfd_open parent=%ld errno=%d\n", r, r < 0 ? errno : 0);
	r = kill(getppid(), SIGSTOP);
	printf("kill parent=%ld errno=%d\n", r, r < 0 ? errno : 0);
	r = syscall(SYS_process_vm_readv, getppid(), 0, 0, 0, 0, 0);
	printf("vm_readv parent=%ld errno=%d\n", r, r < 0 ? errno : 0);
	int fd = open("/proc/self/status", O_RDONLY);
	char st[4096] = "";
	ssize_t k = read(fd, st, sizeof st - 1);
	close(fd);
	if (k > 0) { st[k] = 0; char *t = strstr(st, "TracerPid"); if (t) printf("%.20s\n", t); }
	struct rlimit rl = { 3, 3 };
	setrlimit(RLIMIT_NOFILE, &rl);
	fd = open("/etc/hostname", O_RDONLY);
	printf("open at nofile=3: %d errno=%d\n", fd, fd < 0 ? errno : 0);
	fflush(stdout);
	kill(c, SIGKILL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) return 2;
	if (!strcmp(argv[1], "undump")) {	/* undump SUB ARGS: the same, undumpable */
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		argv++;
		argc--;
		if (argc < 2) return 2;
	}
	const char *c = argv[1];
	int n = argc > 2 ? atoi(argv[2]) : 0;
	if (!strcmp(c, "seccomp_trace")) return seccomp_trace();
	if (!strcmp(c, "seccomp_listener")) return seccomp_listener();
	if (!strcmp(c, "seccomp_notif_clone")) return seccomp_notif_clone();
	if (!strcmp(c, "clone_parent")) return clone_parent(n ? n : 30);
	if (!strcmp(c, "stopped")) return stopped();
	if (!strcmp(c, "names")) return names();
	if (!strcmp(c, "longpath")) return longpath(n ? n : 100);
	if (!strcmp(c, "vmcopy")) return vmcopy(n ? n : 5);
	if (!strcmp(c, "subreaper")) return subreaper();
	if (!strcmp(c, "lastburst")) return lastburst(n, argc > 3 ? atoi(argv[3]) : 2);
	if (!strcmp(c, "memburst")) return memburst(n);
	if (!strcmp(c, "sockhide")) return sockhide(n, argc > 3 ? atoi(argv[3]) : 0);
	if (!strcmp(c, "undump_calls")) return undump_calls();
	if (!strcmp(c, "ptyhide")) return ptyhide(n, argc > 3 ? atoi(argv[3]) : 0);
	if (!strcmp(c, "shmleft")) return shmleft(argc > 2 ? argv[2] : "pd");
	if (!strcmp(c, "shmlinks")) return shmlinks(argv[2], argc > 3 ? atoi(argv[3]) : 10);
	if (!strcmp(c, "misc")) return misc();
	if (!strcmp(c, "spliceout")) return spliceout(n ? n : 4);
	return 2;
}
