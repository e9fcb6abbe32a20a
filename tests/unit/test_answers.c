/*
 * test_answers.c - what savefs takes from a server, held to one strict
 * reader: numbers (sv_parse_count), a response's status line and headers
 * (sv_http_header: Content-Range, Content-Length, ETag), a whole body
 * under a cap (sv_http_whole_body), a page of an S3 listing
 * (sv_s3_list_page: a page cut short, keys percent-encoded, a size that
 * is no size), percent-decoding, and locations shown without their
 * credentials (sv_location_shown); and a location's options taken per open
 * from the sources' table (sv_source_option, sv_s3_place), never kept
 * for the process.
 */
#include "internal.h"
#include "source/curl.h"
#include "source/s3.h"
#include "t.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t count(const char *s, uint64_t max, int *rc)
{
	uint64_t v = 12345;
	*rc = sv_parse_count(s, strlen(s), max, &v);
	return v;
}

static void counts(void)
{
	int rc;
	T_UINT(0, count("0", INT64_MAX, &rc));
	T_INT(0, rc);
	T_UINT(9223372036854775807ull, count("9223372036854775807", INT64_MAX, &rc));
	T_INT(0, rc);
	/* Signs, spaces, overflow, and past the cap: refused. */
	static const char *const bad[] = {"-1", "+1", " 1", "1 ", "", "0x10", "1e3",
					  "9223372036854775808", "18446744073709551614",
					  "18446744073709551616", "99999999999999999999999", NULL};
	for (const char *const *b = bad; *b; b++) {
		count(*b, INT64_MAX, &rc);
		if (rc != -EINVAL)
			fprintf(stderr, "  (taken: \"%s\")\n", *b);
		T_INT(-EINVAL, rc);
	}
	count("1000", 999, &rc);
	T_INT(-EINVAL, rc);
	T_UINT(999, count("999", 999, &rc));
}

static struct sv_http_head head(const char *const *lines)
{
	struct sv_http_head h;
	sv_http_head_begin(&h);
	for (; *lines; lines++)
		sv_http_header(&h, *lines, strlen(*lines));
	return h;
}

static void headers(void)
{
	struct sv_http_head h = head((const char *const[]){"HTTP/1.1 206 Partial Content\r\n",
		"Content-Range: bytes 0-99/1000\r\n", "Content-Length: 100\r\n",
		"ETag: \"abc\"\r\n", "Last-Modified: Sat, 28 Nov 2026 03:00:00 GMT\r\n", NULL});
	T_INT(206, h.status);
	T_OK(h.ranged);
	T_UINT(0, h.first);
	T_UINT(99, h.last);
	T_UINT(1000, h.total);
	T_UINT(100, h.length);
	T_STR("\"abc\"", h.etag);
	T_STR("bytes 0-99/1000", h.range);
	T_STR("", h.bad);
	h = head((const char *const[]){"HTTP/1.1 206 x", "content-range: bytes 5-9/*", NULL});
	T_OK(h.ranged);
	T_UINT(UINT64_MAX, h.total);
	h = head((const char *const[]){"HTTP/1.1 416 x", "Content-Range: bytes */0", NULL});
	T_OK(!h.ranged);
	T_UINT(0, h.total);
	T_STR("", h.bad);
	/* Every one of these is refused, and named. */
	static const struct { const char *line, *bad; } refused[] = {
		{"Content-Range: bytes 0-99/18446744073709551614",
		 "Content-Range: bytes 0-99/18446744073709551614"},
		{"Content-Range: bytes -1-99/1000", "Content-Range: bytes -1-99/1000"},
		{"Content-Range: bytes 0-99/ 1000", "Content-Range: bytes 0-99/ 1000"},
		{"Content-Range: bytes 0-1000/1000", "Content-Range: bytes 0-1000/1000"},
		{"Content-Range: bytes 9-8/1000", "Content-Range: bytes 9-8/1000"},
		{"Content-Range: bytes +0-99/1000", "Content-Range: bytes +0-99/1000"},
		{"Content-Range: items 0-9/10", "Content-Range: items 0-9/10"},
		{"Content-Length: -1", "Content-Length: -1"},
		{"Content-Length: 18446744073709551615", "Content-Length: 18446744073709551615"},
		{"Content-Length: 12abc", "Content-Length: 12abc"},
		{"HTTP/1.1 2000 x", "status: HTTP/1.1 2000 x"},
	};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		h = head((const char *const[]){"HTTP/1.1 206 x", refused[i].line, NULL});
		if (strstr(refused[i].line, "HTTP/"))
			h = head((const char *const[]){refused[i].line, NULL});
		T_STR(refused[i].bad, h.bad);
	}
	/* Two ranges in one response. */
	h = head((const char *const[]){"HTTP/1.1 206 x", "Content-Range: bytes 0-9/100",
				       "Content-Range: bytes */1", NULL});
	T_STR("Content-Range (twice): bytes */1", h.bad);
	/* Two lengths that differ. */
	h = head((const char *const[]){"HTTP/1.1 200 x", "Content-Length: 10", "Content-Length: 11",
				       NULL});
	T_STR("Content-Length: 11", h.bad);
	/* An ETag longer than it can be kept whole: refused, never cut. */
	char etag[400];
	memset(etag, 'e', sizeof etag);
	memcpy(etag, "ETag: ", 6);
	etag[sizeof etag - 1] = '\0';
	h = head((const char *const[]){"HTTP/1.1 200 x", etag, NULL});
	T_STR("", h.etag);
	T_OK(!strncmp(h.bad, "ETag (longer than 255 bytes): eeee", 34));
	/* A new response (after a redirect) starts afresh. */
	h = head((const char *const[]){"HTTP/1.1 302 x", "Content-Length: abc", "HTTP/1.1 200 x",
				       "Content-Length: 3", NULL});
	T_STR("", h.bad);
	T_UINT(3, h.length);
}

