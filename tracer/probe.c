/* tracer/probe.c: tries, once, each kernel feature the supervisor depends on
 * and reports what this host supports (`corral probe`, cr_probe_has()). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>

#include <cjson/cJSON.h>

#include "corral/probe.h"
#include "corral/util.h"
#include "tracer.h"

/* ---- constants older headers (Debian 12's) may lack ---- */

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* The probe filter checks the architecture like every real filter must, so
 * the notified number means what we think it means. */
#if defined(__x86_64__)
#define CR_PROBE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CR_PROBE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define CR_PROBE_AUDIT_ARCH AUDIT_ARCH_RISCV64
#elif defined(__i386__)
#define CR_PROBE_AUDIT_ARCH AUDIT_ARCH_I386
#else
#error "corral: add this architecture's AUDIT_ARCH_* to tracer/probe.c"
#endif

/* Every wait on a probe child is bounded: a probe that hangs is a bug. */
#define PROBE_TIMEOUT_MS 2000
/* The value the supervisor answers the notified getppid() with. */
#define PROBE_ANSWER 0x5eed
#define DETAIL_LEN 320

/* ---- what is remembered ---- */

/* Features are tried in groups: one throwaway child answers several
 * questions, and asking about one group never costs the others' forks. */
enum probe_group {
	G_NOTIFY,	/* listener, killable wait, ADDFD, SYNC_WAKE_UP */
	G_PROCESS,	/* pidfd_*, process_vm_readv, PTRACE_SEIZE */
	G_OPENAT2,
	G_CLOSE_RANGE,
	G_LANDLOCK,
	G_CGROUP,
	G_USERNS,
	G__COUNT
};

struct feat_info {
	const char *name;	/* key in the report and the JSON */
	enum probe_group group;
	bool required;		/* sandboxing is impossible without it */
	const char *needs;	/* what provides it, for the "no" line */
};

static const struct feat_info feat_info[CR_FEAT__COUNT] = {
	[CR_FEAT_SECCOMP_NOTIFY] = { "seccomp_user_notify", G_NOTIFY, true,
		"needs a kernel with SECCOMP_FILTER_FLAG_NEW_LISTENER (5.0+) "
		"and CONFIG_SECCOMP_FILTER, not already under another "
		"seccomp-notify supervisor" },
	[CR_FEAT_WAIT_KILLABLE_RECV] = { "wait_killable_recv", G_NOTIFY, false,
		"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV needs 5.19+; without "
		"it a signal can interrupt a call the supervisor performs" },
	[CR_FEAT_NOTIF_ADDFD_SEND] = { "notif_addfd_send", G_NOTIFY, true,
		"needs a kernel with SECCOMP_IOCTL_NOTIF_ADDFD and "
		"SECCOMP_ADDFD_FLAG_SEND (5.14+)" },
	[CR_FEAT_NOTIF_SYNC_WAKE_UP] = { "notif_sync_wake_up", G_NOTIFY, false,
		"SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP needs 6.6+; without it "
		"every answer may cost a cross-CPU wake-up" },
	[CR_FEAT_PIDFD_OPEN] = { "pidfd_open", G_PROCESS, true,
		"needs a kernel with pidfd_open (5.3+)" },
	[CR_FEAT_PIDFD_GETFD] = { "pidfd_getfd", G_PROCESS, true,
		"needs a kernel with pidfd_getfd (5.6+) and ptrace access "
		"to our own children (Yama ptrace_scope 0 or 1)" },
	[CR_FEAT_PIDFD_SEND_SIGNAL] = { "pidfd_send_signal", G_PROCESS, false,
		"pidfd_send_signal needs 5.1+; without it kills go by pid, "
		"open to pid reuse" },
	[CR_FEAT_OPENAT2] = { "openat2", G_OPENAT2, true,
		"needs a kernel with openat2 and RESOLVE_BENEATH (5.6+)" },
	[CR_FEAT_PROCESS_VM_READV] = { "process_vm_readv", G_PROCESS, true,
		"needs CONFIG_CROSS_MEMORY_ATTACH (3.2+) and ptrace access "
		"to our own children (Yama ptrace_scope 0 or 1)" },
	[CR_FEAT_PTRACE_SEIZE] = { "ptrace_seize", G_PROCESS, true,
		"needs PTRACE_SEIZE with PTRACE_O_EXITKILL (3.8+) and "
		"tracing of our own children allowed (Yama ptrace_scope 0 "
		"or 1; 3 forbids it until reboot)" },
	[CR_FEAT_CLOSE_RANGE] = { "close_range", G_CLOSE_RANGE, false,
		"close_range with CLOSE_RANGE_CLOEXEC needs 5.11+; without "
		"it fds are closed one by one" },
};

static struct {
	bool has[CR_FEAT__COUNT];
	char detail[CR_FEAT__COUNT][DETAIL_LEN];
	int landlock_abi;
	char landlock_detail[DETAIL_LEN];
	char cgroup[PATH_MAX];		/* "" when none */
	char cgroup_detail[DETAIL_LEN + PATH_MAX];
	bool userns;
	char userns_detail[DETAIL_LEN];
} st;

/* ---- small helpers ---- */

static int read_small_at(int dirfd, const char *path, char **out);

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "unknown errno";
}

static void note(enum cr_feature f, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(enum cr_feature f, bool ok, const char *fmt, ...)
{
	va_list ap;

	st.has[f] = ok;
	va_start(ap, fmt);
	vsnprintf(st.detail[f], sizeof(st.detail[f]), fmt, ap);
	va_end(ap);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* Waits until fd is readable or the deadline passes: 0, -ETIMEDOUT, or
 * -EPIPE when only POLLHUP/POLLERR came (the peer is gone). */
static int wait_readable(int fd, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (p.revents & POLLIN)
			return 0;
		return -EPIPE;
	}
}

/* The fixed-size message probe children and the parent exchange. */
struct pmsg {
	int32_t step;
	int32_t err;	/* positive errno, 0 for success */
	int64_t val;
};

/* Sends one message, optionally with one fd. Async-signal-safe: used in
 * forked children of a possibly multi-threaded supervisor. */
static int send_msg(int sock, int32_t step, int32_t err, int64_t val, int fd)
{
	struct pmsg m = { .step = step, .err = err, .val = val };
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		memset(&c, 0, sizeof(c));
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		c.h.cmsg_level = SOL_SOCKET;
		c.h.cmsg_type = SCM_RIGHTS;
		c.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&c.h), &fd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		return -1;
	return 0;
}

