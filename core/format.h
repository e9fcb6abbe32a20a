/*
 * format.h - the core as a format module sees it: the interface a format
 * implements (struct sv_format), how its edits land (enum
 * sv_commit_kind), and the calls that build and read the tree.  Formats
 * include this and nothing of the core's own (internal.h); their bytes
 * come through the container's calls below (sources are the core's).
 *
 * A node, to a format, is what it declared at sv_node_add (name, parent,
 * flags, mode, size, key) and, for a directory, its children.  The core
 * keeps more per node (generations, open counts, digests, pending edits):
 * those are internal.h's.  What the core tracks about a node's state (new,
 * removed, temporary) a format reads with sv_node_state(), never sets.
 */
#ifndef SV_FORMAT_H
#define SV_FORMAT_H

#include "savefs.h"

#include <sys/stat.h>

/* ---- the container ------------------------------------------------------ */

struct sv_container;
/* Its location as opened (for messages). */
const char *sv_container_path(const struct sv_container *c);
/* How many node numbers were given so far (the highest is one less). */
uint32_t sv_node_count(const struct sv_container *c);

/* ---- the container's bytes ------------------------------------------------ */

/* The container's size in bytes as opened. */
uint64_t sv_container_size(const struct sv_container *c);
/* Reads exactly n bytes at off from the container file.  -EBADMSG with a
 * reason if the range lies outside the file, -EIO if the host fails. */
int sv_container_pread(struct sv_container *c, uint64_t off, void *buf,
		       size_t n, struct sv_err *err);
/* Reads up to n bytes at off: fewer where the container ends now (a file
 * another program appends to is read as it is now, past the size it was
 * opened at).  *got receives the count; -EIO with a reason if the host
 * fails. */
int sv_container_read(struct sv_container *c, uint64_t off, void *buf, size_t n, size_t *got,
		      struct sv_err *err);
/* Says the container will read ranges r[0..n) soon (the chunks an index
 * names): a remote source fetches those it does not hold at once, merged,
 * instead of one round trip each as they are read.  Nothing to wait for,
 * nothing that fails: the reads say what goes wrong. */
void sv_container_hint(struct sv_container *c, const struct sv_range *r, size_t n);
/* True if the file the container was read from was changed since by
 * another program, in place (its open handle shows another size or
 * time): what was just read of it may mix two versions.  A local file's
 * question (a remote object's reads are checked by their ETag). */
bool sv_container_changed(struct sv_container *c);
/* The container's size now (a file another program appends to grows). */
uint64_t sv_container_size_now(struct sv_container *c);
/* The open file descriptor of the container (for copying stored bytes);
 * of a directory container, the directory. */
int sv_container_fd(const struct sv_container *c);

/*
 * Containers that are directories (a recording being written: a preamble
 * and segments).  Members are regular files directly inside it, named
 * without '/'; a symbolic link is refused (-EBADMSG).  Each call opens the
 * member afresh, so a member replaced by rename is seen whole, old or new.
 * Thread-safe.
 */
bool sv_container_is_dir(const struct sv_container *c);
/* Stats a member: -ENOENT if it is not there, -EBADMSG if not a file. */
int sv_member_stat(struct sv_container *c, const char *name, struct stat *st,
		   struct sv_err *err);
/* Reads exactly n bytes at off of a member: -EBADMSG past its end. */
int sv_member_pread(struct sv_container *c, const char *name, uint64_t off, void *buf,
		    size_t n, struct sv_err *err);
/* Appends a whole member to out: -EFBIG if it is larger than max. */
int sv_member_read_all(struct sv_container *c, const char *name, uint64_t max,
		       struct sv_buf *out, struct sv_err *err);
/* Calls fn with each entry's name (not "." or ".."), in no order, until
 * it returns non-zero (which is returned). */
int sv_member_list(struct sv_container *c, int (*fn)(void *arg, const char *name),
		   void *arg, struct sv_err *err);
