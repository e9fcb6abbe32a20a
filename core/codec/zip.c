/*
 * zip.c - the zip reader and writer (Sketchy Maze drawings are zips)
 * (PKWARE APPNOTE.TXT 6.3; the subset Go's archive/zip, Python's zipfile
 * and the game write: stored and deflate, zip64, data descriptors).
 *
 * Layout (integers little-endian, offsets from the start of the zip):
 *
 *   part                size     fields
 *   ------------------  -------  ------------------------------------------
 *   local header        30       sig 04034b50, version needed, flags,
 *                                method, time, date, crc, csize, usize,
 *                                name len, extra len; then name, extra
 *   data                csize    stored bytes or raw deflate
 *   data descriptor     12..24   only with flag bit 3: [sig 08074b50] crc,
 *                                csize, usize (8 bytes each when zip64)
 *     ... one of each of the above per member ...
 *   central record      46       sig 02014b50, version made, version needed,
 *                                flags, method, time, date, crc, csize,
 *                                usize, name len, extra len, comment len,
 *                                disk, internal attr, external attr, local
 *                                header offset (lho); then name, extra,
 *                                comment
 *     ... one per member: together, the central directory ...
 *   zip64 end record    56       sig 06064b50, size of the rest (44),
 *                                versions, disks, entries on this disk,
 *                                entries, cd size, cd offset
 *   zip64 locator       20       sig 07064b50, disk, zip64 end offset, disks
 *   end record          22       sig 06054b50, disks, entries on this disk,
 *                                entries, cd size, cd offset, comment len;
 *                                then the archive comment (< 64 KiB)
 *
 * A 32-bit size or offset of 0xFFFFFFFF (a count of 0xFFFF) means "see the
 * zip64 record": for a member, extra field 0x0001 holds usize, csize and
 * lho, in that order, each only if its 32-bit field is 0xFFFFFFFF.
 *
 * Reader invariants: nothing is trusted.  The end record is looked for in
 * the last 65535 + 22 bytes; the directory must lie in the file before its
 * end records and hold the claimed number of 46-byte records before
 * anything is allocated for it; every record is parsed with the bounded
 * reader (rd.h).  Sizes come from the central directory, so descriptors are
 * never read.  An odd entry (unknown method, encrypted, a bad local header)
 * only fails when it is read; the whole open fails only when the directory
 * itself is inconsistent.  Names are copied as they are: one holding a NUL
 * byte reads as shorter, and the caller's name checks deal with that.
 * Errors are "zip: byte N: <problem>", N the absolute offset of what is
 * wrong; records are numbered from 0.
 *
 * Every function is reentrant: no state outside its arguments.
 */
#include "codec/codec.h"
#include "rd.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

enum {
	SIG_LOCAL = 0x04034b50, SIG_DESC = 0x08074b50, SIG_CENTRAL = 0x02014b50,
	SIG_END64 = 0x06064b50, SIG_LOC64 = 0x07064b50, SIG_END = 0x06054b50,
	LOCAL_LEN = 30, CENTRAL_LEN = 46, END64_LEN = 56, LOC64_LEN = 20,
	END_LEN = 22,
	FLAG_ENCRYPTED = 1 << 0, FLAG_DESCRIPTOR = 1 << 3, FLAG_UTF8 = 1 << 11,
	METHOD_STORED = 0, METHOD_DEFLATE = 8,
};
#define MARK32 0xFFFFFFFFu /* "the value is in the zip64 record" */
#define MAX_COUNT16 0xFFFEu /* more entries need a zip64 end record */
#define DOS_1980 (1 << 5 | 1) /* the DOS date 1980-01-01 */

/* The central directory is read this much at a time (and a record: its
 * fixed part and three fields of up to 64 KiB). */
#define CD_WINDOW (1u << 20)
#define CENTRAL_MAX (CENTRAL_LEN + 3 * 0xFFFF)

/* Names go into messages cut to 160 bytes so the problem still fits. */
#define NAME "%.160s"

