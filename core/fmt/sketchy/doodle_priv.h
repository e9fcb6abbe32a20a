/*
 * doodle_priv.h - what the Sketchy Maze format's files share: a drawing
 * as read (its zip directory, chunks, assets, nested drawings), node keys,
 * and the helpers one file offers the others.  doodle.c reads containers
 * and builds the tree, doodle_load.c makes a node's bytes on demand,
 * doodle_edit.c checks edits and writes the new container.
 */
#ifndef SV_DOODLE_PRIV_H
#define SV_DOODLE_PRIV_H

#include "doodle.h"
#include "rd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

enum { C_JSON = 1, C_GZIP, C_ZIP };
enum { D_LEVEL = 1, D_DOODAD, D_PACK };
enum { K_DIR = 0, K_JSON, K_TXT, K_PNG, K_BIN, K_ASSET, K_PREVIEW, K_NESTED, K_LAYER,
       K_ADIR };

/* A node's key: drawing number, kind, index within the drawing. */
#define KEY(d, kind, i) ((uint64_t)(d) << 40 | (uint64_t)(kind) << 32 | (uint32_t)(i))
#define KEY_D(k) ((uint32_t)((k) >> 40))
#define KEY_KIND(k) ((unsigned)((k) >> 32) & 0xff)
#define KEY_I(k) ((uint32_t)(k))

#define PREVIEW_MAX 2048u
#define MAX_MEMBERS 10000000u

/* What a zip member is to the drawing. */
enum { R_OTHER = 0, R_ROOT, R_CHUNK, R_ASSET, R_NESTED };

struct chunk {
	int64_t cx, cy;
	uint32_t layer;
	int64_t bin, json;    /* zip member holding it, or -1 */
	json_t *inl;          /* inline JSON chunk (borrowed from root), or NULL */
	const char *inl_key;  /* its key in the inline map */
	uint32_t n_bin, n_png, n_txt;
};

struct asset {
	char *path;           /* owned: "assets/..." */
	int64_t member;       /* zip member, or -1 */
	json_t *inl;          /* inline base64 string (borrowed), or NULL */
	uint32_t node;
};

struct layer {
	uint32_t size;
	uint32_t dir;         /* node of chunks/<layer>/ */
	json_t *map;          /* inline chunk map (borrowed), or NULL */
	uint32_t lo, hi;      /* its chunks' span of the drawing's ord */
};

struct nested {
	int64_t member;
	uint32_t node;
	int32_t drawing;      /* -1 until its directory is visited */
};

struct drawing {
	uint32_t id;
	struct sv_container *c;
	struct sv_blob *mem;  /* nested: the container's bytes; else NULL */
	uint64_t size;
	int ctype, kind;
	char *prefix;         /* owned: "" or "levels/<name>/" */
	json_t *root;         /* the root JSON as stored */
	char *view;           /* owned: level.json / doodad.json as shown */
	size_t view_len;
	struct sv_zip zip;
	uint8_t *role;        /* per member: R_* */
	uint32_t *role_i;     /* per member: index into chunks/assets/nested */
	int64_t root_member;
	struct sv_palette pal;
	uint64_t legend;      /* bytes of the palette's legend in a text grid */
	struct layer *layers;
	uint32_t nlayers;
	struct chunk *chunks;
	size_t nchunks;
	struct sv_dd_xy {
		int64_t x, y;
	} *ord;               /* chunks' places in listing order (layer, name):
			       * a listing reads it in order, not the chunk
			       * table at random */
	uint32_t *rank;       /* per chunk: its place in ord */
	struct asset *assets;
	size_t nassets, capassets;
	struct nested *nest;
	size_t nnest;
	uint32_t dir, n_json, n_preview, n_chunks, n_assets;
	uint64_t bad_keys;    /* inline chunk keys that are not "x,y" */
};

