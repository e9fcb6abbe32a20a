/*
 * test_nbt.c - NBT, SNBT and the recording chunk decoder's pieces
 * (core/fmt/recording/nbt.c, core/fmt/recording/rcevents.c): the shortest decimal against the
 * plain search (every precision tried in turn) for a million values; SNBT
 * written and parsed back, every refusal with its line, column and reason;
 * modified UTF-8 both ways; VarInts; a payload's ticks renumbered.
 */
#include "fmt/recording/nbt.h"
#include "fmt/recording/rcevents.h"
#include "rd.h"
#include "t.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The plain way: the fewest digits %e needs to read back, laid out as
 * sv_nbt_real lays them out. */
static void slow_real(char *out, double d, bool is_float)
{
	char e[40];
	for (int p = 1; p <= 17; p++) {
		snprintf(e, sizeof e, "%.*e", p - 1, d);
		if (is_float ? strtof(e, NULL) == (float)d : strtod(e, NULL) == d)
			break;
	}
	char digits[24];
	size_t nd = 0;
	const char *p = e;
	bool neg = *p == '-';
	if (neg)
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	int x = atoi(p + 1);
	char *o = out;
	if (neg)
		*o++ = '-';
	if (x < -4 || x >= 16) {
		*o++ = digits[0];
		if (nd > 1) {
			*o++ = '.';
			memcpy(o, digits + 1, nd - 1);
			o += nd - 1;
		}
		sprintf(o, "e%c%02d", x < 0 ? '-' : '+', abs(x));
		return;
	}
	if (x < 0) {
		o += sprintf(o, "0.%0*d", -x - 1, 0) - (x == -1 ? 1 : 0);
		if (x == -1)
			o[-1] = '.';
		memcpy(o, digits, nd);
		o[nd] = '\0';
		return;
	}
	for (size_t k = 0; k < nd || (int)k <= x; k++) {
		if ((int)k == x + 1)
			*o++ = '.';
		*o++ = k < nd ? digits[k] : '0';
	}
	*o = '\0';
}

static void reals(void)
{
	static const struct { double d; bool f; const char *s; } cases[] = {
		{0, false, "0"}, {-0.0, false, "-0"}, {64, false, "64"}, {0.5, false, "0.5"},
		{0.2158203125, false, "0.2158203125"}, {-0.000244140625, false, "-0.000244140625"},
		{0.1, false, "0.1"}, {1e16, false, "1e+16"}, {1.5e-5, false, "1.5e-05"},
		{123456789012345678.0, false, "1.2345678901234568e+17"},
		{1.4996338f, true, "1.4996338"}, {-139.4989f, true, "-139.4989"},
		{NAN, false, "NaN"}, {-INFINITY, true, "-Infinity"},
	};
	char got[40], want[40];
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		sv_shortest(got, cases[i].d, cases[i].f);
		T_STR(cases[i].s, got);
	}
	int bad = 0;
	for (int i = 0; i < 1000000 && bad < 5; i++) {
		uint64_t u = rnd();
		double d;
		bool f = i % 3 == 0;
		switch (i % 5) {
		case 0: /* any bits */
			memcpy(&d, &u, 8);
			if (!isfinite(d))
				continue;
			break;
		case 1: /* 1/4096 steps, as a recording's positions */
			d = (double)(int64_t)(u % 2000000000000ull - 1000000000000ll) / 4096.0;
			break;
		case 2: /* angles from two bytes */
			d = (float)((int16_t)u / (65536 / 360.0));
			break;
		case 3: /* a velocity's 15-bit fields */
			d = ((double)(u % 32767) * 2.0 / 32766.0 - 1.0) * (double)(1 + (u >> 40) % 40);
			break;
		default: /* any mantissa, exponents where the exact path works */
			if (i % 2) {
				uint64_t bits = (u & ((1ull << 52) - 1)) |
						(uint64_t)(1023 - 17 + (int)((u >> 52) % 72)) << 52 |
						(u >> 63) << 63;
				memcpy(&d, &bits, 8);
			} else {
				d = (double)(int64_t)u / 1048576.0;
			}
			break;
		}
		if (f)
			d = (float)d;
		if (f && !isfinite((float)d))
			continue;
		sv_shortest(got, d, f);
		slow_real(want, d, f);
		if (strcmp(got, want)) {
			fprintf(stderr, "%.17g (%s): %s, the plain search gives %s\n", d,
				f ? "float" : "double", got, want);
			bad++;
		}
	}
	T_INT(0, bad);
}

