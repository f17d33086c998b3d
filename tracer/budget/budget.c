/* tracer/budget/budget.c: the budgets' skeleton: limits, breaches, the tick
 * that measures, set-up and the run's last reading. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/types.h>

#include "internal.h"
#include "shanon.h"
#include "pipeshare.h"
#include "../net/net.h"
#include "../broker/broker.h"

uint64_t bg_lim(const struct cr_run *run, enum cr_limit_id id)
{
	return run->cfg->limits.v[id];
}

void bg_breach_how(struct cr_run *run, enum cr_limit_id id, uint64_t got,
		   bool refused)
{
	char a[32], b[32];

	if (run->ending)
		return;
	cr_limit_format(id, got, a, sizeof(a));
	cr_limit_format(id, bg_lim(run, id), b, sizeof(b));
	if (id == CR_LIM_PROCESSES)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the processes budget is spent: a process creation was refused (it would make %s processes alive at once, the budget is %s)",
			   a, b);
	else if (refused)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget is spent: a creation was refused (it would make %s, the budget is %s)",
			   cr_limit_name(id), a, b);
	else
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget is spent: %s used of %s",
			   cr_limit_name(id), a, b);
}

void bg_breach(struct cr_run *run, enum cr_limit_id id, uint64_t got)
{
	bg_breach_how(run, id, got, false);
}

/* Threads are bounded by the processes budget, times a factor. */
void bg_breach_threads(struct cr_run *run, uint64_t got, uint64_t max)
{
	if (run->ending)
		return;
	cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(CR_LIM_PROCESSES),
		   "the processes budget is spent: a thread creation was refused (it would make %" PRIu64 " tasks alive at once; threads are bounded at %d per process of the budget, %" PRIu64 " in all)",
		   got, CR_BUDGET_THREADS_PER_PROC, max);
}

/* ---- reading /proc ---- */

int bg_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

ssize_t bg_read_held(int fd, void *buf, size_t len)
{
	ssize_t n;

	cr_slow_begin();
	n = read(fd, buf, len);
	cr_slow_end();
	return n;
}

/* Read a /proc file of a task through a descriptor kept open across
 * ticks (*slot holds fd + 1, 0 for none): opening a /proc file costs four
 * times a pread of an open one. At most CR_BUDGET_FD_CACHE stay open; past
 * that each read opens and closes. */
int bg_read_task_file(struct cr_budgets *b, int *slot, const char *path,
		      char *buf, size_t len)
{
	ssize_t n;

	if (!*slot && b->cached < CR_BUDGET_FD_CACHE) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		*slot = fd + 1;
		b->cached++;
	}
	if (!*slot)
		return bg_read_small(path, buf, len);
	n = pread(*slot - 1, buf, len - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

void bg_task_close_fds(struct cr_budgets *b, struct cr_task *t)
{
	int *slots[] = { &t->b.fd_cpu, &t->b.fd_mem, &t->b.fd_status };

	free(t->b.sock_inos);
	t->b.sock_inos = NULL;
	t->b.sock_maps = 0;

	for (size_t i = 0; i < CR_ARRAY_SIZE(slots); i++)
		if (*slots[i]) {
			close(*slots[i] - 1);
			*slots[i] = 0;
			b->cached--;
		}
}

/* utime + stime, in ns, from the text of a /proc stat file. The command
 * name may hold spaces and parentheses: skip to the last ')'; utime and
 * stime are fields 14 and 15. */
int bg_stat_cpu_ns(const char *buf, uint64_t *ns)
{
	const char *p = strrchr(buf, ')');
	unsigned long long ut, st;
	long tick = sysconf(_SC_CLK_TCK);

	if (!p || tick <= 0 ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
		   &ut, &st) != 2)
		return -EIO;
	*ns = (ut + st) * (1000000000ull / (uint64_t)tick);
	return 0;
}

/* The pages of a process whose leader thread has exited while others run:
 * its own statm reads all zeros (the leader has no memory map left), so
 * one of its live threads is read instead. Nothing allocated (the
 * watchdog calls this too). 0 when none is found. */
