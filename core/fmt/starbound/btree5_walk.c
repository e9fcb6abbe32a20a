/*
 * btree5.c - BTreeDB5, read (see btree5.h for the layout and the rules).
 *
 * Invariants: every block number is checked against the active root's
 * device size before it is read; each block of the walk is read once (a
 * bitmap of blocks met); a leaf's data is read as one stream across its
 * chain of blocks, so keys and values may straddle blocks; no value is
 * read by the walk, only skipped.
 */
#include "btree5_walk.h"

#include "rd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS 64

/* The u32 at off of a block read whole (off + 4 <= block size). */
static uint32_t block_u32(const uint8_t *buf, uint32_t size, size_t off)
{
	struct sv_rd r;
	sv_rd_init_at(&r, buf, size, off);
	return sv_rd_u32be(&r);
}

int sv_bt5_header(const uint8_t *p, size_t n, uint64_t file_size, struct sv_bt5 *h,
		  struct sv_err *err)
{
	memset(h, 0, sizeof *h);
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	const uint8_t *magic = sv_rd_bytes(&r, 8);
	if (n < SV_BT5_HEADER || !magic || memcmp(magic, "BTreeDB5", 8))
		return sv_err_set(err, -EBADMSG, "btree: byte 0: not a BTreeDB5 database");
	h->block_size = sv_rd_u32be(&r);
	sv_rd_copy(&r, h->content_id, 16);
	h->key_size = sv_rd_u32be(&r);
	h->use_alt = sv_rd_u8(&r);
	for (int i = 0; i < 2; i++) {
		h->roots[i].free_head = sv_rd_u32be(&r);
		h->roots[i].device_size = (int64_t)sv_rd_u64be(&r);
		h->roots[i].root = sv_rd_u32be(&r);
		h->roots[i].root_is_leaf = sv_rd_u8(&r) != 0;
	}
	if (h->block_size < 64 || h->block_size > (1u << 24))
		return sv_err_set(err, -EBADMSG, "btree: byte 8: block size %u is not usable",
				  h->block_size);
	/* An index block must hold at least one key and two children. */
	if (!h->key_size || h->key_size > h->block_size - 19)
		return sv_err_set(err, -EBADMSG, "btree: byte 28: key size %u does not fit a "
				  "block of %u bytes", h->key_size, h->block_size);
	const struct sv_bt5_root *a = sv_bt5_active(h);
	size_t at = h->use_alt ? 50 : 33;
	if (a->device_size < SV_BT5_HEADER || (uint64_t)a->device_size > file_size)
		return sv_err_set(err, -EBADMSG, "btree: byte %zu: device size %lld is not "
				  "within the file (%llu bytes)", at + 4, (long long)a->device_size,
				  (unsigned long long)file_size);
	h->nblocks = ((uint64_t)a->device_size - SV_BT5_HEADER) / h->block_size;
	if (a->root >= h->nblocks)
		return sv_err_set(err, -EBADMSG, "btree: byte %zu: root block %u is past the "
				  "device size (%llu blocks)", at + 12, a->root,
				  (unsigned long long)h->nblocks);
	return 0;
}

const struct sv_bt5_root *sv_bt5_active(const struct sv_bt5 *h)
{
	return &h->roots[h->use_alt ? 1 : 0];
}

struct walk {
	const struct sv_bt5 *h;
	sv_bt5_pread_fn rd;
	sv_bt5_view_fn view; /* or NULL: blocks are copied with rd */
	void *rd_arg;
	sv_bt5_record_fn fn;
	void *arg;
	struct sv_err *err;
	uint8_t *seen;      /* a bit per block */
	uint8_t *last;      /* the last record's key */
	bool have_last;
	const struct sv_bt5_shape *shape; /* or NULL */
	void *shape_arg;
};

/* Block n (block_size bytes), once per walk, in *out: read into own, or
 * where the reader holds it (w->view); `kind` its two magic bytes. */
