/*
 * index.c - the persistent index: what a format found in a container (a
 * listing's names, a log's line offsets, a chunk table), kept between
 * mounts in a directory (under $XDG_CACHE_HOME/savefs/ by default).
 *
 * A record is one file, named by a hash of what identifies it (the format
 * and its index version, what is kept, the container's device and inode),
 * and holds a header that says it all again in full: the container's
 * device, inode, size, mtime and ctime as read, the format, the version,
 * what, the payload's length and its xxh3.  A record is used only if every
 * field matches: a container changed in any way moves its ctime (which
 * nothing but the kernel sets), so a changed container never meets a
 * stale record; a truncated, damaged or foreign file matches nothing and
 * is removed.  A record is written beside and renamed into place, so that
 * two mounts writing at once leave one of the two whole.  The directory is
 * capped in bytes: after a store, the least recently used records (their
 * mtime, set at each use) go until it fits.
 */
#include "savefs.h"

#include <dirent.h>
#include <errno.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define MAGIC "savefs-index\n\0\0"
#define MAGIC_LEN 16

struct head {
	char magic[MAGIC_LEN];
	uint64_t dev, ino, size;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
	uint32_t version;
	uint32_t payload_len_lo, payload_len_hi;
	uint32_t pad;
	uint64_t payload_hash;
	char format[32];
	char what[32];
};
/* (tests/tools/recordtool.c writes records of this layout.) */
_Static_assert(sizeof(struct head) == SV_INDEX_HEAD && offsetof(struct head, payload_hash) == 88,
	       "the record's layout");

/* Reads n bytes at off: 0, or -errno (-EIO if the file is shorter). */
static int pread_all(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		got += (size_t)k;
	}
	return 0;
}

int sv_index_dir(char *buf, size_t size)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;
	if (xdg && *xdg == '/')
		n = snprintf(buf, size, "%s/savefs", xdg);
	else if (home && *home)
		n = snprintf(buf, size, "%s/.cache/savefs", home);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	/* Made 0700 when first needed (make_dirs); one that is there must be
	 * a directory of this user's, closed to everyone else. */
	struct stat st;
	if (!lstat(buf, &st) && (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
				 (st.st_mode & 0077)))
		return -EPERM;
	return 0;
}


static void fill_head(struct head *h, const struct sv_index_key *k, uint64_t len, uint64_t hash)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, MAGIC, MAGIC_LEN);
	h->dev = (uint64_t)k->st.st_dev;
	h->ino = (uint64_t)k->st.st_ino;
	h->size = (uint64_t)k->st.st_size;
	h->mtime_s = k->st.st_mtim.tv_sec;
	h->mtime_ns = k->st.st_mtim.tv_nsec;
	h->ctime_s = k->st.st_ctim.tv_sec;
	h->ctime_ns = k->st.st_ctim.tv_nsec;
	h->version = k->version;
	h->payload_len_lo = (uint32_t)len;
	h->payload_len_hi = (uint32_t)(len >> 32);
	h->payload_hash = hash;
	snprintf(h->format, sizeof h->format, "%s", k->format);
	snprintf(h->what, sizeof h->what, "%s", k->what);
}

/* The record's path (a new string), or NULL. */
static char *record_path(const char *dir, const struct sv_index_key *k)
{
	char id[256];
	int n = snprintf(id, sizeof id, "%s\n%u\n%s\n%llu\n%llu", k->format, k->version, k->what,
			 (unsigned long long)k->st.st_dev, (unsigned long long)k->st.st_ino);
	if (n < 0 || (size_t)n >= sizeof id)
		return NULL;
	XXH128_hash_t h = XXH3_128bits(id, (size_t)n);
	size_t len = strlen(dir) + 48;
	char *p = malloc(len);
	if (p)
		snprintf(p, len, "%s/%016llx%016llx", dir, (unsigned long long)h.high64,
			 (unsigned long long)h.low64);
	return p;
}

static bool key_ok(const struct sv_index_key *k)
{
	return k->format && k->what && strlen(k->format) < 32 && strlen(k->what) < 32;
}

