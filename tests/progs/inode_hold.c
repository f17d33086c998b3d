/* tests/progs/inode_hold.c: holds a file's inode lock from outside the run,
 * as a long write of the program would, for the stall tests (root only).
 *
 *   inode_hold FILE SECONDS   a thread writes FILE from a page whose fault
 *                             a userfaultfd holds back: the write waits with
 *                             the inode lock taken. "held" is printed once
 *                             the fault is in; SECONDS later (or when stdin
 *                             closes) the page is given and the write ends.
 *
 * userfaultfd for faults taken inside the kernel needs CAP_SYS_PTRACE where
 * vm.unprivileged_userfaultfd is 0: the root tier runs this. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fd;
static char *page;
static long psz;

static void *writer(void *arg)
{
	(void)arg;
	if (pwrite(fd, page, (size_t)psz, 0) < 0)
		perror("inode_hold: pwrite");
	return NULL;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

int main(int argc, char **argv)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_zeropage zp = { 0 };
	struct uffd_msg msg;
	struct pollfd p[1];
	pthread_t th;
	int uffd, secs;

	if (argc != 3) {
		fprintf(stderr, "usage: inode_hold FILE SECONDS\n");
		return 2;
	}
	secs = atoi(argv[2]);
	psz = sysconf(_SC_PAGESIZE);
	fd = open(argv[1], O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die("inode_hold: open");
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0)
		die("inode_hold: userfaultfd");
	if (ioctl(uffd, UFFDIO_API, &api) < 0)
		die("inode_hold: UFFDIO_API");
	page = mmap(NULL, (size_t)psz, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		die("inode_hold: mmap");
	reg.range.start = (unsigned long)page;
	reg.range.len = (unsigned long)psz;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
		die("inode_hold: UFFDIO_REGISTER");
	if (pthread_create(&th, NULL, writer, NULL))
		die("inode_hold: pthread_create");
	if (read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		die("inode_hold: read uffd");
	printf("held\n");
	fflush(stdout);
	p[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
	while (poll(p, 1, secs * 1000) < 0 && errno == EINTR)
		;
	zp.range.start = (unsigned long)page;
	zp.range.len = (unsigned long)psz;
	if (ioctl(uffd, UFFDIO_ZEROPAGE, &zp) < 0)
		die("inode_hold: UFFDIO_ZEROPAGE");
	pthread_join(th, NULL);
	printf("released\n");
	return 0;
}
