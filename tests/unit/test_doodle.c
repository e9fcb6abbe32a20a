/*
 * test_doodle.c - the Sketchy Maze module (core/fmt/sketchy/doodle.c) through the
 * container interface, without FUSE.
 *
 * Fixtures are built here, in C, from a small description (palette, chunks
 * as strings of text-grid cells, attached files) with the writers of
 * doodle.h (sv_zip_writer_*, sv_gzip, sv_base64_encode) and jansson; the
 * chunk encodings the expectations rest on (RLE, map accessor, JSON) are
 * written by this file's own encoders, so a module that disagrees with
 * the format shows.  Containers: v1 JSON (inline chunks, object and base64
 * forms, inline files), v2 gzip, zip v3 (.json members), v3.1 (.bin type
 * 0, absolute coordinates), v4 (.bin type 1), a mixed zip (every member
 * kind, a chunk stored as .bin and .json, a stored member, data
 * descriptors, a member savefs does not show), a zip whose root carries
 * inline chunks and files, negative chunk coordinates, a 70-colour palette
 * (two-character cells), three-layer doodads (zip and v1) with
 * capitalised size keys, and a levelpack holding a gzip level, a zip level
 * and a doodad (lazy directories).
 *
 * Checked on each: listings in order, every file's stat size against the
 * bytes read (before and after reading, in odd pieces too), the exact text
 * of every chunk, .bin bytes, chunk and preview PNGs decoded pixel by
 * pixel, the root JSON view, attached files, /.savefs/info.  Write-back on
 * files in a fresh temporary directory: chunk edits (.txt and .bin, a
 * temporary file renamed over one), emptied, created and removed chunks,
 * attached files added, replaced and removed, root JSON edits accepted and
 * refused with their exact messages (the container left byte-identical),
 * root edits that change the chunk size or the palette, v1 and v2 kept as
 * they are or upgraded to zip, members copied as stored (compared with the
 * original's compressed bytes; every zip written is also read by Python's
 * zipfile when python3 is present), node numbers and change notices across
 * commits, second commits on the same handle, and a levelpack whose nested
 * drawings are edited (the pack rewritten, unvisited drawings copied).
 */
#include "container.h"
#include "fmt/sketchy/doodle.h"
#include "changes.h"
#include "t.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

/* ---- small helpers ------------------------------------------------------- */

static void die(const char *what)
{
	fprintf(stderr, "test_doodle: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void need(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "test_doodle: %s failed (%d)\n", what, rc);
		exit(1);
	}
}

static struct sv_buf slurp(const char *path)
{
	struct sv_buf b;
	sv_buf_init(&b);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	uint8_t tmp[65536];
	for (;;) {
		ssize_t k = read(fd, tmp, sizeof tmp);
		if (k < 0)
			die("read");
		if (k == 0)
			break;
		need(sv_buf_add(&b, tmp, (size_t)k), "sv_buf_add");
	}
	close(fd);
	return b;
}

static bool buf_same(const struct sv_buf *a, const struct sv_buf *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->p, b->p, a->len));
}

static const char digits62[] =
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/* ---- this file's own encoders --------------------------------------------- */

static void put_uv(struct sv_buf *b, uint64_t v)
{
	do {
		uint8_t x = v & 0x7f;
		v >>= 7;
		if (v)
			x |= 0x80;
		need(sv_buf_add(b, &x, 1), "sv_buf_add");
	} while (v);
}

static uint64_t zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* The cell width of the text grid for a palette of n colours. */
static unsigned cellw(uint32_t npal)
{
	return npal <= 62 ? 1 : 2;
}

/* A grid from cells: w characters each, '.' empty, else base 62. */
static void grid_of(struct sv_doodle_grid *g, uint32_t size, int64_t cx, int64_t cy,
		    const char *px, unsigned w)
{
	need(sv_doodle_grid_init(g, size, cx, cy), "sv_doodle_grid_init");
	size_t n = (size_t)size * size;
	if (strlen(px) != n * w) {
		fprintf(stderr, "test_doodle: fixture cells \"%s\" are not %zu cells\n", px, n);
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		const char *c = px + i * w;
		if (c[0] == '.') {
			g->px[i] = SV_DOODLE_EMPTY;
			continue;
		}
		uint32_t v = 0;
		for (unsigned k = 0; k < w; k++)
			v = v * 62 + (uint32_t)(strchr(digits62, c[k]) - digits62);
		g->px[i] = (uint16_t)v;
	}
}

/* RLE: type 1, then (index, run) pairs, the last run included. */
static void my_rle(const struct sv_doodle_grid *g, struct sv_buf *out)
{
	put_uv(out, 1);
	size_t n = (size_t)g->size * g->size;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && g->px[j] == g->px[i])
			j++;
		put_uv(out, g->px[i]);
		put_uv(out, j - i);
		i = j;
	}
}

/* Map accessor triples with absolute coordinates, last pixel first (the
 * order is free); with the type byte 0 in front if typed. */
static void my_map(const struct sv_doodle_grid *g, bool typed, struct sv_buf *out)
{
	if (typed)
		put_uv(out, 0);
	for (size_t i = (size_t)g->size * g->size; i-- > 0;) {
		if (g->px[i] == SV_DOODLE_EMPTY)
			continue;
		put_uv(out, zz(g->x0 + (int64_t)(i % g->size)));
		put_uv(out, zz(g->y0 + (int64_t)(i / g->size)));
		put_uv(out, g->px[i]);
	}
}

/* {"type":0,"data":{"x,y":i,...}}, absolute coordinates, last pixel first. */
static json_t *my_json(const struct sv_doodle_grid *g)
{
	json_t *data = json_object();
	for (size_t i = (size_t)g->size * g->size; i-- > 0;) {
		if (g->px[i] == SV_DOODLE_EMPTY)
			continue;
		char key[64];
		snprintf(key, sizeof key, "%" PRId64 ",%" PRId64, g->x0 + (int64_t)(i % g->size),
			 g->y0 + (int64_t)(i / g->size));
		json_object_set_new(data, key, json_integer(g->px[i]));
	}
	return json_pack("{s:i,s:o}", "type", 0, "data", data);
}

/* {"type":0,"data":"<base64 of untyped map accessor>"}. */
static json_t *my_json_b64(const struct sv_doodle_grid *g)
{
	struct sv_buf raw, b64;
	sv_buf_init(&raw);
	sv_buf_init(&b64);
	my_map(g, false, &raw);
	need(sv_base64_encode(raw.p, raw.len, &b64), "sv_base64_encode");
	json_t *j = json_pack("{s:i,s:s%}", "type", 0, "data", b64.len ? (char *)b64.p : "",
			      b64.len);
	sv_buf_fini(&raw);
	sv_buf_fini(&b64);
	return j;
}

static char *b64_of(const void *p, size_t n)
{
	struct sv_buf b;
	sv_buf_init(&b);
	need(sv_base64_encode(p, n, &b), "sv_base64_encode");
	char *s = strndup(b.len ? (const char *)b.p : "", b.len);
	sv_buf_fini(&b);
	return s;
}

/* ---- fixture descriptions ------------------------------------------------- */

enum { V1 = 1, V2, ZIP };
/* How a chunk is stored: inline JSON object or base64 (v1/v2, or a zip
 * root carrying its chunks), a .json member, a .bin type 0 or type 1
 * member, or a .bin (shown) plus a decoy .json of other pixels. */
enum { F_OBJ, F_B64, F_JSONM, F_MAP, F_RLE, F_BOTH };

struct fchunk {
	unsigned layer;
	int cx, cy;
	int form;
	const char *px;
};

struct fasset {
	const char *path;
	const void *data;
	size_t len;
	bool inl;    /* in a zip: in the root's "files", base64 */
	bool stored; /* a zip member stored, not deflated */
};

struct fswatch {
	const char *name, *color, *shown; /* shown: as the legend writes it */
};

struct fspec {
	const char *what;
	int container;
	bool doodad, descriptors;
	bool extra;          /* a zip member savefs does not show */
	bool stray;          /* zip root: an inline file outside assets/ and an
			      * inline chunk key that is not "x,y" */
	uint32_t size;
	unsigned nlayers;
	const struct fswatch *sw;
	uint32_t npal;
	const struct fchunk *ch;
	size_t nch;
	const struct fasset *as;
	size_t nas;
	const char *assets_ls; /* the listing of assets/ */
	const char *title;
	const char *comment;   /* the zip's comment */
};

static const struct fswatch sw3[] = {
	{"solid", "#000000", "#000000"},
	{"fire", "#f00", "#ff0000"},
	{"water", "#0000FF80", "#0000ff80"},
};

static struct fswatch sw70[70];
static char sw70_text[70][2][16];

#define PX_A "0000" "...." "...." "...."
#define PX_B "1..2" ".1.." "..1." "2..1"
#define PX_C "2222" "2222" "...." "0..."
#define PX_D "...." "..0." "...." "...1"
#define PX_DECOY "0000" "0000" "0000" "0000"

static uint8_t png_bytes[300];
static const char paper[] = "hello wallpaper\n";
static const char top[] = "top\n";

#define A_PNG "assets/screenshots/large.png"
#define A_PAPER "assets/wallpapers/paper.txt"
#define A_TOP "assets/top.txt"

/* The two assets most levels have: the screenshot (stored, not deflated,
 * if stored) and the wallpaper (in the root's "files" if inl). */
#define AS_PNG(stored) {A_PNG, png_bytes, sizeof png_bytes, false, stored}
#define AS_PAPER(inl) {A_PAPER, paper, sizeof paper - 1, inl, false}

static const struct fasset as_plain[] = {AS_PNG(false), AS_PAPER(false)};
static const struct fasset as_v4[] = {
	AS_PNG(false),
	{A_TOP, top, sizeof top - 1, false, false},
	AS_PAPER(false),
};
static const struct fasset as_stored[] = {AS_PNG(true), AS_PAPER(false)};
static const struct fasset as_inl[] = {AS_PNG(false), AS_PAPER(true)};

/* The four chunks of layer 0 (pixels PX_A to PX_D), each in its form. */
#define CH4(fa, fb, fc, fd)                                                      \
	{                                                                        \
		{0, 0, 0, fa, PX_A}, {0, -1, -1, fb, PX_B}, {0, 1, -1, fc, PX_C}, \
		{0, 2, 0, fd, PX_D},                                             \
	}

static const struct fchunk ch_v1[] = CH4(F_OBJ, F_B64, F_OBJ, F_OBJ);
static const struct fchunk ch_v3[] = CH4(F_JSONM, F_JSONM, F_JSONM, F_JSONM);
static const struct fchunk ch_v31[] = CH4(F_MAP, F_MAP, F_MAP, F_MAP);
static const struct fchunk ch_v4[] = CH4(F_RLE, F_RLE, F_RLE, F_RLE);
static const struct fchunk ch_mixed[] = CH4(F_RLE, F_MAP, F_JSONM, F_BOTH);
static const struct fchunk ch_zinl[] = CH4(F_OBJ, F_B64, F_RLE, F_JSONM);

#define PX_P1 "00" "0a" "0Z" "10" "13" ".." "17" ".." "01"
#define PX_P2 ".." ".." "17" ".." "0z" ".." ".." ".." ".."
static const struct fchunk ch_p70[] = {
	{0, 0, 0, F_RLE, PX_P1}, {0, -1, 2, F_JSONM, PX_P2},
};
#define PX_L0 "0120" "1..1" "2..2" "0120"
static const struct fchunk ch_doodad[] = {
	{0, 0, 0, F_RLE, PX_L0}, {1, 0, 0, F_MAP, PX_B}, {2, 0, 0, F_JSONM, PX_D},
	{2, -1, 0, F_RLE, PX_A},
};
/* 601 chunks wide: the preview is scaled by 2. */
static const struct fchunk ch_wide[] = {
	{0, 0, 0, F_RLE, PX_A}, {0, 600, -1, F_RLE, PX_D}, {0, 1, 0, F_RLE, PX_B},
};
static const struct fchunk ch_doodad_v1[] = {
	{0, 0, 0, F_OBJ, PX_L0}, {1, 0, 0, F_B64, PX_B}, {2, 0, 0, F_OBJ, PX_D},
	{2, -1, 0, F_OBJ, PX_A},
};

#define N(a) (sizeof(a) / sizeof *(a))
#define LEVEL(w, cont, chs, ass, als)                                                     \
	{ .what = (w), .container = (cont), .size = 4, .nlayers = 1, .sw = sw3, .npal = 3, \
	  .ch = (chs), .nch = N(chs), .as = (ass), .nas = N(ass), .assets_ls = (als),      \
	  .title = "Test level" }

static const struct fspec s_v1 = LEVEL("v1", V1, ch_v1, as_plain, "screenshots wallpapers");
static const struct fspec s_v2 = LEVEL("v2", V2, ch_v1, as_plain, "screenshots wallpapers");
static const struct fspec s_v3 = LEVEL("v3", ZIP, ch_v3, as_plain, "screenshots wallpapers");
static const struct fspec s_v31 = LEVEL("v3.1", ZIP, ch_v31, as_plain, "screenshots wallpapers");
static const struct fspec s_v4 = LEVEL("v4", ZIP, ch_v4, as_v4,
				       "screenshots top.txt wallpapers");
static struct fspec s_mixed = LEVEL("mixed", ZIP, ch_mixed, as_stored,
				    "screenshots wallpapers");
static struct fspec s_v1s = LEVEL("v1 with strays", V1, ch_v1, as_plain,
				  "screenshots wallpapers");
static struct fspec s_zinl = LEVEL("zip-inline", ZIP, ch_zinl, as_inl,
				   "screenshots wallpapers");
static struct fspec s_p70 = {
	.what = "palette-70", .container = ZIP, .size = 3, .nlayers = 1, .sw = sw70,
	.npal = 70, .ch = ch_p70, .nch = N(ch_p70), .as = NULL, .nas = 0, .assets_ls = "",
	.title = "Many colours"};
static const struct fspec s_empty = {
	.what = "empty", .container = ZIP, .size = 4, .nlayers = 1, .sw = sw3, .npal = 3,
	.ch = NULL, .nch = 0, .assets_ls = "", .title = "Nothing yet"};
static const struct fspec s_wide = {
	.what = "wide", .container = ZIP, .size = 4, .nlayers = 1, .sw = sw3, .npal = 3,
	.ch = ch_wide, .nch = N(ch_wide), .assets_ls = "", .title = "Test level"};
static const struct fspec s_doodad = {
	.what = "doodad", .container = ZIP, .doodad = true, .size = 4, .nlayers = 3,
	.sw = sw3, .npal = 3, .ch = ch_doodad, .nch = N(ch_doodad), .as = NULL, .nas = 0,
	.assets_ls = "", .title = "Walker"};
static const struct fspec s_doodad_v1 = {
	.what = "doodad-v1", .container = V1, .doodad = true, .size = 4, .nlayers = 3,
	.sw = sw3, .npal = 3, .ch = ch_doodad_v1, .nch = N(ch_doodad_v1), .as = NULL,
	.nas = 0, .assets_ls = "", .title = "Walker"};

static void fixture_init(void)
{
	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	uint32_t s = 7;
	for (size_t i = 0; i < sizeof png_bytes; i++) {
		s = s * 1103515245u + 12345u;
		png_bytes[i] = (uint8_t)(i % 5 ? s >> 24 : 0);
	}
	memcpy(png_bytes, sig, sizeof sig);
	for (unsigned i = 0; i < 70; i++) {
		unsigned r = (i * 3) & 0xff, g = (255 - i) & 0xff, b = (i * 7) & 0xff;
		snprintf(sw70_text[i][0], sizeof sw70_text[i][0], "c%u", i);
		snprintf(sw70_text[i][1], sizeof sw70_text[i][1], "#%02x%02x%02x", r, g, b);
		sw70[i] = (struct fswatch){sw70_text[i][0], sw70_text[i][1], sw70_text[i][1]};
	}
	/* One 70-colour entry with no name. */
	sw70[5].name = "";
	s_mixed.descriptors = true;
	s_mixed.extra = true;
	s_mixed.comment = "mixed comment";
	s_zinl.stray = true;
	s_v1s.stray = true;
}

/* ---- building fixtures ------------------------------------------------------ */

static json_t *palette_json(const struct fspec *s)
{
	json_t *a = json_array();
	static const char *const flag[] = {"solid", "fire", "water"};
	for (uint32_t i = 0; i < s->npal; i++) {
		json_t *o = json_pack("{s:s,s:s,s:s}", "name", s->sw[i].name, "color",
				      s->sw[i].color, "pattern", "noise.png");
		json_object_set_new(o, flag[i % 3], json_true());
		json_array_append_new(a, o);
	}
	return json_pack("{s:o}", "swatches", a);
}

static json_t *chunks_obj(uint32_t size)
{
	/* A stray key, as real files have: kept. */
	return json_pack("{s:i,s:o,s:i}", "size", (json_int_t)size, "chunks", json_object(),
			 "Layer", 0);
}

