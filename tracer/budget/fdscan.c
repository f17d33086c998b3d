/* tracer/budget/fdscan.c: the scan of the run's fd tables (socket queues,
 * pipes, inotify, epoll, unlinked files held). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <linux/kcmp.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include "internal.h"
#include "../fs/fs.h"
#include "../net/net.h"

/* A socket in a task's table, for the memory budget. One that cannot be
 * remembered (no memory) is simply not counted this scan: the next scan
 * retries. */
static void note_socket(struct cr_budgets *b, uint64_t ino)
{
	if (b->nsock == b->sockcap) {
		size_t cap = b->sockcap ? b->sockcap * 2 : 64;
		uint64_t *g = realloc(b->sockinos, cap * sizeof(*g));

		if (!g)
			return;
		b->sockinos = g;
		b->sockcap = cap;
	}
	b->sockinos[b->nsock++] = ino;
}

static void measure_sockets(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t bytes, piped = 0;
	int rc;

	if (b->sock_unmeasurable)
		return;
	/* The run's UDP sockets the supervisor holds a duplicate of (members
	 * and DNS clients): their queues live on after the program closed
	 * its descriptors. And the proxy's sockets and pipes of each relayed
	 * connection: what waits there for a slow far end is the run's. */
	if (run->net && (run->net->nudp || run->net->nclients ||
			 run->net->nconns || run->net->nuheld)) {
		size_t tasks = b->nsock;
		size_t need = b->nsock + run->net->nudp + run->net->nclients +
			      2 * run->net->nconns + run->net->nuheld;

		if (need > b->sockcap) {
			uint64_t *g = realloc(b->sockinos, need * sizeof(*g));

			if (!g)
				return;	/* the last figure stands */
			b->sockinos = g;
			b->sockcap = need;
		}
		b->nsock += cr_net_udp_inodes(run->net, b->sockinos + b->nsock,
					      b->sockcap - b->nsock);
		b->nsock += cr_dns_client_inodes(run->net,
						 b->sockinos + b->nsock,
						 b->sockcap - b->nsock);
		b->nsock += cr_proxy_inodes(run->net, b->sockinos + b->nsock,
					    b->sockcap - b->nsock, &piped);
		/* Unix clients held until accepted (the sweep asks which
		 * the tasks still hold: the inodes before these). */
		const uint64_t *sent;
		size_t nsent = cr_sockmem_sent_list(b->sockmem, &sent);

		b->nsock += cr_unix_held_sweep(run->net, b->sockinos, tasks,
					       sent, nsent, b->fs_start_ns,
					       b->sockinos + b->nsock,
					       b->sockcap - b->nsock);
	}
	/* Sockets kept by a mapping (read_vmas): a listener's port makes
	 * its unaccepted connections the run's, a connection's queues are
	 * read where the listing shows them. */
	for (size_t i = 0; i < run->tasks.cap; i++) {
		const struct cr_task *t = &run->tasks.slots[i];

		if (!t->tid || !t->b.sock_maps)
			continue;
		if (b->nsock + t->b.sock_maps > b->sockcap) {
			size_t cap = b->nsock + t->b.sock_maps + 64;
			uint64_t *g = realloc(b->sockinos, cap * sizeof(*g));

			if (!g)
				return;	/* the last figure stands */
			b->sockinos = g;
			b->sockcap = cap;
		}
		memcpy(b->sockinos + b->nsock, t->b.sock_inos,
		       t->b.sock_maps * sizeof(*b->sockinos));
		b->nsock += t->b.sock_maps;
	}
	rc = cr_sockmem_measure(b->sockmem, b->sockinos, b->nsock, &bytes);
	if (!rc) {
		const uint64_t *alive;
		size_t nalive = cr_sockmem_follow_list(b->sockmem, &alive);

		b->sockbytes = bytes + piped;
		/* The pairs corral made whose sockets are gone (pairs.c). */
		cr_net_pairs_prune(run->net, alive, nalive);
	}
	else if (rc == -ENOENT || rc == -EPROTONOSUPPORT || rc == -EIO)
		b->sock_unmeasurable = true;	/* no sock_diag: docs/limits.md */
}

void cr_budget_rescan_soon(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	/* A file just went where only the fd scan's ledger part sees it:
	 * scan again as soon as its cost allows, not after the usual
	 * CR_BUDGET_FDSCAN_MIN_MS (a program can fallocate gigabytes in
	 * that time). */
	if (b && b->fdscan_next_ns > b->fdscan_soon_ns)
		b->fdscan_next_ns = b->fdscan_soon_ns;
}


