/* tracer/net/unixname.c: the names unix sockets were bound with, so every
 * address handed back says what the program bound, not corral's inner path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "net.h"
#include "../fs/fs.h"

#define SUN_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

struct cr_net_uname {
	char inner[SUN_MAX + 1];	/* what the kernel stored */
	char given[SUN_MAX + 1];	/* what the program asked for */
	char abs[SUN_MAX + 1];		/* its absolute path, "" if too long */
	uint64_t ino;			/* the bound socket */
	uint64_t id;			/* cr_net_name_follow's, or 0 */
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

uint64_t cr_net_name_follow(struct cr_netstate *ns, int fd)
{
	uint64_t id = ++ns->name_id;

	return cr_weak_add(&ns->names_weak, fd, id) ? 0 : id;
}

struct ids_acc {
	uint64_t *ids;
	size_t n, cap;
	bool nomem;
};

static void collect(void *arg, uint64_t data, uint64_t ino)
{
	struct ids_acc *c = arg;

	(void)ino;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		uint64_t *g = realloc(c->ids, cap * sizeof(*g));

		if (!g) {
			c->nomem = true;
			return;
		}
		c->ids = g;
		c->cap = cap;
	}
	c->ids[c->n++] = data;
}

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int names_alive(struct cr_netstate *ns, uint64_t **ids, size_t *n)
{
	struct ids_acc c = { 0 };
	int rc = cr_weak_each(ns->names_weak, collect, &c);

	*ids = NULL;
	*n = 0;
	if (rc < 0 || c.nomem) {
		free(c.ids);
		return rc < 0 ? rc : -ENOMEM;
	}
	if (c.n)
		qsort(c.ids, c.n, sizeof(*c.ids), cmp_id);
	*ids = c.ids;
	*n = c.n;
	return 0;
}

size_t cr_net_names_sweep(struct cr_netstate *ns, void *table, size_t n,
			  size_t size, size_t id_off)
{
	char *t = table;
	size_t nids, k = 0;
	uint64_t *ids, t0;

	if (cr_now_ns() < ns->names_sweep_next_ns)
		return n;
	t0 = cr_thread_cpu_ns();
	if (names_alive(ns, &ids, &nids) == 0) {
		for (size_t i = 0; i < n; i++) {
			uint64_t id;

			memcpy(&id, t + i * size + id_off, sizeof(id));
			if (id && !(nids && bsearch(&id, ids, nids,
						    sizeof(*ids), cmp_id)))
				continue;	/* its socket is gone */
			if (k != i)
				memmove(t + k * size, t + i * size, size);
			k++;
		}
		free(ids);
	} else {
		k = n;		/* unreadable: nothing is known gone */
	}
	ns->names_sweep_next_ns = cr_now_ns() + (cr_thread_cpu_ns() - t0) *
					       CR_NET_NAMES_SWEEP_IDLE;
	return k;
}

/*
 * A full table: the names of sockets gone are forgotten first (an earlier
 * build forgot the oldest whatever it was, so after 4 096 binds in one
 * run a live listener's getsockname named corral's inner path and a
 * datagram server's replies went nowhere; found by a probing session).
 * Only when the live ones fill it is the oldest forgotten.
 */
static void unames_sweep(struct cr_netstate *ns)
{
	size_t k = cr_net_names_sweep(ns, ns->unames, ns->nunames,
				      sizeof(*ns->unames),
				      offsetof(struct cr_net_uname, id));

	if (k < ns->nunames)
		ns->uname_next = 0;
	ns->nunames = k;
}

void cr_net_unix_named(struct cr_netstate *ns, const char *inner,
		       const union cr_sockaddr *given, socklen_t glen,
		       const char *abs, uint64_t ino, int fd)
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
		if (ns->nunames == ns->capunames)
			unames_sweep(ns);
		if (ns->nunames == ns->capunames &&
		    ns->capunames < CR_NET_MAX_UNAMES) {
			size_t cap = ns->capunames ? ns->capunames * 2 : 256;
			struct cr_net_uname *g;

			if (cap > CR_NET_MAX_UNAMES)
				cap = CR_NET_MAX_UNAMES;
			g = realloc(ns->unames, cap * sizeof(*g));
			if (g) {
				ns->unames = g;
				ns->capunames = cap;
			}
		}
		if (!ns->capunames)
			return;
		if (ns->nunames < ns->capunames) {
			u = &ns->unames[ns->nunames++];
		} else {
			/* Bounded: the oldest name is forgotten. */
			u = &ns->unames[ns->uname_next];
			ns->uname_next = (ns->uname_next + 1) % ns->nunames;
		}
	}
	memset(u, 0, sizeof(*u));
	snprintf(u->inner, sizeof(u->inner), "%s", inner);
	memcpy(u->given, given->un.sun_path, n);
	u->given[n] = '\0';
	if (abs && strlen(abs) <= SUN_MAX)
		snprintf(u->abs, sizeof(u->abs), "%s", abs);
	u->ino = ino;
	u->id = cr_net_name_follow(ns, fd);
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
	if (ns->names_weak >= 0)
		close(ns->names_weak);
	ns->names_weak = -1;
	free(ns->unames);
	ns->unames = NULL;
	ns->nunames = 0;
	ns->capunames = 0;
}
