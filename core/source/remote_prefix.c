/*
 * source/remote_prefix.c - a prefix of a store, read through a transport
 * (remote.h): the remote layer's directory half.
 *
 * A prefix is two things.  A directory source (a recording being
 * written: a preamble and segments, each an object under the prefix): a
 * member is asked for when it is wanted, its stat for its identity (its
 * ETag's, as an object's), its bytes whole at the first read and kept in
 * the container's cache (a segment is written once, and read chunk after
 * chunk); a member replaced is put on the condition that the store still
 * has the member as read (or none, for a new one), so that another
 * writer's member is never overwritten.  And a save folder's place: rel,
 * a path under it, names an object (a file) or a prefix under it (a
 * directory).  A directory's listing (every page) is held for
 * LIST_HOLD_NS (10 s) and answers what is in it meanwhile, its listings
 * and lookups: a walk of a listed directory costs no request more.  A
 * store tells no one of its changes: an object put by another client
 * shows within those 10 s (and a container's own commits are its
 * source's, checked by version whatever the listing says).
 *
 * The prefix itself has no bytes, and its identity is its location's.
 */
#include "source/remote.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#define LISTINGS 64                    /* directory listings held */
#define LIST_HOLD_NS 10000000000LL     /* and trusted this long after they are read */
#define MEMBER_WHOLE (8u << 20)        /* a member read whole at its first read */
/* A listing's bounds: what a folder of more is refused with (a store that
 * sent pages forever would take all memory, and the time). */
#define LIST_ENTRIES_MAX 1000000
#define LIST_BYTES_MAX (256u << 20)

/* A directory of the prefix as listed. */
struct item {
	char *name;
	char *etag;          /* an object's, as listed (NULL: a directory) */
	struct stat st;
};

struct listing {
	char *rel;           /* the directory ("" the prefix), NULL if unused */
	int64_t at;          /* when it was read (monotonic ns) */
	struct item *v;      /* sorted by name */
	size_t n, cap;
};

struct prefix {
	struct sv_source s;           /* first: freed as one */
	struct sv_source_ops ops;     /* s.ops, named as its transport's */
	struct sv_transport *t;
	pthread_mutex_t lock;         /* lists */
	struct listing lists[LISTINGS];
	struct prefix *next_open;     /* the process's open prefixes (open_lock) */
};

/* The prefixes open in the process: an object opened under one finds its
 * version in a listing held (sv_remote_listed).  open_lock is taken
 * before a prefix's lock, and never over a request. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prefix *open_prefixes;

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].etag);
	}
	free(l->v);
	free(l->rel);
	memset(l, 0, sizeof *l);
}

static int by_item_name(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->name, ((const struct item *)b)->name);
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* ---- listing ------------------------------------------------------------------------ */

struct bounded {
	int (*fn)(void *arg, const struct sv_remote_entry *e);
	void *arg;
	uint64_t entries, bytes;
	bool over;    /* past the bounds */
	bool stopped; /* fn stopped the listing */
};

static int count_entry(void *arg, const struct sv_remote_entry *e)
{
	struct bounded *b = arg;
	b->entries++;
	b->bytes += strlen(e->name) + strlen(e->etag) + 64;
	if (b->entries > LIST_ENTRIES_MAX || b->bytes > LIST_BYTES_MAX) {
		b->over = true;
		return -EFBIG;
	}
	int rc = b->fn(b->arg, e);
	b->stopped = rc != 0;
	return rc;
}

/* Every entry of directory dir: fn(arg, entry), a page at a time.  A
 * continuation token sent twice (a listing that would never end) and a
 * listing past LIST_ENTRIES_MAX entries or LIST_BYTES_MAX bytes are
 * refused with the reason. */
