/* tracer/landlock/landlock.h: the kernel's second layer: a Landlock ruleset
 * built by the supervisor from the run's roots, applied by the child. */
#ifndef CORRAL_LANDLOCK_H
#define CORRAL_LANDLOCK_H

#include "../tracer.h"

/*
 * Before the child exists: probe the ABI, decide from the run's mode
 * (cfg->landlock) and build the ruleset (run->landlock_fd, which the child
 * inherits). Sets run->landlock_abi (the ABI the ruleset uses, 0 when none
 * is applied) and run->landlock_reason. Returns 0, or -errno when the mode
 * is `require` and Landlock cannot be applied (the message says why).
 */
int cr_landlock_setup(struct cr_run *run);
/* In the child, after no_new_privs, before seccomp: restrict itself. */
int cr_landlock_child_apply(int ruleset_fd);
/* The child failed before any program ran: no ruleset was the program's
 * (run->landlock_abi 0, no fast path), why says so. */
void cr_landlock_not_applied(struct cr_run *run, const char *why);
/* The ABI this kernel offers (memoized), 0 when none. */
int cr_landlock_probe_abi(void);
void cr_landlock_finish(struct cr_run *run);

#endif
