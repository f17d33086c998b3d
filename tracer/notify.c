/* tracer/notify.c: receives seccomp notifications, dispatches them through
 * the syscall table and answers; records denials for result and audit. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <cJSON.h>
#include <linux/audit.h>

#include "tracer.h"
#include "budget/budget.h"
#include "surface.h"

static struct cr_verdict fail_closed(struct cr_run *run, pid_t pid,
				     const char *name, const char *why)
{
	cr_deny(run, pid, name, NULL, "syscall", why);
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
}

/* The test-only build that answers CONTINUE for opens (handlers/open.c);
 * always false in corral itself. */
static bool cr_test_bypass(const struct cr_syscall_entry *e)
{
#ifdef CR_TEST_BYPASS_OPEN
	return e && (!strcmp(e->name, "open") || !strcmp(e->name, "openat") ||
		     !strcmp(e->name, "openat2") || !strcmp(e->name, "creat"));
#else
	(void)e;
	return false;
#endif
}

static void answer(struct cr_run *run, const struct seccomp_notif *n,
		   const struct cr_syscall_entry *e, struct cr_verdict v)
{
	struct seccomp_notif_resp resp = { .id = n->id };

	/* The stance is enforced here, not trusted to each handler: only an
	 * entry whose verdict read nothing but registers may let the kernel
	 * run the call. Anything else fails closed. */
	if (v.kind == CR_V_CONTINUE &&
	    (!e || (e->stance != CR_STANCE_REGS && e->stance != CR_STANCE_RECHECKED)) &&
	    !cr_test_bypass(e))
		v = fail_closed(run, (pid_t)n->pid, e ? e->name : "unknown",
				"internal: CONTINUE refused for a memory-reading handler");
	switch (v.kind) {
	case CR_V_ERRNO:
		resp.error = -(v.error > 0 ? v.error : EPERM);
		break;
	case CR_V_VALUE:
		resp.val = v.val;
		break;
	case CR_V_CONTINUE:
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		break;
	case CR_V_SENT:
		return;
	case CR_V_KILL:
		resp.error = -EPERM;
		cr_run_end(run, CR_ST_POLICY_DENIED, NULL,
			   "the program made a call on the kill list (%s)",
			   e ? e->name : "unknown");
		break;
	}
	/* ENOENT: the task died or was interrupted meanwhile; nothing to do. */
	if (ioctl(run->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 &&
	    errno != ENOENT) {
		/* The task stays blocked until the tree is killed. */
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot answer a seccomp notification: %s",
			   strerror(errno));
	}
}

/* Entries of one call with an argument condition (ioctl TIOCSTI, ioctl
 * TIOCGPTPEER) may have different handlers and stances: the entry is the one
 * whose condition the registers match, which the filter already checked. */
static const struct cr_syscall_entry *matching(const struct cr_syscall_entry *e,
					      const struct seccomp_notif *n)
{
	if (e->arg < 0 || e->nonzero)
		return e;
	for (size_t i = (size_t)(e - cr_syscalls); i < cr_nsyscalls; i++) {
		const struct cr_syscall_entry *o = &cr_syscalls[i];

		if (o->nr == e->nr && o->arg >= 0 && o->arg < 6 && o->anybits &&
		    (n->data.args[o->arg] & o->anybits))
			return o;
		if (o->nr == e->nr && o->arg >= 0 && o->arg < 6 && !o->nonzero &&
		    !o->anybits &&
		    (n->data.args[o->arg] & o->mask) == o->value &&
		    (!o->notall ||
		     (n->data.args[o->arg] & o->notall) != o->notall))
			return o;
	}
	return e;
}

