/*
 * mkdoodle - makes Sketchy Maze levels, doodads and levelpacks with
 * savefs's own encoders (core/fmt/sketchy/doodle.h), for fixtures and benchmarks.
 * Facts: ../shared/formats/doodle.md.  The output depends only on the
 * arguments: the pixels come from a xorshift generator seeded per chunk,
 * and zip members carry a fixed time.
 *
 *   mkdoodle level OUT [options]
 *       A level: --count chunks of --size pixels on a grid around the
 *       origin (with --negative, half of them in the three quadrants with
 *       a negative coordinate), in layer 0.
 *   mkdoodle doodad OUT [options]
 *       A doodad of --layers layers, each one chunk 0,0 of --size pixels
 *       (default 32), each with its own pixels.
 *   mkdoodle pack OUT LEVELFILE... [--doodad FILE...] [--title T]
 *                 [--descriptors]
 *       A .levelpack: index.json, then levels/<basename> and
 *       doodads/<basename>, each nested file stored as it is (deflated).
 *
 * Options for level and doodad:
 *   --container json|gzip|zip  v1 JSON, v2 gzipped JSON, or zip (default)
 *   --chunks rle|map|json|mixed
 *                   zip members: .bin type 1 (RLE), .bin type 0 (map
 *                   accessor, absolute coordinates), .json {"type":0,
 *                   "data":{"x,y":i}}, or rle/map/json in turn.  Inline
 *                   chunks (json, gzip, --inline) are JSON: json is the
 *                   object form, map the base64 form, mixed alternates;
 *                   rle cannot be inline.  Default rle for zip members,
 *                   json inline.
 *   --count N       chunks in a level (default 4)
 *   --size S        chunk size (default 128 for a level, 32 for a doodad)
 *   --palette N     swatches (default 8; 1 to 65534)
 *   --seed N        the generator's seed (default 1)
 *   --negative      half the chunks at negative coordinates
 *   --dense-every K every K-th chunk (K-th, 2K-th, ...) dense: short runs of
 *                   random indices and gaps over the whole chunk; the others
 *                   sparse: a few strokes
 *   --inline        in a zip, the chunks inline in level.json, no members
 *   --descriptors   zip members with data descriptors (flag 8), as Go writes
 *   --assets N      attached files: assets/screenshots/large.png (a tiny
 *                   PNG), then assets/wallpapers/w<i>.txt
 *   --title T       the title
 *   --layers N      a doodad's layers (default 2)
 * A doodad ignores --count and --negative.
 * Extras for decoder tests:
 *   --odd-palette   colours as #rgb, #rgba, #rrggbbaa, upper case, one that
 *                   does not parse; names with a tab, UTF-8, one empty
 *   --bad-pixels    a few pixels per chunk with the index past the palette
 *   --short-rle     RLE chunks one pixel short (the final run of one pixel
 *                   dropped, as the game's encoder can do)
 *
 * Prints nothing on success; a message and exit 1 on failure; usage and
 * exit 2 on bad arguments.
 */
#include "fmt/sketchy/doodle.h"
#include "rd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define USAGE                                                                          \
	"usage: mkdoodle level OUT [--container json|gzip|zip] [--chunks rle|map|json|mixed]\n" \
	"                [--count N] [--size S] [--palette N] [--seed N] [--negative]\n"     \
	"                [--dense-every K] [--inline] [--descriptors] [--assets N]\n"        \
	"                [--title T] [--odd-palette] [--bad-pixels] [--short-rle]\n"         \
	"       mkdoodle doodad OUT [--layers N] [--size S] [same options]\n"                \
	"       mkdoodle pack OUT LEVELFILE... [--doodad FILE...] [--title T] [--descriptors]\n"

enum container { C_JSON, C_GZIP, C_ZIP };
enum encoding { E_RLE, E_MAP, E_JSON, E_MIXED, E_DEFAULT };
/* How one chunk is stored. */
enum form { F_RLE, F_MAP, F_JSON, F_MAP64 };

struct opts {
	bool doodad;
	enum container container;
	enum encoding chunks;
	long count, layers, dense_every, assets;
	uint32_t size, palette;
	uint64_t seed;
	bool negative, inline_chunks, descriptors, odd_palette, bad_pixels, short_rle;
	const char *title;
};

/* A message and exit status 1 (the callers return it from main). */
static int fail(const char *what, const char *why)
{
	fprintf(stderr, "mkdoodle: %s%s%s\n", what, why ? ": " : "", why ? why : "");
	return 1;
}

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "mkdoodle: %s\n", why);
	fputs(USAGE, stderr);
	return 2;
}

/* ---- the generator --------------------------------------------------------- */

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A generator for one purpose (chunk i of a layer, say), so a chunk's
 * pixels do not depend on how the others are stored. */
