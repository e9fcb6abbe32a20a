/*
 * cli.c - the command line without FUSE: savefs ls|cat|extract|info, and
 * --help, --version, --formats.  Every verb opens the container with the
 * same core the daemon uses and walks the same tree.
 */
#include "cli.h"

#include "config.h"
#include "savefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const verbs[] = {"ls",	  "cat",    "extract", "info",
					     "diff",   "mounts", "umount", "bench-inproc", NULL};

bool sv_cli_is_verb(const char *arg)
{
	for (size_t i = 0; verbs[i]; i++)
		if (!strcmp(arg, verbs[i]))
			return true;
	return !strcmp(arg, "--help") || !strcmp(arg, "-h") || !strcmp(arg, "--version") ||
	       !strcmp(arg, "-V") || !strcmp(arg, "--formats");
}

void sv_cli_usage(void)
{
	printf("usage: savefs [-f] [-d] [-s] [-o OPT[,OPT...]] LOCATION MOUNTPOINT\n"
	       "       savefs ls [-l] [-R] [-a] LOCATION [PATH]\n"
	       "       savefs cat LOCATION PATH\n"
	       "       savefs extract [--force] LOCATION DIR\n"
	       "       savefs info LOCATION\n"
	       "       savefs diff [--stat | --name-only] A B\n"
	       "       savefs mounts\n"
	       "       savefs umount MOUNTPOINT... | --all\n"
	       "       savefs -h | --help | -V | --version | --formats\n"
	       "\n"
	       "Mounts a game save container as a directory, or lists, prints and\n"
	       "extracts the same tree without FUSE.  Unmount with fusermount3 -u,\n"
	       "or stop the daemon with SIGINT or SIGTERM (what is pending is\n"
	       "committed).  The format is sniffed from the container's bytes.  A\n"
	       "LOCATION is a container (a file, or the directory a recorder is\n"
	       "writing) or a save folder: a directory no format claims, shown as it\n"
	       "is, each container in it a directory holding its tree (its raw bytes\n"
	       "at NAME/.savefs/container), everything else the real files; or an\n"
	       "object on an HTTP(S) server (http://HOST/PATH), read by range, read-only;\n"
	       "or an object in an S3 store (s3://BUCKET/KEY), or a prefix of one\n"
	       "(s3://BUCKET/PREFIX/: a segmented recording, or a save folder), written\n"
	       "back with If-Match.\n"
	       "\n"
	       "savefs diff shows what changed between two saves of one format (files,\n"
	       "folders, remote locations): the text views that differ as a unified\n"
	       "diff, as diff -ru of the two trees; --stat: a summary per directory;\n"
	       "--name-only: the paths.  Exit 0 same, 1 different, 2 trouble.\n"
	       "savefs mounts lists this user's savefs mounts, one a line: mount point,\n"
	       "location, format, the daemon's pid and rw or ro, separated by tabs.\n"
	       "savefs umount unmounts (fusermount3 -u) and waits for the daemon to\n"
	       "write what is pending: it says what could not be written and exits\n"
	       "with the daemon's status; --all: every savefs mount of this user.\n"
	       "\n");
	printf("mount options:\n"
	       "  -f                 stay in the foreground\n"
	       "  -d                 debug: foreground, print every FUSE request\n"
	       "  -s                 single-threaded\n"
	       "  -o ro              read-only: every write fails with EROFS\n"
	       "  -o cache=SIZE      cap on decoded data held in memory (default 64M)\n"
	       "  -o format=NAME     skip sniffing (see --formats)\n"
	       "  -o maxdecode=SIZE  largest entry decoded (default 1G)\n"
	       "  -o maxedit=SIZE    largest file an edit may grow to (default 1G)\n"
	       "  -o max_open=N      a save folder: containers held open at once\n"
	       "                     (default 16; idle ones close, least used first)\n"
	       "  -o readahead=N     files decoded ahead of a reader going through a\n"
	       "                     directory in order (default 8, 0 = off)\n"
	       "  -o events=NAME     recordings: the host's event table, parkour (the\n"
	       "                     default: ids 0-14) or builtin (0-9); also taken by\n"
	       "                     ls, cat, extract and info, before their arguments\n"
	       "  -o spill=SIZE      an index bigger than SIZE (default 1M) leaves the\n"
	       "                     heap for an unlinked file beside the persistent\n"
	       "                     index (or in /var/tmp), mapped, held in memory\n"
	       "                     only where used (up to 16 times SIZE); 0 keeps\n"
	       "                     every one on the heap\n"
	       "  -o s3_endpoint=URL the S3 store (default $AWS_ENDPOINT_URL, else AWS)\n"
	       "  -o s3_region=NAME  the region signed for (default $AWS_REGION, us-east-1)\n"
	       "  -o s3_profile=NAME credentials of this profile of ~/.aws/credentials\n"
	       "                     (default: $AWS_ACCESS_KEY_ID..., else $AWS_PROFILE)\n"
	       "  -o s3_path_style=1|0  the bucket in the path (default with an endpoint)\n"
	       "                     or in the host name\n"
	       "  -o s3_part_size=SIZE  uploads above SIZE go in parts (default 16M)\n"
	       "  -o noindex         keep no index between mounts (what a listing found\n"
	       "                     in a container, under $XDG_CACHE_HOME/savefs);\n"
	       "                     the commands take it too, before their arguments\n"
	       "  -o upgrade         commits write the newest container version (a v1/v2\n"
	       "                     Sketchy Maze drawing becomes a zip with RLE chunks)\n"
	       "  -o allow_other     other users may use the mount, as the container's\n"
	       "                     own modes allow: files show the container's modes\n"
	       "                     and owner, and default_permissions is added, so\n"
	       "                     the kernel enforces them\n"
	       "  -o default_permissions  the kernel checks modes (with allow_other: always)\n"
	       "  -o max_threads=N   at most N threads serve requests (default 10)\n"
	       "  -o max_idle_threads=N  threads kept waiting for requests\n"
	       "  -o clone_fd        one /dev/fuse descriptor per thread\n"
	       "  -o OPT             other FUSE mount options (nosuid, nodev, noexec,\n"
	       "                     fsname=..., auto_unmount, ...) are passed to FUSE;\n"
	       "                     an unknown one is a usage error\n"
	       "  SIZE takes K, M, G suffixes.\n"
	       "\n"
	       "exit codes:\n"
	       "  0  success (also a stop by SIGINT, SIGTERM or SIGHUP)\n"
	       "  1  other failure (out of memory, cannot write output)\n"
	       "  2  usage: bad command line or option\n"
	       "  3  cannot open the container (missing, permission, I/O, or mounted\n"
	       "     read-write elsewhere)\n"
	       "  4  unknown format: no format recognises the container\n"
	       "  5  malformed container (or a version not supported)\n"
	       "  6  mount failed (bad mount point, or something mounted there)\n"
	       "  7  a path in the container is missing or a file is unreadable\n"
	       "  8  an edit could not be written after its file was closed (at its\n"
	       "     last release or at unmount; the reason was printed)\n");
}

