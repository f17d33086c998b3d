/* tests/unit/test_shanon.c: the shared anonymous memory ledger
 * (tracer/budget/shanon.c): what scans keep charged. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "../../tracer/budget/shanon.h"

#define MIB (1ull << 20)
#define ZERO(ino) "7f0000000000-7f0000100000 rw-s 00000000 00:01 " #ino \
		  "                     /dev/zero (deleted)\n"

/* A maps text in a memfd, read from its start as a maps file is. */
static int scan_text(struct cr_shanon *s, const char *text)
{
	int fd = memfd_create("maps", MFD_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -EIO;
	}
	rc = cr_shanon_scan_fd(s, fd);
	close(fd);
	return rc;
}

/* k scans that find only what text names. */
static int scans(struct cr_shanon *s, const char *text, int k)
{
	int rc = 0;

	while (k-- > 0 && !rc) {
		cr_shanon_scan_begin(s);
		if (text && scan_text(s, text) < 0)
			return -EIO;
		rc = cr_shanon_scan_end(s);
	}
	return rc;
}

TEST_IMPL(shanon_charges_the_largest)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	ASSERT_EQ(cr_shanon_made(s, 10, 4 * MIB), 0);
	ASSERT_EQ(cr_shanon_made(s, 10, 100 * MIB), 0);
	ASSERT_EQ(cr_shanon_made(s, 11, 1 * MIB), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 105 * MIB);
	cr_shanon_done(s, 10);
	cr_shanon_done(s, 11);
	/* One object alive, seen twice (two processes map it): which one
	 * is not known, so the largest stays charged. */
	cr_shanon_scan_begin(s);
	ASSERT_EQ(scan_text(s, ZERO(77) ZERO(77)), 2);
	ASSERT_EQ(cr_shanon_scan_end(s), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 100 * MIB);
	ASSERT_UEQ(cr_shanon_count(s), 1);
	/* None alive: once missed by CR_SHANON_MISSES scans in a row,
	 * nothing charged, nothing to follow. */
	ASSERT_EQ(scans(s, "00400000-00401000 r-xp 00000000 08:01 5 /bin/x\n",
			CR_SHANON_MISSES - 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 100 * MIB);
	ASSERT_EQ(scans(s, NULL, 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 0);
	ASSERT(!cr_shanon_active(s));
	cr_shanon_free(s);
}

TEST_IMPL(shanon_in_flight_stays)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	ASSERT_EQ(cr_shanon_made(s, 20, 8 * MIB), 0);
	ASSERT_EQ(cr_shanon_made(s, 21, 2 * MIB), 0);
	cr_shanon_done(s, 21);
	/* Thread 20's mmap may not have run yet: its charge stays though
	 * no object is seen; thread 21's is done and gone. */
	ASSERT_EQ(scans(s, NULL, 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 8 * MIB);
	cr_shanon_done(s, 20);
	ASSERT_EQ(scans(s, NULL, 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 0);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_object_never_charged)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	ASSERT_EQ(cr_shanon_made(s, 30, 1 * MIB), 0);
	cr_shanon_done(s, 30);
	/* Two objects, one creation: one was made out of sight. */
	cr_shanon_scan_begin(s);
	ASSERT_EQ(scan_text(s, ZERO(5) ZERO(6)), 2);
	ASSERT_EQ(cr_shanon_scan_end(s), 1);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_lines)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	ASSERT_EQ(cr_shanon_made(s, 40, 1 * MIB), 0);
	cr_shanon_done(s, 40);
	/* Not objects: a private mapping of /dev/zero, a file whose name
	 * only ends so, System V and memfd mappings (counted elsewhere), a
	 * line cut short. An object: a named one. */
	cr_shanon_scan_begin(s);
	ASSERT_EQ(scan_text(s,
		"7f0000000000-7f0000001000 rw-p 00000000 00:05 4 /dev/zero\n"
		"7f0000001000-7f0000002000 rw-s 00000000 08:01 9 /w/dev/zero (deleted)\n"
		"7f0000002000-7f0000003000 rw-s 00000000 00:01 3 /SYSV00000000 (deleted)\n"
		"7f0000003000-7f0000004000 rw-s 00000000 00:01 8 /memfd:x (deleted)\n"
		"7f0000004000-7f0000005000 rw-s 00000000 00:01\n"
		"7f0000005000-7f0000006000 rw-s 00000000 00:01 12 [anon_shmem:pool]\n"),
		  6);
	ASSERT_EQ(cr_shanon_scan_end(s), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 1 * MIB);
	/* The named one was the only object: two would be one too many. */
	cr_shanon_scan_begin(s);
	ASSERT_EQ(scan_text(s, ZERO(1)
		"7f0000005000-7f0000006000 rw-s 00000000 00:01 12 [anon_shmem:pool]\n"),
		  2);
	ASSERT_EQ(cr_shanon_scan_end(s), 1);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_maybe_charged_when_made)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	/* A shared mapping of a file: nothing charged, and nothing once a
	 * scan shows it made no object. */
	ASSERT_EQ(cr_shanon_maybe(s, 50, 300 * MIB), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 0);
	ASSERT(cr_shanon_active(s));
	cr_shanon_done(s, 50);
	ASSERT_EQ(scans(s, NULL, 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 0);
	ASSERT(!cr_shanon_active(s));
	/* The same call with the descriptor swapped for /dev/zero, beside
	 * small charged decoys, one of them unmapped: the new object takes
	 * the largest length, 1 GiB, not a decoy's page. */
	ASSERT_EQ(cr_shanon_made(s, 51, 4096), 0);
	ASSERT_EQ(cr_shanon_made(s, 51, 4096), 0);
	cr_shanon_done(s, 51);
	cr_shanon_scan_begin(s);
	ASSERT_EQ(scan_text(s, ZERO(70) ZERO(71)), 2);
	ASSERT_EQ(cr_shanon_scan_end(s), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 8192);
	ASSERT_EQ(cr_shanon_maybe(s, 52, 1024 * MIB), 0);
	cr_shanon_done(s, 52);
	cr_shanon_scan_begin(s);
	ASSERT_EQ(scan_text(s, ZERO(70) ZERO(99)), 2);
	ASSERT_EQ(cr_shanon_scan_end(s), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 1024 * MIB + 8192);
	ASSERT_EQ(scans(s, ZERO(70) ZERO(99), CR_SHANON_MISSES - 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 1024 * MIB + 4096);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_gone_take_the_smallest)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	/* Two objects made in one scan's time: which length is whose is
	 * not known, so when one goes the smaller charge goes with it. */
	ASSERT_EQ(cr_shanon_made(s, 60, 1024 * MIB), 0);
	ASSERT_EQ(cr_shanon_made(s, 61, 4096), 0);
	cr_shanon_done(s, 60);
	cr_shanon_done(s, 61);
	cr_shanon_scan_begin(s);
	ASSERT_EQ(scan_text(s, ZERO(80) ZERO(81)), 2);
	ASSERT_EQ(cr_shanon_scan_end(s), 0);
	ASSERT_EQ(scans(s, ZERO(81), CR_SHANON_MISSES), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 1024 * MIB);
	ASSERT_EQ(scans(s, NULL, CR_SHANON_MISSES), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 0);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_missed_once_is_the_same)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	/* An object moved behind a scan's read (mremap while the maps file
	 * was read in pieces) is missed by that scan: its charge stays, and
	 * found again it is no new object taking a new call's length. */
	ASSERT_EQ(cr_shanon_made(s, 90, 240 * MIB), 0);
	cr_shanon_done(s, 90);
	ASSERT_EQ(scans(s, ZERO(5), 1), 0);
	ASSERT_EQ(scans(s, NULL, 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 240 * MIB);
	ASSERT_EQ(cr_shanon_made(s, 91, 16 * MIB), 0);
	cr_shanon_done(s, 91);
	ASSERT_EQ(scans(s, ZERO(5), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 240 * MIB);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_call_in_flight_keeps_a_length)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	/* Thread 7's mapping is in flight (answered, not yet run) when a
	 * scan finds object 5, made by thread 1's, done, of the same
	 * length. Whichever length is taken, the call in flight keeps one:
	 * the object it makes next is no object beyond every call (taken
	 * with its call, it ended the run). */
	ASSERT_EQ(cr_shanon_maybe(s, 7, 64 * MIB), 0);
	ASSERT_EQ(cr_shanon_maybe(s, 1, 64 * MIB), 0);
	cr_shanon_done(s, 1);
	ASSERT_EQ(scans(s, ZERO(5), 1), 0);
	ASSERT_UEQ(cr_shanon_count(s), 2);	/* the pool's 5, a call */
	ASSERT_UEQ(cr_shanon_bytes(s), 64 * MIB);
	ASSERT_EQ(scans(s, ZERO(5) ZERO(6), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 128 * MIB);
	cr_shanon_done(s, 7);
	ASSERT_EQ(scans(s, ZERO(5) ZERO(6), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 128 * MIB);
	ASSERT_UEQ(cr_shanon_count(s), 2);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_call_in_flight_unequal)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	/* 4 KiB made and done, 64 MiB in flight, one new object: the
	 * largest length is taken (the object may be the 64 MiB one), and
	 * the call in flight stays with its own; when it makes its object,
	 * that one is charged too, and nothing is out of count. */
	ASSERT_EQ(cr_shanon_made(s, 3, 4096), 0);
	cr_shanon_done(s, 3);
	ASSERT_EQ(cr_shanon_made(s, 3, 64 * MIB), 0);
	ASSERT_EQ(scans(s, ZERO(7), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 64 * MIB);
	ASSERT_EQ(scans(s, ZERO(7) ZERO(8), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 128 * MIB);
	cr_shanon_done(s, 3);
	ASSERT_EQ(scans(s, ZERO(7) ZERO(8), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 128 * MIB);
	/* The other way: 4 KiB made and done made nothing (the kernel
	 * refused it), 1 GiB of a file's mapping in flight made object 9
	 * (the descriptor swapped for /dev/zero): 1 GiB charged, and still
	 * once the call is done with no other object. */
	ASSERT_EQ(cr_shanon_made(s, 4, 4096), 0);
	cr_shanon_done(s, 4);
	ASSERT_EQ(cr_shanon_maybe(s, 4, 1024 * MIB), 0);
	ASSERT_EQ(scans(s, ZERO(7) ZERO(8) ZERO(9), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 128 * MIB + 1024 * MIB);
	cr_shanon_done(s, 4);
	ASSERT_EQ(scans(s, ZERO(7) ZERO(8) ZERO(9), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 128 * MIB + 1024 * MIB);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_call_in_flight_makes_one)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	/* A thread maps 4 KiB and never makes another notified call: its
	 * call stays in flight. Once its object is found, the call has made
	 * its one: a new object no call made is one too many, as without
	 * it (a call kept with no length took such objects, charged
	 * nothing; found by a probing session). */
	ASSERT_EQ(cr_shanon_made(s, 7, 4096), 0);
	ASSERT_EQ(scans(s, ZERO(5), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 4096);
	ASSERT_EQ(scans(s, ZERO(5) ZERO(6), 1), 1);
	cr_shanon_free(s);
	/* Two calls in flight of one length, one object: either made it.
	 * The one that did not may still make its own, also once the other
	 * is done (its length went with the first object): charged too. */
	s = cr_shanon_new();
	ASSERT(s);
	ASSERT_EQ(cr_shanon_maybe(s, 1, 64 * MIB), 0);
	ASSERT_EQ(cr_shanon_maybe(s, 2, 64 * MIB), 0);
	ASSERT_EQ(scans(s, ZERO(5), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 64 * MIB);
	cr_shanon_done(s, 2);
	ASSERT_EQ(scans(s, ZERO(5), 1), 0);
	ASSERT_EQ(scans(s, ZERO(5) ZERO(6), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 128 * MIB);
	/* Both have made theirs: a third object is one too many. */
	ASSERT_EQ(scans(s, ZERO(5) ZERO(6) ZERO(7), 1), 1);
	cr_shanon_free(s);
}

TEST_IMPL(shanon_gated_until_a_zero_comes)
{
	struct cr_shanon *s = cr_shanon_new();

	ASSERT(s);
	/* A shared file mapping while the run can have no /dev/zero: no
	 * candidate. Nothing to scan for; an object beside it is one no
	 * call made. Done, it is gone at once (no scan may come). */
	ASSERT_EQ(cr_shanon_gated(s, 7, 1024 * MIB), 0);
	ASSERT(!cr_shanon_active(s));
	ASSERT_UEQ(cr_shanon_count(s), 0);
	ASSERT_EQ(scans(s, ZERO(5), 1), 1);
	cr_shanon_free(s);
	s = cr_shanon_new();
	ASSERT(s);
	ASSERT_EQ(cr_shanon_gated(s, 7, 1024 * MIB), 0);
	cr_shanon_done(s, 7);
	ASSERT_EQ(cr_shanon_gated(s, 8, 1024 * MIB), 0);
	/* A /dev/zero comes in while thread 8's call is in flight: it may
	 * land on the number before the kernel takes it, so the call is a
	 * candidate, and its object is charged its length. */
	cr_shanon_ungate(s);
	ASSERT(cr_shanon_active(s));
	ASSERT_UEQ(cr_shanon_count(s), 1);
	ASSERT_EQ(scans(s, ZERO(6), 1), 0);
	ASSERT_UEQ(cr_shanon_bytes(s), 1024 * MIB);
	cr_shanon_free(s);
}
