/* tracer/net/net.h: the network area's state behind run->net: allow rules,
 * the in-process proxy, the DNS responder, and what handlers ask of them. */
#ifndef CORRAL_NET_H
#define CORRAL_NET_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "corral/netmatch.h"
#include "../tracer.h"

/* Most connects the proxy holds between the program's connect and its own
 * accept; kept far below the listeners' backlog so a blocking connect to
 * them always completes at once and never stalls the loop. */
#define CR_NET_MAX_PENDING 512
#define CR_NET_MAX_LEARNED 1024	/* addresses DNS answers taught us */
#define CR_NET_MAX_DNS_INFLIGHT 128
#define CR_NET_MAX_DNS_CLIENTS 256
#define CR_NET_MAX_DEFERRED 256	/* sends waiting for socket space */
/* The SCM_RIGHTS copies deferred sends may hold, with the closer's backlog,
 * at most 1/CR_NET_DEFER_FDS_DIV of the supervisor's RLIMIT_NOFILE: the
 * rest stays for the budgets' measures, the ledger and the calls (defer.c). */
#define CR_NET_DEFER_FDS_DIV 8
#define CR_NET_MAX_PEERS 4096	/* remembered destinations (getpeername) */
/* Run sockets bound, and connections the run made to them not yet
 * accepted: each table grows to this, forgetting what the kernel no
 * longer has whenever it is full (local.c). */
#define CR_NET_MAX_LOCAL 65536
#define CR_NET_PRUNE_FROM 4096	/* smaller tables only grow */
/* TCP sockets bound at once: a quarter of the host's ephemeral port
 * range, at least this many (local.c, cr_net_local_limits). */
#define CR_NET_MIN_LOCAL 1024
/* Names of live sockets remembered at once (the tables grow to these; a
 * full one forgets the names of sockets gone first, then the oldest). */
#define CR_NET_MAX_UNAMES 16384	/* unix names bound */
#define CR_NET_MAX_ANAMES 16384	/* abstract unix names bound (abstract.c) */
#define SUN_LEN_MAX sizeof(((struct sockaddr_un *)0)->sun_path)
#define CR_NET_MAX_WAITS 1024	/* accepts and receives waiting */
#define CR_NET_MAX_UDP 512	/* UDP sockets of the run held (udp.c) */
#define CR_NET_MAX_FLAGS 4096	/* sockets with a sharing option set */
#define CR_NET_MAX_RTNL 64	/* route netlink sockets emulated at once */
/* The kernel gives loopback this index in every namespace (LOOPBACK_IFINDEX). */
#define CR_NET_LOOPBACK_IFINDEX 1

union cr_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
	struct sockaddr_un un;
	struct sockaddr_storage ss;
};

struct cr_net_pending;
struct cr_net_conn;
struct cr_net_peer;
struct cr_net_learned;
struct cr_net_dnsq;
struct cr_net_deferred;
struct cr_net_lsn;
struct cr_net_client;
struct cr_net_uname;
struct cr_net_aname;
struct cr_net_wait;
struct cr_net_udp;
struct cr_net_flag;
struct cr_rtnl;
struct tcpdns;
struct cr_net_dnsclient;

/* A TCP endpoint, IPv4-mapped IPv6 addresses already made IPv4. */
/* The shortest sockaddr_in6 the kernel takes: without sin6_scope_id. */
#define CR_SIN6_LEN_RFC2133 24

struct cr_net_ep {
	int family;
	uint8_t addr[16];
	uint16_t port;
};

struct cr_ownsend;

struct cr_netstate {
	struct cr_ownsend *ownsend;	/* owned list: ownsend.c */
	bool ownsend_off;		/* the kernel's wait is not killable */
	long ownsend_base;		/* filters a task of the run has: 0
					 * not read yet, -1 unknown */
	bool own_filters;		/* a task of the run asked for a
					 * seccomp filter of its own */
	bool passcred;			/* a unix socket of the run asked for
					 * its peers' credentials */
	uint64_t rights_direct;		/* descriptors corral sent in flight
					 * itself, before the helper (rights.c) */
	struct cr_netrule *rules;	/* owned */
	size_t nrules;
	char *ws_real;			/* owned: canonical workspace path */
	int wsfd;			/* owned: O_PATH of the workspace */

