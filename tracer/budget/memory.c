/* tracer/budget/memory.c: cpu and memory of the live tasks, read each tick,
 * and memory no RSS shows (locks, kernel and shared objects). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "internal.h"
#include "shanon.h"
#include "../fs/fs.h"
#include "../net/net.h"
#include "../ipc/sysv.h"

static uint64_t lock_bound(const struct cr_budgets *b);
static bool locks_fit(struct cr_run *run);
static void locks_tighten(struct cr_run *run);

/* A thread's own CPU time (user + system), in ns. schedstat's first field
 * is the scheduler's exact runtime; /proc/.../stat's utime + stime (clock
 * ticks) is the fallback on kernels built without it. */
int bg_read_thread_cpu(struct cr_budgets *b, struct cr_task *t,
		       uint64_t *ns)
{
	char path[64], buf[1024];
	unsigned long long ut;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", t->tid, t->tid,
		 b->schedstat ? "schedstat" : "stat");
	rc = bg_read_task_file(b, &t->b.fd_cpu, path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	if (b->schedstat)
		return sscanf(buf, "%llu", &ut) == 1 ? (*ns = ut, 0) : -EIO;
	return bg_stat_cpu_ns(buf, ns);
}

/* Bytes of page tables of the process t belongs to (VmPTE): kernel memory
 * no RSS shows. A program can make as many as its address space with
 * almost no resident page: single pages mapped one per 2 MiB each need a
 * table page of their own (measured: 256 MiB of tables per process for a
 * 3 MiB peak RSS), and a huge PROT_READ mapping read every 2 MiB and
 * dropped makes 4 MiB per 2 GiB. /proc/.../status costs four times
 * statm: poll_tasks reads it only when the tables could matter. */
