/* tests/progs/thread_doors.c: fd-relative calls from a thread whose fd table
 * is not its leader's, from a thread whose leader exited, and prctl(PR_SCHED_CORE).
 *
 * METHOD makes the thread's own table: "clone" (clone without CLONE_FILES)
 * or "unshare" (a pthread calling close_range(CLOSE_RANGE_UNSHARE)). The
 * leader holds one file at fd number N, the thread another at the same N;
 * the thread then makes the call on N.
 *
 *   thread_doors dnotify METHOD OUT IN   F_NOTIFY on N: thread holds OUT
 *                        (leader IN), then thread IN (leader OUT); and the
 *                        leader's own F_NOTIFY on each (control)
 *   thread_doors dents METHOD IN OTHER   getdents64 on N: thread holds IN,
 *                        leader OTHER; then the leader lists its N
 *   thread_doors fexec METHOD GOOD       execveat(N, "", AT_EMPTY_PATH):
 *                        thread holds a deleted copy of this program,
 *                        leader GOOD (an exec root's file)
 *   thread_doors fexec2 METHOD GOOD      the reverse: thread holds GOOD, the
 *                        leader the deleted copy; GOOD is run as "hello"
 *   thread_doors pidfd METHOD            pidfd_send_signal(N, SIGKILL): thread
 *                        holds child A's pidfd, leader child B's
 *   thread_doors unix METHOD             connect(N) to a listener of the
 *                        workspace: thread holds one socket, leader another
 *   thread_doors cwd OUT NAME            open(NAME) relative to the cwd from a
 *                        thread made without CLONE_FS: it in OUT, the
 *                        leader in the workspace; then the reverse
 *   thread_doors many K METHOD OUT IN    K threads (sharing the table) each
 *                        list "." and stay; then "dnotify" (corral keeps a
 *                        bounded number of threads' pidfds)
 *   thread_doors leader_gone             the main thread exits; a thread
 *                        (sharing the table) lists ".", F_NOTIFY on "."
 *   thread_doors sched_core              prctl(PR_SCHED_CORE) on pid 0,
 *                        the parent, pid 1
 *   thread_doors futex_hash              prctl(PR_FUTEX_HASH) SET_SLOTS of
 *                        1M slots (64 MiB of kernel memory), then GET_SLOTS
 *   thread_doors hello                   prints "hello" (an exec'd image)
 *
 * Output: one line per call, "what ret=R errno=E ...", exit 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

static void rep(const char *what, long ret, int err)
{
	printf("%s ret=%ld errno=%s\n", what, ret,
	       ret < 0 ? strerrorname_np(err) : "0");
	fflush(stdout);
}

/* errno read after the call, not as an argument beside it */
#define REP(w, expr) do { long r_ = (long)(expr); int e_ = errno; rep(w, r_, e_); } while (0)

/* ---- a thread with an fd table of its own ---- */

static void (*body)(void);
static volatile int body_done;
static char stack[1 << 17] __attribute__((aligned(16)));

static int clone_entry(void *arg)
{
	(void)arg;
	body();
	body_done = 1;
	syscall(SYS_exit, 0);
	return 0;
}

static void *unshare_entry(void *arg)
{
	(void)arg;
	/* Unshares the table; closes nothing (no fd is that high). */
	if (syscall(SYS_close_range, ~0U, ~0U, CLOSE_RANGE_UNSHARE) < 0) {
		rep("close_range UNSHARE", -1, errno);
		body_done = 1;
		return NULL;
	}
	body();
	body_done = 1;
	return NULL;
}

/* Run fn in a thread of this process whose fd table is its own; wait. */
static int in_own_table(const char *method, void (*fn)(void))
{
	body = fn;
	body_done = 0;
	if (!strcmp(method, "clone")) {
		long t = clone(clone_entry, stack + sizeof(stack),
			       CLONE_VM | CLONE_FS | CLONE_SIGHAND |
			       CLONE_THREAD | CLONE_SYSVSEM, NULL);

		if (t < 0) {
			rep("clone without CLONE_FILES", t, errno);
			return -1;
		}
	} else {
		pthread_t th;

		if (pthread_create(&th, NULL, unshare_entry, NULL))
			return -1;
		pthread_join(th, NULL);
	}
	while (!body_done)
		usleep(1000);
	usleep(20000);	/* the clone'd thread is past its exit */
	return 0;
}

/* Results of a body, read by the leader (the body runs on the leader's
 * libc state with "clone": it only makes system calls). */
static int N = 100;
static long r_ret;
static int r_err;
static const char *arg_a;

static void put(long ret)
{
	r_ret = ret;
	r_err = ret < 0 ? errno : 0;
}