static void whole_bodies(void)
{
	struct sv_http_head h = head((const char *const[]){"HTTP/1.1 200 x", NULL});
	/* Sent without a length (chunked): held to the cap all the same. */
	T_INT(0, sv_http_whole_body(&h, 1 << 20, 1 << 20));
	T_INT(-EFBIG, sv_http_whole_body(&h, 8 << 20, 1 << 20));
	h = head((const char *const[]){"HTTP/1.1 200 x", "Content-Length: 2097152", NULL});
	T_INT(-EFBIG, sv_http_whole_body(&h, 0, 1 << 20));
	h = head((const char *const[]){"HTTP/1.1 200 x", "Content-Length: 100", NULL});
	T_INT(-EIO, sv_http_whole_body(&h, 99, 1 << 20));
	T_INT(0, sv_http_whole_body(&h, 100, 1 << 20));
}

struct got {
	char names[4096];
	uint64_t sizes[16];
	int n;
};

static int on_entry(void *arg, const struct sv_remote_entry *e)
{
	struct got *g = arg;
	size_t k = strlen(g->names);
	snprintf(g->names + k, sizeof g->names - k, "%s%s%s", k ? "|" : "", e->name,
		 e->dir ? "/" : "");
	if (g->n < 16)
		g->sizes[g->n] = e->size;
	g->n++;
	return 0;
}

#define PAGE_TOP "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name>"
#define PAGE_END "</ListBucketResult>"

static int page(const char *body, struct got *g, bool *more, char *next, const char **why)
{
	memset(g, 0, sizeof *g);
	next[0] = '\0';
	return sv_s3_list_page(body, strlen(body), "p/", on_entry, g, more, next, 256, why);
}

static void listings(void)
{
	struct got g;
	bool more;
	char next[256];
	const char *why;
	/* Keys percent-encoded: a carriage return, a space, an ampersand. */
	int rc = page(PAGE_TOP "<EncodingType>url</EncodingType>"
		      "<Contents><Key>p/a%0Db.map</Key><Size>10</Size><ETag>&quot;x&quot;</ETag></Contents>"
		      "<Contents><Key>p/two+words%26more.map</Key><Size>7</Size></Contents>"
		      "<CommonPrefixes><Prefix>p/sub%2Fdir/</Prefix></CommonPrefixes>"
		      "<CommonPrefixes><Prefix>p/d/</Prefix></CommonPrefixes>"
		      "<IsTruncated>true</IsTruncated><NextContinuationToken>t&amp;1</NextContinuationToken>"
		      PAGE_END, &g, &more, next, &why);
	T_INT(0, rc);
	T_STR("a\rb.map|two words&more.map|d/", g.names);
	T_UINT(10, g.sizes[0]);
	T_OK(more);
	T_STR("t&1", next);
	/* Without the encoding, a key XML carries with a character reference
	 * is read as it is; a reference to a NUL is no name. */
	rc = page(PAGE_TOP "<Contents><Key>p/a&#x0D;b</Key><Size>1</Size></Contents>" PAGE_END, &g,
		  &more, next, &why);
	T_INT(0, rc);
	T_STR("a\rb", g.names);
	rc = page(PAGE_TOP "<Contents><Key>p/a&#0;b</Key><Size>1</Size></Contents>" PAGE_END, &g,
		  &more, next, &why);
	T_INT(-EBADMSG, rc);
	T_STR("an entry whose name cannot be read", why);
	/* A page cut short: refused whole, nothing of it passed on. */
	rc = page(PAGE_TOP "<Contents><Key>p/a.map</Key><Size>1</Size></Contents>", &g, &more, next,
		  &why);
	T_INT(-EBADMSG, rc);
	T_STR("a listing page cut short (no </ListBucketResult>)", why);
	T_INT(0, g.n);
	rc = page("<html>busy</html>", &g, &more, next, &why);
	T_INT(-EBADMSG, rc);
	T_STR("not a listing (no <ListBucketResult>)", why);
	/* Sizes that are no sizes. */
	static const char *const sizes[] = {"-1", "18446744073709551615", "", " 5", "5x", NULL};
	for (const char *const *s = sizes; *s; s++) {
		char body[512];
		snprintf(body, sizeof body, PAGE_TOP "<Contents><Key>p/a</Key><Size>%s</Size></Contents>"
			 PAGE_END, *s);
		T_INT(-EBADMSG, page(body, &g, &more, next, &why));
		T_STR("an object whose <Size> is not a size", why);
	}
	rc = page(PAGE_TOP "<Contents><Key>p/a</Key></Contents>" PAGE_END, &g, &more, next, &why);
	T_INT(-EBADMSG, rc);
	/* A truncated page must say where it goes on. */
	rc = page(PAGE_TOP "<IsTruncated>true</IsTruncated>" PAGE_END, &g, &more, next, &why);
	T_INT(-EBADMSG, rc);
	T_STR("a truncated page without a continuation", why);
	/* An ETag too long to keep whole. */
	char body[1024];
	char etag[400];
	memset(etag, 'e', sizeof etag - 1);
	etag[sizeof etag - 1] = '\0';
	snprintf(body, sizeof body, PAGE_TOP "<Contents><Key>p/a</Key><Size>1</Size><ETag>%s</ETag>"
		 "</Contents>" PAGE_END, etag);
	T_INT(-EBADMSG, page(body, &g, &more, next, &why));
	T_STR("an ETag longer than 255 bytes", why);
}

