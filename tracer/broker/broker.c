/* tracer/broker/broker.c: the capability broker: the program asks over plain
 * HTTP on loopback, corral adds the secret and asks the upstream over TLS. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <cJSON.h>

#include "corral/digest.h"
#include "../tracer.h"
#include "broker.h"
#include "curlapi.h"

#define HEAD_MAX (16 * 1024)		/* request line and headers */
#define BODY_MAX (1024 * 1024)		/* request body */
#define RESP_MAX (16 * 1024 * 1024)	/* response body, buffered to redact */
#define SECRET_MAX 4096
#define REDACTED "[REDACTED]"

struct cred_rt {
	const struct cr_credential *c;	/* borrowed from the policy */
	char *secret;			/* owned, wiped at the end */
	char *b64;			/* owned: its base64 form, redacted too */
	char *header;			/* owned: the template filled in */
	int lfd;
	uint16_t port;
};

struct refusal {
	char *target;
	char *reason;
};

struct cr_broker {
	struct cr_run *run;
	struct cred_rt *cr;
	size_t n;
	int stop[2];
	pthread_t thr;
	bool started;
	atomic_bool stopping;
	pthread_mutex_t lock;		/* refusals, conn */
	int conn;			/* the connection being served, -1 */
	struct refusal *ref;
	size_t nref;
};

struct buf {
	char *p;
	size_t len, cap, max;
	bool over;
};

