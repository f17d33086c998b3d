/* include/corral/digest.h: SHA-256 digests (the audit chain, inputs and
 * artifacts) and base64, through nettle. */
#ifndef CORRAL_DIGEST_H
#define CORRAL_DIGEST_H

#include <stddef.h>

#define CR_SHA256_LEN 32
#define CR_SHA256_HEX_LEN 64

/* Incremental: a digest that could not be computed (no memory for h)
 * comes out all zeros, which never matches a real one. */
struct cr_sha256;	/* opaque */
struct cr_sha256 *cr_sha256_new(void);
void cr_sha256_update(struct cr_sha256 *h, const void *p, size_t n);
/* Writes the digest and frees h (NULL gives zeros). */
void cr_sha256_final(struct cr_sha256 *h, unsigned char out[CR_SHA256_LEN]);
/* 64 lowercase hex digits and a NUL for a 32-byte digest. */
void cr_sha256_tohex(const unsigned char d[CR_SHA256_LEN],
		     char out[CR_SHA256_HEX_LEN + 1]);

/* out receives 64 lowercase hex digits and a NUL. Returns 0. */
int cr_sha256_hex(const void *data, size_t len, char out[CR_SHA256_HEX_LEN + 1]);
/* Standard base64 with padding into out (at least 4*ceil(len/3)+1 bytes).
 * 0, or -EIO. */
int cr_base64(const void *data, size_t len, char *out, size_t outlen);

#endif
