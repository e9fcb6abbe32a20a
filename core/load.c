/*
 * load.c - a node's content and what follows from it: the format's load()
 * run once per node and generation however many readers ask at once (the
 * kernel's parallel read-ahead, several readers, the read-ahead worker),
 * kept in the byte-capped cache, a failure's reason remembered; lazily
 * sized nodes sized by loading them; the digest that tells whether a
 * commit changed a node's bytes; a node's stat; a lazy directory
 * expanded; and the content an open file keeps when its node leaves the
 * tree.  Read lock held unless a comment says otherwise.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static bool writable(struct sv_container *c, const struct sv_inode *n)
{
	if (n->flags & SV_N_TEMP)
		return true;
	return !c->read_only && !(n->flags & (SV_N_RO | SV_N_META));
}

void sv_fill_stat(struct sv_container *c, uint32_t i, struct sv_stat *st)
{
	const struct sv_inode *n = &c->nodes[i];
	memset(st, 0, sizeof *st);
	st->node = i;
	st->id = i;
	st->dir = n->flags & SV_N_DIR;
	st->writable = writable(c, n);
	st->volatile_ = n->flags & SV_N_META;
	st->bad = (n->flags & SV_N_BAD) || sv_failed(n);
	st->stream = n->flags & SV_N_STREAM;
	st->direct = n->flags & SV_N_DIRECT;
	st->view = sv_view(n) && !c->read_only && c->commit != SV_COMMIT_NONE &&
		   c->commit != SV_COMMIT_APPEND;
	st->gen = n->gen;
	int64_t t = n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN) && n->etime_ns
			    ? n->etime_ns : __atomic_load_n(&n->mtime_ns, __ATOMIC_RELAXED);
	if (n->utime_ns)
		t = n->utime_ns;
	if (t)
		st->mtime = (struct timespec){t / 1000000000, t % 1000000000};
	else
		st->mtime = c->mtime0;
	st->atime = st->mtime;
	if (n->uatime_ns)
		st->atime = (struct timespec){n->uatime_ns / 1000000000, n->uatime_ns % 1000000000};
	/* Modes follow the container's own: who may read it may read its
	 * files, who may write it may write them (a 0600 container gives 0600
	 * files, owned by its owner); views and read-only mounts lose w, and
	 * directories get x where they have r. */
	uint32_t perm = (uint32_t)c->src->st.st_mode & 0666;
	st->uid = (uint32_t)c->src->st.st_uid;
	st->gid = (uint32_t)c->src->st.st_gid;
	if (st->dir) {
		bool w = !c->read_only && !(n->flags & SV_N_RO);
		uint32_t m = w ? perm : perm & ~0222u;
		st->mode = S_IFDIR | m | ((m & 0444) >> 2);
		/* An index directory does not know how many of its entries
		 * are directories without a node each: 1, as file systems
		 * that do not count them say. */
		st->nlink = n->flags & SV_N_INDEXDIR ? 1 : 2 + n->nsubdirs;
	} else {
		st->mode = S_IFREG | (st->writable ? perm : perm & ~0222u);
		st->nlink = n->flags & SV_N_ORPHAN ? 0 : 1;
		st->size = __atomic_load_n(&n->size, __ATOMIC_RELAXED);
	}
}

/* Lets the format add the entries of a lazy directory; called with the
 * read lock held, which is dropped and taken again.  0, or -EIO if the
 * format failed (the directory then stays empty). */
