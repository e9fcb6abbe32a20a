/*
 * fuzz_recording.c - libFuzzer target for compacted replay recordings:
 * opens the input from memory, walks the whole tree (header, metadata,
 * index, every chunk's payload and text, the timeline, the states at the
 * chunk starts), stats every node and reads every file; then opens a few
 * ticks by name under at/.  Limits are small so that a declared size
 * cannot make one input take seconds.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test`.
 */
#define FUZZ_NAME "fuzz_recording"
#include "fuzz_walk.h"
#include "container.h"
#include "savefs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_spill();
	struct sv_opts o;
	sv_opts_init(&o);
	o.max_decode = 1 << 20;
	o.cache_cap = 256 << 10;
	o.format = "recording";
	struct sv_container *c = fuzz_open_mem(data, size, &o);
	if (!c)
		return 0;
	struct fuzz_walk w = {.c = c, .max_depth = 8};
	fuzz_walk(&w);
	fuzz_read_meta(c, (const char *const[]){"chunks/999999.txt", "at/nope", NULL});
	static const char *const ticks[] = {"at/1.json", "at/57.json", "at/00000199.json",
					    "at/4294967296.json", "at/x.json", NULL};
	for (int i = 0; ticks[i]; i++) {
		uint32_t n;
		struct sv_blob *b = NULL;
		if (!sv_resolve(c, ticks[i], &n) && !sv_content(c, n, &b, NULL))
			sv_blob_unref(b);
	}
	sv_container_free(c);
	return 0;
}
