/* tracer/handlers/pidfd.c: getsockopt(SO_PEERPIDFD) and the pidfd ioctls
 * (type 0xFF): a handle on a process is given, and used, for the run's only. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "handlers.h"
#include "../net/net.h"
#include "../fs/fsops.h"
#include "../rawsys.h"
#include "../surface.h"

/*
 * Why: corral performs connect and listen of the run's unix sockets, so
 * the kernel records corral as the peer of both ends of such a connection;
 * a socket passed as stdin has the caller as its peer. SO_PEERPIDFD would
 * give the program a pidfd of that process, PIDFD_GET_INFO on it that
 * process's parent, credentials and cgroup, and PIDFD_GET_*_NAMESPACE its
 * namespaces. So a peer outside the run answers as a peer that has gone:
 * the kernel's own answer for a unix socket whose peer process was reaped,
 * taken from a socket made by a child of corral's that is reaped at once
 * (a pidfd of that dead child where the kernel gives one, its error on
 * older kernels). A peer of the run (a socketpair) gets its pidfd, as
 * from the kernel.
 *
 * Pidfds of outside processes still reach a program another way: a message
 * corral sends for it (corral performs every sendmsg) carries corral's pid
 * to a receiver with SO_PASSPIDFD (SCM_PIDFD), and the caller's messages on
 * an inherited socket carry the caller's. So every ioctl of the pidfs type
 * (0xFF: the kernel takes PIDFD_GET_INFO by its number, whatever size the
 * command encodes) is notified and performed by corral on its copy of the
 * fd, for a process of the run only; any other answers ESRCH, as for a
 * process that has gone. Never CONTINUE: which file an fd number names is
 * state a racing thread can change (a dup2 of a pidfd onto it).
 */

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#define CR_PIDFS_INFO_NR 11	/* PIDFD_GET_INFO */
#define CR_PIDFS_NS_LAST 10	/* PIDFD_GET_CGROUP_NAMESPACE (1) .. UTS (10) */

static struct cr_verdict err(int e)
{
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = e };
}

static struct cr_verdict val(int64_t v)
{
	return (struct cr_verdict){ .kind = CR_V_VALUE, .val = v };
}

/* ---- a peer that has gone ---- */

/* One end of a socketpair made by a child of corral's, reaped: its peer is
 * a process that has gone. Made on the first need, kept for the run. */
static int gone_sock = -1;
static char gone_stack[16384] __attribute__((aligned(16)));

/* The child shares our memory and fd table (CLONE_VM | CLONE_FILES) and
 * we wait for it (CLONE_VFORK): direct system calls only. */
CR_CHILD_CODE static int gone_child(void *arg)
{
	return CR_RAW4(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
		       arg) < 0;
}

static int gone_make(void)
{
	int sv[2] = { -1, -1 }, st = 0;
	pid_t pid;

	pid = clone(gone_child, gone_stack + sizeof(gone_stack),
		    CLONE_VM | CLONE_FILES | CLONE_VFORK | SIGCHLD, sv);
	if (pid < 0)
		return -errno;
	while (waitpid(pid, &st, __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st) || sv[0] < 0 || sv[1] < 0) {
		if (sv[0] >= 0)
			close(sv[0]);
		if (sv[1] >= 0)
			close(sv[1]);
		return -EIO;
	}
	close(sv[1]);
	gone_sock = sv[0];
	return 0;
}

/* The kernel's SO_PEERPIDFD for a peer gone, for a program length *len:
 * a pidfd into *fd, or -errno (the kernel's, before stale pidfds). */
static int gone_pidfd(int *fd, socklen_t *len)
{
	int rc;

	*fd = -1;
	if (gone_sock < 0 && (rc = gone_make()) < 0)
		return rc;
	return getsockopt(gone_sock, SOL_SOCKET, SO_PEERPIDFD, fd, len) < 0 ?
	       -errno : 0;
}

/* ---- getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) ---- */

/* One end of a pair corral made for the run (net/pairs.c): the kernel's
 * pidfd names corral; natively it is of the process that asked for the
 * pair. *pfd (corral's) is replaced by a pidfd of that process: 0; or
 * closed and -ESRCH when it has gone (its pid free or another's now);
 * 1 when ino is no such pair (*pfd untouched). */
static int pair_creator_pidfd(struct cr_run *run, uint64_t ino, int *pfd)
{
	uint64_t start;
	pid_t tgid;
	int fd;

	if (!cr_net_pair_creator(run->net, ino, &tgid, &start))
		return 1;
	close(*pfd);
	*pfd = -1;
	/* Opened first, then its start time checked: a number reused
	 * before the open shows another start. */
	fd = (int)syscall(SYS_pidfd_open, tgid, 0);
	if (fd < 0)
		return -ESRCH;
	if (cr_tasks_start_time(tgid) != start) {
		close(fd);
		return -ESRCH;
	}
	*pfd = fd;
	return 0;
}

