/* tracer/tracer.h: the supervisor's internal types: one run's configuration,
 * its live state (tasks, streams, denials) and the verdicts handlers return. */
#ifndef CORRAL_TRACER_H
#define CORRAL_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <linux/seccomp.h>
#include <linux/filter.h>

#include "corral/policy.h"
#include "corral/result.h"
#include "corral/util.h"
#include "termsafe.h"

#define CR_VERSION "0.1.0"

/* ---- configuration of one run (immutable once the child exists) ---- */

/* A root the caller named, as the operator-path walk opened it before
 * anything ran: the rules' real path, the resolver's fd, Landlock's rule
 * and the disk walk take it from here, never from the name again, so a
 * link a live run's program swaps in afterwards steers none of them. */
struct cr_pin {
	char *given;		/* owned: the root as written */
	char *real;		/* owned: where the walk led; NULL if absent */
	int fd;			/* owned: O_PATH, what the walk opened, or -1:
				 * absent then, never resolved by name */
	bool dir;
};

struct cr_run_config {
	struct cr_policy *policy;	/* owned */
	const struct cr_class *cls;	/* borrowed from policy */
	char *policy_file;		/* borrowed (argv) or NULL for built-in */
	const char *request_file;	/* borrowed (argv) or NULL */
	struct stat rules_st[2];	/* the policy and request files as
					 * read, st_nlink 0 for none (run.c) */
	struct cr_request *req;		/* owned, may be NULL */
	char *task_id;			/* owned */
	char **argv;			/* borrowed (argv or req) */
	char *cwd;			/* borrowed, relative to workspace, or NULL */
	char *workspace;		/* owned, absolute */
	bool ws_private;		/* made by us, removed at the end */
	bool ws_unsafe;			/* --workspace-unsafe */
	int ws_lockfd;			/* owned: flock of a private one, or -1 */
	int ws_fd;			/* owned: O_PATH fd of the workspace
					 * judged, or -1 before it is made */
	struct cr_limits limits;	/* effective budgets */
	char **envp;			/* owned, NULL-terminated */
	bool json;
	bool stacks;			/* --stacks: unwind denied callers */
	const char *result_file;	/* borrowed */
	int result_dirfd;		/* owned: its directory, opened before the
					 * program runs; -1 without --result */
	const char *audit_file;		/* borrowed */
	const char *stdin_text;		/* borrowed from req, NULL: inherit */
	size_t stdin_len;
	struct cr_strlist extra_ro, extra_rw, extra_exec, allow_net; /* owned */
	struct cr_pin *pins;		/* owned: roots walked once (run.c) */
	size_t npins;
	const char *require;		/* borrowed: --require LEVEL, or NULL */
	uint16_t *publish;		/* owned: --publish ports */
	size_t npublish;
	/* data in and out (tracer/io/) */
	struct cr_strlist inputs;	/* owned: --input SRC[:DEST] as given */
	struct cr_strlist outputs;	/* owned: --output GLOB */
	const char *output_dir;		/* borrowed: --output-dir */
	bool output_overwrite;		/* --output-overwrite */
	unsigned char policy_sha256[32];	/* the policy document as read */
	unsigned char request_sha256[32];	/* the request document, if any */
	enum cr_landlock_mode landlock;	/* the class's, or --landlock */
	bool strict_metadata;		/* the class's, or --strict-metadata */
	bool fast_open;			/* the class's, or --fast-open */
	bool data_backstop;		/* RLIMIT_DATA set (not lifted by
					 * --no-data-backstop or the class) */
};

/* ---- verdicts: what a syscall handler decides; only the loop answers ---- */

enum cr_verdict_kind {
	CR_V_ERRNO,	/* fail the call with -error */
	CR_V_VALUE,	/* the call "returned" val (performed by the supervisor) */
	CR_V_CONTINUE,	/* let the kernel run it: only for register-only verdicts */
	CR_V_KILL,	/* kill the whole tree: policy_denied */
	CR_V_SENT,	/* already answered (ADDFD with SEND): nothing to send */
};

struct cr_verdict {
	enum cr_verdict_kind kind;
	int error;	/* positive errno for CR_V_ERRNO */
	int64_t val;	/* for CR_V_VALUE */
};

/* How an entry survives a racing thread in the tracee. */
enum cr_stance {
	CR_STANCE_REGS,		/* verdict from registers only: may CONTINUE */
	CR_STANCE_EMULATED,	/* reads tracee memory: the supervisor performs it */
	CR_STANCE_REFUSED,	/* always an error, reads nothing */
	CR_STANCE_RECHECKED,	/* reads tracee memory, but only gates a call
				 * whose effect is verified again on kernel
				 * state (the exec image at PTRACE_EVENT_EXEC)
				 * or re-checked at every later use (the cwd):
				 * may CONTINUE */
};

#define CR_V_ERR(e) ((struct cr_verdict){ .kind = CR_V_ERRNO, .error = (e) })
#define CR_V_VAL(v) ((struct cr_verdict){ .kind = CR_V_VALUE, .val = (v) })
#define CR_V_CONT ((struct cr_verdict){ .kind = CR_V_CONTINUE })

struct cr_run;
struct cr_syscall_entry;
typedef struct cr_verdict (*cr_handler_fn)(struct cr_run *run,
					    const struct cr_syscall_entry *e,
					    const struct seccomp_notif *n);

struct cr_syscall_entry {
	const char *name;
	int nr;			/* resolved at start; < 0: not on this arch */
	cr_handler_fn handler;
	enum cr_stance stance;
	const char *reason;	/* for refused calls: why, as it appears in denials */
	int arg;		/* >= 0: notify only when (args[arg] & mask) == value */
	uint64_t mask, value;
	bool nonzero;		/* instead: notify only when args[arg] != 0 */
	uint64_t notall;	/* if set, also: not every bit of it is set */
	uint64_t anybits;	/* instead: notify when any bit of it is set */
};

struct cr_syscall_errno {
	const char *name;
	int nr;
	int error;
	int arg;		/* >= 0: only when (args[arg] & mask) == value */
	uint64_t mask, value;
};

/* The fast path of one entry (syscalls.def, CR_SYSCALL_FAST). */
struct cr_syscall_fast {
	const char *name;
	int arg;		/* < 0: never notified on the fast path */
	uint64_t mask;		/* else notified when any of these bits is set */
	int level;		/* 1: metadata, 2: read-only opens too */
};

