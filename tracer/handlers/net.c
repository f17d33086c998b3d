/* tracer/handlers/net.c: connect, bind, listen, sendto, sendmsg, sendmmsg,
 * getpeername, recvfrom: every call that names a socket address or reveals
 * one (socket options: sockopt.c; the run's loopback servers: loopback.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "handlers.h"
#include "../fs/fs.h"
#include "../fs/fsops.h"
#include "../net/net.h"
#include "connwait.h"
#include "netshare.h"
#include "../budget/budget.h"

/*
 * Why this is safe against the program it supervises: every address is read
 * once into our own copy, the decision is made on that copy, and the call is
 * performed by the supervisor on a duplicate of the program's socket
 * (pidfd_getfd) with the copy — or with the address of corral's own proxy or
 * DNS responder. A thread rewriting the sockaddr, the msghdr or its iovecs
 * after the read changes nothing: the kernel never reads them again. No
 * handler here answers CONTINUE (the table marks them EMULATED, and the loop
 * refuses CONTINUE for such entries).
 */

#define STREAM_CAP CR_NET_STREAM_PIECE	/* a stream send's piece */
#define MAX_RW ((size_t)0x7ffff000)	/* the kernel's MAX_RW_COUNT */
#define DGRAM_CAP 65536		/* a datagram is all or nothing */
#define UNIX_DGRAM_CAP (8u << 20)	/* past the largest send buffer */
#define CONTROL_CAP 4096
#define MMSG_MAX 64
#define SCM_MAX_FD 253		/* the kernel's bound on fds in one message */

struct cr_verdict cr_net_deny(struct cr_run *run, const struct seccomp_notif *n,
			       const struct cr_syscall_entry *e,
			       const union cr_sockaddr *a, socklen_t alen,
			       const char *layer, const char *why, int err)
{
	char target[160];

	if (a)
		cr_net_addr_text(a, alen, target, sizeof(target));
	cr_deny(run, (pid_t)n->pid, e->name, a ? target : NULL, layer, why);
	return v_err(err);
}

void cr_sock_close(struct cr_sock *s)
{
	/* Maybe the last copy: a TCP socket's close with SO_LINGER waits
	 * for its unsent data (tracer/guard.c). Other kinds never linger,
	 * and skip the guard's two calls (~4 us a socket call here). */
	if (s->dup >= 0 && (s->type == 0 ||
			    (s->type == SOCK_STREAM && (s->domain == AF_INET ||
							s->domain == AF_INET6))))
		cr_guard_close(s->dup);
	else if (s->dup >= 0)
		close(s->dup);
	s->dup = -1;
}

int cr_sock_name_open(struct cr_run *run, const struct seccomp_notif *n,
		      struct cr_sock *s)
{
	if (!run->net)
		return -EACCES;
	return cr_sock_open(run, n, (int)n->data.args[0], s);
}

struct cr_verdict cr_sock_name_reply(const struct seccomp_notif *n,
				     const union cr_sockaddr *a, socklen_t al)
{
	pid_t pid = (pid_t)n->pid;
	int out = (int)al, ulen;
	/* The program's length is read after the address is known, as
	 * move_addr_to_user reads it (an unconnected socket's ENOTCONN
	 * comes first; found by a differential probing session). Then the
	 * length is written before the address, as this kernel's
	 * move_addr_to_user writes them (an unwritable address left the
	 * length as it was; found by a differential probing session). */
	int rc = cr_mem_read(pid, n->data.args[2], &ulen, sizeof(ulen));

	if (rc)
		return v_err(-rc);
	if (ulen < 0)
		return v_err(EINVAL);
	rc = cr_mem_write(pid, n->data.args[2], &out, sizeof(out));

	if (!rc)
		rc = cr_mem_write(pid, n->data.args[1], a,
				  (size_t)ulen < al ? (size_t)ulen : al);
	return rc ? v_err(-rc) : v_val(0);
}

int cr_sock_open(struct cr_run *run, const struct seccomp_notif *n,
		     int fd, struct cr_sock *s)
{
	socklen_t l = sizeof(int);
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->dup = cr_net_task_fd(run, (pid_t)n->pid, fd);
	if (s->dup < 0) {
		int e = s->dup;

		s->dup = -1;
		return e == -ESRCH ? -ESRCH : -EBADF;
	}
	if (fstat(s->dup, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		cr_sock_close(s);
		return -ENOTSOCK;
	}
	s->ino = (uint64_t)st.st_ino;
	if (run->net && (s->rtnl = cr_rtnl_find(run->net, s->ino)) != NULL) {
		s->domain = AF_NETLINK;
		s->type = cr_rtnl_type(s->rtnl);
		s->protocol = NETLINK_ROUTE;
		return 0;
	}
	if (getsockopt(s->dup, SOL_SOCKET, SO_DOMAIN, &s->domain, &l) < 0 ||
	    getsockopt(s->dup, SOL_SOCKET, SO_TYPE, &s->type, &l) < 0 ||
	    getsockopt(s->dup, SOL_SOCKET, SO_PROTOCOL, &s->protocol, &l) < 0) {
		int e = errno;

		cr_sock_close(s);
		return -e;
	}
	return 0;
}

static int read_addr(pid_t pid, uint64_t p, uint64_t len, union cr_sockaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (len > sizeof(a->ss) || len < sizeof(sa_family_t))
		return -EINVAL;
	return cr_mem_read(pid, p, a, (size_t)len);
}

/* A send's address as the kernel's move_addr_to_kernel takes it: up to a
 * sockaddr_storage (longer: EINVAL), and 0 or 1 bytes too, which the
 * protocol then answers for (send_target): a connected TCP or unix
 * stream socket sends, where an earlier build refused EINVAL and sent
 * nothing (found by a differential probing session). */
static int read_send_addr(pid_t pid, uint64_t p, uint64_t len,
			  union cr_sockaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (len > sizeof(a->ss))
		return -EINVAL;
	return len ? cr_mem_read(pid, p, a, (size_t)len) : 0;
}

/* The address of an AF_INET/AF_INET6 sockaddr; -EINVAL if short. */
static int inet_of(const union cr_sockaddr *a, socklen_t len, uint8_t *addr,
		   uint16_t *port)
{
	if (a->sa.sa_family == AF_INET) {
		if (len < sizeof(struct sockaddr_in))
			return -EINVAL;
		memcpy(addr, &a->in4.sin_addr, 4);
		*port = ntohs(a->in4.sin_port);
		return 0;
	}
	/* The kernel takes the RFC 2133 length (no sin6_scope_id, read as
	 * 0: read_addr zeroed what was not read); an earlier build
	 * refused it (found by a differential probing session). */
	if (len < CR_SIN6_LEN_RFC2133)
		return -EINVAL;
	memcpy(addr, &a->in6.sin6_addr, 16);
	*port = ntohs(a->in6.sin6_port);
	return 0;
}

bool cr_net_abstract_or_unnamed(const union cr_sockaddr *a, socklen_t len)
{
	return len <= offsetof(struct sockaddr_un, sun_path) ||
	       a->un.sun_path[0] == '\0';
}

/*
 * The one place a path-named AF_UNIX address is resolved: by the filesystem
 * layer's resolver (as the task would, from its cwd, links followed one
 * step at a time on our own fds and judged at each), refused unless the
 * object is inside the workspace. An earlier build normalised ".." before
 * looking at the disk and refused any link: "link/../s" reached another
 * socket than the kernel's, and a link to a directory of the workspace
 * (git's credential cache under a linked ~/.git-credential-cache) was
 * refused (found by a side-by-side run of git's suite). The kernel is
 * then given /proc/self/fd/N (connect: the socket inode itself) or
 * /proc/self/fd/PARENT/NAME (bind), which names what was checked and
 * cannot be redirected by a rename or a symlink planted afterwards. *hold
 * receives the fd to close after the call.
 */
static int unix_path_resolve(struct cr_run *run, pid_t tid,
			     const union cr_sockaddr *a, socklen_t alen,
			     bool for_bind, char *out, size_t outlen, int *hold,
			     int *refusal)
{
	struct cr_netstate *ns = run->net;
	size_t plen = alen - offsetof(struct sockaddr_un, sun_path);
	size_t wl = strlen(ns->ws_real);
	char path[sizeof(a->un.sun_path) + 1], *name;
	struct cr_fsres res;
	int pfd, fd, rc;

	if (plen > sizeof(a->un.sun_path))
		plen = sizeof(a->un.sun_path);
	plen = strnlen(a->un.sun_path, plen);
	if (!plen)
		return -EINVAL;
	memcpy(path, a->un.sun_path, plen);
	path[plen] = '\0';
	*refusal = EACCES;
	if (!run->fs)
		return -EXDEV;
	/* Resolved as the kernel will: links in the directories followed
	 * (each step judged by the resolver, on fds of our own), ".." taken
	 * after them, and for a connect a link at the name too (bind makes
	 * the name: a link there is the kernel's EADDRINUSE). */
	cr_fsres_init(&res);
	/* bind: "name/" of an existing file is taken (EADDRINUSE below),
	 * not ENOTDIR. */
	rc = cr_fs_resolve(run, tid, AT_FDCWD, path,
			   for_bind ? CR_RES_SLASH_OK : CR_RES_FOLLOW, &res);
	if (rc) {
		bool refused = res.refused;

		cr_fsres_free(&res);
		if (refused) {
			/* Outside every root it looks absent, as any path
			 * there does (a missing /dev/log is ENOENT). */
			*refusal = -rc;
			return -EXDEV;
		}
		return rc;
	}
	/* bind makes the name: where one the program can see exists (a
	 * file, ".", a directory of a read root), the kernel's EEXIST comes
	 * before any permission is asked: EADDRINUSE (was EACCES, recorded,
	 * for "." in the workspace; found by a differential probe). */
	if (for_bind && res.exists) {
		cr_fsres_free(&res);
		return -EADDRINUSE;
	}
	if (res.plen <= wl + 1 || strncmp(res.path, ns->ws_real, wl) ||
	    res.path[wl] != '/') {
		/* A name the program can see but no socket is there: the
		 * kernel's answer comes before any socket is reached, and
		 * nothing is refused (a missing name in a read root, or the
		 * workspace itself, answered EACCES; found by a differential
		 * probe): ENOENT, or for what is there its write permission
		 * (EACCES), then ECONNREFUSED. */
		if (!for_bind && !cr_path_within("/proc", 5, res.path, res.plen) &&
		    (!res.exists || !S_ISSOCK(res.st.st_mode))) {
			int o = res.exists ? cr_fs_opath(&res, res.via_link) : -1;

			rc = !res.exists ? -ENOENT :
			     o >= 0 && syscall(SYS_faccessat2, o, "", W_OK,
					       AT_EACCESS | AT_EMPTY_PATH) < 0 &&
			     errno == EACCES ? -EACCES : -ECONNREFUSED;
			if (o >= 0)
				close(o);
			cr_fsres_free(&res);
			return rc;
		}
		if (!cr_path_within("/proc", 5, res.path, res.plen))
			*refusal = cr_fsrules_refusal(&run->fs->rules,
				cr_fsrules_access(&run->fs->rules, res.path,
						  res.plen));
		cr_fsres_free(&res);
		return -EXDEV;
	}
	/* bind makes a file, never a directory: a trailing slash is the
	 * kernel's ENOENT, or its EADDRINUSE where the name exists. */
	if (for_bind && res.trailing_slash) {
		rc = res.exists ? -EADDRINUSE : -ENOENT;
		cr_fsres_free(&res);
		return rc;
	}
	/* Reached through the link of an O_PATH fd of it (the stand-in's,
	 * fs/resolve.c): the socket corral holds is the one. */
	if (res.via_link && !for_bind && S_ISSOCK(res.st.st_mode)) {
		fd = fcntl(res.linkfd, F_DUPFD_CLOEXEC, 0);
		cr_fsres_free(&res);
		if (fd < 0)
			return -errno;
		snprintf(out, outlen, "/proc/self/fd/%d", fd);
		*hold = fd;
		return 0;
	}
	pfd = fcntl(res.dirfd, F_DUPFD_CLOEXEC, 0);
	if (pfd < 0) {
		rc = -errno;
		cr_fsres_free(&res);
		return rc;
	}
	name = strdup(res.name);
	cr_fsres_free(&res);
	if (!name) {
		close(pfd);
		return -ENOMEM;
	}
	if (for_bind) {
		/* sun_path's 108 bytes may all be the name, no NUL after
		 * it (the kernel terminates its copy): out has room for
		 * one more, which the caller's length leaves out. */
		size_t most = sizeof(a->un.sun_path), got;

		pfd = cr_net_unix_bind_fd(ns, pfd);
		got = (size_t)snprintf(out, outlen, "/proc/self/fd/%d/%s", pfd,
				       name);
		rc = got > most || got >= outlen ? -ENAMETOOLONG : 0;
		/* A name of 90 bytes or more does not fit behind the alias:
		 * bound as "PARENT/NAME" from /proc/self/fd (unix_bind), so
		 * that the kernel's string still tells two such sockets of
		 * one name apart (bound by the bare name, getsockname of one
		 * reported the other's directory, and a connect to that
		 * reached the other; found by a differential probe). Past
		 * 103 bytes only the bare name fits, from the directory. */
		if (rc) {
			got = (size_t)snprintf(out, outlen, "%d/%s", pfd, name);
			if (got > most || got >= outlen)
				got = (size_t)snprintf(out, outlen, "%s", name);
			if (got <= most && got < outlen)
				rc = 0;
		}
		free(name);
		if (rc) {
			close(pfd);
			return rc;
		}
		*hold = pfd;
		return 0;
	}
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	free(name);
	close(pfd);
	if (fd < 0)
		return errno == ELOOP ? -ECONNREFUSED : -errno;
	{
		struct stat st;

		if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
			close(fd);
			/* A symlink is never followed: it could lead out. */
			return S_ISLNK(st.st_mode) ? -EXDEV : -ECONNREFUSED;
		}
	}
	snprintf(out, outlen, "/proc/self/fd/%d", fd);
	*hold = fd;
	return 0;
}

