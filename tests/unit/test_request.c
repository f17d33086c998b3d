/* tests/unit/test_request.c: request parsing (shape and every error kind),
 * narrowing against a class, and task id validation. */
#include <stdlib.h>

#include "harness.h"

static const char full[] =
	"{\n"
	"  \"id\": \"task-1\",\n"
	"  \"command\": [\"python3\", \"main.py\"],\n"
	"  \"cwd\": \"relative/to/workspace\",\n"
	"  \"class\": \"default\",\n"
	"  \"inputs\": [ { \"from\": \"src/main.py\", \"to\": \"main.py\" },\n"
	"              { \"from\": \"repo.tar.gz\", \"to\": \"repo/\", "
	"\"extract\": true } ],\n"
	"  \"outputs\": [\"out/*.json\"],\n"
	"  \"env\": { \"LANG\": \"C.UTF-8\", \"X\": \"a=b\" },\n"
	"  \"network\": [\"pypi.org:443\"],\n"
	"  \"limits\": { \"wall\": \"30s\", \"files\": 5 },\n"
	"  \"stdin\": \"optional text\"\n"
	"}\n";

static const char *req(const char *text, struct cr_request **r)
{
	static char why[900];
	char err[512] = "";
	int rc = cr_request_parse(text, strlen(text), "t.json", r, err,
				  sizeof(err));

	if (!rc)
		return NULL;
	snprintf(why, sizeof(why), "rc %d: %s", rc, err);
	return why;
}

TEST_IMPL(request_full)
{
	struct cr_request *r = NULL;
	const char *why = req(full, &r);

	if (why)
		FAIL_("%s", why);
	ASSERT_STREQ(r->id, "task-1");
	ASSERT_EQ(r->argc, 2);
	ASSERT_STREQ(r->command[0], "python3");
	ASSERT_STREQ(r->command[1], "main.py");
	ASSERT(r->command[2] == NULL);
	ASSERT_STREQ(r->cwd, "relative/to/workspace");
	ASSERT_STREQ(r->class_name, "default");
	ASSERT_EQ(r->ninputs, 2);
	ASSERT_STREQ(r->inputs[0].from, "src/main.py");
	ASSERT_STREQ(r->inputs[0].to, "main.py");
	ASSERT_EQ(r->inputs[0].extract, false);
	ASSERT_STREQ(r->inputs[1].to, "repo/");
	ASSERT_EQ(r->inputs[1].extract, true);
	ASSERT_EQ(r->outputs.n, 1);
	ASSERT_STREQ(r->outputs.v[0], "out/*.json");
	ASSERT_EQ(r->nenv, 2);
	ASSERT_STREQ(r->env[0].name, "LANG");
	ASSERT_STREQ(r->env[0].value, "C.UTF-8");
	ASSERT_STREQ(r->env[1].value, "a=b");
	ASSERT_EQ(r->network.n, 1);
	ASSERT_STREQ(r->network.v[0], "pypi.org:443");
	ASSERT_UEQ(r->limits_set, (1u << CR_LIM_WALL) | (1u << CR_LIM_FILES));
	ASSERT_UEQ(r->limits.v[CR_LIM_WALL], 30000);
	ASSERT_UEQ(r->limits.v[CR_LIM_FILES], 5);
	ASSERT_STREQ(r->stdin_text, "optional text");
	ASSERT_EQ(r->stdin_len, 13);
	cr_request_free(r);
	cr_request_free(NULL);
}

