/*
 * nhdiff.c - NetHack 4 log payloads and the three save-diff formats
 * (declared in nethack.h).
 *
 * Facts: ../shared/formats/nethack4.md ("Payload encoding", "Diffs"),
 * checked against the engine's mdiffapply() (libnethack/src/memfile.c).
 *
 *   payload   base64 (A-Z a-z 0-9 + /, '=' padding, length a multiple of 4)
 *             "$" decimal-length "$" base64-of-a-zlib-stream
 *
 *   diff      state: base (the previous save), pos (read position in base,
 *             starts at 0, may run past the end), output (append-only).
 *             An edit writes literal bytes AND advances pos as much; a
 *             seek argument is SUBTRACTED from pos.
 *
 *   beta1     no header; 16-bit little-endian words, cmd = top 2 bits,
 *             n = low 14 bits:  0 seek (n signed)  2 edit n  3 copy n
 *             1 invalid; the word 00 00 ends the diff
 *   beta2     01 40, then big-endian words by their top bits:
 *             0..      2 bytes  copy low 13 bits, then edit bits 13-14 + 1
 *             100      4 bytes  copy low 25 bits, then edit bits 25-28
 *             101      4 bytes  edit low 29 bits
 *             111      2 bytes  seek, 13-bit two's complement
 *             110      4 bytes  seek, 29-bit two's complement
 *             00 00 ends the diff
 *   beta3     01 43, then commands, each starting on a byte:
 *             MRU code   w ones, a zero, w+1 bits v: list index
 *                        (0, 2, 6)[w] + v; the command moves to the front
 *             wider      (a code) adds 8 bits to the next command's arg1;
 *                        the next code follows at once, mid-byte
 *             arg2       its fixed number of bits
 *             arg1       the rest of the byte, then whole bytes until it
 *                        has min + 8 * widenings bits (seek: signed)
 *             literals   edit, copyedit, copyedit1 bytes, byte-aligned
 *             eof / eof_crc32 end it (crc32 of the whole new save)
 *
 * Invariants: every read of the diff and of base is bounds-checked before
 * it happens; pos stays within [0, INT64_MAX] (a seek before the start of
 * base fails at once, as beta1's engine code does; beta3's engine would
 * only fail on a later read there, beta2's not at all); a zero-byte copy
 * never fails, wherever pos is (as in the engine); base must not lie in
 * out's buffer, which grows; the
 * output never grows past max; every loop consumes diff bytes (beta3's
 * wider consumes bits), so a diff of n bytes runs in O(n + output).
 * Reasons name the byte where the failing command starts.
 *
 * Choices the facts leave open: `commands` counts every code read, wider
 * prefixes included, and the end marker; a payload's length may have
 * leading zeros; a last base64 character whose unused low bits are not
 * zero is accepted (the bits are dropped); a zlib stream must end exactly
 * at the end of the payload.
 */
#include "nethack.h"

#include "codec/codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

/* ---- payloads ----------------------------------------------------------------- */

/*
 * Checks the base64 text s[0..n), which starts at byte `at` of the
 * payload.  Returns its decoded size, or -1 with a reason.
 */
static int64_t b64_check(const char *s, size_t n, size_t at, struct sv_err *err)
{
	if (n % 4) {
		sv_err_set(err, -EBADMSG,
			   "payload: %zu base64 characters are not a multiple of 4", n);
		return -1;
	}
	size_t pad = 0;
	if (n && s[n - 1] == '=')
		pad = n >= 2 && s[n - 2] == '=' ? 2 : 1;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)s[i];
		if (sv_base64_value(c) >= 0 || (c == '=' && i >= n - pad))
			continue;
		sv_err_set(err, -EBADMSG, "payload: byte %zu: %s", at + i,
			   c == '=' ? "'=' before the end" : "not base64");
		return -1;
	}
	return (int64_t)(n / 4 * 3 - pad);
}


/*
 * Parses the "$<len>$" prefix: *len the stated length, *skip the bytes up
 * to and with the second '$'.  -1 with a reason if it is malformed.
 */
