/*
 * file.c - a container that is one file: read with pread, its identity
 * the file at its path, locked with flock(2), and rewritten whole the
 * safe way.
 *
 * A rewrite writes ".NAME.savefs-XXXXXX" beside the file and puts it at
 * the path atomically.  Where the file system can (RENAME_EXCHANGE), the
 * two names are swapped, so that the file taken from the path can be
 * looked at once more: if it is not the one read, as read (another
 * program wrote to it or put another file there in the instant since the
 * last check), it is swapped back and the commit refused.  The directory
 * is synced before the old file goes; if that fails, the old file is put
 * back too.  Elsewhere a plain rename() (then the last instant before it
 * is not covered).
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int file_pread(struct sv_source *s, uint64_t off, void *buf, size_t n,
		      struct sv_err *err)
{
	return sv_source_read_fd(s->fd, (uint64_t)s->st.st_size, off, buf, n, "the file", err);
}

static int file_read_upto(struct sv_source *s, uint64_t off, void *buf, size_t n, size_t *got,
			  struct sv_err *err)
{
	return sv_source_read_fd_upto(s->fd, off, buf, n, got, err);
}

/*
 * The swap took out of the path a file that is not the one read: it goes
 * back, and the new file (fd) comes out again, for the caller to remove.
 * Only if the path still holds the new file: a third program may have put
 * its own there since the swap, and that one stays where it is; what the
 * swap took out is then kept beside it, under a name that says so
 * (".NAME.savefs-displaced-XXXXXX"), and the log says both.
 */
static bool holds(const char *path, const struct stat *f)
{
	struct stat now;
	return !lstat(path, &now) && now.st_dev == f->st_dev && now.st_ino == f->st_ino;
}

static void put_back(struct sv_source *s, char *tmp, int fd, int dfd)
{
	struct stat ours;
	bool back = false;
	if (!fstat(fd, &ours) && holds(s->path, &ours)) {
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, s->path, RENAME_EXCHANGE)) {
			sv_source_log(s, "cannot put %s back at %s: %s", tmp, s->path, strerror(errno));
			fsync(dfd);
			return;
		}
		/* A third program's rename in the instant before: what came out
		 * is its file, not the new one; it goes back in again. */
		back = holds(tmp, &ours);
		if (!back && renameat2(AT_FDCWD, tmp, AT_FDCWD, s->path, RENAME_EXCHANGE))
			sv_source_log(s, "cannot put the newest file back at %s: %s", s->path,
				      strerror(errno)); /* whatever tmp holds is kept below */
	}
	if (!back) {
				      char *kept = strdup(tmp);
		char *x = kept ? strstr(kept, ".savefs-") : NULL;
		/* ".savefs-XXXXXX" -> ".savefs-displaced-XXXXXX" */
		char *name = x ? malloc(strlen(kept) + 16) : NULL;
		if (name) {
			snprintf(name, strlen(kept) + 16, "%.*s.savefs-displaced-%s",
				 (int)(x - kept), kept, x + strlen(".savefs-"));
			if (!rename(tmp, name)) {
				fsync(dfd);
				sv_source_log(s, "%s was replaced twice by other programs while savefs "
					      "committed: the newest is left there; the one before it is "
					      "kept as %s", s->path, name);
				/* The caller's unlink(tmp) now finds nothing. */
			} else {
				sv_source_log(s, "%s was replaced twice by other programs while savefs "
					      "committed: the newest is left there; the one before it is "
					      "%s (it could not be renamed: %s)", s->path, tmp,
					      strerror(errno));
				tmp[0] = '\0';
			}
		}
		free(name);
		free(kept);
	}
	fsync(dfd);
}

/* Puts the new file tmp (fd) at the path, atomically (see the top).  0, or
 * -errno with nothing changed at the path. */
static int swap_in(struct sv_source *s, char *tmp, int fd, int dfd, struct sv_err *err)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, s->path, RENAME_EXCHANGE)) {
		if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
			return sv_err_set(err, -errno, "rename onto %s: %s", s->path, strerror(errno));
		if (rename(tmp, s->path))
			return sv_err_set(err, -errno, "rename onto %s: %s", s->path,
					  strerror(errno));
		if (fsync(dfd))
			sv_source_log(s, "%s is written, but its directory could not be synced: %s",
				      s->path, strerror(errno));
		return 0;
	}
	/* The swap itself moved the old file's ctime: it is not compared. */
	struct stat was;
	int how = lstat(tmp, &was) ? SV_SOURCE_DELETED : sv_source_same(&s->st, &was);
	if (how == SV_SOURCE_CHANGED && was.st_size == s->st.st_size &&
	    was.st_mtim.tv_sec == s->st.st_mtim.tv_sec &&
	    was.st_mtim.tv_nsec == s->st.st_mtim.tv_nsec)
		how = SV_SOURCE_SAME;
	int rc = 0;
	if (how != SV_SOURCE_SAME)
		rc = sv_err_set(err, -EBUSY, "%s was changed by another program as it was "
				"being replaced: not overwritten, the edit is dropped (remount "
				"to see the file as it is now)", s->path);
	else if (fsync(dfd))
		rc = sv_err_set(err, -errno, "sync of the directory of %s: %s", s->path,
				strerror(errno));
	if (rc) {
		put_back(s, tmp, fd, dfd);
		return rc;
	}
	if (unlink(tmp))
		sv_source_log(s, "cannot remove the old file, now %s: %s", tmp, strerror(errno));
	return 0;
}

