/* tests/progs/race_doors.c: probes of the filesystem area that race the supervisor, one
 * subcommand per door tried.
 *
 *   race_doors dirfd-race NAME SECONDS [write]
 *	A dirfd swapped under the resolver. Holds the workspace (".") and
 *	its parent ("..": an ancestor of a root, which opens read-only for
 *	a filtered listing). One thread dup2()s the two onto one fd number
 *	as fast as it can; the main thread calls openat(that fd, NAME)
 *	(read-only, or O_WRONLY|O_CREAT|O_TRUNC with "write") in a loop;
 *	with "unlink", unlinkat(that fd, NAME) instead. An absolute NAME
 *	swaps the workspace with "/" instead of its parent, and is walked
 *	relative to it: any file of the user (e.g. /etc/passwd-like files
 *	outside the read roots).
 *	NAME exists beside the workspace, not in it. A resolver that reads
 *	the fd's path and then opens the fd again judges one directory and
 *	walks another: NAME in the parent is opened as if it were in the
 *	workspace.
 *
 *   race_doors cwd-race NAME SECONDS [write]
 *	The same with the cwd: the racing thread fchdir()s between the
 *	workspace and its parent (fchdir is not notified); the main thread
 *	opens "./NAME" ("./" keeps the path off the one-call fast path).
 *
 * A fifth argument "norace" (after "read" or "write") leaves the fd or
 * cwd on the parent with no flipper: the control, which must be refused.
 *
 *   race_doors pipe-swap FILE SECONDS [chmod|truncate]
 *	A pipe's /proc/self/fd/N link swapped for a read-only fd. FILE is in
 *	a read root (owned by the run's uid, so only the policy stands in
 *	the way). One thread dup2()s a pipe and a read-only fd of FILE onto
 *	one number; the main thread opens /proc/self/fd/N O_RDWR (a pipe of
 *	the run may be reopened so). If the resolver saw the pipe and the
 *	open followed the link to FILE, FILE is now open for writing, and a
 *	line is appended to it. FILE "-" is fd 0 as the caller gave it (a
 *	file redirected read-only from outside every root). With "utimes", "chown", "chmod" or "truncate",
 *	utimensat(mtime 1970-01-02), chown(own uid, own gid), chmod(0666)
 *	or truncate(0) by that
 *	path instead, checked by fstat of FILE. With "fifo", FILE is a FIFO
 *	(held open for reading, so a writer opens at once) and the open is
 *	a blocking O_WRONLY one: the FIFO path, where corral reopens its own
 *	O_PATH fd of the FIFO it checked.
 *
 *   race_doors chdir-race DIR SECONDS
 *	chdir is checked and then CONTINUEd: the kernel reads the path
 *	again. One thread flips a path buffer between "." and DIR (outside
 *	every root); the main thread chdir()s to it and, on success, asks
 *	getcwd() where it landed (then fchdir()s back). A landing in DIR
 *	says DIR exists (a missing DIR never lands), where every notified
 *	call answers ENOENT for both. Prints "tries=N landed=L cwd=...".
 *
 *   race_doors autogroup NICE
 *	Writes NICE to /proc/self/autogroup. The autogroup belongs to the
 *	session, which the run shares with corral and the caller's shell:
 *	a renice of every process of that session, outside the run too,
 *	and it outlives the run. Prints the line before and after.
 *
 *   race_doors dnotify DIR SECONDS
 *	fcntl(F_NOTIFY) (dnotify) on a directory the run may open for a
 *	filtered listing (/dev/pts, an ancestor of a root such as the
 *	workspace's parent): the kernel then signals every entry created,
 *	removed or changed in it, outside the run too. Counts the signals
 *	for SECONDS and prints "events=N" (and the fd's siginfo band).
 *
 *   race_doors pipe-block [spin]
 *	Reopens the read end of a pipe whose write ends are all closed,
 *	through /proc/self/fd/N, O_RDONLY and blocking: a FIFO open, which
 *	waits for a writer. The magic link is not seen as a FIFO (its lstat
 *	is a link), so the open is made on the supervisor's loop thread.
 *	With "spin", a child burns CPU meanwhile (to show no budget fires).
 *
 *   race_doors fxattr DIR
 *	An ancestor of a root (DIR, e.g. "..") opens read-only for a
 *	filtered listing; its attributes are "not shown" by path
 *	(listxattr answers none). flistxattr/fgetxattr on the fd are not
 *	notified: prints what each form answers.
 *
 *   race_doors fifo-stall [spin|fill]
 *	The pipe-swap race with a FIFO of the workspace (no writer, opened
 *	O_RDONLY|O_NONBLOCK) as the other fd: the resolver sees a pipe and
 *	opens inline, the open follows the link to the FIFO and waits for
 *	a writer, on the supervisor's loop thread. With "spin", a child
 *	burns CPU meanwhile; with "fill", it first writes 256 MiB into the
 *	workspace at ~20 MiB/s (then spins). A third thread opens the FIFO for writing
 *	(non-blocking) every millisecond, releasing the opens the supervisor
 *	makes legitimately on its FIFO worker. Prints every open that took
 *	over 0.5 s; runs until the run ends.
 *
 * The races print one line: "tries=N got=G refused=R enoent=E other=O", and
 * with a read, the first 60 bytes of what was opened when got > 0 (the
 * test's own planted marker file, never a real secret).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static atomic_int done;
static int fd_a, fd_b, slot = 200;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *dup_flipper(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		dup2(fd_b, slot);
		dup2(fd_a, slot);
	}
	return NULL;
}

static void *cwd_flipper(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		fchdir(fd_b);
		fchdir(fd_a);
	}
	return NULL;
}

static int race(const char *mode, const char *name, double secs, int wr, int norace)
{
	char path[4096], buf[4200];
	long tries = 0, got = 0, refused = 0, enoent = 0, other = 0;
	pthread_t t;
	double end;
	int cwd = !strcmp(mode, "cwd-race");

	t = 0;

	fd_a = open(".", O_RDONLY | O_DIRECTORY);
	/* An absolute NAME: the other fd is "/" (an ancestor of every
	 * root) and NAME is walked relative to it. */
	fd_b = open(name[0] == '/' ? "/" : "..", O_RDONLY | O_DIRECTORY);
	if (name[0] == '/')
		name++;
	if (fd_a < 0 || fd_b < 0) {
		printf("setup failed: %s\n", strerror(errno));
		return 2;
	}
	dup2(fd_a, slot);
	snprintf(path, sizeof(path), cwd ? "./%s" : "%s", name);
	if (norace) {
		/* No flipper: the slot holds the parent all along (the
		 * control: the resolver refuses this). */
		dup2(fd_b, slot);
		if (cwd)
			fchdir(fd_b);
	} else
		pthread_create(&t, NULL, cwd ? cwd_flipper : dup_flipper, NULL);
	buf[0] = 0;
	end = now() + secs;
	while (now() < end && got == 0) {
		if (wr == 2) {
			/* unlink: NAME is never in the workspace, so a
			 * success removed the one beside it. */
			int r = cwd ? unlink(path) : unlinkat(slot, path, 0);

			tries++;
			if (!r) {
				got++;
				snprintf(buf, sizeof(buf), "unlinked %s", name);
			} else if (errno == ENOENT)
				enoent++;
			else if (errno == EACCES || errno == EPERM)
				refused++;
			else
				other++;
			continue;
		}
		int fd = cwd ? open(path, wr ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0644) :
			 openat(slot, path, wr ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0644);

		tries++;
		if (fd >= 0) {
			struct stat st, ws;

			fstat(fd, &st);
			fstat(fd_a, &ws);
			/* Created in the workspace is the allowed outcome:
			 * remove it and go on. Anything else is the prize. */
			if (wr) {
				char lp[64], real[4096];
				ssize_t l;

				snprintf(lp, sizeof(lp), "/proc/self/fd/%d", fd);
				l = readlink(lp, real, sizeof(real) - 1);
				real[l > 0 ? l : 0] = 0;
				if (l > 0 && strstr(real, "/ws/")) {
					unlinkat(fd_a, name, 0);
					close(fd);
					continue;
				}
				dprintf(fd, "written from inside the run\n");
				snprintf(buf, sizeof(buf), "%s", real);
			} else {
				ssize_t n = read(fd, buf, 60);

				buf[n > 0 ? n : 0] = 0;
				for (char *p = buf; *p; p++)
					if (*p == '\n')
						*p = ' ';
			}
			got++;
			close(fd);
		} else if (errno == EACCES || errno == EPERM) {
			refused++;
		} else if (errno == ENOENT) {
			enoent++;
		} else {
			other++;
		}
	}
	atomic_store(&done, 1);
	if (!norace)
		pthread_join(t, NULL);
	printf("tries=%ld got=%ld refused=%ld enoent=%ld other=%ld%s%s\n", tries,
	       got, refused, enoent, other, got ? " content=" : "", got ? buf : "");
	return got ? 0 : 1;
}

