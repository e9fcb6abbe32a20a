/*
 * doodle.h - the pieces of the Sketchy Maze (doodle) format module: chunk
 * codecs, the text grid, PNG output, and the zip reader and writer it
 * stores its containers with.  Used by doodle.c, the fixture writer and
 * the tests; nothing here knows about nodes or FUSE.
 *
 * Facts: ../shared/formats/doodle.md.  All functions are reentrant; none
 * keeps state between calls.  Inputs are untrusted: every length is
 * checked, and a problem is reported as -EBADMSG (malformed), -ENOTSUP (a
 * valid but unknown encoding) or -EFBIG (a limit), with a reason in err.
 */
#ifndef SV_DOODLE_H
#define SV_DOODLE_H

#include "savefs.h"

#include <zlib.h>

#include <jansson.h>

/* ---- grids ---------------------------------------------------------------- */

#define SV_DOODLE_EMPTY 0xFFFFu   /* an empty pixel (also RLE's empty index) */
#define SV_DOODLE_BADPIX 0xFFFEu  /* an index past the palette (shown as "?") */
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

/* ---- varints ------------------------------------------------------------------ */

/* Reads a protobuf-style LEB128 uvarint at p[*pos..n) (at most 10 bytes,
 * no overflow past 64 bits).  0 and advances *pos, or -EBADMSG (truncated
 * or too long; *pos unchanged). */
int sv_doodle_uvarint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v);
int sv_doodle_put_uvarint(struct sv_buf *b, uint64_t v);
static inline int64_t sv_doodle_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}
static inline uint64_t sv_doodle_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

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

struct sv_doodle_swatch {
	char *name;        /* owned; may be "" */
	uint8_t rgba[4];
};

struct sv_doodle_palette {
	uint32_t n;                   /* entries (at most SV_DOODLE_MAX_PALETTE) */
	struct sv_doodle_swatch *v;   /* owned */
};

/* Parses "#rgb", "#rgba", "#rrggbb" or "#rrggbbaa" (hex digits in either
 * case).  0 or -EINVAL. */
int sv_doodle_colour_parse(const char *s, uint8_t rgba[4]);
/* Builds a palette from a root JSON "palette" object ({"swatches": [...]},
 * keys matched case-insensitively).  An entry whose colour does not parse
 * is black and counted in *bad_colours.  0, -ENOMEM, or -EBADMSG if
 * "swatches" is not an array or has more than SV_DOODLE_MAX_PALETTE
 * entries.  A NULL or empty palette gives n == 0. */
int sv_doodle_palette_from_json(json_t *palette, struct sv_doodle_palette *pal,
				unsigned *bad_colours, struct sv_err *err);
void sv_doodle_palette_fini(struct sv_doodle_palette *pal);

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
uint64_t sv_doodle_text_size(const struct sv_doodle_palette *pal, unsigned layer,
			     int64_t cx, int64_t cy, uint32_t size);
/* The same, given legend = sv_doodle_legend_size(pal): for sizing many
 * chunks of one palette without measuring its legend each time. */
uint64_t sv_doodle_legend_size(const struct sv_doodle_palette *pal);
uint64_t sv_doodle_text_size_with(const struct sv_doodle_palette *pal, uint64_t legend,
				  unsigned layer, int64_t cx, int64_t cy, uint32_t size);
