/*
 * doodle_edit.c - Sketchy Maze edits: a view's new bytes checked the
 * game's way (the root JSON's types, a grid's size and palette codes, a
 * PNG's pixels), new chunk files and assets taken.  The new container is
 * doodle_commit.c's.
 */
#include "doodle_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* ---- edits ----------------------------------------------------------------- */

/* Checks the type of o[key] (if present and not null): 'i' integer, 'n'
 * number, 's' string, 'b' boolean, 'o' object, 'a' array. */
static int want(json_t *o, const char *key, char type, const char *where,
		struct sv_err *err)
{
	json_t *v = sv_dd_jget(o, key);
	if (!v || json_is_null(v))
		return 0;
	bool ok = type == 'i' ? json_is_integer(v) : type == 'n' ? json_is_number(v)
		: type == 's' ? json_is_string(v) : type == 'b' ? json_is_boolean(v)
		: type == 'o' ? json_is_object(v) : json_is_array(v);
	if (ok)
		return 0;
	static const char *const names[] = {"an integer", "a number", "a string",
					    "true or false", "an object", "an array"};
	const char *types = "insboa";
	return sv_err_set(err, -EINVAL, "%s\"%s\" must be %s", where, key,
			  names[strchr(types, type) - types]);
}

static int want_all(json_t *o, const char *spec, const char *where, struct sv_err *err)
{
	/* spec: "key:t key:t ..." */
	char buf[512];
	snprintf(buf, sizeof buf, "%s", spec);
	for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		char *colon = strchr(tok, ':');
		*colon = '\0';
		int rc = want(o, tok, colon[1], where, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* The chunks object of a level or of a doodad layer, as edited: its size
 * must stay, its map must stay empty (chunks are edited as files). */
static int check_chunks(json_t *ch, uint32_t size, bool had_size, const char *where,
			struct sv_err *err)
{
	int rc = want_all(ch, "size:i chunks:o", where, err);
	if (rc)
		return rc;
	json_t *sz = sv_dd_jget(ch, "size");
	/* A root that never said its size (128 by default) may go on not
	 * saying it. */
	if (!had_size && !sz)
		return json_object_size(sv_dd_jget(ch, "chunks"))
			       ? sv_err_set(err, -EINVAL, "%s\"chunks\" must stay {}: edit chunks "
					    "as the files in chunks/", where)
			       : 0;
	if (!json_is_integer(sz) || json_integer_value(sz) != (json_int_t)size)
		return sv_err_set(err, -EINVAL, "%s\"size\" must stay %u: the chunks are "
				  "stored at that size", where, size);
	if (json_object_size(sv_dd_jget(ch, "chunks")))
		return sv_err_set(err, -EINVAL, "%s\"chunks\" must stay {}: edit chunks as "
				  "the files in chunks/", where);
	return 0;
}

int sv_dd_check_root(struct drawing *d, const uint8_t *p, size_t n, json_t **out,
		     struct sv_err *err)
{
	json_error_t je;
	json_t *r = json_loadb((const char *)p, n, 0, &je);
	if (!r)
		return sv_err_set(err, -EINVAL, "%s: line %d, column %d: %s", sv_dd_root_name(d),
				  je.line, je.column, je.text);
	char where[96];
	int rc = 0;
	if (!json_is_object(r)) {
		rc = sv_err_set(err, -EINVAL, "%s: not a JSON object", sv_dd_root_name(d));
		goto out;
	}
	snprintf(where, sizeof where, "%s: ", sv_dd_root_name(d));
	rc = want_all(r, "version:n gameVersion:s title:s author:s locked:b passwd:s uuid:s "
		      "rules:o palette:o pageType:i boundedWidth:i boundedHeight:i "
		      "wallpaper:s scroll:s actors:o saveDoodads:b saveBuiltins:b files:o "
		      "chunks:o hidden:b size:o script:s hitbox:o layers:a data:o options:o",
		      where, err);
	if (!rc && json_object_size(sv_dd_jget(r, "files")))
		rc = sv_err_set(err, -EINVAL, "%s\"files\" must stay {}: edit attached files "
				"in assets/", where);
	if (!rc) {
		snprintf(where, sizeof where, "%s: rules: ", sv_dd_root_name(d));
		rc = want_all(sv_dd_jget(r, "rules"), "difficulty:i survival:b", where, err);
	}
	json_t *sw = sv_dd_jget(sv_dd_jget(r, "palette"), "swatches");
	if (!rc && sw && !json_is_array(sw))
		rc = sv_err_set(err, -EINVAL, "%s: palette: \"swatches\" must be an array",
				sv_dd_root_name(d));
	size_t i;
	json_t *v;
	json_array_foreach(sw, i, v) {
		if (rc)
			break;
		snprintf(where, sizeof where, "%s: palette swatch %zu: ", sv_dd_root_name(d), i);
		if (!json_is_object(v)) {
			rc = sv_err_set(err, -EINVAL, "%smust be an object", where);
			break;
		}
		rc = want_all(v, "name:s color:s pattern:s solid:b semisolid:b fire:b water:b "
			      "slippery:b", where, err);
		json_t *col = sv_dd_jget(v, "color");
		uint8_t rgba[4];
		if (!rc && json_is_string(col) &&
		    sv_doodle_colour_parse(json_string_value(col), rgba))
			rc = sv_err_set(err, -EINVAL, "%s\"color\" \"%.40s\" is not #rgb, "
					"#rrggbb or #rrggbbaa", where, json_string_value(col));
	}
	if (!rc && json_array_size(sw) > SV_DOODLE_MAX_PALETTE)
		rc = sv_err_set(err, -EINVAL, "%s: more than %u palette swatches", sv_dd_root_name(d),
				SV_DOODLE_MAX_PALETTE);
	const char *k;
	json_object_foreach(sv_dd_jget(r, "actors"), k, v) {
		if (rc)
			break;
		snprintf(where, sizeof where, "%s: actor %.40s: ", sv_dd_root_name(d), k);
		if (!json_is_object(v))
			rc = sv_err_set(err, -EINVAL, "%smust be an object", where);
		else
			rc = want_all(v, "filename:s point:s links:a options:o", where, err);
	}
	if (rc)
		goto out;
	if (d->kind == D_LEVEL) {
		snprintf(where, sizeof where, "%s: chunks: ", sv_dd_root_name(d));
		bool had = sv_dd_jget(sv_dd_jget(d->root, "chunks"), "size") != NULL;
		rc = check_chunks(sv_dd_jget(r, "chunks"), d->layers[0].size, had, where, err);
		if (!rc && had && !json_is_object(sv_dd_jget(r, "chunks")))
			rc = sv_err_set(err, -EINVAL, "%s: \"chunks\" must stay, with its "
					"\"size\" of %u", sv_dd_root_name(d), d->layers[0].size);
	} else {
		json_t *ls = sv_dd_jget(r, "layers");
		for (const char *o = "size hitbox", *e; !rc && *o; o = *e ? e + 1 : e) {
			e = strchr(o, ' ');
			e = e ? e : o + strlen(o);
			char key[16];
			snprintf(key, sizeof key, "%.*s", (int)(e - o), o);
			snprintf(where, sizeof where, "%s: %s: ", sv_dd_root_name(d), key);
			rc = want_all(sv_dd_jget(r, key), "X:i Y:i W:i H:i", where, err);
		}
		if (!rc && json_array_size(ls) != d->nlayers)
			rc = sv_err_set(err, -EINVAL, "%s: \"layers\" must keep its %u layer(s): "
					"their chunks are stored by layer number", sv_dd_root_name(d),
					d->nlayers);
		json_array_foreach(ls, i, v) {
			if (rc)
				break;
			snprintf(where, sizeof where, "%s: layer %zu: ", sv_dd_root_name(d), i);
			if (!json_is_object(v))
				rc = sv_err_set(err, -EINVAL, "%smust be an object", where);
			else
				rc = want_all(v, "name:s chunks:o", where, err);
			if (!rc)
				rc = check_chunks(sv_dd_jget(v, "chunks"), d->layers[i].size,
						  sv_dd_jget(sv_dd_jget(json_array_get(sv_dd_jget(d->root, "layers"), i),
							    "chunks"), "size") != NULL,
						  where, err);
		}
		json_object_foreach(sv_dd_jget(r, "data"), k, v) {
			if (!rc && !json_is_string(v))
				rc = sv_err_set(err, -EINVAL, "%s: data: \"%.40s\" must be a string",
						sv_dd_root_name(d), k);
		}
	}
out:
	if (!rc && out)
		*out = r;
	else
		json_decref(r);
	return rc;
}

/* The grid an edited .txt or .bin of chunk (layer, x, y) stands for. */
int sv_dd_grid_from_edit(struct drawing *d, uint32_t layer, int64_t x, int64_t y,
			 bool txt, const uint8_t *p, size_t n, struct sv_doodle_grid *g,
			 struct sv_err *err)
{
	int rc = sv_doodle_grid_init(g, d->layers[layer].size, x, y);
	if (rc)
		return sv_err_set(err, rc, "out of memory");
	if (txt) {
		rc = sv_doodle_text_parse(&d->pal, p, n, g, err);
	} else {
		struct sv_doodle_quirks q;
		memset(&q, 0, sizeof q);
		rc = sv_doodle_bin_decode(p, n, d->pal.n, g, &q, err);
		if (rc) {
			char m[SV_ERR_MAX];
			snprintf(m, sizeof m, "%s", err->msg);
			rc = sv_err_set(err, -EINVAL, "%s", m);
		}
		else if (q.run_clamped || q.outside || q.bad_index || q.partial)
			rc = sv_err_set(err, -EINVAL, "%s",
					q.run_clamped ? "RLE runs go past the end of the chunk"
					: q.outside ? "pixels lie outside the chunk"
					: q.bad_index ? "an index is past the palette"
						      : "a partial record at the end");
	}
	if (rc)
		sv_doodle_grid_fini(g);
	return rc;
}

/* The drawing and chunk a (possibly new) file node stands for. */
static bool node_chunk(struct sv_container *c, uint32_t node, struct drawing **dp,
		       uint32_t *layer, int64_t *x, int64_t *y, bool *txt)
{
	struct sv_node *n = sv_node(c, node);
	uint64_t key = n->key;
	struct drawing *d;
	if (sv_node_state(c, node) & (SV_S_NEW | SV_S_TEMP))
		key = sv_node(c, n->parent)->key;
	d = sv_dd_node_drawing(c, key);
	if (!d)
		return false;
	*dp = d;
	if (KEY_KIND(key) == K_LAYER) {
		*layer = KEY_I(key);
		return sv_dd_chunk_file(n->name, x, y, txt);
	}
	if (KEY_KIND(key) != K_TXT && KEY_KIND(key) != K_BIN)
		return false;
	const struct chunk *ch = &d->chunks[KEY_I(key)];
	*layer = ch->layer;
	*x = ch->cx;
	*y = ch->cy;
	*txt = KEY_KIND(key) == K_TXT;
	return true;
}

int sv_dd_check(struct sv_container *c, uint32_t node, const uint8_t *p,
		size_t n, struct sv_err *err)
{
	struct drawing *d;
	uint32_t layer;
	int64_t x, y;
	bool txt;
	if (node_chunk(c, node, &d, &layer, &x, &y, &txt)) {
		struct sv_doodle_grid g;
		int rc = sv_dd_grid_from_edit(d, layer, x, y, txt, p, n, &g, err);
		sv_doodle_grid_fini(&g);
		return rc;
	}
	uint64_t key = sv_node(c, node)->key;
	d = sv_dd_node_drawing(c, key);
	if (d && KEY_KIND(key) == K_JSON && !(sv_node_state(c, node) & SV_S_NEW))
		return sv_dd_check_root(d, p, n, NULL, err);
	return 0;
}

/* Editors' and tools' scratch files, which stay temporary until renamed. */
static bool scratch_name(const char *name)
{
	size_t n = strlen(name);
	if (name[0] == '.' || name[0] == '#' || name[n - 1] == '~')
		return true;
	/* sed -i's sedXXXXXX; mktemp's tmp.XXXXXXXXXX; Python's tempfile and
	 * many others: tmpXXXXXXXX. */
	if ((n == 9 && !strncmp(name, "sed", 3)) || !strncmp(name, "tmp", 3))
		return true;
	return n > 4 && (!strcmp(name + n - 4, ".swp") || !strcmp(name + n - 4, ".swx") ||
			 !strcmp(name + n - 4, ".tmp"));
}

int sv_dd_create(struct sv_container *c, uint32_t parent, const char *name,
		 struct sv_err *err)
{
	uint64_t key = sv_node(c, parent)->key;
	struct drawing *d = sv_dd_node_drawing(c, key);
	if (!d || scratch_name(name))
		return -ENOENT;
	if (KEY_KIND(key) == K_ADIR)
		return 0;
	int64_t x, y;
	bool txt;
	if (KEY_KIND(key) != K_LAYER || !sv_dd_chunk_file(name, &x, &y, &txt))
		return -ENOENT;
	if (sv_dd_find_chunk(d, KEY_I(key), x, y))
		return sv_err_set(err, -EEXIST, "chunk %lld,%lld exists", (long long)x,
				  (long long)y);
	return 0;
}

int sv_dd_unlink(struct sv_container *c, uint32_t node, struct sv_err *err)
{
	uint64_t key = sv_node(c, node)->key;
	struct drawing *d = sv_dd_node_drawing(c, key);
	if (!d)
		return sv_err_set(err, -EPERM, "not an entry of the drawing");
	switch (KEY_KIND(key)) {
	case K_TXT:
	case K_BIN:
	case K_ASSET:
		return 0;
	default:
		return sv_err_set(err, -EPERM, "%s cannot be removed", sv_node(c, node)->name);
	}
}
