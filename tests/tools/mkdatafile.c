/*
 * mkdatafile - makes Teeworlds/DDNet datafiles with savefs's own writer,
 * for fixtures and benchmarks.
 *
 *   mkdatafile gen OUT --data N --payload SIZE [--items N] [--version 3|4]
 *                  [--magic DATA|ATAD] [--seed S] [--crude] [--dup-uuid]
 *       A synthetic map: a version item, an info item, N layer items, a
 *       UUID index item (twice with --dup-uuid, as real DDNet maps have)
 *       naming one extended type with two items, and N data items holding
 *       SIZE bytes in all (compressible, tile-like bytes; item 1 is empty).
 *   mkdatafile map OUT [--flavour ddnet|tw07|legacy17|legacy22] [--size WxH]
 *                  [--images N] [--image-size S] [--no-settings] [--no-info] [--seed S]
 *                  [--version 3|4] [--crude] [--small]
 *       A map DDNet loads, covering the item versions real maps have:
 *       info with settings (or without, or no info item: --no-info), images v1/v2 embedded and
 *       external, a sound, envelopes v1/v2 (v3 with 22-int points in
 *       tw07), DDNet's bezier item and automapper items, groups v1/v2/v3, quads, sound
 *       sources (types 10 and 9), a game layer of WxH with front, tele,
 *       speedup, switch and tune layers (ddnet), tilemap version 4 runs
 *       (tw07), or DDRace's 17- and 22-int tilemaps with junk indices.
 *       --images N adds N embedded images of S x S (the benchmark's);
 *       --small makes the three base images 8 x 6 (fuzzing seeds).
 *   mkdatafile convert IN OUT [--version 3|4] [--magic DATA|ATAD] [--crude]
 *       Reads IN through savefs's reader and writes it again, e.g. as a
 *       version 3 or "ATAD" file.
 */
#include "container.h"
#include "fmt/teeworlds/datafile.h"
#include "mapgen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int die(const char *msg)
{
	fprintf(stderr, "mkdatafile: %s\n", msg);
	return 1;
}

/* Writes OUT with spec (a datafile) or map (a generated map). */
static int write_out_with(const char *out, struct sv_df_spec *spec, const struct mapgen_opts *map)
{
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(out);
		return 1;
	}
	struct sv_err err;
	sv_err_clear(&err);
	int rc = spec ? sv_df_write(fd, spec, &err) : mapgen_write(fd, map, &err);
	if (close(fd) && !rc)
		rc = -errno;
	if (rc) {
		fprintf(stderr, "mkdatafile: %s: %s\n", out, err.msg[0] ? err.msg : strerror(-rc));
		return 1;
	}
	return 0;
}

static int write_out(const char *out, struct sv_df_spec *spec)
{
	return write_out_with(out, spec, NULL);
}

/* Tile-layer-like bytes: 4-byte tiles {index, flags, skip, reserved} in
 * runs, half of them empty, so zlib sees what it sees in real maps. */
static void fill(uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint64_t r = mapgen_rand();
		size_t run = 4 * (1 + (r & 63));
		uint8_t index = (r >> 8) & 1 ? 0 : (uint8_t)((r >> 16) & 63);
		uint8_t flags = index ? (uint8_t)((r >> 24) & 3) : 0;
		for (size_t k = 0; k < run && i < n; k++, i++)
			p[i] = k % 4 == 0 ? index : k % 4 == 1 ? flags : 0;
	}
}

