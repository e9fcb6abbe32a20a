/*
 * internal.h - what the core's own files share and nothing else includes:
 * the container structure, a node's own fields, and the calls one layer
 * of the core offers the layers above it.  Formats see format.h, fs/ and
 * the command line savefs.h.
 *
 * The core in layers, bottom up; a file calls only into the layers below
 * its own (tests/tools/layers.py checks it in `meson test`):
 *   helpers   util.c (errors, buffers, blobs, names, zlib, files),
 *             decimal.c, cache.c, rd.c, index.c (the persistent index),
 *             the pool of workers that build ahead (ahead.c), and
 *             the arrays that leave the heap for a file (tab.c),
 *             codec/ (PNG, base64, gzip, zip)
 *   sources   source/: source.c (opening, identity, the calls formats make
 *             for bytes and members), file.c, dir.c, and the remote layer
 *             remote.c (an object) and remote_prefix.c (a prefix) over the
 *             transports http.c and s3.c (curl.c their libcurl; s3place.c
 *             where, and with what credentials; s3xml.c the answers)
 *   log.c     the container's log and warnings
 *   guard.c   identity checks, the commit's lock, the fingerprint
 *   nodes.c   the node table: add, find by (parent, name), names made
 *             valid and unique, paths, groups
 *   kept.c    views and their sizes kept between mounts, in the
 *             persistent index's store
 *   meta.c    /.savefs/info and /.savefs/log, a node's failure logged
 *   load.c    a node's content: loads shared between threads, the cache,
 *             sizes, digests, stats, lazy directories; a node's removal
 *             (an open one keeps its content as an orphan)
 *   prefetch.c  read-ahead of the next files of a directory read in order
 *   access.c  the client side: open, lookup, stat, readdir, read
 *   commit.c  the commit (validation, the new container through the
 *             source or the format in place, the re-index, which views it
 *             changed), direct writes and a followed container
 *   edit.c    pending edits: write, truncate, create, unlink, rename
 *   container.c  the format registry, opening, sniffing, closing
 *   fmt/      the formats, a folder each family: they call the core below
 *             them (format.h) and their own family's files, never another
 *             family's (the core reaches them through sv_formats[] only)
 *   tree/     what a client opens at a location: tree.c (a container, or
 *             a folder), folder.c (a save folder of containers)
 *
 * Locks.  Every lock of the daemon, outermost first: a thread holding one
 * takes only locks below it in this table, never one above (ThreadSanitizer
 * in `meson test` over the threaded suites checks the orders it sees).
 *
 *   lock                  where           guards
 *   fs->open_lock         fs/fs.h         the list of open files (alone: nothing
 *                                         is called under it)
 *   sv_folder.lock        tree/folder.c   a folder's entry table, container slots,
 *                                         kept sources, its log; released around
 *                                         a container's open and any call into a
 *                                         container but sv_container_idle()
 *                                         (a try-lock) and its close
 *   folder ahead lock     tree/folder_ahead.c  a walk over the folder's containers:
 *                                         its last note and queued jobs (never
 *                                         held with the folder's lock; the pool's
 *                                         lock under it)
 *   sv_container.lock     internal.h      read-write: lookups, stats, reads and a
 *                                         format's load() under the read lock;
 *                                         anything that changes the node table, a
 *                                         pending edit or the format's state
 *                                         (edits, commits, re-index) under the
 *                                         write lock
 *   format locks          fmt/            taken under the container's lock, read or
 *                                         write, and holding nothing of the core:
 *                                         nethack det_lock, scan_lock, st_lock;
 *                                         recording cur_lock; starbound cel_lock
 *   ld_lock               load.c          loads under way (waiters sleep on ld_cond;
 *                                         the cache's lock under it, for a look;
 *                                         the load itself runs without it)
 *   pf_lock               prefetch.c      the read-ahead queue; a worker drops it
 *                                         before taking the container's read lock
 *   fp_lock               guard.c         the fingerprint's result (its worker holds
 *                                         nothing else)
 *   remote lock           source/remote.c a remote object's next block, window,
 *                                         whole fetch tried (never held over a
 *                                         request)
 *   open prefixes lock    source/remote_prefix.c  the process's open prefixes, for
 *                                         an object's open to find its listed
 *                                         version (a prefix's lock under it)
 *   prefix lock           source/remote_prefix.c  a prefix's listings held (never
 *                                         held over a request)
 *   curl lock             source/curl.c   a transport's idle handles (a leaf)
 *   pool lock             ahead.c         the workers' ring of owners with work, each
 *                                         owner's busy count (a leaf: taken when an
 *                                         owner posts, under its own lock; never
 *                                         held over a job)
 *   kept lock             kept.c          the sizes kept between mounts, a
 *                                         container's views waiting to be written
 *                                         (the disk is written without it)
 *   store lock            kept.c          the views waiting for a worker to write
 *                                         them (taken alone; the pool's lock under
 *                                         it)
 *   store lock            cache.c         the decoded-data cache (a leaf)
 *   tab lock              tab.c           the arrays that left the heap (a leaf)
 *   log_lock              log.c           the container's log ring (a leaf: written
 *                                         from under any lock above)
 *   fs_notify.lock        fs/ops.c        the kernel notifications queued, the busy
 *                                         guard's counts (a leaf: taken from the
 *                                         core's change callbacks, under the
 *                                         container's or the folder's lock)
 *   fh lock               fs/ops.c        one open file's big blob (a leaf)
 *
 * Read to write: the read lock cannot become the write lock in place.
 * sv_lock_upgrade() drops the read lock and takes the write lock, and
 * sv_lock_downgrade() goes back; another writer may run in between, so a
 * caller looks again, under the new lock, at everything it saw before
 * (sv_live() of its node, flags, pointers into the node table, nnodes).
 *
 * Atomics, outside any lock, in three patterns:
 *   published once  a value made by whichever reader needs it first (a
 *                   node's lazy size and digest, a format's table, a
 *                   failure remembered): its fields stored, then its flag
 *                   (sized, dstate, failed, scanned, detailed) with a
 *                   release store; a reader that sees the flag with an
 *                   acquire load sees the fields.  A commit clears the flag
 *                   under the write lock.
 *   counts          a node's held, opens and drops; a blob's refs (acq_rel
 *                   on the last drop, which frees it); a source's failures
 *                   (release, read with acquire).
 *   statistics      requests, bytes, reads and hits shown in /.savefs/info:
 *                   relaxed, exact only when nothing runs.
 * A remote object's `changed` (a 412 seen) is a published flag too: set by
 * the read that met it, cleared by the reopen under the write lock.
 */
