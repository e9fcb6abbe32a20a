/*
 * doodle_commit.c - a Sketchy Maze drawing written again in its own
 * encoding (JSON, gzip JSON or zip): unchanged members copied as stored,
 * chunks written as v4 RLE, the root JSON as the game marshals it.
 */
#include "doodle_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* ---- commit ---------------------------------------------------------------- */

enum { S_KEEP = 0, S_REPLACE, S_GONE };

struct newchunk {
	uint32_t layer;
	int64_t x, y;
	struct sv_doodle_grid g;
};

struct newasset {
	char *path;                  /* owned */
	const struct sv_buf *data;   /* the node's edit */
};

struct plan {
	json_t *root;                /* the root to write (inline maps ignored) */
	bool root_edited, root_rewrite, upgrade;
	uint8_t *cstate;             /* per chunk */
	struct sv_doodle_grid *grid; /* per chunk: S_REPLACE content */
	bool *convert;               /* per chunk: to be re-encoded as RLE */
	struct newchunk *nc;
	size_t nnc;
	uint32_t *tnode, *bnode;     /* per chunk: its .txt and .bin now, or SV_NONE
				      * (no node: not in use, or removed) */
	uint8_t *removed;            /* per chunk: its .txt (1), .bin (2) removed */
	uint32_t *anode;             /* per asset: its node now, or SV_NONE */
	uint32_t jnode;              /* the root JSON's node now */
	uint8_t *astate;             /* per asset */
	bool *cstay, *astay;         /* inline entries that do not decode: when
				      * the root is rewritten they stay inline,
				      * as they were */
	struct newasset *na;
	size_t nna;
	uint64_t dropped_bad;        /* pixels past the palette left out */
};

static void plan_fini(struct drawing *d, struct plan *p)
{
	json_decref(p->root);
	if (p->grid)
		for (size_t i = 0; i < d->nchunks; i++)
			sv_doodle_grid_fini(&p->grid[i]);
	free(p->grid);
	free(p->cstate);
	free(p->convert);
	for (size_t i = 0; i < p->nnc; i++)
		sv_doodle_grid_fini(&p->nc[i].g);
	free(p->nc);
	free(p->astate);
	free(p->cstay);
	free(p->astay);
	free(p->tnode);
	free(p->bnode);
	free(p->removed);
	free(p->anode);
	for (size_t i = 0; i < p->nna; i++)
		free(p->na[i].path);
	free(p->na);
}

static int walk_new_assets(struct drawing *d, struct plan *p, uint32_t dir, char *path,
			   size_t len, size_t *cap)
{
	struct sv_container *c = d->c;
	struct sv_node *n = sv_node(c, dir);
	for (uint32_t k = 0; k < n->nkids; k++) {
		uint32_t kid = sv_node(c, dir)->kids[k];
		struct sv_node *kn = sv_node(c, kid);
		size_t nl = strlen(kn->name);
		if (len + nl + 2 > 4096)
			continue;
		memcpy(path + len, kn->name, nl);
		if (kn->flags & SV_N_DIR) {
			path[len + nl] = '/';
			int rc = walk_new_assets(d, p, kid, path, len + nl + 1, cap);
			if (rc)
				return rc;
			continue;
		}
		if (!(sv_node_state(c, kid) & SV_S_NEW) || !sv_node_in_commit(c, kid))
			continue;
		path[len + nl] = '\0';
		if (p->nna == *cap) {
			size_t nc = *cap ? *cap * 2 : 8;
			struct newasset *v = realloc(p->na, nc * sizeof *v);
			if (!v)
				return -ENOMEM;
			p->na = v;
			*cap = nc;
		}
		char *s = strdup(path);
		if (!s)
			return -ENOMEM;
		p->na[p->nna++] = (struct newasset){s, sv_node_edit(c, kid)};
	}
	return 0;
}

/* Is a stored .bin chunk anything but RLE?  (Only asked with -o upgrade.) */
static bool needs_rle(struct drawing *d, const struct chunk *ch)
{
	if (ch->bin < 0)
		return true;
	struct sv_blob *b = NULL;
	struct sv_err e;
	struct sv_rd r;
	bool rle = !sv_dd_member_blob(d, ch->bin, &b, &e);
	if (rle) {
		sv_rd_init(&r, b->data, b->len);
		rle = sv_rd_uleb64(&r) == 1 && sv_rd_ok(&r);
	}
	sv_blob_unref(b);
	return !rle;
}

static int plan_edits(struct drawing *d, struct plan *p, const uint32_t *touched,
		      size_t ntouched, struct sv_err *err);

