/* tracer/broker/broker.c: the capability broker's life: the credentials read
 * and listened for, the serving thread, its audit records, its end. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "../fs/fs.h"
#include "../net/net.h"
#include "broker.h"
#include "curlapi.h"
#include "internal.h"

int cr_broker_buf_add(struct buf *b, const void *d, size_t n)
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

int cr_broker_hdr_add(struct curl_slist **l, const char *line)
{
	struct curl_slist *n = cr_curl.slist_append(*l, line);

	if (!n)
		return -1;
	*l = n;
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

/* A file the broker trusts must be out of the program's reach: a secret
 * file it could read is the secret handed over, a CA file it could write
 * lets it stand in for the upstream (and be sent the secret). Judged on
 * the real path by the run's rules; another name (a hard link) could sit
 * in a root, so the file must have one. */
static const char *file_in_reach(const struct cr_run *run, const char *file,
				 unsigned acc)
{
	char real[PATH_MAX];
	struct stat st;

	if (!realpath(file, real) || stat(real, &st) < 0)
		return "cannot be resolved";
	/* The path as configured too, each of its directories: a link on
	 * it inside a writable root could be re-pointed later. */
	for (size_t i = 1, n = strlen(file); i <= n; i++)
		if ((file[i] == '/' || !file[i]) &&
		    (cr_fsrules_access(&run->fs->rules, file, i) & CR_FS_W))
			return "lies on a path the run may change";
	if (cr_fsrules_access(&run->fs->rules, real, strlen(real)) & acc)
		return acc & CR_FS_W ? "is writable by the run" :
				       "is readable by the run";
	if (st.st_nlink > 1)
		return "has other names (hard links), which a root could hold";
	return NULL;
}

int cr_broker_check_files(struct cr_run *run)
{
	const struct cr_class *cls = run->cfg->cls;

	for (size_t i = 0; i < cls->ncredentials; i++) {
		const struct cr_credential *c = &cls->credentials[i];
		const char *why;

		if (c->secret_file &&
		    (why = file_in_reach(run, c->secret_file, CR_FS_R))) {
			cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
				   "credential %s: the secret file %s %s: keep it outside every root of the class",
				   c->name, c->secret_file, why);
			return -EPERM;
		}
		if (c->ca_file && (why = file_in_reach(run, c->ca_file, CR_FS_W))) {
			cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
				   "credential %s: the CA file %s %s: keep it outside every writable root",
				   c->name, c->ca_file, why);
			return -EPERM;
		}
		/* Read now, before the program exists, and handed to curl
		 * as bytes: a link on its path that the run could re-point
		 * (it sat in the workspace in the case that showed it) no
		 * longer chooses whom the broker trusts. */
		if (c->ca_file && run->broker && i < run->broker->n) {
			struct cred_rt *r = &run->broker->cr[i];
			int rc = cr_read_file(c->ca_file, 1 << 20, &r->ca_pem,
					      &r->ca_len);

			if (rc) {
				cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
					   "credential %s: cannot read the CA file %s: %s",
					   c->name, c->ca_file, strerror(-rc));
				return rc;
			}
		}
	}
	return 0;
}

/* The base64 forms of the secret the redaction removes: its own encoding
 * (padded), and for a secret of B64_SHIFT_MIN bytes or more, the
 * characters the secret alone decides when it starts at byte offset 0, 1
 * or 2 of a larger encoded text (the base64 of a whole request head, of
 * "Bearer <secret>"), in the standard and the URL-safe alphabet. The
 * characters also made of neighbouring bytes are left out: at most 4 bits
 * of the secret at each end stay in the answer. */
