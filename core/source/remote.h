/*
 * source/remote.h - the remote layer, and the transports under it.
 *
 * A remote location (an object on an HTTP server, in an S3 store, a
 * prefix of a store) is a source made of two parts.  The remote layer
 * (remote.c for an object, remote_prefix.c for a prefix) does what any
 * store needs: a block cache in memory (the container's) and on disk
 * (the persistent index's store), reads that widen as a reader goes on,
 * the format's hints fetched together, the object's version pinned at
 * the open and checked at every read, a changed object found and read
 * again, listings held a while and the save folder's place calls
 * answered from them, and whole rewrites landed only on the version read.
 * A transport (http.c, s3.c; a test's own in memory) only moves bytes:
 * it states an object, gets a range or the whole of it, lists a page of
 * a prefix, and puts an object on a condition.  A new backend is one
 * transport file: nothing above it changes.
 *
 * Objects are named by key: NULL is the transport's own object (the one
 * location it was made for); a string is a path under its prefix
 * (names joined by '/', as sv_name_ok takes them).
 */
#ifndef SV_REMOTE_H
#define SV_REMOTE_H

#include "internal.h"

/* What a store said of one version of an object. */
struct sv_remote_version {
	uint64_t size;        /* UINT64_MAX: not said */
	char etag[256];       /* as sent ("" if none) */
	char modified[64];    /* Last-Modified as sent ("" if none) */
	char date[64];        /* the answer's Date ("" if none) */
};

/* One entry of a listing: an object, or (dir) a prefix under the one
 * listed, its name after that prefix (no '/' in it); an object's size,
 * ETag as listed (quoted, "" if none) and time (0 if none). */
struct sv_remote_entry {
	const char *name;
	bool dir;
	uint64_t size;
	const char *etag;
	int64_t mtime;
};

struct sv_transport;

struct sv_transport_ops {
	const char *kind;            /* "HTTP object": for messages and info */
	const char *prefix_kind;     /* "S3 prefix", or NULL: no prefixes */
	const char *read_only_why;   /* why its objects are never written (no put) */
	/* A server that ignores ranges: the object is read whole at its open
	 * (up to SV_REMOTE_WHOLE_MAX); false: such a store is refused. */
	bool whole_when_unranged;
	/* Key's stat (a HEAD): 0 and *v, or -errno with the reason
	 * (-ENOENT: not there). */
	int (*stat)(struct sv_transport *t, const char *key, struct sv_remote_version *v,
		    struct sv_err *err);
	/* Bytes [off, off + n) of key (n > 0) into buf, of version `expect`
	 * only (NULL: any): 0 and *got (n, or fewer where the object ends)
	 * and *v, what the answer said (size: the object's whole size);
	 * -ESTALE when the object is no longer `expect`; -ERANGE when the
	 * server sent the whole object instead, larger than n (v->size, if
	 * it said); else -errno.  Each with the reason. */
	int (*get)(struct sv_transport *t, const char *key, uint64_t off, size_t n,
		   const struct sv_remote_version *expect, void *buf, size_t *got,
		   struct sv_remote_version *v, struct sv_err *err);
	/* The whole of key appended to out: -EFBIG past max bytes. */
	int (*get_whole)(struct sv_transport *t, const char *key, uint64_t max,
			 struct sv_buf *out, struct sv_remote_version *v, struct sv_err *err);
	/* One page of the listing of directory `dir` ("" the prefix): fn(arg,
	 * entry) for each entry directly in it, after `token` (NULL: the
	 * first page), `max` entries at most (0: the store's page).  *more
	 * and next (the token of the next page) when it goes on.  NULL: the
	 * transport lists nothing. */
	int (*list)(struct sv_transport *t, const char *dir, const char *token, unsigned max,
		    int (*fn)(void *arg, const struct sv_remote_entry *e), void *arg,
		    bool *more, char *next, size_t cap, struct sv_err *err);
	/* Key put whole from fd (or p, if not NULL), `size` bytes, only if
	 * it is still the object of ETag `match` (NULL: only if there is
	 * none); check(arg) is asked once more before a store's upload in
	 * parts completes.  0 and v->etag (the new object's, "" if the store
	 * gave none); -ESTALE when the condition failed; -errno with the
	 * reason.  NULL: the transport writes nothing. */
	int (*put)(struct sv_transport *t, const char *key, int fd, const void *p,
		   uint64_t size, const char *match, int (*check)(void *arg, struct sv_err *err),
		   void *arg, struct sv_remote_version *v, struct sv_err *err);
	void (*close)(struct sv_transport *t);
};

struct sv_transport {
	const struct sv_transport_ops *ops;
	const char *path;            /* where, as messages say it (the source's) */
	struct sv_source *counts;    /* the source whose requests, bytes fetched
				      * and failures it counts (atomically) */
};

/* A server that ignores ranges is read whole up to this. */
#define SV_REMOTE_WHOLE_MAX (256u << 20)

/*
 * Sources over transport t (taken: closed with the source, or on
 * failure): the object t was made for, read from its first block (which
 * tells its size and version) unless a listing held gives its version
 * (sv_remote_listed), read-write if t puts and !read_only; or
 * the prefix t lists, checked by a first page.  path is where, as
 * messages say it (a prefix's ends in '/').  0, or -errno with the reason.
 */
int sv_remote_open_object(struct sv_transport *t, const char *path, bool read_only,
			  struct sv_source **out, struct sv_err *err);
int sv_remote_open_prefix(struct sv_transport *t, const char *path, bool read_only,
			  struct sv_source **out, struct sv_err *err);
/* The version of the object at `where` as a listing held by an open
 * prefix gives it (listed less than 10 s ago: size, ETag, time): true and
 * *v, or false.  An object a folder listed opens on it, without a
 * request: its first block comes from the disk cache when that holds it
 * for this version, else with its first read. */
bool sv_remote_listed(const char *where, struct sv_remote_version *v);
/* Waits for the fetch behind a reader of object s at random, if one
 * runs (for the tests). */
void sv_remote_wait_behind(struct sv_source *s);

/* s made a remote source over t (by the openers): its ops (the caller's
 * copy, named as t's kind), its location `path` (taken) for it and its
 * transport's messages, read-only if asked or t puts nothing; t counts
 * its requests in s. */
void sv_remote_bind(struct sv_source *s, const struct sv_source_ops *ops, struct sv_transport *t,
		    char *path, bool read_only);
/* st of a remote object: a regular file of `size` bytes whose inode is
 * the hash of its location `where` and ETag (else its time) and size,
 * its times t. */
void sv_remote_identity(struct stat *st, const char *where, uint64_t size, const char *etag,
			time_t t);
/* An HTTP date (Last-Modified): seconds, or 0 if none. */
time_t sv_remote_time(const char *date);

#endif