/*
 * A signal that reaches a thread waiting in a notification before corral
 * has received it makes the kernel withdraw the notification and fail the
 * call with ERESTARTSYS: with a handler installed without SA_RESTART (all
 * of Python's) the program then sees EINTR from a stat, an open or a kill,
 * which the kernel never gives for them. After corral has received it the
 * wait is killable only (WAIT_KILLABLE_RECV). At the signal-delivery stop
 * the call's registers are still there: when the program's own filter
 * says that call was notified, the ERESTARTSYS can only be that withdrawn
 * wait, and ERESTARTNOINTR makes the kernel run the handler and then make
 * the call again, as if the signal had come just before it. recvfrom is
 * a notified call that corral may CONTINUE into a real wait (the kernel's
 * own ERESTARTSYS there is the program's EINTR): left alone. So is a
 * blocking lock (F_SETLKW, F_OFD_SETLKW) corral has continued: the task
 * is marked when it is answered and unmarked at its next notification,
 * and only that same call is left alone (an earlier build made every
 * interrupted lock wait again: `alarm` around `lockf` hung until the lock
 * was freed; found by a differential probing session). A lock call whose
 * notification was withdrawn unreceived is made again, as any, unless it
 * follows a continued lock with no other notified call between: corral
 * cannot see that call return, so the mark still stands and the program
 * gets EINTR, which POSIX allows F_SETLKW at any signal (a probing
 * session measured 1 in 6 blocking locks of a free lock under a
 * continuous storm of signals; none natively).
 */
#define CR_ERESTARTNOINTR 513

void cr_regs_seccomp_data(const struct user_regs_struct *r,
			  struct seccomp_data *d)
{
	memset(d, 0, sizeof(*d));
	d->arch = AUDIT_ARCH_X86_64;
	d->nr = (int)r->orig_rax;
	d->instruction_pointer = r->rip;
	d->args[0] = r->rdi;
	d->args[1] = r->rsi;
	d->args[2] = r->rdx;
	d->args[3] = r->r10;
	d->args[4] = r->r8;
	d->args[5] = r->r9;
}

/*
 * An ignored signal (SIGCHLD of every child that exits, SIGWINCH, SIGURG,
 * one set to SIG_IGN) is dropped as it is sent, natively; a traced task
 * keeps it pending for its tracer (sig_ignored), so it wakes the task and
 * the calls that answer a signal with a plain EINTR rather than a restart
 * code (epoll_wait, sigtimedwait, semop, a receive with SO_RCVTIMEO) fail
 * where natively they go on waiting (found by a differential probing
 * session). At its delivery stop, with no other signal the task would
 * take pending, such an EINTR becomes ERESTARTNOINTR: the kernel drops the
 * signal and makes the call again; a timed call counts from its first
 * interruption (ignored_signal_restarts).
 */
/* The timeout of a wait an ignored signal interrupts, in ns, 0 for none
 * (or one not known: made again as before); *timed_out the call's answer
 * once it is spent. Read from the registers, the program's timespec or
 * the socket's SO_RCVTIMEO: the program's to change, and it only decides
 * when its own call ends. */
static uint64_t wait_timeout(struct cr_run *run, pid_t tid,
			     const struct seccomp_data *d, long *timed_out)
{
	uint64_t at = 0;
	struct timespec ts;

	*timed_out = -EAGAIN;
	switch (d->nr) {
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
		*timed_out = 0;
		return (int)d->args[3] > 0 ?
		       (uint64_t)(int)d->args[3] * 1000000ull : 0;
	case SYS_epoll_pwait2:
		*timed_out = 0;
		at = d->args[3];
		break;
	case SYS_rt_sigtimedwait:
		at = d->args[2];
		break;
	case SYS_semtimedop:
		at = d->args[3];
		break;
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_accept:
	case SYS_accept4: {
		struct timeval tv = { 0, 0 };
		socklen_t l = sizeof(tv);
		int fd = cr_tasks_getfd(run, tid, (int)d->args[0]);

		if (fd < 0)
			return 0;
		if (getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &l) < 0)
			tv.tv_sec = tv.tv_usec = 0;
		close(fd);
		return tv.tv_sec > 0 || tv.tv_usec > 0 ?
		       (uint64_t)tv.tv_sec * 1000000000ull +
		       (uint64_t)tv.tv_usec * 1000ull : 0;
	}
	default:
		return 0;
	}
	if (!at || cr_mem_read(tid, at, &ts, sizeof(ts)) || ts.tv_sec < 0 ||
	    ts.tv_nsec < 0 || (ts.tv_sec == 0 && ts.tv_nsec == 0))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ignored_signal_restarts(struct cr_run *run, struct cr_task *t,
				    pid_t tid, int sig,
				    struct user_regs_struct *r)
{
	struct seccomp_data d;
	long timed_out;
	uint64_t now;

