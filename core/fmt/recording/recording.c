/*
 * recording.c - chunked replay recordings (format version 4): one compacted
 * file, or a segmented directory still being written.
 *
 * Layout (../shared/formats/recording.md; all big-endian):
 *   header, 256 bytes   i32 magic "HCRP", i16 version (4), i16 flags,
 *                       16-byte world id, i8 world version length (0..32),
 *                       that many bytes, i64 timestamp (ms), i16 dictionary,
 *                       i32 metadata length, i32 index length, i32 tick
 *                       count, i32 chunk count, i32 data version; zeros
 *   metadata            network NBT (type byte, nameless payload)
 *   index               per chunk: VarInt start tick, VarInt ticks, u8 flags
 *                       (1: opens with a snapshot), i64 offset, VarInt
 *                       compressed length, VarInt decompressed length
 *   chunks              one zstd frame each
 * Compacted: one file, offsets absolute.  Segmented: a directory with
 * preamble.dat (header, metadata, index), segment-NNN.dat, and an empty
 * `finished` once done; an offset is segment << 32 | offset in it, and the
 * chunks of a segment lie back to back from 0.  Only the preamble defines
 * the content: a segment it does not reference, and .preamble-*.tmp
 * leftovers, are ignored.
 *
 * Open reads the header, metadata and index and nothing else; a chunk is
 * inflated when one of its views is read.  A segmented recording is
 * followed: a new preamble (or `finished`) reads the index again.
 */
#include "recording_priv.h"

/* ---- a big chunk's text, made as it is read ------------------------------ */

/* A chunk whose payload is more than a sixteenth of the cache: its text
 * (a few times larger) is made as it is read, never held whole. */
bool sv_rc_big(struct sv_container *c, const struct rec *r, uint32_t i)
{
	return r->chunks[i].ulen > sv_container_opts(c)->cache_cap / 16;
}


/* The payload of chunk i, inflated as it is asked for (sv_rc_fill_fn). */
struct csrc {
	struct sv_container *c;
	const struct rec *r;
	uint32_t i;
	ZSTD_DStream *z;
	uint8_t in[65536];
	size_t in_len, in_pos;
	uint64_t read;         /* compressed bytes read so far */
	uint64_t made;         /* payload bytes made so far */
	bool ended;            /* the frame ended */
};

/* Text made so far of one chunk: `pend` holds its bytes from `pos` on. */
struct cursor {
	uint32_t chunk;
	uint64_t pos;
	struct sv_buf pend;
	bool end;
	struct csrc src;
	struct sv_rc_ts *ts;
	uint64_t used;         /* when last used, for the one to reset */
};

/* ---- format callbacks --------------------------------------------------- */

/* The magic and the one format version there is (i16 at byte 4): a
 * recording of another version is not claimed. */
static int probe_rec(const uint8_t *h, size_t n)
{
	return n >= 6 && !memcmp(h, "HCRP", 4) && h[4] == 0 && h[5] == 4;
}

static int probe_dir_rec(struct sv_container *c)
{
	uint8_t h[6];
	return !sv_member_pread(c, PREAMBLE, 0, h, 6, NULL) && probe_rec(h, 6);
}

static int table_of(struct sv_container *c, int *table, struct sv_err *err)
{
	size_t n = 0;
	const char *ev = sv_container_option(c, "events", &n);
	if (!ev || (n == 7 && !memcmp(ev, "parkour", 7)))
		*table = SV_RC_PARKOUR;
	else if (n == 7 && !memcmp(ev, "builtin", 7))
		*table = SV_RC_BUILTIN;
	else
		return sv_err_set(err, -EINVAL, "events=%.*s: the event tables are builtin and "
				  "parkour", (int)n, ev);
	return 0;
}

static void cursor_free(struct cursor *k);

static void rec_free(struct rec *r)
{
	if (!r)
		return;
	free(r->pre);
	sv_nbt_fini(&r->meta);
	sv_tab_free(r->chunks);
	sv_tab_free(r->bin_node);
	sv_tab_free(r->txt_node);
	sv_tab_free(r->cstart);
	sv_buf_fini(&r->header_json);
	sv_buf_fini(&r->snbt);
	for (int k = 0; k < 2; k++)
		cursor_free(r->cur[k]);
	pthread_mutex_destroy(&r->cur_lock);
	free(r);
}