static int bad(struct sv_err *err, uint64_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* -EBADMSG with "zip: byte N: <problem>". */
static int bad(struct sv_err *err, uint64_t at, const char *fmt, ...)
{
	char what[SV_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return sv_err_set(err, -EBADMSG, "zip: byte %" PRIu64 ": %s", at, what);
}

/* ---- reading ---------------------------------------------------------------- */

/* Finds the end record in tail[0..n): the last signature whose comment ends
 * exactly at the end of the file, else (junk appended) the last one whose
 * comment fits.  Returns its offset in tail, or SIZE_MAX. */
static size_t find_end(const uint8_t *tail, size_t n)
{
	size_t found = SIZE_MAX;
	struct sv_rd r;
	sv_rd_init(&r, tail, n);
	for (size_t i = n - END_LEN + 1; i-- > 0;) {
		if (memcmp(tail + i, "PK\5\6", 4))
			continue;
		sv_rd_seek(&r, i + 20);
		size_t end = i + END_LEN + sv_rd_u16le(&r);
		if (end == n)
			return i;
		if (end < n && found == SIZE_MAX)
			found = i;
	}
	return found;
}

/* Parses central record i at r's offset into e, its name copied to
 * *names (which moves past it). */
static int parse_central(struct sv_rd *r, uint64_t cd_off, size_t i,
			 struct sv_zip_entry *e, char **names, struct sv_err *err)
{
	uint64_t at = cd_off + r->off;
	if (sv_rd_u32le(r) != SIG_CENTRAL && sv_rd_ok(r))
		return bad(err, at, "central directory record %zu: bad signature", i);
	e->version_made = sv_rd_u16le(r);
	e->version_needed = sv_rd_u16le(r);
	e->flags = sv_rd_u16le(r);
	e->method = sv_rd_u16le(r);
	e->mtime = sv_rd_u16le(r);
	e->mdate = sv_rd_u16le(r);
	e->crc = sv_rd_u32le(r);
	e->csize = sv_rd_u32le(r);
	e->usize = sv_rd_u32le(r);
	size_t name_len = sv_rd_u16le(r), extra_len = sv_rd_u16le(r);
	size_t comment_len = sv_rd_u16le(r);
	sv_rd_bytes(r, 4); /* disk, internal attributes */
	e->ext_attr = sv_rd_u32le(r);
	e->lho = sv_rd_u32le(r);
	e->cd_off = at;
	const uint8_t *name = sv_rd_bytes(r, name_len);
	const uint8_t *extra = sv_rd_bytes(r, extra_len);
	sv_rd_bytes(r, comment_len);
	if (!sv_rd_ok(r))
		return bad(err, at,
			   "central directory record %zu: runs past the end of the directory",
			   i);

	/* Extra fields: only zip64's matters.  A malformed field that is not
	 * zip64's is other tools' business, so the walk just stops there. */
	struct sv_rd x;
	sv_rd_init(&x, extra, extra_len);
	while (sv_rd_left(&x) >= 4) {
		uint16_t id = sv_rd_u16le(&x), len = sv_rd_u16le(&x);
		const uint8_t *d = sv_rd_bytes(&x, len);
		if (!d || id != 0x0001)
			continue;
		struct sv_rd y;
		sv_rd_init(&y, d, len);
		if (e->usize == MARK32)
			e->usize = sv_rd_u64le(&y);
		if (e->csize == MARK32)
			e->csize = sv_rd_u64le(&y);
		if (e->lho == MARK32)
			e->lho = sv_rd_u64le(&y);
		if (!sv_rd_ok(&y))
			return bad(err, at,
				   "central directory record %zu: zip64 extra field too short",
				   i);
		break;
	}

	e->name = *names;
	if (name_len)
		memcpy(e->name, name, name_len);
	e->name[name_len] = '\0';
	*names += name_len + 1;
	return 0;
}

/* Where the end records say the central directory is. */
struct dir {
	uint64_t n, off, size;
	uint64_t rec;           /* the record saying so: the directory ends before it */
	const uint8_t *comment; /* in the tail */
	size_t comment_len;
};

/* Reads the end record at tail[at] (tail: the file's last tail_len bytes)
 * and, if a locator precedes it, the zip64 end record. */
static int read_end(sv_zip_read_fn rd, void *arg, uint64_t size, const uint8_t *tail,
		    size_t tail_len, size_t at, struct dir *d, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, tail, tail_len);
	sv_rd_seek(&r, at + 10);
	d->n = sv_rd_u16le(&r);
	d->size = sv_rd_u32le(&r);
	d->off = sv_rd_u32le(&r);
	d->comment_len = sv_rd_u16le(&r);
	d->comment = sv_rd_bytes(&r, d->comment_len); /* fits: find_end */
	d->rec = size - tail_len + at;
	if (d->rec < LOC64_LEN)
		return 0;
	uint8_t buf[END64_LEN];
	uint64_t loc = d->rec - LOC64_LEN;
	int rc = rd(arg, loc, buf, LOC64_LEN, err);
	if (rc)
		return rc;
	sv_rd_init(&r, buf, LOC64_LEN);
	if (sv_rd_u32le(&r) != SIG_LOC64)
		return 0;
	sv_rd_u32le(&r); /* disk */
	uint64_t e64 = sv_rd_u64le(&r);
	if (loc < END64_LEN || e64 > loc - END64_LEN)
		return bad(err, loc, "zip64 end record locator points outside the file");
	if ((rc = rd(arg, e64, buf, END64_LEN, err)))
		return rc;
	sv_rd_init(&r, buf, END64_LEN);
	if (sv_rd_u32le(&r) != SIG_END64)
		return bad(err, e64, "zip64 end record: bad signature");
	sv_rd_seek(&r, 32);
	d->n = sv_rd_u64le(&r);
	d->size = sv_rd_u64le(&r);
	d->off = sv_rd_u64le(&r);
	d->rec = e64;
	return 0;
}

static int cmp_lho(const void *a, const void *b)
{
	const struct sv_zip_entry *x = *(const struct sv_zip_entry *const *)a;
	const struct sv_zip_entry *y = *(const struct sv_zip_entry *const *)b;
	return x->lho < y->lho ? -1 : x->lho > y->lho;
}

/* Sets each entry's span_end: the next local header, or the directory.
 * Writers put the directory in the order of the data: then it is one
 * pass; else the entries are sorted by where their data is. */
static int find_spans(struct sv_zip *z, struct sv_err *err)
{
	if (!z->n)
		return 0;
	size_t run = 1;
	while (run < z->n && z->e[run - 1].lho <= z->e[run].lho)
		run++;
	if (run == z->n) {
		for (size_t k = z->n; k-- > 0;)
			z->e[k].span_end = k + 1 < z->n && z->e[k + 1].lho != z->e[k].lho
						   ? z->e[k + 1].lho
						   : k + 1 < z->n ? z->e[k + 1].span_end : z->cd_off;
		return 0;
	}
	struct sv_zip_entry **by = malloc(z->n * sizeof *by);
	if (!by)
		return sv_err_set(err, -ENOMEM, "zip: out of memory");
	for (size_t i = 0; i < z->n; i++)
		by[i] = &z->e[i];
	qsort(by, z->n, sizeof *by, cmp_lho);
	for (size_t i = 0; i < z->n; i++) {
		size_t k = i + 1;
		while (k < z->n && by[k]->lho == by[i]->lho)
			k++;
		by[i]->span_end = k < z->n ? by[k]->lho : z->cd_off;
	}
	free(by);
	return 0;
}

int sv_zip_open(struct sv_zip *z, sv_zip_read_fn rd, void *arg, uint64_t size,
		uint64_t max_entries, struct sv_err *err)
{
	memset(z, 0, sizeof *z);
	size_t tail_len = size < END_LEN + 0xFFFF ? (size_t)size : END_LEN + 0xFFFF;
	uint8_t *tail = NULL, *cd = NULL;
	size_t at = SIZE_MAX;
	struct dir d;
	int rc = 0;
	if (tail_len >= END_LEN) {
		if (!(tail = malloc(tail_len)))
			rc = sv_err_set(err, -ENOMEM, "zip: out of memory");
		else if (!(rc = rd(arg, size - tail_len, tail, tail_len, err)))
			at = find_end(tail, tail_len);
	}
	if (!rc && at == SIZE_MAX)
		rc = sv_err_set(err, -EBADMSG,
				"zip: no end of central directory record (not a zip file, or truncated)");
	if (rc || (rc = read_end(rd, arg, size, tail, tail_len, at, &d, err)))
		goto out;
	if (d.off > d.rec || d.size > d.rec - d.off) {
		rc = bad(err, d.rec, "central directory lies outside the file");
		goto out;
	}
	if (d.n > d.size / CENTRAL_LEN) {
		rc = bad(err, d.rec, "%" PRIu64 " entries cannot fit in a central directory of %"
			 PRIu64 " bytes", d.n, d.size);
		goto out;
	}
	if (d.n > max_entries) {
		rc = sv_err_set(err, -EFBIG, "zip: %" PRIu64 " entries, more than the limit of %"
				PRIu64, d.n, max_entries);
		goto out;
	}

	/* Both are bounded by the file's size now.  The entries and their
	 * names (no more bytes than the directory, with a NUL each) are
	 * arrays that leave the heap when big (sv_tab_alloc); the directory
	 * is read a window at a time, not held whole. */
	z->cd_off = d.off;
	z->cd_size = d.size;
	size_t cap, win = d.size < CD_WINDOW + CENTRAL_MAX ? (size_t)d.size : CD_WINDOW + CENTRAL_MAX;
	cd = malloc(win ? win : 1);
	if (d.comment_len && (z->comment = malloc(d.comment_len + 1))) {
		memcpy(z->comment, d.comment, d.comment_len);
		z->comment[d.comment_len] = '\0';
		z->comment_len = d.comment_len;
	}
	if (!cd || (d.comment_len && !z->comment) ||
	    sv_tab_alloc((void **)&z->e, &cap, (size_t)d.n, sizeof *z->e) ||
	    sv_tab_alloc((void **)&z->names, &cap, (size_t)(d.size + d.n), 1)) {
		rc = sv_err_set(err, -ENOMEM, "zip: out of memory");
		goto out;
	}
	char *names = z->names;
	uint64_t base = 0; /* the window's place in the directory */
	size_t have = 0, used = 0;
	while (z->n < d.n) {
		/* A record is in the window when its fixed part and its three
		 * variable fields are: else the window moves on to it. */
		size_t need = CENTRAL_LEN;
		if (have - used >= CENTRAL_LEN)
			need += sv_get_le(cd + used + 28, 2) + sv_get_le(cd + used + 30, 2) +
				sv_get_le(cd + used + 32, 2);
		if (have - used < need && base + have < d.size) {
			memmove(cd, cd + used, have - used);
			base += used;
			have -= used;
			used = 0;
			size_t more = d.size - base - have < win - have ? (size_t)(d.size - base - have)
									: win - have;
			if ((rc = rd(arg, d.off + base + have, cd + have, more, err)))
				goto out;
			have += more;
			continue;
		}
		struct sv_rd r;
		sv_rd_init(&r, cd, have);
		sv_rd_seek(&r, used);
		if ((rc = parse_central(&r, d.off + base, z->n, &z->e[z->n], &names, err)))
			goto out;
		used = r.off;
		z->n++;
	}
	rc = find_spans(z, err);
out:
	free(cd);
	free(tail);
	if (rc)
		sv_zip_fini(z);
	return rc;
}

void sv_zip_fini(struct sv_zip *z)
{
	if (!z)
		return;
	if (z->names) {
		sv_tab_free(z->names);
	} else {
		for (size_t i = 0; i < z->n; i++)
			free(z->e[i].name);
	}
	sv_tab_free(z->e);
	free(z->comment);
	memset(z, 0, sizeof *z);
}

/* sv_zip_data_offset, reading want (>= LOCAL_LEN) bytes at the local
 * header into h. */
static int sv_zip_data_offset_in(const struct sv_zip_entry *e, sv_zip_read_fn rd,
				 void *arg, uint64_t size, uint8_t *h, size_t want,
				 uint64_t *off, struct sv_err *err)
{
	if (e->lho > size || size - e->lho < LOCAL_LEN || want > size - e->lho)
		return bad(err, e->lho, NAME ": local header lies outside the file", e->name);
	int rc = rd(arg, e->lho, h, want, err);
	if (rc)
		return rc;
	struct sv_rd r;
	sv_rd_init(&r, h, LOCAL_LEN);
	if (sv_rd_u32le(&r) != SIG_LOCAL)
		return bad(err, e->lho, NAME ": local header has a bad signature", e->name);
	sv_rd_seek(&r, 26);
	uint64_t name_len = sv_rd_u16le(&r), extra_len = sv_rd_u16le(&r);
	/* lho + 30 <= size, and the lengths are 16-bit: no overflow here. */
	uint64_t data = e->lho + LOCAL_LEN + name_len + extra_len;
	if (data > size || e->csize > size - data)
		return bad(err, data, NAME ": data (%" PRIu64 " bytes) runs past the end of the file",
			   e->name, e->csize);
	*off = data;
	return 0;
}

/* e's data offset where the writer left it in the entry (and it fits). */
static bool known_data(const struct sv_zip_entry *e, uint64_t size, uint64_t *off)
{
	if (!e->data || e->lho > size || e->data < e->lho + LOCAL_LEN || e->data > size ||
	    e->csize > size - e->data)
		return false;
	*off = e->data;
	return true;
}

int sv_zip_data_offset(const struct sv_zip_entry *e, sv_zip_read_fn rd, void *arg,
		       uint64_t size, uint64_t *off, struct sv_err *err)
{
	if (known_data(e, size, off))
		return 0;
	uint8_t h[LOCAL_LEN];
	return sv_zip_data_offset_in(e, rd, arg, size, h, LOCAL_LEN, off, err);
}

/* A member larger than this is read a window at a time (or, stored,
 * straight into its blob), never held twice. */
#define ZIP_WINDOW (1u << 20)

/* Moves up to UINT_MAX of *left into *avail: zlib counts in uInt. */
static void take(uInt *avail, uint64_t *left)
{
	*avail = *left > UINT_MAX ? UINT_MAX : (uInt)*left;
	*left -= *avail;
}

/* Where a member's compressed bytes come from: memory (src), or the
 * reader, a window at a time (a large member is never held twice). */
struct zin {
	const uint8_t *src;
	sv_zip_read_fn rd;
	void *arg;
	uint64_t off;
	uint8_t *win;
	size_t wsize;
};

/* Inflates e's raw deflate data into exactly e->usize bytes at dst. */
static int inflate_exact(const struct sv_zip_entry *e, struct zin *from, uint8_t *dst,
			 struct sv_err *err)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, -15) != Z_OK)
		return sv_err_set(err, -ENOMEM, "zip: out of memory");
	uint64_t in = e->csize, out = e->usize;
	uint8_t spare;
	bool over = false; /* dst is full: output goes to spare, which must stay empty */
	int zr = Z_OK;
	z.next_in = (Bytef *)(uintptr_t)from->src;
	z.next_out = dst;
	do {
		if (!z.avail_in && from->src) {
			take(&z.avail_in, &in);
		} else if (!z.avail_in && in) {
			size_t k = in < from->wsize ? (size_t)in : from->wsize;
			if (from->rd(from->arg, from->off, from->win, k, err)) {
				inflateEnd(&z);
				return err->code ? err->code : -EIO;
			}
			from->off += k;
			in -= k;
			z.next_in = from->win;
			z.avail_in = (uInt)k;
		}
		if (!z.avail_out) {
			if (over)
				break; /* a byte past usize */
			if (out) {
				take(&z.avail_out, &out);
			} else {
				over = true;
				z.next_out = &spare;
				z.avail_out = 1;
			}
		}
		zr = inflate(&z, Z_NO_FLUSH);
	} while (zr == Z_OK);
	uint64_t left = out + (over ? 0 : z.avail_out);
	int rc = 0;
	if (over && !z.avail_out)
		rc = sv_err_set(err, -EBADMSG, "zip: " NAME ": deflate data inflates past %" PRIu64
				" bytes", e->name, e->usize);
	else if (zr == Z_STREAM_END && left)
		rc = sv_err_set(err, -EBADMSG, "zip: " NAME ": deflate data ends after %" PRIu64
				" of %" PRIu64 " bytes", e->name, e->usize - left, e->usize);
	else if (zr == Z_BUF_ERROR) /* input used up, the stream not ended */
		rc = sv_err_set(err, -EBADMSG, "zip: " NAME ": deflate data is cut short after %"
				PRIu64 " of %" PRIu64 " bytes", e->name, e->usize - left, e->usize);
	else if (zr == Z_MEM_ERROR)
		rc = sv_err_set(err, -ENOMEM, "zip: out of memory");
	else if (zr != Z_STREAM_END)
		rc = sv_err_set(err, -EBADMSG, "zip: " NAME ": corrupt deflate data (%s)", e->name,
				z.msg ? z.msg : "data error");
	inflateEnd(&z);
	return rc;
}

