/* tracer/ipc/sysv.c: System V objects made for the run (shared memory,
 * semaphore sets, message queues): the run's own, counted, removed at its end. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysv.h"
#include "../budget/budget.h"
#include "../handlers/handlers.h"

#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif
#ifndef SEM_STAT_ANY
#define SEM_STAT_ANY 20
#endif
#ifndef MSG_STAT_ANY
#define MSG_STAT_ANY 13
#endif

/*
 * Without an IPC namespace, System V objects are the host's: one table of
 * keys and ids for every process of every user, objects that outlive
 * their maker, and no per-user limit. So the run never reaches an object
 * it did not make, and every object it makes is corral's to follow:
 *
 * - shmget, semget and msgget are performed by the supervisor (their
 *   arguments are registers; nothing is read from the program), and every
 *   object is made IPC_PRIVATE in the kernel: keys are the run's own,
 *   kept here, as /dev/shm names are (fs/shm.c). A key the run has not
 *   made is absent (ENOENT without IPC_CREAT, else a new object), so the
 *   run never meets a host object by its key, and a host program asking
 *   for a key never gets the run's object (a run squatting the key a
 *   host program derives with ftok would otherwise hand it planted data
 *   and read what it writes). Group and other permission bits are
 *   dropped: the object is the run's alone.
 * - Every other call names an id (a register): one the run made is
 *   continued to the kernel, which answers as it would; any other id is
 *   absent (EINVAL, the kernel's answer for an id with no object).
 *   IPC_RMID is performed, so the list of the run's objects follows it.
 *   IPC_SET (owner and mode) is refused; the listing commands (*_STAT by
 *   index, *_INFO) would walk the host's table and answer EINVAL.
 * - Memory: every segment's resident pages count here, read from
 *   /proc/sysvipc/shm (attached or not: see segment_bytes); a page a
 *   process maps counts in its RSS too (towards stopping). A semaphore
 *   set and a
 *   message queue count a fixed bound for their life (charge_of; a
 *   queue's limit could be raised only by IPC_SET, refused).
 * - At the run's end every object still listed is removed; a segment
 *   still attached by a process (none is left: the tree is dead) would go
 *   with its last detach.
 */

enum kind { SHM, SEM, MSG, NKINDS };

struct obj {
	int id;			/* -1: a free slot */
	key_t key;		/* IPC_PRIVATE when made so */
	uint64_t charge;	/* fixed bytes counted while it lives */
	bool removed;		/* a segment removed while attached */
};

struct cr_sysv {
	struct obj objs[NKINDS][CR_SYSV_MAX];
	size_t count[NKINDS];
	uint64_t fixed;		/* sum of the charges */
	int recfd;		/* the record (below), -1 none, -2 not tried */
	char *recpath;
};

static void prune(struct cr_sysv *s);

static const char *const kind_name[NKINDS] = {
	"System V shared memory", "System V semaphores",
	"System V message queues",
};

/* Fixed charges, the most each can hold in the kernel: a set's array
 * (~64 B a semaphore) and the undo entry each process may keep for it
 * (a header and 2 B a semaphore); a queue's text up to its byte limit
 * (msgmnb) and as many messages as that limit, each at least a 64 B
 * allocation (the kernel bounds the count of messages by the same
 * limit: 16 384 empty messages take ~1 MiB); every object's descriptor. */
#define OBJ_BYTES 1024u
#define SEM_BYTES 64u
#define UNDO_BYTES 64u
#define UNDO_SEM_BYTES 2u
#define MSG_BYTES 64u

static enum kind kind_of(const char *name)
{
	if (!strncmp(name, "shm", 3))
		return SHM;
	if (!strncmp(name, "sem", 3))
		return SEM;
	return MSG;
}

static struct cr_sysv *sysv_get(struct cr_run *run)
{
	if (!run->sysv) {
		run->sysv = calloc(1, sizeof(*run->sysv));
		if (!run->sysv)
			return NULL;
		for (int k = 0; k < NKINDS; k++)
			for (size_t i = 0; i < CR_SYSV_MAX; i++)
				run->sysv->objs[k][i].id = -1;
		run->sysv->recfd = -2;
	}
	return run->sysv;
}

