/*
 * twmap_edit.c - edits of a map's map/ files written back into the items
 * and data they came from: each view parsed strictly (JSON with exactly the
 * item's fields, grids of exactly the layer's size), applied to a copy of
 * the items it changes, then checked against what DDNet's loader refuses.
 * Bytes a view does not show are kept.  PNGs are decoded with libpng.
 */
#include "twmap_priv.h"

#include <errno.h>
#include <limits.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- edits -------------------------------------------------------------- */


void sv_twm_out_fini(struct sv_twm_out *o)
{
	if (!o)
		return;
	if (o->item)
		for (size_t i = 0; i <= o->nitems; i++)
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

int sv_tw_fail(struct twm_work *w, const char *fmt, ...)
{
	char buf[SV_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return sv_err_set(w->err, -EINVAL, "map: %s: %s", w->view, buf);
}

int sv_tw_nomem(struct twm_work *w)
{
	return sv_err_set(w->err, -ENOMEM, "map: out of memory");
}

/* Item it as it will be written: a copy made on first use. */
int32_t sv_tw_item_get(struct twm_work *w, int32_t it, int k)
{
	if (w->o->item_set[it]) {
		const struct sv_buf *b = &w->o->item[it];
		return (size_t)k * 4 + 4 <= b->len ? rd32(b->p + 4 * (size_t)k) : 0;
	}
	return geti(w->d, it, k);
}

static int item_len(struct twm_work *w, int32_t it)
{
	return w->o->item_set[it] ? (int)(w->o->item[it].len / 4) : nints(w->d, it);
}

int sv_tw_item_set(struct twm_work *w, int32_t it, int k, int32_t v)
{
	struct sv_buf *b = &w->o->item[it];
	if (!w->o->item_set[it]) {
		const struct item *x = &w->d->items[it];
		if (sv_buf_add(b, x->len ? w->d->items_sec + x->off : (const uint8_t *)"", x->len))
			return sv_tw_nomem(w);
		w->o->item_set[it] = true;
	}
	while (b->len < (size_t)k * 4 + 4)
		if (sv_buf_add(b, "\0\0\0\0", 4))
			return sv_tw_nomem(w);
	wr32(b->p + 4 * (size_t)k, v);
	return 0;
}

/* Data item i as it will be written (a new reference). */
int sv_tw_data_get(struct twm_work *w, int32_t i, struct sv_blob **out)
{
	if (i >= 0 && (size_t)i < w->o->ndata && w->o->data_set[i]) {
		*out = sv_blob_dup(w->o->data[i].p ? w->o->data[i].p : (uint8_t *)"",
				   w->o->data[i].len);
		return *out ? 0 : sv_tw_nomem(w);
	}
	return sv_df_data(w->c, w->d, i, sv_container_opts(w->c)->max_decode, out, w->err);
}

/* Replaces data item i with p[0..n), or adds one (i == -1: *added gets
 * its index). */
int sv_tw_data_put(struct twm_work *w, int32_t i, const void *p, size_t n, int32_t *added)
{
	struct sv_buf *b;
	if (i < 0) {
		struct sv_buf *a = realloc(w->o->added, (w->o->nadded + 1) * sizeof *a);
		if (!a)
			return sv_tw_nomem(w);
		w->o->added = a;
		b = &a[w->o->nadded];
		sv_buf_init(b);
		*added = w->d->num_data + (int32_t)w->o->nadded++;
	} else {
		b = &w->o->data[i];
		b->len = 0;
		w->o->data_set[i] = true;
	}
	return sv_buf_add(b, n ? p : "", n) ? sv_tw_nomem(w) : 0;
}

/* ---- JSON input --------------------------------------------------------- */

int sv_tw_parse_json(struct twm_work *w, const uint8_t *p, size_t len, json_t **out)
{
	json_error_t je;
	*out = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
	if (!*out)
		return sv_tw_fail(w, "line %d, column %d: %s", je.line, je.column, je.text);
	return 0;
}

/* Refuses keys of o not in `keys` (NULL-terminated). */
int sv_tw_only_keys(struct twm_work *w, json_t *o, const char *const *keys, const char *what)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool known = false;
		for (int i = 0; keys[i] && !known; i++)
			known = !strcmp(keys[i], k);
		if (!known)
			return sv_tw_fail(w, "%s has no field \"%s\"", what, k);
	}
	return 0;
}

