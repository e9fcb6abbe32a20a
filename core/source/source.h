/*
 * source/source.h - where a container's bytes come from.
 *
 * A source is one place a container lives: a file, a directory of member
 * files (a recording still being written), an object on an HTTP server or
 * in an S3 store, or a prefix of a store (a segmented recording's
 * members); each is one implementation of struct sv_source_ops in this
 * folder, and nothing else in the core knows which one it has.
 *
 * What a source answers:
 *   - its bytes: pread of exactly n bytes at an offset, checked against
 *     the size it has as read (a read past the end is -EBADMSG, never a
 *     short read); a directory has no bytes of its own, only members;
 *   - its members, for a directory: list, stat, pread, read whole, and
 *     replace one (a new member written beside it, synced, renamed over
 *     it, the directory synced: a crash leaves the old or the new);
 *   - its identity: `st` as last read (device, inode, size, times), and
 *     look(), what is at its location now.  The core compares the two
 *     before a commit and again just before a new container lands
 *     (sv_source_same); a source whose location has no inode (an object
 *     in a store) fills st_ino and st_mtim from what proves it unchanged
 *     (its ETag and Last-Modified);
 *   - its locks: claim() for a read-write mount's life (a second
 *     read-write mount is refused), lock()/unlock() around a commit;
 *   - how a whole new container lands (SV_COMMIT_REWRITE): rewrite() has
 *     the caller write it to a new file, checks the location once more,
 *     and swaps it in so that a crash at any moment leaves the old
 *     container or the new one, and another writer's file is never lost;
 *   - prepare(), before a read-write use: what a crashed commit left
 *     beside the container is removed, and whether anything new can be
 *     made there at all (if not, the container is read-only).
 * A commit in place (SV_COMMIT_IN_PLACE) writes through `fd`, which a
 * source that supports it opens read-write; appends (SV_COMMIT_APPEND)
 * likewise.  Ops a source cannot do are NULL, and the core refuses what
 * needs them with a reason.
 *
 * Formats never see this header: they read through the container's calls
 * (format.h).  Remote sources are the remote layer over a transport
 * (remote.h).
 */
#ifndef SV_SOURCE_H
#define SV_SOURCE_H

#include "helpers.h"
#include "savefs.h"

#include <sys/stat.h>

/* ---- the interface sources implement ---------------------------------------- */

struct sv_source;

