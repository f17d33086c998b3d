/* include/corral/policy.h: the immutable policy and execution request, as
 * parsed from JSON by policy/, and the pure questions asked of them. */
#ifndef CORRAL_POLICY_H
#define CORRAL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corral/profile.h"

/* Budgets, in the order of the contract's --limit names. */
enum cr_limit_id {
	CR_LIM_CPU,		/* time: CPU of the whole tree, ms */
	CR_LIM_MEMORY,		/* size: peak resident memory of the tree, bytes */
	CR_LIM_WALL,		/* time: elapsed since start, ms */
	CR_LIM_PROCESSES,	/* count: tasks alive at once */
	CR_LIM_OUTPUT,		/* size: captured stdout+stderr, bytes */
	CR_LIM_DISK,		/* size: bytes added to writable roots */
	CR_LIM_FILES,		/* count: entries created */
	CR_LIM_NET_BYTES,	/* size: bytes through the proxy, both ways */
	CR_LIM_NET_CONNECTIONS,	/* count: connections opened */
	CR_LIM_NET_CONN_TIME,	/* time: age of one connection, ms */
	CR_LIM__COUNT
};

/* What a limit's value measures, which decides the units it accepts. */
enum cr_limit_kind {
	CR_KIND_TIME,	/* "250ms", "30s", "5m", "1h" -> milliseconds */
	CR_KIND_SIZE,	/* "512MiB", "1GiB", "100B", "100" or a JSON integer -> bytes */
	CR_KIND_COUNT,	/* a JSON integer or a string of digits */
};

struct cr_limits {
	uint64_t v[CR_LIM__COUNT];
};

struct cr_strlist {
	char **v;	/* owned; each owned */
	size_t n;
};

/* Thresholds of the audit's alert events (0: that alert is off). */
struct cr_alert_limits {
	uint64_t secret_denials;	/* denials of one secret-looking path */
	uint64_t probe_denials;		/* metadata denials within probe_window */
	uint64_t probe_window_ms;
};

#define CR_ALERT_SECRET_DENIALS 3
#define CR_ALERT_PROBE_DENIALS 64
#define CR_ALERT_PROBE_WINDOW_MS 1000

/* The longest origin host: a DNS name's limit (an IPv6 literal is far
 * shorter). The broker's upstream URL is sized for it and a whole target. */
#define CR_ORIGIN_HOST_MAX 253

/* A credential the broker holds for the program (tracer/broker/): bound to
 * one upstream origin, its secret read from corral's environment or a
 * file, never from a request. */
struct cr_credential {
	char *name;			/* owned: [A-Z0-9_]{1,32} */
	char *scheme;			/* owned: "https" */
	char *host;			/* owned: at most CR_ORIGIN_HOST_MAX */
	uint16_t port;
	struct cr_strlist methods;	/* empty: any method */
	struct cr_strlist path_prefixes; /* empty: any path */
	char *header;			/* owned: "Name: ...{secret}..." */
	char *secret_env;		/* owned, or NULL */
	char *secret_file;		/* owned, absolute, or NULL */
	char *ca_file;			/* owned, absolute, or NULL: system CAs */
};

/* Landlock, the kernel's second layer under the supervisor (tracer/landlock/):
 * class key "landlock", option --landlock. */
enum cr_landlock_mode {
	CR_LL_AUTO,	/* applied where the kernel has it, else the run goes on */
	CR_LL_OFF,	/* never applied: the supervisor alone, as before */
	CR_LL_REQUIRE,	/* a run without it is refused before it starts (125) */
};

struct cr_class {
	char *name;			/* owned */
	struct cr_strlist fs_read;	/* absolute, normalised paths */
	struct cr_strlist fs_write;
	struct cr_strlist fs_exec;
	struct cr_strlist fs_deny;
	bool fs_hide;			/* ENOENT instead of EACCES outside roots */
	bool fs_strict_metadata;	/* metadata calls always go to the
					 * supervisor, even where Landlock
					 * would allow the fast path */
	bool fs_fast_open;		/* read-only opens left to the kernel
					 * too where Landlock is applied */
	bool no_data_backstop;		/* "data-backstop": false: no
					 * RLIMIT_DATA (sanitizer builds) */
	enum cr_landlock_mode landlock;
	struct cr_strlist net_allow;	/* destinations as written (validated) */
	struct cr_limits limits;
	struct cr_strlist env;		/* variable names passed from corral's env */
	const struct cr_profile *profile; /* static, never NULL once parsed */
	uint64_t artifact_files;	/* "artifacts": at most this many exported */
	uint64_t artifact_bytes;	/* and this many bytes together */
	struct cr_alert_limits alerts;	/* "alerts": when the audit raises one */
	bool env_secrets_refuse;	/* "env_secrets": "refuse" (else "warn") */
	struct cr_credential *credentials; /* owned array, "credentials" */
	size_t ncredentials;
};