static unsigned long long statm_via_thread(pid_t pid)
{
	struct dent { uint64_t ino; int64_t off; unsigned short reclen;
		      unsigned char type; char name[]; };
	char path[80], buf[256], dents[2048];
	unsigned long long size, res, got = 0;
	long n;
	int dfd;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	while (!got &&
	       (n = syscall(SYS_getdents64, dfd, dents, sizeof(dents))) > 0) {
		for (long off = 0; off < n && !got;) {
			const struct dent *d = (const void *)(dents + off);

			off += d->reclen;
			if (d->name[0] < '1' || d->name[0] > '9' ||
			    strtol(d->name, NULL, 10) == pid)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%.24s/statm",
				 (int)pid, d->name);
			if (bg_read_small(path, buf, sizeof(buf)) >= 0 &&
			    sscanf(buf, "%llu %llu", &size, &res) == 2 && size)
				got = res;
		}
	}
	close(dfd);
	return got;
}

void bg_proc_use(pid_t pid, uint64_t *cpu_ns, uint64_t *rss)
{
	char path[48], buf[1024];
	unsigned long long size, res;
	uint64_t ns;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cpu_ns && bg_read_small(path, buf, sizeof(buf)) >= 0 &&
	    bg_stat_cpu_ns(buf, &ns) == 0)
		*cpu_ns += ns;
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	if (rss && bg_read_small(path, buf, sizeof(buf)) >= 0 &&
	    sscanf(buf, "%llu %llu", &size, &res) == 2) {
		if (!size)
			res = statm_via_thread(pid);
		*rss += res * (uint64_t)sysconf(_SC_PAGESIZE);
	}
}

/* A task that is gone (ESRCH, ENOENT) just stops counting; any other
 * failure to measure a live task ends the run: never undercount. */
bool cr_budget_fds_short(struct cr_run *run, int err, const char *what)
{
	if (err < 0)
		err = -err;
	if (err != EMFILE && err != ENFILE)
		return false;
	if (!run->ending)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(CR_LIM_FILES),
			   "the files budget is spent: corral has no descriptor left to %s (%s); the run's held descriptors count against it",
			   what, strerror(err));
	return true;
}

bool bg_measured(struct cr_run *run, const struct cr_task *t, int rc)
{
	if (rc == 0)
		return true;
	if (cr_budget_fds_short(run, rc, "measure a task for the budgets"))
		return false;
	if (rc != -ESRCH && rc != -ENOENT && !run->ending)
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot measure task %d for the budgets: %s",
			   t->tid, strerror(-rc));
	return false;
}

pid_t bg_read_tgid(pid_t tid)
{
	char path[64], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tid, tid);
	if (bg_read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nTgid:");
	return p ? (pid_t)atoi(p + 6) : 0;
}

void cr_budget_memory_view(const struct cr_run *run, uint64_t *limit,
			   uint64_t *used)
{
	const struct cr_budgets *b = run->budgets;

	*limit = bg_lim(run, CR_LIM_MEMORY);
	*used = b ? b->rss : 0;
}


/* A process at its exit stop still has its address space; the kernel
 * frees it right after. Memory taken and left between two ticks would
 * never be measured (measured: 110 MiB of huge pages touched in 7 ms,
 * then exit, ended "ok" under memory=64MiB four runs in five), so the
 * exiting process is read here. Its memory and that of the processes
 * that exited since the last tick are added to the last tick's sum; past
 * the budget, the tree is measured and judged now, as by a tick (the
 * processes stopped at their exit still count). A process is read once:
 * through its leader, or through a thread whose leader is gone. An exec
 * drops the address space too: it is read at the exec's notification,
 * through the calling thread (a failed exec only makes the next check
 * come sooner). */
/* The initial process until its first exec runs in corral's own memory
 * (spawn.c): that is not the program's. An earlier build counted it at
 * the first exec's notification: a run whose inputs grew corral past the
 * memory budget (40 000 archive entries under the sanitizer build) ended
 * on "memory" before the program started. */
bool bg_ours(const struct cr_task *t)
{
	return t->initial && !t->execed;
}

void cr_budget_charge_cpu(struct cr_run *run, uint64_t ns)
{
	if (run->budgets)
		run->budgets->cpu_dead_ns += ns;
}

/* ---- the tick ---- */

