/*
 * test_remote.c - the remote layer (source/remote.c, remote_prefix.c)
 * driven through a transport of the test's own: an object and a prefix's
 * members in memory, every request counted, failures and new versions
 * made at will.  What the e2e tests show against nginx and RADOS Gateway
 * by their request counts, shown here call by call: the first block at
 * the open, cache hits, widening windows, hints fetched together, a
 * small object fetched whole, the disk cache, a changed ETag, a failing
 * transport, a server that ignores ranges, listings held, members cached,
 * and puts on a condition.
 */
#include "internal.h"
#include "source/remote.h"
#include "t.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (256u << 10)

struct member {
	char name[64];
	uint8_t *p;
	size_t n;
	char etag[32];
};

struct mem {
	struct sv_transport t;
	pthread_mutex_t lock;
	uint8_t *data;          /* the object */
	size_t size;
	char etag[32];
	bool ranges;            /* answers ranges (else the whole object) */
	int fail;               /* requests still to fail with -EIO */
	unsigned gets, stats, wholes, lists, puts;
	size_t lens[64];        /* each get's length, in blocks (rounded up) */
	uint64_t offs[64];      /* each get's offset and length in bytes */
	size_t bytes[64];
	unsigned nlens;
	struct member m[8];     /* a prefix's members */
	size_t nm;
	unsigned page;          /* a listing's page size (0: all) */
	bool endless;           /* a listing that sends its first token again and again */
	bool closed;
};

/* The lengths of gets [from, to), sorted (requests made at once come in
 * any order). */
static void sort_lens(struct mem *m, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++)
		for (unsigned j = i + 1; j < to; j++)
			if (m->lens[j] < m->lens[i]) {
				size_t t = m->lens[i];
				m->lens[i] = m->lens[j];
				m->lens[j] = t;
			}
}

static const char *const MODIFIED = "Sat, 28 Nov 2026 12:00:00 GMT";

static void version(const char *etag, size_t size, struct sv_remote_version *v)
{
	memset(v, 0, sizeof *v);
	v->size = size;
	snprintf(v->etag, sizeof v->etag, "%s", etag);
	snprintf(v->modified, sizeof v->modified, "%s", MODIFIED);
}

static struct member *member(struct mem *m, const char *key)
{
	for (size_t i = 0; i < m->nm; i++)
		if (!strcmp(m->m[i].name, key))
			return &m->m[i];
	return NULL;
}

/* The object or member key: its bytes, size and ETag; -ENOENT if none. */
static int lookup(struct mem *m, const char *key, const uint8_t **p, size_t *n, const char **etag,
		  struct sv_err *err)
{
	if (!key) {
		*p = m->data, *n = m->size, *etag = m->etag;
		return 0;
	}
	struct member *e = member(m, key);
	if (!e)
		return sv_err_set(err, -ENOENT, "%s%s: 404 (not found)", m->t.path, key);
	*p = e->p, *n = e->n, *etag = e->etag;
	return 0;
}

/* A request made (under the lock): -EIO if it is one of those to fail. */
static int request(struct mem *m, struct sv_err *err)
{
	__atomic_add_fetch(&m->t.counts->requests, 1, __ATOMIC_RELAXED);
	if (m->fail > 0) {
		m->fail--;
		__atomic_add_fetch(&m->t.counts->failures, 1, __ATOMIC_RELAXED);
		return sv_err_set(err, -EIO, "%s: connection refused", m->t.path);
	}
	return 0;
}

