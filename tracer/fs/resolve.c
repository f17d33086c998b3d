/* tracer/fs/resolve.c: resolves a path the way the calling task would, one
 * component at a time on the supervisor's own fds, checking every step. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <linux/openat2.h>

#include "../budget/budget.h"
#include "fs.h"

#define CR_MAX_LINKS 40
/* The components one resolution may walk (each a few system calls of
 * corral's), and from how many its CPU is the run's. The kernel walks 40
 * links of up to PATH_MAX each, ~80 000 components: at ~1.3 us a step
 * here, an exec whose script names interpreters through chains of links
 * full of "a/../" held the supervisor 0.5 s of CPU, every budget waiting
 * behind it, 20-45 s of wall time with 63 tasks spinning beside it
 * (found by a probing session). Real paths take tens of steps; from the
 * 32nd the walk's CPU is charged (from the 256th, a path of 254 steps of
 * "d/../" cost corral ~0.9 ms, 150 times the program's CPU, uncharged;
 * found by a probing session). */
#define CR_MAX_STEPS 4096
#define CR_STEPS_CHARGED 32

/* An exec walks its image's path and each interpreter's: 5 walks of 3 900
 * steps each held the loop ~29 ms an exec, a 5 s wall limit firing at
 * 6.7-7.7 s beside 54 spinning threads (found by a probing session). One
 * allowance for all of them. */
void cr_fs_walks_begin(struct cr_run *run)
{
	run->walk_left = CR_MAX_STEPS;
}

void cr_fs_walks_end(struct cr_run *run)
{
	run->walk_left = 0;
}

/*
 * Why this is safe against the program it supervises:
 * - The kernel never follows a symlink for us. Each step is one component,
 *   opened relative to a directory fd we hold, with RESOLVE_NO_SYMLINKS; a
 *   symlink is read with readlinkat and its text spliced into what remains,
 *   so the program cannot plant a link between our check and our use: a
 *   component that became a link fails the open (ELOOP), it is not followed.
 * - Every step's textual path is checked against the rules before we go on,
 *   so a symlink chain that leaves the roots is refused where it leaves, and
 *   "..", absolute links and /proc links are all judged by where they lead.
 * - /proc/self and /proc/thread-self are rewritten to the CALLING task's ids:
 *   read by us they would name the supervisor.
 * - The handlers perform the call on the final (dirfd, name) with
 *   RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH, so what they touch is what was
 *   checked.
 */

struct walk {
	struct cr_run *run;
	pid_t tid;
	unsigned how;
	int fd;			/* the current directory: owned unless */
	bool borrowed;		/* it is the root's own fd (fs->root_fd) */
	char cur[PATH_MAX];	/* its path */
	size_t clen;
	size_t slen;		/* length of the start path (BENEATH/IN_ROOT) */
	int links;
	bool removed;		/* cur is a removed directory's last path */
	bool diverged;		/* see cr_fsres.diverged */
	char rest[2 * PATH_MAX];/* what remains to walk */
	size_t roff;		/* start of the remainder in rest */
};

void cr_fsres_init(struct cr_fsres *r)
{
	memset(r, 0, sizeof(*r));
	r->dirfd = -1;
	r->linkfd = -1;
	r->layer = "fs";
}

void cr_fsres_free(struct cr_fsres *r)
{
	if (r->dirfd >= 0 && !r->dirfd_borrowed)
		close(r->dirfd);
	r->dirfd = -1;
	r->dirfd_borrowed = false;
	if (r->linkfd >= 0)
		close(r->linkfd);
	r->linkfd = -1;
}

static bool is_num(const char *s, size_t n)
{
	if (!n || n > 10)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* The entries of /proc/<pid>/ (or .../task/<tid>/) a task of the run may
 * write: each acts on that task or its process only. Not the rest: some
 * reach further (autogroup is the whole session's nice level, the
 * caller's shell and corral included, and it outlives the run), and a
 * new kernel's new entry is read-only here until judged (loginuid is not
 * listed: an unset one may be set once by its process, which would sign
 * the host's audit records with an identity of the program's choosing).
 * fd/ holds the
 * links a pipe of the run is reopened through. */
static bool proc_pid_entry_writable(const char *sub)
{
	static const char *const names[] = {
		"comm", "mem", "oom_score_adj", "oom_adj", "coredump_filter",
		"clear_refs", "timerslack_ns", "sched", "attr", "fd",
		"setgroups", "uid_map", "gid_map", "projid_map",
		"fail-nth", "make-it-fail",
	};
	size_t n;

	if (*sub != '/')
		return false;
	sub++;
	n = strcspn(sub, "/");
	for (size_t i = 0; i < CR_ARRAY_SIZE(names); i++)
		if (strlen(names[i]) == n && !memcmp(names[i], sub, n))
			return true;
	return false;
}

/* /proc: the run's own tasks, and a few harmless globals. */
static unsigned proc_access(struct cr_run *run, const char *p, size_t len)
{
	static const char *const globals[] = {
		"cpuinfo", "meminfo", "stat", "uptime", "loadavg", "version",
		"filesystems", "mounts", "self", "thread-self",
		"sys/kernel/ngroups_max", "sys/kernel/pid_max",
		"sys/vm/overcommit_memory", "sys/kernel/osrelease",
		"sys/fs/pipe-max-size", "tty/drivers",
		/* Go's net.Listen sizes its backlog from it (else 128: a
		 * burst of 300 clients timed out); libcap reads the other. */
		"sys/net/core/somaxconn", "sys/kernel/cap_last_cap",
		/* The host's ephemeral port range (named, Go's tests). */
		"sys/net/ipv4/ip_local_port_range",
		/* A fresh random UUID at each read (shell scripts make ids
		 * so; a probing session found it ENOENT). Not boot_id, which
		 * names the host's boot, nor hostname (fs_proc_sys_kcore). */
		"sys/kernel/random/uuid",
	};
	const char *rel, *slash;
	size_t n;

	if (len == 5)	/* "/proc" itself: listed with the run's pids only */
		return CR_FS_R | CR_FS_STAT;
	rel = p + 6;
	slash = memchr(rel, '/', len - 6);
	n = slash ? (size_t)(slash - rel) : len - 6;
	if (is_num(rel, n)) {
		const char *sub = rel + n;
		char num[16];

		if (n >= sizeof(num))
			return 0;
		memcpy(num, rel, n);
		num[n] = 0;
		if (!cr_tasks_ours(&run->tasks, (pid_t)atoi(num))) {
			/* A process of the run that has ended and waits
			 * for its parent is shown, as the kernel shows it
			 * (state Z, ps's <defunct>); the walk asks again
			 * once the directory is open (zombie_dir), so a
			 * number freed and taken meanwhile is not what
			 * gets read or written. */
			if (!cr_budget_zombie(run, (pid_t)atoi(num)))
				return 0;
		}
		/* Not the host's sockets: /proc/<pid>/net lists every
		 * connection of the machine, a map of local services. */
		if (!strncmp(sub, "/task/", 6))
			sub += 6 + strspn(sub + 6, "0123456789");
		if (!strncmp(sub, "/net", 4) && (sub[4] == '/' || !sub[4]))
			return 0;
		return proc_pid_entry_writable(sub) ?
			CR_FS_R | CR_FS_W | CR_FS_STAT : CR_FS_R | CR_FS_STAT;
	}
	for (size_t i = 0; i < CR_ARRAY_SIZE(globals); i++)
		if (strlen(globals[i]) == len - 6 && !memcmp(globals[i], rel, len - 6))
			return CR_FS_R | CR_FS_STAT;
	/* ancestors of the allowed entries can be traversed */
	for (size_t i = 0; i < CR_ARRAY_SIZE(globals); i++)
		if (strlen(globals[i]) > len - 6 &&
		    !memcmp(globals[i], rel, len - 6) &&
		    globals[i][len - 6] == '/')
			return CR_FS_STAT;
	return 0;
}

/* /dev/pts/<n> and /dev/tty: the run's own terminals only (fs/pty.c). */
static unsigned pty_access(struct cr_run *run, pid_t tid, const char *rel,
			   size_t n)
{
	/* Read and stat only: opening for writing is granted by the open
	 * handler, which opens through the master (exact); a chmod, utimes
	 * or xattr by path could reach a number reused meanwhile. */
	const unsigned rw = CR_FS_R | CR_FS_STAT;

	if ((n == 4 && !memcmp(rel, "ptmx", 4)) ||
	    (n == 8 && !memcmp(rel, "pts/ptmx", 8)))
		return rw;	/* a new pty, opened by the supervisor */
	if (n == 3 && !memcmp(rel, "pts", 3))
		return CR_FS_R | CR_FS_STAT;	/* listed with the run's only */
	/* The node is seen (stat, access) as natively; what opening it
	 * gives is the open handler's (the caller's terminal or ENXIO). */
	if (n == 3 && !memcmp(rel, "tty", 3))
		return cr_fs_pty_ctty(run, tid) >= 0 ? rw : CR_FS_STAT;
	if (n > 4 && n < 14 && !memcmp(rel, "pts/", 4) &&
	    strspn(rel + 4, "0123456789") == n - 4) {
		int m = cr_fs_pty_master(run, (unsigned)strtoul(rel + 4, NULL, 10));

		if (m < 0)
			return 0;
		close(m);
		return rw;
	}
	return 0;
}

/* Are the n bytes at p (names joined by single '/') at most CR_SHM_DEPTH
 * names, each a name? */
static bool shm_names_fit(const char *p, size_t n)
{
	size_t depth = 1, seg = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '/') {
			if (++seg > NAME_MAX)
				return false;
			continue;
		}
		if (!seg || ++depth > CR_SHM_DEPTH)
			return false;
		seg = 0;
	}
	return seg > 0;
}

