/*
 * test_sbon.c - Starbound's VLQs, SBON and versioned JSON (core/fmt/starbound/sbon.c):
 * hand-assembled bytes read to the JSON they hold and written back to the
 * same bytes, key order and doubles kept bit for bit, and every malformed
 * input refused with its exact message.
 */
#include "fmt/starbound/sbon.h"
#include "t.h"

#include <errno.h>
#include <stdlib.h>

/* Reads one SBON value from p[0..n) and returns it compact (NULL on error,
 * the reason in err). */
static char *read_dump(const void *p, size_t n, struct sv_err *err, size_t *used)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	json_t *v = NULL;
	sv_err_clear(err);
	if (sv_sbon_read(&r, &v, err))
		return NULL;
	*used = r.off;
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
				    JSON_REAL_PRECISION(17));
	json_decref(v);
	return s;
}

/* p[0..n) reads as the JSON `want` and writes back to the same bytes. */
static void round_trip(const void *p, size_t n, const char *want)
{
	struct sv_err err;
	size_t used = 0;
	char *got = read_dump(p, n, &err, &used);
	T_STR(want, got);
	T_UINT(n, used);
	free(got);
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	json_t *v = NULL;
	if (sv_sbon_read(&r, &v, &err))
		return;
	struct sv_buf b;
	sv_buf_init(&b);
	T_INT(0, sv_sbon_write(&b, v, &err));
	T_UINT(n, b.len);
	if (b.len == n)
		T_MEM(p, b.p, n);
	sv_buf_fini(&b);
	json_decref(v);
}

static void refused(const void *p, size_t n, const char *msg)
{
	struct sv_err err;
	size_t used;
	char *got = read_dump(p, n, &err, &used);
	T_OK(got == NULL);
	free(got);
	T_INT(-EBADMSG, err.code);
	T_STR(msg, err.msg);
}

