/*
 * doodle_codec.c - Sketchy Maze chunk codecs, the palette and the text grid.
 *
 * Facts: ../shared/formats/doodle.md.  Varints are protobuf LEB128 (at most
 * 10 bytes, nothing past bit 63); "signed" ones are zigzag.
 *
 *   binary chunk (.bin)  uvarint type, then the payload, until end of data:
 *     0  map accessor    { zigzag x, zigzag y, uvarint index }   absolute x, y
 *     1  RLE             { uvarint index, uvarint run }          row-major from
 *                                                                (x0, y0)
 *   JSON chunk           {"type": 0, "data": {"x,y": index, ...}}
 *                        {"type": 0, "data": "<base64 of map-accessor records>"}
 *   index 0xFFFF is an empty pixel; 4x4 RLE, top row 0:  01 | 00 04 | ff ff 03 0c
 *
 * The text grid (layout above sv_doodle_cell_width in doodle.h), e.g.
 *
 *   # chunk 3,-2 layer 0 size 4
 *   # pixels 12..15 x -8..-5, 1 character(s) each, top row first
 *   # .  empty
 *   # 0  #000000  solid
 *   # 1  #ff000080  fire
 *   0...
 *   .11.
 *
 * Invariants: decoders never trust a count: RLE runs are clamped in O(1),
 * coordinates are checked against the chunk before a pixel is written, and
 * a tolerated problem is counted in sv_doodle_quirks instead of failing.
 *
 * Choices the header leaves open: q->bad_index counts pixels (a bad RLE run
 * of n counts n); a name of no characters gets no "  name" column in the
 * legend; the JSON encoder leaves bad pixels out; the text parser counts
 * UTF-8 characters for cells and columns, and tells a character that is
 * no base-62 digit ("'!' is not a palette code") from a code past the
 * palette ("index 40 is past the palette").
 */
#include "doodle.h"

#include "rd.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* ---- grids ---------------------------------------------------------------- */

int sv_doodle_grid_init(struct sv_doodle_grid *g, uint32_t size, int64_t cx,
			int64_t cy)
{
	g->px = NULL;
	g->size = 0;
	g->x0 = g->y0 = 0;
	if (size == 0 || size > SV_DOODLE_MAX_SIZE ||
	    __builtin_mul_overflow(cx, (int64_t)size, &g->x0) ||
	    __builtin_mul_overflow(cy, (int64_t)size, &g->y0))
		return -EFBIG;
	g->px = malloc((size_t)size * size * sizeof *g->px);
	if (!g->px)
		return -ENOMEM;
	memset(g->px, 0xFF, (size_t)size * size * sizeof *g->px); /* EMPTY */
	g->size = size;
	return 0;
}

void sv_doodle_grid_fini(struct sv_doodle_grid *g)
{
	if (!g)
		return;
	free(g->px);
	g->px = NULL;
	g->size = 0;
}

bool sv_doodle_grid_empty(const struct sv_doodle_grid *g)
{
	for (size_t i = 0, n = (size_t)g->size * g->size; i < n; i++)
		if (g->px[i] != SV_DOODLE_EMPTY)
			return false;
	return true;
}

static void add_sat(uint64_t *c, uint64_t v)
{
	*c = *c + v < v ? UINT64_MAX : *c + v;
}

/* A stored index as a pixel: 0xFFFF empty, past the palette bad. */
static uint16_t pixel(uint64_t idx, uint32_t npal, struct sv_doodle_quirks *q)
{
	if (idx == SV_DOODLE_EMPTY)
		return SV_DOODLE_EMPTY;
	if (npal > SV_DOODLE_MAX_PALETTE)
		npal = SV_DOODLE_MAX_PALETTE;
	if (idx < npal)
		return (uint16_t)idx;
	q->bad_index++;
	return SV_DOODLE_BADPIX;
}

/* ---- chunk encodings ---------------------------------------------------------- */

/* Reads the next k varints of a record into v: 0, 1 at a partial record
 * (counted), or -EBADMSG. */
