/* tracer/handlers/refuse.c: ptrace, bpf, keyrings, modules, mounts,
 * namespaces, clocks, io_uring... every call the profile refuses outright. */
#include <errno.h>

#include "handlers.h"

/* Safe against a racing thread by construction: the verdict depends on the
 * syscall number (and, for ARG entries, a register the filter already
 * matched), never on tracee memory, and the answer is always an error. */
struct cr_verdict cr_h_refuse(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	cr_deny(run, (pid_t)n->pid, e->name, NULL, "syscall", e->reason);
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
}
