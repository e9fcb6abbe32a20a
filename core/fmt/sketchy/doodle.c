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
};

/* ---- small helpers -------------------------------------------------------- */

/* True if p[0..n) opens a JSON object whose first key is "version" (any
 * case): the game writes every drawing's root so (its struct's first
 * field), and a plain JSON file that is not a drawing does not start so.
 * Fewer bytes than that takes: true if what there is fits. */
static bool drawing_json(const uint8_t *p, size_t n)
{
	static const char key[] = "\"version\"";
	size_t i = 0;
	while (i < n && isspace(p[i]))
		i++;
	if (i == n)
		return true;
	if (p[i++] != '{')
		return false;
	while (i < n && isspace(p[i]))
		i++;
	for (size_t k = 0; key[k] && i < n; k++, i++)
		if (tolower(p[i]) != key[k])
			return false;
	return true;
}

static int probe(const uint8_t *h, size_t n)
{
	size_t i = 0;
	while (i < n && isspace(h[i]))
		i++;
	if (i < n && h[i] == '{')
		return drawing_json(h, n);
	if (n >= 4 && !memcmp(h, "PK\3\4", 4))
		return 1;
	if (n >= 3 && h[0] == 0x1f && h[1] == 0x8b && h[2] == 8) {
		/* Any gzip file starts so: look at what it holds. */
		uint8_t out[32];
		z_stream z;
		memset(&z, 0, sizeof z);
		if (inflateInit2(&z, 16 + 15) != Z_OK)
			return 0;
		z.next_in = (uint8_t *)h;
		z.avail_in = (uInt)n;
		z.next_out = out;
		z.avail_out = sizeof out;
		inflate(&z, Z_SYNC_FLUSH);
		size_t got = sizeof out - z.avail_out;
		inflateEnd(&z);
		return drawing_json(out, got);
	}
	return 0;
}

static int src_read(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	struct drawing *d = arg;
	if (!d->mem)
		return sv_container_pread(d->c, off, buf, n, err);
	if (off > d->mem->len || n > d->mem->len - off)
		return sv_err_set(err, -EBADMSG, "byte %llu: past the end of the %zu bytes",
				  (unsigned long long)off, d->mem->len);
	memcpy(buf, d->mem->data + off, n);
	return 0;
}

/* The value under key, matched without regard to case (an exact match
 * first); *real receives the key as stored. */
static json_t *jget2(json_t *o, const char *key, const char **real)
{
	if (!json_is_object(o))
		return NULL;
	json_t *v = json_object_get(o, key);
	if (v) {
		if (real)
			*real = key;
		return v;
	}
	const char *k;
	json_object_foreach(o, k, v) {
		if (!strcasecmp(k, key)) {
			if (real)
				*real = k;
			return v;
		}
	}
	return NULL;
}

static json_t *jget(json_t *o, const char *key) { return jget2(o, key, NULL); }

/* Sets key in o, under the spelling already there if any. */
static int jset(json_t *o, const char *key, json_t *v)
{
	const char *real = key;
	jget2(o, key, &real);
	return json_object_set_new(o, real, v);
}

static int json_to_buf(json_t *j, size_t flags, struct sv_buf *b)
{
	return sv_json_dump(j, flags, b);
}

/*
 * One JSON string may hold at most a sixteenth of -o maxdecode (64 MiB by
 * default; a level's title, an asset inline): the parser keeps a string
 * twice while it reads it, so a small gzip file whose title is a gigabyte
 * would cost two.  The text is scanned as it comes (strscan), and such a
 * string refused where it passes the bound.
 */
struct strscan {
	uint64_t cap, len, at;
	bool in, esc;
};

static uint64_t string_cap(struct sv_container *c)
{
	uint64_t m = sv_container_opts(c)->max_decode / 16;
	return m < (16u << 20) ? (16u << 20) : m;
}

/* Scans p[0..n); -EFBIG with the reason when a string passes the cap. */
static int strscan(struct strscan *s, const uint8_t *p, size_t n, const char *what,
		   struct sv_err *err)
{
	for (size_t i = 0; i < n; i++, s->at++) {
		uint8_t ch = p[i];
		if (!s->in) {
			if (ch == '"') {
				s->in = true;
				s->len = 0;
			}
			continue;
		}
		if (s->esc)
			s->esc = false;
		else if (ch == '\\')
			s->esc = true;
		else if (ch == '"') {
			s->in = false;
			continue;
		}
		if (++s->len > s->cap)
			return sv_err_set(err, -EFBIG, "doodle: %s: byte %llu: a string of more than "
					  "%llu bytes (the most one JSON value may hold: a sixteenth "
					  "of -o maxdecode)", what, (unsigned long long)s->at,
					  (unsigned long long)s->cap);
	}
	return 0;
}

static int parse_json(const uint8_t *p, size_t n, const char *what, json_t **out,
		      uint64_t cap, struct sv_err *err)
{
	struct strscan sc = {.cap = cap};
	*out = NULL;
	int rc = strscan(&sc, p, n, what, err);
	if (rc)
		return rc;
	json_error_t je;
	*out = json_loadb((const char *)p, n, 0, &je);
	if (!*out)
		return sv_err_set(err, -EBADMSG, "doodle: %s: byte %d: %s", what, je.position,
				  je.text);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return sv_err_set(err, -EBADMSG, "doodle: %s: not a JSON object", what);
	}
	return 0;
}

struct gz_feed {
	struct sv_gunzip g;
	struct strscan sc;
	int rc;
	struct sv_err err;
};

static size_t gz_feed_cb(void *buf, size_t len, void *arg)
{
	struct gz_feed *f = arg;
	size_t got = 0;
	if (!f->rc)
		f->rc = sv_gunzip_read(&f->g, buf, len, &got, &f->err);
	if (!f->rc)
		f->rc = strscan(&f->sc, buf, got, "gzip content", &f->err);
	return f->rc ? (size_t)-1 : got;
}

/* Parses the JSON object of a gzip stream as it is inflated: memory goes
 * to what the parser keeps, never to the inflated text (a small level
 * followed by a gigabyte of spaces costs no gigabyte).  The inflated
 * total is capped by max. */
