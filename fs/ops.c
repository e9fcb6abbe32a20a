/*
 * ops.c - the FUSE low-level operations over the tree (savefs.h).
 *
 * Speed comes from few requests, not fast ones: attributes go out with
 * directory entries (readdirplus), stable nodes get long entry and
 * attribute timeouts and keep the page cache across opens, read-only opens
 * ask the kernel not to send FLUSH, and O_TRUNC arrives with the open.
 *
 * Write-back: writes land in the core's per-node pending buffer; FLUSH (a
 * close) and FSYNC commit it, so close() reports a refused edit.  When a
 * commit changes nodes, their cached pages and names are invalidated
 * (notify.c) before the request that made it is answered, or by a
 * separate thread where the kernel waits on the request.
 *
 * Errors: core calls return -errno; each reply maps it in reply_err().
 */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static struct fs *FS(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The one place a core error becomes a FUSE reply. */
static void reply_err(fuse_req_t req, int rc)
{
	if (rc > 0)
		rc = -EIO;
	switch (rc) {
	case -EBADMSG: /* a malformed entry reads as an I/O error */
		rc = -EIO;
		break;
	case -EMEDIUMTYPE:
		rc = -EIO;
		break;
	default:
		break;
	}
	fuse_reply_err(req, -rc);
}

/* ---- attributes -------------------------------------------------------- */

static void to_stat(const struct sv_stat *s, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = INO(s->id);
	st->st_mode = s->mode;
	st->st_nlink = s->nlink;
	st->st_size = (off_t)s->size;
	st->st_blksize = 65536;
	st->st_blocks = (blkcnt_t)((s->size + 511) / 512);
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_rdev = (dev_t)s->rdev;
	st->st_mtim = s->mtime;
	st->st_ctim = s->mtime;
	st->st_atim = s->atime;
}

/* A save folder changes under the mount (the game, a backup tool): the
 * core follows it (inotify) and says what changed, and what the kernel
 * keeps of it is kept a second at most, as a passthrough file system's
 * (a change the core could not follow shows within it). */
#define FOLDER_TIMEOUT 1.0

static double stable_timeout(struct fs *fs)
{
	return sv_tree_is_folder(fs->t) ? FOLDER_TIMEOUT : fs->timeout;
}

/* A file that passes through is asked for each time, as the file system
 * would answer: another program may write it, and once written it may be
 * a container (a map copied into the folder is a directory then). */
static double attr_timeout(struct fs *fs, const struct sv_stat *s)
{
	return s->volatile_ || s->unsized || s->real ? 0.0 : stable_timeout(fs);
}

static void fill_entry(struct fs *fs, const struct sv_stat *s, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	e->ino = INO(s->id);
	e->generation = 1;
	to_stat(s, &e->attr);
	/* A size not known yet is asked for again (GETATTR) before use. */
	e->attr_timeout = s->unsized ? 0.0 : attr_timeout(fs, s);
	e->entry_timeout = s->real ? 0.0 : stable_timeout(fs);
}

static int reply_entry_for(fuse_req_t req, sv_id n)
{
	struct fs *fs = FS(req);
	struct sv_stat s;
	int rc = sv_tree_stat(fs->t, n, &s);
	if (rc)
		return rc;
	struct fuse_entry_param e;
	fill_entry(fs, &s, &e);
	fuse_reply_entry(req, &e);
	return 0;
}

/*
 * Per-open state.  Only the open that changed a file commits it: its
 * writer's close (FLUSH) commits what it wrote since its last close, and
 * its release commits a change no close committed (an O_TRUNC open that
 * wrote nothing: shells open with O_TRUNC, dup2 and close the original
 * before anything is written, and committing that empty file at once would
 * lose the old content if the real write is then refused).  An open that
 * never changed the file commits nothing, even while another open is half
 * way through writing it.
 *
 * A dropped edit (refused, or its commit failed) is never written on top
 * of: once this open's edit was dropped, by its own close or fsync or by
 * another open's, its writes fail with EIO until it truncates the file,
 * so a half-written file never lands mixed with the stored one.
 */
struct fh {
	struct fh *prev, *next; /* in fs->open_files */
	sv_id node;
	int fd;                /* a save folder's real file: its descriptor, or -1 */
	bool real_writer;      /* it opened that file for writing, and has not
				* closed it yet (counted by the core) */
	bool wrote;            /* written since its last close committed */
	bool changed;          /* changed, and not committed yet */
	bool failed;           /* its edit was dropped: writes fail */
	uint32_t drops;        /* the node's sv_drops() when the change began */
	bool stream;           /* read in pieces (sv_read), never whole */
	pid_t writer;          /* thread that wrote last: its close commits */
	pthread_mutex_t lock;  /* protects big */
	struct sv_blob *big;   /* content larger than the whole cache, kept by
				* this open so that reading it stays linear */
};

static struct fh *FH(struct fuse_file_info *fi)
{
	return (struct fh *)(uintptr_t)fi->fh;
}

static int fh_new(struct fs *fs, struct fuse_file_info *fi, sv_id node)
{
	struct fh *h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	h->node = node;
	h->fd = -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_lock(&fs->open_lock);
	h->next = fs->open_files;
	if (h->next)
		h->next->prev = h;
	fs->open_files = h;
	pthread_mutex_unlock(&fs->open_lock);
	fi->fh = (uintptr_t)h;
	return 0;
}

/* -EIO if this open's edit was dropped since it began (its writes would
 * land on the stored content), else 0. */
static int fh_check(struct fs *fs, struct fh *h)
{
	if (h->failed || (h->changed && sv_tree_drops(fs->t, h->node) != h->drops))
		return -EIO;
	return 0;
}

/* This open is about to change the file; `fresh`: from nothing (an
 * O_TRUNC open, a truncation to 0), which clears an earlier failure. */
static void fh_change(struct fs *fs, struct fh *h, bool fresh)
{
	if (fresh)
		h->failed = false;
	if (!h->changed || fresh)
		h->drops = sv_tree_drops(fs->t, h->node);
	h->changed = true;
}

/* This open changed the file: commit at its close; its kept copy is stale. */
static void fh_wrote(struct fh *h, fuse_req_t req)
{
	h->wrote = true;
	h->writer = fuse_req_ctx(req)->pid;
	pthread_mutex_lock(&h->lock);
	sv_blob_unref(h->big);
	h->big = NULL;
	pthread_mutex_unlock(&h->lock);
}

/* Commits this open's change (FLUSH, FSYNC, RELEASE); its changes are
 * collected in ch.  0 or -errno; a failure marks the open failed. */
static int fh_commit(struct fs *fs, struct fh *h, struct changes *ch, struct sv_err *errp)
{
	struct sv_err local, *e = errp ? errp : &local;
	struct sv_err err;
	sv_err_clear(e);
	int rc = fh_check(fs, h);
	if (rc)
		sv_err_set(e, rc, "the edit this open made was dropped before");
	h->wrote = h->changed = false;
	if (!rc) {
		fs_live_sink = ch;
		rc = sv_tree_flush(fs->t, h->node, fs_on_changed, ch, &err);
		fs_live_sink = NULL;
		if (rc)
			*e = err;
	}
	if (rc)
		h->failed = true;
	return rc;
}

/* A line of savefs umount's report, "PATH: WHAT" (the first few KB of
 * them are kept). */
static void report(struct fs *fs, const char *path, const char *what, const char *why)
{
	pthread_mutex_lock(&fs->open_lock);
	size_t n = strlen(fs->report);
	snprintf(fs->report + n, sizeof fs->report - n, "%s: %s%s%s\n", path, what, why ? ": " : "",
		 why ? why : "");
	pthread_mutex_unlock(&fs->open_lock);
}

/* A commit failed where nobody can be told (a release, the unmount): said
 * on stderr (seen with -f), and the daemon's exit status says it. */
static void unwritten(struct fs *fs, sv_id node, const struct sv_err *err)
{
	char path[4096];
	if (node == SV_TREE_NONE || sv_tree_path(fs->t, node, path, sizeof path))
		snprintf(path, sizeof path, "an edit");
	const char *why = err->msg[0] ? err->msg : strerror(-err->code);
	fprintf(stderr, "savefs: %s: not written: %s\n", path, why);
	__atomic_add_fetch(&fs->unwritten, 1, __ATOMIC_RELAXED);
	report(fs, path, "not written", why);
}

static void fh_free(struct fs *fs, struct fh *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&fs->open_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->open_files = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->open_lock);
	sv_blob_unref(h->big);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* Closes a real file's open: its writer (if it still counts as one) is
 * done, and its descriptor closed. */
static void real_close(struct fs *fs, struct fh *h)
{
	if (h->real_writer)
		sv_tree_real_written(fs->t, h->node);
	h->real_writer = false;
	sv_tree_close_real(fs->t, h->node, h->fd);
	h->fd = -1;
}

/* ---- operations -------------------------------------------------------- */

/* The caller of a request that makes a file: its owner to be. */
static struct sv_owner caller(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	return (struct sv_owner){ctx->uid, ctx->gid};
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	pthread_mutex_init(&fs->open_lock, NULL);
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* The page cache is ours to invalidate: never on mtime alone. */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	conn->max_readahead = conn->max_readahead > (1u << 20) ? conn->max_readahead : (1u << 20);
	if (fs_notify_start(fs))
		fprintf(stderr, "savefs: cannot start the invalidation thread\n");
}

static void say_discarded(void *arg, const char *path)
{
	struct fs *fs = arg;
	fprintf(stderr, "savefs: %s was not part of the container and was discarded\n", path);
	report(fs, path, "discarded (not part of the container)", NULL);
}

static void op_destroy(void *userdata)
{
	struct fs *fs = userdata;
	/* Anything still pending is committed on a clean unmount. */
	struct sv_err err;
	if (sv_tree_commit(fs->t, NULL, NULL, &err))
		unwritten(fs, SV_TREE_NONE, &err);
	/* Files the container has no place for go now: say which. */
	sv_tree_temps(fs->t, say_discarded, fs);
	/* Opens the kernel will never release (the daemon was stopped while
	 * they were open): their edits were committed above. */
	while (fs->open_files) {
		struct fh *h = fs->open_files;
		if (h->fd >= 0)
			real_close(fs, h);
		else
			sv_tree_release(fs->t, h->node);
		fh_free(fs, h);
	}
	fs_notify_stop(fs);
}

static void lookup_one(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	sv_id n;
	int rc = sv_tree_lookup(FS(req)->t, NODE(parent), name, &n);
	if (!rc && (rc = reply_entry_for(req, n)))
		sv_tree_forget(FS(req)->t, n, 1); /* the kernel did not get it */
	if (rc)
		reply_err(req, rc);
}

/* The kernel let go of nodes it had looked up: an index directory's
 * entry nothing else holds goes (its number may be given again). */
static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	sv_tree_forget(FS(req)->t, NODE(ino), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		sv_tree_forget(FS(req)->t, NODE(forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	struct sv_stat s;
	/* fstat of an open file: the file it opened. */
	int rc = fi && fi->fh ? sv_tree_stat_open(fs->t, FH(fi)->node, &s)
			      : sv_tree_stat(fs->t, NODE(ino), &s);
	/* A node of a container whose file was replaced since, still open
	 * (fstat of an open file comes without its handle once the
	 * attributes expired): as that container has it. */
	if (rc == -ESTALE && !fi)
		rc = sv_tree_stat_open(fs->t, NODE(ino), &s);
	if (rc == -ESTALE) /* replaced by a rename: the file with its name */
		rc = sv_tree_stat(fs->t, sv_tree_current(fs->t, NODE(ino)), &s);
	if (rc) {
		reply_err(req, rc);
		return;
	}
	struct stat st;
	to_stat(&s, &st);
	st.st_ino = ino;
	fuse_reply_attr(req, &st, attr_timeout(fs, &s));
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	struct sv_err err;
	int rc = 0;
	struct fh *h = fi && fi->fh ? FH(fi) : NULL;
	sv_id node = h ? h->node : sv_tree_current(fs->t, NODE(ino));
	if ((to_set & FUSE_SET_ATTR_SIZE) && h && h->fd >= 0) {
		rc = ftruncate(h->fd, attr->st_size) ? -errno : 0;
	} else if (to_set & FUSE_SET_ATTR_SIZE) {
		struct changes ch = {.fs = fs};
		fs_live_sink = &ch;
		rc = h && attr->st_size ? fh_check(fs, h) : 0;
		if (!rc && h)
			fh_change(fs, h, attr->st_size == 0);
		if (!rc)
			rc = sv_tree_truncate(fs->t, node, (uint64_t)attr->st_size, &err);
		/* truncate(2) on a path has no open file to close: commit now. */
		if (!rc && h)
			fh_wrote(h, req);
		if (!rc && !fi)
			rc = sv_tree_flush(fs->t, node, fs_on_changed, &ch, &err);
		fs_live_sink = NULL;
		fs_publish(&ch, false, ino);
	}
	/* A container's node keeps its times for the life of the mount (not
	 * in the container), so that rsync -a and tar converge, and takes
	 * modes and owners without keeping them, so that cp -p and editors
	 * work; a save folder's real file keeps all three. */
	if (!rc && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec now, at, mt;
		clock_gettime(CLOCK_REALTIME, &now);
		at = to_set & FUSE_SET_ATTR_ATIME_NOW ? now : attr->st_atim;
		mt = to_set & FUSE_SET_ATTR_MTIME_NOW ? now : attr->st_mtim;
		rc = sv_tree_set_times(fs->t, node, to_set & FUSE_SET_ATTR_ATIME ? &at : NULL,
				       to_set & FUSE_SET_ATTR_MTIME ? &mt : NULL);
	}
	if (!rc && (to_set & FUSE_SET_ATTR_MODE))
		rc = sv_tree_set_mode(fs->t, node, attr->st_mode);
	if (!rc && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		rc = sv_tree_set_owner(fs->t, node,
				       to_set & FUSE_SET_ATTR_UID ? attr->st_uid : (uint32_t)-1,
				       to_set & FUSE_SET_ATTR_GID ? attr->st_gid : (uint32_t)-1);
	if (rc) {
		reply_err(req, rc);
		return;
	}
	op_getattr(req, ino, fi);
}

struct dir_fill {
	fuse_req_t req;
	struct fs *fs;
	fuse_ino_t dir;
	char *buf;
	size_t size, used;
	bool plus;
};

/* The inode number a listing shows for an entry that is no node yet (one
 * of a directory listed from its format's index): apart from every node's
 * number, the same for the same place in the same directory.  Its own
 * lookup gives its node's number. */
static uint64_t unmade_ino(fuse_ino_t dir, uint64_t next)
{
	return 1ull << 62 | ((dir * 0x9e3779b97f4a7c15ull) ^ next) >> 2;
}

static int dir_add(void *arg, const char *name, const struct sv_stat *s, uint64_t next)
{
	struct dir_fill *d = arg;
	size_t left = d->size - d->used;
	size_t k;
	/* Positions: 1 is ".", 2 is "..", 2 + i follows child i. */
	off_t off = (off_t)(next + 2);
	if (d->plus) {
		struct fuse_entry_param e;
		fill_entry(d->fs, s, &e);
		if (s->unmade) {
			/* No node: the kernel takes the name and kind alone
			 * (node 0) and looks the entry up when it is used. */
			e.ino = 0;
			e.attr.st_ino = (ino_t)unmade_ino(d->dir, next);
		}
		k = fuse_add_direntry_plus(d->req, d->buf + d->used, left, name, &e, off);
	} else {
		struct stat st;
		to_stat(s, &st);
		if (s->unmade)
			st.st_ino = (ino_t)unmade_ino(d->dir, next);
		k = fuse_add_direntry(d->req, d->buf + d->used, left, name, &st, off);
	}
	if (k > left)
		return 1;
	d->used += k;
	/* The kernel keeps an entry given with its node as a lookup. */
	return d->plus && !s->unmade ? SV_DIR_HELD : 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct fs *fs = FS(req);
	struct dir_fill d = {req, fs, ino, malloc(size), size, 0, plus};
	if (!d.buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	sv_id up = SV_TREE_ROOT;
	int rc = sv_tree_parent(fs->t, NODE(ino), &up);
	for (; !rc && off < 2; off++) {
		/* "." and "..": inode numbers only; the kernel looks them up. */
		struct stat st;
		memset(&st, 0, sizeof st);
		st.st_ino = off == 0 ? ino : INO(up);
		st.st_mode = S_IFDIR;
		const char *nm = off == 0 ? "." : "..";
		size_t left = d.size - d.used, k;
		if (plus) {
			struct fuse_entry_param e;
			memset(&e, 0, sizeof e);
			e.attr = st;
			k = fuse_add_direntry_plus(req, d.buf + d.used, left, nm, &e, off + 1);
		} else {
			k = fuse_add_direntry(req, d.buf + d.used, left, nm, &st, off + 1);
		}
		if (k > left)
			break;
		d.used += k;
	}
	if (!rc && off >= 2)
		rc = (plus ? sv_tree_readdir_nodes : sv_tree_readdir)(fs->t, NODE(ino),
								      (uint64_t)(off - 2), dir_add, &d);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, ino);
	do_readdir(req, ino, size, off, false);
	fs_busy_leave(fs, ino);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, ino);
	do_readdir(req, ino, size, off, true);
	fs_busy_leave(fs, ino);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct sv_stat s;
	int rc = sv_tree_stat(FS(req)->t, NODE(ino), &s);
	if (!rc && !s.dir)
		rc = -ENOTDIR;
	if (rc) {
		reply_err(req, rc);
		return;
	}
	/* A container's listings change only by its commits (which drop
	 * them); a folder's at any time.  In a folder, an open directory of a
	 * container keeps the container open until its release. */
	fi->cache_readdir = !sv_tree_is_folder(FS(req)->t);
	fi->keep_cache = !sv_tree_is_folder(FS(req)->t);
	if (sv_tree_is_folder(FS(req)->t) && (rc = sv_tree_hold(FS(req)->t, NODE(ino)))) {
		reply_err(req, rc);
		return;
	}
	fuse_reply_open(req, fi);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (sv_tree_is_folder(FS(req)->t))
		sv_tree_release(FS(req)->t, NODE(ino));
	fuse_reply_err(req, 0);
}

/* An open of a save folder's real file: its descriptor, read and written
 * as the file itself. */
static void open_real(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	bool wr = (fi->flags & O_ACCMODE) != O_RDONLY;
	int fd = sv_tree_open_real(fs->t, NODE(ino), fi->flags);
	int rc = fd < 0 ? fd : fh_new(fs, fi, NODE(ino));
	if (rc) {
		if (fd >= 0 && wr)
			sv_tree_real_written(fs->t, NODE(ino));
		if (fd >= 0)
			sv_tree_close_real(fs->t, NODE(ino), fd);
		reply_err(req, rc);
		return;
	}
	FH(fi)->fd = fd;
	FH(fi)->real_writer = wr;
	/* Another program may change it: its pages are read again at each
	 * open (the kernel's default).  A writer's close (FLUSH) says it is
	 * done, before close() returns: the file is classified again (a map
	 * copied in is a container) at the next look. */
	fi->noflush = !wr;
	fuse_reply_open(req, fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	struct sv_stat s;
	/* A node replaced since the kernel looked its name up: the file that
	 * has the name now (its pages are not the old inode's: past the
	 * page cache). */
	sv_id node = NODE(ino);
	int rc = sv_tree_stat(fs->t, node, &s);
	if (rc == -ESTALE)
		rc = sv_tree_stat(fs->t, node = sv_tree_current(fs->t, node), &s);
	if (!rc && s.dir)
		rc = -EISDIR;
	if (!rc && s.real) {
		open_real(req, ino, fi);
		return;
	}
	bool wr = (fi->flags & O_ACCMODE) != O_RDONLY;
	/* A view opens for writing, to take back the bytes it shows (a
	 * restore): anything else is refused at close. */
	if (!rc && wr && !s.writable && !s.view)
		rc = sv_tree_read_only(fs->t, node) ? -EROFS : -EACCES;
	struct sv_err err;
	if (!rc && wr && (fi->flags & O_TRUNC))
		rc = sv_tree_truncate(fs->t, node, 0, &err);
	if (!rc)
		rc = fh_new(fs, fi, node);
	if (!rc && (rc = sv_tree_hold(fs->t, node)))
		fh_free(fs, FH(fi));
	if (!rc)
		FH(fi)->stream = s.stream;
	if (!rc && wr && (fi->flags & O_TRUNC))
		fh_change(fs, FH(fi), true);
	if (rc) {
		reply_err(req, rc);
		return;
	}
	if (s.volatile_ || s.bad || (s.direct && wr) || node != NODE(ino) ||
	    (s.stream && s.unsized)) {
		/* Past the page cache: the size may change, or a bad entry's
		 * stated size is 0 and the kernel would not ask for its EIO,
		 * or each write must arrive whole (the page cache may split
		 * one at a page's end, and half a line is not a line), or a
		 * stream's size is not known yet (read it to its end). */
		fi->direct_io = 1;
	} else {
		/* A folder's container replaced under the mount is read again
		 * under new ids: its pages stay its own. */
		fi->keep_cache = 1;
	}
	/* Only a writer's close can have something to commit. */
	fi->noflush = !wr;
	fuse_reply_open(req, fi);
}

/* A read of an entry past a limit (-o maxdecode) is an EIO, the reason in
 * the log: EFBIG is for writes that would grow a file past -o maxedit. */
static void reply_read_err(fuse_req_t req, int rc)
{
	reply_err(req, rc == -EFBIG ? -EIO : rc);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	struct fh *h = fi ? FH(fi) : NULL;
	struct sv_blob *b = NULL;
	struct sv_err err;
	int rc = 0;
	if (h && h->fd >= 0) {
		char *buf = malloc(size ? size : 1);
		ssize_t got = buf ? pread(h->fd, buf, size, off) : -1;
		if (got < 0)
			reply_err(req, buf ? -errno : -ENOMEM);
		else
			fuse_reply_buf(req, buf, (size_t)got);
		free(buf);
		return;
	}
	if (h && h->stream) {
		char *buf = malloc(size ? size : 1);
		size_t got = 0;
		rc = buf ? sv_tree_read(fs->t, h->node, (uint64_t)off, buf, size, &got, &err)
			 : -ENOMEM;
		if (rc)
			reply_read_err(req, rc);
		else
			fuse_reply_buf(req, buf, got);
		free(buf);
		return;
	}
	if (h) {
		pthread_mutex_lock(&h->lock);
		b = sv_blob_ref(h->big);
		pthread_mutex_unlock(&h->lock);
	}
	if (!b) {
		rc = sv_tree_content(fs->t, h ? h->node : NODE(ino), &b, &err);
		if (rc) {
			reply_read_err(req, rc);
			return;
		}
		if (h && b->len > fs->cache_cap) {
			/* The cache cannot hold it: this open does, until release. */
			pthread_mutex_lock(&h->lock);
			if (!h->big)
				h->big = sv_blob_ref(b);
			pthread_mutex_unlock(&h->lock);
		}
	}
	size_t n = 0;
	if ((uint64_t)off < b->len)
		n = b->len - (size_t)off < size ? b->len - (size_t)off : size;
	fuse_reply_buf(req, n ? (const char *)b->data + off : NULL, n);
	sv_blob_unref(b);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct sv_err err;
	/* O_APPEND writes go at the end as savefs knows it: the kernel's
	 * size may predate another program's append to a followed log. */
	uint64_t at = (fi->flags & O_APPEND) ? SV_AT_END : (uint64_t)off;
	struct changes ch = {.fs = FS(req)};
	struct fh *h = fi->fh ? FH(fi) : NULL;
	if (h && h->fd >= 0) {
		/* A real file opened with O_APPEND appends as itself. */
		ssize_t k = pwrite(h->fd, buf, size, off);
		if (k < 0)
			reply_err(req, -errno);
		else
			fuse_reply_write(req, (size_t)k);
		return;
	}
	int rc = h ? fh_check(FS(req), h) : 0;
	if (rc) {
		reply_err(req, rc);
		return;
	}
	if (h)
		fh_change(FS(req), h, false);
	fs_live_sink = &ch;
	rc = sv_tree_write(FS(req)->t, h ? h->node : NODE(ino), at, buf, size, &err);
	fs_live_sink = NULL;
	/* An append's new lines (a log's views) are shown once it returns;
	 * this file's own pages are locked by the write: dropped later. */
	fs_publish(&ch, false, ino);
	if (!rc && fi->fh)
		fh_wrote(FH(fi), req);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_write(req, size);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	struct changes ch = {.fs = fs};
	struct fh *h = fi && fi->fh ? FH(fi) : NULL;
	int rc = 0;
	if (h && h->fd >= 0) {
		if (h->real_writer)
			sv_tree_real_written(fs->t, h->node);
		h->real_writer = false;
		fuse_reply_err(req, 0);
		return;
	}
	/* A close by another process (a child closing its inherited copy at
	 * exec) must not commit a file its writer is still writing: that
	 * edit is committed by the writer's close, or at release. */
	if (h && h->wrote && h->writer == fuse_req_ctx(req)->pid) {
		rc = fh_commit(fs, h, &ch, NULL);
		/* Before close returns: the writer's next read must see the
		 * committed tree, or its old content if the edit was refused. */
		fs_publish(&ch, true, 0);
	}
	fuse_reply_err(req, rc == -EBADMSG ? EIO : -rc);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	struct changes ch = {.fs = fs};
	struct fh *h = fi && fi->fh ? FH(fi) : NULL;
	int rc = 0;
	if (h && h->fd >= 0)
		rc = (datasync ? fdatasync(h->fd) : fsync(h->fd)) ? -errno : 0;
	else if (h && (h->changed || h->failed)) {
		rc = fh_commit(fs, h, &ch, NULL);
		fs_publish(&ch, true, 0); /* as in op_flush */
	}
	fuse_reply_err(req, rc == -EBADMSG ? EIO : -rc);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	struct fh *h = FH(fi);
	/* An edit dropped before (its refusal was reported, or logged) is not
	 * committed, nor counted as unwritten: only a commit that fails here,
	 * where nobody can be told, is. */
	if (h && h->changed && (fi->flags & O_ACCMODE) != O_RDONLY && !fh_check(fs, h)) {
		struct changes ch = {.fs = fs};
		struct sv_err err;
		if (fh_commit(fs, h, &ch, &err))
			unwritten(fs, h->node, &err);
		fs_publish(&ch, false, 0);
	}
	if (h && h->fd >= 0)
		real_close(fs, h);
	else if (h)
		sv_tree_release(fs->t, h->node);
	fh_free(fs, h);
	fuse_reply_err(req, 0);
}

static void create_one(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		       struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	struct sv_err err;
	sv_id n = SV_TREE_NONE;
	int fd = -1;
	int rc = S_ISREG(mode) || !(mode & S_IFMT) ? 0 : -EPERM;
	struct sv_owner who = caller(req);
	if (!rc)
		rc = sv_tree_create(fs->t, NODE(parent), name, mode, fi->flags, &who, &n, &fd,
				    &err);
	/* A real file made for writing counts its writer until its close. */
	struct fh real = {.node = n, .fd = fd,
			  .real_writer = fd >= 0 && (fi->flags & O_ACCMODE) != O_RDONLY};
	struct sv_stat s;
	if (!rc)
		rc = sv_tree_stat(fs->t, n, &s);
	fi->fh = 0;
	if (!rc && (fh_new(fs, fi, n) || (fd < 0 && sv_tree_hold(fs->t, n)))) {
		fh_free(fs, FH(fi));
		rc = -ENOMEM;
	}
	if (rc) {
		if (fd >= 0)
			real_close(fs, &real);
		reply_err(req, rc);
		return;
	}
	FH(fi)->fd = fd;
	FH(fi)->real_writer = real.real_writer;
	struct fuse_entry_param e;
	fill_entry(fs, &s, &e);
	fi->keep_cache = fd < 0;
	sv_tree_held(fs->t, n);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		if (fd >= 0)
			real_close(fs, FH(fi));
		else
			sv_tree_release(fs->t, n);
		fh_free(fs, FH(fi));
	}
}

static void mknod_one(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs *fs = FS(req);
	struct sv_err err;
	sv_id n;
	int fd = -1;
	struct sv_owner who = caller(req);
	int rc = S_ISREG(mode) ? sv_tree_create(fs->t, NODE(parent), name, mode, O_RDONLY, &who,
						&n, &fd, &err)
			       : -EPERM;
	if (fd >= 0)
		sv_tree_close_real(fs->t, n, fd);
	if (!rc)
		sv_tree_held(fs->t, n);
	if (!rc && (rc = reply_entry_for(req, n)))
		sv_tree_forget(fs->t, n, 1);
	if (rc)
		reply_err(req, rc);
}

static void mkdir_one(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct sv_err err;
	sv_id n;
	struct sv_owner who = caller(req);
	int rc = sv_tree_mkdir(FS(req)->t, NODE(parent), name, mode, &who, &n, &err);
	if (!rc)
		sv_tree_held(FS(req)->t, n);
	if (!rc && (rc = reply_entry_for(req, n)))
		sv_tree_forget(FS(req)->t, n, 1);
	if (rc)
		reply_err(req, rc);
}

static void symlink_one(fuse_req_t req, const char *target, fuse_ino_t parent,
			const char *name)
{
	struct sv_err err;
	sv_id n;
	struct sv_owner who = caller(req);
	int rc = sv_tree_symlink(FS(req)->t, NODE(parent), name, target, &who, &n, &err);
	if (!rc)
		sv_tree_held(FS(req)->t, n);
	if (!rc && (rc = reply_entry_for(req, n)))
		sv_tree_forget(FS(req)->t, n, 1);
	if (rc)
		reply_err(req, rc);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	size_t len = 0;
	int rc = sv_tree_readlink(FS(req)->t, NODE(ino), buf, sizeof buf - 1, &len);
	if (rc) {
		reply_err(req, rc);
		return;
	}
	buf[len] = '\0';
	fuse_reply_readlink(req, buf);
}

static void unlink_one(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct sv_err err;
	struct changes ch = {.fs = FS(req)};
	int rc = sv_tree_unlink(FS(req)->t, NODE(parent), name, fs_on_changed, &ch, &err);
	fs_publish(&ch, false, 0);
	reply_err(req, rc);
}

static void rmdir_one(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct sv_err err;
	reply_err(req, sv_tree_rmdir(FS(req)->t, NODE(parent), name, &err));
}

static void rename_one(fuse_req_t req, fuse_ino_t parent, const char *name,
		       fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct sv_err err;
	struct changes ch = {.fs = FS(req)};
	int rc = sv_tree_rename(FS(req)->t, NODE(parent), name, NODE(newparent), newname, flags,
				fs_on_changed, &ch, &err);
	fs_publish(&ch, false, 0);
	reply_err(req, rc);
}

/* The requests that hold a directory's lock in the kernel, counted while
 * they are here (fs_busy_enter: see there). */
static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, parent);
	lookup_one(req, parent, name);
	fs_busy_leave(fs, parent);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, parent);
	create_one(req, parent, name, mode, fi);
	fs_busy_leave(fs, parent);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, parent);
	mknod_one(req, parent, name, mode);
	fs_busy_leave(fs, parent);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, parent);
	mkdir_one(req, parent, name, mode);
	fs_busy_leave(fs, parent);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, parent);
	symlink_one(req, target, parent, name);
	fs_busy_leave(fs, parent);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, parent);
	unlink_one(req, parent, name);
	fs_busy_leave(fs, parent);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, parent);
	rmdir_one(req, parent, name);
	fs_busy_leave(fs, parent);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct fs *fs = FS(req);
	fs_busy_enter(fs, parent);
	if (newparent != parent)
		fs_busy_enter(fs, newparent);
	rename_one(req, parent, name, newparent, newname, flags);
	if (newparent != parent)
		fs_busy_leave(fs, newparent);
	fs_busy_leave(fs, parent);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = FS(req);
	struct statvfs sv;
	memset(&sv, 0, sizeof sv);
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_files = sv_tree_count(fs->t);
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.opendir = op_opendir,
	.releasedir = op_releasedir,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.create = op_create,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.readlink = op_readlink,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.statfs = op_statfs,
};
