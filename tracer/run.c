/* tracer/run.c: `corral run` from start to end: configuration, workspace,
 * spawn, event loop, then the single cleanup path and the result. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <cJSON.h>

#include "tracer.h"
#include "fs/fs.h"
#include "budget/budget.h"
#include "surface.h"
#include "net/net.h"
#include "ipc/sysv.h"
#include "io/io.h"
#include "broker/broker.h"
#include "landlock/landlock.h"

uint64_t cr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t cr_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t cr_run_ms(const struct cr_run *run)
{
	return run->start_ns ? (cr_now_ns() - run->start_ns) / 1000000ull : 0;
}

void cr_run_end(struct cr_run *run, enum cr_status st, const char *limit,
		const char *fmt, ...)
{
	char msg[sizeof(run->message)];
	va_list ap;

	if (run->ending)
		return;
	/* A verdict the watchdog reached while the loop was held (stall.c)
	 * is this run's ending, whatever the loop met first on its way back
	 * (the tree the watchdog killed). */
	if (cr_stall_verdict(run))
		return;
	run->ending = true;
	run->status = st;
	run->limit = limit;
	run->end_ms = cr_run_ms(run);
	/* Through a copy: callers pass run->message itself as the argument
	 * (a message set where the failure happened). */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(run->message, msg, sizeof(run->message));
	if (limit) {
		cJSON *f = cJSON_CreateObject();

		if (f) {
			cJSON_AddStringToObject(f, "limit", limit);
			cJSON_AddNumberToObject(f, "ms", (double)run->end_ms);
		}
		cr_audit_event(run, "limit", f);
	}
}

static void audit_start(struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;
	cJSON *f = cJSON_CreateObject(), *cmd;

	if (!f)
		return;
	cJSON_AddStringToObject(f, "policy_version", cfg->policy->version);
	cJSON_AddStringToObject(f, "class", cfg->cls->name);
	cJSON_AddStringToObject(f, "syscall_profile", cfg->cls->profile->name);
	cJSON_AddStringToObject(f, "syscall_profile_version",
				cfg->cls->profile->version);
	cmd = cJSON_AddArrayToObject(f, "command");
	/* The caller's bytes, escaped as the result escapes them: an
	 * argument that is not UTF-8 made a line that was not JSON. */
	for (char **a = cfg->argv; cmd && a && *a; a++)
		cJSON_AddItemToArray(cmd, cr_json_bytes(*a, strlen(*a)));
	cr_json_add_bytes(f, "workspace", cfg->workspace ? cfg->workspace : "",
			  cfg->workspace ? strlen(cfg->workspace) : 0);
	cJSON_AddBoolToObject(f, "workspace_private", cfg->ws_private);
	cr_io_audit_start(run, f);	/* inputs, digests: tracer/io/ */
	cr_audit_event(run, "start", f);
}

/* The signals the supervisor handles through its loop. Every signal whose
 * default would end corral without its one cleanup path (no result, no
 * closing audit events, the workspace and lock left for a later run) is a
 * cancellation: the tree dies either way (its filter's listener goes with
 * corral), the record should not. SIGTSTP (^Z, or `kill -TSTP`) stops the
 * tree with corral (loop.c). SIGKILL and SIGSTOP cannot be caught. */
static void loop_signals(sigset_t *set)
{
	static const int sigs[] = {
		SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
		SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGPWR, SIGSTKFLT,
		SIGTRAP, SIGSYS, SIGTSTP,
	};

	sigemptyset(set);
	for (size_t i = 0; i < CR_ARRAY_SIZE(sigs); i++)
		sigaddset(set, sigs[i]);
	/* The signals of faults too, when another process sends them
	 * (systemd's WatchdogSec= sends SIGABRT; each killed corral with no
	 * result and no cleanup, found by a probing session). A real fault
	 * of corral's own still kills it: the kernel unblocks a fault signal
	 * it forces on a thread that blocks it, and abort() unblocks
	 * SIGABRT first. A sanitizer build keeps its handlers for its
	 * reports, which a blocked fault signal would lose. */
	sigaddset(set, SIGABRT);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_UNDEFINED__)
	sigaddset(set, SIGSEGV);
	sigaddset(set, SIGBUS);
	sigaddset(set, SIGILL);
	sigaddset(set, SIGFPE);