static int read_block(struct walk *w, uint32_t n, const char *kind, uint8_t *own,
		      const uint8_t **out)
{
	const struct sv_bt5 *h = w->h;
	if (n >= h->nblocks)
		return sv_err_set(w->err, -EBADMSG, "btree: block %u: past the device size "
				  "(%llu blocks)", n, (unsigned long long)h->nblocks);
	if (w->seen[n / 8] & (1u << (n % 8)))
		return sv_err_set(w->err, -EBADMSG, "btree: block %u: reached twice (a cycle, "
				  "or two parents)", n);
	w->seen[n / 8] |= (uint8_t)(1u << (n % 8));
	uint64_t off = SV_BT5_HEADER + (uint64_t)n * h->block_size;
	const uint8_t *buf = own;
	int rc = w->view ? w->view(w->rd_arg, off, h->block_size, &buf, w->err)
			 : w->rd(w->rd_arg, off, own, h->block_size, w->err);
	if (rc)
		return rc;
	*out = buf;
	if (memcmp(buf, kind, 2))
		return sv_err_set(w->err, -EBADMSG, "btree: block %u: a %s block was expected, "
				  "not %02x %02x", n, !strcmp(kind, "II") ? "index" : "leaf",
				  buf[0], buf[1]);
	return 0;
}

/* A leaf's data, read across its chain of blocks. */
struct stream {
	struct walk *w;
	const uint8_t *buf;  /* the block: own, or the reader's */
	uint8_t *own;
	uint32_t block, pos; /* pos: the next byte within the block */
};

static int stream_next(struct stream *s)
{
	uint32_t next = block_u32(s->buf, s->w->h->block_size, s->w->h->block_size - 4);
	if (next == SV_BT5_NONE)
		return sv_err_set(s->w->err, -EBADMSG, "btree: block %u: the leaf's data ends "
				  "early", s->block);
	int rc = read_block(s->w, next, "LL", s->own, &s->buf);
	if (!rc && s->w->shape)
		rc = s->w->shape->chain(s->w->shape_arg, next);
	if (!rc) {
		s->block = next;
		s->pos = 2;
	}
	return rc;
}

/* Copies n bytes (out may be NULL: skipped). */
static int stream_read(struct stream *s, uint8_t *out, uint64_t n)
{
	uint32_t end = s->w->h->block_size - 4;
	while (n) {
		if (s->pos == end) {
			int rc = stream_next(s);
			if (rc)
				return rc;
		}
		uint64_t k = end - s->pos < n ? end - s->pos : n;
		if (out) {
			memcpy(out, s->buf + s->pos, (size_t)k);
			out += k;
		}
		s->pos += (uint32_t)k;
		n -= k;
	}
	return 0;
}

/* A VLQ that may run across blocks: its bytes gathered, then read. */
static int stream_vlq(struct stream *s, uint64_t *v)
{
	uint8_t b[10];
	size_t n = 0;
	do {
		int rc = stream_read(s, &b[n], 1);
		if (rc)
			return rc;
	} while (b[n++] & 0x80 && n < sizeof b);
	struct sv_rd r;
	sv_rd_init(&r, b, n);
	*v = sv_rd_vlq(&r);
	if (!sv_rd_ok(&r))
		return sv_err_set(s->w->err, -EBADMSG, "btree: block %u: a length of more than "
				  "64 bits", s->block);
	return 0;
}

static int walk_leaf(struct walk *w, uint32_t n, uint8_t *own, uint8_t *key)
{
	const struct sv_bt5 *h = w->h;
	struct stream s = {w, NULL, own, n, 2};
	int rc = read_block(w, n, "LL", own, &s.buf);
	if (!rc && w->shape)
		rc = w->shape->leaf(w->shape_arg, n);
	uint8_t cnt[4];
	if (!rc)
		rc = stream_read(&s, cnt, 4);
	uint32_t count = rc ? 0 : (uint32_t)sv_get_be(cnt, 4);
	for (uint32_t i = 0; !rc && i < count; i++) {
		struct sv_bt5_loc loc;
		rc = stream_read(&s, key, h->key_size);
		if (!rc)
			rc = stream_vlq(&s, &loc.len);
		if (rc)
			break;
		if (w->have_last && memcmp(w->last, key, h->key_size) >= 0)
			return sv_err_set(w->err, -EBADMSG, "btree: block %u: keys out of order",
					  s.block);
		memcpy(w->last, key, h->key_size);
		w->have_last = true;
		/* The value starts where the stream is now (the next block's
		 * first byte when this one is used up). */
		if (s.pos == h->block_size - 4 && loc.len && (rc = stream_next(&s)))
			break;
		loc.block = s.block;
		loc.off = s.pos;
		rc = w->fn(w->arg, key, &loc);
		if (!rc)
			rc = stream_read(&s, NULL, loc.len);
	}
	return rc;
}

