/* policy/policy.c: the policy document: strict parsing into an immutable
 * cr_policy, class lookup, and the normalised JSON `policy check` prints. */
#include <cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "corral/policy.h"
#include "corral/util.h"

#define VERSION_MAX 128
#define CLASS_NAME_MAX 64
#define ENV_NAME_MAX 128
/* Counts up to this are printed as JSON numbers, larger ones as strings,
 * so that the printed policy parses again. */
#define JSON_INT_MAX (UINT64_C(1) << 53)

bool cr_env_name_valid(const char *name)
{
	size_t i;

	if (!name || !name[0])
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= ENV_NAME_MAX)
			return false;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      c == '_' || (i && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

bool cr_class_name_valid(const char *name)
{
	size_t i;

	if (!name || !name[0])
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= CLASS_NAME_MAX)
			return false;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* Roots are compared as strings by the tracer, so each has exactly one
 * spelling: no "." or ".." (which would also let "/usr/.." name "/"), no
 * "//", no trailing '/'. Nothing here touches the file system. */
int cr_path_normalise(const char *in, char **out, char *msg, size_t msglen)
{
	size_t n, i, start = 1;
	char q[96];

	*out = NULL;
	cr_str_quote(in, q, sizeof(q));
	if (!in || in[0] != '/') {
		cr_errf(msg, msglen, "%s is not an absolute path", q);
		return -EINVAL;
	}
	n = strlen(in);
	while (n > 1 && in[n - 1] == '/')
		n--;
	if (n >= PATH_MAX) {
		cr_errf(msg, msglen, "%s is longer than %d bytes", q,
			PATH_MAX - 1);
		return -EINVAL;
	}
	for (i = 1; n > 1 && i <= n; i++) {
		size_t clen;

		if (i < n && in[i] != '/')
			continue;
		clen = i - start;
		if (!clen) {
			cr_errf(msg, msglen, "%s has an empty component "
				"(\"//\")", q);
			return -EINVAL;
		}
		if ((clen == 1 && in[start] == '.') ||
		    (clen == 2 && in[start] == '.' && in[start + 1] == '.')) {
			cr_errf(msg, msglen, "%s has a \"%.*s\" component "
				"(write the path without it)", q, (int)clen,
				in + start);
			return -EINVAL;
		}
		start = i + 1;
	}
	*out = strndup(in, n);
	return *out ? 0 : -ENOMEM;
}

int cr_rel_path_check(const char *p, char *msg, size_t msglen)
{
	size_t i, start = 0;
	char q[96];

	cr_str_quote(p, q, sizeof(q));
	if (!p || !p[0]) {
		cr_errf(msg, msglen, "the path is empty");
		return -EINVAL;
	}
	if (p[0] == '/') {
		cr_errf(msg, msglen, "%s is absolute; write it relative to the "
			"workspace", q);
		return -EINVAL;
	}
	for (i = 0;; i++) {
		if (p[i] && p[i] != '/')
			continue;
		if (i - start == 2 && p[start] == '.' && p[start + 1] == '.') {
			cr_errf(msg, msglen, "%s has a \"..\" component; it "
				"must stay inside the workspace", q);
			return -EINVAL;
		}
		if (!p[i])
			break;
		start = i + 1;
	}
	return 0;
}

/* ---- Parsing ---- */

static int path_check(const char *s, char **norm, char *msg, size_t msglen)
{
	return cr_path_normalise(s, norm, msg, msglen);
}

static int dest_check(const char *s, char **norm, char *msg, size_t msglen)
{
	(void)norm;
	return cr_net_dest_validate(s, msg, msglen);
}

static int env_check(const char *s, char **norm, char *msg, size_t msglen)
{
	char q[96];

	(void)norm;
	if (cr_env_name_valid(s))
		return 0;
	cr_errf(msg, msglen, "%s is not a valid variable name "
		"([A-Za-z_][A-Za-z0-9_]*, at most %d)",
		cr_str_quote(s, q, sizeof(q)), ENV_NAME_MAX);
	return -EINVAL;
}

/* Lists left out of a class are empty, never NULL: every list is a
 * NULL-terminated array. */
static int empty_list(const struct cr_jdoc *d, struct cr_strlist *l)
{
	l->n = 0;
	l->v = calloc(1, sizeof(*l->v));
	if (l->v)
		return 0;
	cr_errf(d->err, d->errlen, "%s: out of memory", d->file);
	return -ENOMEM;
}

static int opt_list(const struct cr_jdoc *d, const cJSON *obj,
		    const char *key, cr_jdoc_check_fn check,
		    struct cr_strlist *out)
{
	const cJSON *item = cr_jdoc_get(obj, key);

	if (!item)
		return empty_list(d, out);
	return cr_jdoc_want_strlist(d, item, check, out);
}

/* Values are judged in the order they are written, then what is missing,
 * so the first error reported is the first one in the file. */
static int parse_limits(const struct cr_jdoc *d, const cJSON *item,
			struct cr_limits *out)
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
		rc = cr_jdoc_want_limit(d, c, id, &out->v[id]);
		if (rc)
			return rc;
	}
	for (id = 0; id < CR_LIM__COUNT; id++)
		if (!cr_jdoc_get(item, names[id]))
			return cr_jdoc_fail(d, item, "missing \"%s\" (every "
					    "class states all ten limits)",
					    names[id]);
	return 0;
}

