/*
 * test_doodle_codec.c - the Sketchy Maze codecs (core/fmt/sketchy/doodle_codec.c)
 * and the PNG writer (core/codec/png.c): byte vectors worked out by hand,
 * every tolerance the decoders count, round trips over a few hundred
 * random grids (fixed seed), the text grid's exact layout and every parser
 * message, PNG sizes and pixels (decoded here with zlib, and by Python's
 * zlib when python3 is present), base64 and gzip.
 */
#include "fmt/sketchy/doodle.h"
#include "rd.h"
#include "t.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

static uint64_t seed = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(uint32_t n) /* 0..n-1, xorshift64 */
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (uint32_t)(seed % n);
}

#define B(...) ((const uint8_t[]){ __VA_ARGS__ }), sizeof((const uint8_t[]){ __VA_ARGS__ })

/* Decodes a .bin chunk of the given size at (cx, cy) into g. */
static int bin(const uint8_t *p, size_t n, uint32_t npal, uint32_t size, int64_t cx,
	       int64_t cy, struct sv_doodle_grid *g, struct sv_doodle_quirks *q,
	       struct sv_err *err)
{
	memset(q, 0, sizeof *q);
	sv_err_clear(err);
	if (sv_doodle_grid_init(g, size, cx, cy))
		return -ENOMEM;
	return sv_doodle_bin_decode(p, n, npal, g, q, err);
}

static void make_palette(struct sv_palette *pal, uint32_t n)
{
	pal->n = n;
	pal->v = calloc(n ? n : 1, sizeof *pal->v);
	for (uint32_t i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof name, i % 7 ? "colour %u" : "", i);
		pal->v[i].name = strdup(name);
		for (int k = 0; k < 4; k++)
			pal->v[i].rgba[k] = (uint8_t)rnd(256);
		if (i % 3)
			pal->v[i].rgba[3] = 0xFF;
	}
}

/* ---- varints ------------------------------------------------------------------ */

/* ---- grids and binary chunks ---------------------------------------------------- */

static void grids(void)
{
	struct sv_doodle_grid g;
	T_INT(-EFBIG, sv_doodle_grid_init(&g, 0, 0, 0));
	T_INT(-EFBIG, sv_doodle_grid_init(&g, SV_DOODLE_MAX_SIZE + 1, 0, 0));
	T_INT(-EFBIG, sv_doodle_grid_init(&g, 128, INT64_MAX / 64, 0));
	sv_doodle_grid_fini(&g);
	sv_doodle_grid_fini(NULL);
	T_INT(0, sv_doodle_grid_init(&g, 128, -3, 5));
	T_INT(-384, g.x0);
	T_INT(640, g.y0);
	T_OK(sv_doodle_grid_empty(&g));
	g.px[128 * 128 - 1] = 0;
	T_OK(!sv_doodle_grid_empty(&g));
	sv_doodle_grid_fini(&g);
}

