/* tests/unit/test_policy.c: policy parsing (every error kind, with file,
 * line and key path), the default policy, and the to_json round trip. */
#include <limits.h>
#include <stdlib.h>

#include "harness.h"

static const char *parse_ok(const char *text, struct cr_policy **p)
{
	static char why[900];
	char err[512] = "";
	int rc = cr_policy_parse(text, strlen(text), "t.json", p, err,
				 sizeof(err));

	if (!rc)
		return NULL;
	snprintf(why, sizeof(why), "rc %d: %s", rc, err);
	return why;
}

static bool has(const struct cr_strlist *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return true;
	return false;
}

/* NULL when parse(to_json(p)) prints the same text again. */
static const char *round_trip(const struct cr_policy *p, char **json_out)
{
	static char why[600];
	struct cr_policy *q = NULL;
	char err[512] = "", *a, *b;
	int rc;

	*json_out = NULL;
	a = cr_policy_to_json(p);
	if (!a)
		return "cr_policy_to_json returned NULL";
	rc = cr_policy_parse(a, strlen(a), "printed.json", &q, err,
			     sizeof(err));
	if (rc) {
		snprintf(why, sizeof(why), "printed policy does not parse: %s",
			 err);
		free(a);
		return why;
	}
	b = cr_policy_to_json(q);
	cr_policy_free(q);
	if (!b || strcmp(a, b)) {
		snprintf(why, sizeof(why), "second print differs: %.200s", b);
		free(a);
		free(b);
		return why;
	}
	free(b);
	*json_out = a;
	return NULL;
}

TEST_IMPL(policy_minimal)
{
	struct cr_policy *p = NULL;
	const struct cr_class *c;
	const char *why;

	why = parse_ok(cr_test_policy(NULL, NULL, NULL, NULL), &p);
	if (why)
		FAIL_("%s", why);
	ASSERT_STREQ(p->version, "t");
	ASSERT_EQ(p->nclasses, 1);
	c = cr_policy_class(p, "x");
	ASSERT(c != NULL);
	ASSERT(cr_policy_class(p, "y") == NULL);
	ASSERT(cr_policy_class(p, NULL) == NULL);
	ASSERT_STREQ(c->name, "x");
	ASSERT_EQ(c->fs_read.n, 1);
	ASSERT_STREQ(c->fs_read.v[0], "/usr");
	ASSERT(c->fs_read.v[1] == NULL);
	ASSERT_EQ(c->fs_write.n, 0);
	ASSERT(c->fs_write.v && !c->fs_write.v[0]);
	ASSERT_EQ(c->fs_exec.n, 1);
	ASSERT_EQ(c->fs_hide, false);
	ASSERT_EQ(c->net_allow.n, 0);
	ASSERT_UEQ(c->limits.v[CR_LIM_CPU], 1000);
	ASSERT_UEQ(c->limits.v[CR_LIM_MEMORY], 1 << 20);
	ASSERT_UEQ(c->limits.v[CR_LIM_WALL], 2000);
	ASSERT_UEQ(c->limits.v[CR_LIM_PROCESSES], 4);
	ASSERT_UEQ(c->limits.v[CR_LIM_OUTPUT], 1024);
	ASSERT_UEQ(c->limits.v[CR_LIM_DISK], 0);
	ASSERT_UEQ(c->limits.v[CR_LIM_FILES], 10);
	ASSERT_UEQ(c->limits.v[CR_LIM_NET_BYTES], 0);
	ASSERT_UEQ(c->limits.v[CR_LIM_NET_CONNECTIONS], 0);
	ASSERT_UEQ(c->limits.v[CR_LIM_NET_CONN_TIME], 1000);
	ASSERT_EQ(c->env.n, 1);
	ASSERT_STREQ(c->env.v[0], "PATH");
	cr_policy_free(p);
	p = NULL;

	/* fs, net and env may be left out: they mean nothing allowed. */
	why = parse_ok("{\"version\": \"v\", \"classes\": {\"a\": {\"limits\": {"
		       "\"cpu\": \"1s\", \"memory\": 1, \"wall\": \"1s\", "
		       "\"processes\": 1, \"output\": 0, \"disk\": 0, "
		       "\"files\": 0, \"net-bytes\": 0, \"net-connections\": 0, "
		       "\"net-conn-time\": \"1s\"}}, \"b\": {\"fs\": {\"hide\": "
		       "true}, \"limits\": {\"cpu\": \"1s\", \"memory\": 1, "
		       "\"wall\": \"1s\", \"processes\": 1, \"output\": 0, "
		       "\"disk\": 0, \"files\": 0, \"net-bytes\": 0, "
		       "\"net-connections\": 0, \"net-conn-time\": \"1s\"}}}}",
		       &p);
	if (why)
		FAIL_("%s", why);
	ASSERT_EQ(p->nclasses, 2);
	c = cr_policy_class(p, "a");
	ASSERT(c && c->fs_read.v && c->net_allow.v && c->env.v);
	ASSERT_EQ(c->fs_read.n + c->fs_write.n + c->fs_exec.n + c->fs_deny.n +
		  c->net_allow.n + c->env.n, 0);
	ASSERT_EQ(c->fs_hide, false);
	ASSERT_EQ(cr_policy_class(p, "b")->fs_hide, true);
	ASSERT_STREQ(p->classes[1].name, "b");
	cr_policy_free(p);
	cr_policy_free(NULL);
}

