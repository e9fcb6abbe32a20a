/*
 * rd.h - the bounded reader: the one way formats read container bytes.
 *
 * A reader walks a buffer it does not own.  Every read is checked against
 * the buffer (off + n overflow-checked) before a byte is touched.  The
 * first failure makes the reader sticky: later reads return zeroes and
 * sv_rd_ok() stays false, so a whole header can be read and checked once.
 * A failure keeps where it happened (fail_off), whether the bytes ran out
 * (ended) and, for a malformed number, why; sv_rd_error() turns that into
 * the message "PREFIX: byte N: WHY".
 *
 * Widths: little- and big-endian integers of 1 to 8 bytes.  Numbers of
 * variable length, each as its format's game writes them:
 *   LEB128     low 7 bits first, high bit "more" (protobuf, Minecraft's
 *              VarInt/VarLong); sv_rd_leb takes at most `max` bytes and
 *              drops bits past 64 as Java's reader does, sv_rd_uleb64 is
 *              strict (10 bytes at most, nothing past bit 63); zigzag for
 *              signed values (0, -1, 1, -2, ... as 0, 1, 2, 3, ...)
 *   VLQ        Starbound's: high 7 bits first, high bit "more", at most 10
 *              bytes and 64 bits; the signed form keeps the sign in bit 0
 *              (v < 0: (-(v+1) << 1) | 1)
 * The writers beside them append the same encodings to an sv_buf.
 *
 * Modelled on the idea of libzip's zip_buffer and libarchive's read-ahead:
 * check once, fail sticky, never read out of bounds.
 */
#ifndef SV_RD_H
#define SV_RD_H

#include "helpers.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct sv_rd {
	const uint8_t *p;
	size_t len;
	size_t off;
	size_t fail_off;  /* where the first failure happened */
	bool bad;
	bool ended;       /* it failed because the bytes ran out */
	const char *why;  /* the reason of a failure that is not an end */
};

void sv_rd_init(struct sv_rd *r, const void *p, size_t len);
/* A reader over p[0..len) that starts at off (fails at once past len). */
void sv_rd_init_at(struct sv_rd *r, const void *p, size_t len, size_t off);
/* True if every read so far was in bounds. */
static inline bool sv_rd_ok(const struct sv_rd *r) { return !r->bad; }
/* Bytes left after the current offset (0 once failed). */
static inline size_t sv_rd_left(const struct sv_rd *r) { return r->bad ? 0 : r->len - r->off; }
/* Moves to an absolute offset; fails (sticky) past the end. */
void sv_rd_seek(struct sv_rd *r, size_t off);
/* The bytes ran out here (the slow path of the reads below; nothing if
 * the reader failed before). */
void sv_rd_fail_end(struct sv_rd *r);
/* True if n more bytes are there; else fails (sticky, ended) here,
 * without moving: for a record whose parts are read after one check. */
static inline bool sv_rd_need(struct sv_rd *r, size_t n)
{
	if (__builtin_expect(!r->bad && r->len - r->off >= n, 1))
		return true;
	sv_rd_fail_end(r);
	return false;
}
/* Fails here with a reason (a value the format refuses); the first
 * failure is the one kept. */
void sv_rd_fail(struct sv_rd *r, const char *why);
/* The same at an earlier offset (the start of the value). */
void sv_rd_fail_at(struct sv_rd *r, size_t at, const char *why);
/* Returns a pointer to the next n bytes and advances, or NULL (sticky).
 * The bytes may then be parsed with sv_get_be and friends: the one check
 * covers them (libarchive's read-ahead and consume). */
static inline const uint8_t *sv_rd_bytes(struct sv_rd *r, size_t n)
{
	if (!sv_rd_need(r, n))
		return NULL;
	const uint8_t *p = r->p + r->off;
	r->off += n;
	return p;
}
/* Copies the next n bytes into out (zeroes on failure). */
void sv_rd_copy(struct sv_rd *r, void *out, size_t n);

/* Reads a big-endian integer of width bytes from memory a check already
 * covers (sv_rd_bytes, a block read whole, a key of known size). */