int sv_zip_extract(const struct sv_zip_entry *e, sv_zip_read_fn rd, void *arg,
		   uint64_t size, uint64_t max, struct sv_blob **out,
		   struct sv_err *err)
{
	*out = NULL;
	if (e->flags & FLAG_ENCRYPTED)
		return sv_err_set(err, -ENOTSUP, "zip: " NAME " is encrypted", e->name);
	if (e->method != METHOD_STORED && e->method != METHOD_DEFLATE)
		return sv_err_set(err, -ENOTSUP, "zip: " NAME ": compression method %u not supported",
				  e->name, e->method);
	if (e->usize > max || e->usize > SIZE_MAX - sizeof(struct sv_blob))
		return sv_err_set(err, -EFBIG, "zip: " NAME ": %" PRIu64
				  " bytes, more than the limit of %" PRIu64, e->name, e->usize, max);
	if (e->method == METHOD_STORED && e->csize != e->usize)
		return sv_err_set(err, -EBADMSG, "zip: " NAME ": stored, but its compressed size %"
				  PRIu64 " is not its size %" PRIu64, e->name, e->csize, e->usize);
	/* Deflate expands at most 1032:1 (a 258-byte match per 2 bits), so a
	 * larger claim is a lie: refuse it before allocating for it. */
	if (e->csize < (UINT64_MAX - 64) / 1032 && e->usize > e->csize * 1032 + 64)
		return sv_err_set(err, -EBADMSG, "zip: " NAME ": %" PRIu64
				  " compressed bytes cannot inflate to %" PRIu64, e->name,
				  e->csize, e->usize);
	if (e->csize > SIZE_MAX - 1024)
		return sv_err_set(err, -EFBIG, "zip: " NAME ": too large for memory", e->name);
	/* One read for the local header and the data: the header is almost
	 * always the name from the directory and no extra field (else read
	 * again where the data really is). */
	size_t name_len = strlen(e->name);
	uint64_t guess = LOCAL_LEN + name_len;
	uint64_t want = guess + e->csize;
	if (e->lho > size || size - e->lho < LOCAL_LEN)
		want = LOCAL_LEN; /* fails below, with the reason */
	else if (want > size - e->lho)
		want = size - e->lho;
	uint8_t *src = NULL;
	uint64_t off = 0;
	int rc = 0;
	struct sv_blob *b = sv_blob_new((size_t)e->usize);
	if (!b) {
		rc = sv_err_set(err, -ENOMEM, "zip: out of memory");
		goto out;
	}
	if (e->csize > ZIP_WINDOW) {
		/* A large member: read straight into its blob (stored), or
		 * inflated from a window of its compressed bytes: one copy. */
		if ((rc = sv_zip_data_offset(e, rd, arg, size, &off, err)))
			goto out;
		if (off > size || e->csize > size - off) {
			rc = sv_err_set(err, -EBADMSG, "zip: " NAME ": data at %" PRIu64 "+%" PRIu64
					" lies past the end of the file", e->name, off, e->csize);
			goto out;
		}
		if (e->method == METHOD_STORED) {
			rc = rd(arg, off, b->data, b->len, err);
		} else if (!(src = malloc(ZIP_WINDOW))) {
			rc = sv_err_set(err, -ENOMEM, "zip: out of memory");
		} else {
			struct zin from = {NULL, rd, arg, off, src, ZIP_WINDOW};
			rc = inflate_exact(e, &from, b->data, err);
		}
		if (rc)
			goto out;
		goto check;
	}
	if (!(src = malloc((size_t)want))) {
		rc = sv_err_set(err, -ENOMEM, "zip: out of memory");
		goto out;
	}
	if ((rc = sv_zip_data_offset_in(e, rd, arg, size, src, (size_t)want, &off, err)))
		goto out;
	const uint8_t *data = src + (off - e->lho);
	if (off - e->lho + e->csize > want) {
		/* An extra field, or a name other than the directory's. */
		free(src);
		if (!(src = malloc(e->csize ? (size_t)e->csize : 1))) {
			rc = sv_err_set(err, -ENOMEM, "zip: out of memory");
			goto out;
		}
		if ((rc = rd(arg, off, src, (size_t)e->csize, err)))
			goto out;
		data = src;
	}
	if (e->method == METHOD_STORED) {
		memcpy(b->data, data, b->len);
	} else {
		struct zin from = {data, NULL, NULL, 0, NULL, 0};
		rc = inflate_exact(e, &from, b->data, err);
	}
	if (rc)
		goto out;
check:;
	uint32_t crc = (uint32_t)crc32_z(0, b->data, b->len);
	if (crc != e->crc) {
		rc = sv_err_set(err, -EBADMSG, "zip: " NAME ": CRC mismatch (stored 0x%08" PRIx32
				", computed 0x%08" PRIx32 ")", e->name, e->crc, crc);
		goto out;
	}
	*out = b;
	b = NULL;
out:
	free(src);
	sv_blob_unref(b);
	return rc;
}

