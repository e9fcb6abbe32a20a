/*
 * prefetch.c - read-ahead across files: when the files of a directory are
 * read in listing order, a worker decodes the next few into the cache on
 * the other core while the reader's requests travel.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- read-ahead across files ------------------------------------------- */

/* A file whose content comes from the container through the cache. */
bool sv_plain_file(struct sv_container *c, uint32_t i)
{
	return !(c->nodes[i].flags & (SV_N_DIR | SV_N_META | SV_N_DIRTY | SV_N_NEW |
				      SV_N_TEMP | SV_N_BAD | SV_N_GONE | SV_N_ORPHAN |
				      SV_N_STREAM));
}

static void *pf_main(void *arg)
{
	struct sv_container *c = arg;
	pthread_mutex_lock(&c->pf_lock);
	for (;;) {
		while (!c->pf_count && !c->pf_stop)
			pthread_cond_wait(&c->pf_cond, &c->pf_lock);
		if (c->pf_stop)
			break;
		uint32_t n = c->pf_queue[c->pf_head];
		c->pf_head = (c->pf_head + 1) % PF_QUEUE;
		c->pf_count--;
		pthread_mutex_unlock(&c->pf_lock);
		pthread_rwlock_rdlock(&c->lock);
		bool decoded = false;
		if (sv_live(c, n) && sv_plain_file(c, n)) {
			struct sv_blob *b = sv_cache_get(c->cache, sv_cache_key(&c->nodes[n], n));
			struct sv_err err;
			/* Errors are not logged here: the reader meets them itself. */
			if (!b && !sv_content_locked(c, n, &b, &err))
				decoded = true;
			sv_blob_unref(b);
			if (decoded)
				sv_settle_size(c, n); /* from the cache now */
		}
		pthread_rwlock_unlock(&c->lock);
		pthread_mutex_lock(&c->pf_lock);
		c->pf_decoded += decoded;
	}
	pthread_mutex_unlock(&c->pf_lock);
	return NULL;
}

/* Node n was read: if it follows the last file read in the same
 * directory, one to four places on (`cat *.txt` reads every third file of
 * a directory of .bin, .png and .txt views), queue the next files at that
 * step (at most opts.readahead ahead, each small enough to leave the cache
 * room).  Read lock held. */
void sv_pf_note_read(struct sv_container *c, uint32_t n)
{
	const struct sv_node *node = &c->nodes[n];
	const struct sv_node *dir = &c->nodes[node->parent];
	uint32_t pos = node->kidpos;
	pthread_mutex_lock(&c->pf_lock);
	bool same_dir = c->pf_dir == node->parent;
	if (same_dir && pos == c->pf_pos) {
		pthread_mutex_unlock(&c->pf_lock); /* the same file again */
		return;
	}
	uint32_t stride = same_dir && pos > c->pf_pos && pos - c->pf_pos <= 4
				  ? pos - c->pf_pos : 0;
	bool sequential = stride && stride == c->pf_stride;
	c->pf_dir = node->parent;
	c->pf_pos = pos;
	if (!sequential || c->pf_upto < pos || c->pf_upto == SV_NONE)
		c->pf_upto = pos;
	/* A step is believed once seen twice in a row (a single file). */
	if (!sequential && stride == 1)
		sequential = true;
	c->pf_stride = stride;
	bool queued = false;
	while (sequential && c->pf_upto < pos + c->opts.readahead * stride &&
	       c->pf_upto + stride < dir->nkids && c->pf_count < PF_QUEUE) {
		c->pf_upto += stride;
		uint32_t k = dir->kids[c->pf_upto];
		/* Small files decode faster than the worker wakes up.  A file
		 * whose size comes with its decode is not known to be small:
		 * decoding it ahead is what makes its stat cheap too. */
		const struct sv_node *kn = &c->nodes[k];
		bool unsized = (kn->flags & SV_N_LAZYSIZE) &&
			       !__atomic_load_n(&kn->sized, __ATOMIC_ACQUIRE);
		if (!sv_plain_file(c, k) ||
		    (!unsized && (kn->size < PF_MIN_SIZE || kn->size > c->opts.cache_cap / 8)))
			continue;
		c->pf_queue[(c->pf_head + c->pf_count) % PF_QUEUE] = k;
		c->pf_count++;
		queued = true;
	}
	if (queued && !c->pf_started) {
		c->pf_started = pthread_create(&c->pf_thread, NULL, pf_main, c) == 0;
		if (!c->pf_started)
			c->pf_count = 0; /* no worker: read without it */
	}
	if (queued)
		pthread_cond_broadcast(&c->pf_cond);
	pthread_mutex_unlock(&c->pf_lock);
}

void sv_pf_stop(struct sv_container *c)
{
	if (!c->pf_started)
		return;
	pthread_mutex_lock(&c->pf_lock);
	c->pf_stop = true;
	pthread_cond_broadcast(&c->pf_cond);
	pthread_mutex_unlock(&c->pf_lock);
	pthread_join(c->pf_thread, NULL);
	c->pf_started = false;
}
