/* tracer/io/archive.c: extracts a tar (any common compression) or zip input
 * with libarchive's reader; every entry is judged, then written by place.c. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <archive.h>
#include <archive_entry.h>

#include "io.h"
#include "../budget/budget.h"

/*
 * libarchive is loaded with dlopen by the first run that extracts an
 * archive: linked, it and what it pulls in (libxml2, libicu, libstdc++,
 * nettle, acl, five compressors) cost every start ~5 ms of dynamic
 * loading, for a feature most runs never use.
 */
typedef struct archive la_arch;
typedef struct archive_entry la_entry;
static struct {
	const char *(*zlib_version)(void);
	const char *(*bzlib_version)(void);
	const char *(*liblzma_version)(void);
	const char *(*libzstd_version)(void);
	const char *(*liblz4_version)(void);
	int (*read_support_filter_gzip)(la_arch *);
	int (*read_support_filter_bzip2)(la_arch *);
	int (*read_support_filter_xz)(la_arch *);
	int (*read_support_filter_lzma)(la_arch *);
	int (*read_support_filter_zstd)(la_arch *);
	int (*read_support_filter_lz4)(la_arch *);
	int (*read_support_filter_compress)(la_arch *);
	int (*read_support_format_tar)(la_arch *);
	int (*read_support_format_zip)(la_arch *);
	la_arch *(*read_new)(void);
	int (*read_open_fd)(la_arch *, int, size_t);
	int (*read_next_header)(la_arch *, la_entry **);
	int (*read_data_block)(la_arch *, const void **, size_t *, la_int64_t *);
	int (*read_free)(la_arch *);
	const char *(*error_string)(la_arch *);
	int (*err_no)(la_arch *);
	la_int64_t (*filter_bytes)(la_arch *, int);
	int (*filter_count)(la_arch *);
	const char *(*entry_pathname)(la_entry *);
	const char *(*entry_pathname_utf8)(la_entry *);
	const char *(*entry_hardlink)(la_entry *);
	const char *(*entry_symlink)(la_entry *);
	__LA_MODE_T (*entry_filetype)(la_entry *);
	__LA_MODE_T (*entry_perm)(la_entry *);
	la_int64_t (*entry_size)(la_entry *);
	int (*entry_size_is_set)(la_entry *);
} la;

/* 0 once every entry of la is resolved (the first call loads), else -EIO
 * with the reason in why. The supervisor is single-threaded here. */
static int la_load(char *why, size_t len)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f) { "archive_" #f, offsetof(__typeof__(la), f) }
		SYM(zlib_version), SYM(bzlib_version), SYM(liblzma_version),
		SYM(libzstd_version), SYM(liblz4_version),
		SYM(read_support_filter_gzip), SYM(read_support_filter_bzip2),
		SYM(read_support_filter_xz), SYM(read_support_filter_lzma),
		SYM(read_support_filter_zstd), SYM(read_support_filter_lz4),
		SYM(read_support_filter_compress), SYM(read_support_format_tar),
		SYM(read_support_format_zip), SYM(read_new), SYM(read_open_fd),
		SYM(read_next_header), SYM(read_data_block), SYM(read_free),
		SYM(error_string), { "archive_errno", offsetof(__typeof__(la), err_no) },
		SYM(filter_bytes), SYM(filter_count), SYM(entry_pathname), SYM(entry_pathname_utf8),
		SYM(entry_hardlink), SYM(entry_symlink), SYM(entry_filetype),
		SYM(entry_perm), SYM(entry_size), SYM(entry_size_is_set),
#undef SYM
	};
	static void *lib;

	if (lib)
		return 0;
	lib = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		cr_errf(why, len, "cannot load libarchive.so.13 (Debian libarchive13): %s",
			dlerror());
		return -EIO;
	}
	for (size_t i = 0; i < CR_ARRAY_SIZE(syms); i++) {
		void *f = dlsym(lib, syms[i].name);

		if (!f) {
			cr_errf(why, len, "libarchive.so.13 lacks %s", syms[i].name);
			dlclose(lib);
			lib = NULL;
			return -EIO;
		}
		memcpy((char *)&la + syms[i].off, &f, sizeof(f));
	}
	return 0;
}