/* ---- writing ---------------------------------------------------------------- */

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	sv_put_u32le(p, v);
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	return put32(put32(p, (uint32_t)v), (uint32_t)(v >> 32));
}

/* A 32-bit field: the value, or the zip64 mark. */
static uint32_t field32(uint64_t v)
{
	return v >= MARK32 ? MARK32 : (uint32_t)v;
}

/* The fields a local header and a central record share, from "version
 * needed" to "extra len"; zero: crc and sizes 0 (they follow the data). */
static uint8_t *put_shared(uint8_t *p, const struct sv_zip_entry *e, uint16_t needed,
			   bool zero, size_t name_len, size_t extra_len)
{
	p = put16(put16(p, needed), e->flags);
	p = put16(put16(put16(p, e->method), e->mtime), e->mdate);
	p = put32(p, zero ? 0 : e->crc);
	p = put32(p, zero ? 0 : field32(e->csize));
	p = put32(p, zero ? 0 : field32(e->usize));
	return put16(put16(p, (uint16_t)name_len), (uint16_t)extra_len);
}

void sv_zip_writer_init(struct sv_zip_writer *w, int fd, struct sv_buf *mem)
{
	memset(w, 0, sizeof *w);
	w->fd = fd;
	w->mem = mem;
}

int sv_zip_writer_take(struct sv_zip_writer *w, const char *comment, size_t comment_len,
		       struct sv_zip *z, struct sv_err *err)
{
	memset(z, 0, sizeof *z);
	if (comment_len) {
		if (!(z->comment = malloc(comment_len + 1)))
			return sv_err_set(err, -ENOMEM, "zip: out of memory");
		memcpy(z->comment, comment, comment_len);
		z->comment[comment_len] = '\0';
		z->comment_len = comment_len;
	}
	z->e = w->e;
	z->n = w->n;
	z->cd_off = w->cd_off;
	z->cd_size = w->cd_size;
	w->e = NULL;
	w->n = w->cap = 0;
	int rc = find_spans(z, err);
	if (rc)
		sv_zip_fini(z);
	return rc;
}

