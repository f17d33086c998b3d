/* tracer/landlock/landlock.c: builds the run's Landlock ruleset from its roots
 * (supervisor side) and applies it in the child before exec. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"
#include "../fs/fs.h"
#include "../net/net.h"

/*
 * The kernel interface, declared here rather than taken from
 * <linux/landlock.h>: build hosts carry headers older than the kernels
 * corral runs on (Debian 12's know ABI 2), and the ABI is probed at run
 * time anyway. Values are the kernel's UAPI, which never changes.
 */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION	(1U << 0)
#define LL_RULE_PATH_BENEATH		1
#define LL_RULE_NET_PORT		2

#define LL_FS_EXECUTE		(1ULL << 0)
#define LL_FS_WRITE_FILE	(1ULL << 1)
#define LL_FS_READ_FILE		(1ULL << 2)
#define LL_FS_READ_DIR		(1ULL << 3)
#define LL_FS_REMOVE_DIR	(1ULL << 4)
#define LL_FS_REMOVE_FILE	(1ULL << 5)
#define LL_FS_MAKE_CHAR		(1ULL << 6)
#define LL_FS_MAKE_DIR		(1ULL << 7)
#define LL_FS_MAKE_REG		(1ULL << 8)
#define LL_FS_MAKE_SOCK		(1ULL << 9)
#define LL_FS_MAKE_FIFO		(1ULL << 10)
#define LL_FS_MAKE_BLOCK	(1ULL << 11)
#define LL_FS_MAKE_SYM		(1ULL << 12)
#define LL_FS_REFER		(1ULL << 13)	/* ABI 2 */
#define LL_FS_TRUNCATE		(1ULL << 14)	/* ABI 3 */
#define LL_FS_IOCTL_DEV		(1ULL << 15)	/* ABI 5 */

#define LL_NET_BIND_TCP		(1ULL << 0)	/* ABI 4 */
#define LL_NET_CONNECT_TCP	(1ULL << 1)

#define LL_SCOPE_ABSTRACT_UNIX	(1ULL << 0)	/* ABI 6 */
#define LL_SCOPE_SIGNAL		(1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;	/* ABI 4 */
	uint64_t scoped;		/* ABI 6 */
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port {
	uint64_t allowed_access;
	uint64_t port;
};

/* Rights that mean something on a file (the kernel refuses the others in a
 * rule on a non-directory). */
#define LL_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | \
			LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define LL_READ (LL_FS_READ_FILE | LL_FS_READ_DIR)
/* Making devices needs CAP_MKNOD, which the program never holds: not
 * granted even in the workspace. */
#define LL_WRITE (LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | \
		  LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | \
		  LL_FS_MAKE_FIFO | LL_FS_MAKE_SYM | LL_FS_REFER | \
		  LL_FS_TRUNCATE)

/* What each ABI can handle. */
static uint64_t fs_rights(int abi)
{
	uint64_t r = (LL_FS_MAKE_SYM << 1) - 1;	/* ABI 1: bits 0-12 */

	if (abi >= 2)
		r |= LL_FS_REFER;
	if (abi >= 3)
		r |= LL_FS_TRUNCATE;
	if (abi >= 5)
		r |= LL_FS_IOCTL_DEV;
	return r;
}

int cr_landlock_probe_abi(void)
{
	static int abi = -1;

	if (abi < 0) {
		long v = syscall(__NR_landlock_create_ruleset, NULL, 0,
				 LL_CREATE_RULESET_VERSION);

		abi = v > 0 ? (int)v : 0;
	}
	return abi;
}

static int add_fd(int rs, int fd, bool dir, uint64_t acc, uint64_t handled)
{
	struct ll_path_beneath pb = {
		.allowed_access = (dir ? acc : acc & LL_FILE_RIGHTS) & handled,
		.parent_fd = fd,
	};

	if (pb.allowed_access &&
	    syscall(__NR_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0) < 0)
		return -errno;
	return 0;
}