TEST_IMPL(policy_paths)
{
	static const struct {
		const char *in, *out;
	} good[] = {
		{ "/usr", "/usr" }, { "/usr/", "/usr" }, { "/usr///", "/usr" },
		{ "/", "/" }, { "//", "/" }, { "/a/b/c/", "/a/b/c" },
		{ "/a.b/c..d/.e/...", "/a.b/c..d/.e/..." },
		{ "/etc/ld.so.cache", "/etc/ld.so.cache" },
	};
	static const char *const bad[] = {
		"usr", "", "./usr", "~/x", "/usr/../etc", "/usr/..", "/..",
		"/usr/./lib", "/.", "/usr//lib", "//usr", "/a/./", "/a/../",
	};
	struct cr_policy *p = NULL;
	char msg[256], *out;
	const char *why;
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(good); i++) {
		int rc = cr_path_normalise(good[i].in, &out, msg, sizeof(msg));

		if (rc)
			FAIL_("\"%s\" refused: %s", good[i].in, msg);
		if (strcmp(out, good[i].out)) {
			free(out);
			FAIL_("\"%s\" -> \"%s\"", good[i].in, good[i].out);
		}
		free(out);
	}
	for (i = 0; i < CR_ARRAY_SIZE(bad); i++) {
		int rc = cr_path_normalise(bad[i], &out, msg, sizeof(msg));

		if (rc != -EINVAL) {
			free(out);
			FAIL_("\"%s\" accepted", bad[i]);
		}
		ASSERT(out == NULL);
	}
	why = parse_ok(cr_test_policy("{\"read\": [\"/usr/\", \"/\"], "
				      "\"write\": [\"/tmp/x/\"], \"exec\": "
				      "[\"/bin//\"], \"deny\": [\"/usr/a/\"]}",
				      NULL, NULL, NULL), &p);
	if (why)
		FAIL_("%s", why);
	ASSERT_STREQ(p->classes[0].fs_read.v[0], "/usr");
	ASSERT_STREQ(p->classes[0].fs_read.v[1], "/");
	ASSERT_STREQ(p->classes[0].fs_write.v[0], "/tmp/x");
	ASSERT_STREQ(p->classes[0].fs_exec.v[0], "/bin");
	ASSERT_STREQ(p->classes[0].fs_deny.v[0], "/usr/a");
	cr_policy_free(p);
}

TEST_IMPL(policy_path_errors)
{
	char *longp = malloc(PATH_MAX + 64), *fs = malloc(PATH_MAX + 128);

	ASSERT_POLICY_ERR(cr_test_policy("{\"read\": [\"usr\"]}", NULL, NULL,
					 NULL),
			  "t.json:5: classes.x.fs.read[0]: \"usr\" is not an "
			  "absolute path");
	ASSERT_POLICY_ERR(cr_test_policy("{\"read\": [\"/a\", \"/usr/../etc\"]}",
					 NULL, NULL, NULL),
			  "t.json:5: classes.x.fs.read[1]: \"/usr/../etc\" "
			  "has a \"..\" component");
	ASSERT_POLICY_ERR(cr_test_policy("{\"write\": [\"/usr/./lib\"]}",
					 NULL, NULL, NULL),
			  "classes.x.fs.write[0]: \"/usr/./lib\" has a \".\" "
			  "component");
	ASSERT_POLICY_ERR(cr_test_policy("{\"exec\": [\"/usr//lib\"]}", NULL,
					 NULL, NULL),
			  "classes.x.fs.exec[0]: \"/usr//lib\" has an empty "
			  "component");
	ASSERT_POLICY_ERR(cr_test_policy("{\"deny\": [\"\"]}", NULL, NULL,
					 NULL),
			  "classes.x.fs.deny[0]: \"\" is not an absolute path");
	ASSERT_POLICY_ERR(cr_test_policy("{\"read\": [\"/usr\\u0000/x\"]}",
					 NULL, NULL, NULL),
			  "t.json:5: classes.x.fs.read[0]: string contains a "
			  "NUL character");
	ASSERT_POLICY_ERR(cr_test_policy("{\"read\": [\"/\\u002e\\u002e\"]}",
					 NULL, NULL, NULL),
			  "classes.x.fs.read[0]: \"/..\" has a \"..\" "
			  "component");
	ASSERT(longp && fs);
	memset(longp, 'a', PATH_MAX + 10);
	longp[0] = '/';
	longp[PATH_MAX + 10] = '\0';
	snprintf(fs, PATH_MAX + 128, "{\"read\": [\"%s\"]}", longp);
	ASSERT_POLICY_ERR(cr_test_policy(fs, NULL, NULL, NULL),
			  "classes.x.fs.read[0]:", "is longer than");
	free(longp);
	free(fs);
}

