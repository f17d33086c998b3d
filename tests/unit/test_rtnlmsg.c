/* tests/unit/test_rtnlmsg.c: the emulated route netlink answers: the dumps
 * of lo, single gets, every error and acknowledgement form, the walk of a
 * datagram of several requests, and random bytes never read out of bounds. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "corral/rtnlmsg.h"
#include "harness.h"

#define PORTID 4242u

/* A request: header, a body of blen bytes (zero but for its first byte,
 * the family), then an optional IFLA_IFNAME. Returns its length. */
static size_t req(uint8_t *m, uint16_t type, uint16_t flags, uint32_t seq,
		  uint8_t family, size_t blen, const char *name)
{
	struct nlmsghdr h = { .nlmsg_type = type, .nlmsg_flags = flags,
			      .nlmsg_seq = seq };
	size_t len = NLMSG_LENGTH(blen);

	memset(m, 0, NLMSG_SPACE(blen) + 64);
	if (blen)
		m[NLMSG_HDRLEN] = family;
	if (name) {
		struct rtattr ra = { .rta_len = (unsigned short)RTA_LENGTH(strlen(name) + 1),
				     .rta_type = IFLA_IFNAME };

		len = NLMSG_ALIGN(len);
		memcpy(m + len, &ra, sizeof(ra));
		memcpy(m + len + RTA_LENGTH(0), name, strlen(name) + 1);
		len += RTA_ALIGN(ra.rta_len);
	}
	h.nlmsg_len = (uint32_t)len;
	memcpy(m, &h, sizeof(h));
	return len;
}

/* The messages of an answer: their types in order (at most 8), checking
 * each header's pid and seq and that they tile the answer exactly. */
static int types(const uint8_t *a, size_t n, uint32_t seq, int *out)
{
	int k = 0;

	for (size_t off = 0; off < n && k < 8;) {
		struct nlmsghdr h;

		if (n - off < sizeof(h))
			return -1;
		memcpy(&h, a + off, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > n - off ||
		    h.nlmsg_pid != PORTID || h.nlmsg_seq != seq)
			return -1;
		out[k++] = h.nlmsg_type;
		off += NLMSG_ALIGN(h.nlmsg_len);
	}
	return k;
}

/* The error of an NLMSG_ERROR answer at a. */
static int32_t error_of(const uint8_t *a)
{
	int32_t e;

	memcpy(&e, a + NLMSG_HDRLEN, sizeof(e));
	return e;
}

/* The payload of attribute type in the message at a (body of blen). */
static const uint8_t *attr_of(const uint8_t *a, size_t blen, int type,
			      size_t *plen)
{
	struct nlmsghdr h;
	size_t off = NLMSG_LENGTH(blen);

	memcpy(&h, a, sizeof(h));
	off = NLMSG_ALIGN(off);
	while (off + sizeof(struct rtattr) <= h.nlmsg_len) {
		struct rtattr ra;

		memcpy(&ra, a + off, sizeof(ra));
		if (ra.rta_len < sizeof(ra))
			return NULL;
		if (ra.rta_type == type) {
			*plen = ra.rta_len - RTA_LENGTH(0);
			return a + off + RTA_LENGTH(0);
		}
		off += RTA_ALIGN(ra.rta_len);
	}
	return NULL;
}

