/* tracer/budget/rlimits.c: the backstops set in the child before exec: the
 * kernel's own limits past each budget, in case a measure comes late. */
#include <sys/resource.h>
#include <sys/types.h>

#include "internal.h"

/* ---- the backstops, set in the child before exec ----
 *
 * Each is per process, so none is the mechanism; each bounds how far one
 * process can run past the budget before the next tick sees it:
 * - RLIMIT_DATA (brk and private writable mappings) at twice the memory
 *   budget (at least 64 MiB past it): one allocation burst of one process
 *   cannot take more, yet a process filling memory is still seen going
 *   over and stopped as a breach. Twice, not a little past: it limits what
 *   is committed, not what is touched, and runtimes commit more than they
 *   use (the JVM commits 1/64 of the host's RAM as its initial heap and
 *   fails to start under 1.25 x 256 MiB on a 24 GiB host). Not RLIMIT_AS:
 *   runtimes also reserve large PROT_NONE ranges, which RLIMIT_AS counts
 *   and RLIMIT_DATA does not. Plus 2 GiB: RLIMIT_DATA counts every thread's
 *   stack (8 MiB reserved each by glibc), so a process of 150 threads
 *   could not start its 151st under 2 x 512 MiB (CPython's test_queue).
 *   The tick, not this, is the measure; the bound only stops one
 *   allocation far past it. Lifted on the operator's word
 *   (--no-data-backstop, a class's "data-backstop": false): a sanitizer
 *   build maps its shadow (15 TiB, MAP_NORESERVE), which RLIMIT_DATA
 *   counts, and cannot start under any finite value; the tick alone then
 *   bounds an allocation burst (docs/limits.md).
 * - RLIMIT_FSIZE 16 GiB past the disk budget: it bounds a file's size,
 *   while the budget counts blocks, and sparse files are ordinary (CPython's
 *   test_io and test_mmap make 2-4 GiB ones with a few pages written;
 *   `truncate -s 1G` was killed by SIGXFSZ). It only stops a file far past
 *   anything the walk lets through.
 * - RLIMIT_CPU two seconds past the cpu budget: a process the supervisor
 *   somehow failed to stop is killed by the kernel.
 * - RLIMIT_SIGPENDING at a quarter of the caller's: the count it limits is
 *   the user's, shared by every process of the uid (each POSIX timer and
 *   each queued real-time signal takes one), and the kernel compares it
 *   with the limit of the process asking. A run that made timers until
 *   EAGAIN (96 368 here) left every other run without the timer of its
 *   socket-call deadline and unable to wake its FIFO workers, whose
 *   programs could then stall their supervisors, and the host's programs
 *   without timers (found by a probing session). Now the programs of all
 *   runs together stop at a quarter, and corral and the host keep the
 *   rest. */
/* A quarter of a typical user's default (~96 000 on a 24 GiB host). */
#define CR_BUDGET_SIGPENDING_MAX 24576

/* v + add, or none past 2^63 - 1: the kernel compares a file's size
 * with RLIMIT_FSIZE as a signed offset, so any value from 2^63 on (short
 * of RLIM_INFINITY itself) refused every write with SIGXFSZ (a disk
 * budget of 8 EiB; found by a probing session). */
static rlim_t past(uint64_t v, uint64_t add)
{
	return v + add < v || v + add > (uint64_t)INT64_MAX ?
	       RLIM_INFINITY : (rlim_t)(v + add);
}

size_t cr_budget_child_rlimits(const struct cr_limits *l, bool data_backstop,
			       struct cr_child_rlimit out[CR_BUDGET_RLIMITS])
{
	uint64_t mem = l->v[CR_LIM_MEMORY];
	uint64_t slack = mem > CR_BUDGET_DATA_SLACK_MIN ?
			 mem : CR_BUDGET_DATA_SLACK_MIN;
	rlim_t data = past(past(mem, slack), CR_BUDGET_DATA_STACKS);
	rlim_t fsize = past(l->v[CR_LIM_DISK], CR_BUDGET_FSIZE_SLACK);
	rlim_t cpu = past(l->v[CR_LIM_CPU] / 1000, 2);

	out[0] = (struct cr_child_rlimit){ RLIMIT_DATA, { data, data } };
	/* Lifted: the caller's own limit, as the program would have it. */
	if (!data_backstop && getrlimit(RLIMIT_DATA, &out[0].lim) < 0)
		out[0].lim.rlim_cur = out[0].lim.rlim_max = RLIM_INFINITY;
	out[1] = (struct cr_child_rlimit){ RLIMIT_FSIZE, { fsize, fsize } };
	out[2] = (struct cr_child_rlimit){ RLIMIT_CPU, { cpu, cpu } };
	/* A caller without a limit (or whose limit cannot be read) gives
	 * the program CR_BUDGET_SIGPENDING_MAX, not none: each timer and
	 * queued signal is kernel memory no budget reads. */
	out[3] = (struct cr_child_rlimit){ RLIMIT_SIGPENDING,
					   { CR_BUDGET_SIGPENDING_MAX,
					     CR_BUDGET_SIGPENDING_MAX } };
	{
		struct rlimit sp;

		if (getrlimit(RLIMIT_SIGPENDING, &sp) == 0 &&
		    sp.rlim_cur != RLIM_INFINITY)
			out[3].lim.rlim_cur = out[3].lim.rlim_max =
				sp.rlim_cur / 4 ? sp.rlim_cur / 4 : 1;
	}
	/* Never above the hard limit the caller gave corral: an
	 * unprivileged process cannot raise it, and asking failed every run
	 * (a 10 GiB `ulimit -f` made each one a platform_failure). The
	 * caller's lower limit then holds, which is tighter still. */
	for (size_t i = 0; i < CR_BUDGET_RLIMITS; i++) {
		struct rlimit cur;

		if (getrlimit((int)out[i].resource, &cur) == 0 &&
		    cur.rlim_max != RLIM_INFINITY &&
		    out[i].lim.rlim_max > cur.rlim_max)
			out[i].lim.rlim_cur = out[i].lim.rlim_max = cur.rlim_max;
	}
	return CR_BUDGET_RLIMITS;
}