static int make_plan(struct drawing *d, struct plan *p, struct sv_err *err)
{
	struct sv_container *c = d->c;
	p->upgrade = sv_container_opts(c)->upgrade;
	int rc = 0;
	size_t nch = d->nchunks ? d->nchunks : 1;
	p->cstate = calloc(nch, 1);
	p->grid = calloc(nch, sizeof *p->grid);
	p->convert = calloc(nch, sizeof *p->convert);
	p->astate = calloc(d->nassets ? d->nassets : 1, 1);
	p->tnode = malloc(nch * sizeof *p->tnode);
	p->bnode = malloc(nch * sizeof *p->bnode);
	p->removed = calloc(nch, 1);
	p->anode = malloc((d->nassets ? d->nassets : 1) * sizeof *p->anode);
	if (!p->cstate || !p->grid || !p->convert || !p->astate || !p->tnode || !p->bnode ||
	    !p->removed ||
	    !p->anode)
		return sv_err_set(err, -ENOMEM, "out of memory");
	/* Where each entry is now: a file renamed over an entry takes its key
	 * (and the entry's old node goes), so look by key. */
	p->jnode = SV_NONE;
	memset(p->tnode, 0xff, nch * sizeof *p->tnode);
	memset(p->bnode, 0xff, nch * sizeof *p->bnode);
	memset(p->anode, 0xff, (d->nassets ? d->nassets : 1) * sizeof *p->anode);
	/* One pass over the nodes, which also notes the few that hold an
	 * edit (a big drawing's commit touches no other node again). */
	uint32_t *touched = NULL;
	size_t ntouched = 0, captouched = 0;
	for (uint32_t n = 1, count = sv_node_count(c); n < count; n++) {
		uint32_t state = sv_node_state(c, n);
		if ((state & (SV_S_DIRTY | SV_S_NEW)) && sv_node_in_commit(c, n)) {
			if (ntouched == captouched) {
				size_t ncap = captouched ? captouched * 2 : 16;
				uint32_t *v = realloc(touched, ncap * sizeof *v);
				if (!v) {
					free(touched);
					return sv_err_set(err, -ENOMEM, "out of memory");
				}
				touched = v;
				captouched = ncap;
			}
			touched[ntouched++] = n;
		}
		uint64_t key = sv_node(c, n)->key;
		unsigned kind = KEY_KIND(key);
		/* A chunk's view removed by this commit (a view that is no
		 * node is merely not in use). */
		if ((state & (SV_S_GONE | SV_S_STALE)) == (SV_S_GONE | SV_S_STALE) &&
		    KEY_D(key) == d->id && (kind == K_TXT || kind == K_BIN) &&
		    KEY_I(key) < d->nchunks)
			p->removed[KEY_I(key)] |= kind == K_TXT ? 1 : 2;
		if (KEY_D(key) != d->id || !sv_node_in_commit(c, n) ||
		    (sv_node(c, n)->flags & SV_N_DIR) || (state & SV_S_NEW))
			continue;
		if (kind == K_TXT && KEY_I(key) < d->nchunks)
			p->tnode[KEY_I(key)] = n;
		else if (kind == K_BIN && KEY_I(key) < d->nchunks)
			p->bnode[KEY_I(key)] = n;
		else if (kind == K_ASSET && KEY_I(key) < d->nassets)
			p->anode[KEY_I(key)] = n;
		else if (kind == K_JSON)
			p->jnode = n;
	}
	rc = plan_edits(d, p, touched, ntouched, err);
	free(touched);
	return rc;
}

