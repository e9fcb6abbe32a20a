/*
 * source/http.c - a container on an HTTP(S) server, read by range
 * (libcurl).
 *
 * The open reads the object's first block (HTTP_BLOCK bytes, where a
 * container keeps its header, and a recording its metadata and index)
 * with a ranged GET, which also tells the object's size (Content-Range),
 * its ETag and Last-Modified: its identity, filled into `st` as a file's
 * would be (the ETag's hash as the inode, Last-Modified as the times), so
 * the core's checks work unchanged.  That block is kept for the source's
 * life.  Later reads fetch whole blocks into the container's cache (a
 * handle the container gives the source: one cap covers decoded data and
 * fetched blocks); a run of missing blocks is one request, and a reader
 * that goes on where the last fetch ended has its window doubled, up to
 * HTTP_WINDOW_MAX, so that `cat` of a big object costs a few requests.
 *
 * Every ranged GET carries If-Match with the ETag seen at the open: a
 * server that has a new object answers 412, and the read fails with EIO
 * and a reason instead of mixing bytes of two versions.  Requests reuse
 * their connections (a few easy handles kept idle) and run from any
 * thread; none waits forever (a connect timeout, and a transfer that
 * stalls is given up).
 *
 * An object on a plain HTTP server is read-only: the source has no
 * rewrite, lock or claim, and the container says so at the mount.
 */
#include "internal.h"

/* The calls are made through pointers (below), with no type checks. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <xxhash.h>

#define HTTP_BLOCK (256u << 10)
#define HTTP_WINDOW_MAX (8u << 20)
#define HTTP_WHOLE_MAX (32u << 20)  /* an object fetched whole at its first miss */
#define HTTP_IN_FLIGHT 4             /* requests at once for it */
#define HTTP_IDLE 8                  /* easy handles kept with their connections */
#define HTTP_CONNECT_MS 10000L
#define HTTP_STALL_S 30L             /* a transfer slower than 1 byte/s this long fails */
#define HTTP_DISK_CAP (1ull << 30)   /* the disk cache of blocks, every object's */
#define HTTP_TRIM_EVERY 64           /* blocks stored between two trims of it */
#define HTTP_LISTINGS 64             /* a prefix's directory listings held */
#define HTTP_LIST_HOLD_NS 10000000000LL /* and trusted this long after they are read */

struct http {
	struct sv_source s;           /* first: freed as one */
	char *url;
	char etag[256];               /* as the server sent it ("" if none) */
	char modified[256];           /* Last-Modified ("" if none) */
	uint64_t size;
	struct sv_blob *head;         /* the first block, or the whole object */
	pthread_mutex_t lock;         /* idle, next, window */
	CURL *idle[HTTP_IDLE];
	size_t nidle;
	uint64_t next;                /* the block after the last fetch */
	uint32_t window;              /* blocks the next sequential fetch takes */
	uint32_t stored;              /* blocks put on disk since the last trim */
	bool changed;                 /* a 412: the object is not the one opened */
	bool all;                     /* head is the whole object (a server that
				       * ignores ranges): every read is from it */
	bool whole_tried;             /* a small object's whole fetch was made */
	bool s3;                      /* an object in an S3 store: */
	struct sv_s3_place place;     /* where, and the credentials */
	struct listing *lists;        /* a prefix's listings held (HTTP_LISTINGS), by
				       * h->lock */
};

/* A directory of a prefix as listed (a prefix as a folder, below). */
struct item {
	char *name;
	struct stat st;
};

struct listing {
	char *rel;           /* the directory ("" the prefix), NULL if unused */
	int64_t at;          /* when it was read (monotonic ns) */
	struct item *v;      /* sorted by name */
	size_t n, cap;
};

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	free(l->rel);
	memset(l, 0, sizeof *l);
}

/*
 * libcurl is loaded at the first URL, not linked: it brings some thirty
 * libraries (TLS, Kerberos, LDAP...) whose loading would cost every mount
 * of a local file 5 MB and milliseconds.
 */
static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *e);
	void (*easy_reset)(CURL *e);
	CURLcode (*easy_setopt)(CURL *e, CURLoption o, ...);
	CURLcode (*easy_perform)(CURL *e);
	const char *(*easy_strerror)(CURLcode rc);
	time_t (*getdate)(const char *p, const time_t *unused);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} lib;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static char curl_why[256];  /* why libcurl is not there; "" if it is */

static void curl_init(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(curl_why, sizeof curl_why, "cannot load libcurl (%s): install libcurl4",
			 dlerror());
		return;
	}
	struct { void **fn; const char *name; } syms[] = {
		{(void **)&lib.global_init, "curl_global_init"},
		{(void **)&lib.easy_init, "curl_easy_init"},
		{(void **)&lib.easy_cleanup, "curl_easy_cleanup"},
		{(void **)&lib.easy_reset, "curl_easy_reset"},
		{(void **)&lib.easy_setopt, "curl_easy_setopt"},
		{(void **)&lib.easy_perform, "curl_easy_perform"},
		{(void **)&lib.easy_strerror, "curl_easy_strerror"},
		{(void **)&lib.getdate, "curl_getdate"},
		{(void **)&lib.slist_append, "curl_slist_append"},
		{(void **)&lib.slist_free_all, "curl_slist_free_all"},
	};
	for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
			snprintf(curl_why, sizeof curl_why, "libcurl lacks %s", syms[i].name);
			return;
		}
	CURLcode rc = lib.global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK)
		snprintf(curl_why, sizeof curl_why, "cannot start libcurl: %s",
			 lib.easy_strerror(rc));
}

bool sv_source_is_url(const char *path)
{
	return !strncasecmp(path, "http://", 7) || !strncasecmp(path, "https://", 8);
}

/* ---- one request ------------------------------------------------------------ */

/* What a response said, and where its body goes. */
struct reply {
	union {
		struct sv_http_head head; /* what the status line and headers said */
		struct {
			SV_HTTP_HEAD_FIELDS
		};
	};
	uint8_t *body;               /* room for cap bytes (NULL: the body is text) */
	size_t cap, got;
	bool overflow;
	struct sv_buf text;          /* an error page, or a body without room: its
				      * start (HTTP_TEXT_MAX) */
};

#define HTTP_TEXT_MAX (8u << 20)
/* An object on a server that answers a ranged read with the whole object
 * (200): read whole into memory, up to this size. */
#define HTTP_NORANGE_MAX (256u << 20)

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t k = size * n;
	if (!r->body || (r->status && r->status != 200 && r->status != 206)) {
		/* An error page, or an answer in XML: kept as text. */
		size_t room = HTTP_TEXT_MAX - r->text.len;
		if (sv_buf_add(&r->text, p, k < room ? k : room))
			return 0;
		return k;
	}
	if (k > r->cap - r->got) {
		r->overflow = true;
		return 0; /* more than asked for: the transfer stops */
	}
	memcpy(r->body + r->got, p, k);
	r->got += k;
	return k;
}
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t k = size * n;
	if (k >= 5 && !strncmp(p, "HTTP/", 5))
		r->text.len = 0; /* a new response (after a redirect, or a 100) */
	sv_http_header(&r->head, p, k);
	return k;
}

static CURL *take(struct http *h)
{
	pthread_mutex_lock(&h->lock);
	CURL *e = h->nidle ? h->idle[--h->nidle] : NULL;
	pthread_mutex_unlock(&h->lock);
	return e ? e : lib.easy_init();
}

static void return_handle(struct http *h, CURL *e)
{
	pthread_mutex_lock(&h->lock);
	if (h->nidle < HTTP_IDLE) {
		h->idle[h->nidle++] = e;
		e = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	if (e)
		lib.easy_cleanup(e);
}

/* What an HTTP status means to a reader: -errno. */
static int status_errno(long status)
{
	switch (status) {
	case 401:
	case 403:
		return -EACCES;
	case 404:
	case 410:
		return -ENOENT;
	case 416:
		return -EBADMSG;
	default:
		return -EIO;
	}
}

/* A request's body: bytes [off, off + left) of fd, or p[0..left). */
struct upload {
	int fd;
	const uint8_t *p;
	uint64_t off, left;
	int error;
};

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct upload *u = arg;
	size_t k = size * n < u->left ? size * n : (size_t)u->left;
	if (!k)
		return 0;
	if (u->p) {
		memcpy(buf, u->p + u->off, k);
	} else {
		ssize_t got = pread(u->fd, buf, k, (off_t)u->off);
		if (got <= 0) {
			u->error = got < 0 ? errno : EIO;
			return CURL_READFUNC_ABORT;
		}
		k = (size_t)got;
	}
	u->off += k;
	u->left -= k;
	return k;
}

/* One exchange with the server. */
struct call {
	const char *method;        /* "GET" (NULL), "HEAD", "PUT", "POST", "DELETE" */
	const char *url;           /* NULL: the object's */
	uint64_t off;              /* a GET's range, [off, off + n) (n 0: none) */
	size_t n;
	const char *header;        /* one more header line, or NULL */
	struct upload *up;         /* a PUT's or POST's body, or NULL */
};

/*
 * Makes the call: its answer into *r (a body into body[0..cap), or as
 * text without one).  0 and *r filled (a status other than 2xx is the
 * caller's to judge), or -EIO with the reason when the server could not
 * be asked.  An object in an S3 store: the request is signed (SigV4, the
 * payload unsigned) with the credentials it has, if any.
 */