static int gen(int argc, char **argv)
{
	const char *out = argv[2];
	long ndata = 16, nlayers = 10;
	uint64_t payload = 64 << 10;
	struct sv_df_spec spec = {.magic = "DATA", .version = 4, .level = -1};
	bool dup_uuid = false;
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--data") && v)
			ndata = atol(argv[++i]);
		else if (!strcmp(a, "--items") && v)
			nlayers = atol(argv[++i]);
		else if (!strcmp(a, "--payload") && v) {
			if (sv_parse_size(argv[++i], &payload))
				return die("--payload takes a size such as 200M");
		} else if (!strcmp(a, "--version") && v)
			spec.version = atoi(argv[++i]);
		else if (!strcmp(a, "--magic") && v && strlen(v) == 4)
			memcpy(spec.magic, argv[++i], 4);
		else if (!strcmp(a, "--seed") && v)
			mapgen_seed((uint64_t)atoll(argv[++i]));
		else if (!strcmp(a, "--crude"))
			spec.crude_size = true;
		else if (!strcmp(a, "--dup-uuid"))
			dup_uuid = true;
		else
			return die("unknown option (see the comment at the top of mkdatafile.c)");
	}
	if (ndata < 0 || nlayers < 0 || nlayers > 60000)
		return die("bad counts");
	size_t nitems = 2 + (size_t)nlayers + 4;
	struct sv_df_witem *items = calloc(nitems, sizeof *items);
	int32_t *ints = calloc(nitems * 16, sizeof *ints);
	struct sv_df_wdata *data = calloc((size_t)ndata + 1, sizeof *data);
	if (!items || !ints || !data)
		return die("out of memory");
	size_t ni = 0;
	int32_t *p = ints;
	/* version: [1]; info: [1, author, version, credits, license]. */
	p[0] = 1;
	items[ni++] = (struct sv_df_witem){0, 0, (uint8_t *)p, 4};
	p += 16;
	p[0] = 1, p[1] = -1, p[2] = -1, p[3] = -1, p[4] = -1;
	items[ni++] = (struct sv_df_witem){1, 0, (uint8_t *)p, 20};
	p += 16;
	for (long i = 0; i < nlayers; i++) {
		for (int k = 0; k < 15; k++)
			p[k] = (int32_t)(mapgen_rand() & 0xffff);
		p[0] = 3, p[1] = 2;
		p[14] = ndata ? (int32_t)(i % ndata) : -1;
		items[ni++] = (struct sv_df_witem){5, (uint16_t)i, (uint8_t *)p, 60};
		p += 16;
	}
	/* A UUID index item naming type 0xFFFE (the automapper config). */
	static const uint8_t am[16] = {0x3e, 0x1b, 0x27, 0x16, 0x17, 0x8c, 0x39, 0x78,
				       0x9b, 0xd9, 0xb1, 0x1a, 0xe0, 0x41, 0x0d, 0xd8};
	for (int k = 0; k < 16; k += 4)
		p[k / 4] = (int32_t)((uint32_t)am[k] << 24 | (uint32_t)am[k + 1] << 16 |
				     (uint32_t)am[k + 2] << 8 | am[k + 3]);
	items[ni++] = (struct sv_df_witem){0xFFFF, 0xFFFE, (uint8_t *)p, 16};
	if (dup_uuid)
		items[ni++] = (struct sv_df_witem){0xFFFF, 0xFFFE, (uint8_t *)p, 16};
	p += 16;
	p[0] = 1, p[1] = 0, p[2] = 0, p[3] = 0;
	items[ni++] = (struct sv_df_witem){0xFFFE, 0, (uint8_t *)p, 16};
	/* Data: sizes vary by +-50% around the mean; item 1 is empty. */
	uint64_t mean = ndata ? payload / (uint64_t)ndata : 0, total = 0;
	for (long i = 0; i < ndata; i++) {
		uint64_t n = mean ? mean / 2 + mapgen_rand() % (mean + 1) : 0;
		if (i == 1)
			n = 0;
		if (i == ndata - 1 && total < payload && payload - total < 2 * mean + 1)
			n = payload - total;
		uint8_t *b = malloc(n ? n : 1);
		if (!b)
			return die("out of memory");
		if (i % 2)
			mapgen_fill_image(b, n);
		else
			fill(b, n);
		data[i].raw = b;
		data[i].raw_len = (uint32_t)n;
		total += n;
	}
	spec.items = items;
	spec.nitems = ni;
	spec.data = data;
	spec.ndata = (size_t)ndata;
	int rc = write_out(out, &spec);
	for (long i = 0; i < ndata; i++)
		free((void *)data[i].raw);
	free(data);
	free(ints);
	free(items);
	return rc;
}

