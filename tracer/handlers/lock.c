/* tracer/handlers/lock.c: fcntl's record-lock commands, counted for the
 * memory budget before the kernel makes them (tracer/budget.c, locks). */
#include <errno.h>
#include <fcntl.h>

#include "../budget.h"
#include "handlers.h"

/*
 * F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW. Each record the kernel
 * keeps is slab no RSS shows and no limit bounds; a call adds at most
 * two. The verdict rests on the command register alone (the struct flock
 * is never read), so the call is continued and the kernel answers it,
 * errno for errno; only when its records could pass the memory budget
 * does it fail, with the kernel's own answer for a lock it cannot record
 * (ENOLCK), and the run ends naming memory.
 */
CR_HANDLER(cr_h_fcntl_lock)
{
	int cmd = (int)n->data.args[1];
	int rc;

	(void)e;
	rc = cr_budget_on_lock(run, cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW);
	return rc ? CR_V_ERR(-rc) : CR_V_CONT;
}
