/* tracer/tasks.c: the table of every task of the run and its ptrace state
 * machine; the only code that calls waitpid and restarts ptrace stops. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tracer.h"
#include "fs/fs.h"
#include "handlers/handlers.h"
#include "net/net.h"
#include <limits.h>
#include "budget/budget.h"
#include "surface.h"

#ifndef PTRACE_LISTEN
#define PTRACE_LISTEN 0x4208
#endif

/* ---- the table: open addressing on tid, backward-shift deletion ---- */

static size_t slot_of(const struct cr_tasks *t, pid_t tid)
{
	return ((size_t)tid * 2654435761u) & (t->cap - 1);
}

int cr_tasks_init(struct cr_tasks *t)
{
	memset(t, 0, sizeof(*t));
	t->umask_gen = 1;
	t->cap = 256;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	return t->slots ? 0 : -ENOMEM;
}

void cr_tasks_free(struct cr_tasks *t)
{
	for (size_t i = 0; t->slots && i < t->cap; i++)
		if (t->slots[i].tid) {
			if (t->slots[i].pidfd >= 0)
				close(t->slots[i].pidfd);
			if (t->slots[i].tpidfd >= 0)
				close(t->slots[i].tpidfd);
		}
	free(t->slots);
	t->slots = NULL;
	free(t->gone);
	t->gone = NULL;
	cr_jobctl_forget(t);
}

struct cr_task *cr_tasks_find(struct cr_tasks *t, pid_t tid)
{
	for (size_t i = slot_of(t, tid);; i = (i + 1) & (t->cap - 1)) {
		if (t->slots[i].tid == tid)
			return &t->slots[i];
		if (!t->slots[i].tid)
			return NULL;
	}
}

static int grow(struct cr_tasks *t)
{
	struct cr_tasks bigger = { .cap = t->cap * 2 };

	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->slots[i].tid)
			continue;
		for (j = slot_of(&bigger, t->slots[i].tid); bigger.slots[j].tid;
		     j = (j + 1) & (bigger.cap - 1))
			;
		bigger.slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = bigger.slots;
	t->cap = bigger.cap;
	return 0;
}

/* A pidfd for every thread-group leader: signals sent through it can never
 * reach a recycled pid. pidfd_open refuses non-leaders (EINVAL), which is
 * also how a new task is told to be a thread or a process. */
struct cr_task *cr_tasks_add(struct cr_tasks *t, pid_t tid)
{
	struct cr_task *task = cr_tasks_find(t, tid);
	size_t i;

	if (task)
		return task;
	if ((t->count + 1) * 4 > t->cap * 3 && grow(t) < 0)
		return NULL;
	for (i = slot_of(t, tid); t->slots[i].tid; i = (i + 1) & (t->cap - 1))
		;
	task = &t->slots[i];
	memset(task, 0, sizeof(*task));
	task->tid = tid;
	task->state = CR_TS_STARTING;
	task->pidfd = (int)syscall(SYS_pidfd_open, tid, 0);
	task->tpidfd = -1;
	task->leader = task->pidfd >= 0;
	/* The tid is our tracee and unreaped here, so this is its own. */
	task->start = cr_tasks_start_time(tid);
	task->tgid = task->leader ? tid : 0;	/* a thread: set by its creator */
	t->count++;
	if (task->leader) {
		t->leaders++;
		task->serial = ++t->serials;
	}
	if (t->count > t->peak_tasks)
		t->peak_tasks = t->count;
	if (t->leaders > t->peak_leaders)
		t->peak_leaders = t->leaders;
	return task;
}

void cr_tasks_remove(struct cr_tasks *t, pid_t tid)
{
	struct cr_task *task = cr_tasks_find(t, tid);
	size_t i, j;

	if (!task)
		return;
	if (task->pidfd >= 0)
		close(task->pidfd);
	if (task->tpidfd >= 0) {
		close(task->tpidfd);
		t->tpidfds--;
	}
	if (task->leader)
		t->leaders--;
	if (task->umask_moving)
		t->umask_moving--;
	if (task->lock_wait)
		t->lock_waits--;
	if (task->stop_kick)
		t->stop_kicks--;
	if (task->state == CR_TS_EXITING)
		t->exiting--;
	if (task->state == CR_TS_STOPPED)
		t->stopped--;
	t->count--;
	if (!t->gone)	/* without it a gone number is judged as foreign */
		t->gone = calloc(CR_TASKS_GONE, sizeof(*t->gone));
	if (t->gone) {
		t->gone[t->gone_next].tid = tid;
		t->gone[t->gone_next].start = task->start;
		t->gone[t->gone_next].leader = task->leader;
		t->gone_next = (t->gone_next + 1) % CR_TASKS_GONE;
	}
	i = (size_t)(task - t->slots);
	task->tid = 0;
	/* Backward-shift: move later members of the probe chain up so lookups
	 * never stop early at the hole. */
	for (j = (i + 1) & (t->cap - 1); t->slots[j].tid;
	     j = (j + 1) & (t->cap - 1)) {
		size_t home = slot_of(t, t->slots[j].tid);

		if (((j - home) & (t->cap - 1)) >= ((j - i) & (t->cap - 1))) {
			t->slots[i] = t->slots[j];
			t->slots[j].tid = 0;
			i = j;
		}
	}
}

void cr_tasks_umask_forget(struct cr_tasks *t)
{
	if (!++t->umask_gen)
		t->umask_blind = true;	/* wrapped: 0 means "never read" */
}

void cr_tasks_umask_call(struct cr_tasks *t, pid_t tid)
{
	struct cr_task *task = cr_tasks_find(t, tid);

	cr_tasks_umask_forget(t);
	if (!task) {
		t->umask_blind = true;
		return;
	}
	if (!task->umask_moving) {
		task->umask_moving = true;
		t->umask_moving++;
	}
}

