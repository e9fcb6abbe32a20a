/*
 * sbworld.c - Starbound record views and their parsers (see sbworld.h).
 *
 * Invariants: a view is a pure function of the record's inflated value; a
 * parser refuses (-EINVAL, "line N: ...") anything the encoder could not
 * write back or the game would not load, and never changes a field the
 * view does not show.
 */
#include "sbworld.h"

#include "rd.h"
#include "sbon.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sv_sb_float(float f, char *buf, size_t size)
{
	if (isnan(f)) {
		snprintf(buf, size, "nan");
		return;
	}
	if (isinf(f)) {
		snprintf(buf, size, f > 0 ? "inf" : "-inf");
		return;
	}
	char t[40];
	sv_shortest(t, f, true);
	snprintf(buf, size, "%s", t);
}

/* ---- .tsv ------------------------------------------------------------------ */

static const char cols[] = "x\ty\tfg\tfg_hue\tfg_colour\tfg_mod\tfg_mod_hue\tbg\tbg_hue\t"
			   "bg_colour\tbg_mod\tbg_mod_hue\tliquid\tlevel\tpressure\tsource\t"
			   "collision\tdungeon\tbiome\tenv_biome\ttransition\troot";

/* Appends v in decimal and a tab (or end) at q; returns the end. */
static char *put_uint(char *q, uint32_t v, char end)
{
	char tmp[12];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*q++ = tmp[--n];
	*q++ = end;
	return q;
}

static char *put_float(char *q, float f)
{
	/* Most tiles hold no liquid: 0 and small whole numbers are quick. */
	if (f == 0 && !signbit(f)) {
		*q++ = '0';
	} else if (f > 0 && f < 1e5f && f == (float)(uint32_t)f) {
		/* Five digits or fewer: never longer than an exponent form. */
		q = put_uint(q, (uint32_t)f, 0) - 1;
	} else {
		char buf[24];
		sv_sb_float(f, buf, sizeof buf);
		size_t n = strlen(buf);
		memcpy(q, buf, n);
		q += n;
	}
	*q++ = '\t';
	return q;
}

int sv_sb_tsv(const struct sv_sb_sector *s, unsigned sx, unsigned sy, struct sv_buf *out)
{
	int rc = sv_buf_printf(out, "# %s\n# version %llu generation %llu\n", cols,
			       (unsigned long long)s->version, (unsigned long long)s->generation);
	/* A line is at most 22 fields of up to 11 characters and a root of
	 * two int32s. */
	if (rc || sv_buf_reserve(out, (size_t)SV_SB_TILES * 300))
		return -ENOMEM;
	char *q = (char *)out->p + out->len;
	for (int i = 0; i < SV_SB_TILES; i++) {
		const struct sv_sb_tile *t = &s->t[i];
		q = put_uint(q, sx * 32 + (unsigned)i % 32, '\t');
		q = put_uint(q, sy * 32 + (unsigned)i / 32, '\t');
		q = put_uint(q, t->fg.material, '\t');
		q = put_uint(q, t->fg.hue, '\t');
		q = put_uint(q, t->fg.colour, '\t');
		q = put_uint(q, t->fg.mod, '\t');
		q = put_uint(q, t->fg.mod_hue, '\t');
		q = put_uint(q, t->bg.material, '\t');
		q = put_uint(q, t->bg.hue, '\t');
		q = put_uint(q, t->bg.colour, '\t');
		q = put_uint(q, t->bg.mod, '\t');
		q = put_uint(q, t->bg.mod_hue, '\t');
		q = put_uint(q, t->liquid, '\t');
		q = put_float(q, t->level);
		q = put_float(q, t->pressure);
		q = put_uint(q, t->source, '\t');
		q = put_uint(q, t->collision, '\t');
		q = put_uint(q, t->dungeon, '\t');
		q = put_uint(q, t->biome, '\t');
		q = put_uint(q, t->env_biome, '\t');
		*q++ = s->version < 417 ? '-' : t->transition ? '1' : '0';
		*q++ = '\t';
		if (t->has_root)
			q += sprintf(q, "%d,%d", t->root_x, t->root_y);
		else
			*q++ = '-';
		*q++ = '\n';
	}
	out->len = (size_t)(q - (char *)out->p);
	return 0;
}

/* A line of text: [p, end) without its line end. */
struct line {
	const char *p, *end;
	unsigned no;
};

