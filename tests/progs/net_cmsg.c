/* tests/progs/net_cmsg.c: SCM_RIGHTS edge cases through sendmsg, which the
 * supervisor performs itself: fd numbers the program does not have must
 * fail (EBADF) rather than name the supervisor's own descriptors, and
 * control data whose lengths lie must be refused. Prints one line each. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int send_fds(int sock, const int *fds, int n, size_t lie)
{
	char data = 'x';
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = CMSG_SPACE(sizeof(int) * n),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	memset(u.buf, 0, sizeof(u.buf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n) + lie;
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	return sendmsg(sock, &msg, 0) < 0 ? -errno : 0;
}

int main(void)
{
	int sv[2], rc, fds[8];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return 2;
	/* Numbers past every fd this process has: the supervisor holds
	 * descriptors at such numbers (epoll, listener, proxy sockets). */
	for (int i = 0; i < 8; i++)
		fds[i] = 3 + 2 + i;
	for (int i = 0; i < 8; i++)
		close(fds[i]);
	rc = send_fds(sv[0], fds, 8, 0);
	printf("foreign-fds %s\n", rc == -EBADF ? "EBADF" : rc ? strerror(-rc) : "sent");
	fds[0] = 1;	/* stdout: ours to pass */
	rc = send_fds(sv[0], fds, 1, 0);
	printf("own-fd %s\n", rc ? strerror(-rc) : "sent");
	rc = send_fds(sv[0], fds, 1, 64);	/* cmsg_len past controllen */
	printf("lying-length %s\n", rc == -EINVAL ? "EINVAL" : rc ? strerror(-rc) : "sent");
	return 0;
}
