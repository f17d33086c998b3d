/* tests/progs/walk_dodge.c: keeps a big file out of every pass of the disk
 * walk by moving it behind the walker, which inotify shows.
 *
 *   walk_dodge MODE MIB SECONDS [NFILL [XFILL]]
 *
 * In the cwd: three directories, called P, Q and R in the order the cwd's
 * listing gives them (the walk's order); Q holds NFILL empty files (4500
 * by default), so the walk spans ticks there. When the walker opens Q, P
 * is behind it; when it closes R, its pass is over. MODE says what is
 * done at those two moments:
 *   dir     a directory X holding the file goes R/X -> P/X, then back
 *   file    the file itself goes R/blob -> P/blob, then back
 *   link    the same with link() and unlink() instead of rename()
 *   create  the file is made (written) as P/blob, then removed
 * In dir mode X also holds XFILL empty files (0 by default). The file
 * (MIB MiB, written: an allocation is charged as it is made, so only data
 * written behind the walker can hide) is made the first time P is behind
 * the walker. After SECONDS it prints "held MIB MiB, N passes dodged",
 * removes the file (so that no last measurement sees it) and exits 0.
 * An entry is made and removed in Q and R every 20 ms: the walk does not
 * list again a directory whose entries stood still. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long mib;
static char P[8], Q[8], R[8];

/* An entry made and removed in dir. */
static int tick(const char *dir)
{
	char t[32];

	snprintf(t, sizeof(t), "%s/.t", dir);
	return mkdir(t, 0700) < 0 ? -1 : rmdir(t);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void make_blob(const char *path)
{
	static char chunk[1 << 20];
	int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0644);

	if (fd < 0)
		die(path);
	memset(chunk, 'b', sizeof(chunk));
	for (long i = 0; i < mib; i++)
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			die(path);
	close(fd);
}

static void move(const char *mode, const char *from, const char *to)
{
	if (!strcmp(mode, "link")) {
		if (link(from, to) < 0 || unlink(from) < 0)
			die("link");
	} else if (rename(from, to) < 0) {
		die("rename");
	}
}

/* Learn the walk's order of the three directories. */
static void layout(int nfill)
{
	const char *names[3] = { "d_a", "d_b", "d_c" };
	char *order[3] = { P, Q, R };
	struct dirent *de;
	char path[64];
	int k = 0;
	DIR *d;

	for (int i = 0; i < 3; i++)
		if (mkdir(names[i], 0755) < 0)
			die("mkdir");
	d = opendir(".");
	if (!d)
		die("opendir");
	while ((de = readdir(d)) && k < 3)
		for (int i = 0; i < 3; i++)
			if (!strcmp(de->d_name, names[i]))
				strcpy(order[k++], names[i]);
	closedir(d);
	if (k != 3)
		die("layout");
	for (int i = 0; i < nfill; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%d", Q, i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			die(path);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	const char *mode;
	double secs, t0;
	int nfill, xfill, in, wq, wr, passes = 0;
	bool behind = false, made = false;
	char ahead_p[64], behind_p[64], buf[4096];
	struct stat st;

	if (argc < 4) {
		fprintf(stderr, "usage: walk_dodge dir|file|link|create MIB SECONDS [NFILL]\n");
		return 2;
	}
	mode = argv[1];
	mib = atol(argv[2]);
	secs = atof(argv[3]);
	nfill = argc > 4 ? atoi(argv[4]) : 4500;
	xfill = argc > 5 ? atoi(argv[5]) : 0;
	layout(nfill);
	if (!strcmp(mode, "dir")) {
		snprintf(ahead_p, sizeof(ahead_p), "%s/X", R);
		snprintf(behind_p, sizeof(behind_p), "%s/X", P);
		if (mkdir(ahead_p, 0755) < 0)
			die("mkdir X");
		for (int i = 0; i < xfill; i++) {
			char f[80];
			int fd;

			snprintf(f, sizeof(f), "%s/f%d", ahead_p, i);
			fd = open(f, O_CREAT | O_WRONLY, 0644);
			if (fd < 0)
				die(f);
			close(fd);
		}
	} else {
		snprintf(ahead_p, sizeof(ahead_p), "%s/blob", R);
		snprintf(behind_p, sizeof(behind_p), "%s/blob", P);
	}
	in = inotify_init1(IN_CLOEXEC);
	if (in < 0)
		die("inotify_init1");
	wq = inotify_add_watch(in, Q, IN_OPEN);
	wr = inotify_add_watch(in, R, IN_CLOSE_NOWRITE);
	if (wq < 0 || wr < 0)
		die("inotify_add_watch");
	t0 = now();
	while (now() - t0 < secs) {
		struct pollfd pf = { in, POLLIN, 0 };
		ssize_t n;

		/* The walk lists a directory again only when an entry was
		 * made, removed or moved there (tracer/budget/listcache.c):
		 * Q's and R's are kept changing, so the walker is seen at
		 * them every pass. */
		if (tick(Q) < 0 || tick(R) < 0)
			die("tick");
		if (poll(&pf, 1, 20) <= 0)
			continue;
		n = read(in, buf, sizeof(buf));
		if (n <= 0)
			die("read");
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->len)	/* an entry inside, not the directory */
				continue;
			if (ev->wd == wq && (ev->mask & IN_OPEN) && !behind) {
				/* The walker is in Q: P is behind it. */
				if (!strcmp(mode, "create")) {
					make_blob(behind_p);
				} else if (!made) {
					char blob[80];

					snprintf(blob, sizeof(blob), "%s%s",
						 behind_p, strcmp(mode, "dir") ?
						 "" : "/blob");
					if (!strcmp(mode, "dir"))
						move(mode, ahead_p, behind_p);
					make_blob(blob);
				} else {
					move(mode, ahead_p, behind_p);
				}
				made = behind = true;
				passes++;
			} else if (ev->wd == wr && (ev->mask & IN_CLOSE_NOWRITE) &&
				   behind) {
				/* The pass is over: out of the way of the
				 * next one's walk of P. */
				if (!strcmp(mode, "create")) {
					if (unlink(behind_p) < 0)
						die("unlink");
				} else {
					move(mode, behind_p, ahead_p);
				}
				behind = false;
			}
		}
	}
	printf("held %ld MiB, %d passes dodged\n", made ? mib : 0, passes);
	fflush(stdout);
	/* Leave nothing for the last measurement. */
	if (!strcmp(mode, "dir")) {
		char blob[80];

		snprintf(blob, sizeof(blob), "%s/blob",
			 behind ? behind_p : ahead_p);
		unlink(blob);
	} else if (stat(behind ? behind_p : ahead_p, &st) == 0) {
		unlink(behind ? behind_p : ahead_p);
	}
	return 0;
}
