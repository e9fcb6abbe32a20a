/*
 * png.c - a chunk (or any grid of palette indices) as a PNG, written with
 * stored deflate blocks so that the file's size depends only on the width,
 * the height and the palette size: stat knows it without encoding.
 *
 * Reference: PNG (ISO/IEC 15948) and RFC 1950/1951.  Integers big-endian
 * unless marked.
 *
 *   signature   89 50 4e 47 0d 0a 1a 0a
 *   chunk       length (4) | type (4) | data (length) | crc32(type, data) (4)
 *   IHDR (13)   width, height, depth 8, colour type 3 (n <= 254) or 6, 0, 0, 0
 *   PLTE        (n + 2) x rgb: 0 empty, 1..n the swatches, n+1 bad (ff00ff)
 *   tRNS        (n + 2) x alpha: 0 for empty                   (type 3 only)
 *   IDAT        78 01 | blocks | adler32 of the raw rows
 *     block     BFINAL (1 on the last, 0 before) | LEN (le16) | ~LEN (le16)
 *               | LEN raw bytes, LEN <= 65535
 *     raw       h rows of: filter 0, then w pixels (1 byte index or 4 bytes rgba)
 *   IEND        empty
 *
 * Limits: w, h >= 1 and at most SV_PNG_MAX_RAW raw bytes (-EFBIG), so
 * IDAT's length fits its 31 bits.  sv_png_size() returns 0 for a size the
 * encoder would refuse.
 */
#include "codec/codec.h"

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <zlib.h>

#define SV_PNG_MAX_RAW (1ull << 30)
#define BLOCK 65535u

static bool indexed(uint32_t npal)
{
	return npal <= 254;
}

/* Raw (filtered) image bytes, or 0 if over the limit. */
static uint64_t raw_size(uint32_t w, uint32_t h, uint32_t npal)
{
	uint64_t row = 1 + (uint64_t)w * (indexed(npal) ? 1 : 4);
	if (!w || !h || row > SV_PNG_MAX_RAW / h)
		return 0;
	return row * h;
}

static uint64_t idat_size(uint64_t raw)
{
	return 2 + 5 * ((raw + BLOCK - 1) / BLOCK) + raw + 4;
}

uint64_t sv_png_size(uint32_t w, uint32_t h, uint32_t npal)
{
	uint64_t raw = raw_size(w, h, npal);
	if (!raw)
		return 0;
	uint64_t n = 8 + 12 + 13 + 12 + idat_size(raw) + 12;
	if (indexed(npal))
		n += 12 + 3 * (npal + 2) + 12 + (npal + 2);
	return n;
}

