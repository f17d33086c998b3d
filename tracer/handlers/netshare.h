/* tracer/handlers/netshare.h: what the socket handlers (net.c, sockopt.c)
 * share: the verdict helpers, a reason, two tests of what the program asks. */
#ifndef CORRAL_HANDLERS_NETSHARE_H
#define CORRAL_HANDLERS_NETSHARE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../tracer.h"
#include "../net/net.h"

static inline struct cr_verdict v_err(int e)
{
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = e };
}

static inline struct cr_verdict v_val(int64_t v)
{
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = v };
}

static inline struct cr_verdict v_rc(int rc)
{
	return rc < 0 ? v_err(errno) : v_val(rc);
}

/* 0 or -errno, as net/rtnl.c answers. */
static inline struct cr_verdict v_neg(int rc)
{
	return rc < 0 ? v_err(-rc) : v_val(rc);
}

#define WAY_OUT_WHY "an interface or source address other than loopback would send the packets out of the host"

/* net.c: an abstract or unnamed AF_UNIX address (no path to resolve). */
bool cr_net_abstract_or_unnamed(const union cr_sockaddr *a, socklen_t len);
/* sockopt.c: IP_OPTIONS holding a loose or strict source route (the
 * option, or the same bytes as a sendmsg's control message). */
bool cr_net_opt_source_route(const void *val, uint64_t len);

#endif
