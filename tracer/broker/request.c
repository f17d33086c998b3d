/* tracer/broker/request.c: one request from the program, read and judged:
 * its HTTP/1.x head and body, the headers it may not set, the rules. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "corral/policy.h"
#include "../tracer.h"
#include "internal.h"

/* Headers the program may not set: the ones that carry authority, route
 * or frame the request (corral sets those), and Accept-Encoding (a
 * compressed answer could hide the secret from the redaction). */
static bool header_dropped(const char *line, size_t nlen, const struct cred_rt *r)
{
	static const char *const drop[] = {
		"host", "authorization", "proxy-authorization", "connection",
		"keep-alive", "transfer-encoding", "te", "upgrade",
		"content-length", "expect", "accept-encoding", "proxy-connection",
		"trailer", "cookie",
		/* A slice of an answer: the secret split over several
		 * answers is in none whole, and no redaction sees it. */
		"range", "if-range",
		/* Method overrides some frameworks honour: they would undo
		 * the credential's method rule. */
		"x-http-method-override", "x-http-method", "x-method-override",
	};
	const char *tcolon = strchr(r->c->header, ':');

	for (size_t i = 0; i < CR_ARRAY_SIZE(drop); i++)
		if (strlen(drop[i]) == nlen && !strncasecmp(line, drop[i], nlen))
			return true;
	return (size_t)(tcolon - r->c->header) == nlen &&
	       !strncasecmp(line, r->c->header, nlen);
}

/* A header name is a token (RFC 9110): "Host :" or "Authorization\t:"
 * would pass the drop list by name and reach an upstream that trims. */
static bool header_name_ok(const char *name, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch <= 0x20 || ch >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", ch))
			return false;
	}
	return true;
}

/* Dot segments and encoded separators would let the upstream's own path
 * normalisation leave the prefix the rule names. */
static const char *path_problem(const char *t)
{
	const char *q = t + strcspn(t, "?");

	if (t[0] != '/')
		return "the target is not an absolute path (origin-form)";
	if (strlen(t) > TARGET_MAX)
		return "the target is longer than 1000 bytes";
	for (const char *p = t; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f ||
		    *p == '\\' || *p == '#')
			return "a control, space, backslash, fragment or non-ASCII byte in the target";
	for (const char *seg = t + 1; seg <= q;) {
		size_t len = strcspn(seg, "/?");
		char dec[8];
		size_t dl = 0;

		if (seg + len > q)
			len = (size_t)(q - seg);
		/* Up to a ';': servers that take path parameters read
		 * "..;x" as "..". */
		for (size_t i = 0; i < len && seg[i] != ';'; i++) {
			if (dl == sizeof(dec) - 1) {
				dl = 0;	/* longer than any dot segment */
				break;
			}
			if (seg[i] == '%' && i + 2 < len &&
			    !strncasecmp(seg + i, "%2e", 3)) {
				dec[dl++] = '.';
				i += 2;
			} else {
				dec[dl++] = seg[i];
			}
		}
		dec[dl] = 0;
		if (!strcmp(dec, ".") || !strcmp(dec, ".."))
			return "a dot segment in the path";
		seg += len + 1;
	}
	for (const char *p = t; p < q; p++)
		if (*p == '%' && (!strncasecmp(p, "%2f", 3) ||
				  !strncasecmp(p, "%5c", 3)))
			return "an encoded slash or backslash in the path";
	return NULL;
}

