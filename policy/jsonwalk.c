/* policy/jsonwalk.c: strict typed access to a located document: known keys
 * only, exact types, string lists and limit values, errors with locations. */
#include <cJSON.h>
#include <stdio.h>
#include <string.h>

#include "corral/policy.h"
#include "corral/util.h"

static const char *type_name(const cJSON *item)
{
	if (cJSON_IsObject(item))
		return "an object";
	if (cJSON_IsArray(item))
		return "an array";
	if (cJSON_IsString(item))
		return "a string";
	if (cJSON_IsNumber(item))
		return "a number";
	if (cJSON_IsTrue(item))
		return "true";
	if (cJSON_IsFalse(item))
		return "false";
	if (cJSON_IsNull(item))
		return "null";
	return "something else";
}

static int oom(const struct cr_jdoc *d)
{
	cr_errf(d->err, d->errlen, "%s: out of memory", d->file);
	return -ENOMEM;
}

int cr_jdoc_want_object(const struct cr_jdoc *d, const struct cJSON *item)
{
	if (!cJSON_IsObject(item))
		return cr_jdoc_fail(d, item, "expected an object, got %s",
				    type_name(item));
	return 0;
}

int cr_jdoc_check_keys(const struct cr_jdoc *d, const struct cJSON *item,
		       const char *const *known)
{
	const cJSON *c;

	if (cr_jdoc_want_object(d, item))
		return -EINVAL;
	for (c = item->child; c; c = c->next) {
		char list[256] = "";
		size_t i, used = 0;

		for (i = 0; known[i]; i++)
			if (!strcmp(c->string, known[i]))
				break;
		if (known[i])
			continue;
		for (i = 0; known[i] && used < sizeof(list); i++)
			used += (size_t)snprintf(list + used,
						 sizeof(list) - used, "%s%s",
						 i ? ", " : "", known[i]);
		return cr_jdoc_fail(d, c, "unknown key (expected one of: %s)",
				    list);
	}
	return 0;
}

const struct cJSON *cr_jdoc_get(const struct cJSON *obj, const char *key)
{
	const cJSON *c;

	if (!cJSON_IsObject(obj))
		return NULL;
	for (c = obj->child; c; c = c->next)
		if (c->string && !strcmp(c->string, key))
			return c;
	return NULL;
}

int cr_jdoc_want_bool(const struct cr_jdoc *d, const struct cJSON *item,
		      bool *out)
{
	if (!cJSON_IsBool(item))
		return cr_jdoc_fail(d, item, "expected true or false, got %s",
				    type_name(item));
	*out = cJSON_IsTrue(item);
	return 0;
}

int cr_jdoc_want_string(const struct cr_jdoc *d, const struct cJSON *item,
			char **out)
{
	*out = NULL;
	if (!cJSON_IsString(item) || !item->valuestring)
		return cr_jdoc_fail(d, item, "expected a string, got %s",
				    type_name(item));
	*out = strdup(item->valuestring);
	return *out ? 0 : oom(d);
}

static int add_checked(const struct cr_jdoc *d, const cJSON *c,
		       cr_jdoc_check_fn check, struct cr_strlist *out)
{
	char msg[384], *norm = NULL;
	int rc;

	if (!cJSON_IsString(c) || !c->valuestring)
		return cr_jdoc_fail(d, c, "expected a string, got %s",
				    type_name(c));
	if (check) {
		rc = check(c->valuestring, &norm, msg, sizeof(msg));
		if (rc == -ENOMEM)
			return oom(d);
		if (rc)
			return cr_jdoc_fail(d, c, "%s", msg);
	}
	if (!norm)
		norm = strdup(c->valuestring);
	if (!norm)
		return oom(d);
	out->v[out->n++] = norm;
	return 0;
}

int cr_jdoc_want_strlist(const struct cr_jdoc *d, const struct cJSON *item,
			 cr_jdoc_check_fn check, struct cr_strlist *out)
{
	const cJSON *c;
	size_t n = 0;
	int rc;

	out->v = NULL;
	out->n = 0;
	if (!cJSON_IsArray(item))
		return cr_jdoc_fail(d, item, "expected an array of strings, "
				    "got %s", type_name(item));
	for (c = item->child; c; c = c->next)
		n++;
	out->v = calloc(n + 1, sizeof(*out->v));
	if (!out->v)
		return oom(d);
	for (c = item->child; c; c = c->next) {
		rc = add_checked(d, c, check, out);
		if (rc) {
			cr_strlist_free(out);
			return rc;
		}
	}
	return 0;
}

int cr_jdoc_want_limit(const struct cr_jdoc *d, const struct cJSON *item,
		       enum cr_limit_id id, uint64_t *out)
{
	char msg[384];
	int rc;

	if (cJSON_IsNumber(item)) {
		char *raw cr_autofree = NULL;
		size_t len;
		const char *p = cr_jdoc_raw(d, item, &len);

		raw = strndup(p, len);
		if (!raw)
			return oom(d);
		rc = cr_limit_parse_token(id, raw, true, out, msg, sizeof(msg));
	} else if (cJSON_IsString(item) && item->valuestring) {
		rc = cr_limit_parse_token(id, item->valuestring, false, out,
					  msg, sizeof(msg));
	} else {
		static const char *const want[] = {
			[CR_KIND_TIME] = "a time such as \"30s\"",
			[CR_KIND_SIZE] = "a size such as \"512MiB\" or bytes",
			[CR_KIND_COUNT] = "a whole number",
		};

		return cr_jdoc_fail(d, item, "expected %s, got %s",
				    want[cr_limit_kind(id)], type_name(item));
	}
	if (rc)
		return cr_jdoc_fail(d, item, "%s", msg);
	return 0;
}

void cr_strlist_free(struct cr_strlist *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int cr_strlist_push(struct cr_strlist *l, const char *s)
{
	char **nv = realloc(l->v, (l->n + 2) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	l->v = nv;
	l->v[l->n] = strdup(s);
	if (!l->v[l->n])
		return -ENOMEM;
	l->n++;
	l->v[l->n] = NULL;
	return 0;
}
