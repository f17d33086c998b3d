/* tracer/io/inputs.c: places --input and the request's inputs in the
 * workspace before the program starts: files, directory trees, archives. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "io.h"
#include "../fs/fs.h"

#define CR_IO_MAX_DEPTH 256

int cr_io_input_split(const char *arg, char **from, char **to, char *err,
		      size_t errlen)
{
	const char *colon = strrchr(arg, ':');
	char msg[256];

	*from = *to = NULL;
	if (colon) {
		*from = strndup(arg, (size_t)(colon - arg));
		*to = strdup(colon + 1);
	} else {
		/* No DEST: the source's last name, in the workspace. */
		size_t len = strlen(arg);
		const char *base;

		while (len > 1 && arg[len - 1] == '/')
			len--;
		*from = strndup(arg, len);
		base = *from ? strrchr(*from, '/') : NULL;
		*to = strdup(base ? base + 1 : *from ? *from : "");
	}
	if (!*from || !*to)
		return -ENOMEM;
	if (!(*from)[0]) {
		cr_errf(err, errlen, "--input %s: the source is empty", arg);
		return -EINVAL;
	}
	if (!(*to)[0]) {
		cr_errf(err, errlen, colon ? "--input %s: the destination is empty" :
			"--input %s: give a destination: SRC:DEST", arg);
		return -EINVAL;
	}
	if (cr_rel_path_check(*to, msg, sizeof(msg))) {
		cr_errf(err, errlen, "--input %s: destination %s", arg, msg);
		return -EINVAL;
	}
	return 0;
}