static bool next_line(const uint8_t **pp, const uint8_t *end, struct line *l)
{
	const uint8_t *p = *pp;
	if (p >= end)
		return false;
	const uint8_t *e = memchr(p, '\n', (size_t)(end - p));
	const uint8_t *stop = e ? e : end;
	*pp = e ? e + 1 : end;
	if (stop > p && stop[-1] == '\r')
		stop--;
	l->p = (const char *)p;
	l->end = (const char *)stop;
	l->no++;
	return true;
}

static int bad_line(struct sv_err *err, unsigned no, const char *what)
{
	return sv_err_set(err, -EINVAL, "line %u: %s", no, what);
}

/* An unsigned decimal field of at most max, ending at a tab or the end. */
static bool field_uint(const char **p, const char *end, unsigned long max, unsigned long *v)
{
	const char *q = *p;
	unsigned long x = 0;
	if (q >= end || *q < '0' || *q > '9')
		return false;
	while (q < end && *q >= '0' && *q <= '9') {
		x = x * 10 + (unsigned long)(*q++ - '0');
		if (x > max)
			return false;
	}
	if (q < end && *q != '\t')
		return false;
	*v = x;
	*p = q < end ? q + 1 : q;
	return true;
}

/* The text of one field (up to the next tab). */
static bool field_text(const char **p, const char *end, char *buf, size_t size)
{
	const char *q = *p;
	size_t n = 0;
	while (q + n < end && q[n] != '\t')
		n++;
	if (!n || n >= size)
		return false;
	memcpy(buf, q, n);
	buf[n] = 0;
	*p = q + n < end ? q + n + 1 : q + n;
	return true;
}

static bool parse_float(const char *s, float *f)
{
	char *e;
	*f = strtof(s, &e);
	return *s && !*e;
}

static const char *const names[] = {"fg", "fg_hue", "fg_colour", "fg_mod", "fg_mod_hue",
				    "bg", "bg_hue", "bg_colour", "bg_mod", "bg_mod_hue",
				    "liquid"};
static const unsigned long maxes[] = {65535, 255, 255, 65535, 255, 65535, 255, 255, 65535, 255,
				      255};

static int parse_tile(struct line *l, unsigned ex, unsigned ey, unsigned version,
		      struct sv_sb_tile *t, struct sv_err *err)
{
	const char *p = l->p, *end = l->end;
	unsigned long v[11], x, y;
	char msg[120];
	if (!field_uint(&p, end, 1u << 21, &x) || !field_uint(&p, end, 1u << 21, &y))
		return bad_line(err, l->no, "x and y must be the tile's coordinates");
	if (x != ex || y != ey) {
		snprintf(msg, sizeof msg, "tile %lu,%lu where %u,%u belongs (rows stay in stored "
			 "order)", x, y, ex, ey);
		return bad_line(err, l->no, msg);
	}
	for (int i = 0; i < 11; i++) {
		if (!field_uint(&p, end, maxes[i], &v[i])) {
			snprintf(msg, sizeof msg, "%s must be a whole number from 0 to %lu", names[i],
				 maxes[i]);
			return bad_line(err, l->no, msg);
		}
	}
	char f[40];
	float level, pressure;
	if (!field_text(&p, end, f, sizeof f) || !parse_float(f, &level))
		return bad_line(err, l->no, "level must be a number");
	if (!field_text(&p, end, f, sizeof f) || !parse_float(f, &pressure))
		return bad_line(err, l->no, "pressure must be a number");
	unsigned long source, coll, dungeon, biome, env;
	if (!field_uint(&p, end, 1, &source))
		return bad_line(err, l->no, "source must be 0 or 1");
	if (!field_uint(&p, end, 5, &coll))
		return bad_line(err, l->no, "collision must be 0 (null) to 5 (block)");
	if (!field_uint(&p, end, 65535, &dungeon))
		return bad_line(err, l->no, "dungeon must be a whole number from 0 to 65535");
	if (!field_uint(&p, end, 255, &biome) || !field_uint(&p, end, 255, &env))
		return bad_line(err, l->no, "biome and env_biome must be whole numbers from 0 to 255");
	if (!field_text(&p, end, f, sizeof f))
		return bad_line(err, l->no, "transition is missing");
	bool transition = false;
	if (version < 417) {
		if (strcmp(f, "-"))
			return bad_line(err, l->no, "transition must be - (the sector's version has "
					"none)");
	} else if (!strcmp(f, "0") || !strcmp(f, "1")) {
		transition = f[0] == '1';
	} else {
		return bad_line(err, l->no, "transition must be 0 or 1");
	}
	if (!field_text(&p, end, f, sizeof f))
		return bad_line(err, l->no, "root is missing");
	bool has_root = strcmp(f, "-") != 0;
	int rx = 0, ry = 0, used = 0;
	if (has_root) {
		long long a, b;
		if (sscanf(f, "%lld,%lld%n", &a, &b, &used) != 2 || f[used] || a < INT32_MIN ||
		    a > INT32_MAX || b < INT32_MIN || b > INT32_MAX)
			return bad_line(err, l->no, "root must be - or x,y");
		if (version < 418)
			return bad_line(err, l->no, "a root needs a sector of version 418");
		rx = (int)a;
		ry = (int)b;
	}
	if (p != end)
		return bad_line(err, l->no, "more than 22 fields");
	uint8_t ignored = t->ignored;
	memset(t, 0, sizeof *t);
	t->ignored = ignored;
	t->fg = (struct sv_sb_side){(uint16_t)v[0], (uint16_t)v[3], (uint8_t)v[1], (uint8_t)v[2],
				    (uint8_t)v[4]};
	t->bg = (struct sv_sb_side){(uint16_t)v[5], (uint16_t)v[8], (uint8_t)v[6], (uint8_t)v[7],
				    (uint8_t)v[9]};
	t->liquid = (uint8_t)v[10];
	t->level = level;
	t->pressure = pressure;
	t->source = source;
	t->collision = (uint8_t)coll;
	t->dungeon = (uint16_t)dungeon;
	t->biome = (uint8_t)biome;
	t->env_biome = (uint8_t)env;
	t->transition = transition;
	t->has_root = has_root;
	t->root_x = rx;
	t->root_y = ry;
	return 0;
}