bool cr_budget_rescan_now(struct cr_run *run, bool earned)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0;

	if (!b || (!earned && cr_now_ns() < b->rescan_next_ns))
		return false;
	/* A tree whose scan is dear (60 processes holding 19 000
	 * descriptors each: 6-14 s a scan, found by a probing session) is
	 * not scanned in one go at a program's asking: the paced scan,
	 * sooner. */
	if (b->fs_last_cpu > CR_BUDGET_RESCAN_NOW_MAX_CPU_NS) {
		cr_budget_rescan_soon(run);
		return false;
	}
	t0 = cr_thread_cpu_ns();
	if (b->fs_on)
		bg_fdscan_run(run, SIZE_MAX);	/* started before: finished */
	bg_fdscan_run(run, SIZE_MAX);
	cr_budget_charge_cpu(run, cr_thread_cpu_ns() - t0);
	b->rescan_next_ns = cr_now_ns() + CR_BUDGET_RESCAN_NOW_NS;
	return true;
}

/* An internet socket without a port: in no listing of the kernel's, so
 * once passed and closed nothing could measure it. */
static bool unlisted_inet(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int dom = 0;
	socklen_t dl = sizeof(dom);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl) < 0 ||
	    (dom != AF_INET && dom != AF_INET6) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return false;
	return dom == AF_INET ? !((struct sockaddr_in *)&ss)->sin_port :
			       !((struct sockaddr_in6 *)&ss)->sin6_port;
}

int cr_budget_on_send_fd(struct cr_run *run, int fd)
{
	struct cr_budgets *b = run->budgets;
	struct stat st;
	int rc;

	if (!b || fstat(fd, &st) < 0)
		return -EBADF;
	if (!S_ISSOCK(st.st_mode))
		return 0;
	/* An unbound internet socket passed is charged for the run's life,
	 * with all the option memory it may carry: 2 000 of them, each
	 * with its TCP-MD5 keys, sent and closed held ~0.55 GB under
	 * memory=32MiB where no listing showed them (found by a probing
	 * session). */
	if (unlisted_inet(fd) &&
	    (rc = bg_charge_for_good(run, CR_BUDGET_SOCK + b->optmem_max)))
		return rc;
	return cr_sockmem_sent(b->sockmem, st.st_ino);
}

void cr_budget_on_inet_socket(struct cr_run *run, int domain, int type,
			      int proto)
{
	if (run->budgets)
		cr_sockmem_kind(run->budgets->sockmem, domain, type, proto);
}

/*
 * The list of followed sockets is full: the gone are dropped now, by the
 * listings alone, rather than at the next fd scan's, which a tree holding
 * many descriptors paces to seconds (65 536 sockets closed: the calls
 * went on failing for 10 s). Paced by its own cost like a scan, charged
 * to the run; a listing that fails prunes nothing, and the call is then
 * refused as before.
 */
static void prune_followed(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t now = cr_now_ns(), t0, cost, bytes, wait;

	if (now < b->sockprune_next_ns)
		return;
	/* Two listings, the second right after the first: a socket is
	 * dropped only when neither shows it (sockmem.c, struct inolist). */
	t0 = cr_thread_cpu_ns();
	if (cr_sockmem_measure(b->sockmem, NULL, 0, &bytes) == 0)
		(void)cr_sockmem_measure(b->sockmem, NULL, 0, &bytes);
	cost = cr_thread_cpu_ns() - t0;
	cr_budget_charge_cpu(run, cost);
	wait = cost * CR_BUDGET_FDSCAN_IDLE;
	if (wait < CR_BUDGET_SOCKPRUNE_MIN_MS * 1000000ull)
		wait = CR_BUDGET_SOCKPRUNE_MIN_MS * 1000000ull;
	b->sockprune_next_ns = cr_now_ns() + wait;
}

int cr_budget_on_socket_used(struct cr_run *run, uint64_t ino)
{
	if (!run->budgets || run->budgets->sock_unmeasurable || !ino)
		return 0;	/* nothing would read it: not followed */
	if (cr_sockmem_follow(run->budgets->sockmem, ino) == 0)
		return 0;
	if (run->budgets->sockmem) {
		prune_followed(run);
		if (cr_sockmem_follow(run->budgets->sockmem, ino) == 0)
			return 0;
	}
	/* Full (or no memory): until the gone are pruned the call is
	 * refused as the kernel refuses one it has no buffer for, as a new
	 * pair is (cr_budget_on_socket_pair). */
	cr_budget_rescan_soon(run);
	return -ENOBUFS;
}

bool cr_budget_sockets_measured(const struct cr_run *run)
{
	return run->budgets && run->budgets->sockmem &&
	       !run->budgets->sock_unmeasurable;
}

int cr_budget_on_socket_pair(struct cr_run *run, const uint64_t ino[2])
{
	struct cr_sockmem *s;

	if (!run->budgets || run->budgets->sock_unmeasurable)
		return 0;	/* nothing would read them: not followed */
	if (!(s = run->budgets->sockmem))
		return -ENOMEM;
	/* Room for both, or neither is made: a pair no list follows could
	 * be hidden by a blocked call at once. */
	if (cr_sockmem_follow_room(s) < 2)
		prune_followed(run);
	if (cr_sockmem_follow_room(s) < 2) {
		cr_budget_rescan_soon(run);
		return -ENOBUFS;
	}
	for (int i = 0; i < 2; i++)
		if (cr_sockmem_follow(s, ino[i]) < 0)
			return -ENOBUFS;
	return 1;
}

