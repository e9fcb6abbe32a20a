/*
 * source/s3.c - the S3 transport: objects in an S3 store (AWS, RADOS
 * Gateway, MinIO...), each request signed by libcurl (SigV4, the payload
 * unsigned) with the place's credentials, if any.  It states, gets and
 * lists (ListObjectsV2, keys percent-encoded), and puts with If-Match on
 * the ETag read (If-None-Match: * for a new object): one PUT, or a
 * multipart upload above the part size, whose completion carries the
 * condition.  Where the store is and with what credentials is
 * s3place.c's; what its XML says, s3xml.c's.
 */
#include "source/curl.h"
#include "source/s3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct s3 {
	struct sv_transport t;    /* first */
	struct sv_curl c;
	struct sv_s3_place place;
	char unsigned_why[400];
};

/* The URL of key (NULL: the place's own object) into a new string in b. */
static int key_url(const struct s3 *h, const char *key, struct sv_buf *b, struct sv_err *err)
{
	sv_buf_init(b);
	if (sv_buf_printf(b, "%s", h->place.url) || (key && sv_s3_encode(b, key, true)) ||
	    sv_buf_add(b, "", 1)) {
		sv_buf_fini(b);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int s3_stat(struct sv_transport *t, const char *key, struct sv_remote_version *v,
		   struct sv_err *err)
{
	struct s3 *h = (struct s3 *)t;
	struct sv_buf u;
	int rc = key_url(h, key, &u, err);
	if (!rc)
		rc = sv_curl_stat(&h->c, (const char *)u.p, key ? key : "", v, err);
	sv_buf_fini(&u);
	return rc;
}

static int s3_get(struct sv_transport *t, const char *key, uint64_t off, size_t n,
		  const struct sv_remote_version *expect, void *buf, size_t *got,
		  struct sv_remote_version *v, struct sv_err *err)
{
	struct s3 *h = (struct s3 *)t;
	struct sv_buf u;
	int rc = key_url(h, key, &u, err);
	if (!rc)
		rc = sv_curl_get(&h->c, (const char *)u.p, key ? key : "", off, n, expect, buf, got,
				 v, err);
	sv_buf_fini(&u);
	return rc;
}

static int s3_get_whole(struct sv_transport *t, const char *key, uint64_t max,
			struct sv_buf *out, struct sv_remote_version *v, struct sv_err *err)
{
	struct s3 *h = (struct s3 *)t;
	struct sv_buf u;
	int rc = key_url(h, key, &u, err);
	if (!rc)
		rc = sv_curl_get_whole(&h->c, (const char *)u.p, key ? key : "", max, out, v, err);
	sv_buf_fini(&u);
	return rc;
}

/* ---- listing ------------------------------------------------------------------------------ */

/* The URL of a page of the listing of key (ListObjectsV2): after the
 * continuation token tok (or NULL), of `max` keys at most (0: the store's
 * page).  The query's keys in order: SigV4 signs them sorted. */
static int list_url(const struct s3 *h, const char *key, const char *tok, unsigned max,
		    struct sv_buf *url, struct sv_err *err)
{
	sv_buf_init(url);
	char mk[32] = "";
	if (max)
		snprintf(mk, sizeof mk, "max-keys=%u&", max);
	int rc = sv_buf_printf(url, "%s?", h->place.bucket_url) ||
		 (tok && (sv_buf_printf(url, "continuation-token=") ||
			  sv_s3_encode(url, tok, false) || sv_buf_printf(url, "&"))) ||
		 sv_buf_printf(url, "delimiter=%%2F&encoding-type=url&list-type=2&%sprefix=", mk) ||
		 sv_s3_encode(url, key, false) || sv_buf_add(url, "", 1);
	if (rc) {
		sv_buf_fini(url);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int s3_list(struct sv_transport *t, const char *dir, const char *token, unsigned max,
		   int (*fn)(void *arg, const struct sv_remote_entry *e), void *arg, bool *more,
		   char *next, size_t cap, struct sv_err *err)
{
	struct s3 *h = (struct s3 *)t;
	*more = false;
	size_t kn = strlen(h->place.key) + strlen(dir) + 2;
	char *key = malloc(kn);
	if (!key)
		return sv_err_set(err, -ENOMEM, "out of memory");
	snprintf(key, kn, "%s%s%s", h->place.key, dir, *dir ? "/" : "");
	struct sv_buf url;
	int rc = list_url(h, key, token, max, &url, err);
	struct sv_reply r;
	if (!rc) {
		struct sv_call k = {"GET", (const char *)url.p, 0, 0, NULL, NULL};
		rc = sv_curl_exchange(&h->c, &k, NULL, 0, &r, err);
		sv_buf_fini(&url);
	}
	if (rc) {
		free(key);
		return rc;
	}
	char a[600];
	const char *why = NULL;
	if (r.status != 200)
		rc = sv_err_set(err, sv_http_status_errno(r.status), "%s%s: %s", t->path, dir,
				sv_curl_answer(&h->c, &r, a, sizeof a));
	else if (r.text.len >= SV_HTTP_TEXT_MAX)
		rc = sv_err_set(err, -EIO, "%s%s: a page of more than %u bytes", t->path,
				dir, SV_HTTP_TEXT_MAX);
	else
		rc = sv_s3_list_page((const char *)r.text.p, r.text.len, key, fn, arg, more, next,
				     cap, &why);
	if (rc == -EBADMSG && why)
		rc = sv_err_set(err, -EIO, "%s%s: %s", t->path, dir, why);
	sv_buf_fini(&r.text);
	free(key);
	return rc;
}

/* ---- putting ------------------------------------------------------------------------------ */

/* The URL of key with a query (already encoded). */
static int query_url(const struct s3 *h, const char *key, const char *query, struct sv_buf *b,
		     struct sv_err *err)
{
	int rc = key_url(h, key, b, err);
	if (rc)
		return rc;
	b->len--; /* its NUL */
	if (sv_buf_printf(b, "?%s", query) || sv_buf_add(b, "", 1)) {
		sv_buf_fini(b);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* The condition of an upload: If-Match on the ETag without its quotes
 * (RADOS Gateway refuses the quoted form; AWS takes both), or
 * If-None-Match: * (match NULL: a new object). */
static void put_condition(const char *match, char *out, size_t cap)
{
	size_t n = match ? strlen(match) : 0;
	if (!match)
		snprintf(out, cap, "If-None-Match: *");
	else if (n >= 2 && match[0] == '"' && match[n - 1] == '"')
		snprintf(out, cap, "If-Match: %.*s", (int)(n - 2), match + 1);
	else
		snprintf(out, cap, "If-Match: %s", match);
}

/* An answer other than 200 to a step of an upload: -ESTALE (412), or
 * -errno with the reason. */
static int upload_failed(const struct s3 *h, const char *key, const struct sv_reply *r,
			 const char *step, struct sv_err *err)
{
	if (r->status == 412)
		return sv_err_set(err, -ESTALE, "%s%s: 412 to %s", h->t.path, key ? key : "", step);
	char a[600];
	return sv_err_set(err, r->status == 403 ? -EACCES : -EIO, "%s%s: %s to %s: not "
			  "overwritten, the edit is dropped", h->t.path, key ? key : "",
			  sv_curl_answer(&h->c, r, a, sizeof a), step);
}

/* One PUT of the whole object on its condition. */
static int put_whole(struct s3 *h, const char *key, struct sv_upload *up, const char *cond,
		     struct sv_remote_version *v, struct sv_err *err)
{
	struct sv_buf u;
	int rc = key_url(h, key, &u, err);
	if (rc)
		return rc;
	struct sv_call k = {"PUT", (const char *)u.p, 0, 0, cond, up};
	struct sv_reply r;
	rc = sv_curl_exchange(&h->c, &k, NULL, 0, &r, err);
	sv_buf_fini(&u);
	if (!rc && r.status != 200)
		rc = upload_failed(h, key, &r, "the upload", err);
	if (!rc) {
		snprintf(v->etag, sizeof v->etag, "%s", r.etag);
		snprintf(v->date, sizeof v->date, "%s", r.date);
	}
	sv_buf_fini(&r.text);
	return rc;
}

/* Abandons a multipart upload (its parts are freed on the store). */
static void abort_parts(struct s3 *h, const char *key, const char *id)
{
	struct sv_buf q, u;
	sv_buf_init(&q);
	struct sv_err e;
	if (sv_buf_printf(&q, "uploadId=") || sv_s3_encode(&q, id, false) || sv_buf_add(&q, "", 1) ||
	    query_url(h, key, (const char *)q.p, &u, &e)) {
		sv_buf_fini(&q);
		return;
	}
	sv_buf_fini(&q);
	struct sv_call k = {"DELETE", (const char *)u.p, 0, 0, NULL, NULL};
	struct sv_reply r;
	if (!sv_curl_exchange(&h->c, &k, NULL, 0, &r, &e))
		sv_buf_fini(&r.text);
	sv_buf_fini(&u);
}

/* One step of a multipart upload: a POST or PUT to key?query, its answer
 * in *r (r->text the caller's to free when 0). */
static int part_call(struct s3 *h, const char *key, const char *method, const char *query,
		     const char *cond, struct sv_upload *up, struct sv_reply *r,
		     struct sv_err *err)
{
	struct sv_buf u;
	int rc = query_url(h, key, query, &u, err);
	if (rc)
		return rc;
	struct sv_call k = {method, (const char *)u.p, 0, 0, cond, up};
	rc = sv_curl_exchange(&h->c, &k, NULL, 0, r, err);
	sv_buf_fini(&u);
	return rc;
}

/*
 * The new object in parts of place.part bytes: begun, each part put,
 * the caller's word that the object is still the one read (check), then
 * completed on the condition; abandoned on any failure.
 */
static int put_parts(struct s3 *h, const char *key, int fd, uint64_t size, const char *cond,
		     int (*check)(void *arg, struct sv_err *err), void *arg,
		     struct sv_remote_version *v, struct sv_err *err)
{
	char q[1400], id[1024] = "";
	struct sv_buf enc, done;
	sv_buf_init(&enc);
	sv_buf_init(&done);
	struct sv_reply r;
	int rc = part_call(h, key, "POST", "uploads=", NULL, NULL, &r, err);
	if (!rc) {
		if (r.status != 200)
			rc = upload_failed(h, key, &r, "the start of a multipart upload", err);
		if (!rc)
			sv_s3_xml_text((const char *)r.text.p, r.text.len, "UploadId", id, sizeof id);
		if (!rc && !id[0])
			rc = sv_err_set(err, -EIO, "%s: no UploadId in the answer to the start of a "
					"multipart upload: not overwritten", h->t.path);
		sv_buf_fini(&r.text);
	}
	if (!rc && (sv_s3_encode(&enc, id, false) || sv_buf_add(&enc, "", 1)))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc && sv_buf_printf(&done, "<CompleteMultipartUpload>"))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	uint64_t part = h->place.part, parts = (size + part - 1) / part;
	for (uint64_t i = 0; !rc && i < parts; i++) {
		uint64_t off = i * part;
		uint64_t len = size - off < part ? size - off : part;
		snprintf(q, sizeof q, "partNumber=%llu&uploadId=%s", (unsigned long long)i + 1,
			 (const char *)enc.p);
		struct sv_upload up = {fd, NULL, off, len, 0};
		rc = part_call(h, key, "PUT", q, NULL, &up, &r, err);
		if (rc)
			break;
		if (r.status != 200)
			rc = upload_failed(h, key, &r, "a part of a multipart upload", err);
		if (!rc && !r.etag[0])
			rc = sv_err_set(err, -EIO, "%s: no ETag for part %llu of a multipart upload: "
					"not overwritten", h->t.path, (unsigned long long)i + 1);
		if (!rc && sv_buf_printf(&done, "<Part><PartNumber>%llu</PartNumber><ETag>%s</ETag>"
					 "</Part>", (unsigned long long)i + 1, r.etag))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		sv_buf_fini(&r.text);
	}
	if (!rc && sv_buf_printf(&done, "</CompleteMultipartUpload>"))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	/* The parts are up; the object is still the one read, or nothing is
	 * completed. */
	if (!rc && check)
		rc = check(arg, err);
	if (!rc) {
		snprintf(q, sizeof q, "uploadId=%s", (const char *)enc.p);
		struct sv_upload up = {-1, done.p, 0, done.len, 0};
		rc = part_call(h, key, "POST", q, cond, &up, &r, err);
		if (!rc) {
			/* A failure may come as a 200 whose body is an <Error>. */
			bool error = r.text.len && memmem(r.text.p, r.text.len, "<Error>", 7);
			if (r.status != 200 || error) {
				if (r.status == 200)
					r.status = 500;
				rc = upload_failed(h, key, &r, "the completion of a multipart upload",
						   err);
			} else {
				char t[256];
				sv_s3_xml_text((const char *)r.text.p, r.text.len, "ETag", t, sizeof t);
				/* Its quotes come as &quot; in XML. */
				char *qq;
				while ((qq = strstr(t, "&quot;")))
					memmove(qq + 1, qq + 6, strlen(qq + 6) + 1), *qq = '"';
				snprintf(v->etag, sizeof v->etag, "%s", r.etag[0] ? r.etag : t);
				snprintf(v->date, sizeof v->date, "%s", r.date);
			}
			sv_buf_fini(&r.text);
		}
	}
	if (rc && id[0])
		abort_parts(h, key, id);
	sv_buf_fini(&enc);
	sv_buf_fini(&done);
	return rc;
}

static int s3_put(struct sv_transport *t, const char *key, int fd, const void *p,
		  uint64_t size, const char *match, int (*check)(void *arg, struct sv_err *err),
		  void *arg, struct sv_remote_version *v, struct sv_err *err)
{
	struct s3 *h = (struct s3 *)t;
	char cond[300];
	put_condition(match, cond, sizeof cond);
	memset(v, 0, sizeof *v);
	v->size = size;
	if (!p && size > h->place.part)
		return put_parts(h, key, fd, size, cond, check, arg, v, err);
	struct sv_upload up = {fd, p, 0, size, 0};
	return put_whole(h, key, &up, cond, v, err);
}

static void s3_close(struct sv_transport *t)
{
	struct s3 *h = (struct s3 *)t;
	sv_curl_fini(&h->c);
	sv_s3_place_fini(&h->place);
	free(h);
}

static const struct sv_transport_ops s3_ops = {
	.kind = "S3 object",
	.prefix_kind = "S3 prefix",
	.stat = s3_stat,
	.get = s3_get,
	.get_whole = s3_get_whole,
	.list = s3_list,
	.put = s3_put,
	.close = s3_close,
};

int sv_source_open_s3(const char *location, const char *opts, bool read_only,
		      struct sv_source **out, int *why, struct sv_err *err)
{
	*out = NULL;
	*why = 0;
	struct s3 *h = calloc(1, sizeof *h);
	if (!h)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = sv_s3_place(location, opts, &h->place, err);
	if (!rc)
		rc = sv_curl_load(location, err);
	if (rc) {
		sv_s3_place_fini(&h->place);
		free(h);
		return rc;
	}
	h->t.ops = &s3_ops;
	sv_curl_init(&h->c, &h->t);
	h->c.follow = false; /* a redirect would not carry the signature */
	h->c.sigv4 = h->place.sigv4;
	h->c.user = h->place.user;
	h->c.secret = h->place.secret;
	h->c.token = h->place.token;
	h->c.explain = sv_s3_error_text;
	if (!h->place.user) {
		/* Refused to nobody in particular: say where credentials were
		 * looked for. */
		snprintf(h->unsigned_why, sizeof h->unsigned_why,
			 "no credentials were found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
			 "profile %s of ~/.aws/credentials and ~/.aws/config): the request went "
			 "unsigned", h->place.profile);
		h->c.unsigned_why = h->unsigned_why;
	}
	const char *key = h->place.key;
	if (!key[0] || key[strlen(key) - 1] == '/')
		return sv_remote_open_prefix(&h->t, location, read_only, out, err);
	char *shown = sv_location_shown(location);
	if (!shown) {
		s3_close(&h->t);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	rc = sv_remote_open_object(&h->t, shown, read_only, out, err);
	free(shown);
	return rc;
}
