/* tracer/budget/internal.h: what the files of tracer/budget/ share and nothing
 * else includes: the budgets' state and the helpers one file lends another. */
#ifndef CORRAL_BUDGET_INTERNAL_H
#define CORRAL_BUDGET_INTERNAL_H

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <sys/stat.h>

#include "budget.h"

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
	bool pss_judged;		/* a tick's RSS sum was over the budget,
					 * and sharing may explain it */
	/* The last judgement read the tree's RSS afresh (with its PSS, from
	 * the same smaps_rollup files): was it still over the budget? */
	bool pss_fresh, pss_rss_over;
	/* The last PSS judgement that found the tree under its RSS sum:
	 * between judgements its result, plus every process's growth since,
	 * stands in for the tree's PSS (pss_estimate). */
	bool pss_have;
	uint64_t pss_last, pss_gen;
	uint64_t pss_next_ns;		/* no free judgement before this */
	/* The loop's poll is under way (it may be waiting in one of the
	 * reads below, a stall the watchdog then judges lightly); the
	 * watchdog's own poll runs (no read that takes a process's
	 * memory-map lock: the program may hold it, stall.c). */
	bool polling, stalled;
	uint64_t stall_ns;		/* how long the loop has waited */

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
	uint64_t sockprune_next_ns;	/* no prune_followed before */
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
	struct bg_listing {		/* per stack level (walk_enter) */
		bool record;		/* its listing is being recorded */
		struct stat st;		/* the directory (quiet: no times) */
		int wd;			/* its watch, placed before */
	} *listing;			/* owned, stackcap of them */
	struct cr_listcache *lc;	/* owned: listings kept (may be NULL) */
	dev_t lc_dev;			/* the last device asked... */
	bool lc_dev_known, lc_dev_ok;	/* ...whether its ctimes are kept */
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

/* budget.c */
uint64_t bg_lim(const struct cr_run *run, enum cr_limit_id id);
void bg_breach_how(struct cr_run *run, enum cr_limit_id id, uint64_t got,
		   bool refused);
void bg_breach(struct cr_run *run, enum cr_limit_id id, uint64_t got);
void bg_breach_threads(struct cr_run *run, uint64_t got, uint64_t max);
int bg_read_small(const char *path, char *buf, size_t len);
/* A read of a /proc file that takes a process's memory-map lock (maps),
 * marked for the watchdog (stall.c): read(2)'s answer. */
ssize_t bg_read_held(int fd, void *buf, size_t len);
int bg_read_task_file(struct cr_budgets *b, int *slot, const char *path,
		      char *buf, size_t len);
void bg_task_close_fds(struct cr_budgets *b, struct cr_task *t);
int bg_stat_cpu_ns(const char *buf, uint64_t *ns);
/* A process's own CPU (every thread of it, live or gone) and resident
 * size, added to *cpu_ns and *rss (either NULL: not read); a process
 * gone adds nothing. */
void bg_proc_use(pid_t pid, uint64_t *cpu_ns, uint64_t *rss);
bool bg_measured(struct cr_run *run, const struct cr_task *t, int rc);
pid_t bg_read_tgid(pid_t tid);
bool bg_ours(const struct cr_task *t);

/* procs.c */
void bg_note_peaks(struct cr_run *run);
void bg_prune_zombies(struct cr_budgets *b);

/* memory.c */
int bg_read_thread_cpu(struct cr_budgets *b, struct cr_task *t,
		       uint64_t *ns);
uint64_t bg_sock_queue_most(void);
int bg_read_rss(struct cr_budgets *b, struct cr_task *t, uint64_t *bytes,
		uint64_t *vsize);
void bg_memory_leaving(struct cr_run *run, struct cr_budgets *b,
		       struct cr_task *t, bool any_thread);
void bg_poll_tasks(struct cr_run *run);
bool bg_task_closed(pid_t tid);
int bg_charge_for_good(struct cr_run *run, uint64_t bytes);

/* fdscan.c */
bool bg_shares_leader_files(const struct cr_task *t);
int64_t bg_fdinfo_lines(int dir, const char *name, const char *prefix);
void bg_ep_seen_clear(struct cr_budgets *b);
uint64_t bg_shm_quick(struct cr_run *run, bool always);
void bg_fdscan_run(struct cr_run *run, size_t budget);

/* disk.c */
void bg_walk_reset(struct cr_budgets *b);
uint64_t bg_over(uint64_t v, uint64_t base);
void bg_unmeasurable(struct cr_run *run, int rc);
void bg_ledger_tick(struct cr_run *run);
void bg_walk_tick(struct cr_run *run);
int bg_add_walk_root(struct cr_budgets *b,
		     const struct cr_run_config *cfg, const char *root);
void bg_nested_roots_out(struct cr_budgets *b);
int bg_walk_full(struct cr_run *run);

#endif
