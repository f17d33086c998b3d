/* tracer/io/artifacts.c: after the tree is dead, copies the workspace's
 * regular files matching --output / the request's outputs to --output-dir. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "io.h"

#define CR_ART_MAX_DEPTH 256
/* A path the walk meets has at most CR_ART_MAX_DEPTH directories and a
 * name; a pattern at most as many components (policy.c refuses longer):
 * neither is ever cut short (a path cut to 128 components was judged as
 * its ancestor, and its match lost unnamed; a pattern cut short named a
 * directory and exported all below it: found by a probing session). */
#define CR_ART_MAX_COMPS CR_OUTPUT_MAX_COMPONENTS
_Static_assert(CR_ART_MAX_DEPTH + 1 <= CR_ART_MAX_COMPS,
	       "every path the walk meets fits the matcher");
#define CR_ART_MAX_SKIPPED 256
/* Collection runs after the tree is dead and before the watchdog's grace
 * (60 s past the wall budget) ends: bounded well inside it, so a tree the
 * program shaped cannot cost the run its result. */
#define CR_ART_MAX_SECONDS 20

/*
 * Why the program cannot turn the export against the host: it is dead when
 * this runs, but what it left is hostile. Every workspace name is opened
 * from the workspace's fd (taken before the program ran) with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS and O_NOFOLLOW, first as O_PATH
 * (opening a fifo or a device that way has no effect and cannot block);
 * only an fstat that says S_ISREG lets it be reopened for reading, through
 * that very fd, with O_NONBLOCK. In the output directory, names are
 * likewise made beneath its fd without following links, data goes to a
 * fresh temporary name, and the rename to the final name refuses to replace
 * anything (RENAME_NOREPLACE) unless --output-overwrite was given, in which
 * case a link there is replaced, never written through.
 */
struct glob {
	char *buf;			/* owned: components, NUL-separated */
	char *c[CR_ART_MAX_COMPS];	/* borrowed from buf */
	size_t n;
};

struct collect {
	struct cr_run *run;
	struct cr_io *io;
	struct glob *g;
	size_t ng;
	uint64_t max_files, max_bytes;
	uint64_t files, bytes;
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC */
	struct stat result_dir, audit;	/* corral's own records, or st_nlink 0 */
	struct stat json_out;		/* --json's stdout file, or st_nlink 0 */
	const char *result_name;
	bool timed_out;			/* or cancelled: nothing more */
	int signo;			/* the cancel that stopped it, or 0 */
	uint64_t sig_ns;		/* when sigfd was last read */
	char rel[PATH_MAX];
};

/* A cancel (the signals run.c gives the loop, read here every 10 ms at
 * most) stops the export where it is: the caller who sends SIGTERM while
 * gigabytes are copied out does not wait up to the collection's time
 * bound and then read "ok". The tree is gone: a SIGCHLD read here is
 * nobody's. */
static bool cancelled(struct collect *x)
{
	uint64_t now;

	if (x->signo)
		return true;
	now = cr_now_ns();
	if (x->run->sigfd < 0 || now - x->sig_ns < 10000000ull)
		return false;
	x->sig_ns = now;
	x->signo = cr_loop_cancel_pending(x->run);
	return x->signo != 0;
}

static size_t split(char *s, char **c, size_t max)
{
	size_t n = 0;

	for (char *p = s; *p && n < max;) {
		char *end = strchrnul(p, '/');
		bool last = !*end;

		*end = 0;
		if (*p && strcmp(p, "."))
			c[n++] = p;
		if (last)
			break;
		p = end + 1;
	}
	return n;
}

/* Pattern positions reached without taking a name: past each "**". */
static void past_stars(char **pc, size_t np, bool *at)
{
	for (size_t i = 0; i < np; i++)
		if (at[i] && !strcmp(pc[i], "**"))
			at[i + 1] = true;
}

/* "**" is any number of directories; other components are fnmatch(3)
 * patterns of one name, a leading dot matched only explicitly. Matched
 * as the set of pattern positions reached, one name at a time: at most
 * np x ns fnmatch calls, whatever the number of "**". (Backtracking was
 * exponential in them: a request's "**" / "**" / ... over a deep tree
 * the program made held the supervisor past every deadline, the result
 * and the audit trail's last event never written.) */
