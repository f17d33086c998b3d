/* tests/progs/surface_calls.c: makes one system call the kernel-surface tests
 * name, by number or by a small recipe, and prints what it returned.
 *
 *   surface_calls sys NAME|NR [ARG...]   raw syscall(); ARG is a number
 *                                        (any base, may be negative),
 *                                        s:TEXT (a string pointer),
 *                                        b:N (a zeroed N-byte buffer),
 *                                        iov:N (one iovec of an N-byte
 *                                        buffer) or ppid (this process's
 *                                        parent)
 *   surface_calls int80_write            write(1) through the i386 ABI
 *   surface_calls int80_big              int $0x80 with eax 0x7fffffff
 *   surface_calls x32_getpid             getpid through the x32 ABI
 *   surface_calls uring_open PATH        openat + read PATH through io_uring
 *   surface_calls ttyioctl REQ           ioctl REQ on a pty's slave
 *   surface_calls tiocsti [HIGH]         TIOCSTI on a pty's slave (HIGH: with the
 *                                        upper half of the request set)
 *   surface_calls sigsys                 SIGSYS sent to itself
 *   surface_calls sigsys_first int80|x32 SIGSYS sent to itself and caught,
 *                                        then int80_big or x32_getpid
 *   surface_calls int80_flip             children run `int $0x80` from a
 *                                        page shared with a process that
 *                                        keeps rewriting it to `syscall`;
 *                                        prints how they died
 *   surface_calls ownkill [thread]       installs its own seccomp filter
 *                                        that kills the process on x86_64
 *                                        msync (26; ptrace in i386), then
 *                                        calls it (from a second thread
 *                                        while the first sleeps)
 *   surface_calls vmcopy                 process_vm_readv/writev on a child
 *                                        and on itself
 *
 * Output: "NAME ret=R errno=E" (E is the errno name, or 0), exit 0, so the
 * caller can tell what the kernel (or corral) answered. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>

static const struct { const char *name; long nr; } names[] = {
#define N(x) { #x, SYS_##x }
	N(ptrace), N(bpf), N(perf_event_open), N(userfaultfd),
	N(io_uring_setup), N(io_uring_enter), N(io_uring_register),
	N(add_key), N(request_key), N(keyctl), N(init_module),
	N(finit_module), N(delete_module), N(kexec_load),
	N(kexec_file_load), N(reboot), N(swapon), N(swapoff), N(acct),
	N(syslog), N(quotactl), N(lookup_dcookie), N(vhangup), N(uselib),
	N(iopl), N(ioperm), N(modify_ldt), N(settimeofday),
	N(clock_settime), N(clock_adjtime), N(adjtimex), N(fanotify_init),
	N(mount), N(umount2), N(fsopen), N(fsmount), N(open_tree),
	N(move_mount), N(pivot_root), N(chroot), N(unshare), N(setns),
	N(name_to_handle_at), N(open_by_handle_at), N(personality),
	N(sethostname), N(setdomainname), N(shmget), N(shmat), N(shmctl),
	N(semget), N(msgget), N(mq_open), N(socket), N(socketpair),
	N(kill), N(tkill), N(tgkill), N(rt_sigqueueinfo), N(pidfd_open),
	N(pidfd_send_signal), N(pidfd_getfd), N(process_vm_readv),
	N(process_vm_writev), N(kcmp), N(prlimit64), N(setpriority),
	N(sched_setaffinity), N(sched_setscheduler), N(ioprio_set),
	N(get_robust_list), N(openat), N(ioctl), N(getpid), N(memfd_secret),
	N(clone), N(fcntl),
#undef N
};

static void report(const char *what, long ret, int err)
{
	printf("%s ret=%ld errno=%s\n", what, ret,
	       ret < 0 ? (strerrorname_np(err) ?: "?") : "0");
	fflush(stdout);
}

static long arg(const char *a)
{
	if (!strncmp(a, "s:", 2))
		return (long)(uintptr_t)strdup(a + 2);
	if (!strncmp(a, "b:", 2))
		return (long)(uintptr_t)calloc(1, strtoul(a + 2, NULL, 0) + 1);
	if (!strncmp(a, "iov:", 4)) {
		struct iovec *v = calloc(1, sizeof(*v));

		if (v) {
			v->iov_len = strtoul(a + 4, NULL, 0);
			v->iov_base = calloc(1, v->iov_len + 1);
		}
		return (long)(uintptr_t)v;
	}
	if (!strcmp(a, "ppid"))
		return getppid();
	return (long)strtoull(a, NULL, 0);
}

static int cmd_sys(int argc, char **argv)
{
	long nr = -1, a[6] = { 0 }, ret;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i].name, argv[0]))
			nr = names[i].nr;
	if (nr < 0)
		nr = strtol(argv[0], NULL, 0);
	for (int i = 1; i < argc && i <= 6; i++)
		a[i - 1] = arg(argv[i]);
	errno = 0;
	ret = syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	report(argv[0], ret, errno);
	return 0;
}

static int cmd_int80(void)
{
	/* The buffer must be reachable through 32-bit pointers. */
	char *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	long ret;

	if (buf == MAP_FAILED)
		return 2;
	memcpy(buf, "int80 wrote this\n", 17);
	printf("before int80\n");
	fflush(stdout);
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(4L), "b"(1L), "c"((long)(uintptr_t)buf), "d"(17L)
			 : "memory");
	report("int80_write", ret < 0 ? -1 : ret, ret < 0 ? (int)-ret : 0);
	return 0;
}