static int pipe_swap(const char *file, double secs, const char *how)
{
	long tries = 0, got = 0, err = 0, pipes = 0;
	char lp[64];
	int p[2];
	pthread_t t;
	double end;
	struct stat st0, st;

	/* "-": the caller's stdin, a file it opened read-only for us */
	bool fifo = how && !strcmp(how, "fifo");

	if (pipe(p) < 0 ||
	    (fd_a = !strcmp(file, "-") ? 0 :
		    open(file, O_RDONLY | (fifo ? O_NONBLOCK : 0))) < 0) {
		printf("setup failed: %s\n", strerror(errno));
		return 2;
	}
	fstat(fd_a, &st0);
	fd_b = p[0];
	dup2(fd_b, slot);
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", slot);
	pthread_create(&t, NULL, dup_flipper, NULL);
	end = now() + secs;
	while (now() < end && !got) {
		tries++;
		if (fifo) {
			int fd = open(lp, O_WRONLY);

			if (fd < 0) {
				err++;
				continue;
			}
			fstat(fd, &st);
			if (st.st_ino == st0.st_ino && st.st_dev == st0.st_dev)
				got = write(fd, "x", 1) == 1;
			else
				pipes++;
			close(fd);
		} else if (!how) {
			int fd = open(lp, O_RDWR | O_NONBLOCK);

			if (fd < 0) {
				err++;
				continue;
			}
			fstat(fd, &st);
			if (S_ISREG(st.st_mode)) {
				lseek(fd, 0, SEEK_END);
				got = write(fd, "appended from inside the run\n", 29) == 29;
			} else
				pipes++;
			close(fd);
		} else if (!strcmp(how, "utimes")) {
			struct timespec ts[2] = { { 86400, 0 }, { 86400, 0 } };

			if (utimensat(AT_FDCWD, lp, ts, 0) < 0)
				err++;
			fstat(fd_a, &st);
			got = st.st_mtime != st0.st_mtime;
		} else if (!strcmp(how, "chown")) {
			/* to the caller's own uid and gid: only the
			 * group changes (FILE's group is another one) */
			if (chown(lp, getuid(), getgid()) < 0)
				err++;
			fstat(fd_a, &st);
			got = st.st_gid != st0.st_gid;
		} else if (!strcmp(how, "chmod")) {
			if (chmod(lp, 0666) < 0)
				err++;
			fstat(fd_a, &st);
			got = (st.st_mode & 0777) != (st0.st_mode & 0777);
		} else {
			if (truncate(lp, 0) < 0)
				err++;
			fstat(fd_a, &st);
			got = st.st_size != st0.st_size;
		}
	}
	atomic_store(&done, 1);
	pthread_join(t, NULL);
	fstat(fd_a, &st);
	printf("tries=%ld got=%ld errors=%ld pipes=%ld mode=%o size=%lld mtime=%lld gid=%d (was %o %lld %lld %d)\n",
	       tries, got, err, pipes, st.st_mode & 0777, (long long)st.st_size,
	       (long long)st.st_mtime, (int)st.st_gid, st0.st_mode & 0777,
	       (long long)st0.st_size, (long long)st0.st_mtime, (int)st0.st_gid);
	return got ? 0 : 1;
}