/* Is the abstract name (inner, its leading NUL included) bound now? Asked
 * by binding a socket of the same type to it, let go at once. */
static bool abstract_held(int type, const uint8_t *inner, size_t ilen)
{
	union cr_sockaddr a;
	int fd, rc, err;

	memset(&a, 0, sizeof(a));
	a.un.sun_family = AF_UNIX;
	memcpy(a.un.sun_path, inner, ilen);
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	rc = bind(fd, &a.sa, (socklen_t)(offsetof(struct sockaddr_un,
						   sun_path) + ilen));
	err = errno;
	close(fd);
	return rc < 0 && err == EADDRINUSE;
}

/* A unix address for the kernel naming what unix_path_resolve checked. */
static struct cr_verdict unix_target(struct cr_run *run,
				     const struct seccomp_notif *n,
				     const struct cr_syscall_entry *e,
				     const struct cr_sock *s,
				     const union cr_sockaddr *a, socklen_t alen,
				     bool for_bind, union cr_sockaddr *out,
				     socklen_t *outlen, int *hold, bool *ok)
{
	size_t off = offsetof(struct sockaddr_un, sun_path);
	union cr_sockaddr alias;
	int rc, refusal = EACCES;

	*ok = false;
	memset(&alias, 0, sizeof(alias));
	/* unix_validate_addr: longer than a sockaddr_un is EINVAL, before
	 * any name is looked at (was ENOENT). */
	if (alen > sizeof(struct sockaddr_un))
		return v_err(EINVAL);
	if (cr_net_abstract_or_unnamed(a, alen)) {
		uint8_t inner[SUN_LEN_MAX];
		size_t glen = alen - off < SUN_LEN_MAX ? alen - off : SUN_LEN_MAX,
		       ilen = 0;

		if (alen <= off && !for_bind)
			return v_err(EINVAL);
		/* A named datagram socket takes datagrams from anyone. */
		if (s->type == SOCK_DGRAM)
			return cr_net_deny(run, n, e, a, alen, "net",
				"abstract unix datagram sockets take datagrams from anyone on the host",
				EACCES);
		memset(out, 0, sizeof(*out));
		out->un.sun_family = AF_UNIX;
		if (alen <= off) {
			/* autobind: the kernel's fresh name, recorded after */
			*outlen = (socklen_t)alen;
		} else if (for_bind) {
			union cr_sockaddr own;
			socklen_t ol = sizeof(own);

			/* A socket with a name already: unix_bind_abstract's
			 * EINVAL comes before the name is looked at (was
			 * EADDRINUSE for its own name again; found by a
			 * differential probing session). */
			if (getsockname(s->dup, &own.sa, &ol) == 0 && ol > off)
				return v_err(EINVAL);
			/* A name a live socket of the run holds is taken:
			 * the kernel's EADDRINUSE (each bind got an inner
			 * name of its own, and the newest took every
			 * connection: an abstract name used as a single-
			 * instance lock held nothing; found by a
			 * differential probing session). */
			if (cr_net_abstract_inner(run->net,
						  (const uint8_t *)a->un.sun_path,
						  glen, inner, &ilen) &&
			    abstract_held(s->type, inner, ilen))
				return v_err(EADDRINUSE);
			rc = cr_net_abstract_name(run->net,
						  (const uint8_t *)a->un.sun_path,
						  glen, inner, &ilen);
			if (rc)
				return v_err(-rc);
		} else if (!cr_net_abstract_inner(run->net,
						  (const uint8_t *)a->un.sun_path,
						  glen, inner, &ilen)) {
			return cr_net_deny(run, n, e, a, alen, "net",
				"abstract unix names reach only the run's own sockets",
				ECONNREFUSED);
		}
		if (ilen) {
			memcpy(out->un.sun_path, inner, ilen);
			*outlen = (socklen_t)(off + ilen);
		}
		*ok = true;
		return v_val(0);
	}
	if (!for_bind && alen > off) {
		size_t pl = strnlen(a->un.sun_path, alen - off < SUN_LEN_MAX ?
					       alen - off : SUN_LEN_MAX);

		if (cr_net_unix_alias(run->net, a->un.sun_path, pl,
				      alias.un.sun_path,
				      sizeof(alias.un.sun_path))) {
			alias.un.sun_family = AF_UNIX;
			a = &alias;
			alen = (socklen_t)(off + strlen(a->un.sun_path) + 1);
		}
	}
	memset(out, 0, sizeof(*out));
	out->un.sun_family = AF_UNIX;
	/* glibc asks the host's name-service cache daemon first in every
	 * getpwnam/getgrnam: refused, as any host socket, but answered as a
	 * missing daemon and not listed, or every shell run would carry it. */
	if (!for_bind && alen > offsetof(struct sockaddr_un, sun_path) &&
	    (!strncmp(a->un.sun_path, "/var/run/nscd/socket", sizeof(a->un.sun_path)) ||
	     !strncmp(a->un.sun_path, "/run/nscd/socket", sizeof(a->un.sun_path))))
		return v_err(ENOENT);
	rc = unix_path_resolve(run, (pid_t)n->pid, a, alen, for_bind,
			       out->un.sun_path, sizeof(*out) - off, hold,
			       &refusal);
	if (rc == -EXDEV)
		return cr_net_deny(run, n, e, a, alen, "fs",
			    "unix sockets are reachable only inside the workspace",
			    refusal);
	if (rc < 0)
		return v_err(-rc);
	/* With its NUL, unless the name fills sun_path (a 108-byte one
	 * is the kernel's as it is: was ENAMETOOLONG, found by a
	 * differential probing session). */
	rc = (int)strlen(out->un.sun_path) + 1;
	if ((size_t)rc > sizeof(out->un.sun_path))
		rc = (int)sizeof(out->un.sun_path);
	*outlen = (socklen_t)(off + (size_t)rc);
	*ok = true;
	return v_val(0);
}

/* After a bind to an abstract name (or an autobind): the kernel's name
 * and the program's, remembered. Unrecorded, the socket is unbound in
 * effect: its listen is refused, and nothing connects to it. */
static struct cr_verdict abstract_bound(struct cr_run *run,
					const struct cr_sock *s,
					const union cr_sockaddr *a,
					socklen_t alen)
{
	size_t off = offsetof(struct sockaddr_un, sun_path);
	union cr_sockaddr k;
	socklen_t kl = sizeof(k);

	memset(&k, 0, sizeof(k));
	if (getsockname(s->dup, &k.sa, &kl) < 0 || kl <= off + 1 ||
	    k.un.sun_path[0])
		return v_err(ENOBUFS);
	if (alen <= off)	/* autobind: the kernel's name is the program's */
		a = &k, alen = kl;
	return cr_net_abstract_bound(run->net, (const uint8_t *)a->un.sun_path,
				     alen - off, (const uint8_t *)k.un.sun_path,
				     kl - off, s->ino, s->dup) ? v_err(ENOBUFS) :
							  v_val(0);
}

/* The listener a unix stream socket just connected to: listened through
 * corral (its credentials, taken at listen, are the supervisor's)? */
static bool listener_is_ours(int fd)
{
	struct ucred c;
	socklen_t l = sizeof(c);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &l) == 0 &&
	       c.pid == getpid();
}

static int family_idx(int family)
{
	return family == AF_INET6 ? 1 : 0;
}

static socklen_t inet_len(int family)
{
	return family == AF_INET6 ? sizeof(struct sockaddr_in6) :
				    sizeof(struct sockaddr_in);
}

/* The decision for an internet destination; NULL when allowed, else why. */
static const char *inet_refusal(struct cr_run *run, int family,
				const uint8_t *addr, uint16_t port)
{
	return cr_net_refusal(run->net, family, addr, port);
}

/* A backstop behind the refused options (cr_h_setsockopt): an internet
 * socket bound to an interface other than loopback is not connected or
 * sent on by corral. True with *v the refusal. */
static bool bound_way_out(struct cr_run *run, const struct seccomp_notif *n,
			  const struct cr_syscall_entry *e,
			  const struct cr_sock *s, struct cr_verdict *v)
{
	if ((s->domain != AF_INET && s->domain != AF_INET6) ||
	    cr_net_sock_dev_ok(s->dup))
		return false;
	*v = cr_net_deny(run, n, e, NULL, 0, "net",
			 "the socket is bound to an interface other than loopback",
			 EPERM);
	return true;
}

/*
 * A refused TCP connect, answered ECONNREFUSED at once. The kernel answers
 * a non-blocking connect to a closed port EINPROGRESS, then POLLERR and
 * SO_ERROR ECONNREFUSED: code that reads the outcome from SO_ERROR only
 * took corral's socket for a connected one. So the program's socket is
 * pointed at a loopback port of corral's, bound and never listening, and
 * the kernel answers as for any closed port. Any other outcome: the
 * refusal as it was.
 */
struct cr_verdict cr_net_refused_later(struct cr_netstate *ns,
				      const struct cr_sock *s,
				      struct cr_verdict v)
{
	int i = s->domain == AF_INET6, fl, one = 1;
	socklen_t l = i ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	if (v.kind != CR_V_ERRNO || v.error != ECONNREFUSED ||
	    (s->domain != AF_INET && s->domain != AF_INET6) ||
	    (fl = fcntl(s->dup, F_GETFL)) < 0 || !(fl & O_NONBLOCK))
		return v;
	if (ns->tref[i] < 0) {
		union cr_sockaddr a;
		int fd = socket(s->domain, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return v;
		memset(&a, 0, sizeof(a));
		a.sa.sa_family = (sa_family_t)s->domain;
		if (i)
			a.in6.sin6_addr = in6addr_loopback;
		else
			a.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if ((i && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				     sizeof(one)) < 0) ||
		    bind(fd, &a.sa, l) < 0 || getsockname(fd, &a.sa, &l) < 0) {
			close(fd);
			return v;
		}
		ns->tref[i] = fd;
		ns->traddr[i] = a;
	}
	/* The kernel's answer on this socket's own state: EINPROGRESS for a
	 * fresh one; after a failure already seen, ECONNABORTED, as a new
	 * connect would get natively whatever it named. */
	if (connect(s->dup, &ns->traddr[i].sa, l) < 0 && errno != ECONNREFUSED)
		return v_err(errno);
	return v;
}

/* A TCP socket that has never connected nor listened (state CLOSE). */
static bool fresh_tcp(int fd)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) == 0 &&
	       ti.tcpi_state == TCP_CLOSE;
}

