/* tests/progs/sysv_ipc.c: System V shared memory, semaphores and message
 * queues as a program uses them, and reached from outside its own objects. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>

#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

static void say(const char *what, long rc)
{
	if (rc < 0)
		printf("%s err=%s\n", what, strerrorname_np(errno));
	else
		printf("%s ok\n", what);
}

/* Every call a user of the three kinds makes, on the run's own objects;
 * with "keep", a keyed object of each kind is left for the run's end. */
static int own(int keep, key_t key)
{
	struct shmid_ds ds;
	struct sembuf op = { 0, 1, 0 };
	struct { long type; char text[16]; } m = { 1, "hello" }, r;
	char *p;
	int shm, sem, msg, again, ro;
	pid_t pid;
	int st;

	shm = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0666);
	say("shmget", shm);
	p = shmat(shm, NULL, 0);
	say("shmat", p == (void *)-1 ? -1 : 0);
	if (p == (void *)-1)
		return 1;
	strcpy(p, "from-parent");
	pid = fork();
	if (pid == 0) {
		char *q = shmat(shm, NULL, 0);

		if (q == (void *)-1)
			_exit(2);
		strcpy(q + 64, q);	/* the child saw the parent's write */
		shmdt(q);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	printf("child copied: %s\n", p + 64);
	say("shmctl IPC_STAT", shmctl(shm, IPC_STAT, &ds));
	printf("mode %o nattch %lu size %zu\n", ds.shm_perm.mode & 0777,
	       (unsigned long)ds.shm_nattch, ds.shm_segsz);
	ds.shm_perm.mode = 0644;
	say("shmctl IPC_SET", shmctl(shm, IPC_SET, &ds));
	say("shmdt", shmdt(p));
	say("shmctl IPC_RMID", shmctl(shm, IPC_RMID, NULL));
	say("shmat after RMID", shmat(shm, NULL, 0) == (void *)-1 ? -1 : 0);

	/* Removed while attached: it lives on until its last detach. */
	shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	p = shmat(shm, NULL, 0);
	say("shmctl IPC_RMID attached", shmctl(shm, IPC_RMID, NULL));
	say("shmctl IPC_STAT removed attached", shmctl(shm, IPC_STAT, &ds));
	printf("dest %d\n", (ds.shm_perm.mode & SHM_DEST) != 0);
	shmdt(p);
	say("shmctl IPC_STAT removed detached", shmctl(shm, IPC_STAT, &ds));

	sem = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
	say("semget", sem);
	say("semctl SETVAL", semctl(sem, 1, SETVAL, (union semun){ .val = 5 }));
	op.sem_num = 1;
	say("semop", semop(sem, &op, 1));
	printf("semval %d\n", semctl(sem, 1, GETVAL));
	say("semctl IPC_RMID", semctl(sem, 0, IPC_RMID));

	msg = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	say("msgget", msg);
	say("msgsnd", msgsnd(msg, &m, sizeof(m.text), 0));
	say("msgrcv", msgrcv(msg, &r, sizeof(r.text), 0, 0));
	printf("message %s\n", r.text);
	say("msgctl IPC_RMID", msgctl(msg, IPC_RMID, NULL));

	/* A key: made with IPC_EXCL, found again, EEXIST a second time. */
	shm = shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600);
	say("shmget key", shm);
	again = shmget(key, 0, 0);
	printf("found again: %s\n", again == shm ? "same" : "different");
	say("shmget key EXCL again",
	    shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600));
	say("shmget key too big", shmget(key, 8192, 0));
	ro = shmget(key ^ 1, 4096, IPC_CREAT | 0400);
	if (ro >= 0) {
		say("shmget key read-only, for writing",
		    shmget(key ^ 1, 0, 0600));
		say("shmget key read-only, for reading",
		    shmget(key ^ 1, 0, 0400));
		shmctl(ro, IPC_RMID, NULL);
	}
	if (keep) {
		say("semget key", semget(key, 1, IPC_CREAT | 0600));
		say("msgget key", msgget(key, IPC_CREAT | 0600));
	} else {
		say("shmctl key IPC_RMID", shmctl(shm, IPC_RMID, NULL));
	}
	return 0;
}