static int b64_forms(struct cred_rt *r)
{
	size_t n = strlen(r->secret), cap = 4 * ((n + 4 + 2) / 3) + 1;
	unsigned char *in = calloc(1, n + 4);
	char *enc = malloc(cap);
	int rc = 0;

	if (!in || !enc) {
		rc = -ENOMEM;
		goto out;
	}
	if (!(r->b64[0] = malloc(cap)) || cr_base64(r->secret, n, r->b64[0], cap)) {
		rc = -EIO;
		goto out;
	}
	for (size_t k = 0; n >= B64_SHIFT_MIN && k < 3; k++) {
		/* Bits [8k, 8k + 8n) are the secret's; character j holds
		 * bits [6j, 6j + 6). */
		size_t from = (8 * k + 5) / 6, to = (8 * k + 8 * n) / 6;
		char *std, *url;

		memset(in, 0, n + 4);
		memcpy(in + k, r->secret, n);
		if (cr_base64(in, k + n + 2, enc, cap)) {
			rc = -EIO;
			goto out;
		}
		std = strndup(enc + from, to - from);
		url = strndup(enc + from, to - from);
		r->b64[1 + 2 * k] = std;
		r->b64[2 + 2 * k] = url;
		if (!std || !url) {
			rc = -ENOMEM;
			goto out;
		}
		for (char *c = url; *c; c++)
			*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
	}
out:
	if (in)
		explicit_bzero(in, n + 4);
	if (enc)
		explicit_bzero(enc, cap);
	free(in);
	free(enc);
	return rc;
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

		r->c = &cls->credentials[i];
		r->lfd = -1;
		rc = read_secret(r->c, &r->secret, err, errlen);
		if (rc)
			return rc;
		if ((rc = b64_forms(r))) {
			cr_errf(err, errlen, "credential %s: cannot encode the secret in base64",
				r->c->name);
			return rc;
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
		if ((rc = cr_strlist_push(&run->cfg->allow_net, dest)))
			return rc;
	}
	return 0;
}

int cr_broker_env(struct cr_run *run)
{
	struct cr_broker *b = run->broker;
	char **env = run->cfg->envp, **grown;
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
	/* Kept a valid list at every step: whoever frees it on an error
	 * frees what is in it, once. */
	env[o] = NULL;
	grown = realloc(env, (o + b->n + 1) * sizeof(*env));
	if (!grown)
		return -ENOMEM;
	env = run->cfg->envp = grown;
	for (size_t i = 0; i < b->n; i++) {
		if (asprintf(&env[o], "CORRAL_BROKER_%s=http://127.0.0.1:%u",
			     b->cr[i].c->name, b->cr[i].port) < 0) {
			env[o] = NULL;
			return -ENOMEM;
		}
		env[++o] = NULL;
	}
	return 0;
}

/* ---- serving ---- */

/* The IPv4 address and port of a loopback address (IPv4, or IPv4-mapped
 * IPv6), in network order; false for anything else. */
static bool v4_of(const struct sockaddr *a, socklen_t len, uint32_t *addr,
		  uint16_t *port)
{
	if (a->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)a;

		*addr = in->sin_addr.s_addr;
		*port = in->sin_port;
		return true;
	}
	if (a->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)a;

		if (!IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			return false;
		memcpy(addr, &in6->sin6_addr.s6_addr[12], 4);
		*port = in6->sin6_port;
		return true;
	}
	return false;
}

bool cr_broker_is_dest(const struct cr_run *run, const struct sockaddr *dest,
		       socklen_t destlen)
{
	const struct cr_broker *b = run->broker;
	uint32_t addr;
	uint16_t dport;

	if (!b || !v4_of(dest, destlen, &addr, &dport) ||
	    addr != htonl(INADDR_LOOPBACK))
		return false;
	for (size_t i = 0; i < b->n; i++)
		if (htons(b->cr[i].port) == dport)
			return true;
	return false;
}

int cr_broker_expect(struct cr_run *run, int fd, const struct sockaddr *dest,
		     socklen_t destlen)
{
	struct cr_broker *b = run->broker;
	struct sockaddr_storage me;
	socklen_t ml = sizeof(me);
	uint32_t addr;
	uint16_t port, dport;
	int rc = 0;

	if (!cr_broker_is_dest(run, dest, destlen) ||
	    !v4_of(dest, destlen, &addr, &dport))
		return 0;
	/* Bound before the connect, so the broker can never accept it
	 * before it is registered. */
	if (dest->sa_family == AF_INET) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = addr };

		rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	} else {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6 };

		a.sin6_addr.s6_addr[10] = a.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&a.sin6_addr.s6_addr[12], &addr, 4);
		rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	}
	if (rc < 0 || getsockname(fd, (struct sockaddr *)&me, &ml) < 0)
		return -errno;
	if (!v4_of((struct sockaddr *)&me, ml, &addr, &port))
		return -EAFNOSUPPORT;
	pthread_mutex_lock(&b->lock);
	if (!b->expect && !(b->expect = calloc(EXPECT_MAX, sizeof(*b->expect))))
		rc = -ENOMEM;
	else if (b->nexpect == EXPECT_MAX)
		rc = -EAGAIN;	/* refused: the connection is not made */
	else
		b->expect[b->nexpect++] = (struct expect){ addr, port, dport, -1 };
	pthread_mutex_unlock(&b->lock);
	return rc;
}

