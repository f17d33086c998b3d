/* tracer/broker/relay.c: one connection served: the upstream asked over TLS
 * with the secret (libcurl), its answer redacted and relayed, recorded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "corral/policy.h"
#include "../tracer.h"
#include "internal.h"

static void reply_text(int fd, int status, const char *reason,
		       const char *text)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, reason, strlen(text) + 1);

	if (n < 0 || (size_t)n >= sizeof(head))
		return;
	if (cr_write_all(fd, head, (size_t)n) == 0 && cr_write_all(fd, text, strlen(text)) == 0)
		cr_write_all(fd, "\n", 1);
}

/* Every occurrence of the secret (and of its base64 forms) becomes
 * [REDACTED]. In place when it shrinks; the buffer is re-made otherwise. */
static void redact_one(struct buf *b, const char *s)
{
	size_t sl = strlen(s), rl = strlen(REDACTED);
	struct buf out = { .max = SIZE_MAX };
	size_t i = 0;

	if (!sl || !b->p || !memmem(b->p, b->len, s, sl))
		return;
	while (i < b->len) {
		char *hit = memmem(b->p + i, b->len - i, s, sl);
		size_t upto = hit ? (size_t)(hit - b->p) : b->len;

		cr_broker_buf_add(&out, b->p + i, upto - i);
		if (!hit)
			break;
		cr_broker_buf_add(&out, REDACTED, rl);
		i = upto + sl;
	}
	explicit_bzero(b->p, b->len);
	free(b->p);
	*b = out;
	b->max = RESP_MAX * 2;
}

static void redact(struct buf *b, const struct cred_rt *r)
{
	redact_one(b, r->secret);
	/* Its own padded base64 first, then the shifted cores (broker.c):
	 * the longer form goes whole where it is there. */
	for (size_t k = 0; k < B64_FORMS; k++)
		if (r->b64[k])
			redact_one(b, r->b64[k]);
}

struct resp {
	long status;
	struct buf head;	/* kept response header lines, CRLF each */
	struct buf body;
	bool encoded;		/* a Content-Encoding that is not identity */
	bool sliced;		/* a part of the answer (206, byte ranges) */
	bool after_ce;		/* the last header line was Content-Encoding */
	struct cr_broker *b;
};

/* Only exactly "identity" (any case, blanks around) is an answer the
 * redaction can read: "identity, gzip" or "identityx" is compressed or
 * unknown, and a list is decoded by the program, not by corral. */
static bool is_identity(const char *v, size_t n)
{
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' ||
		     v[n - 1] == '\r' || v[n - 1] == '\n'))
		n--;
	return n == 8 && !strncasecmp(v, "identity", 8);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct resp *rs = arg;
	size_t len = size * n, nl;
	static const char *const drop[] = {
		"connection", "keep-alive", "transfer-encoding", "content-length",
		"proxy-connection", "trailer", "upgrade", "te",
	};

	if (!cr_broker_count(rs->b, len))
		return 0;
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		/* A new status line (after a 100 Continue): start over. */
		rs->head.len = 0;
		rs->encoded = false;
		rs->sliced = false;
		rs->after_ce = false;
		return len;
	}
	if (len && (p[0] == ' ' || p[0] == '\t')) {
		/* A folded line (obs-fold) continues the header before it:
		 * never relayed, and a Content-Encoding so continued is not
		 * exactly "identity". */
		if (rs->after_ce)
			rs->encoded = true;
		return len;
	}
	nl = strcspn(p, ":");
	if (nl >= len || len < 3)
		return len;	/* the blank line, or not a header */
	for (size_t i = 0; i < CR_ARRAY_SIZE(drop); i++)
		if (strlen(drop[i]) == nl && !strncasecmp(p, drop[i], nl))
			return len;
	if ((nl == 12 && !strncasecmp(p, "content-type", 12) &&
	     strcasestr(p + nl, "multipart/byteranges")) ||
	    (nl == 13 && !strncasecmp(p, "content-range", 13)))
		rs->sliced = true;
	if (nl == 16 && !strncasecmp(p, "content-encoding", 16)) {
		rs->after_ce = true;
		if (!is_identity(p + nl + 1, len - nl - 1))
			rs->encoded = true;
	} else {
		rs->after_ce = false;
	}
	while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		len--;
	if (cr_broker_buf_add(&rs->head, p, len) || cr_broker_buf_add(&rs->head, "\r\n", 2))
		return 0;
	return size * n;
}