	/* the proxy: one loopback listener per family, -1 if unavailable */
	int lfd[2];			/* owned; [0] v4, [1] v6 */
	union cr_sockaddr laddr[2];
	struct cr_net_pending *pending;	/* owned array */
	size_t npending;
	int ptfd;			/* owned: net-conn-time of pending
					 * upstreams (proxy.c), or -1 */
	struct cr_watch *ptw;
	struct cr_net_conn *conns;	/* owned list */
	size_t nconns;
	size_t audited;			/* "net" audit events written */
	struct cr_net_peer *peers;	/* owned array: getpeername answers */
	size_t npeers, cappeers;

	/* DNS: a UDP responder per family, a TCP one, the upstream */
	int dfd[2];			/* owned: UDP responders */
	union cr_sockaddr daddr[2];
	int tfd[2];			/* owned: TCP responders */
	union cr_sockaddr taddr[2];
	int upfd;			/* owned: UDP socket to the upstream */
	union cr_sockaddr upstream;
	socklen_t uplen;
	bool have_upstream;
	struct cr_net_dnsq *dnsq;	/* owned array, CR_NET_MAX_DNS_INFLIGHT */
	uint16_t next_id;
	struct tcpdns *tcps;		/* owned list: TCP clients */
	size_t ntcps;
	struct cr_net_dnsclient *clients;	/* owned: sockets allowed to query */
	size_t nclients;
	struct cr_net_learned *learned;	/* owned ring */
	size_t nlearned, learned_next;
	struct cr_net_deferred *deferred;	/* owned list */
	size_t ndeferred;
	size_t deferred_fds;	/* SCM_RIGHTS copies the deferred sends hold */
	uint64_t deferred_bytes;	/* their buffers: the run's memory */

	/* the run's own loopback servers (local.c) */
	const struct cr_run_config *cfg;	/* borrowed: --publish */
	struct cr_net_lsn *lsn;		/* owned array: sockets the run bound */
	size_t nlsn, caplsn;
	struct timespec lsn_pruned;	/* the last prune of a full table */
	size_t lsn_most;		/* bound at once, at most (local.c) */
	struct timespec lsn_capped;	/* the last prune that found it so */
	bool lsn_capped_kept;		/* ...and kept most of the table */
	struct cr_net_client *clients_local;	/* owned: run connects */
	size_t nlocal_clients, caplocal_clients;
	struct timespec clients_pruned;
	/* unix names as bound (unixname.c) */
	struct cr_net_uname *unames;	/* owned array */
	size_t nunames, capunames, uname_next;
	uint64_t uname_seq;
	/* the sockets of both name tables (unix paths, abstract names),
	 * followed without a reference (fs/weak.c), each by its entry's
	 * id: a full table forgets first the names of sockets gone */
	int names_weak;			/* owned, or -1 until the first */
	uint64_t name_id;
	uint64_t names_sweep_next_ns;	/* no sweep before this */
	/* accepts and receives waiting for their socket (defer.c) */
	struct cr_net_wait *waits;	/* owned list */
	size_t nwaits;
	/* ...and the check of their callers' signals (defer.c) */
	int sigtfd;			/* owned timerfd, made with sigw */
	struct cr_watch *sigw;
	long sigarmed;		/* the signal check's period (ms); 0: off */
	/* the run's UDP sockets and their source filter (udp.c) */
	struct cr_net_udp *udp;		/* owned array */
	/* Where a send to a loopback UDP port no socket of the run holds
	 * goes ([0]: unconnected, dropped) and what a connect to one is
	 * pointed at ([1]: refused by the kernel's ICMP): sockets per family
	 * bound by corral, never read, their receive buffers the least
	 * (udp.c, cr_net_udp_sink). */
	uint64_t collect_next_ns;	/* cr_net_udp_collect's pace */
	int sink[2][2];			/* [kind][family]; owned, made at
					 * first use */
	union cr_sockaddr saddr[2][2];
	/* TCP ports per family bound by corral and never listening: a
	 * refused non-blocking connect is pointed at one, so the kernel
	 * answers it as a closed port (handlers/net.c, cr_net_refused_later). */
	int tref[2];			/* owned, made at first use, or -1 */
	union cr_sockaddr traddr[2];
	size_t nudp, capudp;
	/* sharing options remembered, not applied (local.c) */
	struct cr_net_flag *flags;	/* owned array, CR_NET_MAX_FLAGS */
	size_t nflags, flag_next;
	/* unix connections not yet accepted, held (unixhold.c) */
	struct cr_unix_held *uheld;	/* owned array */
	size_t nuheld, capuheld;
	uint64_t uheld_made;		/* ever held, and at the last
					 * scan a full table asked for */
	uint64_t uheld_made_at_scan;
	/* unix socket pairs made for the run, by creator (pairs.c) */
	struct cr_net_pair *pairs;	/* owned array */
	size_t npairs, cappairs;
	/* abstract unix names (abstract.c) */
	struct cr_net_aname *anames;	/* owned array, CR_NET_MAX_ANAMES */
	size_t nanames, capanames, aname_next;
	uint64_t anonce, aseq;
	/* route netlink sockets, emulated (rtnl.c) */
	struct cr_rtnl *rtnl;		/* owned array, CR_NET_MAX_RTNL; made
					 * at first use */
	uint32_t rtnl_rover;		/* the next autobound portid */
	bool rtnl_view_known, rtnl_ipv6;
};

