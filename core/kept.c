/*
 * kept.c - what one mount learned of a container's views, kept for the
 * next: each view's size and digest, and the views themselves.
 *
 * Both live in the persistent index's store (index.c), keyed like every
 * record there by the container's identity (device, inode, size, mtime,
 * ctime; for an object on a server its ETag), so a container changed in
 * any way never meets them.  Their version says which savefs made them,
 * the format's view version and the format options given: a release, or a
 * format whose views changed, starts afresh.
 *
 *   sizes   one record per container ("sizes"): for each view whose size
 *           was learned, the hash of its path, its size and the xxh3 of
 *           its bytes, sorted by path hash.  Read at the first stat that
 *           would have built a view to size it; written back, with what
 *           this mount learned, when the container is closed.
 *   views   one record per view under views/ ("v" and its path hash), keyed
 *           by the container's path rather than its identity: the view's
 *           bytes (a zstd frame of them where that saves an eighth), served
 *           only when their xxh3 is the digest the sizes
 *           record of the container as it is gives that view (the digest
 *           is in the record's key: view_key).  So a commit
 *           need not write again the views it left as they were: their
 *           entries are carried to the new identity's sizes record (a node
 *           whose generation did not move since its view was noted).
 *           Written when a view is built, within the container's budget
 *           (see budget()); read instead of building it.
 *           The directory is capped (VIEWS_CAP), least recently used out.
 *
 * Which views: a file the format builds whole (load()), as stored (no
 * pending edit, no stream, no file written at once, not the container's
 * own .savefs/), while the container is neither re-indexing nor broken;
 * of a container that is one file (a directory's identity does not move
 * when a member of it grows).
 *
 * kept.lock guards the tables below (a leaf: taken under the container's
 * read or write lock, holding nothing else).  The counts are process-wide
 * atomics, for /.savefs/info.
 */
#include "internal.h"
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <xxhash.h>
#include <zstd.h>

/* What the views directory may hold (SAVEFS_TEST_VIEWS_CAP, in bytes,
 * for the tests that fill it). */
#define VIEWS_CAP_DEFAULT (512ull << 20)
static uint64_t views_cap = VIEWS_CAP_DEFAULT;
#define VIEWS_CAP views_cap
/* Views past this size are built each time (a view this big is a
 * container's member as stored, read as fast as the record would be). */
#define VIEW_MAX (64ull << 20)

/* The layout of the records below: bumped when it changes. */
#define KEPT_LAYOUT 4

/* A view record's payload: a byte saying how the view follows, as built
 * or a zstd frame of it (stored so when that saves an eighth: a map's
 * tile grids as text shrink a hundredfold, its PNGs not at all). */
enum { VIEW_RAW = 0, VIEW_ZSTD = 1 };

/* Sizes a container's record holds at most (1.5 MB of them, and as much
 * again while the record is written): they are memory beside the cache's
 * cap.  A container of more views (a long game's every state) keeps the
 * sizes of the first ones looked at. */
#define MAX_SIZES (1u << 16)

/* A view's size and digest; with KEPT_VIEW in size, its view is on disk. */
struct kept_size {
	uint64_t path, size, digest;
};
#define KEPT_VIEW (1ull << 63)

/* The sizes record: this head, then the sizes sorted by path. */
struct kept_head {
	uint64_t kept;  /* bytes of the views on disk */
	uint64_t full;  /* 1: the container's budget was reached; | 2: its
			 * decodes logged something (nothing is served: each
			 * mount decodes, and its log says it again) */
};

struct sv_kept {
	pthread_mutex_t lock;
	pthread_cond_t idle;     /* pending fell to 0 */
	unsigned pending;        /* its views waiting for a worker to store them */
	bool looked;             /* the sizes record was looked for */
	struct stat id;          /* the identity it was looked for at */
	struct kept_size *v;     /* from the record, sorted by path */
	size_t n;
	struct kept_size *add;   /* learned here, not in v */
	size_t nadd, capadd;
	uint32_t *slots;         /* add's hash: index + 1 by path, 0 empty */
	size_t nslots;           /* a power of two, or 0 */
	uint64_t kept;           /* bytes of its views on disk */
	bool full;               /* its budget was reached: no more are kept */
	bool logged;             /* its decodes logged: nothing kept is served */
	uint32_t epoch;          /* bumped at each identity looked at (a
				  * commit's new container): a node whose
				  * kept_epoch is behind is not known kept */
	bool dirty;              /* learned something the record lacks */
	struct kept_size *prev;  /* the identity before (a commit's old
				  * container), sorted by path: a view built
				  * again with a digest it had is on disk */
	size_t nprev;
};