static uint64_t stream(uint64_t seed, uint64_t a, uint64_t b)
{
	uint64_t s = 88172645463325252ull ^ (seed * 0x9e3779b97f4a7c15ull) ^
		     ((a + 1) * 0xbf58476d1ce4e5b9ull) ^ ((b + 7) * 0x94d049bb133111ebull);
	if (!s)
		s = 1;
	for (int k = 0; k < 4; k++)
		next(&s);
	return s;
}

static uint32_t below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(next(s) % n);
}

static void plot(struct sv_doodle_grid *g, int64_t x, int64_t y, uint16_t v)
{
	if (x >= 0 && y >= 0 && x < g->size && y < g->size)
		g->px[(size_t)y * g->size + (size_t)x] = v;
}

/* A few strokes: straight lines (Bresenham), some two pixels thick. */
static void sparse(struct sv_doodle_grid *g, uint64_t *s, uint32_t npal)
{
	unsigned strokes = 1 + below(s, 4);
	int64_t n = g->size, reach = n / 3 + 1;
	for (unsigned k = 0; k < strokes; k++) {
		uint16_t v = (uint16_t)below(s, npal);
		int64_t x0 = below(s, (uint32_t)n), y0 = below(s, (uint32_t)n);
		int64_t x1 = x0 + (int64_t)below(s, (uint32_t)(2 * reach + 1)) - reach;
		int64_t y1 = y0 + (int64_t)below(s, (uint32_t)(2 * reach + 1)) - reach;
		bool thick = below(s, 3) == 0;
		int64_t dx = llabs(x1 - x0), dy = -llabs(y1 - y0);
		int64_t sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, e = dx + dy;
		for (;;) {
			plot(g, x0, y0, v);
			if (thick)
				plot(g, x0 + 1, y0, v);
			if (x0 == x1 && y0 == y1)
				break;
			int64_t e2 = 2 * e;
			if (e2 >= dy)
				e += dy, x0 += sx;
			if (e2 <= dx)
				e += dx, y0 += sy;
		}
	}
}

/* Short runs over the whole chunk: random indices, one run in five empty. */
static void dense(struct sv_doodle_grid *g, uint64_t *s, uint32_t npal)
{
	size_t total = (size_t)g->size * g->size, i = 0;
	while (i < total) {
		uint64_t r = next(s);
		size_t run = 1 + (size_t)(r % 12);
		uint16_t v = (r >> 8) % 5 == 0 ? SV_DOODLE_EMPTY : (uint16_t)((r >> 16) % npal);
		for (size_t k = 0; k < run && i < total; k++)
			g->px[i++] = v;
	}
}

/* Fills g (all empty) with chunk number i of layer `layer`. */
static void draw(const struct opts *o, unsigned layer, uint64_t i, struct sv_doodle_grid *g)
{
	uint64_t s = stream(o->seed, i, layer);
	bool is_dense = o->dense_every > 0 && (i + 1) % (uint64_t)o->dense_every == 0;
	if (is_dense)
		dense(g, &s, o->palette);
	else
		sparse(g, &s, o->palette);
	if (o->bad_pixels)
		for (uint32_t k = 0; k < 3; k++) {
			/* Just past the palette, and one further when that is not
			 * SV_DOODLE_BADPIX, which no encoder takes. */
			uint32_t v = o->palette + k % 2 < SV_DOODLE_BADPIX ? o->palette + k % 2
									: o->palette;
			plot(g, below(&s, g->size), below(&s, g->size), (uint16_t)v);
		}
	if (o->short_rle && g->size * g->size >= 2) {
		/* The last pixel differs from the one before, so the final run is
		 * one pixel long and can be dropped. */
		size_t last = (size_t)g->size * g->size - 1;
		uint16_t before = g->px[last - 1];
		g->px[last] = before == 0 ? (o->palette > 1 ? 1 : SV_DOODLE_EMPTY) : 0;
	}
}

/* ---- chunk encodings ------------------------------------------------------- */

/* Map-accessor triples (zigzag x, zigzag y, uvarint index, absolute world
 * coordinates) of g's non-empty pixels, in a shuffled order: the game
 * writes them in Go's map order. */
static int map_encode(const struct sv_doodle_grid *g, uint64_t *s, struct sv_buf *out)
{
	size_t total = (size_t)g->size * g->size, n = 0;
	uint32_t *at = malloc((total ? total : 1) * sizeof *at);
	if (!at)
		return -ENOMEM;
	for (size_t i = 0; i < total; i++)
		if (g->px[i] != SV_DOODLE_EMPTY)
			at[n++] = (uint32_t)i;
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(next(s) % i);
		uint32_t t = at[i - 1];
		at[i - 1] = at[j];
		at[j] = t;
	}
	int rc = 0;
	for (size_t k = 0; k < n && !rc; k++) {
		int64_t x = g->x0 + (int64_t)(at[k] % g->size);
		int64_t y = g->y0 + (int64_t)(at[k] / g->size);
		rc = sv_put_leb(out, sv_zigzag(x));
		if (!rc)
			rc = sv_put_leb(out, sv_zigzag(y));
		if (!rc)
			rc = sv_put_leb(out, g->px[at[k]]);
	}
	free(at);
	return rc;
}

