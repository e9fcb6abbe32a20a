/*
 * starbound_commit.c - a Starbound database's edits, written back the
 * game's way: each view re-encoded as the game encodes it and deflated,
 * an entity sector's unique ids carried into the unique index, and the
 * records changed copy-on-write with a root flip; never over another
 * program's flip, nor while the game holds universe.lock.
 */
#include "starbound_priv.h"

/* ---- edits ------------------------------------------------------------------ */

/* "<sx>,<sy><ext>" with u16 coordinates, as build() names them. */
bool sv_sb_parse_sector_name(const char *name, const char *ext, unsigned *sx, unsigned *sy)
{
	unsigned a, b;
	int used = 0;
	char canon[40];
	if (sscanf(name, "%u,%u%n", &a, &b, &used) != 2 || a > 65535 || b > 65535 ||
	    strcmp(name + used, ext))
		return false;
	snprintf(canon, sizeof canon, "%u,%u%s", a, b, ext);
	if (strcmp(canon, name))
		return false;
	*sx = a;
	*sy = b;
	return true;
}

bool sv_sb_parse_hex_key(const struct sb *s, const char *name, uint8_t *key)
{
	uint32_t ks = s->t->h.key_size;
	if (strlen(name) != 2 * (size_t)ks)
		return false;
	for (uint32_t i = 0; i < ks; i++) {
		unsigned v;
		if (!(name[2 * i] >= '0' && name[2 * i] <= '9') && !(name[2 * i] >= 'a' && name[2 * i] <= 'f'))
			return false;
		if (!(name[2 * i + 1] >= '0' && name[2 * i + 1] <= '9') &&
		    !(name[2 * i + 1] >= 'a' && name[2 * i + 1] <= 'f'))
			return false;
		sscanf(name + 2 * i, "%2x", &v);
		key[i] = (uint8_t)v;
	}
	return true;
}

/* What an edited node is: its kind and its record's key.  false if it is
 * not one that can be written. */
static bool node_record(struct sv_container *c, const struct sb *s, uint32_t n,
			uint32_t *kind, uint8_t *key)
{
	const struct sv_node *node = sv_node(c, n);
	uint32_t k = KIND(node->key);
	unsigned sx, sy;
	if (sv_node_state(c, n) & SV_S_NEW) {
		if (node->parent == s->keys_dir && sv_sb_parse_hex_key(s, node->name, key)) {
			*kind = K_KEY;
			return true;
		}
		bool ent = node->parent == s->ent_dir && s->ent_dir &&
			   sv_sb_parse_sector_name(node->name, ".json", &sx, &sy);
		bool tsv = node->parent == s->tiles_dir && s->tiles_dir &&
			   sv_sb_parse_sector_name(node->name, ".tsv", &sx, &sy);
		if (!ent && !tsv)
			return false;
		key[0] = ent ? 2 : 1;
		key[1] = (uint8_t)(sx >> 8);
		key[2] = (uint8_t)sx;
		key[3] = (uint8_t)(sy >> 8);
		key[4] = (uint8_t)sy;
		*kind = ent ? K_ENT : K_TSV;
		return true;
	}
	if (k != K_KEY && k != K_META && k != K_TSV && k != K_TXT && k != K_ENT && k != K_CEL)
		return false;
	*kind = k;
	memcpy(key, sv_sb_rkey(s, INDEX(node->key)), s->t->h.key_size);
	return true;
}

int sv_sb_parse_json(const uint8_t *p, size_t len, json_t **out, struct sv_err *err)
{
	json_error_t je;
	*out = json_loadb((const char *)p, len, 0, &je);
	if (!*out)
		return sv_err_set(err, -EINVAL, "line %d, column %d: %s", je.line, je.column, je.text);
	return 0;
}

