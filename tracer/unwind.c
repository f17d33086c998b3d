/* tracer/unwind.c: --stacks: a snapshot of a stopped task (registers, stack,
 * maps) unwound and named by libunwind in a confined, forked helper. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <libunwind-ptrace.h>

#include "surface.h"

/*
 * Everything libunwind reads of a run comes from the program: its stack,
 * the files its maps name (a FIFO, a link, an ELF with section offsets past
 * its end) and the symbol names in them. libunwind 1.6 opens those names by
 * path and parses the images without bounds checks, so it never runs in
 * the supervisor. The loop thread takes what only the tracer can (the
 * registers, CR_UNWIND_STACK bytes from the stack pointer, the maps text),
 * then forks a helper that unwinds that snapshot. The helper closes every
 * fd but its answer pipe and the maps copy, takes small rlimits,
 * no_new_privs and a seccomp filter (read-only opens, reads, maps, its
 * pipe, exit: no file writes, no sockets, no signals, no ptrace) before it
 * touches anything of the program's. Its answer is frames with lengths; a
 * helper that is late (CR_STACK_WAIT_NS), crashes or answers badly
 * leaves the denial without a stack.
 *
 * Fork without exec in a threaded process: the helper runs only code whose
 * locks belong to the forking thread (libunwind is called from the loop
 * thread only, and was loaded at set-up) plus malloc, which glibc's fork
 * leaves consistent in the child, and raw system calls. No stdio, no
 * dlopen, nothing the echo, broker or watchdog threads could hold.
 */

#define CR_UNWIND_STACK (128 * 1024)
#define CR_UNWIND_MAPS (256 * 1024)
#define CR_UNWIND_NAME 128

/* libunwind is loaded only for --stacks: linked in, its four libraries
 * (libunwind-ptrace, libunwind-x86_64, libunwind, liblzma) were mapped and
 * relocated at every start of corral, for a feature most runs never use.
 * Only the types come from the header; the calls go through these
 * pointers, resolved by their real (architecture-prefixed) names. */
static struct {
	void *arch, *lib;
	unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
	int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
	int (*get_reg)(unw_cursor_t *, int, unw_word_t *);
	int (*get_proc_name)(unw_cursor_t *, char *, size_t, unw_word_t *);
	int (*step)(unw_cursor_t *);
	unw_accessors_t *accessors;
	void *(*upt_create)(pid_t);
} unw;

int cr_unwind_load(char *msg, size_t msglen)
{
#define UNW_SYM(field, name) \
	(*(void **)&unw.field = dlsym(unw.arch, name)) != NULL
	if (unw.lib)
		return 0;
	/* libunwind-ptrace does not name the library it calls into: that one
	 * is loaded first, its symbols global. */
	unw.arch = dlopen("libunwind-x86_64.so.8", RTLD_NOW | RTLD_GLOBAL);
	unw.lib = unw.arch ? dlopen("libunwind-ptrace.so.0", RTLD_NOW | RTLD_LOCAL) :
		  NULL;
	if (unw.lib && UNW_SYM(create_addr_space, "_Ux86_64_create_addr_space") &&
	    UNW_SYM(init_remote, "_Ux86_64_init_remote") &&
	    UNW_SYM(get_reg, "_Ux86_64_get_reg") &&
	    UNW_SYM(get_proc_name, "_Ux86_64_get_proc_name") &&
	    UNW_SYM(step, "_Ux86_64_step") &&
	    (*(void **)&unw.accessors = dlsym(unw.lib, "_UPT_accessors")) &&
	    (*(void **)&unw.upt_create = dlsym(unw.lib, "_UPT_create")))
		return 0;
#undef UNW_SYM
	snprintf(msg, msglen, "--stacks needs libunwind-ptrace.so.0 (%s)",
		 dlerror() ?: "a symbol is missing");
	if (unw.lib)
		dlclose(unw.lib);
	if (unw.arch)
		dlclose(unw.arch);
	unw.lib = unw.arch = NULL;
	return -ENOENT;
}

/* ---- the snapshot (taken by the tracer; the helper's copy after fork) ---- */

