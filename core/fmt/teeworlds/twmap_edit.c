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
	if (sv_twm_pack_name(s, v, n))
		return fail(w, "the name \"%s\" is %zu bytes; names here hold at most %d", s,
			    strlen(s), 4 * n - 1);
	return 0;
}

/* The info item as it will be written.  A map without one (older maps)
 * gets one at its first edit, as DDNet's editor writes it: version 1, no
 * strings, no settings (CMapItemInfoSettings); it goes after the items. */
static int32_t info_item(struct w *w)
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
static int32_t info_get(struct w *w, int k)
{
	if (w->m->info < 0 && !w->o->new_info)
		return -1;
	return item_get(w, info_item(w), k);
}

static int info_len(struct w *w)
{
	return w->m->info < 0 && !w->o->new_info ? 0 : item_len(w, info_item(w));
}

static int info_set(struct w *w, int k, int32_t v)
{
	int32_t it = info_item(w);
	return it < 0 ? nomem(w) : item_set(w, it, k, v);
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
		int32_t idx = info_get(w, 1 + f);
		char *old = NULL;
		struct sv_err e;
		if (idx != -1 && sv_twm_data_string(w->c, w->d, idx, &old, &e) == -ENOMEM) {
			rc = nomem(w);
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
		rc = data_put(w, shared ? -1 : idx, s, strlen(s) + 1, &added);
		if (!rc && shared)
			rc = info_set(w, 1 + f, added);
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
	int32_t idx = !rc && info_len(w) >= 6 ? info_get(w, 5) : -1;
	if (!rc && idx >= 0 && idx < w->d->num_data) {
		rc = data_put(w, idx, b.p, b.len, NULL);
	} else if (!rc && b.len) {
		int32_t added;
		rc = data_put(w, -1, b.p, b.len, &added);
		if (!rc)
			rc = info_set(w, 5, added);
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
	/* 16-bit samples without a gAMA or sRGB chunk are taken as sRGB (as
	 * editors write them and as the game scales them), not linear. */
	img.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
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
	size_t ts = (size_t)sv_twm_grids[g].size, tiles = (size_t)W * (size_t)H;
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
static int grid_put(struct w *w, const struct layer *l, int g, uint8_t *t, size_t tiles)
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

static int parse_grid(struct w *w, int g, int32_t W, int32_t H, const uint8_t *p, size_t len,
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
				int h = sv_hexval(p[s + k]);
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
		n = regrid(t, oW, oH, nW, nH, (size_t)sv_twm_grids[g].size);
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
	if (strcmp(kind, sv_twm_kind_names[l->kind])) {
		if (!strcmp(kind, "game") && l->kind == L_TILES)
			nk = L_GAME;
		else if (!strcmp(kind, "tiles") && l->kind == L_GAME)
			nk = L_TILES;
		else {
			rc = fail(w, "a %s layer cannot become \"%s\" (only tiles and game trade)",
				  sv_twm_kind_names[l->kind], kind);
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
		rc = fail(w, "a version %d %s layer has no name", l->tver, sv_twm_kind_names[l->kind]);
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
		if (strcmp(now, sv_twm_kind_titles[nk]))
			rc = fail(w, "DDNet names a %s layer \"%s\"", sv_twm_kind_names[nk], sv_twm_kind_titles[nk]);
	}
	if (!rc)
		rc = get_bool(w, o, "detail", &x);
	if (!rc && phys && x && (x != (item_get(w, it, 2) & 1) || kind_changed))
		rc = fail(w, "a %s layer cannot be a detail layer", sv_twm_kind_names[nk]);
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
		rc = fail(w, "a %s layer's colour is 255 255 255 255", sv_twm_kind_names[nk]);
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
				if (!strcmp(json_string_value(cv), sv_twm_curve_names[n]))
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
