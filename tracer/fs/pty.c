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
#include <sys/sysmacros.h>
#include <termios.h>

#include "fs.h"

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
 */

bool cr_fs_pty_allocated(const struct cr_run *run, unsigned idx)
{
	const struct cr_fsstate *fs = run->fs;

	for (size_t i = 0; i < fs->nptys; i++)
		if (fs->ptys[i] == idx)
			return true;
	return false;
}

void cr_fs_pty_note(struct cr_run *run, int master)
{
	struct cr_fsstate *fs = run->fs;
	unsigned idx, *nv;

	if (ioctl(master, TIOCGPTN, &idx) < 0 || cr_fs_pty_allocated(run, idx))
		return;
	nv = realloc(fs->ptys, (fs->nptys + 1) * sizeof(*nv));
	if (!nv)
		return;		/* unknown: its slave stays refused (closed) */
	fs->ptys = nv;
	nv[fs->nptys++] = idx;
}

/* A master of idx among one fd table's fds (the task's own: a thread made
 * without CLONE_FILES has one apart from its leader's): masters are the
 * fds whose link names the ptmx node (a slave's names /dev/pts/N). */
static int scan_process(struct cr_run *run, const struct cr_task *t,
			unsigned idx, bool *held)
{
	char dir[32], link[64];
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
	while (found < 0 && (d = readdir(dp))) {
		ssize_t n;
		unsigned got;
		int m;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		n = readlinkat(dirfd(dp), d->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strstr(link, "ptmx"))
			continue;
		m = cr_tasks_getfd(run, t->tid, atoi(d->d_name));
		if (m < 0) {
			if (m != -EBADF && m != -ESRCH)
				found = -EACCES;	/* held, unreadable */
			if (found == -EACCES)
				break;
			continue;
		}
		if (ioctl(m, TIOCGPTN, &got) == 0 && got == idx && !held) {
			found = m;
			continue;
		}
		if (held && ioctl(m, TIOCGPTN, &got) == 0)
			for (size_t i = 0; i < run->fs->nptys; i++)
				if (run->fs->ptys[i] == got)
					held[i] = true;
		close(m);
	}
	closedir(dp);
	return found;
}

/* Forget the indices no task of the run holds a master of any more. */
static void prune(struct cr_run *run)
{
	struct cr_fsstate *fs = run->fs;
	struct cr_tasks *t = &run->tasks;
	bool *held = calloc(fs->nptys ? fs->nptys : 1, sizeof(*held));
	size_t n = 0;

	if (!held)
		return;
	for (size_t i = 0; i < t->cap; i++) {
		const struct cr_task *k = &t->slots[i];

		/* A table corral cannot read may hold any of them: keep
		 * every index (the cap errs towards refusing). */
		if (k->tid && cr_tasks_own_table(k) &&
		    scan_process(run, k, UINT_MAX, held) == -EACCES) {
			free(held);
			return;
		}
	}
	for (size_t i = 0; i < fs->nptys; i++)
		if (held[i])
			fs->ptys[n++] = fs->ptys[i];
	fs->nptys = n;
	free(held);
}

bool cr_fs_pty_may_open(struct cr_run *run)
{
	if (run->fs->nptys < CR_PTY_MAX)
		return true;
	prune(run);
	return run->fs->nptys < CR_PTY_MAX;
}

int cr_fs_pty_master(struct cr_run *run, unsigned idx)
{
	struct cr_tasks *t = &run->tasks;

	if (!cr_fs_pty_allocated(run, idx))
		return -ENOENT;
	for (size_t i = 0; i < t->cap; i++) {
		const struct cr_task *k = &t->slots[i];
		int m;

		if (!k->tid || !cr_tasks_own_table(k))
			continue;
		m = scan_process(run, k, idx, NULL);
		if (m >= 0)
			return m;
	}
	return -ENOENT;
}

int cr_fs_pty_open_slave(struct cr_run *run, unsigned idx, int flags)
{
	int m = cr_fs_pty_master(run, idx), s;

	if (m < 0)
		return m;
	/* O_NOCTTY always: opened by the supervisor, the slave must never
	 * become the supervisor's controlling terminal. */
	s = ioctl(m, TIOCGPTPEER, (flags & (O_ACCMODE | O_NONBLOCK)) |
		  O_NOCTTY | O_CLOEXEC);
	s = s < 0 ? -errno : s;
	close(m);
	return s;
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
