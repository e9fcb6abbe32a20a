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
	bool folder;                  /* a save folder (else one container) */
	struct fuse_session *se;
	double timeout;               /* entry/attr timeout of stable nodes */
	uint64_t cache_cap;           /* the core cache's byte cap */
	struct fs_notify *notify;     /* owned; started in init */
	bool one_thread;              /* -s: a handler must not wait for a
				       * request to be answered */
	unsigned unwritten;           /* edits whose commit failed where no
				       * caller could be told (atomic) */
	pthread_mutex_t open_lock;    /* protects open_files */
	struct fh *open_files;        /* every open file, for those the kernel
				       * never releases (a stop by signal) */
};

extern const struct fuse_lowlevel_ops fs_ops;

/* Starts and stops the invalidation thread.  0 or -errno. */
int fs_notify_start(struct fs *fs);
void fs_notify_stop(struct fs *fs);

#endif
