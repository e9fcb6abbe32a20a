/*
 * twmap.c - the map view of a Teeworlds/DDNet map (map/ beside the raw
 * view), following DDNet's src/game/mapitems.h and its loader
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
#include "twmap.h"

#include "doodle.h"
#include "rd.h"

#include <errno.h>
#include <limits.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	K_MDIR = 16, K_INFO, K_SETTINGS, K_IMAGES, K_IMAGE, K_SOUND, K_ENV, K_GROUP,
	K_LAYER, K_GRID, K_QUADS, K_SOURCES, K_GAMEPNG,
};
/* K_GRID nodes: index = layer << 3 | grid. */

enum { T_VERSION, T_INFO, T_IMAGE, T_ENV, T_GROUP, T_LAYER, T_POINTS, T_SOUND, NT };

enum { G_TILES, G_TELE, G_SPEEDUP, G_SWITCH, G_TUNE, NGRID };

static const struct {
	const char *file;
	int size;       /* bytes a tile */
	int cw;         /* characters a cell */
	const char *cell;
} grids[NGRID] = {
	{"tiles.txt", 4, 3, "tile index (2 hex digits) and flags (1 hex digit: 1 x-flip, "
			    "2 y-flip, 4 opaque, 8 rotate); ... = 0 0"},
	{"tele.txt", 2, 4, "number and type (2 hex digits each); .... = 0 0"},
	{"speedup.txt", 6, 10, "force, max speed and type (2 hex digits each), angle "
			       "(4 hex digits, int16); .......... = all 0"},
	{"switch.txt", 4, 8, "number, type, flags and delay (2 hex digits each); "
			     "........ = all 0"},
	{"tune.txt", 2, 4, "number and type (2 hex digits each); .... = 0 0"},
};

enum lkind {
	L_TILES, L_GAME, L_TELE, L_SPEEDUP, L_FRONT, L_SWITCH, L_TUNE, L_QUADS, L_SOUNDS,
	L_OLDSOUNDS, L_OTHER,
};
static const char *const kind_names[] = {
	"tiles", "game", "tele", "speedup", "front", "switch", "tune", "quads", "sounds",
	"sounds-old", "unknown",
};
/* The name DDNet gives a physics layer (and ours for an unnamed layer). */
static const char *const kind_titles[] = {
	"Tiles", "Game", "Tele", "Speedup", "Front", "Switch", "Tune", "Quads", "Sounds",
	"Sounds", "Layer",
};
/* Where DDNet keeps each physics data index, after the name (v3+) or
 * right after data (v2): tele, speedup, front, switch, tune. */
enum { P_TELE, P_SPEEDUP, P_FRONT, P_SWITCH, P_TUNE, NPHYS };

struct image {
	int32_t item, version, w, h, external, name_data, data, format;
	char *name;
	char *bad;
	uint32_t node;
};

struct sound {
	int32_t item, version, external, name_data, data;
	char *name;
	char *bad;
	uint32_t node;
};

struct env {
	int32_t item, version, channels, start, num, sync;
	char name[40];
	char *bad;
	uint32_t node;
};

struct group {
	int32_t item, version, start, num;
	char name[16];
	char *bad;
	uint32_t dir, node;
};

struct layer {
	int32_t item, group;
	enum lkind kind;
	int32_t ltype, lflags;
	int32_t tver, w, h, tflags, image, data;  /* tile layers */
	int32_t phys[NPHYS];   /* as DDNet reads them; -1 absent */
	int phys_at;           /* int offset of the physics indices, 0: none */
	int32_t grid[NGRID];   /* data index of each grid shown, -1 none */
	int32_t count, qdata;  /* quads and sounds */
	bool has_name;
	char name[16];
	char *bad;             /* the item cannot be read */
	char *gbad;            /* its tile data cannot be read */
	char dname[80];
	uint32_t dir, node, gnode[NGRID], lnode;
};

struct twm {
	struct image *img;
	struct sound *snd;
	struct env *env;
	struct group *grp;
	struct layer *lay;
	int32_t nimg, nsnd, nenv, ngrp, nlay;
	int32_t info;          /* item index, -1 */
	char *info_bad;
	int32_t points, bez;   /* item indices, -1 */
	int point_ints;        /* 6, or 22 with Teeworlds beziers */
	int32_t npoints;
	bool bez_ok;           /* DDNet's bezier item matches the points */
	int32_t game, front;   /* layer indices, -1 */
	int ndig_img, ndig_snd, ndig_env, ndig_grp, ndig_lay;
	uint32_t dir, info_node, settings_node, game_node;
	int32_t *of[NT];       /* items of each map type, file order */
	int32_t nof[NT];
};

/* ---- helpers ----------------------------------------------------------- */

static int32_t geti(const struct df *d, int32_t it, int k)
{
	if (it < 0 || k < 0 || (uint32_t)k >= d->items[it].len / 4)
		return 0;
	const uint8_t *p = d->items_sec + d->items[it].off + 4 * (size_t)k;
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

static int nints(const struct df *d, int32_t it)
{
	return it < 0 ? 0 : (int)(d->items[it].len / 4);
}

static int32_t rd32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

static void wr32(uint8_t *p, int32_t v)
{
	sv_put_u32le(p, (uint32_t)v);
}

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
static int pack_name(const char *s, int32_t *v, int n)
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
static int data_string(struct sv_container *c, const struct df *d, int32_t i, char **out,
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

static int blob_text(struct sv_buf *b, struct sv_blob **out)
{
	*out = sv_blob_dup(b->p ? b->p : (uint8_t *)"", b->len);
	sv_buf_fini(b);
	return *out ? 0 : -ENOMEM;
}

/* The end of the JSON string starting at s[i] (the opening quote). */
static size_t str_end(const char *s, size_t i)
{
	for (i++; s[i] && s[i] != '"'; i++)
		if (s[i] == '\\' && s[i + 1])
			i++;
	return s[i] ? i + 1 : i;
}

/* Puts each array of scalars on one line ("[1, 2]"), in place. */
static void compact_arrays(char *s)
{
	size_t r = 0, o = 0;
	while (s[r]) {
		if (s[r] == '"') {
			size_t e = str_end(s, r);
			memmove(s + o, s + r, e - r);
			o += e - r;
			r = e;
			continue;
		}
		if (s[r] != '[') {
			s[o++] = s[r++];
			continue;
		}
		/* Scalars only up to the matching ']'? */
		size_t e = r + 1;
		bool flat = true;
		while (s[e] && s[e] != ']') {
			if (s[e] == '[' || s[e] == '{') {
				flat = false;
				break;
			}
			e = s[e] == '"' ? str_end(s, e) : e + 1;
		}
		if (!flat || !s[e]) {
			s[o++] = s[r++];
			continue;
		}
		s[o++] = '[';
		bool first = true;
		for (size_t k = r + 1; k < e;) {
			while (k < e && (s[k] == ' ' || s[k] == '\n' || s[k] == ','))
				k++;
			if (k == e)
				break;
			size_t t = k;
			if (s[k] == '"')
				t = str_end(s, k);
			else
				while (t < e && s[t] != ',' && s[t] != ' ' && s[t] != '\n')
					t++;
			if (!first) {
				s[o++] = ',';
				s[o++] = ' ';
			}
			first = false;
			memmove(s + o, s + k, t - k);
			o += t - k;
			k = t;
		}
		s[o++] = ']';
		r = e + 1;
	}
	s[o] = '\0';
}

static int blob_json(json_t *j, struct sv_blob **out, struct sv_err *err)
{
	char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))
		    : NULL;
	json_decref(j);
	if (!s)
		return sv_err_set(err, -ENOMEM, "map: out of memory");
	compact_arrays(s);
	size_t n = strlen(s);
	*out = sv_blob_new(n + 1);
	if (*out) {
		memcpy((*out)->data, s, n);
		(*out)->data[n] = '\n';
	}
	free(s);
	return *out ? 0 : sv_err_set(err, -ENOMEM, "map: out of memory");
}

/* A 22.10 fixed-point value as a JSON number (exact). */
static json_t *fx(int32_t v)
{
	return json_real((double)v / 1024.0);
}

