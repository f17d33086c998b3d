/* tracer/result.c: turns the ended run into the contract's result object and
 * exit status; escapes non-UTF-8 output instead of dropping it. */
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cJSON.h>

#include "tracer.h"
#include "io/io.h"

static const char *const status_names[CR_ST__COUNT] = {
	[CR_ST_OK] = "ok",
	[CR_ST_PROGRAM_ERROR] = "program_error",
	[CR_ST_POLICY_DENIED] = "policy_denied",
	[CR_ST_LIMIT_EXCEEDED] = "limit_exceeded",
	[CR_ST_PLATFORM_FAILURE] = "platform_failure",
	[CR_ST_CANCELLED] = "cancelled",
};

const char *cr_status_name(enum cr_status st)
{
	return st < CR_ST__COUNT ? status_names[st] : "platform_failure";
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if it is not one:
 * overlongs, surrogates and values past U+10FFFF are invalid. NUL counts as
 * invalid because a C string cannot carry it. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len;
	unsigned cp;

	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* A code point a terminal acts on: C0, DEL, C1. */
static bool control(const unsigned char *p, size_t l)
{
	return (l == 1 && (p[0] < 0x20 || p[0] == 0x7f)) ||
	       (l == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}

/* The escaping of bytes into text: an invalid byte (or, with controls, a
 * control character) becomes the four characters \xNN; a backslash is
 * doubled only when the next thing written starts with one or with 'x'
 * (the next byte is 'x', a backslash or escaped), so plain text
 * round-trips unchanged and a reader decodes it left to right: "\\" a
 * backslash, "\x" two hex digits, any other backslash itself. Writes at
 * most outlen - 1 bytes plus NUL, never cutting an escape or a
 * character; returns the bytes written. */
static size_t escape(const char *buf, size_t len, bool controls, char *out,
		     size_t outlen)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t o = 0;

	if (!outlen)
		return 0;
	for (size_t i = 0; i < len;) {
		size_t l = utf8_len(p + i, len - i);
		bool esc = !l || (controls && control(p + i, l));

		if (esc) {
			if (o + 4 >= outlen)
				break;
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", p[i]);
			i++;
			continue;
		}
		if (p[i] == '\\' && i + 1 < len) {
			size_t nl = utf8_len(p + i + 1, len - i - 1);

			if (p[i + 1] == 'x' || p[i + 1] == '\\' || !nl ||
			    (controls && control(p + i + 1, nl))) {
				if (o + 2 >= outlen)
					break;
				out[o++] = '\\';
				out[o++] = '\\';
				i++;
				continue;
			}
		}
		if (o + l >= outlen)
			break;
		memcpy(out + o, p + i, l);
		o += l;
		i += l;
	}
	out[o] = 0;
	return o;
}

void cr_json_add_bytes(void *obj, const char *key, const char *buf,
		       size_t len)
{
	char *s = malloc(len * 4 + 1);

	if (!s) {
		cJSON_AddStringToObject(obj, key, "<out of memory>");
		return;
	}
	escape(buf, len, false, s, len * 4 + 1);
	cJSON_AddStringToObject(obj, key, s);
	free(s);
}

const char *cr_signame(int sig, char *buf, size_t len)
{
	const char *ab = sigabbrev_np(sig);

	/* glibc names no real-time signal: SIGRTMIN+N, as kill -l does. */
	if (ab)
		snprintf(buf, len, "SIG%s", ab);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(buf, len, "SIG%d", sig);
	return buf;
}

void *cr_json_bytes(const char *buf, size_t len)
{
	char *s = malloc(len * 4 + 1);
	cJSON *j;

	if (!s)
		return cJSON_CreateString("<out of memory>");
	escape(buf, len, false, s, len * 4 + 1);
	j = cJSON_CreateString(s);
	free(s);
	return j;
}

void cr_text_inert(char *text, size_t size)
{
	char copy[1024];
	size_t n = strnlen(text, size);

	if (n >= sizeof(copy))
		n = sizeof(copy) - 1;
	memcpy(copy, text, n);
	escape(copy, n, true, text, size);
}

/* Settle the final status from how the run ended. */
static void settle(struct cr_run *run, int *code)
{
	int st = run->exit_status;

	if (run->status == CR_ST_OK) {
		if (run->exec_errno && run->first_exec_denied) {
			/* The contract: a command the policy refuses is
			 * policy_denied (126), whatever errno it met. */
			run->status = CR_ST_POLICY_DENIED;
			*code = CR_EXIT_DENIED;
			snprintf(run->message, sizeof(run->message),
				 "cannot execute %s: refused by the policy (%s)",
				 run->cfg->argv[0], strerror(run->exec_errno));
		} else if (run->exec_errno) {
			run->status = CR_ST_PROGRAM_ERROR;
			*code = CR_EXIT_NOT_FOUND;
			snprintf(run->message, sizeof(run->message),
				 "cannot execute %s: %s", run->cfg->argv[0],
				 strerror(run->exec_errno));
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			*code = 0;
			snprintf(run->message, sizeof(run->message),
				 "the program exited with status 0");
		} else if (WIFEXITED(st)) {
			run->status = CR_ST_PROGRAM_ERROR;
			*code = WEXITSTATUS(st);
			snprintf(run->message, sizeof(run->message),
				 "the program exited with status %d", *code);
		} else {
			char sn[24];

			run->status = CR_ST_PROGRAM_ERROR;
			*code = 128 + WTERMSIG(st);
			snprintf(run->message, sizeof(run->message),
				 "the program was killed by %s",
				 cr_signame(WTERMSIG(st), sn, sizeof(sn)));
		}
		if (run->export_cancel) {
			/* Cancelled while the artifacts were exported: the
			 * caller's last word, with the program's own end
			 * (exit_code, signal) kept beside it. */
			char sn[24], msg[sizeof(run->message)];
			int k = snprintf(msg, sizeof(msg),
					 "cancelled by %s while the artifacts were exported (",
					 cr_signame(run->export_cancel, sn, sizeof(sn)) + 3);

			if (k > 0 && (size_t)k < sizeof(msg) - 2) {
				size_t l = strnlen(run->message,
						   sizeof(msg) - (size_t)k - 2);

				memcpy(msg + k, run->message, l);
				memcpy(msg + k + l, ")", 2);
			}
			memcpy(run->message, msg, sizeof(msg));
			run->status = CR_ST_CANCELLED;
			*code = CR_EXIT_CANCELLED;
		}
		return;
	}
	switch (run->status) {
	case CR_ST_LIMIT_EXCEEDED: *code = CR_EXIT_LIMIT; break;
	case CR_ST_POLICY_DENIED: *code = CR_EXIT_DENIED; break;
	case CR_ST_CANCELLED: *code = CR_EXIT_CANCELLED; break;
	default: *code = CR_EXIT_USAGE; break;
	}
}

static void add_u64(cJSON *o, const char *k, uint64_t v)
{
	cJSON_AddNumberToObject(o, k, (double)v);
}

/* corral's own CPU time (user + system, every thread of the supervisor),
 * so the cost of interposition is visible apart from the program's cpu_ms,
 * which RUSAGE_CHILDREN measures. Read when the result is built: after the
 * tree is reaped and the workspace removed, so cleanup counts too. */
static uint64_t supervisor_cpu_ms(void)
{
	struct rusage self = { 0 };

	if (getrusage(RUSAGE_SELF, &self) < 0)
		return 0;
	return (uint64_t)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1000 +
	       (uint64_t)(self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1000;
}

/* Who ran what under which policy: the head of every result. */
static void add_identity(cJSON *r, const struct cr_run_config *cfg)
{
	cJSON_AddNumberToObject(r, "schema", 1);
	cJSON_AddStringToObject(r, "task_id", cfg->task_id ? cfg->task_id : "");
	cJSON_AddStringToObject(r, "policy_version",
				cfg->policy ? cfg->policy->version : "");
	cJSON_AddStringToObject(r, "class", cfg->cls ? cfg->cls->name : "");
	if (cfg->cls && cfg->cls->profile) {
		cJSON *sp = cJSON_AddObjectToObject(r, "syscall_profile");

		if (sp) {
			cJSON_AddStringToObject(sp, "name", cfg->cls->profile->name);
			cJSON_AddStringToObject(sp, "version",
						cfg->cls->profile->version);
		}
	} else {
		cJSON_AddNullToObject(r, "syscall_profile");
	}
}

void cr_result_add_end(const struct cr_run *run, int code, void *obj)
{
	cJSON *o = obj;
	int st = run->exit_status;
	bool exited = run->status == CR_ST_OK || run->status == CR_ST_PROGRAM_ERROR ||
		      run->export_cancel;

	if (exited && run->have_exit && !run->exec_errno && WIFEXITED(st))
		cJSON_AddNumberToObject(o, "exit_code", WEXITSTATUS(st));
	else if (exited && run->exec_errno)
		cJSON_AddNumberToObject(o, "exit_code", code);
	else
		cJSON_AddNullToObject(o, "exit_code");
	if (exited && run->have_exit && WIFSIGNALED(st)) {
		char name[24];

		cJSON_AddStringToObject(o, "signal",
					cr_signame(WTERMSIG(st), name,
						   sizeof(name)));
	} else {
		cJSON_AddNullToObject(o, "signal");
	}
}

static cJSON *build(struct cr_run *run, int code)
{
	const struct cr_run_config *cfg = run->cfg;
	cJSON *r = cJSON_CreateObject(), *u, *d, *c;
	struct rusage ru = { 0 };

	if (!r)
		return NULL;
	add_identity(r, cfg);
	cJSON_AddStringToObject(r, "status", cr_status_name(run->status));
	if (run->limit)
		cJSON_AddStringToObject(r, "limit", run->limit);
	else
		cJSON_AddNullToObject(r, "limit");
	cr_result_add_end(run, code, r);
	cr_json_add_bytes(r, "stdout", run->out.buf ? run->out.buf : "", run->out.len);
	cr_json_add_bytes(r, "stderr", run->err.buf ? run->err.buf : "", run->err.len);
	cJSON_AddBoolToObject(r, "stdout_truncated", run->out.truncated);
	cJSON_AddBoolToObject(r, "stderr_truncated", run->err.truncated);

	/* Every process of the run ends as a child of ours (the initial one,
	 * or reparented to us as subreaper) or of another task of the run, so
	 * RUSAGE_CHILDREN after the reap covers the whole tree. An area that
	 * measures better (budgets) has already filled run->usage. */
	getrusage(RUSAGE_CHILDREN, &ru);
	if (!run->usage.cpu_ms)
		run->usage.cpu_ms =
			(uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
			(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
	if (!run->usage.peak_memory_bytes)
		run->usage.peak_memory_bytes = (uint64_t)ru.ru_maxrss * 1024;
	if (run->usage.processes < run->tasks.peak_leaders)
		run->usage.processes = run->tasks.peak_leaders;
	if (run->usage.tasks < run->tasks.peak_tasks)
		run->usage.tasks = run->tasks.peak_tasks;
	u = cJSON_AddObjectToObject(r, "usage");
	if (u) {
		add_u64(u, "wall_ms", run->end_ms);
		add_u64(u, "cpu_ms", run->usage.cpu_ms);
		add_u64(u, "peak_memory_bytes", run->usage.peak_memory_bytes);
		add_u64(u, "processes", run->usage.processes);
		add_u64(u, "tasks", run->usage.tasks);
		add_u64(u, "output_bytes", run->out.total + run->err.total);
		add_u64(u, "disk_bytes", run->usage.disk_bytes);
		add_u64(u, "files", run->usage.files);
		add_u64(u, "net_bytes", run->usage.net_bytes);
		add_u64(u, "net_connections", run->usage.net_connections);
		add_u64(u, "supervisor_notifications", run->notifications);
		add_u64(u, "supervisor_fds_injected", run->fds_injected);
		add_u64(u, "supervisor_stops", run->stops);
		add_u64(u, "supervisor_cpu_ms", supervisor_cpu_ms());
	}
	d = cJSON_AddArrayToObject(r, "denials");
	for (size_t j = 0; d && j < run->ndenials; j++) {
		/* In the order they happened: once the tail is a ring, its
		 * oldest slot is the next to be reused. */
		size_t head = CR_MAX_DENIALS - CR_DENIALS_TAIL, i = j;
		const struct cr_denial *dn;
		cJSON *o;

		if (run->denials_wrapped && j >= head)
			i = head + (j - head + run->denial_tail) % CR_DENIALS_TAIL;
		dn = &run->denials[i];
		o = cJSON_CreateObject();

		if (!o)
			break;
		add_u64(o, "ms", dn->ms);
		cJSON_AddNumberToObject(o, "pid", dn->pid);
		cJSON_AddStringToObject(o, "syscall", dn->syscall);
		if (dn->target)
			cr_json_add_bytes(o, "target", dn->target, strlen(dn->target));
		else
			cJSON_AddNullToObject(o, "target");
		cJSON_AddStringToObject(o, "layer", dn->layer);
		/* A reason may quote a name the caller or the program chose
		 * (an input's): escaped as the target is. */
		cr_json_add_bytes(o, "reason", dn->reason ? dn->reason : "",
				  dn->reason ? strlen(dn->reason) : 0);
		add_u64(o, "count", dn->count ? dn->count : 1);
		if (dn->nstack) {
			cJSON *sk = cJSON_AddArrayToObject(o, "stack");

			/* Names are the program's bytes: escaped. */
			for (size_t k = 0; sk && k < dn->nstack; k++)
				cJSON_AddItemToArray(sk, cr_json_bytes(
					dn->stack[k], strlen(dn->stack[k])));
		} else if (dn->stack_missing) {
			cJSON_AddStringToObject(o, "stack_unavailable",
						dn->stack_missing);
		}
		cJSON_AddItemToArray(d, o);
	}
	add_u64(r, "denials_dropped", run->denials_dropped);
	/* The kernel layer under the supervisor (tracer/landlock/): the ABI
	 * of the ruleset the program ran under, or why there was none. */
	c = cJSON_AddObjectToObject(r, "landlock");
	if (c) {
		cJSON_AddNumberToObject(c, "abi", run->landlock_abi);
		cJSON_AddBoolToObject(c, "applied", run->landlock_abi > 0);
		cJSON_AddStringToObject(c, "fast_path",
					run->fast_path == CR_FAST_OPEN ? "open" :
					run->fast_path == CR_FAST_METADATA ?
					"metadata" : "off");
		if (run->landlock_reason)
			cJSON_AddStringToObject(c, "reason", run->landlock_reason);
		else
			cJSON_AddNullToObject(c, "reason");
	}
	cr_io_result(run, r);	/* inputs, digests, artifacts: tracer/io/ */
	c = cJSON_AddObjectToObject(r, "cleanup");
	if (c) {
		add_u64(c, "killed", run->killed);
		add_u64(c, "leftover_processes", run->leftover);
		cJSON_AddBoolToObject(c, "workspace_removed", run->workspace_removed);
	}
	cJSON_AddStringToObject(r, "message", run->message);
	/* Added objects (docs/interface.md), each from its own area. */
	cr_assurance_result(run, r);
	cr_alert_result(run, r);
	cr_audit_result(run, r);
	return r;
}

/*
 * A run has one result, written either at its end (cr_result_emit) or, when
 * the loop stopped turning, by the watchdog (watchdog.c): whichever claims
 * it first writes it whole, the other writes nothing.
 */
static atomic_bool result_claimed;

bool cr_result_claim(void)
{
	return !atomic_exchange(&result_claimed, true);
}

bool cr_result_claimed(void)
{
	return atomic_load(&result_claimed);
}

/* The result the watchdog writes, made while the run starts (no memory is
 * allocated when it fires, and nothing of the run's state is read then):
 * the run's identity, platform_failure, and usage.wall_ms set to mark, for
 * the watchdog to replace with the time it fires. Every other figure is 0:
 * the loop that measures them is the one that stopped (the message says
 * so). NULL when out of memory. */
char *cr_result_stalled(const struct cr_run *run, double mark)
{
	cJSON *r = cJSON_CreateObject(), *u, *c;
	static const char *const zero[] = {
		"cpu_ms", "peak_memory_bytes", "processes", "tasks",
		"output_bytes", "disk_bytes", "files", "net_bytes",
		"net_connections", "supervisor_notifications",
		"supervisor_fds_injected", "supervisor_stops",
		"supervisor_cpu_ms",
	};
	char *text;

	if (!r)
		return NULL;
	add_identity(r, run->cfg);
	cJSON_AddStringToObject(r, "status", cr_status_name(CR_ST_PLATFORM_FAILURE));
	cJSON_AddNullToObject(r, "limit");
	cJSON_AddNullToObject(r, "exit_code");
	cJSON_AddNullToObject(r, "signal");
	cJSON_AddStringToObject(r, "stdout", "");
	cJSON_AddStringToObject(r, "stderr", "");
	cJSON_AddBoolToObject(r, "stdout_truncated", false);
	cJSON_AddBoolToObject(r, "stderr_truncated", false);
	u = cJSON_AddObjectToObject(r, "usage");
	if (u) {
		cJSON_AddNumberToObject(u, "wall_ms", mark);
		for (size_t i = 0; i < CR_ARRAY_SIZE(zero); i++)
			add_u64(u, zero[i], 0);
	}
	cJSON_AddArrayToObject(r, "denials");
	add_u64(r, "denials_dropped", 0);
	c = cJSON_AddObjectToObject(r, "cleanup");
	if (c) {
		add_u64(c, "killed", 0);
		add_u64(c, "leftover_processes", 0);
		cJSON_AddBoolToObject(c, "workspace_removed", false);
	}
	cJSON_AddStringToObject(r, "message",
		"the supervisor stopped making progress past the wall budget and "
		"exited, which kills every task of the run (PTRACE_O_EXITKILL); "
		"the usage figures, denials and output it held are lost, and a "
		"private workspace left behind is removed by the next run");
	text = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	return text;
}

/* Writes the result where it was asked for and returns corral's exit code. */
/* The file is replaced at the end (unlink, then create): what is needed is
 * a directory we may write and search, and a name that is not a directory.
 * A result that could not be written must fail the run before it starts,
 * not after, silently. */
int cr_result_check(const struct cr_run_config *cfg)
{
	const char *slash = strrchr(cfg->result_file, '/');
	const char *name = slash ? slash + 1 : cfg->result_file;
	struct stat st;

	if (faccessat(cfg->result_dirfd, ".", W_OK | X_OK, AT_EACCESS) < 0)
		return -errno;
	if (fstatat(cfg->result_dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		return -EISDIR;
	return 0;
}

/*
 * The --json record to stdout, which a caller may leave full and unread
 * (or share O_NONBLOCK): written in steps of at most a pipe buffer's
 * page, each once poll says there is room, so a signal that would end a
 * writer there (read from the loop's signalfd, which holds them blocked)
 * ends the wait: -EINTR. Before, SIGTERM to a corral whose stdout was
 * full did nothing, only SIGKILL ended it (found by a probing session).
 * 0 or -errno.
 */
static int record_part(struct cr_run *run, const char *p, size_t n)
{
	while (n) {
		struct pollfd pf[2] = {
			{ .fd = STDOUT_FILENO, .events = POLLOUT },
			{ .fd = run->sigfd, .events = POLLIN },
		};
		ssize_t w;

		if (poll(pf, run->sigfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (run->sigfd >= 0 && (pf[1].revents & POLLIN) &&
		    cr_loop_cancel_pending(run))
			return -EINTR;
		if (!pf[0].revents)
			continue;
		w = write(STDOUT_FILENO, p, n > 4096 ? 4096 : n);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int record_out(struct cr_run *run, const char *text)
{
	int rc = record_part(run, text, strlen(text));

	return rc ? rc : record_part(run, "\n", 1);
}

int cr_result_emit(struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;
	int code = CR_EXIT_USAGE;
	cJSON *r;
	char *text;

	/* The watchdog has claimed the result and is ending the process. */
	if (!cr_result_claim())
		for (;;)
			pause();
	settle(run, &code);
	/* The message may name what the program chose (an exec's path): it
	 * goes into JSON and onto the caller's terminal. */
	cr_text_inert(run->message, sizeof(run->message));
	/* The trail's last events are written before the result is built:
	 * the result carries the chain's head. */
	run->exit_code = code;
	cr_audit_finish(run);
	r = build(run, code);
	text = r ? cJSON_PrintUnformatted(r) : NULL;
	cJSON_Delete(r);
	if (!text) {
		fprintf(stderr, "corral: out of memory writing the result\n");
		return CR_EXIT_USAGE;
	}
	if (cfg->result_file && cfg->result_dirfd >= 0) {
		/* The result may be asked for inside the workspace, where the
		 * program had the last word: its directory was opened before
		 * the program ran (a directory swapped for a link since is not
		 * followed), and the name is replaced, never written through
		 * (a link or a hard link planted there is unlinked, not
		 * followed or truncated). */
		const char *slash = strrchr(cfg->result_file, '/');
		const char *name = slash ? slash + 1 : cfg->result_file;
		int fd, wr;

		if (unlinkat(cfg->result_dirfd, name, 0) < 0 && errno != ENOENT)
			fd = -1;
		else
			fd = openat(cfg->result_dirfd, name,
				    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
				    O_NOFOLLOW, 0600);
		/* The error said is the one that happened (cr_write_all's
		 * -EIO for a write of nothing leaves errno as it was). */
		wr = fd < 0 ? -errno : cr_write_all(fd, text, strlen(text));
		if (!wr)
			wr = cr_write_all(fd, "\n", 1);
		if (wr) {
			/* Not silently: the caller reads the file, and there
			 * is none. corral's own failure. */
			fprintf(stderr, "corral: cannot write %s: %s\n",
				cfg->result_file, strerror(-wr));
			code = CR_EXIT_USAGE;
		}
		if (fd >= 0)
			close(fd);
	}
	/* The result file is down first: a reader of corral's stdout that
	 * never reads may hold the echo below, and the result must not wait
	 * for it. The program's last output then comes before corral's own
	 * last line on stderr, as when it was echoed in place. */
	cr_echo_finish(run);
	/* A signal to corral while the program's output waited for an
	 * unread stdout: a cancel of its delivery, said so (corral exited
	 * with the program's 0 having written none of it; found by a
	 * probing session). */
	if (run->echo_cut) {
		fprintf(stderr, "corral: the program's output was not all written: a signal came while stdout was full\n");
		code = CR_EXIT_CANCELLED;
	}
	if (cfg->json) {
		int wr;

		fflush(stdout);
		wr = record_out(run, text);
		if (wr == -EINTR) {
			fprintf(stderr, "corral: the result was not written: cancelled while stdout was full\n");
			code = CR_EXIT_USAGE;
		} else if (wr) {
			/* As a --result file that cannot be written: the
			 * caller has no record, and corral's status says so
			 * rather than the program's (it said 0 when a
			 * program had closed the stream; found by a probing
			 * session). */
			fprintf(stderr, "corral: cannot write the result: %s\n",
				strerror(-wr));
			code = CR_EXIT_USAGE;
		}
	} else if (run->status != CR_ST_OK &&
		   run->status != CR_ST_PROGRAM_ERROR) {
		fprintf(stderr, "corral: %s: %s\n", cr_status_name(run->status),
			run->message);
	} else if (run->exec_errno) {
		fprintf(stderr, "corral: %s\n", run->message);
	} else if (run->out.truncated || run->err.truncated) {
		char b[32];

		cr_limit_format(CR_LIM_OUTPUT, cfg->limits.v[CR_LIM_OUTPUT], b,
				sizeof(b));
		fprintf(stderr, "corral: output truncated at the output budget (%s)%s\n",
			b, run->ndenials ? "; the program also met denials" : "");
	} else if (run->ndenials) {
		/* One line: the program met denials and ended on its own. */
		fprintf(stderr, "corral: denied %llu call(s)%s, first: %s (%s)\n",
			(unsigned long long)run->denied_calls,
			run->denials_dropped ? " (some not listed)" : "",
			run->denials[0].syscall, run->denials[0].reason);
	}
	free(text);
	run->exit_code = code;
	return code;
}
