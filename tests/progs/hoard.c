/* tests/progs/hoard.c: holds storage where no walk of the roots and no RSS
 * sees it (sockets' queues, mappings, /dev/shm), or passes fds as workers do.
 *
 *   hoard files MIB COUNT     COUNT files of MIB MiB (fallocate) in the cwd,
 *                             each sent over SCM_RIGHTS to a socket of its
 *                             own that never reads, then closed and unlinked
 *   hoard memfd MIB COUNT     the same with memfds
 *   hoard nested MIB          a file sent into socket pair B, one end of B
 *                             sent into pair C, B's ends and the file closed
 *                             and unlinked, then filled with MIB MiB through
 *                             a mapping, which is then unmapped
 *   hoard mapped MIB          a file mapped, the fd closed, the file
 *                             unlinked, then MIB MiB written through the
 *                             mapping
 * (nested and mapped fill the file once it is hidden: an allocation is
 * charged as it is made, so only data written where no fd table shows it
 * tests what they are for)
 *   hoard shm NAME MIB        /dev/shm/NAME filled with MIB MiB
 *   hoard sockbuf N           N unix socket pairs, each filled one way as far
 *                             as the kernel lets (SO_SNDBUF raised)
 *   hoard sockflight N        the same, then both ends of every pair sent
 *                             into a carrier pair and closed
 *   hoard udp N               N UDP sockets on 127.0.0.1, SO_RCVBUF raised,
 *                             each receive queue filled (about 4 MiB) from
 *                             one sender that is never read
 *   hoard udpclose N          the same, each receiver closed once filled,
 *                             the sender at the end
 *   hoard tcp N               a TCP listener on 127.0.0.1 that never
 *                             accepts, and N clients, SO_SNDBUF raised,
 *                             each writing until the connection is full
 *                             (192 MiB in all at most)
 *   hoard tcpback N           the same with the listener's SO_RCVBUF raised
 *                             and the clients' SO_SNDBUF at its least: the
 *                             bytes wait in connections not accepted yet
 *   hoard tcpmap N            as tcp, each client mapped (PROT_READ, its
 *                             zero-copy receive) and its descriptor closed
 *                             once full: only the mapping holds it
 *   hoard tcpbackmap N        as tcpback, the listener then mapped and
 *                             closed
 *   hoard blocksend N         N loopback clients, SO_SNDBUF raised, each with
 *                             a thread blocked in a 64 MiB send (its peer
 *                             accepted, reading nothing), the client's
 *                             descriptor then closed: the blocked call
 *                             alone holds the socket and its queue
 *   hoard starve K N          K processes of 65 000 mappings each (dear
 *                             maps files), then, forked until its tid's
 *                             slot in corral's task table (256 slots at
 *                             first) lies beyond theirs, a process that
 *                             waits to be counted empty and then does
 *                             tcpmap N
 *   hoard epoll N M           N epoll instances, each watching the same M
 *                             descriptors (dups of one pipe's end): kernel
 *                             memory per watch, nothing resident
 *   hoard dgramclosed N       N unix datagram socket pairs, the sender's
 *                             SO_SNDBUF raised, filled until EAGAIN, then
 *                             the sender closed: the datagrams wait at the
 *                             receiver, charged to a closed socket
 *   hoard unixpend N          a unix stream listener that never accepts,
 *                             N clients, SO_SNDBUF raised, each filling its
 *                             connection and closing: the bytes wait in
 *                             connections no descriptor names
 *   hoard relay PORT N        N connections to 127.0.0.1:PORT (a server
 *                             outside that never reads, reached through
 *                             corral's proxy), SO_SNDBUF at 4 KiB, filled
 *                             in turn until none moves for a second: the
 *                             bytes wait in the proxy's buffers
 *   hoard ptables GIB         page tables without resident pages: one byte
 *                             read per 2 MiB of a GIB GiB PROT_READ mapping,
 *                             each page dropped again (MADV_DONTNEED)
 *   hoard sparse PROCS N      page tables as large as the address space:
 *                             PROCS processes, each mapping N single pages
 *                             one per 2 MiB (each its own page-table page),
 *                             each read and dropped; a few MiB of address
 *                             space make MiBs of tables
 *   hoard maps PROCS N        mappings' kernel memory: PROCS processes,
 *                             each splitting one PROT_NONE reservation
 *                             into N single-page mappings (every other
 *                             page made readable), nothing resident
 *   hoard locks FILES N [ofd|pidfd] byte-range locks' kernel memory:
 *                             FILES files, each with N one-byte locks
 *                             (every other byte), POSIX or OFD; nothing
 *                             resident. pidfd: POSIX locks on pidfds of
 *                             reaped children (one inode each)
 *   hoard lockchurn N         known good: N lock and unlock calls on one
 *                             byte of one file (a database's pattern);
 *                             prints "churn ok N"
 *   hoard objects KIND PROCS N  open files' own kernel memory: PROCS
 *                             processes, each holding N objects of KIND
 *                             (tcp, udp: unbound sockets; unixpair; eventfd;
 *                             devnull: opens of /dev/null)
 *   hoard md5 NSOCK NKEYS     option memory: NSOCK unbound TCP sockets, each
 *                             given NKEYS TCP-MD5 keys (one per peer)
 *   hoard md5map NSOCK NKEYS  the same, each socket mapped and its
 *                             descriptor closed
 *   hoard backlog KIND L C    L listeners (tcp on 127.0.0.1; tcpmap, the
 *                             same, each then mapped and closed; or unix), C
 *                             clients each that connect and close: the
 *                             connections wait unaccepted, no descriptor
 *   hoard filters THREADS     seccomp filters of the program's own: each
 *                             of THREADS threads stacks allow-all filters
 *                             of 4 090 instructions until the kernel's
 *                             path limit (seven)
 *   hoard rules N             Landlock rules: N path-beneath rules on
 *                             entries of /usr/lib, 1 000 to a ruleset
 *   hoard fdtables N          fd tables: a descriptor numbered 16 383
 *                             (or the limit's last) makes the table whole,
 *                             then N threads each unshare(CLONE_FILES)
 *   hoard inflight N          N unbound TCP sockets, each given 300
 *                             TCP-MD5 keys, sent over SCM_RIGHTS into a
 *                             unix datagram pair nobody reads and closed
 *   hoard threads N           N threads on the smallest stacks, each
 *                             waiting: kernel stacks and task descriptors
 *                             (~24 KiB a task) for a few KiB of RSS
 *   hoard unlinked N          N empty files created, kept open, unlinked
 *   hoard pass N MIB          known good: N times, a worker receives a
 *                             socket and an unlinked file of MIB MiB over
 *                             SCM_RIGHTS, answers through the socket with
 *                             the file's first byte, and closes both;
 *                             prints "pass ok N"
 *
 * Hostile modes print "held N" (MiB) and wait, so corral, not the program,
 * ends the run. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <dirent.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1L << 20)

static int send_fd(int sock, int fd)
{
	char c[CMSG_SPACE(sizeof(int))];
	struct iovec v = { .iov_base = "x", .iov_len = 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1,
			    .msg_control = c, .msg_controllen = sizeof(c) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);

	memset(c, 0, sizeof(c));
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char c[CMSG_SPACE(sizeof(int))], b;
	struct iovec v = { .iov_base = &b, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1,
			    .msg_control = c, .msg_controllen = sizeof(c) };
	struct cmsghdr *h;
	int fd;

	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	h = CMSG_FIRSTHDR(&m);
	if (!h || h->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(h), sizeof(int));
	return fd;
}

static void hold(void)
{
	fflush(stdout);
	for (;;)
		pause();
}

static int filled(const char *name, long mib, bool memfd)
{
	int fd = memfd ? memfd_create(name, 0) :
		 open(name, O_RDWR | O_CREAT | O_EXCL, 0600);

	if (fd < 0 || fallocate(fd, 0, 0, mib * MIB) < 0) {
		printf("fill %s: %s\n", name, strerror(errno));
		exit(1);
	}
	return fd;
}

static void hoard(long mib, long count, bool memfd)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		exit(1);
	for (long i = 0; i < count; i++) {
		char name[32];
		int fd, rc;

		snprintf(name, sizeof(name), "hoard.%ld", i);
		fd = filled(name, mib, memfd);
		rc = send_fd(sv[0], fd);
		close(fd);
		if (!memfd)
			unlink(name);
		if (rc) {
			printf("send: %s\n", strerror(-rc));
			hold();
		}
		printf("held %ld\n", (i + 1) * mib);
		fflush(stdout);
		usleep(100000);
	}
	hold();
}

/* A sparse file of mib MiB, mapped shared and writable: nothing is
 * allocated until the mapping is written. */