/* The rest of make_plan, told the nodes that hold an edit. */
static int plan_edits(struct drawing *d, struct plan *p, const uint32_t *touched,
		      size_t ntouched, struct sv_err *err)
{
	struct sv_container *c = d->c;
	int rc = 0;
	size_t nch = d->nchunks ? d->nchunks : 1;
	const struct sv_buf *e = p->jnode != SV_NONE ? sv_node_edit(c, p->jnode) : NULL;
	if (e) {
		rc = sv_dd_check_root(d, e->p, e->len, &p->root, err);
		if (rc)
			return rc;
		p->root_edited = p->root_rewrite = true;
	} else {
		p->root = json_incref(d->root);
	}
	bool *edited = calloc(nch, sizeof *edited);
	if (!edited)
		return sv_err_set(err, -ENOMEM, "out of memory");
	for (size_t k = 0; k < ntouched; k++) {
		uint64_t key = sv_node(c, touched[k])->key;
		if (KEY_D(key) == d->id && (KEY_KIND(key) == K_TXT || KEY_KIND(key) == K_BIN) &&
		    KEY_I(key) < d->nchunks)
			edited[KEY_I(key)] = true;
	}
	for (size_t i = 0; i < d->nchunks && !rc; i++) {
		struct chunk *ch = &d->chunks[i];
		if (((p->removed[i] & 1) && p->tnode[i] == SV_NONE) ||
		    ((p->removed[i] & 2) && p->bnode[i] == SV_NONE)) {
			p->cstate[i] = S_GONE;
		} else if (edited[i]) {
			const struct sv_buf *et = sv_node_edit(c, p->tnode[i]);
			const struct sv_buf *eb = sv_node_edit(c, p->bnode[i]);
			if (et || eb) {
				bool txt = et != NULL;
				if (et && eb)
					sv_log(c, "%schunks/%u/%lld,%lld: both .txt and .bin were "
					       "written: the .txt is stored", d->prefix, ch->layer,
					       (long long)ch->cx, (long long)ch->cy);
				const struct sv_buf *ed = txt ? et : eb;
				rc = sv_dd_grid_from_edit(d, ch->layer, ch->cx, ch->cy, txt, ed->p,
						    ed->len, &p->grid[i], err);
				if (rc)
					break;
				p->cstate[i] = sv_doodle_grid_empty(&p->grid[i]) ? S_GONE
										 : S_REPLACE;
			}
		}
		if (p->cstate[i] != S_KEEP && ch->inl)
			p->root_rewrite = true;
		if (p->upgrade && p->cstate[i] == S_KEEP)
			p->convert[i] = needs_rle(d, ch);
		if (p->upgrade && ch->inl)
			p->root_rewrite = true;
	}
	free(edited);
	if (rc)
		return rc;
	/* New chunk files, layer by layer, in the order they were made. */
	size_t cap = 0;
	for (uint32_t l = 0; l < d->nlayers; l++) {
		for (size_t k = 0; k < ntouched; k++) {
			uint32_t kid = touched[k];
			struct sv_node *kn = sv_node(c, kid);
			int64_t x, y;
			bool txt;
			if (kn->parent != d->layers[l].dir || !(sv_node_state(c, kid) & SV_S_NEW) ||
			    !sv_dd_chunk_file(kn->name, &x, &y, &txt) || sv_dd_find_chunk(d, l, x, y))
				continue;
			bool seen = false;
			for (size_t j = 0; j < p->nnc && !seen; j++)
				seen = p->nc[j].layer == l && p->nc[j].x == x && p->nc[j].y == y;
			if (seen) {
				sv_log(c, "%schunks/%u/%s: the chunk was also created under its "
				       "other name: this file is not stored", d->prefix, l, kn->name);
				continue;
			}
			if (p->nnc == cap) {
				size_t ncap = cap ? cap * 2 : 8;
				struct newchunk *v = realloc(p->nc, ncap * sizeof *v);
				if (!v)
					return sv_err_set(err, -ENOMEM, "out of memory");
				p->nc = v;
				cap = ncap;
			}
			const struct sv_buf *ed = sv_node_edit(c, kid);
			struct newchunk *nc = &p->nc[p->nnc];
			nc->layer = l;
			nc->x = x;
			nc->y = y;
			rc = sv_dd_grid_from_edit(d, l, x, y, txt, ed->p, ed->len, &nc->g, err);
			if (rc)
				return rc;
			if (sv_doodle_grid_empty(&nc->g))
				sv_doodle_grid_fini(&nc->g);
			else
				p->nnc++;
		}
	}
	for (size_t i = 0; i < d->nassets; i++) {
		struct asset *a = &d->assets[i];
		if (p->anode[i] == SV_NONE)
			p->astate[i] = S_GONE;
		else if (sv_node_edit(c, p->anode[i]))
			p->astate[i] = S_REPLACE;
		if ((p->astate[i] != S_KEEP || p->upgrade) && a->inl)
			p->root_rewrite = true;
	}
	char path[4096] = "assets/";
	cap = 0;
	if (walk_new_assets(d, p, d->n_assets, path, 7, &cap))
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (p->nna && d->ctype != C_ZIP)
		p->root_rewrite = true;
	p->cstay = calloc(nch, sizeof *p->cstay);
	p->astay = calloc(d->nassets ? d->nassets : 1, sizeof *p->astay);
	if (!p->cstay || !p->astay)
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (!p->root_rewrite && !p->upgrade)
		return 0;
	/* An inline entry that cannot be decoded is not moved into a member
	 * (nor dropped): it stays in the root as it was. */
	for (size_t i = 0; i < d->nchunks; i++) {
		struct chunk *ch = &d->chunks[i];
		if (!ch->inl || ch->bin >= 0 || ch->json >= 0 || p->cstate[i] != S_KEEP)
			continue;
		struct sv_doodle_grid g;
		struct sv_err why;
		sv_err_clear(&why);
		if (sv_dd_chunk_grid(d, ch, &g, &why)) {
			if (why.code == -ENOMEM)
				return sv_err_set(err, -ENOMEM, "out of memory");
			p->cstay[i] = true;
			sv_log(c, "%schunks/%u/%lld,%lld: cannot be decoded (%s): kept inline",
			       d->prefix, ch->layer, (long long)ch->cx, (long long)ch->cy, why.msg);
		} else {
			sv_doodle_grid_fini(&g);
		}
	}
	for (size_t i = 0; i < d->nassets; i++) {
		struct asset *a = &d->assets[i];
		if (a->inl && p->astate[i] == S_KEEP &&
		    sv_base64_decoded_size(json_string_value(a->inl), json_string_length(a->inl)) < 0)
			p->astay[i] = true;
	}
	return 0;
}