int sv_sb_tsv_parse(const uint8_t *p, size_t n, unsigned sx, unsigned sy,
		    const struct sv_sb_sector *base, struct sv_sb_sector *out, struct sv_err *err)
{
	const uint8_t *end = p + n;
	struct line l = {0};
	bool have_version = false;
	int tile = 0;
	if (base)
		*out = *base;
	else
		memset(out, 0, sizeof *out);
	while (next_line(&p, end, &l)) {
		if (l.p < l.end && l.p[0] == '#') {
			unsigned long long v, g;
			int used = 0;
			if (sscanf(l.p, "# version %llu generation %llu%n", &v, &g, &used) == 2 &&
			    l.p + used == l.end) {
				if (base && v != base->version)
					return bad_line(err, l.no, "the version cannot change (savefs "
							"writes a sector at the version it was read)");
				if (v < 416 || v > 418)
					return bad_line(err, l.no, "the version must be 416, 417 or 418");
				if (g > 5)
					return bad_line(err, l.no, "the generation level must be 0 to 5");
				out->version = v;
				out->generation = g;
				have_version = true;
			}
			continue;
		}
		if (l.p == l.end && tile == SV_SB_TILES)
			continue;
		if (tile == SV_SB_TILES)
			return bad_line(err, l.no, "more than 1024 tiles");
		if (!have_version)
			return bad_line(err, l.no, "the \"# version V generation G\" line must come "
					"before the tiles");
		int rc = parse_tile(&l, sx * 32 + (unsigned)tile % 32, sy * 32 + (unsigned)tile / 32,
				   (unsigned)out->version, &out->t[tile], err);
		if (rc)
			return rc;
		tile++;
	}
	if (tile < SV_SB_TILES)
		return sv_err_set(err, -EINVAL, "%d tiles, not 1024", tile);
	return 0;
}

/* ---- .txt ------------------------------------------------------------------ */

