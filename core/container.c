/*
 * container.c - the format registry, opening and sniffing, the node table,
 * name checks, the /.savefs/ meta files, edits and the commit protocol.
 *
 * Locking: `lock` is a read-write lock.  Lookups, stats, reads and the
 * formats' load() run under the read lock; anything that changes the node
 * table, a pending edit or the format state (edits, create, unlink,
 * rename, commit) takes the write lock.  The log has its own mutex so that
 * it can be written from under either.  The cache has its own mutex.
 *
 * Node table: an array indexed by node number, never shrunk, so numbers are
 * stable; node 0 is the root.  Names are found through a chained hash of
 * (parent, name) threaded through sv_node.hnext.
 *
 * Commit: the format writes a complete new container to a temporary file
 * in the same directory, which is fsynced and renamed over the original
 * (keeping its mode), and the directory is fsynced.  Then the index is read
 * again from the new file: every node is marked stale, the format's open()
 * finds each again by (parent, name) through sv_node_add(), and nodes not
 * found are removed.  Node numbers therefore survive commits.
 */
#include "savefs.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern const struct sv_format sv_fmt_datafile;
extern const struct sv_format sv_fmt_doodle;
extern const struct sv_format sv_fmt_nethack;

const struct sv_format *const sv_formats[] = {
	&sv_fmt_datafile,
	&sv_fmt_doodle,
	&sv_fmt_nethack,
	NULL,
};

#define LOG_LINES 256
#define PF_QUEUE 64
#define PF_MIN_SIZE 4096

struct loading {
	uint64_t key;
	struct loading *next;
	unsigned refs;           /* the loader and each waiter */
	bool done;
	int rc;                  /* then: 0 and blob, or an error */
	struct sv_blob *blob;
	struct sv_err err;
};

struct sv_container {
	pthread_rwlock_t lock;
	const struct sv_format *fmt;
	void *priv;              /* the format's state */
	struct sv_opts opts;
	char *path;              /* owned */
	int fd;                  /* the container file as last opened */
	struct stat st;          /* its stat at open: detects outside changes */
	bool read_only;

	struct sv_node *nodes;   /* owned; nnodes used of cap */
	uint32_t nnodes, cap;
	uint32_t *htab;          /* name hash heads, SV_NONE = empty */
	uint32_t hsize;          /* power of two */
	bool reindexing;         /* open() runs again after a commit */
	struct sv_blob **snap;   /* during a commit: the content of each open
				  * file as it was, for those that go away */
	uint32_t nsnap;
	bool broken;             /* that failed: reads fail until a remount */

	uint32_t meta_dir, meta_info, meta_log;
	struct sv_cache *cache;  /* owned */

	char **warnings;         /* owned strings, found while opening */
	size_t nwarnings;

	/* Read-ahead across files: when the files of a directory are read in
	 * listing order, a worker decodes the next few into the cache on the
	 * other core while the reader's requests travel.  pf_lock protects
	 * the fields below; the worker reads nodes under the read lock. */
	pthread_mutex_t pf_lock;
	pthread_cond_t pf_cond;  /* work queued, or stop */
	pthread_t pf_thread;
	bool pf_started, pf_stop;
	uint32_t pf_queue[PF_QUEUE];
	unsigned pf_head, pf_count;
	uint32_t pf_dir, pf_pos; /* the last file read: directory, position */
	uint32_t pf_upto;        /* positions up to here are queued or read */
	uint32_t pf_stride;      /* the reader's step through the directory */
	uint64_t pf_decoded;     /* files the worker decoded (for info) */

	/* Loads under way, so that concurrent readers of one node (the
	 * kernel's parallel read-ahead, several readers, the worker) share
	 * one decode instead of each making one. */
	pthread_mutex_t ld_lock;
	pthread_cond_t ld_cond;
	struct loading *loads;   /* protected by ld_lock */

	/* Told of changes made outside commits (direct writes, a followed
	 * container); set once by the client before use. */
	sv_changed_fn notify;
	void *notify_arg;

	pthread_mutex_t log_lock; /* protects the ring below */
	char *log[LOG_LINES];
	size_t log_next, log_count;
};

const struct sv_format *sv_format_find(const char *name)
{
	for (size_t i = 0; sv_formats[i]; i++)
		if (!strcmp(sv_formats[i]->name, name))
			return sv_formats[i];
	return NULL;
}

/* ---- log and warnings -------------------------------------------------- */

static void log_line(struct sv_container *c, const char *msg)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	size_t n = strlen(stamp) + strlen(msg) + 2;
	char *line = malloc(n);
	if (!line)
		return;
	snprintf(line, n, "%s %s", stamp, msg);
	pthread_mutex_lock(&c->log_lock);
	free(c->log[c->log_next]);
	c->log[c->log_next] = line;
	c->log_next = (c->log_next + 1) % LOG_LINES;
	if (c->log_count < LOG_LINES)
		c->log_count++;
	pthread_mutex_unlock(&c->log_lock);
}

void sv_log(struct sv_container *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_line(c, msg);
}

void sv_warn(struct sv_container *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->reindexing) /* found before: already said */
		return;
	log_line(c, msg);
	if (c->nwarnings >= 1000)
		return;
	char **w = realloc(c->warnings, (c->nwarnings + 1) * sizeof *w);
	if (!w)
		return;
	c->warnings = w;
	char *s = strdup(msg);
	if (s)
		c->warnings[c->nwarnings++] = s;
}

/* ---- node table -------------------------------------------------------- */

static uint32_t name_hash(uint32_t parent, const char *name)
{
	uint32_t h = 2166136261u ^ parent;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h ^ (h >> 15);
}

static int rehash(struct sv_container *c, uint32_t size)
{
	uint32_t *t = malloc(size * sizeof *t);
	if (!t)
		return -ENOMEM;
	memset(t, 0xff, size * sizeof *t);
	for (uint32_t i = 1; i < c->nnodes; i++) {
		struct sv_node *n = &c->nodes[i];
		if (n->flags & SV_N_GONE)
			continue;
		uint32_t h = name_hash(n->parent, n->name) & (size - 1);
		n->hnext = t[h];
		t[h] = i;
	}
	free(c->htab);
	c->htab = t;
	c->hsize = size;
	return 0;
}

static void hash_insert(struct sv_container *c, uint32_t i)
{
	struct sv_node *n = &c->nodes[i];
	uint32_t h = name_hash(n->parent, n->name) & (c->hsize - 1);
	n->hnext = c->htab[h];
	c->htab[h] = i;
}

static void hash_remove(struct sv_container *c, uint32_t i)
{
	struct sv_node *n = &c->nodes[i];
	uint32_t *pp = &c->htab[name_hash(n->parent, n->name) & (c->hsize - 1)];
	while (*pp != SV_NONE) {
		if (*pp == i) {
			*pp = n->hnext;
			break;
		}
		pp = &c->nodes[*pp].hnext;
	}
	n->hnext = SV_NONE;
}

/* Finds a live child by name, or SV_NONE. */
static uint32_t find_child(struct sv_container *c, uint32_t parent,
			   const char *name)
{
	uint32_t i = c->htab[name_hash(parent, name) & (c->hsize - 1)];
	while (i != SV_NONE) {
		struct sv_node *n = &c->nodes[i];
		if (n->parent == parent && !(n->flags & SV_N_GONE) &&
		    !strcmp(n->name, name))
			return i;
		i = n->hnext;
	}
	return SV_NONE;
}

static int kid_add(struct sv_container *c, struct sv_node *d, uint32_t k)
{
	if (d->nkids == d->capkids) {
		uint32_t cap = d->capkids ? d->capkids * 2 : 8;
		uint32_t *p = realloc(d->kids, cap * sizeof *p);
		if (!p)
			return -ENOMEM;
		d->kids = p;
		d->capkids = cap;
	}
	d->kids[d->nkids++] = k;
	d->nsubdirs += (c->nodes[k].flags & SV_N_DIR) != 0;
	return 0;
}

/* Keeps each child's kidpos equal to its index in the parent's list. */
static void renumber_kids(struct sv_container *c, struct sv_node *d, uint32_t from)
{
	for (uint32_t i = from; i < d->nkids; i++)
		c->nodes[d->kids[i]].kidpos = i;
}