/* The stored sector with this key (for .tsv and .txt edits), or none. */
static int stored_sector(struct sv_container *c, const struct sb *s, const uint8_t *key,
			 struct sv_sb_sector **out, struct sv_err *err)
{
	*out = NULL;
	int32_t i = sv_sb_find_key(s, key);
	if (i < 0)
		return 0;
	*out = malloc(sizeof **out);
	if (!*out)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = sv_sb_sector(c, s, (uint32_t)i, *out, err);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* Encodes an edit of kind `kind` (content p[0..len)) as the record's new
 * value, not yet deflated.  *js receives the parsed JSON of an entity
 * sector (for the unique index), else NULL. */
static int encode(struct sv_container *c, const struct sb *s, uint32_t kind, const uint8_t *key,
		  const uint8_t *p, size_t len, struct sv_buf *out, json_t **js, struct sv_err *err)
{
	json_t *j = NULL;
	int rc = 0;
	if (js)
		*js = NULL;
	switch (kind) {
	case K_KEY:
		return sv_buf_add(out, p, len) ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
	case K_META:
		rc = sv_sb_parse_json(p, len, &j, err);
		if (!rc)
			rc = sv_sb_metadata_write(j, out, err);
		break;
	case K_CEL: {
		rc = sv_sb_parse_json(p, len, &j, err);
		if (rc)
			break;
		rc = sv_sb_vdoc_write(j, out, err);
		break;
	}
	case K_ENT:
		rc = sv_sb_parse_json(p, len, &j, err);
		if (!rc)
			rc = sv_sb_entities_write(j, out, err);
		if (!rc && js) {
			*js = j;
			j = NULL;
		}
		break;
	case K_TSV:
	case K_TXT: {
		struct sv_sb_sector *base, *sec = malloc(sizeof *sec);
		rc = sec ? stored_sector(c, s, key, &base, err) : sv_err_set(err, -ENOMEM, "out of memory");
		if (!rc && kind == K_TSV)
			rc = sv_sb_tsv_parse(p, len, sv_sb_be16(key + 1), sv_sb_be16(key + 3), base, sec, err);
		else if (!rc && !base)
			rc = sv_err_set(err, -EINVAL, "no stored sector to apply the grid to");
		else if (!rc)
			rc = sv_sb_txt_parse(p, len, base, sec, err);
		if (!rc)
			rc = sv_sb_sector_write(sec, out, err);
		free(base);
		free(sec);
		break;
	}
	default:
		rc = sv_err_set(err, -EPERM, "this file cannot be written");
	}
	json_decref(j);
	return rc;
}

int sv_sb_check_bt(struct sv_container *c, uint32_t n, const uint8_t *p, size_t len,
		   struct sv_err *err)
{
	struct sb *s = sv_container_priv(c);
	uint32_t kind;
	uint8_t key[256];
	if (s->t->h.key_size > sizeof key || !node_record(c, s, n, &kind, key))
		return sv_err_set(err, -EPERM, "this file cannot be written");
	struct sv_buf b;
	sv_buf_init(&b);
	json_t *j = NULL;
	int rc = encode(c, s, kind, key, p, len, &b, &j, err);
	if (!rc && kind == K_CEL) {
		/* The key is a hash of the chunk's coordinate: the coordinate in
		 * the value must stay the one its name has. */
		json_t *o;
		long long x, y, nx, ny;
		if (!sv_sb_parse_json(p, len, &o, err)) {
			const char *name = sv_node(c, n)->name;
			if (json_unpack(json_object_get(o, "content"), "{s[II]}", "chunkIndex", &x, &y) ||
			    sscanf(name, "%lld,%lld.json", &nx, &ny) != 2 || x != nx || y != ny)
				rc = sv_err_set(err, -EINVAL, "content.chunkIndex must stay the "
						"coordinate in the file's name");
			json_decref(o);
		}
	}
	if (!rc && j) {
		size_t i;
		json_t *e;
		json_array_foreach(j, i, e) {
			json_t *content = json_object_get(e, "content");
			float pos[2];
			if (json_is_string(json_object_get(content, "uniqueId")) &&
			    !sv_sb_entity_position(content, pos)) {
				rc = sv_err_set(err, -EINVAL, "entity %zu has a uniqueId but no position "
						"(\"position\" or \"tilePosition\") to index it at", i);
				break;
			}
		}
	}
	json_decref(j);
	sv_buf_fini(&b);
	return rc;
}

int sv_sb_create_bt(struct sv_container *c, uint32_t parent, const char *name,
		    struct sv_err *err)
{
	struct sb *s = sv_container_priv(c);
	uint8_t key[256];
	unsigned sx, sy;
	if (parent == s->keys_dir && s->t->h.key_size <= sizeof key && sv_sb_parse_hex_key(s, name, key))
		return 0;
	if (s->family == F_WORLD && parent == s->ent_dir && sv_sb_parse_sector_name(name, ".json", &sx, &sy))
		return 0;
	if (s->family == F_WORLD && parent == s->tiles_dir && sv_sb_parse_sector_name(name, ".tsv", &sx, &sy))
		return 0;
	return -ENOENT;
}

int sv_sb_unlink_bt(struct sv_container *c, uint32_t n, struct sv_err *err)
{
	uint32_t k = KIND(sv_node(c, n)->key);
	if (k == K_KEY || k == K_ENT)
		return 0;
	return sv_err_set(err, -EPERM, "this view cannot be removed (remove its record under "
			  "keys/ to remove the record itself)");
}

/* ---- the commit ------------------------------------------------------------- */

struct change {
	uint8_t key[256];
	bool del;
	bool zl;          /* deflate on the way out */
	struct sv_buf val;  /* inflated */
};

struct changes {
	struct change *v;
	size_t n, cap;
	uint32_t ks;
};

static struct change *change_find(struct changes *cs, const uint8_t *key)
{
	for (size_t i = 0; i < cs->n; i++)
		if (!memcmp(cs->v[i].key, key, cs->ks))
			return &cs->v[i];
	return NULL;
}

static struct change *change_add(struct changes *cs, const uint8_t *key)
{
	struct change *ch = change_find(cs, key);
	if (ch) {
		ch->val.len = 0;
		ch->del = false;
		return ch;
	}
	if (cs->n == cs->cap) {
		size_t cap = cs->cap * 2 + 16;
		struct change *v = realloc(cs->v, cap * sizeof *v);
		if (!v)
			return NULL;
		cs->v = v;
		cs->cap = cap;
	}
	ch = &cs->v[cs->n++];
	memset(ch, 0, sizeof *ch);
	memcpy(ch->key, key, cs->ks);
	sv_buf_init(&ch->val);
	return ch;
}

static void changes_fini(struct changes *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		sv_buf_fini(&cs->v[i].val);
	free(cs->v);
}

/* A record's value as the commit has it so far: a change, or stored.
 * *found false if there is none. */
int sv_sb_current(struct sv_container *c, const struct sb *s, struct changes *cs,
		  const uint8_t *key, struct sv_buf *out, bool *found, struct sv_err *err)
{
	struct change *ch = change_find(cs, key);
	*found = false;
	if (ch) {
		if (ch->del)
			return 0;
		*found = true;
		return sv_buf_add(out, ch->val.p, ch->val.len) ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
	}
	int32_t i = sv_sb_find_key(s, key);
	if (i < 0)
		return 0;
	bool zl;
	*found = true;
	return sv_sb_value(c, s, (uint32_t)i, out, &zl, err);
}

static void bucket_key(const char *id, uint8_t *key)
{
	uint32_t h = XXH32(id, strlen(id), 0);
	key[0] = 3;
	key[1] = (uint8_t)(h >> 24);
	key[2] = (uint8_t)(h >> 16);
	key[3] = (uint8_t)(h >> 8);
	key[4] = (uint8_t)h;
}

/* Sets or removes (pos NULL; only if indexed at this sector) one entry of
 * a unique id's bucket, as the game's set/removeUniqueIndexEntry do. */
static int bucket_update(struct sv_container *c, const struct sb *s, struct changes *cs,
			 const char *id, const uint8_t *sec, const float *pos, struct sv_err *err)
{
	uint8_t key[5];
	bucket_key(id, key);
	struct sv_buf v;
	sv_buf_init(&v);
	bool found;
	json_t *o = NULL;
	int rc = sv_sb_current(c, s, cs, key, &v, &found, err);
	if (!rc && found)
		rc = sv_sb_ubucket_read(v.p, v.len, &o, err);
	else if (!rc && !(o = json_object()))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	sv_buf_fini(&v);
	if (rc)
		return rc;
	json_t *e = json_object_get(o, id);
	unsigned sx = sv_sb_be16(sec), sy = sv_sb_be16(sec + 2);
	if (!pos) {
		json_int_t ex, ey;
		if (!e || json_unpack(e, "{s[II]}", "sector", &ex, &ey) || (unsigned)ex != sx ||
		    (unsigned)ey != sy) {
			json_decref(o);
			return 0;
		}
		json_object_del(o, id);
	} else {
		json_object_set_new(o, id, json_pack("{s[ii]s[ff]}", "sector", sx, sy, "position",
						     (double)pos[0], (double)pos[1]));
	}
	struct change *ch = change_add(cs, key);
	if (!ch)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	else if (!json_object_size(o))
		ch->del = true;
	else
		rc = sv_sb_ubucket_write(o, &ch->val, err);
	if (ch)
		ch->zl = true;
	json_decref(o);
	return rc;
}

/* An entity sector's unique ids changed to those of `ents` (NULL: the
 * sector went): the unique index follows, as the game's
 * updateSectorUniques does. */
static int uniques_update(struct sv_container *c, const struct sb *s, struct changes *cs,
			  const uint8_t *ekey, const json_t *ents, struct sv_err *err)
{
	uint8_t skey[5] = {4, ekey[1], ekey[2], ekey[3], ekey[4]};
	struct sv_buf v;
	sv_buf_init(&v);
	bool found;
	json_t *old = NULL, *now = json_array();
	int rc = sv_sb_current(c, s, cs, skey, &v, &found, err);
	if (!rc && found)
		rc = sv_sb_usector_read(v.p, v.len, &old, err);
	sv_buf_fini(&v);
	if (!rc && !now)
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	size_t i;
	json_t *e;
	json_array_foreach(ents, i, e) {
		if (rc)
			break;
		json_t *content = json_object_get(e, "content");
		json_t *id = json_object_get(content, "uniqueId");
		float pos[2];
		if (!json_is_string(id))
			continue;
		if (!sv_sb_entity_position(content, pos))
			rc = sv_err_set(err, -EINVAL, "entity %zu has a uniqueId but no position", i);
		else
			rc = bucket_update(c, s, cs, json_string_value(id), ekey + 1, pos, err);
		bool listed = false;
		size_t k;
		json_t *x;
		json_array_foreach(now, k, x)
			listed |= json_equal(x, id);
		if (!rc && !listed)
			json_array_append(now, id);
	}
	json_array_foreach(old, i, e) {
		if (rc)
			break;
		bool kept = false;
		size_t k;
		json_t *x;
		json_array_foreach(now, k, x)
			kept |= json_equal(x, e);
		if (!kept)
			rc = bucket_update(c, s, cs, json_string_value(e), ekey + 1, NULL, err);
	}
	if (!rc && (found || json_array_size(now))) {
		struct change *ch = change_add(cs, skey);
		if (!ch)
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		else if (!json_array_size(now))
			ch->del = true;
		else
			rc = sv_sb_usector_write(now, &ch->val, err);
		if (ch)
			ch->zl = true;
	}
	json_decref(old);
	json_decref(now);
	return rc;
}

static int cmp_change(const void *a, const void *b, void *ks)
{
	return memcmp(((const struct change *)a)->key, ((const struct change *)b)->key,
		      *(uint32_t *)ks);
}

/* True if dir is a universe's directory, where the game keeps
 * universe.lock: it holds universe.dat, universe.chunks or the lock. */
static bool universe_dir(const char *sv_sb_dir)
{
	static const char *const names[] = {"universe.lock", "universe.dat", "universe.chunks"};
	char p[4200];
	struct stat st;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		if (snprintf(p, sizeof p, "%s/%s", sv_sb_dir, names[i]) >= (int)sizeof p)
			return false;
		if (!lstat(p, &st))
			return true;
	}
	return false;
}