static bool shm_root_at(const struct cr_fsstate *fs, const char *path,
			size_t len);

/* /dev: the harmless devices, the fd links, the run's ptys and /dev/shm. */
static unsigned dev_access(struct cr_run *run, pid_t tid, const char *p,
			   size_t len)
{
	static const char *const rw[] = { "null", "zero", "full", "random",
					  "urandom" };
	static const char *const links[] = { "fd", "stdin", "stdout", "stderr" };
	const char *rel = p + 5;
	size_t n = len - 5;

	if (len == 4)
		return CR_FS_STAT;
	for (size_t i = 0; i < CR_ARRAY_SIZE(rw); i++)
		if (strlen(rw[i]) == n && !memcmp(rw[i], rel, n))
			return CR_FS_R | CR_FS_W | CR_FS_STAT;
	for (size_t i = 0; i < CR_ARRAY_SIZE(links); i++)
		if (strlen(links[i]) == n && !memcmp(links[i], rel, n))
			return CR_FS_STAT;
	if (n >= 3 && (!memcmp(rel, "pt", 2) || !memcmp(rel, "tty", 3))) {
		unsigned a = pty_access(run, tid, rel, n);

		if (a)
			return a;
	}
	if (n == 3 && !memcmp(rel, "shm", 3))
		return CR_FS_STAT | CR_FS_W;	/* entries: see below */
	if (n > 4 && !memcmp(rel, "shm/", 4)) {
		const struct cr_fsstate *fs = run->fs;
		const char *nm = rel + 4;
		size_t nl = n - 4, pl = fs->shm_pplen - 9;

		/* The kernel's name of the run's private directory, and of
		 * each object in it: an fd's path (fchmod, a listing). */
		if (fs->shm_priv >= 0 && nl >= pl &&
		    !memcmp(nm, fs->shm_pname, pl) &&
		    (nl == pl || (nm[pl] == '/' &&
				  shm_names_fit(nm + pl + 1, nl - pl - 1))))
			return CR_FS_R | CR_FS_W | CR_FS_STAT;
		/* /dev/shm/NAME as the program names it: NAME in the run's
		 * private directory (the walk translates, fs/shm.c), so
		 * whatever is there is the run's own, down to CR_SHM_DEPTH
		 * (mktemp -d -p /dev/shm, a build's scratch tree); nothing
		 * deeper. Unless NAME is, holds or lies in a root the caller
		 * named there (a link on a root's way counts): the walk did
		 * not translate it (step()), this is the host's /dev/shm,
		 * and only the roots grant anything in it (a read root there
		 * was written, its siblings read and removed, and a deny
		 * entry in it read, found by a probing session). */
		{
			size_t first = strcspn(nm, "/");

			if (first > nl)
				first = nl;
			if (shm_root_at(fs, p, 9 + first))
				return 0;
		}
		if (!shm_names_fit(nm, nl))
			return 0;
		return CR_FS_R | CR_FS_W | CR_FS_STAT;
	}
	return 0;
}

/* The huge page size and mode, which Go's runtime (every process, at
 * start), jemalloc and the JVM read; without them Go believes there are
 * no huge pages (a side-by-side run of Go's suite: 57 denials for one
 * build of hello world). */
static unsigned sys_thp_access(const char *p, size_t len)
{
	static const char dir[] = "/sys/kernel/mm/transparent_hugepage";
	const size_t dl = sizeof(dir) - 1;

	if ((len == 11 && !memcmp(p, "/sys/kernel", 11)) ||
	    (len == 14 && !memcmp(p, "/sys/kernel/mm", 14)) ||
	    (len == dl && !memcmp(p, dir, dl)))
		return CR_FS_STAT;
	if (len <= dl + 1 || memcmp(p, dir, dl) || p[dl] != '/')
		return 0;
	if ((len - dl - 1 == 14 && !memcmp(p + dl + 1, "hpage_pmd_size", 14)) ||
	    (len - dl - 1 == 7 && !memcmp(p + dl + 1, "enabled", 7)))
		return CR_FS_R | CR_FS_STAT;
	return 0;
}

/* /sys: the CPU and memory-node layout libc (get_nprocs), nproc, ps and
 * top read, and the huge page size; nothing else of /sys beyond what the
 * policy grants. */
static unsigned sys_access(const char *p, size_t len)
{
	static const char *const files[] = {
		"cpu/possible", "cpu/online", "cpu/present", "cpu/kernel_max",
		"node/possible", "node/online", "node/has_cpu",
		"node/has_memory", "node/has_normal_memory",
	};
	const char *rel;
	unsigned thp;
	size_t n;

	if ((thp = sys_thp_access(p, len)))
		return thp;
	if (len == 4 || (len == 12 && !memcmp(p, "/sys/devices", 12)) ||
	    (len == 19 && !memcmp(p, "/sys/devices/system", 19)) ||
	    (len == 23 && !memcmp(p, "/sys/devices/system/cpu", 23)))
		return CR_FS_STAT;
	if (len < 20 || memcmp(p, "/sys/devices/system/", 20))
		return 0;
	rel = p + 20;
	n = len - 20;
	if (n == 4 && !memcmp(rel, "node", 4))
		return CR_FS_R | CR_FS_STAT;	/* node0, node1...: listed */
	for (size_t i = 0; i < CR_ARRAY_SIZE(files); i++)
		if (strlen(files[i]) == n && !memcmp(files[i], rel, n))
			return CR_FS_R | CR_FS_STAT;
	/* node<N>, and its meminfo (like /proc/meminfo) and cpumap */
	if (n > 9 && !memcmp(rel, "node/node", 9)) {
		const char *q = rel + 9, *end = rel + n;
		size_t d = 0;

		while (q + d < end && q[d] >= '0' && q[d] <= '9')
			d++;
		if (!d || d > 4)
			return 0;
		q += d;
		if (q == end)
			return CR_FS_STAT;
		if ((size_t)(end - q) == 8 && !memcmp(q, "/meminfo", 8))
			return CR_FS_R | CR_FS_STAT;
		if ((size_t)(end - q) == 7 && !memcmp(q, "/cpumap", 7))
			return CR_FS_R | CR_FS_STAT;
	}
	return 0;
}

/* A deny entry naming /proc/self or /proc/thread-self (its text kept:
 * resolved at set-up it names corral's own entry) covers the walk's
 * /proc/TGID and /proc/TGID/task/TID paths of every process of the run:
 * the walk never produces "self" (a policy's deny of /proc/self/environ
 * was read, found by a probing session). */
