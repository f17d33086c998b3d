/* tracer/handlers/handlers.h: the syscall handlers named in syscalls.def,
 * one family per file under tracer/handlers/. */
#ifndef CORRAL_HANDLERS_H
#define CORRAL_HANDLERS_H

#include "../tracer.h"

/* refuse.c */
struct cr_verdict cr_h_refuse(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);

#define CR_HANDLER(name)						\
	struct cr_verdict name(struct cr_run *run,			\
			       const struct cr_syscall_entry *e,	\
			       const struct seccomp_notif *n)

/* signal.c */
CR_HANDLER(cr_h_kill);
CR_HANDLER(cr_h_tkill);
CR_HANDLER(cr_h_tgkill);
CR_HANDLER(cr_h_sigqueue);
CR_HANDLER(cr_h_pidfd_open);
CR_HANDLER(cr_h_pidfd_send_signal);
/* proc.c */
CR_HANDLER(cr_h_pidfd_getfd);
CR_HANDLER(cr_h_process_madvise);
CR_HANDLER(cr_h_process_vm);
CR_HANDLER(cr_h_proc_pid);
CR_HANDLER(cr_h_proc_prio);
CR_HANDLER(cr_h_fcntl_owner);
/* socket.c */
CR_HANDLER(cr_h_socket);
/* personality.c */
CR_HANDLER(cr_h_personality);

#endif