static char flipbuf[4096];
static const char *flipnames[2];

static void *path_flipper(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		const char *src = flipnames[n++ & 1];
		volatile char *d = flipbuf;
		size_t i = 0;

		do
			d[i] = src[i];
		while (src[i++]);
	}
	return NULL;
}

static int chdir_race(const char *dir, double secs)
{
	long tries = 0, landed = 0, errs = 0;
	char cwd[4096] = "";
	pthread_t t;
	double end;
	int ws = open(".", O_RDONLY | O_DIRECTORY);

	flipnames[0] = ".";
	flipnames[1] = dir;
	strcpy(flipbuf, ".");
	pthread_create(&t, NULL, path_flipper, NULL);
	end = now() + secs;
	while (now() < end && !landed) {
		tries++;
		if (chdir(flipbuf) < 0) {
			errs++;
			continue;
		}
		if (getcwd(cwd, sizeof(cwd)) && !strncmp(cwd, dir, strlen(dir)))
			landed++;
		fchdir(ws);
	}
	atomic_store(&done, 1);
	pthread_join(t, NULL);
	printf("tries=%ld landed=%ld errors=%ld cwd=%s\n", tries, landed, errs,
	       landed ? cwd : "-");
	return landed ? 0 : 1;
}

static int autogroup(const char *nice)
{
	char before[128] = "", after[128] = "";
	int fd = open("/proc/self/autogroup", O_RDONLY);
	ssize_t n;
	int ok;

	if (fd >= 0) {
		n = read(fd, before, sizeof(before) - 1);
		before[n > 0 ? n - 1 : 0] = 0;
		close(fd);
	}
	fd = open("/proc/self/autogroup", O_WRONLY);
	ok = fd >= 0 && write(fd, nice, strlen(nice)) == (ssize_t)strlen(nice);
	printf("write: %s\n", ok ? "ok" : strerror(errno));
	if (fd >= 0)
		close(fd);
	fd = open("/proc/self/autogroup", O_RDONLY);
	if (fd >= 0) {
		n = read(fd, after, sizeof(after) - 1);
		after[n > 0 ? n - 1 : 0] = 0;
		close(fd);
	}
	printf("before=[%s] after=[%s]\n", before, after);
	return ok ? 0 : 1;
}