TEST_IMPL(policy_unknown_keys)
{
	char text[4096];

	snprintf(text, sizeof(text), "%.*s,\n  \"extra\": 1\n}",
		 (int)(strrchr(cr_test_policy(NULL, NULL, NULL, NULL), '}') -
		       cr_test_policy(NULL, NULL, NULL, NULL) - 1),
		 cr_test_policy(NULL, NULL, NULL, NULL));
	ASSERT_POLICY_ERR(text, "t.json:13: extra: unknown key (expected one "
			  "of: version, classes)");
	ASSERT_POLICY_ERR("{\"Version\": \"v\"}", "t.json:1: Version: "
			  "unknown key");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, NULL,
					 "[], \"syscall\": \"x\""),
			  "t.json:10: classes.x.syscall: unknown key "
			  "(expected one of: fs, net, limits, env, syscalls, "
			  "artifacts, alerts, env_secrets, credentials, landlock, data-backstop)");
	ASSERT_POLICY_ERR(cr_test_policy("{\"raed\": []}", NULL, NULL, NULL),
			  "t.json:5: classes.x.fs.raed: unknown key (expected "
			  "one of: read, write, exec, deny, hide, strict-metadata, "
			  "fast-open)");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, "{\"deny\": []}", NULL, NULL),
			  "t.json:6: classes.x.net.deny: unknown key (expected "
			  "one of: allow)");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("cpu", "\"1s\", "
							"\"cpu_ms\": 5"),
					 NULL),
			  "t.json:8: classes.x.limits.cpu_ms: unknown key "
			  "(expected one of: cpu, memory, wall, processes");
}

TEST_IMPL(policy_wrong_types)
{
	ASSERT_POLICY_ERR("[]", "t.json:1: (document): expected an object, "
			  "got an array");
	ASSERT_POLICY_ERR("{\"version\": 1, \"classes\": {}}",
			  "t.json:1: version: expected a string, got a number");
	ASSERT_POLICY_ERR("{\"version\": \"v\",\n \"classes\": []}",
			  "t.json:2: classes: expected an object, got an "
			  "array");
	ASSERT_POLICY_ERR("{\"version\": \"v\", \"classes\": {\"x\": null}}",
			  "classes.x: expected an object, got null");
	ASSERT_POLICY_ERR(cr_test_policy("\"/usr\"", NULL, NULL, NULL),
			  "t.json:5: classes.x.fs: expected an object, got a "
			  "string");
	ASSERT_POLICY_ERR(cr_test_policy("{\"read\": \"/usr\"}", NULL, NULL,
					 NULL),
			  "t.json:5: classes.x.fs.read: expected an array of "
			  "strings, got a string");
	ASSERT_POLICY_ERR(cr_test_policy("{\"read\": [\"/a\", 1]}", NULL,
					 NULL, NULL),
			  "classes.x.fs.read[1]: expected a string, got a "
			  "number");
	ASSERT_POLICY_ERR(cr_test_policy("{\"hide\": \"yes\"}", NULL, NULL,
					 NULL),
			  "classes.x.fs.hide: expected true or false, got a "
			  "string");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, "[]", NULL, NULL),
			  "t.json:6: classes.x.net: expected an object");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, "{\"allow\": {}}", NULL, NULL),
			  "classes.x.net.allow: expected an array of strings, "
			  "got an object");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, NULL, "\"PATH\""),
			  "t.json:10: classes.x.env: expected an array");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, NULL, "[false]"),
			  "classes.x.env[0]: expected a string, got false");
	ASSERT_POLICY_ERR("{\"version\": \"v\", \"classes\": {\"x\": "
			  "{\"limits\": []}}}",
			  "classes.x.limits: expected an object, got an array");
}