static void kid_remove(struct sv_container *c, struct sv_node *d, uint32_t k)
{
	uint32_t i = c->nodes[k].kidpos;
	if (i >= d->nkids || d->kids[i] != k)
		return;
	memmove(&d->kids[i], &d->kids[i + 1], (d->nkids - i - 1) * sizeof *d->kids);
	d->nkids--;
	d->nsubdirs -= (c->nodes[k].flags & SV_N_DIR) != 0;
	renumber_kids(c, d, i);
}

static bool name_ok(const char *s)
{
	if (!*s || !strcmp(s, ".") || !strcmp(s, "..") || strlen(s) > 255)
		return false;
	return !strchr(s, '/');
}

/* Creates a fresh node; returns its number or SV_NONE. */
static uint32_t node_new(struct sv_container *c, uint32_t parent,
			 const char *name, uint32_t flags, uint64_t size,
			 uint64_t key)
{
	if (c->nnodes == UINT32_MAX - 1)
		return SV_NONE;
	if (c->nnodes == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		struct sv_node *p = realloc(c->nodes, cap * sizeof *p);
		if (!p)
			return SV_NONE;
		c->nodes = p;
		c->cap = cap;
	}
	if (c->nnodes + 1 > c->hsize / 2 && rehash(c, c->hsize * 2))
		return SV_NONE;
	uint32_t i = c->nnodes;
	struct sv_node *n = &c->nodes[i];
	memset(n, 0, sizeof *n);
	n->name = strdup(name);
	if (!n->name)
		return SV_NONE;
	n->parent = parent;
	n->flags = flags;
	n->size = n->stored_size = size;
	n->key = key;
	n->hnext = SV_NONE;
	sv_buf_init(&n->pending);
	if (i != SV_ROOT && kid_add(c, &c->nodes[parent], i)) {
		free(n->name);
		return SV_NONE;
	}
	n->kidpos = i != SV_ROOT ? c->nodes[parent].nkids - 1 : 0;
	c->nnodes++;
	if (i != SV_ROOT)
		hash_insert(c, i);
	return i;
}

uint32_t sv_node_add(struct sv_container *c, uint32_t parent, const char *name,
		     uint32_t flags, uint64_t size, uint64_t key)
{
	char fixed[300];
	if (parent >= c->nnodes || !(c->nodes[parent].flags & SV_N_DIR))
		return SV_NONE;
	if (!name_ok(name)) {
		size_t k = 0;
		for (const char *p = name; *p && k < 200; p++)
			fixed[k++] = *p == '/' ? '_' : *p;
		fixed[k] = '\0';
		if (!k || !strcmp(fixed, ".") || !strcmp(fixed, ".."))
			snprintf(fixed + k, sizeof fixed - k, "_");
		if (!c->reindexing)
			sv_log(c, "name \"%.200s\" is not a valid file name: shown as \"%s\"",
			       name, fixed);
		name = fixed;
	}
	uint32_t i = find_child(c, parent, name);
	if (i != SV_NONE && c->reindexing && (c->nodes[i].flags & SV_N_STALE)) {
		/* Found again after a commit: keep the number. */
		struct sv_node *n = &c->nodes[i];
		n->key = key;
		n->dupnext = 0;
		n->stored_size = size;
		if ((n->flags & SV_N_DIRTY) && !(n->flags & SV_N_READY)) {
			/* An edit still being written (its file is open): it stays
			 * pending, on top of the new stored content. */
			n->flags = flags | SV_N_DIRTY;
			return i;
		}
		/* A lazily sized node's size is not known here: it changed only
		 * if the format says so (a touch), and else keeps the size its
		 * first stat found. */
		bool lazy = flags & SV_N_LAZYSIZE;
		bool changed = (!lazy && n->size != size) ||
			       (n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_DERIVED |
					    SV_N_TOUCHED)) ||
			       (flags & SV_N_DERIVED);
		bool keep = lazy && !changed && (n->flags & SV_N_LAZYSIZE) &&
			    __atomic_load_n(&n->sized, __ATOMIC_ACQUIRE);
		n->flags = flags;
		if (!keep) {
			__atomic_store_n(&n->sized, 0, __ATOMIC_RELEASE);
			n->size = size;
		}
		if (changed)
			n->gen++;
		sv_buf_fini(&n->pending);
		return i;
	}
	if (i != SV_NONE) {
		/* Taken: make the name unique with a stable suffix. */
		char alt[320];
		const char *dot = strrchr(name, '.');
		int stem = dot && dot != name ? (int)(dot - name) : (int)strlen(name);
		/* The holder of the name remembers the next suffix to try, so a
		 * thousand duplicates cost a thousand lookups, not a million. */
		uint32_t owner = i;
		unsigned k = c->nodes[owner].dupnext > 2 ? c->nodes[owner].dupnext : 2;
		for (;; k++) {
			/* "65534.bin" -> "65534~2.bin": the extension stays last. */
			snprintf(alt, sizeof alt, "%.*s~%u%s", stem, name, k, name + stem);
			uint32_t other = find_child(c, parent, alt);
			/* While re-indexing, a stale node of that name is this one. */
			if (other == SV_NONE ||
			    (c->reindexing && (c->nodes[other].flags & SV_N_STALE)))
				break;
		}
		c->nodes[owner].dupnext = k + 1;
		if (!c->reindexing)
			sv_log(c, "duplicate name \"%s\": shown as \"%s\"", name, alt);
		return sv_node_add(c, parent, alt, flags, size, key);
	}
	return node_new(c, parent, name, flags, size, key);
}

void sv_node_touch(struct sv_container *c, uint32_t n)
{
	if (n < c->nnodes)
		c->nodes[n].flags |= SV_N_TOUCHED;
}


struct sv_node *sv_node(struct sv_container *c, uint32_t n)
{
	return n < c->nnodes ? &c->nodes[n] : NULL;
}

uint32_t sv_node_count(const struct sv_container *c)
{
	return c->nnodes;
}

const struct sv_buf *sv_node_edit(struct sv_container *c, uint32_t n)
{
	if (n >= c->nnodes)
		return NULL;
	struct sv_node *node = &c->nodes[n];
	return (node->flags & (SV_N_DIRTY | SV_N_NEW)) && (node->flags & SV_N_READY)
		       ? &node->pending : NULL;
}

bool sv_node_in_commit(struct sv_container *c, uint32_t n)
{
	if (n >= c->nnodes)
		return false;
	uint32_t f = c->nodes[n].flags;
	if (f & (SV_N_GONE | SV_N_TEMP | SV_N_DIR | SV_N_META))
		return false;
	return !(f & SV_N_NEW) || (f & SV_N_READY);
}

static int content_locked(struct sv_container *c, uint32_t i,
			  struct sv_blob **out, struct sv_err *err);

/*
 * Node i has left the tree.  If files are open on it, it lives on as an
 * orphan, as an unlinked file does: its content (the pending edit, or a
 * copy of what it reads) stays in memory for those opens until the last
 * is released.  Otherwise its memory goes.  Write lock held; must run
 * before a commit replaces what the node's content is read from.
 */
