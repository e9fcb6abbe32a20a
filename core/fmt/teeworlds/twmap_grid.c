/*
 * twmap_grid.c - a map's tile grids and envelopes edited: a layer's
 * tiles.txt and tiles.png parsed strictly (exactly the layer's size, the
 * flags DDNet's editor writes), an envelope's points from its JSON, each
 * checked against what DDNet's loader refuses.
 */
#include "twmap_priv.h"

#include <errno.h>
#include <limits.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tile grids --------------------------------------------------------- */

/* Layer l's grid g as it will be written, expanded to W x H tiles (the
 * dims its data has now).  A grid whose data cannot be read starts from
 * zeros: writing it whole repairs it. */
static int grid_cur(struct twm_work *w, const struct layer *l, int g, int32_t W, int32_t H,
		    uint8_t **out)
{
	size_t ts = (size_t)sv_twm_grids[g].size, tiles = (size_t)W * (size_t)H;
	uint8_t *t = calloc(tiles ? tiles : 1, ts);
	if (!t)
		return sv_tw_nomem(w);
	*out = t;
	struct sv_blob *b;
	struct sv_err e;
	sv_err_clear(&e);
	struct sv_err *keep = w->err;
	w->err = &e;
	int rc = sv_tw_data_get(w, l->grid[g], &b);
	w->err = keep;
	if (rc == -ENOMEM) {
		free(t);
		*out = NULL;
		return sv_tw_nomem(w);
	}
	if (rc)
		return 0;
	if (g == G_TILES && l->tver >= 4) {
		size_t used, made, pad;
		sv_twm_expand_runs(b->data, b->len, t, tiles, &used, &made, &pad);
	} else {
		memcpy(t, b->data, b->len < tiles * ts ? b->len : tiles * ts);
	}
	sv_blob_unref(b);
	return 0;
}

/* Stores W x H tiles of grid g in the layer's own encoding: version 4
 * tile runs (skip = repeats, at most 255) or one tile each. */
static int grid_put(struct twm_work *w, const struct layer *l, int g, uint8_t *t, size_t tiles)
{
	size_t ts = (size_t)sv_twm_grids[g].size;
	/* Bytes DDNet's loader wants 0 are 0 in what savefs writes, whatever
	 * the map held (such a grid read EIO: writing it whole repairs it). */
	for (size_t i = 0; i < tiles && (g == G_TILES || g == G_SPEEDUP); i++) {
		if (g == G_TILES) {
			t[4 * i + 2] = 0;
			t[4 * i + 3] = 0;
		} else {
			t[6 * i + 3] = 0;
		}
	}
	if (!(g == G_TILES && l->tver >= 4))
		return sv_tw_data_put(w, l->grid[g], t, tiles * ts, NULL);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	for (size_t i = 0; i < tiles && !rc;) {
		size_t j = i + 1;
		while (j < tiles && j - i < 256 && t[4 * j] == t[4 * i] && t[4 * j + 1] == t[4 * i + 1])
			j++;
		uint8_t run[4] = {t[4 * i], t[4 * i + 1], (uint8_t)(j - i - 1), 0};
		rc = sv_buf_add(&b, run, 4) ? sv_tw_nomem(w) : 0;
		i = j;
	}
	if (!rc)
		rc = sv_tw_data_put(w, l->grid[g], b.p, b.len, NULL);
	sv_buf_fini(&b);
	return rc;
}

