/* tests/unit/test_tlssni.c: the server name of a TLS ClientHello: found,
 * absent, incomplete, not TLS, and malformed in every length field. */
#include <stdlib.h>

#include "corral/tlssni.h"
#include "harness.h"

/* A ClientHello with an unrelated extension, then server_name = name
 * (NULL: no server_name). Returns its length. */
static size_t hello(uint8_t *m, const char *name)
{
	size_t off = 5, hs, ext, nl = name ? strlen(name) : 0;

	m[0] = 22, m[1] = 3, m[2] = 1;
	m[off] = 1;			/* ClientHello */
	hs = off;
	off += 4;
	m[off++] = 3, m[off++] = 3;	/* version */
	memset(m + off, 7, 32);		/* random */
	off += 32;
	m[off++] = 0;			/* session id */
	m[off++] = 0, m[off++] = 2, m[off++] = 0x13, m[off++] = 0x01;
	m[off++] = 1, m[off++] = 0;	/* compression: null */
	ext = off;
	off += 2;
	/* supported_groups, 4 bytes of data */
	m[off++] = 0, m[off++] = 10, m[off++] = 0, m[off++] = 4;
	m[off++] = 0, m[off++] = 2, m[off++] = 0, m[off++] = 29;
	if (name) {
		m[off++] = 0, m[off++] = 0;	/* server_name */
		m[off++] = 0, m[off++] = (uint8_t)(nl + 5);
		m[off++] = 0, m[off++] = (uint8_t)(nl + 3);
		m[off++] = 0;			/* host_name */
		m[off++] = 0, m[off++] = (uint8_t)nl;
		memcpy(m + off, name, nl);
		off += nl;
	}
	m[ext] = (uint8_t)((off - ext - 2) >> 8);
	m[ext + 1] = (uint8_t)(off - ext - 2);
	m[hs + 1] = 0;
	m[hs + 2] = (uint8_t)((off - hs - 4) >> 8);
	m[hs + 3] = (uint8_t)(off - hs - 4);
	m[3] = (uint8_t)((off - 5) >> 8);
	m[4] = (uint8_t)(off - 5);
	return off;
}

TEST_IMPL(tlssni_found)
{
	uint8_t m[512];
	char name[254];
	size_t n = hello(m, "API.Example.com");

	ASSERT_EQ(cr_tls_sni(m, n, name, sizeof(name)), 0);
	ASSERT_STREQ(name, "api.example.com");
	/* Every shorter prefix asks for more. */
	for (size_t i = 1; i < n; i++)
		if (cr_tls_sni(m, i, name, sizeof(name)) != -EAGAIN)
			FAIL_("prefix of %zu bytes: want -EAGAIN", i);
	n = hello(m, NULL);
	ASSERT_EQ(cr_tls_sni(m, n, name, sizeof(name)), -ENOENT);
}

TEST_IMPL(tlssni_not_tls)
{
	char name[254];

	ASSERT_EQ(cr_tls_sni((const uint8_t *)"GET / HTTP/1.1\r\n", 16, name,
			     sizeof(name)), -EPROTO);
	ASSERT_EQ(cr_tls_sni((const uint8_t *)"\x16\x02", 2, name,
			     sizeof(name)), -EPROTO);
	ASSERT_EQ(cr_tls_sni((const uint8_t *)"", 0, name, sizeof(name)),
		  -EAGAIN);
}

TEST_IMPL(tlssni_malformed)
{
	uint8_t m[512], c[512];
	char name[254];
	size_t n = hello(m, "a.example");

	/* Any single length field pushed past its bounds is -EINVAL (or,
	 * for the record length, a request for bytes that never come). */
	static const size_t fields[] = { 3, 4, 6, 7, 8, 43, 45, 48, 50, 51,
					 55, 63, 65, 68 };

	for (size_t i = 0; i < CR_ARRAY_SIZE(fields); i++) {
		int rc;

		memcpy(c, m, n);
		c[fields[i]] = 0xff;
		rc = cr_tls_sni(c, n, name, sizeof(name));
		if (rc == 0)
			FAIL_("byte %zu = 0xff still parsed", fields[i]);
	}
	memcpy(c, m, n);
	c[5] = 2;			/* ServerHello */
	ASSERT_EQ(cr_tls_sni(c, n, name, sizeof(name)), -EINVAL);
	/* A name longer than the caller's buffer. */
	ASSERT_EQ(cr_tls_sni(m, n, name, 5), -EINVAL);
	/* Random bytes after a valid record header never read past len. */
	srand(777);
	for (int i = 0; i < 20000; i++) {
		size_t len = 5 + (size_t)(rand() % 300);
		uint8_t *heap = malloc(len);

		ASSERT(heap);
		for (size_t j = 0; j < len; j++)
			heap[j] = (uint8_t)rand();
		heap[0] = 22, heap[1] = 3;
		heap[3] = (uint8_t)((len - 5) >> 8);
		heap[4] = (uint8_t)(len - 5);
		if (i % 2 && len > 5)
			heap[5] = 1;
		(void)cr_tls_sni(heap, len, name, sizeof(name));
		free(heap);
	}
}