TEST_IMPL(request_minimal)
{
	struct cr_request *r = NULL;
	const char *why = req("{\"command\": [\"true\"]}", &r);

	if (why)
		FAIL_("%s", why);
	ASSERT_EQ(r->argc, 1);
	ASSERT_STREQ(r->command[0], "true");
	ASSERT(r->command[1] == NULL);
	ASSERT(!r->id && !r->cwd && !r->class_name && !r->stdin_text);
	ASSERT_EQ(r->ninputs, 0);
	ASSERT_EQ(r->nenv, 0);
	ASSERT(r->outputs.v && r->outputs.n == 0);
	ASSERT(r->network.v && r->network.n == 0);
	ASSERT_UEQ(r->limits_set, 0);
	cr_request_free(r);
	r = NULL;
	why = req("{\"command\": [\"x\"], \"cwd\": \"./a/b/\", \"inputs\": [],"
		  " \"env\": {}, \"limits\": {}, \"stdin\": \"\"}", &r);
	if (why)
		FAIL_("%s", why);
	ASSERT_EQ(r->stdin_len, 0);
	cr_request_free(r);
}

TEST_IMPL(request_errors)
{
	char *big;

	ASSERT_REQUEST_ERR("[]", "t.json:1: (document): expected an object");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"],\n \"cmd\": 1}",
			   "t.json:2: cmd: unknown key (expected one of: id, "
			   "command, cwd, class, inputs, outputs, env, "
			   "network, limits, stdin)");
	ASSERT_REQUEST_ERR("{\"id\": \"x\"}", "t.json:1: (document): "
			   "missing \"command\"");
	ASSERT_REQUEST_ERR("{\"command\": []}", "t.json:1: command: is empty");
	ASSERT_REQUEST_ERR("{\"command\": \"ls -l\"}",
			   "command: expected an array of strings, got a "
			   "string");
	ASSERT_REQUEST_ERR("{\"command\": [\"ls\",\n \"\"]}",
			   "t.json:2: command[1]: empty argument");
	ASSERT_REQUEST_ERR("{\"command\": [\"ls\", 1]}",
			   "command[1]: expected a string, got a number");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\\u0000b\"]}",
			   "command[0]: string contains a NUL character");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"command\": [\"b\"]}",
			   "command: duplicate key");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"id\": \"-x\"}",
			   "id: \"-x\" is not a valid task id");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"id\": 5}",
			   "id: expected a string, got a number");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"cwd\": \"/abs\"}",
			   "cwd: \"/abs\" is absolute");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"cwd\": \"../x\"}",
			   "cwd: \"../x\" has a \"..\" component");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"cwd\": \"a/../b\"}",
			   "cwd:", "\"..\" component");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"cwd\": \"a/..\"}",
			   "cwd:", "\"..\" component");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"cwd\": \"\"}",
			   "cwd: the path is empty");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"class\": \"a b\"}",
			   "class: \"a b\" is not a valid class name");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": {}}",
			   "inputs: expected an array");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": [\"a\"]}",
			   "inputs[0]: expected an object, got a string");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": [{\"from\": "
			   "\"a\", \"to\": \"a\"},\n {\"from\": \"a\"}]}",
			   "t.json:2: inputs[1]: missing \"to\"");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": [{\"to\": "
			   "\"a\"}]}", "inputs[0]: missing \"from\"");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": [{\"from\": "
			   "\"\", \"to\": \"a\"}]}",
			   "inputs[0].from: the path is empty");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": [{\"from\": "
			   "\"a\", \"to\": \"../a\"}]}",
			   "inputs[0].to: \"../a\" has a \"..\" component");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": [{\"from\": "
			   "\"a\", \"to\": \"/a\"}]}",
			   "inputs[0].to: \"/a\" is absolute");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": [{\"from\": "
			   "\"a\", \"to\": \"b\", \"extract\": \"yes\"}]}",
			   "inputs[0].extract: expected true or false");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"inputs\": [{\"from\": "
			   "\"a\", \"to\": \"b\", \"mode\": 1}]}",
			   "inputs[0].mode: unknown key (expected one of: "
			   "from, to, extract)");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"outputs\": [\"/a/*\"]}",
			   "outputs[0]: \"/a/*\" is absolute");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"outputs\": [\"x/../../*\"]}",
			   "outputs[0]:", "\"..\" component");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"outputs\": [\"\"]}",
			   "outputs[0]: the path is empty");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"outputs\": \"out/*\"}",
			   "outputs: expected an array of strings");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"env\": {\"1A\": \"x\"}}",
			   "env.1A: \"1A\" is not a valid variable name");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"env\": {\"A\": 1}}",
			   "env.A: expected a string, got a number");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"env\": [\"A\"]}",
			   "env: expected an object, got an array");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"env\": {\"A\": \"1\", "
			   "\"A\": \"2\"}}", "env.A: duplicate key");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"network\": [\"host:0\"]}",
			   "network[0]: \"host:0\" has a port out of range");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"network\": \"a:1\"}",
			   "network: expected an array");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"limits\": {\"cpu_ms\": "
			   "1}}", "limits.cpu_ms: unknown key");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"],\n\"limits\": {\"wall\": "
			   "\"2 hours\"}}", "t.json:2: limits.wall: \"2 hours\" "
			   "is not a time (units: ms s m h)");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"limits\": {\"processes\":"
			   " 0}}", "limits.processes: 0: processes must be "
			   "more than zero");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"limits\": {\"memory\": "
			   "1.5}}", "limits.memory: 1.5 is not a whole number");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"limits\": []}",
			   "limits: expected an object");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"stdin\": 5}",
			   "stdin: expected a string, got a number");
	ASSERT_REQUEST_ERR("{\"command\": [\"a\"], \"stdin\": null}",
			   "stdin: expected a string, got null");

	big = malloc(CR_REQUEST_MAX_BYTES + 64);
	ASSERT(big);
	memset(big, ' ', CR_REQUEST_MAX_BYTES + 63);
	memcpy(big, "{\"command\": [\"a\"]}", 18);
	big[CR_REQUEST_MAX_BYTES + 63] = '\0';
	{
		const char *w = cr_test_doc_err(true, big, "t.json:1: "
						"(document): document is",
						(char *)NULL);

		free(big);
		ASSERT_OK_(w);
	}
}