void cr_tasks_umask_settled(struct cr_tasks *t, pid_t tid)
{
	struct cr_task *task = cr_tasks_find(t, tid);

	if (task && task->umask_moving) {
		task->umask_moving = false;
		t->umask_moving--;
	}
}

bool cr_tasks_umask_get(struct cr_tasks *t, pid_t tid, mode_t *m)
{
	struct cr_task *task;

	if (t->umask_moving || t->umask_blind ||
	    !(task = cr_tasks_find(t, tid)) || task->umask_gen != t->umask_gen)
		return false;
	*m = task->umask;
	return true;
}

void cr_tasks_umask_put(struct cr_tasks *t, pid_t tid, mode_t m)
{
	struct cr_task *task;

	if (t->umask_moving || t->umask_blind ||
	    !(task = cr_tasks_find(t, tid)))
		return;
	task->umask = (uint16_t)(m & 0777);
	task->umask_gen = t->umask_gen;
}

uint64_t cr_tasks_start_time(pid_t tid)
{
	char path[64], buf[1024];
	unsigned long long start = 0;
	const char *p;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return 0;
	/* The command name may hold anything, ')' and spaces included: count
	 * fields from the last ')', which ends field 2. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field != 22 || sscanf(p, "%llu", &start) != 1)
		return 0;
	return start;
}

/* Signals whose default action is to ignore them (signal(7)); SIGCONT
 * resumes a stopped process whatever, and interrupts nothing else. */
#define CR_SIG_BIT(s) (1ULL << ((s) - 1))
#define CR_SIG_DEFAULT_IGNORED (CR_SIG_BIT(SIGCHLD) | CR_SIG_BIT(SIGURG) | \
				CR_SIG_BIT(SIGWINCH) | CR_SIG_BIT(SIGCONT))

/* Signals that stop a process when left at their default; SIGSTOP
 * whatever. */
#define CR_SIG_STOPS (CR_SIG_BIT(SIGSTOP) | CR_SIG_BIT(SIGTSTP) | \
		      CR_SIG_BIT(SIGTTIN) | CR_SIG_BIT(SIGTTOU))

/* A task's signal masks and thread count, from /proc/TID/status. */
struct sigmasks {
	unsigned long long pnd, shd, blk, ign, cgt;
	long threads;
};

static int read_sigmasks(pid_t tid, struct sigmasks *m)
{
	static const struct { const char *key; size_t off; } f[] = {
		{ "\nSigPnd:", offsetof(struct sigmasks, pnd) },
		{ "\nShdPnd:", offsetof(struct sigmasks, shd) },
		{ "\nSigBlk:", offsetof(struct sigmasks, blk) },
		{ "\nSigIgn:", offsetof(struct sigmasks, ign) },
		{ "\nSigCgt:", offsetof(struct sigmasks, cgt) },
	};
	char path[48], buf[4096];
	const char *p;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -1;
	if ((p = strstr(buf, "\nThreads:")))
		m->threads = atol(p + 9);
	for (size_t i = 0; i < CR_ARRAY_SIZE(f); i++)
		if ((p = strstr(buf, f[i].key)))
			*(unsigned long long *)((char *)m + f[i].off) =
				strtoull(p + 8, NULL, 16);
	return 0;
}

/* The stop signals that would stop the process: SIGSTOP, and the job-
 * control ones neither ignored nor caught. */
static unsigned long long stops_of(const struct sigmasks *m)
{
	return CR_SIG_BIT(SIGSTOP) | (CR_SIG_STOPS & ~m->ign & ~m->cgt);
}

bool cr_tasks_signal_stops(pid_t tid, int sig)
{
	struct sigmasks m;

	if (sig < 1 || sig > 64 || !(CR_SIG_STOPS & CR_SIG_BIT(sig)))
		return false;
	if (sig == SIGSTOP)
		return true;
	return read_sigmasks(tid, &m) == 0 && (stops_of(&m) & CR_SIG_BIT(sig));
}

bool cr_tasks_would_take_signal(pid_t tid, uint64_t *held)
{
	struct sigmasks m;
	unsigned long long pnd, shd, blk;

	if (read_sigmasks(tid, &m) < 0)
		return false;	/* gone: nothing to interrupt */
	pnd = m.pnd;
	shd = m.shd;
	blk = m.blk;
	/* A stop signal stops every thread of the process: each call it
	 * interrupts ends as after a handler (EINTR for a socket call with
	 * a timeout, semop, epoll_wait; the rest made again once the
	 * process is continued, signal(7)). An earlier build let a stopped
	 * program's held accept or receive wait on to its timeout, and its
	 * process did not stop meanwhile (found by a differential probing
	 * session). */
	if ((pnd | shd) & stops_of(&m) & ~blk)
		return true;
	/* A traced task keeps even ignored signals pending (for the
	 * tracer to see), where natively they are dropped as sent: one
	 * ignored, or left at a default that ignores it, would interrupt
	 * nothing (SIGCHLD of every child that exits, above all). */
	blk |= m.ign | (CR_SIG_DEFAULT_IGNORED & ~m.cgt);
	if (m.threads == 1)
		return ((pnd | shd) & ~blk) != 0;
	/* Several threads: the kernel gives a process's signal to any
	 * thread that does not block it, at once if one runs or sleeps
	 * interruptibly. One still pending a tick later has found no
	 * other taker, so this one would have had it (when two waiting
	 * here both qualify, the one that does not get it restarts its
	 * call, as the kernel's ERESTARTSYS without a signal does). */
	shd &= ~blk;
	bool take = (pnd & ~blk) || (shd & *held);

	*held = shd;
	return take;
}

