/*
 * bt5tree.c - a BTreeDB5 database's shape, and the game's copy-on-write
 * commit (see bt5tree.h).
 *
 * Invariants of the commit: a block is written only if it is past the
 * committed device size or listed free by the committed free-index chain
 * (and is neither reachable nor a free-index block itself); the header is
 * written last, the inactive root slot before byte 32, each after a sync.
 */
#include "btree5_cow.h"

#include "rd.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put32(uint8_t *p, uint32_t v)
{
	sv_put_be(p, v, 4);
}

/* Grows arr (of cap elements) to hold need; false if out of memory. */
#define GROW(arr, cap, need) (sv_grow((void **)&(arr), &(cap), (need), sizeof *(arr)) == 0)
/* The tree's own arrays grow with its records: past a megabyte they live
 * in a file (sv_tab_grow), not the heap. */
#define TGROW(arr, cap, need) (sv_tab_grow((void **)&(arr), &(cap), (need), sizeof *(arr)) == 0)

void sv_bt5_tree_free(struct sv_bt5_tree *t)
{
	if (!t)
		return;
	sv_tab_free(t->nodes);
	sv_tab_free(t->kids);
	sv_tab_free(t->ikeys);
	sv_tab_free(t->chain);
	sv_tab_free(t->keys);
	sv_tab_free(t->locs);
	free(t->ff);
	free(t->freeb);
	free(t->free_bad);
	free(t);
}

/* ---- building a tree ------------------------------------------------------ */

static int64_t add_node(struct sv_bt5_tree *t, uint32_t block, bool leaf, uint8_t level)
{
	size_t cap = t->capnodes;
	if (!TGROW(t->nodes, cap, (size_t)t->nnodes + 1))
		return -1;
	t->capnodes = (uint32_t)cap;
	struct sv_bt5_node *n = &t->nodes[t->nnodes];
	memset(n, 0, sizeof *n);
	n->block = block;
	n->leaf = leaf;
	n->level = level;
	if (leaf)
		n->first = t->nrecs;
	return t->nnodes++;
}

static bool add_rec(struct sv_bt5_tree *t, const uint8_t *key, const struct sv_bt5_loc *loc)
{
	size_t cap = t->caprecs, capk = (size_t)t->caprecs * t->h.key_size;
	if ((size_t)t->nrecs + 1 > cap) {
		size_t c = cap;
		if (!TGROW(t->locs, c, (size_t)t->nrecs + 1))
			return false;
		size_t ck = capk;
		if (sv_tab_grow((void **)&t->keys, &ck, c * t->h.key_size, 1))
			return false;
		t->caprecs = (uint32_t)c;
	}
	memcpy(t->keys + (size_t)t->nrecs * t->h.key_size, key, t->h.key_size);
	t->locs[t->nrecs++] = *loc;
	return true;
}

static bool add_chain(struct sv_bt5_tree *t, uint32_t block)
{
	if (!TGROW(t->chain, t->capchain, t->nchain + 1))
		return false;
	t->chain[t->nchain++] = block;
	return true;
}

/* ---- loading ------------------------------------------------------------- */

struct loader {
	struct sv_bt5_tree *t;
	uint32_t *stk, *used; /* open index nodes and children met so far */
	size_t depth, cap;
	int64_t leaf;         /* the leaf being read */
};

/* Links a node just made to its parent (the walk is pre-order). */
static int attach(struct loader *L, uint32_t id)
{
	struct sv_bt5_tree *t = L->t;
	while (L->depth && L->used[L->depth - 1] == t->nodes[L->stk[L->depth - 1]].n)
		L->depth--;
	if (!L->depth) {
		t->root = id;
		return 0;
	}
	struct sv_bt5_node *p = &t->nodes[L->stk[L->depth - 1]];
	t->kids[p->first + L->used[L->depth - 1]++] = id;
	return 0;
}

