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