/* Receives one message within the deadline; *fd gets a passed fd or -1.
 * Returns 0 or -errno (-EPIPE when the child went away). */
static int recv_msg(int sock, struct pmsg *m, int *fd, int64_t deadline)
{
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} c;
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = c.buf, .msg_controllen = sizeof(c.buf),
	};
	struct cmsghdr *h;
	ssize_t n;
	int r;

	if (fd)
		*fd = -1;
	r = wait_readable(sock, deadline);
	if (r < 0)
		return r;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* Take ownership of every passed fd before judging the message, so
	 * nothing a confused child sends can leak. */
	for (h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
		size_t k, nfd;

		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			int got;

			memcpy(&got, CMSG_DATA(h) + k * sizeof(int),
			       sizeof(int));
			if (fd && *fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
	if (n == 0)
		return -EPIPE;
	if (n != (ssize_t)sizeof(*m))
		return -EPROTO;
	return 0;
}

/* Restarts a traced task after a stop, re-injecting a real signal. */
static void restart_tracee(pid_t pid, int status)
{
	int sig = 0;

	if ((status >> 16) == 0)
		sig = WSTOPSIG(status);
	ptrace(PTRACE_CONT, pid, NULL, (void *)(uintptr_t)sig);
}

/* One non-blocking look at a child or tracee: 1 when it changed state
 * (status filled), 0 when not, -errno (ECHILD: someone else reaped it). */
static int peek_child(pid_t pid, int *status)
{
	pid_t r;

	do
		r = waitpid(pid, status, __WALL | WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r == pid;
}

/* Reaps a probe child for good, restarting any ptrace stop on the way.
 * Without kill_first it gets PROBE_TIMEOUT_MS to exit on its own, then
 * SIGKILL and as long again. Returns 0 (status filled), -ECHILD when the
 * child was reaped behind our back (SIGCHLD ignored: status unknown), or
 * -ETIMEDOUT. It never signals a pid it has not just seen alive. */
static int reap_child(pid_t pid, bool kill_first, int *status)
{
	int64_t deadline = now_ms() + PROBE_TIMEOUT_MS;
	bool killed = false;
	int s = 0;

	for (;;) {
		int r = peek_child(pid, &s);

		if (r < 0)
			return r;
		if (r > 0) {
			if (WIFEXITED(s) || WIFSIGNALED(s)) {
				if (status)
					*status = s;
				return 0;
			}
			if (WIFSTOPPED(s))
				restart_tracee(pid, s);
			continue;
		}
		if (!killed && (kill_first || now_ms() >= deadline)) {
			kill(pid, SIGKILL);
			killed = true;
			deadline = now_ms() + PROBE_TIMEOUT_MS;
		} else if (killed && now_ms() >= deadline) {
			return -ETIMEDOUT;
		}
		sleep_ms(1);
	}
}

/* A probe child must not outlive the probe, even if the supervisor dies
 * between fork and reap. Async-signal-safe. */
static void child_init(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(127);
}

/* ---- seccomp user notification (one child, four features) ---- */

enum { NS_LISTENER = 1, NS_ROUND1, NS_ROUND2 };

/* The child installs a filter that notifies on getppid() and nothing else,
 * hands its listener to the parent and then asks getppid() twice: the
 * first answer must be PROBE_ANSWER, the second an fd injected by ADDFD.
 * Only async-signal-safe calls: the supervisor may have threads. */
static void notify_child(int sock, pid_t parent) __attribute__((noreturn));
static void notify_child(int sock, pid_t parent)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CR_PROBE_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)CR_ARRAY_SIZE(insns),
		.filter = insns,
	};
	unsigned long flags = SECCOMP_FILTER_FLAG_NEW_LISTENER |
			      SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
	long listener, r;

	child_init(parent);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		send_msg(sock, NS_LISTENER, errno, -1, -1);
		_exit(1);
	}
	listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	if (listener < 0 && errno == EINVAL) {
		flags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
		listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags,
				   &prog);
	}
	if (listener < 0) {
		send_msg(sock, NS_LISTENER, errno, 0, -1);
		_exit(1);
	}
	/* The child must not keep its own listener: whoever holds it
	 * answers for the filtered task. */
	r = send_msg(sock, NS_LISTENER, 0, (int64_t)flags, (int)listener);
	close((int)listener);
	if (r < 0)
		_exit(1);

	r = syscall(SYS_getppid);
	send_msg(sock, NS_ROUND1, r < 0 ? errno : 0, r, -1);

	r = syscall(SYS_getppid);
	if (r >= 0) {
		/* The answer is an fd number: prove it is the injected one
		 * by writing through it. */
		int32_t err = 0;

		if (write((int)r, "k", 1) != 1)
			err = errno ? errno : EIO;
		close((int)r);
		send_msg(sock, NS_ROUND2, err, r, -1);
	} else {
		send_msg(sock, NS_ROUND2, errno, r, -1);
	}
	_exit(0);
}

/* Receives one notification from the probe child and checks it is the
 * getppid() we expect, still pending. notif is zeroed here. */
static int recv_notif(int listener, pid_t pid, struct seccomp_notif *notif,
		      size_t notif_size)
{
	int r = wait_readable(listener, now_ms() + PROBE_TIMEOUT_MS);

	if (r < 0)
		return r;
	memset(notif, 0, notif_size);
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, notif) != 0)
		return -errno;
	if (notif->pid != (__u32)pid || notif->data.nr != __NR_getppid ||
	    notif->data.arch != CR_PROBE_AUDIT_ARCH)
		return -EPROTO;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &notif->id) != 0)
		return -errno;
	return 0;
}

