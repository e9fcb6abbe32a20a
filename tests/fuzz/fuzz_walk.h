/*
 * fuzz_walk.h - the tree walk the container fuzz targets share: list a
 * directory, then visit each child (stat it, check its name, go down into
 * directories, read files whole and again at odd offsets), and read the
 * meta files.  Every broken invariant ends in abort() with a line on
 * stderr that starts with FUZZ_NAME, which the target defines before it
 * includes this file.  Then the pieces of a write-back round trip (open
 * the input, write it to a file, rewrite a file with its own bytes, check
 * a file reads the same after the commit), static inline so that a target
 * without a round trip need not use them.  What a target checks beyond
 * this (streams, which files to rewrite and compare) stays in the target.
 */
#ifndef FUZZ_WALK_H
#define FUZZ_WALK_H

#include "container.h"
#include "format.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_NAME
#error "define FUZZ_NAME (the target's name, for messages) before including fuzz_walk.h"
#endif

/* Indexes leave the heap past 512 bytes in a fuzz run (the default is a
 * megabyte, which no small input reaches): the mapped arrays and their
 * growth are what the inputs exercise.  Once per process. */
static inline void fuzz_spill(void)
{
	static bool done;
	if (!done) {
		done = true;
		sv_tab_configure(access("/dev/shm", W_OK) ? "/var/tmp" : "/dev/shm", 512, 0);
	}
}

/* Says what broke (and the container's reason, msg, if any), then aborts. */
static void fuzz_fail(const char *what, const char *msg)
{
	fprintf(stderr, FUZZ_NAME ": %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
	abort();
}

/* Node n read len bytes where stat gave size: aborts if they differ. */
static void fuzz_check_size(uint32_t n, uint64_t size, size_t len)
{
	if (len != size) {
		fprintf(stderr, FUZZ_NAME ": node %u: stat said %llu bytes, read %zu\n", n,
			(unsigned long long)size, len);
		abort();
	}
}

/* The children of a directory, as listed.  v is the caller's to free. */
struct fuzz_kids {
	uint32_t *v;
	char **names; /* entries listed without a node: looked up after */
	size_t n, cap;
};

static int fuzz_collect(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct fuzz_kids *k = arg;
	(void)next;
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 32;
		uint32_t *v = realloc(k->v, k->cap * sizeof *v);
		char **names = v ? realloc(k->names, k->cap * sizeof *names) : NULL;
		if (!v || !names)
			abort();
		k->v = v;
		k->names = names;
	}
	if (!(k->names[k->n] = strdup(name)))
		abort();
	k->v[k->n++] = st->unmade ? SV_NONE : st->node;
	return 0;
}

/* Lists dir into k (start from {0}; free k->v after) as the kernel lists
 * (entries given with their nodes where the format makes them so).  A
 * directory that does not list leaves k as it was.  Every listed name
 * must look up: an entry listed without a node (an index directory's) to
 * a node, one listed with a node to that node. */
static void fuzz_list(struct sv_container *c, uint32_t dir, struct fuzz_kids *k)
{
	sv_readdir_nodes(c, dir, 0, fuzz_collect, k);
	for (size_t i = 0; i < k->n; i++) {
		uint32_t got;
		if (sv_lookup(c, dir, k->names[i], &got))
			fuzz_fail("a listed name does not look up", k->names[i]);
		if (k->v[i] != SV_NONE && got != k->v[i])
			fuzz_fail("a listed name looks up to another node", k->names[i]);
		k->v[i] = got;
		free(k->names[i]);
	}
	free(k->names);
	k->names = NULL;
}

/* What fuzz_read_file() checks besides the size stat gave and the reads
 * at odd offsets failing or not as the whole read did. */
enum {
	FUZZ_WHY = 1,  /* a failed read says why: a message and a code < 0 */
	FUZZ_SAME = 2, /* the bytes read at odd offsets are the whole read's */
};

/*
 * Reads file n whole (it must be size bytes, as stat said), then at a few
 * odd offsets (from the cache, or failing the same way), at its end and
 * past it.  checks: FUZZ_WHY, FUZZ_SAME or both.
 */
static void fuzz_read_file(struct sv_container *c, uint32_t n, uint64_t size, unsigned checks)
{
	struct sv_err err;
	struct sv_blob *b = NULL;
	int rc = sv_content(c, n, &b, &err);
	struct sv_stat st;
	/* A stream stat did not wait to size: read whole, it is sized now. */
	if (!rc && !sv_stat(c, n, &st) && !st.dir && st.stream && !st.unsized)
		size = st.size;
	if (!rc)
		fuzz_check_size(n, size, b->len);
	else if ((checks & FUZZ_WHY) && (!err.msg[0] || rc >= 0))
		fuzz_fail("a failed read does not say why", NULL);
	uint8_t buf[67];
	size_t got;
	static const uint64_t offs[] = {0, 1, 7, 4093};
	for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
		int r2 = sv_read(c, n, offs[i], buf, sizeof buf, &got, &err);
		if (!r2 != !rc)
			fuzz_fail("a second read does not do as the first", err.msg);
		if (r2)
			continue;
		if (got > sizeof buf)
			fuzz_fail("a read gives more than was asked", NULL);
		if ((checks & FUZZ_SAME) && got &&
		    (offs[i] >= b->len || memcmp(buf, b->data + offs[i], got)))
			fuzz_fail("a read at an odd offset differs from the whole", NULL);
	}
	sv_read(c, n, size, buf, sizeof buf, &got, &err);
	sv_read(c, n, UINT64_MAX, buf, sizeof buf, &got, &err);
	sv_blob_unref(b);
}

