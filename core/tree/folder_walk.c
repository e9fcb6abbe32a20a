/*
 * folder_walk.c - a save folder looked at: lookups, stats, listings (each entry
 * classified as it is listed, several at once), reads, and the info
 * census.
 */
#include "folder.h"

int sv_folder_lookup(struct sv_folder *f, sv_id dir, const char *name, sv_id *out)
{
	struct sv_err err;
	int rc = 0;
	pthread_mutex_lock(&f->lock);
	if (dir >> 32) {
		struct sv_container *c;
		uint32_t node, slot, n;
		rc = sv_folder_node_fresh(f, dir, &c, &node, &slot);
		uint32_t meta = rc ? SV_NONE : f->s[slot].meta;
		uint32_t claimed = rc ? 0 : f->s[slot].claimed;
		pthread_mutex_unlock(&f->lock);
		if (!rc) {
			rc = sv_lookup_held(c, node, name, &n);
			sv_folder_slot_release(f, slot);
		}
		if (!rc) {
			*out = SLOT_ID(slot, n);
			return 0;
		}
		if (rc != -ENOENT || node != meta || strcmp(name, "container"))
			return rc;
		/* NAME/.savefs/container: the raw bytes. */
		pthread_mutex_lock(&f->lock);
		struct entry *b = &f->e[claimed];
		if (!b->raw) {
			char *rel = strdup(b->rel);
			uint32_t r = rel ? sv_folder_add_entry(f, claimed, rel, E_RAW) : SV_NONE;
			if (r == SV_NONE) {
				free(rel);
				rc = -ENOMEM;
			} else {
				f->e[r].classified = true;
				f->e[claimed].raw = r; /* the table may have moved: not b */
				rc = 0;
			}
		} else {
			rc = 0;
		}
		if (!rc)
			*out = f->e[claimed].raw;
		pthread_mutex_unlock(&f->lock);
		return rc;
	}
	uint32_t d = (uint32_t)dir;
	if (d < f->ne && !(rc = sv_folder_classify(f, d)))
		sv_folder_probe_dir(f, d);
	if (d >= f->ne) {
		rc = -ENOENT;
	} else if (rc) {
		/* gone */
	} else if (d == 0 && !strcmp(name, ".savefs")) {
		*out = f->mdir;
	} else if (d == f->mdir) {
		rc = !strcmp(name, "info") ? 0 : !strcmp(name, "log") ? 0 : -ENOENT;
		if (!rc)
			*out = name[0] == 'i' ? f->minfo : f->mlog;
	} else if (sv_folder_real_dir(f, d)) {
		uint32_t i = sv_folder_child(f, d, name, &rc);
		if (i != SV_NONE)
			*out = i;
	} else if (f->e[d].kind == E_CLAIMED) {
		struct sv_container *c;
		uint32_t slot, n;
		rc = sv_folder_open_container(f, d, &c, &slot, &err);
		bool passes = f->e[d].kind == E_FILE; /* not a container after all */
		pthread_mutex_unlock(&f->lock);
		if (rc)
			return rc == -EMEDIUMTYPE || passes ? -ENOTDIR : -EIO;
		rc = sv_lookup_held(c, SV_ROOT, name, &n);
		sv_folder_slot_release(f, slot);
		if (!rc)
			*out = SLOT_ID(slot, n);
		return rc;
	} else {
		rc = -ENOTDIR;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* The client's lookups of a container's node given back, or one more
 * (a file it made); a folder's own entries are kept while it is open. */
static void hold_or_forget(struct sv_folder *f, sv_id n, uint64_t count, bool hold)
{
	if (!(n >> 32))
		return;
	struct sv_container *c;
	uint32_t node, slot;
	pthread_mutex_lock(&f->lock);
	int rc = sv_folder_node_container(f, n, &c, &node, &slot);
	pthread_mutex_unlock(&f->lock);
	if (rc)
		return;
	if (hold)
		sv_hold(c, node);
	else
		sv_forget(c, node, count);
	sv_folder_slot_release(f, slot);
}

void sv_folder_forget(struct sv_folder *f, sv_id n, uint64_t count)
{
	hold_or_forget(f, n, count, false);
}

void sv_folder_held(struct sv_folder *f, sv_id n)
{
	hold_or_forget(f, n, 1, true);
}

/* The stat of a real file (or directory) as the tree shows it. */
static void real_stat(const struct stat *s, sv_id id, bool dir, struct sv_stat *st)
{
	memset(st, 0, sizeof *st);
	st->id = id;
	st->node = (uint32_t)id;
	st->dir = dir;
	/* A container's file shows as a directory; anything else as what it
	 * is (a symbolic link, a FIFO, a socket, a device: never opened). */
	st->mode = dir ? (S_IFDIR | (s->st_mode & 0777) | ((s->st_mode & 0444) >> 2))
		       : ((s->st_mode & S_IFMT) | (s->st_mode & 07777));
	if (S_ISDIR(s->st_mode) && dir)
		st->mode |= s->st_mode & (S_ISGID | S_ISVTX);
	st->rdev = S_ISCHR(s->st_mode) || S_ISBLK(s->st_mode) ? (uint64_t)s->st_rdev : 0;
	st->uid = s->st_uid;
	st->gid = s->st_gid;
	st->nlink = dir ? 2 : 1;
	st->size = dir ? 0 : (uint64_t)s->st_size;
	st->stream = !dir && S_ISREG(s->st_mode);
	st->mtime = s->st_mtim;
	st->atime = s->st_atim;
}

/* True if entry i is in a real directory the mount may change: not in a
 * container's raw form, and not on a read-only mount. */
bool sv_folder_changeable(const struct sv_folder *f, uint32_t i)
{
	return !f->opts.read_only && !f->remote && !f->e[i].in_raw && f->e[i].kind != E_RAW &&
	       !sv_folder_kind_is_meta(f->e[i].kind);
}

/* The stat of a real entry (classified, lock held). */
static void entry_stat(struct sv_folder *f, uint32_t i, struct sv_stat *st)
{
	const struct entry *e = &f->e[i];
	if (e->kind == E_RAW) {
		/* The claimed entry's file, read-only (a directory container's raw
		 * form is the directory itself, beside the folder). */
		const struct entry *b = &f->e[e->parent];
		real_stat(&b->st, i, S_ISDIR(b->st.st_mode), st);
		st->mode &= ~0222u;
		st->real = !st->dir && !f->remote;
		return;
	}
	real_stat(&e->st, i, e->kind == E_DIR || e->kind == E_CLAIMED, st);
	if (e->kind == E_CLAIMED && e->times_set) {
		st->mtime = e->set_mtime;
		st->atime = e->set_atime;
	}
	/* A remote file is read through the tree (it has no descriptor). */
	st->real = e->kind == E_FILE && !f->remote;
	st->writable = st->real && sv_folder_changeable(f, i);
	if (e->in_raw)
		st->mode &= ~0222u;
}

static int folder_stat(struct sv_folder *f, sv_id n, struct sv_stat *st, bool fresh)
{
	if (n >> 32) {
		struct sv_container *c;
		uint32_t node, slot;
		pthread_mutex_lock(&f->lock);
		int rc = sv_folder_node_container_as(f, n, &c, &node, &slot, fresh);
		pthread_mutex_unlock(&f->lock);
		if (rc)
			return rc;
		rc = sv_stat(c, node, st);
		sv_folder_slot_release(f, slot);
		if (!rc)
			st->id = n;
		return rc;
	}
	pthread_mutex_lock(&f->lock);
	uint32_t i = (uint32_t)n;
	int rc = i < f->ne ? sv_folder_classify(f, i) : -ENOENT;
	if (!rc) {
		const struct entry *e = &f->e[i];
		if (sv_folder_kind_is_meta(e->kind)) {
			/* The folder's own files: made when read (info opens every
			 * container), so of no size known before. */
			real_stat(&f->e[0].st, n, e->kind == E_MDIR, st);
			st->mode = e->kind == E_MDIR ? S_IFDIR | 0555 : S_IFREG | 0444;
			st->volatile_ = e->kind != E_MDIR;
			st->unsized = e->kind == E_MINFO;
			st->size = e->kind == E_MLOG ? f->log.len : 0;
		} else {
			entry_stat(f, i, st);
		}
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int sv_folder_stat(struct sv_folder *f, sv_id n, struct sv_stat *st)
{
	return folder_stat(f, n, st, true);
}

int sv_folder_stat_open(struct sv_folder *f, sv_id n, struct sv_stat *st)
{
	return folder_stat(f, n, st, false);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in real directory entry d, sorted (bytewise, as savefs lists
 * names). */
static int add_name(void *arg, const char *name)
{
	struct name_list *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		char **v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n] = strdup(name)))
		return -ENOMEM;
	l->n++;
	return 0;
}

/* Removes from real directory entry d, at its first listing, the
 * temporary files that commits killed before they finished left there
 * (those nobody holds locked: a commit under way holds its own). */
static void sweep(struct sv_folder *f, uint32_t d, const struct name_list *l)
{
	if (f->e[d].swept || f->remote || f->opts.read_only || f->e[d].in_raw)
		return;
	f->e[d].swept = true;
	for (size_t i = 0; i < l->n; i++) {
		if (!sv_folder_commit_leftover(l->v[i]))
			continue;
		char *rel = sv_folder_rel_of(f, d, l->v[i]);
		struct place p;
		if (!rel || sv_folder_place_open(f, rel, &p))
			continue;
		int fd = openat(p.at, p.leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) &&
		    !flock(fd, LOCK_EX | LOCK_NB) && !unlinkat(p.at, p.leaf, 0))
			sv_folder_log(f, "%s: removed, left by a commit that did not finish", p.rel);
		if (fd >= 0)
			close(fd);
		sv_folder_place_close(&p);
	}
}

int sv_folder_real_names(struct sv_folder *f, uint32_t d, struct name_list *l)
{
	sv_folder_watch_dir(f, d);
	struct sv_err err;
	int rc = f->src->ops->place_list(f->src, f->e[d].rel, add_name, l, &err);
	if (rc && rc != -ENOMEM)
		sv_folder_log(f, "%s", err.msg);
	if (!rc)
		sweep(f, d, l);
	if (l->n)
		qsort(l->v, l->n, sizeof *l->v, by_name);
	return rc;
}

void sv_folder_names_free(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* A container's listing passed on with the tree's ids. */
struct listing_pass {
	sv_dir_fn fn;
	void *arg;
	uint32_t slot, epoch;
	uint64_t last;      /* the position after the last entry passed */
	bool stopped;
	uint64_t shift;     /* positions before the container's own entries */
};

/* A listing's callback said to stop (not: go on, or go on holding). */
static bool dir_stop(int r)
{
	return r && r != SV_DIR_HELD;
}

static int pass_entry(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct listing_pass *r = arg;
	struct sv_stat s = *st;
	s.id = st->unmade ? SV_TREE_NONE : sv_slot_id(r->slot, r->epoch, st->node);
	r->last = next + r->shift;
	int rc = r->fn(r->arg, name, &s, next + r->shift);
	r->stopped = dir_stop(rc);
	return rc;
}


/* Entries classified at once, CLASSIFY_AT_ONCE at a time. */
#define CLASSIFY_AT_ONCE 8

struct classifying {
	struct sv_folder *f;
	uint32_t d;
	const struct name_list *l;
	size_t next;  /* the next name to sv_folder_classify (atomic) */
};

static void *classify_worker(void *arg)
{
	struct classifying *j = arg;
	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (i >= j->l->n)
			break;
		int e;
		pthread_mutex_lock(&j->f->lock);
		sv_folder_child(j->f, j->d, j->l->v[i], &e);
		pthread_mutex_unlock(&j->f->lock);
	}
	return NULL;
}

/* How many of the names of directory d from `from` on were never classified
 * (lock held). */
static size_t unclassified(struct sv_folder *f, uint32_t d, const struct name_list *l, size_t from)
{
	size_t count = 0;
	for (size_t i = from; i < l->n; i++) {
		char *rel = sv_folder_rel_of(f, d, l->v[i]);
		if (!rel)
			return l->n - from;
		uint32_t k = sv_folder_find_entry(f, rel);
		count += k == SV_NONE || !f->e[k].classified;
		free(rel);
	}
	return count;
}

/* The entries of directory d from `from` on classified (lock not held), by
 * as many threads as there are cores (two at least) when several were
 * never classified. */
static void classify_names(struct sv_folder *f, uint32_t d, const struct name_list *l, size_t from)
{
	struct classifying j = {f, d, l, from};
	pthread_t t[CLASSIFY_AT_ONCE - 1];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	size_t most = cores < 2 ? 2 : cores > CLASSIFY_AT_ONCE ? CLASSIFY_AT_ONCE : (size_t)cores;
	pthread_mutex_lock(&f->lock);
	size_t todo = unclassified(f, d, l, from);
	pthread_mutex_unlock(&f->lock);
	size_t n = 0;
	while (todo > 1 && n < most - 1 && n + 1 < todo &&
	       !pthread_create(&t[n], NULL, classify_worker, &j))
		n++;
	classify_worker(&j);
	for (size_t k = 0; k < n; k++)
		pthread_join(t[k], NULL);
}

int sv_folder_readdir(struct sv_folder *f, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg,
		      bool nodes)
{
	struct sv_err err;
	struct sv_container *c = NULL;
	uint32_t node = SV_ROOT, slot = 0, meta = SV_NONE;
	pthread_mutex_lock(&f->lock);
	int rc = 0;
	if (dir >> 32) {
		rc = sv_folder_node_fresh(f, dir, &c, &node, &slot);
		if (!rc)
			meta = f->s[slot].meta;
	} else if ((uint32_t)dir >= f->ne) {
		rc = -ENOENT;
	} else if (!(rc = sv_folder_classify(f, (uint32_t)dir))) {
		uint32_t d = (uint32_t)dir;
		sv_folder_probe_dir(f, d);
		if (f->e[d].kind == E_CLAIMED) {
			rc = sv_folder_open_container(f, d, &c, &slot, &err);
			if (rc)
				rc = rc == -EMEDIUMTYPE ? -ENOTDIR : -EIO;
			meta = rc ? SV_NONE : f->s[slot].meta;
		} else if (!sv_folder_real_dir(f, d) && d != f->mdir) {
			rc = -ENOTDIR;
		}
	}
	if (rc || c) {
		uint32_t epoch = rc ? 0 : f->s[slot].epoch;
		bool removed = !rc && f->s[slot].removed;
		pthread_mutex_unlock(&f->lock);
		if (rc)
			return rc;
		if (removed) {
			/* Its file was removed through the mount (rm -r's first
			 * step): nothing is left in it. */
			sv_folder_slot_release(f, slot);
			return 0;
		}
		/* NAME/.savefs/container first (rm -r removes the container
		 * at its first step, and finds the rest gone with it). */
		uint64_t shift = node == meta ? 1 : 0;
		sv_id raw;
		struct sv_stat st;
		if (shift && from == 0) {
			sv_folder_slot_release(f, slot);
			if (sv_folder_lookup(f, SLOT_ID(slot, meta), "container", &raw) ||
			    sv_folder_stat(f, raw, &st) || dir_stop(fn(arg, "container", &st, 1)))
				return 0;
			pthread_mutex_lock(&f->lock);
			rc = sv_folder_node_container(f, dir, &c, &node, &slot);
			pthread_mutex_unlock(&f->lock);
			if (rc)
				return 0;
		}
		/* A remote container listed from its start: perhaps a walk over
		 * the containers (ls -R, find), met by opening the next ones
		 * ahead: each costs round trips, not a core. */
		if (f->remote && !(dir >> 32) && from == 0)
			sv_folder_ahead_note(f, slot, c, node);
		struct listing_pass r = {fn, arg, slot, epoch, from, false, shift};
		rc = (nodes ? sv_readdir_nodes : sv_readdir)(c, node, from > shift ? from - shift : 0,
							     pass_entry, &r);
		sv_folder_slot_release(f, slot);
		return rc;
	}
	uint32_t d = (uint32_t)dir;
	if (d == f->mdir) {
		static const char *const names[] = {"info", "log"};
		pthread_mutex_unlock(&f->lock);
		for (uint64_t k = from; k < 2; k++) {
			struct sv_stat st;
			if (sv_folder_stat(f, k ? f->mlog : f->minfo, &st) ||
			    dir_stop(fn(arg, names[k], &st, k + 1)))
				break;
		}
		return 0;
	}
	/* The root lists /.savefs/ first (as a container does). */
	uint64_t shift = d == 0 ? 1 : 0;
	if (d == 0 && from == 0) {
		struct sv_stat st;
		pthread_mutex_unlock(&f->lock);
		if (sv_folder_stat(f, f->mdir, &st) || dir_stop(fn(arg, ".savefs", &st, 1)))
			return 0;
		pthread_mutex_lock(&f->lock);
	}
	if (from >= shift)
		from -= shift;
	/* A real directory: its entries as they are now. */
	struct name_list l = {0};
	rc = sv_folder_real_names(f, d, &l);
	if (!rc && !f->remote && l.n > from + 1) {
		/* Each local entry classified new costs an open (its container
		 * confirmed): several at once.  (A remote one is classified by its
		 * name: no request.) */
		pthread_mutex_unlock(&f->lock);
		classify_names(f, d, &l, from);
		pthread_mutex_lock(&f->lock);
	}
	struct item {
		char *name;
		struct sv_stat st;
		uint64_t next;
	} *items = rc ? NULL : calloc(l.n ? l.n : 1, sizeof *items);
	size_t k = 0;
	if (!rc && !items)
		rc = -ENOMEM;
	for (size_t i = from; !rc && i < l.n; i++) {
		int e;
		uint32_t ci = sv_folder_child(f, d, l.v[i], &e);
		if (ci == SV_NONE)
			continue; /* gone since the listing, or not a name savefs shows */
		entry_stat(f, ci, &items[k].st);
		items[k].next = i + 1 + shift;
		items[k].name = l.v[i];
		k++;
	}
	pthread_mutex_unlock(&f->lock);
	for (size_t j = 0; !rc && j < k; j++) {
		if (dir_stop(fn(arg, items[j].name, &items[j].st, items[j].next)))
			break;
	}
	free(items);
	sv_folder_names_free(&l);
	return rc;
}

/* Reads a real file's bytes: n at off (short at its end). */
static int real_read(struct sv_folder *f, uint32_t i, uint64_t off, void *buf, size_t size,
		     size_t *got, struct sv_err *err)
{
	pthread_mutex_lock(&f->lock);
	char *rel = strdup(f->e[i].rel);
	pthread_mutex_unlock(&f->lock);
	if (!rel)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = f->src->ops->place_read(f->src, rel, off, buf, size, got, err);
	free(rel);
	return rc;
}

/* The real file behind entry n (a file that passes through, or a raw
 * container), or SV_NONE with the error. */
uint32_t sv_folder_real_file(struct sv_folder *f, sv_id n, int *rc)
{
	uint32_t i = (uint32_t)n;
	*rc = i < f->ne ? sv_folder_classify(f, i) : -ENOENT;
	if (*rc)
		return SV_NONE;
	int kind = f->e[i].kind;
	if (kind == E_RAW && !sv_folder_real_dir(f, i))
		return f->e[i].parent;
	if (kind != E_FILE) {
		*rc = -EISDIR;
		return SV_NONE;
	}
	return i;
}

/* The content of the folder's own /.savefs files. */
static int meta_content(struct sv_folder *f, uint32_t i, struct sv_blob **out,
			struct sv_err *err)
{
	if (f->e[i].kind == E_MINFO)
		return sv_folder_info(f, out, err);
	pthread_mutex_lock(&f->lock);
	*out = sv_blob_dup(f->log.p, f->log.len);
	pthread_mutex_unlock(&f->lock);
	return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
}

static bool is_meta_file(struct sv_folder *f, sv_id n)
{
	return n == f->minfo || n == f->mlog;
}

int sv_folder_read(struct sv_folder *f, sv_id n, uint64_t off, void *buf, size_t size,
		   size_t *got, struct sv_err *err)
{
	if (is_meta_file(f, n)) {
		/* A reader of info gets one snapshot, made at offset 0 (making it
		 * opens every container): not one per piece. */
		struct sv_blob *b = NULL;
		int rc = 0;
		pthread_mutex_lock(&f->lock);
		if (n == f->minfo && off > 0 && f->info)
			b = sv_blob_ref(f->info);
		pthread_mutex_unlock(&f->lock);
		if (!b)
			rc = meta_content(f, (uint32_t)n, &b, err);
		if (rc)
			return rc;
		if (n == f->minfo && off == 0) {
			pthread_mutex_lock(&f->lock);
			sv_blob_unref(f->info);
			f->info = sv_blob_ref(b);
			pthread_mutex_unlock(&f->lock);
		}
		*got = off < b->len ? (b->len - off < size ? (size_t)(b->len - off) : size) : 0;
		if (*got)
			memcpy(buf, b->data + off, *got);
		sv_blob_unref(b);
		return 0;
	}
	if (n >> 32) {
		struct sv_container *c;
		uint32_t node, slot;
		int rc = sv_folder_container_of_id(f, n, &c, &node, &slot);
		if (rc)
			return sv_err_set(err, rc, "a container closed under its reader");
		rc = sv_read(c, node, off, buf, size, got, err);
		/* A stream's first read: perhaps a walk over the containers. */
		if (!rc && off == 0)
			sv_folder_ahead_note(f, slot, c, node);
		sv_folder_slot_release(f, slot);
		return rc;
	}
	pthread_mutex_lock(&f->lock);
	int rc;
	uint32_t i = sv_folder_real_file(f, n, &rc);
	if (i != SV_NONE && f->remote && f->e[i].kind == E_CLAIMED) {
		/* A remote container's raw bytes: through its own source, whose
		 * blocks its tree has read (not a request per read). */
		struct sv_container *c;
		uint32_t slot;
		rc = sv_folder_open_container(f, i, &c, &slot, err);
		pthread_mutex_unlock(&f->lock);
		if (rc == -EMEDIUMTYPE)
			return real_read(f, i, off, buf, size, got, err);
		if (rc)
			return rc;
		*got = 0;
		uint64_t end = sv_container_size(c);
		size_t k = off >= end ? 0 : end - off < size ? (size_t)(end - off) : size;
		rc = k ? sv_container_pread(c, off, buf, k, err) : 0;
		if (!rc)
			*got = k;
		sv_folder_slot_release(f, slot);
		return rc;
	}
	pthread_mutex_unlock(&f->lock);
	if (i == SV_NONE)
		return sv_err_set(err, rc, "%s", strerror(-rc));
	return real_read(f, i, off, buf, size, got, err);
}

int sv_folder_stored(struct sv_folder *f, sv_id n, uint64_t *out, struct sv_err *err)
{
	if (is_meta_file(f, n) || !(n >> 32))
		return -ENOENT; /* the folder's own files: read */
	struct sv_container *c;
	uint32_t node, slot;
	if (sv_folder_container_of_id(f, n, &c, &node, &slot))
		return -ENOENT;
	int rc = sv_stored(c, node, out, err);
	sv_folder_slot_release(f, slot);
	return rc;
}

int sv_folder_content(struct sv_folder *f, sv_id n, struct sv_blob **out, struct sv_err *err)
{
	*out = NULL;
	if (is_meta_file(f, n))
		return meta_content(f, (uint32_t)n, out, err);
	if (n >> 32) {
		struct sv_container *c;
		uint32_t node, slot;
		int rc = sv_folder_container_of_id(f, n, &c, &node, &slot);
		if (rc)
			return sv_err_set(err, rc, "a container closed under its reader");
		rc = sv_content(c, node, out, err);
		/* Perhaps a walk over the containers. */
		if (!rc)
			sv_folder_ahead_note(f, slot, c, node);
		sv_folder_slot_release(f, slot);
		return rc;
	}
	pthread_mutex_lock(&f->lock);
	int rc;
	uint32_t i = sv_folder_real_file(f, n, &rc);
	uint64_t size = i == SV_NONE ? 0 : (uint64_t)f->e[i].st.st_size;
	pthread_mutex_unlock(&f->lock);
	if (i == SV_NONE)
		return sv_err_set(err, rc, "%s", strerror(-rc));
	if (size > f->opts.max_decode)
		return sv_err_set(err, -EFBIG, "%llu bytes, more than -o maxdecode: read it in "
				  "pieces", (unsigned long long)size);
	struct sv_blob *b = sv_blob_new((size_t)size);
	if (!b)
		return sv_err_set(err, -ENOMEM, "out of memory");
	size_t got = 0;
	rc = real_read(f, i, 0, b->data, (size_t)size, &got, err);
	if (!rc && got != size)
		rc = sv_err_set(err, -EIO, "%s changed while it was read", f->e[i].rel);
	if (rc) {
		sv_blob_unref(b);
		return rc;
	}
	*out = b;
	return 0;
}

int sv_folder_hold(struct sv_folder *f, sv_id n)
{
	if (!(n >> 32))
		return 0; /* a real file: nothing to keep open */
	struct sv_container *c;
	uint32_t node, slot;
	pthread_mutex_lock(&f->lock);
	int rc = sv_folder_node_fresh(f, n, &c, &node, &slot);
	if (!rc) {
		rc = sv_open(c, node); /* under the lock: not closed meanwhile */
		sv_folder_slot_release_locked(f, slot);
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void sv_folder_release(struct sv_folder *f, sv_id n)
{
	if (!(n >> 32))
		return;
	struct sv_container *c;
	uint32_t node, slot;
	pthread_mutex_lock(&f->lock);
	if (!sv_folder_node_container(f, n, &c, &node, &slot)) {
		sv_release(c, node);
		sv_folder_slot_release_locked(f, slot);
	}
	pthread_mutex_unlock(&f->lock);
}

/* ---- info ------------------------------------------------------------------------ */

struct info_count {
	struct sv_folder *f;
	json_t *per_format, *containers, *unclaimed, *unreadable;
	uint64_t ncontainers;
};

static int walk_dir(struct info_count *cs, uint32_t d);

static int count_entry(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct info_count *cs = arg;
	struct sv_folder *f = cs->f;
	pthread_mutex_lock(&f->lock);
	uint32_t i = (uint32_t)st->id;
	int kind = f->e[i].kind;
	const struct sv_format *fmt = f->e[i].fmt;
	char *rel = strdup(f->e[i].rel);
	char *broken = f->e[i].broken ? strdup(f->e[i].broken) : NULL;
	pthread_mutex_unlock(&f->lock);
	if (!rel) {
		free(broken);
		return 1;
	}
	if (kind == E_DIR) {
		walk_dir(cs, i);
	} else if (kind == E_FILE && broken && fmt) {
		/* Claimed by its content, but its container cannot be opened:
		 * it passes through, and here is why. */
		json_t *one = json_object();
		json_object_set_new(one, "path", json_string(rel));
		json_object_set_new(one, "format", json_string(fmt->name));
		json_object_set_new(one, "error", json_string(broken));
		json_array_append_new(cs->unreadable, one);
	} else if (kind == E_FILE) {
		json_array_append_new(cs->unclaimed, json_string(rel));
	} else if (kind == E_CLAIMED) {
		json_t *one = json_object();
		json_object_set_new(one, "path", json_string(rel));
		json_object_set_new(one, "format", json_string(fmt->name));
		json_t *n = json_object_get(cs->per_format, fmt->name);
		json_object_set_new(cs->per_format, fmt->name,
				    json_integer(n ? json_integer_value(n) + 1 : 1));
		struct sv_err err;
		struct sv_container *c;
		uint32_t slot, meta;
		pthread_mutex_lock(&f->lock);
		int rc = sv_folder_open_container(f, i, &c, &slot, &err);
		pthread_mutex_unlock(&f->lock);
		struct sv_blob *b = NULL;
		if (rc) {
			json_object_set_new(one, "error", json_string(err.msg));
		} else {
			if (!sv_resolve(c, ".savefs/info", &meta) && !sv_content(c, meta, &b, &err)) {
				json_t *info = json_loadb((const char *)b->data, b->len, 0, NULL);
				json_t *w = json_object_get(info, "warnings");
				json_object_set_new(one, "warnings", w ? json_incref(w) : json_array());
				json_decref(info);
			}
			sv_folder_slot_release(f, slot);
		}
		sv_blob_unref(b);
		json_array_append_new(cs->containers, one);
		cs->ncontainers++;
	}
	free(rel);
	free(broken);
	return 0;
}

static int walk_dir(struct info_count *cs, uint32_t d)
{
	return sv_folder_readdir(cs->f, d, 0, count_entry, cs, false);
}

int sv_folder_info(struct sv_folder *f, struct sv_blob **out, struct sv_err *err)
{
	struct info_count cs = {f, json_object(), json_array(), json_array(), json_array(), 0};
	json_t *o = json_object();
	/* How many were open when asked (the walk below opens every one). */
	pthread_mutex_lock(&f->lock);
	unsigned open_now = f->nopen, open_most = f->nopen_most;
	pthread_mutex_unlock(&f->lock);
	int rc = cs.per_format && cs.containers && cs.unclaimed && cs.unreadable && o ? 0 : -ENOMEM;
	if (!rc)
		rc = walk_dir(&cs, 0);
	if (!rc) {
		json_object_set_new(o, "folder", json_string(f->path));
		json_object_set_new(o, "containers", json_integer((json_int_t)cs.ncontainers));
		json_object_set_new(o, "open", json_integer(open_now));
		json_object_set_new(o, "max_open", json_integer(f->opts.max_open));
		json_object_set_new(o, "open_most", json_integer(open_most));
		json_object_set_new(o, "kept", sv_kept_json());
		uint64_t opened, built;
		sv_folder_ahead_counts(f, &opened, &built);
		json_object_set_new(o, "ahead", json_pack("{s:I,s:I,s:I}", "workers",
							  (json_int_t)sv_ahead_workers(), "opened",
							  (json_int_t)opened, "built", (json_int_t)built));
		json_object_set(o, "per_format", cs.per_format);
		json_object_set(o, "unclaimed", cs.unclaimed);
		json_object_set(o, "unreadable", cs.unreadable);
		json_object_set(o, "each", cs.containers);
	}
	json_decref(cs.per_format);
	json_decref(cs.containers);
	json_decref(cs.unclaimed);
	json_decref(cs.unreadable);
	char *s = rc ? NULL : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return sv_err_set(err, rc ? rc : -ENOMEM, "the folder could not be listed");
	size_t n = strlen(s);
	*out = sv_blob_new(n + 1);
	if (*out) {
		memcpy((*out)->data, s, n);
		(*out)->data[n] = '\n';
	}
	free(s);
	return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
}
