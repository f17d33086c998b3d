/* tests/progs/stack_doors.c: denials taken where --stacks unwinds what the
 * program controls. One subcommand each:
 *   fifo PATH MIB  map a stub (openat; ret) from ./stub.bin, unlink it, make
 *                  a FIFO at the name /proc/self/maps now shows for it
 *                  ("... (deleted)"), open PATH through the stub (denied),
 *                  print "stub openat: N", then a child touches MIB MiB and
 *                  waits; the parent waits for it.
 *   name PATH      open PATH by a raw openat in zzzzzzzzzzzzzzzzSTUB (the
 *                  tests patch this binary's symbol table and that name),
 *                  print "openat: N".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) long zzzzzzzzzzzzzzzzSTUB(const char *p)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(257L), "D"(-100L), "S"(p),
			 "d"(0L) : "rcx", "r11", "memory");
	return r;
}

static int fifo(const char *path, long mib)
{
	/* mov eax, 257 (openat); syscall; ret: the arguments are the caller's. */
	static const unsigned char code[] = { 0xb8, 0x01, 0x01, 0x00, 0x00,
					      0x0f, 0x05, 0xc3 };
	char page[4096] = { 0 }, cwd[2048], name[2100];
	long (*stub)(long, const char *, long, long);
	void *m;
	int fd;
	pid_t c;

	memcpy(page, code, sizeof(code));
	fd = open("stub.bin", O_RDWR | O_CREAT | O_TRUNC, 0700);
	if (fd < 0 || write(fd, page, sizeof(page)) != sizeof(page))
		return perror("stub.bin"), 1;
	m = mmap(NULL, sizeof(page), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return perror("mmap"), 1;
	close(fd);
	if (!getcwd(cwd, sizeof(cwd)) || unlink("stub.bin") < 0)
		return perror("unlink"), 1;
	snprintf(name, sizeof(name), "%s/stub.bin (deleted)", cwd);
	if (mkfifo(name, 0600) < 0)
		return perror("mkfifo"), 1;
	stub = (long (*)(long, const char *, long, long))m;
	printf("stub openat: %ld\n", stub(AT_FDCWD, path, O_RDONLY, 0));
	fflush(stdout);
	c = fork();
	if (c == 0) {
		size_t sz = (size_t)mib << 20;
		char *p = malloc(sz);

		for (size_t i = 0; p && i < sz; i += 4096)
			p[i] = 1;
		pause();
		_exit(0);
	}
	if (c > 0)
		waitpid(c, NULL, 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "fifo"))
		return fifo(argv[2], atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "name")) {
		printf("openat: %ld\n", zzzzzzzzzzzzzzzzSTUB(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: stack_doors fifo PATH MIB | name PATH\n");
	return 2;
}