static int list_all(struct prefix *h, const char *dir,
		    int (*fn)(void *arg, const struct sv_remote_entry *e), void *arg,
		    struct sv_err *err)
{
	struct bounded bd = {fn, arg, 0, 0, false, false};
	struct sv_u64set seen = {0};
	char tok[1100] = "", next[1100];
	int rc = 0;
	bool more = true;
	while (!rc && more) {
		next[0] = '\0';
		rc = h->t->ops->list(h->t, dir, tok[0] ? tok : NULL, 0, count_entry, &bd, &more,
				     next, sizeof next, err);
		if (bd.over)
			rc = sv_err_set(err, -EFBIG, "cannot list %s%s: more than %u entries or %u MiB "
					"in one directory", h->s.path, dir, LIST_ENTRIES_MAX,
					LIST_BYTES_MAX >> 20);
		else if (rc && !bd.stopped) {
			char why[SV_ERR_MAX];
			memcpy(why, err->msg, sizeof why);
			sv_err_set(err, rc, "cannot list %.*s", (int)(sizeof why - 20), why);
		}
		if (rc || !more)
			break;
		/* A token seen before: the store would list the same pages
		 * again and again. */
		uint64_t t = XXH3_64bits(next, strlen(next)) | 1;
		bool again = false;
		for (size_t i = 0; i < seen.n && !again; i++)
			again = seen.v[i] == t;
		sv_u64set_add(&seen, t);
		if (again)
			rc = sv_err_set(err, -EIO, "cannot list %s: the store sent the same "
					"continuation token twice (a listing that would not end)",
					h->s.path);
		else if (seen.all)
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		memcpy(tok, next, sizeof tok);
	}
	sv_u64set_fini(&seen);
	return rc;
}

/* The location of rel under the prefix (a directory's ends in '/'). */
static char *place_location(struct sv_source *s, const char *rel, bool dir)
{
	size_t n = strlen(s->path) + strlen(rel) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", s->path, rel, dir && *rel ? "/" : "");
	return p;
}

/* A directory under a prefix, or a prefix: its location's identity, and
 * its time the first open of a store's prefix in this process (a store
 * has no directories, nor times for them). */
static time_t dirs_time;
static pthread_once_t dirs_once = PTHREAD_ONCE_INIT;

static void dirs_time_set(void)
{
	dirs_time = time(NULL);
}

static void dir_identity(const char *where, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_mode = S_IFDIR | 0755;
	st->st_nlink = 2;
	st->st_dev = 0x5a5a;
	st->st_ino = (ino_t)(XXH3_64bits(where, strlen(where)) | 1);
	st->st_mtim.tv_sec = dirs_time;
	st->st_ctim = st->st_atim = st->st_mtim;
}

struct gather {
	struct prefix *h;
	const char *rel;
	struct listing l;
	int rc;
};