/* Replaces (or creates) a member with p[0..n): written to
 * "<tmp_prefix>XXXXXXXX.tmp" in the directory, synced, renamed over it,
 * and the directory synced: a crash leaves the old member or the new one
 * (and perhaps the temporary file).  With `expect` (the member as read),
 * the two are exchanged atomically and, if what was exchanged out is not
 * that file (another writer replaced it meanwhile), exchanged back:
 * -EBUSY, nothing of the other writer's lost.  Test steps
 * "member-written", "member-renamed". */
int sv_member_replace(struct sv_container *c, const char *name, const char *tmp_prefix,
		      const void *p, size_t n, const struct stat *expect, struct sv_err *err);



/* ---- nodes -------------------------------------------------------------- */

/*
 * What a format declares of a node (sv_node_add's flags): one kind, what
 * the node is and how its content and size are had (SV_KIND_*, below),
 * and any of the modifiers SV_N_RO, SV_N_BAD, SV_N_DERIVED, SV_N_UNLISTED
 * (a file) and SV_N_REMOVABLE (with SV_N_RO).  sv_node_add refuses
 * (SV_NONE, logged) flags that are not a kind and modifiers.
 */
enum {
	SV_N_DIR = 1 << 0,  /* a directory */
	SV_N_RO = 1 << 1,   /* a view that cannot be written */
	SV_N_BAD = 1 << 2,  /* its entry is malformed: reads fail with EIO */
	SV_N_DERIVED = 1 << 9, /* computed from the whole index: changes on
				* every commit (header views) */
	SV_N_LAZYSIZE = 1 << 12, /* size unknown until loaded: the first
				  * stat loads it (and remembers the size) */
	SV_N_LAZYDIR = 1 << 13,  /* a directory whose entries are added by
				  * the format's expand() on first use */
	SV_N_STREAM = 1 << 15,   /* read in pieces through the format's
				  * read(), never held whole (a log and its
				  * transcript: large, and growing) */
	SV_N_DIRECT = 1 << 16,   /* writes and truncations go to the format's
				  * write()/truncate() at once, not to a
				  * pending edit (an append-only log) */
	SV_N_SIZE_ON_STAT = 1 << 17, /* with SV_N_LAZYSIZE: a listing does not
				    * settle the size (it costs a decode per
				    * file: a game state rebuilt); its first
				    * stat does */
	SV_N_UNLISTED = 1 << 18,   /* opens by name, but listings leave it
				    * out (one of a pattern's many names) */
	SV_N_REMOVABLE = 1 << 19,  /* with SV_N_RO: a view that cannot be
				    * written but that rm may remove (the
				    * format's unlink() decides) */
	SV_N_SIZE_AWAITED = 1 << 22,   /* with SV_N_STREAM, SV_N_LAZYSIZE and
				    * SV_N_SIZE_ON_STAT: a listing leaves the
				    * size out, but a stat waits for it (a
				    * size the format finds once, on first
				    * need: tools trust a stat's size) */
	SV_N_INDEXDIR = 1 << 20,   /* a directory listed from the format's
				    * own index (list()), whose entries are
				    * nodes only while looked up (lookup()
				    * makes them; the core drops them again
				    * when the client forgets them) */
	SV_N_LIST_AS_NODES = 1 << 23,   /* with SV_N_INDEXDIR: entries cheap to
				    * make and to stat (a chunk's views); a
				    * listing that gives the client nodes
				    * (readdirplus) makes them while the
				    * container holds fewer nodes than its
				    * budget (sv_node_room), so that using
				    * them costs no lookup; beyond it, names */
};
/* The kinds of node. */
#define SV_KIND_FILE 0                   /* decoded whole, its size known */
#define SV_KIND_SIZED_LATER SV_N_LAZYSIZE /* decoded whole, sized at first
					  * stat or listing */
#define SV_KIND_DECODED_ON_STAT (SV_N_LAZYSIZE | SV_N_SIZE_ON_STAT)
					 /* sized by its first stat (a
					  * listing leaves the size out) */
