/*
 * rd.h - a bounded reader over untrusted bytes.
 *
 * Every read is checked against the buffer (off + n overflow-checked).  The
 * first failure makes the reader sticky: later reads return zeroes and
 * sv_rd_ok() stays false, so a whole header can be read and checked once.
 * The offset of the first failure is kept for the error message.
 */
#ifndef SV_RD_H
#define SV_RD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sv_rd {
	const uint8_t *p;
	size_t len;
	size_t off;
	size_t fail_off; /* where the first failed read started */
	bool bad;
};

void sv_rd_init(struct sv_rd *r, const void *p, size_t len);
/* True if every read so far was in bounds. */
static inline bool sv_rd_ok(const struct sv_rd *r) { return !r->bad; }
/* Bytes left after the current offset (0 once failed). */
size_t sv_rd_left(const struct sv_rd *r);
/* Moves to an absolute offset; fails (sticky) past the end. */
void sv_rd_seek(struct sv_rd *r, size_t off);
/* Returns a pointer to the next n bytes and advances, or NULL (sticky). */
const uint8_t *sv_rd_bytes(struct sv_rd *r, size_t n);
uint8_t sv_rd_u8(struct sv_rd *r);
uint32_t sv_rd_u32le(struct sv_rd *r);
int32_t sv_rd_i32le(struct sv_rd *r);
uint16_t sv_rd_u16le(struct sv_rd *r);
uint32_t sv_rd_u32be(struct sv_rd *r);

/* Little-endian stores for writers. */
static inline void sv_put_u32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

#endif
