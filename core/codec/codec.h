/*
 * codec.h - the byte codecs formats share, with neutral types: PNG
 * output (png.c), base64 (base64.c), gzip (gzip.c) and the zip reader and
 * writer (zip.c).  None knows about nodes, containers or any one format;
 * all are reentrant and keep no state between calls.  Inputs are
 * untrusted: every length is checked, and a problem is reported as
 * -EBADMSG (malformed), -ENOTSUP (valid but unknown) or -EFBIG (a limit),
 * with a reason in err.
 */
#ifndef SV_CODEC_H
#define SV_CODEC_H

#include "helpers.h"

#include <zlib.h>

/* ---- palettes ----------------------------------------------------------------- */

/* A palette of named colours: a drawing's swatches, a tile kind's
 * colour.  Index i of an image is entry i. */
struct sv_swatch {
	char *name;        /* owned; may be "" */
	uint8_t rgba[4];
};

struct sv_palette {
	uint32_t n;                   /* entries (at most 0xFFFE) */
	struct sv_swatch *v;   /* owned */
};

/* The index of an empty (transparent) pixel, and of one past the palette
 * (drawn magenta). */
#define SV_PX_EMPTY 0xFFFFu
#define SV_PX_BAD 0xFFFEu

/* ---- PNG ---------------------------------------------------------------------- */

/*
 * PNG of w x h palette indices (SV_PX_EMPTY transparent, SV_PX_BAD
 * magenta), written with stored (uncompressed) deflate blocks so that its
 * size depends only on w, h and the palette size: stat knows it without
 * encoding.  Up to 254 colours an indexed image (PLTE + tRNS, entry 0
 * empty, 1..n the swatches, n+1 bad); beyond, 8-bit RGBA.
 */
uint64_t sv_png_size(uint32_t w, uint32_t h, uint32_t npal);
int sv_png_encode(uint32_t w, uint32_t h, const uint16_t *px,
		  const struct sv_palette *pal, struct sv_buf *out);
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
/* The value of one base64 character (0 to 63), or -1 (inline: a log's
 * scan checks every character of its payloads). */
static inline int sv_base64_value(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}
int sv_base64_encode(const uint8_t *p, size_t n, struct sv_buf *out);
/* Decodes text a stricter check already passed (NetHack's payloads),
 * decoding to `size` bytes, without checking it again.  0 or -ENOMEM. */
int sv_base64_decode_valid(const char *s, size_t n, size_t size, struct sv_buf *out);

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
	uint64_t data;       /* where its data begins, when known without
			      * reading its local header (the writer's own
			      * entries); 0: read the header */
};

struct sv_zip {
	struct sv_zip_entry *e;  /* owned (sv_tab), in central directory order */
	size_t n;
	char *names;             /* read: every entry's name, in one array
				  * (sv_tab); NULL: each name is its own */
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
	uint64_t cd_off, cd_size; /* the directory, once finished */
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
/* After sv_zip_finish: the directory written, as sv_zip_open would read it
 * from the new zip (comment as given to finish), without reading it; the
 * writer's entries move into z. */
int sv_zip_writer_take(struct sv_zip_writer *w, const char *comment, size_t comment_len,
		       struct sv_zip *z, struct sv_err *err);

#endif
