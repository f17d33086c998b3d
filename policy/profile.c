/* policy/profile.c: the versioned syscall profiles, as tables of names: what
 * the kernel may run, what is refused and recorded; the rest gets ENOSYS. */
#include <string.h>

#include "corral/profile.h"

/*
 * Profile "default", version 2026-12-05.1.
 *
 * Measured, not guessed: `strace -f` over gcc (with -lpthread), make, bash
 * (job control, `kill %1`, command substitution, here-strings), timeout,
 * coreutils (ls cp mv rm ln stat touch du df sort uniq find sha256sum od
 * xargs dd split tee base64 sed awk grep tr cut), git (init, add, commit,
 * log, status, diff, gc, checkout, clone), tar with gzip, and python3
 * (multiprocessing Pool/Process/Queue/Lock, concurrent.futures, asyncio
 * subprocesses, subprocess, signals, tempfile, socketpair). Every call they
 * made is below; the rest of each group is its obvious family (the *at and
 * f* variants, the 64-bit and vectored forms) so a libc or runtime choosing
 * a sibling does not break.
 *
 * Calls tracer/syscalls.def intercepts (paths, sockets, signals, process
 * creation) are listed too: the table decides them first, and listing them
 * keeps a program's calls working whichever area's handler answers.
 */
static const char *const default_allow[] = {
	/* Memory: the allocator, the dynamic loader, JITs, shared mappings
	 * of the program's own files. */
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync",
	"mincore", "mlock", "mlock2", "munlock", "mlockall", "munlockall",
	"membarrier", "pkey_mprotect", "pkey_alloc", "pkey_free",
	"get_mempolicy", "set_mempolicy", "mbind", "memfd_create",
	"map_shadow_stack",

	/* Threads and their synchronisation (glibc's pthreads, Python's GIL). */
	"futex", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
	"set_robust_list", "get_robust_list", "set_tid_address", "rseq",
	"arch_prctl", "gettid", "sched_yield", "sched_getaffinity",
	"sched_setaffinity", "sched_getparam", "sched_setparam",
	"sched_getscheduler", "sched_setscheduler", "sched_getattr",
	"sched_setattr", "sched_get_priority_max", "sched_get_priority_min",
	"sched_rr_get_interval", "getcpu",

	/* Processes: creation, exec, exit, waiting, identity, sessions. clone
	 * and clone3 stay under the table's rules (namespace flags refused,
	 * clone3 answered ENOSYS so libc uses clone). */
	"clone", "clone3", "fork", "vfork", "execve", "execveat", "exit",
	/* unshare too: namespace flags refused, a private fd table or cwd
	 * the kernel's (Go's LockOSThread + Unshare(CLONE_FS)). */
	"unshare",
	"exit_group", "wait4", "waitid", "getpid", "getppid", "getpgrp",
	"getpgid", "setpgid", "getsid", "setsid", "prctl", "seccomp",
	"personality", "umask", "uname", "sysinfo", "getrandom",
	"restart_syscall",

	/* System V IPC: objects the supervisor made for the run only
	 * (tracer/ipc/sysv.c); shmdt names none. */
	"shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semtimedop",
	"semctl", "msgget", "msgsnd", "msgrcv", "msgctl",

	/* Resources and priorities: the table confines the ones that name
	 * another process. */
	"getrusage", "times", "getrlimit", "setrlimit", "prlimit64",
	"getpriority", "setpriority", "ioprio_get", "ioprio_set",

	/* Credentials: reading them, and the changes an unprivileged
	 * process may make to itself (the kernel refuses the rest). */
	"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
	"getgroups", "setuid", "setgid", "setreuid", "setregid", "setresuid",
	"setresgid", "setfsuid", "setfsgid", "setgroups", "capget", "capset",

	/* Signals. Sending them is confined to the run by the table. */
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
	"rt_sigtimedwait", "rt_sigsuspend", "sigaltstack", "pause", "alarm",
	"getitimer", "setitimer", "kill", "tkill", "tgkill",
	"rt_sigqueueinfo", "rt_tgsigqueueinfo", "signalfd", "signalfd4",
	"pidfd_open", "pidfd_send_signal", "pidfd_getfd",

	/* Time: reading clocks, sleeping, timers (setting clocks is refused). */
	"clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep",
	"gettimeofday", "time", "timer_create", "timer_settime",
	"timer_gettime", "timer_getoverrun", "timer_delete",
	"timerfd_create", "timerfd_settime", "timerfd_gettime",

	/* Paths: the filesystem layer decides each one. */
	"open", "openat", "openat2", "creat", "stat", "lstat", "fstat",
	"newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat",
	"faccessat2", "readlink", "readlinkat", "getcwd", "chdir", "fchdir",
	"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
	"renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
	"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown",
	"lchown", "fchownat", "truncate", "ftruncate", "utime", "utimes",
	"utimensat", "futimesat", "mknod", "mknodat", "getxattr",
	"lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
	"fremovexattr", "inotify_init", "inotify_init1", "inotify_add_watch",
	"inotify_rm_watch",

	/* I/O on descriptors the program already holds. */
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv",
	"pwritev", "preadv2", "pwritev2", "lseek", "close", "close_range",
	"dup", "dup2", "dup3", "fcntl", "flock", "fsync", "fdatasync",
	"syncfs", "sync", "sync_file_range", "fadvise64", "readahead",
	"fallocate", "copy_file_range",
	/* Listed for the table, which answers vmsplice EINVAL in the filter
	 * (zero-copy pins folios no budget sees; programs fall back to
	 * write) and performs sendfile, splice and tee itself, copying what
	 * the kernel would lend. */
	"sendfile", "splice", "tee", "vmsplice",
	"getdents", "getdents64", "ioctl", "pipe", "pipe2",
	"eventfd", "eventfd2",
	/* Not native AIO (io_setup, io_submit...: ENOSYS, as on a kernel
	 * built without it; libaio's users fall back, glibc's POSIX AIO uses
	 * threads): a pending request holds its file with no descriptor, so
	 * a poll that never completes kept socket queues and epoll watches
	 * (hundreds of MB) out of every count the fd scan makes. */

	/* Waiting on descriptors. */
	"poll", "ppoll", "select", "pselect6", "epoll_create",
	"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
	"epoll_pwait2",

	/* Sockets: socket() families are confined by the table, addresses by
	 * the network layer. */
	"socket", "socketpair", "connect", "accept", "accept4", "bind",
	"listen", "shutdown", "getsockname", "getpeername", "setsockopt",
	"getsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
	"recvmmsg",

	/* A program may sandbox itself further. */
	"landlock_create_ruleset", "landlock_add_rule",
	"landlock_restrict_self",

	/* Confined to the run by the table: they name another process. */
	"process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",

	/* The clock's NTP state, read for the program; any mode that sets
	 * something is refused and recorded (tracer/handlers/clock.c). */
	"adjtimex", "clock_adjtime",
	NULL
};

