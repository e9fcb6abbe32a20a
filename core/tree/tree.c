/*
 * tree.c - the sv_tree_* calls (savefs.h): a location opened as a
 * container when a format claims it, else, if it is a directory, as a
 * save folder (folder.c); each call goes to the one the tree is.  In a
 * container's own tree an id is its node number.
 */
#include "tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int sv_tree_open(const char *path, const struct sv_opts *opts, struct sv_tree **out,
		 struct sv_err *err)
{
	*out = NULL;
	struct sv_tree *t = calloc(1, sizeof *t);
	if (!t)
		return sv_err_set(err, -ENOMEM, "out of memory");
	/* A directory no format claims is a folder: the container's open
	 * (which sniffs) says so. */
	int rc = sv_container_open(path, opts, &t->c, err);
	struct stat st;
	if (rc == -EMEDIUMTYPE && !opts->format && !stat(path, &st) && S_ISDIR(st.st_mode)) {
		sv_err_clear(err);
		rc = sv_folder_open(path, opts, &t->f, err);
	}
	if (rc) {
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void sv_tree_free(struct sv_tree *t)
{
	if (!t)
		return;
	sv_container_free(t->c);
	sv_folder_free(t->f);
	free(t);
}

struct sv_container *sv_tree_container(struct sv_tree *t)
{
	return t->c;
}

/* A container's node number from an id of its own tree. */
static int node_of(sv_id n, uint32_t *out)
{
	if (n >= SV_NONE)
		return -ENOENT;
	*out = (uint32_t)n;
	return 0;
}

int sv_tree_lookup(struct sv_tree *t, sv_id dir, const char *name, sv_id *out)
{
	if (t->f)
		return sv_folder_lookup(t->f, dir, name, out);
	uint32_t d, n;
	int rc = node_of(dir, &d);
	if (!rc)
		rc = sv_lookup(t->c, d, name, &n);
	if (!rc)
		*out = n;
	return rc;
}

int sv_tree_resolve(struct sv_tree *t, const char *path, sv_id *out)
{
	sv_id n = SV_TREE_ROOT;
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	int rc = 0;
	char *save = NULL;
	for (char *part = strtok_r(copy, "/", &save); part && !rc;
	     part = strtok_r(NULL, "/", &save))
		rc = sv_tree_lookup(t, n, part, &n);
	free(copy);
	if (!rc)
		*out = n;
	return rc;
}

int sv_tree_stat(struct sv_tree *t, sv_id n, struct sv_stat *st)
{
	if (t->f)
		return sv_folder_stat(t->f, n, st);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? rc : sv_stat(t->c, k, st);
}

int sv_tree_readdir(struct sv_tree *t, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg)
{
	if (t->f)
		return sv_folder_readdir(t->f, dir, from, fn, arg);
	uint32_t d;
	int rc = node_of(dir, &d);
	return rc ? rc : sv_readdir(t->c, d, from, fn, arg);
}

int sv_tree_content(struct sv_tree *t, sv_id n, struct sv_blob **out, struct sv_err *err)
{
	if (t->f)
		return sv_folder_content(t->f, n, out, err);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? sv_err_set(err, rc, "no such node") : sv_content(t->c, k, out, err);
}

int sv_tree_read(struct sv_tree *t, sv_id n, uint64_t off, void *buf, size_t size,
		 size_t *got, struct sv_err *err)
{
	if (t->f)
		return sv_folder_read(t->f, n, off, buf, size, got, err);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? sv_err_set(err, rc, "no such node") : sv_read(t->c, k, off, buf, size, got, err);
}

int sv_tree_hold(struct sv_tree *t, sv_id n)
{
	if (t->f)
		return sv_folder_hold(t->f, n);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? rc : sv_open(t->c, k);
}

void sv_tree_release(struct sv_tree *t, sv_id n)
{
	uint32_t k;
	if (t->f)
		sv_folder_release(t->f, n);
	else if (!node_of(n, &k))
		sv_release(t->c, k);
}

int sv_tree_info(struct sv_tree *t, struct sv_blob **out, struct sv_err *err)
{
	if (t->f)
		return sv_folder_info(t->f, out, err);
	uint32_t n;
	int rc = sv_resolve(t->c, ".savefs/info", &n);
	return rc ? sv_err_set(err, rc, "no /.savefs/info") : sv_content(t->c, n, out, err);
}
