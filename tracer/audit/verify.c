/* tracer/audit/verify.c: `corral audit verify FILE [--head H]`: walks every
 * run's chain in a trail and says where one breaks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>

#include "corral/digest.h"
#include "../tracer.h"

/* Exit statuses (docs/interface.md). */
#define V_INTACT 0	/* every chain whole and closed (and the head found) */
#define V_BROKEN 1	/* an edit, a gap, reordering, a foreign line, a head
			 * that is not the end of any chain */
#define V_OPEN 2	/* whole, but a chain lacks its final event: its tail
			 * was cut, or its run never finished */

struct chain {
	char *task;		/* owned */
	uint64_t next;		/* the seq expected next */
	char prev[CR_SHA256_HEX_LEN + 1];
	size_t first_line, last_line;
	bool closed;
};

struct verifier {
	const char *file;
	struct chain *c;
	size_t n;
	char **heads;		/* owned: the final line's hash of each closed chain */
	size_t nheads;
	size_t lines, chains;
};

static const char genesis[] =
	"0000000000000000000000000000000000000000000000000000000000000000";

static int broken(const struct verifier *v, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int broken(const struct verifier *v, size_t line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "corral audit verify: %s:%zu: ", v->file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return V_BROKEN;
}

static struct chain *find(struct verifier *v, const char *task)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->c[i].task, task))
			return &v->c[i];
	return NULL;
}

static bool is_hex64(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == CR_SHA256_HEX_LEN;
}

