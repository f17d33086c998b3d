/* tracer/fs/fs.h: the filesystem area of the supervisor: the run's view of
 * the filesystem, path resolution on the tracee's behalf, and its helpers. */
#ifndef CORRAL_FS_H
#define CORRAL_FS_H

#include <limits.h>
#include <sys/stat.h>

#include "corral/fsrules.h"
#include "../tracer.h"

/* One file the run holds without a name: an open file of ours on it
 * (held.c). */
struct cr_held {
	dev_t dev;
	ino_t ino;
	int fd;			/* owned */
	bool provable;		/* a lease can tell when we are its last holder */
	uint64_t bytes;		/* its blocks when last measured, 0 once named */
};

/* Files without a name tracked at once (and at most a quarter of the
 * supervisor's RLIMIT_NOFILE); past that the run ends ("files"). */
#define CR_FS_HELD_MAX 4096

/* The top of a writable root as set-up found it (tops.c). */
struct cr_fstop {
	dev_t dev;
	ino_t ino;
	mode_t mode;		/* its permission bits then */
};

struct cr_fsstate {
	struct cr_fsrules rules;
	struct cr_held *held;	/* owned: held.c */
	size_t nheld, heldcap, heldmax;
	size_t held_next;	/* where cr_fs_held_bytes measures next */
	int root_fd;		/* "/", O_PATH; owned */
	int proc_fd;		/* "/proc", O_PATH; owned */
	int shm_fd;		/* "/dev/shm", O_PATH, or -1; owned */
	int shm_priv;		/* the run's directory in it, O_PATH, or -1
				 * until first used (shm.c); owned */
	char shm_pname[48];	/* its name, ".corral-<hex>" */
	char shm_ppath[64];	/* "/dev/shm/" and that name */
	size_t shm_pplen;
	struct cr_fsfifo *fifo;	/* owned: blocking FIFO opens, fifo.c */
	int *root_fds;		/* owned: per rules.roots[i], O_PATH dir or -1 */
	bool *root_deny;	/* a deny subtree lies inside roots[i] */
	dev_t *root_dev;	/* owned: the device of root_fds[i], 0 unknown */
	int *leaf_fds;		/* owned: per rules.roots[i], a root that is
				 * no directory (a file, a link) as the set-up
				 * opened it (O_PATH|O_NOFOLLOW), -1 if it was
				 * a directory, -2 if absent; for the Landlock
				 * ruleset only, freed once it is built
				 * (cr_fs_leaf_fds_drop) */
	unsigned *ptys;		/* owned: /dev/pts indices the run allocated */
	size_t nptys;
	int pty_weak;		/* owned: an epoll set holding, without a
				 * reference, every pty file corral opened for
				 * the run (pty.c), or -1 until the first */
	struct cr_pty_hint {	/* where a master was found last (pty.c) */
		unsigned idx;
		pid_t tid;	/* 0: empty */
		int fd;
	} pty_hint[4];
	unsigned pty_hint_next;
	uint64_t pty_prune_next_ns;	/* no prune at the cap before (pty.c) */
	bool *pty_held;		/* owned: per ptys[i], a master held, as */
	size_t npty_held;	/* found by the listing's search in the */
	uint64_t pty_held_gen;	/* notification numbered so (pty.c) */
	dev_t proc_dev;		/* st_dev of /proc, for listings (dirents.c) */
	dev_t shm_dev;		/* of /dev/shm when a mount of its own, or 0 */
	char *shm_real;		/* owned: /dev/shm's real path if a link, or NULL */
	struct { dev_t dev; int kind; } devkind[16];	/* resolve.c: placed_fs */
	size_t ndevkind;
	struct cr_fsalias *alias;	/* owned: roots named through a link */
	size_t nalias;
	struct cr_fstop *tops;	/* owned: the writable roots' tops */
	size_t ntops;
	/* The caller's stdin when a pipe the program inherits: reopened
	 * through /proc/<pid>/fd, read-only (resolve.c: pipe_link). */
	dev_t stdin_pipe_dev;
	ino_t stdin_pipe_ino;
	/* Stand-ins for O_PATH fds of links (linkfd.c). */
	struct cr_linkfd *linkfds;	/* owned */
	size_t nlinkfds;
	int linkfd_in;			/* owned: their inotify watches, or -1 */
	/* Directories removed and still held (rmheld.c). */
	struct cr_rmheld *rmheld;	/* owned */
	size_t nrmheld;
	int rmheld_in;			/* owned: their inotify watches, or -1 */
	uint64_t rmheld_lost;		/* bytes of those not followed: for good */
};