static struct {
	pid_t pid;
	struct user_regs_struct regs;
	unsigned char *stack;		/* from regs.rsp */
	size_t stack_len;
	char *maps;
	size_t maps_len;
	/* the helper's state */
	int maps_fd;			/* memfd holding maps */
	char maps_path[40];		/* /proc/<pid>/maps, served from it */
	int file_fd;			/* last mapped file opened, or -1 */
	unsigned long file_ino;
	char file_dev[16];
	unsigned char page[4096];	/* the last page read of it */
	unsigned long page_at;
	size_t page_len;
} snap;

/* The helper's table of the file mappings in snap.maps. */
static struct mapping {
	unsigned long lo, hi, off, ino;
	char dev[16];
	unsigned maj, min;	/* dev, parsed */
	const char *name;
	size_t nlen;
} *mappings;
static size_t nmappings, last_mapping;

static int snapshot(pid_t tid)
{
	struct iovec local, remote[CR_UNWIND_STACK / 4096 + 1];
	unsigned long sp, end;
	size_t n = 0;
	ssize_t got;
	char path[40];
	int fd;

	if (ptrace(PTRACE_GETREGS, tid, 0, &snap.regs) < 0)
		return -errno;
	snap.stack = malloc(CR_UNWIND_STACK);
	snap.maps = malloc(CR_UNWIND_MAPS);
	if (!snap.stack || !snap.maps)
		return -ENOMEM;
	/* Page by page: the read stops at the first page that is not there
	 * (the top of the stack mapping) and keeps what came before. */
	sp = snap.regs.rsp;
	end = sp + CR_UNWIND_STACK;
	for (unsigned long a = sp; a < end && a >= sp; n++) {
		unsigned long next = (a | 4095) + 1;

		remote[n].iov_base = (void *)a;
		remote[n].iov_len = (next < end ? next : end) - a;
		a = next;
	}
	local.iov_base = snap.stack;
	local.iov_len = CR_UNWIND_STACK;
	cr_slow_begin();	/* the memory-map lock (mem.c) */
	got = process_vm_readv(tid, &local, 1, remote, n, 0);
	cr_slow_end();
	snap.stack_len = got > 0 ? (size_t)got : 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (snap.maps_len < CR_UNWIND_MAPS - 1) {
		cr_slow_begin();	/* the memory-map lock (mem.c) */
		got = read(fd, snap.maps + snap.maps_len,
			   CR_UNWIND_MAPS - 1 - snap.maps_len);
		cr_slow_end();
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		snap.maps_len += (size_t)got;
	}
	close(fd);
	/* A cut list loses its last, partial line only. */
	while (snap.maps_len && snap.maps[snap.maps_len - 1] != '\n')
		snap.maps_len--;
	snap.maps[snap.maps_len] = 0;
	snap.pid = tid;
	return 0;
}

/* ---- the helper ---- */

/* Is st the inode of a mapping of the snapshot (its device and inode
 * number as the maps line gives them)? want: that mapping's; NULL: any
 * (libunwind opens a mapping's file by its name, or by
 * /proc/<pid>/root/ and the name: the name does not matter, the inode
 * does). */
static bool is_mapped(const struct stat *st, const struct mapping *want)
{
	for (size_t i = 0; i < nmappings; i++) {
		const struct mapping *m = want ? want : &mappings[i];

		if (m->maj == major(st->st_dev) && m->min == minor(st->st_dev) &&
		    m->ino == (unsigned long)st->st_ino)
			return true;
		if (want)
			break;
	}
	return false;
}

/* Opens a name the program chose: regular files only, without blocking
 * and without the side effects of opening a FIFO or a device (an O_PATH
 * look first, then a reopen of that very inode), and only the inode the
 * task mapped under that name: a link planted at a mapping's name (a
 * deleted file's "NAME (deleted)") led the helper to any file the user
 * can read, whose bytes came back as frame addresses. check false: the
 * snapshot's own maps copy. */