/* Refused with EPERM and recorded: each would let the program escape the
 * tracer, reach the kernel's administration, or reach the host's other
 * processes (see tracer/syscalls.def for the reason of each). */
static const char *const default_refuse[] = {
	/* tracing and kernel programs */
	"ptrace", "bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	/* credentials of the user */
	"add_key", "request_key", "keyctl",
	/* kernel administration */
	"init_module", "finit_module", "delete_module", "kexec_load",
	"kexec_file_load", "reboot", "swapon", "swapoff", "acct", "syslog",
	"quotactl", "quotactl_fd", "lookup_dcookie", "vhangup", "uselib",
	"iopl", "ioperm", "modify_ldt", "settimeofday", "clock_settime",
	"fanotify_init", "sethostname", "setdomainname",
	/* mounts, roots, namespaces, file handles */
	"mount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "mount_setattr", "pivot_root", "chroot",
	"fanotify_mark",
	"setns", "name_to_handle_at", "open_by_handle_at",
	/* host IPC: POSIX message queues are host-wide */
	"mq_open",
	"mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
	"mq_getsetattr",
	NULL
};

static const struct cr_profile profile_default = {
	.name = "default",
	.version = "2026-12-05.2",
	.allow = default_allow,
	.refuse = default_refuse,
};

static const struct cr_profile *const profiles[] = {
	&profile_default,
	NULL
};

const struct cr_profile *cr_profile_default(void)
{
	return &profile_default;
}

const struct cr_profile *cr_profile_find(const char *name)
{
	for (size_t i = 0; profiles[i]; i++)
		if (!strcmp(profiles[i]->name, name))
			return profiles[i];
	return NULL;
}

const struct cr_profile *const *cr_profile_all(void)
{
	return profiles;
}

bool cr_profile_lists(const char *const *list, const char *name)
{
	for (size_t i = 0; list && list[i]; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}
