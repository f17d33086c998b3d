/* tests/progs/exec_doors.c: probes of exec, syscall ABIs, signals and ptrace
 * stops, and the program's own seccomp filters. One subcommand per probe;
 * each prints what it saw, one line per fact.
 *
 *   listener PATH     install a filter of our own with a user-notification
 *                     listener; a child opens PATH and we CONTINUE it
 *   trace             a filter of our own answering RET_TRACE for getppid
 *   clone_parent N    the root makes a sibling (CLONE_PARENT) that sleeps
 *                     N seconds, then exits at once
 *   killroot N        a child sleeps N s; the root SIGKILLs itself
 *   timer_other       timer_create(SIGEV_THREAD_ID) aimed at the parent
 *   nrhigh PATH       openat(PATH) with bits set above the 32-bit syscall nr
 *   pgsig             pidfd_send_signal(PIDFD_SIGNAL_PROCESS_GROUP) to a child
 *   interp PATH...    for each PATH, write an ELF in the cwd whose PT_INTERP
 *                     is PATH and exec it in a child: the errno tells an
 *                     outside PATH that exists from one that does not
 *   shebang PATH...   the same with a script whose #! line is PATH (a
 *                     relative PATH is resolved by the kernel from the cwd)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <elf.h>
#include <time.h>
#include <unistd.h>

static int install(struct sock_filter *f, unsigned short n, unsigned flags)
{
	struct sock_fprog p = { .len = n, .filter = f };

	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &p);
}

static int listener(const char *path)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	int lfd = install(f, 4, SECCOMP_FILTER_FLAG_NEW_LISTENER);

	printf("listener: seccomp NEW_LISTENER -> %d (%s)\n", lfd,
	       lfd < 0 ? strerror(errno) : "ok");
	if (lfd < 0) {
		/* Without a listener: does the flag-less filter install? */
		int r = install(f, 4, 0);

		printf("listener: plain filter -> %d (%s)\n", r,
		       r < 0 ? strerror(errno) : "ok");
		if (r == 0) {
			int fd = open(path, O_RDONLY);

			printf("listener: open without a listener -> %d (%s)\n",
			       fd, fd < 0 ? strerror(errno) : "ok");
		}
		return 0;
	}
	pid_t c = fork();
	if (c == 0) {
		char buf[200] = "";
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

		printf("listener child: open(%s) -> %d (%s) read %zd: %.60s\n",
		       path, fd, fd < 0 ? strerror(errno) : "ok", n, buf);
		_exit(0);
	}
	for (int i = 0; i < 4; i++) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;

		memset(&req, 0, sizeof(req));
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			printf("listener: recv %s\n", strerror(errno));
			break;
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		printf("listener: got nr %d from %d, continuing\n", req.data.nr, req.pid);
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
			printf("listener: send %s\n", strerror(errno));
		int st;
		if (waitpid(c, &st, WNOHANG) == c)
			break;
	}
	waitpid(c, NULL, 0);
	return 0;
}

static int trace(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	int r = install(f, 4, 0);

	printf("trace: install -> %d\n", r);
	errno = 0;
	long p = syscall(SYS_getppid);
	printf("trace: getppid -> %ld (%s)\n", p, strerror(errno));
	return 0;
}

static int clone_parent(int secs)
{
	pid_t c = (pid_t)syscall(SYS_clone, CLONE_PARENT, 0, 0, 0, 0);

	if (c == 0) {
		printf("sibling %d: parent %d, sleeping %d s\n", getpid(), getppid(), secs);
		fflush(stdout);
		for (int i = 0; i < secs; i++) {
			sleep(1);
			printf("sibling alive %d\n", i);
			fflush(stdout);
		}
		_exit(0);
	}
	printf("root: clone(CLONE_PARENT) -> %d (%s)\n", c, c < 0 ? strerror(errno) : "ok");
	fflush(stdout);
	usleep(200000);
	return 0;
}

static int killroot(int secs)
{
	pid_t c = fork();

	if (c == 0) {
		setsid();
		for (int i = 0; i < secs; i++) {
			sleep(1);
			printf("child alive %d\n", i);
			fflush(stdout);
		}
		_exit(0);
	}
	printf("root: child %d; killing myself\n", c);
	fflush(stdout);
	usleep(200000);
	kill(getpid(), SIGKILL);
	return 0;
}

static int timer_other(void)
{
	struct sigevent ev;
	timer_t t;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGTERM;
	ev._sigev_un._tid = getppid();
	int r = (int)syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &t);
	printf("timer_other: tid %d -> %d (%s)\n", getppid(), r, r < 0 ? strerror(errno) : "ok");
	ev._sigev_un._tid = 1;
	r = (int)syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &t);
	printf("timer_other: tid 1 -> %d (%s)\n", r, r < 0 ? strerror(errno) : "ok");
	return 0;
}