/*
 * What the broker moves with an origin is the run's network traffic as
 * much as what the proxy relays: counted in net-bytes. An answer the
 * broker refuses after reading it (too large, compressed, partial) cost
 * the network all the same: 64 requests moved 1.2 GB under
 * net-bytes=64KiB, and the run ended ok (found by a probing session).
 * Counted as it arrives; the loop charges it at its next tick, and the
 * transfer stops once the budget is spent.
 */
bool cr_broker_count(struct cr_broker *b, uint64_t n)
{
	uint64_t lim = b->run->cfg->limits.v[CR_LIM_NET_BYTES];
	uint64_t sum = atomic_fetch_add(&b->up_pending, n) + n +
		       atomic_load(&b->usage_seen);

	return sum <= lim;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct resp *rs = arg;

	if (!cr_broker_count(rs->b, size * n))
		return 0;
	return cr_broker_buf_add(&rs->body, p, size * n) ? 0 : size * n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b_, curl_off_t c,
		       curl_off_t d)
{
	struct resp *rs = arg;

	return atomic_load(&rs->b->stopping) ? 1 : 0;
}

void cr_broker_serve(struct cr_broker *b, struct cred_rt *r, int fd)
{
	struct req q = { .method = "" };
	struct resp rs = { .b = b };
	const char *why = NULL;
	/* "https://[" host "]:" port, then the target. */
	char url[16 + CR_ORIGIN_HOST_MAX + TARGET_MAX + 1], errbuf[CURL_ERROR_SIZE] = "";
	int un;
	struct timeval tv = { .tv_sec = 10 };
	CURL *c = NULL;
	CURLcode cc;
	int st;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	st = cr_broker_read_request(fd, &q, r, &why);
	if (st == ABORTED) {
		/* Nothing was asked: no one to answer, nothing refused. */
		cr_broker_record_aborted(b, r, why);
		goto out;
	}
	if (!st && (why = cr_broker_rule_problem(r, q.method, q.target)))
		st = 403;
	if (st) {
		char text[300];

		snprintf(text, sizeof(text), "corral broker: refused: %s", why ? why : "error");
		reply_text(fd, st, st == 403 ? "Forbidden" : "Bad Request", text);
		cr_broker_record(b, r, q.method[0] ? q.method : "?", q.target, st, 0, 0,
		       why ? why : "error");
		goto out;
	}
	/* Whole or not at all: a URL cut short is another path than the
	 * one judged and audited ("/api/..x" cut to "/api/..", which curl
	 * makes "/"). The policy bounds the host and request.c the target,
	 * so this only fails on a change that breaks those bounds. */
	un = snprintf(url, sizeof(url), "https://%s%s%s:%u%s",
		      strchr(r->c->host, ':') ? "[" : "", r->c->host,
		      strchr(r->c->host, ':') ? "]" : "", r->c->port, q.target);
	if (un < 0 || (size_t)un >= sizeof(url)) {
		why = "the upstream URL would be longer than corral builds";
		reply_text(fd, 414, "URI Too Long", "corral broker: refused: the upstream URL would be too long");
		cr_broker_record(b, r, q.method, q.target, 414, 0, 0, why);
		goto out;
	}
	rs.head.max = HEAD_MAX * 4;
	rs.body.max = RESP_MAX;
	/* Every header or none: a list cut short by a failed append would
	 * go without the credential or the identity encoding asked for. */
	if (cr_broker_hdr_add(&q.hdrs, r->header) ||
	    cr_broker_hdr_add(&q.hdrs, "Accept-Encoding: identity") ||
	    cr_broker_hdr_add(&q.hdrs, "Expect:") ||
	    !(c = cr_curl.easy_init())) {
		reply_text(fd, 502, "Bad Gateway", "corral broker: out of memory");
		cr_broker_record(b, r, q.method, q.target, 502, 0, 0, NULL);
		goto out;
	}
	cr_curl.easy_setopt(c, CURLOPT_URL, url);
	cr_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	cr_curl.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https");
	cr_curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	/* Not the caller's proxy settings: the request goes to the origin. */
	cr_curl.easy_setopt(c, CURLOPT_PROXY, "");
	cr_curl.easy_setopt(c, CURLOPT_NOPROXY, "*");
	cr_curl.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	cr_curl.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (r->ca_pem) {
		struct curl_blob blob = { .data = r->ca_pem, .len = r->ca_len,
					  .flags = CURL_BLOB_NOCOPY };

		cr_curl.easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
	}
	cr_curl.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	cr_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cr_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	cr_curl.easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	cr_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	cr_curl.easy_setopt(c, CURLOPT_HTTPHEADER, q.hdrs);
	cr_curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	cr_curl.easy_setopt(c, CURLOPT_HEADERDATA, &rs);
	cr_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	cr_curl.easy_setopt(c, CURLOPT_WRITEDATA, &rs);
	cr_curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	cr_curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	cr_curl.easy_setopt(c, CURLOPT_XFERINFODATA, &rs);
	if (!strcmp(q.method, "HEAD"))
		cr_curl.easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(q.method, "GET") || q.body.len)
		/* The checked method, always, when a body goes: libcurl
		 * would otherwise send it as a POST. */
		cr_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, q.method);
	if (q.body.len || !strcmp(q.method, "POST") || !strcmp(q.method, "PUT") ||
	    !strcmp(q.method, "PATCH")) {
		cr_curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q.body.len);
		cr_curl.easy_setopt(c, CURLOPT_POSTFIELDS, q.body.p ? q.body.p : "");
	}
	/* The request's own bytes, about: its line, headers and body (past
	 * the budget, the answer's first header stops the transfer). */
	cr_broker_count(b, strlen(url) + q.body.len + 64);
	for (struct curl_slist *h = q.hdrs; h; h = h->next)
		cr_broker_count(b, strlen(h->data) + 2);
	cc = cr_curl.easy_perform(c);
	cr_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rs.status);
	if (rs.status == 206)
		rs.sliced = true;
	if (cc != CURLE_OK || rs.encoded || rs.sliced) {
		char text[400];
		struct buf eb = { .max = 4096 };

		/* curl's message may quote the upstream; never the secret. */
		cr_broker_buf_add(&eb, errbuf[0] ? errbuf : cr_curl.easy_strerror(cc),
			strlen(errbuf[0] ? errbuf : cr_curl.easy_strerror(cc)));
		redact(&eb, r);
		snprintf(text, sizeof(text), "corral broker: upstream failed: %s",
			 rs.encoded ? "a compressed answer cannot be redacted" :
			 rs.sliced ? "a partial answer cannot be redacted" :
			 eb.p ? eb.p : "error");
		free(eb.p);
		reply_text(fd, 502, "Bad Gateway", text);
		cr_broker_record(b, r, q.method, q.target, 502, q.body.len, 0, NULL);
		goto out;
	}
	cr_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rs.status);
	redact(&rs.head, r);
	redact(&rs.body, r);
	{
		char line[128];
		int n = snprintf(line, sizeof(line), "HTTP/1.1 %ld Relayed\r\n",
				 rs.status);
		char tail[96];
		int tn = snprintf(tail, sizeof(tail),
				  "Content-Length: %zu\r\nConnection: close\r\n\r\n",
				  rs.body.len);

		if (n > 0 && (size_t)n < sizeof(line) && tn > 0 &&
		    (size_t)tn < sizeof(tail) &&
		    !cr_write_all(fd, line, (size_t)n) &&
		    !cr_write_all(fd, rs.head.p ? rs.head.p : "", rs.head.len) &&
		    !cr_write_all(fd, tail, (size_t)tn))
			cr_write_all(fd, rs.body.p ? rs.body.p : "", rs.body.len);
	}
	cr_broker_record(b, r, q.method, q.target, rs.status, q.body.len, rs.body.len, NULL);
out:
	if (c)
		cr_curl.easy_cleanup(c);
	cr_curl.slist_free_all(q.hdrs);
	free(q.target);
	free(q.body.p);
	if (rs.head.p)
		explicit_bzero(rs.head.p, rs.head.len);
	if (rs.body.p)
		explicit_bzero(rs.body.p, rs.body.len);
	free(rs.head.p);
	free(rs.body.p);
}

