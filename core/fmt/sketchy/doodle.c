/*
 * doodle.c - Sketchy Maze drawings: levels (.level), doodads (.doodad) and
 * levelpacks (.levelpack).  Facts: ../shared/formats/doodle.md.
 *
 * Containers, told apart by their first bytes:
 *
 *   first bytes   container   the drawing
 *   {             v1          one JSON object: root keys, inline chunks
 *                             (chunks.chunks) and files (files: base64)
 *   1f 8b         v2          gzip of the same JSON
 *   PK 03 04      zip         level.json | doodad.json (root, maps {}),
 *                             chunks/<layer>/<x>,<y>.json   (v3)
 *                             chunks/<layer>/<x>,<y>.bin    (v3.1: type 0
 *                                 map accessor; v4: type 1 RLE)
 *                             assets/...                    attached files
 *                             a levelpack: index.json, levels/<file>,
 *                             doodads/<file> (each a container itself)
 *
 * Tree of a level or doodad (under levels/<name>/ inside a levelpack):
 *   level.json | doodad.json   the root without inline chunks and files
 *   chunks/<layer>/<x>,<y>.txt the chunk as a text grid (doodle.h)
 *                 /<x>,<y>.png rendered with the palette (read-only)
 *                 /<x>,<y>.bin stored binary, or for a JSON chunk the RLE
 *                              savefs would write
 *   assets/...                 attached files
 *   preview.png                layer 0, scaled down to fit 2048 pixels
 *
 * Invariants: open() reads the root JSON and the zip directory only (a v1/v2
 * container is its own index); chunk payloads are decoded on demand.  Every
 * size shown is known at open: text and PNG sizes depend only on the chunk
 * size and the palette; a .bin is the member's recorded size, except for a
 * JSON chunk, whose RLE size is computed by its first stat (SV_N_LAZYSIZE).
 * A commit writes a complete new container of the same kind: a zip copies
 * every untouched member as stored; a v1/v2 file stays JSON (with -o
 * upgrade it becomes a zip with RLE chunks).  Zip members savefs does not
 * show are kept.  A levelpack's nested containers are opened when their
 * directory is first visited (SV_N_LAZYDIR) and held in memory; a commit
 * writes the changed ones anew into the pack, copying the rest as stored.
 */
#include "doodle_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* ---- reading a container --------------------------------------------------- */

static int add_chunk(struct drawing *d, size_t *cap, uint32_t layer, int64_t x,
		     int64_t y, int64_t bin, int64_t json, json_t *inl, const char *key)
{
	if (sv_tab_grow((void **)&d->chunks, cap, d->nchunks + 1, sizeof *d->chunks))
		return -ENOMEM;
	d->chunks[d->nchunks++] = (struct chunk){x, y, layer, bin, json, inl, key,
						 SV_NONE, SV_NONE, SV_NONE};
	return 0;
}

static int add_asset(struct drawing *d, const char *path, int64_t member, json_t *inl)
{
	if (d->nassets == d->capassets) {
		size_t nc = d->capassets ? d->capassets * 2 : 16;
		struct asset *p = realloc(d->assets, nc * sizeof *p);
		if (!p)
			return -ENOMEM;
		d->assets = p;
		d->capassets = nc;
	}
	char *s = strdup(path);
	if (!s)
		return -ENOMEM;
	d->assets[d->nassets++] = (struct asset){s, member, inl, SV_NONE};
	return 0;
}

/* Reads the layers (sizes and inline maps) of a level or doodad. */
static int read_layers(struct drawing *d, struct sv_err *err)
{
	json_t *ls = NULL;
	size_t nl = 1;
	if (d->kind == D_DOODAD) {
		ls = sv_dd_jget(d->root, "layers");
		if (!json_is_array(ls) || json_array_size(ls) == 0)
			return sv_err_set(err, -EBADMSG, "doodle: doodad.json: \"layers\" is not "
					  "a non-empty array");
		nl = json_array_size(ls);
		if (nl > 4096)
			return sv_err_set(err, -EFBIG, "doodle: doodad.json: %zu layers, more "
					  "than 4096", nl);
	}
	d->layers = calloc(nl, sizeof *d->layers);
	if (!d->layers)
		return sv_err_set(err, -ENOMEM, "out of memory");
	d->nlayers = (uint32_t)nl;
	for (size_t i = 0; i < nl; i++) {
		json_t *ch = sv_dd_jget(ls ? json_array_get(ls, i) : d->root, "chunks");
		json_t *sz = sv_dd_jget(ch, "size");
		json_int_t size = 128;
		if (sz && !json_is_integer(sz))
			return sv_err_set(err, -EBADMSG, "doodle: %s: chunk size is not an integer",
					  sv_dd_root_name(d));
		if (sz)
			size = json_integer_value(sz);
		if (size < 1 || size > SV_DOODLE_MAX_SIZE)
			return sv_err_set(err, -EBADMSG, "doodle: %s: chunk size %lld is out of "
					  "range (1..%u)", sv_dd_root_name(d), (long long)size,
					  SV_DOODLE_MAX_SIZE);
		d->layers[i].size = (uint32_t)size;
		json_t *map = sv_dd_jget(ch, "chunks");
		d->layers[i].map = json_is_object(map) ? map : NULL;
	}
	return 0;
}