bool cr_tasks_signal_only_ignored(pid_t tid, int sig)
{
	struct sigmasks m;
	unsigned long long dropped;

	if (sig < 1 || sig > 64 || read_sigmasks(tid, &m) < 0)
		return false;
	dropped = m.ign | (CR_SIG_DEFAULT_IGNORED & ~m.cgt);
	return (dropped & CR_SIG_BIT(sig)) &&
	       !((m.pnd | m.shd) & ~m.blk & ~dropped);
}

static void stop_kick_set(struct cr_tasks *ts, struct cr_task *t, bool on)
{
	if (t->stop_kick == on)
		return;
	t->stop_kick = on;
	if (on)
		ts->stop_kicks++;
	else
		ts->stop_kicks--;
}

bool cr_tasks_stop_kicked(struct cr_run *run, pid_t tid)
{
	struct cr_task *t;

	if (!run->tasks.stop_kicks || !(t = cr_tasks_find(&run->tasks, tid)) ||
	    !t->stop_kick)
		return false;
	stop_kick_set(&run->tasks, t, false);
	return true;
}

void cr_tasks_call_began(struct cr_run *run, pid_t tid)
{
	struct cr_task *t;

	if (run->tasks.stop_kicks && (t = cr_tasks_find(&run->tasks, tid)))
		stop_kick_set(&run->tasks, t, false);
}

/* t entered a group stop: the stop signal one thread took stops every
 * thread, and a thread held in a wait corral keeps cannot stop until the
 * wait is answered. The signal is no longer pending anywhere for
 * cr_tasks_would_take_signal to see, so its process's other threads are
 * marked (found by reading after a differential probing session). */
static void group_stop_kick(struct cr_run *run, struct cr_task *t)
{
	struct cr_tasks *ts = &run->tasks;
	pid_t g = cr_tasks_tgid(ts, t->tid);

	stop_kick_set(ts, t, false);
	if (!g)
		return;
	for (size_t i = 0; i < ts->cap; i++) {
		struct cr_task *s = &ts->slots[i];

		if (s->tid && s != t && s->state != CR_TS_STOPPED &&
		    cr_tasks_tgid(ts, s->tid) == g)
			stop_kick_set(ts, s, true);
	}
}

long cr_signal_check_period(long base_ms, size_t waiting)
{
	return base_ms * (1 + (long)(waiting / 64));
}

/* A number recently ours answers as a task of the run that has gone
 * (ESRCH, not recorded) only while it names nothing else: once the kernel
 * gives it to another process, a reach at it is a reach outside. */
bool cr_tasks_was_ours(const struct cr_tasks *t, pid_t tid)
{
	for (size_t i = 0; t->gone && i < CR_TASKS_GONE; i++) {
		uint64_t now;

		if (t->gone[i].tid != tid)
			continue;
		now = cr_tasks_start_time(tid);
		return !now || now == t->gone[i].start;
	}
	return false;
}

struct cr_task *cr_tasks_ours(struct cr_tasks *t, pid_t tid)
{
	struct cr_task *task;

	if (tid <= 0)
		return NULL;
	task = cr_tasks_find(t, tid);
	if (!task)
		return NULL;
	/* A leader: our pidfd pins its struct pid; signal 0 through it
	 * fails (ESRCH) once the process is reaped, whatever now has the
	 * number. */
	if (task->pidfd >= 0)
		return syscall(SYS_pidfd_send_signal, task->pidfd, 0, NULL,
			       0) == 0 ? task : NULL;
	/* A thread: its start time, read when it was added (fail closed
	 * when it could not be). */
	if (!task->start || cr_tasks_start_time(tid) != task->start)
		return NULL;
	return task;
}

bool cr_tasks_thread_gone(struct cr_tasks *t, pid_t tid)
{
	const struct cr_task *k = cr_tasks_find(t, tid);

	return k && !k->leader && k->state == CR_TS_EXITING;
}

/* A thread whose creator's event has not arrived yet has tgid 0: ask
 * /proc once and remember. */
pid_t cr_tasks_tgid(struct cr_tasks *t, pid_t tid)
{
	struct cr_task *task = cr_tasks_find(t, tid);
	char path[64], buf[1024], *p;

	if (!task)
		return 0;
	if (task->tgid)
		return task->tgid;
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nTgid:");
	if (p)
		task->tgid = (pid_t)atoi(p + 6);
	return task->tgid;
}

/* ---- the fd table a thread uses ---- */

/*
 * Every copy of a program's fd (the fd-relative calls: getdents, F_NOTIFY,
 * execveat, the xattr and attribute calls on an fd, sockets, pidfds) is
 * taken here, from the table of the CALLING thread: a thread made
 * without CLONE_FILES has its own, and the leader's fd N is then another
 * file, judged in place of the one the kernel would use. A leader's
 * pidfd names the leader itself; a thread gets a PIDFD_THREAD pidfd of
 * its own, opened at its first copy and kept until the thread is
 * forgotten (one pidfd_getfd per call, as for a leader; past 256 such
 * threads, opened and closed around each copy). The tid cannot
 * be recycled while it is in the table: it is our unreaped tracee. On a
 * kernel without PIDFD_THREAD a thread's copy goes through the leader
 * and is refused when the thread's table is not the leader's.
 */
/* Threads' pidfds kept at once: every fd corral holds is one fewer for
 * the opens it performs for the program (RLIMIT_NOFILE is often 1024). */
#define CR_TASKS_TPIDFDS 256

static int copy_of(int pidfd, int fd)
{
	int c = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);

	if (c < 0)
		return -errno;
	cr_guard_note_copy(c);
	return c;
}