static int parse_grid(struct twm_work *w, int g, int32_t W, int32_t H, const uint8_t *p, size_t len,
		      uint8_t *t)
{
	size_t ts = (size_t)sv_twm_grids[g].size, cw = (size_t)sv_twm_grids[g].cw, i = 0;
	int32_t row = 0;
	long line = 0;
	while (i < len) {
		const uint8_t *nl = memchr(p + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - p) : len, end = e;
		line++;
		if (end > i && p[end - 1] == '\r')
			end--;
		if (p[i] == '#' || (end == i && !nl && row == H)) {
			i = e + 1;
			continue;
		}
		if (row == H) {
			if (end == i) {
				i = e + 1;
				continue;
			}
			return sv_tw_fail(w, "line %ld: more than the layer's %d rows", line, H);
		}
		int32_t col = 0;
		size_t x = i;
		while (x < end) {
			while (x < end && (p[x] == ' ' || p[x] == '\t'))
				x++;
			if (x == end)
				break;
			size_t s = x;
			while (x < end && p[x] != ' ' && p[x] != '\t')
				x++;
			if (col == W)
				return sv_tw_fail(w, "line %ld: more than the layer's %d cells", line, W);
			uint8_t *c = t + ((size_t)row * (size_t)W + (size_t)col) * ts;
			uint8_t v[12];
			bool dots = x - s == cw, ok = x - s == cw;
			for (size_t k = s; k < x && ok; k++)
				dots = dots && p[k] == '.';
			for (size_t k = 0; k < cw && ok && !dots; k++) {
				int h = sv_hexval(p[s + k]);
				ok = h >= 0;
				v[k] = (uint8_t)h;
			}
			if (!ok)
				return sv_tw_fail(w, "line %ld, cell %d: \"%.*s\" is not %zu hex digits or %zu dots",
					    line, col + 1, (int)(x - s < 16 ? x - s : 16), p + s, cw, cw);
			if (dots)
				memset(v, 0, sizeof v);
			switch (g) {
			case G_TILES:
				c[0] = (uint8_t)(v[0] << 4 | v[1]);
				c[1] = (uint8_t)((c[1] & 0xF0) | v[2]);
				break;
			case G_SPEEDUP:
				c[0] = (uint8_t)(v[0] << 4 | v[1]);
				c[1] = (uint8_t)(v[2] << 4 | v[3]);
				c[2] = (uint8_t)(v[4] << 4 | v[5]);
				c[5] = (uint8_t)(v[6] << 4 | v[7]);
				c[4] = (uint8_t)(v[8] << 4 | v[9]);
				break;
			default:
				for (size_t k = 0; k < ts; k++)
					c[k] = (uint8_t)(v[2 * k] << 4 | v[2 * k + 1]);
			}
			col++;
		}
		if (col != W)
			return sv_tw_fail(w, "line %ld: %d cells, but the layer is %d wide", line, col, W);
		row++;
		i = e + 1;
	}
	if (row != H)
		return sv_tw_fail(w, "%d rows, but the layer is %d high", row, H);
	return 0;
}

int sv_tw_apply_grid(struct twm_work *w, int32_t k, int g, const uint8_t *p, size_t len)
{
	const struct layer *l = &w->m->lay[k];
	if (l->bad)
		return sv_tw_fail(w, "%s", l->bad);
	int32_t W = sv_tw_item_get(w, l->item, 4), H = sv_tw_item_get(w, l->item, 5);
	uint8_t *t;
	int rc = grid_cur(w, l, g, W, H, &t);
	if (rc)
		return rc;
	rc = parse_grid(w, g, W, H, p, len, t);
	if (!rc)
		rc = grid_put(w, l, g, t, (size_t)W * (size_t)H);
	free(t);
	return rc;
}

/* Crops or extends (with zeros) a grid of oW x oH tiles of ts bytes. */
static uint8_t *regrid(const uint8_t *t, int32_t oW, int32_t oH, int32_t nW, int32_t nH,
		       size_t ts)
{
	uint8_t *n = calloc((size_t)nW * (size_t)nH + 1, ts);
	if (!n)
		return NULL;
	int32_t cw = oW < nW ? oW : nW, chh = oH < nH ? oH : nH;
	for (int32_t y = 0; y < chh; y++)
		memcpy(n + (size_t)y * (size_t)nW * ts, t + (size_t)y * (size_t)oW * ts,
		       (size_t)cw * ts);
	return n;
}