static int record(struct sv_rd *r, uint64_t *v, unsigned k, struct sv_doodle_quirks *q,
		  struct sv_err *err)
{
	for (unsigned i = 0; i < k; i++)
		v[i] = sv_rd_uleb64(r);
	if (sv_rd_ok(r))
		return 0;
	if (!r->ended)
		return sv_rd_error(r, err, -EBADMSG, NULL, NULL);
	q->partial++;
	return 1;
}

/* Both decoders read on from r; byte offsets in messages count from the
 * chunk's start. */
static int map_decode(struct sv_rd *r, uint32_t npal, struct sv_doodle_grid *g,
		      struct sv_doodle_quirks *q, struct sv_err *err)
{
	uint64_t v[3];
	int rc = 0;
	while (sv_rd_left(r) && !(rc = record(r, v, 3, q, err))) {
		int64_t x = sv_unzigzag(v[0]), y = sv_unzigzag(v[1]);
		if (x < g->x0 || y < g->y0 || (uint64_t)x - (uint64_t)g->x0 >= g->size ||
		    (uint64_t)y - (uint64_t)g->y0 >= g->size) {
			q->outside++;
			continue;
		}
		size_t i = (size_t)(y - g->y0) * g->size + (size_t)(x - g->x0);
		g->px[i] = pixel(v[2], npal, q);
	}
	return rc < 0 ? rc : 0;
}

int sv_doodle_map_decode(const uint8_t *p, size_t n, uint32_t npal,
			 struct sv_doodle_grid *g, struct sv_doodle_quirks *q)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	return map_decode(&r, npal, g, q, NULL);
}

static int rle_decode(struct sv_rd *r, uint32_t npal, struct sv_doodle_grid *g,
		      struct sv_doodle_quirks *q, struct sv_err *err)
{
	uint64_t total = (uint64_t)g->size * g->size, at = 0, v[2];
	int rc = 0;
	while (sv_rd_left(r) && !(rc = record(r, v, 2, q, err))) {
		uint64_t run = v[1];
		if (run > total - at) {
			add_sat(&q->run_clamped, run - (total - at));
			run = total - at;
		}
		if (!run)
			continue;
		uint16_t px = pixel(v[0], npal, q);
		if (px == SV_DOODLE_BADPIX)
			add_sat(&q->bad_index, run - 1); /* pixel() counted one */
		for (uint64_t i = 0; i < run; i++)
			g->px[at + i] = px;
		at += run;
	}
	if (rc < 0)
		return rc;
	for (uint64_t i = at; i < total; i++)
		g->px[i] = SV_DOODLE_EMPTY;
	add_sat(&q->short_by, total - at);
	return 0;
}

int sv_doodle_bin_decode(const uint8_t *p, size_t n, uint32_t npal,
			 struct sv_doodle_grid *g, struct sv_doodle_quirks *q,
			 struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	if (!n)
		return sv_err_set(err, -EBADMSG, "empty chunk");
	uint64_t type = sv_rd_uleb64(&r);
	if (!sv_rd_ok(&r))
		return sv_err_set(err, -EBADMSG, "unreadable chunk type");
	if (type == 0)
		return map_decode(&r, npal, g, q, err);
	if (type == 1)
		return rle_decode(&r, npal, g, q, err);
	return sv_err_set(err, -ENOTSUP, "chunk type %" PRIu64 " not supported", type);
}

/* Calls fn for each run of g; stops at the first non-zero return. */
static int runs(const struct sv_doodle_grid *g, int (*fn)(void *, uint16_t, uint64_t),
		void *arg)
{
	size_t n = (size_t)g->size * g->size;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && g->px[j] == g->px[i]; j++)
			;
		int rc = fn(arg, g->px[i], j - i);
		if (rc)
			return rc;
	}
	return 0;
}

static int count_run(void *arg, uint16_t px, uint64_t run)
{
	*(size_t *)arg += sv_leb_size(px) + sv_leb_size(run);
	return 0;
}

static int put_run(void *arg, uint16_t px, uint64_t run)
{
	if (px == SV_DOODLE_BADPIX)
		return -EINVAL;
	int rc = sv_put_leb(arg, px);
	return rc ? rc : sv_put_leb(arg, run);
}

size_t sv_doodle_rle_size(const struct sv_doodle_grid *g)
{
	size_t n = 1;
	runs(g, count_run, &n);
	return n;
}

