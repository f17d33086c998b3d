/* include/corral/dnsmsg.h: DNS messages as corral's responder reads and
 * writes them: bounded, pure parsing and building, no syscalls. */
#ifndef CORRAL_DNSMSG_H
#define CORRAL_DNSMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corral/netmatch.h"

#define CR_DNS_MAX 1232		/* largest message handled (EDNS safe size) */
#define CR_DNS_MAX_ADDRS 16	/* addresses kept from one answer */

enum { CR_DNS_OK = 0, CR_DNS_FORMERR = 1, CR_DNS_SERVFAIL = 2,
       CR_DNS_NXDOMAIN = 3, CR_DNS_NOTIMP = 4, CR_DNS_REFUSED = 5 };
enum { CR_DNS_A = 1, CR_DNS_AAAA = 28 };

struct cr_dns_question {
	uint16_t id, qtype, qclass;
	bool rd;
	char name[CR_NET_NAME_MAX];	/* lower case, dotted, no final dot */
	size_t end;			/* offset just past the question */
	/* A byte no allowed name has (answered NXDOMAIN): name shows it as
	 * \DDD, cut short with "..." (name_cut) where the escapes leave no
	 * room. */
	bool bad_name, name_cut;
};

/* A query: header, exactly one question, no compression, labels of
 * letters, digits, '-' and '_' only (a name that could never be on the
 * allow list is NXDOMAIN, never forwarded; bad_name says so, with the
 * name escaped for the record). Returns the rcode to answer
 * (CR_DNS_OK when q is complete), or -1 for a message not to answer. */
int cr_dns_parse_query(const uint8_t *m, size_t len, struct cr_dns_question *q);

/* Our answer: the question bytes as asked, then A/AAAA records of qtype
 * whose owner is a pointer to the question. Returns its length (at most
 * CR_DNS_MAX; out must hold that many bytes). */
size_t cr_dns_build_answer(uint8_t *out, uint16_t id, bool rd,
			   const uint8_t *question, size_t qlen, int rcode,
			   uint16_t qtype, const uint8_t (*addrs)[16],
			   size_t naddrs, uint32_t ttl);

struct cr_dns_answer {
	int rcode;
	size_t naddrs;
	uint8_t addrs[CR_DNS_MAX_ADDRS][16];	/* 4 bytes used for A */
	uint32_t ttl;				/* smallest, capped */
};

/* An upstream's answer to our question (same id, same question bytes up to
 * ASCII case): its rcode and the addresses of type qtype in its answer
 * section (any owner: the CNAME chain is flattened). 0, or -EINVAL when it
 * is not an answer to that question or is malformed. */
int cr_dns_parse_answer(const uint8_t *m, size_t len, uint16_t id,
			const uint8_t *question, size_t qlen, uint16_t qtype,
			uint32_t ttl_cap, struct cr_dns_answer *a);

#endif
