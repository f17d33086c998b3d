/* tests/progs/sendcred.c: whose pid a unix receiver with SO_PASSCRED reads
 * from a sendmsg, and that the call leaves the caller's registers as the kernel does.
 *
 *   sendcred creds   for stream and seqpacket socketpairs, a
 *                    forked child sendmsg()s one buffer (no address, no
 *                    control data); prints "TYPE pid ok" when the
 *                    SCM_CREDENTIALS pid is the child's, else "TYPE pid
 *                    N want M"
 *   sendcred regs    a raw sendmsg with r8, r9, r10 and the argument
 *                    registers holding known values; prints "regs ok" when
 *                    all of them (rcx and r11 aside) are as before, as the
 *                    kernel keeps them (x86_64 only; elsewhere "regs ok")
 *   sendcred sig N   N raw sendmsg calls with known r8, r9, r10 while
 *                    another thread sends SIGUSR1 (a handler) as fast as
 *                    it can, for one second at most; prints "sig regs ok"
 *                    when no call changed a register the kernel keeps
 *                    (x86_64 only)
 *   sendcred filter  installs a seccomp filter of its own that fails
 *                    sendto with EPERM, then sendmsg()s 4 bytes; prints
 *                    "filter sendmsg 4" (its filter judges its sendmsg)
 *   sendcred exec P  the main thread blocks in a raw sendmsg into a full
 *                    socket (r8, r9, r10 set), another thread execs P
 *   sendcred alarm   a blocking sendmsg into a full socket, cut by
 *                    SIGALRM whose handler has no SA_RESTART; prints
 *                    "alarm EINTR" (what the kernel answers)
 *   sendcred intr N  a child sendmsg()s N MiB in one call into a blocking
 *                    stream socket that the parent reads slowly while
 *                    SIGUSR1 (SA_RESTART handler) hits the child every
 *                    2 ms; the child sends what is left after a short
 *                    count; prints "got N MiB intact" when every byte came
 *                    in order */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The receiving end asks for its senders' credentials: the sends below
 * are then the ones corral hands back to the task (net/ownsend.c). */
static int pair(int type, int sv[2])
{
	int on = 1;

	if (socketpair(AF_UNIX, type, 0, sv))
		return -1;
	return setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
}

static int creds(void)
{
	static const struct { int type; const char *name; } kinds[] = {
		{ SOCK_STREAM, "stream" },
		{ SOCK_SEQPACKET, "seqpacket" },
	};
	int bad = 0;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		int sv[2], on = 1;
		pid_t child;
		char buf[64], cbuf[CMSG_SPACE(sizeof(struct ucred))];
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c;
		pid_t got = 0;

		/* (not datagram pairs: corral refuses SO_PASSCRED on an
		 * unnamed datagram socket, which the kernel would autobind) */
		if (socketpair(AF_UNIX, kinds[k].type, 0, sv) ||
		    setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)))
			return 2;
		child = fork();
		if (child == 0) {
			struct iovec o = { "ping", 4 };
			struct msghdr m = { .msg_iov = &o, .msg_iovlen = 1 };

			_exit(sendmsg(sv[1], &m, MSG_NOSIGNAL) == 4 ? 0 : 1);
		}
		if (recvmsg(sv[0], &h, 0) != 4)
			return 3;
		for (c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
			if (c->cmsg_level == SOL_SOCKET &&
			    c->cmsg_type == SCM_CREDENTIALS) {
				struct ucred u;

				memcpy(&u, CMSG_DATA(c), sizeof(u));
				got = u.pid;
			}
		waitpid(child, NULL, 0);
		if (got == child) {
			printf("%s pid ok\n", kinds[k].name);
		} else {
			printf("%s pid %d want %d\n", kinds[k].name, got, child);
			bad = 1;
		}
		close(sv[0]);
		close(sv[1]);
	}
	return bad;
}