/* The bytes of a .bin member (F_RLE, F_MAP). */
static int bin_encode(const struct opts *o, const struct sv_doodle_grid *g, enum form f,
		      uint64_t *s, struct sv_buf *out)
{
	if (f == F_MAP) {
		int rc = sv_put_leb(out, 0);
		return rc ? rc : map_encode(g, s, out);
	}
	size_t start = out->len;
	int rc = sv_doodle_rle_encode(g, out);
	if (rc || !o->short_rle)
		return rc;
	/* Drop the final pair: uvarint(last index) and the run 01. */
	struct sv_buf last;
	sv_buf_init(&last);
	rc = sv_put_leb(&last, g->px[(size_t)g->size * g->size - 1]);
	size_t drop = last.len + 1;
	sv_buf_fini(&last);
	if (!rc && out->len - start > drop && out->p[out->len - 1] == 1)
		out->len -= drop;
	return rc;
}

/* A JSON chunk: F_JSON the object form, F_MAP64 "data" as base64 of the
 * map-accessor bytes.  NULL if out of memory. */
static json_t *json_chunk(const struct sv_doodle_grid *g, enum form f, uint64_t *s)
{
	if (f == F_JSON)
		return sv_doodle_json_encode(g);
	struct sv_buf raw, b64;
	sv_buf_init(&raw);
	sv_buf_init(&b64);
	json_t *j = NULL;
	if (!map_encode(g, s, &raw) && !sv_base64_encode(raw.p, raw.len, &b64))
		j = json_pack("{s:i,s:s%}", "type", 0, "data", b64.len ? (char *)b64.p : "",
			      b64.len);
	sv_buf_fini(&b64);
	sv_buf_fini(&raw);
	return j;
}

static bool inline_chunks(const struct opts *o)
{
	return o->container != C_ZIP || o->inline_chunks;
}

/* The form of chunk i. */
static enum form form_of(const struct opts *o, uint64_t i)
{
	if (inline_chunks(o)) {
		if (o->chunks == E_MAP)
			return F_MAP64;
		if (o->chunks == E_MIXED)
			return i % 2 ? F_MAP64 : F_JSON;
		return F_JSON;
	}
	switch (o->chunks) {
	case E_MAP:
		return F_MAP;
	case E_JSON:
		return F_JSON;
	case E_MIXED:
		return i % 3 == 0 ? F_RLE : i % 3 == 1 ? F_MAP : F_JSON;
	default:
		return F_RLE;
	}
}

/* ---- the drawing ------------------------------------------------------------ */

/* Everything written into the container besides the root JSON. */
struct out {
	struct sv_zip_writer zw; /* zip containers */
	struct sv_buf zmem;
	json_t *files;           /* the root's "files" (inline containers) */
	struct sv_err err;
};

/* Adds one chunk: a zip member chunks/<layer>/<x>,<y>.bin|.json, or an
 * entry of `inline_map`. */
static int add_chunk(const struct opts *o, struct out *w, json_t *inline_map, unsigned layer,
		     uint64_t i, int64_t cx, int64_t cy)
{
	struct sv_doodle_grid g;
	int rc = sv_doodle_grid_init(&g, o->size, cx, cy);
	if (rc)
		return fail("chunk", strerror(-rc));
	draw(o, layer, i, &g);
	uint64_t s = stream(o->seed ^ 0x5bd1e995u, i, layer);
	enum form f = form_of(o, i + layer);
	char name[96];
	snprintf(name, sizeof name, "%" PRId64 ",%" PRId64, cx, cy);
	rc = 0;
	if (inline_chunks(o)) {
		json_t *j = json_chunk(&g, f, &s);
		if (!j || json_object_set_new(inline_map, name, j))
			rc = fail("chunk", "out of memory");
	} else if (f == F_JSON) {
		json_t *j = sv_doodle_json_encode(&g);
		char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		snprintf(name, sizeof name, "chunks/%u/%" PRId64 ",%" PRId64 ".json", layer, cx, cy);
		if (!text)
			rc = fail("chunk", "out of memory");
		else if (sv_zip_add(&w->zw, name, text, strlen(text), false, &w->err))
			rc = fail(name, w->err.msg);
		free(text);
	} else {
		struct sv_buf b;
		sv_buf_init(&b);
		snprintf(name, sizeof name, "chunks/%u/%" PRId64 ",%" PRId64 ".bin", layer, cx, cy);
		int e = bin_encode(o, &g, f, &s, &b);
		if (e)
			rc = fail(name, strerror(-e));
		else if (sv_zip_add(&w->zw, name, b.p, b.len, false, &w->err))
			rc = fail(name, w->err.msg);
		sv_buf_fini(&b);
	}
	sv_doodle_grid_fini(&g);
	return rc;
}

