/*
 * container.h - one container as the core opens and walks it: what tree/
 * builds a client's tree from, and what the unit tests, fuzzers and test
 * tools drive directly.  Clients (fs/, the command line) walk a location
 * through the tree calls of savefs.h only.  All thread-safe.
 */
#ifndef SV_CONTAINER_H
#define SV_CONTAINER_H

#include "savefs.h"

/* Called, with the container lock held (so it must not call back into the
 * core), for each node whose content or size changed in a commit; gone is
 * true for a node the commit removed. */
typedef void (*sv_changed_fn)(void *arg, uint32_t node, uint32_t parent,
			      const char *name, bool gone);

/* ---- containers --------------------------------------------------------- */

struct sv_container;
struct sv_format;


/*
 * Opens the container at path: sniffs the format (unless opts->format),
 * reads its index and builds the tree.  On success *out owns the open file
 * and the tree.  Errors: -ENOENT/-EACCES/-EIO (cannot open), -EMEDIUMTYPE
 * (no format recognises it), -EBADMSG (malformed), -ENOTSUP (a version not
 * supported), -EFBIG (a limit).  opts is copied.
 */
int sv_container_open(const char *path, const struct sv_opts *opts,
		      struct sv_container **out, struct sv_err *err);
/* The same for a container held in memory (copied; always read-only):
 * for tests and fuzzing. */
int sv_container_open_mem(const void *p, size_t n, const struct sv_opts *opts,
			  struct sv_container **out, struct sv_err *err);
void sv_container_free(struct sv_container *c);

const struct sv_format *sv_container_format(const struct sv_container *c);
const char *sv_container_path(const struct sv_container *c);
bool sv_container_read_only(const struct sv_container *c);

/* The process is about to fork (a daemon's fork after the container was
 * opened): the core's worker threads finish first, so that no lock (the
 * allocator's among them) is held across the fork and the child needs no
 * thread of the parent's.  Call before the fork. */
void sv_container_before_fork(struct sv_container *c);
/* In the child after the fork: background work stopped before it resumes. */
void sv_container_after_fork(struct sv_container *c);

/* Registers fn (called with the lock held: it must not call back) for
 * changes made outside commits: direct writes (a log appended to) and a
 * followed container changed by another program.  New nodes are reported
 * with their directory, so that a cached listing can be dropped. */
void sv_container_set_notify(struct sv_container *c, sv_changed_fn fn, void *arg);
/* True if the format follows its container as it changes (refresh). */
bool sv_container_follows(const struct sv_container *c);
/* The identity (device, inode, size, times) of the file the container
 * holds: as it read it, or as its own last commit or append left it.  0,
 * or -EBUSY while a commit is under way (it never waits for one). */
int sv_container_identity(struct sv_container *c, struct stat *st);
/* Looks at the container file: if another program changed it, the tree
 * is brought up to date and the changes reported.  0 or -errno. */
int sv_container_poll(struct sv_container *c, struct sv_err *err);
/* How often a followed container is best polled: a file's look is cheap
 * (200 ms), a store's listing is a request (seconds). */
uint64_t sv_container_follow_ns(const struct sv_container *c);


/* How many node numbers were given so far (the highest is one less). */
uint32_t sv_node_count(const struct sv_container *c);
/* Looks up name in directory dir.  -ENOENT, -ENOTDIR. */
int sv_lookup(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t *out);
/*
 * Lookups a client keeps (the kernel's): as sv_lookup, and the node is
 * held until sv_forget gives back as many.  An entry of a directory listed
 * from its format's index is a node only while held (or open, or edited):
 * when the last hold is forgotten its node goes, and its number may be
 * given again later; while held, its number stays.  sv_hold holds a node
 * the client got otherwise (a file it created).
 */
int sv_lookup_held(struct sv_container *c, uint32_t dir, const char *name, uint32_t *out);
void sv_hold(struct sv_container *c, uint32_t n);
void sv_forget(struct sv_container *c, uint32_t n, uint64_t count);
/* Resolves a slash-separated path from the root ("" or "/" is the root). */
int sv_resolve(struct sv_container *c, const char *path, uint32_t *out);
int sv_stat(struct sv_container *c, uint32_t n, struct sv_stat *st);
/* Writes the path of n (without a leading slash) into buf. */
int sv_path(struct sv_container *c, uint32_t n, char *buf, size_t size);

/*
 * Calls fn for each child of dir from position `from` on, in listing order,
 * until fn returns non-zero; *next receives the position after the last
 * child passed.  The stat is filled as by sv_stat.  fn runs with the
 * container's lock held: it must not call into the container (collect the
 * names, then walk them).  fn returns 0 to go on, SV_DIR_HELD to go on
 * holding the entry's node, anything else to stop.  -EIO if dir is a lazy
 * directory whose entries could not be read (the reason is logged).
 */
int sv_readdir(struct sv_container *c, uint32_t dir, uint64_t from,
	       sv_dir_fn fn, void *arg);
/* As sv_readdir, for a client that takes each entry with its node (fn
 * answers SV_DIR_HELD): an index directory whose entries are cheap
 * (SV_N_LIST_AS_NODES) gives them as nodes, made while the container holds
 * fewer than its budget of nodes, and names alone beyond it. */
int sv_readdir_nodes(struct sv_container *c, uint32_t dir, uint64_t from,
		     sv_dir_fn fn, void *arg);