static struct obj *find_id(struct cr_sysv *s, enum kind k, int id)
{
	for (size_t i = 0; s && id >= 0 && i < CR_SYSV_MAX; i++)
		if (s->objs[k][i].id == id)
			return &s->objs[k][i];
	return NULL;
}

static struct obj *find_key(struct cr_sysv *s, enum kind k, key_t key)
{
	for (size_t i = 0; s && i < CR_SYSV_MAX; i++)
		if (s->objs[k][i].id >= 0 && !s->objs[k][i].removed &&
		    s->objs[k][i].key == key)
			return &s->objs[k][i];
	return NULL;
}

static int rmid(enum kind k, int id)
{
	int rc;

	if (k == SHM)
		rc = shmctl(id, IPC_RMID, NULL);
	else if (k == SEM)
		rc = semctl(id, 0, IPC_RMID);
	else
		rc = msgctl(id, IPC_RMID, NULL);
	return rc < 0 ? -errno : 0;
}

static void forget(struct cr_sysv *s, enum kind k, struct obj *o)
{
	s->fixed -= o->charge;
	s->count[k]--;
	o->id = -1;
	o->key = IPC_PRIVATE;
	o->charge = 0;
	o->removed = false;
}

static uint64_t msgmnb(void)
{
	static uint64_t v;
	FILE *f;

	if (v)
		return v;
	v = 16384;	/* the kernel's default */
	f = fopen("/proc/sys/kernel/msgmnb", "re");
	if (f) {
		unsigned long long x;

		if (fscanf(f, "%llu", &x) == 1 && x > 0)
			v = x;
		fclose(f);
	}
	return v;
}

static uint64_t charge_of(struct cr_run *run, enum kind k, uint64_t nsems)
{
	uint64_t tasks = run->cfg->limits.v[CR_LIM_PROCESSES] *
			 CR_BUDGET_THREADS_PER_PROC;

	if (k == SEM) {
		/* An undo list is per process, or per thread made without
		 * CLONE_SYSVSEM (1 400 raw threads x 32 sets held ~48 MiB
		 * charged per process before, found by a probing
		 * session); each entry a kmalloc of the next power of
		 * two. */
		uint64_t undo = UNDO_BYTES + nsems * UNDO_SEM_BYTES, slab = 32;

		while (slab < undo)
			slab *= 2;
		if (!tasks || tasks > 1u << 20)
			tasks = 1u << 20;
		return OBJ_BYTES + nsems * SEM_BYTES + tasks * slab;
	}
	if (k == MSG)
		return OBJ_BYTES + msgmnb() * (1 + MSG_BYTES);
	return OBJ_BYTES;
}

/* The kernel's get, made by the supervisor; -errno or the id. */
static int do_get(enum kind k, key_t key, uint64_t arg, int flags)
{
	int id;

	if (k == SHM)
		id = shmget(key, (size_t)arg, flags);
	else if (k == SEM)
		id = semget(key, (int)arg, flags);
	else
		id = msgget(key, flags);
	return id < 0 ? -errno : id;
}

/*
 * The record: segments no process attaches outlive a supervisor killed by
 * SIGKILL, with their pages. At a run's first segment the supervisor makes
 * $TMPDIR/corral-ipc-XXXXXX, locked (flock) for its life as a private
 * workspace's lock file is, and keeps in it one line per segment alive:
 * its id, creation time and creator pid (corral's own: corral makes it).
 * The sweep before every run (and `corral gc`) takes the lock of a record
 * whose supervisor is gone and removes each segment still the same. Only
 * segments: a semaphore set's or queue's ctime moves with SETVAL and
 * their creator is not kept, so a record naming them could not be told
 * from a forged one naming the user's own (found by a probing session);
 * what a killed supervisor leaves of those is bounded (docs/limits.md).
 * A forged line would need a host segment's id, ctime and creator pid,
 * none of which the program can read. No record is kept, and none read,
 * where the program can write it ($TMPDIR inside a writable root).
 */