static int read_pte(struct cr_budgets *b, struct cr_task *t, uint64_t *bytes)
{
	char path[64], buf[4096], *p;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", t->tid, t->tid);
	rc = bg_read_task_file(b, &t->b.fd_status, path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	p = strstr(buf, "\nVmPTE:");
	/* No VmPTE line: a zombie, or a kernel thread; nothing mapped. */
	*bytes = p ? strtoull(p + 7, NULL, 10) * 1024 : 0;
	return 0;
}

/* The most the queues of one socket can hold: SO_SNDBUF and SO_RCVBUF
 * give up to twice net.core.wmem_max and rmem_max, TCP's own tuning up to
 * the last figure of tcp_wmem and tcp_rmem; the larger of each. */
uint64_t bg_sock_queue_most(void)
{
	static const char *const files[2][2] = {
		{ "/proc/sys/net/core/wmem_max", "/proc/sys/net/ipv4/tcp_wmem" },
		{ "/proc/sys/net/core/rmem_max", "/proc/sys/net/ipv4/tcp_rmem" },
	};
	uint64_t sum = 0;

	for (int i = 0; i < 2; i++) {
		char buf[128], *p;
		uint64_t core = 0, tcp = 0;

		if (bg_read_small(files[i][0], buf, sizeof(buf)) > 0)
			core = 2 * strtoull(buf, NULL, 10);
		if (bg_read_small(files[i][1], buf, sizeof(buf)) > 0 &&
		    (p = strrchr(buf, '\t')))
			tcp = strtoull(p + 1, NULL, 10);
		if (!core && !tcp)
			core = 64ull << 20;	/* unreadable: large */
		sum += core > tcp ? core : tcp;
	}
	return sum;
}

/* One line of a maps file, its first bytes (the kernel's fields come
 * first, and a path's newlines are escaped): is it a mapping of a socket,
 * and which? A file is named by its absolute path; only sockfs names an
 * object "socket:[N]". */
static bool socket_mapping(const char *line, uint64_t *ino)
{
	unsigned long long i;
	int off = -1;

	if (sscanf(line, "%*x-%*x %*s %*x %*x:%*x %llu %n", &i, &off) < 1 ||
	    off < 0 || strncmp(line + off, "socket:[", 8))
		return false;
	*ino = i;
	return true;
}

/* How many mappings the process t belongs to has: one line each in its
 * maps file; and how many distinct sockets it maps. A TCP socket can be
 * mapped (zero-copy receive) and its descriptor closed: the mapping keeps
 * it, its queues and its option memory, where no fd table shows it (a
 * probing session held ~280 MiB of queues and ~400 MiB of TCP-MD5 keys
 * so under memory=64MiB); each is charged the most a socket can hold
 * (count_mappings). Of each line only the kernel's fields are parsed. */
static int read_vmas(struct cr_task *t, uint64_t *count, uint64_t *socks,
		     uint64_t **inos)
{
	char path[64], buf[16384], head[160];
	uint64_t n = 0, *ino = NULL, ns = 0, cap = 0;
	size_t hl = 0;
	ssize_t got;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/maps", t->tid, t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Each read takes the process's memory-map lock, which the program
	 * can hold: marked (stall.c). */
	while ((got = bg_read_held(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf, *end = buf + got; p < end;) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t take = (size_t)((nl ? nl : end) - p);
			uint64_t i;

			if (hl < sizeof(head) - 1) {
				size_t room = sizeof(head) - 1 - hl;

				memcpy(head + hl, p, take < room ? take : room);
				hl += take < room ? take : room;
			}
			if (!nl)
				break;
			head[hl] = 0;
			hl = 0;
			n++;
			p = nl + 1;
			if (!socket_mapping(head, &i))
				continue;
			if (ns == cap) {
				uint64_t *g = realloc(ino, (cap ? cap * 2 : 16) *
							    sizeof(*g));

				if (!g) {
					rc = -ENOMEM;
					goto out;
				}
				ino = g;
				cap = cap ? cap * 2 : 16;
			}
			ino[ns++] = i;
		}
	}
	if (got < 0)
		rc = -errno;
out:
	close(fd);
	if (!rc) {
		size_t d = 0;

		if (ns)
			cr_u64_sort(ino, ns);
		for (size_t k = 0; k < ns; k++)
			if (!k || ino[k] != ino[d - 1])
				ino[d++] = ino[k];
		*count = n;
		*socks = d;
		*inos = ino;	/* the caller's */
		return 0;
	}
	free(ino);
	return rc;
}

/* The most a process with vsize bytes of address space can hold in
 * mappings' kernel memory. */
static uint64_t vma_bound(const struct cr_budgets *b, uint64_t vsize)
{
	uint64_t pages = vsize / (uint64_t)b->page;

	return (pages < b->map_max ? pages : b->map_max) * CR_BUDGET_VMA_BYTES;
}

/* Resident bytes of the process t belongs to (t may be any thread), and
 * its address space. */
int bg_read_rss(struct cr_budgets *b, struct cr_task *t, uint64_t *bytes,
		uint64_t *vsize)
{
	char path[64], buf[256];
	unsigned long long size, res;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/statm", t->tid, t->tid);
	rc = bg_read_task_file(b, &t->b.fd_mem, path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	if (sscanf(buf, "%llu %llu", &size, &res) != 2)
		return -EIO;
	*bytes = res * (uint64_t)b->page;
	*vsize = size * (uint64_t)b->page;
	return 0;
}

/* Whether another leader alive shares t's address space. */
static bool vm_shared(struct cr_run *run, const struct cr_task *t)
{
	const struct cr_tasks *ts = &run->tasks;

	if (!t->b.vm_group)
		return false;
	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *o = &ts->slots[i];

		if (o->tid && o != t && o->leader &&
		    o->b.vm_group == t->b.vm_group)
			return true;
	}
	return false;
}

/* Whether t's group was counted by this reading already. */
static bool vm_counted(const struct cr_budgets *b, const struct cr_task *t)
{
	for (size_t i = 0; t->b.vm_group && i < b->nvm_seen; i++)
		if (b->vm_seen[i] == t->b.vm_group)
			return true;
	return false;
}

/* t's group is counted by this reading (through t). One that cannot be
 * remembered counts again (errs high). */
static void vm_count(struct cr_budgets *b, const struct cr_task *t)
{
	uint64_t *g;

	if (!t->b.vm_group)
		return;
	if (b->nvm_seen == b->capvm_seen) {
		size_t cap = b->capvm_seen ? 2 * b->capvm_seen : 16;

		g = realloc(b->vm_seen, cap * sizeof(*g));
		if (!g)
			return;
		b->vm_seen = g;
		b->capvm_seen = cap;
	}
	b->vm_seen[b->nvm_seen++] = t->b.vm_group;
}

void bg_memory_leaving(struct cr_run *run, struct cr_budgets *b,
		       struct cr_task *t, bool any_thread)
{
	uint64_t v, vs, pt = 0;

	if (run->ending || bg_ours(t) ||
	    (!any_thread && !t->leader && t->b.tgid &&
	     cr_tasks_find(&run->tasks, t->b.tgid)))
		return;
	/* An address space another process keeps is not dropped. */
	if (t->leader && vm_shared(run, t))
		return;
	if (bg_read_rss(b, t, &v, &vs) < 0)
		return;		/* gone: nothing left to hold */
	/* Its page tables, where they could matter (poll_tasks). */
	if (b->rss + b->exit_rss + v + CR_BUDGET_PTE_BOUND * vs >
	    bg_lim(run, CR_LIM_MEMORY) && read_pte(b, t, &pt) < 0)
		pt = 0;
	b->exit_rss += v + pt;
	if (b->rss + b->exit_rss > bg_lim(run, CR_LIM_MEMORY))
		bg_poll_tasks(run);
}

/* ---- polling: cpu and memory of live tasks ---- */

static uint64_t rollup_field(const char *buf, const char *key, bool *have)
{
	const char *p = strstr(buf, key);

	if (!p) {
		*have = false;
		return 0;
	}
	return strtoull(p + strlen(key), NULL, 10);
}

/* A process's locked memory in full (kB): VmLck of its status. */
static uint64_t vm_locked(pid_t tid)
{
	char path[64], buf[2048], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (bg_read_small(path, buf, sizeof(buf)) < 0 ||
	    !(p = strstr(buf, "\nVmLck:")))
		return UINT64_MAX;
	return strtoull(p + 7, NULL, 10);
}

/*
 * What of a process's PSS (kB, from its smaps_rollup text) counts: all but
 * the clean pages of files it maps. Those are page cache the kernel takes
 * back under pressure, as it does the cache of files read with read(),
 * which no measure here counts: a database reading a large file through a
 * mapping (SQLite's mmap_size, LMDB, git's packs) held only reclaimable
 * pages and was ended on memory where the same reads through read() ran
 * (found by a probing session). What the kernel cannot take back counts:
 * - dirty file pages: the rollup does not split its dirty pages by kind,
 *   so as many file pages as it has dirty pages of any kind count (clean
 *   shared memory read only made dirty file pages pass as its own, found
 *   by a probing session);
 * - locked pages, in full: the rollup's Locked is the process's share of
 *   its locked mappings, and processes mapping the same pages without the
 *   lock count them as clean file pages (20 processes each locking 8 MiB
 *   of one file held 160 MiB unevictable, found by a probing session); so
 *   a process with any locked memory adds its VmLck whole (a page locked
 *   by two counts twice: towards stopping).
 * Without the fields (an older kernel) the whole PSS counts.
 */
static uint64_t rollup_judged(const char *buf, uint64_t pss, pid_t tid)
{
	bool have = true;
	uint64_t file = rollup_field(buf, "\nPss_File:", &have);
	uint64_t dirty = rollup_field(buf, "\nPss_Dirty:", &have);
	uint64_t locked = rollup_field(buf, "\nLocked:", &have);
	uint64_t keep = dirty < file ? dirty : file;

	if (!have || file > pss)
		return pss;
	if (locked) {
		/* The whole PSS, and every locked page on top. */
		uint64_t all = vm_locked(tid);

		return all == UINT64_MAX ? pss : pss + all;
	}
	return pss - file + keep;
}

/* The tree's proportional set size: each shared page divided among the
 * processes that map it, so a page shared by every forked worker counts
 * once. 0, or -errno when any live process cannot be read (the caller
 * then keeps the RSS sum, which errs high). */
static int tree_pss(struct cr_run *run, uint64_t *bytes, uint64_t *rss)
{
	struct cr_tasks *ts = &run->tasks;
	uint64_t sum = 0, rsum = 0;

	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *t = &ts->slots[i];
		char path[64], buf[2048], *p;
		int rc;

		if (!t->tid || !t->leader || !t->b.rss)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", t->tid);
		cr_slow_begin();	/* the memory-map lock (stall.c) */
		rc = bg_read_small(path, buf, sizeof(buf));
		cr_slow_end();
		if (rc == -ESRCH || rc == -ENOENT)
			continue;	/* gone since the tick's reading */
		if (rc < 0)
			return rc;
		p = strstr(buf, "\nPss:");
		if (!p)
			return -EIO;
		sum += rollup_judged(buf, strtoull(p + 5, NULL, 10), t->tid) * 1024;
		p = strstr(buf, "\nRss:");
		rsum += p ? strtoull(p + 5, NULL, 10) * 1024 : UINT64_MAX / 4;
	}
	*bytes = sum;
	*rss = rsum;
	return 0;
}