/* tracer/net/unixhold.c: unix stream connections the run made, held by
 * the supervisor until accepted, and its unix datagram sockets (their
 * queued bytes stay listed). At most
 * this many at once (and a sixteenth of the supervisor's descriptors). */
#define CR_NET_UNIX_HELD_MAX 4096
struct cr_unix_held;
bool cr_unix_hold_room(struct cr_netstate *ns);
/* Whether a full table has earned a scan before the usual pace allows
 * one (cr_budget_rescan_now). */
bool cr_unix_hold_scan_earned(struct cr_netstate *ns);
int cr_unix_hold(struct cr_netstate *ns, int sock, uint64_t ino);
/* fd was just accepted by the run: its client is let go. */
void cr_unix_accepted(struct cr_netstate *ns, int fd);
/* Let go of those held since before scan_ns (the fd scan's start) that
 * no task holds (tasks: its inodes) and none in flight (sent), with
 * nothing queued; the inodes of the rest (at most cap) go to out. */
size_t cr_unix_held_sweep(struct cr_netstate *ns, const uint64_t *tasks,
			  size_t ntasks, const uint64_t *sent, size_t nsent,
			  uint64_t scan_ns, uint64_t *out, size_t cap);
void cr_unix_held_finish(struct cr_netstate *ns);

/* tracer/net/pairs.c: unix socket pairs corral made, each end's inode
 * with the process that asked (its tgid and start time). */
struct cr_net_pair;
int cr_net_pair_add(struct cr_netstate *ns, const uint64_t ino[2], pid_t tgid,
		    uint64_t start);
bool cr_net_pair_creator(const struct cr_netstate *ns, uint64_t ino,
			 pid_t *tgid, uint64_t *start);
/* Keep only the pairs whose socket is in alive (sorted). */
void cr_net_pairs_prune(struct cr_netstate *ns, const uint64_t *alive,
			size_t nalive);
void cr_net_pairs_finish(struct cr_netstate *ns);

/* tracer/net/rtnl.c: the run's NETLINK_ROUTE sockets, answered by corral
 * with a view of lo alone. socket() makes one (type as asked: SOCK_RAW or
 * SOCK_DGRAM and the two flags); the rest are the calls' halves on a
 * socket cr_rtnl_find knows by its inode (0 or -errno). */
struct cr_verdict cr_rtnl_socket(struct cr_run *run,
				 const struct seccomp_notif *n, int type);
struct cr_rtnl *cr_rtnl_find(struct cr_netstate *ns, uint64_t ino);
int cr_rtnl_type(const struct cr_rtnl *r);
/* The longest request one send may carry: netlink_sendmsg's bound with the
 * default send buffer (EMSGSIZE past it). */
#define CR_RTNL_SEND_MAX (212992 - 32)
int cr_rtnl_bind(struct cr_run *run, struct cr_rtnl *r,
		 const union cr_sockaddr *a, socklen_t alen);
int cr_rtnl_connect(struct cr_run *run, struct cr_rtnl *r,
		    const union cr_sockaddr *a, socklen_t alen);
socklen_t cr_rtnl_name(const struct cr_rtnl *r, bool peer,
		       union cr_sockaddr *a);
/* A request sent (data, len; the address alen bytes, 0 for none): answered
 * before this returns; the verdict is the send's. */
