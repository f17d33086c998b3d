/* tracer/surface.c: the syscall profile's answers, foreign-ABI deaths mapped
 * to policy_denied, --stacks unwinding, and pid helpers for the handlers. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "surface.h"

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

int cr_surface_setup(struct cr_run *run)
{
	struct cr_surface *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->profile = run->cfg->cls && run->cfg->cls->profile ?
		     run->cfg->cls->profile : cr_profile_default();
	s->stacks = run->cfg->stacks;
	run->surface = s;
	if (s->stacks && (rc = cr_unwind_load(run->message, sizeof(run->message))))
		return rc;
	return 0;
}

void cr_surface_finish(struct cr_run *run)
{
	free(run->surface);
	run->surface = NULL;
}

/* ---- the profile's answer ---- */

struct cr_verdict cr_surface_unlisted(struct cr_run *run,
				      const struct seccomp_notif *n)
{
	const struct cr_profile *p = run->surface->profile;
	char name[40], why[160];

	cr_syscall_name(n->data.nr, name, sizeof(name));
	if (cr_profile_lists(p->refuse, name)) {
		snprintf(why, sizeof(why), "refused by the syscall profile %s %s",
			 p->name, p->version);
		cr_deny(run, (pid_t)n->pid, name, NULL, "syscall", why);
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
	}
	/* ENOSYS, as on a kernel without the call: programs fall back. */
	snprintf(why, sizeof(why), "not in the syscall profile %s %s (ENOSYS)",
		 p->name, p->version);
	cr_deny(run, (pid_t)n->pid, name, NULL, "syscall", why);
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = ENOSYS };
}

/* ---- foreign ABIs ----
 *
 * The filter's bad-architecture action (and the x32 bit check libseccomp
 * adds for x86_64) kills the process with SIGSYS; nothing is notified. The
 * kill is recognised here: a death by SIGSYS whose thread the kernel
 * still shows in a call the filter kills (native_kill). Where no exit stop
 * was seen (no registers to read), a death by SIGSYS that no signal-
 * delivery stop announced: the kernel delivers the filter's SIGSYS as an
 * immutable forced signal that skips the tracer, whereas one sent with
 * kill() or raise() stops in signal-delivery first; after any such sent
 * SIGSYS that fallback reports a SIGSYS death as the program's own (the
 * call was still refused). */

/* The two bytes of code at addr in tid, -1 when they cannot be read. */
static long peek_insn(pid_t tid, uint64_t addr)
{
	long word;

	errno = 0;
	cr_slow_begin();	/* the memory-map lock (mem.c) */
	word = ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)addr, NULL);
	cr_slow_end();
	return word == -1 && errno ? -1 : word & 0xffff;
}

/* The ABI of the call tid was in when it stopped, as the kernel keeps it
 * (AUDIT_ARCH_I386 for an `int $0x80`, whatever the code around it says
 * now), 0 when it cannot be told. At the exit stop of a task the filter
 * killed, the kernel has not yet returned it to user mode, which is where
 * it forgets the mark. */
static uint32_t stop_arch(pid_t tid)
{
	struct __ptrace_syscall_info info;

	memset(&info, 0, sizeof(info));
	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(info),
		   &info) <= 0)
		return 0;
	return info.arch;
}