static int open_dir(const char *p)
{
	return open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* ---- dnotify ---- */

static void notify_on(const char *dir)
{
	int d = open_dir(dir);

	if (d < 0 || dup2(d, N) < 0) {
		put(-1);
		return;
	}
	fcntl(N, F_SETSIG, SIGRTMIN);
	put(fcntl(N, F_NOTIFY, DN_CREATE | DN_DELETE | DN_MULTISHOT));
}

static void notify_a(void)
{
	notify_on(arg_a);
}

static int cmd_dnotify(const char *method, const char *out, const char *in)
{
	int d;

	/* Whatever notifications come are no concern: never let them
	 * end the process. */
	signal(SIGRTMIN, SIG_IGN);
	signal(SIGIO, SIG_IGN);
	d = open_dir(in);
	dup2(d, N);
	arg_a = out;
	if (in_own_table(method, notify_a) == 0)
		rep("thread(OUT) leader(IN) F_NOTIFY", r_ret, r_err);
	d = open_dir(out);
	dup2(d, N);
	arg_a = in;
	if (in_own_table(method, notify_a) == 0)
		rep("thread(IN) leader(OUT) F_NOTIFY", r_ret, r_err);
	notify_on(out);
	rep("leader OUT F_NOTIFY", r_ret, r_err);
	notify_on(in);
	rep("leader IN F_NOTIFY", r_ret, r_err);
	return 0;
}

/* ---- getdents64 ---- */

static char names[4096];

static void list_into(int fd, char *out, size_t len)
{
	char b[8192];
	long r = syscall(SYS_getdents64, fd, b, sizeof(b));
	size_t o = 0;

	put(r);
	out[0] = 0;
	for (long i = 0; r > 0 && i < r;) {
		uint16_t rl;
		const char *nm = b + i + 19;

		memcpy(&rl, b + i + 16, 2);
		if (strcmp(nm, ".") && strcmp(nm, "..") &&
		    o + strlen(nm) + 2 < len) {
			memcpy(out + o, nm, strlen(nm));
			o += strlen(nm);
			out[o++] = ',';
			out[o] = 0;
		}
		i += rl;
	}
}

static void dents_a(void)
{
	int d = open_dir(arg_a);

	if (d < 0 || dup2(d, N) < 0) {
		put(-1);
		return;
	}
	list_into(N, names, sizeof(names));
}

static int cmd_dents(const char *method, const char *in, const char *other)
{
	char mine[4096];
	int d = open_dir(other);

	dup2(d, N);
	arg_a = in;
	if (in_own_table(method, dents_a) == 0) {
		rep("thread getdents64", r_ret, r_err);
		printf("thread names=%s\n", names);
	}
	list_into(N, mine, sizeof(mine));
	rep("leader getdents64", r_ret, r_err);
	printf("leader names=%s\n", mine);
	return 0;
}

/* ---- execveat of an fd ---- */

static const char *self;
static int copy_fd = -1;

/* A copy of this program in the workspace, open read-only, unlinked. */
static int deleted_copy(void)
{
	char b[65536];
	int in = open(self, O_RDONLY), out, ro;
	ssize_t k;

	out = open("dd-img", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (in < 0 || out < 0)
		return -1;
	while ((k = read(in, b, sizeof(b))) > 0)
		if (write(out, b, (size_t)k) != k)
			return -1;
	close(in);
	close(out);
	ro = open("dd-img", O_RDONLY);
	unlink("dd-img");
	return ro;
}

static void fexec_body(void)
{
	char *av[] = { "thread_doors", "hello", NULL }, *ev[] = { NULL };
	int f = arg_a ? open(arg_a, O_RDONLY) : copy_fd;

	if (f < 0 || dup2(f, N) < 0) {
		put(-1);
		return;
	}
	put(syscall(SYS_execveat, N, "", av, ev, AT_EMPTY_PATH));
}

static int cmd_fexec(const char *method, const char *good, int reverse)
{
	copy_fd = deleted_copy();
	if (copy_fd < 0) {
		rep("deleted copy", -1, errno);
		return 1;
	}
	if (reverse) {
		dup2(copy_fd, N);
		arg_a = good;
	} else {
		int g = open(good, O_RDONLY);

		dup2(g, N);
		arg_a = NULL;
	}
	if (in_own_table(method, fexec_body) == 0)
		rep("thread execveat", r_ret, r_err);
	printf("leader still here\n");
	return 0;
}

/* ---- pidfd_send_signal ---- */

static int pidfd_a;

static void pidfd_body(void)
{
	if (dup2(pidfd_a, N) < 0) {
		put(-1);
		return;
	}
	put(syscall(SYS_pidfd_send_signal, N, SIGKILL, NULL, 0));
}

static pid_t sleeper(void)
{
	pid_t c = fork();

	if (c == 0) {
		for (;;)
			pause();
	}
	return c;
}

static int gone(pid_t c)
{
	siginfo_t si = { 0 };

	for (int i = 0; i < 100; i++) {
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)c, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == c)
			return 1;
		usleep(10000);
	}
	return 0;
}