static bool tmp_writable(const struct cr_run_config *cfg, const char *ws,
			 char *real)
{
	char which[PATH_MAX + 128];

	return !realpath(cr_workspace_tmp_dir(), real) ||
	       cr_audit_path_writable(cfg, ws, real, which, sizeof(which));
}

static int record_open(struct cr_run *run, struct cr_sysv *s)
{
	char real[PATH_MAX], fresh[PATH_MAX], final[PATH_MAX];
	int fd;

	s->recfd = -1;
	if (tmp_writable(run->cfg, run->cfg->workspace, real) ||
	    snprintf(fresh, sizeof(fresh), "%s/.corral-ipc-new-XXXXXX", real) >=
	    (int)sizeof(fresh))
		return -1;
	fd = mkostemp(fresh, O_CLOEXEC);
	if (fd < 0)
		return -1;
	/* Locked before it has a name the sweep reads. */
	if (snprintf(final, sizeof(final), "%s/" CR_SYSV_RECORD "%s", real,
		     strrchr(fresh, '-') + 1) >= (int)sizeof(final) ||
	    flock(fd, LOCK_EX | LOCK_NB) < 0 ||
	    renameat2(AT_FDCWD, fresh, AT_FDCWD, final, RENAME_NOREPLACE) < 0) {
		unlink(fresh);
		close(fd);
		return -1;
	}
	s->recpath = strdup(final);
	if (!s->recpath) {
		unlink(final);
		close(fd);
		return -1;
	}
	s->recfd = fd;
	return 0;
}

/* The record rewritten whole: the segments alive now (at most
 * CR_SYSV_MAX lines), so it never grows past what the sweep reads. */
static void record(struct cr_run *run, struct cr_sysv *s)
{
	char buf[CR_SYSV_MAX * 64];
	size_t len = 0;

	if (s->recfd == -2 && s->count[SHM])
		record_open(run, s);
	if (s->recfd < 0)
		return;
	for (size_t i = 0; i < CR_SYSV_MAX; i++) {
		struct shmid_ds ds;
		int id = s->objs[SHM][i].id;

		if (id >= 0 && shmctl(id, IPC_STAT, &ds) == 0)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
						"%d %lld %d\n", id,
						(long long)ds.shm_ctime,
						(int)ds.shm_cpid);
	}
	if (ftruncate(s->recfd, 0) < 0 ||
	    pwrite(s->recfd, buf, len, 0) != (ssize_t)len)
		return;	/* best effort: the run's own end removes them */
}

void cr_sysv_sweep(const struct cr_run_config *cfg, const char *ws, int fd)
{
	char buf[CR_SYSV_MAX * 64 + 1], real[PATH_MAX], *line, *save = NULL;
	ssize_t len;

	if (cfg && tmp_writable(cfg, ws, real))
		return;	/* the program's to write: never read */
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	if (len <= 0)
		return;
	buf[len] = 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct shmid_ds ds;
		long long ct;
		int id, pid;

		if (sscanf(line, "%d %lld %d", &id, &ct, &pid) != 3 ||
		    id < 0 || !ct || pid <= 0)
			continue;
		if (shmctl(id, IPC_STAT, &ds) == 0 &&
		    ds.shm_perm.cuid == getuid() &&
		    ds.shm_perm.__key == IPC_PRIVATE &&
		    ds.shm_ctime == ct && ds.shm_cpid == pid)
			rmid(SHM, id);
	}
}

/* The run's object with the key, asked for again: the kernel's checks
 * for a key it finds (ipcget_public): EEXIST under IPC_CREAT|IPC_EXCL, a
 * size or count larger than the object's EINVAL, access bits the owner's
 * mode does not grant EACCES (the program is the owner; it holds no
 * capability). 0, -errno, or -EIDRM when the object is gone. */
