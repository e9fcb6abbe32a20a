/*
 * commit.c - the commit: pending edits are validated by the format, then
 * land as the container's commit kind says (a complete new container that
 * its source puts in place, or the format's own writes in place or to
 * members), under the source's lock and the guard's identity checks; then
 * the index is read again (every node is marked stale, the
 * format's open() finds each again by (parent, name) through sv_node_add(),
 * and nodes not found are removed, so node numbers survive commits).  Also
 * the changes made outside commits: direct writes and a followed container.
 *
 * What a commit changed: the nodes the format says (edited, touched, new,
 * derived from the whole, of another size), and every other view of the
 * same stored unit (the format's groups: a record's .tsv, .txt, .png and
 * keys/ file).  Each is reported to the client, whose caches of it go
 * before the call that committed returns.  Its mtime moves only if its
 * bytes did: a node whose content was loaded before (its digest known) is
 * compared at its next load; views of what the commit edits are hashed
 * before it, so that they have a digest.  A file written back with the
 * bytes it has commits nothing.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* ---- commit ------------------------------------------------------------ */

void sv_changed_add(struct changed_list *l, uint32_t i)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		uint32_t *p = realloc(l->v, cap * sizeof *p);
		if (!p)
			return;
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = i;
}

/* The format's commit() writes the new container to fd (rewrite()'s
 * callback). */
static int write_cb(void *arg, int fd, struct sv_err *err)
{
	struct sv_container *c = arg;
	return SV_FMT(c->fmt, edits, commit)(c, fd, err);
}

/* The last look before the new container lands. */
static int check_cb(void *arg, struct sv_err *err)
{
	return sv_guard_check(arg, "while the new file was written", err);
}

/*
 * Writes the new container and has the source put it in place (for a
 * file: beside the old one, swapped in; source/file.c), under the
 * container's lock (guard.c), with its identity checked before and again
 * just before the swap.  Write lock held.  On failure nothing at the
 * location changed.
 */
static int write_new(struct sv_container *c, struct sv_err *err)
{
	if (!c->src->ops->rewrite)
		return sv_err_set(err, -EROFS, "a %s cannot be written whole", c->src->ops->kind);
	int rc = sv_guard_lock(c, err);
	if (rc)
		return rc;
	rc = sv_guard_check(c, "since it was read", err);
	/* The format copies what it keeps from the old container's file. */
	if (!rc && c->src->fd < 0 && c->src->ops->localize)
		rc = c->src->ops->localize(c->src, err);
	if (!rc)
		rc = c->src->ops->rewrite(c->src, write_cb, check_cb, c, err);
	if (!rc) {
		c->rebuild = true;
		sv_guard_fingerprint(c, true);
	}
	sv_guard_unlock(c);
	return rc;
}

/*
 * The format writes the container itself, the way its game does, under the
 * container's lock and after the same identity check as a new file gets.
 * Write lock held.
 */
static int write_in_place(struct sv_container *c, struct sv_err *err)
{
	int rc = sv_guard_lock(c, err);
	if (rc)
		return rc;
	rc = sv_guard_check(c, "since it was read", err);
	if (!rc)
		rc = SV_FMT(c->fmt, edits, commit_in_place)(c, c->src->fd, err);
	if (!rc) {
		c->rebuild = true;
		int e = c->src->ops->held ? c->src->ops->held(c->src, &c->src->st) : 0;
		if (e)
			rc = sv_err_set(err, -EIO, "fstat: %s", strerror(-e));
		sv_guard_fingerprint(c, true);
	}
	sv_guard_unlock(c);
	return rc;
}

/*
 * A commit in place did not land: refused because another program
 * committed to the same file meanwhile (`other`), or failed part way (a
 * full disk, an I/O error).  The file is read again, so that the tree
 * shows what it holds now, and its identity is what is there now (what
 * savefs's own failed attempt left is not taken for another program's
 * change at the next commit).  Write lock held.
 */
