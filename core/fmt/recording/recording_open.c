/*
 * recording_open.c - a recording read at open: its header, its
 * preamble (whole in a compacted file, or a member of a segmented
 * directory), its chunk index checked chunk by chunk against the file's
 * layout, and the views built from them.
 */
#include "recording_priv.h"

/* ---- parsing ------------------------------------------------------------ */

/* The fixed header: HEADER bytes at h (the world version's length is at
 * most 32, so every field lies inside them). */
static int parse_header(struct rec *r, const uint8_t *h, struct sv_err *err)
{
	struct sv_rd rd;
	sv_rd_init(&rd, h, HEADER);
	if (sv_rd_u32be(&rd) != 0x48435250)
		return sv_err_set(err, -EBADMSG, "recording: byte 0: not a recording (no HCRP magic)");
	r->version = (int16_t)sv_rd_u16be(&rd);
	if (r->version != 4)
		return sv_err_set(err, -ENOTSUP, "recording: byte 4: format version %d; savefs "
				  "reads version 4", r->version);
	r->flags = (int16_t)sv_rd_u16be(&rd);
	sv_rd_seek(&rd, 24);
	int8_t wv = (int8_t)sv_rd_u8(&rd);
	if (wv < 0 || wv > 32)
		return sv_err_set(err, -EBADMSG, "recording: byte 24: world version length %d, "
				  "not 0 to 32", wv);
	r->wvlen = (uint8_t)wv;
	size_t at = 25 + (size_t)wv;
	sv_rd_seek(&rd, at);
	r->timestamp = (int64_t)sv_rd_u64be(&rd);
	r->dictionary = (int16_t)sv_rd_u16be(&rd);
	r->meta_len = (int32_t)sv_rd_u32be(&rd);
	r->index_len = (int32_t)sv_rd_u32be(&rd);
	r->tick_count = (int32_t)sv_rd_u32be(&rd);
	r->chunk_count = (int32_t)sv_rd_u32be(&rd);
	r->data_version = (int32_t)sv_rd_u32be(&rd);
	if (!sv_rd_ok(&rd))
		return sv_rd_error(&rd, err, -EBADMSG, "recording", "the header is cut short");
	if (r->dictionary != 0)
		return sv_err_set(err, -ENOTSUP, "recording: byte %zu: dictionary %d; savefs reads "
				  "recordings without one (0)", at + 8, r->dictionary);
	if (r->meta_len < 0 || r->index_len < 0 || r->tick_count < 0 || r->chunk_count < 0)
		return sv_err_set(err, -EBADMSG, "recording: byte %zu: a negative length or count "
				  "(metadata %d, index %d, ticks %d, chunks %d)", at + 10,
				  r->meta_len, r->index_len, r->tick_count, r->chunk_count);
	return 0;
}

/* Segment seg holds chunks first..last, which end at `end`: it must be
 * that long at least (a length past it would be allocated at each read,
 * then found short), as a compacted file's chunks are held to its size. */
static int check_segment(struct sv_container *c, int64_t seg, int32_t first, int32_t last,
			 uint64_t end, struct sv_err *err)
{
	char name[64];
	struct stat st;
	snprintf(name, sizeof name, "segment-%03lld.dat", (long long)seg);
	int rc = sv_member_stat(c, name, &st, err);
	if (rc == -ENOENT)
		return sv_err_set(err, -EBADMSG, "recording: %s: chunks %d to %d lie in %s, which is "
				  "not there", PREAMBLE, first, last, name);
	if (rc)
		return rc;
	if ((uint64_t)st.st_size < end)
		return sv_err_set(err, -EBADMSG, "recording: %s: chunks %d to %d end at byte %llu of "
				  "%s, which has %llu", PREAMBLE, first, last,
				  (unsigned long long)end, name, (unsigned long long)st.st_size);
	return 0;
}