static bool match(char **pc, size_t np, char **sc, size_t ns)
{
	bool at[CR_ART_MAX_COMPS + 1] = { true }, next[CR_ART_MAX_COMPS + 1];

	past_stars(pc, np, at);
	for (size_t j = 0; j < ns; j++) {
		bool any = false;

		memset(next, 0, sizeof(next));
		for (size_t i = 0; i < np; i++) {
			if (!at[i])
				continue;
			if (!strcmp(pc[i], "**"))
				next[i] = any = true;
			else if (!fnmatch(pc[i], sc[j], FNM_PERIOD))
				next[i + 1] = any = true;
		}
		if (!any)
			return false;
		past_stars(pc, np, next);
		memcpy(at, next, sizeof(at));
	}
	return at[np];
}

/* Could something below directory sc match? Prunes the walk. */
static bool below(char **pc, size_t np, char **sc, size_t ns)
{
	if (!ns)
		return np > 0;
	if (!np)
		return false;
	if (!strcmp(pc[0], "**"))
		return true;
	return !fnmatch(pc[0], sc[0], FNM_PERIOD) &&
	       below(pc + 1, np - 1, sc + 1, ns - 1);
}

static void judge(const struct collect *x, bool *matched, bool *descend)
{
	char copy[PATH_MAX], *sc[CR_ART_MAX_COMPS];
	size_t ns;

	snprintf(copy, sizeof(copy), "%s", x->rel);
	ns = split(copy, sc, CR_ART_MAX_COMPS);
	*matched = *descend = false;
	for (size_t i = 0; i < x->ng; i++) {
		if (match(x->g[i].c, x->g[i].n, sc, ns))
			*matched = true;
		if (below(x->g[i].c, x->g[i].n, sc, ns))
			*descend = true;
	}
}

static struct cr_io_artifact *add(struct collect *x, const char *skipped)
{
	struct cr_io *io = x->io;
	struct cr_io_artifact *a, *na;

	/* A program can leave a million links matching "**": the result
	 * lists the first ones skipped and counts the rest. */
	if (skipped && io->nskipped >= CR_ART_MAX_SKIPPED) {
		io->skipped_dropped++;
		return NULL;
	}
	if (skipped)
		io->nskipped++;

	na = realloc(io->art, (io->nart + 1) * sizeof(*na));
	if (!na)
		return NULL;
	io->art = na;
	a = &io->art[io->nart];
	memset(a, 0, sizeof(*a));
	a->path = strdup(x->rel);
	if (!a->path)
		return NULL;
	a->skipped = skipped;
	io->nart++;
	return a;
}

static const char *kind_of(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a fifo" :
	       S_ISSOCK(m) ? "a socket" : S_ISCHR(m) || S_ISBLK(m) ? "a device" :
	       S_ISDIR(m) ? "a directory" : "not a regular file";
}

/* Is st the file known as k (st_nlink 0: none)? */
static bool same_file(const struct stat *k, const struct stat *st)
{
	return k->st_nlink && k->st_dev == st->st_dev &&
	       k->st_ino == st->st_ino;
}

/* NAME in dirfd is corral's result file (written after this, by
 * unlink-and-create), its audit trail or the file --json writes the
 * record to: an export there would replace the record (a probing session
 * had --output-overwrite replace stdout's file with a forged one), or a
 * directory made at the result's name would keep the result from being
 * written at all. The program chose the names. */
static bool reserved(const struct collect *x, int dirfd, const char *name)
{
	struct stat st;

	if (x->result_name && !strcmp(name, x->result_name) &&
	    fstat(dirfd, &st) == 0 && st.st_dev == x->result_dir.st_dev &&
	    st.st_ino == x->result_dir.st_ino)
		return true;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	/* The records, and the policy and request the run's rules came
	 * from (run.c): an export over one of those rewrote the next
	 * run's rules (found by a probing session). */
	return same_file(&x->audit, &st) || same_file(&x->json_out, &st) ||
	       same_file(&x->run->cfg->rules_st[0], &st) ||
	       same_file(&x->run->cfg->rules_st[1], &st);
}

