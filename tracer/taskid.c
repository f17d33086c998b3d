/* tracer/taskid.c: fresh task identities: 128 random bits from the kernel,
 * written as 32 hex digits. */
#include <stdio.h>
#include <sys/random.h>

#include "tracer.h"

char *cr_task_id_new(void)
{
	unsigned char r[16];
	char *id;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return NULL;
	id = malloc(sizeof(r) * 2 + 1);
	if (!id)
		return NULL;
	for (size_t i = 0; i < sizeof(r); i++)
		sprintf(id + i * 2, "%02x", r[i]);
	return id;
}
