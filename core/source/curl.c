/*
 * source/curl.c - the HTTP plumbing the HTTP and S3 transports share
 * (curl.h): libcurl loaded at the first remote location, connections
 * kept idle for reuse, one exchange with a server (signed for a store),
 * the strict reading of a response's head, and an object's stat, range
 * and whole body, each answer checked against what was asked.
 *
 * No request waits forever: a connect timeout, and a transfer that
 * stalls is given up.
 */
#include "source/curl.h"

/* The calls are made through pointers (below), with no type checks. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CONNECT_MS 10000L
#define STALL_S 30L /* a transfer slower than 1 byte/s this long fails */

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

int sv_curl_load(const char *path, struct sv_err *err)
{
	pthread_once(&curl_once, curl_init);
	if (curl_why[0])
		return sv_err_set(err, -EIO, "%s: %s", path, curl_why);
	return 0;
}

void sv_curl_init(struct sv_curl *c, struct sv_transport *t)
{
	memset(c, 0, sizeof *c);
	c->t = t;
	c->follow = true;
	pthread_mutex_init(&c->lock, NULL);
}

void sv_curl_fini(struct sv_curl *c)
{
	for (size_t i = 0; i < c->nidle; i++)
		lib.easy_cleanup(c->idle[i]);
	c->nidle = 0;
	pthread_mutex_destroy(&c->lock);
}

/* ---- one exchange ------------------------------------------------------------ */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct sv_reply *r = arg;
	size_t k = size * n;
	if (!r->body || (r->status && r->status != 200 && r->status != 206)) {
		/* An error page, an answer in XML, or a whole body: kept as
		 * text, up to its cap. */
		bool whole = r->cap && !r->body && (r->status == 200 || r->status == 206);
		size_t limit = whole ? r->cap : SV_HTTP_TEXT_MAX;
		size_t room = limit > r->text.len ? limit - r->text.len : 0;
		if (sv_buf_add(&r->text, p, k < room ? k : room))
			return 0;
		if (whole && k > room) {
			r->overflow = true;
			return 0; /* past the cap: the transfer stops */
		}
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
	struct sv_reply *r = arg;
	size_t k = size * n;
	if (k >= 5 && !strncmp(p, "HTTP/", 5))
		r->text.len = 0; /* a new response (after a redirect, or a 100) */
	sv_http_header(&r->head, p, k);
	return k;
}

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct sv_upload *u = arg;
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

static CURL *handle_take(struct sv_curl *c)
{
	pthread_mutex_lock(&c->lock);
	CURL *e = c->nidle ? c->idle[--c->nidle] : NULL;
	pthread_mutex_unlock(&c->lock);
	return e ? e : lib.easy_init();
}

