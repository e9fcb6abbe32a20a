/*
 * fs.h - the FUSE side: the daemon's state and the low-level operations.
 * fs/ knows FUSE and nothing of any format; it talks to core/ only through
 * savefs.h.  Inode numbers are node numbers + 1 (FUSE's root is 1).
 */
#ifndef SV_FS_H
#define SV_FS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "savefs.h"

struct fs_notify; /* queue of kernel cache invalidations (ops.c) */
struct fh;        /* an open file (ops.c) */

struct fs {
	struct sv_tree *t;            /* owned by main.c: what is mounted */
	struct fuse_session *se;
	double timeout;               /* entry/attr timeout of stable nodes */
	uint64_t cache_cap;           /* the core cache's byte cap */
	struct fs_notify *notify;     /* owned; started in init */
	bool one_thread;              /* -s: a handler must not wait for a
				       * request to be answered */
	unsigned unwritten;           /* edits whose commit failed where no
				       * caller could be told (atomic) */
	pthread_mutex_t open_lock;    /* protects open_files, report */
	char report[8192];            /* what could not be written, a line each */
	struct fh *open_files;        /* every open file, for those the kernel
				       * never releases (a stop by signal) */
};

extern const struct fuse_lowlevel_ops fs_ops;

/* A tree id's inode, and back. */
#define INO(n) ((fuse_ino_t)(n) + 1)
#define NODE(ino) ((sv_id)((ino) - 1))

/* ---- what the kernel is told of changes (notify.c) ---- */

/* A change to pass on: an inode's data, or an entry's name. */
struct note {
	fuse_ino_t parent, ino;
	char *name; /* NULL: invalidate the inode's data; else the entry */
};
/* Nodes a commit changed, collected while the core holds its lock. */
struct changes {
	struct fs *fs;
	struct note *v;
	size_t n, cap;
};
/* Starts and stops the invalidation thread.  0 or -errno. */
int fs_notify_start(struct fs *fs);
void fs_notify_stop(struct fs *fs);
/* The core's callback collecting a commit's changes into arg (a struct
 * changes). */
void fs_on_changed(void *arg, sv_id node, sv_id parent, const char *name, bool gone);
/* The changes of the request this thread is serving (an append to a log,
 * a rewind), published before its reply; NULL on the polling thread. */
extern __thread struct changes *fs_live_sink;
/* Tells the kernel what ch holds (see notify.c), emptying it. */
void fs_publish(struct changes *ch, bool names, fuse_ino_t self);
/* A request about directory ino begins / is answered (the busy guard). */
void fs_busy_enter(struct fs *fs, fuse_ino_t ino);
void fs_busy_leave(struct fs *fs, fuse_ino_t ino);

#endif