static int resize_layer(struct twm_work *w, const struct layer *l, int32_t nW, int32_t nH)
{
	int32_t oW = sv_tw_item_get(w, l->item, 4), oH = sv_tw_item_get(w, l->item, 5);
	uint64_t lim = sv_container_opts(w->c)->max_decode;
	if ((uint64_t)nW * (uint64_t)nH * 6 > lim)
		return sv_tw_fail(w, "%d x %d tiles is over the decode limit", nW, nH);
	for (int g = 0; g < NGRID; g++) {
		if (l->grid[g] < 0)
			continue;
		uint8_t *t, *n;
		int rc = grid_cur(w, l, g, oW, oH, &t);
		if (rc)
			return rc;
		n = regrid(t, oW, oH, nW, nH, (size_t)sv_twm_grids[g].size);
		free(t);
		if (!n)
			return sv_tw_nomem(w);
		rc = grid_put(w, l, g, n, (size_t)nW * (size_t)nH);
		free(n);
		if (rc)
			return rc;
	}
	/* A physics layer's own tile array for old clients follows. */
	if (l->kind != L_TILES && l->kind != L_GAME && l->data >= 0 && l->data < w->d->num_data) {
		struct sv_blob *b;
		struct sv_err e;
		struct sv_err *keep = w->err;
		w->err = &e;
		int rc = sv_tw_data_get(w, l->data, &b);
		w->err = keep;
		if (rc == -ENOMEM)
			return sv_tw_nomem(w);
		uint8_t *old = calloc((size_t)oW * (size_t)oH + 1, 4);
		if (!old) {
			sv_blob_unref(rc ? NULL : b);
			return sv_tw_nomem(w);
		}
		if (!rc) {
			size_t n = (size_t)oW * (size_t)oH * 4;
			memcpy(old, b->data, b->len < n ? b->len : n);
			sv_blob_unref(b);
		}
		uint8_t *n = regrid(old, oW, oH, nW, nH, 4);
		free(old);
		if (!n)
			return sv_tw_nomem(w);
		rc = sv_tw_data_put(w, l->data, n, (size_t)nW * (size_t)nH * 4, NULL);
		free(n);
		if (rc)
			return rc;
	}
	int rc = sv_tw_item_set(w, l->item, 4, nW);
	return rc ? rc : sv_tw_item_set(w, l->item, 5, nH);
}