int cr_tasks_getfd(struct cr_run *run, pid_t tid, int fd)
{
	struct cr_tasks *ts = &run->tasks;
	struct cr_task *t, *l;
	pid_t tgid;
	int c, p;

	if (fd < 0)
		return -EBADF;
	/* Not in the table: not a task of the run (a notifying task is
	 * added before it first runs), and a bare number may be anyone's. */
	t = cr_tasks_find(ts, tid);
	if (!t)
		return -ESRCH;
	if (t->leader && t->pidfd >= 0)
		return copy_of(t->pidfd, fd);
	if (t->tpidfd >= 0)
		return copy_of(t->tpidfd, fd);
	if (cr_taskfd_thread_pidfds()) {
		p = cr_taskfd_open(tid);
		if (p >= 0 && ts->tpidfds < CR_TASKS_TPIDFDS) {
			t->tpidfd = p;
			ts->tpidfds++;
			return copy_of(p, fd);
		}
		if (p >= 0) {
			/* Past the cap: this copy's own pidfd (two calls
			 * more), so corral keeps its fds for the program. */
			c = copy_of(p, fd);
			close(p);
			return c;
		}
		/* Out of fds (one per thread is many): through the leader,
		 * checked as on an old kernel; the pidfd is tried again at
		 * the next copy. */
		if (p != -EMFILE && p != -ENFILE)
			return -ESRCH;
	}
	tgid = cr_tasks_tgid(ts, tid);
	l = tgid ? cr_tasks_find(ts, tgid) : NULL;
	if (!l || l->pidfd < 0)
		return -ESRCH;
	c = cr_taskfd_via_leader(l->pidfd, tgid, tid, fd);
	if (c == -EPERM)
		cr_deny(run, tid, "pidfd_getfd", NULL, "proc",
			"a thread with an fd table of its own that corral "
			"cannot read (no PIDFD_THREAD before Linux 6.9, or "
			"no fd left for one)");
	return c;
}

bool cr_tables_step(struct cr_run *run)
{
	if (!run->tables_left)
		return false;
	/* The clock from the first entry, asked every 32. */
	if (!run->tables_until)
		run->tables_until = cr_thread_cpu_ns() + CR_TABLES_SEARCH_NS;
	else if (run->tables_left % 32 == 0 &&
		 cr_thread_cpu_ns() > run->tables_until)
		run->tables_left = 1;
	run->tables_left--;
	return true;
}

bool cr_tasks_own_table(const struct cr_task *t)
{
	if (t->leader || t->tgid <= 0)
		return true;
	if (t->state == CR_TS_EXITING)
		return false;
	return cr_taskfd_same_table(t->tgid, t->tid) != 1;
}

/* ---- killing ---- */

void cr_task_kill(struct cr_run *run, struct cr_task *t)
{
	int fd;

	if (t->pidfd >= 0) {
		syscall(SYS_pidfd_send_signal, t->pidfd, SIGKILL, NULL, 0);
		return;
	}
	/* A thread (SIGKILL takes its whole group). Its tid is ours while
	 * it is our unreaped tracee, but a thread that execs as its group
	 * is killed vanishes with no report at all (the exec event is
	 * skipped): checked first, through a pidfd that pins what it
	 * names, so a process that has the number since is never hit
	 * (found by a probing session: same-user processes outside the run
	 * were SIGKILLed by a run's end). */
	if (t->tpidfd >= 0) {	/* opened while it was ours: pinned */
		syscall(SYS_pidfd_send_signal, t->tpidfd, SIGKILL, NULL, 0);
		return;
	}
	if (!t->start)
		return;
	if (cr_taskfd_thread_pidfds()) {
		fd = cr_taskfd_open(t->tid);
		if (fd < 0)
			return;
		if (cr_tasks_start_time(t->tid) == t->start)
			syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
		close(fd);
	} else if (t->tgid > 0 && cr_tasks_start_time(t->tid) == t->start) {
		/* No thread pidfds (before 6.9): the pair narrows it. */
		syscall(SYS_tgkill, t->tgid, t->tid, SIGKILL);
	}
}

/* The group of leader tgid is reaped, so every thread of it is gone: an
 * entry still here lost its report (a thread that exec'd as the group
 * was killed) and must not outlive it, or its number, free for any new
 * process, would be taken for the run's. */
static void purge_group(struct cr_tasks *t, pid_t tgid)
{
	pid_t stale[32];
	size_t n;

	do {
		n = 0;
		for (size_t i = 0; i < t->cap && n < CR_ARRAY_SIZE(stale); i++)
			if (t->slots[i].tid && !t->slots[i].leader &&
			    t->slots[i].tgid == tgid)
				stale[n++] = t->slots[i].tid;
		for (size_t i = 0; i < n; i++)
			cr_tasks_remove(t, stale[i]);
	} while (n == CR_ARRAY_SIZE(stale));
}

/* Each process first, through its own pidfd: SIGKILL takes its whole
 * group at once. A thread of a group so signalled needs no signal of its
 * own; any other is signalled alone (each such one costs a pidfd and a
 * /proc read: for 2 000 threads, half a second of a supervisor the tree
 * starved, while they ran on; found by a probing session). */
size_t cr_tasks_kill_all(struct cr_run *run)
{
	struct cr_tasks *t = &run->tasks;
	size_t n = 0;

	run->killing = true;
	for (size_t i = 0; i < t->cap; i++) {
		struct cr_task *s = &t->slots[i];

		if (s->tid && s->leader && s->pidfd >= 0) {
			cr_task_kill(run, s);
			n++;
		}
	}
	for (size_t i = 0; i < t->cap; i++) {
		struct cr_task *s = &t->slots[i], *l;
		pid_t tgid;

		if (!s->tid || (s->leader && s->pidfd >= 0))
			continue;
		tgid = cr_tasks_tgid(t, s->tid);
		l = tgid && tgid != s->tid ? cr_tasks_find(t, tgid) : NULL;
		if (l && l->leader && l->pidfd >= 0)
			continue;
		cr_task_kill(run, s);
		n++;
	}
	return n;
}