static int parse_json_gz(const uint8_t *p, size_t n, uint64_t max, uint64_t cap,
			 json_t **out, struct sv_err *err)
{
	struct gz_feed f;
	memset(&f, 0, sizeof f);
	f.sc.cap = cap;
	if (sv_gunzip_open(&f.g, p, n, max))
		return sv_err_set(err, -ENOMEM, "out of memory");
	json_error_t je;
	*out = json_load_callback(gz_feed_cb, &f, 0, &je);
	sv_gunzip_close(&f.g);
	int rc = 0;
	if (f.rc == -EFBIG && !strncmp(f.err.msg, "doodle: ", 8))
		rc = sv_err_set(err, f.rc, "%s", f.err.msg);
	else if (f.rc)
		rc = sv_err_set(err, f.rc, "doodle: %s", f.err.msg[0] ? f.err.msg : "gzip: out of memory");
	else if (!*out)
		rc = sv_err_set(err, -EBADMSG, "doodle: gzip content: byte %d: %s", je.position,
				je.text);
	else if (!json_is_object(*out))
		rc = sv_err_set(err, -EBADMSG, "doodle: gzip content: not a JSON object");
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static uint64_t max_decode(struct drawing *d)
{
	return sv_container_opts(d->c)->max_decode;
}

static int member_blob(struct drawing *d, int64_t m, struct sv_blob **out,
		       struct sv_err *err)
{
	return sv_zip_extract(&d->zip.e[m], src_read, d, d->size, max_decode(d), out, err);
}

/* Parses "chunks/<layer>/<x>,<y>.<bin|json>". */
static bool chunk_member(const char *name, uint32_t *layer, int64_t *x, int64_t *y,
			 bool *bin)
{
	if (strncmp(name, "chunks/", 7))
		return false;
	const char *p = name + 7, *slash = strchr(p, '/');
	if (!slash || slash == p || slash - p > 5)
		return false;
	uint32_t l = 0;
	for (const char *q = p; q < slash; q++) {
		if (!isdigit((unsigned char)*q))
			return false;
		l = l * 10 + (uint32_t)(*q - '0');
	}
	const char *dot = strrchr(slash + 1, '.');
	if (!dot)
		return false;
	if (!strcmp(dot, ".bin"))
		*bin = true;
	else if (!strcmp(dot, ".json"))
		*bin = false;
	else
		return false;
	char xy[64];
	size_t k = (size_t)(dot - slash - 1);
	if (k == 0 || k >= sizeof xy)
		return false;
	memcpy(xy, slash + 1, k);
	xy[k] = '\0';
	*layer = l;
	return sv_doodle_parse_xy(xy, x, y);
}

/* Parses a chunk file name "<x>,<y>.txt" or ".bin" (*txt tells which). */
static bool chunk_file(const char *name, int64_t *x, int64_t *y, bool *txt)
{
	const char *dot = strrchr(name, '.');
	if (!dot)
		return false;
	if (!strcmp(dot, ".txt"))
		*txt = true;
	else if (!strcmp(dot, ".bin"))
		*txt = false;
	else
		return false;
	char xy[64];
	size_t k = (size_t)(dot - name);
	if (k == 0 || k >= sizeof xy)
		return false;
	memcpy(xy, name, k);
	xy[k] = '\0';
	return sv_doodle_parse_xy(xy, x, y);
}

static int cmp_chunk(const void *a, const void *b)
{
	const struct chunk *x = a, *y = b;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	if (x->cy != y->cy)
		return x->cy < y->cy ? -1 : 1;
	if (x->cx != y->cx)
		return x->cx < y->cx ? -1 : 1;
	return 0;
}

static int cmp_asset(const void *a, const void *b)
{
	return strcmp(((const struct asset *)a)->path, ((const struct asset *)b)->path);
}

/* Writes "x,y" into buf (at least 24 bytes); returns its length.  By hand:
 * an index of 10,000 chunks names 30,000 files, and snprintf would be most
 * of the time spent opening it. */
static size_t xy_name(char *buf, int64_t x, int64_t y)
{
	char tmp[48];
	size_t n = 0;
	int64_t v[2] = {y, x};
	for (int k = 0; k < 2; k++) {
		/* Coordinates come from int32 keys: no INT64_MIN here. */
		uint64_t u = v[k] < 0 ? (uint64_t)-v[k] : (uint64_t)v[k];
		do {
			tmp[n++] = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		if (v[k] < 0)
			tmp[n++] = '-';
		if (k == 0)
			tmp[n++] = ',';
	}
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

struct named {
	size_t i;
	uint32_t layer;
	char name[48];
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	return strcmp(x->name, y->name);
}

static struct chunk *find_chunk(struct drawing *d, uint32_t layer, int64_t x, int64_t y)
{
	struct chunk key = {.layer = layer, .cx = x, .cy = y};
	return d->nchunks ? bsearch(&key, d->chunks, d->nchunks, sizeof key, cmp_chunk) : NULL;
}

static void free_drawing(struct drawing *d)
{
	if (!d)
		return;
	sv_blob_unref(d->mem);
	free(d->prefix);
	json_decref(d->root);
	free(d->view);
	sv_zip_fini(&d->zip);
	free(d->role);
	free(d->role_i);
	sv_doodle_palette_fini(&d->pal);
	free(d->layers);
	free(d->chunks);
	for (size_t i = 0; i < d->nassets; i++)
		free(d->assets[i].path);
	free(d->assets);
	free(d->nest);
	free(d);
}

static void close_doodle(struct sv_container *c)
{
	struct doodle *dd = sv_container_priv(c);
	if (!dd)
		return;
	for (size_t i = 0; i < dd->n; i++)
		free_drawing(dd->d[i]);
	free(dd->d);
	free(dd);
	sv_container_set_priv(c, NULL);
}

static const char *root_name(const struct drawing *d)
{
	return d->kind == D_PACK ? "index.json" : d->kind == D_DOODAD ? "doodad.json"
								   : "level.json";
}

/* ---- the root JSON view --------------------------------------------------- */

/* A shallow copy of a chunks object {size, chunks} with the map emptied. */
static json_t *strip_chunks(json_t *chunks)
{
	if (!json_is_object(chunks))
		return json_incref(chunks);
	json_t *c2 = json_copy(chunks);
	const char *real;
	if (c2 && jget2(c2, "chunks", &real))
		json_object_set_new(c2, real, json_object());
	return c2;
}

/* The root as shown and as a zip stores it: inline chunks and files
 * emptied.  A new reference, NULL if out of memory. */
static json_t *strip_root(json_t *root, int kind)
{
	json_t *r = json_copy(root);
	if (!r)
		return NULL;
	const char *real;
	if (jget2(r, "files", &real) && json_is_object(json_object_get(r, real)))
		json_object_set_new(r, real, json_object());
	if (kind == D_LEVEL && jget2(r, "chunks", &real))
		json_object_set_new(r, real, strip_chunks(json_object_get(r, real)));
	if (kind == D_DOODAD && jget2(r, "layers", &real) &&
	    json_is_array(json_object_get(r, real))) {
		json_t *ls = json_object_get(r, real), *l2 = json_array();
		size_t i;
		json_t *l;
		json_array_foreach(ls, i, l) {
			json_t *lc = json_is_object(l) ? json_copy(l) : json_incref(l);
			const char *rc;
			if (json_is_object(lc) && jget2(lc, "chunks", &rc))
				json_object_set_new(lc, rc, strip_chunks(json_object_get(lc, rc)));
			json_array_append_new(l2, lc);
		}
		json_object_set_new(r, real, l2);
	}
	return r;
}

static int render_view(struct drawing *d)
{
	json_t *r = d->kind == D_PACK ? json_incref(d->root) : strip_root(d->root, d->kind);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = r ? json_to_buf(r, JSON_INDENT(2), &b) : -ENOMEM;
	json_decref(r);
	if (!rc)
		rc = sv_buf_add(&b, "\n", 1);
	if (rc) {
		sv_buf_fini(&b);
		return -ENOMEM;
	}
	d->view = (char *)b.p;
	d->view_len = b.len;
	return 0;
}

/* ---- reading a container --------------------------------------------------- */

static int add_chunk(struct drawing *d, size_t *cap, uint32_t layer, int64_t x,
		     int64_t y, int64_t bin, int64_t json, json_t *inl, const char *key)
{
	if (d->nchunks == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct chunk *p = realloc(d->chunks, nc * sizeof *p);
		if (!p)
			return -ENOMEM;
		d->chunks = p;
		*cap = nc;
	}
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
		ls = jget(d->root, "layers");
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
		json_t *ch = jget(ls ? json_array_get(ls, i) : d->root, "chunks");
		json_t *sz = jget(ch, "size");
		json_int_t size = 128;
		if (sz && !json_is_integer(sz))
			return sv_err_set(err, -EBADMSG, "doodle: %s: chunk size is not an integer",
					  root_name(d));
		if (sz)
			size = json_integer_value(sz);
		if (size < 1 || size > SV_DOODLE_MAX_SIZE)
			return sv_err_set(err, -EBADMSG, "doodle: %s: chunk size %lld is out of "
					  "range (1..%u)", root_name(d), (long long)size,
					  SV_DOODLE_MAX_SIZE);
		d->layers[i].size = (uint32_t)size;
		json_t *map = jget(ch, "chunks");
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
		} else if (chunk_member(name, &layer, &x, &y, &bin)) {
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
		qsort(d->chunks, d->nchunks, sizeof *d->chunks, cmp_chunk);
	/* One chunk from its sources: a .bin member before a .json member
	 * before an inline chunk (the game's preference). */
	size_t w = 0;
	for (size_t i = 0; i < d->nchunks; i++) {
		struct chunk *ch = &d->chunks[i];
		if (w && !cmp_chunk(&d->chunks[w - 1], ch)) {
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
		qsort(d->assets, members, sizeof *d->assets, cmp_asset);
	json_object_foreach(jget(d->root, "files"), k, v) {
		json_t *data = jget(v, "data");
		if (!json_is_string(data) || strncmp(k, "assets/", 7) || !k[7]) {
			sv_warn(c, "%sinline file \"%.80s\" is not {\"data\": base64} under "
				"assets/: kept, not shown", d->prefix, k);
			continue;
		}
		struct asset key = {.path = (char *)k};
		if (members && bsearch(&key, d->assets, members, sizeof key, cmp_asset)) {
			sv_warn(c, "%sinline file \"%.80s\" is also a zip member: the member is "
				"shown", d->prefix, k);
			continue;
		}
		if (add_asset(d, k, -1, data))
			return sv_err_set(err, -ENOMEM, "out of memory");
	}
	if (d->nassets)
		qsort(d->assets, d->nassets, sizeof *d->assets, cmp_asset);
	for (size_t i = 0; i < d->nassets; i++)
		if (d->assets[i].member >= 0)
			d->role_i[d->assets[i].member] = (uint32_t)i;
	return 0;
}

static void preview_geom(const struct drawing *d, uint32_t *w, uint32_t *h,
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

/* Adds the tree of a level or doodad under d->dir. */
static int build_drawing(struct drawing *d, struct sv_err *err)
{
	struct sv_container *c = d->c;
	uint32_t id = d->id;
	const uint32_t rof = 0;
	d->n_assets = sv_node_add(c, d->dir, "assets", SV_N_DIR | rof, 0, KEY(id, K_ADIR, 0));
	d->n_chunks = sv_node_add(c, d->dir, "chunks", SV_N_DIR | rof, 0, KEY(id, K_DIR, 0));
	d->n_json = sv_node_add(c, d->dir, root_name(d), rof, d->view_len, KEY(id, K_JSON, 0));
	uint32_t pw, ph;
	uint64_t scale;
	int64_t px, py;
	preview_geom(d, &pw, &ph, &scale, &px, &py);
	d->n_preview = sv_node_add(c, d->dir, "preview.png", SV_N_RO,
				   sv_png_size(pw, ph, d->pal.n), KEY(id, K_PREVIEW, 0));
	if (d->n_assets == SV_NONE || d->n_chunks == SV_NONE || d->n_json == SV_NONE ||
	    d->n_preview == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	for (uint32_t l = 0; l < d->nlayers; l++) {
		char name[16];
		snprintf(name, sizeof name, "%u", l);
		d->layers[l].dir = sv_node_add(c, d->n_chunks, name, SV_N_DIR | rof, 0,
					       KEY(id, K_LAYER, l));
		if (d->layers[l].dir == SV_NONE)
			return sv_err_set(err, -ENOMEM, "out of memory");
	}
	/* Listed in name order (as `ls` and a shell's glob sort them in the C
	 * locale), so that `cat *.txt` reads in listing order and read-ahead
	 * can follow it. */
	struct named *ord = calloc(d->nchunks + 1, sizeof *ord);
	if (!ord)
		return sv_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < d->nchunks; i++) {
		ord[i].i = i;
		ord[i].layer = d->chunks[i].layer;
		xy_name(ord[i].name, d->chunks[i].cx, d->chunks[i].cy);
	}
	if (d->nchunks)
		qsort(ord, d->nchunks, sizeof *ord, cmp_named);
	for (size_t o = 0; o < d->nchunks; o++) {
		size_t i = ord[o].i;
		struct chunk *ch = &d->chunks[i];
		uint32_t dir = d->layers[ch->layer].dir, size = d->layers[ch->layer].size;
		char name[64];
		size_t k = xy_name(name, ch->cx, ch->cy);
		name[k++] = '.';
		strcpy(name + k, "bin");
		if (ch->bin >= 0)
			ch->n_bin = sv_node_add(c, dir, name, rof, d->zip.e[ch->bin].usize,
						KEY(id, K_BIN, i));
		else
			ch->n_bin = sv_node_add(c, dir, name, rof | SV_N_LAZYSIZE, 0,
						KEY(id, K_BIN, i));
		strcpy(name + k, "png");
		ch->n_png = sv_node_add(c, dir, name, SV_N_RO, sv_png_size(size, size, d->pal.n),
					KEY(id, K_PNG, i));
		strcpy(name + k, "txt");
		ch->n_txt = sv_node_add(c, dir, name, rof,
					sv_doodle_text_size_with(&d->pal, d->legend, ch->layer,
								 ch->cx, ch->cy, size),
					KEY(id, K_TXT, i));
		if (ch->n_bin == SV_NONE || ch->n_png == SV_NONE || ch->n_txt == SV_NONE) {
			free(ord);
			return sv_err_set(err, -ENOMEM, "out of memory");
		}
	}
	free(ord);
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
		a->node = dir == SV_NONE ? SV_NONE
					  : sv_node_add(c, dir, base_name(a->path), flags, size,
							KEY(id, K_ASSET, i));
		if (a->node == SV_NONE) {
			free(s);
			return sv_err_set(err, -ENOMEM, "out of memory");
		}
	}
	free(s);
	return 0;
}

static int build_pack(struct drawing *d, struct sv_err *err);

/*
 * Reads a container (the file itself when d->mem is NULL, else d->mem)
 * and adds its tree under d->dir.
 */
static int open_drawing(struct drawing *d, struct sv_err *err)
{
	uint8_t head[4] = {0};
	size_t hn = d->size < 4 ? (size_t)d->size : 4;
	int rc = src_read(d, 0, head, hn, err);
	if (rc)
		return rc;
	struct sv_blob *whole = NULL;
	if (hn >= 4 && !memcmp(head, "PK\3\4", 4)) {
		d->ctype = C_ZIP;
		rc = sv_zip_open(&d->zip, src_read, d, d->size, MAX_MEMBERS, err);
		if (rc) {
			char m[SV_ERR_MAX];
			snprintf(m, sizeof m, "%s", err->msg);
			return sv_err_set(err, rc, "doodle: %s", m);
		}
		d->role = calloc(d->zip.n + 1, 1);
		d->role_i = calloc(d->zip.n + 1, sizeof *d->role_i);
		if (!d->role || !d->role_i)
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
		rc = member_blob(d, d->root_member, &whole, err);
		if (rc) {
			char m[SV_ERR_MAX];
			snprintf(m, sizeof m, "%s", err->msg);
			return sv_err_set(err, rc == -EFBIG ? rc : -EBADMSG, "doodle: %s", m);
		}
		rc = parse_json(whole->data, whole->len, root_name(d), &d->root, string_cap(d->c), err);
		sv_blob_unref(whole);
		if (rc)
			return rc;
	} else {
		if (d->size > max_decode(d))
			return sv_err_set(err, -EFBIG, "doodle: %llu bytes, more than the decode "
					  "limit (-o maxdecode)", (unsigned long long)d->size);
		whole = sv_blob_new((size_t)d->size);
		if (!whole)
			return sv_err_set(err, -ENOMEM, "out of memory");
		rc = src_read(d, 0, whole->data, whole->len, err);
		if (!rc && hn >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
			d->ctype = C_GZIP;
			rc = parse_json_gz(whole->data, whole->len, max_decode(d), string_cap(d->c),
					   &d->root, err);
		} else if (!rc) {
			d->ctype = C_JSON;
			rc = parse_json(whole->data, whole->len, "JSON", &d->root, string_cap(d->c), err);
		}
		sv_blob_unref(whole);
		if (rc)
			return rc;
		json_t *ls = jget(d->root, "layers");
		d->kind = json_is_array(ls) && !jget(d->root, "chunks") ? D_DOODAD : D_LEVEL;
		/* What the game writes for every level (chunks) or doodad
		 * (layers): a JSON file without either is someone else's. */
		if (!json_is_object(d->root) || !json_is_number(jget(d->root, "version")) ||
		    (!json_is_object(jget(d->root, "chunks")) && !json_is_array(ls)))
			return sv_err_set(err, -EMEDIUMTYPE, "doodle: the root JSON has no "
					  "\"version\" with \"chunks\" or \"layers\": not a "
					  "drawing");
	}
	if (render_view(d))
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (d->kind == D_PACK)
		return build_pack(d, err);
	unsigned bad_colours = 0;
	rc = sv_doodle_palette_from_json(jget(d->root, "palette"), &d->pal, &bad_colours, err);
	if (rc) {
		char m[SV_ERR_MAX];
		snprintf(m, sizeof m, "%s", err->msg);
		return sv_err_set(err, rc, "doodle: %s: palette: %s", root_name(d), m);
	}
	if (bad_colours)
		sv_warn(d->c, "%s%s: %u palette colour(s) do not parse: shown black", d->prefix,
			root_name(d), bad_colours);
	d->legend = sv_doodle_legend_size(&d->pal);
	rc = read_layers(d, err);
	if (!rc)
		rc = collect(d, err);
	if (!rc)
		rc = build_drawing(d, err);
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
		uint32_t n = sv_node_add(c, dirs[t], stem, SV_N_DIR | SV_N_LAZYDIR, 0,
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
	int rc = member_blob(pack, ne->member, &b, err);
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
	rc = open_drawing(d, err);
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
	return open_drawing(d, err);
}

/* ---- decoding on demand --------------------------------------------------- */

static struct drawing *node_drawing(struct sv_container *c, uint64_t key)
{
	struct doodle *dd = sv_container_priv(c);
	return KEY_D(key) < dd->n ? dd->d[KEY_D(key)] : NULL;
}

static void log_quirks(struct drawing *d, const struct chunk *ch,
		       const struct sv_doodle_quirks *q)
{
	char where[128];
	snprintf(where, sizeof where, "%schunks/%u/%lld,%lld", d->prefix, ch->layer,
		 (long long)ch->cx, (long long)ch->cy);
	struct sv_container *c = d->c;
	if (q->run_clamped)
		sv_log(c, "%s: RLE runs go %llu pixel(s) past the end of the chunk: cut off",
		       where, (unsigned long long)q->run_clamped);
	/* The game's own encoder drops a final run of one pixel. */
	if (q->short_by > 1)
		sv_log(c, "%s: RLE stream %llu pixels short: the rest left empty", where,
		       (unsigned long long)q->short_by);
	if (q->outside)
		sv_log(c, "%s: %llu pixel(s) outside the chunk: ignored", where,
		       (unsigned long long)q->outside);
	if (q->bad_index)
		sv_log(c, "%s: %llu pixel(s) with an index past the palette (%u colours): "
		       "shown as '?'", where, (unsigned long long)q->bad_index, d->pal.n);
	if (q->bad_key)
		sv_log(c, "%s: %llu pixel key(s) that are not \"x,y\" with an index: ignored",
		       where, (unsigned long long)q->bad_key);
	if (q->partial)
		sv_log(c, "%s: a partial record at the end: ignored", where);
}

/* Decodes chunk ch into g (allocated here). */
static int chunk_grid(struct drawing *d, const struct chunk *ch, struct sv_doodle_grid *g,
		      struct sv_err *err)
{
	int rc = sv_doodle_grid_init(g, d->layers[ch->layer].size, ch->cx, ch->cy);
	if (rc)
		return sv_err_set(err, rc, "out of memory");
	struct sv_doodle_quirks q;
	memset(&q, 0, sizeof q);
	struct sv_blob *b = NULL;
	json_t *j = NULL;
	if (ch->bin >= 0) {
		rc = member_blob(d, ch->bin, &b, err);
		if (!rc)
			rc = sv_doodle_bin_decode(b->data, b->len, d->pal.n, g, &q, err);
	} else if (ch->json >= 0) {
		rc = member_blob(d, ch->json, &b, err);
		if (!rc)
			rc = parse_json(b->data, b->len, d->zip.e[ch->json].name, &j, string_cap(d->c), err);
		if (!rc)
			rc = sv_doodle_json_decode(j, d->pal.n, g, &q, err);
	} else {
		rc = sv_doodle_json_decode(ch->inl, d->pal.n, g, &q, err);
	}
	json_decref(j);
	sv_blob_unref(b);
	if (rc)
		sv_doodle_grid_fini(g);
	else
		log_quirks(d, ch, &q);
	return rc;
}

static int buf_blob(struct sv_buf *b, struct sv_blob **out)
{
	*out = sv_blob_dup(b->p, b->len);
	sv_buf_fini(b);
	return *out ? 0 : -ENOMEM;
}

static int load_preview(struct drawing *d, struct sv_blob **out, struct sv_err *err)
{
	uint32_t w, h;
	uint64_t scale;
	int64_t x0, y0;
	preview_geom(d, &w, &h, &scale, &x0, &y0);
	uint16_t *img = malloc((size_t)w * h * sizeof *img);
	if (!img)
		return sv_err_set(err, -ENOMEM, "out of memory");
	memset(img, 0xff, (size_t)w * h * sizeof *img);
	int rc = 0;
	for (size_t i = 0; i < d->nchunks && d->chunks[i].layer == 0 && !rc; i++) {
		struct sv_doodle_grid g;
		struct sv_err e;
		sv_err_clear(&e);
		if (chunk_grid(d, &d->chunks[i], &g, &e)) {
			if (e.code == -ENOMEM)
				rc = sv_err_set(err, -ENOMEM, "out of memory");
			continue; /* a bad chunk leaves a hole, not a failed preview */
		}
		for (uint32_t r = 0; r < g.size; r++) {
			uint64_t py = (uint64_t)(g.y0 + r - y0) / scale;
			for (uint32_t col = 0; col < g.size; col++) {
				uint16_t v = g.px[(size_t)r * g.size + col];
				if (v == SV_DOODLE_EMPTY)
					continue;
				uint64_t px = (uint64_t)(g.x0 + col - x0) / scale;
				img[py * w + px] = v;
			}
		}
		sv_doodle_grid_fini(&g);
	}
	struct sv_buf b;
	sv_buf_init(&b);
	if (!rc && sv_png_encode(w, h, img, &d->pal, &b))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	free(img);
	if (!rc && buf_blob(&b, out))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	sv_buf_fini(&b);
	return rc;
}

static int load_doodle(struct sv_container *c, uint32_t node, struct sv_blob **out,
		       struct sv_err *err)
{
	uint64_t key = sv_node(c, node)->key;
	struct drawing *d = node_drawing(c, key);
	if (!d)
		return sv_err_set(err, -EIO, "no such entry");
	uint32_t i = KEY_I(key);
	struct sv_buf b;
	sv_buf_init(&b);
	struct sv_doodle_grid g;
	int rc = 0;
	switch (KEY_KIND(key)) {
	case K_JSON:
		*out = sv_blob_dup(d->view, d->view_len);
		return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	case K_PREVIEW:
		return load_preview(d, out, err);
	case K_ASSET: {
		struct asset *a = &d->assets[i];
		if (a->member >= 0)
			return member_blob(d, a->member, out, err);
		rc = sv_base64_decode(json_string_value(a->inl), json_string_length(a->inl), &b,
				      err);
		if (!rc && buf_blob(&b, out))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		sv_buf_fini(&b);
		return rc;
	}
	case K_BIN:
		if (d->chunks[i].bin >= 0)
			return member_blob(d, d->chunks[i].bin, out, err);
		/* A JSON chunk shows the RLE savefs would write. */
		__attribute__((fallthrough));
	case K_TXT:
	case K_PNG: {
		struct chunk *ch = &d->chunks[i];
		uint32_t size = d->layers[ch->layer].size;
		if (sv_png_size(size, size, d->pal.n) > max_decode(d) ||
		    sv_doodle_text_size_with(&d->pal, d->legend, ch->layer, ch->cx, ch->cy, size) >
			    max_decode(d))
			return sv_err_set(err, -EFBIG, "a %ux%u chunk's views are larger than "
					  "-o maxdecode", size, size);
		rc = chunk_grid(d, ch, &g, err);
		if (rc)
			return rc;
		if (KEY_KIND(key) == K_TXT)
			rc = sv_doodle_text_render(&d->pal, ch->layer, ch->cx, ch->cy, &g, &b);
		else if (KEY_KIND(key) == K_PNG)
			rc = sv_png_encode(g.size, g.size, g.px, &d->pal, &b);
		else {
			/* A pixel past the palette cannot be written as RLE: it
			 * shows empty here, and the text shows it as '?'. */
			for (size_t p = 0; p < (size_t)g.size * g.size; p++)
				if (g.px[p] == SV_DOODLE_BADPIX)
					g.px[p] = SV_DOODLE_EMPTY;
			rc = sv_doodle_rle_encode(&g, &b);
		}
		sv_doodle_grid_fini(&g);
		if (!rc)
			rc = buf_blob(&b, out);
		sv_buf_fini(&b);
		return rc ? sv_err_set(err, rc, "out of memory") : 0;
	}
	default:
		return sv_err_set(err, -EISDIR, "not a file");
	}
}

/* ---- edits ----------------------------------------------------------------- */

/* Checks the type of o[key] (if present and not null): 'i' integer, 'n'
 * number, 's' string, 'b' boolean, 'o' object, 'a' array. */
static int want(json_t *o, const char *key, char type, const char *where,
		struct sv_err *err)
{
	json_t *v = jget(o, key);
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
	json_t *sz = jget(ch, "size");
	/* A root that never said its size (128 by default) may go on not
	 * saying it. */
	if (!had_size && !sz)
		return json_object_size(jget(ch, "chunks"))
			       ? sv_err_set(err, -EINVAL, "%s\"chunks\" must stay {}: edit chunks "
					    "as the files in chunks/", where)
			       : 0;
	if (!json_is_integer(sz) || json_integer_value(sz) != (json_int_t)size)
		return sv_err_set(err, -EINVAL, "%s\"size\" must stay %u: the chunks are "
				  "stored at that size", where, size);
	if (json_object_size(jget(ch, "chunks")))
		return sv_err_set(err, -EINVAL, "%s\"chunks\" must stay {}: edit chunks as "
				  "the files in chunks/", where);
	return 0;
}

static int check_root(struct drawing *d, const uint8_t *p, size_t n, json_t **out,
		      struct sv_err *err)
{
	json_error_t je;
	json_t *r = json_loadb((const char *)p, n, 0, &je);
	if (!r)
		return sv_err_set(err, -EINVAL, "%s: line %d, column %d: %s", root_name(d),
				  je.line, je.column, je.text);
	char where[96];
	int rc = 0;
	if (!json_is_object(r)) {
		rc = sv_err_set(err, -EINVAL, "%s: not a JSON object", root_name(d));
		goto out;
	}
	snprintf(where, sizeof where, "%s: ", root_name(d));
	rc = want_all(r, "version:n gameVersion:s title:s author:s locked:b passwd:s uuid:s "
		      "rules:o palette:o pageType:i boundedWidth:i boundedHeight:i "
		      "wallpaper:s scroll:s actors:o saveDoodads:b saveBuiltins:b files:o "
		      "chunks:o hidden:b size:o script:s hitbox:o layers:a data:o options:o",
		      where, err);
	if (!rc && json_object_size(jget(r, "files")))
		rc = sv_err_set(err, -EINVAL, "%s\"files\" must stay {}: edit attached files "
				"in assets/", where);
	if (!rc) {
		snprintf(where, sizeof where, "%s: rules: ", root_name(d));
		rc = want_all(jget(r, "rules"), "difficulty:i survival:b", where, err);
	}
	json_t *sw = jget(jget(r, "palette"), "swatches");
	if (!rc && sw && !json_is_array(sw))
		rc = sv_err_set(err, -EINVAL, "%s: palette: \"swatches\" must be an array",
				root_name(d));
	size_t i;
	json_t *v;
	json_array_foreach(sw, i, v) {
		if (rc)
			break;
		snprintf(where, sizeof where, "%s: palette swatch %zu: ", root_name(d), i);
		if (!json_is_object(v)) {
			rc = sv_err_set(err, -EINVAL, "%smust be an object", where);
			break;
		}
		rc = want_all(v, "name:s color:s pattern:s solid:b semisolid:b fire:b water:b "
			      "slippery:b", where, err);
		json_t *col = jget(v, "color");
		uint8_t rgba[4];
		if (!rc && json_is_string(col) &&
		    sv_doodle_colour_parse(json_string_value(col), rgba))
			rc = sv_err_set(err, -EINVAL, "%s\"color\" \"%.40s\" is not #rgb, "
					"#rrggbb or #rrggbbaa", where, json_string_value(col));
	}
	if (!rc && json_array_size(sw) > SV_DOODLE_MAX_PALETTE)
		rc = sv_err_set(err, -EINVAL, "%s: more than %u palette swatches", root_name(d),
				SV_DOODLE_MAX_PALETTE);
	const char *k;
	json_object_foreach(jget(r, "actors"), k, v) {
		if (rc)
			break;
		snprintf(where, sizeof where, "%s: actor %.40s: ", root_name(d), k);
		if (!json_is_object(v))
			rc = sv_err_set(err, -EINVAL, "%smust be an object", where);
		else
			rc = want_all(v, "filename:s point:s links:a options:o", where, err);
	}
	if (rc)
		goto out;
	if (d->kind == D_LEVEL) {
		snprintf(where, sizeof where, "%s: chunks: ", root_name(d));
		bool had = jget(jget(d->root, "chunks"), "size") != NULL;
		rc = check_chunks(jget(r, "chunks"), d->layers[0].size, had, where, err);
		if (!rc && had && !json_is_object(jget(r, "chunks")))
			rc = sv_err_set(err, -EINVAL, "%s: \"chunks\" must stay, with its "
					"\"size\" of %u", root_name(d), d->layers[0].size);
	} else {
		json_t *ls = jget(r, "layers");
		for (const char *o = "size hitbox", *e; !rc && *o; o = *e ? e + 1 : e) {
			e = strchr(o, ' ');
			e = e ? e : o + strlen(o);
			char key[16];
			snprintf(key, sizeof key, "%.*s", (int)(e - o), o);
			snprintf(where, sizeof where, "%s: %s: ", root_name(d), key);
			rc = want_all(jget(r, key), "X:i Y:i W:i H:i", where, err);
		}
		if (!rc && json_array_size(ls) != d->nlayers)
			rc = sv_err_set(err, -EINVAL, "%s: \"layers\" must keep its %u layer(s): "
					"their chunks are stored by layer number", root_name(d),
					d->nlayers);
		json_array_foreach(ls, i, v) {
			if (rc)
				break;
			snprintf(where, sizeof where, "%s: layer %zu: ", root_name(d), i);
			if (!json_is_object(v))
				rc = sv_err_set(err, -EINVAL, "%smust be an object", where);
			else
				rc = want_all(v, "name:s chunks:o", where, err);
			if (!rc)
				rc = check_chunks(jget(v, "chunks"), d->layers[i].size,
						  jget(jget(json_array_get(jget(d->root, "layers"), i),
							    "chunks"), "size") != NULL,
						  where, err);
		}
		json_object_foreach(jget(r, "data"), k, v) {
			if (!rc && !json_is_string(v))
				rc = sv_err_set(err, -EINVAL, "%s: data: \"%.40s\" must be a string",
						root_name(d), k);
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
static int grid_from_edit(struct drawing *d, uint32_t layer, int64_t x, int64_t y,
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
	d = node_drawing(c, key);
	if (!d)
		return false;
	*dp = d;
	if (KEY_KIND(key) == K_LAYER) {
		*layer = KEY_I(key);
		return chunk_file(n->name, x, y, txt);
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

static int check_doodle(struct sv_container *c, uint32_t node, const uint8_t *p,
			size_t n, struct sv_err *err)
{
	struct drawing *d;
	uint32_t layer;
	int64_t x, y;
	bool txt;
	if (node_chunk(c, node, &d, &layer, &x, &y, &txt)) {
		struct sv_doodle_grid g;
		int rc = grid_from_edit(d, layer, x, y, txt, p, n, &g, err);
		sv_doodle_grid_fini(&g);
		return rc;
	}
	uint64_t key = sv_node(c, node)->key;
	d = node_drawing(c, key);
	if (d && KEY_KIND(key) == K_JSON && !(sv_node_state(c, node) & SV_S_NEW))
		return check_root(d, p, n, NULL, err);
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

static int create_doodle(struct sv_container *c, uint32_t parent, const char *name,
			 struct sv_err *err)
{
	uint64_t key = sv_node(c, parent)->key;
	struct drawing *d = node_drawing(c, key);
	if (!d || scratch_name(name))
		return -ENOENT;
	if (KEY_KIND(key) == K_ADIR)
		return 0;
	int64_t x, y;
	bool txt;
	if (KEY_KIND(key) != K_LAYER || !chunk_file(name, &x, &y, &txt))
		return -ENOENT;
	if (find_chunk(d, KEY_I(key), x, y))
		return sv_err_set(err, -EEXIST, "chunk %lld,%lld exists", (long long)x,
				  (long long)y);
	return 0;
}

static int unlink_doodle(struct sv_container *c, uint32_t node, struct sv_err *err)
{
	uint64_t key = sv_node(c, node)->key;
	struct drawing *d = node_drawing(c, key);
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
	uint32_t *tnode, *bnode;     /* per chunk: its .txt and .bin now, or SV_NONE */
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
	bool rle = !member_blob(d, ch->bin, &b, &e);
	if (rle) {
		sv_rd_init(&r, b->data, b->len);
		rle = sv_rd_uleb64(&r) == 1 && sv_rd_ok(&r);
	}
	sv_blob_unref(b);
	return !rle;
}

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
	p->anode = malloc((d->nassets ? d->nassets : 1) * sizeof *p->anode);
	if (!p->cstate || !p->grid || !p->convert || !p->astate || !p->tnode || !p->bnode ||
	    !p->anode)
		return sv_err_set(err, -ENOMEM, "out of memory");
	/* Where each entry is now: a file renamed over an entry takes its key
	 * (and the entry's old node goes), so look by key. */
	p->jnode = SV_NONE;
	memset(p->tnode, 0xff, nch * sizeof *p->tnode);
	memset(p->bnode, 0xff, nch * sizeof *p->bnode);
	memset(p->anode, 0xff, (d->nassets ? d->nassets : 1) * sizeof *p->anode);
	for (uint32_t n = 1, count = sv_node_count(c); n < count; n++) {
		uint64_t key = sv_node(c, n)->key;
		if (KEY_D(key) != d->id || !sv_node_in_commit(c, n) ||
		    (sv_node(c, n)->flags & SV_N_DIR) || (sv_node_state(c, n) & SV_S_NEW))
			continue;
		unsigned kind = KEY_KIND(key);
		if (kind == K_TXT && KEY_I(key) < d->nchunks)
			p->tnode[KEY_I(key)] = n;
		else if (kind == K_BIN && KEY_I(key) < d->nchunks)
			p->bnode[KEY_I(key)] = n;
		else if (kind == K_ASSET && KEY_I(key) < d->nassets)
			p->anode[KEY_I(key)] = n;
		else if (kind == K_JSON)
			p->jnode = n;
	}
	const struct sv_buf *e = p->jnode != SV_NONE ? sv_node_edit(c, p->jnode) : NULL;
	if (e) {
		rc = check_root(d, e->p, e->len, &p->root, err);
		if (rc)
			return rc;
		p->root_edited = p->root_rewrite = true;
	} else {
		p->root = json_incref(d->root);
	}
	for (size_t i = 0; i < d->nchunks; i++) {
		struct chunk *ch = &d->chunks[i];
		if (p->tnode[i] == SV_NONE || p->bnode[i] == SV_NONE) {
			p->cstate[i] = S_GONE;
		} else {
			const struct sv_buf *et = sv_node_edit(c, p->tnode[i]);
			const struct sv_buf *eb = sv_node_edit(c, p->bnode[i]);
			if (et || eb) {
				bool txt = et != NULL;
				if (et && eb)
					sv_log(c, "%schunks/%u/%lld,%lld: both .txt and .bin were "
					       "written: the .txt is stored", d->prefix, ch->layer,
					       (long long)ch->cx, (long long)ch->cy);
				const struct sv_buf *ed = txt ? et : eb;
				rc = grid_from_edit(d, ch->layer, ch->cx, ch->cy, txt, ed->p,
						    ed->len, &p->grid[i], err);
				if (rc)
					return rc;
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
	size_t cap = 0;
	for (uint32_t l = 0; l < d->nlayers; l++) {
		struct sv_node *dir = sv_node(c, d->layers[l].dir);
		for (uint32_t k = 0; k < dir->nkids; k++) {
			uint32_t kid = sv_node(c, d->layers[l].dir)->kids[k];
			struct sv_node *kn = sv_node(c, kid);
			int64_t x, y;
			bool txt;
			if (!(sv_node_state(c, kid) & SV_S_NEW) || !sv_node_in_commit(c, kid) ||
			    !chunk_file(kn->name, &x, &y, &txt) || find_chunk(d, l, x, y))
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
			rc = grid_from_edit(d, l, x, y, txt, ed->p, ed->len, &nc->g, err);
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
		if (chunk_grid(d, ch, &g, &why)) {
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
		int rc = chunk_grid(d, &d->chunks[i], &g, err);
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
		int rc = member_blob(d, a->member, &b, err);
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
	struct chunk *ch = sv_doodle_parse_xy(k, &x, &y) ? find_chunk(d, l, x, y) : NULL;
	if (!ch || ch->inl != v || p->cstay[ch - d->chunks])
		return false;
	return !(ch->bin >= 0 || ch->json >= 0) || p->cstate[ch - d->chunks] != S_KEEP;
}

/* The root as a zip stores it after a rewrite: the plan's root with its
 * maps emptied of what became members. */
static json_t *zip_root(struct drawing *d, struct plan *p)
{
	json_t *r = strip_root(p->root, d->kind);
	if (!r)
		return NULL;
	const char *k;
	json_t *v;
	json_t *files = jget(r, "files");
	json_object_foreach(jget(d->root, "files"), k, v) {
		struct asset key = {.path = (char *)k};
		struct asset *a = d->nassets ? bsearch(&key, d->assets, d->nassets, sizeof key,
						       cmp_asset) : NULL;
		if (a && a->inl && !p->astay[a - d->assets])
			continue;
		if (!json_is_object(files)) {
			files = json_object();
			jset(r, "files", files);
		}
		json_object_set(files, k, v);
	}
	for (uint32_t l = 0; l < d->nlayers; l++) {
		json_t *holder = d->kind == D_LEVEL ? r : json_array_get(jget(r, "layers"), l);
		json_t *map = jget(jget(holder, "chunks"), "chunks");
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
	int rc = r ? json_to_buf(r, JSON_COMPACT, &b) : -ENOMEM;
	json_decref(r);
	if (rc)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	else
		rc = add_member(w, root_name(d), b.p, b.len, err);
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
			rc = sv_zip_add_members(&w, &d->zip, run, m, src_read, d, d->size, src_fd,
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
				rc = sv_zip_add_members(&w, &d->zip, m, m + 1, src_read, d, d->size,
							src_fd, src_mem, err);
			break;
		}
	}
	if (!rc)
		rc = sv_zip_finish(&w, d->zip.comment, d->zip.comment_len, err);
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
		struct chunk *ch = sv_doodle_parse_xy(k, &x, &y) ? find_chunk(d, l, x, y) : NULL;
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
	if (json_is_object(chunks) && !jget(chunks, "chunks") && !json_object_size(map)) {
		json_decref(map);
		return json_incref(chunks);
	}
	json_t *c2 = json_is_object(chunks) ? json_copy(chunks) : json_object();
	if (c2)
		jset(c2, "chunks", map);
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
		if (jget(r, "chunks") || json_object_size(map))
			jset(r, "chunks", with_map(jget(r, "chunks"), map));
		else
			json_decref(map);
	} else {
		json_t *ls = jget(r, "layers"), *l2 = json_array();
		for (uint32_t l = 0; l < d->nlayers; l++) {
			json_t *lo = json_array_get(ls, l);
			json_t *lc = json_is_object(lo) ? json_copy(lo) : json_object();
			json_t *map = json_chunk_map(d, p, l);
			if (jget(lc, "chunks") || json_object_size(map))
				jset(lc, "chunks", with_map(jget(lc, "chunks"), map));
			else
				json_decref(map);
			json_array_append_new(l2, lc);
		}
		jset(r, "layers", l2);
	}
	json_t *files = json_object(), *orig = jget(d->root, "files");
	const char *k;
	json_t *v;
	int rc = 0;
	struct sv_buf b, t;
	sv_buf_init(&b);
	sv_buf_init(&t);
	json_object_foreach(orig, k, v) {
		struct asset key = {.path = (char *)k};
		struct asset *a = d->nassets ? bsearch(&key, d->assets, d->nassets, sizeof key,
							       cmp_asset) : NULL;
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
		jset(r, "files", files);
	else
		json_decref(files);
	b.len = 0;
	if (!rc)
		rc = json_to_buf(r, JSON_COMPACT, &b);
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
			rc = sv_zip_add_members(&w, &pack->zip, run, m, src_read, pack, pack->size,
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

static int commit_doodle(struct sv_container *c, int fd, struct sv_err *err)
{
	struct doodle *dd = sv_container_priv(c);
	struct drawing *d = dd->d[0];
	bool changed;
	return d->kind == D_PACK ? commit_pack(d, fd, err)
				 : commit_drawing(d, fd, NULL, &changed, err);
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

const struct sv_format sv_fmt_doodle = {
	.name = "doodle",
	.description = "Sketchy Maze level, doodad or levelpack (.level, .doodad, "
		       ".levelpack: JSON, gzip JSON or zip)",
	.commit_file = SV_COMMIT_REWRITE,
	.probe = probe,
	.open = open_doodle,
	.close = close_doodle,
	.load = load_doodle,
	.check = check_doodle,
	.create = create_doodle,
	.unlink = unlink_doodle,
	.commit = commit_doodle,
	.info = info_doodle,
	.expand = expand_doodle,
};