int sv_tw_apply_layer(struct twm_work *w, int32_t k, const uint8_t *p, size_t len)
{
	const struct layer *l = &w->m->lay[k];
	if (l->bad)
		return sv_tw_fail(w, "%s", l->bad);
	json_t *o;
	int rc = sv_tw_parse_json(w, p, len, &o);
	if (rc)
		return rc;
	int32_t it = l->item, v[4], x;
	const char *kind = json_string_value(json_object_get(o, "kind"));
	if (!json_is_object(o))
		rc = sv_tw_fail(w, "must be a JSON object");
	else if (!kind)
		rc = sv_tw_fail(w, "\"kind\" must be a string");
	if (rc)
		goto out;
	if (l->kind == L_OTHER) {
		static const char *const keys[] = {"kind", "type", "ints", NULL};
		json_t *a = json_object_get(o, "ints");
		int n = nints(w->d, it);
		if ((rc = sv_tw_only_keys(w, o, keys, "this layer")))
			goto out;
		if (strcmp(kind, "unknown") || (rc = sv_tw_get_int(w, o, "type", INT32_MIN, INT32_MAX, &x,
							     true)) || x != l->ltype) {
			rc = rc ? rc : sv_tw_fail(w, "\"kind\" and \"type\" cannot change");
			goto out;
		}
		if (!json_is_array(a) || json_array_size(a) != (size_t)n) {
			rc = sv_tw_fail(w, "\"ints\" must be an array of the item's %d ints", n);
			goto out;
		}
		for (int i = 0; i < n && !rc; i++) {
			json_t *e = json_array_get(a, (size_t)i);
			if (!json_is_integer(e) || json_integer_value(e) < INT32_MIN ||
			    json_integer_value(e) > INT32_MAX)
				rc = sv_tw_fail(w, "\"ints\" must hold int32 values");
			else if ((int32_t)json_integer_value(e) != geti(w->d, it, i))
				rc = sv_tw_item_set(w, it, i, (int32_t)json_integer_value(e));
		}
		if (!rc && sv_tw_item_get(w, it, 1) != l->ltype)
			rc = sv_tw_fail(w, "the layer's type (int 1) cannot change");
		goto out;
	}
	bool tiles = l->kind <= L_TUNE;
	static const char *const tkeys[] = {"kind", "name", "detail", "version", "width", "height",
					    "color", "color_envelope", "color_envelope_offset",
					    "image", NULL};
	static const char *const qkeys[] = {"kind", "name", "detail", "version", "quads", "image",
					    NULL};
	static const char *const skeys[] = {"kind", "name", "detail", "version", "sources",
					    "sound", NULL};
	rc = sv_tw_only_keys(w, o, tiles ? tkeys : l->kind == L_QUADS ? qkeys : skeys, "this layer");
	if (!rc)
		rc = sv_tw_get_int(w, o, "version", INT32_MIN, INT32_MAX, &x, true);
	if (!rc && x != l->tver)
		rc = sv_tw_fail(w, "\"version\" is %d and cannot change", l->tver);
	if (rc)
		goto out;
	/* The kind: only a tile layer and the game layer trade places. */
	enum lkind nk = l->kind;
	if (strcmp(kind, sv_twm_kind_names[l->kind])) {
		if (!strcmp(kind, "game") && l->kind == L_TILES)
			nk = L_GAME;
		else if (!strcmp(kind, "tiles") && l->kind == L_GAME)
			nk = L_TILES;
		else {
			rc = sv_tw_fail(w, "a %s layer cannot become \"%s\" (only tiles and game trade)",
				  sv_twm_kind_names[l->kind], kind);
			goto out;
		}
		rc = sv_tw_item_set(w, it, 6, (sv_tw_item_get(w, it, 6) & ~63) | (nk == L_GAME));
		if (rc)
			goto out;
	}
	bool phys = nk != L_TILES && tiles;
	int32_t nv[3];
	int r = sv_tw_get_name(w, o, 3, nv, false, l->has_name ? l->name : "");
	if (r < 0) {
		rc = r;
		goto out;
	}
	if (r == 0 && !l->has_name) {
		rc = sv_tw_fail(w, "a version %d %s layer has no name", l->tver, sv_twm_kind_names[l->kind]);
		goto out;
	}
	int nameat = tiles ? 15 : 7;
	for (int i = 0; r == 0 && i < 3 && !rc; i++)
		rc = sv_tw_item_set(w, it, nameat + i, nv[i]);
	/* DDNet's rules for physics layers bind what an edit changes; a map
	 * that broke them already keeps what it has. */
	bool kind_changed = nk != l->kind;
	if (!rc && phys && l->has_name && (r == 0 || kind_changed)) {
		char now[16];
		for (int i = 0; i < 3; i++) {
			uint32_t u = (uint32_t)sv_tw_item_get(w, it, nameat + i);
			for (int b = 0; b < 4; b++)
				now[4 * i + b] = (char)(((u >> (24 - 8 * b)) & 0xff) - 128);
		}
		now[11] = '\0';
		if (strcmp(now, sv_twm_kind_titles[nk]))
			rc = sv_tw_fail(w, "DDNet names a %s layer \"%s\"", sv_twm_kind_names[nk], sv_twm_kind_titles[nk]);
	}
	if (!rc)
		rc = sv_tw_get_bool(w, o, "detail", &x);
	if (!rc && phys && x && (x != (sv_tw_item_get(w, it, 2) & 1) || kind_changed))
		rc = sv_tw_fail(w, "a %s layer cannot be a detail layer", sv_twm_kind_names[nk]);
	if (!rc && x != (sv_tw_item_get(w, it, 2) & 1))
		rc = sv_tw_item_set(w, it, 2, (sv_tw_item_get(w, it, 2) & ~1) | x);
	if (rc)
		goto out;
	if (!tiles) {
		const char *cnt = l->kind == L_QUADS ? "quads" : "sources";
		const char *ref = l->kind == L_QUADS ? "image" : "sound";
		int32_t nref = l->kind == L_QUADS ? w->m->nimg : w->m->nsnd;
		rc = sv_tw_get_int(w, o, cnt, INT32_MIN, INT32_MAX, &x, true);
		if (!rc && x != sv_tw_item_get(w, it, 4))
			rc = sv_tw_fail(w, "\"%s\" counts %s.json and changes with it", cnt, cnt);
		if (!rc)
			rc = sv_tw_set_field(w, o, ref, it, 6, -1, nref - 1);
		goto out;
	}
	int32_t W, H;
	rc = sv_tw_get_int(w, o, "width", 2, INT32_MAX, &W, true);
	if (!rc)
		rc = sv_tw_get_int(w, o, "height", 2, INT32_MAX, &H, true);
	if (!rc && (W != sv_tw_item_get(w, it, 4) || H != sv_tw_item_get(w, it, 5)))
		rc = resize_layer(w, l, W, H);
	if (!rc)
		rc = sv_tw_get_vec(w, json_object_get(o, "color"), "\"color\"", 4, false, v);
	bool col_changed = kind_changed;
	for (int i = 0; i < 4 && !rc; i++)
		col_changed = col_changed || v[i] != sv_tw_item_get(w, it, 7 + i);
	for (int i = 0; i < 4 && !rc && col_changed; i++)
		if (v[i] < 0 || v[i] > 255)
			rc = sv_tw_fail(w, "\"color\" values are 0 to 255");
	if (!rc && phys && col_changed &&
	    (v[0] != 255 || v[1] != 255 || v[2] != 255 || v[3] != 255))
		rc = sv_tw_fail(w, "a %s layer's colour is 255 255 255 255", sv_twm_kind_names[nk]);
	for (int i = 0; i < 4 && !rc; i++)
		if (v[i] != sv_tw_item_get(w, it, 7 + i))
			rc = sv_tw_item_set(w, it, 7 + i, v[i]);
	if (!rc)
		rc = sv_tw_set_field(w, o, "color_envelope", it, 11, -1, w->m->nenv - 1);
	if (!rc)
		rc = sv_tw_set_field(w, o, "color_envelope_offset", it, 12, INT32_MIN, INT32_MAX);
	if (!rc)
		rc = sv_tw_set_field(w, o, "image", it, 13, -1, w->m->nimg - 1);
out:
	json_decref(o);
	return rc;
}