/* Fast-path levels (run->fast_path, cr_filter_build_profile). */
#define CR_FAST_OFF 0
#define CR_FAST_METADATA 1
#define CR_FAST_OPEN 2

/* ---- live state ---- */

enum cr_task_state {
	CR_TS_STARTING,	/* announced by a fork event, its first stop not seen */
	CR_TS_RUNNING,
	CR_TS_STOPPED,	/* in group-stop, held with PTRACE_LISTEN */
	CR_TS_EXITING,	/* PTRACE_EVENT_EXIT seen */
	CR_TS__COUNT
};

/* Per-task measures of the budgets area (tracer/budget/). */
struct cr_task_budget {
	uint64_t cpu_ns;	/* this thread's CPU time, last read */
	uint64_t rss;		/* its process's resident bytes (leaders) */
	uint64_t mem_tick;	/* the poll that last counted its memory */
	uint64_t size_tick;	/* the poll that counted a process through it */
	uint64_t shanon_gen;	/* the scan of maps that read its process */
	uint64_t poll_bytes;	/* its last notified poll or select's charge */
	uint64_t vsize;		/* ...and its address space then, bytes */
	uint64_t vmas;		/* its process's mappings, last counted... */
	uint64_t sock_maps;	/* ...of them, the sockets it maps (distinct) */
	uint64_t *sock_inos;	/* ...their inodes, sorted; owned */
	uint64_t vma_tick;	/* ...at this poll (0: never) */
	uint64_t pss_rss;	/* its resident bytes, last reading... */
	uint64_t pss_grown;	/* ...and their growth, summed tick by
				 * tick, since PSS judgement number... */
	uint64_t pss_gen;	/* ...pss_gen (0: none) */
	pid_t tgid;		/* 0 until read */
	uint64_t vm_group;	/* leaders: its address space is shared with
				 * another process of the run (vfork,
				 * posix_spawn, clone(CLONE_VM)): the group's
				 * number, counted once; 0: its own */
	int fd_cpu, fd_mem, fd_status;	/* open /proc files, fd + 1; 0:
					 * none; owned */
	bool creating;		/* holds a fork/vfork/clone reservation */
	bool creating_proc;	/* ...for a process, not a thread */
	bool announced;		/* its parent's fork event has been seen */
};

struct cr_task {
	pid_t tid;		/* 0: free slot */
	pid_t tgid;		/* its process (thread group) */
	int pidfd;		/* thread-group leaders only, else -1; owned */
	int tpidfd;		/* threads: a PIDFD_THREAD pidfd, opened at the
				 * first copy of one of its fds; -1 until then;
				 * owned */
	enum cr_task_state state;
	bool leader;
	bool initial;		/* the first process of the run */
	bool execed;		/* past an exec: until its first, the
				 * initial process shares corral's memory
				 * (clone(CLONE_VM), spawn.c) */
	bool seen;		/* a stop or event of its own has arrived */
	bool undumpable;	/* the process asked PR_SET_DUMPABLE 0
				 * (on its leader's entry; not made) */
	bool restart_native;	/* answered ERESTARTSYS on purpose: its
				 * next signal stop leaves it as is */
	bool stop_kick;		/* another thread of its process entered a
				 * group stop since its last call began */
	/* The timed wait an ignored signal last made again (notify.c): its
	 * number and arguments, when it was first made again, and its
	 * timeout in ns (0: none). */
	long rs_nr;
	uint64_t rs_args[6], rs_first_ns, rs_timeout_ns;
	bool lock_wait;		/* a blocking lock call of its was continued
				 * into the kernel's wait: an ERESTARTSYS of
				 * that call is the kernel's (notify.c) */
	uint64_t start;		/* start time (clock ticks after boot, field
				 * 22 of /proc/TID/stat); 0: unknown */
	bool umask_moving;	/* a umask call of its was answered and may
				 * not have run yet (until its next
				 * notification or its end) */
	uint16_t umask;		/* its umask as read from /proc... */
	uint32_t umask_gen;	/* ...at this generation (0: never) */
	/* Leaders: which process of the run this is (1, 2, ... never
	 * reused as pids are) and which made it (0: corral). */
	uint64_t serial, parent_serial;
	bool jc_judged;		/* leaders: its end was judged (jobctl.c) */
	pid_t stop_pgrp;	/* its process group when it last stopped */
	struct cr_task_budget b;
};

/* Recently removed tids, so a signal to a child the run has already
 * reaped answers ESRCH without being recorded as a reach outside. */
#define CR_TASKS_GONE 1024

struct cr_tasks {
	struct cr_task *slots;	/* owned; open addressing by tid */
	size_t cap;
	size_t count;
	size_t leaders;		/* processes alive */
	size_t peak_leaders;
	size_t peak_tasks;
	size_t tpidfds;		/* threads' pidfds held (cr_tasks_getfd) */
	struct cr_task_gone {
		pid_t tid;	/* 0: empty */
		bool leader;	/* a process, which can stay a zombie; a
				 * thread is reaped as it goes */
		uint64_t start;	/* its start time, to tell a reuse */
	} *gone;		/* owned; ring of CR_TASKS_GONE removed
				 * tasks, made at the first removal: 16 KB
				 * that a run of one process never needs */
	size_t gone_next;
	uint32_t umask_gen;	/* bumped by every umask call of the run */
	size_t umask_moving;	/* tasks whose umask call may not have run */
	size_t lock_waits;	/* tasks with lock_wait set */
	size_t stop_kicks;	/* tasks with stop_kick set */
	size_t exiting;		/* tasks past their exit stop, not reaped */
	size_t stopped;		/* tasks in group stop (CR_TS_STOPPED) */
	void *jc_memo;		/* jobctl.c: the run's processes as read
				 * in this batch of reports; owned */
	size_t jc_nmemo;
	uint64_t serials;	/* the last leader's serial */
	bool umask_blind;	/* a umask call of a task not in the table:
				 * no umask is kept for the rest of the run */
};

struct cr_stream {
	int fd;			/* read end, -1 when closed; owned */
	int echo_fd;		/* where to stream (1 or 2), -1 when captured */
	bool term_safe;		/* echo_fd is a terminal: echo through term */
	struct cr_termsafe term;	/* only the echo's writer touches it */
	char *buf;		/* owned; captured bytes */
	size_t len;
	uint64_t total;		/* bytes the program wrote */
	uint64_t discarded;
	bool truncated;
	bool echo_gone;		/* the echo's reader went away (EPIPE): the
				 * program's pipe is closed at its next
				 * write, as under `| head` (under the
				 * echo's lock) */
};

