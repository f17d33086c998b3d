/* tracer/audit/sha256.c: SHA-256 and base64 through libcrypto's EVP calls,
 * loaded on first use: runs without an audit trail never map libcrypto. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>

#include "corral/digest.h"

/* libcrypto is 4.7 MB with ~38000 relocations: linked, it cost every run
 * ~10 M cycles of dynamic loading (LD_DEBUG=statistics) before main. */
static struct {
	int (*digest)(const void *, size_t, unsigned char *, unsigned int *,
		      const EVP_MD *, ENGINE *);
	const EVP_MD *(*sha256)(void);
	int (*encode)(unsigned char *, const unsigned char *, int);
	bool ok;
} lc;
static pthread_once_t lc_once = PTHREAD_ONCE_INIT;

static void lc_load(void)
{
	void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
	void *d, *s, *e;

	if (!lib) {
		fprintf(stderr, "corral: cannot load libcrypto.so.3: %s\n",
			dlerror());
		return;
	}
	d = dlsym(lib, "EVP_Digest");
	s = dlsym(lib, "EVP_sha256");
	e = dlsym(lib, "EVP_EncodeBlock");
	if (!d || !s || !e)
		return;
	memcpy(&lc.digest, &d, sizeof(d));
	memcpy(&lc.sha256, &s, sizeof(s));
	memcpy(&lc.encode, &e, sizeof(e));
	lc.ok = true;
}

int cr_sha256_hex(const void *data, size_t len, char out[CR_SHA256_HEX_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	out[0] = 0;
	pthread_once(&lc_once, lc_load);
	if (!lc.ok || !lc.digest(data, len, md, &n, lc.sha256(), NULL) ||
	    n != 32)
		return -EIO;
	for (unsigned int i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int cr_base64(const void *data, size_t len, char *out, size_t outlen)
{
	int n;

	out[0] = 0;
	pthread_once(&lc_once, lc_load);
	if (!lc.ok || len > (size_t)0x3fffffff || outlen < 4 * ((len + 2) / 3) + 1)
		return -EIO;
	n = lc.encode((unsigned char *)out, data, (int)len);
	if (n < 0)
		return -EIO;
	out[n] = 0;
	return 0;
}
