/* tracer/handlers/clock.c: adjtimex, clock_adjtime and clock_settime: the
 * clock's NTP state read for the program; setting the clock is refused. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>

#include "handlers.h"
#include "../surface.h"

/* The kernel's own mode bits (uapi's ADJ_OFFSET_SINGLESHOT is the pair
 * ADJTIME | SINGLESHOT, its ADJ_OFFSET_SS_READ the three). */
#define CR_ADJ_SINGLESHOT 0x0001
#define CR_ADJ_READONLY 0x2000
#define CR_ADJ_ADJTIME 0x8000
#define CR_ADJ_SS_READ (CR_ADJ_ADJTIME | CR_ADJ_READONLY | CR_ADJ_SINGLESHOT)
#define CR_ADJ_FREQUENCY 0x0002
#define CR_ADJ_SETOFFSET 0x0100
/* The kernel's PPM_SCALE: a frequency beyond LLONG_MAX / it overflows. */
#define CR_PPM_SCALE (1000LL << 16)

/*
 * The kernel lets any user read the clock's discipline (modes 0, or an
 * adjtime-style mode with ADJ_OFFSET_READONLY, which only reads the
 * offset): glibc's ntp_gettime, `adjtimex -p`, monitoring agents. Any
 * other mode sets something and needs CAP_SYS_TIME, which no run has:
 * refused with the kernel's answer to a user without it, EPERM, and
 * recorded; ADJ_ADJTIME without ADJ_OFFSET_SINGLESHOT is EINVAL first.
 * A read-only adjtime mode with other bits is still checked as the
 * kernel's timekeeping_validate_timex checks it: ADJ_SETOFFSET is EPERM
 * (recorded), an ADJ_FREQUENCY that would overflow EINVAL; any other bit
 * is ignored. The structure is read from the task, checked, and the query
 * made by corral on its own copy (never continued: the modes are memory
 * the task can still change); it is written back as the kernel writes it,
 * by adjtimex whatever the answer and by clock_adjtime (glibc's adjtimex
 * too) only on success, so a structure the task cannot write is EFAULT
 * there and leaves an error alone (found by a probing session).
 * clock_adjtime of another clock answers as the kernel's
 * do_clock_adjtime: a clock without adjustment (the other static ids, a
 * process CPU clock) EOPNOTSUPP, an unknown id or a clock named by an fd
 * EINVAL.
 */
#define CR_CLOCKFD 3

static int other_clock(clockid_t id)
{
	/* A clock named by an fd: no fd the run may hold is one (a PTP
	 * device is not among the devices it may open), and the kernel
	 * answers any other fd EINVAL. */
	if (id < 0)
		return (id & 7) == CR_CLOCKFD ? EINVAL : EOPNOTSUPP;
	if (id == 10 /* the removed SGI clock */ || id > CLOCK_TAI)
		return EINVAL;
	return EOPNOTSUPP;
}

static struct cr_verdict query(struct cr_run *run, const struct seccomp_notif *n,
			       const char *sys, uint64_t addr, clockid_t id,
			       bool always_back)
{
	struct timex tx;
	int r;

	if (cr_mem_read((pid_t)n->pid, addr, &tx, sizeof(tx)) ||
	    !cr_notif_valid(run, n->id))
		return CR_V_ERR(EFAULT);
	if (id != CLOCK_REALTIME)
		return CR_V_ERR(other_clock(id));
	if ((tx.modes & CR_ADJ_ADJTIME) && !(tx.modes & CR_ADJ_SINGLESHOT)) {
		r = -EINVAL;
	} else if (((tx.modes & CR_ADJ_ADJTIME) ?
		    !(tx.modes & CR_ADJ_READONLY) : tx.modes != 0) ||
		   (tx.modes & CR_ADJ_SETOFFSET)) {
		cr_deny(run, (pid_t)n->pid, sys, NULL, "syscall",
			"setting the clock is refused");
		r = -EPERM;
	} else if ((tx.modes & CR_ADJ_FREQUENCY) &&
		   (tx.freq < LLONG_MIN / CR_PPM_SCALE ||
		    tx.freq > LLONG_MAX / CR_PPM_SCALE)) {
		r = -EINVAL;
	} else {
		/* Read-only. An adjtime-style mode ignores every other bit
		 * and reports adjtime's offset: asked as exactly that, or
		 * as a plain query; the caller's modes go back as given. */
		unsigned modes = tx.modes;

		tx.modes = modes ? CR_ADJ_SS_READ : 0;
		r = adjtimex(&tx);
		if (r < 0)
			r = -errno;
		tx.modes = modes;
	}
	if ((r >= 0 || always_back) &&
	    cr_mem_write((pid_t)n->pid, addr, &tx, sizeof(tx)))
		return CR_V_ERR(EFAULT);
	return r < 0 ? CR_V_ERR(-r) : CR_V_VAL(r);
}

