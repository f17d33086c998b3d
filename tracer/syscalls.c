/* tracer/syscalls.c: the intercepted-syscall table generated from
 * syscalls.def, resolved to this architecture's numbers at start-up. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

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
#define CR_SYSCALL_ARG_NOTALL(n, a, m, v, b, h, st, why) \
	{ .name = #n, .nr = -1, .handler = h, .stance = st, .reason = why, \
	  .arg = a, .mask = m, .value = v, .notall = b },
#define CR_SYSCALL_ARG_ANY(n, a, b, h, st, why) \
	{ .name = #n, .nr = -1, .handler = h, .stance = st, .reason = why, \
	  .arg = a, .anybits = b },
#include "syscalls.def"
};
const size_t cr_nsyscalls = CR_ARRAY_SIZE(cr_syscalls);

struct cr_syscall_errno cr_syscall_errnos[] = {
#define CR_SYSCALL(n, h, st, why)
#define CR_SYSCALL_ERRNO(n, e) { .name = #n, .nr = -1, .error = e, .arg = -1 },
#define CR_SYSCALL_ERRNO_ARG(n, a, m, v, e) \
	{ .name = #n, .nr = -1, .error = e, .arg = a, .mask = m, .value = v },
#include "syscalls.def"
};
const size_t cr_nsyscall_errnos = CR_ARRAY_SIZE(cr_syscall_errnos);

const struct cr_syscall_fast cr_syscall_fasts[] = {
#define CR_SYSCALL(n, h, st, why)
#define CR_SYSCALL_FAST(n, a, m, l) { .name = #n, .arg = a, .mask = m, .level = l },
#include "syscalls.def"
};
const size_t cr_nsyscall_fasts = CR_ARRAY_SIZE(cr_syscall_fasts);

const struct cr_syscall_fast *cr_syscall_fast_find(const char *name,
						   int level)
{
	for (size_t i = 0; i < cr_nsyscall_fasts; i++)
		if (cr_syscall_fasts[i].level <= level &&
		    !strcmp(cr_syscall_fasts[i].name, name))
			return &cr_syscall_fasts[i];
	return NULL;
}

/* x86_64 numbers of calls newer than libseccomp 2.5's tables: without
 * them a new path-taking call would pass the filter unseen. */
static const struct { const char *name; int nr; } newer[] = {
	{ "fchmodat2", 452 }, { "statmount", 457 }, { "listmount", 458 },
	{ "setxattrat", 463 }, { "getxattrat", 464 }, { "listxattrat", 465 },
	{ "removexattrat", 466 }, { "open_tree_attr", 467 },
	{ "file_getattr", 468 }, { "file_setattr", 469 },
	{ "mount_setattr", 442 }, { "quotactl_fd", 443 },
};

static int resolve_name(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr >= 0)
		return nr;
#if defined(__x86_64__)
	for (size_t i = 0; i < CR_ARRAY_SIZE(newer); i++)
		if (!strcmp(newer[i].name, name))
			return newer[i].nr;
#endif
	return nr;
}

/* Names come from libseccomp's tables for the native architecture, so a call
 * this kernel's ABI lacks resolves to a negative number and is skipped. */
void cr_syscalls_resolve(void)
{
	for (size_t i = 0; i < cr_nsyscalls; i++)
		cr_syscalls[i].nr = resolve_name(cr_syscalls[i].name);
	for (size_t i = 0; i < cr_nsyscall_errnos; i++)
		cr_syscall_errnos[i].nr = resolve_name(cr_syscall_errnos[i].name);
}

const char *cr_syscall_name(int nr, char *buf, size_t len)
{
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

	for (size_t i = 0; !name && i < CR_ARRAY_SIZE(newer); i++)
		if (newer[i].nr == nr) {
			snprintf(buf, len, "%s", newer[i].name);
			return buf;
		}
	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "syscall_%d", nr);
	free(name);
	return buf;
}