int sv_expand(struct sv_container *c, uint32_t dir)
{
	if (dir >= c->nnodes)
		return 0;
	if ((c->nodes[dir].flags & (SV_N_DIR | SV_N_BAD)) == (SV_N_DIR | SV_N_BAD))
		return -EIO; /* its entries could not be read */
	if (!(c->nodes[dir].flags & SV_N_LAZYDIR))
		return 0;
	sv_lock_upgrade(c);
	int rc = 0;
	struct sv_inode *d = &c->nodes[dir];
	if (sv_live(c, dir) && (d->flags & SV_N_LAZYDIR)) {
		struct sv_err e;
		sv_err_clear(&e);
		d->flags &= ~SV_N_LAZYDIR;
		sv_source_tree_begin();
		rc = SV_FMT(c->fmt, dirs, expand) ? SV_FMT(c->fmt, dirs, expand)(c, dir, &e) : 0;
		sv_source_tree_end();
		if (rc) {
			c->nodes[dir].flags |= SV_N_BAD;
			sv_log_failure(c, dir, "cannot list", &e);
		}
	}
	if (dir < c->nnodes && (c->nodes[dir].flags & SV_N_BAD))
		rc = -EIO;
	sv_lock_downgrade(c);
	return rc;
}

static void remember_failure(struct sv_container *c, uint32_t i, const struct sv_err *err);

/* Settles the size of an SV_N_LAZYSIZE node by loading it; read lock held. */
void sv_settle_size(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	if (!(n->flags & SV_N_LAZYSIZE) || (n->flags & (SV_N_DIRTY | SV_N_NEW |
	    SV_N_TEMP | SV_N_ORPHAN)) || __atomic_load_n(&n->sized, __ATOMIC_ACQUIRE))
		return;
	struct sv_blob *b = NULL;
	struct sv_err e;
	sv_err_clear(&e);
	uint64_t size = 0, digest = 0;
	/* A failure of the host (a server that did not answer) settles
	 * nothing: the next look tries again. */
	uint64_t host = sv_source_failures(c->src);
	bool failed = false;
	if ((n->flags & SV_N_STREAM) && SV_FMT(c->fmt, streams, size)) {
		if (SV_FMT(c->fmt, streams, size)(c, i, &size, &e)) {
			size = 0;
			failed = true;
			if (host == sv_source_failures(c->src))
				remember_failure(c, i, &e);
			sv_log_failure(c, i, "read", &e);
		}
	} else if (!(n->flags & SV_N_BAD) && !sv_failed(n) &&
		   sv_kept_size(c, i, &size, &digest)) {
		/* Learned by an earlier mount of the container as it is. */
		if (!__atomic_load_n(&n->dstate, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&n->digest, digest, __ATOMIC_RELAXED);
			__atomic_store_n(&n->dstate, SV_D_KNOWN, __ATOMIC_RELEASE);
		}
	} else if (!sv_content_locked(c, i, &b, &e)) {
		size = b->len;
	} else {
		failed = true;
		sv_log_failure(c, i, "read", &e); /* once: it is remembered */
	}
	sv_blob_unref(b);
	if (failed && host != sv_source_failures(c->src))
		return;
	__atomic_store_n(&n->size, size, __ATOMIC_RELAXED);
	__atomic_store_n(&n->sized, 1, __ATOMIC_RELEASE);
}

/*
 * Node i's stored content was loaded (b; NULL: it could not be made): its
 * digest is remembered, and a node a commit may have changed learns here
 * whether it did.  Called by the one thread that loaded it (load_shared),
 * read or write lock held: the fields are written atomically.
 */
static void note_loaded(struct sv_inode *n, const struct sv_blob *b, uint64_t h)
{
	uint32_t st = __atomic_load_n(&n->dstate, __ATOMIC_ACQUIRE);
	/* (A time a client set is kept: the commit cleared it where due.) */
	if ((st & SV_D_VERIFY) && (!b || !(st & SV_D_KNOWN) || h != n->digest))
		__atomic_store_n(&n->mtime_ns, n->vtime_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&n->digest, h, __ATOMIC_RELAXED);
	__atomic_store_n(&n->dstate, b ? SV_D_KNOWN : 0, __ATOMIC_RELEASE);
}