/* The metadata and index at r->pre + HEADER. */
static int parse_body(struct sv_container *c, struct rec *r, uint64_t file_size,
		      struct sv_err *err)
{
	const uint8_t *p = r->pre;
	size_t used;
	int rc = sv_nbt_read(p + HEADER, (size_t)r->meta_len, &r->meta, &used, err);
	if (rc) {
		char m[SV_ERR_MAX];
		snprintf(m, sizeof m, "%s", err->msg);
		return sv_err_set(err, -EBADMSG, "recording: metadata at byte %d: %s", HEADER, m);
	}
	if (used != (size_t)r->meta_len)
		return sv_err_set(err, -EBADMSG, "recording: byte %d: the metadata takes %zu bytes, "
				  "the header says %d", HEADER, used, r->meta_len);
	size_t off = HEADER + (size_t)r->meta_len, end = off + (size_t)r->index_len;
	if ((size_t)r->chunk_count > (size_t)r->index_len / 12 + 1)
		return sv_err_set(err, -EBADMSG, "recording: byte %d: %d chunks cannot fit an "
				  "index of %d bytes", 25 + r->wvlen + 22, r->chunk_count,
				  r->index_len);
	size_t cap;
	if (sv_tab_alloc((void **)&r->chunks, &cap, (size_t)r->chunk_count + 1, sizeof *r->chunks))
		return sv_err_set(err, -ENOMEM, "out of memory");
	uint64_t tick = 0, data_start = end, prev_end = end;
	int64_t seg = -1;
	uint64_t seg_next = 0;
	int32_t seg_first = 0; /* the first chunk of segment seg */
	struct sv_rd rd;
	sv_rd_init_at(&rd, p, end, off);
	for (int32_t i = 0; i < r->chunk_count; i++) {
		size_t at = rd.off;
		int32_t start = sv_rc_varint(&rd), ticks = sv_rc_varint(&rd);
		uint8_t flags = sv_rd_u8(&rd);
		uint64_t o = sv_rd_u64be(&rd);
		int32_t clen = sv_rc_varint(&rd), ulen = sv_rc_varint(&rd);
		if (!sv_rd_ok(&rd))
			return sv_err_set(err, -EBADMSG, "recording: byte %zu: index entry %d is "
					  "malformed or cut short", at, i);
		if ((uint64_t)(uint32_t)start != tick || start < 0)
			return sv_err_set(err, -EBADMSG, "recording: byte %zu: chunk %d starts at tick "
					  "%d, expected %llu (chunks follow each other from tick 0)",
					  at, i, start, (unsigned long long)tick);
		if (ticks <= 0)
			return sv_err_set(err, -EBADMSG, "recording: byte %zu: chunk %d has %d ticks",
					  at, i, ticks);
		if (clen <= 0 || ulen <= 0)
			return sv_err_set(err, -EBADMSG, "recording: byte %zu: chunk %d has a length "
					  "of %d compressed, %d decompressed", at, i, clen, ulen);
		if (r->segmented) {
			int64_t s = (int64_t)(o >> 32);
			uint64_t so = o & 0xffffffffu;
			if ((int64_t)o < 0 || s < seg || s > seg + 1 || (s != seg && so != 0) ||
			    (s == seg && so != seg_next))
				return sv_err_set(err, -EBADMSG, "recording: byte %zu: chunk %d at "
						  "segment %lld offset %llu: segments hold their "
						  "chunks back to back from offset 0",
						  at, i, (long long)s, (unsigned long long)so);
			if (s != seg && seg >= 0) {
				rc = check_segment(c, seg, seg_first, i - 1, seg_next, err);
				if (rc)
					return rc;
			}
			if (s != seg)
				seg_first = i;
			seg = s;
			seg_next = so + (uint64_t)clen;
		} else {
			if (o < data_start || o < prev_end || o > file_size ||
			    (uint64_t)clen > file_size - o)
				return sv_err_set(err, -EBADMSG, "recording: byte %zu: chunk %d at "
						  "%llu+%d %s", at, i, (unsigned long long)o, clen,
						  o > file_size || (uint64_t)clen > file_size - o
							  ? "lies past the end of the file"
							  : "overlaps what comes before it");
			prev_end = o + (uint64_t)clen;
		}
		r->chunks[i] = (struct chunk){.offset = o, .start = (uint32_t)start,
					      .ticks = (uint32_t)ticks, .clen = (uint32_t)clen,
					      .ulen = (uint32_t)ulen, .flags = flags};
		tick += (uint64_t)ticks;
		r->compact_size += (uint64_t)clen;
	}
	if (r->segmented && seg >= 0) {
		rc = check_segment(c, seg, seg_first, r->chunk_count - 1, seg_next, err);
		if (rc)
			return rc;
	}
	if (rd.off != end)
		return sv_err_set(err, -EBADMSG, "recording: byte %zu: the index of %d chunks takes "
				  "%zu bytes, the header says %d", HEADER + (size_t)r->meta_len,
				  r->chunk_count, rd.off - HEADER - (size_t)r->meta_len, r->index_len);
	if (tick != (uint64_t)r->tick_count)
		return sv_err_set(err, -EBADMSG, "recording: byte %d: the header says %d ticks, the "
				  "chunks hold %llu", 25 + r->wvlen + 18, r->tick_count,
				  (unsigned long long)tick);
	r->n = (uint32_t)r->chunk_count;
	r->compact_size += end;
	if (sv_tab_alloc((void **)&r->cstart, &cap, r->n + 1, sizeof *r->cstart))
		return sv_err_set(err, -ENOMEM, "out of memory");
	uint64_t at = end;
	for (uint32_t i = 0; i < r->n; i++) {
		r->cstart[i] = at;
		at += r->chunks[i].clen;
	}
	sv_tab_touch((uint64_t)r->n * (sizeof *r->cstart + sizeof *r->chunks));
	return 0;
}