static void vlq(void)
{
	static const struct {
		uint64_t v;
		const char *bytes;
		size_t n;
	} cases[] = {
		{0, "\x00", 1},
		{127, "\x7f", 1},
		{128, "\x81\x00", 2},
		{300, "\x82\x2c", 2},
		{16384, "\x81\x80\x00", 3},
		{UINT64_MAX, "\x81\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct sv_buf b;
		sv_buf_init(&b);
		T_INT(0, sv_put_vlq(&b, cases[i].v));
		T_UINT(cases[i].n, b.len);
		T_MEM(cases[i].bytes, b.p, cases[i].n);
		struct sv_rd r;
		sv_rd_init(&r, cases[i].bytes, cases[i].n);
		uint64_t got = 1;
		struct sv_err err;
		T_INT(0, sv_vlq_read(&r, &got, &err));
		T_UINT(cases[i].v, got);
		sv_buf_fini(&b);
	}
	static const int64_t s[] = {0, -1, 1, -2, 2, 1000, -1000, INT64_MAX, INT64_MIN};
	static const uint64_t su[] = {0, 1, 2, 3, 4, 2000, 1999, UINT64_MAX - 1, UINT64_MAX};
	for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
		struct sv_buf b, u;
		sv_buf_init(&b);
		sv_buf_init(&u);
		T_INT(0, sv_put_svlq(&b, s[i]));
		T_INT(0, sv_put_vlq(&u, su[i]));
		T_UINT(u.len, b.len);
		T_MEM(u.p, b.p, u.len);
		struct sv_rd r;
		sv_rd_init(&r, b.p, b.len);
		int64_t got = 7;
		struct sv_err err;
		T_INT(0, sv_svlq_read(&r, &got, &err));
		T_INT(s[i], got);
		sv_buf_fini(&b);
		sv_buf_fini(&u);
	}
	struct sv_rd r;
	uint64_t v;
	struct sv_err err;
	sv_rd_init(&r, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00", 11);
	T_INT(-EBADMSG, sv_vlq_read(&r, &v, &err));
	T_STR("byte 0: a number of more than 10 bytes", err.msg);
	sv_rd_init(&r, "\x82\x80\x80\x80\x80\x80\x80\x80\x80\x00", 10);
	T_INT(-EBADMSG, sv_vlq_read(&r, &v, &err));
	T_STR("byte 0: a number larger than 64 bits", err.msg);
	sv_rd_init(&r, "\x81\x80", 2);
	T_INT(-EBADMSG, sv_vlq_read(&r, &v, &err));
	T_STR("byte 2: a number runs past the end", err.msg);
}

static void values(void)
{
	round_trip("\x01", 1, "null");
	round_trip("\x03\x01", 2, "true");
	round_trip("\x03\x00", 2, "false");
	round_trip("\x04\x00", 2, "0");
	round_trip("\x04\x03", 2, "-2");
	round_trip("\x04\x8f\x50", 3, "1000");
	round_trip("\x05\x00", 2, "\"\"");
	round_trip("\x05\x03h\xc3\xa9", 5, "\"h\xc3\xa9\"");
	/* 1.5 and 0.1: doubles come back bit for bit. */
	round_trip("\x02\x3f\xf8\x00\x00\x00\x00\x00\x00", 9, "1.5");
	round_trip("\x02\x3f\xb9\x99\x99\x99\x99\x99\x9a", 9, "0.10000000000000001");
	/* {"z": [true, null, 1.5, "x"], "a": {}, "m": 7}: key order kept. */
	static const uint8_t obj[] = {
		7, 3,
		1, 'z', 6, 4, 3, 1, 1, 2, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 5, 1, 'x',
		1, 'a', 7, 0,
		1, 'm', 4, 14,
	};
	round_trip(obj, sizeof obj, "{\"z\":[true,null,1.5,\"x\"],\"a\":{},\"m\":7}");
	/* Type 0 reads as null (and is written back as 1). */
	struct sv_err err;
	size_t used;
	char *got = read_dump("\x00", 1, &err, &used);
	T_STR("null", got);
	free(got);
}

static void malformed(void)
{
	refused("", 0, "byte 0: a value runs past the end");
	refused("\x09", 1, "byte 0: an unknown value type 9");
	refused("\x02\x3f\xf8", 3, "byte 1: a double runs past the end");
	/* NaN (with a payload, as real worlds have) and infinity: kept bit
	 * for bit in a marker object; a marker that is not 16 hex digits is
	 * refused on the way back. */
	round_trip("\x02\x7f\xf9\x59\x7f\xe0\x00\x00\x00", 9, "{\"$double\":\"7ff9597fe0000000\"}");
	round_trip("\x02\xff\xf0\x00\x00\x00\x00\x00\x00", 9, "{\"$double\":\"fff0000000000000\"}");
	{
		json_t *v = json_pack("{ss}", "$double", "7ff8");
		struct sv_buf b;
		struct sv_err err;
		sv_buf_init(&b);
		T_INT(-EINVAL, sv_sbon_write(&b, v, &err));
		T_STR("\"$double\" holds a double's 64 bits as 16 lower-case hex digits", err.msg);
		sv_buf_fini(&b);
		json_decref(v);
	}
	refused("\x03", 1, "byte 1: a bool runs past the end");
	refused("\x05\x05" "abc", 5, "byte 1: a count larger than the bytes that follow");
	refused("\x05\x02\xff\xfe", 4, "byte 1: a string that is not UTF-8");
	refused("\x06\x83\x00", 3, "byte 1: a count larger than the bytes that follow");
	refused("\x06\x01\x05", 3, "byte 3: a number runs past the end");
	refused("\x07\x02\x01" "a\x01\x01" "a\x01", 8, "byte 5: a key twice in one object");
	refused("\x07\x01\x01" "a\x09", 5, "byte 4: an unknown value type 9");
	/* A million arrays, one inside the other: refused at the depth limit,
	 * long before the end, without deep recursion. */
	size_t n = 2000000;
	uint8_t *deep = malloc(n + 1);
	for (size_t i = 0; i < n; i += 2) {
		deep[i] = 6;
		deep[i + 1] = 1;
	}
	deep[n] = 1;
	char want[64];
	snprintf(want, sizeof want, "byte %d: nested too deep", 2 * (SV_SBON_MAX_DEPTH + 1));
	refused(deep, n + 1, want);
	free(deep);
}

static void versioned(void)
{
	/* "WorldMetadata", version 7, {"a": 1}. */
	static const uint8_t vj[] = {13, 'W', 'o', 'r', 'l', 'd', 'M', 'e', 't', 'a', 'd', 'a', 't',
				     'a', 1, 0, 0, 0, 7, 7, 1, 1, 'a', 4, 2};
	struct sv_rd r;
	sv_rd_init(&r, vj, sizeof vj);
	json_t *v = NULL;
	struct sv_err err;
	T_INT(0, sv_vjson_read(&r, &v, &err));
	T_UINT(sizeof vj, r.off);
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	T_STR("{\"id\":\"WorldMetadata\",\"version\":7,\"content\":{\"a\":1}}", s);
	free(s);
	struct sv_buf b;
	sv_buf_init(&b);
	T_INT(0, sv_vjson_write(&b, v, &err));
	T_UINT(sizeof vj, b.len);
	T_MEM(vj, b.p, sizeof vj);
	json_decref(v);
	/* Without a version. */
	static const uint8_t nv[] = {1, 'X', 0, 1};
	sv_rd_init(&r, nv, sizeof nv);
	T_INT(0, sv_vjson_read(&r, &v, &err));
	s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	T_STR("{\"id\":\"X\",\"content\":null}", s);
	free(s);
	b.len = 0;
	T_INT(0, sv_vjson_write(&b, v, &err));
	T_UINT(sizeof nv, b.len);
	T_MEM(nv, b.p, sizeof nv);
	json_decref(v);
	/* Refusals. */
	sv_rd_init(&r, "\x01X\x01\x00\x00", 5);
	T_INT(-EBADMSG, sv_vjson_read(&r, &v, &err));
	T_STR("byte 3: a versioned value runs past the end", err.msg);
	json_t *bad = json_pack("{s:i,s:n}", "id", 3, "content");
	T_INT(-EINVAL, sv_vjson_write(&b, bad, &err));
	T_STR("a versioned value needs \"id\" (a string) and \"content\"", err.msg);
	json_decref(bad);
	bad = json_pack("{s:s,s:I,s:n}", "id", "X", "version", (json_int_t)1 << 33, "content");
	T_INT(-EINVAL, sv_vjson_write(&b, bad, &err));
	T_STR("\"version\" must be an integer from 0 to 4294967295", err.msg);
	json_decref(bad);
	sv_buf_fini(&b);
}

/* One key of a versioned value's content, the rest stepped over. */
static void get_key(void)
{
	json_t *v = json_pack("{s:s,s:i,s:{s:[f,s,{s:b}],s:n,s:s,s:[i,i]}}", "id", "CelestialChunk",
			      "version", 1, "content", "objects", 1.5, "x", "deep", 1, "nil",
			      "name", "sys", "chunkIndex", -3, 7);
	struct sv_buf b;
	struct sv_err err;
	sv_buf_init(&b);
	T_INT(0, sv_vjson_write(&b, v, &err));
	json_t *got = NULL;
	T_INT(0, sv_vjson_get(b.p, b.len, "chunkIndex", &got, &err));
	T_OK(got && json_equal(got, json_object_get(json_object_get(v, "content"), "chunkIndex")));
	json_decref(got);
	got = NULL;
	T_INT(0, sv_vjson_get(b.p, b.len, "absent", &got, &err));
	T_OK(got == NULL);
	/* Cut anywhere before the key's value: an error, never a read past. */
	for (size_t cut = 0; cut + 3 < b.len; cut++) {
		got = NULL;
		int rc = sv_vjson_get(b.p, cut, "chunkIndex", &got, &err);
		T_OK(rc == -EBADMSG || (rc == 0 && got == NULL));
		json_decref(got);
	}
	/* Content that is not an object has no keys. */
	json_object_set_new(v, "content", json_integer(5));
	b.len = 0;
	T_INT(0, sv_vjson_write(&b, v, &err));
	got = NULL;
	T_INT(0, sv_vjson_get(b.p, b.len, "chunkIndex", &got, &err));
	T_OK(got == NULL);
	sv_buf_fini(&b);
	json_decref(v);
}

int main(void)
{
	get_key();
	vlq();
	values();
	malformed();
	versioned();
	return t_done();
}