static int gather_one(void *arg, const struct sv_remote_entry *e)
{
	struct gather *g = arg;
	struct listing *l = &g->l;
	if (!sv_real_name_ok(e->name))
		return 0; /* "." or "..": not a name a file can have */
	if (sv_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
		return g->rc = -ENOMEM;
	struct item *it = &l->v[l->n];
	size_t n = strlen(g->rel) + strlen(e->name) + 2;
	char *rel = malloc(n);
	char *where = NULL;
	if (rel) {
		snprintf(rel, n, "%s%s%s", g->rel, *g->rel ? "/" : "", e->name);
		where = place_location(&g->h->s, rel, false);
	}
	it->name = strdup(e->name);
	it->etag = e->dir ? NULL : strdup(e->etag);
	if (!rel || !where || !it->name || (!e->dir && !it->etag)) {
		free(rel);
		free(where);
		free(it->name);
		free(it->etag);
		return g->rc = -ENOMEM;
	}
	if (e->dir) {
		dir_identity(where, &it->st);
	} else {
		sv_remote_identity(&it->st, where, e->size, e->etag, (time_t)e->mtime);
		it->st.st_mode = S_IFREG | 0644;
	}
	free(rel);
	free(where);
	l->n++;
	return 0;
}

/* Directory rel listed afresh, and held (replacing the oldest held). */
static int list_dir(struct prefix *h, const char *rel, struct sv_err *err)
{
	struct gather g = {h, rel, {0}, 0};
	int rc = list_all(h, rel, gather_one, &g, err);
	if (rc == -ENOMEM || g.rc)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc && !(g.l.rel = strdup(rel)))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (rc) {
		listing_free(&g.l);
		return rc;
	}
	/* An object and a prefix of one name: the object is shown. */
	if (g.l.n > 1)
		qsort(g.l.v, g.l.n, sizeof *g.l.v, by_item_name);
	size_t w = 0;
	for (size_t i = 0; i < g.l.n; i++) {
		if (w && !strcmp(g.l.v[w - 1].name, g.l.v[i].name)) {
			if (S_ISDIR(g.l.v[w - 1].st.st_mode)) {
				free(g.l.v[w - 1].name);
				free(g.l.v[w - 1].etag);
				g.l.v[w - 1] = g.l.v[i];
			} else {
				free(g.l.v[i].name);
				free(g.l.v[i].etag);
			}
			continue;
		}
		g.l.v[w++] = g.l.v[i];
	}
	g.l.n = w;
	g.l.at = now_ns();
	pthread_mutex_lock(&h->lock);
	size_t slot = 0;
	for (size_t i = 0; i < LISTINGS; i++) {
		if (h->lists[i].rel && !strcmp(h->lists[i].rel, rel)) {
			slot = i;
			break;
		}
		if (!h->lists[i].rel || h->lists[i].at < h->lists[slot].at)
			slot = i;
		if (!h->lists[slot].rel)
			break;
	}
	listing_free(&h->lists[slot]);
	h->lists[slot] = g.l;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* Entry name of held listing dir: 0 and *st, -ENOENT if it is not
 * there, 1 if the listing is not held (or held too long). */
static int held_entry(struct prefix *h, const char *dir, const char *name, struct stat *st)
{
	int64_t now = now_ns();
	int rc = 1;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < LISTINGS && rc == 1; i++) {
		struct listing *l = &h->lists[i];
		if (!l->rel || strcmp(l->rel, dir) || now - l->at > LIST_HOLD_NS)
			continue;
		struct item key = {(char *)name, NULL, {0}};
		struct item *it = l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, by_item_name) : NULL;
		rc = it ? 0 : -ENOENT;
		if (it)
			*st = it->st;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

bool sv_remote_listed(const char *where, struct sv_remote_version *v)
{
	bool found = false;
	int64_t now = now_ns();
	pthread_mutex_lock(&open_lock);
	for (struct prefix *h = open_prefixes; h && !found; h = h->next_open) {
		size_t pl = strlen(h->s.path);
		if (strncmp(where, h->s.path, pl))
			continue;
		const char *rel = where + pl, *slash = strrchr(rel, '/');
		const char *name = slash ? slash + 1 : rel;
		size_t dl = slash ? (size_t)(slash - rel) : 0;
		pthread_mutex_lock(&h->lock);
		for (size_t i = 0; i < LISTINGS && !found; i++) {
			struct listing *l = &h->lists[i];
			if (!l->rel || strlen(l->rel) != dl || strncmp(l->rel, rel, dl) ||
			    now - l->at > LIST_HOLD_NS)
				continue;
			struct item key = {(char *)name, NULL, {0}};
			struct item *it = l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, by_item_name)
					       : NULL;
			if (!it || !it->etag || !it->etag[0] || S_ISDIR(it->st.st_mode))
				continue;
			memset(v, 0, sizeof *v);
			v->size = (uint64_t)it->st.st_size;
			snprintf(v->etag, sizeof v->etag, "%s", it->etag);
			/* Its time as an answer's Last-Modified would say it. */
			struct tm tm;
			time_t t = it->st.st_mtim.tv_sec;
			if (t > 0 && gmtime_r(&t, &tm))
				strftime(v->modified, sizeof v->modified, "%a, %d %b %Y %H:%M:%S GMT", &tm);
			found = true;
		}
		pthread_mutex_unlock(&h->lock);
	}
	pthread_mutex_unlock(&open_lock);
	return found;
}

