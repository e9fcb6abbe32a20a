/*
 * fuzz_mapedit.c - libFuzzer target for the map view's writers: the input
 * is written into one file of a generated map's map/ tree and committed.
 *
 * The first byte picks the map (DDNet, Teeworlds 0.7 runs, DDRace's
 * 17-int tilemaps) and the file (a tile or physics grid, layer.json,
 * group.json, an envelope, quads, sources, info.json, settings.cfg, an
 * image, a sound); the rest is the file's new content.  The edit and its
 * commit must succeed or be refused with EINVAL (the reason set); after a
 * commit the map opens again and every file of its map/ tree that read
 * before reads still (an accepted edit never breaks a view), and the tree
 * walks cleanly.
 *
 * Built with: tests/tools/mapgen.c
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test`.
 */
#define FUZZ_NAME "fuzz_mapedit"
#include "container.h"
#include "fuzz_tmp.h"
#include "fuzz_walk.h"
#include "format.h"
#include "tests/tools/mapgen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const views[] = {
	"map/groups/01-Game/04-Game/tiles.txt",
	"map/groups/01-Game/02-Game/tiles.txt",
	"map/groups/01-Game/06-Tele/tele.txt",
	"map/groups/01-Game/07-Speedup/speedup.txt",
	"map/groups/01-Game/09-Switch/switch.txt",
	"map/groups/01-Game/10-Tune/tune.txt",
	"map/groups/01-Game/03-Deco/layer.json",
	"map/groups/01-Game/04-Game/layer.json",
	"map/groups/01-Game/06-Tele/layer.json",
	"map/groups/01-Game/group.json",
	"map/groups/00-Background/group.json",
	"map/envelopes/00-rotate.json",
	"map/envelopes/01-Envelope.json",
	"map/groups/00-Background/00-Sky/quads.json",
	"map/groups/00-Background/01-Wind/sources.json",
	"map/groups/00-Background/02-Old/sources.json",
	"map/info.json",
	"map/settings.cfg",
	"map/images/00-deco.png",
	"map/sounds/00-wind.opus",
	"map/groups/01-Game/01-Deco/layer.json",
	"map/groups/01-Game/02-Game/layer.json",
};
#define NVIEWS (sizeof views / sizeof *views)

/* The three maps, made once. */
static struct sv_buf maps[3];

static void make_maps(void)
{
	static bool made;
	if (made)
		return;
	made = true;
	static const int fl[3] = {MAPGEN_DDNET, MAPGEN_TW07, MAPGEN_L17};
	for (int i = 0; i < 3; i++) {
		struct mapgen_opts o = {.flavour = fl[i], .w = 6, .h = 4, .image_size = 8,
					.settings = true, .version = 4, .small = true};
		const char *p = fuzz_path("seed.map");
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		struct sv_err err;
		if (fd < 0 || mapgen_write(fd, &o, &err) || close(fd))
			abort();
		fd = open(p, O_RDONLY);
		sv_buf_init(&maps[i]);
		uint8_t buf[65536];
		ssize_t n;
		while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
			if (sv_buf_add(&maps[i], buf, (size_t)n))
				abort();
		if (fd < 0 || close(fd) || !maps[i].len)
			abort();
	}
}

/* How many files under map/ read. */
static int readable(struct sv_container *c)
{
	int n = 0;
	for (uint32_t i = 1; i < sv_node_count(c); i++) {
		const struct sv_node *node = sv_node(c, i);
		char p[512];
		struct sv_blob *b = NULL;
		if ((node->flags & (SV_N_DIR | SV_S_META | SV_S_GONE)) || sv_path(c, i, p, sizeof p) ||
		    strncmp(p, "map/", 4))
			continue;
		if (!sv_content(c, i, &b, NULL)) {
			n++;
			sv_blob_unref(b);
		}
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	make_maps();
	int which = data[0] % 3;
	const char *view = views[(data[0] / 3) % NVIEWS];
	const char *path = fuzz_path("f.map");
	fuzz_write_input(path, maps[which].p, maps[which].len);
	struct sv_opts o;
	sv_opts_init(&o);
	o.max_decode = 1 << 22;
	o.max_edit = 1 << 22;
	o.cache_cap = 1 << 20;
	struct sv_container *c = fuzz_open_file(path, &o, "the generated map does not open");
	int before = readable(c);
	uint32_t n;
	if (sv_resolve(c, view, &n)) {
		sv_container_free(c);
		return 0;
	}
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_truncate(c, n, 0, &err);
	if (!rc && size > 1)
		rc = sv_write(c, n, 0, data + 1, size - 1, &err);
	if (!rc)
		rc = sv_commit(c, NULL, NULL, &err);
	if (rc && (rc != -EINVAL || !err.msg[0])) {
		fprintf(stderr, "fuzz_mapedit: %s: %d %s\n", view, rc, err.msg);
		abort();
	}
	sv_container_free(c);
	if (rc)
		return 0;
	c = fuzz_open_file(path, &o, "the committed map does not open");
	int after = readable(c);
	if (after < before) {
		fprintf(stderr, "fuzz_mapedit: %s: %d map files read before the edit, %d after\n",
			view, before, after);
		abort();
	}
	struct fuzz_walk w = {.c = c, .max_depth = 16};
	fuzz_walk(&w);
	fuzz_read_meta(c, (const char *const[]){"map/nothing.json", NULL});
	sv_container_free(c);
	return 0;
}
