/*
 * btree5.h - Starbound's BTreeDB5 database, read: the header, both root
 * slots, and a walk of the active tree that finds every record's key and
 * where its value lies, without reading any value.
 *
 * Layout (../shared/formats/starbound.md; big-endian throughout):
 *   header  512 bytes: "BTreeDB5", u32 block size, 16-byte content id,
 *           u32 key size, u8 use-the-second-root, 2 x 17-byte root info
 *           (u32 free-index head, i64 device size, u32 root block, bool
 *           root is a leaf)
 *   block n at 512 + n * block size, each starting with its kind:
 *     "II" index: u8 level, u32 n, u32 first child, n x (key, u32 child)
 *     "LL" leaf: data [2, size - 4), then u32 next block of the same leaf
 *          (0xffffffff: the end); the leaf's data, across its blocks, is
 *          u32 count, count x (key, VLQ length, value)
 *     "FF" free index: u32 next, u32 count, count x u32 free block
 *
 * The walk starts at the active root only (freed blocks keep stale
 * content) and visits each block at most once: a block met twice (a cycle,
 * or two parents) is an error, as is a block past the device size, a
 * block of the wrong kind, keys out of order, or an index deeper than 64.
 * Errors are -EBADMSG with "btree: block N: ..." (or "btree: byte N: ..."
 * for the header).
 */
#ifndef SV_BTREE5_H
#define SV_BTREE5_H

#include "format.h"

#define SV_BT5_HEADER 512
#define SV_BT5_NONE UINT32_MAX

struct sv_bt5_root {
	uint32_t free_head;   /* first free-index block, SV_BT5_NONE: none */
	int64_t device_size;  /* bytes committed */
	uint32_t root;        /* root block */
	bool root_is_leaf;
};

struct sv_bt5 {
	uint32_t block_size, key_size;
	char content_id[17];  /* NUL-terminated */
	uint8_t use_alt;      /* byte 32: 0 the first root slot, else the second */
	struct sv_bt5_root roots[2];
	uint64_t nblocks;     /* blocks below the active root's device size */
};

/* Where a record's value lies: its first byte is at `off` within the data
 * of block `block`, and it goes on in that leaf's next blocks. */
struct sv_bt5_loc {
	uint32_t block, off;
	uint64_t len;
};

/* Reads n bytes of the database at off (bounds are the callee's). */
typedef int (*sv_bt5_pread_fn)(void *arg, uint64_t off, void *buf, size_t n,
			       struct sv_err *err);

/* Parses the 512-byte header of a file of file_size bytes. */
int sv_bt5_header(const uint8_t *p, size_t n, uint64_t file_size, struct sv_bt5 *h,
		  struct sv_err *err);
/* The active root slot. */
const struct sv_bt5_root *sv_bt5_active(const struct sv_bt5 *h);

/* Called for each record in key order; key is key_size bytes.  Non-zero
 * stops the walk (and is returned). */
typedef int (*sv_bt5_record_fn)(void *arg, const uint8_t *key, const struct sv_bt5_loc *loc);

/* Walks the active tree. */
int sv_bt5_walk(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		sv_bt5_record_fn fn, void *arg, struct sv_err *err);

/* The shape of the tree, told in the walk's order (pre-order): an index
 * block (`entries`: n x (key, u32 child), after its first child), the first
 * block of a leaf, each further block of that leaf.  Non-zero stops. */
struct sv_bt5_shape {
	int (*index)(void *arg, uint32_t block, uint8_t level, uint32_t n,
		     const uint8_t *entries);
	int (*leaf)(void *arg, uint32_t block);
	int (*chain)(void *arg, uint32_t block);
};
int sv_bt5_walk_shape(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		      sv_bt5_record_fn fn, void *arg, const struct sv_bt5_shape *shape,
		      void *shape_arg, struct sv_err *err);
/* Where a reader can lend its own bytes: *out points at n bytes at off,
 * valid until its next call (no copy).  0 or -errno with the reason. */
typedef int (*sv_bt5_view_fn)(void *arg, uint64_t off, size_t n, const uint8_t **out,
			      struct sv_err *err);
/* sv_bt5_walk_shape through view (called with rd_arg) instead of rd: a
 * block is looked at where the reader holds it.  The callbacks must not
 * read through the same reader. */
int sv_bt5_walk_view(const struct sv_bt5 *h, sv_bt5_view_fn view, void *rd_arg,
		     sv_bt5_record_fn fn, void *arg, const struct sv_bt5_shape *shape,
		     void *shape_arg, struct sv_err *err);

/* Reads the active root's free-index chain: its blocks (*ff) and the free
 * block numbers they list (*ent), both malloc'd.  A block past the device
 * size, a chain that comes back on itself or a block that is not a free
 * index is -EBADMSG. */
int sv_bt5_free_chain(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		      uint32_t **ff, uint32_t *nff, uint32_t **ent, uint32_t *nent,
		      struct sv_err *err);

/* Reads a record's value (loc->len bytes) into buf, following its leaf's
 * chain of blocks. */
int sv_bt5_value(const struct sv_bt5 *h, sv_bt5_pread_fn rd, void *rd_arg,
		 const struct sv_bt5_loc *loc, uint8_t *buf, struct sv_err *err);

#endif
