/* tracer/audit/sha256.c: SHA-256 through libcrypto's EVP interface, the one
 * digest wrapper of the program (include/corral/digest.h). */
#include <errno.h>
#include <stdio.h>
#include <openssl/evp.h>

#include "corral/digest.h"

int cr_sha256_hex(const void *data, size_t len, char out[CR_SHA256_HEX_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	out[0] = 0;
	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
		return -EIO;
	for (unsigned int i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}