struct cr_verdict cr_rtnl_send(struct cr_run *run, struct cr_rtnl *r,
			       const void *data, size_t len,
			       const union cr_sockaddr *a, socklen_t alen,
			       int flags);
int cr_rtnl_setsockopt(struct cr_rtnl *r, int opt, const void *val,
		       size_t len);
void cr_rtnl_finish(struct cr_netstate *ns);

/* tracer/net/net.c */
int cr_net_setup(struct cr_run *run);
void cr_net_finish(struct cr_run *run);
/* Duplicate the socket (any fd) `fd` of task `tid` into the supervisor. */
int cr_net_task_fd(struct cr_run *run, pid_t tid, int fd);
/* Is (family, addr, port) allowed for a TCP connection: by an IP rule, or
 * because an allowed name resolved to it and that name allows the port? */
bool cr_net_allowed(const struct cr_netstate *ns, int family,
		    const uint8_t *addr, uint16_t port);
/* The same question: NULL when allowed, else why (static text). Closed
 * ranges and the host's own addresses open only to a rule naming them
 * exactly. */
const char *cr_net_refusal(const struct cr_netstate *ns, int family,
			   const uint8_t *addr, uint16_t port);
void cr_net_learn(struct cr_netstate *ns, int family, const uint8_t *addr,
		  const char *name);
/* The loopback address of family (AF_INET or AF_INET6), port 0, in *a;
 * returns its length. */
socklen_t cr_net_loopback(int family, union cr_sockaddr *a);
/* "1.2.3.4:80" / "[::1]:80" / the path for AF_UNIX. */
void cr_net_addr_text(const union cr_sockaddr *a, socklen_t len, char *buf,
		      size_t buflen);
/* Remember the destination a socket asked for (inode ino): getpeername
 * reports it when the socket is connected (connected), and recvfrom
 * reports it as the source of the DNS responder's answers. */
int cr_net_peer_set(struct cr_netstate *ns, uint64_t ino,
		    const union cr_sockaddr *a, socklen_t len, bool connected);
const union cr_sockaddr *cr_net_peer_get(const struct cr_netstate *ns,
					 uint64_t ino, socklen_t *len,
					 bool connected_only);
void cr_net_peer_drop(struct cr_netstate *ns, uint64_t ino);

/* tracer/net/proxy.c */
int cr_proxy_setup(struct cr_run *run);
/* Charge n bytes of the run's network traffic (the proxy's, and the DNS
 * responder's exchanges with the upstream) to net-bytes; past the budget
 * the run ends limit_exceeded and false is returned. */
bool cr_net_charge(struct cr_run *run, uint64_t n);
/* After the program's socket (our duplicate dup) was connected to the
 * proxy listener: remember where it wanted to go. */
/* check_sni: allowed by a name, not by an address rule: the proxy checks
 * the TLS server name before relaying. */
/* up: the upstream connection cr_proxy_preconnect made, taken over, or
 * -1 for the proxy to make it after the accept. */
int cr_proxy_expect(struct cr_run *run, int dup, const union cr_sockaddr *dest,
		    socklen_t destlen, uint64_t ino, bool check_sni, int up);
/* For a destination allowed by address: the upstream connection, made
 * before the program's socket is connected to the proxy, so that a
 * refusal the peer gives at once (a loopback port where nothing listens)
 * is the program's answer, as natively, rather than a connection that
 * is then reset. The socket (connected or still connecting), or
 * -ECONNREFUSED / -ENETUNREACH / -EHOSTUNREACH for that answer, or
 * another -errno: leave it to the proxy. */
int cr_proxy_preconnect(struct cr_run *run, const union cr_sockaddr *dest,
			socklen_t destlen);
/* May one more connect be recorded? Records whose held socket is no
 * longer connecting are swept when the table is full. */
bool cr_proxy_room(struct cr_run *run);
void cr_proxy_finish(struct cr_run *run);

/* tracer/net/dns.c */
int cr_dns_setup(struct cr_run *run);
/* The program's socket (our duplicate dup, inode ino; tcp: a stream to the
 * TCP responder) may now query the responder from its bound address. A
 * datagram socket is held (a duplicate kept) while its record lives. */
