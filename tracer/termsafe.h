/* tracer/termsafe.h: the filter that makes the program's echoed output safe
 * for a terminal: colour and layout pass, sequences that make it answer do not. */
#ifndef CR_TERMSAFE_H
#define CR_TERMSAFE_H

#include <stdbool.h>
#include <stddef.h>

/* The longest escape sequence kept whole (the bytes after ESC); a longer
 * one is not passed. 64 holds any SGR colour a real program writes. */
#define CR_TERMSAFE_SEQ_MAX 64
/* The most one input byte can make the filter write: a refused sequence
 * made visible ("^[" and what it held) and that byte shown as "M-^X". */
#define CR_TERMSAFE_STEP (CR_TERMSAFE_SEQ_MAX + 8)

/* State between two pieces of one stream: an escape sequence or a UTF-8
 * character begun and not ended. Zeroed is the start of a stream. */
struct cr_termsafe {
	unsigned char seq[CR_TERMSAFE_SEQ_MAX];	/* after ESC */
	unsigned char slen;
	bool in_esc;
	unsigned char u8[4];	/* a UTF-8 character begun */
	unsigned char u8len, u8need;
};

/*
 * Filter n bytes of in into out (outsz >= CR_TERMSAFE_STEP). Stops when out
 * has less than CR_TERMSAFE_STEP left: *used says how much of in was taken
 * (call again with the rest). Returns the bytes written to out. What passes
 * and what is made visible: docs/interface.md ("Echo to a terminal").
 */
size_t cr_termsafe_feed(struct cr_termsafe *t, const void *in, size_t n,
			char *out, size_t outsz, size_t *used);
/* The end of the stream: what is pending, made visible, into out (at least
 * CR_TERMSAFE_STEP bytes). Returns its length; t is back at the start. */
size_t cr_termsafe_flush(struct cr_termsafe *t, char *out);

#endif