int sv_tw_get_int(struct twm_work *w, json_t *o, const char *key, int64_t lo, int64_t hi, int32_t *v,
		  bool need)
{
	json_t *j = json_object_get(o, key);
	if (!j) {
		if (need)
			return sv_tw_fail(w, "\"%s\" is missing", key);
		return 1;
	}
	if (json_is_true(j) || json_is_false(j))
		j = NULL;
	if (!j || !json_is_integer(j))
		return sv_tw_fail(w, "\"%s\" must be an integer", key);
	json_int_t x = json_integer_value(j);
	if (x < lo || x > hi)
		return sv_tw_fail(w, "\"%s\" is %lld, outside %lld to %lld", key, (long long)x,
			    (long long)lo, (long long)hi);
	*v = (int32_t)x;
	return 0;
}

/* An integer field stored at int k of item it: a value other than the
 * stored one must lie in lo..hi (one the map holds already is kept). */
int sv_tw_set_field(struct twm_work *w, json_t *o, const char *key, int32_t it, int k, int64_t lo,
		    int64_t hi)
{
	int32_t x = 0;
	int rc = sv_tw_get_int(w, o, key, INT32_MIN, INT32_MAX, &x, true);
	if (rc || x == sv_tw_item_get(w, it, k))
		return rc;
	if (x < lo || x > hi)
		return sv_tw_fail(w, "\"%s\" is %d, outside %lld to %lld", key, x, (long long)lo,
			    (long long)hi);
	return sv_tw_item_set(w, it, k, x);
}

/* A number in 22.10 fixed point (rounded to 1/1024). */
int sv_tw_to_fx(struct twm_work *w, json_t *j, const char *what, int32_t *v)
{
	if (!json_is_number(j))
		return sv_tw_fail(w, "%s must be a number", what);
	double x = json_number_value(j) * 1024.0;
	if (!(x >= -2147483648.0 && x <= 2147483647.0))
		return sv_tw_fail(w, "%s is out of range", what);
	*v = (int32_t)(x >= 0 ? (int64_t)(x + 0.5) : -(int64_t)(-x + 0.5));
	return 0;
}

int sv_tw_get_bool(struct twm_work *w, json_t *o, const char *key, int32_t *v)
{
	json_t *j = json_object_get(o, key);
	if (!j)
		return sv_tw_fail(w, "\"%s\" is missing", key);
	if (!json_is_boolean(j))
		return sv_tw_fail(w, "\"%s\" must be true or false", key);
	*v = json_is_true(j);
	return 0;
}

/* An array of n numbers: integers (fixed == false) or 22.10 values. */
int sv_tw_get_vec(struct twm_work *w, json_t *j, const char *what, int n, bool fixed, int32_t *v)
{
	if (!json_is_array(j) || json_array_size(j) != (size_t)n)
		return sv_tw_fail(w, "%s must be an array of %d numbers", what, n);
	for (int i = 0; i < n; i++) {
		json_t *x = json_array_get(j, (size_t)i);
		if (fixed) {
			if (sv_tw_to_fx(w, x, what, &v[i]))
				return -EINVAL;
		} else {
			if (!json_is_integer(x) || json_integer_value(x) < INT32_MIN ||
			    json_integer_value(x) > INT32_MAX)
				return sv_tw_fail(w, "%s must hold integers", what);
			v[i] = (int32_t)json_integer_value(x);
		}
	}
	return 0;
}

