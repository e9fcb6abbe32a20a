/*
 * decimal.c - the one writer of decimals for every view: the shortest
 * decimal that reads back to the same double (or float), and JSON written
 * by jansson with its reals in that form (jansson itself prints 17
 * significant digits: 250.21692726699999 where 250.216927267 reads back
 * the same).
 *
 * The digits come from exact integer arithmetic (128-bit) where the value
 * allows, else from a search over printf's precisions; both give the
 * shortest digits that strtod/strtof read back to the same bits.
 */
#include "internal.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exact arithmetic for the shortest decimals (gcc and clang have it). */
__extension__ typedef unsigned __int128 sv_u128;

/* Lays the significant digits digits[0..nd) out with decimal exponent x
 * (the value is d.ddd x 10^x) as a person writes them: an exponent only
 * below 1e-4 or from 1e16 on. */
static void layout(char *o, bool neg, const char *digits, size_t nd, int x)
{
	if (neg)
		*o++ = '-';
	if (x < -4 || x >= 16) {
		*o++ = digits[0];
		if (nd > 1) {
			*o++ = '.';
			memcpy(o, digits + 1, nd - 1);
			o += nd - 1;
		}
		sprintf(o, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
		return;
	}
	if (x < 0) {
		*o++ = '0';
		*o++ = '.';
		for (int k = 0; k < -x - 1; k++)
			*o++ = '0';
		memcpy(o, digits, nd);
		o += nd;
	} else if ((size_t)x + 1 >= nd) {
		memcpy(o, digits, nd);
		o += nd;
		for (size_t k = nd; k < (size_t)x + 1; k++)
			*o++ = '0';
	} else {
		memcpy(o, digits, (size_t)x + 1);
		o += x + 1;
		*o++ = '.';
		memcpy(o, digits + x + 1, nd - (size_t)x - 1);
		o += nd - (size_t)x - 1;
	}
	*o = '\0';
}

/* 10^n for n <= 38 (a few multiplications: no table to make, and none to
 * share between threads). */
static sv_u128 pow10_u128(int n)
{
	sv_u128 v = 1;
	while (n-- > 0)
		v *= 10;
	return v;
}

/* The shortest digits of v = m / 2^k (0 <= k <= 68) in exact integer
 * arithmetic: N = v rounded to p significant digits (half to even, as
 * printf rounds), and N read back goes to v when it lies in v's rounding
 * interval (half an ulp each side, a quarter below at a power of two;
 * the ends in when m is even, as strtod breaks ties).  From 15 digits for
 * a double (6 for a float) up: a shorter decimal that reads back is then
 * N's prefix.  False when v is out of that range. */
static bool fast_digits(double d, bool is_float, char *digits, size_t *nd, int *exp10)
{
	uint64_t m;
	int k;
	bool pow2;
	if (is_float) {
		float f = (float)d;
		uint32_t b;
		memcpy(&b, &f, 4);
		int e = (int)(b >> 23 & 0xff);
		if (e == 0 || e == 255)
			return false;
		m = (b & 0x7fffff) | 0x800000;
		k = 150 - e;
		pow2 = !(b & 0x7fffff) && e > 1;
	} else {
		uint64_t b;
		memcpy(&b, &d, 8);
		int e = (int)(b >> 52 & 0x7ff);
		if (e == 0 || e == 2047)
			return false;
		m = (b & ((1ull << 52) - 1)) | 1ull << 52;
		k = 1075 - e;
		pow2 = !(b & ((1ull << 52) - 1)) && e > 1;
	}
	if (k < 0 || k > 68)
		return false;
	int E = 0;
	if (k < 64 && (m >> k)) {
		for (uint64_t ip = m >> k; ip >= 10; ip /= 10)
			E++;
	} else {
		sv_u128 t = m, two_k = (sv_u128)1 << k;
		while (t < two_k) {
			t *= 10;
			E--;
		}
	}
	bool even = !(m & 1);
	int last = is_float ? 9 : 17;
	for (int p = is_float ? 6 : 15; p <= last; p++) {
		int q = E - p + 1, ee = E;
		sv_u128 N;
		if (q <= 0) {
			sv_u128 num = (sv_u128)m * pow10_u128(-q);
			N = num >> k;
			if (k) {
				sv_u128 rem = num & (((sv_u128)1 << k) - 1), half = (sv_u128)1 << (k - 1);
				if (rem > half || (rem == half && (N & 1)))
					N++;
			}
		} else {
			sv_u128 den = pow10_u128(q) << k;
			N = m / den;
			sv_u128 rem2 = (m - N * den) * 2;
			if (rem2 > den || (rem2 == den && (N & 1)))
				N++;
		}
		if (N == pow10_u128(p)) {
			N = pow10_u128(p - 1);
			q++;
			ee++;
		}
		sv_u128 a, b, unit;
		if (q <= 0) {
			unit = pow10_u128(-q);
			a = N << (k + 2);
			b = ((sv_u128)m * unit) << 2;
		} else {
			unit = 1;
			a = (N * pow10_u128(q)) << (k + 2);
			b = (sv_u128)m << 2;
		}
		sv_u128 hi = unit * 2, lo = unit * (pow2 ? 1 : 2);
		bool ok = a >= b ? (even ? a - b <= hi : a - b < hi) : (even ? b - a <= lo : b - a < lo);
		if (!ok && p < last)
			continue;
		char t[24];
		size_t n = 0;
		for (uint64_t v = (uint64_t)N; v; v /= 10) /* N < 10^17 */
			t[n++] = (char)('0' + (int)(v % 10));
		size_t lo0 = 0;
		while (lo0 + 1 < n && t[lo0] == '0')
			lo0++;
		*nd = n - lo0;
		for (size_t i = 0; i < *nd; i++)
			digits[i] = t[n - 1 - i];
		*exp10 = ee;
		return true;
	}
	return false;
}

void sv_shortest(char out[40], double d, bool is_float)
{
	if (isnan(d)) {
		strcpy(out, "NaN");
		return;
	}
	if (isinf(d)) {
		strcpy(out, d < 0 ? "-Infinity" : "Infinity");
		return;
	}
	if (d == 0) {
		strcpy(out, signbit(d) ? "-0" : "0");
		return;
	}
	char fd[24];
	size_t fn;
	int fx;
	if (fast_digits(d, is_float, fd, &fn, &fx)) {
		layout(out, d < 0, fd, fn, fx);
		return;
	}
	/* The shortest digits: for a double, 15 significant digits are always
	 * close enough that a shorter decimal that reads back is their prefix
	 * (trailing zeros dropped); past 15, 16 or 17.  For a float, 6 and
	 * then up to 9. */
	char e[40];
	/* Subnormals have fewer digits of precision: searched from 1. */
	bool sub = is_float ? fabs(d) < FLT_MIN : fabs(d) < DBL_MIN;
	int prec = sub ? 1 : is_float ? 6 : 15, last = is_float ? 9 : 17;
	for (; prec <= last; prec++) {
		snprintf(e, sizeof e, "%.*e", prec - 1, d);
		if (prec == last || (is_float ? strtof(e, NULL) == (float)d : strtod(e, NULL) == d))
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
	layout(out, neg, digits, nd, atoi(p + 1));
}


/* ---- JSON with the shortest reals --------------------------------------- */

/* Reals are written by jansson as marker strings ("\x01" digits "\x01"),
 * which come out as "\u0001...\u0001" and are then turned back into bare
 * numbers.  A tree that holds a string with \x01 itself is written by
 * jansson alone (17 digits), so that no string ever becomes a number. */
#define MARK "\\u0001"

/* True if j holds a real; false, with *clash, if a string holds \x01. */
static bool scan(const json_t *j, bool *clash)
{
	bool any = false;
	if (json_is_real(j))
		return true;
	if (json_is_string(j)) {
		*clash |= memchr(json_string_value(j), 1, json_string_length(j)) != NULL;
		return false;
	}
	if (json_is_object(j)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)j, k, v) {
			*clash |= strchr(k, 1) != NULL;
			any |= scan(v, clash);
		}
	} else if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach(j, i, v)
			any |= scan(v, clash);
	}
	return any;
}

