/*
 * doodle.h - the pieces of the Sketchy Maze (doodle) format module: chunk
 * codecs and the text grid (the PNG, zip, gzip and base64 codecs it uses
 * are the core's, in codec/codec.h).  Used by the format's files, the
 * fixture writer and the tests; nothing here knows about nodes or FUSE.
 *
 * Facts: ../shared/formats/doodle.md.  All functions are reentrant; none
 * keeps state between calls.  Inputs are untrusted: every length is
 * checked, and a problem is reported as -EBADMSG (malformed), -ENOTSUP (a
 * valid but unknown encoding) or -EFBIG (a limit), with a reason in err.
 */
#ifndef SV_DOODLE_H
#define SV_DOODLE_H

#include "format.h"
#include "codec/codec.h"

#include <zlib.h>

#include <jansson.h>

/* ---- grids ---------------------------------------------------------------- */

#define SV_DOODLE_EMPTY SV_PX_EMPTY  /* an empty pixel (also RLE's empty index) */
#define SV_DOODLE_BADPIX SV_PX_BAD /* an index past the palette (shown as "?") */
#define SV_DOODLE_MAX_SIZE 4096u  /* largest chunk size accepted */
#define SV_DOODLE_MAX_PALETTE 0xFFFEu /* palette entries usable by pixels */

/*
 * One chunk rasterised: size x size pixels, row-major from the chunk's
 * top-left world pixel (x0, y0) = (cx * size, cy * size).  Each pixel is a
 * palette index, SV_DOODLE_EMPTY, or SV_DOODLE_BADPIX.
 */
struct sv_doodle_grid {
	uint32_t size;
	int64_t x0, y0;
	uint16_t *px; /* owned: size * size entries */
};

/* Allocates px for size x size (all empty).  0, -ENOMEM, or -EFBIG if size
 * is 0 or over SV_DOODLE_MAX_SIZE. */
int sv_doodle_grid_init(struct sv_doodle_grid *g, uint32_t size, int64_t cx,
			int64_t cy);
void sv_doodle_grid_fini(struct sv_doodle_grid *g);
/* True if every pixel is empty. */
bool sv_doodle_grid_empty(const struct sv_doodle_grid *g);

/* What a decoder tolerated; the caller logs non-zero counts. */
struct sv_doodle_quirks {
	uint64_t run_clamped;  /* RLE pixels past the end of the chunk, dropped */
	uint64_t short_by;     /* RLE pixels missing at the end, left empty */
	uint64_t outside;      /* coordinates outside the chunk, ignored */
	uint64_t bad_index;    /* indices past the palette: SV_DOODLE_BADPIX */
	uint64_t bad_key;      /* JSON pixel keys that are not "x,y", ignored */
	uint64_t partial;      /* a partial record at the end, ignored */
};

/* ---- chunk encodings ---------------------------------------------------------- */

/*
 * Decodes a binary chunk (a .bin member: uvarint type, then the payload)
 * into g, whose size and origin are set and whose pixels are all empty.
 * Type 0 (map accessor: zigzag x, zigzag y, uvarint index, absolute
 * coordinates) and type 1 (RLE: uvarint index, uvarint run; index 0xFFFF
 * is empty).  Indices >= npal become SV_DOODLE_BADPIX.  Tolerated
 * problems are counted in q (see above).  -EBADMSG for an empty input or
 * an unreadable type, -ENOTSUP for another type.
 */
int sv_doodle_bin_decode(const uint8_t *p, size_t n, uint32_t npal,
			 struct sv_doodle_grid *g, struct sv_doodle_quirks *q,
			 struct sv_err *err);
/* Decodes only a map-accessor payload (no type), as used in a JSON
 * chunk's base64 "data" string. */
int sv_doodle_map_decode(const uint8_t *p, size_t n, uint32_t npal,
			 struct sv_doodle_grid *g, struct sv_doodle_quirks *q);
/*
 * Appends the RLE encoding of g (the type byte 01, then the runs, the
 * last run included) to out.  Pixels equal to SV_DOODLE_BADPIX must not
 * occur (-EINVAL).  0 or -ENOMEM.
 */
