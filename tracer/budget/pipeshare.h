/* tracer/budget/pipeshare.h: the run's share of its user's pipe allowance, the
 * slots of the pipes it holds, for the pipe calls (pipes.c). */
#ifndef CORRAL_PIPESHARE_H
#define CORRAL_PIPESHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cr_pipeshare;

/* share: the slots the run may hold (0: no cap). */
struct cr_pipeshare *cr_pipeshare_new(uint64_t share);
void cr_pipeshare_free(struct cr_pipeshare *s);
/* The pipe of inode ino has this many slots (fresh: a new pipe, not yet
 * recorded). 0, or -ENOMEM (then it is not counted: the caller fails). */
int cr_pipeshare_set(struct cr_pipeshare *s, uint64_t ino, unsigned slots,
		     bool fresh);
/* Its recorded slots (0: unknown). */
unsigned cr_pipeshare_slots(struct cr_pipeshare *s, uint64_t ino);
/* Would `more` slots still be within the share? */
bool cr_pipeshare_fits(const struct cr_pipeshare *s, uint64_t more);
/* The table has grown enough since its last refresh to be worth one. */
bool cr_pipeshare_stale(const struct cr_pipeshare *s);
/* A refresh: begin, then every pipe inode still alive, then end (only
 * after every alive one was given: the rest are dropped). */
void cr_pipeshare_refresh_begin(struct cr_pipeshare *s);
void cr_pipeshare_alive(struct cr_pipeshare *s, uint64_t ino);
void cr_pipeshare_refresh_end(struct cr_pipeshare *s);
uint64_t cr_pipeshare_total(const struct cr_pipeshare *s);
/* Pipes recorded (alive at the last refresh, or made since). */
size_t cr_pipeshare_count(const struct cr_pipeshare *s);

#endif