/*
 * Returns the whole content of file n as a new blob reference: the pending
 * edit if the node is being edited, else the cached or freshly loaded
 * decoded bytes.  -EISDIR, -EIO (the entry is malformed; the reason is
 * logged), -ENOMEM, -EFBIG.
 */
int sv_content(struct sv_container *c, uint32_t n, struct sv_blob **out,
	       struct sv_err *err);
/* A digest of the stored bytes file n is made from alone (the format's
 * stored op, with its name and view version): 0 and *out; -ENOENT when
 * the format cannot say (made from more, an edit pending). */
int sv_stored(struct sv_container *c, uint32_t n, uint64_t *out, struct sv_err *err);
/* A file was opened / its last use by that open ended.  A node removed or
 * replaced while open stays readable and writable for its opens (an
 * orphan, like an unlinked file) until the last release.  Opening, or
 * stat of, a node that was removed or replaced gives -ESTALE: its name
 * is to be looked up again (the new file a rename put there). */
int sv_open(struct sv_container *c, uint32_t n);
/* The node a client's old node number stands for now: n itself if it is
 * usable; if it was replaced (a rename onto its name, as sed -i and
 * editors do), the node that has its name now, so that a reader that
 * looked the name up just before the rename opens the new file; else n
 * (whose calls then fail with -ESTALE or -ENOENT). */
uint32_t sv_current(struct sv_container *c, uint32_t n);
void sv_release(struct sv_container *c, uint32_t n);
/* Copies up to size bytes at off into buf; *got receives the count. */
int sv_read(struct sv_container *c, uint32_t n, uint64_t off, void *buf,
	    size_t size, size_t *got, struct sv_err *err);


/* Edits: each returns -EROFS on a read-only container, -EPERM for a node
 * that cannot be written (reason in err and the log). */
/* off SV_AT_END: at the file's end as the core knows it (a file opened
 * with O_APPEND: the kernel's idea of the end may be stale when another
 * program changed a followed container). */
int sv_write(struct sv_container *c, uint32_t n, uint64_t off, const void *buf,
	     size_t size, struct sv_err *err);
int sv_truncate(struct sv_container *c, uint32_t n, uint64_t size,
		struct sv_err *err);
/* Creates a regular file: a new container entry if the format takes the
 * name, else a temporary file.  -EEXIST if taken.  mode is not kept:
 * containers store no permissions (files show 0644, or 0444 read-only). */
int sv_create(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t mode, uint32_t *out, struct sv_err *err);
/* Removes a file: a temporary file is dropped; a container entry is
 * removed from the container at once (if the format allows). */
int sv_unlink(struct sv_container *c, uint32_t dir, const char *name,
	      sv_changed_fn changed, void *arg, struct sv_err *err);
/* Renames a file.  A temporary file renamed onto a container entry (or a
 * name the format takes) becomes that entry's new content and is
 * committed.  Container entries themselves cannot be renamed (-EPERM). */
int sv_rename(struct sv_container *c, uint32_t dir, const char *name,
	      uint32_t newdir, const char *newname, uint32_t flags,
	      sv_changed_fn changed, void *arg, struct sv_err *err);


/*
 * Commits every pending edit: validates each dirty node (a node that fails
 * is dropped back to its stored content and its reason logged; the call
 * then fails with -EINVAL and nothing is written), writes a new container
 * beside the old one, fsyncs it and renames it over the old one, then
 * re-reads the index.  -EBUSY if the file changed on disk since it was
 * read.  With nothing pending it does nothing.  If node != SV_NONE only
 * matters when it is dirty: commits when it is.
 */
int sv_commit(struct sv_container *c, sv_changed_fn changed, void *arg,
	      struct sv_err *err);
/* Commits if node n has a pending edit, else does nothing. */
int sv_flush(struct sv_container *c, uint32_t n, sv_changed_fn changed,
	     void *arg, struct sv_err *err);
/* Calls fn (lock held: it must not call back) with the path of each
 * temporary file: files created under names the container does not take,
 * held in memory only, which go when the container is freed.  Logs each.
 * Returns how many there are. */
int sv_temps(struct sv_container *c, void (*fn)(void *arg, const char *path), void *arg);
/* Sets the times of n (NULL: left as they are), as utimens does.  They
 * are not stored in the container: they hold for the life of the handle,
 * until the node's bytes change.  0, -ENOENT. */
int sv_set_times(struct sv_container *c, uint32_t n, const struct timespec *atime,
		 const struct timespec *mtime);
/* Drops the pending edit of n (it reads as stored again). */
void sv_discard(struct sv_container *c, uint32_t n);
/* How many edits of n were dropped so far: a client that wrote to n and
 * finds this moved knows its writes are gone (any lock, or none). */
uint32_t sv_drops(struct sv_container *c, uint32_t n);

/* The work name lookups did so far: hash-chain steps (for tests that
 * bound the work of an open instead of timing it). */
uint64_t sv_container_name_steps(const struct sv_container *c);
/* Index directories' entries waiting their turn to be dropped past the
 * node budget (for tests that bound what the queue keeps). */
size_t sv_container_evict_queued(const struct sv_container *c);
/* The reads formats made of the container's own bytes so far, and their
 * bytes (for tests that bound what an operation reads). */
void sv_container_reads(const struct sv_container *c, uint64_t *reads, uint64_t *bytes);
/* Cache statistics of this container. */
void sv_container_cache_stats(struct sv_container *c, struct sv_cache_stats *st);



#endif
