/*
 * twmap.c - the map view of a Teeworlds/DDNet map (map/ beside the raw
 * view): reading the map's items and building the tree; twmap_view.c
 * makes the files' content, twmap_edit.c writes edits back.  Follows
 * DDNet's src/game/mapitems.h and its loader
 * (src/engine/shared/map.cpp), and Teeworlds 0.7 for tilemap version 4.
 *
 * Items used (offsets in int32s of the payload):
 *
 *   version  (type 0)  version (1)
 *   info     (type 1)  version, author, map_version, credits, license
 *                      (data indices of C strings, -1 none) [, settings]
 *   image    (type 2)  version, width, height, external, name (data),
 *                      data (w*h*4 RGBA, top row first) [, format (v2)]
 *   envelope (type 3)  version, channels, start_point, num_points,
 *                      name[8] [, synchronized (v2)]
 *   group    (type 4)  version, offset x y, parallax x y, start_layer,
 *                      num_layers [, clipping, clip x y w h (v2)]
 *                      [, name[3] (v3)]
 *   layer    (type 5)  version, type, flags; tiles (2): tilemap version,
 *                      width, height, flags, colour r g b a, colour env,
 *                      env offset, image, data [, name[3] (v3+)]
 *                      [, tele, speedup, front, switch, tune] (DDNet; v2
 *                      puts a prefix of them right after data);
 *                      quads (3): version, count, data, image [, name[3]];
 *                      sounds (10, old 9): version, count, data, sound,
 *                      name[3]
 *   envpoints (type 6) one item: 6 ints a point (22 when any envelope is
 *                      version 3: Teeworlds' bezier tangents)
 *   sound    (type 7)  version, external, name (data), data (Opus), size
 *   mapitemtype-envpoints-bezier@ddnet.tw: 16 ints a point
 *
 * Names in ints: 4 characters an int, first in the high byte, each + 128;
 * the last byte is the terminator (DDNet cuts there).
 *
 * Tiles: 4 bytes {index, flags, skip, reserved}; version 4 stores runs of
 * skip + 1 equal tiles.  DDNet's physics layers keep their own arrays in
 * the data index that matches their flag: tele {number, type}, speedup
 * {force, max speed, type, pad, angle i16}, switch {number, type, flags,
 * delay}, tune {number, type}; front is a tile array.
 *
 * Invariants: the tree is built from the items section alone, plus the
 * short strings naming images and sounds.  Every view's size is known
 * without decoding payload except the JSON views (lazily sized).  A
 * problem found at open marks the item's views bad (reads fail with EIO)
 * and is a warning; one found while decoding is that read's error.  An
 * edit is re-encoded into the items and data it came from, keeping every
 * byte the view does not show, and what DDNet's loader refuses is refused.
 */
#include "twmap_priv.h"

#include "codec/codec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct sv_twm_grid sv_twm_grids[NGRID] = {
	{"tiles.txt", 4, 3, "tile index (2 hex digits) and flags (1 hex digit: 1 x-flip, "
			    "2 y-flip, 4 opaque, 8 rotate); ... = 0 0"},
	{"tele.txt", 2, 4, "number and type (2 hex digits each); .... = 0 0"},
	{"speedup.txt", 6, 10, "force, max speed and type (2 hex digits each), angle "
			       "(4 hex digits, int16); .......... = all 0"},
	{"switch.txt", 4, 8, "number, type, flags and delay (2 hex digits each); "
			     "........ = all 0"},
	{"tune.txt", 2, 4, "number and type (2 hex digits each); .... = 0 0"},
};

const char *const sv_twm_kind_names[] = {
	"tiles", "game", "tele", "speedup", "front", "switch", "tune", "quads", "sounds",
	"sounds-old", "unknown",
};
/* The name DDNet gives a physics layer (and ours for an unnamed layer). */
const char *const sv_twm_kind_titles[] = {
	"Tiles", "Game", "Tele", "Speedup", "Front", "Switch", "Tune", "Quads", "Sounds",
	"Sounds", "Layer",
};
const char *const sv_twm_curve_names[6] = {"step", "linear", "slow", "fast", "smooth", "bezier"};
const char *const sv_twm_info_keys[4] = {"author", "version", "credits", "license"};

/* ---- helpers ----------------------------------------------------------- */