/* Collects chunks (members and inline) and assets. */
static int collect(struct drawing *d, struct sv_err *err)
{
	size_t cap = 0;
	struct sv_container *c = d->c;
	for (size_t m = 0; m < d->zip.n; m++) {
		const char *name = d->zip.e[m].name;
		uint32_t layer;
		int64_t x, y;
		bool bin;
		if (m == (size_t)d->root_member) {
			d->role[m] = R_ROOT;
		} else if (sv_dd_chunk_member(name, &layer, &x, &y, &bin)) {
			if (layer >= d->nlayers) {
				sv_warn(c, "%szip member %s: no layer %u: kept, not shown",
					d->prefix, name, layer);
				continue;
			}
			if (add_chunk(d, &cap, layer, x, y, bin ? (int64_t)m : -1,
				      bin ? -1 : (int64_t)m, NULL, NULL))
				return sv_err_set(err, -ENOMEM, "out of memory");
			d->role[m] = R_CHUNK;
		} else if (!strncmp(name, "chunks/", 7) && name[strlen(name) - 1] != '/') {
			sv_warn(c, "%szip member %s is not a chunk (chunks/<layer>/<x>,<y>.bin): "
				"kept, not shown", d->prefix, name);
		} else if (!strncmp(name, "assets/", 7) && name[7] &&
			   name[strlen(name) - 1] != '/') {
			if (add_asset(d, name, (int64_t)m, NULL))
				return sv_err_set(err, -ENOMEM, "out of memory");
			d->role[m] = R_ASSET;
		}
	}
	for (uint32_t l = 0; l < d->nlayers; l++) {
		const char *k;
		json_t *v;
		json_object_foreach(d->layers[l].map, k, v) {
			int64_t x, y;
			if (!sv_doodle_parse_xy(k, &x, &y)) {
				d->bad_keys++;
				sv_warn(c, "%schunk key \"%.40s\" in layer %u is not \"x,y\": kept, "
					"not shown", d->prefix, k, l);
				continue;
			}
			if (add_chunk(d, &cap, l, x, y, -1, -1, v, k))
				return sv_err_set(err, -ENOMEM, "out of memory");
		}
	}
	if (d->nchunks)
		sv_tab_sort(d->chunks, d->nchunks, sizeof *d->chunks, sv_dd_cmp_chunk_taken);
	/* One chunk from its sources: a .bin member before a .json member
	 * before an inline chunk (the game's preference). */
	size_t w = 0;
	for (size_t i = 0; i < d->nchunks; i++) {
		struct chunk *ch = &d->chunks[i];
		if (w && !sv_dd_cmp_chunk(&d->chunks[w - 1], ch)) {
			struct chunk *keep = &d->chunks[w - 1];
			bool dup = (ch->bin >= 0 && keep->bin >= 0) ||
				   (ch->json >= 0 && keep->json >= 0) || (ch->inl && keep->inl);
			if (dup) {
				int64_t m = ch->bin >= 0 ? ch->bin : ch->json;
				sv_warn(c, "%schunk %lld,%lld of layer %u is stored twice (%s): the "
					"second copy is kept, not shown", d->prefix,
					(long long)ch->cx, (long long)ch->cy, ch->layer,
					m >= 0 ? d->zip.e[m].name : ch->inl_key);
				if (m >= 0)
					d->role[m] = R_OTHER;
				continue;
			}
			if (ch->bin >= 0)
				keep->bin = ch->bin;
			if (ch->json >= 0)
				keep->json = ch->json;
			if (ch->inl) {
				keep->inl = ch->inl;
				keep->inl_key = ch->inl_key;
			}
			continue;
		}
		d->chunks[w++] = *ch;
	}
	d->nchunks = w;
	for (size_t i = 0; i < d->nchunks; i++) {
		if (d->chunks[i].bin >= 0)
			d->role_i[d->chunks[i].bin] = (uint32_t)i;
		if (d->chunks[i].json >= 0)
			d->role_i[d->chunks[i].json] = (uint32_t)i;
	}
	/* Inline files: {"assets/...": {"data": "<base64>"}}. */
	const char *k;
	json_t *v;
	size_t members = d->nassets;
	if (members)
		qsort(d->assets, members, sizeof *d->assets, sv_dd_cmp_asset);
	json_object_foreach(sv_dd_jget(d->root, "files"), k, v) {
		json_t *data = sv_dd_jget(v, "data");
		if (!json_is_string(data) || strncmp(k, "assets/", 7) || !k[7]) {
			sv_warn(c, "%sinline file \"%.80s\" is not {\"data\": base64} under "
				"assets/: kept, not shown", d->prefix, k);
			continue;
		}
		struct asset key = {.path = (char *)k};
		if (members && bsearch(&key, d->assets, members, sizeof key, sv_dd_cmp_asset)) {
			sv_warn(c, "%sinline file \"%.80s\" is also a zip member: the member is "
				"shown", d->prefix, k);
			continue;
		}
		if (add_asset(d, k, -1, data))
			return sv_err_set(err, -ENOMEM, "out of memory");
	}
	if (d->nassets)
		qsort(d->assets, d->nassets, sizeof *d->assets, sv_dd_cmp_asset);
	for (size_t i = 0; i < d->nassets; i++)
		if (d->assets[i].member >= 0)
			d->role_i[d->assets[i].member] = (uint32_t)i;
	return 0;
}

