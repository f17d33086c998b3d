/* include/corral/digest.h: SHA-256 digests for the audit chain (and any
 * other area that needs one) and base64, through libcrypto loaded on use. */
#ifndef CORRAL_DIGEST_H
#define CORRAL_DIGEST_H

#include <stddef.h>

#define CR_SHA256_HEX_LEN 64

/* out receives 64 lowercase hex digits and a NUL. 0, or -EIO when
 * libcrypto fails (out is then the empty string). */
int cr_sha256_hex(const void *data, size_t len, char out[CR_SHA256_HEX_LEN + 1]);
/* Standard base64 with padding into out (at least 4*ceil(len/3)+1 bytes).
 * 0, or -EIO. */
int cr_base64(const void *data, size_t len, char *out, size_t outlen);

#endif
