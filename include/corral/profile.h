/* include/corral/profile.h: versioned syscall profiles: which system calls a
 * class may make at all, which are refused outright, and how each is named. */
#ifndef CORRAL_PROFILE_H
#define CORRAL_PROFILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A profile is pure data (policy/profile.c): the filter builder in tracer/
 * turns it into BPF. Its meaning, for a call C made by the program:
 *
 *   - C is in tracer/syscalls.def: the table decides (notify, errno). The
 *     table always wins, so a call another area intercepts is never lost to
 *     the profile.
 *   - C is in `allow`: the kernel runs it.
 *   - C is in `refuse`: EPERM, recorded as a denial (layer "syscall").
 *   - anything else, including calls newer than this profile: ENOSYS,
 *     recorded once with a count, so programs fall back (as they do on an
 *     older kernel) and the operator sees what was missing.
 *
 * A profile never changes meaning under the same version: adding or
 * removing a call is a new version, reviewed like any policy change.
 */
struct cr_profile {
	const char *name;		/* as written in a policy's "syscalls" */
	const char *version;		/* "2026-11-29.1": result and audit carry it */
	const char *const *allow;	/* NULL-terminated syscall names */
	const char *const *refuse;	/* NULL-terminated syscall names */
};

/* The profile used when a class names none. Never NULL. */
const struct cr_profile *cr_profile_default(void);
/* The profile called name, or NULL. */
const struct cr_profile *cr_profile_find(const char *name);
/* Every profile, NULL-terminated (for `corral probe` and tests). */
const struct cr_profile *const *cr_profile_all(void);
/* Is name listed in the NULL-terminated list? */
bool cr_profile_lists(const char *const *list, const char *name);

#endif