/* A name for n ints: a string of at most 4n - 1 bytes. */
int sv_tw_get_name(struct twm_work *w, json_t *o, int n, int32_t *v, bool need, const char *cur)
{
	json_t *j = json_object_get(o, "name");
	if (!j) {
		if (need)
			return sv_tw_fail(w, "\"name\" is missing");
		return 1;
	}
	if (!json_is_string(j))
		return sv_tw_fail(w, "\"name\" must be a string");
	const char *s = json_string_value(j);
	if (cur && !strcmp(s, cur))
		return 1; /* unchanged: the stored bytes stay as they are */
	if (strlen(s) != json_string_length(j))
		return sv_tw_fail(w, "\"name\" holds a NUL");
	if (sv_twm_pack_name(s, v, n))
		return sv_tw_fail(w, "the name \"%s\" is %zu bytes; names here hold at most %d", s,
			    strlen(s), 4 * n - 1);
	return 0;
}

/* The info item as it will be written.  A map without one (older maps)
 * gets one at its first edit, as DDNet's editor writes it: version 1, no
 * strings, no settings (CMapItemInfoSettings); it goes after the items. */
static int32_t info_item(struct twm_work *w)
{
	if (w->m->info >= 0)
		return w->m->info;
	int32_t it = w->d->num_items;
	if (!w->o->new_info) {
		static const int32_t fresh[6] = {1, -1, -1, -1, -1, -1};
		struct sv_buf *b = &w->o->item[it];
		for (int k = 0; k < 6; k++) {
			uint8_t v[4];
			wr32(v, fresh[k]);
			if (sv_buf_add(b, v, 4))
				return -1;
		}
		w->o->item_set[it] = true;
		w->o->new_info = true;
	}
	return it;
}

/* Int k of the info item as it will be written (-1: the map has none);
 * set, it is made if the map had none. */
static int32_t info_get(struct twm_work *w, int k)
{
	if (w->m->info < 0 && !w->o->new_info)
		return -1;
	return sv_tw_item_get(w, info_item(w), k);
}

static int info_len(struct twm_work *w)
{
	return w->m->info < 0 && !w->o->new_info ? 0 : item_len(w, info_item(w));
}

static int info_set(struct twm_work *w, int k, int32_t v)
{
	int32_t it = info_item(w);
	return it < 0 ? sv_tw_nomem(w) : sv_tw_item_set(w, it, k, v);
}

/* ---- each view ---------------------------------------------------------- */

static int apply_info(struct twm_work *w, const uint8_t *p, size_t len)
{
	json_t *o;
	int rc = sv_tw_parse_json(w, p, len, &o);
	if (rc)
		return rc;
	static const char *const keys[] = {"author", "version", "credits", "license", NULL};
	if (!json_is_object(o))
		rc = sv_tw_fail(w, "must be a JSON object");
	else
		rc = sv_tw_only_keys(w, o, keys, "info");
	for (int f = 0; f < 4 && !rc; f++) {
		json_t *j = json_object_get(o, keys[f]);
		if (!j) {
			rc = sv_tw_fail(w, "\"%s\" is missing (null for none)", keys[f]);
			break;
		}
		if (!json_is_null(j) && !json_is_string(j)) {
			rc = sv_tw_fail(w, "\"%s\" must be a string or null", keys[f]);
			break;
		}
		if (json_is_string(j) && strlen(json_string_value(j)) != json_string_length(j)) {
			rc = sv_tw_fail(w, "\"%s\" holds a NUL", keys[f]);
			break;
		}
		int32_t idx = info_get(w, 1 + f);
		char *old = NULL;
		struct sv_err e;
		if (idx != -1 && sv_twm_data_string(w->c, w->d, idx, &old, &e) == -ENOMEM) {
			rc = sv_tw_nomem(w);
			break;
		}
		const char *s = json_string_value(j);
		bool same = s ? old && !strcmp(old, s) : idx == -1;
		free(old);
		if (same)
			continue;
		if (!s) {
			rc = info_set(w, 1 + f, -1);
			continue;
		}
		/* The string's own data item, unless another field shares it. */
		bool shared = idx < 0 || idx >= w->d->num_data;
		for (int g = 0; g < 5 && !shared; g++)
			shared = g != f && info_get(w, 1 + g) == idx;
		int32_t added;
		rc = sv_tw_data_put(w, shared ? -1 : idx, s, strlen(s) + 1, &added);
		if (!rc && shared)
			rc = info_set(w, 1 + f, added);
	}
	json_decref(o);
	return rc;
}