static void rle_vectors(void)
{
	struct sv_doodle_grid g;
	struct sv_doodle_quirks q;
	struct sv_err err;
	struct sv_buf b;

	/* The format doc's example: 4x4, top row index 0, the rest empty. */
	static const uint8_t doc[] = { 0x01, 0x00, 0x04, 0xff, 0xff, 0x03, 0x0c };
	sv_doodle_grid_init(&g, 4, 0, 0);
	for (int i = 0; i < 4; i++)
		g.px[i] = 0;
	sv_buf_init(&b);
	T_INT(0, sv_doodle_rle_encode(&g, &b));
	T_UINT(sizeof doc, b.len);
	T_MEM(doc, b.p, sizeof doc);
	T_UINT(sizeof doc, sv_doodle_rle_size(&g));
	g.px[5] = SV_DOODLE_BADPIX; /* refused, nothing appended */
	T_INT(-EINVAL, sv_doodle_rle_encode(&g, &b));
	T_UINT(sizeof doc, b.len);
	sv_buf_fini(&b);
	sv_doodle_grid_fini(&g);
	T_INT(0, bin(doc, sizeof doc, 1, 4, 0, 0, &g, &q, &err));
	T_UINT(0, g.px[3]);
	T_UINT(SV_DOODLE_EMPTY, g.px[4]);
	T_UINT(0, q.short_by + q.run_clamped + q.partial + q.bad_index);
	sv_doodle_grid_fini(&g);

	/* One pixel short (the game's encoder drops a final run of 1). */
	T_INT(0, bin(B(0x01, 0x02, 0x03), 3, 2, 0, 0, &g, &q, &err));
	T_UINT(1, q.short_by);
	T_UINT(2, g.px[2]);
	T_UINT(SV_DOODLE_EMPTY, g.px[3]);
	sv_doodle_grid_fini(&g);
	/* An over-long run, then a pair past the end: clamped. */
	T_INT(0, bin(B(0x01, 0x00, 0x09, 0x01, 0x02), 3, 2, 0, 0, &g, &q, &err));
	T_UINT(7, q.run_clamped);
	T_UINT(0, q.short_by);
	T_UINT(0, g.px[3]);
	sv_doodle_grid_fini(&g);
	/* A run of 2^63 costs nothing. */
	T_INT(0, bin(B(0x01, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
		       0x01), 3, 2, 0, 0, &g, &q, &err));
	T_UINT((1ull << 63) - 4, q.run_clamped);
	T_UINT(1, g.px[0]);
	T_UINT(1, g.px[3]);
	sv_doodle_grid_fini(&g);
	/* Two such runs saturate the counter rather than wrap it. */
	T_INT(0, bin(B(0x01, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		       0x01, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		     3, 2, 0, 0, &g, &q, &err));
	T_UINT(UINT64_MAX, q.run_clamped);
	sv_doodle_grid_fini(&g);
	/* A partial pair at the end; a run of 0 does nothing. */
	T_INT(0, bin(B(0x01, 0x01, 0x00, 0x00, 0x02, 0x01), 3, 2, 0, 0, &g, &q, &err));
	T_UINT(1, q.partial);
	T_UINT(2, q.short_by);
	T_UINT(0, g.px[0]);
	T_UINT(SV_DOODLE_EMPTY, g.px[2]);
	sv_doodle_grid_fini(&g);
	T_INT(0, bin(B(0x01, 0x00, 0x02, 0x80), 3, 2, 0, 0, &g, &q, &err));
	T_UINT(1, q.partial);
	sv_doodle_grid_fini(&g);
	/* Indices past the palette: bad pixels, each counted. */
	T_INT(0, bin(B(0x01, 0x05, 0x03, 0xfe, 0xff, 0x03, 0x01), 3, 2, 0, 0, &g, &q,
		     &err));
	T_UINT(4, q.bad_index);
	T_UINT(SV_DOODLE_BADPIX, g.px[0]);
	T_UINT(SV_DOODLE_BADPIX, g.px[3]);
	sv_doodle_grid_fini(&g);
	/* The type alone: an all-empty chunk. */
	T_INT(0, bin(B(0x01), 3, 2, 0, 0, &g, &q, &err));
	T_UINT(4, q.short_by);
	sv_doodle_grid_fini(&g);

	/* Errors. */
	T_INT(-EBADMSG, bin(doc, 0, 3, 2, 0, 0, &g, &q, &err));
	T_STR("empty chunk", err.msg);
	sv_doodle_grid_fini(&g);
	T_INT(-EBADMSG, bin(B(0x80), 3, 2, 0, 0, &g, &q, &err));
	T_STR("unreadable chunk type", err.msg);
	sv_doodle_grid_fini(&g);
	T_INT(-ENOTSUP, bin(B(0x02, 0x00), 3, 2, 0, 0, &g, &q, &err));
	T_STR("chunk type 2 not supported", err.msg);
	sv_doodle_grid_fini(&g);
	T_INT(-ENOTSUP, bin(B(0xac, 0x02), 3, 2, 0, 0, &g, &q, &err));
	T_STR("chunk type 300 not supported", err.msg);
	sv_doodle_grid_fini(&g);
	T_INT(-EBADMSG, bin(B(0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			      0xff, 0x02), 3, 2, 0, 0, &g, &q, &err));
	T_STR("byte 2: varint longer than 64 bits", err.msg);
	sv_doodle_grid_fini(&g);
}

static void map_vectors(void)
{
	struct sv_doodle_grid g;
	struct sv_doodle_quirks q;
	struct sv_err err;
	/* Chunk -1,-1 of size 4 covers x, y in -4..-1.  Records (zigzag x,
	 * zigzag y, index): (-1,-4) = 2, (-4,-1) = 0, (0,0) = 1 outside,
	 * (-2,-2) = 9 past a palette of 3, (2^62, -1) outside, then a partial
	 * record (x and y only). */
	static const uint8_t p[] = {
		0x00, 0x01, 0x07, 0x02, 0x07, 0x01, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x09,
		0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x01, 0x01,
		0x01, 0x01,
	};
	T_INT(0, bin(p, sizeof p, 3, 4, -1, -1, &g, &q, &err));
	T_UINT(2, g.px[3]);
	T_UINT(0, g.px[12]);
	T_UINT(SV_DOODLE_BADPIX, g.px[10]);
	T_UINT(SV_DOODLE_EMPTY, g.px[0]);
	T_UINT(2, q.outside);
	T_UINT(1, q.bad_index);
	T_UINT(1, q.partial);
	T_UINT(0, q.short_by + q.run_clamped);
	sv_doodle_grid_fini(&g);
	T_INT(-EBADMSG, bin(B(0x00, 0x01, 0x07, 0x02, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80,
			      0x80, 0x80, 0x80, 0x80, 0x80, 0x01), 3, 4, -1, -1, &g, &q, &err));
	T_STR("byte 5: varint longer than 64 bits", err.msg);
	sv_doodle_grid_fini(&g);
	/* The payload alone, as in a JSON chunk's base64 data. */
	memset(&q, 0, sizeof q);
	sv_doodle_grid_init(&g, 4, -1, -1);
	T_INT(0, sv_doodle_map_decode(p + 1, 3, 3, &g, &q));
	T_UINT(2, g.px[3]);
	T_INT(-EBADMSG, sv_doodle_map_decode(B(0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff,
					       0xff, 0xff, 0xff, 0xff, 0x7f), 3, &g, &q));
	sv_doodle_grid_fini(&g);
	/* Extreme coordinates around a chunk near the edges do not overflow. */
	T_INT(0, bin(B(0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
		       0x00, 0x00), 2, 4096, 1 << 20, 0, &g, &q, &err));
	T_UINT(1, q.outside);
	sv_doodle_grid_fini(&g);
}

/* A map-accessor payload of g (no type byte), last pixel first. */
static void map_encode(const struct sv_doodle_grid *g, struct sv_buf *b)
{
	for (size_t i = (size_t)g->size * g->size; i-- > 0;) {
		if (g->px[i] == SV_DOODLE_EMPTY)
			continue;
		sv_put_leb(b, sv_zigzag(g->x0 + (int64_t)(i % g->size)));
		sv_put_leb(b, sv_zigzag(g->y0 + (int64_t)(i / g->size)));
		sv_put_leb(b, g->px[i]);
	}
}

/* ---- JSON chunks ------------------------------------------------------------------ */

static void xy(void)
{
	static const struct {
		const char *s;
		int64_t x, y;
	} good[] = {
		{ "0,0", 0, 0 },
		{ "-5,7", -5, 7 },
		{ "007,-0", 7, 0 },
		{ "2147483647,-2147483648", INT32_MAX, INT32_MIN },
	};
	static const char *const bad[] = {
		"", ",", "1", "1,", ",1", "+1,2", " 1,2", "1, 2", "1,2 ", "1,2,3", "-,1",
		"--1,2", "1,2x", "2147483648,0", "0,-2147483649", "99999999999999999999,1",
		"1;2", "0x1,2",
	};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		int64_t x = 1, y = 1;
		T_OK(sv_doodle_parse_xy(good[i].s, &x, &y));
		T_INT(good[i].x, x);
		T_INT(good[i].y, y);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int64_t x, y;
		if (!t_note(!sv_doodle_parse_xy(bad[i], &x, &y)))
			fprintf(stderr, "parse_xy accepted \"%s\"\n", bad[i]);
	}
}

static int json_chunk(const char *text, uint32_t npal, uint32_t size, int64_t cx,
		      int64_t cy, struct sv_doodle_grid *g, struct sv_doodle_quirks *q,
		      struct sv_err *err)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	memset(q, 0, sizeof *q);
	sv_err_clear(err);
	sv_doodle_grid_init(g, size, cx, cy);
	int rc = sv_doodle_json_decode(j, npal, g, q, err);
	json_decref(j);
	return rc;
}

