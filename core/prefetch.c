/*
 * prefetch.c - read-ahead across files: when the files of a directory are
 * read in listing order, or the file at the same place in each of a run of
 * sibling directories (a/x/f, a/y/f, a/z/f: one file of each layer of a
 * map), the pool's workers (ahead.c, as many as cores) decode the next
 * few into the cache while the reader's requests travel.  A reader never
 * waits behind them: a worker holds the container's write lock only to
 * make an index directory's node (the lock prefers readers), starts no
 * job while a writer waits for it, and runs below the readers' priority.
 */
#include "internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- read-ahead across files ------------------------------------------- */

/* A file whose content comes from the container through the cache. */
bool sv_plain_file(struct sv_container *c, uint32_t i)
{
	return !(c->nodes[i].flags & (SV_N_DIR | SV_N_META | SV_N_DIRTY | SV_N_NEW |
				      SV_N_TEMP | SV_N_BAD | SV_N_GONE | SV_N_ORPHAN |
				      SV_N_STREAM));
}

/* Small files decode faster than the worker wakes up.  A file whose size
 * comes with its decode is not known to be small: decoding it ahead is
 * what makes its stat cheap too. */
static bool worth_ahead(struct sv_container *c, uint32_t k)
{
	const struct sv_inode *kn = &c->nodes[k];
	bool unsized = (kn->flags & SV_N_LAZYSIZE) && !__atomic_load_n(&kn->sized, __ATOMIC_ACQUIRE);
	/* Settled by another reader under the read lock (sv_settle_size). */
	uint64_t size = __atomic_load_n(&kn->size, __ATOMIC_RELAXED);
	return sv_plain_file(c, k) &&
	       (unsized || (size >= PF_MIN_SIZE && size <= c->opts.cache_cap / 8));
}

/* The entry at position pos of index directory dir, made a node if it is
 * none (the client looks it up when it comes to read it, and forgets it
 * after), or SV_NONE.  Write lock held. */
static uint32_t pf_entry(struct sv_container *c, uint32_t dir, uint64_t pos)
{
	char name[256];
	bool is_dir = false;
	uint64_t at = 0;
	if (!sv_live(c, dir) || c->broken || !SV_FMT(c->fmt, dirs, list) ||
	    SV_FMT(c->fmt, dirs, list)(c, dir, pos, name, &is_dir, &at) != 0 || at != pos || is_dir)
		return SV_NONE;
	bool was = sv_find_child(c, dir, name) != SV_NONE;
	uint32_t k = sv_make_entry(c, dir, name);
	if (k == SV_NONE || worth_ahead(c, k))
		return k;
	/* Small, or not a plain file: made for nothing, it goes again. */
	if (!was && sv_node_forgettable(c, k))
		sv_node_free(c, k);
	return SV_NONE;
}

/* Waits while a writer waits for the container's lock: a reader's lookup
 * that makes a node goes before the next job (the ones under way, one
 * view each, it waits for).  Polled, as the lock tells no one. */
static void pf_yield_to_writers(struct sv_container *c)
{
	while (__atomic_load_n(&c->wr_want, __ATOMIC_ACQUIRE)) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
}

/* Node n's view into the cache, unless it is there: true if it was
 * built now.  Read lock held. */
static bool build_locked(struct sv_container *c, uint32_t n)
{
	struct sv_blob *b = sv_cache_get(c->cache, sv_cache_key(&c->nodes[n], n));
	struct sv_err err;
	bool decoded = false;
	/* Errors are not logged here: the reader meets them itself. */
	if (!b && !sv_content_locked(c, n, &b, &err))
		decoded = true;
	sv_blob_unref(b);
	if (decoded)
		sv_settle_size(c, n); /* from the cache now */
	return decoded;
}

bool sv_pf_build(struct sv_container *c, uint32_t n)
{
	pf_yield_to_writers(c);
	pthread_rwlock_rdlock(&c->lock);
	bool decoded = sv_live(c, n) && worth_ahead(c, n) && build_locked(c, n);
	pthread_rwlock_unlock(&c->lock);
	if (decoded) {
		pthread_mutex_lock(&c->pf_lock);
		c->pf_decoded++;
		pthread_mutex_unlock(&c->pf_lock);
	}
	return decoded;
}

/* One job of the container's queue, on a worker of the pool: true if
 * more are queued. */
