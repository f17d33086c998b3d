/* tracer/handlers/handlers.h: the syscall handlers named in syscalls.def,
 * one family per file under tracer/handlers/. */
#ifndef CORRAL_HANDLERS_H
#define CORRAL_HANDLERS_H

#include "../tracer.h"

/* refuse.c */
struct cr_verdict cr_h_refuse(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);

/* create.c */
struct cr_verdict cr_h_create(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);

#endif
