/*
 * floorfs: the performance floor for the benchmarks.
 *
 * A minimal read-only low-level FUSE filesystem that loads a whole
 * directory tree into memory at startup and serves it from there. It does
 * no decoding and no I/O after startup, so its timings are the best any
 * FUSE filesystem can reach on this machine; savefs is measured against it.
 *
 *   floorfs SRCDIR MOUNTPOINT [-f] [-o opt,...]
 *
 * Inode numbers are indexes into a flat node array (index 1 is the root,
 * FUSE_ROOT_ID). The children of a directory are contiguous in the array
 * and sorted by name, so lookup is a binary search and readdir offsets are
 * plain indexes. Only directories and regular files are served.
 */
#define FUSE_USE_VERSION 35
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <fuse_lowlevel.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT 3600.0

struct node {
	char *name;
	char *path;          /* source path; only used while loading */
	fuse_ino_t parent;
	fuse_ino_t first;    /* first child (directories) */
	size_t nchild;
	struct stat st;
	char *data;          /* file contents (regular files) */
};

static struct node *nodes;
static size_t nnodes, cap;

static void die(const char *what, const char *path)
{
	fprintf(stderr, "floorfs: %s: %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "floorfs: out of memory\n");
		exit(1);
	}
	return p;
}

static fuse_ino_t add_node(const char *name, char *path, fuse_ino_t parent,
			   const struct stat *st)
{
	if (nnodes == cap) {
		cap = cap ? cap * 2 : 1024;
		nodes = xrealloc(nodes, cap * sizeof *nodes);
	}
	struct node *n = &nodes[nnodes];
	memset(n, 0, sizeof *n);
	n->name = strdup(name);
	n->path = path;
	n->parent = parent;
	n->st = *st;
	n->st.st_ino = nnodes;
	if (!n->name) {
		fprintf(stderr, "floorfs: out of memory\n");
		exit(1);
	}
	return nnodes++;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_file(struct node *n)
{
	int fd = open(n->path, O_RDONLY);
	if (fd < 0)
		die("open", n->path);
	size_t size = n->st.st_size, done = 0;
	n->data = xrealloc(NULL, size ? size : 1);
	while (done < size) {
		ssize_t r = read(fd, n->data + done, size - done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("read", n->path);
		}
		if (r == 0)
			break;
		done += r;
	}
	n->st.st_size = done;
	close(fd);
}

static void load_dir(fuse_ino_t ino)
{
	char *dpath = nodes[ino].path;
	DIR *d = opendir(dpath);
	if (!d)
		die("opendir", dpath);
	char **names = NULL;
	size_t count = 0, ncap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (count == ncap) {
			ncap = ncap ? ncap * 2 : 64;
			names = xrealloc(names, ncap * sizeof *names);
		}
		names[count] = strdup(de->d_name);
		if (!names[count]) {
			fprintf(stderr, "floorfs: out of memory\n");
			exit(1);
		}
		count++;
	}
	closedir(d);
	qsort(names, count, sizeof *names, cmp_name);

	fuse_ino_t first = nnodes;
	for (size_t i = 0; i < count; i++) {
		char *path;
		struct stat st;
		if (asprintf(&path, "%s/%s", dpath, names[i]) < 0) {
			fprintf(stderr, "floorfs: out of memory\n");
			exit(1);
		}
		if (lstat(path, &st) < 0)
			die("stat", path);
		if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
			add_node(names[i], path, ino, &st);
		else
			free(path);
		free(names[i]);
	}
	free(names);
	nodes[ino].first = first;
	nodes[ino].nchild = nnodes - first;
}

/* Breadth first, so the children of each directory end up contiguous. */
static void load_tree(const char *src)
{
	struct stat st;
	if (stat(src, &st) < 0)
		die("stat", src);
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "floorfs: %s: not a directory\n", src);
		exit(1);
	}
	struct stat none;
	memset(&none, 0, sizeof none);
	add_node("", NULL, 0, &none); /* index 0: unused, inode 0 is invalid */
	char *path = strdup(src);
	if (!path)
		exit(1);
	add_node("", path, FUSE_ROOT_ID, &st);

	for (fuse_ino_t i = FUSE_ROOT_ID; i < nnodes; i++) {
		if (S_ISDIR(nodes[i].st.st_mode))
			load_dir(i);
		else
			load_file(&nodes[i]);
		free(nodes[i].path);
		nodes[i].path = NULL;
	}
}

static struct node *get(fuse_ino_t ino)
{
	return ino >= FUSE_ROOT_ID && ino < nnodes ? &nodes[ino] : NULL;
}

