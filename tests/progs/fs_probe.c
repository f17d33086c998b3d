/* tests/progs/fs_probe.c: perform filesystem operations one after the other
 * and print one line per operation, so a test can see exactly which calls
 * failed and with which errno:
 *
 *   fs_probe OP ARGS... [OP ARGS...]...
 *
 *   read PATH               open(PATH, O_RDONLY) and read it
 *   readat0 REL             openat(0, REL, O_RDONLY): fd 0 used as a dirfd
 *   fchdir0 REL             fchdir(0), then open(REL, O_RDONLY)
 *   openat2 DIR REL FLAGS   DIR opened O_PATH|O_DIRECTORY ("." = AT_FDCWD),
 *                           then openat2(dirfd, REL, O_RDONLY, resolve=
 *                           FLAGS), FLAGS a comma list of beneath, in_root,
 *                           no_symlinks, no_magiclinks, no_xdev or "none"
 *   opath PATH              open(PATH, O_PATH), then fstat the fd
 *   opath-reopen PATH       open(PATH, O_PATH), then open /proc/self/fd/N
 *                           O_RDONLY and read it
 *   write PATH              open(PATH, O_WRONLY) (no truncation)
 *   mknod PATH c|b|p        mknod(PATH, S_IFCHR|S_IFBLK|S_IFIFO, 1:3)
 *   memfd-exec SRC ARG...   copy SRC into a memfd, execveat(fd, "",
 *                           AT_EMPTY_PATH) with argv ARG...   (last op)
 *   memfd-exec-proc SRC ARG...  the same through execve("/proc/self/fd/N")
 *   exec PATH ARG...        execv(PATH, {ARG...})                (last op)
 *   fexec PATH ARG...       open(PATH, O_RDONLY), then execveat(fd, "",
 *                           AT_EMPTY_PATH): exec by descriptor (last op)
 *   stat PATH, lstat PATH, statx PATH, access PATH, readlink PATH,
 *   chdir PATH, getxattr PATH, inotify PATH (inotify_add_watch),
 *   handle PATH (name_to_handle_at), connect PATH, bind PATH (AF_UNIX)
 *                           the call alone; "ok" or the errno
 *   reopen-w PATH           open(PATH, O_RDONLY), then /proc/self/fd/N
 *                           O_WRONLY (upgrading the access through procfs)
 *   fdforms PATH            open(PATH, O_RDONLY), then the "" forms on the
 *                           fd: statx(fd, NULL, AT_EMPTY_PATH) ("statx0"),
 *                           fchmodat2(fd, "", 0600, AT_EMPTY_PATH)
 *                           ("fchmodat2"), utimensat(fd, "", NULL,
 *                           AT_EMPTY_PATH) ("utimensat")
 *   cwdforms DIR            chdir(DIR), then fchmodat2(AT_FDCWD, "", 0700,
 *                           AT_EMPTY_PATH) ("cwd-fchmodat2") and
 *                           utimensat(AT_FDCWD, "", NULL, AT_EMPTY_PATH)
 *                           ("cwd-utimensat")
 *
 * Output: "OP ARG: ok [detail]" or "OP ARG: ERRNO-NAME". Content read is
 * printed (escaped, up to 200 bytes), so a leak shows up in the output. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

extern char **environ;

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static void show_content(int fd)
{
	char buf[201];
	ssize_t n = read(fd, buf, 200);

	if (n < 0) {
		printf(" read=%s", ename(errno));
		return;
	}
	putchar(' ');
	for (ssize_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static void result(const char *op, const char *arg, int fd_or_rc, int err,
		   int show)
{
	printf("%s %s: ", op, arg);
	if (fd_or_rc < 0) {
		printf("%s\n", ename(err));
	} else {
		printf("ok");
		if (show)
			show_content(fd_or_rc);
		putchar('\n');
		if (show)
			close(fd_or_rc);
	}
	fflush(stdout);
}

static unsigned long long resolve_flags(const char *s)
{
	unsigned long long f = 0;
	char *copy = strdup(s), *save = NULL;

	for (char *w = strtok_r(copy, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "beneath"))
			f |= RESOLVE_BENEATH;
		else if (!strcmp(w, "in_root"))
			f |= RESOLVE_IN_ROOT;
		else if (!strcmp(w, "no_symlinks"))
			f |= RESOLVE_NO_SYMLINKS;
		else if (!strcmp(w, "no_magiclinks"))
			f |= RESOLVE_NO_MAGICLINKS;
		else if (!strcmp(w, "no_xdev"))
			f |= RESOLVE_NO_XDEV;
	}
	free(copy);
	return f;
}

static int memfd_from(const char *src)
{
	char buf[65536];
	int in = open(src, O_RDONLY);
	int fd;
	ssize_t n;

	if (in < 0) {
		printf("memfd-exec open %s: %s\n", src, ename(errno));
		return -1;
	}
	fd = (int)syscall(SYS_memfd_create, "probe", 0u);
	if (fd < 0) {
		printf("memfd-exec memfd_create: %s\n", ename(errno));
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(fd, buf, (size_t)n) != n) {
			printf("memfd-exec write: %s\n", ename(errno));
			close(in);
			close(fd);
			return -1;
		}
	}
	close(in);
	return fd;
}

/* One call on a path, its outcome printed; false if op is not one of these. */
static bool simple(const char *op, const char *path)
{
	struct stat st;
	struct statx stx;
	char buf[512];
	int rc, e, fd;

	errno = 0;
	if (!strcmp(op, "stat")) {
		rc = stat(path, &st);
	} else if (!strcmp(op, "lstat")) {
		rc = lstat(path, &st);
	} else if (!strcmp(op, "statx")) {
		rc = statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &stx);
	} else if (!strcmp(op, "access")) {
		rc = access(path, R_OK);
	} else if (!strcmp(op, "readlink")) {
		rc = readlink(path, buf, sizeof(buf)) < 0 ? -1 : 0;
	} else if (!strcmp(op, "chdir")) {
		rc = chdir(path);
	} else if (!strcmp(op, "getxattr")) {
		ssize_t n = getxattr(path, "user.corral", buf, sizeof(buf));
		rc = (n < 0 && errno != ENODATA) ? -1 : 0;
	} else if (!strcmp(op, "inotify")) {
		fd = inotify_init1(IN_CLOEXEC);
		rc = fd < 0 ? -1 : inotify_add_watch(fd, path, IN_ALL_EVENTS);
		e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
	} else if (!strcmp(op, "handle")) {
		struct {
			struct file_handle fh;
			unsigned char data[MAX_HANDLE_SZ];
		} h;
		int mnt;

		h.fh.handle_bytes = MAX_HANDLE_SZ;
		rc = name_to_handle_at(AT_FDCWD, path, &h.fh, &mnt, 0);
	} else if (!strcmp(op, "connect") || !strcmp(op, "bind")) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			rc = -1;
		else if (op[0] == 'c')
			rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		else
			rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
	} else {
		return false;
	}
	e = errno;
	result(op, path, rc < 0 ? -1 : 0, e, 0);
	return true;
}

