/* tracer/io/digest.c: the tree digest of a directory or archive input as
 * docs/interface.md defines it (SHA-256 from tracer/audit/sha256.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

void cr_sha256_buf(const void *p, size_t n, unsigned char out[CR_SHA256_LEN])
{
	struct cr_sha256 *h = cr_sha256_new();

	cr_sha256_update(h, p, n);
	cr_sha256_final(h, out);
}

void cr_sha256_argv(char *const *argv, unsigned char out[CR_SHA256_LEN])
{
	struct cr_sha256 *h = cr_sha256_new();

	for (char *const *a = argv; a && *a; a++)
		cr_sha256_update(h, *a, strlen(*a) + 1);
	cr_sha256_final(h, out);
}

static int by_rel(const void *a, const void *b)
{
	const struct cr_io_entry *x = a, *y = b;

	/* strcmp compares as unsigned char: byte order, any locale. */
	return strcmp(x->path + x->skip, y->path + y->skip);
}

/* One record per entry, in byte order of the DEST-relative path:
 *   directory      "d" SP path NUL
 *   regular file   "f" SP ("x" | "-") SP size SP sha256-hex SP path NUL
 *   symbolic link  "l" SP path NUL target NUL
 * size in decimal without leading zeros; "x" when the owner's execute bit
 * is set. Nothing else (times, owners, other mode bits, the archive's
 * order or format) enters, so the same tree digests the same anywhere. */
void cr_io_tree_digest(struct cr_io_entry *e, size_t n,
		       unsigned char out[CR_SHA256_LEN])
{
	struct cr_sha256 *h = cr_sha256_new();

	qsort(e, n, sizeof(*e), by_rel);
	for (size_t i = 0; i < n; i++) {
		const char *rel = e[i].path + e[i].skip;
		char head[128], hex[CR_SHA256_HEX];
		int len;

		if (!rel[0])
			continue;	/* DEST itself */
		switch (e[i].kind) {
		case CR_IO_DIR:
			cr_sha256_update(h, "d ", 2);
			break;
		case CR_IO_FILE:
			cr_sha256_tohex(e[i].sha, hex);
			len = snprintf(head, sizeof(head), "f %c %" PRIu64 " %s ",
				       e[i].exec ? 'x' : '-', e[i].size, hex);
			cr_sha256_update(h, head, (size_t)len);
			break;
		case CR_IO_SYMLINK:
			cr_sha256_update(h, "l ", 2);
			break;
		}
		cr_sha256_update(h, rel, strlen(rel) + 1);
		if (e[i].kind == CR_IO_SYMLINK)
			cr_sha256_update(h, e[i].target, strlen(e[i].target) + 1);
	}
	cr_sha256_final(h, out);
}
