/*
 * sbon.c - VLQs, SBON and versioned JSON (see sbon.h for the layout).
 *
 * Invariants: every byte comes through the bounded reader; a count is
 * checked against the bytes left before anything is allocated for it;
 * recursion stops at SV_SBON_MAX_DEPTH; a failure leaves no partial value
 * behind (what was built is released).
 */
#include "sbon.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* "byte N: what" for the reader's current offset (or its failure's). */
static int bad(struct sv_rd *r, size_t at, struct sv_err *err, const char *what)
{
	return sv_err_set(err, -EBADMSG, "byte %zu: %s", sv_rd_ok(r) ? at : r->fail_off, what);
}

int sv_vlq_read(struct sv_rd *r, uint64_t *out, struct sv_err *err)
{
	*out = sv_rd_vlq(r);
	return sv_rd_ok(r) ? 0 : sv_rd_error(r, err, -EBADMSG, NULL, "a number runs past the end");
}

int sv_svlq_read(struct sv_rd *r, int64_t *out, struct sv_err *err)
{
	*out = sv_rd_svlq(r);
	return sv_rd_ok(r) ? 0 : sv_rd_error(r, err, -EBADMSG, NULL, "a number runs past the end");
}

/* A VLQ count of things that take at least one byte each. */
static int read_count(struct sv_rd *r, uint64_t *n, struct sv_err *err)
{
	size_t at = r->off;
	int rc = sv_vlq_read(r, n, err);
	if (!rc && *n > sv_rd_left(r))
		rc = bad(r, at, err, "a count larger than the bytes that follow");
	return rc;
}

/* A string: VLQ length + UTF-8 bytes, as a new jansson string. */
static int read_string(struct sv_rd *r, json_t **out, struct sv_err *err)
{
	size_t at = r->off;
	uint64_t n;
	int rc = read_count(r, &n, err);
	if (rc)
		return rc;
	if (n > SV_SBON_MAX_STRING) {
		char what[96];
		snprintf(what, sizeof what, "a string of %llu bytes, more than the %u one value may "
			 "hold", (unsigned long long)n, SV_SBON_MAX_STRING);
		return bad(r, at, err, what);
	}
	const uint8_t *p = sv_rd_bytes(r, (size_t)n);
	if (!p)
		return bad(r, at, err, "a string runs past the end");
	*out = json_stringn((const char *)p, (size_t)n);
	if (!*out)
		return bad(r, at, err, "a string that is not UTF-8");
	return 0;
}

static int read_value(struct sv_rd *r, json_t **out, unsigned depth, struct sv_err *err);

