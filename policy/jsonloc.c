/* policy/jsonloc.c: parse a JSON document with cJSON and locate every value
 * in its text (line, key path, raw bytes); reject what cJSON lets through. */
#include <cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "corral/policy.h"
#include "corral/util.h"

/*
 * cJSON keeps no positions, so the text is scanned a second time by a small
 * strict scanner that records, for every value in document order, its parent,
 * key or index, line and bytes. cJSON also keeps its values in document order,
 * so the n-th value of a pre-order walk of the cJSON tree is the n-th value
 * the scanner saw; that binds the two. A document is accepted only when both
 * accept it, which also closes cJSON's leniencies: duplicate keys (cJSON keeps
 * both and a lookup would silently pick one), "\u0000" (cJSON truncates the
 * string there, so "/usr\u0000/../etc" would read as "/usr"), raw control
 * characters, bytes below 0x20 taken as whitespace, "1." and "01", and
 * invalid UTF-8.
 */

#define NO_NODE ((size_t)-1)
/* Above cJSON's own nesting limit, so cJSON's is the one that applies. */
#define MAX_DEPTH (CJSON_NESTING_LIMIT + 24)
#define PATH_SHOWN 240

struct cr_jnode {
	const cJSON *item;	/* borrowed: bound after both parses */
	size_t parent;		/* NO_NODE for the root */
	size_t key;		/* offset in keys; NO_NODE unless a member */
	size_t index;		/* position among the parent's values */
	size_t start, end;	/* the value's bytes in the text */
	unsigned line;		/* of the key (members) or the value */
};

struct scan {
	const unsigned char *s;	/* borrowed */
	size_t len, pos;
	unsigned line;
	struct cr_jnode *nodes;	/* owned until handed to the document */
	size_t n, cap;
	char *keys;		/* owned until handed on; len + 1 bytes */
	size_t klen;
	size_t *stk;		/* owned: members of the open objects */
	size_t nstk, capstk;
	size_t cur;		/* innermost open value, for messages */
	size_t err_node;
	unsigned err_line;
	char msg[160];
	int rc;
};

static void scan_free(struct scan *sc)
{
	free(sc->nodes);
	free(sc->keys);
	free(sc->stk);
	sc->nodes = NULL;
	sc->keys = NULL;
	sc->stk = NULL;
}

static int fail_at(struct scan *sc, size_t node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(struct scan *sc, size_t node, const char *fmt, ...)
{
	va_list ap;

	if (sc->rc)
		return sc->rc;
	sc->rc = -EINVAL;
	sc->err_node = node;
	sc->err_line = sc->line;
	va_start(ap, fmt);
	vsnprintf(sc->msg, sizeof(sc->msg), fmt, ap);
	va_end(ap);
	return sc->rc;
}

static int oom(struct scan *sc)
{
	if (!sc->rc) {
		sc->rc = -ENOMEM;
		sc->err_node = sc->cur;
		sc->err_line = sc->line;
		snprintf(sc->msg, sizeof(sc->msg), "out of memory");
	}
	return sc->rc;
}

/* What the scanner found where it wanted something else, for messages. */
static const char *found(const struct scan *sc, char *buf, size_t len)
{
	unsigned char c;

	if (sc->pos >= sc->len)
		return "the end of the document";
	c = sc->s[sc->pos];
	if (c > 0x20 && c < 0x7f && c != '\'')
		snprintf(buf, len, "'%c'", c);
	else
		snprintf(buf, len, "byte 0x%02x", c);
	return buf;
}

static void skip_ws(struct scan *sc)
{
	while (sc->pos < sc->len) {
		unsigned char c = sc->s[sc->pos];

		if (c == '\n')
			sc->line++;
		else if (c != ' ' && c != '\t' && c != '\r')
			return;
		sc->pos++;
	}
}

static size_t new_node(struct scan *sc, size_t parent, size_t key,
		       size_t index, unsigned line)
{
	struct cr_jnode *nd;

	if (sc->n == sc->cap) {
		size_t ncap = sc->cap ? sc->cap * 2 : 64;
		struct cr_jnode *nn;

		if (ncap > SIZE_MAX / sizeof(*nn))
			return NO_NODE;
		nn = realloc(sc->nodes, ncap * sizeof(*nn));
		if (!nn)
			return NO_NODE;
		sc->nodes = nn;
		sc->cap = ncap;
	}
	nd = &sc->nodes[sc->n];
	nd->item = NULL;
	nd->parent = parent;
	nd->key = key;
	nd->index = index;
	nd->start = sc->pos;
	nd->end = sc->pos;
	nd->line = line;
	return sc->n++;
}

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, size_t avail)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (avail < n)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

