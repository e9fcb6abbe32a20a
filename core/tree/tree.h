/*
 * tree/tree.h - what tree.c and folder.c share: a tree is one container,
 * or a folder (folder.c), behind the sv_tree_* calls of savefs.h.
 */
#ifndef SV_TREE_H
#define SV_TREE_H

#include "internal.h"

struct sv_folder;

/* A container's changes passed on to a client with the tree's ids: its
 * callback, and where the container sits (the id of its claimed entry in a folder, slot, epoch;
 * SV_TREE_NONE: the tree is the container). */
struct sv_forward {
	sv_tree_changed_fn fn;
	void *arg;
	sv_id claimed;
	uint32_t slot, epoch;
};

/* A folder's id of a container's node: node number (32 bits), slot + 1
 * (22 bits), the slot's epoch (9 bits). */
#define SV_EPOCH_MASK 0x1ffu
static inline sv_id sv_slot_id(uint32_t slot, uint32_t epoch, uint32_t node)
{
	return (sv_id)(epoch & SV_EPOCH_MASK) << 54 | (sv_id)(slot + 1) << 32 | node;
}
static inline uint64_t sv_slot_of(sv_id id)
{
	return ((id >> 32) & 0x3fffff) - 1;
}
static inline uint32_t sv_epoch_of(sv_id id)
{
	return (uint32_t)(id >> 54) & SV_EPOCH_MASK;
}

struct sv_tree {
	struct sv_container *c;  /* a container's own tree, or NULL */
	struct sv_forward live;    /* a container's: its changes outside commits */
	struct sv_folder *f;     /* a folder, or NULL */
};

/* The container the tree is, or NULL for a folder (the core's own and
 * the tests'; clients ask the tree). */
struct sv_container *sv_tree_container(struct sv_tree *t);
/* A folder's real path (a new string). */
char *sv_folder_location(const struct sv_folder *f);
int sv_folder_open(const char *path, const struct sv_opts *opts, struct sv_folder **out,
		   struct sv_err *err);
void sv_folder_free(struct sv_folder *f);
int sv_folder_lookup(struct sv_folder *f, sv_id dir, const char *name, sv_id *out);
void sv_folder_forget(struct sv_folder *f, sv_id n, uint64_t count);
void sv_folder_held(struct sv_folder *f, sv_id n);
int sv_folder_stat(struct sv_folder *f, sv_id n, struct sv_stat *st);
int sv_folder_stat_open(struct sv_folder *f, sv_id n, struct sv_stat *st);
/* nodes: as sv_readdir_nodes. */
int sv_folder_readdir(struct sv_folder *f, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg,
		      bool nodes);
int sv_folder_content(struct sv_folder *f, sv_id n, struct sv_blob **out, struct sv_err *err);
int sv_folder_stored(struct sv_folder *f, sv_id n, uint64_t *out, struct sv_err *err);
int sv_folder_read(struct sv_folder *f, sv_id n, uint64_t off, void *buf, size_t size,
		   size_t *got, struct sv_err *err);
int sv_folder_hold(struct sv_folder *f, sv_id n);
void sv_folder_release(struct sv_folder *f, sv_id n);
int sv_folder_info(struct sv_folder *f, struct sv_blob **out, struct sv_err *err);

/* (struct sv_forward, above) A container's changes passed on by tree id: claimed is its root's id in the
 * tree (SV_TREE_NONE: a container's own tree, ids are node numbers), slot
 * its place in a folder. */
sv_id sv_forward_id(const struct sv_forward *r, uint32_t node);
sv_changed_fn sv_forward_fn(void);

int sv_folder_write(struct sv_folder *f, sv_id n, uint64_t off, const void *buf, size_t size,
		    struct sv_err *err);
int sv_folder_truncate(struct sv_folder *f, sv_id n, uint64_t size, struct sv_err *err);
void sv_folder_set_notify(struct sv_folder *f, sv_tree_changed_fn fn, void *arg);
int sv_folder_flush(struct sv_folder *f, sv_id n, sv_tree_changed_fn fn, void *arg,
		    struct sv_err *err);
int sv_folder_commit(struct sv_folder *f, sv_tree_changed_fn fn, void *arg, struct sv_err *err);
int sv_folder_create(struct sv_folder *f, sv_id dir, const char *name, uint32_t mode, int flags,
		     const struct sv_owner *who, sv_id *out, int *fd, struct sv_err *err);
int sv_folder_mkdir(struct sv_folder *f, sv_id dir, const char *name, uint32_t mode,
		    const struct sv_owner *who, sv_id *out, struct sv_err *err);
int sv_folder_unlink(struct sv_folder *f, sv_id dir, const char *name, sv_tree_changed_fn fn,
		     void *arg, struct sv_err *err);
int sv_folder_rmdir(struct sv_folder *f, sv_id dir, const char *name, struct sv_err *err);
int sv_folder_rename(struct sv_folder *f, sv_id dir, const char *name, sv_id newdir,
		     const char *newname, uint32_t flags, sv_tree_changed_fn fn, void *arg,
		     struct sv_err *err);
int sv_folder_open_real(struct sv_folder *f, sv_id n, int flags);
int sv_folder_readlink(struct sv_folder *f, sv_id n, char *buf, size_t size, size_t *len);
int sv_folder_symlink(struct sv_folder *f, sv_id dir, const char *name, const char *target,
		      const struct sv_owner *who, sv_id *out, struct sv_err *err);
void sv_folder_real_written(struct sv_folder *f, sv_id n);
int sv_folder_set_times(struct sv_folder *f, sv_id n, const struct timespec *atime,
			const struct timespec *mtime);
int sv_folder_set_mode(struct sv_folder *f, sv_id n, uint32_t mode);
int sv_folder_set_owner(struct sv_folder *f, sv_id n, uint32_t uid, uint32_t gid);
uint32_t sv_folder_drops(struct sv_folder *f, sv_id n);
sv_id sv_folder_current(struct sv_folder *f, sv_id n);
bool sv_folder_read_only(struct sv_folder *f, sv_id n);
int sv_folder_path(struct sv_folder *f, sv_id n, char *buf, size_t size);
int sv_folder_temps(struct sv_folder *f, void (*fn)(void *arg, const char *path), void *arg);

#endif
