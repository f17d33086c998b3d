/* tracer/filter.c: builds the seccomp BPF program from the syscall table with
 * libseccomp, in the supervisor, before the child exists. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/filter.h>

#include "tracer.h"

/* The program is exported as raw BPF so the child can load it with the
 * seccomp() flags libseccomp 2.5 cannot set (WAIT_KILLABLE_RECV), and so the
 * child does no allocation between fork and exec. */
static int export_bpf(scmp_filter_ctx ctx, struct cr_filter *f)
{
	cr_autoclose int fd = memfd_create("corral-bpf", MFD_CLOEXEC);
	struct stat st;
	int rc;

	if (fd < 0)
		return -errno;
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return rc;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) ||
	    st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return -E2BIG;
	f->bpf = malloc((size_t)st.st_size);
	if (!f->bpf)
		return -ENOMEM;
	if (pread(fd, f->bpf, (size_t)st.st_size, 0) != st.st_size) {
		free(f->bpf);
		f->bpf = NULL;
		return -EIO;
	}
	f->len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
	return 0;
}

int cr_filter_build(struct cr_filter *f)
{
	scmp_filter_ctx ctx;
	int rc = 0;

	memset(f, 0, sizeof(*f));
	cr_syscalls_resolve();
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	/* A foreign ABI (i386 int 0x80, x32) would reach the kernel's other
	 * syscall tables, around every rule: kill the whole process. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* The child sets no_new_privs itself, before dropping capabilities. */
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	for (size_t i = 0; !rc && i < cr_nsyscalls; i++) {
		const struct cr_syscall_entry *e = &cr_syscalls[i];

		if (e->nr < 0)
			continue;
		if (e->arg >= 0) {
			struct scmp_arg_cmp cmp = {
				.arg = (unsigned)e->arg,
				.op = e->nonzero ? SCMP_CMP_NE : SCMP_CMP_MASKED_EQ,
				.datum_a = e->nonzero ? 0 : e->mask,
				.datum_b = e->nonzero ? 0 : e->value,
			};
			rc = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, e->nr,
						    1, &cmp);
		} else {
			rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 0);
		}
	}
	for (size_t i = 0; !rc && i < cr_nsyscall_errnos; i++) {
		const struct cr_syscall_errno *e = &cr_syscall_errnos[i];

		if (e->nr >= 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(e->error),
					      e->nr, 0);
	}
	if (!rc)
		rc = export_bpf(ctx, f);
	seccomp_release(ctx);
	return rc;
}

void cr_filter_free(struct cr_filter *f)
{
	free(f->bpf);
	f->bpf = NULL;
	f->len = 0;
}
