/*
 * test_rd.c - the bounded reader (core/rd.c): in-bounds reads, byte order,
 * overflow-checked bounds, sticky failure with the first failing offset,
 * seeks; big-endian widths, LEB128 (loose and strict), zigzag, Starbound's
 * VLQs, the writers beside them, and the failure's message.
 */
#include "rd.h"
#include "t.h"

#include <errno.h>

static const uint8_t buf[] = {
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x80,
	0xaa, 0xbb,
};

static void in_bounds(void)
{
	struct sv_rd r;
	sv_rd_init(&r, buf, sizeof buf);
	T_OK(sv_rd_ok(&r));
	T_UINT(sizeof buf, sv_rd_left(&r));
	T_UINT(0x01, sv_rd_u8(&r));
	T_UINT(0x0302, sv_rd_u16le(&r));
	T_UINT(1 + 2, r.off);
	sv_rd_seek(&r, 0);
	T_UINT(0x04030201u, sv_rd_u32le(&r));
	T_UINT(0x05060708u, sv_rd_u32be(&r));
	T_INT(-1, sv_rd_i32le(&r));
	T_INT(INT32_MIN, sv_rd_i32le(&r));
	T_UINT(2, sv_rd_left(&r));
	const uint8_t *p = sv_rd_bytes(&r, 2);
	T_OK(p == buf + 16);
	T_UINT(0, sv_rd_left(&r));
	/* A zero-length read at the very end is in bounds. */
	T_OK(sv_rd_bytes(&r, 0) == buf + sizeof buf);
	T_OK(sv_rd_ok(&r));
	/* Big-endian and little-endian views of the same bytes. */
	sv_rd_seek(&r, 8);
	T_UINT(0xffffffffu, sv_rd_u32be(&r));
	T_UINT(0x80u, sv_rd_u32be(&r));
	sv_rd_seek(&r, 12);
	T_UINT(0x80000000u, sv_rd_u32le(&r));
	T_OK(sv_rd_ok(&r));
}

static void exact_end(void)
{
	struct sv_rd r;
	sv_rd_init(&r, buf, sizeof buf);
	T_OK(sv_rd_bytes(&r, sizeof buf) == buf);
	T_OK(sv_rd_ok(&r));
	/* One byte more fails, at the offset where it started. */
	T_UINT(0, sv_rd_u8(&r));
	T_OK(!sv_rd_ok(&r));
	T_UINT(sizeof buf, r.fail_off);

	/* A 4-byte read straddling the end fails and reads as 0. */
	sv_rd_init(&r, buf, sizeof buf);
	sv_rd_seek(&r, sizeof buf - 2);
	T_UINT(0, sv_rd_u32le(&r));
	T_OK(!sv_rd_ok(&r));
	T_UINT(sizeof buf - 2, r.fail_off);

	sv_rd_init(&r, buf, sizeof buf);
	sv_rd_seek(&r, sizeof buf - 1);
	T_UINT(0, sv_rd_u16le(&r));
	T_OK(!sv_rd_ok(&r));
	T_UINT(sizeof buf - 1, r.fail_off);
}

static void overflow(void)
{
	/* off + n wraps around: must fail, not pass the check. */
	static const size_t ns[] = {SIZE_MAX, SIZE_MAX - 3, SIZE_MAX - 2, SIZE_MAX / 2 + 1};
	for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
		struct sv_rd r;
		sv_rd_init(&r, buf, sizeof buf);
		sv_rd_seek(&r, 4);
		T_OK(sv_rd_bytes(&r, ns[k]) == NULL);
		T_OK(!sv_rd_ok(&r));
		T_UINT(4, r.fail_off);
		T_UINT(0, sv_rd_left(&r));
	}
	/* Just past the end by one byte. */
	struct sv_rd r;
	sv_rd_init(&r, buf, sizeof buf);
	T_OK(sv_rd_bytes(&r, sizeof buf + 1) == NULL);
	T_UINT(0, r.fail_off);
	/* A NULL buffer is an empty one. */
	sv_rd_init(&r, NULL, 100);
	T_UINT(0, sv_rd_left(&r));
	(void)sv_rd_bytes(&r, 0);
	T_OK(sv_rd_ok(&r));
	T_UINT(0, sv_rd_u8(&r));
	T_OK(!sv_rd_ok(&r));
}