TEST_IMPL(rtnlmsg_dumps)
{
	struct cr_rtnl_view v6 = { .ipv6 = true }, v4only = { .ipv6 = false };
	uint8_t m[256], a[4096];
	struct ifinfomsg ifi;
	struct ifaddrmsg ifa;
	size_t n, used, plen;
	const uint8_t *p;
	int ty[8];

	/* Links, as glibc asks (a one-byte rtgenmsg, padded to 20). */
	n = req(m, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 7, AF_UNSPEC, 4,
		NULL);
	n = cr_rtnl_answer(m, 20, &used, PORTID, false, &v6, a, sizeof(a));
	ASSERT_EQ(used, 20);
	ASSERT_EQ(types(a, n, 7, ty), 2);
	ASSERT_EQ(ty[0], RTM_NEWLINK);
	ASSERT_EQ(ty[1], NLMSG_DONE);
	memcpy(&ifi, a + NLMSG_HDRLEN, sizeof(ifi));
	ASSERT_EQ(ifi.ifi_index, 1);
	ASSERT_EQ(ifi.ifi_type, 772);
	ASSERT_UEQ(ifi.ifi_flags, 0x10049);
	p = attr_of(a, sizeof(ifi), IFLA_IFNAME, &plen);
	ASSERT(p && plen == 3 && !memcmp(p, "lo", 3));
	p = attr_of(a, sizeof(ifi), IFLA_ADDRESS, &plen);
	ASSERT(p && plen == 6);
	ASSERT(attr_of(a, sizeof(ifi), IFLA_STATS, &plen) &&
	       plen == sizeof(struct rtnl_link_stats));

	/* Addresses: both families, IPv4 first; one family; no ::1 when the
	 * host has none. */
	req(m, RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 8, AF_UNSPEC, 1, NULL);
	n = cr_rtnl_answer(m, 20, &used, PORTID, false, &v6, a, sizeof(a));
	ASSERT_EQ(types(a, n, 8, ty), 3);
	ASSERT_EQ(ty[0], RTM_NEWADDR);
	ASSERT_EQ(ty[1], RTM_NEWADDR);
	ASSERT_EQ(ty[2], NLMSG_DONE);
	memcpy(&ifa, a + NLMSG_HDRLEN, sizeof(ifa));
	ASSERT_EQ(ifa.ifa_family, AF_INET);
	ASSERT_EQ(ifa.ifa_prefixlen, 8);
	ASSERT_EQ(ifa.ifa_index, 1);
	ASSERT_EQ(ifa.ifa_scope, RT_SCOPE_HOST);
	p = attr_of(a, sizeof(ifa), IFA_LOCAL, &plen);
	ASSERT(p && plen == 4 && p[0] == 127 && p[3] == 1);
	req(m, RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 9, AF_INET6, 8, NULL);
	n = cr_rtnl_answer(m, NLMSG_LENGTH(8), &used, PORTID, false, &v6, a,
			   sizeof(a));
	ASSERT_EQ(types(a, n, 9, ty), 2);
	memcpy(&ifa, a + NLMSG_HDRLEN, sizeof(ifa));
	ASSERT_EQ(ifa.ifa_family, AF_INET6);
	ASSERT_EQ(ifa.ifa_prefixlen, 128);
	p = attr_of(a, sizeof(ifa), IFA_ADDRESS, &plen);
	ASSERT(p && plen == 16 && p[15] == 1 && !p[0]);
	n = cr_rtnl_answer(m, NLMSG_LENGTH(8), &used, PORTID, false, &v4only,
			   a, sizeof(a));
	ASSERT_EQ(types(a, n, 9, ty), 1);
	ASSERT_EQ(ty[0], NLMSG_DONE);

	/* Any other dump is empty: routes, neighbours. */
	for (int t = RTM_GETROUTE; t <= RTM_GETNEIGH; t += 4) {
		req(m, (uint16_t)t, NLM_F_REQUEST | NLM_F_DUMP, 10, AF_UNSPEC,
		    12, NULL);
		n = cr_rtnl_answer(m, NLMSG_LENGTH(12), &used, PORTID, false,
				   &v6, a, sizeof(a));
		ASSERT_EQ(types(a, n, 10, ty), 1);
		ASSERT_EQ(ty[0], NLMSG_DONE);
	}
	/* A dump is never acknowledged, even when asked. */
	req(m, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP | NLM_F_ACK, 11,
	    AF_UNSPEC, 16, NULL);
	n = cr_rtnl_answer(m, NLMSG_LENGTH(16), &used, PORTID, false, &v6, a,
			   sizeof(a));
	ASSERT_EQ(types(a, n, 11, ty), 2);
	ASSERT_EQ(ty[1], NLMSG_DONE);
}

