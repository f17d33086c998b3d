/* tracer/handlers/dirents.c: getdents64 and getdents, performed on a copy of
 * the program's fd: /proc and /dev/pts list only what is the run's, an
 * ancestor of a root only what leads into one. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../budget/budget.h"
#include "../fs/fsops.h"

#define CR_PROC_MAGIC	0x9fa0
#define CR_DEVPTS_MAGIC	0x1cd1
#define CR_DENTS_MAX	65536
#define CR_DENTS_AHEAD	4096

/*
 * Why on a copy and never CONTINUE: which directory the fd number names is
 * state another thread can change (dup2 of a /proc fd onto it) between a
 * check and the kernel's call. pidfd_getfd gives us the very open file the
 * number named, sharing its offset, so our call is the program's call.
 *
 * Offsets: a record's d_off is the position of the entry after it, and
 * the file offset after a call is the position of the next entry to read.
 * Both would name an entry corral drops: on ext4 a position is the hash of
 * the name, which a program can compute for any candidate name by making
 * it in its workspace (same filesystem, same seed) and reading its
 * position back; in /proc it is the next pid. So a filtered listing hands
 * out only positions of records it keeps, or the end: it reads on past a
 * kept record until the next kept one (or the end), gives the first the
 * position of the second as d_off, and leaves the offset at the next kept
 * record not delivered (lseek to its position) or at the end. seekdir to
 * a position corral handed out is a kernel lseek to a kept record, and
 * works unchanged. An lseek of the program's own choosing (not
 * intercepted) starts the next listing at the first entry at or after
 * that position in the filesystem's order; corral drops the hidden ones
 * from there, so what it returns depends on the visible names only.
 * A record dropped is never returned later and a kept one never skipped.
 * A count too small for the next record kept answers EINVAL as the kernel
 * does; an error leaves the offset where the call started. A call ends
 * with the read that gave it records (plus the read-ahead to the next kept
 * one), or reads on until one does, so 0 still means the end.
 */

enum dkind { CR_DK_PLAIN, CR_DK_PROC, CR_DK_PTS, CR_DK_ANCESTOR };

/* One handler runs at a time, on the loop thread. The kernel writes each
 * record but not the 0-7 bytes that pad it to 8: inbuf is zeroed before
 * every read, or the padding delivered would hold what an earlier read put
 * there, hidden names of /proc or of a root's ancestors among them (a
 * probing session rebuilt 7 bytes in 8 of such listings). */
static char inbuf[CR_DENTS_MAX], outbuf[CR_DENTS_MAX];
/* The directory an ancestor listing is of, and the caller (kind_of). */
static char dpath[PATH_MAX];
static size_t dlen;
static pid_t dtid;

/* A readable directory some of whose entries the rules hide all the same
 * (fs/resolve.c): a process's own directory and its threads' (net, the
 * host's sockets), and /sys's memory-node directory (only the node<N>
 * entries and the named files). Listed in full, they showed names every
 * lookup answers ENOENT for (found by a differential probe). */
static bool partly_hidden(const char *p, size_t n)
{
	static const char node[] = "/sys/devices/system/node";
	size_t d;

	if (n == sizeof(node) - 1 && !memcmp(p, node, n))
		return true;
	if (n < 7 || memcmp(p, "/proc/", 6))
		return false;
	p += 6;
	n -= 6;
	d = strspn(p, "0123456789");
	if (!d || d > n || (d < n && p[d] != '/'))
		return false;
	if (d == n)
		return true;			/* /proc/PID */
	p += d;
	n -= d;
	if (n < 7 || memcmp(p, "/task/", 6))
		return false;
	d = strspn(p + 6, "0123456789");
	return d && d == n - 6;			/* /proc/PID/task/TID */
}

/* A directory the run may see but not read (an ancestor of a root, or one
 * it holds from elsewhere) is listed with only the entries that lead into
 * a root: the rest is absent, as it is to every path call. Its path is
 * the kernel's name for our copy; one that cannot be named, or is
 * "(deleted)", keeps nothing. */
