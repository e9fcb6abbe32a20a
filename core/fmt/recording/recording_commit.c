/*
 * recording_commit.c - a recording written back as the recorder writes
 * it: chunks re-encoded and recompressed, the index and header made
 * anew, a compacted file rewritten whole, a segmented directory member by
 * member.
 */
#include "recording_priv.h"

/* ---- write-back --------------------------------------------------------- */

/* The metadata a commit writes: the edited SNBT's NBT, or as stored. */
static int parse_meta(const uint8_t *p, size_t n, struct sv_buf *out, struct sv_err *err)
{
	struct sv_nbt v;
	int rc = sv_snbt_parse((const char *)p, n, &v, err);
	if (rc)
		return rc;
	if (v.type != SV_NBT_COMPOUND)
		rc = sv_err_set(err, -EINVAL, "the metadata is a compound: { ... }");
	if (!rc && (rc = sv_nbt_write(out, &v)))
		rc = sv_err_set(err, rc, rc == -EINVAL ? "a string longer than 65535 bytes"
						       : "out of memory");
	sv_nbt_fini(&v);
	return rc;
}

/* metadata.snbt's node now: a rename onto it (sed -i, editors) gives the
 * name to another node, which takes its key. */
static uint32_t snbt_node(struct sv_container *c)
{
	const struct sv_node *root = sv_node(c, SV_ROOT);
	for (uint32_t k = 0; k < root->nkids; k++)
		if (KIND(sv_node(c, root->kids[k])->key) == K_SNBT)
			return root->kids[k];
	return SV_NONE;
}

static int new_meta(struct sv_container *c, struct rec *r, struct sv_buf *out,
		    struct sv_err *err)
{
	uint32_t n = snbt_node(c);
	const struct sv_buf *e = n == SV_NONE ? NULL : sv_node_edit(c, n);
	if (!e)
		return sv_buf_add(out, r->pre + HEADER, (size_t)r->meta_len)
			       ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
	int rc = parse_meta(e->p, e->len, out, err);
	if (!rc)
		sv_node_touch(c, r->nbt_node);
	return rc;
}

int sv_rc_check_rec(struct sv_container *c, uint32_t node, const uint8_t *p, size_t len,
		    struct sv_err *err)
{
	if (KIND(sv_node(c, node)->key) != K_SNBT)
		return sv_err_set(err, -EPERM, "a read-only view");
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = parse_meta(p, len, &b, err);
	sv_buf_fini(&b);
	return rc;
}

int sv_rc_unlink_rec(struct sv_container *c, uint32_t node, struct sv_err *err)
{
	struct rec *r = sv_container_priv(c);
	uint64_t key = sv_node(c, node)->key;
	if (KIND(key) != K_BIN && KIND(key) != K_TXT)
		return sv_err_set(err, -EPERM, "only chunks can be removed");
	uint64_t i = INDEX(key);
	if (i + 1 == r->n)
		return 0;
	if (i != 0)
		return sv_err_set(err, -EPERM, "chunk %llu: only the first or the last chunk can "
				  "be removed (the ticks stay contiguous)", (unsigned long long)i);
	if (!(r->chunks[1].flags & 1))
		return sv_err_set(err, -EPERM, "chunk 0: chunk 1 does not open with a snapshot, so "
				  "nothing could be shown from its start");
	if (r->segmented)
		return sv_err_set(err, -EPERM, "chunk 0: it lies in segment-000.dat, and a "
				  "recording's segments are never rewritten (trim a compacted "
				  "copy: cp compacted.hcrp)");
	return 0;
}

/* Node n is view `kind` of chunk i (its number may have gone to another
 * entry since: the client forgot it). */
static bool view_of(struct sv_container *c, uint32_t n, unsigned kind, uint32_t i)
{
	return n != SV_NONE && n < sv_node_count(c) && sv_node(c, n)->key == KEY(kind, i);
}

/* A removal of chunk i is under way (its node gone, stale). */
static bool removed(struct sv_container *c, const struct rec *r, uint32_t i)
{
	const uint32_t gone = SV_S_GONE | SV_S_STALE;
	return (view_of(c, r->bin_node[i], K_BIN, i) &&
		(sv_node_state(c, r->bin_node[i]) & gone) == gone) ||
	       (view_of(c, r->txt_node[i], K_TXT, i) &&
		(sv_node_state(c, r->txt_node[i]) & gone) == gone);
}

