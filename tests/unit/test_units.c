/* tests/unit/test_units.c: limit names, units, zero rules, overflow and
 * canonical formatting of limit values. */
#include "harness.h"

/* Parses one command-line value for the limit called name. */
static int lim(const char *name, const char *text, uint64_t *v, char *err,
	       size_t errlen)
{
	int id = cr_limit_lookup(name);

	*v = 0;
	err[0] = '\0';
	if (id < 0)
		return -ENOENT;
	return cr_limit_parse_value(id, text, v, err, errlen);
}

TEST_IMPL(limit_names)
{
	static const char *const names[] = {
		"cpu", "memory", "wall", "processes", "output", "disk",
		"files", "net-bytes", "net-connections", "net-conn-time",
	};
	static const char *const usage[] = {
		"cpu_ms", "peak_memory_bytes", "wall_ms", "processes",
		"output_bytes", "disk_bytes", "files", "net_bytes",
		"net_connections", "net_conn_time_ms",
	};
	int i;

	ASSERT_EQ(CR_ARRAY_SIZE(names), CR_LIM__COUNT);
	for (i = 0; i < CR_LIM__COUNT; i++) {
		ASSERT_STREQ(cr_limit_name(i), names[i]);
		ASSERT_STREQ(cr_limit_usage_key(i), usage[i]);
		ASSERT_EQ(cr_limit_lookup(names[i]), i);
	}
	ASSERT_EQ(cr_limit_lookup("CPU"), -1);
	ASSERT_EQ(cr_limit_lookup("net_bytes"), -1);
	ASSERT_EQ(cr_limit_lookup(""), -1);
	ASSERT_EQ(cr_limit_lookup(NULL), -1);
	ASSERT(cr_limit_usage_key(CR_LIM__COUNT) != NULL);
	ASSERT_EQ(cr_limit_kind(CR_LIM_CPU), CR_KIND_TIME);
	ASSERT_EQ(cr_limit_kind(CR_LIM_WALL), CR_KIND_TIME);
	ASSERT_EQ(cr_limit_kind(CR_LIM_NET_CONN_TIME), CR_KIND_TIME);
	ASSERT_EQ(cr_limit_kind(CR_LIM_MEMORY), CR_KIND_SIZE);
	ASSERT_EQ(cr_limit_kind(CR_LIM_OUTPUT), CR_KIND_SIZE);
	ASSERT_EQ(cr_limit_kind(CR_LIM_DISK), CR_KIND_SIZE);
	ASSERT_EQ(cr_limit_kind(CR_LIM_NET_BYTES), CR_KIND_SIZE);
	ASSERT_EQ(cr_limit_kind(CR_LIM_PROCESSES), CR_KIND_COUNT);
	ASSERT_EQ(cr_limit_kind(CR_LIM_FILES), CR_KIND_COUNT);
	ASSERT_EQ(cr_limit_kind(CR_LIM_NET_CONNECTIONS), CR_KIND_COUNT);
}