static long open_plain(int dirfd, const char *path, bool check,
		       const struct mapping *want)
{
	char fdpath[32] = "/proc/self/fd/";
	struct stat st;
	long p, fd;
	size_t i = strlen(fdpath);
	char digits[12];
	int nd = 0;

	p = syscall(SYS_openat, dirfd, path, O_PATH | O_CLOEXEC);
	if (p < 0)
		return -errno;
	if (syscall(SYS_fstat, p, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (check && !is_mapped(&st, want))) {
		syscall(SYS_close, p);
		return -ENXIO;
	}
	for (long v = p; nd == 0 || v; v /= 10)
		digits[nd++] = (char)('0' + v % 10);
	while (nd)
		fdpath[i++] = digits[--nd];
	fdpath[i] = 0;
	fd = syscall(SYS_openat, AT_FDCWD, fdpath,
		     O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	syscall(SYS_close, p);
	return fd;
}

/* libunwind's own opens (without O_NONBLOCK) trap here: /proc/<pid>/maps
 * is answered from the snapshot, any other name by open_plain. */
static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	const char *path = (const char *)g[REG_RSI];
	int saved = errno;
	long rc;

	if (si->si_syscall != SYS_openat) {
		g[REG_RAX] = -EPERM;
		return;
	}
	if (path && !strcmp(path, snap.maps_path)) {
		char fdpath[32];

		/* A fresh open file description, at offset 0. */
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", snap.maps_fd);
		rc = open_plain(AT_FDCWD, fdpath, false, NULL);
	} else {
		rc = path ? open_plain((int)g[REG_RDI], path, true, NULL) :
			    -EFAULT;
	}
	g[REG_RAX] = rc;
	errno = saved;
}

static void parse_maps(void)
{
	size_t cap = 0;

	for (const char *l = snap.maps; l && *l;) {
		const char *nl = strchr(l, '\n');
		struct mapping m = { 0 };
		char perms[8];
		int name = 0;

		if (sscanf(l, "%lx-%lx %7s %lx %15s %lu %n", &m.lo, &m.hi, perms,
			   &m.off, m.dev, &m.ino, &name) >= 6 && name &&
		    l[name] == '/' && m.ino && m.lo < m.hi &&
		    sscanf(m.dev, "%x:%x", &m.maj, &m.min) == 2) {
			m.name = l + name;
			m.nlen = nl ? (size_t)(nl - m.name) : strlen(m.name);
			if (nmappings == cap) {
				struct mapping *g;

				cap = cap ? cap * 2 : 64;
				g = realloc(mappings, cap * sizeof(*g));
				if (!g)
					return;
				mappings = g;
			}
			mappings[nmappings++] = m;
		}
		l = nl ? nl + 1 : NULL;
	}
}

/* Reads of the program's memory: the stack from the snapshot, anything
 * else (code, .eh_frame) from the file its mapping names, at the mapping's
 * offset, a page at a time. A write, or an address nowhere in the
 * snapshot, fails. */
static int file_read(unsigned long addr, void *out, size_t len)
{
	const struct mapping *m = NULL;
	unsigned long at, page;
	char path[4096];
	ssize_t got;

	if (!mappings)
		parse_maps();
	if (last_mapping < nmappings && addr >= mappings[last_mapping].lo &&
	    addr + len <= mappings[last_mapping].hi)
		m = &mappings[last_mapping];
	for (size_t i = 0; !m && i < nmappings; i++)
		if (addr >= mappings[i].lo && addr + len <= mappings[i].hi &&
		    addr + len > addr) {
			m = &mappings[i];
			last_mapping = i;
		}
	if (!m || m->nlen >= sizeof(path))
		return -1;
	if (snap.file_fd < 0 || snap.file_ino != m->ino ||
	    strcmp(snap.file_dev, m->dev)) {
		if (snap.file_fd >= 0)
			close(snap.file_fd);
		memcpy(path, m->name, m->nlen);
		path[m->nlen] = 0;
		snap.file_fd = (int)open_plain(AT_FDCWD, path, true, m);
		snap.file_ino = m->ino;
		snprintf(snap.file_dev, sizeof(snap.file_dev), "%s", m->dev);
		snap.page_len = 0;
		if (snap.file_fd < 0)
			return -1;
	}
	at = m->off + (addr - m->lo);
	page = at & ~4095UL;
	if (at - page + len > sizeof(snap.page))
		return pread(snap.file_fd, out, len, (off_t)at) == (ssize_t)len ?
		       0 : -1;
	if (!snap.page_len || snap.page_at != page) {
		got = pread(snap.file_fd, snap.page, sizeof(snap.page),
			    (off_t)page);
		snap.page_len = got > 0 ? (size_t)got : 0;
		snap.page_at = page;
	}
	if (at - page + len > snap.page_len)
		return -1;
	memcpy(out, snap.page + (at - page), len);
	return 0;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
		      int write, void *arg)
{
	unsigned long sp = snap.regs.rsp;

	if (write)
		return -UNW_EINVAL;
	if (addr >= sp && addr - sp + sizeof(*val) <= snap.stack_len) {
		memcpy(val, snap.stack + (addr - sp), sizeof(*val));
		return 0;
	}
	return file_read(addr, val, sizeof(*val)) ? -UNW_EINVAL : 0;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val,
		      int write, void *arg)
{
	const struct user_regs_struct *r = &snap.regs;
	static const size_t at[] = {
		[UNW_X86_64_RAX] = offsetof(struct user_regs_struct, rax),
		[UNW_X86_64_RDX] = offsetof(struct user_regs_struct, rdx),
		[UNW_X86_64_RCX] = offsetof(struct user_regs_struct, rcx),
		[UNW_X86_64_RBX] = offsetof(struct user_regs_struct, rbx),
		[UNW_X86_64_RSI] = offsetof(struct user_regs_struct, rsi),
		[UNW_X86_64_RDI] = offsetof(struct user_regs_struct, rdi),
		[UNW_X86_64_RBP] = offsetof(struct user_regs_struct, rbp),
		[UNW_X86_64_RSP] = offsetof(struct user_regs_struct, rsp),
		[UNW_X86_64_R8] = offsetof(struct user_regs_struct, r8),
		[UNW_X86_64_R9] = offsetof(struct user_regs_struct, r9),
		[UNW_X86_64_R10] = offsetof(struct user_regs_struct, r10),
		[UNW_X86_64_R11] = offsetof(struct user_regs_struct, r11),
		[UNW_X86_64_R12] = offsetof(struct user_regs_struct, r12),
		[UNW_X86_64_R13] = offsetof(struct user_regs_struct, r13),
		[UNW_X86_64_R14] = offsetof(struct user_regs_struct, r14),
		[UNW_X86_64_R15] = offsetof(struct user_regs_struct, r15),
		[UNW_X86_64_RIP] = offsetof(struct user_regs_struct, rip),
	};

	if (write || reg < 0 || (size_t)reg >= sizeof(at) / sizeof(at[0]))
		return -UNW_EBADREG;
	memcpy(val, (const char *)r + at[reg], sizeof(*val));
	return 0;
}

static int no_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
		    int write, void *arg)
{
	return -UNW_EBADREG;
}