/* The RLE bytes of chunk i as it will be stored. */
static int chunk_rle(struct drawing *d, struct plan *p, size_t i, struct sv_buf *out,
		     struct sv_err *err)
{
	struct sv_doodle_grid g, *gp = &p->grid[i];
	if (p->cstate[i] != S_REPLACE) {
		int rc = sv_dd_chunk_grid(d, &d->chunks[i], &g, err);
		if (rc)
			return rc;
		gp = &g;
	}
	uint64_t dropped = 0;
	for (size_t k = 0; k < (size_t)gp->size * gp->size; k++)
		if (gp->px[k] == SV_DOODLE_BADPIX) {
			gp->px[k] = SV_DOODLE_EMPTY;
			dropped++;
		}
	p->dropped_bad += dropped;
	int rc = sv_doodle_rle_encode(gp, out);
	if (gp == &g)
		sv_doodle_grid_fini(&g);
	return rc ? sv_err_set(err, rc, "out of memory") : 0;
}

static void dos_now(uint16_t *t, uint16_t *dt)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	*t = (uint16_t)(tm.tm_hour << 11 | tm.tm_min << 5 | tm.tm_sec / 2);
	*dt = (uint16_t)((tm.tm_year - 80) << 9 | (tm.tm_mon + 1) << 5 | tm.tm_mday);
}

static int add_member(struct sv_zip_writer *w, const char *name, const void *p, size_t n,
		      struct sv_err *err)
{
	uint16_t t, dt;
	dos_now(&t, &dt);
	return sv_zip_add_dated(w, name, p, n, false, t, dt, err);
}

static int add_chunk_member(struct sv_zip_writer *w, uint32_t layer, int64_t x, int64_t y,
			    struct sv_buf *rle, struct sv_err *err)
{
	char name[80];
	snprintf(name, sizeof name, "chunks/%u/%lld,%lld.bin", layer, (long long)x,
		 (long long)y);
	return add_member(w, name, rle->p, rle->len, err);
}

static int asset_bytes(struct drawing *d, struct plan *p, size_t i, struct sv_buf *out,
		       struct sv_err *err)
{
	struct asset *a = &d->assets[i];
	if (p->astate[i] == S_REPLACE) {
		const struct sv_buf *e = sv_node_edit(d->c, p->anode[i]);
		return sv_buf_add(out, e->p, e->len) ? sv_err_set(err, -ENOMEM, "out of memory")
						     : 0;
	}
	if (a->member >= 0) {
		struct sv_blob *b = NULL;
		int rc = sv_dd_member_blob(d, a->member, &b, err);
		if (!rc && sv_buf_add(out, b->data, b->len))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		sv_blob_unref(b);
		return rc;
	}
	return sv_base64_decode(json_string_value(a->inl), json_string_length(a->inl), out,
				err);
}

/* Is inline chunk entry (k, v) of layer l written as a member by a root
 * rewrite?  What savefs does not show stays inline, as it was. */
static bool inline_moves(struct drawing *d, struct plan *p, uint32_t l, const char *k,
			 json_t *v)
{
	int64_t x, y;
	struct chunk *ch = sv_doodle_parse_xy(k, &x, &y) ? sv_dd_find_chunk(d, l, x, y) : NULL;
	if (!ch || ch->inl != v || p->cstay[ch - d->chunks])
		return false;
	return !(ch->bin >= 0 || ch->json >= 0) || p->cstate[ch - d->chunks] != S_KEEP;
}

/* The root as a zip stores it after a rewrite: the plan's root with its
 * maps emptied of what became members. */