/*
 * The tick's pace. Memory is judged at each tick, so a run overshoots its
 * budget by what it fills in one: at the 50 ms tick ~90 MiB on a machine
 * whose page faults are cheap (1 GiB touched in one loop reached 344 MiB
 * under memory=256MiB). When the growth since the last tick, carried over
 * a whole tick, would cover a CR_BUDGET_PACE_MARGIN-th of what is left,
 * the timer turns to 10 ms ticks until it would not: the overshoot is a
 * fifth, and a run far from its budget, or steady near it, pays nothing
 * more. The margin is for a rate that changes between two ticks: a
 * program that had half a CPU in one tick has all of it in the next, or
 * huge pages come in (at margin 1, 353 MiB under memory=256MiB on a
 * loaded machine); and the fast ticks go on for a whole slow tick after
 * the last that called for them, since a program descheduled for one
 * fast tick (no growth) resumes at its full rate. Not when reading the
 * tasks took over 1 ms of CPU (a large tree): five times that would be a
 * tenth of a core. Disk likewise, on what ledger_tick judged: the walk
 * of a small workspace comes at every tick, so a file written at full
 * speed is seen five times as often (a large one is walked at its own
 * pace, CR_BUDGET_WALK_IDLE, whatever the tick).
 */
static bool crossing(uint64_t was, uint64_t is, uint64_t dt, uint64_t limit)
{
	uint64_t tick = CR_BUDGET_TICK_MS * 1000000ull, grow, ahead;

	if (!dt || is >= limit || is <= was)
		return false;
	/* the growth over a full tick, saturating, then the margin */
	grow = is - was;
	ahead = grow > UINT64_MAX / tick ? UINT64_MAX : grow * tick / dt;
	return ahead >= (limit - is) / CR_BUDGET_PACE_MARGIN;
}

static void pace_ticks(struct cr_run *run, uint64_t cost_ns)
{
	struct cr_budgets *b = run->budgets;
	uint64_t dt = b->tick_ns - b->pace_ns;
	uint64_t want = CR_BUDGET_TICK_MS * 1000000ull;

	if (crossing(b->pace_disk, b->disk_est, dt, bg_lim(run, CR_LIM_DISK)))
		b->disk_fast_until_ns = b->fast_until_ns =
			b->tick_ns + CR_BUDGET_TICK_MS * 1000000ull;
	if (crossing(b->pace_rss, b->rss, dt, bg_lim(run, CR_LIM_MEMORY)) &&
	    cost_ns < 1000000ull)
		b->fast_until_ns = b->tick_ns + CR_BUDGET_TICK_MS * 1000000ull;
	/* A tree cheap to read is read at the fast pace whatever its
	 * growth: one call can fill memory at several GiB/s (huge pages
	 * populated at once), so a burst after a quiet spell overshot by
	 * its rate times a whole slow tick, 350 MiB under memory=64MiB
	 * (found by a probing session). At most 1/50 of a core. */
	if (cost_ns < CR_BUDGET_CHEAP_TICK_NS)
		b->fast_until_ns = b->tick_ns + CR_BUDGET_FAST_TICK_MS * 1000000ull;
	if (b->tick_ns < b->fast_until_ns)
		want = CR_BUDGET_FAST_TICK_MS * 1000000ull;
	b->pace_rss = b->rss;
	b->pace_disk = b->disk_est;
	b->pace_ns = b->tick_ns;
	b->quick = false;
	if (want != CR_BUDGET_FAST_TICK_MS * 1000000ull) {
		size_t procs = 0;

		for (size_t i = 0; i < run->tasks.cap; i++)
			procs += run->tasks.slots[i].tid &&
				 run->tasks.slots[i].leader;
		if (procs <= CR_BUDGET_QUICK_PROCS) {
			b->quick = true;
			want = CR_BUDGET_FAST_TICK_MS * 1000000ull;
		}
	}
	if (want != b->tick_iv_ns) {
		struct itimerspec its = {
			.it_interval.tv_nsec = (long)want,
			.it_value.tv_nsec = (long)want,
		};

		/* Kept at the old pace if the timer cannot be set. */
		if (timerfd_settime(b->timerfd, 0, &its, NULL) == 0)
			b->tick_iv_ns = want;
	}
}

/*
 * A tree dear to read in full (many threads) but of few processes: the
 * full reading keeps its 50 ms pace, and between two the processes'
 * resident sizes alone are read every 10 ms (a statm each). Growth since
 * the last full reading, added to what it judged, past the budget calls
 * a full reading at once. 400 idle threads put a run on the slow tick,
 * and 2 GiB of huge pages populated in one call then reached 300-450 MiB
 * under memory=64MiB (found by a probing session).
 */