static int buf_add(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->max) {
		b->over = true;
		return -1;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

/* ---- set-up ---- */

static int read_secret(const struct cr_credential *c, char **out, char *err,
		       size_t errlen)
{
	const char *v;
	char *s = NULL;
	size_t len = 0;

	if (c->secret_env) {
		v = getenv(c->secret_env);
		if (!v || !*v) {
			cr_errf(err, errlen, "credential %s: $%s is not set",
				c->name, c->secret_env);
			return -ENOENT;
		}
		s = strdup(v);
		if (!s)
			return -ENOMEM;
		len = strlen(s);
	} else {
		int rc = cr_read_file(c->secret_file, SECRET_MAX, &s, &len);

		if (rc) {
			cr_errf(err, errlen, "credential %s: %s: %s", c->name,
				c->secret_file, strerror(-rc));
			return rc;
		}
		while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
			s[--len] = 0;
	}
	/* Inside a header: a line break would let the secret's holder write
	 * headers of its own. */
	if (!len || len > SECRET_MAX || strlen(s) != len || strpbrk(s, "\r\n")) {
		cr_errf(err, errlen, "credential %s: the secret is empty, too long or holds a line break or NUL",
			c->name);
		free(s);
		return -EINVAL;
	}
	*out = s;
	return 0;
}

static int fill_template(struct cred_rt *r)
{
	const char *t = r->c->header, *at = strstr(t, "{secret}");

	return asprintf(&r->header, "%.*s%s%s", (int)(at - t), t, r->secret,
			at + 8) < 0 ? -ENOMEM : 0;
}

static int push_allow(struct cr_strlist *l, const char *s)
{
	char **nv = realloc(l->v, (l->n + 2) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	l->v = nv;
	l->v[l->n] = strdup(s);
	if (!l->v[l->n])
		return -ENOMEM;
	l->n++;
	l->v[l->n] = NULL;
	return 0;
}

int cr_broker_setup(struct cr_run *run, char *err, size_t errlen)
{
	const struct cr_class *cls = run->cfg->cls;
	struct cr_broker *b;
	int rc;

	if (!cls->ncredentials)
		return 0;
	rc = cr_curlapi_load(err, errlen);
	if (rc)
		return rc;
	if (cr_curl.global_init(CURL_GLOBAL_DEFAULT)) {
		cr_errf(err, errlen, "cannot initialise libcurl");
		return -EIO;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	run->broker = b;
	b->run = run;
	b->conn = -1;
	b->stop[0] = b->stop[1] = -1;
	pthread_mutex_init(&b->lock, NULL);
	b->cr = calloc(cls->ncredentials, sizeof(*b->cr));
	if (!b->cr || pipe2(b->stop, O_CLOEXEC | O_NONBLOCK) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < cls->ncredentials; i++) {
		struct cred_rt *r = &b->cr[b->n++];
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t al = sizeof(a);
		char dest[64];
		int blen;

		r->c = &cls->credentials[i];
		r->lfd = -1;
		rc = read_secret(r->c, &r->secret, err, errlen);
		if (rc)
			return rc;
		blen = (int)(4 * ((strlen(r->secret) + 2) / 3) + 1);
		r->b64 = malloc((size_t)blen);
		if (!r->b64)
			return -ENOMEM;
		if (cr_base64(r->secret, strlen(r->secret), r->b64, (size_t)blen)) {
			cr_errf(err, errlen, "credential %s: cannot encode the secret in base64",
				r->c->name);
			return -EIO;
		}
		if ((rc = fill_template(r)))
			return rc;
		r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (r->lfd < 0 || bind(r->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    listen(r->lfd, 64) < 0 ||
		    getsockname(r->lfd, (struct sockaddr *)&a, &al) < 0) {
			rc = -errno;
			cr_errf(err, errlen, "credential %s: cannot listen on loopback: %s",
				r->c->name, strerror(-rc));
			return rc;
		}
		r->port = ntohs(a.sin_port);
		/* The program reaches the broker through corral's proxy like
		 * any allowed destination: its bytes and connections count
		 * against the run's network budgets. */
		snprintf(dest, sizeof(dest), "127.0.0.1:%u", r->port);
		if ((rc = push_allow(&run->cfg->allow_net, dest)))
			return rc;
	}
	return 0;
}

int cr_broker_env(struct cr_run *run)
{
	struct cr_broker *b = run->broker;
	char **env = run->cfg->envp;
	size_t n = 0, o = 0;

	if (!b || !env)
		return 0;
	/* No variable of the program may carry a secret, however it came
	 * (the class's names, --env, the request). */
	for (n = 0; env[n]; n++) {
		const char *v = strchr(env[n], '=');
		bool holds = false;

		for (size_t i = 0; v && i < b->n; i++)
			if (strstr(v + 1, b->cr[i].secret))
				holds = true;
		if (holds) {
			fprintf(stderr, "corral: %.*s held a broker secret: not passed to the program\n",
				(int)(v - env[n]), env[n]);
			explicit_bzero(env[n], strlen(env[n]));
			free(env[n]);
		} else {
			env[o++] = env[n];
		}
	}
	env = realloc(env, (o + b->n + 1) * sizeof(*env));
	if (!env)
		return -ENOMEM;
	run->cfg->envp = env;
	for (size_t i = 0; i < b->n; i++)
		if (asprintf(&env[o++], "CORRAL_BROKER_%s=http://127.0.0.1:%u",
			     b->cr[i].c->name, b->cr[i].port) < 0)
			return -ENOMEM;
	env[o] = NULL;
	return 0;
}

/* ---- one request ---- */

/* Is the connection's peer one of corral's own sockets (the proxy's
 * upstream end)? Any local user may connect to a loopback port; only the
 * program, through the proxy, may use the broker. */
static bool peer_is_ours(int conn)
{
	struct sockaddr_storage peer, local, a, p;
	socklen_t pl = sizeof(peer), ll = sizeof(local);
	struct dirent *e;
	bool ours = false;
	DIR *d;

	if (getpeername(conn, (struct sockaddr *)&peer, &pl) < 0 ||
	    getsockname(conn, (struct sockaddr *)&local, &ll) < 0)
		return false;
	d = opendir("/proc/self/fd");
	if (!d)
		return false;
	while (!ours && (e = readdir(d))) {
		int fd = atoi(e->d_name);
		socklen_t al = sizeof(a), ql = sizeof(p);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == conn ||
		    fd == dirfd(d))
			continue;
		if (getsockname(fd, (struct sockaddr *)&a, &al) < 0 ||
		    getpeername(fd, (struct sockaddr *)&p, &ql) < 0)
			continue;
		ours = al == pl && ql == ll && !memcmp(&a, &peer, pl) &&
		       !memcmp(&p, &local, ll);
	}
	closedir(d);
	return ours;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void reply_text(int fd, int status, const char *reason,
		       const char *text)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, reason, strlen(text) + 1);

	if (send_all(fd, head, (size_t)n) == 0 && send_all(fd, text, strlen(text)) == 0)
		send_all(fd, "\n", 1);
}

/* Every occurrence of the secret (and of its base64 form) becomes
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

		buf_add(&out, b->p + i, upto - i);
		if (!hit)
			break;
		buf_add(&out, REDACTED, rl);
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
	redact_one(b, r->b64);
}

struct req {
	char method[17];
	char *target;		/* owned */
	struct curl_slist *hdrs;	/* owned: headers passed on */
	struct buf body;
};

struct resp {
	long status;
	struct buf head;	/* kept response header lines, CRLF each */
	struct buf body;
	bool encoded;		/* a Content-Encoding that is not identity */
	struct cr_broker *b;
};

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
	};
	const char *tcolon = strchr(r->c->header, ':');

	for (size_t i = 0; i < CR_ARRAY_SIZE(drop); i++)
		if (strlen(drop[i]) == nlen && !strncasecmp(line, drop[i], nlen))
			return true;
	return (size_t)(tcolon - r->c->header) == nlen &&
	       !strncasecmp(line, r->c->header, nlen);
}