/* Reopen what an O_PATH fd holds, the very object judged. */
static int reopen(int pfd, int flags)
{
	char p[64];
	int fd;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
	fd = open(p, flags | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

struct walk {
	struct cr_run *run;
	struct cr_io_place *p;
	struct cr_io_input *in;
	dev_t ws_dev;
	ino_t ws_ino;
	char host[PATH_MAX];	/* the source's real path: request inputs */
	char rel[PATH_MAX];	/* workspace-relative, built as we descend */
	size_t skip;		/* rel + skip: DEST-relative */
};

/* The DEST-relative name of where the walk is ("" at DEST). */
static const char *srel_of(const struct walk *w)
{
	size_t len = strlen(w->rel);

	return w->rel + (w->skip < len ? w->skip : len);
}

static int refuse(struct walk *w, const char *entry, const char *reason)
{
	char q[300];

	if (entry)
		cr_errf(w->p->why, sizeof(w->p->why), "input %s: entry %s: %s",
			w->in->from, cr_str_quote(entry, q, sizeof(q)), reason);
	else
		cr_errf(w->p->why, sizeof(w->p->why), "input %s: %s",
			w->in->from, reason);
	return -EPERM;
}

/* The kernel's pseudo-filesystems are never read through a root: the
 * program sees its own /proc and a few devices only (fs/), and a request
 * must not copy in corral's /proc/self/environ that way. */
static bool pseudo(const char *path, size_t len)
{
	static const char *const fs[] = { "/proc", "/sys", "/dev" };

	for (size_t i = 0; i < CR_ARRAY_SIZE(fs); i++)
		if (cr_path_within(fs[i], strlen(fs[i]), path, len))
			return true;
	return false;
}

/* A request is the agent's data: it may only bring in what the class (and
 * the operator's --ro roots) would let the program read anyway, judged on
 * the real path of the object opened, not on the name it was given by. */
static int may_read(struct walk *w, const char *srel)
{
	char path[PATH_MAX];
	int len;

	if (!w->in->from_request)
		return 0;
	len = snprintf(path, sizeof(path), "%s%s%s", w->host,
		       srel[0] && strcmp(w->host, "/") ? "/" : "", srel);
	if (len < (int)sizeof(path) && pseudo(path, (size_t)len))
		return refuse(w, srel[0] ? srel : NULL,
			      "in a kernel pseudo-filesystem (/proc, /sys, /dev): never an input of a request");
	if (len >= (int)sizeof(path) ||
	    !(cr_fsrules_access(&w->run->fs->rules, path, (size_t)len) & CR_FS_R))
		return refuse(w, srel[0] ? srel : NULL,
			      "not readable by the class: a request's inputs bring in only what the program could read");
	return 0;
}

/* An entry of a directory being copied that the class may not read (a
 * deny entry): left out, as the program's own listing leaves it out, so
 * the copy and the result are the same whether it exists or not. */
static bool entry_hidden(struct walk *w, const char *srel)
{
	char path[PATH_MAX];
	int len;

	if (!w->in->from_request)
		return false;
	len = snprintf(path, sizeof(path), "%s%s%s", w->host,
		       strcmp(w->host, "/") ? "/" : "", srel);
	return len >= (int)sizeof(path) || pseudo(path, (size_t)len) ||
	       !(cr_fsrules_access(&w->run->fs->rules, path, (size_t)len) & CR_FS_R);
}

/*
 * A request's `from`, walked as the kernel's open walks it and judged as
 * the run's resolver judges the program's paths, before anything is
 * opened: each name looked up (a link included, and every name of where
 * it leads) must be one the class may read or an ancestor of a root
 * (what the program can see), judged on its path *before* it is looked
 * at; the end must be readable. Past a name that does not exist (or
 * cannot be looked at) the rest is judged as written, ".." lexically. So
 * the answer depends only on what the program could see: a link in a
 * read root leading out (/usr/share/maven/conf -> /etc/maven) refuses
 * whatever lies below its target, present or not. A relative `from`
 * starts at corral's cwd, which is the caller's, not judged. Returns 0
 * or -EPERM with may_read's message; w->host is clobbered.
 */
static int judge_walk(struct walk *w)
{
	char cur[PATH_MAX], rest[PATH_MAX], next[PATH_MAX], comp[NAME_MAX + 1];
	const struct cr_fsrules *rules = &w->run->fs->rules;
	size_t clen, links = 0;
	bool missing = false;
	const char *r;

	if (snprintf(rest, sizeof(rest), "%s", w->in->from) >= (int)sizeof(rest))
		goto refused;
	if (rest[0] == '/')
		snprintf(cur, sizeof(cur), "/");
	else if (!getcwd(cur, sizeof(cur)) || cur[0] != '/')
		goto refused;	/* fail closed */
	clen = strlen(cur);
	r = rest;
	for (;;) {
		struct stat st;
		size_t n;

		while (*r == '/')
			r++;
		if (!*r)
			break;
		n = strcspn(r, "/");
		if (n > NAME_MAX)
			goto refused;
		memcpy(comp, r, n);
		comp[n] = 0;
		r += n;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			while (clen > 1 && cur[--clen] != '/')
				;
			if (!clen)
				clen = 1;
			cur[clen] = 0;
			continue;
		}
		if (clen + (clen > 1) + n >= sizeof(cur))
			goto refused;
		if (clen > 1)
			cur[clen++] = '/';
		memcpy(cur + clen, comp, n + 1);
		clen += n;
		/* Judged before it is looked at; refused as may_read
		 * refuses it (it grants no read there). */
		if (pseudo(cur, clen) || !cr_fsrules_access(rules, cur, clen)) {
			snprintf(w->host, sizeof(w->host), "%s", cur);
			return may_read(w, "");
		}
		if (missing)
			continue;
		if (lstat(cur, &st) < 0) {
			missing = true;	/* the open's own error, or a refusal */
			continue;
		}
		if (!S_ISLNK(st.st_mode))
			continue;
		if (++links > 40) {	/* the kernel's ELOOP */
			missing = true;
			continue;
		}
		{
			ssize_t len = readlink(cur, next, sizeof(next) - 1);

			if (len <= 0) {
				missing = true;
				continue;
			}
			next[len] = 0;
			/* The link's text, then what was left of the path. */
			if ((size_t)len + 1 + strlen(r) >= sizeof(next))
				goto refused;
			memcpy(next + len, r, strlen(r) + 1);
			memcpy(rest, next, strlen(next) + 1);
			r = rest;
			if (rest[0] == '/')
				clen = 1;
			else	/* relative to the link's directory */
				while (clen > 1 && cur[--clen] != '/')
					;
			if (!clen)
				clen = 1;
			cur[clen] = 0;
		}
	}
	snprintf(w->host, sizeof(w->host), "%s", cur);
	return may_read(w, "");
refused:
	/* Too long to follow: refused (the message names the input only,
	 * as every refusal here does, never where the walk stopped). */
	return refuse(w, NULL,
		      "not readable by the class: a request's inputs bring in only what the program could read");
}

static int copy_file(struct walk *w, int src, const char *entry, mode_t mode)
{
	struct cr_io_place *p = w->p;
	char buf[65536];
	uint64_t off = 0;
	int fd = cr_io_place_file(p, w->rel, w->skip, mode);
	int rc = 0;

	if (fd < 0)
		return cr_io_place_error(p, w->in->from, entry, fd);
	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		rc = cr_io_place_write(p, fd, buf, (size_t)n, off);
		if (rc)
			break;
		off += (uint64_t)n;
	}
	if (!rc)
		rc = cr_io_place_file_end(p, fd, off);
	close(fd);
	return rc ? cr_io_place_error(p, w->in->from, entry, rc) : 0;
}