TEST_IMPL(policy_limit_errors)
{
	char err[512] = "";
	struct cr_policy *p = NULL;
	const char *text = cr_test_policy(NULL, NULL,
					  cr_test_limits("memory",
							 "\"12 parsecs\""),
					  NULL);

	ASSERT_EQ(cr_policy_parse(text, strlen(text), "policy.json", &p, err,
				  sizeof(err)), -EINVAL);
	ASSERT(p == NULL);
	ASSERT_STREQ(err, "policy.json:8: classes.x.limits.memory: \"12 "
			  "parsecs\" is not a size (units: B KiB MiB GiB TiB)");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("cpu", "\"30\""), NULL),
			  "t.json:8: classes.x.limits.cpu: \"30\" needs a "
			  "unit");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("wall", "\" 5s\""),
					 NULL),
			  "classes.x.limits.wall: \" 5s\" is not a time");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("files", "\"10k\""),
					 NULL),
			  "classes.x.limits.files: \"10k\" is not a count");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("disk", "\"-1MiB\""),
					 NULL),
			  "classes.x.limits.disk: \"-1MiB\" is negative");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("output", "\"1.5MiB\""),
					 NULL),
			  "classes.x.limits.output: \"1.5MiB\" is not a size");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("net-bytes",
					 "\"18446744073709551616\""), NULL),
			  "classes.x.limits.net-bytes:", "too large");
}

TEST_IMPL(policy_missing)
{
	int id;

	for (id = 0; id < CR_LIM__COUNT; id++) {
		char want[128];

		snprintf(want, sizeof(want), "t.json:7: classes.x.limits: "
			 "missing \"%s\"", cr_limit_name(id));
		ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
						 cr_test_limits(cr_limit_name(id),
								NULL), NULL),
				  want);
	}
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, "", NULL),
			  "classes.x.limits: missing \"cpu\"");
	ASSERT_POLICY_ERR("{\"version\": \"v\", \"classes\": {\n\"x\": {"
			  "\"fs\": {}}}}",
			  "t.json:2: classes.x: missing \"limits\"");
	ASSERT_POLICY_ERR("{\"classes\": {}}", "t.json:1: (document): missing "
			  "\"version\"");
	ASSERT_POLICY_ERR("{\n\"version\": \"v\"}", "t.json:1: (document): "
			  "missing \"classes\"");
	ASSERT_POLICY_ERR("{\"version\": \"v\",\n\"classes\": {}}",
			  "t.json:2: classes: no classes");
	ASSERT_POLICY_ERR("{\"version\": \"\", \"classes\": {}}",
			  "t.json:1: version: must be 1-128 printable");
	ASSERT_POLICY_ERR("{\"version\": \"a\\nb\", \"classes\": {}}",
			  "version: must be 1-128 printable");
	ASSERT_POLICY_ERR("{}", "(document): missing \"version\"");
}

TEST_IMPL(policy_names)
{
	static const char *const bad_class[] = {
		"bad name", "a/b", "", "x\\u00e9", "a:b",
		"0123456789012345678901234567890123456789012345678901234567890123x",
	};
	static const char *const bad_env[] = {
		"1FOO", "A-B", "", "A B", "A=B", "\\u00c4",
	};
	char text[1024], want[256];
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(bad_class); i++) {
		snprintf(text, sizeof(text), "{\"version\": \"v\", \"classes\": "
			 "{\n\"%s\": {}}}", bad_class[i]);
		ASSERT_POLICY_ERR(text, "t.json:2: classes.", "is not a valid "
				  "class name");
	}
	ASSERT(cr_class_name_valid("a.b-c_D9"));
	memset(text, 'a', 65);
	text[65] = '\0';
	ASSERT(!cr_class_name_valid(text));
	text[64] = '\0';
	ASSERT(cr_class_name_valid(text));
	ASSERT(!cr_class_name_valid(NULL));
	for (i = 0; i < CR_ARRAY_SIZE(bad_env); i++) {
		snprintf(text, sizeof(text), "[\"PATH\", \"%s\"]", bad_env[i]);
		snprintf(want, sizeof(want), "t.json:10: classes.x.env[1]: ");
		ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL, NULL, text), want,
				  "is not a valid variable name");
	}
	ASSERT(cr_env_name_valid("_X"));
	ASSERT(cr_env_name_valid("lower_case9"));
	ASSERT(cr_env_name_valid("LC_ALL"));
	ASSERT(!cr_env_name_valid("9"));
	ASSERT(!cr_env_name_valid(NULL));
	memset(text, 'A', 129);
	text[129] = '\0';
	ASSERT(!cr_env_name_valid(text));
	text[128] = '\0';
	ASSERT(cr_env_name_valid(text));
}