static int dollar_prefix(const char *p, size_t n, uint64_t *len, size_t *skip,
			 struct sv_err *err)
{
	uint64_t v = 0;
	size_t i = 1;
	for (; i < n && p[i] != '$'; i++) {
		if (p[i] < '0' || p[i] > '9')
			return sv_err_set(err, -EBADMSG, "payload: byte %zu: not a digit of "
					  "the length", i), -1;
		if (v > (uint64_t)(INT64_MAX - (p[i] - '0')) / 10)
			return sv_err_set(err, -EBADMSG, "payload: the stated length is "
					  "too large"), -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (i == n)
		return sv_err_set(err, -EBADMSG, "payload: no '$' after the length"), -1;
	if (i == 1)
		return sv_err_set(err, -EBADMSG, "payload: no digits between the '$'"), -1;
	*len = v;
	*skip = i + 1;
	return 0;
}

int64_t sv_nh_payload_size(const char *p, size_t n, bool *compressed)
{
	bool z = n && p[0] == '$';
	if (compressed)
		*compressed = z;
	if (!z)
		return b64_check(p, n, 0, NULL);
	uint64_t len;
	size_t skip;
	if (dollar_prefix(p, n, &len, &skip, NULL) ||
	    b64_check(p + skip, n - skip, skip, NULL) < 0)
		return -1;
	return (int64_t)len;
}

/* Inflates the zlib stream src[0..n) into out: exactly want bytes. */
static int inflate_exact(const uint8_t *src, size_t n, uint64_t want,
			 struct sv_buf *out, struct sv_err *err)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit(&z) != Z_OK)
		return sv_err_set(err, -ENOMEM, "payload: out of memory");
	size_t start = out->len;
	uint64_t got = 0;
	int zr = Z_OK, rc = 0;
	z.next_in = (Bytef *)(uintptr_t)src;
	/* Inputs beyond 4 GiB go in pieces, as do outputs. */
	while (zr == Z_OK) {
		size_t used = (size_t)(z.next_in - src);
		if (z.avail_in == 0)
			z.avail_in = n - used > UINT_MAX ? UINT_MAX : (uInt)(n - used);
		/* One byte past want tells "more" from "exactly". */
		size_t chunk = want - got >= (1u << 20) ? 1u << 20 : (size_t)(want - got) + 1;
		if ((rc = sv_buf_reserve(out, chunk))) {
			rc = sv_err_set(err, rc, "payload: out of memory");
			goto done;
		}
		z.next_out = out->p + out->len;
		z.avail_out = (uInt)chunk;
		zr = inflate(&z, Z_NO_FLUSH);
		size_t k = chunk - z.avail_out;
		out->len += k;
		got += k;
		if (got > want) {
			rc = sv_err_set(err, -EBADMSG, "payload: stated length %" PRIu64
					" but the stream inflates to more", want);
			goto done;
		}
		bool stuck = !k && (size_t)(z.next_in - src) == used;
		if ((zr == Z_OK || zr == Z_BUF_ERROR) && stuck) {
			/* Out of input (avail_out is never 0 here). */
			rc = sv_err_set(err, -EBADMSG, "payload: the zlib stream is cut "
					"short after %" PRIu64 " bytes", got);
			goto done;
		}
		if (zr == Z_BUF_ERROR)
			zr = Z_OK;
	}
	if (zr == Z_NEED_DICT || zr == Z_DATA_ERROR) {
		rc = sv_err_set(err, -EBADMSG, "payload: corrupt zlib stream (%s)",
				z.msg ? z.msg : "data error");
	} else if (zr == Z_MEM_ERROR) {
		rc = sv_err_set(err, -ENOMEM, "payload: out of memory");
	} else if (got != want) {
		rc = sv_err_set(err, -EBADMSG, "payload: stated length %" PRIu64
				" but the stream inflates to %" PRIu64 " bytes", want, got);
	} else if ((size_t)(z.next_in - src) != n) {
		rc = sv_err_set(err, -EBADMSG, "payload: %zu bytes after the end of "
				"the zlib stream", n - (size_t)(z.next_in - src));
	}
done:
	inflateEnd(&z);
	if (rc)
		out->len = start;
	return rc;
}

