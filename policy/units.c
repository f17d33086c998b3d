/* policy/units.c: the ten limits' names, kinds and zero rules, and exact
 * parsing and formatting of their values (ms s m h, B KiB MiB GiB TiB). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "corral/policy.h"
#include "corral/util.h"

/* Largest integer a JSON number may carry: beyond it a double (what most
 * JSON writers and readers use) no longer holds every integer exactly. */
#define JSON_INT_MAX (UINT64_C(1) << 53)

struct limit_info {
	const char *name;
	const char *usage;
	enum cr_limit_kind kind;
	bool zero_ok;	/* 0 means "none allowed" rather than nonsense */
};

static const struct limit_info limits[CR_LIM__COUNT] = {
	[CR_LIM_CPU] = { "cpu", "cpu_ms", CR_KIND_TIME, false },
	[CR_LIM_MEMORY] = { "memory", "peak_memory_bytes", CR_KIND_SIZE,
			    false },
	[CR_LIM_WALL] = { "wall", "wall_ms", CR_KIND_TIME, false },
	[CR_LIM_PROCESSES] = { "processes", "processes", CR_KIND_COUNT, false },
	[CR_LIM_OUTPUT] = { "output", "output_bytes", CR_KIND_SIZE, true },
	[CR_LIM_DISK] = { "disk", "disk_bytes", CR_KIND_SIZE, true },
	[CR_LIM_FILES] = { "files", "files", CR_KIND_COUNT, true },
	[CR_LIM_NET_BYTES] = { "net-bytes", "net_bytes", CR_KIND_SIZE, true },
	[CR_LIM_NET_CONNECTIONS] = { "net-connections", "net_connections",
				     CR_KIND_COUNT, true },
	[CR_LIM_NET_CONN_TIME] = { "net-conn-time", "net_conn_time_ms",
				   CR_KIND_TIME, false },
};

struct unit {
	const char *suffix;
	uint64_t mult;
};

/* Largest first: cr_limit_format picks the first that divides exactly. */
static const struct unit time_units[] = {
	{ "h", UINT64_C(3600000) },
	{ "m", UINT64_C(60000) },
	{ "s", UINT64_C(1000) },
	{ "ms", 1 },
};

static const struct unit size_units[] = {
	{ "TiB", UINT64_C(1) << 40 },
	{ "GiB", UINT64_C(1) << 30 },
	{ "MiB", UINT64_C(1) << 20 },
	{ "KiB", UINT64_C(1) << 10 },
	{ "B", 1 },
};

static bool valid_id(enum cr_limit_id id)
{
	return (unsigned)id < CR_LIM__COUNT;
}

const char *cr_limit_name(enum cr_limit_id id)
{
	return valid_id(id) ? limits[id].name : "unknown";
}

const char *cr_limit_usage_key(enum cr_limit_id id)
{
	return valid_id(id) ? limits[id].usage : "unknown";
}

enum cr_limit_kind cr_limit_kind(enum cr_limit_id id)
{
	return valid_id(id) ? limits[id].kind : CR_KIND_COUNT;
}

int cr_limit_lookup(const char *name)
{
	int i;

	if (!name)
		return -1;
	for (i = 0; i < CR_LIM__COUNT; i++)
		if (!strcmp(limits[i].name, name))
			return i;
	return -1;
}

static const char *kind_word(enum cr_limit_kind k)
{
	switch (k) {
	case CR_KIND_TIME:
		return "a time (units: ms s m h)";
	case CR_KIND_SIZE:
		return "a size (units: B KiB MiB GiB TiB)";
	case CR_KIND_COUNT:
		return "a count (digits only)";
	}
	return "a value";
}

/* Leading digits to uint64. Returns 0 when there are none, 1 when they fit,
 * -1 when they overflow; *used is the number of digits either way. */
static int read_digits(const char *s, uint64_t *out, size_t *used)
{
	bool over = false;
	uint64_t v = 0;
	size_t i;

	for (i = 0; s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			over = true;
		else
			v = v * 10 + d;
	}
	*out = over ? UINT64_MAX : v;
	*used = i;
	if (!i)
		return 0;
	return over ? -1 : 1;
}