static int add_path(int rs, const char *path, uint64_t acc, uint64_t handled)
{
	struct stat st;
	int fd, rc;

	/* Followed: a root named through a link ("/bin" -> "/usr/bin") is
	 * the directory it leads to, as the supervisor's walk sees it. */
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return 0;	/* absent roots grant nothing to anyone */
	rc = fstat(fd, &st) < 0 ? -errno :
	     add_fd(rs, fd, S_ISDIR(st.st_mode), acc, handled);
	close(fd);
	return rc;
}

/* A root that is not a directory the fs area holds open: a file, or a
 * link to a directory whose real path is a root of its own (fs.c adds
 * both). Opened without following, so no fstat is needed: on a file the
 * file rights are what the rule needs; on a link the rule attaches to the
 * link and grants nothing (the real path's rule does). Saves a call per
 * root at every start-up. */
static int add_file(int rs, const char *path, uint64_t acc, uint64_t handled)
{
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC), rc;

	if (fd < 0)
		return 0;	/* absent roots grant nothing to anyone */
	rc = add_fd(rs, fd, false, acc, handled);
	close(fd);
	return rc;
}

/* Paths whose access the supervisor decides by itself, whatever the roots
 * say (tracer/fs/resolve.c: cr_fs_access): no Landlock rule may widen them,
 * so a broad root such as --ro / never lets the child reach another
 * process's /proc entry or another user's terminal by itself. */
static bool builtin_only(const char *p, size_t len)
{
	return cr_path_within("/proc", 5, p, len) ||
	       cr_path_within("/dev/pts", 8, p, len) ||
	       (len == 8 && !memcmp(p, "/dev/tty", 8)) ||
	       (len == 9 && !memcmp(p, "/dev/ptmx", 9));
}

/* The supervisor's built-in grants outside the policy that the child may
 * reach by itself on the fast path: the harmless devices, the CPU and
 * memory-node layout of /sys and the huge page size (resolve.c:
 * dev_access, sys_access). */
static int add_builtins(int rs, uint64_t handled)
{
	static const char *const dev[] = {
		"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
		"/dev/urandom",
	};
	static const char *const sys[] = {
		"/sys/devices/system/cpu/possible", "/sys/devices/system/cpu/online",
		"/sys/devices/system/cpu/present", "/sys/devices/system/cpu/kernel_max",
		"/sys/devices/system/node/possible", "/sys/devices/system/node/online",
		"/sys/devices/system/node/has_cpu",
		"/sys/devices/system/node/has_memory",
		"/sys/devices/system/node/has_normal_memory",
		"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
		"/sys/kernel/mm/transparent_hugepage/enabled",
	};
	glob_t g;
	int rc = 0;

	for (size_t i = 0; !rc && i < CR_ARRAY_SIZE(dev); i++)
		rc = add_file(rs, dev[i], LL_FS_READ_FILE | LL_FS_WRITE_FILE |
			      LL_FS_IOCTL_DEV, handled);
	for (size_t i = 0; !rc && i < CR_ARRAY_SIZE(sys); i++)
		rc = add_file(rs, sys[i], LL_FS_READ_FILE, handled);
	if (rc)
		return rc;
	if (glob("/sys/devices/system/node/node[0-9]*/{meminfo,cpumap}",
		 GLOB_BRACE | GLOB_NOSORT, NULL, &g) == 0) {
		for (size_t i = 0; !rc && i < g.gl_pathc; i++)
			rc = add_file(rs, g.gl_pathv[i], LL_FS_READ_FILE, handled);
		globfree(&g);
	}
	return rc;
}

/*
 * With --fast-open a read-only open is the kernel's, judged on the path
 * the name leads to: `cat /dev/stdin` of a `corral run ... < FILE`, FILE
 * outside the roots, answered EACCES where natively and without the fast
 * path it reads the file (the supervisor reopens a regular file the
 * program holds readable, fs/resolve.c; found by a probing session). The
 * file the program is given as its stdin (corral's own fd 0, handed on
 * unless a terminal or --stdin text) is granted reading, that file alone:
 * its bytes are the program's anyway.
 */