/* A real as JSON: the shortest decimal, with ".0" on a whole number so
 * that it reads back as a real. */
static void real_text(double d, char out[48])
{
	char t[40];
	sv_shortest(t, d, false);
	size_t n = strlen(t);
	memcpy(out, t, n + 1);
	if (!strpbrk(t, ".eN"))
		memcpy(out + n, ".0", 3);
}

static int mark(json_t *j);

/* v in place of itself: a real's marker string, or v with its reals
 * marked.  NULL if out of memory. */
static json_t *marked(json_t *v)
{
	if (!json_is_real(v))
		return mark(v) ? NULL : json_incref(v);
	char t[52] = "\x01";
	real_text(json_real_value(v), t + 1);
	strcat(t, "\x01");
	return json_string(t);
}

/* Replaces every real in j (a copy) by its marker string. */
static int mark(json_t *j)
{
	if (json_is_object(j)) {
		const char *k;
		json_t *v;
		json_object_foreach(j, k, v)
			if (json_object_set_new(j, k, marked(v)))
				return -ENOMEM;
	} else if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j); i++)
			if (json_array_set_new(j, i, marked(json_array_get(j, i))))
				return -ENOMEM;
	}
	return 0;
}

static int dump_cb(const char *p, size_t n, void *arg)
{
	return sv_buf_add(arg, p, n) ? -1 : 0;
}

int sv_json_dump(const void *json, size_t flags, struct sv_buf *out)
{
	const json_t *j = json;
	bool clash = false;
	if (json_is_real(j)) {
		char t[48];
		real_text(json_real_value(j), t);
		return sv_buf_add(out, t, strlen(t)) ? -ENOMEM : 0;
	}
	if (!scan(j, &clash) || clash)
		return json_dump_callback(j, dump_cb, out, flags | JSON_REAL_PRECISION(17))
			       ? -ENOMEM : 0;
	json_t *copy = json_deep_copy(j);
	size_t from = out->len;
	int rc = copy ? mark(copy) : -ENOMEM;
	if (!rc && json_dump_callback(copy, dump_cb, out, flags))
		rc = -ENOMEM;
	json_decref(copy);
	if (rc)
		return rc;
	/* "\u0001DIGITS\u0001" -> DIGITS, in place. */
	char *p = (char *)out->p + from, *end = (char *)out->p + out->len, *w = p;
	const size_t ml = strlen("\"" MARK);
	while (p < end) {
		if ((size_t)(end - p) >= ml && !memcmp(p, "\"" MARK, ml)) {
			char *q = p + ml;
			while (q < end && *q != '\\')
				*w++ = *q++;
			p = q + ml; /* past MARK and the closing quote */
			continue;
		}
		*w++ = *p++;
	}
	out->len = (size_t)(w - (char *)out->p);
	return 0;
}