static const char glyphs[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			     "!$%&()*+,-/:;<>?@[]^_{|}~";

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

int sv_sb_txt(const struct sv_sb_sector *s, unsigned sx, unsigned sy, struct sv_buf *out)
{
	uint16_t mats[2 * SV_SB_TILES];
	size_t nm = 0;
	for (int i = 0; i < SV_SB_TILES; i++) {
		mats[nm++] = s->t[i].fg.material;
		mats[nm++] = s->t[i].bg.material;
	}
	qsort(mats, nm, sizeof *mats, cmp_u16);
	size_t u = 0;
	for (size_t i = 0; i < nm; i++)
		if (mats[i] != 65535 && (!u || mats[u - 1] != mats[i]))
			mats[u++] = mats[i];
	bool wide = u > sizeof glyphs - 1;
	int rc = sv_buf_printf(out, "# sector %u,%u: tiles x %u..%u, y %u..%u; version %llu, "
			       "generation %llu\n# 32 foreground rows, then 32 background rows, "
			       "top row first; a cell is %s\n# materials: 65535 empty, 65534 not "
			       "generated, 65000 and up meta; edit the cells (and the legend)\n",
			       sx, sy, sx * 32, sx * 32 + 31, sy * 32, sy * 32 + 31,
			       (unsigned long long)s->version, (unsigned long long)s->generation,
			       wide ? "the material id as 4 hex digits, cells separated by a space"
				    : "one character, from the legend");
	if (!wide) {
		rc = rc ? rc : sv_buf_printf(out, "# . = 65535\n");
		for (size_t i = 0; !rc && i < u; i++)
			rc = sv_buf_printf(out, "# %c = %u\n", glyphs[i], mats[i]);
	}
	for (int side = 0; !rc && side < 2; side++) {
		rc = sv_buf_printf(out, "# %s\n", side ? "background" : "foreground");
		for (int y = 31; !rc && y >= 0; y--) {
			for (int x = 0; !rc && x < 32; x++) {
				const struct sv_sb_tile *t = &s->t[y * 32 + x];
				uint16_t m = side ? t->bg.material : t->fg.material;
				if (wide) {
					rc = sv_buf_printf(out, x ? " %04x" : "%04x", m);
					continue;
				}
				char c = '.';
				if (m != 65535) {
					uint16_t *at = bsearch(&m, mats, u, sizeof *mats, cmp_u16);
					c = glyphs[at - mats];
				}
				rc = sv_buf_add(out, &c, 1);
			}
			if (!rc)
				rc = sv_buf_add(out, "\n", 1);
		}
	}
	return rc;
}

int sv_sb_txt_parse(const uint8_t *p, size_t n, const struct sv_sb_sector *base,
		    struct sv_sb_sector *out, struct sv_err *err)
{
	const uint8_t *end = p + n;
	struct line l = {0};
	int32_t legend[256];
	for (int i = 0; i < 256; i++)
		legend[i] = -1;
	legend['.'] = 65535;
	*out = *base;
	int row = 0;
	char msg[120];
	while (next_line(&p, end, &l)) {
		size_t len = (size_t)(l.end - l.p);
		if (len && l.p[0] == '#') {
			unsigned long v;
			char c, tail;
			/* "# C = id" */
			if (len >= 7 && l.p[1] == ' ' && l.p[3] == ' ' && l.p[4] == '=' && l.p[5] == ' ') {
				char num[12];
				size_t k = len - 6;
				if (k >= sizeof num)
					return bad_line(err, l.no, "a legend's material id must be 0 to 65535");
				memcpy(num, l.p + 6, k);
				num[k] = 0;
				c = l.p[2];
				if (sscanf(num, "%lu%c", &v, &tail) != 1 || v > 65535)
					return bad_line(err, l.no, "a legend's material id must be 0 to 65535");
				if (c == '#' || c == ' ' || c == '\t')
					return bad_line(err, l.no, "that character cannot be a cell");
				legend[(uint8_t)c] = (int32_t)v;
			}
			continue;
		}
		if (!len && row == 64)
			continue;
		if (row == 64)
			return bad_line(err, l.no, "more than 64 rows (32 foreground, 32 background)");
		int y = 31 - row % 32;
		bool bg = row >= 32;
		for (int x = 0; x < 32; x++) {
			int32_t m;
			if (len == 32) {
				m = legend[(uint8_t)l.p[x]];
				if (m < 0) {
					snprintf(msg, sizeof msg, "column %d: '%c' is not in the legend", x + 1,
						 l.p[x]);
					return bad_line(err, l.no, msg);
				}
			} else if (len == 32 * 5 - 1) {
				const char *q = l.p + x * 5;
				int a = sv_hexval(q[0]), b = sv_hexval(q[1]), c2 = sv_hexval(q[2]),
				    d = sv_hexval(q[3]);
				if (a < 0 || b < 0 || c2 < 0 || d < 0 || (x < 31 && q[4] != ' '))
					return bad_line(err, l.no, "a wide cell is 4 hex digits, cells are "
							"separated by one space");
				m = a << 12 | b << 8 | c2 << 4 | d;
			} else {
				return bad_line(err, l.no, "a row is 32 cells");
			}
			struct sv_sb_side *s = bg ? &out->t[y * 32 + x].bg : &out->t[y * 32 + x].fg;
			s->material = (uint16_t)m;
		}
		row++;
	}
	if (row < 64)
		return sv_err_set(err, -EINVAL, "%d rows, not 64 (32 foreground, 32 background)", row);
	return 0;
}

/* ---- colours ----------------------------------------------------------------- */

enum { C_NULL, C_META, C_BOUNDARY, C_OBJECT, C_LIQUID = 4, C_FG = 8, C_BG = 128 };
#define NMAT 120

static struct sv_swatch swatches[SV_SB_NPAL];
static struct sv_palette palette = {SV_SB_NPAL, swatches};
static pthread_once_t palette_once = PTHREAD_ONCE_INIT;

static void hsv(float h, float s, float v, uint8_t *rgb)
{
	float hh = h / 60.0f;
	int k = (int)hh;
	float mod2 = (float)(k % 2) + (hh - (float)k), d = mod2 - 1;
	float c = v * s, x = c * (1 - (d < 0 ? -d : d)), m = v - c, r = 0, g = 0, b = 0;
	if (h < 60) { r = c; g = x; }
	else if (h < 120) { r = x; g = c; }
	else if (h < 180) { g = c; b = x; }
	else if (h < 240) { g = x; b = c; }
	else if (h < 300) { r = x; b = c; }
	else { r = c; b = x; }
	rgb[0] = (uint8_t)((r + m) * 255);
	rgb[1] = (uint8_t)((g + m) * 255);
	rgb[2] = (uint8_t)((b + m) * 255);
}

static void make_palette(void)
{
	static const uint8_t fixed[8][4] = {
		{32, 32, 32, 255}, {128, 128, 128, 255}, {255, 0, 255, 255}, {160, 160, 160, 255},
		{40, 90, 230, 200}, {240, 110, 20, 230}, {90, 200, 40, 200}, {220, 80, 200, 200},
	};
	for (int i = 0; i < 8; i++)
		memcpy(swatches[i].rgba, fixed[i], 4);
	for (int i = 0; i < NMAT; i++) {
		float h = (float)((i * 47) % 360);
		hsv(h, 0.55f, 0.9f, swatches[C_FG + i].rgba);
		swatches[C_FG + i].rgba[3] = 255;
		hsv(h, 0.45f, 0.45f, swatches[C_BG + i].rgba);
		swatches[C_BG + i].rgba[3] = 255;
	}
	for (int i = C_BG + NMAT; i < SV_SB_NPAL; i++)
		memcpy(swatches[i].rgba, fixed[0], 4);
}

const struct sv_palette *sv_sb_palette(void)
{
	pthread_once(&palette_once, make_palette);
	return &palette;
}

static int meta_colour(uint16_t m)
{
	if (m == 65534)
		return C_NULL;
	if (m == 65526)
		return C_BOUNDARY;
	if (m == 65500 || m == 65501)
		return C_OBJECT;
	return C_META;
}

uint16_t sv_sb_pixel(const struct sv_sb_tile *t)
{
	if (t->fg.material < 65000)
		return (uint16_t)(C_FG + (t->fg.material * 2654435761u >> 8) % NMAT);
	if (t->fg.material != 65535)
		return (uint16_t)meta_colour(t->fg.material);
	if (t->liquid && t->level > 0)
		return (uint16_t)(C_LIQUID + (t->liquid - 1) % 4);
	if (t->bg.material < 65000)
		return (uint16_t)(C_BG + (t->bg.material * 2654435761u >> 8) % NMAT);
	if (t->bg.material != 65535)
		return (uint16_t)meta_colour(t->bg.material);
	return SV_PX_EMPTY;
}

int sv_sb_png(const struct sv_sb_sector *s, struct sv_buf *out)
{
	uint16_t px[SV_SB_TILES];
	for (int y = 0; y < 32; y++)
		for (int x = 0; x < 32; x++)
			px[(31 - y) * 32 + x] = sv_sb_pixel(&s->t[y * 32 + x]);
	return sv_png_encode(32, 32, px, sv_sb_palette(), out);
}

/* ---- JSON records -------------------------------------------------------------- */

static int trailer_read(struct sv_rd *r, json_t *o, struct sv_err *err)
{
	size_t at = r->off;
	uint32_t v = sv_rd_u32be(r);
	if (!sv_rd_ok(r) || v != 1)
		return sv_err_set(err, -EBADMSG, "byte %zu: a trailer that is not sub-versioning 1",
				  at);
	json_t *m;
	int rc = sv_sbon_read_map(r, &m, err);
	if (rc)
		return rc;
	json_t *sub = json_object_get(m, "subVersions");
	if (json_object_size(m) == 1 && json_is_object(sub))
		rc = json_object_set(o, "subversions", sub);
	else
		rc = json_object_set(o, "trailer", m);
	json_decref(m);
	return rc ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
}

static bool has_trailer(const json_t *o)
{
	return json_object_get(o, "subversions") || json_object_get(o, "trailer");
}

static int trailer_write(const json_t *o, struct sv_buf *b, struct sv_err *err)
{
	const json_t *sub = json_object_get(o, "subversions"), *t = json_object_get(o, "trailer");
	if (sub && t)
		return sv_err_set(err, -EINVAL, "\"subversions\" and \"trailer\" cannot both be there");
	if (sub && !json_is_object(sub))
		return sv_err_set(err, -EINVAL, "\"subversions\" must be an object");
	if (t && !json_is_object(t))
		return sv_err_set(err, -EINVAL, "\"trailer\" must be an object");
	const uint8_t one[4] = {0, 0, 0, 1};
	if (sv_buf_add(b, one, 4))
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (t)
		return sv_sbon_write_map(b, t, err);
	json_t *m = json_pack("{sO}", "subVersions", sub ? sub : json_object());
	if (!m)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = sv_sbon_write_map(b, m, err);
	json_decref(m);
	return rc;
}

/* Only these keys, besides id, version and content, may be there. */
static int check_keys(const json_t *o, const char *const *extra, struct sv_err *err)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v) {
		bool ok = !strcmp(k, "id") || !strcmp(k, "version") || !strcmp(k, "content") ||
			  !strcmp(k, "subversions") || !strcmp(k, "trailer");
		for (int i = 0; extra && extra[i]; i++)
			ok |= !strcmp(k, extra[i]);
		if (!ok)
			return sv_err_set(err, -EINVAL, "\"%s\" is not a field of a versioned value "
					  "(id, version, content, subversions)", k);
	}
	return 0;
}