static bool quick_tick(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;
	uint64_t sum = 0, v, vs;

	if (!b->quick || b->tick_ns - b->full_ns >=
	    CR_BUDGET_TICK_MS * 900000ull)
		return false;
	for (size_t i = 0; i < ts->cap; i++) {
		struct cr_task *t = &ts->slots[i];

		if (t->tid && t->leader && !bg_ours(t) &&
		    !(t->b.vm_group && !t->b.rss) &&
		    bg_read_rss(b, t, &v, &vs) == 0)
			sum += v;
	}
	return sum <= b->quick_base ||
	       b->rss + (sum - b->quick_base) <= bg_lim(run, CR_LIM_MEMORY);
}

static void on_tick(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_budgets *b = run->budgets;
	uint64_t expirations, cpu0;

	if (read(b->timerfd, &expirations, sizeof(expirations)) < 0 &&
	    errno == EAGAIN)
		return;
	b->tick_ns = cr_now_ns();
	cr_broker_settle(run);	/* what it moved with origins: net-bytes */
	if (quick_tick(run)) {
		cr_stall_tick_seen();	/* judged: under the budget */
		return;
	}
	b->full_ns = b->tick_ns;
	/* Exits waiting to be collected carry final CPU times: take them
	 * first, so the sum is as fresh as possible. */
	cpu0 = cr_thread_cpu_ns();
	b->pss_cost_ns = 0;
	run->reap_more = cr_tasks_reap(run);
	bg_poll_tasks(run);
	cr_stall_tick_seen();
	/* A PSS judgement is paced by its own cost (pss_judge), not by
	 * the tick's: counted here, the first one near the budget turned
	 * the fast ticks off just as they were needed (3 ms for 256 MiB;
	 * 1 GiB touched in one loop ended at 297-332 MiB under
	 * memory=256MiB on a loaded machine). */
	cpu0 = cr_thread_cpu_ns() - cpu0;
	cpu0 = cpu0 > b->pss_cost_ns ? cpu0 - b->pss_cost_ns : 0;
	if (!run->ending)
		bg_ledger_tick(run);
	if (!run->ending)
		pace_ticks(run, cpu0);
	/* An fd scan in progress goes on a step per tick, at the usual
	 * tick's pace: the fast ticks are memory's and disk's. */
	if (b->fs_on && !run->ending &&
	    b->tick_ns - b->fs_step_ns >=
	    CR_BUDGET_TICK_MS * 1000000ull - CR_BUDGET_TICK_MS * 100000ull) {
		b->fs_step_ns = b->tick_ns;
		bg_fdscan_run(run, CR_BUDGET_FDSCAN_STEP);
	}
	if (!run->ending)
		bg_walk_tick(run);
}

/*
 * Between two of the loop's callbacks: a tick whose time has come, and
 * the wall limit, judged now. The tick and the wall timer are events of
 * the loop's epoll set like any other, taken in the ready list's order:
 * callbacks that each hold the loop for a while (a connect's handshake
 * bounded at CR_GUARD_MS, made by a program's many threads at once) kept
 * both waiting behind them, and a run with a 3 s wall limit ended at
 * 31 s, a 64 MiB one grew to 1 GiB (found by a probing session). A clock
 * read from the vDSO when nothing is due.
 */
void cr_budget_overdue(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t now;

	if (!b || run->ending)
		return;
	now = cr_now_ns();
	if (now - b->tick_ns < b->tick_iv_ns)
		return;
	if (cr_run_ms(run) >= bg_lim(run, CR_LIM_WALL)) {
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "wall",
			   "the wall-time limit fired");
		return;
	}
	on_tick(run, 0, NULL);
	/* The timer not expired yet (its phase is not the tick's): asked
	 * again a tick from now, not at every callback. */
	b->tick_ns = now;
}

