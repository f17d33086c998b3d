/* tracer/broker/broker.h: the capability broker: a loopback HTTP endpoint per
 * credential; corral makes the upstream request with the secret, outside. */
#ifndef CORRAL_BROKER_H
#define CORRAL_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct cr_run;
struct cr_run_config;

/* Before the environment is built and the network set up: reads each
 * credential's secret, listens on 127.0.0.1, adds the address to the run's
 * allowed destinations. -errno with the reason in err. */
int cr_broker_setup(struct cr_run *run, char *err, size_t errlen);
/* After the filesystem rules are set up: refuses (run ended, -EPERM) a
 * secret file the run could read or a CA file it could write. */
int cr_broker_check_files(struct cr_run *run);
/* After the environment is built: CORRAL_BROKER_<NAME>=http://127.0.0.1:P,
 * and no variable whose value holds a secret. */
int cr_broker_env(struct cr_run *run);
/* Is dest one of the run's brokers? */
bool cr_broker_is_dest(const struct cr_run *run, const struct sockaddr *dest,
		       socklen_t destlen);
/* The proxy, for each connection it makes on the program's behalf, before
 * its connect: when dest is a broker's, binds fd to a loopback port and
 * registers it, so that the broker serves that peer and no other (0; or
 * -errno, and the connection must not be made). 0 for other
 * destinations. */
int cr_broker_expect(struct cr_run *run, int fd, const struct sockaddr *dest,
		     socklen_t destlen);
/* The proxy, instead of closing such a socket: true when the broker
 * took it (shut down, kept until the broker accepts its connection, so
 * that its address stays corral's); false when the caller closes it (not
 * a broker connection, or one that never connected: its registration is
 * withdrawn). */
bool cr_broker_forget(struct cr_run *run, int fd);
/* The loop, at each budget tick and at the end: the bytes the broker
 * moved with origins since, charged to net-bytes (ends the run past it). */
void cr_broker_settle(struct cr_run *run);
/* After the child exists: the serving thread. */
int cr_broker_start(struct cr_run *run);
/* In cleanup: stop serving, end any upstream request, join, close, wipe
 * the secrets, record the refusals. Idempotent. */
void cr_broker_finish(struct cr_run *run);

#endif
