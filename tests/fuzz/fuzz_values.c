/* tests/fuzz/fuzz_values.c: libFuzzer target: limit values and network
 * destinations as given on the command line; formats must parse back. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corral/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum cr_limit_id id;
	char *text, err[512], buf[64];
	uint64_t v, back;

	if (!size || size > 4096)
		return 0;
	id = (enum cr_limit_id)(data[0] % CR_LIM__COUNT);
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (!cr_limit_parse_value(id, text, &v, err, sizeof(err))) {
		cr_limit_format(id, v, buf, sizeof(buf));
		if (cr_limit_parse_value(id, buf, &back, err, sizeof(err)) ||
		    back != v)
			abort();
	}
	(void)cr_limit_parse_token(id, text, true, &v, err, sizeof(err));
	(void)cr_net_dest_validate(text, err, sizeof(err));
	{
		char *norm = NULL, *again = NULL;

		/* Normal forms are fixed points. */
		if (!cr_path_normalise(text, &norm, err, sizeof(err)) &&
		    (cr_path_normalise(norm, &again, err, sizeof(err)) ||
		     strcmp(again, norm)))
			abort();
		free(norm);
		free(again);
	}
	free(text);
	return 0;
}
