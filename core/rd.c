/*
 * rd.c - the bounded reader (see rd.h).  Modelled on the idea of libzip's
 * zip_buffer: check once, fail sticky, never read out of bounds.
 */
#include "rd.h"

#include <string.h>

void sv_rd_init(struct sv_rd *r, const void *p, size_t len)
{
	static const uint8_t none[1];
	r->p = p ? p : none; /* never NULL: NULL + 0 is undefined */
	r->len = p ? len : 0;
	r->off = 0;
	r->fail_off = 0;
	r->bad = false;
}

static void fail(struct sv_rd *r)
{
	if (!r->bad) {
		r->bad = true;
		r->fail_off = r->off;
	}
}

size_t sv_rd_left(const struct sv_rd *r)
{
	return r->bad ? 0 : r->len - r->off;
}

void sv_rd_seek(struct sv_rd *r, size_t off)
{
	if (r->bad)
		return;
	if (off > r->len) {
		r->fail_off = off;
		r->bad = true;
		return;
	}
	r->off = off;
}

const uint8_t *sv_rd_bytes(struct sv_rd *r, size_t n)
{
	if (r->bad)
		return NULL;
	if (r->off + n < n || r->off + n > r->len) {
		fail(r);
		return NULL;
	}
	const uint8_t *p = r->p + r->off;
	r->off += n;
	return p;
}

uint8_t sv_rd_u8(struct sv_rd *r)
{
	const uint8_t *p = sv_rd_bytes(r, 1);
	return p ? p[0] : 0;
}

uint16_t sv_rd_u16le(struct sv_rd *r)
{
	const uint8_t *p = sv_rd_bytes(r, 2);
	return p ? (uint16_t)(p[0] | p[1] << 8) : 0;
}

uint32_t sv_rd_u32le(struct sv_rd *r)
{
	const uint8_t *p = sv_rd_bytes(r, 4);
	if (!p)
		return 0;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int32_t sv_rd_i32le(struct sv_rd *r)
{
	uint32_t v = sv_rd_u32le(r);
	int32_t s;
	memcpy(&s, &v, sizeof s);
	return s;
}

uint32_t sv_rd_u32be(struct sv_rd *r)
{
	const uint8_t *p = sv_rd_bytes(r, 4);
	if (!p)
		return 0;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
	       (uint32_t)p[3];
}
