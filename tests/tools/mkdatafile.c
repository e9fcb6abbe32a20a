/*
 * mkdatafile - makes Teeworlds/DDNet datafiles with savefs's own writer,
 * for fixtures and benchmarks.
 *
 *   mkdatafile gen OUT --data N --payload SIZE [--items N] [--version 3|4]
 *                  [--magic DATA|ATAD] [--seed S] [--crude] [--dup-uuid]
 *       A synthetic map: a version item, an info item, N layer items, a
 *       UUID index item (twice with --dup-uuid, as real DDNet maps have)
 *       naming one extended type with two items, and N data items holding
 *       SIZE bytes in all (compressible, tile-like bytes; item 1 is empty).
 *   mkdatafile map OUT [--flavour ddnet|tw07|legacy17|legacy22] [--size WxH]
 *                  [--images N] [--image-size S] [--no-settings] [--seed S]
 *                  [--version 3|4] [--crude]
 *       A map DDNet loads, covering the item versions real maps have:
 *       info with settings (or without), images v1/v2 embedded and
 *       external, a sound, envelopes v1/v2 (v3 with 22-int points in
 *       tw07) and DDNet's bezier item, groups v1/v2/v3, quads, sound
 *       sources (types 10 and 9), a game layer of WxH with front, tele,
 *       speedup, switch and tune layers (ddnet), tilemap version 4 runs
 *       (tw07), or DDRace's 17- and 22-int tilemaps with junk indices.
 *       --images N adds N embedded images of S x S (the benchmark's).
 *   mkdatafile convert IN OUT [--version 3|4] [--magic DATA|ATAD] [--crude]
 *       Reads IN through savefs's reader and writes it again, e.g. as a
 *       version 3 or "ATAD" file.
 */
#include "core/fmt/datafile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int die(const char *msg)
{
	fprintf(stderr, "mkdatafile: %s\n", msg);
	return 1;
}

static int write_out(const char *out, struct sv_df_spec *spec)
{
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(out);
		return 1;
	}
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_df_write(fd, spec, &err);
	if (close(fd) && !rc)
		rc = -errno;
	if (rc) {
		fprintf(stderr, "mkdatafile: %s: %s\n", out, err.msg[0] ? err.msg : strerror(-rc));
		return 1;
	}
	return 0;
}

/* Tile-layer-like bytes: 4-byte tiles {index, flags, skip, reserved} in
 * runs, half of them empty, so zlib sees what it sees in real maps. */
static void fill(uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint64_t r = next_rand();
		size_t run = 4 * (1 + (r & 63));
		uint8_t index = (r >> 8) & 1 ? 0 : (uint8_t)((r >> 16) & 63);
		uint8_t flags = index ? (uint8_t)((r >> 24) & 3) : 0;
		for (size_t k = 0; k < run && i < n; k++, i++)
			p[i] = k % 4 == 0 ? index : k % 4 == 1 ? flags : 0;
	}
}

/* Image-like bytes: RGBA pixels on a gradient with noise in the low bits. */
static void fill_image(uint8_t *p, size_t n)
{
	uint64_t r = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 8 == 0)
			r = next_rand();
		size_t px = i / 4;
		uint8_t base = (uint8_t)(px * (1 + i % 4) / 7);
		p[i] = i % 4 == 3 ? 255 : (uint8_t)(base + ((r >> (8 * (i % 8))) & 7));
	}
}

