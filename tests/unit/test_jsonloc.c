/* tests/unit/test_jsonloc.c: the locator: lines and key paths of nested
 * values, duplicate keys, strictness beyond cJSON, syntax error locations. */
#include <cJSON.h>

#include "harness.h"

static const char nested[] =
	"{\n"				/* 1 */
	"  \"a\": {\n"			/* 2 */
	"    \"b\": {\n"		/* 3 */
	"      \"c\": 1,\n"		/* 4 */
	"      \"d\": [\n"		/* 5 */
	"        10,\n"			/* 6 */
	"        {\"e\": true},\n"	/* 7 */
	"        [\n"			/* 8 */
	"          \"x\",\n"		/* 9 */
	"          \"y\"\n"		/* 10 */
	"        ]\n"			/* 11 */
	"      ]\n"			/* 12 */
	"    }\n"			/* 13 */
	"  },\n"			/* 14 */
	"  \"f\":\n"			/* 15 */
	"     \"g\"\n"			/* 16 */
	"}\n";

/* Opens text as a document; returns NULL or why it failed. */
static const char *open_doc(struct cr_jdoc *d, const char *text, size_t len,
			    char *err, size_t errlen)
{
	static char why[700];
	int rc = cr_jdoc_open(d, text, len, "t.json", 1u << 20, err, errlen);

	if (!rc)
		return NULL;
	snprintf(why, sizeof(why), "cr_jdoc_open: %d: %s", rc, err);
	return why;
}

/* Expects text to be refused with every needle in the message. */
static const char *refused(const char *text, size_t len, const char *n1,
			   const char *n2)
{
	static char why[900];
	struct cr_jdoc d cr_autojdoc = { 0 };
	char err[512] = "";
	int rc = cr_jdoc_open(&d, text, len, "t.json", 1u << 20, err,
			      sizeof(err));

	if (rc != -EINVAL) {
		snprintf(why, sizeof(why), "rc %d (not -EINVAL) for %.200s", rc,
			 text);
		return why;
	}
	if ((n1 && !strstr(err, n1)) || (n2 && !strstr(err, n2))) {
		snprintf(why, sizeof(why), "\"%s\" lacks \"%s\" or \"%s\"", err,
			 n1 ? n1 : "", n2 ? n2 : "");
		return why;
	}
	return NULL;
}

/* Expects text to be accepted. */
static const char *accepted(const char *text)
{
	static char why[900];
	struct cr_jdoc d cr_autojdoc = { 0 };
	char err[512] = "";
	int rc = cr_jdoc_open(&d, text, strlen(text), "t.json", 1u << 20, err,
			      sizeof(err));

	if (!rc)
		return NULL;
	snprintf(why, sizeof(why), "rc %d for %.200s: %s", rc, text, err);
	return why;
}

#define REFUSED(text, n1, n2) ASSERT_OK_(refused((text), strlen(text), n1, n2))
#define ACCEPTED(text) ASSERT_OK_(accepted(text))

TEST_IMPL(jsonloc_lines)
{
	struct cr_jdoc d cr_autojdoc = { 0 };
	const cJSON *a, *b, *c, *dd;
	char err[512], path[128];
	size_t n;

	ASSERT_OK_(open_doc(&d, nested, strlen(nested), err, sizeof(err)));
	ASSERT_EQ(cr_jdoc_find_line(&d, "(document)"), 1);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a"), 2);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b"), 3);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.c"), 4);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.d"), 5);
	ASSERT_EQ(cr_jdoc_find_line(&d, "f"), 15);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.x"), 0);
	ASSERT_EQ(cr_jdoc_find_line(&d, "b"), 0);

	a = cr_jdoc_get(d.root, "a");
	b = cr_jdoc_get(a, "b");
	c = cr_jdoc_get(b, "c");
	dd = cr_jdoc_get(b, "d");
	ASSERT(c && dd);
	ASSERT_EQ(cr_jdoc_line(&d, c), 4);
	ASSERT_STREQ(cr_jdoc_path(&d, c, path, sizeof(path)), "a.b.c");
	ASSERT_STREQ(cr_jdoc_path(&d, d.root, path, sizeof(path)),
		     "(document)");
	ASSERT_STREQ(cr_jdoc_path(&d, dd->child->next->child, path,
				  sizeof(path)), "a.b.d[1].e");
	ASSERT_EQ(cr_jdoc_raw(&d, c, &n)[0], '1');
	ASSERT_EQ(n, 1);
	ASSERT_EQ(cr_jdoc_line(&d, NULL), 0);

	ASSERT_EQ(cr_jdoc_fail(&d, dd->child->next->child, "bad %s", "thing"),
		  -EINVAL);
	ASSERT_STREQ(err, "t.json:7: a.b.d[1].e: bad thing");
	ASSERT_EQ(cr_jdoc_fail(&d, d.root, "top"), -EINVAL);
	ASSERT_STREQ(err, "t.json:1: (document): top");
}