/* quads.json (38 ints a quad) or sources.json (13 ints; 9 in old layers). */
int sv_tw_apply_list(struct twm_work *w, int32_t k, const uint8_t *p, size_t len)
{
	const struct layer *l = &w->m->lay[k];
	if (l->bad)
		return sv_tw_fail(w, "%s", l->bad);
	json_t *a;
	int rc = sv_tw_parse_json(w, p, len, &a);
	if (rc)
		return rc;
	int per = l->kind == L_QUADS ? 38 : l->kind == L_SOUNDS ? 13 : 9;
	size_t n = json_array_size(a);
	struct sv_blob *old = NULL;
	struct sv_buf b;
	sv_buf_init(&b);
	if (!json_is_array(a) || n > (size_t)(INT32_MAX / 4 / per)) {
		rc = sv_tw_fail(w, "must be a JSON array");
		goto out;
	}
	static const char *const qk[] = {"points", "pivot", "colors", "texcoords",
		"position_envelope", "position_envelope_offset", "color_envelope",
		"color_envelope_offset", NULL};
	static const char *const sk[] = {"position", "loop", "pan", "time_delay", "falloff",
		"position_envelope", "position_envelope_offset", "sound_envelope",
		"sound_envelope_offset", "shape", "size", NULL};
	static const char *const ok[] = {"position", "loop", "time_delay", "falloff",
		"position_envelope", "position_envelope_offset", "sound_envelope",
		"sound_envelope_offset", NULL};
	if (sv_buf_reserve(&b, n * 4 * (size_t)per)) {
		rc = sv_tw_nomem(w);
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		json_t *o = json_array_get(a, i);
		int32_t v[38] = {0};
		char what[40];
		snprintf(what, sizeof what, "%s %zu", l->kind == L_QUADS ? "quad" : "source", i);
		if (!json_is_object(o)) {
			rc = sv_tw_fail(w, "%s must be an object", what);
			break;
		}
		if (l->kind == L_QUADS) {
			rc = sv_tw_only_keys(w, o, qk, what);
			json_t *pts = json_object_get(o, "points"), *cols = json_object_get(o, "colors"),
			       *tex = json_object_get(o, "texcoords");
			if (!rc && (!json_is_array(pts) || json_array_size(pts) != 4 ||
				    !json_is_array(cols) || json_array_size(cols) != 4 ||
				    !json_is_array(tex) || json_array_size(tex) != 4))
				rc = sv_tw_fail(w, "%s: \"points\", \"colors\" and \"texcoords\" hold 4 each",
					  what);
			for (int q = 0; q < 4 && !rc; q++) {
				rc = sv_tw_get_vec(w, json_array_get(pts, (size_t)q), "a point", 2, true,
					     &v[2 * q]);
				if (!rc)
					rc = sv_tw_get_vec(w, json_array_get(cols, (size_t)q), "a colour", 4,
						     false, &v[10 + 4 * q]);
				if (!rc)
					rc = sv_tw_get_vec(w, json_array_get(tex, (size_t)q), "a texcoord", 2,
						     true, &v[26 + 2 * q]);
			}
			if (!rc)
				rc = sv_tw_get_vec(w, json_object_get(o, "pivot"), "\"pivot\"", 2, true, &v[8]);
			for (int f = 0; f < 4 && !rc; f++)
				rc = sv_tw_get_int(w, o, qk[4 + f], INT32_MIN, INT32_MAX, &v[34 + f], true);
		} else if (l->kind == L_SOUNDS) {
			rc = sv_tw_only_keys(w, o, sk, what);
			if (!rc)
				rc = sv_tw_get_vec(w, json_object_get(o, "position"), "\"position\"", 2, true, v);
			for (int f = 1; f <= 9 && !rc; f++)
				rc = sv_tw_get_int(w, o, sk[f], INT32_MIN, INT32_MAX, &v[f + 1], true);
			if (!rc)
				rc = sv_tw_get_vec(w, json_object_get(o, "size"), "\"size\"", 2, true, &v[11]);
		} else {
			rc = sv_tw_only_keys(w, o, ok, what);
			if (!rc)
				rc = sv_tw_get_vec(w, json_object_get(o, "position"), "\"position\"", 2, true, v);
			for (int f = 1; f <= 7 && !rc; f++)
				rc = sv_tw_get_int(w, o, ok[f], INT32_MIN, INT32_MAX, &v[f + 1], true);
		}
		for (int f = 0; f < per && !rc; f++) {
			uint8_t le[4];
			wr32(le, v[f]);
			rc = sv_buf_add(&b, le, 4) ? sv_tw_nomem(w) : 0;
		}
	}
	if (rc)
		goto out;
	int32_t idx = sv_tw_item_get(w, l->item, 5);
	if (idx >= 0 && idx < w->d->num_data) {
		/* Bytes past the listed items (a dummy quad of an empty layer)
		 * are not the view's: kept when nothing is listed. */
		if (!n && !l->count)
			goto out;
		rc = sv_tw_data_put(w, idx, b.p, b.len, NULL);
	} else if (n) {
		int32_t added;
		rc = sv_tw_data_put(w, -1, b.p, b.len, &added);
		if (!rc)
			rc = sv_tw_item_set(w, l->item, 5, added);
	}
	if (!rc && (int32_t)n != sv_tw_item_get(w, l->item, 4))
		rc = sv_tw_item_set(w, l->item, 4, (int32_t)n);
out:
	sv_blob_unref(old);
	sv_buf_fini(&b);
	json_decref(a);
	return rc;
}