static void json_chunks(void)
{
	struct sv_doodle_grid g;
	struct sv_doodle_quirks q;
	struct sv_err err;
	T_INT(0, json_chunk("{\"Type\": 0, \"DATA\": {\"-1,-4\": 2, \"bad\": 1, \"1,2,3\": 1,"
			    " \"0,0\": 1, \"-2,-2\": 9, \"-3,-3\": -1, \"-3,-2\": \"x\","
			    " \"-4,-1\": 0, \"-3,-1\": 65535, \"-2,-1\": 1.0}}",
			    3, 4, -1, -1, &g, &q, &err));
	T_UINT(2, g.px[3]);
	T_UINT(0, g.px[12]);
	T_UINT(SV_DOODLE_EMPTY, g.px[13]);
	T_UINT(SV_DOODLE_BADPIX, g.px[10]);
	T_UINT(5, q.bad_key);
	T_UINT(1, q.outside);
	T_UINT(1, q.bad_index);
	sv_doodle_grid_fini(&g);
	/* no type is type 0; data as base64 map-accessor records */
	T_INT(0, json_chunk("{\"data\": \"AQcC\"}", 3, 4, -1, -1, &g, &q, &err));
	T_UINT(2, g.px[3]);
	sv_doodle_grid_fini(&g);
	T_INT(-EBADMSG, json_chunk("{\"data\": \"AQc!\"}", 3, 4, -1, -1, &g, &q, &err));
	T_STR("base64: byte 3: '!' is not base64", err.msg);
	sv_doodle_grid_fini(&g);
	T_INT(-ENOTSUP, json_chunk("{\"type\": 1, \"data\": {}}", 3, 4, 0, 0, &g, &q, &err));
	T_STR("chunk type 1 not supported", err.msg);
	sv_doodle_grid_fini(&g);
	T_INT(-EBADMSG, json_chunk("{\"type\": \"0\", \"data\": {}}", 3, 4, 0, 0, &g, &q,
				   &err));
	T_STR("chunk type is not an integer", err.msg);
	sv_doodle_grid_fini(&g);
	T_INT(-EBADMSG, json_chunk("{\"type\": 0}", 3, 4, 0, 0, &g, &q, &err));
	T_STR("chunk has no \"data\" object or string", err.msg);
	sv_doodle_grid_fini(&g);
	T_INT(-EBADMSG, json_chunk("[1]", 3, 4, 0, 0, &g, &q, &err));
	T_STR("chunk is not a JSON object", err.msg);
	sv_doodle_grid_fini(&g);

	/* Encoding: absolute keys, row-major, bad pixels left out. */
	sv_doodle_grid_init(&g, 2, -1, 0);
	g.px[1] = 1;
	g.px[2] = 0;
	g.px[3] = SV_DOODLE_BADPIX;
	json_t *j = sv_doodle_json_encode(&g);
	char *s = json_dumps(j, JSON_COMPACT);
	T_STR("{\"type\":0,\"data\":{\"-1,0\":1,\"-2,1\":0}}", s);
	free(s);
	json_decref(j);
	sv_doodle_grid_fini(&g);
}

/* ---- random round trips ------------------------------------------------------------ */

static bool same(const struct sv_doodle_grid *a, const struct sv_doodle_grid *b)
{
	return a->size == b->size &&
	       !memcmp(a->px, b->px, (size_t)a->size * a->size * sizeof *a->px);
}

static void random_grid(struct sv_doodle_grid *g, uint32_t npal)
{
	unsigned mode = rnd(4); /* sparse, dense, runs, half */
	for (size_t i = 0, n = (size_t)g->size * g->size; i < n; i++) {
		bool set = mode == 0 ? rnd(100) == 0 : mode == 1 ? true : rnd(2);
		if (mode == 2 && i && rnd(16))
			g->px[i] = g->px[i - 1];
		else
			g->px[i] = set ? (uint16_t)rnd(npal) : SV_DOODLE_EMPTY;
	}
}

static void round_trips(void)
{
	static const uint32_t npals[] = { 1, 2, 5, 62, 63, 100, 254, 255, 3844, 3845,
					  4000, SV_DOODLE_MAX_PALETTE };
	int fails = 0;
	for (int t = 0; t < 300; t++) {
		uint32_t size = 1 + rnd(130), npal = npals[rnd(sizeof npals / sizeof *npals)];
		int64_t cx = (int64_t)rnd(41) - 20, cy = (int64_t)rnd(41) - 20;
		struct sv_doodle_grid g, d;
		struct sv_doodle_quirks q;
		struct sv_err err;
		struct sv_buf b;
		sv_buf_init(&b);
		sv_doodle_grid_init(&g, size, cx, cy);
		random_grid(&g, npal);

		/* RLE */
		fails += !t_note(!sv_doodle_rle_encode(&g, &b) &&
				 b.len == sv_doodle_rle_size(&g));
		fails += !t_note(!bin(b.p, b.len, npal, size, cx, cy, &d, &q, &err) &&
				 same(&g, &d));
		fails += !t_note(!(q.short_by | q.run_clamped | q.partial | q.bad_index));
		sv_doodle_grid_fini(&d);

		/* map accessor, binary and as a JSON base64 string */
		b.len = 0;
		sv_buf_add(&b, "", 1);
		map_encode(&g, &b);
		fails += !t_note(!bin(b.p, b.len, npal, size, cx, cy, &d, &q, &err) &&
				 same(&g, &d));
		sv_doodle_grid_fini(&d);
		struct sv_buf s;
		sv_buf_init(&s);
		sv_base64_encode(b.p + 1, b.len - 1, &s);
		json_t *j = json_pack("{s:s%}", "data", s.len ? (const char *)s.p : "", s.len);
		sv_doodle_grid_init(&d, size, cx, cy);
		fails += !t_note(!sv_doodle_json_decode(j, npal, &d, &q, &err) && same(&g, &d));
		json_decref(j);
		sv_doodle_grid_fini(&d);
		sv_buf_fini(&s);

		/* JSON object */
		j = sv_doodle_json_encode(&g);
		sv_doodle_grid_init(&d, size, cx, cy);
		memset(&q, 0, sizeof q);
		fails += !t_note(j && !sv_doodle_json_decode(j, npal, &d, &q, &err) &&
				 same(&g, &d) && !q.bad_key && !q.outside);
		json_decref(j);
		sv_doodle_grid_fini(&d);

		if (fails) {
			fprintf(stderr, "round trip %d (size %u, npal %u) failed\n", t, size,
				npal);
			fails = 0;
		}
		sv_doodle_grid_fini(&g);
		sv_buf_fini(&b);
	}
}

/* ---- palette and text grid --------------------------------------------------------- */