static int kind_of_plain(struct cr_run *run, int fd, pid_t tid)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, dpath, sizeof(dpath) - 1);
	if (n <= 0 || dpath[0] != '/') {
		dlen = 0;
		return CR_DK_ANCESTOR;
	}
	dpath[n] = 0;
	dlen = (size_t)n;
	dtid = tid;
	if (!(cr_fs_access(run, tid, dpath, dlen) & CR_FS_R) ||
	    partly_hidden(dpath, dlen))
		return CR_DK_ANCESTOR;
	/* A readable directory with a denied subtree right below it: the
	 * subtree's name is absent there too, as it is to every lookup. */
	for (size_t i = 0; i < run->fs->rules.ndeny; i++) {
		const char *d = run->fs->rules.deny[i];
		const char *slash = strrchr(d, '/');
		size_t pl = slash ? (size_t)(slash - d) : 0;

		if (slash && (pl ? pl : 1) == dlen && !memcmp(d, dpath, dlen))
			return CR_DK_ANCESTOR;
	}
	return CR_DK_PLAIN;
}

/* Which directory this is: the root of a proc or devpts instance (inode 1
 * of an anonymous-device filesystem) is filtered. -errno on failure. */
static int kind_of(struct cr_run *run, int fd, pid_t tid)
{
	struct statfs sf;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	dtid = tid;
	if (!S_ISDIR(st.st_mode))
		return CR_DK_PLAIN;	/* the kernel's ENOTDIR */
	if (st.st_ino != 1)
		return kind_of_plain(run, fd, tid);
	if (st.st_dev == run->fs->proc_dev)
		return CR_DK_PROC;
	if (major(st.st_dev) != 0)
		return kind_of_plain(run, fd, tid);
	if (fstatfs(fd, &sf) < 0)
		return -errno;	/* cannot tell: fail closed */
	if (sf.f_type == CR_PROC_MAGIC)
		return CR_DK_PROC;
	if (sf.f_type == CR_DEVPTS_MAGIC)
		return CR_DK_PTS;
	return kind_of_plain(run, fd, tid);
}

static bool all_digits(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n && !s[n] && n < 10;
}

static bool keep(struct cr_run *run, enum dkind k, const char *name)
{
	if (k == CR_DK_ANCESTOR) {
		char p[PATH_MAX];
		size_t nl = strlen(name);

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			return true;
		if (!dlen || dlen + 1 + nl >= sizeof(p))
			return false;
		/* /dev/shm itself holds other programs' objects: the run's
		 * are in its private directory (fs/shm.c), which is what an
		 * open of /dev/shm gives it. */
		if (dlen == 8 && !memcmp(dpath, "/dev/shm", 8))
			return false;
		memcpy(p, dpath, dlen);
		p[dlen] = '/';
		memcpy(p + (dlen == 1 ? 1 : dlen + 1), name, nl + 1);
		/* Visible, not merely creatable. */
		return (cr_fs_access(run, dtid, p, dlen == 1 ? 1 + nl :
				     dlen + 1 + nl) &
			(CR_FS_STAT | CR_FS_R | CR_FS_W | CR_FS_X)) != 0;
	}
	if (k == CR_DK_PROC) {
		char p[6 + NAME_MAX + 1] = "/proc/";
		size_t nl = strlen(name);

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			return true;
		if (nl > NAME_MAX)
			return false;
		/* Exactly what a lookup of /proc/NAME may reach (the /proc
		 * rule of fs/resolve.c, the one list of names): the run's
		 * pids, self, cpuinfo...; what every lookup answers ENOENT
		 * for (acpi, kallsyms, other pids) is not listed either. */
		memcpy(p + 6, name, nl + 1);
		return (cr_fs_access(run, dtid, p, 6 + nl) &
			(CR_FS_STAT | CR_FS_R | CR_FS_W | CR_FS_X)) != 0;
	}
	if (!all_digits(name))
		return true;	/* ptmx, ".": names, not ptys */
	return cr_fs_pty_listed(run, (unsigned)atoi(name));
}

