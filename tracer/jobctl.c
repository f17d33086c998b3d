/* tracer/jobctl.c: the job control the kernel does not do for a run whose
 * processes corral adopts: orphaned process groups, corral outside them. */
#include <signal.h>
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

/* A thread of the run in group stop whose process is in pgrp. */
static bool group_has_stopped(const struct cr_tasks *ts, pid_t pgrp)
{
	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *k = &ts->slots[i];
		pid_t tg = k->leader ? k->tid : k->tgid, p, g, s;

		if (k->tid && k->state == CR_TS_STOPPED && tg > 0 &&
		    cr_proc_ids(tg, &p, &g, &s) == 0 && g == pgrp)
			return true;
	}
	return false;
}

/* SIGHUP then SIGCONT to every process of the run in pgrp, through their
 * pidfds: a group the kernel would signal whole may hold a process of the
 * caller's session (setpgid joins any group of it), which corral must
 * never reach. */
static void hangup(struct cr_run *run, pid_t pgrp)
{
	static const int sigs[] = { SIGHUP, SIGCONT };
	struct cr_tasks *ts = &run->tasks;

	for (size_t s = 0; s < sizeof(sigs) / sizeof(sigs[0]); s++) {
		for (size_t i = 0; i < ts->cap; i++) {
			const struct cr_task *k = &ts->slots[i];
			pid_t p, g, sid;

			if (k->tid && k->leader && k->pidfd >= 0 &&
			    cr_proc_ids(k->tid, &p, &g, &sid) == 0 && g == pgrp)
				syscall(__NR_pidfd_send_signal, k->pidfd,
					sigs[s], NULL, 0);
		}
	}
}

/* The kernel's kill_orphaned_pgrp, corral outside: a group this exit left
 * orphaned, with a stopped member, gets SIGHUP and SIGCONT. Once per group
 * per exit; unreadable: nothing sent. */
static void judge(struct cr_run *run, pid_t pgrp, pid_t sid, pid_t gone,
		  pid_t *done, size_t *ndone, size_t cap)
{
	for (size_t i = 0; i < *ndone; i++)
		if (done[i] == pgrp)
			return;
	if (*ndone < cap)
		done[(*ndone)++] = pgrp;
	if (group_has_stopped(&run->tasks, pgrp) &&
	    cr_jobctl_orphaned(run, pgrp, sid, gone) == 1)
		hangup(run, pgrp);
}

/* A process has ended: a zombie still, its children already corral's (the
 * kernel hands them over before it reports the exit). Its own group, if
 * its parent linked it (the kernel's exit case), and the groups of its
 * children in another group of its session (the reparent case). While
 * nothing of the run is stopped, nothing to do (one counter read). */
void cr_jobctl_on_end(struct cr_run *run, pid_t tid)
{
	struct cr_tasks *ts = &run->tasks;
	struct cr_task *t = cr_tasks_find(ts, tid);
	pid_t done[16], self = getpid(), pp, pg, ps, qp, qg, qs;
	size_t ndone = 0;

	if (!t || !t->leader || t->jc_judged || !ts->stopped ||
	    cr_proc_ids(tid, &pp, &pg, &ps) < 0)
		return;
	t->jc_judged = true;	/* a report looked at again: judged once */
	if (pp != self && cr_proc_ids(pp, &qp, &qg, &qs) == 0 &&
	    qg != pg && qs == ps)
		judge(run, pg, ps, tid, done, &ndone, 16);
	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *k = &ts->slots[i];
		pid_t kp, kg, ks;

		if (!k->tid || !k->leader || k == t ||
		    k->parent_serial != t->serial ||
		    cr_proc_ids(k->tid, &kp, &kg, &ks) < 0 || kp != self ||
		    kg == pg || ks != ps)
			continue;
		judge(run, kg, ks, tid, done, &ndone, 16);
	}
}