static void snbt_round(const char *text, const char *pretty, const char *compact,
		       const uint8_t *nbt, size_t nbt_len)
{
	struct sv_nbt v;
	struct sv_err err;
	T_INT(0, sv_snbt_parse(text, strlen(text), &v, &err));
	struct sv_buf p, c, b;
	sv_buf_init(&p);
	sv_buf_init(&c);
	sv_buf_init(&b);
	T_INT(0, sv_snbt_write(&p, &v, true));
	T_INT(0, sv_snbt_write(&c, &v, false));
	T_INT(0, sv_nbt_write(&b, &v));
	sv_buf_add(&p, "", 1);
	sv_buf_add(&c, "", 1);
	T_STR(pretty, (const char *)p.p);
	T_STR(compact, (const char *)c.p);
	if (nbt) {
		T_UINT(nbt_len, b.len);
		T_MEM(nbt, b.p, nbt_len < b.len ? nbt_len : b.len);
	}
	struct sv_nbt w;
	size_t used;
	T_INT(0, sv_nbt_read(b.p, b.len, &w, &used, &err));
	T_UINT(b.len, used);
	struct sv_buf p2;
	sv_buf_init(&p2);
	T_INT(0, sv_snbt_write(&p2, &w, true));
	sv_buf_add(&p2, "", 1);
	T_STR(pretty, (const char *)p2.p);
	sv_nbt_fini(&v);
	sv_nbt_fini(&w);
	sv_buf_fini(&p);
	sv_buf_fini(&c);
	sv_buf_fini(&b);
	sv_buf_fini(&p2);
}

