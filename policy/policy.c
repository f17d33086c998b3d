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

int cr_output_pattern_check(const char *p, char *msg, size_t msglen)
{
	size_t n = 0, len = 0;
	int rc = cr_rel_path_check(p, msg, msglen);

	if (rc)
		return rc;
	for (const char *c = p;; c++) {
		if (*c && *c != '/') {
			len++;
			continue;
		}
		if (len && !(len == 1 && c[-1] == '.'))
			n++;
		len = 0;
		if (!*c)
			break;
	}
	if (n > CR_OUTPUT_MAX_COMPONENTS) {
		char q[96];

		cr_str_quote(p, q, sizeof(q));
		cr_errf(msg, msglen, "%s has %zu components; an output pattern "
			"has at most %d", q, n, CR_OUTPUT_MAX_COMPONENTS);
		return -EINVAL;
	}
	/* "." or "./" names no file and matched nothing, silently (a caller
	 * meaning the whole workspace got no artifact; found by a probing
	 * session). */
	if (!n) {
		char q[96];

		cr_str_quote(p, q, sizeof(q));
		cr_errf(msg, msglen, "%s names no file; \"**\" matches every "
			"file of the workspace", q);
		return -EINVAL;
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

/* A class's list of paths, at most CR_POLICY_MAX_PATHS: every root is
 * walked, pinned and matched at set-up and looked up at each path call,
 * and 40 000 read roots in a 760 KB policy cost ~15 s before the program
 * ran, a cancel waiting for it (found by a probing session). */
static int path_list(const struct cr_jdoc *d, const cJSON *fs,
		     const char *key, struct cr_strlist *out)
{
	int rc = opt_list(d, fs, key, path_check, out);

	if (!rc && out->n > CR_POLICY_MAX_PATHS)
		return cr_jdoc_fail(d, cr_jdoc_get(fs, key),
				    "at most %d paths in fs.%s",
				    CR_POLICY_MAX_PATHS, key);
	return rc;
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

/* "alerts": {"secret_denials": N, "probe_denials": N, "probe_window":
 * "1s"}, each optional (defaults in policy.h); counts and times are
 * written as budgets are (parsed as net-connections, a count that may be
 * 0, and wall, a time). */
static int parse_alerts(const struct cr_jdoc *d, const cJSON *item,
			struct cr_alert_limits *a)
{
	static const char *const keys[] = {
		"secret_denials", "probe_denials", "probe_window", NULL
	};
	const cJSON *v;
	int rc;

	a->secret_denials = CR_ALERT_SECRET_DENIALS;
	a->probe_denials = CR_ALERT_PROBE_DENIALS;
	a->probe_window_ms = CR_ALERT_PROBE_WINDOW_MS;
	if (!item)
		return 0;
	rc = cr_jdoc_check_keys(d, item, keys);
	if (rc)
		return rc;
	if ((v = cr_jdoc_get(item, "secret_denials")) &&
	    (rc = cr_jdoc_want_limit(d, v, CR_LIM_NET_CONNECTIONS, &a->secret_denials)))
		return rc;
	if ((v = cr_jdoc_get(item, "probe_denials")) &&
	    (rc = cr_jdoc_want_limit(d, v, CR_LIM_NET_CONNECTIONS, &a->probe_denials)))
		return rc;
	if ((v = cr_jdoc_get(item, "probe_window")) &&
	    (rc = cr_jdoc_want_limit(d, v, CR_LIM_WALL, &a->probe_window_ms)))
		return rc;
	if (a->probe_denials && !a->probe_window_ms)
		return cr_jdoc_fail(d, v, "is 0 but probe_denials is not: "
				    "no burst fits in no time");
	return 0;
}

/* "env_secrets": "warn" (the default) or "refuse": what a credential-
 * looking --env or request env value meets. */
static int parse_env_secrets(const struct cr_jdoc *d, const cJSON *item,
			     bool *refuse)
{
	cr_autofree char *s = NULL;
	int rc;

	*refuse = false;
	if (!item)
		return 0;
	rc = cr_jdoc_want_string(d, item, &s);
	if (rc)
		return rc;
	if (!strcmp(s, "refuse"))
		*refuse = true;
	else if (strcmp(s, "warn"))
		return cr_jdoc_fail(d, item, "must be \"warn\" or \"refuse\"");
	return 0;
}

static bool cred_name_valid(const char *n)
{
	size_t i;

	for (i = 0; n[i]; i++)
		if (!((n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= '0' && n[i] <= '9') ||
		      n[i] == '_'))
			return false;
	return i >= 1 && i <= 32;
}

static int method_check(const char *s, char **norm, char *msg, size_t msglen)
{
	char q[96];
	size_t i;

	(void)norm;
	for (i = 0; s[i]; i++)
		if (s[i] < 'A' || s[i] > 'Z')
			break;
	if (!s[i] && i >= 1 && i <= 16)
		return 0;
	/* Quoted: the value is the document's, and may hold terminal
	 * controls (found by a probing session). */
	cr_errf(msg, msglen, "%s is not an HTTP method (A-Z, 1-16 letters)",
		cr_str_quote(s, q, sizeof(q)));
	return -EINVAL;
}

/* Prefixes are matched on the request path as sent: printable, starting
 * with '/', no dot segment (the broker refuses those in requests too). */
static int prefix_check(const char *s, char **norm, char *msg, size_t msglen)
{
	(void)norm;
	if (s[0] == '/' && !strstr(s, "/./") && !strstr(s, "/../") &&
	    strlen(s) < 1024 && !strpbrk(s, " \t\r\n\\?#")) {
		for (const char *p = s; *p; p++)
			if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
				goto bad;
		return 0;
	}
bad:
	{
		char q[96];

		cr_errf(msg, msglen, "%s is not a path prefix (starts with /, "
			"printable, no dot segment, no query)",
			cr_str_quote(s, q, sizeof(q)));
	}
	return -EINVAL;
}

/* "https://host[:port]" and nothing more: one origin. */
static int parse_origin(const struct cr_jdoc *d, const cJSON *item,
			struct cr_credential *cr)
{
	cr_autofree char *o = NULL;
	const char *h, *colon, *end;
	unsigned long port = 443;
	char *e;
	int rc;

	rc = cr_jdoc_want_string(d, item, &o);
	if (rc)
		return rc;
	if (strncmp(o, "https://", 8))
		return cr_jdoc_fail(d, item, "must be https://HOST[:PORT]: the "
				    "broker speaks TLS upstream, verified");
	h = o + 8;
	if (!*h || strpbrk(h, "/?#@ \\"))
		return cr_jdoc_fail(d, item, "must be https://HOST[:PORT] "
				    "with no path, user or query");
	end = h + strlen(h);
	if (h[0] == '[') {
		const char *rb = strchr(h, ']');

		if (!rb || (rb[1] && rb[1] != ':'))
			return cr_jdoc_fail(d, item, "must be https://[IPv6][:PORT]");
		colon = rb[1] ? rb + 1 : NULL;
		h++;
		end = rb;
	} else {
		colon = strchr(h, ':');
		if (colon)
			end = colon;
	}
	if (colon) {
		port = strtoul(colon + 1, &e, 10);
		if (*e || e == colon + 1 || !port || port > 65535)
			return cr_jdoc_fail(d, item, "bad port");
	}
	if (end == h)
		return cr_jdoc_fail(d, item, "no host");
	if ((size_t)(end - h) > CR_ORIGIN_HOST_MAX)
		return cr_jdoc_fail(d, item, "the host is longer than %d bytes",
				    CR_ORIGIN_HOST_MAX);
	cr->scheme = strdup("https");
	cr->host = strndup(h, (size_t)(end - h));
	cr->port = (uint16_t)port;
	if (!cr->scheme || !cr->host)
		return cr_jdoc_fail(d, item, "out of memory");
	return 0;
}

static int parse_credential(const struct cr_jdoc *d, const cJSON *item,
			    struct cr_credential *cr)
{
	static const char *const keys[] = {
		"origin", "methods", "path_prefixes", "header", "secret_env",
		"secret_file", "ca_file", NULL
	};
	const cJSON *v;
	char msg[256];
	int rc;

	cr->name = strdup(item->string);
	if (!cr->name)
		return cr_jdoc_fail(d, item, "out of memory");
	if (!cred_name_valid(cr->name))
		return cr_jdoc_fail(d, item, "credential names are 1-32 of "
				    "[A-Z0-9_] (they name CORRAL_BROKER_<NAME>)");
	if ((rc = cr_jdoc_check_keys(d, item, keys)))
		return rc;
	if (!(v = cr_jdoc_get(item, "origin")))
		return cr_jdoc_fail(d, item, "missing \"origin\"");
	if ((rc = parse_origin(d, v, cr)))
		return rc;
	if ((rc = opt_list(d, item, "methods", method_check, &cr->methods)) ||
	    (rc = opt_list(d, item, "path_prefixes", prefix_check,
			   &cr->path_prefixes)))
		return rc;
	if (!(v = cr_jdoc_get(item, "header")))
		return cr_jdoc_fail(d, item, "missing \"header\" (such as "
				    "\"Authorization: Bearer {secret}\")");
	if ((rc = cr_jdoc_want_string(d, v, &cr->header)))
		return rc;
	{
		const char *c = strchr(cr->header, ':');
		const char *s = strstr(cr->header, "{secret}");

		if (!c || c == cr->header || !s || s < c ||
		    strstr(s + 8, "{secret}") || strpbrk(cr->header, "\r\n"))
			return cr_jdoc_fail(d, v, "must be \"Name: value\" with "
					    "{secret} once in the value");
	}
	if ((v = cr_jdoc_get(item, "secret_env"))) {
		if ((rc = cr_jdoc_want_string(d, v, &cr->secret_env)))
			return rc;
		if ((rc = env_check(cr->secret_env, NULL, msg, sizeof(msg))))
			return cr_jdoc_fail(d, v, "%s", msg);
	}
	if ((v = cr_jdoc_get(item, "secret_file"))) {
		cr_autofree char *raw = NULL;

		if ((rc = cr_jdoc_want_string(d, v, &raw)))
			return rc;
		if ((rc = cr_path_normalise(raw, &cr->secret_file, msg,
					    sizeof(msg))))
			return cr_jdoc_fail(d, v, "%s", msg);
	}
	if (!cr->secret_env == !cr->secret_file)
		return cr_jdoc_fail(d, item, "needs exactly one of \"secret_env\" "
				    "and \"secret_file\" (the secret never "
				    "comes from a request)");
	if ((v = cr_jdoc_get(item, "ca_file"))) {
		cr_autofree char *raw = NULL;

		if ((rc = cr_jdoc_want_string(d, v, &raw)))
			return rc;
		if ((rc = cr_path_normalise(raw, &cr->ca_file, msg, sizeof(msg))))
			return cr_jdoc_fail(d, v, "%s", msg);
	}
	return 0;
}

static int parse_credentials(const struct cr_jdoc *d, const cJSON *item,
			     struct cr_class *c)
{
	size_t n = 0;
	int rc;

	if (!item)
		return 0;
	if ((rc = cr_jdoc_want_object(d, item)))
		return rc;
	for (const cJSON *e = item->child; e; e = e->next)
		n++;
	if (!n)
		return 0;
	c->credentials = calloc(n, sizeof(*c->credentials));
	if (!c->credentials)
		return cr_jdoc_fail(d, item, "out of memory");
	for (const cJSON *e = item->child; e; e = e->next) {
		rc = parse_credential(d, e, &c->credentials[c->ncredentials++]);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_class(const struct cr_jdoc *d, const cJSON *item,
		       struct cr_class *c)
{
	static const char *const class_keys[] = {
		"fs", "net", "limits", "env", "syscalls", "artifacts", "alerts",
		"env_secrets", "credentials", "landlock", "data-backstop", NULL
	};
	static const char *const art_keys[] = { "files", "bytes", NULL };
	static const char *const fs_keys[] = {
		"read", "write", "exec", "deny", "hide", "strict-metadata",
		"fast-open", NULL
	};
	static const char *const net_keys[] = { "allow", NULL };
	const cJSON *fs, *net, *limits, *hide, *sys, *art, *v, *ll, *strict, *fopen_;
	const cJSON *backstop;
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
	if ((rc = path_list(d, fs, "read", &c->fs_read)) ||
	    (rc = path_list(d, fs, "write", &c->fs_write)) ||
	    (rc = path_list(d, fs, "exec", &c->fs_exec)) ||
	    (rc = path_list(d, fs, "deny", &c->fs_deny)))
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
	backstop = cr_jdoc_get(item, "data-backstop");
	if (backstop) {
		bool on = true;

		if ((rc = cr_jdoc_want_bool(d, backstop, &on)))
			return rc;
		c->no_data_backstop = !on;
	}
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

	rc = parse_alerts(d, cr_jdoc_get(item, "alerts"), &c->alerts);
	if (rc)
		return rc;
	rc = parse_env_secrets(d, cr_jdoc_get(item, "env_secrets"),
			       &c->env_secrets_refuse);
	if (rc)
		return rc;
	rc = parse_credentials(d, cr_jdoc_get(item, "credentials"), c);
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

	/* Bounds of the export after the run (tracer/io/artifacts.c):
	 * optional, unlike the limits, so older policies keep working. */
	c->artifact_files = CR_ARTIFACT_FILES_DEFAULT;
	c->artifact_bytes = CR_ARTIFACT_BYTES_DEFAULT;
	art = cr_jdoc_get(item, "artifacts");
	if (art && (rc = cr_jdoc_check_keys(d, art, art_keys)))
		return rc;
	if ((v = cr_jdoc_get(art, "files")) &&
	    (rc = cr_jdoc_want_limit(d, v, CR_LIM_FILES, &c->artifact_files)))
		return rc;
	if ((v = cr_jdoc_get(art, "bytes")) &&
	    (rc = cr_jdoc_want_limit(d, v, CR_LIM_DISK, &c->artifact_bytes)))
		return rc;
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
	for (size_t i = 0; i < c->ncredentials; i++) {
		struct cr_credential *cr = &c->credentials[i];

		free(cr->name);
		free(cr->scheme);
		free(cr->host);
		cr_strlist_free(&cr->methods);
		cr_strlist_free(&cr->path_prefixes);
		free(cr->header);
		free(cr->secret_env);
		free(cr->secret_file);
		free(cr->ca_file);
	}
	free(c->credentials);
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

static void print_alerts(struct out *o, int depth,
			 const struct cr_alert_limits *a)
{
	char buf[32];

	print_key(o, depth, "alerts");
	put_text(o, "{\n");
	print_key(o, depth + 1, "secret_denials");
	snprintf(buf, sizeof(buf), "%llu",
		 (unsigned long long)(a->secret_denials <= JSON_INT_MAX ?
				      a->secret_denials : JSON_INT_MAX));
	put_text(o, buf);
	put_text(o, ",\n");
	print_key(o, depth + 1, "probe_denials");
	snprintf(buf, sizeof(buf), "%llu",
		 (unsigned long long)(a->probe_denials <= JSON_INT_MAX ?
				      a->probe_denials : JSON_INT_MAX));
	put_text(o, buf);
	put_text(o, ",\n");
	print_key(o, depth + 1, "probe_window");
	cr_limit_format(CR_LIM_WALL, a->probe_window_ms, buf, sizeof(buf));
	print_str(o, buf);
	put_text(o, "\n");
	indent(o, depth);
	put_text(o, "},\n");
}

static void print_opt_str(struct out *o, int depth, const char *k,
			  const char *v)
{
	if (!v)
		return;
	print_key(o, depth, k);
	print_str(o, v);
	put_text(o, ",\n");
}

static void print_credentials(struct out *o, int depth,
			      const struct cr_class *c)
{
	print_key(o, depth, "credentials");
	put_text(o, "{\n");
	for (size_t i = 0; i < c->ncredentials; i++) {
		const struct cr_credential *cr = &c->credentials[i];
		char origin[600];

		if (strchr(cr->host, ':') && cr->host[0] != '[')
			snprintf(origin, sizeof(origin), "https://[%s]:%u",
				 cr->host, cr->port);
		else
			snprintf(origin, sizeof(origin), "https://%s:%u",
				 cr->host, cr->port);
		print_key(o, depth + 1, cr->name);
		put_text(o, "{\n");
		print_opt_str(o, depth + 2, "origin", origin);
		print_list(o, depth + 2, "methods", &cr->methods, false);
		print_list(o, depth + 2, "path_prefixes", &cr->path_prefixes,
			   false);
		print_opt_str(o, depth + 2, "secret_env", cr->secret_env);
		print_opt_str(o, depth + 2, "secret_file", cr->secret_file);
		print_opt_str(o, depth + 2, "ca_file", cr->ca_file);
		print_key(o, depth + 2, "header");
		print_str(o, cr->header);
		put_text(o, "\n");
		indent(o, depth + 1);
		put_text(o, i + 1 < c->ncredentials ? "},\n" : "}\n");
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
	print_key(o, depth + 1, "env_secrets");
	print_str(o, c->env_secrets_refuse ? "refuse" : "warn");
	put_text(o, ",\n");
	print_alerts(o, depth + 1, &c->alerts);
	print_credentials(o, depth + 1, c);
	print_key(o, depth + 1, "syscalls");
	print_str(o, c->profile ? c->profile->name : cr_profile_default()->name);
	put_text(o, ",\n");
	print_key(o, depth + 1, "artifacts");
	put_text(o, "{\n");
	{
		char b[32];

		cr_limit_format(CR_LIM_FILES, c->artifact_files, b, sizeof(b));
		print_key(o, depth + 2, "files");
		if (c->artifact_files <= JSON_INT_MAX)
			put_text(o, b);
		else
			print_str(o, b);
		put_text(o, ",\n");
		cr_limit_format(CR_LIM_DISK, c->artifact_bytes, b, sizeof(b));
		print_key(o, depth + 2, "bytes");
		print_str(o, b);
		put_text(o, "\n");
	}
	indent(o, depth + 1);
	put_text(o, "}");
	if (c->landlock != CR_LL_AUTO) {
		put_text(o, ",\n");
		print_key(o, depth + 1, "landlock");
		print_str(o, cr_landlock_mode_name(c->landlock));
	}
	if (c->no_data_backstop) {
		put_text(o, ",\n");
		print_key(o, depth + 1, "data-backstop");
		put_text(o, "false");
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