static int hex4(struct scan *sc, unsigned *out)
{
	unsigned v = 0;
	size_t i;

	if (sc->len - sc->pos < 4)
		return fail_at(sc, sc->cur, "truncated \\u escape");
	for (i = 0; i < 4; i++) {
		unsigned char c = sc->s[sc->pos + i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return fail_at(sc, sc->cur,
				       "\\u must be followed by 4 hex digits");
	}
	sc->pos += 4;
	*out = v;
	return 0;
}

static void put(char *dst, size_t *n, unsigned char c)
{
	if (dst)
		dst[*n] = (char)c;
	(*n)++;
}

/* At a backslash. Decodes into dst (when not NULL); never writes more bytes
 * than it consumes, which is what bounds the key arena. */
static int scan_escape(struct scan *sc, char *dst, size_t *n)
{
	unsigned cp, lo;
	unsigned char c;

	if (++sc->pos >= sc->len)
		return fail_at(sc, sc->cur, "unterminated string");
	c = sc->s[sc->pos++];
	switch (c) {
	case '"':
	case '\\':
	case '/':
		put(dst, n, c);
		return 0;
	case 'b':
		put(dst, n, '\b');
		return 0;
	case 'f':
		put(dst, n, '\f');
		return 0;
	case 'n':
		put(dst, n, '\n');
		return 0;
	case 'r':
		put(dst, n, '\r');
		return 0;
	case 't':
		put(dst, n, '\t');
		return 0;
	case 'u':
		break;
	default:
		sc->pos--;
		return fail_at(sc, sc->cur,
			       "invalid escape \"\\%c\" in a string",
			       c > 0x20 && c < 0x7f ? c : '?');
	}
	if (hex4(sc, &cp))
		return sc->rc;
	if (cp == 0)
		return fail_at(sc, sc->cur,
			       "string contains a NUL character (\\u0000)");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail_at(sc, sc->cur, "unpaired UTF-16 surrogate \\u%04x",
			       cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (sc->len - sc->pos < 2 || sc->s[sc->pos] != '\\' ||
		    sc->s[sc->pos + 1] != 'u')
			return fail_at(sc, sc->cur,
				       "unpaired UTF-16 surrogate \\u%04x", cp);
		sc->pos += 2;
		if (hex4(sc, &lo))
			return sc->rc;
		if (lo < 0xdc00 || lo > 0xdfff)
			return fail_at(sc, sc->cur,
				       "unpaired UTF-16 surrogate \\u%04x", cp);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp < 0x80) {
		put(dst, n, (unsigned char)cp);
	} else if (cp < 0x800) {
		put(dst, n, (unsigned char)(0xc0 | (cp >> 6)));
		put(dst, n, (unsigned char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		put(dst, n, (unsigned char)(0xe0 | (cp >> 12)));
		put(dst, n, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
		put(dst, n, (unsigned char)(0x80 | (cp & 0x3f)));
	} else {
		put(dst, n, (unsigned char)(0xf0 | (cp >> 18)));
		put(dst, n, (unsigned char)(0x80 | ((cp >> 12) & 0x3f)));
		put(dst, n, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
		put(dst, n, (unsigned char)(0x80 | (cp & 0x3f)));
	}
	return 0;
}

/* At the opening quote. dst may be NULL (values are not kept). */
static int scan_string(struct scan *sc, char *dst, size_t *dlen)
{
	size_t n = 0;

	sc->pos++;
	for (;;) {
		unsigned char c;
		size_t k;

		if (sc->pos >= sc->len)
			return fail_at(sc, sc->cur, "unterminated string");
		c = sc->s[sc->pos];
		if (c == '"') {
			sc->pos++;
			break;
		}
		if (c == '\\') {
			if (scan_escape(sc, dst, &n))
				return sc->rc;
			continue;
		}
		if (c < 0x20)
			return fail_at(sc, sc->cur,
				       "control character 0x%02x in a string "
				       "(write it as an escape)", c);
		k = utf8_len(sc->s + sc->pos, sc->len - sc->pos);
		if (!k)
			return fail_at(sc, sc->cur,
				       "invalid UTF-8 in a string");
		while (k--)
			put(dst, &n, sc->s[sc->pos++]);
	}
	if (dlen)
		*dlen = n;
	return 0;
}

static bool is_digit(const struct scan *sc)
{
	return sc->pos < sc->len && sc->s[sc->pos] >= '0' &&
	       sc->s[sc->pos] <= '9';
}

/* RFC 8259's number grammar exactly; cJSON also takes "01" and "1.". */
static int scan_number(struct scan *sc)
{
	if (sc->s[sc->pos] == '-')
		sc->pos++;
	if (!is_digit(sc))
		return fail_at(sc, sc->cur, "malformed number");
	if (sc->s[sc->pos] == '0') {
		sc->pos++;
		if (is_digit(sc))
			return fail_at(sc, sc->cur,
				       "malformed number (leading zero)");
	} else {
		while (is_digit(sc))
			sc->pos++;
	}
	if (sc->pos < sc->len && sc->s[sc->pos] == '.') {
		sc->pos++;
		if (!is_digit(sc))
			return fail_at(sc, sc->cur, "malformed number");
		while (is_digit(sc))
			sc->pos++;
	}
	if (sc->pos < sc->len && (sc->s[sc->pos] == 'e' ||
				  sc->s[sc->pos] == 'E')) {
		sc->pos++;
		if (sc->pos < sc->len && (sc->s[sc->pos] == '+' ||
					  sc->s[sc->pos] == '-'))
			sc->pos++;
		if (!is_digit(sc))
			return fail_at(sc, sc->cur, "malformed number");
		while (is_digit(sc))
			sc->pos++;
	}
	return 0;
}

static int scan_literal(struct scan *sc, const char *word)
{
	size_t n = strlen(word);

	if (sc->len - sc->pos < n || memcmp(sc->s + sc->pos, word, n))
		return fail_at(sc, sc->cur, "unexpected word (expected %s)",
			       word);
	sc->pos += n;
	return 0;
}

static int scan_value(struct scan *sc, size_t parent, size_t key,
		      size_t index, unsigned line, unsigned depth);

static int push_member(struct scan *sc, size_t node)
{
	if (sc->nstk == sc->capstk) {
		size_t ncap = sc->capstk ? sc->capstk * 2 : 64;
		size_t *ns;

		if (ncap > SIZE_MAX / sizeof(*ns))
			return oom(sc);
		ns = realloc(sc->stk, ncap * sizeof(*ns));
		if (!ns)
			return oom(sc);
		sc->stk = ns;
		sc->capstk = ncap;
	}
	sc->stk[sc->nstk++] = node;
	return 0;
}

static int key_cmp(const void *a, const void *b, void *ctx)
{
	const struct scan *sc = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(sc->keys + sc->nodes[x].key,
		       sc->keys + sc->nodes[y].key);

	if (c)
		return c;
	return x < y ? -1 : x > y;
}

/* Sorting the members (n log n, not n^2 on a hostile object) puts equal keys
 * next to each other, in document order. The error names the first repeat in
 * the document and where the key was first given. */
static int check_duplicates(struct scan *sc, size_t base)
{
	size_t *m = sc->stk + base, cnt = sc->nstk - base;
	size_t i, first = 0, dup = NO_NODE, dup_first = NO_NODE;

	if (cnt < 2)
		return 0;
	qsort_r(m, cnt, sizeof(*m), key_cmp, sc);
	for (i = 1; i < cnt; i++) {
		if (strcmp(sc->keys + sc->nodes[m[i]].key,
			   sc->keys + sc->nodes[m[i - 1]].key)) {
			first = i;
			continue;
		}
		if (dup == NO_NODE || m[i] < dup) {
			dup = m[i];
			dup_first = m[first];
		}
	}
	if (dup == NO_NODE)
		return 0;
	fail_at(sc, dup, "duplicate key (first given on line %u)",
		sc->nodes[dup_first].line);
	sc->err_line = sc->nodes[dup].line;
	return sc->rc;
}

static int scan_object(struct scan *sc, size_t me, unsigned depth)
{
	size_t base = sc->nstk, index;
	char fb[16];

	sc->pos++;
	skip_ws(sc);
	if (sc->pos < sc->len && sc->s[sc->pos] == '}') {
		sc->pos++;
		return 0;
	}
	for (index = 0;; index++) {
		size_t koff = sc->klen, klen = 0, child;
		unsigned kline = sc->line;

		if (sc->pos >= sc->len || sc->s[sc->pos] != '"')
			return fail_at(sc, me, "expected a key in double "
				       "quotes, found %s",
				       found(sc, fb, sizeof(fb)));
		if (scan_string(sc, sc->keys + koff, &klen))
			return sc->rc;
		sc->keys[koff + klen] = '\0';
		sc->klen = koff + klen + 1;
		skip_ws(sc);
		if (sc->pos >= sc->len || sc->s[sc->pos] != ':')
			return fail_at(sc, me, "expected ':' after a key, "
				       "found %s", found(sc, fb, sizeof(fb)));
		sc->pos++;
		skip_ws(sc);
		child = sc->n;
		if (scan_value(sc, me, koff, index, kline, depth + 1))
			return sc->rc;
		if (push_member(sc, child))
			return sc->rc;
		skip_ws(sc);
		if (sc->pos < sc->len && sc->s[sc->pos] == ',') {
			sc->pos++;
			skip_ws(sc);
			continue;
		}
		if (sc->pos < sc->len && sc->s[sc->pos] == '}') {
			sc->pos++;
			break;
		}
		return fail_at(sc, child, "expected ',' or '}' after this "
			       "value, found %s", found(sc, fb, sizeof(fb)));
	}
	if (check_duplicates(sc, base))
		return sc->rc;
	sc->nstk = base;
	return 0;
}

static int scan_array(struct scan *sc, size_t me, unsigned depth)
{
	size_t index;
	char fb[16];

	sc->pos++;
	skip_ws(sc);
	if (sc->pos < sc->len && sc->s[sc->pos] == ']') {
		sc->pos++;
		return 0;
	}
	for (index = 0;; index++) {
		size_t child = sc->n;

		if (scan_value(sc, me, NO_NODE, index, sc->line, depth + 1))
			return sc->rc;
		skip_ws(sc);
		if (sc->pos < sc->len && sc->s[sc->pos] == ',') {
			sc->pos++;
			skip_ws(sc);
			continue;
		}
		if (sc->pos < sc->len && sc->s[sc->pos] == ']')
			break;
		return fail_at(sc, child, "expected ',' or ']' after this "
			       "value, found %s", found(sc, fb, sizeof(fb)));
	}
	sc->pos++;
	return 0;
}

static int scan_value(struct scan *sc, size_t parent, size_t key,
		      size_t index, unsigned line, unsigned depth)
{
	size_t me, saved = sc->cur;
	char fb[16];
	int rc;

	if (depth > MAX_DEPTH)
		return fail_at(sc, sc->cur, "nested too deeply");
	me = new_node(sc, parent, key, index, line);
	if (me == NO_NODE)
		return oom(sc);
	sc->cur = me;
	if (sc->pos >= sc->len)
		return fail_at(sc, me, "expected a value, found the end of "
			       "the document");
	switch (sc->s[sc->pos]) {
	case '{':
		rc = scan_object(sc, me, depth);
		break;
	case '[':
		rc = scan_array(sc, me, depth);
		break;
	case '"':
		rc = scan_string(sc, NULL, NULL);
		break;
	case 't':
		rc = scan_literal(sc, "true");
		break;
	case 'f':
		rc = scan_literal(sc, "false");
		break;
	case 'n':
		rc = scan_literal(sc, "null");
		break;
	default:
		if (sc->s[sc->pos] == '-' || (sc->s[sc->pos] >= '0' &&
					      sc->s[sc->pos] <= '9'))
			rc = scan_number(sc);
		else
			rc = fail_at(sc, me, "expected a value, found %s",
				     found(sc, fb, sizeof(fb)));
		break;
	}
	if (rc)
		return rc;
	sc->nodes[me].end = sc->pos;
	sc->cur = saved;
	return 0;
}

static int scan_doc(struct scan *sc, const char *text, size_t len)
{
	char fb[16];

	memset(sc, 0, sizeof(*sc));
	sc->s = (const unsigned char *)text;
	sc->len = len;
	sc->line = 1;
	sc->cur = NO_NODE;
	sc->keys = malloc(len + 1);
	if (!sc->keys)
		return oom(sc);
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		sc->pos = 3;
	skip_ws(sc);
	if (scan_value(sc, NO_NODE, NO_NODE, 0, sc->line, 0))
		return sc->rc;
	skip_ws(sc);
	if (sc->pos != sc->len)
		return fail_at(sc, 0, "unexpected %s after the document",
			       found(sc, fb, sizeof(fb)));
	return 0;
}

/* ---- Messages ---- */

struct sbuf {
	char *b;
	size_t len, pos;
	bool cut;
};

static void sb_putc(struct sbuf *sb, char c)
{
	if (sb->pos + 1 < sb->len)
		sb->b[sb->pos++] = c;
	else
		sb->cut = true;
	sb->b[sb->pos] = '\0';
}

static void sb_puts(struct sbuf *sb, const char *s)
{
	while (*s)
		sb_putc(sb, *s++);
}

/* Printable ASCII as is, everything else as \xNN: a message may reach a
 * terminal, and the document is not trusted to be kind to it. Paths are not
 * quoted, so there a space or a bracket is escaped too. */
static void sb_escaped(struct sbuf *sb, const char *s, size_t max,
		       bool in_path)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == max) {
			sb_puts(sb, "...");
			return;
		}
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' &&
		    !(in_path && (c == ' ' || c == '[' || c == ']'))) {
			sb_putc(sb, (char)c);
		} else if (c == '"' || c == '\\') {
			sb_putc(sb, '\\');
			sb_putc(sb, (char)c);
		} else {
			sb_puts(sb, "\\x");
			sb_putc(sb, hex[c >> 4]);
			sb_putc(sb, hex[c & 15]);
		}
	}
}

const char *cr_str_quote(const char *s, char *buf, size_t len)
{
	struct sbuf sb = { buf, len, 0, false };

	if (!len)
		return buf;
	buf[0] = '\0';
	sb_putc(&sb, '"');
	sb_escaped(&sb, s ? s : "", 72, false);
	sb_putc(&sb, '"');
	return buf;
}

static const char *node_path(const struct cr_jnode *nodes, const char *keys,
			     size_t i, char *buf, size_t len)
{
	struct sbuf sb = { buf, len, 0, false };
	size_t chain[MAX_DEPTH + 2];
	size_t depth = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	while (i != NO_NODE && nodes[i].parent != NO_NODE &&
	       depth < CR_ARRAY_SIZE(chain)) {
		chain[depth++] = i;
		i = nodes[i].parent;
	}
	if (!depth) {
		sb_puts(&sb, "(document)");
		return buf;
	}
	while (depth-- && !sb.cut) {
		const struct cr_jnode *nd = &nodes[chain[depth]];

		if (nd->key == NO_NODE) {
			char ix[32];

			snprintf(ix, sizeof(ix), "[%zu]", nd->index);
			sb_puts(&sb, ix);
		} else {
			if (sb.pos)
				sb_putc(&sb, '.');
			if (keys[nd->key])
				sb_escaped(&sb, keys + nd->key, 64, true);
			else
				sb_puts(&sb, "\"\"");
		}
	}
	if (sb.cut && len > 4)
		memcpy(buf + len - 4, "...", 4);
	return buf;
}

/* ---- The document ---- */

static unsigned line_at(const char *text, size_t off)
{
	unsigned line = 1;
	size_t i;

	for (i = 0; i < off; i++)
		if (text[i] == '\n')
			line++;
	return line;
}

static int bind(struct cr_jdoc *d, const cJSON *item, size_t *i,
		unsigned depth)
{
	const cJSON *c;

	if (*i >= d->nnodes || depth > MAX_DEPTH)
		return -1;
	d->nodes[(*i)++].item = item;
	if (!cJSON_IsArray(item) && !cJSON_IsObject(item))
		return 0;
	for (c = item->child; c; c = c->next)
		if (bind(d, c, i, depth + 1))
			return -1;
	return 0;
}

static int item_cmp(const void *a, const void *b, void *ctx)
{
	const struct cr_jnode *nodes = ctx;
	uintptr_t x = (uintptr_t)nodes[*(const size_t *)a].item;
	uintptr_t y = (uintptr_t)nodes[*(const size_t *)b].item;

	return x < y ? -1 : x > y;
}

static size_t find(const struct cr_jdoc *d, const cJSON *item)
{
	size_t lo = 0, hi = d->nnodes;

	if (!item || !d->by_item)
		return NO_NODE;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const cJSON *at = d->nodes[d->by_item[mid]].item;

		if (at == item)
			return d->by_item[mid];
		if ((uintptr_t)at < (uintptr_t)item)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NO_NODE;
}

/* The deepest value whose bytes hold off: where a syntax error sits. */
static size_t node_holding(const struct scan *sc, size_t off)
{
	size_t i, best = NO_NODE;

	for (i = 0; i < sc->n; i++)
		if (sc->nodes[i].start <= off && off < sc->nodes[i].end)
			best = i;
	return best;
}

static int syntax_error(struct cr_jdoc *d, const char *copy, const char *end)
{
	struct scan sc;
	char path[PATH_SHOWN], near[40];
	size_t off = end && end >= copy ? (size_t)(end - copy) : 0;
	int rc;

	if (off > d->len)
		off = d->len;
	rc = scan_doc(&sc, d->text, d->len);
	if (rc) {
		/* The scanner's message is the more precise of the two. */
		node_path(sc.nodes, sc.keys, sc.err_node, path, sizeof(path));
		cr_errf(d->err, d->errlen, "%s:%u: %s: %s", d->file,
			sc.err_line, path, sc.msg);
		scan_free(&sc);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	node_path(sc.nodes, sc.keys, node_holding(&sc, off), path,
		  sizeof(path));
	scan_free(&sc);
	if (off >= d->len) {
		cr_errf(d->err, d->errlen, "%s:%u: %s: JSON syntax error at "
			"the end of the document", d->file,
			line_at(d->text, off), path);
	} else {
		char snip[17];
		size_t n = 0;

		while (n < sizeof(snip) - 1 && off + n < d->len &&
		       d->text[off + n] != '\n')
			snip[n] = d->text[off + n], n++;
		snip[n] = '\0';
		cr_errf(d->err, d->errlen, "%s:%u: %s: JSON syntax error near "
			"%s", d->file, line_at(d->text, off), path,
			cr_str_quote(snip, near, sizeof(near)));
	}
	return -EINVAL;
}

int cr_jdoc_open(struct cr_jdoc *d, const char *text, size_t len,
		 const char *file, size_t max, char *err, size_t errlen)
{
	char *copy cr_autofree = NULL;
	const char *end = NULL, *nul;
	struct scan sc;
	size_t i;
	int rc;

	memset(d, 0, sizeof(*d));
	d->file = file ? file : "(input)";
	d->text = text;
	d->len = len;
	d->err = err;
	d->errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	if (!text && len)
		return -EINVAL;
	if (len > max) {
		cr_errf(err, errlen, "%s:1: (document): document is %zu bytes, "
			"more than the limit of %zu", d->file, len, max);
		return -EINVAL;
	}
	nul = len ? memchr(text, '\0', len) : NULL;
	if (nul) {
		cr_errf(err, errlen, "%s:%u: (document): NUL byte in the "
			"document", d->file,
			line_at(text, (size_t)(nul - text)));
		return -EINVAL;
	}
	/* cJSON wants the terminating NUL inside the length it is given to
	 * insist that nothing follows the document. */
	copy = malloc(len + 1);
	if (!copy)
		goto nomem;
	if (len)
		memcpy(copy, text, len);
	copy[len] = '\0';
	d->root = cJSON_ParseWithLengthOpts(copy, len + 1, &end, 1);
	if (!d->root)
		return syntax_error(d, copy, end);

	rc = scan_doc(&sc, text, len);
	if (rc) {
		char path[PATH_SHOWN];

		node_path(sc.nodes, sc.keys, sc.err_node, path, sizeof(path));
		cr_errf(err, errlen, "%s:%u: %s: %s", d->file, sc.err_line,
			path, sc.msg);
		scan_free(&sc);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	d->nodes = sc.nodes;
	d->nnodes = sc.n;
	d->keys = sc.keys;
	free(sc.stk);
	i = 0;
	if (bind(d, d->root, &i, 0) || i != d->nnodes) {
		cr_errf(err, errlen, "%s:1: (document): internal error: the "
			"locator disagrees with the parser", d->file);
		return -EINVAL;
	}
	d->by_item = malloc(d->nnodes * sizeof(*d->by_item));
	if (!d->by_item)
		goto nomem;
	for (i = 0; i < d->nnodes; i++)
		d->by_item[i] = i;
	qsort_r(d->by_item, d->nnodes, sizeof(*d->by_item), item_cmp,
		d->nodes);
	return 0;
nomem:
	cr_errf(err, errlen, "%s: out of memory", d->file);
	return -ENOMEM;
}

void cr_jdoc_close(struct cr_jdoc *d)
{
	cJSON_Delete(d->root);
	free(d->nodes);
	free(d->by_item);
	free(d->keys);
	d->root = NULL;
	d->nodes = NULL;
	d->by_item = NULL;
	d->keys = NULL;
	d->nnodes = 0;
}

unsigned cr_jdoc_line(const struct cr_jdoc *d, const struct cJSON *item)
{
	size_t i = find(d, item);

	return i == NO_NODE ? 0 : d->nodes[i].line;
}

const char *cr_jdoc_path(const struct cr_jdoc *d, const struct cJSON *item,
			 char *buf, size_t len)
{
	return node_path(d->nodes, d->keys, find(d, item), buf, len);
}

const char *cr_jdoc_raw(const struct cr_jdoc *d, const struct cJSON *item,
			size_t *len)
{
	size_t i = find(d, item);

	if (i == NO_NODE) {
		*len = 0;
		return "";
	}
	*len = d->nodes[i].end - d->nodes[i].start;
	return d->text + d->nodes[i].start;
}

unsigned cr_jdoc_find_line(const struct cr_jdoc *d, const char *path)
{
	char buf[PATH_SHOWN];
	size_t i;

	for (i = 0; i < d->nnodes; i++)
		if (!strcmp(node_path(d->nodes, d->keys, i, buf, sizeof(buf)),
			    path))
			return d->nodes[i].line;
	return 0;
}

int cr_jdoc_fail(const struct cr_jdoc *d, const struct cJSON *item,
		 const char *fmt, ...)
{
	char path[PATH_SHOWN], msg[512];
	size_t i = find(d, item);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	node_path(d->nodes, d->keys, i, path, sizeof(path));
	cr_errf(d->err, d->errlen, "%s:%u: %s: %s", d->file,
		i == NO_NODE ? 1 : d->nodes[i].line, path, msg);
	return -EINVAL;
}