/* The tree's PSS estimated from the last judgement, erring high: what
 * it found, plus each process's RSS growth since, summed tick by tick (a
 * fall does not cancel a later rise), and the whole RSS of a process it
 * did not see. A page newly mapped adds at most its size to the PSS and
 * exactly that to its mapper's RSS; a mapping dropped lowers the PSS or
 * leaves it; so a process that drops shared pages and maps as many new
 * ones, tick after tick, keeps its RSS flat and gets past it: for at most
 * until the next judgement, never more than CR_BUDGET_PSS_MAX_GAP_MS after
 * the last (pss_judge). */
static uint64_t pss_estimate(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;
	uint64_t est = b->pss_last;

	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *t = &ts->slots[i];

		if (!t->tid || !t->leader || !t->b.rss)
			continue;
		est += t->b.pss_gen == b->pss_gen ? t->b.pss_grown : t->b.rss;
	}
	return est;
}

/* Judge the tree's memory by PSS when its RSS sum (rss) is over the
 * budget; returns the figure to hold against it (extra: page tables and
 * socket bytes, added by the caller). Reading every process's
 * smaps_rollup walks all its page tables: 60 forked processes sharing
 * 100 MiB cost ~30 ms, and a tree held over the budget by RSS but under
 * it by PSS had it paid every tick, uncharged (16 s of supervisor CPU in
 * 25 s under cpu=2s). So after a judgement the estimate above serves
 * while it stays under the budget, and a judgement is free only once
 * 30 times its cost has passed, or 1 s (CR_BUDGET_PSS_MAX_GAP_MS), the
 * sooner; one the estimate forces sooner (the tree grew towards the
 * budget), or one dearer than 1/30 s, has its CPU charged to the run's
 * cpu budget (a program that makes judgements dear pays for them). */
static uint64_t pss_judge(struct cr_run *run, uint64_t rss, uint64_t extra)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;
	const uint64_t max_gap = CR_BUDGET_PSS_MAX_GAP_MS * 1000000ull;
	uint64_t now = cr_now_ns(), t0, cost, wait, pss, now_rss = 0;
	bool early = now < b->pss_next_ns;
	int rc;

	/* The watchdog's poll reads no smaps_rollup: the estimate where a
	 * judgement left one, else the RSS sum, which errs high (the caller
	 * judges by it only once the loop has waited long, bg_poll_tasks). */
	if (b->stalled) {
		uint64_t est = b->pss_have ? pss_estimate(run) : rss;

		return est < rss ? est : rss;
	}
	if (b->pss_have && early) {
		uint64_t est = pss_estimate(run);

		if (est < rss && est + extra <= bg_lim(run, CR_LIM_MEMORY))
			return est;
	}
	t0 = cr_thread_cpu_ns();
	rc = tree_pss(run, &pss, &now_rss);
	cost = cr_thread_cpu_ns() - t0;
	b->pss_fresh = !rc;
	b->pss_rss_over = rc || now_rss + extra > bg_lim(run, CR_LIM_MEMORY);
	b->pss_cost_ns += cost;
	wait = cost * CR_BUDGET_PSS_IDLE;
	if (early || wait > max_gap)
		b->cpu_dead_ns += cost;
	b->pss_next_ns = now + (wait < max_gap ? wait : max_gap);
	b->pss_have = false;
	if (rc || pss >= rss)
		return rss;	/* the RSS sum errs high */
	b->pss_have = true;
	b->pss_last = pss;
	b->pss_gen++;
	for (size_t i = 0; i < ts->cap; i++) {
		struct cr_task *t = &ts->slots[i];

		if (t->tid && t->leader && t->b.rss) {
			t->b.pss_rss = t->b.rss;
			t->b.pss_grown = 0;
			t->b.pss_gen = b->pss_gen;
		}
	}
	return pss;
}


