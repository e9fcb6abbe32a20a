/*
 * mapgen.c - Teeworlds/DDNet maps for the tests, the benchmark and the
 * fuzz targets, written with savefs's own datafile writer (mkdatafile map
 * describes what they hold).
 */
#include "mapgen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;

uint64_t mapgen_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

void mapgen_seed(uint64_t seed)
{
	rng ^= seed * 0x9e3779b97f4a7c15ull;
}

/* Image-like bytes: RGBA pixels on a gradient with noise in the low bits. */
void mapgen_fill_image(uint8_t *p, size_t n)
{
	uint64_t r = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 8 == 0)
			r = mapgen_rand();
		size_t px = i / 4;
		uint8_t base = (uint8_t)(px * (1 + i % 4) / 7);
		p[i] = i % 4 == 3 ? 255 : (uint8_t)(base + ((r >> (8 * (i % 8))) & 7));
	}
}


struct mb {
	struct sv_df_witem items[512];
	size_t ni;
	struct sv_df_wdata data[512];
	size_t nd;
	int32_t *arena;
	size_t used;
	uint16_t next_id[0x10000];
};

static void add_item(struct mb *b, uint16_t type, const int32_t *v, size_t n)
{
	int32_t *p = b->arena + b->used;
	memcpy(p, v, n * 4);
	b->used += n;
	b->items[b->ni++] = (struct sv_df_witem){type, b->next_id[type]++, (uint8_t *)p,
						 (uint32_t)(n * 4)};
}

/* Takes ownership of p (malloc'd). */
static int32_t add_data(struct mb *b, void *p, size_t n)
{
	b->data[b->nd].raw = p;
	b->data[b->nd].raw_len = (uint32_t)n;
	return (int32_t)b->nd++;
}

/* A data item holding a copy of p[0..n). */
static int32_t add_copy(struct mb *b, const void *p, size_t n)
{
	void *c = malloc(n);
	memcpy(c, p, n);
	return add_data(b, c, n);
}

static int32_t add_str(struct mb *b, const char *s)
{
	return add_data(b, strdup(s), strlen(s) + 1);
}

static void pack(const char *s, int32_t *v, int n)
{
	size_t len = strlen(s);
	for (int i = 0; i < n; i++) {
		uint32_t x = 0;
		for (int k = 0; k < 4; k++) {
			size_t at = (size_t)4 * i + k;
			uint8_t ch = at < len && at < (size_t)4 * n - 1 ? (uint8_t)s[at] : 0;
			x = x << 8 | (uint8_t)(ch + 128);
		}
		v[i] = (int32_t)x;
	}
}

/* A quads (type 3) or sounds (10; 9 the old kind) layer item: version,
 * count, the list (copied into a data item), its image or sound, name. */
static void list_layer(struct mb *b, int type, int version, int count, const void *list,
		       size_t n, int ref, const char *name)
{
	int32_t v[10] = {0, type, 0, version, count, add_copy(b, list, n), ref};
	pack(name, &v[7], 3);
	add_item(b, 5, v, 10);
}

static uint8_t *tiles_game(int w, int h)
{
	uint8_t *t = calloc((size_t)w * h, 4);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			uint8_t *c = t + 4 * ((size_t)y * w + x);
			uint64_t r = mapgen_rand();
			if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
				c[0] = 1;
			else if (y == h - 2)
				c[0] = (r & 7) == 0 ? 9 : (r & 7) == 1 ? 2 : 1;
			else if ((r & 31) == 0)
				c[0] = (uint8_t)((r >> 8) % 4 == 0 ? 3 : (r >> 8) % 4 == 1 ? 33
						  : (r >> 8) % 4 == 2 ? 34 : 192);
		}
	return t;
}