static int no_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	return -UNW_EINVAL;
}

#define ALLOW_NR(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

/* The sanitizer build (make asan, never installed) runs its runtime's own
 * calls in the helper too (mprotect, sigaltstack, its allocator's and
 * reporter's): everything but the open and write rules passes there. */
#if defined(__SANITIZE_ADDRESS__)
#define CR_UNWIND_OTHER SECCOMP_RET_ALLOW
#else
#define CR_UNWIND_OTHER (SECCOMP_RET_ERRNO | EPERM)
#endif

/* Read-only opens: with O_NONBLOCK or O_PATH they pass, without (all of
 * libunwind's) they trap to on_sigsys; any write, create or truncate flag
 * is refused. Writes go to the answer pipe (fd 0) only. Everything else
 * fails with EPERM: sockets, signals, ptrace, exec, file changes. */
static int confine(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 6),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
			 O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE,
			 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_NONBLOCK | O_PATH, 2, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		ALLOW_NR(SYS_read), ALLOW_NR(SYS_pread64), ALLOW_NR(SYS_close),
		ALLOW_NR(SYS_fstat), ALLOW_NR(SYS_newfstatat), ALLOW_NR(SYS_lseek),
		ALLOW_NR(SYS_mmap), ALLOW_NR(SYS_munmap), ALLOW_NR(SYS_mremap),
		ALLOW_NR(SYS_brk), ALLOW_NR(SYS_madvise), ALLOW_NR(SYS_futex),
		ALLOW_NR(SYS_rt_sigreturn), ALLOW_NR(SYS_rt_sigprocmask),
		ALLOW_NR(SYS_getpid), ALLOW_NR(SYS_clock_gettime),
		ALLOW_NR(SYS_exit), ALLOW_NR(SYS_exit_group),
		BPF_STMT(BPF_RET | BPF_K, CR_UNWIND_OTHER),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