static struct cr_verdict connect_tcp(struct cr_run *run,
				     const struct seccomp_notif *n,
				     const struct cr_syscall_entry *e,
				     struct cr_sock *s, const union cr_sockaddr *a,
				     socklen_t alen, const uint8_t *addr,
				     uint16_t port)
{
	struct cr_netstate *ns = run->net;
	const char *why;
	int idx = family_idx(a->sa.sa_family), rc, err, up = -1;
	uint64_t lim = run->cfg->limits.v[CR_LIM_NET_CONNECTIONS];
	bool by_name;

	/* A socket already connected never comes here: cr_h_connect asks
	 * the kernel with the peer it has, before any address is judged. */
	/* An IPv4-mapped destination from an IPV6_V6ONLY socket: the kernel
	 * has no route for it, whatever corral would send it to. */
	if (s->domain == AF_INET6 && a->sa.sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&a->in6.sin6_addr)) {
		int only = 0;
		socklen_t ol = sizeof(only);

		if (getsockopt(s->dup, IPPROTO_IPV6, IPV6_V6ONLY, &only,
			       &ol) == 0 && only)
			return v_err(ENETUNREACH);
	}
	/* Loopback: the run's own listeners, and nothing else that no rule
	 * opens (a rule never sends the run's own port through the proxy,
	 * whose connection its accept would drop). */
	{
		struct cr_verdict v;

		/* Loopback is closed: only a rule naming it exactly opens
		 * it (and the host's routes need not be asked). */
		if (cr_net_connect_local(run, n, e, s, a, alen,
					 cr_netrules_allow_exact(ns->rules,
								 ns->nrules,
								 a->sa.sa_family,
								 addr, port), &v))
			return v;
	}
	/* corral's own refusals (not an error the kernel gave on this
	 * socket, which passes as it is) answer as a closed port does. */
	why = inet_refusal(run, a->sa.sa_family, addr, port);
	if (why)
		return cr_net_refused_later(ns, s,
			cr_net_deny(run, n, e, a, alen, "net", why,
				    ECONNREFUSED));
	if (ns->lfd[idx] < 0)
		return cr_net_refused_later(ns, s,
			cr_net_deny(run, n, e, a, alen, "net",
				    "the proxy has no listener for this address family",
				    ECONNREFUSED));
	if (run->usage.net_connections >= lim) {
		char b[32];

		cr_limit_format(CR_LIM_NET_CONNECTIONS, lim, b, sizeof(b));
		cr_net_deny(run, n, e, a, alen, "net",
		     "the connection budget is spent", ECONNREFUSED);
		cr_run_end(run, CR_ST_LIMIT_EXCEEDED, "net-connections",
			   "the program opened more than %s connections", b);
		return v_err(ECONNREFUSED);
	}
	if (!cr_proxy_room(run))
		return v_err(EAGAIN);
	by_name = !cr_netrules_allow_addr(ns->rules, ns->nrules,
					  a->sa.sa_family, addr, port);
	/* Allowed by address: the upstream first, so a port where nothing
	 * listens answers ECONNREFUSED as natively (a program waiting for
	 * its server to come up took the proxy's accept for it, then got a
	 * reset). Not for a name: its TLS server name is checked before
	 * anything is sent there. The peer's refusal is not corral's: not
	 * recorded, no connection counted. */
	/* Only for a socket that can still connect: a listening one (whose
	 * connect is EISCONN, as the kernel says below) had corral make a
	 * real connection per call, uncounted (5000 under a budget of 1,
	 * found by a probing session). */
	if (!by_name && fresh_tcp(s->dup)) {
		up = cr_proxy_preconnect(run, a, alen);
		if (up == -ECONNREFUSED)
			return cr_net_refused_later(ns, s, v_err(ECONNREFUSED));
		if (up == -ENETUNREACH || up == -EHOSTUNREACH)
			return v_err(-up);
		if (up < 0)
			up = -1;
		else	/* made: counted, whatever happens next */
			run->usage.net_connections++;
	}
	/* Local and immediate: the listener's backlog is far larger than
	 * what may be pending, so even a blocking socket does not wait. */
	rc = connect(s->dup, &ns->laddr[idx].sa, inet_len(a->sa.sa_family));
	err = errno;
	if (rc < 0 && err != EINPROGRESS) {
		if (up >= 0)
			close(up);
		return v_err(err);
	}
	if (cr_proxy_expect(run, s->dup, a, alen, s->ino, by_name, up) < 0) {
		if (up >= 0)
			close(up);
		return v_err(ECONNREFUSED);	/* the proxy will drop it */
	}
	if (up < 0)
		run->usage.net_connections++;
	cr_net_peer_set(ns, s->ino, a, alen, true);
	return rc < 0 ? v_err(EINPROGRESS) : v_val(0);
}

/* Bind an unbound datagram socket to loopback before it talks to the DNS
 * responder, so the kernel never autobinds it to every interface (where
 * anyone could send it datagrams). */
static void bind_loopback(struct cr_netstate *ns, int dup, uint64_t ino,
			  int family)
{
	union cr_sockaddr l = { 0 };
	socklen_t ll = sizeof(l);

	if (getsockname(dup, &l.sa, &ll) == 0 &&
	    ((family == AF_INET && l.in4.sin_port) ||
	     (family == AF_INET6 && l.in6.sin6_port)))
		return;
	/* Heard only from the responder (udp.c), filtered before it has a
	 * port; without a filter, no port. */
	if (cr_net_udp_dns_only(ns, dup, ino) == 0)
		bind(dup, &l.sa, cr_net_loopback(family, &l));
}

/* A failure leaves the socket unknown to the responder, which then ignores
 * it: fail closed (the program's lookup times out). */
static void dns_register(struct cr_run *run, const struct cr_sock *s)
{
	cr_dns_client(run->net, s->dup, s->ino, s->type == SOCK_STREAM);
}

/* A unix stream connect waits while the listener's backlog is full, and
 * the listener is the program's own: performed non-blocking, so the loop
 * never waits on it. The flag lives on the shared open file, so it is set
 * only around the call; a blocking program socket's EAGAIN is waited out
 * off the loop (unix_wait_start). */
static struct cr_verdict unix_connect(int dup, const union cr_sockaddr *t,
				      socklen_t tl)
{
	int fl = fcntl(dup, F_GETFL), rc, err;

	if (fl < 0)
		return v_err(errno);
	if (!(fl & O_NONBLOCK) && fcntl(dup, F_SETFL, fl | O_NONBLOCK) < 0)
		return v_err(errno);
	rc = connect(dup, &t->sa, tl);
	err = errno;
	if (!(fl & O_NONBLOCK))
		fcntl(dup, F_SETFL, fl);
	return rc < 0 ? v_err(err) : v_val(rc);
}

/* connect and bind: the address (read once) and our duplicate of the
 * socket, taken only while the call is still waiting (0 or -errno). */
static int addr_call_open(struct cr_run *run, const struct seccomp_notif *n,
			  union cr_sockaddr *a, struct cr_sock *s,
			  bool connect_order)
{
	/* The kernel's order: the descriptor; for bind, a socket; the
	 * address; for connect, a socket only then (__sys_connect reads
	 * the address before it asks). corral read the address first:
	 * EINVAL or EFAULT for a closed descriptor (found by a
	 * differential probing session). */
	int rc = cr_sock_open(run, n, (int)n->data.args[0], s), ra;

	if (rc && (rc != -ENOTSOCK || !connect_order))
		return rc;
	/* addrlen is an int to the kernel: its upper half is not read.
	 * Not a socket: only move_addr_to_kernel's checks come first. */
	ra = rc ? read_send_addr((pid_t)n->pid, n->data.args[1],
				 (uint32_t)n->data.args[2], a) :
		  read_addr((pid_t)n->pid, n->data.args[1],
			    (uint32_t)n->data.args[2], a);
	if (ra || rc) {
		cr_sock_close(s);
		return ra ? ra : rc;
	}
	if (!cr_notif_valid(run, n->id)) {
		cr_sock_close(s);
		return -EINTR;
	}
	/* Bound or connected, it can hold queues: followed (budget/sockmem.c),
	 * unix ones too (a blocked poll() keeps a stream connection and
	 * what waits in it after its descriptors are closed). */
	if ((s->domain == AF_INET || s->domain == AF_INET6 ||
	     s->domain == AF_UNIX) &&
	    (rc = cr_budget_on_socket_used(run, s->ino)) < 0) {
		cr_sock_close(s);
		return rc;
	}
	return 0;
}

static struct cr_verdict addr_call_done(struct cr_sock *s, int hold,
					struct cr_verdict v)
{
	if (hold >= 0)
		close(hold);
	cr_sock_close(s);
	return v;
}

/* One unix connect, its name judged as it is now: the kernel looks the
 * name up again after each wait for room (unix_stream_connect's
 * restart), so a name swapped meanwhile is judged again, never connected
 * on the strength of an earlier look. */
static struct cr_verdict unix_connect_try(struct cr_run *run,
					  const struct seccomp_notif *n,
					  const struct cr_syscall_entry *e,
					  struct cr_sock *s,
					  const union cr_sockaddr *a,
					  socklen_t alen)
{
	struct cr_netstate *ns = run->net;
	union cr_sockaddr t;
	socklen_t tl = 0;
	struct cr_verdict v;
	int hold = -1;
	bool ok;

	v = unix_target(run, n, e, s, a, alen, false, &t, &tl, &hold, &ok);
	/* A stream client is held until accepted (unixhold.c): with no
	 * room, refused as a full backlog is. */
	if (ok && s->type != SOCK_DGRAM && !cr_unix_hold_room(ns)) {
		ok = false;
		v = v_err(EAGAIN);
	}
	if (ok)
		v = unix_connect(s->dup, &t, tl);
	if (ok && v.kind == CR_V_VALUE && s->type != SOCK_DGRAM &&
	    cr_unix_hold(ns, s->dup, s->ino)) {
		shutdown(s->dup, SHUT_RDWR);
		v = v_err(ENOMEM);
	}
	if (ok && v.kind == CR_V_VALUE && cr_net_abstract_or_unnamed(a, alen) &&
	    !listener_is_ours(s->dup)) {
		/* The run's name, re-bound by a stranger after the run's
		 * socket went: nothing may pass. */
		shutdown(s->dup, SHUT_RDWR);
		v = cr_net_deny(run, n, e, a, alen, "net",
				"the abstract name is bound outside the run now",
				ECONNREFUSED);
	}
	if (hold >= 0)
		close(hold);
	return v;
}

/*
 * A blocking unix stream or seqpacket connect whose listener's backlog is
 * full waits for room, as the kernel lets it (unix_wait_for_peer), its
 * caller held and the loop free: tried again after 1, 2, 4 ... 32 ms,
 * until it connects, fails otherwise, or its SO_SNDTIMEO runs out
 * (EAGAIN, the kernel's answer then). An earlier build answered EAGAIN
 * at once: of 20 clients of a listen(2) server that accepted half a
 * second later, 17 failed, where natively all connect (found by a
 * differential probing session). The tries are the run's CPU.
 */
static struct cr_verdict unix_again(struct cr_run *run, uint64_t id,
				    pid_t tid, int tfd, void *arg, bool *again)
{
	struct cr_connect_wait *uw = arg;
	uint64_t t0 = cr_thread_cpu_ns();
	struct cr_verdict v;

	(void)id;
	(void)tid;
	cr_guard_arm(CR_GUARD_MS);
	v = unix_connect_try(run, &uw->n, uw->e, &uw->s, &uw->a, uw->alen);
	if (v.kind == CR_V_ERRNO && v.error == EAGAIN)
		*again = cr_connect_wait_again(uw, tfd);
	if (cr_guard_disarm() && v.kind == CR_V_ERRNO && v.error == EINTR)
		v = v_err(EAGAIN);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	return v;
}

/* Start the wait for a blocking caller: *v becomes CR_V_SENT; otherwise
 * (a non-blocking socket, or no memory) *v stays EAGAIN. */
static void unix_wait_start(struct cr_run *run, const struct seccomp_notif *n,
			    const struct cr_syscall_entry *e,
			    const struct cr_sock *s, const union cr_sockaddr *a,
			    socklen_t alen, struct cr_verdict *v)
{
	struct timeval tv = { 0, 0 };
	socklen_t tvl = sizeof(tv);
	int fl = fcntl(s->dup, F_GETFL);
	uint64_t until = 0;

	if (fl < 0 || (fl & O_NONBLOCK))
		return;
	if (getsockopt(s->dup, SOL_SOCKET, SO_SNDTIMEO, &tv, &tvl) == 0 &&
	    (tv.tv_sec || tv.tv_usec))
		until = cr_now_ns() + (uint64_t)tv.tv_sec * 1000000000u +
			(uint64_t)tv.tv_usec * 1000u;
	cr_connect_wait_start(run, n, e, s, a, alen, false, until, unix_again,
			      v);
}

/* An address of a family not the socket's: the kernel's answer by the
 * socket's protocol, before anything else and not a refusal of corral's
 * (an earlier build recorded a denial, EACCES; found by a probing
 * session). Internet sockets: EINVAL when shorter than their own address,
 * else EAFNOSUPPORT; unix and netlink sockets: EINVAL. 0 for the socket's
 * own family, AF_UNSPEC and an IPv4 address to an IPv6 socket (the
 * callers' own cases). */
