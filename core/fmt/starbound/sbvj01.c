/*
 * sbvj01.c - Starbound's versioned JSON files (SBVJ01: .player,
 * universe.dat, .metadata, .clientcontext): data.json, written back
 * whole as the game writes it.
 */
#include "starbound_priv.h"

/* ---- SBVJ01 ------------------------------------------------------------------ */

static int probe_vj(const uint8_t *h, size_t n)
{
	return n >= 6 && !memcmp(h, "SBVJ01", 6);
}

static int open_vj(struct sv_container *c, struct sv_err *err)
{
	if (sv_container_size(c) < 7)
		return sv_err_set(err, -EBADMSG, "sbvj01: byte 6: the file ends after its magic");
	if (sv_node_add(c, SV_ROOT, "data.json", LAZY, 0, KEY(K_DATA, 0)) == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

static void close_vj(struct sv_container *c)
{
}

static int load_vj(struct sv_container *c, uint32_t n, struct sv_blob **out, struct sv_err *err)
{
	uint64_t size = sv_container_size(c);
	if (size > sv_container_opts(c)->max_decode)
		return sv_err_set(err, -EFBIG, "sbvj01: %llu bytes, past the limit",
				  (unsigned long long)size);
	uint8_t *p = malloc(size);
	if (!p)
		return sv_err_set(err, -ENOMEM, "out of memory");
	json_t *j = NULL;
	struct sv_err e;
	int rc = sv_container_pread(c, 0, p, size, err);
	if (!rc && (rc = sv_sb_vdoc_read(p + 6, size - 6, &j, &e)))
		sv_err_set(err, rc, "sbvj01: after the magic, %s", e.msg);
	free(p);
	struct sv_buf b;
	sv_buf_init(&b);
	if (!rc && sv_sb_dump_json(j, &b))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc && !(*out = sv_blob_dup(b.p, b.len)))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	sv_buf_fini(&b);
	json_decref(j);
	return rc;
}

static int encode_vj(const uint8_t *p, size_t len, struct sv_buf *out, struct sv_err *err)
{
	json_t *j;
	int rc = sv_sb_parse_json(p, len, &j, err);
	if (rc)
		return rc;
	rc = sv_buf_add(out, "SBVJ01", 6) ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
	if (!rc)
		rc = sv_sb_vdoc_write(j, out, err);
	json_decref(j);
	return rc;
}

static int check_vj(struct sv_container *c, uint32_t n, const uint8_t *p, size_t len,
		    struct sv_err *err)
{
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = encode_vj(p, len, &b, err);
	sv_buf_fini(&b);
	return rc;
}

static int commit_vj(struct sv_container *c, int fd, struct sv_err *err)
{
	const struct sv_buf *edit = NULL;
	for (uint32_t n = 1; n < sv_node_count(c) && !edit; n++)
		if (KIND(sv_node(c, n)->key) == K_DATA && sv_node_in_commit(c, n))
			edit = sv_node_edit(c, n);
	if (!edit) {
		/* Nothing edited: the same bytes. */
		return sv_copy_range(sv_container_fd(c), 0, fd, sv_container_size(c))
			       ? sv_err_set(err, -EIO, "copying: %s", strerror(errno)) : 0;
	}
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = encode_vj(edit->p, edit->len, &b, err);
	if (!rc && sv_write_all(fd, b.p, b.len))
		rc = sv_err_set(err, -EIO, "writing: %s", strerror(errno));
	sv_buf_fini(&b);
	return rc;
}

static const char *const names_sbvj01[] = {"*.player", "*.dat", "*.metadata", "*.clientcontext", NULL};

static const struct sv_format_edits sbvj01_edits = {
	.commit_file = SV_COMMIT_REWRITE,
	.check = check_vj,
	.commit = commit_vj,
};

const struct sv_format sv_fmt_sbvj01 = {
	.name = "sbvj01",
	.description = "Starbound versioned JSON file (.player, universe.dat, .metadata)",
	.names = names_sbvj01,
	.probe = probe_vj,
	.open = open_vj,
	.close = close_vj,
	.load = load_vj,
	.edits = &sbvj01_edits,
};
