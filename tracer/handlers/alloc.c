/* tracer/handlers/alloc.c: fallocate, performed by the supervisor so an
 * allocation is charged to the disk budget as it is made. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../budget/budget.h"
#include "../fs/fsops.h"

/* Linux 6.17+: zeroes a range by the device's write-zeroes command,
 * allocating it (older headers lack the name). Stepped like the others;
 * a filesystem without it answers the first step EOPNOTSUPP, before any
 * size check, as natively, so it is left out of the RLIMIT_FSIZE check
 * below (where it is supported, the disk budget still bounds it). */
#ifndef FALLOC_FL_WRITE_ZEROES
#define FALLOC_FL_WRITE_ZEROES 0x80
#endif

/* The most one step may allocate before it is charged. */
#define ALLOC_STEP (8ull << 20)

/* An allocation on tmpfs (a memfd, a /dev/shm object) is the host's RAM,
 * held by no process's RSS; it would be seen only at the next fd scan,
 * and the kernel allocates ~13 GiB/s. On a disk it is the host's disk,
 * seen only by the next pass of the walk: ext4 allocated 4 GiB in one
 * call under disk=64MiB (and RLIMIT_FSIZE lets a file reach the budget
 * plus 16 GiB, per call, per file). So every allocation is made in steps
 * of ALLOC_STEP, each step's growth (st_blocks) charged at once: the run
 * ends within one step past its disk budget. */

static int grow_steps(struct cr_run *run, pid_t pid, int fd, int mode,
		      uint64_t off, uint64_t len)
{
	while (len) {
		uint64_t step = len < ALLOC_STEP ? len : ALLOC_STEP;
		struct stat a, b;
		int rc;

		if (fstat(fd, &a) < 0)
			return -errno;
		/* Only the kernel's call is marked slow: the charge below
		 * may measure the roots (alloc_confirm), which touches the
		 * run's state the stall watcher's tick touches too. */
		cr_slow_begin();
		rc = fallocate(fd, mode, (off_t)off, (off_t)step) < 0 ? -errno : 0;
		cr_slow_end();
		if (fstat(fd, &b) == 0 && b.st_blocks > a.st_blocks &&
		    cr_budget_on_alloc(run, pid,
				       (uint64_t)(b.st_blocks - a.st_blocks) * 512))
			return -ENOSPC;
		if (rc)
			return rc;
		off += step;
		len -= step;
	}
	return 0;
}

/* The modes that allocate: made in steps, and asked about the largest
 * file first. */
static bool allocating(int mode)
{
	return (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_ZERO_RANGE |
			 FALLOC_FL_UNSHARE_RANGE)) == 0 ||
	       (mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_WRITE_ZEROES;
}

/*
 * vfs_fallocate answers a range past the filesystem's largest file with
 * EFBIG, no signal, before the file-size limit or any allocation: corral's
 * own limit check would kill the program with SIGXFSZ, and its steps would
 * allocate towards a size the kernel never starts (1 << 50 with KEEP_SIZE
 * took the whole disk budget). The largest size is not exported; a hole
 * punched at the range's last byte asks the same question, and past the
 * end of the file it changes nothing (only zeros a KEEP_SIZE allocation
 * made can be there). Any other answer (no punching here, an append-only
 * file) leaves the decision to the kernel's own call.
 */
static bool past_largest_file(int fd, int64_t off, int64_t len)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || off + len <= st.st_size)
		return false;
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			 off + len - 1, 1) < 0 && errno == EFBIG;
}

CR_HANDLER(cr_h_fallocate)
{
	pid_t pid = (pid_t)n->pid;
	int mode = (int)n->data.args[1];
	int64_t off = (int64_t)n->data.args[2], len = (int64_t)n->data.args[3];
	bool span = off >= 0 && len > 0 && off <= INT64_MAX - len;
	int fd, rc;
	struct rlimit rl;
	uint64_t t0;

	fd = cr_fs_task_fd(run, pid, (int)n->data.args[0]);
	if (fd < 0)
		return CR_V_ERR(-fd);
	if (span && allocating(mode) &&
	    (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY &&
	    past_largest_file(fd, off, len)) {
		close(fd);
		return CR_V_ERR(EFBIG);
	}
	/* The kernel checks the size against the caller's RLIMIT_FSIZE
	 * (EFBIG and SIGXFSZ); the supervisor's own is not the program's.
	 * Only where the kernel's earlier checks pass (vfs_fallocate: a
	 * mode it knows that grows the file, a descriptor open for
	 * writing, a regular file): their errno comes first. */
	if (span && (mode & ~FALLOC_FL_ZERO_RANGE) == 0 &&
	    (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY &&
	    prlimit(pid, RLIMIT_FSIZE, NULL, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && (uint64_t)(off + len) > rl.rlim_cur) {
		struct stat st;

		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    off + len > st.st_size) {
			close(fd);
			cr_signal_raise(pid, SIGXFSZ);
			return CR_V_ERR(EFBIG);
		}
	}
	/* The kernel's work in corral's time is the run's (handlers/proc.c):
	 * one call may allocate up to the disk budget, or punch a page that
	 * hundreds of thousands of mappings share (a probing session had
	 * corral spend 26 s of CPU under cpu=1s, the run ok). */
	t0 = cr_thread_cpu_ns();
	if (span && allocating(mode)) {
		rc = grow_steps(run, pid, fd, mode, (uint64_t)off, (uint64_t)len);
	} else {
		cr_slow_begin();
		rc = fallocate(fd, mode, off, len) < 0 ? -errno : 0;
		cr_slow_end();
	}
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	close(fd);
	return rc ? CR_V_ERR(-rc) : CR_V_VAL(0);
}