int sv_nh_payload_decode(const char *p, size_t n, uint64_t max, struct sv_buf *out,
			 struct sv_err *err)
{
	size_t start = out->len;
	if (!n || p[0] != '$') {
		int64_t size = b64_check(p, n, 0, err);
		if (size < 0)
			return -EBADMSG;
		if ((uint64_t)size > max)
			return sv_err_set(err, -EFBIG, "payload: %" PRId64 " bytes is over "
					  "the limit of %" PRIu64, size, max);
		int rc = sv_base64_decode_valid(p, n, (size_t)size, out);
		return rc ? sv_err_set(err, rc, "payload: out of memory") : 0;
	}
	uint64_t len;
	size_t skip;
	if (dollar_prefix(p, n, &len, &skip, err))
		return -EBADMSG;
	int64_t zsize = b64_check(p + skip, n - skip, skip, err);
	if (zsize < 0)
		return -EBADMSG;
	if (len > max)
		return sv_err_set(err, -EFBIG, "payload: stated length %" PRIu64
				  " is over the limit of %" PRIu64, len, max);
	struct sv_buf z;
	sv_buf_init(&z);
	int rc = sv_base64_decode_valid(p + skip, n - skip, (size_t)zsize, &z);
	if (rc)
		rc = sv_err_set(err, rc, "payload: out of memory");
	else
		rc = inflate_exact(z.p ? z.p : (const uint8_t *)"", z.len, len, out, err);
	sv_buf_fini(&z);
	if (rc)
		out->len = start;
	return rc;
}

/* ---- save diffs: the shared state --------------------------------------------- */

struct st {
	const uint8_t *base;
	size_t blen;
	const uint8_t *d;
	size_t n;
	int64_t pos;         /* read position in base; >= 0 */
	struct sv_buf *out;
	size_t o0;           /* out->len before the diff: the save starts here */
	uint64_t max;
	size_t at;           /* diff byte of the command being run */
	struct sv_err *err;
};

static uint64_t made(const struct st *s)
{
	return s->out->len - s->o0;
}

static int room(struct st *s, uint64_t k)
{
	if (k > s->max || made(s) > s->max - k)
		return sv_err_set(s->err, -EFBIG, "diff byte %zu: the new save grows past "
				  "the limit of %" PRIu64 " bytes", s->at, s->max);
	int rc = sv_buf_reserve(s->out, (size_t)k);
	return rc ? sv_err_set(s->err, rc, "diff byte %zu: out of memory", s->at) : 0;
}

/* True if k bytes of base can be read at pos. */
static bool in_base(const struct st *s, uint64_t k)
{
	return (uint64_t)s->pos <= s->blen && k <= s->blen - (uint64_t)s->pos;
}

/* Copies k bytes of base from pos to the output; pos moves past them. */
static int copy(struct st *s, uint64_t k, const char *what)
{
	if (!k)
		return 0;
	if (!in_base(s, k))
		return sv_err_set(s->err, -EBADMSG, "diff byte %zu: %s of %" PRIu64
				  " bytes past the end of the previous save (pos %" PRId64
				  " of %zu)", s->at, what, k, s->pos, s->blen);
	int rc = room(s, k);
	if (rc)
		return rc;
	memcpy(s->out->p + s->out->len, s->base + s->pos, (size_t)k);
	s->out->len += (size_t)k;
	s->pos += (int64_t)k;
	return 0;
}

/* Appends k literal bytes from the diff at *i; pos moves as much. */
static int edit(struct st *s, size_t *i, uint64_t k, const char *what)
{
	if (k > s->n - *i)
		return sv_err_set(s->err, -EBADMSG, "diff byte %zu: the diff ends inside "
				  "the %" PRIu64 " literal bytes of %s", s->at, k, what);
	if (!k)
		return 0;
	int rc = room(s, k);
	if (rc)
		return rc;
	memcpy(s->out->p + s->out->len, s->d + *i, (size_t)k);
	s->out->len += (size_t)k;
	*i += (size_t)k;
	s->pos += (int64_t)k; /* k <= n: no overflow while pos <= INT64_MAX - n */
	return 0;
}

/* pos -= back. */
static int seek(struct st *s, int64_t back)
{
	int64_t to;
	if (__builtin_sub_overflow(s->pos, back, &to) || to > INT64_MAX / 2)
		return sv_err_set(s->err, -EBADMSG, "diff byte %zu: seek argument %" PRId64
				  " is out of range (pos %" PRId64 ")", s->at, back, s->pos);
	if (to < 0)
		return sv_err_set(s->err, -EBADMSG, "diff byte %zu: seek back %" PRId64
				  " bytes goes before the start of the previous save (pos %"
				  PRId64 ")", s->at, back, s->pos);
	s->pos = to;
	return 0;
}

static int ends(struct st *s)
{
	return sv_err_set(s->err, -EBADMSG, "diff byte %zu: the diff ends without its "
			  "end marker", s->at);
}

static int after_end(struct st *s, size_t i)
{
	if (i == s->n)
		return 0;
	return sv_err_set(s->err, -EBADMSG, "diff byte %zu: %zu bytes after the end "
			  "marker", i, s->n - i);
}

/* ---- beta1 and beta2 ------------------------------------------------------------ */