static int exchange(struct http *h, const struct call *k, uint8_t *body, size_t cap,
		    struct reply *r, struct sv_err *err)
{
	memset(r, 0, sizeof *r);
	sv_http_head_begin(&r->head);
	sv_buf_init(&r->text);
	r->body = body;
	r->cap = cap;
	CURL *e = take(h);
	if (!e)
		return sv_err_set(err, -ENOMEM, "out of memory");
	const char *method = k->method ? k->method : "GET";
	char range[64], *token = NULL, why[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	if (k->header)
		hdrs = lib.slist_append(hdrs, k->header);
	lib.easy_reset(e);
	if (h->s3) {
		hdrs = lib.slist_append(hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		if (h->place.token) {
			/* Whole, however long (a session token runs to kilobytes). */
			if (asprintf(&token, "x-amz-security-token: %s", h->place.token) < 0) {
				lib.slist_free_all(hdrs);
				return_handle(h, e);
				return sv_err_set(err, -ENOMEM, "out of memory");
			}
			hdrs = lib.slist_append(hdrs, token);
			free(token);
		}
		if (h->place.user) {
			lib.easy_setopt(e, CURLOPT_AWS_SIGV4, h->place.sigv4);
			lib.easy_setopt(e, CURLOPT_USERNAME, h->place.user);
			lib.easy_setopt(e, CURLOPT_PASSWORD, h->place.secret);
		}
	}
	if (k->up) {
		/* (curl's "Expect: 100-continue" is kept: taking it off with
		 * an empty "Expect:" breaks its SigV4 signature.) */
		lib.easy_setopt(e, CURLOPT_READFUNCTION, on_read);
		lib.easy_setopt(e, CURLOPT_READDATA, k->up);
		if (!strcmp(method, "PUT")) {
			lib.easy_setopt(e, CURLOPT_UPLOAD, 1L);
			lib.easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)k->up->left);
		} else {
			lib.easy_setopt(e, CURLOPT_POST, 1L);
			lib.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)k->up->left);
		}
	} else if (!strcmp(method, "HEAD")) {
		lib.easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(method, "POST")) {
		lib.easy_setopt(e, CURLOPT_POST, 1L);
		lib.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
		lib.easy_setopt(e, CURLOPT_POSTFIELDS, "");
	} else if (strcmp(method, "GET")) {
		lib.easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	}
	lib.easy_setopt(e, CURLOPT_URL, k->url ? k->url : h->url);
	lib.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	lib.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, HTTP_CONNECT_MS);
	lib.easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	lib.easy_setopt(e, CURLOPT_LOW_SPEED_TIME, HTTP_STALL_S);
	lib.easy_setopt(e, CURLOPT_FOLLOWLOCATION, h->s3 ? 0L : 1L);
	lib.easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
	lib.easy_setopt(e, CURLOPT_ERRORBUFFER, why);
	lib.easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	lib.easy_setopt(e, CURLOPT_HEADERDATA, r);
	lib.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	lib.easy_setopt(e, CURLOPT_WRITEDATA, r);
	lib.easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	if (k->n) {
		snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)k->off,
			 (unsigned long long)(k->off + k->n - 1));
		lib.easy_setopt(e, CURLOPT_RANGE, range);
	}
	CURLcode rc = lib.easy_perform(e);
	lib.slist_free_all(hdrs);
	__atomic_add_fetch(&h->s.requests, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->s.fetched, r->got, __ATOMIC_RELAXED);
	if (rc == CURLE_WRITE_ERROR && r->overflow) {
		/* More than asked for (a server that ignored the range): the
		 * caller judges by the status. */
		lib.easy_cleanup(e); /* its connection is mid-body */
		if (r->status == 206)
			return sv_err_set(err, -EIO, "%s: the server sent more than the %zu bytes "
					  "asked for at %llu", h->s.path, cap,
					  (unsigned long long)k->off);
		return 0;
	}
	if (rc != CURLE_OK || r->status >= 500)
		__atomic_add_fetch(&h->s.failures, 1, __ATOMIC_RELEASE);
	if (rc != CURLE_OK) {
		lib.easy_cleanup(e);
		sv_buf_fini(&r->text);
		if (k->up && k->up->error)
			return sv_err_set(err, -k->up->error, "%s: reading the new object: %s",
					  h->s.path, strerror(k->up->error));
		return sv_err_set(err, -EIO, "%s: %s", h->s.path,
				  why[0] ? why : lib.easy_strerror(rc));
	}
	return_handle(h, e);
	if (r->bad[0]) {
		char shown[300];
		snprintf(shown, sizeof shown, "%s", r->bad);
		sv_buf_fini(&r->text);
		return sv_err_set(err, -EIO, "%s: the server's answer cannot be taken: %s",
				  h->s.path, shown);
	}
	return 0;
}

/*
 * A GET of [off, off + n) of the object (n 0: a HEAD), with If-Match when
 * if_match and the ETag is known (If-Unmodified-Since without one).
 */
static int request(struct http *h, uint64_t off, size_t n, bool if_match, uint8_t *body,
		   size_t cap, struct reply *r, struct sv_err *err)
{
	char match[300];
	struct call k = {n ? "GET" : "HEAD", NULL, off, n, NULL, NULL};
	if (if_match && h->etag[0]) {
		snprintf(match, sizeof match, "If-Match: %s", h->etag);
		k.header = match;
	} else if (if_match && h->modified[0]) {
		/* No ETag: the time it was last changed is the proof. */
		snprintf(match, sizeof match, "If-Unmodified-Since: %s", h->modified);
		k.header = match;
	}
	return exchange(h, &k, body, cap, r, err);
}

/* The reason for a status, for messages. */
static const char *status_text(long status)
{
	switch (status) {
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not found";
	case 410: return "gone";
	case 412: return "precondition failed";
	case 416: return "range not satisfiable";
	default: return status >= 500 ? "server error" : "unexpected answer";
	}
}

/* What a ranged answer said of its range, for messages: "Content-Range:
 * bytes 0-99/100, 100 bytes", or "no Content-Range, 1024 bytes". */
static const char *range_said(const struct reply *r, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s, %zu bytes", r->range[0] ? "Content-Range: " : "no Content-Range",
		 r->range, r->got);
	return buf;
}

/* "404 (not found)", or an S3 store's own words: "404 (NoSuchBucket: The
 * specified bucket does not exist)". */
static const char *answer(const struct http *h, const struct reply *r, char *buf, size_t cap)
{
	char said[512] = "";
	if (r->text.len)
		sv_s3_error_text((const char *)r->text.p, r->text.len, said, sizeof said);
	/* Refused to nobody in particular: say so, and where credentials were
	 * looked for. */
	bool anonymous = h->s3 && !h->place.user && (r->status == 401 || r->status == 403);
	snprintf(buf, cap, "%ld (%s)%s%s%s", r->status, said[0] ? said : status_text(r->status),
		 anonymous ? ": no credentials were found (AWS_ACCESS_KEY_ID and "
			     "AWS_SECRET_ACCESS_KEY, or profile " : "",
		 anonymous ? h->place.profile : "",
		 anonymous ? " of ~/.aws/credentials and ~/.aws/config): the request went "
			     "unsigned" : "");
	return buf;
}

/* ---- reads ---------------------------------------------------------------------- */

/* ---- the disk cache ------------------------------------------------------------ */

/* A block's record in the disk cache: the persistent index's store, keyed
 * by the object's identity (URL, ETag, size) and the block's number; each
 * record carries the hash of its bytes, checked when read back. */
static struct sv_index_key disk_key(const struct http *h, uint64_t b, char *what, size_t size)
{
	snprintf(what, size, "block %llu", (unsigned long long)b);
	struct sv_index_key k = {"http-block", 1, what, h->s.st};
	return k;
}

static struct sv_blob *disk_get(struct http *h, uint64_t b)
{
	if (!h->s.store)
		return NULL;
	char what[32];
	struct sv_index_key k = disk_key(h, b, what, sizeof what);
	struct sv_blob *blob = NULL;
	if (sv_index_load(h->s.store, &k, HTTP_BLOCK, &blob))
		return NULL;
	uint64_t want = b * HTTP_BLOCK + HTTP_BLOCK > h->size ? h->size - b * HTTP_BLOCK : HTTP_BLOCK;
	if (blob->len != want) {
		sv_blob_unref(blob);
		return NULL;
	}
	__atomic_add_fetch(&h->s.disk_hits, 1, __ATOMIC_RELAXED);
	return blob;
}

/* Every block of the object the disk cache holds, dropped (an open that
 * failed on them: they are fetched from the server again). */
static void http_forget(struct sv_source *s)
{
	struct http *h = (struct http *)s;
	if (!h->s.store)
		return;
	uint64_t blocks = (h->size + HTTP_BLOCK - 1) / HTTP_BLOCK;
	for (uint64_t b = 0; b < blocks; b++) {
		char what[32];
		struct sv_index_key k = disk_key(h, b, what, sizeof what);
		sv_index_drop(h->s.store, &k);
	}
}

static void disk_put(struct http *h, uint64_t b, const struct sv_blob *blob)
{
	if (!h->s.store)
		return;
	char what[32];
	struct sv_index_key k = disk_key(h, b, what, sizeof what);
	if (sv_index_store(h->s.store, &k, blob->data, blob->len, UINT64_MAX))
		return; /* a cache: a block not kept is fetched again */
	pthread_mutex_lock(&h->lock);
	bool trim = ++h->stored >= HTTP_TRIM_EVERY;
	if (trim)
		h->stored = 0;
	pthread_mutex_unlock(&h->lock);
	if (trim)
		sv_index_trim(h->s.store, HTTP_DISK_CAP);
}

/* The read of an object that changed on the server since the open. */
static int changed(const struct http *h, struct sv_err *err)
{
	return sv_err_set(err, -EIO, "%s changed on the server since it was opened "
			  "(412 to If-Match %s)", h->s.path, h->etag);
}

