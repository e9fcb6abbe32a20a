/*
 * source/s3xml.c - what a store's XML answers say: an error's code and
 * message, one element's text, and a page of a listing (ListObjectsV2),
 * read strictly: a page is taken whole or refused with the reason.
 */
#include "source/s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- what an error says ---------------------------------------------------------- */

/* The text of <tag>...</tag> in body[0..n), into out ("" if none). */
static void xml_text(const char *body, size_t n, const char *tag, char *out, size_t cap)
{
	char open[64], close[64];
	snprintf(open, sizeof open, "<%s>", tag);
	snprintf(close, sizeof close, "</%s>", tag);
	out[0] = '\0';
	const char *a = memmem(body, n, open, strlen(open));
	if (!a)
		return;
	a += strlen(open);
	const char *b = memmem(a, n - (size_t)(a - body), close, strlen(close));
	if (!b)
		return;
	size_t k = (size_t)(b - a) < cap - 1 ? (size_t)(b - a) : cap - 1;
	for (size_t i = 0; i < k; i++)
		out[i] = isprint((unsigned char)a[i]) ? a[i] : '?';
	out[k] = '\0';
}

void sv_s3_error_text(const char *body, size_t n, char *out, size_t cap)
{
	char code[128], msg[256];
	xml_text(body, n, "Code", code, sizeof code);
	xml_text(body, n, "Message", msg, sizeof msg);
	static const struct { const char *code, *gloss; } known[] = {
		{"NoSuchKey", "no such key in the bucket"},
		{"NoSuchBucket", "no such bucket"},
		{"AccessDenied", "access denied"},
		{"InvalidAccessKeyId", "the store knows no such access key"},
		{"SignatureDoesNotMatch", "the request's signature does not match: a wrong "
					  "secret key"},
		{"RequestTimeTooSkewed", "this machine's clock is too far from the store's"},
		{"PreconditionFailed", "the object is not the one read"},
	};
	for (size_t i = 0; !msg[0] && i < sizeof known / sizeof *known; i++)
		if (!strcmp(code, known[i].code))
			snprintf(msg, sizeof msg, "%s", known[i].gloss);
	if (code[0] && msg[0])
		snprintf(out, cap, "%s: %s", code, msg);
	else
		snprintf(out, cap, "%s", code);
}

void sv_s3_xml_text(const char *body, size_t n, const char *tag, char *out, size_t cap)
{
	xml_text(body, n, tag, out, cap);
}

/* XML's five entities and its numeric character references, in place:
 * false if one stands for a NUL or is not one XML allows. */
static bool xml_unescape(char *t)
{
	static const struct { const char *e; char c; } ents[] = {
		{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''},
	};
	char *w = t;
	bool ok = true;
	for (const char *p = t; *p;) {
		size_t i;
		for (i = 0; i < sizeof ents / sizeof *ents; i++)
			if (!strncmp(p, ents[i].e, strlen(ents[i].e)))
				break;
		if (i < sizeof ents / sizeof *ents) {
			*w++ = ents[i].c;
			p += strlen(ents[i].e);
		} else if (p[0] == '&' && p[1] == '#') {
			/* &#13; or &#x0D;: a byte (a key with characters beyond
			 * ASCII comes percent-encoded: encoding-type=url). */
			char *end;
			unsigned long v = p[2] == 'x' ? strtoul(p + 3, &end, 16) : strtoul(p + 2, &end, 10);
			if (*end != ';' || !v || v > 0x7f)
				ok = false;
			*w++ = (char)(v && v <= 0x7f ? v : '?');
			p = *end == ';' ? end + 1 : end;
		} else {
			*w++ = *p++;
		}
	}
	*w = '\0';
	return ok;
}

/* The text of <tag> within [a, b), unescaped, into out: 1, 0 if there is
 * none, -1 if it is there but cannot be taken (longer than cap allows, a
 * NUL, a reference XML does not allow). */
static int field(const char *a, const char *b, const char *tag, char *out, size_t cap)
{
	char open[32], close[32];
	snprintf(open, sizeof open, "<%s>", tag);
	snprintf(close, sizeof close, "</%s>", tag);
	const char *t = memmem(a, (size_t)(b - a), open, strlen(open));
	if (!t)
		return 0;
	t += strlen(open);
	const char *e = memmem(t, (size_t)(b - t), close, strlen(close));
	if (!e || (size_t)(e - t) >= cap || memchr(t, '\0', (size_t)(e - t)))
		return -1;
	memcpy(out, t, (size_t)(e - t));
	out[e - t] = '\0';
	return xml_unescape(out) ? 1 : -1;
}

