/* tracer/fs/pty.c: the run's own pseudo-terminals: which /dev/pts indices it
 * allocated, and the master a task of the run holds for one of them. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <termios.h>

#include "fs.h"
#include "../budget/budget.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/*
 * A /dev/pts/N is the run's when the supervisor opened its master for the
 * run (an index recorded here) AND a task of the run still holds that
 * master. The first part excludes a master inherited from the caller; the
 * second a number freed and reused since by another terminal of the user.
 * The slave is never opened by its path: TIOCGPTPEER on the master itself
 * names exactly that pty, so no path or reused number can intervene.
 *
 * The cap (CR_PTY_MAX) counts the indices the run still keeps allocated,
 * and a pty stays allocated while any file of it lives (a slave alone
 * keeps it), wherever the file is: in a fd table, in flight in a unix
 * socket's queue, or held by a thread blocked in poll() after its fd was
 * closed. Fd tables show only the first, so each master and slave corral
 * opens for the run is added to an epoll set of the supervisor's with no
 * reference kept: the kernel drops an entry when its file is freed, and
 * the set's fdinfo lists the living ones with the index as their data.
 */

bool cr_fs_pty_allocated(const struct cr_run *run, unsigned idx)
{
	const struct cr_fsstate *fs = run->fs;

	for (size_t i = 0; i < fs->nptys; i++)
		if (fs->ptys[i] == idx)
			return true;
	return false;
}