int main(int argc, char **argv)
{
	int i = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (i < argc) {
		const char *op = argv[i];
		int fd, e;

		if (!strcmp(op, "read") && i + 1 < argc) {
			fd = open(argv[i + 1], O_RDONLY);
			e = errno;
			result(op, argv[i + 1], fd, e, 1);
			i += 2;
		} else if (!strcmp(op, "readat0") && i + 1 < argc) {
			fd = openat(0, argv[i + 1], O_RDONLY);
			e = errno;
			result(op, argv[i + 1], fd, e, 1);
			i += 2;
		} else if (!strcmp(op, "fchdir0") && i + 1 < argc) {
			if (fchdir(0) != 0) {
				e = errno;
				result("fchdir0-fchdir", argv[i + 1], -1, e, 0);
			}
			fd = open(argv[i + 1], O_RDONLY);
			e = errno;
			result(op, argv[i + 1], fd, e, 1);
			i += 2;
		} else if (!strcmp(op, "openat2") && i + 3 < argc) {
			struct open_how how = { .flags = O_RDONLY };
			int dfd = AT_FDCWD;
			char label[600];

			snprintf(label, sizeof(label), "%s %s %s", argv[i + 1],
				 argv[i + 2], argv[i + 3]);
			if (strcmp(argv[i + 1], ".")) {
				dfd = open(argv[i + 1], O_PATH | O_DIRECTORY);
				if (dfd < 0) {
					e = errno;
					result("openat2-dirfd", label, -1, e, 0);
					i += 4;
					continue;
				}
			}
			how.resolve = resolve_flags(argv[i + 3]);
			fd = (int)syscall(SYS_openat2, dfd, argv[i + 2], &how,
					  sizeof(how));
			e = errno;
			result(op, label, fd, e, 1);
			if (dfd >= 0)
				close(dfd);
			i += 4;
		} else if (!strcmp(op, "opath") && i + 1 < argc) {
			struct stat st;

			fd = open(argv[i + 1], O_PATH);
			e = errno;
			if (fd < 0) {
				result(op, argv[i + 1], fd, e, 0);
			} else if (fstat(fd, &st) != 0) {
				e = errno;
				printf("opath %s: ok fstat=%s\n", argv[i + 1],
				       ename(e));
				close(fd);
			} else {
				printf("opath %s: ok size=%lld\n", argv[i + 1],
				       (long long)st.st_size);
				close(fd);
			}
			i += 2;
		} else if (!strcmp(op, "opath-reopen") && i + 1 < argc) {
			char p[64];
			int fd2;

			fd = open(argv[i + 1], O_PATH);
			e = errno;
			if (fd < 0) {
				result(op, argv[i + 1], fd, e, 0);
			} else {
				snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
				fd2 = open(p, O_RDONLY);
				e = errno;
				result(op, argv[i + 1], fd2, e, 1);
				close(fd);
			}
			i += 2;
		} else if (!strcmp(op, "write") && i + 1 < argc) {
			fd = open(argv[i + 1], O_WRONLY);
			e = errno;
			result(op, argv[i + 1], fd, e, 0);
			if (fd >= 0)
				close(fd);
			i += 2;
		} else if (!strcmp(op, "mknod") && i + 2 < argc) {
			mode_t t = argv[i + 2][0] == 'c' ? S_IFCHR :
				   argv[i + 2][0] == 'b' ? S_IFBLK : S_IFIFO;
			int rc = mknod(argv[i + 1], t | 0666, makedev(1, 3));

			e = errno;
			result(op, argv[i + 1], rc, e, 0);
			i += 3;
		} else if ((!strcmp(op, "memfd-exec") ||
			    !strcmp(op, "memfd-exec-proc")) && i + 2 < argc) {
			char p[64];

			fd = memfd_from(argv[i + 1]);
			if (fd < 0)
				return 1;
			if (!strcmp(op, "memfd-exec")) {
				syscall(SYS_execveat, fd, "", &argv[i + 2],
					environ, AT_EMPTY_PATH);
			} else {
				snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
				execve(p, &argv[i + 2], environ);
			}
			e = errno;
			result(op, argv[i + 1], -1, e, 0);
			return 1;
		} else if (!strcmp(op, "fexec") && i + 2 < argc) {
			fd = open(argv[i + 1], O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				e = errno;
				result("fexec-open", argv[i + 1], -1, e, 0);
				return 1;
			}
			syscall(SYS_execveat, fd, "", &argv[i + 2], environ,
				AT_EMPTY_PATH);
			e = errno;
			result(op, argv[i + 1], -1, e, 0);
			return 1;
		} else if (!strcmp(op, "exec") && i + 2 < argc) {
			execv(argv[i + 1], &argv[i + 2]);
			e = errno;
			result(op, argv[i + 1], -1, e, 0);
			return 1;
		} else if (i + 1 < argc && simple(op, argv[i + 1])) {
			i += 2;
		} else if (!strcmp(op, "reopen-w") && i + 1 < argc) {
			char p[64];
			int fd2;

			fd = open(argv[i + 1], O_RDONLY);
			e = errno;
			if (fd < 0) {
				result("reopen-w-open", argv[i + 1], fd, e, 0);
			} else {
				snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
				fd2 = open(p, O_WRONLY);
				e = errno;
				result(op, argv[i + 1], fd2, e, 0);
				if (fd2 >= 0)
					close(fd2);
				close(fd);
			}
			i += 2;
		} else if (!strcmp(op, "fdforms") && i + 1 < argc) {
			struct statx sx;
			long r;

			fd = open(argv[i + 1], O_RDONLY);
			e = errno;
			if (fd < 0) {
				result("fdforms-open", argv[i + 1], fd, e, 0);
			} else {
				r = syscall(SYS_statx, fd, NULL, AT_EMPTY_PATH,
					    STATX_BASIC_STATS, &sx);
				result("statx0", argv[i + 1], (int)r, errno, 0);
				r = syscall(452 /* fchmodat2 */, fd, "", 0600,
					    AT_EMPTY_PATH);
				result("fchmodat2", argv[i + 1], (int)r, errno, 0);
				r = syscall(SYS_utimensat, fd, "", NULL,
					    AT_EMPTY_PATH);
				result("utimensat", argv[i + 1], (int)r, errno, 0);
				close(fd);
			}
			i += 2;
		} else if (!strcmp(op, "cwdforms") && i + 1 < argc) {
			long r;

			if (chdir(argv[i + 1]) < 0) {
				result("cwdforms-chdir", argv[i + 1], -1, errno, 0);
			} else {
				r = syscall(452 /* fchmodat2 */, AT_FDCWD, "", 0700,
					    AT_EMPTY_PATH);
				result("cwd-fchmodat2", argv[i + 1], (int)r, errno, 0);
				r = syscall(SYS_utimensat, AT_FDCWD, "", NULL,
					    AT_EMPTY_PATH);
				result("cwd-utimensat", argv[i + 1], (int)r, errno, 0);
			}
			i += 2;
		} else {
			fprintf(stderr, "fs_probe: bad operation at %s\n", op);
			return 2;
		}
	}
	return 0;
}