#define SV_KIND_STREAM SV_N_STREAM        /* read in pieces (read()) */
#define SV_KIND_STREAM_SIZED_LATER (SV_N_STREAM | SV_N_LAZYSIZE)
#define SV_KIND_STREAM_SIZED_ON_STAT (SV_N_STREAM | SV_N_LAZYSIZE | SV_N_SIZE_ON_STAT)
#define SV_KIND_STREAM_SIZE_AWAITED \
	(SV_N_STREAM | SV_N_LAZYSIZE | SV_N_SIZE_ON_STAT | SV_N_SIZE_AWAITED)
#define SV_KIND_DIRECT SV_N_DIRECT        /* decoded whole, written at once
					  * (write()) */
#define SV_KIND_LOG (SV_N_STREAM | SV_N_DIRECT) /* a stream written at once */
#define SV_KIND_DIR SV_N_DIR              /* made at open */
#define SV_KIND_LAZYDIR (SV_N_DIR | SV_N_LAZYDIR)   /* made by expand() */
#define SV_KIND_INDEXDIR (SV_N_DIR | SV_N_INDEXDIR) /* listed by list() */
#define SV_KIND_INDEXDIR_NODES (SV_N_DIR | SV_N_INDEXDIR | SV_N_LIST_AS_NODES)
/* The modifiers. */
#define SV_N_MODIFIERS (SV_N_RO | SV_N_BAD | SV_N_DERIVED | SV_N_UNLISTED | SV_N_REMOVABLE)

#define SV_N_DECLARED (SV_N_DIR | SV_N_RO | SV_N_BAD | SV_N_DERIVED | SV_N_LAZYSIZE | \
		       SV_N_LAZYDIR | SV_N_STREAM | SV_N_DIRECT | SV_N_SIZE_ON_STAT |   \
		       SV_N_UNLISTED | SV_N_REMOVABLE | SV_N_INDEXDIR | SV_N_SIZE_AWAITED | \
		       SV_N_LIST_AS_NODES)

/* What the core tracks of a node, as sv_node_state() gives it. */
enum {
	SV_S_META = 1 << 3,  /* the core's own (/.savefs/...), not the format's */
	SV_S_TEMP = 1 << 4,  /* a temporary file held in memory only */
	SV_S_NEW = 1 << 5,   /* created, not yet in the container */
	SV_S_GONE = 1 << 6,  /* removed (its number is not reused) */
	SV_S_DIRTY = 1 << 7, /* holds an edit not yet committed */
	SV_S_STALE = 1 << 8, /* while re-indexing: not found again yet; with
			      * SV_S_GONE, removed by the commit under way */
};

/* The node fields a format reads (and, for size, sets); the same fields
 * open the core's own node (internal.h), which holds them in this order. */
#define SV_NODE_FIELDS                                                               \
	char *name;      /* owned by the core; "" for the root */                    \
	uint32_t parent; /* node number; the root is its own parent */               \
	uint32_t flags;  /* SV_N_* as declared (and the core's state bits) */        \
	uint32_t mode;   /* permission bits only (0444, 0644, 0755, ...) */          \
	uint64_t size;   /* exact size in bytes (files) */                           \
	uint64_t key;    /* the format's own handle for this node */                 \
	uint32_t *kids;  /* directories: child numbers in listing order */           \
	uint32_t nkids;

struct sv_node {
	SV_NODE_FIELDS
};

/*
 * How a format's edits land in its container, declared by the format for
 * each layout (a file, a directory) and kept by the container from open
 * on; the core's envelope (lock, identity checks, swap, sync) follows it.
 */