/*
 * The loop waits inside its own poll: in a read of a process's maps or
 * smaps_rollup, which takes that process's memory-map lock, and a program
 * whose threads take it for writing without pause (mprotect over a large
 * region, each call ~0.7 s at 64 GiB) kept it waiting for tens of seconds
 * (found by a probing session). What that poll has half made is not
 * touched; fresh reads into locals judge instead. The CPU: each live
 * process's own total (every thread of it, live or gone) or the last
 * tick's figure, the larger; a lower bound. The memory: the leaders'
 * resident sizes, which count a page shared by processes once in each and
 * so err high: judged only once the loop has waited as long as a tree
 * over its RSS sum may wait for a fair judgement anyway.
 */
static void stall_light(struct cr_run *run, uint64_t waited_ns)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;
	uint64_t cpu = 0, rss = 0;

	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *t = &ts->slots[i];

		if (t->tid && t->leader && !bg_ours(t))
			bg_proc_use(t->tid, &cpu, t->b.vm_group && !t->b.rss ?
						 NULL : &rss);
	}
	if (b->cpu_ns > cpu)
		cpu = b->cpu_ns;
	if (cpu / 1000000ull > bg_lim(run, CR_LIM_CPU)) {
		bg_breach(run, CR_LIM_CPU, cpu / 1000000ull);
	} else if (waited_ns >= CR_BUDGET_PSS_MAX_GAP_MS * 1000000ull &&
		   rss > bg_lim(run, CR_LIM_MEMORY)) {
		if (rss > b->peak_rss)
			b->peak_rss = rss;
		bg_breach(run, CR_LIM_MEMORY, rss);
	}
}

void cr_budget_note_peak(struct cr_run *run, uint64_t bytes)
{
	struct cr_budgets *b = run->budgets;

	if (b && bytes > b->peak_rss)
		b->peak_rss = bytes;
}

void cr_budget_stall_tick(struct cr_run *run, uint64_t waited_ns)
{
	struct cr_budgets *b = run->budgets;
	int sig;

	if (!b || run->ending)
		return;
	if ((sig = cr_stall_cancel_pending())) {
		char sn[24];

		cr_run_end(run, CR_ST_CANCELLED, NULL, "cancelled by %s",
			   cr_signame(sig, sn, sizeof(sn)) + 3);
	} else if (cr_run_ms(run) >= bg_lim(run, CR_LIM_WALL)) {
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "wall",
			   "the wall-time limit fired");
	} else if (b->polling) {
		stall_light(run, waited_ns);
	} else {
		b->stalled = true;
		b->stall_ns = waited_ns;
		bg_poll_tasks(run);
		b->stalled = false;
	}
	if (run->ending)
		cr_tasks_kill_all(run);
}

