/* policy/rtnlmsg.c: the answers of a run's emulated route netlink socket,
 * built from its requests; pure, so it is unit-tested and fuzzed apart. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "corral/rtnlmsg.h"

/*
 * The run sees one interface, lo (index 1, as in every namespace), with
 * 127.0.0.1/8 and ::1/128: what a network namespace holding only its
 * loopback shows. The host's interfaces, addresses, routes and neighbours
 * stay hidden, as they are from /proc/net and the interface ioctls; lo's
 * traffic counters are zero (the host's would tell of other processes'
 * loopback traffic). The answers follow the kernel's rtnetlink_rcv_msg:
 * a change (NEW, DEL, SET) is EPERM without CAP_NET_ADMIN; a dump of
 * anything but links and addresses is empty; a single object that is not
 * lo is ENODEV; a type the kernel does not know is EOPNOTSUPP.
 */

#define LO_INDEX 1
#define LO_FLAGS 0x10049u	/* IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP */
#define LO_TYPE 772		/* ARPHRD_LOOPBACK */
#define LO_MTU 65536u

struct buf {
	uint8_t *p;
	size_t len, cap;
	bool full;
};

static void *room(struct buf *b, size_t n)
{
	size_t a = NLMSG_ALIGN(n);
	void *at;

	if (b->full || a > b->cap - b->len) {
		b->full = true;
		return NULL;
	}
	at = b->p + b->len;
	memset(at, 0, a);
	b->len += a;
	return at;
}

/* Starts a message; returns its offset, for msg_end. */
static size_t msg_begin(struct buf *b, uint16_t type, uint16_t flags,
			uint32_t seq, uint32_t portid)
{
	size_t at = b->len;
	struct nlmsghdr h = {
		.nlmsg_len = 0, .nlmsg_type = type, .nlmsg_flags = flags,
		.nlmsg_seq = seq, .nlmsg_pid = portid,
	};
	void *p = room(b, sizeof(h));

	if (p)
		memcpy(p, &h, sizeof(h));
	return at;
}

static void msg_end(struct buf *b, size_t at)
{
	uint32_t l = (uint32_t)(b->len - at);

	if (!b->full)
		memcpy(b->p + at, &l, sizeof(l));
}

static void attr(struct buf *b, uint16_t type, const void *data, size_t n)
{
	struct rtattr ra = { .rta_len = (unsigned short)RTA_LENGTH(n),
			     .rta_type = type };
	uint8_t *p = room(b, RTA_LENGTH(n));

	if (!p)
		return;
	memcpy(p, &ra, sizeof(ra));
	if (n)
		memcpy(p + RTA_LENGTH(0), data, n);
}

static void attr_u32(struct buf *b, uint16_t type, uint32_t v)
{
	attr(b, type, &v, sizeof(v));
}

static void attr_u8(struct buf *b, uint16_t type, uint8_t v)
{
	attr(b, type, &v, sizeof(v));
}

static void link_lo(struct buf *b, uint16_t flags, uint32_t seq,
		    uint32_t portid)
{
	static const uint8_t zero[96];
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC, .ifi_type = LO_TYPE,
		.ifi_index = LO_INDEX, .ifi_flags = LO_FLAGS,
	};
	size_t at = msg_begin(b, RTM_NEWLINK, flags, seq, portid);
	void *p = room(b, sizeof(ifi));

	if (p)
		memcpy(p, &ifi, sizeof(ifi));
	attr(b, IFLA_IFNAME, "lo", 3);
	attr_u32(b, IFLA_TXQLEN, 1000);
	attr_u8(b, IFLA_OPERSTATE, 0);	/* IF_OPER_UNKNOWN, as lo's */
	attr_u8(b, IFLA_LINKMODE, 0);
	attr_u32(b, IFLA_MTU, LO_MTU);
	attr_u32(b, IFLA_MIN_MTU, 0);
	attr_u32(b, IFLA_MAX_MTU, 0);
	attr_u32(b, IFLA_GROUP, 0);
	attr_u32(b, IFLA_PROMISCUITY, 0);
	attr_u32(b, IFLA_NUM_TX_QUEUES, 1);
	attr_u32(b, IFLA_NUM_RX_QUEUES, 1);
	attr_u8(b, IFLA_CARRIER, 1);
	attr_u32(b, IFLA_CARRIER_CHANGES, 0);
	attr_u8(b, IFLA_PROTO_DOWN, 0);
	attr(b, IFLA_MAP, zero, sizeof(struct rtnl_link_ifmap));
	attr(b, IFLA_ADDRESS, zero, 6);
	attr(b, IFLA_BROADCAST, zero, 6);
	attr(b, IFLA_STATS, zero, sizeof(struct rtnl_link_stats));
	attr(b, IFLA_QDISC, "noqueue", 8);
	msg_end(b, at);
}