TEST_IMPL(jsonloc_arrays)
{
	static const char crlf[] = "{\r\n\"l\": [\r\n1,\r\n\r\n2]}\r\n";
	static const char keys[] =
		"{\"cl\\u0061ss\": {\"a.b\": [0, {\"q\\\"\\n\": 1}]},\n"
		" \"\\u00e9\": 2}";
	struct cr_jdoc d cr_autojdoc = { 0 };
	struct cr_jdoc d2 cr_autojdoc = { 0 };
	struct cr_jdoc d3 cr_autojdoc = { 0 };
	char err[512];

	ASSERT_OK_(open_doc(&d, nested, strlen(nested), err, sizeof(err)));
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.d[0]"), 6);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.d[1]"), 7);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.d[1].e"), 7);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.d[2]"), 8);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.d[2][0]"), 9);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.d[2][1]"), 10);
	ASSERT_EQ(cr_jdoc_find_line(&d, "a.b.d[3]"), 0);

	ASSERT_OK_(open_doc(&d2, crlf, strlen(crlf), err, sizeof(err)));
	ASSERT_EQ(cr_jdoc_find_line(&d2, "l"), 2);
	ASSERT_EQ(cr_jdoc_find_line(&d2, "l[0]"), 3);
	ASSERT_EQ(cr_jdoc_find_line(&d2, "l[1]"), 5);

	/* Paths use decoded keys; what a terminal should not see is
	 * escaped. */
	ASSERT_OK_(open_doc(&d3, keys, strlen(keys), err, sizeof(err)));
	ASSERT_EQ(cr_jdoc_find_line(&d3, "class.a.b[1].q\\\"\\x0a"), 1);
	ASSERT_EQ(cr_jdoc_find_line(&d3, "\\xc3\\xa9"), 2);

	ASSERT_POLICY_ERR("{\"version\": \"v\", \"classes\": {\"x\": {\"\": 1}}}",
			  "t.json:1: classes.x.\"\": unknown key");
}

TEST_IMPL(jsonloc_duplicates)
{
	static const char inner[] =
		"{\n"
		"  \"a\": 1,\n"
		"  \"b\": {\"x\": 1,\n"
		"        \"x\": 2},\n"
		"  \"a\": 3\n"
		"}\n";

	REFUSED(inner, "t.json:4: b.x: duplicate key (first given on line 3)",
		NULL);
	REFUSED("{\"a\": 1,\n\"a\": 2}", "t.json:2: a: duplicate key "
		"(first given on line 1)", NULL);
	REFUSED("{\"a\": 1, \"\\u0061\": 2}", "a: duplicate key", NULL);
	REFUSED("{\"a\": 1, \"b\": 0, \"a\": 2,\n \"a\": 3}",
		"t.json:1: a: duplicate key (first given on line 1)", NULL);
	REFUSED("[{}, {\"k\": [], \"k\": {}}]", "[1].k: duplicate key", NULL);
	ACCEPTED("{\"a\": 1, \"A\": 2}");
	/* In a policy: two classes of one name, a limit given twice. */
	ASSERT_POLICY_ERR("{\"version\": \"v\", \"classes\": {\"x\": {},\n"
			  "\"x\": {}}}",
			  "t.json:2: classes.x: duplicate key (first given on "
			  "line 1)");
	ASSERT_POLICY_ERR(cr_test_policy(NULL, NULL,
					 cr_test_limits("files",
							"1, \"cpu\": \"2s\""),
					 NULL),
			  "t.json:8: classes.x.limits.cpu: duplicate key");
}