static int keep_head(struct verifier *v, const char *h)
{
	char **nv = realloc(v->heads, (v->nheads + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	v->heads = nv;
	v->heads[v->nheads] = strdup(h);
	if (!v->heads[v->nheads])
		return -ENOMEM;
	v->nheads++;
	return 0;
}

/* One line (without its newline). V_INTACT, V_BROKEN, or -ENOMEM. */
static int line(struct verifier *v, size_t no, const char *text, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(text, len), *task, *seq, *prev, *fin;
	char hash[CR_SHA256_HEX_LEN + 1];
	struct chain *c;
	uint64_t s;
	int rc = V_INTACT;

	if (!o || !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return broken(v, no, "not a JSON object: the line was edited or inserted");
	}
	task = cJSON_GetObjectItemCaseSensitive(o, "task_id");
	seq = cJSON_GetObjectItemCaseSensitive(o, "seq");
	prev = cJSON_GetObjectItemCaseSensitive(o, "prev");
	fin = cJSON_GetObjectItemCaseSensitive(o, "final");
	if (!cJSON_IsString(task) || !cJSON_IsNumber(seq) ||
	    !cJSON_IsString(prev) || !is_hex64(prev->valuestring) ||
	    seq->valuedouble < 0 || seq->valuedouble > 9007199254740992.0 ||
	    seq->valuedouble != (double)(uint64_t)seq->valuedouble) {
		rc = broken(v, no, "no task_id, seq and prev: not a chained event (inserted, or written by a corral without the chain)");
		goto out;
	}
	s = (uint64_t)seq->valuedouble;
	if (cr_sha256_hex(text, len, hash)) {
		rc = broken(v, no, "cannot hash the line");
		goto out;
	}
	c = find(v, task->valuestring);
	if (c && !c->closed && s == 0 && !strcmp(prev->valuestring, genesis)) {
		/* The same id run again while its chain was open: the run
		 * before was killed (or its tail cut) and its id was free
		 * again. That chain stays on record as unfinished (exit 2),
		 * and this line begins a new one; an event repeated or
		 * inserted inside a chain is still seen, by its prev. */
		size_t at = (size_t)(c - v->c);
		struct chain *nc = realloc(v->c, (v->n + 1) * sizeof(*nc));

		if (!nc) {
			rc = -ENOMEM;
			goto out;
		}
		v->c = nc;
		c = &v->c[at];
		v->c[v->n] = *c;
		v->c[v->n].task = strdup(c->task);
		if (!v->c[v->n].task) {
			rc = -ENOMEM;
			goto out;
		}
		v->n++;
		c->next = 0;
		memcpy(c->prev, genesis, sizeof(genesis));
		c->first_line = no;
		v->chains++;
	} else if (c && c->closed && s == 0) {
		/* The same id run again: a new chain. */
		c->closed = false;
		c->next = 0;
		memcpy(c->prev, genesis, sizeof(genesis));
		c->first_line = no;
		v->chains++;
	} else if (!c) {
		struct chain *nc = realloc(v->c, (v->n + 1) * sizeof(*nc));

		if (!nc) {
			rc = -ENOMEM;
			goto out;
		}
		v->c = nc;
		c = &v->c[v->n];
		memset(c, 0, sizeof(*c));
		c->task = strdup(task->valuestring);
		if (!c->task) {
			rc = -ENOMEM;
			goto out;
		}
		v->n++;
		memcpy(c->prev, genesis, sizeof(genesis));
		c->first_line = no;
		v->chains++;
		if (s != 0) {
			rc = broken(v, no, "task %s begins at seq %llu, not 0: its first %llu event(s) are missing",
				    task->valuestring, (unsigned long long)s,
				    (unsigned long long)s);
			goto out;
		}
	} else if (c->closed) {
		rc = broken(v, no, "task %s: seq %llu after its chain was closed at line %zu: an event was appended",
			    task->valuestring, (unsigned long long)s, c->last_line);
		goto out;
	}
	if (s != c->next) {
		if (s > c->next)
			rc = broken(v, no, "task %s: seq %llu where %llu was due: %llu event(s) missing after line %zu",
				    task->valuestring, (unsigned long long)s,
				    (unsigned long long)c->next,
				    (unsigned long long)(s - c->next), c->last_line);
		else
			rc = broken(v, no, "task %s: seq %llu where %llu was due: an event repeated or out of order",
				    task->valuestring, (unsigned long long)s,
				    (unsigned long long)c->next);
		goto out;
	}
	if (strcmp(prev->valuestring, c->prev)) {
		if (s == 0)
			rc = broken(v, no, "task %s: its first event's prev is not the genesis value: edited",
				    task->valuestring);
		else
			rc = broken(v, no, "task %s: seq %llu: prev does not match the hash of line %zu (seq %llu): that line was edited",
				    task->valuestring, (unsigned long long)s,
				    c->last_line, (unsigned long long)(s - 1));
		goto out;
	}
	memcpy(c->prev, hash, sizeof(hash));
	c->next = s + 1;
	c->last_line = no;
	if (cJSON_IsTrue(fin)) {
		c->closed = true;
		if (keep_head(v, hash))
			rc = -ENOMEM;
	}
out:
	cJSON_Delete(o);
	return rc;
}

static int usage(void)
{
	fprintf(stderr, "usage: corral audit verify FILE [--head HEAD]\n");
	return CR_EXIT_USAGE;
}

int cr_audit_verify_main(int argc, char **argv)
{
	struct verifier v = { 0 };
	const char *head = NULL;
	char *buf = NULL;
	size_t cap = 0, no = 0;
	ssize_t n;
	FILE *f;
	int rc = V_INTACT;

	if (argc < 3 || strcmp(argv[1], "verify"))
		return usage();
	v.file = argv[2];
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--head") && i + 1 < argc)
			head = argv[++i];
		else
			return usage();
	}
	if (head && !is_hex64(head)) {
		fprintf(stderr, "corral audit verify: --head %s: expected 64 lowercase hex digits\n",
			head);
		return CR_EXIT_USAGE;
	}
	f = fopen(v.file, "re");
	if (!f) {
		fprintf(stderr, "corral audit verify: %s: %s\n", v.file,
			strerror(errno));
		return CR_EXIT_USAGE;
	}
	while (rc == V_INTACT && (n = getline(&buf, &cap, f)) > 0) {
		no++;
		if (buf[n - 1] != '\n') {
			rc = broken(&v, no, "the last line has no newline: cut in the middle");
			break;
		}
		if (memchr(buf, 0, (size_t)n)) {
			rc = broken(&v, no, "a NUL byte: not written by corral");
			break;
		}
		rc = line(&v, no, buf, (size_t)n - 1);
	}
	if (!rc && ferror(f)) {
		fprintf(stderr, "corral audit verify: %s: read error\n", v.file);
		rc = CR_EXIT_USAGE;
	}
	fclose(f);
	free(buf);
	if (rc == -ENOMEM) {
		fprintf(stderr, "corral audit verify: out of memory\n");
		rc = CR_EXIT_USAGE;
	}
	if (rc == V_INTACT && head) {
		bool found = false;

		for (size_t i = 0; i < v.nheads && !found; i++)
			found = !strcmp(v.heads[i], head);
		if (!found) {
			fprintf(stderr, "corral audit verify: %s: no chain ends at head %s: the run's tail was cut or rewritten (or the head is another trail's)\n",
				v.file, head);
			rc = V_BROKEN;
		}
	}
	for (size_t i = 0; rc == V_INTACT && i < v.n; i++)
		if (!v.c[i].closed) {
			fprintf(stderr, "corral audit verify: %s:%zu: task %s: the chain ends at seq %llu without its final event: its tail was cut, or the run has not finished\n",
				v.file, v.c[i].last_line, v.c[i].task,
				(unsigned long long)(v.c[i].next ? v.c[i].next - 1 : 0));
			rc = V_OPEN;
		}
	if (rc == V_INTACT)
		printf("%s: intact: %zu event(s), %zu chain(s)%s\n", v.file, no,
		       v.chains, head ? ", the head matches" : "");
	for (size_t i = 0; i < v.n; i++)
		free(v.c[i].task);
	free(v.c);
	for (size_t i = 0; i < v.nheads; i++)
		free(v.heads[i]);
	free(v.heads);
	return rc;
}
