/*
 * test_twmap.c - the map view's write-back, in-process: the raw and map
 * views of one item edited in one commit are refused; after a commit
 * through either view the other shows it (same-size changes included);
 * settings added to a map without them; envelope points edited in place
 * and renumbered; reading one grid of each layer in order has the next
 * layers' grids decoded ahead; a grid with bytes DDNet refuses repaired by
 * writing it whole; a physics layer named otherwise than DDNet names it
 * still takes edits that keep what it holds.  Maps come from tests/tools/mapgen.c.
 */
#include "container.h"
#include "t.h"
#include "tree.h"

#include "tests/tools/mapgen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static char *make_map(const char *name, const struct mapgen_opts *o)
{
	static char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct sv_err err;
	if (fd < 0 || mapgen_write(fd, o, &err) || close(fd))
		die(path);
	return path;
}

static struct sv_container *open_rw(const char *path)
{
	struct sv_opts o;
	sv_opts_init(&o);
	return open_file_opts(path, &o);
}

static int put(struct sv_container *c, const char *path, const void *p, size_t n,
	       struct sv_err *err)
{
	uint32_t node = node_of(c, path);
	int rc = sv_truncate(c, node, 0, err);
	return rc ? rc : sv_write(c, node, 0, p, n, err);
}

static int commit(struct sv_container *c, struct sv_err *err)
{
	sv_err_clear(err);
	return sv_commit(c, NULL, NULL, err);
}

static struct mapgen_opts base(void)
{
	struct mapgen_opts o = {.flavour = MAPGEN_DDNET, .w = 6, .h = 4, .image_size = 8,
				.settings = true, .version = 4, .small = true};
	return o;
}

#define GAME "map/groups/01-Game/04-Game/"
#define DECO "map/groups/01-Game/03-Deco/"

/* The raw item or data item of a layer and its map view in one commit. */
static void two_views(void)
{
	struct mapgen_opts o = base();
	const char *path = make_map("two.map", &o);
	struct sv_container *c = open_rw(path);
	struct sv_err err;
	struct sv_blob *item = content(c, "items/5-layer/00003.bin");
	struct sv_blob *layer = content(c, DECO "layer.json");
	T_INT(0, put(c, "items/5-layer/00003.bin", item->data, item->len, &err));
	T_INT(0, put(c, DECO "layer.json", layer->data, layer->len, &err));
	T_INT(0, commit(c, &err));
	/* Both are the same bytes: nothing conflicts in what they write. */
	sv_container_free(c);

	c = open_rw(path);
	char *j = strndup((const char *)layer->data, layer->len);
	char *at = strstr(j, "\"detail\": false");
	T_OK(at != NULL);
	memcpy(at, "\"detail\": true ", 15);
	/* The raw item with the same change (bytes written as they are commit
	 * nothing, so this one must differ to be an edit). */
	uint8_t *raw_item = malloc(item->len);
	memcpy(raw_item, item->data, item->len);
	raw_item[8] = 1;
	T_INT(0, put(c, "items/5-layer/00003.bin", raw_item, item->len, &err));
	free(raw_item);
	T_INT(0, put(c, DECO "layer.json", j, strlen(j), &err));
	T_INT(-EBUSY, commit(c, &err));
	T_STR("datafile: item 5-layer/00003.bin is edited both as raw bytes and through map/ "
	      "in one commit: commit one, then the other", err.msg);
	/* Nothing was written; each alone goes in. */
	same(c, "items/5-layer/00003.bin", item->data, item->len);
	T_INT(0, put(c, DECO "layer.json", j, strlen(j), &err));
	T_INT(0, commit(c, &err));
	struct sv_blob *now = content(c, "items/5-layer/00003.bin");
	T_INT(1, now->len >= 12 ? now->data[8] : -1); /* the detail flag, int 2 */
	sv_blob_unref(now);
	free(j);

	/* The game layer's data and its grid. */
	sv_blob_unref(item);
	item = content(c, "items/5-layer/00004.bin");
	struct sv_blob *g = content(c, GAME "tiles.txt");
	uint32_t gd = (uint32_t)(item->data[56] | item->data[57] << 8);
	char raw[32];
	snprintf(raw, sizeof raw, "data/%05u.bin", gd);
	struct sv_blob *d = content(c, raw);
	/* Each changed: the raw data's first tile, the grid's first cell. */
	uint8_t *rd = malloc(d->len);
	memcpy(rd, d->data, d->len);
	rd[0] ^= 1;
	T_INT(0, put(c, raw, rd, d->len, &err));
	free(rd);
	char *gt = strndup((const char *)g->data, g->len);
	char *cell = gt;
	while (*cell == '#')
		cell = strchr(cell, '\n') + 1;
	memcpy(cell, cell[0] == '0' && cell[1] == '1' ? "020" : "010", 3);
	T_INT(0, put(c, GAME "tiles.txt", gt, g->len, &err));
	free(gt);
	T_INT(-EBUSY, commit(c, &err));
	char want[200];
	snprintf(want, sizeof want, "datafile: data item %u is edited both as raw bytes and "
		 "through map/ in one commit: commit one, then the other", gd);
	T_STR(want, err.msg);
	sv_blob_unref(g);
	sv_blob_unref(d);
	sv_blob_unref(item);
	sv_blob_unref(layer);
	sv_container_free(c);
}