static void fill_entry(struct fuse_entry_param *e, fuse_ino_t ino)
{
	memset(e, 0, sizeof *e);
	e->ino = ino;
	e->generation = 1;
	e->attr = nodes[ino].st;
	e->attr_timeout = TIMEOUT;
	e->entry_timeout = TIMEOUT;
}

static void fl_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* Nothing ever changes: no need to revalidate cached pages. */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->max_readahead < (1u << 20))
		conn->max_readahead = 1u << 20;
}

static void fl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = get(parent);
	struct fuse_entry_param e;
	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(p->st.st_mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	size_t lo = 0, hi = p->nchild;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, nodes[p->first + mid].name);
		if (c == 0) {
			fill_entry(&e, p->first + mid);
			fuse_reply_entry(req, &e);
			return;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	/* Negative entry, cached by the kernel: the tree never changes. */
	memset(&e, 0, sizeof e);
	e.entry_timeout = TIMEOUT;
	fuse_reply_entry(req, &e);
}

static void fl_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	(void)fi;
	struct node *n = get(ino);
	if (!n)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &n->st, TIMEOUT);
}

static void fl_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct node *n = get(ino);
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(n->st.st_mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, int plus)
{
	struct node *n = get(ino);
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(n->st.st_mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Entry k is ".", ".." and then the children; its offset is k + 1. */
	size_t total = n->nchild + 2, pos = 0;
	for (size_t k = off < 0 ? 0 : (size_t)off; k < total; k++) {
		fuse_ino_t child;
		const char *name;
		if (k == 0) {
			child = ino;
			name = ".";
		} else if (k == 1) {
			child = ino == FUSE_ROOT_ID ? ino : n->parent;
			name = "..";
		} else {
			child = n->first + (k - 2);
			name = nodes[child].name;
		}
		size_t len;
		if (plus) {
			struct fuse_entry_param e;
			fill_entry(&e, child);
			len = fuse_add_direntry_plus(req, buf + pos, size - pos,
						     name, &e, k + 1);
		} else {
			len = fuse_add_direntry(req, buf + pos, size - pos,
						name, &nodes[child].st, k + 1);
		}
		if (len > size - pos)
			break;
		pos += len;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void fl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 0);
}

static void fl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 1);
}

static void fl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = get(ino);
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (S_ISDIR(n->st.st_mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void fl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	struct node *n = get(ino);
	if (!n || !n->data) {
		fuse_reply_err(req, EBADF);
		return;
	}
	size_t len = n->st.st_size;
	if (off < 0 || (size_t)off >= len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > len - off)
		size = len - off;
	fuse_reply_buf(req, n->data + off, size);
}

static void fl_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void fl_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static void fl_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

static const struct fuse_lowlevel_ops ops = {
	.init = fl_init,
	.lookup = fl_lookup,
	.forget = fl_forget,
	.forget_multi = fl_forget_multi,
	.getattr = fl_getattr,
	.opendir = fl_opendir,
	.readdir = fl_readdir,
	.readdirplus = fl_readdirplus,
	.open = fl_open,
	.read = fl_read,
	.release = fl_release,
};

static void usage(void)
{
	fprintf(stderr, "usage: floorfs SRCDIR MOUNTPOINT [-f] [-o opt,...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	/* Take SRCDIR (the first non-option) out; libfuse parses the rest. */
	char *src = NULL;
	char **rest = calloc(argc + 1, sizeof *rest);
	int nrest = 0;
	if (!rest)
		return 1;
	rest[nrest++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if (!src && argv[i][0] != '-' &&
		    !(i > 1 && !strcmp(argv[i - 1], "-o")))
			src = argv[i];
		else
			rest[nrest++] = argv[i];
	}
	if (!src)
		usage();

	struct fuse_args args = FUSE_ARGS_INIT(nrest, rest);
	struct fuse_cmdline_opts opts;
	if (fuse_parse_cmdline(&args, &opts) != 0)
		return 2;
	if (opts.show_help) {
		fuse_lowlevel_help();
		return 0;
	}
	if (opts.show_version) {
		fuse_lowlevel_version();
		return 0;
	}
	if (!opts.mountpoint)
		usage();

	load_tree(src);
	if (fuse_opt_add_arg(&args, "-oro") != 0)
		return 1;

	int ret = 1;
	struct fuse_session *se =
		fuse_session_new(&args, &ops, sizeof ops, NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_signals;
	if (fuse_daemonize(opts.foreground) != 0)
		goto out_unmount;

	struct fuse_loop_config config = {
		.clone_fd = opts.clone_fd,
		.max_idle_threads = opts.max_idle_threads != UINT_MAX
					    ? opts.max_idle_threads : 10,
	};
	ret = fuse_session_loop_mt(se, &config) != 0;

out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
out:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
