/* tracer/audit.c: the audit trail: one JSON line per event, appended to a
 * file outside the sandbox; decisions are logged, contents never. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cJSON.h>

#include "tracer.h"

/* Bounded: past this many deny events a run's further denials are only
 * counted, and the cleanup event carries the count. */
#define CR_AUDIT_MAX_DENIES 1000

int cr_audit_open(struct cr_run *run)
{
	run->audit_fd = -1;
	if (!run->cfg->audit_file)
		return 0;
	/* O_APPEND: concurrent runs sharing one trail never interleave
	 * inside a line, because each event is a single write. */
	run->audit_fd = open(run->cfg->audit_file,
			     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			     0600);
	return run->audit_fd < 0 ? -errno : 0;
}

static void timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* Takes ownership of fields (a cJSON object, may be NULL). */
void cr_audit_event(struct cr_run *run, const char *event, void *fields)
{
	cJSON *f = fields, *o;
	char ts[64], *text;
	size_t len;

	if (run->audit_fd < 0 ||
	    (!strcmp(event, "deny") && ++run->audit_denies > CR_AUDIT_MAX_DENIES)) {
		cJSON_Delete(f);
		return;
	}
	timestamp(ts, sizeof(ts));
	/* The common keys go first, for readers that grep. */
	o = cJSON_CreateObject();
	if (!o) {
		cJSON_Delete(f);
		return;
	}
	cJSON_AddStringToObject(o, "ts", ts);
	cJSON_AddStringToObject(o, "task_id", run->cfg->task_id);
	cJSON_AddStringToObject(o, "event", event);
	while (f && f->child) {
		cJSON *item = cJSON_DetachItemViaPointer(f, f->child);
		const char *k = item->string;

		item->string = NULL;
		cJSON_AddItemToObject(o, k, item);
		free((void *)k);
	}
	cJSON_Delete(f);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return;
	len = strlen(text);
	text[len] = '\n';	/* replaces the NUL: one write per line */
	if (write(run->audit_fd, text, len + 1) < 0)
		fprintf(stderr, "corral: audit write failed: %s\n", strerror(errno));
	free(text);
}

void cr_audit_close(struct cr_run *run)
{
	if (run->audit_fd >= 0)
		close(run->audit_fd);
	run->audit_fd = -1;
}
