/*
 * access.c - the client side of the node table: open and release,
 * lookups, stats, listings and reads, each under the read lock; a read in
 * listing order tells the read-ahead (prefetch.c).  Content comes from
 * load.c.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

int sv_open(struct sv_container *c, uint32_t n)
{
	pthread_rwlock_rdlock(&c->lock);
	int rc = sv_gone_code(c, n);
	if (!rc) {
		__atomic_add_fetch(&c->nodes[n].opens, 1, __ATOMIC_ACQ_REL);
		__atomic_add_fetch(&c->opened, 1, __ATOMIC_ACQ_REL);
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

uint32_t sv_current(struct sv_container *c, uint32_t n)
{
	pthread_rwlock_rdlock(&c->lock);
	uint32_t r = n;
	/* A rename onto a name replaces its node; follow the name (a few
	 * times over, for renames in quick succession). */
	for (int hops = 0; r < c->nnodes && !sv_usable(c, r) && hops < 16; hops++) {
		const struct sv_inode *x = &c->nodes[r];
		uint32_t k = x->name && sv_live(c, x->parent) ? sv_find_child(c, x->parent, x->name)
							     : SV_NONE;
		if (k == SV_NONE || k == r) {
			r = n;
			break;
		}
		r = k;
	}
	pthread_rwlock_unlock(&c->lock);
	return r;
}

void sv_release(struct sv_container *c, uint32_t n)
{
	/* The read lock suffices to count; only the last release of an
	 * orphan needs the write lock, to free its content. */
	pthread_rwlock_rdlock(&c->lock);
	if (n < c->nnodes && __atomic_load_n(&c->opened, __ATOMIC_ACQUIRE))
		__atomic_sub_fetch(&c->opened, 1, __ATOMIC_ACQ_REL);
	bool last = n < c->nnodes &&
		    __atomic_sub_fetch(&c->nodes[n].opens, 1, __ATOMIC_ACQ_REL) == 0;
	bool orphan = last && (c->nodes[n].flags & SV_N_ORPHAN);
	/* An index directory's entry nothing holds any more goes. */
	bool forget = last && !orphan && sv_node_forgettable(c, n);
	pthread_rwlock_unlock(&c->lock);
	if (!orphan && !forget)
		return;
	sv_wrlock(c);
	if (forget && sv_node_forgettable(c, n))
		sv_node_free(c, n);
	struct sv_inode *node = &c->nodes[n];
	if (!__atomic_load_n(&node->opens, __ATOMIC_ACQUIRE) && (node->flags & SV_N_ORPHAN)) {
		node->flags &= ~SV_N_ORPHAN;
		sv_buf_fini(&node->pending);
		node->size = 0;
	}
	pthread_rwlock_unlock(&c->lock);
}

/* A name the table does not have: the format may make it (a file any
 * name of a pattern opens, not all of them listed; an index directory's
 * entry).  Read lock held, dropped and taken again.  0 and the node, held
 * once more if `hold` (counted under the write lock, so that a forget
 * cannot let it go first), or -ENOENT. */
static int sv_lookup_new(struct sv_container *c, uint32_t dir, const char *name, uint32_t *out,
			 bool hold)
{
	sv_lock_upgrade(c);
	int rc = -ENOENT;
	if (sv_live(c, dir) && !c->broken) {
		*out = sv_make_entry(c, dir, name);
		rc = *out != SV_NONE ? 0 : -ENOENT;
		if (!rc && hold)
			__atomic_add_fetch(&c->nodes[*out].held, 1, __ATOMIC_ACQ_REL);
	}
	sv_lock_downgrade(c);
	return rc;
}

static int lookup(struct sv_container *c, uint32_t dir, const char *name, uint32_t *out,
		  bool hold)
{
	int rc = 0;
	pthread_rwlock_rdlock(&c->lock);
	if (sv_expand(c, dir))
		rc = -EIO;
	else if (!sv_live(c, dir))
		rc = -ENOENT;
	else if (!(c->nodes[dir].flags & SV_N_DIR))
		rc = -ENOTDIR;
	else if (!strcmp(name, "."))
		*out = dir;
	else if (!strcmp(name, ".."))
		*out = c->nodes[dir].parent;
	else if ((*out = sv_find_child(c, dir, name)) == SV_NONE)
		rc = SV_FMT(c->fmt, dirs, lookup) ? sv_lookup_new(c, dir, name, out, hold) : -ENOENT;
	else if (hold)
		__atomic_add_fetch(&c->nodes[*out].held, 1, __ATOMIC_ACQ_REL);
	pthread_rwlock_unlock(&c->lock);
	sv_tab_note(SV_TAB_LOOKUP);
	return rc;
}

