/*
 * fuzz_doodle_chunk.c - libFuzzer target for the doodle chunk codecs
 * (core/fmt/sketchy/doodle_codec.c, png.c), without a container around them.
 *
 * The first 6 bytes are parameters, the rest the payload:
 *
 *   byte 0     chunk size: 1 + b % 130
 *   bytes 1-2  palette size: (b1 | b2 << 8) % 4000 (cells 1, 2 and 3 wide)
 *   byte 3, 4  chunk x, y as signed bytes, times 4^(byte 5 & 15) (so up to
 *              about 2^37: past int32, which keys cannot say but the
 *              grid and text must still handle)
 *
 * The payload is decoded as a binary chunk (sv_doodle_bin_decode); for a
 * grid that decodes, these must hold (abort() otherwise: real invariants):
 *   - every pixel is an index below the palette, EMPTY or BADPIX, and an
 *     RLE chunk counts exactly its BADPIX pixels in quirks.bad_index;
 *   - with BADPIX made EMPTY, RLE encode then decode gives the same grid
 *     with no quirk at all, in exactly sv_doodle_rle_size bytes;
 *   - the text grid is exactly sv_doodle_text_size bytes, and parses back
 *     to the same grid; with a BADPIX pixel the parse refuses (-EINVAL);
 *   - the PNG is exactly sv_png_size bytes and starts with its signature;
 *   - the JSON chunk encoding decodes to the same grid with no quirk.
 * The payload is also parsed as a text grid, as a JSON chunk (through
 * json_loadb), as base64 (the decoded size agrees with the decode, and
 * encode/decode round-trips), and as a colour.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test`.  Built with -DSKIP_FAR_JSON (run.sh:
 * FUZZ_CFLAGS=-DSKIP_FAR_JSON) the JSON round trip is left out for pixel
 * coordinates past int32, where it fails today (crashers/
 * doodle-chunk-json-key-past-int32): a run can then look for other bugs.
 */
#include "fmt/sketchy/doodle.h"
#include "rd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PAL 4000

static struct sv_swatch pool[MAX_PAL];

/* A palette of n swatches with assorted colours and names: none, plain, a
 * control character, UTF-8, and some not opaque. */
static struct sv_palette palette(uint32_t n)
{
	static bool ready;
	static char *names[] = {"", "solid", "a\tb", "\xc3\xa9t\xc3\xa9", "fire"};
	if (!ready) {
		for (uint32_t i = 0; i < MAX_PAL; i++) {
			pool[i].name = names[i % 5];
			pool[i].rgba[0] = (uint8_t)(i * 37);
			pool[i].rgba[1] = (uint8_t)(i * 91);
			pool[i].rgba[2] = (uint8_t)(i >> 3);
			pool[i].rgba[3] = i % 7 == 3 ? 0x80 : 0xFF;
		}
		ready = true;
	}
	return (struct sv_palette){n, pool};
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_doodle_chunk: %s\n", what);
	abort();
}

static bool same(const struct sv_doodle_grid *a, const struct sv_doodle_grid *b)
{
	return a->size == b->size && a->x0 == b->x0 && a->y0 == b->y0 &&
	       !memcmp(a->px, b->px, (size_t)a->size * a->size * sizeof *a->px);
}

static bool no_quirks(const struct sv_doodle_quirks *q)
{
	return !q->run_clamped && !q->short_by && !q->outside && !q->bad_index && !q->bad_key &&
	       !q->partial;
}

static int new_like(struct sv_doodle_grid *g, const struct sv_doodle_grid *like,
		    int64_t cx, int64_t cy)
{
	if (sv_doodle_grid_init(g, like->size, cx, cy))
		fail("a grid of the same size cannot be made");
	return 0;
}