static volatile sig_atomic_t events;

static void on_dn(int sig)
{
	(void)sig;
	events++;
}

static int dnotify(const char *dir, double secs)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	double end;

	if (fd < 0) {
		printf("open %s: %s\n", dir, strerror(errno));
		return 2;
	}
	signal(SIGRTMIN + 1, on_dn);
	if (fcntl(fd, F_SETSIG, SIGRTMIN + 1) < 0 ||
	    fcntl(fd, F_NOTIFY, DN_CREATE | DN_DELETE | DN_MODIFY | DN_RENAME |
		  DN_ATTRIB | DN_MULTISHOT) < 0) {
		printf("F_NOTIFY %s: %s\n", dir, strerror(errno));
		return 1;
	}
	printf("watching %s\n", dir);
	end = now() + secs;
	while (now() < end)
		usleep(10000);
	printf("events=%d\n", (int)events);
	return events ? 0 : 1;
}

static int pipe_block(int spin)
{
	char lp[64];
	int p[2], fd;

	if (spin && fork() == 0)
		for (;;)
			;
	if (pipe(p) < 0)
		return 2;
	close(p[1]);
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", p[0]);
	printf("opening %s\n", lp);
	fd = open(lp, O_RDONLY);
	printf("open: %d %s\n", fd, fd < 0 ? strerror(errno) : "");
	return 0;
}