/* Returns true when the child finished its part and will exit by itself. */
static bool probe_notify_run(int sock, pid_t pid)
{
	struct seccomp_notif_sizes sizes = { 0 };
	cr_autofree struct seccomp_notif *notif = NULL;
	cr_autoclose int listener = -1;
	cr_autoclose int inj_r = -1;
	cr_autoclose int inj_w = -1;
	struct seccomp_notif_resp resp;
	struct seccomp_notif_addfd addfd;
	struct pmsg m;
	size_t notif_size = sizeof(*notif);
	int sv[2];
	long remote;
	int r;

	r = recv_msg(sock, &m, &listener, now_ms() + PROBE_TIMEOUT_MS);
	if (r == 0 && m.err == 0 && listener < 0)
		r = -EPROTO;
	if (r < 0 || m.step != NS_LISTENER) {
		note(CR_FEAT_SECCOMP_NOTIFY, false,
		     "probe child did not report: %s", errname(-r));
		return false;
	}
	if (m.err) {
		note(CR_FEAT_SECCOMP_NOTIFY, false, "%s refused: %s%s",
		     m.val < 0 ? "PR_SET_NO_NEW_PRIVS" :
				 "seccomp(NEW_LISTENER)",
		     errname(m.err),
		     m.err == EBUSY ? " (already under a seccomp-notify "
				      "supervisor)" : "");
		return false;
	}
	if ((uint64_t)m.val & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
		note(CR_FEAT_WAIT_KILLABLE_RECV, true,
		     "accepted together with NEW_LISTENER");
	else
		note(CR_FEAT_WAIT_KILLABLE_RECV, false,
		     "flag refused (EINVAL); %s",
		     feat_info[CR_FEAT_WAIT_KILLABLE_RECV].needs);

	/* Set before the round trips so they run the way the supervisor
	 * will run them. */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
		  (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0)
		note(CR_FEAT_NOTIF_SYNC_WAKE_UP, true,
		     "SECCOMP_IOCTL_NOTIF_SET_FLAGS accepted");
	else
		note(CR_FEAT_NOTIF_SYNC_WAKE_UP, false, "%s; %s",
		     errname(errno),
		     feat_info[CR_FEAT_NOTIF_SYNC_WAKE_UP].needs);

	/* The kernel's notification may be larger than our header's. */
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0 &&
	    sizes.seccomp_notif > notif_size)
		notif_size = sizes.seccomp_notif;
	notif = calloc(1, notif_size);
	if (!notif) {
		note(CR_FEAT_SECCOMP_NOTIFY, false, "out of memory");
		return false;
	}

	/* Round 1: a plain answer. */
	r = recv_notif(listener, pid, notif, notif_size);
	if (r < 0) {
		note(CR_FEAT_SECCOMP_NOTIFY, false,
		     "listener installed, but no valid notification: %s",
		     errname(-r));
		return false;
	}
	memset(&resp, 0, sizeof(resp));
	resp.id = notif->id;
	resp.val = PROBE_ANSWER;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0) {
		note(CR_FEAT_SECCOMP_NOTIFY, false, "NOTIF_SEND: %s",
		     errname(errno));
		return false;
	}
	r = recv_msg(sock, &m, NULL, now_ms() + PROBE_TIMEOUT_MS);
	if (r < 0 || m.step != NS_ROUND1 || m.err || m.val != PROBE_ANSWER) {
		if (r < 0)
			note(CR_FEAT_SECCOMP_NOTIFY, false,
			     "answer did not reach the child: %s", errname(-r));
		else
			note(CR_FEAT_SECCOMP_NOTIFY, false,
			     "the child's getppid() returned %lld (%s), not %d",
			     (long long)m.val, m.err ? errname(m.err) : "ok",
			     PROBE_ANSWER);
		return false;
	}
	note(CR_FEAT_SECCOMP_NOTIFY, true,
	     "round trip: the child's getppid() returned %d, answered by us",
	     PROBE_ANSWER);

	/* Round 2: the answer is an fd injected atomically with it. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		note(CR_FEAT_NOTIF_ADDFD_SEND, false, "socketpair: %s",
		     errname(errno));
		return false;
	}
	inj_r = sv[0];
	inj_w = sv[1];
	r = recv_notif(listener, pid, notif, notif_size);
	if (r < 0) {
		note(CR_FEAT_NOTIF_ADDFD_SEND, false,
		     "second notification: %s", errname(-r));
		return false;
	}
	memset(&addfd, 0, sizeof(addfd));
	addfd.id = notif->id;
	addfd.flags = SECCOMP_ADDFD_FLAG_SEND;
	addfd.srcfd = (__u32)inj_w;
	addfd.newfd_flags = O_CLOEXEC;
	remote = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
	if (remote < 0) {
		note(CR_FEAT_NOTIF_ADDFD_SEND, false,
		     "NOTIF_ADDFD(SEND): %s; %s", errname(errno),
		     feat_info[CR_FEAT_NOTIF_ADDFD_SEND].needs);
		return false;
	}
	r = recv_msg(sock, &m, NULL, now_ms() + PROBE_TIMEOUT_MS);
	if (r < 0 || m.step != NS_ROUND2 || m.err || m.val != remote) {
		note(CR_FEAT_NOTIF_ADDFD_SEND, false,
		     "injected fd %ld not usable in the child (%s)", remote,
		     r < 0 ? errname(-r) : m.err ? errname(m.err) : "wrong fd");
		return false;
	}
	{
		char c = 0;

		if (wait_readable(inj_r, now_ms() + PROBE_TIMEOUT_MS) < 0 ||
		    read(inj_r, &c, 1) != 1 || c != 'k') {
			note(CR_FEAT_NOTIF_ADDFD_SEND, false,
			     "the child's write through fd %ld did not arrive",
			     remote);
			return false;
		}
	}
	note(CR_FEAT_NOTIF_ADDFD_SEND, true,
	     "an injected fd (%ld in the child) was the answer; the child "
	     "wrote through it", remote);
	return true;
}

static void probe_notify(void)
{
	pid_t parent = getpid();
	int sv[2];
	pid_t pid;
	bool done;

	note(CR_FEAT_SECCOMP_NOTIFY, false, "not tried");
	note(CR_FEAT_WAIT_KILLABLE_RECV, false, "needs a seccomp listener");
	note(CR_FEAT_NOTIF_ADDFD_SEND, false, "needs a seccomp listener");
	note(CR_FEAT_NOTIF_SYNC_WAKE_UP, false, "needs a seccomp listener");

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		note(CR_FEAT_SECCOMP_NOTIFY, false, "socketpair: %s",
		     errname(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		note(CR_FEAT_SECCOMP_NOTIFY, false, "fork: %s", errname(errno));
		close(sv[0]);
		close(sv[1]);
		return;
	}
	if (pid == 0) {
		close(sv[0]);
		notify_child(sv[1], parent);
	}
	close(sv[1]);
	done = probe_notify_run(sv[0], pid);
	close(sv[0]);
	/* A child whose round trip failed is killed at once; one that
	 * finished exits by itself. The verdicts above rest on what the
	 * child reported, not on its exit status. */
	reap_child(pid, !done, NULL);
}