/*
 * The game or a server running on a universe holds universe.lock in the
 * universe's directory (storage/universe/) for as long as it runs; a
 * ship or player file in storage/player/ belongs to ../universe.  savefs
 * takes it, exclusively, for the whole commit, creating it where the game
 * would have it, so that a game starting meanwhile waits, and one running
 * refuses the commit.  Opened without blocking and without following a
 * link: anything but a regular file there is refused, never waited on.
 * A loose file, in no game's tree, has no such lock (*lfd -1).
 */
static int universe_lock(struct sv_container *c, int *lfd, struct sv_err *err)
{
	*lfd = -1;
	char *dup = strdup(sv_container_path(c));
	if (!dup)
		return sv_err_set(err, -ENOMEM, "out of memory");
	char sv_sb_dir[4096], path[4200];
	snprintf(sv_sb_dir, sizeof sv_sb_dir, "%s", dirname(dup));
	free(dup);
	if (!universe_dir(sv_sb_dir)) {
		size_t k = strlen(sv_sb_dir);
		snprintf(sv_sb_dir + k, sizeof sv_sb_dir - k, "/../universe");
		if (!universe_dir(sv_sb_dir))
			return 0;
	}
	snprintf(path, sizeof path, "%s/universe.lock", sv_sb_dir);
	int fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && (errno == EACCES || errno == EROFS))
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return 0; /* cannot be made (a read-only directory) */
		return sv_err_set(err, e == ELOOP ? -EPERM : -EIO, "%s: %s: a world is not written "
				  "beside it", path, e == ELOOP ? "a symbolic link" : strerror(e));
	}
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return sv_err_set(err, -EPERM, "%s is not a regular file (%s): a world is not "
				  "written beside it; remove it", path,
				  S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory"
								  : "a special file");
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK)
			return sv_err_set(err, -EBUSY, "the game or a server holds %s: a world is not "
					  "written while it runs (it would lose the edit or its own "
					  "state); stop it and save again", path);
		return sv_err_set(err, -EIO, "%s: %s", path, strerror(e));
	}
	*lfd = fd;
	return 0;
}

