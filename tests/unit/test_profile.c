/* tests/unit/test_profile.c: the syscall profiles: the "syscalls" class key,
 * and the tables' consistency with tracer/syscalls.def and libseccomp. */
#include <seccomp.h>
#include <stdlib.h>

#include "harness.h"
#include "corral/profile.h"

/* syscalls.def read as data: its names and which are refused outright.
 * Handlers and reasons are not evaluated here. */
enum { CR_STANCE_REGS, CR_STANCE_EMULATED, CR_STANCE_REFUSED, CR_STANCE_RECHECKED };
struct def_entry {
	const char *name;
	int stance;
	bool conditional;
};
static const struct def_entry def_entries[] = {
#define CR_SYSCALL(n, h, st, why) { #n, st, false },
#define CR_SYSCALL_ARG(n, a, m, v, h, st, why) { #n, st, true },
#define CR_SYSCALL_ARG_NOTALL(n, a, m, v, b, h, st, why) { #n, st, true },
#define CR_SYSCALL_ERRNO(n, e) { #n, -1, false },
#define CR_SYSCALL_ERRNO_ARG(n, a, m, v, e) { #n, -1, true },
/* The network area's "notify when the argument is set" entries. */
#define CR_SYSCALL_ARG_NZ(n, a, h, st, why) { #n, st, true },
#define CR_SYSCALL_ARG_ANY(n, a, b, h, st, why) { #n, st, true },
#include "../../tracer/syscalls.def"
};

static bool def_refuses(const char *name)
{
	for (size_t i = 0; i < CR_ARRAY_SIZE(def_entries); i++)
		if (!strcmp(def_entries[i].name, name) &&
		    def_entries[i].stance == CR_STANCE_REFUSED &&
		    !def_entries[i].conditional)
			return true;
	return false;
}

static const char *check_list(const char *const *l, const char *what)
{
	static char why[300];

	for (size_t i = 0; l[i]; i++) {
		if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, l[i]) <
		    0) {
			snprintf(why, sizeof(why), "%s: %s is not an x86_64 "
				 "system call", what, l[i]);
			return why;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(l[i], l[j])) {
				snprintf(why, sizeof(why), "%s: %s listed "
					 "twice", what, l[i]);
				return why;
			}
	}
	return NULL;
}

TEST_IMPL(profile_tables)
{
	const struct cr_profile *const *all = cr_profile_all();
	const char *why;

	ASSERT(all[0] != NULL);
	ASSERT(cr_profile_default() == cr_profile_find("default"));
	ASSERT(cr_profile_find("nope") == NULL);
	for (size_t p = 0; all[p]; p++) {
		const struct cr_profile *pr = all[p];

		ASSERT(pr->version && pr->version[0]);
		if ((why = check_list(pr->allow, pr->name)) ||
		    (why = check_list(pr->refuse, pr->name)))
			FAIL_("%s", why);
		for (size_t i = 0; pr->refuse[i]; i++) {
			/* Refused calls are recorded: each needs a
			 * refusing table entry, which records it. */
			if (cr_profile_lists(pr->allow, pr->refuse[i]))
				FAIL_("%s: %s both allowed and refused",
				      pr->name, pr->refuse[i]);
			if (!def_refuses(pr->refuse[i]))
				FAIL_("%s: %s is refused by the profile but "
				      "has no refusing entry in syscalls.def",
				      pr->name, pr->refuse[i]);
		}
		/* Every intercepted call is listed, so a profile never hides
		 * a call another area decides. */
		for (size_t i = 0; i < CR_ARRAY_SIZE(def_entries); i++) {
			const char *n = def_entries[i].name;

			/* Calls newer than libseccomp's tables are filtered
			 * by number (tracer/syscalls.c) and cannot be named
			 * in a profile. */
			if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, n) < 0)
				continue;
			if (!cr_profile_lists(pr->allow, n) &&
			    !cr_profile_lists(pr->refuse, n))
				FAIL_("%s: %s is in syscalls.def but neither "
				      "allowed nor refused by the profile",
				      pr->name, n);
		}
	}
}

/* Calls the known-good workloads make (strace -f of gcc, python3, bash,
 * git, tar, make): a profile edit that drops one fails here first. */
TEST_IMPL(profile_known_good)
{
	static const char *const needed[] = {
		"access", "arch_prctl", "brk", "chdir", "chmod",
		"clock_nanosleep", "clone", "close", "close_range", "connect",
		"copy_file_range", "dup2", "epoll_create1", "epoll_ctl",
		"epoll_wait", "execve", "exit_group", "faccessat2",
		"fadvise64", "fchdir", "fcntl", "fstatfs", "fsync",
		"ftruncate", "futex", "getcwd", "getdents64", "getpgrp",
		"getrandom", "getrusage", "getxattr", "ioctl", "kill",
		"lseek", "madvise", "mkdir", "mmap", "mprotect", "mremap",
		"munmap", "newfstatat", "openat", "pipe2", "poll",
		"prctl", "pread64", "prlimit64", "read", "readlink",
		"recvfrom", "rename", "rmdir", "rseq", "rt_sigaction",
		"rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend",
		"sched_getaffinity", "sendto", "set_robust_list",
		"set_tid_address", "setpgid", "sigaltstack", "socket",
		"socketpair", "statx", "symlink", "sysinfo",
		"timer_create", "timer_settime", "umask", "uname", "unlink",
		"utimensat", "vfork", "wait4", "write",
	};
	const struct cr_profile *p = cr_profile_default();

	for (size_t i = 0; i < CR_ARRAY_SIZE(needed); i++)
		if (!cr_profile_lists(p->allow, needed[i]))
			FAIL_("default profile lacks %s", needed[i]);
}

TEST_IMPL(profile_policy_key)
{
	struct cr_policy *p = NULL;
	char err[512] = "";
	char *json;
	int rc;

	/* Absent: the default profile. */
	rc = cr_policy_parse(cr_test_policy(NULL, NULL, NULL, NULL),
			     strlen(cr_test_policy(NULL, NULL, NULL, NULL)),
			     "t.json", &p, err, sizeof(err));
	if (rc)
		FAIL_("%s", err);
	ASSERT(p->classes[0].profile == cr_profile_default());
	json = cr_policy_to_json(p);
	cr_policy_free(p);
	p = NULL;
	ASSERT(json != NULL);
	ASSERT_CONTAINS(json, "\"syscalls\": \"default\"");
	free(json);

	/* Named. */
	{
		const char *text = cr_test_policy(NULL, NULL, NULL,
						  "[], \"syscalls\": \"default\"");

		rc = cr_policy_parse(text, strlen(text), "t.json", &p, err,
				     sizeof(err));
		if (rc)
			FAIL_("%s", err);
		ASSERT(p->classes[0].profile == cr_profile_find("default"));
		cr_policy_free(p);
	}

	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, NULL,
					 "[], \"syscalls\": \"nope\""),
			  "t.json:10: classes.x.syscalls: \"nope\" is not a "
			  "syscall profile (known: default)");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, NULL,
					 "[], \"syscalls\": 1"),
			  "t.json:10: classes.x.syscalls: expected a string, "
			  "got a number");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, NULL,
					 "[], \"syscalls\": [\"default\"]"),
			  "classes.x.syscalls: expected a string, got an "
			  "array");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, NULL,
					 "[], \"syscalls\": \"\""),
			  "classes.x.syscalls: \"\" is not a syscall profile");
}