/* Regular files the tree holds open after unlinking them, and memfds:
 * they take space that no walk of the roots can see. Read from each fd
 * table (a thread that shares its process's table is not read again); a
 * file open in several places is counted once while the table of those
 * seen has room, then each time (an error towards stopping).
 *
 * The scan is resumable: a tree can hold a million fds (64 processes at
 * the hard limit), and reading them all in one go held the loop for
 * seconds, its wall timer and notifications unserved. Each call reads at
 * most `budget` entries and keeps its place (the slot of the task table,
 * the open directory); the figure changes only when a scan completes.
 * Tasks that come or go meanwhile may be missed or met twice in one scan:
 * the "seen" table keeps a file met twice from counting twice. */
bool bg_shares_leader_files(const struct cr_task *t)
{
	return !t->leader && t->tgid > 0 &&
	       syscall(SYS_kcmp, t->tgid, t->tid, KCMP_FILES, 0, 0) == 0;
}

static size_t seen_slot(const struct cr_fdseen *set, size_t cap,
			dev_t dev, ino_t ino)
{
	size_t i = (size_t)(((uint64_t)ino * 0x9E3779B97F4A7C15ull) ^
			    (uint64_t)dev) & (cap - 1);

	while ((set[i].dev || set[i].ino) &&
	       (set[i].dev != dev || set[i].ino != ino))
		i = (i + 1) & (cap - 1);
	return i;
}

/* Twice the room, the entries moved over; false when it cannot grow. */
static bool seen_grow(struct cr_budgets *b)
{
	size_t cap = b->fs_seencap ? b->fs_seencap * 2 : CR_BUDGET_SEEN_MIN;
	struct cr_fdseen *set;

	if (cap > CR_BUDGET_SEEN_MAX)
		return false;
	set = calloc(cap, sizeof(*set));
	if (!set)
		return false;
	for (size_t i = 0; i < b->fs_seencap; i++)
		if (b->fs_seen[i].dev || b->fs_seen[i].ino)
			set[seen_slot(set, cap, b->fs_seen[i].dev,
				      b->fs_seen[i].ino)] = b->fs_seen[i];
	free(b->fs_seen);
	b->fs_seen = set;
	b->fs_seencap = cap;
	return true;
}

/* Was this file met before in the scan under way? Remembered if not
 * (while the set can hold it: past that, met again, counted again, an
 * error towards stopping). */
static bool fdscan_seen(struct cr_budgets *b, const struct stat *st,
			bool remember)
{
	size_t i;

	if (b->fs_seen) {
		i = seen_slot(b->fs_seen, b->fs_seencap, st->st_dev, st->st_ino);
		if (b->fs_seen[i].dev || b->fs_seen[i].ino)
			return true;
	}
	if (!remember ||
	    ((b->fs_nseen + 1) * 2 > b->fs_seencap && !seen_grow(b) &&
	     (b->fs_nseen + 1) * 4 > b->fs_seencap * 3))
		return false;	/* kept at most 3/4 full */
	i = seen_slot(b->fs_seen, b->fs_seencap, st->st_dev, st->st_ino);
	b->fs_seen[i] = (struct cr_fdseen){ st->st_dev, st->st_ino };
	b->fs_nseen++;
	return false;
}

/*
 * A pipe (or FIFO) in a task's table: what its buffers hold is kernel
 * memory in no process's RSS. 4000 pipes of 64 KiB each per process held
 * 177 MiB under memory=64MiB (and a pipe grows to pipe-max-size, 1 MiB,
 * with F_SETPIPE_SZ). Read on a copy of the task's descriptor (the same
 * open file: no reader or writer is added, so nobody's EOF or EPIPE
 * changes): FIONREAD bytes are queued in at most that many buffers (a
 * write into a packet-mode pipe takes a page of its own, however small),
 * and at most F_GETPIPE_SZ's worth: the smaller of the two is charged,
 * an error towards stopping; plus CR_BUDGET_PIPE_KERNEL for what any
 * pipe holds, queued or not (16 processes x 9 900 empty pipes held
 * ~935 MiB of the host's memory under memory=64MiB, counted nothing).
 * splice, tee and vmsplice are refused, so no buffer holds another
 * file's pages.
 */
static void fdscan_pipe(struct cr_run *run, const struct stat *st,
			const char *name)
{
	struct cr_budgets *b = run->budgets;
	int fd, queued = 0;
	long cap;

	if (fdscan_seen(b, st, true))
		return;
	fd = cr_tasks_getfd(run, b->fs_tid, atoi(name));
	if (fd < 0)
		return;		/* closed meanwhile */
	cap = fcntl(fd, F_GETPIPE_SZ);
	if (cap > 0)
		b->fs_files += CR_BUDGET_PIPE_KERNEL;
	if (ioctl(fd, FIONREAD, &queued) == 0 && queued > 0 && cap > 0) {
		uint64_t bound = (uint64_t)queued * (uint64_t)b->page;

		b->fs_files += bound < (uint64_t)cap ? bound : (uint64_t)cap;
	}
	close(fd);
}

