/* policy/request.c: the execution request: strict parsing, task ids, and the
 * check that a request only narrows what its class allows. */
#include <cJSON.h>
#include <string.h>

#include "corral/policy.h"
#include "corral/util.h"

#define TASK_ID_MAX 64

bool cr_task_id_valid(const char *id)
{
	size_t i;

	if (!id || !id[0] || id[0] == '.' || id[0] == '-')
		return false;
	for (i = 0; id[i]; i++) {
		char c = id[i];

		if (i >= TASK_ID_MAX)
			return false;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

static int oom(const struct cr_jdoc *d)
{
	cr_errf(d->err, d->errlen, "%s: out of memory", d->file);
	return -ENOMEM;
}

static int arg_check(const char *s, char **norm, char *msg, size_t msglen)
{
	(void)norm;
	if (s[0])
		return 0;
	cr_errf(msg, msglen, "empty argument");
	return -EINVAL;
}

static int out_check(const char *s, char **norm, char *msg, size_t msglen)
{
	(void)norm;
	return cr_output_pattern_check(s, msg, msglen);
}

static int dest_check(const char *s, char **norm, char *msg, size_t msglen)
{
	(void)norm;
	return cr_net_dest_validate(s, msg, msglen);
}

static int parse_command(const struct cr_jdoc *d, const cJSON *item,
			 struct cr_request *r)
{
	struct cr_strlist l;
	int rc;

	rc = cr_jdoc_want_strlist(d, item, arg_check, &l);
	if (rc)
		return rc;
	r->command = l.v;
	r->argc = l.n;
	if (!l.n)
		return cr_jdoc_fail(d, item, "is empty: a request needs a "
				    "command");
	return 0;
}

static int parse_rel(const struct cr_jdoc *d, const cJSON *item, char **out)
{
	char msg[256];
	int rc;

	rc = cr_jdoc_want_string(d, item, out);
	if (rc)
		return rc;
	if (cr_rel_path_check(*out, msg, sizeof(msg)))
		return cr_jdoc_fail(d, item, "%s", msg);
	return 0;
}

static int parse_input(const struct cr_jdoc *d, const cJSON *item,
		       struct cr_input *in)
{
	static const char *const keys[] = { "from", "to", "extract", NULL };
	const cJSON *from, *to, *extract;
	int rc;

	rc = cr_jdoc_check_keys(d, item, keys);
	if (rc)
		return rc;
	from = cr_jdoc_get(item, "from");
	to = cr_jdoc_get(item, "to");
	extract = cr_jdoc_get(item, "extract");
	if (!from)
		return cr_jdoc_fail(d, item, "missing \"from\"");
	if (!to)
		return cr_jdoc_fail(d, item, "missing \"to\"");
	rc = cr_jdoc_want_string(d, from, &in->from);
	if (rc)
		return rc;
	if (!in->from[0])
		return cr_jdoc_fail(d, from, "the path is empty");
	rc = parse_rel(d, to, &in->to);
	if (rc)
		return rc;
	if (extract)
		return cr_jdoc_want_bool(d, extract, &in->extract);
	return 0;
}

static int parse_inputs(const struct cr_jdoc *d, const cJSON *item,
			struct cr_request *r)
{
	const cJSON *c;
	size_t n = 0;
	int rc;

	if (!cJSON_IsArray(item))
		return cr_jdoc_fail(d, item, "expected an array of "
				    "{\"from\", \"to\"} objects");
	for (c = item->child; c; c = c->next)
		n++;
	r->inputs = calloc(n ? n : 1, sizeof(*r->inputs));
	if (!r->inputs)
		return oom(d);
	for (c = item->child; c; c = c->next) {
		rc = parse_input(d, c, &r->inputs[r->ninputs++]);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_env(const struct cr_jdoc *d, const cJSON *item,
		     struct cr_request *r)
{
	const cJSON *c;
	size_t n = 0;
	int rc;

	rc = cr_jdoc_want_object(d, item);
	if (rc)
		return rc;
	for (c = item->child; c; c = c->next)
		n++;
	r->env = calloc(n ? n : 1, sizeof(*r->env));
	if (!r->env)
		return oom(d);
	for (c = item->child; c; c = c->next) {
		struct cr_env_pair *e = &r->env[r->nenv++];
		char q[96];

		if (!cr_env_name_valid(c->string))
			return cr_jdoc_fail(d, c, "%s is not a valid variable "
					    "name ([A-Za-z_][A-Za-z0-9_]*)",
					    cr_str_quote(c->string, q,
							 sizeof(q)));
		e->name = strdup(c->string);
		if (!e->name)
			return oom(d);
		rc = cr_jdoc_want_string(d, c, &e->value);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_limits(const struct cr_jdoc *d, const cJSON *item,
			struct cr_request *r)
{
	const char *names[CR_LIM__COUNT + 1];
	const cJSON *c;
	int id, rc;

	for (id = 0; id < CR_LIM__COUNT; id++)
		names[id] = cr_limit_name(id);
	names[CR_LIM__COUNT] = NULL;
	rc = cr_jdoc_check_keys(d, item, names);
	if (rc)
		return rc;
	for (c = item->child; c; c = c->next) {
		id = cr_limit_lookup(c->string);
		rc = cr_jdoc_want_limit(d, c, id, &r->limits.v[id]);
		if (rc)
			return rc;
		r->limits_set |= 1u << id;
	}
	return 0;
}

static int parse_request(const struct cr_jdoc *d, struct cr_request *r)
{
	static const char *const keys[] = {
		"id", "command", "cwd", "class", "inputs", "outputs", "env",
		"network", "limits", "stdin", NULL
	};
	const cJSON *root = d->root, *c;
	char q[96];
	int rc;

	rc = cr_jdoc_check_keys(d, root, keys);
	if (rc)
		return rc;
	if ((c = cr_jdoc_get(root, "id"))) {
		if ((rc = cr_jdoc_want_string(d, c, &r->id)))
			return rc;
		if (!cr_task_id_valid(r->id))
			return cr_jdoc_fail(d, c, "%s is not a valid task id "
					    "(1-64 of [A-Za-z0-9._-], not "
					    "starting with '.' or '-')",
					    cr_str_quote(r->id, q, sizeof(q)));
	}
	c = cr_jdoc_get(root, "command");
	if (!c)
		return cr_jdoc_fail(d, root, "missing \"command\"");
	if ((rc = parse_command(d, c, r)))
		return rc;
	if ((c = cr_jdoc_get(root, "cwd")) && (rc = parse_rel(d, c, &r->cwd)))
		return rc;
	if ((c = cr_jdoc_get(root, "class"))) {
		if ((rc = cr_jdoc_want_string(d, c, &r->class_name)))
			return rc;
		if (!cr_class_name_valid(r->class_name))
			return cr_jdoc_fail(d, c, "%s is not a valid class "
					    "name ([A-Za-z0-9._-], 1-64 "
					    "characters)",
					    cr_str_quote(r->class_name, q,
							 sizeof(q)));
	}
	if ((c = cr_jdoc_get(root, "inputs")) && (rc = parse_inputs(d, c, r)))
		return rc;
	c = cr_jdoc_get(root, "outputs");
	if (c)
		rc = cr_jdoc_want_strlist(d, c, out_check, &r->outputs);
	else
		rc = (r->outputs.v = calloc(1, sizeof(char *))) ? 0 : oom(d);
	if (rc)
		return rc;
	if ((c = cr_jdoc_get(root, "env")) && (rc = parse_env(d, c, r)))
		return rc;
	c = cr_jdoc_get(root, "network");
	if (c)
		rc = cr_jdoc_want_strlist(d, c, dest_check, &r->network);
	else
		rc = (r->network.v = calloc(1, sizeof(char *))) ? 0 : oom(d);
	if (rc)
		return rc;
	if ((c = cr_jdoc_get(root, "limits")) && (rc = parse_limits(d, c, r)))
		return rc;
	if ((c = cr_jdoc_get(root, "stdin"))) {
		if ((rc = cr_jdoc_want_string(d, c, &r->stdin_text)))
			return rc;
		r->stdin_len = strlen(r->stdin_text);
	}
	return 0;
}

static void request_freep(struct cr_request **r)
{
	cr_request_free(*r);
}

int cr_request_parse(const char *text, size_t len, const char *filename,
		     struct cr_request **out, char *err, size_t errlen)
{
	struct cr_jdoc d cr_autojdoc = { 0 };
	struct cr_request *r __attribute__((cleanup(request_freep))) = NULL;
	int rc;

	*out = NULL;
	rc = cr_jdoc_open(&d, text, len, filename ? filename : "(request)",
			  CR_REQUEST_MAX_BYTES, err, errlen);
	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r) {
		cr_errf(err, errlen, "%s: out of memory", d.file);
		return -ENOMEM;
	}
	rc = parse_request(&d, r);
	if (rc)
		return rc;
	*out = cr_steal_ptr(&r);
	return 0;
}

void cr_request_free(struct cr_request *r)
{
	size_t i;

	if (!r)
		return;
	free(r->id);
	for (i = 0; i < r->argc; i++)
		free(r->command[i]);
	free(r->command);
	free(r->cwd);
	free(r->class_name);
	for (i = 0; i < r->ninputs; i++) {
		free(r->inputs[i].from);
		free(r->inputs[i].to);
	}
	free(r->inputs);
	cr_strlist_free(&r->outputs);
	for (i = 0; i < r->nenv; i++) {
		free(r->env[i].name);
		free(r->env[i].value);
	}
	free(r->env);
	cr_strlist_free(&r->network);
	free(r->stdin_text);
	free(r);
}

/* Destinations are compared as written, spaces around them aside; finer
 * matching (a CIDR containing an address, a port inside a range) belongs
 * with the network layer. */
static bool same_dest(const char *a, const char *b)
{
	size_t la, lb;

	while (*a == ' ' || *a == '\t')
		a++;
	while (*b == ' ' || *b == '\t')
		b++;
	la = strlen(a);
	lb = strlen(b);
	while (la && (a[la - 1] == ' ' || a[la - 1] == '\t'))
		la--;
	while (lb && (b[lb - 1] == ' ' || b[lb - 1] == '\t'))
		lb--;
	return la == lb && !memcmp(a, b, la);
}

int cr_request_narrows(const struct cr_request *r, const struct cr_class *c,
		       char *err, size_t errlen)
{
	size_t i, j;
	int id;

	if (!r || !c) {
		cr_errf(err, errlen, "no request or no class");
		return -EINVAL;
	}
	for (id = 0; id < CR_LIM__COUNT; id++) {
		char asked[32], allowed[32];

		if (!(r->limits_set & (1u << id)) ||
		    r->limits.v[id] <= c->limits.v[id])
			continue;
		cr_limit_format(id, r->limits.v[id], asked, sizeof(asked));
		cr_limit_format(id, c->limits.v[id], allowed, sizeof(allowed));
		cr_errf(err, errlen, "limits.%s: %s is more than the class "
			"allows (%s)", cr_limit_name(id), asked, allowed);
		return -EPERM;
	}
	for (i = 0; i < r->network.n; i++) {
		char q[96];

		for (j = 0; j < c->net_allow.n; j++)
			if (same_dest(r->network.v[i], c->net_allow.v[j]))
				break;
		if (j < c->net_allow.n)
			continue;
		cr_errf(err, errlen, "network[%zu]: %s is not in class "
			"\"%s\"'s net.allow%s", i,
			cr_str_quote(r->network.v[i], q, sizeof(q)), c->name,
			c->net_allow.n ? "" : " (which is empty)");
		return -EPERM;
	}
	return 0;
}