static bool utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2
			: (*p & 0xF8) == 0xF0 ? 3 : -1;
		if (n < 0 || (n == 1 && *p < 0xC2))
			return false;
		uint32_t cp = n ? *p & (0x3F >> n) : *p;
		p++;
		for (int i = 0; i < n; i++, p++) {
			if ((*p & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (*p & 0x3F);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
	}
	return true;
}

/* A name packed in n ints, DDNet's way (cut at the last byte; not UTF-8:
 * empty).  out holds 4n bytes. */
static void ints_name(const struct df *d, int32_t it, int at, int n, char *out)
{
	for (int i = 0; i < n; i++) {
		uint32_t v = (uint32_t)geti(d, it, at + i);
		out[4 * i] = (char)(((v >> 24) & 0xff) - 128);
		out[4 * i + 1] = (char)(((v >> 16) & 0xff) - 128);
		out[4 * i + 2] = (char)(((v >> 8) & 0xff) - 128);
		out[4 * i + 3] = (char)((v & 0xff) - 128);
	}
	out[4 * n - 1] = '\0';
	if (!utf8_ok(out))
		out[0] = '\0';
}

/* Packs s into n ints; -EINVAL if it does not fit (4n - 1 bytes). */
int sv_twm_pack_name(const char *s, int32_t *v, int n)
{
	size_t len = strlen(s);
	if (len > (size_t)4 * n - 1)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		uint32_t x = 0;
		for (int k = 0; k < 4; k++) {
			size_t at = (size_t)4 * i + k;
			uint8_t ch = at < len ? (uint8_t)s[at] : 0;
			x = x << 8 | (uint8_t)(ch + 128);
		}
		v[i] = (int32_t)x;
	}
	return 0;
}

/* A file name part: '/' and control characters replaced; empty: dflt. */
static void file_part(const char *s, const char *dflt, char *out, size_t cap)
{
	if (!*s)
		s = dflt;
	size_t k = 0;
	for (; *s; s++) {
		/* Cut before a character that does not fit whole. */
		if ((*s & 0xC0) != 0x80) {
			size_t n = 1;
			while ((s[n] & 0xC0) == 0x80)
				n++;
			if (k + n + 1 > cap)
				break;
		}
		out[k++] = (*s == '/' || (unsigned char)*s < 0x20 || *s == 0x7f) ? '_' : *s;
	}
	out[k] = '\0';
	if (!strcmp(out, ".") || !strcmp(out, ".."))
		out[0] = '_';
}

static int digits(int32_t n)
{
	int k = 2;
	for (int32_t v = 100; n > v && k < 10; v *= 10)
		k++;
	return k;
}

/* A C string in data item i (its last byte must be NUL, as DDNet's
 * GetDataString asks).  *out NULL for i == -1. */
int sv_twm_data_string(struct sv_container *c, const struct df *d, int32_t i, char **out,
		       struct sv_err *err)
{
	*out = NULL;
	if (i == -1)
		return 0;
	struct sv_blob *b;
	int rc = sv_df_data(c, d, i, 1 << 20, &b, err);
	if (rc)
		return rc;
	if (!b->len || b->data[b->len - 1]) {
		sv_blob_unref(b);
		return sv_err_set(err, -EBADMSG, "data item %d is not a string: no terminating NUL",
				  i);
	}
	*out = strdup((const char *)b->data);
	sv_blob_unref(b);
	return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
}







void sv_twm_expand_runs(const uint8_t *src, size_t n, uint8_t *out, size_t tiles, size_t *used,
			size_t *made, size_t *pad_at)
{
	size_t at = 0, k = 0;
	*pad_at = SIZE_MAX;
	for (; 4 * k + 4 <= n && at < tiles; k++) {
		const uint8_t *t = src + 4 * k;
		if (t[3] && *pad_at == SIZE_MAX)
			*pad_at = k;
		for (unsigned r = 0; r <= t[2] && at < tiles; r++, at++) {
			out[4 * at] = t[0];
			out[4 * at + 1] = t[1];
			out[4 * at + 2] = 0;
			out[4 * at + 3] = 0;
		}
	}
	*used = k;
	*made = at;
}

/* ---- reading the map's items -------------------------------------------- */

void sv_twm_free(struct twm *m)
{
	if (!m)
		return;
	for (int32_t i = 0; i < m->nimg; i++) {
		free(m->img[i].name);
		free(m->img[i].bad);
	}
	for (int32_t i = 0; i < m->nsnd; i++) {
		free(m->snd[i].name);
		free(m->snd[i].bad);
	}
	for (int32_t i = 0; i < m->nenv; i++)
		free(m->env[i].bad);
	for (int32_t i = 0; i < m->ngrp; i++)
		free(m->grp[i].bad);
	for (int32_t i = 0; i < m->nlay; i++) {
		free(m->lay[i].bad);
		free(m->lay[i].gbad);
	}
	free(m->img);
	free(m->snd);
	free(m->env);
	free(m->grp);
	free(m->lay);
	free(m->info_bad);
	for (int t = 0; t < NT; t++)
		free(m->of[t]);
	free(m);
}

