/*
 * notify.c - what the kernel is told of changes: the nodes a commit or a
 * followed container changed have their cached attributes, pages and
 * names dropped (fs_publish), before the request that made the change is
 * answered where the kernel allows it, else from a thread of their own
 * (notify_main) fed by a queue.  An entry is invalidated only while its
 * directory has no request in the daemon (the busy guard, below), so a
 * daemon killed meanwhile never leaves a thread stuck in the kernel.
 */
#include "fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>



/* Appends a note (name copied); false if out of memory. */
static bool note_push(struct note **v, size_t *n, size_t *cap, fuse_ino_t parent,
		      fuse_ino_t ino, const char *name)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct note *p = realloc(*v, c * sizeof *p);
		if (!p)
			return false;
		*v = p;
		*cap = c;
	}
	(*v)[*n] = (struct note){parent, ino, name ? strdup(name) : NULL};
	(*n)++;
	return true;
}

/*
 * Directories with a request in the daemon now (a lookup, a listing, a
 * change of an entry): the kernel holds their lock until it has the
 * reply.  Invalidating one of their entries takes that lock: issued now,
 * it would wait for the reply, and a daemon killed meanwhile (kill -9)
 * could never exit: its thread stuck in the kernel keeps the process and
 * the mount, whose readers then hang.  So an entry is invalidated only
 * while its directory has no request here (the wait is the daemon's own,
 * which a kill ends).
 */
#define BUSY_SLOTS 64

struct fs_notify {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	struct note *v;
	size_t n, cap;
	bool stop, running;
	struct {
		fuse_ino_t ino;     /* 0: free */
		unsigned n;         /* its requests in the daemon */
	} busy[BUSY_SLOTS];         /* protected by lock */
	pthread_cond_t idle;        /* a directory's last request is done */
};

/* A request about directory ino begins / is answered. */
void fs_busy_enter(struct fs *fs, fuse_ino_t ino)
{
	struct fs_notify *q = fs->notify;
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	int free_at = -1;
	for (int k = 0; k < BUSY_SLOTS; k++) {
		if (q->busy[k].ino == ino) {
			q->busy[k].n++;
			free_at = -2;
			break;
		}
		if (!q->busy[k].ino && free_at == -1)
			free_at = k;
	}
	if (free_at >= 0)
		q->busy[free_at].ino = ino, q->busy[free_at].n = 1;
	pthread_mutex_unlock(&q->lock);
}

void fs_busy_leave(struct fs *fs, fuse_ino_t ino)
{
	struct fs_notify *q = fs->notify;
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	for (int k = 0; k < BUSY_SLOTS; k++)
		if (q->busy[k].ino == ino) {
			if (!--q->busy[k].n) {
				q->busy[k].ino = 0;
				pthread_cond_broadcast(&q->idle);
			}
			break;
		}
	pthread_mutex_unlock(&q->lock);
}

/* Waits until directory parent has no request in the daemon (lock not
 * held). */
static void wait_idle(struct fs *fs, fuse_ino_t parent)
{
	struct fs_notify *q = fs->notify;
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	for (bool busy = true; busy;) {
		busy = false;
		for (int k = 0; k < BUSY_SLOTS && !busy; k++)
			busy = q->busy[k].ino == parent;
		if (busy)
			pthread_cond_wait(&q->idle, &q->lock);
	}
	pthread_mutex_unlock(&q->lock);
}

/* Invalidates entry name of directory parent once the directory has no
 * request in the daemon (lock not held). */
static void inval_entry(struct fs *fs, fuse_ino_t parent, const char *name)
{
	wait_idle(fs, parent);
	fuse_lowlevel_notify_inval_entry(fs->se, parent, name, strlen(name));
}


static void *notify_main(void *arg)
{
	struct fs *fs = arg;
	struct fs_notify *q = fs->notify;
	bool follow = sv_tree_follows(fs->t);
	/* How often a followed container (a log a game appends to, a
	 * recording being written) is looked at: its source says. */
	long poll_ns = follow ? (long)sv_tree_follow_ns(fs->t) : 0;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->n && !q->stop) {
			if (!follow) {
				pthread_cond_wait(&q->cond, &q->lock);
				continue;
			}
			if (pthread_cond_timedwait(&q->cond, &q->lock, &next) != ETIMEDOUT)
				continue;
			/* The poll reports through enqueue(), which takes q->lock. */
			pthread_mutex_unlock(&q->lock);
			sv_tree_poll(fs->t);
			clock_gettime(CLOCK_MONOTONIC, &next);
			next.tv_sec += poll_ns / 1000000000L;
			next.tv_nsec += poll_ns % 1000000000L;
			if (next.tv_nsec >= 1000000000L) {
				next.tv_sec++;
				next.tv_nsec -= 1000000000L;
			}
			pthread_mutex_lock(&q->lock);
		}
		if (q->stop)
			break;
		struct note *v = q->v;
		size_t n = q->n;
		q->v = NULL;
		q->n = q->cap = 0;
		pthread_mutex_unlock(&q->lock);
		for (size_t i = 0; i < n; i++) {
			if (v[i].name) {
				/* The entries of one directory queued together go
				 * together, once it is idle: a client looking up
				 * a long index directory entry after entry (ls -l
				 * of a game's states) leaves it idle only between
				 * two lookups, and each lookup past the node
				 * budget queues one or two; told one per idle
				 * moment, a thread that wakes late (a busy
				 * machine) would fall behind, their nodes held. */
				if (!i || !v[i - 1].name || v[i - 1].parent != v[i].parent)
					wait_idle(fs, v[i].parent);
				fuse_lowlevel_notify_inval_entry(fs->se, v[i].parent, v[i].name,
								 strlen(v[i].name));
				free(v[i].name);
			} else {
				fuse_lowlevel_notify_inval_inode(fs->se, v[i].ino, 0, 0);
			}
		}
		free(v);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static void enqueue(struct fs *fs, fuse_ino_t parent, fuse_ino_t ino, const char *name);

