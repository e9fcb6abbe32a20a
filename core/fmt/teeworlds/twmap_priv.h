/*
 * twmap_priv.h - what the map view's files share: node kinds, the model of
 * a map read from its items (twmap.c), the grids' encodings, and the item
 * readers.  twmap.c reads the items and builds the tree, twmap_view.c
 * makes each file's content, twmap_edit.c writes edits back.
 */
#ifndef SV_TWMAP_PRIV_H
#define SV_TWMAP_PRIV_H

#include "twmap.h"

#include "rd.h"

enum {
	K_MDIR = 16, K_INFO, K_SETTINGS, K_IMAGES, K_IMAGE, K_SOUND, K_ENV, K_GROUP,
	K_LAYER, K_GRID, K_QUADS, K_SOURCES, K_GAMEPNG,
};
/* K_GRID nodes: index = layer << 3 | grid. */

enum { T_VERSION, T_INFO, T_IMAGE, T_ENV, T_GROUP, T_LAYER, T_POINTS, T_SOUND, NT };

enum { G_TILES, G_TELE, G_SPEEDUP, G_SWITCH, G_TUNE, NGRID };

struct sv_twm_grid {
	const char *file;
	int size;       /* bytes a tile */
	int cw;         /* characters a cell */
	const char *cell;
};
/* Each grid's file, tile size, cell width and legend. */
extern const struct sv_twm_grid sv_twm_grids[NGRID];

enum lkind {
	L_TILES, L_GAME, L_TELE, L_SPEEDUP, L_FRONT, L_SWITCH, L_TUNE, L_QUADS, L_SOUNDS,
	L_OLDSOUNDS, L_OTHER,
};
/* Each kind's name in layer.json, and the name DDNet gives a physics
 * layer (ours for a layer without a name). */
extern const char *const sv_twm_kind_names[];
extern const char *const sv_twm_kind_titles[];
/* Envelope curves by number; info.json's fields in item order. */
extern const char *const sv_twm_curve_names[6];
extern const char *const sv_twm_info_keys[4];
/* Where DDNet keeps each physics data index, after the name (v3+) or
 * right after data (v2): tele, speedup, front, switch, tune. */
enum { P_TELE, P_SPEEDUP, P_FRONT, P_SWITCH, P_TUNE, NPHYS };

struct image {
	int32_t item, version, w, h, external, name_data, data, format;
	char *name;
	char *bad;
	uint32_t node;
};

struct sound {
	int32_t item, version, external, name_data, data;
	char *name;
	char *bad;
	uint32_t node;
};

struct env {
	int32_t item, version, channels, start, num, sync;
	char name[40];
	char *bad;
	uint32_t node;
};

struct group {
	int32_t item, version, start, num;
	char name[16];
	char *bad;
	uint32_t dir, node;
};

struct layer {
	int32_t item, group;
	enum lkind kind;
	int32_t ltype, lflags;
	int32_t tver, w, h, tflags, image, data;  /* tile layers */
	int32_t phys[NPHYS];   /* as DDNet reads them; -1 absent */
	int phys_at;           /* int offset of the physics indices, 0: none */
	int32_t grid[NGRID];   /* data index of each grid shown, -1 none */
	int32_t count, qdata;  /* quads and sounds */
	bool has_name;
	char name[16];
	char *bad;             /* the item cannot be read */
	char *gbad;            /* its tile data cannot be read */
	char dname[80];
	uint32_t dir, node, gnode[NGRID], lnode;
};

struct twm {
	struct image *img;
	struct sound *snd;
	struct env *env;
	struct group *grp;
	struct layer *lay;
	int32_t nimg, nsnd, nenv, ngrp, nlay;
	int32_t info;          /* item index, -1 */
	char *info_bad;
	int32_t points, bez;   /* item indices, -1 */
	int point_ints;        /* 6, or 22 with Teeworlds beziers */
	int32_t npoints;
	bool bez_ok;           /* DDNet's bezier item matches the points */
	int32_t game, front;   /* layer indices, -1 */
	int ndig_img, ndig_snd, ndig_env, ndig_grp, ndig_lay;
	uint32_t dir, info_node, settings_node, game_node, images_node;
	int32_t *of[NT];       /* items of each map type, file order */
	int32_t nof[NT];
};