	if (r->rax != (unsigned long long)-EINTR || (long long)r->orig_rax < 0 ||
	    !cr_tasks_signal_only_ignored(tid, sig))
		return;
	/* Made again, its timeout would start over at every signal: an
	 * ignored signal that comes more often than the timeout (SIGCHLD
	 * of short-lived children, SIGWINCH) made asyncio.sleep(3), an
	 * epoll_wait, a sigtimedwait or a receive with SO_RCVTIMEO wait
	 * for good (found by a side-by-side run of real suites). The same
	 * call interrupted again counts from its first interruption, and
	 * once its timeout is spent from there it ends as timed out: at
	 * most the time it had waited before that first signal late. A
	 * call the program made anew with the same arguments is taken for
	 * the same (it ends early by at most what the earlier one waited). */
	cr_regs_seccomp_data(r, &d);
	now = cr_now_ns();
	if (t && (t->rs_nr != d.nr ||
		  memcmp(t->rs_args, d.args, sizeof(t->rs_args)) ||
		  !t->rs_first_ns)) {
		t->rs_nr = d.nr;
		memcpy(t->rs_args, d.args, sizeof(t->rs_args));
		t->rs_first_ns = now;
		t->rs_timeout_ns = wait_timeout(run, tid, &d, &timed_out);
	} else if (t && t->rs_timeout_ns &&
		   now - t->rs_first_ns >= t->rs_timeout_ns) {
		(void)wait_timeout(run, tid, &d, &timed_out);
		t->rs_first_ns = 0;
		r->rax = (unsigned long long)timed_out;
		ptrace(PTRACE_SETREGS, tid, 0, r);
		return;
	}
	r->rax = (unsigned long long)-CR_ERESTARTNOINTR;
	ptrace(PTRACE_SETREGS, tid, 0, r);
}

static bool stop_keeps_eintr(pid_t tid, struct user_regs_struct *r)
{
	if (r->rax != (unsigned long long)-EINTR || (long long)r->orig_rax < 0)
		return false;
	r->orig_rax = (unsigned long long)-1;
	ptrace(PTRACE_SETREGS, tid, 0, r);
	return true;
}

/* The other threads of a stopped process: each stops in the group stop,
 * its call interrupted as by the signal (a semop in one thread while
 * another took the SIGSTOP). */
void cr_notif_on_group_stop(pid_t tid)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) == 0)
		(void)stop_keeps_eintr(tid, &r);
}