void sv_zip_writer_fini(struct sv_zip_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		free(w->e[i].name);
	sv_tab_free(w->e);
	w->e = NULL;
	w->n = w->cap = 0;
	if (w->deflater) {
		deflateEnd(w->deflater);
		free(w->deflater);
		w->deflater = NULL;
	}
}

static int emit(struct sv_zip_writer *w, const void *p, size_t n, struct sv_err *err)
{
	int rc = w->fd >= 0 ? sv_write_all(w->fd, p, n) : sv_buf_add(w->mem, p, n);
	if (rc)
		return sv_err_set(err, rc, "zip: cannot write: %s", strerror(-rc));
	w->off += n;
	return 0;
}

/* Appends n bytes at off of fd to b (the raw copy into memory). */
static int pread_buf(int fd, uint64_t off, size_t n, struct sv_buf *b)
{
	int rc = sv_buf_reserve(b, n);
	while (!rc && n) {
		ssize_t k = pread(fd, b->p + b->len, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = k < 0 ? -errno : -EIO;
			break;
		}
		b->len += (size_t)k;
		off += (uint64_t)k;
		n -= (size_t)k;
	}
	return rc;
}

static int check_name(const char *name, struct sv_err *err)
{
	size_t n = name ? strlen(name) : 0;
	if (!n || n > 0xFFFF)
		return sv_err_set(err, -EINVAL,
				  "zip: a member name must be 1 to 65535 bytes, not %zu", n);
	return 0;
}

