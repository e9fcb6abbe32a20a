/*
 * diff.c - savefs diff A B: what changed between two saves, as the trees
 * savefs shows them: the text views that differ as a unified diff (the
 * records, tiles, chunks, items, entities and lines they hold), "Binary
 * files ... differ" for the others, "Only in" for what one side lacks,
 * as diff -ru would say it of the two trees extracted; --stat a summary
 * per directory, --name-only the paths.  Exit 0 same, 1 different, 2
 * trouble, as diff(1).
 *
 * Cheap on big saves: a file whose format can give the digest of the
 * stored bytes it is made from alone (a record as stored: a world's
 * sector, a map's item) is compared by that digest first, and skipped
 * unread when the two are equal; the views are read only where they may
 * differ.  The .savefs/ directories (the mount's own) are left out.
 */
#include "cli.h"
#include "savefs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define CONTEXT 3
/* Past this many edits between two texts, the diff says "all of A, then
 * all of B" rather than spend D^2 memory finding the shortest. */
#define MAX_EDITS 1024

enum mode { OUT_DIFF, OUT_STAT, OUT_NAMES };

struct side {
	struct sv_tree *t;
	const char *label;
};

struct ctx {
	struct side a, b;
	enum mode mode;
	int status;              /* 0 same so far, 1 different, 2 trouble */
	uint64_t skipped;        /* files skipped unread (equal stored bytes) */
	/* --stat: each directory's sums, in the order first met. */
	struct dirsum {
		char *dir;
		uint64_t files, add, del;
	} *sums;
	size_t nsums, capsums;
};

static void differ(struct ctx *x)
{
	if (x->status < 1)
		x->status = 1;
}

static void trouble(struct ctx *x, const struct side *s, const char *path, const char *why)
{
	fprintf(stderr, "savefs: %s/%s: %s\n", s->label, path, why);
	x->status = 2;
}

/* ---- listings ---- */

struct entry {
	char *name;
	struct sv_stat st;
};

struct listing {
	struct entry *v;
	size_t n, cap;
};

static int collect(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct listing *l = arg;
	if (!strcmp(name, ".savefs"))
		return 0; /* the mount's own: not the save's */
	if (sv_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
		return -ENOMEM;
	if (!(l->v[l->n].name = strdup(name)))
		return -ENOMEM;
	l->v[l->n++].st = *st;
	return 0;
}

static int by_name(const void *p, const void *q)
{
	return strcmp(((const struct entry *)p)->name, ((const struct entry *)q)->name);
}

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
}

/* Directory dir's entries by name, each looked up (an index directory's
 * listing names entries that a lookup makes nodes). */
static int list(struct side *s, sv_id dir, struct listing *l)
{
	memset(l, 0, sizeof *l);
	int rc = sv_tree_readdir(s->t, dir, 0, collect, l);
	if (rc < 0)
		return rc;
	qsort(l->v, l->n, sizeof *l->v, by_name);
	for (size_t i = 0; i < l->n; i++) {
		sv_id n;
		if ((rc = sv_tree_lookup(s->t, dir, l->v[i].name, &n)) ||
		    (rc = sv_tree_stat(s->t, n, &l->v[i].st)))
			return rc;
	}
	return 0;
}

/* ---- lines and their diff ---- */

struct lines {
	const char **p;
	size_t *len; /* without the newline */
	uint64_t *h;
	size_t n;
	bool last_open; /* the last line has no newline */
};