/* Where chunk i of n goes: a grid of the first quadrant, or with
 * --negative, the odd chunks in the other three quadrants in turn. */
static void place(const struct opts *o, uint64_t i, uint64_t n, int64_t *cx, int64_t *cy)
{
	uint64_t k = i, m = n;
	int quadrant = 0;
	if (o->negative) {
		k = i / 2;
		m = i % 2 ? n / 2 : (n + 1) / 2;
		quadrant = i % 2 ? 1 + (int)(k % 3) : 0;
	}
	uint64_t w = 1;
	while (w * w < m)
		w++;
	int64_t a = (int64_t)(k % w), b = (int64_t)(k / w);
	*cx = quadrant == 1 || quadrant == 3 ? -1 - a : a;
	*cy = quadrant == 2 || quadrant == 3 ? -1 - b : b;
}

/* A tiny PNG of the first swatches, for assets/screenshots/large.png. */
static int screenshot(const struct opts *o, json_t *palette, struct sv_buf *png)
{
	struct sv_palette pal;
	unsigned bad = 0;
	struct sv_err err;
	int rc = sv_doodle_palette_from_json(palette, &pal, &bad, &err);
	if (rc)
		return rc;
	uint16_t px[8 * 8];
	for (unsigned i = 0; i < 64; i++)
		px[i] = (i / 8 + i % 8) % 5 == 4 ? SV_DOODLE_EMPTY : (uint16_t)(i % o->palette);
	rc = sv_png_encode(8, 8, px, &pal, png);
	sv_doodle_palette_fini(&pal);
	return rc;
}

/* Adds the attached files: zip members now, or base64 in "files". */
static int add_assets(const struct opts *o, struct out *w, json_t *palette)
{
	for (long i = 0; i < o->assets; i++) {
		char name[64];
		struct sv_buf b;
		sv_buf_init(&b);
		int rc;
		if (i == 0) {
			snprintf(name, sizeof name, "assets/screenshots/large.png");
			rc = screenshot(o, palette, &b);
		} else {
			snprintf(name, sizeof name, "assets/wallpapers/w%ld.txt", i);
			rc = sv_buf_printf(&b, "wallpaper %ld of seed %" PRIu64 "\n", i, o->seed);
		}
		if (rc) {
			sv_buf_fini(&b);
			return fail(name, strerror(-rc));
		}
		if (o->container == C_ZIP) {
			rc = sv_zip_add(&w->zw, name, b.p, b.len, false, &w->err);
			if (rc)
				fail(name, w->err.msg);
		} else {
			struct sv_buf b64;
			sv_buf_init(&b64);
			rc = sv_base64_encode(b.p, b.len, &b64);
			if (!rc && json_object_set_new(w->files, name,
						       json_pack("{s:s%}", "data",
								 b64.len ? (char *)b64.p : "",
								 b64.len)))
				rc = -ENOMEM;
			sv_buf_fini(&b64);
			if (rc)
				fail(name, strerror(-rc));
		}
		sv_buf_fini(&b);
		if (rc)
			return 1;
	}
	return 0;
}

static const char *const base_names[8] = {"solid",     "decoration", "fire",  "water",
					  "semisolid", "slippery",   "hint",  "invisible"};
static const uint32_t base_colours[8] = {0x000000, 0x999999, 0xff0000, 0x0000ff,
					 0x888888, 0x00aaff, 0x00cc44, 0xf0f0f0};

/* {"swatches": [{name, color, pattern, solid...}, ...]}: deterministic
 * names and colours, the game's attributes in turn. */
