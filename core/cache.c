/*
 * cache.c - the decoded-data cache: a least-recently-used map from 64-bit
 * keys to blobs, capped in bytes.
 *
 * Invariants (all under `lock`): every entry is both in its hash chain and
 * in the LRU list (most recent at head); bytes == sum of entry blob lengths
 * <= cap after every put.  The cache owns one reference per stored blob.
 */
#include "savefs.h"

#include <stdlib.h>
#include <string.h>

struct ent {
	uint64_t key;
	struct sv_blob *blob;
	struct ent *hnext;       /* hash chain */
	struct ent *prev, *next; /* LRU list */
};

struct sv_cache {
	pthread_mutex_t lock;
	struct ent **tab;
	size_t nbuckets; /* power of two */
	struct ent *head, *tail;
	struct sv_cache_stats st;
};

static size_t hash(uint64_t k, size_t n)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (n - 1);
}

struct sv_cache *sv_cache_new(uint64_t cap)
{
	struct sv_cache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->nbuckets = 1024;
	c->tab = calloc(c->nbuckets, sizeof *c->tab);
	if (!c->tab) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->st.cap = cap;
	return c;
}

static void lru_unlink(struct sv_cache *c, struct ent *e)
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

static void lru_push(struct sv_cache *c, struct ent *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

static struct ent **find(struct sv_cache *c, uint64_t key)
{
	struct ent **pp = &c->tab[hash(key, c->nbuckets)];
	while (*pp && (*pp)->key != key)
		pp = &(*pp)->hnext;
	return pp;
}

/* Removes *pp from both structures and frees it. */
static void remove_at(struct sv_cache *c, struct ent **pp)
{
	struct ent *e = *pp;
	*pp = e->hnext;
	lru_unlink(c, e);
	c->st.bytes -= e->blob->len;
	c->st.entries--;
	sv_blob_unref(e->blob);
	free(e);
}

void sv_cache_free(struct sv_cache *c)
{
	if (!c)
		return;
	while (c->head) {
		struct ent *e = c->head;
		remove_at(c, find(c, e->key));
	}
	free(c->tab);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

struct sv_blob *sv_cache_get(struct sv_cache *c, uint64_t key)
{
	struct sv_blob *b = NULL;
	pthread_mutex_lock(&c->lock);
	struct ent *e = *find(c, key);
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

static void grow(struct sv_cache *c)
{
	size_t n = c->nbuckets * 2;
	struct ent **tab = calloc(n, sizeof *tab);
	if (!tab)
		return; /* keep the old table: slower, still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct ent *e = c->tab[i];
		while (e) {
			struct ent *next = e->hnext;
			size_t h = hash(e->key, n);
			e->hnext = tab[h];
			tab[h] = e;
			e = next;
		}
	}
	free(c->tab);
	c->tab = tab;
	c->nbuckets = n;
}

void sv_cache_put(struct sv_cache *c, uint64_t key, struct sv_blob *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&c->lock);
	struct ent **pp = find(c, key);
	if (*pp)
		remove_at(c, pp);
	if (b->len > c->st.cap) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	while (c->tail && c->st.bytes + b->len > c->st.cap) {
		remove_at(c, find(c, c->tail->key));
		c->st.evictions++;
	}
	struct ent *e = calloc(1, sizeof *e);
	if (e) {
		if (c->st.entries >= c->nbuckets)
			grow(c);
		e->key = key;
		e->blob = sv_blob_ref(b);
		pp = &c->tab[hash(key, c->nbuckets)];
		e->hnext = *pp;
		*pp = e;
		lru_push(c, e);
		c->st.bytes += b->len;
		c->st.entries++;
	}
	pthread_mutex_unlock(&c->lock);
}

void sv_cache_drop(struct sv_cache *c, uint64_t key, uint64_t mask)
{
	pthread_mutex_lock(&c->lock);
	struct ent *e = c->head;
	while (e) {
		struct ent *next = e->next;
		if ((e->key & mask) == (key & mask))
			remove_at(c, find(c, e->key));
		e = next;
	}
	pthread_mutex_unlock(&c->lock);
}

void sv_cache_stats(struct sv_cache *c, struct sv_cache_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}