int sv_doodle_rle_encode(const struct sv_doodle_grid *g, struct sv_buf *out)
{
	size_t len0 = out->len;
	int rc = sv_buf_reserve(out, sv_doodle_rle_size(g));
	if (!rc)
		rc = sv_put_leb(out, 1);
	if (!rc)
		rc = runs(g, put_run, out);
	if (rc)
		out->len = len0;
	return rc;
}

/* obj[key], an exact match first, else the first case-insensitive one. */
static json_t *jget(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	const char *k;
	if (v)
		return v;
	json_object_foreach(obj, k, v)
		if (!strcasecmp(k, key))
			return v;
	return NULL;
}

/* "x,y" with each part within +-limit (at most 2^60: no overflow). */
static bool parse_xy_within(const char *s, int64_t limit, int64_t *x, int64_t *y)
{
	int64_t v[2];
	for (int k = 0; k < 2; k++) {
		bool neg = *s == '-';
		s += neg;
		if (*s < '0' || *s > '9')
			return false;
		int64_t a = 0;
		for (; *s >= '0' && *s <= '9'; s++) {
			a = a * 10 + (*s - '0');
			if (a > limit + neg)
				return false;
		}
		v[k] = neg ? -a : a;
		if (*s++ != (k ? '\0' : ','))
			return false;
	}
	*x = v[0];
	*y = v[1];
	return true;
}

bool sv_doodle_parse_xy(const char *s, int64_t *x, int64_t *y)
{
	return parse_xy_within(s, INT32_MAX, x, y);
}

/* Pixel keys: a chunk at an int32 coordinate with a size up to 4096 puts
 * its pixels past int32. */
static bool parse_pixel_xy(const char *s, int64_t *x, int64_t *y)
{
	return parse_xy_within(s, (int64_t)1 << 50, x, y);
}

int sv_doodle_json_decode(json_t *chunk, uint32_t npal, struct sv_doodle_grid *g,
			  struct sv_doodle_quirks *q, struct sv_err *err)
{
	if (!json_is_object(chunk))
		return sv_err_set(err, -EBADMSG, "chunk is not a JSON object");
	json_t *type = jget(chunk, "type"), *data = jget(chunk, "data");
	if (json_is_null(type))
		type = NULL; /* as the game reads it: 0 */
	if (type && !json_is_integer(type))
		return sv_err_set(err, -EBADMSG, "chunk type is not an integer");
	if (type && json_integer_value(type) != 0)
		return sv_err_set(err, -ENOTSUP, "chunk type %" JSON_INTEGER_FORMAT
				  " not supported", json_integer_value(type));
	if (json_is_string(data)) {
		struct sv_buf b;
		sv_buf_init(&b);
		int rc = sv_base64_decode(json_string_value(data), json_string_length(data),
					  &b, err);
		struct sv_rd r;
		sv_rd_init(&r, b.p, b.len);
		if (!rc)
			rc = map_decode(&r, npal, g, q, err);
		sv_buf_fini(&b);
		return rc;
	}
	if (!json_is_object(data))
		return sv_err_set(err, -EBADMSG, "chunk has no \"data\" object or string");
	const char *key;
	json_t *v;
	json_object_foreach(data, key, v) {
		int64_t x, y;
		if (!parse_pixel_xy(key, &x, &y) || !json_is_integer(v) ||
		    json_integer_value(v) < 0) {
			q->bad_key++;
		} else if (x < g->x0 || y < g->y0 ||
			   (uint64_t)x - (uint64_t)g->x0 >= g->size ||
			   (uint64_t)y - (uint64_t)g->y0 >= g->size) {
			q->outside++;
		} else {
			size_t i = (size_t)(y - g->y0) * g->size + (size_t)(x - g->x0);
			g->px[i] = pixel((uint64_t)json_integer_value(v), npal, q);
		}
	}
	return 0;
}