static int open_rec(struct sv_container *c, struct sv_err *err)
{
	struct rec *r = calloc(1, sizeof *r);
	if (!r)
		return sv_err_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&r->cur_lock, NULL);
	sv_container_set_priv(c, r);
	r->segmented = sv_container_is_dir(c);
	sv_buf_init(&r->header_json);
	sv_buf_init(&r->snbt);
	int rc = table_of(c, &r->table, err);
	if (!rc && r->segmented) {
		struct stat st;
		r->finished = !sv_member_stat(c, "finished", &st, NULL);
	}
	if (!rc)
		rc = sv_rc_read_preamble(c, r, err);
	if (!rc)
		rc = sv_rc_build(c, r, err);
	return rc;
}

/* Read again (a new preamble, or after a commit): what is known of chunks
 * stored where they were (their text's length, that they warned) is kept,
 * so a recording that grows decodes only its new chunks for the timeline. */
static int rebuild_rec(struct sv_container *c, struct sv_err *err)
{
	struct rec *old = sv_container_priv(c);
	sv_container_set_priv(c, NULL);
	int rc = open_rec(c, err);
	struct rec *r = sv_container_priv(c);
	bool same = !rc && old && r && old->n == r->n && old->segmented == r->segmented &&
		    old->table == r->table;
	if (!rc && old && r && old->segmented == r->segmented && old->table == r->table) {
		for (uint32_t i = 0; i < r->n && i < old->n; i++) {
			const struct chunk *a = &old->chunks[i];
			struct chunk *b = &r->chunks[i];
			/* A compacted file written anew moves its chunks (the
			 * metadata before them changed size) and copies them as
			 * stored: one is the same where it is the same size and
			 * holds the same ticks. */
			if ((a->offset == b->offset || !r->segmented) && a->clen == b->clen &&
			    a->ulen == b->ulen && a->start == b->start && a->ticks == b->ticks &&
			    a->flags == b->flags) {
				b->txt = a->txt;
				b->warned = a->warned;
			} else {
				same = false;
			}
		}
	}
	/* The timeline is every chunk's text: it changed with them. */
	if (!rc && r && !same)
		sv_node_touch(c, r->timeline_node);
	rec_free(old);
	return rc;
}

/* chunks/: two views a chunk, at positions 2i and 2i + 1; at/: the state
 * at each chunk's start, at position i (a chunk of no ticks, starting
 * where the next does, is listed once). */
int sv_rc_list_rec(struct sv_container *c, uint32_t dir, uint64_t pos, char name[256],
		   bool *is_dir, uint64_t *at)
{
	struct rec *r = sv_container_priv(c);
	*is_dir = false;
	if (r && dir == r->chunks_dir) {
		if (pos >= 2 * (uint64_t)r->n)
			return 1;
		snprintf(name, 256, "%06u.%s", (unsigned)(pos / 2), pos % 2 ? "txt" : "bin");
		*at = pos;
		return 0;
	}
	if (!r || dir != r->at_dir)
		return 1;
	while (pos < r->n && pos && r->chunks[pos].start == r->chunks[pos - 1].start)
		pos++;
	if (pos >= r->n)
		return 1;
	snprintf(name, 256, "%08u.json", r->chunks[pos].start);
	*at = pos;
	return 0;
}

static void count_rec(struct sv_container *c, uint32_t dir, uint64_t *files, uint64_t *dirs)
{
	struct rec *r = sv_container_priv(c);
	if (r && dir == r->chunks_dir) {
		*files += 2 * (uint64_t)r->n;
		return;
	}
	for (uint32_t i = 0; r && dir == r->at_dir && i < r->n; i++)
		*files += !i || r->chunks[i].start != r->chunks[i - 1].start;
}

static void close_rec(struct sv_container *c)
{
	rec_free(sv_container_priv(c));
	sv_container_set_priv(c, NULL);
}

