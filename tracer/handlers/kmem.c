/* tracer/handlers/kmem.c: calls that make kernel objects no RSS shows and
 * no limit bounds (record locks, seccomp filters, Landlock rules), counted
 * for the memory budget on their registers before the kernel makes them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../budget/budget.h"
#include "../fs/fs.h"
#include "handlers.h"
#include "../net/net.h"

/*
 * F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW. Each record the kernel
 * keeps is slab no RSS shows and no limit bounds; a call adds at most
 * two (tracer/budget/memory.c, locks). The verdict rests on the command register
 * alone (the struct flock is never read), so the call is continued and
 * the kernel answers it, errno for errno; only when its records could
 * pass the memory budget does it fail, with the kernel's own answer for
 * a lock it cannot record (ENOLCK), and the run ends naming memory.
 */
CR_HANDLER(cr_h_fcntl_lock)
{
	int cmd = (int)n->data.args[1];
	int rc;

	(void)e;
	rc = cr_budget_on_lock(run, cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW);
	if (rc)
		return CR_V_ERR(-rc);
	if (cmd == F_SETLKW || cmd == F_OFD_SETLKW)
		cr_notif_kernel_wait(run, (pid_t)n->pid);
	return CR_V_CONT;
}

/*
 * The program's own seccomp filters (seccomp(SECCOMP_SET_MODE_FILTER),
 * prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)) and Landlock rules
 * (landlock_add_rule; landlock_restrict_self, which copies a ruleset's
 * rules into the new domain). A filter of 4 096 instructions holds ~88 KiB
 * of slab and vmalloc, and a thread may stack seven: 900 threads held
 * ~460 MiB under memory=32MiB; a rule ~110 B, bounded by nothing but time
 * (4 million held 435 MiB). Found by a probing session. The kernel frees
 * them with the last task that uses them, which corral cannot see, so
 * each call is charged for the run's life, at the most it can make
 * (registers only: the program's struct is never read): a filter at
 * CR_BUDGET_SECCOMP_FILTER, a rule at CR_BUDGET_LANDLOCK_RULE, a domain
 * at every rule the run has added so far. Continued; the kernel's answer
 * for a filter or rule it cannot allocate (ENOMEM) when the budget is
 * spent, the run ending on memory.
 */
CR_HANDLER(cr_h_kernel_object)
{
	enum cr_kobj kind;
	int rc;

	if (e->nr == SYS_prctl) {
		if (n->data.args[1] != SECCOMP_MODE_FILTER)
			return CR_V_CONT;	/* strict mode makes nothing */
		kind = CR_KOBJ_SECCOMP;
	} else if (e->nr == SYS_seccomp) {
		kind = CR_KOBJ_SECCOMP;
	} else if (e->nr == SYS_landlock_add_rule) {
		kind = CR_KOBJ_LANDLOCK_RULE;
	} else {
		kind = CR_KOBJ_LANDLOCK_DOMAIN;
	}
	/* From here a task of the run may judge a sendto it never made
	 * (net/ownsend.c asks each task's status before handing one back). */
	if (kind == CR_KOBJ_SECCOMP && run->net)
		run->net->own_filters = true;
	rc = cr_budget_on_kernel_object(run, kind);
	return rc ? CR_V_ERR(-rc) : CR_V_CONT;
}

/*
 * mmap(MAP_SHARED) of anonymous memory or of /dev/zero makes an object of
 * the kernel's own whose pages outlive every process's page tables
 * (tracer/budget/shanon.c): charged its size, on the registers, before the kernel
 * makes it; continued. A shared mapping of any other file makes nothing
 * new. Which file the fd is, corral learns from its own copy; a thread
 * may swap the number for a writable /dev/zero before the kernel maps it
 * (one can come in by SCM_RIGHTS, unseen), so such a call is recorded
 * with its length, uncharged, unless nobody but the caller can change its
 * table (cr_tasks_table_alone) or the run has no /dev/zero to swap in (see
 * cr_kmem_zero_seen), and the scans charge it if an object it
 * may have made appears (tracer/budget/shanon.c; 3 GiB held ok under
 * memory=64MiB when only a count of objects stood behind the check, and
 * 2 GiB when every shared mapping was charged once a writable /dev/zero
 * was seen opened; found by probing sessions). A length the kernel
 * refuses (0, or past the address space) makes nothing and is left to
 * it. Past the budget the kernel's answer for memory it cannot commit
 * (ENOMEM), and the run ends naming memory.
 */
