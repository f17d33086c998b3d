/* tracer/budget/shanon.h: the ledger of the run's shared anonymous objects,
 * charged from creation until scans show them gone. */
#ifndef CORRAL_SHANON_H
#define CORRAL_SHANON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Creations charged at once, at most: past it a creation is refused. A
 * scan keeps only as many as there are objects alive. */
#define CR_SHANON_MAX (1u << 16)
/* Scans in a row an object must be missing from to be taken for gone. */
#define CR_SHANON_MISSES 2

struct cr_shanon;

struct cr_shanon *cr_shanon_new(void);
void cr_shanon_free(struct cr_shanon *s);
/* Thread tid is about to make an object of len bytes (page-rounded):
 * charged from now. 0, or -ENOMEM when the ledger is full. */
int cr_shanon_made(struct cr_shanon *s, pid_t tid, uint64_t len);
/* Thread tid is about to map a file other than /dev/zero shared, len
 * bytes: nothing charged, unless a scan finds an object it may have made
 * (a thread could swap the descriptor for /dev/zero before the kernel
 * maps it). 0, or -ENOMEM when the list is full. */
int cr_shanon_maybe(struct cr_shanon *s, pid_t tid, uint64_t len);
/* The same where the run cannot have a /dev/zero yet: no candidate
 * (gated) unless one comes in while the call is in flight (ungate). */
int cr_shanon_gated(struct cr_shanon *s, pid_t tid, uint64_t len);
/* A /dev/zero may be in the run from now: every gated call still in
 * flight becomes a maybe (its kernel mapping may come after). */
void cr_shanon_ungate(struct cr_shanon *s);
/* Thread tid was seen again, at a notification or a stop, or is gone:
 * the calls it was making are done. */
void cr_shanon_done(struct cr_shanon *s, pid_t tid);
/* Up to max threads whose calls are still in flight, into tids; how
 * many. */
size_t cr_shanon_inflight(const struct cr_shanon *s, pid_t *tids,
			  size_t max);
/* Candidates or objects alive (then the processes' maps are worth
 * scanning). */
bool cr_shanon_active(const struct cr_shanon *s);
uint64_t cr_shanon_bytes(const struct cr_shanon *s);
size_t cr_shanon_count(const struct cr_shanon *s);
/* A scan: begin, then the maps file of every process of the run (an open
 * fd each: the lines it held, or -errno), then end. Only a scan that read every process
 * may end: 0, or how many objects were found beyond every creation
 * charged (the caller ends the run). */
void cr_shanon_scan_begin(struct cr_shanon *s);
int cr_shanon_scan_fd(struct cr_shanon *s, int fd);
int cr_shanon_scan_end(struct cr_shanon *s);

#endif
