/*
 * floorfs: the performance floor for the benchmarks.
 *
 * A minimal read-only low-level FUSE filesystem that loads a whole
 * directory tree, or every member of a zip file, into memory at startup
 * and serves it from there. It does no decoding and no I/O after startup,
 * so its timings are the best any FUSE filesystem can reach on this
 * machine; savefs is measured against it.
 *
 *   floorfs [--load-time] [--no-open] SRC MOUNTPOINT [-f] [-o opt,...]
 *
 * SRC is a directory (its tree is served) or a zip file (its members are
 * served inflated, directories made from the member names, as fuse-zip
 * shows them). Options:
 *   --load-time  print "floorfs: loaded N files, B bytes in S seconds" on
 *                stdout once everything is in memory (before mounting), S
 *                counted from the start of main (CLOCK_MONOTONIC): the
 *                benchmark subtracts it to time the mount alone.
 *   --no-open    answer open with ENOSYS when the kernel supports that
 *                (no open and no release requests are sent from then on).
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
#include <zip.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT 3600.0

struct tnode;

struct node {
	char *name;
	char *path;          /* source path; only used while loading */
	struct tnode *t;     /* zip source entry; only used while loading */
	fuse_ino_t parent;
	fuse_ino_t first;    /* first child (directories) */
	size_t nchild;
	struct stat st;
	char *data;          /* file contents (regular files) */
};

static struct node *nodes;
static size_t nnodes, cap;
static size_t nfiles;
static unsigned long long nbytes;
static int no_open;

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
	nfiles++;
	nbytes += done;
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

/* ---- zip source: members inflated with libzip --------------------------- */

/* The tree of member names, built before the flat node array. */
struct tnode {
	char *name;
	int dir;
	struct tnode **kids;
	size_t nkids, ncap;
	zip_uint64_t index;  /* files: member index */
	zip_uint64_t size;
	time_t mtime;
};

static zip_t *zsrc;

static void *xmalloc0(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p) {
		fprintf(stderr, "floorfs: out of memory\n");
		exit(1);
	}
	return p;
}

/* The child `name` of dir: a directory found or made (dir_wanted), or a
 * new file. NULL if the directory's name is taken by a file (the member is
 * skipped). Files are not searched for (a directory can hold many):
 * duplicate names are dropped after sorting. */
static struct tnode *tchild(struct tnode *dir, const char *name, size_t len,
			    int dir_wanted)
{
	if (dir_wanted) {
		for (size_t i = dir->nkids; i-- > 0;) {
			struct tnode *k = dir->kids[i];
			if (strlen(k->name) == len && !memcmp(k->name, name, len))
				return k->dir ? k : NULL;
		}
	}
	if (dir->nkids == dir->ncap) {
		dir->ncap = dir->ncap ? dir->ncap * 2 : 16;
		dir->kids = xrealloc(dir->kids, dir->ncap * sizeof *dir->kids);
	}
	struct tnode *k = xmalloc0(sizeof *k);
	k->name = xmalloc0(len + 1);
	memcpy(k->name, name, len);
	k->dir = dir_wanted;
	dir->kids[dir->nkids++] = k;
	return k;
}

static int cmp_tnode(const void *a, const void *b)
{
	return strcmp((*(struct tnode *const *)a)->name,
		      (*(struct tnode *const *)b)->name);
}

static void tnode_stat(const struct tnode *t, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_mode = t->dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = t->dir ? 2 : 1;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_size = t->dir ? 0 : (off_t)t->size;
	st->st_blksize = 4096;
	st->st_blocks = (st->st_size + 511) / 512;
	st->st_mtime = st->st_ctime = st->st_atime = t->mtime;
}

static struct tnode *read_zip_index(const char *src)
{
	int zerr = 0;
	zsrc = zip_open(src, ZIP_RDONLY, &zerr);
	if (!zsrc) {
		zip_error_t e;
		zip_error_init_with_code(&e, zerr);
		fprintf(stderr, "floorfs: %s: %s\n", src, zip_error_strerror(&e));
		exit(1);
	}
	struct tnode *root = xmalloc0(sizeof *root);
	root->dir = 1;
	root->name = xmalloc0(1);
	root->mtime = time(NULL);
	zip_int64_t n = zip_get_num_entries(zsrc, 0);
	for (zip_int64_t i = 0; i < n; i++) {
		zip_stat_t zs;
		if (zip_stat_index(zsrc, (zip_uint64_t)i, 0, &zs) != 0 ||
		    !(zs.valid & ZIP_STAT_NAME)) {
			fprintf(stderr, "floorfs: %s: member %lld: %s\n", src,
				(long long)i, zip_strerror(zsrc));
			exit(1);
		}
		const char *p = zs.name;
		struct tnode *dir = root;
		while (dir) {
			while (*p == '/')
				p++;
			if (!*p)
				break; /* "a/b/": a directory, made already */
			const char *slash = strchr(p, '/');
			size_t len = slash ? (size_t)(slash - p) : strlen(p);
			if ((len == 1 && p[0] == '.') ||
			    (len == 2 && p[0] == '.' && p[1] == '.')) {
				dir = NULL; /* not served */
				break;
			}
			struct tnode *k = tchild(dir, p, len, slash != NULL);
			if (!k || !slash) {
				if (k && !slash) {
					k->index = (zip_uint64_t)i;
					k->size = zs.valid & ZIP_STAT_SIZE ? zs.size : 0;
					k->mtime = zs.valid & ZIP_STAT_MTIME ? zs.mtime
									     : root->mtime;
				}
				break;
			}
			if (!k->mtime)
				k->mtime = root->mtime;
			dir = k;
			p = slash + 1;
		}
	}
	return root;
}

