/* tracer/assurance/assurance.c: which protections this run really had, read
 * from the kernel (the child's /proc status, the live listener), and its level. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <cJSON.h>

#include "corral/probe.h"
#include "../tracer.h"

/* A mechanism of the run: on or off, what was seen, and whether its
 * absence lowers the level (a layer this build does not offer does not). */
struct mech {
	const char *name;
	bool active;
	bool counts;
	char detail[160];
};

enum {
	M_SECCOMP_NOTIFY, M_FD_INJECTION, M_KILLABLE_WAIT, M_PTRACE_SEIZE,
	M_NO_NEW_PRIVS, M_CAPS_DROPPED, M_ARCH_CHECK, M_LANDLOCK,
	M_DELEGATED_CGROUP, M_NAMESPACES, M_DATA_BACKSTOP, M__COUNT
};

struct cr_assurance {
	struct mech m[M__COUNT];
	int landlock_abi;		/* the kernel's, probed */
	const char *landlock_reason;	/* static, when not applied */
	bool full;
};

/* The one place the Landlock line is decided, from what the Landlock area
 * (tracer/landlock/) set on the run: the ABI applied, or why none. */
static void landlock_view(const struct cr_run *run, struct cr_assurance *a)
{
	struct mech *m = &a->m[M_LANDLOCK];

	/* The ABI the child restricted itself with before its seccomp filter
	 * (tracer/landlock/; a failed landlock_restrict_self ends the spawn).
	 * It counts toward the level wherever the kernel has Landlock: a
	 * run with it turned off there has one layer fewer. */
	a->landlock_abi = cr_probe_landlock_abi();
	m->active = run->landlock_abi > 0;
	m->counts = a->landlock_abi > 0;
	a->landlock_reason = m->active ? NULL :
			     run->landlock_reason ? run->landlock_reason :
			     "not applied";
	if (m->active)
		snprintf(m->detail, sizeof(m->detail),
			 "ABI %d applied (kernel ABI %d)", run->landlock_abi,
			 a->landlock_abi);
	else
		snprintf(m->detail, sizeof(m->detail),
			 "kernel ABI %d; not applied: %s", a->landlock_abi,
			 a->landlock_reason);
}

/* Fields of /proc/PID/status, read from outside the child. */
struct status {
	int seccomp, nnp;
	long filters;
	pid_t tracer;
	unsigned long long inh, prm, eff, amb;
	int seen;	/* bit per field found */
};

static int read_status(pid_t pid, struct status *s)
{
	/* Matched by prefix, then one number parsed: trying every sscanf
	 * pattern on each of ~60 lines cost ~0.3 ms of every start. */
	static const struct {
		const char *key;
		int base;
	} keys[] = {
		{ "Seccomp:", 10 }, { "NoNewPrivs:", 10 },
		{ "Seccomp_filters:", 10 }, { "TracerPid:", 10 },
		{ "CapInh:", 16 }, { "CapPrm:", 16 }, { "CapEff:", 16 },
		{ "CapAmb:", 16 },
	};
	char path[64], buf[8192];
	unsigned long long v[CR_ARRAY_SIZE(keys)] = { 0 };
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)got < sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	memset(s, 0, sizeof(*s));
	for (char *l = buf, *next; *l; l = next) {
		next = strchr(l, '\n');
		next = next ? next + 1 : l + strlen(l);
		for (size_t k = 0; k < CR_ARRAY_SIZE(keys); k++) {
			size_t kl = strlen(keys[k].key);
			char *end;

			if (strncmp(l, keys[k].key, kl))
				continue;
			errno = 0;
			v[k] = strtoull(l + kl, &end, keys[k].base);
			if (!errno && end != l + kl)
				s->seen |= 1 << k;
			break;
		}
	}
	s->seccomp = s->seen & 1 ? (int)v[0] : -1;
	s->nnp = s->seen & 2 ? (int)v[1] : -1;
	s->filters = (long)v[2];
	s->tracer = (pid_t)v[3];
	s->inh = v[4];
	s->prm = v[5];
	s->eff = v[6];
	s->amb = v[7];
	return 0;
}