int cr_budget_setup(struct cr_run *run)
{
	struct cr_budgets *b = calloc(1, sizeof(*b));
	struct itimerspec its = {
		.it_interval.tv_nsec = CR_BUDGET_FAST_TICK_MS * 1000000L,
		.it_value.tv_nsec = CR_BUDGET_FAST_TICK_MS * 1000000L,
	};
	int rc;

	if (!b)
		return -ENOMEM;
	run->budgets = b;
	/* The walk's recursion may use the stack the limit allows, less
	 * 256 KiB for the frames above this one and the loop's own. */
	{
		struct rlimit st;
		size_t room = 64u << 20;

		if (getrlimit(RLIMIT_STACK, &st) == 0 &&
		    st.rlim_cur != RLIM_INFINITY && st.rlim_cur < room)
			room = (size_t)st.rlim_cur;
		b->sync_top = (uintptr_t)__builtin_frame_address(0);
		b->sync_room = room > (512u << 10) ? room - (256u << 10) :
			       room / 2;
		b->sync_thread = pthread_self();
	}
	b->timerfd = -1;
	b->tick_ns = cr_now_ns();
	/* Fast ticks at the start: no tick has seen a rate yet, and the
	 * first, a whole slow tick in, saw a burst made at once as
	 * growth from 0 (2 GiB populated in one call reached 3-4 times a
	 * 64 MiB budget at 50 ms; found by a probing session). */
	b->tick_iv_ns = CR_BUDGET_FAST_TICK_MS * 1000000ull;
	b->fast_until_ns = b->tick_ns + CR_BUDGET_START_FAST_MS * 1000000ull;
	b->pace_ns = b->tick_ns;	/* the first tick's growth is from 0 */
	b->pipe_weak = -1;
	b->ino_weak = -1;
	b->sockmem = cr_sockmem_new();
	b->shanon = cr_shanon_new();
	if (!b->sockmem || !b->shanon)
		return -ENOMEM;
	b->page = sysconf(_SC_PAGESIZE);
	b->schedstat = access("/proc/self/schedstat", R_OK) == 0;
	{
		char mm[32];

		b->map_max = bg_read_small("/proc/sys/vm/max_map_count", mm,
					   sizeof(mm)) > 0 ? strtoull(mm, NULL, 10) : 0;
		if (!b->map_max)
			b->map_max = 65530;	/* the kernel's default */
		b->epoll_max = bg_read_small("/proc/sys/fs/epoll/max_user_watches",
					     mm, sizeof(mm)) > 0 ?
			       strtoull(mm, NULL, 10) : 0;
		if (!b->epoll_max)
			b->epoll_max = 1u << 22;	/* unreadable: large */
		b->pipe_max = bg_read_small("/proc/sys/fs/pipe-max-size", mm,
					    sizeof(mm)) > 0 ?
			      strtoull(mm, NULL, 10) : 0;
		if (!b->pipe_max)
			b->pipe_max = 1u << 20;	/* the kernel's default */
		/* Half the user's pipe allowance (0: none set). */
		b->pipeshare = cr_pipeshare_new(
			bg_read_small("/proc/sys/fs/pipe-user-pages-soft", mm,
				      sizeof(mm)) > 0 ?
			strtoull(mm, NULL, 10) / 2 : 0);
		if (!b->pipeshare)
			return -ENOMEM;
		b->ino_full = bg_read_small("/proc/sys/fs/inotify/max_queued_events",
					    mm, sizeof(mm)) > 0 ?
			      strtoull(mm, NULL, 10) : 0;
		if (!b->ino_full || b->ino_full > (1u << 24))
			b->ino_full = 1u << 24;	/* unreadable: large */
		/* each event in a 512-byte object at most, and the
		 * overflow event */
		b->ino_full = (b->ino_full + 1) * 512 + CR_BUDGET_FILE_KERNEL;
		b->ino_watch_cap = bg_read_small("/proc/sys/fs/inotify/max_user_watches",
						 mm, sizeof(mm)) > 0 ?
				   strtoull(mm, NULL, 10) / 4 : 0;
		if (!b->ino_watch_cap)
			b->ino_watch_cap = 8192;	/* the old default */
		b->optmem_max = bg_read_small("/proc/sys/net/core/optmem_max",
					      mm, sizeof(mm)) > 0 ?
				strtoull(mm, NULL, 10) : 0;
		if (!b->optmem_max)
			b->optmem_max = 1u << 20;	/* unreadable: large */
		b->sock_most = CR_BUDGET_SOCK + b->optmem_max +
			       bg_sock_queue_most();
	}
	b->uid = geteuid();
	/* Writable roots: the workspace, the class's and --rw's. One inside
	 * another is counted twice: an error towards stopping. */
	if (run->cfg->cls->fs_write.n + run->cfg->extra_rw.n + 1 >
	    CR_BUDGET_MAX_ROOTS) {
		snprintf(run->message, sizeof(run->message),
			 "more than %d writable roots: the disk budget cannot measure them",
			 CR_BUDGET_MAX_ROOTS);
		return -E2BIG;
	}
	/* Each walked where the rules grant it: at its real path, taken
	 * now as the rules' was (a root named through a link is the
	 * directory it leads to; the walk itself never follows a link). */
	if ((rc = bg_add_walk_root(b, run->cfg, run->cfg->workspace)))
		return rc;
	for (size_t i = 0; !rc && i < run->cfg->cls->fs_write.n; i++)
		rc = bg_add_walk_root(b, run->cfg, run->cfg->cls->fs_write.v[i]);
	for (size_t i = 0; !rc && i < run->cfg->extra_rw.n; i++)
		rc = bg_add_walk_root(b, run->cfg, run->cfg->extra_rw.v[i]);
	if (rc)
		return rc;
	bg_nested_roots_out(b);
	/* What the workspace holds before the run is not the run's. */
	rc = bg_walk_full(run);
	if (rc) {
		if (b->fail_dir)
			snprintf(run->message, sizeof(run->message),
				 "cannot measure the writable root %s for the disk budget: %s is another user's directory that may be written beneath but not listed (make it readable or unsearchable, or leave it out of the roots)",
				 b->fail_root, b->fail_dir);
		else if (rc == -ELOOP)
			snprintf(run->message, sizeof(run->message),
				 "cannot measure the writable root %s for the disk budget: it holds directories nested deeper than %d levels (remove or flatten them outside corral)",
				 b->fail_root ? b->fail_root :
				 run->cfg->workspace, CR_BUDGET_WALK_DEPTH);
		else if (rc == -EOVERFLOW || rc == -EMFILE)
			snprintf(run->message, sizeof(run->message),
				 "cannot measure the writable root %s for the disk budget: %s (raise it, or flatten deep trees outside corral)",
				 b->fail_root ? b->fail_root :
				 run->cfg->workspace,
				 rc == -EMFILE ? "corral ran out of descriptors measuring it (ulimit -n)" :
				 "it holds directories nested deeper beneath a directory made unreadable than corral's stack limit allows (ulimit -s)");
		else
			snprintf(run->message, sizeof(run->message),
				 "cannot measure the writable root %s for the disk budget: %s",
				 b->fail_root ? b->fail_root :
				 run->cfg->workspace, strerror(-rc));
		return rc;
	}
	b->base_bytes = b->w_bytes;
	b->base_files = b->w_files;
	b->w_bytes = b->w_files = 0;
	/* A pass meets more inodes only past the files budget, which ends
	 * the run; and followed objects take descriptors of ours. */
	b->seen_max = bg_lim(run, CR_LIM_FILES) > SIZE_MAX / 4 - b->base_files ?
		      SIZE_MAX / 4 :
		      (size_t)(b->base_files + bg_lim(run, CR_LIM_FILES)) +
		      CR_BUDGET_WALK_PER_TICK;
	{
		size_t pmax = cr_nofile_share(CR_BUDGET_PLACED_MAX);

		b->ws = cr_walkset_new(pmax < 16 ? 16 : pmax);
		if (!b->ws)
			return -ENOMEM;
		/* Corral's own watches: at most half the program's share
		 * (an eighth of the user's allowance). */
		b->lc = cr_listcache_new(b->ino_watch_cap / 2);	/* none:
								 * every pass
								 * lists */
		b->tracking = true;
	}
	b->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (b->timerfd < 0)
		return -errno;
	if (timerfd_settime(b->timerfd, 0, &its, NULL) < 0)
		return -errno;
	b->watch = cr_loop_watch(run, b->timerfd, EPOLLIN, on_tick, NULL);
	return b->watch ? 0 : -ENOMEM;
}