/* An i386 call whose number has the x32 bit set (0x7fffffff): an i386
 * call all the same, to be named as one. */
static int cmd_int80_big(void)
{
	long ret;

	printf("before int80\n");
	fflush(stdout);
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(0x7fffffffL) : "memory");
	report("int80_big", ret < 0 ? -1 : ret, ret < 0 ? (int)-ret : 0);
	return 0;
}

static int cmd_x32(void);

static void on_sigsys(int sig)
{
	(void)sig;
}

/* A SIGSYS the program sends itself first, caught: an earlier build then
 * took every later SIGSYS death for the program's own. */
static int cmd_sigsys_first(const char *then)
{
	signal(SIGSYS, on_sigsys);
	raise(SIGSYS);
	printf("caught its own SIGSYS\n");
	fflush(stdout);
	return !strcmp(then, "x32") ? cmd_x32() : cmd_int80_big();
}

/* A loop on a page shared across fork: mov $20,%eax; nop; XX XX; jmp 0,
 * where another process keeps rewriting XX XX between `int $0x80` (cd 80)
 * and `syscall` (0f 05, an x86_64 writev(-1) = EBADF). A child runs it
 * until the int executes and the filter kills it; by its exit stop the
 * bytes before its rip mostly read `syscall` again. */
static int cmd_int80_flip(void)
{
	static const unsigned char prog[] = { 0xb8, 0x14, 0, 0, 0, 0x90,
					      0x0f, 0x05, 0xeb, 0xf6 };
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE |
				   PROT_EXEC, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	volatile unsigned short *w;
	int sigsys = 0, other = 0;
	pid_t flip;

	if (code == MAP_FAILED)
		return 2;
	memcpy(code, prog, sizeof(prog));
	w = (volatile unsigned short *)(code + 6);
	flip = fork();
	if (flip == 0)
		for (;;) {
			/* Each form held a while: with int $0x80 held for
			 * two stores only, a machine whose children never met
			 * it looped in `syscall` until the cpu budget (the
			 * race, the bytes read after the kill, is met either
			 * way: the inspection comes microseconds later). */
			*w = 0x80cd;
			for (volatile int i = 0; i < 300; i++)
				;
			*w = 0x050f;
			for (volatile int i = 0; i < 3000; i++)
				;
		}
	for (int t = 0; t < 200 && !sigsys; t++) {
		pid_t c = fork();
		int st;

		if (c == 0) {
			__asm__ volatile("mov $-1, %%rdi\n\txor %%esi, %%esi\n\t"
					 "xor %%edx, %%edx\n\tjmp *%0"
					 : : "r"(code) : "rdi", "rsi", "rdx",
					 "memory");
			_exit(0);
		}
		if (c < 0 || waitpid(c, &st, 0) < 0)
			break;
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
			sigsys++;
		else
			other++;
	}
	kill(flip, SIGKILL);
	waitpid(flip, NULL, 0);
	printf("int80_flip sigsys=%d other=%d\n", sigsys, other);
	return 0;
}

static int cmd_x32(void)
{
	long ret;

	printf("before x32\n");
	fflush(stdout);
	ret = syscall(0x40000000L | SYS_getpid);
	report("x32_getpid", ret, errno);
	return 0;
}

/* A minimal io_uring user (no liburing): one OPENAT, then one READ of the
 * opened file, printed. If io_uring_setup were allowed, these operations
 * would never pass through seccomp. */
static int cmd_uring(const char *path)
{
	struct io_uring_params p = { 0 };
	int fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	void *sq, *cq;
	struct io_uring_sqe *sqes;
	unsigned *tail, *array, *ctail, *chead;
	struct io_uring_cqe *cqes;
	static char data[256];

	if (fd < 0) {
		report("io_uring_setup", -1, errno);
		return 0;
	}
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned),
		  PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
		  PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_CQ_RING);
	sqes = mmap(NULL, p.sq_entries * sizeof(*sqes), PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return 2;
	tail = (unsigned *)((char *)sq + p.sq_off.tail);
	array = (unsigned *)((char *)sq + p.sq_off.array);
	ctail = (unsigned *)((char *)cq + p.cq_off.tail);
	chead = (unsigned *)((char *)cq + p.cq_off.head);
	cqes = (struct io_uring_cqe *)((char *)cq + p.cq_off.cqes);
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].opcode = IORING_OP_OPENAT;
	sqes[0].fd = AT_FDCWD;
	sqes[0].addr = (uint64_t)(uintptr_t)path;
	sqes[0].open_flags = O_RDONLY;
	array[0] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(SYS_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS,
		    NULL, 0) < 0) {
		report("io_uring_enter", -1, errno);
		return 0;
	}
	if (__atomic_load_n(ctail, __ATOMIC_ACQUIRE) == *chead)
		return 2;
	report("uring_openat", cqes[*chead & (p.cq_entries - 1)].res,
	       -cqes[*chead & (p.cq_entries - 1)].res);
	if (cqes[*chead & (p.cq_entries - 1)].res >= 0) {
		ssize_t n = read(cqes[*chead & (p.cq_entries - 1)].res, data,
				 sizeof(data) - 1);

		if (n > 0)
			printf("read: %.*s\n", (int)n, data);
	}
	return 0;
}

