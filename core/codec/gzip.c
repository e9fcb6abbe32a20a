/*
 * gzip.c - one gzip member inflated (whole, or in pieces as a parser asks
 * for them) with a cap on what it may produce, and deflated.  Bytes after
 * the one member are refused.
 */
#include "codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Feeds z->avail_in from *left (zlib counts in uInt). */
static void feed(z_stream *z, size_t *left)
{
	if (!z->avail_in && *left) {
		z->avail_in = *left > UINT32_MAX ? UINT32_MAX : (uInt)*left;
		*left -= z->avail_in;
	}
}

int sv_gunzip_open(struct sv_gunzip *g, const uint8_t *p, size_t n, uint64_t max)
{
	memset(g, 0, sizeof *g);
	if (inflateInit2(&g->z, 16 + 15) != Z_OK)
		return -ENOMEM;
	g->z.next_in = (Bytef *)(uintptr_t)p;
	g->n = g->left = n;
	g->max = max;
	return 0;
}

void sv_gunzip_close(struct sv_gunzip *g)
{
	inflateEnd(&g->z);
}

int sv_gunzip_read(struct sv_gunzip *g, uint8_t *buf, size_t size, size_t *got,
		   struct sv_err *err)
{
	*got = 0;
	while (!g->end && *got < size) {
		feed(&g->z, &g->left);
		size_t room = size - *got;
		/* One byte past the limit, to see an excess. */
		if (g->max - g->total < room)
			room = (size_t)(g->max - g->total) + 1;
		if (room > UINT32_MAX)
			room = UINT32_MAX;
		g->z.next_out = buf + *got;
		g->z.avail_out = (uInt)room;
		int zr = inflate(&g->z, Z_NO_FLUSH);
		size_t k = room - g->z.avail_out;
		*got += k;
		g->total += k;
		if (g->total > g->max)
			return sv_err_set(err, -EFBIG, "gzip: more than %" PRIu64 " bytes", g->max);
		if (zr == Z_STREAM_END) {
			g->end = true;
			if (g->z.avail_in || g->left)
				return sv_err_set(err, -EBADMSG, "gzip: %zu bytes after the end"
						  " of the stream", (size_t)g->z.avail_in + g->left);
			break;
		}
		if (zr == Z_MEM_ERROR)
			return -ENOMEM;
		if (zr == Z_BUF_ERROR && !g->z.avail_in && !g->left)
			return sv_err_set(err, -EBADMSG, "gzip: truncated after %zu bytes", g->n);
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return sv_err_set(err, -EBADMSG, "gzip: %s at byte %zu",
					  g->z.msg ? g->z.msg : "corrupt data",
					  g->n - g->left - g->z.avail_in);
	}
	return 0;
}

int sv_gunzip(const uint8_t *p, size_t n, uint64_t max, struct sv_buf *out,
	      struct sv_err *err)
{
	struct sv_gunzip g;
	if (sv_gunzip_open(&g, p, n, max))
		return -ENOMEM;
	size_t len0 = out->len;
	int rc = 0;
	while (!rc && !g.end) {
		uint64_t room = max - (out->len - len0);
		rc = sv_buf_reserve(out, room < 65536 ? (size_t)room + 1 : 65536);
		size_t got = 0;
		if (!rc)
			rc = sv_gunzip_read(&g, out->p + out->len, out->cap - out->len, &got, err);
		out->len += got;
	}
	sv_gunzip_close(&g);
	if (rc)
		out->len = len0;
	return rc;
}

int sv_gzip(const uint8_t *p, size_t n, struct sv_buf *out)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 15, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	size_t len0 = out->len, left = n;
	int rc = sv_buf_reserve(out, deflateBound(&z, n > UINT32_MAX ? UINT32_MAX : n));
	z.next_in = (Bytef *)(uintptr_t)p;
	while (!rc) {
		feed(&z, &left);
		if (out->len == out->cap && (rc = sv_buf_reserve(out, 65536)))
			break;
		size_t avail = out->cap - out->len;
		z.next_out = out->p + out->len;
		z.avail_out = avail > UINT32_MAX ? UINT32_MAX : (uInt)avail;
		uInt before = z.avail_out;
		int zr = deflate(&z, left ? Z_NO_FLUSH : Z_FINISH);
		out->len += before - z.avail_out;
		if (zr == Z_STREAM_END)
			break;
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			rc = -ENOMEM;
	}
	deflateEnd(&z);
	if (rc)
		out->len = len0;
	return rc;
}
