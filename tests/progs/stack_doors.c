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
 *   leak TARGET PATH  map ./f (empty, shared) after an anonymous page,
 *                  unlink it, make "f (deleted)" a link to TARGET, then
 *                  open PATH (denied) from code that set the stack pointer
 *                  at the mapping and the frame pointer into it: an
 *                  unwinder that reads "the mapped file" by its name
 *                  reads TARGET's word at offset 8 as a return address.
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

static int leak(const char *target, const char *path)
{
	/* push rbp; push rbx; mov rbx, rsp; mov rsp, rcx; mov rbp, r8;
	 * mov eax, 257 (openat); syscall; mov rsp, rbx; pop rbx; pop rbp;
	 * ret */
	static const unsigned char code[] = {
		0x55, 0x53, 0x48, 0x89, 0xe3, 0x48, 0x89, 0xcc, 0x4c, 0x89,
		0xc5, 0xb8, 0x01, 0x01, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x89,
		0xdc, 0x5b, 0x5d, 0xc3 };
	long (*go)(long, const char *, long, char *, char *);
	char cwd[2048], name[2100];
	unsigned char *c;
	char *x, *f;
	int fd;

	fd = open("f", O_RDWR | O_CREAT | O_TRUNC, 0600);
	x = mmap(NULL, 4096 * 4, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || x == MAP_FAILED)
		return perror("f"), 1;
	f = x + 4096;
	if (mmap(f, 4096 * 2, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != f)
		return perror("mmap f"), 1;
	close(fd);
	if (!getcwd(cwd, sizeof(cwd)) || unlink("f") < 0)
		return perror("unlink"), 1;
	snprintf(name, sizeof(name), "%s/f (deleted)", cwd);
	if (symlink(target, name) < 0)
		return perror("symlink"), 1;
	c = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return perror("mmap"), 1;
	memcpy(c, code, sizeof(code));
	if (mprotect(c, 4096, PROT_READ | PROT_EXEC) < 0)
		return perror("mprotect"), 1;
	go = (long (*)(long, const char *, long, char *, char *))(void *)c;
	printf("leak openat: %ld\n", go(AT_FDCWD, path, 0, f - 8, f));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "leak"))
		return leak(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "fifo"))
		return fifo(argv[2], atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "name")) {
		printf("openat: %ld\n", zzzzzzzzzzzzzzzzSTUB(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: stack_doors fifo PATH MIB | name PATH | leak TARGET PATH\n");
	return 2;
}