/*
 * Writes member e (sizes and crc set, name borrowed): local header, data
 * (data[0..csize) if data, else csize bytes at src_off of src_fd), and a
 * descriptor if its flag says so; then records it for the directory.
 */
static int put_member(struct sv_zip_writer *w, struct sv_zip_entry *e, const char *name,
		      const uint8_t *data, int src_fd, uint64_t src_off, struct sv_err *err)
{
	size_t name_len = strlen(name);
	bool desc = e->flags & FLAG_DESCRIPTOR;
	bool z64 = e->csize >= MARK32 || e->usize >= MARK32;
	if (sv_tab_grow((void **)&w->e, &w->cap, w->n + 1, sizeof *w->e))
		return sv_err_set(err, -ENOMEM, "zip: out of memory");
	e->lho = w->off;
	if (!(e->name = strdup(name)))
		return sv_err_set(err, -ENOMEM, "zip: out of memory");

	/* With a descriptor the local header's crc and sizes are zero (the
	 * streaming convention); zip64's extra then only says "8-byte sizes". */
	uint8_t h[LOCAL_LEN + 20], *p = put32(h, SIG_LOCAL);
	p = put_shared(p, e, e->version_needed, desc, name_len, z64 ? 20 : 0);
	if (z64) {
		p = put16(put16(p, 0x0001), 16);
		p = put64(put64(p, desc ? 0 : e->usize), desc ? 0 : e->csize);
	}
	int rc = emit(w, h, (size_t)(p - h), err);
	if (!rc)
		rc = emit(w, name, name_len, err);
	e->data = w->off;
	if (!rc && data) {
		rc = emit(w, data, (size_t)e->csize, err);
	} else if (!rc) {
		rc = w->fd >= 0 ? sv_copy_range(src_fd, src_off, w->fd, e->csize)
				: pread_buf(src_fd, src_off, (size_t)e->csize, w->mem);
		if (rc)
			rc = sv_err_set(err, rc, "zip: " NAME ": cannot copy its data: %s", name,
					strerror(-rc));
		else
			w->off += e->csize;
	}
	if (!rc && desc) {
		p = put32(put32(h, SIG_DESC), e->crc);
		if (z64)
			p = put64(put64(p, e->csize), e->usize);
		else
			p = put32(put32(p, (uint32_t)e->csize), (uint32_t)e->usize);
		rc = emit(w, h, (size_t)(p - h), err);
	}
	if (rc) {
		free(e->name);
		return rc;
	}
	w->e[w->n++] = *e;
	return 0;
}

/* Raw deflate (no zlib header) of p[0..n), appended to out.  The writer's
 * deflate state is made once and reset between members: setting one up
 * costs more than compressing a small member. */