/*
 * An epoll instance's watches: kernel memory no RSS shows (~205 B each,
 * measured: 100 instances x 10 000 watches, +200 MB of unreclaimable
 * slab), bounded only by the user's fs.epoll.max_user_watches (5.49
 * million here: ~1.1 GB). Each watch is a "tfd:" line of the instance's
 * fdinfo; reading it costs its length, which the scan's pacing bounds.
 * Every anonymous inode shares one inode number, so an instance shared by
 * forked processes counts once per table that holds it: an error towards
 * stopping. (inotify watches: cr_budget_watch_room.)
 */
/* The lines of the fdinfo of entry `name` of the fd directory dir that
 * begin with prefix: their count; -ENOENT when it cannot be opened (the
 * descriptor closed, the task exiting), -EMFILE or -ENFILE when we are
 * out of descriptors, or another -errno when the text could not be read
 * whole (its length is the program's choice). A
 * line cut by the buffer's end is carried over whole (fdinfo lines are far
 * shorter than the buffer). */
struct prefixed {
	const char *prefix;
	size_t len;
	int64_t count;
};

static void count_prefixed(void *arg, char *line)
{
	struct prefixed *p = arg;

	if (!strncmp(line, p->prefix, p->len))
		p->count++;
}

int64_t bg_fdinfo_lines(int dir, const char *name, const char *prefix)
{
	char path[NAME_MAX + 16];
	struct prefixed p = { prefix, strlen(prefix), 0 };
	int rc;

	snprintf(path, sizeof(path), "../fdinfo/%s", name);
	rc = cr_lines_at(dir, path, count_prefixed, &p);
	return rc < 0 ? rc : p.count;
}


/*
 * An inotify instance's queue: kernel memory no RSS shows. Each instance
 * holds up to fs.inotify.max_queued_events (16 384) events, ~300 B of
 * slab each with a long name; 128 instances (the user's allowance) fed by
 * writes to two files held 1 GiB under memory=32MiB, `ok` (found by a
 * probing session). Read on a copy of the task's descriptor: FIONREAD
 * is what the reader would get, the slab at most CR_BUDGET_INOTIFY_SLAB
 * times that. Every instance shares one anonymous inode, so copies are
 * told apart with kcmp, each instance counted once; an instance alive
 * that no table showed is charged its fullest queue (fdscan_finish).
 */
static void fdscan_inotify(struct cr_run *run, const char *name)
{
	struct cr_budgets *b = run->budgets;
	pid_t self = getpid();
	int fd = cr_tasks_getfd(run, b->fs_tid, atoi(name)), queued = 0;
	bool told = true;

	if (fd < 0)
		return;		/* closed meanwhile */
	for (unsigned i = 0; told && i < b->nino_seen; i++) {
		long k = syscall(SYS_kcmp, self, self, KCMP_FILE, fd,
				 b->ino_seen[i]);

		if (k == 0) {
			close(fd);
			return;	/* met before in this scan */
		}
		told = k > 0;	/* no kcmp: seen, but not told apart */
	}
	/* Its file is counted with every other (fdscan_entry). */
	if (ioctl(fd, FIONREAD, &queued) == 0 && queued > 0)
		b->fs_files += (uint64_t)queued * CR_BUDGET_INOTIFY_SLAB;
	/* Its watches, once the run's bound on them is worth a count: a
	 * line each in its fdinfo, paid as an epoll's (fdscan_anon). */
	if (b->fs_watch_exact && told) {
		uint64_t t0 = cr_thread_cpu_ns(), cost;
		int64_t got = bg_fdinfo_lines(dirfd(b->fs_dir), name,
					      "inotify wd:");

		if (got < 0)
			b->fs_watch_exact = false;
		else
			b->fs_watches += (uint64_t)got;
		cost = cr_thread_cpu_ns() - t0;
		if (cost > 2000000ull)
			cr_budget_charge_cpu(run, cost);
	}
	/* Kept, it stands for one instance the scan met; one that cannot be
	 * told apart, or more than the run can have made, is counted but
	 * stands for none: every instance alive is then charged whole. */
	if (told && b->nino_seen < sizeof(b->ino_seen) / sizeof(b->ino_seen[0]))
		b->ino_seen[b->nino_seen++] = fd;
	else
		close(fd);
}

static void count_alive(void *arg, uint64_t data, uint64_t ino)
{
	(void)data;
	(void)ino;
	(*(uint64_t *)arg)++;
}

/* Instances the run made that are alive: -errno when the set cannot be
 * read. */
static int64_t inotify_alive(struct cr_budgets *b)
{
	uint64_t n = 0;
	int rc = cr_weak_each(b->ino_weak, count_alive, &n);

	return rc < 0 ? rc : (int64_t)n;
}