#ifndef SV_INTERNAL_H
#define SV_INTERNAL_H

#include "container.h"
#include "format.h"
#include "source/source.h"

#include <sys/stat.h>

/* A format's optional call of a group (sv_format_edits, _dirs, _streams,
 * _live): NULL if the format lacks the group or the call. */
#define SV_FMT(f, group, call) ((f)->group ? (f)->group->call : NULL)

/* The write lock in place of the read lock c's caller holds, and back
 * (see "Read to write" above: not atomic; look again after either). */
static inline void sv_lock_upgrade(struct sv_container *c);
static inline void sv_lock_downgrade(struct sv_container *c);

/* ---- nodes: the core's own fields and state ---- */

/* The core's state bits in a node's flags; the first six are what
 * format.h's sv_node_state() shows (SV_S_*, the same bits). */
enum {
	SV_N_META = SV_S_META,   /* generated by the core (/.savefs/...) */
	SV_N_TEMP = SV_S_TEMP,   /* a temporary file held in memory only */
	SV_N_NEW = SV_S_NEW,     /* created, not yet in the container */
	SV_N_GONE = SV_S_GONE,   /* removed; the number is not reused (unless
				  * SV_N_FREE) */
	SV_N_DIRTY = SV_S_DIRTY, /* pending holds edited content not yet committed */
	SV_N_STALE = SV_S_STALE, /* not seen again while re-indexing */
	SV_N_READY = 1 << 10,    /* its edit is complete (closed): the next
				  * commit takes it; other edits stay pending */
	SV_N_ORPHAN = 1 << 11,   /* removed or replaced while open: pending
				  * holds its content until the last release */
	SV_N_TOUCHED = 1 << 14,  /* content changed by a commit (sv_node_touch) */
	SV_N_FREE = 1 << 21,     /* with SV_N_GONE: an index directory's entry
				  * the client forgot: the number may be
				  * given again (to a new lookup's node) */
};
#define SV_N_STATE (SV_N_META | SV_N_TEMP | SV_N_NEW | SV_N_GONE | SV_N_DIRTY | SV_N_STALE | \
		    SV_N_READY | SV_N_ORPHAN | SV_N_TOUCHED | SV_N_FREE)