static void addr_lo(struct buf *b, int family, uint16_t flags, uint32_t seq,
		    uint32_t portid)
{
	static const uint8_t v4[4] = { 127, 0, 0, 1 };
	static const uint8_t v6[16] = { [15] = 1 };
	struct ifa_cacheinfo ci = {
		.ifa_prefered = 0xffffffffu, .ifa_valid = 0xffffffffu,
	};
	struct ifaddrmsg ifa = {
		.ifa_family = (uint8_t)family,
		.ifa_prefixlen = family == AF_INET ? 8 : 128,
		.ifa_flags = IFA_F_PERMANENT,
		.ifa_scope = RT_SCOPE_HOST,
		.ifa_index = LO_INDEX,
	};
	size_t at = msg_begin(b, RTM_NEWADDR, flags, seq, portid);
	void *p = room(b, sizeof(ifa));

	if (p)
		memcpy(p, &ifa, sizeof(ifa));
	/* In the order inet_fill_ifaddr and inet6_fill_ifaddr put them. */
	if (family == AF_INET) {
		attr(b, IFA_ADDRESS, v4, sizeof(v4));
		attr(b, IFA_LOCAL, v4, sizeof(v4));
		attr(b, IFA_LABEL, "lo", 3);
		attr_u32(b, IFA_FLAGS, IFA_F_PERMANENT);
		attr(b, IFA_CACHEINFO, &ci, sizeof(ci));
	} else {
		attr(b, IFA_ADDRESS, v6, sizeof(v6));
		attr(b, IFA_CACHEINFO, &ci, sizeof(ci));
		attr_u32(b, IFA_FLAGS, IFA_F_PERMANENT);
		attr_u8(b, 11, 1);	/* IFA_PROTO: IFAPROT_KERNEL_LO */
	}
	msg_end(b, at);
}

static void done(struct buf *b, uint32_t seq, uint32_t portid)
{
	size_t at = msg_begin(b, NLMSG_DONE, NLM_F_MULTI, seq, portid);
	int32_t zero = 0;
	void *p = room(b, sizeof(zero));

	if (p)
		memcpy(p, &zero, sizeof(zero));
	msg_end(b, at);
}

/* An NLMSG_ERROR as netlink_ack makes it: error 0 is an acknowledgement,
 * which carries the request's header only (NLM_F_CAPPED); an error
 * carries the whole request unless the socket asked otherwise. */
static void ack(struct buf *b, const uint8_t *req, const struct nlmsghdr *h,
		int error, bool cap_ack, uint32_t portid)
{
	bool whole = error && !cap_ack;
	size_t at = msg_begin(b, NLMSG_ERROR, whole ? 0 : NLM_F_CAPPED,
			      h->nlmsg_seq, portid);
	size_t n = whole ? h->nlmsg_len : sizeof(*h);
	int32_t e = error;
	uint8_t *p = room(b, sizeof(e) + n);

	if (!p)
		return;
	memcpy(p, &e, sizeof(e));
	memcpy(p + sizeof(e), req, n);
	msg_end(b, at);
}

/* IFLA_IFNAME of a single-link request, or NULL. */
static const char *name_attr(const uint8_t *m, size_t len, size_t *nlen)
{
	size_t off = NLMSG_LENGTH(sizeof(struct ifinfomsg));

	while (off + sizeof(struct rtattr) <= len) {
		struct rtattr ra;

		memcpy(&ra, m + off, sizeof(ra));
		if (ra.rta_len < sizeof(ra) || ra.rta_len > len - off)
			return NULL;
		if (ra.rta_type == IFLA_IFNAME) {
			const char *s = (const char *)m + off + RTA_LENGTH(0);
			size_t n = ra.rta_len - RTA_LENGTH(0);

			*nlen = strnlen(s, n);
			return s;
		}
		off += RTA_ALIGN(ra.rta_len);
	}
	return NULL;
}