struct cr_denial {
	uint64_t ms;
	pid_t pid;
	char syscall[32];
	char *target;		/* owned, may be NULL */
	const char *layer;	/* static */
	char *reason;		/* owned */
	uint64_t count;		/* times this denial happened */
	char **stack;		/* owned, --stacks: the caller's top frames */
	size_t nstack;
	const char *stack_missing;	/* static: why --stacks has none */
};

#define CR_MAX_DENIALS 256
/* Of those, the last are a ring once the table is full: the first
 * denials and the latest are listed, so a flood of cheap ones cannot hide
 * what the program tried after it. */
#define CR_DENIALS_TAIL 64

/* The result's usage object; each area fills its own fields. */
struct cr_usage {
	uint64_t cpu_ms;
	uint64_t peak_memory_bytes;
	uint64_t processes;		/* peak processes alive at once */
	uint64_t tasks;			/* peak tasks (threads too) at once */
	uint64_t disk_bytes;
	uint64_t files;
	uint64_t net_bytes;
	uint64_t net_connections;
};

/* Per-area state, defined in each area's own header; one pointer each so
 * areas grow without touching each other's lines. */
struct cr_budgets;	/* tracer/budget/internal.h */
struct cr_sysv;		/* tracer/ipc/sysv.c */
struct cr_fsstate;	/* tracer/fs/ */
struct cr_netstate;	/* tracer/net/ */
struct cr_surface;	/* tracer/handlers/ of the kernel-surface calls */
struct cr_io;		/* tracer/io/ */

struct cr_run {
	struct cr_run_config *cfg;	/* borrowed */
	size_t walk_left;		/* path steps one call has left, all
					 * its walks together (fs/resolve.c);
					 * 0: each walk its own */
	size_t tables_left;		/* fd-table entries the call in hand
					 * may still read, all its searches
					 * together (CR_TABLES_SEARCH_MAX) */
	uint64_t tables_until;		/* ...and the thread CPU clock they
					 * may reach; 0: no search yet */
	uint64_t start_ns;		/* CLOCK_MONOTONIC */
	pid_t child;			/* the initial process */
	int child_pidfd;
	void *child_mem;		/* its stack and arguments until exec */
	size_t child_mem_len;		/* (tracer/spawn.c), unmapped at the end */
	int listener;			/* seccomp notification fd, owned */
	bool near_addfd;		/* installs keep the task on the
					 * supervisor's CPU (notify.c) */
	bool killable_recv;		/* the filter's waits are killable
					 * only (WAIT_KILLABLE_RECV) */
	bool files_cloned;		/* a process was made sharing its
					 * parent's fd table (handlers/fork.c) */
	bool zero_reachable;		/* a /dev/zero descriptor may be in
					 * the run (handlers/kmem.c) */
	int sigfd;			/* signalfd, owned */
	int timerfd;			/* wall-time timer, owned */
	int epfd;			/* owned */
	int execfd;			/* child's exec-error pipe, owned */
	bool first_exec_denied;		/* the initial exec met a denial */
	int stdin_fd;			/* feeder pipe write end, owned */
	size_t stdin_off;
	struct cr_tasks tasks;
	struct cr_stream out, err;
	struct cr_echo *echo;		/* owned, tracer/echo.c; NULL if none */
	bool echo_cut;			/* a signal ended the final drain */
	bool echo_tried;		/* cr_echo_need has tried to start it */
	struct cr_watch *watches;	/* owned list, see loop.c */
	struct cr_watch *out_watch, *err_watch,
			*exec_watch, *stdin_watch;	/* borrowed */
	struct seccomp_notif *notif;	/* owned, notif_len bytes */
	size_t notif_len;
	const struct cr_syscall_entry *by_nr[512];	/* borrowed */
	mode_t caller_umask;		/* corral's umask at start: the
					 * program's (fs.c sets ours to 0) */
	struct rlimit caller_nofile;	/* RLIMIT_NOFILE at start: the
					 * program's (run.c raises ours) */
	const struct cr_filter *filter;	/* borrowed: the program's seccomp
					 * filter, once the child has it */

	/* Landlock (tracer/landlock/): the ABI of the ruleset the child
	 * applies, 0 when none; why none (or NULL); the ruleset, owned, -1
	 * once applied or without one; whether the seccomp program leaves
	 * the metadata calls to the kernel (the fast path). */
	int landlock_abi;
	const char *landlock_reason;	/* static */
	int landlock_fd;
	int fast_path;			/* CR_FAST_* */

	/* how the run ends: the first reason wins */
	bool ending;
	int helpers_rc;		/* the helpers' start (run.c: start_helpers) */
	char helpers_what[64];	/* ...what failed */
	enum cr_status status;
	const char *limit;		/* contract limit name, static */
	char message[256];
	bool have_exit;
	int exit_status;		/* wait status of the initial process */
	int exec_errno;			/* the initial exec failed with this */
	int platform_errno;
	uint64_t end_ms;		/* wall time when the run ended */
	int exit_code;			/* corral's own, once settled */
	int export_cancel;		/* the signal that stopped the artifacts'
					 * export of a run the program ended, or 0
					 * (io/artifacts.c; result.c settles it) */

	/* per-area state (owned, may be NULL) */
	struct cr_budgets *budgets;
	struct cr_sysv *sysv;		/* System V objects made for it (ipc/sysv.c) */
	struct cr_fsstate *fs;
	struct cr_netstate *net;
	struct cr_surface *surface;
	struct cr_io *io;
	struct cr_usage usage;

	/* counters */
	uint64_t notifications;
	uint64_t fds_injected;	/* descriptors installed with ADDFD */
	uint64_t stops;		/* ptrace stops collected */
	unsigned restarts;	/* tasks with restart_native set (an upper
				 * bound: one may have gone since) */
	uint64_t killed;
	uint64_t leftover;
	bool killing;
	bool reniced;			/* the tree is at CR_TASKS_NICE (tasks.c) */
	bool reap_more;		/* wait statuses left for the next turn */
	uint64_t tmpfs_xattr_bytes;	/* set on tmpfs (handlers/xattr.c) */
	uint64_t tmpfs_acl_max;	/* the largest default ACL set there */
	bool workspace_removed;

