/*
 * recording_priv.h - what the recording format's files share:
 * recording.c (the tree and its views), recording_open.c (the header,
 * preamble and chunk index parsed at open, the views built then) and
 * recording_commit.c (write-back): node keys, the open recording, and the
 * helpers one file offers the others.
 */
#ifndef SV_RECORDING_PRIV_H
#define SV_RECORDING_PRIV_H

#include "format.h"

#include "nbt.h"
#include "rcevents.h"
#include "rd.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define HEADER 256
#define PREAMBLE "preamble.dat"
#define MAX_PREAMBLE (256u << 20)

enum { K_HEADER, K_SNBT, K_NBT, K_INDEX, K_BIN, K_TXT, K_AT, K_TIMELINE, K_COMPACT, K_DIR };
#define KEY(kind, i) ((uint64_t)(kind) << 40 | (uint64_t)(i))
#define KIND(k) ((int)((k) >> 40))
#define INDEX(k) ((uint64_t)(k) & ((1ull << 40) - 1))

struct chunk {
	uint64_t offset;      /* as stored */
	uint64_t txt;         /* its text's length + 1, 0 until known (atomic) */
	uint32_t start, ticks;
	uint32_t clen, ulen;
	uint8_t flags;
	uint8_t warned;       /* its text stopped early and /.savefs/info says
			       * so (atomic) */
	uint8_t broken;       /* big(): its text could not be made as a
			       * stream; the timeline shows the one line
			       * chunk_text makes of it (atomic) */
};
_Static_assert(sizeof(struct chunk) == 32 + 8, "a chunk is 40 bytes");

struct rec {
	bool segmented, finished;
	int table;
	uint8_t head[HEADER];
	int16_t version, flags, dictionary;
	uint8_t wvlen;
	int64_t timestamp;
	int32_t meta_len, index_len, tick_count, chunk_count, data_version;
	uint8_t *pre;         /* header + metadata + index, as stored */
	size_t pre_len;
	struct sv_nbt meta;
	struct chunk *chunks;
	uint32_t n;
	struct sv_buf header_json, snbt;
	uint64_t compact_size;
	uint32_t at_dir, chunks_dir, nbt_node, timeline_node;
	uint32_t *bin_node, *txt_node; /* each chunk's views */
	uint64_t *cstart;     /* where each chunk starts in compacted.hcrp */
	struct stat pre_st;   /* segmented: the preamble as read */
	/* The text of a chunk too big to hold (big()) is made as it is read:
	 * two cursors, each at a place in one chunk's text, so that a reader
	 * going on from where it stopped does not start over.  cur_lock
	 * protects them (reads run in several threads). */
	pthread_mutex_t cur_lock;
	struct cursor *cur[2];
	uint64_t clock;       /* counts uses of the cursors */
};

struct cursor;


/* ---- shared between recording.c, recording_open.c and recording_commit.c ---- */

bool sv_rc_big(struct sv_container *c, const struct rec *r, uint32_t i);
int sv_rc_build(struct sv_container *c, struct rec *r, struct sv_err *err);
int sv_rc_check_rec(struct sv_container *c, uint32_t node, const uint8_t *p, size_t len,
		    struct sv_err *err);
int sv_rc_commit_dir_rec(struct sv_container *c, int fd, struct sv_err *err);
int sv_rc_commit_file_rec(struct sv_container *c, int fd, struct sv_err *err);
int sv_rc_index_text(const struct rec *r, struct sv_buf *out);
int sv_rc_inflate_chunk(struct sv_container *c, const struct rec *r, uint32_t i,
			struct sv_blob **out, struct sv_err *err);
int sv_rc_list_rec(struct sv_container *c, uint32_t dir, uint64_t pos, char name[256],
		   bool *is_dir, uint64_t *at);
int sv_rc_lookup_rec(struct sv_container *c, uint32_t dir, const char *name, struct sv_err *err);
int sv_rc_read_preamble(struct sv_container *c, struct rec *r, struct sv_err *err);
int sv_rc_unlink_rec(struct sv_container *c, uint32_t node, struct sv_err *err);
int sv_rc_write_preamble(const struct rec *r, const struct sv_buf *meta,
			 const struct chunk *chunks, uint32_t lo, uint32_t hi, uint32_t shift,
			 uint64_t abs_base, struct sv_buf *out);

#endif
