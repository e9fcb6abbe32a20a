/*
 * internal.h - what the core's own files share and nothing else includes:
 * the container structure and the helpers one concern of the core offers
 * another.  Formats, fs/ and the command line see only savefs.h.
 *
 * The core's files, one concern each:
 *   container.c  the format registry, opening, sniffing, closing
 *   source.c     the container's bytes: a file, or a directory's members
 *   nodes.c      the node table: add, find by (parent, name), names made
 *                valid and unique, removal and orphans, paths
 *   access.c     the client side: lookup, stat, readdir, reads, loads
 *                shared between threads
 *   prefetch.c   read-ahead of the next files of a directory read in order
 *   meta.c       /.savefs/info and /.savefs/log, warnings
 *   edit.c       pending edits: write, truncate, create, unlink, rename
 *   commit.c     the commit: validation, the new file, the re-index, the
 *                changes made outside commits (direct writes, following);
 *                which views a commit changed (groups, digests)
 *   decimal.c    the shortest decimals, and JSON written with them
 *
 * Locking: `lock` is a read-write lock.  Lookups, stats, reads and the
 * formats' load() run under the read lock; anything that changes the node
 * table, a pending edit or the format state (edits, create, unlink,
 * rename, commit) takes the write lock.  The log has its own mutex so that
 * it can be written from under either.  The cache has its own mutex.
 * Every function declared here expects the lock as its comment says.
 */
#ifndef SV_INTERNAL_H
#define SV_INTERNAL_H

#include "savefs.h"

#include <sys/stat.h>

#define LOG_LINES 256
#define PF_QUEUE 64
#define PF_MIN_SIZE 4096

struct loading {
	uint64_t key;
	struct loading *next;
	unsigned refs;           /* the loader and each waiter */
	bool done;
	int rc;                  /* then: 0 and blob, or an error */
	struct sv_blob *blob;
	struct sv_err err;
};

struct sv_container {
	pthread_rwlock_t lock;
	const struct sv_format *fmt;
	void *priv;              /* the format's state */
	struct sv_opts opts;
	char *format_opts;       /* owned: opts.format_opts as given */
	char *path;              /* owned */
	int fd;                  /* the container file as last opened */
	struct stat st;          /* its stat at open: detects outside changes */
	struct timespec mtime0;  /* the container's mtime when first opened:
				  * the mtime of every file not changed since */
	bool read_only;
	bool is_dir;             /* a directory of member files (source.c) */
	enum sv_commit_kind commit; /* the format's kind for this layout */

	struct sv_node *nodes;   /* owned; nnodes used of cap */
	uint32_t nnodes, cap;
	uint32_t *htab;          /* name hash heads, SV_NONE = empty */
	uint64_t name_steps;     /* hash-chain steps of name lookups (atomic) */
	uint32_t hsize;          /* power of two */
	bool reindexing;         /* open() runs again after a commit */
	uint64_t *tgroups;       /* groups touched by the commit under way
				  * (sv_group_touch), for the re-index */
	size_t ntgroups, captgroups;
	bool tgroups_all;        /* out of memory there: every group */
	struct sv_blob **snap;   /* during a commit: the content of each open
				  * file as it was, for those that go away */
	uint32_t nsnap;
	bool broken;             /* that failed: reads fail until a remount */
	bool in_place;           /* a commit in place (the format's state is
				  * new), or a refresh that asked for a
				  * re-read: the re-index calls rebuild() */

	uint32_t meta_dir, meta_info, meta_log;
	struct sv_cache *cache;  /* owned */

	char **warnings;         /* owned strings, found while opening */
	size_t nwarnings;

	/* Read-ahead across files: when the files of a directory are read in
	 * listing order, a worker decodes the next few into the cache on the
	 * other core while the reader's requests travel.  pf_lock protects
	 * the fields below; the worker reads nodes under the read lock. */
	pthread_mutex_t pf_lock;
	pthread_cond_t pf_cond;  /* work queued, or stop */
	pthread_t pf_thread;
	bool pf_started, pf_stop;
	uint32_t pf_queue[PF_QUEUE];
	unsigned pf_head, pf_count;
	uint32_t pf_dir, pf_pos; /* the last file read: directory, position */
	uint32_t pf_upto;        /* positions up to here are queued or read */
	uint32_t pf_stride;      /* the reader's step through the directory */
	/* The same place in sibling directories (a/x/f, a/y/f, a/z/f): the
	 * grandparent, the directory's position in it, and how far ahead
	 * the sibling directories are queued. */
	uint32_t pf_gdir, pf_dpos, pf_dupto;
	uint64_t pf_decoded;     /* files the worker decoded (for info) */

