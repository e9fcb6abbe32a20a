/*
 * util.c - errors with reasons, growable buffers, reference-counted blobs,
 * size parsing, file names, messages' characters, and the I/O and zlib
 * helpers the formats share (helpers.h).
 */
#include "savefs.h"

#include <errno.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int sv_err_set(struct sv_err *e, int code, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
		e->code = code;
	}
	return code;
}

void sv_err_clear(struct sv_err *e)
{
	if (e) {
		e->code = 0;
		e->msg[0] = '\0';
	}
}

void sv_buf_init(struct sv_buf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
}

void sv_buf_fini(struct sv_buf *b)
{
	if (!b)
		return;
	free(b->p);
	sv_buf_init(b);
}

int sv_buf_reserve(struct sv_buf *b, size_t n)
{
	if (b->len + n < n)
		return -ENOMEM;
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int sv_buf_add(struct sv_buf *b, const void *p, size_t n)
{
	int rc = sv_buf_reserve(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

int sv_buf_printf(struct sv_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	int rc = sv_buf_reserve(b, (size_t)n + 1);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

#define HUGE_PAGE ((uintptr_t)2 << 20)
#define BIG_BLOB ((size_t)8 << 20)

struct sv_blob *sv_blob_new(size_t len)
{
	if (len > SIZE_MAX - sizeof(struct sv_blob))
		return NULL;
	struct sv_blob *b = malloc(sizeof *b + len);
	if (!b)
		return NULL;
	b->refs = 1;
	b->spilled = 0;
	b->len = len;
	if (len >= BIG_BLOB) {
		/* A big blob is filled at once (a view built whole): in huge
		 * pages, its page faults are a few instead of one per 4 KB.
		 * (An index record this big is read into a file instead:
		 * sv_blob_new_spilled.) */
		uintptr_t start = ((uintptr_t)b->data + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
		uintptr_t end = ((uintptr_t)b->data + len) & ~(uintptr_t)(HUGE_PAGE - 1);
		if (end > start)
			madvise((void *)start, end - start, MADV_HUGEPAGE);
	}
	return b;
}

struct sv_blob *sv_blob_new_spilled(size_t len)
{
	if (len > SIZE_MAX - sizeof(struct sv_blob))
		return NULL;
	void *p;
	size_t cap;
	if (sv_tab_alloc(&p, &cap, sizeof(struct sv_blob) + len, 1))
		return NULL;
	struct sv_blob *b = p;
	b->refs = 1;
	b->spilled = 1;
	b->len = len;
	return b;
}

struct sv_blob *sv_blob_dup(const void *p, size_t len)
{
	struct sv_blob *b = sv_blob_new(len);
	if (b && len)
		memcpy(b->data, p, len);
	return b;
}

int sv_buf_init_blob(struct sv_buf *b)
{
	sv_buf_init(b);
	if (sv_buf_reserve(b, sizeof(struct sv_blob)))
		return -ENOMEM;
	b->len = sizeof(struct sv_blob);
	return 0;
}

struct sv_blob *sv_buf_take_blob(struct sv_buf *b)
{
	if (b->len < sizeof(struct sv_blob))
		return NULL;
	/* Shrunk to what it holds: a buffer grows by doubling. */
	struct sv_blob *blob = realloc(b->p, b->len);
	if (!blob)
		blob = (struct sv_blob *)b->p;
	blob->refs = 1;
	blob->spilled = 0;
	blob->len = b->len - sizeof(struct sv_blob);
	sv_buf_init(b);
	return blob;
}

struct sv_blob *sv_blob_ref(struct sv_blob *b)
{
	if (b)
		__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
	return b;
}

void sv_blob_unref(struct sv_blob *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		if (b->spilled)
			sv_tab_free(b);
		else
			free(b);
	}
}

void sv_opts_init(struct sv_opts *o)
{
	memset(o, 0, sizeof *o);
	o->cache_cap = SV_DEFAULT_CACHE;
	o->max_decode = SV_DEFAULT_MAX_DECODE;
	o->max_edit = SV_DEFAULT_MAX_EDIT;
	o->readahead = 8;
	o->max_open = 16;
}

int sv_parse_size(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9') /* strtoull would take " -1" */
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'B' || *end == 'b') && shift)
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int sv_inflate(const uint8_t *src, size_t n, uint8_t *dst, size_t want,
	       struct sv_err *err)
{
	if (n < 2 || (src[0] & 0x0f) != 8 || (src[0] >> 4) > 7 ||
	    ((src[0] << 8) | src[1]) % 31)
		return sv_err_set(err, -EBADMSG, "not a zlib stream");
	if (n > UINT_MAX || want > UINT_MAX)
		return sv_err_set(err, -EFBIG, "zlib stream too large");
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit(&z) != Z_OK)
		return sv_err_set(err, -ENOMEM, "out of memory");
	z.next_in = (Bytef *)(uintptr_t)src;
	z.avail_in = (uInt)n;
	z.next_out = dst;
	z.avail_out = (uInt)want;
	int zr = inflate(&z, Z_FINISH);
	if (zr == Z_BUF_ERROR && z.avail_out == 0 && z.avail_in > 0) {
		/* Output is full: the stream must end here, producing nothing. */
		uint8_t spare;
		z.next_out = &spare;
		z.avail_out = 1;
		zr = inflate(&z, Z_FINISH);
		if (z.avail_out == 0) {
			inflateEnd(&z);
			return sv_err_set(err, -EBADMSG,
					  "inflates past its declared size of %zu bytes",
					  want);
		}
	}
	size_t got = z.total_out;
	const char *zmsg = z.msg;
	int rc = 0;
	if (zr == Z_STREAM_END) {
		if (got != want)
			rc = sv_err_set(err, -EBADMSG,
					"inflates to %zu bytes, not the declared %zu",
					got, want);
	} else if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT) {
		rc = sv_err_set(err, -EBADMSG, "corrupt zlib stream (%s)",
				zmsg ? zmsg : "data error");
	} else if (zr == Z_MEM_ERROR) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	} else if (got == want) {
		rc = sv_err_set(err, -EBADMSG,
				"zlib stream is cut short: its end and checksum are missing");
	} else {
		rc = sv_err_set(err, -EBADMSG,
				"zlib stream ends early after %zu of %zu bytes",
				got, want);
	}
	inflateEnd(&z);
	return rc;
}

