/* tracer/net/ownsend.c: a checked unix sendmsg made again by the task itself
 * as a sendto, so that the receiver's SCM_CREDENTIALS name the sender. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <linux/audit.h>

#include "net.h"

/*
 * corral performs sendmsg for the program (its msghdr is memory a thread
 * can change after a check), so the kernel attached corral's pid and
 * credentials to every such message: a receiver with SO_PASSCRED read
 * corral's pid. Chromium's zygote takes each renderer's pid from its
 * CHILD_PING that way, and no renderer was ever adopted: headless
 * Chromium waited to the wall limit (found by a compatibility probe).
 *
 * Only in a run where a unix socket asked for its peers' credentials
 * (SO_PASSCRED, SO_PASSPIDFD: setsockopt is corral's, handlers/sockopt.c): nowhere else
 * would the form change what a receiver learns, and it costs three ptrace
 * stops a message (a thread whose signal handler sends, signalled in a
 * storm, hardly progressed at that price).
 *
 * A sendmsg with no address, no control data and one buffer is the
 * sendto(fd, buf, len, flags, NULL, 0) the filter lets every program make
 * in the kernel: every argument of that form is a register, so nothing a
 * thread changes in memory changes what the kernel is asked. The handler
 * (net.c) checks the message as for any send; then the task is
 * interrupted (PTRACE_INTERRUPT: its wait for the answer is killable only,
 * so the interrupt waits for the answer) and answered ERESTARTNOINTR. On
 * its way back it stops before its next instruction; there its registers
 * are set to that sendto, and the kernel's restart makes it: the task's
 * own send, its own credentials. Its syscall stops (PTRACE_SYSCALL) let
 * the registers the form changed be put back when the call returns, its
 * result kept; a call the restart turns back into (a signal's handler
 * interrupted it) is the program's sendmsg again, notified afresh. Three
 * ptrace stops a message: 20-31 us here, against 7-12 us when corral
 * sends it (docs/compatibility.md).
 */

#define CR_ERESTARTNOINTR 513

/*
 * What else can meet the form, each found by a probing session:
 * - A signal delivered between the trap and the sendto's entry: the
 *   kernel's signal frame would save the form and the handler's
 *   sigreturn bring it back; the sendto then ran unwatched, its registers
 *   never put back (glibc keeps the cancellation type in r8 across the
 *   call: async cancellation turned deferred), and a handler's own calls
 *   could be taken for the sendto (a handler's sendmsg left its task
 *   stopped for good). Every signal stops the task first
 *   (signal-delivery-stop): there the sendmsg's registers are put back,
 *   as if the trap had never come, and the record is spent: the kernel
 *   restarts the sendmsg after the handler, and that one corral sends,
 *   so that a program signalled every few microseconds still makes
 *   progress (trying the form again each time, none completed).
 * - An exec by another thread: the old leader's tid is the new image's,
 *   and its exit stop must not be taken for the sendto's (tasks.c drops
 *   the record; the exit is checked by number and address too).
 * - A seccomp filter of the program's own: it would judge a sendto the
 *   program never made. A task with more filters than corral's and
 *   those corral was started under (Seccomp_filters in the status: a
 *   container's or a wrapper's count too) is sent for as before, and the
 *   count is asked again at the sendto's entry when a filter was asked
 *   for meanwhile (another thread's, with TSYNC): then the sendmsg is
 *   put back and made instead, notified, and corral sends it. What is
 *   left: a filter installed in the moment between that look and the
 *   kernel's check.
 */

/* Forms of a thread put back at signals in a row before its sends are
 * corral's, and how many sends then; past them they are handed back
 * again. */
#define CR_OWNSEND_UNDOS 3
#define CR_OWNSEND_SPENT_OTHERS 16
/* Sends of other calls (a handler's) corral makes while a call put back
 * waits to be made again; past them the call is taken as abandoned (a
 * handler that left with siglongjmp). */
#define CR_OWNSEND_STRAYS 4096

enum phase {
	P_TRAP,		/* interrupted and answered: its stop is next */
	P_ENTRY,	/* registers set: the sendto's entry is next */
	P_EXIT,		/* in the sendto: its exit is next */
	P_SPENT,	/* put back at a signal: the restarted sendmsg is
			 * corral's to send */
};

