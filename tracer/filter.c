/* tracer/filter.c: builds the seccomp BPF program from the syscall table and
 * the class's syscall profile with libseccomp, before the child exists. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/filter.h>
#include <linux/audit.h>
#include <linux/seccomp.h>

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

/*
 * Both parts are sorted into a binary tree of syscall numbers (libseccomp
 * 2.5+) rather than a list of ~300 comparisons: the kernel runs the
 * program over every syscall number when it is loaded (the action cache),
 * which cost each run's start ~0.5 ms with the list, and every call the
 * cache cannot answer walks ~9 comparisons instead of up to ~300.
 */
static int optimize(scmp_filter_ctx ctx)
{
	return seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
}

/* Part one, the table: notify its entries (on their argument conditions),
 * answer its errno entries, and let everything else go on to the profile.
 * A foreign ABI (i386 int 0x80, x32) would reach the kernel's other syscall
 * tables, around every rule: it kills the whole process. */
/* Notified when any bit of `bits` is set in the argument: one rule per
 * bit. */
static int notify_any_bit(scmp_filter_ctx ctx, int nr, int arg, uint64_t bits)
{
	int rc = 0;

	for (int b = 0; !rc && b < 64; b++) {
		struct scmp_arg_cmp cmp = {
			.arg = (unsigned)arg,
			.op = SCMP_CMP_MASKED_EQ,
			.datum_a = 1ULL << b,
			.datum_b = 1ULL << b,
		};

		if (bits & (1ULL << b))
			rc = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, nr, 1,
						    &cmp);
	}
	return rc;
}

static int build_table(scmp_filter_ctx ctx, int fast)
{
	int rc;

	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* The child sets no_new_privs itself, before dropping capabilities. */
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (!rc)
		rc = optimize(ctx);
	for (size_t i = 0; !rc && i < cr_nsyscalls; i++) {
		const struct cr_syscall_entry *e = &cr_syscalls[i];

		const struct cr_syscall_fast *fp;

		if (e->nr < 0)
			continue;
		fp = fast ? cr_syscall_fast_find(e->name, fast) : NULL;
		if (fp) {
			/* The fast path: the kernel runs it under Landlock,
			 * unless a flag of the mask is set. */
			if (fp->arg >= 0)
				rc = notify_any_bit(ctx, e->nr, fp->arg, fp->mask);
		} else if (e->arg >= 0 && e->anybits) {
			rc = notify_any_bit(ctx, e->nr, e->arg, e->anybits);
		} else if (e->arg >= 0 && e->notall) {
			/* "Not every bit of notall set": one rule per bit,
			 * that bit clear and the rest of the condition. The
			 * bits must be outside the mask (a table error). */
			if (e->mask & e->notall)
				rc = -EINVAL;
			for (int b = 0; !rc && b < 64; b++) {
				struct scmp_arg_cmp cmp = {
					.arg = (unsigned)e->arg,
					.op = SCMP_CMP_MASKED_EQ,
					.datum_a = e->mask | 1ULL << b,
					.datum_b = e->value,
				};

				if (e->notall & (1ULL << b))
					rc = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY,
								    e->nr, 1, &cmp);
			}
		} else if (e->arg >= 0) {
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

		struct scmp_arg_cmp cmp = {
			.arg = (unsigned)(e->arg < 0 ? 0 : e->arg),
			.op = SCMP_CMP_MASKED_EQ,
			.datum_a = e->mask,
			.datum_b = e->value,
		};

		if (e->nr < 0)
			continue;
		rc = e->arg < 0 ?
			seccomp_rule_add(ctx, SCMP_ACT_ERRNO(e->error), e->nr, 0) :
			seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(e->error),
					       e->nr, 1, &cmp);
	}
	return rc;
}

/* Part two, the profile: what the kernel may run. Every table name is
 * allowed here too (a conditional table entry's other calls land here, and
 * must not become ENOSYS). Everything else is notified, and the notifier
 * answers ENOSYS (or EPERM for a refused call) and records it: a profile
 * that breaks a program must say what it broke. */
