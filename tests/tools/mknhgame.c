/*
 * mknhgame - writes NetHack 4.3 game logs (.nhgame) for savefs's tests and
 * benchmarks.  Facts: ../shared/formats/nethack4.md; the line shapes follow
 * the logs the 4.3.0 engine wrote (../shared/samples/nethack4).  The three
 * save-diff encoders (4.3-beta1, beta2, beta3) are this file's own, written
 * from the facts and sharing no code with core/fmt/nethack/nhdiff.c, so that the two
 * check each other (and tests/tools/nhdecode.py checks both).
 *
 * The output depends only on the arguments: every choice comes from a
 * xorshift generator seeded with --seed.
 *
 *   mknhgame OUT [options]
 *       A whole log: the three header lines, a first backup (`*`), the
 *       `welcome` command, a time line and a diff, then the turns.  A turn is
 *       a command line, for each prompt a time line and the prompt line, a
 *       time line, sometimes a bones line (`B`), and a diff (`~`), or a new
 *       backup every --backup-every turns.  The first 10 turns go through
 *       every command argument kind (D P I T S L, none, several; turn 4's T
 *       is long enough to be compressed) and the first 20 through every
 *       prompt form (P! P<x>,<y><key> D-1..10 K<c> K<c>,<count> Y M! M
 *       M<ids> O! O O<ids[,counts]> L<text> L<ESC>); later turns are mostly
 *       `move D<n>`, with now and then a prompt, a `down` (a new level: the
 *       save grows) or a `welcome` (a reload, after a long time line).
 *   mknhgame --line KIND [--seed N]
 *       One valid body line on stdout; KIND is command, time, getpos,
 *       getdir, key, yn, menu, objmenu, text, bones, quit or welcome.
 *   mknhgame diffline PREV_SAVE NEW_SAVE [--diff beta1|beta2|beta3]
 *                     [--no-crc] [--compress auto|never|always]
 *       One `~` line (with its newline) turning PREV_SAVE into NEW_SAVE.
 *   mknhgame backupline SAVE [PREV_OFFSET] [--compress auto|never|always]
 *       One `*` line holding SAVE and pointing at PREV_OFFSET (decimal or
 *       0x-hex; default 0), with its newline.
 * The words diffline and backupline are verbs; write ./diffline to make a
 * log of that name.
 *
 * Options for a log:
 *   --seed N            the generator's seed (default 1)
 *   --turns N           turns after the welcome (default 50)
 *   --size BYTES        instead of --turns: turns until the log is at least
 *                       BYTES long (streamed; memory stays bounded)
 *   --save-size N       the synthetic save's starting and mean size (16 to
 *                       1 GiB, default 4000)
 *   --diff F            beta1, beta2, beta3 (default) or mixed (the three in
 *                       turn, diff by diff)
 *   --backup-every K    a backup instead of a diff every K-th turn (K-th,
 *                       2K-th, ...; default 0: only the first backup).  The
 *                       first backup points at the latest, each later one at
 *                       the one before
 *   --bones             a `B!` line a third of the way in and a `B` line
 *                       with a bones file two thirds of the way in (with
 *                       --size: in turn every 1000 turns)
 *   --done              a finished game: status `done`, line 2 the death
 *                       reason, a final `Q` line.  A reason of "quit" ends
 *                       with turn, diff, Q (as a quit does); any other ends
 *                       with a command and its time line but no diff before
 *                       the Q (as a death does)
 *   --reason TEXT       the death reason (default: chosen by the seed)
 *   --recovery N        the recovery count on line 1 (default 1)
 *   --torn              ends with an unfinished line: a prefix of one line
 *                       of one more turn, no newline (after the Q with
 *                       --done)
 *   --states DIR        writes DIR/<line>.sav, the true save after every
 *                       backup and diff line (<line>: its 1-based line
 *                       number in 6 digits); DIR is created if missing
 *   --start TIME        game start: YYYY-MM-DDTHH:MM:SS[.ffffff][Z] (UTC) or
 *                       seconds since the epoch (default
 *                       2026-01-02T03:04:05Z)
 *   --mode 0..3         play mode on line 3 (default 0)
 *   --name NAME         player name (default Tester)
 *   --role R --race R --gender G --align A
 *                       the four words of line 3 (default: chosen by the
 *                       seed among real combinations, e.g. Bar hum mal neu;
 *                       the engine writes the last three in lower case)
 *   --compress auto|never|always
 *                       payloads: auto compresses as the engine does, when
 *                       "$len$" plus the zlib stream (level 9, as
 *                       compress2) is shorter than the raw bytes; never and
 *                       always force one form (valid for readers, not what
 *                       the engine writes; never is twice as fast)
 *   --no-crc            beta3 diffs end with `eof` instead of `eof_crc32`
 *                       (the engine always writes eof_crc32)
 *
 * The synthetic save: a 64-byte header with a turn counter (so most diffs
 * carry a byte+1 change), a table of 85-byte monster records whose first two
 * bytes are x,y coordinates (monsters step one square, which is what beta3's
 * coord command encodes), and a level area that takes scattered changes,
 * zeroed runs, inserted and deleted runs, swapped blocks (backward seeks)
 * and, on `down`, growth by a new level; it drifts back toward --save-size.
 * Runs longer than beta1's 14 bits and beta2's small forms happen once the
 * save is larger than about 32 KB (try --save-size 40000).
 *
 * Prints nothing on success (--line, diffline and backupline print their
 * line); a message and exit 1 on failure; usage and exit 2 on bad
 * arguments.
 */
#include "core/savefs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_CLMUL 1
#endif

#define USAGE                                                                             \
	"usage: mknhgame OUT [--turns N | --size BYTES] [--seed N] [--save-size N]\n"     \
	"                [--diff beta1|beta2|beta3|mixed] [--backup-every K] [--bones]\n" \
	"                [--done] [--reason TEXT] [--recovery N] [--torn] [--states DIR]\n" \
	"                [--start TIME] [--mode 0..3] [--name NAME] [--role R] [--race R]\n" \
	"                [--gender G] [--align A] [--compress auto|never|always] [--no-crc]\n" \
	"       mknhgame --line KIND [--seed N]\n"                                          \
	"                KIND: command time getpos getdir key yn menu objmenu text bones\n" \
	"                      quit welcome\n"                                              \
	"       mknhgame diffline PREV_SAVE NEW_SAVE [--diff beta1|beta2|beta3] [--no-crc]\n" \
	"                [--compress auto|never|always]\n"                                  \
	"       mknhgame backupline SAVE [PREV_OFFSET] [--compress auto|never|always]\n"

#define ROW 85                  /* beta3 coord stride (the engine's monster record) */
#define MAX_SAVE (1u << 30)     /* --save-size limit; the save stays below 4x that */
#define FLUSH_AT (1u << 20)     /* the log buffer is written out past this */
#define DEFAULT_START 1767323045 /* 2026-01-02T03:04:05Z */

static int fail(const char *what, const char *why)
{
	fprintf(stderr, "mknhgame: %s%s%s\n", what, why ? ": " : "", why ? why : "");
	return 1;
}

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "mknhgame: %s\n", why);
	fputs(USAGE, stderr);
	return 2;
}

/* ---- the generator ---------------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A generator for one purpose (the save's edits, the lines, ...), so that
 * the choices of one do not shift those of another. */
static uint64_t seeded(uint64_t seed, uint64_t purpose)
{
	uint64_t s = splitmix(seed ^ splitmix(purpose));
	return s ? s : 1;
}

/* 0..n-1 (0 when n is 0). */
static uint64_t below(uint64_t *s, uint64_t n)
{
	return n ? (rnd(s) >> 8) % n : 0;
}

static bool chance(uint64_t *s, unsigned per_mille)
{
	return below(s, 1000) < per_mille;
}

/* ---- crc32 --------------------------------------------------------------------- */

