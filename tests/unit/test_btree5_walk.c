/*
 * test_btree5_walk.c - BTreeDB5 read (core/fmt/starbound/btree5_walk.c): databases built here
 * block by block (a root leaf; a three-level index over leaves whose data
 * straddles chains of blocks), walked in key order with every value read
 * back byte for byte; every malformed variant with its exact message; and
 * the shared sample world, when present, walked to the last record.
 */
#include "fmt/starbound/btree5_walk.h"
#include "t.h"

#include <errno.h>
#include <stdlib.h>

#define BS 128  /* small blocks: long chains with few records */
#define KS 5

struct bld {
	struct sv_buf f;
	uint32_t n;
};

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint8_t *block(struct bld *b, uint32_t n)
{
	return b->f.p + SV_BT5_HEADER + (size_t)n * BS;
}

static uint32_t new_block(struct bld *b)
{
	sv_buf_reserve(&b->f, BS);
	memset(b->f.p + b->f.len, 0, BS);
	b->f.len += BS;
	return b->n++;
}

/* A leaf holding records [from, to) of keys/values, its data split over
 * as many blocks as it needs. */
static uint32_t leaf(struct bld *b, uint8_t (*keys)[KS], struct sv_buf *vals, int from, int to)
{
	struct sv_buf s;
	sv_buf_init(&s);
	uint8_t c[4];
	put32(c, (uint32_t)(to - from));
	sv_buf_add(&s, c, 4);
	for (int i = from; i < to; i++) {
		sv_buf_add(&s, keys[i], KS);
		uint8_t v[10];
		int k = 0;
		uint64_t len = vals[i].len;
		uint8_t tmp[10];
		do {
			tmp[k++] = (uint8_t)(len & 0x7f);
			len >>= 7;
		} while (len);
		for (int j = 0; j < k; j++)
			v[j] = (uint8_t)(tmp[k - 1 - j] | (j < k - 1 ? 0x80 : 0));
		sv_buf_add(&s, v, (size_t)k);
		sv_buf_add(&s, vals[i].p, vals[i].len);
	}
	uint32_t first = SV_BT5_NONE, prev = SV_BT5_NONE;
	for (size_t at = 0; at < s.len || first == SV_BT5_NONE; at += BS - 6) {
		uint32_t n = new_block(b);
		uint8_t *p = block(b, n);
		memcpy(p, "LL", 2);
		size_t k = s.len - at < BS - 6 ? s.len - at : BS - 6;
		memcpy(p + 2, s.p + at, k);
		put32(p + BS - 4, SV_BT5_NONE);
		if (prev != SV_BT5_NONE)
			put32(block(b, prev) + BS - 4, n);
		else
			first = n;
		prev = n;
	}
	sv_buf_fini(&s);
	return first;
}

static uint32_t index_block(struct bld *b, uint8_t level, const uint32_t *kids,
			    uint8_t (*keys)[KS], int nkids)
{
	uint32_t n = new_block(b);
	uint8_t *p = block(b, n);
	memcpy(p, "II", 2);
	p[2] = level;
	put32(p + 3, (uint32_t)(nkids - 1));
	put32(p + 7, kids[0]);
	for (int i = 1; i < nkids; i++) {
		memcpy(p + 11 + (size_t)(i - 1) * (KS + 4), keys[i], KS);
		put32(p + 11 + (size_t)(i - 1) * (KS + 4) + KS, kids[i]);
	}
	return n;
}

/* A database of n records, per_leaf to a leaf, fan-out children to an
 * index block.  *root receives the root block. */
