/* tests/progs/group_kill.c: kill(-pgrp, SIG) while the group's leader is
 * forking. The kernel signals a group in one step: a fork racing it either
 * fails or its child gets the signal too, so no member goes on.
 *
 *   group_kill ROUNDS KILL|STOP
 *
 * Each round: a leader in a group of its own forks 20 children (each
 * holding the write end of a pipe) while the runner, after a random pause
 * of up to 3 ms, sends SIGKILL (or SIGSTOP) to the group. KILL: the pipe
 * must reach EOF (every member gone); STOP: no member may be left running
 * (state R or S in /proc). Prints "rounds=N bad=M". */
#define _GNU_SOURCE
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Members of pgrp not stopped (nor dead); kill = SIGKILL each. */
static int running(pid_t pgrp, int kill_them)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char p[64], b[512], st, *q;
		int pid = atoi(e->d_name), pp, pg;
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/stat", pid);
		if (!(f = fopen(p, "r")))
			continue;
		if (fgets(b, sizeof(b), f) && (q = strrchr(b, ')')) &&
		    sscanf(q + 2, "%c %d %d", &st, &pp, &pg) == 3 &&
		    pg == pgrp && st != 'Z' && st != 'T' && st != 't') {
			n++;
			if (kill_them)
				kill(pid, SIGKILL);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20, bad = 0;
	int stop = argc > 2 && !strcmp(argv[2], "STOP");

	srand(1);
	for (int r = 0; r < rounds; r++) {
		int p[2], go[2];
		char x = 1;
		pid_t leader;

		if (pipe(p) < 0 || pipe(go) < 0)
			return 1;
		leader = fork();
		if (!leader) {
			setpgid(0, 0);
			close(p[0]);
			if (write(go[1], &x, 1) < 0)
				_exit(1);
			for (int i = 0; i < 20; i++)
				if (fork() == 0)
					for (;;)
						pause();
			for (;;)
				pause();
		}
		setpgid(leader, leader);
		close(p[1]);
		close(go[1]);
		if (read(go[0], &x, 1) < 0)
			return 1;
		close(go[0]);
		struct timespec ts = { 0, (rand() % 3000) * 1000L };
		nanosleep(&ts, NULL);
		kill(-leader, stop ? SIGSTOP : SIGKILL);
		if (stop) {
			usleep(300000);
			if (running(leader, 0))
				bad++;
			kill(-leader, SIGKILL);
		} else {
			struct pollfd pf = { p[0], POLLIN, 0 };

			if (poll(&pf, 1, 2000) == 0)
				bad++;
		}
		running(leader, 1);
		kill(-leader, SIGKILL);
		kill(-leader, SIGCONT);
		while (waitpid(-1, NULL, 0) > 0)
			;
		close(p[0]);
	}
	printf("rounds=%d bad=%d\n", rounds, bad);
	return 0;
}