_Static_assert((SV_N_STATE & SV_N_DECLARED) == 0, "declared and state bits overlap");

/* A node as the core holds it: the fields a format sees (struct sv_node,
 * sv_node() gives &pub), then the core's own. */
/* An index directory's entry made a node, as it was then (the number is
 * given again once the node goes; its generation tells). */
struct sv_evictee {
	uint32_t node, gen;
};

struct sv_inode {
	union {
		struct sv_node pub;
		struct {
			SV_NODE_FIELDS
		};
	};
	uint32_t gen;      /* bumped whenever the content may have changed */
	uint64_t stored_size; /* size as stored in the container */
	uint32_t hnext;    /* next node in the same name-hash chain */
	uint32_t dupnext;  /* next "~N" suffix for a duplicate name */
	uint32_t kidpos;   /* index in the parent's kids */
	uint32_t opens;    /* open files on it (atomic; sv_open/sv_release) */
	uint32_t held;     /* the client's lookups of it not yet forgotten
			    * (atomic; sv_lookup_held, sv_forget): an index
			    * directory's entry goes when none are left */
	uint32_t sized;    /* SV_N_LAZYSIZE: size is known (atomic) */
	uint32_t drops;    /* edits of it dropped (refused, or their commit
			    * failed) so far (atomic) */
	uint32_t failed;   /* gen + 1 when its content could not be made at
			    * that generation, else 0 (atomic) */
	int64_t mtime_ns;  /* when its stored content last changed (a commit
			    * or a followed change); 0: the container's
			    * mtime when it was opened */
	int64_t etime_ns;  /* its pending edit's last write */
	int64_t utime_ns;  /* a modification time set by a client (utimens),
			    * kept until its bytes change again; 0: none */
	int64_t uatime_ns; /* likewise, the access time; 0: the mtime */
	uint64_t digest;   /* xxh3 of its stored content as last loaded
			    * (SV_D_KNOWN), for telling whether a commit
			    * changed its bytes */
	int64_t vtime_ns;  /* SV_D_VERIFY: when the commit that may have
			    * changed it landed (its mtime if it did) */
	uint32_t dstate;   /* SV_D_* (atomic) */
	uint32_t kept_epoch; /* kept.c: its view is noted for the container's
			      * identity of this epoch, at generation kept_gen
			      * (atomic) */
	uint32_t kept_gen;
	uint64_t group;    /* the stored unit it is a view of (a record, a
			    * chunk); 0: none.  A commit that changes one
			    * view of a group may change every view of it */
	uint32_t capkids;
	uint32_t told;     /* the client was told to drop it (sv_node_evictable)
			    * and has not forgotten it yet (write lock) */
	uint32_t nsubdirs; /* directories among kids (for nlink) */
	uint64_t listpos;  /* an index directory's entry: its position in the
			    * format's list() (UINT64_MAX: not known) */
	struct sv_buf pending; /* SV_N_DIRTY / SV_N_TEMP / SV_N_NEW content */
};
_Static_assert(offsetof(struct sv_inode, pub) == 0, "the format's view opens the node");

