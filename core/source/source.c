/*
 * source.c - what every source shares (see source.h): opening the right
 * one for a path, the identity comparison, the container's calls that
 * formats make (dispatched to its source), and the pieces the local
 * sources (file.c, dir.c) have in common: bounded reads of a descriptor,
 * flock(2) claims and locks.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* How long a commit waits for another holder of the container's lock, and
 * a read-write open for a mount that is going away. */
#define LOCK_WAIT_MS 2000
#define CLAIM_WAIT_MS 1000

/* ---- opening ---------------------------------------------------------------- */

static struct sv_source *source_new(const struct sv_source_ops *ops, char *path, int fd)
{
	struct sv_source *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->ops = ops;
	s->path = path;
	s->fd = fd;
	return s;
}

const struct sv_source_kind *const sv_source_kinds[] = {&sv_s3_kind, NULL};

/* The kind of source whose option key is (len bytes), or NULL. */
static const struct sv_source_kind *kind_taking(const char *key, size_t len)
{
	for (size_t i = 0; sv_source_kinds[i]; i++)
		if (sv_key_listed(sv_source_kinds[i]->options, key, len))
			return sv_source_kinds[i];
	return NULL;
}

bool sv_source_option(const char *key, size_t len)
{
	return kind_taking(key, len) != NULL;
}

int sv_source_option_check(const char *kv, struct sv_err *err)
{
	const struct sv_source_kind *k = kind_taking(kv, strcspn(kv, "="));
	return k ? k->check(kv, err) : sv_err_set(err, -EINVAL, "-o %s: no location takes it", kv);
}

