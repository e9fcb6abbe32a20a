/*
 * source/remote.c - an object in a store, read through a transport
 * (remote.h): the remote layer's object half.
 *
 * The open reads the object's first block (REMOTE_BLOCK bytes, where a
 * container keeps its header, and a recording its metadata and index),
 * which also tells the object's size and version (ETag, Last-Modified):
 * its identity, filled into `st` as a file's would be (the ETag's hash as
 * the inode, Last-Modified as the times), so the core's checks work
 * unchanged.  That block is kept for the source's life.  Later reads
 * fetch whole blocks into the container's cache (a handle the container
 * gives the source: one cap covers decoded data and fetched blocks) and
 * the disk cache; a run of missing blocks is one request, a reader that
 * goes on where the last fetch ended has its window doubled (up to
 * REMOTE_WINDOW_MAX), a small object comes whole at its first miss, and
 * a format's hints are fetched together, REMOTE_IN_FLIGHT requests at
 * once.  What a container's tree needs of a small object comes first in
 * pieces (REMOTE_PIECES): a listing reads its index and names, not it.
 *
 * Every read after the open asks for the version opened: one the store
 * no longer has fails with EIO and a reason instead of mixing bytes of
 * two versions, and the source is then stale: the container reads it
 * again (reopen).  A transport that puts makes the object writable whole
 * (SV_COMMIT_REWRITE): the new container lands only on the version read.
 */
#include "source/remote.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define REMOTE_BLOCK (256u << 10)
#define REMOTE_WINDOW_MAX (8u << 20)
#define REMOTE_WHOLE_SMALL (32u << 20) /* an object fetched whole at its first miss */
#define REMOTE_IN_FLIGHT 4             /* requests at once for it */
#define REMOTE_DISK_CAP (1ull << 30)   /* the disk cache of blocks, every object's */
#define REMOTE_TRIM_EVERY 64           /* blocks stored between two trims of it */
/* Read at random (misses far apart, twice), an object of this size at
 * most has its other blocks fetched to the disk cache behind the reader,
 * REMOTE_IN_FLIGHT runs of REMOTE_BACK_RUN at once: the reads after come
 * from the disk, not a round trip each. */
#define REMOTE_BACK_MAX (256ull << 20)
#define REMOTE_BACK_RUN (4u << 20)
/* An object within REMOTE_WHOLE_SMALL is first read in pieces: a short
 * miss (REMOTE_PIECE_MAX at most) fetches the parts of REMOTE_PART it
 * covers, the first one REMOTE_HEAD_PIECE from the start (a header and
 * its index), and a format's hints of short ranges come the same way,
 * together.  A listing needs an index and a few names, not the object.
 * After REMOTE_PIECES pieces, or at a longer miss, it comes whole. */
#define REMOTE_PART (4u << 10)
#define REMOTE_HEAD_PIECE (16u << 10)
#define REMOTE_PIECE_MAX (64u << 10)
#define REMOTE_PIECES 8
#define PART_KEY(p) ((1ull << 62) | (p)) /* a part's key in the cache (a block's: its number) */

struct remote {
	struct sv_source s;           /* first: freed as one */
	struct sv_source_ops ops;     /* s.ops: the object's, named as its transport's */
	struct sv_transport *t;
	struct sv_remote_version v;   /* the version opened (v.size its size) */
	struct sv_blob *head;         /* the first block, or the whole object */
	pthread_mutex_t lock;         /* next, window, stored, whole_tried */
	uint64_t next;                /* the block after the last fetch */
	uint32_t window;              /* blocks the next sequential fetch takes */
	uint32_t stored;              /* blocks put on disk since the last trim */
	bool whole_tried;             /* a small object's whole fetch was made */
	uint32_t pieces;              /* piece requests made (lock) */
	bool changed;                 /* the store has another version (atomic) */
	bool all;                     /* head is the whole object (a server that
				       * ignores ranges): every read is from it */
	uint32_t far;                 /* misses away from the last fetch (lock) */
	bool back_started;            /* the fetch behind the reader (lock) */
	bool back_stop;               /* it is to stop (atomic) */
	pthread_t back;
};

/* ---- identity ------------------------------------------------------------------------ */

void sv_remote_identity(struct stat *st, const char *where, uint64_t size, const char *etag,
			time_t t)
{
	memset(st, 0, sizeof *st);
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)size;
	st->st_dev = 0x5a5a; /* no device: the same for every remote object */
	char key[600];
	snprintf(key, sizeof key, "%s|%lld|%llu", etag, etag[0] ? 0LL : (long long)t,
		 (unsigned long long)size);
	/* (The persistent index keys its records by it: two objects, or two
	 * versions of one, never share.) */
	st->st_ino = (ino_t)((XXH3_64bits(key, strlen(key)) ^ XXH3_64bits(where, strlen(where))) |
			     1);
	st->st_mtim.tv_sec = t < 0 ? 0 : t;
	st->st_ctim = st->st_atim = st->st_mtim;
}

time_t sv_remote_time(const char *date)
{
	/* RFC 9110's preferred form, then the two obsolete ones. */
	static const char *const forms[] = {"%a, %d %b %Y %H:%M:%S GMT",
					    "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"};
	for (size_t i = 0; date[0] && i < sizeof forms / sizeof *forms; i++) {
		struct tm tm;
		memset(&tm, 0, sizeof tm);
		const char *end = strptime(date, forms[i], &tm);
		if (end && !*end) {
			time_t t = timegm(&tm);
			return t < 0 ? 0 : t;
		}
	}
	return 0;
}

