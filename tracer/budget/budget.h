/* tracer/budget/budget.h: the run's budgets for cpu, memory, processes, disk
 * and files: how they are measured, reserved and enforced across the tree. */
#ifndef CORRAL_BUDGET_H
#define CORRAL_BUDGET_H

#include <sys/stat.h>

#include "../tracer.h"
#include "../child.h"

/* How often live tasks and the workspace are measured; every
 * CR_BUDGET_FAST_TICK_MS while memory or disk grows fast enough to come
 * near its budget within a tick. */
#define CR_BUDGET_TICK_MS 50
#define CR_BUDGET_FAST_TICK_MS 10
/* Fast ticks once a tick's growth would cover this fraction (1/N) of
 * what is left of the budget: a rate may grow several times between two
 * ticks (budget.c, pace_ticks). */
#define CR_BUDGET_PACE_MARGIN 4
/* Fast ticks while a tick's reading of the tasks costs less CPU than
 * this, whatever the growth. */
#define CR_BUDGET_CHEAP_TICK_NS 200000ull
/* A tree dear to read of at most this many processes: their resident
 * sizes alone are read at the fast ticks between two full readings. */
#define CR_BUDGET_QUICK_PROCS 64
/* Fast ticks for the first this many ms of a run, whatever the growth. */
#define CR_BUDGET_START_FAST_MS 200
/* Files without a name and the run's /dev/shm, measured between fd scans
 * (ledger_tick) at a tick once this many times the last measure's CPU
 * has passed: at most 1/20 of a core. */
#define CR_BUDGET_QUICK_IDLE 20
/* Threads and processes alive at once: at most this many times the
 * processes budget (64 -> 2048 tasks). */
#define CR_BUDGET_THREADS_PER_PROC 32
/* Directory entries the workspace walk looks at per tick: bounds the work
 * of one tick whatever the program made. */
#define CR_BUDGET_WALK_PER_TICK 2048
/* After a pass, wait this many times its CPU cost before the next. */
#define CR_BUDGET_WALK_IDLE 30
#define CR_BUDGET_WALK_IDLE_NEAR 3
/* Deeper directories cannot be measured with the walk's fd stack; a run
 * that makes one is stopped ("files"): fail closed, never undercount.
 * gnulib's getcwd checks in configure scripts nest ~450-570 levels
 * (1366 natively; corral refuses names past PATH_MAX first): 128 ended
 * tar's configure (found by a probing session). */
#define CR_BUDGET_WALK_DEPTH 4096
/* Objects given a new name (moved, linked, made) during one pass that
 * the pass follows (an O_PATH descriptor each, and at most 1/16 of the
 * supervisor's RLIMIT_NOFILE), and entries the end of a pass may measure
 * for them; past either the pass is redone in one go (walkset.c). */
#define CR_BUDGET_PLACED_MAX 1024
#define CR_BUDGET_FIXUP_MAX 8192
/* Writable roots measured (the workspace, the class's, --rw). */
#define CR_BUDGET_MAX_ROOTS 32
/* /proc descriptors kept open across ticks (two per task at most). */
#define CR_BUDGET_FD_CACHE 512
/* Live tasks past which each tick first asks every process's own CPU
 * total (memory.c: cpu_quick_breach). */
#define CR_BUDGET_QUICK_CPU_TASKS 64
/* ...and then reads this many threads' own CPU a tick, in turn. */
#define CR_BUDGET_CPU_READS 256
/* Open unlinked files and pipes told apart per fd scan (past that,
 * counted each time met): a hash set that grows to this many entries
 * (16 bytes each), from CR_BUDGET_SEEN_MIN. */
#define CR_BUDGET_SEEN_MAX (1u << 20)
#define CR_BUDGET_SEEN_MIN 1024u
/* The fd tables are read at most every MIN_MS, and after IDLE times the
 * cost of the last reading. */