/* ---- envelopes ---------------------------------------------------------- */

static int item_replace(struct twm_work *w, int32_t it, const struct sv_buf *b)
{
	struct sv_buf *x = &w->o->item[it];
	x->len = 0;
	w->o->item_set[it] = true;
	return sv_buf_add(x, b->len ? b->p : (const uint8_t *)"", b->len) ? sv_tw_nomem(w) : 0;
}

/* Points: 22 ints each here (time, curve, values[4], in dx[4], in dy[4],
 * out dx[4], out dy[4]) whatever the map stores. */
static int env_points(struct twm_work *w, int32_t k, const uint8_t *p, size_t len, struct sv_buf *pts,
		      int32_t *count, bool *tangents)
{
	const struct twm *m = w->m;
	const struct env *e = &m->env[k];
	int32_t v[22];
	uint8_t le[4];
	*count = 0;
	if (!p) {
		if (e->bad)
			return sv_tw_fail(w, "envelope %d cannot be read: %s", k, e->bad);
		for (int32_t i = 0; i < e->num; i++) {
			int32_t at = (e->start + i) * m->point_ints;
			memset(v, 0, sizeof v);
			for (int f = 0; f < 6; f++)
				v[f] = geti(w->d, m->points, at + f);
			for (int f = 0; f < 16; f++)
				v[6 + f] = m->point_ints == 22 ? geti(w->d, m->points, at + 6 + f)
					 : m->bez_ok ? geti(w->d, m->bez, (e->start + i) * 16 + f) : 0;
			for (int f = 0; f < 22; f++) {
				wr32(le, v[f]);
				if (sv_buf_add(pts, le, 4))
					return sv_tw_nomem(w);
			}
		}
		*count = e->num;
		return 0;
	}
	json_t *o;
	int rc = sv_tw_parse_json(w, p, len, &o);
	if (rc)
		return rc;
	static const char *const keys[] = {"name", "version", "channels", "synchronized", "points",
					   NULL};
	static const char *const pk[] = {"time", "curve", "values", "bezier", NULL};
	int32_t it = e->item, x;
	json_t *a = json_object_get(o, "points");
	if (!json_is_object(o))
		rc = sv_tw_fail(w, "must be a JSON object");
	if (!rc)
		rc = sv_tw_only_keys(w, o, keys, "an envelope");
	if (!rc)
		rc = sv_tw_get_int(w, o, "version", INT32_MIN, INT32_MAX, &x, true);
	if (!rc && x != e->version)
		rc = sv_tw_fail(w, "\"version\" is %d and cannot change", e->version);
	if (!rc)
		rc = sv_tw_set_field(w, o, "channels", it, 1, 1, 4);
	bool has_sync = e->version >= 2 && nints(w->d, it) >= 13;
	if (!rc && json_object_get(o, "synchronized")) {
		if (!has_sync)
			rc = sv_tw_fail(w, "a version %d envelope has no \"synchronized\"", e->version);
		else if (!(rc = sv_tw_get_bool(w, o, "synchronized", &x)) && x != e->sync)
			rc = sv_tw_item_set(w, it, 12, x);
	}
	if (!rc) {
		int32_t nv[8];
		int r = sv_tw_get_name(w, o, 8, nv, false, e->name);
		if (r < 0)
			rc = r;
		for (int i = 0; r == 0 && i < 8 && !rc; i++)
			rc = sv_tw_item_set(w, it, 4 + i, nv[i]);
	}
	if (!rc && !json_is_array(a))
		rc = sv_tw_fail(w, "\"points\" must be an array");
	for (size_t i = 0; !rc && i < json_array_size(a); i++) {
		json_t *q = json_array_get(a, i), *cv, *bz;
		char what[32];
		snprintf(what, sizeof what, "point %zu", i);
		memset(v, 0, sizeof v);
		if (!json_is_object(q)) {
			rc = sv_tw_fail(w, "%s must be an object", what);
			break;
		}
		if ((rc = sv_tw_only_keys(w, q, pk, what)) ||
		    (rc = sv_tw_get_int(w, q, "time", INT32_MIN, INT32_MAX, &v[0], true)))
			break;
		cv = json_object_get(q, "curve");
		if (json_is_integer(cv) && json_integer_value(cv) >= INT32_MIN &&
		    json_integer_value(cv) <= INT32_MAX) {
			v[1] = (int32_t)json_integer_value(cv);
		} else {
			int c = -1;
			for (int n = 0; n < 6 && json_is_string(cv); n++)
				if (!strcmp(json_string_value(cv), sv_twm_curve_names[n]))
					c = n;
			if (c < 0) {
				rc = sv_tw_fail(w, "%s: \"curve\" is step, linear, slow, fast, smooth, bezier "
					  "or a number", what);
				break;
			}
			v[1] = c;
		}
		if ((rc = sv_tw_get_vec(w, json_object_get(q, "values"), "\"values\"", 4, true, &v[2])))
			break;
		bz = json_object_get(q, "bezier");
		if (bz) {
			*tangents = true;
			static const char *const side[3] = {"in", "out", NULL};
			if (!json_is_object(bz) || (rc = sv_tw_only_keys(w, bz, side, "\"bezier\""))) {
				rc = rc ? rc : sv_tw_fail(w, "%s: \"bezier\" must be an object", what);
				break;
			}
			for (int s = 0; s < 2 && !rc; s++) {
				json_t *sa = json_object_get(bz, side[s]);
				if (!json_is_array(sa) || json_array_size(sa) != 4) {
					rc = sv_tw_fail(w, "%s: \"bezier\".\"%s\" holds 4 [dx, dy] pairs", what,
						  side[s]);
					break;
				}
				for (int ch = 0; ch < 4 && !rc; ch++) {
					json_t *pr = json_array_get(sa, (size_t)ch);
					int32_t t2[2] = {0, 0};
					if (!json_is_array(pr) || json_array_size(pr) != 2 ||
					    !json_is_integer(json_array_get(pr, 0))) {
						rc = sv_tw_fail(w, "%s: a tangent is [dx in ms, dy]", what);
						break;
					}
					t2[0] = (int32_t)json_integer_value(json_array_get(pr, 0));
					if ((rc = sv_tw_to_fx(w, json_array_get(pr, 1), "a tangent's dy", &t2[1])))
						break;
					v[6 + 8 * s + ch] = t2[0];
					v[6 + 8 * s + 4 + ch] = t2[1];
				}
			}
		}
		for (int f = 0; f < 22 && !rc; f++) {
			wr32(le, v[f]);
			rc = sv_buf_add(pts, le, 4) ? sv_tw_nomem(w) : 0;
		}
		(*count)++;
	}
	json_decref(o);
	return rc;
}

