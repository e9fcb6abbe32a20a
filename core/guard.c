/*
 * guard.c - what keeps a commit from overwriting another writer's work.
 *
 * Identity: the container file is known by device, inode, size, mtime and
 * ctime as last read (c->st).  A commit compares the file at the path with
 * it before it starts and again just before the new file takes the old
 * one's place; any difference refuses the commit with EBUSY and says what
 * happened: the file was changed (size or times), replaced (another inode
 * at the path) or deleted.  ctime catches a rewrite whose mtime was put
 * back; nothing but the kernel sets ctime.
 *
 * Locks: a read-write mount holds a shared flock(2) on the container for
 * its life (taken by sv_guard_claim); a second read-write mount of the
 * same file finds it and is refused.  A commit turns that lock exclusive
 * for its whole length (sv_guard_lock), so two savefs processes, or any
 * program that takes flock(2) on the file, never write it at once.  The
 * lock lives on the open file, so the new file a commit renames into place
 * carries it on.
 *
 * Fingerprint: `touch` changes a file's times and nothing else, and must
 * not stop every later commit.  After a read-write open and after each
 * commit, a worker of low priority hashes the container (xxh3, libxxhash)
 * and keeps the hash if the file's identity did not move while it read.
 * A commit that finds the same inode and size with other times hashes the
 * file again: the same bytes are a touch (the new times are adopted), any
 * other bytes a change.  A container of up to 16 MiB is hashed at once,
 * before the open returns; until the worker is done with a larger one
 * (/.savefs/info says "fingerprinted"), a touch counts as a change.
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* How long a commit waits for another holder of the container's lock, and
 * a read-write open for a mount that is going away. */
#define LOCK_WAIT_MS 2000
#define CLAIM_WAIT_MS 1000
/* Containers up to this size are fingerprinted at once (a few ms, mostly
 * from the page cache the open just filled), larger ones by the worker. */
#define FP_AT_ONCE (16ull << 20)

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

int sv_guard_same(const struct stat *was, const struct stat *now)
{
	if (now->st_dev != was->st_dev || now->st_ino != was->st_ino)
		return SV_GUARD_REPLACED;
	if (now->st_size != was->st_size || !same_time(&now->st_mtim, &was->st_mtim) ||
	    !same_time(&now->st_ctim, &was->st_ctim))
		return SV_GUARD_CHANGED;
	return SV_GUARD_SAME;
}

int sv_guard_check(struct sv_container *c, const char *when, struct sv_err *err)
{
	struct stat now;
	int how;
	if (stat(c->path, &now))
		how = errno == ENOENT ? SV_GUARD_DELETED : -errno;
	else
		how = sv_guard_same(&c->st, &now);
	/* A directory's entries change as its members are written (a
	 * recording going on): only its identity is the core's to check, its
	 * members' the format's. */
	if (how == SV_GUARD_CHANGED && c->is_dir)
		return 0;
	if (how == SV_GUARD_SAME)
		return 0;
	if (how == SV_GUARD_CHANGED && sv_guard_touched(c, &now))
		return 0; /* only its times moved: the bytes are the ones read */
	static const char *const what[] = {
		[SV_GUARD_CHANGED] = "was changed by another program",
		[SV_GUARD_REPLACED] = "was replaced by another file",
		[SV_GUARD_DELETED] = "was deleted",
	};
	if (how < 0)
		return sv_err_set(err, -EBUSY, "%s cannot be looked at (%s): not overwritten",
				  c->path, strerror(-how));
	return sv_err_set(err, -EBUSY, "%s %s %s: not overwritten, the edit is dropped "
			  "(remount to see the file as it is now)", c->path, what[how], when);
}