/* A get of one link: lo by its index or its name, ENODEV for any other,
 * EINVAL naming none (rtnl_getlink). */
static int get_link(struct buf *b, const uint8_t *m, const struct nlmsghdr *h,
		    uint32_t portid)
{
	struct ifinfomsg ifi;
	const char *name;
	size_t nl = 0;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(ifi)))
		return -EINVAL;
	memcpy(&ifi, m + NLMSG_HDRLEN, sizeof(ifi));
	if (ifi.ifi_index > 0) {
		if (ifi.ifi_index != LO_INDEX)
			return -ENODEV;
	} else {
		name = name_attr(m, h->nlmsg_len, &nl);
		if (!name)
			return -EINVAL;
		if (nl != 2 || memcmp(name, "lo", 2))
			return -ENODEV;
	}
	link_lo(b, 0, h->nlmsg_seq, portid);
	return 0;
}

/* The request in h (its body at m + NLMSG_HDRLEN): 0, 1 for a dump (which
 * the kernel never acknowledges: its start returns -EINTR, and the ack is
 * skipped), or -errno for the error answer. */
static int request(struct buf *b, const uint8_t *m, const struct nlmsghdr *h,
		   uint32_t portid, const struct cr_rtnl_view *view)
{
	size_t body = h->nlmsg_len - NLMSG_HDRLEN;
	int type = h->nlmsg_type, kind, family;

	if (type > RTM_MAX)
		return -EOPNOTSUPP;
	/* "All the messages must have at least 1 byte length". */
	if (body < 1)
		return 0;
	family = m[NLMSG_HDRLEN];
	kind = (type - RTM_BASE) & 3;
	if (kind != 2)
		return -EPERM;	/* a change: CAP_NET_ADMIN */
	if (h->nlmsg_flags & NLM_F_DUMP) {
		if (type == RTM_GETLINK)
			link_lo(b, NLM_F_MULTI, h->nlmsg_seq, portid);
		if (type == RTM_GETADDR) {
			if (family != AF_INET6)
				addr_lo(b, AF_INET, NLM_F_MULTI, h->nlmsg_seq,
					portid);
			if (family != AF_INET && view->ipv6)
				addr_lo(b, AF_INET6, NLM_F_MULTI, h->nlmsg_seq,
					portid);
		}
		done(b, h->nlmsg_seq, portid);
		return 1;
	}
	if (type == RTM_GETLINK)
		return get_link(b, m, h, portid);
	/* A route to anywhere: the view has none beyond lo's own. */
	if (type == RTM_GETROUTE)
		return -ENETUNREACH;
	return -EOPNOTSUPP;
}

size_t cr_rtnl_answer(const uint8_t *m, size_t len, size_t *used,
		      uint32_t portid, bool cap_ack,
		      const struct cr_rtnl_view *view, uint8_t *out, size_t cap)
{
	struct buf b = { .p = out, .cap = cap };
	struct nlmsghdr h;
	int err = 0;

	*used = 0;
	if (len < NLMSG_HDRLEN)
		return 0;
	memcpy(&h, m, sizeof(h));
	if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len)
		return 0;
	/* Only requests are handled, and control messages are skipped:
	 * either way acknowledged when asked. */
	if ((h.nlmsg_flags & NLM_F_REQUEST) && h.nlmsg_type >= NLMSG_MIN_TYPE)
		err = request(&b, m, &h, portid, view);
	if (err < 0) {
		/* What was begun for a failed request is not sent. */
		b.len = 0;
		b.full = false;
	}
	if (err < 0 || (!err && (h.nlmsg_flags & NLM_F_ACK)))
		ack(&b, m, &h, err, cap_ack, portid);
	if (b.full)
		return 0;
	*used = NLMSG_ALIGN(h.nlmsg_len) < len ? NLMSG_ALIGN(h.nlmsg_len) : len;
	return b.len;
}