static int at_end(struct sv_rd *r, const char *what, struct sv_err *err)
{
	if (sv_rd_left(r))
		return sv_err_set(err, -EBADMSG, "byte %zu: %zu bytes after the %s", r->off,
				  sv_rd_left(r), what);
	return 0;
}

int sv_sb_entities_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	uint64_t cnt;
	int rc = sv_vlq_read(&r, &cnt, err);
	if (!rc && cnt > sv_rd_left(&r))
		rc = sv_err_set(err, -EBADMSG, "byte 0: %llu entities in %zu bytes",
				(unsigned long long)cnt, n);
	json_t *a = rc ? NULL : json_array();
	if (!rc && !a)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t i = 0; !rc && i < cnt; i++) {
		json_t *e;
		rc = sv_vjson_read(&r, &e, err);
		if (!rc && json_array_append_new(a, e))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
	}
	for (uint64_t i = 0; !rc && i < cnt && sv_rd_left(&r); i++)
		rc = trailer_read(&r, json_array_get(a, (size_t)i), err);
	if (!rc)
		rc = at_end(&r, "entities", err);
	if (rc) {
		json_decref(a);
		return rc;
	}
	*out = a;
	return 0;
}

int sv_sb_entities_write(const json_t *a, struct sv_buf *out, struct sv_err *err)
{
	if (!json_is_array(a))
		return sv_err_set(err, -EINVAL, "an entity sector is a JSON array of "
				  "{\"id\", \"version\", \"content\"}");
	size_t i;
	json_t *e;
	bool trail = false;
	int rc = sv_put_vlq(out, json_array_size(a)) ? -ENOMEM : 0;
	json_array_foreach((json_t *)a, i, e) {
		if (rc)
			break;
		struct sv_err e2;
		rc = check_keys(e, NULL, &e2);
		if (!rc)
			rc = sv_vjson_write(out, e, &e2);
		if (rc)
			return sv_err_set(err, rc, "entity %zu: %s", i, e2.msg);
		trail |= has_trailer(e);
	}
	/* OpenStarbound writes a trailer after every entity, or none. */
	json_array_foreach((json_t *)a, i, e) {
		if (rc || !trail)
			break;
		rc = trailer_write(e, out, err);
	}
	return rc == -ENOMEM ? sv_err_set(err, rc, "out of memory") : rc;
}

