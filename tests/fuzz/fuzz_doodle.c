/*
 * fuzz_doodle.c - libFuzzer target for the Sketchy Maze (doodle) format:
 * opens the input from memory (the format forced, so every input reaches
 * the module: v1 JSON, v2 gzip, zip levels, doodads and levelpacks),
 * walks the whole tree (a levelpack's nested containers too: their lazy
 * directories are expanded by listing them), stats every node, reads every
 * file whole and at a few odd offsets, reads the meta files, then frees.
 * Limits are small so that a declared size cannot make one input take
 * seconds.
 *
 * Then, for an input that opened, the write-back path: the input is
 * written to a file in a private temporary directory and opened for
 * writing; the first chunk text grid that reads and has a pixel (an empty
 * grid written removes its chunk) but no '?' pixel (which cannot be
 * written back), the root JSON and the first attached file are
 * rewritten with their own bytes, and the edit is committed.  A commit
 * may refuse (the stored root does not pass the edit checks, or a member
 * kept as stored cannot be copied) but must say why.  When it succeeds,
 * the committed file must open again, and every file that read before
 * must read the same after, except the stored .bin of a rewritten chunk
 * (now RLE).  A v1/v2 input goes through a second round trip with
 * -o upgrade (it becomes a zip; every .bin may change to RLE, and pixels
 * past the palette are left out: the views of their chunks and drawing
 * may change too).
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test`.
 */
#define FUZZ_NAME "fuzz_doodle"
#include "container.h"
#include "fuzz_tmp.h"
#include "fuzz_walk.h"
#include "format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void set_opts(struct sv_opts *o)
{
	sv_opts_init(o);
	o->format = "doodle";
	o->max_decode = 1 << 20;
	o->max_edit = 1 << 20;
	o->cache_cap = 256 << 10;
	o->readahead = 0;
}

/* The walk of fuzz_walk.h: a failed read must say why. */
static void walk(struct sv_container *c)
{
	struct fuzz_walk w = {.c = c, .max_depth = 16, .checks = FUZZ_WHY};
	fuzz_walk(&w);
}

/* ---- write-back round trip ------------------------------------------- */


static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && !strcmp(s + n - k, tail);
}

/* A '?' in a grid line (not a '#' comment): a pixel past the palette. */
static bool bad_pixel(const struct sv_blob *b)
{
	bool start = true, comment = false;
	for (size_t i = 0; i < b->len; i++) {
		uint8_t ch = b->data[i];
		if (start)
			comment = ch == '#';
		start = ch == '\n';
		if (ch == '?' && !comment)
			return true;
	}
	return false;
}

/* The first file under dir (depth first) that reads and that pick accepts. */
static uint32_t first_file(struct sv_container *c, uint32_t d, int depth,
			   bool (*pick)(const char *name, const struct sv_blob *b))
{
	if (depth > 8)
		return SV_NONE;
	struct fuzz_kids k = {0};
	fuzz_list(c, d, &k);
	uint32_t found = SV_NONE;
	for (size_t i = 0; i < k.n && found == SV_NONE; i++) {
		uint32_t n = k.v[i];
		const struct sv_node *node = sv_node(c, n);
		if (node->flags & SV_S_META)
			continue;
		if (node->flags & SV_N_DIR) {
			if (strcmp(node->name, ".savefs"))
				found = first_file(c, n, depth + 1, pick);
			continue;
		}
		struct sv_blob *b = NULL;
		if (!sv_content(c, n, &b, NULL)) {
			if (pick(node->name, b))
				found = n;
			sv_blob_unref(b);
		}
	}
	free(k.v);
	return found;
}

/* A pixel in a grid line: rewriting an all-empty grid removes the chunk. */
static bool has_pixel(const struct sv_blob *b)
{
	bool start = true, comment = false;
	for (size_t i = 0; i < b->len; i++) {
		uint8_t ch = b->data[i];
		if (start)
			comment = ch == '#';
		start = ch == '\n';
		if (!comment && ch != '.' && ch != '\n' && ch != '\r')
			return true;
	}
	return false;
}

static bool pick_txt(const char *name, const struct sv_blob *b)
{
	return ends_with(name, ".txt") && !bad_pixel(b) && has_pixel(b);
}

static bool pick_any(const char *name, const struct sv_blob *b)
{
	(void)name;
	(void)b;
	return true;
}

/* True if a directory above n failed to list (its files are not shown). */
static bool under_bad(struct sv_container *c, uint32_t n)
{
	for (int depth = 0; n != SV_ROOT && depth < 64; depth++) {
		n = sv_node(c, n)->parent;
		if (sv_node(c, n)->flags & SV_N_BAD)
			return true;
	}
	return false;
}

/* With -o upgrade, pixels past the palette are left out of the chunks
 * re-encoded as RLE (and the log says so): the views of such a chunk, and
 * the preview of its drawing, change.  True for those paths. */