int sv_cli_open_exit(int err)
{
	switch (err) {
	case -EMEDIUMTYPE: return SV_EXIT_FORMAT;
	case -EBADMSG: case -ENOTSUP: case -EFBIG: return SV_EXIT_MALFORMED;
	case -EINVAL: return SV_EXIT_USAGE;
	case -ENOMEM: return SV_EXIT_FAIL;
	default: return SV_EXIT_OPEN;
	}
}

void sv_cli_open_error(const char *location, int rc, const struct sv_err *err)
{
	const char *msg = err->msg[0] ? err->msg : strerror(-rc);
	/* A URL's password or signature is never said. */
	char *path = sv_location_shown(location);
	const char *p = path ? path : "(the location)";
	size_t n = strlen(p);
	/* Every message names the file, once (a bad option is not the
	 * file's). */
	if ((!strncmp(msg, p, n) && msg[n] == ':') || rc == -EINVAL)
		fprintf(stderr, "savefs: %s\n", msg);
	else
		fprintf(stderr, "savefs: %s: %s\n", p, msg);
	free(path);
}

static int open_tree(const char *path, struct sv_opts *o, struct sv_tree **t)
{
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_tree_open(path, o, t, &err);
	if (rc) {
		sv_cli_open_error(path, rc, &err);
		return sv_cli_open_exit(rc);
	}
	return SV_EXIT_OK;
}