void sv_settle_verify(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	if (!(__atomic_load_n(&n->dstate, __ATOMIC_ACQUIRE) & SV_D_VERIFY) ||
	    (n->flags & (SV_N_DIR | SV_N_META | SV_N_STREAM | SV_N_DIRTY | SV_N_NEW |
			 SV_N_TEMP | SV_N_ORPHAN)))
		return;
	struct sv_blob *b = NULL;
	struct sv_err e;
	sv_err_clear(&e);
	if (sv_content_locked(c, i, &b, &e) == -ENOMEM)
		return;
	sv_blob_unref(b);
	/* A failure remembered from before this commit's load: changed. */
	if (__atomic_load_n(&n->dstate, __ATOMIC_ACQUIRE) & SV_D_VERIFY)
		note_loaded(n, NULL, 0);
}

uint64_t sv_cache_key(const struct sv_inode *n, uint32_t i)
{
	return (uint64_t)(n->gen & 0x7fffffff) << 32 | i;
}

/* Content of node i; called with the lock held (read or write). */
static int load_shared(struct sv_container *c, uint32_t i, uint64_t key,
		       struct sv_blob **out, struct sv_err *err);

static int stream_whole(struct sv_container *c, uint32_t i, struct sv_blob **out,
			struct sv_err *err);

int sv_content_locked(struct sv_container *c, uint32_t i,
			  struct sv_blob **out, struct sv_err *err)
{
	struct sv_inode *n = &c->nodes[i];
	if (n->flags & SV_N_DIR)
		return sv_err_set(err, -EISDIR, "is a directory");
	if (n->flags & SV_N_META)
		return sv_meta_content(c, i, out);
	if (c->broken)
		return sv_err_set(err, -EIO, "the container could not be read again after "
				  "a commit: remount it");
	if ((n->flags & SV_N_STREAM) && SV_FMT(c->fmt, streams, read))
		return stream_whole(c, i, out, err);
	if (n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN)) {
		/* A copy of the edit, cached until the next write changes gen,
		 * so that reading an edited file back is linear, not quadratic. */
		uint64_t key = sv_cache_key(n, i) | EDIT_KEY;
		*out = sv_cache_get(c->cache, key);
		if (*out)
			return 0;
		*out = sv_blob_dup(n->pending.p, n->pending.len);
		if (!*out)
			return sv_err_set(err, -ENOMEM, "out of memory");
		sv_cache_put(c->cache, key, *out);
		return 0;
	}
	if (n->flags & SV_N_BAD) {
		struct sv_err e2;
		sv_err_clear(&e2);
		c->fmt->load(c, i, out, &e2);
		sv_blob_unref(*out);
		*out = NULL;
		return sv_err_set(err, -EIO, "%s", e2.msg[0] ? e2.msg : "malformed entry");
	}
	uint64_t key = sv_cache_key(n, i);
	*out = sv_cache_get(c->cache, key);
	if (*out)
		return 0;
	if (sv_failed(n)) {
		/* It failed before: the reason, not another decode. */
		struct sv_blob *why = sv_cache_get(c->cache, key | FAIL_KEY);
		if (why) {
			sv_err_set(err, -EIO, "%.*s", (int)why->len, (const char *)why->data);
			sv_blob_unref(why);
			return -EIO;
		}
	}
	return load_shared(c, i, key, out, err);
}

static void loading_put(struct loading *l)
{
	if (--l->refs == 0) {
		sv_blob_unref(l->blob);
		free(l);
	}
}

/*
 * Node i's content could not be made at its present generation: it reads
 * EIO with the reason whatever size it was believed to have (never an
 * empty file), and is not decoded again while its reason stays in the
 * cache.  Out of memory too: when the reason leaves the cache, it is
 * tried again.  Read (or write) lock held.
 */