static int gen(int argc, char **argv)
{
	const char *out = argv[2];
	long ndata = 16, nlayers = 10;
	uint64_t payload = 64 << 10;
	struct sv_df_spec spec = {.magic = "DATA", .version = 4, .level = -1};
	bool dup_uuid = false;
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--data") && v)
			ndata = atol(argv[++i]);
		else if (!strcmp(a, "--items") && v)
			nlayers = atol(argv[++i]);
		else if (!strcmp(a, "--payload") && v) {
			if (sv_parse_size(argv[++i], &payload))
				return die("--payload takes a size such as 200M");
		} else if (!strcmp(a, "--version") && v)
			spec.version = atoi(argv[++i]);
		else if (!strcmp(a, "--magic") && v && strlen(v) == 4)
			memcpy(spec.magic, argv[++i], 4);
		else if (!strcmp(a, "--seed") && v)
			rng ^= (uint64_t)atoll(argv[++i]) * 0x9e3779b97f4a7c15ull;
		else if (!strcmp(a, "--crude"))
			spec.crude_size = true;
		else if (!strcmp(a, "--dup-uuid"))
			dup_uuid = true;
		else
			return die("unknown option (see the comment at the top of mkdatafile.c)");
	}
	if (ndata < 0 || nlayers < 0 || nlayers > 60000)
		return die("bad counts");
	size_t nitems = 2 + (size_t)nlayers + 4;
	struct sv_df_witem *items = calloc(nitems, sizeof *items);
	int32_t *ints = calloc(nitems * 16, sizeof *ints);
	struct sv_df_wdata *data = calloc((size_t)ndata + 1, sizeof *data);
	if (!items || !ints || !data)
		return die("out of memory");
	size_t ni = 0;
	int32_t *p = ints;
	/* version: [1]; info: [1, author, version, credits, license]. */
	p[0] = 1;
	items[ni++] = (struct sv_df_witem){0, 0, (uint8_t *)p, 4};
	p += 16;
	p[0] = 1, p[1] = -1, p[2] = -1, p[3] = -1, p[4] = -1;
	items[ni++] = (struct sv_df_witem){1, 0, (uint8_t *)p, 20};
	p += 16;
	for (long i = 0; i < nlayers; i++) {
		for (int k = 0; k < 15; k++)
			p[k] = (int32_t)(next_rand() & 0xffff);
		p[0] = 3, p[1] = 2;
		p[14] = ndata ? (int32_t)(i % ndata) : -1;
		items[ni++] = (struct sv_df_witem){5, (uint16_t)i, (uint8_t *)p, 60};
		p += 16;
	}
	/* A UUID index item naming type 0xFFFE (the automapper config). */
	static const uint8_t am[16] = {0x3e, 0x1b, 0x27, 0x16, 0x17, 0x8c, 0x39, 0x78,
				       0x9b, 0xd9, 0xb1, 0x1a, 0xe0, 0x41, 0x0d, 0xd8};
	for (int k = 0; k < 16; k += 4)
		p[k / 4] = (int32_t)((uint32_t)am[k] << 24 | (uint32_t)am[k + 1] << 16 |
				     (uint32_t)am[k + 2] << 8 | am[k + 3]);
	items[ni++] = (struct sv_df_witem){0xFFFF, 0xFFFE, (uint8_t *)p, 16};
	if (dup_uuid)
		items[ni++] = (struct sv_df_witem){0xFFFF, 0xFFFE, (uint8_t *)p, 16};
	p += 16;
	p[0] = 1, p[1] = 0, p[2] = 0, p[3] = 0;
	items[ni++] = (struct sv_df_witem){0xFFFE, 0, (uint8_t *)p, 16};
	/* Data: sizes vary by +-50% around the mean; item 1 is empty. */
	uint64_t mean = ndata ? payload / (uint64_t)ndata : 0, total = 0;
	for (long i = 0; i < ndata; i++) {
		uint64_t n = mean ? mean / 2 + next_rand() % (mean + 1) : 0;
		if (i == 1)
			n = 0;
		if (i == ndata - 1 && total < payload && payload - total < 2 * mean + 1)
			n = payload - total;
		uint8_t *b = malloc(n ? n : 1);
		if (!b)
			return die("out of memory");
		if (i % 2)
			fill_image(b, n);
		else
			fill(b, n);
		data[i].raw = b;
		data[i].raw_len = (uint32_t)n;
		total += n;
	}
	spec.items = items;
	spec.nitems = ni;
	spec.data = data;
	spec.ndata = (size_t)ndata;
	int rc = write_out(out, &spec);
	for (long i = 0; i < ndata; i++)
		free((void *)data[i].raw);
	free(data);
	free(ints);
	free(items);
	return rc;
}