static int foreign_family(const struct cr_sock *s, const union cr_sockaddr *a,
			  socklen_t alen);

/* AF_UNSPEC where the kernel takes it for AF_INET (inet_bind's
 * "compatibility games" for a wildcard, udp_sendmsg for a destination):
 * our copy becomes AF_INET and is judged as one. 0 (maybe rewritten), or
 * the kernel's errno for an AF_UNSPEC it refuses; other families are left
 * to foreign_family. An IPv6 socket's send is left as it was. */
static int unspec_as_inet(const struct cr_sock *s, union cr_sockaddr *a,
			  socklen_t alen, bool bind)
{
	if (a->sa.sa_family != AF_UNSPEC)
		return 0;
	switch (s->domain) {
	case AF_INET:
		if (alen < sizeof(struct sockaddr_in))
			return EINVAL;
		if (bind && a->in4.sin_addr.s_addr != htonl(INADDR_ANY))
			return EAFNOSUPPORT;
		a->sa.sa_family = AF_INET;
		return 0;
	case AF_INET6:
		/* A send: udpv6_sendmsg drops the address (send_target). */
		if (!bind)
			return 0;
		return alen < CR_SIN6_LEN_RFC2133 ? EINVAL : EAFNOSUPPORT;
	case AF_UNIX:
		return EINVAL;
	default:
		return 0;
	}
}

/* Whether the socket has a local port (bound, or autobound by a send). */
static bool has_port(int fd)
{
	union cr_sockaddr l;
	socklen_t ll = sizeof(l);

	memset(&l, 0, sizeof(l));
	return getsockname(fd, &l.sa, &ll) == 0 &&
	       (l.sa.sa_family == AF_INET6 ? l.in6.sin6_port :
		l.sa.sa_family == AF_INET ? l.in4.sin_port : 0) != 0;
}

/*
 * An IPv4 address given to an IPv6 socket. UDP (and UDP-Lite) hand it to
 * the IPv4 code (udpv6_sendmsg's do_udp_sendmsg, ip6_datagram_connect's
 * __ip4_datagram_connect), which reaches the same place as its v4-mapped
 * form: our copy is rewritten so and judged as one (an earlier build
 * refused it EAFNOSUPPORT where natively the datagram arrives; found by
 * a probing session). TCP refuses it (tcp_v6_connect). 0, or the
 * kernel's errno; other sockets and families are left as they are.
 */
static int v4_on_v6(const struct cr_sock *s, union cr_sockaddr *a,
		    socklen_t *alen, bool connect)
{
	struct sockaddr_in in4;
	int only = 0;
	socklen_t ol = sizeof(only);

	if (s->domain != AF_INET6 || a->sa.sa_family != AF_INET)
		return 0;
	if (s->type == SOCK_STREAM)
		return *alen < CR_SIN6_LEN_RFC2133 ? EINVAL : EAFNOSUPPORT;
	if (!cr_net_udp_proto(s))
		return 0;
	/* The kernel asks this before the length. Only of a socket without
	 * a port, whose flag is the program's: corral's own bind to [::1]
	 * (a send to its DNS responder, a wildcard bound as loopback) sets
	 * it, where natively the socket is dual-stack (a connect after such
	 * a send answered EAFNOSUPPORT; found by a probing session). A bound
	 * one goes on as its mapped form does. */
	if (!has_port(s->dup) &&
	    getsockopt(s->dup, IPPROTO_IPV6, IPV6_V6ONLY, &only, &ol) == 0 &&
	    only)
		return connect ? EAFNOSUPPORT : ENETUNREACH;
	if (*alen < sizeof(struct sockaddr_in))
		return EINVAL;
	memcpy(&in4, &a->in4, sizeof(in4));
	memset(&a->in6, 0, sizeof(a->in6));
	a->in6.sin6_family = AF_INET6;
	a->in6.sin6_port = in4.sin_port;
	a->in6.sin6_addr.s6_addr[10] = 0xff;
	a->in6.sin6_addr.s6_addr[11] = 0xff;
	memcpy(&a->in6.sin6_addr.s6_addr[12], &in4.sin_addr, 4);
	*alen = sizeof(a->in6);
	return 0;
}

static int foreign_family(const struct cr_sock *s, const union cr_sockaddr *a,
			  socklen_t alen)
{
	int f = a->sa.sa_family;

	if (f == s->domain || f == AF_UNSPEC)
		return 0;
	switch (s->domain) {
	case AF_INET:
		return alen < sizeof(struct sockaddr_in) ? EINVAL : EAFNOSUPPORT;
	case AF_INET6:
		if (f == AF_INET)
			return 0;
		return alen < CR_SIN6_LEN_RFC2133 ? EINVAL : EAFNOSUPPORT;
	case AF_UNIX:
	case AF_NETLINK:
		return EINVAL;
	default:
		return 0;
	}
}

struct cr_verdict cr_h_connect(struct cr_run *run,
			       const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n)
{
	struct cr_netstate *ns = run->net;
	union cr_sockaddr a, t;
	socklen_t alen = (socklen_t)n->data.args[2], tl = 0;
	struct cr_sock s;
	struct cr_verdict v;
	uint8_t addr[16];
	uint16_t port;
	int rc, hold = -1;

	if (!ns)
		return v_err(EACCES);
	rc = addr_call_open(run, n, &a, &s, true);
	if (rc)
		return v_err(-rc);
	if (s.rtnl)
		return addr_call_done(&s, -1,
				      v_neg(cr_rtnl_connect(run, s.rtnl, &a, alen)));
	/* A listening TCP socket: __inet_stream_connect answers EISCONN
	 * before the protocol looks at the address, its family included
	 * (corral judged the address first: ECONNREFUSED, recorded; found
	 * by a differential probing session). */
	if (a.sa.sa_family != AF_UNSPEC && s.type == SOCK_STREAM &&
	    (s.domain == AF_INET || s.domain == AF_INET6)) {
		int on = 0;
		socklen_t ol = sizeof(on);

		union cr_sockaddr peer;
		socklen_t pl = sizeof(peer);

		if (getsockopt(s.dup, SOL_SOCKET, SO_ACCEPTCONN, &on, &ol) == 0 &&
		    on)
			return addr_call_done(&s, hold, v_err(EISCONN));
		/* Connected (or a non-blocking connect that completed: the
		 * program asking again after EINPROGRESS): the kernel
		 * answers 0 the first time, EISCONN after, without counting
		 * a new connection or looking at the new address, whatever
		 * its family (corral answered EINVAL or
		 * EAFNOSUPPORT for another family's; found by a differential
		 * probing session). Asked of the kernel with the peer it
		 * has, as connect_tcp does: a connect there names nothing. */
		if (getpeername(s.dup, &peer.sa, &pl) == 0) {
			cr_guard_arm(CR_GUARD_MS);
			v = v_rc(connect(s.dup, &peer.sa, pl));
			if (cr_guard_disarm() && v.kind == CR_V_ERRNO &&
			    v.error == EINTR)
				v = v_err(ETIMEDOUT);
			return addr_call_done(&s, hold, v);
		}
	}
	if ((rc = foreign_family(&s, &a, alen)) != 0 ||
	    (rc = v4_on_v6(&s, &a, &alen, true)) != 0)
		return addr_call_done(&s, hold, v_err(rc));
	/* Every connect below is on the program's shared open file, which
	 * the program can make block (tracer/guard.c): bounded. */
	cr_guard_arm(CR_GUARD_MS);
	switch (a.sa.sa_family) {
	case AF_UNSPEC:	/* dissolve an association: names nothing */
		v = v_rc(connect(s.dup, &a.sa, alen));
		if (v.kind == CR_V_VALUE) {
			cr_net_udp_disconnected(ns, s.dup, s.ino);
			/* Its port may be free now: answers no longer go
			 * there; and it has no peer to name. */
			cr_dns_client_drop(ns, s.ino);
			cr_net_peer_drop(ns, s.ino);
		}
		break;
	case AF_INET:
	case AF_INET6:
		if (s.domain != a.sa.sa_family) {
			v = v_err(s.domain == AF_INET6 || s.domain == AF_INET ?
				  EAFNOSUPPORT : EINVAL);
			break;
		}
		if (inet_of(&a, alen, addr, &port)) {
			v = v_err(EINVAL);
			break;
		}
		if (bound_way_out(run, n, e, &s, &v))
			break;
		/* Only plain TCP is proxied, only UDP is DNS, and UDP(-Lite)
		 * goes to the run's own sockets: an ICMP "ping" socket or
		 * SCTP names a port too. */
		if (s.type == SOCK_DGRAM && !(s.protocol == IPPROTO_UDP && port == 53)) {
			struct cr_net_ep dst;

			rc = cr_net_udp_local(run, n, e, &s, &a, alen, false, &t, &tl, &v);
			if (rc == 2) {
				/* To a port no socket of the run holds: the
				 * denial is recorded, the kernel's answer
				 * given (cr_net_udp_sink); getpeername names
				 * the port the program asked for. */
				v = v_rc(connect(s.dup, &t.sa, tl));
				if (v.kind == CR_V_VALUE) {
					cr_net_udp_connected(ns, s.ino, NULL);
					cr_net_peer_set(ns, s.ino, &a, alen, true);
				}
			} else if (rc > 0) {
				v = v_rc(connect(s.dup, &t.sa, tl));
				if (v.kind == CR_V_VALUE && cr_net_ep_of(&t, tl, &dst)) {
					cr_net_udp_connected(ns, s.ino, &dst);
					cr_net_peer_drop(ns, s.ino);
				}
			}
			if (rc)
				break;
		}
		if ((s.type == SOCK_STREAM && s.protocol != IPPROTO_TCP) ||
		    (s.type == SOCK_DGRAM && s.protocol != IPPROTO_UDP)) {
			v = cr_net_deny(run, n, e, &a, alen, "net",
				 "only TCP and DNS over UDP are relayed", EACCES);
			break;
		}
		if (s.type == SOCK_STREAM && port == 53) {
			/* DNS over TCP: to corral's responder, like UDP. */
			int idx = family_idx(a.sa.sa_family);

			if (ns->tfd[idx] < 0) {
				v = v_err(ECONNREFUSED);
				break;
			}
			v = v_rc(connect(s.dup, &ns->taddr[idx].sa,
					 inet_len(a.sa.sa_family)));
			if (v.kind == CR_V_VALUE ||
			    (v.kind == CR_V_ERRNO && v.error == EINPROGRESS)) {
				dns_register(run, &s);
				cr_net_peer_set(ns, s.ino, &a, alen, true);
			}
		} else if (s.type == SOCK_STREAM) {
			v = connect_tcp(run, n, e, &s, &a, alen, addr, port);
		} else if (s.type == SOCK_DGRAM && port == 53) {
			int idx = family_idx(a.sa.sa_family);

			if (ns->dfd[idx] < 0) {
				v = v_err(ECONNREFUSED);
				break;
			}
			bind_loopback(ns, s.dup, s.ino, a.sa.sa_family);
			v = v_rc(connect(s.dup, &ns->daddr[idx].sa,
					 inet_len(a.sa.sa_family)));
			if (v.kind == CR_V_VALUE) {
				dns_register(run, &s);
				cr_net_peer_set(ns, s.ino, &a, alen, true);
			}
		} else {
			v = cr_net_deny(run, n, e, &a, alen, "net",
				 s.type == SOCK_DGRAM ?
				 "datagrams go only to the DNS responder (port 53)" :
				 "only TCP and DNS are relayed", ECONNREFUSED);
		}
		break;
	case AF_UNIX:
		v = unix_connect_try(run, n, e, &s, &a, alen);
		if (v.kind == CR_V_ERRNO && v.error == EAGAIN &&
		    s.type != SOCK_DGRAM)
			unix_wait_start(run, n, e, &s, &a, alen, &v);
		break;
	case AF_NETLINK:
		/* Netlink reaches the kernel (the kernel-surface layer decides
		 * which netlink sockets may exist); a connect only sets the
		 * default destination, and only the kernel (port 0) is
		 * allowed. */
		if (alen >= sizeof(struct sockaddr_nl) &&
		    ((const struct sockaddr_nl *)&a)->nl_pid != 0)
			v = cr_net_deny(run, n, e, &a, alen, "net",
				 "netlink messages go only to the kernel", EACCES);
		else
			v = v_rc(connect(s.dup, &a.sa, alen));
		break;
	default:
		v = cr_net_deny(run, n, e, &a, alen, "net",
			 "this address family is not allowed", EACCES);
		break;
	}
	if (cr_guard_disarm() && v.kind == CR_V_ERRNO && v.error == EINTR)
		v = v_err(ETIMEDOUT);
	return addr_call_done(&s, hold, v);
}