static inline uint64_t sv_get_be(const uint8_t *p, unsigned width)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < width; i++)
		v = v << 8 | p[i];
	return v;
}
/* The same, little-endian. */
static inline uint64_t sv_get_le(const uint8_t *p, unsigned width)
{
	uint64_t v = 0;
	for (unsigned i = width; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* An IEEE float stored big-endian, from memory a check covers. */
static inline float sv_get_f32be(const uint8_t *p)
{
	uint32_t u = (uint32_t)sv_get_be(p, 4);
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static inline uint8_t sv_rd_u8(struct sv_rd *r)
{
	const uint8_t *p = sv_rd_bytes(r, 1);
	return p ? p[0] : 0;
}
/* A big-endian unsigned integer of width bytes (1 to 8). */
static inline uint64_t sv_rd_be(struct sv_rd *r, unsigned width)
{
	const uint8_t *p = width <= 8 ? sv_rd_bytes(r, width) : NULL;
	return p ? sv_get_be(p, width) : 0;
}
static inline uint64_t sv_rd_le(struct sv_rd *r, unsigned width)
{
	const uint8_t *p = width <= 8 ? sv_rd_bytes(r, width) : NULL;
	return p ? sv_get_le(p, width) : 0;
}
static inline uint16_t sv_rd_u16le(struct sv_rd *r) { return (uint16_t)sv_rd_le(r, 2); }
static inline uint32_t sv_rd_u32le(struct sv_rd *r) { return (uint32_t)sv_rd_le(r, 4); }
static inline uint64_t sv_rd_u64le(struct sv_rd *r) { return sv_rd_le(r, 8); }
static inline uint16_t sv_rd_u16be(struct sv_rd *r) { return (uint16_t)sv_rd_be(r, 2); }
static inline uint32_t sv_rd_u32be(struct sv_rd *r) { return (uint32_t)sv_rd_be(r, 4); }
static inline uint64_t sv_rd_u64be(struct sv_rd *r) { return sv_rd_be(r, 8); }
static inline int32_t sv_rd_i32le(struct sv_rd *r)
{
	uint32_t v = sv_rd_u32le(r);
	int32_t s;
	memcpy(&s, &v, sizeof s);
	return s;
}
/* sv_rd_be, sign-extended from its width. */
static inline int64_t sv_rd_sbe(struct sv_rd *r, unsigned width)
{
	uint64_t u = sv_rd_be(r, width);
	if (width && width < 8 && (u >> (8 * width - 1)))
		u |= ~0ull << (8 * width);
	int64_t s;
	memcpy(&s, &u, sizeof s);
	return s;
}
/* IEEE floats stored big-endian. */
static inline float sv_rd_f32be(struct sv_rd *r)
{
	const uint8_t *p = sv_rd_bytes(r, 4);
	return p ? sv_get_f32be(p) : 0.0f;
}
static inline double sv_rd_f64be(struct sv_rd *r)
{
	uint64_t u = sv_rd_u64be(r);
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

/* LEB128 of at most max bytes (1 to 10); more fails with "a varint
 * longer than MAX bytes" at its start. */
uint64_t sv_rd_leb(struct sv_rd *r, unsigned max);
/* LEB128 that must fit 64 bits: "a varint longer than 64 bits". */
uint64_t sv_rd_uleb64(struct sv_rd *r);
/* Zigzag LEB128 (sv_rd_uleb64, then unzigzagged). */
int64_t sv_rd_zigzag(struct sv_rd *r);
/* Starbound's VLQ: "a number larger than 64 bits", "a number of more
 * than 10 bytes". */
uint64_t sv_rd_vlq(struct sv_rd *r);
int64_t sv_rd_svlq(struct sv_rd *r);

/* Fills err with code (a negative errno) and "PREFIX: byte N: WHY" (no
 * "PREFIX: " when prefix is NULL), WHY being the failure's reason, or
 * `ended` when the bytes ran out.  Returns code. */
int sv_rd_error(const struct sv_rd *r, struct sv_err *err, int code, const char *prefix,
		const char *ended);

static inline int64_t sv_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }
static inline uint64_t sv_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* Writers: 0 or -ENOMEM. */
int sv_put_leb(struct sv_buf *b, uint64_t v);
/* The bytes sv_put_leb writes for v. */
unsigned sv_leb_size(uint64_t v);
int sv_put_vlq(struct sv_buf *b, uint64_t v);
int sv_put_svlq(struct sv_buf *b, int64_t v);
/* The bytes sv_put_vlq writes for v. */
unsigned sv_vlq_size(uint64_t v);
/* Stores the VLQ of v at p (room for sv_vlq_size(v) bytes); its size. */
unsigned sv_store_vlq(uint8_t *p, uint64_t v);

/* Fixed-width stores for writers. */
static inline void sv_put_u32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}
static inline void sv_put_be(uint8_t *p, uint64_t v, unsigned width)
{
	for (unsigned i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * (width - 1 - i)));
}
#endif