/* ---- pidfds, process_vm_readv and ptrace (one child) ---- */

enum { PS_READY = 1, PS_GO, PS_FORKED };

/* Written by the child after fork, so the parent's copy stays zero: a
 * successful cross-process read cannot be reading our own memory. */
static unsigned char probe_marker[32];

static void fill_marker(unsigned char *buf, size_t len, pid_t pid)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(((unsigned)pid * 31u + i * 7u) | 1u);
}

/* The child fills its marker, waits for "go" (the parent seizes it
 * first), forks a grandchild that exits at once, reaps it, reports, and
 * then waits to be killed through its pidfd. Async-signal-safe only. */
static void process_child(int sock, pid_t parent) __attribute__((noreturn));
static void process_child(int sock, pid_t parent)
{
	struct pmsg m;
	pid_t g;
	int s;

	child_init(parent);
	fill_marker(probe_marker, sizeof(probe_marker), getpid());
	if (send_msg(sock, PS_READY, 0, 0, -1) < 0)
		_exit(1);
	if (read(sock, &m, sizeof(m)) != (ssize_t)sizeof(m))
		_exit(1);
	g = fork();
	if (g == 0)
		_exit(0);
	if (g < 0) {
		send_msg(sock, PS_FORKED, errno, -1, -1);
		_exit(1);
	}
	while (waitpid(g, &s, 0) < 0 && errno == EINTR)
		;
	send_msg(sock, PS_FORKED, 0, g, -1);
	/* EOF (the parent gave up) or SIGKILL ends us. */
	while (read(sock, &m, sizeof(m)) > 0)
		;
	_exit(0);
}

struct proc_probe {
	pid_t pid;
	int sock;
	int child_fd;		/* the child's socket, by number in the child */
	struct stat child_fd_st;
	int pidfd;
	bool seized;
	pid_t gpid;		/* grandchild seen through the fork event */
	bool g_live;		/* traced by us and not yet seen exiting */
	bool reaped;
	int status;
};

static void try_vm_readv(struct proc_probe *p)
{
	unsigned char want[sizeof(probe_marker)], got[sizeof(probe_marker)];
	struct iovec local = { .iov_base = got, .iov_len = sizeof(got) };
	struct iovec remote = { .iov_base = probe_marker,
				.iov_len = sizeof(probe_marker) };
	ssize_t n;

	memset(got, 0, sizeof(got));
	fill_marker(want, sizeof(want), p->pid);
	n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		note(CR_FEAT_PROCESS_VM_READV, false, "%s; %s", errname(errno),
		     feat_info[CR_FEAT_PROCESS_VM_READV].needs);
	else if (n != (ssize_t)sizeof(got) || memcmp(got, want, sizeof(got)))
		note(CR_FEAT_PROCESS_VM_READV, false,
		     "read %zd bytes that are not the child's", n);
	else
		note(CR_FEAT_PROCESS_VM_READV, true,
		     "read %zu bytes of a child's memory", sizeof(got));
}

static void try_pidfds(struct proc_probe *p)
{
	struct stat s;
	long fd;

	fd = syscall(__NR_pidfd_open, p->pid, 0);
	if (fd < 0) {
		note(CR_FEAT_PIDFD_OPEN, false, "%s; %s", errname(errno),
		     feat_info[CR_FEAT_PIDFD_OPEN].needs);
		note(CR_FEAT_PIDFD_GETFD, false, "needs pidfd_open");
		note(CR_FEAT_PIDFD_SEND_SIGNAL, false, "needs pidfd_open");
		return;
	}
	p->pidfd = (int)fd;
	note(CR_FEAT_PIDFD_OPEN, true, "pidfd of a child");

	fd = syscall(__NR_pidfd_getfd, p->pidfd, p->child_fd, 0);
	if (fd < 0) {
		note(CR_FEAT_PIDFD_GETFD, false, "%s; %s", errname(errno),
		     feat_info[CR_FEAT_PIDFD_GETFD].needs);
		return;
	}
	if (fstat((int)fd, &s) == 0 && s.st_ino == p->child_fd_st.st_ino &&
	    s.st_dev == p->child_fd_st.st_dev)
		note(CR_FEAT_PIDFD_GETFD, true,
		     "copied a child's socket (same inode)");
	else
		note(CR_FEAT_PIDFD_GETFD, false,
		     "returned an fd that is not the child's");
	close((int)fd);
}

/* Restarts the traced tasks until the child reports its fork and the
 * grandchild is gone, noting the fork event on the way. */