static void foreign_abi(struct cr_run *run, pid_t tid, bool regs_ok,
			bool no_entry)
{
	struct user_regs_struct regs;
	char name[64] = "unknown", why[200];
	const char *abi = "i386 or x32";
	bool out_of_range = false;

	if (run->surface->foreign_abi_seen)
		return;
	run->surface->foreign_abi_seen = true;
	if (regs_ok && ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0) {
		/* Killed in the filter: the call was rolled back, its number
		 * is in orig_rax. Faulted on an absent entry: still in rax. */
		uint64_t nr = no_entry ? regs.rax & 0xffffffff : regs.orig_rax;
		/* The entry it took, as the kernel marked it: an `int $0x80`
		 * is i386 whatever its number's bits (an eax of 0x7fffffff
		 * was named an x32 call; found by a differential probing
		 * session). A fault on an absent entry took none: the
		 * instruction at rip says which it was (foreign_trap). */
		bool int80 = no_entry ? peek_insn(tid, regs.rip) == 0x80cd :
					stop_arch(tid) == AUDIT_ARCH_I386;
		bool x32 = !int80 && (nr & __X32_SYSCALL_BIT);
		/* An x86_64 `syscall` with a number no table has (bit 31
		 * set): killed by the same guard as x32's. */
		bool wild = !no_entry && !int80 && !x32 && (nr & 0x80000000u);
		char *s = wild ? NULL : seccomp_syscall_resolve_num_arch(
			x32 ? SCMP_ARCH_X32 : SCMP_ARCH_X86,
			(int)(x32 ? nr : nr & 0xffffffff));

		abi = wild ? "out-of-range number" : x32 ? "x32" : "i386";
		out_of_range = wild;
		if (s)
			snprintf(name, sizeof(name), "%s", s);
		else if (wild)
			snprintf(name, sizeof(name), "syscall_0x%" PRIx64,
				 nr & 0xffffffff);
		else
			snprintf(name, sizeof(name), "%s_%" PRIu64, abi,
				 x32 ? nr & ~(uint64_t)__X32_SYSCALL_BIT :
				 nr & 0xffffffff);
		free(s);
	}
	if (out_of_range)
		snprintf(why, sizeof(why),
			 "a system call number no x86_64 table has: the filter's guard against foreign ABIs takes it as one, so the process was killed");
	else
		snprintf(why, sizeof(why),
			 "%s system call from an x86_64 program: foreign ABIs bypass the filter's rules, so the process was killed%s",
			 abi, no_entry ? " (this kernel has no i386 entry: it faulted)" : "");
	cr_deny(run, tid, name, NULL, "syscall", why);
	cr_run_end(run, CR_ST_POLICY_DENIED, NULL,
		   "the program made a foreign-ABI (%s) system call (%s); it was killed",
		   abi, name);
}

/* ---- --stacks ----
 *
 * A task blocked in a seccomp notification is not in a ptrace-stop, so its
 * registers cannot be read. So: just before the denial is answered, the
 * task is interrupted (PTRACE_INTERRUPT). Its wait for the answer is
 * killable only (WAIT_KILLABLE_RECV), so the interrupt does not end it;
 * the answer does, and on its way back to user mode, before running one
 * more instruction, the task stops with the same stack and an instruction
 * pointer just past the system call. Its registers, stack and maps are
 * copied there and unwound by a confined helper (unwind.c), and the
 * ordinary state machine continues it.
 * (Interrupting after the answer loses the race with a task that returns
 * to user mode first: measured, a third of the stops never came.) Only the
 * first occurrence of each denial is unwound, one at a time. On a kernel
 * without WAIT_KILLABLE_RECV the interrupt ends the wait instead: the call
 * is restarted after the stop and notified again (counted twice). */

static void unwind(struct cr_run *run, pid_t tid)
{
	struct cr_surface *s = run->surface;
	struct cr_denial *d;
	uint64_t t0 = cr_now_ns();

	s->stack_tid = 0;
	if (s->stack_denial >= run->ndenials)
		return;
	d = &run->denials[s->stack_denial];
	if (d->stack || d->stack_missing)
		return;
	/* The loop waits for the helper: at most CR_STACK_WAIT_NS a stack
	 * and CR_STACKS_WAIT_NS a run, so a program that makes every
	 * unwinder late holds the budgets' enforcement back that long only. */
	if (s->stack_ns >= CR_STACKS_WAIT_NS) {
		d->stack_missing = "the run's time for unwinding is spent";
		return;
	}
	cr_unwind_take(tid, CR_STACKS_WAIT_NS - s->stack_ns < CR_STACK_WAIT_NS ?
			    CR_STACKS_WAIT_NS - s->stack_ns : CR_STACK_WAIT_NS,
		       &d->stack, &d->nstack, &d->stack_missing);
	if (d->nstack)
		d->stack_missing = NULL;
	s->stack_ns += cr_now_ns() - t0;
	s->stacks_taken++;
}

void cr_surface_denied(struct cr_run *run, pid_t tid, size_t i)
{
	struct cr_surface *s = run->surface;

	if (!s->stacks)
		return;
	/* One stack at a time: a denial made meanwhile says so. */
	if (s->stack_tid || tid <= 0) {
		run->denials[i].stack_missing = tid <= 0 ?
			"not made by a task of the program" :
			"another stack was being taken";
		return;
	}
	s->stack_tid = tid;
	s->stack_denial = i;
	s->stack_interrupted = false;
}

void cr_surface_answering(struct cr_run *run, const struct seccomp_notif *n)
{
	struct cr_surface *s = run->surface;

	if (!s->stack_tid || s->stack_interrupted)
		return;
	if (s->stack_tid != (pid_t)n->pid || run->ending ||
	    ptrace(PTRACE_INTERRUPT, s->stack_tid, 0, 0) < 0) {
		if (s->stack_denial < run->ndenials &&
		    !run->denials[s->stack_denial].stack)
			run->denials[s->stack_denial].stack_missing =
				"the task could not be stopped for it";
		s->stack_tid = 0;
		return;
	}
	s->stack_interrupted = true;
}