#define CR_BUDGET_FDSCAN_MIN_MS 500
#define CR_BUDGET_FDSCAN_IDLE 30
/* fd entries read per step of a scan (a step per tick, one per walk). */
#define CR_BUDGET_FDSCAN_STEP 4096
/* ...and a tick's step ends past this much time, whatever is left: an
 * entry can be dear (an epoll's fdinfo of many watches). */
#define CR_BUDGET_FDSCAN_STEP_NS 20000000ull
/* Epoll instances whose fdinfo took over 1 ms to read, remembered per
 * scan so their duplicates are not read again (fdscan_anon). */
#define CR_BUDGET_EPOLL_DEAR 32
/* An fd scan in one go (cr_budget_rescan_now) only when the last whole
 * scan cost less than this CPU; else the table waits for the paced one. */
#define CR_BUDGET_RESCAN_NOW_MAX_CPU_NS 50000000ull
/* A full list of followed sockets is pruned at a program's call at most
 * every IDLE times the last prune's cost, and at most every MIN_MS. */
#define CR_BUDGET_SOCKPRUNE_MIN_MS 50
/* Tasks reaped before their parent's fork event was seen, remembered so
 * the event does not bring them back. */
#define CR_BUDGET_GONE_EARLY 1024
/* Page tables of every level are at most one 4 KiB page per mapped page
 * each (a page alone in its 2 MiB, 1 GiB and 512 GiB spans): a bound of
 * this many times a process's address space. */
#define CR_BUDGET_PTE_BOUND 3
/* What one entry of a blocked poll or select may hold: its wait-queue
 * entry (~70 B measured) and a reference to a file its table may have
 * closed since (an eventfd ~1.6 KiB). */
#define CR_BUDGET_POLL_ENTRY (2ull << 10)
/* Polls and selects of fewer descriptors are not notified (tracer/
 * syscalls.def: "any bit of ~7"): each task is charged for them. */
#define CR_BUDGET_POLL_FREE 7
/* Kernel memory of a live task counted against memory: its stack (16 KiB
 * on x86-64), its descriptors in slab (~8 KiB measured), and what an
 * unnotified poll of it may hold. */
#define CR_BUDGET_TASK_KERNEL ((24ull << 10) + \
			       CR_BUDGET_POLL_FREE * CR_BUDGET_POLL_ENTRY)
/* Kernel memory a mapping (VMA) holds: its vm_area_struct and its share
 * of the maple tree (16 processes x 65 508 PROT_NONE mappings held 254 MiB
 * of unreclaimable slab: ~250 B each, measured). A mapping covers a page
 * at least, so a process's count is at most its address space in pages,
 * and vm.max_map_count. */
#define CR_BUDGET_VMA_BYTES 256u
/* A process's mappings are counted again at most every this many ticks,
 * and all counting waits this many times its own CPU cost after each
 * count (reading 65 000 mappings costs ~17 ms). */
#define CR_BUDGET_VMA_TICKS 10
#define CR_BUDGET_VMA_IDLE 10
/* ...and one poll counts for this much of its CPU time at most. */
#define CR_BUDGET_VMA_SLICE_NS (5 * 1000000ull)
/* Kernel memory of one byte-range lock record (struct file_lock: 2
 * million records held +380 MB of slab, measured), and the CPU one count
 * of them may take before it is given up (the bound then stands). */
#define CR_BUDGET_LOCK_BYTES 200u
#define CR_BUDGET_LOCK_SLICE_NS (250 * 1000000ull)
/* ...and the calls' bound past the last count at which a poll counts
 * again, to keep the figure near what is held. */
#define CR_BUDGET_LOCK_SLACK (4ull << 20)
/* Kernel memory of a socket itself, queued bytes apart: its sock, inode,
 * file and their slab neighbours (16 processes x 19 900 of each, measured:
 * a unix socket of a pair ~3.3 KiB, TCP ~4.1 KiB, UDP ~3.3 KiB); one
 * figure for all, the dearest. */