static void cr_budget_free(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return;
	bg_walk_reset(b);
	free(b->stack);
	free(b->listing);
	free(b->fail_dir);
	cr_walkset_free(b->ws);
	cr_listcache_free(b->lc);
	for (size_t i = 0; i < b->nzombies; i++)
		close(b->zombies[i].fd);
	free(b->zombies);
	cr_sockmem_free(b->sockmem);
	cr_shanon_free(b->shanon);
	cr_pipeshare_free(b->pipeshare);
	free(b->sockinos);
	for (size_t i = 0; i < b->nroots; i++)
		free(b->roots[i]);
	if (b->fs_dir)
		closedir(b->fs_dir);
	free(b->fs_seen);
	free(b->hid);
	free(b->phid);
	free(b->vm_seen);
	if (b->pipe_weak >= 0)
		close(b->pipe_weak);
	if (b->ino_weak >= 0)
		close(b->ino_weak);
	for (unsigned i = 0; i < b->nino_seen; i++)
		close(b->ino_seen[i]);
	bg_ep_seen_clear(b);
	if (b->timerfd >= 0)
		close(b->timerfd);
	free(b);
	run->budgets = NULL;
}

/* A breach found after the run ended on its own (the last measurement, or
 * a backstop rlimit that killed the program first) still makes the run
 * limit_exceeded: the budget was spent. */
static void late_breach(struct cr_run *run, enum cr_limit_id id, uint64_t got)
{
	uint64_t end_ms = run->end_ms;

	if (run->status != CR_ST_OK && run->status != CR_ST_PROGRAM_ERROR)
		return;
	run->ending = false;
	bg_breach(run, id, got);
	run->ending = true;
	run->end_ms = end_ms;
}

