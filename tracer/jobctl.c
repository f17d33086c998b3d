/* tracer/jobctl.c: the job control the kernel does not do for a run whose
 * processes corral adopts: orphaned process groups, corral outside them. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif

/*
 * POSIX: a process group is orphaned when no member has a parent in
 * another group of the same session. corral, the run's parent and the
 * reaper of every process whose parent exits, sits in the caller's
 * session: to the kernel, no group of the run is ever orphaned. Natively
 * those processes go to init, outside the session, so corral judges as
 * if it were there: a parent that is corral links nothing.
 *
 * 1: orphaned; 0: a member (not `gone`) has such a parent; -1: cannot
 * tell (a process unreadable: the caller keeps the kernel's way).
 */
int cr_jobctl_orphaned(struct cr_run *run, pid_t pgrp, pid_t sid, pid_t gone)
{
	struct cr_tasks *ts = &run->tasks;
	pid_t self = getpid();

	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *k = &ts->slots[i];
		pid_t kp, kg, ks, pp, pg, psid;

		if (!k->tid || !k->leader || k->tid == gone ||
		    cr_proc_ids(k->tid, &kp, &kg, &ks) < 0 || kg != pgrp)
			continue;
		if (kp == self || kp == gone)
			continue;
		if (cr_proc_ids(kp, &pp, &pg, &psid) < 0)
			return -1;
		if (pg != pgrp && psid == sid)
			return 0;
	}
	return 1;
}

/* One process of the run as /proc showed it at a judgement. */
struct member {
	pid_t tid, ppid, pgrp, sid;
	bool stopped;			/* a thread of it in group stop */
	bool gone;			/* ended since it was read */
};