int sv_lookup(struct sv_container *c, uint32_t dir, const char *name, uint32_t *out)
{
	return lookup(c, dir, name, out, false);
}

int sv_lookup_held(struct sv_container *c, uint32_t dir, const char *name, uint32_t *out)
{
	return lookup(c, dir, name, out, true);
}

void sv_hold(struct sv_container *c, uint32_t n)
{
	pthread_rwlock_rdlock(&c->lock);
	if (sv_live(c, n))
		__atomic_add_fetch(&c->nodes[n].held, 1, __ATOMIC_ACQ_REL);
	pthread_rwlock_unlock(&c->lock);
}

/* Takes count from n's holds (never below none); true if none are left. */
static bool unhold(struct sv_inode *n, uint64_t count)
{
	uint32_t was = __atomic_load_n(&n->held, __ATOMIC_ACQUIRE), now;
	do
		now = was > count ? was - (uint32_t)count : 0;
	while (!__atomic_compare_exchange_n(&n->held, &was, now, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE));
	return now == 0;
}

void sv_forget(struct sv_container *c, uint32_t n, uint64_t count)
{
	pthread_rwlock_rdlock(&c->lock);
	bool go = sv_live(c, n) && unhold(&c->nodes[n], count) && sv_node_forgettable(c, n);
	pthread_rwlock_unlock(&c->lock);
	if (!go)
		return;
	sv_wrlock(c);
	/* Looked up again meanwhile, opened, edited: it stays. */
	if (sv_node_forgettable(c, n))
		sv_node_free(c, n);
	pthread_rwlock_unlock(&c->lock);
}

int sv_resolve(struct sv_container *c, const char *path, uint32_t *out)
{
	uint32_t n = SV_ROOT;
	char part[256];
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t k = strcspn(p, "/");
		if (k >= sizeof part)
			return -ENAMETOOLONG;
		memcpy(part, p, k);
		part[k] = '\0';
		int rc = sv_lookup(c, n, part, &n);
		if (rc)
			return rc;
		p += k;
	}
	*out = n;
	return 0;
}

/* A size that should be known by now is not: its settling failed for
 * the host's sake (sv_settle_size leaves it to the next look). */
static bool unsettled(const struct sv_inode *n)
{
	return (n->flags & SV_N_LAZYSIZE) &&
	       !(n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN)) &&
	       !__atomic_load_n(&n->sized, __ATOMIC_ACQUIRE);
}