int cr_dns_client(struct cr_netstate *ns, int dup, uint64_t ino, bool tcp);
/* connect(AF_UNSPEC) gave the datagram socket ino's port up: forget it. */
void cr_dns_client_drop(struct cr_netstate *ns, uint64_t ino);
/* The inodes of the datagram clients held (at most cap), for the memory
 * measure: their queues outlive the program's descriptors. */
size_t cr_dns_client_inodes(const struct cr_netstate *ns, uint64_t *out,
			    size_t cap);
void cr_dns_finish(struct cr_run *run);
/* Pure, for tests: answer a query for a name not on the list. */

/* tracer/net/defer.c: sends that would block, finished when writable */
struct cr_net_msg {
	int dup;			/* owned */
	struct msghdr msg;		/* points into the fields below */
	struct iovec iov;
	void *data;			/* owned */
	union cr_sockaddr name;
	void *control;			/* owned */
	int *fds;			/* owned: duplicated SCM_RIGHTS fds */
	size_t nfds;
	int flags;
	bool unix_dom;			/* an AF_UNIX socket */
	int hold;			/* owned: the O_PATH fd a unix path
					 * name stands for (/proc/self/fd/N,
					 * handlers/net.c), or -1 */
	bool sigpipe;			/* raise SIGPIPE in the task on EPIPE */
	uint64_t mmsg_len;		/* sendmmsg: where msg_len goes; the
					 * deferred answer is then 1 */
	/* A blocking stream send is finished whole, as the kernel's: the
	 * program's iovecs as the call gave them (the kernel copies them
	 * once too), read a piece of CR_NET_STREAM_PIECE at a time. */
	bool stream;			/* a SOCK_STREAM socket */
	bool whole;			/* answered when all is sent */
	struct iovec *piov;		/* owned, or NULL: all read at once */
	size_t npiov;
	size_t total, sent;		/* bytes asked for, sent so far */
	pid_t pid;			/* whose memory piov names, and whose
					 * limit a send of descriptors keeps */
	/* sendfile (handlers/sendfile.c): the pieces are read from a file
	 * instead, at src_pos + sent; once answered with a count, the
	 * program's offset (at src_ptr) or the file's own position moves
	 * by it, as the kernel's sendfile moves it. */
	bool file_src;
	int src;			/* owned when file_src */
	int src_rd;			/* owned: an open of src's file to
					 * read through (no O_DIRECT), or -1 */
	int64_t src_pos;
	uint64_t src_ptr;		/* the program's loff_t, or 0 */
};
#define CR_NET_STREAM_PIECE (256 * 1024)
void cr_net_msg_free(struct cr_net_msg *m);
/* Perform m without blocking. Returns the verdict to answer now, or a
 * CR_V_SENT verdict after taking m over to finish it when the socket has
 * room (only when the program's socket is blocking). */
struct cr_verdict cr_net_send(struct cr_run *run,
			      const struct seccomp_notif *n,
			      struct cr_net_msg *m, bool may_defer);
void cr_net_defer_finish(struct cr_run *run);
/* tid is gone: its waiting calls end now, and with them corral's copies
 * of their files (a pipe's last reader, a socket's last holder: the peer
 * sees the end as it would natively, not at the next readiness). */
void cr_net_defer_on_gone(struct cr_run *run, pid_t tid);

/* ---- a unix sendmsg the task makes itself (ownsend.c) ---- */

/* A checked sendmsg without address or control data, of one buffer
 * (buf, len), on a unix socket: the task is interrupted so that it makes
 * it again as sendto(fd, buf, len, flags, NULL, 0), its own credentials
 * on the message. true: answer it cr_ownsend_answer(); false: send it as
 * before. */
bool cr_ownsend_begin(struct cr_run *run, const struct seccomp_notif *n,
		      uint64_t buf, uint64_t len);
struct cr_verdict cr_ownsend_answer(void);
/* A ptrace stop of tid: true when it was one of ours, handled (and the
 * task resumed). */
bool cr_ownsend_on_stop(struct cr_run *run, pid_t tid, int status);
/* How the state machine resumes tid: PTRACE_SYSCALL while its sendto's
 * syscall stops are awaited, else PTRACE_CONT. */
int cr_ownsend_resume(const struct cr_run *run, pid_t tid);
void cr_ownsend_on_gone(struct cr_run *run, pid_t tid);
void cr_ownsend_finish(struct cr_netstate *ns);
/* The buffers corral holds for the run's waiting sends (memory budget). */
uint64_t cr_net_deferred_bytes(const struct cr_run *run);
/* Keep notification n unanswered until dup (taken over) reports events,
 * then call fn on the loop thread: it returns the verdict to answer (or
 * CR_V_SENT after answering itself) and sets *again to wait once more.
 * arg is freed with free() when the wait ends. */