int sv_rc_read_preamble(struct sv_container *c, struct rec *r, struct sv_err *err)
{
	uint8_t *raw = NULL;
	uint64_t size;
	if (r->segmented) {
		struct sv_buf b;
		sv_buf_init(&b);
		int rc = sv_member_stat(c, PREAMBLE, &r->pre_st, err);
		if (!rc)
			rc = sv_member_read_all(c, PREAMBLE, MAX_PREAMBLE, &b, err);
		if (rc) {
			sv_buf_fini(&b);
			return rc;
		}
		r->pre = b.p;
		r->pre_len = b.len;
		size = b.len;
		if (size < HEADER)
			return sv_err_set(err, -EBADMSG, "recording: %s: %llu bytes, shorter than the "
					  "256-byte header", PREAMBLE, (unsigned long long)size);
		memcpy(r->head, r->pre, HEADER);
	} else {
		size = sv_container_size(c);
		if (size < HEADER)
			return sv_err_set(err, -EBADMSG, "recording: byte 0: %llu bytes, shorter than "
					  "the 256-byte header", (unsigned long long)size);
		int rc = sv_container_pread(c, 0, r->head, HEADER, err);
		if (rc)
			return rc;
	}
	int rc = parse_header(r, r->head, err);
	if (rc)
		return rc;
	uint64_t want = HEADER + (uint64_t)r->meta_len + (uint64_t)r->index_len;
	if (r->segmented && want != size)
		return sv_err_set(err, -EBADMSG, "recording: %s: %llu bytes, the header says %llu "
				  "(256 + metadata %d + index %d)", PREAMBLE,
				  (unsigned long long)size, (unsigned long long)want, r->meta_len,
				  r->index_len);
	if (!r->segmented) {
		if (want > size)
			return sv_err_set(err, -EBADMSG, "recording: byte 0: metadata %d and index %d "
					  "bytes lie past the end of the file (%llu bytes)",
					  r->meta_len, r->index_len, (unsigned long long)size);
		/* Read into an array that leaves the heap when big (the index
		 * of a long run). */
		size_t cap;
		if (sv_tab_alloc((void **)&raw, &cap, (size_t)want, 1))
			return sv_err_set(err, -ENOMEM, "out of memory");
		r->pre_len = (size_t)want;
		rc = sv_container_pread(c, 0, raw, (size_t)want, err);
		if (rc) {
			sv_tab_free(raw);
			return rc;
		}
		r->pre = raw;
	}
	rc = parse_body(c, r, size, err);
	/* Read, the index is the chunk table: the preamble's bytes past the
	 * metadata are not held (pre_len still says how long it is). */
	size_t keep_len = HEADER + (size_t)r->meta_len;
	uint8_t *keep = malloc(keep_len);
	if (keep)
		memcpy(keep, r->pre, keep_len);
	if (raw)
		sv_tab_free(raw);
	else
		free(r->pre);
	r->pre = keep;
	return rc ? rc : keep ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
}

/* ---- views built at open ----------------------------------------------- */

static void hexs(char *out, const uint8_t *p, size_t n)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static int make_header(struct sv_container *c, struct rec *r)
{
	char id[33], wv[65], uuid[37];
	hexs(id, r->head + 8, 16);
	snprintf(uuid, sizeof uuid, "%.8s-%.4s-%.4s-%.4s-%.12s", id, id + 8, id + 12, id + 16,
		 id + 20);
	hexs(wv, r->head + 25, r->wvlen);
	json_t *segs = json_array();
	if (r->segmented) {
		int64_t last = -1;
		for (uint32_t i = 0; i < r->n; i++)
			if ((int64_t)(r->chunks[i].offset >> 32) != last) {
				last = (int64_t)(r->chunks[i].offset >> 32);
				char name[32];
				snprintf(name, sizeof name, "segment-%03lld.dat", (long long)last);
				json_array_append_new(segs, json_string(name));
			}
	}
	json_t *o = json_pack("{ss si si ss ss sI si si si si si si ss sb}",
			      "magic", "HCRP", "version", (int)r->version, "flags", (int)r->flags,
			      "world_id", uuid, "world_version", wv,
			      "timestamp", (json_int_t)r->timestamp, "dictionary", (int)r->dictionary,
			      "metadata_length", (int)r->meta_len, "index_length", (int)r->index_len,
			      "tick_count", (int)r->tick_count, "chunk_count", (int)r->chunk_count,
			      "data_version", (int)r->data_version,
			      "layout", r->segmented ? "segmented" : "compacted",
			      "finished", r->segmented ? r->finished : true);
	if (!o || !segs) {
		json_decref(o);
		json_decref(segs);
		return -ENOMEM;
	}
	if (r->segmented)
		json_object_set_new(o, "segments", segs);
	else
		json_decref(segs);
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	int rc = sv_buf_add(&r->header_json, s, strlen(s)) || sv_buf_add(&r->header_json, "\n", 1);
	free(s);
	(void)c;
	return rc ? -ENOMEM : 0;
}