/* Take the registration naming this peer on this broker port, if there
 * is one (lock held). */
static bool take_expected_locked(struct cr_broker *b, uint32_t addr,
				 uint16_t port, uint16_t dport)
{
	for (size_t i = 0; i < b->nexpect; i++)
		if (b->expect[i].addr == addr && b->expect[i].port == port &&
		    b->expect[i].dport == dport) {
			if (b->expect[i].fd >= 0)
				close(b->expect[i].fd);
			b->expect[i] = b->expect[--b->nexpect];
			return true;
		}
	return false;
}

static bool take_expected(struct cr_broker *b, uint32_t addr, uint16_t port,
			  uint16_t dport)
{
	bool found;

	pthread_mutex_lock(&b->lock);
	found = take_expected_locked(b, addr, port, dport);
	pthread_mutex_unlock(&b->lock);
	return found;
}

bool cr_broker_forget(struct cr_run *run, int fd)
{
	struct cr_broker *b = run->broker;
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	bool connected, kept = false;
	uint32_t addr;
	uint16_t port;

	if (!b || getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    !v4_of((struct sockaddr *)&me, ml, &addr, &port) ||
	    addr != htonl(INADDR_LOOPBACK))
		return false;
	connected = getpeername(fd, (struct sockaddr *)&peer, &pl) == 0;
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < b->nexpect; i++) {
		struct expect *e = &b->expect[i];

		if (e->addr != addr || e->port != port || e->fd >= 0)
			continue;
		if (connected) {
			/* Its connection waits in the broker's queue: the
			 * broker ends it once accepted, and until then the
			 * address stays bound, so no one else can come
			 * from it. */
			shutdown(fd, SHUT_RDWR);
			e->fd = fd;
			kept = true;
		} else {
			/* Never reached the broker: the registration goes
			 * with the socket. */
			*e = b->expect[--b->nexpect];
		}
		break;
	}
	pthread_mutex_unlock(&b->lock);
	return kept;
}

/* The refusal of a connection from outside the run: one text, so that
 * its audit lines can be told by address and capped. */
static const char broker_stranger[] = "a connection from outside the run";
#define CR_BROKER_STRANGERS_AUDITED 100

void cr_broker_record(struct cr_broker *b, const struct cred_rt *r,
		   const char *method, const char *target, long status,
		   size_t up, size_t down, const char *refused)
{
	cJSON *f = cJSON_CreateObject();
	char t[600];

	snprintf(t, sizeof(t), "%s %s %.500s", r->c->name, method,
		 target ? target : "");
	if (f) {
		cJSON_AddStringToObject(f, "credential", r->c->name);
		cr_json_add_bytes(f, "method", method, strnlen(method, 64));
		cr_json_add_bytes(f, "path", target ? target : "",
				  target ? strnlen(target, 500) : 0);
		cJSON_AddNumberToObject(f, "status", (double)status);
		cJSON_AddNumberToObject(f, "bytes_sent", (double)up);
		cJSON_AddNumberToObject(f, "bytes_received", (double)down);
		if (refused)
			cJSON_AddStringToObject(f, "refused", refused);
	}
	/* A stranger's connection is in the trail up to a point: any local
	 * user can connect to the port as often as it likes, and each line
	 * was ~300 bytes of the operator's disk (2.8 MB in 3 s, found by a
	 * probing session). The refusal is counted all the same. */
	if (refused == broker_stranger &&
	    ++b->strangers > CR_BROKER_STRANGERS_AUDITED)
		cJSON_Delete(f);
	else
		cr_audit_event(b->run, "broker", f);
	if (refused) {
		/* Counted per target and reason, as the run's denials are
		 * (they are replayed into them at the end): past the table's
		 * size, counted as dropped, never lost. */
		size_t k;

		pthread_mutex_lock(&b->lock);
		for (k = 0; k < b->nref; k++)
			if (!strcmp(b->ref[k].target, t) &&
			    !strcmp(b->ref[k].reason, refused))
				break;
		if (k < b->nref) {
			b->ref[k].count++;
		} else if (b->nref < CR_MAX_DENIALS &&
			   (b->ref || (b->ref = calloc(CR_MAX_DENIALS, sizeof(*b->ref)))) &&
			   (b->ref[k].target = strdup(t)) &&
			   (b->ref[k].reason = strdup(refused))) {
			b->ref[k].count = 1;
			b->nref++;
		} else {
			if (b->ref && k < CR_MAX_DENIALS) {
				free(b->ref[k].target);
				b->ref[k].target = NULL;
			}
			b->ref_dropped++;
		}
		pthread_mutex_unlock(&b->lock);
	}
}

