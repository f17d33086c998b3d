/* tracer/handlers/sysinfo.c: sysinfo, answered with the run's memory budget
 * as the machine's memory and the run's tasks as its processes. */
#include <errno.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "handlers.h"
#include "../budget/budget.h"

/*
 * Runtimes size themselves from the machine's memory (glibc's
 * sysconf(_SC_PHYS_PAGES) is sysinfo's totalram): a JVM with no heap flag
 * took a quarter of the host's 24 GiB as its largest heap and committed
 * 3 GiB to hold 200 MiB, past the RLIMIT_DATA backstop of a 512 MiB budget,
 * and crashed where natively it ran (found by a compatibility probe). A
 * run's memory is its budget: so the machine it is told of has that much,
 * as a container's cgroup limit tells a JVM, GCC's collector or sort's
 * buffer. Free memory is what the budget has left at the last tick, and
 * the process count the run's tasks (the host's is not the run's to
 * know). Uptime, loads and swap are the kernel's, as /proc shows them,
 * and so are the shared and buffer figures, capped to the budget.
 */
static unsigned long units(uint64_t bytes, unsigned unit)
{
	uint64_t v = bytes / (unit ? unit : 1);

	return v > (uint64_t)~0ul ? ~0ul : (unsigned long)v;
}

CR_HANDLER(cr_h_sysinfo)
{
	struct sysinfo si;
	uint64_t limit, used;
	unsigned long cap, left;

	(void)e;
	if (sysinfo(&si) < 0)
		return CR_V_ERR(errno);
	cr_budget_memory_view(run, &limit, &used);
	cap = units(limit, si.mem_unit);
	left = units(limit > used ? limit - used : 0, si.mem_unit);
	if (si.totalram > cap)
		si.totalram = cap;
	if (si.freeram > left)
		si.freeram = left;
	if (si.sharedram > si.totalram)
		si.sharedram = si.totalram;
	if (si.bufferram > si.totalram - si.freeram)
		si.bufferram = si.totalram - si.freeram;
	si.totalhigh = si.freehigh = 0;
	si.procs = run->tasks.count > 0xffff ? 0xffff :
		   (unsigned short)run->tasks.count;
	if (cr_mem_write((pid_t)n->pid, n->data.args[0], &si, sizeof(si)))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL(0);
}