/* ADDFD with SEND on the live listener, for a notification that does not
 * exist: a kernel that has it answers ENOENT (no such notification);
 * one without SEND (before 5.14) or ADDFD (before 5.9) answers EINVAL. */
static int probe_addfd(int listener)
{
	struct seccomp_notif_addfd a = {
		.id = 0,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (uint32_t)listener,
	};

	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a) == 0)
		return 0;	/* cannot happen: id 0 has no waiter */
	return -errno;
}

static void set(struct mech *m, const char *name, bool active, bool counts,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void set(struct mech *m, const char *name, bool active, bool counts,
		const char *fmt, ...)
{
	va_list ap;

	m->name = name;
	m->active = active;
	m->counts = counts;
	va_start(ap, fmt);
	vsnprintf(m->detail, sizeof(m->detail), fmt, ap);
	va_end(ap);
}

bool cr_assurance_level_valid(const char *level)
{
	return !strcmp(level, "full") || !strcmp(level, "degraded");
}

int cr_assurance_observe(struct cr_run *run, pid_t child,
			 unsigned seccomp_flags)
{
	struct cr_assurance *a = calloc(1, sizeof(*a));
	struct status s;
	int rc, addfd;

	if (!a)
		return -ENOMEM;
	cr_assurance_free(run);
	run->assurance = a;
	rc = read_status(child, &s);
	if (rc)
		memset(&s, 0, sizeof(s));
	addfd = probe_addfd(run->listener);

	set(&a->m[M_SECCOMP_NOTIFY], "seccomp_notify",
	    run->listener >= 0 && s.seccomp == 2, true,
	    "Seccomp %d, %ld filter(s), listener %s", s.seccomp, s.filters,
	    run->listener >= 0 ? "held by corral" : "missing");
	set(&a->m[M_FD_INJECTION], "fd_injection", addfd == -ENOENT, true,
	    "SECCOMP_IOCTL_NOTIF_ADDFD with SEND: %s",
	    addfd == -ENOENT ? "available" : strerror(-addfd));
	set(&a->m[M_KILLABLE_WAIT], "killable_wait",
	    seccomp_flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, true,
	    "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV %s",
	    seccomp_flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV ?
	    "set" : "refused by the kernel (before 5.19)");
	set(&a->m[M_PTRACE_SEIZE], "ptrace_seize", s.tracer == getpid(), true,
	    "TracerPid %d", (int)s.tracer);
	set(&a->m[M_NO_NEW_PRIVS], "no_new_privs", s.nnp == 1, true,
	    "NoNewPrivs %d", s.nnp);
	set(&a->m[M_CAPS_DROPPED], "capabilities_dropped",
	    (s.seen & 0xf0) == 0xf0 && !s.inh && !s.prm && !s.eff && !s.amb,
	    true, "CapInh %llx CapPrm %llx CapEff %llx CapAmb %llx", s.inh,
	    s.prm, s.eff, s.amb);
	rc = run->filter ? cr_filter_verify_arch(run->filter) : -EINVAL;
	set(&a->m[M_ARCH_CHECK], "filter_checks_arch", rc == 0, true,
	    "%s", rc == 0 ? "every i386 and x32 input is killed" :
	    "an i386 or x32 input is not killed");
	a->m[M_LANDLOCK].name = "landlock";
	landlock_view(run, a);
	/* Not probed per run (~0.4 ms of /proc and /sys reads for a line
	 * that never changes the verdict): `corral probe` finds one. */
	set(&a->m[M_DELEGATED_CGROUP], "delegated_cgroup", false, false,
	    "never used: budgets are measured from /proc (docs/limits.md); `corral probe` says whether one is available");
	set(&a->m[M_NAMESPACES], "namespaces", false, false,
	    "never used: corral needs no namespace");
	set(&a->m[M_DATA_BACKSTOP], "data_backstop", run->cfg->data_backstop,
	    false, "%s", run->cfg->data_backstop ?
	    "RLIMIT_DATA per process past the memory budget (docs/limits.md)" :
	    "lifted by the operator (--no-data-backstop or the class): the caller's RLIMIT_DATA; the memory budget's tick alone bounds a burst");

	if (!(s.seen & 1))
		snprintf(a->m[M_SECCOMP_NOTIFY].detail,
			 sizeof(a->m[M_SECCOMP_NOTIFY].detail),
			 "cannot read the child's status: %s",
			 strerror(rc < 0 ? -rc : EIO));
	a->full = true;
	for (int i = 0; i < M__COUNT; i++)
		if (a->m[i].counts && !a->m[i].active)
			a->full = false;
	{
		cJSON *f = cJSON_CreateObject(), *r;

		if (f) {
			cJSON_AddStringToObject(f, "level",
						a->full ? "full" : "degraded");
			r = cJSON_AddArrayToObject(f, "reasons");
			for (int i = 0; r && i < M__COUNT; i++)
				if (a->m[i].counts && !a->m[i].active)
					cJSON_AddItemToArray(r, cJSON_CreateString(a->m[i].name));
		}
		cr_audit_event(run, "assurance", f);
	}
	if (run->cfg->require && !strcmp(run->cfg->require, "full") &&
	    !a->full) {
		size_t o = (size_t)snprintf(run->message, sizeof(run->message),
			"--require full: this run would be degraded (");
		for (int i = 0; i < M__COUNT && o < sizeof(run->message); i++)
			if (a->m[i].counts && !a->m[i].active)
				o += (size_t)snprintf(run->message + o,
					sizeof(run->message) - o, "%s%s: %s",
					o && run->message[o - 1] != '(' ? "; " : "",
					a->m[i].name, a->m[i].detail);
		if (o < sizeof(run->message))
			snprintf(run->message + o, sizeof(run->message) - o,
				 "); the program was not started");
		return -EPERM;
	}
	return 0;
}

void cr_assurance_landlock_refresh(struct cr_run *run)
{
	struct cr_assurance *a = run->assurance;

	if (!a)
		return;
	landlock_view(run, a);
	a->full = true;
	for (int i = 0; i < M__COUNT; i++)
		if (a->m[i].counts && !a->m[i].active)
			a->full = false;
}

void cr_assurance_result(const struct cr_run *run, void *result)
{
	const struct cr_assurance *a = run->assurance;
	const struct cr_class *cls = run->cfg->cls;
	cJSON *o, *m, *r, *sp;

	if (!a) {
		cJSON_AddNullToObject(result, "assurance");
		return;
	}
	o = cJSON_AddObjectToObject(result, "assurance");
	if (!o)
		return;
	cJSON_AddStringToObject(o, "level", a->full ? "full" : "degraded");
	r = cJSON_AddArrayToObject(o, "reasons");
	for (int i = 0; r && i < M__COUNT; i++)
		if (a->m[i].counts && !a->m[i].active)
			cJSON_AddItemToArray(r, cJSON_CreateString(a->m[i].name));
	m = cJSON_AddObjectToObject(o, "mechanisms");
	for (int i = 0; m && i < M__COUNT; i++) {
		cJSON *e = cJSON_AddObjectToObject(m, a->m[i].name);

		if (!e)
			break;
		cJSON_AddBoolToObject(e, "active", a->m[i].active);
		cJSON_AddBoolToObject(e, "counts", a->m[i].counts);
		cJSON_AddStringToObject(e, "detail", a->m[i].detail);
		if (i == M_LANDLOCK) {
			cJSON_AddNumberToObject(e, "abi", a->landlock_abi);
			cJSON_AddBoolToObject(e, "applied", a->m[i].active);
			if (a->landlock_reason)
				cJSON_AddStringToObject(e, "reason",
							a->landlock_reason);
		}
	}
	if (cls && cls->profile) {
		sp = cJSON_AddObjectToObject(o, "syscall_profile");
		if (sp) {
			cJSON_AddStringToObject(sp, "name", cls->profile->name);
			cJSON_AddStringToObject(sp, "version",
						cls->profile->version);
		}
	}
}

void cr_assurance_free(struct cr_run *run)
{
	free(run->assurance);
	run->assurance = NULL;
}