static char *sparse_map(const char *name, long mib, int *fdp)
{
	int fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	char *p;

	if (fd < 0 || ftruncate(fd, mib * MIB) < 0) {
		printf("sparse %s: %s\n", name, strerror(errno));
		exit(1);
	}
	p = mmap(NULL, (size_t)mib * MIB, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED)
		exit(1);
	*fdp = fd;
	return p;
}

static void nested(long mib)
{
	int b[2], c[2], fd;
	char *p = sparse_map("nested", mib, &fd);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, b) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, c) < 0 ||
	    send_fd(b[0], fd) || send_fd(c[0], b[1]))
		exit(1);
	close(fd);
	unlink("nested");
	close(b[0]);
	close(b[1]);
	memset(p, 'n', (size_t)mib * MIB);
	msync(p, (size_t)mib * MIB, MS_SYNC);
	munmap(p, (size_t)mib * MIB);
	printf("held %ld\n", mib);
	hold();
}

static void mapped(long mib)
{
	int fd;
	char *p = sparse_map("mapped", mib, &fd);

	close(fd);
	unlink("mapped");
	memset(p, 'm', (size_t)mib * MIB);
	msync(p, (size_t)mib * MIB, MS_SYNC);
	printf("held %ld\n", mib);
	hold();
}

