/*
 * test_sbtiles.c - Starbound tile sectors (core/fmt/starbound/sbtiles.c): sectors at
 * versions 416, 417 and 418 (with 39-byte root tiles) written here byte by
 * byte, read to every field, and written back to the same bytes; sectors a
 * byte short or long, and other versions, refused with their messages;
 * what the game would not load refused when written.
 */
#include "fmt/starbound/sbtiles.h"
#include "t.h"

#include <errno.h>
#include <stdlib.h>

static void b16(struct sv_buf *b, unsigned v)
{
	uint8_t p[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	sv_buf_add(b, p, 2);
}

static void b32(struct sv_buf *b, uint32_t v)
{
	b16(b, v >> 16);
	b16(b, v & 0xffff);
}

static void b8(struct sv_buf *b, unsigned v)
{
	uint8_t c = (uint8_t)v;
	sv_buf_add(b, &c, 1);
}

static uint32_t fbits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* The sector of version v, tile i made of i; every 7th a root at 418. */
static void make(struct sv_buf *b, unsigned v)
{
	sv_buf_init(b);
	b8(b, 3);                 /* generation */
	b8(b, 0x80 | (v >> 7));   /* the version, a two-byte VLQ */
	b8(b, v & 0x7f);
	for (unsigned i = 0; i < SV_SB_TILES; i++) {
		b16(b, i == 0 ? 65535 : i); b8(b, i % 256); b8(b, i % 5); b16(b, 65535 - i); b8(b, 7);
		b16(b, i + 1000); b8(b, 1); b8(b, 2); b16(b, i); b8(b, 255);
		b8(b, i % 3); b32(b, fbits((float)i / 8)); b32(b, fbits(-0.1f * (float)i)); b8(b, i % 2);
		b8(b, i % 6); b16(b, i % 2 ? 65535 : 65532); b8(b, i % 9); b8(b, i % 11);
		if (v >= 417)
			b8(b, i % 4 == 0);
		if (v < 418) {
			b8(b, i % 250);   /* the ignored byte: kept as it is */
		} else if (i % 7 == 0) {
			b8(b, 1);
			b32(b, (uint32_t)(-5 - (int)i));
			b32(b, i * 3);
		} else {
			b8(b, 0);
		}
	}
}

static void version(unsigned v)
{
	struct sv_buf b;
	make(&b, v);
	struct sv_sb_sector *s = calloc(1, sizeof *s);
	struct sv_err err;
	T_INT(0, sv_sb_sector_read(b.p, b.len, s, &err));
	T_UINT(3, s->generation);
	T_UINT(v, s->version);
	for (unsigned i = 0; i < SV_SB_TILES; i++) {
		const struct sv_sb_tile *t = &s->t[i];
		T_UINT(i == 0 ? 65535 : i, t->fg.material);
		T_UINT(i % 256, t->fg.hue);
		T_UINT(i % 5, t->fg.colour);
		T_UINT(65535 - i, t->fg.mod);
		T_UINT(i + 1000, t->bg.material);
		T_UINT(255, t->bg.mod_hue);
		T_UINT(i % 3, t->liquid);
		T_UINT(fbits((float)i / 8), fbits(t->level));
		T_UINT(fbits(-0.1f * (float)i), fbits(t->pressure));
		T_OK(t->source == (i % 2));
		T_UINT(i % 6, t->collision);
		T_UINT(i % 2 ? 65535 : 65532, t->dungeon);
		T_UINT(i % 9, t->biome);
		T_UINT(i % 11, t->env_biome);
		T_OK(t->transition == (v >= 417 && i % 4 == 0));
		T_OK(t->has_root == (v == 418 && i % 7 == 0));
		if (t->has_root) {
			T_INT(-5 - (int)i, t->root_x);
			T_INT((int)i * 3, t->root_y);
		}
		if (v < 418)
			T_UINT(i % 250, t->ignored);
	}
	struct sv_buf w;
	sv_buf_init(&w);
	T_INT(0, sv_sb_sector_write(s, &w, &err));
	T_UINT(b.len, w.len);
	if (w.len == b.len)
		T_MEM(b.p, w.p, b.len);
	/* A byte short, a byte long. */
	T_INT(-EBADMSG, sv_sb_sector_read(b.p, b.len - 1, s, &err));
	char want[96];
	size_t last = v == 416 ? 3 + 1023 * 30 : v == 417 ? 3 + 1023 * 31 : 0;
	if (v < 418) {
		snprintf(want, sizeof want, "sector: tile 1023 (byte %zu): the sector ends early", last);
		T_STR(want, err.msg);
	} else {
		/* 147 of tiles 0-1022 are roots (every 7th), 8 bytes more each. */
		T_STR("sector: tile 1023 (byte 32892): the sector ends early", err.msg);
	}
	sv_buf_add(&b, "x", 1);
	T_INT(-EBADMSG, sv_sb_sector_read(b.p, b.len, s, &err));
	T_STR("sector: bytes after the last tile (1)", err.msg);
	sv_buf_fini(&w);
	sv_buf_fini(&b);
	free(s);
}

static void refusals(void)
{
	struct sv_buf b;
	make(&b, 417);
	b.p[2] = 415 & 0x7f; /* 415 */
	struct sv_sb_sector *s = calloc(1, sizeof *s);
	struct sv_err err;
	T_INT(-EBADMSG, sv_sb_sector_read(b.p, b.len, s, &err));
	T_STR("sector: version 415 is not one the game reads (416, 417, 418)", err.msg);
	T_INT(-EBADMSG, sv_sb_sector_read(b.p, 1, s, &err));
	T_STR("sector: byte 1: a number runs past the end", err.msg);
	sv_buf_fini(&b);
	/* A 418 sector whose last tile says it has a root, without one. */
	make(&b, 418);
	b.p[b.len - 1] = 1;
	T_INT(-EBADMSG, sv_sb_sector_read(b.p, b.len, s, &err));
	T_STR("sector: tile 1023 (byte 32892): its root runs past the end", err.msg);
	sv_buf_fini(&b);
	/* Written: what the game would not load. */
	make(&b, 418);
	T_INT(0, sv_sb_sector_read(b.p, b.len, s, &err));
	struct sv_buf w;
	sv_buf_init(&w);
	s->t[5].collision = 9;
	T_INT(-EINVAL, sv_sb_sector_write(s, &w, &err));
	T_STR("sector: tile 5: collision 9 is not one of 0 (null) to 5 (block)", err.msg);
	s->t[5].collision = 5;
	s->version = 417;
	w.len = 0;
	T_INT(-EINVAL, sv_sb_sector_write(s, &w, &err));
	T_STR("sector: tile 0: a root tile needs version 418, not 417", err.msg);
	s->version = 419;
	T_INT(-EINVAL, sv_sb_sector_write(s, &w, &err));
	T_STR("sector: version 419 is not one the game reads (416, 417, 418)", err.msg);
	sv_buf_fini(&w);
	sv_buf_fini(&b);
	free(s);
}

int main(void)
{
	version(416);
	version(417);
	version(418);
	refusals();
	return t_done();
}
