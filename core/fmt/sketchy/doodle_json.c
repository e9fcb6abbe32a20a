/*
 * doodle_json.c - what the Sketchy Maze files share about a drawing's
 * bytes: JSON read strictly (keys in any case, as Go's decoder takes
 * them; strings bounded), gzip JSON, a zip's members and chunk names, the
 * chunk and asset tables' orders, and the root JSON view without its
 * chunks.
 */
#include "doodle_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

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

int sv_dd_probe_doodle(const uint8_t *h, size_t n)
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

int sv_dd_src_read(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
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

json_t *sv_dd_jget(json_t *o, const char *key) { return jget2(o, key, NULL); }

/* Sets key in o, under the spelling already there if any. */
int sv_dd_jset(json_t *o, const char *key, json_t *v)
{
	const char *real = key;
	jget2(o, key, &real);
	return json_object_set_new(o, real, v);
}

int sv_dd_json_to_buf(json_t *j, size_t flags, struct sv_buf *b)
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

uint64_t sv_dd_string_cap(struct sv_container *c)
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

int sv_dd_parse_json(const uint8_t *p, size_t n, const char *what, json_t **out,
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
int sv_dd_parse_json_gz(const uint8_t *p, size_t n, uint64_t max, uint64_t cap,
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

uint64_t sv_dd_max_decode(struct drawing *d)
{
	return sv_container_opts(d->c)->max_decode;
}

int sv_dd_member_blob(struct drawing *d, int64_t m, struct sv_blob **out,
		      struct sv_err *err)
{
	return sv_zip_extract(&d->zip.e[m], sv_dd_src_read, d, d->size, sv_dd_max_decode(d), out, err);
}

/* Parses "chunks/<layer>/<x>,<y>.<bin|json>". */
bool sv_dd_chunk_member(const char *name, uint32_t *layer, int64_t *x, int64_t *y,
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
bool sv_dd_chunk_file(const char *name, int64_t *x, int64_t *y, bool *txt)
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

int sv_dd_cmp_chunk(const void *a, const void *b)
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

/* Where a chunk came from, in the order they were taken in: zip members
 * in directory order, then inline chunks (whose keys are unique). */
static int64_t chunk_source(const struct chunk *c)
{
	return c->bin >= 0 ? c->bin : c->json >= 0 ? c->json : INT64_MAX;
}

/* cmp_chunk, then the order taken in: a total order, so that which copy
 * of a chunk stored twice comes first does not hang on the sort being
 * stable (an array in a file is sorted by runs and a merge). */
int sv_dd_cmp_chunk_taken(const void *a, const void *b)
{
	int r = sv_dd_cmp_chunk(a, b);
	if (r)
		return r;
	int64_t x = chunk_source(a), y = chunk_source(b);
	return x < y ? -1 : x > y;
}

int sv_dd_cmp_asset(const void *a, const void *b)
{
	return strcmp(((const struct asset *)a)->path, ((const struct asset *)b)->path);
}

/* Writes "x,y" into buf (at least 24 bytes); returns its length.  By hand:
 * an index of 10,000 chunks names 30,000 files, and snprintf would be most
 * of the time spent opening it. */
size_t sv_dd_xy_name(char *buf, int64_t x, int64_t y)
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


int sv_dd_cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct chunk *sv_dd_find_chunk(const struct drawing *d, uint32_t layer, int64_t x, int64_t y)
{
	struct chunk key = {.layer = layer, .cx = x, .cy = y};
	return d->nchunks ? bsearch(&key, d->chunks, d->nchunks, sizeof key, sv_dd_cmp_chunk) : NULL;
}

void sv_dd_free_drawing(struct drawing *d)
{
	if (!d)
		return;
	sv_blob_unref(d->mem);
	free(d->prefix);
	json_decref(d->root);
	free(d->view);
	sv_zip_fini(&d->zip);
	sv_tab_free(d->role);
	sv_tab_free(d->role_i);
	sv_doodle_palette_fini(&d->pal);
	free(d->layers);
	sv_tab_free(d->chunks);
	sv_tab_free(d->ord);
	sv_tab_free(d->rank);
	for (size_t i = 0; i < d->nassets; i++)
		free(d->assets[i].path);
	free(d->assets);
	free(d->nest);
	free(d);
}

void sv_dd_close_doodle(struct sv_container *c)
{
	struct doodle *dd = sv_container_priv(c);
	if (!dd)
		return;
	for (size_t i = 0; i < dd->n; i++)
		sv_dd_free_drawing(dd->d[i]);
	free(dd->d);
	sv_dd_forget_next(dd);
	free(dd);
	sv_container_set_priv(c, NULL);
}

void sv_dd_forget_next(struct doodle *dd)
{
	if (dd->has_next)
		sv_zip_fini(&dd->next);
	dd->has_next = false;
	free(dd->next_chunks);
	dd->next_chunks = NULL;
	dd->next_nchunks = 0;
	dd->next_only_chunks = false;
}

const char *sv_dd_root_name(const struct drawing *d)
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
json_t *sv_dd_strip_root(json_t *root, int kind)
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

int sv_dd_render_view(struct drawing *d)
{
	json_t *r = d->kind == D_PACK ? json_incref(d->root) : sv_dd_strip_root(d->root, d->kind);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = r ? sv_dd_json_to_buf(r, JSON_INDENT(2), &b) : -ENOMEM;
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
