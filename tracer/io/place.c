/* tracer/io/place.c: creates input entries beneath the workspace from a
 * directory fd, never through a link, within the disk and files budgets. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "io.h"

/*
 * Why this cannot write outside the workspace: every name is opened or made
 * relative to a directory fd that was itself opened from the workspace's fd
 * with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, one level at a time, and the
 * last component is created with O_EXCL | O_NOFOLLOW (or mkdirat, symlinkat,
 * linkat, which never follow the new name). A symlink placed by an earlier
 * entry (or by anyone else) fails the next lookup with ELOOP instead of
 * being followed, and a path string is never handed to the kernel whole.
 */
int cr_io_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ?
			mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

int cr_io_name_norm(const char *raw, char *out, size_t outlen, char *why,
		    size_t whylen)
{
	size_t o = 0;
	const char *p = raw;

	if (raw[0] == '/') {
		cr_errf(why, whylen, "an absolute name");
		return -EPERM;
	}
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);

		if (len == 2 && p[0] == '.' && p[1] == '.') {
			cr_errf(why, whylen, "a \"..\" component");
			return -EPERM;
		}
		if (len > NAME_MAX) {
			cr_errf(why, whylen, "a component longer than %d bytes",
				NAME_MAX);
			return -EPERM;
		}
		if (len && !(len == 1 && p[0] == '.')) {
			if (o + len + 2 > outlen) {
				cr_errf(why, whylen, "a name longer than %zu bytes",
					outlen - 1);
				return -EPERM;
			}
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p = *end ? end + 1 : end;
	}
	out[o] = 0;
	return 0;
}

bool cr_io_link_inside(const char *rel, const char *target)
{
	size_t depth = 0, ups = 0;
	bool named = false;
	const char *p;

	if (!target[0] || target[0] == '/')
		return false;
	for (p = rel; *p; p++)
		if (*p == '/')
			depth++;
	/* Leading ".." only: up through the real directories that hold the
	 * link (entries are never written through links), then down. A ".."
	 * after a name could climb out of a directory reached through
	 * another link ("b/../x" with b -> "."), so it is refused. */
	for (p = target; *p;) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);

		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (named || ++ups > depth)
				return false;
		} else if (len && !(len == 1 && p[0] == '.')) {
			named = true;
		}
		p = *end ? end + 1 : end;
	}
	return true;
}

int cr_io_place_count(struct cr_io_place *p)
{
	if (p->files + 1 > p->max_files)
		return -EDQUOT;
	p->files++;
	return 0;
}

/*
 * Bytes decoded and never written (a pax hard link's data, which
 * libarchive would otherwise inflate only to skip it) cost what written
 * bytes cost: 10 GiB of them fitted in a 17 KB archive and held the
 * supervisor for 74 s. bytes + skipped never passes max_bytes.
 */
int cr_io_place_skip(struct cr_io_place *p, uint64_t n)
{
	if (n > p->max_bytes - p->bytes - p->skipped)
		return -EFBIG;
	p->skipped += n;
	return 0;
}

int cr_io_place_check(struct cr_io_place *p)
{
	return p->check ? p->check(p) : 0;
}

/*
 * The index of file entries by path, which a hard link's target is found
 * in: a scan back over every entry cost O(entries) string compares per
 * link (9 979 links to a 3.7 KB path: 20-29 s before the program ran).
 * Open addressing, FNV-1a, at most half full; a slot holds index + 1.
 */
static uint64_t path_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

/* The slot holding path, or the empty one where it would go. */
static size_t *ix_slot(size_t *ix, size_t cap, const struct cr_io_entry *e,
		       const char *path)
{
	size_t m = cap - 1, i = (size_t)path_hash(path) & m;

	while (ix[i] && strcmp(e[ix[i] - 1].path, path))
		i = (i + 1) & m;
	return &ix[i];
}

static int ix_add(struct cr_io_place *p, size_t i)
{
	size_t *s;

	if ((p->ixn + 1) * 2 > p->ixcap) {
		size_t ncap = p->ixcap ? p->ixcap * 2 : 64;
		size_t *nix = calloc(ncap, sizeof(*nix));

		if (!nix)
			return -ENOMEM;
		for (size_t k = 0; k < p->ixcap; k++)
			if (p->ix[k])
				*ix_slot(nix, ncap, p->e, p->e[p->ix[k] - 1].path) =
					p->ix[k];
		free(p->ix);
		p->ix = nix;
		p->ixcap = ncap;
	}
	s = ix_slot(p->ix, p->ixcap, p->e, p->e[i].path);
	if (!*s)
		p->ixn++;
	*s = i + 1;	/* the newest of a name, as the scan found it */
	return 0;
}