static int on_index(void *arg, uint32_t block, uint8_t level, uint32_t n, const uint8_t *e)
{
	struct loader *L = arg;
	struct sv_bt5_tree *t = L->t;
	uint32_t ks = t->h.key_size;
	int64_t id = add_node(t, block, false, level);
	if (id < 0 || !TGROW(t->kids, t->capkids, t->nkids + n + 1) ||
	    sv_tab_grow((void **)&t->ikeys, &t->capikeys, (t->nikeys + n) * ks, 1))
		return -ENOMEM;
	attach(L, (uint32_t)id);
	struct sv_bt5_node *nd = &t->nodes[id];
	nd->n = n + 1;
	nd->first = (uint32_t)t->nkids;
	for (uint32_t i = 0; i < n; i++)
		memcpy(t->ikeys + (t->nikeys + i) * ks, e + (size_t)i * (ks + 4), ks);
	/* One key slot per child (the first unused) keeps them aligned. */
	t->nkids += n + 1;
	t->nikeys += n + 1;
	if (L->depth == L->cap) {
		size_t cap = L->cap * 2 + 8;
		uint32_t *a = realloc(L->stk, cap * sizeof *a);
		if (a)
			L->stk = a;
		uint32_t *b = realloc(L->used, cap * sizeof *b);
		if (b)
			L->used = b;
		if (!a || !b)
			return -ENOMEM;
		L->cap = cap;
	}
	L->stk[L->depth] = (uint32_t)id;
	L->used[L->depth++] = 0;
	return 0;
}

static int on_leaf(void *arg, uint32_t block)
{
	struct loader *L = arg;
	int64_t id = add_node(L->t, block, true, 0);
	if (id < 0 || !add_chain(L->t, block))
		return -ENOMEM;
	L->t->nodes[id].chain = (uint32_t)L->t->nchain - 1;
	L->t->nodes[id].nchain = 1;
	L->leaf = id;
	return attach(L, (uint32_t)id);
}

static int on_chain(void *arg, uint32_t block)
{
	struct loader *L = arg;
	if (!add_chain(L->t, block))
		return -ENOMEM;
	L->t->nodes[L->leaf].nchain++;
	return 0;
}

static int on_rec(void *arg, const uint8_t *key, const struct sv_bt5_loc *loc)
{
	struct loader *L = arg;
	if (!add_rec(L->t, key, loc))
		return -ENOMEM;
	L->t->nodes[L->leaf].n++;
	return 0;
}

static const struct sv_bt5_shape shape = {on_index, on_leaf, on_chain};

int sv_bt5_tree_load(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		     struct sv_bt5_tree **out, struct sv_err *err)
{
	return sv_bt5_tree_load_view(h, rd, NULL, rd_arg, out, err);
}

int sv_bt5_tree_load_view(const struct sv_bt5 *h, sv_bt5_pread_fn rd, sv_bt5_view_fn view,
			  void *rd_arg, struct sv_bt5_tree **out, struct sv_err *err)
{
	struct sv_bt5_tree *t = calloc(1, sizeof *t);
	if (!t)
		return sv_err_set(err, -ENOMEM, "out of memory");
	t->h = *h;
	struct loader L = {t, NULL, NULL, 0, 0, -1};
	int rc = view ? sv_bt5_walk_view(h, view, rd_arg, on_rec, &L, &shape, &L, err)
		      : sv_bt5_walk_shape(h, rd, rd_arg, on_rec, &L, &shape, &L, err);
	free(L.stk);
	free(L.used);
	if (rc == -ENOMEM || (rc > 0))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc) {
		struct sv_err fe;
		sv_err_clear(&fe);
		int frc = sv_bt5_free_chain(h, rd, rd_arg, &t->ff, &t->nff, &t->freeb, &t->nfree,
					    &fe);
		if (frc == -ENOMEM)
			rc = sv_err_set(err, frc, "out of memory");
		else if (frc && !(t->free_bad = strdup(fe.msg)))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
	}
	if (rc) {
		sv_bt5_tree_free(t);
		return rc;
	}
	t->levels = t->nodes[t->root].leaf ? 0 : t->nodes[t->root].level + 1u;
	*out = t;
	return 0;
}

