/* include/corral/netmatch.h: the allow-list matcher: parsed net.allow rules
 * and the pure questions the network layer asks of them. */
#ifndef CORRAL_NETMATCH_H
#define CORRAL_NETMATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CR_NET_NAME_MAX 254	/* 253 bytes of name and a NUL */

enum cr_netrule_kind {
	CR_NR_HOST,	/* a DNS name: matched by the in-process resolver */
	CR_NR_IP,	/* an address or a CIDR block */
};

struct cr_netrule {
	enum cr_netrule_kind kind;
	int family;		/* AF_INET or AF_INET6 for CR_NR_IP */
	uint8_t addr[16];	/* network byte order; 4 bytes used for v4 */
	unsigned prefix;	/* 0-32 / 0-128 */
	bool exact;		/* written without a prefix (or /32, /128) */
	char host[CR_NET_NAME_MAX];	/* lower case, no trailing dot */
	uint16_t port_lo, port_hi;	/* inclusive; "*" is 1-65535 */
};

/* Parse one destination that cr_net_dest_validate accepted. 0 or -EINVAL. */
int cr_netrule_parse(const char *dest, struct cr_netrule *r);

/* Addresses that are closed unless a rule names them exactly: loopback,
 * unspecified, link-local, private, shared (CGNAT), multicast, broadcast,
 * reserved, and every IPv6 form that embeds an IPv4 address (mapped,
 * compatible, NAT64, 6to4). Returns a short reason, or NULL when the address
 * is an ordinary public one. */
const char *cr_net_addr_closed(int family, const uint8_t *addr);

/* Does an IP rule allow (family, addr, port)? Closed addresses match only a
 * rule that names them exactly (no CIDR block, however wide, opens them). */
bool cr_netrules_allow_addr(const struct cr_netrule *r, size_t n, int family,
			    const uint8_t *addr, uint16_t port);

/* Does a rule naming (family, addr) exactly (no prefix, or /32, /128)
 * allow port? What opens a closed address, and one the host owns. */
bool cr_netrules_allow_exact(const struct cr_netrule *r, size_t n, int family,
			     const uint8_t *addr, uint16_t port);

/* Does a HOST rule name this DNS name (any port)? Case-insensitive, one
 * trailing dot ignored. */
bool cr_netrules_allow_name(const struct cr_netrule *r, size_t n,
			    const char *name);

/* Does a HOST rule for name allow port? */
bool cr_netrules_allow_name_port(const struct cr_netrule *r, size_t n,
				 const char *name, uint16_t port);

#endif