/* sv_inode.dstate */
enum {
	SV_D_KNOWN = 1 << 0,  /* digest holds the hash of the stored content */
	SV_D_VERIFY = 1 << 1, /* a commit may have changed it: the next load
			       * compares its hash with digest, and the node
			       * takes vtime_ns as its mtime if they differ */
};

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
	char *path;              /* the source's path (for messages) */
	struct sv_source *src;   /* owned: where its bytes come from, its
				  * identity, locks, how a rewrite lands */
	struct timespec mtime0;  /* the container's mtime when first opened:
				  * the mtime of every file not changed since */
	bool read_only;
	bool prepared;           /* its source's prepare() ran (or needs none) */
	uint32_t opened;         /* opens of its files not yet released (atomic;
				  * sv_open, sv_release): it is not idle */
	enum sv_commit_kind commit; /* the format's kind for this layout */

	struct sv_inode *nodes;  /* owned; nnodes used of cap */
	uint32_t nnodes, cap;
	uint32_t *freed;         /* numbers of SV_N_FREE nodes, given again
				  * by sv_node_new while `reuse` is set */
	uint32_t nfreed, capfreed;
	struct sv_evictee *evict;    /* index directories' entries made, oldest
				  * first from evict_head (sv_node_evictable) */
	size_t evict_head, nevict, capevict;
	uint32_t told;           /* entries told and not forgotten yet */
	uint32_t made_over;      /* entries made while the client was behind,
				  * since an index directory was last told
				  * whole */
	bool reuse;              /* a lookup in an index directory is making
				  * its entry's node */
	uint32_t *htab;          /* name hash heads, SV_NONE = empty */
	uint64_t name_steps;     /* hash-chain steps of name lookups (atomic) */
	uint32_t hsize;          /* power of two */
	bool reindexing;         /* open() runs again after a commit */
	struct sv_u64set tgroups; /* groups touched by the commit under way
				   * (sv_group_touch), for the re-index */
	struct sv_blob **snap;   /* during a commit: the content of each open
				  * file as it was, for those that go away */
	uint32_t nsnap;
	bool broken;             /* that failed: reads fail until a remount */
	uint64_t digest;         /* a followed remote directory's members as
				  * last polled (source's digest op) */
	bool digested;           /* digest is set */
	const uint8_t *edited;   /* during a re-index: per node (nedited of
				  * them), whether the commit wrote it */
	uint32_t nedited;
	bool relist;             /* the re-index found again a lazy directory
				  * listed before */
	bool rebuild;            /* a commit landed (the format's state may
				  * be the new one), or a refresh asked for a
				  * re-read: the re-index calls rebuild() */

	uint32_t meta_dir, meta_info, meta_log;
	struct sv_cache *cache;  /* owned */
	struct sv_kept *kept;    /* owned (kept.c); NULL: nothing is kept */

	char **warnings;         /* owned strings, found while opening */
	size_t nwarnings;

	/* Read-ahead across files: when the files of a directory are read in
	 * listing order, the pool's workers decode the next few into the
	 * cache while the reader's requests travel.  pf_lock protects the
	 * fields below; a worker reads nodes under the read lock. */
	pthread_mutex_t pf_lock;
	struct sv_ahead pf_ahead; /* the pool's handle (ahead.c) */
	bool pf_stop;
	uint32_t pf_queue[PF_QUEUE];
	unsigned pf_head, pf_count;
	uint32_t pf_dir, pf_pos; /* the last file read: directory, position */
	uint32_t pf_upto;        /* positions up to here are queued or read */
	uint32_t pf_stride;      /* the reader's step through the directory */
	/* The same place in sibling directories (a/x/f, a/y/f, a/z/f): the
	 * grandparent, the directory's position in it, and how far ahead
	 * the sibling directories are queued. */
	uint32_t pf_gdir, pf_dpos, pf_dupto;
	/* In an index directory: the queued entries' positions (PF_INDEX
	 * queue entries name the directory), the last one read, and how far
	 * ahead they are queued. */
	uint64_t pf_qpos[PF_QUEUE];
	uint64_t pf_ipos, pf_iupto;
	uint64_t pf_decoded;     /* files the workers decoded (for info) */
	unsigned wr_want;        /* threads waiting for the write lock (an
				  * atomic, sv_wrlock): the workers start no
				  * job meanwhile */

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
	bool fp_cancel;          /* the worker stops (before a fork) */
	bool fp_again;           /* stopped unfinished: started again after */
	bool fp_behind;          /* made by a thread of low priority */
	int fp_fd;
	int fp_drop;             /* the file fp_fd was before, to be closed */
	struct stat fp_st;
	uint64_t fp_hash;

	pthread_mutex_t log_lock; /* protects the ring below */
	char *log[LOG_LINES];
	size_t log_next, log_count;
	uint64_t log_said;        /* lines logged since the open (atomic) */
};

/* The container's write lock, the workers told to start nothing while
 * it is waited for. */
static inline void sv_wrlock(struct sv_container *c)
{
	__atomic_add_fetch(&c->wr_want, 1, __ATOMIC_ACQ_REL);
	pthread_rwlock_wrlock(&c->lock);
	__atomic_sub_fetch(&c->wr_want, 1, __ATOMIC_ACQ_REL);
}

