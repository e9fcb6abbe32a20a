/*
 * folder_edit.c - a save folder edited: a container's nodes through its container, a
 * file that passes through as the real file, a real directory as the file
 * system does.
 */
#include "folder.h"

/* ---- edits ------------------------------------------------------------------------ */

/*
 * The container a tree id is in, taken (sv_folder_slot_release() when done): a container's
 * node, or a claimed entry (its root).  0, 1 if id is a real entry of the folder
 * (*node its entry), or -errno.
 */
static int edit_target_as(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
			  uint32_t *slot, bool fresh, struct sv_err *err)
{
	*node = 0;
	*slot = 0;
	pthread_mutex_lock(&f->lock);
	int rc;
	if (id >> 32) {
		rc = sv_folder_node_container_as(f, id, c, node, slot, fresh);
		if (rc)
			sv_err_set(err, rc, "a container closed or replaced under its user");
	} else if ((uint32_t)id >= f->ne) {
		rc = sv_err_set(err, -ENOENT, "no such file");
	} else if ((rc = sv_folder_classify(f, (uint32_t)id))) {
		sv_err_set(err, rc, "%s", strerror(-rc));
	} else if (f->e[id].kind == E_CLAIMED) {
		rc = sv_folder_open_container(f, (uint32_t)id, c, slot, err);
		if (rc)
			rc = sv_err_set(err, rc == -EMEDIUMTYPE ? -ENOTDIR : -EIO, "%s", err->msg);
		*node = SV_ROOT;
	} else {
		*node = (uint32_t)id;
		rc = 1;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* take_as for a change naming a place anew (a new name, a removal, a
 * rename), and for a change of a file already open. */
static int edit_target(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
		       uint32_t *slot, struct sv_err *err)
{
	return edit_target_as(f, id, c, node, slot, true, err);
}

static int edit_target_open(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
			    uint32_t *slot, struct sv_err *err)
{
	return edit_target_as(f, id, c, node, slot, false, err);
}

/* A container's changes forwarded to the client, by tree id. */
static struct sv_forward forward_for(struct sv_folder *f, uint32_t slot, sv_tree_changed_fn fn,
				     void *arg)
{
	pthread_mutex_lock(&f->lock);
	struct sv_forward r = {fn, arg, f->s[slot].claimed, slot, f->s[slot].epoch};
	pthread_mutex_unlock(&f->lock);
	return r;
}

void sv_folder_set_notify(struct sv_folder *f, sv_tree_changed_fn fn, void *arg)
{
	pthread_mutex_lock(&f->lock);
	f->live_fn = fn;
	f->live_arg = arg;
	bool start = fn && !f->watching && !f->remote; /* a store tells no changes */
	pthread_mutex_unlock(&f->lock);
	/* Followed while a client listens (the daemon; not a command). */
	if (start) {
		sv_folder_watch_start(f);
	} else if (!fn) {
		/* The client is going: the walk ahead first (its workers list
		 * directories, which the watcher follows). */
		sv_folder_ahead_stop(f);
		sv_folder_watch_stop(f);
	}
}

/* The refusal of a change to a real entry that cannot be changed. */
static int not_here(struct sv_folder *f, struct sv_err *err)
{
	if (f->remote && !f->opts.read_only)
		return sv_err_set(err, -EROFS, "an %s's own files and directories are read-only "
				  "(its containers are written)", f->src->ops->kind);
	return f->opts.read_only ? sv_err_set(err, -EROFS, "mounted read-only")
				 : sv_err_set(err, -EPERM, "a container's raw form is read-only");
}

int sv_folder_write(struct sv_folder *f, sv_id n, uint64_t off, const void *buf, size_t size,
		    struct sv_err *err)
{
	struct sv_container *c;
	uint32_t node, slot;
	int rc = edit_target_open(f, n, &c, &node, &slot, err);
	if (rc == 1) /* a real file is written through its descriptor */
		return sv_err_set(err, -EBADF, "a file that passes through is written as itself");
	if (rc)
		return rc;
	rc = sv_write(c, node, off, buf, size, err);
	sv_folder_slot_release(f, slot);
	return rc;
}

int sv_folder_truncate(struct sv_folder *f, sv_id n, uint64_t size, struct sv_err *err)
{
	struct sv_container *c;
	uint32_t node, slot;
	int rc = edit_target_open(f, n, &c, &node, &slot, err);
	if (rc == 1) {
		pthread_mutex_lock(&f->lock);
		bool ok = f->e[node].kind == E_FILE && sv_folder_changeable(f, node);
		bool dir = f->e[node].kind != E_FILE && f->e[node].kind != E_RAW;
		pthread_mutex_unlock(&f->lock);
		if (!ok)
			return dir ? sv_err_set(err, -EISDIR, "is a directory") : not_here(f, err);
		pthread_mutex_lock(&f->lock);
		char *rel = strdup(f->e[node].rel);
		pthread_mutex_unlock(&f->lock);
		int fd = rel ? sv_open_beneath(f->dfd, rel, O_WRONLY | O_NONBLOCK | O_NOCTTY, 0)
			     : -ENOMEM;
		free(rel);
		struct stat st;
		rc = fd < 0 ? fd : fstat(fd, &st) ? -errno : !S_ISREG(st.st_mode) ? -EINVAL
		     : ftruncate(fd, (off_t)size) ? -errno : 0;
		if (fd >= 0)
			close(fd);
		return rc ? sv_err_set(err, rc, "%s", strerror(-rc)) : 0;
	}
	if (rc)
		return rc;
	rc = sv_truncate(c, node, size, err);
	sv_folder_slot_release(f, slot);
	return rc;
}

int sv_folder_flush(struct sv_folder *f, sv_id n, sv_tree_changed_fn fn, void *arg,
		    struct sv_err *err)
{
	struct sv_container *c;
	uint32_t node, slot;
	int rc = edit_target_open(f, n, &c, &node, &slot, err);
	if (rc == 1)
		return 0;
	if (rc)
		return rc;
	struct sv_forward r = forward_for(f, slot, fn, arg);
	rc = sv_flush(c, node, sv_forward_fn(), &r, err);
	sv_folder_slot_release(f, slot);
	return rc;
}

int sv_folder_commit(struct sv_folder *f, sv_tree_changed_fn fn, void *arg, struct sv_err *err)
{
	int first = 0;
	pthread_mutex_lock(&f->lock);
	uint32_t ns = f->ns;
	pthread_mutex_unlock(&f->lock);
	for (uint32_t s = 0; s < ns; s++) {
		pthread_mutex_lock(&f->lock);
		struct sv_container *c = f->s[s].c;
		if (c)
			f->s[s].users++;
		pthread_mutex_unlock(&f->lock);
		if (!c)
			continue;
		struct sv_forward r = forward_for(f, s, fn, arg);
		struct sv_err e1;
		int rc = sv_commit(c, sv_forward_fn(), &r, &e1);
		if (rc && !first) {
			first = rc;
			*err = e1;
		}
		sv_folder_slot_release(f, s);
	}
	return first;
}

/* The entry of name in real directory entry dir (classified), for a change
 * there: its index, SV_NONE with *rc (-ENOENT if it is not there). */
static uint32_t real_child(struct sv_folder *f, uint32_t dir, const char *name, int *rc,
			   struct sv_err *err)
{
	pthread_mutex_lock(&f->lock);
	uint32_t i = sv_folder_child(f, dir, name, rc);
	pthread_mutex_unlock(&f->lock);
	if (i == SV_NONE)
		sv_err_set(err, *rc, "%s", strerror(-*rc));
	return i;
}

/* The kind of entry i (lock not held). */
static int kind_of(struct sv_folder *f, uint32_t i)
{
	pthread_mutex_lock(&f->lock);
	int kind = f->e[i].kind;
	pthread_mutex_unlock(&f->lock);
	return kind;
}

/* The real directory entry dir as a place for changes: its path
 * relative to the folder ("." for the root) joined with name, or NULL
 * with *rc. */
static char *real_place(struct sv_folder *f, uint32_t dir, const char *name, int *rc,
			struct sv_err *err)
{
	*rc = 0;
	pthread_mutex_lock(&f->lock);
	if (dir >= f->ne || sv_folder_classify(f, dir))
		*rc = sv_err_set(err, -ENOENT, "no such directory");
	else if (!sv_folder_real_dir(f, dir))
		*rc = sv_err_set(err, -ENOTDIR, "not a directory");
	else if (!sv_folder_changeable(f, dir) || (dir == 0 && !strcmp(name, ".savefs")))
		*rc = not_here(f, err);
	else if (!sv_real_name_ok(name) || sv_folder_hidden_name(dir, name))
		*rc = sv_err_set(err, -EINVAL, "not a name savefs shows");
	char *rel = NULL;
	if (!*rc && !(rel = sv_folder_rel_of(f, dir, name)))
		*rc = sv_err_set(err, -ENOMEM, "out of memory");
	pthread_mutex_unlock(&f->lock);
	return rel;
}

/*
 * A file or directory just made at p (fd its descriptor, or -1) takes
 * the mode asked for exactly (the caller's umask was applied by the
 * kernel; the daemon's own must not apply again) and, when the daemon may
 * give files away (it runs as root), the caller's owner, and its group
 * unless the directory hands down its own (set-group-ID).
 */
static int give_to(const struct place *p, int fd, uint32_t mode, const struct sv_owner *who)
{
	struct stat st, ps;
	if (fd >= 0 ? fstat(fd, &st) : fstatat(p->at, p->leaf, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISLNK(st.st_mode)) {
		/* A directory made in a set-group-ID one keeps the bit. */
		mode_t want = (mode & 07777) | (S_ISDIR(st.st_mode) ? st.st_mode & S_ISGID : 0);
		if ((st.st_mode & 07777) != want &&
		    (fd >= 0 ? fchmod(fd, want) : fchmodat(p->at, p->leaf, want, 0)))
			return -errno;
	}
	if (!who || geteuid() != 0)
		return 0;
	bool inherit = !fstatat(p->at, "", &ps, AT_EMPTY_PATH) && (ps.st_mode & S_ISGID);
	uid_t uid = who->uid;
	gid_t gid = inherit ? st.st_gid : who->gid;
	if (st.st_uid == uid && st.st_gid == gid)
		return 0;
	if (fd >= 0 ? fchown(fd, uid, gid) : fchownat(p->at, p->leaf, uid, gid, AT_SYMLINK_NOFOLLOW))
		return -errno;
	return 0;
}

int sv_folder_create(struct sv_folder *f, sv_id dir, const char *name, uint32_t mode, int flags,
		     const struct sv_owner *who, sv_id *out, int *fd, struct sv_err *err)
{
	*fd = -1;
	struct sv_container *c;
	uint32_t node, slot, n;
	int rc = edit_target(f, dir, &c, &node, &slot, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		rc = sv_create(c, node, name, mode, &n, err);
		if (!rc)
			*out = SLOT_ID(slot, n);
		sv_folder_slot_release(f, slot);
		return rc;
	}
	char *rel = real_place(f, node, name, &rc, err);
	struct place p;
	if (!rel || (rc = sv_folder_place_open(f, rel, &p)))
		return rel ? sv_err_set(err, rc, "%s", strerror(-rc)) : rc;
	int k = openat(p.at, p.leaf, (flags & ~O_CREAT) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		       mode & 07777);
	if (k < 0) {
		rc = -errno;
		sv_folder_place_close(&p);
		return sv_err_set(err, rc, "%s", strerror(-rc));
	}
	rc = give_to(&p, k, mode, who);
	if (rc) {
		/* Made, but not as asked: it goes again (nobody saw it). */
		unlinkat(p.at, p.leaf, 0);
		sv_folder_place_close(&p);
		close(k);
		return sv_err_set(err, rc, "the new file could not be given its owner or mode: %s",
				  strerror(-rc));
	}
	sv_folder_place_close(&p);
	pthread_mutex_lock(&f->lock);
	uint32_t i = sv_folder_child(f, node, name, &rc);
	if (i != SV_NONE && (flags & O_ACCMODE) != O_RDONLY && f->e[i].kind == E_FILE)
		f->e[i].writers++;
	pthread_mutex_unlock(&f->lock);
	if (i == SV_NONE) {
		close(k);
		return sv_err_set(err, rc, "%s", strerror(-rc));
	}
	*out = i;
	*fd = k;
	return 0;
}

/* The real directory entry dir is (*node), for a change only a real
 * directory takes: 0, or the refusal (`why`) if it is a container's. */
static int real_dir_of(struct sv_folder *f, sv_id dir, uint32_t *node, const char *why,
		       struct sv_err *err)
{
	struct sv_container *c;
	uint32_t slot;
	int rc = edit_target(f, dir, &c, node, &slot, err);
	if (rc < 0)
		return rc;
	if (rc == 1)
		return 0;
	bool ro = sv_container_read_only(c);
	pthread_mutex_lock(&f->lock);
	bool removed = f->s[slot].removed;
	pthread_mutex_unlock(&f->lock);
	sv_folder_slot_release(f, slot);
	if (removed)
		return 2; /* the container's file was removed through the mount */
	return sv_err_set(err, ro ? -EROFS : -EPERM, "%s", why);
}

/* A new directory (target NULL) or symbolic link to target, named name
 * in real directory dir and given to who: its entry in *out.  `why` is
 * the refusal inside a container. */
static int make_real(struct sv_folder *f, sv_id dir, const char *name, uint32_t mode,
		     const char *target, const char *why, const struct sv_owner *who, sv_id *out,
		     struct sv_err *err)
{
	uint32_t node;
	int rc = real_dir_of(f, dir, &node, why, err);
	if (rc)
		return rc == 2 ? sv_err_set(err, -ENOENT, "removed") : rc;
	char *rel = real_place(f, node, name, &rc, err);
	struct place p;
	if (!rel || (rc = sv_folder_place_open(f, rel, &p)))
		return rel ? sv_err_set(err, rc, "%s", strerror(-rc)) : rc;
	if (target)
		rc = symlinkat(target, p.at, p.leaf) ? -errno : 0;
	else
		rc = mkdirat(p.at, p.leaf, mode & 07777) ? -errno : 0;
	if (!rc && (rc = give_to(&p, -1, mode, who)))
		unlinkat(p.at, p.leaf, target ? 0 : AT_REMOVEDIR);
	sv_folder_place_close(&p);
	if (rc)
		return sv_err_set(err, rc, "%s", strerror(-rc));
	uint32_t i = real_child(f, node, name, &rc, err);
	if (i == SV_NONE)
		return rc;
	*out = i;
	return 0;
}

int sv_folder_mkdir(struct sv_folder *f, sv_id dir, const char *name, uint32_t mode,
		    const struct sv_owner *who, sv_id *out, struct sv_err *err)
{
	return make_real(f, dir, name, mode, NULL, "a container takes no new directories", who,
			 out, err);
}

/* Removes the real file (or, with AT_REMOVEDIR, directory) name of real
 * directory dir. */
static int real_remove(struct sv_folder *f, uint32_t dir, const char *name, int how,
		       struct sv_err *err)
{
	int rc;
	char *rel = real_place(f, dir, name, &rc, err);
	struct place p;
	if (!rel || (rc = sv_folder_place_open(f, rel, &p)))
		return rel ? sv_err_set(err, rc, "%s", strerror(-rc)) : rc;
	rc = unlinkat(p.at, p.leaf, how) ? -errno : 0;
	sv_folder_place_close(&p);
	return rc ? sv_err_set(err, rc, "%s", strerror(-rc)) : 0;
}

/* A removal in the raw form of a directory container (real directory
 * entry d, in it) was refused: rm -r of the container goes on to its
 * entries, which are refused too for a while (a recording's chunks would
 * otherwise go one by one). */
static void guard_raw(struct sv_folder *f, uint32_t d)
{
	pthread_mutex_lock(&f->lock);
	while (d && f->e[d].kind != E_RAW && f->e[d].in_raw)
		d = f->e[d].parent;
	if (f->e[d].kind == E_RAW) {
		uint32_t claimed = f->e[d].parent;
		if (f->e[claimed].slot)
			f->s[f->e[claimed].slot - 1].guard_ns = sv_folder_now_ns() + GHOST_NS;
	}
	pthread_mutex_unlock(&f->lock);
}

int sv_folder_unlink(struct sv_folder *f, sv_id dir, const char *name, sv_tree_changed_fn fn,
		     void *arg, struct sv_err *err)
{
	struct sv_container *c;
	uint32_t node, slot;
	int rc = edit_target(f, dir, &c, &node, &slot, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		pthread_mutex_lock(&f->lock);
		bool raw = node == f->s[slot].meta && !strcmp(name, "container");
		uint32_t claimed = f->s[slot].claimed;
		bool removed = f->s[slot].removed;
		bool guarded = sv_folder_now_ns() < f->s[slot].guard_ns;
		pthread_mutex_unlock(&f->lock);
		if (removed) {
			sv_folder_slot_release(f, slot);
			return 0; /* gone with its container (rm -r's later steps) */
		}
		if (guarded && !raw) {
			sv_folder_slot_release(f, slot);
			return sv_err_set(err, -EPERM, "a directory container is not removed through "
					  "the mount, nor emptied entry by entry: remove it outside");
		}
		if (!raw) {
			struct sv_forward r = forward_for(f, slot, fn, arg);
			rc = sv_unlink(c, node, name, sv_forward_fn(), &r, err);
			sv_folder_slot_release(f, slot);
			return rc;
		}
		sv_folder_slot_release(f, slot);
		/* NAME/.savefs/container: the container's file goes from the
		 * folder (its open files keep reading what they read). */
		pthread_mutex_lock(&f->lock);
		bool file = S_ISREG(f->e[claimed].st.st_mode);
		uint32_t parent = f->e[claimed].parent;
		char *bname = strdup(f->e[claimed].name);
		pthread_mutex_unlock(&f->lock);
		if (!bname)
			return sv_err_set(err, -ENOMEM, "out of memory");
		rc = file ? real_remove(f, parent, bname, 0, err)
			  : sv_err_set(err, -EISDIR, "a directory container is removed as "
				       "a directory, outside the mount");
		if (!rc) {
			/* rm -r NAME goes on: NAME is an empty directory until
			 * its own rmdir, and whatever rm removes in it next is
			 * gone already. */
			pthread_mutex_lock(&f->lock);
			sv_folder_log(f, "%s: removed", f->e[claimed].rel);
			f->e[claimed].ghost_ns = sv_folder_now_ns() + GHOST_NS;
			if (f->e[claimed].slot == slot + 1)
				f->s[slot].removed = true;
			pthread_mutex_unlock(&f->lock);
		}
		free(bname);
		return rc;
	}
	uint32_t i = real_child(f, node, name, &rc, err);
	if (i == SV_NONE)
		return rc;
	if (kind_of(f, i) != E_FILE)
		return sv_err_set(err, -EISDIR, "is a directory");
	rc = real_remove(f, node, name, 0, err);
	if (rc == -EPERM)
		guard_raw(f, node);
	return rc;
}

int sv_folder_rmdir(struct sv_folder *f, sv_id dir, const char *name, struct sv_err *err)
{
	uint32_t node;
	int rc = real_dir_of(f, dir, &node, "a container's directories are its own", err);
	if (rc == 2)
		return 0; /* in a container removed through the mount */
	if (rc)
		return rc;
	uint32_t i = real_child(f, node, name, &rc, err);
	if (i == SV_NONE)
		return rc;
	pthread_mutex_lock(&f->lock);
	int kind = f->e[i].kind;
	if (f->e[i].ghost_ns) {
		/* The last step of rm -r NAME: NAME's file is gone already. */
		struct entry *e = &f->e[i];
		e->ghost_ns = 0;
		e->classified = false;
		if (e->slot)
			sv_folder_supersede(f, e->slot - 1);
		e->slot = 0;
		e->raw = 0;
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	bool file_box = kind == E_CLAIMED && S_ISREG(f->e[i].st.st_mode);
	if (file_box)
		sv_folder_log(f, "%s: a container is not removed as a directory: remove "
			   "%s/.savefs/container", f->e[i].rel, name);
	pthread_mutex_unlock(&f->lock);
	if (kind == E_FILE)
		return sv_err_set(err, -ENOTDIR, "not a directory");
	if (file_box)
		return sv_err_set(err, -ENOTEMPTY, "a container: remove its .savefs/container");
	rc = real_remove(f, node, name, AT_REMOVEDIR, err);
	if (rc == -EPERM)
		guard_raw(f, i);
	return rc;
}

/* Whether rel is p or below it. */
static bool at_or_below(const char *rel, const char *p, size_t n)
{
	return !strncmp(rel, p, n) && (!rel[n] || rel[n] == '/');
}

/*
 * After name in d1 was renamed to newname in d2 (lock held): the entries
 * at the old path and below it take the new one, keeping their ids, as a
 * file keeps its inode: a client that holds the moved entry (the kernel
 * names it by its new name at once) finds it there, not by the path it
 * had.  What was at the new path (replaced, or exchanged) takes the old
 * one, where it is looked at afresh (nothing there, after a replace).
 * Files (no entries below them: no directory, no raw form looked into)
 * are the two entries alone; a directory's are found by a pass over the
 * table.  Out of memory, an entry keeps its path, and is looked at afresh.
 */
static void entries_renamed(struct sv_folder *f, uint32_t d1, const char *name, uint32_t d2,
			    const char *newname)
{
	char *from = sv_folder_rel_of(f, d1, name), *to = sv_folder_rel_of(f, d2, newname);
	uint32_t a = from ? sv_folder_find_entry(f, from) : SV_NONE;
	uint32_t b = to ? sv_folder_find_entry(f, to) : SV_NONE;
	bool deep = (a != SV_NONE && (f->e[a].kind == E_DIR || f->e[a].raw)) ||
		    (b != SV_NONE && (f->e[b].kind == E_DIR || f->e[b].raw));
	size_t fl = from ? strlen(from) : 0, tl = to ? strlen(to) : 0;
	for (uint32_t i = deep ? 0 : SV_NONE; from && to && i < f->ne; i++) {
		if (!at_or_below(f->e[i].rel, from, fl) && !at_or_below(f->e[i].rel, to, tl))
			continue;
		bool moved = at_or_below(f->e[i].rel, from, fl);
		const char *rest = f->e[i].rel + (moved ? fl : tl);
		char *rel = NULL;
		if (asprintf(&rel, "%s%s", moved ? to : from, rest) < 0)
			continue;
		if (!*rest)
			f->e[i].parent = moved ? d2 : d1;
		sv_folder_set_rel(f, i, rel);
	}
	if (!deep && from && to) {
		/* The two files' entries alone, the strings taken. */
		if (a != SV_NONE) {
			f->e[a].parent = d2;
			sv_folder_set_rel(f, a, to);
			to = NULL;
		}
		if (b != SV_NONE) {
			f->e[b].parent = d1;
			sv_folder_set_rel(f, b, from);
			from = NULL;
		}
	}
	free(from);
	free(to);
}

int sv_folder_rename(struct sv_folder *f, sv_id dir, const char *name, sv_id newdir,
		     const char *newname, uint32_t flags, sv_tree_changed_fn fn, void *arg,
		     struct sv_err *err)
{
	struct sv_container *c1, *c2;
	uint32_t n1, n2, s1, s2;
	int r1 = edit_target(f, dir, &c1, &n1, &s1, err);
	if (r1 < 0)
		return r1;
	int r2 = edit_target(f, newdir, &c2, &n2, &s2, err);
	if (r2 < 0) {
		if (!r1)
			sv_folder_slot_release(f, s1);
		return r2;
	}
	int rc;
	if (!r1 && !r2 && s1 == s2) {
		struct sv_forward r = forward_for(f, s1, fn, arg);
		rc = sv_rename(c1, n1, name, n2, newname, flags, sv_forward_fn(), &r, err);
	} else if (r1 == 1 && r2 == 1) {
		char *from = real_place(f, n1, name, &rc, err);
		char *to = from ? real_place(f, n2, newname, &rc, err) : NULL;
		struct place p1 = {-1, NULL, NULL}, p2 = {-1, NULL, NULL};
		if (to && (rc = sv_folder_place_open(f, from, &p1)))
			from = NULL;
		if (to && !rc && (rc = sv_folder_place_open(f, to, &p2)))
			to = NULL;
		if (rc && !err->msg[0])
			sv_err_set(err, rc, "%s", strerror(-rc));
		if (!rc && to) {
			/* A container moved (or replaced: mv -T of one container
			 * onto another) is closed first (it holds its file by its
			 * path) and opened again under its new name; one in use
			 * stays where it is. */
			pthread_mutex_lock(&f->lock);
			for (int k = 0; k < 2 && !rc; k++) {
				int e1;
				uint32_t i = k ? sv_folder_child(f, n2, newname, &e1) : sv_folder_child(f, n1, name, &rc);
				struct entry *e = i == SV_NONE ? NULL : &f->e[i];
				if (!e || e->kind != E_CLAIMED || !e->slot || !f->s[e->slot - 1].c)
					continue;
				struct slot *sl = &f->s[e->slot - 1];
				if (sl->users || !sv_container_idle(sl->c))
					rc = sv_err_set(err, -EBUSY, "%s is in use (a file of it "
							"open, or an edit pending)", e->rel);
				else
					sv_folder_close_slot(f, e->slot - 1);
			}
			if (!rc && renameat2(p1.at, p1.leaf, p2.at, p2.leaf, flags))
				rc = sv_err_set(err, -errno, "%s", strerror(errno));
			else if (!rc)
				entries_renamed(f, n1, name, n2, newname);
			pthread_mutex_unlock(&f->lock);
		}
		if (p1.rel)
			sv_folder_place_close(&p1);
		else
			free(from);
		if (p2.rel)
			sv_folder_place_close(&p2);
		else
			free(to);
	} else {
		rc = sv_err_set(err, -EXDEV, "between a container and another place");
	}
	if (!r1)
		sv_folder_slot_release(f, s1);
	if (!r2)
		sv_folder_slot_release(f, s2);
	return rc;
}

int sv_folder_open_real(struct sv_folder *f, sv_id n, int flags)
{
	if (n >> 32)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	int rc;
	uint32_t i = sv_folder_real_file(f, n, &rc);
	bool wr = (flags & O_ACCMODE) != O_RDONLY;
	if (i != SV_NONE && wr && (f->e[i].kind != E_FILE || !sv_folder_changeable(f, i)))
		rc = f->opts.read_only ? -EROFS : -EACCES;
	char *rel = i == SV_NONE || rc ? NULL : strdup(f->e[i].rel);
	if (!rc && !rel)
		rc = -ENOMEM;
	pthread_mutex_unlock(&f->lock);
	if (rc)
		return rc;
	/* Never through a link, never blocking (a FIFO that took a regular
	 * file's place since its look is refused). */
	int fd = sv_open_beneath(f->dfd, rel, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NOFOLLOW |
				 O_NONBLOCK | O_NOCTTY, 0);
	free(rel);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (!(flags & O_NONBLOCK))
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if ((flags & O_TRUNC) && wr && ftruncate(fd, 0)) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (wr) {
		pthread_mutex_lock(&f->lock);
		f->e[i].writers++;
		pthread_mutex_unlock(&f->lock);
	}
	return fd;
}

void sv_folder_real_written(struct sv_folder *f, sv_id n)
{
	if (n >> 32)
		return;
	pthread_mutex_lock(&f->lock);
	if ((uint32_t)n < f->ne && f->e[n].writers)
		f->e[n].writers--;
	pthread_mutex_unlock(&f->lock);
}

/* Entry n as a place for a change of its attributes (0 and *p), or 1
 * if n is a container's node, 2 if it is a container's directory (a claimed entry:
 * its times are kept by the folder while its file is the same, as a
 * container's files keep theirs; its mode and owner are accepted, not
 * kept; the file itself is not touched), or -errno. */
static int attr_place(struct sv_folder *f, sv_id n, struct place *p)
{
	if (n >> 32)
		return 1;
	pthread_mutex_lock(&f->lock);
	uint32_t i = (uint32_t)n;
	int rc = i < f->ne ? sv_folder_classify(f, i) : -ENOENT;
	char *rel = NULL;
	if (!rc && f->e[i].kind == E_CLAIMED)
		rc = 2;
	else if (!rc && f->opts.read_only)
		rc = -EROFS;
	else if (!rc && !sv_folder_changeable(f, i))
		rc = f->opts.read_only ? -EROFS : -EPERM;
	if (!rc && !(rel = strdup(f->e[i].rel)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&f->lock);
	if (!rc)
		rc = sv_folder_place_open(f, rel, p);
	return rc;
}

int sv_folder_set_times(struct sv_folder *f, sv_id n, const struct timespec *atime,
			const struct timespec *mtime)
{
	struct place p;
	int rc = attr_place(f, n, &p);
	if (rc == 1) {
		struct sv_container *c;
		uint32_t node, slot;
		struct sv_err err;
		rc = edit_target(f, n, &c, &node, &slot, &err);
		if (rc)
			return rc < 0 ? rc : -EPERM;
		rc = sv_set_times(c, node, atime, mtime);
		sv_folder_slot_release(f, slot);
		return rc;
	}
	if (rc == 2) {
		pthread_mutex_lock(&f->lock);
		struct entry *e = &f->e[(uint32_t)n];
		if (!e->times_set) {
			e->set_mtime = e->st.st_mtim;
			e->set_atime = e->st.st_atim;
		}
		if (mtime)
			e->set_mtime = *mtime;
		if (atime)
			e->set_atime = *atime;
		e->times_set = true;
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	if (rc)
		return rc;
	struct timespec ts[2] = {atime ? *atime : (struct timespec){0, UTIME_OMIT},
				 mtime ? *mtime : (struct timespec){0, UTIME_OMIT}};
	rc = utimensat(p.at, p.leaf, ts, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	sv_folder_place_close(&p);
	return rc;
}

int sv_folder_set_mode(struct sv_folder *f, sv_id n, uint32_t mode)
{
	struct place p;
	int rc = attr_place(f, n, &p);
	if (rc)
		return rc == 1 || rc == 2 ? 0 : rc;
	struct stat st;
	if (fstatat(p.at, p.leaf, &st, AT_SYMLINK_NOFOLLOW))
		rc = -errno;
	else if (S_ISLNK(st.st_mode))
		rc = -EOPNOTSUPP; /* a link has no mode of its own */
	else
		rc = fchmodat(p.at, p.leaf, mode & 07777, 0) ? -errno : 0;
	sv_folder_place_close(&p);
	return rc;
}

int sv_folder_set_owner(struct sv_folder *f, sv_id n, uint32_t uid, uint32_t gid)
{
	struct place p;
	int rc = attr_place(f, n, &p);
	if (rc)
		return rc == 1 || rc == 2 ? 0 : rc;
	rc = fchownat(p.at, p.leaf, uid, gid, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	sv_folder_place_close(&p);
	return rc;
}

/* The target of a symbolic link of the folder: 0 and *len bytes in buf
 * (not terminated), or -errno. */
int sv_folder_readlink(struct sv_folder *f, sv_id n, char *buf, size_t size, size_t *len)
{
	if (n >> 32)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	uint32_t i = (uint32_t)n;
	int rc = i < f->ne ? sv_folder_classify(f, i) : -ENOENT;
	char *rel = NULL;
	if (!rc && (f->remote || f->e[i].kind != E_FILE || !S_ISLNK(f->e[i].st.st_mode)))
		rc = -EINVAL;
	if (!rc && !(rel = strdup(f->e[i].rel)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&f->lock);
	struct place p;
	if (!rc)
		rc = sv_folder_place_open(f, rel, &p);
	if (rc)
		return rc;
	ssize_t k = readlinkat(p.at, p.leaf, buf, size);
	rc = k < 0 ? -errno : 0;
	sv_folder_place_close(&p);
	if (!rc)
		*len = (size_t)k;
	return rc;
}

/* A symbolic link named name in real directory dir, to target (kept as
 * it is: the folder never follows it), given to who. */
int sv_folder_symlink(struct sv_folder *f, sv_id dir, const char *name, const char *target,
		      const struct sv_owner *who, sv_id *out, struct sv_err *err)
{
	return make_real(f, dir, name, 0777, target, "a container takes no symbolic links", who,
			 out, err);
}

uint32_t sv_folder_drops(struct sv_folder *f, sv_id n)
{
	struct sv_container *c;
	uint32_t node, slot;
	if (!(n >> 32) || sv_folder_container_of_id(f, n, &c, &node, &slot))
		return 0;
	uint32_t d = sv_drops(c, node);
	sv_folder_slot_release(f, slot);
	return d;
}

sv_id sv_folder_current(struct sv_folder *f, sv_id n)
{
	struct sv_container *c;
	uint32_t node, slot;
	if (!(n >> 32) || sv_folder_container_of_id(f, n, &c, &node, &slot))
		return n;
	uint32_t k = sv_current(c, node);
	sv_folder_slot_release(f, slot);
	return SLOT_ID(slot, k);
}

bool sv_folder_read_only(struct sv_folder *f, sv_id n)
{
	struct sv_container *c;
	uint32_t node, slot;
	if (f->opts.read_only || !(n >> 32) || sv_folder_container_of_id(f, n, &c, &node, &slot))
		return f->opts.read_only || (f->remote && !(n >> 32));
	bool ro = sv_container_read_only(c);
	sv_folder_slot_release(f, slot);
	return ro;
}

int sv_folder_path(struct sv_folder *f, sv_id n, char *buf, size_t size)
{
	if (!(n >> 32)) {
		pthread_mutex_lock(&f->lock);
		int rc = (uint32_t)n < f->ne ? 0 : -ENOENT;
		if (!rc)
			snprintf(buf, size, "%s", f->e[n].rel);
		pthread_mutex_unlock(&f->lock);
		return rc;
	}
	struct sv_container *c;
	uint32_t node, slot;
	int rc = sv_folder_container_of_id(f, n, &c, &node, &slot);
	if (rc)
		return rc;
	char inner[4096];
	rc = sv_path(c, node, inner, sizeof inner);
	pthread_mutex_lock(&f->lock);
	if (!rc)
		snprintf(buf, size, "%s/%s", f->e[f->s[slot].claimed].rel, inner);
	sv_folder_slot_release_locked(f, slot);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int sv_folder_temps(struct sv_folder *f, void (*fn)(void *arg, const char *path), void *arg)
{
	int total = 0;
	pthread_mutex_lock(&f->lock);
	for (uint32_t s = 0; s < f->ns; s++)
		if (f->s[s].c)
			total += sv_temps(f->s[s].c, fn, arg);
	pthread_mutex_unlock(&f->lock);
	return total;
}