/* Text render, size and parse back.  g may hold BADPIX. */
static void text_round_trip(const struct sv_palette *pal, const struct sv_doodle_grid *g,
			    int64_t cx, int64_t cy, bool has_bad)
{
	struct sv_buf t;
	sv_buf_init(&t);
	if (sv_doodle_text_render(pal, 0, cx, cy, g, &t))
		fail("text render failed");
	if (t.len != sv_doodle_text_size(pal, 0, cx, cy, g->size))
		fail("text size differs from sv_doodle_text_size");
	struct sv_doodle_grid g2;
	new_like(&g2, g, cx, cy);
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_doodle_text_parse(pal, t.p, t.len, &g2, &err);
	if (has_bad) {
		if (rc != -EINVAL || !err.msg[0])
			fail("a text grid with '?' was not refused");
	} else if (rc) {
		fprintf(stderr, "fuzz_doodle_chunk: %s\n", err.msg);
		fail("a rendered text grid does not parse");
	} else if (!same(g, &g2)) {
		fail("text grid round trip differs");
	}
	sv_doodle_grid_fini(&g2);
	sv_buf_fini(&t);
}

static void check_grid(const struct sv_doodle_grid *g, uint32_t npal, int64_t cx, int64_t cy,
		       uint64_t type, const struct sv_doodle_quirks *q)
{
	size_t total = (size_t)g->size * g->size;
	uint64_t bad = 0;
	for (size_t i = 0; i < total; i++) {
		uint16_t v = g->px[i];
		if (v == SV_DOODLE_BADPIX)
			bad++;
		else if (v != SV_DOODLE_EMPTY && v >= npal)
			fail("a pixel is past the palette but not BADPIX");
	}
	if (type == 1 && bad != q->bad_index)
		fail("RLE: bad_index does not count the BADPIX pixels");
	if (type == 0 && bad > q->bad_index)
		fail("map: fewer bad_index than BADPIX pixels");

	struct sv_palette pal = palette(npal);
	text_round_trip(&pal, g, cx, cy, bad > 0);

	struct sv_buf png;
	sv_buf_init(&png);
	if (sv_png_encode(g->size, g->size, g->px, &pal, &png))
		fail("PNG encode failed");
	if (png.len != sv_png_size(g->size, g->size, npal))
		fail("PNG size differs from sv_png_size");
	if (png.len < 8 || memcmp(png.p, "\x89PNG\r\n\x1a\n", 8))
		fail("PNG signature missing");
	sv_buf_fini(&png);

	/* The grid as savefs writes it: BADPIX left out. */
	struct sv_doodle_grid clean;
	new_like(&clean, g, cx, cy);
	for (size_t i = 0; i < total; i++)
		clean.px[i] = g->px[i] == SV_DOODLE_BADPIX ? SV_DOODLE_EMPTY : g->px[i];

	struct sv_buf rle;
	sv_buf_init(&rle);
	if (sv_doodle_rle_encode(&clean, &rle))
		fail("RLE encode failed");
	if (rle.len != sv_doodle_rle_size(&clean))
		fail("RLE length differs from sv_doodle_rle_size");
	struct sv_doodle_grid back;
	new_like(&back, g, cx, cy);
	struct sv_doodle_quirks q2;
	memset(&q2, 0, sizeof q2);
	struct sv_err err;
	sv_err_clear(&err);
	if (sv_doodle_bin_decode(rle.p, rle.len, npal, &back, &q2, &err))
		fail("re-encoded RLE does not decode");
	if (!no_quirks(&q2))
		fail("re-encoded RLE decodes with quirks");
	if (!same(&clean, &back))
		fail("RLE round trip differs");
	sv_buf_fini(&rle);
	if (bad)
		text_round_trip(&pal, &clean, cx, cy, false);

	/* The JSON chunk the game reads. */
#ifdef SKIP_FAR_JSON
	int64_t far = (int64_t)1 << 31;
	if (g->x0 < -far || g->y0 < -far || g->x0 + g->size > far || g->y0 + g->size > far) {
		sv_doodle_grid_fini(&back);
		sv_doodle_grid_fini(&clean);
		return;
	}
#endif
	json_t *j = sv_doodle_json_encode(&clean);
	if (!j)
		fail("JSON encode failed");
	struct sv_doodle_grid jg;
	new_like(&jg, g, cx, cy);
	memset(&q2, 0, sizeof q2);
	if (sv_doodle_json_decode(j, npal, &jg, &q2, &err))
		fail("encoded JSON chunk does not decode");
	if (!no_quirks(&q2) || !same(&clean, &jg))
		fail("JSON chunk round trip differs");
	json_decref(j);
	sv_doodle_grid_fini(&jg);
	sv_doodle_grid_fini(&back);
	sv_doodle_grid_fini(&clean);
}

