/* tracer/ipc/sysv.h: System V objects made for the run (shared memory,
 * semaphore sets, message queues): the run's own, counted, removed at its end. */
#ifndef CORRAL_IPC_SYSV_H
#define CORRAL_IPC_SYSV_H

#include <stdint.h>

#include "../tracer.h"

/* Objects of one kind alive in a run at once; past it the get answers
 * ENOSPC, the kernel's answer at the host's limit (SHMMNI, SEMMNI,
 * MSGMNI are the host's, shared by every user). */
#define CR_SYSV_MAX 32
/* Semaphores per set the run may make (the kernel's SEMMSL was 250 for
 * decades; each semaphore's undo entry is kept per process). */
#define CR_SYSV_SEMS_MAX 250

/* Kernel memory of the run's objects that no process's pages show: the
 * fixed charges of its semaphore sets and message queues, and the
 * resident pages of its segments no process has attached. Read by the
 * budgets' tick. */
uint64_t cr_sysv_bytes(struct cr_run *run);
/* The run's end: every object it still has is removed. */
void cr_sysv_finish(struct cr_run *run);
void cr_sysv_free(struct cr_run *run);
/* The record of a run whose supervisor died (its lock is free): each
 * segment it lists that is still the same (this user's, made at the time
 * recorded by the pid recorded) is removed. fd: the record, opened by the
 * sweep (tracer/workspace.c), which then unlinks it; cfg and ws (the -w
 * argument): the run sweeping (cfg NULL for `corral gc`), which reads no
 * record where its program could have written one. */
void cr_sysv_sweep(const struct cr_run_config *cfg, const char *ws, int fd);
/* Names of records in $TMPDIR: "corral-ipc-" and six characters. */
#define CR_SYSV_RECORD "corral-ipc-"

#endif