static const char narrow_policy[] =
	"{\"version\": \"v\", \"classes\": {\"n\": {"
	"\"net\": {\"allow\": [\"pypi.org:443\", \"10.0.0.0/8:*\"]}, "
	"\"limits\": {\"cpu\": \"30s\", \"memory\": \"512MiB\", \"wall\": "
	"\"60s\", \"processes\": 64, \"output\": \"1MiB\", \"disk\": \"256MiB\","
	" \"files\": 10000, \"net-bytes\": \"1MiB\", \"net-connections\": 4, "
	"\"net-conn-time\": \"30s\"}}}}";

/* Parses request text and asks whether it narrows class cls of policy. */
static int narrows(const char *policy, const char *cls, const char *text,
		   char *err, size_t errlen)
{
	struct cr_policy *p = NULL;
	struct cr_request *r = NULL;
	int rc;

	err[0] = '\0';
	rc = cr_policy_parse(policy, strlen(policy), "p", &p, err, errlen);
	if (rc)
		return 1000 + rc;
	rc = cr_request_parse(text, strlen(text), "r", &r, err, errlen);
	if (!rc)
		rc = cr_request_narrows(r, cr_policy_class(p, cls), err,
					errlen);
	else
		rc = 2000 + rc;
	cr_request_free(r);
	cr_policy_free(p);
	return rc;
}