static int regs(void)
{
#if defined(__x86_64__)
	int sv[2];
	struct iovec o = { "ping", 4 };
	struct msghdr m = { .msg_iov = &o, .msg_iovlen = 1 };
	uint64_t in[6] = { 0, (uint64_t)(uintptr_t)&m, MSG_NOSIGNAL,
			   0x1111111111111111ull, 0x2222222222222222ull,
			   0x3333333333333333ull };
	uint64_t out[6];
	long ret;
	char buf[8];

	if (pair(SOCK_SEQPACKET, sv))
		return 2;
	in[0] = (uint64_t)sv[1];
	{
		register uint64_t rdi __asm__("rdi") = in[0];
		register uint64_t rsi __asm__("rsi") = in[1];
		register uint64_t rdx __asm__("rdx") = in[2];
		register uint64_t r10 __asm__("r10") = in[3];
		register uint64_t r8 __asm__("r8") = in[4];
		register uint64_t r9 __asm__("r9") = in[5];

		__asm__ volatile("syscall"
				 : "=a"(ret), "+r"(rdi), "+r"(rsi), "+r"(rdx),
				   "+r"(r10), "+r"(r8), "+r"(r9)
				 : "0"((long)SYS_sendmsg)
				 : "rcx", "r11", "memory");
		out[0] = rdi;
		out[1] = rsi;
		out[2] = rdx;
		out[3] = r10;
		out[4] = r8;
		out[5] = r9;
	}
	if (ret != 4 || read(sv[0], buf, sizeof(buf)) != 4) {
		printf("regs: sendmsg %ld\n", ret);
		return 1;
	}
	for (int i = 0; i < 6; i++)
		if (out[i] != in[i]) {
			printf("regs: register %d was %#llx, now %#llx\n", i,
			       (unsigned long long)in[i],
			       (unsigned long long)out[i]);
			return 1;
		}
#endif
	printf("regs ok\n");
	return 0;
}

static void on_usr1(int s)
{
	(void)s;
}

#if defined(__x86_64__)
/* One raw sendmsg with r8, r9, r10 set; 0 when the registers the kernel
 * keeps came back as they went. */
static int raw_send(int fd, struct msghdr *m, long *ret)
{
	register uint64_t rdi __asm__("rdi") = (uint64_t)fd;
	register uint64_t rsi __asm__("rsi") = (uint64_t)(uintptr_t)m;
	register uint64_t rdx __asm__("rdx") = MSG_NOSIGNAL;
	register uint64_t r10 __asm__("r10") = 0x1010101010ull;
	register uint64_t r8 __asm__("r8") = 0x0808080808ull;
	register uint64_t r9 __asm__("r9") = 0x0909090909ull;
	long a = SYS_sendmsg;

	__asm__ volatile("syscall"
			 : "+a"(a), "+r"(rdi), "+r"(rsi), "+r"(rdx), "+r"(r10),
			   "+r"(r8), "+r"(r9)
			 :
			 : "rcx", "r11", "memory");
	*ret = a;
	return rdi != (uint64_t)fd || rsi != (uint64_t)(uintptr_t)m ||
	       rdx != MSG_NOSIGNAL || r10 != 0x1010101010ull ||
	       r8 != 0x0808080808ull || r9 != 0x0909090909ull;
}
#endif

static volatile int stop_storm;
static pthread_t storm_target;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Signals as fast as it can, for a second at most: a thread sent signals
 * without pause makes a notified call only when one of them comes late
 * (docs/limits.md), so a storm without end could hold the calls as long as
 * the machine is busy. */
static void *storm(void *a)
{
	uint64_t end = mono_ns() + 1000000000u;

	(void)a;
	for (unsigned i = 0; !stop_storm; i++) {
		pthread_kill(storm_target, SIGUSR1);
		if (!(i & 255) && mono_ns() > end)
			break;
	}
	return NULL;
}

static int sig(long n)
{
#if defined(__x86_64__)
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct iovec o = { "ping", 4 };
	struct msghdr m = { .msg_iov = &o, .msg_iovlen = 1 };
	int sv[2], bad = 0;
	pthread_t th;
	char buf[8];

	if (pair(SOCK_SEQPACKET, sv))
		return 2;
	sigaction(SIGUSR1, &sa, NULL);
	storm_target = pthread_self();
	pthread_create(&th, NULL, storm, NULL);
	for (long i = 0; i < n; i++) {
		long ret;

		if (raw_send(sv[1], &m, &ret))
			bad++;
		if (ret == 4 && read(sv[0], buf, sizeof(buf)) != 4)
			bad++;
	}
	stop_storm = 1;
	pthread_join(th, NULL);
	if (bad) {
		printf("sig regs changed in %d calls\n", bad);
		return 1;
	}
#else
	(void)n;
#endif
	printf("sig regs ok\n");
	return 0;
}

