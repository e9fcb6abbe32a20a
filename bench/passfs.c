/*
 * passfs: the floor for a save folder, a minimal low-level FUSE file
 * system that forwards every request to a real directory and does nothing
 * else (read-only).  What savefs adds over it for a folder (sniffing,
 * claims, containers) is what the benchmark measures.
 *
 *   passfs SRC MOUNTPOINT [-f] [-o opt,...]
 *
 * An inode is a descriptor opened with O_PATH on the real file, found
 * again by (device, inode) while the kernel holds it; reads go to a
 * descriptor opened per open().  Entries and attributes are cached for a
 * second, as libfuse's passthrough examples do by default.
 */
#define FUSE_USE_VERSION 35
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <fuse_lowlevel.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT 1.0

struct inode {
	int fd; /* O_PATH */
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;
	struct inode *next;
};

#define NBUCKETS 65536

static struct inode root;
static struct inode *tab[NBUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct inode **bucket(dev_t dev, ino_t ino)
{
	return &tab[(uint64_t)(ino * 0x9e3779b97f4a7c15ull ^ dev) % NBUCKETS];
}

/* The kernel forgets k lookups of n (lock held). */
static void unref(struct inode *n, uint64_t k)
{
	if (n == &root || (n->nlookup -= k))
		return;
	struct inode **pp = bucket(n->dev, n->ino);
	while (*pp != n)
		pp = &(*pp)->next;
	*pp = n->next;
	close(n->fd);
	free(n);
}

static struct inode *I(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &root : (struct inode *)(uintptr_t)ino;
}

static int path_of(struct inode *n, char *buf, size_t size)
{
	return snprintf(buf, size, "/proc/self/fd/%d", n->fd) >= (int)size ? -1 : 0;
}

static void do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name,
		      struct fuse_entry_param *e, int *err)
{
	memset(e, 0, sizeof *e);
	*err = 0;
	int fd = openat(I(parent)->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) {
		*err = errno;
		if (fd >= 0)
			close(fd);
		return;
	}
	pthread_mutex_lock(&lock);
	struct inode **b = bucket(e->attr.st_dev, e->attr.st_ino), *n;
	for (n = *b; n; n = n->next)
		if (n->dev == e->attr.st_dev && n->ino == e->attr.st_ino)
			break;
	if (n) {
		close(fd);
	} else if ((n = calloc(1, sizeof *n))) {
		n->fd = fd;
		n->dev = e->attr.st_dev;
		n->ino = e->attr.st_ino;
		n->next = *b;
		*b = n;
	} else {
		close(fd);
		pthread_mutex_unlock(&lock);
		*err = ENOMEM;
		return;
	}
	n->nlookup++;
	pthread_mutex_unlock(&lock);
	e->ino = (uintptr_t)n;
	e->attr_timeout = TIMEOUT;
	e->entry_timeout = TIMEOUT;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int err;
	do_lookup(req, parent, name, &e, &err);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	pthread_mutex_lock(&lock);
	unref(I(ino), nlookup);
	pthread_mutex_unlock(&lock);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	if (fstatat(I(ino)->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		fuse_reply_err(req, errno);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

struct dir {
	DIR *d;
	off_t off;
	struct dirent *e;
};

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir *d = calloc(1, sizeof *d);
	int fd = d ? openat(I(ino)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd < 0 || !(d->d = fdopendir(fd))) {
		int e = d ? errno : ENOMEM;
		if (fd >= 0)
			close(fd);
		free(d);
		fuse_reply_err(req, e);
		return;
	}
	fi->fh = (uintptr_t)d;
	fuse_reply_open(req, fi);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, int plus)
{
	struct dir *d = (struct dir *)(uintptr_t)fi->fh;
	char *buf = malloc(size), *p = buf;
	size_t left = size;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (off != d->off) {
		seekdir(d->d, off);
		d->e = NULL;
		d->off = off;
	}
	for (;;) {
		if (!d->e && !(d->e = readdir(d->d)))
			break;
		const char *name = d->e->d_name;
		off_t next = telldir(d->d);
		size_t k;
		if (plus) {
			struct fuse_entry_param e;
			int err = 0;
			if (!strcmp(name, ".") || !strcmp(name, "..")) {
				memset(&e, 0, sizeof e);
				e.attr.st_ino = d->e->d_ino;
				e.attr.st_mode = d->e->d_type << 12;
			} else {
				do_lookup(req, ino, name, &e, &err);
				if (err)
					goto skip;
			}
			k = fuse_add_direntry_plus(req, p, left, name, &e, next);
			if (k > left) {
				if (e.ino) {
					pthread_mutex_lock(&lock);
					unref(I(e.ino), 1);
					pthread_mutex_unlock(&lock);
				}
				break;
			}
		} else {
			struct stat st = {.st_ino = d->e->d_ino, .st_mode = d->e->d_type << 12};
			k = fuse_add_direntry(req, p, left, name, &st, next);
			if (k > left)
				break;
		}
		p += k;
		left -= k;
	skip:
		d->e = NULL;
		d->off = next;
	}
	fuse_reply_buf(req, buf, size - left);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, 1);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir *d = (struct dir *)(uintptr_t)fi->fh;
	closedir(d->d);
	free(d);
	fuse_reply_err(req, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[64];
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	int fd = path_of(I(ino), path, sizeof path) ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = (uint64_t)fd;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	ssize_t k = buf ? pread((int)fi->fh, buf, size, off) : -1;
	if (k < 0)
		fuse_reply_err(req, buf ? errno : ENOMEM);
	else
		fuse_reply_buf(req, buf, (size_t)k);
	free(buf);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.getattr = op_getattr,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.open = op_open,
	.read = op_read,
	.release = op_release,
};

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: passfs SRC MOUNTPOINT [-f] [-o opt,...]\n");
		return 2;
	}
	root.fd = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root.fd < 0) {
		perror(argv[1]);
		return 1;
	}
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	int foreground = 0;
	fuse_opt_add_arg(&args, argv[0]);
	fuse_opt_add_arg(&args, "-oro,default_permissions,fsname=passfs");
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "-f"))
			foreground = 1;
		else
			fuse_opt_add_arg(&args, argv[i]);
	}
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
	if (!se || fuse_set_signal_handlers(se) || fuse_session_mount(se, argv[2]))
		return 1;
	fuse_daemonize(foreground);
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	int rc = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return rc ? 1 : 0;
}