/* A bind to a path makes a file-system entry in the workspace: counted
 * against the files budget like any creation (EDQUOT past it), given
 * back when the kernel makes none. hold is the parent directory's fd
 * (-1 for an abstract name or an autobind, which make no entry). */
/*
 * bind(2) has no directory argument, and a name of 90 bytes or more does
 * not fit behind /proc/self/fd/N/ in sun_path's 108: such a name is bound
 * as N/NAME relative to /proc/self/fd, or, past 103 bytes, as NAME
 * relative to the checked directory, made the loop thread's working
 * directory for the call. The loop thread has a working directory of its
 * own for that (unshare(CLONE_FS) at the first need), so no other thread
 * of corral's ever sees it move; where that is refused (a container's
 * seccomp profile), the kernel's ENAMETOOLONG as before. An earlier build
 * answered ENAMETOOLONG to every such name (found by a probing session).
 */
static int in_dir(int dirfd, int *saved)
{
	static __thread bool own_fs;
	static __thread int fddir = -1;

	if (!own_fs) {
		if (unshare(CLONE_FS) < 0)
			return -ENAMETOOLONG;
		own_fs = true;
	}
	/* -1: the directory of corral's own descriptors, for a
	 * "PARENT/NAME" (unix_path_resolve). */
	if (dirfd < 0) {
		if (fddir < 0)
			fddir = open("/proc/self/fd", O_PATH | O_DIRECTORY |
				     O_CLOEXEC);
		if (fddir < 0)
			return -errno;
		dirfd = fddir;
	}
	*saved = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*saved < 0)
		return -errno;
	if (fchdir(dirfd) < 0) {
		int e = errno;

		close(*saved);
		return -e;
	}
	return 0;
}

static void out_of_dir(int saved)
{
	/* The loop thread's own: nothing relative is resolved from it. */
	if (fchdir(saved) < 0 && chdir("/") < 0)
		fprintf(stderr, "corral: warning: cannot leave a unix socket's directory: %s\n",
			strerror(errno));
	close(saved);
}