static int drive_fork(struct proc_probe *p, struct pmsg *forked)
{
	int64_t deadline = now_ms() + PROBE_TIMEOUT_MS;
	bool got_msg = false;

	while (now_ms() < deadline) {
		int s, r;

		r = p->reaped ? 0 : peek_child(p->pid, &s);
		if (r < 0)
			return r;
		if (r > 0 && (WIFEXITED(s) || WIFSIGNALED(s))) {
			p->reaped = true;
			p->status = s;
			return -ECHILD;
		}
		if (r > 0 && WIFSTOPPED(s)) {
			int ev = s >> 16;
			unsigned long msg = 0;
			bool is_fork = ev == PTRACE_EVENT_FORK ||
				       ev == PTRACE_EVENT_VFORK ||
				       ev == PTRACE_EVENT_CLONE;

			if (is_fork && !p->gpid &&
			    ptrace(PTRACE_GETEVENTMSG, p->pid, NULL,
				   &msg) == 0) {
				p->gpid = (pid_t)msg;
				p->g_live = true;
			}
			restart_tracee(p->pid, s);
		}
		if (p->g_live) {
			r = peek_child(p->gpid, &s);
			if (r < 0 ||
			    (r > 0 && (WIFEXITED(s) || WIFSIGNALED(s))))
				p->g_live = false;
			else if (r > 0 && WIFSTOPPED(s))
				restart_tracee(p->gpid, s);
		}
		if (!got_msg) {
			struct pollfd pf = { .fd = p->sock, .events = POLLIN };

			if (poll(&pf, 1, 1) > 0) {
				r = recv_msg(p->sock, forked, NULL,
					     now_ms() + 1);
				if (r < 0)
					return r;
				got_msg = true;
			}
		} else {
			sleep_ms(1);
		}
		if (got_msg && !p->g_live && (p->gpid || !p->seized))
			return 0;
	}
	return -ETIMEDOUT;
}

static void try_ptrace_and_kill(struct proc_probe *p)
{
	unsigned long opts = PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK |
			     PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
			     PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;
	struct pmsg forked = { 0 };
	int r;

	if (ptrace(PTRACE_SEIZE, p->pid, NULL, (void *)opts) == 0) {
		p->seized = true;
	} else {
		int e = errno;
		cr_autofree char *yama = NULL;
		char *nl;

		if (read_small_at(AT_FDCWD,
				  "/proc/sys/kernel/yama/ptrace_scope",
				  &yama) == 0 &&
		    (nl = strchr(yama, '\n')))
			*nl = '\0';
		note(CR_FEAT_PTRACE_SEIZE, false, "%s%s%s; %s", errname(e),
		     yama ? ", Yama ptrace_scope is " : "", yama ? yama : "",
		     feat_info[CR_FEAT_PTRACE_SEIZE].needs);
	}
	if (send_msg(p->sock, PS_GO, 0, 0, -1) < 0) {
		if (p->seized)
			note(CR_FEAT_PTRACE_SEIZE, false,
			     "probe child vanished");
		return;
	}
	r = drive_fork(p, &forked);
	if (p->seized) {
		if (r < 0)
			note(CR_FEAT_PTRACE_SEIZE, false,
			     "seized, but the fork did not complete: %s",
			     errname(-r));
		else if (!p->gpid || forked.err || forked.val != p->gpid)
			note(CR_FEAT_PTRACE_SEIZE, false,
			     "seized, but no fork event for the new child");
		else
			note(CR_FEAT_PTRACE_SEIZE, true,
			     "EXITKILL|TRACEFORK|TRACEVFORK|TRACECLONE|"
			     "TRACEEXEC|TRACEEXIT; fork event arrived, "
			     "new child attached");
	}

	if (p->pidfd < 0 || p->reaped)
		return;
	if (syscall(__NR_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0) != 0) {
		note(CR_FEAT_PIDFD_SEND_SIGNAL, false, "%s; %s", errname(errno),
		     feat_info[CR_FEAT_PIDFD_SEND_SIGNAL].needs);
		return;
	}
	/* The child ignores nothing and was blocked in read(): only our
	 * SIGKILL ends it. A pidfd turns readable once its process exited,
	 * which also covers a status lost to an ignored SIGCHLD. */
	r = reap_child(p->pid, false, &p->status);
	if (r == 0 || r == -ECHILD)
		p->reaped = true;
	if ((r == 0 && WIFSIGNALED(p->status) &&
	     WTERMSIG(p->status) == SIGKILL) ||
	    (r == -ECHILD && wait_readable(p->pidfd, now_ms() + 1) == 0))
		note(CR_FEAT_PIDFD_SEND_SIGNAL, true,
		     "SIGKILL through the pidfd ended the child");
	else
		note(CR_FEAT_PIDFD_SEND_SIGNAL, false,
		     "the signal was accepted but did not end the child");
}

static void probe_process(void)
{
	struct proc_probe p = { .pidfd = -1 };
	pid_t parent = getpid();
	struct pmsg m;
	int sv[2];
	int r;

	note(CR_FEAT_PIDFD_OPEN, false, "not tried");
	note(CR_FEAT_PIDFD_GETFD, false, "not tried");
	note(CR_FEAT_PIDFD_SEND_SIGNAL, false, "not tried");
	note(CR_FEAT_PROCESS_VM_READV, false, "not tried");
	note(CR_FEAT_PTRACE_SEIZE, false, "not tried");

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		note(CR_FEAT_PTRACE_SEIZE, false, "socketpair: %s",
		     errname(errno));
		return;
	}
	if (fstat(sv[1], &p.child_fd_st) != 0)
		memset(&p.child_fd_st, 0, sizeof(p.child_fd_st));
	p.pid = fork();
	if (p.pid < 0) {
		note(CR_FEAT_PTRACE_SEIZE, false, "fork: %s", errname(errno));
		close(sv[0]);
		close(sv[1]);
		return;
	}
	if (p.pid == 0) {
		close(sv[0]);
		process_child(sv[1], parent);
	}
	p.sock = sv[0];
	p.child_fd = sv[1];
	close(sv[1]);

	r = recv_msg(p.sock, &m, NULL, now_ms() + PROBE_TIMEOUT_MS);
	if (r < 0 || m.step != PS_READY) {
		note(CR_FEAT_PTRACE_SEIZE, false,
		     "probe child did not start: %s",
		     errname(r < 0 ? -r : EPROTO));
	} else {
		try_vm_readv(&p);
		try_pidfds(&p);
		try_ptrace_and_kill(&p);
	}

	/* Whatever happened above, nothing we started survives: the traced
	 * grandchild first (its real parent is waiting for it), then the
	 * child. */
	if (p.g_live) {
		kill(p.gpid, SIGKILL);
		reap_child(p.gpid, false, NULL);
	}
	if (!p.reaped)
		reap_child(p.pid, true, NULL);
	if (p.pidfd >= 0)
		close(p.pidfd);
	close(p.sock);
}

/* ---- openat2, close_range, Landlock (no child needed) ---- */