#ifdef HAVE_CLMUL
/*
 * zlib's crc32 (reflected polynomial 0xedb88320) by carry-less multiplication,
 * folding 64 bytes a step: "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ Instruction", Gopal et al., Intel 2009; the constants are the
 * paper's for this polynomial.  crc is in the inverted (running) form; len is
 * at least 64 and a multiple of 16.  Every beta3 diff ends with the crc32 of
 * the whole new save, and zlib's table code was a quarter of the run time.
 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc_fold(uint32_t crc, const uint8_t *p,
								 size_t len)
{
	const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
	const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
	const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124);
	const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
	const __m128i mask32 = _mm_setr_epi32(~0, 0, ~0, 0);
	__m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
	__m128i x4 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
	__m128i x5, x6, x7, x8;
	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
	for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
		x5 = _mm_clmulepi64_si128(x1, k1k2, 0x00);
		x6 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
		x7 = _mm_clmulepi64_si128(x3, k1k2, 0x00);
		x8 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
		x1 = _mm_clmulepi64_si128(x1, k1k2, 0x11);
		x2 = _mm_clmulepi64_si128(x2, k1k2, 0x11);
		x3 = _mm_clmulepi64_si128(x3, k1k2, 0x11);
		x4 = _mm_clmulepi64_si128(x4, k1k2, 0x11);
		x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), _mm_loadu_si128((const __m128i *)(const void *)p));
		x2 = _mm_xor_si128(_mm_xor_si128(x2, x6),
				   _mm_loadu_si128((const __m128i *)(const void *)(p + 16)));
		x3 = _mm_xor_si128(_mm_xor_si128(x3, x7),
				   _mm_loadu_si128((const __m128i *)(const void *)(p + 32)));
		x4 = _mm_xor_si128(_mm_xor_si128(x4, x8),
				   _mm_loadu_si128((const __m128i *)(const void *)(p + 48)));
	}
	/* Fold the four lanes into one, then the remaining 16-byte blocks. */
	const __m128i *rest[3] = { &x2, &x3, &x4 };
	for (int k = 0; k < 3; k++) {
		x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
		x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
		x1 = _mm_xor_si128(_mm_xor_si128(x1, *rest[k]), x5);
	}
	for (; len >= 16; p += 16, len -= 16) {
		x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
		x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
		x1 = _mm_xor_si128(_mm_xor_si128(x1, _mm_loadu_si128((const __m128i *)(const void *)p)), x5);
	}
	/* 128 bits to 64, then Barrett reduction to 32. */
	x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
	x2 = _mm_srli_si128(x1, 4);
	x1 = _mm_and_si128(x1, mask32);
	x1 = _mm_clmulepi64_si128(x1, k5k0, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	x2 = _mm_and_si128(x1, mask32);
	x2 = _mm_clmulepi64_si128(x2, poly, 0x10);
	x2 = _mm_and_si128(x2, mask32);
	x2 = _mm_clmulepi64_si128(x2, poly, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

/* zlib's crc32 of p[0..n). */
static uint32_t crc32_of(const uint8_t *p, size_t n)
{
#ifdef HAVE_CLMUL
	static int ok = -1;
	if (ok < 0)
		ok = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
	if (ok && n >= 64) {
		size_t m = n & ~(size_t)15;
		uint32_t c = ~crc_fold(0xffffffffu, p, m);
		return (uint32_t)crc32(c, p + m, (uInt)(n - m));
	}
#endif
	uint32_t c = 0;
	for (size_t o = 0; o < n; o += 1u << 30)
		c = (uint32_t)crc32(c, p + o, (uInt)(n - o < 1u << 30 ? n - o : 1u << 30));
	return c;
}

/* ---- byte buffers ------------------------------------------------------------ */

/* A growable buffer whose first failed allocation is sticky: later appends
 * are dropped and the owner checks `oom` once, where it is convenient. */
struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static uint8_t *grow(struct buf *b, size_t n)
{
	if (b->oom)
		return NULL;
	if (n > b->cap - b->len || !b->p) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap - b->len < n) {
			if (cap > SIZE_MAX / 2) {
				b->oom = true;
				return NULL;
			}
			cap *= 2;
		}
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	return b->p + b->len;
}

static void add(struct buf *b, const void *p, size_t n)
{
	uint8_t *d = grow(b, n);
	if (d && n) {
		memcpy(d, p, n);
		b->len += n;
	}
}

static void add1(struct buf *b, uint8_t c)
{
	if (b->len < b->cap) {
		b->p[b->len++] = c;
		return;
	}
	uint8_t *d = grow(b, 1);
	if (d) {
		*d = c;
		b->len++;
	}
}

static void adds(struct buf *b, const char *s)
{
	add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void addf(struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp) {
		b->oom = true; /* only short fixed formats come here */
		return;
	}
	add(b, tmp, (size_t)n);
}

/* Unsigned v in decimal (base 10) or lower-case hex (base 16). */
static void addu(struct buf *b, uint64_t v, unsigned base)
{
	char t[24];
	int i = sizeof t;
	do {
		t[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	add(b, t + i, sizeof t - (size_t)i);
}

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

/* ---- payloads ------------------------------------------------------------------ */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 with padding. */
static void b64(struct buf *b, const uint8_t *p, size_t n)
{
	char *d = (char *)grow(b, (n + 2) / 3 * 4);
	if (!d)
		return;
	size_t i = 0, o = 0;
	for (; i + 3 <= n; i += 3, o += 4) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		d[o] = B64[v >> 18];
		d[o + 1] = B64[v >> 12 & 63];
		d[o + 2] = B64[v >> 6 & 63];
		d[o + 3] = B64[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		d[o] = B64[v >> 18];
		d[o + 1] = B64[v >> 12 & 63];
		d[o + 2] = i + 1 < n ? B64[v >> 6 & 63] : '=';
		d[o + 3] = '=';
		o += 4;
	}
	b->len += o;
}

enum pmode { P_AUTO, P_NEVER, P_ALWAYS };

/* Least bits of code-length codes for a run of z zero lengths (0: 1 bit a
 * zero, 17: 3-10 zeros, 4 bits, 18: 11-138 zeros, 8 bits, each code at
 * least 1 bit) and for a run of m non-zero ones (each one a code, or 16:
 * the previous one again 3-6 times, 3 bits). */
#define ZRUN_MAX 320
static uint16_t zrun_bits[ZRUN_MAX], nzrun_bits[ZRUN_MAX];

static void runs_init(void)
{
	/* rep[j]: j lengths after an explicit one, each a code or in a 16. */
	uint16_t rep[ZRUN_MAX];
	rep[0] = 0;
	for (int z = 1; z < ZRUN_MAX; z++) {
		int best = rep[z - 1] + 1;
		for (int r = 3; r <= 6 && r <= z; r++)
			if (rep[z - r] + 3 < best)
				best = rep[z - r] + 3;
		rep[z] = (uint16_t)best;
	}
	for (int z = 1; z < ZRUN_MAX; z++) {
		int best = 1 + rep[z - 1]; /* a 0 code, then codes or 16s */
		for (int r = 3; r <= 10 && r <= z; r++)
			if (zrun_bits[z - r] + 4 < best)
				best = zrun_bits[z - r] + 4;
		for (int r = 11; r <= 138 && r <= z; r++)
			if (zrun_bits[z - r] + 8 < best)
				best = zrun_bits[z - r] + 8;
		for (int r = 3; r <= 6 && r < z; r++) /* a 16 after a zero of this run */
			if (zrun_bits[z - r] + 3 < best)
				best = zrun_bits[z - r] + 3;
		zrun_bits[z] = (uint16_t)best;
		nzrun_bits[z] = (uint16_t)(1 + rep[z - 1]);
	}
}

/*
 * False when no zlib stream of p[0..n) can be shorter than `room` bytes, so
 * deflate need not be run (most small diffs: deflate's set-up and trees
 * take far longer than the diff's encoding).  With no 3-byte string
 * repeated, deflate can only send literals, in one block (n < 16K, here at most 4K); the
 * stream is then at least 6 bytes of zlib framing plus the cheaper of the
 * fixed-code block (8 or 9 bits a literal, 7 for the end) and a lower
 * bound for a dynamic one: 29 header bits, the code lengths at one bit or
 * more a code, the forced two distance codes, and the literals and end
 * under an optimal (unlimited) Huffman code.  Only a bound: it never
 * changes the decision deflate's real size gives.
 */
static bool may_compress(const uint8_t *p, size_t n, size_t room)
{
	/* Seen 3-byte strings, stamped with the call's number (1-255) in the
	 * top byte, so the table is cleared only once every 255 calls. */
	static uint32_t seen[1 << 14], gen;
	if (n > 4096 || n < 3)
		return true;
	if (++gen == 256) {
		memset(seen, 0, sizeof seen);
		gen = 1;
	}
	uint32_t mask = 63;
	while (mask + 1 < 2 * n)
		mask = mask * 2 + 1;
	for (size_t i = 0; i + 3 <= n; i++) {
		uint32_t v = gen << 24 | (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		uint32_t h = (v * 0x9e3779b1u) >> 17 & mask;
		while (seen[h] >> 24 == gen) {
			if (seen[h] == v)
				return true; /* a match is possible */
			h = (h + 1) & mask;
		}
		seen[h] = v;
	}
	/* The literals: counts (cnt is all zero between calls), which are
	 * used, and the fixed-code cost. */
	static uint32_t cnt[256];
	uint64_t used[4] = { 0 }, fixed = 3 + 7;
	for (size_t i = 0; i < n; i++) {
		cnt[p[i]]++;
		used[p[i] >> 6] |= (uint64_t)1 << (p[i] & 63);
		fixed += p[i] < 144 ? 8 : 9;
	}
	/* The weights in ascending order: small ones by counting, the few
	 * large ones by insertion. */
	uint32_t w[257], merged[257], big[257], nsmall[64] = { 0 };
	size_t k = 0, nbig = 0;
	nsmall[1] = 1; /* end of block */
	for (int q = 0; q < 4; q++)
		for (uint64_t b = used[q]; b; b &= b - 1) {
			int sym = q * 64 + __builtin_ctzll(b);
			uint32_t c = cnt[sym];
			cnt[sym] = 0;
			if (c < 64) {
				nsmall[c]++;
				continue;
			}
			size_t j = nbig++;
			while (j && big[j - 1] > c) {
				big[j] = big[j - 1];
				j--;
			}
			big[j] = c;
		}
	for (uint32_t c = 1; c < 64; c++)
		for (uint32_t t = nsmall[c]; t; t--)
			w[k++] = c;
	for (size_t j = 0; j < nbig; j++)
		w[k++] = big[j];
	/* Optimal Huffman cost: the sum of the merged weights (two queues). */
	uint64_t huff = 0;
	size_t a = 0, m0 = 0, m1 = 0;
	for (size_t left = k; left > 1; left--) {
		uint32_t x[2];
		for (int t = 0; t < 2; t++)
			x[t] = m0 < m1 && (a == k || merged[m0] <= w[a]) ? merged[m0++] : w[a++];
		merged[m1++] = x[0] + x[1];
		huff += (uint64_t)x[0] + x[1];
	}
	/* The code lengths sent: symbols 0..256 (no length codes), then the
	 * two distance codes zlib always gives a length: runs of zero and of
	 * non-zero lengths. */
	uint64_t lens = 0;
	int prev = -1, run = 0; /* the last used symbol, the non-zero run up to it */
	for (int q = 0; q < 4; q++)
		for (uint64_t b = used[q]; b; b &= b - 1) {
			int sym = q * 64 + __builtin_ctzll(b);
			if (sym == prev + 1) {
				run++;
			} else {
				lens += nzrun_bits[run] + zrun_bits[sym - prev - 1];
				run = 1;
			}
			prev = sym;
		}
	if (prev == 255)
		run += 3; /* end of block and the two distance codes */
	else
		lens += nzrun_bits[run] + zrun_bits[255 - prev], run = 3;
	lens += nzrun_bits[run];
	uint64_t dyn = 29 + lens + huff;
	uint64_t bits = fixed < dyn ? fixed : dyn;
	return 6 + (bits + 7) / 8 < room;
}

/* Payload writer: one deflate state, reset for every payload (a reset
 * stream produces what compress2 at level 9 does, without its set-up). */
struct payer {
	z_stream z;
	bool zinit;
	enum pmode mode;
	struct buf tmp;
};

static void payer_fini(struct payer *w)
{
	if (w->zinit)
		deflateEnd(&w->z);
	w->zinit = false;
	buf_free(&w->tmp);
}

/*
 * Appends the payload form of p[0..n) to out: "$<n>$" and base64 of a zlib
 * stream (level 9, header 78 da) when, as in the engine, the prefix plus the
 * stream is shorter than the raw bytes, else plain base64.  0, -ENOMEM, or
 * -EIO if zlib fails.
 */
static int payload(struct payer *w, struct buf *out, const uint8_t *p, size_t n)
{
	char pre[32];
	int plen = snprintf(pre, sizeof pre, "$%zu$", n);
	/* A zlib stream of one or more bytes takes at least 9 bytes. */
	bool try = w->mode == P_ALWAYS ||
		   (w->mode == P_AUTO && n > (size_t)plen + 9 && may_compress(p, n, n - (size_t)plen));
	if (try && n <= UINT_MAX / 2) {
		if (!w->zinit) {
			memset(&w->z, 0, sizeof w->z);
			if (deflateInit(&w->z, Z_BEST_COMPRESSION) != Z_OK)
				return -ENOMEM;
			w->zinit = true;
		} else if (deflateReset(&w->z) != Z_OK) {
			return -EIO;
		}
		size_t bound = deflateBound(&w->z, (uLong)n);
		w->tmp.len = 0;
		uint8_t *d = grow(&w->tmp, bound);
		if (!d)
			return -ENOMEM;
		w->z.next_in = (Bytef *)(uintptr_t)p;
		w->z.avail_in = (uInt)n;
		w->z.next_out = d;
		w->z.avail_out = (uInt)bound;
		if (deflate(&w->z, Z_FINISH) != Z_STREAM_END)
			return -EIO;
		size_t zlen = bound - w->z.avail_out;
		if (w->mode == P_ALWAYS || (size_t)plen + zlen < n) {
			add(out, pre, (size_t)plen);
			b64(out, d, zlen);
			return out->oom ? -ENOMEM : 0;
		}
	}
	b64(out, p, n);
	return out->oom ? -ENOMEM : 0;
}

/* ---- edit programs ------------------------------------------------------------- */

/*
 * What turns one save into the next, in the diffs' own terms: a read
 * position `pos` in the old save starts at 0; COPY n appends old[pos..pos+n)
 * and advances pos; EDIT appends n literal bytes and advances pos by n too;
 * SEEK s subtracts s from pos.  The generator writes programs directly (it
 * knows its edits), diffline gets one from a generic differ.
 */
enum { OP_COPY, OP_EDIT, OP_SEEK };

struct op {
	int kind;
	uint64_t n;  /* COPY, EDIT: bytes */
	int64_t s;   /* SEEK: subtracted from pos */
	size_t lit;  /* EDIT: offset of the bytes in prog.lit */
};

struct prog {
	struct op *v;
	size_t n, cap;
	struct buf lit;
	bool oom;
};

static void prog_reset(struct prog *g)
{
	g->n = 0;
	g->lit.len = 0;
}

static void prog_free(struct prog *g)
{
	free(g->v);
	buf_free(&g->lit);
	memset(g, 0, sizeof *g);
}

static struct op *op_new(struct prog *g)
{
	if (g->oom)
		return NULL;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		struct op *v = realloc(g->v, cap * sizeof *v);
		if (!v) {
			g->oom = true;
			return NULL;
		}
		g->v = v;
		g->cap = cap;
	}
	return &g->v[g->n++];
}

static void op_copy(struct prog *g, uint64_t n)
{
	if (!n)
		return;
	if (g->n && g->v[g->n - 1].kind == OP_COPY) {
		g->v[g->n - 1].n += n;
		return;
	}
	struct op *o = op_new(g);
	if (o)
		*o = (struct op){ .kind = OP_COPY, .n = n };
}

static void op_seek(struct prog *g, int64_t s)
{
	if (!s)
		return;
	struct op *o = op_new(g);
	if (o)
		*o = (struct op){ .kind = OP_SEEK, .s = s };
}

/* An edit of n bytes; returns where to put them (in prog.lit), or NULL. */
static uint8_t *op_edit(struct prog *g, size_t n)
{
	uint8_t *d = grow(&g->lit, n);
	struct op *o = d ? op_new(g) : NULL;
	if (!o) {
		g->oom = true;
		return NULL;
	}
	*o = (struct op){ .kind = OP_EDIT, .n = n, .lit = g->lit.len };
	g->lit.len += n;
	return d;
}

/* Runs g on base[0..blen); the result replaces out's contents.  -EBADMSG if
 * the program reads outside base (a bug in this file), -ENOMEM. */
static int prog_apply(const struct prog *g, const uint8_t *base, size_t blen, struct buf *out)
{
	uint64_t pos = 0, len = 0;
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].kind != OP_SEEK)
			len += g->v[i].n;
	out->len = 0;
	uint8_t *d = grow(out, (size_t)len);
	if (!d && len)
		return -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		const struct op *o = &g->v[i];
		switch (o->kind) {
		case OP_COPY:
			if (pos > blen || o->n > blen - pos)
				return -EBADMSG;
			memcpy(d, base + pos, (size_t)o->n);
			break;
		case OP_EDIT:
			memcpy(d, g->lit.p + o->lit, (size_t)o->n);
			break;
		default:
			if (o->s > 0 && (uint64_t)o->s > pos)
				return -EBADMSG;
			pos -= (uint64_t)o->s;
			continue;
		}
		d += o->n;
		pos += o->n;
	}
	out->len = (size_t)len;
	return 0;
}

