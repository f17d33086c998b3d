/* tracer/io/digest.c: SHA-256 through libcrypto, and the tree digest of a
 * directory or archive input as docs/interface.md defines it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "io.h"

/* libcrypto's EVP interface: a reviewed, constant-shape implementation the
 * host already carries (libssl3), rather than one written here. */
struct cr_sha256 {
	EVP_MD_CTX *ctx;
	bool failed;
};

struct cr_sha256 *cr_sha256_new(void)
{
	struct cr_sha256 *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
		h->failed = true;
	return h;
}

void cr_sha256_update(struct cr_sha256 *h, const void *p, size_t n)
{
	if (h && !h->failed && n &&
	    EVP_DigestUpdate(h->ctx, p, n) != 1)
		h->failed = true;
}

/* A digest that could not be computed is all zeros: it can never match a
 * real one, so a check against it fails rather than passes. */
void cr_sha256_final(struct cr_sha256 *h, unsigned char out[CR_SHA256_LEN])
{
	unsigned len = 0;

	memset(out, 0, CR_SHA256_LEN);
	if (!h)
		return;
	if (!h->failed && EVP_DigestFinal_ex(h->ctx, out, &len) != 1)
		memset(out, 0, CR_SHA256_LEN);
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

void cr_sha256_buf(const void *p, size_t n, unsigned char out[CR_SHA256_LEN])
{
	struct cr_sha256 *h = cr_sha256_new();

	cr_sha256_update(h, p, n);
	cr_sha256_final(h, out);
}

void cr_sha256_hex(const unsigned char d[CR_SHA256_LEN], char out[CR_SHA256_HEX])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < CR_SHA256_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * CR_SHA256_LEN] = 0;
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
			cr_sha256_hex(e[i].sha, hex);
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
