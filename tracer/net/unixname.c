/* tracer/net/unixname.c: the names unix sockets were bound with, so every
 * address handed back says what the program bound, not corral's inner path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "net.h"

#define SUN_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

struct cr_net_uname {
	char inner[SUN_MAX + 1];	/* what the kernel stored */
	char given[SUN_MAX + 1];	/* what the program asked for */
	char abs[SUN_MAX + 1];		/* its absolute path, "" if too long */
	uint64_t ino;			/* the bound socket */
};

/*
 * The kernel keeps the string a socket was bound with and hands it back
 * (getsockname, getpeername of a peer, accept and recvfrom of a sender).
 * corral binds through "/proc/self/fd/PARENT/NAME"; the parent's number is
 * spread over a window of descriptor numbers so that two live sockets of
 * the same NAME rarely share an inner string (a shared one would be
 * reported with the newer given name).
 */
int cr_net_unix_bind_fd(struct cr_netstate *ns, int pfd)
{
	struct rlimit rl;
	uint64_t window;
	int floor, fd;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < 1024)
		return pfd;
	/* Above the numbers the supervisor uses for itself, below its
	 * limit with room to spare. */
	window = rl.rlim_cur - 512 < 4096 ? rl.rlim_cur - 512 : 4096;
	floor = 256 + (int)(ns->uname_seq++ % window);
	fd = fcntl(pfd, F_DUPFD_CLOEXEC, floor);
	if (fd < 0)
		return pfd;
	close(pfd);
	return fd;
}

void cr_net_unix_named(struct cr_netstate *ns, const char *inner,
		       const union cr_sockaddr *given, socklen_t glen,
		       const char *abs, uint64_t ino)
{
	size_t n = glen > offsetof(struct sockaddr_un, sun_path) ?
		   glen - offsetof(struct sockaddr_un, sun_path) : 0;
	struct cr_net_uname *u = NULL;

	if (n > SUN_MAX)
		n = SUN_MAX;
	for (size_t i = 0; i < ns->nunames; i++)
		if (!strcmp(ns->unames[i].inner, inner) ||
		    ns->unames[i].ino == ino) {
			u = &ns->unames[i];
			break;
		}
	if (!u) {
		if (!ns->unames) {
			ns->unames = calloc(CR_NET_MAX_UNAMES, sizeof(*u));
			if (!ns->unames)
				return;
		}
		if (ns->nunames < CR_NET_MAX_UNAMES) {
			u = &ns->unames[ns->nunames++];
		} else {
			/* Bounded: the oldest name is forgotten. */
			u = &ns->unames[ns->uname_next];
			ns->uname_next = (ns->uname_next + 1) % CR_NET_MAX_UNAMES;
		}
	}
	memset(u, 0, sizeof(*u));
	snprintf(u->inner, sizeof(u->inner), "%s", inner);
	memcpy(u->given, given->un.sun_path, n);
	u->given[n] = '\0';
	if (abs && strlen(abs) <= SUN_MAX)
		snprintf(u->abs, sizeof(u->abs), "%s", abs);
	u->ino = ino;
}

/* A kernel answer rewritten in place when it names an inner path. */
void cr_net_unix_fix(const struct cr_netstate *ns, union cr_sockaddr *a,
		     socklen_t *len)
{
	size_t off = offsetof(struct sockaddr_un, sun_path), n;

	if (*len <= off || a->sa.sa_family != AF_UNIX)
		return;
	if (!a->un.sun_path[0]) {
		cr_net_abstract_fix(ns, a, len);
		return;
	}
	n = strnlen(a->un.sun_path, *len - off < SUN_MAX ? *len - off : SUN_MAX);
	for (size_t i = 0; i < ns->nunames; i++) {
		const struct cr_net_uname *u = &ns->unames[i];
		size_t gl;

		if (strlen(u->inner) != n || memcmp(u->inner, a->un.sun_path, n))
			continue;
		gl = strlen(u->given);
		memset(a->un.sun_path, 0, SUN_MAX);
		memcpy(a->un.sun_path, u->given, gl);
		/* The kernel's length of a path name: the path and its NUL,
		 * even for a full 108-byte name (its copy is terminated:
		 * 111, one more than a sockaddr_un). */
		*len = (socklen_t)(off + gl + 1);
		return;
	}
}

/*
 * A sender's address the kernel gave the program where corral could not
 * rewrite it (recvmsg is not intercepted) names the inner path: a reply
 * sent there means the socket's own path, which is then resolved as any
 * other (inside the workspace or refused).
 */
bool cr_net_unix_alias(const struct cr_netstate *ns, const char *path,
		       size_t len, char *abs, size_t abslen)
{
	for (size_t i = ns->nunames; i-- > 0;) {
		const struct cr_net_uname *u = &ns->unames[i];

		if (!u->abs[0] || strlen(u->inner) != len ||
		    memcmp(u->inner, path, len))
			continue;
		return (size_t)snprintf(abs, abslen, "%s", u->abs) < abslen;
	}
	return false;
}

void cr_net_unix_finish(struct cr_netstate *ns)
{
	free(ns->unames);
	ns->unames = NULL;
	ns->nunames = 0;
}