static void ix_clear(struct cr_io_place *p)
{
	if (p->ix)
		memset(p->ix, 0, p->ixcap * sizeof(*p->ix));
	p->ixn = 0;
}

void cr_io_place_scope(struct cr_io_place *p)
{
	/* Entries before the scope are never a target; the digest of a
	 * finished input sorts them, so their indexes would not hold. */
	p->scope = p->n;
	ix_clear(p);
}

static struct cr_io_entry *record(struct cr_io_place *p, const char *path,
				  size_t len, size_t skip, enum cr_io_kind kind)
{
	struct cr_io_entry *e;

	if (p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 64;
		struct cr_io_entry *ne = realloc(p->e, ncap * sizeof(*ne));

		if (!ne)
			return NULL;
		p->e = ne;
		p->cap = ncap;
	}
	e = &p->e[p->n];
	memset(e, 0, sizeof(*e));
	e->path = strndup(path, len);
	if (!e->path)
		return NULL;
	e->skip = skip < len ? skip : len;
	e->kind = kind;
	p->n++;
	/* Recorded either way: it exists, and undo must remove it. */
	if (kind == CR_IO_FILE && ix_add(p, p->n - 1))
		return NULL;
	return e;
}

static mode_t dir_mode(const struct cr_io_place *p, mode_t mode)
{
	/* The owner can always manage its workspace (and the cleanup can
	 * remove it); set-id and sticky bits never come from an input. */
	return (mode & 0777 & ~p->umask) | 0700;
}