/* Instances alive that no table of the scan showed (held by a blocked
 * call, in flight in a message): their fullest queues. Those the scan
 * met are alive still (its copies hold them), and none is made while a
 * scan is under way (cr_budget_on_inotify). */
static void hidden_inotify(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	int64_t alive = inotify_alive(b);

	if (alive < 0)
		alive = (int64_t)CR_BUDGET_INOTIFY_MAX;	/* fail closed */
	if ((uint64_t)alive > b->nino_seen)
		b->fs_files += ((uint64_t)alive - b->nino_seen) * b->ino_full;
	/* Watches: the bound becomes the count only when every instance
	 * alive was met and read (one hidden keeps its watches unseen), plus
	 * those added since the scan began (some perhaps counted twice). */
	if (b->fs_watch_exact && (uint64_t)alive == b->nino_seen &&
	    b->fs_watches + b->ino_watch_during < b->ino_watches)
		b->ino_watches = b->fs_watches + b->ino_watch_during;
	b->fs_files += b->ino_watches * CR_BUDGET_INOTIFY_WATCH;
	for (unsigned i = 0; i < b->nino_seen; i++)
		close(b->ino_seen[i]);
	b->nino_seen = 0;
}

int cr_budget_on_inotify(struct cr_run *run, int fd)
{
	struct cr_budgets *b = run->budgets;
	int64_t alive;

	if (!b)
		return 0;
	/* Never made while a scan is under way: one made between its steps
	 * and met in a table would stand for an older one hidden in flight
	 * (found by a probing session). The scan is finished first. */
	if (b->fs_on)
		bg_fdscan_run(run, SIZE_MAX);
	alive = inotify_alive(b);
	if (alive < 0)
		return (int)alive;
	if (alive >= CR_BUDGET_INOTIFY_MAX)
		return -EMFILE;
	return cr_weak_add(&b->ino_weak, fd, b->ino_seq++);
}

/*
 * inotify watches: each a mark of kernel memory and an inode pinned in
 * memory, bounded by the user's fs.inotify.max_user_watches, which the
 * run shares with every program of the user on the host (an editor, a
 * build watcher): 192 530 here, all of them taken by one run before. The
 * supervisor adds every watch (handlers/xattr.c), so the run's are
 * bounded from above by the new ones it added; the fd scan brings the
 * bound down to their count. At a quarter of the user's allowance a
 * count is made at once (the scan under way finished, then a whole one);
 * still there, ENOSPC, and the next count is paced by this one's cost.
 */
int cr_budget_watch_room(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0;

	if (!b || b->ino_watches < b->ino_watch_cap)
		return 0;
	if (cr_now_ns() < b->ino_cap_next_ns)
		return -ENOSPC;
	t0 = cr_thread_cpu_ns();
	if (b->fs_on)
		bg_fdscan_run(run, SIZE_MAX);
	if (b->ino_watches >= b->ino_watch_cap)
		bg_fdscan_run(run, SIZE_MAX);
	if (b->ino_watches < b->ino_watch_cap)
		return 0;
	/* Still there: the next count only after ten times this one's cost
	 * (a program adding at the cap would have the supervisor scan at
	 * every call). */
	b->ino_cap_next_ns = cr_now_ns() + 10 * (cr_thread_cpu_ns() - t0);
	return -ENOSPC;
}

void cr_budget_on_watch(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;

	if (!b)
		return;
	b->ino_watches++;
	b->ino_watch_during++;
	/* Charged at once; the next scan's figure replaces it. */
	b->filebytes += CR_BUDGET_INOTIFY_WATCH;
}

