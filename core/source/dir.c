/*
 * dir.c - a container that is a directory of member files (a recording
 * still being written: a preamble and segments).  It has no bytes of its
 * own; its members are named files directly inside it (no '/', not "."
 * or ".."), opened for each read (a member may be replaced by rename at
 * any time: each read sees one whole file) and never followed through a
 * symbolic link.  A member is replaced the way a recorder does it: a
 * temporary file beside it, synced, renamed over it, and the directory
 * synced.  Identity is the directory's own (its entries change as members
 * are written: the format checks its members itself).
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int member_open(struct sv_source *s, const char *name, struct stat *st,
		       struct sv_err *err)
{
	if (!sv_name_ok(name) || strchr(name, '/'))
		return sv_err_set(err, -EINVAL, "\"%s\" cannot name a member", name);
	int fd = openat(s->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
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

static int dir_member_stat(struct sv_source *s, const char *name, struct stat *st,
			   struct sv_err *err)
{
	int fd = member_open(s, name, st, err);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

static int dir_member_pread(struct sv_source *s, const char *name, uint64_t off, void *buf,
			    size_t n, struct sv_err *err)
{
	struct stat st;
	int fd = member_open(s, name, &st, err);
	if (fd < 0)
		return fd;
	int rc = sv_source_read_fd(fd, (uint64_t)st.st_size, off, buf, n, name, err);
	close(fd);
	return rc;
}

static int dir_member_read_all(struct sv_source *s, const char *name, uint64_t max,
			       struct sv_buf *out, struct sv_err *err)
{
	struct stat st;
	int fd = member_open(s, name, &st, err);
	if (fd < 0)
		return fd;
	int rc = 0;
	if ((uint64_t)st.st_size > max)
		rc = sv_err_set(err, -EFBIG, "%s: %llu bytes, more than the %llu allowed", name,
				(unsigned long long)st.st_size, (unsigned long long)max);
	if (!rc && sv_buf_reserve(out, (size_t)st.st_size))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = sv_source_read_fd(fd, (uint64_t)st.st_size, 0, out->p + out->len, (size_t)st.st_size,
			     name, err);
	if (!rc)
		out->len += (size_t)st.st_size;
	close(fd);
	return rc;
}

/* fn(arg, name) for each entry of directory rel ("" the source's own),
 * until it returns non-zero (returned); *open_errno the errno if it cannot
 * be opened (then -1). */