/* How a walk goes; the fields are the caller's and are not changed. */
struct fuzz_walk {
	struct sv_container *c;
	int max_depth;   /* directories nested deeper than this are not listed */
	unsigned checks; /* for fuzz_read_file() */
	/* Set: called for each file that is not volatile, in place of
	 * fuzz_read_file(). */
	void (*file)(const struct fuzz_walk *w, uint32_t n, const struct sv_stat *st);
	void *arg; /* for file */
};

/*
 * Walks dir: lists it first, then visits each child.  (Not from inside
 * sv_readdir's callback: expanding a lazy directory there would wait for
 * the container's lock, which the listing holds.)
 */
static void fuzz_walk_at(const struct fuzz_walk *w, uint32_t dir, int depth)
{
	if (depth > w->max_depth)
		return;
	struct sv_container *c = w->c;
	struct fuzz_kids k = {0};
	fuzz_list(c, dir, &k);
	for (size_t i = 0; i < k.n; i++) {
		uint32_t n = k.v[i], found;
		struct sv_stat st;
		if (sv_stat(c, n, &st))
			fuzz_fail("a listed node does not stat", NULL);
		const struct sv_node *node = sv_node(c, n);
		if (!node)
			fuzz_fail("a listed node is not in the table", NULL);
		const char *name = node->name;
		/* Every listed name is valid and looks up to the same node. */
		if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/'))
			fuzz_fail("a bad name", name);
		if (node->parent != dir || sv_lookup(c, dir, name, &found) || found != n)
			fuzz_fail("a name does not look up to its node", name);
		if (st.dir)
			fuzz_walk_at(w, n, depth + 1);
		else if (st.volatile_)
			continue;
		else if (w->file)
			w->file(w, n, &st);
		else
			fuzz_read_file(c, n, st.size, w->checks);
	}
	free(k.v);
}

/* Walks the whole tree of w->c. */
static void fuzz_walk(const struct fuzz_walk *w)
{
	fuzz_walk_at(w, SV_ROOT, 0);
}

/*
 * Reads /.savefs/info and /.savefs/log whole (either may fail), then looks
 * up each path of missing (NULL-terminated), which need not exist.
 */
static void fuzz_read_meta(struct sv_container *c, const char *const *missing)
{
	static const char *const meta[] = {".savefs/info", ".savefs/log"};
	uint32_t n;
	struct sv_err err;
	for (size_t i = 0; i < sizeof meta / sizeof *meta; i++) {
		struct sv_blob *b = NULL;
		if (!sv_resolve(c, meta[i], &n) && !sv_content(c, n, &b, &err))
			sv_blob_unref(b);
	}
	for (; *missing; missing++)
		sv_resolve(c, *missing, &n);
}

/* ---- write-back round trip ------------------------------------------- */

/* Opens data from memory with o: the container, or NULL if it is refused
 * (which must say why, else abort). */
static inline struct sv_container *fuzz_open_mem(const uint8_t *data, size_t size,
						 const struct sv_opts *o)
{
	struct sv_container *c = NULL;
	struct sv_err err;
	if (sv_container_open_mem(data, size, o, &c, &err)) {
		/* A refused container always says why. */
		if (!err.msg[0] || err.code >= 0)
			abort();
		return NULL;
	}
	return c;
}

/* Writes data to the file at path (created or truncated), or aborts. */
static inline void fuzz_write_input(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || sv_write_all(fd, data, size) || close(fd))
		abort();
}

/* Opens the file at path with o, or says "what: why" and aborts. */
static inline struct sv_container *fuzz_open_file(const char *path, const struct sv_opts *o,
						  const char *what)
{
	struct sv_container *c = NULL;
	struct sv_err err;
	if (sv_container_open(path, o, &c, &err)) {
		fprintf(stderr, FUZZ_NAME ": %s: %s\n", what, err.msg);
		abort();
	}
	return c;
}

/* Rewrites file n of c whole with b, its own bytes (an empty file:
 * truncate), and drops b: sv_write's or sv_truncate's result. */
static inline int fuzz_rewrite(struct sv_container *c, uint32_t n, struct sv_blob *b,
			       struct sv_err *err)
{
	int rc = b->len ? sv_write(c, n, 0, b->data, b->len, err) : sv_truncate(c, n, 0, err);
	sv_blob_unref(b);
	return rc;
}

/* If file n of old (at path p) reads, it reads the same at p in now (a
 * fresh open of the committed file), else abort. */
static inline void fuzz_same_after(struct sv_container *old, uint32_t n,
				   struct sv_container *now, const char *p)
{
	struct sv_blob *a = NULL, *b = NULL;
	if (sv_content(old, n, &a, NULL))
		return;
	uint32_t m;
	if (sv_resolve(now, p, &m) || sv_content(now, m, &b, NULL) ||
	    a->len != b->len || (a->len && memcmp(a->data, b->data, a->len))) {
		fprintf(stderr, FUZZ_NAME ": %s differs after a commit\n", p);
		abort();
	}
	sv_blob_unref(a);
	sv_blob_unref(b);
}

#endif
