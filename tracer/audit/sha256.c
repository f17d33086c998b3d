/* tracer/audit/sha256.c: SHA-256 and base64 through nettle, the small
 * crypto library (no constructors, ~0.4 ms to map) every run can afford. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <nettle/base64.h>
#include <nettle/sha2.h>

#include "corral/digest.h"

/*
 * libcrypto did this before: 4.7 MB with ~38000 relocations and a
 * configuration pass at first use, it cost every run ~3 ms loaded with
 * dlopen (the run digests its command and policy, so every run loaded it).
 * nettle's calls cannot fail; the error returns are kept for the callers.
 */
int cr_sha256_hex(const void *data, size_t len, char out[CR_SHA256_HEX_LEN + 1])
{
	struct sha256_ctx c;
	unsigned char md[CR_SHA256_LEN];

	sha256_init(&c);
	sha256_update(&c, len, data);
	sha256_digest(&c, sizeof(md), md);
	cr_sha256_tohex(md, out);
	return 0;
}

int cr_base64(const void *data, size_t len, char *out, size_t outlen)
{
	out[0] = 0;
	if (len > (size_t)0x3fffffff || outlen < BASE64_ENCODE_RAW_LENGTH(len) + 1)
		return -EIO;
	base64_encode_raw(out, len, data);
	out[BASE64_ENCODE_RAW_LENGTH(len)] = 0;
	return 0;
}

struct cr_sha256 {
	struct sha256_ctx ctx;
};

struct cr_sha256 *cr_sha256_new(void)
{
	struct cr_sha256 *h = malloc(sizeof(*h));

	if (h)
		sha256_init(&h->ctx);
	return h;
}

void cr_sha256_update(struct cr_sha256 *h, const void *p, size_t n)
{
	if (h && n)
		sha256_update(&h->ctx, n, p);
}

void cr_sha256_final(struct cr_sha256 *h, unsigned char out[CR_SHA256_LEN])
{
	memset(out, 0, CR_SHA256_LEN);
	if (!h)
		return;
	sha256_digest(&h->ctx, CR_SHA256_LEN, out);
	free(h);
}

void cr_sha256_tohex(const unsigned char d[CR_SHA256_LEN],
		     char out[CR_SHA256_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < CR_SHA256_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[CR_SHA256_HEX_LEN] = 0;
}
