/*
 * tree/tree.h - what tree.c and folder.c share: a tree is one container,
 * or a folder (folder.c), behind the sv_tree_* calls of savefs.h.
 */
#ifndef SV_TREE_H
#define SV_TREE_H

#include "internal.h"

struct sv_folder;

struct sv_tree {
	struct sv_container *c;  /* a container's own tree, or NULL */
	struct sv_folder *f;     /* a folder, or NULL */
};

int sv_folder_open(const char *path, const struct sv_opts *opts, struct sv_folder **out,
		   struct sv_err *err);
void sv_folder_free(struct sv_folder *f);
int sv_folder_lookup(struct sv_folder *f, sv_id dir, const char *name, sv_id *out);
int sv_folder_stat(struct sv_folder *f, sv_id n, struct sv_stat *st);
int sv_folder_readdir(struct sv_folder *f, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg);
int sv_folder_content(struct sv_folder *f, sv_id n, struct sv_blob **out, struct sv_err *err);
int sv_folder_read(struct sv_folder *f, sv_id n, uint64_t off, void *buf, size_t size,
		   size_t *got, struct sv_err *err);
int sv_folder_hold(struct sv_folder *f, sv_id n);
void sv_folder_release(struct sv_folder *f, sv_id n);
int sv_folder_info(struct sv_folder *f, struct sv_blob **out, struct sv_err *err);

#endif