__thread struct changes *fs_live_sink;

/* Changes made outside commits (an append, a game's own lines): the
 * node's cached pages and attributes go, and a removed node's name. */

static void on_live(void *arg, sv_id node, sv_id parent, const char *name, bool gone)
{
	struct fs *fs = arg;
	if (fs_live_sink) {
		fs_on_changed(fs_live_sink, node, parent, name, gone);
		return;
	}
	enqueue(fs, 0, INO(node), NULL);
	if (gone)
		enqueue(fs, INO(parent), 0, name);
}

int fs_notify_start(struct fs *fs)
{
	struct fs_notify *q = calloc(1, sizeof *q);
	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&q->idle, NULL);
	fs->notify = q;
	sv_tree_set_notify(fs->t, on_live, fs);
	int rc = pthread_create(&q->thread, NULL, notify_main, fs);
	if (rc)
		return -rc;
	q->running = true;
	return 0;
}

void fs_notify_stop(struct fs *fs)
{
	struct fs_notify *q = fs->notify;
	if (!q)
		return;
	if (q->running) {
		pthread_mutex_lock(&q->lock);
		q->stop = true;
		pthread_cond_signal(&q->cond);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->thread, NULL);
	}
	sv_tree_set_notify(fs->t, NULL, NULL);
	for (size_t i = 0; i < q->n; i++)
		free(q->v[i].name);
	free(q->v);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	pthread_cond_destroy(&q->idle);
	free(q);
	fs->notify = NULL;
}

static void enqueue(struct fs *fs, fuse_ino_t parent, fuse_ino_t ino, const char *name)
{
	struct fs_notify *q = fs->notify;
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	if (note_push(&q->v, &q->n, &q->cap, parent, ino, name))
		pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}


void fs_on_changed(void *arg, sv_id node, sv_id parent, const char *name, bool gone)
{
	struct changes *ch = arg;
	note_push(&ch->v, &ch->n, &ch->cap, INO(parent), INO(node), gone ? name : NULL);
}

/*
 * Drops an inode's cached attributes, and its cached pages (a directory's:
 * its listing) now or, with `later`, from the other thread.  Dropping
 * attributes never waits; dropping pages may wait for pages that other
 * requests hold locked (reads in flight), which other workers answer:
 * with one thread, pages always go later.
 */
static void inval_inode(struct fs *fs, fuse_ino_t ino, bool later)
{
	if (!later && !fs->one_thread) {
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
		return;
	}
	fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	enqueue(fs, 0, ino, NULL);
}

/*
 * Tells the kernel what a commit changed, before the request that made the
 * commit is answered: once the close(), fsync(), rename(), unlink() or
 * truncate() returns, no cached attribute, page or listing may still show
 * the old tree (an edit of a .txt changes its .bin and .png, read next).
 * The names of removed nodes go at once too when `names` (FLUSH and FSYNC
 * hold no directory lock, and other workers answer the lookups that hold
 * one); otherwise the kernel may hold the directory's lock until this
 * reply (UNLINK, RENAME, a RELEASE after a failed create), so the other
 * thread drops them; until then such a name has no attributes left (a
 * stat of it asks, and gets ENOENT) and its directory no cached listing.
 * `self`, the inode of a SETATTR (whose writes the kernel holds back
 * until the reply, which carries its new attributes), has its pages
 * dropped by the other thread.
 */
void fs_publish(struct changes *ch, bool names, fuse_ino_t self)
{
	struct fs *fs = ch->fs;
	fuse_ino_t dir = 0;
	for (size_t i = 0; i < ch->n; i++) {
		struct note *v = &ch->v[i];
		inval_inode(fs, v->ino, v->ino == self);
		/* Its directory's cached listing may name a node the commit
		 * added or removed (a directory emptied and gone with it). */
		if (v->parent != dir)
			inval_inode(fs, dir = v->parent, false);
		if (v->name && names && !fs->one_thread)
			inval_entry(fs, v->parent, v->name);
		else if (v->name)
			enqueue(fs, v->parent, 0, v->name);
		free(v->name);
	}
	free(ch->v);
	ch->v = NULL;
	ch->n = ch->cap = 0;
}