TEST_IMPL(policy_net)
{
	struct cr_policy *p = NULL;
	const char *why;

	static const char budgets[] =
		"\"cpu\": \"1s\", \"memory\": \"1MiB\", \"wall\": \"2s\", "
		"\"processes\": 4, \"output\": \"1KiB\", \"disk\": 0, "
		"\"files\": 10, \"net-bytes\": \"1MiB\", "
		"\"net-connections\": 2, \"net-conn-time\": \"1s\"";

	why = parse_ok(cr_test_policy(NULL, "{\"allow\": [\"pypi.org:443\", "
				      "\"10.0.0.0/8:*\", \"[::1]:80\", "
				      "\"[fe80::/10]:1-1024\"]}", budgets, NULL),
		       &p);
	if (why)
		FAIL_("%s", why);
	ASSERT_EQ(p->classes[0].net_allow.n, 4);
	ASSERT_STREQ(p->classes[0].net_allow.v[3], "[fe80::/10]:1-1024");
	cr_policy_free(p);
	/* Destinations with no connection or no byte to use them: refused,
	 * naming the budget's own line. */
	ASSERT_POLICY_ERR(cr_test_policy(NULL, "{\"allow\": [\"a.org:443\"]}",
					 NULL, NULL),
			  "t.json:8: classes.x.limits.net-connections: is 0 "
			  "but net.allow names destinations");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, "{\"allow\": [\"a.org:443\"]}",
					 cr_test_limits("net-connections", "3"),
					 NULL),
			  "t.json:8: classes.x.limits.net-bytes: is 0 but "
			  "net.allow names destinations");
	/* Zero budgets with nothing allowed are fine (the old default). */
	why = parse_ok(cr_test_policy(NULL, NULL, NULL, NULL), &p);
	if (why)
		FAIL_("%s", why);
	cr_policy_free(p);
	p = NULL;
	ASSERT_POLICY_ERR(cr_test_policy(NULL, "{\"allow\": [\"a.org:443\", "
					 "\"host:0\"]}", budgets, NULL),
			  "t.json:6: classes.x.net.allow[1]: \"host:0\" has a "
			  "port out of range");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, "{\"allow\": [\"::1:80\"]}",
					 budgets, NULL),
			  "classes.x.net.allow[0]: \"::1:80\" has an IPv6 "
			  "address outside brackets");
}

TEST_IMPL(policy_size_cap)
{
	const char *base = cr_test_policy(NULL, NULL, NULL, NULL);
	size_t blen = strlen(base), cap = CR_POLICY_MAX_BYTES;
	struct cr_policy *p = NULL;
	char *text = malloc(cap + 2), err[512];
	int rc;

	ASSERT(text);
	memset(text, ' ', cap + 1);
	memcpy(text, base, blen);
	/* Exactly at the cap: fine. */
	rc = cr_policy_parse(text, cap, "t.json", &p, err, sizeof(err));
	cr_policy_free(p);
	p = NULL;
	if (rc) {
		free(text);
		FAIL_("a policy of exactly 1 MiB refused: %s", err);
	}
	rc = cr_policy_parse(text, cap + 1, "t.json", &p, err, sizeof(err));
	free(text);
	ASSERT_EQ(rc, -EINVAL);
	ASSERT(p == NULL);
	ASSERT_STREQ(err, "t.json:1: (document): document is 1048577 bytes, "
			  "more than the limit of 1048576");
}