/* The root as the view shows it: "files" and every chunk map empty. */
static json_t *view_root(const struct fspec *s)
{
	json_t *r = json_object();
	json_object_set_new(r, "version", json_integer(1));
	json_object_set_new(r, "gameVersion", json_string("0.14.1"));
	json_object_set_new(r, "title", json_string(s->title));
	json_object_set_new(r, "author", json_string("tester"));
	json_object_set_new(r, "locked", json_false());
	json_object_set_new(r, "files", json_object());
	if (s->doodad) {
		json_object_set_new(r, "hidden", json_false());
		json_object_set_new(r, "palette", palette_json(s));
		json_object_set_new(r, "size", json_pack("{s:i,s:i,s:i,s:i}", "X", 0, "Y", 0,
							 "W", (json_int_t)s->size, "H",
							 (json_int_t)s->size));
		json_object_set_new(r, "script", json_string("function main() {\n}\n"));
		json_object_set_new(r, "hitbox", json_pack("{s:i,s:i,s:i,s:i}", "X", 1, "Y", 0,
							   "W", 2, "H", 4));
		json_t *ls = json_array();
		static const char *const names[] = {"idle", "walk-1", "walk-2"};
		for (unsigned l = 0; l < s->nlayers; l++)
			json_array_append_new(ls, json_pack("{s:s,s:o}", "name", names[l % 3],
							    "chunks", chunks_obj(s->size)));
		json_object_set_new(r, "layers", ls);
		json_object_set_new(r, "data", json_pack("{s:s}", "tag", "walker"));
		json_object_set_new(r, "options", json_object());
	} else {
		json_object_set_new(r, "passwd", json_string(""));
		json_object_set_new(r, "uuid", json_string("0f0e0d0c-0b0a-0908-0706-050403020100"));
		json_object_set_new(r, "rules", json_pack("{s:i,s:b}", "difficulty", 0,
							  "survival", 0));
		json_object_set_new(r, "chunks", chunks_obj(s->size));
		json_object_set_new(r, "palette", palette_json(s));
		json_object_set_new(r, "pageType", json_integer(2));
		json_object_set_new(r, "boundedWidth", json_integer(2550));
		json_object_set_new(r, "boundedHeight", json_integer(3300));
		json_object_set_new(r, "wallpaper", json_string("notebook.png"));
		json_object_set_new(r, "scroll", json_string("0,0"));
		json_object_set_new(r, "actors",
				    json_pack("{s:{s:s,s:s,s:[],s:{}}}", "a1b2c3", "filename",
					      "key-blue.doodad", "point", "3,-2", "links",
					      "options"));
		json_object_set_new(r, "saveDoodads", json_false());
		json_object_set_new(r, "saveBuiltins", json_false());
	}
	json_object_set_new(r, "zzExtra", json_pack("{s:[i,s,n,b,f]}", "nested", 1, "two", 1,
						    2.5));
	return r;
}

/* The chunk map of layer l inside root r. */
static json_t *chunk_map(json_t *r, const struct fspec *s, unsigned l)
{
	json_t *holder = s->doodad ? json_array_get(json_object_get(r, "layers"), l) : r;
	return json_object_get(json_object_get(holder, "chunks"), "chunks");
}

static const char *root_name(const struct fspec *s)
{
	return s->doodad ? "doodad.json" : "level.json";
}

static char *dump(json_t *j, size_t flags)
{
	char *t = json_dumps(j, flags);
	if (!t)
		die("json_dumps");
	return t;
}

static void zadd(struct sv_zip_writer *w, const char *name, const void *p, size_t n,
		 bool stored)
{
	struct sv_err err;
	sv_err_clear(&err);
	if (sv_zip_add(w, name, p, n, stored, &err)) {
		fprintf(stderr, "test_doodle: zip add %s: %s\n", name, err.msg);
		exit(1);
	}
}

/* The container bytes of a fixture. */
static struct sv_buf build(const struct fspec *s)
{
	struct sv_buf out;
	sv_buf_init(&out);
	json_t *fr = view_root(s);
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, -1, &out);
	w.descriptors = s->descriptors;
	unsigned wid = cellw(s->npal);
	for (size_t i = 0; i < s->nch; i++) {
		const struct fchunk *c = &s->ch[i];
		struct sv_doodle_grid g;
		grid_of(&g, s->size, c->cx, c->cy, c->px, wid);
		char key[64], name[96];
		snprintf(key, sizeof key, "%d,%d", c->cx, c->cy);
		struct sv_buf b;
		sv_buf_init(&b);
		if (s->container != ZIP || c->form == F_OBJ || c->form == F_B64) {
			json_object_set_new(chunk_map(fr, s, c->layer), key,
					    c->form == F_B64 ? my_json_b64(&g) : my_json(&g));
		} else if (c->form == F_JSONM) {
			json_t *j = my_json(&g);
			char *t = dump(j, JSON_COMPACT);
			snprintf(name, sizeof name, "chunks/%u/%s.json", c->layer, key);
			zadd(&w, name, t, strlen(t), false);
			free(t);
			json_decref(j);
		} else {
			if (c->form == F_BOTH) {
				struct sv_doodle_grid d;
				grid_of(&d, s->size, c->cx, c->cy, PX_DECOY, wid);
				json_t *j = my_json(&d);
				char *t = dump(j, JSON_COMPACT);
				snprintf(name, sizeof name, "chunks/%u/%s.json", c->layer, key);
				zadd(&w, name, t, strlen(t), false);
				free(t);
				json_decref(j);
				sv_doodle_grid_fini(&d);
			}
			if (c->form == F_MAP)
				my_map(&g, true, &b);
			else
				my_rle(&g, &b);
			snprintf(name, sizeof name, "chunks/%u/%s.bin", c->layer, key);
			zadd(&w, name, b.p, b.len, false);
		}
		sv_buf_fini(&b);
		sv_doodle_grid_fini(&g);
	}
	json_t *files = json_object_get(fr, "files");
	for (size_t i = 0; i < s->nas; i++) {
		const struct fasset *a = &s->as[i];
		if (s->container != ZIP || a->inl) {
			char *t = b64_of(a->data, a->len);
			json_object_set_new(files, a->path, json_pack("{s:s}", "data", t));
			free(t);
		} else {
			zadd(&w, a->path, a->data, a->len, a->stored);
		}
	}
	if (s->stray) {
		json_object_set_new(files, "readme.md", json_pack("{s:s}", "data", "aGk="));
		json_object_set_new(chunk_map(fr, s, 0), "bogus",
				    json_pack("{s:i,s:{}}", "type", 0, "data"));
	}
	if (s->extra)
		zadd(&w, "notes/readme.txt", "not shown\n", 10, false);
	char *t = dump(fr, JSON_COMPACT);
	if (s->container == ZIP) {
		zadd(&w, root_name(s), t, strlen(t), false);
		struct sv_err err;
		need(sv_zip_finish(&w, s->comment, s->comment ? strlen(s->comment) : 0, &err),
		     "sv_zip_finish");
	} else if (s->container == V1) {
		need(sv_buf_add(&out, t, strlen(t)), "sv_buf_add");
	} else {
		need(sv_gzip((const uint8_t *)t, strlen(t), &out), "sv_gzip");
	}
	free(t);
	sv_zip_writer_fini(&w);
	json_decref(fr);
	return out;
}

/* ---- reading the tree --------------------------------------------------------- */

static struct sv_container *open_file(const char *path)
{
	struct sv_opts o;
	sv_opts_init(&o);
	return open_file_opts(path, &o);
}

static bool exists(struct sv_container *c, const char *path)
{
	uint32_t n;
	return sv_resolve(c, path, &n) == 0;
}

static void same_buf(struct sv_container *c, const char *path, const struct sv_buf *b)
{
	same(c, path, b->p, b->len);
}

struct listing {
	char names[4096];
	int n;
};

static int collect(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct listing *l = arg;
	if (l->n)
		strncat(l->names, " ", sizeof l->names - strlen(l->names) - 1);
	strncat(l->names, name, sizeof l->names - strlen(l->names) - 1);
	l->n++;
	(void)st;
	(void)next;
	return 0;
}

/* The names in dir, space-separated, in listing order. */
static const char *ls(struct sv_container *c, const char *dir, struct listing *l)
{
	memset(l, 0, sizeof *l);
	list_dir(c, dir, collect, l);
	return l->names;
}

/* ---- every file: stat size against the bytes read ----------------------------- */

struct walkent {
	char path[512];
	uint32_t node;
	uint64_t size;
	bool dir;
	bool unmade; /* listed from a chunk table: no node, no size yet */
};

struct walk {
	struct walkent e[512];
	size_t n;
	const char *base;
};

static int walk_cb(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct walk *w = arg;
	if (w->n < N(w->e)) {
		struct walkent *e = &w->e[w->n++];
		snprintf(e->path, sizeof e->path, "%s%s%s", w->base, *w->base ? "/" : "", name);
		e->node = st->node;
		e->size = st->size;
		e->dir = st->dir;
		e->unmade = st->unmade;
	}
	(void)next;
	return 0;
}

/*
 * Lists every file under dir (not /.savefs), taking each size from
 * readdir before anything is read; then checks that sv_stat says the same,
 * that the whole content has that many bytes, and that reading it in odd
 * pieces gives the same bytes.
 */
static size_t check_sizes(struct sv_container *c, const char *dir)
{
	static struct walk w;
	memset(&w, 0, sizeof w);
	size_t done = 0;
	struct walkent start = {.node = SV_NONE};
	snprintf(start.path, sizeof start.path, "%s", dir);
	T_INT(0, sv_resolve(c, dir, &start.node));
	start.dir = true;
	w.e[w.n++] = start;
	for (size_t k = 0; k < w.n; k++) {
		if (!w.e[k].dir)
			continue;
		if (!strcmp(w.e[k].path, ".savefs"))
			continue;
		w.base = w.e[k].path;
		T_INT(0, sv_readdir(c, w.e[k].node, 0, walk_cb, &w));
	}
	T_OK(w.n < N(w.e));
	for (size_t k = 0; k < w.n; k++) {
		struct walkent *e = &w.e[k];
		if (e->dir || !strncmp(e->path, ".savefs", 7))
			continue;
		struct sv_stat st;
		/* A chunk's view is a node once it is looked up: its size is
		 * the first stat's. */
		if (e->unmade) {
			T_INT(0, sv_resolve(c, e->path, &e->node));
			T_INT(0, sv_stat(c, e->node, &st));
			e->size = st.size;
		}
		T_INT(0, sv_stat(c, e->node, &st));
		struct sv_blob *b = NULL;
		struct sv_err err;
		sv_err_clear(&err);
		int rc = sv_content(c, e->node, &b, &err);
		if (rc)
			fprintf(stderr, "  (reading %s: %s)\n", e->path, err.msg);
		T_INT(0, rc);
		if (!b)
			continue;
		if (st.size != e->size || b->len != e->size)
			fprintf(stderr, "  (%s: readdir says %" PRIu64 ", stat %" PRIu64
				", content %zu)\n", e->path, e->size, st.size, b->len);
		T_UINT(e->size, st.size);
		T_UINT(e->size, b->len);
		/* In pieces of 7 bytes. */
		uint8_t *buf = malloc(b->len + 16);
		size_t pos = 0, got;
		do {
			got = 0;
			if (sv_read(c, e->node, pos, buf + pos, 7, &got, &err))
				break;
			pos += got;
		} while (got && pos <= b->len);
		T_UINT(b->len, pos);
		if (pos == b->len && b->len)
			T_MEM(b->data, buf, b->len);
		free(buf);
		/* And stat again after reading. */
		T_INT(0, sv_stat(c, e->node, &st));
		T_UINT(b->len, st.size);
		sv_blob_unref(b);
		done++;
	}
	return done;
}

/* ---- PNG -------------------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * The pixels of an indexed PNG as png.c writes it (depth 8, colour type 3,
 * filter 0 rows): *px receives w * h bytes (0 empty, i + 1 swatch i).
 * False if it is not such a PNG.
 */
static bool png_pixels(const uint8_t *p, size_t n, uint32_t *w, uint32_t *h, uint8_t **px)
{
	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	*px = NULL;
	if (n < 8 || memcmp(p, sig, 8))
		return false;
	struct sv_buf idat;
	sv_buf_init(&idat);
	bool ihdr = false, iend = false;
	for (size_t at = 8; at + 12 <= n && !iend;) {
		uint32_t len = be32(p + at);
		if (len > n - at - 12)
			break;
		const uint8_t *type = p + at + 4, *data = p + at + 8;
		if (!memcmp(type, "IHDR", 4) && len == 13) {
			*w = be32(data);
			*h = be32(data + 4);
			ihdr = data[8] == 8 && data[9] == 3;
		} else if (!memcmp(type, "IDAT", 4)) {
			need(sv_buf_add(&idat, data, len), "sv_buf_add");
		} else if (!memcmp(type, "IEND", 4)) {
			iend = at + 12 == n;
		}
		uint32_t crc = (uint32_t)crc32(0, type, len + 4);
		if (crc != be32(data + len))
			break;
		at += 12 + len;
	}
	bool ok = ihdr && iend && *w && *h;
	if (ok) {
		uLongf raw_len = (uLongf)(*w + 1) * *h;
		uint8_t *raw = malloc(raw_len);
		ok = raw && uncompress(raw, &raw_len, idat.p, idat.len) == Z_OK &&
		     raw_len == (uLongf)(*w + 1) * *h;
		if (ok) {
			*px = malloc((size_t)*w * *h);
			for (uint32_t y = 0; y < *h; y++) {
				ok &= raw[(size_t)y * (*w + 1)] == 0;
				memcpy(*px + (size_t)y * *w, raw + (size_t)y * (*w + 1) + 1, *w);
			}
		}
		free(raw);
	}
	sv_buf_fini(&idat);
	return ok;
}

/* path is a PNG of w x h pixels equal to want (palette indices, EMPTY). */
static void check_png(struct sv_container *c, const char *path, uint32_t w, uint32_t h,
		      const uint16_t *want, uint32_t npal)
{
	struct sv_blob *b = content(c, path);
	if (!b)
		return;
	T_UINT(sv_png_size(w, h, npal), b->len);
	uint32_t gw = 0, gh = 0;
	uint8_t *px = NULL;
	bool ok = png_pixels(b->data, b->len, &gw, &gh, &px);
	if (!ok)
		fprintf(stderr, "  (%s is not an indexed PNG)\n", path);
	T_OK(ok);
	T_UINT(w, gw);
	T_UINT(h, gh);
	if (ok && gw == w && gh == h) {
		size_t bad = 0;
		for (size_t i = 0; i < (size_t)w * h; i++) {
			unsigned e = want[i] == SV_DOODLE_EMPTY ? 0 : want[i] + 1u;
			if (px[i] != e && bad++ < 3)
				fprintf(stderr, "  (%s: pixel %zu,%zu is %u, expected %u)\n", path,
					i % w, i / w, px[i], e);
		}
		T_UINT(0, bad);
	}
	free(px);
	sv_blob_unref(b);
}

/* ---- expectations ------------------------------------------------------------------ */

/* The text grid of a chunk as doodle.h documents it. */
static void want_text(const struct fspec *s, unsigned layer, int cx, int cy, const char *px,
		      struct sv_buf *b)
{
	unsigned w = cellw(s->npal);
	int64_t x0 = (int64_t)cx * s->size, y0 = (int64_t)cy * s->size;
	sv_buf_init(b);
	sv_buf_printf(b, "# chunk %d,%d layer %u size %u\n", cx, cy, layer, s->size);
	sv_buf_printf(b, "# pixels %" PRId64 "..%" PRId64 " x %" PRId64 "..%" PRId64
		      ", %u character(s) each, top row first\n", x0, x0 + s->size - 1, y0,
		      y0 + s->size - 1, w);
	sv_buf_printf(b, "# %.*s  empty\n", (int)w, "..");
	for (uint32_t i = 0; i < s->npal; i++) {
		char code[3] = {0};
		if (w == 1)
			code[0] = digits62[i];
		else {
			code[0] = digits62[i / 62];
			code[1] = digits62[i % 62];
		}
		sv_buf_printf(b, "# %s  %s%s%s\n", code, s->sw[i].shown, *s->sw[i].name ? "  " : "",
			      s->sw[i].name);
	}
	for (uint32_t r = 0; r < s->size; r++)
		sv_buf_printf(b, "%.*s\n", (int)(s->size * w), px + (size_t)r * s->size * w);
}

static char *want_view(const struct fspec *s)
{
	json_t *r = view_root(s);
	char *t = dump(r, JSON_INDENT(2));
	json_decref(r);
	size_t n = strlen(t);
	char *v = malloc(n + 2);
	memcpy(v, t, n);
	v[n] = '\n';
	v[n + 1] = '\0';
	free(t);
	return v;
}

static int cmp_fchunk(const void *a, const void *b)
{
	const struct fchunk *x = a, *y = b;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	/* Listed in name order, as the C locale sorts them. */
	char a1[32], b1[32];
	snprintf(a1, sizeof a1, "%d,%d", x->cx, x->cy);
	snprintf(b1, sizeof b1, "%d,%d", y->cx, y->cy);
	return strcmp(a1, b1);
}

static char *cat(char *dst, size_t n, const char *a, const char *b)
{
	snprintf(dst, n, "%s%s", a, b);
	return dst;
}

/* One chunk's three files. */
static void check_chunk(struct sv_container *c, const char *pre, const struct fspec *s,
			const struct fchunk *ch)
{
	char path[512], full[600];
	struct sv_doodle_grid g;
	grid_of(&g, s->size, ch->cx, ch->cy, ch->px, cellw(s->npal));
	struct sv_buf t, bin;
	want_text(s, ch->layer, ch->cx, ch->cy, ch->px, &t);
	snprintf(path, sizeof path, "chunks/%u/%d,%d.txt", ch->layer, ch->cx, ch->cy);
	same_buf(c, cat(full, sizeof full, pre, path), &t);
	sv_buf_init(&bin);
	if (ch->form == F_MAP && s->container == ZIP)
		my_map(&g, true, &bin);
	else
		my_rle(&g, &bin);
	snprintf(path, sizeof path, "chunks/%u/%d,%d.bin", ch->layer, ch->cx, ch->cy);
	same_buf(c, cat(full, sizeof full, pre, path), &bin);
	snprintf(path, sizeof path, "chunks/%u/%d,%d.png", ch->layer, ch->cx, ch->cy);
	check_png(c, cat(full, sizeof full, pre, path), s->size, s->size, g.px, s->npal);
	sv_buf_fini(&t);
	sv_buf_fini(&bin);
	sv_doodle_grid_fini(&g);
}

/* The preview of layer 0: the chunks' bounding claimed, scaled down by a
 * whole factor to fit 2048 pixels; chunks drawn in row order, a later
 * non-empty pixel over an earlier one. */
