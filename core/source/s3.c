/*
 * source/s3.c - where an object in an S3 store is, and with what
 * credentials it is asked for: the settings (the command line's -o s3_*,
 * then the environment, then ~/.aws/config), the credentials (the
 * environment, then ~/.aws/credentials and ~/.aws/config under the
 * profile), the object's URL (path-style on an endpoint of one's own,
 * virtual-hosted on AWS), and what an S3 error body says.  The requests
 * themselves are http.c's, signed by libcurl (SigV4).
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The options of S3 locations (the source table's, source.c): where the
 * store is and how it is asked.  Each open reads them from the options it
 * was given; nothing is kept between opens. */
const char *const sv_s3_options[] = {"s3_endpoint", "s3_region", "s3_profile", "s3_path_style",
				     "s3_part_size", NULL};

struct s3_opts {
	char endpoint[1024], region[128], profile[64];
	int path_style;   /* -1: unset */
	uint64_t part;    /* 0: unset */
};

/* One "key=value" (value `vlen` bytes) checked and, if `o`, taken into o:
 * 0, or -EINVAL with the reason. */
static int s3_option(const char *kv, size_t k, const char *v, size_t vlen, struct s3_opts *o,
		     struct sv_err *err)
{
	if (!vlen)
		return sv_err_set(err, -EINVAL, "-o %.*s: a value is needed (%.*s=...)", (int)k, kv,
				  (int)k, kv);
	char val[1024];
	if (vlen >= sizeof val)
		return sv_err_set(err, -EINVAL, "-o %.*s: the value is too long", (int)k, kv);
	memcpy(val, v, vlen);
	val[vlen] = '\0';
	char *dst = NULL;
	size_t cap = 0;
	if (k == 11 && !strncmp(kv, "s3_endpoint", k)) {
		if (strncasecmp(val, "http://", 7) && strncasecmp(val, "https://", 8))
			return sv_err_set(err, -EINVAL, "-o s3_endpoint=%s: not an http:// or "
					  "https:// URL", val);
		dst = o ? o->endpoint : NULL, cap = sizeof o->endpoint;
	} else if (k == 9 && !strncmp(kv, "s3_region", k)) {
		dst = o ? o->region : NULL, cap = sizeof o->region;
	} else if (k == 10 && !strncmp(kv, "s3_profile", k)) {
		dst = o ? o->profile : NULL, cap = sizeof o->profile;
	} else if (k == 13 && !strncmp(kv, "s3_path_style", k)) {
		if (strcmp(val, "0") && strcmp(val, "1"))
			return sv_err_set(err, -EINVAL, "-o s3_path_style=%s: 1 (path-style URLs) "
					  "or 0 (the bucket in the host name)", val);
		if (o)
			o->path_style = val[0] == '1';
		return 0;
	} else if (k == 12 && !strncmp(kv, "s3_part_size", k)) {
		uint64_t n;
		if (sv_parse_size(val, &n) || n < (5u << 20) || n > (5ull << 30))
			return sv_err_set(err, -EINVAL, "-o s3_part_size=%s: a size from 5M to 5G "
					  "(an S3 multipart upload's part)", val);
		if (o)
			o->part = n;
		return 0;
	} else {
		return sv_err_set(err, -EINVAL, "-o %.*s: not an S3 option", (int)k, kv);
	}
	if (vlen >= cap)
		return sv_err_set(err, -EINVAL, "-o %.*s: the value is too long", (int)k, kv);
	if (dst)
		memcpy(dst, val, vlen + 1);
	return 0;
}

int sv_s3_option_check(const char *kv, struct sv_err *err)
{
	const char *eq = strchr(kv, '=');
	size_t k = eq ? (size_t)(eq - kv) : strlen(kv);
	return s3_option(kv, k, eq ? eq + 1 : "", eq ? strlen(eq + 1) : 0, NULL, err);
}

bool sv_source_is_s3(const char *path)
{
	return !strncmp(path, "s3://", 5);
}

/* The S3 options among `opts` ("key=value,...", anyone's; the last one
 * given counts): 0, or -EINVAL. */