/* The names of every profile, for an error message. */
static const char *known_profiles(void)
{
	static char buf[256];
	const struct cr_profile *const *all = cr_profile_all();
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; all[i] && o < sizeof(buf); i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s",
				      i ? ", " : "", all[i]->name);
	return buf;
}

static int parse_class(const struct cr_jdoc *d, const cJSON *item,
		       struct cr_class *c)
{
	static const char *const class_keys[] = {
		"fs", "net", "limits", "env", "syscalls", "landlock", NULL
	};
	static const char *const fs_keys[] = {
		"read", "write", "exec", "deny", "hide", "strict-metadata",
		"fast-open", NULL
	};
	static const char *const net_keys[] = { "allow", NULL };
	const cJSON *fs, *net, *limits, *hide, *sys, *ll, *strict, *fopen_;
	char q[96];
	int rc;

	c->name = strdup(item->string);
	if (!c->name) {
		cr_errf(d->err, d->errlen, "%s: out of memory", d->file);
		return -ENOMEM;
	}
	if (!cr_class_name_valid(c->name))
		return cr_jdoc_fail(d, item, "%s is not a valid class name "
				    "([A-Za-z0-9._-], 1-%d characters)",
				    cr_str_quote(c->name, q, sizeof(q)),
				    CLASS_NAME_MAX);
	rc = cr_jdoc_check_keys(d, item, class_keys);
	if (rc)
		return rc;

	fs = cr_jdoc_get(item, "fs");
	if (fs && (rc = cr_jdoc_check_keys(d, fs, fs_keys)))
		return rc;
	if ((rc = opt_list(d, fs, "read", path_check, &c->fs_read)) ||
	    (rc = opt_list(d, fs, "write", path_check, &c->fs_write)) ||
	    (rc = opt_list(d, fs, "exec", path_check, &c->fs_exec)) ||
	    (rc = opt_list(d, fs, "deny", path_check, &c->fs_deny)))
		return rc;
	hide = cr_jdoc_get(fs, "hide");
	if (hide && (rc = cr_jdoc_want_bool(d, hide, &c->fs_hide)))
		return rc;
	strict = cr_jdoc_get(fs, "strict-metadata");
	if (strict &&
	    (rc = cr_jdoc_want_bool(d, strict, &c->fs_strict_metadata)))
		return rc;
	fopen_ = cr_jdoc_get(fs, "fast-open");
	if (fopen_ && (rc = cr_jdoc_want_bool(d, fopen_, &c->fs_fast_open)))
		return rc;
	ll = cr_jdoc_get(item, "landlock");
	if (ll) {
		cr_autofree char *mode = NULL;
		int m;

		rc = cr_jdoc_want_string(d, ll, &mode);
		if (rc)
			return rc;
		m = cr_landlock_mode_parse(mode);
		if (m < 0)
			return cr_jdoc_fail(d, ll, "%s is not a Landlock mode "
					    "(auto, off, require)",
					    cr_str_quote(mode, q, sizeof(q)));
		c->landlock = (enum cr_landlock_mode)m;
	}

