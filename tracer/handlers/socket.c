/* tracer/handlers/socket.c: socket, socketpair: which families and types a
 * program may create at all (addresses are the network layer's). */
#include <errno.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <net/route.h>
#include <linux/sockios.h>

#include "handlers.h"
#include "../budget/budget.h"
#include "../net/net.h"
#include "../surface.h"

/*
 * Safe against a racing thread: the verdict reads three registers only.
 * Allowed: AF_UNIX (any type; its addresses are checked at connect and
 * bind), and AF_INET/AF_INET6 stream (TCP) and datagram (UDP, UDP-Lite)
 * sockets. Emulated: NETLINK_ROUTE (tracer/net/rtnl.c: the run is shown
 * lo alone; the kernel's socket is never made).
 * Refused: other netlink (the kernel's audit, uevent, diag interfaces),
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

/* The process that asked for a pair, recorded with it (net/pairs.c): its
 * SO_PEERCRED and SO_PEERPIDFD name that process, as natively. */
static int pair_note(struct cr_run *run, const struct seccomp_notif *n,
		     const uint64_t ino[2])
{
	pid_t tgid = cr_tasks_tgid(&run->tasks, (pid_t)n->pid);
	uint64_t start = tgid > 0 ? cr_tasks_start_time(tgid) : 0;

	if (tgid <= 0 || !start)
		return -ESRCH;
	return cr_net_pair_add(run->net, ino, tgid, start);
}

/* Room in the held table for one datagram socket, or a pair. */
static bool held_room(struct cr_run *run, bool pair)
{
	return cr_unix_hold_room(run->net) &&
	       (!pair || run->net->nuheld + 1 < CR_NET_UNIX_HELD_MAX);
}

/*
 * An AF_UNIX datagram socket (or pair) is made by the supervisor, which
 * holds a duplicate of each (tracer/net/unixhold.c): a sender closed with
 * datagrams waiting at the receiver leaves the kernel's socket list, and
 * the receiver's own figure is its first datagram's length only, so what
 * waits would count nowhere.
 *
 * A stream or seqpacket pair is made here too, and both ends followed by
 * inode while the kernel lists them (cr_budget_on_socket_pair): a thread
 * blocked in poll() keeps a pair alive, with everything queued in it,
 * after every descriptor was closed; 12 such threads held 376 MiB under
 * memory=64MiB where no fd table showed them (found by a probing
 * session). No duplicate is kept: end of file comes as natively.
 *
 * Made with the program's own arguments: the kernel's errno for a bad
 * type or protocol is what the program gets. A socketpair's array is
 * tried for writing before anything is made (EFAULT, nothing made, as
 * natively). The kernel records corral as the peer of a pair it makes:
 * the asking process is recorded with it (pair_note), for SO_PEERCRED
 * and SO_PEERPIDFD (handlers/pidfd.c).
 */