int sv_twm_bad(struct sv_container *c, char **slot, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sv_twm_bad(struct sv_container *c, char **slot, const char *fmt, ...)
{
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (*slot)
		return 0;
	*slot = strdup(buf);
	sv_warn(c, "%s", buf);
	return *slot ? 0 : -ENOMEM;
}

static int read_images(struct sv_container *c, const struct df *d, struct twm *m)
{
	m->nimg = m->nof[T_IMAGE];
	m->img = calloc((size_t)m->nimg + 1, sizeof *m->img);
	if (!m->img)
		return -ENOMEM;
	uint64_t limit = sv_container_opts(c)->max_decode;
	for (int32_t k = 0; k < m->nimg; k++) {
		struct image *im = &m->img[k];
		int32_t it = im->item = m->of[T_IMAGE][k];
		im->version = geti(d, it, 0);
		im->w = geti(d, it, 1);
		im->h = geti(d, it, 2);
		im->external = geti(d, it, 3);
		im->name_data = geti(d, it, 4);
		im->data = geti(d, it, 5);
		im->format = im->version >= 2 && nints(d, it) >= 7 ? geti(d, it, 6) : 1;
		if (nints(d, it) < 6) {
			im->name_data = im->data = -1;
			if (sv_twm_bad(c, &im->bad, "map: image %d: the item has %d ints, fewer than 6", k,
				nints(d, it)))
				return -ENOMEM;
			continue;
		}
		struct sv_err e;
		sv_err_clear(&e);
		if (sv_twm_data_string(c, d, im->name_data, &im->name, &e) == -ENOMEM)
			return -ENOMEM;
		if (e.code && sv_twm_bad(c, &im->bad, "map: image %d: its name: %s", k, e.msg))
			return -ENOMEM;
		if (im->external)
			continue;
		int bpp = im->format == 0 ? 3 : 4;
		uint64_t want = (uint64_t)(uint32_t)im->w * (uint32_t)im->h * bpp;
		int rc = 0;
		if (im->format != 0 && im->format != 1)
			rc = sv_twm_bad(c, &im->bad, "map: image %d: format %d is not RGB (0) or RGBA (1)", k,
				 im->format);
		else if (im->w <= 0 || im->h <= 0)
			rc = sv_twm_bad(c, &im->bad, "map: image %d: size %d x %d", k, im->w, im->h);
		else if (want > limit)
			rc = sv_twm_bad(c, &im->bad, "map: image %d: %d x %d is over the decode limit", k,
				 im->w, im->h);
		else if (im->data < 0 || im->data >= d->num_data)
			rc = sv_twm_bad(c, &im->bad, "map: image %d: data index %d does not exist", k,
				 im->data);
		else if (d->data[im->data].raw < want)
			rc = sv_twm_bad(c, &im->bad,
				 "map: image %d: data item %d holds %u bytes, fewer than %d x %d x %d "
				 "= %llu", k, im->data, d->data[im->data].raw, im->w, im->h, bpp,
				 (unsigned long long)want);
		if (rc)
			return rc;
	}
	return 0;
}

static int read_sounds(struct sv_container *c, const struct df *d, struct twm *m)
{
	m->nsnd = m->nof[T_SOUND];
	m->snd = calloc((size_t)m->nsnd + 1, sizeof *m->snd);
	if (!m->snd)
		return -ENOMEM;
	for (int32_t k = 0; k < m->nsnd; k++) {
		struct sound *s = &m->snd[k];
		int32_t it = s->item = m->of[T_SOUND][k];
		s->version = geti(d, it, 0);
		s->external = geti(d, it, 1);
		s->name_data = geti(d, it, 2);
		s->data = geti(d, it, 3);
		if (nints(d, it) < 5) {
			s->name_data = s->data = -1;
			if (sv_twm_bad(c, &s->bad, "map: sound %d: the item has %d ints, fewer than 5", k,
				nints(d, it)))
				return -ENOMEM;
			continue;
		}
		struct sv_err e;
		sv_err_clear(&e);
		if (sv_twm_data_string(c, d, s->name_data, &s->name, &e) == -ENOMEM)
			return -ENOMEM;
		if (e.code && sv_twm_bad(c, &s->bad, "map: sound %d: its name: %s", k, e.msg))
			return -ENOMEM;
		if (!s->external && (s->data < 0 || s->data >= d->num_data) &&
		    sv_twm_bad(c, &s->bad, "map: sound %d: data index %d does not exist", k, s->data))
			return -ENOMEM;
	}
	return 0;
}

static int read_envelopes(struct sv_container *c, const struct df *d, struct twm *m)
{
	m->nenv = m->nof[T_ENV];
	m->env = calloc((size_t)m->nenv + 1, sizeof *m->env);
	if (!m->env)
		return -ENOMEM;
	bool tw_bezier = false;
	for (int32_t k = 0; k < m->nenv; k++)
		if (geti(d, m->of[T_ENV][k], 0) >= 3)
			tw_bezier = true;
	m->point_ints = tw_bezier ? 22 : 6;
	m->points = m->nof[T_POINTS] ? m->of[T_POINTS][0] : -1;
	m->npoints = m->points >= 0 ? nints(d, m->points) / m->point_ints : 0;
	int bt = sv_df_ext_type(d, "mapitemtype-envpoints-bezier@ddnet.tw");
	m->bez = -1;
	for (int32_t i = 0; bt >= 0 && i < d->num_items; i++)
		if (d->items[i].type == bt) {
			m->bez = i;
			break;
		}
	m->bez_ok = !tw_bezier && m->bez >= 0 && nints(d, m->bez) == 16 * m->npoints;
	for (int32_t k = 0; k < m->nenv; k++) {
		struct env *e = &m->env[k];
		int32_t it = e->item = m->of[T_ENV][k];
		e->version = geti(d, it, 0);
		e->channels = geti(d, it, 1);
		e->start = geti(d, it, 2);
		e->num = geti(d, it, 3);
		e->sync = e->version >= 2 && nints(d, it) >= 13 ? geti(d, it, 12) : 0;
		int rc = 0;
		if (nints(d, it) < 12)
			rc = sv_twm_bad(c, &e->bad, "map: envelope %d: the item has %d ints, fewer than 12", k,
				 nints(d, it));
		else if (e->start < 0 || e->num < 0 || (int64_t)e->start + e->num > m->npoints)
			rc = sv_twm_bad(c, &e->bad,
				 "map: envelope %d: points %d to %lld, but the map has %d points", k,
				 e->start, (long long)e->start + e->num - 1, m->npoints);
		if (rc)
			return rc;
		if (geti(d, it, 4) != -1)
			ints_name(d, it, 4, 8, e->name);
	}
	return 0;
}

/* A tile layer, as DDNet's UpgradeAndValidateTilesLayerItem reads it. */
static int read_tilemap(struct sv_container *c, const struct df *d, struct layer *l, int32_t k)
{
	int32_t it = l->item;
	int n = nints(d, it);
	if (n < 15)
		return sv_twm_bad(c, &l->bad, "map: layer %d: tile layer item of %d ints, fewer than 15", k,
			   n);
	l->tver = geti(d, it, 3);
	l->w = geti(d, it, 4);
	l->h = geti(d, it, 5);
	l->tflags = geti(d, it, 6);
	l->image = geti(d, it, 13);
	l->data = geti(d, it, 14);
	if (l->tver < 2 || l->tver > 4)
		return sv_twm_bad(c, &l->bad, "map: layer %d: tile layer version %d (2 to 4 are known)", k,
			   l->tver);
	int phys = l->tflags & 63;
	if (phys & (phys - 1))
		return sv_twm_bad(c, &l->bad, "map: layer %d: flags %d set more than one physics kind", k,
			   l->tflags);
	l->kind = phys == 0 ? L_TILES : phys == 1 ? L_GAME : phys == 2 ? L_TELE
		: phys == 4 ? L_SPEEDUP : phys == 8 ? L_FRONT : phys == 16 ? L_SWITCH : L_TUNE;
	if (l->tver >= 3) {
		if (n < 18)
			return sv_twm_bad(c, &l->bad, "map: layer %d: version %d tile layer of %d ints: its "
				   "name is cut short", k, l->tver, n);
		l->has_name = true;
		ints_name(d, it, 15, 3, l->name);
		l->phys_at = 18;
	} else {
		l->phys_at = 15;
	}
	static const enum lkind pkind[NPHYS] = {L_TELE, L_SPEEDUP, L_FRONT, L_SWITCH, L_TUNE};
	for (int p = 0; p < NPHYS; p++) {
		l->phys[p] = l->phys_at + p < n ? geti(d, it, l->phys_at + p) : -1;
		if (l->kind == pkind[p] && l->phys_at + p >= n)
			return sv_twm_bad(c, &l->bad, "map: layer %d: %s layer item of %d ints has no %s data "
				   "index", k, sv_twm_kind_names[l->kind], n, sv_twm_kind_names[l->kind]);
	}
	for (int g = 0; g < NGRID; g++)
		l->grid[g] = -1;
	switch (l->kind) {
	case L_TILES: case L_GAME: l->grid[G_TILES] = l->data; break;
	case L_FRONT: l->grid[G_TILES] = l->phys[P_FRONT]; break;
	case L_TELE: l->grid[G_TELE] = l->phys[P_TELE]; break;
	case L_SPEEDUP: l->grid[G_SPEEDUP] = l->phys[P_SPEEDUP]; break;
	case L_SWITCH: l->grid[G_SWITCH] = l->phys[P_SWITCH]; break;
	default: l->grid[G_TUNE] = l->phys[P_TUNE]; break;
	}
	if (l->w < 2 || l->h < 2)
		return sv_twm_bad(c, &l->bad, "map: layer %d: size %d x %d (at least 2 x 2)", k, l->w,
			   l->h);
	uint64_t tiles = (uint64_t)l->w * (uint64_t)l->h;
	if (tiles * 10 > sv_container_opts(c)->max_decode)
		return sv_twm_bad(c, &l->bad, "map: layer %d: %d x %d tiles is over the decode limit", k,
			   l->w, l->h);
	if (l->tver >= 4 && l->kind != L_TILES && l->kind != L_GAME)
		return sv_twm_bad(c, &l->gbad, "map: layer %d: a %s layer cannot use version 4's tile runs",
			   k, sv_twm_kind_names[l->kind]);
	for (int g = 0; g < NGRID; g++) {
		if (l->grid[g] == -1)
			continue;
		if (l->grid[g] < 0 || l->grid[g] >= d->num_data)
			return sv_twm_bad(c, &l->gbad, "map: layer %d: data index %d does not exist (%d data "
				   "items)", k, l->grid[g], d->num_data);
		uint32_t raw = d->data[l->grid[g]].raw;
		if (l->tver < 4 && raw / sv_twm_grids[g].size < tiles)
			return sv_twm_bad(c, &l->gbad, "map: layer %d: data item %d holds %u bytes, fewer than "
				   "%d x %d tiles of %d bytes", k, l->grid[g], raw, l->w, l->h,
				   sv_twm_grids[g].size);
	}
	return 0;
}

static int read_layers(struct sv_container *c, const struct df *d, struct twm *m)
{
	m->game = m->front = -1;
	for (int32_t k = 0; k < m->nlay; k++) {
		struct layer *l = &m->lay[k];
		int32_t it = l->item = m->of[T_LAYER][k];
		l->kind = L_OTHER;
		for (int g = 0; g < NGRID; g++)
			l->grid[g] = -1;
		for (int p = 0; p < NPHYS; p++)
			l->phys[p] = -1;
		if (l->group < 0)
			continue; /* not shown; the game ignores it */
		int n = nints(d, it);
		if (n < 3) {
			if (sv_twm_bad(c, &l->bad, "map: layer %d: the item has %d ints, fewer than 3", k, n))
				return -ENOMEM;
			continue;
		}
		l->ltype = geti(d, it, 1);
		l->lflags = geti(d, it, 2);
		int rc = 0;
		if (l->ltype == 2) {
			rc = read_tilemap(c, d, l, k);
			if (!l->bad && l->kind == L_GAME) {
				if (m->game >= 0)
					sv_warn(c, "map: layer %d is a second game layer (DDNet uses the "
						   "last)", k);
				m->game = k;
			}
			if (!l->bad && l->kind == L_FRONT && m->front < 0)
				m->front = k;
		} else if (l->ltype == 3 || l->ltype == 9 || l->ltype == 10) {
			l->kind = l->ltype == 3 ? L_QUADS : l->ltype == 10 ? L_SOUNDS : L_OLDSOUNDS;
			if (n < 7) {
				rc = sv_twm_bad(c, &l->bad, "map: layer %d: %s layer item of %d ints, fewer "
					 "than 7", k, sv_twm_kind_names[l->kind], n);
			} else {
				l->tver = geti(d, it, 3);
				l->count = geti(d, it, 4);
				l->qdata = geti(d, it, 5);
				l->image = geti(d, it, 6);
				if (n >= 10 && (l->kind != L_QUADS || l->tver >= 2)) {
					l->has_name = true;
					ints_name(d, it, 7, 3, l->name);
				}
				if (l->count < 0)
					rc = sv_twm_bad(c, &l->bad, "map: layer %d: %d items", k, l->count);
				else if (l->count && (l->qdata < 0 || l->qdata >= d->num_data))
					rc = sv_twm_bad(c, &l->bad, "map: layer %d: data index %d does not "
						 "exist", k, l->qdata);
			}
		}
		if (rc)
			return rc;
	}
	/* Data indices used by two tile grids: DDNet refuses the second. */
	for (int32_t k = 0; k < m->nlay; k++)
		for (int g = 0; g < NGRID && !m->lay[k].bad && !m->lay[k].gbad; g++)
			for (int32_t j = 0; j < k && m->lay[k].grid[g] >= 0; j++)
				for (int h = 0; h < NGRID; h++)
					if (!m->lay[j].bad && !m->lay[j].gbad &&
					    m->lay[j].grid[h] == m->lay[k].grid[g] &&
					    sv_twm_bad(c, &m->lay[k].gbad, "map: layer %d: data item %d is "
						"also layer %d's", k, m->lay[k].grid[g], j))
						return -ENOMEM;
	return 0;
}

static int read_groups(struct sv_container *c, const struct df *d, struct twm *m)
{
	m->ngrp = m->nof[T_GROUP];
	m->grp = calloc((size_t)m->ngrp + 1, sizeof *m->grp);
	m->nlay = m->nof[T_LAYER];
	m->lay = calloc((size_t)m->nlay + 1, sizeof *m->lay);
	if (!m->grp || !m->lay)
		return -ENOMEM;
	for (int32_t k = 0; k < m->nlay; k++)
		m->lay[k].group = -1;
	for (int32_t k = 0; k < m->ngrp; k++) {
		struct group *g = &m->grp[k];
		int32_t it = g->item = m->of[T_GROUP][k];
		g->version = geti(d, it, 0);
		g->start = geti(d, it, 5);
		g->num = geti(d, it, 6);
		if (g->version >= 3 && nints(d, it) >= 15)
			ints_name(d, it, 12, 3, g->name);
		int rc = 0;
		if (nints(d, it) < 7)
			rc = sv_twm_bad(c, &g->bad, "map: group %d: the item has %d ints, fewer than 7", k,
				 nints(d, it));
		else if (g->start < 0 || g->num < 0 || (int64_t)g->start + g->num > m->nlay)
			rc = sv_twm_bad(c, &g->bad, "map: group %d: layers %d to %lld, but the map has %d "
				 "layer%s", k, g->start, (long long)g->start + g->num - 1, m->nlay,
				 m->nlay == 1 ? "" : "s");
		if (rc)
			return rc;
		if (g->bad)
			continue;
		for (int32_t j = g->start; j < g->start + g->num; j++) {
			if (m->lay[j].group >= 0) {
				if (sv_twm_bad(c, &g->bad, "map: group %d: layer %d is also group %d's", k, j,
					m->lay[j].group))
					return -ENOMEM;
				break;
			}
		}
		if (!g->bad)
			for (int32_t j = g->start; j < g->start + g->num; j++)
				m->lay[j].group = k;
	}
	int32_t loose = 0;
	for (int32_t j = 0; j < m->nlay; j++)
		loose += m->lay[j].group < 0;
	if (loose && m->ngrp)
		sv_warn(c, "map: %d layer%s belong%s to no group: the game ignores %s", loose,
			loose == 1 ? "" : "s", loose == 1 ? "s" : "", loose == 1 ? "it" : "them");
	return 0;
}

/* The names the tree shows that are stored as data (the images' and
 * sounds', the info's strings), hinted together: a remote map's listing
 * fetches them in one round trip. */
static void hint_names(struct sv_container *c, const struct df *d, const struct twm *m)
{
	struct sv_range r[64];
	size_t n = 0;
	static const struct {
		int type, first, count, min;
	} at[] = {{T_INFO, 1, 4, 5}, {T_IMAGE, 4, 1, 6}, {T_SOUND, 2, 1, 5}};
	for (size_t t = 0; t < sizeof at / sizeof *at; t++)
		for (int32_t k = 0; k < m->nof[at[t].type]; k++) {
			int32_t it = m->of[at[t].type][k];
			for (int j = 0; nints(d, it) >= at[t].min && j < at[t].count; j++) {
				int32_t i = geti(d, it, at[t].first + j);
				if (i >= 0 && i < d->num_data && !d->data[i].bad && n < 64)
					r[n++] = (struct sv_range){d->data[i].off, d->data[i].len};
			}
		}
	sv_container_hint(c, r, n);
}

static int read_map(struct sv_container *c, const struct df *d, struct twm *m)
{
	for (int t = 0; t < NT; t++) {
		m->of[t] = calloc((size_t)d->num_items + 1, sizeof *m->of[t]);
		if (!m->of[t])
			return -ENOMEM;
	}
	for (int32_t i = 0; i < d->num_items; i++)
		if (d->items[i].type < NT)
			m->of[d->items[i].type][m->nof[d->items[i].type]++] = i;
	m->info = m->nof[T_INFO] ? m->of[T_INFO][0] : -1;
	if (m->info >= 0 && nints(d, m->info) < 5 &&
	    sv_twm_bad(c, &m->info_bad, "map: the info item has %d ints, fewer than 5",
		nints(d, m->info)))
		return -ENOMEM;
	hint_names(c, d, m);
	int rc = read_images(c, d, m);
	if (!rc)
		rc = read_sounds(c, d, m);
	if (!rc)
		rc = read_envelopes(c, d, m);
	if (!rc)
		rc = read_groups(c, d, m);
	if (!rc)
		rc = read_layers(c, d, m);
	if (!rc && m->game < 0 && m->ngrp)
		sv_warn(c, "map: no game layer (DDNet refuses this map)");
	return rc;
}

/* ---- the tree ----------------------------------------------------------- */

#define LAZY (SV_KIND_DECODED_ON_STAT)

uint64_t sv_twm_grid_header(const struct twm *m, const struct layer *l, int g, char *buf,
			    size_t cap)
{
	const struct group *gr = &m->grp[l->group];
	char gname[64];
	file_part(gr->name, "Group", gname, sizeof gname);
	int n = snprintf(buf, cap,
			 "# layer %s in group %0*d-%s: %s, %d x %d, tilemap version %d\n"
			 "# cell: %s\n", l->dname, m->ndig_grp, l->group, gname,
			 sv_twm_kind_names[l->kind], l->w, l->h, l->tver, sv_twm_grids[g].cell);
	return n < 0 ? 0 : (uint64_t)n;
}

static uint64_t grid_size(const struct twm *m, const struct layer *l, int g)
{
	char buf[600];
	return sv_twm_grid_header(m, l, g, buf, sizeof buf) +
	       (uint64_t)l->h * ((uint64_t)l->w * (sv_twm_grids[g].cw + 1));
}

static int add_layer(struct sv_container *c, const struct df *d, struct twm *m, int32_t k,
		     uint32_t gdir)
{
	struct layer *l = &m->lay[k];
	char part[64];
	/* A broken item is named as an unknown layer: its fields are not trusted. */
	file_part(l->bad ? "" : l->name, sv_twm_kind_titles[l->bad ? L_OTHER : l->kind], part,
		  sizeof part);
	snprintf(l->dname, sizeof l->dname, "%0*d-%s", m->ndig_lay, k, part);
	l->dir = sv_node_add(c, gdir, l->dname, SV_N_DIR, 0, KEY(K_MDIR, 0));
	if (l->dir == SV_NONE)
		return -ENOMEM;
	uint32_t badf = l->bad ? SV_N_BAD : 0;
	/* A broken item still shows its ints and what is wrong with them. */
	l->node = sv_node_add(c, l->dir, "layer.json", SV_N_LAZYSIZE | (l->bad ? SV_N_RO : 0), 0,
			      KEY(K_LAYER, k));
	if (l->node == SV_NONE)
		return -ENOMEM;
	for (int g = 0; g < NGRID; g++) {
		l->gnode[g] = SV_NONE;
		if (l->grid[g] < 0)
			continue;
		bool gb = l->bad || l->gbad;
		uint64_t size = gb ? 0 : grid_size(m, l, g);
		l->gnode[g] = sv_node_add(c, l->dir, sv_twm_grids[g].file, gb ? SV_N_BAD : 0, size,
					  KEY(K_GRID, (uint32_t)k << 3 | (uint32_t)g));
		if (l->gnode[g] == SV_NONE)
			return -ENOMEM;
	}
	if (l->kind >= L_QUADS && l->kind <= L_OLDSOUNDS) {
		l->lnode = sv_node_add(c, l->dir, l->kind == L_QUADS ? "quads.json" : "sources.json",
				       LAZY | badf, 0, KEY(l->kind == L_QUADS ? K_QUADS : K_SOURCES, k));
		if (l->lnode == SV_NONE)
			return -ENOMEM;
	}
	(void)d;
	return 0;
}

int sv_twm_build(struct sv_container *c, struct df *d)
{
	/* A map has a version item; other datafiles keep the raw view only. */
	int32_t ver = -1;
	for (int32_t i = 0; i < d->num_items && ver < 0; i++)
		if (d->items[i].type == T_VERSION && d->items[i].id == 0)
			ver = i;
	if (ver < 0)
		return 0;
	if (nints(d, ver) < 1 || geti(d, ver, 0) != 1) {
		sv_warn(c, "map: map version %d is not supported (only 1): no map/ view",
			geti(d, ver, 0));
		return 0;
	}
	struct twm *m = calloc(1, sizeof *m);
	if (!m)
		return -ENOMEM;
	d->map = m;
	int rc = read_map(c, d, m);
	if (rc)
		return rc;
	m->ndig_img = digits(m->nimg);
	m->ndig_snd = digits(m->nsnd);
	m->ndig_env = digits(m->nenv);
	m->ndig_grp = digits(m->ngrp);
	m->ndig_lay = digits(m->nlay);
	m->dir = sv_node_add(c, SV_ROOT, "map", SV_N_DIR, 0, KEY(K_MDIR, 0));
	if (m->dir == SV_NONE)
		return -ENOMEM;
	char name[128], part[64];
	m->info_node = m->settings_node = m->game_node = m->images_node = SV_NONE;
	/* A map without an info item (older maps) shows them too, empty: an
	 * edit of either adds the item, as DDNet's editor writes it. */
	uint32_t f = LAZY | (m->info_bad ? SV_N_BAD : 0);
	m->info_node = sv_node_add(c, m->dir, "info.json", f, 0, KEY(K_INFO, 0));
	m->settings_node = sv_node_add(c, m->dir, "settings.cfg", f, 0, KEY(K_SETTINGS, 0));
	if (m->info_node == SV_NONE || m->settings_node == SV_NONE)
		return -ENOMEM;
	if (m->nimg) {
		uint32_t dir = sv_node_add(c, m->dir, "images", SV_N_DIR, 0, KEY(K_MDIR, 0));
		m->images_node = sv_node_add(c, m->dir, "images.json", SV_N_RO | SV_N_LAZYSIZE, 0,
					     KEY(K_IMAGES, 0));
		if (dir == SV_NONE || m->images_node == SV_NONE)
			return -ENOMEM;
		for (int32_t k = 0; k < m->nimg; k++) {
			struct image *im = &m->img[k];
			im->node = SV_NONE;
			if (im->external)
				continue;
			file_part(im->name ? im->name : "", "image", part, sizeof part);
			snprintf(name, sizeof name, "%0*d-%s.png", m->ndig_img, k, part);
			im->node = sv_node_add(c, dir, name, im->bad ? SV_N_BAD : 0,
					       im->bad ? 0 : sv_png_size((uint32_t)im->w, (uint32_t)im->h, 255),
					       KEY(K_IMAGE, k));
			if (im->node == SV_NONE)
				return -ENOMEM;
		}
	}
	if (m->nsnd) {
		uint32_t dir = sv_node_add(c, m->dir, "sounds", SV_N_DIR, 0, KEY(K_MDIR, 0));
		if (dir == SV_NONE)
			return -ENOMEM;
		for (int32_t k = 0; k < m->nsnd; k++) {
			struct sound *s = &m->snd[k];
			s->node = SV_NONE;
			if (s->external)
				continue;
			file_part(s->name ? s->name : "", "sound", part, sizeof part);
			snprintf(name, sizeof name, "%0*d-%s.opus", m->ndig_snd, k, part);
			s->node = sv_node_add(c, dir, name, s->bad ? SV_N_BAD : 0,
					      s->bad ? 0 : d->data[s->data].raw, KEY(K_SOUND, k));
			if (s->node == SV_NONE)
				return -ENOMEM;
		}
	}
	if (m->nenv) {
		uint32_t dir = sv_node_add(c, m->dir, "envelopes", SV_N_DIR, 0, KEY(K_MDIR, 0));
		if (dir == SV_NONE)
			return -ENOMEM;
		for (int32_t k = 0; k < m->nenv; k++) {
			struct env *e = &m->env[k];
			file_part(e->name, "Envelope", part, sizeof part);
			snprintf(name, sizeof name, "%0*d-%s.json", m->ndig_env, k, part);
			e->node = sv_node_add(c, dir, name, SV_N_LAZYSIZE | (e->bad ? SV_N_BAD : 0), 0,
					      KEY(K_ENV, k));
			if (e->node == SV_NONE)
				return -ENOMEM;
		}
	}
	if (m->ngrp) {
		uint32_t dir = sv_node_add(c, m->dir, "groups", SV_N_DIR, 0, KEY(K_MDIR, 0));
		if (dir == SV_NONE)
			return -ENOMEM;
		for (int32_t k = 0; k < m->ngrp; k++) {
			struct group *g = &m->grp[k];
			file_part(g->name, "Group", part, sizeof part);
			snprintf(name, sizeof name, "%0*d-%s", m->ndig_grp, k, part);
			g->dir = sv_node_add(c, dir, name, SV_N_DIR, 0, KEY(K_MDIR, 0));
			if (g->dir == SV_NONE)
				return -ENOMEM;
			g->node = sv_node_add(c, g->dir, "group.json",
					      SV_N_LAZYSIZE | (g->bad ? SV_N_BAD : 0), 0, KEY(K_GROUP, k));
			if (g->node == SV_NONE)
				return -ENOMEM;
			if (g->bad)
				continue;
			for (int32_t j = g->start; j < g->start + g->num; j++)
				if ((rc = add_layer(c, d, m, j, g->dir)))
					return rc;
		}
	}
	if (m->game >= 0 && m->lay[m->game].group >= 0) {
		const struct layer *l = &m->lay[m->game];
		m->game_node = sv_node_add(c, m->dir, "game.png", SV_N_RO | (l->gbad ? SV_N_BAD : 0),
					   sv_png_size((uint32_t)l->w, (uint32_t)l->h, 255),
					   KEY(K_GAMEPNG, 0));
		if (m->game_node == SV_NONE)
			return -ENOMEM;
	}
	return 0;
}

