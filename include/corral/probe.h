/* include/corral/probe.h: what this host's kernel supports, tried once and
 * remembered (the only place that asks the kernel what it can do). */
#ifndef CORRAL_PROBE_H
#define CORRAL_PROBE_H

#include <stdbool.h>

enum cr_feature {
	CR_FEAT_SECCOMP_NOTIFY,		/* SECCOMP_FILTER_FLAG_NEW_LISTENER */
	CR_FEAT_WAIT_KILLABLE_RECV,	/* SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV */
	CR_FEAT_NOTIF_ADDFD_SEND,	/* SECCOMP_IOCTL_NOTIF_ADDFD + ADDFD_FLAG_SEND */
	CR_FEAT_NOTIF_SYNC_WAKE_UP,	/* SECCOMP_IOCTL_NOTIF_SET_FLAGS(SYNC_WAKE_UP) */
	CR_FEAT_PIDFD_OPEN,
	CR_FEAT_PIDFD_GETFD,
	CR_FEAT_PIDFD_SEND_SIGNAL,
	CR_FEAT_OPENAT2,
	CR_FEAT_PROCESS_VM_READV,
	CR_FEAT_PTRACE_SEIZE,
	CR_FEAT_CLOSE_RANGE,
	CR_FEAT__COUNT
};

/* Tries the feature (in a throwaway child where it must), remembers the
 * answer. Thread-safe after the first call from the main thread. */
bool cr_probe_has(enum cr_feature f);
const char *cr_probe_name(enum cr_feature f);
/* Landlock ABI version, or 0 when unavailable. */
int cr_probe_landlock_abi(void);
/* The writable delegated cgroup v2 directory we live in (looked at, never
 * created), or NULL when there is none. Borrowed; valid for the process. */
const char *cr_probe_delegated_cgroup(void);
/* `corral probe [--json]`: prints the report; returns the exit status. */
int cr_probe_main(int argc, char **argv);

#endif