/* ---- ls ---------------------------------------------------------------- */

struct ls_ctx {
	struct sv_tree *t;
	bool lng, rec, all;
	const char *prefix;
	int status;
};

static void mode_str(const struct sv_stat *st, char *out)
{
	uint32_t t = st->mode & S_IFMT;
	out[0] = st->dir ? 'd' : t == S_IFLNK ? 'l' : t == S_IFIFO ? 'p' : t == S_IFSOCK ? 's'
		 : t == S_IFCHR ? 'c' : t == S_IFBLK ? 'b' : '-';
	for (int i = 0; i < 9; i++)
		out[1 + i] = st->mode & (1u << (8 - i)) ? "rwxrwxrwx"[i] : '-';
	out[10] = '\0';
}

static int ls_dir(struct ls_ctx *x, sv_id dir, const char *prefix);
static void path_error(struct sv_tree *t, const char *path, int rc);

struct ls_ent {
	char *name;
	struct sv_stat st;
	bool held;   /* looked up here (it was listed without a node) */
};

struct ls_list {
	struct ls_ent *v;
	size_t n, cap;
	struct sv_tree *t;
	sv_id dir;
};

/* Entry i in full: an entry a directory lists from its format's index
 * without a node (st.unmade) is looked up, and let go again by ls_done.
 * False if it is gone meanwhile. */
static bool ls_made(struct ls_list *l, size_t i)
{
	struct ls_ent *e = &l->v[i];
	if (!e->st.unmade)
		return true;
	sv_id id;
	if (sv_tree_lookup(l->t, l->dir, e->name, &id))
		return false;
	e->held = true;
	if (sv_tree_stat(l->t, id, &e->st)) {
		sv_tree_forget(l->t, id, 1);
		e->held = false;
		return false;
	}
	return true;
}

static void ls_done(struct ls_list *l, size_t i)
{
	if (l->v[i].held)
		sv_tree_forget(l->t, l->v[i].st.id, 1);
	l->v[i].held = false;
}

static int ls_collect(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct ls_list *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct ls_ent *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return 1;
		l->v = v;
		l->cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return 1;
	l->v[l->n].name = copy;
	l->v[l->n].st = *st;
	l->v[l->n].held = false;
	l->n++;
	return 0;
}

static void ls_free(struct ls_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		ls_done(l, i);
		free(l->v[i].name);
	}
	free(l->v);
}

static int ls_dir(struct ls_ctx *x, sv_id dir, const char *prefix)
{
	struct ls_list l = {.t = x->t, .dir = dir};
	int rc = sv_tree_readdir(x->t, dir, 0, ls_collect, &l);
	if (rc) {
		char shown[4096];
		snprintf(shown, sizeof shown, "%s",
			 *prefix ? prefix : x->prefix && *x->prefix ? x->prefix : ".");
		path_error(x->t, shown, rc);
		x->status = SV_EXIT_PATH;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct ls_ent *e = &l.v[i];
		if (!x->all && e->name[0] == '.')
			continue;
		size_t plen = strlen(prefix) + strlen(e->name) + 2;
		char *path = malloc(plen);
		if (!path)
			break;
		snprintf(path, plen, "%s%s", prefix, e->name);
		if ((x->lng || (x->rec && e->st.dir)) && !ls_made(&l, i)) {
			free(path);
			continue; /* gone since it was listed */
		}
		if (x->lng && e->st.unsized)
			sv_tree_stat(x->t, e->st.id, &e->st);
		if (x->lng) {
			char m[11];
			mode_str(&e->st, m);
			char target[4097];
			size_t tlen = 0;
			if (e->st.dir)
				printf("%s %12s %s/\n", m, "-", path);
			else if (S_ISLNK(e->st.mode) &&
				 !sv_tree_readlink(x->t, e->st.id, target, sizeof target - 1, &tlen))
				printf("%s %12llu %s -> %.*s\n", m, (unsigned long long)e->st.size, path,
				       (int)tlen, target);
			else
				printf("%s %12llu %s\n", m, (unsigned long long)e->st.size, path);
		} else {
			printf("%s%s\n", path, e->st.dir && x->rec ? "/" : "");
		}
		if (x->rec && e->st.dir) {
			snprintf(path, plen, "%s%s/", prefix, e->name);
			ls_dir(x, e->st.id, path);
		}
		free(path);
		ls_done(&l, i);
	}
	ls_free(&l);
	return rc;
}