	struct cr_denial *denials;	/* owned, CR_MAX_DENIALS, made by the first */
	size_t ndenials;
	uint64_t denials_dropped;
	size_t denial_tail;		/* the next slot of the table's last
					 * CR_DENIALS_TAIL, once it is full */
	bool denials_wrapped;		/* ...which then hold the latest */
	uint64_t denied_calls;		/* every refused call, listed or not */
	int audit_fd;			/* owned, -1 without --audit */
	uint64_t audit_denies;
	void **audit_tail;		/* owned: the latest deny events past
					 * the trail's head (cJSON objects) */
	size_t audit_tail_next;
	/* Events before the start event (a refused input's deny), kept to
	 * follow it: the trail begins with start. */
#define CR_AUDIT_EARLY 8
	bool audit_started;
	const char *audit_early_ev[CR_AUDIT_EARLY];
	void *audit_early[CR_AUDIT_EARLY];	/* owned cJSON objects */
	size_t naudit_early;
	uint64_t audit_seq;		/* the next event's sequence number */
	char audit_head[65];		/* SHA-256 (hex) of the last line
					 * written: the chain's head */
	struct cr_alerts *alerts;	/* owned, tracer/audit/alert.c */
	struct cr_assurance *assurance;	/* owned, tracer/assurance/ */
	struct cr_broker *broker;	/* owned, tracer/broker/ */
};