CR_HANDLER(cr_h_adjtimex)
{
	return query(run, n, e->name, n->data.args[0], CLOCK_REALTIME, true);
}

CR_HANDLER(cr_h_clock_adjtime)
{
	return query(run, n, e->name, n->data.args[1],
		     (clockid_t)(int)n->data.args[0], false);
}

/* TIME_SETTOD_SEC_MAX: KTIME_SEC_MAX less 30 years of uptime; the first
 * second timespec64_valid_settod refuses. */
#define CR_SETTOD_SEC_MAX 8277292036LL

/*
 * clock_settime: never made (CAP_SYS_TIME, which no run has), but answered
 * with the kernel's errno in the kernel's order, read from the registers
 * and the new time: a static clock that cannot be set (every id but the
 * realtime one, an unknown one) EINVAL; for the others the time unreadable
 * EFAULT (a CPU clock's and a clock device's too, whose time is read
 * before they are looked up: found by a probing session); then a
 * malformed CPU clock or a clock device EINVAL, the realtime clock's time
 * out of range EINVAL; then EPERM, recorded. A process CPU clock is EPERM for a process
 * of the run and EINVAL, the kernel's answer for a free pid, for any other
 * (a thread's pid too); a thread CPU clock EPERM for a thread of the
 * caller's process only.
 * An earlier build answered EPERM to all (found by a differential probing
 * session).
 */
CR_HANDLER(cr_h_clock_settime)
{
	clockid_t id = (clockid_t)(int)n->data.args[0];
	struct timespec ts;

	/* Only the realtime clock and the negative ids (CPU clocks, clock
	 * devices) have a setter: any other id is EINVAL before the time
	 * is read; for those, the time is read first (EFAULT). */
	if (id >= 0 && id != CLOCK_REALTIME)
		return CR_V_ERR(EINVAL);
	if (cr_mem_read((pid_t)n->pid, n->data.args[1], &ts, sizeof(ts)))
		return CR_V_ERR(EFAULT);
	if (id == CLOCK_REALTIME) {
		/* timespec64_valid_settod: a valid time before
		 * TIME_SETTOD_SEC_MAX, before the capability is asked. */
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 ||
		    ts.tv_nsec >= 1000000000L || ts.tv_sec >= CR_SETTOD_SEC_MAX)
			return CR_V_ERR(EINVAL);
	} else if ((id & 7) == CR_CLOCKFD || (id & 3) == 3) {
		return CR_V_ERR(EINVAL);
	} else {
		pid_t pid = (pid_t)~(id >> 3), caller = (pid_t)n->pid;

		/* pid_for_clock: a thread clock names a thread of the
		 * caller's own process, a process clock a process (its
		 * leader's pid); anything else is EINVAL before the
		 * permission (a thread clock of another process of the run
		 * answered EPERM; found by a differential probe). */
		if (pid && (cr_surface_target(run, caller, pid) ==
			    CR_TARGET_OUTSIDE ||
			    ((id & 4) ? cr_surface_tgid(run, pid) !=
					cr_surface_tgid(run, caller) :
					cr_surface_tgid(run, pid) != pid)))
			return CR_V_ERR(EINVAL);
	}
	cr_deny(run, (pid_t)n->pid, e->name, NULL, "syscall",
		"setting the clock is refused");
	return CR_V_ERR(EPERM);
}