static void read_again(struct sv_container *c, struct changed_list *changed, bool other)
{
	struct stat now;
	if (c->src->ops->look(c->src, &now) || now.st_dev != c->src->st.st_dev ||
	    now.st_ino != c->src->st.st_ino ||
	    (c->src->ops->held && c->src->ops->held(c->src, &c->src->st)))
		return;
	struct sv_err e;
	sv_err_clear(&e);
	if (sv_reindex(c, changed, &e)) {
		c->broken = true;
		sv_log(c, "re-reading %s failed: %s", c->path, e.msg);
		return;
	}
	sv_guard_fingerprint(c, true);
	if (other)
		sv_log(c, "%s was read again as another program left it", c->path);
	else
		sv_log(c, "%s was read again after the failed commit: the mount shows what it "
		       "holds", c->path);
}

/* When the container's content last changed: the file's mtime now. */
static int64_t commit_time(const struct sv_container *c)
{
	return (int64_t)c->src->st.st_mtim.tv_sec * 1000000000 + c->src->st.st_mtim.tv_nsec;
}

/* Node i's content changed now, as the container file has it. */
static void stamp(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	n->mtime_ns = commit_time(c);
	n->utime_ns = n->uatime_ns = 0;
}

void sv_mark_changed(struct sv_container *c, uint32_t i, bool edited)
{
	struct sv_inode *n = &c->nodes[i];
	/* A time the client set stays on the content it wrote, and goes when
	 * another view's edit changed the node. */
	if (!edited)
		n->utime_ns = n->uatime_ns = 0;
	if ((n->flags & (SV_N_DIR | SV_N_META | SV_N_STREAM)) || !(n->dstate & SV_D_KNOWN)) {
		n->dstate = 0;
		n->mtime_ns = commit_time(c);
	} else {
		n->vtime_ns = commit_time(c);
		n->dstate |= SV_D_VERIFY;
	}
}

/* A pending edit the next commit takes, or a removal it makes. */
static bool committing(const struct sv_inode *n)
{
	return ((n->flags & (SV_N_DIRTY | SV_N_NEW)) && (n->flags & SV_N_READY) &&
		!(n->flags & SV_N_GONE)) ||
	       (n->flags & (SV_N_GONE | SV_N_STALE)) == (SV_N_GONE | SV_N_STALE);
}

/* Reads the index again after a commit; write lock held.  Each pass over
 * the nodes costs a cache miss per node in a big tree: they are few. */
