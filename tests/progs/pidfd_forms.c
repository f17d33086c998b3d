/* tests/progs/pidfd_forms.c: pidfd_send_signal through the forms a program
 * may use that name no descriptor of its own or a gone process's group.
 *
 *   pidfd_forms self     PIDFD_SELF_THREAD and PIDFD_SELF_THREAD_GROUP
 *                        (6.15+): SIGUSR1 to itself, counted
 *   pidfd_forms zgroup   SIGTERM with PIDFD_SIGNAL_PROCESS_GROUP through the
 *                        pidfd of a group leader that exited (not reaped)
 *                        while a member of its group runs
 *
 * Output: one line per call, "what ret=R errno=E", then what happened. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	(void)sig;
	got++;
}

static void rep(const char *what, long r)
{
	printf("%s ret=%ld errno=%s\n", what, r, r < 0 ? strerror(errno) : "0");
	fflush(stdout);
}

static int cmd_self(void)
{
	signal(SIGUSR1, on_usr1);
	errno = 0;
	rep("PIDFD_SELF_THREAD", syscall(SYS_pidfd_send_signal, -10000,
					 SIGUSR1, NULL, 0));
	errno = 0;
	rep("PIDFD_SELF_THREAD_GROUP", syscall(SYS_pidfd_send_signal, -10001,
					       SIGUSR1, NULL, 0));
	printf("received %d\n", (int)got);
	return 0;
}

static int cmd_zgroup(void)
{
	int p[2], pfd, st;
	pid_t lead, member, w;
	siginfo_t si;

	if (pipe(p) < 0)
		return 1;
	prctl(PR_SET_CHILD_SUBREAPER, 1);	/* the member is ours later */
	lead = fork();
	if (lead == 0) {
		setpgid(0, 0);
		member = fork();
		if (member == 0) {
			pause();
			_exit(0);
		}
		if (write(p[1], &member, sizeof(member)) < 0)
			_exit(1);
		_exit(0);
	}
	if (read(p[0], &member, sizeof(member)) != sizeof(member))
		return 1;
	pfd = (int)syscall(SYS_pidfd_open, lead, 0);
	waitid(P_PID, (id_t)lead, &si, WEXITED | WNOWAIT);	/* a zombie */
	errno = 0;
	rep("PROCESS_GROUP of a gone leader",
	    syscall(SYS_pidfd_send_signal, pfd, SIGTERM, NULL, 1UL << 2));
	for (int i = 0; i < 100; i++) {
		w = waitpid(member, &st, WNOHANG);
		if (w == member)
			break;
		usleep(20000);
	}
	printf("member %s\n", w == member && WIFSIGNALED(st) &&
	       WTERMSIG(st) == SIGTERM ? "signalled" : "not signalled");
	kill(member, SIGKILL);
	waitpid(lead, NULL, 0);
	waitpid(member, NULL, 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "self"))
		return cmd_self();
	if (argc > 1 && !strcmp(argv[1], "zgroup"))
		return cmd_zgroup();
	fprintf(stderr, "usage: see the comment at the top\n");
	return 2;
}