#define CR_BUDGET_SOCK 4608u
/* ...and of any other open file a descriptor names (its struct file and
 * what the kind adds: an eventfd ~1.6 KiB, a timerfd, an epoll instance
 * or a /dev/null open ~1.1 KiB, measured the same way). */
#define CR_BUDGET_FILE_KERNEL 1536u
/* ...and each slot of an fd table, used or not: the file pointer and its
 * share of the three bitmaps (8 B + 3 bits), rounded up. */
#define CR_BUDGET_FD_SLOT 9u
/* A seccomp filter of the program's at its largest (4 096 instructions:
 * ~88 KiB of slab and vmalloc, measured), and one Landlock rule (~110 B:
 * 4 million held 435 MiB). */
#define CR_BUDGET_SECCOMP_FILTER (96u << 10)
#define CR_BUDGET_LANDLOCK_RULE 128u
/* Kernel memory of one epoll watch (epitem and its wait-queue entry:
 * 1 000 000 watches held +200 MB of slab, measured). */
#define CR_BUDGET_EPOLL_WATCH 208u
/* What a pipe holds in the kernel besides the data it queues: its ring,
 * the page it keeps after a read, its inode, dentry and two files (4 x
 * 9 000 pipes, each written and read once: 3-5 KiB each, measured). */
#define CR_BUDGET_PIPE_KERNEL (6u << 10)
/* An inotify event queued: what the reader is told (FIONREAD) is at least
 * a quarter of the slab behind it (a 16-byte event without a name sits in
 * a 64-byte object; with a 255-byte name 272 bytes sit in 512). */
#define CR_BUDGET_INOTIFY_SLAB 4u
/* inotify instances of one run alive at once (the user's whole allowance
 * is fs.inotify.max_user_instances, 128 by default): past it EMFILE, the
 * kernel's answer at that limit. */
#define CR_BUDGET_INOTIFY_MAX 32
/* An inotify watch: its mark (~80 B of unreclaimable slab, measured: 32 000
 * watches +2.5 MB) and the inode it pins in memory (~1.1 KiB on ext4; one
 * inode may be pinned by the watches of several instances: counted each
 * time, towards stopping). */
#define CR_BUDGET_INOTIFY_WATCH 1280u
/* The run's bound on its watches is checked against their count (the
 * "inotify wd:" lines of each instance's fdinfo) once it passes this. */
#define CR_BUDGET_INOTIFY_RECOUNT 1024u
/* A PSS judgement (every process's smaps_rollup) is free again only after
 * this many times its own CPU cost has passed (memory.c). */
#define CR_BUDGET_PSS_IDLE 30
/* ...but never more than this long after the last, whatever it cost: a
 * program can make judgements dear (many VMAs) and fool the estimate in
 * between (shared pages turned private at a flat RSS); a judgement dearer
 * than the pace allows is charged to the run's cpu budget. */
#define CR_BUDGET_PSS_MAX_GAP_MS 1000
/* RLIMIT_DATA is twice the memory budget, and at least this much past it. */
#define CR_BUDGET_DATA_SLACK_MIN (64ull << 20)
/* ...plus room for thread stacks, which RLIMIT_DATA counts though they are
 * reserved, not used: 256 threads of glibc's default 8 MiB. */
#define CR_BUDGET_DATA_STACKS (2048ull << 20)
/* RLIMIT_FSIZE past the disk budget: room for sparse files, whose size is
 * not what they take. */
#define CR_BUDGET_FSIZE_SLACK (16ull << 30)

struct cr_budgets;

/* sockmem.c: bytes queued in the run's sockets (memory budget). At
 * most this many sockets passed over SCM_RIGHTS are followed at once; past
 * that a send carrying one more fails with ETOOMANYREFS, the kernel's
 * answer for too many descriptors in flight. */
