/* tests/progs/ifaddrs.c: the interfaces as glibc lists them through route
 * netlink (getifaddrs, if_nameindex: what libuv and Python call). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/*
 * usage: ifaddrs [N]
 * Lists every entry of getifaddrs ("NAME FAMILY ADDRESS/PREFIX flags=HEX"),
 * then every pair of if_nameindex ("index I NAME"); with N, does it all N
 * times and prints only a count of entries per round, for runs that make
 * and close many netlink sockets.
 */
static int prefix(const struct sockaddr *m)
{
	const unsigned char *p;
	size_t n;
	int bits = 0;

	if (!m)
		return -1;
	if (m->sa_family == AF_INET) {
		p = (const unsigned char *)&((const struct sockaddr_in *)m)->sin_addr;
		n = 4;
	} else {
		p = ((const struct sockaddr_in6 *)m)->sin6_addr.s6_addr;
		n = 16;
	}
	for (size_t i = 0; i < n; i++)
		bits += __builtin_popcount(p[i]);
	return bits;
}

static int list(int quiet)
{
	struct ifaddrs *ifa, *i;
	struct if_nameindex *ni;
	int count = 0;

	if (getifaddrs(&ifa) < 0) {
		printf("getifaddrs %s\n", strerrorname_np(errno));
		return -1;
	}
	for (i = ifa; i; i = i->ifa_next, count++) {
		char buf[INET6_ADDRSTRLEN] = "-";
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : -1;

		if (fam == AF_INET)
			inet_ntop(fam, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
				  buf, sizeof(buf));
		else if (fam == AF_INET6)
			inet_ntop(fam, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
				  buf, sizeof(buf));
		if (quiet)
			continue;
		if (fam == AF_INET || fam == AF_INET6)
			printf("%s %s %s/%d flags=%x\n", i->ifa_name,
			       fam == AF_INET ? "inet" : "inet6", buf,
			       prefix(i->ifa_netmask), i->ifa_flags);
		else
			printf("%s packet flags=%x\n", i->ifa_name, i->ifa_flags);
	}
	freeifaddrs(ifa);
	ni = if_nameindex();
	if (!ni) {
		printf("if_nameindex %s\n", strerrorname_np(errno));
		return -1;
	}
	for (struct if_nameindex *p = ni; p->if_index; p++, count++)
		if (!quiet)
			printf("index %u %s\n", p->if_index, p->if_name);
	if_freenameindex(ni);
	return count;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 0;

	if (!rounds)
		return list(0) < 0;
	for (long r = 0; r < rounds; r++) {
		int c = list(1);

		if (c < 0)
			return 1;
		if (r == 0 || r == rounds - 1)
			printf("round %ld entries %d\n", r, c);
	}
	return 0;
}