/* ---- hooks from the task state machine ---- */

/* A kernel built without the i386 entry (ia32_emulation off) answers
 * `int 0x80` with a general-protection fault, a SIGSEGV from the kernel
 * whose instruction pointer is still on the int instruction; sysenter from
 * 64-bit code raises SIGILL the same way. Nothing reached the kernel, but
 * the program asked for a foreign ABI: the run ends as it would have had
 * the filter killed it, so the outcome does not depend on the kernel. */
static bool foreign_trap(pid_t tid, int sig)
{
	siginfo_t si;
	struct user_regs_struct regs;
	long word;

	if ((sig != SIGSEGV && sig != SIGILL) ||
	    ptrace(PTRACE_GETSIGINFO, tid, 0, &si) < 0 ||
	    si.si_code != (sig == SIGSEGV ? SI_KERNEL : ILL_ILLOPN) ||
	    ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
		return false;
	errno = 0;
	cr_slow_begin();	/* the memory-map lock (mem.c) */
	word = ptrace(PTRACE_PEEKTEXT, tid, (void *)regs.rip, 0);
	cr_slow_end();
	if (errno)
		return false;
	/* cd 80: int 0x80; 0f 34: sysenter. */
	return (word & 0xffff) == 0x80cd || (word & 0xffff) == 0x340f;
}

/* A thread of a process killed by SIGSYS, at its exit stop: is it not
 * the one a foreign-ABI call killed? corral's filter kills only foreign
 * ABIs (i386 int 0x80, x32) and numbers past the x32 guard, so a thread
 * that was in no system call (the others of the process are ended with
 * it), or in an x86_64 call its filter lets through, is not: a process
 * killed by its own seccomp filter (SECCOMP_RET_KILL_*), or by a SIGSYS
 * sent to it, gets the kernel's answer, with no denial and no
 * policy_denied (an earlier build reported it as an i386 call, in the
 * result and the audit trail). Judged from what the kernel keeps of the
 * dying thread (the ABI it entered by, the number it asked), none of it
 * the program's to change: an earlier build read the code before rip,
 * which another process sharing that page rewrote from `int $0x80` to
 * `syscall` in the moment, and after any SIGSYS sent in the run it judged
 * nothing: either way an i386 call killed left the run ok, with no denial
 * (found by a probing session). */
static bool native_kill(struct cr_run *run, pid_t tid)
{
	struct user_regs_struct regs;
	struct seccomp_data d;
	uint32_t act, arch;

	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
		return false;
	if (regs.orig_rax == (unsigned long long)-1)
		return true;	/* in no system call */
	arch = stop_arch(tid);
	if (arch == AUDIT_ARCH_I386 || (regs.orig_rax & __X32_SYSCALL_BIT))
		return false;
	/* A kernel that cannot tell the ABI: the code before rip. */
	if (arch != AUDIT_ARCH_X86_64 &&
	    (regs.rip < 2 || peek_insn(tid, regs.rip - 2) != 0x050f))
		return false;	/* 0f 05: syscall */
	/* An x86_64 call corral's own filter kills (a number past the
	 * x32 guard, 0x80000000-0xbfffffff: an earlier build reported
	 * it as the program's own death, with no denial) is ours. */
	cr_regs_seccomp_data(&regs, &d);
	if (run->filter && cr_filter_eval(run->filter, &d, &act) == 0 &&
	    ((act & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_PROCESS ||
	     (act & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_THREAD))
		return false;
	return true;
}

/* A thread ended by another signal while the filter's SIGSYS was still
 * pending: a group stop comes before the forced SIGSYS in the kernel's
 * signal handling, and a SIGKILL sent meanwhile ends the process by
 * itself (found by a probing session: the run ended ok, no denial). The
 * thread never returned to user mode, so the kernel still shows it in the
 * foreign call: an i386 entry, or an x32 number, neither of which any
 * call that passed the filter has. */
static bool foreign_in_flight(pid_t tid)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0 ||
	    regs.orig_rax == (unsigned long long)-1)
		return false;
	return (regs.orig_rax & __X32_SYSCALL_BIT) ||
	       stop_arch(tid) == AUDIT_ARCH_I386;
}

void cr_surface_on_stop(struct cr_run *run, pid_t tid, int status)
{
	struct cr_surface *s = run->surface;
	int event = (unsigned)status >> 16;

	if (!s)
		return;
	if (!event && WSTOPSIG(status) == SIGSYS)
		s->sigsys_signalled = true;
	if (!event && foreign_trap(tid, WSTOPSIG(status)))
		foreign_abi(run, tid, true, true);
	/* From the first exec on, program code runs as our uid. Make corral
	 * itself undumpable: its /proc files (mem, environ, fd, maps) turn
	 * root-owned and ptrace-attach to it needs CAP_SYS_PTRACE, whatever
	 * the filesystem layer or the ptrace refusal do. Not earlier: the
	 * child inherits the flag until it execs, and corral must be able to
	 * seize it and take its listener. */
	if (event == PTRACE_EVENT_EXEC && !s->undumpable) {
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
			s->undumpable = true;
	}
	if (event == PTRACE_EVENT_EXIT) {
		unsigned long st = 0;

		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &st) == 0 &&
		    WIFSIGNALED((int)st) &&
		    (WTERMSIG((int)st) == SIGSYS ? !native_kill(run, tid) :
						  foreign_in_flight(tid)))
			foreign_abi(run, tid, true, false);
		if (tid == s->stack_tid)
			s->stack_tid = 0;
	}
	if (event == PTRACE_EVENT_STOP && tid == s->stack_tid &&
	    s->stack_interrupted)
		unwind(run, tid);
}

