/* tracer/budget/pipes.c: the run's pipes, followed as made: their slots
 * against the user's pipe allowance, their sizes, their buffers' bytes. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "internal.h"
#include "pipeshare.h"
#include "../fs/fs.h"

/* Follow one file of a pipe or FIFO (fd, described by st) without a
 * reference: 0 or -errno. */
static int pipe_follow(struct cr_budgets *b, int fd, const struct stat *st)
{
	unsigned i;

	for (i = 0; i < b->npipe_devs; i++)
		if (b->pipe_devs[i] == st->st_dev)
			break;
	if (i == b->npipe_devs) {
		if (i == CR_BUDGET_PIPE_DEVS)
			return -ENFILE;	/* fail closed: never unfollowed */
		b->pipe_devs[b->npipe_devs++] = st->st_dev;
	}
	return cr_weak_add(&b->pipe_weak, fd, b->pipe_seq << 6 | i);
}

/* The share's table kept to the pipes alive (tracer/budget/pipeshare.c): those
 * the weak set still lists. Left as it is when the set cannot be read
 * (the sum then errs high). */
static void pipeshare_alive(void *arg, uint64_t data, uint64_t ino)
{
	(void)data;
	cr_pipeshare_alive(arg, ino);
}

static void pipeshare_refresh(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns();

	cr_pipeshare_refresh_begin(b->pipeshare);
	if (cr_weak_each(b->pipe_weak, pipeshare_alive, b->pipeshare) == 0)
		cr_pipeshare_refresh_end(b->pipeshare);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
}

/* Do `more` slots fit in the run's share of its user's pipe allowance?
 * Refreshed first when they would not; but a refresh that found most of
 * the pipes alive is not made again for CR_BUDGET_PIPE_REFRESH_MS: a
 * program holding thousands of pipes past its share paid one refresh
 * per pipe made, 2.8 s became 21 s (the test of pipe buffers). */
static bool pipe_slots_fit(struct cr_run *run, uint64_t more)
{
	struct cr_budgets *b = run->budgets;
	uint64_t now;

	if (!cr_pipeshare_stale(b->pipeshare) &&
	    cr_pipeshare_fits(b->pipeshare, more))
		return true;
	now = cr_now_ns();
	if (cr_pipeshare_stale(b->pipeshare) || !b->pipe_refresh_kept ||
	    now >= b->pipe_refresh_next_ns) {
		size_t was = cr_pipeshare_count(b->pipeshare);

		pipeshare_refresh(run);
		b->pipe_refresh_kept =
			cr_pipeshare_count(b->pipeshare) * 4 >= was * 3;
		b->pipe_refresh_next_ns =
			now + CR_BUDGET_PIPE_REFRESH_MS * 1000000ull;
	}
	return cr_pipeshare_fits(b->pipeshare, more);
}

static unsigned pipe_slots(struct cr_budgets *b, int fd)
{
	int sz = fcntl(fd, F_GETPIPE_SZ);

	return sz > 0 ? (unsigned)(sz / b->page) : 0;
}

int cr_budget_on_pipe(struct cr_run *run, const int ends[2])
{
	struct cr_budgets *b = run->budgets;
	struct stat st;
	unsigned slots;

	if (!b)
		return 0;
	if (fstat(ends[0], &st) < 0)
		return -errno;
	for (int i = 0; i < 2; i++) {
		int rc = pipe_follow(b, ends[i], &st);

		if (rc < 0)
			return rc;
	}
	b->pipe_seq++;
	/* Past the run's share, what the kernel gives a user past its
	 * soft limit: a pipe of two slots. */
	slots = pipe_slots(b, ends[0]);
	if (slots > CR_BUDGET_PIPE_MIN_SLOTS && !pipe_slots_fit(run, slots) &&
	    fcntl(ends[0], F_SETPIPE_SZ,
		  (int)(CR_BUDGET_PIPE_MIN_SLOTS * b->page)) >= 0)
		slots = pipe_slots(b, ends[0]);
	return cr_pipeshare_set(b->pipeshare, st.st_ino, slots, true);
}

int cr_budget_pipe_resize(struct cr_run *run, int fd, unsigned long arg)
{
	struct cr_budgets *b = run->budgets;
	unsigned long size;
	unsigned have, want;
	struct stat st;
	int got;

	if (!b || fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		got = fcntl(fd, F_SETPIPE_SZ, arg);	/* the kernel's answer */
		return got < 0 ? -errno : got;
	}
	/* The kernel's rounding: a page at least, a power of two. */
	size = (unsigned int)arg;	/* 0 too is a page, as natively */
	if (size > (1ul << 31))
		return -EINVAL;
	if (size < (unsigned long)b->page)
		size = (unsigned long)b->page;
	while (size & (size - 1))
		size = (size | (size - 1)) + 1;
	/* Past pipe-max-size the program, without capabilities, is
	 * refused (corral may have them). */
	if (size > b->pipe_max)
		return -EPERM;
	want = (unsigned)(size / (unsigned long)b->page);
	have = cr_pipeshare_slots(b->pipeshare, st.st_ino);
	if (!have)
		have = pipe_slots(b, fd);
	if (want > have && !pipe_slots_fit(run, want - have))
		return -EPERM;	/* the kernel's answer past the soft limit */
	got = fcntl(fd, F_SETPIPE_SZ, (int)size);
	if (got < 0)
		return -errno;
	if (cr_pipeshare_set(b->pipeshare, st.st_ino, pipe_slots(b, fd),
			     false) < 0)
		return -ENOMEM;
	return got;
}

int cr_budget_on_opened(struct cr_run *run, int fd)
{
	struct cr_budgets *b = run->budgets;
	struct stat st;
	int rc;

	if (!b)
		return 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISFIFO(st.st_mode))
		return 0;
	rc = pipe_follow(b, fd, &st);
	if (!rc)
		b->pipe_seq++;
	if (!rc && !cr_pipeshare_slots(b->pipeshare, st.st_ino))
		rc = cr_pipeshare_set(b->pipeshare, st.st_ino,
				      pipe_slots(b, fd), false);
	return rc;
}