static void take_version(struct remote *h, const struct sv_remote_version *v)
{
	h->v = *v;
	sv_remote_identity(&h->s.st, h->s.path, v->size, v->etag, sv_remote_time(v->modified));
	if (h->t->ops->put)
		h->s.st.st_mode = S_IFREG | 0644;
}

void sv_remote_bind(struct sv_source *s, const struct sv_source_ops *ops, struct sv_transport *t,
		    char *path, bool read_only)
{
	s->ops = ops;
	s->path = path;
	s->fd = -1;
	s->read_only = read_only || !t->ops->put;
	t->path = path;
	t->counts = s;
}

/* ---- the disk cache -------------------------------------------------------------------- */

/* The bytes of a unit: a block (REMOTE_BLOCK) or a part (REMOTE_PART) of
 * the object. */
static uint32_t unit_size(bool part)
{
	return part ? REMOTE_PART : REMOTE_BLOCK;
}

static uint64_t unit_len(const struct remote *h, uint64_t u, bool part)
{
	uint64_t off = u * unit_size(part);
	return off >= h->v.size ? 0 : h->v.size - off < unit_size(part) ? h->v.size - off
									   : unit_size(part);
}

/* A unit's record in the disk cache: the persistent index's store, keyed
 * by the object's identity (location, ETag, size) and the unit's kind
 * and number; each record carries the hash of its bytes, checked when
 * read back. */
static struct sv_index_key disk_key(const struct remote *h, uint64_t u, bool part, char *what,
				    size_t size)
{
	snprintf(what, size, "%s %llu", part ? "part" : "block", (unsigned long long)u);
	struct sv_index_key k = {"http-block", 1, what, h->s.st};
	return k;
}

static struct sv_blob *disk_get_unit(struct remote *h, uint64_t u, bool part)
{
	if (!h->s.store)
		return NULL;
	char what[32];
	struct sv_index_key k = disk_key(h, u, part, what, sizeof what);
	struct sv_blob *blob = NULL;
	if (sv_index_load(h->s.store, &k, REMOTE_BLOCK, &blob))
		return NULL;
	if (blob->len != unit_len(h, u, part)) {
		sv_blob_unref(blob);
		return NULL;
	}
	__atomic_add_fetch(&h->s.disk_hits, 1, __ATOMIC_RELAXED);
	return blob;
}

static struct sv_blob *disk_get(struct remote *h, uint64_t b)
{
	return disk_get_unit(h, b, false);
}

/* Every block of the object the disk cache holds, dropped (an open that
 * failed on them: they are fetched from the store again). */
static void remote_forget(struct sv_source *s)
{
	struct remote *h = (struct remote *)s;
	if (!h->s.store)
		return;
	for (int part = 0; part < 2; part++) {
		/* (Parts only of objects read in pieces.) */
		uint64_t units = (h->v.size + unit_size(part) - 1) / unit_size(part);
		if (part && h->v.size > REMOTE_WHOLE_SMALL)
			units = 0;
		for (uint64_t u = 0; u < units; u++) {
			char what[32];
			struct sv_index_key k = disk_key(h, u, part, what, sizeof what);
			sv_index_drop(h->s.store, &k);
		}
	}
}

static void disk_put(struct remote *h, uint64_t u, bool part, const struct sv_blob *blob)
{
	if (!h->s.store)
		return;
	char what[32];
	struct sv_index_key k = disk_key(h, u, part, what, sizeof what);
	if (sv_index_store(h->s.store, &k, blob->data, blob->len, UINT64_MAX))
		return; /* a cache: a block not kept is fetched again */
	pthread_mutex_lock(&h->lock);
	bool trim = ++h->stored >= REMOTE_TRIM_EVERY;
	if (trim)
		h->stored = 0;
	pthread_mutex_unlock(&h->lock);
	if (trim)
		sv_index_trim(h->s.store, REMOTE_DISK_CAP);
}

/* ---- reads --------------------------------------------------------------------------- */

/* The read of an object that changed in the store since the open. */
static int changed(const struct remote *h, struct sv_err *err)
{
	return sv_err_set(err, -EIO, "%s changed on the server since it was opened "
			  "(412 to If-Match %s)", h->s.path, h->v.etag);
}

/*
 * Units [u, u + k) (blocks, or parts with `part`) fetched with one
 * request and handed to the caches (and, for the caller, unit `want`'s
 * blob in *out).  0, or -errno with the reason: another version in the
 * store is -EIO with it, and makes the source stale.
 */
static int fetch_to(struct remote *h, uint64_t u, uint32_t k, bool part, uint64_t want,
		    struct sv_blob **out, bool cache, struct sv_err *err);

static int fetch(struct remote *h, uint64_t b, uint32_t k, uint64_t want, struct sv_blob **out,
		 struct sv_err *err)
{
	return fetch_to(h, b, k, false, want, out, true, err);
}