	net = cr_jdoc_get(item, "net");
	if (net && (rc = cr_jdoc_check_keys(d, net, net_keys)))
		return rc;
	if ((rc = opt_list(d, net, "allow", dest_check, &c->net_allow)))
		return rc;

	limits = cr_jdoc_get(item, "limits");
	if (!limits)
		return cr_jdoc_fail(d, item, "missing \"limits\" (every class "
				    "states all ten limits)");
	rc = parse_limits(d, limits, &c->limits);
	if (rc)
		return rc;
	/* A class that opens destinations but grants no connection or no
	 * byte would end every run at its first connection: a mistake, so
	 * refused here rather than discovered at run time. */
	if (c->net_allow.n) {
		static const enum cr_limit_id need[] = {
			CR_LIM_NET_CONNECTIONS, CR_LIM_NET_BYTES,
		};

		for (size_t i = 0; i < CR_ARRAY_SIZE(need); i++)
			if (!c->limits.v[need[i]])
				return cr_jdoc_fail(d, cr_jdoc_get(limits,
						    cr_limit_name(need[i])),
						    "is 0 but net.allow names "
						    "destinations: the first "
						    "connection would end the "
						    "run");
	}

	rc = opt_list(d, item, "env", env_check, &c->env);
	if (rc)
		return rc;

	/* The syscall profile is named, never defined inline: profiles are
	 * versioned tables reviewed with the code (policy/profile.c). */
	c->profile = cr_profile_default();
	sys = cr_jdoc_get(item, "syscalls");
	if (sys) {
		cr_autofree char *name = NULL;

		rc = cr_jdoc_want_string(d, sys, &name);
		if (rc)
			return rc;
		c->profile = cr_profile_find(name);
		if (!c->profile)
			return cr_jdoc_fail(d, sys, "%s is not a syscall "
					    "profile (known: %s)",
					    cr_str_quote(name, q, sizeof(q)),
					    known_profiles());
	}
	return 0;
}

static int parse_version(const struct cr_jdoc *d, const cJSON *item,
			 char **out)
{
	size_t i;
	int rc;

	rc = cr_jdoc_want_string(d, item, out);
	if (rc)
		return rc;
	for (i = 0; (*out)[i]; i++)
		if ((*out)[i] < 0x20 || (*out)[i] > 0x7e)
			break;
	if (!i || (*out)[i] || i > VERSION_MAX)
		return cr_jdoc_fail(d, item, "must be 1-%d printable ASCII "
				    "characters", VERSION_MAX);
	return 0;
}

static int parse_policy(const struct cr_jdoc *d, struct cr_policy *p)
{
	static const char *const top_keys[] = { "version", "classes", NULL };
	const cJSON *version, *classes, *c;
	size_t n = 0;
	int rc;

	rc = cr_jdoc_check_keys(d, d->root, top_keys);
	if (rc)
		return rc;
	version = cr_jdoc_get(d->root, "version");
	if (!version)
		return cr_jdoc_fail(d, d->root, "missing \"version\"");
	rc = parse_version(d, version, &p->version);
	if (rc)
		return rc;
	classes = cr_jdoc_get(d->root, "classes");
	if (!classes)
		return cr_jdoc_fail(d, d->root, "missing \"classes\"");
	rc = cr_jdoc_want_object(d, classes);
	if (rc)
		return rc;
	for (c = classes->child; c; c = c->next)
		n++;
	if (!n)
		return cr_jdoc_fail(d, classes, "no classes (a policy needs at "
				    "least one)");
	p->classes = calloc(n, sizeof(*p->classes));
	if (!p->classes) {
		cr_errf(d->err, d->errlen, "%s: out of memory", d->file);
		return -ENOMEM;
	}
	for (c = classes->child; c; c = c->next) {
		/* Counted first, so a half-parsed class is freed too. */
		rc = parse_class(d, c, &p->classes[p->nclasses++]);
		if (rc)
			return rc;
	}
	return 0;
}