static void probe_openat2(void)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH,
	};
	cr_autoclose int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	long fd;

	if (root < 0) {
		note(CR_FEAT_OPENAT2, false, "open(\"/\"): %s", errname(errno));
		return;
	}
	fd = syscall(__NR_openat2, root, ".", &how, sizeof(how));
	if (fd < 0) {
		note(CR_FEAT_OPENAT2, false, "%s; %s", errname(errno),
		     feat_info[CR_FEAT_OPENAT2].needs);
		return;
	}
	close((int)fd);
	fd = syscall(__NR_openat2, root, "../x", &how, sizeof(how));
	if (fd >= 0) {
		close((int)fd);
		note(CR_FEAT_OPENAT2, false,
		     "RESOLVE_BENEATH let \"../x\" escape");
	} else if (errno != EXDEV) {
		note(CR_FEAT_OPENAT2, false,
		     "RESOLVE_BENEATH: \"../x\" gave %s, not EXDEV",
		     errname(errno));
	} else {
		note(CR_FEAT_OPENAT2, true,
		     "RESOLVE_BENEATH: \"../x\" gives EXDEV");
	}
}

static void probe_close_range(void)
{
	int fd = dup(STDERR_FILENO);

	if (fd < 0)
		fd = open("/dev/null", O_RDONLY);
	if (fd < 0) {
		note(CR_FEAT_CLOSE_RANGE, false, "no fd to try it on: %s",
		     errname(errno));
		return;
	}
	if (syscall(__NR_close_range, fd, fd, CLOSE_RANGE_CLOEXEC) != 0) {
		note(CR_FEAT_CLOSE_RANGE, false, "CLOSE_RANGE_CLOEXEC: %s; %s",
		     errname(errno), feat_info[CR_FEAT_CLOSE_RANGE].needs);
		close(fd);
		return;
	}
	if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC)) {
		note(CR_FEAT_CLOSE_RANGE, false,
		     "CLOSE_RANGE_CLOEXEC did not set FD_CLOEXEC");
		close(fd);
		return;
	}
	if (syscall(__NR_close_range, fd, fd, 0) != 0) {
		note(CR_FEAT_CLOSE_RANGE, false, "%s", errname(errno));
		close(fd);
		return;
	}
	if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
		note(CR_FEAT_CLOSE_RANGE, false, "the fd stayed open");
		close(fd);
		return;
	}
	note(CR_FEAT_CLOSE_RANGE, true, "CLOSE_RANGE_CLOEXEC and close");
}

static void probe_landlock(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0,
			   LANDLOCK_CREATE_RULESET_VERSION);

	if (abi > 0) {
		st.landlock_abi = (int)abi;
		snprintf(st.landlock_detail, sizeof(st.landlock_detail),
			 "ABI %ld: usable as an extra layer", abi);
	} else {
		int e = errno;

		st.landlock_abi = 0;
		snprintf(st.landlock_detail, sizeof(st.landlock_detail),
			 "%s; %s", errname(e),
			 e == EOPNOTSUPP ? "built in but not enabled (lsm=)" :
			 "needs a kernel with Landlock (5.13+); optional");
	}
}

/* ---- delegated cgroup v2 subtree (looked at, never created) ---- */