int64_t sv_bt5_tree_find(const struct sv_bt5_tree *t, const uint8_t *key)
{
	uint32_t lo = 0, hi = t->nrecs, ks = t->h.key_size;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = memcmp(t->keys + (size_t)mid * ks, key, ks);
		if (!c)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* ---- the commit ------------------------------------------------------------ */

struct wr {
	const struct sv_bt5_tree *t;
	struct sv_bt5_tree *nw;
	int fd;
	uint32_t bs, ks, maxp;
	uint32_t *pool;        /* free blocks to take, ascending */
	size_t npool, ipool;
	uint64_t end;          /* the next block past the end */
	uint32_t *freed;       /* blocks this commit frees */
	size_t nfreed, capfreed;
	uint8_t *blk;          /* one block */
	struct sv_err *err;
};

/* What a rebuilt node gives its parent: (lowest key bound, node). */
struct ents {
	uint8_t *keys;
	uint32_t *ids;
	size_t n, cap, capk;
};

static bool ents_add(struct ents *e, uint32_t ks, const uint8_t *key, uint32_t id)
{
	if (!GROW(e->ids, e->cap, e->n + 1) || sv_grow((void **)&e->keys, &e->capk, (e->n + 1) * ks, 1))
		return false;
	if (key)
		memcpy(e->keys + e->n * ks, key, ks);
	else
		memset(e->keys + e->n * ks, 0, ks);
	e->ids[e->n++] = id;
	return true;
}

static void ents_fini(struct ents *e)
{
	free(e->keys);
	free(e->ids);
}

static int oom(struct wr *w)
{
	return sv_err_set(w->err, -ENOMEM, "out of memory");
}

static int64_t take(struct wr *w)
{
	if (w->ipool < w->npool)
		return w->pool[w->ipool++];
	if (w->end >= SV_BT5_NONE)
		return -1;
	return (int64_t)w->end++;
}

static int free_block(struct wr *w, uint32_t b)
{
	if (!GROW(w->freed, w->capfreed, w->nfreed + 1))
		return oom(w);
	w->freed[w->nfreed++] = b;
	return 0;
}

/* What a failed write tells the caller: a full disk (or quota) as such,
 * anything else as an I/O error. */
static int io_code(int e)
{
	return e == ENOSPC || e == EDQUOT ? -e : -EIO;
}

static int put_block(struct wr *w, uint32_t b, const uint8_t *p)
{
	off_t off = (off_t)(SV_BT5_HEADER + (uint64_t)b * w->bs);
	for (size_t done = 0; done < w->bs;) {
		ssize_t k = pwrite(w->fd, p + done, w->bs - done, off + (off_t)done);
		if (k < 0)
			return sv_err_set(w->err, io_code(errno), "btree: writing block %u: %s", b,
					  strerror(errno));
		done += (size_t)k;
	}
	return 0;
}

static int rd_fd(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	int fd = *(int *)arg;
	for (size_t done = 0; done < n;) {
		ssize_t k = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(off + done));
		if (k <= 0)
			return sv_err_set(err, k < 0 ? -EIO : -EBADMSG, "btree: reading byte %llu: %s",
					  (unsigned long long)(off + done),
					  k < 0 ? strerror(errno) : "past the end of the file");
		done += (size_t)k;
	}
	return 0;
}

/* Copies node o of the old tree, and what is below it, into the new one. */
static int64_t copy_node(struct wr *w, uint32_t o)
{
	const struct sv_bt5_tree *t = w->t;
	struct sv_bt5_tree *nw = w->nw;
	const struct sv_bt5_node *on = &t->nodes[o];
	if (on->leaf) {
		int64_t id = add_node(nw, on->block, true, 0);
		if (id < 0)
			return -1;
		nw->nodes[id].chain = (uint32_t)nw->nchain;
		nw->nodes[id].nchain = on->nchain;
		nw->nodes[id].n = on->n;
		for (uint32_t i = 0; i < on->nchain; i++)
			if (!add_chain(nw, t->chain[on->chain + i]))
				return -1;
		for (uint32_t i = 0; i < on->n; i++)
			if (!add_rec(nw, t->keys + (size_t)(on->first + i) * w->ks,
				     &t->locs[on->first + i]))
				return -1;
		return id;
	}
	uint32_t *ids = malloc(on->n * sizeof *ids);
	if (!ids)
		return -1;
	for (uint32_t i = 0; i < on->n; i++) {
		int64_t k = copy_node(w, t->kids[on->first + i]);
		if (k < 0) {
			free(ids);
			return -1;
		}
		ids[i] = (uint32_t)k;
	}
	int64_t id = add_node(nw, on->block, false, on->level);
	if (id < 0 || !TGROW(nw->kids, nw->capkids, nw->nkids + on->n) ||
	    sv_tab_grow((void **)&nw->ikeys, &nw->capikeys, (nw->nikeys + on->n) * w->ks, 1)) {
		free(ids);
		return -1;
	}
	nw->nodes[id].n = on->n;
	nw->nodes[id].first = (uint32_t)nw->nkids;
	memcpy(nw->kids + nw->nkids, ids, on->n * sizeof *ids);
	memcpy(nw->ikeys + nw->nikeys * w->ks, t->ikeys + (size_t)on->first * w->ks,
	       (size_t)on->n * w->ks);
	nw->nkids += on->n;
	nw->nikeys += on->n;
	free(ids);
	return id;
}

