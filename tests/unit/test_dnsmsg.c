/* tests/unit/test_dnsmsg.c: the DNS responder's parser and builder: good
 * queries, every malformed form it must refuse, answers it must accept or
 * reject, and random bytes that must never be read out of bounds. */
#include <stdlib.h>

#include "corral/dnsmsg.h"
#include "harness.h"

/* A query for name (dotted) of type qtype; returns its length. */
static size_t query(uint8_t *m, uint16_t id, const char *name, uint16_t qtype)
{
	size_t off = 12;

	memset(m, 0, 12);
	m[0] = (uint8_t)(id >> 8);
	m[1] = (uint8_t)id;
	m[2] = 1;	/* RD */
	m[5] = 1;	/* QDCOUNT */
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		m[off++] = (uint8_t)l;
		memcpy(m + off, name, l);
		off += l;
		name += l + (dot ? 1 : 0);
	}
	m[off++] = 0;
	m[off++] = (uint8_t)(qtype >> 8);
	m[off++] = (uint8_t)qtype;
	m[off++] = 0;
	m[off++] = 1;	/* IN */
	return off;
}

TEST_IMPL(dnsmsg_query)
{
	uint8_t m[600];
	struct cr_dns_question q;
	size_t n = query(m, 0x1234, "Api.Example.COM", CR_DNS_AAAA);
	char longname[300];

	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_OK);
	ASSERT_STREQ(q.name, "api.example.com");
	ASSERT_EQ(q.qtype, CR_DNS_AAAA);
	ASSERT_EQ(q.id, 0x1234);
	ASSERT(q.rd);
	ASSERT_EQ(q.end, n);
	ASSERT_EQ(cr_dns_parse_query(m, 11, &q), -1);		/* short */
	ASSERT_EQ(cr_dns_parse_query(m, n - 1, &q), CR_DNS_FORMERR);
	ASSERT_EQ(cr_dns_parse_query(m, 13, &q), CR_DNS_FORMERR);
	m[2] |= 0x80;						/* a response */
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), -1);
	m[2] = 1 | (2 << 3);					/* opcode 2 */
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_NOTIMP);
	m[2] = 1;
	m[5] = 2;						/* two questions */
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_FORMERR);
	m[5] = 1;
	m[7] = 1;						/* an answer */
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_FORMERR);
	m[7] = 0;
	m[12] = 0xc0;						/* compression */
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_FORMERR);
	m[12] = 60;						/* overruns */
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_FORMERR);
	n = query(m, 1, "a b.example", CR_DNS_A);		/* bad byte */
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_NXDOMAIN);
	/* Named for the record, the byte escaped. */
	ASSERT(q.bad_name && !q.name_cut);
	ASSERT_STREQ(q.name, "a\\032b.example");
	n = query(m, 1, "x.example", CR_DNS_A);
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_OK);
	ASSERT(!q.bad_name);
	/* Escapes past the room: cut, marked, still NUL-terminated. */
	memset(longname, 0x01, sizeof(longname));
	for (int i = 60; i < 250; i += 61)
		longname[i] = '.';
	longname[249] = '\0';
	n = query(m, 1, longname, CR_DNS_A);
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_NXDOMAIN);
	ASSERT(q.bad_name && q.name_cut);
	ASSERT(strlen(q.name) < sizeof(q.name));
	ASSERT_STREQ(q.name + strlen(q.name) - 3, "...");
	/* A valid part first, the escapes after it: the cut fits too. */
	memset(longname, 'a', sizeof(longname));
	for (int i = 60; i < 250; i += 61)
		longname[i] = '.';
	longname[240] = 0x01;
	longname[249] = '\0';
	n = query(m, 1, longname, CR_DNS_A);
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_NXDOMAIN);
	ASSERT(strlen(q.name) < sizeof(q.name));
	n = query(m, 1, "x.example", CR_DNS_A);
	m[n - 1] = 3;						/* class CH */
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_REFUSED);
	/* 5 labels of 60 bytes: longer than 253. */
	memset(longname, 'a', sizeof(longname));
	for (int i = 60; i < 300; i += 61)
		longname[i] = '.';
	longname[299] = '\0';
	n = query(m, 1, longname, CR_DNS_A);
	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_FORMERR);
	m[12] = 0;						/* the root */
	ASSERT_EQ(cr_dns_parse_query(m, 17, &q), CR_DNS_FORMERR);
}

