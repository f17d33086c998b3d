/* policy/dnsmsg.c: bounded parsing of DNS queries and upstream answers and
 * building of corral's own answers; pure, so it is unit-tested apart. */
#include <errno.h>
#include <string.h>

#include "corral/dnsmsg.h"

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Append to q->name: a byte as is, or as its \DDD escape (a byte no name
 * on the allow list has), while there is room; q->name_cut once not. */
static void name_put(struct cr_dns_question *q, size_t *nl, uint8_t c,
		     bool esc)
{
	size_t need = esc ? 4 : 1;

	if (q->name_cut || *nl + need >= sizeof(q->name) - (esc ? 3 : 0)) {
		q->name_cut = true;
		return;
	}
	if (esc) {
		q->name[(*nl)++] = '\\';
		q->name[(*nl)++] = (char)('0' + c / 100);
		q->name[(*nl)++] = (char)('0' + c / 10 % 10);
		q->name[(*nl)++] = (char)('0' + c % 10);
	} else {
		q->name[(*nl)++] = (char)c;
	}
}

int cr_dns_parse_query(const uint8_t *m, size_t len, struct cr_dns_question *q)
{
	size_t off = 12, nl = 0, raw = 0;

	memset(q, 0, sizeof(*q));
	if (len < 12)
		return -1;	/* too short to answer at all */
	q->id = get16(m);
	q->rd = m[2] & 1;
	if (m[2] & 0x80)
		return -1;	/* a response: ignore */
	if ((m[2] >> 3) & 0xf)
		return CR_DNS_NOTIMP;
	if (get16(m + 4) != 1 || get16(m + 6) || get16(m + 8))
		return CR_DNS_FORMERR;
	for (;;) {
		uint8_t l;

		if (off >= len)
			return CR_DNS_FORMERR;
		l = m[off++];
		if (!l)
			break;
		if (l > 63 || off + l > len || raw + l + 1 >= sizeof(q->name))
			return CR_DNS_FORMERR;
		if (raw) {
			name_put(q, &nl, '.', false);
			raw++;
		}
		for (uint8_t i = 0; i < l; i++) {
			uint8_t c = m[off + i];
			bool ok;

			if (c >= 'A' && c <= 'Z')
				c = (uint8_t)(c - 'A' + 'a');
			ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			     c == '-' || c == '_';
			if (!ok)
				q->bad_name = true;
			name_put(q, &nl, c, !ok);
		}
		raw += l;
		off += l;
	}
	if (q->name_cut) {
		if (nl > sizeof(q->name) - 4)
			nl = sizeof(q->name) - 4;
		memcpy(q->name + nl, "...", 3);
		nl += 3;
	}
	q->name[nl] = '\0';
	if (!raw || off + 4 > len)
		return CR_DNS_FORMERR;
	q->qtype = get16(m + off);
	q->qclass = get16(m + off + 2);
	q->end = off + 4;
	if (q->bad_name)
		return CR_DNS_NXDOMAIN;
	if (q->qclass != 1)
		return CR_DNS_REFUSED;
	return CR_DNS_OK;
}

size_t cr_dns_build_answer(uint8_t *out, uint16_t id, bool rd,
			   const uint8_t *question, size_t qlen, int rcode,
			   uint16_t qtype, const uint8_t (*addrs)[16],
			   size_t naddrs, uint32_t ttl)
{
	size_t off = 12, alen = qtype == CR_DNS_A ? 4 : 16, n = 0;

	if (qlen > CR_DNS_MAX - 12)
		qlen = 0;
	memset(out, 0, 12);
	put16(out, id);
	out[2] = (uint8_t)(0x80 | (rd ? 1 : 0));
	out[3] = (uint8_t)(0x80 | (rcode & 0xf));
	put16(out + 4, qlen ? 1 : 0);
	memcpy(out + off, question, qlen);
	off += qlen;
	for (; n < naddrs && off + 12 + alen <= CR_DNS_MAX; n++) {
		put16(out + off, 0xc00c);
		put16(out + off + 2, qtype);
		put16(out + off + 4, 1);
		put16(out + off + 6, (uint16_t)(ttl >> 16));
		put16(out + off + 8, (uint16_t)ttl);
		put16(out + off + 10, (uint16_t)alen);
		memcpy(out + off + 12, addrs[n], alen);
		off += 12 + alen;
	}
	put16(out + 6, (uint16_t)n);
	return off;
}

/* Byte-wise, ASCII case folded: an upstream may randomise the case of the
 * name it echoes (0x20 encoding). */
static bool same_question(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t x = a[i], y = b[i];

		if (x >= 'A' && x <= 'Z')
			x = (uint8_t)(x - 'A' + 'a');
		if (y >= 'A' && y <= 'Z')
			y = (uint8_t)(y - 'A' + 'a');
		if (x != y)
			return false;
	}
	return true;
}

/* Skip a possibly compressed name; the offset after it, or 0. */
static size_t skip_name(const uint8_t *m, size_t len, size_t off)
{
	for (int labels = 0; labels < 128; labels++) {
		uint8_t l;

		if (off >= len)
			return 0;
		l = m[off];
		if (!l)
			return off + 1;
		if ((l & 0xc0) == 0xc0)
			return off + 2 <= len ? off + 2 : 0;
		if (l > 63)
			return 0;
		off += 1u + l;
	}
	return 0;
}

int cr_dns_parse_answer(const uint8_t *m, size_t len, uint16_t id,
			const uint8_t *question, size_t qlen, uint16_t qtype,
			uint32_t ttl_cap, struct cr_dns_answer *a)
{
	size_t off = 12 + qlen, alen = qtype == CR_DNS_A ? 4 : 16;
	uint16_t an;

	memset(a, 0, sizeof(*a));
	a->ttl = ttl_cap;
	if (len < off || !(m[2] & 0x80) || get16(m) != id ||
	    get16(m + 4) != 1 || !same_question(m + 12, question, qlen))
		return -EINVAL;
	a->rcode = m[3] & 0xf;
	an = get16(m + 6);
	for (uint16_t i = 0; a->rcode == CR_DNS_OK && i < an; i++) {
		uint16_t type, class, rdlen;
		uint32_t t;

		off = skip_name(m, len, off);
		if (!off || off + 10 > len)
			return -EINVAL;
		type = get16(m + off);
		class = get16(m + off + 2);
		t = (uint32_t)get16(m + off + 4) << 16 | get16(m + off + 6);
		rdlen = get16(m + off + 8);
		off += 10;
		if (off + rdlen > len)
			return -EINVAL;
		if (type == qtype && class == 1 && rdlen == alen &&
		    a->naddrs < CR_DNS_MAX_ADDRS) {
			memcpy(a->addrs[a->naddrs++], m + off, alen);
			if (t < a->ttl)
				a->ttl = t;
		}
		off += rdlen;
	}
	return 0;
}
