/*
 * access.c - the client side of the node table: lookups, stats, listings
 * and reads.  A node's content is loaded by the format once, shared by
 * concurrent readers, and kept in the byte-capped cache.
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
	if (!rc)
		__atomic_add_fetch(&c->nodes[n].opens, 1, __ATOMIC_ACQ_REL);
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
	bool last = n < c->nnodes &&
		    __atomic_sub_fetch(&c->nodes[n].opens, 1, __ATOMIC_ACQ_REL) == 0 &&
		    (c->nodes[n].flags & SV_N_ORPHAN);
	pthread_rwlock_unlock(&c->lock);
	if (!last)
		return;
	pthread_rwlock_wrlock(&c->lock);
	struct sv_inode *node = &c->nodes[n];
	if (!__atomic_load_n(&node->opens, __ATOMIC_ACQUIRE) && (node->flags & SV_N_ORPHAN)) {
		node->flags &= ~SV_N_ORPHAN;
		sv_buf_fini(&node->pending);
		node->size = 0;
	}
	pthread_rwlock_unlock(&c->lock);
}

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
		st->nlink = 2 + n->nsubdirs;
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
	pthread_rwlock_unlock(&c->lock);
	pthread_rwlock_wrlock(&c->lock);
	int rc = 0;
	struct sv_inode *d = &c->nodes[dir];
	if (sv_live(c, dir) && (d->flags & SV_N_LAZYDIR)) {
		struct sv_err e;
		sv_err_clear(&e);
		d->flags &= ~SV_N_LAZYDIR;
		rc = c->fmt->expand ? c->fmt->expand(c, dir, &e) : 0;
		if (rc) {
			c->nodes[dir].flags |= SV_N_BAD;
			sv_log_failure(c, dir, "cannot list", &e);
		}
	}
	if (dir < c->nnodes && (c->nodes[dir].flags & SV_N_BAD))
		rc = -EIO;
	pthread_rwlock_unlock(&c->lock);
	pthread_rwlock_rdlock(&c->lock);
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
	uint64_t size = 0;
	if ((n->flags & SV_N_STREAM) && c->fmt->size) {
		if (c->fmt->size(c, i, &size, &e)) {
			size = 0;
			remember_failure(c, i, &e);
			sv_log_failure(c, i, "read", &e);
		}
	} else if (!sv_content_locked(c, i, &b, &e))
		size = b->len;
	else
		sv_log_failure(c, i, "read", &e); /* once: it is remembered */
	sv_blob_unref(b);
	__atomic_store_n(&n->size, size, __ATOMIC_RELAXED);
	__atomic_store_n(&n->sized, 1, __ATOMIC_RELEASE);
}

/*
 * Node i's stored content was loaded (b; NULL: it could not be made): its
 * digest is remembered, and a node a commit may have changed learns here
 * whether it did.  Called by the one thread that loaded it (load_shared),
 * read or write lock held: the fields are written atomically.
 */
static void note_loaded(struct sv_inode *n, const struct sv_blob *b)
{
	uint32_t st = __atomic_load_n(&n->dstate, __ATOMIC_ACQUIRE);
	uint64_t h = b ? XXH3_64bits(b->data, b->len) : 0;
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
		note_loaded(n, NULL);
}

/* A name the table does not have: the format may make it (a file any
 * name of a pattern opens, not all of them listed).  Read lock held,
 * dropped and taken again.  0 and the node, or -ENOENT. */