static bool proc_self_denied(const struct cr_fsrules *r, const char *p,
			     size_t len)
{
	char alt[PATH_MAX];
	size_t d = 6, rest;

	if (!r->ndeny || len < 7 || memcmp(p, "/proc/", 6))
		return false;
	while (d < len && p[d] >= '0' && p[d] <= '9')
		d++;
	if (d == 6 || (d < len && p[d] != '/'))
		return false;
	rest = len - d;		/* "" or "/..." */
	if (11 + rest < sizeof(alt)) {
		memcpy(alt, "/proc/self", 10);
		memcpy(alt + 10, p + d, rest);
		if (cr_fsrules_denied(r, alt, 10 + rest))
			return true;
	}
	/* /proc/TGID/task/TID/...: the thread's, as thread-self names it,
	 * and the same entries self names. */
	if (rest > 6 && !memcmp(p + d, "/task/", 6)) {
		size_t t = d + 6, q;

		while (t < len && p[t] >= '0' && p[t] <= '9')
			t++;
		if (t == d + 6 || (t < len && p[t] != '/'))
			return false;
		q = len - t;
		if (18 + q < sizeof(alt)) {
			memcpy(alt, "/proc/thread-self", 17);
			memcpy(alt + 17, p + t, q);
			if (cr_fsrules_denied(r, alt, 17 + q))
				return true;
			memcpy(alt, "/proc/self", 10);
			memcpy(alt + 10, p + t, q);
			if (cr_fsrules_denied(r, alt, 10 + q))
				return true;
		}
	}
	return false;
}

unsigned cr_fs_access(struct cr_run *run, pid_t tid, const char *path,
		      size_t len)
{
	unsigned acc;

	/* A deny entry is nothing, even where corral grants by itself
	 * (/dev's devices, /sys's layout, /dev/shm's names, /proc): a
	 * policy's deny of /dev/urandom or of a directory under /dev/shm
	 * was read and written (found by a probing session). */
	if (cr_fsrules_denied(&run->fs->rules, path, len) ||
	    proc_self_denied(&run->fs->rules, path, len))
		return 0;
	/* /proc answers for itself: no root can widen it (a broad --ro /
	 * must not expose other processes). Checked first, before the
	 * rules' scan, on every step of every walk. */
	if (cr_path_within("/proc", 5, path, len))
		return proc_access(run, path, len);
	/* So do the terminals: a broad root must not reach the user's. */
	if (cr_path_within("/dev/pts", 8, path, len) ||
	    (len == 8 && !memcmp(path, "/dev/tty", 8)) ||
	    (len == 9 && !memcmp(path, "/dev/ptmx", 9)))
		return pty_access(run, tid, path + 5, len - 5);
	acc = cr_fsrules_access(&run->fs->rules, path, len);
	if (cr_path_within("/dev", 4, path, len))
		acc |= dev_access(run, tid, path, len);
	else if (cr_path_within("/sys", 4, path, len))
		acc |= sys_access(path, len);
	return acc;
}

/*
 * The rules of /proc and /dev/pts go by the place (the caller's /proc/self,
 * the run's tasks and ptys), so they hold only where those filesystems are
 * met at that place. A proc or devpts mount anywhere else inside a root (a
 * chroot tree, a bind mount) would be judged as plain files of the root:
 * an earlier build read another process's stack through a second proc
 * mount under --ro DIR. So the filesystem of every object found is looked
 * at (learned once per device: fstatfs on an O_PATH fd), and a proc or
 * devpts object outside /proc or /dev/pts is refused, and so is an object
 * of /dev/shm's filesystem outside /dev/shm. Device nodes outside /dev
 * are held to /dev's list of harmless devices by number. When the
 * filesystem cannot be learned: refused (fail closed).
 */
enum { FS_PLAIN, FS_PROC, FS_DEVPTS, FS_UNKNOWN };

static int fs_kind(struct cr_fsstate *fs, dev_t dev, int dirfd,
		   const char *name)
{
	struct statfs sf;
	int fd, kind;

	for (size_t i = 0; i < fs->ndevkind; i++)
		if (fs->devkind[i].dev == dev)
			return fs->devkind[i].kind;
	if (dev == fs->proc_dev) {
		kind = FS_PROC;
	} else {
		fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return FS_UNKNOWN;
		if (fstatfs(fd, &sf) < 0) {
			close(fd);
			return FS_UNKNOWN;
		}
		close(fd);
		kind = sf.f_type == PROC_SUPER_MAGIC ? FS_PROC :
		       sf.f_type == DEVPTS_SUPER_MAGIC ? FS_DEVPTS : FS_PLAIN;
	}
	if (fs->ndevkind < CR_ARRAY_SIZE(fs->devkind)) {
		fs->devkind[fs->ndevkind].dev = dev;
		fs->devkind[fs->ndevkind++].kind = kind;
	}
	return kind;
}

static bool harmless_device(dev_t rdev)
{
	/* null, zero, full, random, urandom: mem major 1 */
	unsigned mi = minor(rdev);

	return major(rdev) == 1 && (mi == 3 || mi == 5 || mi == 7 || mi == 8 ||
				    mi == 9);
}

/* Is the object at path (found as name in dirfd, with st) out of its
 * place? */
static bool misplaced(struct cr_fsstate *fs, const char *path, size_t len,
		      const struct stat *st, int dirfd, const char *name)
{
	int kind;

	if ((S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) &&
	    !cr_path_within("/dev", 4, path, len) &&
	    !(S_ISCHR(st->st_mode) && harmless_device(st->st_rdev)))
		return true;
	/* The rule of /dev/shm (the run's own objects only) goes by the
	 * place too: its objects through a bind mount of /dev elsewhere. */
	if (fs->shm_dev && st->st_dev == fs->shm_dev &&
	    !cr_path_within("/dev/shm", 8, path, len) &&
	    !(fs->shm_real && cr_path_within(fs->shm_real, strlen(fs->shm_real),
					     path, len)))
		return true;
	kind = fs_kind(fs, st->st_dev, dirfd, name);
	if (kind == FS_PROC)
		return !cr_path_within("/proc", 5, path, len);
	if (kind == FS_DEVPTS)
		return !cr_path_within("/dev/pts", 8, path, len);
	return kind != FS_PLAIN;
}

static int refuse(struct walk *w, struct cr_fsres *res, const char *path,
		  size_t len, const char *layer)
{
	memcpy(res->path, path, len);
	res->path[len] = 0;
	res->plen = len;
	res->refused = true;
	res->layer = layer;
	/* Outside every root is absent: another process's /proc entry and
	 * another terminal too (the rules give them no access). */
	return -cr_fsrules_refusal(&w->run->fs->rules, 0);
}

/* Put text in front of what remains to walk. */
static int splice_in(struct walk *w, const char *text, size_t tlen)
{
	size_t rlen = strlen(w->rest + w->roff);

	if (tlen + 1 + rlen + 1 > sizeof(w->rest))
		return -ENAMETOOLONG;
	memmove(w->rest + tlen + 1, w->rest + w->roff, rlen + 1);
	memcpy(w->rest, text, tlen);
	w->rest[tlen] = rlen ? '/' : 0;
	w->roff = 0;
	return 0;
}

/* The walk's current directory becomes fd (owned or not). */
static void walk_set(struct walk *w, int fd, bool borrowed)
{
	if (w->fd >= 0 && !w->borrowed)
		close(w->fd);
	w->fd = fd;
	w->borrowed = borrowed;
}

/* To "/": the fs area's fd is lent to the walk, not duplicated (two
 * system calls fewer for every absolute path the fast path does not
 * take: each exec, each library ld.so opens by its /lib name). */
static int go_root(struct walk *w)
{
	walk_set(w, w->run->fs->root_fd, true);
	strcpy(w->cur, "/");
	w->clen = 1;
	return 0;
}

static size_t join(char *out, const char *dir, size_t dlen, const char *name,
		   size_t nlen)
{
	size_t o = dlen;

	memcpy(out, dir, dlen);
	if (dlen != 1)
		out[o++] = '/';
	memcpy(out + o, name, nlen);
	out[o + nlen] = 0;
	return o + nlen;
}

static int name_held(struct walk *w);