static int beta1(struct st *s, uint32_t *cmds)
{
	size_t i = 0;
	for (;;) {
		s->at = i;
		if (s->n - i < 2)
			return ends(s);
		unsigned w = s->d[i] | (unsigned)s->d[i + 1] << 8;
		i += 2;
		++*cmds;
		if (!w)
			return after_end(s, i);
		unsigned k = w & 0x3FFF;
		int rc;
		switch (w >> 14) {
		case 0:
			rc = seek(s, k >= 0x2000 ? (int64_t)k - 0x4000 : (int64_t)k);
			break;
		case 2:
			rc = edit(s, &i, k, "edit");
			break;
		case 3:
			rc = copy(s, k, "copy");
			break;
		default:
			rc = sv_err_set(s->err, -EBADMSG, "diff byte %zu: unknown command 1 "
					"(word %04x)", s->at, w);
		}
		if (rc)
			return rc;
	}
}

static int beta2(struct st *s, uint32_t *cmds)
{
	size_t i = 2;
	for (;;) {
		s->at = i;
		if (s->n - i < 2)
			return ends(s);
		uint32_t w = (uint32_t)s->d[i] << 8 | s->d[i + 1];
		unsigned top = s->d[i] >> 5;
		bool large = top == 4 || top == 5 || top == 6;
		if (large) {
			if (s->n - i < 4)
				return sv_err_set(s->err, -EBADMSG, "diff byte %zu: the diff ends "
						  "inside a 4-byte command", s->at);
			w = w << 16 | (uint32_t)s->d[i + 2] << 8 | s->d[i + 3];
			i += 4;
		} else {
			i += 2;
		}
		++*cmds;
		if (!w)
			return after_end(s, i);
		uint32_t c = 0, e = 0;
		int64_t sk = 0;
		switch (top) {
		case 4:
			c = w & 0x1FFFFFF;
			e = w >> 25 & 0xF;
			break;
		case 5:
			e = w & 0x1FFFFFFF;
			break;
		case 6:
			sk = w & 0x1FFFFFFF;
			if (sk & 0x10000000)
				sk -= 0x20000000;
			break;
		case 7:
			sk = w & 0x1FFF;
			if (sk & 0x1000)
				sk -= 0x2000;
			break;
		default:
			c = w & 0x1FFF;
			e = (w >> 13 & 3) + 1;
		}
		int rc = sk ? seek(s, sk) : 0;
		if (!rc)
			rc = copy(s, c, "copy");
		if (!rc && e)
			rc = edit(s, &i, e, "edit");
		if (rc)
			return rc;
	}
}

/* ---- beta3 -------------------------------------------------------------------- */

enum {
	C_COPYEDIT, C_COPY, C_EDIT, C_SEEK, C_WIDER, C_EOF, C_COORD, C_ERASE,
	C_INCREMENT, C_COPYEDIT1, C_EOF_CRC32, C_RLE, C_COUNT
};

static const struct {
	const char *name;
	uint8_t arg1, arg2; /* minimum flexible bits, fixed bits */
} cmd[C_COUNT] = {
	[C_COPYEDIT] = {"copyedit", 12, 2},   [C_COPY] = {"copy", 6, 0},
	[C_EDIT] = {"edit", 4, 0},            [C_SEEK] = {"seek", 8, 0},
	[C_WIDER] = {"wider", 0, 0},          [C_EOF] = {"eof", 12, 0},
	[C_COORD] = {"coord", 1, 3},          [C_ERASE] = {"erase", 7, 3},
	[C_INCREMENT] = {"increment", 12, 0}, [C_COPYEDIT1] = {"copyedit1", 4, 0},
	[C_EOF_CRC32] = {"eof_crc32", 12, 32}, [C_RLE] = {"rle", 2, 0},
};

#define MONST 85 /* SAVE_SIZE_MONST: the coord command's row */

/* W NW N NE E SE S SW */
static const int8_t dx[8] = {-1, -1, 0, 1, 1, 1, 0, -1};
static const int8_t dy[8] = {0, -1, -1, -1, 0, 1, 1, 1};

struct bits {
	const uint8_t *d;
	size_t n;
	uint64_t bp; /* bits read */
};

/* The next bit, or -1 at the end of the diff. */
static int bit(struct bits *b)
{
	if (b->bp / 8 >= b->n)
		return -1;
	int v = b->d[b->bp / 8] >> (7 - b->bp % 8) & 1;
	b->bp++;
	return v;
}