void cr_surface_on_gone(struct cr_run *run, pid_t tid, int status,
			bool exit_seen)
{
	struct cr_surface *s = run->surface;

	if (!s)
		return;
	if (tid == s->stack_tid)
		s->stack_tid = 0;
	/* Judged at its exit stop, where the registers could be read. */
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS &&
	    !s->sigsys_signalled && !exit_seen)
		foreign_abi(run, tid, false, false);
}

/* ---- pids named by calls ---- */

/* Reads one "Key:\tvalue" integer from /proc/<pid>/<file>; -errno. */
static long proc_field(const char *path, const char *key)
{
	char buf[4096];
	ssize_t len = cr_read_small(AT_FDCWD, path, buf, sizeof(buf));
	const char *p;
	size_t klen = strlen(key);

	if (len < 0)
		return (long)len;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen))
			return strtol(p + klen, NULL, 10);
	return -ENOENT;
}

pid_t cr_surface_tgid(struct cr_run *run, pid_t tid)
{
	const struct cr_task *t = cr_tasks_find(&run->tasks, tid);
	char path[64];

	if (t && t->leader)
		return tid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	return (pid_t)proc_field(path, "Tgid:");
}

/* Safe against reuse: SELF names the caller, which is blocked in its call
 * and so cannot be reaped; RUN means the tid is in our table with the
 * identity it had when added (cr_tasks_ours), and the table holds
 * every task until corral itself reaps it (a zombie tracee is visible to
 * its tracer only, so nobody else can free the number first). Callers
 * that act on a RUN target do so before returning to the loop, or accept
 * the documented window of a CONTINUE. */
enum cr_target cr_surface_target(struct cr_run *run, pid_t caller, pid_t pid)
{
	pid_t tgid;

	if (pid == 0 || pid == caller)
		return CR_TARGET_SELF;
	if (pid < 0)
		return CR_TARGET_OUTSIDE;
	tgid = cr_surface_tgid(run, caller);
	if (tgid > 0 && pid == tgid)
		return CR_TARGET_SELF;
	if (cr_tasks_ours(&run->tasks, pid))
		return CR_TARGET_RUN;
	/* corral has reaped it as tracer, which hands the zombie back to
	 * its real parent, a task of the run, until that one waits. The
	 * number stays taken meanwhile, but the parent may wait at any
	 * moment: callers act on nothing here (a zombie takes no signal). */
	{
		char st = 0;
		pid_t ppid = cr_surface_stat(pid, &st, NULL);

		if (st == 'Z' && ppid > 0 && cr_tasks_ours(&run->tasks, ppid))
			return CR_TARGET_ZOMBIE;
	}
	return CR_TARGET_OUTSIDE;
}

pid_t cr_surface_pgrp(pid_t pid)
{
	pid_t pgrp = -EIO;
	pid_t rc = cr_surface_stat(pid, NULL, &pgrp);

	return rc < 0 ? rc : pgrp;
}