/* An ISO 8601 time as S3 lists it ("2026-11-27T07:30:33.000Z"): seconds
 * since the epoch, or 0 if it is not one. */
static int64_t iso_time(const char *t)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	const char *end = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return 0;
	time_t s = timegm(&tm);
	return s < 0 ? 0 : (int64_t)s;
}

int sv_s3_list_page(const char *body, size_t n, const char *prefix,
		    int (*fn)(void *arg, const struct sv_remote_entry *e), void *arg, bool *more,
		    char *next, size_t cap, const char **why)
{
	*more = false;
	*why = NULL;
	size_t plen = strlen(prefix);
	const char *end = body + n;
	/* A page is taken whole or not at all: one cut short (a connection
	 * that broke, a proxy's limit) would show a folder with less in it. */
	const char *top = memmem(body, n, "<ListBucketResult", 17);
	const char *last = top ? memmem(top, (size_t)(end - top), "</ListBucketResult>", 19) : NULL;
	if (!top || !last) {
		*why = top ? "a listing page cut short (no </ListBucketResult>)"
			   : "not a listing (no <ListBucketResult>)";
		return -EBADMSG;
	}
	end = last;
	/* Keys percent-encoded (encoding-type=url, asked for): any byte a
	 * key holds comes through, where XML 1.0 cannot carry some. */
	char v[1100];
	xml_text(top, (size_t)(end - top), "EncodingType", v, sizeof v);
	bool url = !strcmp(v, "url");
	int rc = 0;
	/* Objects (<Contents>) and, with a delimiter, the prefixes under
	 * this one (<CommonPrefixes>): in the page's order, each kind. */
	static const struct { const char *open, *close, *name; bool dir; } kinds[] = {
		{"<Contents>", "</Contents>", "Key", false},
		{"<CommonPrefixes>", "</CommonPrefixes>", "Prefix", true},
	};
	for (size_t k = 0; !rc && k < 2; k++) {
		const char *t = top;
		while (!rc && t < end) {
			const char *a = memmem(t, (size_t)(end - t), kinds[k].open, strlen(kinds[k].open));
			if (!a)
				break;
			a += strlen(kinds[k].open);
			const char *b = memmem(a, (size_t)(end - a), kinds[k].close,
					       strlen(kinds[k].close));
			if (!b) {
				*why = "an entry cut short";
				return -EBADMSG;
			}
			t = b + strlen(kinds[k].close);
			char raw[1100], name[1100], size[32] = "", etag[300] = "", when[64] = "";
			int f = field(a, b, kinds[k].name, raw, sizeof raw);
			if (f <= 0) {
				*why = f ? "an entry whose name cannot be read" : "an entry without a name";
				return -EBADMSG;
			}
			if (url ? sv_percent_decode(raw, strlen(raw), name, sizeof name)
				: (snprintf(name, sizeof name, "%s", raw), 0))
				continue; /* a NUL in a name: not one a file can have */
			if (strncmp(name, prefix, plen))
				continue;
			char *rest = name + plen;
			size_t len = strlen(rest);
			if (kinds[k].dir && len && rest[len - 1] == '/')
				rest[--len] = '\0';
			if (!len || strchr(rest, '/'))
				continue;
			struct sv_remote_entry e = {rest, kinds[k].dir, 0, "", 0};
			if (!kinds[k].dir) {
				if (field(a, b, "Size", size, sizeof size) != 1 ||
				    sv_parse_count(size, strlen(size), INT64_MAX, &e.size)) {
					*why = "an object whose <Size> is not a size";
					return -EBADMSG;
				}
				if (field(a, b, "ETag", etag, sizeof etag) < 0) {
					*why = "an ETag longer than 255 bytes";
					return -EBADMSG;
				}
				for (char *c = etag; *c; c++)
					if (!isprint((unsigned char)*c))
						*c = '?';
				field(a, b, "LastModified", when, sizeof when);
				e.etag = etag;
				e.mtime = iso_time(when);
			}
			rc = fn(arg, &e);
		}
	}
	if (rc)
		return rc;
	xml_text(top, (size_t)(end - top), "IsTruncated", v, sizeof v);
	if (strcmp(v, "true"))
		return 0;
	v[0] = '\0';
	if (field(top, end, "NextContinuationToken", v, sizeof v) != 1 || !v[0] ||
	    strlen(v) >= cap) {
		*why = v[0] ? "a continuation token too long" : "a truncated page without a "
								  "continuation";
		return -EBADMSG;
	}
	memcpy(next, v, strlen(v) + 1);
	*more = true;
	return 0;
}