static json_t *make_palette(const struct opts *o)
{
	json_t *sw = json_array();
	for (uint32_t i = 0; sw && i < o->palette; i++) {
		char name[64], colour[16];
		uint32_t c;
		if (i < 8) {
			snprintf(name, sizeof name, "%s", base_names[i]);
			c = base_colours[i];
		} else {
			snprintf(name, sizeof name, "colour %u", i);
			uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull;
			c = (uint32_t)(h >> 40) & 0xffffff;
		}
		unsigned r = c >> 16, g = (c >> 8) & 255, b = c & 255;
		snprintf(colour, sizeof colour, "#%02x%02x%02x", r, g, b);
		if (o->odd_palette) {
			static const char *const odd[4] = {"tab\there", "caf\xc3\xa9 \xe2\x98\x95", "",
							   "bell\a and del\x7f"};
			if (i >= 1 && i <= 4)
				snprintf(name, sizeof name, "%s", odd[i - 1]);
			switch (i % 7) {
			case 1:
				snprintf(colour, sizeof colour, "#%X%X%X", r >> 4, g >> 4, b >> 4);
				break;
			case 2:
				snprintf(colour, sizeof colour, "#%02x%02x%02x%02x", r, g, b, 0x80u);
				break;
			case 3:
				snprintf(colour, sizeof colour, "#%x%x%x%x", r >> 4, g >> 4, b >> 4,
					 (i / 7) % 16);
				break;
			case 4:
				snprintf(colour, sizeof colour, "#%02X%02X%02X", r, g, b);
				break;
			case 5:
				snprintf(colour, sizeof colour, i == 5 ? "not a colour" : "#12345");
				break;
			case 6:
				snprintf(colour, sizeof colour, "#%02x%02x%02xff", r, g, b);
				break;
			default:
				break;
			}
		}
		json_t *s = json_pack("{s:s,s:s,s:s}", "name", name, "color", colour, "pattern",
				      i % 3 == 2 ? "marker.png" : "noise.png");
		if (!s || json_array_append_new(sw, s)) {
			json_decref(sw);
			return NULL;
		}
		static const char *const attr[8] = {"solid", NULL,	   "fire", "water",
						    "semisolid", "slippery", NULL,   NULL};
		if (attr[i % 8])
			json_object_set_new(s, attr[i % 8], json_true());
	}
	return sw ? json_pack("{s:o}", "swatches", sw) : NULL;
}

/* A UUID (version 4 layout) from the seed. */
static void make_uuid(uint64_t seed, uint64_t which, char out[37])
{
	uint64_t s = stream(seed, which, 0xfeed);
	uint64_t a = next(&s), b = next(&s);
	snprintf(out, 37, "%08x-%04x-4%03x-%04x-%012" PRIx64, (unsigned)(a >> 32),
		 (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff,
		 0x8000u | ((unsigned)(b >> 48) & 0x3fff), b & (uint64_t)0xffffffffffff);
}

static int write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fail(path, strerror(errno));
	const uint8_t *q = p;
	while (n) {
		ssize_t k = write(fd, q, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : EIO;
			close(fd);
			return fail(path, strerror(e));
		}
		q += k;
		n -= (size_t)k;
	}
	if (close(fd))
		return fail(path, strerror(errno));
	return 0;
}

/* The root JSON with the keys the game writes, in its order; chunks.chunks
 * (and each layer's) filled by the caller. */
static json_t *make_root(const struct opts *o, json_t *files, json_t *palette)
{
	const char *title = o->title ? o->title : o->doodad ? "mkdoodle doodad" : "mkdoodle level";
	json_t *r = json_pack("{s:i,s:s,s:s,s:s,s:b,s:O}", "version", 1, "gameVersion", "0.14.1",
			      "title", title, "author", "mkdoodle", "locked", 0, "files", files);
	if (!r)
		return NULL;
	int bad = 0;
	if (o->doodad) {
		json_t *size = json_pack("{s:i,s:i,s:I,s:I}", "X", 0, "Y", 0, "W",
					 (json_int_t)o->size, "H", (json_int_t)o->size);
		bad |= json_object_set_new(r, "hidden", json_false());
		bad |= json_object_set(r, "palette", palette);
		bad |= json_object_set(r, "size", size);
		bad |= json_object_set_new(
			r, "script",
			json_string("function main() {\n\tconsole.log(\"%s ready\", Self.Title);\n}\n"));
		bad |= json_object_set_new(r, "hitbox", size);
		bad |= json_object_set_new(r, "layers", json_array());
		bad |= json_object_set_new(r, "data", json_object());
		bad |= json_object_set_new(r, "options", json_object());
	} else {
		char uuid[37], actor[37], point[48];
		make_uuid(o->seed, 0, uuid);
		make_uuid(o->seed, 1, actor);
		snprintf(point, sizeof point, "%u,%u", o->size / 2, o->size / 2);
		bad |= json_object_set_new(r, "passwd", json_string(""));
		bad |= json_object_set_new(r, "uuid", json_string(uuid));
		bad |= json_object_set_new(r, "rules",
					   json_pack("{s:i,s:b}", "difficulty", 0, "survival", 0));
		bad |= json_object_set_new(r, "chunks", json_pack("{s:I,s:{}}", "size",
								  (json_int_t)o->size, "chunks"));
		bad |= json_object_set(r, "palette", palette);
		bad |= json_object_set_new(r, "pageType", json_integer(o->negative ? 0 : 1));
		bad |= json_object_set_new(r, "boundedWidth", json_integer(2550));
		bad |= json_object_set_new(r, "boundedHeight", json_integer(3300));
		bad |= json_object_set_new(r, "wallpaper", json_string("notebook.png"));
		bad |= json_object_set_new(r, "scroll", json_string("0,0"));
		bad |= json_object_set_new(
			r, "actors",
			json_pack("{s:{s:s,s:s,s:[],s:{}}}", actor, "filename", "start-flag.doodad",
				  "point", point, "links", "options"));
		bad |= json_object_set_new(r, "saveDoodads", json_false());
		bad |= json_object_set_new(r, "saveBuiltins", json_false());
	}
	if (bad) {
		json_decref(r);
		return NULL;
	}
	return r;
}

