/*
 * test_cache.c - the decoded-data cache (core/cache.c) and blobs: put/get,
 * least-recently-used eviction order, the byte cap, oversized blobs,
 * replacing a key, dropping by mask, reference counts across eviction,
 * statistics, table growth, a small multi-threaded stress run, and
 * handles that share one store and cap (a folder's containers), room
 * reserved for blobs being built.
 * Meant to run under ASan too: a blob evicted while held must stay valid.
 */
#include "savefs.h"
#include "t.h"

#include <pthread.h>
#include <stdlib.h>

/* A blob of len bytes, each set to a pattern derived from tag. */
static struct sv_blob *mk(size_t len, unsigned tag)
{
	struct sv_blob *b = sv_blob_new(len);
	if (!b) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < len; i++)
		b->data[i] = (uint8_t)(tag * 31 + i);
	return b;
}

static int intact(const struct sv_blob *b, size_t len, unsigned tag)
{
	if (!b || b->len != len)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (b->data[i] != (uint8_t)(tag * 31 + i))
			return 0;
	return 1;
}

static struct sv_cache_stats stats(struct sv_cache *c)
{
	struct sv_cache_stats st;
	sv_cache_stats(c, &st);
	return st;
}

/* Puts a fresh blob and drops the caller's reference. */
static void put(struct sv_cache *c, uint64_t key, size_t len, unsigned tag)
{
	struct sv_blob *b = mk(len, tag);
	sv_cache_put(c, key, b);
	sv_blob_unref(b);
}

static int has(struct sv_cache *c, uint64_t key)
{
	struct sv_blob *b = sv_cache_get(c, key);
	sv_blob_unref(b);
	return b != NULL;
}

static void blobs(void)
{
	struct sv_blob *b = sv_blob_dup("abc", 3);
	T_OK(b != NULL);
	T_INT(1, b->refs);
	T_UINT(3, b->len);
	T_MEM("abc", b->data, 3);
	T_OK(sv_blob_ref(b) == b);
	T_INT(2, b->refs);
	sv_blob_unref(b);
	T_INT(1, b->refs);
	sv_blob_unref(b);
	sv_blob_unref(NULL);
	T_OK(sv_blob_ref(NULL) == NULL);
	struct sv_blob *z = sv_blob_dup(NULL, 0);
	T_OK(z != NULL);
	T_UINT(0, z->len);
	sv_blob_unref(z);
	T_OK(sv_blob_new(SIZE_MAX) == NULL);
	T_OK(sv_blob_new(SIZE_MAX - sizeof(struct sv_blob) + 1) == NULL);
}

static void put_get(void)
{
	struct sv_cache *c = sv_cache_new(100);
	struct sv_blob *a = mk(10, 1);
	sv_cache_put(c, 1, a);
	T_INT(2, a->refs); /* the cache holds its own reference */
	struct sv_blob *g = sv_cache_get(c, 1);
	T_OK(g == a);
	T_INT(3, a->refs);
	sv_blob_unref(g);
	T_OK(sv_cache_get(c, 2) == NULL);
	T_OK(sv_cache_get(c, 1ull << 40 | 1) == NULL);
	struct sv_cache_stats st = stats(c);
	T_UINT(100, st.cap);
	T_UINT(10, st.bytes);
	T_UINT(1, st.entries);
	T_UINT(1, st.hits);
	T_UINT(2, st.misses);
	T_UINT(0, st.evictions);
	/* A NULL blob is ignored. */
	sv_cache_put(c, 3, NULL);
	T_UINT(1, stats(c).entries);
	sv_cache_free(c);
	/* Freeing the cache drops its reference only. */
	T_INT(1, a->refs);
	T_OK(intact(a, 10, 1));
	sv_blob_unref(a);
	sv_cache_free(NULL);
}