static void shm(const char *name, long mib)
{
	char path[300];
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || fallocate(fd, 0, 0, mib * MIB) < 0) {
		printf("shm: %s\n", strerror(errno));
		exit(1);
	}
	printf("held %ld\n", mib);
	hold();
}

static long fill_pair(int s[2])
{
	static char buf[1 << 16];
	int big = 8 << 20;
	long bytes = 0;
	ssize_t w;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s) < 0)
		return -1;
	setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	while ((w = write(s[0], buf, sizeof(buf))) > 0)
		bytes += w;
	return bytes;
}

static void sockbuf(long n, bool flight)
{
	int carrier[2];
	long bytes = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, carrier) < 0)
		exit(1);
	for (long i = 0; i < n; i++) {
		int s[2];
		long b = fill_pair(s);

		if (b < 0) {
			printf("socketpair: %s\n", strerror(errno));
			hold();
		}
		bytes += b;
		if (flight) {
			if (send_fd(carrier[0], s[0]) || send_fd(carrier[0], s[1])) {
				printf("send: %s\n", strerror(errno));
				hold();
			}
			close(s[0]);
			close(s[1]);
		}
		if (i % 16 == 15)
			printf("held %ld\n", bytes >> 20);
	}
	printf("held %ld\n", bytes >> 20);
	hold();
}

/* 64 datagrams of 65000 bytes per receiver: its 4 MiB queue full (the
 * kernel drops what does not fit). */
static void udp(long n, bool closeall)
{
	static char buf[65000];
	int big = 2 << 20, *rs = calloc((size_t)n, sizeof(int));
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	long bytes = 0, i;

	if (!rs || s < 0) {
		printf("socket: %s\n", strerror(errno));
		hold();
	}
	for (i = 0; i < n; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t l = sizeof(a);

		rs[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (rs[i] < 0 ||
		    setsockopt(rs[i], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)) ||
		    bind(rs[i], (struct sockaddr *)&a, sizeof(a)) ||
		    getsockname(rs[i], (struct sockaddr *)&a, &l)) {
			printf("receiver %ld: %s\n", i, strerror(errno));
			hold();
		}
		for (int k = 0; k < 64; k++) {
			if (sendto(s, buf, sizeof(buf), 0, (struct sockaddr *)&a,
				   sizeof(a)) < 0) {
				printf("sendto: %s\n", strerror(errno));
				hold();
			}
			bytes += (long)sizeof(buf);
		}
		if (closeall)
			close(rs[i]);
		if (i % 8 == 7)
			printf("held %ld\n", bytes >> 20);
	}
	if (closeall) {
		close(s);
		printf("closed\n");
	}
	printf("held %ld\n", bytes >> 20);
	hold();
}

/* Keep the socket by a mapping only: TCP maps its receive queue for
 * zero-copy reads, and the mapping holds the file. */
static void map_and_close(int fd)
{
	if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) {
		printf("mmap: %s\n", strerror(errno));
		hold();
	}
	close(fd);
}

static void tcp(long n, bool back, bool map)
{
	static char buf[1 << 16];
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int big = 4 << 20, small = 1, lsn = socket(AF_INET, SOCK_STREAM, 0);
	long bytes = 0;

	if (back)
		setsockopt(lsn, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (lsn < 0 || bind(lsn, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lsn, (int)n) || getsockname(lsn, (struct sockaddr *)&a, &l)) {
		printf("listener: %s\n", strerror(errno));
		hold();
	}
	for (long i = 0; i < n && bytes < 192 * MIB; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		ssize_t w;

		if (c < 0 ||
		    setsockopt(c, SOL_SOCKET, SO_SNDBUF, back ? &small : &big,
			       sizeof(big)) ||
		    connect(c, (struct sockaddr *)&a, sizeof(a)) ||
		    fcntl(c, F_SETFL, O_NONBLOCK)) {
			printf("client %ld: %s\n", i, strerror(errno));
			hold();
		}
		while (bytes < 192 * MIB &&
		       (w = write(c, buf, sizeof(buf))) > 0)
			bytes += w;
		if (map && !back)
			map_and_close(c);
		if (i % 4 == 3)
			printf("held %ld\n", bytes >> 20);
	}
	if (map && back)
		map_and_close(lsn);
	printf("held %ld\n", bytes >> 20);
	hold();
}

static void *send_all(void *arg)
{
	static char *big;
	int fd = (int)(long)arg;

	if (!big)
		big = mmap(NULL, 64 * MIB, PROT_READ,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (big != MAP_FAILED)
		(void)send(fd, big, 64 * MIB, 0);
	return NULL;
}

static void blocksend(long n)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int big = 8 << 20, small = 4096, lsn = socket(AF_INET, SOCK_STREAM, 0);

	send_all((void *)-1L);	/* the buffer, mapped once */
	setsockopt(lsn, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (lsn < 0 || bind(lsn, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lsn, (int)n) || getsockname(lsn, (struct sockaddr *)&a, &l)) {
		printf("listener: %s\n", strerror(errno));
		hold();
	}
	for (long i = 0; i < n; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		pthread_attr_t at;
		pthread_t t;

		if (c < 0 ||
		    setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)) ||
		    connect(c, (struct sockaddr *)&a, sizeof(a)) ||
		    accept(lsn, NULL, NULL) < 0) {
			printf("client %ld: %s\n", i, strerror(errno));
			hold();
		}
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 65536);
		if (pthread_create(&t, &at, send_all, (void *)(long)c)) {
			printf("thread %ld\n", i);
			hold();
		}
		usleep(100000);	/* its send is blocked, the queue full */
		close(c);
	}
	printf("held %ld\n", n * 8);
	hold();
}