static void sticky(void)
{
	struct sv_rd r;
	sv_rd_init(&r, buf, sizeof buf);
	sv_rd_seek(&r, 6);
	(void)sv_rd_u32le(&r); /* 6..10: in bounds */
	T_OK(sv_rd_ok(&r));
	T_OK(sv_rd_bytes(&r, 100) == NULL);
	T_UINT(10, r.fail_off);
	/* Later reads, even in bounds, return 0 and keep the first offset. */
	sv_rd_seek(&r, 0);
	T_UINT(10, r.fail_off);
	T_UINT(0, sv_rd_u8(&r));
	T_UINT(0, sv_rd_u16le(&r));
	T_UINT(0, sv_rd_u32le(&r));
	T_UINT(0, sv_rd_u32be(&r));
	T_INT(0, sv_rd_i32le(&r));
	T_OK(sv_rd_bytes(&r, 0) == NULL);
	T_OK(sv_rd_bytes(&r, 1) == NULL);
	T_UINT(0, sv_rd_left(&r));
	T_OK(!sv_rd_ok(&r));
	T_UINT(10, r.fail_off);
	sv_rd_seek(&r, SIZE_MAX);
	T_UINT(10, r.fail_off);
	/* A fresh init clears it. */
	sv_rd_init(&r, buf, sizeof buf);
	T_OK(sv_rd_ok(&r));
	T_UINT(0x01, sv_rd_u8(&r));
}

static void seeks(void)
{
	struct sv_rd r;
	sv_rd_init(&r, buf, sizeof buf);
	/* Seeking to the end itself is fine: nothing is left. */
	sv_rd_seek(&r, sizeof buf);
	T_OK(sv_rd_ok(&r));
	T_UINT(0, sv_rd_left(&r));
	T_UINT(sizeof buf, r.off);
	/* Back into the buffer. */
	sv_rd_seek(&r, 16);
	T_UINT(0xbbaa, sv_rd_u16le(&r));
	/* Past the end: sticky, and the failing target is recorded. */
	sv_rd_seek(&r, sizeof buf + 1);
	T_OK(!sv_rd_ok(&r));
	T_UINT(sizeof buf + 1, r.fail_off);
	T_UINT(0, sv_rd_u8(&r));

	sv_rd_init(&r, buf, sizeof buf);
	sv_rd_seek(&r, SIZE_MAX);
	T_OK(!sv_rd_ok(&r));
	T_UINT(SIZE_MAX, r.fail_off);
	T_UINT(0, sv_rd_left(&r));
}

static void widths(void)
{
	struct sv_rd r;
	sv_rd_init(&r, buf, sizeof buf);
	T_UINT(0x0102, sv_rd_u16be(&r));
	sv_rd_seek(&r, 0);
	T_UINT(0x0102030405060708ull, sv_rd_u64be(&r));
	sv_rd_seek(&r, 0);
	T_UINT(0x0807060504030201ull, sv_rd_u64le(&r));
	sv_rd_seek(&r, 0);
	T_UINT(0x010203, sv_rd_be(&r, 3));
	/* Sign-extended from its width: 0xffff is -1 as two bytes, 0x80 is
	 * -128 as one. */
	sv_rd_seek(&r, 8);
	T_INT(-1, sv_rd_sbe(&r, 2));
	sv_rd_seek(&r, 15);
	T_INT(-128, sv_rd_sbe(&r, 1));
	sv_rd_seek(&r, 12);
	T_INT(0x80, sv_rd_sbe(&r, 4));
	/* IEEE floats, big-endian: 1.5f is 3f c0 00 00, -2.0 is c0 00 .. 00. */
	static const uint8_t fl[] = {0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0};
	sv_rd_init(&r, fl, sizeof fl);
	T_OK(sv_rd_f32be(&r) == 1.5f);
	T_OK(sv_rd_f64be(&r) == -2.0);
	T_OK(sv_rd_ok(&r));
	/* A width past the end fails where the value starts. */
	sv_rd_init(&r, buf, 5);
	sv_rd_u16be(&r);
	T_UINT(0, sv_rd_u32be(&r));
	T_OK(!sv_rd_ok(&r) && r.ended);
	T_UINT(2, r.fail_off);
	/* Writers: the same bytes back. */
	uint8_t out[8];
	sv_put_be(out, 0x0102030405060708ull, 8);
	T_MEM(buf, out, 8);
	T_UINT(0x0506, sv_get_be(buf + 4, 2));
}

