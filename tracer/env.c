/* tracer/env.c: builds the program's environment from nothing: the class's
 * variable names, the request's and --env's settings, HOME and TMPDIR. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "corral/fsrules.h"
#include "tracer.h"

#define CR_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

struct envb {
	char **v;
	size_t n;
};

/* Variables naming where a tool keeps its temporary files, and where in
 * the workspace they point (cr_env_build). */
static const struct {
	const char *name, *sub;
} tmp_vars[] = {
	{ "TMPPREFIX", "/zsh" },
	{ "TMUX_TMPDIR", "" },
	{ "SCREENDIR", "/.screen" },
};

/* Set NAME=VALUE, replacing an earlier setting of NAME. */
static int env_set(struct envb *b, const char *name, size_t nlen,
		   const char *value)
{
	char *kv;

	if (asprintf(&kv, "%.*s=%s", (int)nlen, name, value) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++)
		if (!strncmp(b->v[i], kv, nlen + 1)) {
			free(b->v[i]);
			b->v[i] = kv;
			return 0;
		}
	{
		char **nv = realloc(b->v, (b->n + 2) * sizeof(*nv));

		if (!nv) {
			free(kv);
			return -ENOMEM;
		}
		b->v = nv;
	}
	b->v[b->n++] = kv;
	b->v[b->n] = NULL;
	return 0;
}

static bool in_list(const struct cr_strlist *l, const char *p, size_t len)
{
	for (size_t i = 0; i < l->n; i++)
		if (cr_path_within(l->v[i], strlen(l->v[i]), p, len))
			return true;
	return false;
}

/* PATH keeps only directories the program may execute from: a search
 * through the user's ~/bin would only meet refusals (and fill the denials
 * with noise). Relative entries go too: they would follow the cwd. */
static int filter_path(struct cr_run_config *cfg, char **kv)
{
	const char *v = *kv + 5;
	char *out = malloc(strlen(*kv) + 1), *o;

	if (!out)
		return -ENOMEM;
	o = out + sprintf(out, "PATH=");
	while (*v) {
		size_t len = strcspn(v, ":");

		if (len && v[0] == '/' &&
		    (in_list(&cfg->cls->fs_exec, v, len) ||
		     in_list(&cfg->extra_exec, v, len) ||
		     cr_path_within(cfg->workspace, strlen(cfg->workspace), v, len))) {
			if (o[-1] != '=')
				*o++ = ':';
			memcpy(o, v, len);
			o += len;
		}
		v += len;
		if (*v == ':')
			v++;
	}
	*o = 0;
	free(*kv);
	*kv = out;
	return 0;
}

int cr_env_build(struct cr_run_config *cfg, char **env_args, size_t nenv)
{
	struct envb b = { 0 };
	int rc = 0;

	b.v = calloc(1, sizeof(*b.v));
	if (!b.v)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < cfg->cls->env.n; i++) {
		const char *name = cfg->cls->env.v[i];
		const char *val = getenv(name);

		if (val)
			rc = env_set(&b, name, strlen(name), val);
	}
	for (size_t i = 0; !rc && cfg->req && i < cfg->req->nenv; i++)
		rc = env_set(&b, cfg->req->env[i].name,
			     strlen(cfg->req->env[i].name),
			     cfg->req->env[i].value);
	for (size_t i = 0; !rc && i < nenv; i++) {
		const char *arg = env_args[i];
		const char *eq = strchr(arg, '=');
		size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);

		if (!nlen) {
			fprintf(stderr, "corral: --env %s: empty name\n", arg);
			rc = -EINVAL;
			break;
		}
		if (eq) {
			rc = env_set(&b, arg, nlen, eq + 1);
		} else {
			const char *val = getenv(arg);

			if (val)
				rc = env_set(&b, arg, nlen, val);
		}
	}
	/* Home and temporary files live in the workspace, never in the
	 * user's home or the shared /tmp. */
	if (!rc)
		rc = env_set(&b, "HOME", 4, cfg->workspace);
	if (!rc)
		rc = env_set(&b, "TMPDIR", 6, cfg->workspace);
	/* Tools that keep files under /tmp by a variable of their own, not
	 * TMPDIR: zsh's here-documents and =(...) files (TMPPREFIX, default
	 * /tmp/zsh: "can't create temp file"), tmux's server socket
	 * (TMUX_TMPDIR: "couldn't create directory /tmp/tmux-UID") and
	 * screen's (SCREENDIR: /run/screen). Outside every root, each failed
	 * (found by compatibility probes). Set in the workspace as TMPDIR
	 * is, unless the caller set them. */
	for (size_t k = 0; !rc && k < CR_ARRAY_SIZE(tmp_vars); k++) {
		size_t nl = strlen(tmp_vars[k].name);
		bool has = false;
		char *val;

		for (size_t i = 0; i < b.n; i++)
			has = has || (!strncmp(b.v[i], tmp_vars[k].name, nl) &&
				       b.v[i][nl] == '=');
		if (has)
			continue;
		if (asprintf(&val, "%s%s", cfg->workspace,
			     tmp_vars[k].sub) < 0) {
			rc = -ENOMEM;
		} else {
			rc = env_set(&b, tmp_vars[k].name, nl, val);
			free(val);
		}
	}
	if (!rc) {
		bool has_path = false;

		for (size_t i = 0; !rc && i < b.n; i++)
			if (!strncmp(b.v[i], "PATH=", 5)) {
				has_path = true;
				rc = filter_path(cfg, &b.v[i]);
			}
		if (!rc && !has_path)
			rc = env_set(&b, "PATH", 4, CR_DEFAULT_PATH);
	}
	if (rc) {
		for (size_t i = 0; i < b.n; i++)
			free(b.v[i]);
		free(b.v);
		return rc;
	}
	cfg->envp = b.v;
	return 0;
}