/*
 * The program regrouped the way the diff formats think: a seek on its own,
 * or c bytes copied and then e literal bytes (the e bytes read position q
 * onward in the old save).  Literal bytes equal to the old byte they replace
 * become copies, as in the engine's writer.  The last unit is always a
 * copy/edit unit: the end of the diff.
 */
struct unit {
	bool seek;
	int64_t s;
	uint64_t c, q;
	size_t e, lit; /* the e bytes at units.lit.p + lit */
};

struct units {
	struct unit *v;
	size_t n, cap;
	struct buf lit;
	bool oom;
};

static void units_free(struct units *u)
{
	free(u->v);
	buf_free(&u->lit);
	memset(u, 0, sizeof *u);
}

static void unit_push(struct units *u, const struct unit *x)
{
	if (u->oom)
		return;
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 64;
		struct unit *v = realloc(u->v, cap * sizeof *v);
		if (!v) {
			u->oom = true;
			return;
		}
		u->v = v;
		u->cap = cap;
	}
	u->v[u->n++] = *x;
}

static int units_build(struct units *u, const struct prog *g, const uint8_t *base, size_t blen)
{
	u->n = 0;
	u->lit.len = 0;
	struct unit cur = { 0 };
	uint64_t pos = 0;
	for (size_t i = 0; i < g->n; i++) {
		const struct op *o = &g->v[i];
		if (o->kind == OP_COPY) {
			if (cur.e) {
				unit_push(u, &cur);
				cur = (struct unit){ 0 };
			}
			cur.c += o->n;
			pos += o->n;
		} else if (o->kind == OP_EDIT) {
			const uint8_t *p = g->lit.p + o->lit;
			for (uint64_t k = 0; k < o->n; k++, pos++) {
				if (pos < blen && base[pos] == p[k]) {
					if (cur.e) {
						unit_push(u, &cur);
						cur = (struct unit){ 0 };
					}
					cur.c++;
					continue;
				}
				if (!cur.e) {
					cur.q = pos;
					cur.lit = u->lit.len;
				}
				add1(&u->lit, p[k]);
				cur.e++;
			}
		} else {
			if (cur.c || cur.e) {
				unit_push(u, &cur);
				cur = (struct unit){ 0 };
			}
			if (u->n && u->v[u->n - 1].seek) {
				u->v[u->n - 1].s += o->s;
				if (!u->v[u->n - 1].s)
					u->n--;
			} else {
				unit_push(u, &(struct unit){ .seek = true, .s = o->s });
			}
			pos -= (uint64_t)o->s;
		}
	}
	unit_push(u, &cur);
	return u->oom || u->lit.oom ? -ENOMEM : 0;
}

/* ---- 4.3-beta1: 16-bit little-endian words, no header ------------------------- */

static void le16(struct buf *d, unsigned w)
{
	add1(d, (uint8_t)(w & 0xff));
	add1(d, (uint8_t)(w >> 8));
}

/* cmd in the top 2 bits, n in the low 14: 0 seek (signed), 2 edit, 3 copy;
 * 00 00 ends.  Longer runs are split. */
static void enc_beta1(const struct units *u, struct buf *d)
{
	for (size_t i = 0; i < u->n; i++) {
		const struct unit *x = &u->v[i];
		if (x->seek) {
			int64_t s = x->s;
			while (s) {
				int64_t k = s > 8191 ? 8191 : s < -8192 ? -8192 : s;
				le16(d, (unsigned)(k & 0x3fff));
				s -= k;
			}
			continue;
		}
		for (uint64_t c = x->c; c;) {
			unsigned k = c > 16383 ? 16383 : (unsigned)c;
			le16(d, 0xc000u | k);
			c -= k;
		}
		const uint8_t *p = u->lit.p + x->lit;
		for (size_t e = x->e; e;) {
			unsigned k = e > 16383 ? 16383 : (unsigned)e;
			le16(d, 0x8000u | k);
			add(d, p, k);
			p += k;
			e -= k;
		}
	}
	le16(d, 0);
}

/* ---- 4.3-beta2: big-endian words, header 01 40 -------------------------------- */

static void be16(struct buf *d, uint32_t w)
{
	add1(d, (uint8_t)(w >> 8));
	add1(d, (uint8_t)w);
}

static void be32(struct buf *d, uint32_t w)
{
	be16(d, w >> 16);
	be16(d, w & 0xffff);
}

/*
 * 0ee ccccc cccccccc       copy c (13 bits), then e+1 literal bytes (1-4)
 * 100 eeee c{25}           large: copy c, then e literal bytes (0-15)
 * 101 n{29}                large edit: n literal bytes
 * 111 s{13}                seek, two's complement
 * 110 s{29}                large seek
 * 00 00 ends, so copy 0 / edit 1 is written a0 00 00 01.
 */
static void enc_beta2(const struct units *u, struct buf *d)
{
	add1(d, 0x01);
	add1(d, 0x40);
	for (size_t i = 0; i < u->n; i++) {
		const struct unit *x = &u->v[i];
		if (x->seek) {
			int64_t s = x->s;
			if (s >= -4096 && s <= 4095) {
				be16(d, 0xe000u | (uint32_t)(s & 0x1fff));
				continue;
			}
			while (s) {
				int64_t lim = (int64_t)1 << 28;
				int64_t k = s >= lim ? lim - 1 : s < -lim ? -lim : s;
				be32(d, 0xc0000000u | (uint32_t)(k & 0x1fffffff));
				s -= k;
			}
			continue;
		}
		uint64_t c = x->c;
		size_t e = x->e;
		const uint8_t *p = u->lit.p + x->lit;
		while (c || e) {
			if (c <= 0x1fff && e >= 1 && e <= 4 && !(c == 0 && e == 1)) {
				be16(d, (uint32_t)(e - 1) << 13 | (uint32_t)c);
				add(d, p, e);
				break;
			}
			if (c == 0 && e == 1) {
				be32(d, 0xa0000001u);
				add(d, p, 1);
				break;
			}
			if (c <= 0x1ffffff && e <= 15) {
				be32(d, 0x80000000u | (uint32_t)e << 25 | (uint32_t)c);
				add(d, p, e);
				break;
			}
			if (c) {
				uint64_t k = c > 0x1ffffff ? 0x1ffffff : c;
				be32(d, 0x80000000u | (uint32_t)k);
				c -= k;
				continue;
			}
			size_t k = e > 0x1fffffff ? 0x1fffffff : e;
			be32(d, 0xa0000000u | (uint32_t)k);
			add(d, p, k);
			p += k;
			e -= k;
		}
	}
	be16(d, 0);
}

/* ---- 4.3-beta3: MRU-coded bit stream, header 01 43 ----------------------------- */

enum {
	C_COPYEDIT,
	C_COPY,
	C_EDIT,
	C_SEEK,
	C_WIDER,
	C_EOF,
	C_COORD,
	C_ERASE,
	C_INCREMENT,
	C_COPYEDIT1,
	C_EOF_CRC32,
	C_RLE,
	NCMD
};

/* arg1's minimum bits (signed for seek) and arg2's fixed bits. */
static const struct {
	uint8_t min, arg2;
	bool sign;
} SZ[NCMD] = {
	[C_COPYEDIT] = { 12, 2, false }, [C_COPY] = { 6, 0, false },
	[C_EDIT] = { 4, 0, false },      [C_SEEK] = { 8, 0, true },
	[C_WIDER] = { 0, 0, false },     [C_EOF] = { 12, 0, false },
	[C_COORD] = { 1, 3, false },     [C_ERASE] = { 7, 3, false },
	[C_INCREMENT] = { 12, 0, false }, [C_COPYEDIT1] = { 4, 0, false },
	[C_EOF_CRC32] = { 12, 32, false }, [C_RLE] = { 2, 0, false },
};

/* Coord directions W NW N NE E SE S SW. */
static const int8_t DX[8] = { -1, -1, 0, 1, 1, 1, 0, -1 };
static const int8_t DY[8] = { 0, -1, -1, -1, 0, 1, 1, 1 };

static int dir_of(int dx, int dy)
{
	for (int i = 0; i < 8; i++)
		if (DX[i] == dx && DY[i] == dy)
			return i;
	return -1;
}

struct b3 {
	uint8_t mru[NCMD];
	uint64_t outlen, cb; /* output length, coord_base, as a reader has them */
	struct buf *d;
	uint64_t acc;
	unsigned nacc;
};

/* The code of list index i: 0x (0-1), 10xx (2-5), 110xxx (6-13). */
static unsigned code_len(unsigned i)
{
	return i < 2 ? 2 : i < 6 ? 4 : 6;
}

static unsigned code_val(unsigned i)
{
	return i < 2 ? i : i < 6 ? 8 + (i - 2) : 48 + (i - 6);
}

static unsigned mru_find(const uint8_t *m, unsigned cmd)
{
	unsigned i = 0;
	while (m[i] != cmd)
		i++;
	return i;
}

static void mru_front(uint8_t *m, unsigned i)
{
	uint8_t c = m[i];
	for (; i; i--) /* a few bytes: no memmove call */
		m[i] = m[i - 1];
	m[0] = c;
}

