/* policy/tlssni.c: find the server_name extension of a TLS ClientHello in
 * the first record a client sends; bounded, pure, unit-tested. */
#include <errno.h>
#include <string.h>

#include "corral/tlssni.h"

static size_t get16(const uint8_t *p)
{
	return (size_t)p[0] << 8 | p[1];
}

int cr_tls_sni(const uint8_t *m, size_t len, char *out, size_t outlen)
{
	size_t rec, off, end, l;

	if (len < 1)
		return -EAGAIN;
	if (m[0] != 22)			/* not a handshake record */
		return -EPROTO;
	if (len >= 2 && m[1] != 3)	/* not SSL 3 / TLS 1.x */
		return -EPROTO;
	if (len < 5)
		return -EAGAIN;
	rec = get16(m + 3);
	if (rec < 4 || rec > 16384)
		return -EINVAL;
	if (len < 5 + rec)
		return -EAGAIN;
	end = 5 + rec;
	off = 5;
	/* Handshake header: ClientHello, its length within this record
	 * (a ClientHello split over records is refused: none is that big in
	 * practice, and reading further would need more buffering). */
	if (m[off] != 1)
		return -EINVAL;
	l = (size_t)m[off + 1] << 16 | get16(m + off + 2);
	off += 4;
	if (off + l > end)
		return -EINVAL;
	end = off + l;
	off += 2 + 32;			/* version, random */
	if (off + 1 > end)
		return -EINVAL;
	off += 1 + m[off];		/* session id */
	if (off + 2 > end)
		return -EINVAL;
	off += 2 + get16(m + off);	/* cipher suites */
	if (off + 1 > end)
		return -EINVAL;
	off += 1 + m[off];		/* compression methods */
	if (off == end)
		return -ENOENT;		/* no extensions at all */
	if (off + 2 > end)
		return -EINVAL;
	l = get16(m + off);
	off += 2;
	if (off + l > end)
		return -EINVAL;
	end = off + l;
	while (off + 4 <= end) {
		size_t type = get16(m + off), elen = get16(m + off + 2);
		size_t p, lend;

		off += 4;
		if (off + elen > end)
			return -EINVAL;
		if (type != 0) {
			off += elen;
			continue;
		}
		/* server_name: a list; the first host_name entry counts. */
		if (elen < 2 || get16(m + off) + 2 != elen)
			return -EINVAL;
		p = off + 2;
		lend = off + elen;
		while (p + 3 <= lend) {
			size_t nlen = get16(m + p + 1);

			if (p + 3 + nlen > lend)
				return -EINVAL;
			if (m[p] == 0) {
				if (!nlen || nlen >= outlen)
					return -EINVAL;
				for (size_t i = 0; i < nlen; i++) {
					uint8_t c = m[p + 3 + i];

					if (!c)
						return -EINVAL;
					out[i] = (char)(c >= 'A' && c <= 'Z' ?
							c - 'A' + 'a' : c);
				}
				out[nlen] = '\0';
				return 0;
			}
			p += 3 + nlen;
		}
		return -ENOENT;
	}
	return off == end ? -ENOENT : -EINVAL;
}