enum sv_commit_kind {
	SV_COMMIT_NONE = 0, /* read-only: no edit lands */
	SV_COMMIT_REWRITE,  /* commit() writes a whole new file, which the core
			     * syncs and swaps in for the old one */
	SV_COMMIT_IN_PLACE, /* commit_in_place() changes the file itself the
			     * game's way (copy-on-write blocks and a flip) */
	SV_COMMIT_APPEND,   /* write()/truncate() apply each write at once,
			     * under the game's locks (an append-only log) */
	SV_COMMIT_MEMBERS,  /* commit_in_place() replaces members of a
			     * directory by rename (sv_member_replace) */
};

/*
 * The container interface every format implements.  All callbacks are
 * called by the core with the container lock held: open, close, commit,
 * create and unlink exclusively; load shared (so load may run in several
 * threads at once and must only read format state).
 */
/* Edits, and how they land (sv_format.edits; NULL: read-only). */
struct sv_format_edits {
	/* How edits land in a container that is a file, and in one that is a
	 * directory (SV_COMMIT_NONE for a layout the format does not write).
	 * REWRITE needs commit(), IN_PLACE and MEMBERS commit_in_place(),
	 * APPEND write(). */
	enum sv_commit_kind commit_file, commit_dir;
	/* Validates edited content for a node before it is committed; NULL
	 * means any content is accepted. */
	int (*check)(struct sv_container *c, uint32_t node, const uint8_t *p,
		     size_t len, struct sv_err *err);
	/* Asked when a file is created: 0 if `name` in directory `parent` is a
	 * new entry of the container (then committed like an edit), -ENOENT if
	 * it is merely a temporary file, other -errno to refuse.  NULL: always
	 * -ENOENT. */
	int (*create)(struct sv_container *c, uint32_t parent, const char *name,
		      struct sv_err *err);
	/* Asked before a container node is removed: 0 to allow (the removal is
	 * committed at once), -errno to refuse.  NULL: refuse with EPERM. */
	int (*unlink)(struct sv_container *c, uint32_t node, struct sv_err *err);
	/* SV_COMMIT_REWRITE: writes a complete new container reflecting
	 * every node (pending content of SV_N_DIRTY and SV_N_NEW nodes,
	 * SV_N_GONE nodes left out) to fd, which is an empty file. */
	int (*commit)(struct sv_container *c, int fd, struct sv_err *err);
	/* SV_COMMIT_IN_PLACE and SV_COMMIT_MEMBERS, for a container its game
	 * changes in place: writes every pending edit into the container
	 * itself (fd, open read-write; a directory's members through
	 * sv_member_replace), the game's way, so that a crash at any moment
	 * leaves the old state or the new one.  On success the format's state is
	 * the new one and rebuild() (or, when NULL, close and open) makes the
	 * tree from it.  The core holds the container's lock and has checked
	 * that no other program changed it; -EBUSY from here means another
	 * program committed to it meanwhile (the core then reads it again). */
	int (*commit_in_place)(struct sv_container *c, int fd, struct sv_err *err);
};

/* Directories made on demand: lazy ones, names found by lookup, and
 * index directories listed from the format's own table (sv_format.dirs;
 * NULL: every directory is made at open). */
struct sv_format_dirs {
	/* Adds the entries of an SV_N_LAZYDIR directory, on its first lookup
	 * or listing, and again after a commit for one listed before (lock
	 * held exclusively).  NULL: no lazy directories. */
	int (*expand)(struct sv_container *c, uint32_t dir, struct sv_err *err);
	/* A name not in directory dir was looked up: the format may add it
	 * with sv_node_add (a file every name of a pattern opens, of which
	 * the listing shows some; an SV_N_INDEXDIR directory's entry) and
	 * return 0, else -ENOENT (lock held exclusively).  After a commit it
	 * is asked again for each entry of an SV_N_INDEXDIR directory a
	 * client still holds, so that the entry keeps its number.  NULL:
	 * only listed names exist. */
	int (*lookup)(struct sv_container *c, uint32_t dir, const char *name,
		      struct sv_err *err);
	/* The listing of an SV_N_INDEXDIR directory, from the format's own
	 * index, one entry per call: the first entry at position pos or
	 * after it (positions are the format's: an index into its table),
	 * its name in name (NUL-terminated; a valid file name, unique in
	 * the directory, the very name lookup() takes), whether it is a
	 * directory, and its position in *at.  0, 1 past the last entry, or
	 * -errno (lock held shared: it only reads format state).  NULL: no
	 * index directories. */
	int (*list)(struct sv_container *c, uint32_t dir, uint64_t pos, char name[256],
		    bool *is_dir, uint64_t *at);
	/* How many files and directories an SV_N_INDEXDIR directory lists
	 * (for /.savefs/info; lock held shared).  NULL: list() counts them. */
	void (*count)(struct sv_container *c, uint32_t dir, uint64_t *files, uint64_t *dirs);
};