void cr_broker_record_aborted(struct cr_broker *b, const struct cred_rt *r,
			      const char *what)
{
	cJSON *f = cJSON_CreateObject();

	if (f) {
		cJSON_AddStringToObject(f, "credential", r->c->name);
		cJSON_AddStringToObject(f, "method", "?");
		cJSON_AddStringToObject(f, "path", "");
		cJSON_AddNumberToObject(f, "status", 0);
		cJSON_AddNumberToObject(f, "bytes_sent", 0);
		cJSON_AddNumberToObject(f, "bytes_received", 0);
		cJSON_AddStringToObject(f, "aborted", what);
	}
	cr_audit_event(b->run, "broker", f);
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
			struct sockaddr_storage peer;
			socklen_t pl;
			uint32_t paddr;
			uint16_t pport;
			int fd;

			if (!(p[i].revents & POLLIN))
				continue;
			pl = sizeof(peer);
			fd = accept4(p[i].fd, (struct sockaddr *)&peer, &pl,
				     SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			/* Any local user may connect to a loopback port;
			 * only what the proxy registered for the program
			 * is served, whether or not the program's end is
			 * still open. */
			if (!v4_of((struct sockaddr *)&peer, pl, &paddr, &pport) ||
			    !take_expected(b, paddr, pport, htons(b->cr[i].port))) {
				/* A stranger on loopback: closed unserved. */
				cr_broker_record(b, &b->cr[i], "?", NULL, 0, 0, 0,
						 broker_stranger);
				close(fd);
				continue;
			}
			pthread_mutex_lock(&b->lock);
			b->conn = fd;
			pthread_mutex_unlock(&b->lock);
			cr_broker_serve(b, &b->cr[i], fd);
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

void cr_broker_settle(struct cr_run *run)
{
	struct cr_broker *b = run->broker;
	uint64_t n;

	if (!b || !(n = atomic_exchange(&b->up_pending, 0)))
		return;
	cr_net_charge(run, n);
	atomic_store(&b->usage_seen, run->usage.net_bytes);
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
	cr_broker_settle(run);	/* its last transfer's bytes, in the usage */
	/* Gone before the cleanup ends: nothing the program kept reaches
	 * it, and the secrets leave corral's memory. */
	for (size_t i = 0; i < b->n; i++) {
		struct cred_rt *r = &b->cr[i];

		if (r->lfd >= 0)
			close(r->lfd);
		r->lfd = -1;
		if (r->secret)
			explicit_bzero(r->secret, strlen(r->secret));
		for (size_t k = 0; k < B64_FORMS; k++) {
			if (r->b64[k])
				explicit_bzero(r->b64[k], strlen(r->b64[k]));
			free(r->b64[k]);
			r->b64[k] = NULL;
		}
		if (r->header)
			explicit_bzero(r->header, strlen(r->header));
		free(r->secret);
		free(r->ca_pem);
		r->ca_pem = NULL;
		free(r->header);
		r->secret = r->header = NULL;
	}
	for (size_t i = 0; i < b->nref; i++) {
		for (uint64_t k = 0; k < b->ref[i].count; k++)
			cr_deny(run, 0, "broker", b->ref[i].target, "net",
				b->ref[i].reason);
		free(b->ref[i].target);
		free(b->ref[i].reason);
	}
	/* As cr_deny counts what its table cannot hold. */
	run->denied_calls += b->ref_dropped;
	run->denials_dropped += b->ref_dropped;
	free(b->ref);
	for (size_t i = 0; i < b->nexpect; i++)
		if (b->expect[i].fd >= 0)
			close(b->expect[i].fd);
	free(b->expect);
	for (int i = 0; i < 2; i++)
		if (b->stop[i] >= 0)
			close(b->stop[i]);
	pthread_mutex_destroy(&b->lock);
	free(b->cr);
	free(b);
	run->broker = NULL;
}