/* Is the directory w holds the run's private /dev/shm directory itself? */
static bool at_private_shm(const struct walk *w)
{
	struct stat a, b;

	return w->run->fs->shm_priv >= 0 && fstat(w->fd, &a) == 0 &&
	       fstat(w->run->fs->shm_priv, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
static bool shm_root_at(const struct cr_fsstate *fs, const char *path,
			size_t len);

/* Is path (the kernel's name of a directory held) in the host's /dev/shm,
 * neither the run's private directory nor a root the caller named there?
 * The run's /dev/shm names are its private directory's: a directory of
 * the host's there is never the run's, and what is in it looks absent. */
static bool host_shm(const struct cr_fsstate *fs, const char *path,
		     size_t len)
{
	const char *nm = path + 9;
	size_t pl = fs->shm_pplen > 9 ? fs->shm_pplen - 9 : 0;

	if (len <= 9 || memcmp(path, "/dev/shm/", 9) ||
	    shm_root_at(fs, path, len))
		return false;
	return !(fs->shm_priv >= 0 && pl && len - 9 >= pl &&
		 !memcmp(nm, fs->shm_pname, pl) &&
		 (len - 9 == pl || nm[pl] == '/'));
}

/* Open the starting directory: "/" or the task's cwd or dirfd. */
static int start(struct walk *w, int dirfd, bool absolute)
{
	char link[64];

	if (absolute)
		return go_root(w);
	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof(link), "%d/cwd", w->tid);
	else if (dirfd < 0)
		return -EBADF;
	else
		snprintf(link, sizeof(link), "%d/fd/%d", w->tid, dirfd);
	/* The task's own cwd or fd, named by its tid: never "self". Opened
	 * first, then named by our own fd: another thread of the task can
	 * dup2 over the fd or fchdir (neither is notified) at any moment, so
	 * the text judged must be read from the directory we hold, not from
	 * the task's link a second time. */
	w->fd = openat(w->run->fs->proc_fd, link,
		       O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->fd < 0) {
		if (errno == ENOENT)
			return -EBADF;
		/* ENOTDIR: a file, a pipe, a socket, an anonymous inode. */
		return -errno;
	}
	return name_held(w);
}

/* Name the directory w->fd holds from its own fd. A removed directory
 * (a cwd or dirfd whose directory was rmdir'ed) is named by its last
 * path and marked: the kernel still answers "." (the directory, no
 * links) and ".." (the parent it was removed from) from it, and ENOENT
 * for any name in it. */
static int name_held(struct walk *w)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "self/fd/%d", w->fd);
	n = readlinkat(w->run->fs->proc_fd, link, w->cur, sizeof(w->cur) - 1);
	if (n < 0)
		return -errno;
	w->cur[n] = 0;
	if (w->cur[0] != '/')
		return -ENOTDIR;
	if (host_shm(w->run->fs, w->cur, (size_t)n))
		return -ENOENT;
	w->removed = false;
	if (n > 10 && !strcmp(w->cur + n - 10, " (deleted)")) {
		struct stat st;

		/* Removed, or only named so ("q (deleted)" is a name a
		 * directory may have): a removed directory has no link. */
		if (fstat(w->fd, &st) < 0)
			return -errno;
		if (st.st_nlink == 0) {
			n -= 10;
			w->cur[n] = 0;
			w->removed = true;
		}
	}
	w->clen = (size_t)n;
	/* The run's private /dev/shm directory is /dev/shm to the program. */
	cr_fs_shm_canon(w->run->fs, w->cur, &w->clen);
	return 0;
}

static int finish_here(struct walk *w, struct cr_fsres *res,
		       unsigned char last)
{
	if (fstat(w->fd, &res->st) < 0)
		return -errno;
	res->last = last;
	res->exists = true;
	res->dirfd = w->fd;
	res->dirfd_borrowed = w->borrowed;
	w->fd = -1;
	strcpy(res->name, ".");
	memcpy(res->path, w->cur, w->clen + 1);
	res->plen = w->clen;
	res->acc = cr_fs_access(w->run, w->tid, w->cur, w->clen);
	return 0;
}

static bool proc_pid_dir(const char *p, size_t len)
{
	const char *s;

	if (len <= 6 || memcmp(p, "/proc/", 6))
		return false;
	s = p + 6;
	return *s >= '0' && *s <= '9';
}

/* The result of a /proc fd link followed once to o, corral's own fd of
 * the object (owned by res from here): the handlers act through
 * /proc/self/fd/<o>, never through the program's link again. path (plen
 * bytes) is where the object is judged; acc is the caller's. */
static void link_result(struct walk *w, struct cr_fsres *res, int o,
			const struct stat *st, const char *path, size_t plen)
{
	res->linkfd = o;
	res->via_link = true;
	res->exists = true;
	res->st = *st;
	res->dirfd = w->run->fs->proc_fd;
	res->dirfd_borrowed = true;
	snprintf(res->name, sizeof(res->name), "self/fd/%d", o);
	memcpy(res->path, path, plen);
	res->path[plen] = 0;
	res->plen = plen;
}

/*
 * /proc/<pid>/fd/N naming a pipe of the run: reopened as the kernel would.
 * The program can dup2 another fd over N at any moment (dup2 is not
 * notified), so the link is followed once, to an O_PATH fd of ours, and
 * what that fd is gets checked: an anonymous pipe (pipefs), nothing else.
 * The handlers then act through /proc/self/fd/<ours>, which only corral
 * changes: never through the program's link again.
 */
static int pipe_link(struct walk *w, const char *nm, const char *cand,
		     size_t plen, const struct stat *lst, struct cr_fsres *res)
{
	struct statfs sf;
	struct stat st;
	int o;

	o = openat(w->fd, nm, O_PATH | O_CLOEXEC);
	if (o < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	if (fstat(o, &st) < 0 || !S_ISFIFO(st.st_mode) ||
	    fstatfs(o, &sf) < 0 || sf.f_type != PIPEFS_MAGIC) {
		close(o);
		return refuse(w, res, cand, plen, "proc");
	}
	/* "fd/N/" asks for a directory, which a pipe is not. */
	if (res->trailing_slash) {
		close(o);
		return -ENOTDIR;
	}
	/* The link's own lstat, as before: a pipe's open never waits for a
	 * partner (pipefs), so it must not take the FIFO worker's road. */
	link_result(w, res, o, lst, cand, plen);
	res->acc = cr_fs_access(w->run, w->tid, cand, plen);
	/* The caller's own stdin pipe is the caller's data: read, never
	 * written into (a run reopened it O_WRONLY and put lines into the
	 * caller's `producer | while read` loop). */
	if (st.st_ino == w->run->fs->stdin_pipe_ino &&
	    st.st_dev == w->run->fs->stdin_pipe_dev && st.st_ino)
		res->acc &= ~CR_FS_W;
	/* corral's own capture pipes (the program holds their write ends)
	 * are written, never read back: what the program read back never
	 * reached the result, and output_bytes counted 26-44 MB of 100 MB
	 * written (found by a probing session). */
	if (cr_stream_is(&w->run->out, &st) || cr_stream_is(&w->run->err, &st))
		res->acc &= ~CR_FS_R;
	return 0;
}

/* The task whose fd table a walk at "/proc/<pid>/fd" or
 * "/proc/<pid>/task/<tid>/fd" looks at, or 0. */
static pid_t fd_dir_tid(const char *p, size_t len)
{
	const char *s = p + len - 3, *b = s;

	while (b > p && b[-1] >= '0' && b[-1] <= '9')
		b--;
	return b < s && b[-1] == '/' ? (pid_t)atoi(b) : 0;
}

/* The object behind a stand-in's link (o: corral's O_PATH fd of it,
 * owned): a socket, or a file its owner could not read, is found where
 * its name now is and judged there, as an fd of it would be, never run
 * (the kernel would run the stand-in); a link's stand-in stays refused. */
static int standin_link(struct walk *w, int o, const char *cand, size_t plen,
			struct cr_fsres *res)
{
	char own[32], at[PATH_MAX];
	struct stat st;
	bool gone;
	ssize_t n;

	snprintf(own, sizeof(own), "self/fd/%d", o);
	n = readlinkat(w->run->fs->proc_fd, own, at, sizeof(at) - 1);
	gone = n > 10 && !memcmp(at + n - 10, " (deleted)", 10);
	/* An object whose name was removed is judged where it was, as a
	 * removed file's link is (deleted_link): only with no name left
	 * anywhere else, which another root's rules might cover. */
	if (fstat(o, &st) < 0 || S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode) ||
	    n <= 0 || at[0] != '/' || (gone && st.st_nlink)) {
		close(o);
		return refuse(w, res, cand, plen, "proc");
	}
	if (gone)
		n -= 10;
	at[n] = 0;
	if (res->trailing_slash) {
		close(o);
		return -ENOTDIR;
	}
	link_result(w, res, o, &st, at, (size_t)n);
	res->acc = cr_fs_access(w->run, w->tid, at, (size_t)n) & ~CR_FS_X;
	return 0;
}