/* corral's task table slot of a tid (tracer/tasks.c slot_of, 256 slots). */
static size_t task_slot(pid_t tid)
{
	return ((size_t)tid * 2654435761u) & 255;
}

static void many_maps(void)
{
	long pg = sysconf(_SC_PAGESIZE), m = 65000;
	char *p = mmap(NULL, (size_t)(2 * m * pg), PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	for (long i = 0; p != MAP_FAILED && i < m; i++)
		if (mprotect(p + 2 * i * pg, (size_t)pg, PROT_READ))
			break;
	for (;;)
		pause();
}

static void starve(long k, long n)
{
	size_t top = 0;

	/* Holders in the table's first three quarters, so that a slot
	 * beyond them exists (one in a slot past 253 left none: the loop
	 * below forked until the cpu limit). */
	for (long i = 0; i < k; i++) {
		pid_t h = fork();

		if (h == 0) {
			if (task_slot(getpid()) >= 192)
				_exit(0);
			many_maps();
		}
		if (h > 0 && task_slot(h) >= 192) {
			waitpid(h, NULL, 0);
			i--;
			continue;
		}
		if (h > 0 && task_slot(h) > top)
			top = task_slot(h);
	}
	sleep(3);
	for (;;) {
		int go[2];
		char x = 'n';
		pid_t v;

		if (pipe(go))
			hold();
		v = fork();
		if (v == 0) {
			close(go[1]);
			if (read(go[0], &x, 1) == 1 && x == 'y') {
				sleep(2);	/* counted once, empty */
				tcp(n, false, true);
			}
			_exit(0);
		}
		close(go[0]);
		x = v > 0 && task_slot(v) > top + 2 ? 'y' : 'n';
		if (write(go[1], &x, 1) != 1 || x == 'y') {
			close(go[1]);
			hold();
		}
		close(go[1]);
		waitpid(v, NULL, 0);
	}
}

static void epolls(long n, long m)
{
	struct rlimit rl;
	int p[2], *fds;
	long made = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	fds = calloc((size_t)m, sizeof(*fds));
	if (!fds || pipe(p)) {
		printf("pipe: %s\n", strerror(errno));
		hold();
	}
	for (long i = 0; i < m; i++)
		if ((fds[i] = dup(p[0])) < 0) {
			printf("dup: %s\n", strerror(errno));
			hold();
		}
	for (long e = 0; e < n; e++) {
		int ep = epoll_create1(0);

		for (long i = 0; ep >= 0 && i < m; i++) {
			struct epoll_event ev = { .events = EPOLLIN };

			if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0)
				break;
			made++;
		}
	}
	printf("held %ld\n", made * 208 >> 20);
	fflush(stdout);
	hold();
}

static int lock_byte(int fd, int cmd, short type, off_t at)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = at, .l_len = 1 };

	return fcntl(fd, cmd, &fl);
}

/* A pidfd of a child already reaped: made with CLONE_FILES, so its exit
 * closes nothing of ours (and walks no lock list of ours). */
