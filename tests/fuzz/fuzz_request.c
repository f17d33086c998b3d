/* tests/fuzz/fuzz_request.c: libFuzzer target: any bytes into the request
 * parser, then the narrowing check against the built-in default class. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corral/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The locator and cJSON disagreeing about a document cJSON accepted. */
#define INTERNAL "fuzz.json:1: (document): internal error"

static const struct cr_class *default_class(void)
{
	static struct cr_policy *p;
	char err[512];

	if (!p && cr_policy_parse(cr_default_policy_json,
				  strlen(cr_default_policy_json), "default",
				  &p, err, sizeof(err)))
		abort();
	return cr_policy_class(p, "default");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct cr_class *c = default_class();
	struct cr_request *r = NULL;
	char err[1024];
	size_t i;
	int rc;

	rc = cr_request_parse((const char *)data, size, "fuzz.json", &r, err,
			      sizeof(err));
	if (rc) {
		if (r || (rc != -EINVAL && rc != -ENOMEM))
			abort();
		if (rc == -EINVAL && (strncmp(err, "fuzz.json:", 10) ||
				      !strncmp(err, INTERNAL, strlen(INTERNAL))))
			abort();
		return 0;
	}
	/* What was accepted holds the promises the header makes. */
	if (!r->command || r->argc < 1 || r->command[r->argc])
		abort();
	for (i = 0; i < r->argc; i++)
		if (!r->command[i][0])
			abort();
	if (r->id && !cr_task_id_valid(r->id))
		abort();
	if (r->cwd && cr_rel_path_check(r->cwd, err, sizeof(err)))
		abort();
	for (i = 0; i < r->ninputs; i++)
		if (!r->inputs[i].from[0] ||
		    cr_rel_path_check(r->inputs[i].to, err, sizeof(err)))
			abort();
	for (i = 0; i < r->network.n; i++)
		if (cr_net_dest_validate(r->network.v[i], err, sizeof(err)))
			abort();
	for (i = 0; i < r->nenv; i++)
		if (!cr_env_name_valid(r->env[i].name))
			abort();
	if (r->limits_set >> CR_LIM__COUNT)
		abort();
	rc = cr_request_narrows(r, c, err, sizeof(err));
	if (rc && rc != -EPERM)
		abort();
	if (!rc && r->network.n)
		abort();	/* the default class allows no destination */
	cr_request_free(r);
	return 0;
}
