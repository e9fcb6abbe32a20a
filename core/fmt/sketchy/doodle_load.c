/*
 * doodle_load.c - a Sketchy Maze node's bytes, made on demand: a chunk's
 * grid decoded (binary, JSON or inline), rendered as text, PNG or RLE;
 * the preview; an asset or a nested drawing's member.  Quirks a decoder
 * tolerated are logged once per chunk.
 */
#include "doodle_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* ---- decoding on demand --------------------------------------------------- */

struct drawing *sv_dd_node_drawing(struct sv_container *c, uint64_t key)
{
	struct doodle *dd = sv_container_priv(c);
	return KEY_D(key) < dd->n ? dd->d[KEY_D(key)] : NULL;
}

static void log_quirks(struct drawing *d, const struct chunk *ch,
		       const struct sv_doodle_quirks *q)
{
	char where[128];
	snprintf(where, sizeof where, "%schunks/%u/%lld,%lld", d->prefix, ch->layer,
		 (long long)ch->cx, (long long)ch->cy);
	struct sv_container *c = d->c;
	if (q->run_clamped)
		sv_log(c, "%s: RLE runs go %llu pixel(s) past the end of the chunk: cut off",
		       where, (unsigned long long)q->run_clamped);
	/* The game's own encoder drops a final run of one pixel. */
	if (q->short_by > 1)
		sv_log(c, "%s: RLE stream %llu pixels short: the rest left empty", where,
		       (unsigned long long)q->short_by);
	if (q->outside)
		sv_log(c, "%s: %llu pixel(s) outside the chunk: ignored", where,
		       (unsigned long long)q->outside);
	if (q->bad_index)
		sv_log(c, "%s: %llu pixel(s) with an index past the palette (%u colours): "
		       "shown as '?'", where, (unsigned long long)q->bad_index, d->pal.n);
	if (q->bad_key)
		sv_log(c, "%s: %llu pixel key(s) that are not \"x,y\" with an index: ignored",
		       where, (unsigned long long)q->bad_key);
	if (q->partial)
		sv_log(c, "%s: a partial record at the end: ignored", where);
}

/* Decodes chunk ch into g (allocated here). */
int sv_dd_chunk_grid(struct drawing *d, const struct chunk *ch, struct sv_doodle_grid *g,
		     struct sv_err *err)
{
	int rc = sv_doodle_grid_init(g, d->layers[ch->layer].size, ch->cx, ch->cy);
	if (rc)
		return sv_err_set(err, rc, "out of memory");
	struct sv_doodle_quirks q;
	memset(&q, 0, sizeof q);
	struct sv_blob *b = NULL;
	json_t *j = NULL;
	if (ch->bin >= 0) {
		rc = sv_dd_member_blob(d, ch->bin, &b, err);
		if (!rc)
			rc = sv_doodle_bin_decode(b->data, b->len, d->pal.n, g, &q, err);
	} else if (ch->json >= 0) {
		rc = sv_dd_member_blob(d, ch->json, &b, err);
		if (!rc)
			rc = sv_dd_parse_json(b->data, b->len, d->zip.e[ch->json].name, &j, sv_dd_string_cap(d->c), err);
		if (!rc)
			rc = sv_doodle_json_decode(j, d->pal.n, g, &q, err);
	} else {
		rc = sv_doodle_json_decode(ch->inl, d->pal.n, g, &q, err);
	}
	json_decref(j);
	sv_blob_unref(b);
	if (rc)
		sv_doodle_grid_fini(g);
	else
		log_quirks(d, ch, &q);
	return rc;
}

static int buf_blob(struct sv_buf *b, struct sv_blob **out)
{
	*out = sv_blob_dup(b->p, b->len);
	sv_buf_fini(b);
	return *out ? 0 : -ENOMEM;
}

