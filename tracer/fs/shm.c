/* tracer/fs/shm.c: the run's POSIX shared memory and semaphores: a private
 * directory in /dev/shm that its /dev/shm names live in; measured, swept. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fs.h"

/*
 * /dev/shm is a tmpfs shared by every process of the host, and a name
 * there is how two programs of the user meet (shm_open("app-state"),
 * sem_open("app-lock")). An earlier build let the run make its objects
 * under the program's own names and judged "ours" by name: a program of
 * the user that opened such a name later got the run's object (it read
 * what the run planted, the run read and wrote its data, shrank it under
 * it: SIGBUS, or held its semaphore at 0), and a name the other program
 * re-made after an unlink was then the run's to open, and corral's
 * cleanup unlinked it.
 *
 * So the run's /dev/shm is a directory of its own: /dev/shm/NAME, as the
 * program names it, is NAME in /dev/shm/.corral-<128 random bits>, mode
 * 0700 (resolve.c translates each walk through /dev/shm; a listing of
 * /dev/shm is a listing of this directory). The names other programs use
 * are never the run's, and nothing at them is reachable from the run.
 * The directory is made at the run's first use of /dev/shm; it is the top
 * of a writable root (tops.c: its mode gains no group or other bit), it
 * carries a user xattr naming the supervisor (pid and start time), and
 * cleanup removes it with all in it. When the supervisor itself was
 * killed (-9) it cannot, and the next supervisor's sweep
 * (cr_fs_shm_sweep, at every run's start and for `corral gc`) removes
 * the directories of ours whose tagged supervisor is gone. The sweep
 * trusts only tags: an object of the user's other programs has none. A
 * program cannot write the tag (handlers/xattr.c refuses the name). On a
 * kernel without user xattrs on tmpfs (before 6.6) the lock file beside
 * the workspace lists the directory instead (tracer/workspace.c).
 */

#define CR_SHM_TAG "user.corral.run"
#define CR_SHM_PREFIX ".corral-"

/* "PID STARTTIME" of a live process, from /proc/PID/stat (field 22), or
 * -1 (gone, or a zombie: a supervisor killed with -9 whose parent has not
 * waited for it yet is gone too). */
static int proc_ident(pid_t pid, char *out, size_t len)
{
	char path[64], buf[1024], *p, state;
	unsigned long long start;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -2;	/* gone, or hidden (below) */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &state, &start) != 2 || state == 'Z' || state == 'X')
		return -1;
	snprintf(out, len, "%d %llu", (int)pid, start);
	return 0;
}

/* A readable fd of the directory pfd (O_PATH, ours), its owner's rights
 * given back first if the program took them away (it may drop its own
 * bits, tops.c): removal and measuring must see inside. -1 on failure. */