/*
 * /proc/<pid>/cwd of a working directory that was removed (its link's text
 * ends in " (deleted)"): stat, an open and access of it answered ENOENT,
 * natively the directory (found by a differential probe). As a removed
 * directory's fd link (deleted_link below), the object is taken once,
 * through the task's own link (corral's O_PATH open follows it), and is
 * judged at the place it was removed from; only a directory with no name
 * left, which a removed directory always is.
 */
static int cwd_link(struct walk *w, const char *nm, const char *cand,
		    size_t plen, struct cr_fsres *res)
{
	char own[32], was[PATH_MAX];
	struct stat st;
	ssize_t wl;
	int c;

	c = openat(w->fd, nm, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c < 0)
		return refuse(w, res, cand, plen, "proc");
	snprintf(own, sizeof(own), "self/fd/%d", c);
	wl = readlinkat(w->run->fs->proc_fd, own, was, sizeof(was) - 1);
	if (wl <= 10 || was[0] != '/' || fstat(c, &st) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_nlink ||
	    memcmp(was + wl - 10, " (deleted)", 10)) {
		close(c);
		return refuse(w, res, cand, plen, "proc");
	}
	wl -= 10;
	was[wl] = 0;
	link_result(w, res, c, &st, cand, plen);
	res->acc = cr_fs_access(w->run, w->tid, was, (size_t)wl);
	return 0;
}

/*
 * /proc/<pid>/fd/N naming a file or directory that has lost its last name
 * (its link's text ends in " (deleted)"). bash hands a here-document of
 * more than 64 KiB to its command as such a file on stdin, and `cat
 * /dev/stdin` reopens it: refused as absent before (found by a
 * differential probing session). No path rules it now: what the program
 * may do through the link is what rules the place it was removed from
 * (as fchmod on the fd judges it, handlers/attr.c), and what the fd
 * itself already allows (its access mode: a reopen for no more than the
 * fd can do gives nothing new). The object is the fd's own open file,
 * taken once from the task (pidfd_getfd), never the link again: dup2 over
 * N meanwhile changes nothing here. A memfd, a file with a name left
 * elsewhere (another hard link) and anything but a file or a directory
 * stay refused.
 */
static int deleted_link(struct walk *w, const char *nm, const char *cand,
			size_t plen, struct cr_fsres *res)
{
	pid_t tid = fd_dir_tid(w->cur, w->clen);
	char was[PATH_MAX], own[32];
	struct stat st;
	unsigned acc = CR_FS_STAT, place;
	ssize_t wl;
	int c, fl;

	if (!tid || !is_num(nm, strlen(nm)))
		return refuse(w, res, cand, plen, "proc");
	c = cr_tasks_getfd(w->run, tid, atoi(nm));
	if (c == -EBADF)
		return -ENOENT;		/* closed since the link was read */
	/* The stand-in corral gave for an O_PATH fd of a socket or of a
	 * file its owner could not read (its link names the stand-in's
	 * memfd): that object, as the kernel's link of the fd leads there
	 * (glibc's lchmod before 2.39 chmods it so). */
	c = cr_fs_linkfd_swap(w->run->fs, c);
	if (c >= 0 && (fl = fcntl(c, F_GETFL)) >= 0 && (fl & O_PATH))
		return standin_link(w, c, cand, plen, res);
	if (c < 0)
		return refuse(w, res, cand, plen, "proc");
	/* The place it was removed from, read again from the copy: the
	 * program may have put another fd at N since its link was read. */
	snprintf(own, sizeof(own), "self/fd/%d", c);
	wl = readlinkat(w->run->fs->proc_fd, own, was, sizeof(was) - 1);
	fl = fcntl(c, F_GETFL);
	if (wl <= 10 || was[0] != '/' || fl < 0 || fstat(c, &st) < 0 ||
	    st.st_nlink || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) ||
	    memcmp(was + wl - 10, " (deleted)", 10) ||
	    !strncmp(was, "/memfd:", 7)) {
		close(c);
		return refuse(w, res, cand, plen, "proc");
	}
	wl -= 10;
	was[wl] = 0;
	if (res->trailing_slash && !S_ISDIR(st.st_mode)) {
		close(c);
		return -ENOTDIR;
	}
	if (!(fl & O_PATH) && (fl & O_ACCMODE) != O_WRONLY)
		acc |= CR_FS_R;
	if (!(fl & O_PATH) && (fl & O_ACCMODE) != O_RDONLY)
		acc |= CR_FS_W;
	place = cr_fs_access(w->run, w->tid, was, (size_t)wl);
	/* Writable by the fd's mode alone: its data (an open for writing,
	 * a truncate), never its mode, owner, times or attributes, which
	 * the place rules as for fchmod on that very fd (a removed host
	 * file on stdin, opened read-write, was chmod-ed and given an
	 * xattr through its link; found by a probing session). */
	res->w_by_fd = (acc & CR_FS_W) && !(place & CR_FS_W);
	acc |= place & (CR_FS_R | CR_FS_W);
	link_result(w, res, c, &st, cand, plen);
	res->acc = acc;
	return 0;
}

/*
 * /proc/<pid>/fd/N of a file outside every root that the task holds open
 * for reading: a caller's `cmd < file` on stdin, reopened as /dev/stdin
 * (cat, head and awk failed ENOENT; found by a differential probing
 * session). The fd already reads the whole file, so a reopen for reading
 * gives nothing more: it is the object the task's fd holds now (a copy of
 * it, never the link's text, which may name another file by now), read
 * and stat-ed only, never written, re-moded or run. 1: not such a link,
 * walked as before. Not last: ENOTDIR below a file.
 */
static int held_link(struct walk *w, const char *nm, const char *cand,
		     size_t plen, bool last, struct cr_fsres *res)
{
	pid_t tid = fd_dir_tid(w->cur, w->clen);
	struct stat st;
	int c, fl;

	if (!tid || !is_num(nm, strlen(nm)))
		return 1;
	c = cr_tasks_getfd(w->run, tid, atoi(nm));
	if (c < 0)
		return 1;
	/* A name below it ("fd/0/x", "fd/0/.."): a file is no directory,
	 * as the kernel's walk says (ENOENT and a denial before; found by
	 * a probing session). Anything else is walked as before. */
	if (!last) {
		bool file = fstat(c, &st) == 0 && !S_ISDIR(st.st_mode);

		close(c);
		return file ? -ENOTDIR : 1;
	}
	fl = fcntl(c, F_GETFL);
	if (fl < 0 || (fl & O_PATH) ||
	    ((fl & O_ACCMODE) != O_RDONLY && (fl & O_ACCMODE) != O_RDWR) ||
	    fstat(c, &st) < 0 || !S_ISREG(st.st_mode) || !st.st_nlink) {
		close(c);
		return 1;
	}
	if (res->trailing_slash) {
		close(c);
		return -ENOTDIR;
	}
	link_result(w, res, c, &st, cand, plen);
	res->acc = CR_FS_R | CR_FS_STAT;
	return 0;
}

/* Is path (a name directly in /dev/shm) a root the caller named there, or
 * on the way to one? */
static bool shm_root_at(const struct cr_fsstate *fs, const char *path,
			size_t len)
{
	for (size_t i = 0; i < fs->rules.nroots; i++) {
		const struct cr_fsroot *r = &fs->rules.roots[i];

		if (r->len > 9 && !memcmp(r->path, "/dev/shm/", 9) &&
		    (cr_path_within(r->path, r->len, path, len) ||
		     cr_path_within(path, len, r->path, r->len)))
			return true;
	}
	return false;
}

size_t cr_fs_shm_depth(const struct cr_fsstate *fs, const char *path,
		       size_t len)
{
	size_t depth = 1;

	if (len <= 9 || memcmp(path, "/dev/shm/", 9) ||
	    shm_root_at(fs, path, len))
		return 0;
	for (size_t i = 9; i < len; i++)
		if (path[i] == '/' && i + 1 < len)
			depth++;
	return depth;
}

