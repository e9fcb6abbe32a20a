/*
 * test_nhdiff.c - NetHack 4 payloads and save diffs (core/fmt/nethack/nhdiff.c):
 * vectors assembled by hand for every command of the three diff formats
 * (beta3's bit layout written out bit by bit, and more of it through a
 * small encoder that keeps its own MRU list), every error with its exact
 * message, payload decoding (plain, zlib, every malformed form), and the
 * real logs in ../shared/samples/nethack4: every diff replayed from the
 * backup, every CRC checked, the sizes pinned.
 *
 * The samples' directory comes from $SAMPLES (meson sets it) or argv[1];
 * without it that part is skipped with a message and the rest still runs.
 */
#include "fmt/nethack/nethack.h"
#include "t.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>

#define B(...) ((const uint8_t[]){ __VA_ARGS__ }), sizeof((const uint8_t[]){ __VA_ARGS__ })
#define MAX (1ull << 30)

static const uint8_t ABC[] = "ABCDEFGHIJ"; /* the usual base: 10 bytes */

struct run {
	int rc;
	struct sv_buf out;
	struct nh_diff_result res;
	struct sv_err err;
};

static void run_fini(struct run *r)
{
	sv_buf_fini(&r->out);
}

/* Applies d to base; the result in r (free with run_fini). */
static struct run apply(const uint8_t *base, size_t blen, const uint8_t *d, size_t n,
			uint64_t max)
{
	struct run r;
	memset(&r, 0, sizeof r);
	sv_buf_init(&r.out);
	sv_err_clear(&r.err);
	r.rc = sv_nh_diff_apply(base, blen, d, n, max, &r.out, &r.res, &r.err);
	return r;
}

/* Checks that d applied to base gives want (a NUL-terminated string). */
static void ok(const uint8_t *base, size_t blen, const uint8_t *d, size_t n,
	       const char *want, enum nh_diff_format f, uint32_t cmds, int line)
{
	struct run r = apply(base, blen, d, n, MAX);
	size_t wl = strlen(want);
	if (!t_note(!r.rc && r.out.len == wl && (!wl || !memcmp(want, r.out.p, wl)) &&
		    r.res.format == f && r.res.commands == cmds))
		fprintf(stderr, "line %d: rc %d (%s), \"%.*s\" (%zu bytes), format %d, %u "
			"commands; expected \"%s\", format %d, %u commands\n", line, r.rc,
			r.err.msg, (int)r.out.len, r.out.len ? (const char *)r.out.p : "",
			r.out.len, r.res.format, r.res.commands, want, f, cmds);
	run_fini(&r);
}

/* Checks that d fails with code and exactly msg, leaving no output. */
static void bad(const uint8_t *base, size_t blen, const uint8_t *d, size_t n,
		uint64_t max, int code, const char *msg, int line)
{
	struct run r = apply(base, blen, d, n, max);
	if (!t_note(r.rc == code && !strcmp(msg, r.err.msg) && !r.out.len &&
		    !r.res.crc_checked))
		fprintf(stderr, "line %d: rc %d, \"%s\", %zu bytes out; expected %d, \"%s\"\n",
			line, r.rc, r.err.msg, r.out.len, code, msg);
	run_fini(&r);
}

/* OK(base, blen, d, n, want, format, commands); B(...) gives d and n */
#define OK(...) ok(__VA_ARGS__, __LINE__)
/* BAD(base, blen, d, n, max, code, msg) */
#define BAD(...) bad(__VA_ARGS__, __LINE__)

/* ---- a beta3 encoder with its own MRU list -------------------------------------- */

enum {
	COPYEDIT, COPY, EDIT, SEEK, WIDER, EOF_, COORD, ERASE, INCREMENT, COPYEDIT1,
	EOF_CRC32, RLE
};
static const unsigned min1[12] = {12, 6, 4, 8, 0, 12, 1, 7, 12, 4, 12, 2};
static const unsigned bits2[12] = {2, 0, 0, 0, 0, 0, 3, 3, 0, 0, 32, 0};

struct enc {
	uint8_t b[8192];
	size_t bits;
	uint8_t mru[12];
};

static void enc_init(struct enc *e)
{
	memset(e, 0, sizeof *e);
	e->b[0] = 0x01;
	e->b[1] = 0x43;
	e->bits = 16;
	for (int i = 0; i < 12; i++)
		e->mru[i] = (uint8_t)i;
}

/* The low n bits of v, MSB first; bits past 63 copy bit 63 when sx. */
static void put_sx(struct enc *e, uint64_t v, unsigned n, bool sx)
{
	while (n--) {
		if (n >= 64 ? sx && v >> 63 : v >> n & 1)
			e->b[e->bits / 8] |= (uint8_t)(0x80 >> e->bits % 8);
		e->bits++;
	}
}

static void put(struct enc *e, uint64_t v, unsigned n)
{
	put_sx(e, v, n, false);
}

static void put_code(struct enc *e, unsigned c)
{
	unsigned i = 0;
	while (e->mru[i] != c)
		i++;
	if (i < 2) {
		put(e, 0, 1);
		put(e, i, 1);
	} else if (i < 6) {
		put(e, 2, 2);
		put(e, i - 2, 2);
	} else {
		put(e, 6, 3);
		put(e, i - 6, 3);
	}
	memmove(e->mru + 1, e->mru, i);
	e->mru[0] = (uint8_t)c;
}

/* Appends command c with `wide` wider prefixes, its args and literals;
 * arg1 takes the fewest bits the format allows. */
static void cmd(struct enc *e, unsigned c, unsigned wide, int64_t a1, uint32_t a2,
		const char *lit)
{
	for (unsigned k = 0; k < wide; k++)
		put_code(e, WIDER);
	put_code(e, c);
	put(e, a2, bits2[c]);
	unsigned r = (unsigned)(8 - e->bits % 8) % 8, need = min1[c] + 8 * wide;
	while (r < need)
		r += 8;
	put_sx(e, (uint64_t)a1, r, c == SEEK);
	size_t k = lit ? strlen(lit) : 0;
	memcpy(e->b + e->bits / 8, lit ? lit : "", k);
	e->bits += 8 * k;
}

static size_t elen(const struct enc *e)
{
	return (e->bits + 7) / 8;
}

static uint32_t crc_of(const char *s)
{
	return (uint32_t)crc32(0, (const Bytef *)s, (uInt)strlen(s));
}

/* ---- beta1 ---------------------------------------------------------------------- */

