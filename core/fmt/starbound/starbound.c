/*
 * starbound.c - Starbound BTreeDB5 databases (.world, .shipworld,
 * universe.chunks); SBVJ01 files (.player, universe.dat, .metadata) are
 * sbvj01.c's, edits and the commit starbound_commit.c's.
 *
 * Tree (DESIGN.md): header.json; keys/<hex key> for every record, inflated
 * where it is a zlib stream; for a World4 database world/metadata.json,
 * world/tiles/<sx>,<sy>.{tsv,txt,png}, world/entities/<sx>,<sy>.json,
 * world/uniques.json and preview.png; for a Celestial2 database
 * celestial/<x>,<y>.json (listed on first use: the names come from inside
 * the values, whose keys are hashes).  An SBVJ01 file is data.json.
 *
 * Open walks the active tree once (bt5tree.c) and keeps its shape; no value
 * is read or inflated.  A view decodes its record when it is read.
 *
 * Write-back is the game's own: every edit closed becomes a record change
 * (the view parsed, encoded as the game encodes it, deflated), an entity
 * sector's unique ids update the unique index (types 3 and 4) the way the
 * game's WorldStorage does, and the changes go into the file copy-on-write
 * (sv_bt5_tree_commit) with a root flip.  Not while the game or a server
 * holds universe.lock beside the file, and never over a root another
 * program flipped since the file was read.
 */
#include "starbound_priv.h"

static int rd_c(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	return sv_container_pread(arg, off, buf, n, err);
}

/* Opening reads every index and leaf block: through a window, not a read
 * per 2 KiB block.  The window grows to 256 KiB while the blocks come in
 * file order and falls back to 16 KiB when they jump (leaves written in
 * another order than their keys': a universe's hashed keys), so that a
 * jump does not read 256 KiB for one block.  Two windows are kept: the
 * walk goes back and forth between the index blocks (the game writes
 * them at the end) and the run of leaves, and each keeps its place and
 * its size instead of being read again from 16 KiB. */
#define WINDOW (256u << 10)
#define WINDOW_MIN (16u << 10)

struct span {
	uint64_t off;
	size_t len, want;
	uint8_t *buf;
};

struct window {
	struct sv_container *c;
	uint64_t size;
	struct span cur, other; /* the one read last, and the one before */
	uint8_t *side;  /* view_window: what the windows cannot hold */
};

static bool span_holds(const struct span *s, uint64_t off, size_t n)
{
	return s->len && off >= s->off && off + n <= s->off + s->len;
}

/* Whether [off, ...) goes on from s in file order: past its end, or
 * across it (blocks do not fall on its edges). */
static bool span_goes_on(const struct span *s, uint64_t off)
{
	return s->len && off >= s->off && off < s->off + s->len + WINDOW_MIN;
}

/* Makes the current window hold [off, off + n) (n <= WINDOW_MIN, within
 * the file). */
static int window_fill(struct window *w, uint64_t off, size_t n, struct sv_err *err)
{
	if (span_holds(&w->cur, off, n))
		return 0;
	/* The other window holds it, or its run goes on here: it becomes
	 * the current one; else the older window is read anew. */
	if (span_holds(&w->other, off, n) || span_goes_on(&w->other, off) ||
	    !span_goes_on(&w->cur, off)) {
		struct span t = w->cur;
		w->cur = w->other;
		w->other = t;
		if (span_holds(&w->cur, off, n))
			return 0;
	}
	struct span *s = &w->cur;
	s->want = span_goes_on(s, off) ? (s->want * 2 > WINDOW ? WINDOW : s->want * 2)
				       : WINDOW_MIN;
	s->off = off & ~(uint64_t)4095;
	s->len = (size_t)(w->size - s->off < s->want ? w->size - s->off : s->want);
	if (s->len < off - s->off + n)
		s->len = (size_t)(off - s->off + n); /* within the file: checked above */
	int rc = sv_container_pread(w->c, s->off, s->buf, s->len, err);
	if (rc) {
		s->len = 0;
		return rc;
	}
	return 0;
}

static int rd_window(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	struct window *w = arg;
	if (n > WINDOW_MIN || off + n > w->size)
		return sv_container_pread(w->c, off, buf, n, err);
	int rc = window_fill(w, off, n, err);
	if (!rc)
		memcpy(buf, w->cur.buf + (off - w->cur.off), n);
	return rc;
}

/* The same bytes, lent where the window holds them (the walk's blocks
 * need no copy); what the window cannot hold is read into `side`. */
static int view_window(void *arg, uint64_t off, size_t n, const uint8_t **out,
		       struct sv_err *err)
{
	struct window *w = arg;
	if (n > WINDOW_MIN || off + n > w->size) {
		uint8_t *p = realloc(w->side, n ? n : 1);
		if (!p)
			return sv_err_set(err, -ENOMEM, "out of memory");
		w->side = p;
		*out = p;
		return sv_container_pread(w->c, off, p, n, err);
	}
	int rc = window_fill(w, off, n, err);
	if (!rc)
		*out = w->cur.buf + (off - w->cur.off);
	return rc;
}

static int probe_bt(const uint8_t *h, size_t n)
{
	return n >= 8 && !memcmp(h, "BTreeDB5", 8);
}

struct cel;
static void cel_free(struct cel *t);

static void free_sb(struct sb *s)
{
	if (!s)
		return;
	cel_free(s->cel);
	pthread_mutex_destroy(&s->cel_lock);
	sv_bt5_tree_free(s->t);
	free(s->header);
	free(s);
}