/* ---- members ----------------------------------------------------------------------------- */

static int member_ok(const struct prefix *h, const char *name, struct sv_err *err)
{
	if (!sv_name_ok(name) || strchr(name, '/'))
		return sv_err_set(err, -EINVAL, "\"%s\" cannot name a member", name);
	(void)h;
	return 0;
}

/* A member's stat and version. */
static int member_version(struct prefix *h, const char *name, struct stat *st,
			  struct sv_remote_version *v, struct sv_err *err)
{
	int rc = member_ok(h, name, err);
	if (!rc)
		rc = h->t->ops->stat(h->t, name, v, err);
	if (rc)
		return rc;
	char where[4096];
	snprintf(where, sizeof where, "%s%s", h->s.path, name);
	sv_remote_identity(st, where, v->size, v->etag, sv_remote_time(v->modified));
	st->st_mode = S_IFREG | 0644;
	return 0;
}

static int prefix_member_stat(struct sv_source *s, const char *name, struct stat *st,
			      struct sv_err *err)
{
	struct sv_err local;
	struct sv_remote_version v;
	return member_version((struct prefix *)s, name, st, &v, err ? err : &local);
}

/* A member's version as the prefix's last listing names it (its
 * identity's inode: location and ETag), or 0 if it was never listed: the
 * key its bytes are cached under, so that a member replaced (a recorder's
 * new preamble) is fetched anew once a listing has seen it. */
static uint64_t listed_version(struct prefix *h, const char *name)
{
	uint64_t v = 0;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < LISTINGS; i++) {
		struct listing *l = &h->lists[i];
		if (!l->rel || l->rel[0])
			continue;
		struct item key = {(char *)name, NULL, {0}};
		struct item *it = l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, by_item_name) : NULL;
		if (it)
			v = (uint64_t)it->st.st_ino;
	}
	pthread_mutex_unlock(&h->lock);
	return v;
}

/* A member's bytes: the whole member (MEMBER_WHOLE at most) at its first
 * read, kept in the container's cache under its name's hash; a larger
 * one is read by range, each read a request. */
static int prefix_member_pread(struct sv_source *s, const char *name, uint64_t off, void *buf,
			       size_t n, struct sv_err *err)
{
	struct prefix *h = (struct prefix *)s;
	if (!n)
		return 0;
	int rc = member_ok(h, name, err);
	if (rc)
		return rc;
	uint64_t key = (XXH3_64bits(name, strlen(name)) ^ listed_version(h, name)) | (1ull << 63);
	struct sv_blob *whole = s->cache ? sv_cache_get(s->cache, key) : NULL;
	struct sv_remote_version v;
	if (!whole && s->cache) {
		struct sv_buf b;
		struct sv_err e;
		sv_err_clear(&e);
		rc = sv_buf_init_blob(&b) ? sv_err_set(&e, -ENOMEM, "out of memory")
					  : h->t->ops->get_whole(h->t, name, MEMBER_WHOLE, &b, &v, &e);
		if (!rc && (whole = sv_buf_take_blob(&b)))
			sv_cache_put(s->cache, key, whole);
		sv_buf_fini(&b);
		if (rc && rc != -EFBIG) {
			*err = e;
			return rc;
		}
		rc = 0;
	}
	if (whole) {
		if (off > whole->len || n > whole->len - off)
			rc = sv_err_set(err, -EBADMSG, "%s%s: bytes %llu+%zu lie past its end "
					"(%zu bytes)", s->path, name, (unsigned long long)off, n,
					whole->len);
		else
			memcpy(buf, whole->data + off, n);
		sv_blob_unref(whole);
		return rc;
	}
	size_t got = 0;
	rc = h->t->ops->get(h->t, name, off, n, NULL, buf, &got, &v, err);
	if (rc == -ERANGE || (!rc && got < n && off + got >= v.size))
		return sv_err_set(err, -EBADMSG, "%s%s: bytes %llu+%zu lie past its end", s->path,
				  name, (unsigned long long)off, n);
	if (!rc && got != n)
		rc = sv_err_set(err, -EIO, "%s%s: %zu of %zu bytes at %llu arrived", s->path, name,
				got, n, (unsigned long long)off);
	return rc;
}