static void lru_order(void)
{
	struct sv_cache *c = sv_cache_new(100);
	put(c, 1, 30, 1);
	put(c, 2, 30, 2);
	put(c, 3, 30, 3);
	T_UINT(90, stats(c).bytes);
	/* 4 does not fit: 1, the least recently used, goes. */
	put(c, 4, 30, 4);
	T_OK(!has(c, 1));
	T_UINT(1, stats(c).evictions);
	/* Touch 2; then 3 is the oldest and goes next. */
	T_OK(has(c, 2));
	put(c, 5, 30, 5);
	T_OK(!has(c, 3));
	T_OK(has(c, 2));
	T_OK(has(c, 4));
	T_OK(has(c, 5));
	T_UINT(2, stats(c).evictions);
	/* A 70-byte blob needs two to go: the two least recent (4, then 2). */
	T_OK(has(c, 5));
	put(c, 6, 70, 6);
	T_OK(!has(c, 4));
	T_OK(!has(c, 2));
	T_OK(has(c, 5));
	T_OK(has(c, 6));
	struct sv_cache_stats st = stats(c);
	T_UINT(100, st.bytes);
	T_UINT(2, st.entries);
	T_UINT(4, st.evictions);
	/* Exactly filling the cap evicts nothing. */
	sv_cache_drop(c, 0, 0);
	put(c, 7, 60, 7);
	put(c, 8, 40, 8);
	T_UINT(100, stats(c).bytes);
	T_OK(has(c, 7) && has(c, 8));
	sv_cache_free(c);
}

static void byte_cap(void)
{
	struct sv_cache *c = sv_cache_new(1000);
	uint64_t seed = 12345;
	int over = 0;
	for (unsigned i = 0; i < 5000; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		size_t len = (size_t)(seed >> 33) % 400;
		put(c, (seed >> 20) % 50, len, i);
		struct sv_cache_stats st = stats(c);
		if (st.bytes > st.cap)
			over++;
	}
	T_INT(0, over);
	/* Every stored blob is the one last put under its key, intact. */
	sv_cache_free(c);

	/* A blob larger than the cap is not stored, and evicts nothing. */
	c = sv_cache_new(100);
	put(c, 1, 50, 1);
	put(c, 2, 101, 2);
	T_OK(!has(c, 2));
	T_OK(has(c, 1));
	struct sv_cache_stats st = stats(c);
	T_UINT(50, st.bytes);
	T_UINT(1, st.entries);
	T_UINT(0, st.evictions);
	/* ... and under a key already present, the stale blob goes. */
	put(c, 1, 101, 3);
	T_OK(!has(c, 1));
	T_UINT(0, stats(c).bytes);
	T_UINT(0, stats(c).entries);
	/* A blob exactly the cap fits. */
	put(c, 3, 100, 3);
	T_OK(has(c, 3));
	sv_cache_free(c);

	/* A zero cap stores only empty blobs. */
	c = sv_cache_new(0);
	put(c, 1, 1, 1);
	T_OK(!has(c, 1));
	put(c, 2, 0, 2);
	T_UINT(0, stats(c).bytes);
	sv_cache_free(c);
}

static void replace(void)
{
	struct sv_cache *c = sv_cache_new(100);
	struct sv_blob *a = mk(10, 1), *b = mk(20, 2);
	sv_cache_put(c, 7, a);
	sv_cache_put(c, 7, b);
	T_INT(1, a->refs); /* the cache let go of the old blob */
	T_INT(2, b->refs);
	struct sv_blob *g = sv_cache_get(c, 7);
	T_OK(g == b);
	sv_blob_unref(g);
	struct sv_cache_stats st = stats(c);
	T_UINT(20, st.bytes);
	T_UINT(1, st.entries);
	T_UINT(0, st.evictions);
	/* Putting the same blob again keeps one entry and one reference. */
	sv_cache_put(c, 7, b);
	T_INT(2, b->refs);
	T_UINT(20, stats(c).bytes);
	T_UINT(1, stats(c).entries);
	sv_cache_free(c);
	T_INT(1, b->refs);
	sv_blob_unref(a);
	sv_blob_unref(b);
}

