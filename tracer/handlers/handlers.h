/* tracer/handlers/handlers.h: the syscall handlers named in syscalls.def,
 * one family per file under tracer/handlers/. */
#ifndef CORRAL_HANDLERS_H
#define CORRAL_HANDLERS_H

#include "../tracer.h"

/* refuse.c */
struct cr_verdict cr_h_refuse(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);

/* net.c */
struct cr_verdict cr_h_connect(struct cr_run *run,
			       const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n);
struct cr_verdict cr_h_bind(struct cr_run *run,
			    const struct cr_syscall_entry *e,
			    const struct seccomp_notif *n);
struct cr_verdict cr_h_listen(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);
struct cr_verdict cr_h_sendto(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);
struct cr_verdict cr_h_sendmsg(struct cr_run *run,
			       const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n);
struct cr_verdict cr_h_sendmmsg(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_recvfrom(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_getpeername(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n);

#endif