int sv_sb_metadata_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	uint32_t w = sv_rd_u32be(&r), h = sv_rd_u32be(&r);
	if (!sv_rd_ok(&r))
		return sv_err_set(err, -EBADMSG, "byte 0: the world's size runs past the end");
	json_t *v;
	int rc = sv_vjson_read(&r, &v, err);
	if (rc)
		return rc;
	json_t *o = json_pack("{sIsI}", "width", (json_int_t)w, "height", (json_int_t)h);
	if (!o || json_object_update(o, v)) {
		json_decref(o);
		json_decref(v);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	json_decref(v);
	if (sv_rd_left(&r))
		rc = trailer_read(&r, o, err);
	if (!rc)
		rc = at_end(&r, "metadata", err);
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

static const char *const size_keys[] = {"width", "height", NULL};

int sv_sb_metadata_write(const json_t *o, struct sv_buf *out, struct sv_err *err)
{
	const json_t *w = json_object_get(o, "width"), *h = json_object_get(o, "height");
	if (!json_is_object(o) || !json_is_integer(w) || !json_is_integer(h) ||
	    json_integer_value(w) < 0 || json_integer_value(w) > 0xffffffffll ||
	    json_integer_value(h) < 0 || json_integer_value(h) > 0xffffffffll)
		return sv_err_set(err, -EINVAL, "world metadata needs \"width\" and \"height\" "
				  "(whole numbers from 0 to 4294967295)");
	int rc = check_keys(o, size_keys, err);
	if (rc)
		return rc;
	uint8_t b[8];
	uint32_t x = (uint32_t)json_integer_value(w), y = (uint32_t)json_integer_value(h);
	for (int i = 0; i < 4; i++) {
		b[i] = (uint8_t)(x >> (24 - 8 * i));
		b[4 + i] = (uint8_t)(y >> (24 - 8 * i));
	}
	if (sv_buf_add(out, b, 8))
		return sv_err_set(err, -ENOMEM, "out of memory");
	rc = sv_vjson_write(out, o, err);
	if (!rc && has_trailer(o))
		rc = trailer_write(o, out, err);
	return rc;
}

int sv_sb_vdoc_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	json_t *o;
	int rc = sv_vjson_read(&r, &o, err);
	if (rc)
		return rc;
	if (sv_rd_left(&r))
		rc = trailer_read(&r, o, err);
	if (!rc)
		rc = at_end(&r, "value", err);
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

int sv_sb_vdoc_write(const json_t *o, struct sv_buf *out, struct sv_err *err)
{
	int rc = check_keys(o, NULL, err);
	if (!rc)
		rc = sv_vjson_write(out, o, err);
	if (!rc && has_trailer(o))
		rc = trailer_write(o, out, err);
	return rc;
}

/* ---- the unique-entity index ------------------------------------------------- */

/* A stored float as JSON: a number, or, where it is not finite (JSON has
 * no NaN: a crafted or damaged index), {"$float": "<8 hex digits>"}, so
 * that it is shown, and written back, bit for bit. */
static json_t *f32_json(const uint8_t *p)
{
	float f = sv_get_f32be(p);
	if (isfinite(f))
		return json_real((double)f);
	char bits[9];
	snprintf(bits, sizeof bits, "%02x%02x%02x%02x", p[0], p[1], p[2], p[3]);
	return json_pack("{ss}", "$float", bits);
}

/* The bits of a float shown by f32_json; false if v is neither form. */
static bool json_f32(const json_t *v, uint32_t *bits)
{
	if (json_is_number(v)) {
		float f = (float)json_number_value(v);
		memcpy(bits, &f, sizeof f);
		return true;
	}
	const char *h = json_string_value(json_object_get(v, "$float"));
	if (!h || json_object_size(v) != 1 || strlen(h) != 8)
		return false;
	uint32_t u = 0;
	for (int i = 0; i < 8; i++) {
		int d = sv_hexval(h[i]);
		if (d < 0)
			return false;
		u = u << 4 | (uint32_t)d;
	}
	*bits = u;
	return true;
}

int sv_sb_ubucket_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	uint64_t cnt;
	int rc = sv_vlq_read(&r, &cnt, err);
	json_t *o = rc ? NULL : json_object();
	if (!rc && !o)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t i = 0; !rc && i < cnt; i++) {
		json_t *id;
		rc = sv_sbon_read_string(&r, &id, err);
		if (rc)
			break;
		const uint8_t *q = sv_rd_bytes(&r, 12);
		if (!q) {
			json_decref(id);
			rc = sv_err_set(err, -EBADMSG, "byte %zu: a unique entry runs past the end",
					r.fail_off);
			break;
		}
		json_t *e = json_pack("{s[ii]s[oo]}", "sector", (int)sv_get_be(q, 2), (int)sv_get_be(q + 2, 2),
				      "position", f32_json(q + 4), f32_json(q + 8));
		if (!e || json_object_set_new(o, json_string_value(id), e))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		json_decref(id);
	}
	if (!rc)
		rc = at_end(&r, "unique entries", err);
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