/* Kernel memory of the mappings of every process counted this poll: slab
 * no RSS shows, up to vm.max_map_count mappings a process (~16 MiB; 16
 * processes of 65 508 PROT_NONE pages held 254 MiB under memory=32MiB,
 * found by a probing session). Reading a maps file costs its length
 * (~17 ms for 65 000 mappings), which the program chooses: each process
 * is counted again at most every CR_BUDGET_VMA_TICKS, the counting waits
 * CR_BUDGET_VMA_IDLE times its own cost, and that cost is charged to the
 * run's cpu budget; one poll reads for CR_BUDGET_VMA_SLICE_NS at most. In
 * between, the last count of each process stands. The reads go round the
 * table from where the last one stopped: begun at slot 0 each time, a few
 * processes of 65 000 mappings in low slots (a tid picks its slot) took
 * every read there was, and a process beyond them, read once while
 * empty, then mapped sockets that were never counted (found by a probing
 * session). */
static uint64_t count_mappings(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;
	uint64_t sum = 0, t0 = 0, now = cr_now_ns();
	/* The watchdog's poll reads no maps: the last counts stand. */
	bool paced = now < b->vma_next_ns || b->stalled;
	size_t from = b->vma_cursor & (ts->cap - 1);

	for (size_t k = 0; k < ts->cap; k++) {
		size_t i = (from + k) & (ts->cap - 1);
		struct cr_task *t = &ts->slots[i];
		uint64_t v, s, *si;

		if (!t->tid || t->b.size_tick != b->tick)
			continue;
		if (!paced && (!t->b.vma_tick ||
			       b->tick - t->b.vma_tick >= CR_BUDGET_VMA_TICKS)) {
			if (!t0)
				t0 = cr_thread_cpu_ns();
			if (bg_measured(run, t, read_vmas(t, &v, &s, &si))) {
				t->b.vmas = v;
				t->b.sock_maps = s;
				free(t->b.sock_inos);
				t->b.sock_inos = si;
				t->b.vma_tick = b->tick;
			}
			b->vma_cursor = i + 1;
			/* One poll's share, however many are due: the
			 * rest wait for the next, their last counts
			 * standing meanwhile. */
			paced = cr_thread_cpu_ns() - t0 > CR_BUDGET_VMA_SLICE_NS;
		}
		sum += t->b.vmas * CR_BUDGET_VMA_BYTES +
		       t->b.sock_maps * b->sock_most;
	}
	if (t0) {
		uint64_t cost = cr_thread_cpu_ns() - t0;

		cr_budget_charge_cpu(run, cost);
		b->vma_next_ns = cr_now_ns() + cost * CR_BUDGET_VMA_IDLE;
	}
	return sum;
}

/* A lower bound of the run's CPU, cheap however many threads it runs
 * (-1: not asked, the threads are few; 1: it is past the budget):
 * each live process's own total (/proc/PID/stat: every thread of it,
 * live or gone, in clock ticks), processes gone not counted. Asked before
 * the per-thread pass when threads outnumber processes: that pass reads
 * a file per thread, and 2 000 spinning threads made each one long enough
 * that the budget was found spent at 2 to 4 times its size (found by a
 * probing session). What it shows spent is spent: the run ends at once,
 * the per-thread figure following at the end. */
static int cpu_quick_breach(struct cr_run *run)
{
	struct cr_tasks *ts = &run->tasks;
	uint64_t sum = 0;
	size_t procs = 0, tasks = 0;

	for (size_t i = 0; i < ts->cap; i++)
		if (ts->slots[i].tid) {
			tasks++;
			procs += ts->slots[i].leader;
		}
	if (tasks < CR_BUDGET_QUICK_CPU_TASKS || tasks < 4 * procs)
		return -1;
	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *t = &ts->slots[i];
		char path[64], buf[1024];
		uint64_t ns;

		if (!t->tid || !t->leader)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", t->tid);
		if (bg_read_small(path, buf, sizeof(buf)) < 0 ||
		    bg_stat_cpu_ns(buf, &ns) < 0)
			continue;	/* gone, or unreadable: not counted */
		sum += ns;
	}
	if (sum / 1000000ull <= bg_lim(run, CR_LIM_CPU))
		return 0;
	bg_breach(run, CR_LIM_CPU, sum / 1000000ull);
	return 1;
}

/* One pass of a scan's read: the leaders (pass 0), or the threads of a
 * process whose leader showed nothing (pass 1). *whole is cleared when a
 * live task could not be read. */
static void shanon_read(struct cr_run *run, int pass, bool *whole)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;

	for (size_t i = 0; i < ts->cap && *whole; i++) {
		struct cr_task *t = &ts->slots[i], *l = NULL;
		char path[64];
		int fd, rc;

		if (!t->tid || bg_ours(t) || t->leader != !pass)
			continue;
		if (pass) {
			if (!t->b.tgid)
				t->b.tgid = bg_read_tgid(t->tid);
			l = t->b.tgid ? cr_tasks_find(ts, t->b.tgid) : NULL;
			if (l && l->b.shanon_gen == b->shanon_scans)
				continue;
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%d/maps", t->tid,
			 t->tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		cr_slow_begin();	/* the memory-map lock (stall.c) */
		rc = fd < 0 ? -errno : cr_shanon_scan_fd(b->shanon, fd);
		cr_slow_end();
		if (fd >= 0)
			close(fd);
		/* Lines read: the process is seen (a leader that exited
		 * shows none). */
		if (rc > 0 && !pass)
			t->b.shanon_gen = b->shanon_scans;
		else if (rc > 0 && l)
			l->b.shanon_gen = b->shanon_scans;
		if (rc < 0 && !bg_measured(run, t, rc))
			*whole = rc == -ENOENT || rc == -ESRCH;
	}
}