/* Bytes of views stored by this process since the cap was looked at. */
static uint64_t views_bytes;

/* The process's counts, for /.savefs/info (atomics). */
static struct {
	uint64_t sizes_read;   /* sizes served from an earlier mount's record */
	uint64_t views_read;   /* views served from the disk */
	uint64_t views_built;  /* views that could be kept, built by the formats */
	uint64_t views_stored; /* views written to the disk */
	uint64_t views_unkept; /* built and not kept: past their container's
				* budget, or its decodes logged (sizes kept) */
} counts;

/* Views waiting for a worker, at most STORE_PENDING_MAX bytes of them
 * (past it the builder writes its own: the views held here are memory
 * beside the cache's cap).  store_lock guards the queue (a leaf but for
 * the pool's lock under it). */
#define STORE_PENDING_MAX (2u << 20)
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static struct store_job *store_head, *store_tail;
static uint64_t store_bytes;
static unsigned store_jobs;      /* queued or being written */
static unsigned store_coming;    /* built, their sv_kept_built under way */
static pthread_cond_t store_idle = PTHREAD_COND_INITIALIZER;
static bool store_run(struct sv_ahead *o);
static struct sv_ahead store_owner = {store_run, NULL, false, false, 0};

static void store_drain(struct sv_kept *k);

void *sv_kept_json(void)
{
	/* The views handed to the workers written first: the counts say
	 * what is on disk. */
	store_drain(NULL);
	static const struct {
		const char *name;
		const uint64_t *v;
	} f[] = {{"sizes_read", &counts.sizes_read}, {"views_read", &counts.views_read},
		 {"views_built", &counts.views_built}, {"views_stored", &counts.views_stored},
		 {"views_unkept", &counts.views_unkept}};
	json_t *o = json_object();
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		json_object_set_new(o, f[i].name,
				    json_integer((json_int_t)__atomic_load_n(f[i].v, __ATOMIC_RELAXED)));
	return o;
}

bool sv_kept_dir(const struct sv_container *c, char *buf, size_t size)
{
	return !c->opts.noindex && (c->path[0] == '/' || c->src->ops->remote) &&
	       !sv_index_dir(buf, size);
}

static bool same_id(const struct stat *was, const struct stat *now)
{
	return sv_source_same(was, now) == SV_SOURCE_SAME;
}

/* The records' version: this savefs, the format's views, its options. */
static uint32_t version(const struct sv_container *c)
{
	XXH64_hash_t h = XXH3_64bits_withSeed(SV_VERSION, sizeof SV_VERSION - 1,
					      (uint64_t)KEPT_LAYOUT << 32 | c->fmt->view_version);
	if (c->format_opts)
		h = XXH3_64bits_withSeed(c->format_opts, strlen(c->format_opts), h);
	return (uint32_t)(h ^ h >> 32);
}

static struct sv_index_key key_of(const struct sv_container *c, const char *what)
{
	struct sv_index_key k = {c->fmt->name, version(c), what, c->src->st};
	return k;
}

/* A view record's key: the container by its path, not its identity, and
 * the view's digest where a container's size goes (the sizes record is the
 * identity's, and says which digest each view must have).  A view a
 * commit left as it was stays good for the new container; a record of
 * other bytes does not match its key, and the index's own check of the
 * payload's hash is the only one needed. */
static struct sv_index_key view_key(const struct sv_container *c, const char *what,
				    uint64_t digest)
{
	struct sv_index_key k = {c->fmt->name, version(c), what, {0}};
	k.st.st_dev = 0x5e5e;
	k.st.st_ino = (ino_t)(XXH3_64bits(c->path, strlen(c->path)) | 1);
	k.st.st_size = (off_t)digest;
	return k;
}

/* Whether node i's view may be kept or served: see the top. */
static bool eligible(const struct sv_container *c, uint32_t i)
{
	const struct sv_inode *n = &c->nodes[i];
	return c->kept && S_ISREG(c->src->st.st_mode) && !c->reindexing && !c->broken && !c->snap &&
	       !(n->flags & (SV_N_DIR | SV_N_META | SV_N_STREAM | SV_N_DIRECT | SV_N_BAD |
			     SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN | SV_N_GONE));
}

/*
 * What a container's views may take on disk: four times the container and
 * 4 MB, a quarter of the cap at most.  Views are kept in the order they
 * are built until the next would not fit; then none more (the record says
 * so), so that what is kept does not depend on which mount came first.
 * A game's every state is many times its log: the first ones are kept.
 */