static int gather(struct sv_container *c, struct sb *s, struct changes *cs, struct sv_err *err)
{
	uint32_t count = sv_node_count(c), ks = s->t->h.key_size;
	int rc = 0;
	for (uint32_t n = 1; n < count && !rc; n++) {
		struct sv_node *node = sv_node(c, n);
		uint32_t kind;
		uint8_t key[256];
		uint32_t st = sv_node_state(c, n);
		if ((st & (SV_S_GONE | SV_S_STALE)) == (SV_S_GONE | SV_S_STALE) &&
		    !(st & (SV_S_NEW | SV_S_TEMP))) {
			uint32_t k = KIND(node->key);
			if ((k != K_KEY && k != K_ENT) || INDEX(node->key) >= s->t->nrecs)
				continue;
			memcpy(key, sv_sb_rkey(s, INDEX(node->key)), ks);
			struct change *ch = change_add(cs, key);
			if (!ch)
				return sv_err_set(err, -ENOMEM, "out of memory");
			ch->del = true;
			if (sv_sb_world_key(s, key, 2))
				rc = uniques_update(c, s, cs, key, NULL, err);
			continue;
		}
		const struct sv_buf *edit = sv_node_edit(c, n);
		if (!edit || !sv_node_in_commit(c, n) || !node_record(c, s, n, &kind, key))
			continue;
		if (change_find(cs, key) && !change_find(cs, key)->del)
			return sv_err_set(err, -EINVAL, "%s: another view of the same record was "
					  "edited too: close one, then the other", node->name);
		struct change *ch = change_add(cs, key);
		if (!ch)
			return sv_err_set(err, -ENOMEM, "out of memory");
		json_t *ents = NULL;
		struct sv_err e;
		sv_err_clear(&e);
		rc = encode(c, s, kind, key, edit->p, edit->len, &ch->val, &ents, &e);
		if (rc) {
			sv_err_set(err, rc, "%s: %s", node->name, e.msg);
			break;
		}
		/* A value of a World4 or Celestial2 database is always a zlib
		 * stream; elsewhere, as it was stored. */
		ch->zl = s->family != F_OTHER;
		int32_t at = sv_sb_find_key(s, key);
		if (s->family == F_OTHER && at >= 0) {
			struct sv_buf raw;
			sv_buf_init(&raw);
			rc = sv_sb_raw_value(c, s, (uint32_t)at, &raw, err);
			ch->zl = !rc && sv_zlib_like(raw.p, raw.len);
			sv_buf_fini(&raw);
		}
		if (!rc && ents && sv_sb_world_key(s, key, 2))
			rc = uniques_update(c, s, cs, key, ents, err);
		json_decref(ents);
	}
	return rc;
}

