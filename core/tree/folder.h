/*
 * tree/folder.h - what the files of a save folder share (folder.c, the
 * entry table and what each entry is; folder_slots.c, containers and the
 * watcher; folder_walk.c, lookups, listings, reads and the info;
 * folder_edit.c, edits), and nothing else includes.  The folder's
 * contract is at the top of folder.c.
 */
#ifndef SV_FOLDER_H
#define SV_FOLDER_H

#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

enum { E_DIR, E_FILE, E_CLAIMED, E_RAW, E_MDIR, E_MINFO, E_MLOG };

struct entry {
	char *rel;          /* owned: its path in the folder ("" the root) */
	const char *name;   /* its last part (in rel) */
	uint32_t parent;    /* an entry */
	int kind;
	bool classified;
	bool in_raw;        /* inside a container's raw form: never claimed */
	struct stat st;     /* what its kind was classified on */
	const struct sv_format *fmt; /* E_CLAIMED: the format that claims it */
	uint32_t slot;      /* E_CLAIMED, E_RAW: its container's slot + 1 */
	uint32_t raw;       /* E_CLAIMED: its E_RAW entry, 0 until looked up */
	uint32_t writers;   /* E_FILE: opens for writing through the mount
			     * (classified again only when they are done) */
	int wd;             /* a real directory: its inotify watch, or 0 */
	bool swept;         /* a real directory: its commits' leftovers removed */
	bool probed;        /* a remote directory: classified by its members */
	int64_t ghost_ns;   /* a container whose file was removed through the
			     * mount (rm -r's first step): an empty directory
			     * until it is removed too, or this time (mono) */
	bool times_set;     /* a container's directory: times a client set
			     * (touch, tar, rsync), kept while its file is the
			     * same, as a container's files keep theirs */
	struct timespec set_mtime, set_atime;
	char *broken;       /* owned: why the container a format claims it as
			     * cannot be opened (it passes through as itself),
			     * or NULL */
	struct sv_source *held; /* a remote file's source as sv_folder_classify() opened
				 * it (its first bytes read), for its
				 * container's open; or NULL */
	uint32_t hnext;     /* the next entry in its hash chain, or SV_NONE */
};

struct slot {
	struct sv_container *c; /* NULL while closed */
	uint32_t claimed;           /* its entry */
	uint32_t meta;          /* its /.savefs node (SV_NONE if none) */
	uint64_t used;          /* when last used (the clock) */
	int64_t used_ns;        /* and when, monotonic */
	unsigned users;         /* calls using it outside the lock: it is not
				 * closed under them */
	bool opening;           /* a call is opening it (outside the lock) */
	uint32_t epoch;         /* containers opened in it so far */
	int err;                /* its last open's failure, or 0 */
	char why[SV_ERR_MAX];
	struct sv_forward *live;  /* owned: its changes outside commits, by id */
	bool removed;           /* its file was removed through the mount: its
				 * directories list nothing, and removals in it
				 * are done (rm -r goes on from there: its
				 * lookups still find what rm removes) */
	int64_t guard_ns;       /* a removal of its raw form was refused (rm -r
				 * of a directory container): removals of its
				 * entries are refused too until then (mono) */
};

/* A walk over the folder's containers, met ahead (folder_ahead.c). */
#define AHEAD_JOBS 8
struct ahead_job {
	int kind;          /* JOB_WALK: find the walk; JOB_OPEN: open entry */
	uint32_t entry;
	uint64_t walk;     /* the walk it was queued for */
};
struct folder_ahead {
	struct sv_ahead a; /* the pool's handle (first: its run finds us) */
	pthread_mutex_t lock;
	bool stop;
	uint32_t cur, last;  /* the container entries read in last, and before */
	uint32_t cur_slot;   /* cur's slot */
	uint32_t dir;        /* cur's directory entry */
	uint64_t walk;       /* bumped at each new container read */
	char path[1024];     /* the file read first in cur */
	struct ahead_job jobs[AHEAD_JOBS];
	unsigned njobs;
	uint64_t opened, built; /* containers opened ahead, files built */
};

struct sv_folder {
	pthread_mutex_t lock;
	pthread_cond_t opened;  /* a slot's open is done */
	char *path;             /* owned: the folder's location (a real path) */
	struct sv_source *src;  /* the folder's place: its entries are read
				 * through it */
	bool remote;            /* a remote place: its own entries are read-only */
	int dfd;                /* a local place's directory (src's), or -1 */
	struct kept {
		uint32_t i;
		const struct sv_source *src;
	} *ring;                /* entries' kept sources, oldest first */
	uint32_t nring, ringcap, ringat; /* how many, how many at most, the oldest */
	uint64_t held_bytes;    /* what the kept sources hold (half the cache at most) */
	struct sv_opts opts;
	char *format_opts;      /* owned: opts.format_opts */
	struct entry *e;
	uint32_t ne, cape;
	uint32_t *htab;         /* hash heads (SV_NONE: empty), hsize a power of 2 */
	uint32_t hsize;
	struct slot *s;
	uint32_t ns, caps;
	uint64_t clock;
	unsigned nopen;
	unsigned nopening;      /* containers being opened (outside the lock) */
	unsigned nopen_most;    /* the most open at once so far */
	unsigned superseded;    /* open containers whose file was replaced */
	uint32_t mdir, minfo, mlog; /* /.savefs/, its info and log */
	struct sv_buf log;      /* the folder's own log (its last 64 KiB) */
	struct sv_blob *info;   /* /.savefs/info as made for the last read at
				 * offset 0: later pieces come from it */
	sv_tree_changed_fn live_fn; /* the client's, for changes outside commits */
	void *live_arg;
	int ifd;                /* inotify, or -1 */
	uint32_t *wdir;         /* a watch's directory entry, by watch */
	int nwd;                /* wdir's length */
	pthread_t watcher;
	bool watching;
	int wake[2];            /* a pipe: the watcher stops when it closes */
	struct folder_ahead ahead;
};