static int deflate_raw(struct sv_zip_writer *w, const uint8_t *p, size_t n,
		       struct sv_buf *out)
{
	if (!w->deflater) {
		z_stream *zs = calloc(1, sizeof *zs);
		if (!zs)
			return -ENOMEM;
		if (deflateInit2(zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK) {
			free(zs);
			return -ENOMEM;
		}
		w->deflater = zs;
	} else if (deflateReset(w->deflater) != Z_OK) {
		return -ENOMEM;
	}
	z_stream *z = w->deflater;
	uint64_t in = n;
	int rc = 0, zr;
	z->next_in = (Bytef *)(uintptr_t)p;
	do {
		if (!z->avail_in)
			take(&z->avail_in, &in);
		if (out->cap - out->len < 1024 &&
		    (rc = sv_buf_reserve(out, out->len > 4096 ? out->len : 4096)))
			break;
		uint64_t room = out->cap - out->len;
		z->next_out = out->p + out->len;
		take(&z->avail_out, &room);
		uInt before = z->avail_out;
		zr = deflate(z, in ? Z_NO_FLUSH : Z_FINISH);
		out->len += before - z->avail_out;
	} while (zr == Z_OK || zr == Z_BUF_ERROR);
	if (!rc && zr != Z_STREAM_END)
		rc = -ENOMEM;
	return rc;
}

int sv_zip_add(struct sv_zip_writer *w, const char *name, const void *p, size_t n,
	       bool stored, struct sv_err *err)
{
	return sv_zip_add_dated(w, name, p, n, stored, 0, DOS_1980, err);
}

int sv_zip_add_dated(struct sv_zip_writer *w, const char *name, const void *p,
		     size_t n, bool stored, uint16_t mtime, uint16_t mdate,
		     struct sv_err *err)
{
	int rc = check_name(name, err);
	if (rc)
		return rc;
	struct sv_buf z;
	sv_buf_init(&z);
	const uint8_t *data = p;
	if (!stored) {
		if ((rc = deflate_raw(w, p, n, &z)))
			return sv_err_set(err, rc, "zip: " NAME ": cannot compress: out of memory",
					  name);
		data = z.p;
	}
	struct sv_zip_entry e = {
		.flags = w->descriptors ? FLAG_DESCRIPTOR : 0,
		.method = stored ? METHOD_STORED : METHOD_DEFLATE,
		.mtime = mtime,
		.mdate = mdate,
		.crc = (uint32_t)crc32_z(0, p, n),
		.csize = stored ? n : z.len,
		.usize = n,
	};
	for (const char *s = name; *s; s++)
		if ((unsigned char)*s >= 0x80)
			e.flags |= FLAG_UTF8; /* not ASCII: say it is UTF-8, not CP437 */
	e.version_needed = e.version_made = e.csize >= MARK32 || e.usize >= MARK32 ? 45 : 20;
	rc = put_member(w, &e, name, data ? data : (const uint8_t *)"", -1, 0, err);
	sv_buf_fini(&z);
	return rc;
}

int sv_zip_add_raw(struct sv_zip_writer *w, const struct sv_zip_entry *src,
		   uint64_t data_off, int src_fd, const uint8_t *src_mem,
		   struct sv_err *err)
{
	int rc = check_name(src->name, err);
	if (rc)
		return rc;
	if (src->csize > SIZE_MAX)
		return sv_err_set(err, -EFBIG, "zip: " NAME ": too large", src->name);
	struct sv_zip_entry e = *src;
	/* Sizes are known now, so they go in the local header. */
	e.flags &= (uint16_t)~FLAG_DESCRIPTOR;
	/* Keep a higher requirement (another method, encryption). */
	uint16_t need = e.csize >= MARK32 || e.usize >= MARK32 ? 45 : 20;
	if (e.version_needed < need)
		e.version_needed = need;
	return put_member(w, &e, src->name, src_mem ? src_mem + data_off : NULL, src_fd,
			  data_off, err);
}

/* Copies source bytes [start, end) to the output as they are. */
static int copy_bytes(struct sv_zip_writer *w, uint64_t start, uint64_t end, int src_fd,
		      const uint8_t *src_mem, struct sv_err *err)
{
	uint64_t n = end - start;
	if (src_mem) {
		if (n > SIZE_MAX)
			return sv_err_set(err, -EFBIG, "zip: too large");
		return emit(w, src_mem + start, (size_t)n, err);
	}
	if (w->fd >= 0) {
		int rc = sv_copy_range(src_fd, start, w->fd, n);
		if (rc)
			return sv_err_set(err, rc, "zip: cannot copy: %s", strerror(-rc));
		w->off += n;
		return 0;
	}
	size_t before = w->mem->len;
	if (n > SIZE_MAX || pread_buf(src_fd, start, (size_t)n, w->mem))
		return sv_err_set(err, -EIO, "zip: cannot read the source");
	w->off += w->mem->len - before;
	return 0;
}

/* src copied as it lay, its local header now at lho and its data at data. */
static int record(struct sv_zip_writer *w, const struct sv_zip_entry *src, uint64_t lho,
		  uint64_t data, struct sv_err *err)
{
	if (sv_tab_grow((void **)&w->e, &w->cap, w->n + 1, sizeof *w->e))
		return sv_err_set(err, -ENOMEM, "zip: out of memory");
	struct sv_zip_entry e = *src;
	if (!(e.name = strdup(src->name)))
		return sv_err_set(err, -ENOMEM, "zip: out of memory");
	e.lho = lho;
	e.data = data;
	w->e[w->n++] = e;
	return 0;
}

/* A window of source bytes, so that the local headers of a run of small
 * members cost one read for many. */
struct hdr_window {
	uint64_t off;
	size_t len;
	uint8_t buf[1 << 16];
};

/* The offset of e's data, read through the window (sv_zip_data_offset
 * gives the reason when the header is not right). */
static int window_data_offset(struct hdr_window *wn, const struct sv_zip_entry *e,
			      sv_zip_read_fn rd, void *arg, uint64_t size, uint64_t *off,
			      struct sv_err *err)
{
	if (known_data(e, size, off))
		return 0; /* written here: no header to read */
	if (e->lho > size || size - e->lho < LOCAL_LEN)
		return sv_zip_data_offset(e, rd, arg, size, off, err);
	if (e->lho < wn->off || e->lho - wn->off > wn->len || wn->len - (e->lho - wn->off) < LOCAL_LEN) {
		size_t n = size - e->lho < sizeof wn->buf ? (size_t)(size - e->lho) : sizeof wn->buf;
		int rc = rd(arg, e->lho, wn->buf, n, err);
		if (rc)
			return rc;
		wn->off = e->lho;
		wn->len = n;
	}
	struct sv_rd h;
	sv_rd_init_at(&h, wn->buf, wn->len, (size_t)(e->lho - wn->off));
	uint32_t sig = sv_rd_u32le(&h);
	sv_rd_seek(&h, h.off + 22);
	uint64_t data = e->lho + LOCAL_LEN + sv_rd_u16le(&h);
	data += sv_rd_u16le(&h);
	if (sig != SIG_LOCAL || data > size || e->csize > size - data)
		return sv_zip_data_offset(e, rd, arg, size, off, err);
	*off = data;
	return 0;
}

int sv_zip_add_members(struct sv_zip_writer *w, const struct sv_zip *z, size_t i,
		       size_t j, sv_zip_read_fn rd, void *arg, uint64_t size,
		       int src_fd, const uint8_t *src_mem, struct sv_err *err)
{
	struct hdr_window *wn = malloc(sizeof *wn);
	if (!wn)
		return sv_err_set(err, -ENOMEM, "zip: out of memory");
	/* Each member's local header length, for its data's new offset. */
	uint32_t *hl = malloc((j > i ? j - i : 1) * sizeof *hl);
	if (!hl) {
		free(wn);
		return sv_err_set(err, -ENOMEM, "zip: out of memory");
	}
	wn->off = wn->len = 0;
	int rc = 0;
	size_t run = SIZE_MAX; /* the first member of the run being gathered */
	for (size_t k = i; k < j && !rc; k++) {
		const struct sv_zip_entry *t = &z->e[k];
		uint64_t data = 0;
		if ((rc = check_name(t->name, err)) ||
		    (rc = window_data_offset(wn, t, rd, arg, size, &data, err)))
			break;
		hl[k - i] = (uint32_t)(data - t->lho);
		/* A member goes across as it lies only if its data (and
		 * descriptor) end before whatever follows it: crafted archives
		 * overlap members, and a copy must not. */
		uint64_t desc = t->flags & FLAG_DESCRIPTOR
					? (t->csize >= MARK32 || t->usize >= MARK32 ? 24 : 16) : 0;
		bool clean = t->span_end <= size && data <= t->span_end &&
			     t->span_end - data >= t->csize &&
			     t->span_end - data - t->csize >= desc;
		bool joins = run != SIZE_MAX && clean && z->e[k - 1].span_end == t->lho &&
			     t->lho > z->e[k - 1].lho;
		if (run != SIZE_MAX && !joins) {
			/* The run so far goes across in one copy. */
			uint64_t start = z->e[run].lho, base = w->off;
			rc = copy_bytes(w, start, z->e[k - 1].span_end, src_fd, src_mem, err);
			for (size_t q = run; q < k && !rc; q++)
				rc = record(w, &z->e[q], base + (z->e[q].lho - start),
					    base + (z->e[q].lho - start) + hl[q - i], err);
			run = SIZE_MAX;
		}
		if (rc)
			break;
		if (clean && run == SIZE_MAX)
			run = k;
		else if (!clean)
			rc = sv_zip_add_raw(w, t, data, src_fd, src_mem, err);
	}
	if (!rc && run != SIZE_MAX) {
		uint64_t start = z->e[run].lho, base = w->off;
		rc = copy_bytes(w, start, z->e[j - 1].span_end, src_fd, src_mem, err);
		for (size_t q = run; q < j && !rc; q++)
			rc = record(w, &z->e[q], base + (z->e[q].lho - start),
				    base + (z->e[q].lho - start) + hl[q - i], err);
	}
	free(hl);
	free(wn);
	return rc;
}

int sv_zip_finish(struct sv_zip_writer *w, const char *comment, size_t comment_len,
		  struct sv_err *err)
{
	if (comment_len > 0xFFFF)
		return sv_err_set(err, -EINVAL, "zip: a comment of %zu bytes is over 65535",
				  comment_len);
	struct sv_buf b;
	sv_buf_init(&b);
	uint64_t cd_off = w->off;
	int rc = 0;
	for (size_t i = 0; i < w->n && !rc; i++) {
		struct sv_zip_entry *e = &w->e[i];
		size_t name_len = strlen(e->name);
		e->cd_off = cd_off + b.len;
		uint8_t x[28], *q = x + 4;
		if (e->usize >= MARK32)
			q = put64(q, e->usize);
		if (e->csize >= MARK32)
			q = put64(q, e->csize);
		if (e->lho >= MARK32)
			q = put64(q, e->lho);
		size_t extra_len = q > x + 4 ? (size_t)(q - x) : 0;
		if (extra_len)
			put16(put16(x, 0x0001), (uint16_t)(extra_len - 4));
		if ((rc = sv_buf_reserve(&b, CENTRAL_LEN + extra_len + name_len)))
			break;
		uint8_t *p = put16(put32(b.p + b.len, SIG_CENTRAL), e->version_made);
		uint16_t need = extra_len && e->version_needed < 45 ? 45 : e->version_needed;
		p = put_shared(p, e, need, false, name_len, extra_len);
		p = put16(p, 0); /* comment */
		p = put32(p, 0); /* disk, internal attributes */
		p = put32(p, e->ext_attr);
		p = put32(p, field32(e->lho));
		memcpy(p, e->name, name_len);
		memcpy(p + name_len, x, extra_len);
		b.len += CENTRAL_LEN + extra_len + name_len;
	}
	uint64_t cd_size = b.len;
	w->cd_off = cd_off;
	w->cd_size = cd_size;
	bool z64 = w->n > MAX_COUNT16 || cd_off >= MARK32 || cd_size >= MARK32;
	if (!rc)
		rc = sv_buf_reserve(&b, END64_LEN + LOC64_LEN + END_LEN + comment_len);
	if (rc) {
		sv_buf_fini(&b);
		return sv_err_set(err, rc, "zip: out of memory");
	}
	uint8_t *p = b.p + b.len;
	if (z64) {
		p = put64(put32(p, SIG_END64), END64_LEN - 12);
		p = put32(put16(put16(p, 45), 45), 0); /* versions, this disk */
		p = put32(p, 0);                       /* the directory's disk */
		p = put64(put64(p, w->n), w->n);
		p = put64(put64(p, cd_size), cd_off);
		p = put64(put32(put32(p, SIG_LOC64), 0), cd_off + cd_size);
		p = put32(p, 1); /* disks */
	}
	uint16_t n16 = w->n > MAX_COUNT16 ? 0xFFFF : (uint16_t)w->n;
	p = put32(put32(p, SIG_END), 0); /* disks */
	p = put16(put16(p, n16), n16);
	p = put32(put32(p, field32(cd_size)), field32(cd_off));
	p = put16(p, (uint16_t)comment_len);
	if (comment_len)
		memcpy(p, comment, comment_len);
	b.len = (size_t)(p - b.p) + comment_len;
	rc = emit(w, b.p, b.len, err);
	sv_buf_fini(&b);
	return rc;
}
