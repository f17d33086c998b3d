/* tracer/budget.c: measures and enforces the cpu, memory, processes, disk and
 * files budgets over the whole tree; every breach ends the run. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <sys/timerfd.h>
#include <time.h>
#include <linux/kcmp.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "budget.h"
#include "shanon.h"
#include "pipeshare.h"
#include "fs/fs.h"
#include "net/net.h"
#include "ipc/sysv.h"

/*
 * Where the numbers come from, and why they can be trusted:
 *
 * - Every figure is read from the kernel (/proc/TID/... of a task that is our
 *   unreaped tracee, or fstatat on the workspace), never from anything the
 *   program writes. A tid in the task table cannot be recycled before we
 *   reap it, so /proc/TID is always the task we mean.
 * - CPU is counted per thread: a thread's final time is read while it is a
 *   zombie waiting for us (cr_budget_on_exit), so a task ended by SIGKILL
 *   or never waited for (SIGCHLD ignored) loses no time. Live threads are
 *   read every tick. When a non-leader thread execs, the old leader is
 *   released by the kernel without an exit report: its time is read at
 *   its exit stop (tasks.c), which comes first, so only what it runs
 *   between that stop and its release (microseconds) is not counted;
 *   RLIMIT_CPU, which counts the whole process across exec, bounds what
 *   repeating it could hide.
 * - Process slots are reserved in the fork/vfork/clone notification, before
 *   the kernel makes the task, and held until the ptrace event shows the
 *   task in the table or the creating thread shows the call is over.
 */

struct cr_budgets {
	int timerfd;			/* owned */
	uint64_t tick_ns;		/* when the last tick began */
	uint64_t tick_iv_ns;		/* the timer's interval now */
	uint64_t fs_step_ns;		/* when the fd scan last stepped */
	uint64_t pace_rss, pace_ns;	/* memory, and when, at the last tick */
	uint64_t fast_until_ns;		/* fast ticks at least until then */
	uint64_t disk_fast_until_ns;	/* ...of them, the walk's until then */
	bool quick;			/* 10 ms ticks, a full reading each 50 */
	uint64_t full_ns;		/* when the last full reading began */
	uint64_t quick_base;		/* its leaders' RSS sum */
	uint64_t vm_next;		/* the last address-space group made */
	uint64_t *vm_seen;		/* groups counted by this reading */
	size_t nvm_seen, capvm_seen;
	uint64_t pass_begun_ns;		/* when the walk's last pass began */
	uint64_t pss_cost_ns;		/* CPU of this tick's PSS judgement */
	struct cr_watch *watch;		/* borrowed from the loop */
	long page;
	bool schedstat;			/* /proc/.../schedstat is readable */
	size_t cached;			/* /proc descriptors kept open */

	/* processes */
	uint64_t pending;		/* reservations not yet in the table */
	uint64_t pending_procs;		/* ...of them for processes */
	pid_t gone_early[CR_BUDGET_GONE_EARLY];	/* ring, 0: empty */
	size_t gone_next;
	struct cr_zombie {
		int fd;			/* owned pidfd */
		pid_t pid;
	} *zombies;			/* unreaped zombies */
	size_t nzombies, zcap;
	uint64_t peak_tasks, peak_procs;

	/* cpu */
	uint64_t cpu_dead_ns;		/* final times of threads gone, and
					 * CPU charged for work done for them */
	uint64_t cpu_ns;		/* dead + live, last computed */

	/* memory */
	uint64_t rss, peak_rss;
	uint64_t tick;
	size_t cpu_rr;			/* where a tick's share of the threads'
					 * CPU reads starts (poll_tasks) */
	uint64_t exit_rss;		/* seen at exit stops since the tick */
	bool pss_judged;		/* a tick's RSS sum was over the budget */
	/* The last PSS judgement that found the tree under its RSS sum:
	 * between judgements its result, plus every process's growth since,
	 * stands in for the tree's PSS (pss_estimate). */
	bool pss_have;
	uint64_t pss_last, pss_gen;
	uint64_t pss_next_ns;		/* no free judgement before this */

	/* disk and files: an incremental walk of the writable roots */
	char *roots[CR_BUDGET_MAX_ROOTS];	/* owned: real paths at set-up */
	bool root_named[CR_BUDGET_MAX_ROOTS];	/* absent then: a name, opened
						 * without following links */
	size_t nroots, root;		/* root: the next to open */
	bool in_pass;
	uint64_t pass_cpu_ns, next_pass_ns;
	uint64_t deleted, fdscan_next_ns;	/* unlinked-but-open bytes */
	uint64_t fdscan_soon_ns;	/* the earliest its cost allows */
	uint64_t rescan_next_ns;	/* no cr_budget_rescan_now before */
	bool fs_on;			/* an fd scan in progress: */
	size_t fs_slot;			/* the task slot to read next */
	DIR *fs_dir;			/* owned: the fd table being read */
	pid_t fs_tid;			/* ...the task whose table it is */
	uint64_t fs_total, fs_cpu;
	struct cr_fdseen { dev_t dev; ino_t ino; } *fs_seen;	/* owned;
					 * hash set, {0, 0} empty */
	size_t fs_nseen, fs_seencap;	/* cap: a power of two */
	uid_t uid;
	struct cr_dir **stack;		/* owned: the pass's open directories */
	int depth, stackcap;
	uintptr_t sync_top;		/* the loop thread's stack near its base */
	size_t sync_room;		/* ...and how far walk_sync may use it */
	pthread_t sync_thread;
	uint64_t w_bytes, w_files;	/* the pass in progress */
	struct cr_walkset *ws;		/* owned: what the pass met and
					 * what moved while it ran */
	size_t seen_max;		/* inodes a pass may remember */
	bool tracking;			/* a pass spread over ticks: the
					 * loop may move things meanwhile */
	bool redo;			/* the pass could not follow what
					 * moved: redo it in one go */
	bool fixing;			/* measuring what the pass missed */
	size_t fix_left;		/* ...at most this many entries more */
	uint64_t base_bytes, base_files;
	uint64_t disk, files;		/* added, by the last complete pass */
	uint64_t hook_files, hook_bytes;
	/* Allocations charged before any measure saw them: made since the
	 * current fd scan started (al_pend, al_snap of it at the start), and
	 * seen by a completed scan but not yet by a completed walk. */
	uint64_t al_pend, al_snap, al_scan;
	/* Files without a name the ledger holds and the run's /dev/shm
	 * objects, measured at every tick (ledger_tick): their bytes at
	 * the last complete fd scan (lq_scan, lq_scan_shm), at the scan
	 * whose figure b->disk holds (lq_in, lq_in_shm). */
	uint64_t lq_scan, lq_scan_shm, lq_in, lq_in_shm;
	uint64_t lq_shm, lq_shm_next_ns;	/* /dev/shm's last measure, and
					 * no other at a tick before this */
	uint64_t lq_held_next_ns;	/* ...and the ledger's */
	uint64_t pass_deleted;		/* the fd scan's part of the last
					 * complete pass's figure */
	uint64_t lq_next_ns;		/* no confirmation before this */
	uint64_t disk_est;		/* disk judged at this tick, with the
					 * growth ledger_tick saw */
	uint64_t pace_disk;		/* ...and at the last tick */
	uint64_t disk_peak;		/* the most measured during the run
					 * (charges not yet measured are
					 * judged, not recorded: a run
					 * that allocates and frees small
					 * files all day holds few) */
	const char *fail_root;		/* borrowed from roots: where the
					 * last failed pass stopped */
	char *fail_dir;			/* owned: ...at a directory of
					 * another user the run may write
					 * beneath and we may not list */

	/* memory out of any RSS: socket queues (sockmem.c) */
	struct cr_sockmem *sockmem;	/* owned */
	/* ...and shared anonymous objects, from their creation (shanon.c) */
	struct cr_shanon *shanon;	/* owned */
	uint64_t shanon_next_ns;	/* no tick's scan of the maps before this */
	uint64_t shanon_scans;		/* scans made (cr_task's shanon_gen) */
	uint64_t sockbytes;		/* by the last fd scan */
	bool sock_unmeasurable;		/* the kernel has no sock_diag */
	uint64_t *sockinos;		/* the fd scan's socket inodes */
	size_t nsock, sockcap;
	/* ...and pipe buffers (fdscan_pipe) and open files' own memory */
	uint64_t filebytes;		/* by the last complete fd scan */
	int pipe_weak;			/* owned: every pipe end the run made,
					 * followed without a reference
					 * (fs/weak.c), or -1 */
	uint64_t pipe_seq;		/* ...numbered as made */
	uint64_t pipe_seq_scan;		/* ...the first the scan under way
					 * may not have seen in a table */
	uint64_t pipe_max;		/* fs.pipe-max-size */
	struct cr_pipeshare *pipeshare;	/* owned: the run's pipe slots */
	uint64_t pipe_refresh_next_ns;	/* ...no refresh before, when the */
	bool pipe_refresh_kept;		/* last one found them mostly alive */
	dev_t pipe_devs[CR_BUDGET_PIPE_DEVS];	/* pipefs, and each
					 * filesystem of a FIFO followed: an
					 * entry's data is its seq << 6 and
					 * its index here */
	unsigned npipe_devs;
	uint64_t *hid, *phid;		/* owned: pipes no table showed in
					 * the scan under way, and (sorted)
					 * in the last complete one */
	size_t nhid, caphid, nphid, phid_cap;
	int ino_weak;			/* owned: every inotify instance the
					 * run made, followed without a
					 * reference (fs/weak.c), or -1 */
	uint64_t ino_seq;		/* ...numbered as made */
	uint64_t ino_full;		/* one instance's fullest queue */
	uint64_t ino_watches;		/* the run's watches alive, at most */
	uint64_t ino_watch_cap;		/* ...past which none is added */
	uint64_t ino_watch_during;	/* ...added since the scan began */
	uint64_t fs_watches;		/* the scan under way's count */
	bool fs_watch_exact;		/* ...read from every instance */
	uint64_t ino_cap_next_ns;	/* no count at the cap before this */
	int ino_seen[CR_BUDGET_INOTIFY_MAX * 2];	/* owned: a copy of
					 * each instance the scan under way
					 * met in a table, told apart by kcmp */
	unsigned nino_seen;
	uint64_t epollbytes;		/* ...and epoll watches (fdscan_anon) */
	uint64_t fs_epoll;		/* the scan under way's watches */
	int ep_seen[CR_BUDGET_EPOLL_DEAR];	/* owned: a copy of each
					 * epoll instance whose fdinfo was dear
					 * to read in the scan under way */
	unsigned nep_seen;
	uint64_t fs_last_cpu;		/* the last complete scan's CPU */
	uint64_t epoll_max;		/* fs.epoll.max_user_watches */
	uint64_t fs_files;		/* the scan under way's sum */
	uint64_t fs_start_ns;		/* when the scan under way began */
	/* ...and the mappings of every process (count_mappings) */
	uint64_t map_max;		/* vm.max_map_count */
	uint64_t vma_next_ns;		/* no count before this */
	size_t vma_cursor;		/* the slot after the last read */
	/* ...and byte-range lock records (count_locks) */
	uint64_t lk_base;		/* records at the last count, bound */
	dev_t anon_dev;			/* the kernel's one anonymous inode, */
	ino_t anon_ino;			/* taken at the first count */
	uint64_t lk_posix;		/* POSIX lock calls since */
	uint64_t lk_ofd;		/* OFD lock calls, ever */
	uint64_t lk_next_ns;		/* no count for tightness before */
	uint64_t mem_nolock;		/* the last poll's sum without them */
	/* ...and kernel objects the program made (cr_budget_on_kernel_object) */
	uint64_t kobj_bytes;		/* for the run's life */
	uint64_t kobj_new;		/* ...of them since the last poll */
	uint64_t ipc_new;		/* System V charges since the last poll */
	uint64_t shanon_new;		/* shared anonymous charges, the same */
	uint64_t poll_new;		/* blocked polls' charges, the same */
	uint64_t acl_bytes;		/* inherited ACLs charged (cr_budget_on_create) */
	uint64_t ll_rules;		/* Landlock rules added, ever */
	uint64_t optmem_max;		/* net.core.optmem_max */
	uint64_t sock_most;		/* the most one socket can hold: its
					 * queues at their largest, its own
					 * memory and its option memory */
};

static uint64_t lim(const struct cr_run *run, enum cr_limit_id id)
{
	return run->cfg->limits.v[id];
}

static void breach_how(struct cr_run *run, enum cr_limit_id id, uint64_t got,
		       bool refused)
{
	char a[32], b[32];

	if (run->ending)
		return;
	cr_limit_format(id, got, a, sizeof(a));
	cr_limit_format(id, lim(run, id), b, sizeof(b));
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

static void breach(struct cr_run *run, enum cr_limit_id id, uint64_t got)
{
	breach_how(run, id, got, false);
}

/* Threads are bounded by the processes budget, times a factor. */
static void breach_threads(struct cr_run *run, uint64_t got, uint64_t max)
{
	if (run->ending)
		return;
	cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(CR_LIM_PROCESSES),
		   "the processes budget is spent: a thread creation was refused (it would make %" PRIu64 " tasks alive at once; threads are bounded at %d per process of the budget, %" PRIu64 " in all)",
		   got, CR_BUDGET_THREADS_PER_PROC, max);
}

/* ---- reading /proc ---- */

static int read_small(const char *path, char *buf, size_t len)
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

/* Read a /proc file of a task through a descriptor kept open across
 * ticks (*slot holds fd + 1, 0 for none): opening a /proc file costs four
 * times a pread of an open one. At most CR_BUDGET_FD_CACHE stay open; past
 * that each read opens and closes. */