static struct cr_verdict unix_bind(struct cr_run *run,
				   const struct seccomp_notif *n,
				   const struct cr_sock *s,
				   const union cr_sockaddr *t, socklen_t tl,
				   int hold)
{
	const char *path = t->un.sun_path, *slash = strrchr(path, '/');
	bool rel = path[0] && path[0] != '/';
	const char *name = slash ? slash + 1 : rel ? path : NULL;
	bool counted = false;
	struct cr_verdict v;
	struct stat st;
	mode_t um;
	int rc, saved = -1;

	/* Relative: "PARENT/NAME" from corral's fd directory, or the bare
	 * NAME from the directory itself (unix_path_resolve). */
	if (rel && (hold < 0 || (rc = in_dir(slash ? -1 : hold, &saved)) < 0))
		return v_err(hold < 0 ? ENAMETOOLONG : -rc);
	if (hold >= 0 && name &&
	    fstatat(hold, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		/* A name that exists answers EADDRINUSE from the kernel. */
		if ((rc = cr_budget_on_create(run, (pid_t)n->pid))) {
			if (saved >= 0)
				out_of_dir(saved);
			return v_err(-rc);
		}
		counted = true;
	}
	/* The socket's mode is 0777 less the umask, the program's (an
	 * earlier build bound under corral's umask 0: 0777, which any
	 * local user could connect to). */
	um = cr_fs_umask_enter(run, (pid_t)n->pid);
	v = v_rc(bind(s->dup, &t->sa, tl));
	cr_fs_umask_leave(um);
	if (saved >= 0)
		out_of_dir(saved);
	if (counted && v.kind != CR_V_VALUE)
		cr_budget_on_remove(run);
	return v;
}

struct cr_verdict cr_h_bind(struct cr_run *run,
			    const struct cr_syscall_entry *e,
			    const struct seccomp_notif *n)
{
	union cr_sockaddr a, t;
	socklen_t alen = (socklen_t)n->data.args[2], tl = 0;
	struct cr_sock s;
	struct cr_verdict v;
	int rc, hold = -1;
	bool ok;

	if (!run->net)
		return v_err(EACCES);
	rc = addr_call_open(run, n, &a, &s, false);
	if (rc)
		return v_err(-rc);
	if (s.rtnl)
		return addr_call_done(&s, -1,
				      v_neg(cr_rtnl_bind(run, s.rtnl, &a, alen)));
	if ((rc = unspec_as_inet(&s, &a, alen, true)) != 0 ||
	    (rc = foreign_family(&s, &a, alen)) != 0)
		return addr_call_done(&s, hold, v_err(rc));
	/* inet6_bind takes no IPv4 address: its length first (EINVAL
	 * below an RFC 2133 one), then its family (was EAFNOSUPPORT for
	 * both; found by a differential probing session). */
	if (s.domain == AF_INET6 && a.sa.sa_family == AF_INET)
		return addr_call_done(&s, hold,
				      v_err(alen < CR_SIN6_LEN_RFC2133 ?
					    EINVAL : EAFNOSUPPORT));
	switch (a.sa.sa_family) {
	case AF_INET:
	case AF_INET6:
		v = cr_net_bind_inet(run, n, e, &s, &a, alen);
		break;
	case AF_UNIX:
		v = unix_target(run, n, e, &s, &a, alen, true, &t, &tl, &hold, &ok);
		if (ok)
			v = unix_bind(run, n, &s, &t, tl, hold);
		/* The kernel keeps our inner name: remember the program's,
		 * which every address handed back reports. */
		if (ok && v.kind == CR_V_VALUE && cr_net_abstract_or_unnamed(&a, alen))
			v = abstract_bound(run, &s, &a, alen);
		else if (ok && v.kind == CR_V_VALUE) {
			char dir[PATH_MAX], lnk[64], abs[PATH_MAX + 110];
			const char *name = strrchr(t.un.sun_path, '/');
			/* bound relative (unix_bind): the name is all of it,
			 * the kernel's inner name too */
			const char *sep = name ? "" : "/";
			ssize_t dl;

			if (!name && t.un.sun_path[0])
				name = t.un.sun_path;

			snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", hold);
			dl = hold >= 0 ? readlink(lnk, dir, sizeof(dir) - 1) : -1;
			if (dl > 0 && name) {
				dir[dl] = '\0';
				snprintf(abs, sizeof(abs), "%s%s%s", dir, sep,
					 name);
			}
			cr_net_unix_named(run->net, t.un.sun_path, &a, alen,
					  dl > 0 && name ? abs : NULL, s.ino,
					  s.dup);
		}
		break;
	case AF_NETLINK:
		v = v_rc(bind(s.dup, &a.sa, alen));
		break;
	default:
		v = cr_net_deny(run, n, e, &a, alen, "net",
			 "this address family is not allowed", EACCES);
		break;
	}
	return addr_call_done(&s, hold, v);
}

struct cr_verdict cr_h_listen(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	union cr_sockaddr l;
	socklen_t ll = sizeof(l);
	struct cr_sock s;
	struct cr_verdict v;
	int rc = cr_sock_open(run, n, (int)n->data.args[0], &s);

	if (rc)
		return v_err(-rc);
	if (s.rtnl) {	/* netlink has no listen: sock_no_listen */
		cr_sock_close(&s);
		return v_err(EOPNOTSUPP);
	}
	memset(&l, 0, sizeof(l));
	if ((s.domain == AF_INET || s.domain == AF_INET6 ||
	     s.domain == AF_UNIX) &&
	    (rc = cr_budget_on_socket_used(run, s.ino)) < 0) {
		cr_sock_close(&s);
		return v_err(-rc);
	}
	switch (s.domain) {
	case AF_INET:
	case AF_INET6:
		v = cr_net_listen_inet(run, n, e, &s, (int)n->data.args[1]);
		break;
	case AF_UNIX:
		if (getsockname(s.dup, &l.sa, &ll) < 0) {
			v = v_err(errno);
			break;
		}
		/* An abstract name: only one the run bound through corral
		 * (an unbound socket is the kernel's EINVAL). */
		if (ll > offsetof(struct sockaddr_un, sun_path) &&
		    !l.un.sun_path[0] &&
		    !cr_net_abstract_ours(run->net, (const uint8_t *)l.un.sun_path,
					  ll - offsetof(struct sockaddr_un, sun_path),
					  s.ino)) {
			v = cr_net_deny(run, n, e, NULL, 0, "net",
				 "listening on an abstract name corral did not bind is refused",
				 EACCES);
			break;
		}
		v = v_rc(listen(s.dup, (int)n->data.args[1]));
		break;
	default:
		v = v_rc(listen(s.dup, (int)n->data.args[1]));
		break;
	}
	cr_sock_close(&s);
	return v;
}

/* The largest datagram a send may carry: an internet one is at most
 * 64 KiB; a unix one is bounded by its socket's send buffer (~208 KiB by
 * default), which the kernel then judges (EMSGSIZE). */
static size_t dgram_cap(const struct cr_sock *s)
{
	if (s->rtnl)
		return CR_RTNL_SEND_MAX;
	return s->domain == AF_UNIX ? UNIX_DGRAM_CAP : DGRAM_CAP;
}

/* Read the iovecs' bytes into one buffer of at most cap bytes. A datagram
 * longer than cap is EMSGSIZE; a stream send takes a prefix (a partial
 * send, which stream semantics allow). */
static int gather(pid_t pid, uint64_t iovp, uint64_t iovcnt, size_t dgram_cap,
		  struct cr_net_msg *m)
{
	bool dgram = dgram_cap != 0;
	size_t cap = dgram ? dgram_cap : STREAM_CAP, total = 0, off = 0;
	struct iovec *v;
	int rc;

	if (iovcnt > 1024)
		return -EMSGSIZE;
	v = calloc(iovcnt ? iovcnt : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	rc = cr_mem_read(pid, iovp, v, iovcnt * sizeof(*v));
	/* As the kernel's import_iovec: every range must lie in user space
	 * (EFAULT before anything is sent), and one call moves at most
	 * MAX_RW_COUNT bytes (the rest is cut off, not refused). */
	for (size_t i = 0; !rc && i < iovcnt; i++) {
		uint64_t b = (uint64_t)(uintptr_t)v[i].iov_base;

		if (v[i].iov_len > SSIZE_MAX)
			rc = -EINVAL;
		else if (b > CR_USER_TOP || v[i].iov_len > CR_USER_TOP - b)
			rc = -EFAULT;	/* an empty range too (access_ok) */
		else if (v[i].iov_len > MAX_RW - total)
			v[i].iov_len = MAX_RW - total;
		if (!rc)
			total += v[i].iov_len;
	}
	if (!rc && dgram && total > cap)
		rc = -EMSGSIZE;
	if (!rc) {
		size_t take = total < cap ? total : cap;

		m->data = malloc(take ? take : 1);
		if (!m->data)
			rc = -ENOMEM;
		for (size_t i = 0; !rc && i < iovcnt && off < take; i++) {
			size_t k = v[i].iov_len < take - off ? v[i].iov_len :
				   take - off;

			rc = cr_mem_read(pid, (uint64_t)(uintptr_t)v[i].iov_base,
					 (char *)m->data + off, k);
			off += k;
		}
		m->iov.iov_base = m->data;
		m->iov.iov_len = off;
		m->total = total;
		/* More than a piece: the rest is read as it goes (defer.c). */
		if (!rc && total > take) {
			m->piov = v;
			m->npiov = iovcnt;
			m->pid = pid;
			v = NULL;
		}
	}
	free(v);
	return rc;
}

/* An O_PATH open of a regular file holds its storage (once unlinked) but
 * is invisible to the lease that tells the ledger of files without a name
 * when they are gone (fs/held.c). In a task's table the fd scan sees it;
 * in a socket's queue nothing would. */
static bool opath_file(int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_PATH) && fstat(fd, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

/* A regular file that has lost its last name (unlinked, O_TMPFILE, a
 * memfd): its storage lives as long as anything holds it. */
static bool nameless_file(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 0;
}

/* An epoll instance: its watches (~205 B each, up to the user's
 * fs.epoll.max_user_watches, ~1.1 GB here) are counted from its fdinfo in
 * the tasks' tables (tracer/budget/fdscan.c); sent and closed, one instance in
 * flight held them all where nothing reads them (found by a probing
 * session). Passing an epoll instance is rare: refused. */
static bool epoll_file(int fd)
{
	char p[64], lnk[32];
	ssize_t l;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	l = readlink(p, lnk, sizeof(lnk) - 1);
	if (l <= 0)
		return false;
	lnk[l] = '\0';
	return !strcmp(lnk, "anon_inode:[eventpoll]");
}

/* IP_PKTINFO, IPV6_PKTINFO (and its RFC 2292 number) choose the outgoing
 * interface and the source address of one datagram: every datagram corral
 * sends goes to a loopback address, and with eth0's index (or eth0's
 * address as source) the kernel would route it out of eth0. Only loopback
 * or none may be named. A message too short for its structure is the
 * kernel's EINVAL. */
static bool cmsg_way_out(const struct cmsghdr *h)
{
	size_t dl = h->cmsg_len - CMSG_LEN(0);

	if (h->cmsg_level == IPPROTO_IP && h->cmsg_type == IP_PKTINFO) {
		struct in_pktinfo pi;

		if (dl < sizeof(pi))
			return false;
		memcpy(&pi, CMSG_DATA(h), sizeof(pi));
		return !cr_net_ifindex_ok(pi.ipi_ifindex) ||
		       !cr_net_src_ok(AF_INET, (const uint8_t *)&pi.ipi_spec_dst);
	}
	if (h->cmsg_level == IPPROTO_IPV6 &&
	    (h->cmsg_type == IPV6_PKTINFO || h->cmsg_type == IPV6_2292PKTINFO)) {
		struct in6_pktinfo pi;

		if (dl < sizeof(pi))
			return false;
		memcpy(&pi, CMSG_DATA(h), sizeof(pi));
		return !cr_net_ifindex_ok(pi.ipi6_ifindex) ||
		       !cr_net_src_ok(AF_INET6, pi.ipi6_addr.s6_addr);
	}
	return false;
}

/*
 * Control data, with every SCM_RIGHTS fd number translated from the
 * program's table to a duplicate in ours. The walk is stricter than the
 * kernel's: any header it cannot account for refuses the whole call, so no
 * fd number the kernel would read is left untranslated (an untranslated
 * number would name one of the supervisor's own descriptors).
 */
static int control_copy(struct cr_run *run, pid_t pid, uint64_t p,
			uint64_t len, bool unix_sock, struct cr_net_msg *m)
{
	size_t off = 0;
	int rc;

	if (!len)
		return 0;
	if (len > CONTROL_CAP)
		return -ENOBUFS;
	m->pid = pid;	/* whose limit a send of descriptors keeps (rights.c) */
	m->control = calloc(1, (size_t)len);
	if (!m->control)
		return -ENOMEM;
	rc = cr_mem_read(pid, p, m->control, (size_t)len);
	if (rc)
		return rc;
	m->msg.msg_control = m->control;
	m->msg.msg_controllen = (size_t)len;
	while (off + sizeof(struct cmsghdr) <= len) {
		struct cmsghdr *h = (struct cmsghdr *)((char *)m->control + off);

		if (h->cmsg_len < sizeof(*h) || h->cmsg_len > len - off)
			return -EINVAL;
		/* Only unix sockets read them: an internet socket's
		 * __sock_cmsg_send passes over both unread, so they are
		 * neither checked nor translated there (an earlier build
		 * refused them EBADF or EPERM; found by a differential
		 * probing session). */
		if (!unix_sock && h->cmsg_level == SOL_SOCKET &&
		    (h->cmsg_type == SCM_RIGHTS ||
		     h->cmsg_type == SCM_CREDENTIALS)) {
			off += CMSG_ALIGN(h->cmsg_len);
			continue;
		}
		if (h->cmsg_level == SOL_SOCKET &&
		    h->cmsg_type == SCM_CREDENTIALS) {
			/* The kernel checks them against the sender, which
			 * is corral: the program's own pid would be refused
			 * and corral's would lie. Recorded, as every
			 * refusal (an earlier build did not). */
			cr_deny(run, pid, "sendmsg", NULL, "net",
				"SCM_CREDENTIALS cannot be sent: corral sends the message, and they would be its own");
			return -EPERM;
		}
		/* A routing header (or IPv4 options) chooses the packet's
		 * route: the destination corral judged or connected would be
		 * only its last segment, the first hop the program's. */
		if ((h->cmsg_level == IPPROTO_IPV6 &&
		     (h->cmsg_type == IPV6_RTHDR ||
		      h->cmsg_type == IPV6_2292RTHDR)) ||
		    (h->cmsg_level == IPPROTO_IP && h->cmsg_type == IP_RETOPTS &&
		     cr_net_opt_source_route(CMSG_DATA(h), h->cmsg_len - CMSG_LEN(0)))) {
			cr_deny(run, pid, "sendmsg", NULL, "net",
				"a routing header would choose the packet's route");
			return -EPERM;
		}
		if (cmsg_way_out(h)) {
			cr_deny(run, pid, "sendmsg", NULL, "net", WAY_OUT_WHY);
			return -EPERM;
		}
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int *fds = (int *)CMSG_DATA(h);
			int *grown;

			/* The kernel refuses more in one message: refused
			 * before corral holds a copy of any. */
			if (m->nfds + k > SCM_MAX_FD)
				return -EINVAL;
			grown = realloc(m->fds, (m->nfds + k + 1) * sizeof(int));
			if (!grown)
				return -ENOMEM;
			m->fds = grown;
			for (size_t i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, &fds[i], sizeof(fd));
				fd = cr_net_task_fd(run, pid, fd);
				if (fd < 0)
					return -EBADF;
				m->fds[m->nfds++] = fd;
				/* A socket passed is followed for the memory
				 * budget while it exists (tracer/budget/sockmem.c). */
				rc = cr_budget_on_send_fd(run, fd);
				if (rc)
					return rc;
				if (opath_file(fd)) {
					cr_deny(run, pid, "sendmsg", NULL, "fs",
						"an O_PATH descriptor of a file cannot be passed: in flight it would hold the file's storage where nothing can measure it");
					return -EPERM;
				}
				if (epoll_file(fd)) {
					cr_deny(run, pid, "sendmsg", NULL, "net",
						"an epoll instance cannot be passed: in flight its watches would hold kernel memory where nothing can measure it");
					return -EPERM;
				}
				/* A file without a name goes into the queue
				 * followed by the ledger, however the sender
				 * came to hold it (fs/held.c; an open that
				 * raced the unlink, at the fast-open level,
				 * is the one the unlink's own check cannot
				 * see). */
				if (nameless_file(fd)) {
					rc = cr_fs_held_add(run, fd);
					if (rc)
						return rc;
				}
				memcpy(&fds[i], &fd, sizeof(fd));
			}
		}
		off += CMSG_ALIGN(h->cmsg_len);
	}
	return 0;
}

/*
 * Where a send that names an address goes. Sets m->msg's name (or none) and
 * returns true, or returns false with *v holding the refusal.
 */
static bool send_target(struct cr_run *run, const struct seccomp_notif *n,
			const struct cr_syscall_entry *e, struct cr_sock *s,
			union cr_sockaddr *a, socklen_t alen,
			struct cr_net_msg *m, int *hold, struct cr_verdict *v)
{
	struct cr_netstate *ns = run->net;
	uint8_t addr[16];
	uint16_t port;
	bool ok;

	if (s->type == SOCK_STREAM || s->type == SOCK_SEQPACKET) {
		union cr_sockaddr peer;
		socklen_t pl = sizeof(peer);

		/* A connected stream ignores the address (TCP) or refuses it
		 * (unix); either way it goes where connect sent it. */
		if (s->domain == AF_INET || s->domain == AF_INET6) {
			m->msg.msg_name = NULL;
			m->msg.msg_namelen = 0;
			return true;
		}
		/* A unix seqpacket socket drops the address once connected
		 * and is ENOTCONN before (unix_seqpacket_sendmsg); a unix
		 * stream one refuses it (EISCONN, or EOPNOTSUPP). An
		 * earlier build answered a connected seqpacket EISCONN and
		 * sent nothing (found by a differential probing session). */
		if (s->type == SOCK_SEQPACKET || !alen) {
			if (getpeername(s->dup, &peer.sa, &pl) < 0) {
				*v = v_err(ENOTCONN);
				return false;
			}
			m->msg.msg_name = NULL;
			m->msg.msg_namelen = 0;
			return true;
		}
		*v = v_err(getpeername(s->dup, &peer.sa, &pl) == 0 ? EISCONN :
			   EOPNOTSUPP);
		return false;
	}
	if (s->type != SOCK_DGRAM) {
		*v = cr_net_deny(run, n, e, a, alen, "net",
			  "this socket type may not name a destination", EACCES);
		return false;
	}
	/* A name of 0 or 1 bytes: a unix datagram socket sends to its peer
	 * for none (unix_dgram_sendmsg); the rest is EINVAL (a unix name's
	 * check, udp_sendmsg's length, udpv6_sendmsg's family). */
	if (alen < sizeof(sa_family_t)) {
		if (s->domain != AF_UNIX || alen) {
			*v = v_err(EINVAL);
			return false;
		}
		m->msg.msg_name = NULL;
		m->msg.msg_namelen = 0;
		return true;
	}
	/* udpv6_sendmsg: AF_UNSPEC names no one (the connected peer, or
	 * EDESTADDRREQ), a family it does not know is EINVAL. */
	if (s->domain == AF_INET6 && a->sa.sa_family == AF_UNSPEC) {
		m->msg.msg_name = NULL;
		m->msg.msg_namelen = 0;
		return true;
	}
	{
		int err = unspec_as_inet(s, a, alen, false);

		if (!err)
			err = foreign_family(s, a, alen);
		if (err) {
			*v = v_err(s->domain == AF_INET6 && err == EAFNOSUPPORT ?
				   EINVAL : err);
			return false;
		}
		if ((err = v4_on_v6(s, a, &alen, false)) != 0) {
			*v = v_err(err);
			return false;
		}
	}
	switch (a->sa.sa_family) {
	case AF_INET:
	case AF_INET6: {
		int idx = family_idx(a->sa.sa_family);

		if (s->domain != a->sa.sa_family) {
			*v = v_err(EAFNOSUPPORT);
			return false;
		}
		if (inet_of(a, alen, addr, &port)) {
			*v = v_err(EINVAL);
			return false;
		}
		if (port != 53 || s->protocol != IPPROTO_UDP) {
			socklen_t tl = 0;
			int rc = cr_net_udp_local(run, n, e, s, a, alen, true,
						  &m->name, &tl, v);

			if (rc < 0)
				return false;
			if (rc > 0) {
				m->msg.msg_name = &m->name;
				m->msg.msg_namelen = tl;
				return true;
			}
			*v = cr_net_deny(run, n, e, a, alen, "net",
				  "datagrams go only to the DNS responder (port 53) and the run's own UDP sockets; UDP is not relayed",
				  EACCES);
			return false;
		}
		if (ns->dfd[idx] < 0) {
			*v = v_err(ENETUNREACH);
			return false;
		}
		bind_loopback(ns, s->dup, s->ino, a->sa.sa_family);
		dns_register(run, s);
		/* Answers will say they came from here (recvfrom). A
		 * connected socket keeps its getpeername answer. */
		if (!cr_net_peer_get(ns, s->ino, &(socklen_t){ 0 }, true))
			cr_net_peer_set(ns, s->ino, a, alen, false);
		m->name = ns->daddr[idx];
		m->msg.msg_name = &m->name;
		m->msg.msg_namelen = inet_len(a->sa.sa_family);
		return true;
	}
	case AF_UNIX: {
		socklen_t tl = 0;

		*v = unix_target(run, n, e, s, a, alen, false, &m->name, &tl, hold, &ok);
		if (!ok)
			return false;
		m->msg.msg_name = &m->name;
		m->msg.msg_namelen = tl;
		return true;
	}
	case AF_NETLINK:
		if (alen < sizeof(struct sockaddr_nl) ||
		    ((const struct sockaddr_nl *)a)->nl_pid != 0) {
			*v = cr_net_deny(run, n, e, a, alen, "net",
				  "netlink messages go only to the kernel", EACCES);
			return false;
		}
		m->name = *a;
		m->msg.msg_name = &m->name;
		m->msg.msg_namelen = alen;
		return true;
	default:
		*v = cr_net_deny(run, n, e, a, alen, "net",
			  "this address family is not allowed", EACCES);
		return false;
	}
}

/* MSG_FASTOPEN on a TCP socket connects and sends in one call, which
 * corral would not see as a connect: EOPNOTSUPP, with or without an
 * address, connected or not, which is what a kernel with client fast open
 * disabled answers (as for TCP_FASTOPEN_CONNECT), so a client falls back
 * to connect. (EACCES, answered before, read as a refusal of the
 * destination; without an address the flag was dropped and the bytes
 * sent, EPIPE and SIGPIPE where the kernel answers EINVAL.) Other
 * sockets ignore the flag, as in the kernel. */
static bool fastopen_refused(struct cr_run *run, const struct seccomp_notif *n,
			     const struct cr_syscall_entry *e,
			     const struct cr_sock *s, const union cr_sockaddr *a,
			     socklen_t alen, int flags, struct cr_verdict *v)
{
	if (!(flags & MSG_FASTOPEN) || s->type != SOCK_STREAM ||
	    (s->domain != AF_INET && s->domain != AF_INET6))
		return false;
	*v = cr_net_deny(run, n, e, alen ? a : NULL, alen, "net",
			 "TCP fast open would connect without connect()",
			 EOPNOTSUPP);
	return true;
}

static void msg_init(struct cr_net_msg *m, struct cr_sock *s, int flags)
{
	memset(m, 0, sizeof(*m));
	m->dup = s->dup;
	m->hold = -1;
	s->dup = -1;
	m->msg.msg_iov = &m->iov;
	m->msg.msg_iovlen = 1;
	/* The program's own flags, minus the ones that change who receives
	 * what; MSG_DONTWAIT/NOSIGNAL are added when it is performed. */
	m->flags = flags & ~(MSG_FASTOPEN | MSG_NOSIGNAL);
	/* Only stream sockets raise it: a seqpacket or datagram send to a
	 * closed peer answers EPIPE alone (the kernel's unix datagram path,
	 * which seqpacket shares). */
	m->sigpipe = !(flags & MSG_NOSIGNAL) && s->type == SOCK_STREAM;
	m->stream = s->type == SOCK_STREAM;
	m->unix_dom = s->domain == AF_UNIX;
}

/* A send to an emulated route netlink socket: the request is read once and
 * answered by corral (net/rtnl.c); nothing reaches the program's end. */
static struct cr_verdict rtnl_sendto(struct cr_run *run,
				     const struct seccomp_notif *n,
				     struct cr_sock *s, const union cr_sockaddr *a,
				     uint32_t alen, int flags)
{
	uint64_t b = n->data.args[1], len = n->data.args[2];
	struct cr_verdict v;
	void *data;
	int rc;

	if (len > MAX_RW)
		len = MAX_RW;
	if (b > CR_USER_TOP || len > CR_USER_TOP - b)
		v = v_err(EFAULT);
	else if (len > CR_RTNL_SEND_MAX)
		v = v_err(EMSGSIZE);
	else if (!(data = malloc(len ? len : 1)))
		v = v_err(ENOMEM);
	else {
		rc = cr_mem_read((pid_t)n->pid, b, data, len);
		if (!rc && !cr_notif_valid(run, n->id))
			rc = -EINTR;
		v = rc ? v_err(-rc) :
			 cr_rtnl_send(run, s->rtnl, data, len, a, alen, flags);
		free(data);
	}
	cr_sock_close(s);
	return v;
}

struct cr_verdict cr_h_sendto(struct cr_run *run,
			      const struct cr_syscall_entry *e,
			      const struct seccomp_notif *n)
{
	pid_t pid = (pid_t)n->pid;
	int flags = (int)n->data.args[3], hold = -1, rc;
	union cr_sockaddr a;
	socklen_t alen = (socklen_t)n->data.args[5];
	struct cr_net_msg m;
	struct cr_verdict v;
	struct cr_sock s;
	uint64_t len = n->data.args[2];

	if (!run->net)
		return v_err(EACCES);
	/* The descriptor first, as __sys_sendto asks (was the address's
	 * EINVAL for a descriptor that is no socket; found by a
	 * differential probing session). addr_len is an int to the
	 * kernel: its upper half is not read (negative: past the storage,
	 * EINVAL). */
	rc = cr_sock_open(run, n, (int)n->data.args[0], &s);
	if (rc)
		return v_err(-rc);
	rc = read_send_addr(pid, n->data.args[4], (uint32_t)n->data.args[5],
			    &a);
	if (rc) {
		cr_sock_close(&s);
		return v_err(-rc);
	}
	if (s.rtnl)
		return rtnl_sendto(run, n, &s, &a, (uint32_t)alen, flags);
	if (bound_way_out(run, n, e, &s, &v) ||
	    fastopen_refused(run, n, e, &s, &a, alen, flags, &v)) {
		cr_sock_close(&s);
		return v;
	}
	/* sendto has no compat control messages to refuse: the kernel's
	 * passes the bit on, which no protocol reads; corral's sendmsg
	 * would refuse it (EINVAL, nothing sent). */
	msg_init(&m, &s, flags & 0x7fffffff);	/* less MSG_CMSG_COMPAT */
	{
		bool dgram = s.type != SOCK_STREAM;
		size_t cap = dgram ? dgram_cap(&s) : STREAM_CAP;
		uint64_t b = n->data.args[1];

		if (b > CR_USER_TOP || len > CR_USER_TOP - b) {
			cr_net_msg_free(&m);
			return v_err(EFAULT);
		}
		if (dgram && len > cap) {
			cr_net_msg_free(&m);
			return v_err(EMSGSIZE);
		}
		if (len > MAX_RW)
			len = MAX_RW;
		m.total = len;
		if (len > cap) {
			/* The rest is read as it goes (defer.c). */
			m.piov = malloc(sizeof(*m.piov));
			if (m.piov) {
				m.piov->iov_base = (void *)(uintptr_t)n->data.args[1];
				m.piov->iov_len = len;
				m.npiov = 1;
				m.pid = pid;
			} else {
				m.total = cap;
			}
			len = cap;
		}
		m.data = malloc(len ? len : 1);
		rc = m.data ? cr_mem_read(pid, n->data.args[1], m.data, len) :
			      -ENOMEM;
		m.iov.iov_base = m.data;
		m.iov.iov_len = len;
	}
	if (rc || !cr_notif_valid(run, n->id)) {
		cr_net_msg_free(&m);
		return v_err(rc ? -rc : EINTR);
	}
	s.dup = m.dup;	/* borrowed for the decision */
	if (!send_target(run, n, e, &s, &a, alen, &m, &hold, &v)) {
		s.dup = -1;
		cr_net_msg_free(&m);
		if (hold >= 0)
			close(hold);
		return v;
	}
	s.dup = -1;
	m.hold = hold;	/* the message's now: kept while it waits */
	return cr_net_send(run, n, &m, true);
}

/* An error found in a message before its descriptor was looked at: the
 * descriptor's own comes first, as __sys_sendmsg looks it up first (was
 * EFAULT for a closed one; found by a differential probing session). */
static int fd_error_first(struct cr_run *run, const struct seccomp_notif *n,
			  int fd, int rc)
{
	struct cr_sock s;
	int fe = cr_sock_open(run, n, fd, &s);

	cr_sock_close(&s);
	return fe ? fe : rc;
}

/* One msghdr of the program's, read and turned into a performable
 * message. Returns 0, -errno, 1 with *v holding a refusal, or 2 with *v
 * the answer of a send performed here (to an emulated netlink socket). */
static int build_msg(struct cr_run *run, const struct seccomp_notif *n,
		     const struct cr_syscall_entry *e, int fd, uint64_t p,
		     int flags, struct cr_net_msg *m, int *hold,
		     struct cr_verdict *v)
{
	pid_t pid = (pid_t)n->pid;
	struct msghdr h;
	union cr_sockaddr a;
	struct cr_sock s;
	int rc = cr_mem_read(pid, p, &h, sizeof(h));

	if (rc)
		return fd_error_first(run, n, fd, rc);
	/* __copy_msghdr: no name, no length; a negative one EINVAL; a
	 * longer one than a sockaddr_storage cut to it (an earlier build
	 * refused it EINVAL: a sendmmsg stopped at it; found by a
	 * differential probing session). */
	if (!h.msg_name)
		h.msg_namelen = 0;
	if ((int)h.msg_namelen < 0)
		return fd_error_first(run, n, fd, -EINVAL);
	if (h.msg_namelen > sizeof(a.ss))
		h.msg_namelen = sizeof(a.ss);
	memset(&a, 0, sizeof(a));
	if (h.msg_namelen) {
		rc = read_send_addr(pid, (uint64_t)(uintptr_t)h.msg_name,
				    h.msg_namelen, &a);
		if (rc)
			return fd_error_first(run, n, fd, rc);
	}
	rc = cr_sock_open(run, n, fd, &s);
	if (rc)
		return rc;
	if (s.rtnl) {
		/* Its control messages are read by no one (netlink takes
		 * credentials only, and nothing here reads them). */
		struct cr_rtnl *r = s.rtnl;

		msg_init(m, &s, flags);
		rc = gather(pid, (uint64_t)(uintptr_t)h.msg_iov, h.msg_iovlen,
			    CR_RTNL_SEND_MAX, m);
		if (!rc && !cr_notif_valid(run, n->id))
			rc = -EINTR;
		if (rc)
			return rc;
		*v = cr_rtnl_send(run, r, m->data, m->iov.iov_len, &a,
				  h.msg_namelen, flags);
		return 2;
	}
	if (bound_way_out(run, n, e, &s, v) ||
	    fastopen_refused(run, n, e, &s, &a, h.msg_namelen, flags, v)) {
		cr_sock_close(&s);
		return 1;
	}
	msg_init(m, &s, flags);
	rc = gather(pid, (uint64_t)(uintptr_t)h.msg_iov, h.msg_iovlen,
		    m->dup >= 0 && s.type != SOCK_STREAM ? dgram_cap(&s) : 0, m);
	if (!rc)
		rc = control_copy(run, pid, (uint64_t)(uintptr_t)h.msg_control,
				  h.msg_controllen, s.domain == AF_UNIX, m);
	if (rc)
		return rc;
	if (!cr_notif_valid(run, n->id))
		return -EINTR;
	if (h.msg_namelen) {
		s.dup = m->dup;
		if (!send_target(run, n, e, &s, &a, h.msg_namelen, m, hold,
				 v)) {
			s.dup = -1;
			return 1;
		}
		s.dup = -1;
	}
	return 0;
}

struct cr_verdict cr_h_sendmsg(struct cr_run *run,
			       const struct cr_syscall_entry *e,
			       const struct seccomp_notif *n)
{
	struct cr_net_msg m = { .dup = -1, .hold = -1 };
	struct cr_verdict v;
	int hold = -1, rc;

	if (!run->net)
		return v_err(EACCES);
	/* __sys_sendmsg refuses the compat bit before anything else (was
	 * EISCONN first; found by a differential probing session). */
	if ((uint32_t)n->data.args[2] & 0x80000000u)
		return v_err(EINVAL);
	rc = build_msg(run, n, e, (int)n->data.args[0], n->data.args[1],
		       (int)n->data.args[2], &m, &hold, &v);
	if (rc) {
		cr_net_msg_free(&m);
		if (hold >= 0)
			close(hold);
		return rc > 0 ? v : v_err(-rc);
	}
	/* Checked: one with no address, no control data and one buffer on
	 * a unix socket is made by the task itself (net/ownsend.c), so the
	 * receiver's SCM_CREDENTIALS are the sender's, not corral's. */
	if (m.unix_dom && run->net->passcred && hold < 0 && !m.nfds &&
	    !m.msg.msg_controllen && !m.msg.msg_namelen) {
		struct msghdr h;
		struct iovec one;

		if (cr_mem_read((pid_t)n->pid, n->data.args[1], &h,
				sizeof(h)) == 0 && !h.msg_name &&
		    !h.msg_controllen && h.msg_iovlen == 1 &&
		    cr_mem_read((pid_t)n->pid, (uint64_t)(uintptr_t)h.msg_iov,
				&one, sizeof(one)) == 0 &&
		    cr_ownsend_begin(run, n, (uint64_t)(uintptr_t)one.iov_base,
				     one.iov_len)) {
			cr_net_msg_free(&m);
			return cr_ownsend_answer();
		}
	}
	m.hold = hold;	/* the message's now: kept while it waits */
	return cr_net_send(run, n, &m, true);
}

struct cr_verdict cr_h_sendmmsg(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	uint64_t base = n->data.args[1];
	unsigned vlen = (unsigned)n->data.args[2];
	int flags = (int)n->data.args[3];
	unsigned sent = 0;

	if (!run->net)
		return v_err(EACCES);
	if ((uint32_t)flags & 0x80000000u)	/* MSG_CMSG_COMPAT, as sendmsg */
		return v_err(EINVAL);
	if (vlen > MMSG_MAX)
		vlen = MMSG_MAX;	/* a short count, as the kernel may give */
	for (unsigned i = 0; i < vlen; i++) {
		uint64_t p = base + (uint64_t)i * sizeof(struct mmsghdr);
		struct cr_net_msg m = { .dup = -1, .hold = -1 };
		struct cr_verdict v;
		int hold = -1, rc;
		unsigned len;

		rc = build_msg(run, n, e, (int)n->data.args[0], p, flags, &m,
			       &hold, &v);
		if (rc == 2 && v.kind == CR_V_VALUE) {
			cr_net_msg_free(&m);
			len = (unsigned)v.val;
			cr_mem_write((pid_t)n->pid,
				     p + offsetof(struct mmsghdr, msg_len),
				     &len, sizeof(len));
			sent++;
			continue;
		}
		if (rc) {
			cr_net_msg_free(&m);
			if (hold >= 0)
				close(hold);
			if (sent)
				break;
			return rc > 0 ? v : v_err(-rc);
		}
		/* Only the first message may wait for room: it is then the
		 * whole (short, legal) count. */
		if (i == 0)
			m.mmsg_len = p + offsetof(struct mmsghdr, msg_len);
		m.hold = hold;
		v = cr_net_send(run, n, &m, i == 0);
		if (v.kind == CR_V_SENT)
			return v;
		if (v.kind != CR_V_VALUE) {
			if (sent)
				break;
			return v;
		}
		len = (unsigned)v.val;
		cr_mem_write((pid_t)n->pid, p + offsetof(struct mmsghdr, msg_len),
			     &len, sizeof(len));
		sent++;
	}
	return v_val(sent);
}

/*
 * A destination the program asked for, remembered where the kernel's
 * peer is corral's (the proxy, the DNS responder, a closed port's sink),
 * as the kernel would report it: a wildcard is the loopback address the
 * route gave it, no scope or flow label, the family's own length (the
 * program's length and bytes were echoed; found by a differential
 * probing session), an IPv4 destination of an IPv6 socket v4-mapped.
 * 0 for port 0: the kernel's ENOTCONN (connected to nothing).
 */
static socklen_t peer_as_kernel(int domain, const union cr_sockaddr *a,
				union cr_sockaddr *out)
{
	static const uint8_t any6[16], mapped[12] = { [10] = 0xff, [11] = 0xff };
	uint8_t v4[4];
	in_port_t port;

	memset(out, 0, sizeof(*out));
	if (a->sa.sa_family == AF_INET) {
		port = a->in4.sin_port;
		memcpy(v4, &a->in4.sin_addr, 4);
	} else if (!memcmp(a->in6.sin6_addr.s6_addr, mapped, 12)) {
		port = a->in6.sin6_port;
		memcpy(v4, a->in6.sin6_addr.s6_addr + 12, 4);
	} else {
		if (!a->in6.sin6_port)
			return 0;
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_port = a->in6.sin6_port;
		out->in6.sin6_addr = a->in6.sin6_addr;
		if (!memcmp(out->in6.sin6_addr.s6_addr, any6, 16))
			out->in6.sin6_addr = in6addr_loopback;
		return sizeof(out->in6);
	}
	if (!port)
		return 0;
	if (!v4[0] && !v4[1] && !v4[2] && !v4[3]) {
		v4[0] = 127;
		v4[3] = 1;
	}
	if (domain == AF_INET6) {
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_port = port;
		memcpy(out->in6.sin6_addr.s6_addr, mapped, 12);
		memcpy(out->in6.sin6_addr.s6_addr + 12, v4, 4);
		return sizeof(out->in6);
	}
	out->in4.sin_family = AF_INET;
	out->in4.sin_port = port;
	memcpy(&out->in4.sin_addr, v4, 4);
	return sizeof(out->in4);
}

int cr_net_peer_name(struct cr_run *run, const struct cr_sock *s,
		     union cr_sockaddr *out, socklen_t *outlen)
{
	const union cr_sockaddr *a;
	socklen_t al = sizeof(*out);

	/* The proxy's address is the kernel's truth; the program is told
	 * the destination it asked for. */
	a = s->rtnl ? NULL : cr_net_peer_get(run->net, s->ino, &al, true);
	if (s->rtnl) {
		*outlen = cr_rtnl_name(s->rtnl, true, out);
		return 0;
	}
	if (!a) {
		/* Zeroed: a 108-byte unix name is reported with 111 bytes,
		 * one past what the kernel writes here (a byte of corral's
		 * stack went out; found by a probing session). */
		memset(out, 0, sizeof(*out));
		al = sizeof(*out);
		if (getpeername(s->dup, &out->sa, &al) < 0)
			return -errno;
		cr_net_unix_fix(run->net, out, &al);
		*outlen = al;
		return 0;
	}
	if (a->sa.sa_family == AF_INET || a->sa.sa_family == AF_INET6) {
		/* A stream that ended (CLOSE: both FINs, or a reset) is not
		 * connected, whatever it was connected to: the kernel's
		 * answer on the proxy's end is the native one (ENOTCONN;
		 * the record named the destination to the end, found by a
		 * differential probe). */
		if (s->type == SOCK_STREAM) {
			union cr_sockaddr k;
			socklen_t kl = sizeof(k);

			if (getpeername(s->dup, &k.sa, &kl) < 0)
				return -errno;
		}
		*outlen = peer_as_kernel(s->domain, a, out);
		return *outlen ? 0 : -ENOTCONN;
	}
	memcpy(out, a, al < sizeof(*out) ? al : sizeof(*out));
	*outlen = al;
	return 0;
}

struct cr_verdict cr_h_getpeername(struct cr_run *run,
				   const struct cr_syscall_entry *e,
				   const struct seccomp_notif *n)
{
	union cr_sockaddr real;
	socklen_t al = 0;
	struct cr_sock s;
	int rc;

	rc = cr_sock_name_open(run, n, &s);
	if (rc)
		return v_err(-rc);
	rc = cr_net_peer_name(run, &s, &real, &al);
	cr_sock_close(&s);
	if (rc)
		return v_err(-rc);
	return cr_sock_name_reply(n, &real, al);
}

static bool same_inet(const union cr_sockaddr *a, const union cr_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in4.sin_port == b->in4.sin_port &&
		       a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr;
	return a->sa.sa_family == AF_INET6 &&
	       a->in6.sin6_port == b->in6.sin6_port &&
	       !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16);
}

