/* tracer/handlers/handlers.h: the syscall handlers named in syscalls.def,
 * one family per file under tracer/handlers/. */
#ifndef CORRAL_HANDLERS_H
#define CORRAL_HANDLERS_H

#include "../tracer.h"

/* net.c: a refusal of corral's own to a TCP connect (ECONNREFUSED): on
 * a non-blocking socket, answered as the kernel answers a closed port
 * (EINPROGRESS, then the error on the socket). */
struct cr_netstate;
struct cr_sock;
struct cr_verdict cr_net_refused_later(struct cr_netstate *ns,
				      const struct cr_sock *s,
				      struct cr_verdict v);

/* refuse.c */
struct cr_verdict cr_h_refuse_kind(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n);
/* Is the fd of args[0] a terminal (0), an nsfs file (1), a socket (2)? */
int cr_ioctl_fd_kind(struct cr_run *run, const struct seccomp_notif *n,
		     int kind);
struct cr_verdict cr_h_refuse(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);
/* The same for a file system's ioctls: ENOTTY on what is no file. */
struct cr_verdict cr_h_refuse_file(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n);
struct cr_verdict cr_h_dedupe(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);

/* fork.c: fork, vfork, clone (the processes budget, namespace flags) */
struct cr_verdict cr_h_fork(struct cr_run *run,
			    const struct cr_syscall_entry *e,
			    const struct seccomp_notif *n);
struct cr_verdict cr_h_unshare(struct cr_run *run,
			       const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n);
/* create.c: umask (the value corral creates files under, kept) */
struct cr_verdict cr_h_umask(struct cr_run *run,
			     const struct cr_syscall_entry *e,
			     const struct seccomp_notif *n);

/* open.c, stat.c, create.c, remove.c, attr.c, xattr.c, exec.c: the
 * path-bearing calls of the filesystem area. */
