/* tracer/audit.c: the audit trail: one JSON line per event, chained by
 * sequence number and the SHA-256 of the line before; decisions, never contents. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cJSON.h>

#include "corral/digest.h"
#include "tracer.h"

/* Bounded: past this many deny events a run's further denials are only
 * counted, and the cleanup event carries the count; but the latest
 * CR_AUDIT_TAIL of them are kept and written at the end (marked "late"),
 * so a flood of cheap denials cannot hide what came after it. */
#define CR_AUDIT_MAX_DENIES 900
#define CR_AUDIT_TAIL 100

/* The prev of a chain's first event. */
static const char genesis[] =
	"0000000000000000000000000000000000000000000000000000000000000000";

/* The directory the trail goes in, opened first and named by the kernel
 * (/proc/self/fd), so the check below judges what is opened, not a path
 * that could change between the two. */
static int open_dir(const char *path, int *dirfd, char **real,
		    const char **base, char *why, size_t whylen)
{
	cr_autofree char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL, link[64];
	char buf[PATH_MAX];
	ssize_t n;

	if (!dir)
		return -ENOMEM;
	*base = slash ? path + (slash - dir) + 1 : path;
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, ".."))
		return -EISDIR;
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	n = cr_oppath_open(slash ? dir : ".", dirfd, why, whylen);
	if (n < 0)
		return (int)n;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", *dirfd);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/')
		return n < 0 ? -errno : -ENOENT;
	buf[n] = 0;
	if (asprintf(real, "%s/%s", strcmp(buf, "/") ? buf : "", *base) < 0) {
		*real = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * One live run per task id in a trail. A request may name its id, and a
 * second live run of one id interleaved its chain with the first's, which
 * verify then reported broken from there on, for every later run in the
 * file (found by a probing session). The id is claimed with an OFD lock
 * on one byte far past any trail's end, at an offset from the id's hash,
 * held while the trail is open (the run's life). 0, or -EBUSY when a live
 * run holds it; a filesystem without such locks claims nothing (the trail
 * still works, as before).
 */
static int claim_id(int fd, const char *id)
{
	uint64_t h = 14695981039346656037ull;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_len = 1 };

	for (const char *c = id; *c; c++) {
		h ^= (unsigned char)*c;
		h *= 1099511628211ull;
	}
	fl.l_start = (off_t)((1ull << 61) + (h & ((1ull << 48) - 1)));
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	return errno == EAGAIN || errno == EACCES ? -EBUSY : 0;
}

int cr_audit_open(struct cr_run *run, const char *ws, char *err,
		  size_t errlen)
{
	const char *path = run->cfg->audit_file, *base = NULL;
	cr_autofree char *real = NULL;
	char which[PATH_MAX + 128];
	struct stat st = { 0 };
	int rc, dirfd = -1;

	run->audit_fd = -1;
	memcpy(run->audit_head, genesis, sizeof(genesis));
	if (!path)
		return 0;
	char why[PATH_MAX + 256] = "";

	rc = open_dir(path, &dirfd, &real, &base, why, sizeof(why));
	if (rc) {
		cr_errf(err, errlen, "cannot open the audit file %s: %s", path,
			rc == -EPERM && why[0] ? why : strerror(-rc));
		if (dirfd >= 0)
			close(dirfd);
		return rc;
	}
	/* A trail the program could write is no trail: it would rewrite the
	 * start and deny records as it pleased. Refused before it exists. */
	if (cr_audit_path_writable(run->cfg, ws, real, which, sizeof(which))) {
		cr_errf(err, errlen, "--audit %s: %s: it could rewrite the record",
			path, which);
		close(dirfd);
		return -EPERM;
	}
	/* O_APPEND: concurrent runs sharing one trail never interleave
	 * inside a line, because each event is a single write. No O_EXCL:
	 * a trail is shared by runs on purpose (each run is its own chain).
	 * O_NOFOLLOW: a link at the name is refused, never followed;
	 * O_NONBLOCK: a FIFO planted there cannot hold the open. */
	run->audit_fd = openat(dirfd, base, O_WRONLY | O_APPEND | O_CREAT |
			       O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
			       0600);
	rc = -errno;
	close(dirfd);
	if (run->audit_fd < 0) {
		cr_errf(err, errlen, "cannot open the audit file %s: %s", path,
			strerror(-rc));
		return rc;
	}
	/* A FIFO or device is not a trail; a file with a second name may
	 * have that name inside a writable root, where the program would
	 * reach the same inode. */
	if (fstat(run->audit_fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_nlink != 1) {
		cr_errf(err, errlen, "--audit %s: %s", path,
			!S_ISREG(st.st_mode) ? "not a regular file" :
			"the file has other names (hard links), which a writable root could hold");
		close(run->audit_fd);
		run->audit_fd = -1;
		return -EPERM;
	}
	/* --json's record on the trail itself (`--json >> trail`): a line
	 * past the chain, and `corral audit verify` then failed (found by a
	 * probing session); --result naming it is refused the same way. */
	{
		struct stat out;

		if (run->cfg->json && fstat(STDOUT_FILENO, &out) == 0 &&
		    out.st_dev == st.st_dev && out.st_ino == st.st_ino) {
			cr_errf(err, errlen, "--audit %s: --json writes the record to the same file (stdout)",
				path);
			close(run->audit_fd);
			run->audit_fd = -1;
			return -EINVAL;
		}
	}
	fcntl(run->audit_fd, F_SETFL, O_APPEND);
	if (claim_id(run->audit_fd, run->cfg->task_id)) {
		cr_errf(err, errlen, "--audit %s: a live run already writes task id %s to this trail",
			path, run->cfg->task_id);
		close(run->audit_fd);
		run->audit_fd = -1;
		return -EBUSY;
	}
	return 0;
}

static void timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* Takes ownership of fields (a cJSON object, may be NULL). */
static pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;

/* Events come from the loop and from the broker's thread: one at a time,
 * so seq and prev stay a chain. */
static void emit_locked(struct cr_run *run, const char *event, cJSON *f,
			bool final);

static void emit(struct cr_run *run, const char *event, cJSON *f, bool final)
{
	pthread_mutex_lock(&audit_lock);
	emit_locked(run, event, f, final);
	pthread_mutex_unlock(&audit_lock);
}

static void emit_locked(struct cr_run *run, const char *event, cJSON *f,
			bool final)
{
	cJSON *o;
	char ts[64], *text;
	size_t len;
	ssize_t w;

	timestamp(ts, sizeof(ts));
	/* The common keys go first, for readers that grep; the chain's
	 * keys next, so a verifier needs no more than the line's bytes. */
	o = cJSON_CreateObject();
	if (!o) {
		cJSON_Delete(f);
		return;
	}
	cJSON_AddStringToObject(o, "ts", ts);
	cJSON_AddStringToObject(o, "task_id", run->cfg->task_id);
	cJSON_AddStringToObject(o, "event", event);
	cJSON_AddNumberToObject(o, "seq", (double)run->audit_seq);
	cJSON_AddStringToObject(o, "prev", run->audit_head);
	while (f && f->child) {
		cJSON *item = cJSON_DetachItemViaPointer(f, f->child);
		const char *k = item->string;

		item->string = NULL;
		cJSON_AddItemToObject(o, k, item);
		free((void *)k);
	}
	cJSON_Delete(f);
	if (final)
		cJSON_AddBoolToObject(o, "final", true);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return;
	len = strlen(text);
	/* The line's hash is taken before its newline: the verifier splits
	 * on newlines and hashes what is between. */
	if (cr_sha256_hex(text, len, run->audit_head))
		fprintf(stderr, "corral: audit: cannot hash an event\n");
	text[len] = '\n';	/* replaces the NUL: one write per line */
	w = write(run->audit_fd, text, len + 1);
	if (w < 0)
		fprintf(stderr, "corral: audit write failed: %s\n", strerror(errno));
	else if ((size_t)w != len + 1)
		fprintf(stderr, "corral: audit write was short (%zd of %zu bytes)\n",
			w, len + 1);
	run->audit_seq++;
	free(text);
}

/* The events kept until start, in their order, after it. */
static void emit_early(struct cr_run *run)
{
	for (size_t i = 0; i < run->naudit_early; i++) {
		cr_audit_event(run, run->audit_early_ev[i],
			       run->audit_early[i]);
		run->audit_early[i] = NULL;
	}
	run->naudit_early = 0;
}

void cr_audit_event(struct cr_run *run, const char *event, void *fields)
{
	if (run->audit_fd < 0) {
		cJSON_Delete(fields);
		return;
	}
	/* The trail begins with start: a run refused while its inputs were
	 * placed had its deny and exit, and no start (the command, the
	 * policy's digest; found by a probing session). Events before it
	 * wait for it (a handful: set-up is the supervisor's alone). */
	if (!run->audit_started) {
		if (!strcmp(event, "start")) {
			run->audit_started = true;
			emit(run, event, fields, false);
			emit_early(run);
			return;
		}
		if (run->naudit_early < CR_AUDIT_EARLY) {
			run->audit_early_ev[run->naudit_early] = event;
			run->audit_early[run->naudit_early++] = fields;
			return;
		}
	}
	if (!strcmp(event, "deny") && ++run->audit_denies > CR_AUDIT_MAX_DENIES) {
		pthread_mutex_lock(&audit_lock);
		if (!run->audit_tail)
			run->audit_tail = calloc(CR_AUDIT_TAIL,
						 sizeof(*run->audit_tail));
		if (run->audit_tail && fields) {
			void **slot = &run->audit_tail[run->audit_tail_next];

			cJSON_Delete(*slot);
			*slot = fields;
			run->audit_tail_next = (run->audit_tail_next + 1) %
					       CR_AUDIT_TAIL;
		} else {
			cJSON_Delete(fields);
		}
		pthread_mutex_unlock(&audit_lock);
		return;
	}
	emit(run, event, fields, false);
}

/* The deny events kept past the head, oldest first, each with its own
 * "ms"; their count. */
static uint64_t emit_tail(struct cr_run *run)
{
	uint64_t n = 0;

	pthread_mutex_lock(&audit_lock);
	for (size_t k = 0; run->audit_tail && k < CR_AUDIT_TAIL; k++) {
		size_t i = (run->audit_tail_next + k) % CR_AUDIT_TAIL;
		cJSON *f = run->audit_tail[i];

		if (!f)
			continue;
		run->audit_tail[i] = NULL;
		cJSON_AddBoolToObject(f, "late", true);
		emit_locked(run, "deny", f, false);
		n++;
	}
	pthread_mutex_unlock(&audit_lock);
	return n;
}

static void free_tail(struct cr_run *run)
{
	for (size_t i = 0; run->audit_tail && i < CR_AUDIT_TAIL; i++)
		cJSON_Delete(run->audit_tail[i]);
	free(run->audit_tail);
	run->audit_tail = NULL;
}

void cr_audit_finish(struct cr_run *run)
{
	uint64_t late;
	cJSON *f;

	if (run->audit_fd < 0)
		return;
	if (!run->audit_started) {	/* ended before it began: as they came */
		run->audit_started = true;
		emit_early(run);
	}
	late = emit_tail(run);
	f = cJSON_CreateObject();
	if (f) {
		cJSON_AddStringToObject(f, "status", cr_status_name(run->status));
		if (run->limit)
			cJSON_AddStringToObject(f, "limit", run->limit);
		else
			cJSON_AddNullToObject(f, "limit");
		/* The program's end as the result gives it, and corral's own
		 * exit status beside it: an earlier build wrote corral's as
		 * exit_code, so a death by SIGSEGV and an exit(139) read
		 * alike, and a limit's 124 looked like the program's (found
		 * by a probing session). */
		cr_result_add_end(run, run->exit_code, f);
		cJSON_AddNumberToObject(f, "corral_exit", run->exit_code);
		cJSON_AddNumberToObject(f, "wall_ms", (double)run->end_ms);
		cJSON_AddNumberToObject(f, "denials",
					(double)run->denied_calls);
	}
	cr_audit_event(run, "exit", f);
	f = cJSON_CreateObject();
	if (f) {
		cJSON_AddNumberToObject(f, "killed", (double)run->killed);
		cJSON_AddNumberToObject(f, "leftover_processes",
					(double)run->leftover);
		cJSON_AddBoolToObject(f, "workspace_removed",
				      run->workspace_removed);
		cJSON_AddNumberToObject(f, "audit_denies_dropped",
					run->audit_denies > CR_AUDIT_MAX_DENIES + late ?
					(double)(run->audit_denies -
						 CR_AUDIT_MAX_DENIES - late) : 0);
	}
	/* The last line of the run's chain: its hash is the head the result
	 * carries, so a trail cut after any earlier line is told apart. */
	emit(run, "cleanup", f, true);
}

void cr_audit_result(const struct cr_run *run, void *result)
{
	cJSON *a;

	if (run->audit_fd < 0 || !run->audit_seq) {
		cJSON_AddNullToObject(result, "audit");
		return;
	}
	a = cJSON_AddObjectToObject(result, "audit");
	if (!a)
		return;
	cJSON_AddNumberToObject(a, "events", (double)run->audit_seq);
	cJSON_AddStringToObject(a, "head", run->audit_head);
}

void cr_audit_close(struct cr_run *run)
{
	free_tail(run);
	if (run->audit_fd >= 0)
		close(run->audit_fd);
	run->audit_fd = -1;
}