static int apply_settings(struct twm_work *w, const uint8_t *p, size_t len)
{
	if (memchr(p, 0, len))
		return sv_tw_fail(w, "a command holds a NUL byte");
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	for (size_t i = 0; i < len && !rc;) {
		const uint8_t *nl = memchr(p + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - p) : len, end = e;
		/* One command a line, each NUL-terminated (an empty line too). */
		if (sv_buf_add(&b, p + i, end - i) || sv_buf_add(&b, "", 1))
			rc = sv_tw_nomem(w);
		i = e + 1;
	}
	int32_t idx = !rc && info_len(w) >= 6 ? info_get(w, 5) : -1;
	if (!rc && idx >= 0 && idx < w->d->num_data) {
		rc = sv_tw_data_put(w, idx, b.p, b.len, NULL);
	} else if (!rc && b.len) {
		int32_t added;
		rc = sv_tw_data_put(w, -1, b.p, b.len, &added);
		if (!rc)
			rc = info_set(w, 5, added);
	}
	sv_buf_fini(&b);
	return rc;
}

static int apply_image(struct twm_work *w, const struct image *im, const uint8_t *p, size_t len)
{
	png_image img;
	memset(&img, 0, sizeof img);
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, p, len))
		return sv_tw_fail(w, "not a PNG the PNG library can read (%s)", img.message);
	int rc = 0;
	uint64_t want = (uint64_t)img.width * img.height * 4;
	uint8_t *px = NULL;
	if (!img.width || !img.height || img.width > INT32_MAX || img.height > INT32_MAX ||
	    want > sv_container_opts(w->c)->max_decode || want > INT32_MAX) {
		rc = sv_tw_fail(w, "a %u x %u image is too large", img.width, img.height);
		png_image_free(&img);
		return rc;
	}
	img.format = PNG_FORMAT_RGBA;
	/* 16-bit samples without a gAMA or sRGB chunk are taken as sRGB (as
	 * editors write them and as the game scales them), not linear. */
	img.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
	px = malloc((size_t)want);
	if (!px) {
		png_image_free(&img);
		return sv_tw_nomem(w);
	}
	if (!png_image_finish_read(&img, NULL, px, 0, NULL)) {
		rc = sv_tw_fail(w, "the PNG cannot be decoded (%s)", img.message);
		png_image_free(&img);
		free(px);
		return rc;
	}
	rc = sv_tw_data_put(w, im->data, px, (size_t)want, NULL);
	free(px);
	if (!rc)
		rc = sv_tw_item_set(w, im->item, 1, (int32_t)img.width);
	if (!rc)
		rc = sv_tw_item_set(w, im->item, 2, (int32_t)img.height);
	if (!rc && im->version >= 2 && nints(w->d, im->item) >= 7)
		rc = sv_tw_item_set(w, im->item, 6, 1); /* RGBA */
	return rc;
}

static int apply_sound(struct twm_work *w, const struct sound *s, const uint8_t *p, size_t len)
{
	if (len < 4 || memcmp(p, "OggS", 4))
		return sv_tw_fail(w, "not an Ogg stream (DDNet's sounds are Opus in Ogg)");
	if (len > INT32_MAX)
		return sv_tw_fail(w, "too large");
	int rc = sv_tw_data_put(w, s->data, p, len, NULL);
	if (!rc)
		rc = sv_tw_item_set(w, s->item, 4, (int32_t)len);
	return rc;
}

