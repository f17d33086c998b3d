/* tracer/fs/held.c: the ledger of files the run holds without a name (unlinked,
 * O_TMPFILE, memfds) until nothing but the ledger holds them. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "../budget/budget.h"

/*
 * Why a ledger: a file without a name takes storage for as long as anything
 * holds it, and the run can hold it where no measure looks: in a unix
 * socket's queue (an SCM_RIGHTS message never received), in a mapping
 * whose fd was closed, in a socket in flight inside another. The fd-table
 * scan (budget/fdscan.c) sees only tasks' tables, the walk only names.
 *
 * So every file that loses its last name through the supervisor (unlink,
 * rename over it), every O_TMPFILE and every memfd gets an entry here: an
 * open file of our own on the same inode. It keeps the inode measurable
 * (fstat) wherever the run's references went, and the disk budget counts
 * its blocks (unless a task's fd table already counted them).
 *
 * And when is it gone? Our own open file is a separate open file
 * description, so a write lease tells whether any *other* open file of
 * the inode exists anywhere: fcntl(F_SETLEASE, F_WRLCK) succeeds only when
 * the inode's reader and writer counts are ours alone. A descriptor in a
 * task's table, in a socket's queue (at any depth) and a mapping all hold
 * an open file, so they all keep the lease from being granted. Granted:
 * we are the last holder; the entry is dropped and our close frees the
 * storage. The lease is released at once (and SIGIO, which a lease break
 * would send us, is ignored).
 *
 * Two kinds of holder the lease cannot see: an O_PATH open (no reader or
 * writer count) and the pseudo file memfd_create returns (made without
 * the counts). The first is refused in flight (an O_PATH descriptor of a
 * regular file cannot be sent, handlers/net.c) and seen by the fd scan in
 * a table; the second never reaches the run: memfd_create is performed
 * here and the program gets an ordinary open of the memfd
 * (handlers/memfd.c). An entry whose lease cannot be tried (a file of
 * another owner, a filesystem without leases) is counted until the run
 * ends: an error towards stopping.
 */

void cr_fs_held_setup(struct cr_run *run)
{
	struct rlimit rl;
	size_t max = CR_FS_HELD_MAX;

	/* Each entry is one of our descriptors: at most a quarter of our
	 * limit, so the ledger can never starve the supervisor of fds (an
	 * entry that could not be opened would go uncounted). */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 4 < max)
		max = rl.rlim_cur / 4;
	run->fs->heldmax = max < 16 ? 16 : max;
	/* A lease break signals the lease holder; ours last microseconds,
	 * but SIGIO's default action is to terminate. */
	signal(SIGIO, SIG_IGN);
}

static void drop(struct cr_fsstate *fs, size_t i)
{
	close(fs->held[i].fd);
	fs->held[i] = fs->held[--fs->nheld];
}

/* Are we the only holder of the inode? 1 yes, 0 no, -1 cannot tell. */
static int sole(int fd)
{
	if (fcntl(fd, F_SETLEASE, F_WRLCK) == 0) {
		fcntl(fd, F_SETLEASE, F_UNLCK);
		return 1;
	}
	return errno == EAGAIN || errno == EBUSY ? 0 : -1;
}

static int reopen(int fd);

void cr_fs_held_prune(struct cr_run *run)
{
	struct cr_fsstate *fs = run->fs;

	for (size_t i = 0; fs && i < fs->nheld;) {
		struct cr_held *h = &fs->held[i];

		/* Kept as an O_PATH fd (its mode allowed no read when it
		 * came): an open file now, if the mode has changed since,
		 * so that a lease can tell when it is let go. */
		if (!h->provable) {
			int r = reopen(h->fd);

			if (r >= 0) {
				close(h->fd);
				h->fd = r;
				h->provable = true;
			}
		}
		if (h->provable && sole(h->fd) == 1)
			drop(fs, i);
		else
			i++;
	}
}