static void snbt(void)
{
	static const uint8_t map[] = {0x0a, 0x08, 0, 3, 'm', 'a', 'p', 0, 1, 'x', 0};
	snbt_round("{map: \"x\"}", "{\n    map: \"x\"\n}\n", "{map:\"x\"}", map, sizeof map);
	/* NUL and a character past U+FFFF in modified UTF-8. */
	static const uint8_t s[] = {0x08, 0, 9, 'a', 0xc0, 0x80, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80};
	snbt_round("\"a\\u0000\\ud83d\\ude00\"", "\"a\\u0000\xf0\x9f\x98\x80\"\n",
		   "\"a\\u0000\xf0\x9f\x98\x80\"", s, sizeof s);
	snbt_round("{a: [I; 1, -2], b: [B;], \"c d\": [{x: 1L}, {}], e: 1.5f, f: -2.0d, g: true, "
		   "h: 7s, i: []}",
		   "{\n    a: [I; 1, -2],\n    b: [B;],\n    \"c d\": [\n        {\n            x: 1L\n"
		   "        },\n        {}\n    ],\n    e: 1.5f,\n    f: -2.0d,\n    g: 1b,\n"
		   "    h: 7s,\n    i: []\n}\n",
		   "{a:[I;1,-2],b:[B;],\"c d\":[{x:1L},{}],e:1.5f,f:-2.0d,g:1b,h:7s,i:[]}", NULL, 0);
	static const struct { const char *text, *msg; } bad[] = {
		{"{a: 1,}", "snbt: line 1, column 7: a ',' before '}'"},
		{"{a: 1, a: 2}", "snbt: line 1, column 8: the key \"a\" twice in one compound"},
		{"{\n  a: word\n}", "snbt: line 2, column 6: \"word\" is not a value (strings go in double quotes)"},
		{"[1, 2b]", "snbt: line 1, column 5: a byte in a list of ints (a list holds one type)"},
		{"[B; 1, 2]", "snbt: line 1, column 5: a int in a byte array (write it as 1b)"},
		{"3000000000", "snbt: line 1, column 1: 3000000000 is out of range for an int"},
		{"200b", "snbt: line 1, column 1: 200 is out of range for a byte"},
		{"{a: 1} x", "snbt: line 1, column 8: text after the value"},
		{"\"abc", "snbt: line 1, column 1: a string that does not end"},
		{"\"a\\qb\"", "snbt: line 1, column 3: an unknown escape \\q"},
		{"{a: [1, 2}", "snbt: line 1, column 10: expected ',' or ']'"},
		{"1.5b", "snbt: line 1, column 1: \"1.5b\": a number with a fraction cannot be a whole-number type"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct sv_nbt v;
		struct sv_err err;
		T_INT(-EINVAL, sv_snbt_parse(bad[i].text, strlen(bad[i].text), &v, &err));
		T_STR(bad[i].msg, err.msg);
	}
	/* Binary: an unknown tag, a count past the end, too deep. */
	struct sv_nbt v;
	struct sv_err err;
	size_t used;
	static const uint8_t unk[] = {0x0a, 13, 0, 0};
	T_INT(-EBADMSG, sv_nbt_read(unk, sizeof unk, &v, &used, &err));
	T_STR("nbt: byte 1: an unknown tag type", err.msg);
	static const uint8_t big[] = {0x09, 0x03, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1};
	T_INT(-EBADMSG, sv_nbt_read(big, sizeof big, &v, &used, &err));
	T_STR("nbt: byte 6: a count larger than the bytes left", err.msg);
	uint8_t deep[2000];
	deep[0] = 0x09;
	for (size_t i = 0; i < 399; i++) {
		uint8_t *q = deep + 1 + 5 * i;
		q[0] = 0x09;
		q[1] = q[2] = q[3] = 0;
		q[4] = 1;
	}
	T_INT(-EBADMSG, sv_nbt_read(deep, 1 + 5 * 399, &v, &used, &err));
	T_HAS(err.msg, "nbt: byte ");
}

static void varints_and_renumber(void)
{
	struct sv_buf b;
	sv_buf_init(&b);
	static const int32_t vals[] = {0, 1, 127, 128, 300, -1, INT32_MAX, INT32_MIN};
	for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
		T_INT(0, sv_put_leb(&b, (uint32_t)vals[i]));
	struct sv_rd r;
	sv_rd_init(&r, b.p, b.len);
	for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
		T_INT(vals[i], sv_rc_varint(&r));
	T_OK(sv_rd_ok(&r));
	T_UINT(b.len, r.off);
	/* Six bytes are one too many for a VarInt. */
	static const uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
	sv_rd_init(&r, six, sizeof six);
	T_INT(0, sv_rc_varint(&r));
	T_OK(!sv_rd_ok(&r));
	T_STR("a varint longer than 5 bytes", r.why);
	T_UINT(0, r.fail_off);
	sv_buf_fini(&b);
	/* Ticks 200 and 201 (a spawn, then nothing) become 100 and 101. */
	static const uint8_t pay[] = {0xc8, 0x01, 0, 1, 9, 5, 0xc9, 0x01, 0, 0};
	static const uint8_t want[] = {0x64, 0, 1, 9, 5, 0x65, 0, 0};
	struct sv_buf out;
	sv_buf_init(&out);
	struct sv_err err;
	T_INT(0, sv_rc_renumber(pay, sizeof pay, 0, 100, &out, &err));
	T_UINT(sizeof want, out.len);
	T_MEM(want, out.p, sizeof want);
	out.len = 0;
	T_INT(-EBADMSG, sv_rc_renumber(pay, sizeof pay, 0, 300, &out, &err));
	T_STR("byte 0: tick 200 cannot be renumbered", err.msg);
	static const uint8_t unk[] = {0x00, 0, 1, 20};
	out.len = 0;
	T_INT(-EBADMSG, sv_rc_renumber(unk, sizeof unk, 1, 0, &out, &err));
	T_STR("byte 3: an event id the event table does not have", err.msg);
	sv_buf_fini(&out);
}

int main(void)
{
	reals();
	snbt();
	varints_and_renumber();
	return t_done();
}