/*
 * /proc/<pid> of a zombie of the run (proc_access admitted it by number):
 * its directory is opened, and only then asked about again. While the
 * zombie's pidfd still answers, the number is still the zombie's, so the
 * directory opened before is too; and a /proc/<pid> directory is bound to
 * its process, not its number: what is read through it later is the
 * zombie's or nothing. Collected meanwhile: absent, as the kernel says.
 */
static int zombie_dir(struct walk *w, const char *nm, const char *cand,
		      size_t plen, bool last, struct cr_fsres *res)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_BENEATH,
	};
	int fd = (int)syscall(SYS_openat2, w->fd, nm, &how, sizeof(how));

	if (fd < 0)
		return -errno;
	if (!cr_budget_zombie(w->run, (pid_t)atoi(nm))) {
		close(fd);
		return -ENOENT;
	}
	walk_set(w, fd, false);
	memcpy(w->cur, cand, plen + 1);
	w->clen = plen;
	return last ? finish_here(w, res, CR_LAST_NORM) : 1;
}

static int step(struct walk *w, const char *name, size_t nlen, bool last,
		struct cr_fsres *res)
{
	char cand[PATH_MAX], target[PATH_MAX];
	struct stat st;
	size_t plen;
	unsigned acc;
	ssize_t tl;
	int fd;

	if (w->clen + 1 + nlen >= PATH_MAX || nlen > NAME_MAX)
		return -ENAMETOOLONG;
	/* /proc/self names the caller, not us. */
	if (w->clen == 5 && !strcmp(w->cur, "/proc") &&
	    ((nlen == 4 && !memcmp(name, "self", 4)) ||
	     (nlen == 11 && !memcmp(name, "thread-self", 11)))) {
		pid_t tgid = cr_tasks_tgid(&w->run->tasks, w->tid);
		char sub[64];
		int l;

		if (!tgid)
			return -ESRCH;
		l = nlen == 4 ? snprintf(sub, sizeof(sub), "%d", tgid) :
			snprintf(sub, sizeof(sub), "%d/task/%d", tgid, w->tid);
		if (last && !(w->how & CR_RES_FOLLOW) &&
		    (!res->trailing_slash || (w->how & CR_RES_ENTRY))) {
			/* The link itself (readlink, lstat): its text must be
			 * the caller's, which our own readlink would not be. */
			if (fstatat(w->fd, name, &res->st, AT_SYMLINK_NOFOLLOW) < 0)
				return -errno;
			res->exists = true;
			memcpy(res->link_text, sub, (size_t)l + 1);
			plen = join(cand, w->cur, w->clen, name, nlen);
			acc = CR_FS_R | CR_FS_STAT;
			goto final;
		}
		if (w->how & CR_RES_NO_SYMLINKS)
			return -ELOOP;
		return splice_in(w, sub, (size_t)l) ?: 1;	/* 1: walk on */
	}
	if (w->clen == 8 && !memcmp(w->cur, "/dev/shm", 8) &&
	    shm_root_at(w->run->fs, cand,
			join(cand, w->cur, w->clen, name, nlen)) &&
	    at_private_shm(w))
		/* A root's name looked up from the run's private directory
		 * (reached by "x/.." or an fd of it): the kernel would find
		 * it there, a twin judged as the host's root, untracked and
		 * never removed (found by a probing session). Not there. */
		return -ENOENT;
	if (w->clen == 8 && !memcmp(w->cur, "/dev/shm", 8) &&
	    !shm_root_at(w->run->fs, cand,
			 join(cand, w->cur, w->clen, name, nlen))) {
		/* /dev/shm/NAME is NAME in the run's private directory
		 * (fs/shm.c): the names the user's other programs meet
		 * there are never the run's. That directory's own name,
		 * met in an fd's path, is /dev/shm itself. A root the
		 * caller named under /dev/shm (-w /dev/shm/job) is itself:
		 * translated, the run's files went into the private
		 * directory, out of the walk's and the cleanup's reach. */
		int p = cr_fs_shm_dir(w->run);

		if (p < 0)
			return p;
		/* Held at the host's /dev/shm, the kernel would look NAME
		 * up there, and the private directory's own name from
		 * itself: the same object for both only from the private
		 * directory for NAME, from the host's for its name. */
		if (cr_fs_shm_is_pname(w->run->fs, name, nlen) ==
		    at_private_shm(w))
			w->diverged = true;
		walk_set(w, p, true);
		if (cr_fs_shm_is_pname(w->run->fs, name, nlen))
			return last ? finish_here(w, res, CR_LAST_NORM) : 1;
	}
	plen = join(cand, w->cur, w->clen, name, nlen);
	acc = cr_fs_access(w->run, w->tid, cand, plen);
	/* A process of the run collected by its parent: its number is free
	 * (or still its own), and the kernel answers ENOENT, unrecorded, as
	 * kill() of it answers ESRCH (a lister racing a wait, ps). */
	if (!acc && w->clen == 5 && !strcmp(w->cur, "/proc") &&
	    is_num(name, nlen) && cr_tasks_was_ours(&w->run->tasks,
						    (pid_t)atoi(name)))
		return -ENOENT;
	if (!acc) {
		/* Name the whole path the program was after, not just the
		 * first component outside: that is what a user can act on. */
		char full[PATH_MAX];
		const char *more = w->rest + w->roff;
		size_t flen;

		while (*more == '/')
			more++;
		flen = *more ? join(full, cand, plen, more, strnlen(more, PATH_MAX - plen - 2)) :
			       (size_t)snprintf(full, sizeof(full), "%s", cand);
		if (flen >= PATH_MAX)
			flen = PATH_MAX - 1;
		res->refused_last = last &&
				    !cr_path_within("/proc", 5, cand, plen);
		return refuse(w, res, full, flen,
			      cr_path_within("/proc", 5, cand, plen) ? "proc" : "fs");
	}

