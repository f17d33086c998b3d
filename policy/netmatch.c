/* policy/netmatch.c: parse validated net.allow destinations into rules and
 * answer, without any syscall, whether an address, name or port is allowed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "corral/netmatch.h"

static int parse_ports(const char *p, struct cr_netrule *r)
{
	char *end;
	unsigned long a, b;

	if (!strcmp(p, "*")) {
		r->port_lo = 1;
		r->port_hi = 65535;
		return 0;
	}
	a = strtoul(p, &end, 10);
	b = a;
	if (*end == '-')
		b = strtoul(end + 1, &end, 10);
	if (*end || !a || a > 65535 || b > 65535 || a > b)
		return -EINVAL;
	r->port_lo = (uint16_t)a;
	r->port_hi = (uint16_t)b;
	return 0;
}

static int parse_ip(const char *h, size_t n, int family,
		    struct cr_netrule *r)
{
	char text[INET6_ADDRSTRLEN + 8];
	const char *slash = memchr(h, '/', n);
	size_t alen = slash ? (size_t)(slash - h) : n;
	unsigned full = family == AF_INET ? 32 : 128;

	if (!alen || alen >= sizeof(text))
		return -EINVAL;
	memcpy(text, h, alen);
	text[alen] = '\0';
	if (inet_pton(family, text, r->addr) != 1)
		return -EINVAL;
	r->kind = CR_NR_IP;
	r->family = family;
	r->prefix = full;
	if (slash) {
		char num[8];
		size_t nl = n - alen - 1;
		char *end;
		unsigned long v;

		if (!nl || nl >= sizeof(num))
			return -EINVAL;
		memcpy(num, slash + 1, nl);
		num[nl] = '\0';
		v = strtoul(num, &end, 10);
		if (*end || v > full)
			return -EINVAL;
		r->prefix = (unsigned)v;
	}
	r->exact = r->prefix == full;
	return 0;
}

int cr_netrule_parse(const char *dest, struct cr_netrule *r)
{
	const char *colon;
	size_t hlen, i;

	memset(r, 0, sizeof(*r));
	if (!dest || !dest[0])
		return -EINVAL;
	if (dest[0] == '[') {
		const char *close = strchr(dest, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		if (parse_ip(dest + 1, (size_t)(close - dest - 1), AF_INET6, r))
			return -EINVAL;
		return parse_ports(close + 2, r);
	}
	colon = strrchr(dest, ':');
	if (!colon || colon == dest)
		return -EINVAL;
	hlen = (size_t)(colon - dest);
	if (memchr(dest, ':', hlen))
		return -EINVAL;
	for (i = 0; i < hlen; i++)
		if (dest[i] != '.' && dest[i] != '/' &&
		    (dest[i] < '0' || dest[i] > '9'))
			break;
	if (i == hlen) {
		if (parse_ip(dest, hlen, AF_INET, r))
			return -EINVAL;
	} else {
		if (dest[hlen - 1] == '.')
			hlen--;
		if (!hlen || hlen >= sizeof(r->host))
			return -EINVAL;
		r->kind = CR_NR_HOST;
		for (i = 0; i < hlen; i++) {
			char c = dest[i];

			r->host[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
		}
		r->host[hlen] = '\0';
	}
	return parse_ports(colon + 1, r);
}

static bool in_prefix(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, net, full))
		return false;
	if (!rest)
		return true;
	return ((a[full] ^ net[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

struct closed_range {
	uint8_t net[16];
	unsigned prefix;
	const char *why;
};

static const struct closed_range closed4[] = {
	{ { 0 }, 8, "\"this network\" (0.0.0.0/8)" },
	{ { 10 }, 8, "a private address (10.0.0.0/8)" },
	{ { 100, 64 }, 10, "a shared address (100.64.0.0/10)" },
	{ { 127 }, 8, "a loopback address" },
	{ { 169, 254 }, 16, "a link-local address (cloud metadata lives here)" },
	{ { 172, 16 }, 12, "a private address (172.16.0.0/12)" },
	{ { 192, 0, 0 }, 24, "an IETF protocol address (192.0.0.0/24)" },
	{ { 192, 168 }, 16, "a private address (192.168.0.0/16)" },
	{ { 198, 18 }, 15, "a benchmarking address (198.18.0.0/15)" },
	{ { 224 }, 4, "a multicast address" },
	{ { 240 }, 4, "a reserved or broadcast address" },
};

static const struct closed_range closed6[] = {
	{ { 0 }, 128, "the unspecified address" },
	{ { [15] = 1 }, 128, "the loopback address" },
	{ { [10] = 0xff, [11] = 0xff }, 96, "an IPv4-mapped address" },
	{ { 0 }, 96, "an IPv4-compatible address" },
	{ { 0x00, 0x64, 0xff, 0x9b }, 96, "a NAT64 address (embeds IPv4)" },
	{ { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, "a local NAT64 address" },
	{ { 0x01, 0x00 }, 64, "a discard-only address" },
	{ { 0x20, 0x01, 0x00, 0x00 }, 32, "a Teredo address (embeds IPv4)" },
	{ { 0x20, 0x02 }, 16, "a 6to4 address (embeds IPv4)" },
	{ { 0xfc }, 7, "a unique-local (private) address" },
	{ { 0xfe, 0x80 }, 10, "a link-local address" },
	{ { 0xfe, 0xc0 }, 10, "a site-local address" },
	{ { 0xff }, 8, "a multicast address" },
};

const char *cr_net_addr_closed(int family, const uint8_t *addr)
{
	const struct closed_range *t = family == AF_INET ? closed4 : closed6;
	size_t n = family == AF_INET ? sizeof(closed4) / sizeof(closed4[0]) :
		   sizeof(closed6) / sizeof(closed6[0]);

	if (family != AF_INET && family != AF_INET6)
		return "not an internet address";
	for (size_t i = 0; i < n; i++)
		if (in_prefix(addr, t[i].net, t[i].prefix))
			return t[i].why;
	return NULL;
}

static bool allow_addr(const struct cr_netrule *r, size_t n, int family,
		       const uint8_t *addr, uint16_t port, bool closed)
{
	for (size_t i = 0; i < n; i++) {
		if (r[i].kind != CR_NR_IP || r[i].family != family)
			continue;
		if (port < r[i].port_lo || port > r[i].port_hi)
			continue;
		if (closed && !r[i].exact)
			continue;
		if (in_prefix(addr, r[i].addr, r[i].prefix))
			return true;
	}
	return false;
}

bool cr_netrules_allow_addr(const struct cr_netrule *r, size_t n, int family,
			    const uint8_t *addr, uint16_t port)
{
	return allow_addr(r, n, family, addr, port,
			  cr_net_addr_closed(family, addr) != NULL);
}

bool cr_netrules_allow_exact(const struct cr_netrule *r, size_t n, int family,
			     const uint8_t *addr, uint16_t port)
{
	return allow_addr(r, n, family, addr, port, true);
}

static bool same_name(const char *rule, const char *name)
{
	size_t n = strlen(name);

	if (n && name[n - 1] == '.')
		n--;
	return strlen(rule) == n && !strncasecmp(rule, name, n);
}

bool cr_netrules_allow_name(const struct cr_netrule *r, size_t n,
			    const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].kind == CR_NR_HOST && same_name(r[i].host, name))
			return true;
	return false;
}

bool cr_netrules_allow_name_port(const struct cr_netrule *r, size_t n,
				 const char *name, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].kind == CR_NR_HOST && same_name(r[i].host, name) &&
		    port >= r[i].port_lo && port <= r[i].port_hi)
			return true;
	return false;
}