static int walk_node(struct walk *w, uint32_t n, bool leaf, int depth, int level)
{
	const struct sv_bt5 *h = w->h;
	uint8_t *own = w->view ? NULL : malloc(h->block_size), *key = malloc(h->key_size);
	const uint8_t *buf = NULL;
	int rc = (own || w->view) && key ? 0 : sv_err_set(w->err, -ENOMEM, "out of memory");
	if (!rc && leaf) {
		rc = walk_leaf(w, n, own, key);
		goto out;
	}
	if (!rc && depth > MAX_LEVELS)
		rc = sv_err_set(w->err, -EBADMSG, "btree: block %u: an index deeper than %d "
				"levels", n, MAX_LEVELS);
	if (!rc)
		rc = read_block(w, n, "II", own, &buf);
	if (rc)
		goto out;
	struct sv_rd r;
	sv_rd_init_at(&r, buf, h->block_size, 2);
	uint8_t lv = sv_rd_u8(&r);
	uint32_t count = sv_rd_u32be(&r);
	if (level >= 0 && lv != level) {
		rc = sv_err_set(w->err, -EBADMSG, "btree: block %u: an index of level %u under "
				"one of level %d", n, lv, level + 1);
		goto out;
	}
	if ((uint64_t)count * (h->key_size + 4) > h->block_size - 11) {
		rc = sv_err_set(w->err, -EBADMSG, "btree: block %u: %u keys do not fit the block",
				n, count);
		goto out;
	}
	/* The children, read from a copy: the walk below reuses nothing of
	 * this block (which a reader's view does not keep), but it may be
	 * deep. */
	uint32_t *kids = malloc(((size_t)count + 1) * sizeof *kids);
	if (!kids) {
		rc = sv_err_set(w->err, -ENOMEM, "out of memory");
		goto out;
	}
	kids[0] = sv_rd_u32be(&r);
	for (uint32_t i = 0; i < count; i++) {
		sv_rd_bytes(&r, h->key_size);
		kids[i + 1] = sv_rd_u32be(&r);
	}
	if (w->shape)
		rc = w->shape->index(w->shape_arg, n, lv, count, buf + 11);
	for (uint32_t i = 0; !rc && i <= count; i++)
		rc = walk_node(w, kids[i], lv == 0, depth + 1, lv == 0 ? -1 : lv - 1);
	free(kids);
out:
	free(own);
	free(key);
	return rc;
}

int sv_bt5_walk(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		sv_bt5_record_fn fn, void *arg, struct sv_err *err)
{
	return sv_bt5_walk_shape(h, rd, rd_arg, fn, arg, NULL, NULL, err);
}

static int walk_all(const struct sv_bt5 *h, sv_bt5_pread_fn rd, sv_bt5_view_fn view,
		    void *rd_arg, sv_bt5_record_fn fn, void *arg,
		    const struct sv_bt5_shape *shape, void *shape_arg, struct sv_err *err)
{
	struct walk w = {h, rd, view, rd_arg, fn, arg, err, NULL, NULL, false, shape, shape_arg};
	w.seen = calloc((size_t)(h->nblocks / 8 + 1), 1);
	w.last = malloc(h->key_size);
	int rc = w.seen && w.last ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	const struct sv_bt5_root *a = sv_bt5_active(h);
	if (!rc)
		rc = walk_node(&w, a->root, a->root_is_leaf, 0, -1);
	free(w.seen);
	free(w.last);
	return rc;
}

int sv_bt5_walk_shape(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		      sv_bt5_record_fn fn, void *arg, const struct sv_bt5_shape *shape,
		      void *shape_arg, struct sv_err *err)
{
	return walk_all(h, rd, NULL, rd_arg, fn, arg, shape, shape_arg, err);
}