/* Reads a small file into a fresh NUL-terminated string. 0 or -errno. */
static int read_small_at(int dirfd, const char *path, char **out)
{
	cr_autoclose int fd = openat(dirfd, path,
				     O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t cap = 4096, len = 0;
	cr_autofree char *buf = NULL;

	*out = NULL;
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len + 1 == cap) {
			char *bigger;

			if (cap >= (1u << 20))
				return -EFBIG;
			bigger = realloc(buf, cap * 2);
			if (!bigger)
				return -ENOMEM;
			buf = bigger;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = cr_steal_ptr(&buf);
	return 0;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_mount_path(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

/* Finds the cgroup2 mount: its mount point and the cgroup path it shows
 * as its root. Hybrid hosts mount it at /sys/fs/cgroup/unified. */
static int find_cgroup2_mount(char *mnt, size_t mntlen, char *root,
			      size_t rootlen)
{
	cr_autofree char *mi = NULL;
	char *line, *save = NULL;
	int r = read_small_at(AT_FDCWD, "/proc/self/mountinfo", &mi);

	if (r < 0)
		return r;
	for (line = strtok_r(mi, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sep = strstr(line, " - ");
		char *f[5], *save2 = NULL, *tok;
		int n = 0;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		*sep = '\0';
		for (tok = strtok_r(line, " ", &save2); tok && n < 5;
		     tok = strtok_r(NULL, " ", &save2))
			f[n++] = tok;
		if (n < 5)
			continue;
		unescape_mount_path(f[3]);
		unescape_mount_path(f[4]);
		if (strlen(f[4]) >= mntlen || strlen(f[3]) >= rootlen)
			continue;
		strcpy(mnt, f[4]);
		strcpy(root, f[3]);
		return 0;
	}
	return -ENOENT;
}

static void cgroup_no(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void cgroup_no(const char *fmt, ...)
{
	va_list ap;

	st.cgroup[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(st.cgroup_detail, sizeof(st.cgroup_detail), fmt, ap);
	va_end(ap);
}

static void probe_cgroup(void)
{
	cr_autofree char *self = NULL;
	cr_autofree char *ctrl = NULL;
	char mnt[PATH_MAX], root[PATH_MAX], dir[PATH_MAX];
	cr_autoclose int dfd = -1;
	static const char *const files[] = { "cgroup.procs",
					     "cgroup.subtree_control" };
	const char *path = NULL, *rel;
	char *line, *save = NULL, *nl;
	struct statfs sf;
	size_t i, rl;
	int r;

	r = read_small_at(AT_FDCWD, "/proc/self/cgroup", &self);
	if (r < 0) {
		cgroup_no("/proc/self/cgroup: %s", errname(-r));
		return;
	}
	for (line = strtok_r(self, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "0::", 3) == 0)
			path = line + 3;
	if (!path || path[0] != '/') {
		cgroup_no("this process is in no cgroup v2 hierarchy");
		return;
	}
	r = find_cgroup2_mount(mnt, sizeof(mnt), root, sizeof(root));
	if (r < 0) {
		cgroup_no("no cgroup2 mount visible: %s", errname(-r));
		return;
	}
	/* The mount shows the hierarchy from `root`; our path must lie
	 * inside it to be reachable through this mount. */
	rel = path;
	rl = strlen(root);
	if (strcmp(root, "/") != 0) {
		if (strncmp(path, root, rl) != 0 ||
		    (path[rl] != '/' && path[rl] != '\0')) {
			cgroup_no("our cgroup %s is outside the cgroup2 mount "
				  "at %s", path, mnt);
			return;
		}
		rel = path + rl;
	}
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s",
			     strcmp(mnt, "/") ? mnt : "",
			     strcmp(rel, "/") ? rel : "") >= sizeof(dir)) {
		cgroup_no("cgroup path too long");
		return;
	}
	if (dir[0] == '\0')
		strcpy(dir, "/");
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstatfs(dfd, &sf) != 0) {
		cgroup_no("%s: %s", dir, errname(errno));
		return;
	}
	if ((unsigned long)sf.f_type != (unsigned long)CGROUP2_SUPER_MAGIC) {
		cgroup_no("%s is not cgroup2", dir);
		return;
	}
	/* Looked at with access checks only: the probe creates nothing. */
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0) {
		cgroup_no("%s: directory not writable by uid %u (%s); ask the "
			  "service manager to delegate a subtree", dir,
			  (unsigned)geteuid(), errname(errno));
		return;
	}
	for (i = 0; i < CR_ARRAY_SIZE(files); i++) {
		if (faccessat(dfd, files[i], W_OK, AT_EACCESS) != 0) {
			cgroup_no("%s/%s: not writable by uid %u (%s)",
				  dir, files[i], (unsigned)geteuid(),
				  errname(errno));
			return;
		}
	}
	if (read_small_at(dfd, "cgroup.controllers", &ctrl) == 0 &&
	    (nl = strchr(ctrl, '\n')))
		*nl = '\0';
	snprintf(st.cgroup, sizeof(st.cgroup), "%s", dir);
	snprintf(st.cgroup_detail, sizeof(st.cgroup_detail),
		 "writable%s; controllers: %s",
		 strcmp(rel, "/") ? "" : ", the hierarchy's root",
		 ctrl && ctrl[0] ? ctrl : "none");
}

/* ---- user namespaces: reported only, never used ---- */

static void userns_child(int sock, pid_t parent) __attribute__((noreturn));
static void userns_child(int sock, pid_t parent)
{
	int e;

	child_init(parent);
	/* A throwaway child: the namespace dies with it. */
	e = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
	send_msg(sock, 1, e, 0, -1);
	_exit(0);
}

static void probe_userns(void)
{
	pid_t parent = getpid();
	struct pmsg m;
	int sv[2];
	pid_t pid;
	int r;

	st.userns = false;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		snprintf(st.userns_detail, sizeof(st.userns_detail),
			 "socketpair: %s", errname(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(st.userns_detail, sizeof(st.userns_detail),
			 "fork: %s", errname(errno));
		close(sv[0]);
		close(sv[1]);
		return;
	}
	if (pid == 0) {
		close(sv[0]);
		userns_child(sv[1], parent);
	}
	close(sv[1]);
	r = recv_msg(sv[0], &m, NULL, now_ms() + PROBE_TIMEOUT_MS);
	close(sv[0]);
	reap_child(pid, r < 0, NULL);
	if (r < 0)
		snprintf(st.userns_detail, sizeof(st.userns_detail),
			 "probe child did not report: %s", errname(-r));
	else if (m.err)
		snprintf(st.userns_detail, sizeof(st.userns_detail),
			 "unshare(CLONE_NEWUSER): %s; corral does not "
			 "need them", errname(m.err));
	else
		st.userns = true;
	if (st.userns)
		snprintf(st.userns_detail, sizeof(st.userns_detail),
			 "unshare(CLONE_NEWUSER) works in a throwaway child; "
			 "reported only: corral never uses namespaces");
}

/* ---- memoization ---- */

static pthread_once_t once[G__COUNT] = {
	PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
	PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
	PTHREAD_ONCE_INIT,
};

static void (*const group_fn[G__COUNT])(void) = {
	[G_NOTIFY] = probe_notify,
	[G_PROCESS] = probe_process,
	[G_OPENAT2] = probe_openat2,
	[G_CLOSE_RANGE] = probe_close_range,
	[G_LANDLOCK] = probe_landlock,
	[G_CGROUP] = probe_cgroup,
	[G_USERNS] = probe_userns,
};

static void run_group(enum probe_group g)
{
	pthread_once(&once[g], group_fn[g]);
}

bool cr_probe_has(enum cr_feature f)
{
	if ((unsigned)f >= CR_FEAT__COUNT)
		return false;
	run_group(feat_info[f].group);
	return st.has[f];
}

const char *cr_probe_name(enum cr_feature f)
{
	if ((unsigned)f >= CR_FEAT__COUNT)
		return "unknown";
	return feat_info[f].name;
}

int cr_probe_landlock_abi(void)
{
	run_group(G_LANDLOCK);
	return st.landlock_abi;
}

const char *cr_probe_delegated_cgroup(void)
{
	run_group(G_CGROUP);
	return st.cgroup[0] ? st.cgroup : NULL;
}

/* ---- `corral probe [--json]` ---- */

static bool sandbox_possible(void)
{
	int f;

	for (f = 0; f < CR_FEAT__COUNT; f++)
		if (feat_info[f].required && !cr_probe_has(f))
			return false;
	return true;
}

/* The filter a run would load, built and run on every foreign-ABI input:
 * read from the program itself, not assumed from how it was built. */
static bool filter_checks_arch(void)
{
	static int memo = -1;
	struct cr_filter f;

	/* Every fast-path level's program: each is one a run may load. */
	for (int fast = CR_FAST_OFF; memo < 0 && fast <= CR_FAST_OPEN; fast++) {
		bool ok = cr_filter_build_profile(&f, cr_profile_default(),
						  fast) == 0 &&
			  cr_filter_verify_arch(&f) == 0;

		cr_filter_free(&f);
		if (!ok)
			memo = 0;
	}
	if (memo < 0)
		memo = 1;
	return memo;
}

static void print_row(const char *name, const char *value, const char *detail)
{
	if (detail && detail[0])
		printf("%-22s %s (%s)\n", name, value, detail);
	else
		printf("%-22s %s\n", name, value);
}

static void print_human(const char *arch)
{
	char key[64], abi[16];
	int f;

	for (f = 0; f < CR_FEAT__COUNT; f++) {
		snprintf(key, sizeof(key), "%s:", feat_info[f].name);
		print_row(key, cr_probe_has(f) ? "yes" : "no", st.detail[f]);
	}
	snprintf(abi, sizeof(abi), "%d", cr_probe_landlock_abi());
	print_row("landlock_abi:", abi, st.landlock_detail);
	print_row("delegated_cgroup:",
		  cr_probe_delegated_cgroup() ? st.cgroup : "no",
		  st.cgroup_detail);
	print_row("namespaces_available:", st.userns ? "yes" : "no",
		  st.userns_detail);
	print_row("namespaces_used:", "no",
		  "corral runs without user, mount or pid namespaces");
	/* Lines about corral itself (its syscall profile version) belong
	 * here, between the kernel's answers and the verdict. */
	{
		const struct cr_profile *p = cr_profile_default();
		char v[128];

		snprintf(v, sizeof(v), "%s %s", p->name, p->version);
		print_row("syscall_profile:", v, "the default class's");
		print_row("filter_checks_arch:", filter_checks_arch() ? "yes" : "no",
			  "every i386 and x32 call, run through the built filter, is killed");
	}
	print_row("arch:", arch, NULL);
	print_row("sandbox_possible:", sandbox_possible() ? "yes" : "no", NULL);
	for (f = 0; f < CR_FEAT__COUNT; f++)
		if (feat_info[f].required && !cr_probe_has(f))
			printf("missing: %s: %s\n", feat_info[f].name,
			       feat_info[f].needs);
}

static int print_json(const char *arch)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *feats, *details, *missing;
	cr_autofree char *text = NULL;
	bool ok = root != NULL;
	int f;

	ok = ok && cJSON_AddBoolToObject(root, "sandbox_possible",
					 sandbox_possible());
	feats = cJSON_AddObjectToObject(root, "features");
	details = cJSON_AddObjectToObject(root, "details");
	ok = ok && feats && details;
	for (f = 0; ok && f < CR_FEAT__COUNT; f++) {
		ok = cJSON_AddBoolToObject(feats, feat_info[f].name,
					   cr_probe_has(f)) &&
		     cJSON_AddStringToObject(details, feat_info[f].name,
					     st.detail[f]);
	}
	ok = ok && cJSON_AddNumberToObject(root, "landlock_abi",
					   cr_probe_landlock_abi());
	if (ok && cr_probe_delegated_cgroup())
		ok = cJSON_AddStringToObject(root, "delegated_cgroup",
					     st.cgroup) != NULL;
	else
		ok = ok && cJSON_AddNullToObject(root, "delegated_cgroup");
	ok = ok && cJSON_AddStringToObject(details, "delegated_cgroup",
					   st.cgroup_detail) &&
	     cJSON_AddStringToObject(details, "landlock_abi",
				     st.landlock_detail);
	run_group(G_USERNS);
	ok = ok && cJSON_AddBoolToObject(root, "namespaces_available",
					 st.userns) &&
	     cJSON_AddBoolToObject(root, "namespaces_used", false) &&
	     cJSON_AddStringToObject(details, "namespaces_available",
				     st.userns_detail) &&
	     cJSON_AddStringToObject(root, "arch", arch);
	/* Keys about corral itself (its syscall profile version) go here. */
	{
		cJSON *sp = cJSON_AddObjectToObject(root, "syscall_profile");

		ok = ok && sp &&
		     cJSON_AddStringToObject(sp, "name", cr_profile_default()->name) &&
		     cJSON_AddStringToObject(sp, "version",
					     cr_profile_default()->version) &&
		     cJSON_AddBoolToObject(root, "filter_checks_arch",
					   filter_checks_arch());
	}
	missing = cJSON_AddArrayToObject(root, "missing");
	ok = ok && missing;
	for (f = 0; ok && f < CR_FEAT__COUNT; f++) {
		cJSON *item;

		if (!feat_info[f].required || cr_probe_has(f))
			continue;
		item = cJSON_CreateString(feat_info[f].name);
		ok = item && cJSON_AddItemToArray(missing, item);
		if (!ok)
			cJSON_Delete(item);
	}
	if (ok)
		text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text) {
		fprintf(stderr, "corral probe: out of memory\n");
		return -ENOMEM;
	}
	printf("%s\n", text);
	return 0;
}

int cr_probe_main(int argc, char **argv)
{
	struct utsname u;
	const char *arch = "unknown";
	bool json = false;
	bool possible;
	int i, f;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "-h") == 0 ||
			   strcmp(argv[i], "--help") == 0) {
			printf("usage: corral probe [--json]\n"
			       "Tries each kernel feature corral uses and "
			       "reports it; exit 0 when sandboxing is possible "
			       "here, 1 when not.\n");
			return 0;
		} else {
			fprintf(stderr, "corral probe: unknown argument '%s'\n"
				"usage: corral probe [--json]\n", argv[i]);
			return 125;
		}
	}
	if (uname(&u) == 0)
		arch = u.machine;

	/* Every probe runs before the first byte is printed: the report
	 * describes one moment, and the lookups below are memoized reads. */
	for (i = 0; i < G__COUNT; i++)
		run_group((enum probe_group)i);
	possible = sandbox_possible();

	if (json) {
		if (print_json(arch) < 0)
			return 125;
	} else {
		print_human(arch);
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "corral probe: writing the report: %s\n",
			strerror(errno));
		return 125;
	}
	if (!possible) {
		for (f = 0; json && f < CR_FEAT__COUNT; f++)
			if (feat_info[f].required && !cr_probe_has(f))
				fprintf(stderr,
					"corral probe: missing %s: %s\n",
					feat_info[f].name, feat_info[f].needs);
		return 1;
	}
	return 0;
}
