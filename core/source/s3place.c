/*
 * source/s3place.c - where an object in an S3 store is, and with what
 * credentials it is asked for: the settings (the command line's -o s3_*,
 * then the environment, then ~/.aws/config), the credentials (the
 * environment, then ~/.aws/credentials and ~/.aws/config under the
 * profile), and the object's URL (path-style on an endpoint of one's own,
 * virtual-hosted on AWS).  The requests are the S3 transport's (s3.c).
 */
#include "source/s3.h"

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
static const char *const s3_options[] = {"s3_endpoint", "s3_region", "s3_profile", "s3_path_style",
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

static int s3_option_check(const char *kv, struct sv_err *err)
{
	const char *eq = strchr(kv, '=');
	size_t k = eq ? (size_t)(eq - kv) : strlen(kv);
	return s3_option(kv, k, eq ? eq + 1 : "", eq ? strlen(eq + 1) : 0, NULL, err);
}

const struct sv_source_kind sv_s3_kind = {"s3", s3_options, s3_option_check};

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
		if (k < n && sv_key_listed(s3_options, p, k)) {
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