	{
		char nm[NAME_MAX + 1];

		memcpy(nm, name, nlen);
		nm[nlen] = 0;
		if (fstatat(w->fd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT && last) {
				res->exists = false;
				goto final;
			}
			return -errno;
		}
		if (misplaced(w->run->fs, cand, plen, &st, w->fd, nm))
			return refuse(w, res, cand, plen, "fs");
		/* A creation ("x/" with O_CREAT: SLASH_OK) is refused by
		 * the kernel before its last name is looked at (EISDIR in
		 * open.c), so a last link is not followed then (a loop
		 * answered ELOOP, found by a differential probe). */
		if (S_ISLNK(st.st_mode) &&
		    !(last && res->trailing_slash &&
		      (w->how & CR_RES_SLASH_OK)) &&
		    (!last || (w->how & CR_RES_FOLLOW) ||
		     (res->trailing_slash && !(w->how & CR_RES_ENTRY)))) {
			bool magic = proc_pid_dir(w->cur, w->clen);

			if (w->how & CR_RES_NO_SYMLINKS)
				return -ELOOP;
			if (magic && (w->how & CR_RES_NO_MAGICLINKS))
				return -ELOOP;
			/* The kernel's scoped lookups jump through no magic
			 * link, wherever it leads (nd_jump_link): EXDEV. */
			if (magic &&
			    (w->how & (CR_RES_BENEATH | CR_RES_IN_ROOT)))
				return -EXDEV;
			if (++w->links > CR_MAX_LINKS)
				return -ELOOP;
			tl = readlinkat(w->fd, nm, target, sizeof(target) - 1);
			if (tl < 0)
				return -errno;
			target[tl] = 0;
			bool gone = tl > 10 &&
				    !strcmp(target + tl - 10, " (deleted)");
			struct stat ost;

			/* ... or a live file's own name ends so: its path. */
			if (gone && magic &&
			    fstatat(w->fd, nm, &ost, 0) == 0 && ost.st_nlink)
				gone = false;

			if (magic && (target[0] != '/' || gone)) {
				bool fdl = w->clen > 3 &&
					   !strcmp(w->cur + w->clen - 3, "/fd");

				/* A link to an object without a path. A pipe
				 * of the run's, and a file or directory that
				 * lost its name, may be reopened through it,
				 * as the kernel would. */
				if (last && fdl && !strncmp(target, "pipe:[", 6))
					return pipe_link(w, nm, cand, plen, &st, res);
				if (last && fdl && gone)
					return deleted_link(w, nm, cand, plen,
							    res);
				if (last && gone && !strcmp(nm, "cwd"))
					return cwd_link(w, nm, cand, plen, res);
				/* A pipe, a socket, an anonymous inode: never
				 * a directory to walk on through; nor a file
				 * without a name (or a stand-in's socket). */
				if (!last && fdl && target[0] != '/')
					return -ENOTDIR;
				if (!last && fdl && gone &&
				    fstatat(w->fd, nm, &ost, 0) == 0 &&
				    !S_ISDIR(ost.st_mode))
					return -ENOTDIR;
				return refuse(w, res, cand, plen, "proc");
			}
			if (magic && target[0] == '/' &&
			    w->clen > 3 &&
			    !strcmp(w->cur + w->clen - 3, "/fd") &&
			    !(cr_fs_access(w->run, w->tid, target, (size_t)tl) &
			      CR_FS_R)) {
				int rc = held_link(w, nm, cand, plen, last, res);

				if (rc <= 0)
					return rc;
			}
			if (target[0] == '/') {
				int rc;

				if (w->how & CR_RES_BENEATH)
					return -EXDEV;
				if (w->how & CR_RES_IN_ROOT)
					return -EXDEV;	/* see docs/policy.md */
				rc = go_root(w);
				if (rc)
					return rc;
			}
			/* A last link whose text ends in '/' asks for a
			 * directory, as a path written so does: ENOTDIR for a
			 * file, EISDIR for a creation (the kernel's; a link
			 * "l -> f/" truncated and re-moded the file f before,
			 * found by a differential probe). */
			if (last && target[tl - 1] == '/')
				res->trailing_slash = true;
			return splice_in(w, target, (size_t)tl) ?: 1;
		}
		/* Listed first: the walk of every /proc/<pid> of the run
		 * (/proc/self/...) must not ask the kernel twice. */
		if (w->clen == 5 && !strcmp(w->cur, "/proc") &&
		    is_num(name, nlen) &&
		    cr_budget_zombie_listed(w->run, (pid_t)atoi(nm)) &&
		    !cr_tasks_ours(&w->run->tasks, (pid_t)atoi(nm)))
			return zombie_dir(w, nm, cand, plen, last, res);
		res->exists = true;
		res->st = st;
		if (last)
			goto final;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		{
			struct open_how how = {
				.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
			};

			fd = (int)syscall(SYS_openat2, w->fd, nm, &how, sizeof(how));
			if (fd < 0)
				return -errno;
		}
		walk_set(w, fd, false);
		memcpy(w->cur, cand, plen + 1);
		w->clen = plen;
		return 1;
	}
final:
	res->dirfd = w->fd;
	res->dirfd_borrowed = w->borrowed;
	w->fd = -1;
	memcpy(res->name, name, nlen);
	res->name[nlen] = 0;
	memcpy(res->path, cand, plen + 1);
	res->plen = plen;
	res->acc = acc;
	return 0;
}

