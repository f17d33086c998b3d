/* tracer/mem.c: reads and writes tracee memory with process_vm_readv and
 * process_vm_writev; never /proc/PID/mem, never ptrace peeks. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "tracer.h"

/* Each copy takes the tracee's memory-map lock, uninterruptibly, and a
 * program whose threads take it for writing without pause held the loop
 * in one read for tens of seconds (found by a probing session): every
 * copy is marked, so the watchdog judges the budgets and a cancel while
 * it lasts, and kills the tree on a breach, which frees the lock
 * (budget/stall.c). */
static ssize_t vm_read(pid_t pid, const struct iovec *l, const struct iovec *r)
{
	ssize_t n;

	cr_slow_begin();
	n = process_vm_readv(pid, l, 1, r, 1, 0);
	cr_slow_end();
	return n;
}

static ssize_t vm_write(pid_t pid, const struct iovec *l,
			const struct iovec *r)
{
	ssize_t n;

	cr_slow_begin();
	n = process_vm_writev(pid, l, 1, r, 1, 0);
	cr_slow_end();
	return n;
}

/* What is read here is a snapshot the tracee can change the moment after:
 * callers copy it, decide on the copy, perform the call themselves on the
 * copy, and check cr_notif_valid() before acting. */
int cr_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!len)
		return 0;
	if (!addr)
		return -EFAULT;
	n = vm_read(pid, &local, &remote);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -EFAULT;
	return (size_t)n == len ? 0 : -EFAULT;
}

int cr_mem_read_str(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	if (!addr)
		return -EFAULT;
	/* Read page by page: a string may end just before an unmapped page,
	 * and a read crossing into it would fail as a whole. */
	while (got < len) {
		uint64_t a = addr + got;
		size_t chunk = 4096 - (size_t)(a & 4095);
		struct iovec local, remote;
		ssize_t n;
		char *nul;

		if (chunk > len - got)
			chunk = len - got;
		local = (struct iovec){ .iov_base = buf + got, .iov_len = chunk };
		remote = (struct iovec){ .iov_base = (void *)(uintptr_t)a,
					 .iov_len = chunk };
		n = vm_read(pid, &local, &remote);
		if (n <= 0)
			return errno == ESRCH ? -ESRCH : -EFAULT;
		nul = memchr(buf + got, 0, (size_t)n);
		if (nul)
			return 0;
		got += (size_t)n;
	}
	buf[len - 1] = 0;
	return -ENAMETOOLONG;
}

int cr_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { .iov_base = (void *)buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!len)
		return 0;
	if (!addr)
		return -EFAULT;
	n = vm_write(pid, &local, &remote);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -EFAULT;
	return (size_t)n == len ? 0 : -EFAULT;
}

size_t cr_mem_write_prefix(pid_t pid, uint64_t addr, const void *buf,
			   size_t len)
{
	size_t put = 0;

	while (addr && put < len) {
		size_t chunk = 4096 - (size_t)((addr + put) & 4095);
		struct iovec local, remote;

		if (chunk > len - put)
			chunk = len - put;
		local = (struct iovec){ .iov_base = (char *)buf + put,
					.iov_len = chunk };
		remote = (struct iovec){ .iov_base = (void *)(uintptr_t)(addr + put),
					 .iov_len = chunk };
		if (vm_write(pid, &local, &remote) != (ssize_t)chunk)
			break;
		put += chunk;
	}
	return put;
}

size_t cr_mem_read_prefix(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		size_t chunk = 4096 - (size_t)((addr + got) & 4095);

		if (chunk > len - got)
			chunk = len - got;
		if (cr_mem_read(pid, addr + got, (char *)buf + got, chunk))
			break;
		got += chunk;
	}
	return got;
}

void *cr_mem_edge(size_t len)
{
	/* The thread's own: a value another thread put there meanwhile
	 * would reach the kernel as this call's. */
	static __thread char *base;
	const size_t room = CR_MEM_EDGE_MAX;

	if (len > room)
		return NULL;
	if (!base) {
		char *p = mmap(NULL, room + 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return NULL;
		if (mprotect(p + room, 4096, PROT_NONE) < 0) {
			munmap(p, room + 4096);
			return NULL;
		}
		base = p;
	}
	return base + room - len;
}

void *cr_mem_unreadable(void)
{
	static void *page;

	if (!page) {
		void *p = mmap(NULL, 4096, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return NULL;
		page = p;
	}
	return page;
}