/* (With `cache` false, the units go to the disk cache only.) */
static int fetch_to(struct remote *h, uint64_t u, uint32_t k, bool part, uint64_t want,
		    struct sv_blob **out, bool cache, struct sv_err *err)
{
	if (__atomic_load_n(&h->changed, __ATOMIC_ACQUIRE))
		return changed(h, err);
	uint32_t us = unit_size(part);
	uint64_t off = u * us;
	size_t n = off + (uint64_t)k * us > h->v.size ? (size_t)(h->v.size - off) : (size_t)k * us;
	uint8_t *buf = malloc(n);
	if (!buf)
		return sv_err_set(err, -ENOMEM, "out of memory");
	struct sv_remote_version v;
	size_t got = 0;
	int rc = h->t->ops->get(h->t, NULL, off, n, &h->v, buf, &got, &v, err);
	if (rc == -ESTALE) {
		__atomic_store_n(&h->changed, true, __ATOMIC_RELEASE);
		sv_source_log(&h->s, "%s changed on the server since it was opened (ETag %s): "
			      "not read; the mount reads it again", h->s.path, h->v.etag);
		rc = changed(h, err);
	} else if (rc == -ERANGE) {
		rc = err->code = -EIO;
	} else if (!rc && got != n) {
		rc = sv_err_set(err, -EIO, "%s: %zu of %zu bytes at %llu arrived", h->s.path, got, n,
				(unsigned long long)off);
	}
	for (uint32_t i = 0; !rc && i < k; i++) {
		size_t at = (size_t)i * us;
		if (at >= n)
			break;
		size_t len = n - at < us ? n - at : us;
		struct sv_blob *blob = sv_blob_dup(buf + at, len);
		if (!blob) {
			rc = sv_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		if (h->s.cache && cache)
			sv_cache_put(h->s.cache, part ? PART_KEY(u + i) : u + i, blob);
		disk_put(h, u + i, part, blob);
		if (u + i == want)
			*out = sv_blob_ref(blob);
		sv_blob_unref(blob);
	}
	free(buf);
	return rc;
}

/* One run of units fetched by a thread of fetch_runs(). */
struct run {
	struct remote *h;
	uint64_t b;
	uint32_t k;
	bool part;
	bool disk_only;
	int rc;
	struct sv_err err;
	pthread_t thread;
	bool started;
};

static void *run_main(void *arg)
{
	struct run *r = arg;
	struct sv_blob *unused = NULL;
	r->rc = fetch_to(r->h, r->b, r->k, r->part, UINT64_MAX, &unused, !r->disk_only, &r->err);
	return NULL;
}

/* Runs of blocks fetched, REMOTE_IN_FLIGHT requests at a time: 0, or the
 * first run's failure. */
static int fetch_runs(struct run *runs, size_t n, struct sv_err *err)
{
	int rc = 0;
	for (size_t at = 0; !rc && at < n; at += REMOTE_IN_FLIGHT) {
		size_t m = n - at < REMOTE_IN_FLIGHT ? n - at : REMOTE_IN_FLIGHT;
		struct run *v = runs + at;
		for (size_t i = 0; i < m; i++)
			v[i].started = i > 0 && !pthread_create(&v[i].thread, NULL, run_main, &v[i]);
		run_main(&v[0]);
		for (size_t i = 1; i < m; i++) {
			if (v[i].started)
				pthread_join(v[i].thread, NULL);
			else
				run_main(&v[i]);
		}
		for (size_t i = 0; i < m && !rc; i++)
			if (v[i].rc) {
				rc = v[i].rc;
				*err = v[i].err;
			}
	}
	return rc;
}

/* Unit u's bytes if held: the head (block 0), the cache, or the disk
 * cache (then put in the cache); else NULL. */
static struct sv_blob *held(struct remote *h, uint64_t u, bool part)
{
	if (!part && u == 0 && h->head)
		return sv_blob_ref(h->head);
	uint64_t key = part ? PART_KEY(u) : u;
	struct sv_blob *have = h->s.cache ? sv_cache_get(h->s.cache, key) : NULL;
	if (!have && (have = disk_get_unit(h, u, part)) && h->s.cache)
		sv_cache_put(h->s.cache, key, have);
	return have;
}

static bool held_block(struct remote *h, uint64_t b)
{
	struct sv_blob *have = held(h, b, false);
	sv_blob_unref(have);
	return have != NULL;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The blocks of ranges r[0..n) not held, fetched together: sorted, runs
 * of adjacent ones (REMOTE_WINDOW_MAX at most) one request each, several
 * at once; `budget` blocks at most (the rest is read as it comes).
 * Ranges read apart (the chunks an index names) cost a round trip, not
 * one each, and a read across blocks one request.  0, or a failure.
 */
static int fetch_spans(struct remote *h, const struct sv_range *r, size_t n, uint64_t budget,
		       struct sv_err *err)
{
	if (!h->s.cache)
		return 0;
	uint64_t size = h->v.size, blocks = (size + REMOTE_BLOCK - 1) / REMOTE_BLOCK;
	uint64_t *v = NULL;
	size_t nv = 0, cap = 0;
	int rc = 0;
	for (size_t i = 0; !rc && i < n && nv < budget; i++) {
		if (!r[i].len || r[i].off >= size)
			continue;
		uint64_t end = r[i].off + r[i].len > size ? size : r[i].off + r[i].len;
		for (uint64_t b = r[i].off / REMOTE_BLOCK; b <= (end - 1) / REMOTE_BLOCK &&
							   b < blocks && nv < budget; b++) {
			if ((nv && v[nv - 1] == b) || held_block(h, b))
				continue; /* (ranges in one block: the block once) */
			if (sv_grow((void **)&v, &cap, nv + 1, sizeof *v)) {
				rc = sv_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			v[nv++] = b;
		}
	}
	if (rc || nv < 2) {
		/* One block: the read fetches it as it does any. */
		free(v);
		return rc;
	}
	qsort(v, nv, sizeof *v, by_u64);
	struct run *runs = calloc(nv, sizeof *runs);
	size_t nr = 0;
	for (size_t i = 0; runs && i < nv; i++) {
		if (i && v[i] == v[i - 1])
			continue;
		struct run *last = nr ? &runs[nr - 1] : NULL;
		if (last && last->b + last->k == v[i] && last->k < REMOTE_WINDOW_MAX / REMOTE_BLOCK) {
			last->k++;
			continue;
		}
		runs[nr] = (struct run){.h = h, .b = v[i], .k = 1};
		sv_err_clear(&runs[nr].err);
		nr++;
	}
	free(v);
	if (!runs)
		return sv_err_set(err, -ENOMEM, "out of memory");
	rc = fetch_runs(runs, nr, err);
	free(runs);
	return rc;
}

/* Whether the object comes whole at its first miss: small (half the
 * cache at most), and not tried yet.  With `claim`, the try is claimed
 * (the one caller that gets true makes it). */
static bool whole_next(struct remote *h, bool claim)
{
	if (!h->s.cache)
		return false;
	pthread_mutex_lock(&h->lock);
	bool tried = h->whole_tried;
	struct sv_cache_stats cs = {0};
	if (!tried)
		sv_cache_stats(h->s.cache, &cs);
	bool whole = !tried && h->v.size <= REMOTE_WHOLE_SMALL && h->v.size <= cs.cap / 2;
	if (claim)
		h->whole_tried = true;
	pthread_mutex_unlock(&h->lock);
	return whole;
}

/* What a read ahead may fetch: a quarter of the cache, in blocks. */
static uint64_t span_budget(struct remote *h)
{
	struct sv_cache_stats cs = {0};
	sv_cache_stats(h->s.cache, &cs);
	return cs.cap / 4 / REMOTE_BLOCK;
}

/* ---- pieces of an object ------------------------------------------------------------ */

/* Whether this read is one a piece serves (see REMOTE_PIECES): for a
 * container's tree, of an object read in pieces.  A view's bytes come in
 * blocks (a small object whole). */
static bool in_pieces(const struct remote *h)
{
	return h->s.cache && !h->all && h->v.size > 2 * REMOTE_HEAD_PIECE &&
	       h->v.size <= REMOTE_WHOLE_SMALL && sv_source_tree_reads();
}

/* Whether k more pieces may be fetched (with `claim`, they are counted):
 * the object not fetched whole, fewer than REMOTE_PIECES made. */
static bool pieces_left(struct remote *h, uint32_t k, bool claim)
{
	pthread_mutex_lock(&h->lock);
	bool ok = !h->whole_tried && h->pieces + k <= REMOTE_PIECES;
	if (ok && claim)
		h->pieces += k;
	pthread_mutex_unlock(&h->lock);
	return ok;
}

/* The bytes blob holds from `at` on (as many as *n wants) copied to *p,
 * and *p, *off and *n moved past them; the blob let go. */
static void copy_on(struct sv_blob *blob, size_t at, uint8_t **p, uint64_t *off, size_t *n)
{
	size_t k = blob->len - at < *n ? blob->len - at : *n;
	memcpy(*p, blob->data + at, k);
	sv_blob_unref(blob);
	*p += k;
	*off += k;
	*n -= k;
}

/* n bytes at off copied from the parts held into p: whether all were. */
static bool from_parts(struct remote *h, uint64_t off, uint8_t *p, size_t n)
{
	while (n) {
		struct sv_blob *blob = held(h, off / REMOTE_PART, true);
		size_t at = (size_t)(off % REMOTE_PART);
		if (!blob || at >= blob->len) {
			sv_blob_unref(blob);
			return false;
		}
		copy_on(blob, at, &p, &off, &n);
	}
	return true;
}

/* The parts [*p0, *p1) a piece for [off, off + n) takes: from the start
 * when it lies within the head piece's reach. */
static void piece_parts(const struct remote *h, uint64_t off, uint64_t n, uint64_t *p0,
			uint64_t *p1)
{
	uint64_t parts = (h->v.size + REMOTE_PART - 1) / REMOTE_PART;
	*p0 = off / REMOTE_PART;
	*p1 = (off + n + REMOTE_PART - 1) / REMOTE_PART;
	if (off < REMOTE_HEAD_PIECE) {
		*p0 = 0;
		if (*p1 < REMOTE_HEAD_PIECE / REMOTE_PART)
			*p1 = REMOTE_HEAD_PIECE / REMOTE_PART;
	}
	if (*p1 > parts)
		*p1 = parts;
}

/*
 * A short read missed: the parts it covers fetched as one piece, if the
 * object is read in pieces and has some left.  1 when they came, 0 when
 * the read is for blocks to serve, or -errno with the reason.
 */
static int fetch_piece(struct remote *h, uint64_t off, size_t n, struct sv_err *err)
{
	if (!in_pieces(h) || n > REMOTE_PIECE_MAX || !pieces_left(h, 1, true))
		return 0;
	uint64_t p0, p1;
	piece_parts(h, off, n, &p0, &p1);
	struct sv_blob *unused = NULL;
	int rc = fetch_to(h, p0, (uint32_t)(p1 - p0), true, UINT64_MAX, &unused, true, err);
	sv_blob_unref(unused);
	return rc ? rc : 1;
}

/* Whether the blocks holding [off, off + n) are held. */
static bool piece_held_blocks(struct remote *h, uint64_t off, uint64_t n)
{
	for (uint64_t b = off / REMOTE_BLOCK; b <= (off + n - 1) / REMOTE_BLOCK; b++)
		if (!held_block(h, b))
			return false;
	return true;
}

/* Whether [off, off + n) is held: its blocks, or its parts. */
static bool piece_held(struct remote *h, uint64_t off, uint64_t n)
{
	bool all = piece_held_blocks(h, off, n);
	for (uint64_t u = off / REMOTE_PART; !all && u <= (off + n - 1) / REMOTE_PART; u++) {
		struct sv_blob *have = held(h, u, true);
		sv_blob_unref(have);
		if (!have)
			return false;
	}
	return true;
}

static int by_run(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	return x->b < y->b ? -1 : x->b > y->b;
}

/*
 * A format's short ranges to come, fetched as pieces together (ranges
 * two parts apart or less in one piece), REMOTE_IN_FLIGHT at once: the
 * names a listing shows cost one round trip, not one each.  Whether they
 * were taken as pieces (else blocks serve them).
 */
static bool hint_pieces(struct remote *h, const struct sv_range *r, size_t n)
{
	if (!in_pieces(h))
		return false;
	for (size_t i = 0; i < n; i++)
		if (r[i].len > REMOTE_PIECE_MAX)
			return false;
	struct run *runs = calloc(n ? n : 1, sizeof *runs);
	if (!runs)
		return false;
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		if (!r[i].len || r[i].off >= h->v.size ||
		    r[i].len > h->v.size - r[i].off || piece_held(h, r[i].off, r[i].len))
			continue;
		uint64_t p0, p1;
		piece_parts(h, r[i].off, r[i].len, &p0, &p1);
		runs[nr++] = (struct run){.h = h, .b = p0, .k = (uint32_t)(p1 - p0), .part = true};
	}
	qsort(runs, nr, sizeof *runs, by_run);
	size_t m = 0;
	for (size_t i = 0; i < nr; i++) {
		struct run *last = m ? &runs[m - 1] : NULL;
		if (last && runs[i].b <= last->b + last->k + 2) {
			uint64_t end = runs[i].b + runs[i].k;
			if (end > last->b + last->k)
				last->k = (uint32_t)(end - last->b);
			continue;
		}
		runs[m++] = runs[i];
	}
	bool took = m && pieces_left(h, (uint32_t)m, true);
	struct sv_err err;
	for (size_t i = 0; i < m; i++)
		sv_err_clear(&runs[i].err);
	if (took && fetch_runs(runs, m, &err))
		sv_source_log(&h->s, "a read ahead failed: %s", err.msg);
	free(runs);
	return took || !m;
}

/* A format's ranges to come (sv_container_hint): fetched together now,
 * unless the whole object comes at its first miss anyway. */
static void remote_hint(struct sv_source *s, const struct sv_range *r, size_t n)
{
	struct remote *h = (struct remote *)s;
	if (h->all)
		return; /* held whole */
	struct sv_err err;
	if (__atomic_load_n(&s->fd, __ATOMIC_ACQUIRE) < 0 && !hint_pieces(h, r, n) &&
	    !whole_next(h, false) && fetch_spans(h, r, n, span_budget(h), &err))
		sv_source_log(s, "a read ahead failed: %s", err.msg);
}

/* The blocks the disk cache lacks, fetched behind a reader that reads at
 * random, until all are there, the object changes or the source closes. */
static void *back_main(void *arg)
{
	struct remote *h = arg;
	uint64_t blocks = (h->v.size + REMOTE_BLOCK - 1) / REMOTE_BLOCK;
	uint32_t per = REMOTE_BACK_RUN / REMOTE_BLOCK;
	struct run runs[REMOTE_IN_FLIGHT];
	uint64_t b = 0;
	while (b < blocks && !__atomic_load_n(&h->back_stop, __ATOMIC_ACQUIRE)) {
		size_t n = 0;
		while (n < REMOTE_IN_FLIGHT && b < blocks) {
			/* (Blocks the reader's own fetches brought are skipped
			 * where a run would be all of them.) */
			uint32_t k = blocks - b < per ? (uint32_t)(blocks - b) : per;
			struct sv_blob *on = disk_get(h, b + k - 1);
			bool have = on != NULL;
			sv_blob_unref(on);
			if (!have) {
				runs[n] = (struct run){.h = h, .b = b, .k = k, .disk_only = true};
				sv_err_clear(&runs[n].err);
				n++;
			}
			b += k;
		}
		struct sv_err err;
		if (n && fetch_runs(runs, n, &err)) {
			sv_source_log(&h->s, "a fetch behind the reader stopped: %s", err.msg);
			break;
		}
	}
	return NULL;
}

/* A miss at block b: at the second away from where the last fetch
 * ended, an object within REMOTE_BACK_MAX with a disk cache has the rest
 * fetched behind the reader (a reader of random ticks). */
static void note_miss(struct remote *h, uint64_t b)
{
	pthread_mutex_lock(&h->lock);
	bool start = b != h->next && ++h->far >= 2 && !h->back_started && h->s.store &&
		     h->v.size > REMOTE_WHOLE_SMALL && h->v.size <= REMOTE_BACK_MAX;
	if (start)
		h->back_started = !pthread_create(&h->back, NULL, back_main, h);
	pthread_mutex_unlock(&h->lock);
}

void sv_remote_wait_behind(struct sv_source *s)
{
	struct remote *h = (struct remote *)s;
	pthread_mutex_lock(&h->lock);
	bool started = h->back_started;
	h->back_started = false;
	pthread_mutex_unlock(&h->lock);
	if (started)
		pthread_join(h->back, NULL);
}

/* Block b's bytes: the head, the caches, or a fetch (of the whole object
 * when it is small; of a run of blocks when the reader goes on where the
 * last fetch ended). */
static int block(struct remote *h, uint64_t b, struct sv_blob **out, struct sv_err *err)
{
	if ((*out = held(h, b, false)))
		return 0;
	if (whole_next(h, true)) {
		struct sv_range all = {0, h->v.size};
		int rc = fetch_spans(h, &all, 1, UINT64_MAX, err);
		if (rc)
			return rc;
		if ((*out = sv_cache_get(h->s.cache, b)))
			return 0;
		/* Evicted meanwhile: fetched again below. */
	}
	note_miss(h, b);
	uint64_t blocks = (h->v.size + REMOTE_BLOCK - 1) / REMOTE_BLOCK;
	pthread_mutex_lock(&h->lock);
	uint32_t k = 1;
	if (h->s.cache && b == h->next) {
		k = h->window;
		h->window = h->window * 2 <= REMOTE_WINDOW_MAX / REMOTE_BLOCK
				    ? h->window * 2 : REMOTE_WINDOW_MAX / REMOTE_BLOCK;
	} else {
		h->window = 2;
	}
	if (b + k > blocks)
		k = (uint32_t)(blocks - b);
	h->next = b + k;
	pthread_mutex_unlock(&h->lock);
	int rc = fetch(h, b, k, b, out, err);
	if (!rc && !*out)
		rc = sv_err_set(err, -EIO, "%s: block %llu not fetched", h->s.path,
				(unsigned long long)b);
	return rc;
}

static int remote_pread(struct sv_source *s, uint64_t off, void *buf, size_t n,
			struct sv_err *err)
{
	struct remote *h = (struct remote *)s;
	if (s->fd >= 0)
		return sv_source_read_fd(s->fd, h->v.size, off, buf, n, s->path, err);
	if (off > h->v.size || n > h->v.size - off)
		return sv_err_set(err, -EBADMSG, "range %llu+%zu lies past the end of %s (%llu bytes)",
				  (unsigned long long)off, n, h->s.path,
				  (unsigned long long)h->v.size);
	if (h->all) {
		memcpy(buf, h->head->data + off, n);
		return 0;
	}
	/* A short read of an object read in pieces: from the parts, or one
	 * piece fetched, unless the blocks are held. */
	if (n && n <= REMOTE_PIECE_MAX && in_pieces(h) && !piece_held_blocks(h, off, n)) {
		if (from_parts(h, off, buf, n))
			return 0;
		int rc = fetch_piece(h, off, n, err);
		if (rc < 0)
			return rc;
		if (rc && from_parts(h, off, buf, n))
			return 0;
	}
	/* A read across blocks: those not held fetched at once. */
	if (n && off / REMOTE_BLOCK != (off + n - 1) / REMOTE_BLOCK && !whole_next(h, false)) {
		struct sv_range span = {off, n};
		int rc = fetch_spans(h, &span, 1, span_budget(h), err);
		if (rc)
			return rc;
	}
	uint8_t *p = buf;
	while (n) {
		uint64_t b = off / REMOTE_BLOCK;
		size_t at = (size_t)(off % REMOTE_BLOCK);
		struct sv_blob *blob;
		int rc = block(h, b, &blob, err);
		if (rc)
			return rc;
		if (at >= blob->len) {
			sv_blob_unref(blob);
			return sv_err_set(err, -EIO, "%s: block %llu is short", h->s.path,
					  (unsigned long long)b);
		}
		copy_on(blob, at, &p, &off, &n);
	}
	return 0;
}

static int remote_look(struct sv_source *s, struct stat *now)
{
	struct remote *h = (struct remote *)s;
	struct sv_remote_version v;
	struct sv_err err;
	int rc = h->t->ops->stat(h->t, NULL, &v, &err);
	if (rc)
		return rc == -ENOENT || rc == -EACCES ? rc : -EIO;
	sv_remote_identity(now, s->path, v.size, v.etag, sv_remote_time(v.modified));
	return 0;
}

/* ---- opening, and reading again ---------------------------------------------------- */

/* The object read whole (a server that ignores ranges): held as the
 * head, every read served from it.  Past SV_REMOTE_WHOLE_MAX it is
 * refused with the reason. */
static int whole_object(struct remote *h, uint64_t length, struct sv_err *err)
{
	const char *path = h->s.path;
	if (length != UINT64_MAX && length > SV_REMOTE_WHOLE_MAX)
		return sv_err_set(err, -EFBIG, "%s: the server ignores ranged reads, and the object "
				  "is %llu bytes, more than the %u MiB read whole from such a server",
				  path, (unsigned long long)length, SV_REMOTE_WHOLE_MAX >> 20);
	struct sv_buf b;
	struct sv_remote_version v;
	int rc = sv_buf_init_blob(&b) ? sv_err_set(err, -ENOMEM, "out of memory")
				      : h->t->ops->get_whole(h->t, NULL, SV_REMOTE_WHOLE_MAX, &b, &v,
							     err);
	if (rc == -EFBIG)
		rc = sv_err_set(err, -EFBIG, "%s: the server ignores ranged reads, and the object "
				"is more than the %u MiB read whole from such a server", path,
				SV_REMOTE_WHOLE_MAX >> 20);
	struct sv_blob *all = rc ? NULL : sv_buf_take_blob(&b); /* (no copy of it) */
	sv_buf_fini(&b);
	if (rc)
		return rc;
	sv_blob_unref(h->head);
	h->head = all;
	h->all = true;
	take_version(h, &v);
	return 0;
}

/* The object's first block read, which tells its size and version: the
 * head, version and identity set.  0, or -errno with the reason. */
static int first_block(struct remote *h, struct sv_err *err)
{
	uint8_t *buf = malloc(REMOTE_BLOCK);
	if (!buf)
		return sv_err_set(err, -ENOMEM, "out of memory");
	struct sv_remote_version v;
	size_t got = 0;
	int rc = h->t->ops->get(h->t, NULL, 0, REMOTE_BLOCK, NULL, buf, &got, &v, err);
	if (rc == -ERANGE && h->t->ops->whole_when_unranged) {
		/* A server that ignores ranges (python3 -m http.server): the
		 * object is read whole, once, up to SV_REMOTE_WHOLE_MAX. */
		free(buf);
		return whole_object(h, v.size, err);
	}
	if (rc == -ERANGE)
		rc = sv_err_set(err, -EOPNOTSUPP, "%s: the store does not answer ranged reads "
				"(200 to a Range request, for an object larger than %u bytes)",
				h->s.path, REMOTE_BLOCK);
	struct sv_blob *head = rc ? NULL : sv_blob_dup(buf, got);
	free(buf);
	if (!rc && !head)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (rc)
		return rc;
	sv_blob_unref(h->head);
	h->head = head;
	take_version(h, &v);
	return 0;
}

/* Whether the object changed in the store since it was read (found by a
 * read): the container reads it again (reopen). */
static bool remote_stale(struct sv_source *s)
{
	return __atomic_load_n(&s->fd, __ATOMIC_ACQUIRE) < 0 &&
	       __atomic_load_n(&((struct remote *)s)->changed, __ATOMIC_ACQUIRE);
}

/* The object as it is now, read again from its first block: the blocks
 * held of the old one dropped (the disk cache keys them by version). */
static int remote_reopen(struct sv_source *s, struct sv_err *err)
{
	struct remote *h = (struct remote *)s;
	/* The fetch behind the reader ends first (it reads the version). */
	__atomic_store_n(&h->back_stop, true, __ATOMIC_RELEASE);
	sv_remote_wait_behind(s);
	__atomic_store_n(&h->back_stop, false, __ATOMIC_RELEASE);
	pthread_mutex_lock(&h->lock);
	h->far = 0;
	pthread_mutex_unlock(&h->lock);
	int rc = first_block(h, err);
	if (rc)
		return rc;
	if (s->cache)
		sv_cache_drop(s->cache, 0, 0);
	pthread_mutex_lock(&h->lock);
	h->whole_tried = false;
	h->pieces = 0;
	h->next = 0;
	h->window = 2;
	pthread_mutex_unlock(&h->lock);
	__atomic_store_n(&h->changed, false, __ATOMIC_RELEASE);
	return 0;
}

static void remote_close(struct sv_source *s)
{
	struct remote *h = (struct remote *)s;
	__atomic_store_n(&h->back_stop, true, __ATOMIC_RELEASE);
	sv_remote_wait_behind(s);
	sv_blob_unref(h->head);
	h->head = NULL;
	if (h->t)
		h->t->ops->close(h->t);
	h->t = NULL;
	pthread_mutex_destroy(&h->lock);
}

/* ---- writing the object whole ---------------------------------------------------------- */

/* An unlinked file in $TMPDIR (or /tmp): its descriptor, or -errno and
 * the reason. */
static int temp_file(struct sv_err *err)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return sv_err_set(err, -errno, "cannot make a file in %s for the object: %s", dir,
				  strerror(errno));
	return fd;
}

/*
 * The whole object fetched into a local file, which later reads read (a
 * commit copies the parts it keeps from it).  Its blocks come as any
 * read's: from the caches, the rest in widening requests, each of the
 * version opened, so the file is that version.
 */
static int remote_localize(struct sv_source *s, struct sv_err *err)
{
	struct remote *h = (struct remote *)s;
	int fd = temp_file(err);
	if (fd < 0)
		return fd;
	size_t step = REMOTE_WINDOW_MAX;
	uint8_t *buf = malloc(step);
	int rc = buf ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t off = 0; !rc && off < h->v.size; off += step) {
		size_t n = h->v.size - off < step ? (size_t)(h->v.size - off) : step;
		rc = remote_pread(s, off, buf, n, err);
		int w = rc ? 0 : sv_write_all(fd, buf, n);
		if (w)
			rc = sv_err_set(err, w, "writing a local copy of %s: %s", s->path,
					strerror(-w));
	}
	free(buf);
	if (rc) {
		close(fd);
		return rc;
	}
	/* Published: the notify thread's remote_stale() reads it unlocked. */
	__atomic_store_n(&s->fd, fd, __ATOMIC_RELEASE);
	return 0;
}