uint64_t cr_fs_held_bytes(struct cr_fsstate *fs, size_t most)
{
	size_t n = fs ? fs->nheld : 0;
	/* Removed directories still held count with the files (rmheld.c). */
	uint64_t total = cr_fs_rmheld_bytes(fs);

	if (!n)
		return total;
	if (most > n)
		most = n;
	for (size_t k = 0; k < most; k++) {
		struct cr_held *h = &fs->held[(fs->held_next + k) % n];
		struct stat st;

		/* Our own descriptor: fstat fails only if the machine does;
		 * the last figure stands. */
		if (fstat(h->fd, &st) == 0)
			h->bytes = st.st_nlink ? 0 :
				   (uint64_t)st.st_blocks * 512;
	}
	fs->held_next = (fs->held_next + most) % n;
	for (size_t i = 0; i < n; i++)
		total += fs->held[i].bytes;
	return total;
}

/* A fresh open file of the inode behind fd (never the same open file
 * description: the lease must tell it apart), read-only; -errno when the
 * mode allows no read. Never write-only: a writer of ours would make the
 * program's exec of the file ETXTBSY (found by a differential probe).
 * O_NONBLOCK: an open that would break someone's lease fails rather than
 * wait. */
static int reopen(int fd)
{
	char p[64];
	int r;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	r = open(p, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	return r >= 0 ? r : -errno;
}

int cr_fs_held_room(struct cr_run *run)
{
	struct cr_fsstate *fs = run->fs;

	if (fs->nheld < fs->heldmax)
		return 0;
	cr_fs_held_prune(run);
	if (fs->nheld < fs->heldmax)
		return 0;
	if (!run->ending)
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, cr_limit_name(CR_LIM_FILES),
			   "the files budget is spent: more than %zu files without a name held at once",
			   fs->heldmax);
	return -EDQUOT;
}

/* Enter h (its fd ours, handed over) unless its inode is there already. */
static int insert(struct cr_run *run, struct cr_held h)
{
	struct cr_fsstate *fs = run->fs;
	struct stat st;
	int r;

	for (size_t i = 0; i < fs->nheld; i++)
		if (fs->held[i].dev == h.dev && fs->held[i].ino == h.ino) {
			close(h.fd);
			return 0;
		}
	r = cr_fs_held_room(run);
	if (r) {
		close(h.fd);
		return r;
	}
	if (fs->nheld == fs->heldcap) {
		size_t cap = fs->heldcap ? fs->heldcap * 2 : 16;
		struct cr_held *g = realloc(fs->held, cap * sizeof(*g));

		if (!g) {
			close(h.fd);
			return -ENOMEM;
		}
		fs->held = g;
		fs->heldcap = cap;
	}
	h.bytes = fstat(h.fd, &st) == 0 && !st.st_nlink ?
		  (uint64_t)st.st_blocks * 512 : 0;
	fs->held[fs->nheld++] = h;
	cr_budget_rescan_soon(run);
	return 0;
}

int cr_fs_held_add(struct cr_run *run, int fd)
{
	struct cr_fsstate *fs = run->fs;
	struct cr_held h = { .provable = true };
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return 0;	/* only regular files hold data */
	for (size_t i = 0; i < fs->nheld; i++)
		if (fs->held[i].dev == st.st_dev && fs->held[i].ino == st.st_ino)
			return 0;
	h.dev = st.st_dev;
	h.ino = st.st_ino;
	h.fd = reopen(fd);
	if (h.fd < 0) {
		/* Cannot open it afresh (a mode without read, a lease of
		 * the program's): an O_PATH fd of our own, counted until
		 * its mode lets the prune open it (cr_fs_held_prune) or the
		 * run ends. Never a duplicate of fd, which may be the
		 * program's own open file: its locks and its write access
		 * would outlive the program's close (an O_TMPFILE made at
		 * mode 0 kept its flock and OFD locks and could not be run,
		 * ETXTBSY, for the rest of the run; found by a differential
		 * probe). */
		char p[64];

		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		h.fd = open(p, O_PATH | O_CLOEXEC);
		h.provable = false;
		if (h.fd < 0)
			return -errno;
	} else {
		int alone = sole(h.fd);

		if (alone == 1) {
			close(h.fd);	/* nobody else holds it: gone now */
			return 0;
		}
		h.provable = alone == 0;
	}
	return insert(run, h);
}