/* The directory of rel in the output directory, made as needed. */
static int out_parent(struct collect *x, const char **leaf)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(x->rel, '/');
	int fd = cr_io_beneath(x->io->out_fd, ".", O_PATH | O_DIRECTORY, 0);

	*leaf = slash ? slash + 1 : x->rel;
	if (!slash)
		return fd;
	memcpy(dir, x->rel, (size_t)(slash - x->rel));
	dir[slash - x->rel] = 0;
	for (char *p = dir; fd >= 0 && *p;) {
		char *end = strchrnul(p, '/');
		bool last = !*end;
		int sub;

		*end = 0;
		if (reserved(x, fd, p)) {
			close(fd);
			return -EPERM;
		}
		sub = cr_io_beneath(fd, p, O_PATH | O_DIRECTORY, 0);
		if (sub == -ENOENT &&
		    (mkdirat(fd, p, 0777 & ~x->run->caller_umask) == 0 ||
		     errno == EEXIST))
			sub = cr_io_beneath(fd, p, O_PATH | O_DIRECTORY, 0);
		close(fd);
		fd = sub;
		if (last)
			break;
		p = end + 1;
	}
	return fd;
}

/* A fresh name in dir ("tmp" receives it). With flags, the file is made
 * there and its fd returned; without, the name is one nothing has now (a
 * link takes it next) and 0 is returned. -1 when none could be had. */