int sv_reindex(struct sv_container *c, struct changed_list *changed,
		   struct sv_err *err)
{
	uint32_t old_count = c->nnodes;
	uint32_t *old_gen = malloc((old_count ? old_count : 1) * sizeof *old_gen);
	uint8_t *edited = calloc(old_count ? old_count : 1, 1);
	if (!old_gen || !edited) {
		free(old_gen);
		free(edited);
		sv_u64set_clear(&c->tgroups);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	/* In one pass: what the commit changes (its edits and removals, and
	 * what the format touched: their groups, sorted, in c->tgroups), each
	 * node's generation, and every node the format made marked stale
	 * until it is found again. */
	bool indexed = false;
	for (uint32_t i = 0; i < old_count; i++) {
		struct sv_inode *n = &c->nodes[i];
		old_gen[i] = n->gen;
		edited[i] = committing(n);
		if (!i)
			continue;
		if (n->group && (edited[i] || (n->flags & SV_N_TOUCHED)))
			sv_group_touch(c, n->group);
		if (!(n->flags & (SV_N_GONE | SV_N_TEMP | SV_N_META)) && i != c->meta_dir &&
		    (!(n->flags & SV_N_NEW) || (n->flags & SV_N_READY)))
			n->flags |= SV_N_STALE;
		indexed |= (n->flags & (SV_N_INDEXDIR | SV_N_GONE)) == SV_N_INDEXDIR;
	}
	sv_u64set_sort(&c->tgroups);
	c->reindexing = true;
	c->relist = false;
	c->edited = edited;
	c->nedited = old_count;
	int rc;
	sv_source_tree_begin();
	if (c->rebuild && c->fmt->rebuild) {
		rc = c->fmt->rebuild(c, err);
	} else {
		c->fmt->close(c);
		c->priv = NULL;
		rc = c->fmt->open(c, err);
	}
	sv_source_tree_end();
	c->rebuild = false;
	/* A lazy directory that was listed before is listed again now, so that
	 * its entries keep their numbers (it still holds them, stale). */
	for (bool again = rc == 0 && c->relist; again;) {
		again = false;
		SV_EACH_NODE(c, i, 1) {
			struct sv_inode *n = &c->nodes[i];
			if ((n->flags & (SV_N_LAZYDIR | SV_N_STALE)) != SV_N_LAZYDIR || !n->nkids)
				continue;
			struct sv_err e;
			sv_err_clear(&e);
			n->flags &= ~SV_N_LAZYDIR;
			if (SV_FMT(c->fmt, dirs, expand) && SV_FMT(c->fmt, dirs, expand)(c, i, &e))
				c->nodes[i].flags |= SV_N_BAD;
			again = true;
		}
	}
	/* An index directory's entries are nodes only while the client holds
	 * them: each is asked for again by name, to keep its number. */
	SV_EACH_NODE(c, i, 1) {
		if (rc || !indexed || !SV_FMT(c->fmt, dirs, lookup))
			break;
		struct sv_inode *n = &c->nodes[i];
		if (!(n->flags & SV_N_STALE) || (n->flags & SV_N_GONE) || !n->name ||
		    !sv_live(c, n->parent) || (c->nodes[n->parent].flags & SV_N_STALE) ||
		    !(c->nodes[n->parent].flags & SV_N_INDEXDIR))
			continue;
		struct sv_err e;
		sv_err_clear(&e);
		char *name = strdup(n->name);
		if (name)
			SV_FMT(c->fmt, dirs, lookup)(c, n->parent, name, &e);
		free(name);
	}
	c->reindexing = false;
	c->edited = NULL;
	c->nedited = 0;
	uint32_t last_dir = SV_NONE;
	SV_EACH_NODE(c, i, 1) {
		struct sv_inode *n = &c->nodes[i];
		if (n->flags & SV_N_STALE) {
			sv_node_drop(c, i);
			n->flags &= ~SV_N_STALE;
			n->gen++;
			sv_changed_add(changed, i);
		} else if (i >= old_count || n->gen != old_gen[i] ||
			   (n->flags & SV_N_TOUCHED) ||
			   (!(n->flags & (SV_N_GONE | SV_N_DIR | SV_N_META | SV_N_TEMP)) &&
			    sv_u64set_has(&c->tgroups, n->group))) {
			/* Touched by a rebuild after it found the node again. */
			n->flags &= ~SV_N_TOUCHED;
			if (i < old_count && n->gen == old_gen[i]) {
				/* Another view of what changed: its size and
				 * bytes are found again. */
				n->gen++;
				if (n->flags & SV_N_LAZYSIZE)
					__atomic_store_n(&n->sized, 0, __ATOMIC_RELEASE);
			}
			sv_changed_add(changed, i);
			sv_mark_changed(c, i, i < old_count && edited[i]);
			/* A new entry changes its directory's listing. */
			if (i >= old_count && !(n->flags & SV_N_UNLISTED) && n->parent != last_dir)
				sv_changed_add(changed, last_dir = n->parent);
		} else if ((n->flags & (SV_N_INDEXDIR | SV_N_GONE)) == SV_N_INDEXDIR) {
			/* Whether an index directory's listing changed is not
			 * known without comparing it whole: the client's copy
			 * is dropped (its time stays unless the format touched
			 * it). */
			sv_changed_add(changed, i);
		}
	}
	sv_u64set_clear(&c->tgroups);
	free(old_gen);
	free(edited);
	sv_cache_drop(c->cache, 0, 0);
	return rc;
}

/* Drops node i's pending edit; write lock held. */
/* Ends node i's edit: it reads as stored again; `dropped`: the edit is
 * lost (its writers must not go on), not merely done with. */
static void end_edit(struct sv_container *c, uint32_t i, bool dropped)
{
	struct sv_inode *n = &c->nodes[i];
	if (dropped && (n->flags & (SV_N_NEW | SV_N_DIRTY)))
		__atomic_add_fetch(&n->drops, 1, __ATOMIC_RELEASE);
	if (n->flags & SV_N_NEW) {
		sv_node_drop(c, i);
		n->gen++;
		return;
	}
	if (n->flags & SV_N_DIRTY) {
		n->flags &= ~(SV_N_DIRTY | SV_N_READY);
		sv_buf_fini(&n->pending);
		n->size = n->stored_size;
		__atomic_store_n(&n->sized, 0, __ATOMIC_RELEASE); /* a lazy size is found again */
		n->gen++;
	}
}

void sv_discard_locked(struct sv_container *c, uint32_t i)
{
	end_edit(c, i, true);
}

int sv_view_same(struct sv_container *c, uint32_t i, const uint8_t *p, size_t len,
		 struct sv_err *err)
{
	struct sv_blob *b = NULL;
	struct sv_err e;
	sv_err_clear(&e);
	int rc = c->fmt->load(c, i, &b, &e);
	if (rc)
		rc = sv_err_set(err, -EIO, "%s", e.msg[0] ? e.msg : "cannot be read");
	else if (b->len != len || (len && memcmp(b->data, p, len)))
		rc = sv_err_set(err, -EPERM, "this file is a view of the container: it cannot be "
				"written, except with the very bytes it shows");
	sv_blob_unref(b);
	return rc;
}

/* True if node i's pending edit holds exactly the bytes it has stored: a
 * file written back as it was (a restore, a copy of an unchanged tree)
 * commits nothing.  Write lock held. */
static bool same_as_stored(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	if ((n->flags & (SV_N_NEW | SV_N_GONE | SV_N_STREAM | SV_N_BAD)) ||
	    !(n->flags & SV_N_DIRTY))
		return false;
	if ((n->dstate & (SV_D_KNOWN | SV_D_VERIFY)) == SV_D_KNOWN &&
	    XXH3_64bits(n->pending.p, n->pending.len) != n->digest)
		return false;
	struct sv_blob *b = NULL;
	struct sv_err e;
	sv_err_clear(&e);
	bool same = !c->fmt->load(c, i, &b, &e) && b->len == n->pending.len &&
		    (!b->len || !memcmp(b->data, n->pending.p, b->len));
	sv_blob_unref(b);
	return same;
}

/*
 * Before a commit, in one pass over the nodes:
 * - every view of what it changes whose bytes were never loaded (so that
 *   its digest is not known) is hashed now, while the old content can
 *   still be read, so that afterwards its mtime moves only if its bytes
 *   did: views of the edited units (their groups) and the container's
 *   cheap derived views; a derived view that costs a decode of the whole
 *   container (COSTLYSIZE) is not;
 * - open files the commit may remove keep the content they had: it is
 *   read now, into c->snap, while the format can still read the old file.
 * Write lock held.
 */
static void before_write(struct sv_container *c, struct sv_u64set *g)
{
	sv_u64set_sort(g);
	for (uint32_t i = 1; i < c->nsnap; i++) {
		struct sv_inode *n = &c->nodes[i];
		struct sv_err e;
		bool cheap_derived = (n->flags & (SV_N_DERIVED | SV_N_SIZE_ON_STAT)) == SV_N_DERIVED;
		if (!(n->flags & (SV_N_GONE | SV_N_DIR | SV_N_META | SV_N_STREAM | SV_N_DIRTY |
				  SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN | SV_N_BAD)) &&
		    !(n->dstate & SV_D_KNOWN) &&
		    (cheap_derived || sv_u64set_has(g, n->group))) {
			struct sv_blob *b = NULL;
			if (!sv_content_locked(c, i, &b, &e))
				sv_blob_unref(b);
		}
		if (__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE) &&
		    !(n->flags & (SV_N_DIR | SV_N_META | SV_N_DIRTY | SV_N_NEW | SV_N_TEMP |
				  SV_N_ORPHAN | SV_N_GONE)) &&
		    sv_content_locked(c, i, &c->snap[i], &e))
			c->snap[i] = NULL;
	}
}

