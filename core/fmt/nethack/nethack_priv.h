/*
 * nethack_priv.h - what the NetHack 4 format's files share: the log as
 * scanned (its entries, transcript checkpoints, the header), line kinds,
 * node keys, and the helpers one file offers the others.  nethack.c
 * scans the log and builds the tree, nethack_read.c makes files as they
 * are read, nethack_append.c takes writes the game's way.
 */
#ifndef SV_NETHACK_PRIV_H
#define SV_NETHACK_PRIV_H

#include "nethack.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#define BLOCK (1u << 20)        /* bytes read at a time while scanning */
#define TBLOCK (64u << 10)      /* ... while making a piece of the transcript */
#define HEAD 8192               /* bytes of a line kept while scanning */
#define ST_KEPT 4               /* states kept to go on from */
#define CK_EVERY 256            /* lines between transcript checkpoints */
#define MAX_SMALL_LINE (1u << 20) /* a line other than a payload line */
#define LINE1_LEN 31
#define LINE2_LEN 79
#define COUNT_OFF 12            /* the recovery count's 8 hex digits */
#define LOCK_WAIT_NS 3000000000LL

enum { KEY_LOG = 1, KEY_HEADER, KEY_TRANSCRIPT, KEY_SAVES, KEY_DIFFS, KEY_STATES };
enum { T_SAVE = 1, T_DIFF = 2, T_STATE = 3 };
#define ENT_KEY(t, i) ((uint64_t)(t) << 32 | (uint32_t)(i))

/* A backup or diff line: 12 bytes, kept for every one (a 200 MB log has
 * 1.5 million).  A line of a gigabyte or more, or one that starts a
 * terabyte or further in, is taken as malformed.  What the entry does not
 * keep is found again when needed: its payload's size in the line's text
 * (sv_nh_ent_size), the length of a line of 4 MB or more in the file
 * (sv_nh_ent_len), the backup its state starts from in the good backups'
 * list (nh.bk, sv_nh_base). */
#define ENT_MAX_LEN ((1u << 30) - 1)
#define ENT_MAX_OFF ((UINT64_C(1) << 40) - 1)
#define ENT_LEN_FAR ((1u << 22) - 1)
struct __attribute__((packed, aligned(4))) ent {
	uint64_t off : 40;    /* where the line starts */
	uint64_t len : 22;    /* without its newline; ENT_LEN_FAR: that or
			       * more */
	uint64_t backup : 1;  /* a backup, else a diff */
	uint64_t bad : 1;     /* its payload is not a payload */
	uint32_t line;        /* 1-based line number */
};
_Static_assert(sizeof(struct ent) == 12, "an entry is 12 bytes");

/* The scan's running state at the start of a line. */
struct ck {
	uint64_t off;     /* file offset of the line */
	uint64_t toff;    /* its transcript line's offset in the body part */
	uint64_t time;    /* running time, microseconds since the epoch */
	uint32_t line;
};

struct nh {
	/* header (lines 1-3) */
	char status[5];
	uint32_t recovery;
	char version[16];
	char statusline[LINE2_LEN];
	uint64_t start;          /* microseconds since the epoch */
	unsigned mode;
	char *name;              /* decoded player name (NUL added) */
	size_t namelen;
	char role[4], race[4], gender[4], align[4];
	uint64_t hdr_end;        /* offset of line 4 */
	struct sv_buf thead;     /* transcript lines of the header */
	struct sv_buf json;      /* header.json */

	/* body, scanned up to end */
	uint64_t end;
	uint32_t line;           /* lines scanned, the header's included */
	uint64_t time;           /* running time after them */
	uint64_t tbody;          /* transcript bytes of the body lines */
	uint32_t kinds[16];      /* lines of each kind */
	bool over;               /* a Q line was seen */
	/* The open reads the entries (backup and diff lines) and counts the
	 * lines; what only the transcript, info and appends need (running
	 * time, transcript checkpoints and size, kinds, a Q line, malformed
	 * lines of other kinds) is found by sv_nh_details on first need, up
	 * to det_end; time, tbody, kinds, over and ck are valid once
	 * `detailed` is (det_lock, atomic), and always under the write lock
	 * after sv_nh_details. */
	pthread_mutex_t det_lock;
	bool detailed;
	/* A big log's entries are found at their first need (sv_nh_ready:
	 * a listing, a lookup, a read, info, an append), not at the open,
	 * up to scan_to, the end of its last complete line at the open;
	 * `scanned` (scan_lock, atomic) says they are. */
	pthread_mutex_t scan_lock;
	bool scanned;
	uint64_t scan_to, scan_torn; /* and the bytes after it then */
	uint64_t det_end;
	struct sv_buf ent_warns; /* the entries' scan's warnings (for the record) */
	struct sv_buf det_warns; /* a record's details' warnings, said at the
				  * first need of the details */
	struct ent *ents;
	size_t nents, capents;
	uint32_t *bk;          /* the entries that are good backups, in order */
	size_t nbk, capbk;
	uint64_t nbackups;     /* entries that are backups (saves/) */
	struct ck *ck;
	size_t nck, capck;
	struct sv_blob *kept;    /* the index record ents and ck point into
				  * (read from the persistent index, not
				  * copied); NULL: they are malloc'd */
	uint64_t torn;           /* bytes after the last newline at the scan */