static int own_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sendto, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct iovec o = { "ping", 4 };
	struct msghdr m = { .msg_iov = &o, .msg_iovlen = 1 };
	int sv[2];

	if (pair(SOCK_SEQPACKET, sv) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		printf("filter setup %s\n", strerror(errno));
		return 2;
	}
	printf("filter sendmsg %zd\n", sendmsg(sv[1], &m, 0));
	return 0;
}

static int alarmed(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	static char big[1 << 20];
	struct iovec o = { big, sizeof(big) };
	struct msghdr m = { .msg_iov = &o, .msg_iovlen = 1 };
	int sv[2], sz = 4096;
	ssize_t k;

	if (pair(SOCK_STREAM, sv) ||
	    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)))
		return 2;
	/* full first: the send then waits with nothing sent */
	while (send(sv[1], big, 4096, MSG_DONTWAIT) > 0)
		;
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	k = sendmsg(sv[1], &m, MSG_NOSIGNAL);
	if (k >= 0 && (size_t)k < sizeof(big))
		printf("alarm short\n");	/* what went, also the kernel's */
	else
		printf("alarm %s\n", k < 0 && errno == EINTR ? "EINTR" :
		       strerror(errno));
	return 0;
}

static char *exec_path;

static void *execer(void *a)
{
	char *av[] = { exec_path, NULL };

	(void)a;
	usleep(300000);
	execv(exec_path, av);
	_exit(9);
}

static int exec_blocked(char *path)
{
#if defined(__x86_64__)
	static char big[1 << 20];
	struct iovec o = { big, sizeof(big) };
	struct msghdr m = { .msg_iov = &o, .msg_iovlen = 1 };
	int sv[2], sz = 4096;
	pthread_t th;
	long ret;

	exec_path = path;
	if (pair(SOCK_STREAM, sv) ||
	    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)))
		return 2;
	pthread_create(&th, NULL, execer, NULL);
	raw_send(sv[1], &m, &ret);
	printf("sendmsg returned %ld\n", ret);
	return 3;
#else
	(void)path;
	printf("new image starts with zeroed registers\n");
	return 0;
#endif
}

static int intr(long mib)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	size_t total = (size_t)mib << 20, got = 0;
	unsigned char *b = malloc(total), r[65536];
	int sv[2], bad = 0;
	pid_t child, sig;

	if (!b || pair(SOCK_STREAM, sv))
		return 2;
	for (size_t i = 0; i < total; i++)
		b[i] = (unsigned char)(i * 7 + i / 4096);
	/* The handler is the child's from its birth: set in the child, a
	 * signal sent before it was set killed it (the signaller starts at
	 * once; a slower start, as under a tracer, lost that race). */
	sigaction(SIGUSR1, &sa, NULL);
	child = fork();
	if (child == 0) {
		size_t off = 0;

		close(sv[0]);
		while (off < total) {
			struct iovec o = { b + off, total - off };
			struct msghdr m = { .msg_iov = &o, .msg_iovlen = 1 };
			ssize_t k = sendmsg(sv[1], &m, 0);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				_exit(3);
			off += (size_t)k;
		}
		_exit(0);
	}
	close(sv[1]);
	sig = fork();
	if (sig == 0) {
		struct timespec ts = { 0, 2000000 };

		while (kill(child, SIGUSR1) == 0)
			nanosleep(&ts, NULL);
		_exit(0);
	}
	while (got < total) {
		ssize_t k = read(sv[0], r, got % 3 ? 4096 : sizeof(r));

		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k; i++)
			if (r[i] != b[got + (size_t)i])
				bad = 1;
		got += (size_t)k;
		if (got % (256 << 10) < (size_t)k) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	waitpid(child, NULL, 0);
	kill(sig, SIGKILL);
	waitpid(sig, NULL, 0);
	printf("got %zu MiB %s\n", got >> 20, bad ? "corrupt" : "intact");
	return got != total || bad;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "creds"))
		return creds();
	if (argc > 1 && !strcmp(argv[1], "regs"))
		return regs();
	if (argc > 2 && !strcmp(argv[1], "intr"))
		return intr(atol(argv[2]));
	if (argc > 2 && !strcmp(argv[1], "sig"))
		return sig(atol(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "filter"))
		return own_filter();
	if (argc > 1 && !strcmp(argv[1], "alarm"))
		return alarmed();
	if (argc > 2 && !strcmp(argv[1], "exec"))
		return exec_blocked(argv[2]);
	return 2;
}