static bool dropped_bad(struct sv_container *old, const char *p)
{
	char txt[1024];
	const char *chunks = strstr(p, "chunks/");
	size_t k = strlen(p);
	if (chunks && k > 4 && k < sizeof txt && (ends_with(p, ".png") || ends_with(p, ".txt"))) {
		memcpy(txt, p, k - 4);
		strcpy(txt + k - 4, ".txt");
		uint32_t n;
		struct sv_blob *b = NULL;
		bool bad = !sv_resolve(old, txt, &n) && !sv_content(old, n, &b, NULL) &&
			   bad_pixel(b);
		sv_blob_unref(b);
		return bad;
	}
	if (!ends_with(p, "preview.png"))
		return false;
	/* Any chunk of the drawing that preview.png belongs to. */
	size_t plen = k - strlen("preview.png");
	for (uint32_t n = 1; n < sv_node_count(old); n++) {
		char q[1024];
		const struct sv_node *node = sv_node(old, n);
		if ((node->flags & (SV_N_DIR | SV_S_GONE)) || sv_path(old, n, q, sizeof q) ||
		    strncmp(q, p, plen) || strncmp(q + plen, "chunks/", 7) || !ends_with(q, ".txt"))
			continue;
		if (dropped_bad(old, q))
			return true;
	}
	return false;
}

/* Every file of `old` that reads reads the same in `now` (a fresh open of
 * the committed file), except .bin files named in skip (or, upgraded, all
 * of them and what dropped_bad() says). */
static void compare(struct sv_container *old, struct sv_container *now, const char *skip,
		    bool upgraded)
{
	for (uint32_t n = 1; n < sv_node_count(old); n++) {
		const struct sv_node *node = sv_node(old, n);
		if (node->flags & (SV_N_DIR | SV_S_META | SV_S_GONE | SV_S_TEMP) ||
		    under_bad(old, n))
			continue;
		char p[1024];
		if (sv_path(old, n, p, sizeof p))
			continue;
		if (ends_with(p, ".bin") && (upgraded || !strcmp(p, skip)))
			continue;
		if (upgraded && dropped_bad(old, p))
			continue;
		fuzz_same_after(old, n, now, p);
	}
}

static void round_trip(const uint8_t *data, size_t size, struct sv_container *mem,
		       bool upgrade)
{
	const char *path = fuzz_path("f.level");
	fuzz_write_input(path, data, size);
	struct sv_opts o;
	set_opts(&o);
	o.upgrade = upgrade;
	struct sv_container *c = fuzz_open_file(path, &o, "opens from memory, not from a file");
	struct sv_err err;
	uint32_t targets[3] = {
		first_file(c, SV_ROOT, 0, pick_txt),
		SV_NONE,
		SV_NONE,
	};
	uint32_t n;
	if (!sv_resolve(c, "level.json", &n) || !sv_resolve(c, "doodad.json", &n))
		targets[1] = n;
	if (!sv_resolve(c, "assets", &n))
		targets[2] = first_file(c, n, 0, pick_any);
	char txt[1024] = "";
	bool dirty = false;
	for (int i = 0; i < 3; i++) {
		if (targets[i] == SV_NONE)
			continue;
		struct sv_blob *b = NULL;
		if (sv_content(c, targets[i], &b, &err))
			continue; /* the root JSON view always reads; others were read */
		int rc = fuzz_rewrite(c, targets[i], b, &err);
		if (rc == -EROFS || rc == -EPERM)
			continue; /* inside a levelpack */
		if (rc) {
			fprintf(stderr, "fuzz_doodle: edit refused: %s\n", err.msg);
			abort();
		}
		if (i == 0 && !sv_path(c, targets[i], txt, sizeof txt - 4))
			strcpy(txt + strlen(txt) - 4, ".bin");
		dirty = true;
	}
	int rc = dirty ? sv_commit(c, NULL, NULL, &err) : 0;
	if (rc) {
		/* Refused: it must say why. */
		if (!err.msg[0] || rc >= 0)
			abort();
		sv_container_free(c);
		return;
	}
	if (dirty) {
		/* The same handle, re-indexed after the commit, reads too. */
		walk(c);
	}
	sv_container_free(c);
	if (!dirty)
		return;
	o.upgrade = false;
	c = fuzz_open_file(path, &o, "the committed file does not open");
	compare(mem, c, txt, upgrade);
	sv_container_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_spill();
	struct sv_opts o;
	set_opts(&o);
	struct sv_container *c = fuzz_open_mem(data, size, &o);
	if (!c)
		return 0;
	walk(c);
	fuzz_read_meta(c, (const char *const[]){"chunks/0/99999,99999.txt",
						"levels/nothing/level.json", NULL});
	round_trip(data, size, c, false);
	if (size && data[0] != 'P')
		round_trip(data, size, c, true);
	sv_container_free(c);
	return 0;
}