int sv_guard_claim(struct sv_container *c, struct sv_err *err)
{
	/* A mount just unmounted lets go when its daemon exits, a moment
	 * after fusermount3 -u returns: wait for that, a little. */
	for (int waited = 0;; waited += 10) {
		if (!flock(c->fd, LOCK_EX | LOCK_NB)) {
			flock(c->fd, LOCK_SH | LOCK_NB);
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

int sv_guard_lock(struct sv_container *c, struct sv_err *err)
{
	struct timespec nap = {0, 10 * 1000000L};
	for (int waited = 0;; waited += 10) {
		if (!flock(c->fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno == ENOLCK || errno == EINVAL || errno == EOPNOTSUPP)
			return 0; /* no flock here: the identity checks still run */
		if (errno != EWOULDBLOCK && errno != EINTR)
			return sv_err_set(err, -errno, "cannot lock %s: %s", c->path,
					  strerror(errno));
		if (waited >= LOCK_WAIT_MS)
			return sv_err_set(err, -EBUSY, "%s is locked by another program: "
					  "not written, the edit is dropped", c->path);
		nanosleep(&nap, NULL);
	}
}

void sv_guard_unlock(struct sv_container *c)
{
	/* Back to the mount's shared claim; a read-only handle holds none. */
	flock(c->fd, c->read_only ? LOCK_UN : LOCK_SH | LOCK_NB);
}

/* ---- the fingerprint: telling a touch from a change ---------------------- */

static int hash_fd(int fd, uint64_t size, uint64_t *out)
{
	static const size_t chunk = 1 << 20;
	uint8_t *buf = malloc(chunk);
	XXH3_state_t *st = XXH3_createState();
	int rc = buf && st ? 0 : -ENOMEM;
	if (!rc)
		XXH3_64bits_reset(st);
	for (uint64_t off = 0; !rc && off < size;) {
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
	if ((uint64_t)c->fp_st.st_size > FP_AT_ONCE)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	struct stat before, after;
	uint64_t h = 0;
	bool ok = !fstat(c->fp_fd, &before) && sv_guard_same(&c->fp_st, &before) == SV_GUARD_SAME &&
		  !hash_fd(c->fp_fd, (uint64_t)before.st_size, &h) && !fstat(c->fp_fd, &after) &&
		  sv_guard_same(&c->fp_st, &after) == SV_GUARD_SAME;
	pthread_mutex_lock(&c->fp_lock);
	c->fp_hash = h;
	c->fp_valid = ok;
	pthread_mutex_unlock(&c->fp_lock);
	return NULL;
}

void sv_guard_fp_stop(struct sv_container *c)
{
	if (c->fp_started)
		pthread_join(c->fp_thread, NULL);
	c->fp_started = false;
	if (c->fp_fd >= 0)
		close(c->fp_fd);
	c->fp_fd = -1;
}

void sv_guard_fingerprint(struct sv_container *c)
{
	sv_guard_fp_stop(c);
	c->fp_valid = false;
	c->fp_st = c->st;
	if (c->is_dir)
		return; /* the format checks its members itself */
	c->fp_fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
	if (c->fp_fd < 0)
		return;
	if ((uint64_t)c->st.st_size <= FP_AT_ONCE)
		fp_main(c);
	else
		c->fp_started = !pthread_create(&c->fp_thread, NULL, fp_main, c);
}

void sv_container_before_fork(struct sv_container *c)
{
	/* A thread running at the fork may hold a lock the child then never
	 * sees released (the allocator's, under a sanitizer, or fp_lock): the
	 * fingerprint is finished first. */
	pthread_rwlock_wrlock(&c->lock);
	if (c->fp_started) {
		pthread_join(c->fp_thread, NULL);
		c->fp_started = false;
	}
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
	if (hash_fd(c->fd, (uint64_t)now->st_size, &h) || h != c->fp_hash ||
	    fstat(c->fd, &after) || sv_guard_same(now, &after) != SV_GUARD_SAME)
		return false;
	sv_log(c, "%s was touched (its times changed, not its bytes): edits go on", c->path);
	c->st = *now;
	c->fp_st = *now;
	return true;
}