static int gen_map(int argc, char **argv)
{
	const char *out = argv[2];
	struct mapgen_opts o = {.flavour = MAPGEN_DDNET, .w = 60, .h = 40, .image_size = 1024,
				.settings = true, .version = 4};
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--flavour") && v) {
			i++;
			o.flavour = !strcmp(v, "tw07") ? MAPGEN_TW07 : !strcmp(v, "legacy17") ? MAPGEN_L17
				  : !strcmp(v, "legacy22") ? MAPGEN_L22 : !strcmp(v, "ddnet") ? MAPGEN_DDNET
				  : -1;
			if (o.flavour < 0)
				return die("--flavour is ddnet, tw07, legacy17 or legacy22");
		} else if (!strcmp(a, "--size") && v && sscanf(argv[++i], "%dx%d", &o.w, &o.h) == 2) {
		} else if (!strcmp(a, "--images") && v) {
			o.images = atoi(argv[++i]);
		} else if (!strcmp(a, "--image-size") && v) {
			o.image_size = atoi(argv[++i]);
		} else if (!strcmp(a, "--no-settings")) {
			o.settings = false;
		} else if (!strcmp(a, "--no-info")) {
			o.no_info = true;
		} else if (!strcmp(a, "--seed") && v) {
			mapgen_seed((uint64_t)atoll(argv[++i]));
		} else if (!strcmp(a, "--version") && v) {
			o.version = atoi(argv[++i]);
		} else if (!strcmp(a, "--crude")) {
			o.crude = true;
		} else if (!strcmp(a, "--small")) {
			o.small = true;
		} else {
			return die("unknown option (see the comment at the top of mkdatafile.c)");
		}
	}
	return write_out_with(out, NULL, &o);
}

static int convert(int argc, char **argv)
{
	struct sv_df_spec spec = {.magic = "", .version = 0, .level = -1};
	for (int i = 4; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--version") && v)
			spec.version = atoi(argv[++i]);
		else if (!strcmp(a, "--magic") && v && strlen(v) == 4)
			memcpy(spec.magic, argv[++i], 4);
		else if (!strcmp(a, "--crude"))
			spec.crude_size = true;
		else
			return die("unknown option");
	}
	struct sv_opts o;
	sv_opts_init(&o);
	o.read_only = true;
	struct sv_container *c;
	struct sv_err err;
	if (sv_container_open(argv[2], &o, &c, &err)) {
		fprintf(stderr, "mkdatafile: %s\n", err.msg);
		return 1;
	}
	uint32_t hdr, items_dir, data_dir;
	struct sv_blob *h;
	if (sv_resolve(c, "header.json", &hdr) || sv_resolve(c, "items", &items_dir) ||
	    sv_resolve(c, "data", &data_dir) || sv_content(c, hdr, &h, &err))
		return die("not a datafile tree");
	/* Defaults from the source: "version": N and "magic": "XXXX". */
	const char *mv = strstr((const char *)h->data, "\"magic\": \"");
	const char *vv = strstr((const char *)h->data, "\"version\": ");
	if (!spec.magic[0] && mv)
		memcpy(spec.magic, mv + 10, 4);
	if (!spec.version && vv)
		spec.version = atoi(vv + 11);
	sv_blob_unref(h);
	size_t cap = sv_node_count(c);
	struct sv_df_witem *items = calloc(cap, sizeof *items);
	struct sv_df_wdata *data = calloc(cap, sizeof *data);
	struct sv_blob **keep = calloc(cap, sizeof *keep);
	size_t ni = 0, nd = 0, nk = 0;
	for (uint32_t n = 0; n < sv_node_count(c); n++) {
		struct sv_node *node = sv_node(c, n);
		if (node->flags & (SV_N_DIR | SV_S_GONE) || node->parent == SV_ROOT)
			continue;
		struct sv_node *dir = sv_node(c, node->parent);
		struct sv_blob *b;
		if (sv_content(c, n, &b, &err)) {
			fprintf(stderr, "mkdatafile: %s: %s\n", node->name, err.msg);
			return 1;
		}
		keep[nk++] = b;
		if (dir->parent == items_dir) {
			items[ni].type = (uint16_t)atoi(dir->name);
			items[ni].id = (uint16_t)atoi(node->name);
			items[ni].p = b->data;
			items[ni++].len = (uint32_t)b->len;
		} else if (node->parent == data_dir) {
			data[nd].raw = b->data;
			data[nd++].raw_len = (uint32_t)b->len;
		}
	}
	spec.items = items;
	spec.nitems = ni;
	spec.data = data;
	spec.ndata = nd;
	int rc = write_out(argv[3], &spec);
	for (size_t i = 0; i < nk; i++)
		sv_blob_unref(keep[i]);
	free(keep);
	free(items);
	free(data);
	sv_container_free(c);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "gen"))
		return gen(argc, argv);
	if (argc >= 3 && !strcmp(argv[1], "map"))
		return gen_map(argc, argv);
	if (argc >= 4 && !strcmp(argv[1], "convert"))
		return convert(argc, argv);
	fprintf(stderr, "usage: mkdatafile gen OUT [options] | map OUT [options] | convert IN OUT "
		"[options]\n");
	return 2;
}
