/*
 * starbound_priv.h - what the Starbound files share: starbound.c (the
 * BTreeDB5 tree and its views), starbound_commit.c (edits and the commit)
 * and sbvj01.c (SBVJ01 files): node keys, the open database, and the
 * helpers one file offers the others.
 */
#ifndef SV_STARBOUND_PRIV_H
#define SV_STARBOUND_PRIV_H

#include "btree5_cow.h"
#include "sbon.h"
#include "sbworld.h"
#include "rd.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include <pthread.h>
#include <xxhash.h>

enum { K_HEADER = 1, K_KEY, K_META, K_TSV, K_TXT, K_PNG, K_ENT, K_UNIQ, K_PREVIEW, K_CEL,
       K_DATA, K_DIR };
#define KEY(kind, i) ((uint64_t)(kind) << 32 | (uint32_t)(i))
#define KIND(k) ((uint32_t)((k) >> 32))
#define INDEX(k) ((uint32_t)(k))

enum { F_OTHER, F_WORLD, F_CELESTIAL };

#define SECTOR_MAX (2 * 10 + SV_SB_TILES * 39)
/* A record's view: its size is known once decoded, which a listing does
 * not do (ls -R of a world would inflate every record); its first stat
 * does. */
#define LAZY (SV_KIND_DECODED_ON_STAT)

struct sb {
	struct sv_bt5_tree *t;
	int family;
	uint8_t hdr[SV_BT5_HEADER];  /* the header as read: a flip by another
				      * program shows here */
	char *header;                 /* header.json */
	size_t header_len;
	uint32_t keys_dir, tiles_dir, ent_dir, cel_dir;
	pthread_mutex_t cel_lock;
	struct cel *cel;              /* celestial/'s names, once made */
};

struct changes;


/* ---- shared between starbound.c, starbound_commit.c and sbvj01.c ---- */

bool sv_sb_parse_hex_key(const struct sb *s, const char *name, uint8_t *key);
bool sv_sb_parse_sector_name(const char *name, const char *ext, unsigned *sx, unsigned *sy);
bool sv_sb_world_key(const struct sb *s, const uint8_t *k, unsigned type);
const uint8_t *sv_sb_rkey(const struct sb *s, uint32_t i);
int sv_sb_build(struct sv_container *c, struct sb *s);
int sv_sb_check_bt(struct sv_container *c, uint32_t n, const uint8_t *p, size_t len,
		   struct sv_err *err);
int sv_sb_commit_bt(struct sv_container *c, int fd, struct sv_err *err);
int sv_sb_create_bt(struct sv_container *c, uint32_t parent, const char *name,
		    struct sv_err *err);
int sv_sb_current(struct sv_container *c, const struct sb *s, struct changes *cs,
		  const uint8_t *key, struct sv_buf *out, bool *found, struct sv_err *err);
int sv_sb_dump_json(const json_t *j, struct sv_buf *b);
int sv_sb_parse_json(const uint8_t *p, size_t len, json_t **out, struct sv_err *err);
int sv_sb_raw_value(struct sv_container *c, const struct sb *s, uint32_t i, struct sv_buf *out,
		    struct sv_err *err);
int sv_sb_sector(struct sv_container *c, const struct sb *s, uint32_t i,
		 struct sv_sb_sector *sec, struct sv_err *err);
int sv_sb_unlink_bt(struct sv_container *c, uint32_t n, struct sv_err *err);
int sv_sb_value(struct sv_container *c, const struct sb *s, uint32_t i, struct sv_buf *out,
		bool *zl, struct sv_err *err);
int32_t sv_sb_find_key(const struct sb *s, const uint8_t *k);
uint32_t sv_sb_dir(struct sv_container *c, uint32_t parent, const char *name, uint32_t flags);
uint64_t sv_sb_key_group(const uint8_t *k, uint32_t ks);
unsigned sv_sb_be16(const uint8_t *p);

#endif
