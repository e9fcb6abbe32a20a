/*
 * fuzz_datafile.c - libFuzzer target for the datafile format: opens the
 * input from memory (the format forced, so every input reaches the
 * parser), walks the whole tree, stats every node, reads every file whole
 * and at a few odd offsets, then frees.  Limits are small so that a
 * declared size cannot make one input take seconds.
 *
 * Then, for an input that opened, the write-back path: the input is
 * written to a file in a private temporary directory, opened for writing,
 * one item and one data item are rewritten with their own bytes, and the
 * edit is committed.  The commit must succeed, the result must open again,
 * and every file that read before must read the same after (data items
 * copied as stored or recompressed, items re-laid out).
 *
 * Then the map view: the first file of each kind under map/ that reads
 * (a tile grid, a physics grid, layer.json, group.json, an envelope,
 * quads or sources, info.json, settings.cfg, an image) is rewritten with
 * its own bytes and committed.  The commit must succeed (what the map
 * holds already is never refused), and each of those files must read the
 * same after.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test`.
 */
#define FUZZ_NAME "fuzz_datafile"
#include "container.h"
#include "fuzz_tmp.h"
#include "fuzz_walk.h"
#include "format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- write-back round trip ------------------------------------------- */


/* The first file under the directory at `sub` that reads (not bad). */
static uint32_t first_good(struct sv_container *c, const char *sub, bool recurse)
{
	uint32_t d;
	if (sv_resolve(c, sub, &d))
		return SV_NONE;
	const struct sv_node *dn = sv_node(c, d);
	for (uint32_t k = 0; k < dn->nkids; k++) {
		uint32_t n = dn->kids[k];
		const struct sv_node *node = sv_node(c, n);
		if (node->flags & SV_N_DIR) {
			if (recurse) {
				char p[512];
				if (!sv_path(c, n, p, sizeof p)) {
					uint32_t f = first_good(c, p, false);
					if (f != SV_NONE)
						return f;
				}
			}
			continue;
		}
		struct sv_blob *b = NULL;
		if (!sv_content(c, n, &b, NULL)) {
			sv_blob_unref(b);
			return n;
		}
	}
	return SV_NONE;
}

/* Every file under the items and data directories of `old` that reads
 * reads the same in `now` (a fresh open of the committed file). */
static void compare(struct sv_container *old, struct sv_container *now)
{
	for (uint32_t n = 1; n < sv_node_count(old); n++) {
		const struct sv_node *node = sv_node(old, n);
		if (node->flags & (SV_N_DIR | SV_S_META | SV_S_GONE | SV_N_RO))
			continue;
		char p[512];
		if (!sv_path(old, n, p, sizeof p))
			fuzz_same_after(old, n, now, p);
	}
}

/* Map view files by name; one of each is rewritten. */
static const char *const map_files[] = {
	"tiles.txt", "tele.txt", "speedup.txt", "switch.txt", "tune.txt", "layer.json",
	"group.json", "quads.json", "sources.json", "info.json", "settings.cfg", NULL,
};

static int map_kind(struct sv_container *c, uint32_t n)
{
	const struct sv_node *node = sv_node(c, n);
	if (node->flags & (SV_N_DIR | SV_N_RO | SV_S_GONE | SV_S_META))
		return -1;
	for (int k = 0; map_files[k]; k++)
		if (!strcmp(node->name, map_files[k]))
			return k;
	const char *dot = strrchr(node->name, '.');
	const struct sv_node *dir = sv_node(c, node->parent);
	if (dot && !strcmp(dot, ".json") && !strcmp(dir->name, "envelopes"))
		return 11;
	if (dot && !strcmp(dot, ".png") && !strcmp(dir->name, "images"))
		return 12;
	return -1;
}

static void map_round_trip(const char *path, const struct sv_opts *o)
{
	struct sv_opts ro = *o;
	ro.read_only = true;
	struct sv_container *before = fuzz_open_file(path, &ro, "the committed file does not open");
	struct sv_container *c = fuzz_open_file(path, o, "the committed file does not open");
	char paths[13][512];
	int npick = 0;
	bool seen[13] = {false};
	for (uint32_t n = 1; n < sv_node_count(c); n++) {
		int k = map_kind(c, n);
		struct sv_blob *b = NULL;
		if (k < 0 || seen[k] || sv_content(c, n, &b, NULL))
			continue;
		struct sv_err err;
		seen[k] = true;
		if (sv_path(c, n, paths[npick], sizeof paths[npick]))
			abort();
		if (fuzz_rewrite(c, n, b, &err)) {
			fprintf(stderr, "fuzz_datafile: map edit refused: %s\n", err.msg);
			abort();
		}
		npick++;
	}
	struct sv_err err;
	if (npick && sv_commit(c, NULL, NULL, &err)) {
		fprintf(stderr, "fuzz_datafile: map views written with their own bytes: %s\n",
			err.msg);
		abort();
	}
	sv_container_free(c);
	if (npick) {
		struct sv_container *now = fuzz_open_file(path, &ro, "the committed file does not open");
		for (int i = 0; i < npick; i++) {
			uint32_t n;
			if (!sv_resolve(before, paths[i], &n))
				fuzz_same_after(before, n, now, paths[i]);
		}
		sv_container_free(now);
	}
	sv_container_free(before);
}

static void round_trip(const uint8_t *data, size_t size, struct sv_container *mem)
{
	const char *path = fuzz_path("f.map");
	fuzz_write_input(path, data, size);
	struct sv_opts o;
	sv_opts_init(&o);
	o.format = "datafile";
	o.max_decode = 1 << 20;
	o.cache_cap = 256 << 10;
	struct sv_container *c = fuzz_open_file(path, &o, "opens from memory, not from a file");
	struct sv_err err;
	uint32_t targets[2] = {first_good(c, "items", true), first_good(c, "data", false)};
	bool dirty = false;
	for (int i = 0; i < 2; i++) {
		if (targets[i] == SV_NONE)
			continue;
		struct sv_blob *b = NULL;
		if (sv_content(c, targets[i], &b, &err))
			abort();
		if (fuzz_rewrite(c, targets[i], b, &err)) {
			fprintf(stderr, "fuzz_datafile: edit refused: %s\n", err.msg);
			abort();
		}
		dirty = true;
	}
	if (dirty && sv_commit(c, NULL, NULL, &err)) {
		fprintf(stderr, "fuzz_datafile: commit failed: %s\n", err.msg);
		abort();
	}
	sv_container_free(c);
	if (dirty) {
		c = fuzz_open_file(path, &o, "the committed file does not open");
		compare(mem, c);
		sv_container_free(c);
	}
	map_round_trip(path, &o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sv_opts o;
	sv_opts_init(&o);
	o.format = "datafile";
	o.max_decode = 1 << 20;
	o.max_edit = 1 << 20;
	o.cache_cap = 256 << 10;
	struct sv_container *c = fuzz_open_mem(data, size, &o);
	if (!c)
		return 0;
	struct fuzz_walk w = {.c = c, .max_depth = 16};
	fuzz_walk(&w);
	/* The meta files, and a path that does not exist. */
	fuzz_read_meta(c, (const char *const[]){"data/99999.bin", NULL});
	round_trip(data, size, c);
	sv_container_free(c);
	return 0;
}