/* Validates every pending edit, dropping those refused; write lock held.
 * *left: whether anything is still to be written; g: its groups. */
static int validate(struct sv_container *c, struct changed_list *changed, bool *left,
		    struct sv_u64set *g, struct sv_err *err)
{
	int rc = 0;
	*left = false;
	SV_EACH_NODE(c, i, 1) {
		struct sv_inode *n = &c->nodes[i];
		if ((n->flags & (SV_N_GONE | SV_N_STALE)) == (SV_N_GONE | SV_N_STALE)) {
			*left = true; /* a removal */
			sv_u64set_add(g, n->group);
			continue;
		}
		if (!(n->flags & (SV_N_DIRTY | SV_N_NEW)) || !(n->flags & SV_N_READY))
			continue;
		struct sv_err e;
		sv_err_clear(&e);
		int r = 0;
		if (n->flags & SV_N_RO) {
			/* A view written with the bytes it shows: nothing to do. */
			r = sv_view_same(c, i, n->pending.p, n->pending.len, &e);
			if (!r) {
				end_edit(c, i, false);
				sv_changed_add(changed, i);
				continue;
			}
		} else if (same_as_stored(c, i)) {
			end_edit(c, i, false);
			sv_changed_add(changed, i);
			continue;
		} else if (SV_FMT(c->fmt, edits, check)) {
			r = SV_FMT(c->fmt, edits, check)(c, i, n->pending.p, n->pending.len, &e);
		}
		if (!r) {
			if (!(n->flags & SV_N_GONE)) {
				*left = true;
				sv_u64set_add(g, n->group);
			}
			continue;
		}
		e.code = r;
		sv_log_failure(c, i, "refused", &e);
		sv_discard_locked(c, i);
		sv_changed_add(changed, i);
		if (!rc) {
			rc = r;
			*err = e;
		}
	}
	return rc;
}