/* Defaults of the optional "artifacts" class key. */
#define CR_ARTIFACT_FILES_DEFAULT 1000
#define CR_ARTIFACT_BYTES_DEFAULT (256ull << 20)

struct cr_policy {
	char *version;			/* owned */
	struct cr_class *classes;	/* owned array */
	size_t nclasses;
};

/* Compiled-in copy of policy/default.json (NUL-terminated). */
extern const char cr_default_policy_json[];

/* Parse and validate a policy document strictly. On error returns -EINVAL and
 * writes "FILE:LINE: key.path: what is wrong" into err. */
int cr_policy_parse(const char *text, size_t len, const char *filename,
		    struct cr_policy **out, char *err, size_t errlen);
void cr_policy_free(struct cr_policy *p);
const struct cr_class *cr_policy_class(const struct cr_policy *p,
				       const char *name);
/* The policy as normalised JSON (sorted as the contract lists keys, limits in
 * canonical units). Caller frees. NULL on allocation failure. */
char *cr_policy_to_json(const struct cr_policy *p);

/* "auto", "off", "require"; parse returns -1 for anything else. */
const char *cr_landlock_mode_name(enum cr_landlock_mode m);
int cr_landlock_mode_parse(const char *s);

const char *cr_limit_name(enum cr_limit_id id);	/* "net-bytes" */
const char *cr_limit_usage_key(enum cr_limit_id id);	/* never NULL */
enum cr_limit_kind cr_limit_kind(enum cr_limit_id id);
/* Returns the id for a contract name, or -1. */
int cr_limit_lookup(const char *name);
/* Parse one value as written on the command line (--limit NAME=VALUE). */
int cr_limit_parse_value(enum cr_limit_id id, const char *text, uint64_t *out,
			 char *err, size_t errlen);
/* Format a value in its canonical unit ("30s", "512MiB", "64"). */
void cr_limit_format(enum cr_limit_id id, uint64_t v, char *buf, size_t len);

/* Validate one --allow-net / net.allow destination. 0 or -EINVAL. */
int cr_net_dest_validate(const char *dest, char *err, size_t errlen);

struct cr_input {
	char *from;	/* owned */
	char *to;	/* owned */
	bool extract;
};

struct cr_env_pair {
	char *name;	/* owned */
	char *value;	/* owned */
};

struct cr_request {
	char *id;			/* owned, may be NULL */
	char **command;			/* owned, NULL-terminated, argc >= 1 */
	size_t argc;
	char *cwd;			/* owned, relative, no "..", may be NULL */
	char *class_name;		/* owned, may be NULL */
	struct cr_input *inputs;	/* owned */
	size_t ninputs;
	struct cr_strlist outputs;
	struct cr_env_pair *env;	/* owned */
	size_t nenv;
	struct cr_strlist network;
	uint32_t limits_set;		/* bit (1u << cr_limit_id) */
	struct cr_limits limits;
	char *stdin_text;		/* owned, may be NULL */
	size_t stdin_len;
};

/* Parse a request document strictly (errors as for policies). */
int cr_request_parse(const char *text, size_t len, const char *filename,
		     struct cr_request **out, char *err, size_t errlen);
void cr_request_free(struct cr_request *r);
/* A request may only narrow its class. Returns 0, or -EPERM with a reason in
 * err ("limits.wall: 2h is more than the class allows (60s)"). */
int cr_request_narrows(const struct cr_request *r, const struct cr_class *c,
		       char *err, size_t errlen);

/* Task ids: 1..64 chars of [A-Za-z0-9._-], not starting with '.' or '-'. */
bool cr_task_id_valid(const char *id);


/* ---- Helpers for the command line and the tracer (same rules as the
 * policy parser, so --ro PATH or --env NAME is checked exactly like JSON). */

/* Documents larger than these are refused before parsing. */
#define CR_POLICY_MAX_BYTES	(1u << 20)
/* Paths in one of a class's fs lists (read, write, exec, deny). */
#define CR_POLICY_MAX_PATHS	4096
#define CR_REQUEST_MAX_BYTES	(1u << 20)

void cr_strlist_free(struct cr_strlist *l);
/* Append a copy of s (the array stays NULL-terminated): 0 or -ENOMEM. */
int cr_strlist_push(struct cr_strlist *l, const char *s);
/* Absolute path, no "." / ".." / empty components, trailing '/' dropped
 * ("/usr/" -> "/usr", "/" stays). *out is malloc'd. 0, -EINVAL with the
 * reason in msg, or -ENOMEM. */