#endif
	/* The real-time signals too, but the guard's and the closer's own
	 * (tracer/guard.c), which their handlers take. */
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		if (sig != SIGRTMIN + 4 && sig != SIGRTMIN + 5)
			sigaddset(set, sig);
}

/* First thing in a run: a cancel that comes while the options are read or
 * an old workspace is swept (~100 ms for a big one) waits for the loop
 * instead of killing corral with no result, or, where the caller's shell
 * left SIGINT ignored (a background job), being dropped: a blocked signal
 * is queued whatever its disposition.
 *
 * A supervisor stopped by job control while its tree runs on is no
 * supervisor: no budget is measured and no limit fires until it is
 * continued. corral never reads the terminal, and the program's output
 * must not stop it either (a run in the background of a terminal with
 * `stty tostop` was stopped by the program's first line while a child it
 * had started went on allocating): SIGTTOU and SIGTTIN are ignored, so
 * the echo goes through. The child sets every disposition back
 * (child.c). */
static int block_signals(void)
{
	sigset_t set;

	loop_signals(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	signal(SIGTTOU, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	return 0;
}

static int setup_signals(struct cr_run *run)
{
	sigset_t set;

	loop_signals(&set);
	/* A closed reader of our stdout must be an error, not our death;
	 * so must a write past the caller's file-size limit (the echo to a
	 * file, the result, the audit trail: EFBIG, reported, where SIGXFSZ
	 * killed corral mid-write and left a cut result). */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	run->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return run->sigfd < 0 ? -errno : 0;
}

static int setup(struct cr_run *run, struct cr_filter *filter)
{
	struct seccomp_notif_sizes sizes;
	int rc;

	rc = setup_signals(run);
	if (rc)
		return rc;
	/* Orphans of the tree come to us, so none outlives the run unreaped
	 * and RUSAGE_CHILDREN covers every process. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) {
		snprintf(run->message, sizeof(run->message),
			 "seccomp user notification is unavailable: needs Linux 5.0+ with SECCOMP_FILTER_FLAG_NEW_LISTENER");
		return -errno;
	}
	run->notif_len = sizes.seccomp_notif > sizeof(*run->notif) ?
			 sizes.seccomp_notif : sizeof(*run->notif);
	run->notif = calloc(1, run->notif_len);
	if (!run->notif)
		return -ENOMEM;
	rc = cr_tasks_init(&run->tasks);
	if (rc)
		return rc;
	run->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (run->epfd < 0)
		return -errno;
	cr_syscalls_resolve();
	for (size_t i = 0; i < cr_nsyscalls; i++) {
		int nr = cr_syscalls[i].nr;

		if (nr >= 0 && (size_t)nr < CR_ARRAY_SIZE(run->by_nr) &&
		    !run->by_nr[nr])
			run->by_nr[nr] = &cr_syscalls[i];
	}
	/* corral holds descriptors on the program's behalf (socket copies,
	 * the ledger, /proc files), each area a bounded share of its limit:
	 * the soft limit goes up to the hard one (at most CR_NOFILE_MAX),
	 * the program keeps the caller's (spawn.c). */
	if (getrlimit(RLIMIT_NOFILE, &run->caller_nofile) == 0) {
		struct rlimit up = run->caller_nofile;

		up.rlim_cur = up.rlim_max < CR_NOFILE_MAX ? up.rlim_max :
			      CR_NOFILE_MAX;
		if (up.rlim_cur > run->caller_nofile.rlim_cur)
			setrlimit(RLIMIT_NOFILE, &up);
	} else {
		run->caller_nofile.rlim_cur = RLIM_INFINITY;
	}
	/* Area set-up (one line each), before the child exists. */
	if ((rc = cr_fs_setup(run)))		/* tracer/fs/fs.c */
		return rc;
	if ((rc = cr_broker_check_files(run)))	/* tracer/broker/ */
		return rc;
	/* Inputs before the budgets' baseline: what the caller brings in
	 * is not the program's use (each was bounded while placed). */
	if ((rc = cr_io_setup(run)))		/* tracer/io/ */
		return rc;
	if ((rc = cr_budget_setup(run)))	/* tracer/budget/budget.c */
		return rc;
	if ((rc = cr_surface_setup(run)))	/* tracer/surface.c */
		return rc;
	if ((rc = cr_net_setup(run)))		/* tracer/net/ */
		return rc;
	/* Last: the ruleset names the roots and the proxy's ports. */
	if ((rc = cr_landlock_setup(run)))	/* tracer/landlock/ */
		return rc;
	/* The program for the fast-path level Landlock allows. */
	rc = cr_filter_build_profile(filter, run->cfg->cls->profile,
				     run->fast_path);
	if (rc) {
		snprintf(run->message, sizeof(run->message),
			 "cannot build the seccomp filter: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

static void run_free(struct cr_run *run)
{
	int *fds[] = { &run->listener, &run->sigfd, &run->timerfd, &run->epfd,
		       &run->execfd, &run->stdin_fd, &run->child_pidfd };

	for (size_t i = 0; i < CR_ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	cr_echo_finish(run);
	cr_stream_close(&run->out);
	cr_stream_close(&run->err);
	free(run->out.buf);
	free(run->err.buf);
	for (size_t i = 0; i < run->ndenials; i++) {
		free(run->denials[i].target);
		free(run->denials[i].reason);
		for (size_t k = 0; k < run->denials[i].nstack; k++)
			free(run->denials[i].stack[k]);
		free(run->denials[i].stack);
	}
	free(run->denials);
	cr_tasks_free(&run->tasks);
	cr_sysv_free(run);
	cr_landlock_finish(run);
	cr_loop_free(run);
	free(run->notif);
	cr_audit_close(run);
	cr_io_free(run);
	cr_alert_free(run);
	cr_assurance_free(run);
	/* The child's stack, once no process of the run can be on it. */
	if (run->child_mem && !run->leftover)
		munmap(run->child_mem, run->child_mem_len);
	run->child_mem = NULL;
}

/* The watchdog and broker threads and the loop's deadline timer, started
 * once the child waits with its filter (cr_spawn), before the program
 * runs. After the child exists: it is made with one thread in corral.
 * The echo thread waits for the first output (echo.c). */
static void start_helpers(struct cr_run *run)
{
	int rc;

	/* Each is a defence against a program that stalls the loop: a run
	 * without one does not start (fail closed). Their resources are the
	 * user's (a timer and its pending signal, a thread), which other
	 * runs' programs are kept from spending whole (budget/rlimits.c: the child's
	 * RLIMIT_SIGPENDING; the processes budget). */
	cr_stall_attach(run);
	rc = cr_guard_setup();
	if (rc < 0) {
		snprintf(run->helpers_what, sizeof(run->helpers_what),
			 "cannot arm the deadline of the loop's socket calls");
		run->helpers_rc = rc;
		return;
	}
	rc = cr_watchdog_start(run);
	if (rc < 0) {
		snprintf(run->helpers_what, sizeof(run->helpers_what),
			 "cannot start the watchdog thread");
		run->helpers_rc = rc;
		return;
	}
	snprintf(run->helpers_what, sizeof(run->helpers_what),
		 "cannot start the broker");
	run->helpers_rc = cr_broker_start(run);
}

int cr_run_main(int argc, char **argv)
{
	struct cr_run_config cfg = { 0 };
	struct cr_run run = { 0 };
	struct cr_filter filter = { 0 };
	char err[2048] = "";
	char **env_args = NULL;
	size_t nenv = 0;
	const char *ws = NULL;
	int rc, code;

	run.cfg = &cfg;
	cfg.result_dirfd = cfg.ws_lockfd = cfg.ws_fd = -1;
	run.listener = run.sigfd = run.timerfd = run.epfd = run.execfd = -1;
	run.stdin_fd = run.child_pidfd = run.audit_fd = -1;
	run.landlock_fd = -1;
	run.out.fd = run.err.fd = -1;

	if (block_signals() < 0) {
		fprintf(stderr, "corral: cannot block signals: %s\n", strerror(errno));
		return CR_EXIT_USAGE;
	}
	rc = cr_options_load(argc, argv, &cfg, err, sizeof(err), &env_args,
			     &nenv, &ws);
	if (rc == -ECANCELED) {
		code = 0;
		goto out;
	}
	if (rc && rc != -EPERM) {
		/* Usage and document errors: nothing has run, nothing to
		 * clean. The message names file, line and key. */
		fprintf(stderr, "corral: %s\n", err);
		if (cfg.json && cfg.task_id && cfg.policy && cfg.cls) {
			cr_run_end(&run, CR_ST_PLATFORM_FAILURE, NULL, "%s", err);
			code = cr_result_emit(&run);
		} else {
			code = CR_EXIT_USAGE;
		}
		goto out;
	}
	if (cfg.result_file) {
		cr_autofree char *dir = strdup(cfg.result_file);
		char *slash = dir ? strrchr(dir, '/') : NULL;

		if (slash == dir && dir)
			slash[1] = 0;	/* "/name": the root directory */
		else if (slash)
			*slash = 0;
		char why[PATH_MAX + 256] = "";

		errno = ENOMEM;
		if (dir && (errno = -cr_oppath_open(slash ? dir : ".",
						     &cfg.result_dirfd, why,
						     sizeof(why))) == EPERM) {
			fprintf(stderr, "corral: --result %s: %s\n",
				cfg.result_file, why);
			code = CR_EXIT_USAGE;
			goto out;
		}
		if (cfg.result_dirfd < 0 || !*(strrchr(cfg.result_file, '/') ?
					       strrchr(cfg.result_file, '/') + 1 :
					       cfg.result_file)) {
			fprintf(stderr, "corral: --result %s: cannot open its directory: %s\n",
				cfg.result_file, strerror(errno ? errno : EINVAL));
			code = CR_EXIT_USAGE;
			goto out;
		}
		int bad = cr_result_check(&cfg);

		if (bad) {
			fprintf(stderr, "corral: --result %s: cannot be written: %s\n",
				cfg.result_file, strerror(-bad));
			code = CR_EXIT_USAGE;
			goto out;
		}
		/* A record the program could reach is no record: a later run
		 * in the same workspace, or the program through a writable
		 * root, could rewrite it. Judged on the directory really
		 * opened, as the audit trail is. */
		{
			char lnk[64], real[PATH_MAX], which[PATH_MAX + 128];
			ssize_t l;

			snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", cfg.result_dirfd);
			l = readlink(lnk, real, sizeof(real) - 1);
			if (l <= 0) {
				fprintf(stderr, "corral: --result %s: cannot resolve its directory\n",
					cfg.result_file);
				code = CR_EXIT_USAGE;
				goto out;
			}
			real[l] = 0;
			if (cr_audit_path_writable(&cfg, ws, real, which,
						   sizeof(which))) {
				fprintf(stderr, "corral: --result %s: %s: it could rewrite the record\n",
					cfg.result_file, which);
				code = CR_EXIT_USAGE;
				goto out;
			}
			/* The file itself as the workspace or the output
			 * directory, which corral makes as a directory after
			 * this check: the program ran and its record was
			 * lost (found by a probing session). */
			{
				const char *b = strrchr(cfg.result_file, '/');
				const char *dirs[2] = { ws, cfg.output_dir };
				char full[2 * PATH_MAX + 2];

				b = b ? b + 1 : cfg.result_file;
				snprintf(full, sizeof(full), "%s/%s",
					 strcmp(real, "/") ? real : "", b);
				for (int i = 0; i < 2; i++) {
					char *d = dirs[i] ?
						  cr_audit_root_real(dirs[i]) : NULL;
					bool same = d && !strcmp(d, full);

					free(d);
					if (same) {
						fprintf(stderr, "corral: --result %s: it is the %s, a directory corral makes\n",
							cfg.result_file,
							i ? "--output-dir" :
							"workspace");
						code = CR_EXIT_USAGE;
						goto out;
					}
				}
			}
		}
	}
	/* The record on stdout (--json) is a record too: a file there that
	 * the program may write is refused as --result's would be (a program
	 * wrote a forged record past where corral's would end; found by a
	 * probing session). A pipe, a terminal or a socket is the caller's;
	 * a file is judged by the name it was opened by. */
	if (cfg.json) {
		char real[PATH_MAX], which[PATH_MAX + 128];
		struct stat st;
		ssize_t l = 0;

		/* A file or a named pipe: judged by its name; one whose
		 * name cannot be read (past PATH_MAX: a probing session
		 * made one, then moved a directory on its path within
		 * reach) is refused, as --result's directory is. */
		if (fstat(STDOUT_FILENO, &st) == 0 &&
		    (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) &&
		    (l = readlink("/proc/self/fd/1", real,
				  sizeof(real) - 1)) <= 0) {
			fprintf(stderr, "corral: --json: stdout is a file whose name cannot be read (%s): it could be one the program may write\n",
				strerror(l < 0 ? errno : ENOENT));
			code = CR_EXIT_USAGE;
			goto out;
		}
		/* corral's stdin handed to the program as its own (neither
		 * --stdin text nor a terminal, spawn.c) and the very object
		 * the record is written to (inetd, a socketpair for stdio):
		 * the program writes a forged record into it and shuts its
		 * side, and the caller reads that one alone (found by a
		 * probing session). Refused: the caller can give the program
		 * another stdin. */
		{
			struct stat in;

			/* A device (/dev/null for both, as corral's own
			 * start gives closed ones) holds nothing to read. */
			if (!cfg.stdin_text && fstat(STDIN_FILENO, &in) == 0 &&
			    !isatty(STDIN_FILENO) &&
			    fstat(STDOUT_FILENO, &st) == 0 &&
			    (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode) ||
			     S_ISREG(st.st_mode)) &&
			    in.st_dev == st.st_dev && in.st_ino == st.st_ino) {
				fprintf(stderr, "corral: --json: stdin and stdout are one %s, which the program would hold as its stdin and could write the record into; give it another stdin (the request's stdin text, or < /dev/null)\n",
					S_ISSOCK(st.st_mode) ? "socket" :
					S_ISFIFO(st.st_mode) ? "pipe" : "file");
				code = CR_EXIT_USAGE;
				goto out;
			}
		}
		/* A unix socket connected to a name the program may send
		 * to (a datagram reader bound in the workspace took the
		 * program's forged record first; found by a probing
		 * session): its peer's name is judged too, and a relative
		 * one, which cannot be, is refused. */
		if (fstat(STDOUT_FILENO, &st) == 0 && S_ISSOCK(st.st_mode)) {
			struct sockaddr_un su;
			socklen_t sl = sizeof(su);
			char peer[sizeof(su.sun_path) + 1] = "";

			memset(&su, 0, sizeof(su));
			if (getpeername(STDOUT_FILENO, (struct sockaddr *)&su,
					&sl) == 0 && su.sun_family == AF_UNIX &&
			    sl > offsetof(struct sockaddr_un, sun_path))
				memcpy(peer, su.sun_path, sizeof(su.sun_path));
			if (peer[0] && (peer[0] != '/' ||
					cr_audit_path_writable(&cfg, ws, peer, which,
							       sizeof(which)))) {
				fprintf(stderr, "corral: --json: stdout is a socket connected to %s: %s\n",
					peer, peer[0] == '/' ? which :
					"a relative name corral cannot judge");
				code = CR_EXIT_USAGE;
				goto out;
			}
		}
		/* Another name of it could be inside (a workspace made
		 * with cp -al): only a file of one name, or none, is
		 * judged by it (found by a probing session). */
		if (l > 0 && st.st_nlink > 1) {
			fprintf(stderr, "corral: --json: stdout is a file of %lu names: another could be one the program may write\n",
				(unsigned long)st.st_nlink);
			code = CR_EXIT_USAGE;
			goto out;
		}
		if (l > 0)
			real[l] = 0;
		if (l > 0 && real[0] == '/' &&
		    cr_audit_path_writable(&cfg, ws, real, which,
					   sizeof(which))) {
			fprintf(stderr, "corral: --json: stdout is %s: %s: it could rewrite the record\n",
				real, which);
			code = CR_EXIT_USAGE;
			goto out;
		}
	}
	/* The files the run's rules came from: a program that may write
	 * one rewrites the rules of the next run of the same command line
	 * (a probing session had the policy in the workspace, and one
	 * replaced by an artifact). Refused as a record is, judged by the
	 * name each resolves to now; one of several names is refused, as
	 * another name could be inside. Their identities keep an export
	 * from replacing them (io/artifacts.c). */
	{
		const char *files[2] = { cfg.policy_file, cfg.request_file };
		const char *opt[2] = { "--policy", "--request" };

		for (size_t i = 0; i < 2; i++) {
			char which[PATH_MAX + 128], *real;

			cfg.rules_st[i].st_nlink = 0;
			if (!files[i])
				continue;
			real = realpath(files[i], NULL);
			/* A pipe without a name (`--policy <(...)`) was read
			 * to its end and is nobody's to rewrite; a named one,
			 * as any file, is judged by its name. */
			if (!real && stat(files[i], &cfg.rules_st[i]) == 0 &&
			    S_ISFIFO(cfg.rules_st[i].st_mode)) {
				cfg.rules_st[i].st_nlink = 0;
				continue;
			}
			if (!real || stat(real, &cfg.rules_st[i]) < 0) {
				fprintf(stderr, "corral: %s %s: cannot resolve it: %s\n",
					opt[i], files[i], strerror(errno));
				free(real);
				code = CR_EXIT_USAGE;
				goto out;
			}
			if (cfg.rules_st[i].st_nlink > 1 ||
			    cr_audit_path_writable(&cfg, ws, real, which,
						   sizeof(which))) {
				if (cfg.rules_st[i].st_nlink > 1)
					snprintf(which, sizeof(which),
						 "a file of %lu names, another could be one the program may write",
						 (unsigned long)cfg.rules_st[i].st_nlink);
				fprintf(stderr, "corral: %s %s: %s: it could rewrite the rules of a later run\n",
					opt[i], files[i], which);
				free(real);
				code = CR_EXIT_USAGE;
				goto out;
			}
			free(real);
		}
	}
	if (cr_audit_open(&run, ws, err, sizeof(err)) < 0) {
		fprintf(stderr, "corral: %s\n", err);
		code = CR_EXIT_USAGE;
		goto out;
	}
	if (rc == -EPERM) {
		/* The request asked more than its class: refused before
		 * anything exists, and said so in the result and audit. */
		cfg.workspace = strdup(ws ? ws : "");
		cr_run_end(&run, CR_ST_POLICY_DENIED, NULL, "%s", err);
		goto finish;
	}

	if (!cfg.ws_unsafe) {
		/* Roots the caller names, reached through a link a program
		 * of an earlier run could have left: refused (run.c's -w,
		 * --output-dir, --input, --result and --audit alike). Each
		 * is walked once, and what the walk opened is what the run
		 * uses (cfg.pins): a program of a live run swapping a link
		 * in afterwards steers nothing. A policy file's roots too;
		 * the built-in classes name only the system's own. */
		const struct cr_strlist *l[] = {
			&cfg.extra_ro, &cfg.extra_rw, &cfg.extra_exec,
			cfg.policy_file ? &cfg.cls->fs_read : NULL,
			cfg.policy_file ? &cfg.cls->fs_write : NULL,
			cfg.policy_file ? &cfg.cls->fs_exec : NULL,
			cfg.policy_file ? &cfg.cls->fs_deny : NULL,
		};
		char why[PATH_MAX + 256];
		const char *bad = NULL;

		for (size_t i = 0; i < CR_ARRAY_SIZE(l); i++) {
			if (!l[i])
				continue;
			rc = cr_oppath_pin(&cfg, l[i], l[i] == &cfg.cls->fs_deny,
					   &bad, why, sizeof(why));
			if (rc == -EPERM) {
				cfg.workspace = strdup(ws ? ws : "");
				cr_run_end(&run, CR_ST_POLICY_DENIED, NULL,
					   "root %s refused: %s (--workspace-unsafe to use it anyway)",
					   bad, why);
				goto finish;
			}
			if (rc) {
				cfg.workspace = strdup(ws ? ws : "");
				cr_run_end(&run, CR_ST_PLATFORM_FAILURE, NULL,
					   "roots: %s", strerror(-rc));
				goto finish;
			}
		}
	}
	/* The writable roots are the program's ground as the workspace is:
	 * marked, so a link it leaves there steers no later run; one that
	 * cannot carry the mark (a sticky directory of another owner) is
	 * refused, unless the caller means it. */
	for (size_t i = 0; !cfg.ws_unsafe && i < 2; i++) {
		const struct cr_strlist *l = i ? (cfg.cls ? &cfg.cls->fs_write :
						  NULL) : &cfg.extra_rw;

		for (size_t j = 0; l && j < l->n; j++) {
			const struct cr_pin *pin = cr_pin_find(&cfg, l->v[j]);

			rc = !pin ? cr_oppath_mark(l->v[j]) :
			     pin->fd >= 0 ? cr_oppath_mark_fd(pin->fd) : 0;
			if (!rc)
				continue;
			cfg.workspace = strdup(ws ? ws : "");
			cr_run_end(&run, CR_ST_POLICY_DENIED, NULL,
				   "root %s refused: corral cannot mark it as a run's writable space (%s): a link its program left there could steer a later run's paths (--workspace-unsafe to use it anyway)",
				   l->v[j], strerror(-rc));
			goto finish;
		}
	}
	if (ws && !cfg.ws_unsafe) {
		char why[PATH_MAX + 64];

		if (cr_workspace_check(&cfg, ws, why, sizeof(why))) {
			cfg.workspace = strdup(ws);
			cr_run_end(&run, CR_ST_POLICY_DENIED, NULL,
				   "workspace %s refused: %s (--workspace-unsafe to use it anyway)",
				   ws, why);
			goto finish;
		}
	}
	if (!cfg.ws_unsafe) {
		char why[2 * PATH_MAX + 256];

		if (cr_workspace_tmp_check(&cfg, why, sizeof(why))) {
			cfg.workspace = strdup(ws ? ws : "");
			cr_run_end(&run, CR_ST_POLICY_DENIED, NULL,
				   "%s (--workspace-unsafe to run anyway)", why);
			goto finish;
		}
	}
	{
		/* Private workspaces of runs whose supervisor died (kill -9)
		 * go before this one is made. */
		size_t swept, busy;

		cr_workspace_gc(&cfg, ws, &swept, &busy);
	}
	{
		char why[2 * PATH_MAX + 256];

		rc = cr_workspace_make(&cfg, ws, why, sizeof(why));
		if (rc == -EPERM && why[0]) {
			if (!cfg.workspace)
				cfg.workspace = strdup(ws ? ws : "");
			cr_run_end(&run, CR_ST_POLICY_DENIED, NULL,
				   "workspace %s refused: %s (--workspace-unsafe to use it anyway)",
				   ws, why);
			goto finish;
		}
	}
	if (rc) {
		cr_run_end(&run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot make the workspace %s: %s", ws ? ws : "under $TMPDIR",
			   strerror(-rc));
		goto finish;
	}
	/* The broker's addresses join the allowed destinations and the
	 * environment (tracer/broker/). */
	rc = cr_broker_setup(&run, err, sizeof(err));
	if (rc) {
		cr_run_end(&run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot set up the broker: %s", err[0] ? err :
			   strerror(-rc));
		goto finish;
	}
	rc = cr_env_build(&cfg, env_args, nenv);
	if (!rc)
		rc = cr_broker_env(&run);
	if (rc) {
		cr_run_end(&run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot build the environment: %s", strerror(-rc));
		goto finish;
	}
	rc = setup(&run, &filter);
	if (rc) {
		char why[sizeof(run.message)];

		/* cr_run_end formats into run.message: not from itself. */
		if (run.message[0])
			snprintf(why, sizeof(why), "%s", run.message);
		else
			snprintf(why, sizeof(why), "cannot set up the supervisor: %s",
				 strerror(-rc));
		audit_start(&run);	/* what was refused, and how it ran */
		cr_run_end(&run, CR_ST_PLATFORM_FAILURE, NULL, "%s", why);
		goto finish;
	}
	audit_start(&run);
	run.start_ns = cr_now_ns();
	rc = cr_spawn(&run, &filter, start_helpers);
	run.filter = &filter;	/* kept: signal stops ask it (notify.c) */
	/* No program ran under the ruleset, whether or not the child got as
	 * far as applying it (16 Landlock layers already stacked by the
	 * caller fail it with E2BIG; no process or helper thread to be
	 * had): the result says none. */
	if (rc || run.helpers_rc)
		cr_landlock_not_applied(&run, "the run ended before the program started");
	if (rc) {
		char why[sizeof(run.message)];

		if (run.message[0])
			snprintf(why, sizeof(why), "%s", run.message);
		else
			snprintf(why, sizeof(why), "cannot start the program: %s",
				 strerror(-rc));
		cr_run_end(&run, CR_ST_PLATFORM_FAILURE, NULL, "%s", why);
		goto finish;
	}
	if (run.helpers_rc) {
		cr_run_end(&run, CR_ST_PLATFORM_FAILURE, NULL, "%s: %s",
			   run.helpers_what, strerror(-run.helpers_rc));
		goto finish;
	}
	cr_loop(&run);

finish:
	/* Every ending comes here: completion, limits, cancellation, denial
	 * and platform failure take the same path in the same order. */
	cr_cleanup(&run);
	code = cr_result_emit(&run);	/* audit's exit and cleanup first */
out:
	cr_filter_free(&filter);
	for (size_t i = 0; i < nenv; i++)
		free(env_args[i]);
	free(env_args);
	run_free(&run);
	cr_config_free(&cfg);
	return code;
}
