/* tracer/budget/procs.c: the processes budget: slots reserved at each fork,
 * tasks made, exec'd and gone, zombies held; each task's last CPU and memory. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <linux/kcmp.h>

#include "internal.h"

/* ---- processes ---- */

static uint64_t tasks_alive(const struct cr_run *run)
{
	const struct cr_budgets *b = run->budgets;

	return run->tasks.count + b->pending + b->nzombies;
}

/* What the processes budget counts: processes (thread-group leaders, the
 * reservations for new ones, zombies holding a pid). Threads are bounded
 * apart, at CR_BUDGET_THREADS_PER_PROC times the budget in all: a JVM or
 * a test suite's worker threads are not processes, but a thread bomb
 * still takes pids and kernel memory. */
static uint64_t procs_alive(const struct cr_run *run)
{
	const struct cr_budgets *b = run->budgets;

	return run->tasks.leaders + b->pending_procs + b->nzombies;
}

void bg_note_peaks(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	/* A zombie its parent has reaped since the last look is no process:
	 * a new peak is counted without those (a shell running /bin/true in
	 * turn reported 13 processes at once, or the whole budget; found by
	 * a probing session). Looked at only when a peak would rise. */
	if (b->nzombies && (tasks_alive(run) > b->peak_tasks ||
			    procs_alive(run) > b->peak_procs))
		bg_prune_zombies(b);
	if (tasks_alive(run) > b->peak_tasks)
		b->peak_tasks = tasks_alive(run);
	if (procs_alive(run) > b->peak_procs)
		b->peak_procs = procs_alive(run);
}

/* A process we reaped as its tracer stays a zombie until its real parent
 * (a task of the tree) waits for it: it holds a pid, so it holds a slot,
 * or a program that never waits could fill the host's pid space. Its pidfd
 * tells when the pid is really free (signal 0 then fails with ESRCH). */
void bg_prune_zombies(struct cr_budgets *b)
{
	size_t j = 0;

	for (size_t i = 0; i < b->nzombies; i++) {
		if (syscall(SYS_pidfd_send_signal, b->zombies[i].fd, 0, NULL, 0) < 0 &&
		    errno == ESRCH)
			close(b->zombies[i].fd);
		else
			b->zombies[j++] = b->zombies[i];
	}
	b->nzombies = j;
}

static void keep_zombie(struct cr_run *run, struct cr_task *t)
{
	struct cr_budgets *b = run->budgets;

	if (!t->leader || t->pidfd < 0 ||
	    syscall(SYS_pidfd_send_signal, t->pidfd, 0, NULL, 0) < 0)
		return;	/* fully reaped (we were its parent), or a thread */
	if (b->nzombies == b->zcap) {
		size_t cap = b->zcap ? b->zcap * 2 : 64;
		struct cr_zombie *z = realloc(b->zombies, cap * sizeof(*z));

		if (!z) {
			/* Cannot track it: count it as a process that
			 * never goes (an error towards refusing). */
			b->pending++;
			b->pending_procs++;
			return;
		}
		b->zombies = z;
		b->zcap = cap;
	}
	b->zombies[b->nzombies].fd = t->pidfd;
	b->zombies[b->nzombies++].pid = t->tid;
	t->pidfd = -1;	/* ours now: cr_tasks_remove must not close it */
}

/* Is pid a process of the run that has ended and waits for its real parent
 * (a task of the run) to collect it? Its pidfd pins its struct pid: while
 * signal 0 through it succeeds, the number is still that zombie's, so an
 * object opened by number before this answer is the zombie's own. */
bool cr_budget_zombie(struct cr_run *run, pid_t pid)
{
	struct cr_budgets *b = run->budgets;

	for (size_t i = 0; b && pid > 0 && i < b->nzombies; i++)
		if (b->zombies[i].pid == pid &&
		    syscall(SYS_pidfd_send_signal, b->zombies[i].fd, 0, NULL,
			    0) == 0)
			return true;	/* an older entry of the number may
					 * wait for its prune: look on */
	return false;
}

bool cr_budget_zombie_listed(const struct cr_run *run, pid_t pid)
{
	const struct cr_budgets *b = run->budgets;

	for (size_t i = 0; b && pid > 0 && i < b->nzombies; i++)
		if (b->zombies[i].pid == pid)
			return true;
	return false;
}

static void settle(struct cr_run *run, struct cr_task *t)
{
	struct cr_budgets *b = run->budgets;

	if (b && t->b.creating) {
		t->b.creating = false;
		if (b->pending)
			b->pending--;
		if (t->b.creating_proc && b->pending_procs)
			b->pending_procs--;
		t->b.creating_proc = false;
	}
}

/* Race-free against many threads cloning at once: every creation passes
 * through this function on the loop thread, one at a time, and the slot is
 * taken here, before the kernel makes the task. Counting the table plus the
 * reservations can count a child twice for an instant (its first stop seen
 * before its parent's fork event), never zero times: an error towards
 * refusing. */