static json_t *zip_root(struct drawing *d, struct plan *p)
{
	json_t *r = sv_dd_strip_root(p->root, d->kind);
	if (!r)
		return NULL;
	const char *k;
	json_t *v;
	json_t *files = sv_dd_jget(r, "files");
	json_object_foreach(sv_dd_jget(d->root, "files"), k, v) {
		struct asset key = {.path = (char *)k};
		struct asset *a = d->nassets ? bsearch(&key, d->assets, d->nassets, sizeof key,
						       sv_dd_cmp_asset) : NULL;
		if (a && a->inl && !p->astay[a - d->assets])
			continue;
		if (!json_is_object(files)) {
			files = json_object();
			sv_dd_jset(r, "files", files);
		}
		json_object_set(files, k, v);
	}
	for (uint32_t l = 0; l < d->nlayers; l++) {
		json_t *holder = d->kind == D_LEVEL ? r : json_array_get(sv_dd_jget(r, "layers"), l);
		json_t *map = sv_dd_jget(sv_dd_jget(holder, "chunks"), "chunks");
		json_object_foreach(d->layers[l].map, k, v) {
			if (!inline_moves(d, p, l, k, v) && json_is_object(map))
				json_object_set(map, k, v);
		}
	}
	return r;
}

/* The root as written into a zip. */
static int add_root_member(struct drawing *d, struct plan *p, struct sv_zip_writer *w,
			   struct sv_err *err)
{
	json_t *r = zip_root(d, p);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = r ? sv_dd_json_to_buf(r, JSON_COMPACT, &b) : -ENOMEM;
	json_decref(r);
	if (rc)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	else
		rc = add_member(w, sv_dd_root_name(d), b.p, b.len, err);
	sv_buf_fini(&b);
	return rc;
}

/* What goes in before the root: new chunks and files, and (when the root
 * is rewritten) what the old root held inline. */
static int add_additions(struct drawing *d, struct plan *p, struct sv_zip_writer *w,
			 bool all, struct sv_err *err)
{
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	for (size_t i = 0; i < d->nchunks && !rc; i++) {
		struct chunk *ch = &d->chunks[i];
		bool member = ch->bin >= 0 || ch->json >= 0;
		if (p->cstate[i] == S_GONE || (member && !all) || p->cstay[i] ||
		    (!member && !p->root_rewrite && !all))
			continue;
		b.len = 0;
		rc = chunk_rle(d, p, i, &b, err);
		if (!rc)
			rc = add_chunk_member(w, ch->layer, ch->cx, ch->cy, &b, err);
	}
	for (size_t i = 0; i < p->nnc && !rc; i++) {
		b.len = 0;
		if (sv_doodle_rle_encode(&p->nc[i].g, &b))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		else
			rc = add_chunk_member(w, p->nc[i].layer, p->nc[i].x, p->nc[i].y, &b, err);
	}
	for (size_t i = 0; i < d->nassets && !rc; i++) {
		struct asset *a = &d->assets[i];
		if (p->astate[i] == S_GONE || (a->member >= 0 && !all) || p->astay[i] ||
		    (a->member < 0 && !p->root_rewrite && !all))
			continue;
		b.len = 0;
		rc = asset_bytes(d, p, i, &b, err);
		if (!rc)
			rc = add_member(w, a->path, b.p, b.len, err);
	}
	for (size_t i = 0; i < p->nna && !rc; i++)
		rc = add_member(w, p->na[i].path, p->na[i].data->p, p->na[i].data->len, err);
	sv_buf_fini(&b);
	return rc;
}

/* A drawing's new container goes to fd, or (nested in a levelpack) to mem. */
/* Whether the plan replaces chunks' members and changes nothing else (no
 * chunk or file added or removed, the root as it was); the chunks go in
 * dd->next_chunks. */
static bool only_chunks(const struct drawing *d, const struct plan *p, struct doodle *dd)
{
	if (d->ctype != C_ZIP || p->upgrade || p->root_edited || p->root_rewrite || p->nnc ||
	    p->nna)
		return false;
	for (size_t i = 0; i < d->nassets; i++)
		if (p->astate[i] != S_KEEP)
			return false;
	size_t n = 0;
	for (size_t i = 0; i < d->nchunks; i++) {
		if (p->cstate[i] == S_GONE)
			return false;
		n += p->cstate[i] != S_KEEP || p->convert[i];
	}
	dd->next_chunks = malloc((n ? n : 1) * sizeof *dd->next_chunks);
	if (!dd->next_chunks)
		return false;
	for (size_t i = 0; i < d->nchunks; i++)
		if (p->cstate[i] != S_KEEP || p->convert[i])
			dd->next_chunks[dd->next_nchunks++] = (uint32_t)i;
	return true;
}