static const char *check_default(const struct cr_policy *p)
{
	static const char *const must_read[] = {
		"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/ld.so.cache",
		"/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
		"/etc/localtime", "/etc/ssl/certs", "/etc/nsswitch.conf",
		"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf",
		"/dev/null", "/etc/php", "/var/lib/ghc", "/etc/R", "/etc/texmf",
		"/var/lib/texmf", "/etc/ImageMagick-6", "/etc/emacs",
		"/etc/libreoffice", "/etc/gdb", "/etc/dejagnu", "/etc/dpkg",
		"/var/lib/dpkg", "/etc/fpc.cfg", "/etc/fpc-3.2.2.cfg",
		"/etc/racket", "/etc/mercurial", "/etc/subversion",
		"/etc/bind/bind.keys", "/etc/maven", "/etc/ssh/ssh_config",
		"/etc/ssh/ssh_config.d", "/etc/ssh/ssh_known_hosts",
		"/etc/screenrc", "/etc/xml", "/etc/sgml", "/var/lib/sgml-base",
	};
	static const char *const never[] = {
		"/", "/etc", "/etc/shadow", "/etc/gshadow", "/root", "/home",
		"/etc/bind", "/etc/bind/rndc.key", "/etc/ssh",
		"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key",
		"/etc/ssh/ssh_host_ecdsa_key", "/etc/ssl/private",
		"/tmp", "/var", "/run", "/proc", "/sys", "/dev",
	};
	static const char *const must_exec[] = {
		"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/lib",
		"/usr/libexec", "/usr/share", "/lib", "/lib64", "/usr/local/bin",
	};
	static const char *const env[] = {
		"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ",
	};
	static const uint64_t lim[CR_LIM__COUNT] = {
		[CR_LIM_CPU] = 30000, [CR_LIM_MEMORY] = 512ull << 20,
		[CR_LIM_WALL] = 60000, [CR_LIM_PROCESSES] = 64,
		[CR_LIM_OUTPUT] = 1 << 20, [CR_LIM_DISK] = 256ull << 20,
		[CR_LIM_FILES] = 10000, [CR_LIM_NET_BYTES] = 256ull << 20,
		[CR_LIM_NET_CONNECTIONS] = 64, [CR_LIM_NET_CONN_TIME] = 300000,
	};
	static char why[256];
	const struct cr_class *c = cr_policy_class(p, "default");
	size_t i;

	if (strcmp(p->version, "2026-12-07.2"))
		return "version is not 2026-12-07.2";
	if (!c || p->nclasses != 1)
		return "not exactly one class, \"default\"";
	for (i = 0; i < CR_ARRAY_SIZE(must_read); i++)
		if (!has(&c->fs_read, must_read[i]))
			return snprintf(why, sizeof(why), "%s not readable",
					must_read[i]), why;
	for (i = 0; i < CR_ARRAY_SIZE(never); i++)
		if (has(&c->fs_read, never[i]) || has(&c->fs_write, never[i]) ||
		    has(&c->fs_exec, never[i]))
			return snprintf(why, sizeof(why), "%s is open",
					never[i]), why;
	for (i = 0; i < CR_ARRAY_SIZE(must_exec); i++)
		if (!has(&c->fs_exec, must_exec[i]))
			return snprintf(why, sizeof(why), "%s not executable",
					must_exec[i]), why;
	if (c->fs_write.n || c->fs_deny.n || c->fs_hide || c->net_allow.n)
		return "write, deny, hide or net.allow is not empty/false";
	if (c->env.n != CR_ARRAY_SIZE(env))
		return "env is not the six variables";
	for (i = 0; i < CR_ARRAY_SIZE(env); i++)
		if (strcmp(c->env.v[i], env[i]))
			return "env differs";
	for (i = 0; i < CR_LIM__COUNT; i++)
		if (c->limits.v[i] != lim[i])
			return snprintf(why, sizeof(why), "limit %s is %" PRIu64,
					cr_limit_name(i), c->limits.v[i]), why;
	return NULL;
}

TEST_IMPL(policy_default_file)
{
	struct cr_policy *p = NULL;
	char *text = NULL, err[512];
	size_t len;
	int rc;

	rc = cr_read_file("policy/default.json", CR_POLICY_MAX_BYTES, &text,
			  &len);
	if (rc)
		FAIL_("cannot read policy/default.json (run from the "
		      "repository root): %s", strerror(-rc));
	/* The compiled-in copy is the file, byte for byte. */
	if (len != strlen(cr_default_policy_json) ||
	    memcmp(text, cr_default_policy_json, len)) {
		free(text);
		FAIL_("cr_default_policy_json differs from policy/default.json");
	}
	rc = cr_policy_parse(text, len, "policy/default.json", &p, err,
			     sizeof(err));
	free(text);
	if (rc)
		FAIL_("%s", err);
	ASSERT_OK_(check_default(p));
	cr_policy_free(p);

	ASSERT_EQ(cr_read_file("policy/no-such-file.json", 100, &text, &len),
		  -ENOENT);
	ASSERT_EQ(cr_read_file("policy/default.json", 10, &text, &len),
		  -EFBIG);
	ASSERT(text == NULL);
	ASSERT_EQ(cr_read_file("policy", 10, &text, &len), -EISDIR);
}

TEST_IMPL(policy_default_builtin)
{
	struct cr_policy *p = NULL;
	char err[512];
	int rc;

	rc = cr_policy_parse(cr_default_policy_json,
			     strlen(cr_default_policy_json), "(built-in)", &p,
			     err, sizeof(err));
	if (rc)
		FAIL_("%s", err);
	ASSERT_OK_(check_default(p));
	cr_policy_free(p);
}