/* What one recvfrom performed here needs, now or when data arrives. */
struct recv_args {
	uint64_t buf, len, from, fromlen;	/* the program's */
	uint64_t cap;			/* the most read at once */
	int flags;
	bool dns;			/* report `asked` for the responder */
	bool rtnl;			/* report the kernel (net/rtnl.c) */
	union cr_sockaddr asked;
	socklen_t al;
};

/* Receive without blocking and hand back data and source; *again when a
 * blocking socket has nothing yet. */
static struct cr_verdict recv_try(struct cr_run *run, uint64_t id, pid_t pid,
				  int dup, void *arg, bool *again)
{
	struct cr_netstate *ns = run->net;
	struct recv_args *ra = arg;
	union cr_sockaddr from;
	socklen_t fl = sizeof(from);
	/* What the kernel could hand over at once, whatever the program
	 * offers (c-ares reads with 128 KiB): an internet datagram is at
	 * most 64 KiB, a stream read may be short, a unix datagram is
	 * bounded by its sender's buffer. */
	size_t want = ra->len < ra->cap ? ra->len : ra->cap;
	void *buf = malloc(want ? want : 1);
	ssize_t got;
	int ulen, rc;

	if (!buf)
		return v_err(ENOMEM);
	memset(&from, 0, sizeof(from));
	got = recvfrom(dup, buf, want, ra->flags | MSG_DONTWAIT, &from.sa, &fl);
	rc = errno;
	if (got < 0) {
		int fdfl = fcntl(dup, F_GETFL);

		free(buf);
		if (rc == EAGAIN && !(ra->flags & MSG_DONTWAIT) && fdfl >= 0 &&
		    !(fdfl & O_NONBLOCK))
			*again = true;
		return v_err(rc);
	}
	if (ra->dns &&
	    same_inet(&from, &ns->daddr[family_idx(from.sa.sa_family)])) {
		from = ra->asked;
		fl = ra->al;
	}
	if (ra->rtnl) {
		struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

		memset(&from, 0, sizeof(from));
		memcpy(&from, &kernel, sizeof(kernel));
		fl = sizeof(kernel);
	}
	cr_net_unix_fix(ns, &from, &fl);
	rc = cr_mem_write(pid, ra->buf, buf,
			  (size_t)got < want ? (size_t)got : want);
	free(buf);
	/* As the kernel: an address asked for (from) needs its length
	 * (EFAULT without one, the data consumed); none asked, the length
	 * is not looked at. */
	if (!rc && ra->from &&
	    !(rc = cr_mem_read(pid, ra->fromlen, &ulen, sizeof(ulen)))) {
		int out = (int)fl;

		if (ulen < 0)
			return v_err(EINVAL);
		/* The length first, as move_addr_to_user writes it. */
		rc = cr_mem_write(pid, ra->fromlen, &out, sizeof(out));
		if (!rc)
			rc = cr_mem_write(pid, ra->from, &from,
					  (size_t)ulen < fl ? (size_t)ulen : fl);
	}
	/* The data is consumed: on a fault the program loses it, as it
	 * would had the kernel failed to copy it out. */
	return rc ? v_err(-rc) : v_val(got);
}