static void remember_failure(struct sv_container *c, uint32_t i, const struct sv_err *err)
{
	struct sv_inode *n = &c->nodes[i];
	struct sv_blob *why = sv_blob_dup(err->msg, strlen(err->msg));
	if (why)
		sv_cache_put(c->cache, sv_cache_key(n, i) | FAIL_KEY, why);
	sv_blob_unref(why);
	__atomic_store_n(&n->failed, (n->gen & 0x7fffffff) + 1, __ATOMIC_RELEASE);
}

static struct loading *loading_of(struct sv_container *c, uint64_t key)
{
	struct loading *l = c->loads;
	while (l && l->key != key)
		l = l->next;
	return l;
}

/* Loads node i, or waits for the thread already loading it and shares
 * its result.  Read (or write) lock held. */
static int load_shared(struct sv_container *c, uint32_t i, uint64_t key,
		       struct sv_blob **out, struct sv_err *err)
{
	pthread_mutex_lock(&c->ld_lock);
	struct loading *l = loading_of(c, key);
	if (l) {
		l->refs++;
		while (!l->done)
			pthread_cond_wait(&c->ld_cond, &c->ld_lock);
		int rc = l->rc;
		if (rc)
			*err = l->err;
		else
			*out = sv_blob_ref(l->blob);
		loading_put(l);
		pthread_mutex_unlock(&c->ld_lock);
		return rc;
	}
	/* A load that ended between the caller's look at the cache and this
	 * lock put its blob there first: taken, not built again. */
	if ((*out = sv_cache_get(c->cache, key))) {
		pthread_mutex_unlock(&c->ld_lock);
		return 0;
	}
	l = calloc(1, sizeof *l);
	if (!l) {
		pthread_mutex_unlock(&c->ld_lock);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	l->key = key;
	l->refs = 1;
	l->next = c->loads;
	c->loads = l;
	pthread_mutex_unlock(&c->ld_lock);

	uint64_t host = sv_source_failures(c->src);
	/* Built by an earlier mount of the container as it is: read, not
	 * built again; else built, and kept for the next. */
	struct sv_kept_ticket t;
	uint64_t digest = 0;
	int rc = sv_kept_view(c, i, &t, out, &digest);
	bool built = false, logged = false;
	if (rc) {
		uint64_t said = sv_log_said(c);
		/* A view of a known size has its room made before it is built:
		 * the cache and the views being built fit its cap together. */
		const struct sv_inode *nd = &c->nodes[i];
		uint64_t room = !(nd->flags & SV_N_LAZYSIZE) ||
					__atomic_load_n(&nd->sized, __ATOMIC_ACQUIRE)
				? __atomic_load_n(&nd->size, __ATOMIC_RELAXED) : 0;
		if (room)
			sv_cache_reserve(c->cache, room);
		rc = c->fmt->load(c, i, out, err);
		if (room)
			sv_cache_unreserve(c->cache, room);
		if (!rc) {
			digest = XXH3_64bits((*out)->data, (*out)->len);
			built = true;
			logged = sv_log_said(c) != said;
		}
	}
	/* A known point: what the load touched of the spilled arrays is
	 * looked at, and shed past the window. */
	sv_tab_note(SV_TAB_LOOK_EVERY);
	/* A failure of the host (a server that did not answer) is not the
	 * entry's: the next read tries again. */
	bool transient = rc && host != sv_source_failures(c->src);
	if (rc != -ENOMEM && !transient)
		note_loaded(&c->nodes[i], rc ? NULL : *out, digest);
	if (rc) {
		*out = NULL;
		rc = rc == -ENOMEM || rc == -EFBIG ? rc : -EIO;
		err->code = rc;
		if (!transient)
			remember_failure(c, i, err);
	} else {
		sv_cache_put(c->cache, key, *out);
	}

	/* (Said before the readers have it: a look at the counts after their
	 * reads waits for it to be handed over.) */
	if (built)
		sv_kept_coming(&t);
	pthread_mutex_lock(&c->ld_lock);
	struct loading **pp = &c->loads;
	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
	l->done = true;
	l->rc = rc;
	l->err = *err;
	l->blob = rc ? NULL : sv_blob_ref(*out);
	loading_put(l);
	pthread_cond_broadcast(&c->ld_cond);
	pthread_mutex_unlock(&c->ld_lock);
	/* Kept for the next mount once those waiting for it have it (under
	 * the same lock as the load: still eligible). */
	if (built)
		sv_kept_built(c, i, &t, *out, digest, logged);
	return rc;
}


/* The whole of a stream node, read in pieces (for clients that want it
 * whole: the command line's cat and extract); read lock held. */
static int stream_whole(struct sv_container *c, uint32_t i, struct sv_blob **out,
			struct sv_err *err)
{
	if (SV_FMT(c->fmt, streams, size))
		sv_settle_size(c, i);
	if (sv_failed(&c->nodes[i])) {
		/* Its size could not be found: why, not an empty file. */
		struct sv_blob *why = sv_cache_get(c->cache, sv_cache_key(&c->nodes[i], i) | FAIL_KEY);
		sv_err_set(err, -EIO, "%.*s", why ? (int)why->len : 0, why ? (const char *)why->data
										  : "");
		sv_blob_unref(why);
		if (!err->msg[0])
			sv_err_set(err, -EIO, "its size could not be found");
		return -EIO;
	}
	/* Read atomically: a settling beside this one (the prefetcher's)
	 * may store the same size again. */
	uint64_t size = __atomic_load_n(&c->nodes[i].size, __ATOMIC_RELAXED);
	if (size > c->opts.max_decode)
		return sv_err_set(err, -EFBIG, "%llu bytes: more than the decode limit "
				  "(option maxdecode)", (unsigned long long)size);
	struct sv_blob *b = sv_blob_new((size_t)size);
	if (!b)
		return sv_err_set(err, -ENOMEM, "out of memory");
	size_t got = 0;
	int rc = SV_FMT(c->fmt, streams, read)(c, i, 0, b->data, (size_t)size, &got, err);
	if (!rc && got != size)
		rc = sv_err_set(err, -EIO, "read %zu bytes of %llu", got,
				(unsigned long long)size);
	if (rc) {
		sv_blob_unref(b);
		return rc;
	}
	*out = b;
	return 0;
}

/*
 * Node i has left the tree.  If files are open on it, it lives on as an
 * orphan, as an unlinked file does: its content (the pending edit, or a
 * copy of what it reads) stays in memory for those opens until the last
 * is released.  Otherwise its memory goes.  Write lock held; must run
 * before a commit replaces what the node's content is read from.
 */
void sv_orphan_or_free(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	sv_node_untold(c, i); /* (no longer the client's to drop) */
	if (__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE) && !(n->flags & SV_N_DIR)) {
		if (!(n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN))) {
			struct sv_blob *b = NULL;
			struct sv_err err;
			sv_buf_fini(&n->pending);
			/* While re-indexing, the format's state is the new
			 * container's: the old content was kept before. */
			if (c->snap)
				b = i < c->nsnap ? sv_blob_ref(c->snap[i]) : NULL;
			else if (sv_content_locked(c, i, &b, &err))
				b = NULL;
			if (b)
				sv_buf_add(&n->pending, b->data, b->len);
			sv_blob_unref(b);
		}
		n->flags = (n->flags & ~(SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_READY)) |
			   SV_N_GONE | SV_N_ORPHAN;
		n->size = n->pending.len;
		return;
	}
	n->flags = (n->flags & ~(SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_READY |
				 SV_N_ORPHAN)) | SV_N_GONE;
	sv_buf_fini(&n->pending);
	n->size = 0;
}

/* Removes a node from its directory and the hash; the number stays used. */
void sv_node_drop(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	sv_hash_remove(c, i);
	sv_kid_remove(c, &c->nodes[n->parent], i);
	sv_orphan_or_free(c, i);
}