/*
 * libarchive only reads and decompresses here: archive_write_disk (which
 * works on path strings and would follow what earlier entries made) is
 * never used. Only tar and zip are enabled, and only the compression
 * filters libarchive carries in-process: a filter it lacks would be run as
 * an external program by the supervisor, which must not happen.
 */
static void enable_filters(struct archive *a)
{
	if (la.zlib_version())
		la.read_support_filter_gzip(a);
	if (la.bzlib_version())
		la.read_support_filter_bzip2(a);
	if (la.liblzma_version()) {
		la.read_support_filter_xz(a);
		la.read_support_filter_lzma(a);
	}
	if (la.libzstd_version())
		la.read_support_filter_zstd(a);
	if (la.liblz4_version())
		la.read_support_filter_lz4(a);
	la.read_support_filter_compress(a);	/* built in: .Z */
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

/*
 * What decoding may take. libarchive 3.6.2 gives liblzma no memory limit
 * (UINT64_MAX, and no option to set one): a .tar.xz whose block header
 * declared a 2 GiB dictionary had it allocated and filled, and corral
 * reached 2 GiB resident from a 305 KB archive. .lzma and lzip headers,
 * zip's lzma, xz and PPMd entries declare their sizes too, in any layer
 * of a chain of filters, where no header can be read before libarchive
 * reads it. So corral's address space itself is bounded while an archive
 * is read: what it has mapped then (libarchive loaded) plus this. An
 * allocation past it fails, and the decoder's error refuses the input.
 * zstd is bounded by libzstd itself (windows past 128 MiB are refused).
 * corral's own record of each entry (a path of up to PATH_MAX, the
 * entry, its index slots) gets room of its own, per entry the files
 * budget allows (at most a million): 40 000 entries of 3.7 KB paths
 * held 150 MiB.
 */
#define CR_IO_DECODE_MEM (256ull << 20)
#define CR_IO_ENTRY_MEM (PATH_MAX + 512ull)

/* What decoding and the records may take, for max_files entries. */
static unsigned long long mem_room(uint64_t max_files)
{
	return CR_IO_DECODE_MEM +
	       (max_files < 1000000 ? max_files : 1000000) * CR_IO_ENTRY_MEM;
}

/* Lower the soft RLIMIT_AS to that (never raise it); *old is the limit to
 * put back before anything else runs. The supervisor is single-threaded
 * here and the program does not exist yet: nothing else feels it. */
static int mem_bound(struct rlimit *old, uint64_t max_files)
{
	struct rlimit lim;
	unsigned long long pages, room = mem_room(max_files);
	long pg = sysconf(_SC_PAGESIZE);
	FILE *f;
	int n;

	if (getrlimit(RLIMIT_AS, old) < 0)
		return -errno;
	f = fopen("/proc/self/statm", "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu", &pages);
	fclose(f);
	if (n != 1 || pg <= 0)
		return -EIO;
	lim = *old;
	if (pages * (unsigned long long)pg + room < lim.rlim_cur)
		lim.rlim_cur = pages * (unsigned long long)pg + room;
	return setrlimit(RLIMIT_AS, &lim) < 0 ? -errno : 0;
}

#ifdef __SANITIZE_ADDRESS__
/* make asan: an allocation past the bound returns NULL, as libc's does,
 * where AddressSanitizer would abort the supervisor by default. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

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

/* libarchive's reason for a failed read: an allocation past the bound
 * above (a declared dictionary or window too large) says so. */
static const char *la_why(struct ex *x, char *buf, size_t len)
{
	const char *e = la.error_string(x->a);

	if (la.err_no(x->a) != ENOMEM)
		return e ? e : "corrupt";
	snprintf(buf, len, "decoding needs more memory than corral gives it (%llu MiB: a declared dictionary or window too large): %s",
		 mem_room(x->p->max_files) >> 20, e ? e : "out of memory");
	return buf;
}

/*
 * The data of an entry that places no file (a pax hard link keeps its
 * declared size; any entry may carry data libarchive would skip): read
 * here and counted against the disk budget, never written. Left unread,
 * libarchive inflated it unseen to reach the next header: 10 GiB of a
 * hard link's data in 17 KB kept the supervisor busy 74 s, outside every
 * budget, deaf to SIGTERM.
 */
static int drain(struct ex *x, const char *entry)
{
	char why[200];

	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = la.read_data_block(x->a, &buf, &len, &off), rc;

		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN)
			return refuse(x, entry, -EPERM, "unreadable data: %s",
				      la_why(x, why, sizeof(why)));
		if ((rc = cr_io_place_check(x->p)) ||
		    (rc = cr_io_place_skip(x->p, len)))
			return place_error(x, entry, rc);
	}
}