/* Streamed views: read in pieces, sized without reading them whole
 * (sv_format.streams; NULL: every file is loaded whole). */
struct sv_format_streams {
	/* The size of an SV_N_LAZYSIZE stream, found without reading it
	 * whole (lock held shared).  NULL: the stream is read to measure it. */
	int (*size)(struct sv_container *c, uint32_t node, uint64_t *size,
		    struct sv_err *err);
	/* Copies up to size bytes at off of an SV_N_STREAM node into buf;
	 * *got < size only at its end (lock held shared).  NULL: no stream
	 * nodes. */
	int (*read)(struct sv_container *c, uint32_t node, uint64_t off, void *buf,
		    size_t size, size_t *got, struct sv_err *err);
};

/* A live container: nodes written to the container at once (SV_N_DIRECT,
 * SV_COMMIT_APPEND), and changes another program makes followed
 * (sv_format.live; NULL: neither). */
struct sv_format_live {
	/* Writes to an SV_N_DIRECT node, applied to the container at once
	 * (lock held exclusively).  The format updates the tree itself: new
	 * nodes with sv_node_add, changed ones with sv_node_touch; the core
	 * then tells the client (sv_container_set_notify).  Returns 0, 1 if
	 * the whole index must be read again (as after a commit), or -errno
	 * (nothing written).  NULL: no direct nodes. */
	int (*write)(struct sv_container *c, uint32_t node, uint64_t off,
		     const uint8_t *p, size_t n, struct sv_err *err);
	int (*truncate)(struct sv_container *c, uint32_t node, uint64_t size,
			struct sv_err *err);
	/* A writer of an SV_N_DIRECT node closed or synced it: whatever it
	 * left unfinished is refused (0 or -errno; the same results as
	 * write).  NULL: nothing to do. */
	int (*sync)(struct sv_container *c, uint32_t node, struct sv_err *err);
	/* Looks for changes another program made to the container (a game
	 * appending to its log) and updates the tree as write() does (same
	 * results).  Called by sv_container_poll when the file's size or
	 * time changed.  NULL: the container is not followed. */
	int (*refresh)(struct sv_container *c, struct sv_err *err);
};

/*
 * A format: four calls every format has (probe, open, close, load), a
 * few optional ones, and groups of calls for what only some formats do.
 * doc/format-howto.md walks through a small one.
 */