static void check_preview(struct sv_container *c, const char *pre, const struct fspec *s,
			  const struct fchunk *chs, size_t nch)
{
	int minx = INT32_MAX, miny = INT32_MAX, maxx = INT32_MIN, maxy = INT32_MIN;
	for (size_t i = 0; i < nch; i++) {
		if (chs[i].layer)
			continue;
		minx = chs[i].cx < minx ? chs[i].cx : minx;
		maxx = chs[i].cx > maxx ? chs[i].cx : maxx;
		miny = chs[i].cy < miny ? chs[i].cy : miny;
		maxy = chs[i].cy > maxy ? chs[i].cy : maxy;
	}
	uint32_t w = 1, h = 1, scale = 1;
	if (minx != INT32_MAX) {
		uint32_t W = (uint32_t)(maxx - minx + 1) * s->size;
		uint32_t H = (uint32_t)(maxy - miny + 1) * s->size;
		scale = ((W > H ? W : H) + 2047) / 2048;
		w = (W + scale - 1) / scale;
		h = (H + scale - 1) / scale;
	}
	uint16_t *img = malloc((size_t)w * h * sizeof *img);
	for (size_t i = 0; i < (size_t)w * h; i++)
		img[i] = SV_DOODLE_EMPTY;
	struct fchunk *sorted = malloc((nch ? nch : 1) * sizeof *sorted);
	if (nch)
		memcpy(sorted, chs, nch * sizeof *sorted);
	qsort(sorted, nch, sizeof *sorted, cmp_fchunk);
	for (size_t i = 0; i < nch; i++) {
		if (sorted[i].layer)
			continue;
		struct sv_doodle_grid g;
		grid_of(&g, s->size, sorted[i].cx, sorted[i].cy, sorted[i].px, cellw(s->npal));
		for (uint32_t y = 0; y < s->size; y++)
			for (uint32_t x = 0; x < s->size; x++) {
				uint16_t v = g.px[(size_t)y * s->size + x];
				if (v == SV_DOODLE_EMPTY)
					continue;
				size_t px = ((size_t)(sorted[i].cx - minx) * s->size + x) / scale;
				size_t py = ((size_t)(sorted[i].cy - miny) * s->size + y) / scale;
				img[py * w + px] = v;
			}
		sv_doodle_grid_fini(&g);
	}
	free(sorted);
	char full[600];
	check_png(c, cat(full, sizeof full, pre, "preview.png"), w, h, img, s->npal);
	free(img);
}

/*
 * The whole tree of a drawing under pre ("" or "levels/x/"), as described
 * by s, with chs[0..nch) its chunks now (s's own by default).
 */
static void check_drawing_as(struct sv_container *c, const char *pre, const struct fspec *s,
			     const struct fchunk *chs, size_t nch)
{
	struct listing l;
	char want[4096], full[600];
	snprintf(want, sizeof want, "%sassets chunks %s preview.png", *pre ? "" : ".savefs ",
		 root_name(s));
	T_STR(want, ls(c, *pre ? pre : "", &l));
	want[0] = '\0';
	for (unsigned k = 0; k < s->nlayers; k++)
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s%u", k ? " " : "", k);
	T_STR(want, ls(c, cat(full, sizeof full, pre, "chunks"), &l));
	struct fchunk *sorted = malloc((nch ? nch : 1) * sizeof *sorted);
	if (nch)
		memcpy(sorted, chs, nch * sizeof *sorted);
	qsort(sorted, nch, sizeof *sorted, cmp_fchunk);
	for (unsigned k = 0; k < s->nlayers; k++) {
		want[0] = '\0';
		for (size_t i = 0; i < nch; i++) {
			if (sorted[i].layer != k)
				continue;
			snprintf(want + strlen(want), sizeof want - strlen(want),
				 "%s%d,%d.bin %d,%d.png %d,%d.txt", want[0] ? " " : "",
				 sorted[i].cx, sorted[i].cy, sorted[i].cx, sorted[i].cy,
				 sorted[i].cx, sorted[i].cy);
		}
		char dir[600];
		snprintf(dir, sizeof dir, "%schunks/%u", pre, k);
		T_STR(want, ls(c, dir, &l));
	}
	for (size_t i = 0; i < nch; i++)
		check_chunk(c, pre, s, &sorted[i]);
	free(sorted);
	T_STR(s->assets_ls, ls(c, cat(full, sizeof full, pre, "assets"), &l));
	for (size_t i = 0; i < s->nas; i++)
		same(c, cat(full, sizeof full, pre, s->as[i].path), s->as[i].data, s->as[i].len);
	char *v = want_view(s);
	same(c, cat(full, sizeof full, pre, root_name(s)), v, strlen(v));
	free(v);
	check_preview(c, pre, s, chs, nch);
}

static void check_drawing(struct sv_container *c, const char *pre, const struct fspec *s)
{
	check_drawing_as(c, pre, s, s->ch, s->nch);
}

static json_int_t jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v)) {
		fprintf(stderr, "  (no integer \"%s\")\n", key);
		return -12345;
	}
	return json_integer_value(v);
}

static const char *jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

struct wantinfo {
	const char *version, *kind;
	json_int_t layers, chunk_size, chunks, bin, jsonm, inl, palette, assets, members;
	size_t warnings;
};

static void check_info(struct sv_container *c, const struct wantinfo *w)
{
	json_t *info = json_of(c, ".savefs/info");
	T_STR("doodle", jstr(info, "format"));
	T_STR(w->version, jstr(info, "format_version"));
	T_STR(w->kind, jstr(info, "kind"));
	json_t *n = json_object_get(info, "counts");
	T_INT(w->layers, jint(n, "layers"));
	T_INT(w->chunk_size, jint(n, "chunk_size"));
	T_INT(w->chunks, jint(n, "chunks"));
	T_INT(w->bin, jint(n, "chunks_bin"));
	T_INT(w->jsonm, jint(n, "chunks_json_member"));
	T_INT(w->inl, jint(n, "chunks_inline"));
	T_INT(w->palette, jint(n, "palette"));
	T_INT(w->assets, jint(n, "assets"));
	T_INT(w->members, jint(n, "zip_members"));
	json_t *warn = json_object_get(info, "warnings");
	if (json_array_size(warn) != w->warnings) {
		char *t = dump(warn, 0);
		fprintf(stderr, "  (warnings: %s)\n", t);
		free(t);
	}
	T_UINT(w->warnings, json_array_size(warn));
	json_decref(info);
}

/* ---- reading every kind of container ------------------------------------------------ */

static void read_all_kinds(void)
{
	static const struct {
		const struct fspec *s;
		struct wantinfo w;
	} cases[] = {
		{&s_v1, {"v1 (JSON)", "level", 1, 4, 4, 0, 0, 4, 3, 2, 0, 0}},
		{&s_v2, {"v2 (gzip JSON)", "level", 1, 4, 4, 0, 0, 4, 3, 2, 0, 0}},
		{&s_v3, {"zip (v3/v3.1/v4)", "level", 1, 4, 4, 0, 4, 0, 3, 2, 7, 0}},
		{&s_v31, {"zip (v3/v3.1/v4)", "level", 1, 4, 4, 4, 0, 0, 3, 2, 7, 0}},
		{&s_v4, {"zip (v3/v3.1/v4)", "level", 1, 4, 4, 4, 0, 0, 3, 3, 8, 0}},
		{&s_mixed, {"zip (v3/v3.1/v4)", "level", 1, 4, 4, 3, 1, 0, 3, 2, 9, 0}},
		{&s_zinl, {"zip (v3/v3.1/v4)", "level", 1, 4, 4, 1, 1, 2, 3, 2, 4, 2}},
		{&s_p70, {"zip (v3/v3.1/v4)", "level", 1, 3, 2, 1, 1, 0, 70, 0, 3, 0}},
		{&s_doodad, {"zip (v3/v3.1/v4)", "doodad", 3, 4, 4, 3, 1, 0, 3, 0, 5, 0}},
		{&s_doodad_v1, {"v1 (JSON)", "doodad", 3, 4, 4, 0, 0, 4, 3, 0, 0, 0}},
		{&s_wide, {"zip (v3/v3.1/v4)", "level", 1, 4, 3, 3, 0, 0, 3, 0, 4, 0}},
		{&s_empty, {"zip (v3/v3.1/v4)", "level", 1, 4, 0, 0, 0, 0, 3, 0, 1, 0}},
	};
	for (size_t k = 0; k < N(cases); k++) {
		const struct fspec *s = cases[k].s;
		fprintf(stderr, "- reading %s\n", s->what);
		struct sv_buf f = build(s);
		struct sv_container *c = open_mem(&f);
		T_STR("doodle", sv_container_format(c)->name);
		/* Nothing decoded by opening or by stat. */
		struct sv_cache_stats cs;
		sv_container_cache_stats(c, &cs);
		T_UINT(0, cs.entries);
		size_t files = check_sizes(c, "");
		/* level.json, preview.png, 3 per chunk, the assets. */
		T_UINT(2 + 3 * s->nch + s->nas, files);
		check_drawing(c, "", s);
		check_info(c, &cases[k].w);
		/* Node flags: a memory container is read-only; PNG views always. */
		T_OK(sv_node(c, node_of(c, "preview.png"))->flags & SV_N_RO);
		if (s->nch) {
			struct sv_stat st;
			char path[128];
			snprintf(path, sizeof path, "chunks/%u/%d,%d.png", s->ch[0].layer,
				 s->ch[0].cx, s->ch[0].cy);
			T_OK(sv_node(c, node_of(c, path))->flags & SV_N_RO);
			snprintf(path, sizeof path, "chunks/%u/%d,%d.txt", s->ch[0].layer,
				 s->ch[0].cx, s->ch[0].cy);
			T_INT(0, sv_stat(c, node_of(c, path), &st));
			T_UINT(S_IFREG | 0444, st.mode);
		}
		sv_container_free(c);
		sv_buf_fini(&f);
	}

	/* The wide level's preview: 601 x 2 chunks of 4 pixels, halved. */
	struct sv_buf fw = build(&s_wide);
	struct sv_container *cw = open_mem(&fw);
	struct sv_blob *pw = content(cw, "preview.png");
	T_OK(pw && pw->len > 24 && be32(pw->data + 16) == 1202 && be32(pw->data + 20) == 4);
	sv_blob_unref(pw);
	sv_container_free(cw);
	sv_buf_fini(&fw);

	/* A few things shown by name. */
	struct sv_buf f = build(&s_v1);
	struct sv_container *c = open_mem(&f);
	/* doodle.md's example: top row index 0, the rest empty. */
	same(c, "chunks/0/0,0.bin", "\x01\x00\x04\xff\xff\x03\x0c", 7);
	static const char txt_b[] =
		"# chunk -1,-1 layer 0 size 4\n"
		"# pixels -4..-1 x -4..-1, 1 character(s) each, top row first\n"
		"# .  empty\n"
		"# 0  #000000  solid\n"
		"# 1  #ff0000  fire\n"
		"# 2  #0000ff80  water\n"
		"1..2\n"
		".1..\n"
		"..1.\n"
		"2..1\n";
	same(c, "chunks/0/-1,-1.txt", txt_b, sizeof txt_b - 1);
	/* The .bin of an inline chunk is computed by its first stat. */
	uint32_t n = node_of(c, "chunks/0/2,0.bin");
	T_OK(sv_node(c, n)->flags & SV_N_LAZYSIZE);
	struct sv_stat st;
	T_INT(0, sv_stat(c, n, &st));
	/* 01, (ffff, 6), (0, 1), (ffff, 8), (1, 1) */
	T_UINT(1 + 4 + 2 + 4 + 2, st.size);
	same(c, "chunks/0/2,0.bin", "\x01\xff\xff\x03\x06\x00\x01\xff\xff\x03\x08\x01\x01", 13);
	/* The view, literally in part. */
	struct sv_blob *b = content(c, "level.json");
	char *view = b ? strndup((const char *)b->data, b->len) : NULL;
	T_HAS(view, "{\n  \"version\": 1,\n  \"gameVersion\": \"0.14.1\",\n  \"title\": "
		    "\"Test level\",");
	T_HAS(view, "\n  \"files\": {},\n");
	T_HAS(view, "\n  \"chunks\": {\n    \"size\": 4,\n    \"chunks\": {},\n"
		    "    \"Layer\": 0\n  },\n");
	T_HAS(view, "\n  \"zzExtra\": {\n    \"nested\": [\n      1,\n      \"two\",\n      null,\n"
		    "      true,\n      2.5\n    ]\n  }\n}\n");
	free(view);
	sv_blob_unref(b);
	/* In name order ("-" sorts before digits in the C locale). */
	struct listing l;
	T_STR("-1,-1.bin -1,-1.png -1,-1.txt 0,0.bin 0,0.png 0,0.txt 1,-1.bin 1,-1.png 1,-1.txt "
	      "2,0.bin 2,0.png 2,0.txt", ls(c, "chunks/0", &l));
	T_STR("large.png", ls(c, "assets/screenshots", &l));
	sv_container_free(c);
	sv_buf_fini(&f);

	/* 70 colours: two characters a cell. */
	f = build(&s_p70);
	c = open_mem(&f);
	b = content(c, "chunks/0/0,0.txt");
	char *t70 = b ? strndup((const char *)b->data, b->len) : NULL;
	T_HAS(t70, "# chunk 0,0 layer 0 size 3\n# pixels 0..2 x 0..2, 2 character(s) each, top "
		   "row first\n# ..  empty\n# 00  #00ff00  c0\n# 01  #03fe07  c1\n");
	T_HAS(t70, "\n# 05  #0ffa23\n# 06  #12f92a  c6\n");
	T_HAS(t70, "\n# 0Z  #b7c2ab  c61\n# 10  #bac1b2  c62\n");
	T_HAS(t70, "\n# 17  #cfbae3  c69\n000a0Z\n1013..\n17..01\n");
	free(t70);
	sv_blob_unref(b);
	sv_container_free(c);
	sv_buf_fini(&f);

	/* The doodad: one palette, three layers, capitalised size keys kept. */
	f = build(&s_doodad);
	c = open_mem(&f);
	json_t *dj = json_of(c, "doodad.json");
	T_INT(4, jint(json_object_get(dj, "size"), "W"));
	T_INT(1, jint(json_object_get(dj, "hitbox"), "X"));
	T_UINT(3, json_array_size(json_object_get(dj, "layers")));
	T_STR("walk-2", jstr(json_array_get(json_object_get(dj, "layers"), 2), "name"));
	json_decref(dj);
	b = content(c, "chunks/2/-1,0.txt");
	char *t2 = b ? strndup((const char *)b->data, b->len) : NULL;
	T_HAS(t2, "# chunk -1,0 layer 2 size 4\n# pixels -4..-1 x 0..3,");
	free(t2);
	sv_blob_unref(b);
	sv_container_free(c);
	sv_buf_fini(&f);
}

/* The mixed zip: the .bin of a chunk stored twice wins; the zip-inline
 * fixture's strays are warned about. */
static void mixed_details(void)
{
	struct sv_buf f = build(&s_zinl);
	struct sv_container *c = open_mem(&f);
	json_t *info = json_of(c, ".savefs/info");
	json_t *warn = json_object_get(info, "warnings");
	char *t = dump(warn, 0);
	T_HAS(t, "chunk key \\\"bogus\\\" in layer 0 is not \\\"x,y\\\": kept, not shown");
	T_HAS(t, "inline file \\\"readme.md\\\" is not {\\\"data\\\": base64} under assets/: kept, "
		 "not shown");
	free(t);
	json_decref(info);
	sv_container_free(c);
	sv_buf_fini(&f);
}

/* Many chunks, every seventh stored twice (the second copy a different
 * colour, right after the first): the table is sorted in a file, by runs
 * and a merge, neither stable; the first copy is shown every time. */
static void twice_in_a_big_table(void)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/tmp/savefs-test-doodle-tab-XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp");
	sv_tab_configure(dir, 64 << 10, 0); /* runs of 3,640 chunks */
	enum { N = 9000, EVERY = 7 };
	struct sv_buf out;
	sv_buf_init(&out);
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, -1, &out);
	static const uint8_t first[] = {1, 1, 16}, second[] = {1, 2, 16};
	for (int i = 0; i < N; i++) {
		char name[64];
		/* x from a stride so that the members are not in table order */
		snprintf(name, sizeof name, "chunks/0/%d,%d.bin", (i * 7919) % N, i % 3);
		zadd(&w, name, first, sizeof first, false);
		if (i % EVERY == 0)
			zadd(&w, name, second, sizeof second, false);
	}
	json_t *r = view_root(&s_v4);
	char *t = dump(r, JSON_COMPACT);
	zadd(&w, "level.json", t, strlen(t), false);
	free(t);
	json_decref(r);
	struct sv_err err;
	need(sv_zip_finish(&w, NULL, 0, &err), "sv_zip_finish");
	sv_zip_writer_fini(&w);
	struct sv_container *c = open_mem(&out);
	size_t wrong = 0, seen = 0;
	for (int i = 0; i < N; i += EVERY) {
		char path[64];
		snprintf(path, sizeof path, "chunks/0/%d,%d.bin", (i * 7919) % N, i % 3);
		struct sv_blob *b = content(c, path);
		seen += b != NULL;
		if (!b || b->len != sizeof first || memcmp(b->data, first, sizeof first))
			wrong++;
		sv_blob_unref(b);
	}
	T_UINT((N + EVERY - 1) / EVERY, seen);
	T_UINT(0, wrong);
	json_t *info = json_of(c, ".savefs/info");
	json_t *warn = json_object_get(info, "warnings");
	char *wt = dump(warn, 0);
	T_HAS(wt, "chunk 0,0 of layer 0 is stored twice (chunks/0/0,0.bin): the second copy "
		  "is kept, not shown");
	free(wt);
	json_decref(info);
	sv_container_free(c);
	sv_buf_fini(&out);
	sv_tab_configure(NULL, SV_TAB_SPILL, 0);
	rmdir(dir);
}

/* ---- levelpacks --------------------------------------------------------------------- */