static const char *special(mode_t m)
{
	return S_ISFIFO(m) ? "a fifo" : S_ISSOCK(m) ? "a socket" :
	       S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" :
	       "neither a file, a directory nor a symbolic link";
}

/* Entries are opened relative to their directory's fd with O_NOFOLLOW: a
 * link in the source is copied as a link (if it stays inside the source),
 * never followed out of it. */
static int copy_dir(struct walk *w, int dirfd, int depth)
{
	size_t base = strlen(w->rel);
	DIR *d;
	struct dirent *de;
	int rc = 0, dup_fd;

	if (depth > CR_IO_MAX_DEPTH)
		return refuse(w, srel_of(w), "deeper than 256 directories");
	dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0 || !(d = fdopendir(dup_fd))) {
		if (dup_fd >= 0)
			close(dup_fd);
		return cr_io_place_error(w->p, w->in->from, srel_of(w), -errno);
	}
	while (!rc && (errno = 0, de = readdir(d))) {
		const char *n = de->d_name;
		const char *srel;
		struct stat st;

		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		if (snprintf(w->rel + base, sizeof(w->rel) - base, "%s%s",
			     base ? "/" : "", n) >= (int)(sizeof(w->rel) - base)) {
			rc = refuse(w, n, "a name too long");
			break;
		}
		srel = srel_of(w);
		if (entry_hidden(w, srel))
			continue;
		if ((rc = cr_io_place_check(w->p))) {
			rc = cr_io_place_error(w->p, w->in->from, srel, rc);
			break;
		}
		if (fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = cr_io_place_error(w->p, w->in->from, srel, -errno);
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub, made;

			if (st.st_dev == w->ws_dev && st.st_ino == w->ws_ino) {
				rc = refuse(w, srel, "is the workspace itself");
				break;
			}
			sub = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				     O_CLOEXEC);
			if (sub < 0) {
				rc = cr_io_place_error(w->p, w->in->from, srel, -errno);
				break;
			}
			made = cr_io_place_dir(w->p, w->rel, w->skip, st.st_mode);
			if (made < 0)
				rc = cr_io_place_error(w->p, w->in->from, srel, made);
			else {
				close(made);
				rc = copy_dir(w, sub, depth + 1);
			}
			close(sub);
		} else if (S_ISREG(st.st_mode)) {
			struct stat st2;
			int f = openat(dirfd, n, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				       O_NOCTTY | O_CLOEXEC);

			if (f < 0) {
				rc = cr_io_place_error(w->p, w->in->from, srel, -errno);
				break;
			}
			/* Swapped since the fstatat: judge what is open. */
			if (fstat(f, &st2) < 0 || !S_ISREG(st2.st_mode) ||
			    st2.st_ino != st.st_ino)
				rc = refuse(w, srel, "changed while it was copied");
			else
				rc = copy_file(w, f, srel, st2.st_mode);
			close(f);
		} else if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			ssize_t len = readlinkat(dirfd, n, t, sizeof(t) - 1);

			if (len < 0) {
				rc = cr_io_place_error(w->p, w->in->from, srel, -errno);
				break;
			}
			t[len] = 0;
			if (!cr_io_link_inside(srel, t)) {
				char why[PATH_MAX + 64], q[300];

				snprintf(why, sizeof(why), "a symbolic link to %s, which leaves the source",
					 cr_str_quote(t, q, sizeof(q)));
				rc = refuse(w, srel, why);
				break;
			}
			rc = cr_io_place_symlink(w->p, w->rel, w->skip, t);
			if (rc)
				rc = cr_io_place_error(w->p, w->in->from, srel, rc);
		} else {
			char why[128];

			snprintf(why, sizeof(why), "%s (only files, directories and links are copied)",
				 special(st.st_mode));
			rc = refuse(w, srel, why);
		}
	}
	if (!rc && errno) {
		w->rel[base] = 0;
		rc = cr_io_place_error(w->p, w->in->from, srel_of(w), -errno);
	}
	w->rel[base] = 0;
	closedir(d);
	return rc;
}

