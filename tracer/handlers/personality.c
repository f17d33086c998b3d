/* tracer/handlers/personality.c: personality: the Linux execution domains
 * with the layout flags programs re-exec with, and the query. */
#include <errno.h>
#include <stdio.h>

#include "handlers.h"

/* Persona flags a run may set: what programs re-exec themselves with
 * (GCL, which Debian's maxima is built on, sets READ_IMPLIES_EXEC and
 * ADDR_NO_RANDOMIZE and re-execs; setarch -R, gdb's disable-randomization)
 * and the address-space layouts. Each changes only how the kernel lays out
 * and maps the caller's own later images: a readable mapping made
 * executable gives nothing a program cannot do with mprotect, and corral's
 * boundary on code is what may be read and run. */
#define CR_PERSONA_FLAGS (0x0040000u /* ADDR_NO_RANDOMIZE */ | \
			  0x0200000u /* ADDR_COMPAT_LAYOUT */ | \
			  0x0400000u /* READ_IMPLIES_EXEC */ | \
			  0x0800000u /* ADDR_LIMIT_32BIT */ | \
			  0x8000000u /* ADDR_LIMIT_3GB */ | \
			  0x0020000u /* UNAME26 */)

/* personality(PER_LINUX or PER_LINUX32, with the flags above) and
 * personality(0xffffffff) (a query) run; any other persona is refused:
 * MMAP_PAGE_ZERO maps page zero at the next exec, and the domains of
 * other systems change the ABI. The argument is an unsigned int: the
 * upper half of the register is ignored, as the kernel ignores it.
 * Register-only, so CONTINUE is safe. */
CR_HANDLER(cr_h_personality)
{
	unsigned persona = (unsigned)n->data.args[0];
	unsigned domain = persona & 0xffu;
	char target[32];

	if (persona == 0xffffffffu ||
	    ((domain == 0 || domain == 0x0008u /* PER_LINUX32 */) &&
	     !(persona & ~(CR_PERSONA_FLAGS | 0xffu))))
		return (struct cr_verdict){ .kind = CR_V_CONTINUE };
	snprintf(target, sizeof(target), "persona 0x%x", persona);
	cr_deny(run, (pid_t)n->pid, e->name, target, "syscall",
		"only the Linux execution domains, with layout flags, and the query");
	return (struct cr_verdict){ .kind = CR_V_ERRNO, .error = EPERM };
}