TEST_IMPL(request_narrows)
{
	const char *def = cr_default_policy_json;
	char err[512];

	ASSERT_EQ(narrows(def, "default", "{\"command\": [\"a\"]}", err,
			  sizeof(err)), 0);
	ASSERT_EQ(narrows(def, "default", "{\"command\": [\"a\"], \"limits\": "
			  "{\"wall\": \"2h\"}}", err, sizeof(err)), -EPERM);
	ASSERT_STREQ(err, "limits.wall: 2h is more than the class allows "
			  "(1m)");
	ASSERT_EQ(narrows(def, "default", "{\"command\": [\"a\"], \"limits\": "
			  "{\"wall\": \"60s\", \"cpu\": \"1s\", \"memory\": "
			  "\"1MiB\", \"files\": 0}}", err, sizeof(err)), 0);
	ASSERT_EQ(narrows(def, "default", "{\"command\": [\"a\"], \"limits\": "
			  "{\"wall\": \"60001ms\"}}", err, sizeof(err)), -EPERM);
	ASSERT_STREQ(err, "limits.wall: 60001ms is more than the class allows "
			  "(1m)");
	ASSERT_EQ(narrows(def, "default", "{\"command\": [\"a\"], \"limits\": "
			  "{\"memory\": \"1GiB\"}}", err, sizeof(err)), -EPERM);
	ASSERT_STREQ(err, "limits.memory: 1GiB is more than the class allows "
			  "(512MiB)");
	ASSERT_EQ(narrows(def, "default", "{\"command\": [\"a\"], \"limits\": "
			  "{\"net-bytes\": \"257MiB\"}}", err, sizeof(err)),
		  -EPERM);
	ASSERT_STREQ(err, "limits.net-bytes: 257MiB is more than the class "
			  "allows (256MiB)");
	ASSERT_EQ(narrows(def, "default", "{\"command\": [\"a\"], \"limits\": "
			  "{\"processes\": 65}}", err, sizeof(err)), -EPERM);
	ASSERT_STREQ(err, "limits.processes: 65 is more than the class allows "
			  "(64)");
	ASSERT_EQ(narrows(def, "default", "{\"command\": [\"a\"], \"network\":"
			  " [\"pypi.org:443\"]}", err, sizeof(err)), -EPERM);
	ASSERT_STREQ(err, "network[0]: \"pypi.org:443\" is not in class "
			  "\"default\"'s net.allow (which is empty)");

	ASSERT_EQ(narrows(narrow_policy, "n", "{\"command\": [\"a\"], "
			  "\"network\": [\"pypi.org:443\", \"10.0.0.0/8:*\"]}",
			  err, sizeof(err)), 0);
	ASSERT_EQ(narrows(narrow_policy, "n", "{\"command\": [\"a\"], "
			  "\"network\": [\"pypi.org:443\", \"evil.org:443\"]}",
			  err, sizeof(err)), -EPERM);
	ASSERT_STREQ(err, "network[1]: \"evil.org:443\" is not in class "
			  "\"n\"'s net.allow");
	ASSERT_EQ(narrows(narrow_policy, "n", "{\"command\": [\"a\"], "
			  "\"network\": [\"pypi.org:80\"]}", err, sizeof(err)),
		  -EPERM);
	ASSERT_CONTAINS(err, "network[0]: \"pypi.org:80\"");
	ASSERT_EQ(cr_request_narrows(NULL, NULL, err, sizeof(err)), -EINVAL);
}

TEST_IMPL(task_ids)
{
	static const char *const good[] = {
		"a", "abc", "A-1.b_c", "0", "_x", "task-1", "a.", "a-",
		"0123456789012345678901234567890123456789012345678901234567890123",
	};
	static const char *const bad[] = {
		"", ".a", "-a", "a/b", "a b", "a\n", "a:b", "é", "..", "a*",
		"01234567890123456789012345678901234567890123456789012345678901234",
	};
	size_t i;

	for (i = 0; i < CR_ARRAY_SIZE(good); i++)
		if (!cr_task_id_valid(good[i]))
			FAIL_("\"%s\" refused", good[i]);
	for (i = 0; i < CR_ARRAY_SIZE(bad); i++)
		if (cr_task_id_valid(bad[i]))
			FAIL_("\"%s\" accepted", bad[i]);
	ASSERT(!cr_task_id_valid(NULL));
}
