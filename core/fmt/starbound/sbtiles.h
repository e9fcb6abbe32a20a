/*
 * sbtiles.h - a Starbound World4 tile sector (a type-1 record, inflated):
 * VLQ generation level, VLQ tile version (416, 417 or 418), then 32 x 32
 * tiles, y from the sector's bottom, x fastest.  A tile, big-endian:
 *
 *   foreground  u16 material, u8 hue shift, u8 colour variant, u16 mod,
 *               u8 mod hue shift                                  7 bytes
 *   background  the same five                                     7 bytes
 *   liquid      u8 id, f32 level, f32 pressure, bool source      10 bytes
 *   u8 collision (0 null .. 5 block), u16 dungeon id, u8 block biome,
 *   u8 environment biome                                          5 bytes
 *   version >= 417: bool biome transition
 *   version < 418: one byte the game ignores (kept here); 418: the root
 *   source, Maybe<Vec2I> (bool, then i32 x, i32 y)
 *
 * So a tile is 30 bytes at 416, 31 at 417, 31 or 39 at 418: a 418 sector is
 * parsed tile by tile.  Errors: -EBADMSG "sector: ..." with the tile and
 * byte where reading stopped.
 */
#ifndef SV_SBTILES_H
#define SV_SBTILES_H

#include "format.h"

#define SV_SB_SECTOR 32
#define SV_SB_TILES (SV_SB_SECTOR * SV_SB_SECTOR)

struct sv_sb_side { /* a tile's foreground or background */
	uint16_t material, mod;
	uint8_t hue, colour, mod_hue;
};

struct sv_sb_tile {
	struct sv_sb_side fg, bg;
	uint8_t liquid, collision, biome, env_biome;
	float level, pressure;
	bool source, transition, has_root;
	uint16_t dungeon;
	int32_t root_x, root_y;
	uint8_t ignored;  /* version < 418: the byte the game skips */
};

struct sv_sb_sector {
	uint64_t generation, version;
	struct sv_sb_tile t[SV_SB_TILES];
};

/* Reads a sector; the whole of p[0..n) must be it. */
int sv_sb_sector_read(const uint8_t *p, size_t n, struct sv_sb_sector *s, struct sv_err *err);
/* Appends the sector at its own version.  -EINVAL (with the reason) for
 * what the game would not load: a version other than 416-418, a collision
 * past 5, a root tile below 418. */
int sv_sb_sector_write(const struct sv_sb_sector *s, struct sv_buf *out, struct sv_err *err);

#endif
