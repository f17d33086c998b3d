/* tracer/handlers/personality.c: personality: the default execution domain
 * and the query only. */
#include <errno.h>
#include <stdio.h>

#include "handlers.h"

/* personality(PER_LINUX) and personality(0xffffffff) (a query) run; any
 * other persona is refused, because its flags change how the kernel treats
 * the program: READ_IMPLIES_EXEC makes every readable mapping executable,
 * ADDR_NO_RANDOMIZE turns off ASLR for what it executes next, ADDR_LIMIT_*
 * and the PER_* domains of other systems change the ABI. The argument is an
 * unsigned int: the upper half of the register is ignored, as the kernel
 * ignores it. Register-only, so CONTINUE is safe. */
CR_HANDLER(cr_h_personality)
{
	unsigned persona = (unsigned)n->data.args[0];
	char target[32];

	if (persona == 0 || persona == 0xffffffffu)
		return (struct cr_verdict){ .kind = CR_V_CONTINUE };
	snprintf(target, sizeof(target), "persona 0x%x", persona);
	cr_deny(run, (pid_t)n->pid, e->name, target, "syscall",
		"only the default execution domain (PER_LINUX) and the query");
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
}