static int load_preview(struct drawing *d, struct sv_blob **out, struct sv_err *err)
{
	uint32_t w, h;
	uint64_t scale;
	int64_t x0, y0;
	sv_dd_preview_geom(d, &w, &h, &scale, &x0, &y0);
	uint16_t *img = malloc((size_t)w * h * sizeof *img);
	if (!img)
		return sv_err_set(err, -ENOMEM, "out of memory");
	memset(img, 0xff, (size_t)w * h * sizeof *img);
	int rc = 0;
	bool holes = false;
	for (size_t i = 0; i < d->nchunks && d->chunks[i].layer == 0 && !rc; i++) {
		struct sv_doodle_grid g;
		struct sv_err e;
		sv_err_clear(&e);
		if (sv_dd_chunk_grid(d, &d->chunks[i], &g, &e)) {
			if (e.code == -ENOMEM)
				rc = sv_err_set(err, -ENOMEM, "out of memory");
			holes = true;
			continue; /* a bad chunk leaves a hole, not a failed preview */
		}
		for (uint32_t r = 0; r < g.size; r++) {
			uint64_t py = (uint64_t)(g.y0 + r - y0) / scale;
			for (uint32_t col = 0; col < g.size; col++) {
				uint16_t v = g.px[(size_t)r * g.size + col];
				if (v == SV_DOODLE_EMPTY)
					continue;
				uint64_t px = (uint64_t)(g.x0 + col - x0) / scale;
				img[py * w + px] = v;
			}
		}
		sv_doodle_grid_fini(&g);
	}
	/* Unless the chunks failed because another program was rewriting
	 * the file meanwhile: then a preview of holes is no preview. */
	if (!rc && holes && sv_container_changed(d->c))
		rc = sv_err_set(err, -EIO, "doodle: the file was changed by another program while "
				"its preview was made: not shown");
	struct sv_buf b;
	sv_buf_init(&b);
	if (!rc && sv_png_encode(w, h, img, &d->pal, &b))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	free(img);
	if (!rc && buf_blob(&b, out))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	sv_buf_fini(&b);
	return rc;
}

int sv_dd_load(struct sv_container *c, uint32_t node, struct sv_blob **out,
	       struct sv_err *err)
{
	uint64_t key = sv_node(c, node)->key;
	struct drawing *d = sv_dd_node_drawing(c, key);
	if (!d)
		return sv_err_set(err, -EIO, "no such entry");
	uint32_t i = KEY_I(key);
	struct sv_buf b;
	sv_buf_init(&b);
	struct sv_doodle_grid g;
	int rc = 0;
	switch (KEY_KIND(key)) {
	case K_JSON:
		*out = sv_blob_dup(d->view, d->view_len);
		return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	case K_PREVIEW:
		return load_preview(d, out, err);
	case K_ASSET: {
		struct asset *a = &d->assets[i];
		if (a->member >= 0)
			return sv_dd_member_blob(d, a->member, out, err);
		rc = sv_base64_decode(json_string_value(a->inl), json_string_length(a->inl), &b,
				      err);
		if (!rc && buf_blob(&b, out))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		sv_buf_fini(&b);
		return rc;
	}
	case K_BIN:
		if (d->chunks[i].bin >= 0)
			return sv_dd_member_blob(d, d->chunks[i].bin, out, err);
		/* A JSON chunk shows the RLE savefs would write. */
		__attribute__((fallthrough));
	case K_TXT:
	case K_PNG: {
		struct chunk *ch = &d->chunks[i];
		uint32_t size = d->layers[ch->layer].size;
		if (sv_png_size(size, size, d->pal.n) > sv_dd_max_decode(d) ||
		    sv_doodle_text_size_with(&d->pal, d->legend, ch->layer, ch->cx, ch->cy, size) >
			    sv_dd_max_decode(d))
			return sv_err_set(err, -EFBIG, "a %ux%u chunk's views are larger than "
					  "-o maxdecode", size, size);
		rc = sv_dd_chunk_grid(d, ch, &g, err);
		if (rc)
			return rc;
		if (KEY_KIND(key) == K_TXT)
			rc = sv_doodle_text_render(&d->pal, ch->layer, ch->cx, ch->cy, &g, &b);
		else if (KEY_KIND(key) == K_PNG)
			rc = sv_png_encode(g.size, g.size, g.px, &d->pal, &b);
		else {
			/* A pixel past the palette cannot be written as RLE: it
			 * shows empty here, and the text shows it as '?'. */
			for (size_t p = 0; p < (size_t)g.size * g.size; p++)
				if (g.px[p] == SV_DOODLE_BADPIX)
					g.px[p] = SV_DOODLE_EMPTY;
			rc = sv_doodle_rle_encode(&g, &b);
		}
		sv_doodle_grid_fini(&g);
		if (!rc)
			rc = buf_blob(&b, out);
		sv_buf_fini(&b);
		return rc ? sv_err_set(err, rc, "out of memory") : 0;
	}
	default:
		return sv_err_set(err, -EISDIR, "not a file");
	}
}