#define CR_SOCKMEM_SENT_MAX 65536
struct cr_sockmem;
struct cr_sockmem *cr_sockmem_new(void);
void cr_sockmem_free(struct cr_sockmem *s);
/* The run passed the socket with this inode: followed until gone. */
int cr_sockmem_sent(struct cr_sockmem *s, uint64_t ino);
/* A socket the run bound, connected, listened on or accepted (internet
 * or unix), or a unix pair corral made for it: followed like a passed
 * one, while a listing shows it, in a list of its own (at most
 * CR_SOCKMEM_SENT_MAX). A thread blocked in a call on it keeps it alive
 * after another thread closed its last descriptor: 40 clients blocked in
 * send with their fds closed held ~320 MiB of queues where no fd table
 * showed them (found by a probing session). -ETOOMANYREFS when the list
 * is full. */
int cr_sockmem_follow(struct cr_sockmem *s, uint64_t ino);
/* How many more cr_sockmem_follow takes before the next prune. */
size_t cr_sockmem_follow_room(const struct cr_sockmem *s);
/* The sockets followed (borrowed; their count); sorted right after a
 * cr_sockmem_measure that returned 0. */
size_t cr_sockmem_follow_list(const struct cr_sockmem *s, const uint64_t **v);
/* The sockets passed and still followed (borrowed; their count). */
size_t cr_sockmem_sent_list(const struct cr_sockmem *s, const uint64_t **v);
/* The run made a socket of this family (AF_INET, AF_INET6), type and
 * protocol: its kind is listed from now on. */
void cr_sockmem_kind(struct cr_sockmem *s, int domain, int type, int proto);
/* Has the run made a TCP socket (the one kind a program can map)? */
bool cr_sockmem_tcp_made(const struct cr_sockmem *s);
/* Bytes waiting in the run's sockets: those of the tables (inodes) and
 * the passed ones; forgets passed sockets that no longer exist. */
int cr_sockmem_measure(struct cr_sockmem *s, const uint64_t *tables,
		       size_t ntables, uint64_t *bytes);

/* listcache.c: the names of the directories the disk walk listed, kept
 * while corral's own inotify watch on each reports no change. */
struct cr_listcache;
#define CR_LISTCACHE_DIR_BYTES (256u << 10)	/* names of one directory */
#define CR_LISTCACHE_BYTES (16u << 20)		/* names and tables */
#define CR_LISTCACHE_WATCHES 4096		/* directories kept, at most */
/* At most `watches` (and CR_LISTCACHE_WATCHES) directories watched; NULL
 * when no inotify instance can be made: every pass lists. */
struct cr_listcache *cr_listcache_new(size_t watches);
void cr_listcache_free(struct cr_listcache *c);
/* The names kept for the directory st (NUL-separated, *len bytes) if no
 * change of its entries was reported since they were listed, else NULL. */
const char *cr_listcache_get(struct cr_listcache *c,
			     const struct stat *st, size_t *len);
/* A pass begins; at its end (complete) the listings of directories it did
 * not meet (get, watch) are dropped and their watches removed. */
void cr_listcache_pass(struct cr_listcache *c);
void cr_listcache_sweep(struct cr_listcache *c);
/* Before listing the directory st (opath: an fd of it, any kind): its
 * watch placed (or kept) and its older names dropped. A watch descriptor
 * for cr_listcache_put, or -1 when this directory's names cannot be kept
 * (bounds, the user's watches). */
int cr_listcache_watch(struct cr_listcache *c, int opath,
		       const struct stat *st);
/* Keep the names the directory st had when listed after
 * cr_listcache_watch gave wd; nothing is kept if a change was reported
 * since, or past the bounds. */
void cr_listcache_put(struct cr_listcache *c, const struct stat *st, int wd,
		      const char *names, size_t len);

/* walkset.c: what a pass of the disk walk measured, and the objects the
 * run placed in the writable roots while it ran. */