static void load_member(struct node *n)
{
	size_t size = n->st.st_size, done = 0;
	n->data = xrealloc(NULL, size ? size : 1);
	zip_file_t *f = zip_fopen_index(zsrc, n->t->index, 0);
	if (!f) {
		fprintf(stderr, "floorfs: %s: %s\n", n->name, zip_strerror(zsrc));
		exit(1);
	}
	while (done < size) {
		zip_int64_t r = zip_fread(f, n->data + done, size - done);
		if (r < 0) {
			fprintf(stderr, "floorfs: %s: %s\n", n->name,
				zip_file_strerror(f));
			exit(1);
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	zip_fclose(f);
	n->st.st_size = done;
	nfiles++;
	nbytes += done;
}

/* Breadth first, as load_tree. */
static void load_zip(const char *src)
{
	struct tnode *root = read_zip_index(src);
	struct stat none, st;
	memset(&none, 0, sizeof none);
	add_node("", NULL, 0, &none);
	tnode_stat(root, &st);
	fuse_ino_t r = add_node("", NULL, FUSE_ROOT_ID, &st);
	nodes[r].t = root; /* not in one expression: add_node moves nodes */
	for (fuse_ino_t i = FUSE_ROOT_ID; i < nnodes; i++) {
		struct tnode *t = nodes[i].t;
		if (t->dir) {
			qsort(t->kids, t->nkids, sizeof *t->kids, cmp_tnode);
			size_t w = 0;
			for (size_t k = 0; k < t->nkids; k++)
				if (!w || strcmp(t->kids[k]->name, t->kids[w - 1]->name))
					t->kids[w++] = t->kids[k];
			t->nkids = w; /* a name stored twice: one of them */
			fuse_ino_t first = nnodes;
			for (size_t k = 0; k < t->nkids; k++) {
				tnode_stat(t->kids[k], &st);
				fuse_ino_t c = add_node(t->kids[k]->name, NULL, i, &st);
				nodes[c].t = t->kids[k];
			}
			nodes[i].first = first;
			nodes[i].nchild = nnodes - first;
		} else {
			load_member(&nodes[i]);
		}
	}
	/* The temporary tree is left to the exit: freeing it costs time and
	 * saves nothing that matters here. */
	for (fuse_ino_t i = FUSE_ROOT_ID; i < nnodes; i++)
		nodes[i].t = NULL;
	zip_discard(zsrc);
	zsrc = NULL;
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
	/* With --no-open, open is answered ENOSYS: the kernel then sends no
	 * open and no release for files. */
	if (!(conn->capable & FUSE_CAP_NO_OPEN_SUPPORT))
		no_open = 0;
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
	if (no_open) {
		fuse_reply_err(req, ENOSYS);
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
	fprintf(stderr, "usage: floorfs [--load-time] [--no-open] SRC MOUNTPOINT "
		"[-f] [-o opt,...]\n");
	exit(2);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double t0 = now();
	/* Take our options and SRC (the first non-option) out; libfuse
	 * parses the rest. */
	char *src = NULL;
	int load_time = 0;
	char **rest = calloc(argc + 1, sizeof *rest);
	int nrest = 0;
	if (!rest)
		return 1;
	rest[nrest++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--load-time"))
			load_time = 1;
		else if (!strcmp(argv[i], "--no-open"))
			no_open = 1;
		else if (!src && argv[i][0] != '-' &&
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

	struct stat sst;
	if (stat(src, &sst) < 0)
		die("stat", src);
	if (S_ISREG(sst.st_mode))
		load_zip(src);
	else
		load_tree(src);
	if (load_time) {
		printf("floorfs: loaded %zu files, %llu bytes in %.6f seconds\n",
		       nfiles, nbytes, now() - t0);
		fflush(stdout);
	}
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