static int found(enum kind k, int id, uint64_t arg, int flags)
{
	unsigned mode, want = ((unsigned)flags >> 6 | (unsigned)flags >> 3 |
			       (unsigned)flags) & 7;

	if ((flags & IPC_CREAT) && (flags & IPC_EXCL))
		return -EEXIST;
	if (k == SHM) {
		struct shmid_ds ds;

		if (shmctl(id, IPC_STAT, &ds) < 0)
			return -EIDRM;
		if (arg > ds.shm_segsz)
			return -EINVAL;
		mode = ds.shm_perm.mode;
	} else if (k == SEM) {
		struct semid_ds ds;

		if (semctl(id, 0, IPC_STAT, &ds) < 0)
			return -EIDRM;
		if (arg > ds.sem_nsems)
			return -EINVAL;
		mode = ds.sem_perm.mode;
	} else {
		struct msqid_ds ds;

		if (msgctl(id, IPC_STAT, &ds) < 0)
			return -EIDRM;
		mode = ds.msg_perm.mode;
	}
	return want & ~(mode >> 6) & 7 ? -EACCES : 0;
}

/* shmget(key, size, flags), semget(key, nsems, flags), msgget(key, flags) */
CR_HANDLER(cr_h_sysv_get)
{
	enum kind k = kind_of(e->name);
	key_t key = (key_t)(int)n->data.args[0];
	int flags = (int)n->data.args[k == MSG ? 1 : 2];
	uint64_t arg = k == MSG ? 0 : n->data.args[1];
	struct cr_sysv *s = sysv_get(run);
	struct obj *o, *slot = NULL;
	int id, rc;

	if (!s)
		return CR_V_ERR(ENOMEM);
	if (k == SEM)
		arg = (uint64_t)(int)arg;	/* the kernel's int */
	if (key != IPC_PRIVATE && (o = find_key(s, k, key))) {
		rc = found(k, o->id, arg, flags);
		if (rc != -EIDRM)
			return rc < 0 ? CR_V_ERR(-rc) : CR_V_VAL(o->id);
		forget(s, k, o);	/* removed from outside the run */
	}
	if (key != IPC_PRIVATE && !(flags & IPC_CREAT))
		return CR_V_ERR(ENOENT);
	if (k == SEM && (int64_t)arg > CR_SYSV_SEMS_MAX) {
		cr_deny(run, (pid_t)n->pid, e->name, NULL, "ipc",
			"more semaphores in one set than a run may make (250)");
		return CR_V_ERR(EINVAL);
	}
	if (k == SHM)
		prune(s);
	for (size_t i = 0; i < CR_SYSV_MAX && !slot; i++)
		if (s->objs[k][i].id < 0)
			slot = &s->objs[k][i];
	if (!slot) {
		cr_deny(run, (pid_t)n->pid, e->name, NULL, "ipc",
			"more System V objects of a kind alive than a run may hold (the host's table is shared)");
		return CR_V_ERR(ENOSPC);
	}
	/* Private in the kernel whatever the key: the key is the run's
	 * (owner bits only: the object is the run's alone). */
	id = do_get(k, IPC_PRIVATE, arg,
		    IPC_CREAT | (flags & ~(int)(IPC_CREAT | IPC_EXCL | S_IRWXG |
						 S_IRWXO)));
	if (id < 0)
		return CR_V_ERR(-id);
	slot->id = id;
	slot->key = key;
	slot->charge = charge_of(run, k, arg);
	s->count[k]++;
	s->fixed += slot->charge;
	if (k == SHM)
		record(run, s);
	rc = cr_budget_on_ipc(run, slot->charge);
	if (rc) {
		rmid(k, id);
		forget(s, k, slot);
		return CR_V_ERR(ENOMEM);
	}
	return CR_V_VAL(id);
}

/* Does an object of kind k exist at id (whoever's it is)? 0 when it
 * does not, else the kernel's IPC_STAT answer: EACCES for one the caller
 * may not read, EPERM for one it may (or a stat of a kind it may not
 * make). */
