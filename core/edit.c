/*
 * edit.c - pending edits: writes and truncations land in a node's pending
 * buffer; creating, removing and renaming files.  Removals and renames onto
 * container entries are committed at once (commit.c).
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- edits ------------------------------------------------------------- */



static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Checks node i can be edited; called with the write lock held. */
static int can_edit(struct sv_container *c, uint32_t i, struct sv_err *err)
{
	if (!sv_usable(c, i))
		return sv_err_set(err, -ENOENT, "no such file");
	struct sv_inode *n = &c->nodes[i];
	if (n->flags & SV_N_DIR)
		return sv_err_set(err, -EISDIR, "is a directory");
	if (n->flags & (SV_N_TEMP | SV_N_ORPHAN))
		return 0; /* in memory only */
	if (c->read_only)
		return sv_err_set(err, -EROFS, "the container is mounted read-only");
	if ((n->flags & SV_N_META) || ((n->flags & SV_N_RO) && !sv_view(n)))
		return sv_err_set(err, -EPERM, "this file is a read-only view");
	if (n->flags & SV_N_DIRECT)
		return sv_err_set(err, -EPERM, "this file can only be appended to, at its end");
	if (c->commit == SV_COMMIT_NONE || c->commit == SV_COMMIT_APPEND)
		return sv_err_set(err, -EPERM, "this file is a read-only view");
	return 0;
}

/* Makes node i's pending buffer hold its current content. */
static int begin_edit(struct sv_container *c, uint32_t i, struct sv_err *err)
{
	struct sv_inode *n = &c->nodes[i];
	if (n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN))
		return 0;
	struct sv_blob *b = NULL;
	int rc = sv_content_locked(c, i, &b, err);
	if (rc)
		return rc;
	sv_buf_fini(&n->pending);
	rc = sv_buf_add(&n->pending, b->data, b->len);
	sv_blob_unref(b);
	if (rc)
		return sv_err_set(err, rc, "out of memory");
	n->flags |= SV_N_DIRTY;
	return 0;
}

static int resize_pending(struct sv_container *c, struct sv_inode *n,
			  uint64_t size, struct sv_err *err)
{
	if (size > c->opts.max_edit)
		return sv_err_set(err, -EFBIG,
				  "an edited file may hold at most %llu bytes (option maxedit)",
				  (unsigned long long)c->opts.max_edit);
	if (size > n->pending.len) {
		size_t grow = (size_t)(size - n->pending.len);
		if (sv_buf_reserve(&n->pending, grow))
			return sv_err_set(err, -ENOMEM, "out of memory");
		memset(n->pending.p + n->pending.len, 0, grow);
	}
	n->pending.len = (size_t)size;
	n->size = size;
	return 0;
}