static struct sv_buf build_pack(void)
{
	struct sv_buf a = build(&s_v2), b = build(&s_v4), d = build(&s_doodad);
	struct sv_buf out;
	sv_buf_init(&out);
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, -1, &out);
	zadd(&w, "levels/a.level", a.p, a.len, false);
	zadd(&w, "levels/b.level", b.p, b.len, false);
	zadd(&w, "doodads/d.doodad", d.p, d.len, false);
	static const char ixj[] =
		"{\"title\":\"Test pack\",\"description\":\"two levels\",\"author\":\"tester\","
		"\"created\":\"2024-01-01T00:00:00Z\",\"levels\":[{\"title\":\"A\",\"author\":"
		"\"t\",\"filename\":\"a.level\"},{\"title\":\"B\",\"author\":\"t\",\"filename\":"
		"\"b.level\"}],\"freeLevels\":1}";
	zadd(&w, "index.json", ixj, sizeof ixj - 1, false);
	struct sv_err err;
	need(sv_zip_finish(&w, NULL, 0, &err), "sv_zip_finish");
	sv_zip_writer_fini(&w);
	sv_buf_fini(&a);
	sv_buf_fini(&b);
	sv_buf_fini(&d);
	return out;
}

static void levelpack(void)
{
	fprintf(stderr, "- levelpack\n");
	struct sv_buf f = build_pack();
	struct sv_container *c = open_mem(&f);
	struct listing l;
	T_STR(".savefs index.json levels doodads", ls(c, "", &l));
	json_t *info = json_of(c, ".savefs/info");
	T_STR("levelpack", jstr(info, "kind"));
	T_STR("zip (v3/v3.1/v4)", jstr(info, "format_version"));
	T_INT(3, jint(json_object_get(info, "counts"), "nested"));
	T_INT(4, jint(json_object_get(info, "counts"), "zip_members"));
	json_decref(info);
	/* Nested drawings are not opened until visited. */
	uint32_t before = sv_node_count(c);
	T_STR("a b", ls(c, "levels", &l));
	T_STR("d", ls(c, "doodads", &l));
	uint32_t na = node_of(c, "levels/a"), nb = node_of(c, "levels/b");
	uint32_t nd = node_of(c, "doodads/d");
	T_OK(sv_node(c, na)->flags & SV_N_LAZYDIR);
	T_OK(sv_node(c, nb)->flags & SV_N_LAZYDIR);
	T_OK(sv_node(c, nd)->flags & SV_N_LAZYDIR);
	T_UINT(0, sv_node(c, na)->nkids);
	T_UINT(before, sv_node_count(c));
	struct sv_cache_stats cs;
	sv_container_cache_stats(c, &cs);
	T_UINT(0, cs.entries);
	/* A lookup in a expands it, and only it. */
	uint32_t j;
	T_INT(0, sv_lookup(c, na, "level.json", &j));
	T_OK(!(sv_node(c, na)->flags & SV_N_LAZYDIR));
	T_OK(sv_node(c, na)->nkids > 0);
	T_OK(sv_node(c, nb)->flags & SV_N_LAZYDIR);
	T_UINT(0, sv_node(c, nb)->nkids);
	uint32_t after_a = sv_node_count(c);
	T_OK(after_a > before);
	/* A listing expands b. */
	T_STR("assets chunks level.json preview.png", ls(c, "levels/b", &l));
	T_OK(!(sv_node(c, nb)->flags & SV_N_LAZYDIR));
	T_OK(sv_node(c, nd)->flags & SV_N_LAZYDIR);
	/* A path through d expands it. */
	T_OK(exists(c, "doodads/d/chunks/2/-1,0.txt"));
	T_OK(!(sv_node(c, nd)->flags & SV_N_LAZYDIR));
	/* index.json: the whole index, pretty. */
	json_t *ix = json_loads("{\"title\":\"Test pack\",\"description\":\"two levels\","
				"\"author\":\"tester\",\"created\":\"2024-01-01T00:00:00Z\","
				"\"levels\":[{\"title\":\"A\",\"author\":\"t\",\"filename\":"
				"\"a.level\"},{\"title\":\"B\",\"author\":\"t\",\"filename\":"
				"\"b.level\"}],\"freeLevels\":1}", 0, NULL);
	char *it = dump(ix, JSON_INDENT(2));
	size_t itn = strlen(it);
	it = realloc(it, itn + 2);
	memcpy(it + itn, "\n", 2);
	same(c, "index.json", it, itn + 1);
	free(it);
	json_decref(ix);
	/* Every nested drawing as if alone, and every size. */
	check_drawing(c, "levels/a/", &s_v2);
	check_drawing(c, "levels/b/", &s_v4);
	check_drawing(c, "doodads/d/", &s_doodad);
	sv_container_free(c);

	/* Fresh: sizes first, walking expands every lazy directory. */
	c = open_mem(&f);
	size_t files = check_sizes(c, "");
	T_UINT(1 + (2 + 3 * s_v2.nch + s_v2.nas) + (2 + 3 * s_v4.nch + s_v4.nas) +
	       (2 + 3 * s_doodad.nch), files);
	sv_container_free(c);
	sv_buf_fini(&f);
}

/* ---- write-back ------------------------------------------------------------------------ */

static char tmpdir[64];
static char dpath[128];

static struct sv_buf fresh(const struct fspec *s)
{
	struct sv_buf f = build(s);
	unlink(dpath);
	write_file(dpath, &f);
	return f;
}

static void dir_clean(void)
{
	only_left(tmpdir, "d.level");
}

/* Replaces the whole content of path and flushes it. */
static int put_file(struct sv_container *c, const char *path, const void *p, size_t n,
		    struct sv_err *err)
{
	sv_err_clear(err);
	uint32_t node = node_of(c, path);
	if (node == SV_NONE)
		return -ENOENT;
	int rc = sv_truncate(c, node, 0, err);
	if (!rc && n)
		rc = sv_write(c, node, 0, p, n, err);
	if (!rc)
		rc = sv_flush(c, node, NULL, NULL, err);
	return rc;
}

static void put_ok(struct sv_container *c, const char *path, const void *p, size_t n)
{
	struct sv_err err;
	int rc = put_file(c, path, p, n, &err);
	if (rc)
		fprintf(stderr, "  (writing %s: %s)\n", path, err.msg);
	T_INT(0, rc);
}

/* Writes the text grid of cells px into chunk (layer, cx, cy) of s. */
static void put_txt(struct sv_container *c, const struct fspec *s, unsigned layer, int cx,
		    int cy, const char *px)
{
	struct sv_buf t;
	want_text(s, layer, cx, cy, px, &t);
	char path[128];
	snprintf(path, sizeof path, "chunks/%u/%d,%d.txt", layer, cx, cy);
	put_ok(c, path, t.p, t.len);
	sv_buf_fini(&t);
}

/* An edit that must be refused with msg, leaving the file as it was. */
static void refuse(struct sv_container *c, const char *path, const void *p, size_t n,
		   const char *msg)
{
	struct sv_buf before = slurp(dpath);
	struct sv_err err;
	int rc = put_file(c, path, p, n, &err);
	T_INT(-EINVAL, rc);
	T_STR(msg, err.msg);
	struct sv_buf after = slurp(dpath);
	T_OK(buf_same(&before, &after));
	uint32_t node = node_of(c, path);
	if (node != SV_NONE)
		T_OK(!(sv_node(c, node)->flags & SV_S_DIRTY));
	char want[600];
	snprintf(want, sizeof want, "refused %s: %s", path, msg);
	T_OK(log_has(c, want));
	sv_buf_fini(&before);
	sv_buf_fini(&after);
}

/* A zip read back from a file, through the module's own reader. */
struct zipv {
	struct sv_buf f;
	struct sv_zip z;
	bool ok;
};

static int buf_read(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	const struct sv_buf *b = arg;
	if (off > b->len || n > b->len - off)
		return sv_err_set(err, -EBADMSG, "past the end");
	memcpy(buf, b->p + off, n);
	return 0;
}

/* An independent reader agrees the file is a sound zip: Python's zipfile
 * reads every member and checks its CRC and local header.  Not counted
 * without python3. */
static void zip_sound(const char *path)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); "
		 "sys.exit(1 if z.testzip() is not None else 0)' '%s' 2>/dev/null", path);
	int rc = system(cmd);
	if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) == 127)
		return;
	if (WEXITSTATUS(rc))
		fprintf(stderr, "  (python's zipfile refuses %s)\n", path);
	T_INT(0, WEXITSTATUS(rc));
}

static void zip_load(struct zipv *v, const char *path)
{
	memset(v, 0, sizeof *v);
	v->f = slurp(path);
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_zip_open(&v->z, buf_read, &v->f, v->f.len, 100000, &err);
	if (rc)
		fprintf(stderr, "  (%s is not a zip: %s)\n", path, err.msg);
	T_INT(0, rc);
	v->ok = !rc;
	if (v->ok)
		zip_sound(path);
}

static void zip_free(struct zipv *v)
{
	if (v->ok)
		sv_zip_fini(&v->z);
	sv_buf_fini(&v->f);
}

static const char *zip_names(struct zipv *v, char *out, size_t n)
{
	out[0] = '\0';
	for (size_t i = 0; v->ok && i < v->z.n; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "", v->z.e[i].name);
	return out;
}

static const struct sv_zip_entry *zip_entry(struct zipv *v, const char *name)
{
	for (size_t i = 0; v->ok && i < v->z.n; i++)
		if (!strcmp(v->z.e[i].name, name))
			return &v->z.e[i];
	return NULL;
}

static struct sv_blob *zip_get(struct zipv *v, const char *name)
{
	const struct sv_zip_entry *e = zip_entry(v, name);
	if (!e) {
		fprintf(stderr, "  (no member %s)\n", name);
		T_OK(0);
		return NULL;
	}
	struct sv_blob *b = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_zip_extract(e, buf_read, &v->f, v->f.len, 1u << 30, &b, &err);
	if (rc)
		fprintf(stderr, "  (member %s: %s)\n", name, err.msg);
	T_INT(0, rc);
	return b;
}

/* Member name is stored identically (method, CRC, sizes, compressed bytes)
 * in both zips: copied, not recompressed. */
static void zip_same_stored(struct zipv *a, struct zipv *b, const char *name)
{
	const struct sv_zip_entry *x = zip_entry(a, name), *y = zip_entry(b, name);
	if (!x || !y) {
		fprintf(stderr, "  (member %s missing)\n", name);
		T_OK(0);
		return;
	}
	T_UINT(x->method, y->method);
	T_UINT(x->crc, y->crc);
	T_UINT(x->csize, y->csize);
	T_UINT(x->usize, y->usize);
	T_UINT(x->mtime, y->mtime);
	T_UINT(x->mdate, y->mdate);
	uint64_t ox, oy;
	struct sv_err err;
	T_INT(0, sv_zip_data_offset(x, buf_read, &a->f, a->f.len, &ox, &err));
	T_INT(0, sv_zip_data_offset(y, buf_read, &b->f, b->f.len, &oy, &err));
	if (x->csize == y->csize && ox + x->csize <= a->f.len && oy + y->csize <= b->f.len)
		T_MEM(a->f.p + ox, b->f.p + oy, x->csize);
}

/* Each member of kept[0..n) is stored identically in a and b. */
static void zip_kept(struct zipv *a, struct zipv *b, const char *const *kept, size_t n)
{
	for (size_t i = 0; i < n; i++)
		zip_same_stored(a, b, kept[i]);
}

/* Loads dpath into now and orig (through the same reader, from a file
 * beside it for a moment) into old. */
static void zip_load_both(struct zipv *now, struct zipv *old, const struct sv_buf *orig)
{
	zip_load(now, dpath);
	char opath[160];
	snprintf(opath, sizeof opath, "%s/orig.level", tmpdir);
	write_file(opath, orig);
	zip_load(old, opath);
	unlink(opath);
}

/* Member name is a .bin holding exactly the cells px, as RLE. */
static void zip_chunk_is(struct zipv *v, const struct fspec *s, const char *name, int cx,
			 int cy, const char *px)
{
	struct sv_blob *b = zip_get(v, name);
	if (!b)
		return;
	struct sv_doodle_grid want, got;
	grid_of(&want, s->size, cx, cy, px, cellw(s->npal));
	need(sv_doodle_grid_init(&got, s->size, cx, cy), "grid");
	struct sv_doodle_quirks q;
	memset(&q, 0, sizeof q);
	struct sv_err err;
	T_UINT(1, b->len ? b->data[0] : 99); /* type 1: RLE */
	T_INT(0, sv_doodle_bin_decode(b->data, b->len, s->npal, &got, &q, &err));
	T_MEM(want.px, got.px, (size_t)s->size * s->size * sizeof *want.px);
	T_UINT(0, q.run_clamped + q.short_by + q.outside + q.bad_index + q.partial);
	struct sv_buf rle;
	sv_buf_init(&rle);
	my_rle(&want, &rle);
	T_UINT(rle.len, b->len);
	if (rle.len == b->len)
		T_MEM(rle.p, b->data, rle.len);
	sv_buf_fini(&rle);
	sv_doodle_grid_fini(&want);
	sv_doodle_grid_fini(&got);
	sv_blob_unref(b);
}

/* The paths of a tree and their node numbers, to compare across commits. */
struct nodes {
	char path[256][256];
	uint32_t node[256];
	size_t n;
};