static int open_listing(int pfd)
{
	char p[64];
	int fd = cr_quiet_opendir(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 || errno != EACCES)
		return fd;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
	if (chmod(p, 0700) < 0)
		return -1;
	return cr_quiet_opendir(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Remove everything in the directory pfd (O_PATH, ours); no link is
 * followed: each entry is unlinked where it is, each directory opened
 * with O_NOFOLLOW and emptied first. */
static void empty_tree(int pfd, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd = open_listing(pfd);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		const char *nm = de->d_name;
		int sub;

		if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
			continue;
		if (unlinkat(dirfd(d), nm, 0) == 0 ||
		    (errno != EISDIR && errno != EPERM))
			continue;
		sub = depth < CR_SHM_DEPTH ?
		      openat(dirfd(d), nm, O_PATH | O_DIRECTORY | O_NOFOLLOW |
			     O_CLOEXEC) : -1;
		if (sub >= 0) {
			empty_tree(sub, depth + 1);
			close(sub);
		}
		unlinkat(dirfd(d), nm, AT_REMOVEDIR);
	}
	closedir(d);
}

int cr_fs_shm_remove_dir(int shm, const char *name)
{
	struct stat st;
	int fd;

	if (strncmp(name, CR_SHM_PREFIX, strlen(CR_SHM_PREFIX)) ||
	    strchr(name, '/'))
		return -1;
	fd = openat(shm, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		close(fd);
		return -1;
	}
	empty_tree(fd, 0);
	close(fd);
	return unlinkat(shm, name, AT_REMOVEDIR);
}

int cr_fs_shm_dir(struct cr_run *run)
{
	struct cr_fsstate *fs = run->fs;
	unsigned char rnd[16];
	char name[sizeof(fs->shm_pname)], p[64], id[64];
	struct cr_fstop *nt;
	struct stat st;
	int fd;

	if (fs->shm_priv >= 0)
		return fs->shm_priv;
	if (fs->shm_fd < 0)
		return -ENOENT;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EAGAIN;
	memcpy(name, CR_SHM_PREFIX, strlen(CR_SHM_PREFIX));
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(name + strlen(CR_SHM_PREFIX) + 2 * i, 3, "%02x", rnd[i]);
	if (mkdirat(fs->shm_fd, name, 0700) < 0)
		return errno == EEXIST ? -EAGAIN : -errno;
	fd = openat(fs->shm_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	nt = realloc(fs->tops, (fs->ntops + 1) * sizeof(*nt));
	if (nt)
		fs->tops = nt;
	if (fd < 0 || !nt || fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		int e = fd < 0 ? errno : !nt ? ENOMEM : EACCES;

		if (fd >= 0)
			close(fd);
		cr_fs_shm_remove_dir(fs->shm_fd, name);
		return -e;
	}
	/* Its mode gains no group or other bit, its owner does not change
	 * (tops.c): what the run keeps there stays the user's alone. */
	nt[fs->ntops++] = (struct cr_fstop){
		.dev = st.st_dev, .ino = st.st_ino, .mode = st.st_mode & 07777,
	};
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (!proc_ident(getpid(), id, sizeof(id)))
		setxattr(p, CR_SHM_TAG, id, strlen(id), 0);
	/* Written down beside the workspace too: where tmpfs takes no tag,
	 * the next run or `corral gc` removes it from that list. */
	cr_workspace_note_shm(run->cfg, fs->shm_fd, name);
	fs->shm_priv = fd;
	memcpy(fs->shm_pname, name, sizeof(name));
	fs->shm_pplen = (size_t)snprintf(fs->shm_ppath, sizeof(fs->shm_ppath),
					 "/dev/shm/%s", name);
	return fd;
}

bool cr_fs_shm_is_pname(const struct cr_fsstate *fs, const char *name,
			size_t len)
{
	return fs->shm_priv >= 0 && len == fs->shm_pplen - 9 &&
	       !memcmp(name, fs->shm_pname, len);
}

void cr_fs_shm_canon(const struct cr_fsstate *fs, char *path, size_t *len)
{
	size_t pl = fs->shm_pplen;

	if (fs->shm_priv < 0 || *len < pl || memcmp(path, fs->shm_ppath, pl) ||
	    (*len > pl && path[pl] != '/'))
		return;
	memmove(path + 8, path + pl, *len - pl + 1);
	*len -= pl - 8;
}

void cr_fs_shm_finish(struct cr_fsstate *fs)
{
	struct stat a, b;

	if (fs->shm_priv < 0)
		return;
	empty_tree(fs->shm_priv, 0);
	/* The name goes only while it is still our directory. */
	if (fstat(fs->shm_priv, &a) == 0 &&
	    fstatat(fs->shm_fd, fs->shm_pname, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlinkat(fs->shm_fd, fs->shm_pname, AT_REMOVEDIR);
	close(fs->shm_priv);
	fs->shm_priv = -1;
}

bool cr_fs_shm_untaggable(int shm, const char *name)
{
	char path[PATH_MAX], tag[64];

	if (snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", shm, name) >=
	    (int)sizeof(path))
		return false;
	return lgetxattr(path, CR_SHM_TAG, tag, sizeof(tag)) < 0 &&
	       (errno == ENOTSUP || errno == EOPNOTSUPP);
}

int cr_fs_shm_sweep(void)
{
	int shm = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	int removed = 0;
	DIR *d;

	if (shm < 0)
		return 0;
	d = fdopendir(shm);
	if (!d) {
		close(shm);
		return 0;
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX], tag[64], now[64];
		struct stat st;
		ssize_t l;
		int pid, rc;

		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_uid != geteuid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd(d),
			 de->d_name);
		l = lgetxattr(path, CR_SHM_TAG, tag, sizeof(tag) - 1);
		if (l <= 0)
			continue;
		tag[l] = 0;
		if (sscanf(tag, "%d", &pid) != 1 || pid <= 0)
			continue;
		/* Its supervisor still runs (same pid, same start): not ours
		 * to touch. Where /proc is mounted hidepid=1 or 2, a
		 * supervisor, undumpable once its program runs, is hidden
		 * from its own user: its stat cannot be read, though the
		 * process is there. A pid that still answers kill(0) keeps
		 * its directory then (a pid taken again since keeps it too,
		 * until it ends: the safe side); the sweep took live runs'
		 * directories before (found by a probing session). */
		rc = proc_ident(pid, now, sizeof(now));
		if ((!rc && !strcmp(now, tag)) ||
		    (rc == -2 && (kill(pid, 0) == 0 || errno == EPERM)))
			continue;
		/* A run's private directory with all in it; a single object
		 * or empty directory an earlier build tagged. */
		if (S_ISDIR(st.st_mode) ?
		    (cr_fs_shm_remove_dir(dirfd(d), de->d_name) == 0 ||
		     unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) == 0) :
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

/* Blocks of all below the directory pfd (O_PATH, ours), no link
 * followed: a directory renamed in keeps what it holds. A file of several
 * names counts its share at each (every name of a file here is in this
 * tree: a link needs its source visible, and the run sees no other part
 * of /dev/shm): once in all. It counted whole at each name, and a 40 MiB
 * file linked once ended a run under disk=64MiB (found by a probing
 * session). */
static uint64_t tree_bytes(int pfd, int depth)
{
	struct dirent *de;
	uint64_t total = 0;
	DIR *d;
	int fd = open_listing(pfd);

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		const char *nm = de->d_name;
		struct stat st;
		int sub;

		if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
			continue;
		if (fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		total += (uint64_t)st.st_blocks * 512 /
			 (!S_ISDIR(st.st_mode) && st.st_nlink > 1 ?
			  (uint64_t)st.st_nlink : 1);
		if (!S_ISDIR(st.st_mode) || depth >= CR_SHM_DEPTH)
			continue;
		sub = openat(dirfd(d), nm, O_PATH | O_DIRECTORY | O_NOFOLLOW |
			     O_CLOEXEC);
		if (sub >= 0) {
			total += tree_bytes(sub, depth + 1);
			close(sub);
		}
	}
	closedir(d);
	return total;
}

uint64_t cr_fs_shm_bytes(struct cr_run *run)
{
	struct cr_fsstate *fs = run->fs;

	return fs && fs->shm_priv >= 0 ? tree_bytes(fs->shm_priv, 0) : 0;
}
