/*
 * test_rd.c - the bounded reader (core/rd.c): in-bounds reads, byte order,
 * overflow-checked bounds, sticky failure with the first failing offset,
 * seeks.
 */
#include "rd.h"
#include "t.h"

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

int main(void)
{
	in_bounds();
	exact_end();
	overflow();
	sticky();
	seeks();
	return t_done();
}