static int parse_json_number(enum cr_limit_id id, const char *text,
			     uint64_t *out, char *msg, size_t msglen)
{
	size_t used;
	uint64_t v;
	int r;

	if (text[0] == '-') {
		cr_errf(msg, msglen, "%s is negative", text);
		return -EINVAL;
	}
	if (strpbrk(text, "eE")) {
		cr_errf(msg, msglen, "%s: write the number without an exponent",
			text);
		return -EINVAL;
	}
	if (strchr(text, '.')) {
		cr_errf(msg, msglen, "%s is not a whole number", text);
		return -EINVAL;
	}
	r = read_digits(text, &v, &used);
	if (r == 0 || text[used]) {
		cr_errf(msg, msglen, "%s is not a number", text);
		return -EINVAL;
	}
	if (r < 0 || v > JSON_INT_MAX) {
		cr_errf(msg, msglen, "%s is more than 2^53, the largest exact "
			"JSON integer (write it as a string)", text);
		return -EINVAL;
	}
	if (limits[id].kind == CR_KIND_TIME) {
		cr_errf(msg, msglen, "%s needs a unit: write \"%ss\" or "
			"\"%sms\" (units: ms s m h)", text, text, text);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_string(enum cr_limit_id id, const char *text, uint64_t *out,
			char *msg, size_t msglen)
{
	enum cr_limit_kind kind = limits[id].kind;
	const struct unit *units = NULL;
	size_t nunits = 0, used, i;
	char q[96];
	uint64_t v, mult = 0;
	const char *rest;
	int r;

	cr_str_quote(text, q, sizeof(q));
	if (text[0] == '-') {
		cr_errf(msg, msglen, "%s is negative", q);
		return -EINVAL;
	}
	r = read_digits(text, &v, &used);
	if (r == 0) {
		cr_errf(msg, msglen, "%s is not %s", q, kind_word(kind));
		return -EINVAL;
	}
	rest = text + used;
	if (rest[0] == '.' || ((rest[0] == 'e' || rest[0] == 'E') &&
			       rest[1] >= '0' && rest[1] <= '9')) {
		cr_errf(msg, msglen, "%s is not %s: write a whole number, "
			"without decimals or exponent", q, kind_word(kind));
		return -EINVAL;
	}
	if (kind == CR_KIND_TIME) {
		units = time_units;
		nunits = CR_ARRAY_SIZE(time_units);
	} else if (kind == CR_KIND_SIZE) {
		units = size_units;
		nunits = CR_ARRAY_SIZE(size_units);
	}
	if (!rest[0]) {
		/* A bare number: bytes, or a count. A time needs its unit,
		 * except 0, which is 0 in any unit. */
		if (kind == CR_KIND_TIME && (r < 0 || v)) {
			cr_errf(msg, msglen, "%s needs a unit (ms s m h), "
				"e.g. \"%.24ss\"", q, text);
			return -EINVAL;
		}
		mult = 1;
	} else {
		for (i = 0; i < nunits; i++)
			if (!strcmp(rest, units[i].suffix))
				mult = units[i].mult;
		if (!mult) {
			cr_errf(msg, msglen, "%s is not %s", q,
				kind_word(kind));
			return -EINVAL;
		}
	}
	if (r < 0 || v > UINT64_MAX / mult) {
		cr_errf(msg, msglen, "%s is too large (more than %" PRIu64
			"%s)", q, UINT64_MAX,
			kind == CR_KIND_TIME ? " ms" :
			kind == CR_KIND_SIZE ? " bytes" : "");
		return -EINVAL;
	}
	*out = v * mult;
	return 0;
}

int cr_limit_parse_token(enum cr_limit_id id, const char *text,
			 bool json_number, uint64_t *out, char *msg,
			 size_t msglen)
{
	uint64_t v = 0;
	int rc;

	if (!valid_id(id) || !text) {
		cr_errf(msg, msglen, "no such limit");
		return -EINVAL;
	}
	if (json_number)
		rc = parse_json_number(id, text, &v, msg, msglen);
	else
		rc = parse_string(id, text, &v, msg, msglen);
	if (rc)
		return rc;
	if (!v && !limits[id].zero_ok) {
		char q[96];

		if (json_number)
			snprintf(q, sizeof(q), "%s", text);
		else
			cr_str_quote(text, q, sizeof(q));
		cr_errf(msg, msglen, "%s: %s must be more than zero", q,
			limits[id].name);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int cr_limit_parse_value(enum cr_limit_id id, const char *text, uint64_t *out,
			 char *err, size_t errlen)
{
	char msg[256];
	int rc;

	rc = cr_limit_parse_token(id, text, false, out, msg, sizeof(msg));
	if (rc)
		cr_errf(err, errlen, "%s: %s", cr_limit_name(id), msg);
	return rc;
}

void cr_limit_format(enum cr_limit_id id, uint64_t v, char *buf, size_t len)
{
	enum cr_limit_kind kind = cr_limit_kind(id);
	const struct unit *units;
	size_t n, i;

	if (!len)
		return;
	if (kind == CR_KIND_COUNT) {
		snprintf(buf, len, "%" PRIu64, v);
		return;
	}
	units = kind == CR_KIND_TIME ? time_units : size_units;
	n = kind == CR_KIND_TIME ? CR_ARRAY_SIZE(time_units) :
				   CR_ARRAY_SIZE(size_units);
	if (!v) {
		snprintf(buf, len, "0%s", kind == CR_KIND_TIME ? "s" : "B");
		return;
	}
	for (i = 0; i < n; i++) {
		if (v % units[i].mult == 0) {
			snprintf(buf, len, "%" PRIu64 "%s", v / units[i].mult,
				 units[i].suffix);
			return;
		}
	}
}
