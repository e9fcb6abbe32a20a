/*
 * source.c - where a container's bytes come from: one file, or a directory
 * of member files (a recording still being written: a preamble and
 * segments).  Every read is checked against the size the file has when it
 * is read, the same way for both, so a format never reads past an end.
 *
 * A directory container's members are named files directly inside it (no
 * '/', not "." or ".."), opened for each read (a member may be replaced by
 * rename at any time: each read sees one whole file) and never followed
 * through a symbolic link.  A member is replaced the way a recorder does it:
 * a temporary file beside it, synced, renamed over it, and the directory
 * synced.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_fd(int fd, uint64_t size, uint64_t off, void *buf, size_t n,
		   const char *what, struct sv_err *err)
{
	if (off > size || n > size - off)
		return sv_err_set(err, -EBADMSG,
				  "range %llu+%zu lies past the end of %s (%llu bytes)",
				  (unsigned long long)off, n, what, (unsigned long long)size);
	uint8_t *p = buf;
	while (n) {
		ssize_t k = pread(fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sv_err_set(err, -EIO, "read failed at offset %llu: %s",
					  (unsigned long long)off, strerror(errno));
		if (k == 0)
			return sv_err_set(err, -EIO, "%s shrank while reading at offset %llu", what,
					  (unsigned long long)off);
		p += k;
		off += (uint64_t)k;
		n -= (size_t)k;
	}
	return 0;
}

int sv_container_pread(struct sv_container *c, uint64_t off, void *buf,
		       size_t n, struct sv_err *err)
{
	if (c->is_dir)
		return sv_err_set(err, -EBADMSG, "a directory has no bytes of its own");
	return read_fd(c->fd, (uint64_t)c->st.st_size, off, buf, n, "the file", err);
}

bool sv_container_is_dir(const struct sv_container *c)
{
	return c->is_dir;
}

static int member_open(struct sv_container *c, const char *name, struct stat *st,
		       struct sv_err *err)
{
	if (!c->is_dir)
		return sv_err_set(err, -ENOTDIR, "%s: the container is not a directory", name);
	if (!sv_name_ok(name) || strchr(name, '/'))
		return sv_err_set(err, -EINVAL, "\"%s\" cannot name a member", name);
	int fd = openat(c->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return sv_err_set(err, errno == ENOENT ? -ENOENT : errno == ELOOP ? -EBADMSG : -EIO,
				  "%s: %s", name, errno == ELOOP ? "a symbolic link" : strerror(errno));
	if (fstat(fd, st)) {
		int e = errno;
		close(fd);
		return sv_err_set(err, -EIO, "%s: %s", name, strerror(e));
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return sv_err_set(err, -EBADMSG, "%s: not a regular file", name);
	}
	return fd;
}

int sv_member_stat(struct sv_container *c, const char *name, struct stat *st,
		   struct sv_err *err)
{
	int fd = member_open(c, name, st, err);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int sv_member_pread(struct sv_container *c, const char *name, uint64_t off, void *buf,
		    size_t n, struct sv_err *err)
{
	struct stat st;
	int fd = member_open(c, name, &st, err);
	if (fd < 0)
		return fd;
	int rc = read_fd(fd, (uint64_t)st.st_size, off, buf, n, name, err);
	close(fd);
	return rc;
}

int sv_member_read_all(struct sv_container *c, const char *name, uint64_t max,
		       struct sv_buf *out, struct sv_err *err)
{
	struct stat st;
	int fd = member_open(c, name, &st, err);
	if (fd < 0)
		return fd;
	int rc = 0;
	if ((uint64_t)st.st_size > max)
		rc = sv_err_set(err, -EFBIG, "%s: %llu bytes, more than the %llu allowed", name,
				(unsigned long long)st.st_size, (unsigned long long)max);
	if (!rc && sv_buf_reserve(out, (size_t)st.st_size))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = read_fd(fd, (uint64_t)st.st_size, 0, out->p + out->len, (size_t)st.st_size,
			     name, err);
	if (!rc)
		out->len += (size_t)st.st_size;
	close(fd);
	return rc;
}

int sv_member_list(struct sv_container *c, int (*fn)(void *arg, const char *name),
		   void *arg, struct sv_err *err)
{
	if (!c->is_dir)
		return sv_err_set(err, -ENOTDIR, "the container is not a directory");
	int fd = openat(c->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return sv_err_set(err, -EIO, "cannot list %s: %s", c->path, strerror(e));
	}
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			rc = fn(arg, e->d_name);
	closedir(d);
	return rc;
}

int sv_member_replace(struct sv_container *c, const char *name, const char *tmp_prefix,
		      const void *p, size_t n, const struct stat *expect, struct sv_err *err)
{
	if (!c->is_dir)
		return sv_err_set(err, -ENOTDIR, "the container is not a directory");
	char tmp[300];
	int rc = 0, fd = -1;
	for (unsigned tries = 0; fd < 0 && tries < 100; tries++) {
		snprintf(tmp, sizeof tmp, "%s%08lx.tmp", tmp_prefix,
			 (unsigned long)((unsigned long)random() ^ (unsigned long)getpid() << 16));
		fd = openat(c->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return sv_err_set(err, -errno, "cannot create %s/%s: %s", c->path, tmp,
				  strerror(errno));
	struct stat old;
	if (!fstatat(c->fd, name, &old, AT_SYMLINK_NOFOLLOW) && S_ISREG(old.st_mode))
		(void)fchmod(fd, old.st_mode & 07777);
	rc = sv_write_all(fd, p, n);
	if (rc)
		sv_err_set(err, rc, "writing %s/%s: %s", c->path, tmp, strerror(-rc));
	sv_test_step("member-written");
	if (!rc && fsync(fd))
		rc = sv_err_set(err, -errno, "fsync %s/%s: %s", c->path, tmp, strerror(errno));
	if (close(fd) && !rc)
		rc = sv_err_set(err, -errno, "closing %s/%s: %s", c->path, tmp, strerror(errno));
	if (!rc && expect) {
		/* Swapped in, then the member swapped out checked: if another
		 * writer replaced it since it was read, it goes back. */
		if (renameat2(c->fd, tmp, c->fd, name, RENAME_EXCHANGE) == 0) {
			struct stat was;
			if (fstatat(c->fd, tmp, &was, AT_SYMLINK_NOFOLLOW) ||
			    was.st_dev != expect->st_dev || was.st_ino != expect->st_ino) {
				renameat2(c->fd, tmp, c->fd, name, RENAME_EXCHANGE);
				unlinkat(c->fd, tmp, 0);
				return sv_err_set(err, -EBUSY, "%s was replaced by another program "
						  "since it was read: the edit is not applied", name);
			}
			sv_test_step("member-renamed");
			/* The old member stays (under tmp) until the directory is
			 * synced: if that fails, it goes back, and the failure
			 * reported is true (nothing landed). */
			if (fsync(c->fd)) {
				int e = errno;
				if (!renameat2(c->fd, tmp, c->fd, name, RENAME_EXCHANGE)) {
					fsync(c->fd);
					unlinkat(c->fd, tmp, 0);
					return sv_err_set(err, -e, "fsync %s: %s (%s is as it was)", c->path,
							  strerror(e), name);
				}
				unlinkat(c->fd, tmp, 0);
				return sv_err_set(err, -e, "fsync %s: %s, and the old %s could not be put "
						  "back: the commit may have landed", c->path, strerror(e),
						  name);
			}
			unlinkat(c->fd, tmp, 0);
			return 0;
		}
		if (errno != EINVAL && errno != ENOSYS)
			rc = sv_err_set(err, -errno, "renaming %s over %s: %s", tmp, name,
					strerror(errno));
	}
	if (!rc && renameat(c->fd, tmp, c->fd, name))
		rc = sv_err_set(err, -errno, "renaming %s over %s: %s", tmp, name, strerror(errno));
	if (rc) {
		unlinkat(c->fd, tmp, 0);
		return rc;
	}
	sv_test_step("member-renamed");
	if (fsync(c->fd))
		return sv_err_set(err, -errno, "fsync %s: %s: the new %s is in place (the commit "
				  "may have landed)", c->path, strerror(errno), name);
	return 0;
}