	/* Loads under way, so that concurrent readers of one node (the
	 * kernel's parallel read-ahead, several readers, the worker) share
	 * one decode instead of each making one. */
	pthread_mutex_t ld_lock;
	pthread_cond_t ld_cond;
	struct loading *loads;   /* protected by ld_lock */

	/* Told of changes made outside commits (direct writes, a followed
	 * container); set once by the client before use. */
	sv_changed_fn notify;
	void *notify_arg;

	/* The fingerprint (guard.c): the hash of the container's bytes as of
	 * fp_st, made by a worker on its own descriptor.  fp_lock protects
	 * fp_hash and fp_valid while the worker runs; the rest is the write
	 * lock's. */
	pthread_mutex_t fp_lock;
	pthread_t fp_thread;
	bool fp_started, fp_valid;
	int fp_fd;
	struct stat fp_st;
	uint64_t fp_hash;

	pthread_mutex_t log_lock; /* protects the ring below */
	char *log[LOG_LINES];
	size_t log_next, log_count;
};


/* Node numbers a commit or a direct write changed, for the client. */
struct changed_list {
	uint32_t *v;
	size_t n, cap;
};
void sv_changed_add(struct changed_list *l, uint32_t i);

/* ---- nodes.c (write lock held to change, read lock to look) ---- */
bool sv_name_ok(const char *s);
uint32_t sv_node_new(struct sv_container *c, uint32_t parent, const char *name,
		     uint32_t flags, uint64_t size, uint64_t key);
/* A live child by name, or SV_NONE. */
uint32_t sv_find_child(struct sv_container *c, uint32_t parent, const char *name);
void sv_hash_insert(struct sv_container *c, uint32_t i);
void sv_hash_remove(struct sv_container *c, uint32_t i);
int sv_kid_add(struct sv_container *c, struct sv_node *d, uint32_t k);
void sv_kid_remove(struct sv_container *c, struct sv_node *d, uint32_t k);
/* Keeps each child's kidpos equal to its index in the parent's list. */
void sv_renumber_kids(struct sv_container *c, struct sv_node *d, uint32_t from);
/* Node i left the tree: an orphan while open, else its memory goes. */
void sv_orphan_or_free(struct sv_container *c, uint32_t i);
/* Removes a node from its directory and the hash; the number stays used. */
void sv_node_drop(struct sv_container *c, uint32_t i);
bool sv_live(struct sv_container *c, uint32_t n);
/* Live, or an orphan still open: what stat, read and write accept. */
bool sv_usable(struct sv_container *c, uint32_t n);
/* 0 if usable; else -ESTALE for a node that was removed or replaced
 * (its number is old), -ENOENT for a number never given. */
int sv_gone_code(struct sv_container *c, uint32_t n);
int sv_path_locked(struct sv_container *c, uint32_t n, char *buf, size_t size);

/* ---- meta.c ---- */
int sv_add_meta(struct sv_container *c);
int sv_meta_content(struct sv_container *c, uint32_t n, struct sv_blob **out);
/* Logs "WHAT PATH: reason" for node i. */
void sv_log_failure(struct sv_container *c, uint32_t i, const char *what,
		    const struct sv_err *err);

/* ---- access.c (read or write lock held) ---- */
/* Cache keys: the node number, its generation, and a bit for edits.  A
 * failed load's reason is kept under the same bit: at one generation a
 * node is either edited (its edit's copy) or read as stored (whose load
 * may fail), never both. */
#define EDIT_KEY (1ull << 63)
#define FAIL_KEY EDIT_KEY
/* True if n's content could not be made at its present generation. */
static inline bool sv_failed(const struct sv_node *n)
{
	return __atomic_load_n(&n->failed, __ATOMIC_ACQUIRE) == (n->gen & 0x7fffffff) + 1;
}
uint64_t sv_cache_key(const struct sv_node *n, uint32_t i);
int sv_content_locked(struct sv_container *c, uint32_t i, struct sv_blob **out,
		      struct sv_err *err);