/* tracer/run.c */
int cr_run_main(int argc, char **argv);
uint64_t cr_now_ns(void);
/* CPU time of the calling thread (the loop's), ns. */
uint64_t cr_thread_cpu_ns(void);
uint64_t cr_run_ms(const struct cr_run *run);
/* Record the first reason the run ends; later reasons are ignored. */
void cr_run_end(struct cr_run *run, enum cr_status st, const char *limit,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* tracer/options.c */
int cr_options_load(int argc, char **argv, struct cr_run_config *cfg,
		    char *err, size_t errlen, char ***env_args, size_t *nenv,
		    const char **workspace);
void cr_config_free(struct cr_run_config *cfg);

/* tracer/env.c */
int cr_env_build(struct cr_run_config *cfg, char **env_args, size_t nenv);

/* tracer/filter.c */
struct cr_filter {
	void *bpf;		/* owned, struct sock_filter[] */
	unsigned short len;
};
int cr_filter_build(struct cr_filter *f);	/* the default profile */
/* The table (syscalls.def) joined with a syscall profile: the table wins.
 * fast is a CR_FAST_* level: the table's entries left to the kernel on
 * that fast path are not notified. The program generated at build time
 * for that profile and level when there is one (cr_filter_prebuilt), else
 * cr_filter_generate. */
int cr_filter_build_profile(struct cr_filter *f, const struct cr_profile *p,
			    int fast);
/* The same, always generated now with libseccomp. */
int cr_filter_generate(struct cr_filter *f, const struct cr_profile *p,
		       int fast);
/* build/tracer/filter_prebuilt.c, written by tracer/filtergen.c. */
struct cr_filter_prebuilt {
	const char *name;		/* the profile's name and version */
	const char *version;
	int fast;			/* CR_FAST_* */
	const struct sock_filter *bpf;
	unsigned short len;
};
/* Run the program on one input (a classic-BPF evaluator): 0 and *action,
 * or -EINVAL for an instruction it does not know. */
int cr_filter_eval(const struct cr_filter *f, const struct seccomp_data *d,
		   uint32_t *action);
/* 0 when every i386 and x32 input is killed by the program. */
int cr_filter_verify_arch(const struct cr_filter *f);
void cr_filter_free(struct cr_filter *f);

/* tracer/syscalls.c: the table generated from syscalls.def */
extern struct cr_syscall_entry cr_syscalls[];
extern const size_t cr_nsyscalls;
extern struct cr_syscall_errno cr_syscall_errnos[];
extern const size_t cr_nsyscall_errnos;
extern const struct cr_syscall_fast cr_syscall_fasts[];
extern const size_t cr_nsyscall_fasts;
/* The fast path of name at a level, or NULL (notified as the table says). */
const struct cr_syscall_fast *cr_syscall_fast_find(const char *name,
						   int level);
void cr_syscalls_resolve(void);
const char *cr_syscall_name(int nr, char *buf, size_t len);

/* tracer/spawn.c */
/* meanwhile: called once the child exists, while it sets itself up. */
int cr_spawn(struct cr_run *run, const struct cr_filter *f,
	     void (*meanwhile)(struct cr_run *));

/* tracer/tasks.c */
int cr_tasks_init(struct cr_tasks *t);
void cr_tasks_free(struct cr_tasks *t);
struct cr_task *cr_tasks_find(struct cr_tasks *t, pid_t tid);
struct cr_task *cr_tasks_add(struct cr_tasks *t, pid_t tid);
void cr_tasks_remove(struct cr_tasks *t, pid_t tid);
/* The umasks corral creates files under, kept between creations (read
 * from /proc/TID/status otherwise, fs.c): umask() is notified
 * (handlers/create.c), and every call forgets every kept value, since
 * threads and CLONE_FS children share one. The call runs after corral's
 * answer, so until the caller's next notification or its end nothing is
 * kept or used. cr_tasks_umask_call: a umask call of tid is answered;
 * cr_tasks_umask_settled: tid is making another call (the loop, at each
 * notification while one is moving); cr_tasks_umask_get: true and *m when
 * a value is kept and may be used; cr_tasks_umask_put: keep m, read now. */
void cr_tasks_umask_call(struct cr_tasks *t, pid_t tid);
/* Every kept umask forgotten: at each exec, since a thread that execs
 * takes its process's tid with its own umask (after unshare(CLONE_FS)
 * and a umask call, it differs from the one kept for that tid). */
void cr_tasks_umask_forget(struct cr_tasks *t);
void cr_tasks_umask_settled(struct cr_tasks *t, pid_t tid);
bool cr_tasks_umask_get(struct cr_tasks *t, pid_t tid, mode_t *m);
void cr_tasks_umask_put(struct cr_tasks *t, pid_t tid, mode_t m);
/* No task but tid uses tid's fd table (false when a process of the run
 * was made sharing one), so none can change its numbers while it waits;
 * false when that cannot be told (tasks.c). */
bool cr_tasks_table_alone(struct cr_run *run, pid_t tid);
/* Was tid one of the run's tasks, removed recently, and is the number not
 * someone else's since? */
bool cr_tasks_was_ours(const struct cr_tasks *t, pid_t tid);
/* The task tid names now, when it is one of the run's: in the table and
 * the same task (a leader's pidfd still names a live or unreaped process;
 * a thread's start time is unchanged). Every "is this ours" check asks
 * this, not cr_tasks_find: an entry the table failed to forget can never
 * make a recycled number ours. */
struct cr_task *cr_tasks_ours(struct cr_tasks *t, pid_t tid);
/* A thread (not a leader) past its exit stop: released at once natively,
 * but a traced one stays a zombie until corral reaps it, and a call
 * continued to the kernel meanwhile still found it (a thread just joined
 * answered sched_getaffinity 5-26 times in 50, getpriority 1-2 and
 * tgkill(..., 0) 70 in 200: probing sessions). Natively such a call may
 * always find it gone, and the pid and signal calls answer so. */
bool cr_tasks_thread_gone(struct cr_tasks *t, pid_t tid);
/* Start time of tid (field 22 of /proc/TID/stat), 0 when unreadable. */
uint64_t cr_tasks_start_time(pid_t tid);
/* Handle pending wait statuses (ptrace stops and exits), a bounded batch
 * of them: true when the batch was full and more may be waiting (the loop
 * then calls again without sleeping, after serving its other fds). */
bool cr_tasks_reap(struct cr_run *run);
/* wait.c's: the pending exit report of one process, taken now if there
 * is one (a zombie only corral may collect yet). */
void cr_tasks_reap_exit(struct cr_run *run, pid_t pid);
/* The same for the processes whose parent is the process of tid (at most
 * CR_REAP_CHILDREN of them, in table order). */
#define CR_REAP_CHILDREN 256
void cr_tasks_reap_children(struct cr_run *run, pid_t tid);
/* SIGKILL every known process; returns how many signals were sent. */
size_t cr_tasks_kill_all(struct cr_run *run);
void cr_tasks_freeze(struct cr_run *run);
void cr_task_kill(struct cr_run *run, struct cr_task *t);
/* The thread group of a task of the run, or 0 when tid is not one. */
pid_t cr_tasks_tgid(struct cr_tasks *t, pid_t tid);
/* Would tid take a signal now (/proc/TID/status): one pending for it, or
 * for its process when it is the only thread, and not blocked; for a
 * process of several threads, its signal when it was already pending at
 * the last check (*held: the caller's memory of it per wait, 0 at
 * first), i.e. no other thread took it. A call
 * corral performs and keeps waiting (a FIFO open, a deferred accept,
 * receive or send) is then answered CR_ERESTARTSYS, as the kernel's own
 * interrupted wait is: a traced task waiting in a notification after
 * corral received it takes no signal, fatal ones included, until then. */
bool cr_tasks_would_take_signal(pid_t tid, uint64_t *held);
/* Has another thread of tid's process entered a group stop since tid's
 * call began (the stop signal taken, no longer pending)? Natively tid
 * stopped too, its wait interrupted; asked once (the mark is cleared). */
bool cr_tasks_stop_kicked(struct cr_run *run, pid_t tid);
/* tid made a new call: a mark of an earlier one's is gone. */
void cr_tasks_call_began(struct cr_run *run, pid_t tid);
/* How often (ms) waiting callers are asked that: base_ms, longer with
 * many waiting (each asking is a read of /proc: 1000 waiting callers
 * every 50 ms kept the supervisor half a core busy). */
long cr_signal_check_period(long base_ms, size_t waiting);
/* Is sig one the kernel drops for tid's process (ignored, or left at a
 * default that ignores it), and no other signal pending that it would
 * take? (/proc/TID/status) */
bool cr_tasks_signal_only_ignored(pid_t tid, int sig);
/* Does sig stop tid's process when it is delivered (SIGSTOP; SIGTSTP,
 * SIGTTIN, SIGTTOU left at their default)? */
bool cr_tasks_signal_stops(pid_t tid, int sig);
/* ppid, process group and session of pid (/proc/PID/stat): 0, or -1
 * when it cannot be read. */
int cr_proc_ids(pid_t pid, pid_t *ppid, pid_t *pgrp, pid_t *sid);

/* jobctl.c: orphaned process groups, corral outside them */
int cr_jobctl_orphaned(struct cr_run *run, pid_t pgrp, pid_t sid, pid_t gone);
void cr_jobctl_on_end(struct cr_run *run, pid_t tid);
void cr_jobctl_forget(struct cr_tasks *ts);
/* A copy of fd `fd` of the thread tid, from the fd table that thread
 * uses (its own when it was made without CLONE_FILES): the new fd, or
 * -errno (-EBADF: no such fd there; -EPERM: that table is out of reach
 * on this kernel, recorded). */
int cr_tasks_getfd(struct cr_run *run, pid_t tid, int fd);
/* Is t's fd table one to read when scanning the run's: a leader's, or a
 * thread's own (not its leader's; also when kcmp cannot tell)? A thread
 * past its exit stop: no. */
bool cr_tasks_own_table(const struct cr_task *t);
/* The most entries one notified call's searches of the run's fd tables
 * read, all together (a pty's master: fs/pty.c, per /dev/pts entry of a
 * listing too; the UDP sockets still held: net/udp.c), and the most CPU
 * they take; past either a search gives up as if it had found nothing.
 * An entry is a statx of what the descriptor holds (1-2 us here, however
 * deep its path: a readlink built the whole path, 30-60 us for a file
 * 2 000 directories down): ~0.1 s a call at most, charged to the run's
 * CPU. Unbounded, one open of /dev/pts/N by a program of 300 processes
 * with 19 000 descriptors each read 5.7 million links, 16-21 s in which
 * no budget was enforced; bounded by count alone, deep paths made it 3-4
 * s (both found by probing sessions). */
#define CR_TABLES_SEARCH_MAX 65536u
#define CR_TABLES_SEARCH_NS (250 * 1000000ull)
/* One more entry for the call in hand's searches: false once its share
 * is spent (tasks.c). */
bool cr_tables_step(struct cr_run *run);

/* tracer/taskfd.c */
/* Can this kernel make a pidfd of one thread (PIDFD_THREAD, 6.9)? */
bool cr_taskfd_thread_pidfds(void);
/* pidfd_open(tid, PIDFD_THREAD), or -errno. */
int cr_taskfd_open(pid_t tid);
/* 1 when tasks a and b use one fd table, 0 when not, -errno (kcmp). */
int cr_taskfd_same_table(pid_t a, pid_t b);

/* Without PIDFD_THREAD: a copy of the fd through the leader's pidfd, kept
 * only when thread tid uses the leader's table; -EPERM when it does not
 * or that cannot be told. */
int cr_taskfd_via_leader(int leader_pidfd, pid_t tgid, pid_t tid, int fd);

/* tracer/notify.c */
void cr_notify_handle(struct cr_run *run);
/* After reading tracee memory: is the notification still live (the task
 * still blocked in that call)? Decide nothing on memory read before this
 * says yes. */
bool cr_notif_valid(const struct cr_run *run, uint64_t id);
/* Install fd (owned: closed here) in the notifying task as the call's
 * return value; corral's copy is closed before the answer, so that once
 * the call returns the program's fd is the object's only reference, as
 * natively: its close releases a flock and queues IN_CLOSE_WRITE then
 * (a probing session saw a lock outlive the close in 2 % of rounds).
 * Where the task's wait is not killable a signal could come between the
 * install and the answer; there the two are one (ADDFD with SEND) and the
 * copy is closed right after. The verdict says the answer was sent. */
struct cr_verdict cr_notif_send_fd(struct cr_run *run,
				   const struct seccomp_notif *n, int fd,
				   bool cloexec);
struct cr_verdict cr_notif_send_fd_id(struct cr_run *run, uint64_t id, int fd,
				      bool cloexec);
/* As cr_notif_send_fd, but the answer (the fd's number) is left to the
 * caller's verdict, also where the wait is not killable: a FIFO counts
 * its readers and writers, and the program's next call after the answer
 * may be a read that must not see corral's copy as a writer. */
struct cr_verdict cr_notif_give_fd_last(struct cr_run *run, uint64_t id,
					int fd, bool cloexec);
/* Install fd in the notifying task without answering (ADDFD without
 * SEND), for a call that returns an fd through memory: its number there,
 * or -errno. Answer the call afterwards as usual. */
int cr_notif_add_fd(struct cr_run *run, uint64_t id, int fd, bool cloexec);
/* Whether this machine's CPU masks can be narrowed and put back exactly
 * (notify.c, "Installing a descriptor near"). */
bool cr_notif_near_possible(void);
/* Answer a notification later, from the loop (worker completions). */
void cr_notif_reply(struct cr_run *run, uint64_t id, struct cr_verdict v);
/* At a signal-delivery stop of tid: a notified call the signal withdrew
 * before corral received it is made again after the handler, not EINTR.
 * stops: the signal is let through and stops the task. */
void cr_notif_on_signal_stop(struct cr_run *run, pid_t tid, int sig,
			     bool stops);
/* tid entered a group stop: a call the stop interrupted with EINTR ends
 * so once the process is continued (signal(7)), not made again. */
void cr_notif_on_group_stop(pid_t tid);
/* The kernel's code for a call a signal interrupted (the handler, then
 * EINTR or the call again per SA_RESTART; the call again when no handler
 * runs). */
#define CR_ERESTARTSYS 512
/* tid was just answered CR_ERESTARTSYS on purpose: its next signal stop
 * leaves that to the kernel (cr_notif_on_signal_stop). */
/* A blocking lock call (F_SETLKW, F_OFD_SETLKW) of tid is continued into
 * the kernel's wait: a signal that ends that wait ends the call as the
 * kernel says (EINTR without SA_RESTART), it is not made again. */
void cr_notif_kernel_wait(struct cr_run *run, pid_t tid);
void cr_notif_restart_native(struct cr_run *run, pid_t tid);
/* The seccomp_data an x86_64 call of these registers gives the filter. */
struct user_regs_struct;
void cr_regs_seccomp_data(const struct user_regs_struct *r,
			  struct seccomp_data *d);

/* corral's own soft RLIMIT_NOFILE is raised to the hard limit, at most
 * this (run.c): every area's share of descriptors scales with it. */
#define CR_NOFILE_MAX 65536

/* tracer/guard.c: a deadline (EINTR) for a call of the loop thread the
 * program could make block; disarm says whether it fired. */
#define CR_GUARD_MS 200
int cr_guard_setup(void);
void cr_guard_arm(unsigned ms);
bool cr_guard_disarm(void);
/* Close a copy of a program's socket, maybe its last: never holds the loop
 * for more than CR_GUARD_MS a second in all (the rest: a closer thread). */
void cr_guard_close(int fd);
/* Descriptors handed to the closer thread and not yet closed. */
size_t cr_guard_backlog(void);
/* fd is the loop's new copy of a program's fd: if a socket, its close()
 * (anywhere in the supervisor, linked through __wrap_close) is guarded. */
void cr_guard_note_copy(int fd);
/* F_DUPFD_CLOEXEC of a copy (or -1 with errno), noted as cr_guard_note_copy
 * does: every duplicate of a program's socket the loop keeps is made so. */
int cr_guard_dup(int fd);
/* fd is a socket the loop made for the program (socket, socketpair): once
 * installed, the program may close its number and leave ours the last. */
void cr_guard_note_socket(int fd);

/* tracer/mem.c: tracee memory, through process_vm_readv/writev only. */
int cr_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* Read a NUL-terminated string of at most len-1 bytes: -ENAMETOOLONG when
 * longer, -EFAULT when unreadable. */
int cr_mem_read_str(pid_t pid, uint64_t addr, char *buf, size_t len);
int cr_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len);
/* A page of corral's that no call can read or write (mapped once; NULL
 * when it cannot be): handed to the kernel in place of a program's
 * pointer that could not be read, so a call corral performs answers
 * EFAULT where, and only where, the kernel would for the program (a NULL
 * one stays NULL: some calls take NULL as a value). */
