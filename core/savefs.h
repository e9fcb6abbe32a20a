/*
 * savefs.h - the core as its clients see it: fs/ (the FUSE daemon), the
 * command line and the tests.  Format modules include format.h, which
 * includes this; the core's own files internal.h.
 *
 * A container (a save file, a directory of members) is opened by a format
 * module, which builds a tree of nodes (files and directories) from the
 * container's index only.  A node's bytes are produced on demand and kept
 * in one shared, byte-capped cache.  Edits are held per node in memory
 * and written back the way the format's game writes them.
 *
 * To a client a node is a number: nothing here knows about FUSE, and a
 * node's fields are the core's (sv_stat says what a client may know).
 * Node numbers are stable for the life of a container handle: node 0 is
 * the root, and a removed node keeps its number until the handle is freed.
 *
 * Errors: fallible functions return 0 or -errno and fill a struct sv_err
 * with a one-line reason meant for a person.
 */
#ifndef SAVEFS_H
#define SAVEFS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "helpers.h"

#define SV_ROOT 0u
#define SV_NONE UINT32_MAX

/* ---- limits and options ------------------------------------------------- */

struct sv_opts {
	uint64_t cache_cap;   /* bytes of decoded data held (default 64 MiB) */
	uint64_t max_decode;  /* largest node a format may decode (default 1 GiB) */
	uint64_t max_edit;    /* largest file an edit may grow to (default 1 GiB) */
	const char *format;   /* skip sniffing: a format name, or NULL */
	bool read_only;       /* refuse every write with EROFS */
	unsigned readahead;   /* files decoded ahead of a sequential reader
			       * (default 8; 0 = off) */
	bool noindex;         /* no persistent index: what a format found in a
			       * container is not kept between mounts (under
			       * $XDG_CACHE_HOME/savefs) */
	bool upgrade;         /* a commit writes the format's newest container
			       * version (formats that have several) */
	unsigned max_open;    /* a save folder: containers held open at once
			       * (default 16); idle ones close past it */
	const char *format_opts; /* the formats' and the locations' own
				  * options, "key=value,..." (keys a format
				  * lists in its `options`, events=builtin for
				  * recordings; keys a kind of source lists,
				  * s3_endpoint=URL); NULL: none */
	struct sv_cache *cache;  /* a cache to share (a folder's, for all its
				  * containers: one cap), or NULL: its own */
	bool in_folder;          /* a save folder's container (read again when
				  * its file changes) */
	bool read_only_if_held;  /* a container another savefs holds read-write
				  * opens read-only (a folder's: two mounts of
				  * one folder both read it), without waiting */
	bool lazy_prepare;       /* what a crashed commit left beside the file
				  * is removed, and whether files can be made
				  * there is found, at the first commit, not at
				  * the open (a folder's containers: an open
				  * does not read the whole directory) */
};

#define SV_DEFAULT_CACHE (64ull << 20)
#define SV_DEFAULT_MAX_DECODE (1ull << 30)
#define SV_DEFAULT_MAX_EDIT (1ull << 30)

void sv_opts_init(struct sv_opts *o);

/* ---- formats and options ---------------------------------------------- */

struct sv_format;

/* NULL-terminated list of every format. */
extern const struct sv_format *const sv_formats[];
const struct sv_format *sv_format_find(const char *name);
/* A format's name ("datafile") and what it reads, for a person. */
const char *sv_format_name(const struct sv_format *f);
const char *sv_format_description(const struct sv_format *f);
/* True if some format takes the option `key` (the text before '=' of an
 * "-o key=value"), so that a client passes it on in format_opts. */
bool sv_format_option(const char *key, size_t len);
/* Appends "key=value" to *opts (a comma-separated list the caller owns,
 * freed with free()).  0 or -ENOMEM. */
int sv_format_opts_add(char **opts, const char *kv);
/* True if some kind of location takes the option `key` (an S3 store's
 * s3_endpoint, ...: the sources' table), so that a client passes it on in
 * format_opts too; sv_source_option_check checks one "key=value" (0, or
 * -EINVAL with the reason) before it is passed on. */
bool sv_source_option(const char *key, size_t len);
int sv_source_option_check(const char *kv, struct sv_err *err);