int sv_write(struct sv_container *c, uint32_t i, uint64_t off, const void *buf,
	     size_t size, struct sv_err *err)
{
	sv_err_clear(err);
	sv_wrlock(c);
	uint32_t count = c->nnodes; /* before the call: it may add nodes */
	if (sv_direct(c, i))
		return sv_direct_end(c, i, count, SV_FMT(c->fmt, live, write)(c, i, off, buf, size, err), err);
	int rc = can_edit(c, i, err);
	if (!rc)
		rc = begin_edit(c, i, err);
	if (!rc && off == SV_AT_END)
		off = c->nodes[i].pending.len;
	if (!rc && off + size < off)
		rc = sv_err_set(err, -EFBIG, "offset too large");
	struct sv_inode *n = &c->nodes[i];
	if (!rc && off + size > n->pending.len) {
		rc = resize_pending(c, n, off + size, err);
		if (rc && !(n->flags & (SV_N_TEMP | SV_N_ORPHAN))) {
			/* A file cut short by a limit must not be committed. */
			sv_log_failure(c, i, "refused", err);
			sv_discard_locked(c, i);
		}
	}
	if (!rc && size)
		memcpy(n->pending.p + off, buf, size);
	if (!rc) {
		n->gen++;
		n->etime_ns = now_ns();
		n->utime_ns = n->uatime_ns = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int sv_truncate(struct sv_container *c, uint32_t i, uint64_t size,
		struct sv_err *err)
{
	sv_err_clear(err);
	sv_wrlock(c);
	uint32_t count = c->nnodes;
	if (sv_direct(c, i))
		return sv_direct_end(c, i, count,
				  SV_FMT(c->fmt, live, truncate) ? SV_FMT(c->fmt, live, truncate)(c, i, size, err)
						   : sv_err_set(err, -EPERM, "cannot be truncated"),
				  err);
	int rc = can_edit(c, i, err);
	if (!rc && size == 0 &&
	    !(c->nodes[i].flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN))) {
		/* Emptying needs no load of the old content. */
		c->nodes[i].flags |= SV_N_DIRTY;
		c->nodes[i].pending.len = 0;
	} else if (!rc) {
		rc = begin_edit(c, i, err);
	}
	if (!rc)
		rc = resize_pending(c, &c->nodes[i], size, err);
	if (!rc) {
		c->nodes[i].gen++;
		c->nodes[i].etime_ns = now_ns();
		c->nodes[i].utime_ns = c->nodes[i].uatime_ns = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

static int refuse_dir(struct sv_container *c, uint32_t dir, struct sv_err *err)
{
	if (!sv_live(c, dir))
		return sv_err_set(err, -ENOENT, "no such directory");
	if (!(c->nodes[dir].flags & SV_N_DIR))
		return sv_err_set(err, -ENOTDIR, "not a directory");
	if (c->read_only)
		return sv_err_set(err, -EROFS, "the container is mounted read-only");
	if (c->nodes[dir].flags & SV_N_RO)
		return sv_err_set(err, -EPERM, "files cannot be created here");
	return 0;
}

/* The entry name of dir: an index directory's is made a node if it is
 * none yet (write lock held). */
static uint32_t entry_of(struct sv_container *c, uint32_t dir, const char *name)
{
	return (c->nodes[dir].flags & SV_N_INDEXDIR) ? sv_make_entry(c, dir, name)
						     : sv_find_child(c, dir, name);
}

/* The extension of a name ("txt" of "0,0.txt"), or NULL if it has none. */
static const char *ext_of(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && dot != name && dot[1] ? dot + 1 : NULL;
}

/* Names editors and tools give their temporary and backup files: hidden,
 * or marked as such (sed's sedXXXXXX, vim's .swp and ~, emacs's #...#,
 * foo.tmp, foo.new, foo.part, Python's tmpXXXX). */
static bool scratch_shape(const char *name)
{
	static const char *const marks[] = {"~", "#", ".tmp", ".swp", ".swx", ".bak", ".new",
					    ".part", ".orig", NULL};
	if (name[0] == '.' || !strncmp(name, "sed", 3) || !strncmp(name, "tmp", 3))
		return true;
	for (const char *const *m = marks; *m; m++)
		if (strstr(name, *m))
			return true;
	return false;
}

/*
 * True if a file named `name` that the format does not take would be
 * taken for one of the directory's own: not a scratch name, and with the
 * extension of a file the directory holds (a sector's .txt beside the
 * others, a 00030.bin beside 00000.bin).  Held in memory, such a file
 * would be written, closed, read back, and lost at unmount: it is refused
 * instead (write lock held).
 */
static bool owned_shape(struct sv_container *c, uint32_t dir, const char *name)
{
	const char *ext = ext_of(name);
	if (!ext || scratch_shape(name))
		return false;
	const struct sv_inode *d = &c->nodes[dir];
	for (uint32_t k = 0; k < d->nkids; k++) {
		const struct sv_inode *n = &c->nodes[d->kids[k]];
		const char *e = (n->flags & (SV_N_DIR | SV_N_TEMP | SV_N_GONE | SV_N_META))
					? NULL : ext_of(n->name);
		if (e && !strcmp(e, ext))
			return true;
	}
	if ((d->flags & SV_N_INDEXDIR) && SV_FMT(c->fmt, dirs, list)) {
		/* Its first few listed entries stand for the rest. */
		char entry[256];
		bool is_dir;
		uint64_t pos = 0, at;
		for (int k = 0; k < 4 && SV_FMT(c->fmt, dirs, list)(c, dir, pos, entry, &is_dir, &at) == 0;
		     k++, pos = at + 1) {
			const char *e = is_dir ? NULL : ext_of(entry);
			if (e && !strcmp(e, ext))
				return true;
		}
	}
	return false;
}

int sv_create(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t mode, uint32_t *out, struct sv_err *err)
{
	sv_err_clear(err);
	sv_wrlock(c);
	int rc = refuse_dir(c, dir, err);
	if (!rc && !sv_name_ok(name))
		rc = sv_err_set(err, -EINVAL, "invalid file name");
	/* (An index directory's entry need not be a node yet: one made to
	 * tell goes again.) */
	if (!rc) {
		uint32_t had = sv_find_child(c, dir, name), e = entry_of(c, dir, name);
		if (e != SV_NONE && had == SV_NONE && sv_node_forgettable(c, e))
			sv_node_free(c, e);
		if (e != SV_NONE)
			rc = sv_err_set(err, -EEXIST, "file exists");
	}
	uint32_t flags = SV_N_TEMP;
	if (!rc) {
		int fr = SV_FMT(c->fmt, edits, create) ? SV_FMT(c->fmt, edits, create)(c, dir, name, err) : -ENOENT;
		if (fr == 0)
			flags = SV_N_NEW;
		else if (fr != -ENOENT)
			rc = fr;
		else if (owned_shape(c, dir, name))
			rc = sv_err_set(err, -EPERM, "not a name the container takes here (it would "
					"be held in memory only, and lost at unmount)");
		if (rc) {
			char path[4096], why[SV_ERR_MAX];
			snprintf(why, sizeof why, "%s", err->msg[0] ? err->msg : strerror(-rc));
			if (!sv_path_locked(c, dir, path, sizeof path))
				sv_log(c, "%s%s%s: cannot be created: %s", path, *path ? "/" : "", name,
				       why);
			sv_err_set(err, rc, "%s", why);
		} else {
			sv_err_clear(err);
		}
	}
	if (!rc) {
		uint32_t i = sv_node_new(c, dir, name, flags, 0, 0);
		if (i == SV_NONE) {
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		} else {
			*out = i;
			c->nodes[i].etime_ns = now_ns();
			if (flags & SV_N_TEMP) {
				char path[4096];
				if (!sv_path_locked(c, i, path, sizeof path))
					sv_log(c, "%s is not a name the container takes: it is kept in "
					       "memory only, and discarded at unmount unless it is "
					       "renamed onto an entry", path);
			}
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

uint32_t sv_drops(struct sv_container *c, uint32_t n)
{
	pthread_rwlock_rdlock(&c->lock);
	uint32_t d = n < c->nnodes ? __atomic_load_n(&c->nodes[n].drops, __ATOMIC_ACQUIRE) : 0;
	pthread_rwlock_unlock(&c->lock);
	return d;
}

void sv_discard(struct sv_container *c, uint32_t n)
{
	sv_wrlock(c);
	if (sv_live(c, n))
		sv_discard_locked(c, n);
	pthread_rwlock_unlock(&c->lock);
}

struct unlink_arg {
	uint32_t dir;
	const char *name;
	uint32_t node, pos, flags; /* what the removal changed, to undo it */
};

static int pre_unlink(struct sv_container *c, void *arg, struct sv_err *err)
{
	struct unlink_arg *a = arg;
	if (!sv_live(c, a->dir))
		return sv_err_set(err, -ENOENT, "no such directory");
	uint32_t i = entry_of(c, a->dir, a->name);
	if (i == SV_NONE)
		return sv_err_set(err, -ENOENT, "no such file");
	struct sv_inode *n = &c->nodes[i];
	if (n->flags & SV_N_DIR)
		return sv_err_set(err, -EISDIR, "is a directory");
	if (n->flags & (SV_N_TEMP | SV_N_NEW)) {
		sv_node_drop(c, i);
		return 1;
	}
	if (c->read_only)
		return sv_err_set(err, -EROFS, "the container is mounted read-only");
	if ((n->flags & SV_N_META) || (n->flags & (SV_N_RO | SV_N_REMOVABLE)) == SV_N_RO)
		return sv_err_set(err, -EPERM, "this file is a read-only view");
	int rc = SV_FMT(c->fmt, edits, unlink) ? SV_FMT(c->fmt, edits, unlink)(c, i, err)
				: sv_err_set(err, -EPERM, "entries of this container cannot be removed");
	if (rc) {
		sv_log_failure(c, i, "refused to remove", err);
		return rc;
	}
	/* Gone from the tree now; the commit leaves it out of the container. */
	a->node = i;
	a->pos = n->kidpos;
	a->flags = n->flags;
	sv_hash_remove(c, i);
	sv_kid_remove(c, &c->nodes[n->parent], i);
	if (__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE))
		sv_orphan_or_free(c, i); /* read it while the container still has it */
	n->flags = (n->flags & ~SV_N_DIRTY) | SV_N_GONE | SV_N_STALE;
	return 0;
}

int sv_unlink(struct sv_container *c, uint32_t dir, const char *name,
	      sv_changed_fn changed, void *arg, struct sv_err *err)
{
	struct unlink_arg a = {dir, name, SV_NONE, 0, 0};
	int rc = sv_commit_and_notify(c, changed, arg, err, pre_unlink, &a);
	if (rc && a.node != SV_NONE) {
		/* The commit failed: the entry is still in the container, so it
		 * comes back where it was. */
		sv_wrlock(c);
		struct sv_inode *n = &c->nodes[a.node];
		if ((n->flags & (SV_N_GONE | SV_N_STALE)) == (SV_N_GONE | SV_N_STALE)) {
			struct sv_inode *d = &c->nodes[n->parent];
			if (!sv_kid_add(c, d, a.node)) {
				uint32_t pos = a.pos < d->nkids ? a.pos : d->nkids - 1;
				memmove(&d->kids[pos + 1], &d->kids[pos],
					(d->nkids - 1 - pos) * sizeof *d->kids);
				d->kids[pos] = a.node;
				sv_renumber_kids(c, d, pos);
				n->flags = a.flags;
				if (!(a.flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP))) {
					sv_buf_fini(&n->pending); /* an orphan's copy */
					n->size = n->stored_size;
					__atomic_store_n(&n->sized, 0, __ATOMIC_RELEASE);
				}
				sv_hash_insert(c, a.node);
			}
		}
		pthread_rwlock_unlock(&c->lock);
	}
	return rc;
}

struct rename_arg {
	uint32_t dir, newdir, flags;
	const char *name, *newname;
	bool logged; /* the refusal was logged already */
};

/* Moves node i to (dir, name); write lock held. */
static int move_node(struct sv_container *c, uint32_t i, uint32_t dir,
		     const char *name)
{
	struct sv_inode *n = &c->nodes[i];
	char *s = strdup(name);
	if (!s)
		return -ENOMEM;
	sv_hash_remove(c, i);
	sv_kid_remove(c, &c->nodes[n->parent], i);
	free(n->name);
	n->name = s;
	n->parent = dir;
	sv_hash_insert(c, i);
	int rc = sv_kid_add(c, &c->nodes[dir], i);
	if (!rc)
		n->kidpos = c->nodes[dir].nkids - 1;
	return rc;
}

/* Node i takes over entry j's stored identity: what its stored content
 * is (key, size, digest, group) and when it last changed.  The times a
 * client set on i stay. */
static void take_identity(struct sv_inode *n, const struct sv_inode *d)
{
	n->key = d->key;
	n->stored_size = d->stored_size;
	n->mtime_ns = d->mtime_ns;
	n->digest = d->digest;
	n->dstate = d->dstate;
	n->vtime_ns = d->vtime_ns;
	n->group = d->group;
}

/* Node i replaces node j: takes j's name and its place in the listing;
 * j is dropped.  Write lock held. */
static int take_place(struct sv_container *c, uint32_t i, uint32_t j)
{
	struct sv_inode *n = &c->nodes[i], *d = &c->nodes[j];
	char *s = strdup(d->name);
	if (!s)
		return -ENOMEM;
	uint32_t dir = d->parent;
	sv_hash_remove(c, i);
	sv_kid_remove(c, &c->nodes[n->parent], i);
	struct sv_inode *pd = &c->nodes[dir];
	if (d->kidpos < pd->nkids && pd->kids[d->kidpos] == j) {
		pd->kids[d->kidpos] = i;
		n->kidpos = d->kidpos;
	}
	sv_hash_remove(c, j);
	sv_orphan_or_free(c, j);
	d->gen++;
	free(n->name);
	n->name = s;
	n->parent = dir;
	sv_hash_insert(c, i);
	return 0;
}

static int pre_rename_do(struct sv_container *c, struct rename_arg *a, struct sv_err *err)
{
	if (a->flags & ~1u) /* only RENAME_NOREPLACE */
		return sv_err_set(err, -EINVAL, "unsupported rename flags");
	if (!sv_live(c, a->dir) || !sv_live(c, a->newdir))
		return sv_err_set(err, -ENOENT, "no such directory");
	if (!(c->nodes[a->newdir].flags & SV_N_DIR))
		return sv_err_set(err, -ENOTDIR, "not a directory");
	if (c->nodes[a->newdir].flags & SV_N_RO)
		return sv_err_set(err, -EPERM, "files cannot be created here");
	if (!sv_name_ok(a->newname))
		return sv_err_set(err, -EINVAL, "invalid file name");
	uint32_t i = entry_of(c, a->dir, a->name);
	if (i == SV_NONE)
		return sv_err_set(err, -ENOENT, "no such file");
	struct sv_inode *n = &c->nodes[i];
	uint32_t j = entry_of(c, a->newdir, a->newname);
	if (j == i)
		return 1;
	if (j != SV_NONE && (a->flags & 1))
		return sv_err_set(err, -EEXIST, "file exists");
	if (n->flags & SV_N_DIR)
		return sv_err_set(err, -EPERM, "directories cannot be renamed");
	if (!(n->flags & (SV_N_TEMP | SV_N_NEW)))
		return sv_err_set(err, -EPERM,
				  "entries of the container cannot be renamed; copy instead");
	if (j != SV_NONE) {
		struct sv_inode *d = &c->nodes[j];
		if (d->flags & SV_N_DIR)
			return sv_err_set(err, -EISDIR, "is a directory");
		if (d->flags & (SV_N_TEMP | SV_N_NEW)) {
			/* Replacing a file that lives only in memory. */
			bool entry = d->flags & SV_N_NEW;
			int rc = take_place(c, i, j);
			if (rc)
				return sv_err_set(err, rc, "out of memory");
			n->flags = (n->flags & ~(SV_N_TEMP | SV_N_NEW)) |
				   (entry ? SV_N_NEW | SV_N_READY : SV_N_TEMP);
			return entry ? 0 : 1;
		}
		int rc = can_edit(c, j, err);
		if (rc)
			return rc;
		if (d->flags & SV_N_RO) {
			/* A view: only the bytes it shows may be put there; then
			 * node i simply becomes the view, unedited. */
			rc = sv_view_same(c, j, n->pending.p, n->pending.len, err);
			if (rc) {
				sv_log_failure(c, j, "refused", err);
				a->logged = true;
				return rc;
			}
			take_identity(n, d);
			n->flags = d->flags & ~(SV_N_NEW | SV_N_TEMP);
			sv_buf_fini(&n->pending);
			n->size = d->size;
			__atomic_store_n(&n->sized, __atomic_load_n(&d->sized, __ATOMIC_ACQUIRE),
					 __ATOMIC_RELEASE);
			n->gen++;
			rc = take_place(c, i, j);
			return rc ? sv_err_set(err, rc, "out of memory") : 1;
		}
		if (SV_FMT(c->fmt, edits, check)) {
			rc = SV_FMT(c->fmt, edits, check)(c, j, n->pending.p, n->pending.len, err);
			if (rc) {
				err->code = rc;
				sv_log_failure(c, j, "refused", err);
				a->logged = true;
				return rc;
			}
		}
		/* As in POSIX, the renamed file replaces the target: node i takes
		 * over the entry's identity (its format key), j goes away. */
		take_identity(n, d);
		n->flags = (d->flags & ~(SV_N_BAD | SV_N_NEW | SV_N_TEMP)) | SV_N_DIRTY |
			   SV_N_READY; /* a renamed file is a finished one */
		n->size = n->pending.len;
		rc = take_place(c, i, j);
		return rc ? sv_err_set(err, rc, "out of memory") : 0;
	}
	/* A new name: does the container take it as an entry? */
	bool entry = false;
	if (!c->read_only && SV_FMT(c->fmt, edits, create)) {
		int fr = SV_FMT(c->fmt, edits, create)(c, a->newdir, a->newname, err);
		if (fr && fr != -ENOENT)
			return fr;
		entry = fr == 0;
		sv_err_clear(err);
	}
	int rc = move_node(c, i, a->newdir, a->newname);
	if (rc)
		return sv_err_set(err, rc, "out of memory");
	if (!entry) {
		n->flags = (n->flags & ~SV_N_NEW) | SV_N_TEMP;
		return 1;
	}
	n->flags = (n->flags & ~SV_N_TEMP) | SV_N_NEW | SV_N_READY;
	return 0;
}

/* Every refused rename says why in the log (mv shows only the errno). */
static int pre_rename(struct sv_container *c, void *arg, struct sv_err *err)
{
	struct rename_arg *a = arg;
	int rc = pre_rename_do(c, a, err);
	if (rc < 0 && !a->logged) {
		char from[4096] = "", to[4096] = "";
		sv_path_locked(c, a->dir, from, sizeof from);
		sv_path_locked(c, a->newdir, to, sizeof to);
		sv_log(c, "refused rename %s%s%s -> %s%s%s: %s", from, *from ? "/" : "", a->name,
		       to, *to ? "/" : "", a->newname, err->msg[0] ? err->msg : strerror(-rc));
	}
	return rc;
}

int sv_rename(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t newdir, const char *newname, uint32_t flags,
	      sv_changed_fn changed, void *arg, struct sv_err *err)
{
	struct rename_arg a = {dir, newdir, flags, name, newname, false};
	return sv_commit_and_notify(c, changed, arg, err, pre_rename, &a);
}

int sv_set_times(struct sv_container *c, uint32_t n, const struct timespec *atime,
		 const struct timespec *mtime)
{
	sv_wrlock(c);
	int rc = sv_usable(c, n) ? 0 : sv_gone_code(c, n);
	if (!rc) {
		struct sv_inode *node = &c->nodes[n];
		/* 0 means "none": the epoch itself is kept as 1 ns past it. */
		if (mtime) {
			int64_t t = (int64_t)mtime->tv_sec * 1000000000 + mtime->tv_nsec;
			node->utime_ns = t ? t : 1;
		}
		if (atime) {
			int64_t t = (int64_t)atime->tv_sec * 1000000000 + atime->tv_nsec;
			node->uatime_ns = t ? t : 1;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int sv_temps(struct sv_container *c, void (*fn)(void *arg, const char *path), void *arg)
{
	int n = 0;
	pthread_rwlock_rdlock(&c->lock);
	SV_EACH_NODE(c, i, 1) {
		char path[4096];
		if ((c->nodes[i].flags & (SV_N_TEMP | SV_N_GONE)) != SV_N_TEMP ||
		    sv_path_locked(c, i, path, sizeof path))
			continue;
		sv_log(c, "%s was not part of the container: discarded", path);
		if (fn)
			fn(arg, path);
		n++;
	}
	pthread_rwlock_unlock(&c->lock);
	return n;
}