/* A directory about to be removed (rmheld.c), measured and watched. */
struct cr_rmheld_tok {
	int wd;
	uint64_t bytes;
};

/* A root the policy names through a symlink ("/lib" on a merged-/usr host)
 * and the real path the link led to at set-up, which is a root too (fs.c).
 * Kept only where the program cannot change the link: outside every
 * writable root and every deny entry. */
struct cr_fsalias {
	char *from, *to;	/* owned */
	size_t flen, tlen;
};

/* How to resolve (bits). */
#define CR_RES_FOLLOW		0x01u	/* follow a symlink in the last component */
#define CR_RES_NO_SYMLINKS	0x02u	/* openat2 RESOLVE_NO_SYMLINKS */
#define CR_RES_NO_MAGICLINKS	0x04u	/* openat2 RESOLVE_NO_MAGICLINKS */
#define CR_RES_BENEATH		0x08u	/* openat2 RESOLVE_BENEATH */
#define CR_RES_IN_ROOT		0x10u	/* openat2 RESOLVE_IN_ROOT */
#define CR_RES_EMPTY_PATH	0x20u	/* AT_EMPTY_PATH: "" names dirfd itself */
#define CR_RES_SLASH_OK		0x40u	/* a trailing '/' on a non-directory is
					 * the caller's to judge (O_CREAT) */
#define CR_RES_NULL_EMPTY	0x80u	/* cr_fs_arg: a NULL path is "" (statx
					 * and newfstatat with AT_EMPTY_PATH,
					 * 6.11+) */
#define CR_RES_ENTRY		0x200u	/* the last component is an entry of its
					 * parent (unlink, rmdir, rename, mkdir,
					 * mknod, symlink, a link's new name):
					 * never followed, a trailing '/' or
					 * not, as the kernel's parent lookups;
					 * the caller answers for the '/' */
#define CR_RES_TMP_QUIET	0x100u	/* cr_fs_arg: a refusal at /tmp itself
					 * is the caller's to record (an
					 * O_TMPFILE open: handlers/open.c) */

/* The last component of a path, as the kernel's nd->last_type: rmdir and
 * link answer by it ("x/.." is ENOTEMPTY to rmdir, "/" EBUSY). */
#define CR_LAST_NORM	0	/* a name */
#define CR_LAST_DOT	1	/* "." */
#define CR_LAST_DOTDOT	2	/* ".." */
#define CR_LAST_ROOT	3	/* no component at all: "/", "" */