static int sv_lookup_new(struct sv_container *c, uint32_t dir, const char *name, uint32_t *out)
{
	pthread_rwlock_unlock(&c->lock);
	pthread_rwlock_wrlock(&c->lock);
	int rc = -ENOENT;
	if (sv_live(c, dir) && !c->broken) {
		*out = sv_find_child(c, dir, name);
		if (*out != SV_NONE) {
			rc = 0;
		} else {
			struct sv_err e;
			sv_err_clear(&e);
			rc = c->fmt->lookup(c, dir, name, &e);
			if (!rc)
				*out = sv_find_child(c, dir, name);
			if (!rc && *out == SV_NONE)
				rc = -ENOENT;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	pthread_rwlock_rdlock(&c->lock);
	return rc;
}

int sv_lookup(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t *out)
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
		rc = c->fmt->lookup ? sv_lookup_new(c, dir, name, out) : -ENOENT;
	pthread_rwlock_unlock(&c->lock);
	return rc;
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
		bool later = (node->flags & (SV_N_STREAM | SV_N_LAZYSIZE | SV_N_COSTLYSIZE)) ==
				     (SV_N_STREAM | SV_N_LAZYSIZE | SV_N_COSTLYSIZE) &&
			     !(node->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN)) &&
			     !__atomic_load_n(&node->sized, __ATOMIC_ACQUIRE);
		if (later)
			sv_pf_settle(c, n);
		else
			sv_settle_size(c, n);
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

int sv_readdir(struct sv_container *c, uint32_t dir, uint64_t from,
	       sv_dir_fn fn, void *arg)
{
	int rc = 0;
	pthread_rwlock_rdlock(&c->lock);
	if (sv_expand(c, dir)) {
		rc = -EIO;
	} else if (!sv_live(c, dir)) {
		rc = -ENOENT;
	} else if (!(c->nodes[dir].flags & SV_N_DIR)) {
		rc = -ENOTDIR;
	} else {
		const struct sv_inode *d = &c->nodes[dir];
		for (uint64_t i = from; i < d->nkids; i++) {
			struct sv_stat st;
			uint32_t k = d->kids[i];
			const struct sv_inode *kn = &c->nodes[k];
			if (kn->flags & SV_N_UNLISTED)
				continue;
			bool costly = (kn->flags & (SV_N_LAZYSIZE | SV_N_COSTLYSIZE)) ==
					      (SV_N_LAZYSIZE | SV_N_COSTLYSIZE) &&
				      !(kn->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP |
						     SV_N_ORPHAN)) &&
				      !__atomic_load_n(&kn->sized, __ATOMIC_ACQUIRE);
			if (!costly) {
				sv_settle_size(c, k);
				sv_settle_verify(c, k);
			}
			sv_fill_stat(c, k, &st);
			st.unsized = costly;
			if (c->nodes[k].flags & SV_N_META) {
				struct sv_blob *b = NULL;
				if (!sv_meta_content(c, k, &b))
					st.size = b->len;
				sv_blob_unref(b);
			}
			if (fn(arg, c->nodes[k].name, &st, i + 1))
				break;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
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
	if ((n->flags & SV_N_STREAM) && c->fmt->read)
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

/* Loads node i, or waits for the thread already loading it and shares
 * its result.  Read (or write) lock held. */
static int load_shared(struct sv_container *c, uint32_t i, uint64_t key,
		       struct sv_blob **out, struct sv_err *err)
{
	pthread_mutex_lock(&c->ld_lock);
	struct loading *l = c->loads;
	while (l && l->key != key)
		l = l->next;
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

	int rc = c->fmt->load(c, i, out, err);
	if (rc != -ENOMEM)
		note_loaded(&c->nodes[i], rc ? NULL : *out);
	if (rc) {
		*out = NULL;
		rc = rc == -ENOMEM || rc == -EFBIG ? rc : -EIO;
		err->code = rc;
		remember_failure(c, i, err);
	} else {
		sv_cache_put(c->cache, key, *out);
	}

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
	return rc;
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

/* The whole of a stream node, read in pieces (for clients that want it
 * whole: the command line's cat and extract); read lock held. */
static int stream_whole(struct sv_container *c, uint32_t i, struct sv_blob **out,
			struct sv_err *err)
{
	if (c->fmt->size)
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
	uint64_t size = c->nodes[i].size;
	if (size > c->opts.max_decode)
		return sv_err_set(err, -EFBIG, "%llu bytes: more than the decode limit "
				  "(option maxdecode)", (unsigned long long)size);
	struct sv_blob *b = sv_blob_new((size_t)size);
	if (!b)
		return sv_err_set(err, -ENOMEM, "out of memory");
	size_t got = 0;
	int rc = c->fmt->read(c, i, 0, b->data, (size_t)size, &got, err);
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
	    !(c->nodes[n].flags & SV_N_DIR) && c->fmt->read) {
		int rc = c->fmt->read(c, n, off, buf, size, got, err);
		if (rc)
			sv_log_failure(c, n, "read", err);
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
