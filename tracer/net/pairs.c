/* tracer/net/pairs.c: the unix socket pairs corral made for the run and the
 * process that asked for each, whose credentials the pair must report. */
#include <errno.h>
#include <stdlib.h>

#include "net.h"

/*
 * socketpair() of AF_UNIX sockets is performed by the supervisor
 * (tracer/handlers/socket.c), so the kernel records corral as the peer of
 * both ends. Natively each end's peer is the process that called
 * socketpair, and SO_PEERCRED and SO_PEERPIDFD name it (interface.md).
 * The pairs are kept here by inode with that process (its tgid and start
 * time, so a reused pid is told apart), and those two answers are made
 * from it (tracer/handlers/pidfd.c). An entry goes when the budget's
 * listing no longer shows its socket (cr_net_pairs_prune).
 */

struct cr_net_pair {
	uint64_t ino;
	pid_t tgid;
	uint64_t start;
};

int cr_net_pair_add(struct cr_netstate *ns, const uint64_t ino[2], pid_t tgid,
		    uint64_t start)
{
	if (ns->npairs + 2 > ns->cappairs) {
		size_t cap = ns->cappairs ? ns->cappairs * 2 : 32;
		struct cr_net_pair *g = realloc(ns->pairs, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		ns->pairs = g;
		ns->cappairs = cap;
	}
	for (int i = 0; i < 2; i++)
		ns->pairs[ns->npairs++] = (struct cr_net_pair){ ino[i], tgid,
								start };
	return 0;
}

bool cr_net_pair_creator(const struct cr_netstate *ns, uint64_t ino,
			 pid_t *tgid, uint64_t *start)
{
	/* Newest first: an inode number reused names the newest pair. */
	for (size_t i = ns ? ns->npairs : 0; i-- > 0;)
		if (ns->pairs[i].ino == ino) {
			*tgid = ns->pairs[i].tgid;
			*start = ns->pairs[i].start;
			return true;
		}
	return false;
}

void cr_net_pairs_prune(struct cr_netstate *ns, const uint64_t *alive,
			size_t nalive)
{
	size_t j = 0;

	if (!ns)
		return;
	for (size_t i = 0; i < ns->npairs; i++)
		if (cr_u64_has(alive, nalive, ns->pairs[i].ino))
			ns->pairs[j++] = ns->pairs[i];
	ns->npairs = j;
}

void cr_net_pairs_finish(struct cr_netstate *ns)
{
	free(ns->pairs);
	ns->pairs = NULL;
	ns->npairs = ns->cappairs = 0;
}