void *cr_mem_unreadable(void);
/* How many bytes from addr can be read, at most len, page by page (into
 * buf). */
size_t cr_mem_read_prefix(pid_t pid, uint64_t addr, void *buf, size_t len);
/* How many bytes from the start could be written (page by page). */
size_t cr_mem_write_prefix(pid_t pid, uint64_t addr, const void *buf,
			   size_t len);
/* Room for len bytes of corral's that end where an unreadable page
 * begins, the calling thread's own, good until its next call (NULL past
 * CR_MEM_EDGE_MAX or when it cannot be mapped): a
 * value the program could read only in part is copied there, so a call
 * corral performs reads what the program's memory held and faults where
 * the program's would. */
#define CR_MEM_EDGE_MAX 65536
void *cr_mem_edge(size_t len);
void cr_deny(struct cr_run *run, pid_t pid, const char *syscall,
	     const char *target, const char *layer, const char *reason);

/* tracer/echo.c: the echo of captured output to corral's stdout/stderr,
 * written by a thread started at the program's first output (not with
 * --json). cr_echo_need: before the first bytes are kept; the thread is
 * tried once, and where it cannot start the loop echoes in place. */
void cr_echo_need(struct cr_run *run);
/* Around any change of a stream's buffer; push with the lock held. */
void cr_echo_lock(struct cr_run *run);
void cr_echo_unlock(struct cr_run *run);
void cr_echo_push(struct cr_run *run, struct cr_stream *s, size_t off,
		  size_t len);