/* A record of a leaf being written: an old one (loc) or a new value. */
struct rec {
	const uint8_t *key;
	const struct sv_bt5_loc *loc;
	const uint8_t *val;
	uint64_t len;
};

/* Writes records r[0..n) as one leaf of new blocks; its entry goes to out. */
static int write_leaf(struct wr *w, const struct rec *r, size_t n, struct ents *out)
{
	struct sv_bt5_tree *nw = w->nw;
	uint64_t len = 4;
	for (size_t i = 0; i < n; i++)
		len += w->ks + sv_vlq_size(r[i].len) + r[i].len;
	uint8_t *s = malloc(len);
	uint64_t *at = malloc((n ? n : 1) * sizeof *at);
	int rc = 0;
	if (!s || !at) {
		rc = oom(w);
		goto out;
	}
	put32(s, (uint32_t)n);
	uint64_t p = 4;
	for (size_t i = 0; i < n && !rc; i++) {
		memcpy(s + p, r[i].key, w->ks);
		p += w->ks;
		p += sv_store_vlq(s + p, r[i].len);
		at[i] = p;
		if (r[i].val)
			memcpy(s + p, r[i].val, r[i].len);
		else if (r[i].len)
			rc = sv_bt5_value(&w->t->h, rd_fd, &w->fd, r[i].loc, s + p, w->err);
		p += r[i].len;
	}
	if (rc)
		goto out;
	uint32_t room = w->bs - 6;
	uint64_t nblk = len ? (len + room - 1) / room : 1;
	int64_t id = add_node(nw, 0, true, 0);
	if (id < 0) {
		rc = oom(w);
		goto out;
	}
	nw->nodes[id].chain = (uint32_t)nw->nchain;
	nw->nodes[id].nchain = (uint32_t)nblk;
	uint64_t base = nw->nchain;
	for (uint64_t b = 0; b < nblk; b++) {
		int64_t blk = take(w);
		if (blk < 0 || !add_chain(nw, (uint32_t)blk)) {
			rc = blk < 0 ? sv_err_set(w->err, -EFBIG, "btree: no block numbers left")
				     : oom(w);
			goto out;
		}
	}
	nw->nodes[id].block = nw->chain[base];
	for (uint64_t b = 0; b < nblk; b++) {
		memset(w->blk, 0, w->bs);
		memcpy(w->blk, "LL", 2);
		uint64_t from = b * room, k = len - from < room ? len - from : room;
		memcpy(w->blk + 2, s + from, (size_t)k);
		put32(w->blk + w->bs - 4, b + 1 < nblk ? nw->chain[base + b + 1] : SV_BT5_NONE);
		rc = put_block(w, nw->chain[base + b], w->blk);
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct sv_bt5_loc loc = {nw->chain[base + at[i] / room], 2 + (uint32_t)(at[i] % room),
					 r[i].len};
		if (!add_rec(nw, r[i].key, &loc)) {
			rc = oom(w);
			goto out;
		}
		nw->nodes[id].n++;
	}
	if (!ents_add(out, w->ks, n ? r[0].key : NULL, (uint32_t)id))
		rc = oom(w);
out:
	free(s);
	free(at);
	return rc;
}

/* Splits a leaf's records where the game splits them, then writes each
 * part. */
static int split_leaf(struct wr *w, const struct rec *r, size_t n, struct ents *out)
{
	if (!n)
		return 0;
	uint64_t size = 6;
	size_t boundary = 0;
	bool found = false;
	for (size_t i = 0; i < n; i++) {
		size += w->ks + sv_vlq_size(r[i].len) + r[i].len;
		if (size > w->bs - 4 && !found) {
			boundary = i;
			found = true;
		}
	}
	if (n < 2 || size < 2ull * w->bs - 12)
		return write_leaf(w, r, n, out);
	if (!boundary)
		boundary = 1;
	int rc = split_leaf(w, r, boundary, out);
	return rc ? rc : split_leaf(w, r + boundary, n - boundary, out);
}