struct sv_source_ops {
	const char *kind;   /* "file", "directory": for messages and info */
	/* Its reads cost a request each (an object on a server): the
	 * container gives it a handle on its cache for what it fetched. */
	bool remote;
	/* It is written only whole (SV_COMMIT_REWRITE): a container its
	 * format commits otherwise (in place, by appending, member by
	 * member) is read-only there. */
	bool whole_only;
	/* Why it is never written (NULL: it may be), for the warning at an
	 * open that asked to write. */
	const char *read_only_why;
	/* What is at the source's location now: 0 and *now, or -errno
	 * (-ENOENT: nothing there). */
	int (*look)(struct sv_source *s, struct stat *now);
	/* What the source's own open handle holds now (a file appended to
	 * in place): 0 and *now, or -errno. */
	int (*held)(struct sv_source *s, struct stat *now);
	/* A directory with no times of its own to look at (a prefix in a
	 * store): its members now as one number, which changes when one is
	 * added, removed or replaced; a followed container polls it instead
	 * of held().  0 and *out, or -errno. */
	int (*digest)(struct sv_source *s, uint64_t *out, struct sv_err *err);
	/* How often a followed container of this source is polled, in ms
	 * (0: every 200 ms). */
	unsigned follow_ms;
	/* Ranges the container will read soon (sv_container_hint): a
	 * remote source fetches those it does not hold together.  NULL:
	 * nothing to gain. */
	void (*hint)(struct sv_source *s, const struct sv_range *r, size_t n);
	/* A remote object found changed since it was read (a 412 to a
	 * read: the read failed, nothing of the new one read): the container
	 * reads it again, after reopen() took its new first block and
	 * identity and dropped what was held of the old one.  Polled (a flag,
	 * no request); NULL: never. */
	bool (*stale)(struct sv_source *s);
	int (*reopen)(struct sv_source *s, struct sv_err *err);
	/* What the disk cache keeps of it is dropped (an open that failed on
	 * blocks it served: they are fetched again).  NULL: none kept. */
	void (*forget)(struct sv_source *s);
	int (*pread)(struct sv_source *s, uint64_t off, void *buf, size_t n,
		     struct sv_err *err);
	/* Up to n bytes, fewer where it ends now (NULL: pread within the
	 * size it was opened at). */
	int (*read_upto)(struct sv_source *s, uint64_t off, void *buf, size_t n, size_t *got,
			 struct sv_err *err);
	/* A read-write mount's shared claim (-EBUSY if another holds it;
	 * `wait`: a moment for one going away), and the commit's exclusive
	 * lock (waits a while, then -EBUSY). */
	int (*claim)(struct sv_source *s, bool wait, struct sv_err *err);
	int (*lock)(struct sv_source *s, struct sv_err *err);
	void (*unlock)(struct sv_source *s);
	/* Before a read-write use: 0, or -errno when nothing new can be made
	 * there (the container is then read-only). */
	int (*prepare)(struct sv_source *s);
	/* Before a commit copies from it: its bytes made local, in a file
	 * at `fd` (a remote object fetched whole; NULL: they are). */
	int (*localize)(struct sv_source *s, struct sv_err *err);
	/* SV_COMMIT_REWRITE: write(arg, fd) fills a new, empty file; then
	 * check(arg) (0 or -EBUSY with the reason) once it is synced; then
	 * the new file takes the old one's place.  On success the source
	 * holds the new file (fd, st).  On failure nothing at the location
	 * changed. */
	int (*rewrite)(struct sv_source *s, int (*write)(void *arg, int fd, struct sv_err *err),
		       int (*check)(void *arg, struct sv_err *err), void *arg,
		       struct sv_err *err);
	/* Members of a directory (NULL: the source has none). */
	int (*member_stat)(struct sv_source *s, const char *name, struct stat *st,
			   struct sv_err *err);
	int (*member_pread)(struct sv_source *s, const char *name, uint64_t off, void *buf,
			    size_t n, struct sv_err *err);
	int (*member_read_all)(struct sv_source *s, const char *name, uint64_t max,
			       struct sv_buf *out, struct sv_err *err);
	int (*member_list)(struct sv_source *s, int (*fn)(void *arg, const char *name),
			   void *arg, struct sv_err *err);
	int (*member_replace)(struct sv_source *s, const char *name, const char *tmp_prefix,
			      const void *p, size_t n, const struct stat *expect,
			      struct sv_err *err);
	/* A save folder at the source's location (a directory, a prefix
	 * of a store): rel is a path under it, names joined by '/' ("" the
	 * folder itself).  place_stat: what is at rel now (-ENOENT:
	 * nothing), a symbolic link as itself (never followed, and nothing is
	 * reached through one); place_list: fn(arg, name) for
	 * each entry of the directory rel, in no order, until fn returns
	 * non-zero (returned); place_read: up to n bytes of the file rel at
	 * off, fewer at its end; place_location: where rel is, to be
	 * opened as a source of its own (a new string; `dir`: rel is a
	 * directory).  NULL: the source is no folder. */
	int (*place_stat)(struct sv_source *s, const char *rel, struct stat *st,
			  struct sv_err *err);
	int (*place_list)(struct sv_source *s, const char *rel,
			  int (*fn)(void *arg, const char *name), void *arg, struct sv_err *err);
	int (*place_read)(struct sv_source *s, const char *rel, uint64_t off, void *buf,
			  size_t n, size_t *got, struct sv_err *err);
	char *(*place_location)(struct sv_source *s, const char *rel, bool dir);
	void (*close)(struct sv_source *s);
};

/* Reads this thread makes are for a container's tree (a format's open,
 * a directory it makes on demand), not for a view's bytes: a remote
 * object serves them in pieces (sv_source_tree_reads).  Nested calls
 * count; each begin has its end. */
void sv_source_tree_begin(void);
void sv_source_tree_end(void);
bool sv_source_tree_reads(void);