static int nrhigh(const char *path)
{
	long r;
	register long r10 __asm__("r10") = 0;

	__asm__ volatile("syscall" : "=a"(r)
			 : "a"((1L << 32) | SYS_openat), "D"((long)AT_FDCWD),
			   "S"(path), "d"((long)O_RDONLY), "r"(r10)
			 : "rcx", "r11", "memory");
	printf("nrhigh: openat(%s) with rax bit 32 -> %ld\n", path, r);
	return 0;
}

static int pgsig(void)
{
	pid_t c = fork();

	if (c == 0) {
		pause();
		_exit(0);
	}
	int fd = (int)syscall(SYS_pidfd_open, c, 0);
	int r = (int)syscall(SYS_pidfd_send_signal, fd, SIGTERM, NULL, 4 /* PROCESS_GROUP */);
	printf("pgsig: pidfd %d send PROCESS_GROUP -> %d (%s)\n", fd, r, r < 0 ? strerror(errno) : "ok");
	int st;
	waitpid(c, &st, 0);
	printf("pgsig: child status 0x%x\n", st);
	return 0;
}

/* Run ./name in a child; report how the exec ended. */
static void try_exec(const char *what, const char *name)
{
	int pfd[2];
	pid_t c;
	int st = 0, e = 0;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return;
	c = fork();
	if (c == 0) {
		char *av[] = { (char *)name, NULL }, *ev[] = { NULL };

		execve(name, av, ev);
		e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(3);
		_exit(1);
	}
	close(pfd[1]);
	if (read(pfd[0], &e, sizeof(e)) != sizeof(e))
		e = 0;
	close(pfd[0]);
	waitpid(c, &st, 0);
	printf("%s: %s -> %s (status 0x%x)\n", name, what,
	       e ? strerror(e) : "exec went through", st);
}

static int interp(int n, char **paths)
{
	for (int i = 0; i < n; i++) {
		unsigned char img[512];
		Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
		Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
		size_t off = sizeof(*eh) + 2 * sizeof(*ph), len = strlen(paths[i]) + 1;
		char name[32];
		int fd;

		if (off + len > sizeof(img))
			continue;
		memset(img, 0, sizeof(img));
		memcpy(eh->e_ident, ELFMAG, SELFMAG);
		eh->e_ident[EI_CLASS] = ELFCLASS64;
		eh->e_ident[EI_DATA] = ELFDATA2LSB;
		eh->e_ident[EI_VERSION] = EV_CURRENT;
		eh->e_type = ET_EXEC;
		eh->e_machine = EM_X86_64;
		eh->e_version = EV_CURRENT;
		eh->e_entry = 0x400000 + off;
		eh->e_phoff = sizeof(*eh);
		eh->e_ehsize = sizeof(*eh);
		eh->e_phentsize = sizeof(*ph);
		eh->e_phnum = 2;
		ph[0].p_type = PT_INTERP;
		ph[0].p_offset = off;
		ph[0].p_filesz = ph[0].p_memsz = len;
		ph[0].p_flags = PF_R;
		ph[0].p_align = 1;
		ph[1].p_type = PT_LOAD;
		ph[1].p_vaddr = ph[1].p_paddr = 0x400000;
		ph[1].p_filesz = ph[1].p_memsz = sizeof(img);
		ph[1].p_flags = PF_R | PF_X;
		ph[1].p_align = 0x1000;
		memcpy(img + off, paths[i], len);
		snprintf(name, sizeof(name), "./elf%d", i);
		fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0755);
		if (fd < 0 || write(fd, img, sizeof(img)) != (ssize_t)sizeof(img)) {
			printf("%s: cannot write: %s\n", name, strerror(errno));
			continue;
		}
		close(fd);
		try_exec(paths[i], name);
	}
	return 0;
}

static int shebang(int n, char **paths)
{
	for (int i = 0; i < n; i++) {
		char name[32];
		FILE *f;

		snprintf(name, sizeof(name), "./sh%d", i);
		f = fopen(name, "w");
		if (!f)
			continue;
		fprintf(f, "#!%s\n", paths[i]);
		fclose(f);
		chmod(name, 0755);
		try_exec(paths[i], name);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return 2;
	const char *a = argc > 2 ? argv[2] : "";
	if (!strcmp(argv[1], "listener"))
		return listener(a);
	if (!strcmp(argv[1], "trace"))
		return trace();
	if (!strcmp(argv[1], "clone_parent"))
		return clone_parent(atoi(a));
	if (!strcmp(argv[1], "killroot"))
		return killroot(atoi(a));
	if (!strcmp(argv[1], "timer_other"))
		return timer_other();
	if (!strcmp(argv[1], "nrhigh"))
		return nrhigh(a);
	if (!strcmp(argv[1], "interp"))
		return interp(argc - 2, argv + 2);
	if (!strcmp(argv[1], "shebang"))
		return shebang(argc - 2, argv + 2);
	if (!strcmp(argv[1], "pgsig"))
		return pgsig();
	return 2;
}
