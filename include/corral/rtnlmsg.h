/* include/corral/rtnlmsg.h: route netlink requests as a run's emulated
 * socket answers them: loopback only; pure parsing and building, no syscalls. */
#ifndef CORRAL_RTNLMSG_H
#define CORRAL_RTNLMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the run's view holds besides lo and 127.0.0.1/8: ::1/128 when the
 * host's loopback has it. */
struct cr_rtnl_view {
	bool ipv6;
};

/* The answer to one request never needs more than this plus the request
 * itself (an error echoes the request whole, as the kernel's ack does). */
#define CR_RTNL_ANSWER_BASE 1024

/*
 * One message of a datagram sent to the emulated socket, at m with len
 * bytes left in the datagram, as the kernel's netlink_rcv_skb walks it:
 * *used is how far the next message starts (0: stop, the rest is not
 * looked at). The answer datagram (a dump and its NLMSG_DONE, a single
 * object, or an NLMSG_ERROR) goes to out, addressed to portid; cap_ack
 * leaves the request out of an error answer (NETLINK_CAP_ACK). Returns
 * its length, 0 when the message is not answered, or 0 with *used = 0
 * when out (cap bytes) is too small (cap >= CR_RTNL_ANSWER_BASE + len
 * is always enough).
 */
size_t cr_rtnl_answer(const uint8_t *m, size_t len, size_t *used,
		      uint32_t portid, bool cap_ack,
		      const struct cr_rtnl_view *view, uint8_t *out, size_t cap);

#endif
