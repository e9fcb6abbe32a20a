/*
 * guard.c - what keeps a commit from overwriting another writer's work.
 *
 * Identity: the container is known by device, inode, size, mtime and ctime
 * as last read (its source's st).  A commit compares what is at the
 * location now (the source's look()) with it before it starts and again
 * just before the new file takes the old one's place; any difference refuses the commit with EBUSY and says what
 * happened: the file was changed (size or times), replaced (another inode
 * at the path) or deleted.  ctime catches a rewrite whose mtime was put
 * back; nothing but the kernel sets ctime.
 *
 * Locks: a read-write mount holds its source's claim for its life
 * (sv_guard_claim; a local file's is a shared flock(2)), so that a second
 * read-write mount of the same file finds it and is refused.  A commit
 * holds the source's lock for its whole length (sv_guard_lock; flock(2)
 * made exclusive), so two savefs processes, or any program that takes
 * flock(2) on the file, never write it at once.  The lock lives on the
 * open file, so the new file a commit renames into place carries it on.
 *
 * Fingerprint: `touch` changes a file's times and nothing else, and must
 * not stop every later commit.  After a read-write open and after each
 * commit, a worker of low priority hashes the container (xxh3, libxxhash)
 * and keeps the hash if the file's identity did not move while it read.
 * A commit that finds the same inode and size with other times hashes the
 * file again: the same bytes are a touch (the new times are adopted), any
 * other bytes a change.  At an open, a container of up to 16 MiB is hashed
 * at once, before the open returns; a larger one, and every container after
 * a commit (which does not wait for it), by the worker, which a commit that
 * needs the fingerprint waits for (/.savefs/info says "fingerprinted" once
 * it is made).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* Containers up to this size are fingerprinted at once (a few ms, mostly
 * from the page cache the open just filled), larger ones by the worker. */
#define FP_AT_ONCE (16ull << 20)

int sv_container_identity(struct sv_container *c, struct stat *st)
{
	if (pthread_rwlock_tryrdlock(&c->lock))
		return -EBUSY;
	*st = c->src->st;
	pthread_rwlock_unlock(&c->lock);
	return 0;
}

int sv_guard_check(struct sv_container *c, const char *when, struct sv_err *err)
{
	struct stat now;
	int how = c->src->ops->look(c->src, &now);
	if (how == -ENOENT)
		how = SV_SOURCE_DELETED;
	else if (!how)
		how = sv_source_same(&c->src->st, &now);
	/* A directory's entries change as its members are written (a
	 * recording going on): only its identity is the core's to check, its
	 * members' the format's. */
	if (how == SV_SOURCE_CHANGED && sv_container_is_dir(c))
		return 0;
	if (how == SV_SOURCE_SAME)
		return 0;
	if (how == SV_SOURCE_CHANGED && sv_guard_touched(c, &now))
		return 0; /* only its times moved: the bytes are the ones read */
	static const char *const what[] = {
		[SV_SOURCE_CHANGED] = "was changed by another program",
		[SV_SOURCE_REPLACED] = "was replaced by another file",
		[SV_SOURCE_DELETED] = "was deleted",
	};
	if (how < 0)
		return sv_err_set(err, -EBUSY, "%s cannot be looked at (%s): not overwritten",
				  c->path, strerror(-how));
	/* A folder reads a changed container again at its next look; a
	 * container mounted alone, at the next mount (or, followed, at its
	 * next poll). */
	return sv_err_set(err, -EBUSY, "%s %s %s: not overwritten, the edit is dropped (%s)",
			  c->path, what[how], when,
			  c->opts.in_folder ? "the folder shows the file as it is now at its next look"
					    : "remount to see the file as it is now");
}

int sv_guard_claim(struct sv_container *c, bool wait, struct sv_err *err)
{
	return c->src->ops->claim ? c->src->ops->claim(c->src, wait, err) : 0;
}

int sv_guard_lock(struct sv_container *c, struct sv_err *err)
{
	int rc = c->src->ops->lock ? c->src->ops->lock(c->src, err) : 0;
	if (rc || c->prepared || !c->src->ops->prepare)
		return rc;
	/* Opened with opts.lazy_prepare: the source is made ready for writes
	 * now, under the lock, before the first commit. */
	int e = c->src->ops->prepare(c->src);
	if (e) {
		sv_guard_unlock(c);
		return sv_err_set(err, -EROFS, "cannot create files beside the container (%s)",
				  strerror(-e));
	}
	c->prepared = true;
	return 0;
}

void sv_guard_unlock(struct sv_container *c)
{
	if (c->src->ops->unlock)
		c->src->ops->unlock(c->src);
}

/* ---- the fingerprint: telling a touch from a change ---------------------- */

static int hash_fd(int fd, uint64_t size, const bool *cancel, uint64_t *out)
{
	static const size_t chunk = 1 << 20;
	uint8_t *buf = malloc(chunk);
	XXH3_state_t *st = XXH3_createState();
	int rc = buf && st ? 0 : -ENOMEM;
	if (!rc)
		XXH3_64bits_reset(st);
	for (uint64_t off = 0; !rc && off < size;) {
		if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE)) {
			rc = -ECANCELED;
			break;
		}
		size_t want = size - off < chunk ? (size_t)(size - off) : chunk;
		ssize_t k = pread(fd, buf, want, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = k < 0 ? -errno : -EIO;
			break;
		}
		XXH3_64bits_update(st, buf, (size_t)k);
		off += (uint64_t)k;
	}
	if (!rc)
		*out = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	free(buf);
	return rc;
}

