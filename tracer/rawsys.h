/* tracer/rawsys.h: system calls without errno, for the spawned child that
 * runs on the supervisor's memory and must not touch libc's thread state. */
#ifndef CR_RAWSYS_H
#define CR_RAWSYS_H

#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>

/*
 * The child made by cr_spawn shares the supervisor's address space
 * (CLONE_VM) until it execs, and also its thread pointer: libc's errno,
 * malloc caches and locks there belong to the supervisor's thread, which
 * runs at the same time. So the child calls the kernel directly: a result
 * in [-4095, -1] is -errno, as the kernel returns it, and nothing is
 * written anywhere else.
 *
 * Where no such call is written here (or with -DCR_RAWSYS_NO_ASM, which
 * builds and tests that path on any machine), CR_RAWSYS_SHARED_VM is 0:
 * cr_spawn forks instead (the child then has memory and errno of its own,
 * and the libc wrapper below is safe).
 */
#if defined(__x86_64__) && !defined(CR_RAWSYS_NO_ASM)
#define CR_RAWSYS_SHARED_VM 1
static inline long cr_raw6(long n, long a1, long a2, long a3, long a4,
			   long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;

	__asm__ volatile ("syscall"
			  : "=a"(ret)
			  : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10),
			    "r"(r8), "r"(r9)
			  : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__) && !defined(CR_RAWSYS_NO_ASM)
#define CR_RAWSYS_SHARED_VM 1
static inline long cr_raw6(long n, long a1, long a2, long a3, long a4,
			   long a5, long a6)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;

	__asm__ volatile ("svc 0"
			  : "+r"(x0)
			  : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4),
			    "r"(x5)
			  : "memory");
	return x0;
}
#else
#define CR_RAWSYS_SHARED_VM 0
static inline long cr_raw6(long n, long a1, long a2, long a3, long a4,
			   long a5, long a6)
{
	long r = syscall(n, a1, a2, a3, a4, a5, a6);

	return r < 0 ? -errno : r;
}
#endif

/* For the child's functions: AddressSanitizer cannot follow a stack it did
 * not make (it warns, on the program's stderr, before each noreturn call),
 * and the child touches no heap memory it would check. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize_address)
#define CR_CHILD_CODE __attribute__((no_sanitize_address))
#endif
#endif
#ifndef CR_CHILD_CODE
#define CR_CHILD_CODE
#endif

#define CR_RAW0(n) cr_raw6((n), 0, 0, 0, 0, 0, 0)
#define CR_RAW1(n, a) cr_raw6((n), (long)(a), 0, 0, 0, 0, 0)
#define CR_RAW2(n, a, b) cr_raw6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define CR_RAW3(n, a, b, c) \
	cr_raw6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define CR_RAW4(n, a, b, c, d) \
	cr_raw6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define CR_RAW5(n, a, b, c, d, e) \
	cr_raw6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

#endif
