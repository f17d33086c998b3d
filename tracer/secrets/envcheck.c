/* tracer/secrets/envcheck.c: environment settings that look like credentials,
 * by name or by value; warned about (or refused by policy), never printed. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tracer.h"

/* Prefixes issuers put on their tokens, and how many characters of token
 * must follow (so "sk-learn" or "AKIA" alone is not one). */
static const struct {
	const char *prefix;
	size_t min_rest;
	const char *what;
} token_prefixes[] = {
	{ "ghp_", 20, "a GitHub token" },
	{ "gho_", 20, "a GitHub token" },
	{ "ghu_", 20, "a GitHub token" },
	{ "ghs_", 20, "a GitHub token" },
	{ "ghr_", 20, "a GitHub token" },
	{ "github_pat_", 20, "a GitHub token" },
	{ "glpat-", 16, "a GitLab token" },
	{ "xoxb-", 10, "a Slack token" },
	{ "xoxp-", 10, "a Slack token" },
	{ "xoxa-", 10, "a Slack token" },
	{ "xoxr-", 10, "a Slack token" },
	{ "xoxs-", 10, "a Slack token" },
	{ "sk-", 20, "an API secret key" },
	{ "sk_live_", 16, "a Stripe secret key" },
	{ "rk_live_", 16, "a Stripe key" },
	{ "AKIA", 16, "an AWS access key id" },
	{ "ASIA", 16, "an AWS access key id" },
	{ "AIza", 30, "a Google API key" },
	{ "npm_", 30, "an npm token" },
	{ "pypi-", 30, "a PyPI token" },
	{ "hf_", 30, "a Hugging Face token" },
	{ "-----BEGIN", 10, "a PEM private key or certificate" },
};

static const char *const secret_names[] = {
	"*TOKEN*", "*KEY*", "*SECRET*", "*PASSWORD*", "*PASSWD*",
	"*CREDENTIAL*", "AWS_*", "*_PAT",
};

/* log2(x) for x > 0 without libm (one library less at every start-up):
 * x = m * 2^e with m in [1, 2), ln m = 2 atanh((m-1)/(m+1)), a series
 * that converges fast for y <= 1/3. */
static double log2_(double x)
{
	double y, y2, term, sum = 0;
	int e = 0;

	while (x >= 2) {
		x /= 2;
		e++;
	}
	while (x < 1) {
		x *= 2;
		e--;
	}
	y = (x - 1) / (x + 1);
	y2 = y * y;
	term = y;
	for (int k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= y2;
	}
	return e + 2 * sum / 0.69314718055994530942;
}

/* Shannon entropy in bits per character. */
static double entropy(const char *v, size_t n)
{
	size_t count[256] = { 0 };
	double h = 0;

	for (size_t i = 0; i < n; i++)
		count[(unsigned char)v[i]]++;
	for (int c = 0; c < 256; c++)
		if (count[c]) {
			double p = (double)count[c] / (double)n;

			h -= p * log2_(p);
		}
	return h;
}

/* What the value looks like, or NULL. A random-looking word of 24+
 * characters of the alphabets tokens use, with letters and digits mixed
 * and at least 4 bits of entropy a character, is taken for a key: paths,
 * words and version strings are not (they repeat characters, or hold '/',
 * spaces or ':' separators). */
static const char *value_kind(const char *v)
{
	size_t n = strlen(v), digits = 0, upper = 0, lower = 0;

	for (size_t i = 0; i < CR_ARRAY_SIZE(token_prefixes); i++) {
		size_t pl = strlen(token_prefixes[i].prefix);

		if (!strncmp(v, token_prefixes[i].prefix, pl) &&
		    n >= pl + token_prefixes[i].min_rest)
			return token_prefixes[i].what;
	}
	/* A JSON Web Token: three base64url parts, the first "eyJ". */
	if (!strncmp(v, "eyJ", 3) && n > 30 && strchr(v, '.') &&
	    strchr(strchr(v, '.') + 1, '.'))
		return "a JSON Web Token";
	if (n < 24 || n > 4096)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];

		if (c >= '0' && c <= '9')
			digits++;
		else if (c >= 'A' && c <= 'Z')
			upper++;
		else if (c >= 'a' && c <= 'z')
			lower++;
		else if (!strchr("+/=_-.", c))
			return NULL;
	}
	if (v[0] == '/' || !digits || !(upper + lower) ||
	    (digits + upper + lower) * 10 < n * 9)
		return NULL;
	return entropy(v, n) >= 4.0 ? "a high-entropy string" : NULL;
}

static bool name_looks(const char *name)
{
	for (size_t i = 0; i < CR_ARRAY_SIZE(secret_names); i++)
		if (!fnmatch(secret_names[i], name, FNM_CASEFOLD))
			return true;
	return false;
}

/* One setting: 0, or -EPERM when refused (err says why). */
static int check_one(const struct cr_run_config *cfg, const char *where,
		     const char *name, const char *value, char *err,
		     size_t errlen)
{
	const char *kind = value ? value_kind(value) : NULL;

	if (!kind && !name_looks(name))
		return 0;
	if (kind && cfg->cls->env_secrets_refuse) {
		cr_errf(err, errlen,
			"%s %s: the value looks like %s; the class's env_secrets is \"refuse\": give credentials to a broker outside the sandbox, never to the program",
			where, name, kind);
		return -EPERM;
	}
	fprintf(stderr,
		"corral: warning: %s %s %s%s; the sandboxed program can read and send it. Prefer a broker outside the sandbox.\n",
		where, name, kind ? "has a value that looks like " : "looks like a secret",
		kind ? kind : "");
	return 0;
}

int cr_secrets_check_env(const struct cr_run_config *cfg, char **env_args,
			 size_t nenv, char *err, size_t errlen)
{
	int rc;

	for (size_t i = 0; cfg->req && i < cfg->req->nenv; i++) {
		rc = check_one(cfg, "request env", cfg->req->env[i].name,
			       cfg->req->env[i].value, err, errlen);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < nenv; i++) {
		const char *eq = strchr(env_args[i], '=');
		char name[256];

		snprintf(name, sizeof(name), "%.*s",
			 (int)(eq ? (size_t)(eq - env_args[i]) : strlen(env_args[i])),
			 env_args[i]);
		rc = check_one(cfg, "--env", name, eq ? eq + 1 : getenv(name),
			       err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}