static int cut(struct st *s)
{
	return sv_err_set(s->err, -EBADMSG, "diff byte %zu: the diff ends inside a "
			  "command", s->at);
}

/* Reads one MRU code: the command, moved to the front of mru. */
static int code(struct st *s, struct bits *b, uint8_t mru[C_COUNT], unsigned *c)
{
	static const unsigned first[3] = {0, 2, 6};
	unsigned w = 0, v = 0;
	int x;
	while ((x = bit(b)) == 1)
		if (++w == 3)
			return sv_err_set(s->err, -EBADMSG, "diff byte %zu: command code "
					  "111... is past the table", s->at);
	for (unsigned k = 0; x >= 0 && k <= w; k++)
		if ((x = bit(b)) >= 0)
			v = v << 1 | (unsigned)x;
	if (x < 0)
		return cut(s);
	unsigned idx = first[w] + v;
	if (idx >= C_COUNT)
		return sv_err_set(s->err, -EBADMSG, "diff byte %zu: command code %u is "
				  "past the table", s->at, idx);
	*c = mru[idx];
	memmove(mru + 1, mru, idx);
	mru[0] = (uint8_t)*c;
	return 0;
}

/*
 * Reads arg1: the rest of the current byte, then whole bytes until it has
 * at least `need` bits; seek's is signed.  Leaves b on a byte boundary.
 */
static int arg1(struct st *s, struct bits *b, unsigned c, uint64_t need, int64_t *out)
{
	unsigned r = (unsigned)(8 - b->bp % 8) % 8;
	uint64_t have = r;
	size_t i = (size_t)((b->bp + 7) / 8); /* the next whole byte */
	unsigned cur = r ? b->d[i - 1] & ((1u << r) - 1) : 0;
	bool neg = false;
	if (c == C_SEEK)
		neg = r ? cur >> (r - 1) & 1 : i < b->n && b->d[i] >> 7;
	int64_t v = neg ? (int64_t)cur - ((int64_t)1 << r) : (int64_t)cur;
	for (; have < need; have += 8, i++) {
		if (i >= b->n)
			return cut(s);
		if (__builtin_mul_overflow(v, 256, &v) ||
		    __builtin_add_overflow(v, (int64_t)b->d[i], &v))
			return sv_err_set(s->err, -EBADMSG, "diff byte %zu: %s argument "
					  "does not fit in 64 bits", s->at, cmd[c].name);
	}
	b->bp = (uint64_t)i * 8;
	*out = v;
	return 0;
}

/* One byte: base[pos + k] + delta, for increment and coord. */
static uint8_t nudge(const struct st *s, size_t k, int delta)
{
	return (uint8_t)(s->base[s->pos + (int64_t)k] + delta);
}