static int list_names(struct sv_source *s, const char *rel, int (*fn)(void *arg, const char *name),
		      void *arg, int *open_errno)
{
	*open_errno = 0;
	int fd = sv_open_beneath(s->fd, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		errno = -fd;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		*open_errno = errno;
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			rc = fn(arg, e->d_name);
	closedir(d);
	return rc;
}

static int dir_member_list(struct sv_source *s, int (*fn)(void *arg, const char *name),
			   void *arg, struct sv_err *err)
{
	int e, rc = list_names(s, "", fn, arg, &e);
	return e ? sv_err_set(err, -EIO, "cannot list %s: %s", s->path, strerror(e)) : rc;
}

static int dir_member_replace(struct sv_source *s, const char *name, const char *tmp_prefix,
			      const void *p, size_t n, const struct stat *expect,
			      struct sv_err *err)
{
	char tmp[300];
	int rc = 0, fd = -1;
	for (unsigned tries = 0; fd < 0 && tries < 100; tries++) {
		snprintf(tmp, sizeof tmp, "%s%08lx.tmp", tmp_prefix,
			 (unsigned long)((unsigned long)random() ^ (unsigned long)getpid() << 16));
		fd = openat(s->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return sv_err_set(err, -errno, "cannot create %s/%s: %s", s->path, tmp,
				  strerror(errno));
	struct stat old;
	if (!fstatat(s->fd, name, &old, AT_SYMLINK_NOFOLLOW) && S_ISREG(old.st_mode))
		(void)fchmod(fd, old.st_mode & 07777);
	rc = sv_write_all(fd, p, n);
	if (rc)
		sv_err_set(err, rc, "writing %s/%s: %s", s->path, tmp, strerror(-rc));
	sv_test_step("member-written");
	if (!rc && fsync(fd))
		rc = sv_err_set(err, -errno, "fsync %s/%s: %s", s->path, tmp, strerror(errno));
	if (close(fd) && !rc)
		rc = sv_err_set(err, -errno, "closing %s/%s: %s", s->path, tmp, strerror(errno));
	if (!rc && expect) {
		/* Swapped in, then the member swapped out checked: if another
		 * writer replaced it since it was read, it goes back. */
		if (renameat2(s->fd, tmp, s->fd, name, RENAME_EXCHANGE) == 0) {
			struct stat was;
			if (fstatat(s->fd, tmp, &was, AT_SYMLINK_NOFOLLOW) ||
			    was.st_dev != expect->st_dev || was.st_ino != expect->st_ino) {
				renameat2(s->fd, tmp, s->fd, name, RENAME_EXCHANGE);
				unlinkat(s->fd, tmp, 0);
				return sv_err_set(err, -EBUSY, "%s was replaced by another program "
						  "since it was read: the edit is not applied", name);
			}
			sv_test_step("member-renamed");
			/* The old member stays (under tmp) until the directory is
			 * synced: if that fails, it goes back, and the failure
			 * reported is true (nothing landed). */
			if (fsync(s->fd)) {
				int e = errno;
				if (!renameat2(s->fd, tmp, s->fd, name, RENAME_EXCHANGE)) {
					fsync(s->fd);
					unlinkat(s->fd, tmp, 0);
					return sv_err_set(err, -e, "fsync %s: %s (%s is as it was)", s->path,
							  strerror(e), name);
				}
				unlinkat(s->fd, tmp, 0);
				return sv_err_set(err, -e, "fsync %s: %s, and the old %s could not be put "
						  "back: the commit may have landed", s->path, strerror(e),
						  name);
			}
			unlinkat(s->fd, tmp, 0);
			return 0;
		}
		if (errno != EINVAL && errno != ENOSYS)
			rc = sv_err_set(err, -errno, "renaming %s over %s: %s", tmp, name,
					strerror(errno));
	}
	if (!rc && renameat(s->fd, tmp, s->fd, name))
		rc = sv_err_set(err, -errno, "renaming %s over %s: %s", tmp, name, strerror(errno));
	if (rc) {
		unlinkat(s->fd, tmp, 0);
		return rc;
	}
	sv_test_step("member-renamed");
	if (fsync(s->fd))
		return sv_err_set(err, -errno, "fsync %s: %s: the new %s is in place (the commit "
				  "may have landed)", s->path, strerror(errno), name);
	return 0;
}

/* ---- the directory as a save folder ------------------------------------------- */

/* The folder's own entries are looked at as they are: a symbolic link is
 * a link (never followed), and nothing is reached through one. */
static int dir_place_stat(struct sv_source *s, const char *rel, struct stat *st,
			  struct sv_err *err)
{
	if (!*rel)
		return fstat(s->fd, st) ? sv_err_set(err, -errno, "%s: %s", s->path,
						     strerror(errno)) : 0;
	const char *leaf;
	int at = sv_parent_beneath(s->fd, rel, &leaf), e = 0;
	if (at < 0)
		e = -at;
	else if (fstatat(at, leaf, st, AT_SYMLINK_NOFOLLOW))
		e = errno;
	if (at >= 0)
		close(at);
	if (!e)
		return 0;
	e = e == ENOENT || e == ENOTDIR || e == ELOOP || e == EXDEV ? ENOENT : e;
	return sv_err_set(err, -e, "%s/%s: %s", s->path, rel, strerror(e));
}

static int dir_place_list(struct sv_source *s, const char *rel,
			  int (*fn)(void *arg, const char *name), void *arg, struct sv_err *err)
{
	int e, rc = list_names(s, rel, fn, arg, &e);
	return e ? sv_err_set(err, -e, "cannot list %s/%s: %s", s->path, rel, strerror(e)) : rc;
}

static int dir_place_read(struct sv_source *s, const char *rel, uint64_t off, void *buf,
			  size_t n, size_t *got, struct sv_err *err)
{
	*got = 0;
	/* Never blocking on a FIFO, never through a link. */
	int fd = sv_open_beneath(s->fd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0)
		return sv_err_set(err, fd == -ENOENT ? -ENOENT : -EIO, "%s: %s", rel,
				  strerror(-fd));
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return sv_err_set(err, -EINVAL, "%s: not a regular file", rel);
	}
	int rc = 0;
	while (*got < n) {
		ssize_t k = pread(fd, (uint8_t *)buf + *got, n - *got, (off_t)(off + *got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = sv_err_set(err, -EIO, "%s: %s", rel, strerror(errno));
			break;
		}
		if (!k)
			break;
		*got += (size_t)k;
	}
	close(fd);
	return rc;
}

static char *dir_place_location(struct sv_source *s, const char *rel, bool dir)
{
	(void)dir;
	size_t n = strlen(s->path) + strlen(rel) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", s->path, *rel ? "/" : "", rel);
	return p;
}

const struct sv_source_ops sv_source_dir_ops = {
	.kind = "directory",
	.look = sv_source_look_path,
	.held = sv_source_held_fd,
	.claim = sv_source_flock_claim,
	.lock = sv_source_flock_lock,
	.unlock = sv_source_flock_unlock,
	.member_stat = dir_member_stat,
	.member_pread = dir_member_pread,
	.member_read_all = dir_member_read_all,
	.member_list = dir_member_list,
	.member_replace = dir_member_replace,
	.place_stat = dir_place_stat,
	.place_list = dir_place_list,
	.place_read = dir_place_read,
	.place_location = dir_place_location,
};