typedef struct cr_verdict (*cr_net_wait_fn)(struct cr_run *run, uint64_t id,
					    pid_t tid, int dup, void *arg,
					    bool *again);
struct cr_verdict cr_net_wait(struct cr_run *run, const struct seccomp_notif *n,
			      int dup, uint32_t events, cr_net_wait_fn fn,
			      void *arg);
/* The same, arg released by free_arg (it may hold descriptors). dup may
 * be any file that polls (a pipe: a signal restarts the call, as no
 * socket timeout applies). */
struct cr_verdict cr_net_wait_owned(struct cr_run *run,
				    const struct seccomp_notif *n, int dup,
				    uint32_t events, cr_net_wait_fn fn,
				    void *arg, void (*free_arg)(void *));
/* The same, woken by a one-shot timer after ms instead of a socket: fn
 * gets the timerfd as dup (cr_net_wait_rearm sets it again before fn asks
 * for *again). arg is released by free_arg when the wait ends. sock (kept
 * open by arg) and opt name the timeout a signal asks about: with one set
 * the call ends EINTR, else it restarts (sock_intr_errno). */
struct cr_verdict cr_net_wait_timer(struct cr_run *run,
				    const struct seccomp_notif *n, unsigned ms,
				    cr_net_wait_fn fn, void *arg,
				    void (*free_arg)(void *), int sock, int opt);
int cr_net_wait_rearm(int tfd, unsigned ms);

/* tracer/net/local.c */
/* fn(inode) for every TCP and UDP socket of the host's network namespace,
 * IPv4 and IPv6 (sock_diag); stops at fn's first non-zero answer and
 * returns it, or a negative errno when the kernel could not be asked. */
int cr_net_each_inet_socket(int (*fn)(uint64_t ino, void *arg), void *arg);
bool cr_net_ep_of(const union cr_sockaddr *a, socklen_t len,
		  struct cr_net_ep *ep);
bool cr_net_ep_loopback(const struct cr_net_ep *ep);
bool cr_net_ep_any(const struct cr_net_ep *ep);
/* Room for one more bound socket (0), made by growing the table or by
 * forgetting sockets the kernel no longer has; -ENOSPC or -ENOMEM when
 * there is none: the bind is then refused before it is made. */
void cr_net_local_limits(struct cr_netstate *ns);
int cr_net_local_room(struct cr_netstate *ns);
/* The run's TCP socket of inode ino asked to share its port (SO_REUSEPORT,
 * remembered, not applied), and: does a socket of the run that asked so
 * hold this port? (A bind's EADDRINUSE is then corral's doing.) */
void cr_net_local_mark_shared(struct cr_netstate *ns, uint64_t ino);
bool cr_net_local_port_shared(const struct cr_netstate *ns, int family,
			      uint16_t port);
int cr_net_local_bound(struct cr_netstate *ns, uint64_t ino,
		       const struct cr_net_ep *ep, bool wildcard);
bool cr_net_local_find(const struct cr_netstate *ns, uint64_t ino,
		       struct cr_net_ep *ep, bool *wildcard);
/* Does a socket of the run hold dst: its port on dst's address, or on its
 * family's wildcard? (An allowed host service on 127.0.0.1:P is not the
 * run's because the run bound 127.0.0.2:P.) */
bool cr_net_local_holds(const struct cr_netstate *ns,
			const struct cr_net_ep *dst);
bool cr_net_published(const struct cr_netstate *ns, uint16_t port);
/* Who would take a TCP connection to dst now (local.c); *full (if not
 * NULL) set when one of the run's listeners has its queue full. */
int cr_net_local_listener(const struct cr_netstate *ns,
			  const struct cr_net_ep *dst, bool *full);
/* The inode of the TCP socket whose own end is `self` and whose peer is
 * `other` (sock_diag's exact lookup) in *ino: 1 found (inode 0 for one no
 * file holds any more: closed, orphaned, TIME_WAIT), 0 none, -1 when the
 * kernel could not be asked (fail closed). */
int cr_net_tcp_inode(const struct cr_net_ep *self,
		     const struct cr_net_ep *other, uint64_t *ino);