struct cr_walkset;
/* At most placed_max objects followed per pass. */
struct cr_walkset *cr_walkset_new(size_t placed_max);
void cr_walkset_free(struct cr_walkset *w);
/* A new pass: nothing seen (at most max inodes will be), nothing placed. */
void cr_walkset_clear(struct cr_walkset *w, size_t max);
/* The pass meets an inode: 0 the first time, 1 when met before; *counted
 * is then the bytes the pass counted for it so far. -E2BIG or -ENOMEM
 * when it cannot be held. */
int cr_walkset_see(struct cr_walkset *w, dev_t dev, ino_t ino,
		   uint64_t **counted);
/* Follow an object (fd: an O_PATH descriptor of it, consumed) for the
 * pass; one followed already is not added again. 0, -E2BIG when full,
 * -ENOMEM. */
int cr_walkset_place(struct cr_walkset *w, int fd, dev_t dev, ino_t ino);
/* Stop following an object (its last name went). */
void cr_walkset_forget(struct cr_walkset *w, dev_t dev, ino_t ino);
size_t cr_walkset_nplaced(const struct cr_walkset *w);
int cr_walkset_placed_fd(const struct cr_walkset *w, size_t i);

/* Area set-up, before the child exists: measures the workspace's baseline
 * and starts the poll timer. 0 or -errno. */
int cr_budget_setup(struct cr_run *run);
/* Area finisher, after the tree is reaped: last measurement, usage; frees
 * the area's state. */
void cr_budget_finish(struct cr_run *run);
/* stall.c's step, while the loop has waited waited_ns in a call: a
 * cancel pending, the wall, and the tree measured and judged for cpu and
 * memory as a tick does (no reaping, no ptrace, no read that takes a
 * process's memory-map lock; within the loop's own poll, lightly); on a
 * breach or a cancel every task is killed. */
void cr_budget_stall_tick(struct cr_run *run, uint64_t waited_ns);
/* A memory figure measured outside the ticks (the watchdog's verdict of
 * a held loop, stall.c): the usage's peak is at least it. */
void cr_budget_note_peak(struct cr_run *run, uint64_t bytes);
/* The loop, between two callbacks: a tick overdue, and the wall limit,
 * judged at once (cheap when nothing is due). */
void cr_budget_overdue(struct cr_run *run);

/* The per-process rlimit backstops the child sets before exec, computed
 * by the supervisor (the child makes system calls only): how many of out
 * were filled. */
size_t cr_budget_child_rlimits(const struct cr_limits *lim, bool data_backstop,
			       struct cr_child_rlimit out[CR_BUDGET_RLIMITS]);

/* ---- processes: reservations, settled by the ptrace state machine ---- */

/* A fork/vfork/clone notification from tid: settles any reservation the
 * task still holds (its earlier creation failed), then reserves a slot.
 * 0, or -EAGAIN when the budget is spent (the run is then ended). */
int cr_budget_reserve(struct cr_run *run, pid_t tid, bool thread);
/* The task's PTRACE_EVENT_FORK/VFORK/CLONE: its reservation became a task. */
void cr_budget_on_new_task(struct cr_run *run, struct cr_task *parent);
/* A new process (child) made by parent (any of its threads): whether it
 * shares the parent's address space (vfork, posix_spawn, CLONE_VM), so
 * that the memory budget counts that address space once. */
void cr_budget_on_new_process(struct cr_run *run, pid_t parent,
			      struct cr_task *child);
/* Any other stop of the task: a reservation it still holds failed. */
void cr_budget_on_stop(struct cr_run *run, struct cr_task *t);
/* The task is at its exit stop, or its exit is waiting to be collected
 * (it is still a zombie, so its /proc entry is readable): read its final
 * CPU time and, while it still has one, its address space's memory. */
void cr_budget_on_exit(struct cr_run *run, pid_t tid);
/* The task asked to exec (its notification): its address space, about to
 * be dropped, is measured against the memory budget. */