/*
 * A call stays in flight until its thread is seen again (a notified call,
 * a stop, its end), and a call in flight may still make an object. A
 * thread that maps and then only waits (a futex, a read) is never seen
 * again: its call stayed in flight for good, and one whose call the kernel
 * refused (MAP_FIXED_NOREPLACE over a mapping: EEXIST) then stood for an
 * object no call made, where the scan ends the run (found by a probing
 * session). Before a scan reads the maps, each such thread blocked in a
 * call other than mmap (/proc/TID/syscall: its number) is done with the
 * mmap: what that made is in the maps the scan reads. "running" tells
 * nothing, and stays in flight. At most CR_BUDGET_INFLIGHT_LOOK a scan.
 */
#define CR_BUDGET_INFLIGHT_LOOK 64

static void shanon_settle(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	pid_t tids[CR_BUDGET_INFLIGHT_LOOK];
	size_t n = cr_shanon_inflight(b->shanon, tids, CR_BUDGET_INFLIGHT_LOOK);

	for (size_t i = 0; i < n; i++) {
		char path[48], buf[128], *end;
		long nr;

		snprintf(path, sizeof(path), "/proc/%d/syscall", (int)tids[i]);
		if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
			continue;
		nr = strtol(buf, &end, 10);
		if (end != buf && nr != SYS_mmap)
			cr_shanon_done(b->shanon, tids[i]);
	}
}

/*
 * The maps of every process of the run, for the shared anonymous objects
 * alive (shanon.c): new ones charged, the charges of gone ones taken back.
 * Each process is read through its leader, or, where the leader shows
 * nothing (it exited, its threads live on), through its other threads. A
 * read that fails on a live task leaves the charges as they are (or ends
 * the run, as any failure to measure does). An object found beyond every
 * candidate call ends the run (fail closed). The scan's CPU is the run's;
 * the next waits CR_BUDGET_QUICK_IDLE times it.
 */
static void shanon_scan(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns(), cost;
	bool whole = true;
	int over;

	shanon_settle(run);
	cr_shanon_scan_begin(b->shanon);
	/* Twice, what either read finds counting (shanon.c); each time
	 * leaders first, then the threads of a process whose leader showed
	 * nothing (exited, or not in the table). */
	for (int round = 0; round < 2 && whole; round++) {
		b->shanon_scans++;
		for (int pass = 0; pass < 2 && whole; pass++)
			shanon_read(run, pass, &whole);
	}
	cost = cr_thread_cpu_ns() - t0;
	cr_budget_charge_cpu(run, cost);
	b->shanon_next_ns = cr_now_ns() + cost * CR_BUDGET_QUICK_IDLE;
	if (!whole || run->ending)
		return;
	over = cr_shanon_scan_end(b->shanon);
	if (over < 0 && !run->ending)
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot follow the run's shared memory for the budget: %s",
			   strerror(-over));
	else if (over > 0 && !run->ending)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED,
			   cr_limit_name(CR_LIM_MEMORY),
			   "%d shared anonymous memory object(s) made where corral could not count them",
			   over);
}

