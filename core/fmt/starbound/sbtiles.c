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
static void side(struct sv_rd *q, struct sv_sb_side *s)
{
	s->material = sv_rd_u16be(q);
	s->hue = sv_rd_u8(q);
	s->colour = sv_rd_u8(q);
	s->mod = sv_rd_u16be(q);
	s->mod_hue = sv_rd_u8(q);
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
		if (!sv_rd_need(&r, fixed + 1))
			return sv_err_set(err, -EBADMSG, "sector: tile %d (byte %zu): the sector ends "
					  "early", i, at);
		memset(t, 0, sizeof *t);
		side(&r, &t->fg);
		side(&r, &t->bg);
		t->liquid = sv_rd_u8(&r);
		t->level = sv_rd_f32be(&r);
		t->pressure = sv_rd_f32be(&r);
		t->source = sv_rd_u8(&r) != 0;
		t->collision = sv_rd_u8(&r);
		t->dungeon = sv_rd_u16be(&r);
		t->biome = sv_rd_u8(&r);
		t->env_biome = sv_rd_u8(&r);
		if (s->version >= 417)
			t->transition = sv_rd_u8(&r) != 0;
		if (s->version < 418) {
			t->ignored = sv_rd_u8(&r);
			continue;
		}
		t->has_root = sv_rd_u8(&r) != 0;
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