/* After a commit through one view the other shows it, also when the
 * change keeps every size (the cached content must go). */
static void views_follow(void)
{
	struct mapgen_opts o = base();
	const char *path = make_map("follow.map", &o);
	struct sv_container *c = open_rw(path);
	struct sv_err err;
	struct sv_blob *item = content(c, "items/5-layer/00004.bin");
	uint32_t gd = (uint32_t)(item->data[56] | item->data[57] << 8);
	sv_blob_unref(item);
	char raw[32];
	snprintf(raw, sizeof raw, "data/%05u.bin", gd);
	struct sv_blob *g0 = content(c, GAME "tiles.txt"), *d0 = content(c, raw);
	/* Raw: tile 0 becomes index 0x2a, flags 3. */
	uint8_t *d = malloc(d0->len);
	memcpy(d, d0->data, d0->len);
	d[0] = 0x2a;
	d[1] = 3;
	T_INT(0, put(c, raw, d, d0->len, &err));
	T_INT(0, commit(c, &err));
	struct sv_blob *g1 = content(c, GAME "tiles.txt");
	T_UINT(g0->len, g1->len);
	const char *row0 = strchr(strchr((const char *)g1->data, '\n') + 1, '\n') + 1;
	T_OK(!strncmp(row0, "2a3 ", 4));
	/* Map: the same tile back to solid through tiles.txt. */
	char *t = strndup((const char *)g1->data, g1->len);
	memcpy(t + (row0 - (const char *)g1->data), "010", 3);
	T_INT(0, put(c, GAME "tiles.txt", t, strlen(t), &err));
	T_INT(0, commit(c, &err));
	struct sv_blob *d1 = content(c, raw);
	T_UINT(d0->len, d1->len);
	T_INT(1, d1->data[0]);
	T_INT(0, d1->data[1]);
	T_OK(!memcmp(d1->data + 4, d0->data + 4, d0->len - 4));
	/* game.png follows the game layer (a pixel of another colour). */
	free(t);
	free(d);
	sv_blob_unref(g0);
	sv_blob_unref(g1);
	sv_blob_unref(d0);
	sv_blob_unref(d1);
	sv_container_free(c);
}

/* settings.cfg onto a map whose info item has no settings. */
static void settings_added(void)
{
	struct mapgen_opts o = base();
	o.settings = false;
	const char *path = make_map("nosettings.map", &o);
	struct sv_container *c = open_rw(path);
	struct sv_err err;
	struct sv_blob *info = content(c, "items/1-info/00000.bin");
	T_UINT(20, info->len);
	sv_blob_unref(info);
	same(c, "map/settings.cfg", "", 0);
	const char cfg[] = "sv_gravity 0.25\n\ntune_zone 2 gravity 1\n";
	T_INT(0, put(c, "map/settings.cfg", cfg, sizeof cfg - 1, &err));
	T_INT(0, commit(c, &err));
	same(c, "map/settings.cfg", cfg, sizeof cfg - 1);
	info = content(c, "items/1-info/00000.bin");
	T_UINT(24, info->len);
	int32_t idx = (int32_t)(info->data[20] | info->data[21] << 8);
	char raw[32];
	snprintf(raw, sizeof raw, "data/%05d.bin", idx);
	same(c, raw, "sv_gravity 0.25\0\0tune_zone 2 gravity 1\0", 39);
	sv_blob_unref(info);
	sv_container_free(c);
}

