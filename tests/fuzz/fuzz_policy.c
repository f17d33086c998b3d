/* tests/fuzz/fuzz_policy.c: libFuzzer target: any bytes into the policy
 * parser; what it accepts must print and parse back to the same text. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corral/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The locator and cJSON disagreeing about a document cJSON accepted. */
#define INTERNAL "fuzz.json:1: (document): internal error"

/* Every refusal reads "fuzz.json:LINE: PATH: what". */
static void check_message(const char *err)
{
	const char *p = err + strlen("fuzz.json:");

	if (strncmp(err, "fuzz.json:", strlen("fuzz.json:")))
		abort();
	if (*p < '1' || *p > '9')
		abort();
	while (*p >= '0' && *p <= '9')
		p++;
	if (p[0] != ':' || p[1] != ' ' || !strstr(p + 2, ": "))
		abort();
	if (!strncmp(err, INTERNAL, strlen(INTERNAL)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cr_policy *p = NULL, *q = NULL;
	char err[1024], *a, *b;
	size_t i;
	int rc;

	rc = cr_policy_parse((const char *)data, size, "fuzz.json", &p, err,
			     sizeof(err));
	if (rc) {
		if (p || (rc != -EINVAL && rc != -ENOMEM))
			abort();
		if (rc == -EINVAL)
			check_message(err);
		return 0;
	}
	for (i = 0; i < p->nclasses; i++)
		if (cr_policy_class(p, p->classes[i].name) != &p->classes[i])
			abort();
	a = cr_policy_to_json(p);
	if (!a)
		abort();
	rc = cr_policy_parse(a, strlen(a), "printed.json", &q, err,
			     sizeof(err));
	if (rc)
		abort();
	b = cr_policy_to_json(q);
	if (!b || strcmp(a, b))
		abort();
	free(a);
	free(b);
	cr_policy_free(p);
	cr_policy_free(q);
	return 0;
}
