/* tracer/syscalls.c: the intercepted-syscall table generated from
 * syscalls.def, resolved to this architecture's numbers at start-up. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>

#include "tracer.h"
#include "handlers/handlers.h"

struct cr_syscall_entry cr_syscalls[] = {
#define CR_SYSCALL(n, h, st, why) \
	{ .name = #n, .nr = -1, .handler = h, .stance = st, .reason = why, .arg = -1 },
#define CR_SYSCALL_ARG(n, a, m, v, h, st, why) \
	{ .name = #n, .nr = -1, .handler = h, .stance = st, .reason = why, \
	  .arg = a, .mask = m, .value = v },
#define CR_SYSCALL_ARG_NZ(n, a, h, st, why) \
	{ .name = #n, .nr = -1, .handler = h, .stance = st, .reason = why, \
	  .arg = a, .nonzero = true },
#include "syscalls.def"
};
const size_t cr_nsyscalls = CR_ARRAY_SIZE(cr_syscalls);

struct cr_syscall_errno cr_syscall_errnos[] = {
#define CR_SYSCALL(n, h, st, why)
#define CR_SYSCALL_ERRNO(n, e) { .name = #n, .nr = -1, .error = e },
#include "syscalls.def"
};
const size_t cr_nsyscall_errnos = CR_ARRAY_SIZE(cr_syscall_errnos);

/* Names come from libseccomp's tables for the native architecture, so a call
 * this kernel's ABI lacks resolves to a negative number and is skipped. */
void cr_syscalls_resolve(void)
{
	for (size_t i = 0; i < cr_nsyscalls; i++)
		cr_syscalls[i].nr = seccomp_syscall_resolve_name(cr_syscalls[i].name);
	for (size_t i = 0; i < cr_nsyscall_errnos; i++)
		cr_syscall_errnos[i].nr =
			seccomp_syscall_resolve_name(cr_syscall_errnos[i].name);
}

const char *cr_syscall_name(int nr, char *buf, size_t len)
{
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "syscall_%d", nr);
	free(name);
	return buf;
}