int cr_fs_pty_note(struct cr_run *run, int fd, int slave_of)
{
	struct cr_fsstate *fs = run->fs;
	unsigned idx, *nv;
	int rc;

	if (slave_of >= 0)
		idx = (unsigned)slave_of;	/* TIOCGPTN is the master's */
	else if (ioctl(fd, TIOCGPTN, &idx) < 0)
		return -errno;
	rc = cr_weak_add(&fs->pty_weak, fd, idx);
	if (rc < 0)
		return rc;
	if (cr_fs_pty_allocated(run, idx))
		return 0;
	nv = realloc(fs->ptys, (fs->nptys + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	fs->ptys = nv;
	nv[fs->nptys++] = idx;
	return 0;
}

/* Master of pty got seen: marked in held (one flag per fs->ptys entry);
 * -EEXIST once every one is, else -ENOENT. */
static int note_held(const struct cr_fsstate *fs, unsigned got, bool *held)
{
	bool all = true;

	for (size_t i = 0; i < fs->nptys; i++) {
		if (fs->ptys[i] == got)
			held[i] = true;
		all = all && held[i];
	}
	return all ? -EEXIST : -ENOENT;
}

/* A master of idx among one fd table's fds (the task's own: a thread made
 * without CLONE_FILES has one apart from its leader's): masters are the
 * fds holding the ptmx node (character device 5:2; a slave is 136:N),
 * looked at by statx, which costs the same however deep the file's path
 * (a readlink builds it). -EAGAIN once the call's share of searching is
 * spent (cr_tables_step). Called marked slow (the callers hold the mark
 * across every table, so the watchdog judges the budgets if the search
 * lasts); a candidate's copy (the task table) is taken outside the mark.
 * *at: the fd number found. With held set,
 * every master of the run's ptys is noted there instead, none returned;
 * -EEXIST once each of them is. */
static int scan_process(struct cr_run *run, const struct cr_task *t,
			unsigned idx, int *at, bool *held)
{
	char dir[32];
	struct dirent *d;
	DIR *dp;
	int dfd, found = -ENOENT;

	snprintf(dir, sizeof(dir), "%d/fd", t->tid);
	dfd = openat(run->fs->proc_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -EACCES;
	dp = fdopendir(dfd);
	if (!dp) {
		close(dfd);
		return -ENOENT;
	}
	while (found == -ENOENT && (d = readdir(dp))) {
		struct stat st;
		unsigned got;
		int m;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		if (!cr_tables_step(run)) {
			found = -EAGAIN;
			break;
		}
		/* Attributes as cached: no network filesystem is asked. */
		if (cr_quiet_fstatat(dirfd(dp), d->d_name, &st,
				     AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT) < 0 ||
		    !S_ISCHR(st.st_mode) || major(st.st_rdev) != 5 ||
		    minor(st.st_rdev) != 2)
			continue;
		cr_slow_end();
		m = cr_tasks_getfd(run, t->tid, atoi(d->d_name));
		cr_slow_begin();
		if (m < 0) {
			if (m != -EBADF && m != -ESRCH)
				found = -EACCES;	/* held, unreadable */
			if (found == -EACCES)
				break;
			continue;
		}
		if (ioctl(m, TIOCGPTN, &got) == 0) {
			if (held) {
				found = note_held(run->fs, got, held);
			} else if (got == idx) {
				found = m;
				*at = atoi(d->d_name);
				continue;
			}
		}
		close(m);
	}
	closedir(dp);
	return found;
}

struct live_marks {
	const struct cr_fsstate *fs;
	bool *live;
};

static void mark_live(void *arg, uint64_t data, uint64_t ino)
{
	struct live_marks *m = arg;

	(void)ino;
	for (size_t i = 0; i < m->fs->nptys; i++)
		if (m->fs->ptys[i] == data)
			m->live[i] = true;
}

/* Forget the indices no file corral opened for the run keeps any more. */
static void prune(struct cr_run *run)
{
	struct cr_fsstate *fs = run->fs;
	bool *live = calloc(fs->nptys ? fs->nptys : 1, sizeof(*live));
	size_t n = 0;

	if (!live)
		return;
	if (fs->pty_weak < 0 ||
	    cr_weak_each(fs->pty_weak, mark_live,
			 &(struct live_marks){ fs, live }) < 0) {
		free(live);
		return;
	}
	for (size_t i = 0; i < fs->nptys; i++)
		if (live[i])
			fs->ptys[n++] = fs->ptys[i];
	fs->nptys = n;
	free(live);
}

/* At the cap, the indices no file keeps any more are forgotten first: a
 * read of the weak set, a line per pty file corral opened for the run,
 * and the program can make hundreds of thousands (slaves by TIOCGPTPEER,
 * held by its processes): 0.2-0.36 s a read with 304 000, uncharged, at
 * every open of /dev/ptmx (found by a probing session). Its CPU is the
 * run's, and one dearer than CR_PTY_PRUNE_FREE_US is made again only
 * after CR_PTY_PRUNE_IDLE times its cost: the cap stands meanwhile. */
#define CR_PTY_PRUNE_FREE_US 2000
#define CR_PTY_PRUNE_IDLE 30

bool cr_fs_pty_may_open(struct cr_run *run)
{
	struct cr_fsstate *fs = run->fs;
	uint64_t t0, cost;

	if (fs->nptys < CR_PTY_MAX)
		return true;
	if (cr_now_ns() < fs->pty_prune_next_ns)
		return false;
	t0 = cr_thread_cpu_ns();
	prune(run);
	cost = cr_thread_cpu_ns() - t0;
	cr_budget_charge_cpu(run, cost);
	fs->pty_prune_next_ns = cost > CR_PTY_PRUNE_FREE_US * 1000ull ?
				cr_now_ns() + cost * CR_PTY_PRUNE_IDLE : 0;
	return fs->nptys < CR_PTY_MAX;
}

/* Where the master of idx was found last: asked first, as a program
 * keeps its master at one fd of one process. Any master of idx that a
 * task of the run holds will do. */
static int from_hint(struct cr_run *run, unsigned idx)
{
	const struct cr_fsstate *fs = run->fs;
	unsigned got;

	for (size_t i = 0; i < CR_ARRAY_SIZE(fs->pty_hint); i++) {
		int m;

		if (!fs->pty_hint[i].tid || fs->pty_hint[i].idx != idx)
			continue;
		m = cr_tasks_getfd(run, fs->pty_hint[i].tid,
				   fs->pty_hint[i].fd);
		if (m < 0)
			return -ENOENT;
		if (ioctl(m, TIOCGPTN, &got) == 0 && got == idx)
			return m;
		close(m);
		return -ENOENT;
	}
	return -ENOENT;
}

/* The hint of idx, or the slot to take for it. */
static struct cr_pty_hint *hint_slot(struct cr_fsstate *fs, unsigned idx)
{
	struct cr_pty_hint *h;

	for (size_t i = 0; i < CR_ARRAY_SIZE(fs->pty_hint); i++)
		if (fs->pty_hint[i].tid && fs->pty_hint[i].idx == idx)
			return &fs->pty_hint[i];
	h = &fs->pty_hint[fs->pty_hint_next];
	fs->pty_hint_next = (fs->pty_hint_next + 1) %
			    CR_ARRAY_SIZE(fs->pty_hint);
	return h;
}

int cr_fs_pty_master(struct cr_run *run, unsigned idx)
{
	struct cr_fsstate *fs = run->fs;
	struct cr_tasks *t = &run->tasks;
	const struct cr_task *me;
	uint64_t t0;
	int m = -ENOENT, at = -1;

	if (!cr_fs_pty_allocated(run, idx))
		return -ENOENT;
	if ((m = from_hint(run, idx)) >= 0)
		return m;
	/* The caller's table first (the process that made the pty, or its
	 * child, holds the master there), then every other. */
	me = run->notif ? cr_tasks_find(t, (pid_t)run->notif->pid) : NULL;
	t0 = cr_thread_cpu_ns();
	cr_slow_begin();
	for (size_t i = 0; i <= t->cap && m != -EAGAIN; i++) {
		const struct cr_task *k = i ? &t->slots[i - 1] : me;

		if (!k || !k->tid || (i && (k == me || !cr_tasks_own_table(k))))
			continue;
		m = scan_process(run, k, idx, &at, NULL);
		if (m >= 0) {
			cr_slow_end();
			*hint_slot(fs, idx) = (struct cr_pty_hint){
				.idx = idx, .tid = k->tid, .fd = at };
			break;
		}
	}
	if (m < 0)
		cr_slow_end();
	/* The search is the program's doing (an open, a stat, a listing of
	 * /dev/pts): its CPU is the run's. Spent, it found nothing: the pty
	 * is not the run's, as for a master no task holds. */
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return m >= 0 ? m : -ENOENT;
}

/*
 * A listing of /dev/pts keeps the run's ptys whose master a task holds:
 * one search of every table for all of them, made once per notified call
 * (getdents), not one per entry. One per entry shared the call's share
 * of searching: with 60 ptys and 2 000 descriptors, the share was spent
 * a third of the way and the rest left out (found by a probing session).
 */
bool cr_fs_pty_listed(struct cr_run *run, unsigned idx)
{
	struct cr_fsstate *fs = run->fs;
	struct cr_tasks *t = &run->tasks;
	size_t i;
	uint64_t t0;
	int m = -ENOENT, at;

	for (i = 0; i < fs->nptys && fs->ptys[i] != idx; i++)
		;
	if (i == fs->nptys)
		return false;
	if (fs->pty_held_gen != run->notifications || !fs->pty_held ||
	    fs->npty_held != fs->nptys) {
		bool *h = calloc(fs->nptys ? fs->nptys : 1, sizeof(*h));

		if (!h)
			return false;
		free(fs->pty_held);
		fs->pty_held = h;
		fs->npty_held = fs->nptys;
		fs->pty_held_gen = run->notifications;
		t0 = cr_thread_cpu_ns();
		cr_slow_begin();
		for (size_t s = 0; s < t->cap && m == -ENOENT; s++) {
			const struct cr_task *k = &t->slots[s];

			if (!k->tid || !cr_tasks_own_table(k))
				continue;
			m = scan_process(run, k, idx, &at, fs->pty_held);
			if (m == -EACCES)
				m = -ENOENT;	/* that table only */
		}
		cr_slow_end();
		cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	}
	return fs->pty_held[i];
}

/* The kernel's O_LARGEFILE (glibc's is 0 on x86_64: implied there). */
#define KERNEL_O_LARGEFILE 0100000

int cr_fs_pty_open_slave(struct cr_run *run, unsigned idx, int flags)
{
	int m = cr_fs_pty_master(run, idx), s;

	if (m < 0)
		return m;
	/* The slave's own mode, as an open by its path asks it: TIOCGPTPEER
	 * opens without that check (a slave chmod-ed 0 opened read-write,
	 * found by a differential probing session). Asked of an O_PATH
	 * peer, which opens nothing (no opener more, no hangup after). An
	 * O_PATH open asks nothing of the mode (it was EACCES for a slave
	 * at 0, found by a probing session). */
	if (!(flags & O_PATH)) {
		int want = ((flags & O_ACCMODE) != O_WRONLY ? R_OK : 0) |
			   ((flags & O_ACCMODE) != O_RDONLY ? W_OK : 0);
		int p = ioctl(m, TIOCGPTPEER, O_PATH | O_NOCTTY | O_CLOEXEC);
		int rc = p < 0 ? -1 :
			 (int)syscall(SYS_faccessat2, p, "", want,
				      AT_EACCESS | AT_EMPTY_PATH);
		int e = errno;

		if (p >= 0)
			close(p);
		if (rc < 0) {
			close(m);
			return -e;
		}
	}
	/* O_NOCTTY always: opened by the supervisor, the slave must never
	 * become the supervisor's controlling terminal. */
	/* Without O_CLOEXEC, which the ioctl would keep in the file's
	 * status flags where an open strips it; our copy is marked apart.
	 * The status flags an open keeps (O_APPEND, O_SYNC...), and the
	 * O_LARGEFILE an open adds on 64-bit, which the ioctl does not:
	 * F_GETFL of a slave opened by its path answered 02 where the
	 * kernel's says 0100002 (found by a differential probing session). */
	s = ioctl(m, TIOCGPTPEER, (flags & ~(O_CLOEXEC | O_CREAT | O_EXCL |
					     O_TRUNC | O_NOFOLLOW |
					     O_DIRECTORY | O_PATH)) |
		  O_NOCTTY | KERNEL_O_LARGEFILE);
	if (s >= 0 && fcntl(s, F_SETFD, FD_CLOEXEC) < 0) {
		close(s);
		s = -1;
	}
	s = s < 0 ? -errno : s;
	close(m);
	if (s >= 0) {	/* a slave alone keeps the pty allocated */
		int rc = cr_fs_pty_note(run, s, (int)idx);

		if (rc < 0) {
			close(s);
			return rc;
		}
	}
	return s;
}

#define DEVPTS_MAGIC 0x1cd1

bool cr_fs_pty_is_runs(struct cr_run *run, int fd)
{
	struct stat a, b;
	struct statfs sf;
	int m, s;
	bool same;

	if (fstat(fd, &a) < 0 || !S_ISCHR(a.st_mode) ||
	    major(a.st_rdev) != 136 || fstatfs(fd, &sf) < 0 ||
	    sf.f_type != DEVPTS_MAGIC)
		return false;
	m = cr_fs_pty_master(run, minor(a.st_rdev));
	if (m < 0)
		return false;
	/* O_PATH: the peer is looked at, not opened (no opener more). */
	s = ioctl(m, TIOCGPTPEER, O_PATH | O_NOCTTY | O_CLOEXEC);
	close(m);
	if (s < 0)
		return false;
	same = fstat(s, &b) == 0 && b.st_dev == a.st_dev &&
	       b.st_ino == a.st_ino;
	close(s);
	return same;
}

bool cr_fs_pty_path(const struct cr_fsres *res)
{
	return !strcmp(res->path, "/dev/tty") || !strcmp(res->path, "/dev/ptmx") ||
	       (res->plen > 9 && !memcmp(res->path, "/dev/pts/", 9));
}

int cr_fs_pty_ctty(struct cr_run *run, pid_t tid)
{
	char path[32], buf[1024], *p;
	unsigned long tty;
	unsigned maj, min;

	snprintf(path, sizeof(path), "%d/stat", tid);
	if (cr_read_small(run->fs->proc_fd, path, buf, sizeof(buf)) < 0)
		return -ENXIO;
	/* Field 7, tty_nr, after the command name (which may hold ')'). */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %lu", &tty) != 1 || !tty)
		return -ENXIO;
	maj = major((dev_t)tty);
	min = minor((dev_t)tty);
	/* Unix98 pty slaves are 136:<index> (20-bit minors). */
	if (maj != 136 || !cr_fs_pty_allocated(run, min))
		return -ENXIO;
	return (int)min;
}