static int read_task_file(struct cr_budgets *b, int *slot, const char *path,
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
		return read_small(path, buf, len);
	n = pread(*slot - 1, buf, len - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

static void task_close_fds(struct cr_budgets *b, struct cr_task *t)
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
static int stat_cpu_ns(const char *buf, uint64_t *ns)
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

/* A thread's own CPU time (user + system), in ns. schedstat's first field
 * is the scheduler's exact runtime; /proc/.../stat's utime + stime (clock
 * ticks) is the fallback on kernels built without it. */
static int read_thread_cpu(struct cr_budgets *b, struct cr_task *t,
			   uint64_t *ns)
{
	char path[64], buf[1024];
	unsigned long long ut;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", t->tid, t->tid,
		 b->schedstat ? "schedstat" : "stat");
	rc = read_task_file(b, &t->b.fd_cpu, path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	if (b->schedstat)
		return sscanf(buf, "%llu", &ut) == 1 ? (*ns = ut, 0) : -EIO;
	return stat_cpu_ns(buf, ns);
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
	rc = read_task_file(b, &t->b.fd_status, path, buf, sizeof(buf));
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
static uint64_t sock_queue_most(void)
{
	static const char *const files[2][2] = {
		{ "/proc/sys/net/core/wmem_max", "/proc/sys/net/ipv4/tcp_wmem" },
		{ "/proc/sys/net/core/rmem_max", "/proc/sys/net/ipv4/tcp_rmem" },
	};
	uint64_t sum = 0;

	for (int i = 0; i < 2; i++) {
		char buf[128], *p;
		uint64_t core = 0, tcp = 0;

		if (read_small(files[i][0], buf, sizeof(buf)) > 0)
			core = 2 * strtoull(buf, NULL, 10);
		if (read_small(files[i][1], buf, sizeof(buf)) > 0 &&
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
	while ((got = read(fd, buf, sizeof(buf))) > 0) {
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
static int read_rss(struct cr_budgets *b, struct cr_task *t, uint64_t *bytes,
		    uint64_t *vsize)
{
	char path[64], buf[256];
	unsigned long long size, res;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/statm", t->tid, t->tid);
	rc = read_task_file(b, &t->b.fd_mem, path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	if (sscanf(buf, "%llu %llu", &size, &res) != 2)
		return -EIO;
	*bytes = res * (uint64_t)b->page;
	*vsize = size * (uint64_t)b->page;
	return 0;
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

static bool measured(struct cr_run *run, const struct cr_task *t, int rc)
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

static pid_t read_tgid(pid_t tid)
{
	char path[64], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tid, tid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nTgid:");
	return p ? (pid_t)atoi(p + 6) : 0;
}

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

static void note_peaks(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	if (tasks_alive(run) > b->peak_tasks)
		b->peak_tasks = tasks_alive(run);
	if (procs_alive(run) > b->peak_procs)
		b->peak_procs = procs_alive(run);
}

/* A process we reaped as its tracer stays a zombie until its real parent
 * (a task of the tree) waits for it: it holds a pid, so it holds a slot,
 * or a program that never waits could fill the host's pid space. Its pidfd
 * tells when the pid is really free (signal 0 then fails with ESRCH). */
static void prune_zombies(struct cr_budgets *b)
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

void cr_budget_memory_view(const struct cr_run *run, uint64_t *limit,
			   uint64_t *used)
{
	const struct cr_budgets *b = run->budgets;

	*limit = lim(run, CR_LIM_MEMORY);
	*used = b ? b->rss : 0;
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
	uint64_t max = lim(run, CR_LIM_PROCESSES);
	uint64_t max_tasks = max > UINT64_MAX / CR_BUDGET_THREADS_PER_PROC ?
			     UINT64_MAX : max * CR_BUDGET_THREADS_PER_PROC;

	if (!b || !t)
		return -EAGAIN;	/* fail closed: we do not know this task */
	/* A thread runs one call at a time: a reservation it still holds is
	 * from a creation that failed (or is being restarted). */
	settle(run, t);
	if ((!thread && procs_alive(run) + 1 > max) ||
	    tasks_alive(run) + 1 > max_tasks)
		prune_zombies(b);
	if (!thread && procs_alive(run) + 1 > max) {
		breach(run, CR_LIM_PROCESSES, procs_alive(run) + 1);
		return -EAGAIN;
	}
	if (tasks_alive(run) + 1 > max_tasks) {
		breach_threads(run, tasks_alive(run) + 1, max_tasks);
		return -EAGAIN;
	}
	t->b.creating = true;
	t->b.creating_proc = !thread;
	b->pending++;
	if (!thread)
		b->pending_procs++;
	note_peaks(run);
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

void cr_budget_on_stop(struct cr_run *run, struct cr_task *t)
{
	settle(run, t);
}

static void poll_tasks(struct cr_run *run);

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
static bool ours(const struct cr_task *t)
{
	return t->initial && !t->execed;
}

static void memory_leaving(struct cr_run *run, struct cr_budgets *b,
			   struct cr_task *t, bool any_thread)
{
	uint64_t v, vs, pt = 0;

	if (run->ending || ours(t) ||
	    (!any_thread && !t->leader && t->b.tgid &&
	     cr_tasks_find(&run->tasks, t->b.tgid)))
		return;
	/* An address space another process keeps is not dropped. */
	if (t->leader && vm_shared(run, t))
		return;
	if (read_rss(b, t, &v, &vs) < 0)
		return;		/* gone: nothing left to hold */
	/* Its page tables, where they could matter (poll_tasks). */
	if (b->rss + b->exit_rss + v + CR_BUDGET_PTE_BOUND * vs >
	    lim(run, CR_LIM_MEMORY) && read_pte(b, t, &pt) < 0)
		pt = 0;
	b->exit_rss += v + pt;
	if (b->rss + b->exit_rss > lim(run, CR_LIM_MEMORY))
		poll_tasks(run);
}

void cr_budget_on_exit(struct cr_run *run, pid_t tid)
{
	struct cr_budgets *b = run->budgets;
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);
	uint64_t ns;

	if (!b || !t)
		return;
	if (read_thread_cpu(b, t, &ns) == 0 && ns > t->b.cpu_ns)
		t->b.cpu_ns = ns;
	memory_leaving(run, b, t, false);
}

void cr_budget_before_exec(struct cr_run *run, pid_t tid)
{
	struct cr_budgets *b = run->budgets;
	struct cr_task *t = cr_tasks_find(&run->tasks, tid);

	if (b && t)
		memory_leaving(run, b, t, true);
}

void cr_budget_on_gone(struct cr_run *run, struct cr_task *t)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return;
	settle(run, t);
	task_close_fds(b, t);
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
	task_close_fds(b, leader);
	task_close_fds(b, former);
	b->cpu_dead_ns += leader->b.cpu_ns;
	leader->b.cpu_ns = former->b.cpu_ns;
	former->b.cpu_ns = 0;
	settle(run, former);
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
	if (read_small(path, buf, sizeof(buf)) < 0 ||
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
static int tree_pss(struct cr_run *run, uint64_t *bytes)
{
	struct cr_tasks *ts = &run->tasks;
	uint64_t sum = 0;

	for (size_t i = 0; i < ts->cap; i++) {
		const struct cr_task *t = &ts->slots[i];
		char path[64], buf[2048], *p;
		int rc;

		if (!t->tid || !t->leader || !t->b.rss)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", t->tid);
		rc = read_small(path, buf, sizeof(buf));
		if (rc == -ESRCH || rc == -ENOENT)
			continue;	/* gone since the tick's reading */
		if (rc < 0)
			return rc;
		p = strstr(buf, "\nPss:");
		if (!p)
			return -EIO;
		sum += rollup_judged(buf, strtoull(p + 5, NULL, 10), t->tid) * 1024;
	}
	*bytes = sum;
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
	uint64_t now = cr_now_ns(), t0, cost, wait, pss;
	bool early = now < b->pss_next_ns;
	int rc;

	if (b->pss_have && early) {
		uint64_t est = pss_estimate(run);

		if (est < rss && est + extra <= lim(run, CR_LIM_MEMORY))
			return est;
	}
	t0 = cr_thread_cpu_ns();
	rc = tree_pss(run, &pss);
	cost = cr_thread_cpu_ns() - t0;
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

static uint64_t lock_bound(const struct cr_budgets *b);
static bool locks_fit(struct cr_run *run);
static void locks_tighten(struct cr_run *run);
static int charge_for_good(struct cr_run *run, uint64_t bytes);

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
	bool paced = now < b->vma_next_ns;
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
			if (measured(run, t, read_vmas(t, &v, &s, &si))) {
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
		if (read_small(path, buf, sizeof(buf)) < 0 ||
		    stat_cpu_ns(buf, &ns) < 0)
			continue;	/* gone, or unreadable: not counted */
		sum += ns;
	}
	if (sum / 1000000ull <= lim(run, CR_LIM_CPU))
		return 0;
	breach(run, CR_LIM_CPU, sum / 1000000ull);
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

		if (!t->tid || ours(t) || t->leader != !pass)
			continue;
		if (pass) {
			if (!t->b.tgid)
				t->b.tgid = read_tgid(t->tid);
			l = t->b.tgid ? cr_tasks_find(ts, t->b.tgid) : NULL;
			if (l && l->b.shanon_gen == b->shanon_scans)
				continue;
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%d/maps", t->tid,
			 t->tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		rc = fd < 0 ? -errno : cr_shanon_scan_fd(b->shanon, fd);
		if (fd >= 0)
			close(fd);
		/* Lines read: the process is seen (a leader that exited
		 * shows none). */
		if (rc > 0 && !pass)
			t->b.shanon_gen = b->shanon_scans;
		else if (rc > 0 && l)
			l->b.shanon_gen = b->shanon_scans;
		if (rc < 0 && !measured(run, t, rc))
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
	bool via_thread = false;
	size_t k = 0, from = 0, reads = SIZE_MAX;
	int quick;

	b->tick++;
	b->exit_rss = 0;
	prune_zombies(b);
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
		    measured(run, t, read_thread_cpu(b, t, &v)) &&
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
		if (t->leader && !ours(t) &&
		    measured(run, t, read_rss(b, t, &v, &vs)) && v) {
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
			t->b.tgid = read_tgid(t->tid);
		l = t->b.tgid ? cr_tasks_find(ts, t->b.tgid) : NULL;
		if (l && l->b.mem_tick == b->tick)
			continue;
		if (measured(run, t, read_rss(b, t, &v, &vs)) && v) {
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
	    lim(run, CR_LIM_MEMORY)) {
		for (size_t i = 0; i < ts->cap; i++) {
			struct cr_task *t = &ts->slots[i];
			uint64_t v;

			if (t->tid && t->b.size_tick == b->tick &&
			    measured(run, t, read_pte(b, t, &v)))
				pte += v;
		}
	}
	/* Mappings, when their bound could carry the tree past it; and in
	 * a run that made a TCP socket always, since one mapped socket can
	 * hold more than any budget (read_vmas). */
	if (rss + b->sockbytes + b->filebytes + b->epollbytes + pte + vbound >
	    lim(run, CR_LIM_MEMORY) || cr_sockmem_tcp_made(b->sockmem))
		pte += count_mappings(run);
	/* Each task's kernel stack and descriptors (task_struct and the
	 * rest): unreclaimable kernel memory no RSS shows, ~24 KiB a task
	 * measured (2040 bare threads, 16 KiB of stack and ~8 KiB of slab
	 * each, held 48 MiB under memory=8MiB; found by a probing session).
	 * Like page tables and socket bytes, never shared: outside the PSS
	 * judgement, but part of what calls for one. */
	locks_tighten(run);
	if (cr_shanon_active(b->shanon) && cr_now_ns() >= b->shanon_next_ns)
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
	if (rss + extra > lim(run, CR_LIM_MEMORY) && !via_thread) {
		b->pss_judged = true;
		rss = pss_judge(run, rss, extra);
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
	if (rss > lim(run, CR_LIM_MEMORY) &&
	    b->mem_nolock <= lim(run, CR_LIM_MEMORY) && locks_fit(run))
		rss = b->mem_nolock + lock_bound(b);
	b->cpu_ns = b->cpu_dead_ns + live;
	b->rss = rss;
	if (rss > b->peak_rss)
		b->peak_rss = rss;
	note_peaks(run);
	if (b->cpu_ns / 1000000ull > lim(run, CR_LIM_CPU))
		breach(run, CR_LIM_CPU, b->cpu_ns / 1000000ull);
	else if (rss > lim(run, CR_LIM_MEMORY))
		breach(run, CR_LIM_MEMORY, rss);
}

/* ---- disk and files: the workspace walk ----
 *
 * The program can change the workspace while we walk it. The walk opens
 * each directory with O_NOFOLLOW | O_DIRECTORY relative to its parent's fd,
 * so a directory swapped for a symlink is never followed out of the
 * workspace, and lstat-like fstatat(AT_SYMLINK_NOFOLLOW) sizes the entries.
 * A pass spread over ticks lets the loop move entries between two of its
 * slices: one met twice counts once (the pass keeps the inodes it met), and
 * one given a name behind the walker is measured at the end of the pass
 * (walk_fixup); the hooks of the filesystem layer make creation counts
 * exact. A directory the program made unreadable is measured with
 * the owner's bits lent for the moment (walk_locked); one we still cannot
 * read would hide what is below it, so it stops the run (fail closed),
 * unless it is another user's that the run cannot even search
 * (walk_unlisted). */

static void walk_reset(struct cr_budgets *b)
{
	while (b->depth > 0)
		cr_dir_close(b->stack[--b->depth]);
	b->w_bytes = b->w_files = 0;
	b->root = 0;
	b->in_pass = false;
	b->redo = false;
	b->fixing = false;
	if (b->ws)
		cr_walkset_clear(b->ws, b->seen_max);
}

/* A directory's reading buffer: large near the roots, where directories
 * are wide, small deep down, where a configure check's chain of hundreds
 * of nested directories holds one entry each (an open DIR took 32 KiB). */
static size_t walk_buf(int depth)
{
	return depth < 32 ? 32768 : 2048;
}

static int walk_push(struct cr_budgets *b, int fd)
{
	struct cr_dir *d;

	if (b->depth >= CR_BUDGET_WALK_DEPTH) {
		close(fd);
		return -ELOOP;
	}
	if (b->depth == b->stackcap) {
		int cap = b->stackcap ? b->stackcap * 2 : 64;
		struct cr_dir **g = realloc(b->stack, (size_t)cap * sizeof(*g));

		if (!g) {
			close(fd);
			return -ENOMEM;
		}
		b->stack = g;
		b->stackcap = cap;
	}
	d = cr_dir_open(fd, walk_buf(b->depth));
	if (!d)
		return -errno;
	b->stack[b->depth++] = d;
	return 0;
}

static uint64_t entry_bytes(const struct stat *st)
{
	uint64_t bytes = (uint64_t)st->st_blocks * 512;

	/* A file with several names is shared by them. */
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1)
		bytes /= st->st_nlink;
	return bytes;
}

static int walk_sync(struct cr_budgets *b, int fd, int depth);

/* Count an entry the pass meets. False when the pass met its inode before
 * (it was moved while the pass ran) and must not count it again: a
 * directory is then not entered again either. A file of several names
 * adds its share per name, never more than its blocks in all. */
static bool count_entry(struct cr_budgets *b, const struct stat *st)
{
	uint64_t blocks = (uint64_t)st->st_blocks * 512;
	uint64_t add = entry_bytes(st), *counted;
	int rc;

	if (b->fixing) {
		if (!b->fix_left) {
			b->redo = true;
			return false;
		}
		b->fix_left--;
	}
	if (!b->tracking) {
		b->w_files++;
		b->w_bytes += add;
		return true;
	}
	rc = cr_walkset_see(b->ws, st->st_dev, st->st_ino, &counted);
	if (rc < 0) {
		/* Cannot remember it: counted as met, and the pass is
		 * redone in one go at its end. */
		b->redo = true;
		b->w_files++;
		b->w_bytes += add;
		return true;
	}
	if (rc == 1 && (S_ISDIR(st->st_mode) || st->st_nlink <= 1))
		return false;
	if (add > blocks - (*counted < blocks ? *counted : blocks))
		add = blocks - (*counted < blocks ? *counted : blocks);
	*counted += add;
	b->w_files++;
	b->w_bytes += add;
	return true;
}

/* A directory of ours whose owner may not list or search it. */
static bool locked(const struct stat *st, uid_t uid)
{
	return S_ISDIR(st->st_mode) && st->st_uid == uid &&
	       (st->st_mode & (S_IRUSR | S_IXUSR)) != (S_IRUSR | S_IXUSR);
}

/* A directory of the run's own that the program made unreadable (test
 * suites chmod 0 their own directories to test error paths). We run as the
 * same uid without DAC overrides, so we lend ourselves the owner's read and
 * search bits on the inode itself (an O_PATH fd, never the name, which the
 * program may move), measure everything beneath in one go and put the mode
 * back. Synchronous on purpose: every call the program makes on a path is
 * performed by this thread, so none of them can meet the lent mode. */
static int walk_lent(struct cr_budgets *b, int opath, int depth)
{
	char p[64];
	struct stat st;
	int fd, rc;

	if (fstat(opath, &st) < 0 || st.st_uid != b->uid)
		return -EACCES;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", opath);
	if (chmod(p, (st.st_mode & 07777) | S_IRUSR | S_IXUSR) < 0)
		return -errno;
	fd = openat(opath, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = fd < 0 ? -errno : walk_sync(b, fd, depth);
	if (chmod(p, st.st_mode & 07777) < 0 && !rc)
		rc = -errno;
	return rc;
}

static int walk_locked(struct cr_budgets *b, int parent, const char *name,
		       int depth)
{
	int opath, rc;

	opath = openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (opath < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ?
		       0 : -errno;
	rc = walk_lent(b, opath, depth);
	close(opath);
	return rc;
}

/* A directory of another user that we may not list (opath: an O_PATH
 * handle of it). Not listing it is safe only if the run cannot reach
 * beneath it either: every path call of the run that makes, opens for
 * writing, links or renames is performed by this supervisor, with these
 * very credentials, so when we may not search the directory, no name
 * beneath it can be made, grown or linked by the run, and it is skipped
 * (0). One we may search but not list (a drop box: 0733, 1733, or 0711
 * over a file the run may write) lets the run create and grow files by
 * name that no pass would ever see, its names divide the blocks of files
 * linked there, and what was left there before the run can grow too: the
 * pass cannot measure the roots (-EACCES, fail closed; its path is kept
 * for the message). The kernel judges the search itself (a lookup of "."
 * in it), groups and ACLs included. */
static int other_unlisted(struct cr_budgets *b, int opath)
{
	char p[64], path[PATH_MAX];
	ssize_t n;
	int fd = openat(opath, ".", O_PATH | O_CLOEXEC);

	if (fd < 0)
		return errno == EACCES ? 0 : -errno;
	close(fd);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", opath);
	n = readlink(p, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = 0;
	free(b->fail_dir);
	b->fail_dir = n > 0 ? strdup(path) : NULL;	/* for the message */
	return -EACCES;
}

/* A directory the walk met and may not open for listing (EACCES): one of
 * ours, whatever its name now leads to, is measured with the owner's bits
 * lent (the program may have made it unreadable to hide what is below);
 * one of another user's as other_unlisted says. */
static int walk_unlisted(struct cr_budgets *b, int parent, const char *name,
			 int depth)
{
	struct stat st;
	int opath, rc;

	opath = openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (opath < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ?
		       0 : -errno;	/* replaced meanwhile */
	if (fstat(opath, &st) < 0)
		rc = -errno;
	else if (st.st_uid == b->uid)
		rc = walk_lent(b, opath, depth);
	else
		rc = other_unlisted(b, opath);
	close(opath);
	return rc;
}

/* Measure a whole subtree now (fd is consumed); the counts go to the pass
 * in progress. */
/* One entry of the directory dfd, at depth (the directory's): counted,
 * and a directory walked to its end. 0 or -errno. */
static int walk_entry(struct cr_budgets *b, int dfd, const char *name,
		      int depth)
{
	struct stat st;
	int sub;

	if (cr_quiet_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!count_entry(b, &st) || !S_ISDIR(st.st_mode))
		return 0;
	if (locked(&st, b->uid))
		return walk_locked(b, dfd, name, depth + 1);
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub >= 0)
		return walk_sync(b, sub, depth + 1);
	if (errno == EACCES)
		return walk_unlisted(b, dfd, name, depth + 1);
	return errno != ENOENT && errno != ENOTDIR && errno != ELOOP ?
	       -errno : 0;
}

/* walk_sync recurses once per level beneath a directory made unreadable
 * (its mode lent), on the loop thread's stack: a tree 4090 levels deep
 * under a chmod-000 directory overflowed a 1 MiB stack (`ulimit -s 1024`,
 * the supervisor killed by SIGSEGV, the lent mode left; found by a probing
 * session). Past the room the stack limit leaves, the tree is not
 * measurable: -EOVERFLOW, and the run ends (fail closed). */
static bool sync_stack_full(const struct cr_budgets *b)
{
	/* The frame's own address: a sanitizer's fake stack would move a
	 * local's elsewhere. */
	uintptr_t at = (uintptr_t)__builtin_frame_address(0);

	return b->sync_top && pthread_equal(pthread_self(), b->sync_thread) &&
	       at < b->sync_top && b->sync_top - at > b->sync_room;
}

static int walk_sync(struct cr_budgets *b, int fd, int depth)
{
	const char *name;
	struct cr_dir *d;
	int rc = 0;

	if (depth >= CR_BUDGET_WALK_DEPTH) {
		close(fd);
		return -ELOOP;
	}
	if (sync_stack_full(b)) {
		close(fd);
		return -EOVERFLOW;
	}
	d = cr_dir_open(fd, walk_buf(depth));
	if (!d)
		return -errno;
	while (!b->redo && !rc) {
		errno = 0;
		name = cr_dir_next(d);
		if (!name) {
			rc = errno ? -errno : 0;
			break;
		}
		if (strcmp(name, ".") && strcmp(name, ".."))
			rc = walk_entry(b, cr_dir_fd(d), name, depth);
	}
	cr_dir_close(d);
	return rc;
}

/* The program took its own read or search bit from a directory the pass
 * holds open across ticks (a test suite toggling a directory's mode):
 * its entries can no longer be looked at. The owner's bits are lent on
 * the inode (as walk_lent does), the rest of the directory, from the
 * entry that failed, is walked now in one go, and the mode put back:
 * synchronous, so no call of the program meets the lent mode. Ending the
 * run there ended ~3 % of a differential probe's runs with no intent in
 * the program; abandoning the pass would let a program that keeps
 * toggling keep every pass from finishing. 0 or -errno. */
static int walk_finish_lent(struct cr_budgets *b, struct cr_dir *d,
			    const char *first, int depth)
{
	char p[64];
	struct stat st;
	const char *name;
	int fd = cr_dir_fd(d), rc;

	if (fstat(fd, &st) < 0 || st.st_uid != b->uid)
		return -EACCES;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (chmod(p, (st.st_mode & 07777) | S_IRUSR | S_IXUSR) < 0)
		return -errno;
	rc = walk_entry(b, fd, first, depth);
	while (!rc && !b->redo) {
		errno = 0;
		name = cr_dir_next(d);
		if (!name) {
			rc = errno ? -errno : 0;
			break;
		}
		if (strcmp(name, ".") && strcmp(name, ".."))
			rc = walk_entry(b, fd, name, depth);
	}
	if (chmod(p, st.st_mode & 07777) < 0 && !rc)
		rc = -errno;
	return rc;
}

/* A socket in a task's table, for the memory budget. One that cannot be
 * remembered (no memory) is simply not counted this scan: the next scan
 * retries. */
static void note_socket(struct cr_budgets *b, uint64_t ino)
{
	if (b->nsock == b->sockcap) {
		size_t cap = b->sockcap ? b->sockcap * 2 : 64;
		uint64_t *g = realloc(b->sockinos, cap * sizeof(*g));

		if (!g)
			return;
		b->sockinos = g;
		b->sockcap = cap;
	}
	b->sockinos[b->nsock++] = ino;
}

static void measure_sockets(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t bytes, piped = 0;
	int rc;

	if (b->sock_unmeasurable)
		return;
	/* The run's UDP sockets the supervisor holds a duplicate of (members
	 * and DNS clients): their queues live on after the program closed
	 * its descriptors. And the proxy's sockets and pipes of each relayed
	 * connection: what waits there for a slow far end is the run's. */
	if (run->net && (run->net->nudp || run->net->nclients ||
			 run->net->nconns || run->net->nuheld)) {
		size_t tasks = b->nsock;
		size_t need = b->nsock + run->net->nudp + run->net->nclients +
			      2 * run->net->nconns + run->net->nuheld;

		if (need > b->sockcap) {
			uint64_t *g = realloc(b->sockinos, need * sizeof(*g));

			if (!g)
				return;	/* the last figure stands */
			b->sockinos = g;
			b->sockcap = need;
		}
		b->nsock += cr_net_udp_inodes(run->net, b->sockinos + b->nsock,
					      b->sockcap - b->nsock);
		b->nsock += cr_dns_client_inodes(run->net,
						 b->sockinos + b->nsock,
						 b->sockcap - b->nsock);
		b->nsock += cr_proxy_inodes(run->net, b->sockinos + b->nsock,
					    b->sockcap - b->nsock, &piped);
		/* Unix clients held until accepted (the sweep asks which
		 * the tasks still hold: the inodes before these). */
		const uint64_t *sent;
		size_t nsent = cr_sockmem_sent_list(b->sockmem, &sent);

		b->nsock += cr_unix_held_sweep(run->net, b->sockinos, tasks,
					       sent, nsent, b->fs_start_ns,
					       b->sockinos + b->nsock,
					       b->sockcap - b->nsock);
	}
	/* Sockets kept by a mapping (read_vmas): a listener's port makes
	 * its unaccepted connections the run's, a connection's queues are
	 * read where the listing shows them. */
	for (size_t i = 0; i < run->tasks.cap; i++) {
		const struct cr_task *t = &run->tasks.slots[i];

		if (!t->tid || !t->b.sock_maps)
			continue;
		if (b->nsock + t->b.sock_maps > b->sockcap) {
			size_t cap = b->nsock + t->b.sock_maps + 64;
			uint64_t *g = realloc(b->sockinos, cap * sizeof(*g));

			if (!g)
				return;	/* the last figure stands */
			b->sockinos = g;
			b->sockcap = cap;
		}
		memcpy(b->sockinos + b->nsock, t->b.sock_inos,
		       t->b.sock_maps * sizeof(*b->sockinos));
		b->nsock += t->b.sock_maps;
	}
	rc = cr_sockmem_measure(b->sockmem, b->sockinos, b->nsock, &bytes);
	if (!rc) {
		const uint64_t *alive;
		size_t nalive = cr_sockmem_follow_list(b->sockmem, &alive);

		b->sockbytes = bytes + piped;
		/* The pairs corral made whose sockets are gone (pairs.c). */
		cr_net_pairs_prune(run->net, alive, nalive);
	}
	else if (rc == -ENOENT || rc == -EPROTONOSUPPORT || rc == -EIO)
		b->sock_unmeasurable = true;	/* no sock_diag: docs/limits.md */
}

void cr_budget_charge_cpu(struct cr_run *run, uint64_t ns)
{
	if (run->budgets)
		run->budgets->cpu_dead_ns += ns;
}

void cr_budget_rescan_soon(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	/* A file just went where only the fd scan's ledger part sees it:
	 * scan again as soon as its cost allows, not after the usual
	 * CR_BUDGET_FDSCAN_MIN_MS (a program can fallocate gigabytes in
	 * that time). */
	if (b && b->fdscan_next_ns > b->fdscan_soon_ns)
		b->fdscan_next_ns = b->fdscan_soon_ns;
}

static void fdscan_run(struct cr_run *run, size_t budget);

bool cr_budget_rescan_now(struct cr_run *run, bool earned)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0;

	if (!b || (!earned && cr_now_ns() < b->rescan_next_ns))
		return false;
	/* A tree whose scan is dear (60 processes holding 19 000
	 * descriptors each: 6-14 s a scan, found by a probing session) is
	 * not scanned in one go at a program's asking: the paced scan,
	 * sooner. */
	if (b->fs_last_cpu > CR_BUDGET_RESCAN_NOW_MAX_CPU_NS) {
		cr_budget_rescan_soon(run);
		return false;
	}
	t0 = cr_thread_cpu_ns();
	if (b->fs_on)
		fdscan_run(run, SIZE_MAX);	/* started before: finished */
	fdscan_run(run, SIZE_MAX);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	b->rescan_next_ns = cr_now_ns() + CR_BUDGET_RESCAN_NOW_NS;
	return true;
}

/* An internet socket without a port: in no listing of the kernel's, so
 * once passed and closed nothing could measure it. */
static bool unlisted_inet(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int dom = 0;
	socklen_t dl = sizeof(dom);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl) < 0 ||
	    (dom != AF_INET && dom != AF_INET6) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return false;
	return dom == AF_INET ? !((struct sockaddr_in *)&ss)->sin_port :
			       !((struct sockaddr_in6 *)&ss)->sin6_port;
}

int cr_budget_on_send_fd(struct cr_run *run, int fd)
{
	struct cr_budgets *b = run->budgets;
	struct stat st;
	int rc;

	if (!b || fstat(fd, &st) < 0)
		return -EBADF;
	if (!S_ISSOCK(st.st_mode))
		return 0;
	/* An unbound internet socket passed is charged for the run's life,
	 * with all the option memory it may carry: 2 000 of them, each
	 * with its TCP-MD5 keys, sent and closed held ~0.55 GB under
	 * memory=32MiB where no listing showed them (found by a probing
	 * session). */
	if (unlisted_inet(fd) &&
	    (rc = charge_for_good(run, CR_BUDGET_SOCK + b->optmem_max)))
		return rc;
	return cr_sockmem_sent(b->sockmem, st.st_ino);
}

void cr_budget_on_inet_socket(struct cr_run *run, int domain, int type,
			      int proto)
{
	if (run->budgets)
		cr_sockmem_kind(run->budgets->sockmem, domain, type, proto);
}

int cr_budget_on_socket_used(struct cr_run *run, uint64_t ino)
{
	if (!run->budgets || run->budgets->sock_unmeasurable || !ino)
		return 0;	/* nothing would read it: not followed */
	if (cr_sockmem_follow(run->budgets->sockmem, ino) == 0)
		return 0;
	/* Full (or no memory): the next scan prunes the gone; until then
	 * the call is refused as the kernel refuses one it has no buffer
	 * for, as a new pair is (cr_budget_on_socket_pair). */
	cr_budget_rescan_soon(run);
	return -ENOBUFS;
}

bool cr_budget_sockets_measured(const struct cr_run *run)
{
	return run->budgets && run->budgets->sockmem &&
	       !run->budgets->sock_unmeasurable;
}

int cr_budget_on_socket_pair(struct cr_run *run, const uint64_t ino[2])
{
	struct cr_sockmem *s;

	if (!run->budgets || run->budgets->sock_unmeasurable)
		return 0;	/* nothing would read them: not followed */
	if (!(s = run->budgets->sockmem))
		return -ENOMEM;
	/* Room for both, or neither is made: a pair no list follows could
	 * be hidden by a blocked call at once. */
	if (cr_sockmem_follow_room(s) < 2) {
		cr_budget_rescan_soon(run);
		return -ENOBUFS;
	}
	for (int i = 0; i < 2; i++)
		if (cr_sockmem_follow(s, ino[i]) < 0)
			return -ENOBUFS;
	return 1;
}

/* Regular files the tree holds open after unlinking them, and memfds:
 * they take space that no walk of the roots can see. Read from each fd
 * table (a thread that shares its process's table is not read again); a
 * file open in several places is counted once while the table of those
 * seen has room, then each time (an error towards stopping).
 *
 * The scan is resumable: a tree can hold a million fds (64 processes at
 * the hard limit), and reading them all in one go held the loop for
 * seconds, its wall timer and notifications unserved. Each call reads at
 * most `budget` entries and keeps its place (the slot of the task table,
 * the open directory); the figure changes only when a scan completes.
 * Tasks that come or go meanwhile may be missed or met twice in one scan:
 * the "seen" table keeps a file met twice from counting twice. */
static bool shares_leader_files(const struct cr_task *t)
{
	return !t->leader && t->tgid > 0 &&
	       syscall(SYS_kcmp, t->tgid, t->tid, KCMP_FILES, 0, 0) == 0;
}

static size_t seen_slot(const struct cr_fdseen *set, size_t cap,
			dev_t dev, ino_t ino)
{
	size_t i = (size_t)(((uint64_t)ino * 0x9E3779B97F4A7C15ull) ^
			    (uint64_t)dev) & (cap - 1);

	while ((set[i].dev || set[i].ino) &&
	       (set[i].dev != dev || set[i].ino != ino))
		i = (i + 1) & (cap - 1);
	return i;
}

/* Twice the room, the entries moved over; false when it cannot grow. */
static bool seen_grow(struct cr_budgets *b)
{
	size_t cap = b->fs_seencap ? b->fs_seencap * 2 : CR_BUDGET_SEEN_MIN;
	struct cr_fdseen *set;

	if (cap > CR_BUDGET_SEEN_MAX)
		return false;
	set = calloc(cap, sizeof(*set));
	if (!set)
		return false;
	for (size_t i = 0; i < b->fs_seencap; i++)
		if (b->fs_seen[i].dev || b->fs_seen[i].ino)
			set[seen_slot(set, cap, b->fs_seen[i].dev,
				      b->fs_seen[i].ino)] = b->fs_seen[i];
	free(b->fs_seen);
	b->fs_seen = set;
	b->fs_seencap = cap;
	return true;
}

/* Was this file met before in the scan under way? Remembered if not
 * (while the set can hold it: past that, met again, counted again, an
 * error towards stopping). */
static bool fdscan_seen(struct cr_budgets *b, const struct stat *st,
			bool remember)
{
	size_t i;

	if (b->fs_seen) {
		i = seen_slot(b->fs_seen, b->fs_seencap, st->st_dev, st->st_ino);
		if (b->fs_seen[i].dev || b->fs_seen[i].ino)
			return true;
	}
	if (!remember ||
	    ((b->fs_nseen + 1) * 2 > b->fs_seencap && !seen_grow(b) &&
	     (b->fs_nseen + 1) * 4 > b->fs_seencap * 3))
		return false;	/* kept at most 3/4 full */
	i = seen_slot(b->fs_seen, b->fs_seencap, st->st_dev, st->st_ino);
	b->fs_seen[i] = (struct cr_fdseen){ st->st_dev, st->st_ino };
	b->fs_nseen++;
	return false;
}

/*
 * A pipe (or FIFO) in a task's table: what its buffers hold is kernel
 * memory in no process's RSS. 4000 pipes of 64 KiB each per process held
 * 177 MiB under memory=64MiB (and a pipe grows to pipe-max-size, 1 MiB,
 * with F_SETPIPE_SZ). Read on a copy of the task's descriptor (the same
 * open file: no reader or writer is added, so nobody's EOF or EPIPE
 * changes): FIONREAD bytes are queued in at most that many buffers (a
 * write into a packet-mode pipe takes a page of its own, however small),
 * and at most F_GETPIPE_SZ's worth: the smaller of the two is charged,
 * an error towards stopping; plus CR_BUDGET_PIPE_KERNEL for what any
 * pipe holds, queued or not (16 processes x 9 900 empty pipes held
 * ~935 MiB of the host's memory under memory=64MiB, counted nothing).
 * splice, tee and vmsplice are refused, so no buffer holds another
 * file's pages.
 */
static void fdscan_pipe(struct cr_run *run, const struct stat *st,
			const char *name)
{
	struct cr_budgets *b = run->budgets;
	int fd, queued = 0;
	long cap;

	if (fdscan_seen(b, st, true))
		return;
	fd = cr_tasks_getfd(run, b->fs_tid, atoi(name));
	if (fd < 0)
		return;		/* closed meanwhile */
	cap = fcntl(fd, F_GETPIPE_SZ);
	if (cap > 0)
		b->fs_files += CR_BUDGET_PIPE_KERNEL;
	if (ioctl(fd, FIONREAD, &queued) == 0 && queued > 0 && cap > 0) {
		uint64_t bound = (uint64_t)queued * (uint64_t)b->page;

		b->fs_files += bound < (uint64_t)cap ? bound : (uint64_t)cap;
	}
	close(fd);
}

/*
 * An epoll instance's watches: kernel memory no RSS shows (~205 B each,
 * measured: 100 instances x 10 000 watches, +200 MB of unreclaimable
 * slab), bounded only by the user's fs.epoll.max_user_watches (5.49
 * million here: ~1.1 GB). Each watch is a "tfd:" line of the instance's
 * fdinfo; reading it costs its length, which the scan's pacing bounds.
 * Every anonymous inode shares one inode number, so an instance shared by
 * forked processes counts once per table that holds it: an error towards
 * stopping. (inotify watches: cr_budget_watch_room.)
 */
/* The lines of the fdinfo of entry `name` of the fd directory dir that
 * begin with prefix: their count; -ENOENT when it cannot be opened (the
 * descriptor closed, the task exiting), -EMFILE or -ENFILE when we are
 * out of descriptors, or another -errno when the text could not be read
 * whole (its length is the program's choice). A
 * line cut by the buffer's end is carried over whole (fdinfo lines are far
 * shorter than the buffer). */
struct prefixed {
	const char *prefix;
	size_t len;
	int64_t count;
};

static void count_prefixed(void *arg, char *line)
{
	struct prefixed *p = arg;

	if (!strncmp(line, p->prefix, p->len))
		p->count++;
}

static int64_t fdinfo_lines(int dir, const char *name, const char *prefix)
{
	char path[NAME_MAX + 16];
	struct prefixed p = { prefix, strlen(prefix), 0 };
	int rc;

	snprintf(path, sizeof(path), "../fdinfo/%s", name);
	rc = cr_lines_at(dir, path, count_prefixed, &p);
	return rc < 0 ? rc : p.count;
}

static void fdscan_run(struct cr_run *run, size_t budget);

/*
 * An inotify instance's queue: kernel memory no RSS shows. Each instance
 * holds up to fs.inotify.max_queued_events (16 384) events, ~300 B of
 * slab each with a long name; 128 instances (the user's allowance) fed by
 * writes to two files held 1 GiB under memory=32MiB, `ok` (found by a
 * probing session). Read on a copy of the task's descriptor: FIONREAD
 * is what the reader would get, the slab at most CR_BUDGET_INOTIFY_SLAB
 * times that. Every instance shares one anonymous inode, so copies are
 * told apart with kcmp, each instance counted once; an instance alive
 * that no table showed is charged its fullest queue (fdscan_finish).
 */
static void fdscan_inotify(struct cr_run *run, const char *name)
{
	struct cr_budgets *b = run->budgets;
	pid_t self = getpid();
	int fd = cr_tasks_getfd(run, b->fs_tid, atoi(name)), queued = 0;
	bool told = true;

	if (fd < 0)
		return;		/* closed meanwhile */
	for (unsigned i = 0; told && i < b->nino_seen; i++) {
		long k = syscall(SYS_kcmp, self, self, KCMP_FILE, fd,
				 b->ino_seen[i]);

		if (k == 0) {
			close(fd);
			return;	/* met before in this scan */
		}
		told = k > 0;	/* no kcmp: seen, but not told apart */
	}
	/* Its file is counted with every other (fdscan_entry). */
	if (ioctl(fd, FIONREAD, &queued) == 0 && queued > 0)
		b->fs_files += (uint64_t)queued * CR_BUDGET_INOTIFY_SLAB;
	/* Its watches, once the run's bound on them is worth a count: a
	 * line each in its fdinfo, paid as an epoll's (fdscan_anon). */
	if (b->fs_watch_exact && told) {
		uint64_t t0 = cr_thread_cpu_ns(), cost;
		int64_t got = fdinfo_lines(dirfd(b->fs_dir), name,
					   "inotify wd:");

		if (got < 0)
			b->fs_watch_exact = false;
		else
			b->fs_watches += (uint64_t)got;
		cost = cr_thread_cpu_ns() - t0;
		if (cost > 2000000ull)
			cr_budget_charge_cpu(run, cost);
	}
	/* Kept, it stands for one instance the scan met; one that cannot be
	 * told apart, or more than the run can have made, is counted but
	 * stands for none: every instance alive is then charged whole. */
	if (told && b->nino_seen < sizeof(b->ino_seen) / sizeof(b->ino_seen[0]))
		b->ino_seen[b->nino_seen++] = fd;
	else
		close(fd);
}

static void count_alive(void *arg, uint64_t data, uint64_t ino)
{
	(void)data;
	(void)ino;
	(*(uint64_t *)arg)++;
}

/* Instances the run made that are alive: -errno when the set cannot be
 * read. */
static int64_t inotify_alive(struct cr_budgets *b)
{
	uint64_t n = 0;
	int rc = cr_weak_each(b->ino_weak, count_alive, &n);

	return rc < 0 ? rc : (int64_t)n;
}

/* Instances alive that no table of the scan showed (held by a blocked
 * call, in flight in a message): their fullest queues. Those the scan
 * met are alive still (its copies hold them), and none is made while a
 * scan is under way (cr_budget_on_inotify). */
static void hidden_inotify(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	int64_t alive = inotify_alive(b);

	if (alive < 0)
		alive = (int64_t)CR_BUDGET_INOTIFY_MAX;	/* fail closed */
	if ((uint64_t)alive > b->nino_seen)
		b->fs_files += ((uint64_t)alive - b->nino_seen) * b->ino_full;
	/* Watches: the bound becomes the count only when every instance
	 * alive was met and read (one hidden keeps its watches unseen), plus
	 * those added since the scan began (some perhaps counted twice). */
	if (b->fs_watch_exact && (uint64_t)alive == b->nino_seen &&
	    b->fs_watches + b->ino_watch_during < b->ino_watches)
		b->ino_watches = b->fs_watches + b->ino_watch_during;
	b->fs_files += b->ino_watches * CR_BUDGET_INOTIFY_WATCH;
	for (unsigned i = 0; i < b->nino_seen; i++)
		close(b->ino_seen[i]);
	b->nino_seen = 0;
}

int cr_budget_on_inotify(struct cr_run *run, int fd)
{
	struct cr_budgets *b = run->budgets;
	int64_t alive;

	if (!b)
		return 0;
	/* Never made while a scan is under way: one made between its steps
	 * and met in a table would stand for an older one hidden in flight
	 * (found by a probing session). The scan is finished first. */
	if (b->fs_on)
		fdscan_run(run, SIZE_MAX);
	alive = inotify_alive(b);
	if (alive < 0)
		return (int)alive;
	if (alive >= CR_BUDGET_INOTIFY_MAX)
		return -EMFILE;
	return cr_weak_add(&b->ino_weak, fd, b->ino_seq++);
}

/*
 * inotify watches: each a mark of kernel memory and an inode pinned in
 * memory, bounded by the user's fs.inotify.max_user_watches, which the
 * run shares with every program of the user on the host (an editor, a
 * build watcher): 192 530 here, all of them taken by one run before. The
 * supervisor adds every watch (handlers/xattr.c), so the run's are
 * bounded from above by the new ones it added; the fd scan brings the
 * bound down to their count. At a quarter of the user's allowance a
 * count is made at once (the scan under way finished, then a whole one);
 * still there, ENOSPC, and the next count is paced by this one's cost.
 */
int cr_budget_watch_room(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0;

	if (!b || b->ino_watches < b->ino_watch_cap)
		return 0;
	if (cr_now_ns() < b->ino_cap_next_ns)
		return -ENOSPC;
	t0 = cr_thread_cpu_ns();
	if (b->fs_on)
		fdscan_run(run, SIZE_MAX);
	if (b->ino_watches >= b->ino_watch_cap)
		fdscan_run(run, SIZE_MAX);
	if (b->ino_watches < b->ino_watch_cap)
		return 0;
	/* Still there: the next count only after ten times this one's cost
	 * (a program adding at the cap would have the supervisor scan at
	 * every call). */
	b->ino_cap_next_ns = cr_now_ns() + 10 * (cr_thread_cpu_ns() - t0);
	return -ENOSPC;
}

void cr_budget_on_watch(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return;
	b->ino_watches++;
	b->ino_watch_during++;
	/* Charged at once; the next scan's figure replaces it. */
	b->filebytes += CR_BUDGET_INOTIFY_WATCH;
}

static void fdscan_anon(struct cr_run *run, const char *name)
{
	struct cr_budgets *b = run->budgets;
	char lnk[32];
	uint64_t t0, cost;
	int64_t got;
	ssize_t l;

	l = readlinkat(dirfd(b->fs_dir), name, lnk, sizeof(lnk) - 1);
	if (l <= 0)
		return;
	lnk[l] = 0;
	if (!strcmp(lnk, "anon_inode:inotify")) {
		fdscan_inotify(run, name);
		return;
	}
	if (strcmp(lnk, "anon_inode:[eventpoll]"))
		return;
	/* A duplicate of an instance already found dear to read is not read
	 * again: its watches are counted once. One instance of 250 000
	 * watches (0.37 s a read) duplicated a few hundred times held the
	 * loop, and with it every budget, for a minute, until the watchdog
	 * (found by a probing session). Cheap ones are read as often as met
	 * (a duplicate counts twice: towards stopping). */
	if (b->nep_seen) {
		pid_t self = getpid();
		int fd = cr_tasks_getfd(run, b->fs_tid, atoi(name));

		if (fd < 0)
			return;		/* closed meanwhile */
		for (unsigned i = 0; i < b->nep_seen; i++)
			if (syscall(SYS_kcmp, self, self, KCMP_FILE, fd,
				    b->ep_seen[i]) == 0) {
				close(fd);
				return;
			}
		close(fd);
	}
	t0 = cr_thread_cpu_ns();
	got = fdinfo_lines(dirfd(b->fs_dir), name, "tfd:");
	/* The kernel makes the whole text at the first read: an instance of
	 * millions of watches costs seconds (480 000: 38 MB in 0.7 s), which
	 * the program chose, so it is charged to the run; one that cannot be
	 * read (the text too large to make) counts as the user's limit. */
	if (got >= 0)
		b->fs_epoll += (uint64_t)got;
	else if (got == -EMFILE || got == -ENFILE)
		cr_budget_fds_short(run, (int)-got, "read an epoll's fdinfo");
	else if (got != -ENOENT)	/* not closed meanwhile */
		b->fs_epoll += b->epoll_max;
	cost = cr_thread_cpu_ns() - t0;
	if (cost > 2000000ull)
		cr_budget_charge_cpu(run, cost);
	if (cost > 1000000ull && b->nep_seen < CR_BUDGET_EPOLL_DEAR) {
		int fd = cr_tasks_getfd(run, b->fs_tid, atoi(name));

		if (fd >= 0)
			b->ep_seen[b->nep_seen++] = fd;
	}
}

static void ep_seen_clear(struct cr_budgets *b)
{
	for (unsigned i = 0; i < b->nep_seen; i++)
		close(b->ep_seen[i]);
	b->nep_seen = 0;
}

/* A socket's option memory (a TCP-MD5 key list, a socket filter: up to
 * net.core.optmem_max each), asked of the socket itself: an unbound
 * internet socket is in no listing of the kernel's (sockmem.c), and 5.3
 * million MD5 keys on unbound sockets held ~1 GB from one process (found
 * by a probing session). Read on a copy of the task's descriptor; a
 * socket the listing also shows counts twice (towards stopping). */
static void fdscan_sock(struct cr_run *run, const char *name)
{
	struct cr_budgets *b = run->budgets;
	uint32_t mi[SK_MEMINFO_VARS] = { 0 };
	socklen_t len = sizeof(mi);
	int fd = cr_tasks_getfd(run, b->fs_tid, atoi(name));

	if (fd < 0)
		return;		/* closed meanwhile */
	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0 &&
	    len > SK_MEMINFO_OPTMEM * sizeof(uint32_t))
		b->fs_files += mi[SK_MEMINFO_OPTMEM];
	close(fd);
}

static void fdscan_entry(struct cr_run *run, struct dirent *de)
{
	struct cr_budgets *b = run->budgets;
	struct stat st;

	/* The magic link leads to the open file itself, deleted or not;
	 * stat never opens it. */
	if (de->d_name[0] == '.' ||
	    cr_quiet_fstatat(dirfd(b->fs_dir), de->d_name, &st, 0) < 0)
		return;
	if (S_ISSOCK(st.st_mode)) {
		note_socket(b, st.st_ino);
		fdscan_sock(run, de->d_name);
	}
	if (S_ISFIFO(st.st_mode))
		fdscan_pipe(run, &st, de->d_name);
	if (!(st.st_mode & S_IFMT))	/* an anonymous inode */
		fdscan_anon(run, de->d_name);
	/* Every other open file's own kernel memory (sockets are counted
	 * from the kernel's listing, pipes above): a descriptor each, as an
	 * open file shared by two tables or a duplicate cannot be told from
	 * two opens (towards stopping). 16 processes x 19 900 opens of
	 * /dev/null held ~310 MB for 20 MB resident (found by a probing
	 * session). */
	if (!S_ISSOCK(st.st_mode) && !S_ISFIFO(st.st_mode))
		b->fs_files += CR_BUDGET_FILE_KERNEL;
	if (!S_ISREG(st.st_mode) || st.st_nlink || fdscan_seen(b, &st, true))
		return;
	b->fs_total += (uint64_t)st.st_blocks * 512;
}

/* The ledger, /dev/shm and the sockets' queues, when a scan completes. */
/*
 * Pipes the run made that no fd table shows but that are alive: in
 * flight in a unix socket's queue, or held by a thread blocked in poll()
 * or select() after their descriptors were closed (one poll holds up to
 * RLIMIT_NOFILE files; 216 000 pipes with 4 KiB queued each were held so
 * under the default class, ok, past 1.1 GB of the host's memory). What
 * such a pipe holds cannot be read without a descriptor, so it is
 * charged the most a pipe may hold (fs.pipe-max-size) and its own
 * memory. Only pipes made before the scan began (one made since may sit
 * in a table the scan has passed), and only when the last complete scan
 * did not find it either: a scan reads the tables one after another, so
 * a pipe handed meanwhile to a task it had passed (a shell's pipeline:
 * fork, then the parent closes its ends) is missed by one scan, not by
 * two. A pipe hidden is hidden for good (no descriptor can be had back
 * from a blocked poll); one cycled in and out of flight is counted by
 * its content whenever a table shows it.
 */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void hidden_pipe(void *arg, uint64_t data, uint64_t ino)
{
	struct cr_run *run = arg;
	struct cr_budgets *b = run->budgets;
	uint64_t seq = data >> 6;
	struct stat st = { .st_dev = b->pipe_devs[data & 63],
			   .st_ino = (ino_t)ino };
	bool before;

	if (seq >= b->pipe_seq_scan || fdscan_seen(b, &st, true))
		return;
	before = b->phid && bsearch(&ino, b->phid, b->nphid, sizeof(ino),
				    cmp_u64);
	if (b->nhid == b->caphid) {
		size_t cap = b->caphid ? b->caphid * 2 : 64;
		uint64_t *nv = realloc(b->hid, cap * sizeof(*nv));

		if (!nv) {	/* unremembered: charged now */
			before = true;
			goto charge;
		}
		b->hid = nv;
		b->caphid = cap;
	}
	b->hid[b->nhid++] = ino;
charge:
	if (before)
		b->fs_files += b->pipe_max + CR_BUDGET_PIPE_KERNEL;
}

static void hidden_pipes(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t *t;
	int rc;

	b->nhid = 0;
	rc = cr_weak_each(b->pipe_weak, hidden_pipe, run);
	if (rc < 0 && !cr_budget_fds_short(run, -rc, "read the run's pipes") &&
	    !run->ending)
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot read the run's pipes for the budgets: %s",
			   strerror(-rc));
	if (b->hid)
		qsort(b->hid, b->nhid, sizeof(*b->hid), cmp_u64);
	t = b->phid;
	b->phid = b->hid;
	b->nphid = b->nhid;
	b->hid = t;
	{
		size_t c = b->caphid;

		b->caphid = b->phid_cap;
		b->phid_cap = c;
	}
}

/* Follow one file of a pipe or FIFO (fd, described by st) without a
 * reference: 0 or -errno. */
static int pipe_follow(struct cr_budgets *b, int fd, const struct stat *st)
{
	unsigned i;

	for (i = 0; i < b->npipe_devs; i++)
		if (b->pipe_devs[i] == st->st_dev)
			break;
	if (i == b->npipe_devs) {
		if (i == CR_BUDGET_PIPE_DEVS)
			return -ENFILE;	/* fail closed: never unfollowed */
		b->pipe_devs[b->npipe_devs++] = st->st_dev;
	}
	return cr_weak_add(&b->pipe_weak, fd, b->pipe_seq << 6 | i);
}

/* The share's table kept to the pipes alive (tracer/pipeshare.c): those
 * the weak set still lists. Left as it is when the set cannot be read
 * (the sum then errs high). */
static void pipeshare_alive(void *arg, uint64_t data, uint64_t ino)
{
	(void)data;
	cr_pipeshare_alive(arg, ino);
}

static void pipeshare_refresh(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns();

	cr_pipeshare_refresh_begin(b->pipeshare);
	if (cr_weak_each(b->pipe_weak, pipeshare_alive, b->pipeshare) == 0)
		cr_pipeshare_refresh_end(b->pipeshare);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
}

/* Do `more` slots fit in the run's share of its user's pipe allowance?
 * Refreshed first when they would not; but a refresh that found most of
 * the pipes alive is not made again for CR_BUDGET_PIPE_REFRESH_MS: a
 * program holding thousands of pipes past its share paid one refresh
 * per pipe made, 2.8 s became 21 s (the test of pipe buffers). */
static bool pipe_slots_fit(struct cr_run *run, uint64_t more)
{
	struct cr_budgets *b = run->budgets;
	uint64_t now;

	if (!cr_pipeshare_stale(b->pipeshare) &&
	    cr_pipeshare_fits(b->pipeshare, more))
		return true;
	now = cr_now_ns();
	if (cr_pipeshare_stale(b->pipeshare) || !b->pipe_refresh_kept ||
	    now >= b->pipe_refresh_next_ns) {
		size_t was = cr_pipeshare_count(b->pipeshare);

		pipeshare_refresh(run);
		b->pipe_refresh_kept =
			cr_pipeshare_count(b->pipeshare) * 4 >= was * 3;
		b->pipe_refresh_next_ns =
			now + CR_BUDGET_PIPE_REFRESH_MS * 1000000ull;
	}
	return cr_pipeshare_fits(b->pipeshare, more);
}

static unsigned pipe_slots(struct cr_budgets *b, int fd)
{
	int sz = fcntl(fd, F_GETPIPE_SZ);

	return sz > 0 ? (unsigned)(sz / b->page) : 0;
}

int cr_budget_on_pipe(struct cr_run *run, const int ends[2])
{
	struct cr_budgets *b = run->budgets;
	struct stat st;
	unsigned slots;

	if (!b)
		return 0;
	if (fstat(ends[0], &st) < 0)
		return -errno;
	for (int i = 0; i < 2; i++) {
		int rc = pipe_follow(b, ends[i], &st);

		if (rc < 0)
			return rc;
	}
	b->pipe_seq++;
	/* Past the run's share, what the kernel gives a user past its
	 * soft limit: a pipe of two slots. */
	slots = pipe_slots(b, ends[0]);
	if (slots > CR_BUDGET_PIPE_MIN_SLOTS && !pipe_slots_fit(run, slots) &&
	    fcntl(ends[0], F_SETPIPE_SZ,
		  (int)(CR_BUDGET_PIPE_MIN_SLOTS * b->page)) >= 0)
		slots = pipe_slots(b, ends[0]);
	return cr_pipeshare_set(b->pipeshare, st.st_ino, slots, true);
}

int cr_budget_pipe_resize(struct cr_run *run, int fd, unsigned long arg)
{
	struct cr_budgets *b = run->budgets;
	unsigned long size;
	unsigned have, want;
	struct stat st;
	int got;

	if (!b || fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		got = fcntl(fd, F_SETPIPE_SZ, arg);	/* the kernel's answer */
		return got < 0 ? -errno : got;
	}
	/* The kernel's rounding: a page at least, a power of two. */
	size = (unsigned int)arg;	/* 0 too is a page, as natively */
	if (size > (1ul << 31))
		return -EINVAL;
	if (size < (unsigned long)b->page)
		size = (unsigned long)b->page;
	while (size & (size - 1))
		size = (size | (size - 1)) + 1;
	/* Past pipe-max-size the program, without capabilities, is
	 * refused (corral may have them). */
	if (size > b->pipe_max)
		return -EPERM;
	want = (unsigned)(size / (unsigned long)b->page);
	have = cr_pipeshare_slots(b->pipeshare, st.st_ino);
	if (!have)
		have = pipe_slots(b, fd);
	if (want > have && !pipe_slots_fit(run, want - have))
		return -EPERM;	/* the kernel's answer past the soft limit */
	got = fcntl(fd, F_SETPIPE_SZ, (int)size);
	if (got < 0)
		return -errno;
	if (cr_pipeshare_set(b->pipeshare, st.st_ino, pipe_slots(b, fd),
			     false) < 0)
		return -ENOMEM;
	return got;
}

int cr_budget_on_opened(struct cr_run *run, int fd)
{
	struct cr_budgets *b = run->budgets;
	struct stat st;
	int rc;

	if (!b)
		return 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISFIFO(st.st_mode))
		return 0;
	rc = pipe_follow(b, fd, &st);
	if (!rc)
		b->pipe_seq++;
	if (!rc && !cr_pipeshare_slots(b->pipeshare, st.st_ino))
		rc = cr_pipeshare_set(b->pipeshare, st.st_ino,
				      pipe_slots(b, fd), false);
	return rc;
}

/* The bytes of the run's /dev/shm objects, measured now; when not
 * `always`, the last figure unless CR_BUDGET_QUICK_IDLE times the
 * last measure's CPU has passed since (a tree the program made dear to
 * walk is walked at ticks less often, never less than the fd scan does). */
static uint64_t shm_quick(struct cr_run *run, bool always)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0, now;

	if (!run->fs || run->fs->shm_priv < 0)
		return 0;
	now = cr_now_ns();
	if (!always && now < b->lq_shm_next_ns)
		return b->lq_shm;
	t0 = cr_thread_cpu_ns();
	b->lq_shm = cr_fs_shm_bytes(run);
	b->lq_shm_next_ns = now + (cr_thread_cpu_ns() - t0) *
				  CR_BUDGET_QUICK_IDLE;
	return b->lq_shm;
}

static uint64_t fdscan_finish(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t total = b->fs_total;

	/* Files the run holds without a name where no fd table shows them
	 * (a socket's queue, a mapping): the filesystem layer's ledger. */
	cr_fs_held_prune(run);
	for (size_t i = 0; run->fs && i < run->fs->nheld; i++) {
		struct cr_held *h = &run->fs->held[i];
		struct stat st;

		if (fstat(h->fd, &st) < 0)
			continue;
		h->bytes = st.st_nlink ? 0 : (uint64_t)st.st_blocks * 512;
		if (st.st_nlink)
			continue;	/* named again: the walk sees it */
		if (!fdscan_seen(b, &st, false))
			total += h->bytes;
	}
	/* POSIX shared memory and semaphores the run made in /dev/shm: a
	 * tmpfs outside every writable root, emptied at cleanup. */
	b->lq_scan_shm = shm_quick(run, true);
	b->lq_scan = cr_fs_held_bytes(run->fs, 0);
	total += b->lq_scan_shm + cr_fs_rmheld_bytes(run->fs);
	hidden_pipes(run);
	hidden_inotify(run);
	measure_sockets(run);
	return total;
}

/* A live task whose /proc entry corral (same uid, no capability) does
 * not own: undumpable, its fds and memory closed to us. */
static bool task_closed(pid_t tid)
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

		if (!t->tid || shares_leader_files(t))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/fd", t->tid,
			 t->tid);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    task_closed(t->tid))
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
			k = fdinfo_lines(dirfd(d), de->d_name, "lock:");
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
	uint64_t max = lim(run, CR_LIM_MEMORY);

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
static int charge_for_good(struct cr_run *run, uint64_t bytes)
{
	struct cr_budgets *b = run->budgets;

	b->kobj_bytes += bytes;
	b->kobj_new += bytes;
	if (b->mem_nolock + b->kobj_new + lock_bound(b) <=
	    lim(run, CR_LIM_MEMORY))
		return 0;
	b->rss = b->mem_nolock + b->kobj_new + lock_bound(b);
	if (b->rss > b->peak_rss)
		b->peak_rss = b->rss;
	breach(run, CR_LIM_MEMORY, b->rss);
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
	if (sum <= lim(run, CR_LIM_MEMORY))
		return 0;
	b->rss = sum;
	if (b->rss > b->peak_rss)
		b->peak_rss = b->rss;
	breach(run, CR_LIM_MEMORY, b->rss);
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
	if (judged_now(b) + len > lim(run, CR_LIM_MEMORY) &&
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
	return charge_for_good(run, bytes);
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
	breach(run, CR_LIM_MEMORY, b->rss);
	return -ENOLCK;
}

/* An fd table's own arrays: a slot of 8 B per descriptor it has room for
 * and its bitmaps, sized to a power of two up to RLIMIT_NOFILE whatever it
 * holds (one dup2 to the limit's last number makes it whole). A thread's
 * unshare(CLONE_FILES) copies it at full size: 700 threads each with a
 * table sized for 20 000 held ~193 MB under memory=32MiB (found by a
 * probing session; each fork copies one too). From FDSize in the task's
 * status; 0 when it cannot be read (the task is going). */
static uint64_t table_bytes(pid_t tid)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tid, tid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0 ||
	    !(p = strstr(buf, "\nFDSize:")))
		return 0;
	return strtoull(p + 8, NULL, 10) * CR_BUDGET_FD_SLOT;
}

/* Read at most `budget` fd entries; true when the scan completed and
 * b->deleted holds its figure. */
static bool fdscan_step(struct cr_run *run, size_t budget)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;
	/* A paced step also ends on time (its entries may be dear); one
	 * asked for in one go (SIZE_MAX) runs to the end. */
	uint64_t until = budget == SIZE_MAX ? UINT64_MAX :
			 cr_now_ns() + CR_BUDGET_FDSCAN_STEP_NS;

	if (!b->fs_on) {
		b->fs_on = true;
		b->fs_start_ns = cr_now_ns();
		b->al_snap = b->al_pend;
		b->fs_slot = 0;
		b->fs_total = 0;
		b->fs_nseen = 0;
		b->nsock = 0;
		b->fs_files = 0;
		b->fs_epoll = 0;
		b->pipe_seq_scan = b->pipe_seq;
		b->fs_watches = 0;
		b->fs_watch_exact =
			b->ino_watches >= CR_BUDGET_INOTIFY_RECOUNT;
		b->ino_watch_during = 0;
		for (unsigned i = 0; i < b->nino_seen; i++)
			close(b->ino_seen[i]);
		b->nino_seen = 0;
		ep_seen_clear(b);
		if (b->fs_seen)
			memset(b->fs_seen, 0,
			       b->fs_seencap * sizeof(*b->fs_seen));
		else
			seen_grow(b);	/* none: every file counted */
	}
	for (;;) {
		struct dirent *de;

		if (!b->fs_dir) {
			const struct cr_task *t;
			char path[64];
			int fd;

			if (b->fs_slot >= ts->cap)
				break;
			t = &ts->slots[b->fs_slot++];
			if (!t->tid || shares_leader_files(t))
				continue;
			b->fs_tid = t->tid;
			snprintf(path, sizeof(path), "/proc/%d/task/%d/fd",
				 t->tid, t->tid);
			fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0 && cr_budget_fds_short(run, errno,
							 "read a task's fd table")) {
				b->fs_slot = ts->cap;	/* the run ends */
				break;
			}
			if (fd < 0) {
				/* Gone or exiting meanwhile (an exiting task's
				 * table answers EACCES); but a table closed to
				 * corral because the task is undumpable (its
				 * /proc entry turned root's) hides what it
				 * holds: never undercount. */
				if (task_closed(t->tid) && !run->ending)
					cr_run_end(run, CR_ST_PLATFORM_FAILURE,
						   NULL,
						   "cannot read the fd table of task %d for the budgets",
						   t->tid);
				continue;
			}
			b->fs_files += table_bytes(t->tid);
			b->fs_dir = fdopendir(fd);
			if (!b->fs_dir) {
				/* A table skipped would be undercounted. */
				int e = errno;

				close(fd);
				if (!cr_budget_fds_short(run, e,
							 "read a task's fd table") &&
				    !run->ending)
					cr_run_end(run, CR_ST_PLATFORM_FAILURE,
						   NULL,
						   "cannot read the fd table of task %d for the budgets: %s",
						   t->tid, strerror(e));
				b->fs_slot = ts->cap;
				break;
			}
			continue;
		}
		if (!budget || ((budget & 63) == 0 && cr_now_ns() > until))
			return false;
		de = readdir(b->fs_dir);
		if (!de) {
			closedir(b->fs_dir);
			b->fs_dir = NULL;
			continue;
		}
		budget--;
		fdscan_entry(run, de);
	}
	b->deleted = fdscan_finish(run);
	ep_seen_clear(b);
	b->filebytes = b->fs_files;
	b->epollbytes = b->fs_epoll * CR_BUDGET_EPOLL_WATCH;
	b->al_scan += b->al_snap;
	b->al_pend -= b->al_snap;
	b->al_snap = 0;
	b->fs_on = false;
	return true;
}

/* One step of the scan, its CPU added to the scan's; a completed scan
 * sets when the next may start: after CR_BUDGET_FDSCAN_IDLE times its
 * cost, and not sooner than CR_BUDGET_FDSCAN_MIN_MS. */
static void fdscan_run(struct cr_run *run, size_t budget)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns(), now, wait;

	if (!fdscan_step(run, budget)) {
		b->fs_cpu += cr_thread_cpu_ns() - t0;
		return;
	}
	b->fs_cpu += cr_thread_cpu_ns() - t0;
	b->fs_last_cpu = b->fs_cpu;
	now = cr_now_ns();
	wait = b->fs_cpu * CR_BUDGET_FDSCAN_IDLE;
	if (wait < CR_BUDGET_FDSCAN_MIN_MS * 1000000ull)
		wait = CR_BUDGET_FDSCAN_MIN_MS * 1000000ull;
	b->fdscan_next_ns = now + wait;
	b->fdscan_soon_ns = now + b->fs_cpu * CR_BUDGET_FDSCAN_IDLE;
	b->fs_cpu = 0;
}

/* The last complete figure of the fd scan, a scan started or advanced
 * when due. The finisher's pass (the tree is dead) always completes one. */
static uint64_t deleted_bytes(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	if (!run->tasks.count)
		fdscan_run(run, SIZE_MAX);
	else if (b->fs_on || cr_now_ns() >= b->fdscan_next_ns)
		fdscan_run(run, CR_BUDGET_FDSCAN_STEP);
	return b->deleted;
}

/* A directory the end of a pass measures (opath: its O_PATH handle), as
 * the walk would: with the owner's bits lent when they are missing, one
 * of another user's that we may not read as other_unlisted says. */
static int fixup_dir(struct cr_budgets *b, int opath, const struct stat *st)
{
	int fd;

	if (locked(st, b->uid))
		return walk_lent(b, opath, 1);
	fd = openat(opath, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		return walk_sync(b, fd, 1);
	if (errno != EACCES)
		return -errno;
	return st->st_uid == b->uid ? walk_lent(b, opath, 1) :
	       other_unlisted(b, opath);
}

/* The end of a pass spread over ticks: each object the run gave a name
 * to while it ran (moved, linked, made) and the walk did not meet is
 * measured now, wherever it is; a directory with its whole subtree,
 * nothing met twice. A file followed is counted whole: its other names,
 * met or not, cannot make it count less. Synchronous, so nothing moves
 * meanwhile. Whatever cannot be done within CR_BUDGET_FIXUP_MAX entries,
 * or fails, sets b->redo: the caller redoes the pass in one go. */
static void walk_fixup(struct cr_budgets *b)
{
	size_t n = cr_walkset_nplaced(b->ws);

	b->fixing = true;
	b->fix_left = CR_BUDGET_FIXUP_MAX;
	for (size_t i = 0; i < n && !b->redo; i++) {
		int fd = cr_walkset_placed_fd(b->ws, i);
		uint64_t blocks, *counted;
		struct stat st;
		int rc;

		if (fstat(fd, &st) < 0) {
			b->redo = true;
			break;
		}
		if (!st.st_nlink)
			continue;	/* no name left: the ledger's, if held */
		if (!b->fix_left) {
			b->redo = true;
			break;
		}
		b->fix_left--;
		rc = cr_walkset_see(b->ws, st.st_dev, st.st_ino, &counted);
		if (rc < 0) {
			b->redo = true;
			break;
		}
		if (rc == 1 && S_ISDIR(st.st_mode))
			continue;	/* the walk went through it */
		if (rc == 0)
			b->w_files++;
		blocks = (uint64_t)st.st_blocks * 512;
		if (blocks > *counted) {
			b->w_bytes += blocks - *counted;
			*counted = blocks;
		}
		if (S_ISDIR(st.st_mode) && fixup_dir(b, fd, &st) < 0)
			b->redo = true;
	}
	b->fixing = false;
}

/* Advance the walk by at most `budget` entries. Returns 1 when a pass over
 * every root just completed, 0 when it is still going, -errno when a root
 * cannot be measured (the pass is abandoned). */
static int walk_step(struct cr_run *run, size_t budget)
{
	struct cr_budgets *b = run->budgets;
	int rc;

	if (!b->in_pass) {
		walk_reset(b);
		b->in_pass = true;
		b->fail_root = NULL;
		free(b->fail_dir);
		b->fail_dir = NULL;
	}
	while (budget) {
		struct cr_dir *d;
		const char *name;
		struct stat st;

		if (b->depth == 0) {
			int fd;

			if (b->root == b->nroots) {
				if (b->tracking && !b->redo)
					walk_fixup(b);
				b->pass_deleted = deleted_bytes(run);
				b->w_bytes += b->pass_deleted;
				b->lq_in = b->lq_scan;
				b->lq_in_shm = b->lq_scan_shm;
				b->in_pass = false;
				return 1;
			}
			if (b->root_named[b->root]) {
				/* Absent when the run was set up: reached
				 * through a link now, it is no place the
				 * program can write (its calls are judged
				 * where the link leads), and what lies there
				 * is not the run's (another run's link made
				 * it charge a tree it could not touch; found
				 * by a probing session). */
				struct open_how how = {
					.flags = O_RDONLY | O_DIRECTORY |
						 O_NOFOLLOW | O_CLOEXEC,
					.resolve = RESOLVE_NO_SYMLINKS,
				};

				fd = (int)syscall(SYS_openat2, AT_FDCWD,
						  b->roots[b->root++], &how,
						  sizeof(how));
				if (fd < 0 && errno == ELOOP)
					continue;
			} else {
				fd = open(b->roots[b->root++], O_RDONLY |
					  O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			}
			if (fd < 0 && errno == ENOENT)
				continue;	/* an absent root holds nothing */
			if (fd < 0 && errno == ENOTDIR &&
			    fstatat(AT_FDCWD, b->roots[b->root - 1], &st,
				    AT_SYMLINK_NOFOLLOW) == 0 &&
			    !S_ISDIR(st.st_mode)) {
				/* A root that is one file (--rw FILE): its
				 * blocks. The run may write it, never
				 * rename or remove it (its parent is not
				 * a root). */
				count_entry(b, &st);
				continue;
			}
			if (fd < 0 && errno == EACCES)	/* chmod 0 on a root */
				rc = walk_locked(b, AT_FDCWD, b->roots[b->root - 1], 0);
			else
				rc = fd < 0 ? -errno : walk_push(b, fd);
			if (rc)
				goto fail;
			continue;
		}
		budget--;
		d = b->stack[b->depth - 1];
		errno = 0;
		name = cr_dir_next(d);
		if (!name) {
			if (errno) {
				rc = -errno;
				goto fail;
			}
			cr_dir_close(d);
			b->depth--;
			continue;
		}
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (cr_quiet_fstatat(cr_dir_fd(d), name, &st,
				     AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;	/* removed meanwhile */
			if (errno != EACCES) {
				rc = -errno;
				goto fail;
			}
			rc = walk_finish_lent(b, d, name, b->depth - 1);
			if (rc)
				goto fail;
			cr_dir_close(d);
			b->depth--;
			continue;
		}
		if (!count_entry(b, &st))
			continue;
		if (locked(&st, b->uid)) {
			rc = walk_locked(b, cr_dir_fd(d), name, b->depth);
			if (rc)
				goto fail;
		} else if (S_ISDIR(st.st_mode)) {
			int fd = openat(cr_dir_fd(d), name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);

			if (fd < 0 && (errno == ENOENT || errno == ENOTDIR ||
				       errno == ELOOP))
				continue;	/* replaced meanwhile */
			if (fd < 0 && errno == EACCES) {
				rc = walk_unlisted(b, cr_dir_fd(d), name,
						   b->depth);
				if (rc)
					goto fail;
				continue;
			}
			rc = fd < 0 ? -errno : walk_push(b, fd);
			if (rc)
				goto fail;
		}
	}
	return 0;
fail:
	/* The reset forgets which root the pass was in: the messages
	 * name it. */
	b->fail_root = b->roots[b->root ? b->root - 1 : 0];
	walk_reset(b);
	return rc;
}

static uint64_t over(uint64_t v, uint64_t base)
{
	return v > base ? v - base : 0;
}

static int alloc_confirm(struct cr_run *run);
static void unmeasurable(struct cr_run *run, int rc);

/* The last complete figure with the allocations not yet measured. */
static uint64_t alloc_judged(const struct cr_budgets *b)
{
	return (b->disk > b->hook_bytes ? b->disk : b->hook_bytes) +
	       b->al_pend + b->al_scan;
}

/* Judge what is known: a pass in progress already proves at least its
 * partial sums exist. */
static int confirm_paced(struct cr_run *run);

static void judge_disk(struct cr_run *run, bool complete)
{
	struct cr_budgets *b = run->budgets;
	uint64_t files = over(b->w_files, b->base_files);
	uint64_t disk = over(b->w_bytes, b->base_bytes);
	bool stale;

	if (complete) {
		b->files = files;
		b->disk = disk;
		b->al_scan = 0;
	}
	if (b->hook_files > files)
		files = b->hook_files;
	if (b->hook_bytes > disk)
		disk = b->hook_bytes;
	/* A complete figure with files without a name in it: those are the
	 * last fd scan's, maybe freed since, and a file unlinked then freed
	 * and a new one named counted twice (a run that never held more
	 * than 40 MiB ended on disk=64MiB; found by a probing session). */
	stale = complete && b->pass_deleted;
	if (disk > b->disk_peak && (!stale || disk <= lim(run, CR_LIM_DISK)))
		b->disk_peak = disk;
	disk += b->al_pend + b->al_scan;
	/* Over with allocations charged (they may be in the pass's figure
	 * too) or on a stale part: alloc_confirm measures again before a
	 * breach; a stale part waits for the next confirmation allowed. */
	if (disk > lim(run, CR_LIM_DISK) && !(b->al_pend + b->al_scan) &&
	    stale && cr_now_ns() < b->lq_next_ns) {
		/* Not confirmable yet: files are judged, disk at the next
		 * confirmation allowed. */
		if (files > lim(run, CR_LIM_FILES))
			breach(run, CR_LIM_FILES, files);
		return;
	}
	if (disk > lim(run, CR_LIM_DISK) && (b->al_pend + b->al_scan || stale)) {
		int rc = confirm_paced(run);

		if (rc < 0) {
			unmeasurable(run, rc);
			return;
		}
		files = b->hook_files > b->files ? b->hook_files : b->files;
		disk = alloc_judged(b);
		if (disk > b->disk_peak)
			b->disk_peak = disk;
	}
	if (files > lim(run, CR_LIM_FILES))
		breach(run, CR_LIM_FILES, files);
	else if (disk > lim(run, CR_LIM_DISK))
		breach(run, CR_LIM_DISK, disk);
}

static void unmeasurable(struct cr_run *run, int rc)
{
	struct cr_budgets *b = run->budgets;

	if (run->ending)
		return;
	enum cr_limit_id id = rc == -ELOOP || rc == -EOVERFLOW ||
			      rc == -EMFILE ? CR_LIM_FILES : CR_LIM_DISK;

	if (b->fail_dir)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: %s, in the writable root %s, belongs to another user and may be written beneath but not listed",
			   cr_limit_name(id), b->fail_dir,
			   b->fail_root ? b->fail_root : "?");
	else if (rc == -ELOOP)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: the writable root %s holds directories nested deeper than %d levels, which corral cannot measure",
			   cr_limit_name(id), b->fail_root ? b->fail_root : "?",
			   CR_BUDGET_WALK_DEPTH);
	else if (rc == -EOVERFLOW)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: the writable root %s holds directories nested deeper beneath a directory made unreadable than corral's stack limit (ulimit -s) allows it to measure",
			   cr_limit_name(id), b->fail_root ? b->fail_root : "?");
	else if (rc == -EMFILE)
		/* Deep trees hold a descriptor a level; so may the run. */
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: corral ran out of descriptors (its RLIMIT_NOFILE) measuring the writable root %s",
			   cr_limit_name(id), b->fail_root ? b->fail_root : "?");
	else
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(id),
			   "the %s budget cannot be enforced: the writable root %s cannot be measured (an unreadable entry: %s)",
			   cr_limit_name(id), b->fail_root ? b->fail_root : "?",
			   strerror(-rc));
}

/*
 * Files without a name and /dev/shm objects between fd scans. Their
 * writes are not notified, and the scan that measures them comes at most
 * every CR_BUDGET_FDSCAN_MIN_MS: a memfd written straight through at the
 * page cache's speed (~4.5 GiB/s on a fast machine) reached 1.3-1.5 GB
 * under disk=64MiB, and a program that saw when a scan had run filled
 * one after each and emptied it before the next (found by a probing
 * session). So the ledger's own descriptors are measured at every tick
 * (fstat), all of them as often as their cost allows (CR_BUDGET_QUICK_IDLE
 * times the last measure's CPU; 512 a tick in turn let a large memfd
 * among 3 900 others be seen once in 8 ticks: 512 MiB held 0.2 s under
 * disk=64MiB ended ok; found by a probing session), and /dev/shm with
 * them, likewise. Growth there, added to the last complete figure, is
 * only a suspicion (the figure may count a file twice while it moves
 * between a name and none): past the budget, a scan and a full pass
 * measure at once, their CPU the run's, and those decide. At most one
 * such confirmation per CR_BUDGET_RESCAN_NOW_NS, and after one, not
 * before CR_BUDGET_WALK_IDLE_NEAR times its cost: a program that fills
 * and empties a memfd past its budget pays for the measures and cannot
 * hold the loop.
 */
/* alloc_confirm, the next one not before CR_BUDGET_WALK_IDLE_NEAR times
 * its cost (at least CR_BUDGET_RESCAN_NOW_NS). */
static int confirm_paced(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns(), cost;
	int rc = alloc_confirm(run);

	cost = cr_thread_cpu_ns() - t0;
	b->lq_next_ns = cr_now_ns() +
		(cost * CR_BUDGET_WALK_IDLE_NEAR > CR_BUDGET_RESCAN_NOW_NS ?
		 cost * CR_BUDGET_WALK_IDLE_NEAR : CR_BUDGET_RESCAN_NOW_NS);
	return rc;
}

static void ledger_tick(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t now_l, now_s, grown, disk, t0, now;
	int rc;

	if (!run->fs || (!run->fs->nheld && run->fs->shm_priv < 0 &&
			 !run->fs->nrmheld && !run->fs->rmheld_lost)) {
		b->disk_est = alloc_judged(b);
		return;
	}
	now = cr_now_ns();
	if (now >= b->lq_held_next_ns) {
		t0 = cr_thread_cpu_ns();
		now_l = cr_fs_held_bytes(run->fs, SIZE_MAX);
		b->lq_held_next_ns = now + (cr_thread_cpu_ns() - t0) *
					   CR_BUDGET_QUICK_IDLE;
	} else {
		now_l = cr_fs_held_bytes(run->fs, 0);
	}
	now_s = shm_quick(run, false);
	grown = over(now_l + now_s, b->lq_in + b->lq_in_shm);
	disk = alloc_judged(b);
	b->disk_est = disk + grown;
	now = cr_now_ns();
	if (!grown || b->disk_est <= lim(run, CR_LIM_DISK) ||
	    now < b->lq_next_ns)
		return;
	rc = confirm_paced(run);
	if (rc < 0) {
		unmeasurable(run, rc);
		return;
	}
	disk = alloc_judged(b);
	b->disk_est = disk;
	if (disk > b->disk_peak)
		b->disk_peak = disk;	/* measured just now */
	if (b->files > lim(run, CR_LIM_FILES))
		breach(run, CR_LIM_FILES, b->files);
	else if (disk > lim(run, CR_LIM_DISK))
		breach(run, CR_LIM_DISK, disk);
}

/* A pass costs the supervisor CPU in proportion to what the roots hold;
 * the next one starts only after CR_BUDGET_WALK_IDLE times that much
 * time, so walking takes at most ~1/(1+IDLE) of a core however large the
 * workspace grows, and a small workspace is still walked every tick. Past
 * half of the disk or files budget the wait shrinks to IDLE_NEAR times. */
static int walk_full(struct cr_run *run);

static void walk_tick(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0, now = cr_now_ns();
	int rc;

	if (!b->in_pass && now < b->next_pass_ns)
		return;
	/* A pass begins at the usual tick's pace, unless disk's growth
	 * asked for the fast one: memory's fast ticks (and a run's first
	 * ones) would show a program watching the workspace with inotify
	 * five times the walks (docs/limits.md, "The walk is seen by
	 * inotify"). */
	if (!b->in_pass && now >= b->disk_fast_until_ns &&
	    now - b->pass_begun_ns < CR_BUDGET_TICK_MS * 900000ull)
		return;
	if (!b->in_pass) {
		b->pass_cpu_ns = 0;
		b->pass_begun_ns = now;
	}
	t0 = cr_thread_cpu_ns();
	rc = walk_step(run, CR_BUDGET_WALK_PER_TICK);
	/* What moved during the pass could not be followed: the whole pass
	 * again, in one go (the program's renames wait for it), its cost
	 * counted in the pass's. */
	if (rc == 1 && b->redo) {
		int full = walk_full(run);

		rc = full < 0 ? full : 1;
	}
	b->pass_cpu_ns += cr_thread_cpu_ns() - t0;
	if (rc < 0) {
		unmeasurable(run, rc);
		return;
	}
	judge_disk(run, rc == 1);
	if (rc == 1) {
		/* Past half of a budget, precision is worth more CPU. */
		uint64_t idle = b->disk * 2 > lim(run, CR_LIM_DISK) ||
				b->files * 2 > lim(run, CR_LIM_FILES) ?
				CR_BUDGET_WALK_IDLE_NEAR : CR_BUDGET_WALK_IDLE;

		b->next_pass_ns = now + b->pass_cpu_ns * idle;
	}
}

/* One full pass, however long it takes: the baseline and the last word. */
static int add_walk_root(struct cr_budgets *b,
			 const struct cr_run_config *cfg, const char *root)
{
	/* Where the walk before the run led (run.c), else the name's real
	 * path; unresolvable (absent, unreachable): as written; the walk
	 * skips an absent root and says why for the rest. */
	const struct cr_pin *pin = cr_pin_find(cfg, root);
	char *real = !pin ? realpath(root, NULL) :
		     pin->fd >= 0 ? strdup(pin->real) : NULL;

	b->roots[b->nroots] = real ? real : strdup(root);
	if (!b->roots[b->nroots])
		return -ENOMEM;
	b->root_named[b->nroots] = !real;
	b->nroots++;
	return 0;
}

/* A root inside another (--rw WS/sub beside -w WS), or named twice, is
 * walked as part of the outer one only: the full passes (the baseline
 * and the last word) do not remember inodes, and counted it twice, so a
 * run ended on "disk" at half its budget (found by a probing session).
 * The workspace, first, is never the one dropped for an equal root. */
static void nested_roots_out(struct cr_budgets *b)
{
	bool inner[CR_BUDGET_MAX_ROOTS] = { false };
	size_t k = 0;

	/* All judged before any is freed: an earlier build freed an inner
	 * root while later ones were still compared with it (a --rw root
	 * holding the workspace: a use after free, found under
	 * AddressSanitizer). */
	for (size_t i = 0; i < b->nroots; i++) {
		for (size_t j = 0; j < b->nroots && !inner[i]; j++) {
			size_t li = strlen(b->roots[i]), lj = strlen(b->roots[j]);

			if (i == j || !cr_path_within(b->roots[j], lj,
						      b->roots[i], li))
				continue;
			/* Equal paths: the first one stays. */
			inner[i] = li != lj || j < i;
		}
	}
	for (size_t i = 0; i < b->nroots; i++) {
		if (inner[i]) {
			free(b->roots[i]);
		} else {
			b->root_named[k] = b->root_named[i];
			b->roots[k++] = b->roots[i];
		}
	}
	b->nroots = k;
}

/* Nothing moves while it runs: it needs neither the set of what it met
 * nor what moved. */
static int walk_full(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	bool tracking = b->tracking;
	int rc;

	b->tracking = false;
	walk_reset(b);
	while ((rc = walk_step(run, 1 << 20)) == 0)
		;
	b->tracking = tracking;
	return rc < 0 ? rc : 0;
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

	if (crossing(b->pace_disk, b->disk_est, dt, lim(run, CR_LIM_DISK)))
		b->disk_fast_until_ns = b->fast_until_ns =
			b->tick_ns + CR_BUDGET_TICK_MS * 1000000ull;
	if (crossing(b->pace_rss, b->rss, dt, lim(run, CR_LIM_MEMORY)) &&
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

		if (t->tid && t->leader && !ours(t) &&
		    !(t->b.vm_group && !t->b.rss) &&
		    read_rss(b, t, &v, &vs) == 0)
			sum += v;
	}
	return sum <= b->quick_base ||
	       b->rss + (sum - b->quick_base) <= lim(run, CR_LIM_MEMORY);
}

static void on_tick(struct cr_run *run, uint32_t events, void *arg)
{
	struct cr_budgets *b = run->budgets;
	uint64_t expirations, cpu0;

	if (read(b->timerfd, &expirations, sizeof(expirations)) < 0 &&
	    errno == EAGAIN)
		return;
	b->tick_ns = cr_now_ns();
	if (quick_tick(run))
		return;
	b->full_ns = b->tick_ns;
	/* Exits waiting to be collected carry final CPU times: take them
	 * first, so the sum is as fresh as possible. */
	cpu0 = cr_thread_cpu_ns();
	b->pss_cost_ns = 0;
	run->reap_more = cr_tasks_reap(run);
	poll_tasks(run);
	/* A PSS judgement is paced by its own cost (pss_judge), not by
	 * the tick's: counted here, the first one near the budget turned
	 * the fast ticks off just as they were needed (3 ms for 256 MiB;
	 * 1 GiB touched in one loop ended at 297-332 MiB under
	 * memory=256MiB on a loaded machine). */
	cpu0 = cr_thread_cpu_ns() - cpu0;
	cpu0 = cpu0 > b->pss_cost_ns ? cpu0 - b->pss_cost_ns : 0;
	if (!run->ending)
		ledger_tick(run);
	if (!run->ending)
		pace_ticks(run, cpu0);
	/* An fd scan in progress goes on a step per tick, at the usual
	 * tick's pace: the fast ticks are memory's and disk's. */
	if (b->fs_on && !run->ending &&
	    b->tick_ns - b->fs_step_ns >=
	    CR_BUDGET_TICK_MS * 1000000ull - CR_BUDGET_TICK_MS * 100000ull) {
		b->fs_step_ns = b->tick_ns;
		fdscan_run(run, CR_BUDGET_FDSCAN_STEP);
	}
	if (!run->ending)
		walk_tick(run);
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
	if (cr_run_ms(run) >= lim(run, CR_LIM_WALL)) {
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "wall",
			   "the wall-time limit fired");
		return;
	}
	on_tick(run, 0, NULL);
	/* The timer not expired yet (its phase is not the tick's): asked
	 * again a tick from now, not at every callback. */
	b->tick_ns = now;
}