void sv_index_drop(const char *dir, const struct sv_index_key *k)
{
	char *path = key_ok(k) ? record_path(dir, k) : NULL;
	if (path)
		unlink(path);
	free(path);
}

/* What sv_index_store writes and read_payload reads at a time. */
#define STORE_PIECE ((size_t)1 << 18)

/* A record's payload of len bytes past the header, whose xxh3 is hash,
 * into a new blob: read and hashed a piece at a time, each counted.  One
 * past the spill threshold (a log's scan of 17 MB, kept for the mount's
 * life) lives in a file, so that what the pass touched is shed behind it
 * instead of held whole on the heap.  0, or -EBADMSG (*out NULL). */
static int read_payload(int fd, size_t len, uint64_t hash, struct sv_blob **out)
{
	struct sv_blob *b = len > SV_TAB_SPILL ? sv_blob_new_spilled(len) : sv_blob_new(len);
	XXH3_state_t *st = XXH3_createState();
	int rc = b && st ? 0 : -ENOMEM;
	if (!rc)
		XXH3_64bits_reset(st);
	for (size_t at = 0; !rc && at < len; at += STORE_PIECE) {
		size_t m = len - at < STORE_PIECE ? len - at : STORE_PIECE;
		rc = pread_all(fd, b->data + at, m, (off_t)(SV_INDEX_HEAD + at));
		if (!rc)
			XXH3_64bits_update(st, b->data + at, m);
		sv_tab_touch(m);
	}
	if (!rc && XXH3_64bits_digest(st) != hash)
		rc = -EBADMSG;
	XXH3_freeState(st);
	if (rc) {
		sv_blob_unref(b);
		b = NULL;
	}
	*out = b;
	return rc ? -EBADMSG : 0;
}

int sv_index_load(const char *dir, const struct sv_index_key *k, uint64_t max,
		  struct sv_blob **out)
{
	*out = NULL;
	if (!key_ok(k))
		return -EINVAL;
	char *path = record_path(dir, k);
	if (!path)
		return -ENOMEM;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;
		free(path);
		return e == ENOENT ? -ENOENT : -e;
	}
	struct head h, want;
	struct stat st;
	int rc = -EBADMSG;
	struct sv_blob *b = NULL;
	if (!fstat(fd, &st) && (uint64_t)st.st_size >= sizeof h && pread_all(fd, &h, sizeof h, 0) == 0) {
		uint64_t len = (uint64_t)h.payload_len_lo | (uint64_t)h.payload_len_hi << 32;
		fill_head(&want, k, len, h.payload_hash);
		bool whole = (uint64_t)st.st_size == sizeof h + len;
		if (!memcmp(&h, &want, sizeof h) && whole) {
			if (len > max)
				rc = -EFBIG;
			else
				rc = read_payload(fd, (size_t)len, h.payload_hash, &b);
		} else if (whole && !memcmp(h.magic, MAGIC, MAGIC_LEN) && h.dev == want.dev &&
			   h.ino == want.ino && h.version == want.version &&
			   !memcmp(h.format, want.format, sizeof h.format) &&
			   !memcmp(h.what, want.what, sizeof h.what)) {
			rc = -ESTALE; /* the same container's, before it changed */
		}
	}
	close(fd);
	if (rc) {
		sv_blob_unref(b);
		/* Stale, damaged or foreign: nobody can use it. */
		unlink(path);
		free(path);
		return rc;
	}
	/* Used now: the last to go when the directory is trimmed. */
	utimensat(AT_FDCWD, path, NULL, 0);
	free(path);
	*out = b;
	return 0;
}

struct rec {
	char *name;
	off_t size;
	struct timespec used;
};