void cr_notif_on_signal_stop(struct cr_run *run, pid_t tid, int sig,
			     bool stops)
{
	struct user_regs_struct r;
	struct seccomp_data d;
	uint32_t act;
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);
	bool waited = t && t->lock_wait;

	/* Answered ERESTARTSYS on purpose (an interrupted FIFO open,
	 * fs/fifo.c): the kernel's own choice stands. */
	if (t && t->restart_native) {
		/* A stop signal's own delivery comes first when the wait was
		 * answered for it: the mark waits for the signal that
		 * continues the task (a SIGCONT handler without SA_RESTART
		 * makes it EINTR, as natively; an earlier form took the mark
		 * here, and the withdrawn-call rule below then made the
		 * accept again at the SIGCONT; found by a probing session). */
		if (stops)
			return;
		t->restart_native = false;
		run->restarts -= run->restarts > 0;
		return;
	}
	if (waited) {
		t->lock_wait = false;
		run->tasks.lock_waits--;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return;
	ignored_signal_restarts(run, t, tid, sig, &r);
	/* A stop signal interrupted the call with EINTR (epoll_wait, semop,
	 * sigtimedwait, a receive with SO_RCVTIMEO): natively that EINTR is
	 * its answer once the process is continued (signal(7)). The SIGCONT
	 * that continues it, ignored, and any ignored signal delivered with
	 * it come next: they must not make the call again, as they did in
	 * an earlier build (a semop stopped and continued waited for good;
	 * found by a differential probing session). No longer a call for
	 * the kernel's restart logic (as after sigreturn), the EINTR stands
	 * through every stop of this return, and a call made anew is one
	 * again. */
	if (stops && stop_keeps_eintr(tid, &r))
		return;
	if (!run->filter ||
	    r.rax != (unsigned long long)-CR_ERESTARTSYS ||
	    (long long)r.orig_rax < 0 || r.orig_rax == SYS_recvfrom)
		return;
	/* The command is an int: the filter and the handler read the low
	 * half of the register, and so does this. */
	if (waited && r.orig_rax == SYS_fcntl &&
	    ((uint32_t)r.rsi == F_SETLKW || (uint32_t)r.rsi == F_OFD_SETLKW))
		return;
	cr_regs_seccomp_data(&r, &d);
	if (cr_filter_eval(run->filter, &d, &act) ||
	    (act & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_USER_NOTIF)
		return;
	r.rax = (unsigned long long)-CR_ERESTARTNOINTR;
	ptrace(PTRACE_SETREGS, tid, 0, &r);
}

void cr_notif_restart_native(struct cr_run *run, pid_t tid)
{
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);

	if (t && !t->restart_native) {
		t->restart_native = true;
		run->restarts++;
	}
}

void cr_notif_kernel_wait(struct cr_run *run, pid_t tid)
{
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);

	if (t && !t->lock_wait) {
		t->lock_wait = true;
		run->tasks.lock_waits++;
	}
}

/* The task's next notification: its continued lock call has returned. */
static void kernel_wait_settled(struct cr_run *run, pid_t tid)
{
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);

	if (t && t->lock_wait) {
		t->lock_wait = false;
		run->tasks.lock_waits--;
	}
}

/* A task answered ERESTARTSYS on purpose whose next event is a call, not
 * a signal stop, took no signal (another thread of its process did): the
 * kernel restarted the call, and the mark must not reach a later stop. */
static void restart_settled(struct cr_run *run, pid_t tid)
{
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);

	if (t && t->restart_native) {
		t->restart_native = false;
		run->restarts--;
	}
}