void sv_fill_stat(struct sv_container *c, uint32_t i, struct sv_stat *st);
void sv_settle_size(struct sv_container *c, uint32_t i);
/* A node a commit may have changed (SV_D_VERIFY) is loaded, so that its
 * mtime says whether it did; read lock held. */
void sv_settle_verify(struct sv_container *c, uint32_t i);
/* A node whose content may have changed now: with a known digest, it is
 * verified at its next load; else it takes the container's mtime. */
void sv_mark_changed(struct sv_container *c, uint32_t i, bool edited);
/* Lets the format add a lazy directory's entries; the read lock is let go
 * and taken again.  0, or -EIO. */
int sv_expand(struct sv_container *c, uint32_t dir);

/* ---- prefetch.c ---- */
/* A file whose content comes from the container through the cache. */
bool sv_plain_file(struct sv_container *c, uint32_t i);
void sv_pf_note_read(struct sv_container *c, uint32_t n);
/* The worker settles stream n's size (a stat does not wait for a costly
 * one); any lock.  Queue entries with this bit are such requests. */
#define PF_SETTLE 0x80000000u
void sv_pf_settle(struct sv_container *c, uint32_t n);
/* Stops the worker, if it was started (no lock held). */
void sv_pf_stop(struct sv_container *c);

/* ---- guard.c (write lock held) ---- */
enum { SV_GUARD_SAME, SV_GUARD_CHANGED, SV_GUARD_REPLACED, SV_GUARD_DELETED };
/* How the file `now` differs from the one `was`: SV_GUARD_*. */
int sv_guard_same(const struct stat *was, const struct stat *now);
/* 0 if the file at the path is still the one read (or was only touched),
 * else -EBUSY with what happened to it; `when` ends the message ("since it
 * was read"). */
int sv_guard_check(struct sv_container *c, const char *when, struct sv_err *err);
/* A read-write open's shared claim on the file: -EBUSY if another
 * read-write mount holds it. */
int sv_guard_claim(struct sv_container *c, struct sv_err *err);
/* The commit's exclusive lock (waits a while, then -EBUSY), and back. */
int sv_guard_lock(struct sv_container *c, struct sv_err *err);
void sv_guard_unlock(struct sv_container *c);
/* Starts fingerprinting the file as c->fd and c->st have it now. */
void sv_guard_fingerprint(struct sv_container *c);
/* True when the fingerprint is made (for /.savefs/info; any lock). */
bool sv_guard_fingerprinted(struct sv_container *c);
/* The same inode and size as fingerprinted, other times: true if the
 * bytes are the same (and the new times are adopted). */
bool sv_guard_touched(struct sv_container *c, const struct stat *now);
/* Waits for the worker and lets its descriptor go. */
void sv_guard_fp_stop(struct sv_container *c);

/* ---- edit.c (write lock held) ---- */
/* A write or truncation of node i goes to the format at once. */
bool sv_direct(struct sv_container *c, uint32_t i);
/* Ends a direct write, truncation or sync: the tree follows, a refusal is
 * logged, and the write lock is let go. */
int sv_direct_end(struct sv_container *c, uint32_t i, uint32_t count, int rc,
		  struct sv_err *err);

/* ---- commit.c (write lock held) ---- */
int sv_reindex(struct sv_container *c, struct changed_list *changed, struct sv_err *err);
/* Drops node i's pending edit: it reads as stored again. */
void sv_discard_locked(struct sv_container *c, uint32_t i);
/* 0 if p[0..len) is what the view i shows now, else -EPERM (or -EIO)
 * with the reason. */
int sv_view_same(struct sv_container *c, uint32_t i, const uint8_t *p, size_t len,
		 struct sv_err *err);
/* A read-only view that takes a write of the bytes it shows (a restore
 * that copies views too): a file of the container's, not a stream. */
static inline bool sv_view(const struct sv_node *n)
{
	return (n->flags & (SV_N_RO | SV_N_META | SV_N_DIR | SV_N_STREAM | SV_N_DIRECT)) ==
	       SV_N_RO;
}
int sv_direct_done(struct sv_container *c, uint32_t old_count, int rc, struct sv_err *err);
/* Takes the write lock, runs pre (1: nothing to commit), commits, tells fn
 * of the changed nodes, lets the lock go (no lock held on entry). */
int sv_commit_and_notify(struct sv_container *c, sv_changed_fn fn, void *arg,
			 struct sv_err *err,
			 int (*pre)(struct sv_container *, void *, struct sv_err *),
			 void *pre_arg);

#endif