static uint8_t *tiles_deco(int w, int h)
{
	uint8_t *t = calloc((size_t)w * h, 4);
	for (size_t i = 0; i < (size_t)w * h;) {
		uint64_t r = mapgen_rand();
		size_t run = 1 + (r & 15);
		uint8_t idx = (r >> 8) & 1 ? 0 : (uint8_t)(r >> 16);
		uint8_t fl = idx ? (uint8_t)((r >> 24) & 15) : 0;
		for (size_t k = 0; k < run && i < (size_t)w * h; k++, i++) {
			t[4 * i] = idx;
			t[4 * i + 1] = fl;
		}
	}
	return t;
}

/* Physics bytes: a few non-zero tiles of `size` bytes. */
static uint8_t *tiles_phys(int w, int h, int size)
{
	uint8_t *t = calloc((size_t)w * h, (size_t)size);
	for (size_t i = 0; i < (size_t)w * h; i++) {
		uint64_t r = mapgen_rand();
		if (r % 9)
			continue;
		uint8_t *c = t + i * (size_t)size;
		for (int k = 0; k < size; k++)
			c[k] = (uint8_t)(r >> (8 * k + 8));
		if (size == 6)
			c[3] = 0; /* speedup padding */
	}
	return t;
}

/* Teeworlds 0.7 runs: each stored tile stands for skip + 1. */
static uint8_t *runs(const uint8_t *t, size_t n, size_t *out)
{
	uint8_t *r = malloc(n * 4 + 4);
	size_t k = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && j - i < 256 && t[4 * j] == t[4 * i] && t[4 * j + 1] == t[4 * i + 1])
			j++;
		r[4 * k] = t[4 * i];
		r[4 * k + 1] = t[4 * i + 1];
		r[4 * k + 2] = (uint8_t)(j - i - 1);
		r[4 * k + 3] = 0;
		k++;
		i = j;
	}
	*out = k * 4;
	return r;
}


/* A tile layer item: kind 0 tiles, else the physics flag. */
static void tile_layer(struct mb *b, int fl, int w, int h, int flags, int detail, const char *name,
		       int image, int cenv, int32_t data, const int32_t phys[5], int legacy_junk)
{
	int32_t v[23];
	int n;
	v[0] = 0, v[1] = 2, v[2] = detail;
	v[3] = fl == MAPGEN_TW07 ? 4 : fl == MAPGEN_L17 ? 2 : 3;
	v[4] = w, v[5] = h, v[6] = flags;
	bool physl = flags != 0;
	v[7] = v[8] = v[9] = 255, v[10] = physl ? 255 : 200;
	v[11] = cenv, v[12] = cenv >= 0 ? 250 : 0, v[13] = image, v[14] = data;
	if (fl == MAPGEN_L17) {
		/* DDRace's v2: tele, speedup right after data; junk 0/1 on others. */
		v[15] = phys ? phys[0] : legacy_junk;
		v[16] = phys ? phys[1] : !legacy_junk;
		n = 17;
	} else {
		pack(name, &v[15], 3);
		n = 18;
		if (fl == MAPGEN_DDNET || fl == MAPGEN_L22) {
			for (int i = 0; i < 5; i++)
				v[18 + i] = phys ? phys[i] : fl == MAPGEN_L22 ? 1000 + legacy_junk + i : -1;
			n = fl == MAPGEN_L22 ? 22 : 23;
		}
	}
	add_item(b, 5, v, (size_t)n);
}