static int data(struct ex *x, const char *entry, struct archive_entry *e)
{
	int fd = cr_io_place_file(x->p, x->path, x->skip,
				  la.entry_perm(e));
	int rc = 0;

	if (fd < 0)
		return place_error(x, entry, fd);
	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = la.read_data_block(x->a, &buf, &len, &off);

		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN || off < 0) {
			char why[200];

			close(fd);
			return refuse(x, entry, -EPERM, "unreadable data: %s",
				      la_why(x, why, sizeof(why)));
		}
		rc = cr_io_place_write(x->p, fd, buf, len, (uint64_t)off);
		if (rc)
			break;
	}
	/* A declared size past the last block is a trailing hole. */
	if (!rc)
		rc = cr_io_place_file_end(x->p, fd, la.entry_size_is_set(e) &&
					  la.entry_size(e) > 0 ?
					  (uint64_t)la.entry_size(e) : 0);
	close(fd);
	if (rc == -EINVAL)
		return refuse(x, entry, -EPERM, "data blocks out of order");
	return rc ? place_error(x, entry, rc) : 0;
}

static int one(struct ex *x, struct archive_entry *e)
{
	const char *raw = la.entry_pathname(e);
	const char *hl = la.entry_hardlink(e);
	mode_t type = la.entry_filetype(e);
	char why[128];
	int rc;

	if (!raw)
		raw = la.entry_pathname_utf8(e);
	if (!raw)
		return refuse(x, "?", -EPERM, "a name that cannot be decoded");
	if (cr_io_name_norm(raw, x->name, sizeof(x->name), why, sizeof(why)))
		return refuse(x, raw, -EPERM, "%s", why);
	if (snprintf(x->path, sizeof(x->path), "%s%s%s", x->dest,
		     x->dest[0] && x->name[0] ? "/" : "", x->name) >=
	    (int)sizeof(x->path))
		return refuse(x, raw, -EPERM, "a name too long");
	/* Every entry costs a walk of its path, whatever it places: an
	 * archive of one deep directory repeated 100 000 times placed 101
	 * directories and cost 36 s before the program ran. So entries
	 * count against the files budget, placing or not, and no path is
	 * deeper than the disk budget's walk can measure. */
	if (++x->p->entries > x->p->max_files)
		return place_error(x, raw, -EDQUOT);
	{
		size_t depth = 1;

		for (const char *c = x->path; *c; c++)
			depth += *c == '/';
		if (depth >= CR_BUDGET_WALK_DEPTH - 1)
			return refuse(x, raw, -EPERM,
				      "deeper than %d levels (the disk budget could not measure it)",
				      CR_BUDGET_WALK_DEPTH - 2);
	}

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
		return rc ? place_error(x, raw, rc) : drain(x, raw);
	}
	switch (type) {
	case AE_IFDIR:
		rc = cr_io_place_dir(x->p, x->path, x->skip, la.entry_perm(e));
		if (rc < 0)
			return place_error(x, raw, rc);
		close(rc);
		return drain(x, raw);
	case AE_IFREG:
		if (!x->name[0])
			return refuse(x, raw, -EPERM, "a file named as the destination itself");
		return data(x, raw, e);
	case AE_IFLNK: {
		const char *t = la.entry_symlink(e);
		char q[96];

		if (!x->name[0])
			return refuse(x, raw, -EPERM, "a link named as the destination itself");
		if (!t || !cr_io_link_inside(x->name, t))
			return refuse(x, raw, -EPERM,
				      "a symbolic link to %s, which leaves the destination",
				      cr_str_quote(t ? t : "", q, sizeof(q)));
		rc = cr_io_place_symlink(x->p, x->path, x->skip, t);
		return rc ? place_error(x, raw, rc) : drain(x, raw);
	}
	default:
		return refuse(x, raw, -EPERM, "%s (only files, directories and links are extracted)",
			      type_name(type));
	}
}