static struct cr_verdict unix_made(struct cr_run *run,
				   const struct seccomp_notif *n,
				   bool pair, int type, int proto)
{
	pid_t pid = (pid_t)n->pid;
	bool cloexec = (type & SOCK_CLOEXEC) != 0;
	bool dgram = (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_DGRAM;
	int sv[2] = { -1, -1 }, got[2] = { -1, -1 }, cur[2], err = 0;
	uint64_t ino[2] = { 0, 0 };
	struct cr_verdict v;

	/* Full until an fd scan lets go of the sockets no task holds: one
	 * now (a program making and closing one per message, as sd_notify
	 * clients do, hit ENOBUFS at the 1250th within a scan period, at the
	 * 64th under a 1024-descriptor limit; found by a differential
	 * probing session), and again as soon as a quarter of the table is
	 * new since (at one scan per 10 ms a faster machine made the 1250
	 * between two scans). A table still full of sockets the program
	 * holds waits for the pace: ENOBUFS meanwhile. */
	if (dgram && !held_room(run, pair) &&
	    cr_budget_rescan_now(run,
				 cr_unix_hold_scan_earned(run->net)))
		run->net->uheld_made_at_scan = run->net->uheld_made;
	if (dgram && !held_room(run, pair)) {
		cr_budget_rescan_soon(run);
		return CR_V_ERR(ENOBUFS);
	}
	if (pair && (cr_mem_read(pid, n->data.args[3], cur, sizeof(cur)) ||
		     cr_mem_write(pid, n->data.args[3], cur, sizeof(cur))))
		return CR_V_ERR(EFAULT);
	if (pair ? socketpair(AF_UNIX, type | SOCK_CLOEXEC, proto, sv) < 0 :
		   (sv[0] = socket(AF_UNIX, type | SOCK_CLOEXEC, proto)) < 0)
		return CR_V_ERR(errno);
	for (int i = 0; i < (pair ? 2 : 1) && !err; i++) {
		struct stat st;

		if (fstat(sv[i], &st) < 0) {
			err = errno;
			break;
		}
		ino[i] = st.st_ino;
		cr_guard_note_socket(sv[i]);
		if (dgram)
			err = -cr_unix_hold(run->net, sv[i], st.st_ino);
	}
	if (!err && !pair) {
		v = cr_notif_send_fd(run, n, sv[0], cloexec);
		return v;
	}
	if (!err) {
		int f = cr_budget_on_socket_pair(run, ino);

		if (f < 0)
			err = -f;
		else if (f > 0 && pair_note(run, n, ino) < 0)
			err = ENOBUFS;
	}
	for (int i = 0; i < 2 && !err; i++)
		if ((got[i] = cr_notif_add_fd(run, n->id, sv[i], cloexec)) < 0)
			err = -got[i] == EMFILE ? EMFILE : EIO;
	for (int i = 0; i < 2; i++)
		if (sv[i] >= 0)
			close(sv[i]);
	if (err)
		return CR_V_ERR(err);
	if (cr_mem_write(pid, n->data.args[3], got, sizeof(got)))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL(0);
}

/*
 * An Internet socket corral refuses may be one the kernel cannot make at
 * all: a bad flag, type or protocol number, or a protocol of another type
 * (a TCP datagram socket). The kernel answers those with EINVAL,
 * ESOCKTNOSUPPORT or EPROTONOSUPPORT whatever the caller's privilege,
 * so the supervisor asks it with the same three registers and passes
 * that answer on: nothing was refused, and nothing is recorded. A socket
 * it does make (it may run with privileges the program lacks) is closed
 * at once and the call refused as before; so is any other failure
 * (EPERM, EACCES, a full table of the supervisor's): fail closed.
 * Only AF_INET and AF_INET6, whose presence is no secret: for a refused
 * family the answer stays EAFNOSUPPORT, which hides whether it exists.
 */
static int kernel_cannot_make(int domain, int type, int proto)
{
	int fd = socket(domain, type | SOCK_CLOEXEC, proto);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	switch (errno) {
	case EINVAL:
	case ESOCKTNOSUPPORT:
	case EPROTONOSUPPORT:
		return errno;
	default:
		return 0;
	}
}

/*
 * A UDP (or UDP-Lite) socket is made here with a filter that drops every
 * datagram, and handed over. The kernel binds an unbound socket to the
 * wildcard at its first send or write that names no address (even one
 * that fails, EDESTADDRREQ, on a socket not connected), calls corral
 * never sees: without a filter that port heard the host and the network
 * (found by a probing session). A bind, a connect or an addressed send
 * puts the run's source filter in its place (net/udp.c), and the program
 * may not change a UDP socket's filter (handlers/net.c). Fail closed: a
 * socket whose filter cannot be set is not handed over.
 */
static struct cr_verdict udp_made(struct cr_run *run,
				  const struct seccomp_notif *n, int domain,
				  int type, int proto)
{
	static struct sock_filter drop[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { 1, drop };
	int fd = socket(domain, type | SOCK_CLOEXEC, proto);
	struct cr_verdict v;

	if (fd < 0)
		return CR_V_ERR(errno);
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
		       sizeof(prog)) < 0) {
		int err = errno;

		close(fd);
		return CR_V_ERR(err == ENOMEM ? ENOMEM : ENOBUFS);
	}
	cr_guard_note_socket(fd);
	v = cr_notif_send_fd(run, n, fd, (type & SOCK_CLOEXEC) != 0);
	return v;
}

/* The Internet sockets a program may make: TCP streams, UDP and UDP-Lite
 * datagrams (base: the type without SOCK_NONBLOCK and SOCK_CLOEXEC). */