int sv_source_open(const char *path, const char *opts, bool read_only, struct sv_source **out,
		   int *why, struct sv_err *err)
{
	*out = NULL;
	*why = 0;
	if (sv_source_is_url(path))
		return sv_source_open_http(path, read_only, out, why, err);
	if (sv_source_is_s3(path))
		return sv_source_open_s3(path, opts, read_only, out, why, err);
	char *real = realpath(path, NULL);
	if (!real)
		return sv_err_set(err, -errno, "%s: %s", path, strerror(errno));
	const struct sv_source_ops *ops = &sv_source_file_ops;
	/* A FIFO, a socket or a device is no container: never opened so that
	 * it could block (O_NONBLOCK), and refused below. */
	struct stat pre;
	if (stat(real, &pre) == 0 && !S_ISREG(pre.st_mode) && !S_ISDIR(pre.st_mode)) {
		free(real);
		return sv_err_set(err, -EINVAL, "%s: not a regular file or a directory", path);
	}
	int fd = read_only ? -1 : open(real, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == EISDIR) {
		/* A directory of member files: written through new members
		 * renamed into it, so writable if the directory is. */
		ops = &sv_source_dir_ops;
		if (access(real, W_OK))
			*why = errno;
		read_only = *why != 0;
		fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else if (read_only || (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM ||
					    errno == ETXTBSY))) {
		*why = read_only ? 0 : errno;
		fd = open(real, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0) {
			struct stat st;
			if (!fstat(fd, &st) && S_ISDIR(st.st_mode))
				ops = &sv_source_dir_ops;
		}
		read_only = true;
	}
	if (fd < 0) {
		int e = errno;
		free(real);
		return sv_err_set(err, -e, "%s: %s", path, strerror(e));
	}
	struct sv_source *s = source_new(ops, real, fd);
	if (!s) {
		close(fd);
		free(real);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	s->read_only = read_only;
	if (fstat(fd, &s->st)) {
		int e = errno;
		sv_source_free(s);
		return sv_err_set(err, -e, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(s->st.st_mode) && !S_ISDIR(s->st.st_mode)) {
		sv_source_free(s);
		return sv_err_set(err, -EINVAL, "%s: not a regular file or a directory", path);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	*out = s;
	return 0;
}

int sv_source_open_mem(const void *p, size_t n, struct sv_source **out, struct sv_err *err)
{
	*out = NULL;
	char *path = strdup("(memory)");
	int fd = memfd_create("savefs", MFD_CLOEXEC);
	int rc = path && fd >= 0 ? sv_write_all(fd, p, n) : path ? -errno : -ENOMEM;
	struct sv_source *s = rc ? NULL : source_new(&sv_source_file_ops, path, fd);
	if (!rc && !s)
		rc = -ENOMEM;
	if (!rc && fstat(fd, &s->st))
		rc = -errno;
	if (rc) {
		if (s)
			sv_source_free(s);
		else {
			free(path);
			if (fd >= 0)
				close(fd);
		}
		return sv_err_set(err, rc, "cannot hold the container in memory");
	}
	s->read_only = true;
	*out = s;
	return 0;
}

bool sv_source_is_folder(const char *path)
{
	struct stat st;
	if (sv_source_is_s3(path)) {
		/* s3://BUCKET/ or s3://BUCKET/PREFIX/ (a key is an object). */
		const char *k = strchr(path + 5, '/');
		return !k || !k[1] || path[strlen(path) - 1] == '/';
	}
	return !sv_source_is_url(path) && !stat(path, &st) && S_ISDIR(st.st_mode);
}

void sv_source_free(struct sv_source *s)
{
	if (!s)
		return;
	if (s->ops->close)
		s->ops->close(s);
	if (s->fd >= 0)
		close(s->fd);
	sv_cache_free(s->cache);
	free(s->store);
	free(s->path);
	free(s);
}

uint64_t sv_source_failures(const struct sv_source *s)
{
	return __atomic_load_n(&s->failures, __ATOMIC_ACQUIRE);
}

void sv_source_log(struct sv_source *s, const char *fmt, ...)
{
	char line[SV_ERR_MAX * 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (s->log)
		s->log(s->log_arg, line);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

int sv_source_same(const struct stat *was, const struct stat *now)
{
	if (now->st_dev != was->st_dev || now->st_ino != was->st_ino)
		return SV_SOURCE_REPLACED;
	if (now->st_size != was->st_size || !same_time(&now->st_mtim, &was->st_mtim) ||
	    !same_time(&now->st_ctim, &was->st_ctim))
		return SV_SOURCE_CHANGED;
	return SV_SOURCE_SAME;
}

/* ---- what formats call, through the container --------------------------------- */

uint64_t sv_container_size(const struct sv_container *c)
{
	return (uint64_t)c->src->st.st_size;
}

int sv_container_fd(const struct sv_container *c)
{
	return c->src->fd;
}

static __thread unsigned tree_reads;

void sv_source_tree_begin(void)
{
	tree_reads++;
}

void sv_source_tree_end(void)
{
	tree_reads--;
}

bool sv_source_tree_reads(void)
{
	return tree_reads > 0;
}

void sv_container_hint(struct sv_container *c, const struct sv_range *r, size_t n)
{
	if (c->src->ops->hint && n)
		c->src->ops->hint(c->src, r, n);
}

bool sv_container_is_dir(const struct sv_container *c)
{
	return c->src->ops->member_list != NULL;
}

int sv_container_pread(struct sv_container *c, uint64_t off, void *buf, size_t n,
		       struct sv_err *err)
{
	if (!c->src->ops->pread)
		return sv_err_set(err, -EBADMSG, "a %s has no bytes of its own", c->src->ops->kind);
	__atomic_add_fetch(&c->src->reads, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->src->read_bytes, n, __ATOMIC_RELAXED);
	return c->src->ops->pread(c->src, off, buf, n, err);
}

int sv_container_read(struct sv_container *c, uint64_t off, void *buf, size_t n, size_t *got,
		      struct sv_err *err)
{
	*got = 0;
	const struct sv_source_ops *ops = c->src->ops;
	if (!ops->read_upto) {
		uint64_t size = (uint64_t)c->src->st.st_size;
		size_t k = off >= size ? 0 : size - off < n ? (size_t)(size - off) : n;
		int rc = k ? sv_container_pread(c, off, buf, k, err) : 0;
		if (!rc)
			*got = k;
		return rc;
	}
	__atomic_add_fetch(&c->src->reads, 1, __ATOMIC_RELAXED);
	int rc = ops->read_upto(c->src, off, buf, n, got, err);
	__atomic_add_fetch(&c->src->read_bytes, *got, __ATOMIC_RELAXED);
	return rc;
}

bool sv_container_changed(struct sv_container *c)
{
	struct stat now;
	struct sv_source *s = c->src;
	return !s->ops->remote && s->ops->held && !s->ops->held(s, &now) &&
	       sv_source_same(&s->st, &now) != SV_SOURCE_SAME;
}

uint64_t sv_container_size_now(struct sv_container *c)
{
	struct stat now;
	if (c->src->ops->held && !c->src->ops->held(c->src, &now))
		return (uint64_t)now.st_size;
	return sv_container_size(c);
}

void sv_container_reads(const struct sv_container *c, uint64_t *reads, uint64_t *bytes)
{
	*reads = __atomic_load_n(&c->src->reads, __ATOMIC_RELAXED);
	*bytes = __atomic_load_n(&c->src->read_bytes, __ATOMIC_RELAXED);
}

static int no_members(struct sv_container *c, const char *name, struct sv_err *err)
{
	return sv_err_set(err, -ENOTDIR, "%s%sthe container is not a directory", name ? name : "",
			  name ? ": " : "");
}

int sv_member_stat(struct sv_container *c, const char *name, struct stat *st,
		   struct sv_err *err)
{
	if (!c->src->ops->member_stat)
		return no_members(c, name, err);
	return c->src->ops->member_stat(c->src, name, st, err);
}

int sv_member_pread(struct sv_container *c, const char *name, uint64_t off, void *buf,
		    size_t n, struct sv_err *err)
{
	if (!c->src->ops->member_pread)
		return no_members(c, name, err);
	return c->src->ops->member_pread(c->src, name, off, buf, n, err);
}

int sv_member_read_all(struct sv_container *c, const char *name, uint64_t max,
		       struct sv_buf *out, struct sv_err *err)
{
	if (!c->src->ops->member_read_all)
		return no_members(c, name, err);
	return c->src->ops->member_read_all(c->src, name, max, out, err);
}

int sv_member_list(struct sv_container *c, int (*fn)(void *arg, const char *name),
		   void *arg, struct sv_err *err)
{
	if (!c->src->ops->member_list)
		return no_members(c, NULL, err);
	return c->src->ops->member_list(c->src, fn, arg, err);
}

int sv_member_replace(struct sv_container *c, const char *name, const char *tmp_prefix,
		      const void *p, size_t n, const struct stat *expect, struct sv_err *err)
{
	if (!c->src->ops->member_replace)
		return no_members(c, NULL, err);
	return c->src->ops->member_replace(c->src, name, tmp_prefix, p, n, expect, err);
}

/* ---- shared by the local sources ------------------------------------------------ */

int sv_source_read_fd(int fd, uint64_t size, uint64_t off, void *buf, size_t n,
		      const char *what, struct sv_err *err)
{
	if (off > size || n > size - off)
		return sv_err_set(err, -EBADMSG,
				  "range %llu+%zu lies past the end of %s (%llu bytes)",
				  (unsigned long long)off, n, what, (unsigned long long)size);
	size_t got = 0;
	int rc = sv_source_read_fd_upto(fd, off, buf, n, &got, err);
	if (!rc && got < n)
		return sv_err_set(err, -EIO, "%s shrank while reading at offset %llu", what,
				  (unsigned long long)(off + got));
	return rc;
}

int sv_source_read_fd_upto(int fd, uint64_t off, void *buf, size_t n, size_t *got,
			   struct sv_err *err)
{
	*got = 0;
	while (*got < n) {
		ssize_t k = pread(fd, (uint8_t *)buf + *got, n - *got, (off_t)(off + *got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sv_err_set(err, -EIO, "read failed at offset %llu: %s",
					  (unsigned long long)(off + *got), strerror(errno));
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

int sv_source_look_path(struct sv_source *s, struct stat *now)
{
	return stat(s->path, now) ? -errno : 0;
}

int sv_source_held_fd(struct sv_source *s, struct stat *now)
{
	return fstat(s->fd, now) ? -errno : 0;
}

int sv_source_flock_claim(struct sv_source *s, bool wait, struct sv_err *err)
{
	/* A mount just unmounted lets go when its daemon exits, a moment
	 * after fusermount3 -u returns: wait for that, a little. */
	for (int waited = wait ? 0 : CLAIM_WAIT_MS;; waited += 10) {
		if (!flock(s->fd, LOCK_EX | LOCK_NB)) {
			flock(s->fd, LOCK_SH | LOCK_NB);
			return 0;
		}
		if (errno != EWOULDBLOCK && errno != EINTR)
			return 0; /* a file system without flock: nothing to share */
		if (waited >= CLAIM_WAIT_MS)
			break;
		nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
	}
	return sv_err_set(err, -EBUSY, "mounted read-write by another savefs (or locked "
			  "by another program): unmount that first, or mount with -o ro");
}

int sv_source_flock_lock(struct sv_source *s, struct sv_err *err)
{
	struct timespec nap = {0, 10 * 1000000L};
	for (int waited = 0;; waited += 10) {
		if (!flock(s->fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno == ENOLCK || errno == EINVAL || errno == EOPNOTSUPP)
			return 0; /* no flock here: the identity checks still run */
		if (errno != EWOULDBLOCK && errno != EINTR)
			return sv_err_set(err, -errno, "cannot lock %s: %s", s->path,
					  strerror(errno));
		if (waited >= LOCK_WAIT_MS)
			return sv_err_set(err, -EBUSY, "%s is locked by another program: "
					  "not written, the edit is dropped", s->path);
		nanosleep(&nap, NULL);
	}
}

void sv_source_flock_unlock(struct sv_source *s)
{
	/* Back to the mount's shared claim; a read-only handle holds none. */
	flock(s->fd, s->read_only ? LOCK_UN : LOCK_SH | LOCK_NB);
}