static int mem_stat(struct sv_transport *t, const char *key, struct sv_remote_version *v,
		    struct sv_err *err)
{
	struct mem *m = (struct mem *)t;
	pthread_mutex_lock(&m->lock);
	m->stats++;
	const uint8_t *p;
	size_t n;
	const char *etag;
	int rc = request(m, err);
	if (!rc)
		rc = lookup(m, key, &p, &n, &etag, err);
	if (!rc)
		version(etag, n, v);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int mem_get(struct sv_transport *t, const char *key, uint64_t off, size_t n,
		   const struct sv_remote_version *expect, void *buf, size_t *got,
		   struct sv_remote_version *v, struct sv_err *err)
{
	struct mem *m = (struct mem *)t;
	pthread_mutex_lock(&m->lock);
	m->gets++;
	if (m->nlens < sizeof m->lens / sizeof *m->lens) {
		m->offs[m->nlens] = off;
		m->bytes[m->nlens] = n;
		m->lens[m->nlens++] = (n + BLOCK - 1) / BLOCK;
	}
	const uint8_t *p;
	size_t size;
	const char *etag;
	*got = 0;
	int rc = request(m, err);
	if (!rc)
		rc = lookup(m, key, &p, &size, &etag, err);
	if (!rc && expect && strcmp(expect->etag, etag))
		rc = sv_err_set(err, -ESTALE, "%s: 412 to If-Match %s", t->path, expect->etag);
	if (!rc && !m->ranges && size > n) {
		version(etag, size, v);
		rc = sv_err_set(err, -ERANGE, "%s: the whole object instead of a range", t->path);
	} else if (!rc && !m->ranges) {
		memcpy(buf, p, size);
		*got = size;
		version(etag, size, v);
	} else if (!rc && off >= size && size) {
		rc = sv_err_set(err, -EBADMSG, "%s: 416 (range not satisfiable)", t->path);
	} else if (!rc) {
		*got = size - off < n ? size - off : n;
		memcpy(buf, p + off, *got);
		version(etag, size, v);
		__atomic_add_fetch(&t->counts->fetched, *got, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int mem_get_whole(struct sv_transport *t, const char *key, uint64_t max,
			 struct sv_buf *out, struct sv_remote_version *v, struct sv_err *err)
{
	struct mem *m = (struct mem *)t;
	pthread_mutex_lock(&m->lock);
	m->wholes++;
	const uint8_t *p;
	size_t size;
	const char *etag;
	int rc = request(m, err);
	if (!rc)
		rc = lookup(m, key, &p, &size, &etag, err);
	if (!rc && size > max)
		rc = sv_err_set(err, -EFBIG, "%s: more than %llu bytes", t->path,
				(unsigned long long)max);
	if (!rc && sv_buf_add(out, p, size))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc)
		version(etag, size, v);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int mem_list(struct sv_transport *t, const char *dir, const char *token, unsigned max,
		    int (*fn)(void *arg, const struct sv_remote_entry *e), void *arg, bool *more,
		    char *next, size_t cap, struct sv_err *err)
{
	struct mem *m = (struct mem *)t;
	pthread_mutex_lock(&m->lock);
	m->lists++;
	*more = false;
	int rc = request(m, err);
	size_t from = token ? (size_t)atoi(token) : 0, page = max ? max : m->page;
	size_t to = page && from + page < m->nm ? from + page : m->nm;
	pthread_mutex_unlock(&m->lock);
	if (rc)
		return rc;
	/* Members at the top; "saves/" holds the second half, when asked for
	 * by dir "saves". */
	for (size_t i = from; !rc && i < to; i++) {
		const char *name = m->m[i].name;
		const char *slash = strchr(name, '/');
		if (*dir ? strncmp(name, dir, strlen(dir)) || name[strlen(dir)] != '/' : !!slash) {
			if (!*dir && slash && (i == 0 || strncmp(m->m[i - 1].name, name,
								  (size_t)(slash - name) + 1))) {
				char d[64];
				snprintf(d, sizeof d, "%.*s", (int)(slash - name), name);
				struct sv_remote_entry e = {d, true, 0, "", 0};
				rc = fn(arg, &e);
			}
			continue;
		}
		struct sv_remote_entry e = {*dir ? name + strlen(dir) + 1 : name, false, m->m[i].n,
					    m->m[i].etag, 1700000000};
		rc = fn(arg, &e);
	}
	if (!rc && (to < m->nm || m->endless)) {
		*more = true;
		snprintf(next, cap, "%zu", m->endless ? (size_t)1 : to);
	}
	return rc;
}

static int mem_put(struct sv_transport *t, const char *key, int fd, const void *p, uint64_t size,
		   const char *match, int (*check)(void *arg, struct sv_err *err), void *arg,
		   struct sv_remote_version *v, struct sv_err *err)
{
	struct mem *m = (struct mem *)t;
	pthread_mutex_lock(&m->lock);
	m->puts++;
	int rc = request(m, err);
	const uint8_t *old;
	size_t n;
	const char *etag;
	bool there = !rc && !lookup(m, key, &old, &n, &etag, err);
	if (!rc && (match ? !there || strcmp(match, etag) : there))
		rc = sv_err_set(err, -ESTALE, "%s: 412", t->path);
	uint8_t *q = rc ? NULL : malloc(size ? size : 1);
	if (q && (p ? (memcpy(q, p, size), 0) : pread(fd, q, size, 0) != (ssize_t)size))
		rc = sv_err_set(err, -EIO, "short read");
	char *now = NULL;
	if (!rc && !key) {
		free(m->data);
		m->data = q, m->size = size, now = m->etag;
	} else if (!rc) {
		struct member *e = there ? member(m, key) : &m->m[m->nm++];
		if (!there)
			snprintf(e->name, sizeof e->name, "%s", key);
		free(e->p);
		e->p = q, e->n = size, now = e->etag;
	} else {
		free(q);
	}
	if (now) {
		snprintf(now, 32, "\"v%u\"", 100 + m->puts);
		version(now, size, v);
	}
	pthread_mutex_unlock(&m->lock);
	(void)check, (void)arg;
	return rc;
}

static void mem_close(struct sv_transport *t)
{
	((struct mem *)t)->closed = true;
}

static const struct sv_transport_ops mem_ops = {
	.kind = "memory object",
	.prefix_kind = "memory prefix",
	.whole_when_unranged = true,
	.stat = mem_stat,
	.get = mem_get,
	.get_whole = mem_get_whole,
	.list = mem_list,
	.put = mem_put,
	.close = mem_close,
};

/* An object of `size` bytes, byte i being (i * 7 + i / BLOCK) & 0xff. */
static void mem_init(struct mem *m, size_t size)
{
	memset(m, 0, sizeof *m);
	m->t.ops = &mem_ops;
	pthread_mutex_init(&m->lock, NULL);
	m->data = malloc(size ? size : 1);
	for (size_t i = 0; i < size; i++)
		m->data[i] = (uint8_t)(i * 7 + i / BLOCK);
	m->size = size;
	snprintf(m->etag, sizeof m->etag, "\"v1\"");
	m->ranges = true;
}

static void mem_fini(struct mem *m)
{
	free(m->data);
	for (size_t i = 0; i < m->nm; i++)
		free(m->m[i].p);
	pthread_mutex_destroy(&m->lock);
}

static void add_member(struct mem *m, const char *name, size_t n)
{
	struct member *e = &m->m[m->nm++];
	snprintf(e->name, sizeof e->name, "%s", name);
	e->p = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		e->p[i] = (uint8_t)(name[0] + i);
	e->n = n;
	snprintf(e->etag, sizeof e->etag, "\"%s-1\"", name);
}

static struct sv_source *open_object(struct mem *m, uint64_t cache)
{
	struct sv_source *s = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_remote_open_object(&m->t, "mem://b/castle.level", false, &s, &err);
	T_INT(0, rc);
	if (rc)
		fprintf(stderr, "open: %s\n", err.msg);
	if (s && cache)
		s->cache = sv_cache_new(cache);
	return s;
}

/* Reads n bytes at off and checks them against the object's pattern. */
static int read_check(struct sv_source *s, const struct mem *m, uint64_t off, size_t n,
		      struct sv_err *err)
{
	uint8_t *buf = malloc(n ? n : 1);
	int rc = s->ops->pread(s, off, buf, n, err);
	if (!rc)
		T_MEM(m->data + off, buf, n);
	free(buf);
	return rc;
}

/* The open reads one block, which tells the size and version; reads in
 * it cost nothing; a block read twice is fetched once. */
static void test_open_and_hits(void)
{
	struct mem m;
	mem_init(&m, 40u << 20);
	struct sv_source *s = open_object(&m, 8u << 20);
	struct sv_err err;
	T_UINT(1, m.gets);
	T_UINT(1, m.lens[0]);
	T_UINT(40u << 20, (uint64_t)s->st.st_size);
	T_UINT(0100644, s->st.st_mode);
	T_UINT(1795867200, (uint64_t)s->st.st_mtim.tv_sec); /* its Last-Modified */
	T_STR("memory object", s->ops->kind);
	T_INT(0, read_check(s, &m, 100, 5000, &err));
	T_UINT(1, m.gets);
	T_INT(0, read_check(s, &m, 9 * BLOCK + 10, 100, &err));
	T_UINT(2, m.gets);
	T_INT(0, read_check(s, &m, 9 * BLOCK + 500, 100, &err));
	T_UINT(2, m.gets);
	T_UINT(1, s->requests >= 2);
	/* Past the end: refused, no request. */
	uint8_t b[4];
	T_INT(-EBADMSG, s->ops->pread(s, (40u << 20) - 2, b, 4, &err));
	T_HAS(err.msg, "lies past the end of mem://b/castle.level");
	T_UINT(2, m.gets);
	sv_source_free(s);
	T_OK(m.closed);
	mem_fini(&m);
}

/* A reader that goes on where the last fetch ended has its window
 * doubled: 1, 2, 4, 8 blocks, up to 8 MiB (32 blocks). */
static void test_windows(void)
{
	struct mem m;
	mem_init(&m, 64u << 20);
	struct sv_source *s = open_object(&m, 16u << 20);
	struct sv_err err;
	for (uint64_t off = BLOCK; off < (40u << 20); off += BLOCK)
		T_INT(0, read_check(s, &m, off, BLOCK, &err));
	static const size_t want[] = {1, 1, 2, 4, 8, 16, 32, 32, 32, 32};
	T_UINT(sizeof want / sizeof *want, m.nlens);
	for (size_t i = 0; i < m.nlens && i < sizeof want / sizeof *want; i++)
		T_UINT(want[i], m.lens[i]);
	/* A jump elsewhere starts again with one block. */
	T_INT(0, read_check(s, &m, 60u << 20, 10, &err));
	T_UINT(1, m.lens[m.nlens - 1]);
	sv_source_free(s);
	mem_fini(&m);
}

/* A format's hints: the blocks not held fetched together, adjacent ones
 * in one request; reading them then costs nothing. */
static void test_hints(void)
{
	struct mem m;
	mem_init(&m, 64u << 20);
	struct sv_source *s = open_object(&m, 32u << 20);
	struct sv_err err;
	struct sv_range r[] = {
		{5 * BLOCK + 10, 100}, {9 * BLOCK, 2 * BLOCK}, {20 * BLOCK + 1, 5}, {0, 10},
	};
	s->ops->hint(s, r, 4);
	/* Block 0 is the head; 5; 9-10 in one; 20. */
	T_UINT(4, m.gets);
	sort_lens(&m, 1, 4);
	T_UINT(1, m.lens[1]);
	T_UINT(1, m.lens[2]);
	T_UINT(2, m.lens[3]);
	for (size_t i = 0; i < 4; i++)
		T_INT(0, read_check(s, &m, r[i].off, r[i].len, &err));
	T_UINT(4, m.gets);
	sv_source_free(s);
	mem_fini(&m);
}

/* A small object (half the cache at most) comes whole at its first miss,
 * in runs of 8 MiB at most. */
static void test_small_whole(void)
{
	struct mem m;
	mem_init(&m, 20u << 20);
	struct sv_source *s = open_object(&m, 64u << 20);
	struct sv_err err;
	T_INT(0, read_check(s, &m, 19u << 20, 1000, &err));
	/* Blocks 1..79: 32 + 32 + 15 blocks. */
	T_UINT(4, m.gets);
	sort_lens(&m, 1, 4);
	T_UINT(15, m.lens[1]);
	T_UINT(32, m.lens[2]);
	T_UINT(32, m.lens[3]);
	for (uint64_t off = 0; off < (20u << 20); off += 3 * BLOCK + 17)
		T_INT(0, read_check(s, &m, off, 5000 < (20u << 20) - off ? 5000 : 10, &err));
	T_UINT(4, m.gets);
	sv_source_free(s);
	mem_fini(&m);
}

/* The gets [from, to) by offset (requests made at once come in any
 * order), their offsets and lengths in bytes. */
static void sort_gets(struct mem *m, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++)
		for (unsigned j = i + 1; j < to; j++)
			if (m->offs[j] < m->offs[i]) {
				uint64_t o = m->offs[i];
				size_t b = m->bytes[i];
				m->offs[i] = m->offs[j];
				m->bytes[i] = m->bytes[j];
				m->offs[j] = o;
				m->bytes[j] = b;
			}
}

/*
 * A container's tree read in pieces (an object within 32 MiB): a short
 * miss fetches the 4 KiB parts it covers; hinted short ranges come
 * together, two parts apart or less in one request, those held not at
 * all; a long read takes the object whole.  After eight pieces the next
 * miss takes it whole too.  Pieces go to the disk cache: a second open
 * reads the same tree asking nothing.  A view's read (not the tree's)
 * takes a small object whole at once.
 */
static void test_pieces(void)
{
	char dir[] = "/tmp/savefs-remote-XXXXXX";
	T_OK(mkdtemp(dir) != NULL);
	struct mem m;
	mem_init(&m, 4u << 20);
	struct sv_source *s = open_object(&m, 64u << 20);
	s->store = strdup(dir);
	struct sv_err err;
	T_UINT(1, m.gets);
	sv_source_tree_begin();
	T_INT(0, read_check(s, &m, 1000000, 100, &err));
	T_UINT(2, m.gets);
	T_UINT(244 * 4096, m.offs[1]);
	T_UINT(4096, m.bytes[1]);
	struct sv_range r[] = {{1500000, 20}, {1508000, 20}, {3000000, 30}, {1000010, 5}};
	s->ops->hint(s, r, 4);
	T_UINT(4, m.gets);
	sort_gets(&m, 2, 4);
	T_UINT(366 * 4096, m.offs[2]);
	T_UINT(3 * 4096, m.bytes[2]);
	T_UINT(732 * 4096, m.offs[3]);
	T_UINT(4096, m.bytes[3]);
	for (size_t i = 0; i < 4; i++)
		T_INT(0, read_check(s, &m, r[i].off, r[i].len, &err));
	T_UINT(4, m.gets);
	/* A long read: the object whole (blocks 1-15, block 0 is the head). */
	T_INT(0, read_check(s, &m, 2000000, 70000, &err));
	T_UINT(5, m.gets);
	T_UINT(BLOCK, m.offs[4]);
	T_UINT(15 * BLOCK, m.bytes[4]);
	sv_source_free(s);
	/* Opened again: the pieces from the disk. */
	m.closed = false;
	s = open_object(&m, 64u << 20);
	s->store = strdup(dir);
	T_UINT(6, m.gets);
	for (size_t i = 0; i < 4; i++)
		T_INT(0, read_check(s, &m, r[i].off, r[i].len, &err));
	T_INT(0, read_check(s, &m, 1000000, 100, &err));
	T_UINT(6, m.gets);
	sv_source_free(s);
	/* Another version: eight pieces, then the object whole. */
	m.closed = false;
	m.data[0] ^= 1;
	snprintf(m.etag, sizeof m.etag, "\"v2\"");
	s = open_object(&m, 64u << 20);
	s->store = strdup(dir);
	T_UINT(7, m.gets);
	for (unsigned i = 0; i < 8; i++)
		T_INT(0, read_check(s, &m, (uint64_t)(i + 2) * 300000, 10, &err));
	T_UINT(15, m.gets);
	T_INT(0, read_check(s, &m, 3900000, 10, &err));
	T_UINT(16, m.gets);
	T_UINT(15 * BLOCK, m.bytes[15]);
	sv_source_tree_end();
	sv_source_free(s);
	/* A view's read: the object whole at its first miss. */
	m.closed = false;
	s = open_object(&m, 64u << 20);
	T_INT(0, read_check(s, &m, 1000000, 100, &err));
	T_UINT(18, m.gets);
	T_UINT(15 * BLOCK, m.bytes[17]);
	sv_source_free(s);
	mem_fini(&m);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	T_INT(0, system(cmd));
}

/* Blocks fetched go to the disk cache: a second open of the same version
 * reads them from disk, not the store. */
static void test_disk(void)
{
	char dir[] = "/tmp/savefs-remote-XXXXXX";
	T_OK(mkdtemp(dir) != NULL);
	struct mem m;
	mem_init(&m, 64u << 20);
	struct sv_source *s = open_object(&m, 8u << 20);
	s->store = strdup(dir);
	struct sv_err err;
	T_INT(0, read_check(s, &m, 30 * BLOCK, 10, &err));
	T_UINT(2, m.gets);
	sv_source_free(s);
	m.closed = false;
	s = open_object(&m, 8u << 20);
	s->store = strdup(dir);
	T_UINT(3, m.gets);
	T_INT(0, read_check(s, &m, 30 * BLOCK, 10, &err));
	T_UINT(3, m.gets);
	T_UINT(1, s->disk_hits);
	/* Forgotten: fetched again. */
	s->ops->forget(s);
	sv_cache_drop(s->cache, 0, 0);
	T_INT(0, read_check(s, &m, 30 * BLOCK, 10, &err));
	T_UINT(4, m.gets);
	sv_source_free(s);
	mem_fini(&m);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	T_INT(0, system(cmd));
}

/* Read at random (two misses away from the last fetch), an object past
 * the whole-at-first-miss size with a disk cache has its other blocks
 * fetched behind the reader, sixteen blocks a request: the reads after it
 * ask nothing.  Without a disk cache, nothing is fetched behind. */
static void test_behind(void)
{
	char dir[] = "/tmp/savefs-remote-XXXXXX";
	T_OK(mkdtemp(dir) != NULL);
	struct mem m;
	mem_init(&m, 48u << 20); /* 192 blocks */
	struct sv_source *s = open_object(&m, 8u << 20);
	s->store = strdup(dir);
	struct sv_err err;
	T_INT(0, read_check(s, &m, 100 * BLOCK + 5, 100, &err));
	T_INT(0, read_check(s, &m, 20 * BLOCK + 7, 100, &err));
	sv_remote_wait_behind(s);
	/* The open, the two reads, and 12 runs of 16 blocks. */
	T_UINT(1 + 2 + 12, m.gets);
	uint64_t hits = s->disk_hits;
	T_INT(0, read_check(s, &m, 5 * BLOCK, 1000, &err));
	T_INT(0, read_check(s, &m, 150 * BLOCK + 3, BLOCK, &err));
	T_INT(0, read_check(s, &m, 191 * BLOCK, 100, &err));
	T_UINT(15, m.gets);
	T_UINT(hits + 4, s->disk_hits); /* (the second read spans two blocks) */
	sv_source_free(s);
	/* No disk cache: each read its own. */
	m.closed = false;
	s = open_object(&m, 8u << 20);
	T_INT(0, read_check(s, &m, 100 * BLOCK + 5, 100, &err));
	T_INT(0, read_check(s, &m, 20 * BLOCK + 7, 100, &err));
	T_INT(0, read_check(s, &m, 60 * BLOCK + 7, 100, &err));
	sv_remote_wait_behind(s);
	T_UINT(15 + 4, m.gets);
	sv_source_free(s);
	mem_fini(&m);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	T_INT(0, system(cmd));
}

/* Another version in the store: the read fails with the reason, nothing
 * of the new one read; the source is stale until reopened, and then
 * reads the new version. */
static void test_changed(void)
{
	struct mem m;
	mem_init(&m, 4u << 20);
	struct sv_source *s = open_object(&m, 1u << 20);
	struct sv_err err;
	T_OK(!s->ops->stale(s));
	for (size_t i = 0; i < m.size; i++)
		m.data[i] ^= 0x5a;
	snprintf(m.etag, sizeof m.etag, "\"v2\"");
	uint8_t b[16];
	T_INT(-EIO, s->ops->pread(s, 3 * BLOCK, b, sizeof b, &err));
	T_STR("mem://b/castle.level changed on the server since it was opened (412 to "
	      "If-Match \"v1\")", err.msg);
	T_OK(s->ops->stale(s));
	/* Refused at once after that, no request. */
	unsigned gets = m.gets;
	T_INT(-EIO, s->ops->pread(s, 5 * BLOCK, b, sizeof b, &err));
	T_UINT(gets, m.gets);
	struct stat was = s->st;
	T_INT(0, s->ops->reopen(s, &err));
	T_OK(!s->ops->stale(s));
	T_OK(was.st_ino != s->st.st_ino);
	T_INT(0, read_check(s, &m, 3 * BLOCK, 16, &err));
	T_INT(0, read_check(s, &m, 0, 16, &err));
	sv_source_free(s);
	mem_fini(&m);
}

/* The source's log, collected. */
static void log_line(void *arg, const char *line)
{
	sv_buf_printf(arg, "%s\n", line);
}

/* A failing transport: the read fails with its reason and the failure is
 * counted; nothing is cached of it, and the next read asks again. */
static void test_failing(void)
{
	struct mem m;
	mem_init(&m, 4u << 20);
	struct sv_source *s = NULL;
	struct sv_err err;
	m.fail = 1;
	T_INT(-EIO, sv_remote_open_object(&m.t, "mem://b/castle.level", false, &s, &err));
	T_STR("mem://b/castle.level: connection refused", err.msg);
	T_OK(s == NULL);
	T_OK(m.closed);
	m.closed = false;
	s = open_object(&m, 1u << 20);
	m.fail = 1;
	uint8_t b[16];
	T_INT(-EIO, s->ops->pread(s, 2 * BLOCK, b, sizeof b, &err));
	T_HAS(err.msg, "connection refused");
	T_UINT(1, s->failures);
	T_OK(!s->ops->stale(s));
	T_INT(0, read_check(s, &m, 2 * BLOCK, 16, &err));
	sv_source_free(s);
	mem_fini(&m);

	/* A hint that fails says so in the log (an object too big to come
	 * whole, a cache that lets the hint fetch), and the read asks again. */
	mem_init(&m, 64u << 20);
	s = open_object(&m, 8u << 20);
	struct sv_buf log;
	sv_buf_init(&log);
	s->log = log_line;
	s->log_arg = &log;
	m.fail = 100;
	unsigned gets = m.gets;
	struct sv_range r[] = {{8 * BLOCK, 1}, {12 * BLOCK, 1}};
	s->ops->hint(s, r, 2);
	T_UINT(gets + 2, m.gets);
	sv_buf_add(&log, "", 1);
	T_STR("a read ahead failed: mem://b/castle.level: connection refused\n",
	      (const char *)log.p);
	sv_buf_fini(&log);
	T_INT(-EIO, s->ops->pread(s, 8 * BLOCK, b, 1, &err));
	m.fail = 0;
	T_INT(0, read_check(s, &m, 8 * BLOCK, 1, &err));
	T_INT(0, read_check(s, &m, 12 * BLOCK, 1, &err));
	sv_source_free(s);
	mem_fini(&m);
}

/* A server that ignores ranges: the object read whole at the open, every
 * read from it. */
static void test_unranged(void)
{
	struct mem m;
	mem_init(&m, 3u << 20);
	m.ranges = false;
	struct sv_source *s = open_object(&m, 0);
	struct sv_err err;
	T_UINT(1, m.gets);
	T_UINT(1, m.wholes);
	T_UINT(3u << 20, (uint64_t)s->st.st_size);
	T_INT(0, read_check(s, &m, (2u << 20) + 5, 300000, &err));
	T_UINT(1, m.gets);
	T_UINT(1, m.wholes);
	sv_source_free(s);
	mem_fini(&m);
}

struct write_arg {
	const char *text;
	int checks;
};

static int write_new(void *arg, int fd, struct sv_err *err)
{
	const struct write_arg *w = arg;
	return sv_write_all(fd, w->text, strlen(w->text)) ? sv_err_set(err, -EIO, "write") : 0;
}

static int check_ok(void *arg, struct sv_err *err)
{
	((struct write_arg *)arg)->checks++;
	(void)err;
	return 0;
}

/* A rewrite lands on the version read, and is then what is read; another
 * writer's version is never overwritten. */
static void test_rewrite(void)
{
	struct mem m;
	mem_init(&m, 1u << 20);
	struct sv_source *s = open_object(&m, 1u << 20);
	struct sv_err err;
	T_OK(s->ops->whole_only);
	struct write_arg w = {"a new level", 0};
	T_INT(0, s->ops->rewrite(s, write_new, check_ok, &w, &err));
	T_UINT(1, m.puts);
	T_UINT(11, m.size);
	T_MEM("a new level", m.data, 11);
	T_UINT(11, (uint64_t)s->st.st_size);
	char b[11];
	T_INT(0, s->ops->pread(s, 0, b, 11, &err));
	T_MEM("a new level", b, 11);
	/* Another writer's version: refused, the store keeps it. */
	snprintf(m.etag, sizeof m.etag, "\"theirs\"");
	struct write_arg w2 = {"mine", 0};
	T_INT(-EBUSY, s->ops->rewrite(s, write_new, check_ok, &w2, &err));
	T_HAS(err.msg, "was changed by another writer since it was read");
	T_UINT(11, m.size);
	sv_source_free(s);
	mem_fini(&m);
}

static int collect(void *arg, const char *name)
{
	struct sv_buf *b = arg;
	return sv_buf_printf(b, "%s|", name);
}

/* A prefix: listings held (one request answers a walk), members read
 * whole once, replaced on a condition, listings bounded. */
static void test_prefix(void)
{
	struct mem m;
	mem_init(&m, 0);
	add_member(&m, "a.map", 100);
	add_member(&m, "b.map", 5000);
	add_member(&m, "saves/c.map", 7);
	add_member(&m, "seg1", 3000);
	struct sv_source *s = NULL;
	struct sv_err err;
	T_INT(0, sv_remote_open_prefix(&m.t, "mem://b/runs", false, &s, &err));
	T_STR("mem://b/runs/", s->path);
	T_STR("memory prefix", s->ops->kind);
	T_UINT(1, m.lists);
	s->cache = sv_cache_new(1u << 20);
	struct stat st;
	T_INT(0, s->ops->place_stat(s, "a.map", &st, &err));
	T_UINT(100, (uint64_t)st.st_size);
	T_UINT(2, m.lists);
	T_INT(0, s->ops->place_stat(s, "b.map", &st, &err));
	T_INT(0, s->ops->place_stat(s, "saves", &st, &err));
	T_OK(S_ISDIR(st.st_mode));
	T_INT(-ENOENT, s->ops->place_stat(s, "none.map", &st, &err));
	T_STR("mem://b/runs/none.map: no such object", err.msg);
	struct sv_buf names;
	sv_buf_init(&names);
	T_INT(0, s->ops->place_list(s, "", collect, &names, &err));
	sv_buf_add(&names, "", 1);
	T_STR("a.map|b.map|saves|seg1|", (const char *)names.p);
	sv_buf_fini(&names);
	T_UINT(2, m.lists);
	T_INT(0, s->ops->place_stat(s, "saves/c.map", &st, &err));
	T_UINT(3, m.lists);
	uint8_t b[8];
	size_t got;
	T_INT(0, s->ops->place_read(s, "saves/c.map", 2, b, 8, &got, &err));
	T_UINT(5, got);
	T_UINT('s' + 2, b[0]);
	/* A member: whole at its first read, then from the cache. */
	T_INT(0, s->ops->member_pread(s, "seg1", 1000, b, 4, &err));
	T_UINT((uint8_t)('s' + 1000), b[0]);
	T_INT(0, s->ops->member_pread(s, "seg1", 2000, b, 4, &err));
	T_UINT(1, m.wholes);
	T_INT(-EBADMSG, s->ops->member_pread(s, "seg1", 2999, b, 4, &err));
	T_INT(-EINVAL, s->ops->member_pread(s, "../x", 0, b, 1, &err));
	/* Replaced on the member as read; refused once another writer
	 * replaced it. */
	T_INT(0, s->ops->member_stat(s, "a.map", &st, &err));
	T_INT(0, s->ops->member_replace(s, "a.map", ".tmp", "new", 3, &st, &err));
	T_INT(-EBUSY, s->ops->member_replace(s, "a.map", ".tmp", "newer", 5, &st, &err));
	T_HAS(err.msg, "was replaced by another writer since it was read");
	T_INT(-EBUSY, s->ops->member_replace(s, "b.map", ".tmp", "x", 1, NULL, &err));
	T_INT(0, s->ops->member_replace(s, "d.map", ".tmp", "x", 1, NULL, &err));
	/* (a.map, b.map refused by the store, d.map; the second a.map was
	 * refused before a put.) */
	T_UINT(3, m.puts);
	T_INT(0, s->ops->member_stat(s, "d.map", &st, &err));
	T_UINT(1, (uint64_t)st.st_size);
	/* The digest changes when a member does. */
	uint64_t d1, d2;
	T_INT(0, s->ops->digest(s, &d1, &err));
	m.m[0].etag[1] = 'z';
	T_INT(0, s->ops->digest(s, &d2, &err));
	T_OK(d1 != d2);
	sv_source_free(s);
	mem_fini(&m);
}

static void test_listing_pages(void)
{
	struct mem m;
	mem_init(&m, 0);
	for (int i = 0; i < 7; i++) {
		char n[16];
		snprintf(n, sizeof n, "m%d", i);
		add_member(&m, n, 1);
	}
	m.page = 2;
	struct sv_source *s = NULL;
	struct sv_err err;
	T_INT(0, sv_remote_open_prefix(&m.t, "mem://b/p/", false, &s, &err));
	struct sv_buf names;
	sv_buf_init(&names);
	T_INT(0, s->ops->member_list(s, collect, &names, &err));
	sv_buf_add(&names, "", 1);
	T_STR("m0|m1|m2|m3|m4|m5|m6|", (const char *)names.p);
	sv_buf_fini(&names);
	T_UINT(1 + 4, m.lists);
	/* A store that sends one token again and again: refused. */
	m.endless = true;
	sv_buf_init(&names);
	T_INT(-EIO, s->ops->member_list(s, collect, &names, &err));
	T_STR("cannot list mem://b/p/: the store sent the same continuation token twice "
	      "(a listing that would not end)", err.msg);
	sv_buf_fini(&names);
	/* A failing store: its reason, after "cannot list". */
	m.endless = false;
	m.fail = 1;
	struct stat st;
	T_INT(-EIO, s->ops->place_stat(s, "m1", &st, &err));
	T_STR("cannot list mem://b/p/: connection refused", err.msg);
	sv_source_free(s);
	/* An empty prefix is refused at the open. */
	struct mem e;
	mem_init(&e, 0);
	T_INT(-ENOENT, sv_remote_open_prefix(&e.t, "mem://b/none/", false, &s, &err));
	T_STR("mem://b/none/: no object under this prefix", err.msg);
	mem_fini(&e);
	mem_fini(&m);
}

/* HTTP dates in their three forms (RFC 9110), and what is none. */
static void test_dates(void)
{
	T_UINT(1795867200, (uint64_t)sv_remote_time("Sat, 28 Nov 2026 12:00:00 GMT"));
	T_UINT(1795867200, (uint64_t)sv_remote_time("Saturday, 28-Nov-26 12:00:00 GMT"));
	T_UINT(1795867200, (uint64_t)sv_remote_time("Sat Nov 28 12:00:00 2026"));
	T_UINT(0, (uint64_t)sv_remote_time(""));
	T_UINT(0, (uint64_t)sv_remote_time("yesterday"));
	T_UINT(0, (uint64_t)sv_remote_time("Sat, 28 Nov 2026 12:00:00 GMT and more"));
}

int main(void)
{
	test_dates();
	test_open_and_hits();
	test_windows();
	test_hints();
	test_small_whole();
	test_pieces();
	test_disk();
	test_behind();
	test_changed();
	test_failing();
	test_unranged();
	test_rewrite();
	test_prefix();
	test_listing_pages();
	return t_done();
}