/* ---- maps ------------------------------------------------------------- */

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

static uint8_t *tiles_game(int w, int h)
{
	uint8_t *t = calloc((size_t)w * h, 4);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			uint8_t *c = t + 4 * ((size_t)y * w + x);
			uint64_t r = next_rand();
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
		uint64_t r = next_rand();
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
		uint64_t r = next_rand();
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

enum { F_DDNET, F_TW07, F_L17, F_L22 };

/* A tile layer item: kind 0 tiles, else the physics flag. */
static void tile_layer(struct mb *b, int fl, int w, int h, int flags, int detail, const char *name,
		       int image, int cenv, int32_t data, const int32_t phys[5], int legacy_junk)
{
	int32_t v[23];
	int n;
	v[0] = 0, v[1] = 2, v[2] = detail;
	v[3] = fl == F_TW07 ? 4 : fl == F_L17 ? 2 : 3;
	v[4] = w, v[5] = h, v[6] = flags;
	bool physl = flags != 0;
	v[7] = v[8] = v[9] = 255, v[10] = physl ? 255 : 200;
	v[11] = cenv, v[12] = cenv >= 0 ? 250 : 0, v[13] = image, v[14] = data;
	if (fl == F_L17) {
		/* DDRace's v2: tele, speedup right after data; junk 0/1 on others. */
		v[15] = phys ? phys[0] : legacy_junk;
		v[16] = phys ? phys[1] : !legacy_junk;
		n = 17;
	} else {
		pack(name, &v[15], 3);
		n = 18;
		if (fl == F_DDNET || fl == F_L22) {
			for (int i = 0; i < 5; i++)
				v[18 + i] = phys ? phys[i] : fl == F_L22 ? 1000 + legacy_junk + i : -1;
			n = fl == F_L22 ? 22 : 23;
		}
	}
	add_item(b, 5, v, (size_t)n);
}

static int gen_map(int argc, char **argv)
{
	const char *out = argv[2];
	int fl = F_DDNET, W = 60, H = 40, nbig = 0, bigsz = 1024;
	bool settings = true;
	struct sv_df_spec spec = {.magic = "DATA", .version = 4, .level = -1};
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--flavour") && v) {
			i++;
			fl = !strcmp(v, "tw07") ? F_TW07 : !strcmp(v, "legacy17") ? F_L17
			   : !strcmp(v, "legacy22") ? F_L22 : !strcmp(v, "ddnet") ? F_DDNET : -1;
			if (fl < 0)
				return die("--flavour is ddnet, tw07, legacy17 or legacy22");
		} else if (!strcmp(a, "--size") && v && sscanf(argv[++i], "%dx%d", &W, &H) == 2) {
		} else if (!strcmp(a, "--images") && v) {
			nbig = atoi(argv[++i]);
		} else if (!strcmp(a, "--image-size") && v) {
			bigsz = atoi(argv[++i]);
		} else if (!strcmp(a, "--no-settings")) {
			settings = false;
		} else if (!strcmp(a, "--seed") && v) {
			rng ^= (uint64_t)atoll(argv[++i]) * 0x9e3779b97f4a7c15ull;
		} else if (!strcmp(a, "--version") && v) {
			spec.version = atoi(argv[++i]);
		} else if (!strcmp(a, "--crude")) {
			spec.crude_size = true;
		} else {
			return die("unknown option (see the comment at the top of mkdatafile.c)");
		}
	}
	if (W < 2 || H < 2 || W > 20000 || H > 20000 || nbig < 0 || nbig > 400 || bigsz < 1 ||
	    bigsz > 8192)
		return die("bad sizes");
	struct mb *b = calloc(1, sizeof *b);
	if (!b || !(b->arena = calloc(1 << 16, sizeof *b->arena)))
		return die("out of memory");
	int32_t v[64];
	bool ddnet = fl == F_DDNET;
	/* version, info */
	v[0] = 1;
	add_item(b, 0, v, 1);
	v[0] = 1, v[1] = add_str(b, "savefs"), v[2] = add_str(b, "1.2"),
	v[3] = add_str(b, "generated by mkdatafile"), v[4] = add_str(b, "CC0");
	if (settings) {
		static const char cmds[] = "sv_gravity 0.5\0tune_zone 1 gravity 2\0"
					   "tune_zone_enter 1 \"low gravity\"";
		char *s = malloc(sizeof cmds);
		memcpy(s, cmds, sizeof cmds);
		v[5] = add_data(b, s, sizeof cmds);
	}
	add_item(b, 1, v, settings ? 6 : 5);
	/* images: embedded v1 (v2 in 0.7), external, embedded v2, big ones */
	int iv = fl == F_TW07 ? 2 : 1;
	for (int k = 0; k < 3 + nbig; k++) {
		int w = k < 3 ? 64 : bigsz, h = k < 3 ? 48 : bigsz;
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
			fill_image(px, n);
			v[5] = add_data(b, px, n);
		}
		v[6] = 1;
		add_item(b, 2, v, v[0] >= 2 ? 7 : 6);
	}
	/* a sound: Opus in Ogg (its first page only matters here) */
	if (ddnet) {
		static const uint8_t ogg[] = "OggS\0\2\0\0\0\0\0\0\0\0\x11\x22\x33\x44\0\0\0\0"
					     "\0\0\0\0\1\x13OpusHead\1\1\x38\1\x80\xbb\0\0\0\0\0";
		uint8_t *s = malloc(sizeof ogg);
		memcpy(s, ogg, sizeof ogg);
		v[0] = 1, v[1] = 0, v[2] = add_str(b, "wind"), v[3] = add_data(b, s, sizeof ogg);
		v[4] = (int32_t)sizeof ogg;
		add_item(b, 7, v, 5);
	}
	/* envelopes and their points */
	int pi = fl == F_TW07 ? 22 : 6;
	int32_t pts[8 * 22] = {0}, bez[8 * 16] = {0};
	int np = 0;
	struct { int ver, ch, n, sync; const char *name; } envs[3] = {
		{fl == F_TW07 ? 3 : 2, 3, 3, 1, "rotate"},
		{fl == F_TW07 ? 3 : 1, 4, 2, 0, ""},
		{fl == F_TW07 ? 3 : 2, 1, 3, 0, "volume"},
	};
	for (int e = 0; e < 3; e++) {
		v[0] = envs[e].ver, v[1] = envs[e].ch, v[2] = np, v[3] = envs[e].n;
		pack(envs[e].name, &v[4], 8);
		if (e == 1 && fl != F_TW07)
			v[4] = -1; /* an old map's unnamed envelope */
		v[12] = envs[e].sync;
		add_item(b, 3, v, envs[e].ver >= 2 ? 13 : 12);
		for (int k = 0; k < envs[e].n; k++, np++) {
			int32_t *q = &pts[np * pi];
			q[0] = k * 1500, q[1] = e == 2 && k == 1 ? 5 : k % 5;
			for (int ch = 0; ch < 4; ch++)
				q[2 + ch] = ch < envs[e].ch ? (int32_t)((next_rand() % 4096) - 1024) : 0;
			int32_t *t = fl == F_TW07 ? q + 6 : &bez[np * 16];
			if (q[1] == 5 || fl == F_TW07)
				for (int f = 0; f < 16; f++)
					t[f] = f % 8 < 4 ? (f < 8 ? -100 : 100) : (int32_t)(next_rand() % 2048);
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
		int32_t *qd = malloc(sizeof q);
		memcpy(qd, q, sizeof q);
		v[0] = 0, v[1] = 3, v[2] = 0, v[3] = 2, v[4] = 2, v[5] = add_data(b, qd, sizeof q),
		v[6] = 2;
		pack("Sky", &v[7], 3);
		add_item(b, 5, v, 10);
		nl++;
		if (ddnet) {
			int32_t s[2 * 13] = {0};
			for (int k = 0; k < 2; k++) {
				int32_t *x = &s[13 * k];
				x[0] = 1024 * (200 + 50 * k), x[1] = 1024 * 300, x[2] = 1, x[3] = k,
				x[4] = 2 * k, x[5] = 80, x[6] = -1, x[7] = 0, x[8] = k ? 2 : -1, x[9] = 0,
				x[10] = k, x[11] = 1024 * 500, x[12] = k ? 0 : 1024 * 300;
			}
			int32_t *sd = malloc(sizeof s);
			memcpy(sd, s, sizeof s);
			v[0] = 0, v[1] = 10, v[2] = 0, v[3] = 2, v[4] = 2, v[5] = add_data(b, sd, sizeof s),
			v[6] = 0;
			pack("Wind", &v[7], 3);
			add_item(b, 5, v, 10);
			nl++;
			int32_t o[9] = {1024 * 40, 1024 * 40, 1, 0, 100, -1, 0, -1, 0};
			int32_t *od = malloc(sizeof o);
			memcpy(od, o, sizeof o);
			v[0] = 0, v[1] = 9, v[2] = 0, v[3] = 1, v[4] = 1, v[5] = add_data(b, od, sizeof o),
			v[6] = 0;
			pack("Old", &v[7], 3);
			add_item(b, 5, v, 10);
			nl++;
		}
	}
	int32_t gv[15] = {fl == F_L17 ? 1 : 3, 0, 0, 30, 30, gstart, nl - gstart, 0, 0, 0, 0, 0};
	pack("Background", &gv[12], 3);
	add_item(b, 4, gv, fl == F_L17 ? 7 : 15);
	/* group 1: the game group */
	gstart = nl;
	size_t tiles = (size_t)W * H;
	struct { int flags; const char *name; int size; } phys[5] = {
		{2, "Tele", 2}, {4, "Speedup", 6}, {8, "Front", 4}, {16, "Switch", 4}, {32, "Tune", 2}};
	int game_layers[3][3];
	(void)game_layers;
	for (int k = 0; k < (ddnet ? 8 : fl == F_L17 ? 4 : 3); k++) {
		/* 0 deco (below), 1 game, 2 detail deco, 3 (legacy17) tele, 3..7 physics */
		if (k == 1) {
			uint8_t *t = tiles_game(W, H);
			size_t n = tiles * 4;
			if (fl == F_TW07) {
				uint8_t *r = runs(t, tiles, &n);
				free(t);
				t = r;
			}
			int32_t d = add_data(b, t, n);
			tile_layer(b, fl, W, H, 1, 0, "Game", -1, -1, d, fl == F_L17 ? NULL
				   : fl == F_L22 ? (int32_t[5]){56419048, 7, 8, 9, 10} : NULL, 0);
			if (fl == F_L22) {
				/* real maps carry junk in a game layer's unused indices */
			}
		} else if (k == 0 || k == 2) {
			uint8_t *t = tiles_deco(W, H);
			size_t n = tiles * 4;
			if (fl == F_TW07) {
				uint8_t *r = runs(t, tiles, &n);
				free(t);
				t = r;
			}
			int32_t d = add_data(b, t, n);
			tile_layer(b, fl, W, H, 0, k == 2, k ? "Detail" : "Deco", 0, k ? -1 : 1, d,
				   NULL, k);
		} else if (fl == F_L17) {
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
	int32_t g1[15] = {fl == F_L17 ? 2 : 3, 0, 0, 100, 100, gstart, nl - gstart, 1, -10, -20,
			  800, 600};
	pack("Game", &g1[12], 3);
	add_item(b, 4, g1, fl == F_L17 ? 12 : 15);
	/* DDNet's bezier tangents and an automapper item (UUID types) */
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
	}
	spec.items = b->items;
	spec.nitems = b->ni;
	spec.data = b->data;
	spec.ndata = b->nd;
	int rc = write_out(out, &spec);
	for (size_t i = 0; i < b->nd; i++)
		free((void *)b->data[i].raw);
	free(b->arena);
	free(b);
	return rc;
}

static int convert(int argc, char **argv)
{
	struct sv_df_spec spec = {.magic = "", .version = 0, .level = -1};
	for (int i = 4; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--version") && v)
			spec.version = atoi(argv[++i]);
		else if (!strcmp(a, "--magic") && v && strlen(v) == 4)
			memcpy(spec.magic, argv[++i], 4);
		else if (!strcmp(a, "--crude"))
			spec.crude_size = true;
		else
			return die("unknown option");
	}
	struct sv_opts o;
	sv_opts_init(&o);
	o.read_only = true;
	struct sv_container *c;
	struct sv_err err;
	if (sv_container_open(argv[2], &o, &c, &err)) {
		fprintf(stderr, "mkdatafile: %s\n", err.msg);
		return 1;
	}
	uint32_t hdr, items_dir, data_dir;
	struct sv_blob *h;
	if (sv_resolve(c, "header.json", &hdr) || sv_resolve(c, "items", &items_dir) ||
	    sv_resolve(c, "data", &data_dir) || sv_content(c, hdr, &h, &err))
		return die("not a datafile tree");
	/* Defaults from the source: "version": N and "magic": "XXXX". */
	const char *mv = strstr((const char *)h->data, "\"magic\": \"");
	const char *vv = strstr((const char *)h->data, "\"version\": ");
	if (!spec.magic[0] && mv)
		memcpy(spec.magic, mv + 10, 4);
	if (!spec.version && vv)
		spec.version = atoi(vv + 11);
	sv_blob_unref(h);
	size_t cap = sv_node_count(c);
	struct sv_df_witem *items = calloc(cap, sizeof *items);
	struct sv_df_wdata *data = calloc(cap, sizeof *data);
	struct sv_blob **keep = calloc(cap, sizeof *keep);
	size_t ni = 0, nd = 0, nk = 0;
	for (uint32_t n = 0; n < sv_node_count(c); n++) {
		struct sv_node *node = sv_node(c, n);
		if (node->flags & (SV_N_DIR | SV_N_GONE) || node->parent == SV_ROOT)
			continue;
		struct sv_node *dir = sv_node(c, node->parent);
		struct sv_blob *b;
		if (sv_content(c, n, &b, &err)) {
			fprintf(stderr, "mkdatafile: %s: %s\n", node->name, err.msg);
			return 1;
		}
		keep[nk++] = b;
		if (dir->parent == items_dir) {
			items[ni].type = (uint16_t)atoi(dir->name);
			items[ni].id = (uint16_t)atoi(node->name);
			items[ni].p = b->data;
			items[ni++].len = (uint32_t)b->len;
		} else if (node->parent == data_dir) {
			data[nd].raw = b->data;
			data[nd++].raw_len = (uint32_t)b->len;
		}
	}
	spec.items = items;
	spec.nitems = ni;
	spec.data = data;
	spec.ndata = nd;
	int rc = write_out(argv[3], &spec);
	for (size_t i = 0; i < nk; i++)
		sv_blob_unref(keep[i]);
	free(keep);
	free(items);
	free(data);
	sv_container_free(c);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "gen"))
		return gen(argc, argv);
	if (argc >= 3 && !strcmp(argv[1], "map"))
		return gen_map(argc, argv);
	if (argc >= 4 && !strcmp(argv[1], "convert"))
		return convert(argc, argv);
	fprintf(stderr, "usage: mkdatafile gen OUT [options] | map OUT [options] | convert IN OUT "
		"[options]\n");
	return 2;
}
