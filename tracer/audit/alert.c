/* tracer/audit/alert.c: watches the run's denials for the shape of a search:
 * one secret-looking path tried again and again, or a burst of metadata probes. */
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cJSON.h>

#include "../tracer.h"

/* Where credentials usually live; a denial there is the program reaching
 * for a secret the policy keeps out. */
static const char *const secret_paths[] = {
	"*/.ssh", "*/.ssh/*", "*/.aws/*", "*/.gnupg/*", "*/.netrc",
	"*/.git-credentials", "*/.docker/config.json", "*/.kube/config",
	"*/.config/gh/*", "*/.config/gcloud/*", "*/.azure/*", "*/.npmrc",
	"*/.pypirc", "*/.vault-token", "*/.password-store/*", "*/.env",
	"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "*/id_rsa*",
	"*/id_ecdsa*", "*/id_ed25519*", "*/id_dsa*", "*.pem", "*.key",
	"*.p12", "*.pfx", "*.kdbx",
};

/* Calls that learn about a name without opening it. */
static const char *const probe_calls[] = {
	"stat", "lstat", "newfstatat", "fstatat64", "statx", "access",
	"faccessat", "faccessat2", "readlink", "readlinkat", "getxattr",
	"lgetxattr", "listxattr", "llistxattr", "statfs", "getdents64",
	"getdents", "chdir",
};

#define SECRET_SLOTS 32

struct cr_alerts {
	struct {
		char *target;	/* owned */
		uint64_t count;
	} secret[SECRET_SLOTS];
	size_t nsecret;
	uint64_t secret_overflow;	/* denials at paths past the slots */
	bool secret_raised, probe_raised;
	uint64_t probe_start_ms, probe_count;
	/* For the result: the kinds raised, in order. */
	const char *raised[2];
	size_t nraised;
};

static bool is_secret_path(const char *p)
{
	for (size_t i = 0; i < CR_ARRAY_SIZE(secret_paths); i++)
		if (!fnmatch(secret_paths[i], p, 0))
			return true;
	return false;
}

static bool is_probe(const char *syscall)
{
	for (size_t i = 0; i < CR_ARRAY_SIZE(probe_calls); i++)
		if (!strcmp(probe_calls[i], syscall))
			return true;
	return false;
}

static struct cr_alerts *state(struct cr_run *run)
{
	if (!run->alerts)
		run->alerts = calloc(1, sizeof(*run->alerts));
	return run->alerts;
}

static void raise_alert(struct cr_run *run, const char *kind, cJSON *f)
{
	struct cr_alerts *a = run->alerts;

	if (a->nraised < CR_ARRAY_SIZE(a->raised))
		a->raised[a->nraised++] = kind;
	if (f) {
		cJSON *o = cJSON_CreateObject();

		/* kind first, then the evidence. */
		if (o) {
			cJSON_AddStringToObject(o, "kind", kind);
			while (f->child) {
				cJSON *it = cJSON_DetachItemViaPointer(f, f->child);

				cJSON_AddItemToObject(o, it->string, cJSON_Duplicate(it, true));
				cJSON_Delete(it);
			}
		}
		cJSON_Delete(f);
		f = o;
	}
	cr_audit_event(run, "alert", f);
}

/*
 * The one spelling a denied path is counted under: "//", "." and ".."
 * worked out on the text, a relative path against the caller's working
 * directory (as given when that cannot be read). Most fs denials already
 * name a resolved prefix, but the part past the first component outside
 * the roots is the program's own text, never walked: counted raw, each of
 * /root/.ssh/id_rsa, /root/.ssh/./id_rsa, //root/.ssh/id_rsa... took a
 * slot of its own and 34 tries of one key raised nothing. 0, or -errno
 * (too long: then the raw text is used).
 */
static int canonical(pid_t pid, const char *target, char *out, size_t size)
{
	char cwd[PATH_MAX], link[64];
	const char *base = NULL;
	ssize_t n = -1;

	if (target[0] != '/' && pid > 0) {
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
		n = readlink(link, cwd, sizeof(cwd) - 1);
	}
	if (n > 0 && cwd[0] == '/') {
		cwd[n] = 0;
		if (!(n > 10 && !strcmp(cwd + n - 10, " (deleted)")))
			base = cwd;
	}
	return cr_path_lexical(base, target, out, size);
}