static int cmd_pidfd(const char *method)
{
	pid_t a = sleeper(), b = sleeper();
	int pb = (int)syscall(SYS_pidfd_open, b, 0);

	pidfd_a = (int)syscall(SYS_pidfd_open, a, 0);
	if (pidfd_a < 0 || pb < 0) {
		rep("pidfd_open", -1, errno);
		return 1;
	}
	dup2(pb, N);
	if (in_own_table(method, pidfd_body) == 0)
		rep("thread pidfd_send_signal", r_ret, r_err);
	printf("child A (thread's) gone=%d\n", gone(a));
	printf("child B (leader's) gone=%d\n", gone(b));
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	return 0;
}

/* ---- connect of a unix socket ---- */

static struct sockaddr_un sun_addr = { .sun_family = AF_UNIX,
				       .sun_path = "dd.sock" };
static long peer_ret;
static int peer_err;

static void unix_body(void)
{
	struct sockaddr_un p;
	socklen_t l = sizeof(p);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0 || dup2(s, N) < 0) {
		put(-1);
		return;
	}
	put(connect(N, (struct sockaddr *)&sun_addr, sizeof(sun_addr)));
	peer_ret = getpeername(N, (struct sockaddr *)&p, &l);
	peer_err = peer_ret < 0 ? errno : 0;
}

static int cmd_unix(const char *method)
{
	struct sockaddr_un p;
	socklen_t l = sizeof(p);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	long r;

	unlink("dd.sock");
	if (ls < 0 || bind(ls, (struct sockaddr *)&sun_addr, sizeof(sun_addr)) ||
	    listen(ls, 4)) {
		rep("listener", -1, errno);
		return 1;
	}
	dup2(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), N);
	if (in_own_table(method, unix_body) == 0) {
		rep("thread connect", r_ret, r_err);
		rep("thread getpeername", peer_ret, peer_err);
	}
	r = getpeername(N, (struct sockaddr *)&p, &l);
	rep("leader getpeername", r, errno);
	return 0;
}

/* ---- a cwd of its own (clone without CLONE_FS) ---- */

static char got[64];

static void read_name(void)
{
	int f = open(arg_a, O_RDONLY | O_CLOEXEC);
	ssize_t k = 0;

	put(f);
	got[0] = 0;
	if (f >= 0) {
		k = read(f, got, sizeof(got) - 1);
		got[k > 0 ? k : 0] = 0;
		close(f);
	}
}

static const char *cwd_to;

static int cwd_entry(void *arg)
{
	(void)arg;
	if (chdir(cwd_to) < 0)
		put(-1);
	else
		read_name();
	body_done = 1;
	syscall(SYS_exit, 0);
	return 0;
}

static int own_cwd(const char *to)
{
	long t;

	cwd_to = to;
	body_done = 0;
	t = clone(cwd_entry, stack + sizeof(stack),
		  CLONE_VM | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
		  CLONE_SYSVSEM, NULL);
	if (t < 0) {
		rep("clone without CLONE_FS", t, errno);
		return -1;
	}
	while (!body_done)
		usleep(1000);
	usleep(20000);
	return 0;
}

static int cmd_cwd(const char *out, const char *name)
{
	char ws[4096];

	if (!getcwd(ws, sizeof(ws)))
		return 1;
	arg_a = name;
	if (own_cwd(out) == 0) {
		rep("thread(OUT) open", r_ret, r_err);
		printf("thread(OUT) read=%s\n", got);
	}
	read_name();
	rep("leader(ws) open", r_ret, r_err);
	printf("leader(ws) read=%s\n", got);
	if (chdir(out) < 0)
		return 1;
	if (own_cwd(ws) == 0) {
		rep("thread(ws) open", r_ret, r_err);
		printf("thread(ws) read=%s\n", got);
	}
	read_name();
	rep("leader(OUT) open", r_ret, r_err);
	return 0;
}

/* ---- many threads ---- */

static pthread_barrier_t many_in, many_out;
static int many_bad;

static void *many_thread(void *arg)
{
	char buf[4096];
	int d = open_dir(".");

	(void)arg;
	if (d < 0 || syscall(SYS_getdents64, d, buf, sizeof(buf)) <= 0)
		__atomic_add_fetch(&many_bad, 1, __ATOMIC_RELAXED);
	if (d >= 0)
		close(d);
	pthread_barrier_wait(&many_in);
	pthread_barrier_wait(&many_out);	/* alive until the end */
	return NULL;
}