/* Writes an index node over entries e[a..b) (keys of all but the first). */
static int write_index(struct wr *w, const struct ents *e, size_t a, size_t b, uint8_t level,
		       struct ents *out)
{
	if (b - a > w->maxp) {
		size_t mid = a + (b - a + 1) / 2;
		int rc = write_index(w, e, a, mid, level, out);
		return rc ? rc : write_index(w, e, mid, b, level, out);
	}
	struct sv_bt5_tree *nw = w->nw;
	int64_t blk = take(w);
	if (blk < 0)
		return sv_err_set(w->err, -EFBIG, "btree: no block numbers left");
	int64_t id = add_node(nw, (uint32_t)blk, false, level);
	uint32_t cnt = (uint32_t)(b - a);
	if (id < 0 || !TGROW(nw->kids, nw->capkids, nw->nkids + cnt) ||
	    sv_tab_grow((void **)&nw->ikeys, &nw->capikeys, (nw->nikeys + cnt) * w->ks, 1))
		return oom(w);
	nw->nodes[id].n = cnt;
	nw->nodes[id].first = (uint32_t)nw->nkids;
	memset(w->blk, 0, w->bs);
	memcpy(w->blk, "II", 2);
	w->blk[2] = level;
	put32(w->blk + 3, cnt - 1);
	for (size_t i = a; i < b; i++) {
		nw->kids[nw->nkids++] = e->ids[i];
		memcpy(nw->ikeys + nw->nikeys++ * w->ks, e->keys + (i + 1 < b ? i + 1 : i) * w->ks,
		       w->ks);
		uint32_t child = nw->nodes[e->ids[i]].block;
		if (i == a) {
			put32(w->blk + 7, child);
		} else {
			uint8_t *q = w->blk + 11 + (i - a - 1) * (w->ks + 4);
			memcpy(q, e->keys + i * w->ks, w->ks);
			put32(q + w->ks, child);
		}
	}
	/* ikeys holds key i (before child i + 1) at slot i, as loaded. */
	int rc = put_block(w, (uint32_t)blk, w->blk);
	if (!rc && !ents_add(out, w->ks, e->keys + a * w->ks, (uint32_t)id))
		rc = oom(w);
	return rc;
}

static int rebuild(struct wr *w, uint32_t o, const struct sv_bt5_change *ch, size_t lo,
		   size_t hi, struct ents *out);

static int rebuild_leaf(struct wr *w, const struct sv_bt5_node *on,
			const struct sv_bt5_change *ch, size_t lo, size_t hi, struct ents *out)
{
	const struct sv_bt5_tree *t = w->t;
	struct rec *r = malloc(((size_t)on->n + (hi - lo) + 1) * sizeof *r);
	if (!r)
		return oom(w);
	size_t n = 0, i = 0, j = lo;
	while (i < on->n || j < hi) {
		const uint8_t *ok = i < on->n ? t->keys + (size_t)(on->first + i) * w->ks : NULL;
		int c = !ok ? 1 : j == hi ? -1 : memcmp(ok, ch[j].key, w->ks);
		if (c < 0) {
			r[n++] = (struct rec){ok, &t->locs[on->first + i], NULL, t->locs[on->first + i].len};
			i++;
			continue;
		}
		if (ch[j].val)
			r[n++] = (struct rec){ch[j].key, NULL, ch[j].val, ch[j].len};
		if (c == 0)
			i++;
		j++;
	}
	int rc = 0;
	for (uint32_t k = 0; k < on->nchain && !rc; k++)
		rc = free_block(w, t->chain[on->chain + k]);
	if (!rc)
		rc = split_leaf(w, r, n, out);
	free(r);
	return rc;
}