static void fdscan_anon(struct cr_run *run, const char *name)
{
	struct cr_budgets *b = run->budgets;
	char lnk[32];
	uint64_t t0, cost;
	int64_t got;
	ssize_t l;

	l = readlinkat(dirfd(b->fs_dir), name, lnk, sizeof(lnk) - 1);
	if (l <= 0)
		return;
	lnk[l] = 0;
	if (!strcmp(lnk, "anon_inode:inotify")) {
		fdscan_inotify(run, name);
		return;
	}
	if (strcmp(lnk, "anon_inode:[eventpoll]"))
		return;
	/* A duplicate of an instance already found dear to read is not read
	 * again: its watches are counted once. One instance of 250 000
	 * watches (0.37 s a read) duplicated a few hundred times held the
	 * loop, and with it every budget, for a minute, until the watchdog
	 * (found by a probing session). Cheap ones are read as often as met
	 * (a duplicate counts twice: towards stopping). */
	if (b->nep_seen) {
		pid_t self = getpid();
		int fd = cr_tasks_getfd(run, b->fs_tid, atoi(name));

		if (fd < 0)
			return;		/* closed meanwhile */
		for (unsigned i = 0; i < b->nep_seen; i++)
			if (syscall(SYS_kcmp, self, self, KCMP_FILE, fd,
				    b->ep_seen[i]) == 0) {
				close(fd);
				return;
			}
		close(fd);
	}
	t0 = cr_thread_cpu_ns();
	got = bg_fdinfo_lines(dirfd(b->fs_dir), name, "tfd:");
	/* The kernel makes the whole text at the first read: an instance of
	 * millions of watches costs seconds (480 000: 38 MB in 0.7 s), which
	 * the program chose, so it is charged to the run; one that cannot be
	 * read (the text too large to make) counts as the user's limit. */
	if (got >= 0)
		b->fs_epoll += (uint64_t)got;
	else if (got == -EMFILE || got == -ENFILE)
		cr_budget_fds_short(run, (int)-got, "read an epoll's fdinfo");
	else if (got != -ENOENT)	/* not closed meanwhile */
		b->fs_epoll += b->epoll_max;
	cost = cr_thread_cpu_ns() - t0;
	if (cost > 2000000ull)
		cr_budget_charge_cpu(run, cost);
	if (cost > 1000000ull && b->nep_seen < CR_BUDGET_EPOLL_DEAR) {
		int fd = cr_tasks_getfd(run, b->fs_tid, atoi(name));

		if (fd >= 0)
			b->ep_seen[b->nep_seen++] = fd;
	}
}

void bg_ep_seen_clear(struct cr_budgets *b)
{
	for (unsigned i = 0; i < b->nep_seen; i++)
		close(b->ep_seen[i]);
	b->nep_seen = 0;
}

/* A socket's option memory (a TCP-MD5 key list, a socket filter: up to
 * net.core.optmem_max each), asked of the socket itself: an unbound
 * internet socket is in no listing of the kernel's (sockmem.c), and 5.3
 * million MD5 keys on unbound sockets held ~1 GB from one process (found
 * by a probing session). Read on a copy of the task's descriptor; a
 * socket the listing also shows counts twice (towards stopping). */
static void fdscan_sock(struct cr_run *run, const char *name)
{
	struct cr_budgets *b = run->budgets;
	uint32_t mi[SK_MEMINFO_VARS] = { 0 };
	socklen_t len = sizeof(mi);
	int fd = cr_tasks_getfd(run, b->fs_tid, atoi(name));

	if (fd < 0)
		return;		/* closed meanwhile */
	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0 &&
	    len > SK_MEMINFO_OPTMEM * sizeof(uint32_t))
		b->fs_files += mi[SK_MEMINFO_OPTMEM];
	close(fd);
}

static void fdscan_entry(struct cr_run *run, struct dirent *de)
{
	struct cr_budgets *b = run->budgets;
	struct stat st;

	/* The magic link leads to the open file itself, deleted or not;
	 * stat never opens it. */
	if (de->d_name[0] == '.' ||
	    cr_quiet_fstatat(dirfd(b->fs_dir), de->d_name, &st, 0) < 0)
		return;
	if (S_ISSOCK(st.st_mode)) {
		note_socket(b, st.st_ino);
		fdscan_sock(run, de->d_name);
	}
	if (S_ISFIFO(st.st_mode))
		fdscan_pipe(run, &st, de->d_name);
	if (!(st.st_mode & S_IFMT))	/* an anonymous inode */
		fdscan_anon(run, de->d_name);
	/* Every other open file's own kernel memory (sockets are counted
	 * from the kernel's listing, pipes above): a descriptor each, as an
	 * open file shared by two tables or a duplicate cannot be told from
	 * two opens (towards stopping). 16 processes x 19 900 opens of
	 * /dev/null held ~310 MB for 20 MB resident (found by a probing
	 * session). */
	if (!S_ISSOCK(st.st_mode) && !S_ISFIFO(st.st_mode))
		b->fs_files += CR_BUDGET_FILE_KERNEL;
	if (!S_ISREG(st.st_mode) || st.st_nlink || fdscan_seen(b, &st, true))
		return;
	b->fs_total += (uint64_t)st.st_blocks * 512;
}