/* A container used this recently is not idle: a reader between its
 * lookup and its next call keeps it (the kernel's requests of one system
 * call arrive apart). */
#define IDLE_NS 2000000000LL


/* rm -r NAME: its first step removes NAME/.savefs/container; NAME then
 * stays an empty directory this long, for the steps after it (a few
 * system calls).  For a directory container, whose raw form cannot be
 * removed, its entries are not removed one by one either, this long. */
#define GHOST_NS (30 * 1000000000LL)

/* A remote source kept for its container's open holds its first block
 * (HELD_BLOCK at most); HELD_MAX are kept at most. */
#define HELD_BLOCK (256u << 10)
#define HELD_MAX 4096

/* A container's node as an id: the slot, the slot's epoch (which of the
 * containers opened in it, so that a forget meant for an earlier one is
 * not taken by the present one), the node. */
#define SLOT_ID(slot, node) sv_folder_slot_id(f, slot, node)

struct sv_folder;

/* A real entry to change: its directory, reached beneath the folder with
 * no link on the way, and its name there (the root: the folder, "."). */
struct place {
	int at;
	const char *leaf;
	char *rel;     /* owned */
};

/* ---- shared between the folder's files ---- */

/* The walk ahead (folder_ahead.c): set up at the open, stopped first at
 * the close; a reader's first read of a file in container `slot` noted
 * (no lock held). */
void sv_folder_ahead_init(struct sv_folder *f);
void sv_folder_ahead_stop(struct sv_folder *f);
void sv_folder_ahead_note(struct sv_folder *f, uint32_t slot, struct sv_container *c, uint32_t node);
void sv_folder_ahead_counts(struct sv_folder *f, uint64_t *opened, uint64_t *built);

/* A real directory's names. */
struct name_list {
	char **v;
	size_t n, cap;
};
/* Real directory d's names as its listing gives them, sorted (lock held;
 * the directory watched from now on). */
int sv_folder_real_names(struct sv_folder *f, uint32_t d, struct name_list *l);
void sv_folder_names_free(struct name_list *l);

/* Appends a line to the folder's log, stamped (lock held). */

void sv_folder_log(struct sv_folder *f, const char *fmt, ...);
int64_t sv_folder_now_ns(void);
sv_id sv_folder_slot_id(struct sv_folder *f, uint32_t slot, uint32_t node);
int sv_folder_grow_hash(struct sv_folder *f);
/* Entry i takes path rel (a new string, taken), found by it from now on. */
void sv_folder_set_rel(struct sv_folder *f, uint32_t i, char *rel);
uint32_t sv_folder_find_entry(struct sv_folder *f, const char *rel);
uint32_t sv_folder_add_entry(struct sv_folder *f, uint32_t parent, char *rel, int kind);
char *sv_folder_full_path(struct sv_folder *f, uint32_t i);
int sv_folder_place_open(struct sv_folder *f, char *rel, struct place *p);
void sv_folder_place_close(struct place *p);
bool sv_folder_kind_is_meta(int kind);
bool sv_folder_same_file(const struct stat *a, const struct stat *b);
int sv_folder_open_container(struct sv_folder *f, uint32_t i, struct sv_container **out,
			     uint32_t *slot, struct sv_err *err);
void sv_folder_slot_release_locked(struct sv_folder *f, uint32_t slot);
void sv_folder_adopt(struct sv_folder *f, uint32_t i, struct sv_container *c);
void sv_folder_watch_dir(struct sv_folder *f, uint32_t d);
void sv_folder_close_slot(struct sv_folder *f, uint32_t s);
bool sv_folder_path_is_real(const char *path);
struct sv_source *sv_folder_take_held(struct sv_folder *f, uint32_t i);
void sv_folder_supersede(struct sv_folder *f, uint32_t s);
int sv_folder_classify(struct sv_folder *f, uint32_t i);
bool sv_folder_commit_leftover(const char *name);
bool sv_folder_hidden_name(uint32_t dir, const char *name);
/* "DIR/name", the path of name in directory entry dir: a new string, or
 * NULL (no memory). */
char *sv_folder_rel_of(const struct sv_folder *f, uint32_t dir, const char *name);
uint32_t sv_folder_child(struct sv_folder *f, uint32_t dir, const char *name, int *rc);
bool sv_folder_real_dir(const struct sv_folder *f, uint32_t i);
void sv_folder_probe_dir(struct sv_folder *f, uint32_t d);
int sv_folder_node_container_as(struct sv_folder *f, sv_id id, struct sv_container **c,
				uint32_t *node, uint32_t *slot, bool fresh);
int sv_folder_node_container(struct sv_folder *f, sv_id id, struct sv_container **c,
			     uint32_t *node, uint32_t *slot);
int sv_folder_node_fresh(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
			 uint32_t *slot);
int sv_folder_container_of_id(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
			      uint32_t *slot);
void sv_folder_slot_release(struct sv_folder *f, uint32_t slot);
void sv_folder_watch_start(struct sv_folder *f);
void sv_folder_watch_stop(struct sv_folder *f);
bool sv_folder_changeable(const struct sv_folder *f, uint32_t i);
uint32_t sv_folder_real_file(struct sv_folder *f, sv_id n, int *rc);

#endif