static bool inet_allowed(int base, int proto)
{
	if (base == SOCK_STREAM)
		return proto == 0 || proto == IPPROTO_TCP;
	if (base == SOCK_DGRAM)
		return proto == 0 || proto == IPPROTO_UDP ||
		       proto == IPPROTO_UDPLITE;
	return false;
}

CR_HANDLER(cr_h_socket)
{
	int domain = (int)n->data.args[0];
	int type = (int)n->data.args[1];
	int proto = (int)n->data.args[2];
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC), err;
	bool pair = !strcmp(e->name, "socketpair");

	/* __sys_socket's and sock_create's own checks, for every family:
	 * an unknown flag bit, a family out of range, a type out of range
	 * (a refused family answered EAFNOSUPPORT to a bad type bit; found
	 * by a differential probing session). */
	if (type & ~(0xf | SOCK_NONBLOCK | SOCK_CLOEXEC))
		return CR_V_ERR(EINVAL);
	if (domain < 0 || domain >= AF_MAX)
		return CR_V_ERR(EAFNOSUPPORT);
	if ((type & 0xf) >= SOCK_PACKET + 1)
		return CR_V_ERR(EINVAL);
	if (domain == AF_UNIX) {
		struct cr_verdict v;

		/* Any can be handed a descriptor by a process outside the
		 * run: one named or connected to a name, and an end of a pair
		 * too, taken out by pidfd_getfd (handlers/kmem.c). */
		cr_kmem_zero_reachable(run);
		v = cr_surface_chain(run, e, n);

		if (v.kind != CR_V_CONTINUE || !run->net)
			return v;
		/* A stream pair only where sockets are measured: nothing
		 * else needs it made here. */
		if (base != SOCK_DGRAM &&
		    (!pair || !cr_budget_sockets_measured(run)))
			return v;
		return unix_made(run, n, pair, type, proto);
	}
	/* NETLINK_ROUTE is answered by corral with a view of lo alone
	 * (net/rtnl.c); netlink has no pairs (EOPNOTSUPP, as the kernel's
	 * sock_no_socketpair: nothing made, nothing refused). */
	if (domain == AF_NETLINK && proto == NETLINK_ROUTE && run->net) {
		struct cr_verdict v;

		if (pair)	/* netlink_create's type check first */
			return CR_V_ERR(base == SOCK_RAW || base == SOCK_DGRAM ?
					EOPNOTSUPP : ESOCKTNOSUPPORT);
		v = cr_surface_chain(run, e, n);
		if (v.kind != CR_V_CONTINUE)
			return v;
		return cr_rtnl_socket(run, n, type);
	}
	if (domain != AF_INET && domain != AF_INET6)
		return deny(run, n, e->name, EAFNOSUPPORT,
			    pair ? "socketpair: AF_UNIX only" :
				   "socket family refused (AF_UNIX, AF_INET and AF_INET6 only)",
			    domain, type, proto);
	if (inet_allowed(base, proto)) {
		/* A pair of them: the kernel makes both, then finds the
		 * family has no pairs (EOPNOTSUPP), and so nothing is made
		 * or refused (a program probing for pairs tests for that
		 * answer). */
		if (pair)
			return CR_V_ERR(EOPNOTSUPP);
		/* Its queues count against memory (tracer/budget/sockmem.c). */
		cr_budget_on_inet_socket(run, domain, base, proto);
		if (base == SOCK_DGRAM) {
			struct cr_verdict v = cr_surface_chain(run, e, n);

			if (v.kind != CR_V_CONTINUE)
				return v;
			return udp_made(run, n, domain, type, proto);
		}
		return cr_surface_chain(run, e, n);
	}
	err = kernel_cannot_make(domain, type, proto);
	if (err)
		return CR_V_ERR(err);
	return deny(run, n, e->name, EPERM,
		    "only TCP stream and UDP datagram Internet sockets",
		    domain, type, proto);
}

