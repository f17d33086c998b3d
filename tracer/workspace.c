/* tracer/workspace.c: makes the task's workspace (a private 0700 directory
 * under $TMPDIR, locked while its run lives, or the one given, refused when
 * it would expose its owner), removes a private one without ever following
 * a link the program planted, and sweeps those of runs that died. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <linux/magic.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"
#include "fs/fs.h"
#include "ipc/sysv.h"

/* Is a (absolute, normalised) inside or equal to b? */
static bool path_within(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (n == 1 && b[0] == '/')
		return true;
	return !strncmp(a, b, n) && (a[n] == '/' || !a[n]);
}

/* The caller's home directories: $HOME and the password entry's, resolved. */
static size_t homes(char out[2][PATH_MAX])
{
	const char *cand[2] = { getenv("HOME"), NULL };
	struct passwd *pw = getpwuid(getuid());
	size_t n = 0;

	if (pw)
		cand[1] = pw->pw_dir;
	for (size_t i = 0; i < 2; i++)
		if (cand[i] && cand[i][0] == '/' && realpath(cand[i], out[n]))
			n++;
	return n;
}

/* The refusals of a workspace, judged on its real path: the root
 * directory, the caller's home or an ancestor of it, or a place that holds
 * or lies in a root the class denies. */
static int judge(const struct cr_run_config *cfg, const char *path,
		 char *why, size_t len)
{
	char home[2][PATH_MAX];
	size_t nh;

	if (!strcmp(path, "/")) {
		snprintf(why, len, "it is the root directory");
		return -EPERM;
	}
	nh = homes(home);
	for (size_t i = 0; i < nh; i++)
		if (path_within(home[i], path)) {
			snprintf(why, len, "it is %s home directory %s",
				 strcmp(path, home[i]) ? "an ancestor of the caller's" :
				 "the caller's", home[i]);
			return -EPERM;
		}
	/* The workspace is writable by the program: a root the class
	 * denies must not be inside it (nor it inside one). */
	for (size_t i = 0; cfg->cls && i < cfg->cls->fs_deny.n; i++) {
		const char *d = cfg->cls->fs_deny.v[i];
		/* As written and as resolved: a deny entry written through
		 * a link (/var/run for /run) is the same place (found by a
		 * probing session). Not one in /proc: resolved here it names
		 * corral's own cwd, root or fds, not the program's. */
		char *rd = cr_path_within("/proc", 5, d, strlen(d)) ? NULL :
			   cr_audit_root_real(d);
		bool hit = path_within(d, path) || path_within(path, d) ||
			   (rd && (path_within(rd, path) ||
				   path_within(path, rd)));

		free(rd);
		if (hit) {
			snprintf(why, len, "the class denies %s", d);
			return -EPERM;
		}
	}
	return 0;
}

int cr_workspace_judge(const struct cr_run_config *cfg, const char *real,
		       char *why, size_t len)
{
	return judge(cfg, real, why, len);
}

int cr_workspace_check(const struct cr_run_config *cfg, const char *given,
		       char *why, size_t len)
{
	char path[PATH_MAX];

	/* A directory that does not exist yet is made (one level): judge
	 * where it will be, its resolved parent and its name. This is the
	 * early answer; cr_workspace_make judges again the directory it
	 * really opened. */
	if (!realpath(given, path)) {
		char parent[PATH_MAX], *slash;
		const char *name;

		if (snprintf(parent, sizeof(parent), "%s", given) >=
		    (int)sizeof(parent))
			return -ENAMETOOLONG;
		slash = strrchr(parent, '/');
		name = slash ? slash + 1 : parent;
		if (slash == parent)
			slash[1] = 0;
		else if (slash)
			*slash = 0;
		if (!realpath(slash ? parent : ".", path))
			return 0;	/* cannot be made: cr_workspace_make says why */
		if (strlen(path) + strlen(name) + 2 > sizeof(path))
			return -ENAMETOOLONG;
		if (strcmp(path, "/"))
			strcat(path, "/");
		strcat(path, given + (name - parent));
	}
	return judge(cfg, path, why, len);
}

