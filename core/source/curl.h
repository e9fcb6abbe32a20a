/*
 * source/curl.h - what the HTTP and S3 transports share, and only they
 * include: libcurl (loaded at the first remote location, not linked),
 * one exchange with a server, the strict reading of a response's status
 * line and headers, and the three requests every HTTP-shaped transport
 * makes of an object (its stat, a range, the whole of it), checked the
 * same way whoever serves them.
 */
#ifndef SV_CURL_H
#define SV_CURL_H

#include "internal.h"
#include "source/remote.h"

#include <pthread.h>

/*
 * What a server's response says in its status line and headers, read
 * one line at a time, strictly: every number with sv_parse_count (no sign,
 * no space, at most INT64_MAX), a header that cannot be taken is named in
 * `bad` (the response is then refused), never guessed.
 */
#define SV_HTTP_HEAD_FIELDS                                                           \
	long status;                                                                  \
	bool ranged;               /* Content-Range: bytes first-last/total */        \
	uint64_t first, last;                                                          \
	uint64_t total;            /* its total (UINT64_MAX: unknown) */              \
	uint64_t length;           /* Content-Length, or UINT64_MAX */                \
	char etag[256];            /* as sent ("" if none) */                          \
	char modified[64];         /* Last-Modified ("" if none) */                    \
	char date[64];             /* Date ("" if none) */                             \
	char range[80];            /* Content-Range as sent ("" if none) */            \
	char bad[300];             /* "Name: value" of the first header refused */
struct sv_http_head {
	SV_HTTP_HEAD_FIELDS
};
/* A new response begins (its status line, after a redirect or a 100). */
void sv_http_head_begin(struct sv_http_head *h);
/* Takes one line (a status line or a header, with or without its CRLF). */
void sv_http_header(struct sv_http_head *h, const char *line, size_t n);
/* Whether a whole body (a GET without a range) of `got` bytes answered
 * with h may be taken under a cap of max bytes: 0; -EFBIG if it is more
 * than max (by its Content-Length, or by what came without one); -EIO if
 * fewer or more bytes came than its Content-Length said. */
int sv_http_whole_body(const struct sv_http_head *h, uint64_t got, uint64_t max);

/* An error page, or a body without room, is kept up to this much. */
#define SV_HTTP_TEXT_MAX (8u << 20)
#define SV_CURL_IDLE 8 /* easy handles kept with their connections */

/* A transport's connections and how its requests are made. */
struct sv_curl {
	struct sv_transport *t;    /* whose (its path and counts) */
	pthread_mutex_t lock;      /* idle, nidle */
	void *idle[SV_CURL_IDLE];  /* CURL handles */
	size_t nidle;
	bool follow;               /* redirects followed (never for a signed request) */
	/* An S3 store's signing: SigV4 with user/secret (NULL: unsigned),
	 * the session token if any. */
	const char *sigv4, *user, *secret, *token;
	/* What an error body says in the store's own words ("" if nothing),
	 * and, for a refusal of an unsigned request, why it went unsigned
	 * (NULL: nothing to add). */
	void (*explain)(const char *body, size_t n, char *out, size_t cap);
	const char *unsigned_why;
};

/* What a response said, and where its body went. */
struct sv_reply {
	union {
		struct sv_http_head head;
		struct {
			SV_HTTP_HEAD_FIELDS
		};
	};
	uint8_t *body;               /* room for cap bytes, or NULL */
	size_t cap, got;
	bool overflow;               /* more came than there was room for */
	struct sv_buf text;          /* an error page, or a body without room: its
				      * start (SV_HTTP_TEXT_MAX) */
};

/* A request's body: bytes [off, off + left) of fd, or p[0..left). */
struct sv_upload {
	int fd;
	const uint8_t *p;
	uint64_t off, left;
	int error;
};

/* One exchange. */
struct sv_call {
	const char *method;        /* "GET" (NULL), "HEAD", "PUT", "POST", "DELETE" */
	const char *url;
	uint64_t off;              /* a GET's range, [off, off + n) (n 0: none) */
	size_t n;
	const char *header;        /* one more header line, or NULL */
	struct sv_upload *up;      /* a PUT's or POST's body, or NULL */
};

/* libcurl loaded (once): 0, or -EIO with why it cannot be, for path. */
int sv_curl_load(const char *path, struct sv_err *err);
void sv_curl_init(struct sv_curl *c, struct sv_transport *t);
void sv_curl_fini(struct sv_curl *c);
/*
 * Makes the call: its answer into *r (a body into body[0..cap), or as
 * text without one).  0 and *r filled (a status other than 2xx is the
 * caller's to classify; r->text is the caller's to free), or -EIO with the
 * reason when the server could not be asked.
 */
int sv_curl_exchange(struct sv_curl *c, const struct sv_call *k, uint8_t *body, size_t cap,
		     struct sv_reply *r, struct sv_err *err);
/* What an HTTP status means to a reader: -errno. */
int sv_http_status_errno(long status);
/* "404 (not found)", or the store's own words, and why an unsigned
 * request was refused. */
const char *sv_curl_answer(const struct sv_curl *c, const struct sv_reply *r, char *buf,
			   size_t cap);

/* The transport calls for an object at url (sv_transport_ops.stat, get,
 * get_whole; `name` names it in messages, after the transport's path). */
int sv_curl_stat(struct sv_curl *c, const char *url, const char *name,
		 struct sv_remote_version *v, struct sv_err *err);
int sv_curl_get(struct sv_curl *c, const char *url, const char *name, uint64_t off, size_t n,
		const struct sv_remote_version *expect, void *buf, size_t *got,
		struct sv_remote_version *v, struct sv_err *err);
int sv_curl_get_whole(struct sv_curl *c, const char *url, const char *name, uint64_t max,
		      struct sv_buf *out, struct sv_remote_version *v, struct sv_err *err);

#endif