int sv_sb_ubucket_write(const json_t *o, struct sv_buf *out, struct sv_err *err)
{
	const char *k;
	json_t *e;
	int rc = sv_put_vlq(out, json_object_size(o));
	json_object_foreach((json_t *)o, k, e) {
		if (rc)
			break;
		json_int_t sx, sy;
		json_t *x, *y;
		uint32_t bx, by;
		if (json_unpack(e, "{s[II]s[oo]}", "sector", &sx, &sy, "position", &x, &y) ||
		    sx < 0 || sx > 65535 || sy < 0 || sy > 65535 || !json_f32(x, &bx) ||
		    !json_f32(y, &by))
			return sv_err_set(err, -EINVAL, "unique %s: a bad index entry", k);
		rc = sv_sbon_write_string(out, k, strlen(k));
		uint8_t q[12] = {(uint8_t)(sx >> 8), (uint8_t)sx, (uint8_t)(sy >> 8), (uint8_t)sy,
				 (uint8_t)(bx >> 24), (uint8_t)(bx >> 16), (uint8_t)(bx >> 8),
				 (uint8_t)bx, (uint8_t)(by >> 24), (uint8_t)(by >> 16),
				 (uint8_t)(by >> 8), (uint8_t)by};
		if (!rc)
			rc = sv_buf_add(out, q, 12);
	}
	return rc ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
}