static void poll_tasks(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;
	uint64_t live = 0, rss = 0, pte = 0, vsum = 0, vbound = 0, vs, extra;
	uint64_t polls = 0, leaders_rss = 0;
	bool via_thread = false, unjudged = false;
	size_t k = 0, from = 0, reads = SIZE_MAX;
	int quick;

	b->tick++;
	b->exit_rss = 0;
	bg_prune_zombies(b);
	quick = cpu_quick_breach(run);
	if (quick > 0)
		return;
	/* Where the processes' own totals judge the budget, a tick reads
	 * CR_BUDGET_CPU_READS of the threads, in turn: the pass stays short
	 * however many there are, and each thread's figure stays a lower
	 * bound (a thread's time is read again when it exits). */
	if (quick == 0) {
		from = b->cpu_rr % (ts->count ? ts->count : 1);
		reads = CR_BUDGET_CPU_READS;
		b->cpu_rr = from + reads;
	}
	/* Pass 1: every thread's CPU; each process's memory from its
	 * leader, and an address space shared by processes once. */
	b->nvm_seen = 0;
	for (size_t i = 0; i < ts->cap; i++) {
		struct cr_task *t = &ts->slots[i];
		uint64_t v;

		if (!t->tid)
			continue;
		if ((reads == SIZE_MAX ||
		     (k >= from ? k - from : k + ts->count - from) < reads) &&
		    bg_measured(run, t, bg_read_thread_cpu(b, t, &v)) &&
		    v > t->b.cpu_ns)
			t->b.cpu_ns = v;
		k++;
		live += t->b.cpu_ns;
		polls += t->b.poll_bytes;
		t->b.rss = 0;
		if (t->leader && t->b.vm_group && vm_counted(b, t)) {
			t->b.mem_tick = b->tick;	/* not via its threads */
			continue;
		}
		if (t->leader && !bg_ours(t) &&
		    bg_measured(run, t, bg_read_rss(b, t, &v, &vs)) && v) {
			t->b.rss = v;
			t->b.mem_tick = b->tick;
			if (t->b.pss_gen == b->pss_gen) {
				if (v > t->b.pss_rss)
					t->b.pss_grown += v - t->b.pss_rss;
				t->b.pss_rss = v;
			}
			t->b.size_tick = b->tick;
			t->b.vsize = vs;
			vm_count(b, t);
			rss += v;
			leaders_rss += v;
			vsum += vs;
			vbound += vma_bound(b, vs);
		}
	}
	b->quick_base = leaders_rss;
	/* Pass 2: a process whose leader has exited while other threads run
	 * shows no memory through the leader; count it through one of its
	 * live threads, once. */
	for (size_t i = 0; i < ts->cap; i++) {
		struct cr_task *t = &ts->slots[i], *l;
		uint64_t v;

		if (!t->tid || t->leader)
			continue;
		if (!t->b.tgid)
			t->b.tgid = bg_read_tgid(t->tid);
		l = t->b.tgid ? cr_tasks_find(ts, t->b.tgid) : NULL;
		if (l && l->b.mem_tick == b->tick)
			continue;
		if (bg_measured(run, t, bg_read_rss(b, t, &v, &vs)) && v) {
			rss += v;
			vsum += vs;
			vbound += vma_bound(b, vs);
			t->b.size_tick = b->tick;
			t->b.vsize = vs;
			via_thread = true;
			if (l)
				l->b.mem_tick = b->tick;
		}
	}
	/* Page tables, when the bound of every process's could carry the
	 * tree past the budget: each process counted above, through the task
	 * it was counted by. Not per process: many processes with small
	 * address spaces add up (the bound is per run). */
	if (rss + b->sockbytes + b->filebytes + b->epollbytes +
	    CR_BUDGET_PTE_BOUND * vsum >
	    bg_lim(run, CR_LIM_MEMORY)) {
		for (size_t i = 0; i < ts->cap; i++) {
			struct cr_task *t = &ts->slots[i];
			uint64_t v;

			if (t->tid && t->b.size_tick == b->tick &&
			    bg_measured(run, t, read_pte(b, t, &v)))
				pte += v;
		}
	}
	/* Mappings, when their bound could carry the tree past it; and in
	 * a run that made a TCP socket always, since one mapped socket can
	 * hold more than any budget (read_vmas). */
	if (rss + b->sockbytes + b->filebytes + b->epollbytes + pte + vbound >
	    bg_lim(run, CR_LIM_MEMORY) || cr_sockmem_tcp_made(b->sockmem))
		pte += count_mappings(run);
	/* Each task's kernel stack and descriptors (task_struct and the
	 * rest): unreclaimable kernel memory no RSS shows, ~24 KiB a task
	 * bg_measured (2040 bare threads, 16 KiB of stack and ~8 KiB of slab
	 * each, held 48 MiB under memory=8MiB; found by a probing session).
	 * Like page tables and socket bytes, never shared: outside the PSS
	 * judgement, but part of what calls for one. */
	locks_tighten(run);
	if (cr_shanon_active(b->shanon) && cr_now_ns() >= b->shanon_next_ns &&
	    !b->stalled)
		shanon_scan(run);
	if (run->ending)
		return;
	extra = pte + b->sockbytes + b->filebytes + b->epollbytes +
		cr_shanon_bytes(b->shanon) + polls +
		(uint64_t)ts->count * CR_BUDGET_TASK_KERNEL + lock_bound(b) +
		b->kobj_bytes + cr_sysv_bytes(run) + cr_net_deferred_bytes(run);
	b->kobj_new = 0;
	b->ipc_new = 0;
	b->shanon_new = 0;
	b->poll_new = 0;
	/* Over budget by the cheap measure: judge by the fair one before
	 * ending the run. Forked workers share most of their pages (a
	 * multiprocessing pool of Pythons is 30 MiB each by RSS, a few by
	 * PSS); an RSS sum would stop real work the host can well afford.
	 * Only past the budget, and paced by its cost (pss_judge). */
	if (rss + extra > bg_lim(run, CR_LIM_MEMORY) && !via_thread) {
		bool judged = b->pss_judged;

		b->pss_judged = true;
		b->pss_fresh = false;
		/* The watchdog's poll, with no judgement to go by: the RSS
		 * sum errs high (shared pages once per process), so it
		 * judges only once the loop has waited as long as a tree
		 * over its RSS sum may wait for a judgement anyway. */
		if (b->stalled && !b->pss_have &&
		    b->stall_ns < CR_BUDGET_PSS_MAX_GAP_MS * 1000000ull)
			unjudged = true;
		else
			rss = pss_judge(run, rss, extra);
		/* A judgement that read the tree afresh and found its RSS
		 * under the budget too saw no sharing, only memory given
		 * back since the tick (a burst mapped and unmapped at once):
		 * the end's judgement by each process's kernel peak
		 * (budget.c) stays, which the mark would have turned off (a
		 * 110 MiB burst under memory=64MiB ended ok, rarely). */
		if (b->pss_fresh && !b->pss_rss_over)
			b->pss_judged = judged;
	} else if (via_thread) {
		b->pss_have = false;	/* a process counted another way */
	}
	/* Page tables are the process's own, never shared: added as they
	 * are, after any PSS judgement; so are the bytes waiting in the
	 * run's unix sockets (last fd scan) and the tasks' kernel memory. */
	rss += extra;
	/* The locks' bound is what carries the sum past the budget: count
	 * them (locks_fit) before judging. */
	b->mem_nolock = rss - lock_bound(b);
	if (rss > bg_lim(run, CR_LIM_MEMORY) &&
	    b->mem_nolock <= bg_lim(run, CR_LIM_MEMORY) && locks_fit(run))
		rss = b->mem_nolock + lock_bound(b);
	b->cpu_ns = b->cpu_dead_ns + live;
	if (unjudged) {
		if (b->cpu_ns / 1000000ull > bg_lim(run, CR_LIM_CPU))
			bg_breach(run, CR_LIM_CPU, b->cpu_ns / 1000000ull);
		return;
	}
	b->rss = rss;
	if (rss > b->peak_rss)
		b->peak_rss = rss;
	bg_note_peaks(run);
	if (b->cpu_ns / 1000000ull > bg_lim(run, CR_LIM_CPU))
		bg_breach(run, CR_LIM_CPU, b->cpu_ns / 1000000ull);
	else if (rss > bg_lim(run, CR_LIM_MEMORY))
		bg_breach(run, CR_LIM_MEMORY, rss);
}