static int reaped_pidfd(void)
{
	pid_t c = (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
	int fd;

	if (c == 0)
		syscall(SYS_exit, 0);
	if (c < 0)
		return -1;
	fd = (int)syscall(SYS_pidfd_open, c, 0);
	waitpid(c, NULL, 0);
	return fd;
}

static void locks(long files, long n, const char *how)
{
	bool ofd = how && !strcmp(how, "ofd");
	bool pidfd = how && !strcmp(how, "pidfd");
	int cmd = ofd ? F_OFD_SETLK : F_SETLK;
	long made = 0;

	for (long f = 0; f < files; f++) {
		char name[32];
		int fd;

		snprintf(name, sizeof(name), "lock%ld", f);
		fd = pidfd ? reaped_pidfd() :
		     open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			printf("open: %s\n", strerror(errno));
			break;
		}
		for (long i = 0; i < n; i++, made++)
			if (lock_byte(fd, cmd, F_WRLCK, 2 * i) < 0) {
				printf("lock: %s\n", strerror(errno));
				hold();
			}
	}
	printf("held %ld\n", made * 195 >> 20);
	hold();
}

static void lockchurn(long n)
{
	int fd = open("churn", O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	for (long i = 0; fd >= 0 && i < n; i++)
		if (lock_byte(fd, F_SETLK, F_WRLCK, 0) < 0 ||
		    lock_byte(fd, F_SETLK, F_UNLCK, 0) < 0) {
			printf("churn: %s at %ld\n", strerror(errno), i);
			return;
		}
	printf(fd < 0 ? "churn: open failed\n" : "churn ok %ld\n", n);
}

static void nofile_max(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int object(const char *kind)
{
	int sv[2];

	if (!strcmp(kind, "tcp"))
		return socket(AF_INET, SOCK_STREAM, 0);
	if (!strcmp(kind, "udp"))
		return socket(AF_INET, SOCK_DGRAM, 0);
	if (!strcmp(kind, "eventfd"))
		return eventfd(0, 0);
	if (!strcmp(kind, "devnull"))
		return open("/dev/null", O_RDONLY);
	if (!strcmp(kind, "unixpair"))
		return socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ? -1 : sv[0];
	errno = EINVAL;
	return -1;
}

static void objects(const char *kind, long procs, long n)
{
	nofile_max();
	for (long p = 0; p < procs; p++) {
		pid_t pid = fork();

		if (pid < 0) {
			printf("fork: %s\n", strerror(errno));
			break;
		}
		if (pid)
			continue;
		for (long i = 0; i < n; i++)
			if (object(kind) < 0) {
				printf("%s %ld: %s\n", kind, i, strerror(errno));
				break;
			}
		hold();
	}
	printf("held %ld\n", procs * n * 4 >> 10);
	hold();
}

static void md5keys(long nsock, long nkeys, bool map)
{
	long keys = 0;

	nofile_max();
	for (long s = 0; s < nsock; s++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		for (long k = 0; fd >= 0 && k < nkeys; k++, keys++) {
			struct tcp_md5sig m = { .tcpm_keylen = 64 };
			struct sockaddr_in *a = (struct sockaddr_in *)&m.tcpm_addr;

			a->sin_family = AF_INET;
			a->sin_addr.s_addr = htonl(0x0a000000u | (uint32_t)k);
			memset(m.tcpm_key, 'k', 64);
			if (setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG, &m, sizeof(m)))
				break;	/* this socket's option memory is full */
		}
		if (fd >= 0 && map)
			map_and_close(fd);
	}
	printf("held %ld\n", keys * 190 >> 20);
	hold();
}

static void backlog(const char *kind, long l, long c)
{
	bool map = !strcmp(kind, "tcpmap");
	bool tcp = map || !strcmp(kind, "tcp");
	long made = 0;

	for (long i = 0; i < l; i++) {
		struct sockaddr_storage ss = { 0 };
		socklen_t sl = sizeof(ss);
		int s = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM, 0);

		if (tcp) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;

			a->sin_family = AF_INET;
			a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			sl = sizeof(*a);
		} else {
			struct sockaddr_un *a = (struct sockaddr_un *)&ss;

			a->sun_family = AF_UNIX;
			snprintf(a->sun_path, sizeof(a->sun_path), "b%ld.sock", i);
			sl = sizeof(*a);
		}
		if (s < 0 || bind(s, (struct sockaddr *)&ss, sl) ||
		    listen(s, 4096) ||
		    getsockname(s, (struct sockaddr *)&ss, &sl)) {
			printf("listener: %s\n", strerror(errno));
			hold();
		}
		for (long k = 0, waits = 0; k < c; k++) {
			int fd = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM, 0);

			if (fd < 0)
				break;
			if (connect(fd, (struct sockaddr *)&ss, sl)) {
				close(fd);
				/* corral holds a unix client until it is
				 * accepted, a few thousand at most: closed
				 * ones are let go at its next fd scan. */
				if (errno == EAGAIN && waits++ < 200) {
					usleep(50000);
					k--;
					continue;
				}
				break;	/* this backlog is full */
			}
			close(fd);
			made++;
		}
		if (map)
			map_and_close(s);
	}
	printf("held %ld\n", made * 4 >> 10);
	hold();
}