/* Envelope edits.  Each edited envelope's points are parsed first; when
 * every one keeps its number of points they are written where they are
 * (nothing else moves, an unreadable envelope elsewhere included); else
 * the points item is laid out again, envelope by envelope. */
int sv_tw_apply_envs(struct twm_work *w, const uint8_t *const *ep, const size_t *el)
{
	const struct twm *m = w->m;
	struct sv_buf all, pts, bez;
	sv_buf_init(&all);
	sv_buf_init(&pts);
	sv_buf_init(&bez);
	struct sv_buf *mine = calloc((size_t)m->nenv + 1, sizeof *mine);
	int32_t *cnt = calloc((size_t)m->nenv + 1, sizeof *cnt);
	int rc = mine && cnt ? 0 : sv_tw_nomem(w);
	bool tangents = false, same = true;
	int32_t total = 0;
	const char *view = w->view;
	for (int32_t k = 0; k < m->nenv && !rc; k++) {
		if (!ep[k])
			continue;
		w->view = sv_node(w->c, m->env[k].node)->name;
		rc = env_points(w, k, ep[k], el[k], &mine[k], &cnt[k], &tangents);
		w->view = view;
		same = same && !m->env[k].bad && cnt[k] == m->env[k].num;
	}
	if (rc)
		goto out;
	if (tangents && m->point_ints != 22 && m->bez < 0) {
		rc = sv_tw_fail(w, "this map keeps no bezier tangents (DDNet keeps them in its "
			  "envpoints-bezier item, Teeworlds 0.7 in version 3 envelopes)");
		goto out;
	}
	if (m->points < 0) {
		for (int32_t k = 0; k < m->nenv && !rc; k++)
			if (cnt[k])
				rc = sv_tw_fail(w, "the map has no envelope points item to add points to");
		goto out;
	}
	if (same) {
		for (int32_t k = 0; k < m->nenv && !rc; k++) {
			for (int32_t i = 0; ep[k] && i < cnt[k] && !rc; i++) {
				const uint8_t *q = mine[k].p + (size_t)i * 88;
				int32_t pi = m->env[k].start + i;
				for (int f = 0; f < m->point_ints && !rc; f++)
					rc = sv_tw_item_set(w, m->points, pi * m->point_ints + f, rd32(q + 4 * f));
				for (int f = 0; m->point_ints == 6 && m->bez_ok && f < 16 && !rc; f++)
					rc = sv_tw_item_set(w, m->bez, pi * 16 + f, rd32(q + 24 + 4 * f));
			}
		}
		goto out;
	}
	for (int32_t k = 0; k < m->nenv && !rc; k++) {
		int32_t count = cnt[k];
		if (ep[k]) {
			rc = sv_buf_add(&all, mine[k].p, mine[k].len) ? sv_tw_nomem(w) : 0;
		} else {
			rc = env_points(w, k, NULL, 0, &all, &count, &(bool){false});
			if (rc)
				break;
		}
		if (!rc && sv_tw_item_get(w, m->env[k].item, 2) != total)
			rc = sv_tw_item_set(w, m->env[k].item, 2, total);
		if (!rc && sv_tw_item_get(w, m->env[k].item, 3) != count)
			rc = sv_tw_item_set(w, m->env[k].item, 3, count);
		total += count;
	}
	if (rc) {
		if (rc == -EINVAL) {
			char why[SV_ERR_MAX];
			snprintf(why, sizeof why, "%s", w->err->msg);
			sv_err_set(w->err, -EINVAL, "%s (points added or removed renumber every "
				   "envelope)", why);
		}
		goto out;
	}
	for (int32_t i = 0; i < total && !rc; i++) {
		const uint8_t *q = all.p + (size_t)i * 88;
		if (sv_buf_add(&pts, q, (size_t)m->point_ints * 4) ||
		    sv_buf_add(&bez, q + 24, 64))
			rc = sv_tw_nomem(w);
	}
	if (!rc)
		rc = item_replace(w, m->points, &pts);
	/* DDNet's tangents follow when it had them for every point. */
	if (!rc && m->bez >= 0 && (m->bez_ok || !m->npoints))
		rc = item_replace(w, m->bez, &bez);
out:
	for (int32_t k = 0; mine && k < m->nenv; k++)
		sv_buf_fini(&mine[k]);
	free(mine);
	free(cnt);
	sv_buf_fini(&all);
	sv_buf_fini(&pts);
	sv_buf_fini(&bez);
	return rc;
}
