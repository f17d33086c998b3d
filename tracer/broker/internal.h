/* tracer/broker/internal.h: what the broker's three files share: the
 * credentials at run time, the broker's state, buffers and a request. */
#ifndef CORRAL_BROKER_INTERNAL_H
#define CORRAL_BROKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "curlapi.h"

struct cr_run;
struct cr_credential;

#define HEAD_MAX (16 * 1024)		/* request line and headers */
#define TARGET_MAX 1000			/* the request target */
#define BODY_MAX (1024 * 1024)		/* request body */
#define RESP_MAX (16 * 1024 * 1024)	/* response body, buffered to redact */
#define SECRET_MAX 4096
#define REDACTED "[REDACTED]"
/* The secret inside a larger base64 text (its three alignments, two
 * alphabets) is redacted only for secrets at least this long: a shorter
 * one's shifted forms (about 4n/3 - 2 characters) would match unrelated
 * base64 too often. */
#define B64_SHIFT_MIN 12
#define B64_FORMS 7		/* its own base64, then 3 alignments x 2 */
/* Connections the proxy made to the broker not yet accepted (the
 * listeners' backlog is 64); each may hold a socket (broker.c). */
#define EXPECT_MAX 256

struct cred_rt {
	const struct cr_credential *c;	/* borrowed from the policy */
	char *secret;			/* owned, wiped at the end */
	char *b64[B64_FORMS];		/* owned, or NULL: base64 forms of it,
					 * redacted too (broker.c) */
	char *header;			/* owned: the template filled in */
	char *ca_pem;			/* owned: ca_file's bytes, read once at
					 * set-up (a path curl opened per
					 * request could be re-pointed) */
	size_t ca_len;
	int lfd;
	uint16_t port;
};

struct refusal {
	char *target;
	char *reason;
	uint64_t count;
};

/* A connection the proxy made to the broker: the local address it bound,
 * the broker port it went to, and its socket once the proxy is done with
 * it (kept until accepted, so that no one else can bind the address). */
struct expect {
	uint32_t addr;			/* network order */
	uint16_t port;			/* network order */
	uint16_t dport;			/* network order */
	int fd;				/* -1 while the proxy holds it */
};

struct cr_broker {
	struct cr_run *run;
	struct cred_rt *cr;
	size_t n;
	int stop[2];
	pthread_t thr;
	bool started;
	atomic_bool stopping;
	pthread_mutex_t lock;		/* refusals, conn, expected peers */
	int conn;			/* the connection being served, -1 */
	struct refusal *ref;		/* one per target and reason, counted */
	size_t nref;
	uint64_t ref_dropped;		/* refusals past CR_MAX_DENIALS targets */
	struct expect *expect;		/* owned, EXPECT_MAX */
	size_t nexpect;
	uint64_t strangers;		/* connections from outside the run */
	/* The bytes the broker moved to and from origins, not yet charged
	 * to net-bytes (the loop takes them at each tick: broker.c
	 * cr_broker_settle), and the run's net-bytes usage as the loop last
	 * charged it: a transfer stops once their sum passes the budget. */
	_Atomic uint64_t up_pending;
	_Atomic uint64_t usage_seen;
};

/* relay.c: n bytes moved with an origin; false once the net-bytes budget
 * is spent (the transfer then stops). */
bool cr_broker_count(struct cr_broker *b, uint64_t n);

struct buf {
	char *p;
	size_t len, cap, max;
	bool over;
};

struct req {
	char method[17];
	char *target;		/* owned */
	struct curl_slist *hdrs;	/* owned: headers passed on */
	struct buf body;
};

/* Append n bytes (kept NUL-terminated); -1 past b->max (b->over set) or
 * without memory. */
int cr_broker_buf_add(struct buf *b, const void *d, size_t n);
/* Append a header line to a curl list; -1 without memory (the list is
 * then unchanged, never lost). */
int cr_broker_hdr_add(struct curl_slist **l, const char *line);

/* request.c: read the request head and body from the program (0, or the
 * HTTP status to refuse with, *why saying why; ABORTED when the program
 * closed or reset the connection before a byte), and judge it against the
 * credential's rules (NULL, or why not). */
#define ABORTED (-1)
int cr_broker_read_request(int fd, struct req *q, const struct cred_rt *r,
			   const char **why);
const char *cr_broker_rule_problem(const struct cred_rt *r, const char *method,
				   const char *target);

/* relay.c: serve one connection of the program: read, judge, ask the
 * upstream with the secret, answer redacted, record. */
void cr_broker_serve(struct cr_broker *b, struct cred_rt *r, int fd);

/* broker.c: one audit event per request; refusals are kept for the
 * result's denials. */
void cr_broker_record(struct cr_broker *b, const struct cred_rt *r,
		      const char *method, const char *target, long status,
		      size_t up, size_t down, const char *refused);
/* A connection of the program's that ended before a request: recorded in
 * the audit as what it is, not as a refusal. */
void cr_broker_record_aborted(struct cr_broker *b, const struct cred_rt *r,
			      const char *what);

#endif