static int add_stdin(const struct cr_run *run, int rs, uint64_t handled)
{
	struct stat st;
	int fl = fcntl(0, F_GETFL);

	/* Open for reading: a write-only stdin (0>>FILE) gives the program
	 * no bytes of the file, and must not give it them by name (found by
	 * a probing session). */
	if (run->cfg->stdin_text || fl < 0 || (fl & O_ACCMODE) == O_WRONLY ||
	    (fl & O_PATH) || fstat(0, &st) < 0 || !S_ISREG(st.st_mode) ||
	    isatty(0))
		return 0;
	return add_fd(rs, 0, false, LL_FS_READ_FILE, handled);
}

static int add_roots(struct cr_run *run, int rs, uint64_t handled,
		     int fast)
{
	const struct cr_fsrules *r = &run->fs->rules;
	int rc;

	/* Read-only opens left to the kernel (--fast-open) include those of
	 * /proc/self and the run's own /proc entries: /proc is readable as
	 * a whole, and Landlock's ptrace scoping still refuses the entries
	 * of processes outside the run that need ptrace access (environ,
	 * mem, maps, fd, cwd, exe...). What stays readable of other
	 * processes (cmdline, status, stat) is the documented price of
	 * that level (docs/threat-model.md). */
	if (fast >= CR_FAST_OPEN) {
		rc = add_path(rs, "/proc", LL_READ, handled);
		if (rc)
			return rc;
	}

	for (size_t i = 0; i < r->nroots; i++) {
		const struct cr_fsroot *root = &r->roots[i];
		const struct cr_pin *pin;
		uint64_t acc = 0;

		if (builtin_only(root->path, root->len))
			continue;
		if (root->acc & CR_FS_R)
			acc |= LL_READ | LL_FS_IOCTL_DEV;
		if (root->acc & CR_FS_W)
			acc |= LL_WRITE;
		if (root->acc & CR_FS_X)
			acc |= LL_FS_EXECUTE;
		/* A directory root the fs area already holds open (fs.c):
		 * its fd, rather than opening it again (start-up cost). */
		pin = cr_pin_find(run->cfg, root->path);
		if (run->fs->root_fds && run->fs->root_fds[i] >= 0)
			rc = add_fd(rs, run->fs->root_fds[i], true, acc, handled);
		/* A file or link root as the set-up opened it, or absent
		 * then: grants nothing. */
		else if (run->fs->leaf_fds && run->fs->leaf_fds[i] >= 0)
			rc = add_fd(rs, run->fs->leaf_fds[i], false, acc, handled);
		else if (run->fs->leaf_fds && run->fs->leaf_fds[i] == -2)
			rc = 0;
		else if (pin && pin->fd >= 0 && !strcmp(pin->real, root->path))
			rc = add_fd(rs, pin->fd, pin->dir, acc, handled);
		else if (pin)
			/* Absent at the walk, or named through a link whose
			 * target (the walked directory, a root of its own)
			 * has the rule: never opened by name again. */
			rc = 0;
		else
			rc = add_file(rs, root->path, acc, handled);
		if (rc)
			return rc;
	}
	rc = add_builtins(rs, handled);
	if (!rc && fast >= CR_FAST_OPEN)
		rc = add_stdin(run, rs, handled);
	return rc;
}

/*
 * TCP: the supervisor performs every connect and bind itself, on its own
 * copy of the program's socket, so the child never needs either; the only
 * ports it is granted are those of corral's proxy and DNS responder, where
 * the supervisor sends its connections. A handler bug that let a connect
 * through would reach nothing else. (Landlock rules name ports, not
 * addresses: the grant is "this port anywhere", the proxy's on loopback.)
 */