static void *stack_filters(void *arg)
{
	static struct sock_filter ins[4090];
	struct sock_fprog fp = { .len = 4090, .filter = ins };
	long *made = arg;

	for (int i = 0; i < 4089; i++)	/* jumps to the next */
		ins[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0);
	ins[4089] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						 SECCOMP_RET_ALLOW);
	while (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) == 0)
		__atomic_add_fetch(made, 1, __ATOMIC_RELAXED);
	for (;;)
		pause();
	return NULL;
}

static void filters(long threads)
{
	static long made;

	for (long i = 0; i < threads; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, stack_filters, &made))
			break;
	}
	sleep(1);
	printf("held %ld\n", __atomic_load_n(&made, __ATOMIC_RELAXED) * 88 >> 10);
	hold();
}

static void rules(long n)
{
	struct landlock_ruleset_attr ra = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE,
	};
	int fds[1000], nf = 0;
	long made = 0;
	DIR *d = opendir("/usr/lib");
	struct dirent *de;

	while (d && nf < 1000 && (de = readdir(d)))
		if (de->d_name[0] != '.' &&
		    (fds[nf] = openat(dirfd(d), de->d_name,
				      O_PATH | O_CLOEXEC)) >= 0)
			nf++;
	while (nf && made < n) {
		int rs = (int)syscall(SYS_landlock_create_ruleset, &ra,
				      sizeof(ra), 0);

		if (rs < 0) {
			printf("ruleset: %s\n", strerror(errno));
			break;
		}
		for (int i = 0; i < nf && made < n; i++, made++) {
			struct landlock_path_beneath_attr pb = {
				.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE,
				.parent_fd = fds[i],
			};

			if (syscall(SYS_landlock_add_rule, rs,
				    LANDLOCK_RULE_PATH_BENEATH, &pb, 0)) {
				printf("rule: %s\n", strerror(errno));
				hold();
			}
		}
	}
	printf("held %ld\n", made * 110 >> 20);
	hold();
}

static void *own_table(void *arg)
{
	long *made = arg;

	if (unshare(CLONE_FILES) == 0)
		__atomic_add_fetch(made, 1, __ATOMIC_RELAXED);
	for (;;)
		pause();
	return NULL;
}

static void fdtables(long n)
{
	static long made;
	struct rlimit rl;
	rlim_t top = 16383;
	pthread_attr_t at;

	nofile_max();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur - 1 < top)
		top = rl.rlim_cur - 1;
	if (dup2(0, (int)top) < 0) {
		printf("dup2: %s\n", strerror(errno));
		hold();
	}
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 << 10);
	for (long i = 0; i < n; i++) {
		pthread_t th;

		if (pthread_create(&th, &at, own_table, &made))
			break;
	}
	sleep(1);
	printf("held %ld\n",
	       __atomic_load_n(&made, __ATOMIC_RELAXED) * (long)top * 8 >> 20);
	hold();
}

static void inflight(long n)
{
	int sv[2] = { -1, -1 };
	long sent = 0;

	nofile_max();
	for (long i = 0; i < n; i++) {
		char byte = 'x', ctl[CMSG_SPACE(sizeof(int))] = { 0 };
		struct iovec io = { .iov_base = &byte, .iov_len = 1 };
		struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1,
				    .msg_control = ctl,
				    .msg_controllen = sizeof(ctl) };
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (i % 200 == 0 &&
		    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
			break;
		for (long k = 0; fd >= 0 && k < 300; k++) {
			struct tcp_md5sig md = { .tcpm_keylen = 64 };
			struct sockaddr_in *a = (struct sockaddr_in *)&md.tcpm_addr;

			a->sin_family = AF_INET;
			a->sin_addr.s_addr = htonl(0x0a000000u | (uint32_t)k);
			memset(md.tcpm_key, 'k', 64);
			if (setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG, &md,
				       sizeof(md)))
				break;
		}
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fd, sizeof(fd));
		if (fd < 0 || sendmsg(sv[0], &m, 0) < 0) {
			printf("send %ld: %s\n", i, strerror(errno));
			hold();
		}
		close(fd);
		sent++;
	}
	printf("held %ld\n", sent * 60 >> 10);
	hold();
}