static int by_use(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Removes the least recently used records until the directory holds at
 * most cap bytes of them (its other files untouched). */
static void trim_dir(const char *dir, uint64_t cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct rec *v = NULL;
	size_t n = 0, capn = 0;
	uint64_t total = 0;
	struct dirent *e;
	time_t now = time(NULL);
	while ((e = readdir(d))) {
		struct stat st;
		/* A store's temporary an hour old: left by a crash. */
		if (!strncmp(e->d_name, ".savefs-", 8) &&
		    !fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode) && st.st_mtime < now - 3600) {
			unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		if (strlen(e->d_name) != 32 || strspn(e->d_name, "0123456789abcdef") != 32 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (n == capn) {
			size_t c = capn ? capn * 2 : 64;
			struct rec *nv = realloc(v, c * sizeof *nv);
			if (!nv)
				break;
			v = nv;
			capn = c;
		}
		v[n].name = strdup(e->d_name);
		if (!v[n].name)
			break;
		v[n].size = st.st_size;
		v[n].used = st.st_mtim;
		total += (uint64_t)st.st_size;
		n++;
	}
	if (n)
		qsort(v, n, sizeof *v, by_use);
	for (size_t i = 0; i < n && total > cap; i++) {
		if (!unlinkat(dirfd(d), v[i].name, 0))
			total -= (uint64_t)v[i].size;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	closedir(d);
}

/* Makes dir and the directories above it that are missing (0700). */
static int make_dirs(const char *dir)
{
	if (!mkdir(dir, 0700) || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -errno;
	char *up = strdup(dir);
	if (!up)
		return -ENOMEM;
	char *slash = strrchr(up, '/');
	int rc = -ENOENT;
	if (slash && slash != up) {
		*slash = 0;
		rc = make_dirs(up);
	}
	free(up);
	if (!rc && mkdir(dir, 0700) && errno != EEXIST)
		rc = -errno;
	return rc;
}

/* What sv_index_store writes: the header, then the payload's pieces. */
struct record {
	const struct sv_index_key *k;
	const struct iovec *iov;
	int niov;
	uint64_t n;
};

static int fill_record(int fd, void *arg)
{
	const struct record *r = arg;
	XXH3_state_t *st = XXH3_createState();
	if (!st)
		return -ENOMEM;
	XXH3_64bits_reset(st);
	/* One pass, a piece at a time, the header (which carries the hash)
	 * written last: a payload from an array in a file (a log's entry
	 * table) is counted as it goes, so that its pages are shed behind the
	 * pass instead of all held at once. */
	struct head h;
	memset(&h, 0, sizeof h);
	int rc = sv_write_all(fd, &h, sizeof h);
	for (int i = 0; !rc && i < r->niov; i++) {
		const uint8_t *p = r->iov[i].iov_base;
		for (size_t at = 0, n = r->iov[i].iov_len; !rc && at < n; at += STORE_PIECE) {
			size_t m = n - at < STORE_PIECE ? n - at : STORE_PIECE;
			XXH3_64bits_update(st, p + at, m);
			rc = sv_write_all(fd, p + at, m);
			sv_tab_touch(m);
		}
	}
	fill_head(&h, r->k, r->n, XXH3_64bits_digest(st));
	XXH3_freeState(st);
	ssize_t w = rc ? 0 : pwrite(fd, &h, sizeof h, 0);
	if (!rc && w != (ssize_t)sizeof h)
		rc = w < 0 ? -errno : -EIO;
	return rc;
}

int sv_index_store(const char *dir, const struct sv_index_key *k, const void *p, size_t n,
		   uint64_t cap)
{
	struct iovec v = {(void *)p, n};
	return sv_index_storev(dir, k, &v, 1, cap);
}

int sv_index_storev(const char *dir, const struct sv_index_key *k, const struct iovec *iov,
		    int niov, uint64_t cap)
{
	if (!key_ok(k))
		return -EINVAL;
	uint64_t n = 0;
	for (int i = 0; i < niov; i++)
		n += iov[i].iov_len;
	if (sizeof(struct head) + n > cap)
		return -EFBIG;
	int made = make_dirs(dir);
	if (made)
		return made;
	char *path = record_path(dir, k);
	if (!path)
		return -ENOMEM;
	struct record r = {k, iov, niov, n};
	int rc = sv_write_replace(path, 0, fill_record, &r);
	free(path);
	if (!rc && cap != UINT64_MAX)
		trim_dir(dir, cap);
	return rc;
}

void sv_index_trim(const char *dir, uint64_t cap)
{
	trim_dir(dir, cap);
}