int sv_sb_commit_bt(struct sv_container *c, int fd, struct sv_err *err)
{
	struct sb *s = sv_container_priv(c);
	/* The lock first, for the whole commit; then the header as read. */
	int lfd;
	int rc = universe_lock(c, &lfd, err);
	if (rc)
		return rc;
	uint8_t now[SV_BT5_HEADER];
	if (pread(fd, now, sizeof now, 0) != (ssize_t)sizeof now)
		rc = sv_err_set(err, -EIO, "reading the header: %s", strerror(errno));
	else if (memcmp(now, s->hdr, sizeof now))
		rc = sv_err_set(err, -EBUSY, "%s was committed to by another program since it "
				"was read (its root moved): not overwritten, the edit is dropped, "
				"and the file is read again", sv_container_path(c));
	if (rc) {
		if (lfd >= 0)
			close(lfd);
		return rc;
	}
	struct changes cs = {.ks = s->t->h.key_size};
	struct sv_bt5_change *bc = NULL;
	rc = gather(c, s, &cs, err);
	if (!rc && cs.n) {
		qsort_r(cs.v, cs.n, sizeof *cs.v, cmp_change, &cs.ks);
		bc = calloc(cs.n, sizeof *bc);
		if (!bc)
			rc = sv_err_set(err, -ENOMEM, "out of memory");
	}
	/* Deflated in place of the inflated value. */
	for (size_t i = 0; !rc && i < cs.n; i++) {
		struct change *ch = &cs.v[i];
		bc[i].key = ch->key;
		if (ch->del)
			continue;
		if (ch->zl) {
			struct sv_buf z;
			sv_buf_init(&z);
			if (sv_deflate(ch->val.p, ch->val.len, -1, &z)) {
				sv_buf_fini(&z);
				rc = sv_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			sv_buf_fini(&ch->val);
			ch->val = z;
		}
		bc[i].val = ch->val.p ? ch->val.p : (const uint8_t *)"";
		bc[i].len = ch->val.len;
	}
	struct sv_bt5_tree *nw = NULL;
	if (!rc && cs.n)
		rc = sv_bt5_tree_commit(s->t, fd, bc, cs.n, sv_test_step, &nw, err);
	/* Every record written, the index's among them: their views follow. */
	for (size_t i = 0; !rc && nw && i < cs.n; i++)
		sv_group_touch(c, sv_sb_key_group(cs.v[i].key, cs.ks));
	if (!rc && nw) {
		sv_bt5_tree_free(s->t);
		s->t = nw;
		if (pread(fd, s->hdr, sizeof s->hdr, 0) != (ssize_t)sizeof s->hdr)
			rc = sv_err_set(err, -EIO, "reading the header: %s", strerror(errno));
	}
	free(bc);
	changes_fini(&cs);
	if (lfd >= 0)
		close(lfd);
	return rc;
}