/* level and doodad. */
static int drawing(const char *path, const struct opts *o)
{
	struct out w = {.files = json_object()};
	sv_buf_init(&w.zmem);
	sv_zip_writer_init(&w.zw, -1, &w.zmem);
	w.zw.descriptors = o->descriptors;
	sv_err_clear(&w.err);
	json_t *palette = make_palette(o);
	json_t *root = palette && w.files ? make_root(o, w.files, palette) : NULL;
	char *text = NULL;
	struct sv_buf gz;
	sv_buf_init(&gz);
	int rc = 0;
	if (!root) {
		rc = fail("out of memory", NULL);
		goto out;
	}
	/* Chunks first, then attached files, then the root: the game's order. */
	if (o->doodad) {
		json_t *layers = json_object_get(root, "layers");
		for (long l = 0; l < o->layers && !rc; l++) {
			char name[32];
			snprintf(name, sizeof name, l ? "layer %ld" : "main", l);
			json_t *layer = json_pack("{s:s,s:{s:I,s:{}}}", "name", name, "chunks", "size",
						  (json_int_t)o->size, "chunks");
			if (!layer || json_array_append_new(layers, layer)) {
				rc = fail("out of memory", NULL);
				break;
			}
			json_t *map = json_object_get(json_object_get(layer, "chunks"), "chunks");
			rc = add_chunk(o, &w, map, (unsigned)l, 0, 0, 0);
		}
	} else {
		json_t *map = json_object_get(json_object_get(root, "chunks"), "chunks");
		for (long i = 0; i < o->count && !rc; i++) {
			int64_t cx, cy;
			place(o, (uint64_t)i, (uint64_t)o->count, &cx, &cy);
			rc = add_chunk(o, &w, map, 0, (uint64_t)i, cx, cy);
		}
	}
	if (!rc)
		rc = add_assets(o, &w, palette);
	if (rc)
		goto out;
	text = json_dumps(root, JSON_COMPACT);
	if (!text) {
		rc = fail("out of memory", NULL);
		goto out;
	}
	if (o->container == C_JSON) {
		rc = write_file(path, text, strlen(text));
	} else if (o->container == C_GZIP) {
		int e = sv_gzip((const uint8_t *)text, strlen(text), &gz);
		rc = e ? fail("gzip", strerror(-e)) : write_file(path, gz.p, gz.len);
	} else {
		const char *name = o->doodad ? "doodad.json" : "level.json";
		if (sv_zip_add(&w.zw, name, text, strlen(text), false, &w.err) ||
		    sv_zip_finish(&w.zw, NULL, 0, &w.err))
			rc = fail(path, w.err.msg);
		else
			rc = write_file(path, w.zmem.p, w.zmem.len);
	}
out:
	free(text);
	sv_buf_fini(&gz);
	json_decref(root);
	json_decref(palette);
	json_decref(w.files);
	sv_zip_writer_fini(&w.zw);
	sv_buf_fini(&w.zmem);
	return rc;
}

/* ---- arguments ---------------------------------------------------------------- */

