/*
 * cache.c - the decoded-data cache: a least-recently-used map from 64-bit
 * keys to blobs, capped in bytes.
 *
 * Invariants (all under `lock`): every entry is both in its hash chain and
 * in the LRU list (most recent at head); bytes == sum of entry blob lengths;
 * bytes + reserved <= cap after every put and reserve, as far as evicting
 * every entry allows (reserved: views being built, sv_cache_reserve).  The cache owns one reference per stored blob.
 *
 * Sharing: a handle (struct sv_cache) is a key space in a store; handles
 * made by sv_cache_share() use the same store and cap under keys of their
 * own, so that one cap covers every container of a folder.  A store goes
 * with its last handle; a handle's entries go with it.
 */
#include "savefs.h"

#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>

struct ent {
	uint64_t space;
	uint64_t key;
	struct sv_blob *blob;
	struct ent *hnext;       /* hash chain */
	struct ent *prev, *next; /* LRU list */
};

struct store {
	pthread_mutex_t lock;
	struct ent **tab;
	size_t nbuckets; /* power of two */
	struct ent *head, *tail;
	struct sv_cache_stats st;
	unsigned refs;        /* handles */
	uint64_t next_space;
	uint64_t evicted;     /* bytes evicted since the allocator last gave
			       * its free pages back */
	uint64_t reserved;    /* room held for blobs being built */
};

struct sv_cache {
	struct store *c;
	uint64_t space;
};

static size_t hash(uint64_t space, uint64_t k, size_t n)
{
	k ^= space * 0x9e3779b97f4a7c15ull;
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (n - 1);
}

struct sv_cache *sv_cache_new(uint64_t cap)
{
	struct sv_cache *h = calloc(1, sizeof *h);
	struct store *c = calloc(1, sizeof *c);
	if (!c || !h) {
		free(c);
		free(h);
		return NULL;
	}
	c->nbuckets = 1024;
	c->tab = calloc(c->nbuckets, sizeof *c->tab);
	if (!c->tab) {
		free(c);
		free(h);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->st.cap = cap;
	c->refs = 1;
	c->next_space = 1;
	h->c = c;
	return h;
}

struct sv_cache *sv_cache_share(struct sv_cache *shared)
{
	struct sv_cache *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	struct store *c = shared->c;
	pthread_mutex_lock(&c->lock);
	c->refs++;
	h->space = c->next_space++;
	pthread_mutex_unlock(&c->lock);
	h->c = c;
	return h;
}

static void lru_unlink(struct store *c, struct ent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct store *c, struct ent *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

static struct ent **find(struct store *c, uint64_t space, uint64_t key)
{
	struct ent **pp = &c->tab[hash(space, key, c->nbuckets)];
	while (*pp && ((*pp)->key != key || (*pp)->space != space))
		pp = &(*pp)->hnext;
	return pp;
}

/* Removes *pp from both structures and frees it. */
static void remove_at(struct store *c, struct ent **pp)
{
	struct ent *e = *pp;
	*pp = e->hnext;
	lru_unlink(c, e);
	c->st.bytes -= e->blob->len;
	c->st.entries--;
	sv_blob_unref(e->blob);
	free(e);
}

void sv_cache_free(struct sv_cache *h)
{
	if (!h)
		return;
	struct store *c = h->c;
	sv_cache_drop(h, 0, 0);
	pthread_mutex_lock(&c->lock);
	bool last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	free(h);
	if (!last)
		return;
	free(c->tab);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

struct sv_blob *sv_cache_get(struct sv_cache *h, uint64_t key)
{
	struct store *c = h->c;
	struct sv_blob *b = NULL;
	pthread_mutex_lock(&c->lock);
	struct ent *e = *find(c, h->space, key);
	if (e) {
		lru_unlink(c, e);
		lru_push(c, e);
		b = sv_blob_ref(e->blob);
		c->st.hits++;
	} else {
		c->st.misses++;
	}
	pthread_mutex_unlock(&c->lock);
	return b;
}

static void grow(struct store *c)
{
	size_t n = c->nbuckets * 2;
	struct ent **tab = calloc(n, sizeof *tab);
	if (!tab)
		return; /* keep the old table: slower, still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct ent *e = c->tab[i];
		while (e) {
			struct ent *next = e->hnext;
			size_t h = hash(e->space, e->key, n);
			e->hnext = tab[h];
			tab[h] = e;
			e = next;
		}
	}
	free(c->tab);
	c->tab = tab;
	c->nbuckets = n;
}

/* The least recently used entries out until n more bytes fit beside
 * what is held and reserved (lock held). */
static void evict(struct store *c, uint64_t n)
{
	while (c->tail && c->st.bytes + c->reserved + n > c->st.cap) {
		c->evicted += c->tail->blob->len;
		remove_at(c, find(c, c->tail->space, c->tail->key));
		c->st.evictions++;
	}
}

void sv_cache_reserve(struct sv_cache *h, uint64_t n)
{
	struct store *c = h->c;
	pthread_mutex_lock(&c->lock);
	evict(c, n);
	c->reserved += n;
	pthread_mutex_unlock(&c->lock);
}

void sv_cache_unreserve(struct sv_cache *h, uint64_t n)
{
	struct store *c = h->c;
	pthread_mutex_lock(&c->lock);
	c->reserved -= n < c->reserved ? n : c->reserved;
	pthread_mutex_unlock(&c->lock);
}

void sv_cache_put(struct sv_cache *h, uint64_t key, struct sv_blob *b)
{
	if (!b)
		return;
	struct store *c = h->c;
	pthread_mutex_lock(&c->lock);
	struct ent **pp = find(c, h->space, key);
	if (*pp)
		remove_at(c, pp);
	if (b->len > c->st.cap) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	evict(c, b->len);
	/* What a full cache turns over leaves holes between what it keeps,
	 * which the allocator keeps as its own: given back each time an
	 * eighth of the cap (1 MiB at least) went. */
	bool trim = c->evicted >= (c->st.cap / 8 > (1u << 20) ? c->st.cap / 8 : (1u << 20));
	if (trim)
		c->evicted = 0;
	struct ent *e = calloc(1, sizeof *e);
	if (e) {
		if (c->st.entries >= c->nbuckets)
			grow(c);
		e->space = h->space;
		e->key = key;
		e->blob = sv_blob_ref(b);
		pp = &c->tab[hash(h->space, key, c->nbuckets)];
		e->hnext = *pp;
		*pp = e;
		lru_push(c, e);
		c->st.bytes += b->len;
		c->st.entries++;
	}
	pthread_mutex_unlock(&c->lock);
#ifdef __GLIBC__
	if (trim)
		malloc_trim(0);
#endif
}

void sv_cache_drop(struct sv_cache *h, uint64_t key, uint64_t mask)
{
	struct store *c = h->c;
	pthread_mutex_lock(&c->lock);
	struct ent *e = c->head;
	while (e) {
		struct ent *next = e->next;
		if (e->space == h->space && (e->key & mask) == (key & mask))
			remove_at(c, find(c, e->space, e->key));
		e = next;
	}
	pthread_mutex_unlock(&c->lock);
}

void sv_cache_stats(struct sv_cache *h, struct sv_cache_stats *st)
{
	struct store *c = h->c;
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}
