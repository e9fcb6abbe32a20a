/*
 * fuzz_starbound.c - libFuzzer target for Starbound databases and SBVJ01
 * files: opens the input from memory (sniffed, so that both formats are
 * reached), walks the whole tree (every key, tile sector view, entity
 * sector, the unique index, the preview, celestial chunks), stats every
 * node and reads every file.  Limits are small so that a declared size
 * cannot make one input take seconds.
 *
 * Then, for a database that opened and can be written, the copy-on-write
 * commit: the input is written to a file, the first key that reads is
 * rewritten with its own bytes (re-deflated) and committed in place.  The
 * commit must succeed, the file must open again, and every file that read
 * before must read the same after.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test`.
 */
#define FUZZ_NAME "fuzz_starbound"
#include "container.h"
#include "fuzz_tmp.h"
#include "fuzz_walk.h"
#include "format.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void opts(struct sv_opts *o)
{
	sv_opts_init(o);
	o->max_decode = 1 << 20;
	o->max_edit = 1 << 20;
	o->cache_cap = 256 << 10;
}

/* True if /.savefs/info has no warnings (a broken free-index chain is one:
 * such a database is not written). */
static bool no_warnings(struct sv_container *c)
{
	uint32_t n;
	struct sv_blob *b = NULL;
	if (sv_resolve(c, ".savefs/info", &n) || sv_content(c, n, &b, NULL))
		return false;
	json_t *j = json_loadb((const char *)b->data, b->len, 0, NULL);
	sv_blob_unref(b);
	bool none = j && json_array_size(json_object_get(j, "warnings")) == 0;
	json_decref(j);
	return none;
}

static void round_trip(const uint8_t *data, size_t size, struct sv_container *mem)
{
	if (strcmp(sv_container_format(mem)->name, "btreedb5") || !no_warnings(mem))
		return;
	const char *path = fuzz_path("f.world");
	fuzz_write_input(path, data, size);
	struct sv_opts o;
	opts(&o);
	struct sv_container *c = fuzz_open_file(path, &o, "opens from memory, not from a file");
	uint32_t keys, target = SV_NONE;
	struct sv_blob *b = NULL;
	struct sv_err err;
	if (!sv_resolve(c, "keys", &keys)) {
		const struct sv_node *d = sv_node(c, keys);
		for (uint32_t k = 0; k < d->nkids && target == SV_NONE; k++)
			if (!sv_content(c, d->kids[k], &b, NULL))
				target = d->kids[k];
	}
	if (target == SV_NONE) {
		sv_container_free(c);
		return;
	}
	if (fuzz_rewrite(c, target, b, &err) || sv_commit(c, NULL, NULL, &err)) {
		fprintf(stderr, "fuzz_starbound: the commit failed: %s\n", err.msg);
		abort();
	}
	sv_container_free(c);
	c = fuzz_open_file(path, &o, "the committed file does not open");
	for (uint32_t n = 1; n < sv_node_count(mem); n++) {
		const struct sv_node *node = sv_node(mem, n);
		char p[600];
		if (node->flags & (SV_N_DIR | SV_S_META | SV_S_GONE | SV_N_DERIVED))
			continue;
		if (!sv_path(mem, n, p, sizeof p))
			fuzz_same_after(mem, n, c, p);
	}
	sv_container_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_spill();
	struct sv_opts o;
	opts(&o);
	struct sv_container *c = fuzz_open_mem(data, size, &o);
	if (!c)
		return 0;
	struct fuzz_walk w = {.c = c, .max_depth = 16};
	fuzz_walk(&w);
	fuzz_read_meta(c, (const char *const[]){"keys/ffffffffff", "world/tiles/9,9.tsv", NULL});
	round_trip(data, size, c);
	sv_container_free(c);
	return 0;
}