/* Objects outside the run: an id and a key the caller made. */
static int outside(int id, key_t key)
{
	struct shmid_ds ds;
	struct shm_info info;
	int mine;

	say("shmat outside", shmat(id, NULL, SHM_RDONLY) == (void *)-1 ? -1 : 0);
	say("shmctl IPC_STAT outside", shmctl(id, IPC_STAT, &ds));
	say("shmctl IPC_RMID outside", shmctl(id, IPC_RMID, NULL));
	say("shmget key outside", shmget(key, 0, 0));
	mine = shmget(key, 4096, IPC_CREAT | 0600);
	say("shmget key outside CREAT", mine);
	printf("the key's object: %s\n", mine == id ? "outside" : "its own");
	say("shmget key again EXCL",
	    shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600));
	say("shmget key again", shmget(key, 0, 0) == mine ? 0 : -1);
	say("shmctl SHM_INFO", shmctl(0, SHM_INFO, (struct shmid_ds *)&info));
	say("shmctl SHM_STAT_ANY", shmctl(0, SHM_STAT_ANY, &ds));
	say("semop outside", semop(id, &(struct sembuf){ 0, 1, 0 }, 1));
	say("msgsnd outside", msgsnd(id, &(struct { long t; char c; }){ 1, 0 },
				     1, IPC_NOWAIT));
	/* The kernel reads the message's type before the id: EFAULT. */
	say("msgsnd outside bad message", msgsnd(id, (void *)8, 1, IPC_NOWAIT));
	return 0;
}

/* More objects of one kind than a run may hold. */
static int many(int n)
{
	int made = 0;

	for (int i = 0; i < n; i++) {
		if (shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600) < 0) {
			printf("made %d, then err=%s\n", made,
			       strerrorname_np(errno));
			return 0;
		}
		made++;
	}
	printf("made %d\n", made);
	return 0;
}

/* A new private segment of mib MiB, attached; NULL (said) on failure. */
static char *attached(size_t mib)
{
	int shm = shmget(IPC_PRIVATE, mib << 20, IPC_CREAT | 0600);
	char *p;

	if (shm < 0) {
		perror("shmget");
		return NULL;
	}
	p = shmat(shm, NULL, 0);
	if (p == (void *)-1) {
		perror("shmat");
		return NULL;
	}
	return p;
}

static int held(int seconds)
{
	fflush(stdout);
	sleep((unsigned)seconds);
	printf("held\n");
	return 0;
}

/* Segments filled one at a time, each detached and kept: their pages
 * are no process's. */
static int hold(int count, size_t mib, int seconds)
{
	for (int i = 0; i < count; i++) {
		char *p = attached(mib);

		if (!p)
			return 1;
		memset(p, 7, mib << 20);
		shmdt(p);
	}
	printf("detached %d x %zu MiB\n", count, mib);
	return held(seconds);
}

/* One segment kept attached, filled 8 MiB at a time, each chunk then
 * dropped from the page table (MADV_DONTNEED): the segment keeps its
 * pages, the process's RSS shows none. */
static int dontneed(size_t mib, int seconds)
{
	char *p = attached(mib);

	if (!p)
		return 1;
	for (size_t off = 0; off < mib << 20; off += 8 << 20) {
		memset(p + off, 7, 8 << 20);
		madvise(p + off, 8 << 20, MADV_DONTNEED);
	}
	printf("filled %zu MiB, mapped none\n", mib);
	return held(seconds);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "own"))
		return own(argc > 3 && !strcmp(argv[3], "keep"),
			   (key_t)strtol(argv[2], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "stat")) {
		struct shmid_ds ds;

		say("shmctl IPC_STAT", shmctl(atoi(argv[2]), IPC_STAT, &ds));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "outside"))
		return outside(atoi(argv[2]), (key_t)strtol(argv[3], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "many"))
		return many(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "dontneed"))
		return dontneed((size_t)atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "hold"))
		return hold(atoi(argv[2]), (size_t)atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: sysv_ipc own KEY [keep] | outside ID KEY | stat ID | many N | hold COUNT MIB SECONDS | dontneed MIB SECONDS\n");
	return 2;
}