static int split(const struct sv_blob *b, struct lines *l)
{
	memset(l, 0, sizeof *l);
	size_t cap = 0;
	const char *p = (const char *)b->data, *end = p + b->len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (l->n == cap) {
			cap = cap ? cap * 2 : 64;
			const char **np = realloc(l->p, cap * sizeof *np);
			if (np)
				l->p = np;
			size_t *nn = np ? realloc(l->len, cap * sizeof *nn) : NULL;
			if (nn)
				l->len = nn;
			uint64_t *nh = nn ? realloc(l->h, cap * sizeof *nh) : NULL;
			if (!nh)
				return -ENOMEM;
			l->h = nh;
		}
		l->p[l->n] = p;
		l->len[l->n] = n;
		l->h[l->n] = XXH3_64bits(p, n);
		l->n++;
		l->last_open = !nl;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static void lines_free(struct lines *l)
{
	free(l->p);
	free(l->len);
	free(l->h);
}

static bool same_line(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
	return a->h[i] == b->h[j] && a->len[i] == b->len[j] && !memcmp(a->p[i], b->p[j], a->len[i]);
}

/* The edit script: ops[k] is '=', '-' or '+', in order. */
struct script {
	char *ops;
	size_t n;
};

/*
 * Myers's greedy shortest edit script.  Step d's furthest x on each of
 * its d + 1 diagonals is kept (row d, (d + 1) entries) to walk back from
 * the end; past MAX_EDITS steps (4 MB of rows), all of a is removed and
 * all of b added instead.
 */
static int myers(const struct lines *a, const struct lines *b, struct script *s)
{
	long n = (long)a->n, m = (long)b->n, found = -1;
	int32_t *rows = NULL;
	size_t used = 0;
	s->n = 0;
	s->ops = malloc((size_t)(n + m) + 1);
	if (!s->ops)
		return -ENOMEM;
	for (long d = 0; d <= n + m && d <= MAX_EDITS && found < 0; d++) {
		int32_t *nr = realloc(rows, (used + (size_t)d + 1) * sizeof *rows);
		if (!nr) {
			free(rows);
			return -ENOMEM;
		}
		rows = nr;
		int32_t *row = rows + used, *prev = d ? rows + used - d : NULL;
		for (long k = -d; k <= d; k += 2) {
			/* (prev holds diagonals -(d-1)..d-1: k's neighbour j at (j + d - 1) / 2.) */
			long x;
			if (!d)
				x = 0;
			else if (k == -d || (k != d && prev[(k - 1 + d - 1) / 2] < prev[(k + 1 + d - 1) / 2]))
				x = prev[(k + 1 + d - 1) / 2];
			else
				x = prev[(k - 1 + d - 1) / 2] + 1;
			long y = x - k;
			while (x < n && y < m && same_line(a, (size_t)x, b, (size_t)y)) {
				x++;
				y++;
			}
			row[(k + d) / 2] = (int32_t)x;
			if (x >= n && y >= m && found < 0)
				found = d;
		}
		used += (size_t)d + 1;
	}
	if (found < 0) {
		free(rows);
		memset(s->ops, '-', (size_t)n);
		memset(s->ops + n, '+', (size_t)m);
		s->n = (size_t)(n + m);
		return 0;
	}
	/* Walked back from (n, m), the script is built from its end. */
	size_t r = 0;
	long x = n, y = m;
	for (long d = found; d > 0; d--) {
		const int32_t *prev = rows + (size_t)(d - 1) * (size_t)d / 2;
		long k = x - y, pk;
		if (k == -d || (k != d && prev[(k - 1 + d - 1) / 2] < prev[(k + 1 + d - 1) / 2]))
			pk = k + 1;
		else
			pk = k - 1;
		long px = prev[(pk + d - 1) / 2], py = px - pk;
		while (x > px && y > py) {
			s->ops[r++] = '=';
			x--;
			y--;
		}
		s->ops[r++] = x == px ? '+' : '-';
		x = px;
		y = py;
	}
	while (x > 0 && y > 0) {
		s->ops[r++] = '=';
		x--;
		y--;
	}
	free(rows);
	for (size_t i = 0; i < r / 2; i++) {
		char t = s->ops[i];
		s->ops[i] = s->ops[r - 1 - i];
		s->ops[r - 1 - i] = t;
	}
	s->n = r;
	return 0;
}

/* "start,count" of a hunk's side as diff -u writes it. */
static void range(FILE *f, size_t first, size_t count)
{
	if (count == 1)
		fprintf(f, "%zu", first + 1);
	else
		fprintf(f, "%zu,%zu", count ? first + 1 : first, count);
}

static void line_out(FILE *f, char mark, const struct lines *l, size_t i)
{
	fputc(mark, f);
	fwrite(l->p[i], 1, l->len[i], f);
	fputc('\n', f);
	if (i + 1 == l->n && l->last_open)
		fputs("\\ No newline at end of file\n", f);
}

/* The script's hunks, CONTEXT lines around each change, as diff -u. */
static void hunks(const struct lines *a, const struct lines *b, const struct script *s)
{
	size_t k = 0;
	while (k < s->n) {
		while (k < s->n && s->ops[k] == '=')
			k++;
		if (k == s->n)
			break;
		/* A hunk from CONTEXT lines before this change to CONTEXT after
		 * the last change that is within 2 * CONTEXT of the next. */
		size_t start = k >= CONTEXT ? k - CONTEXT : 0, end = k;
		for (size_t j = k; j < s->n; j++) {
			if (s->ops[j] == '=')
				continue;
			size_t gap = 0;
			while (j + 1 + gap < s->n && s->ops[j + 1 + gap] == '=')
				gap++;
			end = j + 1;
			if (gap > 2 * CONTEXT || j + 1 + gap == s->n) {
				end = j + 1 + (gap < CONTEXT ? gap : CONTEXT);
				break;
			}
			j += gap;
		}
		size_t ai = 0, bi = 0;
		for (size_t j = 0; j < start; j++) {
			ai += s->ops[j] != '+';
			bi += s->ops[j] != '-';
		}
		size_t na = 0, nb = 0;
		for (size_t j = start; j < end; j++) {
			na += s->ops[j] != '+';
			nb += s->ops[j] != '-';
		}
		fputs("@@ -", stdout);
		range(stdout, ai, na);
		fputs(" +", stdout);
		range(stdout, bi, nb);
		fputs(" @@\n", stdout);
		for (size_t j = start; j < end; j++) {
			char op = s->ops[j];
			if (op == '=')
				line_out(stdout, ' ', a, ai);
			else if (op == '-')
				line_out(stdout, '-', a, ai);
			else
				line_out(stdout, '+', b, bi);
			ai += op != '+';
			bi += op != '-';
		}
		k = end;
	}
}

/* ---- the walk ---- */

/* --stat: a file of directory dir differs, by add and del lines. */
static void stat_note(struct ctx *x, const char *dir, uint64_t add, uint64_t del)
{
	size_t i = 0;
	while (i < x->nsums && strcmp(x->sums[i].dir, dir))
		i++;
	if (i == x->nsums) {
		char *d = strdup(dir);
		if (!d || sv_grow((void **)&x->sums, &x->capsums, x->nsums + 1, sizeof *x->sums)) {
			free(d);
			x->status = 2;
			return;
		}
		x->sums[x->nsums++] = (struct dirsum){d, 0, 0, 0};
	}
	x->sums[i].files++;
	x->sums[i].add += add;
	x->sums[i].del += del;
}

/* --stat: a line a directory, then the totals. */
static void stat_out(struct ctx *x)
{
	uint64_t files = 0, add = 0, del = 0;
	for (size_t i = 0; i < x->nsums; i++) {
		const struct dirsum *d = &x->sums[i];
		printf(" %s | %llu file%s, +%llu -%llu\n", d->dir[0] ? d->dir : "./",
		       (unsigned long long)d->files, d->files == 1 ? "" : "s",
		       (unsigned long long)d->add, (unsigned long long)d->del);
		files += d->files;
		add += d->add;
		del += d->del;
		free(d->dir);
	}
	free(x->sums);
	printf(" %llu file%s changed in %zu director%s, +%llu -%llu lines; %llu unchanged "
	       "record%s skipped unread\n", (unsigned long long)files, files == 1 ? "" : "s",
	       x->nsums, x->nsums == 1 ? "y" : "ies", (unsigned long long)add,
	       (unsigned long long)del, (unsigned long long)x->skipped, x->skipped == 1 ? "" : "s");
}

static bool binary(const struct sv_blob *b)
{
	return memchr(b->data, 0, b->len) != NULL;
}

/* Lines of a text blob (0 for a binary one). */
static uint64_t count_lines(const struct sv_blob *b)
{
	if (binary(b))
		return 0;
	uint64_t n = 0;
	for (size_t i = 0; i < b->len; i++)
		n += b->data[i] == '\n';
	return n + (b->len && b->data[b->len - 1] != '\n');
}

/* What one side alone has: dir is the path of its directory ("" or
 * ending in /). */
static void only(struct ctx *x, struct side *s, const char *dir, const struct entry *e)
{
	differ(x);
	if (x->mode == OUT_NAMES) {
		printf("%s%s%s\n", dir, e->name, e->st.dir ? "/" : "");
	} else if (x->mode == OUT_DIFF) {
		size_t n = strlen(dir);
		printf("Only in %s%s%.*s: %s\n", s->label, n ? "/" : "", (int)(n ? n - 1 : 0), dir,
		       e->name);
	} else {
		struct sv_blob *b = NULL;
		struct sv_err err;
		uint64_t lines = 0;
		if (!e->st.dir && !sv_tree_content(s->t, e->st.id, &b, &err))
			lines = count_lines(b);
		sv_blob_unref(b);
		stat_note(x, dir, s == &x->b ? lines : 0, s == &x->a ? lines : 0);
	}
}

static void files(struct ctx *x, const char *dir, const struct entry *ea, const struct entry *eb)
{
	char path[8192];
	snprintf(path, sizeof path, "%s%s", dir, ea->name);
	uint64_t ha, hb;
	struct sv_err err;
	if (!sv_tree_stored(x->a.t, ea->st.id, &ha, &err) &&
	    !sv_tree_stored(x->b.t, eb->st.id, &hb, &err) && ha == hb) {
		x->skipped++;
		return;
	}
	struct sv_blob *a = NULL, *b = NULL;
	if (sv_tree_content(x->a.t, ea->st.id, &a, &err)) {
		trouble(x, &x->a, path, err.msg[0] ? err.msg : strerror(-err.code));
		return;
	}
	if (sv_tree_content(x->b.t, eb->st.id, &b, &err)) {
		trouble(x, &x->b, path, err.msg[0] ? err.msg : strerror(-err.code));
		sv_blob_unref(a);
		return;
	}
	if (a->len == b->len && !memcmp(a->data, b->data, a->len))
		goto done;
	differ(x);
	if (x->mode == OUT_NAMES) {
		printf("%s\n", path);
		goto done;
	}
	if (binary(a) || binary(b)) {
		if (x->mode == OUT_DIFF)
			printf("Binary files %s/%s and %s/%s differ\n", x->a.label, path, x->b.label,
			       path);
		else
			stat_note(x, dir, 0, 0);
		goto done;
	}
	struct lines la = {0}, lb = {0}; /* (freed whichever split failed) */
	struct script s = {0};
	if (split(a, &la) || split(b, &lb) || myers(&la, &lb, &s)) {
		trouble(x, &x->a, path, "out of memory");
	} else if (x->mode == OUT_DIFF) {
		printf("--- %s/%s\n+++ %s/%s\n", x->a.label, path, x->b.label, path);
		hunks(&la, &lb, &s);
	} else {
		uint64_t add = 0, del = 0;
		for (size_t k = 0; k < s.n; k++) {
			add += s.ops[k] == '+';
			del += s.ops[k] == '-';
		}
		stat_note(x, dir, add, del);
	}
	free(s.ops);
	lines_free(&la);
	lines_free(&lb);
done:
	sv_blob_unref(a);
	sv_blob_unref(b);
}

static void walk(struct ctx *x, sv_id da, sv_id db, const char *dir)
{
	struct listing la, lb;
	int rc = list(&x->a, da, &la);
	if (rc) {
		trouble(x, &x->a, dir, strerror(-rc));
		listing_free(&la);
		return;
	}
	if ((rc = list(&x->b, db, &lb))) {
		trouble(x, &x->b, dir, strerror(-rc));
		listing_free(&la);
		listing_free(&lb);
		return;
	}
	size_t i = 0, j = 0;
	while (i < la.n || j < lb.n) {
		int c = i == la.n ? 1 : j == lb.n ? -1 : strcmp(la.v[i].name, lb.v[j].name);
		if (c < 0) {
			only(x, &x->a, dir, &la.v[i++]);
			continue;
		}
		if (c > 0) {
			only(x, &x->b, dir, &lb.v[j++]);
			continue;
		}
		struct entry *ea = &la.v[i++], *eb = &lb.v[j++];
		char sub[8192];
		snprintf(sub, sizeof sub, "%s%s/", dir, ea->name);
		if (ea->st.dir && eb->st.dir) {
			walk(x, ea->st.id, eb->st.id, sub);
		} else if (ea->st.dir != eb->st.dir) {
			differ(x);
			if (x->mode == OUT_NAMES)
				printf("%s%s\n", dir, ea->name);
			else if (x->mode == OUT_DIFF)
				printf("File %s/%s%s is a %s while file %s/%s%s is a %s\n", x->a.label, dir,
				       ea->name, ea->st.dir ? "directory" : "regular file", x->b.label, dir,
				       eb->name, eb->st.dir ? "directory" : "regular file");
			else
				stat_note(x, dir, 0, 0);
		} else {
			files(x, dir, ea, eb);
		}
	}
	listing_free(&la);
	listing_free(&lb);
}

int sv_cli_diff(int argc, char **argv, const struct sv_opts *o)
{
	struct ctx x;
	memset(&x, 0, sizeof x);
	int nargs = 0;
	const char *loc[2] = {NULL, NULL};
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--stat"))
			x.mode = OUT_STAT;
		else if (!strcmp(argv[i], "--name-only"))
			x.mode = OUT_NAMES;
		else if (nargs < 2)
			loc[nargs++] = argv[i];
		else
			nargs++;
	}
	if (nargs != 2) {
		fprintf(stderr, "savefs: diff takes two locations (see savefs --help)\n");
		return 2;
	}
	struct sv_err err;
	struct sv_side_open {
		struct side *s;
		const char *where;
	} sides[2] = {{&x.a, loc[0]}, {&x.b, loc[1]}};
	for (int i = 0; i < 2; i++) {
		sv_err_clear(&err);
		int rc = sv_tree_open(sides[i].where, o, &sides[i].s->t, &err);
		if (rc) {
			sv_cli_open_error(sides[i].where, rc, &err);
			if (i)
				sv_tree_free(x.a.t);
			return 2;
		}
		sides[i].s->label = sides[i].where;
	}
	int status;
	const char *fa = sv_tree_format(x.a.t), *fb = sv_tree_format(x.b.t);
	if (strcmp(fa, fb)) {
		fprintf(stderr, "savefs: %s is a %s, %s a %s: not one format\n", loc[0], fa, loc[1],
			fb);
		status = 2;
	} else {
		walk(&x, SV_TREE_ROOT, SV_TREE_ROOT, "");
		if (x.mode == OUT_STAT)
			stat_out(&x);
		status = x.status;
	}
	sv_tree_free(x.a.t);
	sv_tree_free(x.b.t);
	if (fflush(stdout) && status < 2)
		status = 2;
	return status;
}