int sv_doodle_text_render(const struct sv_doodle_palette *pal, unsigned layer,
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
int sv_doodle_text_parse(const struct sv_doodle_palette *pal, const uint8_t *p,
			 size_t n, struct sv_doodle_grid *g, struct sv_err *err);

/* ---- PNG ---------------------------------------------------------------------- */

/*
 * PNG of w x h palette indices (SV_DOODLE_EMPTY transparent, BADPIX
 * magenta), written with stored (uncompressed) deflate blocks so that its
 * size depends only on w, h and the palette size: stat knows it without
 * encoding.  Up to 254 colours an indexed image (PLTE + tRNS, entry 0
 * empty, 1..n the swatches, n+1 bad); beyond, 8-bit RGBA.
 */
uint64_t sv_png_size(uint32_t w, uint32_t h, uint32_t npal);
int sv_png_encode(uint32_t w, uint32_t h, const uint16_t *px,
		  const struct sv_doodle_palette *pal, struct sv_buf *out);
/* The same for 8-bit RGBA pixels (w * h * 4 bytes, top row first); its
 * size is sv_png_size(w, h, 255). */
int sv_png_encode_rgba(uint32_t w, uint32_t h, const uint8_t *rgba, struct sv_buf *out);

/* ---- base64 and gzip ---------------------------------------------------------- */

/* Decodes standard base64 (padding optional; whitespace skipped).
 * Appends to out.  -EBADMSG on any other character. */
int sv_base64_decode(const char *s, size_t n, struct sv_buf *out, struct sv_err *err);
/* The exact number of bytes sv_base64_decode would produce, or -1 if the
 * text is not valid base64. */
int64_t sv_base64_decoded_size(const char *s, size_t n);
int sv_base64_encode(const uint8_t *p, size_t n, struct sv_buf *out);

/* Inflates a gzip stream (one member) into out, at most max bytes.
 * -EBADMSG (corrupt, truncated), -EFBIG (more than max). */
int sv_gunzip(const uint8_t *p, size_t n, uint64_t max, struct sv_buf *out,
	      struct sv_err *err);
/*
 * The same, read in pieces: the inflated bytes come out as the reader asks
 * for them, so a parser needs only what it keeps.  sv_gunzip_read fills
 * buf with up to size bytes (*got; fewer only at the end, then g->end is
 * set) and fails as sv_gunzip does; the total is capped by max.
 */
struct sv_gunzip {
	z_stream z;
	size_t n, left;
	uint64_t max, total;
	bool end;
};
int sv_gunzip_open(struct sv_gunzip *g, const uint8_t *p, size_t n, uint64_t max);
int sv_gunzip_read(struct sv_gunzip *g, uint8_t *buf, size_t size, size_t *got,
		   struct sv_err *err);
void sv_gunzip_close(struct sv_gunzip *g);
/* Appends a gzip stream of p[0..n) to out (zlib default level). */
int sv_gzip(const uint8_t *p, size_t n, struct sv_buf *out);

/* ---- zip ---------------------------------------------------------------------- */

/* Reads exactly n bytes at off of the source, or fails with a reason. */
typedef int (*sv_zip_read_fn)(void *arg, uint64_t off, void *buf, size_t n,
			      struct sv_err *err);

struct sv_zip_entry {
	char *name;          /* owned, NUL-terminated (a name with NUL is bad) */
	uint16_t version_made, version_needed, flags, method, mtime, mdate;
	uint32_t crc, ext_attr;
	uint64_t csize, usize; /* compressed, uncompressed (zip64 resolved) */
	uint64_t lho;        /* offset of the local header */
	uint64_t cd_off;     /* offset of its central directory record */
	uint64_t span_end;   /* where what follows it begins: the next local
			      * header in the file, or the central directory */
};

struct sv_zip {
	struct sv_zip_entry *e;  /* owned, in central directory order */
	size_t n;
	uint64_t cd_off, cd_size; /* the central directory */
	char *comment;           /* owned archive comment, or NULL */
	size_t comment_len;
};

/*
 * Reads the central directory of a zip of `size` bytes (zip64 included;
 * data descriptors are fine: sizes come from the central directory).
 * Reads only the end records and the central directory.  Fails with
 * -EBADMSG and "zip: byte N: <problem>" when the end record is missing,
 * the directory lies outside the file, or a record is inconsistent;
 * -EFBIG past max_entries entries.
 */
int sv_zip_open(struct sv_zip *z, sv_zip_read_fn rd, void *arg, uint64_t size,
		uint64_t max_entries, struct sv_err *err);
void sv_zip_fini(struct sv_zip *z);
/* The offset of entry e's data, from its local header (checked against
 * the file and the entry's compressed size). */
int sv_zip_data_offset(const struct sv_zip_entry *e, sv_zip_read_fn rd, void *arg,
		       uint64_t size, uint64_t *off, struct sv_err *err);
/*
 * Reads and decompresses entry e (stored or deflate) into a new blob of
 * exactly e->usize bytes, checking the CRC.  -ENOTSUP for another method
 * or encryption, -EFBIG if usize > max, -EBADMSG if corrupt.
 */
int sv_zip_extract(const struct sv_zip_entry *e, sv_zip_read_fn rd, void *arg,
		   uint64_t size, uint64_t max, struct sv_blob **out,
		   struct sv_err *err);

/* Where a written zip goes: a file descriptor (written from its current
 * position, which is offset 0 of the zip) or a memory buffer. */
struct sv_zip_writer {
	int fd;               /* -1 when writing to mem */
	struct sv_buf *mem;
	uint64_t off;         /* bytes written so far */
	struct sv_zip_entry *e; /* owned: entries written, for the directory */
	size_t n, cap;
	bool descriptors;     /* write data descriptors (flag 8), as Go's
			       * archive/zip does: for fixtures */
	void *deflater;       /* owned z_stream, reset between members */
};

void sv_zip_writer_init(struct sv_zip_writer *w, int fd, struct sv_buf *mem);
void sv_zip_writer_fini(struct sv_zip_writer *w);
/* Adds a member holding p[0..n), deflated (method 8) unless stored is
 * true.  Its time is 1980-01-01 00:00 unless mtime/mdate are set by
 * sv_zip_add_dated. */
int sv_zip_add(struct sv_zip_writer *w, const char *name, const void *p, size_t n,
	       bool stored, struct sv_err *err);
int sv_zip_add_dated(struct sv_zip_writer *w, const char *name, const void *p,
		     size_t n, bool stored, uint16_t mtime, uint16_t mdate,
		     struct sv_err *err);
/*
 * Adds member src as it is stored (no recompression): its compressed
 * bytes at data_off of the source are copied, from src_fd with
 * sv_copy_range when src_mem is NULL, else from src_mem.  Name, method,
 * CRC, sizes and times are kept.
 */
int sv_zip_add_raw(struct sv_zip_writer *w, const struct sv_zip_entry *src,
		   uint64_t data_off, int src_fd, const uint8_t *src_mem,
		   struct sv_err *err);
/*
 * Adds members z->e[i..j) as stored, copying their bytes as they lie in
 * the source (local header, data, data descriptor): members that follow
 * one another in the file go across in one copy (copy_file_range between
 * files).  A member whose data runs past the next local header is added
 * alone, as by sv_zip_add_raw.  rd/arg/size read the source for that
 * check; src_fd or src_mem give its bytes.
 */
int sv_zip_add_members(struct sv_zip_writer *w, const struct sv_zip *z, size_t i,
		       size_t j, sv_zip_read_fn rd, void *arg, uint64_t size,
		       int src_fd, const uint8_t *src_mem, struct sv_err *err);
/* Writes the central directory and end records (zip64 records when more
 * than 65534 entries or offsets past 4 GiB), with comment if not NULL. */
int sv_zip_finish(struct sv_zip_writer *w, const char *comment, size_t comment_len,
		  struct sv_err *err);

#endif