struct cr_ownsend {
	struct cr_ownsend *next;
	pid_t tid;
	enum phase phase;
	bool filters_before;		/* a filter of the run's own had been
					 * asked for at the start */
	uint64_t fd, msg, flags;	/* the sendmsg, as notified */
	uint64_t buf, len;		/* its one buffer */
	struct user_regs_struct saved;	/* at the trap */
	/* kept when the record is tried again (from here on) */
	unsigned undos;			/* forms put back in a row */
	unsigned others;		/* P_SPENT: sends corral made since */
	unsigned strays;		/* ...of other calls */
};

static struct cr_ownsend **find(struct cr_netstate *ns, pid_t tid)
{
	for (struct cr_ownsend **pp = &ns->ownsend; *pp; pp = &(*pp)->next)
		if ((*pp)->tid == tid)
			return pp;
	return NULL;
}

static void drop(struct cr_netstate *ns, struct cr_ownsend **pp)
{
	struct cr_ownsend *o = *pp;

	*pp = o->next;
	free(o);
}

/* The seccomp filters a task's status counts (-1: none said: a kernel
 * before 5.9, or no such task). */
static long filters_of(const char *status_path)
{
	char buf[4096], *p;

	if (cr_read_small(AT_FDCWD, status_path, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "\nSeccomp_filters:");
	return p ? strtol(p + 17, NULL, 10) : -1;
}

/* Whether tid runs under corral's filter and the ones corral itself was
 * started under (a container's, a wrapper's: they judge sendto as they
 * judge send) alone: no filter of the program's own. */
static bool filters_ours_only(struct cr_netstate *ns, pid_t tid)
{
	char path[64];
	long n;

	/* Every filter a task of the run adds is notified (handlers/kmem.c):
	 * until one is asked for, each task has corral's and the caller's
	 * alone, and the status need not be read. */
	if (!ns->own_filters)
		return true;
	if (!ns->ownsend_base) {
		n = filters_of("/proc/self/status");
		ns->ownsend_base = n < 0 ? -1 : n + 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tid, tid);
	n = filters_of(path);
	return ns->ownsend_base > 0 && n == ns->ownsend_base;
}

bool cr_ownsend_begin(struct cr_run *run, const struct seccomp_notif *n,
		      uint64_t buf, uint64_t len)
{
	struct cr_netstate *ns = run->net;
	struct cr_ownsend *o, **old;

#if !defined(__x86_64__)
	(void)n;
	(void)buf;
	(void)len;
	return false;
#else
	if (!ns || !ns->passcred || ns->ownsend_off ||
	    n->data.arch != AUDIT_ARCH_X86_64 ||
	    n->data.nr != SYS_sendmsg || !filters_ours_only(ns, (pid_t)n->pid))
		return false;
	old = find(ns, (pid_t)n->pid);
	if (old && (*old)->phase == P_SPENT) {
		o = *old;
		if (o->fd != n->data.args[0] || o->msg != n->data.args[1] ||
		    o->flags != n->data.args[2]) {
			/* Another send while the one put back waits to be
			 * made again (a handler's): corral's. Had it taken
			 * the record, the count of forms put back in a row
			 * went with it, and a thread whose handler sends,
			 * signalled every 250 us, made 12 sends a second
			 * (found by a probing session). */
			if (++o->strays > CR_OWNSEND_STRAYS)
				drop(ns, old);	/* never made again */
			return false;
		}
		if (o->undos >= CR_OWNSEND_UNDOS) {
			/* Put back again and again: the call is corral's
			 * to send, and so are the thread's next ones, so
			 * that a thread signalled faster than a form
			 * completes still sends. */
			if (++o->others > CR_OWNSEND_SPENT_OTHERS)
				drop(ns, old);
			return false;
		}
		/* The same call made again: the form tried again (a
		 * stray signal; the sender's credentials all the same). */
		*old = o->next;
		memset(o, 0, offsetof(struct cr_ownsend, undos));
		o->others = 0;
		o->strays = 0;
	} else {
		if (old)
			drop(ns, old);	/* one its stops never ended */
		o = calloc(1, sizeof(*o));
		if (!o)
			return false;
	}
	if (ptrace(PTRACE_INTERRUPT, (pid_t)n->pid, 0, 0) < 0) {
		free(o);
		return false;
	}
	o->tid = (pid_t)n->pid;
	o->phase = P_TRAP;
	o->filters_before = ns->own_filters;
	o->fd = n->data.args[0];
	o->msg = n->data.args[1];
	o->flags = n->data.args[2];
	o->buf = buf;
	o->len = len;
	o->next = ns->ownsend;
	ns->ownsend = o;
	return true;
#endif
}

struct cr_verdict cr_ownsend_answer(void)
{
	return (struct cr_verdict){ .kind = CR_V_ERRNO,
				    .error = CR_ERESTARTNOINTR };
}

#if defined(__x86_64__)
static bool at_trap(struct cr_netstate *ns, struct cr_ownsend **pp, int status)
{
	struct cr_ownsend *o = *pp;
	struct user_regs_struct r;

	if ((unsigned)status >> 16 != PTRACE_EVENT_STOP ||
	    WSTOPSIG(status) != SIGTRAP)
		return false;	/* a group stop first: the machine's */
	if (ptrace(PTRACE_GETREGS, o->tid, 0, &r) < 0) {
		drop(ns, pp);
		return false;
	}
	if (r.orig_rax != SYS_sendmsg || r.rdi != o->fd || r.rsi != o->msg ||
	    r.rdx != o->flags ||
	    r.rax != (unsigned long long)-CR_ERESTARTNOINTR) {
		/* The wait was not killable (a kernel before 5.19: the
		 * interrupt ended it, and the call is made again): corral
		 * sends for the run from now on, as before. */
		if (r.orig_rax == SYS_sendmsg && r.rdi == o->fd &&
		    r.rsi == o->msg)
			ns->ownsend_off = true;
		drop(ns, pp);
		return false;
	}
	o->saved = r;
	r.orig_rax = SYS_sendto;
	r.rsi = o->buf;
	r.rdx = o->len;
	r.r10 = o->flags;
	r.r8 = 0;
	r.r9 = 0;
	if (ptrace(PTRACE_SETREGS, o->tid, 0, &r) < 0) {
		drop(ns, pp);
		return false;	/* unchanged: the sendmsg is made again */
	}
	o->phase = P_ENTRY;
	ptrace(PTRACE_SYSCALL, o->tid, 0, 0);
	return true;
}

/* The registers the form changed, as the program had them. */
static void put_back(const struct cr_ownsend *o, struct user_regs_struct *r)
{
	r->orig_rax = o->saved.orig_rax;
	r->rsi = o->saved.rsi;
	r->rdx = o->saved.rdx;
	r->r10 = o->saved.r10;
	r->r8 = o->saved.r8;
	r->r9 = o->saved.r9;
}

static bool at_syscall(struct cr_run *run, struct cr_netstate *ns,
		       struct cr_ownsend **pp)
{
	struct cr_ownsend *o = *pp;
	struct user_regs_struct r;
	pid_t tid = o->tid;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0 ||
	    r.orig_rax != SYS_sendto || r.rip != o->saved.rip ||
	    r.rdi != o->fd || r.rsi != o->buf || r.rdx != o->len || r.r8) {
		/* Not the form (nothing else runs between the trap and it
		 * but a signal, which stops the task first): left as is. */
		drop(ns, pp);
		ptrace(PTRACE_CONT, tid, 0, 0);
		return true;
	}
	if (o->phase == P_ENTRY) {
		/* A filter asked for since (another thread's, with TSYNC)
		 * would judge the form: the sendmsg itself is made instead,
		 * notified, and sent by corral. */
		if (!filters_ours_only(ns, tid)) {
			put_back(o, &r);
			ptrace(PTRACE_SETREGS, tid, 0, &r);
			drop(ns, pp);
			ptrace(PTRACE_CONT, tid, 0, 0);
			return true;
		}
		o->phase = P_EXIT;
		ptrace(PTRACE_SYSCALL, tid, 0, 0);
		return true;
	}
	/* The sendto returned: its result stays, the registers its form
	 * took are the program's again. A call to be restarted restarts as
	 * the sendmsg it was. One that failed after a filter was asked for
	 * meanwhile may have failed by that filter: the sendmsg is made
	 * again, notified, and corral sends it. */
	put_back(o, &r);
	if (ns->own_filters && !o->filters_before &&
	    (long long)r.rax < 0 && (long long)r.rax >= -4095 &&
	    !filters_ours_only(ns, tid)) {
		/* this task's filters grew meanwhile */
		r.rax = o->saved.orig_rax;
		r.rip -= 2;
	} else if (r.rax >= (unsigned long long)-516 &&
		   r.rax <= (unsigned long long)-512) {
		/* A signal cut the wait: the kernel's ERESTART* is the
		 * program's call's own (EINTR without SA_RESTART), not a
		 * notification withdrawn before corral received it, which
		 * the signal stop would otherwise take it for (notify.c):
		 * an alarm around a blocking send waited forever. */
		cr_notif_restart_native(run, tid);
	}
	ptrace(PTRACE_SETREGS, tid, 0, &r);
	drop(ns, pp);
	ptrace(PTRACE_CONT, tid, 0, 0);
	return true;
}