int cr_budget_reserve(struct cr_run *run, pid_t tid, bool thread)
{
	struct cr_budgets *b = run->budgets;
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);
	uint64_t max = bg_lim(run, CR_LIM_PROCESSES);
	uint64_t max_tasks = max > UINT64_MAX / CR_BUDGET_THREADS_PER_PROC ?
			     UINT64_MAX : max * CR_BUDGET_THREADS_PER_PROC;

	if (!b || !t)
		return -EAGAIN;	/* fail closed: we do not know this task */
	/* A thread runs one call at a time: a reservation it still holds is
	 * from a creation that failed (or is being restarted). */
	settle(run, t);
	if ((!thread && procs_alive(run) + 1 > max) ||
	    tasks_alive(run) + 1 > max_tasks)
		bg_prune_zombies(b);
	if (!thread && procs_alive(run) + 1 > max) {
		bg_breach(run, CR_LIM_PROCESSES, procs_alive(run) + 1);
		return -EAGAIN;
	}
	if (tasks_alive(run) + 1 > max_tasks) {
		bg_breach_threads(run, tasks_alive(run) + 1, max_tasks);
		return -EAGAIN;
	}
	t->b.creating = true;
	t->b.creating_proc = !thread;
	b->pending++;
	if (!thread)
		b->pending_procs++;
	bg_note_peaks(run);
	return 0;
}

void cr_budget_on_new_task(struct cr_run *run, struct cr_task *parent)
{
	settle(run, parent);
}

/*
 * Address spaces shared between processes. A vfork child (Python's
 * subprocess, posix_spawn) runs in its parent's address space until its
 * exec, and clone(CLONE_VM) without CLONE_THREAD makes a process that
 * shares it for good: both leaders show the same RSS and PSS (a page
 * mapped in one address space counts once for PSS, whichever processes
 * share it). Summed per leader, a Python holding 300 MiB that ran one
 * subprocess under memory=512MiB was judged 626 MiB, and its exec's
 * reading added the same again (found by a probing session). Such
 * processes form a group, told by kcmp(KCMP_VM) at the fork event (both
 * are stopped: neither has exec'd); a reading counts one leader of each
 * group, and an exit or exec counts the address space only when no other
 * leader of its group is alive. An exec gives a process its own address
 * space again. Without kcmp every process counts (errs high).
 */
void cr_budget_on_new_process(struct cr_run *run, pid_t parent,
			      struct cr_task *child)
{
	struct cr_budgets *b = run->budgets;
	pid_t pg = cr_tasks_tgid(&run->tasks, parent);
	struct cr_task *pl = pg ? cr_tasks_find(&run->tasks, pg) : NULL;

	if (!b || !pl || !pl->leader || !child->leader ||
	    syscall(SYS_kcmp, pg, child->tid, KCMP_VM, 0, 0) != 0)
		return;
	if (!pl->b.vm_group)
		pl->b.vm_group = ++b->vm_next;
	child->b.vm_group = pl->b.vm_group;
}

void cr_budget_on_stop(struct cr_run *run, struct cr_task *t)
{
	settle(run, t);
}

void cr_budget_on_exit(struct cr_run *run, pid_t tid)
{
	struct cr_budgets *b = run->budgets;
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);
	uint64_t ns;

	if (!b || !t)
		return;
	if (bg_read_thread_cpu(b, t, &ns) == 0 && ns > t->b.cpu_ns)
		t->b.cpu_ns = ns;
	bg_memory_leaving(run, b, t, false);
}

void cr_budget_before_exec(struct cr_run *run, pid_t tid)
{
	struct cr_budgets *b = run->budgets;
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);

	if (b && t)
		bg_memory_leaving(run, b, t, true);
}

void cr_budget_on_gone(struct cr_run *run, struct cr_task *t)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return;
	settle(run, t);
	bg_task_close_fds(b, t);
	b->cpu_dead_ns += t->b.cpu_ns;
	t->b.cpu_ns = 0;
	if (!t->initial)
		keep_zombie(run, t);
	if (!t->b.announced && !t->initial) {
		b->gone_early[b->gone_next] = t->tid;
		b->gone_next = (b->gone_next + 1) % CR_BUDGET_GONE_EARLY;
	}
}

/* The ring is small: an entry it lost would only leave a phantom counted
 * as alive (an error towards refusing), and every entry is waiting for an
 * event of a parent that is stopped right now. */
bool cr_budget_gone_early(struct cr_run *run, pid_t tid)
{
	struct cr_budgets *b = run->budgets;

	for (size_t i = 0; b && i < CR_BUDGET_GONE_EARLY; i++)
		if (b->gone_early[i] == tid) {
			b->gone_early[i] = 0;
			return true;
		}
	return false;
}

void cr_budget_on_exec(struct cr_run *run, struct cr_task *leader,
		       struct cr_task *former)
{
	struct cr_budgets *b = run->budgets;

	/* A non-leader thread exec'd and took the leader's tid: the old
	 * leader is gone (its last reading is final), and the leader's entry
	 * now stands for the thread that exec'd. */
	if (!b)
		return;
	/* The descriptors named the tasks as they were: open them anew. */
	bg_task_close_fds(b, leader);
	bg_task_close_fds(b, former);
	b->cpu_dead_ns += leader->b.cpu_ns;
	leader->b.cpu_ns = former->b.cpu_ns;
	former->b.cpu_ns = 0;
	settle(run, former);
}