struct sv_source {
	const struct sv_source_ops *ops;
	char *path;          /* owned: where it is, for messages */
	int fd;              /* its open handle (a file, a directory), or -1
			      * (a remote object not localized) */
	struct stat st;      /* its identity as last read */
	uint64_t reads, read_bytes; /* through sv_container_pread (atomic) */
	uint64_t requests, fetched; /* a remote source's requests and the
				     * bytes they brought (atomic) */
	struct sv_cache *cache;     /* a remote source's blocks (owned handle),
				     * or NULL */
	char *store;                /* a remote source's disk cache of blocks
				     * (a directory), or NULL (-o noindex) */
	uint64_t disk_hits;         /* blocks the disk cache served (atomic) */
	uint64_t failures;          /* reads that failed for the host's sake
				     * (a server that did not answer), not the
				     * bytes' (atomic) */
	bool read_only;      /* opened for reading only */
	/* Where the source says what it did (a file put aside), set by the
	 * container: its log. */
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

/*
 * Opens what is at path: a directory as a directory source, anything else
 * as a file, a URL or an s3:// location as a remote source.  `opts` are
 * the options given ("key=value,...", anyone's: each kind of source takes
 * those its table names, sv_source_kinds).  Read-write unless read_only or
 * the place cannot be written; then *why is the errno that made it
 * read-only (0 if asked).  0, or -errno with the reason.
 */
int sv_source_open(const char *path, const char *opts, bool read_only, struct sv_source **out,
		   int *why, struct sv_err *err);

/* The kinds of source that take options of their own, as formats do
 * (sv_format.options): the keys, and a check of one "key=value" (0, or
 * -EINVAL with the reason).  NULL-terminated. */
struct sv_source_kind {
	const char *name;
	const char *const *options;
	int (*check)(const char *kv, struct sv_err *err);
};
extern const struct sv_source_kind *const sv_source_kinds[];
/* How many reads failed for the host's sake so far: a failure while it
 * grew is not remembered against an entry. */
uint64_t sv_source_failures(const struct sv_source *s);
/* Whether path is a URL (http:// or https://): an object on a server. */
bool sv_source_is_url(const char *path);
/* An object on an HTTP(S) server (http.c over remote.c): read by range,
 * read-only (*why EROFS unless read_only was asked). */
int sv_source_open_http(const char *url, bool read_only, struct sv_source **out, int *why,
			struct sv_err *err);
/* An object in an S3 store, s3://BUCKET/KEY (s3.c over remote.c): read
 * by range, written whole with If-Match; or a prefix, s3://BUCKET/PREFIX/
 * (or the bucket, s3://BUCKET/): a directory of member objects, and a
 * save folder's place. */
int sv_source_open_s3(const char *location, const char *opts, bool read_only,
		      struct sv_source **out, int *why, struct sv_err *err);
/* Whether path is an S3 location (s3://), and the options S3 locations
 * take (s3place.c). */
bool sv_source_is_s3(const char *path);
extern const struct sv_source_kind sv_s3_kind;
/* Whether path names a place a save folder may be: a directory, or a
 * prefix of an S3 store (s3://BUCKET/, s3://BUCKET/PREFIX/). */
bool sv_source_is_folder(const char *path);
/* A read-only file source holding a copy of p[0..n) (memory). */
int sv_source_open_mem(const void *p, size_t n, struct sv_source **out, struct sv_err *err);
void sv_source_free(struct sv_source *s);
/* Says a line in the source's log (the container's). */
void sv_source_log(struct sv_source *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* How the thing `now` differs from the one `was` by identity. */
enum { SV_SOURCE_SAME, SV_SOURCE_CHANGED, SV_SOURCE_REPLACED, SV_SOURCE_DELETED };
int sv_source_same(const struct stat *was, const struct stat *now);

/* Shared by the sources that are local files and directories (source.c). */
/* Exactly n bytes at off of fd within size: -EBADMSG past it, -EIO if
 * the file is shorter or the read fails. */
int sv_source_read_fd(int fd, uint64_t size, uint64_t off, void *buf, size_t n,
		      const char *what, struct sv_err *err);
/* Up to n bytes at off of fd, fewer where it ends now: *got. */
int sv_source_read_fd_upto(int fd, uint64_t off, void *buf, size_t n, size_t *got,
			   struct sv_err *err);
int sv_source_flock_claim(struct sv_source *s, bool wait, struct sv_err *err);
int sv_source_flock_lock(struct sv_source *s, struct sv_err *err);
void sv_source_flock_unlock(struct sv_source *s);
int sv_source_look_path(struct sv_source *s, struct stat *now);
int sv_source_held_fd(struct sv_source *s, struct stat *now);
extern const struct sv_source_ops sv_source_file_ops, sv_source_dir_ops;

#endif