/* Header, metadata and index for chunks [lo, hi) of `chunks`. */
int sv_rc_write_preamble(const struct rec *r, const struct sv_buf *meta,
			 const struct chunk *chunks, uint32_t lo, uint32_t hi, uint32_t shift,
			 uint64_t abs_base, struct sv_buf *out)
{
	struct sv_buf idx;
	sv_buf_init(&idx);
	uint64_t ticks = 0, at = abs_base;
	int rc = 0;
	for (uint32_t i = lo; i < hi && !rc; i++) {
		const struct chunk *k = &chunks[i];
		uint8_t o[9];
		o[0] = k->flags;
		sv_put_be(o + 1, abs_base ? at : k->offset, 8);
		rc = sv_put_leb(&idx, (uint32_t)(k->start - shift)) ||
		     sv_put_leb(&idx, (uint32_t)k->ticks) || sv_buf_add(&idx, o, 9) ||
		     sv_put_leb(&idx, (uint32_t)k->clen) || sv_put_leb(&idx, (uint32_t)k->ulen);
		ticks += k->ticks;
		at += k->clen;
	}
	uint8_t h[HEADER];
	memcpy(h, r->head, HEADER);
	uint8_t *f = h + 25 + r->wvlen + 10;
	uint32_t v[4] = {(uint32_t)meta->len, (uint32_t)idx.len, (uint32_t)ticks, hi - lo};
	for (int k = 0; k < 4; k++)
		for (int b = 0; b < 4; b++)
			f[4 * k + b] = (uint8_t)(v[k] >> (24 - 8 * b));
	if (!rc)
		rc = sv_buf_add(out, h, HEADER) || sv_buf_add(out, meta->p, meta->len) ||
		     sv_buf_add(out, idx.p, idx.len);
	sv_buf_fini(&idx);
	return rc ? -ENOMEM : 0;
}

/* Every view whose content a commit changes although it was not edited. */
static void touch_all(struct sv_container *c, const struct rec *r)
{
	for (uint32_t i = 0; i < r->n; i++) {
		if (view_of(c, r->bin_node[i], K_BIN, i))
			sv_node_touch(c, r->bin_node[i]);
		if (view_of(c, r->txt_node[i], K_TXT, i))
			sv_node_touch(c, r->txt_node[i]);
	}
	const struct sv_node *d = sv_node(c, r->at_dir);
	for (uint32_t k = 0; k < d->nkids; k++)
		sv_node_touch(c, d->kids[k]);
}

/* A compacted file: written whole (chunks copied as stored, or, when the
 * first chunk goes, each one's ticks renumbered and compressed again at
 * the compactor's level). */
