/* include/corral/result.h: the contract's result statuses and the exit code
 * each one maps to, as published in the interface document. */
#ifndef CORRAL_RESULT_H
#define CORRAL_RESULT_H

enum cr_status {
	CR_ST_OK,		/* the program exited 0: exit 0 */
	CR_ST_PROGRAM_ERROR,	/* non-zero exit or a signal not sent by corral */
	CR_ST_POLICY_DENIED,	/* refused or stopped for a policy reason: 126 */
	CR_ST_LIMIT_EXCEEDED,	/* a budget fired, the tree was killed: 124 */
	CR_ST_PLATFORM_FAILURE,	/* corral could not sandbox: 125 */
	CR_ST_CANCELLED,	/* SIGINT/SIGTERM/SIGHUP to corral: 130 */
	CR_ST__COUNT
};

#define CR_EXIT_LIMIT 124	/* limit_exceeded */
#define CR_EXIT_USAGE 125	/* platform_failure and usage errors */
#define CR_EXIT_DENIED 126	/* policy_denied */
#define CR_EXIT_NOT_FOUND 127	/* the command could not be executed */
#define CR_EXIT_CANCELLED 130	/* cancelled */

/* "ok", "program_error", ... as in the contract. */
const char *cr_status_name(enum cr_status st);

#endif