/* The ledger, /dev/shm and the sockets' queues, when a scan completes. */
/*
 * Pipes the run made that no fd table shows but that are alive: in
 * flight in a unix socket's queue, or held by a thread blocked in poll()
 * or select() after their descriptors were closed (one poll holds up to
 * RLIMIT_NOFILE files; 216 000 pipes with 4 KiB queued each were held so
 * under the default class, ok, past 1.1 GB of the host's memory). What
 * such a pipe holds cannot be read without a descriptor, so it is
 * charged the most a pipe may hold (fs.pipe-max-size) and its own
 * memory. Only pipes made before the scan began (one made since may sit
 * in a table the scan has passed), and only when the last complete scan
 * did not find it either: a scan reads the tables one after another, so
 * a pipe handed meanwhile to a task it had passed (a shell's pipeline:
 * fork, then the parent closes its ends) is missed by one scan, not by
 * two. A pipe hidden is hidden for good (no descriptor can be had back
 * from a blocked poll); one cycled in and out of flight is counted by
 * its content whenever a table shows it.
 */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void hidden_pipe(void *arg, uint64_t data, uint64_t ino)
{
	struct cr_run *run = arg;
	struct cr_budgets *b = run->budgets;
	uint64_t seq = data >> 6;
	struct stat st = { .st_dev = b->pipe_devs[data & 63],
			   .st_ino = (ino_t)ino };
	bool before;

	if (seq >= b->pipe_seq_scan || fdscan_seen(b, &st, true))
		return;
	before = b->phid && bsearch(&ino, b->phid, b->nphid, sizeof(ino),
				    cmp_u64);
	if (b->nhid == b->caphid) {
		size_t cap = b->caphid ? b->caphid * 2 : 64;
		uint64_t *nv = realloc(b->hid, cap * sizeof(*nv));

		if (!nv) {	/* unremembered: charged now */
			before = true;
			goto charge;
		}
		b->hid = nv;
		b->caphid = cap;
	}
	b->hid[b->nhid++] = ino;
charge:
	if (before)
		b->fs_files += b->pipe_max + CR_BUDGET_PIPE_KERNEL;
}

static void hidden_pipes(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t *t;
	int rc;

	b->nhid = 0;
	rc = cr_weak_each(b->pipe_weak, hidden_pipe, run);
	if (rc < 0 && !cr_budget_fds_short(run, -rc, "read the run's pipes") &&
	    !run->ending)
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL,
			   "cannot read the run's pipes for the budgets: %s",
			   strerror(-rc));
	if (b->hid)
		qsort(b->hid, b->nhid, sizeof(*b->hid), cmp_u64);
	t = b->phid;
	b->phid = b->hid;
	b->nphid = b->nhid;
	b->hid = t;
	{
		size_t c = b->caphid;

		b->caphid = b->phid_cap;
		b->phid_cap = c;
	}
}

/* The bytes of the run's /dev/shm objects, measured now; when not
 * `always`, the last figure unless CR_BUDGET_QUICK_IDLE times the
 * last measure's CPU has passed since (a tree the program made dear to
 * walk is walked at ticks less often, never less than the fd scan does). */
uint64_t bg_shm_quick(struct cr_run *run, bool always)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0, now;

	if (!run->fs || run->fs->shm_priv < 0)
		return 0;
	now = cr_now_ns();
	if (!always && now < b->lq_shm_next_ns)
		return b->lq_shm;
	t0 = cr_thread_cpu_ns();
	b->lq_shm = cr_fs_shm_bytes(run);
	b->lq_shm_next_ns = now + (cr_thread_cpu_ns() - t0) *
				  CR_BUDGET_QUICK_IDLE;
	return b->lq_shm;
}

static uint64_t fdscan_finish(struct cr_run *run)
{
	struct cr_budgets *b = run->budgets;
	uint64_t total = b->fs_total;

	/* Files the run holds without a name where no fd table shows them
	 * (a socket's queue, a mapping): the filesystem layer's ledger. */
	cr_fs_held_prune(run);
	for (size_t i = 0; run->fs && i < run->fs->nheld; i++) {
		struct cr_held *h = &run->fs->held[i];
		struct stat st;

		if (fstat(h->fd, &st) < 0)
			continue;
		h->bytes = st.st_nlink ? 0 : (uint64_t)st.st_blocks * 512;
		if (st.st_nlink)
			continue;	/* named again: the walk sees it */
		if (!fdscan_seen(b, &st, false))
			total += h->bytes;
	}
	/* POSIX shared memory and semaphores the run made in /dev/shm: a
	 * tmpfs outside every writable root, emptied at cleanup. */
	b->lq_scan_shm = bg_shm_quick(run, true);
	b->lq_scan = cr_fs_held_bytes(run->fs, 0);
	total += b->lq_scan_shm + cr_fs_rmheld_bytes(run->fs);
	hidden_pipes(run);
	hidden_inotify(run);
	measure_sockets(run);
	return total;
}

/* An fd table's own arrays: a slot of 8 B per descriptor it has room for
 * and its bitmaps, sized to a power of two up to RLIMIT_NOFILE whatever it
 * holds (one dup2 to the limit's last number makes it whole). A thread's
 * unshare(CLONE_FILES) copies it at full size: 700 threads each with a
 * table sized for 20 000 held ~193 MB under memory=32MiB (found by a
 * probing session; each fork copies one too). From FDSize in the task's
 * status; 0 when it cannot be read (the task is going). */
static uint64_t table_bytes(pid_t tid)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tid, tid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0 ||
	    !(p = strstr(buf, "\nFDSize:")))
		return 0;
	return strtoull(p + 8, NULL, 10) * CR_BUDGET_FD_SLOT;
}

/* Read at most `budget` fd entries; true when the scan completed and
 * b->deleted holds its figure. */
