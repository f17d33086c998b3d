/* tracer/handlers/socket.c: socket, socketpair: which families and types a
 * program may create at all (addresses are the network layer's). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "handlers.h"
#include "../budget.h"
#include "../surface.h"

/*
 * Safe against a racing thread: the verdict reads three registers only.
 * Allowed: AF_UNIX (any type; its addresses are checked at connect and
 * bind), and AF_INET/AF_INET6 stream (TCP) and datagram (UDP, UDP-Lite)
 * sockets.
 * Refused: netlink (the kernel's routing, audit and uevent interfaces),
 * packet and raw sockets (forged traffic around the network layer), ICMP
 * "ping" datagram sockets, SCTP, MPTCP, vsock, Bluetooth, alg and the rest:
 * none of them is mediated by another layer of corral. A refused family
 * answers EAFNOSUPPORT, a refused type or protocol EPERM, as the kernel
 * itself would without the support or the privilege, so programs fall
 * back (glibc's getaddrinfo copes without netlink).
 *
 * When another area's table entry handles these calls as well (the
 * network layer may watch socket()), it runs after this check passes.
 */

static struct cr_verdict deny(struct cr_run *run, const struct seccomp_notif *n,
			      const char *call, int error, const char *why,
			      int domain, int type, int proto)
{
	char target[64];

	snprintf(target, sizeof(target), "domain %d type %d protocol %d",
		 domain, type, proto);
	cr_deny(run, (pid_t)n->pid, call, target, "syscall", why);
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = error };
}

CR_HANDLER(cr_h_socket)
{
	int domain = (int)n->data.args[0];
	int type = (int)n->data.args[1];
	int proto = (int)n->data.args[2];
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	bool pair = !strcmp(e->name, "socketpair");

	if (domain == AF_UNIX)
		return cr_surface_chain(run, e, n);
	if (pair || (domain != AF_INET && domain != AF_INET6))
		return deny(run, n, e->name, EAFNOSUPPORT,
			    pair ? "socketpair: AF_UNIX only" :
				   "socket family refused (AF_UNIX, AF_INET and AF_INET6 only)",
			    domain, type, proto);
	if ((base == SOCK_STREAM && (proto == 0 || proto == IPPROTO_TCP)) ||
	    (base == SOCK_DGRAM && (proto == 0 || proto == IPPROTO_UDP ||
				    proto == IPPROTO_UDPLITE))) {
		/* Its queues count against memory (tracer/sockmem.c). */
		cr_budget_on_inet_socket(run, domain, base, proto);
		return cr_surface_chain(run, e, n);
	}
	return deny(run, n, e->name, EPERM,
		    "only TCP stream and UDP datagram Internet sockets",
		    domain, type, proto);
}

/*
 * The socket ioctls (0x89xx) and the wireless ones (0x8bxx), by their
 * number alone (a register): those of the socket itself go on (signal
 * owner queries, the out-of-band mark, timestamps, unsent bytes); the
 * interface, ARP, ethtool and MII queries describe the host's interfaces
 * (addresses, MACs, the LAN's neighbours, traffic counters), which the
 * refusal of netlink keeps hidden too: "no such device". Interface names
 * and indexes (SIOCGIFNAME, SIOCGIFINDEX: if_nametoindex) stay, as
 * docs/threat-model.md lists them visible. Setting calls need
 * CAP_NET_ADMIN, which a run never has.
 */
CR_HANDLER(cr_h_sockios)
{
	unsigned cmd = (unsigned)n->data.args[1];
	char target[32];

	switch (cmd) {
	case 0x8903:	/* FIOGETOWN */
	case 0x8904:	/* SIOCGPGRP */
	case 0x8905:	/* SIOCATMARK */
	case 0x8906:	/* SIOCGSTAMP_OLD */
	case 0x8907:	/* SIOCGSTAMPNS_OLD */
	case 0x8910:	/* SIOCGIFNAME */
	case 0x8933:	/* SIOCGIFINDEX */
	case 0x894b:	/* SIOCOUTQNSD */
		return CR_V_CONT;
	default:
		break;
	}
	snprintf(target, sizeof(target), "ioctl 0x%x", cmd);
	cr_deny(run, (pid_t)n->pid, e->name, target, "net",
		"queries of the host's network interfaces are refused");
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = ENODEV };
}