static void drop_mask(void)
{
	struct sv_cache *c = sv_cache_new(1000);
	/* Keys as the container makes them: generation << 32 | node. */
	put(c, 1ull << 32 | 1, 10, 1);
	put(c, 2ull << 32 | 1, 10, 2);
	put(c, 1ull << 32 | 2, 10, 3);
	put(c, 3ull << 32 | 3, 10, 4);
	sv_cache_drop(c, 1, 0xffffffffull);
	T_OK(!has(c, 1ull << 32 | 1));
	T_OK(!has(c, 2ull << 32 | 1));
	T_OK(has(c, 1ull << 32 | 2));
	T_OK(has(c, 3ull << 32 | 3));
	T_UINT(20, stats(c).bytes);
	T_UINT(2, stats(c).entries);
	/* Drops are not evictions. */
	T_UINT(0, stats(c).evictions);
	/* By the high half. */
	sv_cache_drop(c, 3ull << 32, 0xffffffffull << 32);
	T_OK(!has(c, 3ull << 32 | 3));
	T_OK(has(c, 1ull << 32 | 2));
	/* A key that matches nothing. */
	sv_cache_drop(c, 99, UINT64_MAX);
	T_UINT(1, stats(c).entries);
	/* Mask 0 drops everything. */
	sv_cache_drop(c, 0, 0);
	T_UINT(0, stats(c).entries);
	T_UINT(0, stats(c).bytes);
	/* The cache still works afterwards. */
	put(c, 5, 10, 5);
	T_OK(has(c, 5));
	sv_cache_free(c);
}

static void held_across_eviction(void)
{
	struct sv_cache *c = sv_cache_new(64);
	put(c, 1, 60, 1);
	struct sv_blob *held = sv_cache_get(c, 1);
	T_OK(intact(held, 60, 1));
	/* Evicted by a newer entry while the reader still holds it. */
	put(c, 2, 60, 2);
	T_OK(!has(c, 1));
	T_INT(1, held->refs);
	T_OK(intact(held, 60, 1));
	/* Dropped while held. */
	struct sv_blob *h2 = sv_cache_get(c, 2);
	sv_cache_drop(c, 0, 0);
	T_OK(intact(h2, 60, 2));
	/* Held across the cache's own end. */
	put(c, 3, 10, 3);
	struct sv_blob *h3 = sv_cache_get(c, 3);
	sv_cache_free(c);
	T_OK(intact(h3, 10, 3));
	T_OK(intact(held, 60, 1));
	sv_blob_unref(held);
	sv_blob_unref(h2);
	sv_blob_unref(h3);
}

static void many_entries(void)
{
	/* More entries than the initial hash table has buckets: it grows. */
	struct sv_cache *c = sv_cache_new(1 << 20);
	for (unsigned i = 0; i < 5000; i++)
		put(c, (uint64_t)i * 0x10001, 8, i);
	T_UINT(5000, stats(c).entries);
	T_UINT(5000 * 8, stats(c).bytes);
	int missing = 0, damaged = 0;
	for (unsigned i = 0; i < 5000; i++) {
		struct sv_blob *b = sv_cache_get(c, (uint64_t)i * 0x10001);
		missing += !b;
		damaged += b && !intact(b, 8, i);
		sv_blob_unref(b);
	}
	T_INT(0, missing);
	T_INT(0, damaged);
	T_UINT(5000, stats(c).hits);
	sv_cache_free(c);
}

/* ---- threads ----------------------------------------------------------- */

#define NTHREADS 4
#define ITERS 20000
#define KEYS 64

struct worker {
	struct sv_cache *c;
	unsigned seed;
	int bad;      /* a blob read back that was not what was stored */
	int over_cap; /* bytes seen above the cap */
};

/* The length and tag of key k are fixed, so any reader can check a blob. */
static size_t key_len(uint64_t k) { return 1 + (size_t)(k * 37 % 200); }

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t s = w->seed;
	for (int i = 0; i < ITERS; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t k = (s >> 33) % KEYS;
		unsigned op = (unsigned)(s >> 50) % 16;
		if (op < 7) {
			put(w->c, k, key_len(k), (unsigned)k);
		} else if (op < 15) {
			struct sv_blob *b = sv_cache_get(w->c, k);
			if (b && !intact(b, key_len(k), (unsigned)k))
				w->bad++;
			sv_blob_unref(b);
		} else {
			sv_cache_drop(w->c, k, 0xf);
		}
		if (i % 64 == 0) {
			struct sv_cache_stats st;
			sv_cache_stats(w->c, &st);
			if (st.bytes > st.cap)
				w->over_cap++;
		}
	}
	return NULL;
}