/*
 * The interface queries a run may make, of lo alone: the view the
 * emulated route netlink gives (tracer/net/rtnl.c). A query naming lo (by
 * name, or by index 1 for SIOCGIFNAME) is performed on corral's copy of
 * the program's socket, so the kernel answers with lo's own values and
 * with its own errno for the socket's family; any other name is the
 * kernel's answer for a device that does not exist, ENODEV. SIOCGIFCONF
 * lists lo's IPv4 address only. What the program names is read once,
 * and the call is never let through: the kernel would answer from the
 * name in its memory, which another thread may have changed since.
 */
static bool ifview_cmd(unsigned cmd)
{
	switch (cmd) {
	case SIOCGIFNAME:
	case SIOCGIFFLAGS:
	case SIOCGIFADDR:
	case SIOCGIFDSTADDR:
	case SIOCGIFBRDADDR:
	case SIOCGIFNETMASK:
	case SIOCGIFMETRIC:
	case SIOCGIFMTU:
	case SIOCGIFHWADDR:
	case SIOCGIFINDEX:
	case SIOCGIFPFLAGS:
	case SIOCGIFTXQLEN:
	case SIOCGIFMAP:
		return true;
	default:
		return false;
	}
}

/* The interface and route changes: the kernel checks CAP_NET_ADMIN before
 * it looks at the name, so every one is EPERM for a run, which never has
 * it (recorded: an attempt on the host's network). */
static bool ifset_cmd(unsigned cmd)
{
	switch (cmd) {
	case SIOCADDRT: case SIOCDELRT:
	case SIOCSIFFLAGS: case SIOCSIFADDR: case SIOCSIFDSTADDR:
	case SIOCSIFBRDADDR: case SIOCSIFNETMASK: case SIOCSIFMETRIC:
	case SIOCSIFMTU: case SIOCSIFNAME: case SIOCSIFHWADDR:
	case SIOCADDMULTI: case SIOCDELMULTI: case SIOCSIFPFLAGS:
	case SIOCDIFADDR: case SIOCSIFHWBROADCAST: case SIOCSIFTXQLEN:
	case SIOCSIFMAP: case SIOCDARP: case SIOCSARP:
		return true;
	default:
		return false;
	}
}

static struct cr_verdict ifview_conf(struct cr_run *run,
				     const struct seccomp_notif *n)
{
	pid_t pid = (pid_t)n->pid;
	struct ifconf ifc;
	struct ifreq lo;
	int len;

	if (cr_mem_read(pid, n->data.args[2], &ifc, sizeof(ifc)))
		return CR_V_ERR(EFAULT);
	memset(&lo, 0, sizeof(lo));
	memcpy(lo.ifr_name, "lo", 3);
	lo.ifr_addr.sa_family = AF_INET;
	((struct sockaddr_in *)&lo.ifr_addr)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* dev_ifconf: with no buffer, the length a full answer needs; with
	 * one, the entries that fit whole, and their length. */
	if (!ifc.ifc_buf)
		len = (int)sizeof(lo);
	else if (ifc.ifc_len < (int)sizeof(lo))
		len = 0;
	else if (cr_mem_write(pid, (uint64_t)(uintptr_t)ifc.ifc_buf, &lo,
			      sizeof(lo)))
		return CR_V_ERR(EFAULT);
	else
		len = (int)sizeof(lo);
	if (!cr_notif_valid(run, n->id))
		return CR_V_ERR(EINTR);
	if (cr_mem_write(pid, n->data.args[2] + offsetof(struct ifconf, ifc_len),
			 &len, sizeof(len)))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL(0);
}