static void close_bt(struct sv_container *c)
{
	free_sb(sv_container_priv(c));
	sv_container_set_priv(c, NULL);
}

const uint8_t *sv_sb_rkey(const struct sb *s, uint32_t i)
{
	return s->t->keys + (size_t)i * s->t->h.key_size;
}

static void hex(const uint8_t *k, uint32_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (uint32_t i = 0; i < n; i++) {
		out[2 * i] = digits[k[i] >> 4];
		out[2 * i + 1] = digits[k[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Writes x in decimal at out; returns its length. */
static size_t put_u(unsigned x, char *out)
{
	char tmp[12];
	size_t k = 0, n = 0;
	do
		tmp[k++] = (char)('0' + x % 10);
	while ((x /= 10));
	while (k)
		out[n++] = tmp[--k];
	return n;
}

/* Writes "<a>,<b>" at out; returns its length.  The names of every sector
 * are made at open: no printf there. */
static size_t pair_name(unsigned a, unsigned b, char *out)
{
	size_t n = put_u(a, out);
	out[n++] = ',';
	n += put_u(b, out + n);
	out[n] = '\0';
	return n;
}

/* A sector coordinate of a key (its bytes are the key's: checked). */
unsigned sv_sb_be16(const uint8_t *p)
{
	return (unsigned)sv_get_be(p, 2);
}

/* A World4 key: type, then a sector. */
bool sv_sb_world_key(const struct sb *s, const uint8_t *k, unsigned type)
{
	return s->family == F_WORLD && s->t->h.key_size == 5 && k[0] == type;
}

int sv_sb_dump_json(const json_t *j, struct sv_buf *b)
{
	int rc = sv_json_dump(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER, b);
	return rc ? rc : sv_buf_add(b, "\n", 1);
}

/* ---- the tree -------------------------------------------------------------- */

static int make_header(struct sb *s)
{
	const struct sv_bt5_tree *t = s->t;
	uint64_t index = 0, leaf = t->nchain;
	for (uint32_t i = 0; i < t->nnodes; i++)
		index += !t->nodes[i].leaf;
	json_t *roots = json_array();
	for (int i = 0; i < 2 && roots; i++) {
		const struct sv_bt5_root *r = &t->h.roots[i];
		json_array_append_new(roots, json_pack("{sIsIsIsb}", "free_index_head",
						       r->free_head == SV_BT5_NONE ? (json_int_t)-1
										   : (json_int_t)r->free_head,
						       "device_size", (json_int_t)r->device_size,
						       "root_block", (json_int_t)r->root,
						       "root_is_leaf", r->root_is_leaf));
	}
	uint64_t reach = index + leaf + t->nff + t->nfree;
	json_t *o = json_pack("{sssIsssIsIso sI sI sI s{sIsIsIsIsI}}",
			      "magic", "BTreeDB5", "block_size", (json_int_t)t->h.block_size,
			      "content_identifier", t->h.content_id,
			      "key_size", (json_int_t)t->h.key_size,
			      "active_root", (json_int_t)(t->h.use_alt ? 1 : 0), "roots", roots,
			      "records", (json_int_t)t->nrecs, "index_levels", (json_int_t)t->levels,
			      "free_blocks", (json_int_t)t->nfree,
			      "blocks", "total", (json_int_t)t->h.nblocks, "index", (json_int_t)index,
			      "leaf", (json_int_t)leaf, "free_index", (json_int_t)t->nff,
			      "unreachable", (json_int_t)(t->h.nblocks > reach ? t->h.nblocks - reach : 0));
	if (!o)
		return -ENOMEM;
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = sv_sb_dump_json(o, &b);
	json_decref(o);
	if (rc) {
		sv_buf_fini(&b);
		return rc;
	}
	free(s->header);
	s->header = (char *)b.p;
	s->header_len = b.len;
	return 0;
}

/* The group of every view of a record (sv_node_set_group): its key, which
 * a commit does not move (its index in the tree does). */
uint64_t sv_sb_key_group(const uint8_t *k, uint32_t ks)
{
	return XXH3_64bits(k, ks) | 1;
}

/* Adds a view of record i, in its record's group. */
static uint32_t rec_node(struct sv_container *c, const struct sb *s, uint32_t parent,
			 const char *name, uint32_t flags, uint64_t size, uint64_t key,
			 uint32_t i)
{
	uint32_t n = sv_node_add(c, parent, name, flags, size, key);
	if (n != SV_NONE)
		sv_node_set_group(c, n, sv_sb_key_group(sv_sb_rkey(s, i), s->t->h.key_size));
	return n;
}

uint32_t sv_sb_dir(struct sv_container *c, uint32_t parent, const char *name, uint32_t flags)
{
	return sv_node_add(c, parent, name, SV_N_DIR | flags, 0, KEY(K_DIR, 0));
}

/*
 * keys/, world/tiles/ and world/entities/ are index directories: listed
 * from the key table, a record's view a node only while it is used.  A
 * position is a record's index in key order (three per tile sector:
 * .tsv, .txt, .png).
 */
static const char *const tile_ext[3] = {".tsv", ".txt", ".png"};
static const uint32_t tile_kind[3] = {K_TSV, K_TXT, K_PNG};

/* The view at position pos of directory d or the first after it: 0 and
 * its name, kind, record and position; 1 past the last. */
static int view_from(const struct sb *s, uint32_t d, uint64_t pos, char *name, uint32_t *kind,
		     uint32_t *rec, uint64_t *at)
{
	const struct sv_bt5_tree *t = s->t;
	uint32_t per = d == s->tiles_dir ? 3 : 1;
	for (uint64_t p = pos; p / per < t->nrecs;) {
		uint32_t i = (uint32_t)(p / per), j = (uint32_t)(p % per);
		const uint8_t *k = sv_sb_rkey(s, i);
		if (d == s->keys_dir) {
			hex(k, t->h.key_size, name);
			*kind = K_KEY;
		} else if (d == s->tiles_dir && k[0] == 1) {
			size_t len = pair_name(sv_sb_be16(k + 1), sv_sb_be16(k + 3), name);
			memcpy(name + len, tile_ext[j], 5);
			*kind = tile_kind[j];
		} else if (d == s->ent_dir && k[0] == 2) {
			size_t len = pair_name(sv_sb_be16(k + 1), sv_sb_be16(k + 3), name);
			memcpy(name + len, ".json", 6);
			*kind = K_ENT;
		} else {
			p = (uint64_t)(i + 1) * per;
			continue;
		}
		*rec = i;
		*at = p;
		return 0;
	}
	return 1;
}

/* The record of key k: its index, or UINT32_MAX. */
static uint32_t find_rec(const struct sb *s, const uint8_t *k)
{
	uint32_t lo = 0, hi = s->t->nrecs, ks = s->t->h.key_size;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int cmp = memcmp(sv_sb_rkey(s, mid), k, ks);
		if (!cmp)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return UINT32_MAX;
}

/* The node of record i's view of this kind in d. */
static uint32_t view_node(struct sv_container *c, const struct sb *s, uint32_t d, const char *name,
			  uint32_t kind, uint32_t i)
{
	if (kind == K_PNG)
		return rec_node(c, s, d, name, SV_N_RO, sv_png_size(32, 32, SV_SB_NPAL),
				KEY(K_PNG, i), i);
	return rec_node(c, s, d, name, LAZY, 0, KEY(kind, i), i);
}

/*
 * The tree an open needs: the directories, a record view for each record
 * (one per key, three per tile sector, one per entity sector) only when
 * its directory is first listed or looked into, so that a mount costs the
 * B-tree's index and not a node per record.
 */
int sv_sb_build(struct sv_container *c, struct sb *s)
{
	const struct sv_bt5_tree *t = s->t;
	uint32_t ks = t->h.key_size;
	if (make_header(s))
		return -ENOMEM;
	/* Keys too long to name are not listed (a warning says so). */
	s->keys_dir = sv_sb_dir(c, SV_ROOT, "keys", ks > 127 ? 0 : SV_N_INDEXDIR);
	if (s->keys_dir == SV_NONE)
		return -ENOMEM;
	if (s->family == F_WORLD) {
		uint32_t world = sv_sb_dir(c, SV_ROOT, "world", 0);
		s->tiles_dir = sv_sb_dir(c, world, "tiles", SV_N_INDEXDIR);
		s->ent_dir = sv_sb_dir(c, world, "entities", SV_N_INDEXDIR);
		if (world == SV_NONE || s->tiles_dir == SV_NONE || s->ent_dir == SV_NONE)
			return -ENOMEM;
		for (uint32_t i = 0; i < t->nrecs; i++) {
			if (!memcmp(sv_sb_rkey(s, i), "\0\0\0\0\0", 5) &&
			    rec_node(c, s, world, "metadata.json", LAZY, 0, KEY(K_META, i), i) ==
				    SV_NONE)
				return -ENOMEM;
		}
		if (sv_node_add(c, world, "uniques.json",
				SV_N_RO | SV_N_DERIVED | SV_KIND_DECODED_ON_STAT, 0,
				KEY(K_UNIQ, 0)) == SV_NONE ||
		    sv_node_add(c, SV_ROOT, "preview.png",
				SV_N_RO | SV_N_DERIVED | SV_KIND_DECODED_ON_STAT, 0,
				KEY(K_PREVIEW, 0)) == SV_NONE)
			return -ENOMEM;
	} else if (s->family == F_CELESTIAL) {
		s->cel_dir = sv_sb_dir(c, SV_ROOT, "celestial", SV_N_INDEXDIR);
		if (s->cel_dir == SV_NONE)
			return -ENOMEM;
	}
	if (sv_node_add(c, SV_ROOT, "header.json", SV_N_RO | SV_N_DERIVED, s->header_len,
			KEY(K_HEADER, 0)) == SV_NONE)
		return -ENOMEM;
	return 0;
}

static int open_bt(struct sv_container *c, struct sv_err *err)
{
	struct sb *s = calloc(1, sizeof *s);
	if (!s)
		return sv_err_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&s->cel_lock, NULL);
	sv_container_set_priv(c, s);
	uint64_t size = sv_container_size(c);
	if (size < SV_BT5_HEADER)
		return sv_err_set(err, -EBADMSG, "btree: byte 0: %llu bytes, shorter than the "
				  "512-byte header", (unsigned long long)size);
	int rc = sv_container_pread(c, 0, s->hdr, SV_BT5_HEADER, err);
	struct sv_bt5 h;
	if (!rc)
		rc = sv_bt5_header(s->hdr, SV_BT5_HEADER, size, &h, err);
	struct window w = {c, size, {0, 0, WINDOW_MIN, malloc(WINDOW)},
			   {0, 0, WINDOW_MIN, malloc(WINDOW)}, NULL};
	if (!rc && (!w.cur.buf || !w.other.buf))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = sv_bt5_tree_load_view(&h, rd_window, view_window, &w, &s->t, err);
	free(w.cur.buf);
	free(w.other.buf);
	free(w.side);
	if (rc)
		return rc;
	if (!strcmp(h.content_id, "World4") && h.key_size == 5)
		s->family = F_WORLD;
	else if (!strcmp(h.content_id, "World4"))
		sv_warn(c, "btree: a World4 database with %u-byte keys (the game's are 5 bytes): "
			"only keys/ is shown", (unsigned)h.key_size);
	else if (!strcmp(h.content_id, "Celestial2"))
		s->family = F_CELESTIAL;
	if (s->t->free_bad)
		sv_warn(c, "%s: the database reads, but cannot be written", s->t->free_bad);
	if ((uint64_t)sv_bt5_active(&h)->device_size != size)
		sv_warn(c, "btree: the file is %llu bytes, its device size %lld: the game cuts it "
			"to the device size", (unsigned long long)size,
			(long long)sv_bt5_active(&h)->device_size);
	if (h.key_size > 127)
		sv_warn(c, "btree: keys of %u bytes are not listed under keys/ (their names would "
			"be over 255 characters)", h.key_size);
	return sv_sb_build(c, s) ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
}

static int rebuild_bt(struct sv_container *c, struct sv_err *err)
{
	struct sb *s = sv_container_priv(c);
	/* A commit may have moved a chunk's coordinate: named again. */
	cel_free(s->cel);
	s->cel = NULL;
	return sv_sb_build(c, s) ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
}

/* ---- values ---------------------------------------------------------------- */

/* Record i's value as stored. */
int sv_sb_raw_value(struct sv_container *c, const struct sb *s, uint32_t i, struct sv_buf *out,
		    struct sv_err *err)
{
	const struct sv_bt5_loc *loc = &s->t->locs[i];
	if (loc->len > sv_container_opts(c)->max_decode)
		return sv_err_set(err, -EFBIG, "a value of %llu bytes, past the limit",
				  (unsigned long long)loc->len);
	if (sv_buf_reserve(out, (size_t)loc->len + 1))
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = sv_bt5_value(&s->t->h, rd_c, c, loc, out->p + out->len, err);
	if (!rc)
		out->len += (size_t)loc->len;
	return rc;
}

/* Record i's value, inflated where it is a zlib stream (every value of a
 * World4 or Celestial2 database must be one).  *zl tells which. */
int sv_sb_value(struct sv_container *c, const struct sb *s, uint32_t i, struct sv_buf *out,
		bool *zl, struct sv_err *err)
{
	struct sv_buf raw;
	sv_buf_init(&raw);
	struct sv_err e;
	sv_err_clear(&e);
	int rc = sv_sb_raw_value(c, s, i, &raw, &e);
	bool want = s->family != F_OTHER || sv_zlib_like(raw.p, raw.len);
	/* A tile sector is never longer than its two VLQs and 1024 tiles of
	 * 39 bytes: a stream that inflates past that is refused early. */
	uint64_t cap = sv_container_opts(c)->max_decode;
	if (sv_sb_world_key(s, sv_sb_rkey(s, i), 1) && cap > SECTOR_MAX)
		cap = SECTOR_MAX;
	*zl = false;
	if (!rc && want) {
		rc = sv_inflate_any(raw.p, raw.len, cap, out, &e);
		if (rc == -EFBIG && cap == SECTOR_MAX)
			rc = -EBADMSG; /* not a limit: no sector is that long */
		if (!rc)
			*zl = true;
		else if (s->family == F_OTHER)
			rc = 0; /* not zlib after all: shown as stored */
	}
	if (!rc && !*zl && sv_buf_add(out, raw.p, raw.len))
		rc = sv_err_set(&e, -ENOMEM, "out of memory");
	sv_buf_fini(&raw);
	if (rc) {
		char k[2 * 256 + 1] = "";
		if (s->t->h.key_size <= 256)
			hex(sv_sb_rkey(s, i), s->t->h.key_size, k);
		return sv_err_set(err, rc, "record %s: %s", k, e.msg);
	}
	return 0;
}

int sv_sb_sector(struct sv_container *c, const struct sb *s, uint32_t i,
		 struct sv_sb_sector *sec, struct sv_err *err)
{
	struct sv_buf v;
	sv_buf_init(&v);
	bool zl;
	int rc = sv_sb_value(c, s, i, &v, &zl, err);
	if (!rc) {
		rc = sv_sb_sector_read(v.p, v.len, sec, err);
		if (rc) {
			char k[11];
			hex(sv_sb_rkey(s, i), 5, k);
			char msg[SV_ERR_MAX];
			snprintf(msg, sizeof msg, "%s", err->msg);
			sv_err_set(err, rc, "record %s: %s", k, msg);
		}
	}
	sv_buf_fini(&v);
	return rc;
}

int32_t sv_sb_find_key(const struct sb *s, const uint8_t *k)
{
	return (int32_t)sv_bt5_tree_find(s->t, k);
}

/* A JSON view of record i through read(). */
static int json_view(struct sv_container *c, const struct sb *s, uint32_t i,
		     int (*read)(const uint8_t *, size_t, json_t **, struct sv_err *),
		     struct sv_buf *out, struct sv_err *err)
{
	struct sv_buf v;
	sv_buf_init(&v);
	bool zl;
	json_t *j = NULL;
	int rc = sv_sb_value(c, s, i, &v, &zl, err);
	if (!rc) {
		struct sv_err e;
		rc = read(v.p, v.len, &j, &e);
		if (rc) {
			char k[2 * 256 + 1] = "";
			if (s->t->h.key_size <= 256)
				hex(sv_sb_rkey(s, i), s->t->h.key_size, k);
			sv_err_set(err, rc, "record %s: %s", k, e.msg);
		}
	}
	if (!rc && sv_sb_dump_json(j, out))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	json_decref(j);
	sv_buf_fini(&v);
	return rc;
}

static int uniques_view(struct sv_container *c, const struct sb *s, struct sv_buf *out,
			struct sv_err *err)
{
	json_t *index = json_object(), *sectors = json_object();
	int rc = index && sectors ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; !rc && i < s->t->nrecs; i++) {
		const uint8_t *k = sv_sb_rkey(s, i);
		if (!sv_sb_world_key(s, k, 3) && !sv_sb_world_key(s, k, 4))
			continue;
		struct sv_buf v;
		sv_buf_init(&v);
		bool zl;
		json_t *j = NULL;
		rc = sv_sb_value(c, s, i, &v, &zl, err);
		if (!rc && k[0] == 3) {
			rc = sv_sb_ubucket_read(v.p, v.len, &j, err);
			char b[16];
			hex(k, 5, b);
			const char *id;
			json_t *e;
			json_object_foreach(j, id, e) {
				json_object_set_new(e, "bucket", json_string(b));
				json_object_set(index, id, e);
			}
		} else if (!rc) {
			rc = sv_sb_usector_read(v.p, v.len, &j, err);
			char name[16];
			snprintf(name, sizeof name, "%u,%u", sv_sb_be16(k + 1), sv_sb_be16(k + 3));
			if (!rc)
				json_object_set(sectors, name, j);
		}
		json_decref(j);
		sv_buf_fini(&v);
	}
	json_t *o = rc ? NULL : json_pack("{sOsO}", "index", index, "sectors", sectors);
	if (!rc && (!o || sv_sb_dump_json(o, out)))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	json_decref(o);
	json_decref(index);
	json_decref(sectors);
	return rc;
}

/* The whole world, one pixel per tile, scaled down to fit 2048. */
static int preview(struct sv_container *c, const struct sb *s, struct sv_buf *out,
		   struct sv_err *err)
{
	uint32_t w = 1, h = 1;
	int32_t m = sv_sb_find_key(s, (const uint8_t *)"\0\0\0\0\0");
	if (m >= 0) {
		struct sv_buf v;
		sv_buf_init(&v);
		bool zl;
		int rc = sv_sb_value(c, s, (uint32_t)m, &v, &zl, err);
		struct sv_rd r;
		sv_rd_init(&r, v.p, v.len);
		uint32_t vw = sv_rd_u32be(&r), vh = sv_rd_u32be(&r);
		if (!rc && sv_rd_ok(&r)) {
			w = vw;
			h = vh;
		}
		sv_buf_fini(&v);
		if (rc)
			return rc;
	}
	if (!w || !h || w > 1u << 20 || h > 1u << 20)
		w = h = 1;
	uint32_t scale = 1;
	while ((w + scale - 1) / scale > 2048 || (h + scale - 1) / scale > 2048)
		scale++;
	uint32_t pw = (w + scale - 1) / scale, ph = (h + scale - 1) / scale;
	uint16_t *px = malloc((size_t)pw * ph * sizeof *px);
	struct sv_sb_sector *sec = malloc(sizeof *sec);
	int rc = px && sec ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < (size_t)pw * ph; i++)
		px[i] = SV_PX_EMPTY;
	for (uint32_t i = 0; !rc && i < s->t->nrecs; i++) {
		const uint8_t *k = sv_sb_rkey(s, i);
		if (!sv_sb_world_key(s, k, 1))
			continue;
		/* A sector that does not read shows magenta (its file says why). */
		struct sv_err e;
		int bad = sv_sb_sector(c, s, i, sec, &e);
		if (bad == -ENOMEM)
			rc = sv_err_set(err, bad, "out of memory");
		for (uint32_t t = 0; !rc && t < SV_SB_TILES; t++) {
			uint32_t x = sv_sb_be16(k + 1) * 32 + t % 32, y = sv_sb_be16(k + 3) * 32 + t / 32;
			if (x >= w || y >= h || x % scale || y % scale)
				continue;
			px[(size_t)(ph - 1 - y / scale) * pw + x / scale] =
				bad ? SV_PX_BAD : sv_sb_pixel(&sec->t[t]);
		}
	}
	if (!rc && sv_png_encode(pw, ph, px, sv_sb_palette(), out))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	free(px);
	free(sec);
	return rc;
}

static int load_bt(struct sv_container *c, uint32_t n, struct sv_blob **out, struct sv_err *err)
{
	struct sb *s = sv_container_priv(c);
	const struct sv_node *node = sv_node(c, n);
	uint32_t i = INDEX(node->key);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	bool zl;
	switch (KIND(node->key)) {
	case K_HEADER:
		rc = sv_buf_add(&b, s->header, s->header_len) ? -ENOMEM : 0;
		break;
	case K_KEY:
		rc = sv_sb_value(c, s, i, &b, &zl, err);
		break;
	case K_META:
		rc = json_view(c, s, i, sv_sb_metadata_read, &b, err);
		break;
	case K_ENT:
		rc = json_view(c, s, i, sv_sb_entities_read, &b, err);
		break;
	case K_CEL:
		rc = json_view(c, s, i, sv_sb_vdoc_read, &b, err);
		break;
	case K_TSV:
	case K_TXT:
	case K_PNG: {
		struct sv_sb_sector *sec = malloc(sizeof *sec);
		rc = sec ? sv_sb_sector(c, s, i, sec, err) : -ENOMEM;
		const uint8_t *k = sv_sb_rkey(s, i);
		if (!rc && KIND(node->key) == K_TSV)
			rc = sv_sb_tsv(sec, sv_sb_be16(k + 1), sv_sb_be16(k + 3), &b);
		else if (!rc && KIND(node->key) == K_TXT)
			rc = sv_sb_txt(sec, sv_sb_be16(k + 1), sv_sb_be16(k + 3), &b);
		else if (!rc)
			rc = sv_sb_png(sec, &b);
		free(sec);
		break;
	}
	case K_UNIQ:
		rc = uniques_view(c, s, &b, err);
		break;
	case K_PREVIEW:
		rc = preview(c, s, &b, err);
		break;
	default:
		rc = sv_err_set(err, -EIO, "not a file");
	}
	if (rc == -ENOMEM)
		sv_err_set(err, rc, "out of memory");
	if (!rc && !(*out = sv_blob_dup(b.p, b.len)))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	sv_buf_fini(&b);
	return rc;
}

/* The stored bytes of the record a view is made from alone (a key's
 * value, a sector's tiles, its entities, the metadata, a celestial
 * chunk), with the view's kind and the record's key: the digest savefs
 * diff compares before it reads the view.  Not for the views made from
 * many records (uniques, the preview). */
static int stored_bt(struct sv_container *c, uint32_t n, uint64_t *out, struct sv_err *err)
{
	struct sb *s = sv_container_priv(c);
	const struct sv_node *node = sv_node(c, n);
	uint32_t i = INDEX(node->key);
	switch (KIND(node->key)) {
	case K_KEY: case K_TSV: case K_TXT: case K_PNG: case K_ENT: case K_META: case K_CEL:
		break;
	default:
		return -ENOENT;
	}
	struct sv_buf raw;
	sv_buf_init(&raw);
	int rc = sv_sb_raw_value(c, s, i, &raw, err);
	if (!rc) {
		XXH3_state_t *h = XXH3_createState();
		uint64_t head[2] = {KIND(node->key), (uint64_t)s->family};
		rc = h ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
		if (!rc) {
			XXH3_64bits_reset(h);
			XXH3_64bits_update(h, head, sizeof head);
			XXH3_64bits_update(h, sv_sb_rkey(s, i), s->t->h.key_size);
			XXH3_64bits_update(h, raw.p, raw.len);
			*out = XXH3_64bits_digest(h);
		}
		XXH3_freeState(h);
	}
	sv_buf_fini(&raw);
	return rc;
}

/* ---- celestial chunks, listed on first use ----------------------------------- */

/*
 * The names of a universe's chunks come from inside each chunk (every one
 * inflated): what the first listing found is kept in the persistent index
 * ("celestial", version 1): a u32 count, then for each record its flags (1:
 * malformed, 2: read-only), its name and, when malformed, the reason, each
 * NUL-terminated.
 */
#define CEL_INDEX 1
enum { CEL_BAD = 1, CEL_RO = 2 };

/* celestial/'s names, by record: made at its first listing or lookup,
 * from the kept record or by inflating every chunk. */
struct cel {
	uint32_t n;
	const char **name;   /* into rec, or owned (a duplicate renamed) */
	const char **why;    /* a malformed record's reason, else NULL */
	uint8_t *flags;      /* CEL_* */
	uint32_t *sorted;    /* record indexes in name order */
	char **owned;
	uint32_t nowned;
	uint8_t *rec;        /* the record's bytes (sv_tab: a big universe's
			      * names leave the heap) */
	size_t rec_len;
};

static void cel_free(struct cel *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	sv_tab_free(t->name);
	sv_tab_free(t->why);
	sv_tab_free(t->flags);
	sv_tab_free(t->sorted);
	sv_tab_free(t->rec);
	free(t);
}

static int by_cel_name(const void *a, const void *b, void *arg)
{
	const struct cel *t = arg;
	return strcmp(t->name[*(const uint32_t *)a], t->name[*(const uint32_t *)b]);
}

/* Copies a record's n bytes into t: 0 or -ENOMEM. */
static int cel_keep(struct cel *t, const void *p, size_t n)
{
	size_t cap;
	if (sv_tab_alloc((void **)&t->rec, &cap, n, 1))
		return -ENOMEM;
	memcpy(t->rec, p, n);
	t->rec_len = n;
	return 0;
}

/* Reads a record's bytes into t: false if they are not this universe's. */
static bool cel_parse(struct cel *t, uint32_t nrecs)
{
	const uint8_t *p = t->rec, *end = p + t->rec_len;
	if (t->rec_len < 4 || sv_get_le(p, 4) != nrecs)
		return false;
	p += 4;
	for (uint32_t i = 0; i < nrecs; i++) {
		if (p >= end || *p & ~(CEL_BAD | CEL_RO))
			return false;
		t->flags[i] = *p++;
		t->why[i] = NULL;
		for (int k = 0; k < (t->flags[i] & CEL_BAD ? 2 : 1); k++) {
			const uint8_t *z = memchr(p, 0, (size_t)(end - p));
			if (!z)
				return false;
			if (k)
				t->why[i] = (const char *)p;
			else
				t->name[i] = (const char *)p;
			p = z + 1;
		}
		if (!sv_name_ok(t->name[i]))
			return false;
	}
	return p == end;
}

/* Names taken twice (two chunks claiming one coordinate) made unique, as
 * the core would: "x,y~2.json". */
static int cel_unique(struct cel *t)
{
	for (int round = 0; round < 8; round++) {
		qsort_r(t->sorted, t->n, sizeof *t->sorted, by_cel_name, t);
		bool again = false;
		for (uint32_t k = 1, dup = 2; k < t->n; k++) {
			uint32_t a = t->sorted[k - 1], b = t->sorted[k];
			if (strcmp(t->name[a], t->name[b])) {
				dup = 2;
				continue;
			}
			const char *nm = t->name[b];
			size_t cap = strlen(nm) + 16;
			char *alt = malloc(cap);
			char **o = realloc(t->owned, (t->nowned + 1) * sizeof *o);
			if (o)
				t->owned = o;
			if (!alt || !o) {
				free(alt);
				return -ENOMEM;
			}
			sv_dup_name(alt, cap, nm, dup++ + (unsigned)round);
			t->owned[t->nowned++] = alt;
			t->name[b] = alt;
			again = true;
		}
		if (!again)
			return 0;
	}
	return -EBADMSG;
}

/* celestial/'s table, made if it is not (under cel_lock; any lock). */
static int cel_table(struct sv_container *c, struct sb *s, struct sv_err *err)
{
	pthread_mutex_lock(&s->cel_lock);
	int rc = 0;
	if (s->cel)
		goto out;
	uint32_t n = s->t->nrecs;
	struct cel *t = calloc(1, sizeof *t);
	size_t cap;
	if (!t || (t->n = n, sv_tab_alloc((void **)&t->name, &cap, n + 1, sizeof *t->name)) ||
	    sv_tab_alloc((void **)&t->why, &cap, n + 1, sizeof *t->why) ||
	    sv_tab_alloc((void **)&t->flags, &cap, n + 1, 1) ||
	    sv_tab_alloc((void **)&t->sorted, &cap, n + 1, sizeof *t->sorted)) {
		cel_free(t);
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		t->sorted[i] = i;
	struct sv_blob *kept = NULL;
	if (!sv_container_index_load(c, "celestial", CEL_INDEX, &kept) &&
	    (cel_keep(t, kept->data, kept->len) || !cel_parse(t, n))) {
		sv_tab_free(t->rec);
		t->rec = NULL;
	}
	sv_blob_unref(kept);
	if (!t->rec) {
		/* The long way: every chunk inflated for its coordinate. */
		struct sv_buf idx;
		sv_buf_init(&idx);
		uint8_t count[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16),
				    (uint8_t)(n >> 24)};
		int oom = sv_buf_add(&idx, count, 4);
		char name[2 * 256 + 16];
		for (uint32_t i = 0; i < n; i++) {
			struct sv_buf v;
			sv_buf_init(&v);
			bool zl;
			json_t *j = NULL;
			struct sv_err e;
			int vrc = sv_sb_value(c, s, i, &v, &zl, &e);
			/* Only the name is wanted here: the value is stepped over,
			 * not built (its view reads it whole, and says what is
			 * wrong). */
			if (!vrc)
				vrc = sv_vjson_get(v.p, v.len, "chunkIndex", &j, &e);
			json_int_t x, y;
			uint8_t f = 0;
			if (!vrc && !json_unpack(j, "[II]", &x, &y)) {
				snprintf(name, sizeof name, "%lld,%lld.json", (long long)x, (long long)y);
			} else {
				hex(sv_sb_rkey(s, i), s->t->h.key_size, name);
				strcat(name, ".json");
				f = CEL_RO | (vrc ? CEL_BAD : 0);
			}
			json_decref(j);
			sv_buf_fini(&v);
			oom |= sv_buf_add(&idx, &f, 1);
			oom |= sv_buf_add(&idx, name, strlen(name) + 1);
			if (f & CEL_BAD)
				oom |= sv_buf_add(&idx, e.msg, strlen(e.msg) + 1);
		}
		if (oom || cel_keep(t, idx.p, idx.len))
			t->rec = NULL;
		if (t->rec && cel_parse(t, n))
			sv_container_index_store(c, "celestial", CEL_INDEX, idx.p, idx.len);
		sv_buf_fini(&idx);
		if (!t->rec) {
			cel_free(t);
			rc = sv_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		if (t->why[i])
			sv_log(c, "celestial/%s: %s", t->name[i], t->why[i]);
	if ((rc = cel_unique(t))) {
		cel_free(t);
		rc = sv_err_set(err, rc, "celestial: names cannot be made unique");
		goto out;
	}
	s->cel = t;
out:
	pthread_mutex_unlock(&s->cel_lock);
	return rc;
}

/* celestial/ as an index directory: a position is a record's index. */
static int cel_list(struct sv_container *c, struct sb *s, uint64_t pos, char name[256],
		    uint64_t *at)
{
	struct sv_err e;
	if (cel_table(c, s, &e))
		return -EIO;
	if (pos >= s->cel->n)
		return 1;
	snprintf(name, 256, "%s", s->cel->name[pos]);
	*at = pos;
	return 0;
}

static int cel_lookup(struct sv_container *c, struct sb *s, uint32_t d, const char *name,
		      struct sv_err *err)
{
	int rc = cel_table(c, s, err);
	if (rc)
		return rc;
	const struct cel *t = s->cel;
	uint32_t lo = 0, hi = t->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int cmp = strcmp(t->name[t->sorted[mid]], name);
		if (!cmp) {
			uint32_t i = t->sorted[mid];
			uint32_t flags = LAZY | (t->flags[i] & CEL_RO ? SV_N_RO : 0) |
					 (t->flags[i] & CEL_BAD ? SV_N_BAD : 0);
			return rec_node(c, s, d, name, flags, 0, KEY(K_CEL, i), i) == SV_NONE
				       ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

static int list_bt(struct sv_container *c, uint32_t d, uint64_t pos, char name[256], bool *is_dir,
		   uint64_t *at)
{
	struct sb *s = sv_container_priv(c);
	char buf[2 * 256 + 16];
	uint32_t kind, i;
	*is_dir = false;
	if (s && d == s->cel_dir && s->cel_dir)
		return cel_list(c, s, pos, name, at);
	if (!s || view_from(s, d, pos, buf, &kind, &i, at) || strlen(buf) > 255)
		return 1;
	memcpy(name, buf, strlen(buf) + 1);
	return 0;
}


static void count_bt(struct sv_container *c, uint32_t d, uint64_t *files, uint64_t *dirs)
{
	struct sb *s = sv_container_priv(c);
	if (!s)
		return;
	/* A chunk a file, whatever its name (which costs its inflating). */
	if (d == s->keys_dir || d == s->cel_dir) {
		*files += s->t->nrecs;
		return;
	}
	for (uint32_t i = 0; i < s->t->nrecs; i++) {
		uint8_t k0 = sv_sb_rkey(s, i)[0];
		*files += d == s->tiles_dir && k0 == 1 ? 3 : d == s->ent_dir && k0 == 2 ? 1 : 0;
	}
}


static int lookup_bt(struct sv_container *c, uint32_t d, const char *name, struct sv_err *err)
{
	struct sb *s = sv_container_priv(c);
	uint8_t key[256];
	uint32_t kind = 0, view = 0;
	unsigned sx, sy;
	if (!s)
		return -ENOENT;
	if (d == s->cel_dir && s->cel_dir)
		return cel_lookup(c, s, d, name, err);
	if (d == s->keys_dir && s->t->h.key_size <= 127 && sv_sb_parse_hex_key(s, name, key)) {
		kind = K_KEY;
	} else if (d && (d == s->tiles_dir || d == s->ent_dir)) {
		for (uint32_t j = 0; d == s->tiles_dir && j < 3 && !kind; j++)
			if (sv_sb_parse_sector_name(name, tile_ext[j], &sx, &sy)) {
				kind = tile_kind[j];
				view = j;
			}
		if (d == s->ent_dir && sv_sb_parse_sector_name(name, ".json", &sx, &sy))
			kind = K_ENT;
		key[0] = d == s->tiles_dir ? 1 : 2;
		key[1] = (uint8_t)(sx >> 8);
		key[2] = (uint8_t)sx;
		key[3] = (uint8_t)(sy >> 8);
		key[4] = (uint8_t)sy;
	}
	uint32_t i = kind ? find_rec(s, key) : UINT32_MAX;
	if (i == UINT32_MAX)
		return -ENOENT;
	uint32_t n = view_node(c, s, d, name, kind, i);
	if (n == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	/* view_from's position: three views a record in tiles/. */
	sv_node_listed(c, n, d == s->tiles_dir ? (uint64_t)i * 3 + view : i);
	return 0;
}

/* ---- info, and the format ------------------------------------------------ */

static void info_bt(struct sv_container *c, void *obj)
{
	struct sb *s = sv_container_priv(c);
	json_t *o = obj;
	json_object_set_new(o, "format_version", json_string(s->t->h.content_id));
	json_object_set_new(o, "records", json_integer(s->t->nrecs));
	json_object_set_new(o, "index_levels", json_integer(s->t->levels));
	json_object_set_new(o, "free_blocks", json_integer(s->t->nfree));
}

static const char *const names_btreedb5[] = {"*.world", "*.shipworld", "*.chunks", NULL};

static const struct sv_format_edits btreedb5_edits = {
	.commit_file = SV_COMMIT_IN_PLACE,
	.check = sv_sb_check_bt,
	.create = sv_sb_create_bt,
	.unlink = sv_sb_unlink_bt,
	.commit_in_place = sv_sb_commit_bt,
};

static const struct sv_format_dirs btreedb5_dirs = {
	.list = list_bt,
	.count = count_bt,
	.lookup = lookup_bt,
};

const struct sv_format sv_fmt_btreedb5 = {
	.name = "btreedb5",
	.description = "Starbound BTreeDB5 database (.world, .shipworld, universe.chunks)",
	.names = names_btreedb5,
	.previews = (const char *const[]){"preview.png", NULL},
	.probe = probe_bt,
	.open = open_bt,
	.close = close_bt,
	.stored = stored_bt,
	.load = load_bt,
	.rebuild = rebuild_bt,
	.info = info_bt,
	.edits = &btreedb5_edits,
	.dirs = &btreedb5_dirs,
};