/* Every task into a ptrace stop (PTRACE_INTERRUPT: no signal, nothing the
 * program can see but time), where it waits for the loop to continue it as
 * it continues any trap stop (EV_TRAP_STOP; one in group-stop re-traps as
 * EV_GROUP_STOP and stays stopped). A task created meanwhile starts in its
 * own first stop. */
void cr_tasks_freeze(struct cr_run *run)
{
	struct cr_tasks *t = &run->tasks;

	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].tid)
			ptrace(PTRACE_INTERRUPT, t->slots[i].tid, 0, 0);
}

/* ---- the ptrace state machine ----
 *
 * Each wait status is classified into an event; a table indexed by the
 * task's state and the event gives the action and the next state. */

enum ev {
	EV_FIRST_STOP,	/* PTRACE_EVENT_STOP of a task not yet running */
	EV_GROUP_STOP,	/* PTRACE_EVENT_STOP with a stopping signal */
	EV_TRAP_STOP,	/* PTRACE_EVENT_STOP otherwise (SIGCONT wake-up) */
	EV_NEW_TASK,	/* PTRACE_EVENT_FORK/VFORK/CLONE */
	EV_EXEC,	/* PTRACE_EVENT_EXEC */
	EV_EXIT_STOP,	/* PTRACE_EVENT_EXIT */
	EV_SIGNAL,	/* signal-delivery-stop */
	EV__COUNT
};

enum act {
	A_CONT,		/* PTRACE_CONT, no signal */
	A_LISTEN,	/* keep it in group-stop */
	A_INJECT,	/* PTRACE_CONT with the signal */
	A_NEW,		/* learn the new task, then CONT */
	A_EXEC,		/* learn who exec'd, then CONT */
};

struct trans {
	enum act act;
	enum cr_task_state next;
};

#define T(a, s) { A_##a, CR_TS_##s }
static const struct trans machine[CR_TS__COUNT][EV__COUNT] = {
	/*                 FIRST_STOP      GROUP_STOP        TRAP_STOP       NEW_TASK       EXEC            EXIT_STOP        SIGNAL */
	[CR_TS_STARTING] = { T(CONT, RUNNING), T(CONT, RUNNING), T(CONT, RUNNING), T(NEW, RUNNING), T(EXEC, RUNNING), T(CONT, EXITING), T(INJECT, RUNNING) },
	[CR_TS_RUNNING]  = { T(CONT, RUNNING), T(LISTEN, STOPPED), T(CONT, RUNNING), T(NEW, RUNNING), T(EXEC, RUNNING), T(CONT, EXITING), T(INJECT, RUNNING) },
	[CR_TS_STOPPED]  = { T(CONT, RUNNING), T(LISTEN, STOPPED), T(CONT, RUNNING), T(NEW, RUNNING), T(EXEC, RUNNING), T(CONT, EXITING), T(INJECT, RUNNING) },
	/* EXEC from EXITING: a non-leader thread exec'd; the old leader's
	 * exit stop came first and the exec is reported on its tid (ptrace(2):
	 * the leader "reappears"). The new image must be judged and the
	 * exec'ing thread's old tid forgotten, as for any exec. */
	[CR_TS_EXITING]  = { T(CONT, EXITING), T(CONT, EXITING), T(CONT, EXITING), T(CONT, EXITING), T(EXEC, RUNNING), T(CONT, EXITING), T(CONT, EXITING) },
};
#undef T

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

static enum ev classify(const struct cr_task *t, int status)
{
	int event = (unsigned)status >> 16;
	int sig = WSTOPSIG(status);

	switch (event) {
	case PTRACE_EVENT_STOP:
		if (t->state == CR_TS_STARTING)
			return EV_FIRST_STOP;
		return is_stop_signal(sig) ? EV_GROUP_STOP : EV_TRAP_STOP;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		return EV_NEW_TASK;
	case PTRACE_EVENT_EXEC:
		return EV_EXEC;
	case PTRACE_EVENT_EXIT:
		return EV_EXIT_STOP;
	default:
		return EV_SIGNAL;
	}
}

/*
 * A tree of many runnable threads at the supervisor's own priority starves
 * it: 2 000 spinning threads gave it one slice in thousands, each budget
 * tick then took seconds, and the wall and cpu budgets fired tens of
 * seconds late (found by a probing session). Past CR_TASKS_RENICE_AT live
 * tasks, every task of the run is set to the lowest priority (nice 19),
 * and so is every task made after; RLIMIT_NICE 0, set at spawn, keeps
 * them from coming back. The supervisor stays at the caller's priority,
 * ahead of any number of them. A run that never has that many tasks never
 * sees its priority changed.
 */
#define CR_TASKS_RENICE_AT 64
#define CR_TASKS_NICE 19

static void renice(struct cr_run *run, struct cr_task *t)
{
	if (run->reniced)
		setpriority(PRIO_PROCESS, (id_t)t->tid, CR_TASKS_NICE);
}

static void renice_check(struct cr_run *run, struct cr_task *t)
{
	struct cr_tasks *ts = &run->tasks;

	if (run->reniced) {
		renice(run, t);
		return;
	}
	if (ts->count <= CR_TASKS_RENICE_AT)
		return;
	run->reniced = true;
	/* Each one asked first: a number the table failed to forget may be
	 * another process's of the same user now (the new task is ours: its
	 * creation was just reported). */
	renice(run, t);
	for (size_t i = 0; i < ts->cap; i++) {
		struct cr_task *s = &ts->slots[i];

		if (s->tid && s != t && cr_tasks_ours(ts, s->tid) == s)
			renice(run, s);
	}
}