static void colours(void)
{
	static const struct {
		const char *s;
		uint8_t c[4];
	} good[] = {
		{ "#abc", { 0xaa, 0xbb, 0xcc, 0xff } },
		{ "#aBcD", { 0xaa, 0xbb, 0xcc, 0xdd } },
		{ "#A0b1C2", { 0xa0, 0xb1, 0xc2, 0xff } },
		{ "#01020304", { 1, 2, 3, 4 } },
	};
	static const char *const bad[] = { "", "#", "abc", "#ab", "#abcde", "#ggg",
					   "#1234567", "#123456789", "# 12", "#12345g" };
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		uint8_t c[4];
		T_INT(0, sv_doodle_colour_parse(good[i].s, c));
		T_MEM(good[i].c, c, 4);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		uint8_t c[4] = { 9, 9, 9, 9 };
		T_INT(-EINVAL, sv_doodle_colour_parse(bad[i], c));
		T_MEM("\x09\x09\x09\x09", c, 4);
	}
	T_INT(-EINVAL, sv_doodle_colour_parse(NULL, (uint8_t[4]){ 0 }));

	struct sv_palette pal;
	struct sv_err err;
	unsigned bad_colours = 7;
	json_t *j = json_loads("{\"Swatches\": [{\"Name\": \"solid\", \"Color\": \"#000\"},"
			       " {\"name\": \"fire\", \"color\": \"#ff000080\"},"
			       " {\"name\": 5, \"color\": \"nope\"}, {}, 5]}", 0, NULL);
	T_INT(0, sv_doodle_palette_from_json(j, &pal, &bad_colours, &err));
	T_UINT(5, pal.n);
	T_UINT(3, bad_colours);
	T_STR("solid", pal.v[0].name);
	T_MEM("\0\0\0\xff", pal.v[0].rgba, 4);
	T_STR("fire", pal.v[1].name);
	T_MEM("\xff\0\0\x80", pal.v[1].rgba, 4);
	T_STR("", pal.v[2].name);
	T_MEM("\0\0\0\xff", pal.v[2].rgba, 4);
	T_STR("", pal.v[4].name);
	sv_doodle_palette_fini(&pal);
	sv_doodle_palette_fini(NULL);
	json_decref(j);

	T_INT(0, sv_doodle_palette_from_json(NULL, &pal, NULL, &err));
	T_UINT(0, pal.n);
	j = json_object();
	T_INT(0, sv_doodle_palette_from_json(j, &pal, NULL, &err));
	T_UINT(0, pal.n);
	json_object_set_new(j, "swatches", json_string("x"));
	T_INT(-EBADMSG, sv_doodle_palette_from_json(j, &pal, NULL, &err));
	T_STR("\"swatches\" is not an array", err.msg);
	json_t *many = json_array();
	for (unsigned i = 0; i <= SV_DOODLE_MAX_PALETTE; i++)
		json_array_append_new(many, json_null());
	json_object_set_new(j, "swatches", many);
	T_INT(-EBADMSG, sv_doodle_palette_from_json(j, &pal, NULL, &err));
	T_STR("palette has 65535 colours, more than 65534", err.msg);
	json_array_remove(many, 0);
	T_INT(0, sv_doodle_palette_from_json(j, &pal, &bad_colours, &err));
	T_UINT(SV_DOODLE_MAX_PALETTE, pal.n);
	T_UINT(SV_DOODLE_MAX_PALETTE, bad_colours);
	sv_doodle_palette_fini(&pal);
	json_decref(j);
	j = json_array();
	T_INT(-EBADMSG, sv_doodle_palette_from_json(j, &pal, NULL, &err));
	T_STR("not an object", err.msg);
	json_decref(j);
}

static const char example[] =
	"# chunk 3,-2 layer 0 size 4\n"
	"# pixels 12..15 x -8..-5, 1 character(s) each, top row first\n"
	"# .  empty\n"
	"# 0  #000000  solid\n"
	"# 1  #ff000080  fire\n"
	"0...\n"
	".11.\n"
	"....\n"
	"....\n";

static void example_palette(struct sv_palette *pal)
{
	json_t *j = json_loads("{\"swatches\": [{\"name\": \"solid\", \"color\": \"#000000\"},"
			       " {\"name\": \"fire\", \"color\": \"#ff000080\"}]}", 0, NULL);
	sv_doodle_palette_from_json(j, pal, NULL, NULL);
	json_decref(j);
}

/* Parses text against pal into a size-4 grid; the result code. */
static int parse(const struct sv_palette *pal, const char *text,
		 struct sv_err *err)
{
	struct sv_doodle_grid g;
	sv_doodle_grid_init(&g, 4, 3, -2);
	sv_err_clear(err);
	int rc = sv_doodle_text_parse(pal, (const uint8_t *)text, strlen(text), &g, err);
	if (!rc && (g.px[0] != 0 || g.px[5] != 1 || g.px[6] != 1 || g.px[1] != SV_DOODLE_EMPTY))
		rc = 1;
	sv_doodle_grid_fini(&g);
	return rc;
}