static void policy_freep(struct cr_policy **p)
{
	cr_policy_free(*p);
}

int cr_policy_parse(const char *text, size_t len, const char *filename,
		    struct cr_policy **out, char *err, size_t errlen)
{
	struct cr_jdoc d cr_autojdoc = { 0 };
	struct cr_policy *p __attribute__((cleanup(policy_freep))) = NULL;
	int rc;

	*out = NULL;
	rc = cr_jdoc_open(&d, text, len, filename ? filename : "(policy)",
			  CR_POLICY_MAX_BYTES, err, errlen);
	if (rc)
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p) {
		cr_errf(err, errlen, "%s: out of memory", d.file);
		return -ENOMEM;
	}
	rc = parse_policy(&d, p);
	if (rc)
		return rc;
	*out = cr_steal_ptr(&p);
	return 0;
}

static void class_free(struct cr_class *c)
{
	free(c->name);
	cr_strlist_free(&c->fs_read);
	cr_strlist_free(&c->fs_write);
	cr_strlist_free(&c->fs_exec);
	cr_strlist_free(&c->fs_deny);
	cr_strlist_free(&c->net_allow);
	cr_strlist_free(&c->env);
}

void cr_policy_free(struct cr_policy *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nclasses; i++)
		class_free(&p->classes[i]);
	free(p->classes);
	free(p->version);
	free(p);
}

const struct cr_class *cr_policy_class(const struct cr_policy *p,
				       const char *name)
{
	size_t i;

	if (!p || !name)
		return NULL;
	for (i = 0; i < p->nclasses; i++)
		if (!strcmp(p->classes[i].name, name))
			return &p->classes[i];
	return NULL;
}

/* ---- Printing ----
 *
 * Written by hand rather than with cJSON_Print so that lists of roots come
 * one per line (the output is meant to be read and diffed) and counts come
 * out as exact integers, never as "1e+15". */

struct out {
	char *b;	/* owned */
	size_t len, cap;
	bool failed;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->failed)
		return;
	if (o->cap - o->len <= n) {
		size_t ncap = o->cap ? o->cap : 1024;
		char *nb;

		while (ncap - o->len <= n)
			ncap *= 2;
		nb = realloc(o->b, ncap);
		if (!nb) {
			o->failed = true;
			return;
		}
		o->b = nb;
		o->cap = ncap;
	}
	memcpy(o->b + o->len, s, n);
	o->len += n;
	o->b[o->len] = '\0';
}

static void put_text(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void indent(struct out *o, int depth)
{
	while (depth-- > 0)
		put(o, "\t", 1);
}

/* The strings were valid UTF-8 when parsed, so only quotes, backslashes and
 * control characters need escapes. */
static void print_str(struct out *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	put(o, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[7] = "\\u00";

		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			put(o, esc, 2);
		} else if (c < 0x20) {
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			put(o, esc, 6);
		} else {
			put(o, s, 1);
		}
	}
	put(o, "\"", 1);
}

static void print_key(struct out *o, int depth, const char *k)
{
	indent(o, depth);
	print_str(o, k);
	put_text(o, ": ");
}

static void print_list(struct out *o, int depth, const char *k,
		 const struct cr_strlist *l, bool last)
{
	size_t i;

	print_key(o, depth, k);
	if (!l->n) {
		put_text(o, last ? "[]\n" : "[],\n");
		return;
	}
	put_text(o, "[\n");
	for (i = 0; i < l->n; i++) {
		indent(o, depth + 1);
		print_str(o, l->v[i]);
		put_text(o, i + 1 < l->n ? ",\n" : "\n");
	}
	indent(o, depth);
	put_text(o, last ? "]\n" : "],\n");
}

