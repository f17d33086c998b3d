/* tests/progs/object_doors.c: what a directory listing's offsets and a
 * socket's peer reveal of objects outside the run (tests/e2e/test_dc_*).
 *
 *   object_doors dents DIR COUNT      getdents64 of DIR with a COUNT-byte
 *                                     buffer until the end: "dent NAME D_OFF"
 *                                     per record, "pos OFFSET" after each
 *                                     call (lseek SEEK_CUR), then "end"
 *   object_doors seekto DIR POS COUNT lseek(POS) first, then as dents
 *   object_doors race DIR COUNT CALLS a thread rewinds the fd (lseek 0) in
 *                                     a loop while CALLS getdents64 of
 *                                     COUNT bytes are made: "dent" lines
 *   object_doors walk DIR             readdir/telldir: "entry NAME TELL";
 *                                     then seekdir to every telldir value:
 *                                     "roundtrip ok N" or "roundtrip bad ..."
 *   object_doors pads HIDDEN OWN      getdents64 of HIDDEN (whole), then of
 *                                     OWN into a buffer filled with 0xCC
 *                                     (both layouts: getdents too): "pads
 *                                     N foreign F", F the padding bytes
 *                                     neither 0xCC nor 0 (the kernel
 *                                     leaves padding unwritten)
 *   object_doors wsunix               a unix stream connection through a
 *                                     workspace path (corral connects and
 *                                     listens): the peer of both ends
 *   object_doors pair                 the peer of a socketpair end
 *   object_doors stdin                the peer of fd 0
 *   object_doors scm                  SCM_PIDFD of a message sent on a
 *                                     socketpair (corral performs sendmsg)
 *   object_doors nspid PID            the pid namespace of its own pidfd
 *                                     (PIDFD_GET_PID_NAMESPACE) and of
 *                                     /proc/self/ns/pid: "NAME nsfd
 *                                     ok|ERRNO", then what NS_GET_PID_FROM_
 *                                     PIDNS and NS_GET_TGID_FROM_PIDNS say
 *                                     of PID: "NAME nspid R|ERRNO" and
 *                                     "NAME nstgid R|ERRNO"
 *
 * The peer lines, TAG being the end asked: "TAG peercred PID UID",
 * "TAG peerpidfd ok|ERRNO", and for a pidfd "TAG pidfd-pid PID" (its
 * fdinfo Pid), "TAG info ok PID PPID|ERRNO" (PIDFD_GET_INFO),
 * "TAG info-exit ok MASK|ERRNO" (with PIDFD_INFO_EXIT), "TAG ns-NAME
 * ok|ERRNO" (PIDFD_GET_NAME_NAMESPACE). "self PID" first. Exit 0. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif
#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04
#endif

struct od_pidfd_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid,
		fsgid;
	int32_t exit_code;
	uint32_t coredump_mask, spare;
};
#define OD_GET_INFO _IOWR(0xFF, 11, struct od_pidfd_info)
#define OD_INFO_EXIT (1ULL << 3)

static const char *en(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

/* ---- listings ---- */

static int list_from(const char *dir, long long seek, size_t count)
{
	static char buf[1 << 16];
	int d = open(dir, O_RDONLY | O_DIRECTORY);
	long r;

	if (d < 0 || count > sizeof(buf)) {
		printf("open %s\n", en(errno));
		return 0;
	}
	if (seek >= 0 && lseek(d, (off_t)seek, SEEK_SET) < 0)
		printf("lseek %s\n", en(errno));
	while ((r = syscall(SYS_getdents64, d, buf, count)) > 0) {
		for (long o = 0; o < r;) {
			uint16_t rl;
			int64_t off;

			memcpy(&rl, buf + o + 16, 2);
			memcpy(&off, buf + o + 8, 8);
			printf("dent %s %lld\n", buf + o + 19, (long long)off);
			o += rl;
		}
		printf("pos %lld\n", (long long)lseek(d, 0, SEEK_CUR));
	}
	if (r < 0)
		printf("err %s\n", en(errno));
	else
		printf("end\n");
	close(d);
	return 0;
}

static int race_fd;
static volatile int race_stop;

static void *rewinder(void *arg)
{
	(void)arg;
	while (!race_stop)
		lseek(race_fd, 0, SEEK_SET);
	return NULL;
}

static int race(const char *dir, size_t count, int calls)
{
	static char buf[1 << 16];
	pthread_t th;

	race_fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (race_fd < 0 || count > sizeof(buf)) {
		printf("open %s\n", en(errno));
		return 0;
	}
	pthread_create(&th, NULL, rewinder, NULL);
	for (int i = 0; i < calls; i++) {
		long r = syscall(SYS_getdents64, race_fd, buf, count);

		for (long o = 0; o < r;) {
			uint16_t rl;
			int64_t off;

			memcpy(&rl, buf + o + 16, 2);
			memcpy(&off, buf + o + 8, 8);
			printf("dent %s %lld\n", buf + o + 19, (long long)off);
			o += rl;
		}
	}
	race_stop = 1;
	pthread_join(th, NULL);
	printf("end\n");
	return 0;
}