/* Appends to b, whose room was reserved up front. */
static void put(struct sv_buf *b, const void *p, size_t n)
{
	assert(b->len + n <= b->cap);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void put32(struct sv_buf *b, uint32_t v)
{
	uint8_t t[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
			 (uint8_t)v };
	put(b, t, 4);
}

/* Starts a chunk; returns where its type begins, for chunk_end's CRC. */
static size_t chunk_begin(struct sv_buf *b, const char *type, uint32_t len)
{
	put32(b, len);
	size_t at = b->len;
	put(b, type, 4);
	return at;
}

static void chunk_end(struct sv_buf *b, size_t at)
{
	put32(b, (uint32_t)crc32(0, b->p + at, (uInt)(b->len - at)));
}

/* The raw rows as stored deflate blocks, cut every BLOCK bytes. */
struct stored {
	uint64_t left;  /* raw bytes not yet written */
	uint32_t room;  /* bytes left in the current block */
	uLong adler;
};

static void stored_put(struct sv_buf *b, struct stored *s, const uint8_t *p, size_t n)
{
	s->adler = adler32(s->adler, p, (uInt)n);
	while (n) {
		if (!s->room) {
			uint16_t len = (uint16_t)(s->left < BLOCK ? s->left : BLOCK);
			uint8_t h[5] = { s->left <= BLOCK, (uint8_t)len, (uint8_t)(len >> 8),
					 (uint8_t)~len, (uint8_t)(~len >> 8) };
			put(b, h, 5);
			s->room = len;
		}
		size_t k = n < s->room ? n : s->room;
		put(b, p, k);
		p += k;
		n -= k;
		s->room -= (uint32_t)k;
		s->left -= k;
	}
}

/* Either px (indices into pal) or rgba (4 bytes a pixel, top row first). */
static int encode(uint32_t w, uint32_t h, const uint16_t *px, const uint8_t *rgba,
		  const struct sv_palette *pal, struct sv_buf *out)
{
	uint32_t npal = rgba ? 255 : pal ? pal->n : 0;
	uint64_t size = sv_png_size(w, h, npal), raw = raw_size(w, h, npal);
	if (!w || !h)
		return -EINVAL;
	if (!size || size > SIZE_MAX)
		return -EFBIG;
	int rc = sv_buf_reserve(out, (size_t)size);
	if (rc)
		return rc;
	size_t len0 = out->len, at;
	bool ix = indexed(npal);

	put(out, "\x89PNG\r\n\x1a\n", 8);
	at = chunk_begin(out, "IHDR", 13);
	put32(out, w);
	put32(out, h);
	put(out, (uint8_t[5]){ 8, ix ? 3 : 6, 0, 0, 0 }, 5);
	chunk_end(out, at);
	if (ix) {
		at = chunk_begin(out, "PLTE", 3 * (npal + 2));
		put(out, "\0\0\0", 3);
		for (uint32_t i = 0; i < npal; i++)
			put(out, pal->v[i].rgba, 3);
		put(out, "\xff\0\xff", 3);
		chunk_end(out, at);
		at = chunk_begin(out, "tRNS", npal + 2);
		put(out, "", 1);
		for (uint32_t i = 0; i < npal; i++)
			put(out, &pal->v[i].rgba[3], 1);
		put(out, "\xff", 1);
		chunk_end(out, at);
	}

	at = chunk_begin(out, "IDAT", (uint32_t)idat_size(raw));
	put(out, "\x78\x01", 2);
	struct stored s = { raw, 0, adler32(0, NULL, 0) };
	uint8_t tmp[4096];
	const uint8_t bad[4] = { 0xff, 0, 0xff, 0xff }, empty[4] = { 0, 0, 0, 0 };
	for (uint32_t y = 0; y < h; y++) {
		stored_put(out, &s, empty, 1); /* filter type 0 */
		if (rgba) {
			stored_put(out, &s, rgba + (size_t)y * w * 4, (size_t)w * 4);
			continue;
		}
		for (uint32_t x = 0; x < w;) {
			size_t k = 0;
			for (; x < w && k < sizeof tmp; x++) {
				uint16_t v = px[(size_t)y * w + x];
				if (ix) {
					tmp[k++] = (uint8_t)(v == SV_PX_EMPTY ? 0
							     : v < npal ? (uint32_t)v + 1 : npal + 1);
					continue;
				}
				memcpy(tmp + k, v == SV_PX_EMPTY ? empty
					       : v < npal ? pal->v[v].rgba : bad, 4);
				k += 4;
			}
			stored_put(out, &s, tmp, k);
		}
	}
	put32(out, (uint32_t)s.adler);
	chunk_end(out, at);
	at = chunk_begin(out, "IEND", 0);
	chunk_end(out, at);
	assert(out->len - len0 == size && s.left == 0);
	(void)len0;
	return 0;
}

int sv_png_encode(uint32_t w, uint32_t h, const uint16_t *px,
		  const struct sv_palette *pal, struct sv_buf *out)
{
	return encode(w, h, px, NULL, pal, out);
}

int sv_png_encode_rgba(uint32_t w, uint32_t h, const uint8_t *rgba, struct sv_buf *out)
{
	return encode(w, h, NULL, rgba, NULL, out);
}