static bool fdscan_step(struct cr_run *run, size_t budget)
{
	struct cr_budgets *b = run->budgets;
	struct cr_tasks *ts = &run->tasks;
	/* A paced step also ends on time (its entries may be dear); one
	 * asked for in one go (SIZE_MAX) runs to the end. */
	uint64_t until = budget == SIZE_MAX ? UINT64_MAX :
			 cr_now_ns() + CR_BUDGET_FDSCAN_STEP_NS;

	if (!b->fs_on) {
		b->fs_on = true;
		b->fs_start_ns = cr_now_ns();
		b->al_snap = b->al_pend;
		b->fs_slot = 0;
		b->fs_total = 0;
		b->fs_nseen = 0;
		b->nsock = 0;
		b->fs_files = 0;
		b->fs_epoll = 0;
		b->pipe_seq_scan = b->pipe_seq;
		b->fs_watches = 0;
		b->fs_watch_exact =
			b->ino_watches >= CR_BUDGET_INOTIFY_RECOUNT;
		b->ino_watch_during = 0;
		for (unsigned i = 0; i < b->nino_seen; i++)
			close(b->ino_seen[i]);
		b->nino_seen = 0;
		bg_ep_seen_clear(b);
		if (b->fs_seen)
			memset(b->fs_seen, 0,
			       b->fs_seencap * sizeof(*b->fs_seen));
		else
			seen_grow(b);	/* none: every file counted */
	}
	for (;;) {
		struct dirent *de;

		if (!b->fs_dir) {
			const struct cr_task *t;
			char path[64];
			int fd;

			if (b->fs_slot >= ts->cap)
				break;
			t = &ts->slots[b->fs_slot++];
			if (!t->tid || bg_shares_leader_files(t))
				continue;
			b->fs_tid = t->tid;
			snprintf(path, sizeof(path), "/proc/%d/task/%d/fd",
				 t->tid, t->tid);
			fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0 && cr_budget_fds_short(run, errno,
							 "read a task's fd table")) {
				b->fs_slot = ts->cap;	/* the run ends */
				break;
			}
			if (fd < 0) {
				/* Gone or exiting meanwhile (an exiting task's
				 * table answers EACCES); but a table closed to
				 * corral because the task is undumpable (its
				 * /proc entry turned root's) hides what it
				 * holds: never undercount. */
				if (bg_task_closed(t->tid) && !run->ending)
					cr_run_end(run, CR_ST_PLATFORM_FAILURE,
						   NULL,
						   "cannot read the fd table of task %d for the budgets",
						   t->tid);
				continue;
			}
			b->fs_files += table_bytes(t->tid);
			b->fs_dir = fdopendir(fd);
			if (!b->fs_dir) {
				/* A table skipped would be undercounted. */
				int e = errno;

				close(fd);
				if (!cr_budget_fds_short(run, e,
							 "read a task's fd table") &&
				    !run->ending)
					cr_run_end(run, CR_ST_PLATFORM_FAILURE,
						   NULL,
						   "cannot read the fd table of task %d for the budgets: %s",
						   t->tid, strerror(e));
				b->fs_slot = ts->cap;
				break;
			}
			continue;
		}
		if (!budget || ((budget & 63) == 0 && cr_now_ns() > until))
			return false;
		de = readdir(b->fs_dir);
		if (!de) {
			closedir(b->fs_dir);
			b->fs_dir = NULL;
			continue;
		}
		budget--;
		fdscan_entry(run, de);
	}
	b->deleted = fdscan_finish(run);
	bg_ep_seen_clear(b);
	b->filebytes = b->fs_files;
	b->epollbytes = b->fs_epoll * CR_BUDGET_EPOLL_WATCH;
	b->al_scan += b->al_snap;
	b->al_pend -= b->al_snap;
	b->al_snap = 0;
	b->fs_on = false;
	return true;
}

/* One step of the scan, its CPU added to the scan's; a completed scan
 * sets when the next may start: after CR_BUDGET_FDSCAN_IDLE times its
 * cost, and not sooner than CR_BUDGET_FDSCAN_MIN_MS. */
void bg_fdscan_run(struct cr_run *run, size_t budget)
{
	struct cr_budgets *b = run->budgets;
	uint64_t t0 = cr_thread_cpu_ns(), now, wait;

	if (!fdscan_step(run, budget)) {
		b->fs_cpu += cr_thread_cpu_ns() - t0;
		return;
	}
	b->fs_cpu += cr_thread_cpu_ns() - t0;
	b->fs_last_cpu = b->fs_cpu;
	now = cr_now_ns();
	wait = b->fs_cpu * CR_BUDGET_FDSCAN_IDLE;
	if (wait < CR_BUDGET_FDSCAN_MIN_MS * 1000000ull)
		wait = CR_BUDGET_FDSCAN_MIN_MS * 1000000ull;
	b->fdscan_next_ns = now + wait;
	b->fdscan_soon_ns = now + b->fs_cpu * CR_BUDGET_FDSCAN_IDLE;
	b->fs_cpu = 0;
}