static void handle_return(struct sv_curl *c, CURL *e)
{
	pthread_mutex_lock(&c->lock);
	if (c->nidle < SV_CURL_IDLE) {
		c->idle[c->nidle++] = e;
		e = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (e)
		lib.easy_cleanup(e);
}

/* The signing of a store's request: its headers, and SigV4 by libcurl
 * (the payload unsigned) when there are credentials.  0 or -ENOMEM. */
static int sign(const struct sv_curl *c, CURL *e, struct curl_slist **hdrs)
{
	*hdrs = lib.slist_append(*hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	if (c->token) {
		/* Whole, however long (a session token runs to kilobytes). */
		char *line;
		if (asprintf(&line, "x-amz-security-token: %s", c->token) < 0)
			return -ENOMEM;
		*hdrs = lib.slist_append(*hdrs, line);
		free(line);
	}
	if (c->user) {
		lib.easy_setopt(e, CURLOPT_AWS_SIGV4, c->sigv4);
		lib.easy_setopt(e, CURLOPT_USERNAME, c->user);
		lib.easy_setopt(e, CURLOPT_PASSWORD, c->secret);
	}
	return 0;
}

int sv_curl_exchange(struct sv_curl *c, const struct sv_call *k, uint8_t *body, size_t cap,
		     struct sv_reply *r, struct sv_err *err)
{
	const char *path = c->t->path;
	struct sv_source *counts = c->t->counts;
	memset(r, 0, sizeof *r);
	sv_http_head_begin(&r->head);
	sv_buf_init(&r->text);
	r->body = body;
	r->cap = cap;
	CURL *e = handle_take(c);
	if (!e)
		return sv_err_set(err, -ENOMEM, "out of memory");
	const char *method = k->method ? k->method : "GET";
	char range[64], why[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	if (k->header)
		hdrs = lib.slist_append(hdrs, k->header);
	lib.easy_reset(e);
	if (c->sigv4 && sign(c, e, &hdrs)) {
		lib.slist_free_all(hdrs);
		handle_return(c, e);
		return sv_err_set(err, -ENOMEM, "out of memory");
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
	lib.easy_setopt(e, CURLOPT_URL, k->url);
	lib.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	lib.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_MS);
	lib.easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	lib.easy_setopt(e, CURLOPT_LOW_SPEED_TIME, STALL_S);
	lib.easy_setopt(e, CURLOPT_FOLLOWLOCATION, c->follow ? 1L : 0L);
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
	__atomic_add_fetch(&counts->requests, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&counts->fetched, r->got, __ATOMIC_RELAXED);
	if (rc == CURLE_WRITE_ERROR && r->overflow) {
		/* More than asked for (a server that ignored the range, a
		 * whole body past its cap): the caller judges by the status. */
		lib.easy_cleanup(e); /* its connection is mid-body */
		if (r->status == 206) {
			sv_buf_fini(&r->text);
			return sv_err_set(err, -EIO, "%s: the server sent more than the %zu bytes "
					  "asked for at %llu", path, cap,
					  (unsigned long long)k->off);
		}
		return 0;
	}
	if (rc != CURLE_OK || r->status >= 500)
		__atomic_add_fetch(&counts->failures, 1, __ATOMIC_RELEASE);
	if (rc != CURLE_OK) {
		lib.easy_cleanup(e);
		sv_buf_fini(&r->text);
		if (k->up && k->up->error)
			return sv_err_set(err, -k->up->error, "%s: reading the new object: %s",
					  path, strerror(k->up->error));
		return sv_err_set(err, -EIO, "%s: %s", path, why[0] ? why : lib.easy_strerror(rc));
	}
	handle_return(c, e);
	if (r->bad[0]) {
		char shown[300];
		snprintf(shown, sizeof shown, "%s", r->bad);
		sv_buf_fini(&r->text);
		return sv_err_set(err, -EIO, "%s: the server's answer cannot be taken: %s", path,
				  shown);
	}
	return 0;
}

int sv_http_status_errno(long status)
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

const char *sv_curl_answer(const struct sv_curl *c, const struct sv_reply *r, char *buf,
			   size_t cap)
{
	char said[512] = "";
	if (r->text.len && c->explain)
		c->explain((const char *)r->text.p, r->text.len, said, sizeof said);
	/* Refused to nobody in particular: say so, and why. */
	bool anonymous = c->unsigned_why && (r->status == 401 || r->status == 403);
	snprintf(buf, cap, "%ld (%s)%s%s", r->status, said[0] ? said : status_text(r->status),
		 anonymous ? ": " : "", anonymous ? c->unsigned_why : "");
	return buf;
}

/* What a ranged answer said of its range, for messages: "Content-Range:
 * bytes 0-99/100, 100 bytes", or "no Content-Range, 1024 bytes". */
static const char *range_said(const struct sv_reply *r, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s, %zu bytes", r->range[0] ? "Content-Range: " : "no Content-Range",
		 r->range, r->got);
	return buf;
}

/* ---- an object's stat, range and whole body --------------------------------------- */

static void version_of(const struct sv_reply *r, uint64_t size, struct sv_remote_version *v)
{
	v->size = size;
	snprintf(v->etag, sizeof v->etag, "%s", r->etag);
	snprintf(v->modified, sizeof v->modified, "%s", r->modified);
	snprintf(v->date, sizeof v->date, "%s", r->date);
}

int sv_curl_stat(struct sv_curl *c, const char *url, const char *name,
		 struct sv_remote_version *v, struct sv_err *err)
{
	struct sv_call k = {"HEAD", url, 0, 0, NULL, NULL};
	struct sv_reply r;
	int rc = sv_curl_exchange(c, &k, NULL, 0, &r, err);
	if (!rc && r.status != 200) {
		char a[600];
		rc = sv_err_set(err, sv_http_status_errno(r.status), "%s%s: %s", c->t->path, name,
				sv_curl_answer(c, &r, a, sizeof a));
	}
	if (!rc)
		version_of(&r, r.length == UINT64_MAX ? 0 : r.length, v);
	sv_buf_fini(&r.text);
	return rc;
}

int sv_curl_get(struct sv_curl *c, const char *url, const char *name, uint64_t off, size_t n,
		const struct sv_remote_version *expect, void *buf, size_t *got,
		struct sv_remote_version *v, struct sv_err *err)
{
	const char *path = c->t->path;
	char match[300];
	struct sv_call k = {"GET", url, off, n, NULL, NULL};
	if (expect && expect->etag[0]) {
		snprintf(match, sizeof match, "If-Match: %s", expect->etag);
		k.header = match;
	} else if (expect && expect->modified[0]) {
		/* No ETag: the time it was last changed is the proof. */
		snprintf(match, sizeof match, "If-Unmodified-Since: %s", expect->modified);
		k.header = match;
	}
	struct sv_reply r;
	*got = 0;
	int rc = sv_curl_exchange(c, &k, buf, n, &r, err);
	if (rc)
		return rc;
	char a[600], said[160];
	uint64_t end = off + n - 1;
	if (r.status == 412) {
		rc = sv_err_set(err, -ESTALE, "%s%s: 412 to %s", path, name, k.header ? k.header : "");
	} else if (r.status == 416 && r.total == 0 && off == 0 && !expect) {
		/* An empty object. */
		version_of(&r, 0, v);
	} else if (r.status == 200 && off == 0 && !r.overflow &&
		   (r.length == UINT64_MAX || r.got == r.length)) {
		/* No range taken, but the whole object fitted in what was
		 * asked: all there is. */
		version_of(&r, r.got, v);
		*got = r.got;
	} else if (r.status == 200) {
		version_of(&r, r.length, v);
		rc = sv_err_set(err, -ERANGE, "%s%s: 200 (the whole object instead of a range) to "
				"a read of %zu bytes at %llu", path, name, n, (unsigned long long)off);
	} else if (r.status != 206 && !expect) {
		rc = sv_err_set(err, sv_http_status_errno(r.status), "%s%s: %s", path, name,
				sv_curl_answer(c, &r, a, sizeof a));
	} else if (r.status != 206) {
		rc = sv_err_set(err, sv_http_status_errno(r.status), "%s%s: %s to a read of %zu "
				"bytes at %llu", path, name, sv_curl_answer(c, &r, a, sizeof a), n,
				(unsigned long long)off);
	} else if (!r.ranged || r.first != off || r.got != r.last - off + 1 || r.last > end ||
		   (r.last < end && (r.total == UINT64_MAX || r.last + 1 != r.total)) ||
		   (r.total == UINT64_MAX && !expect) ||
		   (r.length != UINT64_MAX && r.length != r.got) ||
		   (expect && r.total != UINT64_MAX && r.total != expect->size)) {
		if (expect)
			rc = sv_err_set(err, -EIO, "%s%s: asked for bytes %llu-%llu of %llu, the server "
					"answered %s: the object changed, or the server ignored "
					"If-Match", path, name, (unsigned long long)off,
					(unsigned long long)end, (unsigned long long)expect->size,
					range_said(&r, said, sizeof said));
		else
			rc = sv_err_set(err, -EIO, "%s%s: asked for bytes %llu-%llu, the server answered "
					"%s%s", path, name, (unsigned long long)off,
					(unsigned long long)end, range_said(&r, said, sizeof said),
					r.ranged && r.total == UINT64_MAX ? " (no size: \"*\")" : "");
	} else if (expect && expect->etag[0] && r.etag[0] && strcmp(r.etag, expect->etag)) {
		rc = sv_err_set(err, -EIO, "%s%s: ETag %s answered for %s: the object changed",
				path, name, r.etag, expect->etag);
	} else {
		version_of(&r, r.total != UINT64_MAX ? r.total : expect->size, v);
		*got = r.got;
	}
	sv_buf_fini(&r.text);
	return rc;
}

int sv_curl_get_whole(struct sv_curl *c, const char *url, const char *name, uint64_t max,
		      struct sv_buf *out, struct sv_remote_version *v, struct sv_err *err)
{
	const char *path = c->t->path;
	struct sv_call k = {"GET", url, 0, 0, NULL, NULL};
	struct sv_reply r;
	/* The body as text, up to max + 1 bytes (one more: past the cap). */
	int rc = sv_curl_exchange(c, &k, NULL, max < SIZE_MAX ? (size_t)max + 1 : SIZE_MAX, &r,
				  err);
	if (rc)
		return rc;
	if (r.status != 200) {
		char a[600];
		rc = sv_err_set(err, sv_http_status_errno(r.status), "%s%s: %s", path, name,
				sv_curl_answer(c, &r, a, sizeof a));
	} else {
		int w = sv_http_whole_body(&r.head, r.text.len, max);
		if (w == -EFBIG || r.overflow)
			rc = sv_err_set(err, -EFBIG, "%s%s: %llu bytes%s, more than the %llu allowed",
					path, name, (unsigned long long)(r.length != UINT64_MAX
									? r.length : r.text.len),
					r.length != UINT64_MAX ? "" : " or more (sent without a length)",
					(unsigned long long)max);
		else if (w)
			rc = sv_err_set(err, -EIO, "%s%s: %zu of %llu bytes arrived", path, name,
					r.text.len, (unsigned long long)r.length);
		else if (sv_buf_add(out, r.text.p, r.text.len))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		if (!rc) {
			__atomic_add_fetch(&c->t->counts->fetched, r.text.len, __ATOMIC_RELAXED);
			version_of(&r, r.text.len, v);
		}
	}
	sv_buf_fini(&r.text);
	return rc;
}

/* ---- what a server answers --------------------------------------------------- */

void sv_http_head_begin(struct sv_http_head *h)
{
	memset(h, 0, sizeof *h);
	h->length = UINT64_MAX;
}

/* Whether line p[0..n) is header `name` (any case): its value, trimmed,
 * in *v and *vn. */
static bool is_header(const char *p, size_t n, const char *name, const char **v, size_t *vn)
{
	size_t k = strlen(name);
	if (n <= k || strncasecmp(p, name, k) || p[k] != ':')
		return false;
	p += k + 1;
	n -= k + 1;
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	*v = p;
	*vn = n;
	return true;
}

static void refuse(struct sv_http_head *h, const char *name, const char *v, size_t n)
{
	if (h->bad[0])
		return;
	snprintf(h->bad, sizeof h->bad, "%s: %.*s", name, (int)(n > 200 ? 200 : n), v);
	for (char *c = h->bad; *c; c++)
		if (!isprint((unsigned char)*c))
			*c = '?';
}

/* "bytes A-B/T", "bytes A-B/STAR" (a "*") or "bytes STAR/T". */
static bool content_range(struct sv_http_head *h, const char *v, size_t n)
{
	if (n < 6 || strncmp(v, "bytes ", 6))
		return false;
	v += 6, n -= 6;
	const char *slash = memchr(v, '/', n);
	if (!slash)
		return false;
	size_t an = (size_t)(slash - v), tn = n - an - 1;
	const char *t = slash + 1;
	uint64_t total = UINT64_MAX;
	if (!(tn == 1 && *t == '*') && sv_parse_count(t, tn, INT64_MAX, &total))
		return false;
	if (an == 1 && *v == '*') {
		if (total == UINT64_MAX)
			return false;
		h->total = total;
		return true;
	}
	const char *dash = memchr(v, '-', an);
	uint64_t a, b;
	if (!dash || sv_parse_count(v, (size_t)(dash - v), INT64_MAX, &a) ||
	    sv_parse_count(dash + 1, an - (size_t)(dash - v) - 1, INT64_MAX, &b) || a > b ||
	    (total != UINT64_MAX && b >= total))
		return false;
	h->first = a;
	h->last = b;
	h->total = total;
	h->ranged = true;
	return true;
}

/* A header's value into out (cap bytes): false if it does not fit. */
static bool take_text(char *out, size_t cap, const char *v, size_t n)
{
	if (n >= cap || memchr(v, '\0', n))
		return false;
	memcpy(out, v, n);
	out[n] = '\0';
	return true;
}

void sv_http_header(struct sv_http_head *h, const char *p, size_t n)
{
	const char *v;
	size_t vn;
	if (n >= 5 && !strncmp(p, "HTTP/", 5)) {
		sv_http_head_begin(h);
		const char *sp = memchr(p, ' ', n);
		size_t k = 0;
		uint64_t s;
		while (sp && sp + 1 + k < p + n && isdigit((unsigned char)sp[1 + k]) && k < 4)
			k++;
		if (!sp || k != 3 || sv_parse_count(sp + 1, 3, 999, &s))
			refuse(h, "status", p, n);
		else
			h->status = (long)s;
	} else if (is_header(p, n, "Content-Range", &v, &vn)) {
		if (h->range[0]) {
			refuse(h, "Content-Range (twice)", v, vn);
			return;
		}
		snprintf(h->range, sizeof h->range, "%.*s", (int)(vn < 79 ? vn : 79), v);
		for (char *c = h->range; *c; c++)
			if (!isprint((unsigned char)*c))
				*c = '?';
		if (!content_range(h, v, vn))
			refuse(h, "Content-Range", v, vn);
	} else if (is_header(p, n, "Content-Length", &v, &vn)) {
		uint64_t l;
		if (sv_parse_count(v, vn, INT64_MAX, &l) ||
		    (h->length != UINT64_MAX && h->length != l))
			refuse(h, "Content-Length", v, vn);
		else
			h->length = l;
	} else if (is_header(p, n, "ETag", &v, &vn)) {
		if (!take_text(h->etag, sizeof h->etag, v, vn))
			refuse(h, "ETag (longer than 255 bytes)", v, vn);
	} else if (is_header(p, n, "Last-Modified", &v, &vn)) {
		if (!take_text(h->modified, sizeof h->modified, v, vn))
			refuse(h, "Last-Modified", v, vn);
	} else if (is_header(p, n, "Date", &v, &vn)) {
		take_text(h->date, sizeof h->date, v, vn);
	}
}

int sv_http_whole_body(const struct sv_http_head *h, uint64_t got, uint64_t max)
{
	if (h->length != UINT64_MAX && h->length > max)
		return -EFBIG;
	if (h->length != UINT64_MAX && got != h->length)
		return -EIO;
	return got > max ? -EFBIG : 0;
}

