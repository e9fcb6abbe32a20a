/*
 * rcevents.h - the tick records of a replay recording's chunk, decoded to
 * text lines and to the state at a tick.
 *
 * A chunk's payload (decompressed) is tick records back to back: VarInt
 * tick, i16 event count, then that many events, each a VarInt id and a body
 * whose layout only the recording host's event table knows (bodies carry no
 * length).  Facts: ../shared/formats/recording.md.  Two tables: the
 * library's built-ins (ids 0-9) and the parkour host's (0-9, then 10-14).
 * An id outside the table, or a body that runs past the payload, ends what
 * can be decoded: the text shows the rest as hex with the reason.
 *
 * Text: a tick line "<tick>\ttick\t<events>", then one line per event,
 * "<tick>\t<id>\t<name>\t<key=value ...>"; an undecodable rest is one line
 * "<tick>\t<id>\tundecoded\treason=\"...\" at=<offset> bytes=<hex>".
 */
#ifndef SV_RCEVENTS_H
#define SV_RCEVENTS_H

#include "format.h"

enum { SV_RC_BUILTIN, SV_RC_PARKOUR };

/* Appends the chunk's text to out.  *problem (if not NULL) receives the
 * reason decoding stopped early, or "" (SV_ERR_MAX bytes).  Only -ENOMEM
 * fails. */
int sv_rc_text(const uint8_t *p, size_t n, int table, struct sv_buf *out, char *problem);

/* The same text made piece by piece from a payload too large to hold:
 * `fill` gives the payload's next bytes (up to cap; *got 0 at its end;
 * -errno with the reason), and the text is made from a window of at most
 * `max` bytes of it (an event longer than that: -EFBIG with the reason).
 * sv_rc_ts_next appends the next piece (a line, or part of the hex of an
 * undecodable rest) to out, or sets *end.  The problem, once the text met
 * one, as sv_rc_text gives it ("" before).  Not thread-safe: one reader. */
struct sv_rc_ts;
typedef int (*sv_rc_fill_fn)(void *arg, uint8_t *buf, size_t cap, size_t *got,
			     struct sv_err *err);
int sv_rc_ts_new(int table, size_t max, sv_rc_fill_fn fill, void *arg, struct sv_rc_ts **out);
int sv_rc_ts_next(struct sv_rc_ts *ts, struct sv_buf *out, bool *end, struct sv_err *err);
const char *sv_rc_ts_problem(const struct sv_rc_ts *ts);
void sv_rc_ts_free(struct sv_rc_ts *ts);

/* Appends the state after tick `tick` as JSON (see DESIGN.md: "tick",
 * "entities", "ghost_blocks", "run"), replaying the payload from its start
 * (a chunk that opens with a snapshot) up to and including that tick.
 * -ENOENT if the payload has no such tick; -EBADMSG (with the reason) if an
 * event it needs cannot be decoded. */
int sv_rc_state(const uint8_t *p, size_t n, int table, uint32_t tick, struct sv_buf *out,
		struct sv_err *err);

/* Appends the payload with every tick record's tick lowered by `shift`
 * (events copied as they are): a recording whose first chunk was cut.
 * -EBADMSG (with the reason) if an event cannot be decoded (its length is
 * then unknown) or a tick would go below 0. */
int sv_rc_renumber(const uint8_t *p, size_t n, int table, uint32_t shift, struct sv_buf *out,
		   struct sv_err *err);

/* The ticks a payload holds: its first and the count of tick records,
 * read without decoding events past what is needed (-EBADMSG if the first
 * tick record cannot be read). */
int sv_rc_first_tick(const uint8_t *p, size_t n, uint32_t *tick, struct sv_err *err);

/* A VarInt (LEB128 of at most 5 bytes, kept to 32 bits) and a VarLong (10
 * bytes), as the recorder writes them, read with the bounded reader (which
 * fails if one is malformed or cut short).  Written with sv_put_leb of the
 * value as unsigned. */
struct sv_rd;
int32_t sv_rc_varint(struct sv_rd *r);
int64_t sv_rc_varlong(struct sv_rd *r);

#endif