static int dotdot(struct walk *w)
{
	char *slash;
	int fd;

	/* Beneath the starting directory, "/" included (RESOLVE_BENEATH
	 * from "/" refuses its "..": EXDEV; an earlier build clamped it,
	 * found by a differential probing session). */
	if ((w->how & (CR_RES_BENEATH | CR_RES_IN_ROOT)) && w->clen <= w->slen) {
		if (w->how & CR_RES_BENEATH)
			return -EXDEV;
		return 0;			/* IN_ROOT: clamp */
	}
	if (w->clen == 1)
		return 0;			/* ".." of "/" is "/" */
	/* Above /dev/shm is /dev, whichever directory stands for it
	 * (the private one, step); above the private directory the
	 * kernel finds the host's /dev/shm. */
	if (w->clen == 8 && !memcmp(w->cur, "/dev/shm", 8) && at_private_shm(w))
		w->diverged = true;
	fd = openat(w->clen == 8 && !memcmp(w->cur, "/dev/shm", 8) &&
		    w->run->fs->shm_fd >= 0 ? w->run->fs->shm_fd : w->fd, "..",
		    O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	walk_set(w, fd, false);
	/* Above a removed directory is the directory it was removed from,
	 * wherever that is now: named by its own fd, not by the text. */
	if (w->removed)
		return name_held(w);
	slash = strrchr(w->cur, '/');
	if (slash == w->cur)
		w->clen = 1;
	else
		w->clen = (size_t)(slash - w->cur);
	w->cur[w->clen] = 0;
	return 0;
}

/*
 * The fast path: a plain path (no "." or "..", no trailing slash), absolute
 * or relative to the cwd or a dirfd, inside a
 * directory root whose subtree holds no deny entry is resolved by the kernel
 * in one openat2 of its parent, RESOLVE_BENEATH the DEEPEST root containing
 * it: links that stay beneath that root are followed by the kernel (every
 * step is then inside the root, so the rules' answer is the root's), and
 * anything that would leave it (an absolute link, "..") fails with EXDEV and
 * takes the slow walk. A link in the last component also takes the walk.
 * Returns 1 when not applicable.
 */
static int fast(struct cr_run *run, pid_t tid, int dirfd, const char *path,
		unsigned how, struct cr_fsres *res)
{
	struct cr_fsstate *fs = run->fs;
	char abs[PATH_MAX];
	size_t alen, best = 0, blen = 0;
	const char *rel, *slash;
	bool found = false, root_mount = false;
	int pfd;

	/* SLASH_OK rules only a trailing '/', which the fast path never
	 * takes (below): creations come this way too. */
	if (how & ~(CR_RES_FOLLOW | CR_RES_SLASH_OK | CR_RES_ENTRY))
		return 1;
	if (path[0] == '/') {
		alen = strlen(path);
		if (alen >= sizeof(abs))
			return 1;
		memcpy(abs, path, alen + 1);
	} else {
		char link[64];
		ssize_t n;

		/* The cwd's or the dirfd's path, read once: what is opened
		 * below is that text, beneath the root it names, and judged
		 * as such (a directory renamed meanwhile is looked for where
		 * its name now leads, still inside that root). A dirfd that
		 * is not a directory fails in the parent's open (ENOTDIR) as
		 * it would in the kernel; one without a path (a socket, an
		 * anonymous inode, a deleted directory) takes the walk. */
		if (dirfd == AT_FDCWD)
			snprintf(link, sizeof(link), "%d/cwd", tid);
		else if (dirfd >= 0)
			snprintf(link, sizeof(link), "%d/fd/%d", tid, dirfd);
		else
			return 1;
		n = readlinkat(fs->proc_fd, link, abs, sizeof(abs) - 1);
		if (n <= 0 || abs[0] != '/' ||
		    (size_t)n + 1 + strlen(path) >= sizeof(abs))
			return 1;
		abs[n] = 0;
		if (n > 10 && !strcmp(abs + n - 10, " (deleted)"))
			return 1;
		alen = (size_t)n;
		if (alen > 1)
			abs[alen++] = '/';
		strcpy(abs + alen, path);
		alen += strlen(path);
	}
	if (abs[alen - 1] == '/' || strstr(abs, "//") || strstr(abs, "/./") ||
	    strstr(abs, "/../") || (alen >= 2 && !strcmp(abs + alen - 2, "/.")) ||
	    (alen >= 3 && !strcmp(abs + alen - 3, "/..")))
		return 1;
	for (int pass = 0;; pass++) {
		const struct cr_fsalias *al = NULL;

		/* /proc and /dev have rules of their own (the caller's
		 * /proc/self, the run's tasks, the device list): never the
		 * fast path, even under a broad root such as --ro /. */
		if (cr_path_within("/proc", 5, abs, alen) ||
		    cr_path_within("/dev", 4, abs, alen))
			return 1;
		found = false;
		blen = 0;
		for (size_t i = 0; i < fs->rules.nroots; i++) {
			const struct cr_fsroot *r = &fs->rules.roots[i];

			if (r->len > blen && r->len < alen &&
			    cr_path_within(r->path, r->len, abs, alen)) {
				best = i;
				blen = r->len;
				found = true;
			}
		}
		if (!found || fs->root_deny[best])
			return 1;
		if (fs->root_fds[best] >= 0)
			break;
		/* The deepest root is a link the policy names ("/lib/..."
		 * on a merged-/usr host): the kernel would follow it to its
		 * real path, which is a root of its own; so do we, once,
		 * and judge that path, as the walk would. Only links the
		 * program cannot change are kept (fs.c). */
		for (size_t i = 0; !al && pass == 0 && i < fs->nalias; i++)
			if (fs->alias[i].flen == blen &&
			    !memcmp(fs->alias[i].from, abs, blen))
				al = &fs->alias[i];
		if (!al || al->tlen + (alen - blen) >= sizeof(abs))
			return 1;
		memmove(abs + al->tlen, abs + blen, alen - blen + 1);
		memcpy(abs, al->to, al->tlen);
		alen = al->tlen + (alen - blen);
	}
	rel = abs + (blen == 1 ? 1 : blen + 1);
	slash = strrchr(rel, '/');
	if (slash) {
		char parent[PATH_MAX];
		/* No link is followed here: its text would not be where it
		 * leads (with --ro /, "ws/up/proc/PID" through a link
		 * up -> ../.. was judged as a path of "/" and read other
		 * processes' memory). A path through a link takes the
		 * walk, which judges where each link leads. */
		/* Asked first not to cross a mount: a parent on the root's
		 * own mount is where the root's device says (below). */
		struct open_how oh = {
			.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
				   RESOLVE_NO_XDEV,
		};

		memcpy(parent, rel, (size_t)(slash - rel));
		parent[slash - rel] = 0;
		pfd = (int)syscall(SYS_openat2, fs->root_fds[best], parent, &oh,
				   sizeof(oh));
		if (pfd < 0 && errno == EXDEV) {
			oh.resolve &= ~(uint64_t)RESOLVE_NO_XDEV;
			pfd = (int)syscall(SYS_openat2, fs->root_fds[best],
					   parent, &oh, sizeof(oh));
		} else if (pfd >= 0) {
			root_mount = true;
		}
		if (pfd < 0)
			return errno == ENOENT || errno == ENOTDIR ? -errno : 1;
		rel = slash + 1;
	} else {
		/* The object sits in the root itself: the root's fd is
		 * lent, not duplicated (two system calls fewer per call). */
		pfd = fs->root_fds[best];
		res->dirfd_borrowed = true;
		root_mount = true;
	}
	res->dirfd = pfd;
	if (strlen(rel) > NAME_MAX) {
		cr_fsres_free(res);
		return -ENAMETOOLONG;
	}
	if (fstatat(pfd, rel, &res->st, AT_SYMLINK_NOFOLLOW) < 0) {
		struct stat pst;
		size_t dlen = (size_t)(rel - abs) - 1;

		if (errno != ENOENT) {
			int e = errno;

			cr_fsres_free(res);
			return -e;
		}
		res->exists = false;
		/* A name to create: the kernel went through the parents
		 * unseen, so the parent's own place is judged here as the
		 * walk judges each step (a directory of /dev/shm's
		 * filesystem met through a bind mount of /dev elsewhere,
		 * where a creation would land among the host's objects).
		 * A directory met without crossing a mount has the root's
		 * filesystem, which is all misplaced() asks of a directory
		 * (its device's kind): no call to learn it again. */
		if (root_mount && fs->root_dev[best]) {
			memset(&pst, 0, sizeof(pst));
			pst.st_mode = S_IFDIR;
			pst.st_dev = fs->root_dev[best];
		} else if (cr_quiet_fstat(pfd, &pst) < 0) {
			cr_fsres_free(res);
			return 1;
		}
		if (misplaced(fs, abs, dlen ? dlen : 1, &pst, pfd, ".")) {
			cr_fsres_free(res);
			return 1;
		}
	} else {
		res->exists = true;
		if ((S_ISLNK(res->st.st_mode) && (how & CR_RES_FOLLOW)) ||
		    misplaced(fs, abs, alen, &res->st, pfd, rel)) {
			cr_fsres_free(res);
			return 1;
		}
	}
	strcpy(res->name, rel);
	memcpy(res->path, abs, alen + 1);
	res->plen = alen;
	res->acc = cr_fs_access(run, tid, abs, alen);
	return 0;
}

int cr_fs_resolve(struct cr_run *run, pid_t tid, int dirfd, const char *path,
		  unsigned how, struct cr_fsres *res)
{
	struct walk w = { .run = run, .tid = tid, .how = how, .fd = -1 };
	size_t plen = strlen(path), steps = 0;
	unsigned char lt = CR_LAST_ROOT;	/* until a component is met */
	uint64_t t0 = 0;
	int rc;

	cr_fsres_init(res);
	if (!plen && !(how & CR_RES_EMPTY_PATH))
		return -ENOENT;
	if (plen >= PATH_MAX)
		return -ENAMETOOLONG;
	res->trailing_slash = plen > 1 && path[plen - 1] == '/';
	if (path[0] == '/' && (how & CR_RES_BENEATH))
		return -EXDEV;
	if (plen) {
		rc = fast(run, tid, dirfd, path, how, res);
		if (rc <= 0)
			return rc;
		cr_fsres_init(res);
		res->trailing_slash = plen > 1 && path[plen - 1] == '/';
	}
	rc = start(&w, dirfd, path[0] == '/' && !(how & CR_RES_IN_ROOT));
	if (rc)
		goto out;
	w.slen = w.clen;
	if (!cr_fs_access(run, tid, w.cur, w.clen)) {
		/* The starting directory itself is outside (a dirfd on "/home",
		 * stdin redirected from a directory): nothing below it. */
		rc = refuse(&w, res, w.cur, w.clen, "fs");
		goto out;
	}
	memcpy(w.rest, path, plen + 1);
	w.roff = 0;
	for (;;) {
		char *r = w.rest + w.roff, *end;
		size_t n;
		bool last;

		while (*r == '/')
			r++;
		if (!*r) {
			rc = finish_here(&w, res, lt);
			break;
		}
		/* A walk this long is the program's choice: its CPU is
		 * charged to the run, and it ends as a loop of links does. */
		if (++steps == CR_STEPS_CHARGED)
			t0 = cr_thread_cpu_ns();
		if (steps > (run->walk_left ? run->walk_left : CR_MAX_STEPS)) {
			res->walk_capped = true;
			rc = -ELOOP;
			break;
		}
		end = strchr(r, '/');
		n = end ? (size_t)(end - r) : strlen(r);
		w.roff = (size_t)(r - w.rest) + n;
		{
			const char *q = w.rest + w.roff;

			while (*q == '/')
				q++;
			last = !*q;
		}
		lt = CR_LAST_NORM;
		if (n == 1 && r[0] == '.') {
			struct stat dst;

			lt = CR_LAST_DOT;
			/* The kernel looks "." up, which needs search on the
			 * directory ("p/." of a p at 0600: EACCES). Before
			 * any other name the next step's lookup asks the
			 * same; a last "." is asked here. */
			if (last && w.fd >= 0 &&
			    fstatat(w.fd, ".", &dst, AT_SYMLINK_NOFOLLOW) < 0 &&
			    errno == EACCES) {
				rc = -EACCES;
				break;
			}
			continue;
		} else if (n == 2 && r[0] == '.' && r[1] == '.') {
			lt = CR_LAST_DOTDOT;
			rc = dotdot(&w);
			if (!rc && !cr_fs_access(run, tid, w.cur, w.clen))
				rc = refuse(&w, res, w.cur, w.clen, "fs");
			if (rc)
				break;
			continue;
		}
		{
			char name[NAME_MAX + 1];

			if (n > NAME_MAX) {
				rc = -ENAMETOOLONG;
				break;
			}
			memcpy(name, r, n);
			name[n] = 0;
			rc = step(&w, name, n, last, res);
		}
		if (rc < 0 || rc == 0)
			break;
	}
	if (!rc)
		res->diverged = w.diverged;
	if (!rc && res->trailing_slash && res->exists &&
	    !(how & (CR_RES_SLASH_OK | CR_RES_ENTRY)) &&
	    !S_ISDIR(res->st.st_mode) && !res->via_link)
		rc = -ENOTDIR;
out:
	walk_set(&w, -1, false);
	/* What is left for the call's next walks (at least one step: the
	 * allowance stays on until the call ends). */
	if (run->walk_left)
		run->walk_left = steps < run->walk_left ?
				 run->walk_left - steps : 1;
	if (t0)
		cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	if (rc)
		cr_fsres_free(res);
	return rc;
}