TEST_IMPL(units_time)
{
	static const struct {
		const char *text;
		uint64_t ms;
	} good[] = {
		{ "1ms", 1 }, { "250ms", 250 }, { "1s", 1000 },
		{ "30s", 30000 }, { "5m", 300000 }, { "1h", 3600000 },
		{ "007s", 7000 }, { "90000ms", 90000 },
	};
	static const char *const bad[] = {
		"30", "5x", "30 s", " 5s", "5s ", "+5s", "-5s", "1.5s", "1e3s",
		"s", "", "5S", "5sec", "5min", "1d", "5 ", "0x10s", "5ms5",
		"1,000ms", "5μs",
	};
	char err[256];
	uint64_t v;
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(good); i++) {
		int rc = lim("wall", good[i].text, &v, err, sizeof(err));

		if (rc)
			FAIL_("\"%s\": rc %d: %s", good[i].text, rc, err);
		ASSERT_UEQ(v, good[i].ms);
	}
	for (i = 0; i < CR_ARRAY_SIZE(bad); i++) {
		int rc = lim("wall", bad[i], &v, err, sizeof(err));

		if (rc != -EINVAL)
			FAIL_("\"%s\" accepted as %" PRIu64, bad[i], v);
		ASSERT_CONTAINS(err, "wall: ");
	}
	ASSERT_EQ(lim("cpu", "30", &v, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "cpu: \"30\" needs a unit (ms s m h)");
	ASSERT_EQ(lim("cpu", "5x", &v, err, sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "cpu: \"5x\" is not a time (units: ms s m h)");
	ASSERT_EQ(lim("cpu", "1.5s", &v, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "whole number");
	ASSERT_EQ(lim("cpu", "-1s", &v, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "negative");
}

TEST_IMPL(units_size)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
		{ "0", 0 }, { "100", 100 }, { "100B", 100 },
		{ "1KiB", 1024 }, { "512MiB", 512ull << 20 },
		{ "1536MiB", 1536ull << 20 }, { "1GiB", 1ull << 30 },
		{ "2TiB", 2ull << 40 }, { "0B", 0 }, { "0GiB", 0 },
		{ "18446744073709551615", UINT64_MAX },
		{ "16777215TiB", 16777215ull << 40 },
	};
	static const char *const bad[] = {
		"12 parsecs", "1KB", "1kib", "1MB", "1 MiB", " 1MiB", "1MiB ",
		"+1", "-1", "1.5GiB", "1e3", "1e3B", "MiB", "", "1PiB", "0x10",
		"1iB", "1b",
	};
	char err[256];
	uint64_t v;
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(good); i++) {
		int rc = lim("disk", good[i].text, &v, err, sizeof(err));

		if (rc)
			FAIL_("\"%s\": rc %d: %s", good[i].text, rc, err);
		ASSERT_UEQ(v, good[i].bytes);
	}
	for (i = 0; i < CR_ARRAY_SIZE(bad); i++) {
		int rc = lim("disk", bad[i], &v, err, sizeof(err));

		if (rc != -EINVAL)
			FAIL_("\"%s\" accepted as %" PRIu64, bad[i], v);
	}
	ASSERT_EQ(lim("memory", "12 parsecs", &v, err, sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "memory: \"12 parsecs\" is not a size "
			  "(units: B KiB MiB GiB TiB)");
}

TEST_IMPL(units_count)
{
	char err[256];
	uint64_t v;

	ASSERT_EQ(lim("files", "10000", &v, err, sizeof(err)), 0);
	ASSERT_UEQ(v, 10000);
	ASSERT_EQ(lim("files", "0", &v, err, sizeof(err)), 0);
	ASSERT_UEQ(v, 0);
	ASSERT_EQ(lim("processes", "64", &v, err, sizeof(err)), 0);
	ASSERT_UEQ(v, 64);
	ASSERT_EQ(lim("files", "18446744073709551615", &v, err, sizeof(err)),
		  0);
	ASSERT_UEQ(v, UINT64_MAX);
	ASSERT_EQ(lim("files", "10k", &v, err, sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "files: \"10k\" is not a count (digits only)");
	ASSERT_EQ(lim("files", "10B", &v, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(lim("files", "1.0", &v, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(lim("files", "ten", &v, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(lim("files", "-1", &v, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(lim("files", " 1", &v, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(lim("files", "1s", &v, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(lim("files", "", &v, err, sizeof(err)), -EINVAL);
}

TEST_IMPL(units_zero_rules)
{
	static const struct {
		const char *name;
		const char *zero;
		bool ok;
	} rules[] = {
		{ "cpu", "0s", false },
		{ "memory", "0B", false },
		{ "wall", "0ms", false },
		{ "processes", "0", false },
		{ "output", "0B", true },
		{ "disk", "0", true },
		{ "files", "0", true },
		{ "net-bytes", "0MiB", true },
		{ "net-connections", "0", true },
		{ "net-conn-time", "0h", false },
	};
	char err[256];
	uint64_t v;
	size_t i;

	ASSERT_EQ(CR_ARRAY_SIZE(rules), CR_LIM__COUNT);
	for (i = 0; i < CR_ARRAY_SIZE(rules); i++) {
		int rc = lim(rules[i].name, rules[i].zero, &v, err,
			     sizeof(err));

		if (rules[i].ok && rc)
			FAIL_("%s=%s refused: %s", rules[i].name,
			      rules[i].zero, err);
		if (!rules[i].ok && rc != -EINVAL)
			FAIL_("%s=%s accepted", rules[i].name, rules[i].zero);
		if (!rules[i].ok)
			ASSERT_CONTAINS(err, "must be more than zero");
		/* A bare "0" is a zero in any unit. */
		rc = lim(rules[i].name, "0", &v, err, sizeof(err));
		ASSERT_EQ(rc, rules[i].ok ? 0 : -EINVAL);
	}
	ASSERT_EQ(lim("cpu", "0", &v, err, sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "cpu: \"0\": cpu must be more than zero");
	/* The same rules apply inside a policy, with the location. */
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("processes", "0"),
					 NULL),
			  "t.json:8: classes.x.limits.processes: 0: processes "
			  "must be more than zero");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("wall", "\"0s\""),
					 NULL),
			  "t.json:8: classes.x.limits.wall:", "more than zero");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("memory", "0"), NULL),
			  "classes.x.limits.memory", "more than zero");
	ASSERT_POLICY_OK(cr_test_policy(NULL, NULL,
					cr_test_limits("output", "\"0B\""),
					NULL));
	ASSERT_POLICY_OK(cr_test_policy(NULL, NULL,
					cr_test_limits("net-connections", "0"),
					NULL));
}

TEST_IMPL(units_overflow)
{
	static const struct {
		const char *name, *text;
	} bad[] = {
		{ "memory", "18446744073709551615GiB" },
		{ "memory", "18446744073709551616" },
		{ "memory", "16777216TiB" },
		{ "memory", "99999999999999999999999999999999B" },
		{ "files", "18446744073709551616" },
		{ "wall", "5124095576031h" },
		{ "wall", "18446744073709551616ms" },
		{ "cpu", "307445734561826m" },
	};
	char err[256];
	uint64_t v;
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(bad); i++) {
		int rc = lim(bad[i].name, bad[i].text, &v, err, sizeof(err));

		if (rc != -EINVAL)
			FAIL_("%s=%s accepted as %" PRIu64, bad[i].name,
			      bad[i].text, v);
		ASSERT_CONTAINS(err, "too large");
	}
	/* Just below the edge still fits. */
	ASSERT_EQ(lim("wall", "5124095576030h", &v, err, sizeof(err)), 0);
	ASSERT_UEQ(v, 5124095576030ull * 3600000ull);
	ASSERT_EQ(lim("cpu", "307445734561825m", &v, err, sizeof(err)), 0);
	ASSERT_EQ(lim("memory", "16777215TiB", &v, err, sizeof(err)), 0);
	ASSERT_EQ(lim("memory", "18446744073709551615GiB", &v, err,
		      sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "memory: \"18446744073709551615GiB\" is too large "
			  "(more than 18446744073709551615 bytes)");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("disk",
					 "\"18446744073709551615GiB\""), NULL),
			  "t.json:8: classes.x.limits.disk:", "too large");
}

TEST_IMPL(units_json_numbers)
{
	char msg[256];
	uint64_t v;

	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "10", true, &v, msg,
				       sizeof(msg)), 0);
	ASSERT_UEQ(v, 10);
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "9007199254740992", true,
				       &v, msg, sizeof(msg)), 0);
	ASSERT_UEQ(v, 9007199254740992ull);
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "9007199254740993", true,
				       &v, msg, sizeof(msg)), -EINVAL);
	ASSERT_CONTAINS(msg, "2^53");
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "18446744073709551616",
				       true, &v, msg, sizeof(msg)), -EINVAL);
	ASSERT_CONTAINS(msg, "2^53");
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "1e3", true, &v, msg,
				       sizeof(msg)), -EINVAL);
	ASSERT_CONTAINS(msg, "exponent");
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "1.5", true, &v, msg,
				       sizeof(msg)), -EINVAL);
	ASSERT_CONTAINS(msg, "1.5 is not a whole number");
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "1.0", true, &v, msg,
				       sizeof(msg)), -EINVAL);
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "-1", true, &v, msg,
				       sizeof(msg)), -EINVAL);
	ASSERT_CONTAINS(msg, "-1 is negative");
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_FILES, "-0", true, &v, msg,
				       sizeof(msg)), -EINVAL);
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_WALL, "30", true, &v, msg,
				       sizeof(msg)), -EINVAL);
	ASSERT_CONTAINS(msg, "needs a unit");
	ASSERT_EQ(cr_limit_parse_token(CR_LIM_MEMORY, "1048576", true, &v, msg,
				       sizeof(msg)), 0);
	ASSERT_UEQ(v, 1048576);

	/* In documents, the raw JSON text is what is judged. */
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("files", "1e3"), NULL),
			  "t.json:8: classes.x.limits.files: 1e3",
			  "exponent");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("files", "1.5"), NULL),
			  "t.json:8: classes.x.limits.files: 1.5 is not a "
			  "whole number");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("files", "1.0"), NULL),
			  "classes.x.limits.files: 1.0 is not a whole number");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("processes", "-1"),
					 NULL),
			  "classes.x.limits.processes: -1 is negative");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("disk",
							"9007199254740993"),
					 NULL),
			  "classes.x.limits.disk:", "2^53");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("wall", "60"), NULL),
			  "classes.x.limits.wall: 60 needs a unit");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("wall", "true"), NULL),
			  "classes.x.limits.wall: expected a time");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("files", "null"), NULL),
			  "classes.x.limits.files: expected a whole number, "
			  "got null");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("files", "[1]"), NULL),
			  "classes.x.limits.files: expected a whole number, "
			  "got an array");
}