static int cmd_many(int k, const char *method, const char *out,
		    const char *in)
{
	pthread_attr_t a;
	pthread_t *th = calloc((size_t)k, sizeof(*th));
	int made = 0;

	if (!th || k <= 0)
		return 1;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	pthread_barrier_init(&many_in, NULL, (unsigned)k + 1);
	pthread_barrier_init(&many_out, NULL, (unsigned)k + 1);
	for (int i = 0; i < k; i++)
		if (pthread_create(&th[i], &a, many_thread, NULL) == 0)
			made++;
	if (made != k) {
		printf("threads made=%d of %d\n", made, k);
		return 1;
	}
	pthread_barrier_wait(&many_in);
	printf("threads listed bad=%d of %d\n", many_bad, k);
	cmd_dnotify(method, out, in);
	pthread_barrier_wait(&many_out);
	for (int i = 0; i < k; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* ---- the leader gone ---- */

static void *lg_thread(void *arg)
{
	char mine[4096];
	int w;

	(void)arg;
	usleep(300000);	/* the main thread has exited by now */
	w = open_dir(".");
	rep("thread open .", w, errno);
	list_into(w, mine, sizeof(mine));
	rep("thread getdents64 .", r_ret, r_err);
	printf("thread names=%s\n", mine);
	fcntl(w, F_SETSIG, SIGRTMIN);
	REP("thread F_NOTIFY .", fcntl(w, F_NOTIFY, DN_CREATE));
	exit(0);
}

static int cmd_leader_gone(void)
{
	pthread_t th;

	signal(SIGRTMIN, SIG_IGN);
	signal(SIGIO, SIG_IGN);
	pthread_create(&th, NULL, lg_thread, NULL);
	syscall(SYS_exit, 0);	/* this thread only */
	return 0;
}

/* ---- core scheduling ---- */

static int cmd_sched_core(void)
{
	unsigned long cookie = 0;

	/* PR_SCHED_CORE 62: GET 0, CREATE 1; scope 1: thread group. */
	REP("PR_SCHED_CORE GET pid 0",
	    prctl(62, 0, 0, 1, (unsigned long)&cookie));
	REP("PR_SCHED_CORE GET parent",
	    prctl(62, 0, (unsigned long)getppid(), 1, (unsigned long)&cookie));
	REP("PR_SCHED_CORE CREATE pid 1", prctl(62, 1, 1, 1, 0));
	/* Upper bits the kernel ignores: still pid 0. */
	REP("PR_SCHED_CORE GET pid 0 high bits",
	    prctl(62, 0, 1UL << 32, 1, (unsigned long)&cookie));
	return 0;
}

/* ---- a private futex hash ---- */

static int cmd_futex_hash(void)
{
	/* PR_FUTEX_HASH 78: SET_SLOTS 1, GET_SLOTS 2 (Linux 6.16+). */
	REP("PR_FUTEX_HASH SET_SLOTS", prctl(78, 1, 1UL << 20, 0, 0));
	REP("PR_FUTEX_HASH GET_SLOTS", prctl(78, 2, 0, 0, 0));
	return 0;
}

int main(int argc, char **argv)
{
	self = argv[0];
	if (argc > 1 && !strcmp(argv[1], "hello")) {
		printf("hello from the exec'd image\n");
		return 0;
	}
	if (argc > 4 && !strcmp(argv[1], "dnotify"))
		return cmd_dnotify(argv[2], argv[3], argv[4]);
	if (argc > 4 && !strcmp(argv[1], "dents"))
		return cmd_dents(argv[2], argv[3], argv[4]);
	if (argc > 3 && !strcmp(argv[1], "fexec"))
		return cmd_fexec(argv[2], argv[3], 0);
	if (argc > 3 && !strcmp(argv[1], "fexec2"))
		return cmd_fexec(argv[2], argv[3], 1);
	if (argc > 2 && !strcmp(argv[1], "pidfd"))
		return cmd_pidfd(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "unix"))
		return cmd_unix(argv[2]);
	if (argc > 3 && !strcmp(argv[1], "cwd"))
		return cmd_cwd(argv[2], argv[3]);
	if (argc > 5 && !strcmp(argv[1], "many"))
		return cmd_many(atoi(argv[2]), argv[3], argv[4], argv[5]);
	if (argc > 1 && !strcmp(argv[1], "leader_gone"))
		return cmd_leader_gone();
	if (argc > 1 && !strcmp(argv[1], "sched_core"))
		return cmd_sched_core();
	if (argc > 1 && !strcmp(argv[1], "futex_hash"))
		return cmd_futex_hash();
	fprintf(stderr, "usage: see the comment at the top\n");
	return 2;
}