/* An object's body: VLQ n, then n x (string key, value). */
static int read_object(struct sv_rd *r, json_t **out, unsigned depth, struct sv_err *err)
{
	uint64_t n;
	int rc = read_count(r, &n, err);
	if (rc)
		return rc;
	json_t *o = json_object();
	if (!o)
		return -ENOMEM;
	for (uint64_t i = 0; i < n && !rc; i++) {
		json_t *k = NULL, *v = NULL;
		size_t kat = r->off;
		rc = read_string(r, &k, err);
		if (!rc)
			rc = read_value(r, &v, depth + 1, err);
		if (!rc && json_object_getn(o, json_string_value(k), json_string_length(k)))
			rc = bad(r, kat, err, "a key twice in one object");
		if (!rc) {
			/* The value is the object's now, even if this fails. */
			if (json_object_setn_new(o, json_string_value(k), json_string_length(k), v))
				rc = -ENOMEM;
			v = NULL;
		}
		json_decref(v);
		json_decref(k);
	}
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

static int read_value(struct sv_rd *r, json_t **out, unsigned depth, struct sv_err *err)
{
	size_t at = r->off;
	*out = NULL;
	if (depth > SV_SBON_MAX_DEPTH)
		return bad(r, at, err, "nested too deep");
	uint8_t type = sv_rd_u8(r);
	if (!sv_rd_ok(r))
		return bad(r, at, err, "a value runs past the end");
	int rc = 0;
	switch (type) {
	case 0:
	case 1:
		*out = json_null();
		return 0;
	case 2: {
		const uint8_t *p = sv_rd_bytes(r, 8);
		if (!p)
			return bad(r, at, err, "a double runs past the end");
		uint64_t u = sv_get_be(p, 8);
		double d;
		memcpy(&d, &u, sizeof d);
		if (!isfinite(d)) {
			/* JSON has no NaN or infinity: kept bit for bit in a marker. */
			char bits[17];
			snprintf(bits, sizeof bits, "%016llx", (unsigned long long)u);
			*out = json_pack("{ss}", SV_SBON_DOUBLE, bits);
			break;
		}
		*out = json_real(d);
		break;
	}
	case 3: {
		uint8_t v = sv_rd_u8(r);
		if (!sv_rd_ok(r))
			return bad(r, at, err, "a bool runs past the end");
		*out = json_boolean(v != 0);
		return 0;
	}
	case 4: {
		int64_t v;
		rc = sv_svlq_read(r, &v, err);
		if (rc)
			return rc;
		*out = json_integer((json_int_t)v);
		break;
	}
	case 5:
		return read_string(r, out, err);
	case 6: {
		uint64_t n;
		if ((rc = read_count(r, &n, err)))
			return rc;
		json_t *a = json_array();
		if (!a)
			return -ENOMEM;
		for (uint64_t i = 0; i < n && !rc; i++) {
			json_t *v;
			rc = read_value(r, &v, depth + 1, err);
			if (!rc && json_array_append_new(a, v))
				rc = -ENOMEM;
		}
		if (rc) {
			json_decref(a);
			return rc;
		}
		*out = a;
		return 0;
	}
	case 7:
		return read_object(r, out, depth, err);
	default: {
		char what[48];
		snprintf(what, sizeof what, "an unknown value type %u", type);
		return bad(r, at, err, what);
	}
	}
	return *out ? 0 : -ENOMEM;
}

int sv_sbon_read(struct sv_rd *r, json_t **out, struct sv_err *err)
{
	return read_value(r, out, 0, err);
}

/* Steps over one value, as read_value reads it, building nothing. */
static int skip_value(struct sv_rd *r, unsigned depth, struct sv_err *err)
{
	size_t at = r->off;
	if (depth > SV_SBON_MAX_DEPTH)
		return bad(r, at, err, "nested too deep");
	uint8_t type = sv_rd_u8(r);
	if (!sv_rd_ok(r))
		return bad(r, at, err, "a value runs past the end");
	uint64_t n;
	int64_t v;
	int rc = 0;
	switch (type) {
	case 0:
	case 1:
		return 0;
	case 2:
		return sv_rd_bytes(r, 8) ? 0 : bad(r, at, err, "a double runs past the end");
	case 3:
		sv_rd_u8(r);
		return sv_rd_ok(r) ? 0 : bad(r, at, err, "a bool runs past the end");
	case 4:
		return sv_svlq_read(r, &v, err);
	case 5:
		if ((rc = read_count(r, &n, err)))
			return rc;
		return sv_rd_bytes(r, (size_t)n) ? 0 : bad(r, at, err, "a string runs past the end");
	case 6:
		if ((rc = read_count(r, &n, err)))
			return rc;
		for (uint64_t i = 0; i < n && !rc; i++)
			rc = skip_value(r, depth + 1, err);
		return rc;
	case 7:
		if ((rc = read_count(r, &n, err)))
			return rc;
		for (uint64_t i = 0; i < n && !rc; i++) {
			uint64_t k;
			size_t kat = r->off;
			rc = read_count(r, &k, err);
			if (!rc && !sv_rd_bytes(r, (size_t)k))
				rc = bad(r, kat, err, "a string runs past the end");
			if (!rc)
				rc = skip_value(r, depth + 1, err);
		}
		return rc;
	default: {
		char what[48];
		snprintf(what, sizeof what, "an unknown value type %u", type);
		return bad(r, at, err, what);
	}
	}
}

int sv_vjson_get(const uint8_t *p, size_t n, const char *key, json_t **out,
		 struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	*out = NULL;
	uint64_t len;
	int rc = read_count(&r, &len, err);
	if (!rc && !sv_rd_bytes(&r, (size_t)len))
		rc = bad(&r, 0, err, "a string runs past the end");
	if (rc)
		return rc;
	if (sv_rd_u8(&r))
		sv_rd_u32be(&r);
	size_t at = r.off;
	uint8_t type = sv_rd_u8(&r);
	if (!sv_rd_ok(&r))
		return bad(&r, at, err, "a versioned value runs past the end");
	if (type != 7)
		return 0;
	uint64_t count;
	if ((rc = read_count(&r, &count, err)))
		return rc;
	size_t klen = strlen(key);
	for (uint64_t i = 0; i < count && !rc; i++) {
		uint64_t k;
		size_t kat = r.off;
		rc = read_count(&r, &k, err);
		const uint8_t *name = rc ? NULL : sv_rd_bytes(&r, (size_t)k);
		if (!rc && !name)
			rc = bad(&r, kat, err, "a string runs past the end");
		if (rc)
			break;
		if (k == klen && !memcmp(name, key, klen))
			return read_value(&r, out, 1, err);
		rc = skip_value(&r, 1, err);
	}
	return rc;
}

static int put_string(struct sv_buf *b, const char *s, size_t n)
{
	int rc = sv_put_vlq(b, n);
	return rc ? rc : sv_buf_add(b, s, n);
}

static int write_value(struct sv_buf *b, const json_t *v, unsigned depth, struct sv_err *err);

static int write_object(struct sv_buf *b, const json_t *v, unsigned depth, struct sv_err *err)
{
	int rc = sv_put_vlq(b, json_object_size(v));
	const char *k;
	size_t klen;
	json_t *x;
	json_object_keylen_foreach((json_t *)v, k, klen, x) {
		if (!rc)
			rc = put_string(b, k, klen);
		if (!rc)
			rc = write_value(b, x, depth + 1, err);
	}
	return rc;
}

static int write_value(struct sv_buf *b, const json_t *v, unsigned depth, struct sv_err *err)
{
	if (depth > SV_SBON_MAX_DEPTH)
		return sv_err_set(err, -EINVAL, "nested deeper than %d", SV_SBON_MAX_DEPTH);
	uint8_t t;
	int rc;
	switch (json_typeof(v)) {
	case JSON_NULL:
		t = 1;
		return sv_buf_add(b, &t, 1);
	case JSON_REAL: {
		double d = json_real_value(v);
		if (!isfinite(d))
			return sv_err_set(err, -EINVAL, "a number that is not finite");
		uint64_t u;
		memcpy(&u, &d, sizeof u);
		uint8_t p[9] = {2};
		for (int i = 0; i < 8; i++)
			p[1 + i] = (uint8_t)(u >> (56 - 8 * i));
		return sv_buf_add(b, p, sizeof p);
	}
	case JSON_TRUE:
	case JSON_FALSE: {
		uint8_t p[2] = {3, json_is_true(v)};
		return sv_buf_add(b, p, sizeof p);
	}
	case JSON_INTEGER:
		t = 4;
		rc = sv_buf_add(b, &t, 1);
		return rc ? rc : sv_put_svlq(b, (int64_t)json_integer_value(v));
	case JSON_STRING:
		t = 5;
		rc = sv_buf_add(b, &t, 1);
		return rc ? rc : put_string(b, json_string_value(v), json_string_length(v));
	case JSON_ARRAY: {
		t = 6;
		rc = sv_buf_add(b, &t, 1);
		if (!rc)
			rc = sv_put_vlq(b, json_array_size(v));
		for (size_t i = 0; !rc && i < json_array_size(v); i++)
			rc = write_value(b, json_array_get(v, i), depth + 1, err);
		return rc;
	}
	case JSON_OBJECT: {
		const char *bits = json_string_value(json_object_get(v, SV_SBON_DOUBLE));
		if (!bits || json_object_size(v) != 1)
			goto object;
		uint64_t u = 0;
		size_t k = 0;
		for (; bits[k] && k < 16; k++) {
			char c = bits[k];
			int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (d < 0)
				break;
			u = u << 4 | (uint64_t)d;
		}
		if (k != 16 || bits[k])
			return sv_err_set(err, -EINVAL, "\"%s\" holds a double's 64 bits as 16 "
					  "lower-case hex digits", SV_SBON_DOUBLE);
		uint8_t p[9] = {2};
		for (int i = 0; i < 8; i++)
			p[1 + i] = (uint8_t)(u >> (56 - 8 * i));
		return sv_buf_add(b, p, sizeof p);
	}
	object:
		t = 7;
		rc = sv_buf_add(b, &t, 1);
		return rc ? rc : write_object(b, v, depth, err);
	}
	return sv_err_set(err, -EINVAL, "a value of an unknown kind");
}

int sv_sbon_write(struct sv_buf *b, const json_t *v, struct sv_err *err)
{
	int rc = write_value(b, v, 0, err);
	return rc == -ENOMEM ? sv_err_set(err, rc, "out of memory") : rc;
}

int sv_vjson_read(struct sv_rd *r, json_t **out, struct sv_err *err)
{
	json_t *id = NULL, *content = NULL, *o = NULL;
	size_t at = r->off;
	int rc = read_string(r, &id, err);
	if (rc)
		return rc;
	uint8_t has = sv_rd_u8(r);
	uint32_t version = has ? sv_rd_u32be(r) : 0;
	if (!sv_rd_ok(r))
		rc = bad(r, at, err, "a versioned value runs past the end");
	if (!rc)
		rc = read_value(r, &content, 0, err);
	if (!rc && !(o = json_object()))
		rc = -ENOMEM;
	if (!rc && (json_object_set(o, "id", id) ||
		    (has && json_object_set_new(o, "version", json_integer(version))) ||
		    json_object_set(o, "content", content)))
		rc = -ENOMEM;
	json_decref(id);
	json_decref(content);
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

int sv_vjson_write(struct sv_buf *b, const json_t *v, struct sv_err *err)
{
	const json_t *id = json_object_get(v, "id"), *ver = json_object_get(v, "version");
	const json_t *content = json_object_get(v, "content");
	if (!json_is_object(v) || !json_is_string(id) || !content)
		return sv_err_set(err, -EINVAL, "a versioned value needs \"id\" (a string) and "
				  "\"content\"");
	if (ver && (!json_is_integer(ver) || json_integer_value(ver) < 0 ||
		    json_integer_value(ver) > 0xffffffffll))
		return sv_err_set(err, -EINVAL, "\"version\" must be an integer from 0 to 4294967295");
	int rc = put_string(b, json_string_value(id), json_string_length(id));
	uint8_t p[5] = {ver != NULL};
	if (ver) {
		uint32_t x = (uint32_t)json_integer_value(ver);
		p[1] = (uint8_t)(x >> 24);
		p[2] = (uint8_t)(x >> 16);
		p[3] = (uint8_t)(x >> 8);
		p[4] = (uint8_t)x;
	}
	if (!rc)
		rc = sv_buf_add(b, p, ver ? 5 : 1);
	if (rc)
		return sv_err_set(err, rc, "out of memory");
	return sv_sbon_write(b, content, err);
}

int sv_sbon_read_map(struct sv_rd *r, json_t **out, struct sv_err *err)
{
	int rc = read_object(r, out, 0, err);
	return rc == -ENOMEM ? sv_err_set(err, rc, "out of memory") : rc;
}

int sv_sbon_write_map(struct sv_buf *b, const json_t *v, struct sv_err *err)
{
	if (!json_is_object(v))
		return sv_err_set(err, -EINVAL, "an object was expected");
	int rc = write_object(b, v, 0, err);
	return rc == -ENOMEM ? sv_err_set(err, rc, "out of memory") : rc;
}

int sv_sbon_read_string(struct sv_rd *r, json_t **out, struct sv_err *err)
{
	return read_string(r, out, err);
}

int sv_sbon_write_string(struct sv_buf *b, const char *s, size_t n)
{
	return put_string(b, s, n);
}
