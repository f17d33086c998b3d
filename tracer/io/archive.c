/* tracer/io/archive.c: extracts a tar (any common compression) or zip input
 * with libarchive's reader; every entry is judged, then written by place.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <archive.h>
#include <archive_entry.h>

#include "io.h"

/*
 * libarchive only reads and decompresses here: archive_write_disk (which
 * works on path strings and would follow what earlier entries made) is
 * never used. Only tar and zip are enabled, and only the compression
 * filters libarchive carries in-process: a filter it lacks would be run as
 * an external program by the supervisor, which must not happen.
 */
static void enable_filters(struct archive *a)
{
	if (archive_zlib_version())
		archive_read_support_filter_gzip(a);
	if (archive_bzlib_version())
		archive_read_support_filter_bzip2(a);
	if (archive_liblzma_version()) {
		archive_read_support_filter_xz(a);
		archive_read_support_filter_lzma(a);
	}
	if (archive_libzstd_version())
		archive_read_support_filter_zstd(a);
	if (archive_liblz4_version())
		archive_read_support_filter_lz4(a);
	archive_read_support_filter_compress(a);	/* built in: .Z */
}

static const char *type_name(mode_t t)
{
	switch (t) {
	case AE_IFIFO: return "a fifo";
	case AE_IFCHR: return "a character device";
	case AE_IFBLK: return "a block device";
	case AE_IFSOCK: return "a socket";
	default: return "an entry of unknown type";
	}
}

struct ex {
	struct cr_io_place *p;
	struct archive *a;
	const char *label;	/* the input, for messages */
	const char *dest;	/* workspace-relative DEST, "" for the root */
	size_t skip;		/* strlen(dest) + 1, or 0 */
	char name[PATH_MAX];	/* DEST-relative, normalised */
	char path[PATH_MAX];	/* workspace-relative */
};

static int refuse(struct ex *x, const char *entry, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* One line naming the input and the entry, the reason last. */
static int refuse(struct ex *x, const char *entry, int rc, const char *fmt, ...)
{
	char reason[256], q[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	cr_errf(x->p->why, sizeof(x->p->why), "input %s: entry %s: %s",
		x->label, cr_str_quote(entry, q, sizeof(q)), reason);
	return rc;
}

static int place_error(struct ex *x, const char *entry, int rc)
{
	return cr_io_place_error(x->p, x->label, entry, rc);
}

static int data(struct ex *x, const char *entry, struct archive_entry *e)
{
	int fd = cr_io_place_file(x->p, x->path, x->skip,
				  archive_entry_perm(e));
	int rc = 0;

	if (fd < 0)
		return place_error(x, entry, fd);
	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(x->a, &buf, &len, &off);

		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN || off < 0) {
			close(fd);
			return refuse(x, entry, -EPERM, "unreadable data: %s",
				      archive_error_string(x->a) ?: "corrupt");
		}
		rc = cr_io_place_write(x->p, fd, buf, len, (uint64_t)off);
		if (rc)
			break;
	}
	/* A declared size past the last block is a trailing hole. */
	if (!rc)
		rc = cr_io_place_file_end(x->p, fd, archive_entry_size_is_set(e) &&
					  archive_entry_size(e) > 0 ?
					  (uint64_t)archive_entry_size(e) : 0);
	close(fd);
	if (rc == -EINVAL)
		return refuse(x, entry, -EPERM, "data blocks out of order");
	return rc ? place_error(x, entry, rc) : 0;
}

static int one(struct ex *x, struct archive_entry *e)
{
	const char *raw = archive_entry_pathname(e);
	const char *hl = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	char why[128];
	int rc;

	if (!raw)
		raw = archive_entry_pathname_utf8(e);
	if (!raw)
		return refuse(x, "?", -EPERM, "a name that cannot be decoded");
	if (cr_io_name_norm(raw, x->name, sizeof(x->name), why, sizeof(why)))
		return refuse(x, raw, -EPERM, "%s", why);
	if (snprintf(x->path, sizeof(x->path), "%s%s%s", x->dest,
		     x->dest[0] && x->name[0] ? "/" : "", x->name) >=
	    (int)sizeof(x->path))
		return refuse(x, raw, -EPERM, "a name too long");

	if (hl) {
		char target[PATH_MAX], tpath[PATH_MAX], q[96];

		/* A hard link may only name a regular file this archive
		 * placed before it; anything else (/etc/passwd, a name
		 * outside DEST) would hand the program a host file. */
		if (cr_io_name_norm(hl, target, sizeof(target), why, sizeof(why)) ||
		    !target[0] ||
		    snprintf(tpath, sizeof(tpath), "%s%s%s", x->dest,
			     x->dest[0] ? "/" : "", target) >= (int)sizeof(tpath))
			return refuse(x, raw, -EPERM,
				      "a hard link to %s, which is not an earlier file of the archive",
				      cr_str_quote(hl, q, sizeof(q)));
		rc = cr_io_place_link(x->p, x->path, x->skip, tpath);
		if (rc == -ENOENT)
			return refuse(x, raw, -EPERM,
				      "a hard link to %s, which is not an earlier file of the archive",
				      cr_str_quote(hl, q, sizeof(q)));
		return rc ? place_error(x, raw, rc) : 0;
	}
	switch (type) {
	case AE_IFDIR:
		rc = cr_io_place_dir(x->p, x->path, x->skip, archive_entry_perm(e));
		if (rc < 0)
			return place_error(x, raw, rc);
		close(rc);
		return 0;
	case AE_IFREG:
		if (!x->name[0])
			return refuse(x, raw, -EPERM, "a file named as the destination itself");
		return data(x, raw, e);
	case AE_IFLNK: {
		const char *t = archive_entry_symlink(e);
		char q[96];

		if (!x->name[0])
			return refuse(x, raw, -EPERM, "a link named as the destination itself");
		if (!t || !cr_io_link_inside(x->name, t))
			return refuse(x, raw, -EPERM,
				      "a symbolic link to %s, which leaves the destination",
				      cr_str_quote(t ? t : "", q, sizeof(q)));
		rc = cr_io_place_symlink(x->p, x->path, x->skip, t);
		return rc ? place_error(x, raw, rc) : 0;
	}
	default:
		return refuse(x, raw, -EPERM, "%s (only files, directories and links are extracted)",
			      type_name(type));
	}
}

int cr_io_archive_extract(struct cr_io_place *p, int fd, const char *label,
			  const char *dest)
{
	struct ex x = { .p = p, .label = label, .dest = dest,
			.skip = dest[0] ? strlen(dest) + 1 : 0 };
	struct archive_entry *e;
	int rc = 0, r;

	/* A hard link may name only what this archive placed. */
	p->scope = p->n;
	x.a = archive_read_new();
	if (!x.a)
		return -ENOMEM;
	archive_read_support_format_tar(x.a);
	archive_read_support_format_zip(x.a);
	enable_filters(x.a);
	if (archive_read_open_fd(x.a, fd, 65536) != ARCHIVE_OK) {
		cr_errf(p->why, sizeof(p->why), "input %s: not a tar or zip archive: %s",
			label, archive_error_string(x.a) ?: "unknown format");
		archive_read_free(x.a);
		return -EPERM;
	}
	while (!rc) {
		r = archive_read_next_header(x.a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			cr_errf(p->why, sizeof(p->why),
				"input %s: unreadable archive after %zu entries: %s",
				label, p->n, archive_error_string(x.a) ?: "corrupt");
			rc = -EPERM;
			break;
		}
		rc = one(&x, e);
	}
	archive_read_free(x.a);
	return rc;
}