/*
 * Around an unlink (or a rename over a file) that removes a file's last
 * name. The common case, a file nobody else holds open, is decided before
 * the call: our own read-only open of the file takes a write lease, which
 * the kernel grants only while no other open file of the inode exists
 * anywhere. Held through the unlink, the lease also reports any open
 * attempted meanwhile (it starts a lease break: F_GETLEASE then no longer
 * answers F_WRLCK), so a lease still whole afterwards proves the file died
 * with our close, and nothing goes to the ledger. Four system calls
 * (open, lease, lease query, close) where the ledger's own check after
 * the call costs seven. Names do not move under us meanwhile: the run's
 * renames and unlinks are all performed by this loop, one at a time.
 * A file we cannot open for reading, or whose lease we may not take (not
 * ours), goes the ledger's way: an O_PATH fd, judged after the call.
 */
int cr_fs_held_before_unlink(struct cr_run *run, const struct cr_fsres *res,
			     struct cr_fs_keep *keep)
{
	int fd;

	keep->fd = -1;
	keep->lease = -1;
	keep->own = false;
	if (!res->exists || !S_ISREG(res->st.st_mode) || res->st.st_nlink != 1)
		return 0;
	keep->dev = res->st.st_dev;
	keep->ino = res->st.st_ino;
	/* O_NONBLOCK: a lease of the program's makes this fail at once
	 * (EWOULDBLOCK), never wait; the name is a regular file's. */
	fd = openat(res->dirfd, res->name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW |
		    O_NOCTTY | O_CLOEXEC);
	if (fd >= 0) {
		keep->fd = fd;
		keep->own = true;
		if (fcntl(fd, F_SETLEASE, F_WRLCK) == 0)
			keep->lease = 1;
		else if (errno == EAGAIN || errno == EBUSY)
			keep->lease = 0;	/* others hold it: provable */
		return 0;
	}
	if (errno == EMFILE || errno == ENFILE) {
		if (cr_budget_fds_short(run, errno, "keep an unlinked file measurable"))
			return -ENOMEM;
		return -errno;
	}
	keep->fd = openat(res->dirfd, res->name,
			  O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (keep->fd >= 0)
		return 0;
	/* Without it the file would leave the ledger's sight: the call is
	 * refused (and out of descriptors, the run ends). */
	if (cr_budget_fds_short(run, errno, "keep an unlinked file measurable"))
		return -ENOMEM;
	return errno == ENOENT ? 0 : -errno;
}

void cr_fs_held_after_unlink(struct cr_run *run, struct cr_fs_keep *keep,
			     bool done)
{
	int rc = 0, fd = keep->fd;

	keep->fd = -1;
	if (fd < 0)
		return;
	if (!done) {
		close(fd);	/* the lease, if any, goes with it */
		return;
	}
	if (keep->lease == 1 && fcntl(fd, F_GETLEASE) == F_WRLCK) {
		close(fd);	/* nobody else ever held it: freed now */
		return;
	}
	if (keep->lease == 1)
		fcntl(fd, F_SETLEASE, F_UNLCK);	/* let the opener through */
	if (keep->own) {
		/* Our own open file of the inode: the ledger's entry as is. */
		struct cr_held h = { .dev = keep->dev, .ino = keep->ino,
				     .fd = fd, .provable = keep->lease >= 0 };

		rc = insert(run, h);
	} else {
		rc = cr_fs_held_add(run, fd);
		close(fd);
	}
	/* The name is gone and the ledger has no entry: fail closed. */
	if (rc && !cr_budget_fds_short(run, rc, "keep an unlinked file measurable") &&
	    !run->ending)
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot keep an unlinked file measurable for the disk budget: %s",
			   strerror(-rc));
}

void cr_fs_held_finish(struct cr_fsstate *fs)
{
	while (fs->nheld)
		drop(fs, fs->nheld - 1);
	free(fs->held);
	fs->held = NULL;
	fs->heldcap = 0;
}