static int add_ports(struct cr_run *run, int rs)
{
	const struct cr_netstate *ns = run->net;

	for (int f = 0; ns && f < 2; f++) {
		const union cr_sockaddr *as[] = { &ns->laddr[f], &ns->taddr[f] };
		const int fds[] = { ns->lfd[f], ns->tfd[f] };

		for (int k = 0; k < 2; k++) {
			struct ll_net_port np = { .allowed_access = LL_NET_CONNECT_TCP };

			if (fds[k] < 0)
				continue;
			np.port = ntohs(as[k]->sa.sa_family == AF_INET6 ?
					as[k]->in6.sin6_port : as[k]->in4.sin_port);
			if (np.port &&
			    syscall(__NR_landlock_add_rule, rs, LL_RULE_NET_PORT,
				    &np, 0) < 0)
				return -errno;
		}
	}
	return 0;
}

static int build(struct cr_run *run, int abi, int fast)
{
	struct ll_ruleset_attr attr = { .handled_access_fs = fs_rights(abi) };
	size_t size = sizeof(attr.handled_access_fs);
	int rs, rc;

	if (abi >= 4) {
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		size = offsetof(struct ll_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		/* Signals and abstract unix sockets reach only the run: the
		 * domain is the run's, every task inherits it. */
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	rs = (int)syscall(__NR_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return -errno;
	rc = add_roots(run, rs, attr.handled_access_fs, fast);
	if (!rc && abi >= 4)
		rc = add_ports(run, rs);
	if (rc) {
		close(rs);
		return rc;
	}
	run->landlock_fd = rs;
	return 0;
}

/*
 * The fast path (syscalls.def, CR_SYSCALL_FAST) only when asked, and where Landlock holds
 * the contents and nothing the kernel cannot express is asked: a class
 * with denied subtrees (Landlock grants whole hierarchies, it cannot cut a
 * hole in a root) or one that hides everything (ENOENT for every refusal)
 * keeps every call with the supervisor.
 */
/* mountinfo escapes a mount point's space, tab, newline and backslash as
 * \ooo: undone in place. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = 0;
}

/* Is a mount whose objects have rules by place (proc, devpts, devtmpfs,
 * mqueue, or /dev/shm's own filesystem) at or beneath a directory root?
 * Landlock grants a root's whole tree, across mount points, so a
 * read-only open the kernel decides would reach it where the supervisor
 * refuses it (resolve.c: misplaced): a chroot tree's bind mounts of /dev
 * and /dev/pts inside a read root let a run read another terminal of the
 * user. True also when the mount table cannot be read (fail closed). */
static bool placed_mount_in_roots(const struct cr_run *run)
{
	static const char *const kinds[] = { "proc", "devpts", "devtmpfs",
					     "mqueue" };
	const struct cr_fsrules *r = &run->fs->rules;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool hit = false;

	if (!f)
		return true;
	while (!hit && getline(&line, &cap, f) > 0) {
		char mp[PATH_MAX], *dash = strstr(line, " - ");
		char fstype[64];
		unsigned maj, min;
		bool placed = false;

		if (!dash || sscanf(line, "%*s %*s %u:%u %*s %4095s", &maj, &min,
				    mp) != 3 ||
		    sscanf(dash + 3, "%63s", fstype) != 1) {
			hit = true;	/* unreadable: fail closed */
			break;
		}
		for (size_t k = 0; k < CR_ARRAY_SIZE(kinds); k++)
			if (!strcmp(fstype, kinds[k]))
				placed = true;
		if (run->fs->shm_dev && makedev(maj, min) == run->fs->shm_dev)
			placed = true;
		if (!placed)
			continue;
		unescape_octal(mp);
		for (size_t i = 0; !hit && i < r->nroots; i++)
			if (run->fs->root_fds && run->fs->root_fds[i] >= 0 &&
			    !builtin_only(r->roots[i].path, r->roots[i].len) &&
			    cr_path_within(r->roots[i].path, r->roots[i].len,
					   mp, strlen(mp)))
				hit = true;
	}
	free(line);
	fclose(f);
	return hit;
}

static int fast_level(const struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;

	/* Opt-in (--fast-open, fs "fast-open"): outside the roots a kernel
	 * answer is not absence (a parent's pytest.ini or .git is found,
	 * then cannot be read: the breakage docs/compatibility.md fixed), so
	 * the default keeps every path call with the supervisor. */
	if (!cfg->fast_open || cfg->strict_metadata || cfg->cls->fs_hide ||
	    run->fs->rules.ndeny)
		return CR_FAST_OFF;
	/* A root above the terminals (--ro / or --ro /dev) would let a
	 * read-only open the kernel decides reach another terminal of the
	 * user, which the supervisor refuses whatever the roots say: such a
	 * run keeps its opens notified. */
	for (size_t i = 0; i < run->fs->rules.nroots; i++) {
		const struct cr_fsroot *r = &run->fs->rules.roots[i];

		if (cr_path_within(r->path, r->len, "/dev/pts", 8) ||
		    cr_path_within(r->path, r->len, "/dev/tty", 8) ||
		    cr_path_within(r->path, r->len, "/dev/shm", 8))
			return CR_FAST_METADATA;
		/* A directory inside /dev (/dev/shm: other processes'
		 * objects, which the supervisor refuses; /dev/pts). */
		if (cr_path_within("/dev", 4, r->path, r->len) &&
		    run->fs->root_fds && run->fs->root_fds[i] >= 0)
			return CR_FAST_METADATA;
	}
	if (placed_mount_in_roots(run))
		return CR_FAST_METADATA;
	return CR_FAST_OPEN;
}

int cr_landlock_setup(struct cr_run *run)
{
	enum cr_landlock_mode mode = run->cfg->landlock;
	int abi, rc, fast;

	run->landlock_abi = 0;
	run->landlock_fd = -1;
	if (mode == CR_LL_OFF) {
		cr_fs_leaf_fds_drop(run->fs);
		run->landlock_reason = "off (--landlock=off or the class's landlock key)";
		return 0;
	}
	abi = cr_landlock_probe_abi();
	if (!abi) {
		cr_fs_leaf_fds_drop(run->fs);
		run->landlock_reason = "this kernel has no Landlock (5.13+ with landlock in the LSM list)";
		goto missing;
	}
	fast = fast_level(run);
	rc = build(run, abi, fast);
	cr_fs_leaf_fds_drop(run->fs);
	if (rc) {
		run->landlock_reason = "the ruleset could not be built";
		snprintf(run->message, sizeof(run->message),
			 "Landlock: cannot build the ruleset: %s", strerror(-rc));
		if (mode == CR_LL_REQUIRE)
			return rc;
		run->message[0] = 0;
		return 0;
	}
	run->landlock_abi = abi;
	run->landlock_reason = NULL;
	run->fast_path = fast;
	return 0;
missing:
	if (mode != CR_LL_REQUIRE)
		return 0;
	snprintf(run->message, sizeof(run->message),
		 "Landlock is required (--landlock=require) but %s",
		 run->landlock_reason);
	return -EOPNOTSUPP;
}

void cr_landlock_not_applied(struct cr_run *run, const char *why)
{
	if (run->landlock_abi <= 0)
		return;
	run->landlock_abi = 0;
	run->fast_path = CR_FAST_OFF;
	run->landlock_reason = why;
	cr_assurance_landlock_refresh(run);	/* observed before, if at all */
}

int cr_landlock_child_apply(int ruleset_fd)
{
	if (syscall(__NR_landlock_restrict_self, ruleset_fd, 0) < 0)
		return -errno;
	close(ruleset_fd);
	return 0;
}

void cr_landlock_finish(struct cr_run *run)
{
	if (run->landlock_fd >= 0)
		close(run->landlock_fd);
	run->landlock_fd = -1;
}
