/*
 * twmap_view.c - the content of each file of a map's map/ tree: tile and
 * physics grids as text, images and game.png as PNG, the JSON views, the
 * settings.  Everything is read through the bounded item readers and
 * sv_df_data (inflated with its declared size as the cap).
 */
#include "twmap_priv.h"

#include "codec/codec.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = j ? sv_json_dump(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER, &b) : -ENOMEM;
	json_decref(j);
	if (rc || sv_buf_add(&b, "", 1)) {
		sv_buf_fini(&b);
		return sv_err_set(err, -ENOMEM, "map: out of memory");
	}
	char *s = (char *)b.p;
	compact_arrays(s);
	size_t n = strlen(s);
	*out = sv_blob_new(n + 1);
	if (*out) {
		memcpy((*out)->data, s, n);
		(*out)->data[n] = '\n';
	}
	sv_buf_fini(&b);
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
	size_t tiles = (size_t)l->w * (size_t)l->h, ts = (size_t)sv_twm_grids[g].size;
	if (g == G_TILES && l->tver >= 4) {
		struct sv_blob *x = sv_blob_new(tiles * 4);
		if (!x) {
			sv_blob_unref(b);
			return sv_err_set(err, -ENOMEM, "map: out of memory");
		}
		size_t used, made, pad;
		sv_twm_expand_runs(b->data, b->len, x->data, tiles, &used, &made, &pad);
		if (pad != SIZE_MAX)
			rc = sv_err_set(err, -EBADMSG, "map: layer %d: stored tile %zu has padding "
					"%d (must be 0)", k, pad, b->data[4 * pad + 3]);
		else if (made < tiles)
			rc = sv_err_set(err, -EBADMSG, "map: layer %d: the tile runs give %zu tiles, "
					"fewer than %d x %d", k, made, l->w, l->h);
		else if (4 * used + 4 <= b->len)
			rc = sv_err_set(err, -EBADMSG, "map: layer %d: a tile run goes past %d x %d "
					"tiles (stored tile %zu of %zu)", k, l->w, l->h, used - 1,
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

/* Every tiles.txt cell with the space after it, by index << 4 | flags. */
static char cells[4096][4];
static pthread_once_t cells_once = PTHREAD_ONCE_INIT;

static void make_cells(void)
{
	for (int i = 0; i < 4096; i++) {
		if (i < 16 && !(i & 15)) {
			memcpy(cells[i], "... ", 4);
			continue;
		}
		cells[i][0] = hexd[i >> 8];
		cells[i][1] = hexd[(i >> 4) & 15];
		cells[i][2] = hexd[i & 15];
		cells[i][3] = ' ';
	}
}

static int load_grid(struct sv_container *c, const struct df *d, const struct twm *m,
		     int32_t k, int g, struct sv_blob **out, struct sv_err *err)
{
	const struct layer *l = &m->lay[k];
	struct sv_blob *b;
	int rc = get_grid(c, d, l, k, g, &b, err);
	if (rc)
		return rc;
	char head[600];
	uint64_t hl = sv_twm_grid_header(m, l, g, head, sizeof head);
	uint64_t size = hl + (uint64_t)l->h * ((uint64_t)l->w * (sv_twm_grids[g].cw + 1));
	*out = sv_blob_new(size);
	if (!*out) {
		sv_blob_unref(b);
		return sv_err_set(err, -ENOMEM, "map: out of memory");
	}
	char *p = (char *)(*out)->data;
	memcpy(p, head, hl);
	p += hl;
	size_t ts = (size_t)sv_twm_grids[g].size, W = (size_t)l->w;
	int cw = sv_twm_grids[g].cw;
	pthread_once(&cells_once, make_cells);
	for (size_t y = 0; y < (size_t)l->h; y++) {
		const uint8_t *t = b->data + y * W * ts;
		if (g == G_TILES) {
			/* The common case: a cell and its separator in one store. */
			for (size_t x = 0; x < W; x++, t += 4, p += 4)
				memcpy(p, cells[t[0] << 4 | (t[1] & 15)], 4);
			p[-1] = '\n';
			continue;
		}
		for (size_t x = 0; x < W; x++, t += ts) {
			if (g == G_SPEEDUP) {
				static const int at[5] = {0, 1, 2, 5, 4};
				if (!t[0] && !t[1] && !t[2] && !t[4] && !t[5]) {
					memcpy(p, "..........", 10);
				} else {
					for (int f = 0; f < 5; f++) {
						p[2 * f] = hexd[t[at[f]] >> 4];
						p[2 * f + 1] = hexd[t[at[f]] & 15];
					}
				}
			} else {
				bool zero = true;
				for (size_t f = 0; f < ts; f++)
					zero = zero && !t[f];
				for (size_t f = 0; f < ts; f++) {
					p[2 * f] = zero ? '.' : hexd[t[f] >> 4];
					p[2 * f + 1] = zero ? '.' : hexd[t[f] & 15];
				}
			}
			p += cw;
			*p++ = x + 1 < W ? ' ' : '\n';
		}
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


static int load_info(struct sv_container *c, const struct df *d, const struct twm *m,
		     bool settings, struct sv_blob **out, struct sv_err *err)
{
	if (m->info_bad)
		return sv_err_set(err, -EBADMSG, "%s", m->info_bad);
	if (settings) {
		struct sv_buf t;
		sv_buf_init(&t);
		int32_t idx = m->info >= 0 && nints(d, m->info) >= 6 ? geti(d, m->info, 5) : -1;
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
		int32_t idx = m->info >= 0 ? geti(d, m->info, 1 + f) : -1;
		int rc = sv_twm_data_string(c, d, idx, &s, &e);
		if (rc) {
			json_decref(o);
			return sv_err_set(err, rc, "map: info: %s: %s", sv_twm_info_keys[f], e.msg);
		}
		json_object_set_new(o, sv_twm_info_keys[f], jstr(s));
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
		json_object_set_new(p, "curve", curve >= 0 && curve < 6 ? json_string(sv_twm_curve_names[curve])
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

/* [a, b]: 22.10 fixed-point values (fixed) or plain integers. */
static json_t *pair(int32_t a, int32_t b, bool fixed)
{
	json_t *j = json_array();
	json_array_append_new(j, fixed ? fx(a) : json_integer(a));
	json_array_append_new(j, fixed ? fx(b) : json_integer(b));
	return j;
}

static json_t *pair_fx(int32_t a, int32_t b)
{
	return pair(a, b, true);
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
	json_object_set_new(o, "offset", pair(geti(d, it, 1), geti(d, it, 2), false));
	json_object_set_new(o, "parallax", pair(geti(d, it, 3), geti(d, it, 4), false));
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
	json_object_set_new(o, "kind", json_string(l->bad ? "unreadable" : sv_twm_kind_names[l->kind]));
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