TEST_IMPL(jsonloc_strictness)
{
	static const char nul[] = "{\"a\": \"b\"}\0 trailing";
	char deep[4100];
	size_t i;

	REFUSED("{\"version\": \"a\\u0000b\"}", "t.json:1: version: string "
		"contains a NUL character", NULL);
	REFUSED("{\"a\\u0000\": 1}", "NUL character", NULL);
	ASSERT_OK_(refused(nul, sizeof(nul) - 1, "t.json:1: (document): NUL "
			   "byte", NULL));
	REFUSED("{\"a\": \"x\ty\"}", "t.json:1: a: control character 0x09",
		NULL);
	REFUSED("{\"a\": \"\xff\"}", "a: invalid UTF-8", NULL);
	REFUSED("{\"a\": \"\xc0\xaf\"}", "a: invalid UTF-8", NULL);
	REFUSED("{\"a\": \"\xed\xa0\x80\"}", "a: invalid UTF-8", NULL);
	REFUSED("{\"a\": [\"\\ud800\"]}", "a[0]: unpaired UTF-16 surrogate",
		NULL);
	REFUSED("{\"a\": \"\\udc00x\"}", "unpaired", NULL);
	REFUSED("{\"a\": 1.}", "a: malformed number", NULL);
	REFUSED("{\"a\": 01}", "leading zero", NULL);
	REFUSED("\x01{\"a\": 1}", "t.json:1: (document): expected a value, "
		"found byte 0x01", NULL);
	REFUSED("{\"a\":\x01 1}", "a: expected a value", NULL);
	REFUSED("{} x", "unexpected 'x' after the document", NULL);
	REFUSED("", "t.json:1: (document): expected a value, found the end",
		NULL);
	REFUSED("   \n  ", "t.json:2:", NULL);
	REFUSED("{\"a\": \"\\x\"}", "invalid escape", NULL);
	ACCEPTED("{\"a\": \"\xc3\xa9\\u00e9\\ud83d\\ude00\xf0\x9f\x98\x80\"}");
	ACCEPTED("\xef\xbb\xbf{\"a\": 1}");

	/* Nesting past cJSON's limit is refused by both. */
	for (i = 0; i < 2000; i++)
		deep[i] = '[';
	for (i = 0; i < 2000; i++)
		deep[2000 + i] = ']';
	deep[4000] = '\0';
	REFUSED(deep, "t.json:1: ", NULL);
	for (i = 0; i < 500; i++)
		deep[i] = '[';
	for (i = 0; i < 500; i++)
		deep[500 + i] = ']';
	deep[1000] = '\0';
	ACCEPTED(deep);
}

TEST_IMPL(jsonloc_syntax_errors)
{
	REFUSED("{\n  \"a\": [1, 2,],\n}\n",
		"t.json:2: a[2]: expected a value, found ']'", NULL);
	REFUSED("{\n  \"a\": 1\n  \"b\": 2\n}\n",
		"t.json:3: a: expected ',' or '}' after this value", NULL);
	REFUSED("{\n  \"a\": {\n    \"b\": tru\n  }\n}\n",
		"t.json:3: a.b: unexpected word (expected true)", NULL);
	REFUSED("{\n  \"a\": \"open\n}\n", "t.json:2: a: control character",
		NULL);
	REFUSED("{\n  \"a\": \"open", "t.json:2: a: unterminated string",
		NULL);
	REFUSED("{\n  \"a\" 1}", "t.json:2: (document): expected ':' after "
		"a key", NULL);
	REFUSED("{\n  a: 1}", "t.json:2: (document): expected a key in "
		"double quotes, found 'a'", NULL);
	REFUSED("{\"x\": {\"y\": [1,\n\n 2}}", "t.json:3: x.y[1]: expected "
		"',' or ']'", NULL);
	REFUSED("[1, 2", "t.json:1: [1]: expected ',' or ']' after this "
		"value, found the end of the document", NULL);
	/* Through the policy parser, with its file name. */
	ASSERT_POLICY_ERR("{\n\"version\": \"v\",\n\"classes\": {,}}",
			  "t.json:3: classes: expected a key");
}

TEST_IMPL(jsonloc_raw_numbers)
{
	static const char text[] =
		"{\"n\": 1.50, \"m\": 12345678901234567890, \"s\": \"x\"}";
	struct cr_jdoc d cr_autojdoc = { 0 };
	char err[512];
	const char *raw;
	size_t n;

	ASSERT_OK_(open_doc(&d, text, strlen(text), err, sizeof(err)));
	raw = cr_jdoc_raw(&d, cr_jdoc_get(d.root, "n"), &n);
	ASSERT_EQ(n, 4);
	ASSERT(!memcmp(raw, "1.50", 4));
	raw = cr_jdoc_raw(&d, cr_jdoc_get(d.root, "m"), &n);
	ASSERT_EQ(n, 20);
	ASSERT(!memcmp(raw, "12345678901234567890", 20));
	raw = cr_jdoc_raw(&d, cr_jdoc_get(d.root, "s"), &n);
	ASSERT_EQ(n, 3);
	ASSERT(!memcmp(raw, "\"x\"", 3));
}