static void on_new_task(struct cr_run *run, pid_t parent)
{
	unsigned long msg = 0;
	struct cr_task *child;

	cr_jobctl_forget(&run->tasks);	/* a member more, unread */

	if (ptrace(PTRACE_GETEVENTMSG, parent, 0, &msg) < 0 || !msg)
		return;
	/* Budgets: the parent's reservation is now a task in the table. */
	child = cr_tasks_find(&run->tasks, parent);
	if (child)
		cr_budget_on_new_task(run, child);
	/* The child's first stop and its exit can both be collected before
	 * this event: it must not come back into the table as a phantom. */
	if (!cr_tasks_find(&run->tasks, (pid_t)msg) &&
	    cr_budget_gone_early(run, (pid_t)msg))
		return;
	child = cr_tasks_add(&run->tasks, (pid_t)msg);
	if (child && !child->leader) {
		struct cr_task *p = cr_tasks_find(&run->tasks, parent);

		child->tgid = p && p->tgid ? p->tgid : 0;
	} else if (child) {
		/* A fork copies its parent's dumpable state. */
		pid_t pg = cr_tasks_tgid(&run->tasks, parent);
		struct cr_task *pp = pg ? cr_tasks_find(&run->tasks, pg) : NULL;

		child->undumpable = pp && pp->undumpable;
		child->parent_serial = pp ? pp->serial : 0;
	}
	if (!child) {
		/* No memory to track it: it cannot be allowed to run. */
		kill((pid_t)msg, SIGKILL);
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "out of memory tracking tasks");
		return;
	}
	child->b.announced = true;
	if (child->leader)
		cr_budget_on_new_process(run, parent, child);
	renice_check(run, child);
	if (run->killing)
		cr_task_kill(run, child);
}

static void on_exec(struct cr_run *run, struct cr_task *t)
{
	unsigned long former = 0;
	char bad[PATH_MAX];

	/* A thread that execs brings its own umask to the process's tid. */
	cr_tasks_umask_forget(&run->tasks);
	t->undumpable = false;	/* exec makes a process dumpable again */
	/* The new image is mapped and has not run an instruction: judge what
	 * really loaded, whatever the path looked like at execve. */
	bad[0] = 0;
	if (cr_fs_exec_verify(run, t->tid, bad, sizeof(bad)) < 0) {
		bool seen = bad[0] == '/';

		cr_task_kill(run, t);
		cr_deny(run, t->tid, "execve", seen ? bad : NULL, "exec",
			seen ? "the image loaded is outside the exec roots" :
			       bad);
		cr_run_end(run, CR_ST_POLICY_DENIED, NULL,
			   seen ? "exec of %s refused: outside the exec roots" :
				  "exec refused: %s", bad);
	}

	/* From here its memory is its own (budget/procs.c), not its parent's
	 * nor corral's. */
	t->execed = true;
	t->b.vm_group = 0;
	/* A send its tid was making itself (net/ownsend.c) is gone with
	 * the old image: its registers are not the new one's. */
	cr_ownsend_on_gone(run, t->tid);
	/* A non-leader thread that execs takes over the leader's tid; its
	 * old tid vanishes without an exit report. */
	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former) == 0 &&
	    former && (pid_t)former != t->tid) {
		struct cr_task *f = cr_tasks_find(&run->tasks, (pid_t)former);

		if (f)
			cr_budget_on_exec(run, t, f);
		cr_tasks_remove(&run->tasks, (pid_t)former);
		cr_ownsend_on_gone(run, (pid_t)former);
		/* The old leader died in the exec, without an exit report
		 * of its own: its waiting calls (a splice, an accept) end
		 * now, and corral's copies of their files with them. They
		 * were kept until the next readiness (a pipe's reader saw
		 * its end of file 8 s late; found by a probing session). */
		cr_net_defer_on_gone(run, t->tid);
		cr_fs_fifo_on_gone(run, t->tid);
	}
}