TEST_IMPL(units_format)
{
	static const struct {
		enum cr_limit_id id;
		uint64_t v;
		const char *text;
	} cases[] = {
		{ CR_LIM_MEMORY, 1536ull << 20, "1536MiB" },
		{ CR_LIM_MEMORY, 1073741824ull, "1GiB" },
		{ CR_LIM_MEMORY, 512ull << 20, "512MiB" },
		{ CR_LIM_MEMORY, 1ull << 40, "1TiB" },
		{ CR_LIM_MEMORY, 3ull << 40, "3TiB" },
		{ CR_LIM_MEMORY, 1024ull << 40, "1024TiB" },
		{ CR_LIM_MEMORY, 1025, "1025B" },
		{ CR_LIM_MEMORY, 2048, "2KiB" },
		{ CR_LIM_MEMORY, 0, "0B" },
		{ CR_LIM_MEMORY, UINT64_MAX, "18446744073709551615B" },
		{ CR_LIM_WALL, 90000, "90s" },
		{ CR_LIM_WALL, 60000, "1m" },
		{ CR_LIM_WALL, 3600000, "1h" },
		{ CR_LIM_WALL, 5400000, "90m" },
		{ CR_LIM_WALL, 1500, "1500ms" },
		{ CR_LIM_WALL, 0, "0s" },
		{ CR_LIM_WALL, UINT64_MAX, "18446744073709551615ms" },
		{ CR_LIM_PROCESSES, 64, "64" },
		{ CR_LIM_FILES, 0, "0" },
		{ CR_LIM_NET_CONNECTIONS, UINT64_MAX, "18446744073709551615" },
	};
	char buf[64];
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(cases); i++) {
		cr_limit_format(cases[i].id, cases[i].v, buf, sizeof(buf));
		ASSERT_STREQ(buf, cases[i].text);
	}
	/* A short buffer is cut, and still terminated. */
	cr_limit_format(CR_LIM_MEMORY, 1536ull << 20, buf, 4);
	ASSERT_STREQ(buf, "153");
}

TEST_IMPL(units_format_round_trip)
{
	static const uint64_t vals[] = {
		1, 2, 999, 1000, 1001, 1023, 1024, 1025, 60000, 90000,
		3600000, 7200001, 1ull << 20, (1ull << 20) + 1, 1ull << 30,
		1536ull << 20, 1ull << 40, (1ull << 53) + 1, UINT64_MAX - 1,
		UINT64_MAX,
	};
	char buf[64], err[256];
	size_t i;
	int id;

	for (id = 0; id < CR_LIM__COUNT; id++) {
		for (i = 0; i < CR_ARRAY_SIZE(vals); i++) {
			uint64_t back = 0;

			cr_limit_format(id, vals[i], buf, sizeof(buf));
			if (cr_limit_parse_value(id, buf, &back, err,
						 sizeof(err)))
				FAIL_("%s: \"%s\" does not parse: %s",
				      cr_limit_name(id), buf, err);
			ASSERT_UEQ(back, vals[i]);
		}
	}
}