static void orphan_or_free(struct sv_container *c, uint32_t i)
{
	struct sv_node *n = &c->nodes[i];
	if (__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE) && !(n->flags & SV_N_DIR)) {
		if (!(n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN))) {
			struct sv_blob *b = NULL;
			struct sv_err err;
			sv_buf_fini(&n->pending);
			/* While re-indexing, the format's state is the new
			 * container's: the old content was kept before. */
			if (c->snap)
				b = i < c->nsnap ? sv_blob_ref(c->snap[i]) : NULL;
			else if (content_locked(c, i, &b, &err))
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
static void node_drop(struct sv_container *c, uint32_t i)
{
	struct sv_node *n = &c->nodes[i];
	hash_remove(c, i);
	kid_remove(c, &c->nodes[n->parent], i);
	orphan_or_free(c, i);
}

/* ---- accessors --------------------------------------------------------- */

void sv_container_set_priv(struct sv_container *c, void *priv) { c->priv = priv; }
void *sv_container_priv(const struct sv_container *c) { return c->priv; }
const struct sv_opts *sv_container_opts(const struct sv_container *c) { return &c->opts; }
uint64_t sv_container_size(const struct sv_container *c) { return (uint64_t)c->st.st_size; }
int sv_container_fd(const struct sv_container *c) { return c->fd; }
const struct sv_format *sv_container_format(const struct sv_container *c) { return c->fmt; }
const char *sv_container_path(const struct sv_container *c) { return c->path; }
bool sv_container_read_only(const struct sv_container *c) { return c->read_only; }

int sv_container_pread(struct sv_container *c, uint64_t off, void *buf,
		       size_t n, struct sv_err *err)
{
	uint64_t size = (uint64_t)c->st.st_size;
	if (off > size || n > size - off)
		return sv_err_set(err, -EBADMSG,
				  "range %llu+%zu lies past the end of the file (%llu bytes)",
				  (unsigned long long)off, n, (unsigned long long)size);
	uint8_t *p = buf;
	while (n) {
		ssize_t k = pread(c->fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sv_err_set(err, -EIO, "read failed at offset %llu: %s",
					  (unsigned long long)off, strerror(errno));
		if (k == 0)
			return sv_err_set(err, -EIO,
					  "file shrank while reading at offset %llu",
					  (unsigned long long)off);
		p += k;
		off += (uint64_t)k;
		n -= (size_t)k;
	}
	return 0;
}

/* ---- meta files -------------------------------------------------------- */

static int info_json(struct sv_container *c, struct sv_blob **out)
{
	json_t *o = json_object();
	if (!o)
		return -ENOMEM;
	uint32_t files = 0, dirs = 0;
	for (uint32_t i = 0; i < c->nnodes; i++) {
		const struct sv_node *n = &c->nodes[i];
		if (n->flags & (SV_N_GONE | SV_N_META | SV_N_TEMP) || i == c->meta_dir)
			continue;
		if (n->flags & SV_N_DIR)
			dirs++;
		else
			files++;
	}
	json_object_set_new(o, "format", json_string(c->fmt->name));
	json_object_set_new(o, "description", json_string(c->fmt->description));
	json_object_set_new(o, "container", json_string(c->path));
	json_object_set_new(o, "container_size", json_integer((json_int_t)c->st.st_size));
	json_object_set_new(o, "read_only", json_boolean(c->read_only));
	json_object_set_new(o, "files", json_integer(files));
	json_object_set_new(o, "directories", json_integer(dirs));
	if (c->fmt->info)
		c->fmt->info(c, o);
	json_t *w = json_array();
	for (size_t i = 0; i < c->nwarnings; i++)
		json_array_append_new(w, json_string(c->warnings[i]));
	json_object_set_new(o, "warnings", w);
	struct sv_cache_stats cs;
	sv_cache_stats(c->cache, &cs);
	json_t *cj = json_object();
	json_object_set_new(cj, "cap", json_integer((json_int_t)cs.cap));
	json_object_set_new(cj, "bytes", json_integer((json_int_t)cs.bytes));
	json_object_set_new(cj, "entries", json_integer((json_int_t)cs.entries));
	json_object_set_new(cj, "hits", json_integer((json_int_t)cs.hits));
	json_object_set_new(cj, "misses", json_integer((json_int_t)cs.misses));
	json_object_set_new(cj, "evictions", json_integer((json_int_t)cs.evictions));
	pthread_mutex_lock(&c->pf_lock);
	json_object_set_new(cj, "read_ahead", json_integer((json_int_t)c->pf_decoded));
	pthread_mutex_unlock(&c->pf_lock);
	json_object_set_new(o, "cache", cj);
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	size_t len = strlen(s);
	*out = sv_blob_new(len + 1);
	if (*out) {
		memcpy((*out)->data, s, len);
		(*out)->data[len] = '\n';
	}
	free(s);
	return *out ? 0 : -ENOMEM;
}

static int log_text(struct sv_container *c, struct sv_blob **out)
{
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	pthread_mutex_lock(&c->log_lock);
	size_t start = (c->log_next + LOG_LINES - c->log_count) % LOG_LINES;
	for (size_t i = 0; i < c->log_count && !rc; i++)
		rc = sv_buf_printf(&b, "%s\n", c->log[(start + i) % LOG_LINES]);
	pthread_mutex_unlock(&c->log_lock);
	if (!rc) {
		*out = sv_blob_dup(b.p, b.len);
		rc = *out ? 0 : -ENOMEM;
	}
	sv_buf_fini(&b);
	return rc;
}

static int meta_content(struct sv_container *c, uint32_t n, struct sv_blob **out)
{
	return n == c->meta_info ? info_json(c, out) : log_text(c, out);
}

/* ---- open and close ---------------------------------------------------- */

static int add_meta(struct sv_container *c)
{
	c->meta_dir = sv_node_add(c, SV_ROOT, ".savefs", SV_N_DIR | SV_N_RO, 0, 0);
	if (c->meta_dir == SV_NONE)
		return -ENOMEM;
	c->meta_info = sv_node_add(c, c->meta_dir, "info", SV_N_RO | SV_N_META, 0, 0);
	c->meta_log = sv_node_add(c, c->meta_dir, "log", SV_N_RO | SV_N_META, 0, 0);
	return c->meta_info == SV_NONE || c->meta_log == SV_NONE ? -ENOMEM : 0;
}

static int open_common(struct sv_container *c, const char *path,
		       const struct sv_opts *opts, struct sv_err *err);

static struct sv_container *alloc_container(const struct sv_opts *opts)
{
	struct sv_container *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->log_lock, NULL);
	pthread_mutex_init(&c->pf_lock, NULL);
	pthread_cond_init(&c->pf_cond, NULL);
	pthread_mutex_init(&c->ld_lock, NULL);
	pthread_cond_init(&c->ld_cond, NULL);
	c->pf_dir = SV_NONE;
	c->fd = -1;
	c->opts = *opts;
	c->opts.format = NULL;
	c->read_only = opts->read_only;
	return c;
}

/*
 * Before a read-write mount: removes the temporary files a commit that
 * crashed left beside the container (".NAME.savefs-XXXXXX" that nobody
 * holds locked), and checks that a new file can be made there at all;
 * if not, the container is mounted read-only (and the log says why).
 */
static void prepare_dir(struct sv_container *c)
{
	char *dup = strdup(c->path);
	if (!dup)
		return;
	char *dir = dirname(dup);
	const char *base = strrchr(c->path, '/') + 1;
	size_t blen = strlen(base);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		const char *n = e->d_name;
		if (n[0] != '.' || strncmp(n + 1, base, blen) || strncmp(n + 1 + blen, ".savefs-", 8) ||
		    strlen(n + 1 + blen + 8) != 6)
			continue;
		int fd = openat(dirfd(d), n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!flock(fd, LOCK_EX | LOCK_NB) && !unlinkat(dirfd(d), n, 0))
			sv_log(c, "removed %s/%s, left by a commit that did not finish", dir, n);
		close(fd);
	}
	if (d)
		closedir(d);
	size_t tlen = strlen(c->path) + 32;
	char *probe = malloc(tlen);
	if (probe) {
		snprintf(probe, tlen, "%s/.%s.savefs-XXXXXX", dir, base);
		int fd = mkostemp(probe, O_CLOEXEC);
		if (fd < 0) {
			sv_warn(c, "cannot create files beside the container (%s): mounted read-only",
				strerror(errno));
			c->read_only = true;
		} else {
			close(fd);
			unlink(probe);
		}
		free(probe);
	}
	free(dup);
}