static bool number(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	long size = 0;
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		long n;
		bool takes = true;
		if (!strcmp(a, "--negative"))
			o->negative = true, takes = false;
		else if (!strcmp(a, "--inline"))
			o->inline_chunks = true, takes = false;
		else if (!strcmp(a, "--descriptors"))
			o->descriptors = true, takes = false;
		else if (!strcmp(a, "--odd-palette"))
			o->odd_palette = true, takes = false;
		else if (!strcmp(a, "--bad-pixels"))
			o->bad_pixels = true, takes = false;
		else if (!strcmp(a, "--short-rle"))
			o->short_rle = true, takes = false;
		if (!takes)
			continue;
		if (!v) {
			fprintf(stderr, "mkdoodle: %s: unknown, or lacks its value\n", a);
			return usage(NULL);
		}
		i++;
		if (!strcmp(a, "--container")) {
			if (!strcmp(v, "json"))
				o->container = C_JSON;
			else if (!strcmp(v, "gzip"))
				o->container = C_GZIP;
			else if (!strcmp(v, "zip"))
				o->container = C_ZIP;
			else
				return usage("--container takes json, gzip or zip");
		} else if (!strcmp(a, "--chunks")) {
			if (!strcmp(v, "rle"))
				o->chunks = E_RLE;
			else if (!strcmp(v, "map"))
				o->chunks = E_MAP;
			else if (!strcmp(v, "json"))
				o->chunks = E_JSON;
			else if (!strcmp(v, "mixed"))
				o->chunks = E_MIXED;
			else
				return usage("--chunks takes rle, map, json or mixed");
		} else if (!strcmp(a, "--count") && number(v, 0, 1L << 24, &n)) {
			o->count = n;
		} else if (!strcmp(a, "--size") && number(v, 1, SV_DOODLE_MAX_SIZE, &n)) {
			size = n;
		} else if (!strcmp(a, "--palette") && number(v, 1, SV_DOODLE_MAX_PALETTE, &n)) {
			o->palette = (uint32_t)n;
		} else if (!strcmp(a, "--seed") && number(v, 0, LONG_MAX, &n)) {
			o->seed = (uint64_t)n;
		} else if (!strcmp(a, "--dense-every") && number(v, 0, LONG_MAX, &n)) {
			o->dense_every = n;
		} else if (!strcmp(a, "--assets") && number(v, 0, 100000, &n)) {
			o->assets = n;
		} else if (!strcmp(a, "--layers") && o->doodad && number(v, 1, 1000, &n)) {
			o->layers = n;
		} else if (!strcmp(a, "--title")) {
			o->title = v;
		} else {
			fprintf(stderr, "mkdoodle: bad option or value: %s %s\n", a, v);
			return usage(NULL);
		}
	}
	o->size = size ? (uint32_t)size : o->doodad ? 32 : 128;
	bool inl = o->container != C_ZIP || o->inline_chunks;
	if (o->chunks == E_DEFAULT)
		o->chunks = inl ? E_JSON : E_RLE;
	if (inl && o->chunks == E_RLE)
		return usage("inline chunks are JSON: use --chunks json, map or mixed");
	if (o->inline_chunks && o->container != C_ZIP)
		return usage("--inline is for --container zip");
	if (o->bad_pixels && o->palette >= SV_DOODLE_MAX_PALETTE)
		return usage("--bad-pixels needs a palette below 65534");
	return 0;
}

/* ---- levelpacks ------------------------------------------------------------- */

static int slurp(const char *path, struct sv_buf *b)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	int rc = 0;
	for (;;) {
		if ((rc = sv_buf_reserve(b, 1 << 16)))
			break;
		ssize_t k = read(fd, b->p + b->len, b->cap - b->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			rc = -errno;
		if (k <= 0)
			break;
		b->len += (size_t)k;
	}
	close(fd);
	return rc;
}

static int mem_read(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	const struct sv_buf *b = arg;
	if (off > b->len || n > b->len - off)
		return sv_err_set(err, -EBADMSG, "read past the end");
	memcpy(buf, b->p + off, n);
	return 0;
}