int sv_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool sv_zlib_like(const uint8_t *p, size_t n)
{
	return n >= 2 && (p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7 && !(((p[0] << 8) | p[1]) % 31);
}

int sv_inflate_any(const uint8_t *src, size_t n, uint64_t cap, struct sv_buf *out,
		   struct sv_err *err)
{
	if (!sv_zlib_like(src, n))
		return sv_err_set(err, -EBADMSG, "not a zlib stream");
	if (n > UINT_MAX)
		return sv_err_set(err, -EFBIG, "zlib stream too large");
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit(&z) != Z_OK)
		return sv_err_set(err, -ENOMEM, "out of memory");
	z.next_in = (Bytef *)(uintptr_t)src;
	z.avail_in = (uInt)n;
	size_t start = out->len;
	int zr = Z_OK, rc = 0;
	while (zr == Z_OK) {
		size_t room = n * 4 + 4096;
		if (out->len - start + room > cap + 1)
			room = (size_t)(cap + 1 - (out->len - start));
		if (room > (1u << 30))
			room = 1u << 30;
		if (sv_buf_reserve(out, room)) {
			rc = sv_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		z.next_out = out->p + out->len;
		z.avail_out = (uInt)room;
		zr = inflate(&z, Z_NO_FLUSH);
		out->len += room - z.avail_out;
		if (out->len - start > cap) {
			rc = sv_err_set(err, -EFBIG, "inflates past the limit of %llu bytes",
					(unsigned long long)cap);
			break;
		}
		if (zr == Z_BUF_ERROR && z.avail_in == 0) {
			rc = sv_err_set(err, -EBADMSG, "zlib stream ends early after %zu bytes",
					out->len - start);
			break;
		}
		if (zr == Z_BUF_ERROR)
			zr = Z_OK;
	}
	if (!rc && zr == Z_STREAM_END && z.avail_in)
		rc = sv_err_set(err, -EBADMSG, "%u bytes follow the zlib stream", z.avail_in);
	else if (!rc && zr == Z_MEM_ERROR)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	else if (!rc && zr != Z_STREAM_END)
		rc = sv_err_set(err, -EBADMSG, "corrupt zlib stream (%s)", z.msg ? z.msg : "data error");
	inflateEnd(&z);
	if (rc)
		out->len = start;
	return rc;
}

int sv_deflate(const uint8_t *p, size_t n, int level, struct sv_buf *out)
{
	uLong bound = compressBound((uLong)n);
	if (n > UINT_MAX || sv_buf_reserve(out, bound))
		return -ENOMEM;
	uLongf got = bound;
	if (compress2(out->p + out->len, &got, p, (uLong)n, level) != Z_OK)
		return -ENOMEM;
	out->len += got;
	return 0;
}

void sv_test_step(const char *step)
{
	const char *at = getenv("SAVEFS_TEST_KILL_AT");
	if (at && !strcmp(at, step))
		kill(getpid(), SIGKILL);
	at = getenv("SAVEFS_TEST_WAIT_AT");
	const char *go = getenv("SAVEFS_TEST_WAIT_FILE");
	if (!at || strcmp(at, step) || !go)
		return;
	char here[4096];
	snprintf(here, sizeof here, "%s.at", go);
	int fd = open(here, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 60000 && access(go, F_OK); i++)
		usleep(10000);
}

int sv_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *q = p;
	while (n) {
		ssize_t k = write(fd, q, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		q += k;
		n -= (size_t)k;
	}
	return 0;
}

int sv_copy_range(int fd_in, uint64_t off, int fd_out, uint64_t n)
{
	/* In the kernel where it can (no copy through user space; a reflink
	 * on file systems that share extents), else read and written. */
	while (n) {
		loff_t from = (loff_t)off;
		size_t want = n < (1u << 30) ? (size_t)n : (1u << 30);
		ssize_t k = copy_file_range(fd_in, &from, fd_out, NULL, want, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			      errno == EOPNOTSUPP || errno == EBADF))
			break;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO; /* the source ended early */
		off += (uint64_t)k;
		n -= (uint64_t)k;
	}
	if (!n)
		return 0;
	static const size_t chunk = 1 << 20;
	uint8_t *buf = malloc(n < chunk ? (n ? n : 1) : chunk);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	while (n) {
		size_t want = n < chunk ? (size_t)n : chunk;
		ssize_t k = pread(fd_in, buf, want, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (k == 0) {
			rc = -EIO;
			break;
		}
		rc = sv_write_all(fd_out, buf, (size_t)k);
		if (rc)
			break;
		off += (uint64_t)k;
		n -= (uint64_t)k;
	}
	free(buf);
	return rc;
}

/* The character at p[0..n) for a message: 'x', 'é' (UTF-8 kept whole),
 * or byte 0xNN. */
size_t sv_lower_bound(size_t n, bool (*below)(const void *arg, size_t i), const void *arg)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (below(arg, mid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int sv_dup_name(char *out, size_t cap, const char *name, unsigned k)
{
	const char *dot = strrchr(name, '.');
	int stem = dot && dot != name ? (int)(dot - name) : (int)strlen(name);
	return snprintf(out, cap, "%.*s~%u%s", stem, name, k, name + stem);
}

const char *sv_show_char(char buf[16], const uint8_t *p, size_t n)
{
	size_t k = 1;
	while (*p >= 0xC0 && k < n && k < 4 && (p[k] & 0xC0) == 0x80)
		k++;
	if (*p >= 0x20 && *p != 0x7F && (*p < 0x80 || k > 1))
		snprintf(buf, 16, "'%.*s'", (int)k, (const char *)p);
	else
		snprintf(buf, 16, "byte 0x%02x", *p);
	return buf;
}

int sv_write_replace(const char *path, mode_t mode, int (*fill)(int fd, void *arg), void *arg)
{
	size_t n = strlen(path) + 16;
	char *tmp = malloc(n);
	if (!tmp)
		return -ENOMEM;
	const char *slash = strrchr(path, '/');
	int dlen = slash ? (int)(slash - path + 1) : 0;
	snprintf(tmp, n, "%.*s.savefs-XXXXXX", dlen, path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;
		free(tmp);
		return rc;
	}
	int rc = 0;
	if (mode) {
		mode_t mask = umask(0);
		umask(mask);
		rc = fchmod(fd, mode & ~mask) ? -errno : 0;
	}
	if (!rc)
		rc = fill(fd, arg);
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

bool sv_path_within(const char *path, const char *dir)
{
	char *p = realpath(path, NULL), *d = realpath(dir, NULL);
	size_t n = d ? strlen(d) : 0;
	bool in = p && d && !strncmp(p, d, n) && (p[n] == '/' || p[n] == 0 || !strcmp(d, "/"));
	free(p);
	free(d);
	return in;
}

/* openat(2) of rel beneath dirfd one part at a time, none a link: for a
 * kernel without openat2(2). */
static int open_parts(int dirfd, const char *rel, int flags, mode_t mode)
{
	char *copy = strdup(rel);
	if (!copy)
		return -ENOMEM;
	int at = dirfd, rc = 0;
	char *save = NULL, *part = strtok_r(copy, "/", &save);
	while (part && !rc) {
		char *next = strtok_r(NULL, "/", &save);
		if (!strcmp(part, "..")) {
			rc = -EXDEV;
			break;
		}
		int fd = next ? openat(at, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			      : openat(at, part, flags | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0)
			rc = -errno;
		if (at != dirfd)
			close(at);
		at = fd;
		part = next;
	}
	free(copy);
	if (rc)
		return rc;
	return at == dirfd ? openat(dirfd, ".", flags | O_CLOEXEC, mode) : at;
}

int sv_open_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
	if (!*rel)
		rel = ".";
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	for (int tries = 0;; tries++) {
		long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
		if (fd >= 0)
			return (int)fd;
		if ((errno == EINTR || errno == EAGAIN) && tries < 16)
			continue; /* a rename elsewhere raced the walk: again */
		if (errno == ENOSYS)
			return open_parts(dirfd, rel, flags, mode);
		return -errno;
	}
}

int sv_parent_beneath(int dirfd, const char *rel, const char **leaf)
{
	const char *slash = strrchr(rel, '/');
	*leaf = slash ? slash + 1 : rel;
	if (!slash)
		return sv_open_beneath(dirfd, ".", O_PATH | O_DIRECTORY, 0);
	char *dir = strndup(rel, (size_t)(slash - rel));
	if (!dir)
		return -ENOMEM;
	int fd = sv_open_beneath(dirfd, dir, O_PATH | O_DIRECTORY, 0);
	free(dir);
	return fd;
}

int sv_parse_count(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	if (!n || n > 20 || max > (uint64_t)INT64_MAX)
		return -EINVAL;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (max - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int sv_percent_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -EINVAL;
			int a = sv_hexval(s[i + 1]), b = sv_hexval(s[i + 2]);
			if (a < 0 || b < 0)
				return -EINVAL;
			c = a << 4 | b;
			i += 2;
		} else if (c == '+') {
			c = ' '; /* S3 encodes a space so in listings */
		}
		if (!c)
			return -EINVAL;
		if (k + 1 >= cap)
			return -ENAMETOOLONG;
		out[k++] = (char)c;
	}
	out[k] = '\0';
	return 0;
}

char *sv_location_shown(const char *loc)
{
	/* Each credential becomes "***": at most three bytes more each. */
	size_t n = strlen(loc), cap = n + 1;
	for (const char *c = loc; *c; c++)
		cap += *c == '=' || *c == ':' ? 3 : 0;
	char *out = malloc(cap), *w = out;
	if (!out)
		return NULL;
	const char *p = loc;
	/* scheme://user:password@host: the password goes. */
	const char *sch = strstr(loc, "://");
	if (sch) {
		const char *host = sch + 3, *end = host + strcspn(host, "/?#");
		const char *at = memrchr(host, '@', (size_t)(end - host));
		const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
		if (colon && at > colon + 1) {
			memcpy(w, loc, (size_t)(colon + 1 - loc));
			w += colon + 1 - loc;
			memcpy(w, "***", 3);
			w += 3;
			p = at;
		}
	}
	/* A presigned URL's query: its signature, credential and token. */
	static const char *const keys[] = {"X-Amz-Signature=", "X-Amz-Credential=",
					   "X-Amz-Security-Token=", "Signature=", "AWSAccessKeyId=",
					   NULL};
	const char *q = strchr(p, '?');
	while (*p) {
		if (q && p > q && (p[-1] == '?' || p[-1] == '&')) {
			const char *const *k;
			for (k = keys; *k && strncasecmp(p, *k, strlen(*k)); k++)
				;
			if (*k) {
				size_t kl = strlen(*k);
				memcpy(w, p, kl);
				w += kl;
				p += kl;
				size_t vl = strcspn(p, "&#");
				if (vl) {
					memcpy(w, "***", 3);
					w += 3;
					p += vl;
				}
				continue;
			}
		}
		*w++ = *p++;
	}
	*w = '\0';
	return out;
}

bool sv_real_name_ok(const char *s)
{
	return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/') && strlen(s) <= 255;
}

bool sv_name_ok(const char *s)
{
	if (!*s || !strcmp(s, ".") || !strcmp(s, "..") || strlen(s) > 255)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p == '/' || *p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

void sv_u64set_add(struct sv_u64set *s, uint64_t x)
{
	if (!x || s->all)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		uint64_t *p = realloc(s->v, cap * sizeof *p);
		if (!p) {
			s->all = true;
			return;
		}
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void sv_u64set_sort(struct sv_u64set *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof *s->v, cmp_u64);
}

bool sv_u64set_has(const struct sv_u64set *s, uint64_t x)
{
	return s->all || (x && s->n && bsearch(&x, s->v, s->n, sizeof *s->v, cmp_u64));
}

void sv_u64set_clear(struct sv_u64set *s)
{
	s->n = 0;
	s->all = false;
}

int sv_grow_cap(size_t cap, size_t need, size_t size, size_t *out)
{
	size_t nc = cap ? cap : 16;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return -ENOMEM;
		nc *= 2;
	}
	if (size && nc > SIZE_MAX / size)
		return -ENOMEM;
	*out = nc;
	return 0;
}

int sv_grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t nc;
	if (need <= *cap)
		return 0;
	if (sv_grow_cap(*cap, need, size, &nc))
		return -ENOMEM;
	void *p = realloc(*v, nc * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = nc;
	return 0;
}

void sv_give_back(const void *p, size_t from, size_t to)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (!page || (page & (page - 1)))
		return;
	uintptr_t a = ((uintptr_t)p + from + page - 1) & ~(page - 1);
	uintptr_t b = ((uintptr_t)p + to) & ~(page - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

void sv_u64set_fini(struct sv_u64set *s)
{
	free(s->v);
	*s = (struct sv_u64set){0};
}

bool sv_key_listed(const char *const *list, const char *key, size_t len)
{
	for (const char *const *o = list; o && *o; o++)
		if (strlen(*o) == len && !memcmp(*o, key, len))
			return true;
	return false;
}