static void build(struct bld *b, uint8_t (*keys)[KS], struct sv_buf *vals, int n,
		  int per_leaf, int fanout, bool *root_leaf)
{
	sv_buf_init(&b->f);
	b->n = 0;
	sv_buf_reserve(&b->f, SV_BT5_HEADER);
	memset(b->f.p, 0, SV_BT5_HEADER);
	b->f.len = SV_BT5_HEADER;
	int nl = (n + per_leaf - 1) / per_leaf;
	uint32_t *kids = malloc((size_t)nl * sizeof *kids);
	uint8_t (*first)[KS] = malloc((size_t)nl * KS);
	for (int i = 0; i < nl; i++) {
		int to = (i + 1) * per_leaf < n ? (i + 1) * per_leaf : n;
		kids[i] = leaf(b, keys, vals, i * per_leaf, to);
		memcpy(first[i], keys[i * per_leaf], KS);
	}
	uint8_t level = 0;
	*root_leaf = nl == 1;
	while (nl > 1) {
		int up = (nl + fanout - 1) / fanout;
		for (int i = 0; i < up; i++) {
			int cnt = (i + 1) * fanout < nl ? fanout : nl - i * fanout;
			uint32_t k = index_block(b, level, kids + i * fanout, first + i * fanout, cnt);
			kids[i] = k;
			memcpy(first[i], first[i * fanout], KS);
		}
		nl = up;
		level++;
	}
	uint8_t *h = b->f.p;
	memcpy(h, "BTreeDB5", 8);
	put32(h + 8, BS);
	memcpy(h + 12, "World4", 6);
	put32(h + 28, KS);
	h[32] = 1; /* the second slot is active; the first is stale */
	put32(h + 33, 7);
	put32(h + 37, 0);
	put32(h + 41, 999999);
	put32(h + 45, 3);
	put32(h + 50, SV_BT5_NONE);
	uint64_t dev = SV_BT5_HEADER + (uint64_t)b->n * BS;
	put32(h + 54, (uint32_t)(dev >> 32));
	put32(h + 58, (uint32_t)dev);
	put32(h + 62, kids[0]);
	h[66] = *root_leaf;
	free(kids);
	free(first);
}

static int mem_pread(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	struct sv_buf *f = arg;
	if (off > f->len || n > f->len - off)
		return sv_err_set(err, -EBADMSG, "range past the end");
	memcpy(buf, f->p + off, n);
	return 0;
}

/* A reader that lends its bytes (sv_bt5_walk_view) from one scratch
 * block, overwritten at each call: a walk that kept using a block after
 * asking for the next would see 0xAA, not the database. */
struct lender {
	struct sv_buf *f;
	uint8_t *scratch;
	size_t cap;
	unsigned calls;
};

static int mem_view(void *arg, uint64_t off, size_t n, const uint8_t **out, struct sv_err *err)
{
	struct lender *l = arg;
	l->calls++;
	if (n > l->cap) {
		free(l->scratch);
		l->scratch = malloc(n);
		l->cap = l->scratch ? n : 0;
		if (!l->scratch)
			return sv_err_set(err, -ENOMEM, "out of memory");
	}
	memset(l->scratch, 0xAA, l->cap);
	if (off > l->f->len || n > l->f->len - off)
		return sv_err_set(err, -EBADMSG, "range past the end");
	memcpy(l->scratch, l->f->p + off, n);
	*out = l->scratch;
	return 0;
}

struct seen {
	int n;
	uint8_t (*keys)[KS];
	struct sv_bt5_loc *locs;
};

static int note(void *arg, const uint8_t *key, const struct sv_bt5_loc *loc)
{
	struct seen *s = arg;
	memcpy(s->keys[s->n], key, KS);
	s->locs[s->n++] = *loc;
	return 0;
}

/* A database's records and what a walk of it saw. */
struct db {
	int n;
	uint8_t (*keys)[KS];
	struct sv_buf *vals;
	struct bld b;
	struct seen s;
};

static void db_init(struct db *d, int n)
{
	d->n = n;
	d->keys = malloc((size_t)n * KS);
	d->vals = calloc((size_t)n, sizeof *d->vals);
	/* Room for a damaged tree that gives records twice. */
	d->s = (struct seen){0, malloc((size_t)n * 4 * KS),
			     malloc((size_t)n * 4 * sizeof(struct sv_bt5_loc))};
}

static void db_fini(struct db *d)
{
	for (int i = 0; i < d->n; i++)
		sv_buf_fini(&d->vals[i]);
	free(d->s.keys);
	free(d->s.locs);
	free(d->keys);
	free(d->vals);
	sv_buf_fini(&d->b.f);
}