static void stress(void)
{
	struct sv_cache *c = sv_cache_new(2000);
	pthread_t th[NTHREADS];
	struct worker w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){.c = c, .seed = 1000u + (unsigned)i};
		T_INT(0, pthread_create(&th[i], NULL, work, &w[i]));
	}
	int bad = 0, over = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		bad += w[i].bad;
		over += w[i].over_cap;
	}
	T_INT(0, bad);
	T_INT(0, over);
	struct sv_cache_stats st = stats(c);
	T_OK(st.bytes <= st.cap);
	/* bytes and entries agree with what is really stored. */
	uint64_t sum = 0, n = 0;
	for (uint64_t k = 0; k < KEYS; k++) {
		struct sv_blob *b = sv_cache_get(c, k);
		if (b) {
			sum += b->len;
			n++;
		}
		sv_blob_unref(b);
	}
	T_UINT(st.bytes, sum);
	T_UINT(st.entries, n);
	sv_cache_free(c);
}

/* Handles shared by containers of a folder: one store, one cap; each
 * handle's keys its own; a handle freed takes its entries, the store
 * lives while a handle does. */
static void shared(void)
{
	struct sv_cache *root = sv_cache_new(100);
	struct sv_cache *a = sv_cache_share(root), *b = sv_cache_share(root);
	T_OK(a && b);
	put(a, 1, 40, 1);
	put(b, 1, 40, 2);
	/* The same key in two handles: two entries, each its own bytes. */
	struct sv_blob *ga = sv_cache_get(a, 1), *gb = sv_cache_get(b, 1);
	T_OK(intact(ga, 40, 1));
	T_OK(intact(gb, 40, 2));
	sv_blob_unref(ga);
	sv_blob_unref(gb);
	T_OK(!has(root, 1));
	T_UINT(80, stats(root).bytes);
	T_UINT(80, stats(a).bytes); /* the store's figures, whichever handle */
	/* One cap over both: b's new entry evicts a's (the least recent). */
	put(b, 2, 40, 3);
	T_OK(!has(a, 1));
	T_OK(has(b, 1));
	T_OK(has(b, 2));
	T_UINT(80, stats(root).bytes);
	/* Dropping by mask drops this handle's keys only. */
	put(a, 7, 10, 4);
	sv_cache_drop(b, 0, 0);
	T_OK(has(a, 7));
	T_UINT(10, stats(root).bytes);
	/* A handle freed takes its entries; the store stays for the others. */
	put(b, 3, 20, 5);
	sv_cache_free(a);
	T_UINT(20, stats(root).bytes);
	T_OK(has(b, 3));
	sv_cache_free(root);
	T_OK(has(b, 3));
	sv_cache_free(b); /* the last handle: the store goes (ASan: no leak) */
}

/* Room reserved for blobs being built: the least recently used go at
 * once, and puts meanwhile fit beside the room; given back, the room is
 * the cache's again.  A reservation past the cap empties it, and stops
 * there. */
static void reserve(void)
{
	struct sv_cache *c = sv_cache_new(100);
	put(c, 1, 30, 1);
	put(c, 2, 30, 2);
	put(c, 3, 30, 3);
	sv_cache_reserve(c, 50);
	T_OK(!has(c, 1));
	T_OK(!has(c, 2));
	T_OK(has(c, 3));
	T_UINT(30, stats(c).bytes);
	put(c, 4, 20, 4);
	T_OK(has(c, 3));
	T_OK(has(c, 4));
	put(c, 5, 10, 5); /* 30 + 20 + 10 + 50 > 100: the oldest goes */
	T_OK(!has(c, 3));
	T_UINT(30, stats(c).bytes);
	sv_cache_unreserve(c, 50);
	put(c, 6, 70, 6);
	T_OK(has(c, 4));
	T_OK(has(c, 5));
	T_OK(has(c, 6));
	T_UINT(100, stats(c).bytes);
	sv_cache_reserve(c, 500);
	T_UINT(0, stats(c).bytes);
	sv_cache_unreserve(c, 500);
	put(c, 7, 100, 7);
	T_OK(has(c, 7));
	sv_cache_free(c);
}

int main(void)
{
	blobs();
	put_get();
	lru_order();
	byte_cap();
	replace();
	drop_mask();
	held_across_eviction();
	many_entries();
	stress();
	shared();
	reserve();
	return t_done();
}