static int prefix_member_read_all(struct sv_source *s, const char *name, uint64_t max,
				  struct sv_buf *out, struct sv_err *err)
{
	struct prefix *h = (struct prefix *)s;
	struct sv_remote_version v;
	int rc = member_ok(h, name, err);
	return rc ? rc : h->t->ops->get_whole(h->t, name, max, out, &v, err);
}

struct names {
	int (*fn)(void *arg, const char *name);
	void *arg;
};

static int object_name(void *arg, const struct sv_remote_entry *e)
{
	struct names *n = arg;
	return e->dir ? 0 : n->fn(n->arg, e->name);
}

/* Every object directly under the prefix. */
static int prefix_member_list(struct sv_source *s, int (*fn)(void *arg, const char *name),
			      void *arg, struct sv_err *err)
{
	struct names n = {fn, arg};
	return list_all((struct prefix *)s, "", object_name, &n, err);
}

/* A member put whole, on the condition that the store has the member as
 * `expect` was read (a stat proves it is still that one, the put's
 * condition holds it so), or none for a new one. */
static int prefix_member_replace(struct sv_source *s, const char *name, const char *tmp_prefix,
				 const void *p, size_t n, const struct stat *expect,
				 struct sv_err *err)
{
	struct prefix *h = (struct prefix *)s;
	(void)tmp_prefix;
	struct sv_remote_version v = {0}, put;
	int rc = member_ok(h, name, err);
	if (rc)
		return rc;
	if (expect) {
		struct stat now;
		rc = member_version(h, name, &now, &v, err);
		if (rc == -ENOENT || (!rc && (now.st_ino != expect->st_ino ||
					      now.st_size != expect->st_size)))
			return sv_err_set(err, -EBUSY, "%s%s was replaced by another writer since "
					  "it was read: the edit is not applied", s->path, name);
		if (rc)
			return rc;
	}
	rc = h->t->ops->put(h->t, name, -1, p, n, expect ? v.etag : NULL, NULL, NULL, &put, err);
	if (rc == -ESTALE)
		rc = sv_err_set(err, -EBUSY, "%s%s was replaced by another writer since it was "
				"read (412 to %s%s): the edit is not applied", s->path, name,
				expect ? "If-Match " : "If-None-Match: *", expect ? v.etag : "");
	return rc;
}

/* The prefix's members now (a listing, held for their versions): the
 * digest of every name and version. */
static int prefix_digest(struct sv_source *s, uint64_t *out, struct sv_err *err)
{
	struct prefix *h = (struct prefix *)s;
	int rc = list_dir(h, "", err);
	if (rc)
		return rc;
	XXH3_state_t *x = XXH3_createState();
	if (!x)
		return sv_err_set(err, -ENOMEM, "out of memory");
	XXH3_64bits_reset(x);
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < LISTINGS; i++) {
		struct listing *l = &h->lists[i];
		if (!l->rel || l->rel[0])
			continue;
		for (size_t k = 0; k < l->n; k++) {
			XXH3_64bits_update(x, l->v[k].name, strlen(l->v[k].name) + 1);
			XXH3_64bits_update(x, &l->v[k].st.st_ino, sizeof l->v[k].st.st_ino);
		}
	}
	pthread_mutex_unlock(&h->lock);
	*out = XXH3_64bits_digest(x);
	XXH3_freeState(x);
	return 0;
}

