/* tracer/termsafe.c: a byte-at-a-time state machine over the echoed output
 * that passes colour and layout and shows any other control as text. */
#include <string.h>

#include "termsafe.h"

/*
 * The rule (docs/interface.md, "Echo to a terminal"):
 * - printable ASCII, DEL, and BEL BS HT LF VT FF CR pass;
 * - valid UTF-8 passes, except the C1 code points U+0080..U+009F;
 * - an escape sequence passes only when it is whole and one of: CSI with
 *   digits, ';' and ':' only and a final byte in "m@ABCDEFGHKLMPXdf", or
 *   "J" with no parameter or 0, 1, 2; CSI ?25h and CSI ?25l (show and hide
 *   the cursor); ESC 7, ESC 8 (save and restore it); ESC ( B (ASCII).
 *   None of those makes a terminal answer, or keeps it changed beyond
 *   colour, cursor place and screen contents;
 * - anything else is shown as `cat -v` shows it: ESC as "^[" (what follows
 *   it is then ordinary text: an OSC string is printed, not obeyed), other
 *   C0 bytes as "^X", C1 controls and bytes outside valid UTF-8 as "M-..."
 *   (a C1 written as UTF-8 by its code point).
 * Nothing is ever written half: a sequence or a character is held until it
 * is whole or refused, so the output is always back at the terminal's
 * ground state and stdout and stderr interleaved cannot join into one
 * sequence. What is held is bounded (CR_TERMSAFE_SEQ_MAX, 4 bytes).
 */

struct out {
	char *p;
	size_t n;
};

static void put(struct out *o, unsigned char c)
{
	o->p[o->n++] = (char)c;
}

/* A byte >= 0x80 that does not pass, as `cat -v` shows it. */
static void put_high(struct out *o, unsigned char c)
{
	put(o, 'M');
	put(o, '-');
	c &= 0x7f;
	if (c < 0x20) {
		put(o, '^');
		put(o, c + 0x40);
	} else if (c == 0x7f) {
		put(o, '^');
		put(o, '?');
	} else {
		put(o, c);
	}
}

/* ESC and what was held after it, refused: visible, and harmless since
 * only bytes 0x20..0x7e are ever held. */
static void refuse_seq(struct cr_termsafe *t, struct out *o)
{
	put(o, '^');
	put(o, '[');
	for (size_t i = 0; i < t->slen; i++)
		put(o, t->seq[i]);
	t->in_esc = false;
	t->slen = 0;
}

static void pass_seq(struct cr_termsafe *t, struct out *o, unsigned char fin)
{
	put(o, 0x1b);
	for (size_t i = 0; i < t->slen; i++)
		put(o, t->seq[i]);
	put(o, fin);
	t->in_esc = false;
	t->slen = 0;
}

/* A UTF-8 character begun and not finished: its bytes do not pass. */
static void refuse_u8(struct cr_termsafe *t, struct out *o)
{
	for (size_t i = 0; i < t->u8len; i++)
		put_high(o, t->u8[i]);
	t->u8len = t->u8need = 0;
}

/* CSI parameters p (length n) and final byte f: does it pass? */
static bool csi_ok(const unsigned char *p, size_t n, unsigned char f)
{
	if (n == 3 && !memcmp(p, "?25", 3))
		return f == 'h' || f == 'l';
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || p[i] == ';' || p[i] == ':'))
			return false;
	if (f == 'J')	/* 3 would erase the user's scrollback */
		return n == 0 || (n == 1 && p[0] >= '0' && p[0] <= '2');
	return f && strchr("m@ABCDEFGHKLMPXdf", f);
}

static void ground(struct cr_termsafe *t, struct out *o, unsigned char c)
{
	if (c == 0x1b) {
		t->in_esc = true;
		t->slen = 0;
	} else if (c < 0x20) {
		if (c >= 0x07 && c <= 0x0d) {
			put(o, c);
		} else {
			put(o, '^');
			put(o, c + 0x40);
		}
	} else if (c < 0x80) {
		put(o, c);
	} else if (c >= 0xc2 && c <= 0xf4) {
		t->u8[0] = c;
		t->u8len = 1;
		t->u8need = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	} else {
		put_high(o, c);	/* a stray continuation, C0/C1 lead, F5..FF */
	}
}

/* The next byte of a UTF-8 character: is it one, where it stands? */
static bool u8_cont_ok(const struct cr_termsafe *t, unsigned char c)
{
	unsigned char lo = 0x80, hi = 0xbf;

	if (t->u8len == 1) {	/* no overlong forms, surrogates, > U+10FFFF */
		if (t->u8[0] == 0xe0)
			lo = 0xa0;
		else if (t->u8[0] == 0xed)
			hi = 0x9f;
		else if (t->u8[0] == 0xf0)
			lo = 0x90;
		else if (t->u8[0] == 0xf4)
			hi = 0x8f;
	}
	return c >= lo && c <= hi;
}

static void step(struct cr_termsafe *t, struct out *o, unsigned char c)
{
	if (t->u8need) {
		if (!u8_cont_ok(t, c)) {
			refuse_u8(t, o);
			ground(t, o, c);
			return;
		}
		t->u8[t->u8len++] = c;
		if (t->u8len < t->u8need)
			return;
		if (t->u8[0] == 0xc2 && t->u8[1] < 0xa0) {
			put_high(o, t->u8[1]);	/* U+0080..U+009F: a C1 */
		} else {
			for (size_t i = 0; i < t->u8len; i++)
				put(o, t->u8[i]);
		}
		t->u8len = t->u8need = 0;
		return;
	}
	if (!t->in_esc) {
		ground(t, o, c);
		return;
	}
	if (t->slen == 0) {
		if (c == '7' || c == '8') {
			pass_seq(t, o, c);
		} else if (c == '[' || c == '(') {
			t->seq[t->slen++] = c;
		} else {
			refuse_seq(t, o);
			ground(t, o, c);
		}
		return;
	}
	if (t->seq[0] == '(') {
		if (c == 'B') {
			pass_seq(t, o, c);
		} else {
			refuse_seq(t, o);
			ground(t, o, c);
		}
		return;
	}
	/* CSI: parameters and intermediates 0x20..0x3f, then a final byte. */
	if (c >= 0x20 && c <= 0x3f && t->slen < CR_TERMSAFE_SEQ_MAX) {
		t->seq[t->slen++] = c;
	} else if (c >= 0x40 && c <= 0x7e) {
		if (csi_ok(t->seq + 1, t->slen - 1u, c)) {
			pass_seq(t, o, c);
		} else {
			refuse_seq(t, o);
			put(o, c);
		}
	} else {
		/* Too long, or a byte no sequence holds (a control, ESC,
		 * a byte >= 0x7f): the sequence so far is refused. */
		refuse_seq(t, o);
		ground(t, o, c);
	}
}

size_t cr_termsafe_feed(struct cr_termsafe *t, const void *in, size_t n,
			char *out, size_t outsz, size_t *used)
{
	const unsigned char *p = in;
	struct out o = { .p = out, .n = 0 };
	size_t i;

	for (i = 0; i < n && outsz - o.n >= CR_TERMSAFE_STEP; i++)
		step(t, &o, p[i]);
	*used = i;
	return o.n;
}

size_t cr_termsafe_flush(struct cr_termsafe *t, char *out)
{
	struct out o = { .p = out, .n = 0 };

	if (t->in_esc)
		refuse_seq(t, &o);
	if (t->u8need)
		refuse_u8(t, &o);
	memset(t, 0, sizeof(*t));
	return o.n;
}