static bool anything_pending(struct sv_container *c)
{
	SV_EACH_NODE(c, i, 1)
		if (((c->nodes[i].flags & (SV_N_DIRTY | SV_N_NEW)) &&
		     (c->nodes[i].flags & SV_N_READY)) ||
		    (c->nodes[i].flags & (SV_N_GONE | SV_N_STALE)) == (SV_N_GONE | SV_N_STALE))
			return true;
	return false;
}

/* Commits with the write lock held. */
/*
 * A commit failed: every edit it was to write is dropped, so that each file
 * reads as stored again, nothing is tried again behind the user's back and
 * the next commit of another file is not held up by it.  The reason is
 * logged once per file.  Write lock held.
 */
static void drop_ready(struct sv_container *c, struct changed_list *changed,
		       const struct sv_err *err)
{
	bool named = false;
	SV_EACH_NODE(c, i, 1) {
		struct sv_inode *n = &c->nodes[i];
		if (!(n->flags & (SV_N_DIRTY | SV_N_NEW)) || !(n->flags & SV_N_READY) ||
		    (n->flags & SV_N_GONE))
			continue;
		sv_log_failure(c, i, "not written", err);
		sv_discard_locked(c, i);
		sv_changed_add(changed, i);
		named = true;
	}
	if (!named) /* a removal: its caller puts the entry back */
		sv_log(c, "commit failed: %s", err->msg);
}

/* Commits with the write lock held. */
static int commit_locked(struct sv_container *c, struct changed_list *changed,
			 struct sv_err *err)
{
	if (!anything_pending(c))
		return 0;
	int rc = 0;
	if (c->read_only)
		rc = sv_err_set(err, -EROFS, "the container is mounted read-only");
	else if (c->broken)
		rc = sv_err_set(err, -EIO, "the container could not be read again after "
				"a commit: remount it");
	/* As the format declared for this layout: a new file swapped in, or
	 * the container changed in place (its blocks, or its members). */
	bool in_place = c->commit == SV_COMMIT_IN_PLACE || c->commit == SV_COMMIT_MEMBERS;
	if (!rc && c->commit != SV_COMMIT_REWRITE && !in_place)
		rc = sv_err_set(err, -EROFS, "edits of this container land as they are written");
	if (rc) {
		drop_ready(c, changed, err);
		return rc;
	}
	bool left;
	struct sv_u64set g = {0};
	rc = validate(c, changed, &left, &g, err);
	if (rc || !left) {
		sv_u64set_fini(&g);
		return rc;
	}
	uint32_t count = c->nnodes;
	c->snap = calloc(count ? count : 1, sizeof *c->snap);
	if (!c->snap) {
		sv_u64set_fini(&g);
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		drop_ready(c, changed, err);
		return rc;
	}
	c->nsnap = count;
	before_write(c, &g);
	sv_u64set_fini(&g);
	/* What the format touches is this commit's alone (one refused
	 * before its re-index left its touches). */
	sv_u64set_clear(&c->tgroups);
	rc = in_place ? write_in_place(c, err) : write_new(c, err);
	bool written = rc == 0;
	if (!written)
		drop_ready(c, changed, err);
	else
		rc = sv_reindex(c, changed, err);
	if (!written && in_place)
		read_again(c, changed, rc == -EBUSY);
	for (uint32_t i = 1; i < count; i++)
		sv_blob_unref(c->snap[i]);
	free(c->snap);
	c->snap = NULL;
	c->nsnap = 0;
	if (written && rc) {
		c->broken = true;
		sv_log(c, "re-reading the committed container failed: %s", err->msg);
	} else if (written) {
		sv_log(c, "committed %s", c->path);
	}
	return rc;
}