int cr_proc_ids(pid_t pid, pid_t *ppid, pid_t *pgrp, pid_t *sid)
{
	char path[64], buf[1024];
	const char *p;
	int a, b, c;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0 ||
	    !(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %d %d %d", &a, &b, &c) != 3)
		return -1;
	*ppid = a;
	*pgrp = b;
	*sid = c;
	return 0;
}

/*
 * A job-control stop (SIGTSTP, SIGTTIN, SIGTTOU at their default action)
 * does nothing in an orphaned process group: no process outside it, in its
 * session, could continue it (the kernel's get_signal). A run started
 * without job control (setsid, cron, CI) is such a group natively; under
 * corral, its parent in the caller's session, it never is, and a program
 * stopping itself stayed stopped until the wall limit (found by a
 * differential probing session). So at the delivery stop, a group no
 * process but corral keeps from being orphaned drops the signal, as the
 * kernel would. A handler, an ignored signal, or a parent of the run's
 * own in the session outside the group: the kernel's way, unchanged.
 */
static bool job_stop_dropped(struct cr_run *run, pid_t tid, int sig)
{
	struct sigmasks m;
	pid_t ppid, pgrp, sid;

	if ((sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) ||
	    read_sigmasks(tid, &m) < 0 ||
	    ((m.ign | m.cgt) & CR_SIG_BIT(sig)) ||
	    cr_proc_ids(tid, &ppid, &pgrp, &sid) < 0)
		return false;
	return cr_jobctl_orphaned(run, pgrp, sid, 0) == 1;
}

static void on_stop(struct cr_run *run, pid_t tid, int status)
{
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);
	const struct trans *tr;
	enum ev ev;

	if (!t) {
		/* The new task's first stop can arrive before its parent's
		 * fork event. */
		t = cr_tasks_add(&run->tasks, tid);
		cr_jobctl_forget(&run->tasks);	/* a member more, unread */
		if (!t) {
			kill(tid, SIGKILL);
			return;
		}
		renice_check(run, t);
		if (run->killing)
			cr_task_kill(run, t);
	}
	t->seen = true;
	cr_budget_task_seen(run, tid);	/* its calls before are done */
	/* A unix send it makes itself (net/ownsend.c): its stops. */
	if (cr_ownsend_on_stop(run, tid, status)) {
		/* It runs on (a trap after SIGCONT ended a group stop). */
		if (t->state == CR_TS_STOPPED) {
			t->state = CR_TS_RUNNING;
			run->tasks.stopped--;
		}
		return;
	}
	cr_surface_on_stop(run, tid, status);	/* kernel surface: ABI, stacks */
	ev = classify(t, status);
	tr = &machine[t->state][ev];
	/* Budgets: any stop but a fork event means a creation this thread
	 * was making is over without a task. */
	if (ev != EV_NEW_TASK)
		cr_budget_on_stop(run, t);
	/* Its CPU time is all but final here. A leader whose thread execs
	 * is released by the kernel without an exit report; this reading is
	 * the last anyone gets of it. */
	if (ev == EV_EXIT_STOP)
		cr_budget_on_exit(run, tid);
	switch (tr->act) {
	case A_NEW:
		on_new_task(run, tid);
		break;
	case A_EXEC:
		on_exec(run, t);
		break;
	default:
		break;
	}
	/* on_new_task may have grown the table: look the task up again. */
	t = cr_tasks_find(&run->tasks, tid);
	if (!t)
		return;
	if (tr->next == CR_TS_EXITING && t->state != CR_TS_EXITING)
		run->tasks.exiting++;
	else if (t->state == CR_TS_EXITING && tr->next != CR_TS_EXITING)
		run->tasks.exiting--;	/* an exec took the leader's place */
	if (tr->next == CR_TS_STOPPED && t->state != CR_TS_STOPPED) {
		pid_t pp, ps;

		run->tasks.stopped++;
		if (cr_proc_ids(tid, &pp, &t->stop_pgrp, &ps) < 0)
			t->stop_pgrp = 0;
	}
	else if (t->state == CR_TS_STOPPED && tr->next != CR_TS_STOPPED)
		run->tasks.stopped--;
	if (ev == EV_GROUP_STOP && tr->next == CR_TS_STOPPED &&
	    t->state != CR_TS_STOPPED) {
		group_stop_kick(run, t);
		cr_notif_on_group_stop(tid);
	}
	t->state = tr->next;
	switch (tr->act) {
	case A_LISTEN:
		if (ptrace(PTRACE_LISTEN, tid, 0, 0) < 0)
			ptrace(PTRACE_CONT, tid, 0, 0);
		break;
	case A_INJECT: {
		int sig = WSTOPSIG(status);
		bool dropped = job_stop_dropped(run, tid, sig);

		cr_notif_on_signal_stop(run, tid, sig,
					!dropped && cr_tasks_signal_stops(tid, sig));
		ptrace(cr_ownsend_resume(run, tid), tid, 0,
		       (void *)(long)(dropped ? 0 : sig));
		break;
	}
	default:
		ptrace(cr_ownsend_resume(run, tid), tid, 0, 0);
		break;
	}
}

static void on_gone(struct cr_run *run, pid_t tid, int status)
{
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);

	cr_budget_task_seen(run, tid);
	cr_surface_on_gone(run, tid, status,	/* a foreign-ABI kill: policy_denied */
			   t && t->state == CR_TS_EXITING);
	/* Measured, not assumed: a process counts as killed when the tree
	 * kill had begun and SIGKILL is what ended it. */
	if (run->killing && t && t->leader && WIFSIGNALED(status) &&
	    WTERMSIG(status) == SIGKILL)
		run->killed++;
	if (t && t->initial && !run->have_exit) {
		run->have_exit = true;
		run->exit_status = status;
		cr_run_end(run, CR_ST_OK, NULL, "the program exited");
	}
	if (t)
		cr_budget_on_gone(run, t);
	cr_fs_fifo_on_gone(run, tid);
	cr_net_defer_on_gone(run, tid);
	cr_ownsend_on_gone(run, tid);
	if (t && t->leader) {
		cr_tasks_remove(&run->tasks, tid);
		purge_group(&run->tasks, tid);
	} else {
		cr_tasks_remove(&run->tasks, tid);
	}
}

/* At most this many stops and exits per call: a tree that keeps stops
 * coming (hundreds of threads taking signals) must not hold the loop, or
 * the wall timer and the budgets' tick would never be served. */
#define CR_REAP_BATCH 64

static bool reap_batch(struct cr_run *run)
{
	for (int n = 0; n < CR_REAP_BATCH; n++) {
		struct rusage ru;
		siginfo_t si = { 0 };
		int status;
		pid_t pid;

		/* Look before collecting: an exited task is still a zombie
		 * here, so the budgets can read its final CPU time. */
		if (waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WNOHANG |
			   __WALL | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		if (si.si_pid <= 0)
			return false;
		if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED ||
		    si.si_code == CLD_DUMPED) {
			cr_budget_on_exit(run, si.si_pid);
			cr_jobctl_on_end(run, si.si_pid);
		}
		pid = wait4(si.si_pid, &status, WNOHANG | WUNTRACED | __WALL,
			    &ru);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return false;
		if (WIFSTOPPED(status)) {
			run->stops++;
			on_stop(run, pid, status);
		}
		else if (WIFEXITED(status) || WIFSIGNALED(status))
			on_gone(run, pid, status);
	}
	return true;	/* more may be waiting: the loop comes back at once */
}