static void put(const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(0, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3);
		c += w;
		n -= (size_t)w;
	}
}

/* In the child: confine, unwind, answer; never returns. */
static void helper(int answer, pid_t parent)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	struct rlimit lim;
	sigset_t all;
	unw_accessors_t acc;
	unw_addr_space_t as;
	unw_cursor_t c;
	unsigned long vm = 0;
	char statm[64];
	void *ui;
	int fd, n = 0;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(2);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &sa, NULL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/* fd 0: the answer; 1: the maps copy; nothing else of corral's. */
	fd = memfd_create("maps", 0);
	if (fd < 0 || write(fd, snap.maps, snap.maps_len) != (ssize_t)snap.maps_len ||
	    (fd = fcntl(fd, F_DUPFD, 3)) < 0 ||
	    (answer = fcntl(answer, F_DUPFD, 3)) < 0 ||
	    dup2(answer, 0) < 0 || dup2(fd, 1) < 0 ||
	    syscall(SYS_close_range, 2, ~0U, 0) < 0)
		_exit(2);
	snap.maps_fd = 1;
	snap.file_fd = -1;
	snprintf(snap.maps_path, sizeof(snap.maps_path), "/proc/%d/maps",
		 (int)snap.pid);
	fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t got = read(fd, statm, sizeof(statm) - 1);

		statm[got > 0 ? got : 0] = 0;
		vm = strtoul(statm, NULL, 10) * 4096;
		close(fd);
	}
	lim = (struct rlimit){ 0, 0 };
	if (setrlimit(RLIMIT_CORE, &lim) < 0)
		_exit(2);
	lim = (struct rlimit){ 1, 2 };
	if (setrlimit(RLIMIT_CPU, &lim) < 0)
		_exit(2);
	lim = (struct rlimit){ 16, 16 };
	if (setrlimit(RLIMIT_NOFILE, &lim) < 0)
		_exit(2);
	lim.rlim_cur = lim.rlim_max = vm + (256UL << 20);
	if (!vm || setrlimit(RLIMIT_AS, &lim) < 0)
		_exit(2);
	/* Before any open: on_sigsys judges names against this table. */
	parse_maps();
	sa.sa_handler = NULL;
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) < 0 || confine() < 0)
		_exit(2);

	acc = *unw.accessors;
	acc.access_mem = access_mem;
	acc.access_reg = access_reg;
	acc.access_fpreg = no_fpreg;
	acc.resume = no_resume;
	as = unw.create_addr_space(&acc, 0);
	/* The _UPT state holds the pid only: its find_proc_info and
	 * get_proc_name read the maps (served from the copy) and the files
	 * they name (through on_sigsys); nothing reaches the task itself. */
	ui = as ? unw.upt_create(snap.pid) : NULL;
	if (!ui || unw.init_remote(&c, as, ui) < 0)
		_exit(1);
	do {
		unw_word_t ip = 0, off = 0;
		char fn[CR_UNWIND_NAME];
		uint64_t rec[2];
		uint32_t len = 0;

		if (unw.get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		if (unw.get_proc_name(&c, fn, sizeof(fn), &off) == 0)
			len = (uint32_t)strnlen(fn, sizeof(fn) - 1);
		rec[0] = ip;
		rec[1] = len ? off : 0;
		put(rec, sizeof(rec));
		put(&len, sizeof(len));
		put(fn, len);
	} while (++n < CR_STACK_FRAMES && unw.step(&c) > 0);
	_exit(0);
}