static bool fits(int64_t a, unsigned n, bool sign)
{
	if (n >= 63)
		return true;
	if (sign)
		return a >= -((int64_t)1 << (n - 1)) && a < ((int64_t)1 << (n - 1));
	return (uint64_t)a < (uint64_t)1 << n;
}

/*
 * Plans cmd(a1) against the list m: the fewest widenings w such that arg1
 * fits in its field, which is at least min + 8w bits and runs to the end of
 * a byte.  Updates m as a reader would (wider, then cmd, to the front) and
 * returns the command's length in bytes, literal bytes not counted.
 */
static unsigned plan(uint8_t *m, unsigned cmd, int64_t a1, unsigned *wid, unsigned *bits1)
{
	/* Without widening (most commands). */
	unsigned i0 = mru_find(m, cmd), used0 = code_len(i0) + SZ[cmd].arg2;
	unsigned n0 = SZ[cmd].min + (8 - (used0 + SZ[cmd].min) % 8) % 8;
	if (fits(a1, n0, SZ[cmd].sign)) {
		mru_front(m, i0);
		*wid = 0;
		*bits1 = n0;
		return (used0 + n0) / 8;
	}
	for (unsigned w = 1;; w++) {
		uint8_t t[NCMD];
		memcpy(t, m, NCMD);
		unsigned used = 0;
		for (unsigned k = 0; k < w; k++) {
			unsigned i = mru_find(t, C_WIDER);
			used += code_len(i);
			mru_front(t, i);
		}
		unsigned i = mru_find(t, cmd);
		used += code_len(i) + SZ[cmd].arg2;
		mru_front(t, i);
		unsigned n = SZ[cmd].min + 8 * w;
		n += (8 - (used + n) % 8) % 8;
		if (fits(a1, n, SZ[cmd].sign)) {
			memcpy(m, t, NCMD);
			*wid = w;
			*bits1 = n;
			return (used + n) / 8;
		}
	}
}

static void put_bits(struct b3 *s, uint64_t v, unsigned n)
{
	/* n <= 32, so acc (fewer than 8 pending bits) never overflows. */
	s->acc = s->acc << n | (v & ((n < 64 ? (uint64_t)1 << n : 0) - 1));
	s->nacc += n;
	while (s->nacc >= 8) {
		s->nacc -= 8;
		add1(s->d, (uint8_t)(s->acc >> s->nacc));
	}
}

static void b3_put(struct b3 *s, unsigned cmd, int64_t a1, uint64_t a2)
{
	uint8_t t[NCMD];
	memcpy(t, s->mru, NCMD);
	unsigned w, n;
	plan(t, cmd, a1, &w, &n);
	for (unsigned k = 0; k < w; k++) {
		unsigned i = mru_find(s->mru, C_WIDER);
		put_bits(s, code_val(i), code_len(i));
		mru_front(s->mru, i);
	}
	unsigned i = mru_find(s->mru, cmd);
	put_bits(s, code_val(i), code_len(i));
	mru_front(s->mru, i);
	if (SZ[cmd].arg2)
		put_bits(s, a2, SZ[cmd].arg2);
	uint64_t v = (uint64_t)a1;
	if (n > 32) {
		put_bits(s, v >> 32, n - 32);
		put_bits(s, v & 0xffffffffu, 32);
	} else {
		put_bits(s, v, n);
	}
	/* What a reader's output length and coord_base become. */
	uint64_t r;
	switch (cmd) {
	case C_COPYEDIT:
		s->outlen += (uint64_t)a1 + a2 + 1;
		break;
	case C_COPY:
		s->outlen += (uint64_t)a1;
		s->cb = s->outlen;
		break;
	case C_EDIT:
	case C_INCREMENT:
	case C_COPYEDIT1:
		s->outlen += (uint64_t)a1 + 1;
		break;
	case C_EOF:
	case C_EOF_CRC32:
		s->outlen += (uint64_t)a1;
		break;
	case C_COORD:
		r = (s->outlen - s->cb) % ROW;
		s->outlen += (uint64_t)a1 * ROW + (r ? ROW - r : 0) + (DY[a2] ? 2 : 1);
		break;
	case C_ERASE:
		s->outlen += (uint64_t)a1 + a2 + 3;
		break;
	default:
		break;
	}
}

struct cmdx {
	uint8_t cmd;
	int64_t a1;
	uint64_t a2;
	const uint8_t *lit;
	size_t nlit;
};

struct cand {
	unsigned n;
	struct cmdx c[2];
};

static size_t cand_cost(const struct b3 *s, const struct cand *k)
{
	uint8_t t[NCMD];
	memcpy(t, s->mru, NCMD);
	size_t cost = 0;
	unsigned w, n;
	for (unsigned i = 0; i < k->n; i++)
		cost += plan(t, k->c[i].cmd, k->c[i].a1, &w, &n) + k->c[i].nlit;
	return cost;
}

/*
 * The coord forms for a 1-2 byte edit after cp copied bytes: coord alone
 * when the edit lands on a row boundary counted from coord_base, else a copy
 * that moves coord_base to just before a whole number of rows.
 */
