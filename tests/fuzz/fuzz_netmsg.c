/* tests/fuzz/fuzz_netmsg.c: libFuzzer target: the bytes the network layer
 * parses from a hostile program or server: DNS queries and answers, TLS
 * ClientHellos, and allow-list destinations with the matcher over them. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corral/dnsmsg.h"
#include "corral/netmatch.h"
#include "corral/policy.h"
#include "corral/tlssni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cr_dns_question q;
	struct cr_dns_answer a;
	uint8_t out[CR_DNS_MAX], *copy;
	char name[CR_NET_NAME_MAX], err[256];

	if (!size || size > 20000)
		return 0;
	/* Exact-size copy: any read past the end trips ASan. */
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	switch (data[0] % 3) {
	case 0:
		if (cr_dns_parse_query(copy + 1, size - 1, &q) == CR_DNS_OK) {
			size_t n = cr_dns_build_answer(out, q.id, q.rd, copy + 13,
						       q.end - 12, CR_DNS_OK,
						       q.qtype, NULL, 0, 0);

			if (n > CR_DNS_MAX ||
			    cr_dns_parse_answer(out, n, q.id, copy + 13,
						q.end - 12, q.qtype, 300, &a))
				abort();	/* our own answer must parse */
		}
		if (size > 14)
			(void)cr_dns_parse_answer(copy + 1, size - 1,
						  (uint16_t)(data[1] << 8 | data[2]),
						  copy + 13, size > 40 ? 20 : 1,
						  data[3] & 1 ? CR_DNS_A : CR_DNS_AAAA,
						  300, &a);
		break;
	case 1:
		if (cr_tls_sni(copy + 1, size - 1, name, sizeof(name)) == 0 &&
		    strlen(name) >= sizeof(name))
			abort();
		break;
	default: {
		char *text = malloc(size);
		struct cr_netrule r;

		if (!text)
			break;
		memcpy(text, data + 1, size - 1);
		text[size - 1] = '\0';
		/* What the validator accepts, the matcher must parse. */
		if (!cr_net_dest_validate(text, err, sizeof(err))) {
			uint8_t addr[16] = { 1, 2, 3, 4 };

			if (cr_netrule_parse(text, &r))
				abort();
			(void)cr_netrules_allow_addr(&r, 1, AF_INET, addr, 80);
			(void)cr_netrules_allow_name(&r, 1, "example.com");
		}
		free(text);
		break;
	}
	}
	free(copy);
	return 0;
}
