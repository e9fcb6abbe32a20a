/*
 * nethack.h - the pieces of the NetHack 4 game log format (.nhgame) that
 * stand alone: payload decoding and the three save-diff formats.  The log
 * itself (lines, tree, appends) is core/fmt/nethack/nethack.c.  Facts:
 * ../shared/formats/nethack4.md.
 */
#ifndef SV_NETHACK_H
#define SV_NETHACK_H

#include "format.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- payloads (nhdiff.c) ------------------------------------------------------ */

/*
 * A payload is standard base64 of the raw bytes, or "$<len>$" followed by
 * base64 of a zlib stream that inflates to exactly <len> bytes.
 * sv_nh_payload_size: the decoded size from the text alone (no decoding):
 * the stated length of a compressed payload, else the base64 size; -1 if
 * the text is not a payload (bad base64 length or characters, a bad
 * "$len$" prefix).  *compressed says which form it is.
 */
int64_t sv_nh_payload_size(const char *p, size_t n, bool *compressed);
/*
 * Decodes a payload, appending the bytes to out.  Refuses (-EBADMSG with
 * a reason) anything that is not a payload, a zlib stream that is corrupt
 * or does not inflate to exactly its stated length, and (-EFBIG) a decoded
 * size above max.
 */
int sv_nh_payload_decode(const char *p, size_t n, uint64_t max, struct sv_buf *out,
			 struct sv_err *err);

/* ---- the log's scan (nethack.c) --------------------------------------------------- */

/* A log with at least this many bytes after its header is scanned by two
 * threads, the second from its middle on (32 MiB; tests make it small, to
 * see the two halves find what one scan finds). */
extern uint64_t sv_nh_split_at;
/* Diffs applied to make states so far, in every log (atomic; for tests:
 * what a way of reading costs). */
extern uint64_t sv_nh_diffs_applied;

/* ---- save diffs (nhdiff.c) ---------------------------------------------------- */

enum nh_diff_format {
	NH_DIFF_BETA1 = 1, /* no header: 16-bit little-endian words */
	NH_DIFF_BETA2 = 2, /* header 01 40: big-endian copy/edit/seek words */
	NH_DIFF_BETA3 = 3, /* header 01 43: MRU-coded bit stream (4.3.0) */
};

/* The format of a decoded diff, from its first bytes. */
enum nh_diff_format sv_nh_diff_format(const uint8_t *d, size_t n);

struct nh_diff_result {
	enum nh_diff_format format;
	bool crc_checked;  /* the diff ended with eof_crc32 and it matched */
	uint32_t commands; /* commands read, the end marker included */
};

/*
 * Applies the decoded diff d[0..n) to the previous save base[0..blen),
 * appending the new save to out (which the caller empties first).  Every
 * read of base, of d and every output byte is bounds-checked: a copy past
 * the end of base, a seek before its start, a diff that ends without its
 * end marker, bytes after the end marker, an unknown or never-written
 * command, and an eof_crc32 that does not match all fail with -EBADMSG and
 * a reason naming the diff byte ("diff byte 12: copy of 40 bytes past the
 * end of the previous save (pos 990 of 1000)").  An output above max fails
 * with -EFBIG.  res may be NULL.
 */
int sv_nh_diff_apply(const uint8_t *base, size_t blen, const uint8_t *d, size_t n,
		     uint64_t max, struct sv_buf *out, struct nh_diff_result *res,
		     struct sv_err *err);

#endif
