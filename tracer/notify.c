/* tracer/notify.c: receives seccomp notifications, dispatches them through
 * the syscall table and answers; records denials for result and audit. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <cJSON.h>
#include <linux/audit.h>

#include "tracer.h"

static struct cr_verdict fail_closed(struct cr_run *run, pid_t pid,
				     const char *name, const char *why)
{
	cr_deny(run, pid, name, NULL, "syscall", why);
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
}

static void answer(struct cr_run *run, const struct seccomp_notif *n,
		   const struct cr_syscall_entry *e, struct cr_verdict v)
{
	struct seccomp_notif_resp resp = { .id = n->id };

	/* The stance is enforced here, not trusted to each handler: only an
	 * entry whose verdict read nothing but registers may let the kernel
	 * run the call. Anything else fails closed. */
	if (v.kind == CR_V_CONTINUE &&
	    (!e || (e->stance != CR_STANCE_REGS && e->stance != CR_STANCE_RECHECKED)))
		v = fail_closed(run, (pid_t)n->pid, e ? e->name : "unknown",
				"internal: CONTINUE refused for a memory-reading handler");
	switch (v.kind) {
	case CR_V_ERRNO:
		resp.error = -(v.error > 0 ? v.error : EPERM);
		break;
	case CR_V_VALUE:
		resp.val = v.val;
		break;
	case CR_V_CONTINUE:
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		break;
	case CR_V_SENT:
		return;
	case CR_V_KILL:
		resp.error = -EPERM;
		cr_run_end(run, CR_ST_POLICY_DENIED, NULL,
			   "the program made a call on the kill list (%s)",
			   e ? e->name : "unknown");
		break;
	}
	/* ENOENT: the task died or was interrupted meanwhile; nothing to do. */
	if (ioctl(run->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 &&
	    errno != ENOENT) {
		/* The task stays blocked until the tree is killed. */
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot answer a seccomp notification: %s",
			   strerror(errno));
	}
}

bool cr_notif_valid(const struct cr_run *run, uint64_t id)
{
	return ioctl(run->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

struct cr_verdict cr_notif_send_fd(struct cr_run *run,
				   const struct seccomp_notif *n, int fd,
				   bool cloexec)
{
	return cr_notif_send_fd_id(run, n->id, fd, cloexec);
}

void cr_notif_reply(struct cr_run *run, uint64_t id, struct cr_verdict v)
{
	struct seccomp_notif_resp resp = { .id = id };

	if (v.kind == CR_V_SENT)
		return;
	if (v.kind == CR_V_VALUE)
		resp.val = v.val;
	else	/* late answers are never CONTINUE: fail closed */
		resp.error = -(v.kind == CR_V_ERRNO && v.error > 0 ? v.error : EPERM);
	ioctl(run->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

struct cr_verdict cr_notif_send_fd_id(struct cr_run *run, uint64_t id, int fd,
				      bool cloexec)
{
	struct seccomp_notif_addfd a = {
		.id = id,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (uint32_t)fd,
		.newfd_flags = cloexec ? O_CLOEXEC : 0,
	};
	int rc = ioctl(run->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);

	/* Fail closed: if the fd cannot be installed the call fails; it is
	 * never let through to the kernel instead. */
	if (rc >= 0)
		return (struct cr_verdict){ .kind = CR_V_SENT };
	if (errno == ENOENT)	/* the task is gone: nothing to answer */
		return (struct cr_verdict){ .kind = CR_V_SENT };
	return (struct cr_verdict){ .kind = CR_V_ERRNO,
				    .error = errno == EMFILE ? EMFILE : EIO };
}

void cr_notify_handle(struct cr_run *run)
{
	struct seccomp_notif *n = run->notif;
	const struct cr_syscall_entry *e = NULL;
	struct cr_verdict v;

	/* The buffer is sized by what the kernel says it writes
	 * (SECCOMP_GET_NOTIF_SIZES at start) and must be zeroed for RECV. */
	memset(n, 0, run->notif_len);
	if (ioctl(run->listener, SECCOMP_IOCTL_NOTIF_RECV, n) < 0)
		return;	/* EINTR/ENOENT: the task went away meanwhile */
	run->notifications++;
	if (run->ending) {
		/* Cleanup has begun: answer nothing new with success. */
		v = (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
	} else if (n->data.arch != AUDIT_ARCH_X86_64 || n->data.nr < 0 ||
		   (size_t)n->data.nr >= CR_ARRAY_SIZE(run->by_nr) ||
		   !(e = run->by_nr[n->data.nr])) {
		char name[40];

		/* The filter only notifies table entries; anything else means
		 * the filter and table disagree. Fail closed. */
		v = fail_closed(run, (pid_t)n->pid,
				cr_syscall_name(n->data.nr, name, sizeof(name)),
				"internal: no handler for this call");
	} else {
		v = e->handler(run, e, n);
	}
	answer(run, n, e, v);
}

void cr_deny(struct cr_run *run, pid_t pid, const char *syscall,
	     const char *target, const char *layer, const char *reason)
{
	uint64_t ms = cr_run_ms(run);

	if (run->ndenials < CR_MAX_DENIALS) {
		struct cr_denial *d = &run->denials[run->ndenials++];

		d->ms = ms;
		d->pid = pid;
		snprintf(d->syscall, sizeof(d->syscall), "%s", syscall);
		d->target = target ? strdup(target) : NULL;
		d->layer = layer;
		d->reason = strdup(reason);
	} else {
		run->denials_dropped++;
	}
	if (run->audit_fd >= 0) {
		cJSON *f = cJSON_CreateObject();

		if (f) {
			cJSON_AddNumberToObject(f, "ms", (double)ms);
			cJSON_AddNumberToObject(f, "pid", pid);
			cJSON_AddStringToObject(f, "syscall", syscall);
			if (target)
				cr_json_add_bytes(f, "target", target,
						  strlen(target));
			cJSON_AddStringToObject(f, "layer", layer);
			cJSON_AddStringToObject(f, "reason", reason);
			cr_audit_event(run, "deny", f);
		}
	}
}