#define WALK_MAX 8192
static char wname[WALK_MAX][256];
static long wtell[WALK_MAX];

static int walk(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0, bad = 0;

	if (!d) {
		printf("opendir %s\n", en(errno));
		return 0;
	}
	while (n < WALK_MAX && (e = readdir(d))) {
		snprintf(wname[n], sizeof(wname[n]), "%s", e->d_name);
		wtell[n] = telldir(d);
		printf("entry %s %ld\n", wname[n], wtell[n]);
		n++;
	}
	/* After entry i, telldir names where entry i+1 is: seekdir there
	 * and the next readdir is entry i+1 (or the end). */
	for (int i = n - 1; i >= 0; i--) {
		seekdir(d, wtell[i]);
		e = readdir(d);
		if (i + 1 < n ? !e || strcmp(e->d_name, wname[i + 1]) : !!e) {
			printf("roundtrip bad %d got %s want %s\n", i,
			       e ? e->d_name : "(end)",
			       i + 1 < n ? wname[i + 1] : "(end)");
			bad++;
		}
	}
	rewinddir(d);
	e = readdir(d);
	if (n && (!e || strcmp(e->d_name, wname[0]))) {
		printf("rewind bad\n");
		bad++;
	}
	if (!bad)
		printf("roundtrip ok %d\n", n);
	closedir(d);
	return 0;
}

/* ---- peers ---- */

static void fdinfo_pid(const char *tag, int fd)
{
	char p[64], line[256];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	f = fopen(p, "r");
	if (!f) {
		printf("%s pidfd-pid %s\n", tag, en(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Pid:", 4))
			printf("%s pidfd-pid %ld\n", tag, strtol(line + 4, NULL, 10));
	fclose(f);
}

static void poke(const char *tag, int pfd)
{
	static const struct { const char *n; int nr; } ns[] = {
		{ "cgroup", 1 }, { "ipc", 2 }, { "mnt", 3 }, { "net", 4 },
		{ "pid", 5 }, { "user", 9 }, { "uts", 10 },
	};
	struct od_pidfd_info in;
	int r;

	fdinfo_pid(tag, pfd);
	memset(&in, 0, sizeof(in));
	in.mask = 1 | 2 | 4;
	r = ioctl(pfd, OD_GET_INFO, &in);
	if (r == 0)
		printf("%s info ok %u %u\n", tag, in.pid, in.ppid);
	else
		printf("%s info %s\n", tag, en(errno));
	memset(&in, 0, sizeof(in));
	in.mask = 1 | 2 | 4 | OD_INFO_EXIT;
	r = ioctl(pfd, OD_GET_INFO, &in);
	if (r == 0)
		printf("%s info-exit ok %#llx\n", tag,
		       (unsigned long long)in.mask);
	else
		printf("%s info-exit %s\n", tag, en(errno));
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		r = ioctl(pfd, _IO(0xFF, ns[i].nr), 0);
		printf("%s ns-%s %s\n", tag, ns[i].n, r >= 0 ? "ok" : en(errno));
		if (r >= 0)
			close(r);
	}
}

static void peer(const char *tag, int fd)
{
	struct ucred uc;
	socklen_t l = sizeof(uc);
	int pfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) == 0)
		printf("%s peercred %d %d\n", tag, uc.pid, uc.uid);
	else
		printf("%s peercred %s\n", tag, en(errno));
	l = sizeof(pfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &l) < 0) {
		printf("%s peerpidfd %s\n", tag, en(errno));
		return;
	}
	printf("%s peerpidfd ok\n", tag);
	printf("%s cloexec %d\n", tag, (fcntl(pfd, F_GETFD) & FD_CLOEXEC) != 0);
	poke(tag, pfd);
	close(pfd);
}

static int wsunix(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0), s;

	strcpy(a.sun_path, "od.sock");
	unlink(a.sun_path);
	if (bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    connect(c, (void *)&a, sizeof(a))) {
		printf("setup %s\n", en(errno));
		return 0;
	}
	s = accept(l, NULL, NULL);
	if (s < 0) {
		printf("accept %s\n", en(errno));
		return 0;
	}
	peer("client", c);
	peer("server", s);
	unlink(a.sun_path);
	return 0;
}

static int pair(void)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		printf("socketpair %s\n", en(errno));
		return 0;
	}
	peer("pair", sv[0]);
	return 0;
}