int sv_sb_usector_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	uint64_t cnt;
	int rc = sv_vlq_read(&r, &cnt, err);
	json_t *a = rc ? NULL : json_array();
	if (!rc && !a)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t i = 0; !rc && i < cnt; i++) {
		json_t *id;
		rc = sv_sbon_read_string(&r, &id, err);
		if (!rc && json_array_append_new(a, id))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
	}
	if (!rc)
		rc = at_end(&r, "unique ids", err);
	if (rc) {
		json_decref(a);
		return rc;
	}
	*out = a;
	return 0;
}

int sv_sb_usector_write(const json_t *a, struct sv_buf *out, struct sv_err *err)
{
	size_t i;
	json_t *s;
	int rc = sv_put_vlq(out, json_array_size(a));
	json_array_foreach((json_t *)a, i, s) {
		if (!rc)
			rc = sv_sbon_write_string(out, json_string_value(s), json_string_length(s));
	}
	return rc ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
}

static bool pair(const json_t *a, float pos[2])
{
	if (!json_is_array(a) || json_array_size(a) != 2 || !json_is_number(json_array_get(a, 0)) ||
	    !json_is_number(json_array_get(a, 1)))
		return false;
	pos[0] = (float)json_number_value(json_array_get(a, 0));
	pos[1] = (float)json_number_value(json_array_get(a, 1));
	return true;
}

bool sv_sb_entity_position(const json_t *content, float pos[2])
{
	if (!json_is_object(content))
		return false;
	if (pair(json_object_get(content, "position"), pos) ||
	    pair(json_object_get(content, "tilePosition"), pos))
		return true;
	const json_t *mc = json_object_get(content, "movementController");
	return mc && pair(json_object_get(mc, "position"), pos);
}