#define INDEX_HEAD "# chunk\tstart\tticks\tsnapshot\tsegment\toffset\tcompressed\tdecompressed\n"

/* Chunk i's line of index.tsv into line (room for any); its length. */
static size_t index_line(const struct rec *r, uint32_t i, char line[160])
{
	const struct chunk *k = &r->chunks[i];
	uint64_t off = r->segmented ? k->offset & 0xffffffffu : k->offset;
	char seg[24] = "-";
	if (r->segmented)
		snprintf(seg, sizeof seg, "%llu", (unsigned long long)(k->offset >> 32));
	int n = snprintf(line, 160, "%06u\t%u\t%u\t%s\t%s\t%llu\t%u\t%u\n", i, k->start,
			 k->ticks, k->flags & 1 ? "yes" : "no", seg, (unsigned long long)off,
			 k->clen, k->ulen);
	return n > 0 ? (size_t)n : 0;
}

/* index.tsv's size: it is made when read (a million chunks' lines would
 * be 50 MB held for a file few read). */
static uint64_t index_size(const struct rec *r)
{
	char line[160];
	uint64_t n = strlen(INDEX_HEAD);
	for (uint32_t i = 0; i < r->n; i++)
		n += index_line(r, i, line);
	return n;
}

int sv_rc_index_text(const struct rec *r, struct sv_buf *out)
{
	char line[160];
	int rc = sv_buf_add(out, INDEX_HEAD, strlen(INDEX_HEAD));
	for (uint32_t i = 0; i < r->n && !rc; i++) {
		size_t n = index_line(r, i, line);
		rc = sv_buf_add(out, line, n);
	}
	return rc ? -ENOMEM : 0;
}

int sv_rc_build(struct sv_container *c, struct rec *r, struct sv_err *err)
{
	if (make_header(c, r) || sv_snbt_write(&r->snbt, &r->meta, true))
		return sv_err_set(err, -ENOMEM, "out of memory");
	const uint32_t RO = SV_N_RO;
	if (sv_node_add(c, SV_ROOT, "header.json", RO | SV_N_DERIVED, r->header_json.len,
			KEY(K_HEADER, 0)) == SV_NONE ||
	    sv_node_add(c, SV_ROOT, "metadata.snbt", 0, r->snbt.len, KEY(K_SNBT, 0)) == SV_NONE ||
	    (r->nbt_node = sv_node_add(c, SV_ROOT, "metadata.nbt", RO, (uint64_t)r->meta_len,
				       KEY(K_NBT, 0))) == SV_NONE ||
	    sv_node_add(c, SV_ROOT, "index.tsv", RO | SV_N_DERIVED, index_size(r),
			KEY(K_INDEX, 0)) == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	/* chunks/ and at/: listed from the chunk index (list_rec), a node
	 * for an entry only while it is used (lookup_rec). */
	r->chunks_dir = sv_node_add(c, SV_ROOT, "chunks", SV_KIND_INDEXDIR, 0, KEY(K_DIR, 0));
	r->at_dir = sv_node_add(c, SV_ROOT, "at", SV_KIND_INDEXDIR, 0, KEY(K_DIR, 1));
	if (r->chunks_dir == SV_NONE || r->at_dir == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	size_t cap;
	if (sv_tab_alloc((void **)&r->bin_node, &cap, r->n + 1, sizeof *r->bin_node) ||
	    sv_tab_alloc((void **)&r->txt_node, &cap, r->n + 1, sizeof *r->txt_node))
		return sv_err_set(err, -ENOMEM, "out of memory");
	memset(r->bin_node, 0xff, (r->n + 1) * sizeof *r->bin_node);
	memset(r->txt_node, 0xff, (r->n + 1) * sizeof *r->txt_node);
	sv_tab_touch((r->n + 1) * (sizeof *r->bin_node + sizeof *r->txt_node));
	/* Not derived from the metadata: a commit touches it when the chunks
	 * change (it is a stream, so its bytes are not compared). */
	r->timeline_node = sv_node_add(c, SV_ROOT, "timeline.txt",
				       RO | SV_KIND_STREAM_SIZED_ON_STAT, 0,
				       KEY(K_TIMELINE, 0));
	if (r->timeline_node == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	if (r->segmented &&
	    sv_node_add(c, SV_ROOT, "compacted.hcrp", RO | SV_N_STREAM | SV_N_DERIVED,
			r->compact_size, KEY(K_COMPACT, 0)) == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	return 0;
}