TEST_IMPL(dnsmsg_answer)
{
	uint8_t m[600], out[CR_DNS_MAX];
	const uint8_t addrs[2][16] = { { 203, 0, 113, 7 }, { 198, 51, 100, 1 } };
	struct cr_dns_question q;
	struct cr_dns_answer a;
	size_t n = query(m, 7, "Example.com", CR_DNS_A), len;

	ASSERT_EQ(cr_dns_parse_query(m, n, &q), CR_DNS_OK);
	len = cr_dns_build_answer(out, 7, true, m + 12, n - 12, CR_DNS_OK,
				  CR_DNS_A, addrs, 2, 60);
	ASSERT_EQ(len, n + 2 * 16);
	ASSERT_EQ(cr_dns_parse_answer(out, len, 7, m + 12, n - 12, CR_DNS_A,
				      300, &a), 0);
	ASSERT_EQ(a.rcode, CR_DNS_OK);
	ASSERT_EQ(a.naddrs, 2);
	ASSERT_EQ(a.ttl, 60);
	ASSERT(!memcmp(a.addrs[1], addrs[1], 4));
	/* The same question in another case is still ours. */
	m[12 + 1] = 'e';
	ASSERT_EQ(cr_dns_parse_answer(out, len, 7, m + 12, n - 12, CR_DNS_A,
				      300, &a), 0);
	/* Not ours: another id, another name, a query, truncation. */
	ASSERT_EQ(cr_dns_parse_answer(out, len, 8, m + 12, n - 12, CR_DNS_A,
				      300, &a), -EINVAL);
	m[12 + 2] = 'y';
	ASSERT_EQ(cr_dns_parse_answer(out, len, 7, m + 12, n - 12, CR_DNS_A,
				      300, &a), -EINVAL);
	m[12 + 2] = 'x';
	ASSERT_EQ(cr_dns_parse_answer(out, len - 1, 7, m + 12, n - 12,
				      CR_DNS_A, 300, &a), -EINVAL);
	out[2] &= 0x7f;
	ASSERT_EQ(cr_dns_parse_answer(out, len, 7, m + 12, n - 12, CR_DNS_A,
				      300, &a), -EINVAL);
	/* An NXDOMAIN answer carries no address. */
	len = cr_dns_build_answer(out, 7, true, m + 12, n - 12,
				  CR_DNS_NXDOMAIN, CR_DNS_A, NULL, 0, 0);
	ASSERT_EQ(cr_dns_parse_answer(out, len, 7, m + 12, n - 12, CR_DNS_A,
				      300, &a), 0);
	ASSERT_EQ(a.rcode, CR_DNS_NXDOMAIN);
	ASSERT_EQ(a.naddrs, 0);
}

TEST_IMPL(dnsmsg_random_bytes)
{
	uint8_t m[512], qb[64];
	struct cr_dns_question q;
	struct cr_dns_answer a;
	size_t qn = query(qb, 9, "a.b", CR_DNS_A);

	srand(12345);
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)(rand() % (int)sizeof(m));
		uint8_t *heap;

		for (size_t j = 0; j < len; j++)
			m[j] = (uint8_t)rand();
		if (i % 2) {	/* a plausible header and question */
			memcpy(m, qb, len < qn ? len : qn);
			if (len > 2)
				m[2] |= 0x80;
		}
		/* An exact-size heap copy: a read past the end is an
		 * AddressSanitizer failure. */
		heap = malloc(len ? len : 1);
		ASSERT(heap);
		memcpy(heap, m, len);
		(void)cr_dns_parse_query(heap, len, &q);
		(void)cr_dns_parse_answer(heap, len, 9, qb + 12, qn - 12,
					  CR_DNS_A, 300, &a);
		ASSERT(a.naddrs <= CR_DNS_MAX_ADDRS);
		free(heap);
	}
}