/*
 * A whole new container: written to ".NAME.savefs-XXXXXX" beside the old
 * one (by write), synced, checked (by check), swapped in.  On failure the
 * temporary file goes and nothing at the path changed.
 */
static int file_rewrite(struct sv_source *s, int (*write)(void *arg, int fd, struct sv_err *err),
			int (*check)(void *arg, struct sv_err *err), void *arg,
			struct sv_err *err)
{
	char *dup = strdup(s->path);
	size_t tlen = strlen(s->path) + 32;
	char *tmp = malloc(tlen);
	int fd = -1, dfd = -1, rc = 0;
	if (!dup || !tmp) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	char *dir = dirname(dup);
	snprintf(tmp, tlen, "%s/.%s.savefs-XXXXXX", dir, strrchr(s->path, '/') + 1);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = sv_err_set(err, -errno, "cannot create a new file beside %s: %s",
				s->path, strerror(errno));
		goto out;
	}
	/* Held until the file is renamed or removed: an open that finds a
	 * temporary file it can lock knows that no commit is writing it. */
	flock(fd, LOCK_EX | LOCK_NB);
	if (fchmod(fd, s->st.st_mode & 07777) ||
	    (fchown(fd, s->st.st_uid, s->st.st_gid) && errno != EPERM)) {
		rc = sv_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto unlink;
	}
	rc = write(arg, fd, err);
	if (rc)
		goto unlink;
	if (fsync(fd)) {
		rc = sv_err_set(err, -errno, "fsync %s: %s", tmp, strerror(errno));
		goto unlink;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = sv_err_set(err, -errno, "%s: %s", dir, strerror(errno));
		goto unlink;
	}
	rc = check(arg, err);
	if (!rc)
		rc = swap_in(s, tmp, fd, dfd, err);
	if (rc)
		goto unlink;
	close(s->fd);
	s->fd = fd;
	fd = -1;
	if (fstat(s->fd, &s->st))
		rc = sv_err_set(err, -EIO, "fstat: %s", strerror(errno));
	goto out;
unlink:
	unlink(tmp);
out:
	if (dfd >= 0)
		close(dfd);
	if (fd >= 0)
		close(fd);
	free(tmp);
	free(dup);
	return rc;
}

/*
 * Before a read-write use: removes the temporary files a commit that
 * crashed left beside the file (".NAME.savefs-XXXXXX" that nobody holds
 * locked), and checks that a new file can be made there at all: 0, or
 * -errno when it cannot (the container is then read-only).
 */
static int file_prepare(struct sv_source *s)
{
	char *dup = strdup(s->path);
	if (!dup)
		return 0; /* the commit will say what is wrong */
	char *dir = dirname(dup);
	const char *base = strrchr(s->path, '/') + 1;
	size_t blen = strlen(base);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		const char *n = e->d_name;
		if (n[0] != '.' || strncmp(n + 1, base, blen) || strncmp(n + 1 + blen, ".savefs-", 8) ||
		    strlen(n + 1 + blen + 8) != 6)
			continue;
		int fd = openat(dirfd(d), n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!flock(fd, LOCK_EX | LOCK_NB) && !unlinkat(dirfd(d), n, 0))
			sv_source_log(s, "removed %s/%s, left by a commit that did not finish", dir, n);
		close(fd);
	}
	if (d)
		closedir(d);
	int rc = 0;
	size_t tlen = strlen(s->path) + 32;
	char *probe = malloc(tlen);
	if (probe) {
		snprintf(probe, tlen, "%s/.%s.savefs-XXXXXX", dir, base);
		int fd = mkostemp(probe, O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
		} else {
			close(fd);
			unlink(probe);
		}
		free(probe);
	}
	free(dup);
	return rc;
}

const struct sv_source_ops sv_source_file_ops = {
	.kind = "file",
	.look = sv_source_look_path,
	.held = sv_source_held_fd,
	.pread = file_pread,
	.read_upto = file_read_upto,
	.claim = sv_source_flock_claim,
	.lock = sv_source_flock_lock,
	.unlock = sv_source_flock_unlock,
	.prepare = file_prepare,
	.rewrite = file_rewrite,
};