/*
 * Blocks [b, b + k) fetched with one request and handed to the cache
 * (and, for the caller, block `want`'s blob in *out).  0, or -errno with
 * the reason: a 412 (the object changed since the open) is -EIO with it.
 */
static int fetch(struct http *h, uint64_t b, uint32_t k, uint64_t want, struct sv_blob **out,
		 struct sv_err *err)
{
	if (__atomic_load_n(&h->changed, __ATOMIC_ACQUIRE))
		return changed(h, err);
	uint64_t off = b * HTTP_BLOCK;
	size_t n = off + (uint64_t)k * HTTP_BLOCK > h->size ? (size_t)(h->size - off)
							      : (size_t)k * HTTP_BLOCK;
	uint8_t *buf = malloc(n);
	if (!buf)
		return sv_err_set(err, -ENOMEM, "out of memory");
	struct reply r;
	int rc = request(h, off, n, true, buf, n, &r, err);
	sv_buf_fini(&r.text);
	if (!rc && r.status == 412) {
		__atomic_store_n(&h->changed, true, __ATOMIC_RELEASE);
		sv_source_log(&h->s, "%s changed on the server since it was opened (ETag %s): "
			      "not read; the mount reads it again", h->s.path, h->etag);
		rc = changed(h, err);
	} else if (!rc && r.status != 206 && !(r.status == 200 && off == 0 && n == h->size)) {
		char a[600];
		rc = sv_err_set(err, r.status == 200 ? -EIO : status_errno(r.status),
				"%s: %s to a read of %zu bytes at %llu", h->s.path,
				r.status == 200 ? "200 (the whole object instead of a range)"
						: answer(h, &r, a, sizeof a),
				n, (unsigned long long)off);
	} else if (!rc && r.status == 206 &&
		   (!r.ranged || r.first != off || r.last != off + n - 1 ||
		    (r.total != UINT64_MAX && r.total != h->size) ||
		    (r.length != UINT64_MAX && r.length != n))) {
		char said[160];
		rc = sv_err_set(err, -EIO, "%s: asked for bytes %llu-%llu of %llu, the server answered "
				"%s: the object changed, or the server ignored If-Match", h->s.path,
				(unsigned long long)off, (unsigned long long)(off + n - 1),
				(unsigned long long)h->size, range_said(&r, said, sizeof said));
	} else if (!rc && r.got != n) {
		rc = sv_err_set(err, -EIO, "%s: %zu of %zu bytes at %llu arrived", h->s.path, r.got, n,
				(unsigned long long)off);
	} else if (!rc && h->etag[0] && r.etag[0] && strcmp(r.etag, h->etag)) {
		rc = sv_err_set(err, -EIO, "%s: ETag %s answered for %s: the object changed",
				h->s.path, r.etag, h->etag);
	}
	for (uint32_t i = 0; !rc && i < k; i++) {
		size_t at = (size_t)i * HTTP_BLOCK;
		if (at >= n)
			break;
		size_t len = n - at < HTTP_BLOCK ? n - at : HTTP_BLOCK;
		struct sv_blob *blob = sv_blob_dup(buf + at, len);
		if (!blob) {
			rc = sv_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		if (h->s.cache)
			sv_cache_put(h->s.cache, b + i, blob);
		disk_put(h, b + i, blob);
		if (b + i == want)
			*out = sv_blob_ref(blob);
		sv_blob_unref(blob);
	}
	free(buf);
	return rc;
}

/* One run of blocks fetched by a thread of fetch_rest(). */
struct run {
	struct http *h;
	uint64_t b;
	uint32_t k;
	int rc;
	struct sv_err err;
	pthread_t thread;
	bool started;
};

static void *run_main(void *arg)
{
	struct run *r = arg;
	struct sv_blob *unused = NULL;
	r->rc = fetch(r->h, r->b, r->k, UINT64_MAX, &unused, &r->err);
	return NULL;
}

/* Runs of blocks fetched, HTTP_IN_FLIGHT requests at a time: 0, or the
 * first run's failure. */
static int fetch_runs(struct run *runs, size_t n, struct sv_err *err)
{
	int rc = 0;
	for (size_t at = 0; !rc && at < n; at += HTTP_IN_FLIGHT) {
		size_t m = n - at < HTTP_IN_FLIGHT ? n - at : HTTP_IN_FLIGHT;
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

/* Whether block b is held: the head, the cache, or the disk cache (then
 * put in the cache). */
static bool held_block(struct http *h, uint64_t b)
{
	if (b == 0 && h->head)
		return true;
	struct sv_blob *have = sv_cache_get(h->s.cache, b);
	if (!have && (have = disk_get(h, b)))
		sv_cache_put(h->s.cache, b, have);
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
 * of adjacent ones (HTTP_WINDOW_MAX at most) one request each, several at
 * once; `budget` blocks at most (the rest is read as it comes).
 * Ranges read apart (the chunks an index names) cost a round trip, not
 * one each, and a read across blocks one request.  0, or a failure.
 */
static int fetch_spans(struct http *h, const struct sv_range *r, size_t n, uint64_t budget,
		       struct sv_err *err)
{
	if (!h->s.cache)
		return 0;
	uint64_t blocks = (h->size + HTTP_BLOCK - 1) / HTTP_BLOCK;
	uint64_t *v = NULL;
	size_t nv = 0, cap = 0;
	int rc = 0;
	for (size_t i = 0; !rc && i < n && nv < budget; i++) {
		if (!r[i].len || r[i].off >= h->size)
			continue;
		uint64_t end = r[i].off + r[i].len > h->size ? h->size : r[i].off + r[i].len;
		for (uint64_t b = r[i].off / HTTP_BLOCK; b <= (end - 1) / HTTP_BLOCK && b < blocks &&
						       nv < budget; b++) {
			if ((nv && v[nv - 1] == b) || held_block(h, b))
				continue; /* (ranges in one block: the block once) */
			if (nv == cap) {
				size_t c2 = cap ? cap * 2 : 16;
				uint64_t *w = realloc(v, c2 * sizeof *w);
				if (!w) {
					rc = sv_err_set(err, -ENOMEM, "out of memory");
					break;
				}
				v = w;
				cap = c2;
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
		if (last && last->b + last->k == v[i] && last->k < HTTP_WINDOW_MAX / HTTP_BLOCK) {
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

/* Whether the object is fetched whole at its first miss (small, and not
 * tried yet). */
static bool whole_next(struct http *h)
{
	if (!h->s.cache)
		return false;
	pthread_mutex_lock(&h->lock);
	bool tried = h->whole_tried;
	pthread_mutex_unlock(&h->lock);
	struct sv_cache_stats cs = {0};
	if (!tried)
		sv_cache_stats(h->s.cache, &cs);
	return !tried && h->size <= HTTP_WHOLE_MAX && h->size <= cs.cap / 2;
}

/* What a read ahead may fetch: a quarter of the cache, in blocks. */
static uint64_t span_budget(struct http *h)
{
	struct sv_cache_stats cs = {0};
	sv_cache_stats(h->s.cache, &cs);
	return cs.cap / 4 / HTTP_BLOCK;
}

/* A format's ranges to come (sv_container_hint): fetched together now,
 * unless the whole object comes at its first miss anyway. */
static void http_hint(struct sv_source *s, const struct sv_range *r, size_t n)
{
	if (((struct http *)s)->all)
		return; /* held whole */
	struct http *h = (struct http *)s;
	struct sv_err err;
	if (s->fd < 0 && !whole_next(h) && fetch_spans(h, r, n, span_budget(h), &err))
		sv_source_log(s, "a read ahead failed: %s", err.msg);
}

/*
 * A small object (HTTP_WHOLE_MAX, and half the cache at most) is fetched
 * whole at its first miss: every block not yet held, in runs of up to
 * HTTP_WINDOW_MAX, HTTP_IN_FLIGHT requests at a time.  A reader going
 * through an index at random (a recording's ticks) then costs a few
 * requests in all, not one per block.  0, or the first run's failure.
 */
static int fetch_rest(struct http *h, struct sv_err *err)
{
	struct sv_range all = {0, h->size};
	return fetch_spans(h, &all, 1, UINT64_MAX, err);
}

/* Block b's bytes: the head, the cache, or a fetch (of a run of blocks
 * when the reader goes on where the last fetch ended; of the whole object
 * when it is small). */
static int block(struct http *h, uint64_t b, struct sv_blob **out, struct sv_err *err)
{
	*out = NULL;
	if (b == 0 && h->head) {
		*out = sv_blob_ref(h->head);
		return 0;
	}
	if (h->s.cache && (*out = sv_cache_get(h->s.cache, b)))
		return 0;
	if ((*out = disk_get(h, b))) {
		if (h->s.cache)
			sv_cache_put(h->s.cache, b, *out);
		return 0;
	}
	uint64_t blocks = (h->size + HTTP_BLOCK - 1) / HTTP_BLOCK;
	pthread_mutex_lock(&h->lock);
	struct sv_cache_stats cs = {0};
	if (h->s.cache && !h->whole_tried)
		sv_cache_stats(h->s.cache, &cs);
	bool whole = h->s.cache && !h->whole_tried && h->size <= HTTP_WHOLE_MAX &&
		     h->size <= cs.cap / 2;
	h->whole_tried = true;
	pthread_mutex_unlock(&h->lock);
	if (whole) {
		int rc = fetch_rest(h, err);
		if (!rc && (*out = sv_cache_get(h->s.cache, b)))
			return 0;
		if (rc)
			return rc;
		/* Evicted meanwhile: fetched again below. */
	}
	pthread_mutex_lock(&h->lock);
	uint32_t k = 1;
	if (h->s.cache && b == h->next) {
		k = h->window;
		h->window = h->window * 2 <= HTTP_WINDOW_MAX / HTTP_BLOCK ? h->window * 2
									 : HTTP_WINDOW_MAX / HTTP_BLOCK;
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

static int http_pread(struct sv_source *s, uint64_t off, void *buf, size_t n,
		      struct sv_err *err)
{
	struct http *h = (struct http *)s;
	if (s->fd >= 0)
		return sv_source_read_fd(s->fd, h->size, off, buf, n, s->path, err);
	if (off > h->size || n > h->size - off)
		return sv_err_set(err, -EBADMSG, "range %llu+%zu lies past the end of %s (%llu bytes)",
				  (unsigned long long)off, n, h->s.path, (unsigned long long)h->size);
	if (h->all) {
		memcpy(buf, h->head->data + off, n);
		return 0;
	}
	/* A read across blocks: those not held fetched at once. */
	if (n && off / HTTP_BLOCK != (off + n - 1) / HTTP_BLOCK && !whole_next(h)) {
		struct sv_range span = {off, n};
		int rc = fetch_spans(h, &span, 1, span_budget(h), err);
		if (rc)
			return rc;
	}
	uint8_t *p = buf;
	while (n) {
		uint64_t b = off / HTTP_BLOCK;
		size_t at = (size_t)(off % HTTP_BLOCK);
		struct sv_blob *blob;
		int rc = block(h, b, &blob, err);
		if (rc)
			return rc;
		if (at >= blob->len) {
			sv_blob_unref(blob);
			return sv_err_set(err, -EIO, "%s: block %llu is short", h->s.path,
					  (unsigned long long)b);
		}
		size_t k = blob->len - at < n ? blob->len - at : n;
		memcpy(p, blob->data + at, k);
		sv_blob_unref(blob);
		p += k;
		off += k;
		n -= k;
	}
	return 0;
}

/* ---- identity --------------------------------------------------------------------- */

/* st from what the server said: a read-only regular file of `size` bytes
 * whose inode is the hash of its location (`where`, as named: a listing
 * of a prefix names its objects the same way) and ETag (else its time)
 * and size, and whose times are `t` (its Last-Modified).  (The persistent
 * index keys its records by it: two objects, or two versions of one,
 * never share.) */
static void identity(struct stat *st, const char *where, uint64_t size, const char *etag,
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
	st->st_ino = (ino_t)((XXH3_64bits(key, strlen(key)) ^ XXH3_64bits(where, strlen(where))) |
			     1);
	st->st_mtim.tv_sec = t < 0 ? 0 : t;
	st->st_ctim = st->st_atim = st->st_mtim;
}

/* An HTTP date (Last-Modified): seconds, or 0 if none. */
static time_t http_time(const char *date)
{
	time_t t = date[0] ? lib.getdate(date, NULL) : -1;
	return t < 0 ? 0 : t;
}

static int http_look(struct sv_source *s, struct stat *now)
{
	struct http *h = (struct http *)s;
	struct reply r;
	struct sv_err err;
	if (request(h, 0, 0, false, NULL, 0, &r, &err))
		return -EIO;
	sv_buf_fini(&r.text);
	if (r.status != 200)
		return status_errno(r.status);
	identity(now, s->path, r.length == UINT64_MAX ? 0 : r.length, r.etag, http_time(r.modified));
	return 0;
}

static void http_close(struct sv_source *s)
{
	struct http *h = (struct http *)s;
	for (size_t i = 0; i < h->nidle; i++)
		lib.easy_cleanup(h->idle[i]);
	h->nidle = 0;
	sv_blob_unref(h->head);
	h->head = NULL;
	for (size_t i = 0; h->lists && i < HTTP_LISTINGS; i++)
		listing_free(&h->lists[i]);
	free(h->lists);
	h->lists = NULL;
	pthread_mutex_destroy(&h->lock);
	free(h->url);
	h->url = NULL;
	sv_s3_place_fini(&h->place);
}

static bool http_stale(struct sv_source *s);
static int http_reopen(struct sv_source *s, struct sv_err *err);
static void http_hint(struct sv_source *s, const struct sv_range *r, size_t n);

const struct sv_source_ops sv_source_http_ops = {
	.forget = http_forget,
	.kind = "HTTP object",
	.remote = true,
	.read_only_why = "an object on an HTTP server is read by range, never written",
	.look = http_look,
	.stale = http_stale,
	.reopen = http_reopen,
	.hint = http_hint,
	.pread = http_pread,
	.close = http_close,
};

/* ---- writing an object in an S3 store --------------------------------------------- */

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
 * read's: from the cache or the disk, the rest in widening requests, each
 * with If-Match, so the file is the version opened.
 */
static int s3_localize(struct sv_source *s, struct sv_err *err)
{
	struct http *h = (struct http *)s;
	int fd = temp_file(err);
	if (fd < 0)
		return fd;
	size_t step = HTTP_WINDOW_MAX;
	uint8_t *buf = malloc(step);
	int rc = buf ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t off = 0; !rc && off < h->size; off += step) {
		size_t n = h->size - off < step ? (size_t)(h->size - off) : step;
		rc = http_pread(s, off, buf, n, err);
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
	/* Published: the notify thread's http_stale() reads it unlocked. */
	__atomic_store_n(&s->fd, fd, __ATOMIC_RELEASE);
	return 0;
}

/* The object's URL with a query (already encoded), into out. */
static int url_with(const struct http *h, const char *query, char *out, size_t cap,
		    struct sv_err *err)
{
	if ((size_t)snprintf(out, cap, "%s?%s", h->url, query) >= cap)
		return sv_err_set(err, -ENAMETOOLONG, "%s: the URL is too long", h->s.path);
	return 0;
}

/* The If-Match line of an upload: the ETag without its quotes (RADOS
 * Gateway refuses the quoted form; AWS takes both). */
static void upload_if_match(const char *etag, char *out, size_t cap)
{
	size_t n = strlen(etag);
	if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"')
		snprintf(out, cap, "If-Match: %.*s", (int)(n - 2), etag + 1);
	else
		snprintf(out, cap, "If-Match: %s", etag);
}

/* The refusal of an upload the store answered 412. */
static int refused(const struct http *h, struct sv_err *err)
{
	return sv_err_set(err, -EBUSY, "%s was changed by another writer since it was read "
			  "(412 to If-Match %s): not overwritten, the edit is dropped (remount to "
			  "see the object as it is now)", h->s.path, h->etag);
}

/* An answer other than 200 to a step of an upload: -errno with it. */
static int upload_failed(const struct http *h, const struct reply *r, const char *step,
			 struct sv_err *err)
{
	if (r->status == 412)
		return refused(h, err);
	char a[600];
	return sv_err_set(err, r->status == 403 ? -EACCES : -EIO, "%s: %s to %s: not "
			  "overwritten, the edit is dropped", h->s.path, answer(h, r, a, sizeof a),
			  step);
}

/* One PUT of the whole new object, If-Match on the ETag read. */
static int put_whole(struct http *h, int fd, uint64_t size, char *etag, size_t cap,
		     struct sv_err *err)
{
	char match[300];
	upload_if_match(h->etag, match, sizeof match);
	struct upload up = {fd, NULL, 0, size, 0};
	struct call k = {"PUT", NULL, 0, 0, match, &up};
	struct reply r;
	int rc = exchange(h, &k, NULL, 0, &r, err);
	if (!rc && r.status != 200)
		rc = upload_failed(h, &r, "the upload", err);
	if (!rc)
		snprintf(etag, cap, "%s", r.etag);
	sv_buf_fini(&r.text);
	return rc;
}

/* Abandons a multipart upload (its parts are freed on the store). */
static void abort_parts(struct http *h, const char *id)
{
	char url[4096], q[1200];
	struct sv_buf enc;
	sv_buf_init(&enc);
	struct sv_err e;
	if (sv_s3_encode(&enc, id, false) || sv_buf_add(&enc, "", 1) ||
	    (size_t)snprintf(q, sizeof q, "uploadId=%s", (const char *)enc.p) >= sizeof q ||
	    url_with(h, q, url, sizeof url, &e)) {
		sv_buf_fini(&enc);
		return;
	}
	sv_buf_fini(&enc);
	struct call k = {"DELETE", url, 0, 0, NULL, NULL};
	struct reply r;
	if (!exchange(h, &k, NULL, 0, &r, &e))
		sv_buf_fini(&r.text);
}

/*
 * The new object in parts of h->place.part bytes: begun, each part put,
 * the store's word that the object is still the one read (check, a HEAD),
 * then completed with If-Match on its ETag; abandoned on any failure.
 */
static int put_parts(struct http *h, int fd, uint64_t size,
		     int (*check)(void *arg, struct sv_err *err), void *arg, char *etag,
		     size_t cap, struct sv_err *err)
{
	char url[4096], q[1400], id[1024] = "";
	struct sv_buf enc, done;
	sv_buf_init(&enc);
	sv_buf_init(&done);
	struct reply r;
	int rc = url_with(h, "uploads=", url, sizeof url, err);
	if (!rc) {
		struct call k = {"POST", url, 0, 0, NULL, NULL};
		rc = exchange(h, &k, NULL, 0, &r, err);
		if (!rc && r.status != 200)
			rc = upload_failed(h, &r, "the start of a multipart upload", err);
		if (!rc)
			sv_s3_xml_text((const char *)r.text.p, r.text.len, "UploadId", id, sizeof id);
		if (!rc && !id[0])
			rc = sv_err_set(err, -EIO, "%s: no UploadId in the answer to the start of a "
					"multipart upload: not overwritten", h->s.path);
		sv_buf_fini(&r.text);
	}
	if (!rc && (sv_s3_encode(&enc, id, false) || sv_buf_add(&enc, "", 1)))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc && sv_buf_printf(&done, "<CompleteMultipartUpload>"))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	uint64_t parts = (size + h->place.part - 1) / h->place.part;
	for (uint64_t i = 0; !rc && i < parts; i++) {
		uint64_t off = i * h->place.part;
		uint64_t len = size - off < h->place.part ? size - off : h->place.part;
		snprintf(q, sizeof q, "partNumber=%llu&uploadId=%s", (unsigned long long)i + 1,
			 (const char *)enc.p);
		rc = url_with(h, q, url, sizeof url, err);
		if (rc)
			break;
		struct upload up = {fd, NULL, off, len, 0};
		struct call k = {"PUT", url, 0, 0, NULL, &up};
		rc = exchange(h, &k, NULL, 0, &r, err);
		if (!rc && r.status != 200)
			rc = upload_failed(h, &r, "a part of a multipart upload", err);
		if (!rc && !r.etag[0])
			rc = sv_err_set(err, -EIO, "%s: no ETag for part %llu of a multipart upload: "
					"not overwritten", h->s.path, (unsigned long long)i + 1);
		if (!rc && sv_buf_printf(&done, "<Part><PartNumber>%llu</PartNumber><ETag>%s</ETag>"
					 "</Part>", (unsigned long long)i + 1, r.etag))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		sv_buf_fini(&r.text);
	}
	if (!rc && sv_buf_printf(&done, "</CompleteMultipartUpload>"))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	/* The parts are up; the object is still the one read, or nothing is
	 * completed. */
	if (!rc)
		rc = check(arg, err);
	if (!rc) {
		char match[300];
		upload_if_match(h->etag, match, sizeof match);
		snprintf(q, sizeof q, "uploadId=%s", (const char *)enc.p);
		rc = url_with(h, q, url, sizeof url, err);
		struct upload up = {-1, done.p, 0, done.len, 0};
		struct call k = {"POST", url, 0, 0, match, &up};
		if (!rc)
			rc = exchange(h, &k, NULL, 0, &r, err);
		if (!rc) {
			/* A failure may come as a 200 whose body is an <Error>. */
			bool error = r.text.len && memmem(r.text.p, r.text.len, "<Error>", 7);
			if (r.status != 200 || error) {
				if (r.status == 200)
					r.status = 500;
				rc = upload_failed(h, &r, "the completion of a multipart upload", err);
			} else {
				char t[256];
				sv_s3_xml_text((const char *)r.text.p, r.text.len, "ETag", t, sizeof t);
				/* Its quotes come as &quot; in XML. */
				char *qq;
				while ((qq = strstr(t, "&quot;")))
					memmove(qq + 1, qq + 6, strlen(qq + 6) + 1), *qq = '"';
				snprintf(etag, cap, "%s", r.etag[0] ? r.etag : t);
			}
			sv_buf_fini(&r.text);
		}
	}
	if (rc && id[0])
		abort_parts(h, id);
	sv_buf_fini(&enc);
	sv_buf_fini(&done);
	return rc;
}

/*
 * SV_COMMIT_REWRITE on a store: the new container is written to a
 * temporary file, checked once more (a HEAD), and uploaded with If-Match
 * on the ETag read (one PUT, or parts above the part size), so another
 * writer's object is never overwritten.  The uploaded bytes stay on disk
 * (an unlinked file, the source's fd) and are what later reads read.
 */
static int s3_rewrite(struct sv_source *s, int (*write)(void *arg, int fd, struct sv_err *err),
		      int (*check)(void *arg, struct sv_err *err), void *arg,
		      struct sv_err *err)
{
	struct http *h = (struct http *)s;
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
	char etag[256] = "";
	uint64_t size = rc ? 0 : (uint64_t)st.st_size;
	if (!rc && size > h->place.part)
		rc = put_parts(h, fd, size, check, arg, etag, sizeof etag, err);
	else if (!rc)
		rc = put_whole(h, fd, size, etag, sizeof etag, err);
	if (rc) {
		if (rc == -EBUSY)
			sv_source_log(s, "%s", err->msg);
		close(fd);
		return rc;
	}
	/* The new identity: the store's own (its Last-Modified) when a look
	 * finds the ETag uploaded; else another writer came right after, and
	 * the next commit's check finds it.  A store that gave no ETag for
	 * the upload (RADOS Gateway 16 after parts): the one the look finds. */
	struct reply r;
	struct sv_err e;
	bool seen = !request(h, 0, 0, false, NULL, 0, &r, &e);
	if (seen)
		sv_buf_fini(&r.text);
	seen = seen && r.status == 200 && r.etag[0] && (!etag[0] || !strcmp(r.etag, etag));
	if (seen && !etag[0])
		snprintf(etag, sizeof etag, "%s", r.etag);
	if (!etag[0])
		sv_source_log(s, "%s: the store gave no ETag for the new object, nor a look "
			      "after it: the next commit is refused", s->path);
	snprintf(h->etag, sizeof h->etag, "%s", etag);
	snprintf(h->modified, sizeof h->modified, "%s", seen ? r.modified : "");
	h->size = size;
	identity(&s->st, s->path, size, etag, http_time(h->modified));
	if (!seen && r.date[0]) {
		time_t t = lib.getdate(r.date, NULL);
		s->st.st_mtim.tv_sec = t < 0 ? 0 : t;
	}
	s->st.st_mode = S_IFREG | 0644;
	if (s->fd >= 0)
		close(s->fd);
	__atomic_store_n(&s->fd, fd, __ATOMIC_RELEASE); /* read by http_stale() */
	__atomic_store_n(&h->changed, false, __ATOMIC_RELEASE);
	return 0;
}

const struct sv_source_ops sv_source_s3_ops = {
	.forget = http_forget,
	.kind = "S3 object",
	.remote = true,
	.whole_only = true,
	.look = http_look,
	.stale = http_stale,
	.reopen = http_reopen,
	.hint = http_hint,
	.pread = http_pread,
	.localize = s3_localize,
	.rewrite = s3_rewrite,
	.close = http_close,
};

/* ---- a prefix in an S3 store: a directory of member objects ---------------------------- */

/*
 * s3://BUCKET/PREFIX/ as a directory source (a recording being written:
 * a preamble and segments, each an object under the prefix).  A member is
 * asked for when it is wanted: a HEAD for its stat (its identity is its
 * ETag's, as an object's), a ranged GET for a read, checked against the
 * size asked; a member replaced is PUT with If-Match on the ETag of the
 * member as read (If-None-Match: * for a new one), so that another
 * writer's member is never overwritten.  The prefix itself has no bytes,
 * and its identity is its location's.
 */

static int member_url(const struct http *h, const char *name, char *out, size_t cap,
		      struct sv_err *err)
{
	if (!sv_name_ok(name) || strchr(name, '/'))
		return sv_err_set(err, -EINVAL, "\"%s\" cannot name a member", name);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = sv_buf_printf(&b, "%s", h->url) || sv_s3_encode(&b, name, false) ||
		 sv_buf_add(&b, "", 1);
	if (!rc && b.len > cap)
		rc = sv_err_set(err, -ENAMETOOLONG, "%s%s: the URL is too long", h->s.path, name);
	else if (rc)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc)
		memcpy(out, b.p, b.len);
	sv_buf_fini(&b);
	return rc;
}

/* A member's answer other than the one wanted: -errno and the reason. */
static int member_failed(const struct http *h, const char *name, const struct reply *r,
			 struct sv_err *err)
{
	char a[600];
	return sv_err_set(err, status_errno(r->status), "%s%s: %s", h->s.path, name,
			  answer(h, r, a, sizeof a));
}

/* A member's stat and ETag (a HEAD). */
static int member_head(struct sv_source *s, const char *name, struct stat *st, char *etag,
		       size_t cap, struct sv_err *err)
{
	struct http *h = (struct http *)s;
	char url[4096];
	int rc = member_url(h, name, url, sizeof url, err);
	if (rc)
		return rc;
	struct call k = {"HEAD", url, 0, 0, NULL, NULL};
	struct reply r;
	rc = exchange(h, &k, NULL, 0, &r, err);
	if (!rc && r.status != 200)
		rc = member_failed(h, name, &r, err);
	sv_buf_fini(&r.text);
	if (rc)
		return rc;
	char where[4096];
	snprintf(where, sizeof where, "%s%s", s->path, name);
	identity(st, where, r.length == UINT64_MAX ? 0 : r.length, r.etag, http_time(r.modified));
	st->st_mode = S_IFREG | 0644;
	if (etag)
		snprintf(etag, cap, "%s", r.etag);
	return 0;
}

static int prefix_member_stat(struct sv_source *s, const char *name, struct stat *st,
			      struct sv_err *err)
{
	struct sv_err local;
	return member_head(s, name, st, NULL, 0, err ? err : &local);
}

/* A GET of member bytes [off, off + n) (n 0: the whole member, at most
 * max bytes) into out. */
static int member_get(struct sv_source *s, const char *name, uint64_t off, size_t n,
		      uint64_t max, struct sv_buf *out, struct sv_err *err)
{
	struct http *h = (struct http *)s;
	char url[4096];
	int rc = member_url(h, name, url, sizeof url, err);
	if (rc)
		return rc;
	if (n && sv_buf_reserve(out, n))
		return sv_err_set(err, -ENOMEM, "out of memory");
	struct call k = {"GET", url, off, n, NULL, NULL};
	struct reply r;
	if (n) {
		rc = exchange(h, &k, out->p + out->len, n, &r, err);
	} else {
		/* The whole member, as text (its length is checked below). */
		rc = exchange(h, &k, NULL, 0, &r, err);
	}
	if (!rc && r.status != (n ? 206 : 200) && !(n && r.status == 200 && off == 0 &&
						    r.got == n && r.length == n))
		rc = r.status == 416 ? sv_err_set(err, -EBADMSG, "%s%s: bytes %llu+%zu lie past "
						  "its end", h->s.path, name,
						  (unsigned long long)off, n)
				     : member_failed(h, name, &r, err);
	if (!rc && n && (r.got != n || (r.status == 206 && (r.first != off ||
							     r.last != off + n - 1))))
		rc = sv_err_set(err, r.got < n ? -EBADMSG : -EIO, "%s%s: %zu of %zu bytes at %llu "
				"arrived", h->s.path, name, r.got, n, (unsigned long long)off);
	if (!rc && !n) {
		int w = sv_http_whole_body(&r.head, r.text.len, max);
		if (w == -EFBIG)
			rc = sv_err_set(err, -EFBIG, "%s%s: %llu bytes%s, more than the %llu allowed",
					h->s.path, name, (unsigned long long)(r.length != UINT64_MAX
									? r.length : r.text.len),
					r.length != UINT64_MAX ? "" : " or more (sent without a length)",
					(unsigned long long)max);
		else if (r.text.len >= HTTP_TEXT_MAX && HTTP_TEXT_MAX <= max)
			rc = sv_err_set(err, -EFBIG, "%s%s: more than %u bytes", h->s.path, name,
					HTTP_TEXT_MAX);
		else if (w)
			rc = sv_err_set(err, -EIO, "%s%s: %zu of %llu bytes arrived", h->s.path,
					name, r.text.len, (unsigned long long)r.length);
		else if (sv_buf_add(out, r.text.p, r.text.len))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		if (!rc)
			__atomic_add_fetch(&h->s.fetched, r.text.len, __ATOMIC_RELAXED);
	} else if (!rc) {
		out->len += n;
	}
	sv_buf_fini(&r.text);
	return rc;
}

static int by_item_name(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->name, ((const struct item *)b)->name);
}

/* A member's version as the prefix's last listing names it (its
 * identity's inode: location and ETag), or 0 if it was never listed: the
 * key its bytes are cached under, so that a member replaced (a recorder's
 * new preamble) is fetched anew once a listing has seen it. */
static uint64_t member_version(struct http *h, const char *name)
{
	uint64_t v = 0;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; h->lists && i < HTTP_LISTINGS; i++) {
		struct listing *l = &h->lists[i];
		if (!l->rel || l->rel[0])
			continue;
		struct item key = {(char *)name, {0}};
		struct item *it = l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, by_item_name) : NULL;
		if (it)
			v = (uint64_t)it->st.st_ino;
	}
	pthread_mutex_unlock(&h->lock);
	return v;
}

/*
 * A member's bytes: the whole member is fetched at its first read (a
 * segment is written once, and read chunk after chunk) and kept in the
 * container's cache under its name's hash; one larger than
 * HTTP_MEMBER_WHOLE is read by range, each read a request.
 */
#define HTTP_MEMBER_WHOLE (8u << 20)

static int prefix_member_pread(struct sv_source *s, const char *name, uint64_t off, void *buf,
			       size_t n, struct sv_err *err)
{
	if (!n)
		return 0;
	uint64_t key = (XXH3_64bits(name, strlen(name)) ^ member_version((struct http *)s, name)) |
		       (1ull << 63);
	struct sv_blob *whole = s->cache ? sv_cache_get(s->cache, key) : NULL;
	int rc = 0;
	if (!whole && s->cache) {
		struct sv_buf b;
		sv_buf_init(&b);
		struct sv_err e;
		sv_err_clear(&e);
		rc = member_get(s, name, 0, 0, HTTP_MEMBER_WHOLE, &b, &e);
		if (!rc && (whole = sv_blob_dup(b.p, b.len)))
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
	struct sv_buf b;
	sv_buf_init(&b);
	rc = member_get(s, name, off, n, 0, &b, err);
	if (!rc)
		memcpy(buf, b.p, n);
	sv_buf_fini(&b);
	return rc;
}

static int prefix_member_read_all(struct sv_source *s, const char *name, uint64_t max,
				  struct sv_buf *out, struct sv_err *err)
{
	return member_get(s, name, 0, 0, max, out, err);
}

/* The URL of a page of the prefix's listing (ListObjectsV2): after the
 * continuation token tok (an encoded one, or NULL), of `max` keys at most
 * (0: the store's page).  The query's keys in order: SigV4 signs them
 * sorted. */
static int list_url(const struct http *h, const char *key, const char *tok, unsigned max,
		    char *url, size_t cap, struct sv_err *err)
{
	struct sv_buf q;
	sv_buf_init(&q);
	char mk[32] = "";
	if (max)
		snprintf(mk, sizeof mk, "max-keys=%u&", max);
	int rc = (tok && sv_buf_printf(&q, "continuation-token=%s&", tok)) ||
			 sv_buf_printf(&q, "delimiter=%%2F&encoding-type=url&list-type=2&%sprefix=",
				       mk) ||
			 sv_s3_encode(&q, key, false) || sv_buf_add(&q, "", 1)
			 ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
	if (!rc && (size_t)snprintf(url, cap, "%s?%s", h->place.bucket_url,
				    (const char *)q.p) >= cap)
		rc = sv_err_set(err, -ENAMETOOLONG, "%s: the URL is too long", h->s.path);
	sv_buf_fini(&q);
	return rc;
}

/* A listing's bounds: what a folder of more is refused with (a store that
 * sent pages forever would take all memory, and the time). */
#define LIST_ENTRIES_MAX 1000000
#define LIST_BYTES_MAX (256u << 20)

struct bounded {
	int (*fn)(void *arg, const struct sv_s3_entry *e);
	void *arg;
	uint64_t entries, bytes;
};

static int count_entry(void *arg, const struct sv_s3_entry *e)
{
	struct bounded *b = arg;
	b->entries++;
	b->bytes += strlen(e->name) + strlen(e->etag) + 64;
	if (b->entries > LIST_ENTRIES_MAX || b->bytes > LIST_BYTES_MAX)
		return -EFBIG;
	return b->fn(b->arg, e);
}

/* Every object directly under key (a prefix ending in '/', or ""), and
 * every prefix under it: fn(arg, entry), a page of ListObjectsV2 at a
 * time.  A page cut short, a continuation token sent twice (a listing
 * that would never end) and a listing past LIST_ENTRIES_MAX entries or
 * LIST_BYTES_MAX bytes are refused with the reason. */
static int list_key(struct http *h, const char *key,
		    int (*fn)(void *arg, const struct sv_s3_entry *e), void *arg,
		    struct sv_err *err)
{
	struct sv_buf tok;
	sv_buf_init(&tok);
	struct bounded bd = {fn, arg, 0, 0};
	struct sv_u64set seen = {0};
	int rc = 0;
	bool more = true;
	for (unsigned page = 0; !rc && more; page++) {
		more = false;
		char url[8192];
		rc = list_url(h, key, tok.len ? (const char *)tok.p : NULL, 0, url, sizeof url, err);
		if (rc)
			break;
		struct call k = {"GET", url, 0, 0, NULL, NULL};
		struct reply r;
		rc = exchange(h, &k, NULL, 0, &r, err);
		if (!rc && r.status != 200) {
			char a[600];
			rc = sv_err_set(err, status_errno(r.status), "cannot list %s: %s", h->s.path,
					answer(h, &r, a, sizeof a));
		}
		if (!rc && r.text.len >= HTTP_TEXT_MAX)
			rc = sv_err_set(err, -EIO, "cannot list %s: a page of more than %u bytes",
					h->s.path, HTTP_TEXT_MAX);
		char next[1100] = "";
		const char *why = NULL;
		if (!rc)
			rc = sv_s3_list_page((const char *)r.text.p, r.text.len, key, count_entry, &bd,
					     &more, next, sizeof next, &why);
		if (rc == -EBADMSG && why)
			rc = sv_err_set(err, -EIO, "cannot list %s: %s", h->s.path, why);
		else if (rc == -EFBIG)
			rc = sv_err_set(err, -EFBIG, "cannot list %s: more than %u entries or %u MiB "
					"in one directory", h->s.path, LIST_ENTRIES_MAX,
					LIST_BYTES_MAX >> 20);
		more = more && !rc;
		if (more) {
			/* A token seen before: the store would list the same pages
			 * again and again. */
			uint64_t t = XXH3_64bits(next, strlen(next)) | 1;
			bool again = false;
			for (size_t i = 0; i < seen.n && !again; i++)
				again = seen.v[i] == t;
			sv_u64set_add(&seen, t);
			tok.len = 0;
			if (again)
				rc = sv_err_set(err, -EIO, "cannot list %s: the store sent the same "
						"continuation token twice (a listing that would not "
						"end)", h->s.path);
			else if (seen.all)
				rc = sv_err_set(err, -ENOMEM, "out of memory");
			else if (sv_s3_encode(&tok, next, false) || sv_buf_add(&tok, "", 1))
				rc = sv_err_set(err, -ENOMEM, "out of memory");
		}
		sv_buf_fini(&r.text);
	}
	sv_buf_fini(&tok);
	sv_u64set_fini(&seen);
	return rc;
}

struct names {
	int (*fn)(void *arg, const char *name);
	void *arg;
};

static int object_name(void *arg, const struct sv_s3_entry *e)
{
	struct names *n = arg;
	return e->dir ? 0 : n->fn(n->arg, e->name);
}

/* Every object directly under the prefix. */
static int prefix_member_list(struct sv_source *s, int (*fn)(void *arg, const char *name),
			      void *arg, struct sv_err *err)
{
	struct http *h = (struct http *)s;
	struct names n = {fn, arg};
	return list_key(h, h->place.key, object_name, &n, err);
}

/* A member put whole: If-Match on the ETag of the member as `expect`
 * was read (a HEAD proves it is still that one; the PUT's condition holds
 * it so), If-None-Match: * for a new one. */
static int prefix_member_replace(struct sv_source *s, const char *name, const char *tmp_prefix,
				 const void *p, size_t n, const struct stat *expect,
				 struct sv_err *err)
{
	struct http *h = (struct http *)s;
	(void)tmp_prefix;
	char url[4096], cond[300] = "If-None-Match: *", etag[256];
	int rc = member_url(h, name, url, sizeof url, err);
	if (rc)
		return rc;
	if (expect) {
		struct stat now;
		rc = member_head(s, name, &now, etag, sizeof etag, err);
		if (rc == -ENOENT || (!rc && (now.st_ino != expect->st_ino ||
					      now.st_size != expect->st_size)))
			return sv_err_set(err, -EBUSY, "%s%s was replaced by another writer since "
					  "it was read: the edit is not applied", s->path, name);
		if (rc)
			return rc;
		upload_if_match(etag, cond, sizeof cond);
	}
	struct upload up = {-1, p, 0, n, 0};
	struct call k = {"PUT", url, 0, 0, cond, &up};
	struct reply r;
	rc = exchange(h, &k, NULL, 0, &r, err);
	if (!rc && r.status == 412)
		rc = sv_err_set(err, -EBUSY, "%s%s was replaced by another writer since it was "
				"read (412 to %s): the edit is not applied", s->path, name, cond);
	else if (!rc && r.status != 200)
		rc = member_failed(h, name, &r, err);
	sv_buf_fini(&r.text);
	return rc;
}

/* ---- a prefix as a folder of containers --------------------------------------------- */

/*
 * A prefix is also a save folder's place: rel, a path under it, names an
 * object (a file) or a prefix under it (a directory).  A directory's
 * listing (ListObjectsV2 with a delimiter, every page) is held for
 * HTTP_LIST_HOLD_NS (10 s) and answers what is in it meanwhile, its
 * listings and lookups: a walk of a listed directory costs no request
 * more.  A store tells no one of its changes: an object put by another
 * client shows within those 10 s (and a container's own commits are its
 * source's, checked by ETag whatever the listing says).  An object's stat is its identity as the
 * listing tells it (location, ETag, size, LastModified), the one its own
 * source finds at its open; a prefix's is its location's.
 */

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
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
static pthread_mutex_t dirs_lock = PTHREAD_MUTEX_INITIALIZER;

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
	struct http *h;
	const char *rel;
	struct listing l;
	int rc;
};

static int gather_one(void *arg, const struct sv_s3_entry *e)
{
	struct gather *g = arg;
	struct listing *l = &g->l;
	if (!sv_real_name_ok(e->name))
		return 0; /* "." or "..": not a name a file can have */
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct item *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return g->rc = -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	struct item *it = &l->v[l->n];
	size_t n = strlen(g->rel) + strlen(e->name) + 2;
	char *rel = malloc(n);
	char *where = NULL;
	if (rel) {
		snprintf(rel, n, "%s%s%s", g->rel, *g->rel ? "/" : "", e->name);
		where = place_location(&g->h->s, rel, false);
	}
	it->name = strdup(e->name);
	if (!rel || !where || !it->name) {
		free(rel);
		free(where);
		free(it->name);
		return g->rc = -ENOMEM;
	}
	if (e->dir) {
		dir_identity(where, &it->st);
	} else {
		identity(&it->st, where, e->size, e->etag, (time_t)e->mtime);
		it->st.st_mode = S_IFREG | 0644;
	}
	free(rel);
	free(where);
	l->n++;
	return 0;
}

/* Directory rel listed afresh, and held (replacing the oldest held). */
static int list_dir(struct http *h, const char *rel, struct sv_err *err)
{
	size_t n = strlen(h->place.key) + strlen(rel) + 2;
	char *key = malloc(n);
	if (!key)
		return sv_err_set(err, -ENOMEM, "out of memory");
	snprintf(key, n, "%s%s%s", h->place.key, rel, *rel ? "/" : "");
	struct gather g = {h, rel, {0}, 0};
	int rc = list_key(h, key, gather_one, &g, err);
	free(key);
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
				g.l.v[w - 1] = g.l.v[i];
			} else {
				free(g.l.v[i].name);
			}
			continue;
		}
		g.l.v[w++] = g.l.v[i];
	}
	g.l.n = w;
	g.l.at = now_ns();
	pthread_mutex_lock(&h->lock);
	size_t slot = 0;
	for (size_t i = 0; i < HTTP_LISTINGS; i++) {
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

/* Entry name of held listing dir: 0 and *st, -ENOENT if it is not
 * there, 1 if the listing is not held (or held too long). */
static int held_entry(struct http *h, const char *dir, const char *name, struct stat *st)
{
	int64_t now = now_ns();
	int rc = 1;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < HTTP_LISTINGS && rc == 1; i++) {
		struct listing *l = &h->lists[i];
		if (!l->rel || strcmp(l->rel, dir) || now - l->at > HTTP_LIST_HOLD_NS)
			continue;
		struct item key = {(char *)name, {0}};
		struct item *it = l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, by_item_name) : NULL;
		rc = it ? 0 : -ENOENT;
		if (it)
			*st = it->st;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* The prefix's members now (a listing, held for their versions): the
 * digest of every name and version. */
static int prefix_digest(struct sv_source *s, uint64_t *out, struct sv_err *err)
{
	struct http *h = (struct http *)s;
	int rc = list_dir(h, "", err);
	if (rc)
		return rc;
	XXH3_state_t *x = XXH3_createState();
	if (!x)
		return sv_err_set(err, -ENOMEM, "out of memory");
	XXH3_64bits_reset(x);
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < HTTP_LISTINGS; i++) {
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

static int prefix_place_stat(struct sv_source *s, const char *rel, struct stat *st,
			     struct sv_err *err)
{
	struct http *h = (struct http *)s;
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
	struct http *h = (struct http *)s;
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
	for (size_t i = 0; i < HTTP_LISTINGS; i++) {
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
	struct http *h = (struct http *)s;
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
	struct sv_buf b;
	sv_buf_init(&b);
	int e = sv_buf_add(&b, h->url, strlen(h->url)) || sv_s3_encode(&b, rel, true) ||
		sv_buf_add(&b, "", 1);
	if (e) {
		sv_buf_fini(&b);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	struct call k = {"GET", (const char *)b.p, off, n, NULL, NULL};
	struct reply r;
	char a[600];
	rc = exchange(h, &k, buf, n, &r, err);
	sv_buf_fini(&b);
	if (!rc && r.status != 206 && !(r.status == 200 && off == 0 && r.got == n))
		rc = sv_err_set(err, r.status == 412 || r.status == 416 ? -EIO
								      : status_errno(r.status),
				"%s%s: %s", s->path, rel, answer(h, &r, a, sizeof a));
	if (!rc && r.got != n)
		rc = sv_err_set(err, -EIO, "%s%s: %zu of %zu bytes at %llu arrived", s->path, rel,
				r.got, n, (unsigned long long)off);
	if (!rc && r.etag[0]) {
		/* The object listed, not another one put since. */
		struct stat now;
		char *where = place_location(s, rel, false);
		if (where)
			identity(&now, where, r.status == 206 && r.total != UINT64_MAX ? r.total : r.got,
				 r.etag, http_time(r.modified));
		if (where && now.st_ino != st.st_ino)
			rc = sv_err_set(err, -EIO, "%s%s changed on the server since it was listed",
					s->path, rel);
		free(where);
	}
	sv_buf_fini(&r.text);
	if (!rc)
		*got = n;
	return rc;
}

/* The prefix's identity: its location's, never changing (its members are
 * the format's to check). */
static void prefix_identity(const struct http *h, struct stat *st)
{
	dir_identity(h->s.path, st);
}

static int prefix_look(struct sv_source *s, struct stat *now)
{
	prefix_identity((struct http *)s, now);
	return 0;
}

const struct sv_source_ops sv_source_s3_prefix_ops = {
	.kind = "S3 prefix",
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
	.close = http_close,
};

/* A prefix: a first page of its listing tells that it is there. */
static int open_prefix(const char *location, struct sv_s3_place *place, bool read_only,
		       struct sv_source **out, struct sv_err *err)
{
	pthread_once(&curl_once, curl_init);
	if (curl_why[0]) {
		sv_s3_place_fini(place);
		return sv_err_set(err, -EIO, "%s: %s", location, curl_why);
	}
	struct http *h = calloc(1, sizeof *h);
	struct listing *lists = calloc(HTTP_LISTINGS, sizeof *lists);
	size_t ln = strlen(location);
	char *p = malloc(ln + 2), *u = strdup(place->url); /* the prefix's, ending in '/' */
	if (p) /* its location, ending in '/' too */
		snprintf(p, ln + 2, "%s%s", location, ln && location[ln - 1] == '/' ? "" : "/");
	if (!h || !p || !u || !lists) {
		free(lists);
		free(h);
		free(p);
		free(u);
		sv_s3_place_fini(place);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	h->s.ops = &sv_source_s3_prefix_ops;
	h->s.path = p;
	h->s.fd = -1;
	h->s.read_only = read_only;
	h->url = u;
	h->s3 = true;
	h->place = *place;
	h->lists = lists;
	memset(place, 0, sizeof *place);
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_lock(&dirs_lock);
	if (!dirs_time)
		dirs_time = time(NULL);
	pthread_mutex_unlock(&dirs_lock);
	prefix_identity(h, &h->s.st);
	/* One key of the listing: the bucket is there, the credentials are
	 * good, and something is under the prefix. */
	char url[8192];
	int rc = list_url(h, h->place.key, NULL, 1, url, sizeof url, err);
	struct reply r;
	struct call k = {"GET", url, 0, 0, NULL, NULL};
	if (!rc)
		rc = exchange(h, &k, NULL, 0, &r, err);
	if (!rc) {
		char a[600];
		if (r.status != 200)
			rc = sv_err_set(err, status_errno(r.status), "%s: %s", location,
					answer(h, &r, a, sizeof a));
		else if (!memmem(r.text.p, r.text.len, "<Key>", 5) &&
			 !memmem(r.text.p, r.text.len, "<CommonPrefixes>", 16))
			rc = sv_err_set(err, -ENOENT, "%s: no object under this prefix", location);
		sv_buf_fini(&r.text);
	}
	if (rc) {
		sv_source_free(&h->s);
		return rc;
	}
	*out = &h->s;
	return 0;
}

/* ---- opening ------------------------------------------------------------------------- */

/* The object read whole by a GET without a range (its length as the
 * server said, UINT64_MAX if it did not): held as h's head, every read
 * served from it; its size and identity set.  Past HTTP_NORANGE_MAX it is
 * refused with the reason. */
static int whole_object(struct http *h, uint64_t length, struct sv_err *err)
{
	const char *path = h->s.path;
	if (length != UINT64_MAX && length > HTTP_NORANGE_MAX)
		return sv_err_set(err, -EFBIG, "%s: the server ignores ranged reads, and the object "
				  "is %llu bytes, more than the %u MiB read whole from such a server",
				  path, (unsigned long long)length, HTTP_NORANGE_MAX >> 20);
	size_t cap = length != UINT64_MAX ? (size_t)length : HTTP_NORANGE_MAX;
	struct sv_blob *all = sv_blob_new(cap ? cap : 1);
	if (!all)
		return sv_err_set(err, -ENOMEM, "out of memory");
	struct reply r;
	struct call k = {"GET", NULL, 0, 0, NULL, NULL};
	char a[600];
	int rc = exchange(h, &k, all->data, cap, &r, err);
	if (!rc && r.status != 200)
		rc = sv_err_set(err, status_errno(r.status), "%s: %s", path, answer(h, &r, a, sizeof a));
	else if (!rc && r.overflow)
		rc = sv_err_set(err, -EFBIG, "%s: the server ignores ranged reads, and the object "
				"is more than the %u MiB read whole from such a server", path,
				HTTP_NORANGE_MAX >> 20);
	else if (!rc && length != UINT64_MAX && r.got != length)
		rc = sv_err_set(err, -EIO, "%s: %zu of %llu bytes arrived", path, r.got,
				(unsigned long long)length);
	sv_buf_fini(&r.text);
	if (rc) {
		sv_blob_unref(all);
		return rc;
	}
	all->len = r.got;
	sv_blob_unref(h->head);
	h->head = all;
	h->all = true;
	h->size = r.got;
	snprintf(h->etag, sizeof h->etag, "%s", r.etag);
	snprintf(h->modified, sizeof h->modified, "%s", r.modified);
	identity(&h->s.st, path, h->size, r.etag, http_time(r.modified));
	return 0;
}

/*
 * The object's first block read (into buf, HTTP_BLOCK bytes), which
 * tells its size and identity: h's size, ETag, times, st and head set.
 * 0, or -errno with the reason.
 */
static int first_block(struct http *h, uint8_t *buf, struct sv_err *err)
{
	const char *path = h->s.path;
	struct reply r;
	char a[600];
	int rc = request(h, 0, HTTP_BLOCK, false, buf, HTTP_BLOCK, &r, err);
	if (!rc && r.status == 416 && r.total == 0) {
		/* An empty object. */
		r.ranged = true;
		r.got = 0;
	} else if (!rc && r.status == 200 && !r.overflow && (r.length == UINT64_MAX || r.got == r.length)) {
		/* No ranges here, but the whole object fitted in the first
		 * read: all there is to read. */
		r.total = r.got;
	} else if (!rc && r.status == 200 && !h->s3) {
		/* A server that ignores ranges (python3 -m http.server): the
		 * object is read whole, once, up to HTTP_NORANGE_MAX. */
		sv_buf_fini(&r.text);
		return whole_object(h, r.length, err);
	} else if (!rc && r.status == 200) {
		rc = sv_err_set(err, -EOPNOTSUPP, "%s: the store does not answer ranged reads "
				"(200 to a Range request, for an object larger than %u bytes)", path,
				HTTP_BLOCK);
	} else if (!rc && r.status != 206) {
		rc = sv_err_set(err, status_errno(r.status), "%s: %s", path, answer(h, &r, a, sizeof a));
	} else if (!rc && (!r.ranged || r.first != 0 || r.total == UINT64_MAX ||
			   r.got != r.last + 1 || (r.length != UINT64_MAX && r.length != r.got))) {
		char said[160];
		rc = sv_err_set(err, -EIO, "%s: asked for bytes 0-%u, the server answered %s%s", path,
				HTTP_BLOCK - 1, range_said(&r, said, sizeof said),
				r.ranged && r.total == UINT64_MAX ? " (no size: \"*\")" : "");
	}
	sv_buf_fini(&r.text);
	if (rc)
		return rc;
	struct sv_blob *head = sv_blob_dup(buf, r.got);
	if (!head)
		return sv_err_set(err, -ENOMEM, "out of memory");
	sv_blob_unref(h->head);
	h->head = head;
	h->size = r.status == 416 ? 0 : r.total;
	snprintf(h->etag, sizeof h->etag, "%s", r.etag);
	snprintf(h->modified, sizeof h->modified, "%s", r.modified);
	identity(&h->s.st, path, h->size, r.etag, http_time(r.modified));
	if (h->s3)
		h->s.st.st_mode = S_IFREG | 0644;
	return 0;
}

/* Whether the object changed on the server since it was read (a 412 to
 * a read): the container reads it again (reopen). */
static bool http_stale(struct sv_source *s)
{
	return __atomic_load_n(&s->fd, __ATOMIC_ACQUIRE) < 0 &&
	       __atomic_load_n(&((struct http *)s)->changed, __ATOMIC_ACQUIRE);
}

/* The object as it is now, read again from its first block: the blocks
 * held of the old one dropped (the disk cache keys them by ETag). */
static int http_reopen(struct sv_source *s, struct sv_err *err)
{
	struct http *h = (struct http *)s;
	uint8_t *buf = malloc(HTTP_BLOCK);
	if (!buf)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = first_block(h, buf, err);
	free(buf);
	if (rc)
		return rc;
	if (s->cache)
		sv_cache_drop(s->cache, 0, 0);
	pthread_mutex_lock(&h->lock);
	h->whole_tried = false;
	h->next = 0;
	h->window = 2;
	pthread_mutex_unlock(&h->lock);
	__atomic_store_n(&h->changed, false, __ATOMIC_RELEASE);
	return 0;
}

/*
 * The object at url (named `path` in messages): its first block read,
 * which tells its size and identity.  place: an S3 object's (taken), or
 * NULL for a plain HTTP server's.
 */
static int open_remote(const char *path, const char *url, struct sv_s3_place *place,
		       bool read_only, struct sv_source **out, struct sv_err *err)
{
	*out = NULL;
	pthread_once(&curl_once, curl_init);
	/* Where it is, as messages, logs and the mount's name say it: without
	 * a password or a presigned URL's signature (the URL asked keeps them). */
	char *p = sv_location_shown(path);
	if (curl_why[0]) {
		if (place)
			sv_s3_place_fini(place);
		int rc = sv_err_set(err, -EIO, "%s: %s", p ? p : "(a URL)", curl_why);
		free(p);
		return rc;
	}
	struct http *h = calloc(1, sizeof *h);
	char *u = strdup(url);
	uint8_t *buf = malloc(HTTP_BLOCK);
	if (!h || !p || !u || !buf) {
		free(h);
		free(p);
		free(u);
		free(buf);
		if (place)
			sv_s3_place_fini(place);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	h->s.ops = place ? &sv_source_s3_ops : &sv_source_http_ops;
	h->s.path = p;
	h->s.fd = -1;
	h->s.read_only = place ? read_only : true;
	h->url = u;
	h->window = 2;
	if (place) {
		h->s3 = true;
		h->place = *place;
		memset(place, 0, sizeof *place);
	}
	pthread_mutex_init(&h->lock, NULL);
	int rc = first_block(h, buf, err);
	free(buf);
	if (rc) {
		sv_source_free(&h->s);
		return rc;
	}
	*out = &h->s;
	return 0;
}

int sv_source_open_http(const char *url, bool read_only, struct sv_source **out, int *why,
			struct sv_err *err)
{
	*why = read_only ? 0 : EROFS;
	return open_remote(url, url, NULL, true, out, err);
}

int sv_source_open_s3(const char *location, const char *opts, bool read_only,
		      struct sv_source **out, int *why, struct sv_err *err)
{
	*out = NULL;
	*why = 0;
	struct sv_s3_place place;
	int rc = sv_s3_place(location, opts, &place, err);
	if (rc)
		return rc;
	if (!place.key[0] || place.key[strlen(place.key) - 1] == '/')
		return open_prefix(location, &place, read_only, out, err);
	return open_remote(location, place.url, &place, read_only, out, err);
}