/* Write out what is queued, then end the thread. Idempotent. */
void cr_echo_finish(struct cr_run *run);

/* tracer/capture.c */
void cr_stream_init(struct cr_stream *s, int fd, int echo_fd);
/* Read what is available; returns false when the stream is closed. */
bool cr_stream_pump(struct cr_run *run, struct cr_stream *s);
void cr_stream_close(struct cr_stream *s);
/* Is st (a FIFO's) the pipe s reads? */
struct stat;
bool cr_stream_is(const struct cr_stream *s, const struct stat *st);

/* tracer/loop.c: every fd the supervisor waits on is a watch; its callback
 * runs on the loop thread (the ptrace owner). */
struct cr_watch;
typedef void (*cr_watch_fn)(struct cr_run *run, uint32_t events, void *arg);
struct cr_watch *cr_loop_watch(struct cr_run *run, int fd, uint32_t events,
			       cr_watch_fn fn, void *arg);
int cr_loop_modify(struct cr_run *run, struct cr_watch *w, uint32_t events);
void cr_loop_unwatch(struct cr_run *run, struct cr_watch *w);
void cr_loop_free(struct cr_run *run);
/* At cleanup, once the tree is gone: the exec report the loop left. */
void cr_loop_exec_settle(struct cr_run *run);
/* While no task of the run lives (inputs placed, artifacts exported): the
 * first cancelling signal pending on sigfd, or 0. SIGCHLD is nobody's;
 * SIGTSTP stops corral there and then. */
int cr_loop_cancel_pending(struct cr_run *run);
int cr_loop(struct cr_run *run);

/* tracer/cleanup.c */
void cr_cleanup(struct cr_run *run);

/* tracer/result.c */
/* The run's one result: true for the first caller only (the end of the
 * run, or the watchdog); cr_result_stalled is the watchdog's text, with
 * usage.wall_ms set to mark (malloc'd; NULL when out of memory). */
bool cr_result_claim(void);
bool cr_result_claimed(void);
char *cr_result_stalled(const struct cr_run *run, double mark);
int cr_result_emit(struct cr_run *run);
/* Before the program starts: can the --result file be made in its
 * directory (opened already)? 0 or -errno. */
int cr_result_check(const struct cr_run_config *cfg);
/* Text corral prints or stores that may hold names the program chose
 * (run->message): rewritten in place (size bytes) with invalid UTF-8 and
 * terminal controls as \xNN, as cr_json_add_bytes escapes bytes. */
void cr_text_inert(char *text, size_t size);
void cr_json_add_bytes(void *obj, const char *key, const char *buf,
		       size_t len);
/* "SIGINT", "SIGRTMIN+3" (into buf; returned). */
const char *cr_signame(int sig, char *buf, size_t len);
/* The same as a new string item (a cJSON *), for arrays. */
void *cr_json_bytes(const char *buf, size_t len);
/* The program's end into obj (a cJSON object), as the result gives it:
 * "exit_code" and "signal", each null when it does not apply; code is
 * corral's own exit status. */
void cr_result_add_end(const struct cr_run *run, int code, void *obj);

/* tracer/audit.c: a chain of events (seq, prev = SHA-256 of the line
 * before); the last one, cleanup, is marked final. */
/* Refuses (-EPERM, why in err) an audit file a writable root of the run
 * could reach; ws is the -w argument or NULL. */
int cr_audit_open(struct cr_run *run, const char *ws, char *err,
		  size_t errlen);
void cr_audit_event(struct cr_run *run, const char *event, void *fields);
/* The exit and the final cleanup events: once the exit code is settled,
 * before the result (which carries the chain's head) is built. */
void cr_audit_finish(struct cr_run *run);
/* Adds the result's "audit" object ({"events", "head"} or null). */
void cr_audit_result(const struct cr_run *run, void *result);
void cr_audit_close(struct cr_run *run);

/* tracer/audit/path.c: does a root the program may write (the workspace
 * ws, the -w argument or NULL; write roots) contain real, a path resolved
 * by the kernel? 1 yes (the root named in which), 0 no. */
int cr_audit_path_holds_writable(const struct cr_run_config *cfg,
				 const char *real, char *which, size_t len);
int cr_audit_path_writable(const struct cr_run_config *cfg, const char *ws,
			   const char *real, char *which, size_t len);
/* A root as the kernel reaches it: realpath when it exists, else its
 * parent's realpath and its last name; NULL when neither resolves.
 * Allocated. */
char *cr_audit_root_real(const char *root);
/* Is real inside an exec root, or around an exec or read root (the
 * output directory's rule)? 1 (why in which), 0 no. */
int cr_audit_path_near_roots(const struct cr_run_config *cfg,
			     const char *real, char *which, size_t len);
/* Would artifacts exported to real expose the caller: /, the caller's
 * home or an ancestor of it, inside or around a root the class denies?
 * -EPERM and why. */
int cr_workspace_judge(const struct cr_run_config *cfg, const char *real,
		       char *why, size_t len);

/* tracer/audit/verify.c: `corral audit verify FILE [--head H]`. */
int cr_audit_verify_main(int argc, char **argv);

/* tracer/audit/alert.c: one alert event when denials look like a search
 * for secrets or a burst of metadata probing (thresholds: class alerts). */
void cr_alert_observe(struct cr_run *run, pid_t pid, const char *syscall,
		      const char *target, const char *layer);