static void dgramclosed(long n)
{
	static char buf[60000];
	int big = 1 << 30;
	long bytes = 0;

	for (long i = 0; i < n; i++) {
		int sv[2];
		ssize_t w;

		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv)) {
			printf("pair %ld: %s\n", i, strerror(errno));
			hold();
		}
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		while ((w = send(sv[0], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			bytes += w;
		close(sv[0]);	/* sv[1] kept, never read */
	}
	printf("held %ld\n", bytes >> 20);
	fflush(stdout);
	hold();
}

static void unixpend(long n)
{
	static char buf[1 << 16];
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int big = 4 << 20, lsn = socket(AF_UNIX, SOCK_STREAM, 0);
	long bytes = 0;

	snprintf(a.sun_path, sizeof(a.sun_path), "pend.sock");
	unlink(a.sun_path);
	if (lsn < 0 || bind(lsn, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lsn, (int)n)) {
		printf("listener: %s\n", strerror(errno));
		hold();
	}
	for (long i = 0; i < n; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		ssize_t w;

		if (c < 0 ||
		    setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)) ||
		    connect(c, (struct sockaddr *)&a, sizeof(a))) {
			printf("client %ld: %s\n", i, strerror(errno));
			hold();
		}
		while ((w = write(c, buf, sizeof(buf))) > 0)
			bytes += w;
		close(c);
	}
	printf("held %ld\n", bytes >> 20);
	fflush(stdout);
	hold();
}