static inline void sv_lock_upgrade(struct sv_container *c)
{
	pthread_rwlock_unlock(&c->lock);
	sv_wrlock(c);
}

static inline void sv_lock_downgrade(struct sv_container *c)
{
	pthread_rwlock_unlock(&c->lock);
	pthread_rwlock_rdlock(&c->lock);
}


/* Node numbers a commit or a direct write changed, for the client. */
struct changed_list {
	uint32_t *v;
	size_t n, cap;
};
void sv_changed_add(struct changed_list *l, uint32_t i);

/* The persistent index's cap in bytes. */
#define SV_INDEX_CAP (256ull << 20)

/* ---- kept.c (read or write lock held, unless said) ---- */
/* Views' sizes and views kept between mounts (kept.c's top comment). */
/* The persistent index's directory for c, or false if c keeps nothing
 * there (-o noindex, a relative path, no home). */
bool sv_kept_dir(const struct sv_container *c, char *buf, size_t size);
/* At the open (nothing held): 0, or -ENOMEM. */
int sv_kept_init(struct sv_container *c);
/* At the close (nothing held): the sizes learned join the record. */
void sv_kept_free(struct sv_container *c);
/* Node i's size and digest as an earlier mount learned them: true. */
bool sv_kept_size(struct sv_container *c, uint32_t i, uint64_t *size, uint64_t *digest);
/* What one load of a node tells kept.c once: whether its view may be
 * kept, and the hash of its path. */
struct sv_kept_ticket {
	bool ok;
	uint64_t path;
};
/* Node i's view as an earlier load built it: 0, *out and its xxh3 in
 * *digest, or -ENOENT; either way *t is filled for sv_kept_built. */
int sv_kept_view(struct sv_container *c, uint32_t i, struct sv_kept_ticket *t,
		 struct sv_blob **out, uint64_t *digest);
/* Node i's view b (of xxh3 digest) was built: its size noted, and the
 * view kept on disk if it fits the container's budget; unless its decode
 * logged something (then nothing kept is served for the container: each
 * mount's log says it). */
void sv_kept_built(struct sv_container *c, uint32_t i, const struct sv_kept_ticket *t,
		   const struct sv_blob *b, uint64_t digest, bool logged);
/* A view built under ticket t is to be kept, before the readers waiting
 * for it have it (its sv_kept_built then follows): the counts wait for
 * it. */
void sv_kept_coming(const struct sv_kept_ticket *t);
/* The process's counts as a JSON object (a json_t *; any lock). */
void *sv_kept_json(void);

/* ---- log.c (any lock) ---- */
/* How many lines c has logged since it was opened. */
uint64_t sv_log_said(struct sv_container *c);
/* sv_log and sv_warn are format.h's. */

/* ---- guard.c (write lock held) ---- */
/* 0 if the file at the path is still the one read (or was only touched),
 * else -EBUSY with what happened to it; `when` ends the message ("since it
 * was read"). */
int sv_guard_check(struct sv_container *c, const char *when, struct sv_err *err);
/* A read-write open's shared claim on the file: -EBUSY if another
 * read-write mount holds it. */
int sv_guard_claim(struct sv_container *c, bool wait, struct sv_err *err);
/* The commit's exclusive lock (waits a while, then -EBUSY), and back. */
int sv_guard_lock(struct sv_container *c, struct sv_err *err);
void sv_guard_unlock(struct sv_container *c);
/* Starts fingerprinting the container as its source has it now: a small
 * one at once unless `later` (after a commit: the commit does not wait
 * for it), else by a thread of low priority, which a commit that needs
 * the fingerprint waits for. */
void sv_guard_fingerprint(struct sv_container *c, bool later);
/* True when the fingerprint is made (for /.savefs/info; any lock). */
bool sv_guard_fingerprinted(struct sv_container *c);
/* The same inode and size as fingerprinted, other times: true if the
 * bytes are the same (and the new times are adopted). */
bool sv_guard_touched(struct sv_container *c, const struct stat *now);
/* Waits for the worker and lets its descriptor go. */
void sv_guard_fp_stop(struct sv_container *c);

/* ---- nodes.c (write lock held to change, read lock to look) ---- */
uint32_t sv_node_new(struct sv_container *c, uint32_t parent, const char *name,
		     uint32_t flags, uint64_t size, uint64_t key);
