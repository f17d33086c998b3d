/* tracer/handlers/memfd.c: memfd_create, performed by the supervisor so every
 * memfd of the run is in the ledger of files without a name (fs/held.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../fs/fsops.h"

/* The kernel's longest name: NAME_MAX minus "memfd:". */
#define MEMFD_NAME_MAX 249

/*
 * The kernel makes a memfd as a pseudo file that no inode counter sees, so
 * the ledger could not tell when a memfd sent into a socket's queue or
 * left in a mapping is gone. The supervisor creates it, opens it afresh
 * through /proc/self/fd (an ordinary open: same inode, same name, seals
 * and flags, counted), gives the program that open and closes the pseudo
 * file. The name is read once into our copy; it decides nothing.
 */
CR_HANDLER(cr_h_memfd_create)
{
	char name[MEMFD_NAME_MAX + 2], p[64];
	unsigned flags = (unsigned)n->data.args[1];
	int rc, mfd, fd;
	struct cr_verdict v;

	rc = cr_mem_read_str((pid_t)n->pid, n->data.args[0], name, sizeof(name));
	if (rc == -EFAULT) {
		/* The kernel judges the flags before it reads the name: a
		 * memfd of ours with them says which comes first. */
		mfd = memfd_create("", flags | MFD_CLOEXEC);
		if (mfd < 0)
			return CR_V_ERR(errno);
		close(mfd);
	}
	if (rc == -ENAMETOOLONG)
		return CR_V_ERR(EINVAL);
	if (rc)
		return CR_V_ERR(-rc);
	if (!cr_notif_valid(run, n->id))
		return CR_V_ERR(EINTR);
	if ((rc = cr_fs_held_room(run)))
		return CR_V_ERR(-rc);
	mfd = memfd_create(name, flags | MFD_CLOEXEC);
	if (mfd < 0)
		return CR_V_ERR(errno);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", mfd);
	fd = open(p, O_RDWR | O_CLOEXEC);
	rc = fd < 0 ? -errno : cr_fs_held_add(run, fd);
	close(mfd);
	if (rc) {
		if (fd >= 0)
			close(fd);
		return CR_V_ERR(-rc == EDQUOT ? EMFILE : -rc);
	}
	v = cr_notif_send_fd(run, n, fd, flags & MFD_CLOEXEC);
	return v;
}