/* ---- extract ----------------------------------------------------------- */

struct ex_ctx {
	struct sv_tree *t;
	bool progress;
	uint64_t files, total_files, bytes;
	int status;
	struct timespec last;
};

static void ex_progress(struct ex_ctx *x, bool final)
{
	if (!x->progress)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double dt = (double)(now.tv_sec - x->last.tv_sec) + (now.tv_nsec - x->last.tv_nsec) / 1e9;
	if (!final && dt < 0.1)
		return;
	x->last = now;
	fprintf(stderr, "\rextract: %llu/%llu files, %.1f MB%s",
		(unsigned long long)x->files, (unsigned long long)x->total_files,
		(double)x->bytes / 1e6, final ? "\n" : "");
	fflush(stderr);
}

/* Files counted, directories collected (a directory's million files cost
 * no memory here). */
struct count_ctx {
	uint64_t files;
	struct ls_list dirs;
};

static int count_one(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct count_ctx *x = arg;
	if (!st->dir) {
		x->files++;
		return 0;
	}
	return strcmp(name, ".savefs") ? ls_collect(&x->dirs, name, st, next) : 0;
}

static uint64_t count_files(struct sv_tree *t, sv_id dir)
{
	struct count_ctx x = {0, {.t = t, .dir = dir}};
	sv_tree_readdir(t, dir, 0, count_one, &x);
	for (size_t i = 0; i < x.dirs.n; i++) {
		if (ls_made(&x.dirs, i))
			x.files += count_files(t, x.dirs.v[i].st.id);
		ls_done(&x.dirs, i);
	}
	ls_free(&x.dirs);
	return x.files;
}

/* Copies stream node n (a log, a timeline, a big chunk's text: files that
 * may be larger than memory) to fd piece by piece.  0, or -errno with the
 * reason in err. */
static int copy_stream(struct sv_tree *t, sv_id n, int fd, uint64_t *bytes,
		       struct sv_err *err)
{
	enum { PIECE = 1 << 20 };
	char *buf = malloc(PIECE);
	if (!buf)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = 0;
	for (uint64_t off = 0;;) {
		size_t got = 0;
		rc = sv_tree_read(t, n, off, buf, PIECE, &got, err);
		if (rc || !got)
			break;
		if (sv_write_all(fd, buf, got)) {
			rc = sv_err_set(err, -errno, "writing: %s", strerror(errno));
			break;
		}
		off += got;
		*bytes += got;
	}
	free(buf);
	return rc;
}

/* What write_file writes. */
struct file_fill {
	const struct sv_blob *b;
	struct sv_tree *t;
	sv_id stream;
	uint64_t *bytes;
	struct sv_err *err;
};

static int fill_file(int fd, void *arg)
{
	struct file_fill *x = arg;
	if (!x->b)
		return copy_stream(x->t, x->stream, fd, x->bytes, x->err);
	*x->bytes += x->b->len;
	return sv_write_all(fd, x->b->data, x->b->len);
}

/* Writes b (or, if NULL, the stream) to path, replacing what is there
 * (a link someone left in the target directory, a hard link to a file
 * elsewhere), never writing through it. */
static int write_file(const char *path, const struct sv_blob *b, struct sv_tree *t,
		      sv_id stream, uint64_t *bytes, struct sv_err *err)
{
	struct file_fill x = {b, t, stream, bytes, err};
	return sv_write_replace(path, 0644, fill_file, &x);
}

/* An extracted file or directory gets the times the mount shows. */
static void set_time(const char *path, const struct sv_stat *st)
{
	struct timespec t[2] = {st->atime, st->mtime};
	utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW);
}

/* True if dir has no entry but . and .. (or cannot be read: then the
 * extract says why when it writes). */
static bool dir_empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool empty = true;
	while (d && empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return empty;
}