static int write_zip(struct drawing *d, struct plan *p, int fd, struct sv_buf *mem,
		     struct sv_err *err)
{
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, mem ? -1 : fd, mem);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	bool *done = calloc(d->nchunks + 1, sizeof *done);
	if (!done)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (d->ctype != C_ZIP) {
		/* v1/v2 upgraded: every chunk and file becomes a member. */
		if (!rc)
			rc = add_additions(d, p, &w, true, err);
		if (!rc)
			rc = add_root_member(d, p, &w, err);
	}
	size_t run = SIZE_MAX; /* the first of a run of members copied as stored */
	int src_fd = d->mem ? -1 : sv_container_fd(d->c);
	const uint8_t *src_mem = d->mem ? d->mem->data : NULL;
	for (size_t m = 0; m <= d->zip.n && !rc; m++) {
		uint32_t i = m < d->zip.n ? d->role_i[m] : 0;
		int role = m < d->zip.n ? d->role[m] : -1;
		/* Copied as stored?  Upgraded, a chunk is one RLE member: a .json
		 * behind a .bin goes. */
		bool raw = role == R_CHUNK ? p->cstate[i] == S_KEEP && !p->convert[i] &&
						     !(p->upgrade && (int64_t)m == d->chunks[i].json &&
						       d->chunks[i].bin >= 0)
			 : role == R_ASSET ? p->astate[i] == S_KEEP
			 : role == R_ROOT ? false
			 : role >= 0;
		if (raw) {
			if (run == SIZE_MAX)
				run = m;
			continue;
		}
		/* Untouched members go across in runs, as stored. */
		if (run != SIZE_MAX) {
			rc = sv_zip_add_members(&w, &d->zip, run, m, sv_dd_src_read, d, d->size, src_fd,
						src_mem, err);
			run = SIZE_MAX;
		}
		if (rc || role < 0)
			break;
		const struct sv_zip_entry *e = &d->zip.e[m];
		switch (role) {
		case R_CHUNK:
			if (p->cstate[i] == S_GONE || done[i] ||
			    (p->cstate[i] == S_KEEP && !p->convert[i]))
				break;
			done[i] = true;
			b.len = 0;
			rc = chunk_rle(d, p, i, &b, err);
			if (!rc)
				rc = add_chunk_member(&w, d->chunks[i].layer, d->chunks[i].cx,
						      d->chunks[i].cy, &b, err);
			break;
		case R_ASSET:
			if (p->astate[i] == S_GONE)
				break;
			b.len = 0;
			rc = asset_bytes(d, p, i, &b, err);
			if (!rc)
				rc = add_member(&w, e->name, b.p, b.len, err);
			break;
		case R_ROOT:
			/* New members go just before the root, which the game
			 * writes last. */
			rc = add_additions(d, p, &w, false, err);
			if (!rc && p->root_rewrite)
				rc = add_root_member(d, p, &w, err);
			else if (!rc)
				rc = sv_zip_add_members(&w, &d->zip, m, m + 1, sv_dd_src_read, d, d->size,
							src_fd, src_mem, err);
			break;
		}
	}
	if (!rc)
		rc = sv_zip_finish(&w, d->zip.comment, d->zip.comment_len, err);
	/* The top drawing's new directory, for the re-index once the file is
	 * in place (a nested one is read again from its pack's new bytes). */
	struct doodle *dd = sv_container_priv(d->c);
	struct sv_err e;
	if (!rc && !mem && d->id == 0 &&
	    !sv_zip_writer_take(&w, d->zip.comment, d->zip.comment_len, &dd->next, &e)) {
		dd->next_size = w.off;
		dd->has_next = true;
		dd->next_only_chunks = only_chunks(d, p, dd);
	}
	free(done);
	sv_buf_fini(&b);
	sv_zip_writer_fini(&w);
	return rc;
}

/* A chunk map for a v1/v2 file: the stored entries kept as they were,
 * edited ones as the JSON the game reads. */