/* ---- what a client is told of a node ----------------------------------- */

struct sv_stat {
	uint32_t node;  /* in its container */
	uint64_t id;    /* in its tree (sv_tree_*): the node itself for a
			 * container's own tree */
	bool dir;
	bool writable;  /* a write would not be refused up front */
	bool volatile_; /* content may change without an edit (meta files) */
	bool bad;       /* a malformed entry: reads fail with EIO */
	bool stream;    /* read it with sv_read, in pieces: sv_content would
			 * hold the whole of a file that may be very large */
	bool unsized;   /* size not known yet: in a listing, 0 here and
			 * sv_stat gives it; from sv_stat, a stream whose
			 * size is being found in the background (the last
			 * known size, 0 at first): read it to its end */
	bool direct;    /* writes go to the format at once (an append-only
			 * log): each write must reach it whole */
	bool view;      /* a read-only view: a write is accepted only if it
			 * leaves the bytes as they are (a restore) */
	bool real;      /* a save folder's file that passes through: opened
			 * with sv_tree_open_real and used as the real file */
	bool unmade;    /* in a listing: an entry of a directory listed from
			 * its format's index that is no node yet (node
			 * SV_NONE, id SV_TREE_NONE): only its name and kind
			 * are known here; look it up for the rest */
	uint32_t mode;  /* full st_mode: permissions from the container's; a
			 * folder's real entries keep their type (a symbolic
			 * link, a FIFO, a socket, a device) */
	uint64_t rdev;  /* a device's number, else 0 */
	uint32_t uid, gid; /* the container's owner */
	uint32_t nlink;
	uint64_t size;
	uint32_t gen;
	struct timespec mtime, atime;
};

/* A listing's callback (sv_tree_readdir): fn(arg, name, stat, position
 * after this entry).  0 goes on, SV_DIR_HELD goes on holding the
 * entry's node (sv_tree_readdir_nodes), anything else stops. */
typedef int (*sv_dir_fn)(void *arg, const char *name, const struct sv_stat *st,
			 uint64_t next);
/* fn's answer for an entry it took and whose node the client now holds as
 * after a lookup (a listing that gives the kernel its entries). */
#define SV_DIR_HELD 2
/* A write's offset meaning "at the end" (O_APPEND). */
#define SV_AT_END UINT64_MAX

/* ---- trees: what a client opens at a location --------------------------- */

/*
 * A tree is what a location shows: a container (a file, a recording
 * directory), or a save folder, a directory that is not itself a
 * container.  A folder's tree is the directory as it is, read afresh at
 * each look (entries added, removed or replaced appear as they are); an
 * entry a format claims by its content (its first bytes, or a directory's
 * members), never by its name, shows as a directory holding that
 * container's tree, opened on its first use and closed again when idle
 * past opts->max_open (least recently used first); its raw bytes are
 * NAME/.savefs/container.  Entries no format claims pass through: a file
 * reads as the file (a stream), a directory as the directory.
 *
 * Node ids are 64-bit and stable while the tree is open; the root is
 * SV_TREE_ROOT.  In a container's own tree an id is its node number.  The
 * calls are those of a container, thread-safe, with the same errors.
 */
struct sv_tree;
typedef uint64_t sv_id;
#define SV_TREE_ROOT 0ull
#define SV_TREE_NONE UINT64_MAX /* no id */

/* Opens the location at path as a container, or as a folder if it is a
 * directory no format claims.  Errors as sv_container_open. */
int sv_tree_open(const char *path, const struct sv_opts *opts, struct sv_tree **out,
		 struct sv_err *err);
void sv_tree_free(struct sv_tree *t);
/* Whether t is a save folder (else one container's tree). */
bool sv_tree_is_folder(const struct sv_tree *t);
/* Where t is, as a mount names it: a container's location as opened, a
 * folder's real path.  A new string, or NULL (no memory). */
char *sv_tree_location(const struct sv_tree *t);
/* The name of t's format (see --formats), or "folder" for a save folder. */
const char *sv_tree_format(const struct sv_tree *t);
/* The file of t's tree that pictures the container (the format's
 * previews, the first that is there): 0 and *out, or -ENOENT (a folder,
 * or a format or a container with none). */