static void secret_seen(struct cr_run *run, struct cr_alerts *a,
			const char *target, const char *syscall)
{
	uint64_t limit = run->cfg->cls->alerts.secret_denials, count;
	size_t i;

	for (i = 0; i < a->nsecret; i++)
		if (!strcmp(a->secret[i].target, target))
			break;
	if (i == a->nsecret && a->nsecret < SECRET_SLOTS &&
	    (a->secret[i].target = strdup(target)))
		a->nsecret++;
	/* Past the slots (or without memory for one), every denial counts
	 * in one shared bucket: 32 decoys must not leave the next path
	 * unwatched, and that many secret-looking paths is a search too. */
	if (i == a->nsecret)
		count = ++a->secret_overflow;
	else
		count = ++a->secret[i].count;
	if (count < limit || a->secret_raised)
		return;
	a->secret_raised = true;
	{
		cJSON *f = cJSON_CreateObject();

		if (f) {
			cJSON_AddNumberToObject(f, "ms", (double)cr_run_ms(run));
			cr_json_add_bytes(f, "target", target, strlen(target));
			cJSON_AddStringToObject(f, "syscall", syscall);
			cJSON_AddNumberToObject(f, "denials", (double)count);
			cJSON_AddNumberToObject(f, "threshold", (double)limit);
		}
		raise_alert(run, "secret_path", f);
	}
}

static void probe_seen(struct cr_run *run, struct cr_alerts *a)
{
	const struct cr_alert_limits *l = &run->cfg->cls->alerts;
	uint64_t now = cr_run_ms(run);

	/* A fixed window opened by the first probe after the last one
	 * closed: coarse, and enough to tell a scan from a program's few
	 * lookups of absent files. */
	if (!a->probe_count || now - a->probe_start_ms > l->probe_window_ms) {
		a->probe_start_ms = now;
		a->probe_count = 0;
	}
	if (++a->probe_count < l->probe_denials || a->probe_raised)
		return;
	a->probe_raised = true;
	{
		cJSON *f = cJSON_CreateObject();

		if (f) {
			cJSON_AddNumberToObject(f, "ms", (double)now);
			cJSON_AddNumberToObject(f, "denials",
						(double)a->probe_count);
			cJSON_AddNumberToObject(f, "window_ms",
						(double)l->probe_window_ms);
			cJSON_AddNumberToObject(f, "threshold",
						(double)l->probe_denials);
		}
		raise_alert(run, "metadata_burst", f);
	}
}

void cr_alert_observe(struct cr_run *run, pid_t pid, const char *syscall,
		      const char *target, const char *layer)
{
	const struct cr_alert_limits *l = &run->cfg->cls->alerts;
	struct cr_alerts *a;

	if (!l->secret_denials && !l->probe_denials)
		return;
	a = state(run);
	if (!a)
		return;
	if (l->secret_denials && target && !strcmp(layer, "fs")) {
		char canon[PATH_MAX];
		const char *key = canonical(pid, target, canon, sizeof(canon)) ?
					  target : canon;

		if (is_secret_path(key))
			secret_seen(run, a, key, syscall);
	}
	if (l->probe_denials && is_probe(syscall))
		probe_seen(run, a);
}

void cr_alert_result(const struct cr_run *run, void *result)
{
	cJSON *arr = cJSON_AddArrayToObject(result, "alerts");

	for (size_t i = 0; arr && run->alerts && i < run->alerts->nraised; i++)
		cJSON_AddItemToArray(arr,
				     cJSON_CreateString(run->alerts->raised[i]));
}

void cr_alert_free(struct cr_run *run)
{
	if (!run->alerts)
		return;
	for (size_t i = 0; i < run->alerts->nsecret; i++)
		free(run->alerts->secret[i].target);
	free(run->alerts);
	run->alerts = NULL;
}