static int exists(enum kind k, int id)
{
	int rc;

	if (k == SHM) {
		struct shmid_ds ds;

		rc = shmctl(id, IPC_STAT, &ds);
	} else if (k == SEM) {
		struct semid_ds ds;

		rc = semctl(id, 0, IPC_STAT, &ds);
	} else {
		struct msqid_ds ds;

		rc = msgctl(id, IPC_STAT, &ds);
	}
	if (rc < 0 && errno == EACCES)
		return EACCES;
	return rc == 0 || errno == EPERM ? EPERM : 0;
}

/* An id that is not the run's: absent, as an id with no object is
 * (EINVAL). But for IPC_STAT of one that exists: EPERM. PostgreSQL's
 * interlock asks IPC_STAT of the segment its postmaster.pid names, after
 * kill(pid, 0) of the pid there (ESRCH for a process outside the run):
 * EINVAL told it the data directory was free while a server outside the
 * run was using it, and a second postmaster started on it and lost
 * committed rows (found by a compatibility probe). Any other error means
 * "in use" to it. The price: IPC_STAT tells whether an id is taken.
 * One the caller could not read natively answers the kernel's EACCES,
 * which PostgreSQL takes for another user's object: a stale
 * postmaster.pid naming an id another user holds now starts natively,
 * and did not under corral (found by a compatibility probe). */
static struct cr_verdict outside(struct cr_run *run,
				 const struct seccomp_notif *n,
				 const struct cr_syscall_entry *e, enum kind k,
				 int id, int cmd)
{
	static const char *const prefix[NKINDS] = { "shm", "sem", "msg" };
	char what[32];
	int in_use = cmd == IPC_STAT && id >= 0 ? exists(k, id) : 0;

	snprintf(what, sizeof(what), "%s id %d", prefix[k], id);
	cr_deny(run, (pid_t)n->pid, e->name, what, "ipc",
		"the id names a System V object outside the run");
	return CR_V_ERR(in_use ? in_use : EINVAL);
}

/* shmat(id, ...), semop(id, ...), semtimedop(id, ...), msgsnd(id, ...),
 * msgrcv(id, ...): the kernel's, on an object of the run's. */
CR_HANDLER(cr_h_sysv_use)
{
	enum kind k = kind_of(e->name);

	long mtype;

	if (find_id(run->sysv, k, (int)n->data.args[0]))
		return CR_V_CONT;
	/* msgsnd reads the message's type before it looks at the id. */
	if (!strcmp(e->name, "msgsnd") &&
	    cr_mem_read((pid_t)n->pid, n->data.args[1], &mtype, sizeof(mtype)))
		return CR_V_ERR(EFAULT);
	return outside(run, n, e, k, (int)n->data.args[0], -1);
}

/* shmctl(id, cmd, buf), semctl(id, num, cmd, arg), msgctl(id, cmd, buf) */
CR_HANDLER(cr_h_sysv_ctl)
{
	enum kind k = kind_of(e->name);
	int id = (int)n->data.args[0];
	int cmd = (int)n->data.args[k == SEM ? 2 : 1];
	struct obj *o;
	bool listing;
	int rc;

	if (cmd == IPC_INFO)
		return CR_V_CONT;	/* the host's limits, no object */
	listing = k == SHM ? (cmd == SHM_STAT || cmd == SHM_INFO ||
			      cmd == SHM_STAT_ANY) :
		  k == SEM ? (cmd == SEM_STAT || cmd == SEM_INFO ||
			      cmd == SEM_STAT_ANY) :
			     (cmd == MSG_STAT || cmd == MSG_INFO ||
			      cmd == MSG_STAT_ANY);
	if (listing) {
		cr_deny(run, (pid_t)n->pid, e->name, NULL, "ipc",
			"listing the host's System V objects is refused");
		return CR_V_ERR(EINVAL);
	}
	o = find_id(run->sysv, k, id);
	if (!o)
		return outside(run, n, e, k, id, cmd);
	if (cmd == IPC_SET) {
		cr_deny(run, (pid_t)n->pid, e->name, NULL, "ipc",
			"changing a System V object's owner or mode is refused");
		return CR_V_ERR(EPERM);
	}
	if (cmd == IPC_RMID) {
		if (o->removed)
			return CR_V_CONT;	/* the kernel's answer again */
		rc = rmid(k, id);
		if (rc)
			return CR_V_ERR(-rc);
		/* A segment still attached lives on (SHM_DEST) until its
		 * last detach: still the run's, for IPC_STAT and shmat as
		 * the kernel allows, its pages still counted; its key is
		 * free. Gone, it is forgotten (prune). */
		if (k == SHM && exists(SHM, id)) {
			o->removed = true;
			o->key = IPC_PRIVATE;
		} else {
			forget(run->sysv, k, o);
		}
		if (k == SHM)
			record(run, run->sysv);
		return CR_V_VAL(0);
	}
	return CR_V_CONT;
}

