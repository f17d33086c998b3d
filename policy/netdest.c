/* policy/netdest.c: validate one network destination as written in
 * net.allow, a request's network list or --allow-net (HOST|IP|CIDR:PORT). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "corral/policy.h"
#include "corral/util.h"

/* "[" + the longest IPv6 text + "/128]:65535-65535", or a 253-byte name
 * with its trailing dot and ports, with room to spare. */
#define DEST_MAX 320
#define PORT_HINT "ports are 1-65535, \"*\" or \"A-B\""

struct dest_err {
	char *err;
	size_t errlen;
	char q[96];	/* the destination, quoted for messages */
};

static int bad(struct dest_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(struct dest_err *e, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	cr_errf(e->err, e->errlen, "%s %s", e->q, what);
	return -EINVAL;
}

/* Decimal without sign or leading zero, at most max. -1 if not. */
static long small_number(const char *s, size_t n, long max)
{
	long v = 0;
	size_t i;

	if (!n || n > 6 || (s[0] == '0' && n > 1))
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v > max ? -1 : v;
}

static int check_one_port(struct dest_err *e, const char *s, size_t n,
			  long *out)
{
	size_t i;

	if (!n)
		return bad(e, "has an empty port (%s)", PORT_HINT);
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return bad(e, "has a bad port (%s)", PORT_HINT);
	if (n > 1 && s[0] == '0')
		return bad(e, "has a port with a leading zero");
	*out = small_number(s, n, 65535);
	if (*out <= 0)
		return bad(e, "has a port out of range (%s)", PORT_HINT);
	return 0;
}

static int check_ports(struct dest_err *e, const char *p)
{
	const char *dash = strchr(p, '-');
	long a, b;

	if (!p[0])
		return bad(e, "has no port after ':' (%s)", PORT_HINT);
	if (!strcmp(p, "*"))
		return 0;
	if (!dash)
		return check_one_port(e, p, strlen(p), &a);
	if (check_one_port(e, p, (size_t)(dash - p), &a) ||
	    check_one_port(e, dash + 1, strlen(dash + 1), &b))
		return -EINVAL;
	if (a > b)
		return bad(e, "has a port range that runs backwards");
	return 0;
}

/* The bits after the prefix must be zero: "10.0.0.1/8" is almost always a
 * typo, and refusing it keeps what is written and what is matched equal. */
static bool host_bits_clear(const unsigned char *a, size_t nbytes,
			    long prefix)
{
	size_t i;

	for (i = 0; i < nbytes; i++) {
		long bit0 = (long)i * 8;
		unsigned char mask;

		if (bit0 + 8 <= prefix)
			continue;
		mask = bit0 >= prefix ? 0xff :
			(unsigned char)(0xff >> (prefix - bit0));
		if (a[i] & mask)
			return false;
	}
	return true;
}

static int check_ip(struct dest_err *e, const char *h, size_t n, bool v6)
{
	unsigned char addr[16];
	char text[INET6_ADDRSTRLEN + 8];
	const char *slash = memchr(h, '/', n);
	size_t alen = slash ? (size_t)(slash - h) : n;
	long prefix;

	if (alen >= sizeof(text) || !alen)
		return bad(e, "is not a valid %s address",
			   v6 ? "IPv6" : "IPv4");
	memcpy(text, h, alen);
	text[alen] = '\0';
	if (inet_pton(v6 ? AF_INET6 : AF_INET, text, addr) != 1)
		return bad(e, "is not a valid %s address",
			   v6 ? "IPv6" : "IPv4");
	if (!slash)
		return 0;
	prefix = small_number(slash + 1, n - alen - 1, v6 ? 128 : 32);
	if (prefix < 0)
		return bad(e, "has a bad prefix length (0-%d)", v6 ? 128 : 32);
	if (!host_bits_clear(addr, v6 ? 16 : 4, prefix))
		return bad(e, "has address bits set past the /%ld prefix",
			   prefix);
	return 0;
}

/* RFC 1123 names: letters, digits, hyphens; labels 1-63 bytes, not starting
 * or ending with '-'; 253 bytes in all; one trailing dot allowed. */
static int check_hostname(struct dest_err *e, const char *h, size_t n)
{
	size_t i, label = 0;

	if (n && h[n - 1] == '.')
		n--;
	if (!n)
		return bad(e, "has no host");
	if (n > 253)
		return bad(e, "has a host name longer than 253 characters");
	for (i = 0; i <= n; i++) {
		char c = i < n ? h[i] : '.';

		if (c == '.') {
			if (!label)
				return bad(e, "has an empty label in its host "
					   "name");
			if (h[i - 1] == '-')
				return bad(e, "has a host name label ending "
					   "in '-'");
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-'))
			return bad(e, "is not HOST:PORT, IP:PORT, [IPv6]:PORT "
				   "or CIDR:PORT (bad character in the host)");
		if (c == '-' && !label)
			return bad(e, "has a host name label starting with "
				   "'-'");
		if (++label > 63)
			return bad(e, "has a host name label longer than 63 "
				   "characters");
	}
	return 0;
}

/* A host inet_aton(3) takes for an address (hex, octal, fewer parts). */
static bool inet_form(const char *h, size_t n)
{
	char buf[64];
	struct in_addr a;

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, h, n);
	buf[n] = 0;
	return inet_aton(buf, &a) != 0;
}

/* localhost and the names the hosts file gives loopback (RFC 6761 keeps
 * every *.localhost there too). */
static bool loopback_name(const char *h, size_t n)
{
	static const char *const names[] = {
		"localhost", "localhost.localdomain", "ip6-localhost",
		"ip6-loopback", "localhost4", "localhost6",
		"localhost4.localdomain4", "localhost6.localdomain6",
	};

	if (n && h[n - 1] == '.')
		n--;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && !strncasecmp(h, names[i], n))
			return true;
	return n > 10 && !strncasecmp(h + n - 10, ".localhost", 10);
}