/* The root JSON of a level file of any container, or NULL. */
static json_t *level_root(const struct sv_buf *b)
{
	struct sv_buf tmp;
	sv_buf_init(&tmp);
	struct sv_err err;
	json_t *root = NULL;
	if (b->len >= 2 && b->p[0] == 0x1f && b->p[1] == 0x8b) {
		if (!sv_gunzip(b->p, b->len, 1u << 30, &tmp, &err))
			root = json_loadb((const char *)tmp.p, tmp.len, 0, NULL);
	} else if (b->len >= 4 && !memcmp(b->p, "PK\3\4", 4)) {
		struct sv_zip z;
		if (!sv_zip_open(&z, mem_read, (void *)b, b->len, 1u << 20, &err)) {
			for (size_t i = 0; i < z.n; i++) {
				struct sv_blob *blob;
				if (strcmp(z.e[i].name, "level.json") ||
				    sv_zip_extract(&z.e[i], mem_read, (void *)b, b->len, 1u << 30,
						   &blob, &err))
					continue;
				root = json_loadb((const char *)blob->data, blob->len, 0, NULL);
				sv_blob_unref(blob);
				break;
			}
			sv_zip_fini(&z);
		}
	} else {
		root = json_loadb((const char *)b->p, b->len, 0, NULL);
	}
	sv_buf_fini(&tmp);
	return root;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int pack(int argc, char **argv)
{
	const char *out = argv[2], *title = "mkdoodle pack";
	bool descriptors = false, doodads = false;
	int nfiles = 0;
	const char **paths = calloc((size_t)argc, sizeof *paths);
	bool *is_doodad = calloc((size_t)argc, sizeof *is_doodad);
	if (!paths || !is_doodad) {
		free(paths);
		free(is_doodad);
		return fail("out of memory", NULL);
	}
	int rc = 0, nlevels = 0;
	for (int i = 3; i < argc && !rc; i++) {
		if (!strcmp(argv[i], "--doodad"))
			doodads = true;
		else if (!strcmp(argv[i], "--descriptors"))
			descriptors = true;
		else if (!strcmp(argv[i], "--title") && i + 1 < argc)
			title = argv[++i];
		else if (!strncmp(argv[i], "--", 2))
			rc = usage("bad pack option");
		else {
			is_doodad[nfiles] = doodads;
			nlevels += !doodads;
			paths[nfiles++] = argv[i];
		}
	}
	if (!rc && !nlevels)
		rc = usage("a pack needs at least one level");
	for (int i = 0; i < nfiles && !rc; i++)
		for (int j = 0; j < i && !rc; j++)
			if (is_doodad[i] == is_doodad[j] &&
			    !strcmp(base_name(paths[i]), base_name(paths[j])))
				rc = fail(paths[i], "two files of that name");
	if (rc) {
		free(paths);
		free(is_doodad);
		return rc;
	}
	struct sv_buf mem, *files = calloc((size_t)nfiles, sizeof *files);
	struct sv_zip_writer zw;
	struct sv_err err;
	sv_err_clear(&err);
	sv_buf_init(&mem);
	sv_zip_writer_init(&zw, -1, &mem);
	zw.descriptors = descriptors;
	json_t *levels = json_array();
	json_t *index = json_pack("{s:s,s:s,s:s,s:s,s:O,s:i}", "title", title, "description",
				  "Levels made by mkdoodle.", "author", "mkdoodle", "created",
				  "2024-01-01T00:00:00Z", "levels", levels, "freeLevels", nlevels);
	char *text = NULL;
	if (!files || !index) {
		rc = fail("out of memory", NULL);
		goto out;
	}
	for (int i = 0; i < nfiles && !rc; i++) {
		sv_buf_init(&files[i]);
		int e = slurp(paths[i], &files[i]);
		if (e) {
			rc = fail(paths[i], strerror(-e));
			break;
		}
		if (is_doodad[i])
			continue;
		json_t *root = level_root(&files[i]);
		const char *t = NULL, *a = NULL;
		json_t *v;
		if ((v = json_object_get(root, "title")) || (v = json_object_get(root, "Title")))
			t = json_string_value(v);
		if ((v = json_object_get(root, "author")) || (v = json_object_get(root, "Author")))
			a = json_string_value(v);
		json_t *entry = json_pack("{s:s,s:s,s:s}", "title", t ? t : base_name(paths[i]),
					  "author", a ? a : "mkdoodle", "filename",
					  base_name(paths[i]));
		json_decref(root);
		if (!entry || json_array_append_new(levels, entry))
			rc = fail("out of memory", NULL);
	}
	if (rc)
		goto out;
	text = json_dumps(index, JSON_INDENT(2));
	if (!text || sv_zip_add(&zw, "index.json", text, strlen(text), false, &err)) {
		rc = fail(out, text ? err.msg : "out of memory");
		goto out;
	}
	for (int pass = 0; pass < 2 && !rc; pass++)
		for (int i = 0; i < nfiles && !rc; i++) {
			if (is_doodad[i] != (pass == 1))
				continue;
			char name[4096];
			snprintf(name, sizeof name, "%s/%s", pass ? "doodads" : "levels",
				 base_name(paths[i]));
			if (sv_zip_add(&zw, name, files[i].p, files[i].len, false, &err))
				rc = fail(name, err.msg);
		}
	if (!rc && sv_zip_finish(&zw, NULL, 0, &err))
		rc = fail(out, err.msg);
	if (!rc)
		rc = write_file(out, mem.p, mem.len);
out:
	free(text);
	json_decref(index);
	json_decref(levels);
	for (int i = 0; files && i < nfiles; i++)
		sv_buf_fini(&files[i]);
	free(files);
	sv_zip_writer_fini(&zw);
	sv_buf_fini(&mem);
	free(paths);
	free(is_doodad);
	return rc;
}

int main(int argc, char **argv)
{
	/* Each zip member's deflate state is allocated and freed at the top of
	 * the heap; without this glibc gives it back to the kernel every time,
	 * a third of the run time for 10,000 chunks. */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	if (argc >= 3 && (!strcmp(argv[1], "level") || !strcmp(argv[1], "doodad"))) {
		struct opts o = {
			.doodad = !strcmp(argv[1], "doodad"),
			.container = C_ZIP,
			.chunks = E_DEFAULT,
			.count = 4,
			.layers = 2,
			.palette = 8,
			.seed = 1,
		};
		int rc = parse_opts(argc, argv, &o);
		return rc ? rc : drawing(argv[2], &o);
	}
	if (argc >= 4 && !strcmp(argv[1], "pack"))
		return pack(argc, argv);
	return usage(NULL);
}