static int fresh_name(int dir, char tmp[64], int flags, mode_t mode)
{
	for (int tries = 0; tries < 8; tries++) {
		uint64_t rnd = 0;
		int fd;

		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd ^= (uint64_t)cr_now_ns();
		snprintf(tmp, 64, ".corral-%016llx", (unsigned long long)rnd);
		if (!flags) {
			if (fstatat(dir, tmp, &(struct stat){ 0 },
				    AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
				return 0;
			continue;
		}
		fd = cr_io_beneath(dir, tmp, flags, mode);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* Copy src into a file with no name (O_TMPFILE) in the output directory
 * and link it at its final name once whole: a corral killed with -9
 * mid-copy leaves nothing there (an earlier build left a partial
 * .corral-<hex> that no sweep knew of). Where the filesystem has no
 * O_TMPFILE, a fresh name beside the final one, renamed there. */
static const char *export(struct collect *x, int src, const struct stat *st,
			  struct cr_io_artifact *a)
{
	const char *leaf;
	cr_autoclose int dir = out_parent(x, &leaf);
	char tmp[64] = "", buf[65536], lnk[64];
	struct cr_sha256 *h;
	uint64_t total = 0;
	const char *why = NULL;
	mode_t mode = st->st_mode & 0777 & ~x->run->caller_umask;
	bool named = false;
	int fd;

	if (dir == -EPERM || (dir >= 0 && reserved(x, dir, leaf)))
		return "its name in the output directory is corral's result file or audit trail, or the policy or request the run was given";
	if (dir < 0)
		return dir == -ELOOP || dir == -ENOTDIR ?
		       "the output directory has a link or a file on its path" :
		       "cannot make its directory in the output directory";
	/* Not worth a copy; the link or rename below still decides,
	 * atomically. */
	if (!x->run->cfg->output_overwrite &&
	    fstatat(dir, leaf, &(struct stat){ 0 }, AT_SYMLINK_NOFOLLOW) == 0)
		return "already in the output directory (not overwritten)";
	fd = cr_io_beneath(dir, ".", O_WRONLY | O_TMPFILE, mode);
	if (fd < 0) {
		fd = fresh_name(dir, tmp, O_WRONLY | O_CREAT | O_EXCL, mode);
		named = true;
	}
	if (fd < 0)
		return "cannot create it in the output directory";
	h = cr_sha256_new();
	for (;;) {
		ssize_t n;

		if (cancelled(x)) {
			why = "cancelled: collection stopped here";
			break;
		}
		n = read(src, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				why = "cannot be read";
			break;
		}
		/* Bounded as copied, not only by the size seen before. */
		if ((uint64_t)n > x->max_bytes - x->bytes - total) {
			why = "over the artifacts' bytes bound";
			break;
		}
		if (write(fd, buf, (size_t)n) != n) {
			why = "cannot be written to the output directory";
			break;
		}
		cr_sha256_update(h, buf, (size_t)n);
		total += (uint64_t)n;
	}
	cr_sha256_final(h, a->sha);
	if (!why && !named) {
		/* Linked where it goes, or (to replace what is there) under a
		 * fresh name first, then renamed over it. */
		snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", fd);
		if (!x->run->cfg->output_overwrite) {
			if (linkat(AT_FDCWD, lnk, dir, leaf, AT_SYMLINK_FOLLOW) < 0)
				why = errno == EEXIST ?
				      "already in the output directory (not overwritten)" :
				      "cannot be put in the output directory";
		} else if (fresh_name(dir, tmp, 0, 0) < 0 ||
			   linkat(AT_FDCWD, lnk, dir, tmp, AT_SYMLINK_FOLLOW) < 0) {
			why = "cannot be put in the output directory";
			tmp[0] = 0;
		} else {
			named = true;
		}
	}
	close(fd);
	if (!why && named && renameat2(dir, tmp, dir, leaf,
				       x->run->cfg->output_overwrite ? 0 :
				       RENAME_NOREPLACE) < 0)
		why = errno == EEXIST ?
		      "already in the output directory (not overwritten)" :
		      "cannot be put in the output directory";
	if (why) {
		if (named && tmp[0])
			unlinkat(dir, tmp, 0);
		return why;
	}
	a->bytes = total;
	x->bytes += total;
	return NULL;
}

static void one(struct collect *x, int dirfd, const char *name)
{
	struct cr_io_artifact *a;
	cr_autoclose int pfd = -1;
	cr_autoclose int fd = -1;
	struct stat st;
	char p[64];

	pfd = cr_io_beneath(dirfd, name, O_PATH, 0);
	if (pfd == -ELOOP) {
		add(x, "a symbolic link");
		return;
	}
	if (pfd < 0 || fstat(pfd, &st) < 0) {
		add(x, "cannot be opened");
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		add(x, kind_of(st.st_mode));
		return;
	}
	if (x->files >= x->max_files) {
		add(x, "over the artifacts' files bound");
		return;
	}
	if ((uint64_t)st.st_size > x->max_bytes - x->bytes) {
		add(x, "over the artifacts' bytes bound");
		return;
	}
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
	fd = open(p, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		/* Bounded as every other skip is (a program made 9 000
		 * unreadable files: a 33 MB result, the audit's count short
		 * of them; found by a probing session). */
		add(x, "cannot be read");
		return;
	}
	a = add(x, NULL);
	if (!a)
		return;
	a->skipped = export(x, fd, &st, a);
	if (!a->skipped) {
		x->files++;
	} else if (x->io->nskipped >= CR_ART_MAX_SKIPPED) {
		free(a->path);
		x->io->nart--;
		x->io->skipped_dropped++;
	} else {
		x->io->nskipped++;
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in byte order, so the result (and which files a bound cuts off)
 * does not depend on the filesystem's order. rel names dirfd.
 *
 * Nothing that matched, or that a match could lie below, drops out
 * unnamed: a directory that cannot be opened or listed (the program
 * chmod 000 it: its modes are not overridden for the export, as for a
 * file it made unreadable), one deeper than CR_ART_MAX_DEPTH, or an entry
 * that cannot be looked at, is listed in artifacts_skipped at its own
 * path with the reason (past the list's cap, counted); nothing below it
 * is looked at. */
static void walk(struct collect *x, int dirfd, bool inherited, int depth)
{
	size_t base = strlen(x->rel), n = 0, cap = 0;
	char **names = NULL;
	bool whole = true, too_long = false;
	int dup_fd;
	DIR *d;
	struct dirent *de;

	dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0 || !(d = fdopendir(dup_fd))) {
		if (dup_fd >= 0)
			close(dup_fd);
		add(x, "a directory that cannot be listed");
		return;
	}
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*nn));

			if (!nn)
				break;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	if (de || errno)	/* stopped early: no memory, or an error */
		whole = false;
	closedir(d);
	if (!whole)
		add(x, "a directory that cannot be listed to its end: only the names read are looked at");
	if (n)
		qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		bool matched, descend;

		if (snprintf(x->rel + base, sizeof(x->rel) - base, "%s%s",
			     base ? "/" : "", names[i]) >= (int)(sizeof(x->rel) - base)) {
			if (!too_long) {
				x->rel[base] = 0;
				add(x, "a directory holding a name whose path is too long to judge or export");
				too_long = true;
			}
			continue;
		}
		if (x->timed_out || cr_now_ns() > x->deadline_ns ||
		    cancelled(x)) {
			/* Named once, where it stopped; the rest is not
			 * looked at. */
			struct cr_io_artifact *a = x->timed_out ? NULL :
						   add(x, NULL);

			if (a) {	/* past the skipped list's cap too */
				a->skipped = x->signo ?
					"cancelled: collection stopped here" :
					"over the artifacts' time bound: collection stopped here";
				x->io->nskipped++;
			}
			x->timed_out = true;
			break;
		}
		judge(x, &matched, &descend);
		matched = matched || inherited;
		if (!matched && !descend)
			continue;
		if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			add(x, "cannot be looked at");
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			/* A matched directory brings everything below it. */
			int sub;

			if (depth + 1 > CR_ART_MAX_DEPTH) {
				add(x, "a directory deeper than 256 levels: not looked into");
				continue;
			}
			sub = cr_io_beneath(dirfd, names[i], O_RDONLY | O_DIRECTORY, 0);
			if (sub < 0) {
				add(x, sub == -EACCES ?
					 "a directory that cannot be opened (no read or search permission for its owner)" :
					 "a directory that cannot be opened");
				continue;
			}
			walk(x, sub, matched, depth + 1);
			close(sub);
		} else if (matched) {
			one(x, dirfd, names[i]);
		} else if (S_ISLNK(st.st_mode)) {
			/* A pattern could match below it, were it followed
			 * (out -> build/output, pattern "out/ANY.txt"): it is not,
			 * and that is said rather than nothing exported
			 * unnamed (found by a probing session). */
			add(x, "a symbolic link on the way to an output pattern: not followed");
		}
	}
	x->rel[base] = 0;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void cr_io_artifacts_collect(struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;
	struct cr_io *io = run->io;
	const struct cr_strlist *lists[2] = { &cfg->outputs, NULL };
	struct collect x = {
		.run = run, .io = io,
		.max_files = cfg->cls->artifact_files,
		.max_bytes = cfg->cls->artifact_bytes,
		.deadline_ns = cr_now_ns() + CR_ART_MAX_SECONDS * 1000000000ull,
	};
	size_t total = 0;

	if (!io || io->out_fd < 0 || io->ws_fd < 0)
		return;
	if (cfg->result_file && cfg->result_dirfd >= 0 &&
	    fstat(cfg->result_dirfd, &x.result_dir) == 0) {
		const char *slash = strrchr(cfg->result_file, '/');

		x.result_name = slash ? slash + 1 : cfg->result_file;
	}
	if (run->audit_fd < 0 || fstat(run->audit_fd, &x.audit) < 0)
		x.audit.st_nlink = 0;
	if (!cfg->json || fstat(STDOUT_FILENO, &x.json_out) < 0 ||
	    !(S_ISREG(x.json_out.st_mode) || S_ISFIFO(x.json_out.st_mode)))
		x.json_out.st_nlink = 0;
	if (cfg->req)
		lists[1] = &cfg->req->outputs;
	for (size_t l = 0; l < 2; l++)
		total += lists[l] ? lists[l]->n : 0;
	x.g = calloc(total ? total : 1, sizeof(*x.g));
	if (!x.g)
		return;
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; lists[l] && i < lists[l]->n; i++) {
			struct glob *g = &x.g[x.ng];

			g->buf = strdup(lists[l]->v[i]);
			if (!g->buf)
				continue;
			g->n = split(g->buf, g->c, CR_ART_MAX_COMPS);
			x.ng++;
		}
	{
		int ws = cr_io_beneath(io->ws_fd, ".", O_RDONLY | O_DIRECTORY, 0);

		if (ws >= 0) {
			walk(&x, ws, false, 0);
			close(ws);
		} else if (x.ng) {
			snprintf(x.rel, sizeof(x.rel), ".");
			add(&x, "the workspace cannot be opened (no read or search permission for its owner)");
		}
	}
	for (size_t i = 0; i < x.ng; i++)
		free(x.g[i].buf);
	free(x.g);
	/* The program's own end stays in the result (result.c: settle);
	 * what the caller asked last was to stop. A limit or a denial stays
	 * the run's end: the skipped artifacts say why. */
	if (x.signo && (run->status == CR_ST_OK ||
			run->status == CR_ST_PROGRAM_ERROR))
		run->export_cancel = x.signo;
}