/* ---- the place of a save folder ---------------------------------------------------------- */

/* Whether rel is a path savefs shows ("" or names joined by '/'). */
static bool rel_ok(const char *rel)
{
	for (const char *p = rel; *p;) {
		size_t k = strcspn(p, "/");
		char part[256];
		if (!k || k >= sizeof part)
			return false;
		memcpy(part, p, k);
		part[k] = '\0';
		if (!sv_name_ok(part))
			return false;
		p += k + (p[k] == '/');
	}
	return true;
}

static int prefix_place_stat(struct sv_source *s, const char *rel, struct stat *st,
			     struct sv_err *err)
{
	struct prefix *h = (struct prefix *)s;
	if (!*rel) {
		*st = s->st;
		return 0;
	}
	if (!rel_ok(rel))
		return sv_err_set(err, -ENOENT, "%s%s: not a name savefs shows", s->path, rel);
	const char *slash = strrchr(rel, '/');
	char dir[4096];
	size_t dn = slash ? (size_t)(slash - rel) : 0;
	if (dn >= sizeof dir)
		return sv_err_set(err, -ENAMETOOLONG, "%s%s: too long", s->path, rel);
	memcpy(dir, rel, dn);
	dir[dn] = '\0';
	const char *name = slash ? slash + 1 : rel;
	int rc = held_entry(h, dir, name, st);
	if (rc == 1) {
		rc = list_dir(h, dir, err);
		if (!rc)
			rc = held_entry(h, dir, name, st);
		if (rc == 1)
			rc = sv_err_set(err, -EIO, "%s%s: its listing was not held", s->path, dir);
	}
	if (rc == -ENOENT)
		sv_err_set(err, -ENOENT, "%s%s: no such object", s->path, rel);
	return rc;
}

static int prefix_place_list(struct sv_source *s, const char *rel,
			     int (*fn)(void *arg, const char *name), void *arg,
			     struct sv_err *err)
{
	struct prefix *h = (struct prefix *)s;
	if (!rel_ok(rel))
		return sv_err_set(err, -ENOENT, "%s%s: not a name savefs shows", s->path, rel);
	int rc = 0;
	struct stat unused;
	if (held_entry(h, rel, "", &unused) == 1)
		rc = list_dir(h, rel, err);
	if (rc)
		return rc;
	/* The names as listed (another listing may replace them meanwhile). */
	char **names = NULL;
	size_t n = 0;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < LISTINGS; i++) {
		struct listing *l = &h->lists[i];
		if (!l->rel || strcmp(l->rel, rel))
			continue;
		names = calloc(l->n ? l->n : 1, sizeof *names);
		for (size_t k = 0; names && k < l->n; k++)
			if ((names[n] = strdup(l->v[k].name)))
				n++;
		if (names && n < l->n)
			rc = -ENOMEM;
		break;
	}
	pthread_mutex_unlock(&h->lock);
	if (!names)
		rc = -ENOMEM;
	for (size_t k = 0; !rc && k < n; k++)
		rc = fn(arg, names[k]);
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	free(names);
	return rc == -ENOMEM ? sv_err_set(err, rc, "out of memory") : rc;
}