static void print_limits(struct out *o, int depth, const struct cr_limits *l)
{
	int id;

	print_key(o, depth, "limits");
	put_text(o, "{\n");
	for (id = 0; id < CR_LIM__COUNT; id++) {
		char buf[32];

		cr_limit_format(id, l->v[id], buf, sizeof(buf));
		print_key(o, depth + 1, cr_limit_name(id));
		if (cr_limit_kind(id) == CR_KIND_COUNT &&
		    l->v[id] <= JSON_INT_MAX)
			put_text(o, buf);
		else
			print_str(o, buf);
		put_text(o, id + 1 < CR_LIM__COUNT ? ",\n" : "\n");
	}
	indent(o, depth);
	put_text(o, "},\n");
}

static void print_class(struct out *o, int depth, const struct cr_class *c,
		  bool last)
{
	print_key(o, depth, c->name);
	put_text(o, "{\n");
	print_key(o, depth + 1, "fs");
	put_text(o, "{\n");
	print_list(o, depth + 2, "read", &c->fs_read, false);
	print_list(o, depth + 2, "write", &c->fs_write, false);
	print_list(o, depth + 2, "exec", &c->fs_exec, false);
	print_list(o, depth + 2, "deny", &c->fs_deny, false);
	print_key(o, depth + 2, "hide");
	/* The newer keys are printed only when set, so a policy without
	 * them normalises as before. */
	put_text(o, c->fs_hide ? "true" : "false");
	if (c->fs_strict_metadata) {
		put_text(o, ",\n");
		print_key(o, depth + 2, "strict-metadata");
		put_text(o, "true");
	}
	if (c->fs_fast_open) {
		put_text(o, ",\n");
		print_key(o, depth + 2, "fast-open");
		put_text(o, "true");
	}
	put_text(o, "\n");
	indent(o, depth + 1);
	put_text(o, "},\n");
	print_key(o, depth + 1, "net");
	put_text(o, "{\n");
	print_list(o, depth + 2, "allow", &c->net_allow, true);
	indent(o, depth + 1);
	put_text(o, "},\n");
	print_limits(o, depth + 1, &c->limits);
	print_list(o, depth + 1, "env", &c->env, false);
	print_key(o, depth + 1, "syscalls");
	print_str(o, c->profile ? c->profile->name : cr_profile_default()->name);
	if (c->landlock != CR_LL_AUTO) {
		put_text(o, ",\n");
		print_key(o, depth + 1, "landlock");
		print_str(o, cr_landlock_mode_name(c->landlock));
	}
	put_text(o, "\n");
	indent(o, depth);
	put_text(o, last ? "}\n" : "},\n");
}

char *cr_policy_to_json(const struct cr_policy *p)
{
	struct out o = { NULL, 0, 0, false };
	size_t i;

	put_text(&o, "{\n");
	print_key(&o, 1, "version");
	print_str(&o, p->version);
	put_text(&o, ",\n");
	print_key(&o, 1, "classes");
	put_text(&o, "{\n");
	for (i = 0; i < p->nclasses; i++)
		print_class(&o, 2, &p->classes[i], i + 1 == p->nclasses);
	put_text(&o, "\t}\n}");
	if (o.failed) {
		free(o.b);
		return NULL;
	}
	return o.b;
}

const char *cr_landlock_mode_name(enum cr_landlock_mode m)
{
	switch (m) {
	case CR_LL_OFF: return "off";
	case CR_LL_REQUIRE: return "require";
	default: return "auto";
	}
}

int cr_landlock_mode_parse(const char *s)
{
	if (!strcmp(s, "auto"))
		return CR_LL_AUTO;
	if (!strcmp(s, "off"))
		return CR_LL_OFF;
	if (!strcmp(s, "require"))
		return CR_LL_REQUIRE;
	return -1;
}