static void ex_dir(struct ex_ctx *x, sv_id dir, const char *out, const char *rel)
{
	struct ls_list l = {.t = x->t, .dir = dir};
	sv_tree_readdir(x->t, dir, 0, ls_collect, &l);
	for (size_t i = 0; i < l.n; ls_done(&l, i), i++) {
		struct ls_ent *e = &l.v[i];
		/* A container's own files (and, in a folder, its raw bytes)
		 * are not its tree. */
		if (!strcmp(e->name, ".savefs") && e->st.dir)
			continue;
		if (!ls_made(&l, i))
			continue; /* gone since it was listed */
		size_t plen = strlen(out) + strlen(e->name) + 2;
		size_t rlen = strlen(rel) + strlen(e->name) + 2;
		char *path = malloc(plen), *rpath = malloc(rlen);
		if (!path || !rpath) {
			free(path);
			free(rpath);
			x->status = SV_EXIT_FAIL;
			break;
		}
		snprintf(path, plen, "%s/%s", out, e->name);
		snprintf(rpath, rlen, "%s%s%s", rel, *rel ? "/" : "", e->name);
		if (e->st.dir) {
			struct stat lst;
			if (mkdir(path, 0755) && (errno != EEXIST || lstat(path, &lst) ||
						  !S_ISDIR(lst.st_mode))) {
				fprintf(stderr, "savefs: %s: %s\n", path,
					errno == EEXIST ? "exists and is not a directory"
							: strerror(errno));
				x->status = SV_EXIT_FAIL;
			} else {
				ex_dir(x, e->st.id, path, rpath);
				set_time(path, &e->st); /* after its files went in */
			}
		} else if (!S_ISREG(e->st.mode)) {
			/* A save folder's link or FIFO is made as it is; a socket
			 * or a device is not made (as tar and cp -r say too). */
			char target[4097];
			size_t tlen = 0;
			int rc = 0;
			if (S_ISLNK(e->st.mode)) {
				rc = sv_tree_readlink(x->t, e->st.id, target, sizeof target - 1, &tlen);
				target[tlen] = '\0';
				if (!rc)
					rc = symlink(target, path) ? -errno : 0;
			} else if (S_ISFIFO(e->st.mode)) {
				rc = mkfifo(path, e->st.mode & 0777) ? -errno : 0;
			} else {
				fprintf(stderr, "savefs: %s: a %s, not extracted\n", rpath,
					S_ISSOCK(e->st.mode) ? "socket" : "device");
			}
			if (rc) {
				fprintf(stderr, "savefs: %s: %s\n", path, strerror(-rc));
				x->status = SV_EXIT_FAIL;
			}
		} else {
			struct sv_blob *b = NULL;
			struct sv_err err;
			sv_err_clear(&err);
			/* A stream goes piece by piece, straight to its file. */
			int rc = e->st.stream ? 0 : sv_tree_content(x->t, e->st.id, &b, &err);
			if (!rc && e->st.stream) {
				rc = write_file(path, NULL, x->t, e->st.id, &x->bytes, &err);
				if (rc && err.msg[0]) {
					fprintf(stderr, "savefs: %s: %s\n", rpath, err.msg);
					if (x->status == SV_EXIT_OK)
						x->status = SV_EXIT_PATH;
				} else if (rc) {
					fprintf(stderr, "savefs: %s: %s\n", path, strerror(-rc));
					x->status = SV_EXIT_FAIL;
				}
				set_time(path, &e->st);
			} else if (rc) {
				if (x->progress)
					fputc('\n', stderr);
				fprintf(stderr, "savefs: %s: %s\n", rpath,
					err.msg[0] ? err.msg : strerror(-rc));
				if (x->status == SV_EXIT_OK)
					x->status = SV_EXIT_PATH;
			} else {
				rc = write_file(path, b, NULL, 0, &x->bytes, &err);
				if (rc) {
					fprintf(stderr, "savefs: %s: %s\n", path, strerror(-rc));
					x->status = SV_EXIT_FAIL;
				}
				set_time(path, &e->st);
				sv_blob_unref(b);
			}
			x->files++;
			ex_progress(x, false);
		}
		free(path);
		free(rpath);
	}
	ls_free(&l);
}

/* ---- bench-inproc C [DIR [SUFFIX]]: decode every file (whose name ends
 * with SUFFIX) under DIR in-process, for scripts/bench ------------------ */

struct bi_ctx {
	struct sv_tree *t;
	const char *suffix; /* only files whose names end so, or NULL */
	uint64_t files, bytes;
	int status;
};

