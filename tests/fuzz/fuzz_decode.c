/* tests/fuzz/fuzz_decode.c: libFuzzer target: the supervisor's decoding of
 * what a task hands it, read from task memory exactly as in a run
 * (process_vm_readv, here on this process): sockaddrs of every family and
 * length, open_how structs with their paths, msghdrs with iovecs and
 * control messages, and paths ending at a page boundary before an unmapped
 * page. The network handlers' static decoders are reached by including
 * their file; the rest of the supervisor is linked as built. */
#include "../../tracer/handlers/net.c"

#include <sys/mman.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PAGE 4096
#define REGION (2 * PAGE)	/* readable; a PROT_NONE page follows */

static uint8_t *region;
static struct cr_run run;
static int sockfds[2] = { -1, -1 };

static void setup(void)
{
	region = mmap(NULL, REGION + PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED ||
	    mprotect(region + REGION, PAGE, PROT_NONE))
		abort();
	memset(&run, 0, sizeof(run));
	run.listener = -1;	/* every notification reads as withdrawn */
	run.audit_fd = -1;
	if (cr_tasks_init(&run.tasks))
		abort();
	/* A real descriptor for SCM_RIGHTS to name (pidfd_getfd of our own). */
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sockfds))
		abort();
}

/* The payload laid so that its last byte is the last readable one: any
 * read past it faults in the kernel (EFAULT), never in our memory. */
static uint64_t place(const uint8_t *p, size_t n)
{
	if (n > REGION)
		n = REGION;
	memset(region, 0xa5, REGION);
	memcpy(region + REGION - n, p, n);
	return (uint64_t)(uintptr_t)(region + REGION - n);
}

/* An offset chosen by the input, as an address in the region or just past
 * it (the unmapped page), or 0. */
static uint64_t addr_at(uint16_t off)
{
	if (off == 0xffff)
		return 0;
	return (uint64_t)(uintptr_t)region + (off % (REGION + 64));
}

static uint16_t u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void do_sockaddr(const uint8_t *p, size_t n)
{
	union cr_sockaddr a;
	char text[256];
	uint64_t len;
	uint8_t ip[16];
	uint16_t port;

	if (n < 2)
		return;
	len = u16(p);	/* as the program declares it, maybe past the data */
	if (read_addr(getpid(), place(p + 2, n - 2), len, &a))
		return;
	if (len > sizeof(a.ss))
		abort();	/* read_addr must refuse it */
	cr_net_addr_text(&a, (socklen_t)len, text, sizeof(text));
	if (!memchr(text, 0, sizeof(text)))
		abort();
	if (a.sa.sa_family == AF_INET || a.sa.sa_family == AF_INET6)
		(void)inet_of(&a, (socklen_t)len, ip, &port);
	if (a.sa.sa_family == AF_UNIX)
		(void)is_abstract_or_unnamed(&a, (socklen_t)len);
}

static void do_openat2(const uint8_t *p, size_t n)
{
	static const struct cr_syscall_entry e = { .name = "openat2" };
	struct seccomp_notif nt = { 0 };
	struct cr_verdict v;
	uint64_t base;

	if (n < 6)
		return;
	/* [size:2][path offset:2][how offset:2][bytes...] */
	base = place(p + 6, n - 6);
	nt.pid = (uint32_t)getpid();
	nt.data.args[0] = (uint64_t)AT_FDCWD;
	nt.data.args[1] = u16(p + 2) == 0xffff ? 0 :
			  base + u16(p + 2) % (n - 6 + 1);
	nt.data.args[2] = u16(p + 4) == 0xffff ? 0 :
			  base + u16(p + 4) % (n - 6 + 1);
	nt.data.args[3] = u16(p);
	v = cr_h_openat2(&run, &e, &nt);
	/* No notification is live: nothing may be performed or continued. */
	if (v.kind != CR_V_ERRNO)
		abort();
}