TEST_IMPL(policy_round_trip)
{
	static const char complex[] =
		"{\"version\": \"v \\\"quoted\\\" 2\", \"classes\": {"
		"\"b.1\": {\"fs\": {\"read\": [\"/usr/\", \"/opt/caf\\u00e9\"], "
		"\"deny\": [\"/usr/secret\", \"/t\\tb\\\\\\\"\"], \"hide\": true}, "
		"\"net\": {\"allow\": [\"pypi.org:443\", \"10.0.0.0/8:*\", "
		"\"[::1]:1-1024\"]}, \"limits\": {\"cpu\": \"90000ms\", "
		"\"memory\": \"1536MiB\", \"wall\": \"120m\", \"processes\": "
		"\"9007199254740993\", \"output\": 1048576, \"disk\": \"0\", "
		"\"files\": \"18446744073709551615\", \"net-bytes\": \"1025\", "
		"\"net-connections\": 9007199254740992, \"net-conn-time\": "
		"\"1ms\"}, \"env\": [\"_A\"]}, \"a\": {\"limits\": {\"cpu\": "
		"\"1h\", \"memory\": \"16777215TiB\", \"wall\": "
		"\"18446744073709551615ms\", \"processes\": 1, \"output\": 0, "
		"\"disk\": 0, \"files\": 0, \"net-bytes\": 0, "
		"\"net-connections\": 0, \"net-conn-time\": \"1s\"}}}}";
	struct cr_policy *p = NULL;
	char *json = NULL, err[512];
	int rc;

	rc = cr_policy_parse(cr_default_policy_json,
			     strlen(cr_default_policy_json), "d", &p, err,
			     sizeof(err));
	if (rc)
		FAIL_("%s", err);
	ASSERT_OK_(round_trip(p, &json));
	cr_policy_free(p);
	p = NULL;
	ASSERT_CONTAINS(json, "\"processes\": 64");
	ASSERT_CONTAINS(json, "\"net-bytes\": \"256MiB\"");
	ASSERT_CONTAINS(json, "\"net-connections\": 64");
	ASSERT_CONTAINS(json, "\"memory\": \"512MiB\"");
	ASSERT_CONTAINS(json, "\"hide\": false");
	free(json);
	json = NULL;

	rc = cr_policy_parse(complex, strlen(complex), "c", &p, err,
			     sizeof(err));
	if (rc)
		FAIL_("%s", err);
	ASSERT_OK_(round_trip(p, &json));
	cr_policy_free(p);
	ASSERT_CONTAINS(json, "\"cpu\": \"90s\"");
	ASSERT_CONTAINS(json, "\"wall\": \"2h\"");
	ASSERT_CONTAINS(json, "\"memory\": \"1536MiB\"");
	ASSERT_CONTAINS(json, "\"processes\": \"9007199254740993\"");
	ASSERT_CONTAINS(json, "\"net-connections\": 9007199254740992");
	ASSERT_CONTAINS(json, "\"files\": \"18446744073709551615\"");
	ASSERT_CONTAINS(json, "\"output\": \"1MiB\"");
	ASSERT_CONTAINS(json, "\"net-bytes\": \"1025B\"");
	ASSERT_CONTAINS(json, "\"/usr\"");
	ASSERT_CONTAINS(json, "\"hide\": true");
	ASSERT_CONTAINS(json, "\"/t\\u0009b\\\\\\\"\"");
	ASSERT_CONTAINS(json, "\"version\": \"v \\\"quoted\\\" 2\"");
	free(json);
}

TEST_IMPL(policy_to_json_shape)
{
	static const char *const order[] = {
		"\"version\"", "\"classes\"", "\"x\"", "\"fs\"", "\"read\"",
		"\"write\"", "\"exec\"", "\"deny\"", "\"hide\"", "\"net\"",
		"\"allow\"", "\"limits\"", "\"cpu\"", "\"memory\"", "\"wall\"",
		"\"processes\"", "\"output\"", "\"disk\"", "\"files\"",
		"\"net-bytes\"", "\"net-connections\"", "\"net-conn-time\"",
		"\"env\"", "\"syscalls\"",
	};
	struct cr_policy *p = NULL;
	const char *at, *why;
	char *json;
	size_t i;

	/* Written in another order, printed in the contract's. */
	why = parse_ok("{\"classes\": {\"x\": {\"env\": [], \"limits\": {"
		       "\"net-conn-time\": \"1s\", \"net-connections\": 0, "
		       "\"net-bytes\": 0, \"files\": 0, \"disk\": 0, "
		       "\"output\": 0, \"processes\": 1, \"wall\": \"1s\", "
		       "\"memory\": 1, \"cpu\": \"1s\"}, \"net\": {}, \"fs\": "
		       "{\"hide\": false, \"deny\": [], \"read\": []}}}, "
		       "\"version\": \"v\"}", &p);
	if (why)
		FAIL_("%s", why);
	json = cr_policy_to_json(p);
	cr_policy_free(p);
	ASSERT(json != NULL);
	at = json;
	for (i = 0; i < CR_ARRAY_SIZE(order); i++) {
		const char *next = strstr(at, order[i]);

		if (!next) {
			free(json);
			FAIL_("%s missing or out of order", order[i]);
		}
		at = next + strlen(order[i]);
	}
	free(json);
}