static int beta3(struct st *s, uint32_t *cmds, bool *crc_ok)
{
	uint8_t mru[C_COUNT];
	for (unsigned k = 0; k < C_COUNT; k++)
		mru[k] = (uint8_t)k;
	struct bits b = {s->d, s->n, 16};
	uint64_t coord_base = 0; /* output length after the last copy */
	for (;;) {
		s->at = (size_t)(b.bp / 8);
		if (s->at >= s->n)
			return ends(s);
		unsigned c;
		uint64_t widen = 0;
		int rc;
		for (;;) {
			if ((rc = code(s, &b, mru, &c)))
				return rc;
			++*cmds;
			if (c != C_WIDER)
				break;
			widen++;
		}
		if (c == C_RLE)
			return sv_err_set(s->err, -EBADMSG, "diff byte %zu: rle command, "
					  "which no engine writes", s->at);
		uint32_t a2 = 0;
		for (unsigned k = 0; k < cmd[c].arg2; k++) {
			int x = bit(&b);
			if (x < 0)
				return cut(s);
			a2 = a2 << 1 | (uint32_t)x;
		}
		int64_t a1 = 0;
		if ((rc = arg1(s, &b, c, cmd[c].arg1 + 8 * widen, &a1)))
			return rc;
		size_t i = (size_t)(b.bp / 8); /* literal bytes start here */
		const char *name = cmd[c].name;
		switch (c) {
		case C_COPYEDIT:
			if (!(rc = copy(s, (uint64_t)a1, name)))
				rc = edit(s, &i, a2 + 1, name);
			break;
		case C_COPY:
			rc = copy(s, (uint64_t)a1, name);
			coord_base = made(s);
			break;
		case C_EDIT:
			rc = edit(s, &i, (uint64_t)a1 + 1, name);
			break;
		case C_SEEK:
			rc = seek(s, a1);
			break;
		case C_EOF:
		case C_EOF_CRC32:
			if ((rc = copy(s, (uint64_t)a1, name)))
				return rc;
			if (c == C_EOF_CRC32) {
				uint32_t crc = 0;
				for (size_t k = 0, m = made(s); k < m;) {
					uInt piece = m - k > UINT_MAX ? UINT_MAX : (uInt)(m - k);
					crc = (uint32_t)crc32(crc, s->out->p + s->o0 + k, piece);
					k += piece;
				}
				if (crc != a2)
					return sv_err_set(s->err, -EBADMSG, "diff byte %zu: the new "
							  "save's crc32 is %08" PRIx32 ", not %08"
							  PRIx32, s->at, crc, a2);
				*crc_ok = true;
			}
			return after_end(s, i);
		case C_COORD: {
			uint64_t rem = (made(s) - coord_base) % MONST;
			uint64_t k = rem ? MONST - rem : 0;
			if ((uint64_t)a1 > (UINT64_MAX - k) / MONST) {
				rc = sv_err_set(s->err, -EBADMSG, "diff byte %zu: coord copy of "
						"%" PRId64 " rows is out of range", s->at, a1);
				break;
			}
			if ((rc = copy(s, (uint64_t)a1 * MONST + k, name)))
				break;
			uint8_t two[2];
			size_t e = dy[a2] ? 2 : 1;
			if (!in_base(s, e)) {
				rc = sv_err_set(s->err, -EBADMSG, "diff byte %zu: coord reads past "
						"the end of the previous save (pos %" PRId64
						" of %zu)", s->at, s->pos, s->blen);
				break;
			}
			two[0] = nudge(s, 0, dx[a2]);
			if (e == 2)
				two[1] = nudge(s, 1, dy[a2]);
			if ((rc = room(s, e)))
				break;
			memcpy(s->out->p + s->out->len, two, e);
			s->out->len += e;
			s->pos += (int64_t)e;
			break;
		}
		case C_ERASE:
			if ((rc = copy(s, (uint64_t)a1, name)) || (rc = room(s, a2 + 3)))
				break;
			memset(s->out->p + s->out->len, 0, a2 + 3);
			s->out->len += a2 + 3;
			s->pos += a2 + 3;
			break;
		case C_INCREMENT:
			if ((rc = copy(s, (uint64_t)a1, name)))
				break;
			if (!in_base(s, 1)) {
				rc = sv_err_set(s->err, -EBADMSG, "diff byte %zu: increment reads "
						"past the end of the previous save (pos %" PRId64
						" of %zu)", s->at, s->pos, s->blen);
				break;
			}
			if (!(rc = room(s, 1))) {
				s->out->p[s->out->len++] = nudge(s, 0, 1);
				s->pos++;
			}
			break;
		case C_COPYEDIT1:
			if (!(rc = copy(s, (uint64_t)a1, name)))
				rc = edit(s, &i, 1, name);
			break;
		}
		if (rc)
			return rc;
		b.bp = (uint64_t)i * 8;
	}
}

/* ---- entry points --------------------------------------------------------------- */

enum nh_diff_format sv_nh_diff_format(const uint8_t *d, size_t n)
{
	if (n >= 2 && d[0] == 0x01 && d[1] == 0x43)
		return NH_DIFF_BETA3;
	if (n >= 2 && d[0] == 0x01 && d[1] == 0x40)
		return NH_DIFF_BETA2;
	return NH_DIFF_BETA1;
}

int sv_nh_diff_apply(const uint8_t *base, size_t blen, const uint8_t *d, size_t n,
		     uint64_t max, struct sv_buf *out, struct nh_diff_result *res,
		     struct sv_err *err)
{
	struct st s = {
		.base = base, .blen = blen, .d = d, .n = n, .pos = 0, .out = out,
		.o0 = out->len, .max = max, .at = 0, .err = err,
	};
	struct nh_diff_result r = {sv_nh_diff_format(d, n), false, 0};
	int rc;
	switch (r.format) {
	case NH_DIFF_BETA3:
		rc = beta3(&s, &r.commands, &r.crc_checked);
		break;
	case NH_DIFF_BETA2:
		rc = beta2(&s, &r.commands);
		break;
	default:
		rc = beta1(&s, &r.commands);
	}
	if (rc) {
		out->len = s.o0;
		r.crc_checked = false;
	}
	if (res)
		*res = r;
	return rc;
}