/* Dot segments and encoded separators would let the upstream's own path
 * normalisation leave the prefix the rule names. */
static const char *path_problem(const char *t)
{
	const char *q = t + strcspn(t, "?");

	if (t[0] != '/')
		return "the target is not an absolute path (origin-form)";
	if (strlen(t) > 1000)
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

static const char *rule_problem(const struct cred_rt *r, const char *method,
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

		ok = plen >= l && !strncmp(target, c->path_prefixes.v[i], l);
	}
	return ok ? NULL : "the path is outside the credential's prefixes";
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct resp *rs = arg;
	size_t len = size * n, nl;
	static const char *const drop[] = {
		"connection", "keep-alive", "transfer-encoding", "content-length",
		"proxy-connection", "trailer", "upgrade", "te",
	};

	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		/* A new status line (after a 100 Continue): start over. */
		rs->head.len = 0;
		rs->encoded = false;
		return len;
	}
	nl = strcspn(p, ":");
	if (nl >= len || len < 3)
		return len;	/* the blank line, or not a header */
	for (size_t i = 0; i < CR_ARRAY_SIZE(drop); i++)
		if (strlen(drop[i]) == nl && !strncasecmp(p, drop[i], nl))
			return len;
	if (nl == 16 && !strncasecmp(p, "content-encoding", 16)) {
		const char *v = p + nl + 1;

		while (*v == ' ')
			v++;
		if (strncasecmp(v, "identity", 8))
			rs->encoded = true;
	}
	while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		len--;
	if (buf_add(&rs->head, p, len) || buf_add(&rs->head, "\r\n", 2))
		return 0;
	return size * n;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct resp *rs = arg;

	return buf_add(&rs->body, p, size * n) ? 0 : size * n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b_, curl_off_t c,
		       curl_off_t d)
{
	struct resp *rs = arg;

	return atomic_load(&rs->b->stopping) ? 1 : 0;
}

static void record(struct cr_broker *b, const struct cred_rt *r,
		   const char *method, const char *target, long status,
		   size_t up, size_t down, const char *refused)
{
	cJSON *f = cJSON_CreateObject();
	char t[600];

	snprintf(t, sizeof(t), "%s %s %.500s", r->c->name, method,
		 target ? target : "");
	if (f) {
		cJSON_AddStringToObject(f, "credential", r->c->name);
		cJSON_AddStringToObject(f, "method", method);
		cr_json_add_bytes(f, "path", target ? target : "",
				  target ? strnlen(target, 500) : 0);
		cJSON_AddNumberToObject(f, "status", (double)status);
		cJSON_AddNumberToObject(f, "bytes_sent", (double)up);
		cJSON_AddNumberToObject(f, "bytes_received", (double)down);
		if (refused)
			cJSON_AddStringToObject(f, "refused", refused);
	}
	cr_audit_event(b->run, "broker", f);
	if (refused) {
		pthread_mutex_lock(&b->lock);
		{
			struct refusal *nr = realloc(b->ref, (b->nref + 1) * sizeof(*nr));

			if (nr && b->nref < 256) {
				b->ref = nr;
				nr[b->nref].target = strdup(t);
				nr[b->nref].reason = strdup(refused);
				b->nref++;
			} else if (nr) {
				b->ref = nr;
			}
		}
		pthread_mutex_unlock(&b->lock);
	}
}