static int build_profile(scmp_filter_ctx ctx, const struct cr_profile *p)
{
	int rc;

	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (!rc)
		rc = optimize(ctx);
	for (size_t i = 0; !rc && p->allow[i]; i++) {
		int nr = seccomp_syscall_resolve_name(p->allow[i]);

		/* A name this architecture lacks simply is not there. */
		if (nr >= 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
	}
	for (size_t i = 0; !rc && i < cr_nsyscalls; i++)
		if (cr_syscalls[i].nr >= 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
					      cr_syscalls[i].nr, 0);
	return rc;
}

/*
 * One program from two: libseccomp cannot say "notify when (arg & mask) ==
 * value, else fall to a default other than the filter's" (an unconditional
 * rule replaces conditional ones), so the table and the profile are built
 * as separate programs and joined: every `return ALLOW` of the table
 * becomes a forward jump to the start of the profile. The table therefore
 * always wins (its notify and errno answers return at once), and a call it
 * lets through is judged by the profile. Both parts check the architecture
 * first; the joined program is validated by the kernel when the child loads
 * it, and its length is bounded here.
 */
static int join(struct cr_filter *table, struct cr_filter *prof,
		struct cr_filter *out)
{
	struct sock_filter *a = table->bpf, *b = prof->bpf, *j;
	size_t len = (size_t)table->len + prof->len;

	if (len > BPF_MAXINSNS)
		return -E2BIG;
	j = calloc(len, sizeof(*j));
	if (!j)
		return -ENOMEM;
	for (size_t i = 0; i < table->len; i++) {
		j[i] = a[i];
		if (BPF_CLASS(a[i].code) != BPF_RET)
			continue;
		if (BPF_RVAL(a[i].code) != BPF_K) {
			/* Only constant returns are understood. */
			free(j);
			return -EINVAL;
		}
		if (a[i].k == SECCOMP_RET_ALLOW)
			j[i] = (struct sock_filter)BPF_JUMP(
				BPF_JMP | BPF_JA,
				(uint32_t)(table->len - i - 1), 0, 0);
	}
	memcpy(j + table->len, b, prof->len * sizeof(*b));
	out->bpf = j;
	out->len = (unsigned short)len;
	return 0;
}

int cr_filter_generate(struct cr_filter *f, const struct cr_profile *p,
		       int fast)
{
	struct cr_filter table = { 0 }, prof = { 0 };
	scmp_filter_ctx ctx;
	int rc;

	memset(f, 0, sizeof(*f));
	cr_syscalls_resolve();
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	rc = build_table(ctx, fast);
	if (!rc)
		rc = export_bpf(ctx, &table);
	seccomp_release(ctx);
	if (rc)
		goto out;
	ctx = seccomp_init(SCMP_ACT_NOTIFY);
	if (!ctx) {
		rc = -ENOMEM;
		goto out;
	}
	rc = build_profile(ctx, p ? p : cr_profile_default());
	if (!rc)
		rc = export_bpf(ctx, &prof);
	seccomp_release(ctx);
	if (!rc)
		rc = join(&table, &prof, f);
out:
	cr_filter_free(&table);
	cr_filter_free(&prof);
	return rc;
}

/* The programs tracer/filtergen.c generated at build time, one per built-in
 * profile: generating one costs ~2 ms of libseccomp work per run on the
 * development machine, an eighth of corral's start-up. Weak, so the
 * generator itself links without them (and then generates). */
extern const struct cr_filter_prebuilt cr_filter_prebuilt[] __attribute__((weak));

int cr_filter_build_profile(struct cr_filter *f, const struct cr_profile *p,
			    int fast)
{
	memset(f, 0, sizeof(*f));
	if (!p)
		p = cr_profile_default();
	for (size_t i = 0; cr_filter_prebuilt && cr_filter_prebuilt[i].name; i++) {
		const struct cr_filter_prebuilt *b = &cr_filter_prebuilt[i];

		if (strcmp(b->name, p->name) || strcmp(b->version, p->version) ||
		    b->fast != fast)
			continue;
		/* The table's numbers are still needed (by_nr), and cheap. */
		cr_syscalls_resolve();
		f->bpf = malloc(b->len * sizeof(*b->bpf));
		if (!f->bpf)
			return -ENOMEM;
		memcpy(f->bpf, b->bpf, b->len * sizeof(*b->bpf));
		f->len = b->len;
		return 0;
	}
	return cr_filter_generate(f, p, fast);
}

int cr_filter_build(struct cr_filter *f)
{
	return cr_filter_build_profile(f, cr_profile_default(), CR_FAST_OFF);
}

/*
 * Runs the program on one input, as the kernel would: a small evaluator of
 * the classic-BPF subset libseccomp emits. Any other instruction, a jump out
 * of the program or a loop-free run past its end is an error: the program
 * is then reported unverified, never assumed good.
 */
int cr_filter_eval(const struct cr_filter *f, const struct seccomp_data *d,
		   uint32_t *action)
{
	const struct sock_filter *p = f->bpf;
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	unsigned char data[sizeof(*d)];

	memcpy(data, d, sizeof(data));
	for (size_t pc = 0; pc < f->len; pc++) {
		const struct sock_filter *i = &p[pc];
		uint32_t k = i->k;

		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k > sizeof(data) - 4 || k % 4)
				return -EINVAL;
			memcpy(&a, data + k, 4);
			break;
		case BPF_LD | BPF_MEM:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			a = mem[k];
			break;
		case BPF_LDX | BPF_MEM:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			x = mem[k];
			break;
		case BPF_ST:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			mem[k] = a;
			break;
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			mem[k] = x;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			a &= k;
			break;
		case BPF_ALU | BPF_OR | BPF_K:
			a |= k;
			break;
		case BPF_MISC | BPF_TAX:
			x = a;
			break;
		case BPF_MISC | BPF_TXA:
			a = x;
			break;
		case BPF_JMP | BPF_JA:
			pc += k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += a == k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGT | BPF_K:
			pc += a > k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGE | BPF_K:
			pc += a >= k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += (a & k) ? i->jt : i->jf;
			break;
		case BPF_RET | BPF_K:
			*action = k;
			return 0;
		default:
			return -EINVAL;
		}
	}
	return -EINVAL;
}

/* The built program, run on the inputs a foreign ABI produces: the i386
 * audit arch with every i386 number, and x86_64 numbers carrying the x32
 * bit. Each must end in KILL_PROCESS. 0 when they all do. */
int cr_filter_verify_arch(const struct cr_filter *f)
{
	struct seccomp_data d = { 0 };
	uint32_t act;
	int rc;

	for (int nr = 0; nr < 512; nr++) {
		d.arch = AUDIT_ARCH_I386;
		d.nr = nr;
		rc = cr_filter_eval(f, &d, &act);
		if (rc || act != SECCOMP_RET_KILL_PROCESS)
			return rc ? rc : -EPERM;
		d.arch = AUDIT_ARCH_X86_64;
		d.nr = nr | 0x40000000;
		rc = cr_filter_eval(f, &d, &act);
		if (rc || act != SECCOMP_RET_KILL_PROCESS)
			return rc ? rc : -EPERM;
	}
	return 0;
}

void cr_filter_free(struct cr_filter *f)
{
	free(f->bpf);
	f->bpf = NULL;
	f->len = 0;
}
