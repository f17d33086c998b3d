/* tracer/child.h: what the supervisor hands the child it spawns, and what
 * the child reports back before it execs the program. */
#ifndef CR_CHILD_H
#define CR_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <linux/filter.h>

/* Stages the child reports on its pipe; READY carries the listener fd. */
enum cr_child_stage {
	CR_ST_READY = 1,
	CR_ST_SESSION,
	CR_ST_FDS,
	CR_ST_CWD,
	CR_ST_NNP,
	CR_ST_CAPS,
	CR_ST_LANDLOCK,
	CR_ST_RLIMIT,
	CR_ST_SECCOMP,
	CR_ST_EXEC,
};

struct cr_child_msg {
	int stage;
	int err;	/* positive errno, 0 for READY */
	int fd;		/* the listener's number in the child, for READY */
	unsigned flags;	/* the seccomp filter flags the kernel took */
};

/* RLIMIT_CORE, RLIMIT_NICE, RLIMIT_RTPRIO, the caller's RLIMIT_NOFILE and
 * the budgets' backstops (tracer/budget/rlimits.c). */
#define CR_BUDGET_RLIMITS 4
#define CR_CHILD_RLIMITS (4 + CR_BUDGET_RLIMITS)

struct cr_child_rlimit {
	int resource;
	struct rlimit lim;
};

/*
 * Everything the child needs, prepared by the supervisor: the child makes
 * system calls only (tracer/child.c says why), so every path, list and
 * number is ready here. It lives in the mapping that also holds the
 * child's stack, which stays until the run ends: the child reads it until
 * its exec has happened.
 */
struct cr_child_args {
	pid_t parent;
	int in_fd, out_fd, err_fd;	/* become 0, 1, 2 */
	int report_fd;			/* child -> parent */
	int go_fd;			/* parent -> child */
	int ws_fd;			/* the workspace, O_PATH */
	int landlock_fd;		/* the ruleset, or -1 */
	const char *cwd;		/* beneath ws_fd, or NULL */
	mode_t umask;			/* the caller's, for the program */
	struct cr_child_rlimit rlim[CR_CHILD_RLIMITS];
	size_t nrlim;
	bool drop_caps;
	unsigned ncaps;			/* capability numbers to drop */
	unsigned seccomp_flags;
	struct sock_fprog prog;
	/* execvpe, decided beforehand: each candidate path in order; a
	 * candidate that is no executable format runs under /bin/sh, as
	 * libc's execvpe does (sh_argv[1] is the candidate). */
	char *const *argv;
	char *const *envp;
	char **paths;
	size_t npaths;
	bool search;			/* a PATH search, not one named file */
	int exec_err;			/* refused before any attempt, or 0 */
	char **sh_argv;
};

/* The child: never returns (execs or exits 127 after a report). */
__attribute__((noreturn)) void cr_child_main(struct cr_child_args *a);

#endif