int sv_tree_preview(struct sv_tree *t, sv_id *out);
/* A digest of the stored bytes file n is made from alone, if its format
 * can say (a record as stored): two trees' files with equal digests read
 * alike, unread.  0 and *out, or -ENOENT. */
int sv_tree_stored(struct sv_tree *t, sv_id n, uint64_t *out, struct sv_err *err);
/* The directory above directory n ("..": the root's is the root). */
int sv_tree_parent(struct sv_tree *t, sv_id n, sv_id *out);
/* How many nodes t made so far (a folder's: 0, its entries come and go). */
uint64_t sv_tree_count(const struct sv_tree *t);
/* A container whose format follows its file as another program changes
 * it (a log appended to, a recording being written): true, how often it
 * is best looked at, and a look (changes reported to sv_tree_set_notify's
 * callback).  A folder follows its entries itself: false. */
bool sv_tree_follows(const struct sv_tree *t);
uint64_t sv_tree_follow_ns(const struct sv_tree *t);
void sv_tree_poll(struct sv_tree *t);
/* Around a daemon's fork: the core's worker threads finished before it,
 * so that no lock is held across it, and resumed after it in the child. */
void sv_tree_before_fork(struct sv_tree *t);
void sv_tree_after_fork(struct sv_tree *t);
/* Lookups are held (sv_lookup_held) until sv_tree_forget gives them back. */
int sv_tree_lookup(struct sv_tree *t, sv_id dir, const char *name, sv_id *out);
void sv_tree_forget(struct sv_tree *t, sv_id n, uint64_t count);
/* Holds n as a lookup would (a file or directory the client made). */
void sv_tree_held(struct sv_tree *t, sv_id n);
int sv_tree_resolve(struct sv_tree *t, const char *path, sv_id *out);
/* Fills st (st->id is n). */
int sv_tree_stat(struct sv_tree *t, sv_id n, struct sv_stat *st);
/* The same for a file that is open (fstat): in a folder, the node as it
 * was opened even if its container was replaced since (where sv_tree_stat
 * says -ESTALE: the name is to be looked up again). */
int sv_tree_stat_open(struct sv_tree *t, sv_id n, struct sv_stat *st);
/* As sv_readdir; each stat's id is the child's id in the tree. */
int sv_tree_readdir(struct sv_tree *t, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg);
/* As sv_readdir_nodes. */
int sv_tree_readdir_nodes(struct sv_tree *t, sv_id dir, uint64_t from, sv_dir_fn fn,
			  void *arg);
int sv_tree_content(struct sv_tree *t, sv_id n, struct sv_blob **out, struct sv_err *err);
int sv_tree_read(struct sv_tree *t, sv_id n, uint64_t off, void *buf, size_t size,
		 size_t *got, struct sv_err *err);
/* A file of the tree is open / its open ended (sv_open, sv_release): a
 * folder does not close a container while a file of it is open. */
int sv_tree_hold(struct sv_tree *t, sv_id n);
void sv_tree_release(struct sv_tree *t, sv_id n);
/* A summary as JSON (a new blob): a container's /.savefs/info; for a
 * folder, its containers per format, what no format claimed, and each
 * container's format and warnings (every container is opened). */
int sv_tree_info(struct sv_tree *t, struct sv_blob **out, struct sv_err *err);

/*
 * Edits, as the container calls of the same names, on a tree's ids; in a
 * folder, a container's node goes to its container (committed under that
 * container's lock and checks, its refusals in its log), a file that
 * passes through is the real file, and a real directory takes new files,
 * directories, renames and removals as the file system does.  A rename
 * between a container and anything else is -EXDEV (mv then copies).  A
 * folder's container file is removed by unlinking NAME/.savefs/container.
 * Changed nodes are reported by tree id.
 */
typedef void (*sv_tree_changed_fn)(void *arg, sv_id node, sv_id parent, const char *name,
				   bool gone);
int sv_tree_write(struct sv_tree *t, sv_id n, uint64_t off, const void *buf, size_t size,
		  struct sv_err *err);
int sv_tree_truncate(struct sv_tree *t, sv_id n, uint64_t size, struct sv_err *err);
int sv_tree_flush(struct sv_tree *t, sv_id n, sv_tree_changed_fn fn, void *arg,
		  struct sv_err *err);