/* ---- item readers (every read bounded by the item's length) ----------- */

static inline int32_t geti(const struct df *d, int32_t it, int k)
{
	if (it < 0 || k < 0 || (uint32_t)k >= d->items[it].len / 4)
		return 0;
	const uint8_t *p = d->items_sec + d->items[it].off + 4 * (size_t)k;
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

static inline int nints(const struct df *d, int32_t it)
{
	return it < 0 ? 0 : (int)(d->items[it].len / 4);
}

static inline int32_t rd32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

static inline void wr32(uint8_t *p, int32_t v)
{
	sv_put_u32le(p, (uint32_t)v);
}

/* Packs s into n ints; -EINVAL if it does not fit (4n - 1 bytes). */
int sv_twm_pack_name(const char *s, int32_t *v, int n);
/* A C string in data item i (its last byte must be NUL, as DDNet's
 * GetDataString asks); *out NULL for i == -1.  Caller frees *out. */
int sv_twm_data_string(struct sv_container *c, const struct df *d, int32_t i, char **out,
		       struct sv_err *err);
/* Records why an item cannot be read (the first reason only) and warns. */
int sv_twm_bad(struct sv_container *c, char **slot, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Expands version 4 tile runs (each stored tile stands for skip + 1) from
 * src[0..n) into out[0..tiles) as plain tiles (skip and padding 0), as
 * DDNet's ExtractTiles does: the last run may overshoot the end.  *used:
 * stored tiles read; *made: tiles made; *pad_at: the first stored tile
 * read whose padding is set (SIZE_MAX: none). */
void sv_twm_expand_runs(const uint8_t *src, size_t n, uint8_t *out, size_t tiles, size_t *used,
			size_t *made, size_t *pad_at);
/* The "#" lines of layer l's grid g (its size without them: h rows of
 * w * (cw + 1) bytes). */
uint64_t sv_twm_grid_header(const struct twm *m, const struct layer *l, int g, char *buf,
			    size_t cap);


/* One commit's work: the overrides so far, and where to say what failed. */
struct twm_work {
	struct sv_container *c;
	const struct df *d;
	const struct twm *m;
	struct sv_twm_out *o;
	struct sv_err *err;
	const char *view;   /* the file being applied, for messages */
};

/* ---- shared between twmap_edit.c and twmap_grid.c ---- */

int sv_tw_apply_envs(struct twm_work *w, const uint8_t *const *ep, const size_t *el);
int sv_tw_apply_grid(struct twm_work *w, int32_t k, int g, const uint8_t *p, size_t len);
int sv_tw_apply_layer(struct twm_work *w, int32_t k, const uint8_t *p, size_t len);
int sv_tw_apply_list(struct twm_work *w, int32_t k, const uint8_t *p, size_t len);
int sv_tw_data_get(struct twm_work *w, int32_t i, struct sv_blob **out);
int sv_tw_data_put(struct twm_work *w, int32_t i, const void *p, size_t n, int32_t *added);
int sv_tw_fail(struct twm_work *w, const char *fmt, ...);
int sv_tw_get_bool(struct twm_work *w, json_t *o, const char *key, int32_t *v);
int sv_tw_get_int(struct twm_work *w, json_t *o, const char *key, int64_t lo, int64_t hi, int32_t *v,
		  bool need);
int sv_tw_get_name(struct twm_work *w, json_t *o, int n, int32_t *v, bool need, const char *cur);
int sv_tw_get_vec(struct twm_work *w, json_t *j, const char *what, int n, bool fixed, int32_t *v);
int sv_tw_item_set(struct twm_work *w, int32_t it, int k, int32_t v);
int sv_tw_nomem(struct twm_work *w);
int sv_tw_only_keys(struct twm_work *w, json_t *o, const char *const *keys, const char *what);
int sv_tw_parse_json(struct twm_work *w, const uint8_t *p, size_t len, json_t **out);
int sv_tw_set_field(struct twm_work *w, json_t *o, const char *key, int32_t it, int k, int64_t lo,
		    int64_t hi);
int sv_tw_to_fx(struct twm_work *w, json_t *j, const char *what, int32_t *v);
int32_t sv_tw_item_get(struct twm_work *w, int32_t it, int k);

#endif