const char *cr_broker_rule_problem(const struct cred_rt *r, const char *method,
				const char *target)
{
	const struct cr_credential *c = r->c;
	const char *why = path_problem(target);
	size_t plen = strcspn(target, "?");
	bool ok;

	if (why)
		return why;
	/* CONNECT and TRACE would turn the broker into a tunnel or a
	 * mirror of the request it signs: never relayed. */
	if (!strcmp(method, "CONNECT") || !strcmp(method, "TRACE"))
		return "CONNECT and TRACE are never relayed";
	ok = !c->methods.n;
	for (size_t i = 0; !ok && i < c->methods.n; i++)
		ok = !strcmp(c->methods.v[i], method);
	if (!ok)
		return "the method is not allowed for this credential";
	ok = !c->path_prefixes.n;
	for (size_t i = 0; !ok && i < c->path_prefixes.n; i++) {
		size_t l = strlen(c->path_prefixes.v[i]);

		/* By whole segments: "/a/project" is /a/project and what
		 * is beneath it, not /a/project-private (found by a
		 * probing session); a prefix ending in '/' already is. */
		ok = plen >= l && !strncmp(target, c->path_prefixes.v[i], l) &&
		     (plen == l || c->path_prefixes.v[i][l - 1] == '/' ||
		      target[l] == '/');
	}
	return ok ? NULL : "the path is outside the credential's prefixes";
}

/* Read the request head (and body) from the program. 0, or an HTTP status
 * to refuse with. */
int cr_broker_read_request(int fd, struct req *q, const struct cred_rt *r,
			const char **why)
{
	char head[HEAD_MAX + 1], *end = NULL, *line, *save;
	size_t len = 0, clen = 0;
	bool has_clen = false;

	while (!end) {
		ssize_t n = recv(fd, head + len, HEAD_MAX - len, 0);

		if (!len && (n == 0 || (n < 0 && errno == ECONNRESET))) {
			*why = "the program closed its connection before sending a request";
			return ABORTED;
		}
		if (n <= 0) {
			*why = "the request ended before its headers";
			return 400;
		}
		len += (size_t)n;
		head[len] = 0;
		end = strstr(head, "\r\n\r\n");
		if (!end && len == HEAD_MAX) {
			*why = "the request's headers are too large";
			return 431;
		}
	}
	*end = 0;
	line = strtok_r(head, "\r\n", &save);
	{
		char *sp1 = line ? strchr(line, ' ') : NULL;
		char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;

		if (!sp1 || !sp2 || (size_t)(sp1 - line) >= sizeof(q->method) ||
		    strncmp(sp2 + 1, "HTTP/1.", 7)) {
			*why = "not an HTTP/1.x request line";
			return 400;
		}
		memcpy(q->method, line, (size_t)(sp1 - line));
		q->method[sp1 - line] = 0;
		for (char *m = q->method; *m; m++)
			if (*m < 'A' || *m > 'Z') {
				*why = "not an HTTP method";
				return 400;
			}
		q->target = strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
		if (!q->target)
			return 500;
	}
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		size_t nl = strcspn(line, ":");

		if (!line[nl] || !nl || !header_name_ok(line, nl)) {
			*why = "a malformed header line";
			return 400;
		}
		if (nl == 17 && !strncasecmp(line, "transfer-encoding", 17)) {
			*why = "chunked request bodies are not relayed";
			return 411;
		}
		if (nl == 14 && !strncasecmp(line, "content-length", 14)) {
			char *e;

			clen = strtoul(line + 15, &e, 10);
			has_clen = true;
			if (clen > BODY_MAX) {
				*why = "the request body is too large";
				return 413;
			}
			continue;
		}
		if (header_dropped(line, nl, r))
			continue;
		if (cr_broker_hdr_add(&q->hdrs, line)) {
			*why = "out of memory";
			return 500;
		}
	}
	q->body.max = BODY_MAX;
	/* libcurl sends a body as a POST: a GET or HEAD with one would
	 * reach the upstream as the method the rule did not allow. */
	if (clen && (!strcmp(q->method, "GET") || !strcmp(q->method, "HEAD"))) {
		*why = "a GET or HEAD request with a body";
		return 400;
	}
	if (has_clen) {
		size_t have = len - (size_t)(end + 4 - head);

		if (have > clen)
			have = clen;
		cr_broker_buf_add(&q->body, end + 4, have);
		while (q->body.len < clen) {
			char tmp[16384];
			size_t want = clen - q->body.len;
			ssize_t n = recv(fd, tmp, want < sizeof(tmp) ? want : sizeof(tmp), 0);

			if (n <= 0) {
				*why = "the request body ended early";
				return 400;
			}
			cr_broker_buf_add(&q->body, tmp, (size_t)n);
		}
	}
	return 0;
}

