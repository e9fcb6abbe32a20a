/*
 * rd.c - the bounded reader (see rd.h): every read checked, the first
 * failure kept with its offset and reason.
 */
#include "rd.h"

#include <errno.h>
#include <string.h>

void sv_rd_init(struct sv_rd *r, const void *p, size_t len)
{
	static const uint8_t none[1];
	r->p = p ? p : none; /* never NULL: NULL + 0 is undefined */
	r->len = p ? len : 0;
	r->off = 0;
	r->fail_off = 0;
	r->bad = false;
	r->ended = false;
	r->why = NULL;
}

void sv_rd_init_at(struct sv_rd *r, const void *p, size_t len, size_t off)
{
	sv_rd_init(r, p, len);
	sv_rd_seek(r, off);
}

void sv_rd_fail_end(struct sv_rd *r)
{
	if (!r->bad) {
		r->bad = true;
		r->ended = true;
		r->fail_off = r->off;
	}
}

void sv_rd_fail_at(struct sv_rd *r, size_t at, const char *why)
{
	if (!r->bad) {
		r->bad = true;
		r->why = why;
		r->fail_off = at;
	}
}

void sv_rd_fail(struct sv_rd *r, const char *why)
{
	sv_rd_fail_at(r, r->off, why);
}


void sv_rd_seek(struct sv_rd *r, size_t off)
{
	if (r->bad)
		return;
	if (off > r->len) {
		r->bad = true;
		r->ended = true;
		r->fail_off = off;
		return;
	}
	r->off = off;
}



void sv_rd_copy(struct sv_rd *r, void *out, size_t n)
{
	const uint8_t *p = sv_rd_bytes(r, n);
	if (p)
		memcpy(out, p, n);
	else
		memset(out, 0, n);
}










uint64_t sv_rd_leb(struct sv_rd *r, unsigned max)
{
	static const char *const longer[11] = {
		"a varint longer than 0 bytes", "a varint longer than 1 byte",
		"a varint longer than 2 bytes", "a varint longer than 3 bytes",
		"a varint longer than 4 bytes", "a varint longer than 5 bytes",
		"a varint longer than 6 bytes", "a varint longer than 7 bytes",
		"a varint longer than 8 bytes", "a varint longer than 9 bytes",
		"a varint longer than 10 bytes",
	};
	size_t at = r->off;
	uint64_t v = 0;
	if (max > 10)
		max = 10;
	for (unsigned i = 0; i < max; i++) {
		uint8_t b = sv_rd_u8(r);
		if (!sv_rd_ok(r))
			return 0;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	sv_rd_fail_at(r, at, longer[max]);
	return 0;
}

uint64_t sv_rd_uleb64(struct sv_rd *r)
{
	size_t at = r->off;
	uint64_t v = 0;
	for (unsigned i = 0; i < 10; i++) {
		uint8_t b = sv_rd_u8(r);
		if (!sv_rd_ok(r))
			return 0;
		if (i == 9 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	sv_rd_fail_at(r, at, "varint longer than 64 bits");
	return 0;
}

int64_t sv_rd_zigzag(struct sv_rd *r)
{
	return sv_unzigzag(sv_rd_uleb64(r));
}

uint64_t sv_rd_vlq(struct sv_rd *r)
{
	size_t at = r->off;
	uint64_t v = 0;
	for (int i = 0; i < 10; i++) {
		uint8_t c = sv_rd_u8(r);
		if (!sv_rd_ok(r))
			return 0;
		if (i == 9 && (v >> 57)) {
			sv_rd_fail_at(r, at, "a number larger than 64 bits");
			return 0;
		}
		v = v << 7 | (c & 0x7f);
		if (!(c & 0x80))
			return v;
	}
	sv_rd_fail_at(r, at, "a number of more than 10 bytes");
	return 0;
}

int64_t sv_rd_svlq(struct sv_rd *r)
{
	uint64_t u = sv_rd_vlq(r);
	return u & 1 ? -(int64_t)(u >> 1) - 1 : (int64_t)(u >> 1);
}

int sv_rd_error(const struct sv_rd *r, struct sv_err *err, int code, const char *prefix,
		const char *ended)
{
	const char *why = r->ended || !r->why ? ended : r->why;
	if (prefix)
		return sv_err_set(err, code, "%s: byte %zu: %s", prefix, r->fail_off, why);
	return sv_err_set(err, code, "byte %zu: %s", r->fail_off, why);
}

unsigned sv_leb_size(uint64_t v)
{
	unsigned k = 1;
	while (v >= 0x80) {
		v >>= 7;
		k++;
	}
	return k;
}

int sv_put_leb(struct sv_buf *b, uint64_t v)
{
	uint8_t t[10];
	unsigned k = 0;
	while (v >= 0x80) {
		t[k++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[k++] = (uint8_t)v;
	return sv_buf_add(b, t, k);
}

unsigned sv_vlq_size(uint64_t v)
{
	return sv_leb_size(v); /* the same groups of 7 bits, in the other order */
}

unsigned sv_store_vlq(uint8_t *p, uint64_t v)
{
	unsigned n = sv_vlq_size(v);
	for (unsigned i = n; i-- > 0; v >>= 7)
		p[i] = (uint8_t)((v & 0x7f) | (i < n - 1 ? 0x80 : 0));
	return n;
}

int sv_put_vlq(struct sv_buf *b, uint64_t v)
{
	uint8_t t[10];
	return sv_buf_add(b, t, sv_store_vlq(t, v));
}

int sv_put_svlq(struct sv_buf *b, int64_t v)
{
	uint64_t u = v < 0 ? ((uint64_t)(-(v + 1)) << 1) | 1 : (uint64_t)v << 1;
	return sv_put_vlq(b, u);
}