static int scm(void)
{
	char cbuf[CMSG_SPACE(sizeof(int)) * 2], x = 'x';
	struct iovec io[2] = { { &x, 1 }, { &x, 0 } };
	struct msghdr m = { .msg_iov = io, .msg_iovlen = 2 };
	struct cmsghdr *h;
	int sv[2], on = 1, got = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
	    setsockopt(sv[1], SOL_SOCKET, SO_PASSPIDFD, &on, sizeof(on))) {
		printf("setup %s\n", en(errno));
		return 0;
	}
	/* sendmsg of two buffers, not write: corral performs it, so corral
	 * is the sender (one buffer the task sends itself: ownsend.c). */
	if (sendmsg(sv[0], &m, 0) != 1) {
		printf("sendmsg %s\n", en(errno));
		return 0;
	}
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	if (recvmsg(sv[1], &m, MSG_CMSG_CLOEXEC) != 1) {
		printf("recvmsg %s\n", en(errno));
		return 0;
	}
	for (h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_PIDFD) {
			int pfd;

			memcpy(&pfd, CMSG_DATA(h), sizeof(pfd));
			printf("scm pidfd ok\n");
			poke("scm", pfd);
			got = 1;
		}
	if (!got)
		printf("scm pidfd none\n");
	return 0;
}

static void ns_ask(const char *name, int fd, int pid)
{
	int r;

	if (fd < 0) {
		printf("%s nsfd %s\n", name, en(errno));
		return;
	}
	printf("%s nsfd ok\n", name);
	r = ioctl(fd, _IOR(0xb7, 0x6, int), pid);	/* NS_GET_PID_FROM_PIDNS */
	if (r < 0)
		printf("%s nspid %s\n", name, en(errno));
	else
		printf("%s nspid %d\n", name, r);
	r = ioctl(fd, _IOR(0xb7, 0x7, int), pid);	/* NS_GET_TGID_FROM_PIDNS */
	if (r < 0)
		printf("%s nstgid %s\n", name, en(errno));
	else
		printf("%s nstgid %d\n", name, r);
}

static int cmd_nspid(int pid)
{
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	ns_ask("pidfd", pfd < 0 ? -1 : ioctl(pfd, _IO(0xFF, 5), 0), pid);
	ns_ask("proc", open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC), pid);
	return 0;
}

/* The bytes between a record's name (its NUL) and its end, or its d_type
 * (getdents puts it in the last byte), for each record of b[0..r). */
static void count_pads(const unsigned char *b, long r, int old,
		       long *pads, long *foreign)
{
	for (long off = 0; off + 19 < r;) {
		unsigned short rl;
		size_t at = old ? 18 : 19, nl;
		long end;

		memcpy(&rl, b + off + 16, sizeof(rl));
		if (!rl)
			break;
		nl = strnlen((const char *)b + off + at, rl - at);
		end = off + rl - (old ? 1 : 0);
		for (long p = off + (long)(at + nl + 1); p < end; p++) {
			(*pads)++;
			*foreign += b[p] != 0xCC && b[p] != 0;
		}
		off += rl;
	}
}

static int pads(const char *hidden, const char *own)
{
	static unsigned char b[65536];
	long npads = 0, foreign = 0;

	for (int old = 0; old < 2; old++) {
		long nr = old ? SYS_getdents : SYS_getdents64;
		int h = open(hidden, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int o = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		long r;

		if (h < 0 || o < 0) {
			printf("open %d\n", errno);
			return 1;
		}
		while (syscall(nr, h, b, sizeof(b)) > 0)
			;
		memset(b, 0xCC, sizeof(b));
		r = syscall(nr, o, b, sizeof(b));
		if (r <= 0) {
			printf("getdents %ld %d\n", r, errno);
			return 1;
		}
		count_pads(b, r, old, &npads, &foreign);
		close(h);
		close(o);
	}
	printf("pads %ld foreign %ld\n", npads, foreign);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("self %d\n", (int)getpid());
	if (argc == 4 && !strcmp(argv[1], "dents"))
		return list_from(argv[2], -1, strtoul(argv[3], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "seekto"))
		return list_from(argv[2], strtoll(argv[3], NULL, 0),
				 strtoul(argv[4], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "race"))
		return race(argv[2], strtoul(argv[3], NULL, 0),
			    atoi(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "walk"))
		return walk(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "pads"))
		return pads(argv[2], argv[3]);
	if (argc == 2 && !strcmp(argv[1], "wsunix"))
		return wsunix();
	if (argc == 2 && !strcmp(argv[1], "pair"))
		return pair();
	if (argc == 2 && !strcmp(argv[1], "stdin")) {
		peer("stdin", 0);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "nspid"))
		return cmd_nspid(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "scm"))
		return scm();
	fprintf(stderr, "usage: see the comment at the top\n");
	return 2;
}