int sv_bt5_walk_view(const struct sv_bt5 *h, sv_bt5_view_fn view, void *rd_arg,
		     sv_bt5_record_fn fn, void *arg, const struct sv_bt5_shape *shape,
		     void *shape_arg, struct sv_err *err)
{
	return walk_all(h, NULL, view, rd_arg, fn, arg, shape, shape_arg, err);
}

int sv_bt5_value(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		 const struct sv_bt5_loc *loc, uint8_t *out, struct sv_err *err)
{
	uint8_t *buf = malloc(h->block_size);
	if (!buf)
		return sv_err_set(err, -ENOMEM, "out of memory");
	uint32_t block = loc->block, pos = loc->off, end = h->block_size - 4;
	uint64_t left = loc->len, hops = 0;
	int rc = 0;
	while (!rc && left) {
		if (block >= h->nblocks || pos < 2 || pos > end || hops++ > h->nblocks) {
			rc = sv_err_set(err, -EBADMSG, "btree: block %u: a value's chain leaves "
					"the database", block);
			break;
		}
		rc = rd(rd_arg, SV_BT5_HEADER + (uint64_t)block * h->block_size, buf,
			h->block_size, err);
		if (rc)
			break;
		uint64_t k = end - pos < left ? end - pos : left;
		memcpy(out, buf + pos, (size_t)k);
		out += k;
		left -= k;
		block = block_u32(buf, h->block_size, end);
		pos = 2;
	}
	free(buf);
	return rc;
}

int sv_bt5_free_chain(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		      uint32_t **ff, uint32_t *nff, uint32_t **ent, uint32_t *nent,
		      struct sv_err *err)
{
	*ff = *ent = NULL;
	*nff = *nent = 0;
	uint32_t next = sv_bt5_active(h)->free_head;
	uint8_t *buf = malloc(h->block_size);
	uint8_t *seen = calloc((size_t)(h->nblocks / 8 + 1), 1);
	size_t capf = 0, cape = 0;
	int rc = buf && seen ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	while (!rc && next != SV_BT5_NONE) {
		if (next >= h->nblocks) {
			rc = sv_err_set(err, -EBADMSG, "btree: block %u: a free index past the device "
					"size (%llu blocks)", next, (unsigned long long)h->nblocks);
			break;
		}
		if (seen[next / 8] & (1u << (next % 8))) {
			rc = sv_err_set(err, -EBADMSG, "btree: block %u: the free-index chain "
					"comes back to it", next);
			break;
		}
		seen[next / 8] |= (uint8_t)(1u << (next % 8));
		rc = rd(rd_arg, SV_BT5_HEADER + (uint64_t)next * h->block_size, buf,
			h->block_size, err);
		if (rc)
			break;
		struct sv_rd r;
		sv_rd_init(&r, buf, h->block_size);
		const uint8_t *magic = sv_rd_bytes(&r, 2);
		uint32_t after = sv_rd_u32be(&r), count = sv_rd_u32be(&r);
		if (memcmp(magic, "FF", 2) || count > (h->block_size - 10) / 4) {
			rc = sv_err_set(err, -EBADMSG, "btree: block %u: not a free index", next);
			break;
		}
		if (*nff == capf || *nent + count > cape) {
			capf = capf * 2 + 8;
			cape = cape * 2 + count + 64;
			uint32_t *a = realloc(*ff, capf * sizeof *a), *b;
			if (a)
				*ff = a;
			b = realloc(*ent, cape * sizeof *b);
			if (b)
				*ent = b;
			if (!a || !b) {
				rc = sv_err_set(err, -ENOMEM, "out of memory");
				break;
			}
		}
		(*ff)[(*nff)++] = next;
		for (uint32_t i = 0; i < count; i++)
			(*ent)[(*nent)++] = sv_rd_u32be(&r);
		next = after;
	}
	free(buf);
	free(seen);
	if (rc) {
		free(*ff);
		free(*ent);
		*ff = *ent = NULL;
		*nff = *nent = 0;
	}
	return rc;
}
