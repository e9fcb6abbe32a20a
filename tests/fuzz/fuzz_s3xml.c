/*
 * fuzz_s3xml.c - libFuzzer target for what savefs reads of a server's
 * answers (core/source/s3.c): an error body's code and message, a tag's
 * text, a page of a ListObjectsV2 listing, the same bytes as a response's
 * status line and headers (sv_http_header) and the body's acceptance
 * (sv_http_whole_body), and as numbers, percent-encoded text and a
 * location to show (sv_parse_count, sv_percent_decode,
 * sv_location_shown).
 *
 * The first byte picks the prefix the listing is read under ("", "a/",
 * "runs/seg/", or the next bytes up to a NUL); the rest is the body.  For
 * what reads (abort() otherwise: real invariants):
 *   - every text out is NUL-terminated within its buffer, and printable
 *     (an error's code and message are said in messages);
 *   - a name listed is not empty and has no '/'; an ETag is printable; a
 *     prefix (a directory) has no size, ETag or time;
 *   - a page that goes on gives a token, one that cannot gives a reason;
 *     a callback's non-zero return stops the page and is returned;
 *   - a header taken is within bounds: a range's first <= last < total,
 *     every number at most INT64_MAX, texts terminated; one refused is
 *     named, printable;
 *   - a number parsed is at most its cap; a decoded text is terminated
 *     and holds no NUL; a location shown is terminated and no longer than
 *     the location.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-s3xml).
 */
#include "internal.h"
#include "source/curl.h"
#include "source/s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_s3xml: %s\n", what);
	abort();
}

static void check_text(const char *t, size_t cap)
{
	size_t n = strnlen(t, cap);
	if (n == cap)
		fail("a text without its NUL");
	for (size_t i = 0; i < n; i++)
		if (!isprint((unsigned char)t[i]) && t[i] != '\t' && t[i] != '\n' && t[i] != '\r')
			if ((unsigned char)t[i] < 0x80)
				fail("a control byte in an error's text");
}

struct seen {
	unsigned n, stop_at;
};

static int on_entry(void *arg, const struct sv_remote_entry *e)
{
	struct seen *s = arg;
	if (!e->name[0] || strchr(e->name, '/'))
		fail("a listed name empty or with '/'");
	check_text(e->etag, strlen(e->etag) + 1);
	if (e->dir && (e->size || e->etag[0] || e->mtime))
		fail("a prefix listed with an object's size, ETag or time");
	if (e->mtime < 0)
		fail("a time before the epoch");
	return ++s->n == s->stop_at ? 7 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const char *const prefixes[] = {"", "a/", "runs/seg/"};
	char prefix[64];
	size_t at = 1;
	if (data[0] < 3) {
		snprintf(prefix, sizeof prefix, "%s", prefixes[data[0]]);
	} else {
		size_t k = 0;
		while (at < size && data[at] && k < sizeof prefix - 1)
			prefix[k++] = (char)data[at++];
		prefix[k] = '\0';
		if (at < size)
			at++;
	}
	const char *body = (const char *)data + at;
	size_t n = size - at;
	char out[300];
	sv_s3_error_text(body, n, out, sizeof out);
	check_text(out, sizeof out);
	static const char *const tags[] = {"UploadId", "ETag", "Code", "IsTruncated", ""};
	for (size_t i = 0; i < sizeof tags / sizeof *tags; i++) {
		char small[8];
		sv_s3_xml_text(body, n, tags[i], out, sizeof out);
		if (strnlen(out, sizeof out) == sizeof out)
			fail("a tag's text without its NUL");
		sv_s3_xml_text(body, n, tags[i], small, sizeof small);
		if (strnlen(small, sizeof small) == sizeof small || strncmp(small, out, strlen(small)))
			fail("a tag's text cut short is not the start of the whole");
	}
	for (unsigned stop = 0; stop < 3; stop++) {
		struct seen s = {0, stop};
		bool more = true;
		char next[64] = "x";
		const char *why = (const char *)1;
		int rc = sv_s3_list_page(body, n, prefix, on_entry, &s, &more, next, sizeof next, &why);
		if (rc == -EBADMSG && (!why || why == (const char *)1))
			fail("a page refused without a reason");
		if (rc && rc != -EBADMSG && (rc != 7 || s.n != stop))
			fail("a callback's stop not returned as given");
		if (!rc && more && (why || !next[0] || strnlen(next, sizeof next) == sizeof next))
			fail("a page going on without a token");
		if (!rc && !more && why == (const char *)1)
			fail("why left unset");
		if (rc && more)
			fail("a stopped page going on");
	}
	/* The same bytes as a response's head, line by line. */
	struct sv_http_head h;
	sv_http_head_begin(&h);
	for (const char *p = body, *e; p < body + n; p = e + 1) {
		e = memchr(p, '\n', (size_t)(body + n - p));
		if (!e)
			e = body + n;
		sv_http_header(&h, p, (size_t)(e - p + (e < body + n)));
	}
	if (h.ranged && (h.first > h.last || (h.total != UINT64_MAX && h.last >= h.total)))
		fail("a range taken out of order");
	if ((h.ranged && h.last > INT64_MAX) || (h.length != UINT64_MAX && h.length > INT64_MAX) ||
	    (h.total != UINT64_MAX && h.total > INT64_MAX))
		fail("a number taken past INT64_MAX");
	if (h.status < 0 || h.status > 999)
		fail("a status out of range");
	if (strnlen(h.etag, sizeof h.etag) == sizeof h.etag ||
	    strnlen(h.modified, sizeof h.modified) == sizeof h.modified ||
	    strnlen(h.range, sizeof h.range) == sizeof h.range)
		fail("a header's text without its NUL");
	check_text(h.bad, sizeof h.bad);
	check_text(h.range, sizeof h.range);
	int w = sv_http_whole_body(&h, n, 64);
	if (w && w != -EFBIG && w != -EIO)
		fail("a body classified with another error");
	if (!w && n > 64)
		fail("a body past its cap taken");
	/* Numbers, percent-encoding and locations. */
	uint64_t v;
	if (!sv_parse_count(body, n, 1000000, &v) && v > 1000000)
		fail("a number past its cap");
	char dec[128];
	if (!sv_percent_decode(body, n, dec, sizeof dec) &&
	    (strnlen(dec, sizeof dec) == sizeof dec || strlen(dec) > n))
		fail("a decoded text without its NUL, or longer than its encoding");
	char *loc = strndup(body, n);
	if (loc) {
		char *shown = sv_location_shown(loc);
		if (shown && strlen(shown) > strlen(loc) + 3 * 8)
			fail("a location shown longer than it can be");
		free(shown);
		free(loc);
	}
	return 0;
}