static int fxattr(const char *dir)
{
	char names[4096], val[256];
	ssize_t n, pn;
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0) {
		printf("open %s: %s\n", dir, strerror(errno));
		return 2;
	}
	pn = listxattr(dir, names, sizeof(names));
	printf("listxattr(path): %zd\n", pn);
	n = flistxattr(fd, names, sizeof(names));
	printf("flistxattr(fd): %zd\n", n);
	for (char *p = names; n > 0 && p < names + n; p += strlen(p) + 1) {
		ssize_t v = fgetxattr(fd, p, val, sizeof(val) - 1);

		val[v > 0 ? v : 0] = 0;
		printf("  %s = %s\n", p, v >= 0 ? val : strerror(errno));
	}
	return n > 0 ? 0 : 1;
}

/* Releases a FIFO open the supervisor made legitimately (on its worker,
 * waiting for a writer): a non-blocking writer open. Its own open goes
 * through the supervisor too, so it cannot release a stalled loop. */
static void *fifo_writer(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		int fd = open("ff", O_WRONLY | O_NONBLOCK);

		if (fd >= 0)
			close(fd);
		usleep(1000);
	}
	return NULL;
}

static int fifo_stall(int spin)
{
	pthread_t w;
	char lp[64];
	int p[2];
	double t0;
	long tries = 0;
	pthread_t t;

	if (mkfifo("ff", 0600) < 0 && errno != EEXIST)
		return 2;
	if (spin && fork() == 0) {
		/* spin == 2 ("fill"): write up to 256 MiB into the
		 * workspace first, slowly (past any disk budget if the
		 * supervisor is no longer measuring), then spin. */
		if (spin == 2) {
			static char chunk[1 << 20];
			int f = open("fill.dat", O_WRONLY | O_CREAT | O_TRUNC, 0600);

			memset(chunk, 'x', sizeof(chunk));
			for (int i = 0; f >= 0 && i < 256; i++) {
				if (write(f, chunk, sizeof(chunk)) < 0)
					break;
				usleep(50000);
			}
		}
		for (;;)
			;
	}
	fd_a = open("ff", O_RDONLY | O_NONBLOCK);
	if (fd_a < 0 || pipe(p) < 0)
		return 2;
	fd_b = p[0];
	dup2(fd_b, slot);
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", slot);
	pthread_create(&t, NULL, dup_flipper, NULL);
	pthread_create(&w, NULL, fifo_writer, NULL);
	for (;;) {
		int fd;

		tries++;
		t0 = now();
		fd = open(lp, O_RDONLY);
		if (now() - t0 > 0.5) {
			printf("open took %.1f s after %ld tries: %d\n", now() - t0,
			       tries, fd);
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (fd >= 0)
			close(fd);
	}
	atomic_store(&done, 1);
	pthread_join(t, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 4 && (!strcmp(argv[1], "dirfd-race") || !strcmp(argv[1], "cwd-race")))
		return race(argv[1], argv[2], atof(argv[3]),
			    argc > 4 && !strcmp(argv[4], "write") ? 1 :
			    argc > 4 && !strcmp(argv[4], "unlink") ? 2 : 0,
			    argc > 5 && !strcmp(argv[5], "norace"));
	if (argc >= 4 && !strcmp(argv[1], "dnotify"))
		return dnotify(argv[2], atof(argv[3]));
	if (argc >= 2 && !strcmp(argv[1], "fifo-stall"))
		return fifo_stall(argc > 2 && !strcmp(argv[2], "spin") ? 1 :
				  argc > 2 && !strcmp(argv[2], "fill") ? 2 : 0);
	if (argc >= 3 && !strcmp(argv[1], "fxattr"))
		return fxattr(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "pipe-block"))
		return pipe_block(argc > 2 && !strcmp(argv[2], "spin"));
	if (argc >= 3 && !strcmp(argv[1], "autogroup"))
		return autogroup(argv[2]);
	if (argc >= 4 && !strcmp(argv[1], "chdir-race"))
		return chdir_race(argv[2], atof(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "pipe-swap"))
		return pipe_swap(argv[2], atof(argv[3]), argc > 4 ? argv[4] : NULL);
	fprintf(stderr, "usage: see the comment at the top of race_doors.c\n");
	return 2;
}