void cr_budget_stall_tick(struct cr_run *run)
{
	if (!run->budgets || run->ending)
		return;
	if (cr_run_ms(run) >= lim(run, CR_LIM_WALL))
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "wall",
			   "the wall-time limit fired");
	else
		poll_tasks(run);
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

		b->map_max = read_small("/proc/sys/vm/max_map_count", mm,
					sizeof(mm)) > 0 ? strtoull(mm, NULL, 10) : 0;
		if (!b->map_max)
			b->map_max = 65530;	/* the kernel's default */
		b->epoll_max = read_small("/proc/sys/fs/epoll/max_user_watches",
					  mm, sizeof(mm)) > 0 ?
			       strtoull(mm, NULL, 10) : 0;
		if (!b->epoll_max)
			b->epoll_max = 1u << 22;	/* unreadable: large */
		b->pipe_max = read_small("/proc/sys/fs/pipe-max-size", mm,
					 sizeof(mm)) > 0 ?
			      strtoull(mm, NULL, 10) : 0;
		if (!b->pipe_max)
			b->pipe_max = 1u << 20;	/* the kernel's default */
		/* Half the user's pipe allowance (0: none set). */
		b->pipeshare = cr_pipeshare_new(
			read_small("/proc/sys/fs/pipe-user-pages-soft", mm,
				   sizeof(mm)) > 0 ?
			strtoull(mm, NULL, 10) / 2 : 0);
		if (!b->pipeshare)
			return -ENOMEM;
		b->ino_full = read_small("/proc/sys/fs/inotify/max_queued_events",
					 mm, sizeof(mm)) > 0 ?
			      strtoull(mm, NULL, 10) : 0;
		if (!b->ino_full || b->ino_full > (1u << 24))
			b->ino_full = 1u << 24;	/* unreadable: large */
		/* each event in a 512-byte object at most, and the
		 * overflow event */
		b->ino_full = (b->ino_full + 1) * 512 + CR_BUDGET_FILE_KERNEL;
		b->ino_watch_cap = read_small("/proc/sys/fs/inotify/max_user_watches",
					      mm, sizeof(mm)) > 0 ?
				   strtoull(mm, NULL, 10) / 4 : 0;
		if (!b->ino_watch_cap)
			b->ino_watch_cap = 8192;	/* the old default */
		b->optmem_max = read_small("/proc/sys/net/core/optmem_max",
					   mm, sizeof(mm)) > 0 ?
				strtoull(mm, NULL, 10) : 0;
		if (!b->optmem_max)
			b->optmem_max = 1u << 20;	/* unreadable: large */
		b->sock_most = CR_BUDGET_SOCK + b->optmem_max +
			       sock_queue_most();
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
	if ((rc = add_walk_root(b, run->cfg, run->cfg->workspace)))
		return rc;
	for (size_t i = 0; !rc && i < run->cfg->cls->fs_write.n; i++)
		rc = add_walk_root(b, run->cfg, run->cfg->cls->fs_write.v[i]);
	for (size_t i = 0; !rc && i < run->cfg->extra_rw.n; i++)
		rc = add_walk_root(b, run->cfg, run->cfg->extra_rw.v[i]);
	if (rc)
		return rc;
	nested_roots_out(b);
	/* What the workspace holds before the run is not the run's. */
	rc = walk_full(run);
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
	b->seen_max = lim(run, CR_LIM_FILES) > SIZE_MAX / 4 - b->base_files ?
		      SIZE_MAX / 4 :
		      (size_t)(b->base_files + lim(run, CR_LIM_FILES)) +
		      CR_BUDGET_WALK_PER_TICK;
	{
		size_t pmax = cr_nofile_share(CR_BUDGET_PLACED_MAX);

		b->ws = cr_walkset_new(pmax < 16 ? 16 : pmax);
		if (!b->ws)
			return -ENOMEM;
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
	walk_reset(b);
	free(b->stack);
	free(b->fail_dir);
	cr_walkset_free(b->ws);
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
	ep_seen_clear(b);
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
	breach(run, id, got);
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
	unmeasurable(run, rc);
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
			task_close_fds(b, &run->tasks.slots[i]);
		}
	cpu_ms /= 1000000ull;
	wrc = walk_full(run);
	if (wrc == 0) {
		b->files = over(b->w_files, b->base_files);
		b->disk = over(b->w_bytes, b->base_bytes);
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
	if (cpu_ms > lim(run, CR_LIM_CPU))
		late_breach(run, CR_LIM_CPU, cpu_ms);
	else if (maxrss > lim(run, CR_LIM_MEMORY) && !b->pss_judged)
		/* One process alone held more than the whole tree may, by
		 * RSS. Judged so only when no tick ever had to weigh the
		 * tree by PSS: then sharing could explain it (a page shared
		 * with processes outside the run counts in RSS whole). */
		late_breach(run, CR_LIM_MEMORY, maxrss);
	else if (wrc < 0)
		late_unmeasurable(run, wrc);
	else if (b->files > lim(run, CR_LIM_FILES))
		late_breach(run, CR_LIM_FILES, b->files);
	else if (b->disk > lim(run, CR_LIM_DISK))
		late_breach(run, CR_LIM_DISK, b->disk);
	cr_budget_free(run);
}