struct cr_fsres {
	int dirfd;		/* O_PATH directory holding the object: owned,
				 * unless dirfd_borrowed (a root's own fd) */
	bool dirfd_borrowed;
	char name[NAME_MAX + 1];	/* last component; "." is dirfd itself */
	char path[PATH_MAX];	/* absolute path of the object, symlinks resolved */
	size_t plen;
	unsigned acc;		/* what the rules grant at path */
	bool exists;		/* lstat of name succeeded */
	struct stat st;		/* that lstat */
	bool trailing_slash;	/* the path ended in '/' */
	unsigned char last;	/* CR_LAST_*: what the last component was */
	bool refused;		/* -EACCES/-ENOENT came from the rules, at path */
	bool walk_capped;	/* -ELOOP came from corral's bound on steps
				 * (resolve.c), not from the path: the
				 * kernel would find it */
	bool refused_last;	/* ...at the last name, in a directory the
				 * walk could see (creations: EACCES) */
	const char *layer;	/* "fs" or "proc" for a refusal */
	char link_text[64];	/* /proc/self as a link: the caller's answer */
	bool via_link;		/* a /proc/<pid>/fd link to a pipe of the run:
				 * name is "self/fd/<linkfd>" under /proc, to be
				 * followed, as the kernel would */
	int linkfd;		/* owned: our O_PATH fd of that pipe */
	bool w_by_fd;		/* CR_FS_W in acc is a removed file's fd's
				 * own access mode only: its data may be
				 * written, its metadata not (resolve.c) */
	bool tmp_refused;	/* CR_RES_TMP_QUIET: the path was "/tmp" itself,
				 * refused there and not recorded */
	bool pty;		/* one of the run's ptys by its path: a change
				 * of it acts on an fd checked to be that pty
				 * (cr_fs_pty_is_runs; handlers/attr.c) */
	bool diverged;		/* the walk took /dev/shm for the run's private
				 * directory where the kernel, given the same
				 * path, would not (or the reverse): a call
				 * continued to the kernel (chdir, exec) would
				 * land elsewhere */
};

/* tracer/fs/quietstat.c: fstatat and fstat that never ask for the times
 * (which would make the file's next change fine-grained); times zero. */
int cr_quiet_fstatat(int dirfd, const char *name, struct stat *st, int flags);
int cr_quiet_fstat(int fd, struct stat *st);
/* openat of a directory for the supervisor's own listing, its access time
 * left alone where the owner's O_NOATIME is allowed. */
int cr_quiet_opendir(int dirfd, const char *name, int flags);

/* tracer/fs/dirstream.c: a directory read with getdents64 into a buffer of
 * bufsz bytes (at least 1 KiB). cr_dir_open takes fd (closed on failure,
 * NULL with errno); cr_dir_next gives the next name, "." and ".." too, or
 * NULL at the end (errno 0; a directory removed meanwhile is at its end)
 * or on an error (errno set). */
struct cr_dir;
struct cr_dir *cr_dir_open(int fd, size_t bufsz);
const char *cr_dir_next(struct cr_dir *d);
int cr_dir_fd(const struct cr_dir *d);
void cr_dir_close(struct cr_dir *d);
/* A listing recorded before (names NUL-separated, len bytes, copied) read
 * back by cr_dir_next, "." and ".." left out, with fd (taken; an O_PATH
 * one will do) as cr_dir_fd. */
struct cr_dir *cr_dir_given(int fd, const char *names, size_t len);
/* Record the names cr_dir_next reads from now ("." and ".." left out), up
 * to cap bytes; cr_dir_recorded gives them (NUL-separated, *len bytes)
 * once the listing was read to its end, NULL otherwise or past cap. */
void cr_dir_record(struct cr_dir *d, size_t cap);
const char *cr_dir_recorded(const struct cr_dir *d, size_t *len);

int cr_fs_setup(struct cr_run *run);
void cr_fs_finish(struct cr_run *run);
/* The roots' leaf fds are done with (the Landlock ruleset is built). */
void cr_fs_leaf_fds_drop(struct cr_fsstate *fs);

void cr_fsres_init(struct cr_fsres *r);
void cr_fsres_free(struct cr_fsres *r);
/*
 * Resolve path as task tid would, relative to its dirfd (AT_FDCWD: its cwd),
 * walking one component at a time on fds of our own: the kernel never
 * follows a link on our behalf, so nothing the program plants can steer the
 * walk. Every step must stay inside a root or on an ancestor of one.
 * Returns 0 (res->exists says whether the last component exists) or -errno.
 */
int cr_fs_resolve(struct cr_run *run, pid_t tid, int dirfd, const char *path,
		  unsigned how, struct cr_fsres *res);
/* One allowance of path steps for every walk a call makes until
 * cr_fs_walks_end (an exec resolves its image and up to four
 * interpreters), instead of one for each. */
