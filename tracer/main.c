/* tracer/main.c: the corral command: dispatches run, probe, policy check,
 * audit verify and version. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "corral/probe.h"
#include "tracer.h"

static int policy_check(int argc, char **argv)
{
	cr_autofree char *text = NULL;
	char err[2048];
	struct cr_policy *p = NULL;
	size_t len;
	char *out;
	int rc;

	if (argc != 3 || strcmp(argv[1], "check")) {
		fprintf(stderr, "usage: corral policy check FILE\n");
		return CR_EXIT_USAGE;
	}
	rc = cr_read_file(argv[2], 1u << 20, &text, &len);
	if (rc) {
		fprintf(stderr, "corral: %s: cannot read: %s\n", argv[2],
			strerror(-rc));
		return 1;
	}
	if (cr_policy_parse(text, len, argv[2], &p, err, sizeof(err)) < 0) {
		fprintf(stderr, "corral: %s\n", err);
		return 1;
	}
	out = cr_policy_to_json(p);
	cr_policy_free(p);
	if (!out) {
		fprintf(stderr, "corral: out of memory\n");
		return 1;
	}
	printf("%s\n", out);
	free(out);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "run")) {
		int code;

		/* A closed standard fd would be taken by the first fd the
		 * run opens (a signalfd, a pipe) and then be passed on or
		 * written to as if it were the caller's: each is /dev/null
		 * instead, as the caller would have got by redirecting. */
		for (int fd = 0; fd < 3; fd++)
			if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
			    open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd)
				return CR_EXIT_USAGE;
		code = cr_run_main(argc - 1, argv + 1);

#ifndef __SANITIZE_ADDRESS__
		/* Everything the run made is closed, removed and freed by
		 * now (cr_run_main's one cleanup path); what exit() would add
		 * is the libraries' destructors, whose first touch of their
		 * pages cost ~10 page faults (~0.2 ms here). The sanitizer
		 * build exits normally, for its leak check. */
		fflush(NULL);
		_exit(code);
#endif
		return code;
	}
	if (!strcmp(cmd, "probe"))
		return cr_probe_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "gc"))
		return cr_workspace_gc_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "policy"))
		return policy_check(argc - 1, argv + 1);
	if (!strcmp(cmd, "audit"))
		return cr_audit_verify_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("corral %s\n", CR_VERSION);
		return 0;
	}
	fprintf(stderr,
		"usage: corral run [OPTIONS] -- COMMAND [ARG...]\n"
		"       corral run --request FILE [OPTIONS]\n"
		"       corral probe [--json]\n"
		"       corral policy check FILE\n"
		"       corral gc\n"
		"       corral audit verify FILE [--head HEAD]\n"
		"       corral version\n");
	return CR_EXIT_USAGE;
}