/*
 * SV_COMMIT_REWRITE: the new container is written to a temporary file,
 * checked once more, and put on the condition that the store still has
 * the version read, so another writer's object is never overwritten.
 * The bytes put stay on disk (an unlinked file, the source's fd) and are
 * what later reads read.
 */
static int remote_rewrite(struct sv_source *s,
			  int (*write)(void *arg, int fd, struct sv_err *err),
			  int (*check)(void *arg, struct sv_err *err), void *arg,
			  struct sv_err *err)
{
	struct remote *h = (struct remote *)s;
	int fd = temp_file(err);
	if (fd < 0)
		return fd;
	int rc = write(arg, fd, err);
	struct stat st;
	if (!rc && fstat(fd, &st))
		rc = sv_err_set(err, -errno, "fstat: %s", strerror(errno));
	if (!rc)
		rc = check(arg, err);
	sv_test_step("upload-checked");
	uint64_t size = rc ? 0 : (uint64_t)st.st_size;
	struct sv_remote_version put = {0};
	if (!rc)
		rc = h->t->ops->put(h->t, NULL, fd, NULL, size, h->v.etag, check, arg, &put, err);
	if (rc == -ESTALE)
		rc = sv_err_set(err, -EBUSY, "%s was changed by another writer since it was read "
				"(412 to If-Match %s): not overwritten, the edit is dropped (remount to "
				"see the object as it is now)", s->path, h->v.etag);
	if (rc) {
		if (rc == -EBUSY)
			sv_source_log(s, "%s", err->msg);
		close(fd);
		return rc;
	}
	/* The new version: the store's own (its Last-Modified) when a look
	 * finds the ETag put; else another writer came right after, and the
	 * next commit's check finds it.  A store that gave no ETag for the
	 * upload (RADOS Gateway 16 after parts): the one the look finds. */
	struct sv_remote_version now;
	struct sv_err e;
	bool seen = !h->t->ops->stat(h->t, NULL, &now, &e) && now.etag[0] &&
		    (!put.etag[0] || !strcmp(now.etag, put.etag));
	if (seen && !put.etag[0])
		snprintf(put.etag, sizeof put.etag, "%s", now.etag);
	if (!put.etag[0])
		sv_source_log(s, "%s: the store gave no ETag for the new object, nor a look "
			      "after it: the next commit is refused", s->path);
	snprintf(put.modified, sizeof put.modified, "%s", seen ? now.modified : "");
	put.size = size;
	take_version(h, &put);
	if (!seen && put.date[0])
		s->st.st_mtim.tv_sec = sv_remote_time(put.date);
	if (s->fd >= 0)
		close(s->fd);
	__atomic_store_n(&s->fd, fd, __ATOMIC_RELEASE); /* read by remote_stale() */
	__atomic_store_n(&h->changed, false, __ATOMIC_RELEASE);
	return 0;
}

