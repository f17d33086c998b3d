/* tests/unit/test_netmatch.c: the allow-list matcher: rule parsing, the
 * always-closed address ranges, and address, name and port matching. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "corral/netmatch.h"
#include "harness.h"

static int addr_of(const char *text, uint8_t *a)
{
	if (inet_pton(AF_INET, text, a) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, text, a) == 1)
		return AF_INET6;
	return -1;
}

TEST_IMPL(netmatch_parse)
{
	struct cr_netrule r;

	ASSERT_EQ(cr_netrule_parse("Example.COM.:443", &r), 0);
	ASSERT_EQ(r.kind, CR_NR_HOST);
	ASSERT_STREQ(r.host, "example.com");
	ASSERT_EQ(r.port_lo, 443);
	ASSERT_EQ(r.port_hi, 443);
	ASSERT_EQ(cr_netrule_parse("10.0.0.0/8:*", &r), 0);
	ASSERT_EQ(r.kind, CR_NR_IP);
	ASSERT_EQ(r.family, AF_INET);
	ASSERT_EQ(r.prefix, 8);
	ASSERT(!r.exact);
	ASSERT_EQ(r.port_lo, 1);
	ASSERT_EQ(r.port_hi, 65535);
	ASSERT_EQ(cr_netrule_parse("[::1]:8000-8010", &r), 0);
	ASSERT_EQ(r.family, AF_INET6);
	ASSERT(r.exact);
	ASSERT_EQ(r.port_lo, 8000);
	ASSERT_EQ(r.port_hi, 8010);
	ASSERT_EQ(cr_netrule_parse("1.2.3.4/32:80", &r), 0);
	ASSERT(r.exact);
	ASSERT_EQ(cr_netrule_parse("host", &r), -EINVAL);
	ASSERT_EQ(cr_netrule_parse("h:0", &r), -EINVAL);
	ASSERT_EQ(cr_netrule_parse("h:9-8", &r), -EINVAL);
	ASSERT_EQ(cr_netrule_parse("[::1:80", &r), -EINVAL);
}

TEST_IMPL(netmatch_closed)
{
	static const char *const closed[] = {
		"127.0.0.1", "127.255.0.2", "0.0.0.0", "10.1.2.3",
		"172.16.0.1", "172.31.255.255", "192.168.0.1", "169.254.169.254",
		"100.64.0.1", "224.0.0.1", "255.255.255.255", "240.0.0.1",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1",
		"fe80::1", "fc00::1", "fd12::1", "ff02::1", "64:ff9b::a9fe:a9fe",
		"2002:a9fe:a9fe::1", "2001:0:4136:e378::1", "fec0::1",
	};
	static const char *const open_[] = {
		"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "203.0.113.7",
		"169.253.255.255", "2606:4700::1111", "2001:4860::8888",
	};
	uint8_t a[16];

	for (size_t i = 0; i < CR_ARRAY_SIZE(closed); i++) {
		int f = addr_of(closed[i], a);

		ASSERT(f > 0);
		if (!cr_net_addr_closed(f, a))
			FAIL_("%s should be closed", closed[i]);
	}
	for (size_t i = 0; i < CR_ARRAY_SIZE(open_); i++) {
		int f = addr_of(open_[i], a);
		const char *why;

		ASSERT(f > 0);
		why = cr_net_addr_closed(f, a);
		if (why)
			FAIL_("%s should be open, got %s", open_[i], why);
	}
}

static bool allow(const struct cr_netrule *r, size_t n, const char *ip,
		  uint16_t port)
{
	uint8_t a[16];
	int f = addr_of(ip, a);

	return f > 0 && cr_netrules_allow_addr(r, n, f, a, port);
}

TEST_IMPL(netmatch_allow)
{
	static const char *const dests[] = {
		"127.0.0.1:8080", "0.0.0.0/0:*", "[::/0]:443", "203.0.113.0/24:80-90",
		"api.example.com:443", "[::ffff:127.0.0.3]:22",
	};
	struct cr_netrule r[CR_ARRAY_SIZE(dests)];
	size_t n = CR_ARRAY_SIZE(dests);

	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(cr_netrule_parse(dests[i], &r[i]), 0);
	/* Exact address: open even though loopback, only on its port. */
	ASSERT(allow(r, n, "127.0.0.1", 8080));
	ASSERT(!allow(r, n, "127.0.0.1", 8081));
	/* 0.0.0.0/0 opens the public internet, never the closed ranges. */
	ASSERT(allow(r, n, "8.8.8.8", 53));
	ASSERT(!allow(r, n, "127.0.0.2", 8080));
	ASSERT(!allow(r, n, "169.254.169.254", 80));
	ASSERT(!allow(r, n, "10.0.0.1", 80));
	ASSERT(!allow(r, n, "0.0.0.0", 8080));
	/* Families do not mix: ::ffff:127.0.0.1 is not 127.0.0.1. */
	ASSERT(!allow(r, n, "::ffff:127.0.0.1", 8080));
	ASSERT(allow(r, n, "::ffff:127.0.0.3", 22));
	ASSERT(allow(r, n, "2606:4700::1111", 443));
	ASSERT(!allow(r, n, "2606:4700::1111", 80));
	ASSERT(!allow(r, n, "::1", 443));
	ASSERT(!allow(r, n, "fe80::1", 443));
	ASSERT(allow(r, n, "203.0.113.9", 85));
	ASSERT(allow(r, n, "203.0.114.9", 443));	/* through 0.0.0.0/0 */
	/* Names. */
	ASSERT(cr_netrules_allow_name(r, n, "API.example.com."));
	ASSERT(!cr_netrules_allow_name(r, n, "example.com"));
	ASSERT(!cr_netrules_allow_name(r, n, "x.api.example.com"));
	ASSERT(cr_netrules_allow_name_port(r, n, "api.example.com", 443));
	ASSERT(!cr_netrules_allow_name_port(r, n, "api.example.com", 80));
	/* Exact rules only: what opens the host's own addresses. */
	{
		uint8_t a[16];
		int f = addr_of("203.0.113.9", a);

		ASSERT(!cr_netrules_allow_exact(r, n, f, a, 85));
		f = addr_of("127.0.0.1", a);
		ASSERT(cr_netrules_allow_exact(r, n, f, a, 8080));
		ASSERT(!cr_netrules_allow_exact(r, n, f, a, 8081));
		f = addr_of("::ffff:127.0.0.3", a);
		ASSERT(cr_netrules_allow_exact(r, n, f, a, 22));
	}
}