static uint64_t budget(const struct sv_container *c)
{
	uint64_t b = (uint64_t)c->src->st.st_size * 4 + (4ull << 20);
	return b < VIEWS_CAP / 4 ? b : VIEWS_CAP / 4;
}

static uint64_t path_hash(struct sv_container *c, uint32_t i, bool *ok)
{
	char p[4096];
	*ok = sv_path_locked(c, i, p, sizeof p) == 0;
	return *ok ? XXH3_64bits(p, strlen(p)) : 0;
}

/* The record of the view at path hash p of that digest: its directory (views/) into
 * dir and its key (what into what), or false if c keeps nothing. */
static bool view_record(const struct sv_container *c, uint64_t p, uint64_t digest, char dir[4096],
			char what[32], struct sv_index_key *key)
{
	if (!sv_kept_dir(c, dir, 4096 - 8))
		return false;
	strcat(dir, "/views");
	snprintf(what, 32, "v%016llx", (unsigned long long)p);
	*key = view_key(c, what, digest);
	return true;
}

static void read_cap(void)
{
	const char *e = getenv("SAVEFS_TEST_VIEWS_CAP");
	char *end;
	unsigned long long v = e ? strtoull(e, &end, 10) : 0;
	if (e && *e && !*end && v >= 16)
		views_cap = v;
}

int sv_kept_init(struct sv_container *c)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, read_cap);
	char dir[4096];
	if (!sv_kept_dir(c, dir, sizeof dir))
		return 0; /* nothing kept: c->kept stays NULL */
	struct sv_kept *k = calloc(1, sizeof *k);
	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->idle, NULL);
	c->kept = k;
	return 0;
}

static int by_path(const void *a, const void *b)
{
	const struct kept_size *x = a, *y = b;
	return x->path < y->path ? -1 : x->path > y->path;
}

/* What k holds, the record's and what was learned here, sorted by path
 * with each path once, after room bytes left free at the front (a new
 * array; *n its count), or NULL if out of memory. */
static struct kept_size *merged(const struct sv_kept *k, size_t room, size_t *n)
{
	size_t all = k->n + k->nadd;
	uint8_t *p = malloc(room + all * sizeof(struct kept_size) + 1);
	if (!p)
		return NULL;
	struct kept_size *v = (struct kept_size *)(p + room);
	if (k->n)
		memcpy(v, k->v, k->n * sizeof *v);
	if (k->nadd)
		memcpy(v + k->n, k->add, k->nadd * sizeof *v);
	qsort(v, all, sizeof *v, by_path);
	size_t m = 0;
	for (size_t j = 0; j < all; j++)
		if (!m || v[m - 1].path != v[j].path)
			v[m++] = v[j];
	*n = m;
	return v;
}

/* The sizes record for the container as it is now (kept.lock held). */
static void load_record(struct sv_container *c, struct sv_kept *k);
static const struct kept_size *find(const struct sv_kept *k, uint64_t path);
static bool learn(struct sv_kept *k, struct kept_size s);
static void carry(struct sv_container *c, struct sv_kept *k, struct kept_size *old, size_t nold,
		  uint32_t old_epoch);

/* The tables for the container as it is now (kept.lock held; the
 * container's lock too, read or write).  When the container changed under
 * this mount (a commit), what was noted of views the commit left as they
 * were is carried to the new identity. */
static void look(struct sv_container *c, struct sv_kept *k)
{
	if (k->looked && same_id(&k->id, &c->src->st))
		return;
	size_t nold = 0;
	struct kept_size *old = k->looked ? merged(k, 0, &nold) : NULL;
	uint32_t old_epoch = k->epoch;
	free(k->v);
	free(k->add);
	free(k->slots);
	k->v = k->add = NULL;
	k->slots = NULL;
	k->n = k->nadd = k->capadd = k->nslots = 0;
	k->kept = 0;
	k->full = false;
	k->logged = false;
	k->dirty = false;
	k->looked = true;
	k->epoch++;
	k->id = c->src->st;
	load_record(c, k);
	if (nold)
		carry(c, k, old, nold, old_epoch);
	free(k->prev);
	k->prev = old;
	k->nprev = nold;
}