static void relay(long port, long n)
{
	static char buf[1 << 16];
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct pollfd p[256];
	int small = 4096;
	long bytes = 0;

	if (n > 256)
		n = 256;
	for (long i = 0; i < n; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);

		if (c < 0 ||
		    setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) ||
		    connect(c, (struct sockaddr *)&a, sizeof(a)) ||
		    fcntl(c, F_SETFL, O_NONBLOCK)) {
			printf("client %ld: %s\n", i, strerror(errno));
			hold();
		}
		p[i] = (struct pollfd){ .fd = c, .events = POLLOUT };
	}
	while (poll(p, (nfds_t)n, 1000) > 0)
		for (long i = 0; i < n; i++) {
			ssize_t w;

			if ((p[i].revents & POLLOUT) &&
			    (w = send(p[i].fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
				bytes += w;
		}
	printf("held %ld\n", bytes >> 20);
	fflush(stdout);
	hold();
}

static void ptables(long gib)
{
	size_t len = (size_t)gib << 30;
	char *p = mmap(NULL, len, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	volatile char sink;

	if (p == MAP_FAILED) {
		printf("mmap: %s\n", strerror(errno));
		exit(1);
	}
	for (size_t o = 0; o < len; o += 2 << 20) {
		sink = p[o];
		madvise(p + o, 4096, MADV_DONTNEED);
		if (o % (64ul << 30) == 0)
			printf("held %zu\n", o >> 20 >> 9 << 2);
	}
	(void)sink;
	printf("held %zu\n", len >> 21 << 12 >> 20);
	hold();
}

/* procs processes in all, this one among them, each going on from here. */
static void fork_into(long procs)
{
	for (long i = 1; i < procs; i++) {
		pid_t p = fork();

		if (p < 0) {
			printf("fork: %s\n", strerror(errno));
			exit(1);
		}
		if (p == 0)
			break;
	}
}

static void sparse(long procs, long n)
{
	/* High in the address space, clear of the heap and libraries. */
	char *const base = (char *)(0x100000000000ul);
	volatile char sink;
	long made = 0;

	fork_into(procs);
	for (long k = 0; k < n; k++) {
		char *a = base + ((size_t)k << 21);
		char *m = mmap(a, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
			       MAP_FIXED_NOREPLACE, -1, 0);

		if (m == MAP_FAILED)
			break;
		sink = *m;
		madvise(m, 4096, MADV_DONTNEED);
		made++;
	}
	(void)sink;
	printf("held %ld\n", made * 4096 >> 20);
	fflush(stdout);
	hold();
}

static void maps(long procs, long n)
{
	const size_t pg = 4096;
	char *base;
	long made = 0;

	fork_into(procs);
	base = mmap(NULL, (size_t)n * 2 * pg, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		printf("mmap: %s\n", strerror(errno));
		exit(1);
	}
	for (long k = 0; k < n; k++) {
		if (mprotect(base + (size_t)k * 2 * pg, pg, PROT_READ) < 0)
			break;	/* ENOMEM: vm.max_map_count reached */
		made++;
	}
	printf("held %ld\n", made * 256 >> 20);
	fflush(stdout);
	hold();
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void threads(long n)
{
	pthread_attr_t a;
	long made = 0;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN);
	for (long i = 0; i < n; i++) {
		pthread_t th;

		if (pthread_create(&th, &a, idle_thread, NULL))
			break;
		made++;
	}
	printf("held %ld\n", made * 24 >> 10);
	hold();
}

static void unlinked(long n)
{
	struct rlimit rl;
	long i;

	/* Room for n descriptors, as far as the hard limit allows. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	for (i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "u.%ld", i);
		if (open(name, O_RDWR | O_CREAT | O_EXCL, 0600) < 0 ||
		    unlink(name) < 0) {
			printf("at %ld: %s\n", i, strerror(errno));
			break;
		}
	}
	printf("held %ld\n", i);
	hold();
}

/* A test runner handing work to a worker: a socket to answer on and an
 * unlinked scratch file, both over SCM_RIGHTS. */
static void pass(long n, long mib)
{
	int ctl[2];
	pid_t w;
	long ok = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, ctl) < 0)
		exit(1);
	w = fork();
	if (w == 0) {
		close(ctl[0]);
		for (;;) {
			int s = recv_fd(ctl[1]), f;
			char c = 0;

			if (s < 0)
				_exit(0);
			f = recv_fd(ctl[1]);
			if (f < 0 || pread(f, &c, 1, 0) != 1 || write(s, &c, 1) != 1)
				_exit(1);
			close(s);
			close(f);
		}
	}
	close(ctl[1]);
	for (long i = 0; i < n; i++) {
		int ans[2], f = filled("scratch", mib, false);
		char c = 0;

		if (pwrite(f, "w", 1, 0) != 1 ||
		    socketpair(AF_UNIX, SOCK_STREAM, 0, ans) < 0)
			exit(1);
		unlink("scratch");
		if (send_fd(ctl[0], ans[1]) || send_fd(ctl[0], f))
			exit(1);
		close(ans[1]);
		close(f);
		if (read(ans[0], &c, 1) == 1 && c == 'w')
			ok++;
		close(ans[0]);
	}
	close(ctl[0]);
	waitpid(w, NULL, 0);
	printf("pass ok %ld\n", ok);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "files"))
		hoard(atol(argv[2]), atol(argv[3]), false);
	else if (argc >= 4 && !strcmp(argv[1], "memfd"))
		hoard(atol(argv[2]), atol(argv[3]), true);
	else if (argc >= 3 && !strcmp(argv[1], "nested"))
		nested(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "mapped"))
		mapped(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "shm"))
		shm(argv[2], atol(argv[3]));
	else if (argc >= 3 && !strcmp(argv[1], "sockbuf"))
		sockbuf(atol(argv[2]), false);
	else if (argc >= 3 && !strcmp(argv[1], "sockflight"))
		sockbuf(atol(argv[2]), true);
	else if (argc >= 3 && !strcmp(argv[1], "udp"))
		udp(atol(argv[2]), false);
	else if (argc >= 3 && !strcmp(argv[1], "udpclose"))
		udp(atol(argv[2]), true);
	else if (argc >= 3 && !strcmp(argv[1], "tcp"))
		tcp(atol(argv[2]), false, false);
	else if (argc >= 3 && !strcmp(argv[1], "tcpback"))
		tcp(atol(argv[2]), true, false);
	else if (argc >= 3 && !strcmp(argv[1], "tcpmap"))
		tcp(atol(argv[2]), false, true);
	else if (argc >= 3 && !strcmp(argv[1], "tcpbackmap"))
		tcp(atol(argv[2]), true, true);
	else if (argc >= 3 && !strcmp(argv[1], "blocksend"))
		blocksend(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "starve"))
		starve(atol(argv[2]), atol(argv[3]));
	else if (argc >= 3 && !strcmp(argv[1], "ptables"))
		ptables(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "sparse"))
		sparse(atol(argv[2]), atol(argv[3]));
	else if (argc >= 4 && !strcmp(argv[1], "epoll"))
		epolls(atol(argv[2]), atol(argv[3]));
	else if (argc >= 3 && !strcmp(argv[1], "dgramclosed"))
		dgramclosed(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "unixpend"))
		unixpend(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "relay"))
		relay(atol(argv[2]), atol(argv[3]));
	else if (argc >= 4 && !strcmp(argv[1], "maps"))
		maps(atol(argv[2]), atol(argv[3]));
	else if (argc >= 5 && !strcmp(argv[1], "objects"))
		objects(argv[2], atol(argv[3]), atol(argv[4]));
	else if (argc >= 4 && !strcmp(argv[1], "md5"))
		md5keys(atol(argv[2]), atol(argv[3]), false);
	else if (argc >= 4 && !strcmp(argv[1], "md5map"))
		md5keys(atol(argv[2]), atol(argv[3]), true);
	else if (argc >= 5 && !strcmp(argv[1], "backlog"))
		backlog(argv[2], atol(argv[3]), atol(argv[4]));
	else if (argc >= 3 && !strcmp(argv[1], "inflight"))
		inflight(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "fdtables"))
		fdtables(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "filters"))
		filters(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "rules"))
		rules(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "locks"))
		locks(atol(argv[2]), atol(argv[3]), argc >= 5 ? argv[4] : NULL);
	else if (argc >= 3 && !strcmp(argv[1], "lockchurn"))
		lockchurn(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "threads"))
		threads(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "unlinked"))
		unlinked(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "pass"))
		pass(atol(argv[2]), atol(argv[3]));
	else {
		fprintf(stderr, "usage: see tests/progs/hoard.c\n");
		return 2;
	}
	return 0;
}