static int apply_group(struct twm_work *w, int32_t k, const uint8_t *p, size_t len)
{
	const struct group *g = &w->m->grp[k];
	json_t *o;
	int rc = sv_tw_parse_json(w, p, len, &o);
	if (rc)
		return rc;
	static const char *const keys[] = {"name", "version", "offset", "parallax", "clipping",
					   "layers", NULL};
	int32_t it = g->item, v[5], ver;
	int n = nints(w->d, it);
	bool clip = g->version >= 2 && n >= 12;
	if (!json_is_object(o))
		rc = sv_tw_fail(w, "must be a JSON object");
	if (!rc)
		rc = sv_tw_only_keys(w, o, keys, "a group");
	if (!rc)
		rc = sv_tw_get_int(w, o, "version", INT32_MIN, INT32_MAX, &ver, true);
	if (!rc && ver != g->version)
		rc = sv_tw_fail(w, "\"version\" is %d and cannot change", g->version);
	if (!rc)
		rc = sv_tw_get_vec(w, json_object_get(o, "offset"), "\"offset\"", 2, false, v);
	for (int i = 0; i < 2 && !rc; i++)
		rc = sv_tw_item_set(w, it, 1 + i, v[i]);
	if (!rc)
		rc = sv_tw_get_vec(w, json_object_get(o, "parallax"), "\"parallax\"", 2, false, v);
	for (int i = 0; i < 2 && !rc; i++)
		rc = sv_tw_item_set(w, it, 3 + i, v[i]);
	json_t *cl = json_object_get(o, "clipping");
	if (!rc && !clip && cl)
		rc = sv_tw_fail(w, "a version %d group has no clipping", g->version);
	if (!rc && clip) {
		static const char *const ck[] = {"enabled", "x", "y", "width", "height", NULL};
		if (!json_is_object(cl))
			rc = sv_tw_fail(w, "\"clipping\" must be an object");
		if (!rc)
			rc = sv_tw_only_keys(w, cl, ck, "\"clipping\"");
		if (!rc)
			rc = sv_tw_get_bool(w, cl, "enabled", &v[0]);
		for (int i = 1; i < 5 && !rc; i++)
			rc = sv_tw_get_int(w, cl, ck[i], INT32_MIN, INT32_MAX, &v[i], true);
		for (int i = 0; i < 5 && !rc; i++)
			rc = sv_tw_item_set(w, it, 7 + i, v[i]);
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
			rc = sv_tw_fail(w, "\"layers\" lists the group's layers and cannot change");
	}
	if (!rc) {
		bool named = g->version >= 3 && n >= 15;
		int32_t nv[3];
		int r = sv_tw_get_name(w, o, 3, nv, false, g->name);
		if (r < 0)
			rc = r;
		else if (r == 0 && !named)
			rc = sv_tw_fail(w, "a version %d group has no name", g->version);
		for (int i = 0; r == 0 && !rc && i < 3; i++)
			rc = sv_tw_item_set(w, it, 12 + i, nv[i]);
	}
	json_decref(o);
	return rc;
}

/* ---- a commit ----------------------------------------------------------- */

static int apply_one(struct twm_work *w, uint32_t node, const uint8_t *p, size_t len)
{
	const struct twm *m = w->m;
	uint64_t key = sv_node(w->c, node)->key;
	uint32_t i = INDEX(key);
	w->view = sv_node(w->c, node)->name;
	switch (KIND(key)) {
	case K_INFO:
	case K_SETTINGS:
		if (m->info_bad)
			return sv_tw_fail(w, "%s", m->info_bad);
		return KIND(key) == K_INFO ? apply_info(w, p, len) : apply_settings(w, p, len);
	case K_IMAGE:
		if (m->img[i].bad)
			return sv_tw_fail(w, "%s", m->img[i].bad);
		return apply_image(w, &m->img[i], p, len);
	case K_SOUND:
		if (m->snd[i].bad)
			return sv_tw_fail(w, "%s", m->snd[i].bad);
		return apply_sound(w, &m->snd[i], p, len);
	case K_GROUP:
		if (m->grp[i].bad)
			return sv_tw_fail(w, "%s", m->grp[i].bad);
		return apply_group(w, (int32_t)i, p, len);
	case K_LAYER: return sv_tw_apply_layer(w, (int32_t)i, p, len);
	case K_GRID: return sv_tw_apply_grid(w, (int32_t)(i >> 3), (int)(i & 7), p, len);
	case K_QUADS: case K_SOURCES: return sv_tw_apply_list(w, (int32_t)i, p, len);
	default: return sv_tw_fail(w, "this view cannot be written");
	}
}