TEST_IMPL(policy_landlock_keys)
{
	static const char lim[] = "\"limits\": {\"cpu\": \"1s\", \"memory\": 1, "
		"\"wall\": \"1s\", \"processes\": 1, \"output\": 0, \"disk\": 0, "
		"\"files\": 0, \"net-bytes\": 0, \"net-connections\": 0, "
		"\"net-conn-time\": \"1s\"}";
	char text[1024];
	struct cr_policy *p = NULL;
	const struct cr_class *c;
	char *json = NULL;
	const char *why;

	/* Absent: auto, metadata fast path allowed, read-only opens kept. */
	snprintf(text, sizeof(text), "{\"version\": \"v\", \"classes\": "
		 "{\"x\": {%s}}}", lim);
	why = parse_ok(text, &p);
	if (why)
		FAIL_("%s", why);
	c = cr_policy_class(p, "x");
	ASSERT_EQ(c->landlock, CR_LL_AUTO);
	ASSERT_EQ(c->fs_strict_metadata, false);
	ASSERT_EQ(c->fs_fast_open, false);
	ASSERT_EQ(c->no_data_backstop, false);
	json = cr_policy_to_json(p);
	ASSERT(json != NULL);
	/* The defaults print nothing new: older policies normalise as before. */
	ASSERT(strstr(json, "landlock") == NULL);
	ASSERT(strstr(json, "strict-metadata") == NULL);
	ASSERT(strstr(json, "data-backstop") == NULL);
	free(json);
	cr_policy_free(p);
	p = NULL;

	snprintf(text, sizeof(text), "{\"version\": \"v\", \"classes\": "
		 "{\"x\": {\"landlock\": \"require\", \"data-backstop\": false, "
		 "\"fs\": {\"strict-metadata\": true, \"fast-open\": true}, "
		 "%s}}}", lim);
	why = parse_ok(text, &p);
	if (why)
		FAIL_("%s", why);
	c = cr_policy_class(p, "x");
	ASSERT_EQ(c->landlock, CR_LL_REQUIRE);
	ASSERT_EQ(c->fs_strict_metadata, true);
	ASSERT_EQ(c->fs_fast_open, true);
	ASSERT_EQ(c->no_data_backstop, true);
	ASSERT_OK_(round_trip(p, &json));
	ASSERT_CONTAINS(json, "\"data-backstop\": false");
	ASSERT_CONTAINS(json, "\"landlock\": \"require\"");
	ASSERT_CONTAINS(json, "\"strict-metadata\": true");
	ASSERT_CONTAINS(json, "\"fast-open\": true");
	free(json);
	cr_policy_free(p);

	snprintf(text, sizeof(text), "{\"version\": \"v\", \"classes\": "
		 "{\"x\": {\"landlock\": \"maybe\", %s}}}", lim);
	ASSERT_POLICY_ERR(text, "t.json:1: classes.x.landlock: \"maybe\" is "
			  "not a Landlock mode (auto, off, require)");
	snprintf(text, sizeof(text), "{\"version\": \"v\", \"classes\": "
		 "{\"x\": {\"landlock\": true, %s}}}", lim);
	ASSERT_POLICY_ERR(text, "t.json:1: classes.x.landlock: expected a "
			  "string");
	snprintf(text, sizeof(text), "{\"version\": \"v\", \"classes\": "
		 "{\"x\": {\"fs\": {\"strict-metadata\": 1}, %s}}}", lim);
	ASSERT_POLICY_ERR(text, "t.json:1: classes.x.fs.strict-metadata: "
			  "expected true or false, got a number");
	snprintf(text, sizeof(text), "{\"version\": \"v\", \"classes\": "
		 "{\"x\": {\"data-backstop\": \"off\", %s}}}", lim);
	ASSERT_POLICY_ERR(text, "t.json:1: classes.x.data-backstop: "
			  "expected true or false, got a string");
	ASSERT_EQ(cr_landlock_mode_parse("off"), CR_LL_OFF);
	ASSERT_EQ(cr_landlock_mode_parse("auto"), CR_LL_AUTO);
	ASSERT_EQ(cr_landlock_mode_parse("Off"), -1);
	ASSERT_STREQ(cr_landlock_mode_name(CR_LL_REQUIRE), "require");
}