static void records(int n, int per_leaf, int fanout, size_t big_every)
{
	struct db d;
	db_init(&d, n);
	for (int i = 0; i < n; i++) {
		d.keys[i][0] = 1;
		put32(d.keys[i] + 1, (uint32_t)i * 7 + 3);
		size_t len = big_every && i % (int)big_every == 0 ? 1000 + (size_t)i : (size_t)(i % 40);
		sv_buf_reserve(&d.vals[i], len + 1);
		for (size_t j = 0; j < len; j++)
			d.vals[i].p[j] = (uint8_t)(i * 31 + j);
		d.vals[i].len = len;
	}
	bool root_leaf;
	build(&d.b, d.keys, d.vals, n, per_leaf, fanout, &root_leaf);
	struct sv_bt5 h;
	struct sv_err err;
	T_INT(0, sv_bt5_header(d.b.f.p, d.b.f.len, d.b.f.len, &h, &err));
	T_STR("World4", h.content_id);
	T_UINT(d.b.n, h.nblocks);
	T_OK(sv_bt5_active(&h)->root_is_leaf == root_leaf);
	T_INT(0, sv_bt5_walk(&h, mem_pread, &d.b.f, note, &d.s, &err));
	T_INT(n, d.s.n);
	for (int i = 0; i < d.s.n && i < n; i++) {
		T_MEM(d.keys[i], d.s.keys[i], KS);
		T_UINT(d.vals[i].len, d.s.locs[i].len);
		uint8_t *v = malloc(d.vals[i].len + 1);
		T_INT(0, sv_bt5_value(&h, mem_pread, &d.b.f, &d.s.locs[i], v, &err));
		T_MEM(d.vals[i].p, v, d.vals[i].len);
		free(v);
	}
	/* The same walk through a reader that lends its bytes: the same
	 * records, one call a block. */
	struct seen *again = calloc(1, sizeof *again);
	again->keys = calloc((size_t)n + 1, KS);
	again->locs = calloc((size_t)n + 1, sizeof *again->locs);
	struct lender l = {&d.b.f, NULL, 0, 0};
	T_INT(0, sv_bt5_walk_view(&h, mem_view, &l, note, again, NULL, NULL, &err));
	T_INT(d.s.n, again->n);
	for (int i = 0; i < again->n && i < d.s.n; i++) {
		T_MEM(d.s.keys[i], again->keys[i], KS);
		T_OK(!memcmp(&d.s.locs[i], &again->locs[i], sizeof again->locs[i]));
	}
	T_OK(l.calls >= 1 && l.calls <= d.b.n);
	free(l.scratch);
	free(again->keys);
	free(again->locs);
	free(again);
	db_fini(&d);
}

/* A database of 40 records in leaves of 4 under an index of fan-out 3,
 * damaged by `damage`, must fail with msg. */
static void refused(void (*damage)(struct bld *, struct sv_bt5 *), const char *msg)
{
	struct db d;
	db_init(&d, 40);
	for (int i = 0; i < d.n; i++) {
		d.keys[i][0] = 1;
		put32(d.keys[i] + 1, (uint32_t)i);
		sv_buf_add(&d.vals[i], "value", 5);
	}
	bool root_leaf;
	build(&d.b, d.keys, d.vals, d.n, 4, 3, &root_leaf);
	struct sv_bt5 h;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_bt5_header(d.b.f.p, d.b.f.len, d.b.f.len, &h, &err);
	damage(&d.b, &h);
	if (!rc)
		rc = sv_bt5_header(d.b.f.p, d.b.f.len, d.b.f.len, &h, &err);
	int hrc = rc;
	if (!rc)
		rc = sv_bt5_walk(&h, mem_pread, &d.b.f, note, &d.s, &err);
	T_INT(-EBADMSG, rc);
	T_STR(msg, err.msg);
	/* The same refusal through a reader that lends its bytes. */
	if (!hrc) {
		struct lender l = {&d.b.f, NULL, 0, 0};
		d.s.n = 0;
		sv_err_clear(&err);
		T_INT(-EBADMSG, sv_bt5_walk_view(&h, mem_view, &l, note, &d.s, NULL, NULL, &err));
		T_STR(msg, err.msg);
		free(l.scratch);
	}
	db_fini(&d);
}

