/*
 * source/http.c - the HTTP transport: an object on an HTTP(S) server,
 * read by range (the remote layer, remote.c, does the rest).  Each read
 * after the open carries If-Match with the ETag seen at the open (or
 * If-Unmodified-Since without one): a server that has a new object
 * answers 412.  Redirects are followed.  Nothing is written or listed.
 */
#include "source/curl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct http {
	struct sv_transport t;  /* first */
	struct sv_curl c;
	char *url;
};

bool sv_source_is_url(const char *path)
{
	return !strncasecmp(path, "http://", 7) || !strncasecmp(path, "https://", 8);
}

static int http_stat(struct sv_transport *t, const char *key, struct sv_remote_version *v,
		     struct sv_err *err)
{
	struct http *h = (struct http *)t;
	(void)key;
	return sv_curl_stat(&h->c, h->url, "", v, err);
}

static int http_get(struct sv_transport *t, const char *key, uint64_t off, size_t n,
		    const struct sv_remote_version *expect, void *buf, size_t *got,
		    struct sv_remote_version *v, struct sv_err *err)
{
	struct http *h = (struct http *)t;
	(void)key;
	return sv_curl_get(&h->c, h->url, "", off, n, expect, buf, got, v, err);
}

static int http_get_whole(struct sv_transport *t, const char *key, uint64_t max,
			  struct sv_buf *out, struct sv_remote_version *v, struct sv_err *err)
{
	struct http *h = (struct http *)t;
	(void)key;
	return sv_curl_get_whole(&h->c, h->url, "", max, out, v, err);
}

static void http_close(struct sv_transport *t)
{
	struct http *h = (struct http *)t;
	sv_curl_fini(&h->c);
	free(h->url);
	free(h);
}

static const struct sv_transport_ops http_ops = {
	.kind = "HTTP object",
	.read_only_why = "an object on an HTTP server is read by range, never written",
	.whole_when_unranged = true,
	.stat = http_stat,
	.get = http_get,
	.get_whole = http_get_whole,
	.close = http_close,
};

static int http_new(const char *url, struct sv_transport **out, struct sv_err *err)
{
	struct http *h = calloc(1, sizeof *h);
	char *u = strdup(url);
	if (!h || !u) {
		free(h);
		free(u);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	h->t.ops = &http_ops;
	h->url = u;
	sv_curl_init(&h->c, &h->t);
	*out = &h->t;
	return 0;
}

int sv_source_open_http(const char *url, bool read_only, struct sv_source **out, int *why,
			struct sv_err *err)
{
	*out = NULL;
	*why = read_only ? 0 : EROFS;
	/* Where it is, as messages, logs and the mount's name say it: without
	 * a password or a presigned URL's signature (the URL asked keeps them). */
	char *shown = sv_location_shown(url);
	if (!shown)
		return sv_err_set(err, -ENOMEM, "out of memory");
	struct sv_transport *t = NULL;
	int rc = sv_curl_load(shown, err);
	if (!rc)
		rc = http_new(url, &t, err);
	if (!rc)
		rc = sv_remote_open_object(t, shown, true, out, err);
	free(shown);
	return rc;
}