/* Registers fn for changes made outside commits (sv_container_set_notify)
 * in every container of the tree, by tree id. */
void sv_tree_set_notify(struct sv_tree *t, sv_tree_changed_fn fn, void *arg);
/* Commits every pending edit of every open container. */
int sv_tree_commit(struct sv_tree *t, sv_tree_changed_fn fn, void *arg, struct sv_err *err);
/* Who asks for a new file: its owner and group, as the kernel passes the
 * caller's (NULL: the process's own).  Its mode comes with the umask
 * already applied. */
struct sv_owner {
	uint32_t uid, gid;
};
/* Creates a regular file.  In a real directory it is created on the file
 * system with mode (exactly: the process's umask does not apply) and opened
 * with flags, and given to `who` (if the process may: it is root); *fd is
 * its descriptor (the caller's to close); in a container *fd is -1 and who
 * is not kept (containers store no owners). */
int sv_tree_create(struct sv_tree *t, sv_id dir, const char *name, uint32_t mode, int flags,
		   const struct sv_owner *who, sv_id *out, int *fd, struct sv_err *err);
/* Makes a directory (a real directory only), as sv_tree_create makes a
 * file: with mode and owner. */
int sv_tree_mkdir(struct sv_tree *t, sv_id dir, const char *name, uint32_t mode,
		  const struct sv_owner *who, sv_id *out, struct sv_err *err);
int sv_tree_unlink(struct sv_tree *t, sv_id dir, const char *name, sv_tree_changed_fn fn,
		   void *arg, struct sv_err *err);
int sv_tree_rmdir(struct sv_tree *t, sv_id dir, const char *name, struct sv_err *err);
int sv_tree_rename(struct sv_tree *t, sv_id dir, const char *name, sv_id newdir,
		   const char *newname, uint32_t flags, sv_tree_changed_fn fn, void *arg,
		   struct sv_err *err);
/* Opens a file that passes through (sv_stat.real) with open(2)'s flags:
 * a descriptor, or -errno. */
int sv_tree_open_real(struct sv_tree *t, sv_id n, int flags);
/* A save folder's symbolic links, shown as they are (never followed):
 * the target of link n, *len bytes in buf (not terminated; -EINVAL if n
 * is no link); and a new link in a real directory, made as
 * sv_tree_create makes a file.  A container holds no links (-EPERM). */
int sv_tree_readlink(struct sv_tree *t, sv_id n, char *buf, size_t size, size_t *len);
int sv_tree_symlink(struct sv_tree *t, sv_id dir, const char *name, const char *target,
		    const struct sv_owner *who, sv_id *out, struct sv_err *err);
/* A writer of a file that passes through is done (its close): while one
 * writes, what the file is is not classified again (half a container is no
 * container).  Once per open for writing (sv_tree_open_real with write
 * access, sv_tree_create). */
void sv_tree_real_written(struct sv_tree *t, sv_id n);
/* Closes a descriptor sv_tree_open_real or sv_tree_create gave. */
void sv_tree_close_real(struct sv_tree *t, sv_id n, int fd);
/* Times as sv_set_times; mode and owner as chmod and chown: kept by a real
 * file, accepted and not kept by a container's node (0). */
int sv_tree_set_times(struct sv_tree *t, sv_id n, const struct timespec *atime,
		      const struct timespec *mtime);
int sv_tree_set_mode(struct sv_tree *t, sv_id n, uint32_t mode);
int sv_tree_set_owner(struct sv_tree *t, sv_id n, uint32_t uid, uint32_t gid);
/* As the container calls: sv_drops, sv_current, sv_container_read_only
 * (of n's container; a folder's own files by the mount), sv_path (a
 * folder's: from its root), sv_temps (of every open container). */
uint32_t sv_tree_drops(struct sv_tree *t, sv_id n);
sv_id sv_tree_current(struct sv_tree *t, sv_id n);
bool sv_tree_read_only(struct sv_tree *t, sv_id n);
int sv_tree_path(struct sv_tree *t, sv_id n, char *buf, size_t size);
int sv_tree_temps(struct sv_tree *t, void (*fn)(void *arg, const char *path), void *arg);

#endif