static bool pf_run(struct sv_ahead *o)
{
	struct sv_container *c = (struct sv_container *)((char *)o - offsetof(struct sv_container, pf_ahead));
	pthread_mutex_lock(&c->pf_lock);
	if (c->pf_stop || !c->pf_count) {
		pthread_mutex_unlock(&c->pf_lock);
		return false;
	}
	uint32_t n = c->pf_queue[c->pf_head];
	uint64_t pos = c->pf_qpos[c->pf_head];
	c->pf_head = (c->pf_head + 1) % PF_QUEUE;
	c->pf_count--;
	/* The next job to the next free worker, meanwhile. */
	if (c->pf_count)
		sv_ahead_post(&c->pf_ahead);
	pthread_mutex_unlock(&c->pf_lock);
	pf_yield_to_writers(c);
	bool decoded = false;
	if (n & PF_INDEX) {
		/* A node to make, under the write lock held for that alone
		 * (the lock prefers readers: none waits while the worker
		 * waits for it, only while it makes the node). */
		pthread_rwlock_wrlock(&c->lock);
		n = pf_entry(c, n & ~PF_INDEX, pos);
		pthread_rwlock_unlock(&c->lock);
	}
	pthread_rwlock_rdlock(&c->lock);
	if (n == SV_NONE) {
		/* (an index directory's entry not worth it) */
	} else if (n & PF_SETTLE) {
		/* A stream whose size a stat did not wait for. */
		n &= ~PF_SETTLE;
		if (sv_live(c, n) && (c->nodes[n].flags & SV_N_STREAM))
			sv_settle_size(c, n);
	} else if (sv_live(c, n) && sv_plain_file(c, n)) {
		decoded = build_locked(c, n);
	}
	pthread_rwlock_unlock(&c->lock);
	pthread_mutex_lock(&c->pf_lock);
	c->pf_decoded += decoded;
	bool more = c->pf_count && !c->pf_stop;
	pthread_mutex_unlock(&c->pf_lock);
	return more;
}

/* Queues file k for the worker if it is worth decoding ahead.  pf_lock
 * held. */
static bool pf_queue_file(struct sv_container *c, uint32_t k)
{
	if (!worth_ahead(c, k))
		return false;
	c->pf_queue[(c->pf_head + c->pf_count) % PF_QUEUE] = k;
	c->pf_count++;
	return true;
}

/* Hands what was queued to the pool's workers, or drops the queue.
 * pf_lock held. */
static void pf_wake(struct sv_container *c)
{
	if (!sv_ahead_post(&c->pf_ahead))
		c->pf_count = 0; /* no worker: read without it */
}

/* Node n of an index directory was read: the same, by the positions of
 * the format's list(), whose entries the worker makes nodes of as it goes
 * (a listing made none).  pf_lock held. */
static void pf_note_indexed(struct sv_container *c, uint32_t n)
{
	const struct sv_inode *node = &c->nodes[n];
	uint64_t pos = node->listpos;
	/* The entries at the reader's step are like the one it read: if that
	 * one is not worth reading ahead, no node is made for the next. */
	if (pos == UINT64_MAX || !worth_ahead(c, n))
		return;
	bool same_dir = c->pf_dir == node->parent;
	if (same_dir && pos == c->pf_ipos)
		return;
	uint64_t stride = same_dir && pos > c->pf_ipos && pos - c->pf_ipos <= 4
				  ? pos - c->pf_ipos : 0;
	bool sequential = stride && stride == c->pf_stride;
	c->pf_dir = node->parent;
	c->pf_pos = SV_NONE;
	c->pf_ipos = pos;
	if (!sequential || c->pf_iupto < pos)
		c->pf_iupto = pos;
	if (!sequential && stride == 1)
		sequential = true;
	c->pf_stride = (uint32_t)stride;
	bool queued = false;
	while (sequential && c->pf_iupto < pos + c->opts.readahead * stride &&
	       c->pf_count < PF_QUEUE) {
		c->pf_iupto += stride;
		unsigned q = (c->pf_head + c->pf_count) % PF_QUEUE;
		c->pf_queue[q] = node->parent | PF_INDEX;
		c->pf_qpos[q] = c->pf_iupto;
		c->pf_count++;
		queued = true;
	}
	if (queued)
		pf_wake(c);
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
	if (dir->flags & SV_N_INDEXDIR) {
		pf_note_indexed(c, n);
		pthread_mutex_unlock(&c->pf_lock);
		return;
	}
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
	if (queued)
		pf_wake(c);
	pthread_mutex_unlock(&c->pf_lock);
}

void sv_pf_settle(struct sv_container *c, uint32_t n)
{
	pthread_mutex_lock(&c->pf_lock);
	bool queued = false;
	for (unsigned k = 0; k < c->pf_count; k++)
		queued |= c->pf_queue[(c->pf_head + k) % PF_QUEUE] == (n | PF_SETTLE);
	if (!queued && c->pf_count < PF_QUEUE && !c->pf_stop) {
		c->pf_queue[(c->pf_head + c->pf_count) % PF_QUEUE] = n | PF_SETTLE;
		c->pf_count++;
		pf_wake(c);
	}
	pthread_mutex_unlock(&c->pf_lock);
}

void sv_pf_init(struct sv_container *c)
{
	c->pf_ahead.run = pf_run;
}

void sv_pf_stop(struct sv_container *c)
{
	pthread_mutex_lock(&c->pf_lock);
	c->pf_stop = true;
	c->pf_count = 0;
	pthread_mutex_unlock(&c->pf_lock);
	sv_ahead_stop(&c->pf_ahead);
}