struct cr_verdict cr_h_open(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_openat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_creat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_openat2(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_stat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_lstat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_newfstatat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_statx(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_statfs(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_access(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_faccessat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_faccessat2(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_readlink(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_readlinkat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_mkdir(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_mkdirat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_mknod(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_mknodat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_symlink(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_symlinkat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_unlink(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_rmdir(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_unlinkat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_rename(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_renameat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_renameat2(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_link(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_linkat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_chmod(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_fchmodat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_fchmodat2(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_chown(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_lchown(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_fchownat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_truncate(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_utimensat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_utimes(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_futimesat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_utime(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_getxattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_lgetxattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_setxattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_lsetxattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_listxattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_llistxattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_removexattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_lremovexattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_inotify_add_watch(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_execve(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_execveat(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_chdir(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);

struct cr_verdict cr_h_fchmod(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_ioctl_attr(struct cr_run *run, const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n);
struct cr_verdict cr_h_fchown(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_fsetxattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
struct cr_verdict cr_h_fremovexattr(struct cr_run *run, const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
/* stat.c: is the path argument "" (with AT_EMPTY_PATH: the dirfd's own
 * object)? See the definition for the answers. */
int cr_h_empty_path(struct cr_run *run, const struct seccomp_notif *n,
		    int pathi, int diri, bool null_ok, bool *is_empty);
/* attr.c: may metadata be changed through this fd (a copy of the task's)? */
/* The access the rules grant where the task's fd (our copy) points:
 * every bit for a pipe or socket, 0 when it cannot be named. */
unsigned cr_fs_fd_access(struct cr_run *run, pid_t tid, int fd);
/* The same, with where fd points in path: empty for what no root rules
 * (a pipe, a socket, a memfd), and empty with 0 when fd cannot be read. */
unsigned cr_fs_fd_where(struct cr_run *run, pid_t tid, int fd, char *path,
			size_t size);
int cr_fs_fd_writable(struct cr_run *run, const struct seccomp_notif *n,
		      const char *sys, int fd);

/* exec.c: verify the image really loaded, at PTRACE_EVENT_EXEC. */
int cr_fs_exec_verify(struct cr_run *run, pid_t pid, char *bad, size_t badlen);
/* create.c: may the entry at res be created, removed or renamed? */
struct cr_fsres;
int cr_fs_entry_writable(struct cr_run *run, pid_t tid, const struct cr_fsres *res);
/* The top of user space (x86_64 with 5-level page tables; with 4 levels
 * the kernel's own copy faults past 2^47 all the same): access_ok's
 * bound for the program's ranges. */
#define CR_USER_TOP ((uint64_t)1 << 56)

#define CR_HANDLER(name)						\
	struct cr_verdict name(struct cr_run *run,			\
			       const struct cr_syscall_entry *e,	\
			       const struct seccomp_notif *n)

/* memfd.c */
CR_HANDLER(cr_h_memfd_create);
/* wait.c: wait4 and waitid with WNOHANG */
CR_HANDLER(cr_h_wait_nohang);
/* ipc/sysv.c: System V objects made for the run */
CR_HANDLER(cr_h_sysv_get);
CR_HANDLER(cr_h_sysv_use);
CR_HANDLER(cr_h_sysv_ctl);
CR_HANDLER(cr_h_pipe);
CR_HANDLER(cr_h_fcntl_pipe_size);
CR_HANDLER(cr_h_inotify_init);
CR_HANDLER(cr_h_fallocate);
/* sendfile.c */
CR_HANDLER(cr_h_sendfile);
/* ...and what splice.c shares with it. A file of procfs, sysfs, cgroupfs
 * and their like (read or written by the supervisor for no one). */
bool cr_copy_special_fs(int fd);
/* /dev/zero, /dev/random, /dev/urandom: read without ever waiting. */
struct stat;
bool cr_copy_memory_device(const struct stat *st);
/* The open file is readable (want_read) or writable: not O_PATH. */
bool cr_copy_has_mode(int fd, bool want_read);
/* The caller's RLIMIT_FSIZE at offset at (-1: out's position): past it
 * EFBIG and SIGXFSZ sent, else *count cut to it (*cut). 0 or -EFBIG. */
int cr_copy_fsize_limit(pid_t tid, int out, off_t at, size_t *count,
			bool *cut);
/* corral's own RLIMIT_FSIZE (the caller's shell's) lifted to its hard
 * limit; true when *own must be put back. */
struct rlimit;
bool cr_copy_lift_fsize(struct rlimit *own);
/* A regular file the supervisor may write for the program: on no special
 * file system, without set-id bits a write of its own would clear. */
bool cr_copy_plain_file(int fd, const struct stat *st);
/* The direct I/O alignment of fd's file (STATX_DIOALIGN, Linux 6.1+; else
 * 512): offsets and lengths of an O_DIRECT file's reads. */
size_t cr_copy_direct_unit(int fd);
/* splice.c */
CR_HANDLER(cr_h_splice);
CR_HANDLER(cr_h_tee);
/* sysinfo.c */
CR_HANDLER(cr_h_sysinfo);
/* clock.c */
CR_HANDLER(cr_h_adjtimex);
CR_HANDLER(cr_h_clock_adjtime);
CR_HANDLER(cr_h_clock_settime);

/* signal.c */
void cr_signal_raise(pid_t tid, int sig);
CR_HANDLER(cr_h_kill);
CR_HANDLER(cr_h_tkill);
CR_HANDLER(cr_h_tgkill);
CR_HANDLER(cr_h_sigqueue);
CR_HANDLER(cr_h_pidfd_open);
CR_HANDLER(cr_h_pidfd_send_signal);
CR_HANDLER(cr_h_setpgid);
/* proc.c */
CR_HANDLER(cr_h_pidfd_getfd);
CR_HANDLER(cr_h_cpuclock);
CR_HANDLER(cr_h_process_madvise);
CR_HANDLER(cr_h_process_vm);
CR_HANDLER(cr_h_proc_pid);
CR_HANDLER(cr_h_proc_prio);
CR_HANDLER(cr_h_capget);
CR_HANDLER(cr_h_fgetxattr);
CR_HANDLER(cr_h_fcntl_notify);
CR_HANDLER(cr_h_flistxattr);
CR_HANDLER(cr_h_prctl_dumpable);
CR_HANDLER(cr_h_prctl_get_dumpable);
CR_HANDLER(cr_h_prctl_sched_core);
CR_HANDLER(cr_h_fcntl_owner);
/* kmem.c */
CR_HANDLER(cr_h_fcntl_lock);
CR_HANDLER(cr_h_kernel_object);
CR_HANDLER(cr_h_mmap_shared);
/* Is fd /dev/zero? A socket? (kmem.c) */
bool cr_is_dev_zero(int fd);
bool cr_is_socket(int fd);
void cr_kmem_zero_seen(struct cr_run *run, int fd);
/* A /dev/zero may be in the run from now (kmem.c). */
void cr_kmem_zero_reachable(struct cr_run *run);
CR_HANDLER(cr_h_poll_charge);
/* socket.c */
CR_HANDLER(cr_h_socket);
CR_HANDLER(cr_h_sockios);
/* pidfd.c: SO_PEERPIDFD and the pidfs ioctls */
CR_HANDLER(cr_h_peer_pidfd);
CR_HANDLER(cr_h_pidfd_ioctl);
/* personality.c */
CR_HANDLER(cr_h_personality);
CR_HANDLER(cr_h_ptrace);
/* net.c: a duplicate of a program socket and what it is, shared with
 * loopback.c */
union cr_sockaddr;
struct cr_rtnl;
struct cr_sock {
	int dup;		/* owned, -1 when handed on */
	int domain, type, protocol;
	uint64_t ino;
	/* An emulated route netlink socket (net/rtnl.c): domain, type and
	 * protocol are the ones asked for, dup the program's unix end. */
	struct cr_rtnl *rtnl;
};
int cr_sock_open(struct cr_run *run, const struct seccomp_notif *n, int fd,
		 struct cr_sock *s);
void cr_sock_close(struct cr_sock *s);
/* getsockname/getpeername(fd, addr, *len): open the socket (0 or
 * -errno); then read *len and hand back an address as the kernel does,
 * cut to the program's length, the full length in *len. */
int cr_sock_name_open(struct cr_run *run, const struct seccomp_notif *n,
		      struct cr_sock *s);
/* The peer's address as getpeername tells the program (the destination it
 * asked for, not the proxy; the name a unix peer bound): 0 or -errno. */
int cr_net_peer_name(struct cr_run *run, const struct cr_sock *s,
		     union cr_sockaddr *out, socklen_t *outlen);
struct cr_verdict cr_sock_name_reply(const struct seccomp_notif *n,
				     const union cr_sockaddr *a, socklen_t al);
struct cr_verdict cr_net_deny(struct cr_run *run, const struct seccomp_notif *n,
			      const struct cr_syscall_entry *e,
			      const union cr_sockaddr *a, socklen_t alen,
			      const char *layer, const char *why, int err);

/* loopback.c: the run's own servers on loopback */
struct cr_verdict cr_net_bind_inet(struct cr_run *run,
				   const struct seccomp_notif *n,
				   const struct cr_syscall_entry *e,
				   struct cr_sock *s, const union cr_sockaddr *a,
				   socklen_t alen);
struct cr_verdict cr_net_listen_inet(struct cr_run *run,
				     const struct seccomp_notif *n,
				     const struct cr_syscall_entry *e,
				     struct cr_sock *s, int backlog);
/* A TCP connect to loopback: the run's own listeners (by_rule: an allow
 * rule opens the address, which then goes to the proxy unless the port is
 * one the run bound). True when it was decided here (*v holds the answer). */
bool cr_net_connect_local(struct cr_run *run, const struct seccomp_notif *n,
			  const struct cr_syscall_entry *e, struct cr_sock *s,
			  const union cr_sockaddr *a, socklen_t alen,
			  bool by_rule, struct cr_verdict *v);
/* An internet UDP (or UDP-Lite) socket? */
bool cr_net_udp_proto(const struct cr_sock *s);
/* A UDP connect or send naming address a: 0 when it is not for loopback
 * (not decided here); 1 when it goes to a UDP socket of the run, with s
 * made a member and the address to use in *t (for a send to a port no
 * socket of the run holds: corral's sink, the refusal recorded); -1 with
 * *v the refusal. */
int cr_net_udp_local(struct cr_run *run, const struct seccomp_notif *n,
		     const struct cr_syscall_entry *e, struct cr_sock *s,
		     const union cr_sockaddr *a, socklen_t alen, bool send,
		     union cr_sockaddr *t, socklen_t *tl, struct cr_verdict *v);
struct cr_verdict cr_h_accept(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n);
struct cr_verdict cr_h_getsockname(struct cr_run *run,
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
struct cr_verdict cr_h_getsockopt(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n);
struct cr_verdict cr_h_setsockopt(struct cr_run *run,
				  const struct cr_syscall_entry *e,
				  const struct seccomp_notif *n);
struct cr_verdict cr_h_getpeername(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n);

/* dirents.c: getdents64, getdents (filtered /proc and /dev/pts) */
struct cr_verdict cr_h_getdents(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n);
/* pty.c: ioctl TIOCGPTPEER on a master of the run */
struct cr_verdict cr_h_tiocgptpeer(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n);

#endif