static void carry(struct sv_container *c, struct sv_kept *k, struct kept_size *old, size_t nold,
		  uint32_t old_epoch)
{
	SV_EACH_NODE(c, i, 1) {
		struct sv_inode *n = &c->nodes[i];
		if (__atomic_load_n(&n->kept_epoch, __ATOMIC_RELAXED) != old_epoch ||
		    __atomic_load_n(&n->kept_gen, __ATOMIC_RELAXED) != n->gen || !eligible(c, i))
			continue;
		bool ok;
		uint64_t p = path_hash(c, i, &ok);
		struct kept_size want = {p, 0, 0};
		const struct kept_size *f = ok ? bsearch(&want, old, nold, sizeof *old, by_path) : NULL;
		if (!f || find(k, p))
			continue;
		struct kept_size e = *f;
		if ((e.size & KEPT_VIEW) && k->kept + (e.size & ~KEPT_VIEW) + SV_INDEX_HEAD > budget(c))
			e.size &= ~KEPT_VIEW;
		if (!learn(k, e))
			break;
		if (e.size & KEPT_VIEW)
			k->kept += (e.size & ~KEPT_VIEW) + SV_INDEX_HEAD;
		k->dirty = true;
		__atomic_store_n(&n->kept_epoch, k->epoch, __ATOMIC_RELAXED);
	}
}

static void load_record(struct sv_container *c, struct sv_kept *k)
{
	char dir[4096];
	struct sv_blob *b = NULL;
	struct sv_index_key key = key_of(c, "sizes");
	if (!sv_kept_dir(c, dir, sizeof dir) ||
	    sv_index_load(dir, &key, sizeof(struct kept_head) +
			  (uint64_t)MAX_SIZES * sizeof(struct kept_size), &b))
		return;
	struct kept_head h;
	size_t n = b->len >= sizeof h ? (b->len - sizeof h) / sizeof(struct kept_size) : 0;
	if (b->len >= sizeof h && sizeof h + n * sizeof(struct kept_size) == b->len &&
	    (k->v = malloc(n ? n * sizeof *k->v : 1))) {
		memcpy(&h, b->data, sizeof h);
		memcpy(k->v, b->data + sizeof h, n * sizeof *k->v);
		k->n = n;
		k->kept = h.kept;
		k->full = h.full & 1;
		k->logged = h.full & 2;
		/* Written sorted; one that is not is read as none. */
		for (size_t j = 1; j < n; j++)
			if (k->v[j - 1].path >= k->v[j].path) {
				k->n = 0;
				k->kept = 0;
				k->full = false;
				k->logged = false;
				break;
			}
	}
	sv_blob_unref(b);
}

static size_t slot_of(uint64_t path, size_t nslots)
{
	return (size_t)((path * 0x9e3779b97f4a7c15ull) >> 32) & (nslots - 1);
}

static const struct kept_size *find(const struct sv_kept *k, uint64_t path)
{
	struct kept_size want = {path, 0, 0};
	const struct kept_size *f = k->n ? bsearch(&want, k->v, k->n, sizeof *k->v, by_path) : NULL;
	if (f || !k->nslots)
		return f;
	for (size_t h = slot_of(path, k->nslots); k->slots[h]; h = (h + 1) & (k->nslots - 1))
		if (k->add[k->slots[h] - 1].path == path)
			return &k->add[k->slots[h] - 1];
	return NULL;
}

/* Adds s to what was learned here (not found before): false if it cannot
 * (out of memory, or MAX_SIZES reached: the rest are learned again). */
static bool learn(struct sv_kept *k, struct kept_size s)
{
	if (k->n + k->nadd >= MAX_SIZES)
		return false;
	if (sv_grow((void **)&k->add, &k->capadd, k->nadd + 1, sizeof *k->add))
		return false;
	if ((k->nadd + 1) * 2 > k->nslots) {
		size_t ns = k->nslots ? k->nslots * 2 : 128;
		uint32_t *sl = calloc(ns, sizeof *sl);
		if (!sl)
			return false;
		for (size_t j = 0; j < k->nadd; j++) {
			size_t h = slot_of(k->add[j].path, ns);
			while (sl[h])
				h = (h + 1) & (ns - 1);
			sl[h] = (uint32_t)j + 1;
		}
		free(k->slots);
		k->slots = sl;
		k->nslots = ns;
	}
	k->add[k->nadd] = s;
	size_t h = slot_of(s.path, k->nslots);
	while (k->slots[h])
		h = (h + 1) & (k->nslots - 1);
	k->slots[h] = (uint32_t)++k->nadd;
	return true;
}