/*
 * An archive is read once: into an unnamed file of corral's own ($TMPDIR,
 * O_TMPFILE; a memfd where that cannot be made), hashed on the way, and
 * extracted from that copy. Read twice (the digest, then the extraction),
 * a file another program rewrote in place between the two reads gave a
 * result whose archive_sha256 named one archive and a tree from another
 * (6 of 20 runs beside a program of another run flipping two tars;
 * found by a probing session). The copy keeps the file's holes (a 4 GiB
 * sparse input became 1.8 GiB written to $TMPDIR, or a 2 GiB memfd, in
 * a probing session), and an archive larger than the budgets could ever
 * let it place is refused before it is read (ARCHIVE_SLACK per entry the
 * files budget allows: headers, padding; compression only makes an
 * archive smaller than what it places). The copy's fd, or -errno (-EFBIG
 * for that refusal); out is the digest of exactly the bytes the
 * extraction reads, st_size of the file as opened and no more. The
 * deadline and a cancel are looked at every 64 MiB, holes included (a
 * 16 GiB sparse file held the supervisor 21-41 s past them, found by a
 * probing session).
 */
#define ARCHIVE_SLACK 4096u
#define ARCHIVE_SLACK_FIXED (16u << 20)

static int copy_span(struct cr_io_place *p, struct cr_sha256 *h, int fd,
		     int copy, off_t *off, off_t end, bool hole, unsigned *k)
{
	static const char zeros[65536];
	char buf[65536];
	int rc;

	while (*off < end) {
		size_t want = (size_t)(end - *off) < sizeof(buf) ?
			      (size_t)(end - *off) : sizeof(buf);
		ssize_t n;

		if (!(++*k % 1024) && (rc = cr_io_place_check(p)))
			return rc;
		if (hole) {
			cr_sha256_update(h, zeros, want);
			*off += (off_t)want;
			continue;
		}
		n = pread(fd, buf, want, *off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return 1;	/* shorter than it was: ends here */
		cr_sha256_update(h, buf, (size_t)n);
		for (ssize_t w = 0; w < n;) {
			ssize_t m = pwrite(copy, buf + w, (size_t)(n - w),
					   *off + w);

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				return m < 0 ? -errno : -EIO;
			w += m;
		}
		*off += n;
	}
	return 0;
}

static int private_copy(struct cr_io_place *p, int fd,
			unsigned char out[CR_SHA256_LEN])
{
	struct cr_sha256 *h;
	struct stat st;
	uint64_t lim = UINT64_MAX, add = UINT64_MAX;
	off_t off = 0;
	unsigned k = 0;
	int copy, rc = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (p->max_files < (UINT64_MAX - ARCHIVE_SLACK_FIXED) / ARCHIVE_SLACK)
		add = p->max_files * ARCHIVE_SLACK + ARCHIVE_SLACK_FIXED;
	if (p->max_bytes < UINT64_MAX - add)
		lim = p->max_bytes + add;
	if ((uint64_t)st.st_size > lim)
		return -EFBIG;
	if (!(h = cr_sha256_new()))
		return -ENOMEM;
	copy = open(cr_workspace_tmp_dir(), O_TMPFILE | O_RDWR | O_CLOEXEC,
		    0600);
	if (copy < 0)
		copy = memfd_create("corral-archive", MFD_CLOEXEC);
	if (copy < 0) {
		rc = -errno;
		cr_sha256_final(h, out);
		return rc;
	}
	while (!rc && off < st.st_size) {
		off_t data = lseek(fd, off, SEEK_DATA), hole;

		/* No data past off: a hole to the end. A filesystem that
		 * cannot say: all of it is read. */
		if (data < 0)
			data = errno == ENXIO ? st.st_size : off;
		if (data > st.st_size)
			data = st.st_size;
		rc = copy_span(p, h, fd, copy, &off, data, true, &k);
		if (rc || off >= st.st_size)
			break;
		hole = lseek(fd, off, SEEK_HOLE);
		if (hole <= off || hole > st.st_size)
			hole = st.st_size;
		rc = copy_span(p, h, fd, copy, &off, hole, false, &k);
	}
	if (rc == 1)
		rc = 0;
	cr_sha256_final(h, out);
	if (!rc && ftruncate(copy, off) < 0)
		rc = -errno;
	if (rc) {
		close(copy);
		return rc;
	}
	return copy;
}

static int place_one(struct cr_run *run, struct cr_io_place *p,
		     struct cr_io_input *in, const struct stat *ws)
{
	struct walk w = { .run = run, .p = p, .in = in,
			  .ws_dev = ws->st_dev, .ws_ino = ws->st_ino };
	cr_autoclose int pfd = -1;
	cr_autoclose int fd = -1;
	size_t start = p->n;
	uint64_t files0 = p->files, bytes0 = p->bytes;
	struct stat st;
	int rc;

	/* A request's input is judged on its way before the open says
	 * whether it exists: missing and unreachable files where the
	 * program sees nothing must not be told apart through the result. */
	if (in->from_request && (rc = judge_walk(&w)))
		return rc;
	{
		char why[PATH_MAX + 256] = "";

		/* Not through a link a program of an earlier run left. */
		rc = cr_oppath_open(in->from, &pfd, why, sizeof(why));
		if (rc == -EPERM) {
			cr_errf(p->why, sizeof(p->why), "input %s: %s",
				in->from, why);
			return -EPERM;
		}
		errno = -rc;
	}
	if (pfd < 0 || fstat(pfd, &st) < 0) {
		cr_errf(p->why, sizeof(p->why), "input %s: cannot open: %s",
			in->from, strerror(errno));
		return -ENOENT;
	}
	if (in->from_request) {
		char link[64];
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", pfd);
		len = readlink(link, w.host, sizeof(w.host) - 1);
		if (len <= 0 || w.host[0] != '/')
			return refuse(&w, NULL, "its real path cannot be read");
		w.host[len] = 0;
		if ((rc = may_read(&w, "")))
			return rc;
	}
	snprintf(w.rel, sizeof(w.rel), "%s", in->to);
	w.skip = strlen(in->to);
	if (S_ISREG(st.st_mode) && in->extract) {
		in->kind = "archive";
		fd = reopen(pfd, O_RDONLY);
		rc = fd >= 0 ? private_copy(p, fd, in->archive_sha) : fd;
		if (fd >= 0)
			close(fd);
		fd = rc >= 0 ? rc : -1;
		if (rc == -ETIME || rc == -ECANCELED)
			return cr_io_place_error(p, in->from, NULL, rc);
		if (rc == -EFBIG)
			return refuse(&w, NULL, "the archive is larger than the disk and files budgets could ever let it place");
		if (rc < 0) {
			cr_errf(p->why, sizeof(p->why), "input %s: cannot read: %s",
				in->from, strerror(-rc));
			return rc;
		}
		rc = cr_io_place_dir(p, in->to, w.skip, 0755);
		if (rc < 0)
			return cr_io_place_error(p, in->from, NULL, rc);
		close(rc);
		rc = cr_io_archive_extract(p, fd, in->from, in->to);
	} else if (S_ISREG(st.st_mode)) {
		in->kind = "file";
		if (!in->to[0])
			return refuse(&w, NULL, "a file needs a destination name");
		fd = reopen(pfd, O_RDONLY | O_NONBLOCK);
		if (fd < 0) {
			cr_errf(p->why, sizeof(p->why), "input %s: cannot read: %s",
				in->from, strerror(-fd));
			return fd;
		}
		rc = copy_file(&w, fd, NULL, st.st_mode);
		if (!rc)
			memcpy(in->sha, p->e[p->n - 1].sha, CR_SHA256_LEN);
	} else if (S_ISDIR(st.st_mode)) {
		in->kind = "directory";
		/* "DIR:DEST/" on the command line is a copy into DEST;
		 * "extract": true of a directory is a mistake worth saying. */
		if (in->extract && in->from_request)
			return refuse(&w, NULL, "a directory cannot be extracted");
		if (st.st_dev == ws->st_dev && st.st_ino == ws->st_ino)
			return refuse(&w, NULL, "is the workspace itself");
		fd = reopen(pfd, O_RDONLY | O_DIRECTORY);
		if (fd < 0) {
			cr_errf(p->why, sizeof(p->why), "input %s: cannot read: %s",
				in->from, strerror(-fd));
			return fd;
		}
		rc = cr_io_place_dir(p, in->to, w.skip, st.st_mode);
		if (rc < 0)
			return cr_io_place_error(p, in->from, NULL, rc);
		close(rc);
		/* Entries below DEST are named "DEST/x": skip the slash too. */
		if (w.skip)
			w.skip++;
		rc = copy_dir(&w, fd, 0);
	} else {
		char why[128];

		snprintf(why, sizeof(why), "is %s, not a file, directory or archive",
			 special(st.st_mode));
		return refuse(&w, NULL, why);
	}
	if (rc)
		return rc;
	in->files = p->files - files0;
	in->bytes = p->bytes - bytes0;
	if (strcmp(in->kind, "file"))
		cr_io_tree_digest(p->e + start, p->n - start, in->sha);
	return 0;
}

/* Placing's own deadline and cancellation, read between blocks and
 * entries (place.c, archive.c). */
static int check(struct cr_io_place *p)
{
	uint64_t now = cr_now_ns();

	if (now >= p->deadline_ns)
		return -ETIME;
	/* The signals run.c gives the loop, read here before the loop
	 * exists (every 10 ms at most). No child exists yet: a SIGCHLD
	 * read here is nobody's. */
	if (p->sigfd < 0 || now - p->sig_ns < 10000000ull)
		return 0;
	p->sig_ns = now;
	p->signo = cr_loop_cancel_pending(p->run);
	return p->signo ? -ECANCELED : 0;
}

int cr_io_inputs_place(struct cr_run *run)
{
	struct cr_io *io = run->io;
	const struct cr_run_config *cfg = run->cfg;
	struct cr_io_place p = {
		.umask = run->caller_umask,
		.max_bytes = cfg->limits.v[CR_LIM_DISK],
		.max_files = cfg->limits.v[CR_LIM_FILES],
		/* Placing runs before the wall timer: it gets the wall
		 * budget of its own, and the signals that cancel a run
		 * cancel it (run.c blocked them into sigfd already). */
		.check = check,
		.deadline_ms = cfg->limits.v[CR_LIM_WALL],
		.sigfd = run->sigfd,
		.run = run,
	};
	cr_autoclose int ws = cr_workspace_fd(cfg);
	struct stat st;
	int rc = 0;

	if (!io->nin)
		return 0;
	if (ws < 0 || fstat(ws, &st) < 0) {
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot open the workspace for the inputs: %s",
			   strerror(errno));
		return -EIO;
	}
	p.ws_fd = ws;
	p.deadline_ns = cr_now_ns();
	p.deadline_ns += p.deadline_ms < (UINT64_MAX - p.deadline_ns) / 1000000u ?
			 p.deadline_ms * 1000000u : UINT64_MAX - p.deadline_ns;
	size_t i;

	for (i = 0; !rc && i < io->nin; i++)
		rc = place_one(run, &p, &io->in[i], &st);
	if (rc) {
		/* A refused input leaves nothing behind, in a kept
		 * workspace too; the program never starts. The refusal is
		 * a denial like any other (result and audit). */
		/* One line, whatever the names held. */
		for (char *c = p.why; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		if (rc == -EPERM)
			cr_deny(run, 0, "input", io->in[i - 1].from, "fs", p.why);
		cr_io_place_undo(&p);
		for (size_t k = 0; k < io->nin; k++)
			io->in[k].kind = NULL;	/* none of them is there */
		if (rc == -ECANCELED) {
			char sn[24];

			cr_run_end(run, CR_ST_CANCELLED, NULL, "cancelled by %s (while input %s was placed)",
				   cr_signame(p.signo, sn, sizeof(sn)) + 3,
				   io->in[i - 1].from);
		} else if (rc == -ETIME) {
			cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "wall", "%s", p.why);
		} else {
			cr_run_end(run, rc == -EPERM ? CR_ST_POLICY_DENIED :
				   CR_ST_PLATFORM_FAILURE, NULL, "%s", p.why);
		}
	}
	cr_io_place_free(&p);
	return rc;
}
