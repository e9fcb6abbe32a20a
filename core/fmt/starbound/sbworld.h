/*
 * sbworld.h - the decoded views of Starbound records, and their parsers:
 * tile sectors as .tsv, .txt and .png; entity sectors, world metadata,
 * celestial chunks and SBVJ01 bodies as JSON; the unique-entity index.
 * Pure functions over inflated record values; starbound.c puts them in the
 * tree.
 *
 * Versioned JSON with OpenStarbound's trailer (u32 1, then the map
 * {"subVersions": {...}}) shows the map's "subVersions" object as
 * "subversions"; any other trailer map shows whole as "trailer".  Both are
 * written back as they were.
 */
#ifndef SV_SBWORLD_H
#define SV_SBWORLD_H

#include "codec/codec.h"
#include "sbtiles.h"

#include <jansson.h>

/* ---- tile sectors -------------------------------------------------------- */

/* One line naming the columns, one "# version V generation G" line, then
 * 1024 lines of 23 tab-separated fields (DESIGN.md). */
int sv_sb_tsv(const struct sv_sb_sector *s, unsigned sx, unsigned sy, struct sv_buf *out);
/* Parses a .tsv into out, over base (the stored sector, or NULL for a new
 * one): every field range-checked; the version must stay base's.  -EINVAL
 * with "line N: ..." otherwise. */
int sv_sb_tsv_parse(const uint8_t *p, size_t n, unsigned sx, unsigned sy,
		    const struct sv_sb_sector *base, struct sv_sb_sector *out, struct sv_err *err);

/* The text grid: comment lines (sector, version, a legend "# C = id"), then
 * 32 foreground rows and 32 background rows, top row first, a character per
 * tile ('.' is 65535, empty); a sector of more materials than characters
 * uses cells of 4 hex digits separated by spaces. */
int sv_sb_txt(const struct sv_sb_sector *s, unsigned sx, unsigned sy, struct sv_buf *out);
/* Applies an edited grid's materials to base (other fields stay). */
int sv_sb_txt_parse(const uint8_t *p, size_t n, const struct sv_sb_sector *base,
		    struct sv_sb_sector *out, struct sv_err *err);

/* Colours: a fixed palette, so that every PNG's size is known up front. */
#define SV_SB_NPAL 254
const struct sv_palette *sv_sb_palette(void);
/* The pixel (palette index or SV_PX_EMPTY) of a tile. */
uint16_t sv_sb_pixel(const struct sv_sb_tile *t);
int sv_sb_png(const struct sv_sb_sector *s, struct sv_buf *out);

/* ---- JSON records ------------------------------------------------------- */

/* An entity sector: VLQ n, n versioned JSON, then (OpenStarbound) a
 * trailer per entity.  Shown as a JSON array. */
int sv_sb_entities_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err);
int sv_sb_entities_write(const json_t *a, struct sv_buf *out, struct sv_err *err);
/* World metadata: u32 width, u32 height, versioned JSON, trailer. */
int sv_sb_metadata_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err);
int sv_sb_metadata_write(const json_t *o, struct sv_buf *out, struct sv_err *err);
/* A lone versioned JSON and its trailer (a celestial chunk, an SBVJ01
 * file's body). */
int sv_sb_vdoc_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err);
int sv_sb_vdoc_write(const json_t *o, struct sv_buf *out, struct sv_err *err);

/* ---- the unique-entity index ------------------------------------------- */

/* A type-3 bucket: VLQ n x (string id, u16 sx, u16 sy, f32 x, f32 y), as
 * an object id -> {"sector": [sx, sy], "position": [x, y]}. */
int sv_sb_ubucket_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err);
int sv_sb_ubucket_write(const json_t *o, struct sv_buf *out, struct sv_err *err);
/* A type-4 record: VLQ n x string, as an array. */
int sv_sb_usector_read(const uint8_t *p, size_t n, json_t **out, struct sv_err *err);
int sv_sb_usector_write(const json_t *a, struct sv_buf *out, struct sv_err *err);
/* The position the game indexes an entity's unique id at, from its stored
 * content: "position", "tilePosition", or a movement controller's
 * "position".  False if none is there. */
bool sv_sb_entity_position(const json_t *content, float pos[2]);

/* Shortest decimal that reads back to the same float. */
void sv_sb_float(float f, char *buf, size_t size);

#endif