/* A stop before the sendto is entered (a signal to deliver, a group
 * stop): the sendmsg's registers go back, so that what the kernel saves
 * for a handler, or restarts, is the program's call; the record is spent. */
static void undo(struct cr_ownsend *o)
{
	struct user_regs_struct r;

	o->phase = P_SPENT;
	o->undos++;
	if (ptrace(PTRACE_GETREGS, o->tid, 0, &r) < 0 ||
	    r.orig_rax != SYS_sendto)
		return;
	if (r.rip == o->saved.rip) {
		/* not restarted yet: what orig_rax says is restarted */
		put_back(o, &r);
		ptrace(PTRACE_SETREGS, o->tid, 0, &r);
	} else if (r.rip == o->saved.rip - 2 && r.rax == SYS_sendto) {
		/* restarted already: back on the syscall instruction, the
		 * number in rax */
		put_back(o, &r);
		r.rax = o->saved.orig_rax;
		ptrace(PTRACE_SETREGS, o->tid, 0, &r);
	}
}
#endif

bool cr_ownsend_on_stop(struct cr_run *run, pid_t tid, int status)
{
	struct cr_netstate *ns = run->net;
	struct cr_ownsend **pp = ns && ns->ownsend ? find(ns, tid) : NULL;
	bool sysstop = WSTOPSIG(status) == (SIGTRAP | 0x80) &&
		       !((unsigned)status >> 16);

#if !defined(__x86_64__)
	(void)pp;
#else
	if (pp && (*pp)->phase == P_TRAP && !sysstop)
		return at_trap(ns, pp, status);
	if (pp && sysstop &&
	    ((*pp)->phase == P_ENTRY || (*pp)->phase == P_EXIT))
		return at_syscall(run, ns, pp);
	if (pp && (*pp)->phase == P_ENTRY)
		undo(*pp);	/* then the machine's: a signal, a stop */
#endif
	/* Only ownsend asks for syscall stops: one left over (a form put
	 * back, a record dropped) is continued, never taken for a
	 * signal. */
	if (sysstop)
		ptrace(PTRACE_CONT, tid, 0, 0);
	return sysstop;
}

int cr_ownsend_resume(const struct cr_run *run, pid_t tid)
{
	const struct cr_netstate *ns = run->net;

	for (const struct cr_ownsend *o = ns ? ns->ownsend : NULL; o;
	     o = o->next)
		if (o->tid == tid)
			return o->phase == P_ENTRY || o->phase == P_EXIT ?
			       PTRACE_SYSCALL : PTRACE_CONT;
	return PTRACE_CONT;
}

void cr_ownsend_on_gone(struct cr_run *run, pid_t tid)
{
	struct cr_netstate *ns = run->net;
	struct cr_ownsend **pp = ns && ns->ownsend ? find(ns, tid) : NULL;

	if (pp)
		drop(ns, pp);
}

void cr_ownsend_finish(struct cr_netstate *ns)
{
	while (ns->ownsend)
		drop(ns, &ns->ownsend);
}
