/*
 * sbon.h - Starbound's binary encodings: VLQs, SBON (binary JSON) and
 * versioned JSON, read into jansson values and written back.
 *
 * Facts (../shared/formats/starbound.md, checked against the engine's
 * StarVlqEncoding and StarJson):
 *   VLQ         7-bit groups, MOST significant first, high bit = more
 *               follows, at most 10 bytes (not LEB128)
 *   signed VLQ  u & 1 ? -(u >> 1) - 1 : u >> 1
 *   SBON value  a type byte, then: 0/1 null, 2 double (8 bytes, big-
 *               endian), 3 bool (1 byte, non-zero true), 4 int (signed
 *               VLQ), 5 string (VLQ length + UTF-8), 6 array (VLQ n +
 *               values), 7 object (VLQ n + (string key, value) pairs)
 *   versioned   string name, Maybe<u32> version (bool, then u32 BE if
 *   JSON        true), SBON value
 *
 * A SBON integer reads as a JSON integer and a double as a JSON real, and
 * they are written back so; key order is kept (jansson keeps insertion
 * order).  Everything read is bounded: nesting by SV_SBON_MAX_DEPTH, counts
 * by the bytes left (each element takes at least one), strings by their
 * stated length.  Errors are -EBADMSG with "byte N: ..." (N from the start
 * of the reader's buffer), -ENOMEM.
 */
#ifndef SV_SBON_H
#define SV_SBON_H

#include "rd.h"
#include "format.h"

#include <jansson.h>

#define SV_SBON_MAX_DEPTH 512
/* The longest string one value may hold (the whole value is bounded by
 * -o maxdecode; a string is held again as JSON, so it is bounded too). */
#define SV_SBON_MAX_STRING (64u << 20)
/* A double that is not a finite number (NaN, infinity: real files have
 * them) reads as the object {"$double": "<its 64 bits as 16 hex digits>"}
 * and such an object writes back as that double, bit for bit. */
#define SV_SBON_DOUBLE "$double"

/* A VLQ (sv_rd_vlq, sv_rd_svlq) with the message SBON's readers give:
 * "byte N: a number runs past the end" and rd.h's reasons.  Written with
 * sv_put_vlq and sv_put_svlq. */
int sv_vlq_read(struct sv_rd *r, uint64_t *out, struct sv_err *err);
int sv_svlq_read(struct sv_rd *r, int64_t *out, struct sv_err *err);

/* Reads one SBON value at r's offset into a new jansson value (*out owned
 * by the caller). */
int sv_sbon_read(struct sv_rd *r, json_t **out, struct sv_err *err);
/* Appends v as SBON.  -EINVAL for a value SBON cannot hold (a real that
 * is not finite). */
int sv_sbon_write(struct sv_buf *b, const json_t *v, struct sv_err *err);

/* An object without its type byte (a map container: VLQ n, then n x
 * (string key, SBON value)), read and written. */
int sv_sbon_read_map(struct sv_rd *r, json_t **out, struct sv_err *err);
int sv_sbon_write_map(struct sv_buf *b, const json_t *v, struct sv_err *err);
/* A string (VLQ length + UTF-8), read as a jansson string and written. */
int sv_sbon_read_string(struct sv_rd *r, json_t **out, struct sv_err *err);
int sv_sbon_write_string(struct sv_buf *b, const char *s, size_t n);

/* A versioned JSON value: {"id", "version" (absent when the file has
 * none), "content"}, the object savefs shows. */
int sv_vjson_read(struct sv_rd *r, json_t **out, struct sv_err *err);
/* The value under `key` in the content of the versioned JSON value
 * p[0..n) when that content is an object, found by stepping over the
 * other values without building them (*out NULL when there is none).
 * For a name wanted from many records (a universe's chunk coordinates). */
int sv_vjson_get(const uint8_t *p, size_t n, const char *key, json_t **out,
		 struct sv_err *err);
/* Writes such an object back: -EINVAL (with the reason) if it is not one
 * (an "id" string, a "version" of 0..2^32-1 or none, a "content"). */
int sv_vjson_write(struct sv_buf *b, const json_t *v, struct sv_err *err);

#endif