/* Records of both layouts: d_ino, d_off (8 bytes each), d_reclen (2), then
 * d_type and the name (getdents64) or the name (getdents). */
static void set_doff(char *rec, off_t pos)
{
	int64_t d = (int64_t)pos;

	memcpy(rec + 8, &d, sizeof(d));
}

/* The kept records from the private file rfd, at the position *pos, into
 * outbuf; *pos becomes where the program's offset goes: the next kept
 * record not delivered, or the end. 0 or -errno. */
static int read_kept(struct cr_run *run, int rfd, long nr, enum dkind k,
		     size_t count, size_t *olen, off_t *pos)
{
	size_t noff = nr == SYS_getdents64 ? 19 : 18;
	size_t rd = count < 4096 ? 4096 : count > CR_DENTS_MAX ? CR_DENTS_MAX : count;
	size_t last = SIZE_MAX;	/* where in outbuf the last kept record is */
	bool ahead = false;	/* past the read that gave records: find the
				 * next kept one and stop there */

	for (;;) {
		/* Ahead in small reads: what follows the next kept record is
		 * read again by the next call. */
		size_t want = ahead ? CR_DENTS_AHEAD : rd;
		long r;

		/* The kernel leaves a record's padding unwritten: zeroed,
		 * it holds nothing of an earlier listing (see inbuf). */
		memset(inbuf, 0, want);
		r = syscall(nr, rfd, inbuf, want);

		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		for (long off = 0; off < r;) {
			const char *rec = inbuf + off;
			uint16_t reclen;
			int64_t doff;

			memcpy(&reclen, rec + 16, sizeof(reclen));
			memcpy(&doff, rec + 8, sizeof(doff));
			if (reclen < noff + 1 || off + reclen > r)
				return -EIO;	/* never seen; fail closed */
			if (keep(run, k, rec + noff)) {
				/* *pos is this record's position: the one the
				 * previous kept record leads to. */
				if (last != SIZE_MAX)
					set_doff(outbuf + last, *pos);
				if (ahead || *olen + reclen > count)
					return *olen ? 0 : -EINVAL;
				memcpy(outbuf + *olen, rec, reclen);
				last = *olen;
				*olen += reclen;
			}
			*pos = (off_t)doff;
			off += reclen;
		}
		ahead = last != SIZE_MAX;
	}
	/* No kept record follows the last one delivered: it leads to the
	 * end, the d_off the kernel gave the directory's last record, and
	 * the offset goes where the kernel's listing ended. */
	if (last != SIZE_MAX)
		set_doff(outbuf + last, *pos);
	*pos = lseek(rfd, 0, SEEK_CUR);
	return *pos < 0 ? -errno : 0;
}

/*
 * The reading is done on a private open file of the same directory (an
 * offset of its own), from the program's offset, and only the final
 * position is put on the program's file: the program's other threads
 * share that offset and may lseek it meanwhile (lseek is not
 * intercepted), which would otherwise make a record read after their seek
 * take the position of the one read before it. A seek they made during
 * the call stands, as if it came after it (the kernel orders the two by
 * the file's position lock; corral's final lseek overwrote a rewind made
 * meanwhile: found by a probing session). An error leaves the program's
 * offset where it was, as the kernel does.
 *
 * Reading on past hidden entries to the next kept one is work the
 * program chooses (a listing of the workspace's parent among 20 000
 * names cost corral 30 ms a call, the program nothing: a probing
 * session): its CPU time is the run's, as a long walk's is.
 */