/* The same lookup, with the socket's cookie (SO_COOKIE: one socket's, never
 * reused) and TCP state as well. */
int cr_net_tcp_find(const struct cr_net_ep *self, const struct cr_net_ep *other,
		    uint64_t *ino, uint64_t *cookie, int *state);
/* A connection the run made (its client socket ino, from local to remote)
 * waits for the run's accept; the listener's end of it is the socket with
 * cookie `server` (0: not known at the connect). */
void cr_net_local_client(struct cr_netstate *ns, uint64_t ino,
			 const struct cr_net_ep *local,
			 const struct cr_net_ep *remote, uint64_t server);
/* Is the connection accepted from peer at local, whose accepted socket has
 * the cookie `accepted`, one the run made? Its record is used up. */
bool cr_net_local_client_take(struct cr_netstate *ns,
			      const struct cr_net_ep *peer,
			      const struct cr_net_ep *local, uint64_t accepted);
void cr_net_local_finish(struct cr_netstate *ns);
/* SO_REUSEADDR of a UDP socket and SO_REUSEPORT of any internet socket fd:
 * set (0, or -1 when it cannot be remembered), and read back (the value,
 * or -1 when it is the kernel's to answer). */
int cr_net_flag_set(struct cr_netstate *ns, int fd, int opt, bool on);
int cr_net_flag_get(const struct cr_netstate *ns, int fd, int opt);

/* tracer/net/udp.c */
/* Make the run's UDP socket (our duplicate dup, inode ino) a member: its
 * source filter attached, then bound to want (or, unbound, to loopback
 * port 0 of domain; or kept where an earlier DNS bind put it). 0, or the
 * bind's -errno; -ENOBUFS when the set is full. */
int cr_net_udp_adopt(struct cr_run *run, int dup, uint64_t ino, int domain,
		     const union cr_sockaddr *want, socklen_t wantlen,
		     bool wildcard);
/* A UDP socket that only talks to the DNS responder hears only it. */
int cr_net_udp_dns_only(struct cr_netstate *ns, int dup, uint64_t ino);
/* Member dst will hear member src_ino (its filter rebuilt if needed);
 * called before a send or connect from src to dst is performed. */
int cr_net_udp_hear(struct cr_netstate *ns, const struct cr_net_ep *dst,
		    uint64_t src_ino);
/* Is dst (loopback) the bound address of a member of protocol proto
 * (IPPROTO_UDP or IPPROTO_UDPLITE: their port tables are apart)? */
bool cr_net_udp_member(const struct cr_netstate *ns,
		       const struct cr_net_ep *dst, int proto);
/* Member ino is now connected to peer (NULL: to nothing). */
void cr_net_udp_connected(struct cr_netstate *ns, uint64_t ino,
			  const struct cr_net_ep *peer);
/* connect(AF_UNSPEC) was performed on member ino's socket dup: its port
 * is taken back at once, or the member forgotten (udp.c). */
void cr_net_udp_disconnected(struct cr_netstate *ns, int dup, uint64_t ino);
bool cr_net_udp_find(const struct cr_netstate *ns, uint64_t ino,
		     struct cr_net_ep *ep, bool *wildcard);
/* The inodes of the members the supervisor holds (at most cap): their
 * queues count against memory even when no task holds them any more. */
/* Does a UDP socket of the run that asked to share its port (SO_REUSEPORT
 * or SO_REUSEADDR, remembered, not applied) hold this one? */
bool cr_net_udp_port_shared(const struct cr_netstate *ns, int family,
			    uint16_t port);
size_t cr_net_udp_inodes(const struct cr_netstate *ns, uint64_t *out,
			 size_t cap);
/* The inodes of the proxy's sockets of every relayed connection (at most
 * cap), and the bytes waiting in its relay pipes (proxy.c): what a slow
 * far end leaves in corral's buffers is the run's, for the memory budget
 * (a host server that never reads held ~270 MiB of corral's relay
 * sockets under memory=64MiB, found by a probing session). */
size_t cr_proxy_inodes(const struct cr_netstate *ns, uint64_t *out,
		       size_t cap, uint64_t *piped);
/* corral's socket that drops a send to a loopback UDP port no socket of
 * the run holds, or (refuse) whose port the kernel answers with ICMP
 * port unreachable; its address in *t, *tl. 0 or -errno. */