/* A live child by name, or SV_NONE. */
uint32_t sv_find_child(struct sv_container *c, uint32_t parent, const char *name);
void sv_hash_insert(struct sv_container *c, uint32_t i);
void sv_hash_remove(struct sv_container *c, uint32_t i);
int sv_kid_add(struct sv_container *c, struct sv_inode *d, uint32_t k);
void sv_kid_remove(struct sv_container *c, struct sv_inode *d, uint32_t k);
/* Keeps each child's kidpos equal to its index in the parent's list. */
void sv_renumber_kids(struct sv_container *c, struct sv_inode *d, uint32_t from);
bool sv_live(struct sv_container *c, uint32_t n);
/* Live, or an orphan still open: what stat, read and write accept. */
bool sv_usable(struct sv_container *c, uint32_t n);
/* 0 if usable; else -ESTALE for a node that was removed or replaced
 * (its number is old), -ENOENT for a number never given. */
int sv_gone_code(struct sv_container *c, uint32_t n);
int sv_path_locked(struct sv_container *c, uint32_t n, char *buf, size_t size);
/* The node of the entry `name` of directory dir, made by the format's
 * lookup() if it is no node yet: SV_NONE if there is none (write lock
 * held). */
uint32_t sv_make_entry(struct sv_container *c, uint32_t dir, const char *name);
/* The container's budget of nodes: a 1/1024th of the cache cap while the
 * cache is empty, fewer as it fills (about 256 bytes a node with its name
 * and hash slots), at least 4,096.  It asks the cache how full it is. */
uint32_t sv_node_budget(const struct sv_container *c);
/* True while the container holds fewer nodes than its budget: a listing
 * may make an SV_N_LIST_AS_NODES directory's entries. */
bool sv_node_room(const struct sv_container *c);
/* An index directory's entry k was made a node (write lock held): it
 * joins the made entries, and while the container holds more nodes than
 * its budget the oldest the client holds is told (notify, as gone) to
 * the client, which drops its name and then forgets it: the nodes follow
 * what the client holds, and that stays near the budget.  While half a
 * budget of told entries are not forgotten yet (the client is behind:
 * each telling waits for the directory to be idle), the directory itself
 * is told instead, once per an eighth of the budget made meanwhile: the
 * client then drops every entry below it that nothing uses at once. */
void sv_node_evictable(struct sv_container *c, uint32_t k);
/* True if node i is an index directory's entry nothing holds: no lookup
 * the client has not forgotten, no open, no edit, no listed children. */
bool sv_node_forgettable(struct sv_container *c, uint32_t i);
/* Node i leaves the tree: no longer counted as told (write lock). */
void sv_node_untold(struct sv_container *c, uint32_t i);
/* Lets such a node go: its number joins the free list (write lock). */
void sv_node_free(struct sv_container *c, uint32_t i);

/* Each node of c from `from` on, in number order: a pass over the node
 * table (in a file past the spill threshold: tab.c) counts what it
 * touches, so that its pages are shed behind it. */
#define SV_EACH_NODE(c, i, from)                                                         \
	for (uint32_t i = (from); i < (c)->nnodes; i++, sv_tab_touch(sizeof(struct sv_inode)))

/* ---- meta.c ---- */
int sv_add_meta(struct sv_container *c);
int sv_meta_content(struct sv_container *c, uint32_t n, struct sv_blob **out);
/* Logs "WHAT PATH: reason" for node i. */
void sv_log_failure(struct sv_container *c, uint32_t i, const char *what,
		    const struct sv_err *err);

/* ---- load.c (read or write lock held) ---- */
/* Cache keys: the node number, its generation, and a bit for edits.  A
 * failed load's reason is kept under the same bit: at one generation a
 * node is either edited (its edit's copy) or read as stored (whose load
 * may fail), never both. */
#define EDIT_KEY (1ull << 63)
#define FAIL_KEY EDIT_KEY
/* True if n's content could not be made at its present generation. */
static inline bool sv_failed(const struct sv_inode *n)
{
	return __atomic_load_n(&n->failed, __ATOMIC_ACQUIRE) == (n->gen & 0x7fffffff) + 1;
}
uint64_t sv_cache_key(const struct sv_inode *n, uint32_t i);
int sv_content_locked(struct sv_container *c, uint32_t i, struct sv_blob **out,
		      struct sv_err *err);