/* An envelope's values in place; a point added renumbers the others. */
static void envelopes(void)
{
	struct mapgen_opts o = base();
	const char *path = make_map("env.map", &o);
	struct sv_container *c = open_rw(path);
	struct sv_err err;
	struct sv_blob *pts0 = content(c, "items/6-envpoints/00000.bin");
	struct sv_blob *e = content(c, "map/envelopes/02-volume.json");
	char *j = strndup((const char *)e->data, e->len);
	char *v = strstr(j, "\"values\": [");
	T_OK(v != NULL);
	v += strlen("\"values\": [");
	char *end = strchr(v, ',');
	char *nj = malloc(strlen(j) + 16);
	sprintf(nj, "%.*s2.5%s", (int)(v - j), j, end);
	T_INT(0, put(c, "map/envelopes/02-volume.json", nj, strlen(nj), &err));
	T_INT(0, commit(c, &err));
	struct sv_blob *pts1 = content(c, "items/6-envpoints/00000.bin");
	T_UINT(pts0->len, pts1->len);
	/* Point 5 (the volume envelope's first), value 0: 2.5 * 1024. */
	int32_t got;
	memcpy(&got, pts1->data + (5 * 6 + 2) * 4, 4);
	T_INT(2560, got);
	T_OK(!memcmp(pts0->data, pts1->data, (5 * 6 + 2) * 4));
	free(nj);
	free(j);
	sv_blob_unref(e);
	sv_blob_unref(pts1);

	/* The first envelope gets a point: the others start one later, and
	 * DDNet's bezier item keeps one entry a point. */
	struct sv_blob *bz0 = content(c, "items/32768-mapitemtype-envpoints-bezier@ddnet.tw/00000.bin");
	e = content(c, "map/envelopes/00-rotate.json");
	j = strndup((const char *)e->data, e->len);
	char *tail = strstr(j, "\n  ]\n}");
	T_OK(tail != NULL);
	nj = malloc(strlen(j) + 100);
	sprintf(nj, "%.*s,\n{\"time\": 9999, \"curve\": \"step\", \"values\": [1, 0, 0, 0]}%s",
		(int)(tail - j), j, tail);
	T_INT(0, put(c, "map/envelopes/00-rotate.json", nj, strlen(nj), &err));
	T_INT(0, commit(c, &err));
	pts1 = content(c, "items/6-envpoints/00000.bin");
	T_UINT(pts0->len + 24, pts1->len);
	struct sv_blob *bz1 = content(c, "items/32768-mapitemtype-envpoints-bezier@ddnet.tw/00000.bin");
	T_UINT(bz0->len + 64, bz1->len);
	struct sv_blob *e1 = content(c, "items/3-envelope/00001.bin"), *e2 = content(c, "items/3-envelope/00002.bin");
	T_INT(4, e1->data[8]);
	T_INT(6, e2->data[8]);
	/* The volume envelope's edited value moved with it. */
	memcpy(&got, pts1->data + (6 * 6 + 2) * 4, 4);
	T_INT(2560, got);
	sv_blob_unref(e1);
	sv_blob_unref(e2);
	sv_blob_unref(bz0);
	sv_blob_unref(bz1);
	sv_blob_unref(pts1);
	free(nj);
	free(j);
	sv_blob_unref(e);
	sv_blob_unref(pts0);
	sv_container_free(c);
}

/* A game layer whose stored tile has padding set (raw edits take any
 * bytes) reads EIO; its grid written whole repairs it: the bytes DDNet
 * wants 0 are written 0. */
static void repair(void)
{
	struct mapgen_opts o = base();
	const char *path = make_map("repair.map", &o);
	struct sv_container *c = open_rw(path);
	struct sv_err err;
	struct sv_blob *item = content(c, "items/5-layer/00004.bin");
	char raw[32];
	snprintf(raw, sizeof raw, "data/%05u.bin", (unsigned)(item->data[56] | item->data[57] << 8));
	sv_blob_unref(item);
	struct sv_blob *d = content(c, raw);
	uint8_t *p = malloc(d->len);
	memcpy(p, d->data, d->len);
	p[5 * 4 + 3] = 7;
	p[7 * 4 + 2] = 2;
	T_INT(0, put(c, raw, p, d->len, &err));
	T_INT(0, commit(c, &err));
	uint32_t n = node_of(c, GAME "tiles.txt");
	struct sv_blob *b = NULL;
	sv_err_clear(&err);
	T_INT(-EIO, sv_content(c, n, &b, &err));
	T_STR("map: layer 4: tile 5 (x 5, y 0) has padding 7, which version 3 does not allow", err.msg);
	const char grid[] = "# written whole\n"
			    "010 010 010 010 010 010\n010 ... 020 ... 091 010\n"
			    "010 ... ... ... ... 010\n010 010 010 010 010 010\n";
	T_INT(0, put(c, GAME "tiles.txt", grid, sizeof grid - 1, &err));
	T_INT(0, commit(c, &err));
	struct sv_blob *d1 = content(c, raw);
	T_UINT(d->len, d1->len);
	for (size_t i = 0; i < 24; i++) {
		T_INT(0, d1->data[4 * i + 2]);
		T_INT(0, d1->data[4 * i + 3]);
	}
	T_INT(0x09, d1->data[4 * 10]);
	T_INT(1, d1->data[4 * 10 + 1]);
	struct sv_blob *g = content(c, GAME "tiles.txt");
	T_OK(g->len > sizeof grid && !memcmp(g->data + g->len - 48, grid + sizeof grid - 1 - 48, 48));
	sv_blob_unref(g);
	sv_blob_unref(d1);
	sv_blob_unref(d);
	free(p);
	sv_container_free(c);
}