int cr_path_normalise(const char *in, char **out, char *msg, size_t msglen);
/* Non-empty, relative to the workspace, no ".." component. 0 or -EINVAL. */
int cr_rel_path_check(const char *p, char *msg, size_t msglen);
/* An output pattern: a relative path as above, of at most this many
 * components ("." and empty ones not counted): a deeper entry than the
 * export walks (256 directories and a name) is never matched, so a
 * longer pattern could only be cut short, which would name a directory
 * and export everything below it. 0 or -EINVAL. */
#define CR_OUTPUT_MAX_COMPONENTS 257
int cr_output_pattern_check(const char *p, char *msg, size_t msglen);
/* [A-Za-z_][A-Za-z0-9_]{0,127} */
bool cr_env_name_valid(const char *name);
/* [A-Za-z0-9._-]{1,64} */
bool cr_class_name_valid(const char *name);
/* Parse one limit value: json_number says text is the raw token of a JSON
 * number (digits only, at most 2^53), otherwise it is string content. On
 * error msg holds what is wrong, without location. 0 or -EINVAL. */
int cr_limit_parse_token(enum cr_limit_id id, const char *text,
			 bool json_number, uint64_t *out, char *msg,
			 size_t msglen);
/* s as a double-quoted, escaped, bounded string for messages; returns buf. */
const char *cr_str_quote(const char *s, char *buf, size_t len);

/* ---- Inside policy/ (and its tests): a parsed JSON document that knows
 * where each value was written. cJSON keeps no positions, so the text is
 * scanned once more to map every value to its line and key path
 * ("classes.default.fs.read[2]") and to reject duplicate keys. */

struct cJSON;
struct cr_jnode;

struct cr_jdoc {
	const char *file;		/* borrowed: the name used in messages */
	struct cJSON *root;		/* owned */
	struct cr_jnode *nodes;		/* owned: every value, document order */
	size_t nnodes;
	size_t *by_item;		/* owned: node indices by cJSON address */
	char *keys;			/* owned: decoded keys, NUL-separated */
	const char *text;		/* borrowed */
	size_t len;
	char *err;			/* borrowed: where messages go */
	size_t errlen;
};

/* Parse text (at most max bytes) strictly: syntax, NUL bytes, duplicate
 * keys, control characters and invalid UTF-8 in strings are errors. On error
 * returns -EINVAL (or -ENOMEM), with "FILE:LINE: key.path: what" in err; the
 * document may always be closed. */
int cr_jdoc_open(struct cr_jdoc *d, const char *text, size_t len,
		 const char *file, size_t max, char *err, size_t errlen);
void cr_jdoc_close(struct cr_jdoc *d);
#define cr_autojdoc __attribute__((cleanup(cr_jdoc_close)))
/* Line of the value (of its key, for object members); 0 if unknown. */
unsigned cr_jdoc_line(const struct cr_jdoc *d, const struct cJSON *item);
/* Key path of the value; "(document)" for the root. Returns buf. */
const char *cr_jdoc_path(const struct cr_jdoc *d, const struct cJSON *item,
			 char *buf, size_t len);
/* The value's bytes as written (numbers keep their exact digits). */
const char *cr_jdoc_raw(const struct cr_jdoc *d, const struct cJSON *item,
			size_t *len);
/* Line of the value at a key path, 0 if there is none (used by tests). */
unsigned cr_jdoc_find_line(const struct cr_jdoc *d, const char *path);
/* Writes "FILE:LINE: key.path: <fmt>" for item into the error buffer and
 * returns -EINVAL. */
int cr_jdoc_fail(const struct cr_jdoc *d, const struct cJSON *item,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Strict typed access (policy/jsonwalk.c). Each returns 0 or -EINVAL with
 * a located message. */
/* item is an object whose keys are all in the NULL-terminated known list. */
int cr_jdoc_check_keys(const struct cr_jdoc *d, const struct cJSON *item,
		       const char *const *known);
/* Member of obj named exactly key, or NULL. */
const struct cJSON *cr_jdoc_get(const struct cJSON *obj, const char *key);
int cr_jdoc_want_object(const struct cr_jdoc *d, const struct cJSON *item);
int cr_jdoc_want_bool(const struct cr_jdoc *d, const struct cJSON *item,
		      bool *out);
/* A string (no other type); *out is a malloc'd copy. */
int cr_jdoc_want_string(const struct cr_jdoc *d, const struct cJSON *item,
			char **out);
/* An array of strings, each passed through check, which may replace it by
 * a normalised malloc'd copy in *norm (else it is copied as is). */
typedef int (*cr_jdoc_check_fn)(const char *s, char **norm, char *msg,
				size_t msglen);
int cr_jdoc_want_strlist(const struct cr_jdoc *d, const struct cJSON *item,
			 cr_jdoc_check_fn check, struct cr_strlist *out);
/* A limit's value, located errors. */
int cr_jdoc_want_limit(const struct cr_jdoc *d, const struct cJSON *item,
		       enum cr_limit_id id, uint64_t *out);

#endif