static void base64_checks(const uint8_t *p, size_t n)
{
	struct sv_buf out, enc, again;
	sv_buf_init(&out);
	sv_buf_init(&enc);
	sv_buf_init(&again);
	struct sv_err err;
	int64_t want = sv_base64_decoded_size((const char *)p, n);
	int rc = sv_base64_decode((const char *)p, n, &out, &err);
	if ((want < 0) != (rc != 0))
		fail("base64: decoded size and decode disagree on validity");
	if (!rc) {
		if ((uint64_t)want != out.len)
			fail("base64: decoded size differs from the decode");
		if (sv_base64_encode(out.p, out.len, &enc))
			fail("base64: encode failed");
		if (sv_base64_decode((const char *)enc.p, enc.len, &again, &err) ||
		    again.len != out.len || (out.len && memcmp(again.p, out.p, out.len)))
			fail("base64: round trip differs");
	}
	sv_buf_fini(&out);
	sv_buf_fini(&enc);
	sv_buf_fini(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 6)
		return 0;
	uint32_t csize = 1 + data[0] % 130;
	uint32_t npal = (uint32_t)(data[1] | data[2] << 8) % MAX_PAL;
	int64_t mult = (int64_t)1 << ((data[5] & 15) * 2);
	int64_t cx = (int8_t)data[3] * mult, cy = (int8_t)data[4] * mult;
	const uint8_t *p = data + 6;
	size_t n = size - 6;

	struct sv_doodle_grid g;
	if (sv_doodle_grid_init(&g, csize, cx, cy))
		return 0; /* the origin does not fit in 64 bits */
	struct sv_doodle_quirks q;
	memset(&q, 0, sizeof q);
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_doodle_bin_decode(p, n, npal, &g, &q, &err);
	if (rc) {
		if (rc >= 0 || !err.msg[0])
			fail("a refused chunk does not say why");
	} else {
		struct sv_rd r;
		sv_rd_init(&r, p, n);
		uint64_t type = sv_rd_uleb64(&r);
		check_grid(&g, npal, cx, cy, type, &q);
	}
	sv_doodle_grid_fini(&g);

	/* The payload as a text grid. */
	struct sv_palette pal = palette(npal);
	if (sv_doodle_grid_init(&g, csize, cx, cy))
		return 0;
	sv_err_clear(&err);
	rc = sv_doodle_text_parse(&pal, p, n, &g, &err);
	if (rc) {
		if (rc != -EINVAL || !err.msg[0])
			fail("a refused text grid does not say why");
	} else {
		text_round_trip(&pal, &g, cx, cy, false);
	}
	sv_doodle_grid_fini(&g);

	/* The payload as a JSON chunk. */
	json_t *j = json_loadb((const char *)p, n, 0, NULL);
	if (j) {
		if (sv_doodle_grid_init(&g, csize, cx, cy))
			abort();
		memset(&q, 0, sizeof q);
		sv_err_clear(&err);
		rc = sv_doodle_json_decode(j, npal, &g, &q, &err);
		if (rc && (rc >= 0 || !err.msg[0]))
			fail("a refused JSON chunk does not say why");
		if (!rc)
			check_grid(&g, npal, cx, cy, 0, &q);
		sv_doodle_grid_fini(&g);
		json_decref(j);
	}

	base64_checks(p, n);

	/* The payload as a colour (short, NUL-terminated) and a chunk key. */
	char s[24];
	size_t k = n < sizeof s - 1 ? n : sizeof s - 1;
	memcpy(s, p, k);
	s[k] = '\0';
	uint8_t rgba[4];
	sv_doodle_colour_parse(s, rgba);
	int64_t x, y;
	if (sv_doodle_parse_xy(s, &x, &y) && (x < INT32_MIN || x > INT32_MAX || y < INT32_MIN ||
					       y > INT32_MAX))
		fail("a key past int32 was accepted");
	return 0;
}
