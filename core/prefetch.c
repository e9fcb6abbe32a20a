/*
 * prefetch.c - read-ahead across files: when the files of a directory are
 * read in listing order, or the file at the same place in each of a run of
 * sibling directories (a/x/f, a/y/f, a/z/f: one file of each layer of a
 * map), a worker decodes the next few into the cache on the other core
 * while the reader's requests travel.
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
		if (n & PF_SETTLE) {
			/* A stream whose size a stat did not wait for. */
			n &= ~PF_SETTLE;
			if (sv_live(c, n) && (c->nodes[n].flags & SV_N_STREAM))
				sv_settle_size(c, n);
		} else if (sv_live(c, n) && sv_plain_file(c, n)) {
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

/* Queues file k for the worker if it is worth decoding ahead.  pf_lock
 * held. */
static bool pf_queue_file(struct sv_container *c, uint32_t k)
{
	/* Small files decode faster than the worker wakes up.  A file whose
	 * size comes with its decode is not known to be small: decoding it
	 * ahead is what makes its stat cheap too. */
	const struct sv_inode *kn = &c->nodes[k];
	bool unsized = (kn->flags & SV_N_LAZYSIZE) && !__atomic_load_n(&kn->sized, __ATOMIC_ACQUIRE);
	if (!sv_plain_file(c, k) ||
	    (!unsized && (kn->size < PF_MIN_SIZE || kn->size > c->opts.cache_cap / 8)))
		return false;
	c->pf_queue[(c->pf_head + c->pf_count) % PF_QUEUE] = k;
	c->pf_count++;
	return true;
}

/* Node n, at position pos of its directory, was read after the file at
 * the same position of an earlier sibling directory, one to four places
 * before: queue that position of the next sibling directories at the same
 * step.  pf_lock held; returns whether anything was queued. */
static bool pf_cousins(struct sv_container *c, uint32_t n, uint32_t pos)
{
	uint32_t d = c->nodes[n].parent;
	if (d == SV_ROOT)
		return false;
	uint32_t g = c->nodes[d].parent, dpos = c->nodes[d].kidpos;
	bool seen = g == c->pf_gdir && dpos > c->pf_dpos && dpos - c->pf_dpos <= 4;
	uint32_t step = seen ? dpos - c->pf_dpos : 0;
	if (!seen || c->pf_dupto < dpos || c->pf_dupto == SV_NONE)
		c->pf_dupto = dpos;
	c->pf_gdir = g;
	c->pf_dpos = dpos;
	bool queued = false;
	const struct sv_inode *gn = &c->nodes[g];
	while (step && c->pf_dupto < dpos + c->opts.readahead * step &&
	       c->pf_dupto + step < gn->nkids && c->pf_count < PF_QUEUE) {
		c->pf_dupto += step;
		const struct sv_inode *sib = &c->nodes[gn->kids[c->pf_dupto]];
		if ((sib->flags & SV_N_DIR) && pos < sib->nkids)
			queued |= pf_queue_file(c, sib->kids[pos]);
	}
	return queued;
}

/* Node n was read: if it follows the last file read in the same
 * directory, one to four places on (`cat *.txt` reads every third file of
 * a directory of .bin, .png and .txt views), queue the next files at that
 * step (at most opts.readahead ahead, each small enough to leave the cache
 * room).  Read lock held. */
void sv_pf_note_read(struct sv_container *c, uint32_t n)
{
	const struct sv_inode *node = &c->nodes[n];
	const struct sv_inode *dir = &c->nodes[node->parent];
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
		queued |= pf_queue_file(c, dir->kids[c->pf_upto]);
	}
	/* A new directory: perhaps the same file of the next one. */
	if (!same_dir)
		queued |= pf_cousins(c, n, pos);
	if (queued && !c->pf_started) {
		c->pf_started = pthread_create(&c->pf_thread, NULL, pf_main, c) == 0;
		if (!c->pf_started)
			c->pf_count = 0; /* no worker: read without it */
	}
	if (queued)
		pthread_cond_broadcast(&c->pf_cond);
	pthread_mutex_unlock(&c->pf_lock);
}

void sv_pf_settle(struct sv_container *c, uint32_t n)
{
	pthread_mutex_lock(&c->pf_lock);
	bool queued = false;
	for (unsigned k = 0; k < c->pf_count; k++)
		queued |= c->pf_queue[(c->pf_head + k) % PF_QUEUE] == (n | PF_SETTLE);
	if (!queued && c->pf_count < PF_QUEUE) {
		c->pf_queue[(c->pf_head + c->pf_count) % PF_QUEUE] = n | PF_SETTLE;
		c->pf_count++;
		if (!c->pf_started)
			c->pf_started = pthread_create(&c->pf_thread, NULL, pf_main, c) == 0;
		if (!c->pf_started)
			c->pf_count = 0;
		pthread_cond_broadcast(&c->pf_cond);
	}
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