static void coord_cands(const struct b3 *s, uint64_t cp, int dir, struct cand *cs, unsigned *nc)
{
	uint64_t r = (s->outlen - s->cb) % ROW, adj = r ? ROW - r : 0;
	if (cp >= adj && (cp - adj) % ROW == 0) {
		cs[(*nc)++] = (struct cand){
			1, { { C_COORD, (int64_t)((cp - adj) / ROW), (uint64_t)dir, NULL, 0 } }
		};
		return;
	}
	uint64_t x = cp % ROW ? cp % ROW : ROW;
	if (cp >= x)
		cs[(*nc)++] = (struct cand){ 2,
					     { { C_COPY, (int64_t)x, 0, NULL, 0 },
					       { C_COORD, (int64_t)((cp - x) / ROW), (uint64_t)dir, NULL, 0 } } };
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* One copy/edit unit, as the shortest of the forms that fit it (the first
 * listed wins a tie). */
static void b3_unit(struct b3 *s, const struct unit *u, const uint8_t *E, const uint8_t *base,
		    size_t blen)
{
	uint64_t c = u->c, q = u->q;
	size_t e = u->e;
	if (!e) {
		if (c)
			b3_put(s, C_COPY, (int64_t)c, 0);
		return;
	}
	struct cand cs[10];
	unsigned nc = 0;
	if (e <= 4)
		cs[nc++] = (struct cand){ 1, { { C_COPYEDIT, (int64_t)c, e - 1, E, e } } };
	if (c)
		cs[nc++] = (struct cand){ 2,
					  { { C_COPY, (int64_t)c, 0, NULL, 0 },
					    { C_EDIT, (int64_t)e - 1, 0, E, e } } };
	else
		cs[nc++] = (struct cand){ 1, { { C_EDIT, (int64_t)e - 1, 0, E, e } } };
	if (e >= 3 && e <= 10 && all_zero(E, e))
		cs[nc++] = (struct cand){ 1, { { C_ERASE, (int64_t)c, e - 3, NULL, 0 } } };
	if (e <= 2 && q < blen && e <= blen - q) {
		int d0 = (int8_t)(uint8_t)(E[0] - base[q]);
		if (e == 2) {
			int d1 = (int8_t)(uint8_t)(E[1] - base[q + 1]);
			if (d0 >= -1 && d0 <= 1 && (d1 == 1 || d1 == -1))
				coord_cands(s, c, dir_of(d0, d1), cs, &nc);
		} else if (d0 == 1 || d0 == -1) {
			coord_cands(s, c, dir_of(d0, 0), cs, &nc);
			if (c) /* the y of a pair whose x (the byte before) stays */
				coord_cands(s, c - 1, dir_of(0, d0), cs, &nc);
		}
		if (e == 1 && d0 == 1)
			cs[nc++] = (struct cand){ 1, { { C_INCREMENT, (int64_t)c, 0, NULL, 0 } } };
	}
	if (e == 1)
		cs[nc++] = (struct cand){ 1, { { C_COPYEDIT1, (int64_t)c, 0, E, 1 } } };
	unsigned best = 0;
	size_t bestcost = SIZE_MAX;
	for (unsigned i = 0; i < nc; i++) {
		size_t k = cand_cost(s, &cs[i]);
		if (k < bestcost) {
			bestcost = k;
			best = i;
		}
	}
	for (unsigned i = 0; i < cs[best].n; i++) {
		const struct cmdx *x = &cs[best].c[i];
		b3_put(s, x->cmd, x->a1, x->a2);
		add(s->d, x->lit, x->nlit);
	}
}

/* crc: zlib crc32 of the whole new save, for eof_crc32. */
static void enc_beta3(const struct units *u, const uint8_t *base, size_t blen, uint32_t crc,
		      bool with_crc, struct buf *d)
{
	struct b3 s = { .d = d };
	for (unsigned i = 0; i < NCMD; i++)
		s.mru[i] = (uint8_t)i;
	add1(d, 0x01);
	add1(d, 0x43);
	unsigned end = with_crc ? C_EOF_CRC32 : C_EOF;
	for (size_t i = 0; i < u->n; i++) {
		const struct unit *x = &u->v[i];
		bool last = i + 1 == u->n;
		if (x->seek) {
			b3_put(&s, C_SEEK, x->s, 0);
		} else if (last && !x->e) {
			b3_put(&s, end, (int64_t)x->c, crc);
		} else {
			b3_unit(&s, x, u->lit.p + x->lit, base, blen);
			if (last)
				b3_put(&s, end, 0, crc);
		}
	}
}

/* Encodes u (turning base into new) in format fmt (1-3) into d (emptied). */
static int encode_diff(int fmt, const struct units *u, const uint8_t *base, size_t blen,
		       const uint8_t *nsave, size_t nlen, bool with_crc, struct buf *d)
{
	d->len = 0;
	if (fmt == 1)
		enc_beta1(u, d);
	else if (fmt == 2)
		enc_beta2(u, d);
	else
		enc_beta3(u, base, blen, crc32_of(nsave, nlen), with_crc, d);
	return d->oom ? -ENOMEM : 0;
}

/* ---- a generic differ (diffline) ------------------------------------------------ */

#define HK 8 /* bytes hashed */
#define HBITS 16

static uint32_t hash8(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return (uint32_t)((v * 0x9e3779b97f4a7c15ull) >> (64 - HBITS));
}

/*
 * A program turning a[0..alen) into b[0..blen): copy while bytes agree; at a
 * difference, the shortest edit after which 8 bytes agree again, either in
 * place (a substitution, no seek) or anywhere in a (an 8-byte hash of every
 * position of a; the candidate nearest the read position wins).
 */
static int diff_generic(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
			struct prog *g)
{
	int64_t *head = NULL, *next = NULL;
	if (alen >= HK) {
		head = malloc(sizeof *head << HBITS);
		next = malloc(sizeof *next * (alen - HK + 1));
		if (!head || !next) {
			free(head);
			free(next);
			return -ENOMEM;
		}
		for (size_t h = 0; h < (size_t)1 << HBITS; h++)
			head[h] = -1;
		for (size_t p = 0; p + HK <= alen; p++) {
			uint32_t h = hash8(a + p);
			next[p] = head[h];
			head[h] = (int64_t)p;
		}
	}
	uint64_t pos = 0;
	size_t j = 0;
	while (j < blen) {
		if (pos < alen && a[pos] == b[j]) {
			size_t m = 0;
			while (pos + m < alen && j + m < blen && a[pos + m] == b[j + m])
				m++;
			op_copy(g, m);
			pos += m;
			j += m;
			continue;
		}
		/* In place: b[j+k..] agrees with a[pos+k..] for HK bytes. */
		size_t kin = SIZE_MAX;
		for (size_t k = 1; k <= 64 && j + k + HK <= blen && pos + k + HK <= alen; k++)
			if (!memcmp(a + pos + k, b + j + k, HK)) {
				kin = k;
				break;
			}
		/* Anywhere: the first k whose 8 bytes occur in a. */
		size_t kany = SIZE_MAX;
		uint64_t at = 0;
		for (size_t k = 0; head && k < kin && j + k + HK <= blen; k++) {
			uint64_t want = pos + k, bestd = UINT64_MAX;
			int steps = 0;
			for (int64_t p = head[hash8(b + j + k)]; p >= 0 && steps < 32; p = next[p], steps++) {
				if (memcmp(a + p, b + j + k, HK))
					continue;
				uint64_t dd = (uint64_t)p > want ? (uint64_t)p - want : want - (uint64_t)p;
				if (dd < bestd) {
					bestd = dd;
					at = (uint64_t)p;
				}
			}
			if (bestd != UINT64_MAX) {
				kany = k;
				break;
			}
		}
		size_t k = kin <= kany ? kin : kany;
		if (k == SIZE_MAX)
			k = blen - j; /* nothing agrees again: the rest is new */
		uint8_t *d = k ? op_edit(g, k) : NULL;
		if (d)
			memcpy(d, b + j, k);
		pos += k;
		j += k;
		if (kany < kin && j < blen) {
			op_seek(g, (int64_t)(pos - at));
			pos = at;
		}
	}
	free(head);
	free(next);
	return g->oom ? -ENOMEM : 0;
}

/* ---- the synthetic save ---------------------------------------------------------- */

/*
 * [0, hdr)           header: magic, a little-endian turn counter at 16,
 *                    random state at 32 (a few bytes change every turn)
 * [mon, rest)        nmon monster records of ROW bytes: x, y, then fields
 * [rest, len)        level data: runs of a few values, strings, noise
 * Only the level data is inserted into or deleted from, so the header and
 * the records keep their offsets.
 */
struct model {
	struct buf cur, nxt;
	size_t target, hdr, mon, nmon, rest;
};

static void fill_level(uint64_t *r, uint8_t *p, size_t n)
{
	static const uint8_t vals[] = { 0, 0, 0, 0, 1, 2, 0x20, 0x2e, 0x23, 0x7c, 0x2d, 0x40 };
	static const char *const words[] = { "You hear the footsteps of a guard on patrol.",
					     "a lichen corpse", "Elbereth", "scroll labeled ZELGO MER",
					     "The door opens." };
	size_t i = 0;
	while (i < n) {
		uint64_t k = below(r, 20);
		if (k == 0) {
			const char *w = words[below(r, sizeof words / sizeof *words)];
			for (size_t j = 0; w[j] && i < n; j++)
				p[i++] = (uint8_t)w[j];
		} else if (k == 1) {
			for (uint64_t j = 1 + below(r, 8); j && i < n; j--)
				p[i++] = (uint8_t)rnd(r);
		} else {
			uint8_t v = vals[below(r, sizeof vals)];
			for (uint64_t j = 1 + below(r, 24); j && i < n; j--)
				p[i++] = v;
		}
	}
}

static int model_init(struct model *m, size_t target, uint64_t seed)
{
	memset(m, 0, sizeof *m);
	m->target = target;
	uint64_t r = seeded(seed, 1);
	uint8_t *p = grow(&m->cur, target);
	if (!p)
		return -ENOMEM;
	memset(p, 0, target);
	m->cur.len = target;
	m->hdr = target >= 256 ? 64 : target / 4;
	m->mon = m->hdr;
	m->nmon = target >= 1024 ? (target - m->hdr) / 4 / ROW : 0;
	if (m->nmon > 64)
		m->nmon = 64;
	m->rest = m->mon + m->nmon * ROW;
	if (m->hdr >= 20) {
		memcpy(p, "NH43SAVE\x04\x03\x00\x00", 12);
		p[16] = (uint8_t)below(&r, 250);
		for (size_t i = 24; i < m->hdr; i += 1 + below(&r, 6))
			p[i] = (uint8_t)below(&r, 200);
	}
	for (size_t i = 0; i < m->nmon; i++) {
		uint8_t *rec = p + m->mon + i * ROW;
		rec[0] = (uint8_t)(2 + below(&r, 76));
		rec[1] = (uint8_t)(2 + below(&r, 18));
		rec[2] = (uint8_t)below(&r, 250);
		rec[3] = rec[4] = (uint8_t)(1 + below(&r, 60));
		for (size_t j = 8; j < ROW; j += 1 + below(&r, 12))
			rec[j] = (uint8_t)below(&r, 4) ? (uint8_t)below(&r, 16) : (uint8_t)rnd(&r);
	}
	fill_level(&r, p + m->rest, target - m->rest);
	return 0;
}

static void model_free(struct model *m)
{
	buf_free(&m->cur);
	buf_free(&m->nxt);
}

enum { EV_COUNTER, EV_SET, EV_INC, EV_MOVE, EV_ERASE, EV_INS, EV_DEL, EV_SWAP };

struct ev {
	uint64_t p, span; /* old-save bytes [p, p+span) the event consumes */
	int kind;
	uint64_t a, b;
};

static void ev_add(struct ev *v, unsigned *n, unsigned max, struct ev e)
{
	if (*n < max)
		v[(*n)++] = e;
}

/*
 * Builds this turn's program against m->cur: a random set of events sorted
 * by position, overlapping ones dropped.  grow_level: a new level (a large
 * insertion), as on `down`.
 */
static void model_turn(struct model *m, uint64_t *r, bool grow_level, struct prog *g)
{
	enum { MAXEV = 48 };
	struct ev v[MAXEV];
	unsigned n = 0;
	const uint8_t *old = m->cur.p;
	size_t len = m->cur.len, lvl = len - m->rest;
	prog_reset(g);
	if (m->hdr >= 20)
		ev_add(v, &n, MAXEV, (struct ev){ 16, 4, EV_COUNTER, 0, 0 });
	if (m->hdr >= 40) { /* the game's random state: a few bytes every turn */
		uint64_t w = 2 + below(r, 7);
		ev_add(v, &n, MAXEV, (struct ev){ 32, w, EV_SET, w, 0 });
	}
	for (uint64_t k = m->nmon ? below(r, 6) : 0; k; k--) {
		size_t at = m->mon + (size_t)below(r, m->nmon) * ROW;
		for (int tries = 0; tries < 8; tries++) {
			int d = (int)below(r, 8);
			int x = old[at] + DX[d], y = old[at + 1] + DY[d];
			if (x >= 1 && x <= 79 && y >= 1 && y <= 20) {
				ev_add(v, &n, MAXEV, (struct ev){ at, 2, EV_MOVE, (uint64_t)d, 0 });
				break;
			}
		}
		if (chance(r, 300))
			ev_add(v, &n, MAXEV, (struct ev){ at + 3, 1, EV_SET, 1, 0 });
	}
	for (uint64_t k = 1 + below(r, 6); k; k--) {
		uint64_t w = 1 + below(r, 4);
		if (len > m->hdr + w)
			ev_add(v, &n, MAXEV,
			       (struct ev){ m->hdr + below(r, len - m->hdr - w), w, EV_SET, w, 0 });
	}
	if (chance(r, 250) && len > m->hdr + 1)
		ev_add(v, &n, MAXEV, (struct ev){ m->hdr + below(r, len - m->hdr - 1), 1, EV_INC, 0, 0 });
	if (lvl > 64) {
		if (chance(r, 150)) {
			uint64_t w = 3 + below(r, 8);
			ev_add(v, &n, MAXEV, (struct ev){ m->rest + below(r, lvl - w), w, EV_ERASE, w, 0 });
		}
		if (chance(r, 120))
			ev_add(v, &n, MAXEV,
			       (struct ev){ m->rest + below(r, lvl), 0, EV_INS, 1 + below(r, 40), 0 });
		if (chance(r, 120)) {
			uint64_t w = 1 + below(r, 40);
			bool repl = chance(r, 500);
			ev_add(v, &n, MAXEV,
			       (struct ev){ m->rest + below(r, lvl - w - 1), w + repl, EV_DEL, w, repl });
		}
		if (chance(r, 30) && lvl > 900) {
			uint64_t a = 16 + below(r, 385), b = 16 + below(r, 385);
			ev_add(v, &n, MAXEV,
			       (struct ev){ m->rest + below(r, lvl - a - b), a + b, EV_SWAP, a, b });
		}
		/* A new level now and then; drift back toward the target size. */
		if (grow_level || len < m->target * 3 / 4 || chance(r, 3)) {
			uint64_t w = m->target / 8 + below(r, m->target / 2 + 1);
			if (len + w <= 3 * m->target)
				ev_add(v, &n, MAXEV, (struct ev){ m->rest + below(r, lvl), 0, EV_INS, w, 1 });
		} else if (len > m->target * 5 / 4) {
			uint64_t w = (len - m->target) / 2 + below(r, (len - m->target) / 2);
			if (w + 2 < lvl)
				ev_add(v, &n, MAXEV,
				       (struct ev){ m->rest + below(r, lvl - w - 1), w, EV_DEL, w, 0 });
		}
	}
	/* Sort by position (insertion sort: a handful of events). */
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j && v[j].p < v[j - 1].p; j--) {
			struct ev t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	uint64_t cur = 0;
	bool ins_here = false; /* an insertion already sits at `cur` */
	for (unsigned i = 0; i < n; i++) {
		struct ev *e = &v[i];
		if (e->p < cur || (e->p == cur && ins_here) || e->p + e->span > len)
			continue;
		op_copy(g, e->p - cur);
		cur = e->p;
		ins_here = false;
		uint8_t *d;
		switch (e->kind) {
		case EV_COUNTER: {
			uint32_t t = (uint32_t)old[cur] | (uint32_t)old[cur + 1] << 8 |
				     (uint32_t)old[cur + 2] << 16 | (uint32_t)old[cur + 3] << 24;
			t++;
			if ((d = op_edit(g, 4)))
				for (int k = 0; k < 4; k++)
					d[k] = (uint8_t)(t >> 8 * k);
			break;
		}
		case EV_SET:
			if ((d = op_edit(g, (size_t)e->a)))
				for (uint64_t k = 0; k < e->a; k++)
					d[k] = below(r, 3) ? (uint8_t)(old[cur + k] + 1 + below(r, 9))
							   : (uint8_t)rnd(r);
			break;
		case EV_INC:
			if ((d = op_edit(g, 1)))
				d[0] = (uint8_t)(old[cur] + 1);
			break;
		case EV_MOVE:
			if ((d = op_edit(g, 2))) {
				d[0] = (uint8_t)(old[cur] + DX[e->a]);
				d[1] = (uint8_t)(old[cur + 1] + DY[e->a]);
			}
			break;
		case EV_ERASE:
			if ((d = op_edit(g, (size_t)e->a)))
				memset(d, 0, (size_t)e->a);
			break;
		case EV_INS:
			if ((d = op_edit(g, (size_t)e->a))) {
				if (e->b)
					fill_level(r, d, (size_t)e->a);
				else
					for (uint64_t k = 0; k < e->a; k++)
						d[k] = below(r, 2) ? (uint8_t)rnd(r) : (uint8_t)(0x61 + below(r, 26));
			}
			op_seek(g, (int64_t)e->a);
			ins_here = true;
			break;
		case EV_DEL:
			op_seek(g, -(int64_t)e->a);
			if (e->b && (d = op_edit(g, 1)))
				d[0] = (uint8_t)(old[cur + e->a] ^ (1 + below(r, 255)));
			break;
		case EV_SWAP:
			op_seek(g, -(int64_t)e->a);
			op_copy(g, e->b);
			op_seek(g, (int64_t)(e->a + e->b));
			op_copy(g, e->a);
			op_seek(g, -(int64_t)e->b);
			break;
		}
		cur += e->span;
	}
	op_copy(g, len - cur);
}

/* ---- the log --------------------------------------------------------------------- */

struct log {
	int fd;
	struct buf b;      /* bytes not yet written */
	uint64_t written;  /* bytes written to fd */
	uint64_t lines;    /* complete lines */
	bool hold;         /* keep everything in b (the torn turn) */
	int rc;            /* first write error */
};

static uint64_t log_off(const struct log *l)
{
	return l->written + l->b.len;
}

static void log_flush(struct log *l)
{
	size_t o = 0;
	while (o < l->b.len && !l->rc) {
		ssize_t k = write(l->fd, l->b.p + o, l->b.len - o);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			l->rc = k < 0 ? -errno : -EIO;
		else
			o += (size_t)k;
	}
	l->written += o;
	l->b.len = 0;
}

static void log_eol(struct log *l)
{
	add1(&l->b, '\n');
	l->lines++;
	if (l->b.len >= FLUSH_AT && !l->hold)
		log_flush(l);
}

struct opts {
	const char *out, *states, *name, *role, *race, *gender, *align, *reason;
	uint64_t seed, turns, size, save_size, backup_every, recovery;
	int64_t start_us;
	int mode, diff; /* diff: 1-3, or 0 for mixed */
	enum pmode compress;
	bool size_mode, bones, done, torn, no_crc;
};

struct game {
	const struct opts *o;
	struct log log;
	struct model m;
	struct prog prog;
	struct units units;
	struct buf diff, tmp;
	struct payer pay;
	uint64_t r;              /* lines, prompts, commands */
	uint64_t re;             /* save edits */
	uint64_t first_backup;   /* offset of the first `*` line */
	uint64_t last_backup;    /* offset of the latest one */
	uint64_t ndiffs, moves, downs;
	bool states_on;
};

/* ---- body lines ------------------------------------------------------------------- */

enum { A_D = 1, A_P = 2, A_I = 4, A_T = 8, A_S = 16, A_L = 32 };

static const struct {
	const char *name;
	unsigned args;
} CMDS[] = {
	{ "move", A_D },          { "fight", A_D },        { "run", A_D },
	{ "kick", A_D },          { "open", A_D },         { "fire", A_D },
	{ "travel", A_P },        { "jump", A_P },         { "wield", A_I },
	{ "quaff", A_I },         { "read", A_I },         { "eat", A_I },
	{ "wear", A_I },          { "drop", A_I },         { "throw", A_D | A_I },
	{ "annotate", A_T },      { "name", A_I | A_T },   { "engrave", A_I | A_T },
	{ "cast", A_S },          { "cast", A_D | A_S },   { "search", A_L },
	{ "rest", A_L },          { "search", 0 },         { "pray", 0 },
	{ "pickup", 0 },          { "sit", 0 },            { "wait", 0 },
	{ "repeat", 0 },          { "travel", 0 },         { "wield", 0 },
	{ "engrave", 0 },
};

/* Argument kinds the first turns go through, in order. */
static const unsigned ARG_SCHEDULE[] = { A_D, A_P, A_I, A_T, A_S, A_L, 0,
					 A_D | A_I, A_D | A_S, A_I | A_T };

static const char *const TEXTS[] = { "Elbereth", "Sting", "x", "Bob the dog", "lamp",
				     "pick-axe", "Ad aerarium" };

static char invlet(uint64_t *r)
{
	static const char l[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ$-";
	return l[below(r, sizeof l - 1)];
}

/* A string argument (T) or text (L): payload of the text and its NUL; long
 * = a long repetitive one, which the engine writes compressed. */
static int put_text(struct game *g, struct buf *b, bool long_text, bool cancel)
{
	char s[200];
	if (cancel) {
		s[0] = 0x1b;
		s[1] = 0;
	} else if (long_text) {
		size_t n = 60 + below(&g->r, 60);
		memset(s, 'a' + (int)below(&g->r, 26), n);
		s[n] = 0;
	} else {
		snprintf(s, sizeof s, "%s", TEXTS[below(&g->r, sizeof TEXTS / sizeof *TEXTS)]);
	}
	return payload(&g->pay, b, (const uint8_t *)s, strlen(s) + 1);
}

static int put_command(struct game *g, struct buf *b, const char *name, unsigned args,
		       bool long_text)
{
	adds(b, name);
	if (args & A_D) {
		adds(b, " D");
		addu(b, below(&g->r, strcmp(name, "move") ? 11 : 8), 10);
	}
	if (args & A_P)
		addf(b, " P%u,%u", (unsigned)below(&g->r, 80), (unsigned)below(&g->r, 21));
	if (args & A_I)
		addf(b, " I%c", invlet(&g->r));
	if (args & A_T) {
		adds(b, " T");
		int rc = put_text(g, b, long_text, false);
		if (rc)
			return rc;
	}
	if (args & A_S)
		addf(b, " S%c", (char)('a' + below(&g->r, 26)));
	if (args & A_L)
		addf(b, " L%u", 1 + (unsigned)below(&g->r, 100));
	return b->oom ? -ENOMEM : 0;
}

enum { PR_GETPOS, PR_GETDIR, PR_KEY, PR_YN, PR_MENU, PR_OBJMENU, PR_TEXT, NPR };

/* Every prompt form, for the first turns. */
static const struct {
	int kind, variant;
} PROMPT_SCHEDULE[] = {
	{ PR_GETPOS, 0 }, { PR_GETPOS, 1 }, { PR_GETPOS, 2 }, { PR_GETPOS, 3 }, { PR_GETPOS, 4 },
	{ PR_GETDIR, 0 }, { PR_GETDIR, 1 }, { PR_GETDIR, 11 }, { PR_KEY, 0 },  { PR_KEY, 1 },
	{ PR_YN, 0 },     { PR_YN, 1 },     { PR_MENU, 0 },   { PR_MENU, 1 },  { PR_MENU, 2 },
	{ PR_OBJMENU, 0 }, { PR_OBJMENU, 1 }, { PR_OBJMENU, 2 }, { PR_TEXT, 0 }, { PR_TEXT, 1 },
};

/* A random variant of a prompt kind. */
static int prompt_variant(uint64_t *r, int kind)
{
	switch (kind) {
	case PR_GETPOS:
		return chance(r, 100) ? 0 : 1 + (int)below(r, 4);
	case PR_GETDIR:
		return (int)below(r, 12);
	case PR_MENU:
	case PR_OBJMENU:
		return chance(r, 100) ? (int)below(r, 2) : 2;
	case PR_TEXT:
		return chance(r, 100) ? 1 : chance(r, 100) ? 2 : 0;
	default:
		return (int)below(r, 2);
	}
}

/*
 * getpos: 0 P!, 1-4 P<x>,<y> with key . , : ;   getdir: D<variant-1> (-1..10)
 * key: 0 K<code>, 1 K<code>,<count>   yn: 0 Yy, 1 another answer
 * menu, objmenu: 0 cancelled (!), 1 nothing chosen, 2 ids (objmenu: counts)
 * text: 0 a word, 1 cancelled (ESC), 2 a long text
 */
static int put_prompt(struct game *g, struct buf *b, int kind, int v)
{
	uint64_t *r = &g->r;
	switch (kind) {
	case PR_GETPOS:
		if (!v)
			adds(b, "P!");
		else
			addf(b, "P%u,%u%c", (unsigned)below(r, 80), (unsigned)below(r, 21), ".,:;"[(v - 1) % 4]);
		break;
	case PR_GETDIR:
		addf(b, "D%d", v - 1);
		break;
	case PR_KEY:
		if (!v)
			addf(b, "K%u", 32 + (unsigned)below(r, 95));
		else
			addf(b, "K%u,%u", 32 + (unsigned)below(r, 95), 2 + (unsigned)below(r, 40));
		break;
	case PR_YN:
		addf(b, "Y%c", v ? "nqa#"[below(r, 4)] : 'y');
		break;
	case PR_MENU:
	case PR_OBJMENU:
		add1(b, kind == PR_MENU ? 'M' : 'O');
		if (!v) {
			add1(b, '!');
		} else if (v == 2) {
			unsigned k = 1 + (unsigned)below(r, 4), id = (unsigned)below(r, 8);
			for (unsigned i = 0; i < k; i++) {
				if (i)
					add1(b, ':');
				id += 1 + (unsigned)below(r, 30);
				addf(b, "%x", id + 4);
				if (kind == PR_OBJMENU && (i % 2 == 0 || chance(r, 300)))
					addf(b, ",%u", (unsigned)below(r, 50));
			}
		}
		break;
	default:
		add1(b, 'L');
		return put_text(g, b, v == 2, v == 1);
	}
	return b->oom ? -ENOMEM : 0;
}

static void put_time(struct game *g, struct buf *b, bool long_wait)
{
	uint64_t t = long_wait ? 0x800000 + below(&g->r, 0x20000000)
			       : chance(&g->r, 100) ? 0x1000 + below(&g->r, 0xf000)
						    : 0x30000 + below(&g->r, 0x600000);
	add1(b, '+');
	addu(b, t, 16);
}

/* A synthetic bones file: level-like, so it compresses. */
static int put_bones(struct game *g, struct buf *b)
{
	size_t n = 1500 + (size_t)below(&g->r, 2500);
	g->tmp.len = 0;
	uint8_t *p = grow(&g->tmp, n);
	if (!p)
		return -ENOMEM;
	fill_level(&g->r, p, n);
	memcpy(p, "NHBONES", n < 7 ? n : 7);
	add1(b, 'B');
	return payload(&g->pay, b, p, n);
}

/* ---- save lines -------------------------------------------------------------------- */

static int write_state(struct game *g, const uint8_t *p, size_t n)
{
	char path[4096];
	/* The line being written: lines complete so far, plus one. */
	snprintf(path, sizeof path, "%s/%06" PRIu64 ".sav", g->o->states, g->log.lines + 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t o = 0;
	int rc = 0;
	while (o < n) {
		ssize_t k = write(fd, p + o, n - o);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = k < 0 ? -errno : -EIO;
			break;
		}
		o += (size_t)k;
	}
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

/* A `*` line holding the current save. */
static int backup_line(struct game *g)
{
	struct log *l = &g->log;
	uint64_t off = log_off(l);
	bool first = !g->last_backup;
	/* The first backup's number is rewritten at the end (the latest backup). */
	addf(&l->b, "*%08" PRIx64 " ", first ? off : g->last_backup);
	int rc = payload(&g->pay, &l->b, g->m.cur.p, g->m.cur.len);
	if (rc)
		return rc;
	if (first)
		g->first_backup = off;
	g->last_backup = off;
	if (g->states_on && (rc = write_state(g, g->m.cur.p, g->m.cur.len)))
		return rc;
	log_eol(l);
	return 0;
}

/* One turn's save change: a program from the model, a new save, and a `~`
 * line (or a backup). */
static int save_line(struct game *g, bool grow_level, bool backup)
{
	struct model *m = &g->m;
	model_turn(m, &g->re, grow_level, &g->prog);
	if (g->prog.oom || g->prog.lit.oom)
		return -ENOMEM;
	int rc = prog_apply(&g->prog, m->cur.p, m->cur.len, &m->nxt);
	if (rc)
		return rc;
	if (!backup) {
		int fmt = g->o->diff ? g->o->diff : (int)(g->ndiffs % 3) + 1;
		g->ndiffs++;
		if ((rc = units_build(&g->units, &g->prog, m->cur.p, m->cur.len)) ||
		    (rc = encode_diff(fmt, &g->units, m->cur.p, m->cur.len, m->nxt.p, m->nxt.len,
				      !g->o->no_crc, &g->diff)))
			return rc;
	}
	struct buf t = m->cur;
	m->cur = m->nxt;
	m->nxt = t;
	if (backup)
		return backup_line(g);
	add1(&g->log.b, '~');
	if ((rc = payload(&g->pay, &g->log.b, g->diff.p, g->diff.len)))
		return rc;
	if (g->states_on && (rc = write_state(g, m->cur.p, m->cur.len)))
		return rc;
	log_eol(&g->log);
	return 0;
}

/* ---- turns -------------------------------------------------------------------------- */

/*
 * Turn i (0-based after the welcome).  fatal: the game ends with this
 * command (no save line follows).
 */
static int turn(struct game *g, uint64_t i, bool fatal)
{
	const struct opts *o = g->o;
	struct buf *b = &g->log.b;
	uint64_t *r = &g->r;
	int rc;
	/* Bones: with --turns at a third (B!) and two thirds (a file); with
	 * --size alternately every 1000 turns. */
	int bones = 0; /* 1 none found, 2 a file */
	if (o->bones) {
		if (o->size_mode) {
			if (i % 1000 == 500)
				bones = i / 1000 % 2 ? 2 : 1;
		} else {
			uint64_t t1 = o->turns / 3, t2 = 2 * o->turns / 3;
			if (t2 == t1 && t2 + 1 < o->turns)
				t2++;
			bones = i == t2 ? 2 : i == t1 ? 1 : 0;
		}
	}
	bool down = bones != 0 || (i >= 20 && chance(r, 4));
	bool welcome = !down && i >= 20 && chance(r, 3);
	if (down) {
		adds(b, "down");
	} else if (welcome) {
		adds(b, "welcome");
	} else if (i < sizeof ARG_SCHEDULE / sizeof *ARG_SCHEDULE) {
		unsigned args = ARG_SCHEDULE[i];
		const char *name = "search";
		for (size_t k = 0; k < sizeof CMDS / sizeof *CMDS; k++)
			if (CMDS[k].args == args) {
				name = CMDS[k].name;
				break;
			}
		if ((rc = put_command(g, b, name, args, i == 3)))
			return rc;
	} else if (chance(r, 600)) {
		if ((rc = put_command(g, b, "move", A_D, false)))
			return rc;
	} else {
		size_t k = (size_t)below(r, sizeof CMDS / sizeof *CMDS);
		if ((rc = put_command(g, b, CMDS[k].name, CMDS[k].args, chance(r, 20))))
			return rc;
	}
	log_eol(&g->log);
	/* Prompts, each after the time spent before it. */
	int np = 0, pk[2], pv[2];
	if (i < sizeof PROMPT_SCHEDULE / sizeof *PROMPT_SCHEDULE) {
		pk[0] = PROMPT_SCHEDULE[i].kind;
		pv[0] = PROMPT_SCHEDULE[i].variant;
		np = 1;
	} else if (!down && !welcome && chance(r, 100)) {
		np = chance(r, 200) ? 2 : 1;
		for (int k = 0; k < np; k++) {
			pk[k] = (int)below(r, NPR);
			pv[k] = prompt_variant(r, pk[k]);
		}
	}
	for (int k = 0; k < np; k++) {
		put_time(g, b, false);
		log_eol(&g->log);
		if ((rc = put_prompt(g, b, pk[k], pv[k])))
			return rc;
		log_eol(&g->log);
	}
	put_time(g, b, welcome);
	log_eol(&g->log);
	if (bones == 1) {
		adds(b, "B!");
		log_eol(&g->log);
	} else if (bones == 2) {
		if ((rc = put_bones(g, b)))
			return rc;
		log_eol(&g->log);
	}
	g->moves++;
	if (down)
		g->downs++;
	if (fatal)
		return b->oom ? -ENOMEM : 0;
	bool backup = o->backup_every && (i + 1) % o->backup_every == 0;
	if ((rc = save_line(g, down, backup)))
		return rc;
	return b->oom ? -ENOMEM : 0;
}

static const char *const REASONS[] = { "killed by a jackal", "quit", "killed by a newt",
				       "starved to death", "killed by a soldier ant, while helpless",
				       "drowned in a moat", "escaped" };

static const struct {
	const char *role, *races;
} ROLES[] = {
	{ "Arc", "hum dwa gno" }, { "Bar", "hum orc" }, { "Cav", "hum dwa gno" },
	{ "Hea", "hum gno" },     { "Kni", "hum" },     { "Mon", "hum" },
	{ "Pri", "hum elf" },     { "Ran", "hum elf gno orc" }, { "Rog", "hum orc" },
	{ "Sam", "hum" },         { "Tou", "hum" },     { "Val", "hum dwa" },
	{ "Wiz", "hum elf gno orc" },
};

static int pwrite_all(int fd, const void *p, size_t n, off_t off)
{
	const uint8_t *q = p;
	while (n) {
		ssize_t k = pwrite(fd, q, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		q += k;
		n -= (size_t)k;
		off += k;
	}
	return 0;
}

static int make_log(const struct opts *o)
{
	struct game G = { .o = o, .log = { .fd = -1 } };
	struct game *g = &G;
	int rc = 0;
	g->r = seeded(o->seed, 2);
	g->re = seeded(o->seed, 3);
	g->pay.mode = o->compress;
	g->moves = 1;
	if (o->states) {
		if (mkdir(o->states, 0755) && errno != EEXIST) {
			rc = fail(o->states, strerror(errno));
			goto out;
		}
		g->states_on = true;
	}
	if (model_init(&g->m, (size_t)o->save_size, o->seed)) {
		rc = fail("out of memory", NULL);
		goto out;
	}
	g->log.fd = open(o->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (g->log.fd < 0) {
		rc = fail(o->out, strerror(errno));
		goto out;
	}
	/* Header: the status line is written at the end. */
	struct buf *b = &g->log.b;
	uint64_t rr = seeded(o->seed, 4);
	size_t ri = (size_t)below(&rr, sizeof ROLES / sizeof *ROLES);
	char race[4] = "hum";
	size_t nraces = (strlen(ROLES[ri].races) + 1) / 4;
	memcpy(race, ROLES[ri].races + 4 * below(&rr, nraces), 3);
	const char *gender = ROLES[ri].role[0] == 'V' ? "fem" : below(&rr, 2) ? "fem" : "mal";
	static const char *const ALIGNS[] = { "law", "neu", "cha" };
	const char *align = ri == 4 || ri == 9 ? "law" : ALIGNS[below(&rr, 3)]; /* Kni, Sam */
	const char *reason = o->reason ? o->reason : REASONS[below(&rr, sizeof REASONS / sizeof *REASONS)];
	addf(b, "NHGAME %s %08" PRIx64 " 4.003.000", o->done ? "done" : "save", o->recovery);
	log_eol(&g->log);
	for (int k = 0; k < 78; k++)
		add1(b, ' ');
	log_eol(&g->log);
	addf(b, "%" PRIx64 " 0 %d ", (uint64_t)o->start_us, o->mode);
	if ((rc = payload(&g->pay, b, (const uint8_t *)o->name, strlen(o->name))))
		goto fail_rc;
	addf(b, " %s %s %s %s", o->role ? o->role : ROLES[ri].role, o->race ? o->race : race,
	     o->gender ? o->gender : gender, o->align ? o->align : align);
	log_eol(&g->log);
	/* A new game: backup, welcome, time, diff. */
	if ((rc = backup_line(g)))
		goto fail_rc;
	adds(b, "welcome");
	log_eol(&g->log);
	put_time(g, b, false);
	log_eol(&g->log);
	if ((rc = save_line(g, false, false)))
		goto fail_rc;
	bool quit = o->done && !strcmp(reason, "quit");
	uint64_t i = 0;
	for (;; i++) {
		bool more = o->size_mode ? log_off(&g->log) < o->size : i < o->turns;
		if (!more)
			break;
		bool fatal = o->done && !quit &&
			     (o->size_mode ? false : i + 1 == o->turns);
		if ((rc = turn(g, i, fatal)))
			goto fail_rc;
		if (g->log.rc)
			break;
		if (fatal)
			break;
	}
	if (o->done && o->size_mode && !quit) {
		/* The death: a command and its time, no save line. */
		if ((rc = turn(g, i++, true)))
			goto fail_rc;
	}
	if (o->done) {
		adds(b, "Q");
		log_eol(&g->log);
	}
	/* Line 2, from the state before any torn turn. */
	char status[128];
	if (o->done)
		snprintf(status, sizeof status, "%.78s", reason);
	else if (!o->size_mode && !o->turns)
		snprintf(status, sizeof status, "(new game)");
	else
		snprintf(status, sizeof status, "Exp:%u, %" PRIu64 " turns, on Dungeons:%u",
			 (unsigned)(g->moves / 300 < 29 ? 1 + g->moves / 300 : 30), g->moves,
			 (unsigned)(g->downs < 52 ? 1 + g->downs : 53));
	if (o->torn) {
		log_flush(&g->log);
		g->log.hold = true;
		g->states_on = false;
		if ((rc = turn(g, i, false)))
			goto fail_rc;
		/* Keep a non-empty prefix of one of its lines, without the
		 * newline: one unfinished line. */
		struct buf *t = &g->log.b;
		size_t nl = 0, k, s = 0, e;
		for (size_t j = 0; j < t->len; j++)
			nl += t->p[j] == '\n';
		k = (size_t)below(&g->r, nl);
		while (k--)
			s = (size_t)((uint8_t *)memchr(t->p + s, '\n', t->len - s) - t->p) + 1;
		e = (size_t)((uint8_t *)memchr(t->p + s, '\n', t->len - s) - t->p);
		memmove(t->p, t->p + s, e - s);
		t->len = 1 + (size_t)below(&g->r, e - s);
	}
	log_flush(&g->log);
	if (g->log.rc) {
		rc = fail(o->out, strerror(-g->log.rc));
		goto out;
	}
	char line2[80], ptr[9];
	snprintf(line2, sizeof line2, "%78.78s", status);
	snprintf(ptr, sizeof ptr, "%08" PRIx64, g->last_backup);
	if ((rc = pwrite_all(g->log.fd, line2, 78, 31)) ||
	    (rc = pwrite_all(g->log.fd, ptr, 8, (off_t)g->first_backup + 1))) {
		rc = fail(o->out, strerror(-rc));
		goto out;
	}
	if (close(g->log.fd)) {
		g->log.fd = -1;
		rc = fail(o->out, strerror(errno));
		goto out;
	}
	g->log.fd = -1;
	goto out;
fail_rc:
	rc = fail(o->out, rc == -ENOMEM ? "out of memory" : strerror(-rc));
out:
	if (g->log.fd >= 0)
		close(g->log.fd);
	buf_free(&g->log.b);
	model_free(&g->m);
	prog_free(&g->prog);
	units_free(&g->units);
	buf_free(&g->diff);
	buf_free(&g->tmp);
	payer_fini(&g->pay);
	return rc;
}

/* ---- single lines (tests appending to a mounted log) ----------------------------------- */

static int slurp(const char *path, struct buf *b)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = 0;
	for (;;) {
		uint8_t *d = grow(b, 1 << 16);
		if (!d) {
			rc = -ENOMEM;
			break;
		}
		ssize_t k = read(fd, d, 1 << 16);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = -errno;
			break;
		}
		if (!k)
			break;
		b->len += (size_t)k;
	}
	close(fd);
	return rc;
}

static int print_buf(const struct buf *b)
{
	if (fwrite(b->p, 1, b->len, stdout) != b->len || fflush(stdout))
		return fail("stdout", strerror(errno));
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-')
		return -1;
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	unsigned long long x = strtoull(hex ? s + 2 : s, &end, hex ? 16 : 10);
	if (errno || *end || end == (hex ? s + 2 : s))
		return -1;
	*v = x;
	return 0;
}

static int parse_compress(const char *s, enum pmode *m)
{
	if (!strcmp(s, "auto"))
		*m = P_AUTO;
	else if (!strcmp(s, "never"))
		*m = P_NEVER;
	else if (!strcmp(s, "always"))
		*m = P_ALWAYS;
	else
		return -1;
	return 0;
}

static int parse_diff(const char *s, int *d, bool mixed_ok)
{
	if (!strcmp(s, "beta1"))
		*d = 1;
	else if (!strcmp(s, "beta2"))
		*d = 2;
	else if (!strcmp(s, "beta3"))
		*d = 3;
	else if (mixed_ok && !strcmp(s, "mixed"))
		*d = 0;
	else
		return -1;
	return 0;
}

static int diffline(int argc, char **argv)
{
	int fmt = 3;
	bool with_crc = true;
	enum pmode pm = P_AUTO;
	if (argc < 4)
		return usage("diffline needs PREV_SAVE and NEW_SAVE");
	for (int i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--diff") && i + 1 < argc) {
			if (parse_diff(argv[++i], &fmt, false))
				return usage("--diff: beta1, beta2 or beta3");
		} else if (!strcmp(argv[i], "--compress") && i + 1 < argc) {
			if (parse_compress(argv[++i], &pm))
				return usage("--compress: auto, never or always");
		} else if (!strcmp(argv[i], "--no-crc")) {
			with_crc = false;
		} else {
			return usage(argv[i]);
		}
	}
	struct buf a = { 0 }, b = { 0 }, d = { 0 }, line = { 0 }, check = { 0 };
	struct prog g = { 0 };
	struct units u = { 0 };
	struct payer pay = { .mode = pm };
	int rc = slurp(argv[2], &a);
	if (rc) {
		rc = fail(argv[2], strerror(-rc));
		goto out;
	}
	if ((rc = slurp(argv[3], &b))) {
		rc = fail(argv[3], strerror(-rc));
		goto out;
	}
	if ((rc = diff_generic(a.p, a.len, b.p, b.len, &g)) ||
	    (rc = units_build(&u, &g, a.p, a.len)) ||
	    (rc = encode_diff(fmt, &u, a.p, a.len, b.p, b.len, with_crc, &d))) {
		rc = fail("diffline", strerror(-rc));
		goto out;
	}
	/* Check the program against the files, so a wrong line is never printed. */
	rc = prog_apply(&g, a.p, a.len, &check);
	if (rc || check.len != b.len || (b.len && memcmp(check.p, b.p, b.len))) {
		rc = fail("diffline", "internal error: the program does not rebuild NEW_SAVE");
		goto out;
	}
	add1(&line, '~');
	if ((rc = payload(&pay, &line, d.p, d.len))) {
		rc = fail("diffline", strerror(-rc));
		goto out;
	}
	add1(&line, '\n');
	rc = line.oom ? fail("out of memory", NULL) : print_buf(&line);
out:
	buf_free(&a);
	buf_free(&b);
	buf_free(&d);
	buf_free(&line);
	buf_free(&check);
	prog_free(&g);
	units_free(&u);
	payer_fini(&pay);
	return rc;
}

static int backupline(int argc, char **argv)
{
	uint64_t prev = 0;
	enum pmode pm = P_AUTO;
	int i = 3;
	if (argc < 3)
		return usage("backupline needs SAVE");
	if (i < argc && strncmp(argv[i], "--", 2)) {
		if (parse_u64(argv[i], &prev) || prev > 0xffffffffu)
			return usage("PREV_OFFSET: a byte offset below 2^32");
		i++;
	}
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--compress") && i + 1 < argc) {
			if (parse_compress(argv[++i], &pm))
				return usage("--compress: auto, never or always");
		} else {
			return usage(argv[i]);
		}
	}
	struct buf s = { 0 }, line = { 0 };
	struct payer pay = { .mode = pm };
	int rc = slurp(argv[2], &s);
	if (rc) {
		rc = fail(argv[2], strerror(-rc));
		goto out;
	}
	addf(&line, "*%08" PRIx64 " ", prev);
	if ((rc = payload(&pay, &line, s.p, s.len))) {
		rc = fail("backupline", strerror(-rc));
		goto out;
	}
	add1(&line, '\n');
	rc = line.oom ? fail("out of memory", NULL) : print_buf(&line);
out:
	buf_free(&s);
	buf_free(&line);
	payer_fini(&pay);
	return rc;
}