static void remember(struct sv_container *c, struct nodes *nd, const char *dir)
{
	struct listing l;
	char names[4096];
	snprintf(names, sizeof names, "%s", ls(c, dir, &l));
	for (char *save = NULL, *tok = strtok_r(names, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		if (nd->n >= N(nd->node) || !strcmp(tok, ".savefs"))
			continue;
		char p[256];
		snprintf(p, sizeof p, "%s%s%s", dir, *dir ? "/" : "", tok);
		uint32_t n = node_of(c, p);
		snprintf(nd->path[nd->n], sizeof nd->path[0], "%s", p);
		nd->node[nd->n++] = n;
		if (sv_node(c, n)->flags & SV_N_DIR)
			remember(c, nd, nd->path[nd->n - 1]);
	}
}

/* Every remembered path that still exists kept its node number. */
static void same_nodes(struct sv_container *c, const struct nodes *nd)
{
	size_t moved = 0;
	for (size_t i = 0; i < nd->n; i++) {
		uint32_t n;
		if (sv_resolve(c, nd->path[i], &n))
			continue;
		if (n != nd->node[i] && moved++ < 3)
			fprintf(stderr, "  (%s: node %u, was %u)\n", nd->path[i], n, nd->node[i]);
	}
	T_UINT(0, moved);
}

/* Chunks of s with some replaced (by position) or removed (px NULL) and
 * others added, for check_drawing_as. */
struct chunkset {
	struct fchunk v[16];
	size_t n;
};

static void cs_init(struct chunkset *cs, const struct fspec *s)
{
	cs->n = s->nch;
	if (s->nch)
		memcpy(cs->v, s->ch, s->nch * sizeof *s->ch);
}

static void cs_set(struct chunkset *cs, unsigned layer, int cx, int cy, const char *px)
{
	for (size_t i = 0; i < cs->n; i++)
		if (cs->v[i].layer == layer && cs->v[i].cx == cx && cs->v[i].cy == cy) {
			if (px) {
				cs->v[i].px = px;
				cs->v[i].form = F_RLE;
			} else {
				cs->v[i] = cs->v[--cs->n];
			}
			return;
		}
	if (px && cs->n < N(cs->v))
		cs->v[cs->n++] = (struct fchunk){layer, cx, cy, F_RLE, px};
}

#define PX_B2 "1002" ".1.." "..1." "2..1"
#define PX_A2 "0000" "2..." "...." "...."
#define PX_EMPTY "...." "...." "...." "...."
#define PX_NEW "...." ".12." ".21." "...."

/* A level with no chunk yet gains its first. */
static void empty_level(void)
{
	fprintf(stderr, "- the first chunk of an empty level\n");
	struct sv_buf orig = fresh(&s_empty);
	struct sv_container *c = open_file(dpath);
	uint32_t n = SV_NONE;
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_create(c, node_of(c, "chunks/0"), "-1,-1.txt", 0644, &n, &err));
	T_INT(0, sv_write(c, n, 0, "1..2\n.1..\n..1.\n2..1\n", 20, &err));
	sv_err_clear(&err);
	int rc = sv_flush(c, n, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (flush: %s)\n", err.msg);
	T_INT(0, rc);
	static const struct fchunk one[] = {{0, -1, -1, F_RLE, PX_B}};
	check_sizes(c, "");
	/* (Listing order in this handle after a creation is the core's.) */
	check_chunk(c, "", &s_empty, &one[0]);
	check_preview(c, "", &s_empty, one, 1);
	sv_container_free(c);
	c = open_file(dpath);
	check_drawing_as(c, "", &s_empty, one, 1);
	sv_container_free(c);
	struct zipv a;
	zip_load(&a, dpath);
	char names[256];
	T_STR("chunks/0/-1,-1.bin level.json", zip_names(&a, names, sizeof names));
	zip_free(&a);
	sv_buf_fini(&orig);
	dir_clean();
}

/* Another program rewrites the level in place while its preview is made:
 * every chunk fails; the preview is refused, never a blank image. */
static void preview_while_rewritten(void)
{
	fprintf(stderr, "- a preview while the file is rewritten in place\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	int fd = open(dpath, O_WRONLY);
	T_OK(fd >= 0);
	static uint8_t zeros[1 << 16];
	T_INT((ssize_t)(orig.len - 4), pwrite(fd, zeros, orig.len - 4 < sizeof zeros
						       ? orig.len - 4 : sizeof zeros, 4));
	struct timespec later[2] = {{0, UTIME_OMIT}, {time(NULL) + 100, 0}};
	T_INT(0, futimens(fd, later));
	close(fd);
	uint32_t n = node_of(c, "preview.png");
	struct sv_blob *b = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(-EIO, sv_content(c, n, &b, &err));
	T_STR("doodle: the file was changed by another program while its preview was made: not "
	      "shown", err.msg);
	sv_blob_unref(b);
	sv_container_free(c);
	sv_buf_fini(&orig);
	dir_clean();
}

/* A v4 zip: a chunk's text edited, then another in a second commit. */
static void edit_txt_v4(void)
{
	fprintf(stderr, "- edit .txt in a v4 zip\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	struct nodes nd;
	memset(&nd, 0, sizeof nd);
	remember(c, &nd, "");
	uint32_t txt = node_of(c, "chunks/0/-1,-1.txt");
	struct sv_stat st;
	T_INT(0, sv_stat(c, txt, &st));
	T_OK(st.writable);
	T_UINT(S_IFREG | 0644, st.mode);
	T_INT(0, sv_stat(c, node_of(c, "chunks/0/-1,-1.png"), &st));
	T_UINT(S_IFREG | 0444, st.mode);
	T_INT(0, sv_stat(c, node_of(c, "level.json"), &st));
	T_UINT(S_IFREG | 0644, st.mode);

	put_txt(c, &s_v4, 0, -1, -1, PX_B2);
	struct chunkset cs;
	cs_init(&cs, &s_v4);
	cs_set(&cs, 0, -1, -1, PX_B2);
	same_nodes(c, &nd);
	check_sizes(c, "");
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	T_OK(log_has(c, "committed "));

	/* On disk: the chunk is an RLE member in the same place; every other
	 * member is copied as stored. */
	struct zipv a, b;
	/* The original in b, through the same reader. */
	zip_load_both(&a, &b, &orig);
	char n1[1024], n2[1024];
	T_STR(zip_names(&b, n1, sizeof n1), zip_names(&a, n2, sizeof n2));
	zip_chunk_is(&a, &s_v4, "chunks/0/-1,-1.bin", -1, -1, PX_B2);
	static const char *const kept[] = {"chunks/0/0,0.bin", "chunks/0/1,-1.bin",
					   "chunks/0/2,0.bin", A_PNG, A_TOP, A_PAPER,
					   "level.json"};
	zip_kept(&b, &a, kept, N(kept));
	zip_free(&a);

	/* A second commit on the same handle; the views of the edited chunk
	 * and the preview are reported changed, another chunk's are not. */
	struct changes chg;
	memset(&chg, 0, sizeof chg);
	uint32_t t00 = node_of(c, "chunks/0/0,0.txt");
	struct sv_buf tx;
	want_text(&s_v4, 0, 0, 0, PX_A2, &tx);
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_truncate(c, t00, 0, &err));
	T_INT(0, sv_write(c, t00, 0, tx.p, tx.len, &err));
	sv_buf_fini(&tx);
	T_INT(0, sv_flush(c, t00, on_change, &chg, &err));
	T_OK(changed(&chg, t00));
	T_OK(changed(&chg, node_of(c, "chunks/0/0,0.bin")));
	T_OK(changed(&chg, node_of(c, "chunks/0/0,0.png")));
	T_OK(changed(&chg, node_of(c, "preview.png")));
	T_OK(!changed(&chg, node_of(c, "chunks/0/2,0.txt")));
	T_OK(!changed(&chg, node_of(c, A_TOP)));
	cs_set(&cs, 0, 0, 0, PX_A2);
	same_nodes(c, &nd);
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	sv_container_free(c);

	c = open_file(dpath);
	check_sizes(c, "");
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	sv_container_free(c);
	zip_load(&a, dpath);
	T_STR(zip_names(&b, n1, sizeof n1), zip_names(&a, n2, sizeof n2));
	zip_chunk_is(&a, &s_v4, "chunks/0/-1,-1.bin", -1, -1, PX_B2);
	zip_chunk_is(&a, &s_v4, "chunks/0/0,0.bin", 0, 0, PX_A2);
	zip_kept(&b, &a, kept + 1, N(kept) - 1);
	zip_free(&a);
	zip_free(&b);
	sv_buf_fini(&orig);
	dir_clean();
}

/* Edits through .bin, a temporary file renamed over a .txt, and a chunk
 * emptied. */
static void edit_other_ways(void)
{
	fprintf(stderr, "- .bin edits, rename, emptied chunk\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	struct chunkset cs;
	cs_init(&cs, &s_v4);
	/* Raw RLE bytes written to a .bin. */
	struct sv_doodle_grid g;
	grid_of(&g, 4, 1, -1, PX_NEW, 1);
	struct sv_buf rle;
	sv_buf_init(&rle);
	my_rle(&g, &rle);
	put_ok(c, "chunks/0/1,-1.bin", rle.p, rle.len);
	cs_set(&cs, 0, 1, -1, PX_NEW);
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	/* A map-accessor .bin is accepted too, and stored as RLE. */
	struct sv_buf map;
	sv_buf_init(&map);
	sv_doodle_grid_fini(&g);
	grid_of(&g, 4, 2, 0, PX_NEW, 1);
	my_map(&g, true, &map);
	put_ok(c, "chunks/0/2,0.bin", map.p, map.len);
	cs_set(&cs, 0, 2, 0, PX_NEW);
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	sv_doodle_grid_fini(&g);
	sv_buf_fini(&map);
	sv_buf_fini(&rle);
	/* A bad .bin: runs past the end of the chunk. */
	refuse(c, "chunks/0/1,-1.bin", "\x01\x00\x11", 3, "RLE runs go past the end of the chunk");
	refuse(c, "chunks/0/1,-1.bin", "\x07\x00", 2, "chunk type 7 not supported");
	/* An editor's way: a temporary file renamed over the .txt. */
	uint32_t dir = node_of(c, "chunks/0"), t = SV_NONE;
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_create(c, dir, ".-1,-1.txt.swp", 0644, &t, &err));
	T_OK(t != SV_NONE && (sv_node(c, t)->flags & SV_S_TEMP));
	struct sv_buf text;
	want_text(&s_v4, 0, -1, -1, PX_NEW, &text);
	T_INT(0, sv_write(c, t, 0, text.p, text.len, &err));
	sv_buf_fini(&text);
	sv_err_clear(&err);
	int rc = sv_rename(c, dir, ".-1,-1.txt.swp", dir, "-1,-1.txt", 0, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (rename: %s)\n", err.msg);
	T_INT(0, rc);
	cs_set(&cs, 0, -1, -1, PX_NEW);
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	/* An all-empty grid removes the chunk. */
	put_txt(c, &s_v4, 0, 0, 0, PX_EMPTY);
	cs_set(&cs, 0, 0, 0, NULL);
	T_OK(!exists(c, "chunks/0/0,0.txt"));
	T_OK(!exists(c, "chunks/0/0,0.bin"));
	T_OK(!exists(c, "chunks/0/0,0.png"));
	check_sizes(c, "");
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	sv_container_free(c);

	c = open_file(dpath);
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	sv_container_free(c);
	struct zipv a;
	zip_load(&a, dpath);
	char names[1024];
	T_STR("chunks/0/-1,-1.bin chunks/0/1,-1.bin chunks/0/2,0.bin " A_PNG " " A_TOP " "
	      A_PAPER " level.json", zip_names(&a, names, sizeof names));
	zip_chunk_is(&a, &s_v4, "chunks/0/1,-1.bin", 1, -1, PX_NEW);
	zip_chunk_is(&a, &s_v4, "chunks/0/2,0.bin", 2, 0, PX_NEW);
	zip_chunk_is(&a, &s_v4, "chunks/0/-1,-1.bin", -1, -1, PX_NEW);
	zip_free(&a);
	sv_buf_fini(&orig);
	dir_clean();
}

/* A v3 zip: a JSON member chunk edited becomes a .bin member. */
static void edit_json_member(void)
{
	fprintf(stderr, "- edit a .json member chunk\n");
	struct sv_buf orig = fresh(&s_v3);
	struct sv_container *c = open_file(dpath);
	uint32_t bin = node_of(c, "chunks/0/1,-1.bin");
	T_OK(sv_node(c, bin)->flags & SV_N_LAZYSIZE);
	put_txt(c, &s_v3, 0, 1, -1, PX_NEW);
	T_UINT(bin, node_of(c, "chunks/0/1,-1.bin"));
	T_OK(!(sv_node(c, bin)->flags & SV_N_LAZYSIZE));
	struct chunkset cs;
	cs_init(&cs, &s_v3);
	cs_set(&cs, 0, 1, -1, PX_NEW);
	check_sizes(c, "");
	check_drawing_as(c, "", &s_v3, cs.v, cs.n);
	/* A JSON member chunk removed. */
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_unlink(c, node_of(c, "chunks/0"), "0,0.txt", NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (unlink: %s)\n", err.msg);
	T_INT(0, rc);
	cs_set(&cs, 0, 0, 0, NULL);
	check_sizes(c, "");
	check_drawing_as(c, "", &s_v3, cs.v, cs.n);
	sv_container_free(c);
	struct zipv a, b;
	zip_load_both(&a, &b, &orig);
	char names[1024];
	T_STR("chunks/0/-1,-1.json chunks/0/1,-1.bin chunks/0/2,0.json " A_PNG
	      " " A_PAPER " level.json", zip_names(&a, names, sizeof names));
	T_OK(zip_entry(&a, "chunks/0/1,-1.json") == NULL);
	zip_chunk_is(&a, &s_v3, "chunks/0/1,-1.bin", 1, -1, PX_NEW);
	static const char *const kept[] = {"chunks/0/-1,-1.json", "chunks/0/2,0.json", A_PNG,
					   A_PAPER, "level.json"};
	zip_kept(&b, &a, kept, N(kept));
	zip_free(&a);
	zip_free(&b);
	c = open_file(dpath);
	check_drawing_as(c, "", &s_v3, cs.v, cs.n);
	json_t *info = json_of(c, ".savefs/info");
	T_INT(1, jint(json_object_get(info, "counts"), "chunks_bin"));
	T_INT(2, jint(json_object_get(info, "counts"), "chunks_json_member"));
	json_decref(info);
	sv_container_free(c);
	sv_buf_fini(&orig);
	dir_clean();
}

/* The mixed zip: the chunk stored twice is edited (both members go), a
 * map chunk edited, unknown and stored members kept. */
/* Chunks created and removed. */
static void create_and_remove_chunks(void)
{
	fprintf(stderr, "- create and remove chunks\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	struct nodes nd;
	memset(&nd, 0, sizeof nd);
	remember(c, &nd, "");
	uint32_t dir = node_of(c, "chunks/0"), n = SV_NONE;
	struct sv_err err;
	sv_err_clear(&err);
	/* The grid alone, without the comment lines, is enough. */
	T_INT(0, sv_create(c, dir, "9,9.txt", 0644, &n, &err));
	T_OK(n != SV_NONE && (sv_node(c, n)->flags & SV_S_NEW));
	static const char rows[] = "....\n.12.\n.21.\n....\n";
	T_INT(0, sv_write(c, n, 0, rows, sizeof rows - 1, &err));
	sv_err_clear(&err);
	int rc = sv_flush(c, n, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (flush: %s)\n", err.msg);
	T_INT(0, rc);
	T_UINT(n, node_of(c, "chunks/0/9,9.txt"));
	T_OK(!(sv_node(c, n)->flags & SV_S_NEW));
	struct chunkset cs;
	cs_init(&cs, &s_v4);
	cs_set(&cs, 0, 9, 9, PX_NEW);
	same_nodes(c, &nd);
	check_sizes(c, "");
	/* (The listing order inside this handle is the core's business; a
	 * fresh open is checked below.) */
	{
		char path[64];
		struct sv_buf t;
		want_text(&s_v4, 0, 9, 9, PX_NEW, &t);
		snprintf(path, sizeof path, "chunks/0/9,9.txt");
		same_buf(c, path, &t);
		sv_buf_fini(&t);
	}
	/* A .bin created with RLE bytes, at negative coordinates (it sorts
	 * first: every index moves). */
	struct sv_doodle_grid g;
	grid_of(&g, 4, -3, -3, PX_B, 1);
	struct sv_buf rle;
	sv_buf_init(&rle);
	my_rle(&g, &rle);
	sv_doodle_grid_fini(&g);
	T_INT(0, sv_create(c, dir, "-3,-3.bin", 0644, &n, &err));
	T_INT(0, sv_write(c, n, 0, rle.p, rle.len, &err));
	sv_buf_fini(&rle);
	/* An empty new chunk is not stored. */
	uint32_t e = SV_NONE;
	T_INT(0, sv_create(c, dir, "5,5.txt", 0644, &e, &err));
	T_INT(0, sv_write(c, e, 0, "....\n....\n....\n....\n", 20, &err));
	/* Not a chunk name, but shaped like the directory's own files: refused
	 * (held in memory, it would be lost at unmount); an editor's scratch
	 * name is a temporary file. */
	uint32_t tmp = SV_NONE;
	sv_err_clear(&err);
	T_INT(-EPERM, sv_create(c, dir, "notes.txt", 0644, &tmp, &err));
	T_STR("not a name the container takes here (it would be held in memory only, and lost "
	      "at unmount)", err.msg);
	T_INT(0, sv_create(c, dir, "sedX1b2c3", 0644, &tmp, &err));
	T_OK(tmp != SV_NONE && (sv_node(c, tmp)->flags & SV_S_TEMP));
	/* Taken names. */
	T_INT(-EEXIST, sv_create(c, dir, "0,0.txt", 0644, &tmp, &err));
	sv_err_clear(&err);
	rc = sv_commit(c, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (commit: %s)\n", err.msg);
	T_INT(0, rc);
	cs_set(&cs, 0, -3, -3, PX_B);
	same_nodes(c, &nd);
	T_OK(!exists(c, "chunks/0/5,5.bin"));
	T_OK(!exists(c, "chunks/0/5,5.txt"));
	check_sizes(c, "");
	for (size_t i = 0; i < cs.n; i++)
		check_chunk(c, "", &s_v4, &cs.v[i]);
	/* Removing a chunk's text removes the chunk, at once. */
	sv_err_clear(&err);
	rc = sv_unlink(c, dir, "2,0.txt", NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (unlink: %s)\n", err.msg);
	T_INT(0, rc);
	T_OK(!exists(c, "chunks/0/2,0.txt"));
	T_OK(!exists(c, "chunks/0/2,0.bin"));
	T_OK(!exists(c, "chunks/0/2,0.png"));
	/* ... and so does removing its .bin. */
	sv_err_clear(&err);
	rc = sv_unlink(c, dir, "1,-1.bin", NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (unlink: %s)\n", err.msg);
	T_INT(0, rc);
	T_OK(!exists(c, "chunks/0/1,-1.txt"));
	cs_set(&cs, 0, 2, 0, NULL);
	cs_set(&cs, 0, 1, -1, NULL);
	/* Views cannot be removed. */
	sv_err_clear(&err);
	T_INT(-EPERM, sv_unlink(c, dir, "0,0.png", NULL, NULL, &err));
	T_INT(-EPERM, sv_unlink(c, SV_ROOT, "level.json", NULL, NULL, &err));
	T_INT(-EPERM, sv_unlink(c, SV_ROOT, "preview.png", NULL, NULL, &err));
	T_INT(-EISDIR, sv_unlink(c, SV_ROOT, "chunks", NULL, NULL, &err));
	T_OK(exists(c, "chunks/0/0,0.png"));
	T_INT(0, sv_unlink(c, dir, "sedX1b2c3", NULL, NULL, &err));
	same_nodes(c, &nd);
	check_sizes(c, "");
	sv_container_free(c);

	c = open_file(dpath);
	check_drawing_as(c, "", &s_v4, cs.v, cs.n);
	check_sizes(c, "");
	sv_container_free(c);
	struct zipv a;
	zip_load(&a, dpath);
	char names[1024];
	T_STR("chunks/0/0,0.bin chunks/0/-1,-1.bin " A_PNG " " A_TOP " " A_PAPER
	      " chunks/0/9,9.bin chunks/0/-3,-3.bin level.json",
	      zip_names(&a, names, sizeof names));
	zip_chunk_is(&a, &s_v4, "chunks/0/9,9.bin", 9, 9, PX_NEW);
	zip_chunk_is(&a, &s_v4, "chunks/0/-3,-3.bin", -3, -3, PX_B);
	zip_free(&a);
	sv_buf_fini(&orig);
	dir_clean();
}

/* Attached files: added, replaced, removed. */
static void assets_zip(void)
{
	fprintf(stderr, "- assets in a zip\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	struct sv_err err;
	uint32_t n = SV_NONE;
	sv_err_clear(&err);
	T_INT(0, sv_create(c, node_of(c, "assets/screenshots"), "small.png", 0644, &n, &err));
	T_OK(n != SV_NONE && (sv_node(c, n)->flags & SV_S_NEW));
	T_INT(0, sv_write(c, n, 0, "tiny", 4, &err));
	T_INT(0, sv_create(c, node_of(c, "assets"), "new.txt", 0644, &n, &err));
	T_INT(0, sv_write(c, n, 0, "new\n", 4, &err));
	/* Flushing one file leaves the new ones pending; a commit takes them. */
	put_ok(c, A_PAPER, "replaced\n", 9);
	T_OK(sv_node(c, n)->flags & SV_S_NEW);
	sv_err_clear(&err);
	int rc = sv_commit(c, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (commit: %s)\n", err.msg);
	T_INT(0, rc);
	T_OK(!(sv_node(c, n)->flags & SV_S_NEW));
	sv_err_clear(&err);
	rc = sv_unlink(c, node_of(c, "assets/screenshots"), "large.png", NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (unlink: %s)\n", err.msg);
	T_INT(0, rc);
	struct listing l;
	T_STR("small.png", ls(c, "assets/screenshots", &l));
	same(c, "assets/screenshots/small.png", "tiny", 4);
	same(c, "assets/new.txt", "new\n", 4);
	same(c, A_PAPER, "replaced\n", 9);
	check_sizes(c, "");
	sv_container_free(c);
	c = open_file(dpath);
	T_STR("new.txt screenshots top.txt wallpapers", ls(c, "assets", &l));
	same(c, "assets/screenshots/small.png", "tiny", 4);
	same(c, "assets/new.txt", "new\n", 4);
	same(c, A_PAPER, "replaced\n", 9);
	same(c, A_TOP, top, sizeof top - 1);
	T_OK(!exists(c, A_PNG));
	static const struct fasset as_now[] = {
		{"assets/new.txt", "new\n", 4, false, false},
		{"assets/screenshots/small.png", "tiny", 4, false, false},
		{A_TOP, top, sizeof top - 1, false, false},
		{A_PAPER, "replaced\n", 9, false, false},
	};
	struct fspec s2 = s_v4;
	s2.as = as_now;
	s2.nas = N(as_now);
	s2.assets_ls = "new.txt screenshots top.txt wallpapers";
	check_drawing(c, "", &s2);
	sv_container_free(c);
	struct zipv a, b;
	zip_load_both(&a, &b, &orig);
	char names[1024];
	T_STR("chunks/0/0,0.bin chunks/0/-1,-1.bin chunks/0/1,-1.bin chunks/0/2,0.bin " A_TOP
	      " " A_PAPER " assets/screenshots/small.png assets/new.txt level.json",
	      zip_names(&a, names, sizeof names));
	static const char *const kept[] = {"chunks/0/0,0.bin", "chunks/0/-1,-1.bin",
					   "chunks/0/1,-1.bin", "chunks/0/2,0.bin", A_TOP,
					   "level.json"};
	zip_kept(&b, &a, kept, N(kept));
	zip_free(&a);
	zip_free(&b);
	sv_buf_fini(&orig);
	dir_clean();
}

/* A JSON view edited: the whole text, with one change. */
static char *edited_view(struct sv_container *c, const char *path,
			 void (*change)(json_t *r, void *arg), void *arg)
{
	json_t *r = json_of(c, path);
	change(r, arg);
	char *t = dump(r, JSON_INDENT(2));
	json_decref(r);
	return t;
}

static void ch_title(json_t *r, void *arg)
{
	json_object_set_new(r, "title", json_string(arg));
}

static void ch_title_num(json_t *r, void *arg)
{
	json_object_set_new(r, "title", json_integer(7));
	(void)arg;
}

static void ch_colour(json_t *r, void *arg)
{
	json_t *sw = json_array_get(json_object_get(json_object_get(r, "palette"), "swatches"), 1);
	json_object_set_new(sw, "color", json_string("red"));
	(void)arg;
}

static void ch_size(json_t *r, void *arg)
{
	json_object_set_new(json_object_get(r, "chunks"), "size", json_integer(8));
	(void)arg;
}

static void ch_map(json_t *r, void *arg)
{
	json_object_set_new(json_object_get(json_object_get(r, "chunks"), "chunks"), "0,0",
			    json_pack("{s:i,s:{s:i}}", "type", 0, "data", "0,0", 1));
	(void)arg;
}

static void ch_files(json_t *r, void *arg)
{
	json_object_set_new(json_object_get(r, "files"), "assets/x",
			    json_pack("{s:s}", "data", "eA=="));
	(void)arg;
}

static void ch_layers(json_t *r, void *arg)
{
	json_array_remove(json_object_get(r, "layers"), 2);
	(void)arg;
}

static void ch_layer_size(json_t *r, void *arg)
{
	json_t *l = json_array_get(json_object_get(r, "layers"), 1);
	json_object_set_new(json_object_get(l, "chunks"), "size", json_integer(5));
	(void)arg;
}

static void put_view(struct sv_container *c, const char *path,
		     void (*change)(json_t *, void *), void *arg)
{
	char *t = edited_view(c, path, change, arg);
	put_ok(c, path, t, strlen(t));
	free(t);
}

static void refuse_view(struct sv_container *c, const char *path,
			void (*change)(json_t *, void *), const char *msg)
{
	char *t = edited_view(c, path, change, NULL);
	refuse(c, path, t, strlen(t), msg);
	free(t);
}

/* The expected view with a new title. */
static char *view_titled(const struct fspec *s, const char *title)
{
	struct fspec s2 = *s;
	s2.title = title;
	return want_view(&s2);
}

static void edit_root_json(void)
{
	fprintf(stderr, "- edit level.json and doodad.json\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	/* Refused, each with its reason, the file untouched: new bytes, or
	 * the view with one change. */
	static const struct {
		const char *bytes;
		void (*change)(json_t *, void *);
		const char *msg;
	} level_refused[] = {
		{"[1, 2]\n", NULL, "level.json: not a JSON object"},
		{"{\"title\": ", NULL, "level.json: line 1, column 10: unexpected token near end of file"},
		{NULL, ch_title_num, "level.json: \"title\" must be a string"},
		{NULL, ch_colour, "level.json: palette swatch 1: \"color\" \"red\" is not #rgb, "
				  "#rrggbb or #rrggbbaa"},
		{NULL, ch_size, "level.json: chunks: \"size\" must stay 4: the chunks are stored at "
				"that size"},
		{NULL, ch_map, "level.json: chunks: \"chunks\" must stay {}: edit chunks as the files "
			       "in chunks/"},
		{NULL, ch_files, "level.json: \"files\" must stay {}: edit attached files in assets/"},
	};
	for (size_t i = 0; i < sizeof level_refused / sizeof *level_refused; i++) {
		if (level_refused[i].bytes)
			refuse(c, "level.json", level_refused[i].bytes, strlen(level_refused[i].bytes),
			       level_refused[i].msg);
		else
			refuse_view(c, "level.json", level_refused[i].change, level_refused[i].msg);
	}
	/* Still as built. */
	struct sv_buf now = slurp(dpath);
	T_OK(buf_same(&orig, &now));
	sv_buf_fini(&now);
	char *v = want_view(&s_v4);
	same(c, "level.json", v, strlen(v));
	free(v);

	/* Accepted: a new title; unknown keys stay. */
	put_view(c, "level.json", ch_title, "Renamed");
	v = view_titled(&s_v4, "Renamed");
	same(c, "level.json", v, strlen(v));
	free(v);
	check_sizes(c, "");
	/* A second commit. */
	put_txt(c, &s_v4, 0, 0, 0, PX_A2);
	sv_container_free(c);
	c = open_file(dpath);
	v = view_titled(&s_v4, "Renamed");
	same(c, "level.json", v, strlen(v));
	free(v);
	struct chunkset cs;
	cs_init(&cs, &s_v4);
	cs_set(&cs, 0, 0, 0, PX_A2);
	for (size_t i = 0; i < cs.n; i++)
		check_chunk(c, "", &s_v4, &cs.v[i]);
	sv_container_free(c);
	/* The member as the game reads it: maps empty, unknown keys kept. */
	struct zipv a;
	zip_load(&a, dpath);
	json_t *r = json_of_blob(zip_get(&a, "level.json"), "level.json member");
	T_STR("Renamed", jstr(r, "title"));
	T_OK(json_is_object(json_object_get(r, "zzExtra")));
	T_INT(0, jint(json_object_get(r, "chunks"), "Layer"));
	T_UINT(0, json_object_size(json_object_get(json_object_get(r, "chunks"), "chunks")));
	T_INT(4, jint(json_object_get(r, "chunks"), "size"));
	T_UINT(3, json_array_size(json_object_get(json_object_get(r, "palette"), "swatches")));
	json_decref(r);
	char names[1024];
	T_STR("chunks/0/0,0.bin chunks/0/-1,-1.bin chunks/0/1,-1.bin chunks/0/2,0.bin " A_PNG
	      " " A_TOP " " A_PAPER " level.json", zip_names(&a, names, sizeof names));
	zip_free(&a);
	sv_buf_fini(&orig);

	/* A doodad: its layers stay, and their sizes. */
	orig = fresh(&s_doodad);
	c = open_file(dpath);
	refuse_view(c, "doodad.json", ch_layers,
		    "doodad.json: \"layers\" must keep its 3 layer(s): their chunks are stored by "
		    "layer number");
	refuse_view(c, "doodad.json", ch_layer_size, "doodad.json: layer 1: \"size\" must stay "
						     "4: the chunks are stored at that size");
	now = slurp(dpath);
	T_OK(buf_same(&orig, &now));
	sv_buf_fini(&now);
	put_view(c, "doodad.json", ch_title, "Runner");
	/* A layer-2 JSON member chunk edited. */
	put_txt(c, &s_doodad, 2, 0, 0, PX_NEW);
	sv_container_free(c);
	c = open_file(dpath);
	v = view_titled(&s_doodad, "Runner");
	same(c, "doodad.json", v, strlen(v));
	free(v);
	cs_init(&cs, &s_doodad);
	cs_set(&cs, 2, 0, 0, PX_NEW);
	struct fspec sd = s_doodad;
	sd.title = "Runner";
	check_drawing_as(c, "", &sd, cs.v, cs.n);
	sv_container_free(c);
	zip_load(&a, dpath);
	T_STR("chunks/0/0,0.bin chunks/1/0,0.bin chunks/2/0,0.bin chunks/2/-1,0.bin doodad.json",
	      zip_names(&a, names, sizeof names));
	zip_chunk_is(&a, &s_doodad, "chunks/2/0,0.bin", 0, 0, PX_NEW);
	r = json_of_blob(zip_get(&a, "doodad.json"), "doodad.json member");
	T_INT(4, jint(json_object_get(r, "size"), "H"));
	T_UINT(3, json_array_size(json_object_get(r, "layers")));
	json_decref(r);
	zip_free(&a);
	sv_buf_fini(&orig);
	dir_clean();
}

static void refused_txt(void)
{
	fprintf(stderr, "- refused text grids\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	struct sv_buf t;
	/* Grids refused, each with its reason: 16 cells under the view's
	 * comment lines (rows are lines 7-10, after 6 comment lines), or the
	 * text as given. */
	static const struct {
		const char *cells, *text, *msg;
	} grid_refused[] = {
		{"1..2" ".*.." "..1." "2..1", NULL,
		 "line 8, column 2: '*' is not a palette code (palette has 3 colours)"},
		/* 'x' is a base-62 digit: 33. */
		{"1..2" ".x.." "..1." "2..1", NULL,
		 "line 8, column 2: index 33 is past the palette (3 colours)"},
		{NULL, "1..2\n.?..\n..1.\n2..1\n", "line 2, column 2: '?' is a bad pixel, not a palette code"},
		{"1..2" ".5.." "..1." "2..1", NULL, "line 8, column 2: index 5 is past the palette (3 colours)"},
		{NULL, "1..2\n.1..\n..1.\n", "3 rows, expected 4"},
		{NULL, "1..2\n.1..\n..1.\n2..1\n....\n", "5 rows, expected 4"},
		{NULL, "1..2\n.1..\n..1\n2..1\n", "line 3: 3 cells, expected 4"},
	};
	for (size_t i = 0; i < sizeof grid_refused / sizeof *grid_refused; i++) {
		if (grid_refused[i].cells) {
			want_text(&s_v4, 0, -1, -1, grid_refused[i].cells, &t);
			refuse(c, "chunks/0/-1,-1.txt", t.p, t.len, grid_refused[i].msg);
			sv_buf_fini(&t);
		} else {
			refuse(c, "chunks/0/-1,-1.txt", grid_refused[i].text,
			       strlen(grid_refused[i].text), grid_refused[i].msg);
		}
	}
	/* A new chunk with a bad grid is refused too, and not created. */
	uint32_t n = SV_NONE;
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_create(c, node_of(c, "chunks/0"), "7,7.txt", 0644, &n, &err));
	T_INT(0, sv_write(c, n, 0, "zz\n", 3, &err));
	sv_err_clear(&err);
	T_INT(-EINVAL, sv_flush(c, n, NULL, NULL, &err));
	T_STR("line 1: 2 cells, expected 4", err.msg);
	T_OK(!exists(c, "chunks/0/7,7.txt"));
	struct sv_buf now = slurp(dpath);
	T_OK(buf_same(&orig, &now));
	sv_buf_fini(&now);
	check_drawing(c, "", &s_v4);
	sv_container_free(c);
	sv_buf_fini(&orig);
	dir_clean();
}

/* v1 stays a JSON object, v2 stays gzip. */
static void json_containers(void)
{
	for (int k = 0; k < 2; k++) {
		const struct fspec *s = k ? &s_v2 : &s_v1;
		fprintf(stderr, "- write back %s\n", s->what);
		struct sv_buf orig = fresh(s);
		struct sv_container *c = open_file(dpath);
		struct nodes nd;
		memset(&nd, 0, sizeof nd);
		remember(c, &nd, "");
		put_txt(c, s, 0, -1, -1, PX_B2);
		same_nodes(c, &nd);
		put_ok(c, A_PAPER, "replaced\n", 9);
		struct sv_err err;
		uint32_t n = SV_NONE;
		sv_err_clear(&err);
		T_INT(0, sv_create(c, node_of(c, "chunks/0"), "-2,3.txt", 0644, &n, &err));
		T_INT(0, sv_write(c, n, 0, "....\n.12.\n.21.\n....\n", 20, &err));
		T_INT(0, sv_create(c, node_of(c, "assets"), "new.txt", 0644, &n, &err));
		T_INT(0, sv_write(c, n, 0, "new\n", 4, &err));
		sv_err_clear(&err);
		int rc = sv_commit(c, NULL, NULL, &err);
		if (rc)
			fprintf(stderr, "  (commit: %s)\n", err.msg);
		T_INT(0, rc);
		T_INT(0, sv_unlink(c, node_of(c, "assets/screenshots"), "large.png", NULL, NULL,
				   &err));
		T_INT(0, sv_unlink(c, node_of(c, "chunks/0"), "2,0.txt", NULL, NULL, &err));
		put_view(c, "level.json", ch_title, "Renamed");
		same_nodes(c, &nd);
		check_sizes(c, "");
		sv_container_free(c);

		struct sv_buf f = slurp(dpath);
		struct sv_buf text;
		sv_buf_init(&text);
		if (k) {
			T_OK(f.len > 2 && f.p[0] == 0x1f && f.p[1] == 0x8b);
			T_INT(0, sv_gunzip(f.p, f.len, 1u << 30, &text, &err));
		} else {
			T_OK(f.len > 0 && f.p[0] == '{');
			need(sv_buf_add(&text, f.p, f.len), "sv_buf_add");
		}
		json_error_t je;
		json_t *r = json_loadb((const char *)text.p, text.len, 0, &je);
		T_OK(json_is_object(r));
		T_STR("Renamed", jstr(r, "title"));
		T_OK(json_is_object(json_object_get(r, "zzExtra")));
		T_INT(0, jint(json_object_get(r, "chunks"), "Layer"));
		json_t *map = json_object_get(json_object_get(r, "chunks"), "chunks");
		T_UINT(4, json_object_size(map));
		/* The edited chunk as the game reads it: absolute coordinates. */
		struct sv_doodle_grid g;
		grid_of(&g, 4, -1, -1, PX_B2, 1);
		json_t *want = my_json(&g);
		sv_doodle_grid_fini(&g);
		json_t *got = json_object_get(map, "-1,-1");
		T_OK(json_equal(want, got));
		T_INT(1, jint(json_object_get(got, "data"), "-4,-4"));
		T_INT(0, jint(json_object_get(got, "data"), "-3,-4"));
		T_INT(2, jint(json_object_get(got, "data"), "-4,-1"));
		T_INT(1, jint(json_object_get(got, "data"), "-1,-1"));
		T_OK(json_object_get(json_object_get(got, "data"), "-2,-1") == NULL);
		T_INT(0, jint(got, "type"));
		json_decref(want);
		grid_of(&g, 4, -2, 3, PX_NEW, 1);
		want = my_json(&g);
		sv_doodle_grid_fini(&g);
		T_OK(json_equal(want, json_object_get(map, "-2,3")));
		T_INT(1, jint(json_object_get(json_object_get(map, "-2,3"), "data"), "-7,13"));
		json_decref(want);
		/* Untouched chunks exactly as they were. */
		grid_of(&g, 4, 0, 0, PX_A, 1);
		want = my_json(&g);
		T_OK(json_equal(want, json_object_get(map, "0,0")));
		json_decref(want);
		sv_doodle_grid_fini(&g);
		grid_of(&g, 4, 1, -1, PX_C, 1);
		want = my_json(&g);
		T_OK(json_equal(want, json_object_get(map, "1,-1")));
		json_decref(want);
		sv_doodle_grid_fini(&g);
		T_OK(json_object_get(map, "2,0") == NULL);
		/* Files as base64. */
		json_t *files = json_object_get(r, "files");
		T_UINT(2, json_object_size(files));
		T_OK(json_object_get(files, A_PNG) == NULL);
		char *b64 = b64_of("replaced\n", 9);
		T_STR(b64, jstr(json_object_get(files, A_PAPER), "data"));
		free(b64);
		b64 = b64_of("new\n", 4);
		T_STR(b64, jstr(json_object_get(files, "assets/new.txt"), "data"));
		free(b64);
		json_decref(r);
		sv_buf_fini(&text);
		sv_buf_fini(&f);

		c = open_file(dpath);
		json_t *info = json_of(c, ".savefs/info");
		T_STR(k ? "v2 (gzip JSON)" : "v1 (JSON)", jstr(info, "format_version"));
		json_decref(info);
		struct chunkset cs;
		cs_init(&cs, s);
		cs_set(&cs, 0, -1, -1, PX_B2);
		cs_set(&cs, 0, -2, 3, PX_NEW);
		cs_set(&cs, 0, 2, 0, NULL);
		for (size_t i = 0; i < cs.n; i++)
			check_chunk(c, "", s, &cs.v[i]);
		check_preview(c, "", s, cs.v, cs.n);
		same(c, A_PAPER, "replaced\n", 9);
		same(c, "assets/new.txt", "new\n", 4);
		check_sizes(c, "");
		sv_container_free(c);
		sv_buf_fini(&orig);
	}
	dir_clean();
}

/* With opts.upgrade, v1, v2, a v3.1 zip and a zip-inline root become zips
 * of RLE chunks with the root last. */
static void upgrade(void)
{
	static const struct fspec *const specs[] = {&s_v1, &s_v2, &s_mixed, &s_zinl,
						    &s_doodad_v1, &s_v1s};
	for (size_t k = 0; k < N(specs); k++) {
		const struct fspec *s = specs[k];
		fprintf(stderr, "- upgrade %s\n", s->what);
		struct sv_buf orig = fresh(s);
		struct sv_opts o;
		sv_opts_init(&o);
		o.upgrade = true;
		struct sv_container *c = open_file_opts(dpath, &o);
		const struct fchunk *e = &s->ch[s->nch - 1];
		put_txt(c, s, e->layer, e->cx, e->cy, PX_NEW);
		struct chunkset cs;
		cs_init(&cs, s);
		cs_set(&cs, e->layer, e->cx, e->cy, PX_NEW);
		/* Every chunk is RLE now. */
		for (size_t i = 0; i < cs.n; i++)
			cs.v[i].form = F_RLE;
		check_sizes(c, "");
		check_drawing_as(c, "", s, cs.v, cs.n);
		sv_container_free(c);

		struct zipv a;
		zip_load(&a, dpath);
		T_OK(a.f.len > 4 && !memcmp(a.f.p, "PK\3\4", 4));
		T_OK(a.ok && a.z.n > 0 && !strcmp(a.z.e[a.z.n - 1].name, root_name(s)));
		size_t bins = 0, jsons = 0;
		for (size_t i = 0; a.ok && i < a.z.n; i++) {
			const char *nm = a.z.e[i].name;
			size_t len = strlen(nm);
			if (strncmp(nm, "chunks/", 7))
				continue;
			bins += len > 4 && !strcmp(nm + len - 4, ".bin");
			jsons += len > 5 && !strcmp(nm + len - 5, ".json");
		}
		T_UINT(s->nch, bins);
		T_UINT(0, jsons);
		for (size_t i = 0; i < cs.n; i++) {
			char name[96];
			snprintf(name, sizeof name, "chunks/%u/%d,%d.bin", cs.v[i].layer,
				 cs.v[i].cx, cs.v[i].cy);
			zip_chunk_is(&a, s, name, cs.v[i].cx, cs.v[i].cy, cs.v[i].px);
		}
		for (size_t i = 0; i < s->nas; i++) {
			struct sv_blob *b = zip_get(&a, s->as[i].path);
			T_UINT(s->as[i].len, b ? b->len : 0);
			if (b && b->len == s->as[i].len)
				T_MEM(s->as[i].data, b->data, b->len);
			sv_blob_unref(b);
		}
		json_t *r = json_of_blob(zip_get(&a, root_name(s)), root_name(s));
		json_t *v = view_root(s);
		if (s->stray) {
			/* Kept, not shown: they must survive the rewrite. */
			T_OK(json_object_get(json_object_get(r, "files"), "readme.md") != NULL ||
			     zip_entry(&a, "readme.md") != NULL);
			T_OK(json_object_get(chunk_map(r, s, 0), "bogus") != NULL);
			json_object_del(json_object_get(r, "files"), "readme.md");
			json_object_del(chunk_map(r, s, 0), "bogus");
		}
		/* The stored root is the view's: every map empty, keys kept. */
		T_OK(json_equal(v, r));
		json_decref(v);
		json_decref(r);
		if (s->extra)
			T_OK(zip_entry(&a, "notes/readme.txt") != NULL);
		zip_free(&a);

		c = open_file(dpath);
		json_t *info = json_of(c, ".savefs/info");
		T_STR("zip (v3/v3.1/v4)", jstr(info, "format_version"));
		T_INT((json_int_t)s->nch, jint(json_object_get(info, "counts"), "chunks_bin"));
		T_INT(0, jint(json_object_get(info, "counts"), "chunks_json_member"));
		T_INT(0, jint(json_object_get(info, "counts"), "chunks_inline"));
		json_decref(info);
		check_drawing_as(c, "", s, cs.v, cs.n);
		check_sizes(c, "");
		/* A second commit of the upgraded file. */
		put_txt(c, s, e->layer, e->cx, e->cy, PX_B2);
		cs_set(&cs, e->layer, e->cx, e->cy, PX_B2);
		check_drawing_as(c, "", s, cs.v, cs.n);
		sv_container_free(c);
		sv_buf_fini(&orig);
	}

	/* The mixed zip upgraded by an edit of another chunk: the chunk stored
	 * as .bin and as .json leaves only its .bin (a v4 zip has no .json
	 * chunks). */
	fprintf(stderr, "- upgrade mixed, the chunk stored twice untouched\n");
	struct sv_buf orig = fresh(&s_mixed);
	struct sv_opts o;
	sv_opts_init(&o);
	o.upgrade = true;
	struct sv_container *c = open_file_opts(dpath, &o);
	put_txt(c, &s_mixed, 0, 0, 0, PX_A2);
	sv_container_free(c);
	struct zipv a;
	zip_load(&a, dpath);
	char names[1024];
	T_STR("chunks/0/0,0.bin chunks/0/-1,-1.bin chunks/0/1,-1.bin chunks/0/2,0.bin " A_PNG " "
	      A_PAPER " notes/readme.txt level.json", zip_names(&a, names, sizeof names));
	T_OK(zip_entry(&a, "chunks/0/2,0.json") == NULL);
	zip_chunk_is(&a, &s_mixed, "chunks/0/2,0.bin", 2, 0, PX_D);
	zip_chunk_is(&a, &s_mixed, "chunks/0/-1,-1.bin", -1, -1, PX_B);
	zip_chunk_is(&a, &s_mixed, "chunks/0/1,-1.bin", 1, -1, PX_C);
	zip_free(&a);
	sv_buf_fini(&orig);
	dir_clean();
}

/* The zip whose root carries chunks and files: an edit of an inline chunk
 * rewrites the root, and what it held inline becomes members. */
/* A v1 doodad stays v1: its layers' maps hold the chunks. */
static void doodad_v1_edit(void)
{
	fprintf(stderr, "- write back a v1 doodad\n");
	struct sv_buf orig = fresh(&s_doodad_v1);
	struct sv_container *c = open_file(dpath);
	put_txt(c, &s_doodad_v1, 1, 0, 0, PX_NEW);
	uint32_t n = SV_NONE;
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_create(c, node_of(c, "chunks/2"), "3,3.txt", 0644, &n, &err));
	T_INT(0, sv_write(c, n, 0, "0...\n....\n....\n...1\n", 20, &err));
	sv_err_clear(&err);
	int rc = sv_commit(c, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (commit: %s)\n", err.msg);
	T_INT(0, rc);
	struct chunkset cs;
	cs_init(&cs, &s_doodad_v1);
	cs_set(&cs, 1, 0, 0, PX_NEW);
	cs_set(&cs, 2, 3, 3, "0..." "...." "...." "...1");
	check_sizes(c, "");
	/* (Listing order in this handle after a creation is the core's.) */
	for (size_t i = 0; i < cs.n; i++)
		check_chunk(c, "", &s_doodad_v1, &cs.v[i]);
	check_preview(c, "", &s_doodad_v1, cs.v, cs.n);
	sv_container_free(c);
	struct sv_buf f = slurp(dpath);
	T_OK(f.len && f.p[0] == '{');
	json_error_t je;
	json_t *r = json_loadb((const char *)f.p, f.len, 0, &je);
	T_OK(json_is_object(r));
	json_t *ls = json_object_get(r, "layers");
	T_UINT(3, json_array_size(ls));
	T_INT(4, jint(json_object_get(r, "size"), "W"));
	T_OK(json_object_get(r, "chunks") == NULL);
	struct sv_doodle_grid g;
	grid_of(&g, 4, 0, 0, PX_NEW, 1);
	json_t *want = my_json(&g);
	sv_doodle_grid_fini(&g);
	T_OK(json_equal(want, json_object_get(chunk_map(r, &s_doodad_v1, 1), "0,0")));
	json_decref(want);
	grid_of(&g, 4, 3, 3, "0..." "...." "...." "...1", 1);
	want = my_json(&g);
	sv_doodle_grid_fini(&g);
	T_OK(json_equal(want, json_object_get(chunk_map(r, &s_doodad_v1, 2), "3,3")));
	T_INT(0, jint(json_object_get(json_object_get(chunk_map(r, &s_doodad_v1, 2), "3,3"),
				      "data"), "12,12"));
	json_decref(want);
	/* Layer 0 as it was. */
	grid_of(&g, 4, 0, 0, PX_L0, 1);
	want = my_json(&g);
	sv_doodle_grid_fini(&g);
	T_OK(json_equal(want, json_object_get(chunk_map(r, &s_doodad_v1, 0), "0,0")));
	json_decref(want);
	T_UINT(1, json_object_size(chunk_map(r, &s_doodad_v1, 0)));
	T_UINT(1, json_object_size(chunk_map(r, &s_doodad_v1, 1)));
	T_UINT(3, json_object_size(chunk_map(r, &s_doodad_v1, 2)));
	json_decref(r);
	sv_buf_fini(&f);
	c = open_file(dpath);
	check_drawing_as(c, "", &s_doodad_v1, cs.v, cs.n);
	sv_container_free(c);
	sv_buf_fini(&orig);

	sv_buf_fini(&orig);
	dir_clean();
}

/* Two characters a cell: grids refused. */
static void palette70_edit(void)
{
	fprintf(stderr, "- refused 70-colour grids\n");
	struct sv_buf orig = fresh(&s_p70);
	struct sv_container *c = open_file(dpath);
	struct sv_buf t;
	/* 2 + 1 + 70 comment lines: the rows are lines 74-76. */
	want_text(&s_p70, 0, -1, 2, "17" "1a" ".." ".." ".." ".." ".." ".." "..", &t);
	refuse(c, "chunks/0/-1,2.txt", t.p, t.len,
	       "line 74, column 3: index 72 is past the palette (70 colours)");
	sv_buf_fini(&t);
	refuse(c, "chunks/0/-1,2.txt", "17....\n.....\n......\n", 21,
	       "line 2: 5 characters, expected 6 (3 cells of 2)");
	refuse(c, "chunks/0/-1,2.txt", "17....\n.0.0..\n......\n", 21,
	       "line 2, column 1: '.' is not a palette code (palette has 70 colours)");
	sv_container_free(c);
	sv_buf_fini(&orig);
	dir_clean();
}

/* Chunk edits that commit, as a table: each scenario writes (or creates)
 * the text grids of a few chunks in a fresh file of its spec, and then,
 * in the same handle and in a new one, the drawing is the spec's with
 * those chunks replaced; on disk each edited chunk is its RLE member, the
 * members listed in kept are stored exactly as before, and the member
 * names are as listed.  What a scenario checks beyond that is its more(). */
#define PX_P3 "17" ".." "0a" ".." "0z" "10" ".." ".." "00"
#define PX_CORNERS "0..." "...." "...." "...1"

static void mixed_more(struct zipv *a)
{
	const struct sv_zip_entry *e = zip_entry(a, A_PNG);
	T_UINT(0, e ? e->method : 99); /* still stored */
	/* The archive comment stays. */
	T_UINT(13, a->z.comment_len);
	if (a->z.comment && a->z.comment_len == 13)
		T_MEM("mixed comment", a->z.comment, 13);
}

static void zinl_more(struct zipv *a)
{
	zip_chunk_is(a, &s_zinl, "chunks/0/0,0.bin", 0, 0, PX_A);
	struct sv_blob *b = zip_get(a, A_PAPER);
	T_UINT(sizeof paper - 1, b ? b->len : 0);
	sv_blob_unref(b);
	json_t *r = json_of_blob(zip_get(a, "level.json"), "level.json member");
	/* What savefs does not show survives; what it moved out of the
	 * root went. */
	T_OK(json_object_get(json_object_get(r, "files"), "readme.md") != NULL ||
	     zip_entry(a, "readme.md") != NULL);
	T_OK(json_object_get(chunk_map(r, &s_zinl, 0), "bogus") != NULL);
	T_OK(json_object_get(json_object_get(r, "files"), A_PAPER) == NULL);
	T_OK(json_object_get(chunk_map(r, &s_zinl, 0), "0,0") == NULL);
	json_decref(r);
}

struct chunk_edit {
	unsigned layer;
	int cx, cy;
	const char *px;
	bool create;
};

static const struct {
	const char *what;
	const struct fspec *s;
	struct chunk_edit e[3];
	const char *names; /* the members after, in order; NULL: not checked */
	const char *kept[8];
	void (*more)(struct zipv *a);
} chunk_edits[] = {
	{"the mixed zip: an RLE, a map and a JSON-map chunk replaced", &s_mixed,
	 {{0, 2, 0, PX_NEW, false}, {0, -1, -1, PX_B2, false}},
	 "chunks/0/0,0.bin chunks/0/-1,-1.bin chunks/0/1,-1.json chunks/0/2,0.bin " A_PNG " "
	 A_PAPER " notes/readme.txt level.json",
	 {"chunks/0/0,0.bin", "chunks/0/1,-1.json", A_PNG, A_PAPER, "notes/readme.txt",
	  "level.json"},
	 mixed_more},
	{"the zip-inline root's chunk", &s_zinl, {{0, -1, -1, PX_B2, false}}, NULL, {NULL},
	 zinl_more},
	{"a 70-colour level, two characters a cell", &s_p70, {{0, -1, 2, PX_P3, false}}, NULL,
	 {NULL}, NULL},
	{"a zip doodad gains a chunk in layer 1", &s_doodad, {{1, -2, -2, PX_CORNERS, true}},
	 "chunks/0/0,0.bin chunks/1/0,0.bin chunks/2/0,0.json chunks/2/-1,0.bin "
	 "chunks/1/-2,-2.bin doodad.json",
	 {"chunks/0/0,0.bin", "chunks/1/0,0.bin", "chunks/2/0,0.json", "chunks/2/-1,0.bin",
	  "doodad.json"},
	 NULL},
};

static void chunk_edit_table(void)
{
	for (size_t k = 0; k < N(chunk_edits); k++) {
		const struct fspec *s = chunk_edits[k].s;
		fprintf(stderr, "- edit %s\n", chunk_edits[k].what);
		struct sv_buf orig = fresh(s);
		struct sv_container *c = open_file(dpath);
		struct chunkset cs;
		cs_init(&cs, s);
		for (const struct chunk_edit *e = chunk_edits[k].e; e < chunk_edits[k].e + 3 && e->px;
		     e++) {
			if (e->create) {
				char dir[32], name[32];
				snprintf(dir, sizeof dir, "chunks/%u", e->layer);
				snprintf(name, sizeof name, "%d,%d.txt", e->cx, e->cy);
				struct sv_buf t;
				want_text(s, e->layer, e->cx, e->cy, e->px, &t);
				struct sv_err err;
				sv_err_clear(&err);
				uint32_t n = SV_NONE;
				T_INT(0, sv_create(c, node_of(c, dir), name, 0644, &n, &err));
				T_INT(0, sv_write(c, n, 0, t.p, t.len, &err));
				T_INT(0, sv_flush(c, n, NULL, NULL, &err));
				sv_buf_fini(&t);
			} else {
				put_txt(c, s, e->layer, e->cx, e->cy, e->px);
			}
			cs_set(&cs, e->layer, e->cx, e->cy, e->px);
		}
		check_sizes(c, "");
		check_drawing_as(c, "", s, cs.v, cs.n);
		sv_container_free(c);
		c = open_file(dpath);
		check_drawing_as(c, "", s, cs.v, cs.n);
		sv_container_free(c);

		struct zipv a, b;
		zip_load_both(&a, &b, &orig);
		char names[1024];
		if (chunk_edits[k].names)
			T_STR(chunk_edits[k].names, zip_names(&a, names, sizeof names));
		for (const struct chunk_edit *e = chunk_edits[k].e; e < chunk_edits[k].e + 3 && e->px;
		     e++) {
			char m[64];
			snprintf(m, sizeof m, "chunks/%u/%d,%d.bin", e->layer, e->cx, e->cy);
			zip_chunk_is(&a, s, m, e->cx, e->cy, e->px);
		}
		size_t nkept = 0;
		while (nkept < N(chunk_edits[k].kept) && chunk_edits[k].kept[nkept])
			nkept++;
		zip_kept(&b, &a, chunk_edits[k].kept, nkept);
		if (chunk_edits[k].more)
			chunk_edits[k].more(&a);
		zip_free(&a);
		zip_free(&b);
		sv_buf_fini(&orig);
		dir_clean();
	}
}

static void ch_drop_size(json_t *r, void *arg)
{
	json_object_del(json_object_get(r, "chunks"), "size");
	(void)arg;
}

static void ch_null_size(json_t *r, void *arg)
{
	json_object_set_new(json_object_get(r, "chunks"), "size", json_null());
	(void)arg;
}

static void ch_drop_layer_size(json_t *r, void *arg)
{
	json_t *l = json_array_get(json_object_get(r, "layers"), 1);
	json_object_del(json_object_get(l, "chunks"), "size");
	(void)arg;
}

static void ch_add_swatches(json_t *r, void *arg)
{
	json_t *sw = json_object_get(json_object_get(r, "palette"), "swatches");
	int n = *(int *)arg;
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof name, "new%d", i);
		json_array_append_new(sw, json_pack("{s:s,s:s,s:s}", "name", name, "color",
						    "#123456", "pattern", "noise.png"));
	}
}

/*
 * Root edits that change how chunks read: the chunk size key removed
 * (the stored chunks must still read at their size, whether the edit is
 * refused or not), swatches added (every text grid's size changes, the
 * cell width too past 62 colours).
 */
static void root_json_geometry(void)
{
	fprintf(stderr, "- root edits that change the chunks' geometry\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	char *t = edited_view(c, "level.json", ch_drop_size, NULL);
	struct sv_err err;
	int rc = put_file(c, "level.json", t, strlen(t), &err);
	free(t);
	fprintf(stderr, "  (level.json without chunks.size: %s)\n",
		rc ? err.msg : "accepted");
	sv_container_free(c);
	c = open_file(dpath);
	json_t *info = json_of(c, ".savefs/info");
	T_INT(4, jint(json_object_get(info, "counts"), "chunk_size"));
	json_decref(info);
	check_chunk(c, "", &s_v4, &s_v4.ch[0]);
	sv_container_free(c);
	sv_buf_fini(&orig);

	/* "size": null: the container must still open afterwards. */
	orig = fresh(&s_v4);
	c = open_file(dpath);
	t = edited_view(c, "level.json", ch_null_size, NULL);
	rc = put_file(c, "level.json", t, strlen(t), &err);
	free(t);
	fprintf(stderr, "  (level.json with chunks.size null: %s)\n", rc ? err.msg : "accepted");
	sv_container_free(c);
	{
		struct sv_opts o;
		sv_opts_init(&o);
		struct sv_container *c2 = NULL;
		sv_err_clear(&err);
		rc = sv_container_open(dpath, &o, &c2, &err);
		if (rc)
			fprintf(stderr, "  (reopening: %s)\n", err.msg);
		T_INT(0, rc);
		if (c2)
			check_chunk(c2, "", &s_v4, &s_v4.ch[0]);
		sv_container_free(c2);
	}
	sv_buf_fini(&orig);

	orig = fresh(&s_doodad);
	c = open_file(dpath);
	t = edited_view(c, "doodad.json", ch_drop_layer_size, NULL);
	rc = put_file(c, "doodad.json", t, strlen(t), &err);
	free(t);
	fprintf(stderr, "  (doodad.json without layers[1].chunks.size: %s)\n",
		rc ? err.msg : "accepted");
	sv_container_free(c);
	c = open_file(dpath);
	check_chunk(c, "", &s_doodad, &s_doodad.ch[1]); /* layer 1's */
	sv_container_free(c);
	sv_buf_fini(&orig);

	/* One swatch more: every text is longer. */
	orig = fresh(&s_v4);
	c = open_file(dpath);
	int one = 1, sixty = 59;
	put_view(c, "level.json", ch_add_swatches, &one);
	static const struct fswatch sw4[] = {
		{"solid", "#000000", "#000000"},
		{"fire", "#f00", "#ff0000"},
		{"water", "#0000FF80", "#0000ff80"},
		{"new0", "#123456", "#123456"},
	};
	struct fspec s4 = s_v4;
	s4.sw = sw4;
	s4.npal = 4;
	check_sizes(c, "");
	for (size_t i = 0; i < s4.nch; i++)
		check_chunk(c, "", &s4, &s4.ch[i]);
	/* 63: two characters a cell. */
	put_view(c, "level.json", ch_add_swatches, &sixty);
	check_sizes(c, "");
	struct sv_blob *b = content(c, "chunks/0/0,0.txt");
	char *txt = b ? strndup((const char *)b->data, b->len) : NULL;
	T_HAS(txt, "# pixels 0..3 x 0..3, 2 character(s) each, top row first\n# ..  empty\n"
		   "# 00  #000000  solid\n");
	T_HAS(txt, "\n# 0Z  #123456  new57\n# 10  #123456  new58\n");
	T_HAS(txt, "\n00000000\n........\n........\n........\n");
	free(txt);
	sv_blob_unref(b);
	sv_container_free(c);
	c = open_file(dpath);
	check_sizes(c, "");
	json_t *r = json_of(c, "level.json");
	T_UINT(63, json_array_size(json_object_get(json_object_get(r, "palette"), "swatches")));
	json_decref(r);
	sv_container_free(c);
	sv_buf_fini(&orig);
	dir_clean();
}

/* A zip held in a blob (a nested container), through a file so that the
 * independent reader sees it too. */
static void zip_of_blob(struct zipv *v, struct sv_blob *b)
{
	char path[160];
	snprintf(path, sizeof path, "%s/nested.zip", tmpdir);
	struct sv_buf t;
	sv_buf_init(&t);
	if (b)
		need(sv_buf_add(&t, b->data, b->len), "sv_buf_add");
	write_file(path, &t);
	sv_buf_fini(&t);
	sv_blob_unref(b);
	zip_load(v, path);
	unlink(path);
}

static void zip_of_buf(struct zipv *v, const struct sv_buf *b)
{
	char path[160];
	snprintf(path, sizeof path, "%s/nested.zip", tmpdir);
	write_file(path, b);
	zip_load(v, path);
	unlink(path);
}

/* Writes the text grid px into chunk (layer, cx, cy) under pre. */
static void put_txt_at(struct sv_container *c, const char *pre, const struct fspec *s,
		       unsigned layer, int cx, int cy, const char *px)
{
	struct sv_buf t;
	want_text(s, layer, cx, cy, px, &t);
	char path[300];
	snprintf(path, sizeof path, "%schunks/%u/%d,%d.txt", pre, layer, cx, cy);
	put_ok(c, path, t.p, t.len);
	sv_buf_fini(&t);
}

/* A levelpack on disk: its drawings are edited in place, the pack is
 * rewritten with the changed ones and every other member copied. */
static void levelpack_writeback(void)
{
	fprintf(stderr, "- levelpack write-back\n");
	struct sv_buf f = build_pack();
	unlink(dpath);
	write_file(dpath, &f);
	struct sv_buf lv_a = build(&s_v2), lv_b = build(&s_v4);
	struct sv_container *c = open_file(dpath);
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_truncate(c, node_of(c, "index.json"), 0, &err));
	T_INT(0, sv_write(c, node_of(c, "index.json"), 0, "{", 1, &err));
	T_INT(-EPERM, sv_flush(c, node_of(c, "index.json"), NULL, NULL, &err));
	struct nodes nd;
	memset(&nd, 0, sizeof nd);
	remember(c, &nd, "levels/b");
	uint32_t na = node_of(c, "levels/a"), nb = node_of(c, "levels/b");
	uint32_t ndd = node_of(c, "doodads/d");
	T_OK(sv_node(c, na)->flags & SV_N_LAZYDIR);
	T_OK(!(sv_node(c, nb)->flags & SV_N_LAZYDIR));

	/* A chunk of the nested zip level. */
	put_txt_at(c, "levels/b/", &s_v4, 0, -1, -1, PX_B2);
	same_nodes(c, &nd);
	T_UINT(na, node_of(c, "levels/a"));
	T_OK(sv_node(c, na)->flags & SV_N_LAZYDIR); /* still not read */
	T_OK(sv_node(c, ndd)->flags & SV_N_LAZYDIR);
	struct chunkset cb;
	cs_init(&cb, &s_v4);
	cs_set(&cb, 0, -1, -1, PX_B2);
	check_drawing_as(c, "levels/b/", &s_v4, cb.v, cb.n);
	/* A refused edit leaves the pack as it is. */
	refuse(c, "levels/b/chunks/0/0,0.txt", "0000\n", 5, "1 row, expected 4");
	refuse(c, "levels/b/level.json", "[]", 2, "level.json: not a JSON object");

	struct zipv p1, p0, nb0, nb1;
	zip_load(&p1, dpath);
	zip_of_buf(&p0, &f);
	char n0[1024], n1[1024];
	T_STR(zip_names(&p0, n0, sizeof n0), zip_names(&p1, n1, sizeof n1));
	static const char *const pack_kept[] = {"levels/a.level", "doodads/d.doodad",
						"index.json"};
	zip_kept(&p0, &p1, pack_kept, N(pack_kept));
	/* The nested zip: the chunk is RLE, the rest copied as stored. */
	zip_of_blob(&nb1, zip_get(&p1, "levels/b.level"));
	zip_of_buf(&nb0, &lv_b);
	T_STR(zip_names(&nb0, n0, sizeof n0), zip_names(&nb1, n1, sizeof n1));
	zip_chunk_is(&nb1, &s_v4, "chunks/0/-1,-1.bin", -1, -1, PX_B2);
	static const char *const kept[] = {"chunks/0/0,0.bin", "chunks/0/1,-1.bin",
					   "chunks/0/2,0.bin", A_PNG, A_TOP, A_PAPER,
					   "level.json"};
	zip_kept(&nb0, &nb1, kept, N(kept));
	zip_free(&nb1);
	zip_free(&p1);

	/* The nested gzip level: edited, a chunk created, one removed, a file
	 * replaced; it stays gzip. */
	put_txt_at(c, "levels/a/", &s_v2, 0, 1, -1, PX_NEW);
	uint32_t n = SV_NONE;
	sv_err_clear(&err);
	T_INT(0, sv_create(c, node_of(c, "levels/a/chunks/0"), "4,4.txt", 0644, &n, &err));
	T_INT(0, sv_write(c, n, 0, "....\n.12.\n.21.\n....\n", 20, &err));
	T_INT(0, sv_flush(c, n, NULL, NULL, &err));
	sv_err_clear(&err);
	int rc = sv_unlink(c, node_of(c, "levels/a/chunks/0"), "0,0.txt", NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (unlink: %s)\n", err.msg);
	T_INT(0, rc);
	put_ok(c, "levels/a/" A_PAPER, "replaced\n", 9);
	same_nodes(c, &nd);
	struct chunkset ca;
	cs_init(&ca, &s_v2);
	cs_set(&ca, 0, 1, -1, PX_NEW);
	cs_set(&ca, 0, 4, 4, PX_NEW);
	cs_set(&ca, 0, 0, 0, NULL);
	for (size_t i = 0; i < ca.n; i++)
		check_chunk(c, "levels/a/", &s_v2, &ca.v[i]);
	check_drawing_as(c, "levels/b/", &s_v4, cb.v, cb.n);
	check_sizes(c, "");
	sv_container_free(c);

	/* Read back. */
	c = open_file(dpath);
	check_sizes(c, "");
	check_drawing_as(c, "levels/b/", &s_v4, cb.v, cb.n);
	static const struct fasset as_a[] = {
		AS_PNG(false),
		{A_PAPER, "replaced\n", 9, false, false},
	};
	struct fspec sa = s_v2;
	sa.as = as_a;
	check_drawing_as(c, "levels/a/", &sa, ca.v, ca.n);
	check_drawing(c, "doodads/d/", &s_doodad);
	sv_container_free(c);
	zip_load(&p1, dpath);
	T_STR(zip_names(&p0, n0, sizeof n0), zip_names(&p1, n1, sizeof n1));
	zip_kept(&p0, &p1, pack_kept + 1, N(pack_kept) - 1);
	struct sv_blob *ga = zip_get(&p1, "levels/a.level");
	T_OK(ga && ga->len > 2 && ga->data[0] == 0x1f && ga->data[1] == 0x8b);
	struct sv_buf text;
	sv_buf_init(&text);
	if (ga)
		T_INT(0, sv_gunzip(ga->data, ga->len, 1u << 30, &text, &err));
	sv_blob_unref(ga);
	json_t *r = json_loadb(text.len ? (const char *)text.p : "", text.len, 0, NULL);
	T_OK(json_is_object(r));
	json_t *map = chunk_map(r, &s_v2, 0);
	T_UINT(4, json_object_size(map));
	T_OK(json_object_get(map, "0,0") == NULL);
	T_OK(json_object_get(map, "4,4") != NULL);
	json_decref(r);
	sv_buf_fini(&text);
	zip_of_blob(&nb1, zip_get(&p1, "levels/b.level"));
	zip_chunk_is(&nb1, &s_v4, "chunks/0/-1,-1.bin", -1, -1, PX_B2);
	zip_kept(&nb0, &nb1, kept, N(kept));
	zip_free(&nb1);
	zip_free(&nb0);
	zip_free(&p1);
	zip_free(&p0);
	sv_buf_fini(&lv_a);
	sv_buf_fini(&lv_b);
	sv_buf_fini(&f);
	dir_clean();
}

/* Under -fsanitize=undefined, a report fails the test instead of scrolling
 * past (the hook is not called in other builds). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "print_stacktrace=1:halt_on_error=1";
}

/*
 * A level's chunks are an index directory, and a commit costs what it
 * changed: one chunk edited in a level of 3,000
 * takes the new zip's directory from what the commit wrote (no read of it
 * back) and updates the tree by node number (no name searched), and the
 * views of the other chunks keep their numbers and content.  Before, the
 * level was read again whole: 9,000 and more name lookups and the 200 KB
 * directory read back.
 */
#define BIG_CHUNKS 3000
static void big_level_commit(void)
{
	fprintf(stderr, "- one chunk of a 3,000-chunk level committed\n");
	static const char *const px[] = {PX_A, PX_B, PX_C, PX_D};
	struct fchunk *ch = calloc(BIG_CHUNKS, sizeof *ch);
	if (!ch)
		die("out of memory");
	for (int i = 0; i < BIG_CHUNKS; i++)
		ch[i] = (struct fchunk){0, i % 60, i / 60, F_RLE, px[i % 4]};
	struct fspec big = LEVEL("big", ZIP, ch_v4, as_v4, "screenshots top.txt wallpapers");
	big.ch = ch;
	big.nch = BIG_CHUNKS;
	struct sv_buf orig = fresh(&big);
	struct sv_container *c = open_file(dpath);
	/* The chunks are listed from the chunk table: the open and a listing
	 * of 9,000 views make no node per view. */
	uint32_t at_open = sv_node_count(c);
	T_OK(at_open < 32);
	struct listing all;
	ls(c, "chunks/0", &all);
	T_UINT(3 * BIG_CHUNKS, (unsigned)all.n);
	T_UINT(at_open, sv_node_count(c));
	uint32_t t1 = node_of(c, "chunks/0/7,3.txt"), b2 = node_of(c, "chunks/0/59,49.bin");
	uint32_t p1 = node_of(c, "chunks/0/7,3.png");
	uint64_t steps = sv_container_name_steps(c), reads, bytes, reads2, bytes2;
	sv_container_reads(c, &reads, &bytes);

	put_txt(c, &big, 0, 7, 3, PX_B2);

	/* The lookup of the edited file's path (a few steps) and nothing for
	 * the other 9,000 views.  Of the file: the local headers of the
	 * members copied across (never read before: the whole file, in a few
	 * reads), the edited chunk's old member (hashed before, to tell which
	 * views changed) and the root's few hundred bytes; not the new
	 * directory (tens of KB). */
	T_OK(sv_container_name_steps(c) - steps < 16);
	sv_container_reads(c, &reads2, &bytes2);
	if (bytes2 - bytes >= orig.len + 4096)
		fprintf(stderr, "  (the commit read %" PRIu64 " bytes in %" PRIu64 " reads)\n",
			bytes2 - bytes, reads2 - reads);
	T_OK(bytes2 - bytes < orig.len + 4096);
	/* A second commit knows where every member's data lies in the file
	 * the first wrote: it reads no header again. */
	steps = sv_container_name_steps(c);
	sv_container_reads(c, &reads, &bytes);
	put_txt(c, &big, 0, 40, 20, PX_A2);
	T_OK(sv_container_name_steps(c) - steps < 16);
	sv_container_reads(c, &reads2, &bytes2);
	if (bytes2 - bytes >= 4096)
		fprintf(stderr, "  (the second commit read %" PRIu64 " bytes in %" PRIu64 " reads)\n",
			bytes2 - bytes, reads2 - reads);
	T_OK(bytes2 - bytes < 4096);
	T_UINT(t1, node_of(c, "chunks/0/7,3.txt"));
	T_UINT(p1, node_of(c, "chunks/0/7,3.png"));
	T_UINT(b2, node_of(c, "chunks/0/59,49.bin"));
	ls(c, "chunks/0", &all);
	T_UINT(3 * BIG_CHUNKS, (unsigned)all.n);
	T_OK(log_has(c, "committed "));
	/* Through the updated tree: the edited chunk, its neighbours, the
	 * last one (its member after the edited one's, moved in the file). */
	static const int look[][2] = {{7, 3}, {6, 3}, {8, 3}, {40, 20}, {59, 49}, {0, 0}};
	ch[3 * 60 + 7].px = PX_B2;
	ch[20 * 60 + 40].px = PX_A2;
	for (size_t k = 0; k < N(look); k++) {
		check_chunk(c, "", &big, &ch[look[k][1] * 60 + look[k][0]]);
		static const char *const ext[] = {"txt", "png", "bin"};
		for (size_t e = 0; e < N(ext); e++) {
			char path[64];
			snprintf(path, sizeof path, "chunks/0/%d,%d.%s", look[k][0], look[k][1],
				 ext[e]);
			struct sv_stat st;
			struct sv_blob *b = NULL;
			struct sv_err err;
			uint32_t n = node_of(c, path);
			T_INT(0, sv_stat(c, n, &st));
			T_INT(0, sv_content(c, n, &b, &err));
			T_UINT(b->len, st.size);
			sv_blob_unref(b);
		}
	}
	sv_container_free(c);

	/* The file as a fresh open reads it. */
	c = open_file(dpath);
	for (size_t k = 0; k < N(look); k++)
		check_chunk(c, "", &big, &ch[look[k][1] * 60 + look[k][0]]);
	sv_container_free(c);
	sv_buf_fini(&orig);
	free(ch);
	dir_clean();
}

/* A view held open while a commit removes its chunk keeps the content it
 * had (an orphan), read before the old file went away. */
static void open_view_of_removed_chunk(void)
{
	fprintf(stderr, "- an open view of a removed chunk\n");
	struct sv_buf orig = fresh(&s_v4);
	struct sv_container *c = open_file(dpath);
	uint32_t png = node_of(c, "chunks/0/0,0.png"), txt = node_of(c, "chunks/0/0,0.txt");
	uint32_t dir = node_of(c, "chunks/0");
	struct sv_blob *before = NULL, *after = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_content(c, png, &before, &err));
	T_INT(0, sv_open(c, png));
	T_INT(0, sv_open(c, txt));
	T_INT(0, sv_unlink(c, dir, "0,0.bin", NULL, NULL, &err));
	T_INT(-ENOENT, sv_resolve(c, "chunks/0/0,0.png", &(uint32_t){0}));
	T_INT(0, sv_content(c, png, &after, &err));
	T_OK(before && after && before->len == after->len &&
	     !memcmp(before->data, after->data, before->len));
	sv_blob_unref(after);
	after = NULL;
	T_INT(0, sv_content(c, txt, &after, &err));
	T_OK(after && after->len > 0);
	sv_release(c, png);
	sv_release(c, txt);
	sv_blob_unref(before);
	sv_blob_unref(after);
	sv_container_free(c);
	sv_buf_fini(&orig);
}

int main(void)
{
	fixture_init();
	read_all_kinds();
	mixed_details();
	twice_in_a_big_table();
	levelpack();
	snprintf(tmpdir, sizeof tmpdir, "/tmp/savefs-test-doodle-XXXXXX");
	if (!mkdtemp(tmpdir))
		die("mkdtemp");
	snprintf(dpath, sizeof dpath, "%s/d.level", tmpdir);
	edit_txt_v4();
	preview_while_rewritten();
	big_level_commit();
	empty_level();
	edit_other_ways();
	edit_json_member();
	create_and_remove_chunks();
	open_view_of_removed_chunk();
	assets_zip();
	edit_root_json();
	refused_txt();
	json_containers();
	upgrade();
	doodad_v1_edit();
	palette70_edit();
	chunk_edit_table();
	root_json_geometry();
	levelpack_writeback();
	unlink(dpath);
	rmdir(tmpdir);
	return t_done();
}