bool sv_kept_size(struct sv_container *c, uint32_t i, uint64_t *size, uint64_t *digest)
{
	if (!eligible(c, i))
		return false;
	bool ok;
	uint64_t p = path_hash(c, i, &ok);
	if (!ok)
		return false;
	struct sv_kept *k = c->kept;
	pthread_mutex_lock(&k->lock);
	look(c, k);
	/* (From the record only: what this mount learned, its nodes know.) */
	const struct kept_size *f = k->n && !k->logged ? bsearch(&(struct kept_size){p, 0, 0}, k->v, k->n,
						   sizeof *k->v, by_path) : NULL;
	if (f) {
		*size = f->size & ~KEPT_VIEW;
		*digest = f->digest;
		__atomic_store_n(&c->nodes[i].kept_epoch, k->epoch, __ATOMIC_RELAXED);
		__atomic_store_n(&c->nodes[i].kept_gen, c->nodes[i].gen, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&k->lock);
	if (f)
		__atomic_add_fetch(&counts.sizes_read, 1, __ATOMIC_RELAXED);
	return f != NULL;
}

/* A zstd context per thread, made at its first pack. */
static pthread_key_t cctx_key;
static pthread_once_t cctx_once = PTHREAD_ONCE_INIT;

static void cctx_free(void *z)
{
	ZSTD_freeCCtx(z);
}

static void cctx_key_make(void)
{
	pthread_key_create(&cctx_key, cctx_free);
}

/* This thread is one of the pool's (a few, for the process's life), not
 * a reader that stores its own view when the queue is full (as many as
 * the client's requests: a context each would be megabytes beside the
 * cache). */
static __thread bool store_worker;

static ZSTD_CCtx *thread_cctx(void)
{
	if (!store_worker)
		return ZSTD_createCCtx();
	pthread_once(&cctx_once, cctx_key_make);
	ZSTD_CCtx *z = pthread_getspecific(cctx_key);
	if (!z && (z = ZSTD_createCCtx()) && pthread_setspecific(cctx_key, z)) {
		ZSTD_freeCCtx(z);
		z = NULL;
	}
	return z;
}

/* The view's bytes as a zstd frame into *out (level 1: a map's 58 MB of
 * tile text in 45 ms), or -1 if that does not save an eighth of them:
 * compressed a piece at a time into a buffer that never grows past that
 * eighth, so that a view no smaller holds no second copy of itself. */
static int pack(const struct sv_blob *b, uint8_t **out, size_t *len)
{
	size_t most = b->len - b->len / 8, cap = 0, n = 0;
	uint8_t *buf = NULL;
	ZSTD_CCtx *z = b->len < 512 ? NULL : thread_cctx();
	int rc = -1;
	if (!z || ZSTD_isError(ZSTD_CCtx_reset(z, ZSTD_reset_session_and_parameters)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(z, b->len)))
		goto out;
	ZSTD_inBuffer in = {b->data, b->len, 0};
	for (;;) {
		if (n == cap) {
			size_t want = cap ? cap * 2 : 64 << 10;
			if (want > most)
				want = most;
			if (want <= cap)
				goto out; /* it does not save enough */
			uint8_t *g = realloc(buf, want);
			if (!g)
				goto out;
			buf = g;
			cap = want;
		}
		ZSTD_outBuffer o = {buf, cap, n};
		size_t left = ZSTD_compressStream2(z, &o, &in, ZSTD_e_end);
		n = o.pos;
		if (ZSTD_isError(left))
			goto out;
		if (left == 0)
			break;
	}
	*out = buf;
	*len = n;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	if (!store_worker)
		ZSTD_freeCCtx(z);
	return rc;
}

/* A view record's payload p back to the view, of the size and digest the
 * sizes record gives, or NULL (damaged, foreign, or out of memory). */
static struct sv_blob *unpack(const struct sv_blob *p, uint64_t size, uint64_t digest)
{
	if (p->len < 1)
		return NULL;
	const uint8_t *d = p->data;
	struct sv_blob *b = NULL;
	if (d[0] == VIEW_RAW && p->len - 1 == size) {
		b = sv_blob_new(size);
		if (b)
			memcpy(b->data, d + 1, size);
	} else if (d[0] == VIEW_ZSTD &&
		   ZSTD_getFrameContentSize(d + 1, p->len - 1) == (unsigned long long)size) {
		b = sv_blob_new(size);
		if (b && ZSTD_decompress(b->data, size, d + 1, p->len - 1) != size) {
			sv_blob_unref(b);
			b = NULL;
		}
	}
	if (b && XXH3_64bits(b->data, b->len) != digest) {
		sv_blob_unref(b);
		b = NULL;
	}
	return b;
}

int sv_kept_view(struct sv_container *c, uint32_t i, struct sv_kept_ticket *t,
		 struct sv_blob **out, uint64_t *digest)
{
	*out = NULL;
	t->ok = eligible(c, i);
	t->path = t->ok ? path_hash(c, i, &t->ok) : 0;
	if (!t->ok)
		return -ENOENT;
	uint64_t p = t->path;
	/* Only a view the record of sizes says is on disk for this identity,
	 * of the digest it gives (view_key). */
	struct sv_kept *k = c->kept;
	pthread_mutex_lock(&k->lock);
	look(c, k);
	const struct kept_size *f = k->logged ? NULL : find(k, p);
	struct kept_size want = f ? *f : (struct kept_size){0, 0, 0};
	uint32_t epoch = k->epoch;
	pthread_mutex_unlock(&k->lock);
	if (!(want.size & KEPT_VIEW))
		return -ENOENT;
	want.size &= ~KEPT_VIEW;
	char dir[4096], what[32];
	struct sv_index_key key;
	if (!view_record(c, p, want.digest, dir, what, &key))
		return -ENOENT;
	struct sv_blob *b = NULL, *rec = NULL;
	if (sv_index_load(dir, &key, VIEW_MAX + 1, &rec) == 0) {
		b = unpack(rec, want.size, want.digest);
		if (!b)
			sv_index_drop(dir, &key);
	}
	sv_blob_unref(rec);
	if (!b) {
		/* Gone, damaged or another's (and dropped): not on disk any
		 * more, so the view built now is kept again. */
		pthread_mutex_lock(&k->lock);
		look(c, k);
		struct kept_size *g = (struct kept_size *)find(k, p);
		if (g && (g->size & KEPT_VIEW)) {
			g->size &= ~KEPT_VIEW;
			k->kept -= k->kept < want.size + SV_INDEX_HEAD ? k->kept : want.size + SV_INDEX_HEAD;
			k->full = false; /* room again */
			k->dirty = true;
		}
		pthread_mutex_unlock(&k->lock);
		return -ENOENT;
	}
	__atomic_add_fetch(&counts.views_read, 1, __ATOMIC_RELAXED);
	*digest = want.digest;
	__atomic_store_n(&c->nodes[i].kept_epoch, epoch, __ATOMIC_RELAXED);
	__atomic_store_n(&c->nodes[i].kept_gen, c->nodes[i].gen, __ATOMIC_RELAXED);
	*out = b;
	return 0;
}

/* ---- storing views, on the pool's workers -------------------------------------------- */

/* A view to write to the disk: what the record needs, the view's bytes
 * (a reference), the container's kept (alive while pending counts it). */
struct store_job {
	struct store_job *next;
	struct sv_kept *k;
	uint64_t path, digest, budget;
	struct sv_blob *b;
	char dir[4096], what[32];
	struct sv_index_key key;
};


/* The job's view written, if its container's budget has room for it as
 * stored; its record then says it is on disk. */
static void store_view(struct store_job *j)
{
	struct sv_kept *k = j->k;
	uint8_t *z = NULL;
	size_t zlen = 0;
	bool packed = pack(j->b, &z, &zlen) == 0;
	uint64_t len = 1 + (packed ? zlen : j->b->len); /* the record's payload */
	pthread_mutex_lock(&k->lock);
	struct kept_size *f = (struct kept_size *)find(k, j->path);
	bool ok = f && f->size == j->b->len && f->digest == j->digest && !k->logged;
	bool store = ok && !k->full && k->kept + len + SV_INDEX_HEAD <= j->budget;
	if (store) {
		k->kept += len + SV_INDEX_HEAD;
	} else if (ok && !k->full) {
		k->full = true;
		k->dirty = true;
	}
	pthread_mutex_unlock(&k->lock);
	bool stored = false;
	if (store) {
		/* The cap is looked at each sixteenth of it stored, not at
		 * each store: listing a directory of thousands of views at
		 * every store would cost more than the views save. */
		uint64_t was = __atomic_fetch_add(&views_bytes, len + SV_INDEX_HEAD, __ATOMIC_RELAXED);
		bool trim = was / (VIEWS_CAP / 16) != (was + len + SV_INDEX_HEAD) / (VIEWS_CAP / 16);
		uint8_t tag = packed ? VIEW_ZSTD : VIEW_RAW;
		struct iovec v[2] = {{&tag, 1}, {packed ? z : (void *)j->b->data, len - 1}};
		stored = !sv_index_storev(j->dir, &j->key, v, 2, UINT64_MAX);
		if (stored)
			__atomic_add_fetch(&counts.views_stored, 1, __ATOMIC_RELAXED);
		if (stored && trim)
			sv_index_trim(j->dir, VIEWS_CAP);
	} else if (ok) {
		__atomic_add_fetch(&counts.views_unkept, 1, __ATOMIC_RELAXED);
	}
	free(z);
	pthread_mutex_lock(&k->lock);
	f = (struct kept_size *)find(k, j->path);
	if (stored && f && f->size == j->b->len && f->digest == j->digest) {
		f->size |= KEPT_VIEW; /* on disk now: served from here on */
		k->dirty = true;
	} else if (store) {
		k->kept -= len + SV_INDEX_HEAD;
	}
	if (--k->pending == 0)
		pthread_cond_broadcast(&k->idle);
	pthread_mutex_unlock(&k->lock);
	sv_blob_unref(j->b);
	free(j);
}

/* The first view queued, taken off the queue (store_lock held), or NULL. */
static struct store_job *store_take(void)
{
	struct store_job *j = store_head;
	if (j) {
		store_head = j->next;
		if (!store_head)
			store_tail = NULL;
		store_bytes -= j->b->len;
	}
	return j;
}

void sv_kept_coming(const struct sv_kept_ticket *t)
{
	if (!t->ok)
		return;
	pthread_mutex_lock(&store_lock);
	store_coming++;
	pthread_mutex_unlock(&store_lock);
}

/* A view said coming was handed over (or not kept). */
static void store_came(void)
{
	pthread_mutex_lock(&store_lock);
	if (--store_coming == 0 && !store_jobs)
		pthread_cond_broadcast(&store_idle);
	pthread_mutex_unlock(&store_lock);
}

/* A view taken off the queue, written; the count of those under way
 * told (store_lock not held). */
static void store_write(struct store_job *j)
{
	store_view(j);
	pthread_mutex_lock(&store_lock);
	if (--store_jobs == 0 && !store_coming)
		pthread_cond_broadcast(&store_idle);
	pthread_mutex_unlock(&store_lock);
}

static bool store_run(struct sv_ahead *o)
{
	(void)o;
	pthread_mutex_lock(&store_lock);
	struct store_job *j = store_take();
	if (store_head)
		sv_ahead_post(&store_owner); /* the next to another worker */
	bool more = store_head != NULL;
	pthread_mutex_unlock(&store_lock);
	if (j) {
		store_worker = true;
		store_write(j);
	}
	return more;
}

/*
 * The views queued are written by this thread, then those a worker is
 * writing are waited for (k's, or all of them if k is NULL).  A worker
 * writing one takes no lock but the kept lock, so a thread that holds a
 * folder's or a container's lock may wait so: it never waits for a
 * worker that waits for a lock it holds (a folder's walk ahead, a
 * container's read-ahead).
 */
static void store_drain(struct sv_kept *k)
{
	/* (Taken and written one at a time: store_lock is not held over a
	 * write.) */
	pthread_mutex_lock(&store_lock);
	for (;;) {
		while (store_head) {
			struct store_job *j = store_take();
			pthread_mutex_unlock(&store_lock);
			store_write(j);
			pthread_mutex_lock(&store_lock);
		}
		/* Without k: also the views built whose builder has yet to
		 * hand them over (it holds no lock this thread may hold). */
		if (k || !(store_jobs || store_coming))
			break;
		pthread_cond_wait(&store_idle, &store_lock);
	}
	pthread_mutex_unlock(&store_lock);
	if (k) {
		pthread_mutex_lock(&k->lock);
		while (k->pending)
			pthread_cond_wait(&k->idle, &k->lock);
		pthread_mutex_unlock(&k->lock);
	}
}

/* The job to a worker, or written now (the queue full, or no worker). */
static void store_later(struct store_job *j)
{
	pthread_mutex_lock(&store_lock);
	bool queued = store_bytes + j->b->len <= STORE_PENDING_MAX;
	if (queued) {
		j->next = NULL;
		if (store_tail)
			store_tail->next = j;
		else
			store_head = j;
		store_tail = j;
		store_bytes += j->b->len;
		store_jobs++;
		queued = sv_ahead_post(&store_owner);
		if (!queued) {
			/* (No worker: taken back.) */
			struct store_job **pp = &store_head;
			store_tail = NULL;
			while (*pp != j) {
				store_tail = *pp;
				pp = &(*pp)->next;
			}
			*pp = NULL;
			store_bytes -= j->b->len;
			store_jobs--;
		}
	}
	pthread_mutex_unlock(&store_lock);
	if (!queued)
		store_view(j);
}

void sv_kept_built(struct sv_container *c, uint32_t i, const struct sv_kept_ticket *t,
		   const struct sv_blob *b, uint64_t digest, bool logged)
{
	/* (Eligible when the ticket was made; the load ran under the same
	 * lock, so it still is.) */
	if (!t->ok)
		return;
	__atomic_add_fetch(&counts.views_built, 1, __ATOMIC_RELAXED);
	uint64_t p = t->path;
	struct sv_kept *k = c->kept;
	struct store_job *j = NULL;
	pthread_mutex_lock(&k->lock);
	look(c, k);
	if (logged && !k->logged) {
		k->logged = true; /* (the rest of the record stays, unused) */
		k->dirty = true;
	}
	struct kept_size *f = (struct kept_size *)find(k, p);
	struct kept_size want = {p, b->len | KEPT_VIEW, digest};
	bool on_disk = f && f->size == want.size && f->digest == digest;
	/* On disk for the container before a commit, with these bytes: the
	 * record serves this one too (view_key), it is not written again. */
	const struct kept_size *before = !on_disk && k->nprev ?
		bsearch(&want, k->prev, k->nprev, sizeof *k->prev, by_path) : NULL;
	bool reuse = before && before->size == want.size && before->digest == digest;
	/* To be kept if it is not, within the container's budget (looked
	 * at as stored, by the worker that packs it). */
	bool store = !on_disk && !k->logged && !k->full && b->len <= VIEW_MAX;
	bool carried = store && reuse;
	if (carried) {
		k->kept += b->len + SV_INDEX_HEAD;
		store = false;
	}
	uint64_t size = b->len | (on_disk || carried ? KEPT_VIEW : 0);
	if (f && (f->size != size || f->digest != digest)) {
		/* Built otherwise than recorded (by a savefs whose view
		 * differed under the same version): the new one stands. */
		f->size = size;
		f->digest = digest;
		k->dirty = true;
	} else if (!f && learn(k, (struct kept_size){p, size, digest})) {
		k->dirty = true;
	} else if (!f) {
		store = false; /* (not on record, it could not be served) */
	}
	if (store && (j = calloc(1, sizeof *j)) &&
	    view_record(c, p, digest, j->dir, j->what, &j->key)) {
		j->k = k;
		j->path = p;
		j->digest = digest;
		j->budget = budget(c);
		j->b = sv_blob_ref((struct sv_blob *)b);
		k->pending++;
	} else if (j) {
		free(j);
		j = NULL;
	}
	__atomic_store_n(&c->nodes[i].kept_epoch, k->epoch, __ATOMIC_RELAXED);
	__atomic_store_n(&c->nodes[i].kept_gen, c->nodes[i].gen, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&k->lock);
	if (j)
		store_later(j);
	else if (!on_disk && !carried)
		__atomic_add_fetch(&counts.views_unkept, 1, __ATOMIC_RELAXED);
	store_came();
}

void sv_kept_free(struct sv_container *c)
{
	struct sv_kept *k = c->kept;
	if (!k)
		return;
	/* A commit since the last look: what it left as it was is carried
	 * to the new container's record. */
	if (k->looked) {
		pthread_mutex_lock(&k->lock);
		look(c, k);
		pthread_mutex_unlock(&k->lock);
	}
	c->kept = NULL;
	/* Its views still waiting for a worker are written first. */
	store_drain(k);
	/* What this mount learned joins the record (the looks above made it
	 * the container's as it is now). */
	size_t m = 0;
	struct kept_head h = {k->kept, (uint64_t)k->full | (k->logged ? 2 : 0)};
	struct kept_size *all = k->dirty ? merged(k, sizeof h, &m) : NULL;
	if (all) {
		uint8_t *rec = (uint8_t *)all - sizeof h;
		memcpy(rec, &h, sizeof h);
		struct sv_index_key key = key_of(c, "sizes");
		char dir[4096];
		if (sv_kept_dir(c, dir, sizeof dir))
			sv_index_store(dir, &key, rec, sizeof h + m * sizeof *all, SV_INDEX_CAP);
		free(rec);
	}
	free(k->v);
	free(k->add);
	free(k->slots);
	free(k->prev);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->idle);
	free(k);
}