int sv_stat(struct sv_container *c, uint32_t n, struct sv_stat *st)
{
	int rc = 0;
	pthread_rwlock_rdlock(&c->lock);
	if (!sv_usable(c, n)) {
		rc = sv_gone_code(c, n);
	} else {
		const struct sv_inode *node = &c->nodes[n];
		/* A stream whose size costs its whole decode (a timeline, a big
		 * chunk's text): a stat never waits for it.  Its size is found
		 * in the background; until then the last known (0 at first). */
		bool later = (node->flags & (SV_N_STREAM | SV_N_LAZYSIZE | SV_N_SIZE_ON_STAT |
					     SV_N_SIZE_AWAITED)) ==
				     (SV_N_STREAM | SV_N_LAZYSIZE | SV_N_SIZE_ON_STAT) &&
			     !(node->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN)) &&
			     !__atomic_load_n(&node->sized, __ATOMIC_ACQUIRE);
		if (later)
			sv_pf_settle(c, n);
		else
			sv_settle_size(c, n);
		/* Still not sized: the host failed (a server that did not
		 * answer; the reason is in the log).  Not a size of 0: an
		 * error, and the next stat asks again. */
		if (!later && unsettled(node))
			rc = -EIO;
		sv_settle_verify(c, n);
		sv_fill_stat(c, n, st);
		st->unsized = later;
		if (c->nodes[n].flags & SV_N_META) {
			struct sv_blob *b = NULL;
			rc = sv_meta_content(c, n, &b);
			if (!rc)
				st->size = b->len;
			sv_blob_unref(b);
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

/* A child's stat in a listing: a size that costs a decode is left for
 * its own stat (st->unsized). */
static void kid_stat(struct sv_container *c, uint32_t k, struct sv_stat *st)
{
	const struct sv_inode *kn = &c->nodes[k];
	bool costly = (kn->flags & (SV_N_LAZYSIZE | SV_N_SIZE_ON_STAT)) ==
			      (SV_N_LAZYSIZE | SV_N_SIZE_ON_STAT) &&
		      !(kn->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN)) &&
		      !__atomic_load_n(&kn->sized, __ATOMIC_ACQUIRE);
	if (!costly) {
		sv_settle_size(c, k);
		sv_settle_verify(c, k);
	}
	sv_fill_stat(c, k, st);
	st->unsized = costly || unsettled(kn); /* unsettled: the host failed */
	if (kn->flags & SV_N_META) {
		struct sv_blob *b = NULL;
		if (!sv_meta_content(c, k, &b))
			st->size = b->len;
		sv_blob_unref(b);
	}
}

/* Passes child k to fn; true to stop.  A client that keeps the entry
 * (SV_DIR_HELD) holds the node as a lookup would. */
static bool pass_kid(struct sv_container *c, uint32_t k, sv_dir_fn fn, void *arg, uint64_t next)
{
	struct sv_stat st;
	kid_stat(c, k, &st);
	int r = fn(arg, c->nodes[k].name, &st, next);
	if (r == SV_DIR_HELD)
		__atomic_add_fetch(&c->nodes[k].held, 1, __ATOMIC_ACQ_REL);
	return r && r != SV_DIR_HELD;
}

/* Positions of an index directory's listing past the format's own: its
 * files not yet in the container (created, temporary), by place in kids. */
#define EXTRA_POS (1ull << 62)

/* An index directory's listing: the format's entries, each a node only
 * if it is one already (or, with `make`, made one while the container has
 * room: write lock held then); then the files it does not know yet.  Read
 * lock held. */
static int readdir_index(struct sv_container *c, uint32_t dir, uint64_t from, sv_dir_fn fn,
			 void *arg, bool make)
{
	char name[256];
	uint64_t pos = from;
	/* What an entry that is no node shows: its kind, and the directory's
	 * owner and times (made once). */
	struct sv_stat unmade;
	sv_fill_stat(c, dir, &unmade);
	unmade.node = SV_NONE;
	unmade.id = SV_TREE_NONE;
	unmade.unmade = true;
	/* The budget once for the listing (the cache does not fill while
	 * it makes nodes). */
	uint32_t budget = make ? sv_node_budget(c) : 0;
	struct sv_stat file = unmade;
	file.dir = false;
	file.nlink = 1;
	file.mode = S_IFREG | (unmade.mode & 0444);
	bool full = false;
	while (pos < EXTRA_POS) {
		bool is_dir = false;
		uint64_t at = pos;
		sv_source_tree_begin();
		int r = SV_FMT(c->fmt, dirs, list)(c, dir, pos, name, &is_dir, &at);
		sv_source_tree_end();
		if (r < 0)
			return r;
		if (r || at >= EXTRA_POS - 1)
			break;
		uint32_t k = sv_find_child(c, dir, name);
		if (k == SV_NONE && make && c->nnodes - c->nfreed < budget) {
			k = sv_make_entry(c, dir, name);
			/* A made entry is a lookup in the format's index:
			 * counted as one as it is made (a listing with nodes
			 * makes hundreds in one request). */
			sv_tab_note(SV_TAB_LOOKUP);
		}
		if (k != SV_NONE) {
			if (pass_kid(c, k, fn, arg, at + 1))
				full = true;
		} else {
			int took = fn(arg, name, is_dir ? &unmade : &file, at + 1);
			full = took && took != SV_DIR_HELD;
		}
		if (full)
			break;
		pos = at + 1;
	}
	/* What the listing touched of the format's index counts toward
	 * shedding its spilled arrays. */
	sv_tab_note(pos < EXTRA_POS ? pos - from + full : 0);
	if (full)
		return 0;
	const struct sv_inode *d = &c->nodes[dir];
	for (uint64_t i = pos < EXTRA_POS ? 0 : pos - EXTRA_POS; i < d->nkids; i++) {
		uint32_t k = d->kids[i];
		if ((c->nodes[k].flags & (SV_N_NEW | SV_N_TEMP)) && !(c->nodes[k].flags & SV_N_UNLISTED) &&
		    pass_kid(c, k, fn, arg, EXTRA_POS + i + 1))
			break;
	}
	return 0;
}

/* sv_readdir, and sv_readdir_nodes with `make`. */
static int readdir_(struct sv_container *c, uint32_t dir, uint64_t from, sv_dir_fn fn,
		    void *arg, bool make)
{
	int rc = 0;
	pthread_rwlock_rdlock(&c->lock);
	if (sv_expand(c, dir)) {
		rc = -EIO;
	} else if (!sv_live(c, dir)) {
		rc = -ENOENT;
	} else if (!(c->nodes[dir].flags & SV_N_DIR)) {
		rc = -ENOTDIR;
	} else if ((c->nodes[dir].flags & SV_N_INDEXDIR) && SV_FMT(c->fmt, dirs, list)) {
		if (make && (c->nodes[dir].flags & SV_N_LIST_AS_NODES) && sv_node_room(c) &&
		    SV_FMT(c->fmt, dirs, lookup)) {
			/* Made entries change the table: the write lock, and
			 * the directory looked at again under it. */
			sv_lock_upgrade(c);
			make = !c->broken;
		} else {
			make = false;
		}
		if (!sv_live(c, dir)) {
			rc = -ENOENT;
		} else if ((rc = readdir_index(c, dir, from, fn, arg, make))) {
			struct sv_err e;
			sv_err_set(&e, rc, "its index could not be read");
			sv_log_failure(c, dir, "cannot list", &e);
			rc = -EIO;
		}
	} else {
		const struct sv_inode *d = &c->nodes[dir];
		for (uint64_t i = from; i < d->nkids; i++) {
			uint32_t k = d->kids[i];
			if (c->nodes[k].flags & SV_N_UNLISTED)
				continue;
			if (pass_kid(c, k, fn, arg, i + 1))
				break;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int sv_readdir(struct sv_container *c, uint32_t dir, uint64_t from,
	       sv_dir_fn fn, void *arg)
{
	return readdir_(c, dir, from, fn, arg, false);
}

int sv_readdir_nodes(struct sv_container *c, uint32_t dir, uint64_t from,
		     sv_dir_fn fn, void *arg)
{
	return readdir_(c, dir, from, fn, arg, true);
}


int sv_content(struct sv_container *c, uint32_t n, struct sv_blob **out,
	       struct sv_err *err)
{
	struct sv_err local;
	if (!err)
		err = &local;
	sv_err_clear(err);
	*out = NULL;
	pthread_rwlock_rdlock(&c->lock);
	bool plain = sv_live(c, n) && sv_plain_file(c, n);
	int rc = sv_usable(c, n) ? sv_content_locked(c, n, out, err) : -ENOENT;
	if (!rc && plain && c->opts.readahead)
		sv_pf_note_read(c, n);
	if (rc && rc != -ENOENT && rc != -EISDIR) {
		err->code = rc;
		sv_log_failure(c, n, "read", err);
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int sv_stored(struct sv_container *c, uint32_t n, uint64_t *out, struct sv_err *err)
{
	sv_err_clear(err);
	pthread_rwlock_rdlock(&c->lock);
	/* An edit not yet committed, or a file the container does not hold
	 * as stored: its stored bytes do not make it. */
	int rc = !c->fmt->stored || !sv_usable(c, n) ||
			 (c->nodes[n].flags & (SV_N_DIR | SV_N_META | SV_N_DIRTY | SV_N_NEW | SV_N_TEMP))
		 ? -ENOENT : c->fmt->stored(c, n, out, err);
	pthread_rwlock_unlock(&c->lock);
	if (!rc) {
		/* The format's name and view version go in: another's views of
		 * the same bytes are not these. */
		uint64_t v[3] = {*out, XXH3_64bits(c->fmt->name, strlen(c->fmt->name)),
				 c->fmt->view_version};
		*out = XXH3_64bits(v, sizeof v);
	}
	return rc;
}

int sv_read(struct sv_container *c, uint32_t n, uint64_t off, void *buf,
	    size_t size, size_t *got, struct sv_err *err)
{
	struct sv_blob *b;
	*got = 0;
	struct sv_err local;
	if (!err)
		err = &local;
	sv_err_clear(err);
	pthread_rwlock_rdlock(&c->lock);
	if (sv_usable(c, n) && (c->nodes[n].flags & SV_N_STREAM) &&
	    !(c->nodes[n].flags & SV_N_DIR) && SV_FMT(c->fmt, streams, read)) {
		int rc = SV_FMT(c->fmt, streams, read)(c, n, off, buf, size, got, err);
		if (rc)
			sv_log_failure(c, n, "read", err);
		/* A stream holds at least what was read of it: its stated size
		 * (the last known while the new one is found in the background)
		 * never falls behind a read, which a follower (tail -f) would
		 * take for a truncation and read again from the start. */
		uint64_t end = off + *got, was = __atomic_load_n(&c->nodes[n].size, __ATOMIC_RELAXED);
		while (!rc && end > was &&
		       !__atomic_compare_exchange_n(&c->nodes[n].size, &was, end, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		pthread_rwlock_unlock(&c->lock);
		return rc;
	}
	pthread_rwlock_unlock(&c->lock);
	int rc = sv_content(c, n, &b, err);
	if (rc)
		return rc;
	if (off < b->len) {
		size_t k = b->len - off < size ? (size_t)(b->len - off) : size;
		memcpy(buf, b->data + off, k);
		*got = k;
	}
	sv_blob_unref(b);
	return 0;
}

void sv_container_cache_stats(struct sv_container *c, struct sv_cache_stats *st)
{
	sv_cache_stats(c->cache, st);
}