static int prefix_place_read(struct sv_source *s, const char *rel, uint64_t off, void *buf,
			     size_t n, size_t *got, struct sv_err *err)
{
	struct prefix *h = (struct prefix *)s;
	*got = 0;
	struct stat st;
	int rc = prefix_place_stat(s, rel, &st, err);
	if (rc)
		return rc;
	if (S_ISDIR(st.st_mode))
		return sv_err_set(err, -EISDIR, "%s%s: a prefix", s->path, rel);
	if (off >= (uint64_t)st.st_size || !n)
		return 0;
	if (n > (uint64_t)st.st_size - off)
		n = (size_t)((uint64_t)st.st_size - off);
	struct sv_remote_version v;
	size_t k = 0;
	rc = h->t->ops->get(h->t, rel, off, n, NULL, buf, &k, &v, err);
	if (rc == -ESTALE || rc == -ERANGE || rc == -EBADMSG)
		rc = err->code = -EIO;
	if (!rc && k != n)
		rc = sv_err_set(err, -EIO, "%s%s: %zu of %zu bytes at %llu arrived", s->path, rel,
				k, n, (unsigned long long)off);
	if (!rc && v.etag[0]) {
		/* The object listed, not another one put since. */
		struct stat now;
		char *where = place_location(s, rel, false);
		if (where)
			sv_remote_identity(&now, where, v.size, v.etag, sv_remote_time(v.modified));
		if (where && now.st_ino != st.st_ino)
			rc = sv_err_set(err, -EIO, "%s%s changed on the server since it was listed",
					s->path, rel);
		free(where);
	}
	if (!rc)
		*got = n;
	return rc;
}

/* ---- opening -------------------------------------------------------------------------------- */

static int prefix_look(struct sv_source *s, struct stat *now)
{
	dir_identity(s->path, now);
	return 0;
}

static void prefix_close(struct sv_source *s)
{
	struct prefix *h = (struct prefix *)s;
	pthread_mutex_lock(&open_lock);
	for (struct prefix **pp = &open_prefixes; *pp; pp = &(*pp)->next_open)
		if (*pp == h) {
			*pp = h->next_open;
			break;
		}
	pthread_mutex_unlock(&open_lock);
	for (size_t i = 0; i < LISTINGS; i++)
		listing_free(&h->lists[i]);
	if (h->t)
		h->t->ops->close(h->t);
	h->t = NULL;
	pthread_mutex_destroy(&h->lock);
}

static const struct sv_source_ops prefix_ops = {
	.remote = true,
	.look = prefix_look,
	.member_stat = prefix_member_stat,
	.member_pread = prefix_member_pread,
	.member_read_all = prefix_member_read_all,
	.member_list = prefix_member_list,
	.member_replace = prefix_member_replace,
	.place_stat = prefix_place_stat,
	.place_list = prefix_place_list,
	.place_read = prefix_place_read,
	.place_location = place_location,
	.digest = prefix_digest,
	.follow_ms = 2000,
	.close = prefix_close,
};

static int first_entry(void *arg, const struct sv_remote_entry *e)
{
	(void)e;
	*(bool *)arg = true;
	return 0;
}

int sv_remote_open_prefix(struct sv_transport *t, const char *path, bool read_only,
			  struct sv_source **out, struct sv_err *err)
{
	*out = NULL;
	struct prefix *h = calloc(1, sizeof *h);
	size_t ln = strlen(path);
	char *p = malloc(ln + 2);
	if (!h || !p) {
		free(h);
		free(p);
		t->ops->close(t);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	/* Its location ends in '/'. */
	snprintf(p, ln + 2, "%s%s", path, ln && path[ln - 1] == '/' ? "" : "/");
	h->ops = prefix_ops;
	h->ops.kind = t->ops->prefix_kind;
	sv_remote_bind(&h->s, &h->ops, t, p, read_only);
	h->t = t;
	pthread_mutex_init(&h->lock, NULL);
	pthread_once(&dirs_once, dirs_time_set);
	dir_identity(p, &h->s.st);
	/* One entry of the listing: the store is there, the credentials are
	 * good, and something is under the prefix. */
	bool any = false, more;
	char next[1100];
	int rc = t->ops->list(t, "", NULL, 1, first_entry, &any, &more, next, sizeof next, err);
	if (!rc && !any && !more)
		rc = sv_err_set(err, -ENOENT, "%s: no object under this prefix", path);
	if (rc) {
		sv_source_free(&h->s);
		return rc;
	}
	pthread_mutex_lock(&open_lock);
	h->next_open = open_prefixes;
	open_prefixes = h;
	pthread_mutex_unlock(&open_lock);
	*out = &h->s;
	return 0;
}
