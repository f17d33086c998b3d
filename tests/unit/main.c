/* tests/unit/main.c: runs every unit test of policy/, one PASS/FAIL line
 * each, and exits non-zero when any failed. */
#include <stdarg.h>
#include <stdlib.h>

#include "harness.h"

void cr_test_failf(struct cr_test *t, const char *file, int line,
		   const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	char *p;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!t->failed)
		snprintf(t->detail, sizeof(t->detail), "%s:%d: %s", file, line,
			 msg);
	t->failed = true;
	/* One line per test, whatever the message holds. */
	for (p = t->detail; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

static int parse(bool request, const char *text, char *err, size_t errlen)
{
	if (request) {
		struct cr_request *r = NULL;
		int rc = cr_request_parse(text, strlen(text), "t.json", &r, err,
					  errlen);

		cr_request_free(r);
		return rc;
	} else {
		struct cr_policy *p = NULL;
		int rc = cr_policy_parse(text, strlen(text), "t.json", &p, err,
					 errlen);

		cr_policy_free(p);
		return rc;
	}
}

const char *cr_test_doc_err(bool request, const char *text, ...)
{
	static char why[1400];
	char err[600] = "";
	const char *needle;
	va_list ap;
	int rc;

	rc = parse(request, text, err, sizeof(err));
	if (rc != -EINVAL) {
		snprintf(why, sizeof(why), "rc %d != -EINVAL (err \"%s\") for "
			 "%.300s", rc, err, text);
		return why;
	}
	va_start(ap, text);
	while ((needle = va_arg(ap, const char *))) {
		if (!strstr(err, needle)) {
			va_end(ap);
			snprintf(why, sizeof(why), "\"%s\" lacks \"%s\"", err,
				 needle);
			return why;
		}
	}
	va_end(ap);
	return NULL;
}

const char *cr_test_doc_ok(bool request, const char *text)
{
	static char why[1400];
	char err[600] = "";
	int rc;

	rc = parse(request, text, err, sizeof(err));
	if (!rc)
		return NULL;
	snprintf(why, sizeof(why), "rc %d for %.300s: %s", rc, text, err);
	return why;
}

const char *cr_test_policy(const char *fs, const char *net,
			   const char *limits, const char *env)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf),
		 "{\n"
		 "  \"version\": \"t\",\n"
		 "  \"classes\": {\n"
		 "    \"x\": {\n"
		 "      \"fs\": %s,\n"
		 "      \"net\": %s,\n"
		 "      \"limits\": {\n"
		 "        %s\n"
		 "      },\n"
		 "      \"env\": %s\n"
		 "    }\n"
		 "  }\n"
		 "}\n",
		 fs ? fs : "{\"read\": [\"/usr\"], \"write\": [], "
			   "\"exec\": [\"/usr/bin\"], \"deny\": []}",
		 net ? net : "{\"allow\": []}",
		 limits ? limits : cr_test_limits(NULL, NULL),
		 env ? env : "[\"PATH\"]");
	return buf;
}

const char *cr_test_limits(const char *name, const char *value)
{
	static const char *const ok[][2] = {
		{ "cpu", "\"1s\"" },
		{ "memory", "\"1MiB\"" },
		{ "wall", "\"2s\"" },
		{ "processes", "4" },
		{ "output", "\"1KiB\"" },
		{ "disk", "0" },
		{ "files", "10" },
		{ "net-bytes", "\"0\"" },
		{ "net-connections", "0" },
		{ "net-conn-time", "\"1s\"" },
	};
	static char buf[2048];
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < CR_ARRAY_SIZE(ok); i++) {
		const char *v = ok[i][1];

		if (name && !strcmp(name, ok[i][0])) {
			if (!value)
				continue;
			v = value;
		}
		used += (size_t)snprintf(buf + used, sizeof(buf) - used,
					 "%s\"%s\": %s", used ? ", " : "",
					 ok[i][0], v);
		if (used >= sizeof(buf))
			break;
	}
	return buf;
}

struct entry {
	const char *name;
	void (*fn)(struct cr_test *t);
};

#define CR_ENTRY_(name) { #name, cr_test_##name },
static const struct entry tests[] = { CR_UNIT_TESTS(CR_ENTRY_) };
#undef CR_ENTRY_

int main(int argc, char **argv)
{
	size_t i, failed = 0;

	for (i = 0; i < CR_ARRAY_SIZE(tests); i++) {
		struct cr_test t = { .name = tests[i].name };

		if (argc > 1 && strcmp(argv[1], tests[i].name))
			continue;
		tests[i].fn(&t);
		if (t.failed) {
			printf("FAIL: unit/%s: %s\n", t.name, t.detail);
			failed++;
		} else {
			printf("PASS: unit/%s\n", t.name);
		}
		fflush(stdout);
	}
	return failed ? 1 : 0;
}