void sv_dd_preview_geom(const struct drawing *d, uint32_t *w, uint32_t *h,
			uint64_t *scale, int64_t *x0, int64_t *y0)
{
	int64_t minx = INT64_MAX, miny = INT64_MAX, maxx = INT64_MIN, maxy = INT64_MIN;
	uint32_t size = d->layers[0].size;
	for (size_t i = 0; i < d->nchunks && d->chunks[i].layer == 0; i++) {
		const struct chunk *ch = &d->chunks[i];
		minx = ch->cx < minx ? ch->cx : minx;
		maxx = ch->cx > maxx ? ch->cx : maxx;
		miny = ch->cy < miny ? ch->cy : miny;
		maxy = ch->cy > maxy ? ch->cy : maxy;
	}
	if (minx == INT64_MAX) {
		*w = *h = 1;
		*scale = 1;
		*x0 = *y0 = 0;
		return;
	}
	/* Coordinates are int32, so these fit easily in 64 bits. */
	uint64_t W = (uint64_t)(maxx - minx + 1) * size, H = (uint64_t)(maxy - miny + 1) * size;
	uint64_t big = W > H ? W : H;
	*scale = (big + PREVIEW_MAX - 1) / PREVIEW_MAX;
	*w = (uint32_t)((W + *scale - 1) / *scale);
	*h = (uint32_t)((H + *scale - 1) / *scale);
	*x0 = minx * size;
	*y0 = miny * size;
}

/* Finds the directory for an asset path, making the missing ones; the
 * stack holds the directories of the previous (sorted) path. */
struct dirstack {
	char path[4096];
	uint32_t node[64];
	size_t len[64];
	int depth;
};

static uint32_t asset_dir(struct sv_container *c, struct dirstack *s, const char *path,
			  uint64_t key)
{
	/* path: "assets/a/b/file"; the stack's level 0 is assets/ itself. */
	const char *p = path + 7;
	int level = 0;
	size_t off = 0;
	for (;;) {
		const char *slash = strchr(p + off, '/');
		if (!slash)
			break;
		size_t end = (size_t)(slash - p);
		if (end == off) { /* an empty component */
			off++;
			continue;
		}
		if (level + 1 < s->depth && s->len[level + 1] == end &&
		    !strncmp(s->path, p, end)) {
			level++;
		} else {
			if (level + 1 >= 64 || end >= sizeof s->path)
				break;
			char name[256];
			size_t k = end - off < sizeof name - 1 ? end - off : sizeof name - 1;
			memcpy(name, p + off, k);
			name[k] = '\0';
			uint32_t n = sv_node_add(c, s->node[level], name, SV_N_DIR |
						 (sv_node(c, s->node[0])->flags & SV_N_RO), 0, key);
			if (n == SV_NONE)
				return SV_NONE;
			level++;
			memcpy(s->path, p, end);
			s->path[end] = '\0';
			s->node[level] = n;
			s->len[level] = end;
			s->depth = level + 1;
		}
		off = end + 1;
	}
	s->depth = level + 1;
	return s->node[level];
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* The size of a chunk's text grid (its palette's legend and its place
 * decide it, not its pixels). */
static uint64_t txt_size(const struct drawing *d, const struct chunk *ch)
{
	return sv_doodle_text_size_with(&d->pal, d->legend, ch->layer, ch->cx, ch->cy,
					d->layers[ch->layer].size);
}

/* Adds the tree of a level or doodad under d->dir; after a commit, `was`
 * is the drawing as it was, whose nodes are found again by number. */