int sv_commit_and_notify(struct sv_container *c, sv_changed_fn fn, void *arg,
			     struct sv_err *err, int (*pre)(struct sv_container *, void *,
							    struct sv_err *), void *pre_arg)
{
	struct changed_list changed = {0};
	struct sv_err local;
	if (!err)
		err = &local;
	sv_err_clear(err);
	sv_wrlock(c);
	int rc = pre ? pre(c, pre_arg, err) : 0;
	if (rc == 1)
		rc = 0; /* nothing to commit */
	else if (!rc)
		rc = commit_locked(c, &changed, err);
	/* Report names while still locked; the callback must not call back. */
	for (size_t k = 0; fn && k < changed.n; k++) {
		struct sv_inode *n = &c->nodes[changed.v[k]];
		fn(arg, changed.v[k], n->parent, n->name, n->flags & SV_N_GONE);
	}
	pthread_rwlock_unlock(&c->lock);
	free(changed.v);
	return rc;
}

static int pre_commit_all(struct sv_container *c, void *arg, struct sv_err *err)
{
	SV_EACH_NODE(c, i, 1)
		if (c->nodes[i].flags & (SV_N_DIRTY | SV_N_NEW) && !(c->nodes[i].flags & SV_N_GONE))
			c->nodes[i].flags |= SV_N_READY;
	return 0;
}

int sv_commit(struct sv_container *c, sv_changed_fn fn, void *arg,
	      struct sv_err *err)
{
	return sv_commit_and_notify(c, fn, arg, err, pre_commit_all, NULL);
}

/* Only this node's edit is ready: others may still be half-written. */
static int pre_flush(struct sv_container *c, void *arg, struct sv_err *err)
{
	uint32_t i = *(uint32_t *)arg;
	if (!sv_live(c, i) || !(c->nodes[i].flags & (SV_N_DIRTY | SV_N_NEW)))
		return 1;
	c->nodes[i].flags |= SV_N_READY;
	return 0;
}

int sv_flush(struct sv_container *c, uint32_t n, sv_changed_fn fn, void *arg,
	     struct sv_err *err)
{
	struct sv_err local;
	if (!err)
		err = &local;
	sv_err_clear(err);
	sv_wrlock(c);
	uint32_t count = c->nnodes;
	if (sv_direct(c, n))
		return sv_direct_end(c, n, count, SV_FMT(c->fmt, live, sync) ? SV_FMT(c->fmt, live, sync)(c, n, err) : 0, err);
	pthread_rwlock_unlock(&c->lock);
	return sv_commit_and_notify(c, fn, arg, err, pre_flush, &n);
}

/* ---- changes made outside commits -------------------------------------- */

void sv_container_set_notify(struct sv_container *c, sv_changed_fn fn, void *arg)
{
	c->notify = fn;
	c->notify_arg = arg;
}

bool sv_container_follows(const struct sv_container *c)
{
	return c->fmt && ((SV_FMT(c->fmt, live, refresh) && (c->src->ops->held || c->src->ops->digest)) ||
			  c->src->ops->stale);
}

uint64_t sv_container_follow_ns(const struct sv_container *c)
{
	unsigned ms = c->src->ops->follow_ms;
	return (uint64_t)(ms ? ms : 200) * 1000000u;
}

/* A write or truncation of an SV_N_DIRECT node; write lock held. */
bool sv_direct(struct sv_container *c, uint32_t i)
{
	return sv_live(c, i) && (c->nodes[i].flags & SV_N_DIRECT) && !c->read_only &&
	       c->commit == SV_COMMIT_APPEND;
}

/* Ends a direct write, truncation or sync of node i that returned rc,
 * with the nodes numbered from count on new: the tree follows, a refusal
 * is logged, and the write lock is let go. */