/* Read the request head (and body) from the program. 0, or an HTTP status
 * to refuse with. */
static int read_request(int fd, struct req *q, const struct cred_rt *r,
			const char **why)
{
	char head[HEAD_MAX + 1], *end = NULL, *line, *save;
	size_t len = 0, clen = 0;
	bool has_clen = false;

	while (!end) {
		ssize_t n = recv(fd, head + len, HEAD_MAX - len, 0);

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

		if (!line[nl] || !nl || line[0] == ' ' || line[0] == '\t') {
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
		q->hdrs = cr_curl.slist_append(q->hdrs, line);
	}
	q->body.max = BODY_MAX;
	if (has_clen) {
		size_t have = len - (size_t)(end + 4 - head);

		if (have > clen)
			have = clen;
		buf_add(&q->body, end + 4, have);
		while (q->body.len < clen) {
			char tmp[16384];
			size_t want = clen - q->body.len;
			ssize_t n = recv(fd, tmp, want < sizeof(tmp) ? want : sizeof(tmp), 0);

			if (n <= 0) {
				*why = "the request body ended early";
				return 400;
			}
			buf_add(&q->body, tmp, (size_t)n);
		}
	}
	return 0;
}

static void serve(struct cr_broker *b, struct cred_rt *r, int fd)
{
	struct req q = { .method = "" };
	struct resp rs = { .b = b };
	const char *why = NULL;
	char url[1200], errbuf[CURL_ERROR_SIZE] = "";
	struct timeval tv = { .tv_sec = 10 };
	CURL *c = NULL;
	CURLcode cc;
	int st;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	st = read_request(fd, &q, r, &why);
	if (!st && (why = rule_problem(r, q.method, q.target)))
		st = 403;
	if (st) {
		char text[300];

		snprintf(text, sizeof(text), "corral broker: refused: %s", why ? why : "error");
		reply_text(fd, st, st == 403 ? "Forbidden" : "Bad Request", text);
		record(b, r, q.method[0] ? q.method : "?", q.target, st, 0, 0,
		       why ? why : "error");
		goto out;
	}
	snprintf(url, sizeof(url), "https://%s%s%s:%u%s",
		 strchr(r->c->host, ':') ? "[" : "", r->c->host,
		 strchr(r->c->host, ':') ? "]" : "", r->c->port, q.target);
	q.hdrs = cr_curl.slist_append(q.hdrs, r->header);
	q.hdrs = cr_curl.slist_append(q.hdrs, "Accept-Encoding: identity");
	q.hdrs = cr_curl.slist_append(q.hdrs, "Expect:");
	rs.head.max = HEAD_MAX * 4;
	rs.body.max = RESP_MAX;
	c = cr_curl.easy_init();
	if (!c) {
		reply_text(fd, 502, "Bad Gateway", "corral broker: no curl handle");
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
	if (r->c->ca_file)
		cr_curl.easy_setopt(c, CURLOPT_CAINFO, r->c->ca_file);
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
	else if (strcmp(q.method, "GET"))
		cr_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, q.method);
	if (q.body.len || !strcmp(q.method, "POST") || !strcmp(q.method, "PUT") ||
	    !strcmp(q.method, "PATCH")) {
		cr_curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q.body.len);
		cr_curl.easy_setopt(c, CURLOPT_POSTFIELDS, q.body.p ? q.body.p : "");
	}
	cc = cr_curl.easy_perform(c);
	if (cc != CURLE_OK || rs.encoded) {
		char text[400];
		struct buf eb = { .max = 4096 };

		/* curl's message may quote the upstream; never the secret. */
		buf_add(&eb, errbuf[0] ? errbuf : cr_curl.easy_strerror(cc),
			strlen(errbuf[0] ? errbuf : cr_curl.easy_strerror(cc)));
		redact(&eb, r);
		snprintf(text, sizeof(text), "corral broker: upstream failed: %s",
			 rs.encoded ? "a compressed answer cannot be redacted" :
			 eb.p ? eb.p : "error");
		free(eb.p);
		reply_text(fd, 502, "Bad Gateway", text);
		record(b, r, q.method, q.target, 502, q.body.len, 0, NULL);
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

		if (!send_all(fd, line, (size_t)n) &&
		    !send_all(fd, rs.head.p ? rs.head.p : "", rs.head.len) &&
		    !send_all(fd, tail, (size_t)tn))
			send_all(fd, rs.body.p ? rs.body.p : "", rs.body.len);
	}
	record(b, r, q.method, q.target, rs.status, q.body.len, rs.body.len, NULL);
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

/* ---- the thread ---- */

static void *broker_main(void *arg)
{
	struct cr_broker *b = arg;
	struct pollfd *p = calloc(b->n + 1, sizeof(*p));

	if (!p)
		return NULL;
	for (size_t i = 0; i < b->n; i++)
		p[i] = (struct pollfd){ .fd = b->cr[i].lfd, .events = POLLIN };
	p[b->n] = (struct pollfd){ .fd = b->stop[0], .events = POLLIN };
	while (!atomic_load(&b->stopping)) {
		if (poll(p, b->n + 1, -1) < 0 && errno != EINTR)
			break;
		if (p[b->n].revents)
			break;
		for (size_t i = 0; i < b->n && !atomic_load(&b->stopping); i++) {
			int fd;

			if (!(p[i].revents & POLLIN))
				continue;
			fd = accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			if (!peer_is_ours(fd)) {
				/* A stranger on loopback: closed unserved. */
				record(b, &b->cr[i], "?", NULL, 0, 0, 0,
				       "a connection from outside the run");
				close(fd);
				continue;
			}
			pthread_mutex_lock(&b->lock);
			b->conn = fd;
			pthread_mutex_unlock(&b->lock);
			serve(b, &b->cr[i], fd);
			pthread_mutex_lock(&b->lock);
			b->conn = -1;
			pthread_mutex_unlock(&b->lock);
			close(fd);
		}
	}
	free(p);
	return NULL;
}

int cr_broker_start(struct cr_run *run)
{
	struct cr_broker *b = run->broker;
	int rc;

	if (!b)
		return 0;
	rc = pthread_create(&b->thr, NULL, broker_main, b);
	if (rc)
		return -rc;
	b->started = true;
	return 0;
}

void cr_broker_finish(struct cr_run *run)
{
	struct cr_broker *b = run->broker;

	if (!b)
		return;
	atomic_store(&b->stopping, true);
	if (b->stop[1] >= 0 && write(b->stop[1], "x", 1) < 0)
		fprintf(stderr, "corral: broker: cannot signal its thread\n");
	pthread_mutex_lock(&b->lock);
	if (b->conn >= 0)
		shutdown(b->conn, SHUT_RDWR);
	pthread_mutex_unlock(&b->lock);
	if (b->started)
		pthread_join(b->thr, NULL);
	b->started = false;
	/* Gone before the cleanup ends: nothing the program kept reaches
	 * it, and the secrets leave corral's memory. */
	for (size_t i = 0; i < b->n; i++) {
		struct cred_rt *r = &b->cr[i];

		if (r->lfd >= 0)
			close(r->lfd);
		r->lfd = -1;
		if (r->secret)
			explicit_bzero(r->secret, strlen(r->secret));
		if (r->b64)
			explicit_bzero(r->b64, strlen(r->b64));
		if (r->header)
			explicit_bzero(r->header, strlen(r->header));
		free(r->secret);
		free(r->b64);
		free(r->header);
		r->secret = r->b64 = r->header = NULL;
	}
	for (size_t i = 0; i < b->nref; i++) {
		cr_deny(run, 0, "broker", b->ref[i].target, "net",
			b->ref[i].reason ? b->ref[i].reason : "refused");
		free(b->ref[i].target);
		free(b->ref[i].reason);
	}
	free(b->ref);
	for (int i = 0; i < 2; i++)
		if (b->stop[i] >= 0)
			close(b->stop[i]);
	pthread_mutex_destroy(&b->lock);
	free(b->cr);
	free(b);
	run->broker = NULL;
}