void cr_budget_before_exec(struct cr_run *run, pid_t tid);
/* A non-leader thread exec'd and took over the leader's tid; former (its
 * old entry) is about to leave the table. */
void cr_budget_on_exec(struct cr_run *run, struct cr_task *leader,
		       struct cr_task *former);
/* Was tid reaped before its parent's fork event announced it? (Then the
 * event must not add it back.) Forgets it. */
bool cr_budget_gone_early(struct cr_run *run, pid_t tid);
bool cr_budget_zombie(struct cr_run *run, pid_t pid);
/* Only whether pid is in the list of zombies kept (no system call): a
 * number never listed is no zombie of the run. */
bool cr_budget_zombie_listed(const struct cr_run *run, pid_t pid);
/* The task is about to leave the table. */
void cr_budget_on_gone(struct cr_run *run, struct cr_task *t);

/* ---- disk and files: hooks for the filesystem layer ----
 *
 * Called by the filesystem layer before it performs a creation (open with
 * O_CREAT of a new file, mkdir, mknod, symlink, link, rename onto a new
 * name) for the program: 0 to go ahead, or -EDQUOT when the files budget is
 * spent (the run is then ended; the creation must not be performed). */
int cr_budget_on_create(struct cr_run *run, pid_t pid);
/* An inode made without a name (O_TMPFILE): it copies a default ACL as a
 * named one does (included in cr_budget_on_create). 0, or -ENOMEM when
 * the memory budget is spent. */
int cr_budget_on_acl_copy(struct cr_run *run);
/* Called by the filesystem layer when it learns that the program's writes
 * grew a file by `bytes` (e.g. a write it performed). 0, or -EDQUOT when the
 * disk budget is spent (the run is then ended). */
int cr_budget_on_write(struct cr_run *run, pid_t pid, uint64_t bytes);
/* The supervisor just allocated `bytes` of memory-backed storage for the
 * program (fallocate on tmpfs, handlers/alloc.c): charged until an fd scan
 * and then a walk have measured it. 0, or -EDQUOT when the disk budget is
 * spent (the run is then ended). */
int cr_budget_on_alloc(struct cr_run *run, pid_t pid, uint64_t bytes);
/* The ledger of files without a name (fs/held.c) keeps a new entry: the
 * next fd scan comes as soon as its pacing by cost allows. */
void cr_budget_rescan_soon(struct cr_run *run);
/* The fd scan now, in one go (its CPU the run's): for a table full until
 * a scan lets some go. At most once every CR_BUDGET_RESCAN_NOW_NS, unless
 * earned (the caller's table took that many new entries since its last
 * scan, so scans are paid for by the calls that filled it). Whether it
 * ran. */
#define CR_BUDGET_RESCAN_NOW_NS 10000000ull
bool cr_budget_rescan_now(struct cr_run *run, bool earned);
/* CPU corral spent doing a task's work for it (a copy the kernel would
 * have made in the task's own time): counted as the run's, for good. */
void cr_budget_charge_cpu(struct cr_run *run, uint64_t ns);
/* The memory budget and the tree's resident memory at the last tick (the
 * machine sysinfo shows the run: handlers/sysinfo.c). */
void cr_budget_memory_view(const struct cr_run *run, uint64_t *limit,
			   uint64_t *used);
/* The supervisor is about to pass fd (ours) over SCM_RIGHTS for the
 * program: a socket is followed for the memory budget wherever it goes.
 * 0, or -errno to refuse the send. */
int cr_budget_on_send_fd(struct cr_run *run, int fd);
/* The program is about to set a byte-range lock (fcntl F_SETLK,
 * F_SETLKW; ofd: F_OFD_SETLK, F_OFD_SETLKW): 0 to let it, or -ENOLCK when
 * the records it may add would pass the memory budget (the run is then
 * ended). */