static bool bi_wanted(const struct bi_ctx *x, const char *name)
{
	if (!x->suffix)
		return true;
	size_t n = strlen(name), k = strlen(x->suffix);
	return n >= k && !memcmp(name + n - k, x->suffix, k);
}

static void bi_dir(struct bi_ctx *x, sv_id dir)
{
	struct ls_list l = {.t = x->t, .dir = dir};
	sv_tree_readdir(x->t, dir, 0, ls_collect, &l);
	for (size_t i = 0; i < l.n; ls_done(&l, i), i++) {
		struct ls_ent *e = &l.v[i];
		if (!ls_made(&l, i))
			continue;
		if (e->st.dir) {
			if (strcmp(e->name, ".savefs"))
				bi_dir(x, e->st.id);
		} else if (bi_wanted(x, e->name)) {
			struct sv_blob *b;
			if (sv_tree_content(x->t, e->st.id, &b, NULL)) {
				x->status = SV_EXIT_PATH;
			} else {
				x->files++;
				x->bytes += b->len;
				sv_blob_unref(b);
			}
		}
	}
	ls_free(&l);
}

/* ---- main -------------------------------------------------------------- */

static int usage_error(const char *msg)
{
	fprintf(stderr, "savefs: %s (see savefs --help)\n", msg);
	return SV_EXIT_USAGE;
}

/* The reason for an EIO the core logged: the last line of /.savefs/log,
 * without its time stamp; "" if there is none. */
static void logged_reason(struct sv_tree *t, char *out, size_t size)
{
	sv_id n;
	struct sv_blob *b = NULL;
	struct sv_err err;
	out[0] = '\0';
	if (sv_tree_resolve(t, ".savefs/log", &n) || sv_tree_content(t, n, &b, &err))
		return;
	size_t end = b->len;
	while (end && b->data[end - 1] == '\n')
		end--;
	size_t start = end;
	while (start && b->data[start - 1] != '\n')
		start--;
	const uint8_t *sp = memchr(b->data + start, ' ', end - start);
	if (sp)
		start = (size_t)(sp - b->data) + 1;
	snprintf(out, size, "%.*s", (int)(end - start), (const char *)b->data + start);
	sv_blob_unref(b);
}

static void path_error(struct sv_tree *t, const char *path, int rc)
{
	char why[SV_ERR_MAX];
	if (rc == -EIO)
		logged_reason(t, why, sizeof why);
	else
		why[0] = '\0';
	if (why[0])
		fprintf(stderr, "savefs: %s: %s (%s)\n", path, strerror(-rc), why);
	else
		fprintf(stderr, "savefs: %s: %s\n", path, strerror(-rc));
}

static int resolve_or_fail(struct sv_tree *t, const char *path, sv_id *n)
{
	int rc = sv_tree_resolve(t, path, n);
	if (rc) {
		path_error(t, path, rc);
		return SV_EXIT_PATH;
	}
	return SV_EXIT_OK;
}

/* One -o argument's options, split at commas ("\\," is a comma in a
 * value): the formats' own (-o events=NAME), the S3 options and noindex.
 * 0, or the usage error's exit code (said). */
static int take_options(const char *list, char **format_opts, bool *noindex)
{
	char *copy = malloc(strlen(list) + 1);
	if (!copy)
		return SV_EXIT_FAIL;
	int status = SV_EXIT_OK;
	char *w = copy, *kv = copy;
	for (const char *r = list;; r++) {
		if (r[0] == '\\' && r[1] == ',') {
			*w++ = ',';
			r++;
			continue;
		}
		if (*r && *r != ',') {
			*w++ = *r;
			continue;
		}
		*w++ = '\0';
		size_t k = strcspn(kv, "=");
		if (!*kv) {
			/* an empty option (a,,b): nothing */
		} else if (!strcmp(kv, "noindex")) {
			*noindex = true;
		} else if (sv_source_option(kv, k)) {
			struct sv_err err;
			sv_err_clear(&err);
			if (sv_source_option_check(kv, &err))
				status = usage_error(err.msg);
			else if (sv_format_opts_add(format_opts, kv))
				status = SV_EXIT_FAIL;
		} else if (kv[k] != '=' || !sv_format_option(kv, k)) {
			status = usage_error("the commands take only the formats' options "
					     "(-o events=NAME), the S3 options (-o s3_endpoint=URL...) "
					     "and -o noindex");
		} else if (sv_format_opts_add(format_opts, kv)) {
			status = SV_EXIT_FAIL;
		}
		if (!*r || status)
			break;
		kv = w;
	}
	free(copy);
	return status;
}

