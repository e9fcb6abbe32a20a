/*
 * inproc: the in-process baseline of scripts/bench, with a name filter.
 *
 *   inproc CONTAINER [DIR [SUFFIX]]
 *
 * Opens CONTAINER read-only as `savefs bench-inproc` does (cache cap 1 MB,
 * no readahead: one thread decoding one file after another), then reads
 * with sv_content() every file under DIR (default: the root; /.savefs is
 * skipped) whose name ends with SUFFIX (default: every file), and prints
 *
 *   inproc: N files, B bytes, S seconds
 *
 * S covers the listing and the decoding (CLOCK_MONOTONIC), not the open:
 * the same span as `savefs bench-inproc`, whose output format this keeps.
 * Exit status 1 if anything failed.
 */
#include "savefs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ent {
	char *name;
	uint32_t node;
	bool dir;
};

struct list {
	struct ent *v;
	size_t n, cap;
};

struct ctx {
	struct sv_container *c;
	const char *suffix;
	size_t slen;
	unsigned long long files, bytes;
	int status;
};

static int collect(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	(void)next;
	struct list *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct ent *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return 1;
		l->v = v;
		l->cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return 1;
	l->v[l->n++] = (struct ent){copy, st->node, st->dir};
	return 0;
}

static bool wanted(const struct ctx *x, const char *name)
{
	size_t n = strlen(name);
	return n >= x->slen && !memcmp(name + n - x->slen, x->suffix, x->slen);
}

static void walk(struct ctx *x, uint32_t dir)
{
	struct list l = {0};
	if (sv_readdir(x->c, dir, 0, collect, &l)) {
		fprintf(stderr, "inproc: cannot list a directory\n");
		x->status = 1;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct ent *e = &l.v[i];
		if (e->dir) {
			if (strcmp(e->name, ".savefs"))
				walk(x, e->node);
		} else if (wanted(x, e->name)) {
			struct sv_blob *b;
			struct sv_err err;
			sv_err_clear(&err);
			if (sv_content(x->c, e->node, &b, &err)) {
				fprintf(stderr, "inproc: %s: %s\n", e->name,
					err.msg[0] ? err.msg : "cannot read");
				x->status = 1;
			} else {
				x->files++;
				x->bytes += b->len;
				sv_blob_unref(b);
			}
		}
		free(e->name);
	}
	free(l.v);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: inproc CONTAINER [DIR [SUFFIX]]\n");
		return 2;
	}
	struct sv_opts o;
	sv_opts_init(&o);
	o.read_only = true;
	o.cache_cap = 1 << 20;
	o.readahead = 0;
	struct sv_container *c = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_container_open(argv[1], &o, &c, &err);
	if (rc) {
		fprintf(stderr, "inproc: %s: %s\n", argv[1], err.msg[0] ? err.msg : "cannot open");
		return 1;
	}
	const char *dir = argc > 2 ? argv[2] : "";
	uint32_t n;
	if (sv_resolve(c, dir, &n)) {
		fprintf(stderr, "inproc: %s: no such directory\n", dir);
		sv_container_free(c);
		return 1;
	}
	struct ctx x = {.c = c, .suffix = argc > 3 ? argv[3] : ""};
	x.slen = strlen(x.suffix);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	walk(&x, n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("inproc: %llu files, %llu bytes, %.6f seconds\n", x.files, x.bytes, s);
	sv_container_free(c);
	return x.status;
}