void cr_fs_walks_begin(struct cr_run *run);
void cr_fs_walks_end(struct cr_run *run);
/* The access the run has at an absolute path (rules + /proc + /dev). */
unsigned cr_fs_access(struct cr_run *run, pid_t tid, const char *path,
		      size_t len);
/* Record a filesystem denial (result + audit). */
void cr_fs_deny(struct cr_run *run, const struct seccomp_notif *n,
		const char *syscall, const struct cr_fsres *res,
		const char *why);
/* A mode the supervisor is about to set, without the set-user-ID bit and,
 * but on a directory (where it only passes the group on), without the
 * set-group-ID bit; a stripped bit is recorded as a denial. */
mode_t cr_fs_safe_mode(struct cr_run *run, const struct seccomp_notif *n,
		       const char *sys, const char *target, mode_t mode,
		       bool dir);
/* tops.c: the tops of the writable roots (the workspace above all) keep
 * what they give other users: recorded at set-up, then each change judged
 * on st, the inode the call acts on, a denial naming target (or, when
 * NULL, fd's path). cr_fs_top_mode: the mode to set, without the group
 * and other bits the top did not have. The others: 0, or -EPERM for an
 * owner or group change, or an attribute set or removed outside the
 * "user." namespace (POSIX ACLs above all). */
int cr_fs_tops_setup(struct cr_fsstate *fs);
void cr_fs_tops_finish(struct cr_fsstate *fs);
mode_t cr_fs_top_mode(struct cr_run *run, const struct seccomp_notif *n,
		      const char *sys, const char *target, int fd,
		      const struct stat *st, mode_t mode);
int cr_fs_top_chown(struct cr_run *run, const struct seccomp_notif *n,
		    const char *sys, const char *target, int fd,
		    const struct stat *st, uid_t uid, gid_t gid);
int cr_fs_top_xattr(struct cr_run *run, const struct seccomp_notif *n,
		    const char *sys, const char *target, int fd,
		    const struct stat *st, const char *name);
/* The task's filesystem uid, from /proc/<tid>/status: 0, or -1 when it
 * cannot be read or the task holds a capability (the owner checks of
 * chmod, chown and utimes are then not the kernel's last word). */
int cr_fs_task_fsuid(pid_t tid, uid_t *fsuid);
/* Around a creation corral performs (open O_CREAT, mkdir, mknod, a unix
 * bind): the process's umask is the task's, so the kernel applies it as
 * for the program, and skips it under a directory's default ACL, as for
 * the program. Only the loop thread creates files. The umask is read from
 * /proc/<tid>/status (022 if unreadable) unless the task table keeps it
 * (cr_tasks_umask_get). enter returns what leave is to be given. */
mode_t cr_fs_umask_enter(struct cr_run *run, pid_t tid);
void cr_fs_umask_leave(mode_t entered);
/* shm.c: the run's /dev/shm is a private directory in it: /dev/shm/NAME
 * of the program is NAME there. cr_fs_shm_dir: its O_PATH fd (the fs
 * area's), made at first use; -errno when it cannot be made. */
int cr_fs_shm_dir(struct cr_run *run);
/* Is name (len bytes) the private directory's own name? */
bool cr_fs_shm_is_pname(const struct cr_fsstate *fs, const char *name,
			size_t len);
/* A kernel path (an fd's) at or inside the private directory rewritten
 * in place to the program's /dev/shm path. */
void cr_fs_shm_canon(const struct cr_fsstate *fs, char *path, size_t *len);
/* Cleanup: the private directory goes, with all in it. */
void cr_fs_shm_finish(struct cr_fsstate *fs);
/* Blocks of the run's /dev/shm objects, in bytes (the disk budget). */
uint64_t cr_fs_shm_bytes(struct cr_run *run);
/* Remove the /dev/shm directories (and objects of earlier builds) of this
 * user whose tag names a supervisor that is gone (killed before its
 * cleanup). Called at every run's start; `corral gc` calls it too.
 * Returns how many were removed. */