/* An ACL in memory: its entries (8 bytes each, as in the attribute, whose
 * 4-byte header the kernel's 32 replace), rounded up by the allocator. */
static uint64_t acl_slab(uint64_t xattr_size)
{
	uint64_t n = xattr_size + 28, r = 32;

	while (r < n)
		r <<= 1;
	return r;
}

int cr_budget_on_create(struct cr_run *run, pid_t pid)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return -EDQUOT;	/* fail closed */
	if (b->hook_files + 1 > lim(run, CR_LIM_FILES)) {
		breach_how(run, CR_LIM_FILES, b->hook_files + 1, true);
		return -EDQUOT;
	}
	b->hook_files++;
	return cr_budget_on_acl_copy(run);
}

int cr_budget_on_acl_copy(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	/* Each inode made after a default ACL was set on tmpfs may copy it
	 * twice in memory (handlers/xattr.c): charged, up to what the files
	 * budget's worth of inodes and the unnamed files could hold at
	 * once. */
	if (b && run->tmpfs_acl_max) {
		uint64_t one = 2 * acl_slab(run->tmpfs_acl_max);
		uint64_t most = lim(run, CR_LIM_FILES);

		most = most > UINT64_MAX / one - CR_FS_HELD_MAX ? UINT64_MAX :
		       (most + CR_FS_HELD_MAX) * one;
		if (b->acl_bytes + one <= most) {
			b->acl_bytes += one;
			if (charge_for_good(run, one))
				return -ENOMEM;
		}
	}
	return 0;
}