static int one_line(const char *kind, uint64_t seed)
{
	static const char *const KINDS[] = { "getpos", "getdir", "key", "yn", "menu", "objmenu", "text" };
	struct game G = { .r = seeded(seed, 5) };
	struct game *g = &G;
	struct buf *b = &g->log.b;
	int rc = 0;
	bool known = true;
	if (!strcmp(kind, "command")) {
		size_t k = (size_t)below(&g->r, sizeof CMDS / sizeof *CMDS);
		rc = put_command(g, b, CMDS[k].name, CMDS[k].args, false);
	} else if (!strcmp(kind, "time")) {
		put_time(g, b, false);
	} else if (!strcmp(kind, "bones")) {
		if (below(&g->r, 2))
			adds(b, "B!");
		else
			rc = put_bones(g, b);
	} else if (!strcmp(kind, "quit")) {
		adds(b, "Q");
	} else if (!strcmp(kind, "welcome")) {
		adds(b, "welcome");
	} else {
		known = false;
		for (int k = 0; k < NPR; k++)
			if (!strcmp(kind, KINDS[k])) {
				rc = put_prompt(g, b, k, prompt_variant(&g->r, k));
				known = true;
			}
	}
	if (!known)
		rc = usage("--line: command, time, getpos, getdir, key, yn, menu, objmenu, text, "
			   "bones, quit or welcome");
	else if (rc || b->oom)
		rc = fail("--line", "out of memory");
	else {
		add1(b, '\n');
		rc = b->oom ? fail("out of memory", NULL) : print_buf(b);
	}
	buf_free(b);
	buf_free(&g->tmp);
	payer_fini(&g->pay);
	return rc;
}