static void decoding(void)
{
	char out[16];
	T_INT(0, sv_percent_decode("a%2Fb%41+", 9, out, sizeof out));
	T_STR("a/bA ", out);
	T_INT(-EINVAL, sv_percent_decode("a%00", 4, out, sizeof out));
	T_INT(-EINVAL, sv_percent_decode("a%4", 3, out, sizeof out));
	T_INT(-EINVAL, sv_percent_decode("a%zz", 4, out, sizeof out));
	T_INT(-ENAMETOOLONG, sv_percent_decode("0123456789abcdef", 16, out, sizeof out));
}

static void shown(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{"http://user:secret@example.com/a.map", "http://user:***@example.com/a.map"},
		{"https://example.com/a.map?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F20261128"
		 "&X-Amz-Signature=0123456789abcdef&X-Amz-Security-Token=tok",
		 "https://example.com/a.map?X-Amz-Algorithm=AWS4&X-Amz-Credential=***"
		 "&X-Amz-Signature=***&X-Amz-Security-Token=***"},
		{"http://example.com/user:pass@x.map", "http://example.com/user:pass@x.map"},
		{"s3://bucket/key.map", "s3://bucket/key.map"},
		{"/home/me/a.map", "/home/me/a.map"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *s = sv_location_shown(cases[i].in);
		T_STR(cases[i].out, s);
		free(s);
	}
}

/* Two opens in one process with different -o s3_*: each takes its own
 * (the options once were the process's, the last command line's). */
static void source_options(void)
{
	T_OK(sv_source_option("s3_endpoint", 11));
	T_OK(sv_source_option("s3_part_size", 12));
	T_OK(!sv_source_option("events", 6));
	T_OK(!sv_source_option("s3_bogus", 8));
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_source_option_check("s3_region=eu-west-3", &err));
	T_INT(-EINVAL, sv_source_option_check("s3_endpoint=ftp://x", &err));
	T_STR("-o s3_endpoint=ftp://x: not an http:// or https:// URL", err.msg);
	T_INT(-EINVAL, sv_source_option_check("s3_part_size=1M", &err));
	T_STR("-o s3_part_size=1M: a size from 5M to 5G (an S3 multipart upload's part)", err.msg);
	T_INT(-EINVAL, sv_source_option_check("s3_path_style=yes", &err));
	T_INT(-EINVAL, sv_source_option_check("s3_profile=", &err));
	T_STR("-o s3_profile: a value is needed (s3_profile=...)", err.msg);

	unsetenv("AWS_PROFILE");
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	setenv("AWS_ACCESS_KEY_ID", "AK", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
	struct sv_s3_place a, b;
	T_INT(0, sv_s3_place("s3://bkt/k.map", "events=builtin,s3_endpoint=http://127.0.0.1:9/,"
			     "s3_region=r1,s3_part_size=8M", &a, &err));
	T_INT(0, sv_s3_place("s3://bkt/k.map", "s3_region=r2,s3_path_style=0,s3_region=r3", &b, &err));
	T_STR("http://127.0.0.1:9/bkt/k.map", a.url);
	T_STR("r1", a.region);
	T_UINT(8u << 20, a.part);
	T_STR("https://bkt.s3.r3.amazonaws.com/k.map", b.url); /* the last given counts */
	T_STR("r3", b.region);
	T_UINT(SV_S3_PART, b.part);
	sv_s3_place_fini(&a);
	sv_s3_place_fini(&b);
	T_INT(-EINVAL, sv_s3_place("s3://bkt/k", "s3_part_size=1K", &a, &err));
}

int main(void)
{
	source_options();
	counts();
	headers();
	whole_bodies();
	listings();
	decoding();
	shown();
	return t_done();
}