int sv_direct_end(struct sv_container *c, uint32_t i, uint32_t count, int rc,
		      struct sv_err *err)
{
	rc = sv_direct_done(c, count, rc, err);
	if (rc)
		sv_log_failure(c, i, "refused", err);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

/*
 * After a direct write or a refresh (write lock held): rc 1 reads the whole
 * index again; otherwise the nodes added since old_count and those the
 * format touched get a new generation.  Either way the client hears of
 * them (a new node with its directory, whose listing changed).  Returns 0
 * or the error.
 */
int sv_direct_done(struct sv_container *c, uint32_t old_count, int rc,
		       struct sv_err *err)
{
	struct changed_list changed = {0};
	if (rc < 0)
		return rc;
	if (c->src->ops->held)
		c->src->ops->held(c->src, &c->src->st);
	if (rc == 1) {
		rc = sv_reindex(c, &changed, err);
		if (rc) {
			c->broken = true;
			sv_log(c, "re-reading %s failed: %s", c->path, err->msg);
		}
	} else {
		uint32_t last_dir = SV_NONE;
		SV_EACH_NODE(c, i, 1) {
			struct sv_inode *n = &c->nodes[i];
			if (n->flags & SV_N_TOUCHED) {
				n->flags &= ~SV_N_TOUCHED;
				n->gen++;
				__atomic_store_n(&n->sized, 0, __ATOMIC_RELEASE);
				sv_changed_add(&changed, i);
				stamp(c, i);
			} else if (i >= old_count && !(n->flags & SV_N_GONE)) {
				sv_changed_add(&changed, i);
				stamp(c, i);
				if (n->parent != last_dir)
					sv_changed_add(&changed, last_dir = n->parent);
			}
		}
	}
	for (size_t k = 0; c->notify && k < changed.n; k++) {
		struct sv_inode *n = &c->nodes[changed.v[k]];
		c->notify(c->notify_arg, changed.v[k], n->parent, n->name,
			  n->flags & SV_N_GONE);
	}
	free(changed.v);
	return rc;
}

int sv_container_poll(struct sv_container *c, struct sv_err *err)
{
	struct sv_err local;
	if (!err)
		err = &local;
	sv_err_clear(err);
	if (!sv_container_follows(c))
		return 0;
	struct stat now;
	bool same;
	if (c->src->ops->stale) {
		/* An object that changed on its server: read again whole, as a
		 * file replaced (its open files' reads fail: none mixes the two). */
		if (!c->src->ops->stale(c->src))
			return 0;
		sv_wrlock(c);
		int rc = 0;
		if (!c->broken && c->src->ops->stale(c->src)) {
			uint32_t count = c->nnodes;
			rc = c->src->ops->reopen(c->src, err);
			if (!rc) {
				c->rebuild = false;
				rc = sv_direct_done(c, count, 1, err);
			}
			if (rc)
				sv_log(c, "reading %s again: %s", c->path, err->msg);
			else
				sv_log(c, "%s was read again as it is on the server now", c->path);
		}
		pthread_rwlock_unlock(&c->lock);
		return rc;
	}
	if (c->src->ops->digest) {
		/* Its members' digest: the first poll takes it and asks the
		 * format (what changed since the open is not known). */
		uint64_t d;
		struct sv_err e;
		if (c->src->ops->digest(c->src, &d, &e))
			return 0; /* a store not answering: looked at again later */
		pthread_rwlock_rdlock(&c->lock);
		same = c->digested && d == c->digest;
		pthread_rwlock_unlock(&c->lock);
		if (same)
			return 0;
		sv_wrlock(c);
		c->digest = d;
		c->digested = true;
		pthread_rwlock_unlock(&c->lock);
	} else {
		pthread_rwlock_rdlock(&c->lock);
		const struct stat *was = &c->src->st;
		same = !c->src->ops->held(c->src, &now) && now.st_size == was->st_size &&
		       now.st_mtim.tv_sec == was->st_mtim.tv_sec &&
		       now.st_mtim.tv_nsec == was->st_mtim.tv_nsec;
		pthread_rwlock_unlock(&c->lock);
		if (same)
			return 0;
	}
	sv_wrlock(c);
	int rc = 0;
	if (!c->broken) {
		uint32_t count = c->nnodes;
		int r = SV_FMT(c->fmt, live, refresh)(c, err);
		/* A re-read the format asked for: it may rebuild from what
		 * it holds (what did not change need not be decoded again). */
		c->rebuild = r == 1;
		rc = sv_direct_done(c, count, r, err);
		c->rebuild = false;
		if (rc)
			sv_log(c, "following %s: %s", c->path, err->msg);
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}