/*
 * recvfrom with a source address, performed here in two cases:
 * - on a socket whose DNS queries corral redirected: the answer is
 *   reported as coming from the nameserver the program asked (stub
 *   resolvers, glibc's among them, drop answers whose source is not the
 *   server they queried);
 * - on a unix socket: the sender's name is the one it bound, not
 *   corral's inner path. A blocking one with nothing to read waits in the
 *   loop (unless it has a receive timeout, which the kernel keeps).
 * Every other recvfrom is let through: what it returns is the kernel's
 * truth and no decision depends on memory (REGS stance). A blocking DNS
 * socket with nothing to read is let through too, and then reports
 * corral's responder.
 */
struct cr_verdict cr_h_recvfrom(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	struct cr_netstate *ns = run->net;
	const union cr_sockaddr *asked;
	struct cr_verdict cont = { .kind = CR_V_CONTINUE }, v;
	struct recv_args *ra;
	struct timeval tv = { 0 };
	socklen_t tl = sizeof(tv);
	struct cr_sock s;
	bool again = false, unixs;

	if (!ns || cr_sock_open(run, n, (int)n->data.args[0], &s))
		return cont;
	ra = calloc(1, sizeof(*ra));
	if (!ra) {
		cr_sock_close(&s);
		return cont;
	}
	ra->buf = n->data.args[1];
	ra->len = n->data.args[2];
	ra->flags = (int)n->data.args[3];
	ra->from = n->data.args[4];
	ra->fromlen = n->data.args[5];
	asked = cr_net_peer_get(ns, s.ino, &ra->al, false);
	ra->dns = asked && s.type == SOCK_DGRAM;
	if (ra->dns)
		ra->asked = *asked;
	/* An emulated netlink socket is a unix one underneath; its answers
	 * come from the kernel, as far as the program can tell. */
	ra->rtnl = s.rtnl != NULL;
	unixs = (s.domain == AF_UNIX || ra->rtnl) && !(ra->flags & MSG_WAITALL);
	ra->cap = s.type == SOCK_STREAM ? STREAM_CAP :
		  s.domain == AF_UNIX ? UNIX_DGRAM_CAP : DGRAM_CAP;
	if (!ra->dns && !unixs) {
		cr_sock_close(&s);
		free(ra);
		return cont;
	}
	v = recv_try(run, n->id, (pid_t)n->pid, s.dup, ra, &again);
	if (!again) {
		cr_sock_close(&s);
		free(ra);
		return v;
	}
	if (!unixs ||
	    getsockopt(s.dup, SOL_SOCKET, SO_RCVTIMEO, &tv, &tl) < 0 ||
	    tv.tv_sec || tv.tv_usec) {
		cr_sock_close(&s);
		free(ra);
		return cont;
	}
	v = cr_net_wait(run, n, s.dup, EPOLLIN, recv_try, ra);
	s.dup = -1;
	return v;
}