static int filtered(struct cr_run *run, int fd, long nr, enum dkind k,
		    size_t count, size_t *olen, off_t *startp)
{
	off_t start, pos;
	uint64_t t0;
	int rfd, fl, rc;
	char self[64];

	*olen = 0;
	*startp = -1;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (fl & O_PATH)
		return -EBADF;	/* the kernel's answer on an O_PATH fd */
	start = lseek(fd, 0, SEEK_CUR);
	if (start < 0)
		return -errno;
	*startp = start;
	/* Through the magic link, not openat "." (which would also need
	 * search permission on the directory): the very directory, even
	 * removed, opened as the program opened it, for reading. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	rfd = open(self, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	pos = start;
	t0 = cr_thread_cpu_ns();
	rc = lseek(rfd, start, SEEK_SET) < 0 ? -errno :
	     read_kept(run, rfd, nr, k, count, olen, &pos);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	if (!rc && lseek(fd, 0, SEEK_CUR) == start &&
	    lseek(fd, pos, SEEK_SET) < 0)
		rc = -errno;
	close(rfd);
	if (rc)
		*olen = 0;
	return rc;
}

/* The records of buf (len bytes) the program's buffer takes. The kernel
 * copies record by record: a fault answers EFAULT only at the first
 * record, the offset left where the call began; later, the records before
 * it, the offset just past them. Copied whole, the call's offset had
 * moved past every record read and a fault lost them all (found by a
 * differential probe). -EFAULT, or the length delivered. */
static ssize_t deliver(pid_t pid, uint64_t addr, int fd, const char *buf,
		       size_t len, off_t start)
{
	size_t put, good = 0;
	int64_t doff = 0;

	if (!cr_mem_write(pid, addr, buf, len))
		return (ssize_t)len;
	put = cr_mem_write_prefix(pid, addr, buf, len);
	for (size_t off = 0; off < len;) {
		uint16_t reclen;

		memcpy(&reclen, buf + off + 16, sizeof(reclen));
		if (!reclen || off + reclen > put)
			break;
		memcpy(&doff, buf + off + 8, sizeof(doff));
		off += reclen;
		good = off;
	}
	if (good ? lseek(fd, (off_t)doff, SEEK_SET) < 0 :
	    start < 0 || lseek(fd, start, SEEK_SET) < 0)
		return -EFAULT;
	return good ? (ssize_t)good : -EFAULT;
}

struct cr_verdict cr_h_getdents(struct cr_run *run,
				const struct cr_syscall_entry *e,
				const struct seccomp_notif *n)
{
	long nr = n->data.nr;
	/* The kernel keeps the count in an int: one past INT_MAX fits no
	 * record (EINVAL, or 0 at the end), as a count of 0 does. */
	size_t count = (unsigned)n->data.args[2] > INT_MAX ? 0 :
		       (unsigned)n->data.args[2], len = 0;
	int fd = cr_fs_task_fd(run, (pid_t)n->pid, (int)n->data.args[0]);
	off_t start = -1;
	ssize_t got;
	int k, rc = 0;

	if (fd < 0)
		return CR_V_ERR(-fd);
	k = kind_of(run, fd, (pid_t)n->pid);
	if (k < 0) {
		rc = k;
	} else if (k == CR_DK_PLAIN) {
		long r;

		size_t want = count > CR_DENTS_MAX ? CR_DENTS_MAX : count;

		start = lseek(fd, 0, SEEK_CUR);
		memset(inbuf, 0, want);	/* padding: see inbuf */
		r = syscall(nr, fd, inbuf, want);
		if (r < 0)
			rc = -errno;
		else
			len = (size_t)r;
	} else {
		rc = filtered(run, fd, nr, (enum dkind)k, count, &len, &start);
	}
	if (rc) {
		close(fd);
		return CR_V_ERR(-rc);
	}
	got = len ? deliver((pid_t)n->pid, n->data.args[1], fd,
			    k == CR_DK_PLAIN ? inbuf : outbuf, len, start) : 0;
	close(fd);
	return got < 0 ? CR_V_ERR(-got) : CR_V_VAL((int64_t)got);
}