int sv_container_open(const char *path, const struct sv_opts *opts,
		      struct sv_container **out, struct sv_err *err)
{
	*out = NULL;
	struct sv_container *c = alloc_container(opts);
	if (!c)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc;
	c->path = realpath(path, NULL);
	if (!c->path) {
		rc = sv_err_set(err, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	c->fd = open(c->path, O_RDWR | O_CLOEXEC);
	if (c->fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM ||
			  errno == ETXTBSY)) {
		c->fd = open(c->path, O_RDONLY | O_CLOEXEC);
		c->read_only = true;
	}
	if (c->fd < 0) {
		rc = sv_err_set(err, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	rc = open_common(c, path, opts, err);
	if (rc)
		goto fail;
	if (!c->read_only)
		prepare_dir(c);
	*out = c;
	return 0;
fail:
	sv_container_free(c);
	return rc;
}

int sv_container_open_mem(const void *p, size_t n, const struct sv_opts *opts,
			  struct sv_container **out, struct sv_err *err)
{
	*out = NULL;
	struct sv_container *c = alloc_container(opts);
	if (!c)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc;
	c->read_only = true;
	c->path = strdup("(memory)");
	c->fd = memfd_create("savefs", MFD_CLOEXEC);
	if (!c->path || c->fd < 0) {
		rc = sv_err_set(err, c->path ? -errno : -ENOMEM, "cannot hold the container in memory");
		goto fail;
	}
	rc = sv_write_all(c->fd, p, n);
	if (rc) {
		sv_err_set(err, rc, "cannot hold the container in memory");
		goto fail;
	}
	rc = open_common(c, c->path, opts, err);
	if (rc)
		goto fail;
	*out = c;
	return 0;
fail:
	sv_container_free(c);
	return rc;
}

static int open_common(struct sv_container *c, const char *path,
		       const struct sv_opts *opts, struct sv_err *err)
{
	int rc;
	if (fstat(c->fd, &c->st)) {
		rc = sv_err_set(err, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(c->st.st_mode)) {
		rc = sv_err_set(err, -EISDIR, "%s: is a directory", path);
		goto fail;
	}
	if (!S_ISREG(c->st.st_mode)) {
		rc = sv_err_set(err, -EMEDIUMTYPE, "%s: not a regular file", path);
		goto fail;
	}
	if (opts->format) {
		c->fmt = sv_format_find(opts->format);
		if (!c->fmt) {
			rc = sv_err_set(err, -EINVAL, "unknown format name \"%s\" (see --formats)",
					opts->format);
			goto fail;
		}
	} else {
		uint8_t head[64];
		ssize_t k = pread(c->fd, head, sizeof head, 0);
		if (k < 0) {
			rc = sv_err_set(err, -EIO, "%s: %s", path, strerror(errno));
			goto fail;
		}
		for (size_t i = 0; sv_formats[i] && !c->fmt; i++)
			if (sv_formats[i]->probe(head, (size_t)k))
				c->fmt = sv_formats[i];
		if (!c->fmt) {
			rc = sv_err_set(err, -EMEDIUMTYPE,
					"%s: not a container savefs knows (see --formats)", path);
			goto fail;
		}
	}
	if (!c->fmt->commit && !c->fmt->write)
		c->read_only = true;
	c->hsize = 64;
	c->htab = malloc(c->hsize * sizeof *c->htab);
	c->cache = sv_cache_new(opts->cache_cap);
	if (!c->htab || !c->cache) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	memset(c->htab, 0xff, c->hsize * sizeof *c->htab);
	if (node_new(c, SV_ROOT, "", SV_N_DIR, 0, 0) != SV_ROOT ||
	    add_meta(c)) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	rc = c->fmt->open(c, err);
fail:
	return rc;
}

void sv_container_free(struct sv_container *c)
{
	if (!c)
		return;
	if (c->pf_started) {
		pthread_mutex_lock(&c->pf_lock);
		c->pf_stop = true;
		pthread_cond_broadcast(&c->pf_cond);
		pthread_mutex_unlock(&c->pf_lock);
		pthread_join(c->pf_thread, NULL);
	}
	if (c->fmt && c->fmt->close)
		c->fmt->close(c);
	for (uint32_t i = 0; i < c->nnodes; i++) {
		free(c->nodes[i].name);
		free(c->nodes[i].kids);
		sv_buf_fini(&c->nodes[i].pending);
	}
	free(c->nodes);
	free(c->htab);
	sv_cache_free(c->cache);
	for (size_t i = 0; i < c->nwarnings; i++)
		free(c->warnings[i]);
	free(c->warnings);
	for (size_t i = 0; i < LOG_LINES; i++)
		free(c->log[i]);
	if (c->fd >= 0)
		close(c->fd);
	free(c->path);
	pthread_mutex_destroy(&c->log_lock);
	pthread_mutex_destroy(&c->pf_lock);
	pthread_cond_destroy(&c->pf_cond);
	pthread_mutex_destroy(&c->ld_lock);
	pthread_cond_destroy(&c->ld_cond);
	pthread_rwlock_destroy(&c->lock);
	free(c);
}

/* ---- client side: lookup, stat, readdir, read -------------------------- */

static bool live(struct sv_container *c, uint32_t n)
{
	return n < c->nnodes && !(c->nodes[n].flags & SV_N_GONE);
}

/* Live, or an orphan still open: what stat, read and write accept. */
static bool usable(struct sv_container *c, uint32_t n)
{
	return n < c->nnodes && (!(c->nodes[n].flags & SV_N_GONE) ||
				 (c->nodes[n].flags & SV_N_ORPHAN));
}

int sv_open(struct sv_container *c, uint32_t n)
{
	pthread_rwlock_rdlock(&c->lock);
	int rc = usable(c, n) ? 0 : -ENOENT;
	if (!rc)
		__atomic_add_fetch(&c->nodes[n].opens, 1, __ATOMIC_ACQ_REL);
	pthread_rwlock_unlock(&c->lock);
	return rc;
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
	struct sv_node *node = &c->nodes[n];
	if (!__atomic_load_n(&node->opens, __ATOMIC_ACQUIRE) && (node->flags & SV_N_ORPHAN)) {
		node->flags &= ~SV_N_ORPHAN;
		sv_buf_fini(&node->pending);
		node->size = 0;
	}
	pthread_rwlock_unlock(&c->lock);
}

static bool writable(struct sv_container *c, const struct sv_node *n)
{
	if (n->flags & SV_N_TEMP)
		return true;
	return !c->read_only && !(n->flags & (SV_N_RO | SV_N_META));
}

static void fill_stat(struct sv_container *c, uint32_t i, struct sv_stat *st)
{
	const struct sv_node *n = &c->nodes[i];
	memset(st, 0, sizeof *st);
	st->node = i;
	st->dir = n->flags & SV_N_DIR;
	st->writable = writable(c, n);
	st->volatile_ = n->flags & SV_N_META;
	st->bad = n->flags & SV_N_BAD;
	st->stream = n->flags & SV_N_STREAM;
	st->gen = n->gen;
	st->mtime = c->st.st_mtim;
	if (st->dir) {
		bool w = !c->read_only && !(n->flags & SV_N_RO);
		st->mode = S_IFDIR | (w ? 0755 : 0555);
		st->nlink = 2 + n->nsubdirs;
	} else {
		st->mode = S_IFREG | (st->writable ? 0644 : 0444);
		st->nlink = n->flags & SV_N_ORPHAN ? 0 : 1;
		st->size = __atomic_load_n(&n->size, __ATOMIC_RELAXED);
	}
}

static void log_failure(struct sv_container *c, uint32_t i, const char *what,
			const struct sv_err *e);

/* Lets the format add the entries of a lazy directory; called with the
 * read lock held, which is dropped and taken again.  0, or -EIO if the
 * format failed (the directory then stays empty). */
static int expand(struct sv_container *c, uint32_t dir)
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
	struct sv_node *d = &c->nodes[dir];
	if (live(c, dir) && (d->flags & SV_N_LAZYDIR)) {
		struct sv_err e;
		sv_err_clear(&e);
		d->flags &= ~SV_N_LAZYDIR;
		rc = c->fmt->expand ? c->fmt->expand(c, dir, &e) : 0;
		if (rc) {
			c->nodes[dir].flags |= SV_N_BAD;
			log_failure(c, dir, "cannot list", &e);
		}
	}
	if (dir < c->nnodes && (c->nodes[dir].flags & SV_N_BAD))
		rc = -EIO;
	pthread_rwlock_unlock(&c->lock);
	pthread_rwlock_rdlock(&c->lock);
	return rc;
}

/* Settles the size of an SV_N_LAZYSIZE node by loading it; read lock held. */
static void settle_size(struct sv_container *c, uint32_t i)
{
	struct sv_node *n = &c->nodes[i];
	if (!(n->flags & SV_N_LAZYSIZE) || (n->flags & (SV_N_DIRTY | SV_N_NEW |
	    SV_N_TEMP | SV_N_ORPHAN)) || __atomic_load_n(&n->sized, __ATOMIC_ACQUIRE))
		return;
	struct sv_blob *b = NULL;
	struct sv_err e;
	sv_err_clear(&e);
	uint64_t size = 0;
	if (!content_locked(c, i, &b, &e))
		size = b->len;
	sv_blob_unref(b);
	__atomic_store_n(&n->size, size, __ATOMIC_RELAXED);
	__atomic_store_n(&n->sized, 1, __ATOMIC_RELEASE);
}

int sv_lookup(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t *out)
{
	int rc = 0;
	pthread_rwlock_rdlock(&c->lock);
	if (expand(c, dir))
		rc = -EIO;
	else if (!live(c, dir))
		rc = -ENOENT;
	else if (!(c->nodes[dir].flags & SV_N_DIR))
		rc = -ENOTDIR;
	else if (!strcmp(name, "."))
		*out = dir;
	else if (!strcmp(name, ".."))
		*out = c->nodes[dir].parent;
	else if ((*out = find_child(c, dir, name)) == SV_NONE)
		rc = -ENOENT;
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
	if (!usable(c, n)) {
		rc = -ENOENT;
	} else {
		settle_size(c, n);
		fill_stat(c, n, st);
		if (c->nodes[n].flags & SV_N_META) {
			struct sv_blob *b = NULL;
			rc = meta_content(c, n, &b);
			if (!rc)
				st->size = b->len;
			sv_blob_unref(b);
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

static int path_locked(struct sv_container *c, uint32_t n, char *buf,
		       size_t size)
{
	if (!live(c, n))
		return -ENOENT;
	if (!size)
		return -ENAMETOOLONG;
	size_t pos = size;
	buf[--pos] = '\0';
	while (n != SV_ROOT) {
		const struct sv_node *node = &c->nodes[n];
		size_t k = strlen(node->name);
		size_t slash = pos < size - 1 ? 1 : 0;
		if (k + slash > pos)
			return -ENAMETOOLONG;
		if (slash)
			buf[--pos] = '/';
		pos -= k;
		memcpy(buf + pos, node->name, k);
		n = node->parent;
	}
	memmove(buf, buf + pos, size - pos);
	return 0;
}

int sv_path(struct sv_container *c, uint32_t n, char *buf, size_t size)
{
	pthread_rwlock_rdlock(&c->lock);
	int rc = path_locked(c, n, buf, size);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int sv_readdir(struct sv_container *c, uint32_t dir, uint64_t from,
	       sv_dir_fn fn, void *arg)
{
	int rc = 0;
	pthread_rwlock_rdlock(&c->lock);
	if (expand(c, dir)) {
		rc = -EIO;
	} else if (!live(c, dir)) {
		rc = -ENOENT;
	} else if (!(c->nodes[dir].flags & SV_N_DIR)) {
		rc = -ENOTDIR;
	} else {
		const struct sv_node *d = &c->nodes[dir];
		for (uint64_t i = from; i < d->nkids; i++) {
			struct sv_stat st;
			uint32_t k = d->kids[i];
			const struct sv_node *kn = &c->nodes[k];
			bool costly = (kn->flags & (SV_N_LAZYSIZE | SV_N_COSTLYSIZE)) ==
					      (SV_N_LAZYSIZE | SV_N_COSTLYSIZE) &&
				      !(kn->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP |
						     SV_N_ORPHAN)) &&
				      !__atomic_load_n(&kn->sized, __ATOMIC_ACQUIRE);
			if (!costly)
				settle_size(c, k);
			fill_stat(c, k, &st);
			st.unsized = costly;
			if (c->nodes[k].flags & SV_N_META) {
				struct sv_blob *b = NULL;
				if (!meta_content(c, k, &b))
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

/* Cache keys: the node number, its generation, and a bit for edits. */
#define EDIT_KEY (1ull << 63)

static uint64_t cache_key(const struct sv_node *n, uint32_t i)
{
	return (uint64_t)(n->gen & 0x7fffffff) << 32 | i;
}

/* Content of node i; called with the lock held (read or write). */
static int load_shared(struct sv_container *c, uint32_t i, uint64_t key,
		       struct sv_blob **out, struct sv_err *err);

static int stream_whole(struct sv_container *c, uint32_t i, struct sv_blob **out,
			struct sv_err *err);

static int content_locked(struct sv_container *c, uint32_t i,
			  struct sv_blob **out, struct sv_err *err)
{
	struct sv_node *n = &c->nodes[i];
	if (n->flags & SV_N_DIR)
		return sv_err_set(err, -EISDIR, "is a directory");
	if (n->flags & SV_N_META)
		return meta_content(c, i, out);
	if (c->broken)
		return sv_err_set(err, -EIO, "the container could not be read again after "
				  "a commit: remount it");
	if ((n->flags & SV_N_STREAM) && c->fmt->read)
		return stream_whole(c, i, out, err);
	if (n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN)) {
		/* A copy of the edit, cached until the next write changes gen,
		 * so that reading an edited file back is linear, not quadratic. */
		uint64_t key = cache_key(n, i) | EDIT_KEY;
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
	uint64_t key = cache_key(n, i);
	*out = sv_cache_get(c->cache, key);
	if (*out)
		return 0;
	return load_shared(c, i, key, out, err);
}

static void loading_put(struct loading *l)
{
	if (--l->refs == 0) {
		sv_blob_unref(l->blob);
		free(l);
	}
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
	if (rc) {
		*out = NULL;
		rc = rc == -ENOMEM || rc == -EFBIG ? rc : -EIO;
		err->code = rc;
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

static void log_failure(struct sv_container *c, uint32_t i, const char *what,
			const struct sv_err *err)
{
	char path[4096];
	if (path_locked(c, i, path, sizeof path))
		snprintf(path, sizeof path, "node %u", i);
	sv_log(c, "%s %s: %s", what, path, err->msg[0] ? err->msg : strerror(-err->code));
}

/* ---- read-ahead across files ------------------------------------------- */

/* A file whose content comes from the container through the cache. */
static bool plain_file(struct sv_container *c, uint32_t i)
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
		if (live(c, n) && plain_file(c, n)) {
			struct sv_blob *b = sv_cache_get(c->cache, cache_key(&c->nodes[n], n));
			struct sv_err err;
			/* Errors are not logged here: the reader meets them itself. */
			if (!b && !content_locked(c, n, &b, &err))
				decoded = true;
			sv_blob_unref(b);
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
static void pf_note_read(struct sv_container *c, uint32_t n)
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
		/* Small files decode faster than the worker wakes up. */
		if (!plain_file(c, k) || c->nodes[k].size < PF_MIN_SIZE ||
		    c->nodes[k].size > c->opts.cache_cap / 8)
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

int sv_content(struct sv_container *c, uint32_t n, struct sv_blob **out,
	       struct sv_err *err)
{
	struct sv_err local;
	if (!err)
		err = &local;
	sv_err_clear(err);
	*out = NULL;
	pthread_rwlock_rdlock(&c->lock);
	bool plain = live(c, n) && plain_file(c, n);
	int rc = usable(c, n) ? content_locked(c, n, out, err) : -ENOENT;
	if (!rc && plain && c->opts.readahead)
		pf_note_read(c, n);
	if (rc && rc != -ENOENT && rc != -EISDIR) {
		err->code = rc;
		log_failure(c, n, "read", err);
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

/* The whole of a stream node, read in pieces (for clients that want it
 * whole: the command line's cat and extract); read lock held. */
static int stream_whole(struct sv_container *c, uint32_t i, struct sv_blob **out,
			struct sv_err *err)
{
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
	if (usable(c, n) && (c->nodes[n].flags & SV_N_STREAM) &&
	    !(c->nodes[n].flags & SV_N_DIR) && c->fmt->read) {
		int rc = c->fmt->read(c, n, off, buf, size, got, err);
		if (rc)
			log_failure(c, n, "read", err);
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

/* ---- edits ------------------------------------------------------------- */

static void discard_locked(struct sv_container *c, uint32_t i);

/* Checks node i can be edited; called with the write lock held. */
static int can_edit(struct sv_container *c, uint32_t i, struct sv_err *err)
{
	if (!usable(c, i))
		return sv_err_set(err, -ENOENT, "no such file");
	struct sv_node *n = &c->nodes[i];
	if (n->flags & SV_N_DIR)
		return sv_err_set(err, -EISDIR, "is a directory");
	if (n->flags & (SV_N_TEMP | SV_N_ORPHAN))
		return 0; /* in memory only */
	if (c->read_only)
		return sv_err_set(err, -EROFS, "the container is mounted read-only");
	if (n->flags & (SV_N_RO | SV_N_META))
		return sv_err_set(err, -EPERM, "this file is a read-only view");
	if (n->flags & SV_N_DIRECT)
		return sv_err_set(err, -EPERM, "this file can only be appended to, at its end");
	if (!c->fmt->commit)
		return sv_err_set(err, -EPERM, "this file is a read-only view");
	return 0;
}

/* Makes node i's pending buffer hold its current content. */
static int begin_edit(struct sv_container *c, uint32_t i, struct sv_err *err)
{
	struct sv_node *n = &c->nodes[i];
	if (n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN))
		return 0;
	struct sv_blob *b = NULL;
	int rc = content_locked(c, i, &b, err);
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

static int resize_pending(struct sv_container *c, struct sv_node *n,
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

static int direct_done(struct sv_container *c, uint32_t old_count, int rc,
		       struct sv_err *err);

/* A write or truncation of an SV_N_DIRECT node; write lock held. */
static bool direct(struct sv_container *c, uint32_t i)
{
	return live(c, i) && (c->nodes[i].flags & SV_N_DIRECT) && !c->read_only &&
	       c->fmt->write;
}

/* Ends a direct write, truncation or sync of node i that returned rc,
 * with the nodes numbered from count on new: the tree follows, a refusal
 * is logged, and the write lock is let go. */
static int direct_end(struct sv_container *c, uint32_t i, uint32_t count, int rc,
		      struct sv_err *err)
{
	rc = direct_done(c, count, rc, err);
	if (rc)
		log_failure(c, i, "refused", err);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int sv_write(struct sv_container *c, uint32_t i, uint64_t off, const void *buf,
	     size_t size, struct sv_err *err)
{
	sv_err_clear(err);
	pthread_rwlock_wrlock(&c->lock);
	uint32_t count = c->nnodes; /* before the call: it may add nodes */
	if (direct(c, i))
		return direct_end(c, i, count, c->fmt->write(c, i, off, buf, size, err), err);
	int rc = can_edit(c, i, err);
	if (!rc)
		rc = begin_edit(c, i, err);
	if (!rc && off == SV_AT_END)
		off = c->nodes[i].pending.len;
	if (!rc && off + size < off)
		rc = sv_err_set(err, -EFBIG, "offset too large");
	struct sv_node *n = &c->nodes[i];
	if (!rc && off + size > n->pending.len) {
		rc = resize_pending(c, n, off + size, err);
		if (rc && !(n->flags & (SV_N_TEMP | SV_N_ORPHAN))) {
			/* A file cut short by a limit must not be committed. */
			log_failure(c, i, "refused", err);
			discard_locked(c, i);
		}
	}
	if (!rc && size)
		memcpy(n->pending.p + off, buf, size);
	if (!rc)
		n->gen++;
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int sv_truncate(struct sv_container *c, uint32_t i, uint64_t size,
		struct sv_err *err)
{
	sv_err_clear(err);
	pthread_rwlock_wrlock(&c->lock);
	uint32_t count = c->nnodes;
	if (direct(c, i))
		return direct_end(c, i, count,
				  c->fmt->truncate ? c->fmt->truncate(c, i, size, err)
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
	if (!rc)
		c->nodes[i].gen++;
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

static int refuse_dir(struct sv_container *c, uint32_t dir, struct sv_err *err)
{
	if (!live(c, dir))
		return sv_err_set(err, -ENOENT, "no such directory");
	if (!(c->nodes[dir].flags & SV_N_DIR))
		return sv_err_set(err, -ENOTDIR, "not a directory");
	if (c->read_only)
		return sv_err_set(err, -EROFS, "the container is mounted read-only");
	if (c->nodes[dir].flags & SV_N_RO)
		return sv_err_set(err, -EPERM, "files cannot be created here");
	return 0;
}

int sv_create(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t mode, uint32_t *out, struct sv_err *err)
{
	sv_err_clear(err);
	pthread_rwlock_wrlock(&c->lock);
	int rc = refuse_dir(c, dir, err);
	if (!rc && !name_ok(name))
		rc = sv_err_set(err, -EINVAL, "invalid file name");
	if (!rc && find_child(c, dir, name) != SV_NONE)
		rc = sv_err_set(err, -EEXIST, "file exists");
	uint32_t flags = SV_N_TEMP;
	if (!rc) {
		int fr = c->fmt->create ? c->fmt->create(c, dir, name, err) : -ENOENT;
		if (fr == 0)
			flags = SV_N_NEW;
		else if (fr != -ENOENT)
			rc = fr;
		sv_err_clear(err);
		if (rc)
			sv_err_set(err, rc, "%s", "cannot create this file");
	}
	if (!rc) {
		uint32_t i = node_new(c, dir, name, flags, 0, 0);
		if (i == SV_NONE)
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		else
			*out = i;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

/* ---- commit ------------------------------------------------------------ */

struct changed_list {
	uint32_t *v;
	size_t n, cap;
};

static void changed_add(struct changed_list *l, uint32_t i)
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

/* Writes the new container and swaps it in; write lock held. */
static int write_new(struct sv_container *c, struct sv_err *err)
{
	struct stat now;
	if (stat(c->path, &now) || now.st_ino != c->st.st_ino ||
	    now.st_dev != c->st.st_dev || now.st_size != c->st.st_size ||
	    now.st_mtim.tv_sec != c->st.st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != c->st.st_mtim.tv_nsec)
		return sv_err_set(err, -EBUSY,
				  "%s changed on disk since it was read: not overwritten "
				  "(remount to see the new file)", c->path);
	char *dup = strdup(c->path);
	size_t tlen = strlen(c->path) + 32;
	char *tmp = malloc(tlen);
	int rc = 0, fd = -1, dfd = -1;
	if (!dup || !tmp) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	char *dir = dirname(dup);
	snprintf(tmp, tlen, "%s/.%s.savefs-XXXXXX", dir, strrchr(c->path, '/') + 1);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = sv_err_set(err, -errno, "cannot create a new file beside %s: %s",
				c->path, strerror(errno));
		goto out;
	}
	/* Held until the file is renamed or removed: an open that finds a
	 * temporary file it can lock knows that no commit is writing it. */
	flock(fd, LOCK_EX | LOCK_NB);
	if (fchmod(fd, c->st.st_mode & 07777) ||
	    (fchown(fd, c->st.st_uid, c->st.st_gid) && errno != EPERM)) {
		rc = sv_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto unlink;
	}
	rc = c->fmt->commit(c, fd, err);
	if (rc)
		goto unlink;
	if (fsync(fd)) {
		rc = sv_err_set(err, -errno, "fsync %s: %s", tmp, strerror(errno));
		goto unlink;
	}
	if (rename(tmp, c->path)) {
		rc = sv_err_set(err, -errno, "rename onto %s: %s", c->path, strerror(errno));
		goto unlink;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	close(c->fd);
	c->fd = fd;
	fd = -1;
	if (fstat(c->fd, &c->st))
		rc = sv_err_set(err, -EIO, "fstat: %s", strerror(errno));
	goto out;
unlink:
	unlink(tmp);
out:
	if (fd >= 0)
		close(fd);
	free(tmp);
	free(dup);
	return rc;
}

/* Reads the index again after a commit; write lock held. */
static int reindex(struct sv_container *c, struct changed_list *changed,
		   struct sv_err *err)
{
	for (uint32_t i = 1; i < c->nnodes; i++) {
		struct sv_node *n = &c->nodes[i];
		if (!(n->flags & (SV_N_GONE | SV_N_TEMP | SV_N_META)) && i != c->meta_dir &&
		    (!(n->flags & SV_N_NEW) || (n->flags & SV_N_READY)))
			n->flags |= SV_N_STALE;
	}
	uint32_t old_count = c->nnodes;
	uint32_t *old_gen = malloc((old_count ? old_count : 1) * sizeof *old_gen);
	if (!old_gen)
		return sv_err_set(err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < old_count; i++)
		old_gen[i] = c->nodes[i].gen;
	c->fmt->close(c);
	c->priv = NULL;
	c->reindexing = true;
	int rc = c->fmt->open(c, err);
	/* A lazy directory that was listed before is listed again now, so that
	 * its entries keep their numbers (it still holds them, stale). */
	for (bool again = rc == 0; again;) {
		again = false;
		for (uint32_t i = 1; i < c->nnodes; i++) {
			struct sv_node *n = &c->nodes[i];
			if ((n->flags & (SV_N_LAZYDIR | SV_N_STALE)) != SV_N_LAZYDIR || !n->nkids)
				continue;
			struct sv_err e;
			sv_err_clear(&e);
			n->flags &= ~SV_N_LAZYDIR;
			if (c->fmt->expand && c->fmt->expand(c, i, &e))
				c->nodes[i].flags |= SV_N_BAD;
			again = true;
		}
	}
	c->reindexing = false;
	for (uint32_t i = 1; i < c->nnodes; i++) {
		struct sv_node *n = &c->nodes[i];
		if (n->flags & SV_N_STALE) {
			node_drop(c, i);
			n->flags &= ~SV_N_STALE;
			n->gen++;
			changed_add(changed, i);
		} else if (i >= old_count || n->gen != old_gen[i]) {
			changed_add(changed, i);
		}
	}
	free(old_gen);
	sv_cache_drop(c->cache, 0, 0);
	return rc;
}

/* Drops node i's pending edit; write lock held. */
static void discard_locked(struct sv_container *c, uint32_t i)
{
	struct sv_node *n = &c->nodes[i];
	if (n->flags & SV_N_NEW) {
		node_drop(c, i);
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

/* Validates every pending edit, dropping those refused; write lock held. */
static int validate(struct sv_container *c, struct changed_list *changed,
		    struct sv_err *err)
{
	int rc = 0;
	for (uint32_t i = 1; i < c->nnodes; i++) {
		struct sv_node *n = &c->nodes[i];
		if (!(n->flags & (SV_N_DIRTY | SV_N_NEW)) || !(n->flags & SV_N_READY) ||
		    !c->fmt->check)
			continue;
		struct sv_err e;
		sv_err_clear(&e);
		int r = c->fmt->check(c, i, n->pending.p, n->pending.len, &e);
		if (!r)
			continue;
		e.code = r;
		log_failure(c, i, "refused", &e);
		discard_locked(c, i);
		changed_add(changed, i);
		if (!rc) {
			rc = r;
			*err = e;
		}
	}
	return rc;
}

static bool anything_pending(struct sv_container *c)
{
	for (uint32_t i = 1; i < c->nnodes; i++)
		if (((c->nodes[i].flags & (SV_N_DIRTY | SV_N_NEW)) &&
		     (c->nodes[i].flags & SV_N_READY)) ||
		    (c->nodes[i].flags & (SV_N_GONE | SV_N_STALE)) == (SV_N_GONE | SV_N_STALE))
			return true;
	return false;
}

/* Commits with the write lock held. */
static int commit_locked(struct sv_container *c, struct changed_list *changed,
			 struct sv_err *err)
{
	if (!anything_pending(c))
		return 0;
	if (c->read_only)
		return sv_err_set(err, -EROFS, "the container is mounted read-only");
	if (c->broken)
		return sv_err_set(err, -EIO, "the container could not be read again after "
				  "a commit: remount it");
	int rc = validate(c, changed, err);
	if (rc)
		return rc;
	if (!anything_pending(c))
		return 0;
	/* Open files the commit may remove keep the content they had: read it
	 * now, while the format can still read the old file. */
	uint32_t count = c->nnodes;
	c->snap = calloc(count ? count : 1, sizeof *c->snap);
	if (!c->snap)
		return sv_err_set(err, -ENOMEM, "out of memory");
	c->nsnap = count;
	for (uint32_t i = 1; i < count; i++) {
		struct sv_node *n = &c->nodes[i];
		struct sv_err e;
		if (__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE) &&
		    !(n->flags & (SV_N_DIR | SV_N_META | SV_N_DIRTY | SV_N_NEW | SV_N_TEMP |
				  SV_N_ORPHAN | SV_N_GONE)) &&
		    content_locked(c, i, &c->snap[i], &e))
			c->snap[i] = NULL;
	}
	rc = write_new(c, err);
	bool written = rc == 0;
	if (!written)
		sv_log(c, "commit failed: %s", err->msg);
	else
		rc = reindex(c, changed, err);
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

static int commit_and_notify(struct sv_container *c, sv_changed_fn fn, void *arg,
			     struct sv_err *err, int (*pre)(struct sv_container *, void *,
							    struct sv_err *), void *pre_arg)
{
	struct changed_list changed = {0};
	struct sv_err local;
	if (!err)
		err = &local;
	sv_err_clear(err);
	pthread_rwlock_wrlock(&c->lock);
	int rc = pre ? pre(c, pre_arg, err) : 0;
	if (rc == 1)
		rc = 0; /* nothing to commit */
	else if (!rc)
		rc = commit_locked(c, &changed, err);
	/* Report names while still locked; the callback must not call back. */
	for (size_t k = 0; fn && k < changed.n; k++) {
		struct sv_node *n = &c->nodes[changed.v[k]];
		fn(arg, changed.v[k], n->parent, n->name, n->flags & SV_N_GONE);
	}
	pthread_rwlock_unlock(&c->lock);
	free(changed.v);
	return rc;
}

static int pre_commit_all(struct sv_container *c, void *arg, struct sv_err *err)
{
	for (uint32_t i = 1; i < c->nnodes; i++)
		if (c->nodes[i].flags & (SV_N_DIRTY | SV_N_NEW) && !(c->nodes[i].flags & SV_N_GONE))
			c->nodes[i].flags |= SV_N_READY;
	return 0;
}

int sv_commit(struct sv_container *c, sv_changed_fn fn, void *arg,
	      struct sv_err *err)
{
	return commit_and_notify(c, fn, arg, err, pre_commit_all, NULL);
}

/* Only this node's edit is ready: others may still be half-written. */
static int pre_flush(struct sv_container *c, void *arg, struct sv_err *err)
{
	uint32_t i = *(uint32_t *)arg;
	if (!live(c, i) || !(c->nodes[i].flags & (SV_N_DIRTY | SV_N_NEW)))
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
	pthread_rwlock_wrlock(&c->lock);
	uint32_t count = c->nnodes;
	if (direct(c, n))
		return direct_end(c, n, count, c->fmt->sync ? c->fmt->sync(c, n, err) : 0, err);
	pthread_rwlock_unlock(&c->lock);
	return commit_and_notify(c, fn, arg, err, pre_flush, &n);
}

/* ---- changes made outside commits -------------------------------------- */

void sv_container_set_notify(struct sv_container *c, sv_changed_fn fn, void *arg)
{
	c->notify = fn;
	c->notify_arg = arg;
}

bool sv_container_follows(const struct sv_container *c)
{
	return c->fmt && c->fmt->refresh && c->fd >= 0;
}

/*
 * After a direct write or a refresh (write lock held): rc 1 reads the whole
 * index again; otherwise the nodes added since old_count and those the
 * format touched get a new generation.  Either way the client hears of
 * them (a new node with its directory, whose listing changed).  Returns 0
 * or the error.
 */
static int direct_done(struct sv_container *c, uint32_t old_count, int rc,
		       struct sv_err *err)
{
	struct changed_list changed = {0};
	if (rc < 0)
		return rc;
	fstat(c->fd, &c->st);
	if (rc == 1) {
		rc = reindex(c, &changed, err);
		if (rc) {
			c->broken = true;
			sv_log(c, "re-reading %s failed: %s", c->path, err->msg);
		}
	} else {
		uint32_t last_dir = SV_NONE;
		for (uint32_t i = 1; i < c->nnodes; i++) {
			struct sv_node *n = &c->nodes[i];
			if (n->flags & SV_N_TOUCHED) {
				n->flags &= ~SV_N_TOUCHED;
				n->gen++;
				__atomic_store_n(&n->sized, 0, __ATOMIC_RELEASE);
				changed_add(&changed, i);
			} else if (i >= old_count && !(n->flags & SV_N_GONE)) {
				changed_add(&changed, i);
				if (n->parent != last_dir)
					changed_add(&changed, last_dir = n->parent);
			}
		}
	}
	for (size_t k = 0; c->notify && k < changed.n; k++) {
		struct sv_node *n = &c->nodes[changed.v[k]];
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
	pthread_rwlock_rdlock(&c->lock);
	bool same = !fstat(c->fd, &now) && now.st_size == c->st.st_size &&
		    now.st_mtim.tv_sec == c->st.st_mtim.tv_sec &&
		    now.st_mtim.tv_nsec == c->st.st_mtim.tv_nsec;
	pthread_rwlock_unlock(&c->lock);
	if (same)
		return 0;
	pthread_rwlock_wrlock(&c->lock);
	int rc = 0;
	if (!c->broken) {
		uint32_t count = c->nnodes;
		rc = direct_done(c, count, c->fmt->refresh(c, err), err);
		if (rc)
			sv_log(c, "following %s: %s", c->path, err->msg);
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

void sv_discard(struct sv_container *c, uint32_t n)
{
	pthread_rwlock_wrlock(&c->lock);
	if (live(c, n))
		discard_locked(c, n);
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
	if (!live(c, a->dir))
		return sv_err_set(err, -ENOENT, "no such directory");
	uint32_t i = find_child(c, a->dir, a->name);
	if (i == SV_NONE)
		return sv_err_set(err, -ENOENT, "no such file");
	struct sv_node *n = &c->nodes[i];
	if (n->flags & SV_N_DIR)
		return sv_err_set(err, -EISDIR, "is a directory");
	if (n->flags & (SV_N_TEMP | SV_N_NEW)) {
		node_drop(c, i);
		return 1;
	}
	if (c->read_only)
		return sv_err_set(err, -EROFS, "the container is mounted read-only");
	if (n->flags & (SV_N_RO | SV_N_META))
		return sv_err_set(err, -EPERM, "this file is a read-only view");
	int rc = c->fmt->unlink ? c->fmt->unlink(c, i, err)
				: sv_err_set(err, -EPERM, "entries of this container cannot be removed");
	if (rc) {
		log_failure(c, i, "refused to remove", err);
		return rc;
	}
	/* Gone from the tree now; the commit leaves it out of the container. */
	a->node = i;
	a->pos = n->kidpos;
	a->flags = n->flags;
	hash_remove(c, i);
	kid_remove(c, &c->nodes[n->parent], i);
	if (__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE))
		orphan_or_free(c, i); /* read it while the container still has it */
	n->flags = (n->flags & ~SV_N_DIRTY) | SV_N_GONE | SV_N_STALE;
	return 0;
}

int sv_unlink(struct sv_container *c, uint32_t dir, const char *name,
	      sv_changed_fn changed, void *arg, struct sv_err *err)
{
	struct unlink_arg a = {dir, name, SV_NONE, 0, 0};
	int rc = commit_and_notify(c, changed, arg, err, pre_unlink, &a);
	if (rc && a.node != SV_NONE) {
		/* The commit failed: the entry is still in the container, so it
		 * comes back where it was. */
		pthread_rwlock_wrlock(&c->lock);
		struct sv_node *n = &c->nodes[a.node];
		if ((n->flags & (SV_N_GONE | SV_N_STALE)) == (SV_N_GONE | SV_N_STALE)) {
			struct sv_node *d = &c->nodes[n->parent];
			if (!kid_add(c, d, a.node)) {
				uint32_t pos = a.pos < d->nkids ? a.pos : d->nkids - 1;
				memmove(&d->kids[pos + 1], &d->kids[pos],
					(d->nkids - 1 - pos) * sizeof *d->kids);
				d->kids[pos] = a.node;
				renumber_kids(c, d, pos);
				n->flags = a.flags;
				if (!(a.flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP))) {
					sv_buf_fini(&n->pending); /* an orphan's copy */
					n->size = n->stored_size;
					__atomic_store_n(&n->sized, 0, __ATOMIC_RELEASE);
				}
				hash_insert(c, a.node);
			}
		}
		pthread_rwlock_unlock(&c->lock);
	}
	return rc;
}

struct rename_arg {
	uint32_t dir, newdir, flags;
	const char *name, *newname;
};

/* Moves node i to (dir, name); write lock held. */
static int move_node(struct sv_container *c, uint32_t i, uint32_t dir,
		     const char *name)
{
	struct sv_node *n = &c->nodes[i];
	char *s = strdup(name);
	if (!s)
		return -ENOMEM;
	hash_remove(c, i);
	kid_remove(c, &c->nodes[n->parent], i);
	free(n->name);
	n->name = s;
	n->parent = dir;
	hash_insert(c, i);
	int rc = kid_add(c, &c->nodes[dir], i);
	if (!rc)
		n->kidpos = c->nodes[dir].nkids - 1;
	return rc;
}

/* Node i replaces node j: takes j's name and its place in the listing;
 * j is dropped.  Write lock held. */
static int take_place(struct sv_container *c, uint32_t i, uint32_t j)
{
	struct sv_node *n = &c->nodes[i], *d = &c->nodes[j];
	char *s = strdup(d->name);
	if (!s)
		return -ENOMEM;
	uint32_t dir = d->parent;
	hash_remove(c, i);
	kid_remove(c, &c->nodes[n->parent], i);
	struct sv_node *pd = &c->nodes[dir];
	if (d->kidpos < pd->nkids && pd->kids[d->kidpos] == j) {
		pd->kids[d->kidpos] = i;
		n->kidpos = d->kidpos;
	}
	hash_remove(c, j);
	orphan_or_free(c, j);
	d->gen++;
	free(n->name);
	n->name = s;
	n->parent = dir;
	hash_insert(c, i);
	return 0;
}

static int pre_rename(struct sv_container *c, void *arg, struct sv_err *err)
{
	struct rename_arg *a = arg;
	if (a->flags & ~1u) /* only RENAME_NOREPLACE */
		return sv_err_set(err, -EINVAL, "unsupported rename flags");
	if (!live(c, a->dir) || !live(c, a->newdir))
		return sv_err_set(err, -ENOENT, "no such directory");
	if (!(c->nodes[a->newdir].flags & SV_N_DIR))
		return sv_err_set(err, -ENOTDIR, "not a directory");
	if (c->nodes[a->newdir].flags & SV_N_RO)
		return sv_err_set(err, -EPERM, "files cannot be created here");
	if (!name_ok(a->newname))
		return sv_err_set(err, -EINVAL, "invalid file name");
	uint32_t i = find_child(c, a->dir, a->name);
	if (i == SV_NONE)
		return sv_err_set(err, -ENOENT, "no such file");
	struct sv_node *n = &c->nodes[i];
	uint32_t j = find_child(c, a->newdir, a->newname);
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
		struct sv_node *d = &c->nodes[j];
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
		if (c->fmt->check) {
			rc = c->fmt->check(c, j, n->pending.p, n->pending.len, err);
			if (rc) {
				err->code = rc;
				log_failure(c, j, "refused", err);
				return rc;
			}
		}
		/* As in POSIX, the renamed file replaces the target: node i takes
		 * over the entry's identity (its format key), j goes away. */
		n->key = d->key;
		n->stored_size = d->stored_size;
		n->flags = (d->flags & ~(SV_N_BAD | SV_N_NEW | SV_N_TEMP)) | SV_N_DIRTY |
			   SV_N_READY; /* a renamed file is a finished one */
		n->size = n->pending.len;
		rc = take_place(c, i, j);
		return rc ? sv_err_set(err, rc, "out of memory") : 0;
	}
	/* A new name: does the container take it as an entry? */
	bool entry = false;
	if (!c->read_only && c->fmt->create) {
		int fr = c->fmt->create(c, a->newdir, a->newname, err);
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

int sv_rename(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t newdir, const char *newname, uint32_t flags,
	      sv_changed_fn changed, void *arg, struct sv_err *err)
{
	struct rename_arg a = {dir, newdir, flags, name, newname};
	return commit_and_notify(c, changed, arg, err, pre_rename, &a);
}
