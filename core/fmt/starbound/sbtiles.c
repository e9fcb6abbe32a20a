/*
 * sbtiles.c - Starbound tile sectors, read and written (see sbtiles.h).
 *
 * Invariants: every byte is read through the bounded reader; a sector is
 * read whole or refused (no tile is trusted past the first short one); a
 * written sector reads back to the same tiles.
 */
#include "sbtiles.h"

#include "rd.h"
#include "sbon.h"

#include <errno.h>
#include <string.h>

/* One side of a tile: material, hue, colour, mod, mod hue (7 bytes). */
static const uint8_t *side(const uint8_t *p, struct sv_sb_side *s)
{
	s->material = (uint16_t)sv_get_be(p, 2);
	s->hue = p[2];
	s->colour = p[3];
	s->mod = (uint16_t)sv_get_be(p + 4, 2);
	s->mod_hue = p[6];
	return p + 7;
}

int sv_sb_sector_read(const uint8_t *p, size_t n, struct sv_sb_sector *s, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	struct sv_err e;
	sv_err_clear(&e);
	if (sv_vlq_read(&r, &s->generation, &e) || sv_vlq_read(&r, &s->version, &e))
		return sv_err_set(err, -EBADMSG, "sector: %s", e.msg);
	if (s->version < 416 || s->version > 418)
		return sv_err_set(err, -EBADMSG, "sector: version %llu is not one the game reads "
				  "(416, 417, 418)", (unsigned long long)s->version);
	size_t fixed = s->version >= 417 ? 30 : 29;
	for (int i = 0; i < SV_SB_TILES; i++) {
		struct sv_sb_tile *t = &s->t[i];
		size_t at = r.off;
		const uint8_t *q = sv_rd_bytes(&r, fixed + 1);
		if (!q)
			return sv_err_set(err, -EBADMSG, "sector: tile %d (byte %zu): the sector ends "
					  "early", i, at);
		memset(t, 0, sizeof *t);
		q = side(q, &t->fg);
		q = side(q, &t->bg);
		t->liquid = q[0];
		t->level = sv_get_f32be(q + 1);
		t->pressure = sv_get_f32be(q + 5);
		t->source = q[9] != 0;
		t->collision = q[10];
		t->dungeon = (uint16_t)sv_get_be(q + 11, 2);
		t->biome = q[13];
		t->env_biome = q[14];
		q += 15;
		if (s->version >= 417)
			t->transition = *q++ != 0;
		if (s->version < 418) {
			t->ignored = *q;
			continue;
		}
		t->has_root = *q != 0;
		if (t->has_root) {
			t->root_x = (int32_t)sv_rd_u32be(&r);
			t->root_y = (int32_t)sv_rd_u32be(&r);
			if (!sv_rd_ok(&r))
				return sv_err_set(err, -EBADMSG, "sector: tile %d (byte %zu): its root "
						  "runs past the end", i, at);
		}
	}
	if (sv_rd_left(&r))
		return sv_err_set(err, -EBADMSG, "sector: bytes after the last tile (%zu)",
				  sv_rd_left(&r));
	return 0;
}

static void put16(uint8_t *p, uint16_t v)
{
	sv_put_be(p, v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	sv_put_be(p, v, 4);
}

static uint8_t *put_side(uint8_t *p, const struct sv_sb_side *s)
{
	put16(p, s->material);
	p[2] = s->hue;
	p[3] = s->colour;
	put16(p + 4, s->mod);
	p[6] = s->mod_hue;
	return p + 7;
}

int sv_sb_sector_write(const struct sv_sb_sector *s, struct sv_buf *out, struct sv_err *err)
{
	if (s->version < 416 || s->version > 418)
		return sv_err_set(err, -EINVAL, "sector: version %llu is not one the game reads "
				  "(416, 417, 418)", (unsigned long long)s->version);
	int rc = sv_put_vlq(out, s->generation);
	if (!rc)
		rc = sv_put_vlq(out, s->version);
	for (int i = 0; !rc && i < SV_SB_TILES; i++) {
		const struct sv_sb_tile *t = &s->t[i];
		if (t->collision > 5)
			return sv_err_set(err, -EINVAL, "sector: tile %d: collision %u is not one of "
					  "0 (null) to 5 (block)", i, t->collision);
		if (t->has_root && s->version < 418)
			return sv_err_set(err, -EINVAL, "sector: tile %d: a root tile needs version "
					  "418, not %llu", i, (unsigned long long)s->version);
		uint8_t b[39], *q = b;
		q = put_side(q, &t->fg);
		q = put_side(q, &t->bg);
		uint32_t u;
		q[0] = t->liquid;
		memcpy(&u, &t->level, sizeof u);
		put32(q + 1, u);
		memcpy(&u, &t->pressure, sizeof u);
		put32(q + 5, u);
		q[9] = t->source;
		q[10] = t->collision;
		put16(q + 11, t->dungeon);
		q[13] = t->biome;
		q[14] = t->env_biome;
		q += 15;
		if (s->version >= 417)
			*q++ = t->transition;
		if (s->version < 418) {
			*q++ = t->ignored;
		} else {
			*q++ = t->has_root;
			if (t->has_root) {
				put32(q, (uint32_t)t->root_x);
				put32(q + 4, (uint32_t)t->root_y);
				q += 8;
			}
		}
		rc = sv_buf_add(out, b, (size_t)(q - b));
	}
	return rc ? sv_err_set(err, rc, "out of memory") : 0;
}