static void do_path(const uint8_t *p, size_t n)
{
	char buf[PATH_MAX];
	size_t cap;
	int rc;

	if (n < 2)
		return;
	cap = 1 + u16(p) % sizeof(buf);
	rc = cr_mem_read_str(getpid(), place(p + 2, n - 2), buf, cap);
	if (rc == 0 || rc == -ENAMETOOLONG) {
		size_t l = strnlen(buf, cap);

		if (l >= cap)
			abort();	/* always terminated */
		if (memcmp(buf, region + REGION - (n - 2 > REGION ? REGION :
						   n - 2), l))
			abort();	/* exactly what the task holds */
	}
}

static void do_msghdr(const uint8_t *p, size_t n)
{
	struct cr_net_msg m = { .dup = -1 };
	struct msghdr h = { 0 };
	union cr_sockaddr a;
	uint64_t hp, iovp;
	size_t niov;
	int rc;

	/* [name off:2][namelen:2][iov off:2][iovlen:1][ctl off:2][ctllen:2]
	 * [dgram:1] then up to 8 iov (off:2, len:2), then the raw bytes. */
	if (n < 12)
		return;
	place(p + 12, n - 12);
	niov = p[6];
	iovp = addr_at(u16(p + 4));
	/* Lay sane iovecs where the input says, when they fit. */
	if (niov && niov <= 8 && iovp &&
	    iovp + niov * sizeof(struct iovec) <=
	    (uint64_t)(uintptr_t)region + REGION &&
	    !(iovp & 7)) {
		struct iovec *v = (struct iovec *)(uintptr_t)iovp;

		for (size_t i = 0; i < niov && 12 + 4 * i + 4 <= n; i++) {
			v[i].iov_base = (void *)(uintptr_t)addr_at(
				u16(p + 12 + 4 * i));
			v[i].iov_len = u16(p + 14 + 4 * i);
		}
	}
	h.msg_name = (void *)(uintptr_t)addr_at(u16(p));
	h.msg_namelen = u16(p + 2) % 200;
	h.msg_iov = (void *)(uintptr_t)iovp;
	h.msg_iovlen = niov;
	h.msg_control = (void *)(uintptr_t)addr_at(u16(p + 7));
	h.msg_controllen = u16(p + 9);
	/* SCM_RIGHTS numbers: make a few name a descriptor we hold. */
	if (h.msg_control && h.msg_controllen >= CMSG_LEN(sizeof(int)) &&
	    (uint64_t)(uintptr_t)h.msg_control + CMSG_LEN(sizeof(int)) <=
	    (uint64_t)(uintptr_t)region + REGION &&
	    !((uintptr_t)h.msg_control & 7) && (p[11] & 2)) {
		struct cmsghdr *c = h.msg_control;

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &sockfds[0], sizeof(int));
	}
	/* The msghdr itself, as the program hands it, at the region's end. */
	hp = (uint64_t)(uintptr_t)region + REGION - sizeof(h);
	memcpy((void *)(uintptr_t)hp, &h, sizeof(h));
	rc = cr_mem_read(getpid(), hp, &h, sizeof(h));
	if (rc)
		abort();
	if (h.msg_name && h.msg_namelen)
		(void)read_addr(getpid(), (uint64_t)(uintptr_t)h.msg_name,
				h.msg_namelen, &a);
	rc = gather(getpid(), (uint64_t)(uintptr_t)h.msg_iov, h.msg_iovlen,
		    p[11] & 1, &m);
	if (!rc && m.iov.iov_len > ((p[11] & 1) ? DGRAM_CAP : STREAM_CAP))
		abort();
	if (!rc)
		rc = control_copy(&run, getpid(),
				  (uint64_t)(uintptr_t)h.msg_control,
				  h.msg_controllen, &m);
	if (!rc && m.nfds && !m.control)
		abort();
	cr_net_msg_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!region)
		setup();
	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0: do_sockaddr(data + 1, size - 1); break;
	case 1: do_openat2(data + 1, size - 1); break;
	case 2: do_path(data + 1, size - 1); break;
	default: do_msghdr(data + 1, size - 1); break;
	}
	return 0;
}
