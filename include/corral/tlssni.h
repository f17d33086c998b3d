/* include/corral/tlssni.h: the server name of a TLS ClientHello, read by
 * the proxy before it relays a connection allowed by name. */
#ifndef CORRAL_TLSSNI_H
#define CORRAL_TLSSNI_H

#include <stddef.h>
#include <stdint.h>

#define CR_TLS_PEEK_MAX (5 + 16384)	/* one full TLS record */

/* The first bytes a client sent. Returns 0 with the host name (lower case)
 * in out; -ENOENT for a ClientHello without a server name; -EAGAIN when
 * more bytes are needed; -EPROTO when the bytes are not a TLS handshake
 * record; -EINVAL when a ClientHello is malformed. */
int cr_tls_sni(const uint8_t *m, size_t len, char *out, size_t outlen);

#endif
