/* tracer/handlers/epoll.c: epoll_create, epoll_create1 made by the
 * supervisor, which holds each, so hidden instances stay charged. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "handlers.h"
#include "../budget.h"

/*
 * An instance's watches are kernel memory no RSS shows, and a thread
 * blocked in epoll_wait() keeps an instance whose descriptors were all
 * closed (tracer/epollmem.c). So the supervisor makes every instance, with
 * the kernel's checks of the arguments (epoll_create's size is only
 * checked for being positive), marks and holds it, and installs it.
 * Nothing here reads the program's memory or decides an access.
 */
CR_HANDLER(cr_h_epoll_create)
{
	bool one = !strcmp(e->name, "epoll_create1");
	int flags = one ? (int)n->data.args[0] : 0;
	struct cr_verdict v;
	int fd, rc;

	if (one ? (flags & ~EPOLL_CLOEXEC) != 0 : (int)n->data.args[0] <= 0)
		return CR_V_ERR(EINVAL);
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return CR_V_ERR(errno);
	rc = cr_budget_on_epoll(run, fd);
	if (rc < 0) {
		close(fd);
		return CR_V_ERR(-rc == EMFILE || -rc == ENFILE ? -rc : ENOMEM);
	}
	v = cr_notif_send_fd(run, n, fd, (flags & EPOLL_CLOEXEC) != 0);
	close(fd);
	return v;
}