#define CR_MMAP_MAX_LEN (1ull << 47)

/* Both look without asking for the times (fs/quietstat.c): a look at
 * every file opened made each next change of it fine-grained. */
bool cr_is_dev_zero(int fd)
{
	struct stat st;

	return cr_quiet_fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
	       st.st_rdev == makedev(1, 5);
}

bool cr_is_socket(int fd)
{
	struct stat st;

	return cr_quiet_fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

/*
 * A shared mapping of a file in a process of several threads was a
 * candidate (a "maybe", tracer/budget/shanon.c) in case another thread swapped
 * the number for /dev/zero before the kernel mapped it; the largest
 * candidate is taken for each new object, so a multi-threaded program
 * mapping a large file beside small shared objects was charged the file
 * (CPython's test_mmap under regrtest's watchdog thread: memory, 3 runs
 * in 5). The swap needs a /dev/zero in the run. Each way one comes in
 * sets run->zero_reachable for good, and until then a shared mapping of
 * a file is no candidate:
 * - an open of a path: corral performs it and looks at what it opened
 *   (below, from handlers/open.c; a reopen through /proc/PID/fd too);
 * - the caller's stdin, a /dev/zero or a socket (spawn.c);
 * - a read-only open the kernel decides (--fast-open with Landlock), from
 *   the start (spawn.c);
 * - a unix socket, through which a process outside the run can hand a
 *   descriptor in (SCM_RIGHTS; recvmsg is not notified: a probing
 *   session had a writable /dev/zero so handed in when only opens were
 *   watched): at its socket() or socketpair() call (handlers/socket.c).
 *   A pair is no exception, nor a socket never named: a process of the
 *   user's outside the run can take any of them out with pidfd_getfd,
 *   then bind, connect or send through it itself; and a SOCK_RAW pair
 *   is a datagram pair that can be named and connected
 *   (found by a probing session: 2.8 GiB held under memory=64MiB when
 *   only sockets that could be named counted).
 * A descriptor passed between processes of the run was in the run
 * already; pidfd_getfd reaches only the run's processes. A call made
 * before is recorded gated, and one still in flight when a /dev/zero
 * comes in becomes a candidate (cr_kmem_zero_reachable): the /dev/zero
 * may land on its number before the kernel takes it.
 */
void cr_kmem_zero_reachable(struct cr_run *run)
{
	if (run->zero_reachable)
		return;
	run->zero_reachable = true;
	cr_budget_zero_reachable(run);
}

void cr_kmem_zero_seen(struct cr_run *run, int fd)
{
	if (!run->zero_reachable && cr_is_dev_zero(fd))
		cr_kmem_zero_reachable(run);
}

CR_HANDLER(cr_h_mmap_shared)
{
	uint64_t len = n->data.args[1], flags = n->data.args[3];
	pid_t tid = (pid_t)n->pid;
	bool zero = true;
	int rc;

	(void)e;
	if (!len || len > CR_MMAP_MAX_LEN)
		return CR_V_CONT;
	/* The kernel's EINVALs that come before anything is mapped, read
	 * from the registers: nothing is charged for them (a refused 256 MiB
	 * mapping was, and ended a run under memory=64MiB; found by a
	 * differential probe). An offset off a page (the call's first
	 * check); for an anonymous mapping, a MAP_FIXED address off a page,
	 * a type other than MAP_SHARED (MAP_SHARED_VALIDATE) or
	 * MAP_GROWSDOWN (a file's descriptor is looked at before those; a
	 * MAP_HUGETLB one is a hugetlbfs file's, where MAP_SHARED_VALIDATE
	 * is valid). Answered here rather than continued: were the kernel
	 * to map after all, nothing would be charged. The kernel's EEXIST
	 * (MAP_FIXED_NOREPLACE), EAGAIN (MAP_LOCKED) and ENOMEM, which come
	 * before these, are not looked for (docs/compatibility.md). */
	if ((n->data.args[5] & 4095) ||
	    ((flags & MAP_ANONYMOUS) && !(flags & MAP_HUGETLB) &&
	     (((flags & MAP_FIXED) && (n->data.args[0] & 4095)) ||
	      (flags & MAP_TYPE) != MAP_SHARED || (flags & MAP_GROWSDOWN))))
		return CR_V_ERR(EINVAL);
	len = (len + 4095) & ~4095ull;
	if (!(flags & MAP_ANONYMOUS)) {
		int f = cr_tasks_getfd(run, tid, (int)n->data.args[4]);

		/* Not to be had (EBADF, or corral short of descriptors): a
		 * candidate all the same, so an object a racing thread makes
		 * there is charged, not taken for one no call made. */
		zero = f >= 0 && cr_is_dev_zero(f);
		if (f >= 0)
			close(f);
		if (zero)
			cr_kmem_zero_reachable(run);
		/* Another file, and nobody can swap the number before the
		 * kernel maps it: certainly no object (test_mmap maps a 4 GiB
		 * sparse file beside small shared objects; taken as a
		 * candidate, the largest, it was charged for one of them and
		 * ended 4 runs in 10 on memory). */
		if (!zero && f >= 0 && run->zero_reachable &&
		    cr_tasks_table_alone(run, tid))
			return CR_V_CONT;
	}
	/* Where no /dev/zero can be had to swap in yet, gated: no candidate
	 * unless one comes in while this call is in flight (cr_kmem_zero_seen:
	 * a thread opening /dev/zero onto the number, closed or a file, in
	 * the moment between corral's look and the kernel's held 1 GiB under
	 * memory=64MiB, found by a probing session). */
	rc = zero ? cr_budget_on_shared_anon(run, tid, len) :
		    cr_budget_on_shared_file(run, tid, len,
					     !run->zero_reachable);
	return rc ? CR_V_ERR(-rc) : CR_V_CONT;
}

/*
 * poll, ppoll, select and pselect6 over CR_BUDGET_POLL_FREE + 1 or more
 * descriptors. While it waits, the call holds a wait-queue entry per
 * descriptor and a reference on each file, which its table may close at
 * once: 64 threads each waiting on 19 000 eventfds closed behind them
 * held 1.2 million files (half the host's file-max, 368 MB of slab) and
 * 1 500 threads listing one eventfd 19 999 times each 2 GiB, `ok` under
 * memory=64MiB (found by a probing session). Charged on the registers,
 * CR_BUDGET_POLL_ENTRY a descriptor, and continued:
 * - poll and ppoll: the count, unless past the hard RLIMIT_NOFILE (then
 *   EINVAL, whatever the soft limit: the soft one another thread can raise
 *   between this look and the kernel's, the hard one it cannot);
 * - select and pselect6: nothing without a set; else the count, at most
 *   the largest fd table the hard limit allows (the kernel looks at no
 *   more than the table; a cap at the soft limit, lowered to 8 just
 *   before, charged 8 of 19 000 files, and one at the table's size then,
 *   grown by a recvmsg of 19 700 descriptors while the caller waited for
 *   a CPU, 64 of them: found by probing sessions). A select on one high
 *   descriptor is charged its number (towards stopping).
 */

CR_HANDLER(cr_h_poll_charge)
{
	bool is_poll = e->nr == SYS_poll || e->nr == SYS_ppoll;
	uint64_t entries;
	pid_t tid = (pid_t)n->pid;
	struct rlimit rl;
	int rc;

	if (prlimit(tid, RLIMIT_NOFILE, NULL, &rl) < 0)
		rl.rlim_max = RLIM_INFINITY;
	if (is_poll) {
		entries = (uint32_t)n->data.args[1];
		if (entries > rl.rlim_max)
			entries = 0;
	} else if ((int)n->data.args[0] < 0 ||
		   (!n->data.args[1] && !n->data.args[2] && !n->data.args[3])) {
		entries = 0;
	} else {
		uint64_t max = 64;

		/* expand_files: a power of two, below the limit */
		while (max < rl.rlim_max && max < (1ull << 31))
			max <<= 1;
		entries = (uint64_t)(int)n->data.args[0];
		if (entries > max)
			entries = max;
	}
	rc = cr_budget_on_poll(run, tid, entries);
	return rc ? CR_V_ERR(-rc) : CR_V_CONT;
}