int cr_budget_on_lock(struct cr_run *run, bool ofd);
/* The program is about to make a kernel object corral cannot see go
 * (a seccomp filter of its own, a Landlock rule or domain): charged to
 * memory for the run's life. 0, or -ENOMEM when that passes the memory
 * budget (the run is then ended). */
enum cr_kobj {
	CR_KOBJ_SECCOMP,
	CR_KOBJ_LANDLOCK_RULE,
	CR_KOBJ_LANDLOCK_DOMAIN,
};
int cr_budget_on_kernel_object(struct cr_run *run, enum cr_kobj kind);
/* Thread tid is about to make a shared anonymous memory object of len
 * bytes (mmap MAP_SHARED of MAP_ANONYMOUS or /dev/zero; page-rounded):
 * charged until scans show it gone (shanon.c). 0, or -ENOMEM when that
 * passes the memory budget (the run is then ended) or the ledger is
 * full. */
int cr_budget_on_shared_anon(struct cr_run *run, pid_t tid, uint64_t len);
/* Thread tid is about to wait in poll, ppoll, select or pselect6 over
 * this many descriptors (capped at its RLIMIT_NOFILE): each entry may
 * hold a file its table has closed, and the kernel's wait-queue entry,
 * for as long as the call waits. Charged until the thread's next such
 * call or its end (a signal handler's calls and the kernel's restart of
 * the wait prove nothing). 0, or -ENOMEM past the memory budget (the run
 * is then ended). */
int cr_budget_on_poll(struct cr_run *run, pid_t tid, uint64_t entries);
/* Thread tid is about to map a file shared, len bytes (page-rounded), a
 * file other than /dev/zero when corral looked: charged only if a scan
 * finds an object it may have made (a thread could swap the descriptor
 * for a writable /dev/zero; shanon.c). gated: the run cannot have a
 * /dev/zero yet, so no candidate unless one comes in while the call is in
 * flight. 0, or -ENOMEM when the list of such calls is full. */
int cr_budget_on_shared_file(struct cr_run *run, pid_t tid, uint64_t len,
			     bool gated);
/* A /dev/zero may be in the run from now (handlers/kmem.c): the calls
 * recorded gated and still in flight become candidates. */
void cr_budget_zero_reachable(struct cr_run *run);
/* Thread tid was seen at a notification or a stop, or is gone: the calls
 * it made before are done (shanon.c). */
void cr_budget_task_seen(struct cr_run *run, pid_t tid);
/* A System V object the supervisor made for the run: its fixed charge,
 * counted until removed. 0, or -ENOMEM past the memory budget (the run is
 * then ended). */
int cr_budget_on_ipc(struct cr_run *run, uint64_t bytes);
/* Memory the supervisor holds for the run until a poll sees it in its own
 * sum (a waiting send's buffers: cr_net_deferred_bytes): the same check.
 * 0, or -ENOMEM past the memory budget (the run is then ended). */
int cr_budget_on_held(struct cr_run *run, uint64_t bytes);
/* The supervisor made a pipe for the run (handlers/pipe.c): both ends
 * are followed to their end, without a reference, so a pipe no fd table
 * shows is still charged. 0, or -errno: then the pipe must not reach the
 * run. */
int cr_budget_on_pipe(struct cr_run *run, const int ends[2]);
/* fcntl(F_SETPIPE_SZ, arg) of the program, performed on fd, corral's copy
 * of its descriptor: growing past the run's share of its user's pipe
 * allowance (half of fs.pipe-user-pages-soft; tracer/budget/pipeshare.c) is
 * refused EPERM, as the kernel refuses a user past the soft limit. The
 * new size, or -errno. */
int cr_budget_pipe_resize(struct cr_run *run, int fd, unsigned long arg);
/* Past the share, a new pipe gets this many slots, as a user past the
 * soft limit does. */