struct sv_format {
	const char *name;        /* "datafile" */
	const char *description; /* "Teeworlds/DDNet map datafile (.map)" */
	/* The -o keys this format takes (NULL-terminated; NULL: none): the
	 * mount and the commands pass them on in sv_opts.format_opts, and
	 * the format reads them with sv_container_option(). */
	const char *const *options;
	/* The names its containers usually have, as globs ("*.map"): a
	 * folder on a store judges its entries by them until one is opened
	 * (NULL: none).  Never what decides a local file's format. */
	const char *const *names;
	/* Where its tree holds a picture of the container (a PNG: a level's
	 * or a world's preview, a map's game layer), tried in turn; a part
	 * "*" stands for the first directory listed there (a pack's first
	 * level).  NULL-terminated; NULL: none.  A thumbnailer shows it. */
	const char *const *previews;
	/* Non-zero if the first n bytes (n may be small) look like this format. */
	int (*probe)(const uint8_t *head, size_t n);
	/* The probe also takes files of other kinds (any zip, any JSON
	 * object): a folder opens a small file it claims to be sure. */
	bool probe_weak;
	/* Bumped when what its views show changes: views and their sizes
	 * kept on disk by a savefs of the same version are then not served
	 * (a release starts afresh anyway). */
	uint32_t view_version;
	/* For a container that is a directory: non-zero if its members (read
	 * with sv_member_*) look like this format.  NULL: never a directory. */
	int (*probe_dir)(struct sv_container *c);
	/* Reads the index and builds the tree with sv_node_add().  Must not
	 * decode payload.  Sets c's private state with sv_container_set_priv. */
	int (*open)(struct sv_container *c, struct sv_err *err);
	/* Frees the private state (may be NULL if open failed early). */
	void (*close)(struct sv_container *c);
	/* A digest of the stored bytes node's content is made from, when
	 * they alone make it (a record as stored, before it is inflated or
	 * decoded): two containers of this format whose digests for a node
	 * are equal show it alike, so a comparison skips it unread (read
	 * lock held).  0 and *out; -ENOENT: made from more (NULL: never). */
	int (*stored)(struct sv_container *c, uint32_t node, uint64_t *out, struct sv_err *err);
	/* Produces the full content of a file node as a new blob. */
	int (*load)(struct sv_container *c, uint32_t node, struct sv_blob **out,
		    struct sv_err *err);
	/* Makes the tree again after a commit (in place, or a whole new file
	 * swapped in, of which commit() may have kept what it wrote), or after
	 * refresh() asked for a re-read (returned 1): from the format's new
	 * state, or by reading the container again and keeping what it can
	 * of what it knew.  Nodes the format made before are found again with
	 * sv_node_add or sv_node_again; those not found again go.  NULL: close
	 * and open. */
	int (*rebuild)(struct sv_container *c, struct sv_err *err);
	/* Adds format-specific fields to the /.savefs/info object (a jansson
	 * json_t *, passed as void * to keep jansson out of this header). */
	void (*info)(struct sv_container *c, void *json_object);
	/* What it does beyond reading (each NULL when it does not). */
	const struct sv_format_edits *edits;
	const struct sv_format_dirs *dirs;
	const struct sv_format_streams *streams;
	const struct sv_format_live *live;
};

/* Opens path with fmt, which need not be one of sv_formats (a format
 * outside the registry: the core's own tests); opts->format is ignored.
 * As sv_container_open otherwise. */
int sv_container_open_as(const char *path, const struct sv_format *fmt,
			 const struct sv_opts *opts, struct sv_container **out,
			 struct sv_err *err);
/* How this container's edits land (its format's kind for its layout). */
enum sv_commit_kind sv_container_commit_kind(const struct sv_container *c);

/* ---- for format modules (called with the container lock held) ----------- */

void sv_container_set_priv(struct sv_container *c, void *priv);
void *sv_container_priv(const struct sv_container *c);
const struct sv_opts *sv_container_opts(const struct sv_container *c);
/* The value of the format option `key` given to this container (a
 * pointer into the options, `len` bytes), or NULL if it was not given. */
const char *sv_container_option(const struct sv_container *c, const char *key, size_t *len);
/*
 * The persistent index: a record the format made for this container in an
 * earlier mount (`what` names it, `version` the layout of its bytes: bump
 * it when the layout changes), used only while the container is exactly as
 * it was read.  0 and *out; -ENOENT if there is none (make it, then store
 * it), or the index is off (-o noindex, a container held in memory, no
 * home directory).  A store failure is not an error: the record is made
 * again next time.
 */
int sv_container_index_load(struct sv_container *c, const char *what, uint32_t version,
			    struct sv_blob **out);
void sv_container_index_store(struct sv_container *c, const char *what, uint32_t version,
			      const void *p, size_t n);