bool cr_tasks_reap(struct cr_run *run)
{
	bool more = reap_batch(run);

	cr_jobctl_forget(&run->tasks);	/* read for this batch only */
	return more;
}

/* As reap_batch takes an exit it finds, for one task of the run named (a
 * number the program gives is looked up first: nothing else of corral's
 * is waited for here): the loop's
 * batches take what the kernel lists first (the most recently traced),
 * so a tree whose newer tasks keep stopping left an older zombie
 * uncollected past them, and its parent's wait said "not yet" (found by
 * a differential probe). */
static bool reap_exit(struct cr_run *run, pid_t pid)
{
	siginfo_t si = { 0 };
	struct rusage ru;
	int status;

	/* The tracer is told of a tracee's stops whatever the flags ask:
	 * only an exit is taken here (a stop taken here and dropped left
	 * a task in its signal-delivery stop for good); stops are the
	 * batches'. */
	if (pid <= 0 || run->ending || !cr_tasks_find(&run->tasks, pid) ||
	    waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | __WALL |
		   WNOWAIT) < 0 || si.si_pid != pid ||
	    (si.si_code != CLD_EXITED && si.si_code != CLD_KILLED &&
	     si.si_code != CLD_DUMPED))
		return false;
	cr_budget_on_exit(run, pid);
	cr_jobctl_on_end(run, pid);
	if (wait4(pid, &status, WNOHANG | __WALL, &ru) == pid &&
	    (WIFEXITED(status) || WIFSIGNALED(status)))
		on_gone(run, pid, status);
	return true;
}

void cr_tasks_reap_exit(struct cr_run *run, pid_t pid)
{
	if (reap_exit(run, pid))
		cr_jobctl_forget(&run->tasks);
}

void cr_tasks_reap_children(struct cr_run *run, pid_t tid)
{
	struct cr_tasks *ts = &run->tasks;
	pid_t tg = cr_tasks_tgid(ts, tid), kids[CR_REAP_CHILDREN];
	const struct cr_task *p = tg > 0 ? cr_tasks_find(ts, tg) : NULL;
	size_t n = 0;
	bool any = false;

	if (!p || !p->serial)
		return;
	/* Named first, taken after: a take removes entries. */
	for (size_t i = 0; i < ts->cap && n < CR_REAP_CHILDREN; i++) {
		const struct cr_task *k = &ts->slots[i];

		if (k->tid && k->leader && k != p &&
		    k->parent_serial == p->serial)
			kids[n++] = k->tid;
	}
	for (size_t i = 0; i < n; i++)
		any |= reap_exit(run, kids[i]);
	if (any)
		cr_jobctl_forget(ts);
}

/*
 * Only the tasks using a table change its numbers (dup2, close, a
 * receive), and only those can make another task that uses it; so while
 * tid waits in its notification, no other task using its table means none
 * will (a verdict on the file at a number then holds when the kernel looks
 * the number up). The threads of its process are asked one by one (kcmp);
 * one at or past its exit stop (CR_TS_EXITING, or thread_leaving) runs
 * no code of the program's again, and one already a zombie uses nothing. A process made sharing a
 * table (clone(CLONE_FILES) without CLONE_THREAD, files_cloned) is not
 * looked for: then never alone. Any doubt is "not alone".
 */
/* Is thread other of tid's process on its way out, never to run the
 * program's code again: stopped at its exit event (state t, exit_code
 * SIGTRAP | PTRACE_EVENT_EXIT << 8: corral has not yet taken that stop),
 * or past exit_mm (vsize 0)? It may still hold the fd table until
 * exit_files, but it will never change it. */
static bool thread_leaving(pid_t tid, pid_t other)
{
	char path[80], b[1024], st = 0, *p;
	unsigned long long vsize = 1;
	long code;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)tid,
		 (int)other);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT || errno == ESRCH;	/* reaped */
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0 || b[n - 1] != '\n')
		return false;
	b[n - 1] = 0;
	/* After the comm's ')': state is field 3, vsize field 23; the
	 * last, exit_code, field 52. */
	if (!(p = strrchr(b, ')')) ||
	    sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
		   "%*u %*d %*d %*d %*d %*d %*d %*u %llu", &st, &vsize) != 2)
		return false;
	if (vsize == 0)
		return true;
	p = strrchr(p, ' ');
	code = p ? strtol(p + 1, NULL, 10) : 0;
	return st == 't' && code == (SIGTRAP | (PTRACE_EVENT_EXIT << 8));
}

bool cr_tasks_table_alone(struct cr_run *run, pid_t tid)
{
	char path[48];
	struct dirent *d;
	DIR *dir;
	bool alone = true;
	uint64_t t0;

	if (run->files_cloned)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)tid);
	if (!(dir = opendir(path)))
		return false;
	/* A kcmp per thread until one shares the table: 1 000 threads each
	 * with a table of its own cost corral 2-3 ms a call (F_NOTIFY, a
	 * shared mapping), the run's CPU (found by a probing session). */
	t0 = cr_thread_cpu_ns();
	while (alone && (d = readdir(dir))) {
		char *end;
		long other = strtol(d->d_name, &end, 10);
		const struct cr_task *o;

		if (d->d_name[0] == '.' || *end || other <= 0 || other == tid)
			continue;
		o = cr_tasks_find(&run->tasks, (pid_t)other);
		if (o && o->state == CR_TS_EXITING)
			continue;
		switch (cr_taskfd_same_table(tid, (pid_t)other)) {
		case 0:
		case -ESRCH:	/* gone meanwhile */
			break;
		default:	/* the same table, or kcmp cannot tell */
			alone = thread_leaving(tid, (pid_t)other);
		}
	}
	closedir(dir);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return alone;
}