static void *fp_main(void *arg)
{
	struct sv_container *c = arg;
	/* Behind every reader: it only matters at a later commit. */
	if (c->fp_behind)
		setpriority(PRIO_PROCESS, (id_t)sv_gettid(), 19);
	/* The old file's last descriptor: closing it frees the old file,
	 * which costs a while for a big one, here rather than in a commit. */
	if (c->fp_drop >= 0)
		close(c->fp_drop);
	c->fp_drop = -1;
	struct stat before, after;
	uint64_t h = 0;
	bool ok = !fstat(c->fp_fd, &before) && sv_source_same(&c->fp_st, &before) == SV_SOURCE_SAME &&
		  !hash_fd(c->fp_fd, (uint64_t)before.st_size, &c->fp_cancel, &h) && !fstat(c->fp_fd, &after) &&
		  sv_source_same(&c->fp_st, &after) == SV_SOURCE_SAME;
	pthread_mutex_lock(&c->fp_lock);
	c->fp_hash = h;
	c->fp_valid = ok;
	pthread_mutex_unlock(&c->fp_lock);
	return NULL;
}

/* Its result is not wanted any more (the container closes, or has a new
 * fingerprint made): a worker still hashing stops. */
static void fp_join(struct sv_container *c)
{
	if (c->fp_started) {
		__atomic_store_n(&c->fp_cancel, true, __ATOMIC_RELEASE);
		pthread_join(c->fp_thread, NULL);
		__atomic_store_n(&c->fp_cancel, false, __ATOMIC_RELEASE);
	}
	c->fp_started = false;
}

void sv_guard_fp_stop(struct sv_container *c)
{
	fp_join(c);
	if (c->fp_fd >= 0)
		close(c->fp_fd);
	c->fp_fd = -1;
	if (c->fp_drop >= 0)
		close(c->fp_drop);
	c->fp_drop = -1;
}

void sv_guard_fingerprint(struct sv_container *c, bool later)
{
	fp_join(c);
	if (c->fp_drop >= 0)
		close(c->fp_drop);
	c->fp_drop = c->fp_fd; /* closed by the worker, or below */
	c->fp_fd = -1;
	c->fp_valid = false;
	c->fp_st = c->src->st;
	if (sv_container_is_dir(c) || c->src->fd < 0 || c->src->ops->remote ||
	    (c->fp_fd = fcntl(c->src->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		/* The format checks a directory's members itself; or no
		 * descriptor; or a remote object, whose ETag proves it. */
		if (c->fp_drop >= 0)
			close(c->fp_drop);
		c->fp_drop = -1;
		return;
	}
	c->fp_behind = false;
	if (!later && (uint64_t)c->src->st.st_size <= FP_AT_ONCE) {
		fp_main(c);
		return;
	}
	c->fp_behind = true;
	c->fp_started = !pthread_create(&c->fp_thread, NULL, fp_main, c);
	if (!c->fp_started) {
		c->fp_behind = false;
		fp_main(c);
	}
}

void sv_container_before_fork(struct sv_container *c)
{
	/* A thread running at the fork may hold a lock the child then never
	 * sees released (the allocator's, under a sanitizer, or fp_lock): the
	 * fingerprint is stopped (a big container's takes a while, which the
	 * mount would wait for), and made again after the fork. */
	sv_wrlock(c);
	if (c->fp_started) {
		__atomic_store_n(&c->fp_cancel, true, __ATOMIC_RELEASE);
		pthread_join(c->fp_thread, NULL);
		c->fp_started = false;
		__atomic_store_n(&c->fp_cancel, false, __ATOMIC_RELEASE);
		c->fp_again = !c->fp_valid;
	}
	pthread_rwlock_unlock(&c->lock);
}

void sv_container_after_fork(struct sv_container *c)
{
	sv_wrlock(c);
	if (c->fp_again && c->fp_fd >= 0 && (c->fp_behind = true))
		c->fp_started = !pthread_create(&c->fp_thread, NULL, fp_main, c);
	c->fp_again = false;
	pthread_rwlock_unlock(&c->lock);
}

bool sv_guard_fingerprinted(struct sv_container *c)
{
	pthread_mutex_lock(&c->fp_lock);
	bool v = c->fp_valid;
	pthread_mutex_unlock(&c->fp_lock);
	return v;
}

bool sv_guard_touched(struct sv_container *c, const struct stat *now)
{
	if (c->fp_started) {
		pthread_join(c->fp_thread, NULL);
		c->fp_started = false;
	}
	if (!c->fp_valid || now->st_dev != c->fp_st.st_dev || now->st_ino != c->fp_st.st_ino ||
	    now->st_size != c->fp_st.st_size)
		return false;
	uint64_t h;
	struct stat after;
	if (hash_fd(c->src->fd, (uint64_t)now->st_size, NULL, &h) || h != c->fp_hash ||
	    fstat(c->src->fd, &after) || sv_source_same(now, &after) != SV_SOURCE_SAME)
		return false;
	sv_log(c, "%s was touched (its times changed, not its bytes): edits go on", c->path);
	c->src->st = *now;
	c->fp_st = *now;
	return true;
}