static void leb(void)
{
	static const struct {
		uint64_t v;
		uint8_t b[10];
		size_t n;
	} vec[] = {
		{0, {0}, 1},
		{1, {1}, 1},
		{127, {0x7f}, 1},
		{128, {0x80, 0x01}, 2},
		{300, {0xac, 0x02}, 2},
		{0xFFFF, {0xff, 0xff, 0x03}, 3},
		{1ull << 63, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 10},
		{UINT64_MAX, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
	};
	for (size_t i = 0; i < sizeof vec / sizeof *vec; i++) {
		struct sv_buf b;
		sv_buf_init(&b);
		T_INT(0, sv_put_leb(&b, vec[i].v));
		T_UINT(vec[i].n, b.len);
		T_UINT(vec[i].n, sv_leb_size(vec[i].v));
		T_MEM(vec[i].b, b.p, vec[i].n);
		struct sv_rd r;
		sv_rd_init(&r, vec[i].b, vec[i].n);
		T_UINT(vec[i].v, sv_rd_uleb64(&r));
		T_UINT(vec[i].n, r.off);
		sv_rd_init(&r, vec[i].b, vec[i].n);
		T_UINT(vec[i].v, sv_rd_leb(&r, 10));
		T_OK(sv_rd_ok(&r));
		sv_buf_fini(&b);
	}
	struct sv_rd r;
	struct sv_err err;
	/* Cut short: it ended, at the byte that is missing. */
	static const uint8_t cut[] = {0x00, 0x80, 0x80};
	sv_rd_init_at(&r, cut, sizeof cut, 1);
	T_UINT(0, sv_rd_uleb64(&r));
	T_OK(!sv_rd_ok(&r) && r.ended);
	T_UINT(3, r.fail_off);
	T_INT(-EBADMSG, sv_rd_error(&r, &err, -EBADMSG, "chunk", "a record ends early"));
	T_STR("chunk: byte 3: a record ends early", err.msg);
	/* Eleven bytes, and a 10th byte past bit 63: too long, at its start. */
	static const uint8_t longv[11] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x01};
	static const uint8_t over[10] = {0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff, 0x02};
	sv_rd_init(&r, longv, sizeof longv);
	sv_rd_uleb64(&r);
	T_OK(!sv_rd_ok(&r) && !r.ended);
	T_UINT(0, r.fail_off);
	sv_rd_error(&r, &err, -EBADMSG, NULL, "ends early");
	T_STR("byte 0: varint longer than 64 bits", err.msg);
	sv_rd_init(&r, over, sizeof over);
	sv_rd_uleb64(&r);
	T_STR("varint longer than 64 bits", r.why);
	/* Loose: a Java VarLong reader drops the bits past 64 (the 0x02 puts
	 * nothing in bit 63). */
	sv_rd_init(&r, over, sizeof over);
	T_UINT(INT64_MAX, sv_rd_leb(&r, 10));
	T_OK(sv_rd_ok(&r));
	/* ... and a VarInt takes five bytes at most. */
	sv_rd_init(&r, longv, sizeof longv);
	sv_rd_leb(&r, 5);
	T_STR("a varint longer than 5 bytes", r.why);
	T_UINT(0, r.fail_off);
	/* Zigzag. */
	T_UINT(0, sv_zigzag(0));
	T_UINT(1, sv_zigzag(-1));
	T_UINT(2, sv_zigzag(1));
	T_UINT(3, sv_zigzag(-2));
	T_UINT(255, sv_zigzag(-128));
	T_UINT(UINT64_MAX, sv_zigzag(INT64_MIN));
	T_UINT(UINT64_MAX - 1, sv_zigzag(INT64_MAX));
	T_INT(-128, sv_unzigzag(255));
	T_INT(INT64_MIN, sv_unzigzag(UINT64_MAX));
	T_INT(INT64_MAX, sv_unzigzag(UINT64_MAX - 1));
	static const uint8_t zz[] = {0x03, 0xff, 0x01};
	sv_rd_init(&r, zz, sizeof zz);
	T_INT(-2, sv_rd_zigzag(&r));
	T_INT(-128, sv_rd_zigzag(&r));
}

