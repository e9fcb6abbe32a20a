/*
 * tree.h - the container helpers the unit tests of the formats share:
 * open a container (from memory or from a file, checked), write a buffer
 * to a file, find, list and read a node by path, check a file's bytes, parse a
 * file as JSON, look in the log, and check that a directory holds nothing
 * but the container.
 *
 *   struct sv_container *c = open_mem(&buf);
 *   same(c, "data/0.bin", want, sizeof want);
 *   T_OK(log_has(c, "rewritten"));
 *
 * A failed check counts through t.h (include it first) and says what it
 * was on stderr.  The test defines die(what), which reports errno and
 * exits: write_file() and only_left() call it when the file system fails.
 */
#ifndef TREE_H
#define TREE_H

#include "container.h"
#include "savefs.h"
#include "t.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what);

static inline void write_file(const char *path, const struct sv_buf *b)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || sv_write_all(fd, b->p, b->len) || close(fd))
		die(path);
}

static inline struct sv_container *open_mem_opts(const struct sv_buf *b,
						 const struct sv_opts *o)
{
	struct sv_container *c = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_container_open_mem(b->p, b->len, o, &c, &err);
	if (rc)
		fprintf(stderr, "  open_mem: %s\n", err.msg);
	T_INT(0, rc);
	if (!c)
		exit(1);
	return c;
}

static inline struct sv_container *open_mem(const struct sv_buf *b)
{
	struct sv_opts o;
	sv_opts_init(&o);
	return open_mem_opts(b, &o);
}

static inline struct sv_container *open_file_opts(const char *path, const struct sv_opts *o)
{
	struct sv_container *c = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_container_open(path, o, &c, &err);
	if (rc)
		fprintf(stderr, "  open %s: %s\n", path, err.msg);
	T_INT(0, rc);
	if (!c)
		exit(1);
	return c;
}

static inline struct sv_container *open_path(const char *path)
{
	struct sv_opts o;
	sv_opts_init(&o);
	return open_file_opts(path, &o);
}

static inline uint32_t node_of(struct sv_container *c, const char *path)
{
	uint32_t n = SV_NONE;
	int rc = sv_resolve(c, path, &n);
	if (rc)
		fprintf(stderr, "  (resolving %s: %s)\n", path, strerror(-rc));
	T_INT(0, rc);
	return n;
}

/* Lists dir through fn(arg); a failed check if dir is not there or does
 * not list. */
static inline void list_dir(struct sv_container *c, const char *dir, sv_dir_fn fn, void *arg)
{
	uint32_t n;
	if (sv_resolve(c, dir, &n)) {
		fprintf(stderr, "  (no directory %s)\n", dir);
		T_OK(0);
		return;
	}
	T_INT(0, sv_readdir(c, n, 0, fn, arg));
}

/* The whole content of path; NULL (and a failed check) if unreadable. */
static inline struct sv_blob *content(struct sv_container *c, const char *path)
{
	uint32_t n;
	if (sv_resolve(c, path, &n)) {
		fprintf(stderr, "  (no %s)\n", path);
		T_OK(0);
		return NULL;
	}
	struct sv_blob *b = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_content(c, n, &b, &err);
	if (rc)
		fprintf(stderr, "  (reading %s: %s)\n", path, err.msg);
	T_INT(0, rc);
	return b;
}

/* The content of path as a new NUL-terminated string (the caller frees
 * it; "" and a failed check if unreadable), *len its size if len. */
static inline char *text_of(struct sv_container *c, const char *path, size_t *len)
{
	struct sv_blob *b = content(c, path);
	size_t n = b ? b->len : 0;
	char *s = malloc(n + 1);
	if (!s)
		die("malloc");
	if (n)
		memcpy(s, b->data, n);
	s[n] = '\0';
	if (len)
		*len = n;
	sv_blob_unref(b);
	return s;
}

/* Replaces the content of path with p[0..n) (a pending edit): 0 or the
 * error of the truncate or the write. */
static inline int put_text(struct sv_container *c, const char *path, const void *p, size_t n,
			   struct sv_err *err)
{
	uint32_t i = node_of(c, path);
	int rc = sv_truncate(c, i, 0, err);
	return rc ? rc : sv_write(c, i, 0, p, n, err);
}

/* The names in dir, in listing order, separated by spaces (directories
 * with a '/'), in a static buffer. */
static inline int listing_add(void *arg, const char *name, const struct sv_stat *st,
			      uint64_t next)
{
	char *s = arg;
	size_t k = strlen(s);
	snprintf(s + k, 2048 - k, "%s%s%s", k ? " " : "", name, st->dir ? "/" : "");
	return 0;
}

static inline const char *listing(struct sv_container *c, const char *dir)
{
	static char s[2048];
	s[0] = '\0';
	list_dir(c, dir, listing_add, s);
	return s;
}

/* Checks that path holds exactly p[0..len). */
static inline void same(struct sv_container *c, const char *path, const void *p, size_t len)
{
	struct sv_blob *b = content(c, path);
	if (!b)
		return;
	if (b->len != len || (len && memcmp(b->data, p, len))) {
		fprintf(stderr, "  (content of %s", path);
		if (b->len < 2000 && len < 2000)
			fprintf(stderr, ":\n---- got\n%.*s\n---- expected\n%.*s\n----",
				(int)b->len, (const char *)b->data, (int)len, (const char *)p);
		fprintf(stderr, ")\n");
	}
	T_UINT(len, b->len);
	if (b->len == len)
		T_MEM(p, b->data, len);
	sv_blob_unref(b);
}

/* b parsed as JSON (an empty object, and a failed check, if it is not);
 * drops b.  what names it in the message. */
static inline json_t *json_of_blob(struct sv_blob *b, const char *what)
{
	if (!b)
		return json_object();
	json_error_t je;
	json_t *j = json_loadb((const char *)b->data, b->len, 0, &je);
	if (!j)
		fprintf(stderr, "  (%s is not JSON: %s)\n", what, je.text);
	T_OK(j != NULL);
	sv_blob_unref(b);
	return j ? j : json_object();
}

static inline json_t *json_of(struct sv_container *c, const char *path)
{
	return json_of_blob(content(c, path), path);
}

/* True if /.savefs/log contains needle (else it says what the log has). */
static inline bool log_has(struct sv_container *c, const char *needle)
{
	struct sv_blob *b = content(c, ".savefs/log");
	if (!b)
		return false;
	char *s = strndup((const char *)b->data, b->len);
	bool ok = s && strstr(s, needle);
	if (!ok)
		fprintf(stderr, "  (log lacks \"%s\"; it has:\n%s)\n", needle, s ? s : "");
	free(s);
	sv_blob_unref(b);
	return ok;
}

/* Nothing but keep (the container) is left in dir. */
static inline void only_left(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	if (!d)
		die(dir);
	struct dirent *e;
	int others = 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, keep)) {
			fprintf(stderr, "  (left behind: %s)\n", e->d_name);
			others++;
		}
	closedir(d);
	T_INT(0, others);
}

#endif