/* Resident (and swapped) pages of every segment of the run's, from
 * /proc/sysvipc/shm. Not only those no process attaches: a process can
 * hold a segment attached with none of its pages mapped (MADV_DONTNEED
 * after filling it, or children that filled it and exited), and its RSS
 * then shows nothing (512 MiB so ran ok under memory=64MiB, found by a
 * probing session). A page a process of the run maps counts in its RSS
 * too: towards stopping (docs/limits.md). */
static uint64_t segment_bytes(struct cr_sysv *s)
{
	char line[512];
	uint64_t sum = 0;
	FILE *f = fopen("/proc/sysvipc/shm", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		long long key;
		int id;
		unsigned perms;
		unsigned long long size, nattch, rss, swap;
		int cpid, lpid;
		unsigned uid, gid, cuid, cgid;
		long long at, dt, ct;

		if (sscanf(line, "%lld %d %o %llu %d %d %llu %u %u %u %u %lld %lld %lld %llu %llu",
			   &key, &id, &perms, &size, &cpid, &lpid, &nattch,
			   &uid, &gid, &cuid, &cgid, &at, &dt, &ct, &rss,
			   &swap) == 16 && find_id(s, SHM, id))
			sum += rss + swap;
	}
	fclose(f);
	return sum;
}

/* Removed segments whose last detach came: forgotten (their id may be
 * another's one day). */
static void prune(struct cr_sysv *s)
{
	for (size_t i = 0; i < CR_SYSV_MAX; i++) {
		struct obj *o = &s->objs[SHM][i];

		if (o->id >= 0 && o->removed && !exists(SHM, o->id))
			forget(s, SHM, o);
	}
}

uint64_t cr_sysv_bytes(struct cr_run *run)
{
	struct cr_sysv *s = run->sysv;

	if (!s)
		return 0;
	prune(s);
	return s->fixed + (s->count[SHM] ? segment_bytes(s) : 0);
}

void cr_sysv_finish(struct cr_run *run)
{
	struct cr_sysv *s = run->sysv;

	for (int k = 0; s && k < NKINDS; k++)
		for (size_t i = 0; i < CR_SYSV_MAX; i++) {
			struct obj *o = &s->objs[k][i];

			int rc;

			if (o->id < 0)
				continue;
			rc = rmid((enum kind)k, o->id);
			if (rc && rc != -EINVAL && rc != -EIDRM)
				fprintf(stderr, "corral: could not remove the run's %s object %d: %s\n",
					kind_name[k], o->id, strerror(-rc));
			forget(s, (enum kind)k, o);
		}
	if (s && s->recfd >= 0) {
		unlink(s->recpath);
		close(s->recfd);
		s->recfd = -1;
	}
}

void cr_sysv_free(struct cr_run *run)
{
	if (run->sysv && run->sysv->recfd >= 0)
		close(run->sysv->recfd);	/* kept: the sweep decides */
	if (run->sysv)
		free(run->sysv->recpath);
	free(run->sysv);
	run->sysv = NULL;
}