TEST_IMPL(rtnlmsg_gets_and_errors)
{
	struct cr_rtnl_view v = { .ipv6 = true };
	uint8_t m[256], a[4096];
	size_t n, len, used;
	struct nlmsghdr echo;
	int ty[8];

	/* lo by index, by name; another index or name ENODEV; neither
	 * EINVAL. With NLM_F_ACK the object is followed by an ack. */
	len = req(m, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 1, AF_UNSPEC,
		  sizeof(struct ifinfomsg), NULL);
	m[NLMSG_HDRLEN + 4] = 1;	/* ifi_index */
	n = cr_rtnl_answer(m, len, &used, PORTID, false, &v, a, sizeof(a));
	ASSERT_EQ(types(a, n, 1, ty), 2);
	ASSERT_EQ(ty[0], RTM_NEWLINK);
	ASSERT_EQ(ty[1], NLMSG_ERROR);
	ASSERT_EQ(error_of(a + NLMSG_ALIGN(((struct nlmsghdr *)a)->nlmsg_len)), 0);
	len = req(m, RTM_GETLINK, NLM_F_REQUEST, 2, AF_UNSPEC,
		  sizeof(struct ifinfomsg), "lo");
	n = cr_rtnl_answer(m, len, &used, PORTID, false, &v, a, sizeof(a));
	ASSERT_EQ(types(a, n, 2, ty), 1);
	ASSERT_EQ(ty[0], RTM_NEWLINK);
	ASSERT_EQ(used, len);
	len = req(m, RTM_GETLINK, NLM_F_REQUEST, 3, AF_UNSPEC,
		  sizeof(struct ifinfomsg), "eth0");
	n = cr_rtnl_answer(m, len, &used, PORTID, false, &v, a, sizeof(a));
	ASSERT_EQ(types(a, n, 3, ty), 1);
	ASSERT_EQ(ty[0], NLMSG_ERROR);
	ASSERT_EQ(error_of(a), -ENODEV);
	/* The error carries the request whole, unless CAP_ACK. */
	ASSERT_EQ(n, NLMSG_LENGTH(4 + len));
	ASSERT(!memcmp(a + NLMSG_HDRLEN + 4, m, len));
	n = cr_rtnl_answer(m, len, &used, PORTID, true, &v, a, sizeof(a));
	ASSERT_EQ(n, NLMSG_LENGTH(4 + sizeof(echo)));
	memcpy(&echo, a, sizeof(echo));
	ASSERT_EQ(echo.nlmsg_flags, NLM_F_CAPPED);
	len = req(m, RTM_GETLINK, NLM_F_REQUEST, 4, AF_UNSPEC,
		  sizeof(struct ifinfomsg), NULL);
	m[NLMSG_HDRLEN + 4] = 2;
	cr_rtnl_answer(m, len, &used, PORTID, false, &v, a, sizeof(a));
	ASSERT_EQ(error_of(a), -ENODEV);
	m[NLMSG_HDRLEN + 4] = 0;
	cr_rtnl_answer(m, len, &used, PORTID, false, &v, a, sizeof(a));
	ASSERT_EQ(error_of(a), -EINVAL);
	/* A get of a short body. */
	len = req(m, RTM_GETLINK, NLM_F_REQUEST, 4, AF_UNSPEC, 4, NULL);
	cr_rtnl_answer(m, len, &used, PORTID, false, &v, a, sizeof(a));
	ASSERT_EQ(error_of(a), -EINVAL);

	/* Changes: EPERM; a route: ENETUNREACH; an address get or an
	 * unknown get: EOPNOTSUPP; a type past RTM_MAX: EOPNOTSUPP. */
	{
		static const struct { int type; int err; } c[] = {
			{ RTM_NEWLINK, -EPERM }, { RTM_DELLINK, -EPERM },
			{ RTM_SETLINK, -EPERM }, { RTM_NEWADDR, -EPERM },
			{ RTM_DELROUTE, -EPERM }, { RTM_NEWNEIGH, -EPERM },
			{ RTM_GETROUTE, -ENETUNREACH },
			{ RTM_GETADDR, -EOPNOTSUPP },
			{ RTM_GETNEIGH, -EOPNOTSUPP },
			{ RTM_MAX + 1, -EOPNOTSUPP }, { 0xffff, -EOPNOTSUPP },
		};

		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			len = req(m, (uint16_t)c[i].type, NLM_F_REQUEST, 5,
				  AF_INET, 16, NULL);
			n = cr_rtnl_answer(m, len, &used, PORTID, false, &v, a,
					   sizeof(a));
			ASSERT_EQ(types(a, n, 5, ty), 1);
			ASSERT_EQ(ty[0], NLMSG_ERROR);
			ASSERT_EQ(error_of(a), c[i].err);
		}
	}

	/* Not a request, or a control message: nothing, or an ack when
	 * asked. An empty body: nothing (the kernel's "at least 1 byte"). */
	len = req(m, RTM_GETLINK, NLM_F_DUMP, 6, AF_UNSPEC, 16, NULL);
	ASSERT_EQ(cr_rtnl_answer(m, len, &used, PORTID, false, &v, a,
				 sizeof(a)), 0);
	ASSERT_EQ(used, len);
	len = req(m, NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, 6, 0, 0, NULL);
	n = cr_rtnl_answer(m, len, &used, PORTID, false, &v, a, sizeof(a));
	ASSERT_EQ(types(a, n, 6, ty), 1);
	ASSERT_EQ(error_of(a), 0);
	len = req(m, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 6, 0, 0, NULL);
	ASSERT_EQ(cr_rtnl_answer(m, len, &used, PORTID, false, &v, a,
				 sizeof(a)), 0);
}