int cr_net_udp_sink(struct cr_netstate *ns, int domain, bool refuse,
		    union cr_sockaddr *t, socklen_t *tl);
void cr_net_udp_finish(struct cr_netstate *ns);
/* Let go of the members no task of the run holds any more (a scan of the
 * tasks' descriptor tables), paced by its cost (udp.c). */
void cr_net_udp_collect(struct cr_run *run);

/* tracer/net/iface.c: the host's interfaces and its own addresses */
/* May a run name this interface (0: none) or this source address
 * (family's; IPv4-mapped counts as IPv4)? Loopback and none only. */
bool cr_net_ifindex_ok(int ifindex);
bool cr_net_ifname_ok(const char *name, size_t len);
bool cr_net_src_ok(int family, const uint8_t *addr);
/* Is socket fd bound to no interface, or to loopback? (false when unknown) */
bool cr_net_sock_dev_ok(int fd);
/* Does the host own addr (a local route)? 1, 0, or -1 when unknown. */
int cr_net_host_owned(int family, const uint8_t *addr);

/* tracer/net/abstract.c: names from their leading NUL, with lengths */
/* A fresh inner name for given (bound then by the caller). */
int cr_net_abstract_name(struct cr_netstate *ns, const uint8_t *given,
			 size_t glen, uint8_t *inner, size_t *ilen);
/* Socket ino of the run is bound at inner for the program's given. */
int cr_net_abstract_bound(struct cr_netstate *ns, const uint8_t *given,
			  size_t glen, const uint8_t *inner, size_t ilen,
			  uint64_t ino, int fd);
/* The inner name of a name the run bound; false for any other name. */
bool cr_net_abstract_inner(const struct cr_netstate *ns, const uint8_t *given,
			   size_t glen, uint8_t *inner, size_t *ilen);
/* Is socket ino bound at inner by the run? */
bool cr_net_abstract_ours(const struct cr_netstate *ns, const uint8_t *inner,
			  size_t ilen, uint64_t ino);
/* An address the kernel hands back, rewritten to the program's name. */
bool cr_net_abstract_fix(const struct cr_netstate *ns, union cr_sockaddr *a,
			 socklen_t *len);
void cr_net_abstract_finish(struct cr_netstate *ns);

/* tracer/net/unixname.c */
int cr_net_unix_bind_fd(struct cr_netstate *ns, int pfd);
void cr_net_unix_named(struct cr_netstate *ns, const char *inner,
		       const union cr_sockaddr *given, socklen_t glen,
		       const char *abs, uint64_t ino, int fd);
/* The socket behind fd (ours), named in a table, followed to its end: its
 * entry's id, or 0 when it cannot be followed (the entry is then kept
 * until pushed out). */
uint64_t cr_net_name_follow(struct cr_netstate *ns, int fd);
/* A full table's sweep: of its n entries (`size` bytes each, the id at
 * byte id_off; id 0: never followed, kept), those whose socket is gone
 * are dropped, the rest kept in order; the new count (n when nothing is
 * known gone). Each sweep reads every followed socket: the next waits
 * CR_NET_NAMES_SWEEP_IDLE times its CPU (a table full of live names made
 * every bind a sweep: 22 ms each at 16 384; found by a probing session),
 * and meanwhile a full table forgets its oldest. */
#define CR_NET_NAMES_SWEEP_IDLE 20
size_t cr_net_names_sweep(struct cr_netstate *ns, void *table, size_t n,
			  size_t size, size_t id_off);
/* path (len bytes) is an inner name corral bound: its absolute path. */
bool cr_net_unix_alias(const struct cr_netstate *ns, const char *path,
		       size_t len, char *abs, size_t abslen);
void cr_net_unix_fix(const struct cr_netstate *ns, union cr_sockaddr *a,
		     socklen_t *len);
void cr_net_unix_finish(struct cr_netstate *ns);

/* sendmsg on fd (corral's copy of a unix socket) of a message carrying
 * descriptors, by a helper process whose RLIMIT_NOFILE is the sending
 * task's, at most the run's share of the caller's (rights.c): the kernel's
 * check of the user's descriptors in flight. As sendmsg: -1 and errno. */
ssize_t cr_net_rights_send(struct cr_run *run, int fd, const struct msghdr *msg,
			   int flags, pid_t tid);

#endif