static int build_drawing(struct drawing *d, const struct drawing *was, struct sv_err *err)
{
	struct sv_container *c = d->c;
	uint32_t id = d->id;
	const uint32_t rof = 0;
#define WAS(field) (was ? was->field : SV_NONE)
	d->n_assets = sv_node_again(c, WAS(n_assets), d->dir, "assets", SV_N_DIR | rof, 0,
				    KEY(id, K_ADIR, 0));
	d->n_chunks = sv_node_again(c, WAS(n_chunks), d->dir, "chunks", SV_N_DIR | rof, 0,
				    KEY(id, K_DIR, 0));
	d->n_json = sv_node_again(c, WAS(n_json), d->dir, sv_dd_root_name(d), rof, d->view_len,
				  KEY(id, K_JSON, 0));
	uint32_t pw, ph;
	uint64_t scale;
	int64_t px, py;
	sv_dd_preview_geom(d, &pw, &ph, &scale, &px, &py);
	d->n_preview = sv_node_again(c, WAS(n_preview), d->dir, "preview.png", SV_N_RO,
				     sv_png_size(pw, ph, d->pal.n), KEY(id, K_PREVIEW, 0));
	if (d->n_assets == SV_NONE || d->n_chunks == SV_NONE || d->n_json == SV_NONE ||
	    d->n_preview == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	for (uint32_t l = 0; l < d->nlayers; l++) {
		char name[16];
		snprintf(name, sizeof name, "%u", l);
		d->layers[l].dir = sv_node_again(c, was && l < was->nlayers ? was->layers[l].dir
								       : SV_NONE,
						 d->n_chunks, name,
						 SV_KIND_INDEXDIR_NODES | rof,
						 0, KEY(id, K_LAYER, l));
		if (d->layers[l].dir == SV_NONE)
			return sv_err_set(err, -ENOMEM, "out of memory");
	}
	/* A layer's chunks are listed from the chunk table, in name order (as
	 * `ls` and a shell's glob sort them in the C locale, so that `cat
	 * *.txt` reads in listing order and read-ahead can follow it), three
	 * views a chunk; a view is a node while it is used (lookup_doodle). */
	struct named *ord = NULL;
	size_t cap;
	if (sv_tab_alloc((void **)&ord, &cap, d->nchunks + 1, sizeof *ord) ||
	    sv_tab_alloc((void **)&d->ord, &cap, d->nchunks + 1, sizeof *d->ord) ||
	    sv_tab_alloc((void **)&d->rank, &cap, d->nchunks + 1, sizeof *d->rank)) {
		sv_tab_free(ord);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < d->nchunks; i++) {
		ord[i].i = (uint32_t)i;
		ord[i].layer = d->chunks[i].layer;
		ord[i].x = d->chunks[i].cx;
		ord[i].y = d->chunks[i].cy;
		sv_dd_xy_name(ord[i].name, d->chunks[i].cx, d->chunks[i].cy);
	}
	if (d->nchunks)
		sv_tab_sort(ord, d->nchunks, sizeof *ord, sv_dd_cmp_named);
	for (uint32_t l = 0; l < d->nlayers; l++)
		d->layers[l].lo = d->layers[l].hi = 0;
	for (size_t o = 0; o < d->nchunks; o++) {
		d->ord[o] = (struct sv_dd_xy){ord[o].x, ord[o].y};
		d->rank[ord[o].i] = (uint32_t)o;
		struct layer *ly = &d->layers[ord[o].layer];
		if (ly->lo == ly->hi)
			ly->lo = (uint32_t)o;
		ly->hi = (uint32_t)o + 1;
	}
	sv_tab_free(ord);
	struct dirstack *s = calloc(1, sizeof *s);
	if (!s)
		return sv_err_set(err, -ENOMEM, "out of memory");
	s->node[0] = d->n_assets;
	s->len[0] = 0;
	s->depth = 1;
	for (size_t i = 0; i < d->nassets; i++) {
		struct asset *a = &d->assets[i];
		uint32_t dir = asset_dir(c, s, a->path, KEY(id, K_ADIR, 0));
		uint64_t size = 0;
		uint32_t flags = rof;
		if (a->member >= 0) {
			size = d->zip.e[a->member].usize;
		} else {
			const char *t = json_string_value(a->inl);
			int64_t n = sv_base64_decoded_size(t, json_string_length(a->inl));
			if (n < 0) {
				flags |= SV_N_BAD;
				sv_warn(c, "%s%s: its inline data is not base64", d->prefix, a->path);
			}
			size = n < 0 ? 0 : (uint64_t)n;
		}
		struct asset akey = {.path = a->path};
		const struct asset *old =
			was && was->nassets ? bsearch(&akey, was->assets, was->nassets,
						      sizeof akey, sv_dd_cmp_asset)
					    : NULL;
		a->node = dir == SV_NONE ? SV_NONE
					  : sv_node_again(c, old ? old->node : SV_NONE, dir,
							  base_name(a->path), flags, size,
							  KEY(id, K_ASSET, i));
		if (a->node == SV_NONE) {
			free(s);
			return sv_err_set(err, -ENOMEM, "out of memory");
		}
	}
	free(s);
	return 0;
#undef WAS
}

/* The views of a chunk, in listing order. */
static const char *const view_ext[3] = {"bin", "png", "txt"};

/* The drawing and layer whose chunks directory dir is, or NULL. */
static struct drawing *layer_of(struct sv_container *c, uint32_t dir, uint32_t *l)
{
	const struct sv_node *n = sv_node(c, dir);
	struct doodle *dd = sv_container_priv(c);
	if (!n || !dd || KEY_KIND(n->key) != K_LAYER || KEY_D(n->key) >= dd->n)
		return NULL;
	struct drawing *d = dd->d[KEY_D(n->key)];
	*l = KEY_I(n->key);
	return *l < d->nlayers && d->layers[*l].dir == dir ? d : NULL;
}

static int list_doodle(struct sv_container *c, uint32_t dir, uint64_t pos, char name[256],
		       bool *is_dir, uint64_t *at)
{
	uint32_t l;
	struct drawing *d = layer_of(c, dir, &l);
	*is_dir = false;
	if (!d || pos / 3 >= d->layers[l].hi - d->layers[l].lo)
		return 1;
	const struct sv_dd_xy *o = &d->ord[d->layers[l].lo + pos / 3];
	size_t k = sv_dd_xy_name(name, o->x, o->y);
	snprintf(name + k, 256 - k, ".%s", view_ext[pos % 3]);
	*at = pos;
	return 0;
}

static void count_doodle(struct sv_container *c, uint32_t dir, uint64_t *files, uint64_t *dirs)
{
	uint32_t l;
	struct drawing *d = layer_of(c, dir, &l);
	if (d)
		*files += 3 * (uint64_t)(d->layers[l].hi - d->layers[l].lo);
}

/* A view of a chunk, "<x>,<y>.bin|png|txt" as the listing spells it: its
 * node, with the size and key the tree had for it when every view was
 * made at the open. */
static int lookup_doodle(struct sv_container *c, uint32_t dir, const char *name,
			 struct sv_err *err)
{
	uint32_t l;
	struct drawing *d = layer_of(c, dir, &l);
	const char *dot = name ? strrchr(name, '.') : NULL;
	if (!d || !dot || dot == name || (size_t)(dot - name) >= 48)
		return -ENOENT;
	int view = -1;
	for (int v = 0; v < 3; v++)
		if (!strcmp(dot + 1, view_ext[v]))
			view = v;
	char xy[48], canon[48];
	memcpy(xy, name, (size_t)(dot - name));
	xy[dot - name] = '\0';
	int64_t x, y;
	if (view < 0 || !sv_doodle_parse_xy(xy, &x, &y))
		return -ENOENT;
	sv_dd_xy_name(canon, x, y);
	struct chunk *ch = strcmp(canon, xy) ? NULL : sv_dd_find_chunk(d, l, x, y);
	if (!ch)
		return -ENOENT;
	uint32_t i = (uint32_t)(ch - d->chunks), size = d->layers[l].size, id = d->id;
	uint32_t n;
	if (view == 0)
		n = ch->bin >= 0 ? sv_node_add(c, dir, name, 0, d->zip.e[ch->bin].usize,
					       KEY(id, K_BIN, i))
				 : sv_node_add(c, dir, name, SV_N_LAZYSIZE, 0, KEY(id, K_BIN, i));
	else if (view == 1)
		n = sv_node_add(c, dir, name, SV_N_RO, sv_png_size(size, size, d->pal.n),
				KEY(id, K_PNG, i));
	else
		n = sv_node_add(c, dir, name, 0, txt_size(d, ch), KEY(id, K_TXT, i));
	if (n == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	*(view == 0 ? &ch->n_bin : view == 1 ? &ch->n_png : &ch->n_txt) = n;
	sv_node_listed(c, n, 3 * (uint64_t)(d->rank[i] - d->layers[l].lo) + (uint64_t)view);
	return 0;
}

static int build_pack(struct drawing *d, struct sv_err *err);

/*
 * Reads a container (the file itself when d->mem is NULL, else d->mem)
 * and adds its tree under d->dir.  After a commit that wrote a zip, d->zip
 * is its directory as written (`zipped`), and `was` the drawing before.
 */
static int open_drawing(struct drawing *d, bool zipped, const struct drawing *was,
			struct sv_err *err)
{
	uint8_t head[4] = {0};
	size_t hn = d->size < 4 ? (size_t)d->size : 4;
	int rc = zipped ? 0 : sv_dd_src_read(d, 0, head, hn, err);
	if (rc)
		return rc;
	struct sv_blob *whole = NULL;
	if (zipped || (hn >= 4 && !memcmp(head, "PK\3\4", 4))) {
		d->ctype = C_ZIP;
		rc = zipped ? 0 : sv_zip_open(&d->zip, sv_dd_src_read, d, d->size, MAX_MEMBERS, err);
		if (rc) {
			char m[SV_ERR_MAX];
			snprintf(m, sizeof m, "%s", err->msg);
			return sv_err_set(err, rc, "doodle: %s", m);
		}
		size_t cap;
		if (sv_tab_alloc((void **)&d->role, &cap, d->zip.n + 1, 1) ||
		    sv_tab_alloc((void **)&d->role_i, &cap, d->zip.n + 1, sizeof *d->role_i))
			return sv_err_set(err, -ENOMEM, "out of memory");
		int64_t lv = -1, dd = -1, ix = -1;
		for (size_t m = 0; m < d->zip.n; m++) {
			const char *n = d->zip.e[m].name;
			if (!strcmp(n, "level.json") && lv < 0)
				lv = (int64_t)m;
			else if (!strcmp(n, "doodad.json") && dd < 0)
				dd = (int64_t)m;
			else if (!strcmp(n, "index.json") && ix < 0)
				ix = (int64_t)m;
		}
		d->kind = lv >= 0 ? D_LEVEL : dd >= 0 ? D_DOODAD : ix >= 0 ? D_PACK : 0;
		d->root_member = lv >= 0 ? lv : dd >= 0 ? dd : ix;
		if (!d->kind)
			return sv_err_set(err, -EMEDIUMTYPE, "doodle: zip holds no level.json, "
					  "doodad.json or index.json: not a drawing");
		rc = sv_dd_member_blob(d, d->root_member, &whole, err);
		if (rc) {
			char m[SV_ERR_MAX];
			snprintf(m, sizeof m, "%s", err->msg);
			return sv_err_set(err, rc == -EFBIG ? rc : -EBADMSG, "doodle: %s", m);
		}
		rc = sv_dd_parse_json(whole->data, whole->len, sv_dd_root_name(d), &d->root, sv_dd_string_cap(d->c), err);
		sv_blob_unref(whole);
		if (rc)
			return rc;
	} else {
		if (d->size > sv_dd_max_decode(d))
			return sv_err_set(err, -EFBIG, "doodle: %llu bytes, more than the decode "
					  "limit (-o maxdecode)", (unsigned long long)d->size);
		whole = sv_blob_new((size_t)d->size);
		if (!whole)
			return sv_err_set(err, -ENOMEM, "out of memory");
		rc = sv_dd_src_read(d, 0, whole->data, whole->len, err);
		if (!rc && hn >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
			d->ctype = C_GZIP;
			rc = sv_dd_parse_json_gz(whole->data, whole->len, sv_dd_max_decode(d), sv_dd_string_cap(d->c),
					   &d->root, err);
		} else if (!rc) {
			d->ctype = C_JSON;
			rc = sv_dd_parse_json(whole->data, whole->len, "JSON", &d->root, sv_dd_string_cap(d->c), err);
		}
		sv_blob_unref(whole);
		if (rc)
			return rc;
		json_t *ls = sv_dd_jget(d->root, "layers");
		d->kind = json_is_array(ls) && !sv_dd_jget(d->root, "chunks") ? D_DOODAD : D_LEVEL;
		/* What the game writes for every level (chunks) or doodad
		 * (layers): a JSON file without either is someone else's. */
		if (!json_is_object(d->root) || !json_is_number(sv_dd_jget(d->root, "version")) ||
		    (!json_is_object(sv_dd_jget(d->root, "chunks")) && !json_is_array(ls)))
			return sv_err_set(err, -EMEDIUMTYPE, "doodle: the root JSON has no "
					  "\"version\" with \"chunks\" or \"layers\": not a "
					  "drawing");
	}
	if (sv_dd_render_view(d))
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (d->kind == D_PACK)
		return build_pack(d, err);
	unsigned bad_colours = 0;
	rc = sv_doodle_palette_from_json(sv_dd_jget(d->root, "palette"), &d->pal, &bad_colours, err);
	if (rc) {
		char m[SV_ERR_MAX];
		snprintf(m, sizeof m, "%s", err->msg);
		return sv_err_set(err, rc, "doodle: %s: palette: %s", sv_dd_root_name(d), m);
	}
	if (bad_colours)
		sv_warn(d->c, "%s%s: %u palette colour(s) do not parse: shown black", d->prefix,
			sv_dd_root_name(d), bad_colours);
	d->legend = sv_doodle_legend_size(&d->pal);
	rc = read_layers(d, err);
	if (!rc)
		rc = collect(d, err);
	if (!rc)
		rc = build_drawing(d, was, err);
	return rc;
}

static struct drawing *new_drawing(struct sv_container *c, const char *prefix)
{
	struct doodle *dd = sv_container_priv(c);
	struct drawing *d = calloc(1, sizeof *d);
	struct drawing **v = realloc(dd->d, (dd->n + 1) * sizeof *v);
	if (v)
		dd->d = v;
	if (!d || !v || !(d->prefix = strdup(prefix))) {
		free(d);
		return NULL;
	}
	d->id = (uint32_t)dd->n;
	d->c = c;
	d->root_member = -1;
	dd->d[dd->n++] = d;
	return d;
}

/* A levelpack: index.json, levels/<name>/ and doodads/<name>/. */
static int build_pack(struct drawing *d, struct sv_err *err)
{
	struct sv_container *c = d->c;
	d->n_json = sv_node_add(c, d->dir, "index.json", SV_N_RO, d->view_len,
				KEY(d->id, K_JSON, 0));
	d->nest = calloc(d->zip.n + 1, sizeof *d->nest);
	if (!d->nest || d->n_json == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	uint32_t dirs[2] = {SV_NONE, SV_NONE};
	static const char *const top[2] = {"levels", "doodads"};
	for (int t = 0; t < 2; t++) {
		dirs[t] = sv_node_add(c, d->dir, top[t], SV_N_DIR | SV_N_RO, 0, KEY(d->id, K_DIR, 0));
		if (dirs[t] == SV_NONE)
			return sv_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t m = 0; m < d->zip.n; m++) {
		const char *name = d->zip.e[m].name;
		int t = !strncmp(name, "levels/", 7) ? 0 : !strncmp(name, "doodads/", 8) ? 1 : -1;
		if (t < 0 || (int64_t)m == d->root_member)
			continue;
		const char *file = name + strlen(top[t]) + 1;
		if (!*file || strchr(file, '/')) {
			sv_warn(c, "levelpack member %s is not a file of %s/: not shown", name, top[t]);
			continue;
		}
		char stem[256];
		snprintf(stem, sizeof stem, "%s", file);
		char *dot = strrchr(stem, '.');
		if (dot && dot != stem)
			*dot = '\0';
		size_t k = d->nnest++;
		d->nest[k] = (struct nested){(int64_t)m, SV_NONE, -1};
		d->role[m] = R_NESTED;
		d->role_i[m] = (uint32_t)k;
		uint32_t n = sv_node_add(c, dirs[t], stem, SV_KIND_LAZYDIR, 0,
					 KEY(d->id, K_NESTED, k));
		if (n == SV_NONE)
			return sv_err_set(err, -ENOMEM, "out of memory");
		d->nest[k].node = n;
	}
	return 0;
}

static int expand_doodle(struct sv_container *c, uint32_t dir, struct sv_err *err)
{
	struct doodle *dd = sv_container_priv(c);
	uint64_t key = sv_node(c, dir)->key;
	if (KEY_KIND(key) != K_NESTED || KEY_D(key) >= dd->n)
		return 0;
	struct drawing *pack = dd->d[KEY_D(key)];
	struct nested *ne = &pack->nest[KEY_I(key)];
	if (ne->drawing >= 0)
		return 0;
	struct sv_blob *b = NULL;
	int rc = sv_dd_member_blob(pack, ne->member, &b, err);
	if (rc)
		return rc;
	char prefix[4096];
	char path[4096];
	snprintf(path, sizeof path, "%s", pack->zip.e[ne->member].name);
	char *slash = strchr(path, '/');
	if (slash)
		slash[0] = '\0';
	snprintf(prefix, sizeof prefix, "%.1000s%.1000s/%.1000s/", pack->prefix, path,
		 sv_node(c, dir)->name);
	struct drawing *d = new_drawing(c, prefix);
	if (!d) {
		sv_blob_unref(b);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	d->mem = b;
	d->size = b->len;
	d->dir = dir;
	rc = open_drawing(d, false, NULL, err);
	if (!rc && d->kind == D_PACK)
		rc = sv_err_set(err, -EBADMSG, "doodle: a levelpack inside a levelpack");
	/* A drawing that failed is never written: the pack keeps its member as
	 * stored, and the directory reads EIO. */
	if (!rc)
		ne->drawing = (int32_t)d->id;
	return rc;
}

static int open_doodle(struct sv_container *c, struct sv_err *err)
{
	struct doodle *dd = calloc(1, sizeof *dd);
	if (!dd)
		return sv_err_set(err, -ENOMEM, "out of memory");
	sv_container_set_priv(c, dd);
	struct drawing *d = new_drawing(c, "");
	if (!d)
		return sv_err_set(err, -ENOMEM, "out of memory");
	d->size = sv_container_size(c);
	d->dir = SV_ROOT;
	return open_drawing(d, false, NULL, err);
}

/*
 * After a commit that only replaced chunk members (same members, same
 * names, in the same order): the drawing takes the zip's new directory,
 * the views of those chunks their new sizes, and every other node stays
 * as it was.  1 if the commit was not of that kind.
 */
static int update_chunks(struct sv_container *c, struct doodle *dd)
{
	struct drawing *d = dd->d[0];
	const struct sv_zip *z = &dd->next;
	if (!dd->next_only_chunks || d->ctype != C_ZIP || z->n != d->zip.n)
		return 1;
	for (size_t m = 0; m < z->n; m++)
		if (strcmp(z->e[m].name, d->zip.e[m].name))
			return 1;
	/* Each replaced chunk's views that are nodes (a layer's chunks are an
	 * index directory) are looked up again by the core, with their new
	 * sizes; the commit touched them. */
	for (size_t k = 0; k < dd->next_nchunks; k++) {
		uint32_t i = dd->next_chunks[k];
		const struct chunk *ch = i < d->nchunks ? &d->chunks[i] : NULL;
		if (!ch || ch->bin < 0 || ch->json >= 0 || ch->inl)
			return 1;
	}
	if (sv_node_keep_rest(c))
		return 1;
	sv_zip_fini(&d->zip);
	d->zip = dd->next;
	d->size = dd->next_size;
	dd->has_next = false;
	sv_dd_forget_next(dd);
	return 0;
}

/*
 * After a commit: a level or doodad whose commit wrote a zip is read from
 * the directory it wrote (no read of the new file's index) and its tree
 * updated node by node from the one before; anything else (a levelpack, a
 * JSON container) is read again whole.
 */
static int rebuild_doodle(struct sv_container *c, struct sv_err *err)
{
	struct doodle *dd = sv_container_priv(c);
	if (!dd || !dd->has_next || dd->n != 1 || dd->d[0]->kind == D_PACK) {
		sv_dd_close_doodle(c);
		return open_doodle(c, err);
	}
	if (!update_chunks(c, dd))
		return 0;
	struct drawing *was = dd->d[0];
	dd->n = 0;
	struct drawing *d = new_drawing(c, "");
	if (!d) {
		dd->n = 1;
		sv_dd_close_doodle(c);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	d->size = dd->next_size;
	d->dir = SV_ROOT;
	d->zip = dd->next;
	dd->has_next = false;
	sv_dd_forget_next(dd);
	int rc = open_drawing(d, true, was, err);
	sv_dd_free_drawing(was);
	return rc;
}

static void info_doodle(struct sv_container *c, void *obj)
{
	struct doodle *dd = sv_container_priv(c);
	struct drawing *d = dd->d[0];
	json_t *o = obj;
	json_object_set_new(o, "format_version",
			    json_string(d->ctype == C_JSON ? "v1 (JSON)"
					: d->ctype == C_GZIP ? "v2 (gzip JSON)"
							     : "zip (v3/v3.1/v4)"));
	json_object_set_new(o, "kind", json_string(d->kind == D_LEVEL ? "level"
						   : d->kind == D_DOODAD ? "doodad"
									 : "levelpack"));
	json_t *n = json_object();
	if (d->kind == D_PACK) {
		json_object_set_new(n, "nested", json_integer((json_int_t)d->nnest));
	} else {
		size_t bin = 0, js = 0, inl = 0;
		for (size_t i = 0; i < d->nchunks; i++) {
			bin += d->chunks[i].bin >= 0;
			js += d->chunks[i].bin < 0 && d->chunks[i].json >= 0;
			inl += d->chunks[i].bin < 0 && d->chunks[i].json < 0;
		}
		json_object_set_new(n, "layers", json_integer(d->nlayers));
		json_object_set_new(n, "chunk_size", json_integer(d->layers[0].size));
		json_object_set_new(n, "chunks", json_integer((json_int_t)d->nchunks));
		json_object_set_new(n, "chunks_bin", json_integer((json_int_t)bin));
		json_object_set_new(n, "chunks_json_member", json_integer((json_int_t)js));
		json_object_set_new(n, "chunks_inline", json_integer((json_int_t)inl));
		json_object_set_new(n, "palette", json_integer(d->pal.n));
		json_object_set_new(n, "assets", json_integer((json_int_t)d->nassets));
	}
	json_object_set_new(n, "zip_members", json_integer((json_int_t)d->zip.n));
	json_object_set_new(o, "counts", n);
}

static const char *const names_doodle[] = {"*.level", "*.doodad", "*.levelpack", NULL};

static const struct sv_format_edits doodle_edits = {
	.commit_file = SV_COMMIT_REWRITE,
	.check = sv_dd_check,
	.create = sv_dd_create,
	.unlink = sv_dd_unlink,
	.commit = sv_dd_commit,
};

static const struct sv_format_dirs doodle_dirs = {
	.expand = expand_doodle,
	.lookup = lookup_doodle,
	.list = list_doodle,
	.count = count_doodle,
};

const struct sv_format sv_fmt_doodle = {
	.name = "doodle",
	.description = "Sketchy Maze level, doodad or levelpack (.level, .doodad, "
		       ".levelpack: JSON, gzip JSON or zip)",
	.names = names_doodle,
	.previews = (const char *const[]){"preview.png", "levels/*/preview.png",
					  "doodads/*/preview.png", NULL},
	.probe = sv_dd_probe_doodle,
	.probe_weak = true,
	.open = open_doodle,
	.close = sv_dd_close_doodle,
	.load = sv_dd_load,
	.rebuild = rebuild_doodle,
	.info = info_doodle,
	.edits = &doodle_edits,
	.dirs = &doodle_dirs,
};