TEST_IMPL(rtnlmsg_walk)
{
	struct cr_rtnl_view v = { .ipv6 = true };
	uint8_t m[512], a[4096];
	size_t l1, l2, n, used;
	struct nlmsghdr h;
	int ty[8];

	/* Two requests in one datagram: answered one by one. */
	l1 = req(m, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, 0, 1, NULL);
	l2 = req(m + NLMSG_ALIGN(l1), RTM_GETADDR,
		 NLM_F_REQUEST | NLM_F_DUMP, 2, 0, 1, NULL);
	n = cr_rtnl_answer(m, NLMSG_ALIGN(l1) + l2, &used, PORTID, false, &v,
			   a, sizeof(a));
	ASSERT_EQ(used, NLMSG_ALIGN(l1));
	ASSERT_EQ(types(a, n, 1, ty), 2);
	n = cr_rtnl_answer(m + used, l2, &used, PORTID, false, &v, a,
			   sizeof(a));
	ASSERT_EQ(types(a, n, 2, ty), 3);
	ASSERT_EQ(used, l2);

	/* A header shorter than itself, longer than what is left, or
	 * fewer than 16 bytes: the walk stops. */
	req(m, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, 0, 1, NULL);
	ASSERT_EQ(cr_rtnl_answer(m, 15, &used, PORTID, false, &v, a,
				 sizeof(a)), 0);
	ASSERT_EQ(used, 0);
	memcpy(&h, m, sizeof(h));
	h.nlmsg_len = 8;
	memcpy(m, &h, sizeof(h));
	ASSERT_EQ(cr_rtnl_answer(m, 20, &used, PORTID, false, &v, a,
				 sizeof(a)), 0);
	ASSERT_EQ(used, 0);
	h.nlmsg_len = 400;
	memcpy(m, &h, sizeof(h));
	ASSERT_EQ(cr_rtnl_answer(m, 20, &used, PORTID, false, &v, a,
				 sizeof(a)), 0);
	ASSERT_EQ(used, 0);

	/* No room for the answer: nothing, and the walk stops. */
	req(m, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, 0, 1, NULL);
	ASSERT_EQ(cr_rtnl_answer(m, 20, &used, PORTID, false, &v, a, 64), 0);
	ASSERT_EQ(used, 0);
}

TEST_IMPL(rtnlmsg_random_bytes)
{
	struct cr_rtnl_view v = { .ipv6 = true };
	uint8_t m[600];

	srand(4242);
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)(rand() % (int)sizeof(m)), used, cap, n;
		uint8_t *heap, *out;

		for (size_t j = 0; j < len; j++)
			m[j] = (uint8_t)rand();
		if (i % 2 && len >= 16) {	/* a plausible header */
			struct nlmsghdr h = {
				.nlmsg_len = (uint32_t)(16 + rand() % (int)(len - 15)),
				.nlmsg_type = (uint16_t)(rand() % 130),
				.nlmsg_flags = (uint16_t)(rand() & 0x31f),
			};
			memcpy(m, &h, sizeof(h));
		}
		/* Exact-size heap copies: a read or write past either end
		 * is an AddressSanitizer failure. */
		heap = malloc(len ? len : 1);
		cap = CR_RTNL_ANSWER_BASE + len;
		out = malloc(cap);
		ASSERT(heap && out);
		memcpy(heap, m, len);
		for (size_t off = 0; off < len; off += used) {
			n = cr_rtnl_answer(heap + off, len - off, &used, 1,
					   i % 3 == 0, &v, out, cap);
			ASSERT(n <= cap);
			ASSERT(used <= len - off);
			if (!used)
				break;
		}
		free(heap);
		free(out);
	}
}
