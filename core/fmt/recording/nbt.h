/*
 * nbt.h - Minecraft's NBT as a replay recording stores it ("network" NBT:
 * a type byte, then the payload with no name; big-endian; strings are a
 * u16 length and modified UTF-8), and SNBT, its text form.
 *
 * Tags: 0 end, 1 byte, 2 short, 3 int, 4 long, 5 float, 6 double,
 * 7 byte array (i32 n + bytes), 8 string, 9 list (element type, i32 n,
 * payloads), 10 compound ((type, name, payload)... 0), 11 int array,
 * 12 long array.
 *
 * SNBT as savefs writes it (and reads, strictly): compounds `{key: value}`
 * with keys bare when they are [0-9A-Za-z_.+-]+ and quoted otherwise;
 * numbers with the game's suffixes (1b, 1s, 1, 1L, 1.5f, 1.5d); strings in
 * double quotes with \" \\ \n \t \r \b \f and \uXXXX escapes; lists
 * `[a, b]` (one element type); arrays `[B; 1b]`, `[I; 1]`, `[L; 1L]`;
 * `true`/`false` read as bytes 1 and 0.  Floats are written as the
 * shortest decimal that reads back to the same bits; NaN and infinities as
 * NaNf, Infinityd, -Infinityf and so on (SNBT has one NaN: a NaN with
 * other bits reads back as the usual one).  An empty list is written `[]`
 * and read back as a list of element type 0 (end), as the game writes
 * one.  The parser refuses anything else (bare strings, duplicate keys,
 * mixed lists, numbers out of range, trailing commas or text) with
 * -EINVAL and "line L, column C: reason".
 *
 * Reading is bounded: nesting by SV_NBT_MAX_DEPTH, every count by the
 * bytes left.  Binary errors are -EBADMSG with "byte N: reason".
 */
#ifndef SV_NBT_H
#define SV_NBT_H

#include "format.h"

#define SV_NBT_MAX_DEPTH 512

enum {
	SV_NBT_END, SV_NBT_BYTE, SV_NBT_SHORT, SV_NBT_INT, SV_NBT_LONG,
	SV_NBT_FLOAT, SV_NBT_DOUBLE, SV_NBT_BYTES, SV_NBT_STRING, SV_NBT_LIST,
	SV_NBT_COMPOUND, SV_NBT_INTS, SV_NBT_LONGS,
};

/* One value.  Strings and names are UTF-8 (converted from and to modified
 * UTF-8 at the edges), NUL-terminated, with their length.  Lists,
 * compounds and the three arrays hold their elements in kids (arrays as
 * integer values of the element tag). */
struct sv_nbt {
	uint8_t type;
	uint8_t elem;        /* lists: the element type */
	char *name;          /* compound members: owned; else NULL */
	size_t name_len;
	union {
		int64_t i;   /* byte, short, int, long */
		float f;
		double d;
		struct {
			char *p; /* owned */
			size_t n;
		} s;
	} v;
	struct sv_nbt *kids; /* owned, nkids of them */
	size_t nkids;
};

/* Frees a value's contents (not the struct itself).  Accepts NULL. */
void sv_nbt_fini(struct sv_nbt *v);

/* Reads a network NBT value (type byte, payload) from p[0..n) into *out;
 * *used receives the bytes it took.  Type 0 alone is an empty value. */
int sv_nbt_read(const uint8_t *p, size_t n, struct sv_nbt *out, size_t *used,
		struct sv_err *err);
/* Reads the payload of a value of type `type` (no type byte): the item
 * compounds of a set-item event. */
int sv_nbt_read_payload(const uint8_t *p, size_t n, uint8_t type, struct sv_nbt *out,
			size_t *used, struct sv_err *err);
/* Appends v as network NBT (type byte, payload). */
int sv_nbt_write(struct sv_buf *b, const struct sv_nbt *v);


/* Appends v as SNBT: indented over lines (pretty, with a final newline) or
 * on one line with no spaces outside strings (compact). */
int sv_snbt_write(struct sv_buf *b, const struct sv_nbt *v, bool pretty);
/* Parses SNBT text p[0..n) (one value, then only white space). */
int sv_snbt_parse(const char *p, size_t n, struct sv_nbt *out, struct sv_err *err);

#endif