void bg_poll_tasks(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	b->polling = true;
	poll_tasks(run);
	b->polling = false;
}

/* A live task whose /proc entry corral (same uid, no capability) does
 * not own: undumpable, its fds and memory closed to us. */
bool bg_task_closed(pid_t tid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/task/%d", tid, tid);
	return stat(path, &st) == 0 && st.st_uid != geteuid();
}

/*
 * Byte-range locks: each record is ~195 B of slab (measured) that no RSS
 * shows, and the kernel sets no limit on them: a process holding a file
 * open may keep as many as it can split (every other byte locked; 2
 * million held +380 MB natively). A lock call adds at most two records (a
 * range split in three), so the records are bounded by twice the calls;
 * the calls are notified for that (handlers/kmem.c, registers only, then
 * continued). When that bound could carry the run past its memory budget,
 * the records are counted: every descriptor's fdinfo shows the locks set
 * through its open file ("lock:" lines), read in every fd table.
 *
 * A POSIX lock belongs to its fd table and goes when the table closes any
 * descriptor of its file or is freed, so the count sees every one (a
 * duplicate descriptor shows them again: counted twice, towards
 * stopping). An OFD lock belongs to the open file, which can outlive
 * every descriptor (a mapping, a message in flight), so OFD lock calls
 * are never forgiven by a count: 2 records each, for the run's life.
 * flock(2) keeps one record per open file, bounded with the files.
 * Locks set by calls continued but not yet made when the count reads are
 * bounded by two per task.
 */
static uint64_t lock_bound(const struct cr_budgets *b)
{
	return (b->lk_base + 2 * (b->lk_posix + b->lk_ofd)) *
	       CR_BUDGET_LOCK_BYTES;
}

/* The lock records in every fd table of the run; false when it could not
 * be done whole (a table closed to us, out of descriptors, or dearer than
 * CR_BUDGET_LOCK_SLICE_NS: a program can make every descriptor show
 * thousands of locks), which leaves the bound standing. Its CPU is the
 * run's. */
static bool count_locks(struct cr_run *run, uint64_t *out)
{
	struct cr_tasks *ts = &run->tasks;
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns(), n = 0;
	bool ok = true;

	if (!b->anon_ino) {
		struct stat st;
		int e = eventfd(0, EFD_CLOEXEC);

		if (e < 0 || fstat(e, &st) < 0) {
			if (e >= 0)
				close(e);
			return false;	/* the bound stands */
		}
		close(e);
		b->anon_dev = st.st_dev;
		b->anon_ino = st.st_ino;
	}
	for (size_t i = 0; ok && i < ts->cap; i++) {
		const struct cr_task *t = &ts->slots[i];
		struct dirent *de;
		char path[64];
		DIR *d;
		int fd;

		if (!t->tid || bg_shares_leader_files(t))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/fd", t->tid,
			 t->tid);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    bg_task_closed(t->tid))
				ok = false;
			continue;	/* gone or exiting meanwhile */
		}
		if (!(d = fdopendir(fd))) {
			close(fd);
			ok = false;
			break;
		}
		while (ok && (de = readdir(d))) {
			struct stat st;
			int64_t k;

			/* An anonymous inode's fdinfo can be megabytes
			 * (an inotify instance lists every watch: 150 000
			 * took 0.43 s, and a database beside a file
			 * watcher ended on memory when the count gave up;
			 * found by a probing session). Locks on it are
			 * not counted: all anonymous files share one
			 * inode, whose lock list the kernel walks at every
			 * call, so they cost their maker quadratic time.
			 * Only that inode: a pidfd has no file type either,
			 * but an inode of its own per process, and 800 000
			 * records on pidfds went uncounted (146 MiB of slab
			 * under memory=32MiB, found by a probing session). */
			if (de->d_name[0] == '.' ||
			    cr_quiet_fstatat(dirfd(d), de->d_name, &st, 0) < 0 ||
			    (!(st.st_mode & S_IFMT) &&
			     st.st_ino == b->anon_ino &&
			     st.st_dev == b->anon_dev))
				continue;
			k = bg_fdinfo_lines(dirfd(d), de->d_name, "lock:");
			if (k >= 0)
				n += (uint64_t)k;
			else if (k != -ENOENT)
				ok = false;
			if (cr_thread_cpu_ns() - t0 > CR_BUDGET_LOCK_SLICE_NS)
				ok = false;
		}
		closedir(d);
	}
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	*out = n;
	return ok;
}

/* The bound starts again from a count of the records (false when the
 * count could not be made whole: the bound stands). */
static bool recount_locks(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t n;

	if (!count_locks(run, &n))
		return false;
	b->lk_base = n + 2 * (uint64_t)run->tasks.count;
	b->lk_posix = 0;
	return true;
}

/* Do the lock records fit beside the rest of the run's memory (the last
 * poll's sum)? Counted again first when their bound says they might not. */
static bool locks_fit(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t max = bg_lim(run, CR_LIM_MEMORY);

	if (b->mem_nolock + b->kobj_new + lock_bound(b) <= max)
		return true;
	if (!recount_locks(run))
		return false;
	return b->mem_nolock + b->kobj_new + lock_bound(b) <= max;
}

/* A database locks and unlocks all day: its bound grows with every call
 * though it holds a record or two, and would stand as the run's memory in
 * the result. Past CR_BUDGET_LOCK_SLACK of calls since the last count, a
 * poll counts, paced at ten times the count's cost. */
static void locks_tighten(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t now = cr_now_ns(), t0;

	if (2 * b->lk_posix * CR_BUDGET_LOCK_BYTES <= CR_BUDGET_LOCK_SLACK ||
	    now < b->lk_next_ns)
		return;
	t0 = cr_thread_cpu_ns();
	recount_locks(run);
	b->lk_next_ns = cr_now_ns() + 10 * (cr_thread_cpu_ns() - t0);
}