static const struct sv_source_ops object_ops = {
	.remote = true,
	.look = remote_look,
	.stale = remote_stale,
	.reopen = remote_reopen,
	.hint = remote_hint,
	.forget = remote_forget,
	.pread = remote_pread,
	.close = remote_close,
};

int sv_remote_open_object(struct sv_transport *t, const char *path, bool read_only,
			  struct sv_source **out, struct sv_err *err)
{
	*out = NULL;
	struct remote *h = calloc(1, sizeof *h);
	char *p = strdup(path);
	if (!h || !p) {
		free(h);
		free(p);
		t->ops->close(t);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	h->ops = object_ops;
	h->ops.kind = t->ops->kind;
	if (t->ops->put) {
		h->ops.whole_only = true;
		h->ops.localize = remote_localize;
		h->ops.rewrite = remote_rewrite;
	} else {
		h->ops.read_only_why = t->ops->read_only_why;
	}
	sv_remote_bind(&h->s, &h->ops, t, p, read_only);
	h->t = t;
	h->window = 2;
	pthread_mutex_init(&h->lock, NULL);
	/* Listed a moment ago by a folder on its prefix: opened on that
	 * version, its first block read with the first read (from the disk
	 * cache if it holds it: a warm mount asks nothing of the store). */
	struct sv_remote_version lv;
	int rc = 0;
	if (sv_remote_listed(p, &lv))
		take_version(h, &lv);
	else
		rc = first_block(h, err);
	if (rc) {
		sv_source_free(&h->s);
		return rc;
	}
	*out = &h->s;
	return 0;
}