/*
 * What one header read may decode for free: a pax or GNU header naming a
 * path and a link target of PATH_MAX each, with room. Past it the bytes
 * count as skipped data: libarchive reads up to 32 special headers of
 * 1 MiB each for one entry, all inside one call.
 */
#define CR_IO_HEADER_FREE (16 << 10)

int cr_io_archive_extract(struct cr_io_place *p, int fd, const char *label,
			  const char *dest)
{
	struct ex x = { .p = p, .label = label, .dest = dest,
			.skip = dest[0] ? strlen(dest) + 1 : 0 };
	struct archive_entry *e;
	struct rlimit old;
	char why[200];
	int rc = 0, r;

	if ((rc = la_load(p->why, sizeof(p->why))))
		return rc;
	/* A hard link may name only what this archive placed. */
	cr_io_place_scope(p);
	x.a = la.read_new();
	if (!x.a)
		return -ENOMEM;
	la.read_support_format_tar(x.a);
	la.read_support_format_zip(x.a);
	enable_filters(x.a);
	if ((rc = mem_bound(&old, p->max_files))) {
		cr_errf(p->why, sizeof(p->why), "input %s: cannot bound the memory of decoding: %s",
			label, strerror(-rc));
		la.read_free(x.a);
		return rc;
	}
	if (la.read_open_fd(x.a, fd, 65536) != ARCHIVE_OK) {
		if (la.err_no(x.a) == ENOMEM)
			cr_errf(p->why, sizeof(p->why), "input %s: %s", label,
				la_why(&x, why, sizeof(why)));
		else
			cr_errf(p->why, sizeof(p->why), "input %s: not a tar or zip archive: %s",
				label, la.error_string(x.a) ?: "unknown format");
		rc = -EPERM;
	}
	while (!rc) {
		la_int64_t at = la.filter_bytes(x.a, 0), d;

		/* Between entries too: a call of libarchive's decodes at
		 * most the headers below, then comes back here. */
		if ((rc = cr_io_place_check(p))) {
			rc = place_error(&x, NULL, rc);
			break;
		}
		r = la.read_next_header(x.a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			cr_errf(p->why, sizeof(p->why),
				"input %s: unreadable archive after %zu entries: %s",
				label, p->n, la_why(&x, why, sizeof(why)));
			rc = -EPERM;
			break;
		}
		/* Headers decoded (a filter inflated them; a plain file's
		 * bytes cost only their reading). */
		d = la.filter_bytes(x.a, 0) - at;
		if (la.filter_count(x.a) > 1 && at >= 0 && d > CR_IO_HEADER_FREE &&
		    (rc = cr_io_place_skip(p, (uint64_t)(d - CR_IO_HEADER_FREE)))) {
			rc = place_error(&x, la.entry_pathname(e) ?: "?", rc);
			break;
		}
		rc = one(&x, e);
	}
	la.read_free(x.a);
	/* Before anything else runs, the program above all. */
	if (setrlimit(RLIMIT_AS, &old) < 0 && !rc) {
		rc = -errno;
		cr_errf(p->why, sizeof(p->why), "input %s: cannot restore the address-space limit: %s",
			label, strerror(-rc));
	}
	return rc;
}
