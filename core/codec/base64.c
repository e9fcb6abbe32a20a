/*
 * base64.c - standard base64 (RFC 4648, "+/" and "=" padding), as drawings
 * embed their chunks and images: padding optional, whitespace skipped,
 * any other character refused with its position.
 */
#include "codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static bool b64space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The decoded size of s, or -1 with a reason in err. */
static int64_t b64_scan(const char *s, size_t n, struct sv_err *err)
{
	uint64_t m = 0, pad = 0;
	char b[16];
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)s[i];
		if (b64space(c))
			continue;
		if (c == '=' && pad < 2 && m % 4 >= 2) {
			pad++;
			continue;
		}
		if (sv_base64_value(c) < 0 || pad) {
			sv_err_set(err, -EBADMSG, "base64: byte %zu: %s %s", i,
				   sv_show_char(b, (const uint8_t *)s + i, n - i),
				   pad ? "after the padding" : c == '=' ? "out of place"
				   : "is not base64");
			return -1;
		}
		m++;
	}
	if (m % 4 == 1 || (pad && (m + pad) % 4)) {
		sv_err_set(err, -EBADMSG, "base64: %" PRIu64 " characters and %" PRIu64
			   " '=' are not whole bytes", m, pad);
		return -1;
	}
	return (int64_t)(m / 4 * 3 + (m % 4 ? m % 4 - 1 : 0));
}

int64_t sv_base64_decoded_size(const char *s, size_t n)
{
	return b64_scan(s, n, NULL);
}

int sv_base64_decode_valid(const char *s, size_t n, size_t size, struct sv_buf *out)
{
	if (sv_buf_reserve(out, size))
		return -ENOMEM;
	uint32_t acc = 0;
	unsigned bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = sv_base64_value((uint8_t)s[i]);
		if (v < 0)
			continue; /* whitespace or padding: checked by the caller */
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out->p[out->len++] = (uint8_t)(acc >> bits);
		}
	}
	return 0;
}

int sv_base64_decode(const char *s, size_t n, struct sv_buf *out, struct sv_err *err)
{
	int64_t size = b64_scan(s, n, err);
	if (size < 0)
		return -EBADMSG;
	if ((uint64_t)size > SIZE_MAX)
		return -ENOMEM;
	return sv_base64_decode_valid(s, n, (size_t)size, out);
}

int sv_base64_encode(const uint8_t *p, size_t n, struct sv_buf *out)
{
	if (n / 3 >= SIZE_MAX / 4 - 1)
		return -ENOMEM;
	if (!n)
		return 0;
	int rc = sv_buf_reserve(out, (n + 2) / 3 * 4);
	if (rc)
		return rc;
	char *o = (char *)out->p + out->len;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*o++ = b64[v >> 18];
		*o++ = b64[v >> 12 & 63];
		*o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64[v & 63] : '=';
	}
	out->len = (size_t)((uint8_t *)o - out->p);
	return 0;
}