static int s3_opts_read(const char *opts, struct s3_opts *o, struct sv_err *err)
{
	memset(o, 0, sizeof *o);
	o->path_style = -1;
	for (const char *p = opts; p && *p;) {
		size_t n = strcspn(p, ",");
		size_t k = strcspn(p, "=");
		if (k < n && sv_key_listed(sv_s3_options, p, k)) {
			int rc = s3_option(p, k, p + k + 1, n - k - 1, o, err);
			if (rc)
				return rc;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

/* ---- the AWS files ------------------------------------------------------------ */

/*
 * Value of `key` in section `section` of the INI file at path, into out:
 * 1 found, 0 not (or no such file); *had_section set when the section is
 * there.  Lines "key = value"; "#" and ";" comments.
 */
static int ini_get(const char *path, const char *section, const char *key, char *out,
		   size_t cap, bool *had_section)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	if (!f)
		return 0;
	char line[1024];
	bool in = false;
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		char *p = line;
		while (isspace((unsigned char)*p))
			p++;
		char *end = p + strlen(p);
		while (end > p && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*p == '#' || *p == ';' || !*p)
			continue;
		if (*p == '[') {
			char *close = strchr(p, ']');
			if (close) {
				*close = '\0';
				char *name = p + 1;
				while (isspace((unsigned char)*name))
					name++;
				in = !strcmp(name, section);
				if (in && had_section)
					*had_section = true;
			}
			continue;
		}
		char *eq = strchr(p, '=');
		if (!in || !eq)
			continue;
		char *k = p, *ke = eq;
		while (ke > k && isspace((unsigned char)ke[-1]))
			ke--;
		*ke = '\0';
		char *v = eq + 1;
		while (isspace((unsigned char)*v))
			v++;
		if (!strcmp(k, key) && strlen(v) < cap) {
			strcpy(out, v);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* A file's path: the environment's, else ~/.aws/NAME (into buf). */
static const char *aws_file(const char *env, const char *name, char *buf, size_t cap)
{
	const char *e = getenv(env);
	if (e && *e)
		return e;
	const char *home = getenv("HOME");
	if (!home || !*home)
		return NULL;
	snprintf(buf, cap, "%s/.aws/%s", home, name);
	return buf;
}

/* `key` of the profile: ~/.aws/config's section ("default", or "profile
 * NAME"), the credentials file's (NAME) first when `creds`. */
static bool profile_get(const char *profile, const char *key, bool creds, char *out,
			size_t cap, bool *had)
{
	char cbuf[4096], fbuf[4096], section[300];
	const char *config = aws_file("AWS_CONFIG_FILE", "config", cbuf, sizeof cbuf);
	const char *credentials = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials", fbuf,
					   sizeof fbuf);
	if (creds && ini_get(credentials, profile, key, out, cap, had))
		return true;
	if (!strcmp(profile, "default"))
		snprintf(section, sizeof section, "default");
	else
		snprintf(section, sizeof section, "profile %s", profile);
	return ini_get(config, section, key, out, cap, had) > 0;
}

/* ---- the place -------------------------------------------------------------------- */

int sv_s3_encode(struct sv_buf *b, const char *key, bool slash)
{
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		char e[4];
		if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' ||
		    (slash && *p == '/')) {
			if (sv_buf_add(b, p, 1))
				return -ENOMEM;
			continue;
		}
		snprintf(e, sizeof e, "%%%02X", *p);
		if (sv_buf_add(b, e, 3))
			return -ENOMEM;
	}
	return 0;
}

static int place_fail(struct sv_s3_place *p, int rc, struct sv_err *err)
{
	sv_s3_place_fini(p);
	if (rc == -ENOMEM)
		return sv_err_set(err, rc, "out of memory");
	return rc;
}

int sv_s3_place(const char *location, const char *opts, struct sv_s3_place *p,
		struct sv_err *err)
{
	memset(p, 0, sizeof *p);
	struct s3_opts opt;
	int orc = s3_opts_read(opts, &opt, err);
	if (orc)
		return orc;
	const char *b = location + 5, *slash = strchr(b, '/');
	size_t blen = slash ? (size_t)(slash - b) : strlen(b);
	bool bad = blen == 0 || blen > 63;
	for (size_t i = 0; i < blen; i++)
		if (!isalnum((unsigned char)b[i]) && b[i] != '-' && b[i] != '.' && b[i] != '_')
			bad = true;
	if (bad)
		return sv_err_set(err, -EINVAL, "%s: not s3://BUCKET/KEY (a bucket's name is 1 to "
				  "63 letters, digits, '-', '.' and '_')", location);
	p->bucket = strndup(b, blen);
	p->key = strdup(slash ? slash + 1 : "");
	if (!p->bucket || !p->key)
		return place_fail(p, -ENOMEM, err);

	/* The profile: named on the command line or in the environment, then
	 * it must exist; else "default", if it does. */
	const char *named = opt.profile[0] ? opt.profile : getenv("AWS_PROFILE");
	if (named && !*named)
		named = NULL;
	const char *profile = named ? named : "default";
	snprintf(p->profile, sizeof p->profile, "%s", profile);
	bool had = false;
	char v[1024];

	/* Credentials: the environment's, unless a profile is named on the
	 * command line; then the profile's; else none (an anonymous read). */
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	if (!opt.profile[0] && ak && *ak && sk && *sk) {
		const char *tok = getenv("AWS_SESSION_TOKEN");
		p->user = strdup(ak);
		p->secret = strdup(sk);
		if (!p->user || !p->secret || (tok && *tok && !(p->token = strdup(tok))))
			return place_fail(p, -ENOMEM, err);
	} else if (profile_get(profile, "aws_access_key_id", true, v, sizeof v, &had)) {
		if (!(p->user = strdup(v)))
			return place_fail(p, -ENOMEM, err);
		if (!profile_get(profile, "aws_secret_access_key", true, v, sizeof v, &had)) {
			sv_s3_place_fini(p);
			return sv_err_set(err, -EACCES, "%s: profile %s has aws_access_key_id but no "
					  "aws_secret_access_key", location, profile);
		}
		if (!(p->secret = strdup(v)))
			return place_fail(p, -ENOMEM, err);
		if (profile_get(profile, "aws_session_token", true, v, sizeof v, &had) &&
		    !(p->token = strdup(v)))
			return place_fail(p, -ENOMEM, err);
	} else {
		profile_get(profile, "region", false, v, sizeof v, &had);
		if (named && !had) {
			sv_s3_place_fini(p);
			return sv_err_set(err, -EACCES, "%s: no profile %s in ~/.aws/credentials or "
					  "~/.aws/config", location, named);
		}
	}

	/* The region and the endpoint. */
	const char *region = opt.region[0] ? opt.region : getenv("AWS_REGION");
	if (!region || !*region)
		region = getenv("AWS_DEFAULT_REGION");
	char rbuf[128];
	if ((!region || !*region) && profile_get(profile, "region", false, rbuf, sizeof rbuf, NULL))
		region = rbuf;
	if (!region || !*region)
		region = "us-east-1";
	if (strlen(region) >= sizeof p->region) {
		sv_s3_place_fini(p);
		return sv_err_set(err, -EINVAL, "%s: the region \"%.80s\" is too long", location,
				  region);
	}
	memcpy(p->region, region, strlen(region) + 1);
	snprintf(p->sigv4, sizeof p->sigv4, "aws:amz:%s:s3", p->region);
	const char *endpoint = opt.endpoint[0] ? opt.endpoint : getenv("AWS_ENDPOINT_URL_S3");
	if (!endpoint || !*endpoint)
		endpoint = getenv("AWS_ENDPOINT_URL");
	char ebuf[1024];
	if ((!endpoint || !*endpoint) &&
	    profile_get(profile, "endpoint_url", false, ebuf, sizeof ebuf, NULL))
		endpoint = ebuf;
	if (endpoint && !*endpoint)
		endpoint = NULL;
	bool path_style = opt.path_style >= 0 ? opt.path_style == 1 : endpoint != NULL;
	p->part = opt.part ? opt.part : SV_S3_PART;

	/* The bucket's URL (ending in '/'), then the object's. */
	struct sv_buf u;
	sv_buf_init(&u);
	int rc = 0;
	if (!endpoint) {
		rc = path_style ? sv_buf_printf(&u, "https://s3.%s.amazonaws.com/%s/", p->region,
						p->bucket)
				: sv_buf_printf(&u, "https://%s.s3.%s.amazonaws.com/", p->bucket,
						p->region);
	} else {
		size_t el = strlen(endpoint);
		while (el && endpoint[el - 1] == '/')
			el--;
		const char *host = strstr(endpoint, "://") + 3;
		if (path_style)
			rc = sv_buf_printf(&u, "%.*s/%s/", (int)el, endpoint, p->bucket);
		else
			rc = sv_buf_printf(&u, "%.*s%s.%.*s/", (int)(host - endpoint), endpoint,
					   p->bucket, (int)(endpoint + el - host), host);
	}
	if (!rc)
		rc = sv_buf_add(&u, "", 1);
	if (rc) {
		sv_buf_fini(&u);
		return place_fail(p, -ENOMEM, err);
	}
	p->bucket_url = (char *)u.p;
	sv_buf_init(&u);
	rc = sv_buf_add(&u, p->bucket_url, strlen(p->bucket_url));
	if (!rc)
		rc = sv_s3_encode(&u, p->key, true);
	if (!rc)
		rc = sv_buf_add(&u, "", 1);
	if (rc) {
		sv_buf_fini(&u);
		return place_fail(p, -ENOMEM, err);
	}
	p->url = (char *)u.p;
	return 0;
}

void sv_s3_place_fini(struct sv_s3_place *p)
{
	free(p->bucket);
	free(p->key);
	free(p->url);
	free(p->bucket_url);
	free(p->user);
	if (p->secret)
		memset(p->secret, 0, strlen(p->secret));
	free(p->secret);
	free(p->token);
	memset(p, 0, sizeof *p);
}

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
		    int (*fn)(void *arg, const struct sv_s3_entry *e), void *arg, bool *more,
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
			struct sv_s3_entry e = {rest, kinds[k].dir, 0, "", 0};
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