void cr_budget_on_placed(struct cr_run *run, const struct cr_fsres *res)
{
	struct cr_budgets *b = run->budgets;
	struct stat st;
	int fd;

	/* A pass done within one tick cannot meet a move: only one spread
	 * over ticks is in progress while the loop serves the program. */
	/* The run's own /dev/shm objects (/dev/shm/NAME, in its private
	 * directory) are measured apart (fs/shm.c); a root the caller
	 * named under /dev/shm is walked like any other. */
	if (!b || !b->in_pass || !b->tracking || b->redo || res->via_link ||
	    (res->plen > 9 && !memcmp(res->path, "/dev/shm/", 9) &&
	     !memchr(res->path + 9, '/', res->plen - 9)))
		return;
	fd = openat(res->dirfd, res->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		/* Cannot follow it: the pass is redone in one go. */
		if (fd >= 0)
			close(fd);
		b->redo = true;
		return;
	}
	if (cr_walkset_place(b->ws, fd, st.st_dev, st.st_ino))
		b->redo = true;
}

void cr_budget_on_unnamed(struct cr_run *run, const struct stat *st)
{
	struct cr_budgets *b = run->budgets;

	if (b && b->ws && (S_ISDIR(st->st_mode) || st->st_nlink <= 1))
		cr_walkset_forget(b->ws, st->st_dev, st->st_ino);
}