/* The same with the record in pieces, written in turn (a big record is
 * never copied whole). */
struct iovec;
void sv_container_index_storev(struct sv_container *c, const char *what, uint32_t version,
			       const struct iovec *iov, int niov);
/*
 * Adds (or, while re-indexing after a commit, finds again) the node `name`
 * under `parent`.  flags: SV_N_DIR and/or SV_N_RO, SV_N_BAD.  Returns the
 * node number, or SV_NONE if out of memory.  A name that is not a valid
 * file name, or that is already taken, is made valid and unique (a
 * "~N" suffix), and the change is logged.
 */
uint32_t sv_node_add(struct sv_container *c, uint32_t parent,
		     const char *name, uint32_t flags, uint64_t size,
		     uint64_t key);
/* sv_node_add, told the node `was` the same entry was before the commit
 * (in rebuild(); SV_NONE if none): found again by its number, without the
 * search by name, so that a format that knows its old nodes updates a big
 * tree at the cost of a walk.  A hint that does not hold (another name or
 * parent, no longer a node) is ignored. */
uint32_t sv_node_again(struct sv_container *c, uint32_t was, uint32_t parent,
		       const char *name, uint32_t flags, uint64_t size, uint64_t key);
/* In lookup(): the entry node n made is at position pos of list() (so
 * that a reader going through the directory in listing order is read
 * ahead of).  Lock held exclusively. */
void sv_node_listed(struct sv_container *c, uint32_t n, uint64_t pos);
/* Whether sv_node_again would take the hint `was` (and not add a node). */
bool sv_node_again_finds(struct sv_container *c, uint32_t was, uint32_t parent,
			 const char *name);
/* In rebuild(), after the nodes the commit changed were found again (with
 * sv_node_again): every other node stays as it was (key, size, flags), for
 * a format whose commit changed no entry but those; an index directory's
 * entries are asked for again by name, with lookup(), after rebuild().
 * -EAGAIN, with nothing done, if a node the commit wrote was not found
 * again (the format then builds the tree whole). */
int sv_node_keep_rest(struct sv_container *c);
struct sv_node *sv_node(struct sv_container *c, uint32_t n);
/* Records a warning found while opening, or while decoding an entry (any
 * lock; say it once): shown in /.savefs/info and log. */
void sv_warn(struct sv_container *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends a line to /.savefs/log (thread-safe). */
void sv_log(struct sv_container *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The content a node will have once committed: its pending edit if that
 * edit is complete (SV_N_READY), else NULL: the stored content is written
 * (an edit still being written stays pending for a later commit). */
const struct sv_buf *sv_node_edit(struct sv_container *c, uint32_t n);
/* True if node n belongs in the container being written: not removed, not
 * temporary, and not a new file still being written. */
bool sv_node_in_commit(struct sv_container *c, uint32_t n);
/* Called by a format's commit for a node whose content the commit changes
 * although it was not edited itself (another view of an edited entry): its
 * readers see the new content once the commit is done. */
void sv_node_touch(struct sv_container *c, uint32_t n);
/* Says that node n is a view of the stored unit `group` (a record, a
 * chunk: any non-zero number the format keeps stable across commits).
 * When a commit changes one view of a group (an edit, a touch, a
 * removal), every view of it is looked at again: the client's caches of
 * them are dropped, and each keeps its mtime if its bytes did not change.
 * Call after sv_node_add, at open and at every re-index. */
void sv_node_set_group(struct sv_container *c, uint32_t n, uint64_t group);
/* A commit changed the stored unit `group` although no view of it was
 * edited (an index record the game keeps in step): as sv_node_touch on
 * each of its views.  Call from commit() or commit_in_place(). */
void sv_group_touch(struct sv_container *c, uint64_t group);

/* The core's state of node n: SV_S_* bits (0 for a number never given). */
uint32_t sv_node_state(struct sv_container *c, uint32_t n);

#endif
