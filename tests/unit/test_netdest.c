/* tests/unit/test_netdest.c: network destination validation, good and bad
 * forms of HOST:PORT, IP:PORT, [IPv6]:PORT and CIDR:PORT. */
#include "harness.h"

TEST_IMPL(netdest_good)
{
	static const char *const good[] = {
		"[::1]:80", "10.0.0.0/8:*", "host:1-1024", "host:1-1",
		"example.com:443", "example.com.:443", "pypi.org:443",
		"1.2.3.4:80", "0.0.0.0/0:*", "192.168.1.0/24:22",
		"1.2.3.4/32:65535", "[fe80::/10]:443", "[::]:*", "[::/0]:*",
		"[2001:db8::1]:8080", "[::ffff:1.2.3.4]:80",
		"[2001:db8::/128]:1", "a-b.c:65535", "localhostx:1",
		"xn--bcher-kva.example:443", "h:1-65535", "A.B.C:80",
		"a.b.c.d.e.f:80", "123.example:80",
	};
	char err[256];
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(good); i++)
		if (cr_net_dest_validate(good[i], err, sizeof(err)))
			FAIL_("\"%s\" refused: %s", good[i], err);
}

TEST_IMPL(netdest_bad)
{
	static const struct {
		const char *dest, *why;
	} bad[] = {
		{ "host:0", "port out of range" },
		{ "host:65536", "port out of range" },
		{ "host:99999999", "port out of range" },
		{ "host:", "no port" },
		{ ":80", "no host" },
		{ "[::1:80", "no ']'" },
		{ "1.2.3.4/33:80", "prefix length" },
		{ "[::1/129]:80", "prefix length" },
		{ "10.0.0.0/08:80", "prefix length" },
		{ "10.0.0.0/:80", "prefix length" },
		{ "host", "needs a port" },
		{ "::1:80", "outside brackets" },
		{ "host:1024-1", "backwards" },
		{ "host:08", "leading zero" },
		{ "host:-1", "empty port" },
		{ "host:1-", "empty port" },
		{ "host:1-*", "bad port" },
		{ "host:http", "bad port" },
		{ "host:+80", "bad port" },
		{ "host: 80", "bad port" },
		{ "-host:80", "starting with '-'" },
		{ "host-:80", "ending in '-'" },
		{ "a..b:80", "empty label" },
		{ ".a:80", "empty label" },
		{ "a.b..:80", "empty label" },
		{ "1.2.3.256:80", "not a valid IPv4" },
		{ "1.2.3:80", "not a valid IPv4" },
		{ "01.2.3.4:80", "not a valid IPv4" },
		{ "10.0.0.1/8:80", "bits set past the /8" },
		{ "[fe80::1/10]:443", "bits set past the /10" },
		{ "[::1]80", "needs ':PORT'" },
		{ "[::1]", "needs ':PORT'" },
		{ "[::1]:", "no port" },
		{ "[1.2.3.4]:80", "not a valid IPv6" },
		{ "[fe80::1%eth0]:80", "not a valid IPv6" },
		{ "[]:80", "not a valid IPv6" },
		{ "ho st:80", "bad character" },
		{ "ho_st:80", "bad character" },
		{ "*:80", "bad character" },
		{ "*.example.com:80", "bad character" },
		{ "host/8:80", "not a valid IPv4" },
		{ "", "is empty" },
		{ " host:80", "bad character" },
		{ "host:80 ", "bad port" },
		{ "localhost:8000", "names loopback" },
		{ "LocalHost.:8000", "names loopback" },
		{ "app.localhost:80", "names loopback" },
		{ "ip6-localhost:80", "names loopback" },
		{ "localhost4:80", "names loopback" },
		{ "0x7f000001:80", "dotted quad" },
		{ "0x7f.1:80", "dotted quad" },
	};
	char err[256], name[300];
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(bad); i++) {
		int rc = cr_net_dest_validate(bad[i].dest, err, sizeof(err));

		if (rc != -EINVAL)
			FAIL_("\"%s\" accepted", bad[i].dest);
		if (!strstr(err, bad[i].why))
			FAIL_("\"%s\": \"%s\" lacks \"%s\"", bad[i].dest, err,
			      bad[i].why);
	}
	ASSERT_EQ(cr_net_dest_validate("host:0", err, sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "\"host:0\" has a port out of range (ports are "
			  "1-65535, \"*\" or \"A-B\")");
	ASSERT_EQ(cr_net_dest_validate(NULL, err, sizeof(err)), -EINVAL);

	/* Length limits: a 63-byte label is fine, 64 is not; 253 bytes of
	 * name are fine, 254 are not. */
	memset(name, 'a', 63);
	strcpy(name + 63, ".b:80");
	ASSERT_EQ(cr_net_dest_validate(name, err, sizeof(err)), 0);
	memset(name, 'a', 64);
	strcpy(name + 64, ".b:80");
	ASSERT_EQ(cr_net_dest_validate(name, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "longer than 63");
	for (i = 0; i < 253; i++)
		name[i] = (i % 2) ? '.' : 'a';
	strcpy(name + 253, ":80");
	ASSERT_EQ(cr_net_dest_validate(name, err, sizeof(err)), 0);
	name[253] = 'a';
	strcpy(name + 254, ":80");
	name[252] = 'a';
	name[253] = '.';
	name[254] = 'a';
	strcpy(name + 255, ":80");
	ASSERT_EQ(cr_net_dest_validate(name, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "longer than 253");
}