void cr_alert_result(const struct cr_run *run, void *result);
void cr_alert_free(struct cr_run *run);

/* tracer/assurance/assurance.c: which protections were really on. */
/* Called by spawn once the child holds its filter and before it execs:
 * reads its /proc status from outside. -EPERM when --require is not met
 * (why in run->message): the program never starts. */
int cr_assurance_observe(struct cr_run *run, pid_t child,
			 unsigned seccomp_flags);
void cr_assurance_result(const struct cr_run *run, void *result);
void cr_assurance_free(struct cr_run *run);
/* The Landlock line and the level again, from run->landlock_abi (the
 * spawn ended before the program: cr_landlock_not_applied). */
void cr_assurance_landlock_refresh(struct cr_run *run);
/* --require LEVEL is one of the known levels. */
bool cr_assurance_level_valid(const char *level);

/* tracer/secrets/envcheck.c: credential-looking environment values. */
/* Warns on stderr (never printing a value) about every --env and request
 * env setting that looks like a credential by name or value; with the
 * class's env_secrets "refuse", -EPERM with the reason in err. */
int cr_secrets_check_env(const struct cr_run_config *cfg, char **env_args,
			 size_t nenv, char *err, size_t errlen);

/* tracer/workspace.c */
/* Make (-w DIR: open) the workspace, judged on the directory really
 * opened, which cfg->ws_fd then holds; -EPERM and why when refused. */
int cr_workspace_make(struct cr_run_config *cfg, const char *given,
		      char *why, size_t len);
/* A new O_PATH fd of the workspace made (the directory judged), or -errno. */
int cr_workspace_fd(const struct cr_run_config *cfg);
/* The attribute on a directory corral gave a program to write: a link
 * beneath it is not followed for an operator path. */
#define CR_WS_MARK "user.corral.workspace"
/* Open an operator's path (an O_PATH fd in *out), following links except
 * one that lies beneath a marked directory: -EPERM and why for that. */
int cr_oppath_open(const char *given, int *out, char *why, size_t len);
/* mkdir of the last name of given (0700) in its parent as the walk opens
 * it; 0 also when it exists or names no new directory (*made says). */
int cr_oppath_mkdir(const char *given, char *why, size_t len, bool *made);
/* Mark a directory a program will be able to write: 0, or -errno when
 * it cannot carry the mark (a filesystem without user attributes is 0). */
int cr_oppath_mark(const char *path);
/* The same, for a directory the walk already opened. */
int cr_oppath_mark_fd(int fd);
/* The real path of an fd of ours, from the kernel's own record of it. */
int cr_fd_realpath(int fd, char *out, size_t len);
/* Walk each root of l once (cr_oppath_open) and keep what it opened in
 * cfg->pins: -EPERM and why when a planted link is in the way; roots the
 * walk cannot reach (absent) are pinned as absent. strict (deny entries):
 * one absent in a run's writable space is refused too. */
int cr_oppath_pin(struct cr_run_config *cfg, const struct cr_strlist *l,
		  bool strict, const char **refused, char *why, size_t len);
/* The pin of a root, by its name as written or its real path, or NULL. */
const struct cr_pin *cr_pin_find(const struct cr_run_config *cfg,
				 const char *path);
int cr_workspace_remove(const char *path);
/* $TMPDIR, or /tmp: where private workspaces and corral's records are. */
const char *cr_workspace_tmp_dir(void);
/* A -w DIR that would expose its owner: /, the caller's home or an
 * ancestor of it, or one inside or around a root the class denies.
 * -EPERM and why, unless --workspace-unsafe. */
int cr_workspace_tmp_check(const struct cr_run_config *cfg, char *why,
			   size_t len);
int cr_workspace_check(const struct cr_run_config *cfg, const char *given,
		       char *why, size_t len);
/* Release the private workspace's lock; its lock file goes when the
 * workspace was removed. */
void cr_workspace_unlock(struct cr_run_config *cfg, bool removed);
/* Remove the private workspaces (and lock files) of this user's runs
 * whose supervisor is gone, and their System V segments (ipc/sysv.c);
 * cfg and given (the -w argument) of the run sweeping, NULL for gc. */
int cr_workspace_gc(const struct cr_run_config *cfg, const char *given,
		    size_t *removed, size_t *busy);
int cr_workspace_gc_main(int argc, char **argv);
/* A /dev/shm object the run made (name inside shmdir): recorded in the
 * private workspace's lock file, so a sweep after a kill removes it. */
void cr_workspace_note_shm(const struct cr_run_config *cfg, int shmdir,
			   const char *name);

/* tracer/watchdog.c: exits the process (killing every tracee) if the run
 * is still going wall budget + 60 s after it started, and writes the
 * result that says so. */
int cr_watchdog_start(const struct cr_run *run);
/* Every process this one traces, found by a walk of /proc (not the loop's
 * table): fn called for each, or each killed (SIGKILL). The watchdog
 * thread's only (static buffers). */
void cr_watchdog_each_traced(void (*fn)(pid_t pid, void *arg), void *arg);
void cr_watchdog_kill_traced(void);

/* tracer/budget/stall.c: a call the program can hold up (a file's inode
 * lock, a process's memory-map lock) is bracketed by cr_slow_begin and
 * cr_slow_end (errno kept; the loop thread's only; marks nest); meanwhile
 * the watchdog's cr_stall_step keeps the budgets and a cancel for the
 * loop. The run is attached once its tasks exist (by the loop thread),
 * detached when cleanup starts. */
void cr_stall_attach(struct cr_run *run);
void cr_stall_detach(void);
void cr_slow_begin(void);
void cr_slow_end(void);
void cr_stall_step(void);
/* A signal pending that the loop takes for a cancel (all it waits for but
 * SIGCHLD and SIGTSTP): its number, or 0; left pending. */
int cr_stall_cancel_pending(void);
/* The loop has judged the budgets (a tick's poll done; due every tick:
 * stall.c's measure of a loop held in an unmarked call). */
void cr_stall_tick_seen(void);
/* The loop's end with the verdict the watchdog reached while the loop was
 * held in an unmarked call (true: the run now ends so); cr_run_end asks
 * it first, so that verdict wins over whatever ending the loop meets. */
bool cr_stall_verdict(struct cr_run *run);

/* tracer/taskid.c */
char *cr_task_id_new(void);

#endif