/* Chunk i's stored bytes, inflated. */
int sv_rc_inflate_chunk(struct sv_container *c, const struct rec *r, uint32_t i,
			struct sv_blob **out, struct sv_err *err)
{
	const struct chunk *k = &r->chunks[i];
	if (k->ulen > sv_container_opts(c)->max_decode)
		return sv_err_set(err, -EFBIG, "chunk %u: %u bytes decompressed, more than the "
				  "decode limit", i, k->ulen);
	uint8_t *src = malloc(k->clen);
	if (!src)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc;
	if (r->segmented) {
		char name[40];
		snprintf(name, sizeof name, "segment-%03llu.dat", (unsigned long long)(k->offset >> 32));
		rc = sv_member_pread(c, name, k->offset & 0xffffffffu, src, k->clen, err);
	} else {
		rc = sv_container_pread(c, k->offset, src, k->clen, err);
	}
	if (rc) {
		free(src);
		return rc;
	}
	unsigned long long fs = ZSTD_getFrameContentSize(src, k->clen);
	if (fs == ZSTD_CONTENTSIZE_ERROR) {
		free(src);
		return sv_err_set(err, -EBADMSG, "chunk %u: not a zstd frame", i);
	}
	if (fs != ZSTD_CONTENTSIZE_UNKNOWN && fs != k->ulen) {
		free(src);
		return sv_err_set(err, -EBADMSG, "chunk %u: the zstd frame says %llu bytes, the "
				  "index %u", i, fs, k->ulen);
	}
	struct sv_blob *b = sv_blob_new(k->ulen);
	if (!b) {
		free(src);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	size_t got = ZSTD_decompress(b->data, k->ulen, src, k->clen);
	free(src);
	if (ZSTD_isError(got)) {
		rc = sv_err_set(err, -EBADMSG, "chunk %u: zstd: %s", i, ZSTD_getErrorName(got));
	} else if (got != k->ulen) {
		rc = sv_err_set(err, -EBADMSG, "chunk %u: inflates to %zu bytes, the index says %u",
				i, got, k->ulen);
	}
	if (rc) {
		sv_blob_unref(b);
		return rc;
	}
	*out = b;
	return 0;
}

/* The chunk that holds tick t (binary search), or r->n. */
static uint32_t chunk_of(const struct rec *r, uint64_t t)
{
	uint32_t lo = 0, hi = r->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (r->chunks[mid].start + (uint64_t)r->chunks[mid].ticks <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The most payload a big chunk's text is made from at once. */
static size_t window_max(struct sv_container *c)
{
	uint64_t m = sv_container_opts(c)->cache_cap / 4;
	return m < (1u << 20) ? (1u << 20) : (size_t)m;
}

/* sv_rc_fill_fn: the next inflated bytes of chunk s->i, checked against
 * the index as inflate_chunk checks them. */
static int csrc_fill(void *arg, uint8_t *buf, size_t cap, size_t *got, struct sv_err *err)
{
	struct csrc *s = arg;
	const struct chunk *k = &s->r->chunks[s->i];
	*got = 0;
	while (*got < cap && !s->ended) {
		if (s->in_pos == s->in_len) {
			if (s->read == k->clen)
				return sv_err_set(err, -EBADMSG, "chunk %u: inflates to %llu bytes, the "
						  "index says %u", s->i, (unsigned long long)s->made,
						  k->ulen);
			size_t n = k->clen - s->read < sizeof s->in ? (size_t)(k->clen - s->read)
								     : sizeof s->in;
			int rc;
			if (s->r->segmented) {
				char name[40];
				snprintf(name, sizeof name, "segment-%03llu.dat",
					 (unsigned long long)(k->offset >> 32));
				rc = sv_member_pread(s->c, name, (k->offset & 0xffffffffu) + s->read,
						     s->in, n, err);
			} else {
				rc = sv_container_pread(s->c, k->offset + s->read, s->in, n, err);
			}
			if (rc)
				return rc;
			if (!s->read) {
				unsigned long long fs = ZSTD_getFrameContentSize(s->in, n);
				if (fs == ZSTD_CONTENTSIZE_ERROR)
					return sv_err_set(err, -EBADMSG, "chunk %u: not a zstd frame", s->i);
				if (fs != ZSTD_CONTENTSIZE_UNKNOWN && fs != k->ulen)
					return sv_err_set(err, -EBADMSG, "chunk %u: the zstd frame says "
							  "%llu bytes, the index %u", s->i, fs, k->ulen);
			}
			s->read += n;
			s->in_len = n;
			s->in_pos = 0;
		}
		ZSTD_inBuffer in = {s->in, s->in_len, s->in_pos};
		ZSTD_outBuffer out = {buf + *got, cap - *got, 0};
		size_t ret = ZSTD_decompressStream(s->z, &out, &in);
		if (ZSTD_isError(ret))
			return sv_err_set(err, -EBADMSG, "chunk %u: zstd: %s", s->i,
					  ZSTD_getErrorName(ret));
		s->in_pos = in.pos;
		*got += out.pos;
		s->made += out.pos;
		if (s->made > k->ulen)
			return sv_err_set(err, -EBADMSG, "chunk %u: inflates past the %u bytes the "
					  "index says", s->i, k->ulen);
		if (ret == 0) {
			s->ended = true;
			if (s->made != k->ulen)
				return sv_err_set(err, -EBADMSG, "chunk %u: inflates to %llu bytes, the "
						  "index says %u", s->i, (unsigned long long)s->made,
						  k->ulen);
		}
	}
	return 0;
}

static void cursor_free(struct cursor *k)
{
	if (!k)
		return;
	sv_rc_ts_free(k->ts);
	ZSTD_freeDStream(k->src.z);
	sv_buf_fini(&k->pend);
	free(k);
}

/* Puts cursor k at the start of chunk i's text. */
/*
 * A reader of chunk i's text goes on to the next chunks' (cat of every
 * chunks/ file, the timeline, grep): their stored ranges, as the index names them, are
 * hinted to the source, up to HINT_AHEAD chunks and HINT_BYTES, so that a
 * store fetches them with one request, not one each.  A compacted file
 * only (a segment is read whole).
 */
#define HINT_AHEAD 16
#define HINT_BYTES (4u << 20)

static void hint_ahead(struct sv_container *c, const struct rec *r, uint32_t i)
{
	if (r->segmented)
		return;
	struct sv_range v[HINT_AHEAD];
	size_t n = 0;
	uint64_t bytes = 0;
	for (uint32_t k = i; k < r->n && n < HINT_AHEAD && bytes < HINT_BYTES; k++) {
		v[n++] = (struct sv_range){r->chunks[k].offset, r->chunks[k].clen};
		bytes += r->chunks[k].clen;
	}
	sv_container_hint(c, v, n);
}

static int cursor_start(struct sv_container *c, const struct rec *r, struct cursor *k,
			uint32_t i, struct sv_err *err)
{
	sv_rc_ts_free(k->ts);
	k->ts = NULL;
	k->chunk = UINT32_MAX;
	if (r->chunks[i].ulen > sv_container_opts(c)->max_decode)
		return sv_err_set(err, -EFBIG, "chunk %u: %u bytes decompressed, more than the "
				  "decode limit", i, r->chunks[i].ulen);
	ZSTD_DStream *z = k->src.z ? k->src.z : ZSTD_createDStream();
	if (!z || ZSTD_isError(ZSTD_initDStream(z))) {
		ZSTD_freeDStream(z);
		k->src.z = NULL;
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	memset(&k->src, 0, sizeof k->src);
	k->src.c = c;
	k->src.r = r;
	k->src.i = i;
	k->src.z = z;
	k->pos = 0;
	k->pend.len = 0;
	k->end = false;
	if (sv_rc_ts_new(r->table, window_max(c), csrc_fill, &k->src, &k->ts))
		return sv_err_set(err, -ENOMEM, "out of memory");
	k->chunk = i;
	hint_ahead(c, r, i);
	return 0;
}

/* The text ended: its length is known, and a problem it met said once. */
static void cursor_ended(struct sv_container *c, struct rec *r, struct cursor *k)
{
	struct chunk *ch = &r->chunks[k->chunk];
	__atomic_store_n(&ch->txt, k->pos + k->pend.len + 1, __ATOMIC_RELEASE);
	const char *problem = sv_rc_ts_problem(k->ts);
	if (problem[0] && !__atomic_exchange_n(&ch->warned, 1, __ATOMIC_ACQ_REL))
		sv_warn(c, "chunks/%06u.txt: decoded up to %s (the rest is shown as hex)", k->chunk,
			problem);
}

/* Makes the next piece of k's text: pend then holds it (what came before
 * is let go).  0, or -errno (the cursor is then spent). */
static int cursor_step(struct sv_container *c, struct rec *r, struct cursor *k,
		       struct sv_err *err)
{
	k->pos += k->pend.len;
	k->pend.len = 0;
	bool end = false;
	int rc = sv_rc_ts_next(k->ts, &k->pend, &end, err);
	if (rc) {
		k->chunk = UINT32_MAX;
		return rc;
	}
	if (end) {
		k->end = true;
		cursor_ended(c, r, k);
	}
	return 0;
}

/* Copies up to want bytes of big chunk i's text at off into buf (*got
 * grows), through the cursor nearest before off.  Read lock held. */
static int big_read(struct sv_container *c, struct rec *r, uint32_t i, uint64_t off,
		    uint8_t *buf, size_t want, size_t *got, struct sv_err *err)
{
	pthread_mutex_lock(&r->cur_lock);
	struct cursor *k = NULL;
	int rc = 0;
	for (int j = 0; j < 2; j++) {
		struct cursor *x = r->cur[j];
		if (x && x->chunk == i && x->pos <= off && (!k || x->pos > k->pos))
			k = x;
	}
	if (!k) {
		int j = !r->cur[0] ? 0 : !r->cur[1] ? 1 : r->cur[0]->used <= r->cur[1]->used ? 0 : 1;
		if (!r->cur[j])
			r->cur[j] = calloc(1, sizeof *r->cur[j]);
		k = r->cur[j];
		rc = k ? cursor_start(c, r, k, i, err) : sv_err_set(err, -ENOMEM, "out of memory");
	}
	while (!rc && *got < want) {
		if (off < k->pos + k->pend.len) {
			size_t from = (size_t)(off - k->pos);
			size_t n = k->pend.len - from < want - *got ? k->pend.len - from : want - *got;
			memcpy(buf + *got, k->pend.p + from, n);
			*got += n;
			off += n;
		} else if (k->end) {
			break;
		} else {
			rc = cursor_step(c, r, k, err);
		}
	}
	if (!rc && off > k->pos && off <= k->pos + k->pend.len) {
		/* What was read goes: the cursor holds one piece at most. */
		size_t drop = (size_t)(off - k->pos);
		memmove(k->pend.p, k->pend.p + drop, k->pend.len - drop);
		k->pend.len -= drop;
		k->pos = off;
	}
	if (k)
		k->used = ++r->clock;
	pthread_mutex_unlock(&r->cur_lock);
	return rc;
}

/* Big chunk i's text length: made once, piece by piece, and kept. */
static int big_len(struct sv_container *c, struct rec *r, uint32_t i, uint64_t *len,
		   struct sv_err *err)
{
	uint64_t t = __atomic_load_n(&r->chunks[i].txt, __ATOMIC_ACQUIRE);
	if (t && !__atomic_load_n(&r->chunks[i].broken, __ATOMIC_ACQUIRE)) {
		*len = t - 1;
		return 0;
	}
	struct cursor *k = calloc(1, sizeof *k);
	int rc = k ? cursor_start(c, r, k, i, err) : sv_err_set(err, -ENOMEM, "out of memory");
	while (!rc && !k->end)
		rc = cursor_step(c, r, k, err);
	if (!rc)
		*len = k->pos + k->pend.len;
	cursor_free(k);
	return rc;
}

/* Chunk i's text.  In the timeline (`whole`), a chunk that cannot be read
 * is one line saying why, so that the rest stays readable. */
static int chunk_text(struct sv_container *c, struct rec *r, uint32_t i, struct sv_buf *out,
		      bool whole, struct sv_err *err)
{
	struct sv_blob *b;
	size_t before = out->len;
	hint_ahead(c, r, i);
	int rc = sv_rc_inflate_chunk(c, r, i, &b, err);
	if (rc && whole && rc != -ENOMEM) {
		if (sv_buf_printf(out, "%u\t-\tunreadable\treason=\"%s\"\n", r->chunks[i].start,
				  err->msg))
			return sv_err_set(err, -ENOMEM, "out of memory");
		__atomic_store_n(&r->chunks[i].txt, (uint64_t)(out->len - before) + 1,
				 __ATOMIC_RELEASE);
		return 0;
	}
	if (rc)
		return rc;
	char problem[SV_ERR_MAX];
	rc = sv_rc_text(b->data, b->len, r->table, out, problem);
	sv_blob_unref(b);
	if (rc)
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (problem[0] && !__atomic_exchange_n(&r->chunks[i].warned, 1, __ATOMIC_ACQ_REL))
		sv_warn(c, "chunks/%06u.txt: decoded up to %s (the rest is shown as hex)", i,
			problem);
	__atomic_store_n(&r->chunks[i].txt, (uint64_t)(out->len - before) + 1, __ATOMIC_RELEASE);
	return 0;
}

static int state_at(struct sv_container *c, struct rec *r, uint64_t tick, struct sv_buf *out,
		    struct sv_err *err)
{
	uint32_t i = chunk_of(r, tick);
	if (i >= r->n)
		return sv_err_set(err, -ENOENT, "no tick %llu: the recording has %d",
				  (unsigned long long)tick, r->tick_count);
	if (!(r->chunks[i].flags & 1))
		sv_log(c, "at/%08llu.json: chunk %u does not open with a snapshot: the state holds "
		       "only what that chunk sets", (unsigned long long)tick, i);
	struct sv_blob *b;
	int rc = sv_rc_inflate_chunk(c, r, i, &b, err);
	if (rc)
		return rc;
	rc = sv_rc_state(b->data, b->len, r->table, (uint32_t)tick, out, err);
	sv_blob_unref(b);
	return rc;
}

static int load_rec(struct sv_container *c, uint32_t node, struct sv_blob **out,
		    struct sv_err *err)
{
	struct rec *r = sv_container_priv(c);
	uint64_t key = sv_node(c, node)->key;
	uint64_t i = INDEX(key);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	switch (KIND(key)) {
	case K_HEADER:
		*out = sv_blob_dup(r->header_json.p, r->header_json.len);
		break;
	case K_INDEX:
		if (sv_rc_index_text(r, &b))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		break;
	case K_SNBT:
		*out = sv_blob_dup(r->snbt.p, r->snbt.len);
		break;
	case K_NBT:
		*out = sv_blob_dup(r->pre + HEADER, (size_t)r->meta_len);
		break;
	case K_BIN:
		return sv_rc_inflate_chunk(c, r, (uint32_t)i, out, err);
	case K_TXT:
		rc = chunk_text(c, r, (uint32_t)i, &b, false, err);
		break;
	case K_AT:
		rc = state_at(c, r, i, &b, err);
		break;
	default:
		return sv_err_set(err, -EIO, "not a file");
	}
	if (KIND(key) == K_TXT || KIND(key) == K_AT || KIND(key) == K_INDEX) {
		if (!rc) {
			*out = sv_blob_dup(b.p, b.len);
			if (!*out)
				rc = sv_err_set(err, -ENOMEM, "out of memory");
		}
		sv_buf_fini(&b);
		return rc;
	}
	return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
}

/* A view of chunk i under chunks/: "%06u.bin" or "%06u.txt". */
static int lookup_chunk(struct sv_container *c, struct rec *r, const char *name,
			struct sv_err *err)
{
	char *end;
	if (name[0] < '0' || name[0] > '9')
		return -ENOENT;
	unsigned long i = strtoul(name, &end, 10);
	char canon[40];
	bool txt = !strcmp(end, ".txt");
	if ((!txt && strcmp(end, ".bin")) || i >= r->n)
		return -ENOENT;
	snprintf(canon, sizeof canon, "%06lu%s", i, end);
	if (strcmp(canon, name))
		return -ENOENT;
	const uint32_t RO = SV_N_RO;
	uint32_t n = txt ? sv_node_add(c, r->chunks_dir, name,
				       RO | SV_N_REMOVABLE | SV_KIND_DECODED_ON_STAT |
					       (sv_rc_big(c, r, (uint32_t)i) ? SV_N_STREAM : 0),
				       0, KEY(K_TXT, i))
			 : sv_node_add(c, r->chunks_dir, name, RO | SV_N_REMOVABLE,
				       r->chunks[i].ulen, KEY(K_BIN, i));
	if (n == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	*(txt ? &r->txt_node[i] : &r->bin_node[i]) = n;
	sv_node_listed(c, n, 2 * (uint64_t)i + txt);
	return 0;
}

/* For sv_lower_bound: chunk i starts before tick t. */
struct start_below {
	const struct rec *r;
	uint64_t t;
};

static bool start_below(const void *arg, size_t i)
{
	const struct start_below *q = arg;
	return q->r->chunks[i].start < q->t;
}

/* Any tick opens by name under at/: "<digits>.json"; the chunks' starts,
 * in eight digits, are listed. */
int sv_rc_lookup_rec(struct sv_container *c, uint32_t dir, const char *name, struct sv_err *err)
{
	struct rec *r = sv_container_priv(c);
	if (dir == r->chunks_dir)
		return lookup_chunk(c, r, name, err);
	if (dir != r->at_dir)
		return -ENOENT;
	const char *p = name;
	uint64_t t = 0;
	if (*p < '0' || *p > '9')
		return -ENOENT;
	for (; *p >= '0' && *p <= '9'; p++) {
		t = t * 10 + (uint64_t)(*p - '0');
		if (t >= (uint64_t)r->tick_count)
			return -ENOENT;
	}
	if (strcmp(p, ".json"))
		return -ENOENT;
	/* Listed: a chunk's start, as the listing spells it. */
	struct start_below q = {r, t};
	size_t lo = sv_lower_bound(r->n, start_below, &q);
	char canon[40];
	snprintf(canon, sizeof canon, "%08u.json", (unsigned)t);
	bool listed = lo < r->n && r->chunks[lo].start == t && !strcmp(canon, name);
	uint32_t n = sv_node_add(c, dir, name, SV_N_RO | SV_KIND_DECODED_ON_STAT |
					       (listed ? 0 : SV_N_UNLISTED), 0, KEY(K_AT, t));
	if (n == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (listed)
		sv_node_listed(c, n, lo);
	return 0;
}

/* Chunk i's text length, decoding it if not known yet. */
static int text_len(struct sv_container *c, struct rec *r, uint32_t i, uint64_t *len,
		    struct sv_err *err)
{
	/* A big chunk that cannot be decoded is, in the timeline, the one
	 * line chunk_text makes of it, as a small one is. */
	if (sv_rc_big(c, r, i) && !__atomic_load_n(&r->chunks[i].broken, __ATOMIC_ACQUIRE)) {
		int rc = big_len(c, r, i, len, err);
		if (!rc || rc == -ENOMEM)
			return rc;
		__atomic_store_n(&r->chunks[i].broken, 1, __ATOMIC_RELEASE);
		sv_err_clear(err);
	}
	uint64_t k = __atomic_load_n(&r->chunks[i].txt, __ATOMIC_ACQUIRE);
	if (!k) {
		struct sv_buf b;
		sv_buf_init(&b);
		int rc = chunk_text(c, r, i, &b, true, err);
		sv_buf_fini(&b);
		if (rc)
			return rc;
		k = __atomic_load_n(&r->chunks[i].txt, __ATOMIC_ACQUIRE);
	}
	*len = k - 1;
	return 0;
}

static int size_rec(struct sv_container *c, uint32_t node, uint64_t *out, struct sv_err *err)
{
	struct rec *r = sv_container_priv(c);
	uint64_t key = sv_node(c, node)->key;
	if (KIND(key) == K_TXT && INDEX(key) < r->n)
		return big_len(c, r, (uint32_t)INDEX(key), out, err);
	if (KIND(key) != K_TIMELINE)
		return sv_err_set(err, -EIO, "not a stream");
	uint64_t total = 0;
	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t k;
		int rc = text_len(c, r, i, &k, err);
		if (rc)
			return rc;
		total += k;
	}
	*out = total;
	return 0;
}


static int read_timeline(struct sv_container *c, struct rec *r, uint64_t off, uint8_t *buf,
			 size_t want, size_t *got, struct sv_err *err)
{
	uint64_t at = 0;
	for (uint32_t i = 0; i < r->n && *got < want; i++) {
		uint64_t k = __atomic_load_n(&r->chunks[i].txt, __ATOMIC_ACQUIRE);
		if (k && off >= at + k - 1) {
			at += k - 1;
			continue;
		}
		struct sv_err e2;
		bool streamed = sv_rc_big(c, r, i) &&
				!__atomic_load_n(&r->chunks[i].broken, __ATOMIC_ACQUIRE);
		if (streamed && big_len(c, r, i, &k, &e2)) {
			streamed = false;
			__atomic_store_n(&r->chunks[i].broken, 1, __ATOMIC_RELEASE);
		}
		if (streamed) {
			/* Its length first (made once), then the part wanted. */
			int rc;
			if (off >= at + k) {
				at += k;
				continue;
			}
			size_t n = 0;
			rc = big_read(c, r, i, off - at, buf + *got, want - *got, &n, err);
			if (rc)
				return rc;
			*got += n;
			off += n;
			at += k;
			continue;
		}
		/* Needed, or its length unknown: one decode serves both. */
		struct sv_buf b;
		sv_buf_init(&b);
		int rc = chunk_text(c, r, i, &b, true, err);
		k = b.len;
		if (!rc && off >= at + k) {
			at += k;
			sv_buf_fini(&b);
			continue;
		}
		if (!rc) {
			size_t from = (size_t)(off - at);
			size_t n = b.len - from < want - *got ? b.len - from : want - *got;
			memcpy(buf + *got, b.p + from, n);
			*got += n;
			off += n;
		}
		sv_buf_fini(&b);
		if (rc)
			return rc;
		at += k;
	}
	return 0;
}

/* The compacted file: the preamble with absolute offsets, then every chunk
 * as stored. */
static int read_compact(struct sv_container *c, struct rec *r, uint64_t off, uint8_t *buf,
			size_t want, size_t *got, struct sv_err *err)
{
	size_t head = r->pre_len;
	while (*got < want && off < r->compact_size) {
		if (off < head) {
			/* The preamble as the compactor writes it: the same
			 * bytes, the offsets absolute (their width is fixed, so
			 * it is as long as the stored one). */
			struct sv_buf meta = {r->pre + HEADER, (size_t)r->meta_len, 0}, p;
			sv_buf_init(&p);
			if (sv_rc_write_preamble(r, &meta, r->chunks, 0, r->n, 0, head, &p) || p.len != head) {
				sv_buf_fini(&p);
				return sv_err_set(err, -ENOMEM, "out of memory");
			}
			size_t n = head - (size_t)off < want - *got ? head - (size_t)off : want - *got;
			memcpy(buf + *got, p.p + off, n);
			sv_buf_fini(&p);
			*got += n;
			off += n;
			continue;
		}
		/* The chunk holding off (chunk i starts at head + the compressed
		 * lengths before it: r->cstart[i]), then the run of chunks after
		 * it in the same segment, which lie back to back there: one read. */
		if (!r->n)
			break;
		uint32_t lo = 0, hi = r->n;
		while (lo + 1 < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (r->cstart[mid] <= off)
				lo = mid;
			else
				hi = mid;
		}
		uint32_t i = lo, j = i;
		uint64_t seg = r->chunks[i].offset >> 32;
		uint64_t end_want = off + (want - *got);
		while (j + 1 < r->n && r->cstart[j + 1] < end_want && r->chunks[j + 1].offset >> 32 == seg)
			j++;
		uint64_t run_end = r->cstart[j] + r->chunks[j].clen;
		uint64_t from = off - r->cstart[i];
		size_t n = run_end - off < want - *got ? (size_t)(run_end - off) : want - *got;
		char name[40];
		snprintf(name, sizeof name, "segment-%03llu.dat", (unsigned long long)seg);
		int rc = sv_member_pread(c, name, (r->chunks[i].offset & 0xffffffffu) + from,
					 buf + *got, n, err);
		if (rc)
			return rc;
		*got += n;
		off += n;
	}
	return 0;
}

static int read_rec(struct sv_container *c, uint32_t node, uint64_t off, void *buf,
		    size_t want, size_t *got, struct sv_err *err)
{
	struct rec *r = sv_container_priv(c);
	*got = 0;
	switch (KIND(sv_node(c, node)->key)) {
	case K_TIMELINE:
		return read_timeline(c, r, off, buf, want, got, err);
	case K_TXT:
		if (INDEX(sv_node(c, node)->key) < r->n)
			return big_read(c, r, (uint32_t)INDEX(sv_node(c, node)->key), off, buf, want,
					got, err);
		break;
	case K_COMPACT:
		return read_compact(c, r, off, buf, want, got, err);
	}
	return sv_err_set(err, -EIO, "not a stream");
}

/* A new preamble, or `finished`, in a segmented recording: read again. */
static int refresh_rec(struct sv_container *c, struct sv_err *err)
{
	struct rec *r = sv_container_priv(c);
	(void)err;
	if (!r || !r->segmented)
		return 0;
	struct stat st;
	bool fin = !sv_member_stat(c, "finished", &st, NULL);
	if (sv_member_stat(c, PREAMBLE, &st, NULL))
		return 0; /* between a writer's steps: look again later */
	if (st.st_ino == r->pre_st.st_ino && st.st_size == r->pre_st.st_size &&
	    st.st_mtim.tv_sec == r->pre_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == r->pre_st.st_mtim.tv_nsec && fin == r->finished)
		return 0;
	return 1;
}

static void info_rec(struct sv_container *c, void *obj)
{
	struct rec *r = sv_container_priv(c);
	json_t *o = obj;
	json_object_set_new(o, "layout", json_string(r->segmented ? "segmented" : "compacted"));
	json_object_set_new(o, "chunks", json_integer(r->n));
	json_object_set_new(o, "ticks", json_integer(r->tick_count));
	json_object_set_new(o, "events", json_string(r->table == SV_RC_BUILTIN ? "builtin"
										  : "parkour"));
	if (r->segmented)
		json_object_set_new(o, "finished", json_boolean(r->finished));
}

/* ---- the format --------------------------------------------------------- */

static const char *const options_rec[] = {"events", NULL};

static const char *const names_recording[] = {"*.hcrp", NULL};

static const struct sv_format_edits recording_edits = {
	.commit_file = SV_COMMIT_REWRITE,
	.commit_dir = SV_COMMIT_MEMBERS,
	.check = sv_rc_check_rec,
	.unlink = sv_rc_unlink_rec,
	.commit = sv_rc_commit_file_rec,
	.commit_in_place = sv_rc_commit_dir_rec,
};

static const struct sv_format_dirs recording_dirs = {
	.lookup = sv_rc_lookup_rec,
	.list = sv_rc_list_rec,
	.count = count_rec,
};

static const struct sv_format_streams recording_streams = {
	.size = size_rec,
	.read = read_rec,
};

static const struct sv_format_live recording_live = {
	.refresh = refresh_rec,
};

const struct sv_format sv_fmt_recording = {
	.name = "recording",
	.description = "chunked replay recording, version 4 (.hcrp, or a segmented directory)",
	.names = names_recording,
	.options = options_rec,
	.probe = probe_rec,
	.probe_dir = probe_dir_rec,
	.open = open_rec,
	.close = close_rec,
	.load = load_rec,
	.info = info_rec,
	.edits = &recording_edits,
	.dirs = &recording_dirs,
	.streams = &recording_streams,
	.live = &recording_live,
	.rebuild = rebuild_rec,
};