static void vlq(void)
{
	static const struct {
		uint64_t v;
		uint8_t b[10];
		size_t n;
	} vec[] = {
		{0, {0}, 1},
		{127, {0x7f}, 1},
		{128, {0x81, 0x00}, 2},
		{300, {0x82, 0x2c}, 2},
		{UINT64_MAX, {0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 10},
	};
	for (size_t i = 0; i < sizeof vec / sizeof *vec; i++) {
		struct sv_buf b;
		sv_buf_init(&b);
		T_INT(0, sv_put_vlq(&b, vec[i].v));
		T_UINT(vec[i].n, b.len);
		T_UINT(vec[i].n, sv_vlq_size(vec[i].v));
		T_MEM(vec[i].b, b.p, vec[i].n);
		struct sv_rd r;
		sv_rd_init(&r, b.p, b.len);
		T_UINT(vec[i].v, sv_rd_vlq(&r));
		T_OK(sv_rd_ok(&r));
		sv_buf_fini(&b);
	}
	/* Signed: the sign in bit 0. */
	static const int64_t sv[] = {0, -1, 1, -64, 63, INT64_MIN, INT64_MAX};
	static const uint64_t su[] = {0, 1, 2, 127, 126, UINT64_MAX, UINT64_MAX - 1};
	for (size_t i = 0; i < sizeof sv / sizeof *sv; i++) {
		struct sv_buf b, u;
		sv_buf_init(&b);
		sv_buf_init(&u);
		T_INT(0, sv_put_svlq(&b, sv[i]));
		T_INT(0, sv_put_vlq(&u, su[i]));
		T_UINT(u.len, b.len);
		T_MEM(u.p, b.p, b.len);
		struct sv_rd r;
		sv_rd_init(&r, b.p, b.len);
		T_INT(sv[i], sv_rd_svlq(&r));
		sv_buf_fini(&b);
		sv_buf_fini(&u);
	}
	struct sv_rd r;
	static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x00};
	sv_rd_init(&r, eleven, sizeof eleven);
	sv_rd_vlq(&r);
	T_STR("a number of more than 10 bytes", r.why);
	static const uint8_t big[] = {0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	sv_rd_init(&r, big, sizeof big);
	sv_rd_vlq(&r);
	T_STR("a number larger than 64 bits", r.why);
	T_UINT(0, r.fail_off);
	static const uint8_t cut[] = {0x00, 0x81};
	sv_rd_init_at(&r, cut, sizeof cut, 1);
	sv_rd_vlq(&r);
	T_OK(r.ended);
	T_UINT(2, r.fail_off);
}

static void reasons(void)
{
	struct sv_rd r;
	struct sv_err err;
	sv_rd_init(&r, buf, sizeof buf);
	T_OK(sv_rd_need(&r, sizeof buf));
	T_OK(sv_rd_ok(&r));
	sv_rd_u8(&r);
	/* need() checks without moving, and fails here. */
	T_OK(!sv_rd_need(&r, sizeof buf));
	T_UINT(1, r.fail_off);
	T_UINT(1, r.off);
	/* The first failure is the one kept. */
	sv_rd_fail(&r, "later");
	T_OK(r.ended && !r.why);
	sv_rd_error(&r, &err, -EBADMSG, "x", "ends early");
	T_STR("x: byte 1: ends early", err.msg);
	sv_rd_init(&r, buf, sizeof buf);
	sv_rd_u32le(&r);
	sv_rd_fail_at(&r, 2, "a count past the end");
	sv_rd_fail(&r, "a second reason");
	sv_rd_error(&r, &err, -EINVAL, "y", "ends early");
	T_INT(-EINVAL, err.code);
	T_STR("y: byte 2: a count past the end", err.msg);
	/* copy(): the bytes, or zeroes once failed. */
	uint8_t four[4] = {9, 9, 9, 9};
	sv_rd_init(&r, buf, sizeof buf);
	sv_rd_copy(&r, four, 4);
	T_MEM(buf, four, 4);
	sv_rd_seek(&r, sizeof buf - 2);
	sv_rd_copy(&r, four, 4);
	T_UINT(0, four[0] | four[1] | four[2] | four[3]);
	/* init_at past the end fails at once. */
	sv_rd_init_at(&r, buf, 4, 5);
	T_OK(!sv_rd_ok(&r));
}

int main(void)
{
	in_bounds();
	exact_end();
	overflow();
	sticky();
	seeks();
	widths();
	leb();
	vlq();
	reasons();
	return t_done();
}