static struct cr_verdict ifview_query(struct cr_run *run,
				      const struct seccomp_notif *n,
				      unsigned cmd)
{
	pid_t pid = (pid_t)n->pid;
	struct ifreq ifr;
	bool lo;
	int fd, rc;

	if (cr_mem_read(pid, n->data.args[2], &ifr, sizeof(ifr)))
		return CR_V_ERR(EFAULT);
	ifr.ifr_name[IFNAMSIZ - 1] = 0;	/* as the kernel reads it */
	/* The kernel looks a name up up to its first ':' (an alias label:
	 * "lo:0" is lo, whose answer the kernel then gives). */
	lo = cmd == SIOCGIFNAME ? ifr.ifr_ifindex == CR_NET_LOOPBACK_IFINDEX :
			      !strncmp(ifr.ifr_name, "lo", 2) &&
			      (!ifr.ifr_name[2] || ifr.ifr_name[2] == ':');
	/* SIOCGIFPFLAGS answers alike for every name (EINVAL on an IPv4
	 * socket, ENOTTY elsewhere): asked as lo. */
	if (cmd == SIOCGIFPFLAGS && !lo) {
		memset(ifr.ifr_name, 0, sizeof(ifr.ifr_name));
		memcpy(ifr.ifr_name, "lo", 2);
		lo = true;
	}
	fd = cr_tasks_getfd(run, pid, (int)n->data.args[0]);
	if (fd < 0)
		return CR_V_ERR(fd == -EBADF ? EBADF : ESRCH);
	if (!lo) {
		/* Absent, as the kernel says it: ENODEV, but ENOTTY for an
		 * address query on a socket that is not IPv4's (it never
		 * looks the name up). */
		int dom = AF_INET;
		socklen_t dl = sizeof(dom);
		bool addr = cmd == SIOCGIFADDR || cmd == SIOCGIFDSTADDR ||
			    cmd == SIOCGIFBRDADDR || cmd == SIOCGIFNETMASK;

		if (addr)
			(void)getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl);
		close(fd);
		return CR_V_ERR(addr && dom != AF_INET ? ENOTTY : ENODEV);
	}
	rc = ioctl(fd, cmd, &ifr) < 0 ? -errno : 0;
	close(fd);
	if (rc)
		return CR_V_ERR(-rc);
	if (!cr_notif_valid(run, n->id))
		return CR_V_ERR(EINTR);
	if (cr_mem_write(pid, n->data.args[2], &ifr, sizeof(ifr)))
		return CR_V_ERR(EFAULT);
	return CR_V_VAL(0);
}

/*
 * The socket ioctls (0x89xx) and the wireless ones (0x8bxx), by their
 * number (a register): those of the socket itself go on (signal owner
 * queries, the out-of-band mark, timestamps, unsent bytes); the
 * interface queries answer with lo alone (above); the ARP, ethtool, MII
 * and wireless queries describe the host's interfaces (the LAN's
 * neighbours, the card's driver and counters): "no such device",
 * recorded. Changes are EPERM, recorded (ifset_cmd).
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
	case 0x894b:	/* SIOCOUTQNSD */
		return CR_V_CONT;
	default:
		break;
	}
	/* Not a socket: the kernel's ENOTTY, nothing asked of the host. */
	switch (cr_ioctl_fd_kind(run, n, 2)) {
	case -EBADF:
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EBADF };
	case 0:
		return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = ENOTTY };
	default:
		break;
	}
	if (cmd == SIOCGIFCONF)
		return ifview_conf(run, n);
	if (ifview_cmd(cmd))
		return ifview_query(run, n, cmd);
	/* Queries this kernel does not have, on any socket. */
	if (cmd == SIOCGIFCOUNT || cmd == SIOCGIFMEM || cmd == SIOCGIFENCAP)
		return CR_V_ERR(ENOTTY);
	snprintf(target, sizeof(target), "ioctl 0x%x", cmd);
	if (cmd == SIOCGSKNS) {	/* the network namespace: CAP_NET_ADMIN */
		cr_deny(run, (pid_t)n->pid, e->name, target, "net",
			"the network namespace is not handed out");
		return CR_V_ERR(EPERM);
	}
	if (ifset_cmd(cmd)) {
		/* The kernel reads the request before it checks the
		 * capability (an unreadable one is EFAULT). */
		uint8_t req[sizeof(struct rtentry)];
		size_t rl = cmd == SIOCADDRT || cmd == SIOCDELRT ?
			    sizeof(struct rtentry) : sizeof(struct ifreq);

		if (cmd != SIOCSARP && cmd != SIOCDARP &&
		    cr_mem_read((pid_t)n->pid, n->data.args[2], req, rl))
			return CR_V_ERR(EFAULT);
		cr_deny(run, (pid_t)n->pid, e->name, target, "net",
			"changes to the host's interfaces and routes are refused");
		return CR_V_ERR(EPERM);
	}
	cr_deny(run, (pid_t)n->pid, e->name, target, "net",
		"queries of the host's network interfaces are refused");
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = ENODEV };
}