/* Four characters an int, each + 128, as a map stores names. */
static void put_name(uint8_t *p, const char *s, int n)
{
	size_t len = strlen(s);
	for (int i = 0; i < 4 * n; i++) {
		uint8_t ch = (size_t)i < len && i < 4 * n - 1 ? (uint8_t)s[i] : 0;
		p[4 * (i / 4) + 3 - i % 4] = (uint8_t)(ch + 128);
	}
}

/* A physics layer whose name is not DDNet's (the map holds it so): its
 * layer.json written back as it reads goes in; a change DDNet's rules
 * bind (its colour) is refused. */
static void physics_as_stored(void)
{
	struct mapgen_opts o = base();
	const char *path = make_map("tele.map", &o);
	struct sv_container *c = open_rw(path);
	struct sv_err err;
	const char *it = "items/5-layer/00006.bin";
	struct sv_blob *item = content(c, it);
	uint8_t *p = malloc(item->len);
	memcpy(p, item->data, item->len);
	put_name(p + 15 * 4, "Teleport", 3);
	T_INT(0, put(c, it, p, item->len, &err));
	T_INT(0, commit(c, &err));
	const char *lj = "map/groups/01-Game/06-Teleport/layer.json";
	struct sv_blob *j = content(c, lj);
	T_OK(strstr((const char *)j->data, "\"name\": \"Teleport\"") != NULL);
	T_INT(0, put(c, lj, j->data, j->len, &err));
	T_INT(0, commit(c, &err));
	char *t = strndup((const char *)j->data, j->len);
	char *col = strstr(t, "[255, 255, 255, 255]");
	T_OK(col != NULL);
	memcpy(col, "[255, 255, 255, 254]", 20);
	T_INT(0, put(c, lj, t, strlen(t), &err));
	T_INT(-EINVAL, commit(c, &err));
	T_OK(log_has(c, "a tele layer's colour is 255 255 255 255"));
	free(t);
	free(p);
	sv_blob_unref(j);
	sv_blob_unref(item);
	sv_container_free(c);
}

/* The worker's decoded-ahead count, from /.savefs/info. */
static long read_ahead(struct sv_container *c)
{
	json_t *info = json_of(c, ".savefs/info");
	long n = (long)json_integer_value(json_object_get(json_object_get(info, "cache"),
							  "read_ahead"));
	json_decref(info);
	return n;
}

/* `cat groups/01-Game/[0-9]*` + "/tiles.txt": the file at the same place in
 * each sibling directory.  After two, the next ones (up to the read-ahead
 * depth) are decoded ahead: 05 to 10, six layers. */
static void cousins(void)
{
	struct mapgen_opts o = base();
	o.w = 60;
	o.h = 40;
	const char *path = make_map("cousins.map", &o);
	struct sv_opts so;
	sv_opts_init(&so);
	so.read_only = true;
	struct sv_container *c = open_file_opts(path, &so);
	T_INT(0, read_ahead(c));
	sv_blob_unref(content(c, "map/groups/01-Game/03-Deco/tiles.txt"));
	T_INT(0, read_ahead(c));
	sv_blob_unref(content(c, GAME "tiles.txt"));
	long n = read_ahead(c);
	for (int tries = 0; tries < 1000 && n < 6; tries++) {
		usleep(10000);
		n = read_ahead(c);
	}
	T_INT(6, n);
	struct sv_cache_stats before, after;
	sv_container_cache_stats(c, &before);
	sv_blob_unref(content(c, "map/groups/01-Game/06-Tele/tele.txt"));
	sv_blob_unref(content(c, "map/groups/01-Game/10-Tune/tune.txt"));
	sv_container_cache_stats(c, &after);
	T_UINT(before.hits + 2, after.hits);
	sv_container_free(c);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_twmap.XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp");
	two_views();
	views_follow();
	settings_added();
	envelopes();
	cousins();
	repair();
	physics_as_stored();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd))
		die(cmd);
	return t_done();
}