int sv_cli_main(int argc, char **argv)
{
	const char *verb = argv[1];
	if (!strcmp(verb, "--help") || !strcmp(verb, "-h")) {
		sv_cli_usage();
		return SV_EXIT_OK;
	}
	if (!strcmp(verb, "--version") || !strcmp(verb, "-V")) {
		printf("savefs %s\n", SV_VERSION);
		return SV_EXIT_OK;
	}
	if (!strcmp(verb, "mounts") || !strcmp(verb, "umount"))
		return sv_cli_mounts(verb, argc - 2, argv + 2);
	if (!strcmp(verb, "--formats")) {
		for (size_t i = 0; sv_formats[i]; i++)
			printf("%-10s %s\n", sv_format_name(sv_formats[i]), sv_format_description(sv_formats[i]));
		return SV_EXIT_OK;
	}
	struct ls_ctx lx = {0};
	char *format_opts = NULL;
	bool noindex = false, force = false;
	/* Options anywhere among the arguments (as GNU tools take them), "--"
	 * ending them: -o OPT[,OPT...] (split at commas, "\," a comma in a
	 * value, as the mount splits them), ls's -l -R -a, extract's --force. */
	const char **args = calloc((size_t)argc + 1, sizeof *args);
	int nargs = 0, status = SV_EXIT_OK;
	bool opts_done = false;
	for (int i = 2; args && i < argc && !status; i++) {
		const char *a = argv[i];
		if (opts_done || a[0] != '-' || !a[1]) {
			args[nargs++] = a;
		} else if (!strcmp(a, "--")) {
			opts_done = true;
		} else if (!strcmp(a, "--force") && !strcmp(verb, "extract")) {
			force = true;
		} else if ((!strcmp(a, "--stat") || !strcmp(a, "--name-only")) &&
			   !strcmp(verb, "diff")) {
			args[nargs++] = a; /* (diff's own) */
		} else if (!strncmp(a, "-o", 2)) {
			const char *list = a[2] ? a + 2 : i + 1 < argc ? argv[++i] : NULL;
			if (!list)
				status = usage_error("-o takes an option");
			else
				status = take_options(list, &format_opts, &noindex);
		} else if (!strcmp(verb, "ls") && strspn(a + 1, "lRa") == strlen(a + 1)) {
			lx.lng |= strchr(a, 'l') != NULL;
			lx.rec |= strchr(a, 'R') != NULL;
			lx.all |= strchr(a, 'a') != NULL;
		} else {
			status = usage_error(!strcmp(verb, "diff") ? "diff takes --stat, --name-only and -o OPT"
				 : !strcmp(verb, "ls") ? "ls takes -l, -R, -a and -o OPT"
				 : !strcmp(verb, "extract") ? "extract takes --force and -o OPT"
							     : "the commands take -o OPT");
		}
	}
	if (!args)
		status = SV_EXIT_FAIL;
	if (status) {
		free(args);
		free(format_opts);
		return status;
	}
	if (!strcmp(verb, "diff")) {
		struct sv_opts o;
		sv_opts_init(&o);
		o.read_only = true;
		o.noindex = noindex;
		o.format_opts = format_opts;
		status = sv_cli_diff(nargs, (char **)args, &o);
		free(args);
		free(format_opts);
		return status;
	}
	int argi = 0;
	argv = (char **)args;
	argc = nargs;
	bool ok = (!strcmp(verb, "ls") && (nargs == 1 || nargs == 2)) ||
		  ((!strcmp(verb, "cat") || !strcmp(verb, "extract")) && nargs == 2) ||
		  (!strcmp(verb, "info") && nargs == 1) ||
		  (!strcmp(verb, "bench-inproc") && nargs >= 1 && nargs <= 3);
	if (!ok) {
		free(args);
		free(format_opts);
		return usage_error("wrong number of arguments");
	}
	struct sv_opts o;
	sv_opts_init(&o);
	o.read_only = true;
	o.noindex = noindex;
	o.format_opts = format_opts;
	if (!strcmp(verb, "bench-inproc")) {
		/* One thread decoding one file after another: the baseline. */
		o.cache_cap = 1 << 20;
		o.readahead = 0;
	}
	struct sv_tree *t = NULL;
	status = open_tree(argv[argi], &o, &t);
	free(format_opts); /* the container has its own copy */
	if (status) {
		free(args);
		return status;
	}
	const char *path = nargs >= 2 ? argv[argi + 1] : "";
	sv_id n;
	if (!strcmp(verb, "ls")) {
		status = resolve_or_fail(t, path, &n);
		if (!status) {
			lx.t = t;
			struct sv_stat st;
			sv_tree_stat(t, n, &st);
			if (!st.dir) {
				printf("%s\n", path);
			} else {
				lx.prefix = path;
				ls_dir(&lx, n, "");
				status = lx.status;
			}
		}
	} else if (!strcmp(verb, "cat")) {
		status = resolve_or_fail(t, path, &n);
		struct sv_blob *b = NULL;
		struct sv_err err;
		sv_err_clear(&err);
		struct sv_stat st = {0};
		int rc = status ? 0 : sv_tree_stat(t, n, &st);
		uint64_t bytes = 0;
		/* A stream piece by piece, never held whole. */
		if (!status && !rc && st.stream && !st.dir)
			rc = copy_stream(t, n, STDOUT_FILENO, &bytes, &err);
		else if (!status && !rc)
			rc = sv_tree_content(t, n, &b, &err);
		if (rc) {
			fprintf(stderr, "savefs: %s: %s\n", path, rc == -EISDIR ? "is a directory"
				: (err.msg[0] ? err.msg : strerror(-rc)));
			status = SV_EXIT_PATH;
		} else if (b) {
			if (sv_write_all(STDOUT_FILENO, b->data, b->len)) {
				fprintf(stderr, "savefs: writing output: %s\n", strerror(errno));
				status = SV_EXIT_FAIL;
			}
		}
		sv_blob_unref(b);
	} else if (!strcmp(verb, "extract")) {
		const char *out = argv[argi + 1];
		if (mkdir(out, 0755) && errno != EEXIST) {
			fprintf(stderr, "savefs: %s: %s\n", out, strerror(errno));
			status = SV_EXIT_FAIL;
		} else if (sv_tree_is_folder(t) && sv_path_within(out, argv[argi])) {
			/* It would read what it writes, without end. */
			fprintf(stderr, "savefs: %s: inside the folder %s: extract it elsewhere\n",
				out, argv[argi]);
			status = SV_EXIT_USAGE;
		} else if (!force && !dir_empty(out)) {
			fprintf(stderr, "savefs: %s: not empty: extract writes into an empty (or new) "
				"directory, or over what is there with --force\n", out);
			status = SV_EXIT_FAIL;
		} else {
			struct ex_ctx x = {.t = t, .progress = isatty(STDERR_FILENO)};
			if (x.progress)
				x.total_files = count_files(t, SV_TREE_ROOT);
			ex_dir(&x, SV_TREE_ROOT, out, "");
			ex_progress(&x, true);
			status = x.status;
		}
	} else if (!strcmp(verb, "info")) {
		struct sv_blob *b = NULL;
		struct sv_err err;
		if (!sv_tree_is_folder(t))
			count_files(t, SV_TREE_ROOT); /* every lazy directory listed: all counted */
		if (!sv_tree_info(t, &b, &err))
			fwrite(b->data, 1, b->len, stdout);
		sv_blob_unref(b);
	} else {
		status = resolve_or_fail(t, path, &n);
		if (!status) {
			struct timespec t0, t1;
			struct bi_ctx x = {.t = t, .suffix = nargs == 3 ? argv[argi + 2] : NULL};
			clock_gettime(CLOCK_MONOTONIC, &t0);
			bi_dir(&x, n);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
			printf("inproc: %llu files, %llu bytes, %.6f seconds\n",
			       (unsigned long long)x.files, (unsigned long long)x.bytes, s);
			status = x.status;
		}
	}
	sv_tree_free(t);
	free(args);
	return status;
}