static int by_tid(const void *a, const void *b)
{
	pid_t x = ((const struct member *)a)->tid;
	pid_t y = ((const struct member *)b)->tid;

	return (x > y) - (x < y);
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The groups of the run's stopped tasks, as read when each stopped: sorted,
 * for the question asked at every end (a stopped process's group changes
 * only by its parent's setpgid, which the exact judgement then reads). */
static pid_t *stopped_groups(const struct cr_tasks *ts, size_t *n)
{
	pid_t *g = malloc((ts->stopped ? ts->stopped : 1) * sizeof(*g));

	*n = 0;
	if (!g)
		return NULL;
	for (size_t i = 0; i < ts->cap && *n < ts->stopped; i++)
		if (ts->slots[i].tid && ts->slots[i].state == CR_TS_STOPPED)
			g[(*n)++] = ts->slots[i].stop_pgrp;
	qsort(g, *n, sizeof(*g), by_pid);
	return g;
}

static bool has(const pid_t *v, size_t n, pid_t x)
{
	return v && bsearch(&x, v, n, sizeof(*v), by_pid);
}

/* Every process of the run but `gone`, read once: O(processes) reads for
 * any number of groups judged. NULL: out of memory (nothing is sent). */
static struct member *snapshot(const struct cr_tasks *ts, pid_t gone,
			       size_t *n)
{
	struct member *m = malloc((ts->leaders ? ts->leaders : 1) * sizeof(*m));

	*n = 0;
	if (!m)
		return NULL;
	for (size_t i = 0; i < ts->cap && *n < ts->leaders; i++) {
		const struct cr_task *k = &ts->slots[i];
		struct member *e = &m[*n];

		if (!k->tid || !k->leader || k->tid == gone ||
		    cr_proc_ids(k->tid, &e->ppid, &e->pgrp, &e->sid) < 0)
			continue;
		e->tid = k->tid;
		e->gone = false;
		(*n)++;
	}
	qsort(m, *n, sizeof(*m), by_tid);
	return m;
}

/* Which of them are stopped now (the table's states, no reads). */
static void mark_stopped(const struct cr_tasks *ts, struct member *m,
			 size_t n)
{
	for (size_t i = 0; i < n; i++)
		m[i].stopped = false;
	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *k = &ts->slots[i];
		struct member key = { .tid = k->leader ? k->tid : k->tgid };
		struct member *e;

		if (k->tid && k->state == CR_TS_STOPPED &&
		    (e = bsearch(&key, m, n, sizeof(*m), by_tid)))
			e->stopped = true;
	}
}

static struct member *memo_find(struct cr_tasks *ts, pid_t tid)
{
	struct member key = { .tid = tid };

	return ts->jc_memo ? bsearch(&key, ts->jc_memo, ts->jc_nmemo,
				     sizeof(key), by_tid) : NULL;
}

/* The snapshot is kept for the rest of one batch of reports (tasks.c):
 * each end in it marks its process gone and its children's new parents,
 * so that a batch of ends reads the run once, not once each (a group of
 * 1000 stopped members ended one by one held the loop 5 s; found by a
 * probing session). A new task drops it. Groups changed by setpgid or
 * setsid within the batch are not seen until the next one. */
void cr_jobctl_forget(struct cr_tasks *ts)
{
	free(ts->jc_memo);
	ts->jc_memo = NULL;
	ts->jc_nmemo = 0;
}

/* The kernel's kill_orphaned_pgrp, corral outside: pgrp orphaned (no
 * member's parent, corral aside, in another group of the session) with a
 * stopped member gets SIGHUP then SIGCONT, sent to the run's processes in
 * it through their pidfds: a group the kernel would signal whole may hold
 * a process of the caller's session (setpgid joins any group of it),
 * which corral must never reach. A group the kernel itself found orphaned
 * (no member's parent corral in its session) has had them already. */
static void judge(struct cr_tasks *ts, const struct member *m, size_t n,
		  pid_t pgrp)
{
	static const int sigs[] = { SIGHUP, SIGCONT };
	pid_t self = getpid(), cg = getpgrp(), cs = getsid(0);
	bool stopped = false, kept = false;

	for (size_t i = 0; i < n; i++) {
		const struct member *p;
		struct member key;

		if (m[i].pgrp != pgrp || m[i].gone)
			continue;
		stopped |= m[i].stopped;
		if (m[i].ppid == self) {
			/* Only corral keeps it linked in the kernel's eyes;
			 * else the kernel has signalled it itself. */
			kept |= cg != pgrp && cs == m[i].sid;
			continue;
		}
		key.tid = m[i].ppid;
		p = bsearch(&key, m, n, sizeof(*m), by_tid);
		if (!p || p->gone)
			return;	/* a parent unread: cannot tell, nothing */
		if (p->pgrp != pgrp && p->sid == m[i].sid)
			return;	/* still linked */
	}
	if (!stopped || !kept)
		return;
	for (size_t s = 0; s < sizeof(sigs) / sizeof(sigs[0]); s++)
		for (size_t i = 0; i < n; i++) {
			const struct cr_task *k;
			siginfo_t si;

			/* The kernel's come from no process (SI_KERNEL, pid
			 * 0), which only it may give: queued with no sender,
			 * rather than as corral's kill (a probe). */
			memset(&si, 0, sizeof(si));
			si.si_signo = sigs[s];
			si.si_code = SI_QUEUE;
			if (m[i].pgrp == pgrp && !m[i].gone &&
			    (k = cr_tasks_find(ts, m[i].tid)) && k->leader &&
			    k->pidfd >= 0)
				syscall(__NR_pidfd_send_signal, k->pidfd,
					sigs[s], &si, 0);
		}
}

/* A link of pgrp found among its stopped members, read afresh (at most a
 * few): the usual case, a group whose members' parent stays outside it,
 * is answered in a few reads, not a read of every process (a group of
 * 1000 stopped members killed one by one cost 13 s of the loop; found by
 * a probing session). False: none found, the whole judgement decides. */
static bool linked_by_stopped(struct cr_tasks *ts, pid_t pgrp, pid_t gone)
{
	pid_t self = getpid();
	int tries = 0;

	for (size_t i = 0; i < ts->cap && tries < 4; i++) {
		struct cr_task *k = &ts->slots[i];
		pid_t tg = k->leader ? k->tid : k->tgid, kp, kg, ks, pp, pg, ps;

		if (!k->tid || k->state != CR_TS_STOPPED ||
		    k->stop_pgrp != pgrp || tg <= 0 || tg == gone)
			continue;
		tries++;
		if (cr_proc_ids(tg, &kp, &kg, &ks) < 0)
			continue;
		if (kg != pgrp) {
			k->stop_pgrp = kg;	/* moved by its parent */
			continue;
		}
		if (kp != self && kp != gone &&
		    cr_proc_ids(kp, &pp, &pg, &ps) == 0 &&
		    pg != pgrp && ps == ks)
			return true;
	}
	return false;
}

/* The serial of the run's process pid (0: corral or none). */
static uint64_t serial_of(struct cr_tasks *ts, pid_t pid)
{
	const struct cr_task *p = cr_tasks_find(ts, pid);

	return p && p->leader ? p->serial : 0;
}

/*
 * A process has ended: a zombie still, its children already handed on
 * (the kernel does so before it reports the exit). Who has each of them
 * now is noted (corral, or a subreaper of the run), so that the end of
 * their new parent is judged too. While a task of the run is stopped, the
 * groups the kernel would judge are: its children's in another group of
 * its session (the reparent case), and its own, if its parent linked it
 * (the exit case). A group is judged only when one of its members was
 * stopped; then the run's processes are read once for all of them.
 */
void cr_jobctl_on_end(struct cr_run *run, pid_t tid)
{
	struct cr_tasks *ts = &run->tasks;
	struct cr_task *t = cr_tasks_find(ts, tid);
	pid_t self = getpid(), tp = 0, tg = 0, tsid = 0;
	pid_t *stopped = NULL, *cand = NULL;
	struct member *mt = memo_find(ts, tid);
	size_t nstopped = 0, ncand = 0;
	bool ids = false;

	if (mt)
		mt->gone = true;
	if (!t || !t->leader || t->jc_judged)
		return;
	t->jc_judged = true;	/* a report looked at again: judged once */
	if (ts->stopped) {
		ids = cr_proc_ids(tid, &tp, &tg, &tsid) == 0;
		stopped = stopped_groups(ts, &nstopped);
		cand = malloc((ts->leaders + 1) * sizeof(*cand));
	}
	for (size_t i = 0; i < ts->cap; i++) {
		struct cr_task *k = &ts->slots[i];
		struct member *mk;
		pid_t kp, kg, ks;

		if (!k->tid || !k->leader || k == t ||
		    k->parent_serial != t->serial)
			continue;
		if (cr_proc_ids(k->tid, &kp, &kg, &ks) < 0) {
			k->parent_serial = 0;
			continue;
		}
		k->parent_serial = kp == self ? 0 : serial_of(ts, kp);
		if ((mk = memo_find(ts, k->tid))) {
			mk->ppid = kp;
			mk->pgrp = kg;
			mk->sid = ks;
		}
		/* Its own stop says its group as it is now: its parent
		 * may have moved it (setpgid) since it stopped. */
		if (k->state == CR_TS_STOPPED)
			k->stop_pgrp = kg;
		if (ids && cand && kg != tg && ks == tsid &&
		    (k->state == CR_TS_STOPPED || has(stopped, nstopped, kg)))
			cand[ncand++] = kg;
	}
	if (ids && cand && tp != self && has(stopped, nstopped, tg)) {
		pid_t qp, qg, qs;

		if (cr_proc_ids(tp, &qp, &qg, &qs) == 0 && qg != tg &&
		    qs == tsid)
			cand[ncand++] = tg;
	}
	if (ncand) {
		size_t u = 0;

		qsort(cand, ncand, sizeof(*cand), by_pid);
		for (size_t i = 0; i < ncand; i++) {
			pid_t g = cand[i];

			if ((!i || g != cand[i - 1]) &&
			    !linked_by_stopped(ts, g, tid))
				cand[u++] = g;
		}
		if (u && !ts->jc_memo)
			ts->jc_memo = snapshot(ts, tid, &ts->jc_nmemo);
		if (ts->jc_memo)
			mark_stopped(ts, ts->jc_memo, ts->jc_nmemo);
		for (size_t i = 0; ts->jc_memo && i < u; i++)
			judge(ts, ts->jc_memo, ts->jc_nmemo, cand[i]);
	}
	free(cand);
	free(stopped);
}
