/* tracer/audit/sha256.c: SHA-256 and base64 through libcrypto's EVP calls,
 * loaded on first use: runs that digest nothing never map libcrypto. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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
	EVP_MD_CTX *(*ctx_new)(void);
	void (*ctx_free)(EVP_MD_CTX *);
	int (*init)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
	int (*update)(EVP_MD_CTX *, const void *, size_t);
	int (*final)(EVP_MD_CTX *, unsigned char *, unsigned int *);
	bool ok;
} lc;
static pthread_once_t lc_once = PTHREAD_ONCE_INIT;

static void lc_load(void)
{
	void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
	void *d, *s, *e, *cn, *cf, *in, *up, *fi;

	if (!lib) {
		fprintf(stderr, "corral: cannot load libcrypto.so.3: %s\n",
			dlerror());
		return;
	}
	d = dlsym(lib, "EVP_Digest");
	s = dlsym(lib, "EVP_sha256");
	e = dlsym(lib, "EVP_EncodeBlock");
	cn = dlsym(lib, "EVP_MD_CTX_new");
	cf = dlsym(lib, "EVP_MD_CTX_free");
	in = dlsym(lib, "EVP_DigestInit_ex");
	up = dlsym(lib, "EVP_DigestUpdate");
	fi = dlsym(lib, "EVP_DigestFinal_ex");
	if (!d || !s || !e || !cn || !cf || !in || !up || !fi)
		return;
	memcpy(&lc.digest, &d, sizeof(d));
	memcpy(&lc.sha256, &s, sizeof(s));
	memcpy(&lc.encode, &e, sizeof(e));
	memcpy(&lc.ctx_new, &cn, sizeof(cn));
	memcpy(&lc.ctx_free, &cf, sizeof(cf));
	memcpy(&lc.init, &in, sizeof(in));
	memcpy(&lc.update, &up, sizeof(up));
	memcpy(&lc.final, &fi, sizeof(fi));
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

struct cr_sha256 {
	EVP_MD_CTX *ctx;
	bool failed;
};

struct cr_sha256 *cr_sha256_new(void)
{
	struct cr_sha256 *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	pthread_once(&lc_once, lc_load);
	h->ctx = lc.ok ? lc.ctx_new() : NULL;
	if (!h->ctx || lc.init(h->ctx, lc.sha256(), NULL) != 1)
		h->failed = true;
	return h;
}

void cr_sha256_update(struct cr_sha256 *h, const void *p, size_t n)
{
	if (h && !h->failed && n && lc.update(h->ctx, p, n) != 1)
		h->failed = true;
}

void cr_sha256_final(struct cr_sha256 *h, unsigned char out[CR_SHA256_LEN])
{
	unsigned int len = 0;

	memset(out, 0, CR_SHA256_LEN);
	if (!h)
		return;
	if (!h->failed && (lc.final(h->ctx, out, &len) != 1 ||
			   len != CR_SHA256_LEN))
		memset(out, 0, CR_SHA256_LEN);
	if (h->ctx)
		lc.ctx_free(h->ctx);
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