/* The same, for a last walk that could not measure the roots: a tree
 * made too deep (or unreadable) within the last tick must not end "ok"
 * with the figure of the walk before it. */
static void late_unmeasurable(struct cr_run *run, int rc)
{
	uint64_t end_ms = run->end_ms;

	if (run->status != CR_ST_OK && run->status != CR_ST_PROGRAM_ERROR)
		return;
	run->ending = false;
	bg_unmeasurable(run, rc);
	run->ending = true;
	run->end_ms = end_ms;
}

void cr_budget_finish(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	struct cr_usage *u = &run->usage;
	uint64_t cpu_ms, maxrss = 0;
	int wrc;

	if (!b)
		return;
	if (b->watch) {
		cr_loop_unwatch(run, b->watch);
		b->watch = NULL;
	}
	/* The tree is reaped: every thread's final time is in the dead sum
	 * (threads still in the table, if the kill timed out, at their last
	 * reading). */
	cpu_ms = b->cpu_dead_ns;
	for (size_t i = 0; i < run->tasks.cap; i++)
		if (run->tasks.slots[i].tid) {
			cpu_ms += run->tasks.slots[i].b.cpu_ns;
			bg_task_close_fds(b, &run->tasks.slots[i]);
		}
	cpu_ms /= 1000000ull;
	wrc = bg_walk_full(run);
	if (wrc == 0) {
		b->files = bg_over(b->w_files, b->base_files);
		b->disk = bg_over(b->w_bytes, b->base_bytes);
	}
	if (b->hook_files > b->files)
		b->files = b->hook_files;
	if (b->hook_bytes > b->disk)
		b->disk = b->hook_bytes;
	u->cpu_ms = cpu_ms;
	/* The kernel's own peak of any one process (RUSAGE_CHILDREN covers
	 * the whole reaped tree) catches a peak between two ticks: memory
	 * touched and unmapped again before any tick or exit could see it.
	 * It is an RSS, mapped files' clean pages included: once a tick
	 * had to judge the tree (pss_judged), its figure, which leaves
	 * those out (rollup_judged), is the one reported. */
	{
		struct rusage ru, self;

		if (!b->pss_judged && getrusage(RUSAGE_CHILDREN, &ru) == 0 &&
		    (uint64_t)ru.ru_maxrss * 1024 > b->peak_rss) {
			b->peak_rss = (uint64_t)ru.ru_maxrss * 1024;
			/* The first child shared corral's memory until its
			 * exec, and exec keeps the larger of the two peaks:
			 * a figure up to corral's own peak may be corral's. */
			if (getrusage(RUSAGE_SELF, &self) == 0 &&
			    ru.ru_maxrss > self.ru_maxrss)
				maxrss = b->peak_rss;
		}
	}
	u->peak_memory_bytes = b->peak_rss;
	if (run->tasks.peak_tasks > b->peak_tasks)
		b->peak_tasks = run->tasks.peak_tasks;
	if (run->tasks.peak_leaders > b->peak_procs)
		b->peak_procs = run->tasks.peak_leaders;
	u->processes = b->peak_procs;
	u->tasks = b->peak_tasks;
	/* What the tree held when it was stopped may be gone with it (a
	 * file held only in a socket's queue): report the most seen. */
	u->disk_bytes = b->disk > b->disk_peak ? b->disk : b->disk_peak;
	u->files = b->files;
	if (cpu_ms > bg_lim(run, CR_LIM_CPU))
		late_breach(run, CR_LIM_CPU, cpu_ms);
	else if (maxrss > bg_lim(run, CR_LIM_MEMORY) && !b->pss_judged)
		/* One process alone held more than the whole tree may, by
		 * RSS. Judged so only when no tick ever had to weigh the
		 * tree by PSS: then sharing could explain it (a page shared
		 * with processes outside the run counts in RSS whole). */
		late_breach(run, CR_LIM_MEMORY, maxrss);
	else if (wrc < 0)
		late_unmeasurable(run, wrc);
	else if (b->files > bg_lim(run, CR_LIM_FILES))
		late_breach(run, CR_LIM_FILES, b->files);
	else if (b->disk > bg_lim(run, CR_LIM_DISK))
		late_breach(run, CR_LIM_DISK, b->disk);
	cr_budget_free(run);
}