static json_t *json_chunk_map(struct drawing *d, struct plan *p, uint32_t l)
{
	json_t *map = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(d->layers[l].map, k, v) {
		int64_t x, y;
		struct chunk *ch = sv_doodle_parse_xy(k, &x, &y) ? sv_dd_find_chunk(d, l, x, y) : NULL;
		if (!ch) {
			json_object_set(map, k, v);
			continue;
		}
		size_t i = (size_t)(ch - d->chunks);
		if (p->cstate[i] == S_KEEP)
			json_object_set(map, k, v);
		else if (p->cstate[i] == S_REPLACE)
			json_object_set_new(map, k, sv_doodle_json_encode(&p->grid[i]));
	}
	for (size_t i = 0; i < p->nnc; i++) {
		if (p->nc[i].layer != l)
			continue;
		char key[64];
		snprintf(key, sizeof key, "%lld,%lld", (long long)p->nc[i].x,
			 (long long)p->nc[i].y);
		json_object_set_new(map, key, sv_doodle_json_encode(&p->nc[i].g));
	}
	return map;
}

/* chunks with its map replaced; a map that was not there and stays empty
 * is not added (the root is written as it was). */
static json_t *with_map(json_t *chunks, json_t *map)
{
	if (json_is_object(chunks) && !sv_dd_jget(chunks, "chunks") && !json_object_size(map)) {
		json_decref(map);
		return json_incref(chunks);
	}
	json_t *c2 = json_is_object(chunks) ? json_copy(chunks) : json_object();
	if (c2)
		sv_dd_jset(c2, "chunks", map);
	else
		json_decref(map);
	return c2;
}

static int write_json(struct drawing *d, struct plan *p, int fd, struct sv_buf *mem,
		      struct sv_err *err)
{
	json_t *r = json_copy(p->root);
	if (!r)
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (d->kind == D_LEVEL) {
		json_t *map = json_chunk_map(d, p, 0);
		if (sv_dd_jget(r, "chunks") || json_object_size(map))
			sv_dd_jset(r, "chunks", with_map(sv_dd_jget(r, "chunks"), map));
		else
			json_decref(map);
	} else {
		json_t *ls = sv_dd_jget(r, "layers"), *l2 = json_array();
		for (uint32_t l = 0; l < d->nlayers; l++) {
			json_t *lo = json_array_get(ls, l);
			json_t *lc = json_is_object(lo) ? json_copy(lo) : json_object();
			json_t *map = json_chunk_map(d, p, l);
			if (sv_dd_jget(lc, "chunks") || json_object_size(map))
				sv_dd_jset(lc, "chunks", with_map(sv_dd_jget(lc, "chunks"), map));
			else
				json_decref(map);
			json_array_append_new(l2, lc);
		}
		sv_dd_jset(r, "layers", l2);
	}
	json_t *files = json_object(), *orig = sv_dd_jget(d->root, "files");
	const char *k;
	json_t *v;
	int rc = 0;
	struct sv_buf b, t;
	sv_buf_init(&b);
	sv_buf_init(&t);
	json_object_foreach(orig, k, v) {
		struct asset key = {.path = (char *)k};
		struct asset *a = d->nassets ? bsearch(&key, d->assets, d->nassets, sizeof key,
							       sv_dd_cmp_asset) : NULL;
		size_t i = a ? (size_t)(a - d->assets) : 0;
		if (!a || a->inl == NULL || p->astate[i] == S_KEEP) {
			json_object_set(files, k, v);
		} else if (p->astate[i] == S_REPLACE) {
			const struct sv_buf *e = sv_node_edit(d->c, p->anode[i]);
			b.len = 0;
			if (sv_base64_encode(e->p, e->len, &b) || sv_buf_add(&b, "", 1))
				rc = -ENOMEM;
			else
				json_object_set_new(files, k, json_pack("{s:s}", "data", (char *)b.p));
		}
	}
	for (size_t i = 0; i < p->nna && !rc; i++) {
		b.len = 0;
		if (sv_base64_encode(p->na[i].data->p, p->na[i].data->len, &b) ||
		    sv_buf_add(&b, "", 1))
			rc = -ENOMEM;
		else
			json_object_set_new(files, p->na[i].path,
					    json_pack("{s:s}", "data", (char *)b.p));
	}
	if (orig || json_object_size(files))
		sv_dd_jset(r, "files", files);
	else
		json_decref(files);
	b.len = 0;
	if (!rc)
		rc = sv_dd_json_to_buf(r, JSON_COMPACT, &b);
	json_decref(r);
	if (!rc && d->ctype == C_GZIP)
		rc = sv_gzip(b.p, b.len, &t);
	if (rc)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	else {
		const struct sv_buf *out = d->ctype == C_GZIP ? &t : &b;
		if (mem) {
			if (sv_buf_add(mem, out->p, out->len))
				rc = sv_err_set(err, -ENOMEM, "out of memory");
		} else if (sv_write_all(fd, out->p, out->len)) {
			rc = sv_err_set(err, -errno, "write: %s", strerror(errno));
		}
	}
	sv_buf_fini(&b);
	sv_buf_fini(&t);
	return rc;
}