/* ---- the tracer's side ---- */

/* Frames of the answer, each "name+0xoff (0xip)" or "0xip"; names are
 * bytes (no NUL), escaped when the result is written. */
static int parse(const unsigned char *b, size_t len, char ***out, size_t *n)
{
	char **st = calloc(CR_STACK_FRAMES, sizeof(*st));
	size_t k = 0;

	if (!st)
		return -ENOMEM;
	while (len) {
		uint64_t rec[2];
		uint32_t nl;
		int rc;

		if (k == CR_STACK_FRAMES || len < sizeof(rec) + sizeof(nl))
			goto bad;
		memcpy(rec, b, sizeof(rec));
		memcpy(&nl, b + sizeof(rec), sizeof(nl));
		b += sizeof(rec) + sizeof(nl);
		len -= sizeof(rec) + sizeof(nl);
		if (nl >= CR_UNWIND_NAME || nl > len || memchr(b, 0, nl))
			goto bad;
		if (nl)
			rc = asprintf(&st[k], "%.*s+0x%" PRIx64 " (0x%" PRIx64 ")",
				      (int)nl, (const char *)b, rec[1], rec[0]);
		else
			rc = asprintf(&st[k], "0x%" PRIx64, rec[0]);
		if (rc < 0) {
			st[k] = NULL;
			goto bad;
		}
		k++;
		b += nl;
		len -= nl;
	}
	*out = st;
	*n = k;
	return 0;
bad:
	for (size_t i = 0; i < k; i++)
		free(st[i]);
	free(st);
	return -EPROTO;
}

int cr_unwind_take(pid_t tid, uint64_t wait_ns, char ***frames, size_t *n,
		   const char **why)
{
	unsigned char buf[CR_STACK_FRAMES * (16 + 4 + CR_UNWIND_NAME)];
	size_t len = 0;
	uint64_t deadline = cr_now_ns() + wait_ns;
	bool eof = false, late = false;
	int p[2], status = 0, rc;
	pid_t parent = getpid(), pid;

	*frames = NULL;
	*n = 0;
	*why = "libunwind is not loaded";
	if (!unw.lib)
		return -ENOENT;
	*why = "the task's registers could not be read";
	rc = snapshot(tid);
	if (rc < 0)
		goto out;
	*why = "the unwinder could not be started";
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		helper(p[1], parent);
	}
	close(p[1]);
	if (pid < 0) {
		rc = -errno;
		close(p[0]);
		goto out;
	}
	while (!eof) {
		uint64_t now = cr_now_ns();
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t got;

		if (now >= deadline) {
			late = true;
			break;
		}
		rc = poll(&pf, 1, (int)((deadline - now) / 1000000) + 1);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc <= 0)
			continue;
		got = read(p[0], buf + len, sizeof(buf) - len);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0 || len + (size_t)got == sizeof(buf))
			eof = true;	/* EOF, error, or more than it may say */
		if (got > 0)
			len += (size_t)got;
	}
	close(p[0]);
	/* Late or done, it goes now: nothing of it outlives this call. */
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
		;
	rc = -EPROTO;
	if (late)
		*why = "the unwinder timed out";
	else if (WIFSIGNALED(status))
		*why = "the unwinder crashed";
	else if (!WIFEXITED(status) || WEXITSTATUS(status) ||
		 parse(buf, len, frames, n) < 0)
		*why = "the unwinder failed";
	else if (!*n)
		*why = "the unwinder found no frame";
	else
		rc = 0;
	if (rc < 0 && *frames) {
		for (size_t i = 0; i < *n; i++)
			free((*frames)[i]);
		free(*frames);
		*frames = NULL;
		*n = 0;
	}
out:
	free(snap.stack);
	free(snap.maps);
	memset(&snap, 0, sizeof(snap));
	return rc;
}