void sv_fill_stat(struct sv_container *c, uint32_t i, struct sv_stat *st);
void sv_settle_size(struct sv_container *c, uint32_t i);
/* A node a commit may have changed (SV_D_VERIFY) is loaded, so that its
 * mtime says whether it did; read lock held. */
void sv_settle_verify(struct sv_container *c, uint32_t i);
/* Lets the format add a lazy directory's entries; the read lock is let go
 * and taken again.  0, or -EIO. */
int sv_expand(struct sv_container *c, uint32_t dir);
/* Node i left the tree: an orphan while open, else its memory goes. */
void sv_orphan_or_free(struct sv_container *c, uint32_t i);
/* Removes a node from its directory and the hash; the number stays used. */
void sv_node_drop(struct sv_container *c, uint32_t i);

/* ---- prefetch.c ---- */
/* A file whose content comes from the container through the cache. */
bool sv_plain_file(struct sv_container *c, uint32_t i);
void sv_pf_note_read(struct sv_container *c, uint32_t n);
/* The worker settles stream n's size (a stat does not wait for a costly
 * one); any lock.  Queue entries with this bit are such requests. */
#define PF_SETTLE 0x80000000u
/* Queue entries with this bit name an index directory, the position of
 * its entry to decode in pf_qpos. */
#define PF_INDEX 0x40000000u
void sv_pf_settle(struct sv_container *c, uint32_t n);
/* Stops the worker, if it was started (no lock held). */
/* The read-ahead's handle on the pool, set before any read (the open). */
void sv_pf_init(struct sv_container *c);
void sv_pf_stop(struct sv_container *c);
/* Builds node n's view into the cache now if it is worth building ahead
 * (a plain file, within the cache's eighth), as a queued file is: for a
 * folder's walk ahead, on a worker of the pool.  True if it was built. */
bool sv_pf_build(struct sv_container *c, uint32_t n);


/* ---- container.c ---- */
/* The format that claims what is at path by its content (a file's first
 * bytes, a directory's members), opening nothing but its source; NULL if
 * none (then *why is 0, or the -errno that kept it from being looked at). */
const struct sv_format *sv_sniff(const char *path, const char *opts, int *why);
/* The same of a source opened (kept open). */
const struct sv_format *sv_sniff_source(struct sv_source *src);
/* The container of a source already opened (taken, freed on failure)
 * with fmt, or the format that claims it (NULL); read-only if opts says
 * so or the source was opened so.  As sv_container_open otherwise. */
int sv_container_open_src(struct sv_source *src, const struct sv_format *fmt,
			  const struct sv_opts *opts, struct sv_container **out,
			  struct sv_err *err);
/* Frees c but its source, which is returned for another open (a remote
 * object's first block and identity kept: opened again, it costs no
 * request). */
struct sv_source *sv_container_free_keep(struct sv_container *c);
/* True if no file of c is open and no edit pending (it may be closed). */
bool sv_container_idle(struct sv_container *c);

/* ---- commit.c (write lock held) ---- */
/* A write or truncation of node i goes to the format at once. */
bool sv_direct(struct sv_container *c, uint32_t i);
/* Ends a direct write, truncation or sync: the tree follows, a refusal is
 * logged, and the write lock is let go. */
int sv_direct_end(struct sv_container *c, uint32_t i, uint32_t count, int rc,
		  struct sv_err *err);
/* A node whose content may have changed now: with a known digest, it is
 * verified at its next load; else it takes the container's mtime. */
void sv_mark_changed(struct sv_container *c, uint32_t i, bool edited);
int sv_reindex(struct sv_container *c, struct changed_list *changed, struct sv_err *err);
/* Drops node i's pending edit: it reads as stored again. */
void sv_discard_locked(struct sv_container *c, uint32_t i);
/* 0 if p[0..len) is what the view i shows now, else -EPERM (or -EIO)
 * with the reason. */
int sv_view_same(struct sv_container *c, uint32_t i, const uint8_t *p, size_t len,
		 struct sv_err *err);
/* A read-only view that takes a write of the bytes it shows (a restore
 * that copies views too): a file of the container's, not a stream. */
static inline bool sv_view(const struct sv_inode *n)
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