int cr_fs_shm_sweep(void);
/* Remove the run directory NAME of /dev/shm (dirfd shm) with all in it:
 * only a ".corral-" directory of this user, no link followed. 0 or -1. */
int cr_fs_shm_remove_dir(int shm, const char *name);
/* True when the object NAME of /dev/shm (dirfd shm) cannot carry corral's
 * tag: this tmpfs has no user xattrs, so a lock file's list is the only
 * record of the directory a killed run made. */
bool cr_fs_shm_untaggable(int shm, const char *name);
/* Open a FIFO on a worker thread; answered when it completes. */
struct cr_verdict cr_fs_open_fifo(struct cr_run *run,
				  const struct seccomp_notif *n,
				  const struct cr_fsres *res, int flags);
/* A task is gone: FIFO opens it waited in end now. */
void cr_fs_fifo_on_gone(struct cr_run *run, pid_t tid);
void cr_fs_fifo_finish(struct cr_run *run);

/* held.c: files the run holds without a name (unlinked, O_TMPFILE, memfds),
 * wherever it holds them (tables, socket queues, mappings); the disk
 * budget counts them until only the ledger holds them. */
void cr_fs_held_setup(struct cr_run *run);
void cr_fs_held_finish(struct cr_fsstate *fs);
/* Track the regular file behind fd (ours; not consumed). 0 or -errno
 * (-EDQUOT: the ledger is full and the run is ending). */
int cr_fs_held_add(struct cr_run *run, int fd);
/* Room for one more entry (pruned first), or -EDQUOT (the run is ending):
 * asked before an unlink, so a file is never unlinked untracked. */
int cr_fs_held_room(struct cr_run *run);
/* Drop the entries nothing but the ledger holds (their storage is freed). */
void cr_fs_held_prune(struct cr_run *run);
/* The ledger's bytes: at most `most` entries measured now (in turn, from
 * where the last call stopped), the others as last measured; an entry
 * named again counts nothing (the walk sees it). */
uint64_t cr_fs_held_bytes(struct cr_fsstate *fs, size_t most);
/* Around an unlink or a rename over res: *keep holds what is needed to
 * follow the file when this removes its last name (keep->fd -1 otherwise);
 * -errno when it cannot be had, and the call must be refused. Then, when
 * the call succeeded, the file goes to the ledger unless it is provably
 * gone (or the run ends); keep's fd is closed or handed to the ledger. */
struct cr_fs_keep {
	int fd;			/* our open file (own) or an O_PATH fd */
	signed char lease;	/* 1 ours held through the call, 0 others hold
				 * the file, -1 cannot tell */
	bool own;		/* fd is a read-only open file of our own */
	dev_t dev;
	ino_t ino;
};
int cr_fs_held_before_unlink(struct cr_run *run, const struct cr_fsres *res,
			     struct cr_fs_keep *keep);
void cr_fs_held_after_unlink(struct cr_run *run, struct cr_fs_keep *keep,
			     bool done);

/* weak.c: files followed without a reference (an epoll set, *set -1
 * until the first add). Add fd's file with data; then call fn for each
 * file of the set still alive, with its data and inode number. 0 or
 * -errno (the set could not be read: the caller assumes the worst). */
int cr_weak_add(int *set, int fd, uint64_t data);
void cr_weak_dropped(int in, void (*gone)(void *arg, int wd), void *arg);

/* linkfd.c: a stand-in fd for the O_PATH fd of a link (link: ours,
 * O_PATH | O_NOFOLLOW, taken in every case), to give the program, or
 * -errno; and, for an fd copied from the program, the link's O_PATH fd
 * in its place if it is a stand-in (fd consumed), else fd itself. */
int cr_fs_linkfd_make(struct cr_fsstate *fs, int link);
int cr_fs_linkfd_swap(struct cr_fsstate *fs, int fd);
void cr_fs_linkfd_free(struct cr_fsstate *fs);

/* rmheld.c: before an rmdir (or a rename over a directory) of dirfd/name,
 * and after it (removed: it went); the bytes of removed directories still
 * held somewhere, for the disk budget. */
