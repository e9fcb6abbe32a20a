/*
 * nbt.c - network NBT read and written, and SNBT written and parsed
 * strictly (see nbt.h for both layouts and the rules).
 *
 * Strings convert between Java's modified UTF-8 (NUL as C0 80, characters
 * past U+FFFF as two 3-byte surrogates) and UTF-8; a lone surrogate stays
 * as its 3-byte form inside savefs and shows as \uXXXX in SNBT, so that
 * every string reads back as it was.
 */
#include "nbt.h"
#include "rd.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sv_nbt_fini(struct sv_nbt *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nkids; i++)
		sv_nbt_fini(&v->kids[i]);
	free(v->kids);
	free(v->name);
	if (v->type == SV_NBT_STRING)
		free(v->v.s.p);
	memset(v, 0, sizeof *v);
}

/* ---- modified UTF-8 <-> UTF-8 ------------------------------------------ */

static int put_utf8(struct sv_buf *b, uint32_t cp)
{
	uint8_t t[4];
	size_t n;
	if (cp < 0x80) {
		t[0] = (uint8_t)cp;
		n = 1;
	} else if (cp < 0x800) {
		t[0] = (uint8_t)(0xc0 | cp >> 6);
		t[1] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		t[0] = (uint8_t)(0xe0 | cp >> 12);
		t[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		t[2] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		t[0] = (uint8_t)(0xf0 | cp >> 18);
		t[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
		t[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		t[3] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return sv_buf_add(b, t, n);
}

/* One UTF-16 unit from modified UTF-8 at p[*i..n), or -1. */
static int32_t mutf8_unit(const uint8_t *p, size_t n, size_t *i)
{
	uint8_t c = p[*i];
	if (c < 0x80) {
		*i += 1;
		return c;
	}
	if ((c & 0xe0) == 0xc0 && *i + 1 < n && (p[*i + 1] & 0xc0) == 0x80) {
		int32_t u = (c & 0x1f) << 6 | (p[*i + 1] & 0x3f);
		*i += 2;
		return u;
	}
	if ((c & 0xf0) == 0xe0 && *i + 2 < n && (p[*i + 1] & 0xc0) == 0x80 &&
	    (p[*i + 2] & 0xc0) == 0x80) {
		int32_t u = (c & 0x0f) << 12 | (p[*i + 1] & 0x3f) << 6 | (p[*i + 2] & 0x3f);
		*i += 3;
		return u;
	}
	return -1;
}

/* Modified UTF-8 to UTF-8 (NUL-terminated in out).  -1 if malformed. */
static int from_mutf8(const uint8_t *p, size_t n, struct sv_buf *out)
{
	size_t i = 0;
	while (i < n) {
		int32_t u = mutf8_unit(p, n, &i);
		if (u < 0)
			return -1;
		if (u >= 0xd800 && u < 0xdc00 && i < n) {
			size_t j = i;
			int32_t lo = mutf8_unit(p, n, &j);
			if (lo >= 0xdc00 && lo < 0xe000) {
				i = j;
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
			}
		}
		if (put_utf8(out, (uint32_t)u))
			return -ENOMEM;
	}
	return sv_buf_add(out, "", 1) ? -ENOMEM : 0;
}

/* One code point of savefs's UTF-8 (lone surrogates included) at p[*i..n),
 * or -1. */
static int32_t utf8_cp(const uint8_t *p, size_t n, size_t *i)
{
	uint8_t c = p[*i];
	size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			(c & 0xf8) == 0xf0 ? 4 : 0;
	if (!k || *i + k > n)
		return -1;
	int32_t cp = k == 1 ? c : k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;
	for (size_t j = 1; j < k; j++) {
		if ((p[*i + j] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (p[*i + j] & 0x3f);
	}
	static const int32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < least[k] || cp > 0x10ffff)
		return -1;
	*i += k;
	return cp;
}

static int to_mutf8(const char *s, size_t n, struct sv_buf *out)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0;
	while (i < n) {
		int32_t cp = utf8_cp(p, n, &i);
		if (cp < 0)
			return -EINVAL;
		int rc;
		if (cp == 0)
			rc = sv_buf_add(out, "\xc0\x80", 2);
		else if (cp >= 0x10000) {
			uint32_t v = (uint32_t)cp - 0x10000;
			rc = put_utf8(out, 0xd800 + (v >> 10));
			if (!rc)
				rc = put_utf8(out, 0xdc00 + (v & 0x3ff));
		} else
			rc = put_utf8(out, (uint32_t)cp);
		if (rc)
			return -ENOMEM;
	}
	return 0;
}

/* ---- binary ------------------------------------------------------------- */

/* A failure's message: where it happened and what failed. */
static int bad(struct sv_rd *r, struct sv_err *err)
{
	return sv_rd_error(r, err, -EBADMSG, "nbt", "the value ends early");
}

static int read_string(struct sv_rd *r, char **s, size_t *len, struct sv_err *err)
{
	size_t n = sv_rd_u16be(r);
	const uint8_t *p = sv_rd_bytes(r, n);
	if (!p)
		return bad(r, err);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = from_mutf8(p, n, &b);
	if (rc) {
		sv_buf_fini(&b);
		if (rc == -ENOMEM)
			return sv_err_set(err, -ENOMEM, "out of memory");
		sv_rd_fail_at(r, r->off - n, "a string is not modified UTF-8");
		return bad(r, err);
	}
	*s = (char *)b.p;
	*len = b.len - 1;
	return 0;
}

/* The smallest payload of each type: bounds a count by the bytes left (an
 * array is its length alone when empty). */
static size_t min_size(uint8_t t)
{
	static const uint8_t sz[13] = {0, 1, 2, 4, 8, 4, 8, 4, 2, 5, 1, 4, 4};
	return t < 13 ? sz[t] : 1;
}

static int read_payload(struct sv_rd *r, uint8_t type, struct sv_nbt *v, int depth,
			struct sv_err *err);

static int read_kids(struct sv_rd *r, struct sv_nbt *v, uint8_t type, int64_t count, int depth,
		     struct sv_err *err)
{
	size_t ms = min_size(type);
	if (count < 0)
		sv_rd_fail(r, "a negative count");
	else if (ms && (uint64_t)count > sv_rd_left(r) / ms)
		sv_rd_fail(r, "a count larger than the bytes left");
	if (!sv_rd_ok(r) || count <= 0)
		return sv_rd_ok(r) ? 0 : bad(r, err);
	v->kids = calloc((size_t)count, sizeof *v->kids);
	if (!v->kids)
		return sv_err_set(err, -ENOMEM, "out of memory");
	for (int64_t i = 0; i < count; i++) {
		v->nkids++;
		int rc = read_payload(r, type, &v->kids[i], depth + 1, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int read_payload(struct sv_rd *r, uint8_t type, struct sv_nbt *v, int depth,
			struct sv_err *err)
{
	static const unsigned width[7] = {0, 1, 2, 4, 8, 4, 8};
	v->type = type;
	if (depth > SV_NBT_MAX_DEPTH) {
		sv_rd_fail(r, "nested deeper than 512");
		return bad(r, err);
	}
	switch (type) {
	case SV_NBT_BYTE:
	case SV_NBT_SHORT:
	case SV_NBT_INT:
	case SV_NBT_LONG:
		v->v.i = sv_rd_sbe(r, width[type]);
		return sv_rd_ok(r) ? 0 : bad(r, err);
	case SV_NBT_FLOAT:
		v->v.f = sv_rd_f32be(r);
		return sv_rd_ok(r) ? 0 : bad(r, err);
	case SV_NBT_DOUBLE:
		v->v.d = sv_rd_f64be(r);
		return sv_rd_ok(r) ? 0 : bad(r, err);
	case SV_NBT_STRING:
		return read_string(r, &v->v.s.p, &v->v.s.n, err);
	case SV_NBT_BYTES:
	case SV_NBT_INTS:
	case SV_NBT_LONGS: {
		int32_t n = (int32_t)sv_rd_u32be(r);
		if (!sv_rd_ok(r))
			return bad(r, err);
		uint8_t et = type == SV_NBT_BYTES ? SV_NBT_BYTE :
			     type == SV_NBT_INTS ? SV_NBT_INT : SV_NBT_LONG;
		v->elem = et;
		return read_kids(r, v, et, n, depth, err);
	}
	case SV_NBT_LIST: {
		if (!sv_rd_need(r, 5))
			return bad(r, err);
		size_t at = r->off;
		uint8_t et = sv_rd_u8(r);
		int32_t n = (int32_t)sv_rd_u32be(r);
		if (et > SV_NBT_LONGS)
			sv_rd_fail_at(r, at, "a list of an unknown tag type");
		else if (et == SV_NBT_END && n > 0)
			sv_rd_fail_at(r, at, "a list of end tags that is not empty");
		if (!sv_rd_ok(r))
			return bad(r, err);
		v->elem = et;
		return read_kids(r, v, et, n < 0 && et == SV_NBT_END ? 0 : n, depth, err);
	}
	case SV_NBT_COMPOUND: {
		size_t cap = 0;
		for (;;) {
			uint8_t t = sv_rd_u8(r);
			if (!sv_rd_ok(r))
				return bad(r, err);
			if (t == SV_NBT_END)
				return 0;
			if (t > SV_NBT_LONGS) {
				sv_rd_fail_at(r, r->off - 1, "an unknown tag type");
				return bad(r, err);
			}
			if (v->nkids == cap) {
				cap = cap ? cap * 2 : 4;
				struct sv_nbt *k = realloc(v->kids, cap * sizeof *k);
				if (!k)
					return sv_err_set(err, -ENOMEM, "out of memory");
				v->kids = k;
			}
			struct sv_nbt *m = &v->kids[v->nkids++];
			memset(m, 0, sizeof *m);
			int rc = read_string(r, &m->name, &m->name_len, err);
			if (!rc)
				rc = read_payload(r, t, m, depth + 1, err);
			if (rc)
				return rc;
		}
	}
	case SV_NBT_END:
		return 0;
	}
	sv_rd_fail(r, "an unknown tag type");
	return bad(r, err);
}

static int read_at(const uint8_t *p, size_t n, size_t off, uint8_t type,
		   struct sv_nbt *out, size_t *used, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init_at(&r, p, n, off);
	memset(out, 0, sizeof *out);
	int rc;
	if (type > SV_NBT_LONGS) {
		sv_rd_fail(&r, "an unknown tag type");
		rc = bad(&r, err);
	} else {
		rc = read_payload(&r, type, out, 0, err);
	}
	if (rc) {
		sv_nbt_fini(out);
		return rc;
	}
	*used = r.off;
	return 0;
}

int sv_nbt_read_payload(const uint8_t *p, size_t n, uint8_t type, struct sv_nbt *out,
			size_t *used, struct sv_err *err)
{
	return read_at(p, n, 0, type, out, used, err);
}

int sv_nbt_read(const uint8_t *p, size_t n, struct sv_nbt *out, size_t *used,
		struct sv_err *err)
{
	memset(out, 0, sizeof *out);
	if (!n)
		return sv_err_set(err, -EBADMSG, "nbt: byte 0: no type byte");
	return read_at(p, n, 1, p[0], out, used, err);
}

static int put_be(struct sv_buf *b, uint64_t v, int n)
{
	uint8_t t[8];
	sv_put_be(t, v, (unsigned)n);
	return sv_buf_add(b, t, (size_t)n);
}

static int write_string(struct sv_buf *b, const char *s, size_t n)
{
	struct sv_buf m;
	sv_buf_init(&m);
	int rc = to_mutf8(s, n, &m);
	if (!rc && m.len > 0xffff)
		rc = -EINVAL;
	if (!rc)
		rc = put_be(b, m.len, 2) || sv_buf_add(b, m.p, m.len) ? -ENOMEM : 0;
	sv_buf_fini(&m);
	return rc;
}

static int write_payload(struct sv_buf *b, const struct sv_nbt *v)
{
	static const int width[7] = {0, 1, 2, 4, 8, 4, 8};
	int rc = 0;
	switch (v->type) {
	case SV_NBT_BYTE:
	case SV_NBT_SHORT:
	case SV_NBT_INT:
	case SV_NBT_LONG:
		return put_be(b, (uint64_t)v->v.i, width[v->type]);
	case SV_NBT_FLOAT: {
		uint32_t u;
		memcpy(&u, &v->v.f, 4);
		return put_be(b, u, 4);
	}
	case SV_NBT_DOUBLE: {
		uint64_t u;
		memcpy(&u, &v->v.d, 8);
		return put_be(b, u, 8);
	}
	case SV_NBT_STRING:
		return write_string(b, v->v.s.p, v->v.s.n);
	case SV_NBT_LIST:
		rc = sv_buf_add(b, &v->elem, 1);
		/* fall through */
	case SV_NBT_BYTES:
	case SV_NBT_INTS:
	case SV_NBT_LONGS:
		if (rc || v->nkids > INT32_MAX || put_be(b, v->nkids, 4))
			return -ENOMEM;
		for (size_t i = 0; i < v->nkids && !rc; i++)
			rc = write_payload(b, &v->kids[i]);
		return rc;
	case SV_NBT_COMPOUND:
		for (size_t i = 0; i < v->nkids && !rc; i++) {
			const struct sv_nbt *m = &v->kids[i];
			rc = sv_buf_add(b, &m->type, 1);
			if (!rc)
				rc = write_string(b, m->name ? m->name : "", m->name_len);
			if (!rc)
				rc = write_payload(b, m);
		}
		return rc ? rc : sv_buf_add(b, "", 1);
	}
	return 0;
}

int sv_nbt_write(struct sv_buf *b, const struct sv_nbt *v)
{
	if (sv_buf_add(b, &v->type, 1))
		return -ENOMEM;
	return write_payload(b, v);
}

/* ---- SNBT out ----------------------------------------------------------- */

static bool bare_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       c == '_' || c == '.' || c == '+' || c == '-';
}

static int quote(struct sv_buf *b, const char *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s;
	int rc = sv_buf_add(b, "\"", 1);
	size_t i = 0;
	while (i < n && !rc) {
		size_t at = i;
		int32_t cp = utf8_cp(p, n, &i);
		if (cp < 0) { /* cannot happen for strings read here */
			i = at + 1;
			rc = sv_buf_printf(b, "\\u%04x", p[at]);
			continue;
		}
		switch (cp) {
		case '"': rc = sv_buf_add(b, "\\\"", 2); break;
		case '\\': rc = sv_buf_add(b, "\\\\", 2); break;
		case '\n': rc = sv_buf_add(b, "\\n", 2); break;
		case '\t': rc = sv_buf_add(b, "\\t", 2); break;
		case '\r': rc = sv_buf_add(b, "\\r", 2); break;
		case '\b': rc = sv_buf_add(b, "\\b", 2); break;
		case '\f': rc = sv_buf_add(b, "\\f", 2); break;
		default:
			if (cp < 0x20 || cp == 0x7f || (cp >= 0xd800 && cp < 0xe000))
				rc = sv_buf_printf(b, "\\u%04x", (unsigned)cp);
			else
				rc = sv_buf_add(b, p + at, i - at);
		}
	}
	return rc ? rc : sv_buf_add(b, "\"", 1);
}

static int key_out(struct sv_buf *b, const char *s, size_t n)
{
	bool bare = n > 0;
	for (size_t i = 0; i < n && bare; i++)
		bare = bare_char((unsigned char)s[i]);
	return bare ? sv_buf_add(b, s, n) : quote(b, s, n);
}

/* SNBT: the shortest decimal, always with a point or an exponent, and the
 * type's suffix. */
static int real_out(struct sv_buf *b, double d, bool is_float)
{
	char t[48];
	char sfx = is_float ? 'f' : 'd';
	sv_shortest(t, d, is_float);
	if (!strpbrk(t, ".eNI"))
		strcat(t, ".0");
	return sv_buf_printf(b, "%s%c", t, sfx);
}

static int indent(struct sv_buf *b, int depth)
{
	int rc = sv_buf_add(b, "\n", 1);
	for (int i = 0; i < depth && !rc; i++)
		rc = sv_buf_add(b, "    ", 4);
	return rc;
}

static bool scalar(uint8_t t)
{
	return t != SV_NBT_LIST && t != SV_NBT_COMPOUND && t != SV_NBT_BYTES &&
	       t != SV_NBT_INTS && t != SV_NBT_LONGS;
}

static int snbt_out(struct sv_buf *b, const struct sv_nbt *v, bool pretty, int depth)
{
	int rc = 0;
	switch (v->type) {
	case SV_NBT_END: /* no value at all (a lone end tag): no text */
		return 0;
	case SV_NBT_BYTE:
		return sv_buf_printf(b, "%lldb", (long long)v->v.i);
	case SV_NBT_SHORT:
		return sv_buf_printf(b, "%llds", (long long)v->v.i);
	case SV_NBT_INT:
		return sv_buf_printf(b, "%lld", (long long)v->v.i);
	case SV_NBT_LONG:
		return sv_buf_printf(b, "%lldL", (long long)v->v.i);
	case SV_NBT_FLOAT:
		return real_out(b, v->v.f, true);
	case SV_NBT_DOUBLE:
		return real_out(b, v->v.d, false);
	case SV_NBT_STRING:
		return quote(b, v->v.s.p, v->v.s.n);
	case SV_NBT_BYTES:
	case SV_NBT_INTS:
	case SV_NBT_LONGS:
		rc = sv_buf_printf(b, "[%c;", v->type == SV_NBT_BYTES ? 'B' :
					     v->type == SV_NBT_INTS ? 'I' : 'L');
		for (size_t i = 0; i < v->nkids && !rc; i++) {
			rc = pretty ? sv_buf_add(b, i ? ", " : " ", i ? 2 : 1)
				    : i ? sv_buf_add(b, ",", 1) : 0;
			if (!rc)
				rc = snbt_out(b, &v->kids[i], pretty, depth + 1);
		}
		return rc ? rc : sv_buf_add(b, "]", 1);
	case SV_NBT_LIST: {
		bool lines = pretty && v->nkids && !scalar(v->elem);
		rc = sv_buf_add(b, "[", 1);
		for (size_t i = 0; i < v->nkids && !rc; i++) {
			if (i)
				rc = sv_buf_add(b, ",", 1);
			if (!rc)
				rc = lines ? indent(b, depth + 1) : i && pretty ? sv_buf_add(b, " ", 1) : 0;
			if (!rc)
				rc = snbt_out(b, &v->kids[i], pretty, depth + 1);
		}
		if (!rc && lines)
			rc = indent(b, depth);
		return rc ? rc : sv_buf_add(b, "]", 1);
	}
	case SV_NBT_COMPOUND: {
		bool lines = pretty && v->nkids;
		rc = sv_buf_add(b, "{", 1);
		for (size_t i = 0; i < v->nkids && !rc; i++) {
			if (i)
				rc = sv_buf_add(b, ",", 1);
			if (!rc)
				rc = lines ? indent(b, depth + 1) : 0;
			if (!rc)
				rc = key_out(b, v->kids[i].name ? v->kids[i].name : "",
					     v->kids[i].name_len);
			if (!rc)
				rc = sv_buf_add(b, ": ", pretty ? 2 : 1);
			if (!rc)
				rc = snbt_out(b, &v->kids[i], pretty, depth + 1);
		}
		if (!rc && lines)
			rc = indent(b, depth);
		return rc ? rc : sv_buf_add(b, "}", 1);
	}
	}
	return -EINVAL;
}

int sv_snbt_write(struct sv_buf *b, const struct sv_nbt *v, bool pretty)
{
	int rc = snbt_out(b, v, pretty, 0);
	if (!rc && pretty)
		rc = sv_buf_add(b, "\n", 1);
	return rc ? -ENOMEM : 0;
}

/* ---- SNBT in ------------------------------------------------------------ */

struct ps {
	const char *p;
	size_t n, i;
	struct sv_err *err;
};

static int perr(struct ps *s, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(struct ps *s, size_t at, const char *fmt, ...)
{
	unsigned line = 1, col = 1;
	for (size_t k = 0; k < at && k < s->n; k++) {
		if (s->p[k] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)s->p[k] & 0xc0) != 0x80) {
			col++;
		}
	}
	char msg[SV_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sv_err_set(s->err, -EINVAL, "snbt: line %u, column %u: %s", line, col, msg);
}

static void ws(struct ps *s)
{
	while (s->i < s->n && (s->p[s->i] == ' ' || s->p[s->i] == '\t' || s->p[s->i] == '\n' ||
			       s->p[s->i] == '\r'))
		s->i++;
}

static int parse_string(struct ps *s, char **out, size_t *len)
{
	char q = s->p[s->i];
	size_t start = s->i++;
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	for (;;) {
		if (s->i >= s->n) {
			rc = perr(s, start, "a string that does not end");
			break;
		}
		unsigned char c = (unsigned char)s->p[s->i];
		if (c == (unsigned char)q) {
			s->i++;
			break;
		}
		if (c == '\n' || c < 0x20) {
			rc = perr(s, s->i, "a control character inside a string (write it as \\n or \\uXXXX)");
			break;
		}
		if (c != '\\') {
			size_t at = s->i;
			if (utf8_cp((const uint8_t *)s->p, s->n, &s->i) < 0) {
				rc = perr(s, at, "text that is not UTF-8");
				break;
			}
			if (sv_buf_add(&b, s->p + at, s->i - at)) {
				rc = -ENOMEM;
				break;
			}
			continue;
		}
		if (s->i + 1 >= s->n) {
			rc = perr(s, s->i, "a string that does not end");
			break;
		}
		char e = s->p[s->i + 1];
		const char *plain = strchr("\"'\\nrtbf", e);
		if (plain && e) {
			static const char to[] = "\"'\\\n\r\t\b\f";
			rc = sv_buf_add(&b, &to[plain - "\"'\\nrtbf"], 1);
			s->i += 2;
			if (rc)
				break;
			continue;
		}
		if (e != 'u' || s->i + 6 > s->n) {
			rc = perr(s, s->i, "an unknown escape \\%c", e);
			break;
		}
		uint32_t u = 0;
		for (int k = 0; k < 4; k++) {
			int h = sv_hexval(s->p[s->i + 2 + (size_t)k]);
			if (h < 0) {
				rc = perr(s, s->i, "\\u needs four hex digits");
				break;
			}
			u = u << 4 | (uint32_t)h;
		}
		if (rc)
			break;
		s->i += 6;
		/* A surrogate pair written as two escapes is one character. */
		if (u >= 0xd800 && u < 0xdc00 && s->i + 6 <= s->n && s->p[s->i] == '\\' &&
		    s->p[s->i + 1] == 'u') {
			uint32_t lo = 0;
			bool ok = true;
			for (int k = 0; k < 4 && ok; k++) {
				int h = sv_hexval(s->p[s->i + 2 + (size_t)k]);
				ok = h >= 0;
				lo = lo << 4 | (uint32_t)(h & 15);
			}
			if (ok && lo >= 0xdc00 && lo < 0xe000) {
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
				s->i += 6;
			}
		}
		if (put_utf8(&b, u)) {
			rc = -ENOMEM;
			break;
		}
	}
	if (!rc && sv_buf_add(&b, "", 1))
		rc = -ENOMEM;
	if (rc) {
		sv_buf_fini(&b);
		return rc == -ENOMEM ? sv_err_set(s->err, -ENOMEM, "out of memory") : rc;
	}
	*out = (char *)b.p;
	*len = b.len - 1;
	return 0;
}

/* A bare token: [0-9A-Za-z_.+-]+.  Its length (0: none). */
static size_t token(struct ps *s)
{
	size_t k = s->i;
	while (k < s->n && bare_char((unsigned char)s->p[k]))
		k++;
	return k - s->i;
}

static int parse_number(struct ps *s, size_t len, struct sv_nbt *v)
{
	char t[80], whole[80];
	size_t at = s->i;
	if (len >= sizeof t)
		return perr(s, at, "a number too long");
	memcpy(t, s->p + s->i, len);
	t[len] = '\0';
	memcpy(whole, t, len + 1);
	s->i += len;
	if (!strcmp(t, "true") || !strcmp(t, "false")) {
		v->type = SV_NBT_BYTE;
		v->v.i = t[0] == 't';
		return 0;
	}
	char last = t[len - 1];
	char sfx = 0;
	if (strchr("bBsSlLfFdD", last) && len > 1) {
		sfx = (char)(last | 0x20);
		t[--len] = '\0';
	}
	const char *num = t;
	bool neg = num[0] == '-';
	const char *mag = num + (neg || num[0] == '+');
	if ((sfx == 'f' || sfx == 'd') &&
	    (!strcmp(mag, "NaN") || !strcmp(mag, "Infinity"))) {
		double d = mag[0] == 'N' ? NAN : neg ? -INFINITY : INFINITY;
		v->type = sfx == 'f' ? SV_NBT_FLOAT : SV_NBT_DOUBLE;
		if (sfx == 'f')
			v->v.f = (float)d;
		else
			v->v.d = d;
		return 0;
	}
	bool digits = *mag >= '0' && *mag <= '9';
	if (!digits && !(*mag == '.' && mag[1] >= '0' && mag[1] <= '9'))
		return perr(s, at, "\"%s\" is not a value (strings go in double quotes)", whole);
	bool real = strpbrk(mag, ".eE") != NULL;
	char *end;
	if (real || sfx == 'f' || sfx == 'd') {
		if (sfx && sfx != 'f' && sfx != 'd')
			return perr(s, at, "\"%s%c\": a number with a fraction cannot be a whole-number type", t, last);
		double d = strtod(num, &end);
		if (*end)
			return perr(s, at, "\"%s\" is not a number", whole);
		if (sfx == 'f') {
			v->type = SV_NBT_FLOAT;
			v->v.f = strtof(num, NULL);
			if (isinf(v->v.f) && !isinf(d))
				return perr(s, at, "%s is out of range for a float", t);
		} else {
			v->type = SV_NBT_DOUBLE;
			v->v.d = d;
			if (isinf(d))
				return perr(s, at, "%s is out of range for a double", t);
		}
		return 0;
	}
	errno = 0;
	long long x = strtoll(num, &end, 10);
	if (*end)
		return perr(s, at, "\"%s\" is not a number", whole);
	int64_t lo, hi;
	const char *what;
	switch (sfx) {
	case 'b': v->type = SV_NBT_BYTE; lo = INT8_MIN; hi = INT8_MAX; what = "a byte"; break;
	case 's': v->type = SV_NBT_SHORT; lo = INT16_MIN; hi = INT16_MAX; what = "a short"; break;
	case 'l': v->type = SV_NBT_LONG; lo = INT64_MIN; hi = INT64_MAX; what = "a long"; break;
	default: v->type = SV_NBT_INT; lo = INT32_MIN; hi = INT32_MAX; what = "an int"; break;
	}
	if (errno == ERANGE || x < lo || x > hi)
		return perr(s, at, "%s is out of range for %s", num, what);
	v->v.i = x;
	return 0;
}

static int parse_value(struct ps *s, struct sv_nbt *v, int depth);

static int add_kid(struct ps *s, struct sv_nbt *v, size_t *cap, struct sv_nbt **out)
{
	if (v->nkids == *cap) {
		size_t c = *cap ? *cap * 2 : 4;
		struct sv_nbt *k = realloc(v->kids, c * sizeof *k);
		if (!k)
			return sv_err_set(s->err, -ENOMEM, "out of memory");
		v->kids = k;
		*cap = c;
	}
	*out = &v->kids[v->nkids++];
	memset(*out, 0, sizeof **out);
	return 0;
}

static int parse_compound(struct ps *s, struct sv_nbt *v, int depth)
{
	size_t cap = 0;
	v->type = SV_NBT_COMPOUND;
	s->i++;
	ws(s);
	if (s->i < s->n && s->p[s->i] == '}') {
		s->i++;
		return 0;
	}
	for (;;) {
		ws(s);
		size_t at = s->i;
		if (s->i >= s->n)
			return perr(s, at, "the text ends inside a compound (a '}' is missing)");
		struct sv_nbt *m = NULL;
		int rc = add_kid(s, v, &cap, &m);
		if (rc)
			return rc;
		char c = s->p[s->i];
		if (c == '"' || c == '\'') {
			rc = parse_string(s, &m->name, &m->name_len);
		} else {
			size_t k = token(s);
			if (!k)
				return perr(s, at, c == '}' ? "a ',' before '}'" : "expected a key");
			m->name = strndup(s->p + s->i, k);
			m->name_len = k;
			s->i += k;
			if (!m->name)
				return sv_err_set(s->err, -ENOMEM, "out of memory");
		}
		if (rc)
			return rc;
		for (size_t j = 0; j + 1 < v->nkids; j++)
			if (v->kids[j].name_len == m->name_len &&
			    !memcmp(v->kids[j].name, m->name, m->name_len))
				return perr(s, at, "the key \"%s\" twice in one compound", m->name);
		ws(s);
		if (s->i >= s->n || s->p[s->i] != ':')
			return perr(s, s->i, "expected ':' after the key");
		s->i++;
		rc = parse_value(s, m, depth + 1);
		if (rc)
			return rc;
		ws(s);
		if (s->i < s->n && s->p[s->i] == ',') {
			s->i++;
			continue;
		}
		if (s->i < s->n && s->p[s->i] == '}') {
			s->i++;
			return 0;
		}
		return perr(s, s->i, "expected ',' or '}'");
	}
}

static const char *type_name(uint8_t t)
{
	static const char *const n[] = {"end", "byte", "short", "int", "long", "float",
					"double", "byte array", "string", "list", "compound",
					"int array", "long array"};
	return t <= SV_NBT_LONGS ? n[t] : "?";
}

static int parse_list(struct ps *s, struct sv_nbt *v, int depth)
{
	size_t cap = 0;
	s->i++;
	ws(s);
	uint8_t arr = 0, et = 0;
	if (s->i + 1 < s->n && s->p[s->i + 1] == ';' && strchr("BIL", s->p[s->i]) && s->p[s->i]) {
		arr = s->p[s->i] == 'B' ? SV_NBT_BYTES : s->p[s->i] == 'I' ? SV_NBT_INTS : SV_NBT_LONGS;
		et = arr == SV_NBT_BYTES ? SV_NBT_BYTE : arr == SV_NBT_INTS ? SV_NBT_INT : SV_NBT_LONG;
		s->i += 2;
		ws(s);
	}
	v->type = arr ? arr : SV_NBT_LIST;
	v->elem = et;
	if (s->i < s->n && s->p[s->i] == ']') {
		s->i++;
		return 0;
	}
	for (;;) {
		ws(s);
		size_t at = s->i;
		struct sv_nbt *m = NULL;
		int rc = add_kid(s, v, &cap, &m);
		if (!rc)
			rc = parse_value(s, m, depth + 1);
		if (rc)
			return rc;
		if (arr && m->type != et)
			return perr(s, at, "a %s in a %s (write it as %s)", type_name(m->type),
				    type_name(arr), et == SV_NBT_BYTE ? "1b" : et == SV_NBT_INT ? "1" : "1L");
		if (!arr && v->nkids == 1)
			v->elem = m->type;
		else if (!arr && m->type != v->elem)
			return perr(s, at, "a %s in a list of %ss (a list holds one type)",
				    type_name(m->type), type_name(v->elem));
		ws(s);
		if (s->i < s->n && s->p[s->i] == ',') {
			s->i++;
			ws(s);
			if (s->i < s->n && s->p[s->i] == ']')
				return perr(s, s->i, "a ',' before ']'");
			continue;
		}
		if (s->i < s->n && s->p[s->i] == ']') {
			s->i++;
			return 0;
		}
		return perr(s, s->i, s->i < s->n ? "expected ',' or ']'"
					       : "the text ends inside a list (a ']' is missing)");
	}
}

static int parse_value(struct ps *s, struct sv_nbt *v, int depth)
{
	if (depth > SV_NBT_MAX_DEPTH)
		return perr(s, s->i, "nested deeper than 512");
	ws(s);
	if (s->i >= s->n)
		return perr(s, s->i, "expected a value");
	char c = s->p[s->i];
	if (c == '{')
		return parse_compound(s, v, depth);
	if (c == '[')
		return parse_list(s, v, depth);
	if (c == '"' || c == '\'') {
		v->type = SV_NBT_STRING;
		return parse_string(s, &v->v.s.p, &v->v.s.n);
	}
	size_t k = token(s);
	if (!k)
		return perr(s, s->i, "expected a value, not '%c'", c);
	return parse_number(s, k, v);
}

int sv_snbt_parse(const char *p, size_t n, struct sv_nbt *out, struct sv_err *err)
{
	struct ps s = {p, n, 0, err};
	memset(out, 0, sizeof *out);
	ws(&s);
	if (s.i == s.n)
		return 0; /* no value: a lone end tag */
	int rc = parse_value(&s, out, 0);
	if (!rc) {
		ws(&s);
		if (s.i < s.n)
			rc = perr(&s, s.i, "text after the value");
	}
	if (rc)
		sv_nbt_fini(out);
	return rc;
}