int sv_rc_commit_file_rec(struct sv_container *c, int fd, struct sv_err *err)
{
	struct rec *r = sv_container_priv(c);
	struct sv_buf meta, head;
	sv_buf_init(&meta);
	sv_buf_init(&head);
	struct chunk *ch;
	size_t nch;
	FILE *tmp = NULL;
	int rc = sv_tab_alloc((void **)&ch, &nch, r->n + 1, sizeof *ch)
			 ? sv_err_set(err, -ENOMEM, "out of memory")
			 : new_meta(c, r, &meta, err);
	uint32_t lo = r->n && removed(c, r, 0) ? 1 : 0;
	uint32_t hi = r->n && removed(c, r, r->n - 1) ? r->n - 1 : r->n;
	if (lo != 0 || hi != r->n)
		sv_node_touch(c, r->timeline_node);
	if (hi < lo)
		hi = lo;
	uint32_t shift = lo ? r->chunks[0].ticks : 0;
	if (!rc)
		memcpy(ch, r->chunks, r->n * sizeof *ch);
	if (!rc && shift) {
		tmp = tmpfile();
		if (!tmp)
			rc = sv_err_set(err, -errno, "cannot make a temporary file: %s", strerror(errno));
		uint64_t at = 0;
		for (uint32_t i = lo; i < hi && !rc; i++) {
			struct sv_blob *b = NULL;
			struct sv_buf p;
			sv_buf_init(&p);
			rc = sv_rc_inflate_chunk(c, r, i, &b, err);
			if (!rc)
				rc = sv_rc_renumber(b->data, b->len, r->table, shift, &p, err);
			if (rc == -EBADMSG) {
				char m[SV_ERR_MAX];
				snprintf(m, sizeof m, "%s", err->msg);
				rc = sv_err_set(err, -EINVAL, "chunk %u cannot be renumbered: %s", i, m);
			}
			size_t cap = ZSTD_compressBound(p.len);
			uint8_t *z = rc ? NULL : malloc(cap);
			size_t zn = 0;
			if (!rc && !z)
				rc = sv_err_set(err, -ENOMEM, "out of memory");
			if (!rc) {
				zn = ZSTD_compress(z, cap, p.p, p.len, 19);
				if (ZSTD_isError(zn))
					rc = sv_err_set(err, -EIO, "zstd: %s", ZSTD_getErrorName(zn));
			}
			if (!rc && sv_write_all(fileno(tmp), z, zn))
				rc = sv_err_set(err, -EIO, "writing a temporary file: %s", strerror(errno));
			if (!rc) {
				ch[i].start -= shift;
				ch[i].offset = at;
				ch[i].clen = (uint32_t)zn;
				ch[i].ulen = (uint32_t)p.len;
				at += zn;
			}
			free(z);
			sv_buf_fini(&p);
			sv_blob_unref(b);
		}
		if (!rc)
			touch_all(c, r);
	}
	if (!rc) {
		/* The offsets' width is fixed: the preamble's size is known
		 * before they are. */
		rc = sv_rc_write_preamble(r, &meta, ch, lo, hi, 0, 1, &head);
		uint64_t base = head.len;
		head.len = 0;
		if (!rc)
			rc = sv_rc_write_preamble(r, &meta, ch, lo, hi, 0, base, &head);
		if (rc)
			sv_err_set(err, rc, "out of memory");
	}
	if (!rc && (rc = sv_write_all(fd, head.p, head.len)))
		sv_err_set(err, rc, "writing: %s", strerror(-rc));
	for (uint32_t i = lo; i < hi && !rc; i++) {
		rc = shift ? sv_copy_range(fileno(tmp), ch[i].offset, fd, ch[i].clen)
			   : sv_copy_range(sv_container_fd(c), ch[i].offset, fd, ch[i].clen);
		if (rc)
			sv_err_set(err, rc, "copying chunk %u: %s", i, strerror(-rc));
	}
	if (tmp)
		fclose(tmp);
	sv_tab_free(ch);
	sv_buf_fini(&meta);
	sv_buf_fini(&head);
	return rc;
}

/* A segmented recording: a new preamble by rename, as the recorder commits;
 * segments stay as they are. */
int sv_rc_commit_dir_rec(struct sv_container *c, int fd, struct sv_err *err)
{
	struct rec *r = sv_container_priv(c);
	(void)fd;
	struct stat st;
	int rc = sv_member_stat(c, PREAMBLE, &st, err);
	if (!rc && (st.st_ino != r->pre_st.st_ino || st.st_size != r->pre_st.st_size ||
		    st.st_mtim.tv_sec != r->pre_st.st_mtim.tv_sec ||
		    st.st_mtim.tv_nsec != r->pre_st.st_mtim.tv_nsec))
		return sv_err_set(err, -EBUSY, "%s was replaced (the recorder committed) since it "
				  "was read: the edit is not applied", PREAMBLE);
	if (rc)
		return rc;
	struct sv_buf meta, out;
	sv_buf_init(&meta);
	sv_buf_init(&out);
	uint32_t hi = r->n && removed(c, r, r->n - 1) ? r->n - 1 : r->n;
	if (hi != r->n)
		sv_node_touch(c, r->timeline_node);
	rc = new_meta(c, r, &meta, err);
	if (!rc && sv_rc_write_preamble(r, &meta, r->chunks, 0, hi, 0, 0, &out))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = sv_member_replace(c, PREAMBLE, ".preamble-", out.p, out.len, &r->pre_st, err);
	sv_buf_fini(&meta);
	sv_buf_fini(&out);
	return rc;
}

/* -o events=builtin|parkour: the host's event table. */