int cr_fs_rmheld_before(struct cr_fsstate *fs, int dirfd, const char *name,
			struct cr_rmheld_tok *tok);
void cr_fs_rmheld_after(struct cr_fsstate *fs, struct cr_rmheld_tok *tok,
			bool removed);
uint64_t cr_fs_rmheld_bytes(struct cr_fsstate *fs);
void cr_fs_rmheld_free(struct cr_fsstate *fs);
int cr_weak_each(int set, void (*fn)(void *arg, uint64_t data, uint64_t ino),
		 void *arg);

/* shm.c: how deep the run's /dev/shm tree may go, in components below
 * /dev/shm: what may be made there (resolve.c), and how deep its measure
 * and its removal descend (shm.c). A directory moves deeper there only
 * from within (handlers/remove.c), so no tree outgrows it. */
#define CR_SHM_DEPTH 8
/* The depth of path (absolute, the program's view) in the run's private
 * /dev/shm tree: 1 for /dev/shm/NAME; 0 when it is not in that tree (a
 * root the caller named under /dev/shm is not). */
size_t cr_fs_shm_depth(const struct cr_fsstate *fs, const char *path,
		       size_t len);

/* pty.c: the run's own pseudo-terminals. At most CR_PTY_MAX held at once:
 * ptys are a host-wide resource (kernel.pty.max), and a run holding them all
 * would keep the user from opening a terminal. */
#define CR_PTY_MAX 64
/* May the run allocate one more (indices it no longer holds are forgotten
 * first)? */
bool cr_fs_pty_may_open(struct cr_run *run);
/* After the supervisor opened a master (slave_of < 0) or a slave of the
 * pty slave_of for the run: remember its index, and follow the file's life.
 * 0, or -errno: then the file must not reach the run (the cap could not
 * count it). */
int cr_fs_pty_note(struct cr_run *run, int fd, int slave_of);
/* Our copy of a master of /dev/pts/<idx> that a task of the run holds and
 * that the run allocated, or -ENOENT. Caller closes. */
int cr_fs_pty_master(struct cr_run *run, unsigned idx);
/* The same question for an entry of a /dev/pts listing: one search for
 * all the entries of the notified call (getdents). */
bool cr_fs_pty_listed(struct cr_run *run, unsigned idx);
/* Did the run allocate idx (it may have been freed since)? */
bool cr_fs_pty_allocated(const struct cr_run *run, unsigned idx);
/* The slave of the run's pty idx, opened through its master (TIOCGPTPEER):
 * a fd of ours or -errno (-ENOENT when the run holds no such master). */
int cr_fs_pty_open_slave(struct cr_run *run, unsigned idx, int flags);
/* The /dev/pts index of the task's controlling terminal when it is one of
 * the run's ptys, else -ENXIO (no terminal, or another one). */
int cr_fs_pty_ctty(struct cr_run *run, pid_t tid);
/* Is res a terminal node by the rules' place: /dev/tty, /dev/ptmx,
 * /dev/pts/<n>, /dev/pts/ptmx (resolved path, any type)? */
bool cr_fs_pty_path(const struct cr_fsres *res);
/* err for a refused creation, removal, rename or mode change at res: where
 * res lies in /proc, the kernel's own answer (ENOENT for a missing name,
 * EPERM for an existing one) in place of EACCES. */
int cr_fs_proc_refusal(const struct cr_run *run, const struct cr_fsres *res,
		       int err);
/* The same for a removal, rename or link of an existing entry, which the
 * kernel refuses by its directory's permission first. */
int cr_fs_proc_entry_refusal(const struct cr_run *run,
			     const struct cr_fsres *res, int err);
/* Is fd (any open of it, O_PATH too) the slave of a pty the run holds:
 * the same inode its master's peer is? A number the run let go and
 * another's pty took is not. */
bool cr_fs_pty_is_runs(struct cr_run *run, int fd);

#endif
