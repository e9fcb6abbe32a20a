/*
 * tree.c - the sv_tree_* calls (savefs.h): a location opened as a
 * container when a format claims it, else, if it is a directory, as a
 * save folder (folder.c); each call goes to the one the tree is.  In a
 * container's own tree an id is its node number.
 */
#include "tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int tree_open(const char *path, const struct sv_opts *opts, struct sv_tree **out,
		     struct sv_err *err);

int sv_tree_open(const char *path, const struct sv_opts *opts, struct sv_tree **out,
		 struct sv_err *err)
{
	int rc = tree_open(path, opts, out, err);
	size_t n = strlen(path);
	if (rc == -ENOENT && sv_source_is_s3(path) && n && path[n - 1] != '/') {
		/* s3://BUCKET/PREFIX without its slash, where no such key is:
		 * the prefix, if anything is under it (else the key's 404). */
		struct sv_err e2;
		sv_err_clear(&e2);
		char *prefix = malloc(n + 2);
		if (!prefix)
			return rc;
		snprintf(prefix, n + 2, "%s/", path);
		if (!tree_open(prefix, opts, out, &e2)) {
			sv_err_clear(err);
			rc = 0;
		}
		free(prefix);
	}
	return rc;
}

static int tree_open(const char *path, const struct sv_opts *opts, struct sv_tree **out,
		     struct sv_err *err)
{
	*out = NULL;
	struct sv_tree *t = calloc(1, sizeof *t);
	if (!t)
		return sv_err_set(err, -ENOMEM, "out of memory");
	/* A directory no format claims is a folder: the container's open
	 * (which sniffs) says so. */
	int rc = sv_container_open(path, opts, &t->c, err);
	if (rc == -EMEDIUMTYPE && !opts->format && sv_source_is_folder(path)) {
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

bool sv_tree_is_folder(const struct sv_tree *t)
{
	return t->f != NULL;
}

char *sv_tree_location(const struct sv_tree *t)
{
	return t->c ? strdup(sv_container_path(t->c)) : sv_folder_location(t->f);
}

const char *sv_tree_format(const struct sv_tree *t)
{
	return t->c ? t->c->fmt->name : "folder";
}

int sv_tree_parent(struct sv_tree *t, sv_id n, sv_id *out)
{
	*out = SV_TREE_ROOT;
	if (t->f)
		return 0; /* (the kernel asks a folder's entries by lookup) */
	uint32_t up = SV_ROOT;
	int rc = sv_lookup(t->c, (uint32_t)n, "..", &up);
	if (!rc)
		*out = up;
	return rc;
}

uint64_t sv_tree_count(const struct sv_tree *t)
{
	return t->c ? sv_node_count(t->c) : 0;
}

bool sv_tree_follows(const struct sv_tree *t)
{
	return t->c && sv_container_follows(t->c);
}

uint64_t sv_tree_follow_ns(const struct sv_tree *t)
{
	return t->c ? sv_container_follow_ns(t->c) : 0;
}

void sv_tree_poll(struct sv_tree *t)
{
	if (t->c)
		sv_container_poll(t->c, NULL);
}

void sv_tree_before_fork(struct sv_tree *t)
{
	if (t->c)
		sv_container_before_fork(t->c);
}

void sv_tree_after_fork(struct sv_tree *t)
{
	if (t->c)
		sv_container_after_fork(t->c);
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
		rc = sv_lookup_held(t->c, d, name, &n);
	if (!rc)
		*out = n;
	return rc;
}

void sv_tree_forget(struct sv_tree *t, sv_id n, uint64_t count)
{
	uint32_t k;
	if (t->f)
		sv_folder_forget(t->f, n, count);
	else if (!node_of(n, &k))
		sv_forget(t->c, k, count);
}

void sv_tree_held(struct sv_tree *t, sv_id n)
{
	uint32_t k;
	if (t->f)
		sv_folder_held(t->f, n);
	else if (!node_of(n, &k))
		sv_hold(t->c, k);
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

static int first_dir(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	if (!st->dir)
		return 0;
	snprintf(arg, 256, "%s", name);
	return 1;
}

int sv_tree_preview(struct sv_tree *t, sv_id *out)
{
	const char *const *v = t->c ? t->c->fmt->previews : NULL;
	for (; v && *v; v++) {
		char path[1024], *save = NULL;
		snprintf(path, sizeof path, "%s", *v);
		sv_id n = SV_TREE_ROOT;
		int rc = 0;
		for (char *part = strtok_r(path, "/", &save); part && !rc;
		     part = strtok_r(NULL, "/", &save)) {
			char first[256] = "";
			if (!strcmp(part, "*") && (sv_tree_readdir(t, n, 0, first_dir, first) < 0 ||
						   !first[0]))
				rc = -ENOENT;
			else
				rc = sv_tree_lookup(t, n, strcmp(part, "*") ? part : first, &n);
		}
		struct sv_stat st;
		if (!rc && !sv_tree_stat(t, n, &st) && !st.dir && !st.bad) {
			*out = n;
			return 0;
		}
	}
	return -ENOENT;
}

int sv_tree_stat(struct sv_tree *t, sv_id n, struct sv_stat *st)
{
	if (t->f)
		return sv_folder_stat(t->f, n, st);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? rc : sv_stat(t->c, k, st);
}

int sv_tree_stat_open(struct sv_tree *t, sv_id n, struct sv_stat *st)
{
	if (t->f)
		return sv_folder_stat_open(t->f, n, st);
	return sv_tree_stat(t, n, st);
}

static int tree_readdir(struct sv_tree *t, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg,
			bool nodes)
{
	if (t->f)
		return sv_folder_readdir(t->f, dir, from, fn, arg, nodes);
	uint32_t d;
	int rc = node_of(dir, &d);
	return rc ? rc : (nodes ? sv_readdir_nodes : sv_readdir)(t->c, d, from, fn, arg);
}

int sv_tree_readdir(struct sv_tree *t, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg)
{
	return tree_readdir(t, dir, from, fn, arg, false);
}

int sv_tree_readdir_nodes(struct sv_tree *t, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg)
{
	return tree_readdir(t, dir, from, fn, arg, true);
}

int sv_tree_content(struct sv_tree *t, sv_id n, struct sv_blob **out, struct sv_err *err)
{
	if (t->f)
		return sv_folder_content(t->f, n, out, err);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? sv_err_set(err, rc, "no such node") : sv_content(t->c, k, out, err);
}

int sv_tree_stored(struct sv_tree *t, sv_id n, uint64_t *out, struct sv_err *err)
{
	if (t->f)
		return sv_folder_stored(t->f, n, out, err);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? rc : sv_stored(t->c, k, out, err);
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

/* ---- edits ---------------------------------------------------------------------- */

/* A container's changes passed on with the tree's ids (a container's own
 * tree: its node numbers). */
static void forward_changed(void *arg, uint32_t node, uint32_t parent, const char *name,
			    bool gone)
{
	struct sv_forward *r = arg;
	if (r->fn)
		r->fn(r->arg, sv_forward_id(r, node), sv_forward_id(r, parent), name, gone);
}

sv_id sv_forward_id(const struct sv_forward *r, uint32_t node)
{
	if (r->claimed == SV_TREE_NONE)
		return node;
	return node == SV_ROOT ? r->claimed : sv_slot_id(r->slot, r->epoch, node);
}

sv_changed_fn sv_forward_fn(void)
{
	return forward_changed;
}

#define CONTAINER_CALL(t, n, k, call)                                                      \
	do {                                                                               \
		uint32_t k;                                                                \
		int rc_ = node_of(n, &k);                                                  \
		if (rc_)                                                                   \
			return sv_err_set(err, rc_, "no such node");                       \
		return call;                                                               \
	} while (0)

int sv_tree_write(struct sv_tree *t, sv_id n, uint64_t off, const void *buf, size_t size,
		  struct sv_err *err)
{
	if (t->f)
		return sv_folder_write(t->f, n, off, buf, size, err);
	CONTAINER_CALL(t, n, k, sv_write(t->c, k, off, buf, size, err));
}

int sv_tree_truncate(struct sv_tree *t, sv_id n, uint64_t size, struct sv_err *err)
{
	if (t->f)
		return sv_folder_truncate(t->f, n, size, err);
	CONTAINER_CALL(t, n, k, sv_truncate(t->c, k, size, err));
}

int sv_tree_flush(struct sv_tree *t, sv_id n, sv_tree_changed_fn fn, void *arg,
		  struct sv_err *err)
{
	if (t->f)
		return sv_folder_flush(t->f, n, fn, arg, err);
	struct sv_forward r = {fn, arg, SV_TREE_NONE, 0, 0};
	CONTAINER_CALL(t, n, k, sv_flush(t->c, k, forward_changed, &r, err));
}

int sv_tree_commit(struct sv_tree *t, sv_tree_changed_fn fn, void *arg, struct sv_err *err)
{
	if (t->f)
		return sv_folder_commit(t->f, fn, arg, err);
	struct sv_forward r = {fn, arg, SV_TREE_NONE, 0, 0};
	return sv_commit(t->c, forward_changed, &r, err);
}

int sv_tree_create(struct sv_tree *t, sv_id dir, const char *name, uint32_t mode, int flags,
		   const struct sv_owner *who, sv_id *out, int *fd, struct sv_err *err)
{
	*fd = -1;
	if (t->f)
		return sv_folder_create(t->f, dir, name, mode, flags, who, out, fd, err);
	uint32_t d, n;
	int rc = node_of(dir, &d);
	if (rc)
		return sv_err_set(err, rc, "no such directory");
	rc = sv_create(t->c, d, name, mode, &n, err);
	if (!rc)
		*out = n;
	return rc;
}

int sv_tree_mkdir(struct sv_tree *t, sv_id dir, const char *name, uint32_t mode,
		  const struct sv_owner *who, sv_id *out, struct sv_err *err)
{
	if (t->f)
		return sv_folder_mkdir(t->f, dir, name, mode, who, out, err);
	/* A container takes no new directories. */
	return sv_err_set(err, sv_container_read_only(t->c) ? -EROFS : -EPERM,
			  "a container takes no new directories");
}

int sv_tree_unlink(struct sv_tree *t, sv_id dir, const char *name, sv_tree_changed_fn fn,
		   void *arg, struct sv_err *err)
{
	if (t->f)
		return sv_folder_unlink(t->f, dir, name, fn, arg, err);
	struct sv_forward r = {fn, arg, SV_TREE_NONE, 0, 0};
	CONTAINER_CALL(t, dir, k, sv_unlink(t->c, k, name, forward_changed, &r, err));
}

int sv_tree_rmdir(struct sv_tree *t, sv_id dir, const char *name, struct sv_err *err)
{
	if (t->f)
		return sv_folder_rmdir(t->f, dir, name, err);
	return sv_err_set(err, sv_container_read_only(t->c) ? -EROFS : -EPERM,
			  "a container's directories are its own");
}

int sv_tree_rename(struct sv_tree *t, sv_id dir, const char *name, sv_id newdir,
		   const char *newname, uint32_t flags, sv_tree_changed_fn fn, void *arg,
		   struct sv_err *err)
{
	if (t->f)
		return sv_folder_rename(t->f, dir, name, newdir, newname, flags, fn, arg, err);
	struct sv_forward r = {fn, arg, SV_TREE_NONE, 0, 0};
	uint32_t d, nd;
	if (node_of(dir, &d) || node_of(newdir, &nd))
		return sv_err_set(err, -ENOENT, "no such directory");
	return sv_rename(t->c, d, name, nd, newname, flags, forward_changed, &r, err);
}

int sv_tree_open_real(struct sv_tree *t, sv_id n, int flags)
{
	if (t->f)
		return sv_folder_open_real(t->f, n, flags);
	return -EINVAL;
}

int sv_tree_readlink(struct sv_tree *t, sv_id n, char *buf, size_t size, size_t *len)
{
	return t->f ? sv_folder_readlink(t->f, n, buf, size, len) : -EINVAL;
}

int sv_tree_symlink(struct sv_tree *t, sv_id dir, const char *name, const char *target,
		    const struct sv_owner *who, sv_id *out, struct sv_err *err)
{
	if (t->f)
		return sv_folder_symlink(t->f, dir, name, target, who, out, err);
	return sv_err_set(err, sv_container_read_only(t->c) ? -EROFS : -EPERM,
			  "a container holds no symbolic links");
}

int sv_tree_set_times(struct sv_tree *t, sv_id n, const struct timespec *atime,
		      const struct timespec *mtime)
{
	if (t->f)
		return sv_folder_set_times(t->f, n, atime, mtime);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? rc : sv_set_times(t->c, k, atime, mtime);
}

int sv_tree_set_mode(struct sv_tree *t, sv_id n, uint32_t mode)
{
	return t->f ? sv_folder_set_mode(t->f, n, mode) : 0;
}

int sv_tree_set_owner(struct sv_tree *t, sv_id n, uint32_t uid, uint32_t gid)
{
	return t->f ? sv_folder_set_owner(t->f, n, uid, gid) : 0;
}

uint32_t sv_tree_drops(struct sv_tree *t, sv_id n)
{
	if (t->f)
		return sv_folder_drops(t->f, n);
	uint32_t k;
	return node_of(n, &k) ? 0 : sv_drops(t->c, k);
}

sv_id sv_tree_current(struct sv_tree *t, sv_id n)
{
	if (t->f)
		return sv_folder_current(t->f, n);
	uint32_t k;
	return node_of(n, &k) ? n : sv_current(t->c, k);
}

bool sv_tree_read_only(struct sv_tree *t, sv_id n)
{
	if (t->f)
		return sv_folder_read_only(t->f, n);
	return sv_container_read_only(t->c);
}

int sv_tree_path(struct sv_tree *t, sv_id n, char *buf, size_t size)
{
	if (t->f)
		return sv_folder_path(t->f, n, buf, size);
	uint32_t k;
	int rc = node_of(n, &k);
	return rc ? rc : sv_path(t->c, k, buf, size);
}

int sv_tree_temps(struct sv_tree *t, void (*fn)(void *arg, const char *path), void *arg)
{
	if (t->f)
		return sv_folder_temps(t->f, fn, arg);
	return sv_temps(t->c, fn, arg);
}

void sv_tree_set_notify(struct sv_tree *t, sv_tree_changed_fn fn, void *arg)
{
	if (t->f) {
		sv_folder_set_notify(t->f, fn, arg);
		return;
	}
	t->live = (struct sv_forward){fn, arg, SV_TREE_NONE, 0, 0};
	sv_container_set_notify(t->c, fn ? forward_changed : NULL, fn ? &t->live : NULL);
}

void sv_tree_real_written(struct sv_tree *t, sv_id n)
{
	if (t->f)
		sv_folder_real_written(t->f, n);
}

void sv_tree_close_real(struct sv_tree *t, sv_id n, int fd)
{
	close(fd);
}