struct doodle {
	struct drawing **d;
	size_t n;
	/* The directory of the zip the last commit wrote (the top drawing
	 * only), for the re-index once the new file is in place. */
	struct sv_zip next;
	uint64_t next_size;
	bool has_next;
	/* The commit replaced these chunks' members (by index) and changed
	 * nothing else: the tree is updated, not built again. */
	bool next_only_chunks;
	uint32_t *next_chunks;
	size_t next_nchunks;
};

/* ---- shared between the format's files ---- */

int sv_dd_check(struct sv_container *c, uint32_t node, const uint8_t *p,
		size_t n, struct sv_err *err);
bool sv_dd_chunk_file(const char *name, int64_t *x, int64_t *y, bool *txt);
int sv_dd_chunk_grid(struct drawing *d, const struct chunk *ch, struct sv_doodle_grid *g,
		     struct sv_err *err);
int sv_dd_cmp_asset(const void *a, const void *b);
int sv_dd_commit(struct sv_container *c, int fd, struct sv_err *err);
int sv_dd_create(struct sv_container *c, uint32_t parent, const char *name,
		 struct sv_err *err);
struct chunk *sv_dd_find_chunk(const struct drawing *d, uint32_t layer, int64_t x, int64_t y);
json_t *sv_dd_jget(json_t *o, const char *key);
int sv_dd_jset(json_t *o, const char *key, json_t *v);
int sv_dd_json_to_buf(json_t *j, size_t flags, struct sv_buf *b);
int sv_dd_load(struct sv_container *c, uint32_t node, struct sv_blob **out,
	       struct sv_err *err);
uint64_t sv_dd_max_decode(struct drawing *d);
int sv_dd_member_blob(struct drawing *d, int64_t m, struct sv_blob **out,
		      struct sv_err *err);
struct drawing *sv_dd_node_drawing(struct sv_container *c, uint64_t key);
int sv_dd_parse_json(const uint8_t *p, size_t n, const char *what, json_t **out,
		     uint64_t cap, struct sv_err *err);
void sv_dd_preview_geom(const struct drawing *d, uint32_t *w, uint32_t *h,
			uint64_t *scale, int64_t *x0, int64_t *y0);
const char *sv_dd_root_name(const struct drawing *d);
int sv_dd_src_read(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err);
uint64_t sv_dd_string_cap(struct sv_container *c);
json_t *sv_dd_strip_root(json_t *root, int kind);
int sv_dd_unlink(struct sv_container *c, uint32_t node, struct sv_err *err);
void sv_dd_forget_next(struct doodle *dd);


struct named {
	int64_t x, y;
	uint32_t i, layer;
	char name[48];
};

/* ---- shared between doodle.c and doodle_json.c ---- */

bool sv_dd_chunk_member(const char *name, uint32_t *layer, int64_t *x, int64_t *y,
			bool *bin);
int sv_dd_cmp_chunk(const void *a, const void *b);
int sv_dd_cmp_chunk_taken(const void *a, const void *b);
int sv_dd_cmp_named(const void *a, const void *b);
int sv_dd_parse_json_gz(const uint8_t *p, size_t n, uint64_t max, uint64_t cap,
			json_t **out, struct sv_err *err);
int sv_dd_probe_doodle(const uint8_t *h, size_t n);
int sv_dd_render_view(struct drawing *d);
size_t sv_dd_xy_name(char *buf, int64_t x, int64_t y);
void sv_dd_close_doodle(struct sv_container *c);
void sv_dd_free_drawing(struct drawing *d);


/* ---- shared between doodle_edit.c and doodle_commit.c ---- */

int sv_dd_check_root(struct drawing *d, const uint8_t *p, size_t n, json_t **out,
		     struct sv_err *err);
int sv_dd_grid_from_edit(struct drawing *d, uint32_t layer, int64_t x, int64_t y,
			 bool txt, const uint8_t *p, size_t n, struct sv_doodle_grid *g,
			 struct sv_err *err);

#endif