/* ---- arguments ------------------------------------------------------------------- */

/* YYYY-MM-DDTHH:MM:SS[.ffffff][Z] in UTC, or decimal seconds. */
static int parse_start(const char *s, int64_t *us)
{
	uint64_t secs;
	if (!parse_u64(s, &secs)) {
		if (secs > INT64_MAX / 1000000)
			return -1;
		*us = (int64_t)secs * 1000000;
		return 0;
	}
	struct tm tm = { 0 };
	int n = 0;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -1;
	int64_t frac = 0;
	const char *p = s + n;
	if (*p == '.') {
		int digits = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 6)
				frac = frac * 10 + (*p - '0');
		if (!digits)
			return -1;
		for (; digits < 6; digits++)
			frac *= 10;
	}
	if (*p == 'Z')
		p++;
	if (*p || tm.tm_mon < 1 || tm.tm_mon > 12)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	if (t < 0)
		return -1;
	*us = (int64_t)t * 1000000 + frac;
	return 0;
}

static bool word3(const char *s)
{
	if (strlen(s) != 3)
		return false;
	for (int i = 0; i < 3; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
	return true;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;
		if (!strcmp(a, "--bones")) {
			o->bones = true;
		} else if (!strcmp(a, "--done")) {
			o->done = true;
		} else if (!strcmp(a, "--torn")) {
			o->torn = true;
		} else if (!strcmp(a, "--no-crc")) {
			o->no_crc = true;
		} else if (!v) {
			return usage(a);
		} else if (i++, !strcmp(a, "--seed")) {
			if (parse_u64(v, &o->seed))
				return usage("--seed: a number");
		} else if (!strcmp(a, "--turns")) {
			if (parse_u64(v, &o->turns) || o->turns > 100000000)
				return usage("--turns: 0 to 100000000");
			o->size_mode = false;
		} else if (!strcmp(a, "--size")) {
			if (parse_u64(v, &o->size) || o->size > 0xf0000000u)
				return usage("--size: bytes, below 3.75 GiB (the backup offsets are 32-bit)");
			o->size_mode = true;
		} else if (!strcmp(a, "--save-size")) {
			if (parse_u64(v, &o->save_size) || o->save_size < 16 || o->save_size > MAX_SAVE)
				return usage("--save-size: 16 to 1073741824");
		} else if (!strcmp(a, "--diff")) {
			if (parse_diff(v, &o->diff, true))
				return usage("--diff: beta1, beta2, beta3 or mixed");
		} else if (!strcmp(a, "--backup-every")) {
			if (parse_u64(v, &o->backup_every))
				return usage("--backup-every: a number");
		} else if (!strcmp(a, "--recovery")) {
			if (parse_u64(v, &n) || n > 0xffffffffu)
				return usage("--recovery: 0 to 4294967295");
			o->recovery = n;
		} else if (!strcmp(a, "--states")) {
			o->states = v;
		} else if (!strcmp(a, "--start")) {
			if (parse_start(v, &o->start_us))
				return usage("--start: YYYY-MM-DDTHH:MM:SS[.ffffff][Z] or seconds");
		} else if (!strcmp(a, "--mode")) {
			if (parse_u64(v, &n) || n > 3)
				return usage("--mode: 0 to 3");
			o->mode = (int)n;
		} else if (!strcmp(a, "--name")) {
			if (!*v)
				return usage("--name: not empty");
			o->name = v;
		} else if (!strcmp(a, "--reason")) {
			if (strlen(v) > 78 || strchr(v, '\n'))
				return usage("--reason: one line of at most 78 characters");
			o->reason = v;
		} else if (!strcmp(a, "--role") || !strcmp(a, "--race") || !strcmp(a, "--gender") ||
			   !strcmp(a, "--align")) {
			if (!word3(v))
				return usage("--role, --race, --gender, --align: three letters");
			if (a[2] == 'r' && a[3] == 'o')
				o->role = v;
			else if (a[2] == 'r')
				o->race = v;
			else if (a[2] == 'g')
				o->gender = v;
			else
				o->align = v;
		} else if (!strcmp(a, "--compress")) {
			if (parse_compress(v, &o->compress))
				return usage("--compress: auto, never or always");
		} else {
			return usage(a);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	runs_init();
	if (argc >= 2 && !strcmp(argv[1], "diffline"))
		return diffline(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "backupline"))
		return backupline(argc, argv);
	if (argc >= 3 && !strcmp(argv[1], "--line")) {
		uint64_t seed = 1;
		for (int i = 3; i < argc; i++) {
			if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
				if (parse_u64(argv[++i], &seed))
					return usage("--seed: a number");
			} else {
				return usage(argv[i]);
			}
		}
		return one_line(argv[2], seed);
	}
	if (argc < 2 || argv[1][0] == '-' || !argv[1][0])
		return usage(NULL);
	struct opts o = {
		.out = argv[1],
		.name = "Tester",
		.seed = 1,
		.turns = 50,
		.save_size = 4000,
		.recovery = 1,
		.start_us = (int64_t)DEFAULT_START * 1000000,
		.diff = 3,
		.compress = P_AUTO,
	};
	int rc = parse_opts(argc, argv, &o);
	return rc ? rc : make_log(&o);
}