static void beta1(void)
{
	/* copy 3 (c0 03), edit 2 "xy" (80 02), seek +1 = back one (00 01),
	 * copy 2, end */
	OK(ABC, 10, B(0x03, 0xC0, 0x02, 0x80, 'x', 'y', 0x01, 0x00, 0x02, 0xC0, 0x00, 0x00),
	   "ABCxyEF", NH_DIFF_BETA1, 5);
	/* seek -3 (14-bit 0x3ffd: forward 3), copy 2; a seek back to 0 */
	OK(ABC, 10, B(0xFD, 0x3F, 0x02, 0xC0, 0x05, 0x00, 0x01, 0xC0, 0x00, 0x00), "DEA",
	   NH_DIFF_BETA1, 5);
	/* the largest seeks: forward 8192 (00 20) and back 8191 (ff 1f) */
	OK(ABC, 10, B(0x00, 0x20, 0xFF, 0x1F, 0x01, 0xC0, 0x00, 0x00), "B", NH_DIFF_BETA1,
	   4);
	/* an edit moves pos past the end of base, a seek comes back */
	OK(ABC, 10, B(0x0A, 0xC0, 0x03, 0x80, '1', '2', '3', 0x05, 0x00, 0x02, 0xC0, 0x00,
		      0x00), "ABCDEFGHIJ123IJ", NH_DIFF_BETA1, 5);
	/* nothing at all: an empty save */
	OK(ABC, 10, B(0x00, 0x00), "", NH_DIFF_BETA1, 1);
	/* copy 0 and edit 0 are no-ops even past the end */
	OK(ABC, 0, B(0x00, 0xC0, 0x00, 0x80, 0x00, 0x00), "", NH_DIFF_BETA1, 3);

	/* the largest copy and edit: 16383 bytes */
	size_t big = 0x3FFF;
	uint8_t *base = malloc(big), *d = malloc(big + 8);
	for (size_t i = 0; i < big; i++)
		base[i] = (uint8_t)(i * 7);
	memcpy(d, B(0xFF, 0xFF));
	memcpy(d + 2, B(0xFF, 0xBF));
	memset(d + 4, 'e', big);
	memcpy(d + 4 + big, B(0x00, 0x00));
	struct run r = apply(base, big, d, big + 6, MAX);
	T_INT(0, r.rc);
	T_UINT(2 * big, r.out.len);
	T_MEM(base, r.out.p, big);
	T_OK(r.out.len == 2 * big && r.out.p[big] == 'e' && r.out.p[2 * big - 1] == 'e');
	run_fini(&r);
	free(base);
	free(d);

	BAD(ABC, 10, B(0), MAX, -EBADMSG,
	    "diff byte 0: the diff ends without its end marker");
	BAD(ABC, 10, B(0x03, 0xC0), MAX, -EBADMSG,
	    "diff byte 2: the diff ends without its end marker");
	BAD(ABC, 10, B(0x03, 0xC0, 0x00), MAX, -EBADMSG,
	    "diff byte 2: the diff ends without its end marker");
	BAD(ABC, 10, B(0x00, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 2: 1 bytes after the end marker");
	BAD(ABC, 10, B(0x05, 0x40, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 0: unknown command 1 (word 4005)");
	BAD(ABC, 10, B(0x02, 0xC0, 0x03, 0x00, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 2: seek back 3 bytes goes before the start of the previous save "
	    "(pos 2)");
	BAD(ABC, 10, B(0x08, 0xC0, 0x03, 0xC0, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 2: copy of 3 bytes past the end of the previous save (pos 8 of 10)");
	BAD(ABC, 10, B(0x0A, 0x80, 0x41, 0x42), MAX, -EBADMSG,
	    "diff byte 0: the diff ends inside the 10 literal bytes of edit");
	/* a seek forward past the end then a copy there */
	BAD(ABC, 10, B(0xF6, 0x3F, 0x01, 0xC0, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 2: copy of 1 bytes past the end of the previous save (pos 10 of 10)");
	BAD(ABC, 10, B(0x06, 0xC0, 0x00, 0x00), 5, -EFBIG,
	    "diff byte 0: the new save grows past the limit of 5 bytes");
	BAD(ABC, 10, B(0x03, 0xC0, 0x03, 0x80, 'a', 'b', 'c', 0x00, 0x00), 5, -EFBIG,
	    "diff byte 2: the new save grows past the limit of 5 bytes");
}

/* ---- beta2 ---------------------------------------------------------------------- */

static void beta2(void)
{
	/* copyedit: copy 3, edit 2 (bits 13-14 = 1): 20 03 "xy"; then end */
	OK(ABC, 10, B(0x01, 0x40, 0x20, 0x03, 'x', 'y', 0x00, 0x00), "ABCxy",
	   NH_DIFF_BETA2, 2);
	/* copy 0 edit 4 (60 00), then copy 1 edit 1 (00 01) */
	OK(ABC, 10, B(0x01, 0x40, 0x60, 0x00, 'w', 'x', 'y', 'z', 0x00, 0x01, '!', 0x00,
		      0x00), "wxyzE!", NH_DIFF_BETA2, 3);
	/* copy 0, edit 1 has to be the large edit a0 00 00 01 */
	OK(ABC, 10, B(0x01, 0x40, 0xA0, 0x00, 0x00, 0x01, 'q', 0x00, 0x02, '!', 0x00, 0x00),
	   "qBC!", NH_DIFF_BETA2, 3);
	/* seek: e0 02 goes back 2, ff fd forward 3 */
	OK(ABC, 10, B(0x01, 0x40, 0x00, 0x04, 'x', 0xE0, 0x02, 0x00, 0x01, 'y', 0xFF, 0xFD,
		      0x00, 0x01, 'z', 0x00, 0x00), "ABCDxDyIz", NH_DIFF_BETA2, 6);
	/* the largest short seeks: forward 4096 then back 4095 */
	OK(ABC, 10, B(0x01, 0x40, 0xF0, 0x00, 0xEF, 0xFF, 0x00, 0x01, '!', 0x00, 0x00), "B!",
	   NH_DIFF_BETA2, 4);
	/* large seeks: c0 00 00 05 back 5, df ff ff fe forward 2 */
	OK(ABC, 10, B(0x01, 0x40, 0x20, 0x07, '1', '2', 0xC0, 0x00, 0x00, 0x05, 0xDF, 0xFF,
		      0xFF, 0xFE, 0x00, 0x02, '3', 0x00, 0x00), "ABCDEFG12GH3",
	   NH_DIFF_BETA2, 5);
	/* large copyedit: copy 300, edit 3 (86 00 01 2c); edit 0 is a plain copy */
	uint8_t base[400];
	for (int i = 0; i < 400; i++)
		base[i] = (uint8_t)('a' + i % 26);
	struct run r = apply(base, 400, B(0x01, 0x40, 0x86, 0x00, 0x01, 0x2C, 'X', 'Y', 'Z',
					  0x80, 0x00, 0x00, 0x05, 0x00, 0x00), MAX);
	T_INT(0, r.rc);
	T_UINT(308, r.out.len);
	T_MEM(base, r.out.p, 300);
	T_MEM("XYZ", r.out.p + 300, 3);
	T_MEM(base + 303, r.out.p + 303, 5);
	T_UINT(3, r.res.commands);
	run_fini(&r);
	/* large edit of 0: nothing; the 13-bit copy of 8191 */
	uint8_t *big = calloc(1, 9000);
	big[8190] = 7;
	r = apply(big, 9000, B(0x01, 0x40, 0xA0, 0x00, 0x00, 0x00, 0x1F, 0xFF, 'e', 0x00,
			       0x00), MAX);
	T_INT(0, r.rc);
	T_UINT(8192, r.out.len);
	T_OK(r.out.len == 8192 && r.out.p[8190] == 7 && r.out.p[8191] == 'e');
	run_fini(&r);
	free(big);

	BAD(ABC, 10, B(0x01, 0x40), MAX, -EBADMSG,
	    "diff byte 2: the diff ends without its end marker");
	BAD(ABC, 10, B(0x01, 0x40, 0x00), MAX, -EBADMSG,
	    "diff byte 2: the diff ends without its end marker");
	BAD(ABC, 10, B(0x01, 0x40, 0x80, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside a 4-byte command");
	BAD(ABC, 10, B(0x01, 0x40, 0x00, 0x00, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 4: 2 bytes after the end marker");
	BAD(ABC, 10, B(0x01, 0x40, 0x00, 0x0B, 'x', 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 2: copy of 11 bytes past the end of the previous save (pos 0 of 10)");
	BAD(ABC, 10, B(0x01, 0x40, 0x80, 0x00, 0x00, 0x0B, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 2: copy of 11 bytes past the end of the previous save (pos 0 of 10)");
	BAD(ABC, 10, B(0x01, 0x40, 0x60, 0x01, 'x'), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside the 4 literal bytes of edit");
	BAD(ABC, 10, B(0x01, 0x40, 0xBF, 0xFF, 0xFF, 0xFF, 'x'), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside the 536870911 literal bytes of edit");
	BAD(ABC, 10, B(0x01, 0x40, 0x00, 0x02, 'x', 0xE0, 0x04, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 5: seek back 4 bytes goes before the start of the previous save "
	    "(pos 3)");
	BAD(ABC, 10, B(0x01, 0x40, 0xCF, 0xFF, 0xFF, 0xFF, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 2: seek back 268435455 bytes goes before the start of the previous "
	    "save (pos 0)");
	BAD(ABC, 10, B(0x01, 0x40, 0x00, 0x08, 'x', 0x00, 0x00), 8, -EFBIG,
	    "diff byte 2: the new save grows past the limit of 8 bytes");
}

/* ---- beta3 ---------------------------------------------------------------------- */

/* Vectors written out bit by bit. */
static void beta3_by_hand(void)
{
	/* copy 3:  01|000011 (index 1, 6 bits)                      43
	 * eof 7:   10|11 0000 00000111 (list [copy copyedit edit seek wider
	 *          eof ...]: index 5 = 10 + 11, then 12 bits)       b0 07 */
	OK(ABC, 10, B(0x01, 0x43, 0x43, 0xB0, 0x07), "ABCDEFGHIJ", NH_DIFF_BETA3, 2);

	/* MRU: edit 2 "xy": 10|00 0001  (index 2, arg1 1)            81 'x' 'y'
	 *      copy 3:      10|00 0000 00000011 (copy is now index 2) 80 03
	 *      edit 1 "z":  01|000000 (edit is index 1)               40 'z'
	 *      eof 4:       10|11 0000 00000100                       b0 04   */
	OK(ABC, 10, B(0x01, 0x43, 0x81, 'x', 'y', 0x80, 0x03, 0x40, 'z', 0xB0, 0x04),
	   "xyCDEzGHIJ", NH_DIFF_BETA3, 4);

	/* wider: 10|10 (index 4) then copy, now index 2: 10|00, then arg1 of
	 * 6 + 8 bits in 0 + 16: 1010 1000 | 00000001 00101100 = 300 */
	uint8_t base[400];
	for (int i = 0; i < 400; i++)
		base[i] = (uint8_t)i;
	struct run r = apply(base, 400, B(0x01, 0x43, 0xA8, 0x01, 0x2C,
					  /* eof 0: list [copy wider copyedit edit seek
					   * eof]: 10|11 0000 00000000 */
					  0xB0, 0x00), MAX);
	T_INT(0, r.rc);
	T_UINT(300, r.out.len);
	T_MEM(base, r.out.p, 300);
	T_UINT(3, r.res.commands);
	T_OK(!r.res.crc_checked);
	run_fini(&r);

	/* seek, signed, its sign the first of the byte's last 4 bits:
	 * 10|01 1111 11111101 (index 3, 12 bits) = -3: forward 3.  Then
	 * copyedit1 1 "!": list [seek copyedit copy edit wider eof coord erase
	 * increment copyedit1]: index 9 = 110|011, then arg1 in 2 + 8 bits:
	 * 110011|00 00000001 */
	OK(ABC, 10, B(0x01, 0x43, 0x9F, 0xFD, 0xCC, 0x01, '!',
		      /* eof 0: now [copyedit1 seek copyedit copy edit wider eof]:
		       * index 6 = 110|000, then 12 bits need 2 + 8 + 8 */
		      0xC0, 0x00, 0x00), "D!", NH_DIFF_BETA3, 3);

	/* seek with its sign in the next whole byte: wider (10|10) then seek
	 * (now index 4: 10|10) leaves 0 bits: 16 bits follow, ff fe = -2 */
	OK(ABC, 10, B(0x01, 0x43, 0xAA, 0xFF, 0xFE,
		      /* copy 1: list [seek wider copyedit copy ...]: 10|01 + 4 + 8 */
		      0x90, 0x01,
		      /* eof 0: [copy seek wider copyedit edit eof]: 10|11 */
		      0xB0, 0x00), "C", NH_DIFF_BETA3, 4);
	/* and positive: 00 02 = back 2 after copying 3 */
	OK(ABC, 10, B(0x01, 0x43, 0x43, 0xAA, 0x00, 0x02,
		      /* copy 1: [seek wider copy copyedit ...]: 10|00 + 12 bits */
		      0x80, 0x01, 0xB0, 0x00), "ABCB", NH_DIFF_BETA3, 5);

	/* coord N: 110|000 (index 6), dir 010, arg1 0 in the 7 bits left:
	 * 110000 01|0 0000000: base[0] + 0, base[1] - 1; then eof 0 (index 6
	 * again: 110|000 + 2 + 8 + 8 bits) */
	OK(ABC, 10, B(0x01, 0x43, 0xC1, 0x00, 0xC0, 0x00, 0x00), "AA", NH_DIFF_BETA3, 2);
	/* erase: 110|001 (index 7), arg2 001 (4 zeros), arg1 2 in 7 bits:
	 * 110001 00|1 0000010; increment 0: 110|010 (index 8) + 18 bits: base
	 * byte 6 + 1; eof 1: [increment erase copyedit copy edit seek wider
	 * eof]: 110|001 + 18 bits */
	r = apply(ABC, 10, B(0x01, 0x43, 0xC4, 0x82, 0xC8, 0x00, 0x00, 0xC4, 0x00, 0x01),
		  MAX);
	T_INT(0, r.rc);
	T_UINT(8, r.out.len);
	T_MEM("AB\0\0\0\0HH", r.out.p, 8);
	T_UINT(3, r.res.commands);
	run_fini(&r);

	/* eof_crc32 (index 10: 110|100), then the crc's 32 bits, then arg1
	 * in 2 + 8 + 8 bits.  Empty output: the crc32 of nothing is 0 */
	r = apply(ABC, 10, B(0x01, 0x43, 0xD0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00), MAX);
	T_INT(0, r.rc);
	T_UINT(0, r.out.len);
	T_OK(r.res.crc_checked);
	T_UINT(1, r.res.commands);
	run_fini(&r);
	/* "A": crc32 d3d99e8b, arg1 1: 110100|11 01001111 01100110 01111010
	 * 001011|00 00000000 00000001 */
	uint32_t c = crc_of("A");
	T_UINT(0xd3d99e8bu, c);
	r = apply(ABC, 10, B(0x01, 0x43, 0xD3, 0x4F, 0x66, 0x7A, 0x2C, 0x00, 0x01), MAX);
	T_INT(0, r.rc);
	T_UINT(1, r.out.len);
	T_OK(r.res.crc_checked);
	run_fini(&r);
	BAD(ABC, 10, B(0x01, 0x43, 0xD3, 0x4F, 0x66, 0x7A, 0x2C, 0x00, 0x02), MAX, -EBADMSG,
	    "diff byte 2: the new save's crc32 is 30694c07, not d3d99e8b");
}

/* Vectors through the encoder: every command, every corner. */
static void beta3_commands(void)
{
	struct enc e;
	uint8_t base[600];
	for (int i = 0; i < 600; i++)
		base[i] = (uint8_t)(i % 200 + 20);

	/* copyedit: copy 2, 3 literals (arg2 2); copyedit1; edit of 16
	 * (arg1 15: 4 bits); erase copy 1, 5 zeros; increment */
	enc_init(&e);
	cmd(&e, COPYEDIT, 0, 2, 2, "xyz");
	cmd(&e, COPYEDIT1, 0, 1, 0, "!");
	cmd(&e, EDIT, 0, 15, 0, "0123456789abcdef");
	cmd(&e, ERASE, 0, 1, 2, NULL);
	cmd(&e, INCREMENT, 0, 0, 0, NULL);
	cmd(&e, EOF_, 0, 2, 0, NULL);
	struct run r = apply(base, 600, e.b, elen(&e), MAX);
	T_INT(0, r.rc);
	uint8_t exp[64];
	size_t k = 0;
	exp[k++] = base[0], exp[k++] = base[1];
	memcpy(exp + k, "xyz", 3), k += 3;
	exp[k++] = base[5], exp[k++] = '!';
	memcpy(exp + k, "0123456789abcdef", 16), k += 16;
	exp[k++] = base[23];
	memset(exp + k, 0, 5), k += 5;
	exp[k++] = (uint8_t)(base[29] + 1);
	exp[k++] = base[30], exp[k++] = base[31];
	T_UINT(k, r.out.len);
	T_MEM(exp, r.out.p, k);
	T_UINT(6, r.res.commands);
	run_fini(&r);

	/* increment wraps: 0xff + 1 = 0 */
	uint8_t ff[3] = {0xFF, 0x00, 0x7F};
	enc_init(&e);
	cmd(&e, INCREMENT, 0, 0, 0, NULL);
	cmd(&e, INCREMENT, 0, 1, 0, NULL);
	cmd(&e, EOF_CRC32, 0, 0, (uint32_t)crc32(0, (const Bytef *)"\x00\x00\x80", 3), NULL);
	r = apply(ff, 3, e.b, elen(&e), MAX);
	T_INT(0, r.rc);
	T_UINT(3, r.out.len);
	T_MEM("\x00\x00\x80", r.out.p, 3);
	T_OK(r.res.crc_checked);
	run_fini(&r);

	/* wider on several commands, twice on one (the second wider is code
	 * 00: wider is at the front) */
	enc_init(&e);
	cmd(&e, COPY, 1, 300, 0, NULL);
	cmd(&e, SEEK, 1, 290, 0, NULL);
	cmd(&e, EDIT, 2, 69, 0,
	    "0123456789012345678901234567890123456789012345678901234567890123456789");
	cmd(&e, SEEK, 2, -100, 0, NULL);
	cmd(&e, EOF_, 1, 200, 0, NULL);
	r = apply(base, 600, e.b, elen(&e), MAX);
	T_INT(0, r.rc);
	T_UINT(300 + 70 + 200, r.out.len);
	if (r.out.len == 570) {
		T_MEM(base, r.out.p, 300);
		T_MEM("0123456789", r.out.p + 300, 10);
		T_MEM(base + 180, r.out.p + 370, 200);
	}
	T_UINT(5 + 7, r.res.commands);
	run_fini(&r);

	/* the encoding of two widers: 10|10 (wider, index 4) 00 (wider, now
	 * index 0) then edit (index 3: 10|01) */
	enc_init(&e);
	cmd(&e, EDIT, 2, 0, 0, "e");
	T_UINT(2 + 4 + 1, elen(&e)); /* 4+2+4 bits, then 22 >= 20 bits of arg1 */
	T_UINT(0xA2, e.b[2]);
	T_UINT(0x40, e.b[3]);

	/* MRU reordering: each command moves to the front; a command reused
	 * after three others is found at index 3 */
	enc_init(&e);
	cmd(&e, ERASE, 0, 0, 0, NULL);     /* index 7 */
	cmd(&e, COPY, 0, 1, 0, NULL);      /* 2 (erase went in front) */
	cmd(&e, INCREMENT, 0, 0, 0, NULL); /* 8 */
	cmd(&e, COPYEDIT1, 0, 0, 0, "q"); /* 9 */
	cmd(&e, ERASE, 0, 0, 7, NULL);     /* 3 */
	cmd(&e, EOF_, 0, 0, 0, NULL);
	T_UINT(ERASE, e.mru[1]);
	T_UINT(COPYEDIT1, e.mru[2]);
	r = apply(base, 600, e.b, elen(&e), MAX);
	T_INT(0, r.rc);
	uint8_t m[] = {0, 0, 0, base[3], (uint8_t)(base[4] + 1), 'q', 0, 0, 0, 0, 0, 0, 0,
		       0, 0, 0};
	T_UINT(sizeof m, r.out.len);
	T_MEM(m, r.out.p, sizeof m);
	run_fini(&r);

	/* edit, copyedit and copyedit1 move pos past the end of base; a seek
	 * comes back; copies of 0 there are fine */
	enc_init(&e);
	cmd(&e, COPY, 0, 9, 0, NULL);
	cmd(&e, EDIT, 0, 3, 0, "wxyz");
	cmd(&e, COPY, 0, 0, 0, NULL);
	cmd(&e, SEEK, 0, 4, 0, NULL);
	cmd(&e, EOF_, 0, 1, 0, NULL);
	r = apply(ABC, 10, e.b, elen(&e), MAX);
	T_INT(0, r.rc);
	T_UINT(14, r.out.len);
	T_MEM("ABCDEFGHIwxyzJ", r.out.p, 14);
	run_fini(&r);

	/* a zero-byte eof far past the end of base is fine */
	enc_init(&e);
	cmd(&e, SEEK, 1, -1000, 0, NULL);
	cmd(&e, EOF_, 0, 0, 0, NULL);
	r = apply(ABC, 10, e.b, elen(&e), MAX);
	T_INT(0, r.rc);
	T_UINT(0, r.out.len);
	run_fini(&r);
}

/* coord: W NW N NE E SE S SW, with and without the remainder rule. */
static void beta3_coord(void)
{
	static const int dx[8] = {-1, -1, 0, 1, 1, 1, 0, -1};
	static const int dy[8] = {0, -1, -1, -1, 0, 1, 1, 1};
	uint8_t base[600];
	for (int i = 0; i < 600; i++)
		base[i] = (uint8_t)(i * 3 + 1);
	base[0] = 0; /* 0 - 1 wraps to ff */
	base[1] = 0xFF;
	struct enc e;
	for (unsigned dir = 0; dir < 8; dir++) {
		/* no remainder: coord_base 0, output 0: copy 0 rows */
		enc_init(&e);
		cmd(&e, COORD, 0, 0, dir, NULL);
		cmd(&e, EOF_, 0, 0, 0, NULL);
		struct run r = apply(base, 600, e.b, elen(&e), MAX);
		T_INT(0, r.rc);
		size_t n = dy[dir] ? 2 : 1;
		T_UINT(n, r.out.len);
		uint8_t want[2] = {(uint8_t)(base[0] + dx[dir]), (uint8_t)(base[1] + dy[dir])};
		T_MEM(want, r.out.p, n);
		run_fini(&r);

		/* one row: copy 85, then the pair at 85 */
		enc_init(&e);
		cmd(&e, COORD, 0, 1, dir, NULL);
		cmd(&e, EOF_, 0, 0, 0, NULL);
		r = apply(base, 600, e.b, elen(&e), MAX);
		T_INT(0, r.rc);
		T_UINT(85 + n, r.out.len);
		T_MEM(base, r.out.p, 85);
		uint8_t w2[2] = {(uint8_t)(base[85] + dx[dir]), (uint8_t)(base[86] + dy[dir])};
		T_MEM(w2, r.out.p + 85, n);
		run_fini(&r);

		/* remainder: copy 10 sets coord_base 10; an edit of 3 makes the
		 * output 13, (13 - 10) % 85 = 3, so coord 2 copies 170 + 82.  A
		 * second coord counts from the same coord_base: the output is
		 * 13 + 252 + n, (265 + n - 10) % 85 = n, so it copies 85 - n */
		uint8_t x[600];
		size_t k = 0, pos = 0;
		memcpy(x, base, 10), k = 10, pos = 10;
		memcpy(x + k, "abc", 3), k += 3, pos += 3;
		memcpy(x + k, base + pos, 252), k += 252, pos += 252;
		x[k++] = (uint8_t)(base[pos] + dx[dir]);
		if (n == 2)
			x[k++] = (uint8_t)(base[pos + 1] + dy[dir]);
		pos += n;
		memcpy(x + k, base + pos, 85 - n), k += 85 - n, pos += 85 - n;
		x[k++] = (uint8_t)(base[pos] + dx[dir]);
		if (n == 2)
			x[k++] = (uint8_t)(base[pos + 1] + dy[dir]);
		enc_init(&e);
		cmd(&e, COPY, 0, 10, 0, NULL);
		cmd(&e, EDIT, 0, 2, 0, "abc");
		cmd(&e, COORD, 0, 2, dir, NULL);
		cmd(&e, COORD, 0, 0, dir, NULL);
		cmd(&e, EOF_CRC32, 0, 0, (uint32_t)crc32(0, x, (uInt)k), NULL);
		r = apply(base, 600, e.b, elen(&e), MAX);
		T_INT(0, r.rc);
		T_UINT(k, r.out.len);
		T_MEM(x, r.out.p, k);
		T_OK(r.res.crc_checked);
		run_fini(&r);
	}
	/* coord at the very end of base reads past it */
	enc_init(&e);
	cmd(&e, COPY, 0, 9, 0, NULL);
	cmd(&e, COORD, 0, 0, 2, NULL); /* N: two bytes, at 9 */
	cmd(&e, EOF_, 0, 0, 0, NULL);
	struct run r = apply(ABC, 10, e.b, elen(&e), MAX);
	T_INT(-EBADMSG, r.rc);
	T_STR("diff byte 3: coord reads past the end of the previous save (pos 9 of 10)",
	      r.err.msg);
	run_fini(&r);
	/* ... but W at 9 (one byte) is fine */
	enc_init(&e);
	cmd(&e, COPY, 0, 9, 0, NULL);
	cmd(&e, COORD, 0, 0, 0, NULL);
	cmd(&e, EOF_, 0, 0, 0, NULL);
	OK(ABC, 10, e.b, elen(&e), "ABCDEFGHII", NH_DIFF_BETA3, 3);
}

static void beta3_errors(void)
{
	struct enc e;
	BAD(ABC, 10, B(0x01, 0x43), MAX, -EBADMSG,
	    "diff byte 2: the diff ends without its end marker");
	/* copy 3, then nothing */
	BAD(ABC, 10, B(0x01, 0x43, 0x43), MAX, -EBADMSG,
	    "diff byte 3: the diff ends without its end marker");
	/* copy 3, eof 7, then two more bytes */
	BAD(ABC, 10, B(0x01, 0x43, 0x43, 0xB0, 0x07, 0x00, 0x00), MAX, -EBADMSG,
	    "diff byte 5: 2 bytes after the end marker");
	/* eof's arg1 needs a second byte */
	BAD(ABC, 10, B(0x01, 0x43, 0xB0), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside a command");
	/* eof_crc32's 32 bits are cut */
	BAD(ABC, 10, B(0x01, 0x43, 0xD0, 0x00), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside a command");
	/* the code is cut: wider (1010), wider (00), ... to the end */
	BAD(ABC, 10, B(0x01, 0x43, 0xA0, 0x00), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside a command");
	/* 1111: past any code */
	BAD(ABC, 10, B(0x01, 0x43, 0xF0, 0x00), MAX, -EBADMSG,
	    "diff byte 2: command code 111... is past the table");
	/* 110110 = index 12, 110111 = 13 */
	BAD(ABC, 10, B(0x01, 0x43, 0xD8, 0x00), MAX, -EBADMSG,
	    "diff byte 2: command code 12 is past the table");
	BAD(ABC, 10, B(0x01, 0x43, 0xDC, 0x00), MAX, -EBADMSG,
	    "diff byte 2: command code 13 is past the table");
	/* rle: index 11 = 110101 */
	BAD(ABC, 10, B(0x01, 0x43, 0xD4, 0x00), MAX, -EBADMSG,
	    "diff byte 2: rle command, which no engine writes");
	/* copy of 11 */
	BAD(ABC, 10, B(0x01, 0x43, 0x4B, 0xB0, 0x00), MAX, -EBADMSG,
	    "diff byte 2: copy of 11 bytes past the end of the previous save (pos 0 of 10)");
	/* copy 3, eof 8 */
	BAD(ABC, 10, B(0x01, 0x43, 0x43, 0xB0, 0x08), MAX, -EBADMSG,
	    "diff byte 3: eof of 8 bytes past the end of the previous save (pos 3 of 10)");
	/* edit 2 with one literal byte */
	BAD(ABC, 10, B(0x01, 0x43, 0x81, 'x'), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside the 2 literal bytes of edit");
	enc_init(&e);
	cmd(&e, COPYEDIT, 0, 9, 3, "ab");
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside the 4 literal bytes of copyedit");
	enc_init(&e);
	cmd(&e, COPYEDIT, 0, 11, 3, "abcd");
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: copyedit of 11 bytes past the end of the previous save (pos 0 of "
	    "10)");
	enc_init(&e);
	cmd(&e, COPYEDIT1, 0, 3, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: the diff ends inside the 1 literal bytes of copyedit1");
	enc_init(&e);
	cmd(&e, ERASE, 0, 12, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: erase of 12 bytes past the end of the previous save (pos 0 of 10)");
	enc_init(&e);
	cmd(&e, INCREMENT, 0, 10, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: increment reads past the end of the previous save (pos 10 of 10)");
	enc_init(&e);
	cmd(&e, COORD, 0, 1, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: coord of 85 bytes past the end of the previous save (pos 0 of 10)");
	/* rows * 85 past 64 bits */
	enc_init(&e);
	cmd(&e, COORD, 8, (int64_t)1 << 62, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: coord copy of 4611686018427387904 rows is out of range");
	/* seek before the start, and far forward */
	enc_init(&e);
	cmd(&e, COPY, 0, 2, 0, NULL);
	cmd(&e, SEEK, 0, 3, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 3: seek back 3 bytes goes before the start of the previous save "
	    "(pos 2)");
	enc_init(&e);
	cmd(&e, SEEK, 7, INT64_MIN, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: seek argument -9223372036854775808 is out of range (pos 0)");
	enc_init(&e);
	cmd(&e, SEEK, 7, -((int64_t)1 << 62), 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: seek argument -4611686018427387904 is out of range (pos 0)");
	/* 9 widenings: 12 + 72 bits of a nonzero copy do not fit */
	enc_init(&e);
	for (int i = 0; i < 9; i++)
		put_code(&e, WIDER);
	put_code(&e, COPY);
	put(&e, 1, 8 - e.bits % 8);
	put(&e, 0xFFFFFFFFFFFFFFFFull, 64);
	put(&e, 0xFF, 8);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: copy argument does not fit in 64 bits");
	/* ... but leading zero bytes are fine */
	enc_init(&e);
	cmd(&e, EOF_, 20, 3, 0, NULL);
	OK(ABC, 10, e.b, elen(&e), "ABC", NH_DIFF_BETA3, 21);
	/* crc mismatch, and bytes after the end */
	enc_init(&e);
	cmd(&e, EOF_CRC32, 0, 3, 0x12345678, NULL);
	BAD(ABC, 10, e.b, elen(&e), MAX, -EBADMSG,
	    "diff byte 2: the new save's crc32 is a3830348, not 12345678");
	enc_init(&e);
	cmd(&e, EOF_CRC32, 0, 3, crc_of("ABC"), NULL);
	size_t n = elen(&e);
	OK(ABC, 10, e.b, n, "ABC", NH_DIFF_BETA3, 1);
	BAD(ABC, 10, e.b, n + 3, MAX, -EBADMSG, "diff byte 9: 3 bytes after the end marker");
	/* the limit */
	BAD(ABC, 10, B(0x01, 0x43, 0x43, 0xB0, 0x07), 9, -EFBIG,
	    "diff byte 3: the new save grows past the limit of 9 bytes");
	OK(ABC, 10, B(0x01, 0x43, 0x43, 0xB0, 0x07), "ABCDEFGHIJ", NH_DIFF_BETA3, 2);
	struct run r = apply(ABC, 10, B(0x01, 0x43, 0x43, 0xB0, 0x07), 10);
	T_INT(0, r.rc);
	run_fini(&r);
	enc_init(&e);
	cmd(&e, ERASE, 0, 0, 7, NULL);
	cmd(&e, EOF_, 0, 0, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), 9, -EFBIG,
	    "diff byte 2: the new save grows past the limit of 9 bytes");
	enc_init(&e);
	cmd(&e, INCREMENT, 0, 0, 0, NULL);
	BAD(ABC, 10, e.b, elen(&e), 0, -EFBIG,
	    "diff byte 2: the new save grows past the limit of 0 bytes");
	enc_init(&e);
	cmd(&e, COORD, 0, 0, 3, NULL);
	BAD(ABC, 10, e.b, elen(&e), 1, -EFBIG,
	    "diff byte 2: the new save grows past the limit of 1 bytes");
}

/* Appending: out keeps what it held; a failure leaves it as it was. */
static void appending(void)
{
	struct sv_buf out;
	sv_buf_init(&out);
	sv_buf_add(&out, "pre", 3);
	struct enc e;
	enc_init(&e);
	cmd(&e, EOF_CRC32, 0, 2, crc_of("AB"), NULL);
	struct nh_diff_result res;
	struct sv_err err;
	T_INT(0, sv_nh_diff_apply(ABC, 10, e.b, elen(&e), 2, &out, &res, &err));
	T_UINT(5, out.len);
	T_MEM("preAB", out.p, 5);
	T_OK(res.crc_checked);
	T_INT(-EBADMSG, sv_nh_diff_apply(ABC, 10, B(0x01, 0x43), MAX, &out, NULL, &err));
	T_UINT(5, out.len);
	sv_buf_fini(&out);

	T_INT(NH_DIFF_BETA1, sv_nh_diff_format(B(0x01)));
	T_INT(NH_DIFF_BETA1, sv_nh_diff_format(NULL, 0));
	T_INT(NH_DIFF_BETA1, sv_nh_diff_format(B(0x01, 0x41)));
	T_INT(NH_DIFF_BETA2, sv_nh_diff_format(B(0x01, 0x40)));
	T_INT(NH_DIFF_BETA3, sv_nh_diff_format(B(0x01, 0x43, 0x00)));
}

/* ---- payloads ------------------------------------------------------------------- */

static const char b64c[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64enc(const uint8_t *p, size_t n, struct sv_buf *o)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		char q[4] = {b64c[v >> 18], b64c[v >> 12 & 63],
			     i + 1 < n ? b64c[v >> 6 & 63] : '=', i + 2 < n ? b64c[v & 63] : '='};
		sv_buf_add(o, q, 4);
	}
}

/* "$<stated>$" + base64 of z[0..zn) */
static char *zpayload(uint64_t stated, const uint8_t *z, size_t zn)
{
	struct sv_buf o;
	sv_buf_init(&o);
	sv_buf_printf(&o, "$%llu$", (unsigned long long)stated);
	b64enc(z, zn, &o);
	sv_buf_add(&o, "", 1);
	return (char *)o.p;
}

static void pay_ok(const char *p, const void *want, size_t wn, bool z, int line)
{
	struct sv_buf out;
	sv_buf_init(&out);
	struct sv_err err;
	sv_err_clear(&err);
	bool c = !z;
	int64_t size = sv_nh_payload_size(p, strlen(p), &c);
	int rc = sv_nh_payload_decode(p, strlen(p), MAX, &out, &err);
	if (!t_note(rc == 0 && size == (int64_t)wn && c == z && out.len == wn &&
		    (!wn || !memcmp(out.p, want, wn))))
		fprintf(stderr, "line %d: payload rc %d (%s) size %lld, %zu bytes\n", line, rc,
			err.msg, (long long)size, out.len);
	sv_buf_fini(&out);
}

static void pay_bad(const char *p, uint64_t max, int code, const char *msg, bool sized,
		    int line)
{
	struct sv_buf out;
	sv_buf_init(&out);
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_nh_payload_decode(p, strlen(p), max, &out, &err);
	int64_t size = sv_nh_payload_size(p, strlen(p), NULL);
	if (!t_note(rc == code && !strcmp(err.msg, msg) && out.len == 0 &&
		    (size >= 0) == sized))
		fprintf(stderr, "line %d: payload \"%.40s\": rc %d, \"%s\", size %lld; "
			"expected %d, \"%s\"\n", line, p, rc, err.msg, (long long)size, code,
			msg);
	sv_buf_fini(&out);
}

#define PAY_OK(p, w, wn, z) pay_ok(p, w, wn, z, __LINE__)
#define PAY_BAD(p, max, code, msg, sized) pay_bad(p, max, code, msg, sized, __LINE__)

static void payloads(void)
{
	PAY_OK("SGVsbG8=", "Hello", 5, false);
	PAY_OK("SGVsbG8h", "Hello!", 6, false);
	PAY_OK("SGk=", "Hi", 2, false);
	PAY_OK("SA==", "H", 1, false);
	PAY_OK("", "", 0, false);
	PAY_OK("+/+/", "\xfb\xff\xbf", 3, false);
	PAY_OK("SB==", "H", 1, false); /* unused bits not zero: accepted */

	/* compressed */
	uint8_t raw[3000], z[4000];
	for (int i = 0; i < 3000; i++)
		raw[i] = (uint8_t)(i % 17 * 5);
	uLongf zn = sizeof z;
	T_INT(Z_OK, compress2(z, &zn, raw, 3000, 9));
	char *p = zpayload(3000, z, zn);
	PAY_OK(p, raw, 3000, true);
	T_UINT(3000, sv_nh_payload_size(p, strlen(p), NULL));
	free(p);
	p = zpayload(2990, z, zn);
	PAY_BAD(p, MAX, -EBADMSG, "payload: stated length 2990 but the stream inflates to "
		"more", true);
	free(p);
	p = zpayload(3010, z, zn);
	PAY_BAD(p, MAX, -EBADMSG, "payload: stated length 3010 but the stream inflates to "
		"3000 bytes", true);
	free(p);
	p = zpayload(3000, z, zn);
	PAY_BAD(p, 2999, -EFBIG, "payload: stated length 3000 is over the limit of 2999",
		true);
	free(p);
	p = zpayload(0, z, zn);
	PAY_BAD(p, MAX, -EBADMSG, "payload: stated length 0 but the stream inflates to more",
		true);
	free(p);
	/* cut short, bytes after its end, corrupt, not zlib */
	p = zpayload(3000, z, zn - 4);
	PAY_BAD(p, MAX, -EBADMSG, "payload: the zlib stream is cut short after 3000 bytes",
		true);
	free(p);
	z[zn] = 0;
	p = zpayload(3000, z, zn + 1);
	PAY_BAD(p, MAX, -EBADMSG, "payload: 1 bytes after the end of the zlib stream", true);
	free(p);
	z[zn - 1] ^= 1;
	p = zpayload(3000, z, zn);
	PAY_BAD(p, MAX, -EBADMSG, "payload: corrupt zlib stream (incorrect data check)",
		true);
	free(p);
	p = zpayload(5, (const uint8_t *)"Hello", 5);
	PAY_BAD(p, MAX, -EBADMSG, "payload: corrupt zlib stream (incorrect header check)",
		true);
	free(p);
	PAY_BAD("$5$", MAX, -EBADMSG, "payload: the zlib stream is cut short after 0 bytes",
		true);
	/* several output pieces: 3 MiB of 'z' */
	size_t bign = 3u << 20;
	uint8_t *bigraw = malloc(bign), *bigz = malloc(bign);
	memset(bigraw, 'z', bign);
	uLongf bigzn = bign;
	T_INT(Z_OK, compress2(bigz, &bigzn, bigraw, bign, 9));
	p = zpayload(bign, bigz, bigzn);
	PAY_OK(p, bigraw, bign, true);
	free(p);
	p = zpayload(bign - 1, bigz, bigzn);
	PAY_BAD(p, MAX, -EBADMSG, "payload: stated length 3145727 but the stream inflates "
		"to more", true);
	free(p);
	p = zpayload(bign + 1, bigz, bigzn);
	PAY_BAD(p, MAX, -EBADMSG, "payload: stated length 3145729 but the stream inflates "
		"to 3145728 bytes", true);
	free(p);
	free(bigraw);
	free(bigz);
	/* an empty stream */
	zn = sizeof z;
	T_INT(Z_OK, compress2(z, &zn, raw, 0, 9));
	p = zpayload(0, z, zn);
	PAY_OK(p, "", 0, true);
	free(p);

	/* bad '$' prefixes */
	PAY_BAD("$12", MAX, -EBADMSG, "payload: no '$' after the length", false);
	PAY_BAD("$", MAX, -EBADMSG, "payload: no '$' after the length", false);
	PAY_BAD("$$eJw=", MAX, -EBADMSG, "payload: no digits between the '$'", false);
	PAY_BAD("$1x$eJw=", MAX, -EBADMSG, "payload: byte 2: not a digit of the length",
		false);
	PAY_BAD("$-1$eJw=", MAX, -EBADMSG, "payload: byte 1: not a digit of the length",
		false);
	PAY_BAD("$ 1$eJw=", MAX, -EBADMSG, "payload: byte 1: not a digit of the length",
		false);
	PAY_BAD("$99999999999999999999$eJw=", MAX, -EBADMSG,
		"payload: the stated length is too large", false);
	PAY_BAD("$1$eJw", MAX, -EBADMSG,
		"payload: 3 base64 characters are not a multiple of 4", false);
	PAY_BAD("$1$eJ w", MAX, -EBADMSG, "payload: byte 5: not base64", false);
	PAY_BAD("$10$SGV=bG8=", MAX, -EBADMSG, "payload: byte 7: '=' before the end", false);

	/* bad base64 */
	PAY_BAD("SGVs!G8=", MAX, -EBADMSG, "payload: byte 4: not base64", false);
	PAY_BAD("SGVsbG8 ", MAX, -EBADMSG, "payload: byte 7: not base64", false);
	PAY_BAD("SGVs\nG8=", MAX, -EBADMSG, "payload: byte 4: not base64", false);
	PAY_BAD("SGVs-G8_", MAX, -EBADMSG, "payload: byte 4: not base64", false);
	PAY_BAD("SGVsbG8", MAX, -EBADMSG,
		"payload: 7 base64 characters are not a multiple of 4", false);
	PAY_BAD("SGVsbG8==", MAX, -EBADMSG,
		"payload: 9 base64 characters are not a multiple of 4", false);
	PAY_BAD("SGV=bG8=", MAX, -EBADMSG, "payload: byte 3: '=' before the end", false);
	PAY_BAD("S===", MAX, -EBADMSG, "payload: byte 1: '=' before the end", false);
	PAY_BAD("====", MAX, -EBADMSG, "payload: byte 0: '=' before the end", false);
	PAY_BAD("SG=A", MAX, -EBADMSG, "payload: byte 2: '=' before the end", false);
	PAY_BAD("SGVsbG8h", 5, -EFBIG, "payload: 6 bytes is over the limit of 5", true);

	/* appends; a failure leaves out as it was */
	struct sv_buf out;
	sv_buf_init(&out);
	sv_buf_add(&out, "x", 1);
	struct sv_err err;
	T_INT(0, sv_nh_payload_decode("SGk=", 4, MAX, &out, &err));
	T_INT(-EBADMSG, sv_nh_payload_decode("SGk", 3, MAX, &out, &err));
	T_UINT(3, out.len);
	T_MEM("xHi", out.p, 3);
	zn = sizeof z;
	compress2(z, &zn, raw, 100, 9);
	p = zpayload(99, z, zn);
	T_INT(-EBADMSG, sv_nh_payload_decode(p, strlen(p), MAX, &out, &err));
	T_UINT(3, out.len);
	free(p);
	sv_buf_fini(&out);
}

/* ---- the real logs ---------------------------------------------------------------- */

struct sample {
	const char *file;
	size_t backup;   /* bytes of the (only) backup */
	unsigned diffs;
	unsigned zdiffs; /* diffs whose payload is compressed */
	size_t final;    /* bytes of the save after the last diff */
	uint32_t crc;    /* its crc32 */
};

static const struct sample samples[] = {
	{"nh4-4.3.0_saved_barbarian.nhgame", 38068, 41, 6, 38339, 0x788e2a75},
	{"nh4-4.3.0_done_died_barbarian_reloaded.nhgame", 38068, 43, 6, 38339, 0xad6c018a},
	{"nh4-4.3.0_done_quit_monk.nhgame", 39198, 13, 0, 39113, 0x74b26e9a},
	{"nh4-4.3.0_saved_wizardmode_10levels.nhgame", 39195, 331, 18, 211726, 0x69c7d819},
};

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct sv_buf b;
	sv_buf_init(&b);
	char chunk[65536];
	size_t k;
	while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
		sv_buf_add(&b, chunk, k);
	fclose(f);
	*n = b.len;
	return (char *)b.p;
}

static void replay(const char *dir, const struct sample *s)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, s->file);
	size_t len;
	char *t = slurp(path, &len);
	T_OK(t != NULL);
	if (!t) {
		fprintf(stderr, "%s: cannot read it\n", path);
		return;
	}
	struct sv_buf cur, next, d;
	sv_buf_init(&cur);
	sv_buf_init(&next);
	sv_buf_init(&d);
	unsigned backups = 0, diffs = 0, zdiffs = 0, crcs = 0, beta3 = 0, fails = 0;
	bool zbackup = false;
	size_t backup = 0;
	/* up to the last newline only: later bytes are an unfinished write */
	for (size_t i = 0; i < len;) {
		char *nl = memchr(t + i, '\n', len - i);
		if (!nl)
			break;
		const char *l = t + i;
		size_t n = (size_t)(nl - l);
		i += n + 1;
		struct sv_err err;
		sv_err_clear(&err);
		bool z;
		if (n > 10 && l[0] == '*' && l[9] == ' ') {
			cur.len = 0;
			int64_t sz = sv_nh_payload_size(l + 10, n - 10, &z);
			int rc = sv_nh_payload_decode(l + 10, n - 10, MAX, &cur, &err);
			if (rc || sz != (int64_t)cur.len)
				fails++, fprintf(stderr, "%s: backup: %s\n", s->file, err.msg);
			backups++;
			backup = cur.len;
			zbackup = z;
		} else if (n >= 1 && l[0] == '~') {
			d.len = 0;
			int64_t sz = sv_nh_payload_size(l + 1, n - 1, &z);
			int rc = sv_nh_payload_decode(l + 1, n - 1, MAX, &d, &err);
			if (rc || sz != (int64_t)d.len)
				fails++, fprintf(stderr, "%s: diff %u: %s\n", s->file, diffs, err.msg);
			next.len = 0;
			struct nh_diff_result res;
			rc = sv_nh_diff_apply(cur.p, cur.len, d.p, d.len, MAX, &next, &res, &err);
			if (rc)
				fails++, fprintf(stderr, "%s: diff %u: %s\n", s->file, diffs, err.msg);
			zdiffs += z;
			beta3 += res.format == NH_DIFF_BETA3;
			crcs += res.crc_checked;
			diffs++;
			struct sv_buf tmp = cur;
			cur = next;
			next = tmp;
		}
	}
	T_UINT(0, fails);
	T_UINT(1, backups);
	T_UINT(s->backup, backup);
	T_OK(zbackup);
	T_UINT(s->diffs, diffs);
	T_UINT(s->zdiffs, zdiffs);
	T_UINT(s->diffs, beta3);
	T_UINT(s->diffs, crcs);
	T_UINT(s->final, cur.len);
	uint32_t crc = (uint32_t)crc32(0, cur.p, (uInt)cur.len);
	T_UINT(s->crc, crc);
	fprintf(stderr, "%s: backup %zu bytes, %u diffs (%u compressed; beta3, crc "
		"checked), final save %zu bytes, crc32 %08x\n", s->file, backup, diffs, zdiffs,
		cur.len, crc);
	sv_buf_fini(&cur);
	sv_buf_fini(&next);
	sv_buf_fini(&d);
	free(t);
}

static void real_logs(const char *root)
{
	char dir[4096];
	struct stat st;
	snprintf(dir, sizeof dir, "%s/nethack4", root ? root : "");
	if (!root || stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "skipping: ../shared/samples/nethack4 not found (%s)\n",
			root ? dir : "SAMPLES is not set");
		return;
	}
	for (size_t i = 0; i < sizeof samples / sizeof *samples; i++)
		replay(dir, &samples[i]);
}

int main(int argc, char **argv)
{
	beta1();
	beta2();
	beta3_by_hand();
	beta3_commands();
	beta3_coord();
	beta3_errors();
	appending();
	payloads();
	real_logs(argc > 1 ? argv[1] : getenv("SAMPLES"));
	return t_done();
}