static void text_example(void)
{
	struct sv_palette pal;
	struct sv_doodle_grid g;
	struct sv_err err;
	struct sv_buf b;
	example_palette(&pal);
	sv_doodle_grid_init(&g, 4, 3, -2);
	g.px[0] = 0;
	g.px[5] = g.px[6] = 1;
	sv_buf_init(&b);
	T_UINT(1, sv_doodle_cell_width(pal.n));
	T_INT(0, sv_doodle_text_render(&pal, 0, 3, -2, &g, &b));
	T_UINT(strlen(example), b.len);
	T_UINT(strlen(example), sv_doodle_text_size(&pal, 0, 3, -2, 4));
	T_MEM(example, b.p, strlen(example));
	sv_buf_fini(&b);

	/* What the parser takes. */
	T_INT(0, parse(&pal, example, &err));
	T_INT(0, parse(&pal, "0...\n.11.\n....\n....", &err));
	T_INT(0, parse(&pal, "\n# a comment\n\n0...\r\n.11.\r\n# inside\n....\n....\r\n"
			     "\n\r\n\n# after\n\n", &err));
	/* Every message. */
	T_INT(-EINVAL, parse(&pal, "# x\n0...\n.11\n....\n....\n", &err));
	T_STR("line 3: 3 cells, expected 4", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11..\n....\n....\n", &err));
	T_STR("line 2: 5 cells, expected 4", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n\n....\n....\n", &err));
	T_STR("line 3: 0 cells, expected 4", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n..!.\n....\n", &err));
	T_STR("line 3, column 3: '!' is not a palette code (palette has 2 colours)", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n... \n....\n", &err));
	T_STR("line 3, column 4: ' ' is not a palette code (palette has 2 colours)", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n.\xc3\xa9..\n....\n", &err));
	T_STR("line 3, column 2: '\xc3\xa9' is not a palette code (palette has 2 colours)",
	      err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n\xc3\xa9....\n....\n", &err));
	T_STR("line 3: 5 cells, expected 4", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n\xc3...\n....\n", &err));
	T_STR("line 3, column 1: byte 0xc3 is not a palette code (palette has 2 colours)",
	      err.msg);
	T_INT(-EINVAL, parse(&pal, "# 1\n# 2\n0...\n.11.\n...E\n....\n", &err));
	T_STR("line 5, column 4: index 40 is past the palette (2 colours)", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n.2..\n....\n", &err));
	T_STR("line 3, column 2: index 2 is past the palette (2 colours)", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n..?.\n....\n", &err));
	T_STR("line 3, column 3: '?' is a bad pixel, not a palette code", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n....\n....\n....\n", &err));
	T_STR("5 rows, expected 4", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n\n\n", &err));
	T_STR("2 rows, expected 4", err.msg);
	T_INT(-EINVAL, parse(&pal, "0...\n.11.\n....\n....\n\n....\n", &err));
	T_STR("5 rows, expected 4", err.msg);
	T_INT(-EINVAL, parse(&pal, "# only comments\n", &err));
	T_STR("0 rows, expected 4", err.msg);
	T_INT(-EINVAL, parse(&pal, "", &err));
	T_STR("0 rows, expected 4", err.msg);

	/* A palette of one colour; an empty palette. */
	struct sv_palette one = { 1, pal.v }, none = { 0, NULL };
	T_INT(-EINVAL, parse(&one, "0...\n.11.\n....\n....\n", &err));
	T_STR("line 2, column 2: index 1 is past the palette (1 colour)", err.msg);
	T_INT(-EINVAL, parse(&none, "0...\n....\n....\n....\n", &err));
	T_STR("line 1, column 1: index 0 is past the palette (0 colours)", err.msg);
	T_INT(-EINVAL, parse(NULL, "....\n....\n....\n.!..\n", &err));
	T_STR("line 4, column 2: '!' is not a palette code (palette has 0 colours)", err.msg);

	/* Bad pixels render as '?'; control characters in names as '?'. */
	g.px[15] = SV_DOODLE_BADPIX;
	g.px[14] = 7;
	free(pal.v[1].name);
	pal.v[1].name = strdup("f\ti\x7fr\xc3\xa9");
	pal.v[0].rgba[3] = 0xFE;
	sv_buf_init(&b);
	T_INT(0, sv_doodle_text_render(&pal, 2, 3, -2, &g, &b));
	sv_buf_add(&b, "", 1);
	T_HAS((char *)b.p, "# chunk 3,-2 layer 2 size 4\n");
	T_HAS((char *)b.p, "# 0  #000000fe  solid\n# 1  #ff000080  f?i?r\xc3\xa9\n");
	T_HAS((char *)b.p, "\n....\n..??\n");
	T_UINT(b.len - 1, sv_doodle_text_size(&pal, 2, 3, -2, 4));
	sv_buf_fini(&b);
	sv_doodle_grid_fini(&g);
	sv_doodle_palette_fini(&pal);
}

static void text_round_trips(void)
{
	static const uint32_t npals[] = { 5, 100, 4000 };
	static const char *const empty_line[] = { "# .  empty\n", "# ..  empty\n",
						  "# ...  empty\n" };
	for (unsigned k = 0; k < 3; k++) {
		struct sv_palette pal;
		make_palette(&pal, npals[k]);
		T_UINT(k + 1, sv_doodle_cell_width(pal.n));
		for (int t = 0; t < 10; t++) {
			uint32_t size = 1 + rnd(70);
			int64_t cx = (int64_t)rnd(2001) - 1000, cy = (int64_t)rnd(2001) - 1000;
			struct sv_doodle_grid g, d;
			struct sv_err err;
			struct sv_buf b;
			sv_doodle_grid_init(&g, size, cx, cy);
			sv_doodle_grid_init(&d, size, cx, cy);
			random_grid(&g, pal.n);
			sv_buf_init(&b);
			T_INT(0, sv_doodle_text_render(&pal, k, cx, cy, &g, &b));
			T_UINT(sv_doodle_text_size(&pal, k, cx, cy, size), b.len);
			T_INT(0, sv_doodle_text_parse(&pal, b.p, b.len, &d, &err));
			T_OK(same(&g, &d));
			sv_buf_add(&b, "", 1);
			T_HAS((char *)b.p, empty_line[k]);
			sv_buf_fini(&b);
			sv_doodle_grid_fini(&g);
			sv_doodle_grid_fini(&d);
		}
		/* Codes, most significant digit first. */
		struct sv_doodle_grid g;
		struct sv_buf b;
		struct sv_err err;
		sv_doodle_grid_init(&g, 2, 0, 0);
		g.px[0] = (uint16_t)(npals[k] - 1);
		g.px[1] = 4;
		g.px[3] = SV_DOODLE_BADPIX;
		sv_buf_init(&b);
		sv_doodle_text_render(&pal, 0, 0, 0, &g, &b);
		sv_buf_add(&b, "", 1);
		static const char *const rows[] = { "\n44\n.?\n", "\n1B04\n..??\n",
						    "\n12v004\n...???\n" };
		T_HAS((char *)b.p, rows[k]);
		static const char *const legend[] = { "# 3  ", "# 1A  ", "# 12v  " };
		T_HAS((char *)b.p, legend[k]);
		sv_buf_fini(&b);
		if (k == 1) {
			T_INT(-EINVAL, sv_doodle_text_parse(&pal, (const uint8_t *)"1C04\n....", 10,
							    &g, &err));
			T_STR("line 1, column 1: index 100 is past the palette (100 colours)",
			      err.msg);
			T_INT(-EINVAL, sv_doodle_text_parse(&pal, (const uint8_t *)"1C0\n....", 9,
							    &g, &err));
			T_STR("line 1: 3 characters, expected 4 (2 cells of 2)", err.msg);
			T_INT(-EINVAL, sv_doodle_text_parse(&pal, (const uint8_t *)"1.04\n....", 9,
							    &g, &err));
			T_STR("line 1, column 2: '.' is not a palette code (palette has 100"
			      " colours)", err.msg);
			T_INT(-EINVAL, sv_doodle_text_parse(&pal, (const uint8_t *)"..?0\n....", 9,
							    &g, &err));
			T_STR("line 1, column 3: '?' is a bad pixel, not a palette code", err.msg);
		}
		sv_doodle_grid_fini(&g);
		sv_doodle_palette_fini(&pal);
	}
}

/* ---- PNG ---------------------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The colour a pixel value should show as. */
static void want_rgba(uint16_t v, const struct sv_palette *pal, uint8_t c[4])
{
	uint32_t npal = pal ? pal->n : 0;
	if (v == SV_DOODLE_EMPTY)
		memset(c, 0, 4);
	else if (v < npal)
		memcpy(c, pal->v[v].rgba, 4);
	else
		memcpy(c, "\xff\0\xff\xff", 4);
}

/* Reads the PNG back with zlib: chunk CRCs and order, the stored blocks,
 * then every pixel's colour. */
static void png_check(const uint8_t *p, size_t n, uint32_t w, uint32_t h,
		      const uint16_t *px, const struct sv_palette *pal)
{
	bool ix = (pal ? pal->n : 0) <= 254;
	const uint8_t *plte = NULL, *trns = NULL, *idat = NULL;
	size_t idat_n = 0, at = 8;
	char types[64] = "";
	T_MEM("\x89PNG\r\n\x1a\n", p, 8);
	while (at + 12 <= n && strlen(types) < 50) {
		uint32_t len = be32(p + at);
		const uint8_t *type = p + at + 4, *data = p + at + 8;
		if (len > n - at - 12)
			break;
		T_UINT(crc32(0, type, len + 4), be32(data + len));
		snprintf(types + strlen(types), sizeof types - strlen(types), "%s%.4s",
			 *types ? " " : "", (const char *)type);
		if (!memcmp(type, "IHDR", 4)) {
			T_UINT(13, len);
			T_UINT(w, be32(data));
			T_UINT(h, be32(data + 4));
			T_MEM(ix ? "\x08\x03\0\0\0" : "\x08\x06\0\0\0", data + 8, 5);
		} else if (!memcmp(type, "PLTE", 4)) {
			plte = data;
			T_UINT(3 * (pal ? pal->n + 2 : 2), len);
		} else if (!memcmp(type, "tRNS", 4)) {
			trns = data;
			T_UINT(pal ? pal->n + 2 : 2, len);
		} else if (!memcmp(type, "IDAT", 4)) {
			idat = data;
			idat_n = len;
		}
		at += 12 + len;
	}
	T_UINT(n, at);
	T_STR(ix ? "IHDR PLTE tRNS IDAT IEND" : "IHDR IDAT IEND", types);
	if (!idat)
		return;

	/* 78 01, then stored blocks of at most 65535 bytes, the last final. */
	size_t row = 1 + (size_t)w * (ix ? 1 : 4), raw_n = row * h, got = 0, blocks = 0;
	size_t q = 2;
	T_MEM("\x78\x01", idat, 2);
	while (q + 5 <= idat_n && got < raw_n) {
		unsigned len = idat[q + 1] | idat[q + 2] << 8, nlen = idat[q + 3] | idat[q + 4] << 8;
		T_UINT(len ^ 0xFFFF, nlen);
		got += len;
		T_UINT(got == raw_n, idat[q]);
		q += 5 + len;
		blocks++;
	}
	T_UINT(raw_n, got);
	T_UINT((raw_n + 65534) / 65535, blocks);
	T_UINT(idat_n, q + 4);

	uint8_t *raw = malloc(raw_n);
	uLongf len = raw_n;
	T_INT(Z_OK, uncompress(raw, &len, idat, idat_n));
	T_UINT(raw_n, len);
	size_t bad = 0;
	for (uint32_t y = 0; y < h; y++) {
		bad += raw[y * row] != 0;
		for (uint32_t x = 0; x < w; x++) {
			uint8_t c[4], g[4];
			const uint8_t *r = raw + y * row + 1;
			want_rgba(px[(size_t)y * w + x], pal, c);
			if (ix && plte && trns) {
				memcpy(g, plte + 3 * r[x], 3);
				g[3] = trns[r[x]];
			} else {
				memcpy(g, r + 4 * x, 4);
			}
			bad += !!memcmp(c, g, 4);
		}
	}
	T_UINT(0, bad);
	free(raw);
}

static const char png_py[] =
	"import struct, sys, zlib\n"
	"d = open(sys.argv[1], \"rb\").read()\n"
	"assert d[:8] == b\"\\x89PNG\\r\\n\\x1a\\n\"\n"
	"at, types, idat, plte, trns = 8, [], b\"\", b\"\", b\"\"\n"
	"while at < len(d):\n"
	"    n, t = struct.unpack(\">I4s\", d[at:at + 8])\n"
	"    body = d[at + 8:at + 8 + n]\n"
	"    assert zlib.crc32(t + body) == struct.unpack(\">I\", d[at + 8 + n:at + 12 + n])[0]\n"
	"    types.append(t.decode())\n"
	"    if t == b\"IHDR\": w, h, depth, ct = struct.unpack(\">IIBB\", body[:10])\n"
	"    if t == b\"PLTE\": plte = body\n"
	"    if t == b\"tRNS\": trns = body\n"
	"    if t == b\"IDAT\": idat += body\n"
	"    at += 12 + n\n"
	"raw, bpp, out = zlib.decompress(idat), 1 if ct == 3 else 4, []\n"
	"for y in range(h):\n"
	"    r = raw[y * (1 + w * bpp):(y + 1) * (1 + w * bpp)]\n"
	"    assert r[0] == 0\n"
	"    for x in range(w):\n"
	"        i = r[1 + x] if ct == 3 else 0\n"
	"        out.append((plte[3 * i:3 * i + 3] + bytes([trns[i]]) if ct == 3\n"
	"                    else r[1 + 4 * x:5 + 4 * x]).hex())\n"
	"print(\" \".join(types), w, h, depth, ct, \"\".join(out))\n";

/* Runs cmd and returns its first line of output in buf ("" if none). */
static void run(const char *cmd, char *buf, size_t n)
{
	FILE *f = popen(cmd, "r");
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)n, f))
			buf[0] = '\0';
		pclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

/* python3's zlib and file(1) read what we wrote. */
static void png_external(const uint8_t *p, size_t n, uint32_t w, uint32_t h,
			 const uint16_t *px, const struct sv_palette *pal)
{
	char png[] = "/tmp/savefs-test-png-XXXXXX", py[] = "/tmp/savefs-test-py-XXXXXX";
	int fd = mkstemp(png), fd2 = mkstemp(py);
	T_OK(fd >= 0 && fd2 >= 0);
	if (fd < 0 || fd2 < 0)
		return;
	T_INT(0, sv_write_all(fd, p, n));
	T_INT(0, sv_write_all(fd2, png_py, strlen(png_py)));
	close(fd);
	close(fd2);
	char cmd[256], out[8192];
	if (system("command -v python3 >/dev/null 2>&1") == 0) {
		bool ix = (pal ? pal->n : 0) <= 254;
		struct sv_buf want;
		sv_buf_init(&want);
		sv_buf_printf(&want, "%s %u %u 8 %d ",
			      ix ? "IHDR PLTE tRNS IDAT IEND" : "IHDR IDAT IEND", w, h, ix ? 3 : 6);
		for (size_t i = 0; i < (size_t)w * h; i++) {
			uint8_t c[4];
			want_rgba(px[i], pal, c);
			sv_buf_printf(&want, "%02x%02x%02x%02x", c[0], c[1], c[2], c[3]);
		}
		sv_buf_add(&want, "", 1);
		snprintf(cmd, sizeof cmd, "python3 %s %s 2>&1", py, png);
		run(cmd, out, sizeof out);
		T_STR((char *)want.p, out);
		sv_buf_fini(&want);
	} else {
		fprintf(stderr, "note: python3 not found; PNG cross-check skipped\n");
	}
	if (system("command -v file >/dev/null 2>&1") == 0) {
		char dims[64];
		snprintf(cmd, sizeof cmd, "file -b %s", png);
		run(cmd, out, sizeof out);
		snprintf(dims, sizeof dims, "PNG image data, %u x %u, 8-bit", w, h);
		T_HAS(out, dims);
	}
	unlink(png);
	unlink(py);
}

static void pngs(void)
{
	static const struct {
		uint32_t w, h, npal;
	} cases[] = {
		{ 1, 1, 0 }, { 7, 5, 3 }, { 128, 128, 62 }, { 300, 300, 254 },
		{ 65534, 1, 1 }, { 65535, 1, 1 }, { 200, 200, 255 }, { 33, 17, 4000 },
		{ 1, 70000, 2 },
	};
	T_UINT(102, sv_png_size(1, 1, 0)); /* 8 + 25 + 18 + 14 + 25 + 12 */
	T_UINT(8 + 25 + 12 + 2 + 5 + 9 + 4 + 12, sv_png_size(2, 1, 255)); /* RGBA */
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		uint32_t w = cases[i].w, h = cases[i].h;
		struct sv_palette pal;
		make_palette(&pal, cases[i].npal);
		uint16_t *px = malloc((size_t)w * h * sizeof *px);
		for (size_t k = 0; k < (size_t)w * h; k++) {
			uint32_t r = rnd(cases[i].npal + 3);
			px[k] = r < cases[i].npal ? (uint16_t)r
				: r == cases[i].npal ? SV_DOODLE_BADPIX
				: r == cases[i].npal + 1 ? (uint16_t)(cases[i].npal + 7)
				: SV_DOODLE_EMPTY;
		}
		struct sv_buf b;
		sv_buf_init(&b);
		sv_buf_add(&b, "x", 1); /* appends after what is there */
		T_INT(0, sv_png_encode(w, h, px, cases[i].npal ? &pal : NULL, &b));
		T_UINT(sv_png_size(w, h, cases[i].npal), b.len - 1);
		png_check(b.p + 1, b.len - 1, w, h, px, cases[i].npal ? &pal : NULL);
		if (w * h < 2000)
			png_external(b.p + 1, b.len - 1, w, h, px, cases[i].npal ? &pal : NULL);
		sv_buf_fini(&b);
		free(px);
		sv_doodle_palette_fini(&pal);
	}
	struct sv_buf b;
	sv_buf_init(&b);
	uint16_t px = 0;
	T_INT(-EINVAL, sv_png_encode(0, 1, &px, NULL, &b));
	T_INT(-EINVAL, sv_png_encode(1, 0, &px, NULL, &b));
	T_INT(-EFBIG, sv_png_encode(1u << 16, 1u << 15, &px, NULL, &b));
	T_UINT(0, b.len);
	T_UINT(0, sv_png_size(0, 5, 1));
	T_UINT(0, sv_png_size(UINT32_MAX, UINT32_MAX, 300));
	T_OK(sv_png_size(1023, 1u << 20, 1) > (1u << 30)); /* exactly 1 GiB raw */
	T_UINT(0, sv_png_size(1023, (1u << 20) + 1, 1));
	sv_buf_fini(&b);
}

/* ---- base64 and gzip ------------------------------------------------------------------ */

static void base64(void)
{
	static const char *const vec[][2] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
		{ "\xff\xfe\xfd", "//79" }, { "\xfb\xff", "+/8=" },
	};
	struct sv_buf b;
	struct sv_err err;
	for (size_t i = 0; i < sizeof vec / sizeof *vec; i++) {
		size_t n = strlen(vec[i][0]), m = strlen(vec[i][1]);
		sv_buf_init(&b);
		T_INT(0, sv_base64_encode((const uint8_t *)vec[i][0], n, &b));
		T_UINT(m, b.len);
		T_MEM(vec[i][1], b.p, m);
		b.len = 0;
		T_INT(0, sv_base64_decode(vec[i][1], m, &b, &err));
		T_UINT(n, b.len);
		T_MEM(vec[i][0], b.p, n);
		T_INT(n, sv_base64_decoded_size(vec[i][1], m));
		sv_buf_fini(&b);
	}
	static const char *const loose[][2] = {
		{ "Zg", "f" }, { "Zm8", "fo" }, { " Zm9v\nYmFy\r\n", "foobar" },
		{ "Zg =\t=\n", "f" }, { "Zm8=\n", "fo" },
	};
	for (size_t i = 0; i < sizeof loose / sizeof *loose; i++) {
		sv_buf_init(&b);
		T_INT(0, sv_base64_decode(loose[i][0], strlen(loose[i][0]), &b, &err));
		T_UINT(strlen(loose[i][1]), b.len);
		T_MEM(loose[i][1], b.p, b.len);
		T_INT(strlen(loose[i][1]), sv_base64_decoded_size(loose[i][0], strlen(loose[i][0])));
		sv_buf_fini(&b);
	}
	static const char *const bad[][2] = {
		{ "Zm9v!", "base64: byte 4: '!' is not base64" },
		{ "Zm9v\0", "base64: byte 4: byte 0x00 is not base64" },
		{ "Z", "base64: 1 characters and 0 '=' are not whole bytes" },
		{ "Zm9vY", "base64: 5 characters and 0 '=' are not whole bytes" },
		{ "Zm8==", "base64: 3 characters and 2 '=' are not whole bytes" },
		{ "Zg=", "base64: 2 characters and 1 '=' are not whole bytes" },
		{ "Zg=a", "base64: byte 3: 'a' after the padding" },
		{ "Zg===", "base64: byte 4: '=' after the padding" },
		{ "=Zg", "base64: byte 0: '=' out of place" },
		{ "Zm9v-_", "base64: byte 4: '-' is not base64" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		size_t n = strlen(bad[i][0]) + (i == 1);
		sv_buf_init(&b);
		sv_buf_add(&b, "keep", 4);
		sv_err_clear(&err);
		T_INT(-EBADMSG, sv_base64_decode(bad[i][0], n, &b, &err));
		T_STR(bad[i][1], err.msg);
		T_UINT(4, b.len);
		T_INT(-1, sv_base64_decoded_size(bad[i][0], n));
		sv_buf_fini(&b);
	}
	/* random round trips */
	for (int t = 0; t < 200; t++) {
		uint8_t p[300];
		size_t n = rnd(sizeof p);
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)rnd(256);
		struct sv_buf e, d;
		sv_buf_init(&e);
		sv_buf_init(&d);
		sv_base64_encode(p, n, &e);
		T_INT(0, sv_base64_decode((const char *)e.p, e.len, &d, &err) ||
			 d.len != n || (n && memcmp(p, d.p, n)));
		sv_buf_fini(&e);
		sv_buf_fini(&d);
	}
}

static void gzip(void)
{
	enum { N = 3 << 20 };
	uint8_t *p = malloc(N);
	for (size_t i = 0; i < N; i++)
		p[i] = (uint8_t)(i % 251 < 200 ? i / 1000 : rnd(256));
	struct sv_buf z, d;
	struct sv_err err;
	const size_t sizes[] = { 0, 1, 1000, N };
	for (size_t k = 0; k < 4; k++) {
		size_t n = sizes[k];
		sv_buf_init(&z);
		sv_buf_init(&d);
		T_INT(0, sv_gzip(p, n, &z));
		T_MEM("\x1f\x8b\x08", z.p, 3);
		T_INT(0, sv_gunzip(z.p, z.len, n, &d, &err));
		T_UINT(n, d.len);
		T_MEM(p, d.p, n);
		if (n) {
			d.len = 0;
			T_INT(-EFBIG, sv_gunzip(z.p, z.len, n - 1, &d, &err));
			T_UINT(0, d.len);
			char want[64];
			snprintf(want, sizeof want, "gzip: more than %zu bytes", n - 1);
			T_STR(want, err.msg);
		}
		sv_buf_fini(&z);
		sv_buf_fini(&d);
	}
	/* damage: truncated, corrupt, not gzip, trailing bytes; out is kept */
	sv_buf_init(&z);
	sv_gzip(p, 5000, &z);
	sv_buf_init(&d);
	sv_buf_add(&d, "keep", 4);
	T_INT(-EBADMSG, sv_gunzip(z.p, z.len - 3, UINT64_MAX, &d, &err));
	T_HAS(err.msg, "gzip: truncated");
	T_UINT(4, d.len);
	T_INT(-EBADMSG, sv_gunzip(z.p, 0, UINT64_MAX, &d, &err));
	T_STR("gzip: truncated after 0 bytes", err.msg);
	T_INT(-EBADMSG, sv_gunzip((const uint8_t *)"hello, world", 12, 100, &d, &err));
	T_STR("gzip: incorrect header check at byte 2", err.msg);
	z.p[z.len / 2] ^= 0x55;
	T_INT(-EBADMSG, sv_gunzip(z.p, z.len, UINT64_MAX, &d, &err));
	T_HAS(err.msg, "gzip: ");
	z.p[z.len / 2] ^= 0x55;
	z.p[z.len - 8] ^= 1; /* the CRC */
	T_INT(-EBADMSG, sv_gunzip(z.p, z.len, UINT64_MAX, &d, &err));
	T_HAS(err.msg, "gzip: incorrect data check");
	z.p[z.len - 8] ^= 1;
	sv_buf_add(&z, "XY", 2);
	T_INT(-EBADMSG, sv_gunzip(z.p, z.len, UINT64_MAX, &d, &err));
	T_STR("gzip: 2 bytes after the end of the stream", err.msg);
	T_UINT(4, d.len);
	T_INT(0, sv_gunzip(z.p, z.len - 2, 5000, &d, &err));
	T_UINT(5004, d.len);
	T_MEM(p, d.p + 4, 5000);
	sv_buf_fini(&z);
	sv_buf_fini(&d);
	free(p);
}

/* The text size is counted, not formatted: it must match the rendering at
 * the extremes of the coordinates, layers and widths too. */
static void text_size_extremes(void)
{
	static const int64_t cs[] = {INT32_MIN, INT32_MIN + 1, -1000000, -10, -1, 0, 9, 10,
				     99999, INT32_MAX};
	static const uint32_t sizes[] = {1, 9, 10, 130};
	static const uint32_t npals[] = {0, 5, 62, 63, 3844, 3845};
	static const unsigned layers[] = {0, 9, 10, 4095};
	for (size_t p = 0; p < sizeof npals / sizeof *npals; p++) {
		struct sv_palette pal;
		make_palette(&pal, npals[p]);
		uint64_t legend = sv_doodle_legend_size(&pal);
		for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
			struct sv_doodle_grid g;
			T_INT(0, sv_doodle_grid_init(&g, sizes[z], 0, 0));
			for (size_t a = 0; a < sizeof cs / sizeof *cs; a++)
				for (size_t l = 0; l < sizeof layers / sizeof *layers; l++) {
					int64_t cx = cs[a], cy = cs[(a + 3) % (sizeof cs / sizeof *cs)];
					g.x0 = cx * sizes[z];
					g.y0 = cy * sizes[z];
					struct sv_buf b;
					sv_buf_init(&b);
					T_INT(0, sv_doodle_text_render(&pal, layers[l], cx, cy, &g, &b));
					T_UINT(b.len, sv_doodle_text_size(&pal, layers[l], cx, cy,
									  sizes[z]));
					T_UINT(b.len, sv_doodle_text_size_with(&pal, legend, layers[l],
									       cx, cy, sizes[z]));
					sv_buf_fini(&b);
				}
			sv_doodle_grid_fini(&g);
		}
		sv_doodle_palette_fini(&pal);
	}
}

int main(void)
{
	grids();
	rle_vectors();
	map_vectors();
	xy();
	json_chunks();
	round_trips();
	colours();
	text_example();
	text_round_trips();
	text_size_extremes();
	pngs();
	base64();
	gzip();
	return t_done();
}