/* ---- operator paths and the links an earlier run left ---- */

static int mark(int fd);

/* Is the directory fd, or one of its ancestors, the top of a directory
 * corral gave a program to write (the mark below)? A link found there
 * may be the program's. Unknown (an attribute that cannot be read, an
 * ancestor that cannot be opened) counts as marked: the caller refuses. */
static bool under_mark(int fd)
{
	struct stat root, st;
	int d = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool marked = true;

	if (d < 0 || stat("/", &root) < 0) {
		if (d >= 0)
			close(d);
		return true;
	}
	for (int depth = 0; depth < 4096; depth++) {
		char p[32];
		int up;

		snprintf(p, sizeof(p), "/proc/self/fd/%d", d);
		if (fstat(d, &st) < 0 || getxattr(p, CR_WS_MARK, NULL, 0) >= 0)
			break;
		/* Unreadable: a directory of the caller's (a program may
		 * narrow its workspace's top while it runs) counts as marked;
		 * another owner's (a search-only /home) was never a run's. */
		if (errno != ENODATA && errno != ENOTSUP &&
		    (errno != EACCES || st.st_uid == getuid()))
			break;
		if (st.st_dev == root.st_dev && st.st_ino == root.st_ino) {
			marked = false;
			break;
		}
		up = openat(d, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(d);
		d = up;
		if (d < 0)
			return true;
	}
	close(d);
	return marked;
}

static bool in_proc(int dirfd)
{
	struct statfs sf;

	return fstatfs(dirfd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

int cr_oppath_open(const char *given, int *out, char *why, size_t len)
{
	char buf[2][PATH_MAX];
	const char *rest = given;
	int cur, links = 0, k = 0, rc = 0;

	*out = -1;
	cur = open(given[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY |
		   O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (;;) {
		char name[NAME_MAX + 1];
		const char *end;
		size_t n;
		struct stat st;
		int fd;

		while (*rest == '/')
			rest++;
		if (!*rest)
			break;
		end = strchrnul(rest, '/');
		n = (size_t)(end - rest);
		if (n > NAME_MAX) {
			rc = -ENAMETOOLONG;
			break;
		}
		memcpy(name, rest, n);
		name[n] = 0;
		rest = end;
		if (!strcmp(name, "."))
			continue;
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			rc = -errno;
			if (fd >= 0)
				close(fd);
			break;
		}
		if (S_ISLNK(st.st_mode) && in_proc(cur)) {
			/* A magic link (/dev/stdin -> /proc/self/fd/0 ->
			 * "pipe:[N]"): its text names no path; the kernel
			 * follows it. procfs is no run's writable space. */
			close(fd);
			fd = openat(cur, name, O_PATH | O_CLOEXEC);
			if (fd < 0 || fstat(fd, &st) < 0) {
				rc = -errno;
				if (fd >= 0)
					close(fd);
				break;
			}
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t t;

			/* Judged where the link lies, before it is read. */
			if (++links > 40) {
				rc = -ELOOP;
			} else if (under_mark(cur)) {
				snprintf(why, len,
					 "%s is reached through the symbolic link \"%s\", which lies in the writable space of a corral run (its program could have made it); name the directory itself",
					 given, name);
				rc = -EPERM;
			} else if ((t = readlinkat(fd, "", target,
						   sizeof(target) - 1)) < 0) {
				rc = -errno;
			} else if ((size_t)t + strlen(rest) + 2 >
				   sizeof(buf[0])) {
				rc = -ENAMETOOLONG;
			} else {
				target[t] = 0;
				/* The link's text, then what was left. */
				memcpy(buf[k], target, (size_t)t);
				buf[k][t] = 0;
				if (*rest) {	/* a link to a file ends the path */
					buf[k][t] = '/';
					memcpy(buf[k] + t + 1, rest,
					       strlen(rest) + 1);
				}
				rest = buf[k];
				k ^= 1;
				if (target[0] == '/') {
					close(cur);
					cur = open("/", O_PATH | O_DIRECTORY |
						   O_CLOEXEC);
					if (cur < 0)
						rc = -errno;
				}
			}
			close(fd);
			if (rc)
				break;
			continue;
		}
		close(cur);
		cur = fd;
		if (!S_ISDIR(st.st_mode) && *rest) {
			rc = -ENOTDIR;
			break;
		}
	}
	if (rc) {
		if (cur >= 0)
			close(cur);
		return rc;
	}
	*out = cur;
	return 0;
}

int cr_oppath_mkdir(const char *given, char *why, size_t len, bool *made)
{
	char parent[PATH_MAX], *slash, *base;
	size_t n = strlen(given);
	int pfd, rc;

	*made = false;
	if (n >= sizeof(parent))
		return -ENAMETOOLONG;
	memcpy(parent, given, n + 1);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = 0;
	slash = strrchr(parent, '/');
	base = slash ? slash + 1 : parent;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return 0;	/* names no new directory: the walk says */
	if (slash == parent)
		rc = cr_oppath_open("/", &pfd, why, len);
	else if (slash) {
		*slash = 0;
		rc = cr_oppath_open(parent, &pfd, why, len);
	} else {
		rc = cr_oppath_open(".", &pfd, why, len);
	}
	if (rc)
		return rc == -EPERM ? rc : 0;	/* the full walk says why */
	rc = mkdirat(pfd, base, 0700) < 0 ? -errno : 0;
	close(pfd);
	if (!rc)
		*made = true;
	return rc == -EEXIST ? 0 : rc;
}

int cr_oppath_mark(const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return 0;	/* absent: nothing there to plant in */
	rc = mark(fd);
	close(fd);
	return rc;
}

int cr_oppath_mark_fd(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? mark(fd) : 0;
}

/* A name absent now whose directory lies in a run's writable space: its
 * program could put a link there at any time. */
static bool absent_under_mark(const char *given)
{
	char parent[PATH_MAX], why[8];
	char *slash;
	int fd;
	bool marked;

	if (strlen(given) >= sizeof(parent))
		return true;
	strcpy(parent, given);
	while ((slash = strrchr(parent, '/')) && slash != parent && !slash[1])
		*slash = 0;	/* trailing slashes */
	slash = strrchr(parent, '/');
	if (!slash)
		return false;
	if (slash == parent)
		slash[1] = 0;
	else
		*slash = 0;
	if (cr_oppath_open(parent, &fd, why, sizeof(why)))
		return false;	/* its parent is absent too, or refused */
	marked = under_mark(fd);
	close(fd);
	return marked;
}

int cr_oppath_pin(struct cr_run_config *cfg, const struct cr_strlist *l,
		  bool strict, const char **refused, char *why, size_t len)
{
	for (size_t i = 0; i < l->n; i++) {
		char real[PATH_MAX];
		struct cr_pin *np;
		struct stat st;
		int fd = -1, rc;

		if (cr_pin_find(cfg, l->v[i]))
			continue;	/* named twice */
		why[0] = 0;
		rc = cr_oppath_open(l->v[i], &fd, why, len);
		if (rc == -ENOENT && strict && absent_under_mark(l->v[i])) {
			snprintf(why, len,
				 "%s does not exist, in the writable space of a corral run, whose program could put a link there; name the place it should deny",
				 l->v[i]);
			rc = -EPERM;
		}
		if (rc == -EPERM) {
			*refused = l->v[i];
			return rc;
		}
		/* Absent or unreachable now: pinned as absent, so that
		 * nothing resolves the name again while the run is set up
		 * (a live run's program flipping it between missing and a
		 * link outside got later runs that place as a root, found
		 * by a probing session). The supervisor judges the name
		 * where it leads at each call, once it exists. */
		if (!rc && (fstat(fd, &st) < 0 ||
			    cr_fd_realpath(fd, real, sizeof(real)))) {
			close(fd);
			fd = -1;
		}
		if (rc)
			fd = -1;
		np = realloc(cfg->pins, (cfg->npins + 1) * sizeof(*np));
		if (!np) {
			if (fd >= 0)
				close(fd);
			return -ENOMEM;
		}
		cfg->pins = np;
		np += cfg->npins;
		np->given = strdup(l->v[i]);
		np->real = fd >= 0 ? strdup(real) : NULL;
		np->fd = fd;
		np->dir = fd >= 0 && S_ISDIR(st.st_mode);
		if (!np->given || (fd >= 0 && !np->real)) {
			free(np->given);
			free(np->real);
			if (fd >= 0)
				close(fd);
			return -ENOMEM;
		}
		cfg->npins++;
	}
	return 0;
}

const struct cr_pin *cr_pin_find(const struct cr_run_config *cfg,
				 const char *path)
{
	for (size_t i = 0; i < cfg->npins; i++)
		if (!strcmp(cfg->pins[i].given, path) ||
		    (cfg->pins[i].real && !strcmp(cfg->pins[i].real, path)))
			return &cfg->pins[i];
	return NULL;
}

int cr_fd_realpath(int fd, char *out, size_t len)
{
	char p[32];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, out, len - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= len - 1)
		return -ENAMETOOLONG;
	out[n] = 0;
	return out[0] == '/' ? 0 : -ENOENT;
}

static const char *tmp_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	return tmp && tmp[0] == '/' ? tmp : "/tmp";
}

const char *cr_workspace_tmp_dir(void)
{
	return tmp_dir();
}

/* A System V record (ipc/sysv.c) whose supervisor is gone: its objects
 * that are still the same go, then the record. */
static void sweep_sysv(const struct cr_run_config *cfg, const char *ws,
		       int dfd, const char *name)
{
	struct stat held, now;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			O_NONBLOCK);

	if (fd < 0)
		return;
	if (fstat(fd, &held) == 0 && S_ISREG(held.st_mode) &&
	    held.st_uid == getuid() && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
	    fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    now.st_ino == held.st_ino && now.st_dev == held.st_dev) {
		cr_sysv_sweep(cfg, ws, fd);
		unlinkat(dfd, name, 0);
	}
	close(fd);
}

/* Private workspaces and their lock files are made in $TMPDIR: a --rw (or
 * class) root that holds it would put every other run's workspace, and
 * the lock files the sweep reads, in the program's reach. Such a broad
 * grant is refused. The workspace itself is not judged so: a caller that
 * points TMPDIR at the workspace (a test harness, an agent's scratch
 * directory) means the program's own space, and corral makes nothing of
 * its own there when -w is given (docs/threat-model.md). */
int cr_workspace_tmp_check(const struct cr_run_config *cfg, char *why,
			   size_t len)
{
	char real[PATH_MAX], which[PATH_MAX + 128];

	if (!realpath(tmp_dir(), real))
		return 0;	/* none: no run's directory is there */
	if (!cr_audit_path_writable(cfg, NULL, real, which, sizeof(which)))
		return 0;
	snprintf(why, len, "$TMPDIR (%s), where corral keeps the workspaces and lock files of other runs, is %s; set TMPDIR outside the writable roots",
		 real, which);
	return -EPERM;
}

/* A private workspace is locked through a sibling file, NAME.lock, outside
 * the program's reach (the program can write inside the workspace only):
 * flock held by the supervisor for the whole run, released by the kernel
 * when it dies however it dies. */
static int lock_private(struct cr_run_config *cfg, const char *path)
{
	char lock[PATH_MAX], fresh[PATH_MAX];
	int fd, rc = 0;

	if (snprintf(lock, sizeof(lock), "%s.lock", path) >= (int)sizeof(lock) ||
	    snprintf(fresh, sizeof(fresh), "%s.lock-new", path) >=
	    (int)sizeof(fresh))
		return -ENAMETOOLONG;
	/* Locked before it has its name: a sweep never sees it unlocked.
	 * (The sweep only looks at names exactly corral-XXXXXX.lock.) */
	fd = open(fresh, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || link(fresh, lock) < 0)
		rc = -errno;
	unlink(fresh);
	if (rc) {
		close(fd);
		return rc;
	}
	cfg->ws_lockfd = fd;
	return 0;
}

void cr_workspace_unlock(struct cr_run_config *cfg, bool removed)
{
	char lock[PATH_MAX];

	if (cfg->ws_lockfd < 0)
		return;
	/* A workspace that could not be removed keeps its lock file: once
	 * this process is gone, the next sweep tries again. */
	if (removed && cfg->workspace &&
	    snprintf(lock, sizeof(lock), "%s.lock", cfg->workspace) <
	    (int)sizeof(lock))
		unlink(lock);
	close(cfg->ws_lockfd);
	cfg->ws_lockfd = -1;
}

/* The lock file's content: one line per /dev/shm entry the run made (its
 * private directory there, fs/shm.c), "INODE NAME". Appended by the supervisor only (the program cannot reach
 * the file); a line cut short by a kill is ignored. */
void cr_workspace_note_shm(const struct cr_run_config *cfg, int shmdir,
			   const char *name)
{
	char line[NAME_MAX + 32];
	struct stat st;
	int n;

	if (cfg->ws_lockfd < 0 || shmdir < 0 || strchr(name, '\n') ||
	    fstatat(shmdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	n = snprintf(line, sizeof(line), "%llu %s\n",
		     (unsigned long long)st.st_ino, name);
	if (n > 0 && n < (int)sizeof(line) &&
	    lseek(cfg->ws_lockfd, 0, SEEK_END) >= 0 &&
	    write(cfg->ws_lockfd, line, (size_t)n) != n)
		return;	/* best effort: the run's own cleanup removes it */
}

/* Hook: what a dead run held outside its workspace, swept with it. Today
 * the /dev/shm entries its lock file lists (its private directory, with
 * all in it): each removed when it is still the same inode and this
 * user's; a name taken since by another object is left alone. The list is the record only where tmpfs has no
 * user xattrs (before 6.6): elsewhere every object corral made carries
 * its tag and the tag sweep (cr_fs_shm_sweep) decides, so an object
 * without a tag is not corral's, whatever a lock file says. */
static void sweep_run_extra(int lockfd)
{
	char buf[65536], *line, *save = NULL;
	ssize_t len = pread(lockfd, buf, sizeof(buf) - 1, 0);
	int shm;

	if (len <= 0)
		return;
	buf[len] = 0;
	shm = open("/dev/shm", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (shm < 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long ino;
		char *name = strchr(line, ' ');
		struct stat st;

		if (!name || sscanf(line, "%llu", &ino) != 1)
			continue;
		name++;
		if (!*name || strchr(name, '/') || !strcmp(name, ".") ||
		    !strcmp(name, ".."))
			continue;
		if (fstatat(shm, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_ino != ino || st.st_uid != getuid() ||
		    !cr_fs_shm_untaggable(shm, name))
			continue;
		/* The run's private directory (fs/shm.c), or an object an
		 * earlier build made by the program's name. */
		if (S_ISDIR(st.st_mode))
			cr_fs_shm_remove_dir(shm, name);
		else if (S_ISREG(st.st_mode))
			unlinkat(shm, name, 0);
	}
	close(shm);
}

/* A lock file killed before it got its name (a run killed within
 * microseconds of making its workspace): this user's, unlocked and a
 * minute old, it goes with the workspace it was for, which then has no
 * lock file of its own. */
static void stale_fresh(const char *tmp, int dfd, const char *name)
{
	char ws[16], lock[32], full[PATH_MAX];
	struct stat st;
	int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == getuid() && st.st_mtime + 60 < time(NULL) &&
	    flock(fd, LOCK_EX | LOCK_NB) == 0) {
		memcpy(ws, name, 13);
		ws[13] = 0;
		snprintf(lock, sizeof(lock), "%.13s.lock", ws);
		if (faccessat(dfd, lock, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
		    fstatat(dfd, ws, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
		    snprintf(full, sizeof(full), "%s/%s", tmp, ws) <
		    (int)sizeof(full))
			cr_workspace_remove(full);
		unlinkat(dfd, name, 0);
	}
	close(fd);
}

int cr_workspace_gc(const struct cr_run_config *cfg, const char *given,
		    size_t *removed, size_t *busy)
{
	const char *tmp = tmp_dir();
	DIR *d = opendir(tmp);
	struct dirent *de;
	int dfd, rc = 0;

	*removed = *busy = 0;
	if (!d)
		return -errno;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		char ws[NAME_MAX + 1], full[PATH_MAX];
		size_t n = strlen(de->d_name);
		struct stat held, now, wst;
		int fd;

		if (n == strlen(CR_SYSV_RECORD) + 6 &&
		    !strncmp(de->d_name, CR_SYSV_RECORD,
			     strlen(CR_SYSV_RECORD))) {
			sweep_sysv(cfg, given, dfd, de->d_name);
			continue;
		}
		if (n == 22 && !strncmp(de->d_name, "corral-", 7) &&
		    !strcmp(de->d_name + 13, ".lock-new")) {
			stale_fresh(tmp, dfd, de->d_name);
			continue;
		}
		/* corral-XXXXXX.lock, as mkdtemp and lock_private make them */
		if (n != 18 || strncmp(de->d_name, "corral-", 7) ||
		    strcmp(de->d_name + 13, ".lock"))
			continue;
		fd = openat(dfd, de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC |
			    O_NONBLOCK);
		if (fd < 0)
			continue;
		/* The same user's only; a lock taken means its run lives. */
		if (fstat(fd, &held) < 0 || !S_ISREG(held.st_mode) ||
		    held.st_uid != getuid() || flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EWOULDBLOCK)
				(*busy)++;
			close(fd);
			continue;
		}
		/* Still the file at that name (its run may have ended and a
		 * new run taken the name meanwhile)? */
		if (fstatat(dfd, de->d_name, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now.st_ino != held.st_ino || now.st_dev != held.st_dev) {
			close(fd);
			continue;
		}
		memcpy(ws, de->d_name, 13);
		ws[13] = 0;
		if (snprintf(full, sizeof(full), "%s/%s", tmp, ws) >=
		    (int)sizeof(full)) {
			close(fd);
			continue;
		}
		if (fstatat(dfd, ws, &wst, AT_SYMLINK_NOFOLLOW) == 0) {
			int r = S_ISDIR(wst.st_mode) && wst.st_uid == getuid() ?
				cr_workspace_remove(full) : -ENOTDIR;

			if (r) {
				if (!rc)
					rc = r;
				close(fd);
				continue;
			}
		}
		sweep_run_extra(fd);
		unlinkat(dfd, de->d_name, 0);
		close(fd);
		(*removed)++;
	}
	closedir(d);
	return rc;
}

int cr_workspace_gc_main(int argc, char **argv)
{
	size_t removed, busy;
	int rc, shm;

	if (argc != 1) {
		fprintf(stderr, "usage: corral gc\n");
		return CR_EXIT_USAGE;
	}
	rc = cr_workspace_gc(NULL, NULL, &removed, &busy);
	/* /dev/shm objects tagged by a supervisor that is gone, whether
	 * its workspace was private or given with -w (tracer/fs/fs.c). */
	shm = cr_fs_shm_sweep();
	printf("corral gc: %zu workspace(s) of ended runs removed, %zu in use, under %s; %d /dev/shm object(s) of ended runs removed\n",
	       removed, busy, tmp_dir(), shm > 0 ? shm : 0);
	if (rc) {
		fprintf(stderr, "corral gc: some could not be removed: %s\n",
			strerror(-rc));
		return 1;
	}
	return 0;
}

/* chmod of the directory an O_PATH fd holds (fchmod needs a real open). */
static int fd_chmod(int fd, mode_t mode)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return chmod(p, mode) < 0 ? -errno : 0;
}

/* Mark a directory corral lets a program write: a link found beneath it
 * later is not followed for an operator path (cr_oppath_open). Best
 * effort: a filesystem without user attributes keeps no mark
 * (docs/threat-model.md). The program cannot set or remove the name
 * (handlers/xattr.c). */
static int mark(int fd)
{
	char p[32];
	struct stat st;
	int rc;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (getxattr(p, CR_WS_MARK, NULL, 0) >= 0)
		return 0;
	if (errno == ENOTSUP)
		return 0;	/* a filesystem without user attributes */
	if (errno != ENODATA && errno != EACCES)
		return -errno;
	if (!setxattr(p, CR_WS_MARK, "1", 1, 0))
		return 0;
	rc = -errno;
	/* A directory of the caller's without its write bit (0555): the
	 * program, as its owner, could add the bit back and plant; the mark
	 * is set with the bit for a moment, before anything runs. */
	if ((rc == -EACCES || rc == -EPERM) && fstat(fd, &st) == 0 &&
	    st.st_uid == getuid() && !(st.st_mode & S_IWUSR) &&
	    chmod(p, (st.st_mode & 07777) | S_IWUSR | S_IRUSR) == 0) {
		rc = setxattr(p, CR_WS_MARK, "1", 1, 0) ? -errno : 0;
		chmod(p, st.st_mode & 07777);
	}
	return rc == -ENOTSUP ? 0 : rc;
}

int cr_workspace_make(struct cr_run_config *cfg, const char *given,
		      char *why, size_t len)
{
	char path[PATH_MAX];
	struct stat st;
	int fd = -1, rc;

	why[0] = 0;
	if (given) {
		bool made = false;

		/* Made in the parent the walk opened: a link in the way is
		 * judged before anything is made where it leads. */
		if (cfg->ws_unsafe) {
			made = mkdir(given, 0700) == 0;
			rc = !made && errno != EEXIST ? -errno : 0;
		} else {
			rc = cr_oppath_mkdir(given, why, len, &made);
		}
		if (rc)
			return rc;
		/* Judged on the directory opened, which is the one the run
		 * uses from here on (cfg->ws_fd): a link swapped in at the
		 * name after an earlier look changes nothing. */
		if (cfg->ws_unsafe) {
			fd = open(given, O_PATH | O_DIRECTORY | O_CLOEXEC);
			rc = fd < 0 ? -errno : 0;
		} else {
			rc = cr_oppath_open(given, &fd, why, len);
		}
		if (!rc && fstat(fd, &st) < 0)
			rc = -errno;
		if (!rc && !S_ISDIR(st.st_mode))
			rc = -ENOTDIR;
		if (!rc)
			rc = cr_fd_realpath(fd, path, sizeof(path));
		if (!rc && !cfg->ws_unsafe)
			rc = judge(cfg, path, why, len);
		/* Made here: 0700 whatever the caller's umask (0177 made a
		 * directory its owner could not enter, and every run
		 * failed; found by a probing session). */
		if (!rc && made && (st.st_mode & 07777) != 0700)
			rc = fd_chmod(fd, 0700);
		if (rc) {
			if (fd >= 0)
				close(fd);
			return rc;
		}
		rc = mark(fd);
		if (rc && !cfg->ws_unsafe) {
			snprintf(why, len,
				 "corral cannot mark it as a run's writable space (%s): a link its program left there could steer a later run's paths; name a directory of your own",
				 strerror(-rc));
			close(fd);
			return -EPERM;
		}
		cfg->ws_private = false;
	} else {
		const char *tmp = getenv("TMPDIR");

		if (!tmp || tmp[0] != '/')
			tmp = "/tmp";
		if (snprintf(path, sizeof(path), "%s/corral-XXXXXX", tmp) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		for (int tries = 0;; tries++) {
			memcpy(path + strlen(path) - 6, "XXXXXX", 6);
			if (!mkdtemp(path))	/* 0700, less the umask */
				return -errno;
			if (chmod(path, 0700) < 0) {
				rc = -errno;
				rmdir(path);
				return rc;
			}
			rc = lock_private(cfg, path);
			if (!rc)
				break;
			rmdir(path);
			/* A lock file of a swept run still at that name. */
			if (rc != -EEXIST || tries > 8)
				return rc;
		}
		cfg->ws_private = true;
		fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		{
			char real[PATH_MAX];

			if (!cr_fd_realpath(fd, real, sizeof(real)))
				memcpy(path, real, strlen(real) + 1);
		}
	}
	cfg->workspace = strdup(path);
	if (!cfg->workspace) {
		close(fd);
		return -ENOMEM;
	}
	cfg->ws_fd = fd;
	return 0;
}

int cr_workspace_fd(const struct cr_run_config *cfg)
{
	int fd = fcntl(cfg->ws_fd, F_DUPFD_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

/* A removal descends with an fd (and a DIR buffer) per level; a tree
 * deeper than this is not descended but moved up in pieces (below). */
#define CR_RM_DEPTH 256

struct rm {
	int top;		/* the directory being emptied; borrowed */
	unsigned moved;		/* subtrees moved up by this pass */
	unsigned seq;
};

/* Remove everything under dirfd. Entries are opened with O_NOFOLLOW and
 * O_DIRECTORY relative to their parent's fd, so a symlink is unlinked, never
 * entered, and a rename race cannot steer the removal outside. A directory
 * the program made unreadable (chmod 000) is given back u+rwx first: it is
 * ours, inside our private directory. A directory at CR_RM_DEPTH is renamed
 * to the top instead of entered, for the next pass: a program can nest
 * directories without bound by renaming one into another (a tree 4100
 * deep stayed on the host for good when removal gave up at 4096). */
static int empty_dir(int dirfd, int depth, struct rm *m)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name;

		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		if (unlinkat(dirfd, n, 0) == 0)
			continue;
		if (errno != EISDIR && errno != EPERM && errno != EACCES) {
			if (errno != ENOENT && !rc)
				rc = -errno;
			continue;
		}
		if (depth + 1 >= CR_RM_DEPTH) {
			char up[48];
			int r = -1;

			for (int k = 0; k < 64 && r < 0; k++) {
				snprintf(up, sizeof(up), ".corral-deep-%u", m->seq++);
				r = renameat(dirfd, n, m->top, up);
				if (r < 0 && errno != EEXIST && errno != ENOTEMPTY)
					break;
			}
			if (r == 0)
				m->moved++;
			else if (!rc)
				rc = -errno;
			continue;
		}
		{
			int sub = openat(dirfd, n, O_RDONLY | O_DIRECTORY |
					 O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0 && errno == EACCES &&
			    fchmodat(dirfd, n, 0700, AT_SYMLINK_NOFOLLOW) == 0)
				sub = openat(dirfd, n, O_RDONLY | O_DIRECTORY |
					     O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				if (!rc)
					rc = -errno;
				continue;
			}
			fchmod(sub, 0700);
			{
				int r = empty_dir(sub, depth + 1, m);

				if (r && !rc)
					rc = r;
			}
			if (unlinkat(dirfd, n, AT_REMOVEDIR) < 0 && !rc &&
			    !(errno == ENOTEMPTY && m->moved))
				rc = -errno;
		}
	}
	closedir(d);
	return rc;
}

int cr_workspace_remove(const char *path)
{
	/* O_PATH: a top the program narrowed to 000 (it may: tracer/fs/
	 * tops.c) is opened all the same and given back u+rwx through its
	 * fd; read-only, the open failed and the workspace stayed for good,
	 * `corral gc` failing on it too. */
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char p[64];
	int rc;

	if (fd < 0)
		return -errno;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	chmod(p, 0700);
	{
		struct rm m = { .top = fd };

		/* Pass after pass while deep subtrees were moved up: each
		 * pass removes CR_RM_DEPTH levels of every chain. */
		do {
			/* A fresh open file each pass: a dup would share
			 * the directory offset the last pass left at its end. */
			int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY |
					 O_CLOEXEC);

			m.moved = 0;
			rc = dfd < 0 ? -errno : empty_dir(dfd, 0, &m);
		} while (m.moved && (rc == 0 || rc == -ENOTEMPTY));
	}
	close(fd);
	if (rmdir(path) < 0 && !rc)
		rc = -errno;
	return rc;
}