/* What the loader checks across layers, on the map as it will be. */
static int cross_checks(struct twm_work *w)
{
	const struct twm *m = w->m;
	int32_t games = 0, game = -1;
	for (int32_t k = 0; k < m->nlay; k++) {
		const struct layer *l = &m->lay[k];
		if (l->bad || l->group < 0 || l->ltype != 2)
			continue;
		if (sv_tw_item_get(w, l->item, 6) & 1) {
			games++;
			game = k;
		}
	}
	if (games > 1)
		return sv_tw_fail(w, "the map would have a second game layer (DDNet refuses it)");
	if (!games && m->game >= 0)
		return sv_tw_fail(w, "the map would have no game layer (DDNet refuses it)");
	if (game < 0)
		return 0;
	uint64_t gt = (uint64_t)sv_tw_item_get(w, m->lay[game].item, 4) *
		      (uint64_t)sv_tw_item_get(w, m->lay[game].item, 5);
	for (int32_t k = 0; k < m->nlay; k++) {
		const struct layer *l = &m->lay[k];
		if (l->bad || l->group < 0 || l->ltype != 2 || l->kind == L_TILES || l->kind == L_GAME)
			continue;
		uint64_t t = (uint64_t)sv_tw_item_get(w, l->item, 4) * (uint64_t)sv_tw_item_get(w, l->item, 5);
		if (t < gt)
			return sv_tw_fail(w, "layer %s would be smaller than the game layer (%d x %d < %d x "
				    "%d; DDNet refuses it)", l->dname, sv_tw_item_get(w, l->item, 4),
				    sv_tw_item_get(w, l->item, 5), sv_tw_item_get(w, m->lay[game].item, 4),
				    sv_tw_item_get(w, m->lay[game].item, 5));
	}
	return 0;
}

/* The cross checks refuse what an edit breaks, not what the map broke
 * already (an edit elsewhere in a map DDNet refuses still goes in). */
static int final_checks(struct twm_work *w)
{
	int rc = cross_checks(w);
	if (!rc)
		return 0;
	struct sv_twm_out none;
	if (out_init(&none, w->d))
		return rc;
	struct sv_err e;
	struct twm_work before = {w->c, w->d, w->m, &none, &e, w->view};
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
	for (int32_t k = 0; k < m->nimg; k++) {
		const struct image *im = &m->img[k];
		if (ci(x, im->item) || cd(x, im->data) || cd(x, im->name_data)) {
			if (im->node != SV_NONE)
				sv_node_touch(c, im->node);
			sv_node_touch(c, m->images_node);
		}
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
	struct twm_work w = {c, d, d->map, &o, err, sv_node(c, node)->name};
	int rc;
	if (KIND(sv_node(c, node)->key) == K_ENV) {
		const uint8_t **ep = calloc((size_t)d->map->nenv + 1, sizeof *ep);
		size_t *el = calloc((size_t)d->map->nenv + 1, sizeof *el);
		if (!ep || !el) {
			rc = sv_err_set(err, -ENOMEM, "map: out of memory");
		} else {
			ep[INDEX(sv_node(c, node)->key)] = p ? p : (const uint8_t *)"";
			el[INDEX(sv_node(c, node)->key)] = len;
			rc = sv_tw_apply_envs(&w, ep, el);
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
	struct twm_work w = {c, d, m, o, err, ""};
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
			if (kind <= K_MDIR || (node->flags & SV_N_DIR) ||
			    (sv_node_state(c, n) & (SV_S_GONE | SV_S_TEMP | SV_S_NEW | SV_S_META)) ||
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
			rc = sv_tw_apply_envs(&w, ep, el);
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
	if (o->new_info) {
		sv_node_touch(c, m->info_node);
		sv_node_touch(c, m->settings_node);
	}
	free(ci_);
	free(cd_);
out:
	free(ep);
	free(el);
	if (rc)
		sv_twm_out_fini(o);
	return rc;
}