	/* nodes */
	uint32_t n_log, n_header, n_transcript, n_saves, n_diffs, n_states;

	/* an append still waiting for its newline */
	struct sv_buf partial;

	/* the last states made, each where a reader going on from it starts
	 * (ST_KEPT of them: a reader whose order jumps between two runs of
	 * lines, as ls orders 6- and 7-digit names, or two readers, each go
	 * on from their own) */
	pthread_mutex_t st_lock;
	struct nh_state {
		uint32_t ent;       /* UINT32_MAX: none */
		struct sv_blob *blob;
		uint64_t used;
	} st[ST_KEPT];
	uint64_t st_clock;
	/* the last state that could not be made (st_lock): line fail_ent did
	 * not decode (fail_base UINT32_MAX: whatever came before it) or did
	 * not apply to the state built from backup fail_base.  Every later
	 * state on the same way fails the same, without decoding it again. */
	uint32_t fail_ent, fail_base;
	struct sv_err fail_err;
};

enum kind {
	K_BACKUP, K_DIFF, K_COMMAND, K_TIME, K_GETPOS, K_GETDIR, K_KEY, K_YESNO,
	K_MENU, K_OBJMENU, K_TEXT, K_BONES, K_GAMEOVER, K_BAD, K_NKINDS
};

/* A body line as the scanner sees it: its head, and its length and last
 * two bytes (a payload line is classified by those). */
struct line_view {
	const char *p;     /* the head of the line */
	size_t n;          /* bytes of it here */
	uint64_t full;     /* the whole line's length */
	char tail[2];      /* its last two bytes (when full >= 2) */
};

/* Formats times, remembering the last second's date and time. */
struct iso_cache {
	uint64_t sec;
	bool valid;
	char text[28];
};

/* Called for each line of the log by sv_nh_each_line. */
typedef int (*line_fn)(void *arg, uint64_t off, const struct line_view *l);

/* ---- shared between the format's files ---- */

struct sv_blob *sv_nh_buf_blob(struct sv_buf *b);
/* pread(2) of the log through the container: up to n bytes at off, fewer
 * at its end now; the count, or -1 with errno set. */
ssize_t sv_nh_pread(struct sv_container *c, void *buf, size_t n, uint64_t off);
int sv_nh_each_line(struct sv_container *c, uint64_t off, uint64_t limit, size_t block, line_fn fn,
		    void *arg, uint64_t *endp, struct sv_err *err);
void sv_nh_install_signals(void);
uint64_t sv_nh_log_size(const struct nh *nh);
void sv_nh_make_header_views(struct nh *nh);
int sv_nh_load(struct sv_container *c, uint32_t node, struct sv_blob **out,
	       struct sv_err *err);
int sv_nh_size(struct sv_container *c, uint32_t node, uint64_t *size, struct sv_err *err);
int sv_nh_read(struct sv_container *c, uint32_t node, uint64_t off, void *buf,
	       size_t size, size_t *got, struct sv_err *err);
int sv_nh_refresh(struct sv_container *c, struct sv_err *err);
int sv_nh_sync(struct sv_container *c, uint32_t node, struct sv_err *err);
int sv_nh_truncate(struct sv_container *c, uint32_t node, uint64_t size,
		   struct sv_err *err);
int sv_nh_write(struct sv_container *c, uint32_t node, uint64_t off, const uint8_t *p,
		size_t n, struct sv_err *err);
