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
	const char *why = e->reason;

	/* Entries of one call share the first entry's handler: for argument
	 * entries, give the reason of the entry whose condition matched
	 * (ioctl TIOCSTI and ioctl FIOSETOWN are refused for different
	 * reasons). */
	if (e->arg >= 0)
		for (size_t i = (size_t)(e - cr_syscalls); i < cr_nsyscalls; i++) {
			const struct cr_syscall_entry *o = &cr_syscalls[i];

			if (o->nr == e->nr && o->arg >= 0 && o->arg < 6 &&
			    (n->data.args[o->arg] & o->mask) == o->value) {
				why = o->reason;
				break;
			}
		}
	cr_deny(run, (pid_t)n->pid, e->name, NULL, "syscall",
		why ? why : "refused");
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
}