CR_HANDLER(cr_h_peer_pidfd)
{
	pid_t caller = (pid_t)n->pid, pid;
	uint64_t valp = n->data.args[3], lenp = n->data.args[4];
	int ulen, rc, pfd = -1, remote, none = -1, out;
	bool pair_gone = false;
	struct cr_sock s;
	socklen_t len;

	/* Option 77 of another level (IPV6_RECVFRAGSIZE...): as asked. */
	if ((int)n->data.args[1] != SOL_SOCKET)
		return cr_h_getsockopt(run, e, n);
	rc = cr_sock_open(run, n, (int)n->data.args[0], &s);
	if (rc)
		return err(-rc);
	if (s.rtnl) {	/* no peer process: sock_getsockopt's ENODATA */
		cr_sock_close(&s);
		return err(ENODATA);
	}
	rc = cr_mem_read(caller, lenp, &ulen, sizeof(ulen));
	if (rc || ulen < 0) {
		cr_sock_close(&s);
		return err(rc ? -rc : EINVAL);
	}
	len = (socklen_t)ulen;
	rc = getsockopt(s.dup, SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) < 0 ?
	     -errno : 0;
	if (!rc && pair_creator_pidfd(run, s.ino, &pfd) < 0) {
		/* The asker of a pair corral made has gone: as the kernel
		 * answers for a peer reaped. */
		len = (socklen_t)ulen;
		rc = gone_pidfd(&pfd, &len);
		pair_gone = true;
	}
	cr_sock_close(&s);
	if (rc)
		return err(-rc);
	pid = pair_gone ? 0 : cr_surface_pidfd_pid(pfd);
	if (pair_gone) {
		/* no denial: a process of the run, gone */
	} else if (pid <= 0 ||
		   cr_surface_target(run, caller, pid) == CR_TARGET_OUTSIDE) {
		char target[48];

		snprintf(target, sizeof(target), "pid %ld", (long)pid);
		close(pfd);
		cr_deny(run, caller, e->name, target, "proc",
			"the peer is not a process of the run (answered as a peer that has gone)");
		len = (socklen_t)ulen;
		rc = gone_pidfd(&pfd, &len);
		if (rc)
			return err(-rc);
	}
	/* As the kernel: the program's buffers are written before the fd
	 * exists, so one it cannot write fails with no fd made. */
	out = (int)len;
	rc = cr_mem_write(caller, valp, &none, len);
	if (!rc)
		rc = cr_mem_write(caller, lenp, &out, sizeof(out));
	if (rc) {
		close(pfd);
		return err(-rc);
	}
	remote = cr_notif_add_fd(run, n->id, pfd, true);	/* O_CLOEXEC */
	close(pfd);
	if (remote < 0)
		return err(remote == -EMFILE ? EMFILE : remote == -ENOENT ?
			   EINTR : EIO);
	rc = cr_mem_write(caller, valp, &remote, len);
	return rc ? err(-rc) : val(0);
}

/* ---- ioctl(pidfd, 0xFFxx, arg) ---- */

static unsigned char infobuf[1 << 14];	/* _IOC_SIZE's largest */

/* PIDFD_GET_INFO: the struct is read, the call made on our copy with our
 * buffer, and the struct written back, as the kernel copies it. */
static struct cr_verdict info(pid_t caller, int copy, unsigned cmd,
			      uint64_t arg)
{
	size_t us = _IOC_SIZE(cmd);
	int rd, r;

	if (!arg)	/* the kernel's own answer for no buffer */
		return ioctl(copy, cmd, NULL) < 0 ? err(errno) : err(EFAULT);
	memset(infobuf, 0, us);
	rd = cr_mem_read(caller, arg, infobuf, us);
	r = ioctl(copy, cmd, infobuf);
	if (r < 0)
		return err(errno);	/* size or type refused first */
	if (rd || cr_mem_write(caller, arg, infobuf, us))
		return err(EFAULT);
	return val(r);
}

CR_HANDLER(cr_h_pidfd_ioctl)
{
	pid_t caller = (pid_t)n->pid, pid;
	unsigned cmd = (unsigned)n->data.args[1], nr = _IOC_NR(cmd);
	uint64_t arg = n->data.args[2];
	cr_autoclose int copy = -1;
	struct cr_verdict v;
	int r;

	copy = cr_fs_task_fd(run, caller, (int)n->data.args[0]);
	if (copy < 0)
		return err(-copy);
	pid = cr_surface_pidfd_pid(copy);
	if (pid == -ENOENT)	/* not a pidfd: no file but pidfs knows 0xFF */
		return err(fcntl(copy, F_GETFL) & O_PATH ? EBADF : ENOTTY);
	if (pid < -1)
		return err(-pid);	/* cannot tell: fail closed */
	if (pid == 0 || (pid > 0 && cr_surface_target(run, caller, pid) ==
				    CR_TARGET_OUTSIDE)) {
		char target[48];

		snprintf(target, sizeof(target), "pid %ld", (long)pid);
		cr_deny(run, caller, e->name, target, "proc",
			"a pidfd of a process outside the run answers as one that has gone");
		return err(ESRCH);
	}
	/* pid -1: reaped; the kernel gives only its exit information. */
	if (nr == CR_PIDFS_INFO_NR)
		return info(caller, copy, cmd, arg);
	if (nr < 1 || nr > CR_PIDFS_NS_LAST || _IOC_DIR(cmd) != _IOC_NONE ||
	    _IOC_SIZE(cmd))
		return err(ENOTTY);	/* none the kernel knows (yet) */
	if (pid < 0)
		return err(ESRCH);
	r = ioctl(copy, cmd, (unsigned long)arg);
	if (r < 0)
		return err(errno);
	v = cr_notif_send_fd(run, n, r, true);	/* a namespace fd, O_CLOEXEC */
	return v;
}