int cr_io_place_dir(struct cr_io_place *p, const char *rel, size_t skip,
		    mode_t mode)
{
	int fd = cr_io_beneath(p->ws_fd, ".", O_PATH | O_DIRECTORY, 0);
	const char *c = rel;

	while (fd >= 0 && *c) {
		const char *end = strchrnul(c, '/');
		char name[NAME_MAX + 1];
		size_t len = (size_t)(end - c);
		int sub, rc;

		if (len > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(name, c, len);
		name[len] = 0;
		sub = cr_io_beneath(fd, name, O_PATH | O_DIRECTORY, 0);
		if (sub == -ENOENT) {
			rc = cr_io_place_count(p);
			if (!rc && mkdirat(fd, name, dir_mode(p, *end ? 0755 : mode)) < 0)
				rc = -errno;
			if (!rc && !record(p, rel, (size_t)(end - rel), skip, CR_IO_DIR))
				rc = -ENOMEM;
			if (rc) {
				close(fd);
				return rc;
			}
			sub = cr_io_beneath(fd, name, O_PATH | O_DIRECTORY, 0);
		}
		close(fd);
		fd = sub;
		c = *end ? end + 1 : end;
	}
	return fd;
}

int cr_io_place_parent(struct cr_io_place *p, const char *rel, size_t skip,
		       const char **leaf)
{
	const char *slash = strrchr(rel, '/');
	char dir[PATH_MAX];

	if (!slash) {
		*leaf = rel;
		return cr_io_beneath(p->ws_fd, ".", O_PATH | O_DIRECTORY, 0);
	}
	if ((size_t)(slash - rel) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = 0;
	*leaf = slash + 1;
	return cr_io_place_dir(p, dir, skip, 0755);
}

int cr_io_place_file(struct cr_io_place *p, const char *rel, size_t skip,
		     mode_t mode)
{
	const char *leaf;
	cr_autoclose int dirfd = cr_io_place_parent(p, rel, skip, &leaf);
	struct cr_io_entry *e;
	int fd, rc;

	if (dirfd < 0)
		return dirfd;
	rc = cr_io_place_count(p);
	if (rc)
		return rc;
	/* Set-user-ID and set-group-ID never survive: only the
	 * permission bits are kept, and the owner may read and write. */
	fd = cr_io_beneath(dirfd, leaf, O_WRONLY | O_CREAT | O_EXCL,
		     (mode & 0777 & ~p->umask) | 0600);
	if (fd < 0)
		return fd;
	e = record(p, rel, strlen(rel), skip, CR_IO_FILE);
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	e->exec = mode & S_IXUSR;
	p->h = cr_sha256_new();
	p->hoff = 0;
	if (!p->h) {
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

/* Holes (sparse archive entries) are digested as the zeros they read as. */
/* A hole is hashed as the zeros it reads as, and can be as large as the
 * disk budget: the deadline and a cancel are looked at every 64 MiB (a
 * 10 KB tar holding a 20 GiB hole held the supervisor 16-26 s past a 2 s
 * wall limit and a SIGTERM; found by a probing session). 0 or -errno. */
static int hash_zeros(struct cr_io_place *p, uint64_t upto)
{
	static const char zeros[65536];
	unsigned k = 0;
	int rc;

	while (p->hoff < upto) {
		uint64_t n = upto - p->hoff;

		if (!(++k % 1024) && (rc = cr_io_place_check(p)))
			return rc;
		if (n > sizeof(zeros))
			n = sizeof(zeros);
		cr_sha256_update(p->h, zeros, (size_t)n);
		p->hoff += n;
	}
	return 0;
}

static int grow(struct cr_io_place *p, struct cr_io_entry *e, uint64_t end)
{
	if (end <= e->size)
		return 0;
	if (end - e->size > p->max_bytes - p->bytes - p->skipped)
		return -EFBIG;
	p->bytes += end - e->size;
	e->size = end;
	return 0;
}

int cr_io_place_write(struct cr_io_place *p, int fd, const void *buf,
		      size_t len, uint64_t off)
{
	struct cr_io_entry *e = &p->e[p->n - 1];
	int rc = cr_io_place_check(p);

	if (rc)
		return rc;
	/* Blocks come in order; one going back would make the digest
	 * depend on how the archive was written. */
	if (off < p->hoff)
		return -EINVAL;
	/* Counted before a byte is written: an archive that inflates past
	 * the budget stops at the block that would cross it. */
	rc = grow(p, e, off + len);
	if (rc)
		return rc;
	rc = hash_zeros(p, off);
	if (rc)
		return rc;
	cr_sha256_update(p->h, buf, len);
	p->hoff = off + len;
	while (len) {
		ssize_t w = pwrite(fd, buf, len, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf = (const char *)buf + w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int cr_io_place_file_end(struct cr_io_place *p, int fd, uint64_t size)
{
	struct cr_io_entry *e = &p->e[p->n - 1];
	int rc = grow(p, e, size);

	if (rc)
		return rc;
	if (ftruncate(fd, (off_t)e->size) < 0)
		return -errno;
	rc = hash_zeros(p, e->size);
	if (rc)
		return rc;
	cr_sha256_final(p->h, e->sha);
	p->h = NULL;
	return 0;
}

int cr_io_place_symlink(struct cr_io_place *p, const char *rel, size_t skip,
			const char *target)
{
	const char *leaf;
	cr_autoclose int dirfd = cr_io_place_parent(p, rel, skip, &leaf);
	struct cr_io_entry *e;
	int rc;

	if (dirfd < 0)
		return dirfd;
	rc = cr_io_place_count(p);
	if (rc)
		return rc;
	if (symlinkat(target, dirfd, leaf) < 0)
		return -errno;
	e = record(p, rel, strlen(rel), skip, CR_IO_SYMLINK);
	if (!e || !(e->target = strdup(target)))
		return -ENOMEM;
	return 0;
}

int cr_io_place_link(struct cr_io_place *p, const char *rel, size_t skip,
		     const char *earlier)
{
	const struct cr_io_entry *src = NULL;
	struct cr_io_entry *e;
	const char *leaf, *tleaf;
	cr_autoclose int dirfd = -1;
	cr_autoclose int tdir = -1;
	int rc;

	if (p->ixcap) {
		size_t k = *ix_slot(p->ix, p->ixcap, p->e, earlier);

		if (k && k - 1 >= p->scope && p->e[k - 1].kind == CR_IO_FILE)
			src = &p->e[k - 1];
	}
	if (!src)
		return -ENOENT;
	{
		/* The earlier file's own directory, looked up (never made)
		 * the same way. */
		const char *slash = strrchr(earlier, '/');
		char dir[PATH_MAX];

		if (slash) {
			if ((size_t)(slash - earlier) >= sizeof(dir))
				return -ENAMETOOLONG;
			memcpy(dir, earlier, (size_t)(slash - earlier));
			dir[slash - earlier] = 0;
			tleaf = slash + 1;
		} else {
			strcpy(dir, ".");
			tleaf = earlier;
		}
		tdir = cr_io_beneath(p->ws_fd, dir, O_PATH | O_DIRECTORY, 0);
		if (tdir < 0)
			return tdir;
	}
	dirfd = cr_io_place_parent(p, rel, skip, &leaf);
	if (dirfd < 0)
		return dirfd;
	rc = cr_io_place_count(p);
	if (rc)
		return rc;
	/* flags 0: linkat never follows a symlink at the old name. */
	if (linkat(tdir, tleaf, dirfd, leaf, 0) < 0)
		return -errno;
	{
		struct cr_io_entry copy = *src;	/* record may move p->e */

		e = record(p, rel, strlen(rel), skip, CR_IO_FILE);
		if (!e)
			return -ENOMEM;
		e->exec = copy.exec;
		e->size = copy.size;
		memcpy(e->sha, copy.sha, sizeof(e->sha));
		e->hardlink = true;
	}
	return 0;
}

int cr_io_place_error(struct cr_io_place *p, const char *label,
		      const char *entry, int rc)
{
	char reason[300], at[320] = "", b[32], q[300], sk[128] = "";

	switch (rc) {
	case -ELOOP:
	case -ENOTDIR:
		snprintf(reason, sizeof(reason), "would be written through a symbolic link or a non-directory placed earlier");
		break;
	case -EEXIST:
		snprintf(reason, sizeof(reason), "already exists in the workspace (an input never replaces anything)");
		break;
	case -EDQUOT:
		cr_limit_format(CR_LIM_FILES, p->max_files, b, sizeof(b));
		snprintf(reason, sizeof(reason), "more entries than the files budget (%s)", b);
		break;
	case -EFBIG:
	case -ETIME:
		if (p->skipped)
			snprintf(sk, sizeof(sk), " and %llu decoded and not written (headers past 16 KiB, data of entries that are not files)",
				 (unsigned long long)p->skipped);
		if (rc == -EFBIG)
			cr_limit_format(CR_LIM_DISK, p->max_bytes, b, sizeof(b));
		else
			cr_limit_format(CR_LIM_WALL, p->deadline_ms, b, sizeof(b));
		snprintf(reason, sizeof(reason), rc == -EFBIG ?
			 "more bytes than the disk budget (%s): stopped with %llu bytes written%s" :
			 "placing the inputs took longer than the wall budget (%s): stopped with %llu bytes written%s",
			 b, (unsigned long long)p->bytes, sk);
		break;
	case -ECANCELED:
		snprintf(reason, sizeof(reason), "cancelled");
		break;
	case -EXDEV:
		snprintf(reason, sizeof(reason), "would leave the workspace");
		break;
	default:
		snprintf(reason, sizeof(reason), "cannot be written: %s", strerror(-rc));
		break;
	}
	if (entry)
		snprintf(at, sizeof(at), "entry %s: ", cr_str_quote(entry, q, sizeof(q)));
	cr_errf(p->why, sizeof(p->why), "input %s: %s%s", label, at, reason);
	/* What the input holds is refused; a host error is a failure. */
	switch (rc) {
	case -ELOOP: case -ENOTDIR: case -EEXIST: case -EDQUOT: case -EFBIG:
	case -EXDEV: case -ENAMETOOLONG:
		return -EPERM;
	default:
		return rc;
	}
}

void cr_io_place_undo(struct cr_io_place *p)
{
	ix_clear(p);
	while (p->n > 0) {
		struct cr_io_entry *e = &p->e[--p->n];
		const char *slash = strrchr(e->path, '/');
		char dir[PATH_MAX];
		int fd;

		if (slash && (size_t)(slash - e->path) < sizeof(dir)) {
			memcpy(dir, e->path, (size_t)(slash - e->path));
			dir[slash - e->path] = 0;
		} else {
			strcpy(dir, ".");
		}
		fd = cr_io_beneath(p->ws_fd, dir, O_PATH | O_DIRECTORY, 0);
		if (fd >= 0) {
			unlinkat(fd, slash ? slash + 1 : e->path,
				 e->kind == CR_IO_DIR ? AT_REMOVEDIR : 0);
			close(fd);
		}
		free(e->path);
		free(e->target);
	}
}

void cr_io_place_free(struct cr_io_place *p)
{
	if (p->h) {
		unsigned char d[CR_SHA256_LEN];

		cr_sha256_final(p->h, d);
		p->h = NULL;
	}
	for (size_t i = 0; i < p->n; i++) {
		free(p->e[i].path);
		free(p->e[i].target);
	}
	free(p->e);
	p->e = NULL;
	p->n = p->cap = 0;
	free(p->ix);
	p->ix = NULL;
	p->ixcap = p->ixn = 0;
}