int cr_net_dest_validate(const char *dest, char *err, size_t errlen)
{
	struct dest_err e = { err, errlen, "" };
	const char *colon, *host;
	size_t hlen, i;

	cr_str_quote(dest, e.q, sizeof(e.q));
	if (!dest || !dest[0])
		return bad(&e, "is empty");
	if (strlen(dest) > DEST_MAX)
		return bad(&e, "is too long");
	if (dest[0] == '[') {
		const char *close = strchr(dest, ']');

		if (!close)
			return bad(&e, "has no ']' after the IPv6 address");
		if (close[1] != ':')
			return bad(&e, "needs ':PORT' after ']'");
		if (check_ip(&e, dest + 1, (size_t)(close - dest - 1), true))
			return -EINVAL;
		return check_ports(&e, close + 2);
	}
	colon = strrchr(dest, ':');
	if (!colon)
		return bad(&e, "needs a port: HOST:PORT, IP:PORT, [IPv6]:PORT "
			   "or CIDR:PORT");
	host = dest;
	hlen = (size_t)(colon - dest);
	if (!hlen)
		return bad(&e, "has no host before ':'");
	if (memchr(host, ':', hlen))
		return bad(&e, "has an IPv6 address outside brackets (write "
			   "[ADDR]:PORT)");
	if (memchr(host, '/', hlen)) {
		if (check_ip(&e, host, hlen, false))
			return -EINVAL;
		return check_ports(&e, colon + 1);
	}
	for (i = 0; i < hlen; i++)
		if (host[i] != '.' && (host[i] < '0' || host[i] > '9'))
			break;
	if (i == hlen) {
		/* All digits and dots: an IPv4 address or nothing, never a
		 * name, so "1.2.3.256" does not slip through as one. */
		if (check_ip(&e, host, hlen, false))
			return -EINVAL;
	} else if (check_hostname(&e, host, hlen)) {
		return -EINVAL;
	} else if (inet_form(host, hlen)) {
		/* "0x7f000001", "127.1": the C library reads them as
		 * addresses and never asks the responder, so a name rule
		 * would open nothing (found by a probing session). */
		return bad(&e, "is an IPv4 address in a form the C library "
			   "reads but rules do not: write it as a dotted quad");
	} else if (loopback_name(host, hlen)) {
		/* The hosts file answers it, never corral's responder, and
		 * loopback opens only by its address: the rule would open
		 * nothing (found by a compatibility probe). */
		return bad(&e, "names loopback, which no name opens: name the "
			   "address (127.0.0.1:PORT or [::1]:PORT)");
	}
	return check_ports(&e, colon + 1);
}
