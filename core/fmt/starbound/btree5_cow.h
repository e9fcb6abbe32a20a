/*
 * bt5tree.h - a BTreeDB5 database held as its shape (index nodes, leaves
 * and their chains of blocks, every record's key and where its value lies)
 * and changed the way the game changes it: copy-on-write.
 *
 * sv_bt5_tree_load walks the active root once (btree5.c) and keeps the
 * shape, about key size + 24 bytes per record; no value is read.
 *
 * sv_bt5_tree_commit applies a batch of changes (set or remove a key) to
 * the database file itself, as the game's own writer does:
 *   1. every leaf holding a changed key is written again, whole, to new
 *      blocks; a leaf that grows past the game's limit is split where the
 *      game splits it, an emptied leaf leaves its parent;
 *   2. each index node above a changed child is written again to a new
 *      block, split when it holds more children than the game allows
 *      ((block size - 11) / (key size + 4) + 1), with new levels on top
 *      when the root splits;
 *   3. new blocks are taken from the blocks free in the committed state
 *      (the free-index chain's entries), then from the end of the file;
 *      no block reachable from the committed root, and no block of its
 *      free-index chain, is ever written;
 *   4. the blocks this commit replaced, the old free-index blocks and the
 *      free blocks left over go on a new free-index chain (written to new
 *      blocks too);
 *   5. the file is synced, the new root info goes to the INACTIVE slot,
 *      synced, and byte 32 flips to it, synced.
 * So a crash at any point leaves the old tree (byte 32 not yet flipped) or
 * the new one.  The device size in the new root info is exact, and the file
 * is cut to it.
 */
#ifndef SV_BT5TREE_H
#define SV_BT5TREE_H

#include "btree5_walk.h"

struct sv_bt5_node {
	uint32_t block;    /* its (first) block */
	uint32_t n;        /* index: children; leaf: records */
	uint32_t first;    /* index: first child in kids[] and first key in
			    * ikeys[] (n - 1 keys); leaf: first record */
	uint32_t chain;    /* leaf: first of its blocks in chain[] */
	uint32_t nchain;
	uint8_t level;     /* index: 0 when its children are leaves */
	bool leaf;
};

struct sv_bt5_tree {
	struct sv_bt5 h;
	struct sv_bt5_node *nodes;
	uint32_t nnodes, capnodes, root;
	uint32_t *kids;       /* children of index nodes (node numbers) */
	size_t nkids, capkids;
	uint8_t *ikeys;       /* separator keys of index nodes */
	size_t nikeys, capikeys; /* nikeys in keys (one slot per child: slot
				  * i holds the key before child i + 1), capikeys
				  * in bytes */
	uint32_t *chain;      /* leaves' blocks */
	size_t nchain, capchain;
	uint8_t *keys;        /* every record's key, in key order */
	struct sv_bt5_loc *locs;
	uint32_t nrecs, caprecs;
	uint32_t *ff, nff;    /* the free-index chain's blocks */
	uint32_t *freeb, nfree; /* the free blocks it lists */
	uint32_t levels;      /* index levels above the leaves */
	char *free_bad;       /* the free-index chain could not be read (the
			       * reason): the tree reads, a commit refuses */
};

/* Loads the shape of the active tree of the database read through rd. */
int sv_bt5_tree_load(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		     struct sv_bt5_tree **out, struct sv_err *err);
/* The same, the tree's blocks looked at through view (with rd_arg) where
 * the reader holds them; the free chain is read with rd. */
int sv_bt5_tree_load_view(const struct sv_bt5 *h, sv_bt5_pread_fn rd, sv_bt5_view_fn view,
			  void *rd_arg, struct sv_bt5_tree **out, struct sv_err *err);
void sv_bt5_tree_free(struct sv_bt5_tree *t);
/* The record with this key, or -1. */
int64_t sv_bt5_tree_find(const struct sv_bt5_tree *t, const uint8_t *key);

struct sv_bt5_change {
	const uint8_t *key;   /* key_size bytes */
	const uint8_t *val;   /* NULL: remove the key */
	size_t len;
};

/* Called at each step of a commit with its name ("blocks", "synced",
 * "root", "flipped"): a test can stop the process there. */
typedef void (*sv_bt5_step_fn)(const char *step);

/*
 * Applies ch[0..n) (sorted by key, each key once) to the database open
 * read-write as fd, whose committed state is t.  On success *out is the
 * new tree (t is left as it was, for the caller to free); on failure the
 * file's committed state is t's (blocks written past it are garbage the
 * next commit reuses).  -EIO with the reason if the host fails, -EINVAL
 * for a value the format cannot hold.
 */
int sv_bt5_tree_commit(const struct sv_bt5_tree *t, int fd, const struct sv_bt5_change *ch,
		       size_t n, sv_bt5_step_fn step, struct sv_bt5_tree **out,
		       struct sv_err *err);

/* Writes an empty database (a header and one empty root leaf) to fd. */
int sv_bt5_create(int fd, uint32_t block_size, const char *content_id, uint32_t key_size,
		  struct sv_err *err);

#endif