#define CR_BUDGET_PIPE_MIN_SLOTS 2
#define CR_BUDGET_PIPE_REFRESH_MS 100
/* The supervisor opened fd for the run (any open it performs): a FIFO, or
 * another file of a pipe (a reopen through /proc/PID/fd), keeps its pipe
 * alive as the pipe's own ends do, so it is followed the same way. 0, or
 * -errno: then fd must not reach the run. */
int cr_budget_on_opened(struct cr_run *run, int fd);
/* The supervisor made an inotify instance for the run
 * (handlers/inotify.c): followed to its end without a reference, so one
 * no fd table shows is charged its fullest queue. 0, or -errno (EMFILE
 * past CR_BUDGET_INOTIFY_MAX alive): then it must not reach the run. */
int cr_budget_on_inotify(struct cr_run *run, int fd);
/* Before the supervisor adds a watch for the run (handlers/xattr.c): 0, or
 * -ENOSPC (the kernel's answer at the user's limit) when the run holds a
 * quarter of the user's fs.inotify.max_user_watches, which it shares with
 * the host. cr_budget_on_watch: a watch was added that may be new. */
int cr_budget_watch_room(struct cr_run *run);
void cr_budget_on_watch(struct cr_run *run);
/* Filesystems of pipes and FIFOs one run's follows may span. */
#define CR_BUDGET_PIPE_DEVS 64
/* The program asks for an internet socket: its kind's queues are measured
 * from now on (the listings of kinds the run never made are skipped). */
void cr_budget_on_inet_socket(struct cr_run *run, int domain, int type,
			      int proto);
/* A socket of the run bound, connected, listening or accepted, internet
 * or unix (its inode): followed until no listing shows it
 * (cr_sockmem_follow), so a blocked call holding it after its last
 * descriptor went does not hide its queues. 0, or -ENOBUFS when the list
 * is full of live sockets (then the call must not be made: a socket no
 * list follows could hide its queues at once). */
int cr_budget_on_socket_used(struct cr_run *run, uint64_t ino);
/* A unix socket pair the supervisor made for the run (handlers/socket.c):
 * both ends followed the same way. 1 when followed, 0 when nothing
 * measures sockets (no budgets, no sock_diag), or -errno (ENOBUFS: no
 * room until a scan lets some go): then the pair must not reach the
 * run. */
int cr_budget_on_socket_pair(struct cr_run *run, const uint64_t ino[2]);
/* Are the run's sockets' queues measured at all (budgets, sock_diag)? */
bool cr_budget_sockets_measured(const struct cr_run *run);
/* The filesystem layer is about to change, or just changed, the names of
 * the object res names (in a writable root; /dev/shm is measured apart):
 * a creation, a rename's
 * or link's new name, both names of an exchange, a name about to be
 * removed from a file that keeps others. A pass of the disk walk in
 * progress measures it at its end wherever it went, unless the walk met
 * it (a pass spread over ticks could otherwise be dodged by moving data
 * behind the walker). */
struct cr_fsres;
void cr_budget_on_placed(struct cr_run *run, const struct cr_fsres *res);
/* The last name of the object st describes (res's lstat before) just
 * went: the pass stops following it. Its storage is the ledger's
 * business from now on (fs/held.c), and a handle of ours must not keep it
 * on the disk. */
void cr_budget_on_unnamed(struct cr_run *run, const struct stat *st);
/* An entry of a writable root was removed (unlink, rmdir, a rename onto an
 * existing name): the files count is of entries the run added, net. */
void cr_budget_on_remove(struct cr_run *run);
/* A measure needed a descriptor of ours and got err: when it is EMFILE or
 * ENFILE, end the run ("files") and return true. What the run makes corral
 * hold is bounded well below its limit, so this is a backstop: a budget is
 * never left unmeasured, and the host is not blamed for the run's doing. */
bool cr_budget_fds_short(struct cr_run *run, int err, const char *what);

#endif