void cr_budget_on_remove(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	/* Net entries: a run that makes and deletes temporary files all day
	 * holds few of them at once. */
	if (b && b->hook_files)
		b->hook_files--;
}

int cr_budget_on_write(struct cr_run *run, pid_t pid, uint64_t bytes)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return -EDQUOT;
	if (b->hook_bytes + bytes > lim(run, CR_LIM_DISK) ||
	    b->hook_bytes + bytes < b->hook_bytes) {
		breach_how(run, CR_LIM_DISK, b->hook_bytes + bytes, true);
		return -EDQUOT;
	}
	b->hook_bytes += bytes;
	return 0;
}

/*
 * The charges say the run is past its disk budget; but a charge may
 * already be in what was measured since (a file with a name, met by a
 * pass after it grew: a 200 MiB fallocate in the workspace was judged
 * 409 MiB). So before a breach everything is measured again, now, in one
 * go: the fd scan under way is finished, a new one made, then a full
 * pass; both start after every charge, so the charges are dropped and the
 * figure is exact. Its CPU is the run's (a program at the edge of its
 * budget could otherwise have the supervisor walk for it at every call).
 * 0, or -errno when a root cannot be measured (the run then ends).
 */
static int alloc_confirm(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns();
	int rc;

	if (b->fs_on)
		fdscan_run(run, SIZE_MAX);	/* started before the charge */
	fdscan_run(run, SIZE_MAX);
	rc = walk_full(run);
	if (!rc) {
		b->files = over(b->w_files, b->base_files);
		b->disk = over(b->w_bytes, b->base_bytes);
		b->al_scan = 0;
	}
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return rc;
}

int cr_budget_on_alloc(struct cr_run *run, pid_t pid, uint64_t bytes)
{
	struct cr_budgets *b = run->budgets;
	uint64_t disk;
	int rc;

	(void)pid;
	if (!b)
		return -EDQUOT;
	b->al_pend += bytes;
	disk = alloc_judged(b);
	if (disk > lim(run, CR_LIM_DISK)) {
		rc = alloc_confirm(run);
		if (rc < 0) {
			unmeasurable(run, rc);
			return -EDQUOT;
		}
		disk = alloc_judged(b);
		if (disk > b->disk_peak)
			b->disk_peak = disk;	/* measured just now */
	}
	if (disk > lim(run, CR_LIM_DISK)) {
		breach_how(run, CR_LIM_DISK, disk, true);
		return -EDQUOT;
	}
	return 0;
}

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
static rlim_t past(uint64_t v, uint64_t add)
{
	return v + add < v || v + add >= (uint64_t)RLIM_INFINITY ?
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
	out[3] = (struct cr_child_rlimit){ RLIMIT_SIGPENDING,
					   { RLIM_INFINITY, RLIM_INFINITY } };
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