json_t *sv_doodle_json_encode(const struct sv_doodle_grid *g)
{
	json_t *data = json_object();
	json_t *chunk = json_pack("{s:i,s:o}", "type", 0, "data", data);
	if (!chunk)
		return NULL;
	for (uint32_t y = 0; y < g->size; y++)
		for (uint32_t x = 0; x < g->size; x++) {
			uint16_t px = g->px[(size_t)y * g->size + x];
			if (px == SV_DOODLE_EMPTY || px == SV_DOODLE_BADPIX)
				continue; /* a bad index has no value to write */
			char key[48];
			snprintf(key, sizeof key, "%" PRId64 ",%" PRId64, g->x0 + x, g->y0 + y);
			if (json_object_set_new(data, key, json_integer(px))) {
				json_decref(chunk);
				return NULL;
			}
		}
	return chunk;
}

/* ---- the palette and the text grid -------------------------------------------- */

int sv_doodle_colour_parse(const char *s, uint8_t rgba[4])
{
	if (!s || *s++ != '#')
		return -EINVAL;
	size_t n = strlen(s);
	unsigned w = n == 3 || n == 4 ? 1 : n == 6 || n == 8 ? 2 : 0;
	if (!w)
		return -EINVAL;
	uint8_t c[4] = { 0, 0, 0, 0xFF };
	for (size_t i = 0; i < n / w; i++) {
		int hi = sv_hexval(s[i * w]), lo = sv_hexval(s[i * w + w - 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		c[i] = (uint8_t)(hi << 4 | lo); /* "#rgb": each digit doubled */
	}
	memcpy(rgba, c, 4);
	return 0;
}

int sv_doodle_palette_from_json(json_t *palette, struct sv_palette *pal,
				unsigned *bad_colours, struct sv_err *err)
{
	pal->n = 0;
	pal->v = NULL;
	if (bad_colours)
		*bad_colours = 0;
	if (!palette || json_is_null(palette))
		return 0;
	if (!json_is_object(palette))
		return sv_err_set(err, -EBADMSG, "not an object");
	json_t *sw = jget(palette, "swatches");
	if (!sw || json_is_null(sw))
		return 0;
	if (!json_is_array(sw))
		return sv_err_set(err, -EBADMSG, "\"swatches\" is not an array");
	size_t n = json_array_size(sw);
	if (n > SV_DOODLE_MAX_PALETTE)
		return sv_err_set(err, -EBADMSG, "palette has %zu colours, more than %u", n,
				  SV_DOODLE_MAX_PALETTE);
	if (!n)
		return 0;
	pal->v = calloc(n, sizeof *pal->v);
	if (!pal->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(sw, i);
		struct sv_swatch *s = &pal->v[i];
		const char *name = json_string_value(json_is_object(e) ? jget(e, "name") : NULL);
		const char *colour = json_string_value(json_is_object(e) ? jget(e, "color") : NULL);
		s->name = strdup(name ? name : "");
		if (!s->name) {
			pal->n = (uint32_t)i;
			sv_doodle_palette_fini(pal);
			return -ENOMEM;
		}
		if (sv_doodle_colour_parse(colour, s->rgba)) {
			memcpy(s->rgba, (uint8_t[4]){ 0, 0, 0, 0xFF }, 4);
			if (bad_colours)
				++*bad_colours;
		}
	}
	pal->n = (uint32_t)n;
	return 0;
}

void sv_doodle_palette_fini(struct sv_palette *pal)
{
	if (!pal)
		return;
	for (uint32_t i = 0; i < pal->n; i++)
		free(pal->v[i].name);
	free(pal->v);
	pal->v = NULL;
	pal->n = 0;
}

static const char digits62[] =
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

static int digit62(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 36;
	return -1;
}

unsigned sv_doodle_cell_width(uint32_t npal)
{
	return npal <= 62 ? 1 : npal <= 62 * 62 ? 2 : 3;
}

/* Writes index i as w base-62 digits, most significant first. */
static void code62(char *out, unsigned w, uint32_t i)
{
	for (unsigned k = w; k-- > 0; i /= 62)
		out[k] = digits62[i % 62];
}

/* The first two header lines, into buf (NULL: just measured). */
static int text_header(char *buf, size_t n, const struct sv_palette *pal,
		       unsigned layer, int64_t cx, int64_t cy, uint32_t size)
{
	int64_t x0 = (int64_t)((uint64_t)cx * size), y0 = (int64_t)((uint64_t)cy * size);
	return snprintf(buf, n,
			"# chunk %" PRId64 ",%" PRId64 " layer %u size %" PRIu32 "\n"
			"# pixels %" PRId64 "..%" PRId64 " x %" PRId64 "..%" PRId64
			", %u character(s) each, top row first\n",
			cx, cy, layer, size, x0, x0 + (int64_t)size - 1, y0,
			y0 + (int64_t)size - 1, sv_doodle_cell_width(pal ? pal->n : 0));
}

/* The length of a legend line "# <code>  #rrggbb[aa][  name]\n". */
static uint64_t legend_len(const struct sv_swatch *s, unsigned w)
{
	size_t name = strlen(s->name);
	return 2 + w + 2 + (s->rgba[3] == 0xFF ? 7 : 9) + (name ? 2 + name : 0) + 1;
}

uint64_t sv_doodle_legend_size(const struct sv_palette *pal)
{
	uint32_t npal = pal ? pal->n : 0;
	unsigned w = sv_doodle_cell_width(npal);
	uint64_t n = 0;
	for (uint32_t i = 0; i < npal; i++)
		n += legend_len(&pal->v[i], w);
	return n;
}

/* Characters of v in decimal, with its sign. */
static uint64_t dec_len(int64_t v)
{
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v, n = v < 0 ? 2 : 1;
	while (u >= 10) {
		u /= 10;
		n++;
	}
	return n;
}

uint64_t sv_doodle_text_size_with(const struct sv_palette *pal, uint64_t legend,
				  unsigned layer, int64_t cx, int64_t cy, uint32_t size)
{
	uint32_t npal = pal ? pal->n : 0;
	unsigned w = sv_doodle_cell_width(npal);
	/* text_header's length, counted (it is asked for every chunk at open):
	 * "# chunk X,Y layer L size S\n" and "# pixels A..B x C..D, W
	 * character(s) each, top row first\n". */
	int64_t x0 = (int64_t)((uint64_t)cx * size), y0 = (int64_t)((uint64_t)cy * size);
	uint64_t n = 8 + dec_len(cx) + 1 + dec_len(cy) + 7 + dec_len(layer) + 6 + dec_len(size) +
		     1;
	n += 9 + dec_len(x0) + 2 + dec_len(x0 + (int64_t)size - 1) + 3 + dec_len(y0) + 2 +
	     dec_len(y0 + (int64_t)size - 1) + 2 + dec_len(w) + 34;
	n += w + 10; /* "# .  empty\n" */
	return n + legend + (uint64_t)size * ((uint64_t)size * w + 1);
}

uint64_t sv_doodle_text_size(const struct sv_palette *pal, unsigned layer,
			     int64_t cx, int64_t cy, uint32_t size)
{
	return sv_doodle_text_size_with(pal, sv_doodle_legend_size(pal), layer, cx, cy, size);
}

int sv_doodle_text_render(const struct sv_palette *pal, unsigned layer,
			  int64_t cx, int64_t cy, const struct sv_doodle_grid *g,
			  struct sv_buf *out)
{
	uint32_t npal = pal ? pal->n : 0;
	unsigned w = sv_doodle_cell_width(npal);
	uint64_t total = sv_doodle_text_size(pal, layer, cx, cy, g->size);
	if (total > SIZE_MAX)
		return -EFBIG;
	int rc = sv_buf_reserve(out, (size_t)total + 1); /* + sprintf's NUL */
	if (rc)
		return rc;
	char *p = (char *)out->p + out->len;
	p += text_header(p, (size_t)total + 1, pal, layer, cx, cy, g->size);
	p += sprintf(p, "# %.*s  empty\n", (int)w, "...");
	for (uint32_t i = 0; i < npal; i++) {
		const struct sv_swatch *s = &pal->v[i];
		*p++ = '#';
		*p++ = ' ';
		code62(p, w, i);
		p += w;
		p += sprintf(p, "  #%02x%02x%02x", s->rgba[0], s->rgba[1], s->rgba[2]);
		if (s->rgba[3] != 0xFF)
			p += sprintf(p, "%02x", s->rgba[3]);
		if (*s->name) {
			*p++ = ' ';
			*p++ = ' ';
			for (const char *c = s->name; *c; c++)
				*p++ = (uint8_t)*c < 0x20 || *c == 0x7F ? '?' : *c;
		}
		*p++ = '\n';
	}
	for (size_t i = 0, n = (size_t)g->size * g->size; i < n; i++) {
		uint16_t px = g->px[i];
		if (px == SV_DOODLE_EMPTY)
			memset(p, '.', w);
		else if (px >= npal)
			memset(p, '?', w);
		else
			code62(p, w, px);
		p += w;
		if ((i + 1) % g->size == 0)
			*p++ = '\n';
	}
	out->len += (size_t)total;
	assert((size_t)(p - (char *)out->p) == out->len);
	return 0;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}


/* Characters in s[0..n): UTF-8 continuation bytes do not count. */
static size_t chars(const uint8_t *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += (s[i] & 0xC0) != 0x80;
	return k;
}

/* Decodes one text row of g->size cells into px. */
static int text_row(const uint8_t *s, size_t len, size_t line, uint32_t npal,
		    uint16_t *px, uint32_t size, struct sv_err *err)
{
	unsigned w = sv_doodle_cell_width(npal);
	size_t nc = chars(s, len);
	char b[16];
	if (nc != (size_t)size * w && nc % w)
		return sv_err_set(err, -EINVAL, "line %zu: %zu characters, expected %zu"
				  " (%" PRIu32 " cells of %u)", line, nc, (size_t)size * w,
				  size, w);
	if (nc != (size_t)size * w)
		return sv_err_set(err, -EINVAL, "line %zu: %zu cells, expected %" PRIu32,
				  line, nc / w, size);
	/* From here every byte up to the first non-ASCII one is a character, and
	 * that one is refused below: byte offsets are columns. */
	for (size_t x = 0; x < size; x++) {
		const uint8_t *c = s + x * w;
		size_t col = x * w + 1;
		if (!memcmp(c, "...", w)) {
			px[x] = SV_DOODLE_EMPTY;
			continue;
		}
		uint32_t idx = 0;
		for (unsigned j = 0; j < w; j++) {
			int d = digit62(c[j]);
			if (c[j] == '?')
				return sv_err_set(err, -EINVAL, "line %zu, column %zu: '?' is a bad"
						  " pixel, not a palette code", line, col + j);
			if (d < 0)
				return sv_err_set(err, -EINVAL, "line %zu, column %zu: %s is not a"
						  " palette code (palette has %" PRIu32 " colour%s)",
						  line, col + j, sv_show_char(b, c + j, len - (x * w + j)),
						  npal, plural(npal));
			idx = idx * 62 + (uint32_t)d;
		}
		if (idx >= npal)
			return sv_err_set(err, -EINVAL, "line %zu, column %zu: index %" PRIu32
					  " is past the palette (%" PRIu32 " colour%s)", line, col,
					  idx, npal, plural(npal));
		px[x] = (uint16_t)idx;
	}
	return 0;
}

int sv_doodle_text_parse(const struct sv_palette *pal, const uint8_t *p,
			 size_t n, struct sv_doodle_grid *g, struct sv_err *err)
{
	uint32_t npal = pal ? pal->n : 0, size = g->size;
	uint64_t rows = 0;
	size_t line = 0;
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--; /* empty lines at the end */
	for (size_t at = 0; at < n; line++) {
		const uint8_t *nl = memchr(p + at, '\n', n - at);
		size_t len = nl ? (size_t)(nl - (p + at)) : n - at;
		const uint8_t *s = p + at;
		at += len + 1;
		if (len && s[len - 1] == '\r')
			len--;
		if (len && s[0] == '#')
			continue;
		if (!len && (rows == 0 || rows >= size))
			continue; /* blank lines around the grid */
		if (++rows > size)
			continue; /* counted for the message below */
		int rc = text_row(s, len, line + 1, npal, g->px + (rows - 1) * size, size, err);
		if (rc)
			return rc;
	}
	if (rows != size)
		return sv_err_set(err, -EINVAL, "%" PRIu64 " row%s, expected %" PRIu32, rows,
				  plural(rows), size);
	return 0;
}