static void bad_magic(struct bld *b, struct sv_bt5 *h) { b->f.p[3] = 'X'; }
static void key_size_0(struct bld *b, struct sv_bt5 *h) { put32(b->f.p + 28, 0); }
static void device_past_end(struct bld *b, struct sv_bt5 *h) { put32(b->f.p + 58, (uint32_t)b->f.len + BS); }
static void root_past(struct bld *b, struct sv_bt5 *h) { put32(b->f.p + 62, b->n + 5); }
/* The first index block's second child is its first. */
static void two_parents(struct bld *b, struct sv_bt5 *h) { put32(block(b, 10) + 11 + KS, 0); }
static void leaf_wrong_kind(struct bld *b, struct sv_bt5 *h) { memcpy(block(b, 1), "FF", 2); }
static void keys_swapped(struct bld *b, struct sv_bt5 *h)
{
	/* The first leaf's first key made larger than the second. */
	block(b, 0)[2 + 4 + 1] = 0xff;
}
static void child_past(struct bld *b, struct sv_bt5 *h)
{
	put32(block(b, b->n - 1) + 7, b->n + 100);
}
static void index_loop(struct bld *b, struct sv_bt5 *h)
{
	put32(block(b, b->n - 1) + 7, b->n - 1);
}

static void malformed(void)
{
	/* 40 records in 10 one-block leaves (blocks 0-9), an index of
	 * fan-out 3 over them (10-13, 14-15, the root 16): 17 blocks. */
	refused(bad_magic, "btree: byte 0: not a BTreeDB5 database");
	refused(key_size_0, "btree: byte 28: key size 0 does not fit a block of 128 bytes");
	refused(device_past_end, "btree: byte 54: device size 2816 is not within the file (2688 bytes)");
	refused(root_past, "btree: byte 62: root block 22 is past the device size (17 blocks)");
	refused(two_parents, "btree: block 0: reached twice (a cycle, or two parents)");
	refused(leaf_wrong_kind, "btree: block 1: a leaf block was expected, not 46 46");
	refused(keys_swapped, "btree: block 0: keys out of order");
	refused(child_past, "btree: block 117: past the device size (17 blocks)");
	refused(index_loop, "btree: block 16: reached twice (a cycle, or two parents)");
}

/* The shared sample: every record walked, every value a zlib stream. */
static int note_sample(void *arg, const uint8_t *key, const struct sv_bt5_loc *loc)
{
	struct seen *s = arg;
	if (s->n < 4096)
		s->locs[s->n] = *loc;
	s->n++;
	return 0;
}

static void sample(void)
{
	const char *dir = getenv("SAMPLES");
	char path[512];
	snprintf(path, sizeof path, "%s/starbound/go-starbound_test.world", dir ? dir : "");
	FILE *f = dir ? fopen(path, "rb") : NULL;
	if (!f) {
		printf("skip: the sample world (%s) is not there\n", path);
		return;
	}
	struct sv_buf w;
	sv_buf_init(&w);
	uint8_t chunk[65536];
	size_t k;
	while ((k = fread(chunk, 1, sizeof chunk, f)))
		sv_buf_add(&w, chunk, k);
	fclose(f);
	struct sv_bt5 h;
	struct sv_err err;
	T_INT(0, sv_bt5_header(w.p, w.len, w.len, &h, &err));
	T_STR("World4", h.content_id);
	T_UINT(5, h.key_size);
	T_UINT(2048, h.block_size);
	struct seen s = {0, NULL, malloc(4096 * sizeof(struct sv_bt5_loc))};
	T_INT(0, sv_bt5_walk(&h, mem_pread, &w, note_sample, &s, &err));
	T_OK(s.n > 0);
	int zlib = 0;
	for (int i = 0; i < s.n && i < 4096; i++) {
		uint8_t *v = malloc(s.locs[i].len + 1);
		if (!sv_bt5_value(&h, mem_pread, &w, &s.locs[i], v, &err) && s.locs[i].len >= 2 &&
		    v[0] == 0x78)
			zlib++;
		free(v);
	}
	T_INT(s.n, zlib);
	printf("sample: %d records, every value a zlib stream\n", s.n);
	free(s.locs);
	sv_buf_fini(&w);
}

int main(void)
{
	records(3, 8, 4, 0);          /* a root leaf */
	records(500, 12, 4, 17);      /* three levels, values across many blocks */
	records(64, 1, 2, 1);         /* one record a leaf, every value long */
	malformed();
	sample();
	return t_done();
}