pid_t cr_surface_stat(pid_t pid, char *state_out, pid_t *pgrp_out)
{
	char path[64], buf[1024];
	ssize_t len;
	const char *p;
	char state;
	int ppid, pgrp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	len = cr_read_small(AT_FDCWD, path, buf, sizeof(buf));
	if (len < 0)
		return (pid_t)len;
	/* The command name may hold anything, ')' included: skip to the
	 * last one. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) != 3)
		return -EIO;
	if (state_out)
		*state_out = state;
	if (pgrp_out)
		*pgrp_out = pgrp;
	return ppid;
}

/* A /proc/<pid> directory also names a process for pidfd_send_signal (the
 * kernel takes its struct pid, which the open directory pins). Which one:
 * the number in its path, while it is not "(deleted)". -EINVAL if c is
 * neither. */
static long proc_dir_pid(int c)
{
	char path[64], link[64];
	struct statfs sf;
	struct stat st;
	ssize_t n;
	char *end;
	long p;

	if (fstatfs(c, &sf) < 0 || sf.f_type != 0x9fa0 /* PROC_SUPER_MAGIC */ ||
	    fstat(c, &st) < 0 || !S_ISDIR(st.st_mode))
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", c);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 6 || strncmp(link, "/proc/", 6))
		return -EINVAL;
	link[n] = 0;
	p = strtol(link + 6, &end, 10);
	/* A directory below a process's (task/N, fd, thread-self's): the
	 * kernel takes only a process's own directory for a pidfd. */
	if (end == link + 6 || *end == '/')
		return -EINVAL;
	if (*end || p <= 0)
		return -ESRCH;	/* "(deleted)": the process is gone */
	return p;
}

pid_t cr_surface_pidfd_pid(int fd)
{
	char path[64], link[64];
	ssize_t n;

	/* The link first: the kernel makes a file's whole fdinfo text for
	 * any read, and an epoll instance of 480 000 watches held corral
	 * 0.75 s a read (found by a probing session). fd is corral's own:
	 * what it names cannot change between the two. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = 0;
	if (strcmp(link, "anon_inode:[pidfd]") && strncmp(link, "pidfd:", 6))
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	return (pid_t)proc_field(path, "Pid:");
}

int cr_surface_take_pidfd(struct cr_run *run, pid_t caller, int fd,
			  int *copy, pid_t *pid)
{
	pid_t tgid = cr_surface_tgid(run, caller);
	long p;
	int c;

	*copy = -1;
	*pid = -1;
	if (tgid <= 0)
		return tgid < 0 ? tgid : -ESRCH;
	/* PIDFD_SELF_THREAD and PIDFD_SELF_THREAD_GROUP (6.15+): the
	 * caller itself, named without a descriptor; corral's own pidfd of
	 * the same thread or process stands for it. */
	if (fd == CR_PIDFD_SELF_THREAD || fd == CR_PIDFD_SELF_THREAD_GROUP) {
		bool thread = fd == CR_PIDFD_SELF_THREAD;

		c = (int)syscall(SYS_pidfd_open, thread ? caller : tgid,
				 thread ? O_EXCL /* PIDFD_THREAD */ : 0);
		if (c < 0)
			return -errno;
		*copy = c;
		*pid = thread ? caller : tgid;
		return 0;
	}
	/* The caller's own fd: a thread with a table of its own holds
	 * another pidfd at that number than its leader. */
	c = cr_tasks_getfd(run, caller, fd);
	if (c < 0)
		return c;
	/* The copy pins the very object the program holds, so what it names
	 * cannot change under us (the program may close or replace its fd
	 * meanwhile; it is the copy that is used). */
	p = cr_surface_pidfd_pid(c);
	if (p == -ENOENT)
		p = proc_dir_pid(c);
	if (p == -EINVAL) {
		close(c);
		return -EINVAL;	/* neither a pidfd nor a process's directory */
	}
	if (p < -1) {
		close(c);
		return (int)p;
	}
	*copy = c;
	*pid = (pid_t)p;
	return 0;
}

struct cr_verdict cr_surface_chain(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n)
{
	size_t i = (size_t)(e - cr_syscalls);

	for (size_t j = i + 1; j < cr_nsyscalls; j++) {
		const struct cr_syscall_entry *o = &cr_syscalls[j];
		struct cr_verdict v;

		if (o->nr != e->nr || o->handler == e->handler)
			continue;
		v = o->handler(run, o, n);
		/* notify.c judges the stance of the first entry only: judge
		 * the chained one here, the same way. */
		if (v.kind == CR_V_CONTINUE && o->stance != CR_STANCE_REGS) {
			cr_deny(run, (pid_t)n->pid, o->name, NULL, "syscall",
				"internal: CONTINUE refused for a memory-reading handler");
			return (struct cr_verdict){ .kind = CR_V_ERRNO,
						    .error = EPERM };
		}
		return v;
	}
	return (struct cr_verdict){ .kind = CR_V_CONTINUE };
}