int mapgen_write(int fd, const struct mapgen_opts *o, struct sv_err *err)
{
	int fl = o->flavour, W = o->w, H = o->h, nbig = o->images, bigsz = o->image_size;
	bool settings = o->settings;
	struct sv_df_spec spec = {.magic = "DATA", .version = o->version, .crude_size = o->crude,
				  .level = -1};
	if (W < 2 || H < 2 || W > 20000 || H > 20000 || nbig < 0 || nbig > 400 || bigsz < 1 ||
	    bigsz > 8192)
		return sv_err_set(err, -EINVAL, "mapgen: bad sizes");
	struct mb *b = calloc(1, sizeof *b);
	if (!b || !(b->arena = calloc(1 << 16, sizeof *b->arena))) {
		free(b);
		return sv_err_set(err, -ENOMEM, "mapgen: out of memory");
	}
	int32_t v[64];
	bool ddnet = fl == MAPGEN_DDNET;
	/* version, info */
	v[0] = 1;
	add_item(b, 0, v, 1);
	v[0] = 1, v[1] = add_str(b, "savefs"), v[2] = add_str(b, "1.2"),
	v[3] = add_str(b, "generated by mkdatafile"), v[4] = add_str(b, "CC0");
	if (settings) {
		static const char cmds[] = "sv_gravity 0.5\0tune_zone 1 gravity 2\0"
					   "tune_zone_enter 1 \"low gravity\"";
		v[5] = add_copy(b, cmds, sizeof cmds);
	}
	if (!o->no_info)
		add_item(b, 1, v, settings ? 6 : 5);
	/* images: embedded v1 (v2 in 0.7), external, embedded v2, big ones */
	int iv = fl == MAPGEN_TW07 ? 2 : 1;
	for (int k = 0; k < 3 + nbig; k++) {
		int w = k < 3 ? (o->small ? 8 : 64) : bigsz, h = k < 3 ? (o->small ? 6 : 48) : bigsz;
		bool ext = k == 1;
		char name[32];
		snprintf(name, sizeof name, k == 0 ? "deco" : k == 1 ? "grass_main" : k == 2 ? "light"
			 : "big%02d", k - 3);
		v[0] = k == 2 ? 2 : iv, v[1] = w, v[2] = h, v[3] = ext, v[4] = add_str(b, name);
		if (ext) {
			v[5] = -1;
		} else {
			size_t n = (size_t)w * h * 4;
			uint8_t *px = malloc(n);
			mapgen_fill_image(px, n);
			v[5] = add_data(b, px, n);
		}
		v[6] = 1;
		add_item(b, 2, v, v[0] >= 2 ? 7 : 6);
	}
	/* a sound: Opus in Ogg (its first page only matters here) */
	if (ddnet) {
		static const uint8_t ogg[] = "OggS\0\2\0\0\0\0\0\0\0\0\x11\x22\x33\x44\0\0\0\0"
					     "\0\0\0\0\1\x13OpusHead\1\1\x38\1\x80\xbb\0\0\0\0\0";
		v[0] = 1, v[1] = 0, v[2] = add_str(b, "wind"), v[3] = add_copy(b, ogg, sizeof ogg);
		v[4] = (int32_t)sizeof ogg;
		add_item(b, 7, v, 5);
	}
	/* envelopes and their points */
	int pi = fl == MAPGEN_TW07 ? 22 : 6;
	int32_t pts[8 * 22] = {0}, bez[8 * 16] = {0};
	int np = 0;
	struct { int ver, ch, n, sync; const char *name; } envs[3] = {
		{fl == MAPGEN_TW07 ? 3 : 2, 3, 3, 1, "rotate"},
		{fl == MAPGEN_TW07 ? 3 : 1, 4, 2, 0, ""},
		{fl == MAPGEN_TW07 ? 3 : 2, 1, 3, 0, "volume"},
	};
	for (int e = 0; e < 3; e++) {
		v[0] = envs[e].ver, v[1] = envs[e].ch, v[2] = np, v[3] = envs[e].n;
		pack(envs[e].name, &v[4], 8);
		if (e == 1 && fl != MAPGEN_TW07)
			v[4] = -1; /* an old map's unnamed envelope */
		v[12] = envs[e].sync;
		add_item(b, 3, v, envs[e].ver >= 2 ? 13 : 12);
		for (int k = 0; k < envs[e].n; k++, np++) {
			int32_t *q = &pts[np * pi];
			q[0] = k * 1500, q[1] = e == 2 && k == 1 ? 5 : k % 5;
			for (int ch = 0; ch < 4; ch++)
				q[2 + ch] = ch < envs[e].ch ? (int32_t)((mapgen_rand() % 4096) - 1024) : 0;
			int32_t *t = fl == MAPGEN_TW07 ? q + 6 : &bez[np * 16];
			if (q[1] == 5 || fl == MAPGEN_TW07)
				for (int f = 0; f < 16; f++)
					t[f] = f % 8 < 4 ? (f < 8 ? -100 : 100) : (int32_t)(mapgen_rand() % 2048);
		}
	}
	add_item(b, 6, pts, (size_t)np * pi);
	/* groups and layers */
	int nl = 0;
	int32_t zero5[5] = {-1, -1, -1, -1, -1};
	/* group 0: background (v1 in legacy maps), a quads layer, sounds */
	int gstart = nl;
	{
		int32_t q[2 * 38];
		memset(q, 0, sizeof q);
		for (int k = 0; k < 2; k++) {
			int32_t *x = &q[38 * k];
			int32_t cx = 1024 * (100 + 300 * k), cy = 1024 * 80;
			int32_t c4[4][2] = {{-1, -1}, {1, -1}, {-1, 1}, {1, 1}};
			for (int c = 0; c < 4; c++) {
				x[2 * c] = cx + c4[c][0] * 1024 * 64;
				x[2 * c + 1] = cy + c4[c][1] * 1024 * 48;
				x[10 + 4 * c] = 255, x[11 + 4 * c] = 200, x[12 + 4 * c] = 100,
				x[13 + 4 * c] = 255;
				x[26 + 2 * c] = c % 2 ? 1024 : 0, x[27 + 2 * c] = c / 2 ? 1024 : 0;
			}
			x[8] = cx, x[9] = cy + 1;
			x[34] = k ? -1 : 0, x[35] = 0, x[36] = k ? 1 : -1, x[37] = 10 * k;
		}
		list_layer(b, 3, 2, 2, q, sizeof q, 2, "Sky");
		nl++;
		if (ddnet) {
			int32_t s[2 * 13] = {0};
			for (int k = 0; k < 2; k++) {
				int32_t *x = &s[13 * k];
				x[0] = 1024 * (200 + 50 * k), x[1] = 1024 * 300, x[2] = 1, x[3] = k,
				x[4] = 2 * k, x[5] = 80, x[6] = -1, x[7] = 0, x[8] = k ? 2 : -1, x[9] = 0,
				x[10] = k, x[11] = 1024 * 500, x[12] = k ? 0 : 1024 * 300;
			}
			list_layer(b, 10, 2, 2, s, sizeof s, 0, "Wind");
			nl++;
			int32_t old9[9] = {1024 * 40, 1024 * 40, 1, 0, 100, -1, 0, -1, 0};
			list_layer(b, 9, 1, 1, old9, sizeof old9, 0, "Old");
			nl++;
		}
	}
	int32_t gv[15] = {fl == MAPGEN_L17 ? 1 : 3, 0, 0, 30, 30, gstart, nl - gstart, 0, 0, 0, 0, 0};
	pack("Background", &gv[12], 3);
	add_item(b, 4, gv, fl == MAPGEN_L17 ? 7 : 15);
	/* group 1: the game group */
	gstart = nl;
	size_t tiles = (size_t)W * H;
	struct { int flags; const char *name; int size; } phys[5] = {
		{2, "Tele", 2}, {4, "Speedup", 6}, {8, "Front", 4}, {16, "Switch", 4}, {32, "Tune", 2}};
	int game_layers[3][3];
	(void)game_layers;
	for (int k = 0; k < (ddnet ? 8 : fl == MAPGEN_L17 ? 4 : 3); k++) {
		/* 0 deco (below), 1 game, 2 detail deco, 3 (legacy17) tele, 3..7 physics */
		if (k == 1) {
			uint8_t *t = tiles_game(W, H);
			size_t n = tiles * 4;
			if (fl == MAPGEN_TW07) {
				uint8_t *r = runs(t, tiles, &n);
				free(t);
				t = r;
			}
			int32_t d = add_data(b, t, n);
			tile_layer(b, fl, W, H, 1, 0, "Game", -1, -1, d, fl == MAPGEN_L17 ? NULL
				   : fl == MAPGEN_L22 ? (int32_t[5]){56419048, 7, 8, 9, 10} : NULL, 0);
			if (fl == MAPGEN_L22) {
				/* real maps carry junk in a game layer's unused indices */
			}
		} else if (k == 0 || k == 2) {
			uint8_t *t = tiles_deco(W, H);
			size_t n = tiles * 4;
			if (fl == MAPGEN_TW07) {
				uint8_t *r = runs(t, tiles, &n);
				free(t);
				t = r;
			}
			int32_t d = add_data(b, t, n);
			tile_layer(b, fl, W, H, 0, k == 2, k ? "Detail" : "Deco", 0, k ? -1 : 1, d,
				   NULL, k);
		} else if (fl == MAPGEN_L17) {
			/* A DDRace v2 tele layer: data is a zeroed tile array. */
			int32_t d = add_data(b, calloc(tiles, 4), tiles * 4);
			int32_t pd = add_data(b, tiles_phys(W, H, 2), tiles * 2);
			tile_layer(b, fl, W, H, 2, 0, "Tele", -1, -1, d, (int32_t[5]){pd, -1}, 0);
		} else {
			int p = k - 3;
			int32_t d = add_data(b, calloc(tiles, 4), tiles * 4);
			int32_t pd = add_data(b, p == 2 ? tiles_deco(W, H) : tiles_phys(W, H, phys[p].size),
					      tiles * (size_t)phys[p].size);
			int32_t pv[5];
			memcpy(pv, zero5, sizeof pv);
			pv[p] = pd;
			tile_layer(b, fl, W, H, phys[p].flags, 0, phys[p].name, -1, -1, d, pv, 0);
		}
		nl++;
	}
	int32_t g1[15] = {fl == MAPGEN_L17 ? 2 : 3, 0, 0, 100, 100, gstart, nl - gstart, 1, -10, -20,
			  800, 600};
	pack("Game", &g1[12], 3);
	add_item(b, 4, g1, fl == MAPGEN_L17 ? 12 : 15);
	/* DDNet's bezier tangents and automapper settings (UUID types) */
	if (ddnet) {
		static const uint8_t bz[16] = {0x3a, 0xb4, 0xf8, 0x4d, 0xd9, 0xcc, 0x3c, 0x78,
					       0xb5, 0x85, 0x0d, 0x6c, 0xcd, 0xb2, 0xe2, 0x5c};
		int32_t u[4];
		for (int k = 0; k < 16; k += 4)
			u[k / 4] = (int32_t)((uint32_t)bz[k] << 24 | (uint32_t)bz[k + 1] << 16 |
					     (uint32_t)bz[k + 2] << 8 | bz[k + 3]);
		b->next_id[0xFFFF] = 0x8000;
		add_item(b, 0xFFFF, u, 4);
		add_item(b, 0x8000, bez, (size_t)np * 16);
		/* Automapper settings, one per tile layer, as the editor keeps them. */
		static const uint8_t am[16] = {0x3e, 0x1b, 0x27, 0x16, 0x17, 0x8c, 0x39, 0x78,
					       0x9b, 0xd9, 0xb1, 0x1a, 0xe0, 0x41, 0x0d, 0xd8};
		for (int k = 0; k < 16; k += 4)
			u[k / 4] = (int32_t)((uint32_t)am[k] << 24 | (uint32_t)am[k + 1] << 16 |
					     (uint32_t)am[k + 2] << 8 | am[k + 3]);
		b->next_id[0xFFFF] = 0xFFFE;
		add_item(b, 0xFFFF, u, 4);
		for (int k = 0; k < 8; k++) {
			int32_t a[6] = {1, 1, k, k % 3 - 1, (int32_t)(mapgen_rand() & 0xffff), k & 1};
			add_item(b, 0xFFFE, a, 6);
		}
	}
	spec.items = b->items;
	spec.nitems = b->ni;
	spec.data = b->data;
	spec.ndata = b->nd;
	int rc = sv_df_write(fd, &spec, err);
	for (size_t i = 0; i < b->nd; i++)
		free((void *)b->data[i].raw);
	free(b->arena);
	free(b);
	return rc;
}