bool cr_notif_valid(const struct cr_run *run, uint64_t id)
{
	return ioctl(run->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

struct cr_verdict cr_notif_send_fd(struct cr_run *run,
				   const struct seccomp_notif *n, int fd,
				   bool cloexec)
{
	return cr_notif_send_fd_id(run, n->id, fd, cloexec);
}

void cr_notif_reply(struct cr_run *run, uint64_t id, struct cr_verdict v)
{
	struct seccomp_notif_resp resp = { .id = id };

	if (v.kind == CR_V_SENT)
		return;
	if (v.kind == CR_V_VALUE)
		resp.val = v.val;
	else	/* late answers are never CONTINUE: fail closed */
		resp.error = -(v.kind == CR_V_ERRNO && v.error > 0 ? v.error : EPERM);
	ioctl(run->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* ---- Installing a descriptor near ----
 *
 * SYNC_WAKE_UP keeps a plain round trip on one CPU, but ADDFD wakes the
 * waiting task with an ordinary wake-up: with the supervisor busy on the
 * task's CPU the scheduler puts the task on an idle one, and the
 * supervisor's wait for the install ends with a second cross-CPU wake.
 * On a small VM waking an idle vCPU costs tens of microseconds: an open
 * answered with ADDFD|SEND cost 30-40 us against 2.1 us for a plain
 * round trip (bench/syscall floor-sync-addfd).
 * So, for the install only, the task is allowed the supervisor's CPU
 * alone, and the answer comes as a separate SEND after its own mask is
 * back: 5.8 us (floor-sync-addfd-near). The task runs none of its own
 * instructions meanwhile: after RECV it waits killably (only where the
 * filter has WAIT_KILLABLE_RECV) and wakes only to install the
 * descriptor. Its mask is taken from the kernel each time (the task may
 * have set its own), the narrowing is skipped where the CPU is not in
 * it, and a call of another task naming its mask by pid is made by corral
 * between installs (handlers/proc.c, affinity()), never continued. Not
 * used where CPUs are possible but offline (sched_getaffinity reports
 * the online part only, so restoring it would narrow the mask). */
struct near {
	pid_t tid;
	bool on;
	cpu_set_t mask;
};

bool cr_notif_near_possible(void)
{
	char possible[64] = "", online[64] = "";
	FILE *f;

	if ((f = fopen("/sys/devices/system/cpu/possible", "re"))) {
		if (!fgets(possible, sizeof(possible), f))
			possible[0] = 0;
		fclose(f);
	}
	if ((f = fopen("/sys/devices/system/cpu/online", "re"))) {
		if (!fgets(online, sizeof(online), f))
			online[0] = 0;
		fclose(f);
	}
	return possible[0] && !strcmp(possible, online) &&
	       strcmp(possible, "0\n") != 0;
}

static void near_begin(struct cr_run *run, uint64_t id, struct near *nr)
{
	cpu_set_t one;
	int cpu;

	nr->on = false;
	if (!run->near_addfd || !run->notif || run->notif->id != id ||
	    run->notif->pid == 0)
		return;
	nr->tid = (pid_t)run->notif->pid;
	cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE ||
	    sched_getaffinity(nr->tid, sizeof(nr->mask), &nr->mask) < 0 ||
	    !CPU_ISSET(cpu, &nr->mask) || CPU_COUNT(&nr->mask) < 2)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	nr->on = sched_setaffinity(nr->tid, sizeof(one), &one) == 0;
}

static void near_end(struct cr_run *run, struct near *nr, int addfd_err)
{
	/* The wait ended without the install (ENOENT, ESRCH): the task is
	 * dying, and a sibling's exec may take its number over this very
	 * moment; the new image keeps its own mask. */
	if (!nr->on || addfd_err == ENOENT || addfd_err == ESRCH)
		return;
	/* ESRCH: the task is gone. Anything else (a cpuset changed under
	 * it) leaves it on one CPU: slower, never wrong; stop narrowing. */
	if (sched_setaffinity(nr->tid, sizeof(nr->mask), &nr->mask) < 0 &&
	    errno != ESRCH)
		run->near_addfd = false;
}

/* ADDFD without SEND, near the supervisor; the fd number or -errno. */
static int add_fd(struct cr_run *run, uint64_t id, int fd, bool cloexec)
{
	struct seccomp_notif_addfd a = {
		.id = id,
		.srcfd = (uint32_t)fd,
		.newfd_flags = cloexec ? O_CLOEXEC : 0,
	};
	struct near nr;
	int rc, err;

	near_begin(run, id, &nr);
	rc = ioctl(run->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	err = rc < 0 ? errno : 0;
	near_end(run, &nr, err);
	if (rc < 0)
		return -err;
	run->fds_injected++;
	return rc;
}

struct cr_verdict cr_notif_send_fd_id(struct cr_run *run, uint64_t id, int fd,
				      bool cloexec)
{
	struct seccomp_notif_addfd a = {
		.id = id,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (uint32_t)fd,
		.newfd_flags = cloexec ? O_CLOEXEC : 0,
	};
	int rc, err;

	if (run->killable_recv) {
		/* Installed (near, where that is on), ours closed, then
		 * answered: the task cannot leave its wait between the
		 * steps but by dying, and then there is nothing to answer. */
		struct cr_verdict v = cr_notif_give_fd_last(run, id, fd, cloexec);

		if (v.kind == CR_V_VALUE) {
			struct seccomp_notif_resp resp = { .id = id,
							   .val = v.val };

			ioctl(run->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
			return (struct cr_verdict){ .kind = CR_V_SENT };
		}
		return v;
	}
	rc = ioctl(run->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	err = errno;
	close(fd);
	/* Fail closed: if the fd cannot be installed the call fails; it is
	 * never let through to the kernel instead. */
	if (rc >= 0) {
		run->fds_injected++;
		return (struct cr_verdict){ .kind = CR_V_SENT };
	}
	if (err == ENOENT)	/* the task is gone: nothing to answer */
		return (struct cr_verdict){ .kind = CR_V_SENT };
	return (struct cr_verdict){ .kind = CR_V_ERRNO,
				    .error = err == EMFILE ? EMFILE : EIO };
}

struct cr_verdict cr_notif_give_fd_last(struct cr_run *run, uint64_t id,
					int fd, bool cloexec)
{
	int rc = cr_notif_add_fd(run, id, fd, cloexec);

	close(fd);
	if (rc == -ENOENT || rc == -ESRCH)	/* the task is gone */
		return (struct cr_verdict){ .kind = CR_V_SENT };
	if (rc < 0)	/* fail closed, as cr_notif_send_fd_id */
		return CR_V_ERR(rc == -EMFILE ? EMFILE : EIO);
	return CR_V_VAL(rc);
}

int cr_notif_add_fd(struct cr_run *run, uint64_t id, int fd, bool cloexec)
{
	return add_fd(run, id, fd, cloexec);
}

void cr_notify_handle(struct cr_run *run)
{
	struct seccomp_notif *n = run->notif;
	const struct cr_syscall_entry *e = NULL;
	struct cr_verdict v;

	/* The buffer is sized by what the kernel says it writes
	 * (SECCOMP_GET_NOTIF_SIZES at start) and must be zeroed for RECV. */
	memset(n, 0, run->notif_len);
	if (ioctl(run->listener, SECCOMP_IOCTL_NOTIF_RECV, n) < 0)
		return;	/* EINTR/ENOENT: the task went away meanwhile */
	run->notifications++;
	run->tables_left = CR_TABLES_SEARCH_MAX;
	run->tables_until = 0;
	/* Its earlier calls are done: a shared mapping it made is made. */
	cr_budget_task_seen(run, (pid_t)n->pid);
	/* A umask call answered earlier has run by now (tasks.c). */
	if (run->tasks.umask_moving)
		cr_tasks_umask_settled(&run->tasks, (pid_t)n->pid);
	if (run->restarts)
		restart_settled(run, (pid_t)n->pid);
	if (run->tasks.lock_waits)
		kernel_wait_settled(run, (pid_t)n->pid);
	if (run->tasks.stop_kicks)
		cr_tasks_call_began(run, (pid_t)n->pid);
	/* A thread past its exit stop stays a zombie, counted in its
	 * process's Threads: and num_threads, until it is reaped here,
	 * while its pthread_join has returned: an open of /proc/self/status
	 * right after the join read 2 threads where natively 1 (CPython's
	 * fork asks /proc/self/stat whether it is multi-threaded; found by a
	 * differential probe). Before an open, those are reaped. */
	if (run->tasks.exiting && !run->ending &&
	    (n->data.nr == __NR_openat || n->data.nr == __NR_open ||
	     n->data.nr == __NR_openat2))
		run->reap_more = cr_tasks_reap(run);
	if (run->ending) {
		/* Cleanup has begun: answer nothing new with success. */
		v = (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
	} else if (n->data.arch != AUDIT_ARCH_X86_64) {
		char name[40];

		/* The filter kills foreign ABIs before they notify; reaching
		 * here means filter and notifier disagree. Fail closed. */
		v = fail_closed(run, (pid_t)n->pid,
				cr_syscall_name(n->data.nr, name, sizeof(name)),
				"internal: notification of a foreign ABI");
	} else if (n->data.nr < 0 ||
		   (size_t)n->data.nr >= CR_ARRAY_SIZE(run->by_nr) ||
		   !(e = run->by_nr[n->data.nr])) {
		/* Not a table entry: the syscall profile does not allow it
		 * (ENOSYS, or EPERM when it refuses it). Without the
		 * profile's state the answer is still a refusal. */
		if (run->surface)
			v = cr_surface_unlisted(run, n);
		else
			v = fail_closed(run, (pid_t)n->pid, "unknown",
					"internal: no handler for this call");
	} else {
		e = matching(e, n);
		v = e->handler(run, e, n);
	}
	if (run->surface)
		cr_surface_answering(run, n);
	answer(run, n, e, v);
}

/* Denials are recorded once per (syscall, layer, reason, target) with a
 * count, so a program retrying a refused call in a loop costs one entry;
 * the audit stream gets the first occurrence and then each power of two of
 * the count, which bounds it while still showing the growth. */
static struct cr_denial *find_denial(struct cr_run *run, const char *syscall,
				     const char *target, const char *layer,
				     const char *reason)
{
	for (size_t i = 0; i < run->ndenials; i++) {
		struct cr_denial *d = &run->denials[i];

		if (!strncmp(d->syscall, syscall, sizeof(d->syscall) - 1) &&
		    !strcmp(d->layer, layer) &&
		    !strcmp(d->reason ? d->reason : "", reason) &&
		    (d->target ? target && !strcmp(d->target, target) :
				 !target))
			return d;
	}
	return NULL;
}

static void fill_denial(struct cr_denial *d, uint64_t ms, pid_t pid,
			const char *syscall, const char *target,
			const char *layer, const char *reason)
{
	memset(d, 0, sizeof(*d));
	d->ms = ms;
	d->pid = pid;
	d->count = 1;
	snprintf(d->syscall, sizeof(d->syscall), "%s", syscall);
	d->target = target ? strdup(target) : NULL;
	d->layer = layer;
	d->reason = strdup(reason);
}

void cr_deny(struct cr_run *run, pid_t pid, const char *syscall,
	     const char *target, const char *layer, const char *reason)
{
	uint64_t ms = cr_run_ms(run);
	struct cr_denial *d = find_denial(run, syscall, target, layer, reason);
	uint64_t count = 1;

	run->denied_calls++;
	/* The command itself refused (the exec report is still pending):
	 * the run is policy_denied, not a program that could not start. */
	if (run->execfd >= 0 && pid == run->child &&
	    (!strcmp(syscall, "execve") || !strcmp(syscall, "execveat")))
		run->first_exec_denied = true;
	cr_alert_observe(run, pid, syscall, target, layer);	/* every one counts */

	if (d) {
		count = ++d->count;
		if (count & (count - 1))
			return;	/* not a power of two: counted, not logged */
	} else if (run->ndenials < CR_MAX_DENIALS &&
		   (run->denials || (run->denials = calloc(CR_MAX_DENIALS,
							   sizeof(*run->denials))))) {
		size_t i = run->ndenials++;

		d = &run->denials[i];
		fill_denial(d, ms, pid, syscall, target, layer, reason);
		if (run->surface)
			cr_surface_denied(run, pid, i);
	} else if (run->denials) {
		/* Full: the latest take the tail's oldest slot, so the list
		 * keeps the run's first denials and its last. */
		size_t i = CR_MAX_DENIALS - CR_DENIALS_TAIL + run->denial_tail;

		d = &run->denials[i];
		run->denials_dropped += d->count;
		free(d->target);
		free(d->reason);
		for (size_t k = 0; k < d->nstack; k++)
			free(d->stack[k]);
		free(d->stack);
		fill_denial(d, ms, pid, syscall, target, layer, reason);
		/* A stack is taken for the table's fixed part only: a slot
		 * reused meanwhile would take another denial's. */
		if (run->cfg->stacks)
			d->stack_missing = "listed after the table filled";
		run->denial_tail = (run->denial_tail + 1) % CR_DENIALS_TAIL;
		run->denials_wrapped = true;
	} else {
		run->denials_dropped++;
	}
	if (run->audit_fd >= 0) {
		cJSON *f = cJSON_CreateObject();

		if (f) {
			cJSON_AddNumberToObject(f, "ms", (double)ms);
			cJSON_AddNumberToObject(f, "pid", pid);
			cJSON_AddStringToObject(f, "syscall", syscall);
			if (target)
				cr_json_add_bytes(f, "target", target,
						  strlen(target));
			cJSON_AddStringToObject(f, "layer", layer);
			cr_json_add_bytes(f, "reason", reason, strlen(reason));
			cJSON_AddNumberToObject(f, "count", (double)count);
			cr_audit_event(run, "deny", f);
		}
	}
}