static int cmd_ttyioctl(unsigned long req, const char *what)
{
	char buf[16] = "x";
	long ret;
	int m = posix_openpt(O_RDWR | O_NOCTTY), fd = -1;

	/* A terminal of its own (on any other file the kernel, and corral,
	 * answer ENOTTY before anything). */
	if (m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0 && ptsname(m))
		fd = open(ptsname(m), O_RDWR | O_NOCTTY);
	if (fd < 0) {
		perror("pty");
		return 1;
	}
	errno = 0;
	ret = syscall(SYS_ioctl, fd, req, buf);
	report(what, ret, errno);
	return 0;
}

static int cmd_tiocsti(int high)
{
	return cmd_ttyioctl(TIOCSTI | (high ? 0x100000000UL : 0),
			    high ? "tiocsti_high" : "tiocsti");
}

/* Cross-process memory within the run: a child's buffer is read, then
 * overwritten and read again; then the process reads itself. */
static int cmd_vmcopy(void)
{
	static char src[64] = "before-fork";
	char dst[64] = { 0 }, me[8] = "selfabc", out[8] = { 0 }, r;
	char msg[] = "written-by-parent";
	struct iovec l = { dst, 16 }, rm = { src, 16 };
	struct iovec l2 = { msg, sizeof(msg) }, rm2 = { src, sizeof(msg) };
	struct iovec a = { out, 8 }, b = { me, 8 };
	ssize_t n, m;
	int p[2];
	pid_t c;

	if (pipe(p) < 0)
		return 2;
	c = fork();
	if (c == 0) {
		strcpy(src, "child-secret-42");
		if (write(p[1], "r", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	if (c < 0 || read(p[0], &r, 1) != 1)
		return 2;
	n = process_vm_readv(c, &l, 1, &rm, 1, 0);
	printf("vm_readv ret=%zd data=%s\n", n, n > 0 ? dst : strerrorname_np(errno));
	n = process_vm_writev(c, &l2, 1, &rm2, 1, 0);
	memset(dst, 0, sizeof(dst));
	l.iov_len = sizeof(msg);
	rm.iov_len = sizeof(msg);
	m = process_vm_readv(c, &l, 1, &rm, 1, 0);
	printf("vm_writev ret=%zd reread=%zd %s\n", n, m, dst);
	n = process_vm_readv(getpid(), &a, 1, &b, 1, 0);
	printf("vm_self ret=%zd data=%s\n", n, out);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	return 0;
}

static void *ownkill_call(void *arg)
{
	(void)arg;
	syscall(26, 0, 0, 0);
	return NULL;
}

static int cmd_ownkill(int threaded)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 26, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog p = { 4, f };
	pthread_t t;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p)) {
		printf("ownkill filter errno=%s\n", strerrorname_np(errno));
		return 0;
	}
	printf("ownkill filter installed\n");
	fflush(stdout);
	if (threaded && !pthread_create(&t, NULL, ownkill_call, NULL)) {
		for (;;)
			pause();
	}
	ownkill_call(NULL);
	printf("ownkill survived\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "vmcopy"))
		return cmd_vmcopy();
	if (argc >= 3 && !strcmp(argv[1], "sys"))
		return cmd_sys(argc - 2, argv + 2);
	if (argc == 2 && !strcmp(argv[1], "int80_big"))
		return cmd_int80_big();
	if (argc == 2 && !strcmp(argv[1], "int80_write"))
		return cmd_int80();
	if (argc == 2 && !strcmp(argv[1], "x32_getpid"))
		return cmd_x32();
	if (argc == 3 && !strcmp(argv[1], "uring_open"))
		return cmd_uring(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "tiocsti"))
		return cmd_tiocsti(argc > 2);
	if (argc >= 3 && !strcmp(argv[1], "ttyioctl"))
		return cmd_ttyioctl(strtoul(argv[2], NULL, 0), "ttyioctl");
	if (argc >= 2 && !strcmp(argv[1], "ownkill"))
		return cmd_ownkill(argc > 2);
	if (argc == 3 && !strcmp(argv[1], "sigsys_first"))
		return cmd_sigsys_first(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "int80_flip"))
		return cmd_int80_flip();
	if (argc == 2 && !strcmp(argv[1], "sigsys")) {
		printf("raising SIGSYS\n");
		fflush(stdout);
		raise(SIGSYS);
		return 3;
	}
	fprintf(stderr, "usage: see tests/progs/surface_calls.c\n");
	return 2;
}