static json_t *jstr(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (!j) { /* not UTF-8: bytes past ASCII shown as '?' */
		char *t = strdup(s);
		if (!t)
			return NULL;
		for (char *p = t; *p; p++)
			if ((unsigned char)*p >= 0x80)
				*p = '?';
		j = json_string(t);
		free(t);
	}
	return j;
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

static int bad(struct sv_container *c, char **slot, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct sv_container *c, char **slot, const char *fmt, ...)
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
			if (bad(c, &im->bad, "map: image %d: the item has %d ints, fewer than 6", k,
				nints(d, it)))
				return -ENOMEM;
			continue;
		}
		struct sv_err e;
		sv_err_clear(&e);
		if (data_string(c, d, im->name_data, &im->name, &e) == -ENOMEM)
			return -ENOMEM;
		if (e.code && bad(c, &im->bad, "map: image %d: its name: %s", k, e.msg))
			return -ENOMEM;
		if (im->external)
			continue;
		int bpp = im->format == 0 ? 3 : 4;
		uint64_t want = (uint64_t)(uint32_t)im->w * (uint32_t)im->h * bpp;
		int rc = 0;
		if (im->format != 0 && im->format != 1)
			rc = bad(c, &im->bad, "map: image %d: format %d is not RGB (0) or RGBA (1)", k,
				 im->format);
		else if (im->w <= 0 || im->h <= 0)
			rc = bad(c, &im->bad, "map: image %d: size %d x %d", k, im->w, im->h);
		else if (want > limit)
			rc = bad(c, &im->bad, "map: image %d: %d x %d is over the decode limit", k,
				 im->w, im->h);
		else if (im->data < 0 || im->data >= d->num_data)
			rc = bad(c, &im->bad, "map: image %d: data index %d does not exist", k,
				 im->data);
		else if (d->data[im->data].raw < want)
			rc = bad(c, &im->bad,
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
			if (bad(c, &s->bad, "map: sound %d: the item has %d ints, fewer than 5", k,
				nints(d, it)))
				return -ENOMEM;
			continue;
		}
		struct sv_err e;
		sv_err_clear(&e);
		if (data_string(c, d, s->name_data, &s->name, &e) == -ENOMEM)
			return -ENOMEM;
		if (e.code && bad(c, &s->bad, "map: sound %d: its name: %s", k, e.msg))
			return -ENOMEM;
		if (!s->external && (s->data < 0 || s->data >= d->num_data) &&
		    bad(c, &s->bad, "map: sound %d: data index %d does not exist", k, s->data))
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
			rc = bad(c, &e->bad, "map: envelope %d: the item has %d ints, fewer than 12", k,
				 nints(d, it));
		else if (e->start < 0 || e->num < 0 || (int64_t)e->start + e->num > m->npoints)
			rc = bad(c, &e->bad,
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
		return bad(c, &l->bad, "map: layer %d: tile layer item of %d ints, fewer than 15", k,
			   n);
	l->tver = geti(d, it, 3);
	l->w = geti(d, it, 4);
	l->h = geti(d, it, 5);
	l->tflags = geti(d, it, 6);
	l->image = geti(d, it, 13);
	l->data = geti(d, it, 14);
	if (l->tver < 2 || l->tver > 4)
		return bad(c, &l->bad, "map: layer %d: tile layer version %d (2 to 4 are known)", k,
			   l->tver);
	int phys = l->tflags & 63;
	if (phys & (phys - 1))
		return bad(c, &l->bad, "map: layer %d: flags %d set more than one physics kind", k,
			   l->tflags);
	l->kind = phys == 0 ? L_TILES : phys == 1 ? L_GAME : phys == 2 ? L_TELE
		: phys == 4 ? L_SPEEDUP : phys == 8 ? L_FRONT : phys == 16 ? L_SWITCH : L_TUNE;
	if (l->tver >= 3) {
		if (n < 18)
			return bad(c, &l->bad, "map: layer %d: version %d tile layer of %d ints: its "
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
			return bad(c, &l->bad, "map: layer %d: %s layer item of %d ints has no %s data "
				   "index", k, kind_names[l->kind], n, kind_names[l->kind]);
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
		return bad(c, &l->bad, "map: layer %d: size %d x %d (at least 2 x 2)", k, l->w,
			   l->h);
	uint64_t tiles = (uint64_t)l->w * (uint64_t)l->h;
	if (tiles * 10 > sv_container_opts(c)->max_decode)
		return bad(c, &l->bad, "map: layer %d: %d x %d tiles is over the decode limit", k,
			   l->w, l->h);
	if (l->tver >= 4 && l->kind != L_TILES && l->kind != L_GAME)
		return bad(c, &l->gbad, "map: layer %d: a %s layer cannot use version 4's tile runs",
			   k, kind_names[l->kind]);
	for (int g = 0; g < NGRID; g++) {
		if (l->grid[g] == -1)
			continue;
		if (l->grid[g] < 0 || l->grid[g] >= d->num_data)
			return bad(c, &l->gbad, "map: layer %d: data index %d does not exist (%d data "
				   "items)", k, l->grid[g], d->num_data);
		uint32_t raw = d->data[l->grid[g]].raw;
		if (l->tver < 4 && raw / grids[g].size < tiles)
			return bad(c, &l->gbad, "map: layer %d: data item %d holds %u bytes, fewer than "
				   "%d x %d tiles of %d bytes", k, l->grid[g], raw, l->w, l->h,
				   grids[g].size);
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
			if (bad(c, &l->bad, "map: layer %d: the item has %d ints, fewer than 3", k, n))
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
				rc = bad(c, &l->bad, "map: layer %d: %s layer item of %d ints, fewer "
					 "than 7", k, kind_names[l->kind], n);
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
					rc = bad(c, &l->bad, "map: layer %d: %d items", k, l->count);
				else if (l->count && (l->qdata < 0 || l->qdata >= d->num_data))
					rc = bad(c, &l->bad, "map: layer %d: data index %d does not "
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
					    bad(c, &m->lay[k].gbad, "map: layer %d: data item %d is "
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
			rc = bad(c, &g->bad, "map: group %d: the item has %d ints, fewer than 7", k,
				 nints(d, it));
		else if (g->start < 0 || g->num < 0 || (int64_t)g->start + g->num > m->nlay)
			rc = bad(c, &g->bad, "map: group %d: layers %d to %lld, but the map has %d "
				 "layer%s", k, g->start, (long long)g->start + g->num - 1, m->nlay,
				 m->nlay == 1 ? "" : "s");
		if (rc)
			return rc;
		if (g->bad)
			continue;
		for (int32_t j = g->start; j < g->start + g->num; j++) {
			if (m->lay[j].group >= 0) {
				if (bad(c, &g->bad, "map: group %d: layer %d is also group %d's", k, j,
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
	    bad(c, &m->info_bad, "map: the info item has %d ints, fewer than 5",
		nints(d, m->info)))
		return -ENOMEM;
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

#define LAZY (SV_N_LAZYSIZE | SV_N_COSTLYSIZE)

static uint64_t grid_header(const struct twm *m, const struct layer *l, int g, char *buf,
			    size_t cap)
{
	const struct group *gr = &m->grp[l->group];
	char gname[64];
	file_part(gr->name, "Group", gname, sizeof gname);
	int n = snprintf(buf, cap,
			 "# layer %s in group %0*d-%s: %s, %d x %d, tilemap version %d\n"
			 "# cell: %s\n", l->dname, m->ndig_grp, l->group, gname,
			 kind_names[l->kind], l->w, l->h, l->tver, grids[g].cell);
	return n < 0 ? 0 : (uint64_t)n;
}

static uint64_t grid_size(const struct twm *m, const struct layer *l, int g)
{
	char buf[600];
	return grid_header(m, l, g, buf, sizeof buf) +
	       (uint64_t)l->h * ((uint64_t)l->w * (grids[g].cw + 1));
}

static int add_layer(struct sv_container *c, const struct df *d, struct twm *m, int32_t k,
		     uint32_t gdir)
{
	struct layer *l = &m->lay[k];
	char part[64];
	/* A broken item is named as an unknown layer: its fields are not trusted. */
	file_part(l->bad ? "" : l->name, kind_titles[l->bad ? L_OTHER : l->kind], part, sizeof part);
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
		l->gnode[g] = sv_node_add(c, l->dir, grids[g].file, gb ? SV_N_BAD : 0, size,
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
	m->info_node = m->settings_node = m->game_node = SV_NONE;
	if (m->info >= 0) {
		uint32_t f = LAZY | (m->info_bad ? SV_N_BAD : 0);
		m->info_node = sv_node_add(c, m->dir, "info.json", f, 0, KEY(K_INFO, 0));
		m->settings_node = sv_node_add(c, m->dir, "settings.cfg", f, 0, KEY(K_SETTINGS, 0));
		if (m->info_node == SV_NONE || m->settings_node == SV_NONE)
			return -ENOMEM;
	}
	if (m->nimg) {
		uint32_t dir = sv_node_add(c, m->dir, "images", SV_N_DIR, 0, KEY(K_MDIR, 0));
		if (dir == SV_NONE ||
		    sv_node_add(c, m->dir, "images.json", SV_N_RO | SV_N_LAZYSIZE, 0,
				KEY(K_IMAGES, 0)) == SV_NONE)
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

/* ---- views -------------------------------------------------------------- */

/* Layer k's grid g as width * height tiles (runs expanded), checked as
 * DDNet's loader checks it. */
static int get_grid(struct sv_container *c, const struct df *d, const struct layer *l,
		    int32_t k, int g, struct sv_blob **out, struct sv_err *err)
{
	*out = NULL;
	if (l->bad || l->gbad)
		return sv_err_set(err, -EBADMSG, "%s", l->bad ? l->bad : l->gbad);
	uint64_t limit = sv_container_opts(c)->max_decode;
	struct sv_blob *b;
	int rc = sv_df_data(c, d, l->grid[g], limit, &b, err);
	if (rc)
		return rc;
	size_t tiles = (size_t)l->w * (size_t)l->h, ts = (size_t)grids[g].size;
	if (g == G_TILES && l->tver >= 4) {
		struct sv_blob *x = sv_blob_new(tiles * 4);
		if (!x) {
			sv_blob_unref(b);
			return sv_err_set(err, -ENOMEM, "map: out of memory");
		}
		size_t at = 0, src = 0;
		for (; src + 4 <= b->len && at < tiles; src += 4) {
			const uint8_t *t = b->data + src;
			if (t[3]) {
				rc = sv_err_set(err, -EBADMSG, "map: layer %d: stored tile %zu has padding "
						"%d (must be 0)", k, src / 4, t[3]);
				break;
			}
			for (unsigned r = 0; r <= t[2] && at < tiles; r++, at++) {
				x->data[4 * at] = t[0];
				x->data[4 * at + 1] = t[1];
				x->data[4 * at + 2] = 0;
				x->data[4 * at + 3] = 0;
			}
		}
		if (!rc && at < tiles)
			rc = sv_err_set(err, -EBADMSG, "map: layer %d: the tile runs give %zu tiles, "
					"fewer than %d x %d", k, at, l->w, l->h);
		else if (!rc && src + 4 <= b->len)
			rc = sv_err_set(err, -EBADMSG, "map: layer %d: a tile run goes past %d x %d "
					"tiles (stored tile %zu of %zu)", k, l->w, l->h, src / 4 - 1,
					b->len / 4);
		sv_blob_unref(b);
		if (rc) {
			sv_blob_unref(x);
			return rc;
		}
		*out = x;
		return 0;
	}
	if (b->len / ts < tiles) {
		sv_blob_unref(b);
		return sv_err_set(err, -EBADMSG, "map: layer %d: data item %d holds fewer than %d x %d "
				  "tiles of %zu bytes", k, l->grid[g], l->w, l->h, ts);
	}
	for (size_t i = 0; i < tiles; i++) {
		const uint8_t *t = b->data + i * ts;
		if (g == G_TILES && (t[2] || t[3]))
			rc = sv_err_set(err, -EBADMSG, "map: layer %d: tile %zu (x %zu, y %zu) has %s %d, "
					"which version %d does not allow", k, i, i % (size_t)l->w,
					i / (size_t)l->w, t[2] ? "skip" : "padding", t[2] ? t[2] : t[3],
					l->tver);
		else if (g == G_SPEEDUP && t[3])
			rc = sv_err_set(err, -EBADMSG, "map: layer %d: speedup tile %zu has padding %d "
					"(must be 0)", k, i, t[3]);
		if (rc) {
			sv_blob_unref(b);
			return rc;
		}
	}
	*out = b;
	return 0;
}

static const char hexd[] = "0123456789abcdef";

static int load_grid(struct sv_container *c, const struct df *d, const struct twm *m,
		     int32_t k, int g, struct sv_blob **out, struct sv_err *err)
{
	const struct layer *l = &m->lay[k];
	struct sv_blob *b;
	int rc = get_grid(c, d, l, k, g, &b, err);
	if (rc)
		return rc;
	char head[600];
	uint64_t hl = grid_header(m, l, g, head, sizeof head);
	uint64_t size = hl + (uint64_t)l->h * ((uint64_t)l->w * (grids[g].cw + 1));
	*out = sv_blob_new(size);
	if (!*out) {
		sv_blob_unref(b);
		return sv_err_set(err, -ENOMEM, "map: out of memory");
	}
	char *p = (char *)(*out)->data;
	memcpy(p, head, hl);
	p += hl;
	size_t ts = (size_t)grids[g].size, tiles = (size_t)l->w * (size_t)l->h;
	int cw = grids[g].cw;
	for (size_t i = 0; i < tiles; i++) {
		const uint8_t *t = b->data + i * ts;
		char *q = p;
		switch (g) {
		case G_TILES:
			if (!t[0] && !(t[1] & 15)) {
				memcpy(q, "...", 3);
			} else {
				q[0] = hexd[t[0] >> 4];
				q[1] = hexd[t[0] & 15];
				q[2] = hexd[t[1] & 15];
			}
			break;
		case G_SPEEDUP: {
			static const int at[5] = {0, 1, 2, 5, 4};
			if (!t[0] && !t[1] && !t[2] && !t[4] && !t[5]) {
				memcpy(q, "..........", 10);
				break;
			}
			for (int f = 0; f < 5; f++) {
				q[2 * f] = hexd[t[at[f]] >> 4];
				q[2 * f + 1] = hexd[t[at[f]] & 15];
			}
			break;
		}
		default: {
			bool zero = true;
			for (size_t f = 0; f < ts; f++)
				zero = zero && !t[f];
			if (zero) {
				memset(q, '.', (size_t)cw);
				break;
			}
			for (size_t f = 0; f < ts; f++) {
				q[2 * f] = hexd[t[f] >> 4];
				q[2 * f + 1] = hexd[t[f] & 15];
			}
		}
		}
		p += cw;
		*p++ = (i + 1) % (size_t)l->w ? ' ' : '\n';
	}
	sv_blob_unref(b);
	return 0;
}

/* RGBA pixels as a PNG blob, encoded straight into the blob (its size is
 * known beforehand): no second copy of a large image. */
static int png_blob(uint32_t w, uint32_t h, const uint8_t *px, struct sv_blob **out)
{
	uint64_t size = sv_png_size(w, h, 255);
	if (!size || size > SIZE_MAX)
		return -EFBIG;
	*out = sv_blob_new((size_t)size);
	if (!*out)
		return -ENOMEM;
	struct sv_buf b = {(*out)->data, 0, (size_t)size};
	int rc = sv_png_encode_rgba(w, h, px, &b);
	if (rc || b.p != (*out)->data || b.len != size) {
		if (b.p != (*out)->data)
			free(b.p);
		sv_blob_unref(*out);
		*out = NULL;
		return rc ? rc : -EIO;
	}
	return 0;
}

/* A colour per game tile kind (DDNet's src/game/mapitems.h numbers). */
static uint32_t tile_colour(uint8_t t)
{
	switch (t) {
	case 0: return 0;
	case 1: return 0x808080ff;                 /* solid */
	case 2: return 0xc80000ff;                 /* death */
	case 3: return 0x3c3c5aff;                 /* unhookable */
	case 4: return 0x5a5a3cff;                 /* no laser */
	case 5: case 6: case 66: case 67: return 0xa0a0c8ff; /* hookthrough */
	case 9: return 0x00a0ffff;                 /* freeze */
	case 12: return 0x0050c8ff;                /* deep freeze */
	case 11: case 13: return 0x96dcffff;       /* unfreeze */
	case 33: return 0x00c800ff;                /* start */
	case 34: return 0xffd700ff;                /* finish */
	case 10: case 14: case 15: case 26: case 27: case 29: case 30: case 31: case 63:
		return 0xa000c8ff;                 /* teleporters */
	case 28: return 0xff8000ff;                /* speed boost */
	case 60: case 61: case 62: return 0x643200ff; /* stoppers */
	default:
		if (t >= 35 && t <= 59)
			return 0x787800ff;         /* time checkpoints */
		if (t >= 192 && t <= 194)
			return 0x00ff00ff;         /* spawns */
		if (t >= 192)
			return 0xffff00ff;         /* entities */
		return 0xff00ffff;                 /* other special tiles */
	}
}

static int load_game_png(struct sv_container *c, const struct df *d, const struct twm *m,
			 struct sv_blob **out, struct sv_err *err)
{
	const struct layer *l = &m->lay[m->game];
	struct sv_blob *gb, *fb = NULL;
	int rc = get_grid(c, d, l, m->game, G_TILES, &gb, err);
	if (rc)
		return rc;
	if (m->front >= 0 && m->lay[m->front].group >= 0) {
		const struct layer *f = &m->lay[m->front];
		if ((uint64_t)f->w * f->h >= (uint64_t)l->w * l->h &&
		    (rc = get_grid(c, d, f, m->front, G_TILES, &fb, err))) {
			sv_blob_unref(gb);
			return rc;
		}
	}
	size_t tiles = (size_t)l->w * (size_t)l->h;
	uint8_t *px = malloc(tiles * 4);
	if (!px) {
		rc = sv_err_set(err, -ENOMEM, "map: out of memory");
		goto out;
	}
	for (size_t i = 0; i < tiles; i++) {
		/* The game reads every physics layer with the game layer's width. */
		uint8_t t = fb && fb->data[4 * i] ? fb->data[4 * i] : gb->data[4 * i];
		uint32_t v = tile_colour(t);
		px[4 * i] = (uint8_t)(v >> 24);
		px[4 * i + 1] = (uint8_t)(v >> 16);
		px[4 * i + 2] = (uint8_t)(v >> 8);
		px[4 * i + 3] = (uint8_t)v;
	}
	rc = png_blob((uint32_t)l->w, (uint32_t)l->h, px, out);
	if (rc)
		rc = sv_err_set(err, rc, "map: game.png: cannot encode %d x %d", l->w, l->h);
out:
	free(px);
	sv_blob_unref(gb);
	sv_blob_unref(fb);
	return rc;
}

static int load_image(struct sv_container *c, const struct df *d, const struct image *im,
		      struct sv_blob **out, struct sv_err *err)
{
	if (im->bad)
		return sv_err_set(err, -EBADMSG, "%s", im->bad);
	struct sv_blob *b;
	int rc = sv_df_data(c, d, im->data, sv_container_opts(c)->max_decode, &b, err);
	if (rc)
		return rc;
	size_t n = (size_t)im->w * (size_t)im->h;
	const uint8_t *px = b->data;
	uint8_t *conv = NULL;
	if (im->format == 0) {
		conv = malloc(n * 4);
		if (!conv) {
			sv_blob_unref(b);
			return sv_err_set(err, -ENOMEM, "map: out of memory");
		}
		for (size_t i = 0; i < n; i++) {
			memcpy(conv + 4 * i, b->data + 3 * i, 3);
			conv[4 * i + 3] = 255;
		}
		px = conv;
	}
	rc = png_blob((uint32_t)im->w, (uint32_t)im->h, px, out);
	free(conv);
	sv_blob_unref(b);
	if (rc)
		return sv_err_set(err, rc, "map: cannot encode a %d x %d image", im->w, im->h);
	return 0;
}

static const char *const info_keys[] = {"author", "version", "credits", "license"};

static int load_info(struct sv_container *c, const struct df *d, const struct twm *m,
		     bool settings, struct sv_blob **out, struct sv_err *err)
{
	if (m->info_bad)
		return sv_err_set(err, -EBADMSG, "%s", m->info_bad);
	if (settings) {
		struct sv_buf t;
		sv_buf_init(&t);
		int32_t idx = nints(d, m->info) >= 6 ? geti(d, m->info, 5) : -1;
		if (idx != -1) {
			struct sv_blob *b;
			int rc = sv_df_data(c, d, idx, 1 << 24, &b, err);
			if (rc)
				return rc;
			/* NUL-terminated commands, one a line. */
			size_t i = 0;
			while (i < b->len) {
				const uint8_t *z = memchr(b->data + i, 0, b->len - i);
				size_t e = z ? (size_t)(z - b->data) : b->len;
				if (sv_buf_add(&t, b->data + i, e - i) || sv_buf_add(&t, "\n", 1)) {
					sv_blob_unref(b);
					sv_buf_fini(&t);
					return sv_err_set(err, -ENOMEM, "map: out of memory");
				}
				i = e + 1;
			}
			sv_blob_unref(b);
		}
		return blob_text(&t, out) ? sv_err_set(err, -ENOMEM, "map: out of memory") : 0;
	}
	json_t *o = json_object();
	for (int f = 0; f < 4; f++) {
		char *s;
		struct sv_err e;
		sv_err_clear(&e);
		int rc = data_string(c, d, geti(d, m->info, 1 + f), &s, &e);
		if (rc) {
			json_decref(o);
			return sv_err_set(err, rc, "map: info: %s: %s", info_keys[f], e.msg);
		}
		json_object_set_new(o, info_keys[f], jstr(s));
		free(s);
	}
	return blob_json(o, out, err);
}

static int load_images_json(const struct twm *m, struct sv_blob **out, struct sv_err *err)
{
	json_t *a = json_array();
	for (int32_t k = 0; k < m->nimg; k++) {
		const struct image *im = &m->img[k];
		json_t *o = json_object();
		json_object_set_new(o, "index", json_integer(k));
		json_object_set_new(o, "name", jstr(im->name));
		json_object_set_new(o, "width", json_integer(im->w));
		json_object_set_new(o, "height", json_integer(im->h));
		json_object_set_new(o, "embedded", json_boolean(!im->external));
		json_object_set_new(o, "version", json_integer(im->version));
		if (im->version >= 2)
			json_object_set_new(o, "format", json_integer(im->format));
		json_object_set_new(o, "problem", jstr(im->bad));
		json_array_append_new(a, o);
	}
	return blob_json(a, out, err);
}

static const char *const curve_names[] = {"step", "linear", "slow", "fast", "smooth", "bezier"};

static int load_env(const struct df *d, const struct twm *m, int32_t k, struct sv_blob **out,
		    struct sv_err *err)
{
	const struct env *e = &m->env[k];
	if (e->bad)
		return sv_err_set(err, -EBADMSG, "%s", e->bad);
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(e->name));
	json_object_set_new(o, "version", json_integer(e->version));
	json_object_set_new(o, "channels", json_integer(e->channels));
	if (e->version >= 2 && nints(d, e->item) >= 13)
		json_object_set_new(o, "synchronized", json_boolean(e->sync));
	json_t *pts = json_array();
	for (int32_t i = 0; i < e->num; i++) {
		int32_t pi = e->start + i, at = pi * m->point_ints;
		json_t *p = json_object();
		json_object_set_new(p, "time", json_integer(geti(d, m->points, at)));
		int32_t curve = geti(d, m->points, at + 1);
		json_object_set_new(p, "curve", curve >= 0 && curve < 6 ? json_string(curve_names[curve])
							      : json_integer(curve));
		json_t *v = json_array();
		for (int ch = 0; ch < 4; ch++)
			json_array_append_new(v, fx(geti(d, m->points, at + 2 + ch)));
		json_object_set_new(p, "values", v);
		/* Tangents: Teeworlds' after the point, else DDNet's own item. */
		int32_t bitem = -1, bat = 0;
		if (m->point_ints == 22) {
			bitem = m->points;
			bat = at + 6;
		} else if (m->bez_ok) {
			bitem = m->bez;
			bat = pi * 16;
		}
		if (bitem >= 0) {
			json_t *bz = json_object();
			static const char *const part[2] = {"in", "out"};
			for (int s = 0; s < 2; s++) {
				json_t *side = json_array();
				for (int ch = 0; ch < 4; ch++) {
					json_t *pair = json_array();
					json_array_append_new(pair, json_integer(
						geti(d, bitem, bat + 8 * s + ch)));
					json_array_append_new(pair, fx(geti(d, bitem, bat + 8 * s + 4 + ch)));
					json_array_append_new(side, pair);
				}
				json_object_set_new(bz, part[s], side);
			}
			json_object_set_new(p, "bezier", bz);
		}
		json_array_append_new(pts, p);
	}
	json_object_set_new(o, "points", pts);
	return blob_json(o, out, err);
}

static json_t *pair_fx(int32_t a, int32_t b)
{
	json_t *j = json_array();
	json_array_append_new(j, fx(a));
	json_array_append_new(j, fx(b));
	return j;
}

static json_t *pair_int(int32_t a, int32_t b)
{
	json_t *j = json_array();
	json_array_append_new(j, json_integer(a));
	json_array_append_new(j, json_integer(b));
	return j;
}

static int load_group(const struct df *d, const struct twm *m, int32_t k, struct sv_blob **out,
		      struct sv_err *err)
{
	const struct group *g = &m->grp[k];
	if (g->bad)
		return sv_err_set(err, -EBADMSG, "%s", g->bad);
	int32_t it = g->item;
	int n = nints(d, it);
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(g->name));
	json_object_set_new(o, "version", json_integer(g->version));
	json_object_set_new(o, "offset", pair_int(geti(d, it, 1), geti(d, it, 2)));
	json_object_set_new(o, "parallax", pair_int(geti(d, it, 3), geti(d, it, 4)));
	if (g->version >= 2 && n >= 12) {
		json_t *cl = json_object();
		json_object_set_new(cl, "enabled", json_boolean(geti(d, it, 7)));
		json_object_set_new(cl, "x", json_integer(geti(d, it, 8)));
		json_object_set_new(cl, "y", json_integer(geti(d, it, 9)));
		json_object_set_new(cl, "width", json_integer(geti(d, it, 10)));
		json_object_set_new(cl, "height", json_integer(geti(d, it, 11)));
		json_object_set_new(o, "clipping", cl);
	}
	json_t *ls = json_array();
	for (int32_t j = g->start; j < g->start + g->num; j++)
		json_array_append_new(ls, json_string(m->lay[j].dname));
	json_object_set_new(o, "layers", ls);
	return blob_json(o, out, err);
}

static int load_layer(const struct df *d, const struct twm *m, int32_t k, struct sv_blob **out,
		      struct sv_err *err)
{
	const struct layer *l = &m->lay[k];
	int32_t it = l->item;
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(l->bad ? "unreadable" : kind_names[l->kind]));
	if (l->bad)
		json_object_set_new(o, "problem", json_string(l->bad));
	if (l->kind == L_OTHER || l->bad) {
		json_object_set_new(o, "type", json_integer(l->ltype));
		json_t *a = json_array();
		for (int i = 0; i < nints(d, it); i++)
			json_array_append_new(a, json_integer(geti(d, it, i)));
		json_object_set_new(o, "ints", a);
		return blob_json(o, out, err);
	}
	if (l->has_name)
		json_object_set_new(o, "name", json_string(l->name));
	json_object_set_new(o, "detail", json_boolean(l->lflags & 1));
	json_object_set_new(o, "version", json_integer(l->tver));
	if (l->kind <= L_TUNE) {
		json_object_set_new(o, "width", json_integer(l->w));
		json_object_set_new(o, "height", json_integer(l->h));
		json_t *col = json_array();
		for (int i = 0; i < 4; i++)
			json_array_append_new(col, json_integer(geti(d, it, 7 + i)));
		json_object_set_new(o, "color", col);
		json_object_set_new(o, "color_envelope", json_integer(geti(d, it, 11)));
		json_object_set_new(o, "color_envelope_offset", json_integer(geti(d, it, 12)));
		json_object_set_new(o, "image", json_integer(l->image));
	} else {
		json_object_set_new(o, l->kind == L_QUADS ? "quads" : "sources",
				    json_integer(l->count));
		json_object_set_new(o, l->kind == L_QUADS ? "image" : "sound",
				    json_integer(l->image));
	}
	return blob_json(o, out, err);
}

/* Quads (38 ints each) or sound sources (13 ints; 9 in old layers). */
static int load_list(struct sv_container *c, const struct df *d, const struct twm *m, int32_t k,
		     struct sv_blob **out, struct sv_err *err)
{
	const struct layer *l = &m->lay[k];
	if (l->bad)
		return sv_err_set(err, -EBADMSG, "%s", l->bad);
	int per = l->kind == L_QUADS ? 38 : l->kind == L_SOUNDS ? 13 : 9;
	struct sv_blob *b = NULL;
	if (l->count) {
		int rc = sv_df_data(c, d, l->qdata, sv_container_opts(c)->max_decode, &b, err);
		if (rc)
			return rc;
		if (b->len / (4 * (size_t)per) < (size_t)l->count) {
			sv_blob_unref(b);
			return sv_err_set(err, -EBADMSG, "map: layer %d: data item %d holds fewer than "
					  "%d %s of %d bytes", k, l->qdata, l->count,
					  l->kind == L_QUADS ? "quads" : "sources", 4 * per);
		}
	}
	json_t *a = json_array();
	for (int32_t i = 0; i < l->count; i++) {
		const uint8_t *p = b->data + (size_t)i * 4 * per;
#define V(n) rd32(p + 4 * (n))
		json_t *o = json_object();
		if (l->kind == L_QUADS) {
			json_t *pts = json_array();
			for (int q = 0; q < 4; q++)
				json_array_append_new(pts, pair_fx(V(2 * q), V(2 * q + 1)));
			json_object_set_new(o, "points", pts);
			json_object_set_new(o, "pivot", pair_fx(V(8), V(9)));
			json_t *cols = json_array();
			for (int q = 0; q < 4; q++) {
				json_t *col = json_array();
				for (int ch = 0; ch < 4; ch++)
					json_array_append_new(col, json_integer(V(10 + 4 * q + ch)));
				json_array_append_new(cols, col);
			}
			json_object_set_new(o, "colors", cols);
			json_t *tex = json_array();
			for (int q = 0; q < 4; q++)
				json_array_append_new(tex, pair_fx(V(26 + 2 * q), V(27 + 2 * q)));
			json_object_set_new(o, "texcoords", tex);
			json_object_set_new(o, "position_envelope", json_integer(V(34)));
			json_object_set_new(o, "position_envelope_offset", json_integer(V(35)));
			json_object_set_new(o, "color_envelope", json_integer(V(36)));
			json_object_set_new(o, "color_envelope_offset", json_integer(V(37)));
		} else if (l->kind == L_SOUNDS) {
			json_object_set_new(o, "position", pair_fx(V(0), V(1)));
			json_object_set_new(o, "loop", json_integer(V(2)));
			json_object_set_new(o, "pan", json_integer(V(3)));
			json_object_set_new(o, "time_delay", json_integer(V(4)));
			json_object_set_new(o, "falloff", json_integer(V(5)));
			json_object_set_new(o, "position_envelope", json_integer(V(6)));
			json_object_set_new(o, "position_envelope_offset", json_integer(V(7)));
			json_object_set_new(o, "sound_envelope", json_integer(V(8)));
			json_object_set_new(o, "sound_envelope_offset", json_integer(V(9)));
			json_object_set_new(o, "shape", json_integer(V(10)));
			json_object_set_new(o, "size", pair_fx(V(11), V(12)));
		} else {
			json_object_set_new(o, "position", pair_fx(V(0), V(1)));
			json_object_set_new(o, "loop", json_integer(V(2)));
			json_object_set_new(o, "time_delay", json_integer(V(3)));
			json_object_set_new(o, "falloff", json_integer(V(4)));
			json_object_set_new(o, "position_envelope", json_integer(V(5)));
			json_object_set_new(o, "position_envelope_offset", json_integer(V(6)));
			json_object_set_new(o, "sound_envelope", json_integer(V(7)));
			json_object_set_new(o, "sound_envelope_offset", json_integer(V(8)));
		}
#undef V
		json_array_append_new(a, o);
	}
	sv_blob_unref(b);
	return blob_json(a, out, err);
}

int sv_twm_load(struct sv_container *c, const struct df *d, uint32_t node, struct sv_blob **out,
		struct sv_err *err)
{
	const struct twm *m = d->map;
	uint64_t key = sv_node(c, node)->key;
	uint32_t i = INDEX(key);
	*out = NULL;
	switch (KIND(key)) {
	case K_INFO: return load_info(c, d, m, false, out, err);
	case K_SETTINGS: return load_info(c, d, m, true, out, err);
	case K_IMAGES: return load_images_json(m, out, err);
	case K_IMAGE: return load_image(c, d, &m->img[i], out, err);
	case K_SOUND:
		if (m->snd[i].bad)
			return sv_err_set(err, -EBADMSG, "%s", m->snd[i].bad);
		return sv_df_data(c, d, m->snd[i].data, sv_container_opts(c)->max_decode, out, err);
	case K_ENV: return load_env(d, m, (int32_t)i, out, err);
	case K_GROUP: return load_group(d, m, (int32_t)i, out, err);
	case K_LAYER: return load_layer(d, m, (int32_t)i, out, err);
	case K_GRID: return load_grid(c, d, m, (int32_t)(i >> 3), (int)(i & 7), out, err);
	case K_QUADS: case K_SOURCES: return load_list(c, d, m, (int32_t)i, out, err);
	case K_GAMEPNG: return load_game_png(c, d, m, out, err);
	default: return sv_err_set(err, -EIO, "map: not a file");
	}
}


/* ---- edits -------------------------------------------------------------- */

/* One commit's work: the overrides so far, and where to say what failed. */
struct w {
	struct sv_container *c;
	const struct df *d;
	const struct twm *m;
	struct sv_twm_out *o;
	struct sv_err *err;
	const char *view;   /* the file being applied, for messages */
};

void sv_twm_out_fini(struct sv_twm_out *o)
{
	if (!o)
		return;
	if (o->item)
		for (size_t i = 0; i < o->nitems; i++)
			sv_buf_fini(&o->item[i]);
	if (o->data)
		for (size_t i = 0; i < o->ndata; i++)
			sv_buf_fini(&o->data[i]);
	for (size_t i = 0; i < o->nadded; i++)
		sv_buf_fini(&o->added[i]);
	free(o->item);
	free(o->item_set);
	free(o->data);
	free(o->data_set);
	free(o->added);
	memset(o, 0, sizeof *o);
}

static int out_init(struct sv_twm_out *o, const struct df *d)
{
	memset(o, 0, sizeof *o);
	o->nitems = (size_t)d->num_items;
	o->ndata = (size_t)d->num_data;
	o->item = calloc(o->nitems + 1, sizeof *o->item);
	o->item_set = calloc(o->nitems + 1, sizeof *o->item_set);
	o->data = calloc(o->ndata + 1, sizeof *o->data);
	o->data_set = calloc(o->ndata + 1, sizeof *o->data_set);
	if (!o->item || !o->item_set || !o->data || !o->data_set) {
		sv_twm_out_fini(o);
		return -ENOMEM;
	}
	return 0;
}

static int fail(struct w *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct w *w, const char *fmt, ...)
{
	char buf[SV_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return sv_err_set(w->err, -EINVAL, "map: %s: %s", w->view, buf);
}

static int nomem(struct w *w)
{
	return sv_err_set(w->err, -ENOMEM, "map: out of memory");
}

/* Item it as it will be written: a copy made on first use. */
static int32_t item_get(struct w *w, int32_t it, int k)
{
	if (w->o->item_set[it]) {
		const struct sv_buf *b = &w->o->item[it];
		return (size_t)k * 4 + 4 <= b->len ? rd32(b->p + 4 * (size_t)k) : 0;
	}
	return geti(w->d, it, k);
}

static int item_len(struct w *w, int32_t it)
{
	return w->o->item_set[it] ? (int)(w->o->item[it].len / 4) : nints(w->d, it);
}

static int item_set(struct w *w, int32_t it, int k, int32_t v)
{
	struct sv_buf *b = &w->o->item[it];
	if (!w->o->item_set[it]) {
		const struct item *x = &w->d->items[it];
		if (sv_buf_add(b, x->len ? w->d->items_sec + x->off : (const uint8_t *)"", x->len))
			return nomem(w);
		w->o->item_set[it] = true;
	}
	while (b->len < (size_t)k * 4 + 4)
		if (sv_buf_add(b, "\0\0\0\0", 4))
			return nomem(w);
	wr32(b->p + 4 * (size_t)k, v);
	return 0;
}

/* Data item i as it will be written (a new reference). */
static int data_get(struct w *w, int32_t i, struct sv_blob **out)
{
	if (i >= 0 && (size_t)i < w->o->ndata && w->o->data_set[i]) {
		*out = sv_blob_dup(w->o->data[i].p ? w->o->data[i].p : (uint8_t *)"",
				   w->o->data[i].len);
		return *out ? 0 : nomem(w);
	}
	return sv_df_data(w->c, w->d, i, sv_container_opts(w->c)->max_decode, out, w->err);
}

/* Replaces data item i with p[0..n), or adds one (i == -1: *added gets
 * its index). */
static int data_put(struct w *w, int32_t i, const void *p, size_t n, int32_t *added)
{
	struct sv_buf *b;
	if (i < 0) {
		struct sv_buf *a = realloc(w->o->added, (w->o->nadded + 1) * sizeof *a);
		if (!a)
			return nomem(w);
		w->o->added = a;
		b = &a[w->o->nadded];
		sv_buf_init(b);
		*added = w->d->num_data + (int32_t)w->o->nadded++;
	} else {
		b = &w->o->data[i];
		b->len = 0;
		w->o->data_set[i] = true;
	}
	return sv_buf_add(b, n ? p : "", n) ? nomem(w) : 0;
}

/* ---- JSON input --------------------------------------------------------- */

static int parse_json(struct w *w, const uint8_t *p, size_t len, json_t **out)
{
	json_error_t je;
	*out = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
	if (!*out)
		return fail(w, "line %d, column %d: %s", je.line, je.column, je.text);
	return 0;
}

/* Refuses keys of o not in `keys` (NULL-terminated). */
static int only_keys(struct w *w, json_t *o, const char *const *keys, const char *what)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool known = false;
		for (int i = 0; keys[i] && !known; i++)
			known = !strcmp(keys[i], k);
		if (!known)
			return fail(w, "%s has no field \"%s\"", what, k);
	}
	return 0;
}

static int get_int(struct w *w, json_t *o, const char *key, int64_t lo, int64_t hi, int32_t *v,
		   bool need)
{
	json_t *j = json_object_get(o, key);
	if (!j) {
		if (need)
			return fail(w, "\"%s\" is missing", key);
		return 1;
	}
	if (json_is_true(j) || json_is_false(j))
		j = NULL;
	if (!j || !json_is_integer(j))
		return fail(w, "\"%s\" must be an integer", key);
	json_int_t x = json_integer_value(j);
	if (x < lo || x > hi)
		return fail(w, "\"%s\" is %lld, outside %lld to %lld", key, (long long)x,
			    (long long)lo, (long long)hi);
	*v = (int32_t)x;
	return 0;
}

/* An integer field stored at int k of item it: a value other than the
 * stored one must lie in lo..hi (one the map holds already is kept). */
static int set_field(struct w *w, json_t *o, const char *key, int32_t it, int k, int64_t lo,
		     int64_t hi)
{
	int32_t x = 0;
	int rc = get_int(w, o, key, INT32_MIN, INT32_MAX, &x, true);
	if (rc || x == item_get(w, it, k))
		return rc;
	if (x < lo || x > hi)
		return fail(w, "\"%s\" is %d, outside %lld to %lld", key, x, (long long)lo,
			    (long long)hi);
	return item_set(w, it, k, x);
}

/* A number in 22.10 fixed point (rounded to 1/1024). */
static int to_fx(struct w *w, json_t *j, const char *what, int32_t *v)
{
	if (!json_is_number(j))
		return fail(w, "%s must be a number", what);
	double x = json_number_value(j) * 1024.0;
	if (!(x >= -2147483648.0 && x <= 2147483647.0))
		return fail(w, "%s is out of range", what);
	*v = (int32_t)(x >= 0 ? (int64_t)(x + 0.5) : -(int64_t)(-x + 0.5));
	return 0;
}

static int get_bool(struct w *w, json_t *o, const char *key, int32_t *v)
{
	json_t *j = json_object_get(o, key);
	if (!j)
		return fail(w, "\"%s\" is missing", key);
	if (!json_is_boolean(j))
		return fail(w, "\"%s\" must be true or false", key);
	*v = json_is_true(j);
	return 0;
}

/* An array of n numbers: integers (fixed == false) or 22.10 values. */
static int get_vec(struct w *w, json_t *j, const char *what, int n, bool fixed, int32_t *v)
{
	if (!json_is_array(j) || json_array_size(j) != (size_t)n)
		return fail(w, "%s must be an array of %d numbers", what, n);
	for (int i = 0; i < n; i++) {
		json_t *x = json_array_get(j, (size_t)i);
		if (fixed) {
			if (to_fx(w, x, what, &v[i]))
				return -EINVAL;
		} else {
			if (!json_is_integer(x) || json_integer_value(x) < INT32_MIN ||
			    json_integer_value(x) > INT32_MAX)
				return fail(w, "%s must hold integers", what);
			v[i] = (int32_t)json_integer_value(x);
		}
	}
	return 0;
}

/* A name for n ints: a string of at most 4n - 1 bytes. */
static int get_name(struct w *w, json_t *o, int n, int32_t *v, bool need, const char *cur)
{
	json_t *j = json_object_get(o, "name");
	if (!j) {
		if (need)
			return fail(w, "\"name\" is missing");
		return 1;
	}
	if (!json_is_string(j))
		return fail(w, "\"name\" must be a string");
	const char *s = json_string_value(j);
	if (cur && !strcmp(s, cur))
		return 1; /* unchanged: the stored bytes stay as they are */
	if (strlen(s) != json_string_length(j))
		return fail(w, "\"name\" holds a NUL");
	if (pack_name(s, v, n))
		return fail(w, "the name \"%s\" is %zu bytes; names here hold at most %d", s,
			    strlen(s), 4 * n - 1);
	return 0;
}

/* ---- each view ---------------------------------------------------------- */

static int apply_info(struct w *w, const uint8_t *p, size_t len)
{
	json_t *o;
	int rc = parse_json(w, p, len, &o);
	if (rc)
		return rc;
	static const char *const keys[] = {"author", "version", "credits", "license", NULL};
	if (!json_is_object(o))
		rc = fail(w, "must be a JSON object");
	else
		rc = only_keys(w, o, keys, "info");
	int32_t it = w->m->info;
	for (int f = 0; f < 4 && !rc; f++) {
		json_t *j = json_object_get(o, keys[f]);
		if (!j) {
			rc = fail(w, "\"%s\" is missing (null for none)", keys[f]);
			break;
		}
		if (!json_is_null(j) && !json_is_string(j)) {
			rc = fail(w, "\"%s\" must be a string or null", keys[f]);
			break;
		}
		if (json_is_string(j) && strlen(json_string_value(j)) != json_string_length(j)) {
			rc = fail(w, "\"%s\" holds a NUL", keys[f]);
			break;
		}
		int32_t idx = item_get(w, it, 1 + f);
		char *old = NULL;
		struct sv_err e;
		if (idx != -1 && data_string(w->c, w->d, idx, &old, &e) == -ENOMEM) {
			rc = nomem(w);
			break;
		}
		const char *s = json_string_value(j);
		bool same = s ? old && !strcmp(old, s) : idx == -1;
		free(old);
		if (same)
			continue;
		if (!s) {
			rc = item_set(w, it, 1 + f, -1);
			continue;
		}
		/* The string's own data item, unless another field shares it. */
		bool shared = idx < 0 || idx >= w->d->num_data;
		for (int g = 0; g < 5 && !shared; g++)
			shared = g != f && item_get(w, it, 1 + g) == idx;
		int32_t added;
		rc = data_put(w, shared ? -1 : idx, s, strlen(s) + 1, &added);
		if (!rc && shared)
			rc = item_set(w, it, 1 + f, added);
	}
	json_decref(o);
	return rc;
}

static int apply_settings(struct w *w, const uint8_t *p, size_t len)
{
	if (memchr(p, 0, len))
		return fail(w, "a command holds a NUL byte");
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	for (size_t i = 0; i < len && !rc;) {
		const uint8_t *nl = memchr(p + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - p) : len, end = e;
		/* One command a line, each NUL-terminated (an empty line too). */
		if (sv_buf_add(&b, p + i, end - i) || sv_buf_add(&b, "", 1))
			rc = nomem(w);
		i = e + 1;
	}
	int32_t it = w->m->info;
	int32_t idx = item_len(w, it) >= 6 ? item_get(w, it, 5) : -1;
	if (!rc && idx >= 0 && idx < w->d->num_data) {
		rc = data_put(w, idx, b.p, b.len, NULL);
	} else if (!rc && b.len) {
		int32_t added;
		rc = data_put(w, -1, b.p, b.len, &added);
		if (!rc)
			rc = item_set(w, it, 5, added);
	}
	sv_buf_fini(&b);
	return rc;
}

static int apply_image(struct w *w, const struct image *im, const uint8_t *p, size_t len)
{
	png_image img;
	memset(&img, 0, sizeof img);
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, p, len))
		return fail(w, "not a PNG the PNG library can read (%s)", img.message);
	int rc = 0;
	uint64_t want = (uint64_t)img.width * img.height * 4;
	uint8_t *px = NULL;
	if (!img.width || !img.height || img.width > INT32_MAX || img.height > INT32_MAX ||
	    want > sv_container_opts(w->c)->max_decode || want > INT32_MAX) {
		rc = fail(w, "a %u x %u image is too large", img.width, img.height);
		png_image_free(&img);
		return rc;
	}
	img.format = PNG_FORMAT_RGBA;
	px = malloc((size_t)want);
	if (!px) {
		png_image_free(&img);
		return nomem(w);
	}
	if (!png_image_finish_read(&img, NULL, px, 0, NULL)) {
		rc = fail(w, "the PNG cannot be decoded (%s)", img.message);
		png_image_free(&img);
		free(px);
		return rc;
	}
	rc = data_put(w, im->data, px, (size_t)want, NULL);
	free(px);
	if (!rc)
		rc = item_set(w, im->item, 1, (int32_t)img.width);
	if (!rc)
		rc = item_set(w, im->item, 2, (int32_t)img.height);
	if (!rc && im->version >= 2 && nints(w->d, im->item) >= 7)
		rc = item_set(w, im->item, 6, 1); /* RGBA */
	return rc;
}

static int apply_sound(struct w *w, const struct sound *s, const uint8_t *p, size_t len)
{
	if (len < 4 || memcmp(p, "OggS", 4))
		return fail(w, "not an Ogg stream (DDNet's sounds are Opus in Ogg)");
	if (len > INT32_MAX)
		return fail(w, "too large");
	int rc = data_put(w, s->data, p, len, NULL);
	if (!rc)
		rc = item_set(w, s->item, 4, (int32_t)len);
	return rc;
}

static int apply_group(struct w *w, int32_t k, const uint8_t *p, size_t len)
{
	const struct group *g = &w->m->grp[k];
	json_t *o;
	int rc = parse_json(w, p, len, &o);
	if (rc)
		return rc;
	static const char *const keys[] = {"name", "version", "offset", "parallax", "clipping",
					   "layers", NULL};
	int32_t it = g->item, v[5], ver;
	int n = nints(w->d, it);
	bool clip = g->version >= 2 && n >= 12;
	if (!json_is_object(o))
		rc = fail(w, "must be a JSON object");
	if (!rc)
		rc = only_keys(w, o, keys, "a group");
	if (!rc)
		rc = get_int(w, o, "version", INT32_MIN, INT32_MAX, &ver, true);
	if (!rc && ver != g->version)
		rc = fail(w, "\"version\" is %d and cannot change", g->version);
	if (!rc)
		rc = get_vec(w, json_object_get(o, "offset"), "\"offset\"", 2, false, v);
	for (int i = 0; i < 2 && !rc; i++)
		rc = item_set(w, it, 1 + i, v[i]);
	if (!rc)
		rc = get_vec(w, json_object_get(o, "parallax"), "\"parallax\"", 2, false, v);
	for (int i = 0; i < 2 && !rc; i++)
		rc = item_set(w, it, 3 + i, v[i]);
	json_t *cl = json_object_get(o, "clipping");
	if (!rc && !clip && cl)
		rc = fail(w, "a version %d group has no clipping", g->version);
	if (!rc && clip) {
		static const char *const ck[] = {"enabled", "x", "y", "width", "height", NULL};
		if (!json_is_object(cl))
			rc = fail(w, "\"clipping\" must be an object");
		if (!rc)
			rc = only_keys(w, cl, ck, "\"clipping\"");
		if (!rc)
			rc = get_bool(w, cl, "enabled", &v[0]);
		for (int i = 1; i < 5 && !rc; i++)
			rc = get_int(w, cl, ck[i], INT32_MIN, INT32_MAX, &v[i], true);
		for (int i = 0; i < 5 && !rc; i++)
			rc = item_set(w, it, 7 + i, v[i]);
	}
	json_t *ls = json_object_get(o, "layers");
	if (!rc && ls) {
		bool same = json_is_array(ls) && json_array_size(ls) == (size_t)g->num;
		for (int32_t j = 0; j < g->num && same; j++) {
			json_t *x = json_array_get(ls, (size_t)j);
			same = json_is_string(x) &&
			       !strcmp(json_string_value(x), w->m->lay[g->start + j].dname);
		}
		if (!same)
			rc = fail(w, "\"layers\" lists the group's layers and cannot change");
	}
	if (!rc) {
		bool named = g->version >= 3 && n >= 15;
		int32_t nv[3];
		int r = get_name(w, o, 3, nv, false, g->name);
		if (r < 0)
			rc = r;
		else if (r == 0 && !named)
			rc = fail(w, "a version %d group has no name", g->version);
		for (int i = 0; r == 0 && !rc && i < 3; i++)
			rc = item_set(w, it, 12 + i, nv[i]);
	}
	json_decref(o);
	return rc;
}

/* ---- tile grids --------------------------------------------------------- */

/* Layer l's grid g as it will be written, expanded to W x H tiles (the
 * dims its data has now).  A grid whose data cannot be read starts from
 * zeros: writing it whole repairs it. */
static int grid_cur(struct w *w, const struct layer *l, int g, int32_t W, int32_t H,
		    uint8_t **out)
{
	size_t ts = (size_t)grids[g].size, tiles = (size_t)W * (size_t)H;
	uint8_t *t = calloc(tiles ? tiles : 1, ts);
	if (!t)
		return nomem(w);
	*out = t;
	struct sv_blob *b;
	struct sv_err e;
	sv_err_clear(&e);
	struct sv_err *keep = w->err;
	w->err = &e;
	int rc = data_get(w, l->grid[g], &b);
	w->err = keep;
	if (rc == -ENOMEM) {
		free(t);
		*out = NULL;
		return nomem(w);
	}
	if (rc)
		return 0;
	if (g == G_TILES && l->tver >= 4) {
		size_t at = 0;
		for (size_t src = 0; src + 4 <= b->len && at < tiles; src += 4)
			for (unsigned r = 0; r <= b->data[src + 2] && at < tiles; r++, at++) {
				t[4 * at] = b->data[src];
				t[4 * at + 1] = b->data[src + 1];
			}
	} else {
		memcpy(t, b->data, b->len < tiles * ts ? b->len : tiles * ts);
	}
	sv_blob_unref(b);
	return 0;
}

/* Stores W x H tiles of grid g in the layer's own encoding: version 4
 * tile runs (skip = repeats, at most 255) or one tile each. */
static int grid_put(struct w *w, const struct layer *l, int g, uint8_t *t, size_t tiles)
{
	size_t ts = (size_t)grids[g].size;
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
		return data_put(w, l->grid[g], t, tiles * ts, NULL);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	for (size_t i = 0; i < tiles && !rc;) {
		size_t j = i + 1;
		while (j < tiles && j - i < 256 && t[4 * j] == t[4 * i] && t[4 * j + 1] == t[4 * i + 1])
			j++;
		uint8_t run[4] = {t[4 * i], t[4 * i + 1], (uint8_t)(j - i - 1), 0};
		rc = sv_buf_add(&b, run, 4) ? nomem(w) : 0;
		i = j;
	}
	if (!rc)
		rc = data_put(w, l->grid[g], b.p, b.len, NULL);
	sv_buf_fini(&b);
	return rc;
}

static inline int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_grid(struct w *w, int g, int32_t W, int32_t H, const uint8_t *p, size_t len,
		      uint8_t *t)
{
	size_t ts = (size_t)grids[g].size, cw = (size_t)grids[g].cw, i = 0;
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
			return fail(w, "line %ld: more than the layer's %d rows", line, H);
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
				return fail(w, "line %ld: more than the layer's %d cells", line, W);
			uint8_t *c = t + ((size_t)row * (size_t)W + (size_t)col) * ts;
			uint8_t v[12];
			bool dots = x - s == cw, ok = x - s == cw;
			for (size_t k = s; k < x && ok; k++)
				dots = dots && p[k] == '.';
			for (size_t k = 0; k < cw && ok && !dots; k++) {
				int h = hexval(p[s + k]);
				ok = h >= 0;
				v[k] = (uint8_t)h;
			}
			if (!ok)
				return fail(w, "line %ld, cell %d: \"%.*s\" is not %zu hex digits or %zu dots",
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
			return fail(w, "line %ld: %d cells, but the layer is %d wide", line, col, W);
		row++;
		i = e + 1;
	}
	if (row != H)
		return fail(w, "%d rows, but the layer is %d high", row, H);
	return 0;
}

static int apply_grid(struct w *w, int32_t k, int g, const uint8_t *p, size_t len)
{
	const struct layer *l = &w->m->lay[k];
	if (l->bad)
		return fail(w, "%s", l->bad);
	int32_t W = item_get(w, l->item, 4), H = item_get(w, l->item, 5);
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

static int resize_layer(struct w *w, const struct layer *l, int32_t nW, int32_t nH)
{
	int32_t oW = item_get(w, l->item, 4), oH = item_get(w, l->item, 5);
	uint64_t lim = sv_container_opts(w->c)->max_decode;
	if ((uint64_t)nW * (uint64_t)nH * 6 > lim)
		return fail(w, "%d x %d tiles is over the decode limit", nW, nH);
	for (int g = 0; g < NGRID; g++) {
		if (l->grid[g] < 0)
			continue;
		uint8_t *t, *n;
		int rc = grid_cur(w, l, g, oW, oH, &t);
		if (rc)
			return rc;
		n = regrid(t, oW, oH, nW, nH, (size_t)grids[g].size);
		free(t);
		if (!n)
			return nomem(w);
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
		int rc = data_get(w, l->data, &b);
		w->err = keep;
		if (rc == -ENOMEM)
			return nomem(w);
		uint8_t *old = calloc((size_t)oW * (size_t)oH + 1, 4);
		if (!old) {
			sv_blob_unref(rc ? NULL : b);
			return nomem(w);
		}
		if (!rc) {
			size_t n = (size_t)oW * (size_t)oH * 4;
			memcpy(old, b->data, b->len < n ? b->len : n);
			sv_blob_unref(b);
		}
		uint8_t *n = regrid(old, oW, oH, nW, nH, 4);
		free(old);
		if (!n)
			return nomem(w);
		rc = data_put(w, l->data, n, (size_t)nW * (size_t)nH * 4, NULL);
		free(n);
		if (rc)
			return rc;
	}
	int rc = item_set(w, l->item, 4, nW);
	return rc ? rc : item_set(w, l->item, 5, nH);
}

static int apply_layer(struct w *w, int32_t k, const uint8_t *p, size_t len)
{
	const struct layer *l = &w->m->lay[k];
	if (l->bad)
		return fail(w, "%s", l->bad);
	json_t *o;
	int rc = parse_json(w, p, len, &o);
	if (rc)
		return rc;
	int32_t it = l->item, v[4], x;
	const char *kind = json_string_value(json_object_get(o, "kind"));
	if (!json_is_object(o))
		rc = fail(w, "must be a JSON object");
	else if (!kind)
		rc = fail(w, "\"kind\" must be a string");
	if (rc)
		goto out;
	if (l->kind == L_OTHER) {
		static const char *const keys[] = {"kind", "type", "ints", NULL};
		json_t *a = json_object_get(o, "ints");
		int n = nints(w->d, it);
		if ((rc = only_keys(w, o, keys, "this layer")))
			goto out;
		if (strcmp(kind, "unknown") || (rc = get_int(w, o, "type", INT32_MIN, INT32_MAX, &x,
							     true)) || x != l->ltype) {
			rc = rc ? rc : fail(w, "\"kind\" and \"type\" cannot change");
			goto out;
		}
		if (!json_is_array(a) || json_array_size(a) != (size_t)n) {
			rc = fail(w, "\"ints\" must be an array of the item's %d ints", n);
			goto out;
		}
		for (int i = 0; i < n && !rc; i++) {
			json_t *e = json_array_get(a, (size_t)i);
			if (!json_is_integer(e) || json_integer_value(e) < INT32_MIN ||
			    json_integer_value(e) > INT32_MAX)
				rc = fail(w, "\"ints\" must hold int32 values");
			else if ((int32_t)json_integer_value(e) != geti(w->d, it, i))
				rc = item_set(w, it, i, (int32_t)json_integer_value(e));
		}
		if (!rc && item_get(w, it, 1) != l->ltype)
			rc = fail(w, "the layer's type (int 1) cannot change");
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
	rc = only_keys(w, o, tiles ? tkeys : l->kind == L_QUADS ? qkeys : skeys, "this layer");
	if (!rc)
		rc = get_int(w, o, "version", INT32_MIN, INT32_MAX, &x, true);
	if (!rc && x != l->tver)
		rc = fail(w, "\"version\" is %d and cannot change", l->tver);
	if (rc)
		goto out;
	/* The kind: only a tile layer and the game layer trade places. */
	enum lkind nk = l->kind;
	if (strcmp(kind, kind_names[l->kind])) {
		if (!strcmp(kind, "game") && l->kind == L_TILES)
			nk = L_GAME;
		else if (!strcmp(kind, "tiles") && l->kind == L_GAME)
			nk = L_TILES;
		else {
			rc = fail(w, "a %s layer cannot become \"%s\" (only tiles and game trade)",
				  kind_names[l->kind], kind);
			goto out;
		}
		rc = item_set(w, it, 6, (item_get(w, it, 6) & ~63) | (nk == L_GAME));
		if (rc)
			goto out;
	}
	bool phys = nk != L_TILES && tiles;
	int32_t nv[3];
	int r = get_name(w, o, 3, nv, false, l->has_name ? l->name : "");
	if (r < 0) {
		rc = r;
		goto out;
	}
	if (r == 0 && !l->has_name) {
		rc = fail(w, "a version %d %s layer has no name", l->tver, kind_names[l->kind]);
		goto out;
	}
	int nameat = tiles ? 15 : 7;
	for (int i = 0; r == 0 && i < 3 && !rc; i++)
		rc = item_set(w, it, nameat + i, nv[i]);
	/* DDNet's rules for physics layers bind what an edit changes; a map
	 * that broke them already keeps what it has. */
	bool kind_changed = nk != l->kind;
	if (!rc && phys && l->has_name && (r == 0 || kind_changed)) {
		char now[16];
		for (int i = 0; i < 3; i++) {
			uint32_t u = (uint32_t)item_get(w, it, nameat + i);
			for (int b = 0; b < 4; b++)
				now[4 * i + b] = (char)(((u >> (24 - 8 * b)) & 0xff) - 128);
		}
		now[11] = '\0';
		if (strcmp(now, kind_titles[nk]))
			rc = fail(w, "DDNet names a %s layer \"%s\"", kind_names[nk], kind_titles[nk]);
	}
	if (!rc)
		rc = get_bool(w, o, "detail", &x);
	if (!rc && phys && x && (x != (item_get(w, it, 2) & 1) || kind_changed))
		rc = fail(w, "a %s layer cannot be a detail layer", kind_names[nk]);
	if (!rc && x != (item_get(w, it, 2) & 1))
		rc = item_set(w, it, 2, (item_get(w, it, 2) & ~1) | x);
	if (rc)
		goto out;
	if (!tiles) {
		const char *cnt = l->kind == L_QUADS ? "quads" : "sources";
		const char *ref = l->kind == L_QUADS ? "image" : "sound";
		int32_t nref = l->kind == L_QUADS ? w->m->nimg : w->m->nsnd;
		rc = get_int(w, o, cnt, INT32_MIN, INT32_MAX, &x, true);
		if (!rc && x != item_get(w, it, 4))
			rc = fail(w, "\"%s\" counts %s.json and changes with it", cnt, cnt);
		if (!rc)
			rc = set_field(w, o, ref, it, 6, -1, nref - 1);
		goto out;
	}
	int32_t W, H;
	rc = get_int(w, o, "width", 2, INT32_MAX, &W, true);
	if (!rc)
		rc = get_int(w, o, "height", 2, INT32_MAX, &H, true);
	if (!rc && (W != item_get(w, it, 4) || H != item_get(w, it, 5)))
		rc = resize_layer(w, l, W, H);
	if (!rc)
		rc = get_vec(w, json_object_get(o, "color"), "\"color\"", 4, false, v);
	bool col_changed = kind_changed;
	for (int i = 0; i < 4 && !rc; i++)
		col_changed = col_changed || v[i] != item_get(w, it, 7 + i);
	for (int i = 0; i < 4 && !rc && col_changed; i++)
		if (v[i] < 0 || v[i] > 255)
			rc = fail(w, "\"color\" values are 0 to 255");
	if (!rc && phys && col_changed &&
	    (v[0] != 255 || v[1] != 255 || v[2] != 255 || v[3] != 255))
		rc = fail(w, "a %s layer's colour is 255 255 255 255", kind_names[nk]);
	for (int i = 0; i < 4 && !rc; i++)
		if (v[i] != item_get(w, it, 7 + i))
			rc = item_set(w, it, 7 + i, v[i]);
	if (!rc)
		rc = set_field(w, o, "color_envelope", it, 11, -1, w->m->nenv - 1);
	if (!rc)
		rc = set_field(w, o, "color_envelope_offset", it, 12, INT32_MIN, INT32_MAX);
	if (!rc)
		rc = set_field(w, o, "image", it, 13, -1, w->m->nimg - 1);
out:
	json_decref(o);
	return rc;
}

/* quads.json (38 ints a quad) or sources.json (13 ints; 9 in old layers). */
static int apply_list(struct w *w, int32_t k, const uint8_t *p, size_t len)
{
	const struct layer *l = &w->m->lay[k];
	if (l->bad)
		return fail(w, "%s", l->bad);
	json_t *a;
	int rc = parse_json(w, p, len, &a);
	if (rc)
		return rc;
	int per = l->kind == L_QUADS ? 38 : l->kind == L_SOUNDS ? 13 : 9;
	size_t n = json_array_size(a);
	struct sv_blob *old = NULL;
	struct sv_buf b;
	sv_buf_init(&b);
	if (!json_is_array(a) || n > (size_t)(INT32_MAX / 4 / per)) {
		rc = fail(w, "must be a JSON array");
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
		rc = nomem(w);
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		json_t *o = json_array_get(a, i);
		int32_t v[38] = {0};
		char what[40];
		snprintf(what, sizeof what, "%s %zu", l->kind == L_QUADS ? "quad" : "source", i);
		if (!json_is_object(o)) {
			rc = fail(w, "%s must be an object", what);
			break;
		}
		if (l->kind == L_QUADS) {
			rc = only_keys(w, o, qk, what);
			json_t *pts = json_object_get(o, "points"), *cols = json_object_get(o, "colors"),
			       *tex = json_object_get(o, "texcoords");
			if (!rc && (!json_is_array(pts) || json_array_size(pts) != 4 ||
				    !json_is_array(cols) || json_array_size(cols) != 4 ||
				    !json_is_array(tex) || json_array_size(tex) != 4))
				rc = fail(w, "%s: \"points\", \"colors\" and \"texcoords\" hold 4 each",
					  what);
			for (int q = 0; q < 4 && !rc; q++) {
				rc = get_vec(w, json_array_get(pts, (size_t)q), "a point", 2, true,
					     &v[2 * q]);
				if (!rc)
					rc = get_vec(w, json_array_get(cols, (size_t)q), "a colour", 4,
						     false, &v[10 + 4 * q]);
				if (!rc)
					rc = get_vec(w, json_array_get(tex, (size_t)q), "a texcoord", 2,
						     true, &v[26 + 2 * q]);
			}
			if (!rc)
				rc = get_vec(w, json_object_get(o, "pivot"), "\"pivot\"", 2, true, &v[8]);
			for (int f = 0; f < 4 && !rc; f++)
				rc = get_int(w, o, qk[4 + f], INT32_MIN, INT32_MAX, &v[34 + f], true);
		} else if (l->kind == L_SOUNDS) {
			rc = only_keys(w, o, sk, what);
			if (!rc)
				rc = get_vec(w, json_object_get(o, "position"), "\"position\"", 2, true, v);
			for (int f = 1; f <= 9 && !rc; f++)
				rc = get_int(w, o, sk[f], INT32_MIN, INT32_MAX, &v[f + 1], true);
			if (!rc)
				rc = get_vec(w, json_object_get(o, "size"), "\"size\"", 2, true, &v[11]);
		} else {
			rc = only_keys(w, o, ok, what);
			if (!rc)
				rc = get_vec(w, json_object_get(o, "position"), "\"position\"", 2, true, v);
			for (int f = 1; f <= 7 && !rc; f++)
				rc = get_int(w, o, ok[f], INT32_MIN, INT32_MAX, &v[f + 1], true);
		}
		for (int f = 0; f < per && !rc; f++) {
			uint8_t le[4];
			wr32(le, v[f]);
			rc = sv_buf_add(&b, le, 4) ? nomem(w) : 0;
		}
	}
	if (rc)
		goto out;
	int32_t idx = item_get(w, l->item, 5);
	if (idx >= 0 && idx < w->d->num_data) {
		/* Bytes past the listed items (a dummy quad of an empty layer)
		 * are not the view's: kept when nothing is listed. */
		if (!n && !l->count)
			goto out;
		rc = data_put(w, idx, b.p, b.len, NULL);
	} else if (n) {
		int32_t added;
		rc = data_put(w, -1, b.p, b.len, &added);
		if (!rc)
			rc = item_set(w, l->item, 5, added);
	}
	if (!rc && (int32_t)n != item_get(w, l->item, 4))
		rc = item_set(w, l->item, 4, (int32_t)n);
out:
	sv_blob_unref(old);
	sv_buf_fini(&b);
	json_decref(a);
	return rc;
}

/* ---- envelopes ---------------------------------------------------------- */

static int item_replace(struct w *w, int32_t it, const struct sv_buf *b)
{
	struct sv_buf *x = &w->o->item[it];
	x->len = 0;
	w->o->item_set[it] = true;
	return sv_buf_add(x, b->len ? b->p : (const uint8_t *)"", b->len) ? nomem(w) : 0;
}

/* Points: 22 ints each here (time, curve, values[4], in dx[4], in dy[4],
 * out dx[4], out dy[4]) whatever the map stores. */
static int env_points(struct w *w, int32_t k, const uint8_t *p, size_t len, struct sv_buf *pts,
		      int32_t *count, bool *tangents)
{
	const struct twm *m = w->m;
	const struct env *e = &m->env[k];
	int32_t v[22];
	uint8_t le[4];
	*count = 0;
	if (!p) {
		if (e->bad)
			return fail(w, "envelope %d cannot be read: %s", k, e->bad);
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
					return nomem(w);
			}
		}
		*count = e->num;
		return 0;
	}
	json_t *o;
	int rc = parse_json(w, p, len, &o);
	if (rc)
		return rc;
	static const char *const keys[] = {"name", "version", "channels", "synchronized", "points",
					   NULL};
	static const char *const pk[] = {"time", "curve", "values", "bezier", NULL};
	int32_t it = e->item, x;
	json_t *a = json_object_get(o, "points");
	if (!json_is_object(o))
		rc = fail(w, "must be a JSON object");
	if (!rc)
		rc = only_keys(w, o, keys, "an envelope");
	if (!rc)
		rc = get_int(w, o, "version", INT32_MIN, INT32_MAX, &x, true);
	if (!rc && x != e->version)
		rc = fail(w, "\"version\" is %d and cannot change", e->version);
	if (!rc)
		rc = set_field(w, o, "channels", it, 1, 1, 4);
	bool has_sync = e->version >= 2 && nints(w->d, it) >= 13;
	if (!rc && json_object_get(o, "synchronized")) {
		if (!has_sync)
			rc = fail(w, "a version %d envelope has no \"synchronized\"", e->version);
		else if (!(rc = get_bool(w, o, "synchronized", &x)) && x != e->sync)
			rc = item_set(w, it, 12, x);
	}
	if (!rc) {
		int32_t nv[8];
		int r = get_name(w, o, 8, nv, false, e->name);
		if (r < 0)
			rc = r;
		for (int i = 0; r == 0 && i < 8 && !rc; i++)
			rc = item_set(w, it, 4 + i, nv[i]);
	}
	if (!rc && !json_is_array(a))
		rc = fail(w, "\"points\" must be an array");
	for (size_t i = 0; !rc && i < json_array_size(a); i++) {
		json_t *q = json_array_get(a, i), *cv, *bz;
		char what[32];
		snprintf(what, sizeof what, "point %zu", i);
		memset(v, 0, sizeof v);
		if (!json_is_object(q)) {
			rc = fail(w, "%s must be an object", what);
			break;
		}
		if ((rc = only_keys(w, q, pk, what)) ||
		    (rc = get_int(w, q, "time", INT32_MIN, INT32_MAX, &v[0], true)))
			break;
		cv = json_object_get(q, "curve");
		if (json_is_integer(cv) && json_integer_value(cv) >= INT32_MIN &&
		    json_integer_value(cv) <= INT32_MAX) {
			v[1] = (int32_t)json_integer_value(cv);
		} else {
			int c = -1;
			for (int n = 0; n < 6 && json_is_string(cv); n++)
				if (!strcmp(json_string_value(cv), curve_names[n]))
					c = n;
			if (c < 0) {
				rc = fail(w, "%s: \"curve\" is step, linear, slow, fast, smooth, bezier "
					  "or a number", what);
				break;
			}
			v[1] = c;
		}
		if ((rc = get_vec(w, json_object_get(q, "values"), "\"values\"", 4, true, &v[2])))
			break;
		bz = json_object_get(q, "bezier");
		if (bz) {
			*tangents = true;
			static const char *const side[3] = {"in", "out", NULL};
			if (!json_is_object(bz) || (rc = only_keys(w, bz, side, "\"bezier\""))) {
				rc = rc ? rc : fail(w, "%s: \"bezier\" must be an object", what);
				break;
			}
			for (int s = 0; s < 2 && !rc; s++) {
				json_t *sa = json_object_get(bz, side[s]);
				if (!json_is_array(sa) || json_array_size(sa) != 4) {
					rc = fail(w, "%s: \"bezier\".\"%s\" holds 4 [dx, dy] pairs", what,
						  side[s]);
					break;
				}
				for (int ch = 0; ch < 4 && !rc; ch++) {
					json_t *pr = json_array_get(sa, (size_t)ch);
					int32_t t2[2] = {0, 0};
					if (!json_is_array(pr) || json_array_size(pr) != 2 ||
					    !json_is_integer(json_array_get(pr, 0))) {
						rc = fail(w, "%s: a tangent is [dx in ms, dy]", what);
						break;
					}
					t2[0] = (int32_t)json_integer_value(json_array_get(pr, 0));
					if ((rc = to_fx(w, json_array_get(pr, 1), "a tangent's dy", &t2[1])))
						break;
					v[6 + 8 * s + ch] = t2[0];
					v[6 + 8 * s + 4 + ch] = t2[1];
				}
			}
		}
		for (int f = 0; f < 22 && !rc; f++) {
			wr32(le, v[f]);
			rc = sv_buf_add(pts, le, 4) ? nomem(w) : 0;
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
static int apply_envs(struct w *w, const uint8_t *const *ep, const size_t *el)
{
	const struct twm *m = w->m;
	struct sv_buf all, pts, bez;
	sv_buf_init(&all);
	sv_buf_init(&pts);
	sv_buf_init(&bez);
	struct sv_buf *mine = calloc((size_t)m->nenv + 1, sizeof *mine);
	int32_t *cnt = calloc((size_t)m->nenv + 1, sizeof *cnt);
	int rc = mine && cnt ? 0 : nomem(w);
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
		rc = fail(w, "this map keeps no bezier tangents (DDNet keeps them in its "
			  "envpoints-bezier item, Teeworlds 0.7 in version 3 envelopes)");
		goto out;
	}
	if (m->points < 0) {
		for (int32_t k = 0; k < m->nenv && !rc; k++)
			if (cnt[k])
				rc = fail(w, "the map has no envelope points item to add points to");
		goto out;
	}
	if (same) {
		for (int32_t k = 0; k < m->nenv && !rc; k++) {
			for (int32_t i = 0; ep[k] && i < cnt[k] && !rc; i++) {
				const uint8_t *q = mine[k].p + (size_t)i * 88;
				int32_t pi = m->env[k].start + i;
				for (int f = 0; f < m->point_ints && !rc; f++)
					rc = item_set(w, m->points, pi * m->point_ints + f, rd32(q + 4 * f));
				for (int f = 0; m->point_ints == 6 && m->bez_ok && f < 16 && !rc; f++)
					rc = item_set(w, m->bez, pi * 16 + f, rd32(q + 24 + 4 * f));
			}
		}
		goto out;
	}
	for (int32_t k = 0; k < m->nenv && !rc; k++) {
		int32_t count = cnt[k];
		if (ep[k]) {
			rc = sv_buf_add(&all, mine[k].p, mine[k].len) ? nomem(w) : 0;
		} else {
			rc = env_points(w, k, NULL, 0, &all, &count, &(bool){false});
			if (rc)
				break;
		}
		if (!rc && item_get(w, m->env[k].item, 2) != total)
			rc = item_set(w, m->env[k].item, 2, total);
		if (!rc && item_get(w, m->env[k].item, 3) != count)
			rc = item_set(w, m->env[k].item, 3, count);
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
			rc = nomem(w);
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

/* ---- a commit ----------------------------------------------------------- */

static int apply_one(struct w *w, uint32_t node, const uint8_t *p, size_t len)
{
	const struct twm *m = w->m;
	uint64_t key = sv_node(w->c, node)->key;
	uint32_t i = INDEX(key);
	w->view = sv_node(w->c, node)->name;
	switch (KIND(key)) {
	case K_INFO:
	case K_SETTINGS:
		if (m->info_bad)
			return fail(w, "%s", m->info_bad);
		return KIND(key) == K_INFO ? apply_info(w, p, len) : apply_settings(w, p, len);
	case K_IMAGE:
		if (m->img[i].bad)
			return fail(w, "%s", m->img[i].bad);
		return apply_image(w, &m->img[i], p, len);
	case K_SOUND:
		if (m->snd[i].bad)
			return fail(w, "%s", m->snd[i].bad);
		return apply_sound(w, &m->snd[i], p, len);
	case K_GROUP:
		if (m->grp[i].bad)
			return fail(w, "%s", m->grp[i].bad);
		return apply_group(w, (int32_t)i, p, len);
	case K_LAYER: return apply_layer(w, (int32_t)i, p, len);
	case K_GRID: return apply_grid(w, (int32_t)(i >> 3), (int)(i & 7), p, len);
	case K_QUADS: case K_SOURCES: return apply_list(w, (int32_t)i, p, len);
	default: return fail(w, "this view cannot be written");
	}
}

/* What the loader checks across layers, on the map as it will be. */
static int cross_checks(struct w *w)
{
	const struct twm *m = w->m;
	int32_t games = 0, game = -1;
	for (int32_t k = 0; k < m->nlay; k++) {
		const struct layer *l = &m->lay[k];
		if (l->bad || l->group < 0 || l->ltype != 2)
			continue;
		if (item_get(w, l->item, 6) & 1) {
			games++;
			game = k;
		}
	}
	if (games > 1)
		return fail(w, "the map would have a second game layer (DDNet refuses it)");
	if (!games && m->game >= 0)
		return fail(w, "the map would have no game layer (DDNet refuses it)");
	if (game < 0)
		return 0;
	uint64_t gt = (uint64_t)item_get(w, m->lay[game].item, 4) *
		      (uint64_t)item_get(w, m->lay[game].item, 5);
	for (int32_t k = 0; k < m->nlay; k++) {
		const struct layer *l = &m->lay[k];
		if (l->bad || l->group < 0 || l->ltype != 2 || l->kind == L_TILES || l->kind == L_GAME)
			continue;
		uint64_t t = (uint64_t)item_get(w, l->item, 4) * (uint64_t)item_get(w, l->item, 5);
		if (t < gt)
			return fail(w, "layer %s would be smaller than the game layer (%d x %d < %d x "
				    "%d; DDNet refuses it)", l->dname, item_get(w, l->item, 4),
				    item_get(w, l->item, 5), item_get(w, m->lay[game].item, 4),
				    item_get(w, m->lay[game].item, 5));
	}
	return 0;
}

/* The cross checks refuse what an edit breaks, not what the map broke
 * already (an edit elsewhere in a map DDNet refuses still goes in). */
static int final_checks(struct w *w)
{
	int rc = cross_checks(w);
	if (!rc)
		return 0;
	struct sv_twm_out none;
	if (out_init(&none, w->d))
		return rc;
	struct sv_err e;
	struct w before = {w->c, w->d, w->m, &none, &e, w->view};
	bool was_bad = cross_checks(&before) != 0;
	sv_twm_out_fini(&none);
	if (was_bad)
		sv_err_clear(w->err);
	return was_bad ? 0 : rc;
}

/* Every file node of the map view, each with the items and data it shows:
 * calls fn for each until it returns non-zero. */
struct dep_ctx {
	const bool *item, *data;
	size_t nitems, ndata;
};

static bool ci(const struct dep_ctx *x, int32_t i)
{
	return i >= 0 && (size_t)i < x->nitems && x->item[i];
}

static bool cd(const struct dep_ctx *x, int32_t i)
{
	return i >= 0 && (size_t)i < x->ndata && x->data[i];
}

static bool layer_changed(const struct dep_ctx *x, const struct layer *l)
{
	if (ci(x, l->item) || cd(x, l->qdata) || cd(x, l->data))
		return true;
	for (int g = 0; g < NGRID; g++)
		if (cd(x, l->grid[g]))
			return true;
	return false;
}

static void touch_views(struct sv_container *c, const struct df *d, const struct dep_ctx *x)
{
	const struct twm *m = d->map;
	if (m->info >= 0) {
		bool ch = ci(x, m->info);
		for (int f = 1; f <= 5; f++)
			ch = ch || cd(x, geti(d, m->info, f));
		if (ch) {
			sv_node_touch(c, m->info_node);
			sv_node_touch(c, m->settings_node);
		}
	}
	uint32_t images_json = SV_NONE;
	for (int32_t k = 0; k < m->nimg; k++) {
		const struct image *im = &m->img[k];
		if (ci(x, im->item) || cd(x, im->data) || cd(x, im->name_data)) {
			if (im->node != SV_NONE)
				sv_node_touch(c, im->node);
			images_json = 0;
		}
	}
	if (images_json == 0) {
		uint32_t dir = sv_node(c, m->dir)->nkids ? m->dir : SV_NONE;
		const struct sv_node *dn = dir != SV_NONE ? sv_node(c, dir) : NULL;
		for (uint32_t k = 0; dn && k < dn->nkids; k++)
			if (KIND(sv_node(c, dn->kids[k])->key) == K_IMAGES)
				sv_node_touch(c, dn->kids[k]);
	}
	for (int32_t k = 0; k < m->nsnd; k++)
		if (m->snd[k].node != SV_NONE && (ci(x, m->snd[k].item) || cd(x, m->snd[k].data)))
			sv_node_touch(c, m->snd[k].node);
	bool envs = ci(x, m->points) || ci(x, m->bez);
	for (int32_t k = 0; k < m->nenv && !envs; k++)
		envs = ci(x, m->env[k].item);
	for (int32_t k = 0; envs && k < m->nenv; k++)
		sv_node_touch(c, m->env[k].node);
	for (int32_t k = 0; k < m->ngrp; k++) {
		const struct group *g = &m->grp[k];
		bool ch = ci(x, g->item);
		for (int32_t j = g->start; !g->bad && j < g->start + g->num; j++)
			ch = ch || ci(x, m->lay[j].item);
		if (ch)
			sv_node_touch(c, g->node);
	}
	for (int32_t k = 0; k < m->nlay; k++) {
		const struct layer *l = &m->lay[k];
		if (l->group < 0 || m->grp[l->group].bad || !layer_changed(x, l))
			continue;
		sv_node_touch(c, l->node);
		for (int g = 0; g < NGRID; g++)
			if (l->gnode[g] != SV_NONE)
				sv_node_touch(c, l->gnode[g]);
		if (l->lnode && l->lnode != SV_NONE)
			sv_node_touch(c, l->lnode);
		if (m->game_node != SV_NONE && (k == m->game || k == m->front))
			sv_node_touch(c, m->game_node);
	}
}

int sv_twm_check(struct sv_container *c, const struct df *d, uint32_t node, const uint8_t *p,
		 size_t len, struct sv_err *err)
{
	struct sv_twm_out o;
	if (out_init(&o, d))
		return sv_err_set(err, -ENOMEM, "map: out of memory");
	struct w w = {c, d, d->map, &o, err, sv_node(c, node)->name};
	int rc;
	if (KIND(sv_node(c, node)->key) == K_ENV) {
		const uint8_t **ep = calloc((size_t)d->map->nenv + 1, sizeof *ep);
		size_t *el = calloc((size_t)d->map->nenv + 1, sizeof *el);
		if (!ep || !el) {
			rc = sv_err_set(err, -ENOMEM, "map: out of memory");
		} else {
			ep[INDEX(sv_node(c, node)->key)] = p ? p : (const uint8_t *)"";
			el[INDEX(sv_node(c, node)->key)] = len;
			rc = apply_envs(&w, ep, el);
		}
		free(ep);
		free(el);
	} else {
		rc = apply_one(&w, node, p ? p : (const uint8_t *)"", len);
	}
	if (!rc)
		rc = final_checks(&w);
	sv_twm_out_fini(&o);
	return rc;
}

/* The order edits are applied in: a layer's size and kind before its
 * grids, so that a grid edited with them is read at the new size. */
static int rank(uint32_t kind)
{
	return kind == K_LAYER ? 0 : kind == K_GRID || kind == K_QUADS || kind == K_SOURCES ? 2 : 1;
}

int sv_twm_commit(struct sv_container *c, const struct df *d, struct sv_twm_out *o,
		  struct sv_err *err)
{
	const struct twm *m = d->map;
	if (out_init(o, d))
		return sv_err_set(err, -ENOMEM, "map: out of memory");
	if (!m)
		return 0;
	struct w w = {c, d, m, o, err, ""};
	const uint8_t **ep = calloc((size_t)m->nenv + 1, sizeof *ep);
	size_t *el = calloc((size_t)m->nenv + 1, sizeof *el);
	bool any_env = false;
	int rc = 0;
	if (!ep || !el) {
		rc = sv_err_set(err, -ENOMEM, "map: out of memory");
		goto out;
	}
	/* Every edited view of the map, by its node's key. */
	for (int pass = 0; pass < 3 && !rc; pass++) {
		for (uint32_t n = 0; n < sv_node_count(c) && !rc; n++) {
			const struct sv_node *node = sv_node(c, n);
			uint32_t kind = KIND(node->key);
			if (kind <= K_MDIR || (node->flags & (SV_N_DIR | SV_N_GONE | SV_N_TEMP |
							       SV_N_NEW | SV_N_META)) ||
			    rank(kind) != pass)
				continue;
			const struct sv_buf *e = sv_node_edit(c, n);
			if (!e)
				continue;
			if (kind == K_ENV) {
				ep[INDEX(node->key)] = e->p ? e->p : (const uint8_t *)"";
				el[INDEX(node->key)] = e->len;
				any_env = true;
				continue;
			}
			rc = apply_one(&w, n, e->p ? e->p : (const uint8_t *)"", e->len);
		}
		if (pass == 1 && any_env && !rc)
			rc = apply_envs(&w, ep, el);
	}
	if (!rc) {
		w.view = "map";
		rc = final_checks(&w);
	}
	/* One item or data item changed through two views at once. */
	for (int32_t i = 0; i < d->num_items && !rc; i++)
		if (o->item_set[i] && sv_node_edit(c, d->item_node[i]))
			rc = sv_err_set(err, -EBUSY, "datafile: item %s/%s is edited both as raw bytes "
					"and through map/ in one commit: commit one, then the other",
					sv_node(c, sv_node(c, d->item_node[i])->parent)->name,
					sv_node(c, d->item_node[i])->name);
	for (int32_t i = 0; i < d->num_data && !rc; i++)
		if (o->data_set[i] && sv_node_edit(c, d->data_node[i]))
			rc = sv_err_set(err, -EBUSY, "datafile: data item %d is edited both as raw "
					"bytes and through map/ in one commit: commit one, then the "
					"other", i);
	if (rc)
		goto out;
	/* The other views of what changed. */
	bool *ci_ = calloc((size_t)d->num_items + 1, 1), *cd_ = calloc((size_t)d->num_data + 1, 1);
	if (!ci_ || !cd_) {
		free(ci_);
		free(cd_);
		rc = sv_err_set(err, -ENOMEM, "map: out of memory");
		goto out;
	}
	for (int32_t i = 0; i < d->num_items; i++) {
		ci_[i] = o->item_set[i] || sv_node_edit(c, d->item_node[i]);
		if (o->item_set[i])
			sv_node_touch(c, d->item_node[i]);
	}
	for (int32_t i = 0; i < d->num_data; i++) {
		cd_[i] = o->data_set[i] || sv_node_edit(c, d->data_node[i]);
		if (o->data_set[i])
			sv_node_touch(c, d->data_node[i]);
	}
	struct dep_ctx x = {ci_, cd_, (size_t)d->num_items, (size_t)d->num_data};
	touch_views(c, d, &x);
	free(ci_);
	free(cd_);
out:
	free(ep);
	free(el);
	if (rc)
		sv_twm_out_fini(o);
	return rc;
}