/* Kernel memory corral will not see go, charged for the run's life: 0, or
 * -ENOMEM past the memory budget (the run is then ended). */
int bg_charge_for_good(struct cr_run *run, uint64_t bytes)
{
	struct cr_budgets *b = run->budgets;

	b->kobj_bytes += bytes;
	b->kobj_new += bytes;
	if (b->mem_nolock + b->kobj_new + lock_bound(b) <=
	    bg_lim(run, CR_LIM_MEMORY))
		return 0;
	b->rss = b->mem_nolock + b->kobj_new + lock_bound(b);
	if (b->rss > b->peak_rss)
		b->peak_rss = b->rss;
	bg_breach(run, CR_LIM_MEMORY, b->rss);
	return -ENOMEM;
}

/* A System V object made for the run (ipc/sysv.c): its fixed charge is in
 * every poll's sum from the next one (cr_sysv_bytes) until it is removed;
 * until then it is added here. */
int cr_budget_on_held(struct cr_run *run, uint64_t bytes)
{
	return cr_budget_on_ipc(run, bytes);
}

/* The memory judged now: the last poll's sum and what was charged
 * since. */
static uint64_t judged_now(const struct cr_budgets *b)
{
	return b->mem_nolock + b->kobj_new + b->ipc_new + b->shanon_new +
	       b->poll_new + lock_bound(b);
}

int cr_budget_on_ipc(struct cr_run *run, uint64_t bytes)
{
	struct cr_budgets *b = run->budgets;
	uint64_t sum;

	if (!b)
		return 0;
	b->ipc_new += bytes;
	sum = judged_now(b);
	if (sum <= bg_lim(run, CR_LIM_MEMORY))
		return 0;
	b->rss = sum;
	if (b->rss > b->peak_rss)
		b->peak_rss = b->rss;
	bg_breach(run, CR_LIM_MEMORY, b->rss);
	return -ENOMEM;
}

int cr_budget_on_shared_anon(struct cr_run *run, pid_t tid, uint64_t len)
{
	struct cr_budgets *b = run->budgets;
	int rc;

	if (!b)
		return 0;
	/* Past the budget with objects charged: the charges of objects
	 * already gone may be what passes it (a program mapping and
	 * unmapping a large region in a loop, between two scans). Not
	 * paced: each such scan ends the run or lets a creation through,
	 * and its CPU is the run's. */
	if (judged_now(b) + len > bg_lim(run, CR_LIM_MEMORY) &&
	    cr_shanon_count(b->shanon)) {
		uint64_t was = cr_shanon_bytes(b->shanon), back, d;

		shanon_scan(run);
		if (run->ending)
			return -ENOMEM;
		/* A charge the scan found made is new since the poll; what
		 * it took back was charged since, or is in the poll's sum. */
		if (cr_shanon_bytes(b->shanon) >= was) {
			b->shanon_new += cr_shanon_bytes(b->shanon) - was;
		} else {
			back = was - cr_shanon_bytes(b->shanon);
			d = back < b->shanon_new ? back : b->shanon_new;
			b->shanon_new -= d;
			back -= d;
			b->mem_nolock -= back < b->mem_nolock ?
					 back : b->mem_nolock;
		}
	}
	rc = cr_shanon_made(b->shanon, tid, len);
	if (rc)
		return rc;
	b->shanon_new += len;
	return cr_budget_on_ipc(run, 0);
}

int cr_budget_on_poll(struct cr_run *run, pid_t tid, uint64_t entries)
{
	struct cr_budgets *b = run->budgets;
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);
	uint64_t bytes = entries * CR_BUDGET_POLL_ENTRY;

	if (!b || !t)
		return 0;
	if (bytes > t->b.poll_bytes)
		b->poll_new += bytes - t->b.poll_bytes;
	t->b.poll_bytes = bytes;
	return cr_budget_on_ipc(run, 0);
}

int cr_budget_on_shared_file(struct cr_run *run, pid_t tid, uint64_t len,
			     bool gated)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return 0;
	return gated ? cr_shanon_gated(b->shanon, tid, len) :
		       cr_shanon_maybe(b->shanon, tid, len);
}

void cr_budget_zero_reachable(struct cr_run *run)
{
	if (run->budgets)
		cr_shanon_ungate(run->budgets->shanon);
}

void cr_budget_task_seen(struct cr_run *run, pid_t tid)
{
	if (run->budgets)
		cr_shanon_done(run->budgets->shanon, tid);
}

int cr_budget_on_kernel_object(struct cr_run *run, enum cr_kobj kind)
{
	struct cr_budgets *b = run->budgets;
	uint64_t bytes;

	if (!b)
		return 0;
	switch (kind) {
	case CR_KOBJ_SECCOMP:
		bytes = CR_BUDGET_SECCOMP_FILTER;
		break;
	case CR_KOBJ_LANDLOCK_RULE:
		b->ll_rules++;
		bytes = CR_BUDGET_LANDLOCK_RULE;
		break;
	default:	/* a domain holds a copy of its ruleset's rules */
		bytes = (b->ll_rules + 1) * CR_BUDGET_LANDLOCK_RULE;
		break;
	}
	return bg_charge_for_good(run, bytes);
}

int cr_budget_on_lock(struct cr_run *run, bool ofd)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return 0;
	if (ofd)
		b->lk_ofd++;
	else
		b->lk_posix++;
	if (locks_fit(run))
		return 0;
	b->rss = b->mem_nolock + b->kobj_new + lock_bound(b); /* judged */
	if (b->rss > b->peak_rss)
		b->peak_rss = b->rss;
	bg_breach(run, CR_LIM_MEMORY, b->rss);
	return -ENOLCK;
}