static bool plan_changes(const struct drawing *d, const struct plan *p)
{
	if (p->root_rewrite || p->nnc || p->nna)
		return true;
	for (size_t i = 0; i < d->nchunks; i++)
		if (p->cstate[i] != S_KEEP || p->convert[i])
			return true;
	for (size_t i = 0; i < d->nassets; i++)
		if (p->astate[i] != S_KEEP)
			return true;
	return false;
}

/* Writes drawing d anew (to fd, or to mem when nested), if anything in it
 * changed (*changed).  Views of what changed are touched. */
static int commit_drawing(struct drawing *d, int fd, struct sv_buf *mem, bool *changed,
			  struct sv_err *err)
{
	struct sv_container *c = d->c;
	struct plan p;
	memset(&p, 0, sizeof p);
	int rc = make_plan(d, &p, err);
	*changed = !rc && (plan_changes(d, &p) || !mem);
	if (!rc && *changed)
		rc = d->ctype == C_ZIP || p.upgrade ? write_zip(d, &p, fd, mem, err)
						    : write_json(d, &p, fd, mem, err);
	if (!rc && p.dropped_bad)
		sv_log(c, "%s%llu pixel(s) with an index past the palette were left out of "
		       "re-encoded chunks", d->prefix, (unsigned long long)p.dropped_bad);
	if (!rc && *changed) {
		/* Views of what changed show the new content afterwards. */
		bool layer0 = p.nnc > 0, all = p.root_edited;
		for (size_t i = 0; i < d->nchunks; i++) {
			struct chunk *ch = &d->chunks[i];
			if (p.cstate[i] == S_KEEP && !p.convert[i] && !all)
				continue;
			sv_node_touch(c, p.tnode[i]);
			/* (A number the client forgot may be another entry's.) */
			if (ch->n_png != SV_NONE && !(sv_node_state(c, ch->n_png) & SV_S_GONE) &&
			    sv_node(c, ch->n_png)->key == KEY(d->id, K_PNG, i))
				sv_node_touch(c, ch->n_png);
			sv_node_touch(c, p.bnode[i]);
			layer0 |= ch->layer == 0;
		}
		if (layer0 || all)
			sv_node_touch(c, d->n_preview);
		sv_node_touch(c, p.jnode);
	}
	plan_fini(d, &p);
	return rc;
}

/* A levelpack: nested drawings that changed are written anew and stored
 * deflated; every other member is copied as stored. */
static int commit_pack(struct drawing *pack, int fd, struct sv_err *err)
{
	struct doodle *dd = sv_container_priv(pack->c);
	struct sv_buf *out = calloc(pack->nnest + 1, sizeof *out);
	bool *changed = calloc(pack->nnest + 1, sizeof *changed);
	int rc = out && changed ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	for (size_t k = 0; k < pack->nnest && !rc; k++) {
		sv_buf_init(&out[k]);
		if (pack->nest[k].drawing >= 0)
			rc = commit_drawing(dd->d[pack->nest[k].drawing], -1, &out[k], &changed[k],
					    err);
	}
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, fd, NULL);
	size_t run = 0;
	for (size_t m = 0; m <= pack->zip.n && !rc; m++) {
		bool redo = m < pack->zip.n && pack->role[m] == R_NESTED &&
			    changed[pack->role_i[m]];
		if ((redo || m == pack->zip.n) && m > run)
			rc = sv_zip_add_members(&w, &pack->zip, run, m, sv_dd_src_read, pack, pack->size,
						sv_container_fd(pack->c), NULL, err);
		if (redo && !rc)
			rc = add_member(&w, pack->zip.e[m].name, out[pack->role_i[m]].p,
					out[pack->role_i[m]].len, err);
		if (redo || m == pack->zip.n)
			run = m + 1;
	}
	if (!rc)
		rc = sv_zip_finish(&w, pack->zip.comment, pack->zip.comment_len, err);
	sv_zip_writer_fini(&w);
	for (size_t k = 0; out && k < pack->nnest; k++)
		sv_buf_fini(&out[k]);
	free(out);
	free(changed);
	return rc;
}

int sv_dd_commit(struct sv_container *c, int fd, struct sv_err *err)
{
	struct doodle *dd = sv_container_priv(c);
	struct drawing *d = dd->d[0];
	sv_dd_forget_next(dd); /* a commit that did not land */
	bool changed;
	return d->kind == D_PACK ? commit_pack(d, fd, err)
				 : commit_drawing(d, fd, NULL, &changed, err);
}