bool sv_nh_parse_hex(const char *s, size_t n, uint64_t *out);
int sv_nh_parse_line1(const char *p, char status[5], uint32_t *count, char version[16],
		      struct sv_err *err);
int sv_nh_scan_from(struct sv_container *c, struct nh *nh, bool add_nodes,
		    struct sv_err *err);
/* Finds the details the open left (above) if not found yet; any lock.
 * 0 or -errno (then they are tried again at the next need). */
int sv_nh_details(struct sv_container *c, struct nh *nh, struct sv_err *err);
/* The log's entries, scanned if they are not yet (any lock). */
int sv_nh_ready(struct sv_container *c, struct nh *nh, struct sv_err *err);
/* The first and the last good backup (ents index), UINT32_MAX: none. */
static inline uint32_t sv_nh_first_backup(const struct nh *nh)
{
	return nh->nbk ? nh->bk[0] : UINT32_MAX;
}

static inline uint32_t sv_nh_last_backup(const struct nh *nh)
{
	return nh->nbk ? nh->bk[nh->nbk - 1] : UINT32_MAX;
}

/* The backup (ents index) entry i's state starts from: i itself if it is
 * a good backup, else the last one before it; UINT32_MAX if none. */
static inline uint32_t sv_nh_base(const struct nh *nh, uint32_t i)
{
	size_t lo = 0, hi = nh->nbk;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (nh->bk[mid] <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? nh->bk[lo - 1] : UINT32_MAX;
}
/* Entry e's line length (without its newline), or UINT64_MAX if the file
 * cannot be read there. */
uint64_t sv_nh_ent_len(struct sv_container *c, const struct ent *e);
/* Its payload's decoded size as its text says, 0 if it cannot be read. */
uint64_t sv_nh_ent_size(struct sv_container *c, const struct ent *e);
/* Keeps state blob of entry ent (st_lock held), in place of the kept
 * state it was made from (slot `from`, or -1: the least recently used). */
void sv_nh_keep_state(struct nh *nh, int from, uint32_t ent, struct sv_blob *blob);
int sv_nh_state_of(struct sv_container *c, struct nh *nh, uint32_t k, struct sv_blob **out,
		   struct sv_err *err);
void sv_nh_touch(struct sv_container *c, uint32_t n, uint64_t size);
void sv_nh_touch_all(struct sv_container *c, struct nh *nh);
uint64_t sv_nh_transcript_line(uint32_t line, uint64_t time, const struct line_view *l,
			       struct sv_buf *out, struct sv_buf *content,
			       struct iso_cache *ic, enum kind *kind, uint64_t *delta,
			       uint64_t *size, const char **why);


/* ---- shared between nethack.c, nethack_scan.c and nethack_index.c ---- */

bool sv_nh_parse_int(const char *s, size_t n, long *out);
int sv_nh_parse_b64_arg(const char *s, size_t n, struct sv_buf *out, const char **why);
int sv_nh_parse_header(struct sv_container *c, struct nh *nh, struct sv_err *err);
int sv_nh_scan_all(struct sv_container *c, struct nh *nh, struct sv_err *err);
int sv_nh_scan_entries(struct sv_container *c, struct nh *nh, struct sv_buf *warns,
		       uint64_t limit, struct sv_err *err);
unsigned sv_nh_digits(uint64_t v);
void sv_nh_add_ent_nodes(struct sv_container *c, struct nh *nh, size_t i);
void sv_nh_add_quoted(struct sv_buf *b, const uint8_t *p, size_t n);
void sv_nh_iso_time(uint64_t t, char out[28]);
void sv_nh_scan_store(struct sv_container *c, const struct nh *nh, const struct sv_buf *ent_warns,
		      const struct sv_buf *det_warns);

/* What the scan of a whole log found, kept between mounts (a 200 MB log
 * scans in about a second, and reads back in a few milliseconds): the
 * counters, then the entry table, the transcript checkpoints, and the
 * warnings the entries' scan and the details' said (each NUL-ended), each
 * as this build lays it out (SCAN_INDEX says which layout; the store keys
 * it by the log's identity). */
#define SCAN_INDEX 6
/* Logs up to this size have their details found at open; a bigger one's
 * entries are scanned at their first need. */
#define DETAILS_AT_ONCE ((uint64_t)8 << 20)
#define SCAN_LATER DETAILS_AT_ONCE

enum kind sv_nh_payload_line(const struct line_view *l, uint64_t *size, bool *comp,
			     const char **why);

#endif