int sv_doodle_rle_encode(const struct sv_doodle_grid *g, struct sv_buf *out);
/* The number of bytes sv_doodle_rle_encode would append. */
size_t sv_doodle_rle_size(const struct sv_doodle_grid *g);

/*
 * Decodes a JSON chunk: {"type": 0, "data": {"x,y": index, ...}} with
 * absolute coordinates, or "data" as a base64 string of map-accessor
 * bytes.  Keys are matched case-insensitively.  -EBADMSG if it is not an
 * object or has no usable data, -ENOTSUP for another type.
 */
int sv_doodle_json_decode(json_t *chunk, uint32_t npal, struct sv_doodle_grid *g,
			  struct sv_doodle_quirks *q, struct sv_err *err);
/* A new JSON chunk {"type":0,"data":{...}} holding g's non-empty pixels in
 * row-major order, as the game reads it.  NULL if out of memory. */
json_t *sv_doodle_json_encode(const struct sv_doodle_grid *g);

/* Parses a chunk or pixel key "x,y" (decimal, optional '-', no spaces,
 * within int32).  True on success. */
bool sv_doodle_parse_xy(const char *s, int64_t *x, int64_t *y);

/* ---- the palette and the text grid -------------------------------------------- */



/* Parses "#rgb", "#rgba", "#rrggbb" or "#rrggbbaa" (hex digits in either
 * case).  0 or -EINVAL. */
int sv_doodle_colour_parse(const char *s, uint8_t rgba[4]);
/* Builds a palette from a root JSON "palette" object ({"swatches": [...]},
 * keys matched case-insensitively).  An entry whose colour does not parse
 * is black and counted in *bad_colours.  0, -ENOMEM, or -EBADMSG if
 * "swatches" is not an array or has more than SV_DOODLE_MAX_PALETTE
 * entries.  A NULL or empty palette gives n == 0. */
int sv_doodle_palette_from_json(json_t *palette, struct sv_palette *pal,
				unsigned *bad_colours, struct sv_err *err);
void sv_doodle_palette_fini(struct sv_palette *pal);

/*
 * The text grid of a chunk:
 *
 *   # chunk X,Y layer L size S
 *   # pixels X0..X1 x Y0..Y1, W character(s) each, top row first
 *   # .  empty
 *   # 0  #rrggbb  name          one line per palette entry
 *   ...
 *   S lines of S cells
 *
 * A cell is W characters: index i written in base 62 with the digits
 * 0-9a-zA-Z, W wide, where W = 1 for palettes of up to 62 colours, 2 up
 * to 3844, else 3.  Empty is W dots, a bad index W question marks.  The
 * colour is "#rrggbb", or "#rrggbbaa" when not opaque.  Control
 * characters in names are shown as '?'.
 */
unsigned sv_doodle_cell_width(uint32_t npal);
/* Exact byte size of the rendering (depends only on its arguments). */
uint64_t sv_doodle_text_size(const struct sv_palette *pal, unsigned layer,
			     int64_t cx, int64_t cy, uint32_t size);
/* The same, given legend = sv_doodle_legend_size(pal): for sizing many
 * chunks of one palette without measuring its legend each time. */
uint64_t sv_doodle_legend_size(const struct sv_palette *pal);
uint64_t sv_doodle_text_size_with(const struct sv_palette *pal, uint64_t legend,
				  unsigned layer, int64_t cx, int64_t cy, uint32_t size);
int sv_doodle_text_render(const struct sv_palette *pal, unsigned layer,
			  int64_t cx, int64_t cy, const struct sv_doodle_grid *g,
			  struct sv_buf *out);
/*
 * Parses a text grid into g (size and origin set by the caller, pixels
 * overwritten).  Lines starting with '#' are comments wherever they are;
 * "\r\n" line ends are accepted; empty lines after the grid are ignored.
 * There must be exactly g->size rows of g->size cells of the width the
 * palette gives, every code an index below pal->n.  -EINVAL with a reason
 * naming the line (1-based) and column otherwise.
 */
int sv_doodle_text_parse(const struct sv_palette *pal, const uint8_t *p,
			 size_t n, struct sv_doodle_grid *g, struct sv_err *err);

#endif