static int rebuild(struct wr *w, uint32_t o, const struct sv_bt5_change *ch, size_t lo,
		   size_t hi, struct ents *out)
{
	const struct sv_bt5_tree *t = w->t;
	const struct sv_bt5_node *on = &t->nodes[o];
	if (lo == hi) {
		int64_t id = copy_node(w, o);
		if (id < 0 || !ents_add(out, w->ks, NULL, (uint32_t)id))
			return oom(w);
		return 0;
	}
	if (on->leaf)
		return rebuild_leaf(w, on, ch, lo, hi, out);
	struct ents kids = {0};
	int rc = free_block(w, on->block);
	size_t j = lo;
	for (uint32_t i = 0; i < on->n && !rc; i++) {
		/* Child i takes the keys below key i (the last takes the rest). */
		size_t k = j;
		if (i + 1 < on->n) {
			const uint8_t *bound = t->ikeys + (size_t)(on->first + i) * w->ks;
			while (k < hi && memcmp(ch[k].key, bound, w->ks) < 0)
				k++;
		} else {
			k = hi;
		}
		size_t before = kids.n;
		rc = rebuild(w, t->kids[on->first + i], ch, j, k, &kids);
		j = k;
		/* The first entry a child gives keeps the key its parent had. */
		if (!rc && kids.n > before && i > 0)
			memcpy(kids.keys + before * w->ks,
			       t->ikeys + (size_t)(on->first + i - 1) * w->ks, w->ks);
	}
	if (!rc && kids.n)
		rc = write_index(w, &kids, 0, kids.n, on->level, out);
	ents_fini(&kids);
	return rc;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int sync_fd(struct wr *w, const char *what)
{
	if (fdatasync(w->fd))
		return sv_err_set(w->err, io_code(errno), "btree: sync %s: %s", what,
				  strerror(errno));
	return 0;
}

/* The blocks free in the committed state that may be written: listed free,
 * inside the device, not reachable, not a free-index block, once each. */
static int make_pool(struct wr *w)
{
	const struct sv_bt5_tree *t = w->t;
	uint64_t nb = t->h.nblocks;
	uint8_t *used = calloc((size_t)(nb / 8 + 1), 1);
	w->pool = malloc(((size_t)t->nfree + 1) * sizeof *w->pool);
	if (!used || !w->pool) {
		free(used);
		return oom(w);
	}
#define MARK(b) (used[(b) / 8] |= (uint8_t)(1u << ((b) % 8)))
#define MARKED(b) (used[(b) / 8] & (1u << ((b) % 8)))
	for (uint32_t i = 0; i < t->nnodes; i++)
		if (!t->nodes[i].leaf)
			MARK(t->nodes[i].block);
	for (size_t i = 0; i < t->nchain; i++)
		MARK(t->chain[i]);
	for (uint32_t i = 0; i < t->nff; i++)
		MARK(t->ff[i]);
	for (uint32_t i = 0; i < t->nfree; i++) {
		uint32_t b = t->freeb[i];
		if (b < nb && !MARKED(b)) {
			MARK(b);
			w->pool[w->npool++] = b;
		}
	}
#undef MARK
#undef MARKED
	free(used);
	qsort(w->pool, w->npool, sizeof *w->pool, cmp_u32);
	return 0;
}

/* Writes the new free-index chain: the blocks freed, the old chain's blocks
 * and the free blocks not taken. */
static int write_free(struct wr *w)
{
	struct sv_bt5_tree *nw = w->nw;
	uint32_t cap = w->bs / 4 - 10;
	for (uint32_t i = 0; i < w->t->nff; i++)
		if (free_block(w, w->t->ff[i]))
			return -ENOMEM;
	/* Its own blocks come from the pool first: each taken from it is one
	 * entry fewer to list. */
	uint32_t *ffb = NULL;
	size_t nff = 0, capff = 0;
	for (;;) {
		size_t entries = w->nfreed + (w->npool - w->ipool);
		size_t need = (entries + cap - 1) / cap;
		if (nff >= need)
			break;
		int64_t b = take(w);
		if (b < 0 || !GROW(ffb, capff, nff + 1)) {
			free(ffb);
			return b < 0 ? sv_err_set(w->err, -EFBIG, "btree: no block numbers left")
				     : oom(w);
		}
		ffb[nff++] = (uint32_t)b;
	}
	size_t total = w->nfreed + (w->npool - w->ipool);
	uint32_t *all = malloc((total + 1) * sizeof *all);
	if (!all) {
		free(ffb);
		return oom(w);
	}
	memcpy(all, w->pool + w->ipool, (w->npool - w->ipool) * sizeof *all);
	memcpy(all + (w->npool - w->ipool), w->freed, w->nfreed * sizeof *all);
	qsort(all, total, sizeof *all, cmp_u32);
	int rc = 0;
	for (size_t f = 0, at = 0; f < nff && !rc; f++) {
		size_t k = total - at < cap ? total - at : cap;
		memset(w->blk, 0, w->bs);
		memcpy(w->blk, "FF", 2);
		put32(w->blk + 2, f + 1 < nff ? ffb[f + 1] : SV_BT5_NONE);
		put32(w->blk + 6, (uint32_t)k);
		for (size_t i = 0; i < k; i++)
			put32(w->blk + 10 + 4 * i, all[at + i]);
		at += k;
		rc = put_block(w, ffb[f], w->blk);
	}
	nw->ff = ffb;
	nw->nff = (uint32_t)nff;
	nw->freeb = all;
	nw->nfree = (uint32_t)total;
	return rc;
}

static int put_at(struct wr *w, off_t off, const uint8_t *p, size_t n)
{
	ssize_t k = pwrite(w->fd, p, n, off);
	if (k != (ssize_t)n)
		return sv_err_set(w->err, k < 0 ? io_code(errno) : -EIO,
				  "btree: writing the header: %s", k < 0 ? strerror(errno) : "short");
	return 0;
}

static void root_info(uint8_t *p, const struct sv_bt5_root *r)
{
	put32(p, r->free_head);
	put32(p + 4, (uint32_t)((uint64_t)r->device_size >> 32));
	put32(p + 8, (uint32_t)r->device_size);
	put32(p + 12, r->root);
	p[16] = r->root_is_leaf;
}

static int cmp_change(const struct sv_bt5_change *a, const struct sv_bt5_change *b, uint32_t ks)
{
	return memcmp(a->key, b->key, ks);
}

int sv_bt5_tree_commit(const struct sv_bt5_tree *t, int fd, const struct sv_bt5_change *ch,
		       size_t n, sv_bt5_step_fn step, struct sv_bt5_tree **out,
		       struct sv_err *err)
{
	struct wr w = {.t = t, .fd = fd, .bs = t->h.block_size, .ks = t->h.key_size, .err = err};
	w.maxp = (w.bs - 11) / (w.ks + 4) + 1;
	w.end = t->h.nblocks;
	for (size_t i = 1; i < n; i++)
		if (cmp_change(&ch[i - 1], &ch[i], w.ks) >= 0)
			return sv_err_set(err, -EINVAL, "btree: changes out of order");
	if (t->free_bad)
		return sv_err_set(err, -EIO, "%s: the database cannot be written without "
				  "knowing its free blocks", t->free_bad);
	/* The file's size before: a commit that fails before its flip leaves
	 * the old tree, and the file as long as it was. */
	struct stat was;
	bool flipped = false, raced = false;
	uint8_t hdr0[SV_BT5_HEADER], hdr1[SV_BT5_HEADER];
	if (fstat(fd, &was))
		return sv_err_set(err, io_code(errno), "btree: %s", strerror(errno));
	if (pread(fd, hdr0, sizeof hdr0, 0) != (ssize_t)sizeof hdr0)
		return sv_err_set(err, -EIO, "btree: reading the header: %s", strerror(errno));
	w.nw = calloc(1, sizeof *w.nw);
	w.blk = malloc(w.bs);
	struct ents top = {0};
	int rc = w.nw && w.blk ? make_pool(&w) : oom(&w);
	if (rc)
		goto fail;
	w.nw->h = t->h;
	rc = rebuild(&w, t->root, ch, 0, n, &top);
	if (!rc && step)
		step("blocks");
	if (!rc && !top.n) {
		/* Everything went: an empty leaf is the root. */
		struct rec none = {0};
		rc = write_leaf(&w, &none, 0, &top);
	}
	/* A root that split gets new levels above it. */
	while (!rc && top.n > 1) {
		const struct sv_bt5_node *c = &w.nw->nodes[top.ids[0]];
		uint8_t level = c->leaf ? 0 : (uint8_t)(c->level + 1);
		struct ents up = {0};
		rc = write_index(&w, &top, 0, top.n, level, &up);
		ents_fini(&top);
		top = up;
	}
	if (rc)
		goto fail;
	w.nw->root = top.ids[0];
	rc = write_free(&w);
	if (rc)
		goto fail;
	struct sv_bt5_node *rn = &w.nw->nodes[w.nw->root];
	w.nw->levels = rn->leaf ? 0 : rn->level + 1u;
	int slot = t->h.use_alt ? 0 : 1;
	struct sv_bt5_root *nr = &w.nw->h.roots[slot];
	nr->free_head = w.nw->nff ? w.nw->ff[0] : SV_BT5_NONE;
	nr->device_size = (int64_t)(SV_BT5_HEADER + w.end * w.bs);
	nr->root = rn->block;
	nr->root_is_leaf = rn->leaf;
	w.nw->h.use_alt = (uint8_t)slot;
	w.nw->h.nblocks = w.end;
	if (ftruncate(fd, (off_t)nr->device_size)) {
		rc = sv_err_set(err, io_code(errno), "btree: setting the file's size: %s",
				strerror(errno));
		goto fail;
	}
	rc = sync_fd(&w, "the new blocks");
	if (rc)
		goto fail;
	if (step)
		step("synced");
	/* Just before the root is written: nobody else wrote a root, flipped,
	 * or grew the file since the commit began (a game that saves without
	 * the lock).  If someone did, nothing is flipped and nothing of theirs
	 * is cut. */
	struct stat now;
	if (pread(fd, hdr1, sizeof hdr1, 0) != (ssize_t)sizeof hdr1 || fstat(fd, &now)) {
		rc = sv_err_set(err, -EIO, "btree: reading the header again: %s", strerror(errno));
		goto fail;
	}
	if (memcmp(hdr0, hdr1, sizeof hdr0) || now.st_size != (off_t)nr->device_size) {
		raced = true;
		rc = sv_err_set(err, -EBUSY, "btree: another program wrote to the database during "
				"the commit (its %s moved): not flipped, the edit is dropped",
				memcmp(hdr0, hdr1, sizeof hdr0) ? "header" : "size");
		goto fail;
	}
	uint8_t ri[17];
	root_info(ri, nr);
	rc = put_at(&w, 33 + 17 * slot, ri, sizeof ri);
	if (!rc)
		rc = sync_fd(&w, "the new root");
	if (rc)
		goto fail;
	if (step)
		step("root");
	uint8_t flip = (uint8_t)slot;
	rc = put_at(&w, 32, &flip, 1);
	flipped = true;
	if (!rc)
		rc = sync_fd(&w, "the root flip");
	if (rc) {
		/* Whether the flip reached the disk is not known: it is put
		 * back, so that the old tree is what the file holds, and the
		 * failure true.  If that fails too, the caller reads the file
		 * again (it may hold either tree; both are whole). */
		uint8_t back = (uint8_t)(slot ^ 1);
		struct sv_err e2;
		struct wr w2 = w;
		w2.err = &e2;
		if (!put_at(&w2, 32, &back, 1) && !sync_fd(&w2, "the flip put back"))
			flipped = false;
		else {
			char m[SV_ERR_MAX];
			snprintf(m, sizeof m, "%s", err->msg);
			sv_err_set(err, rc, "%s; the flip could not be put back: the commit may "
				   "have landed", m);
		}
		goto fail;
	}
	if (step)
		step("flipped");
	ents_fini(&top);
	free(w.pool);
	free(w.freed);
	free(w.blk);
	*out = w.nw;
	return 0;
fail:
	/* Blocks past the old end go again (those written into free blocks
	 * inside the file are free still). */
	if (!flipped && !raced && ftruncate(fd, was.st_size) == 0)
		fdatasync(fd);
	ents_fini(&top);
	free(w.pool);
	free(w.freed);
	free(w.blk);
	sv_bt5_tree_free(w.nw);
	return rc;
}

int sv_bt5_create(int fd, uint32_t block_size, const char *content_id, uint32_t key_size,
		  struct sv_err *err)
{
	if (block_size < 64 || !key_size || key_size > block_size - 19 || strlen(content_id) > 16)
		return sv_err_set(err, -EINVAL, "btree: block size %u, key size %u: not usable",
				  block_size, key_size);
	size_t len = SV_BT5_HEADER + block_size;
	uint8_t *p = calloc(1, len);
	if (!p)
		return sv_err_set(err, -ENOMEM, "out of memory");
	memcpy(p, "BTreeDB5", 8);
	put32(p + 8, block_size);
	memcpy(p + 12, content_id, strlen(content_id));
	put32(p + 28, key_size);
	struct sv_bt5_root r = {SV_BT5_NONE, (int64_t)len, 0, true};
	root_info(p + 33, &r);
	root_info(p + 50, &r);
	memcpy(p + SV_BT5_HEADER, "LL", 2);
	put32(p + len - 4, SV_BT5_NONE);
	int rc = sv_write_all(fd, p, len);
	free(p);
	return rc ? sv_err_set(err, rc, "writing the database: %s", strerror(-rc)) : 0;
}
