/*
 * fuzz_snbt.c - libFuzzer target for NBT and SNBT (core/fmt/recording/nbt.c).  The
 * input is read twice:
 *   - as network NBT: what reads is written back to the same bytes (a NUL
 *     stored as one byte comes back as C0 80, and then reads the same), and
 *     its SNBT parses back to a value that writes the same NBT (unless it
 *     holds a NaN or an empty list of a type: SNBT has one NaN, and an
 *     empty list is `[]` whatever it was to hold);
 *   - as SNBT text: what parses is written as SNBT and parses again to the
 *     same NBT; a failure is -EINVAL with "snbt: line L, column C: ...".
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-snbt).
 */
#include "fmt/recording/nbt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_snbt: %s\n", what);
	abort();
}

/* What SNBT cannot say: a NaN's bits, an empty list's element type. */
static bool has_nan(const struct sv_nbt *v)
{
	if ((v->type == SV_NBT_FLOAT && v->v.f != v->v.f) ||
	    (v->type == SV_NBT_DOUBLE && v->v.d != v->v.d) ||
	    (v->type == SV_NBT_LIST && !v->nkids && v->elem != SV_NBT_END))
		return true;
	for (size_t i = 0; i < v->nkids; i++)
		if (has_nan(&v->kids[i]))
			return true;
	return false;
}

/* v's NBT, its SNBT (pretty and compact) parsed again: the same NBT. */
static void snbt_round_trip(const struct sv_nbt *v, const struct sv_buf *bin)
{
	for (int pretty = 0; pretty < 2; pretty++) {
		struct sv_buf s, b2;
		sv_buf_init(&s);
		sv_buf_init(&b2);
		struct sv_nbt w;
		struct sv_err err;
		if (sv_snbt_write(&s, v, pretty))
			fail("snbt write failed");
		if (has_nan(v)) {
			/* checked no further */
		} else if (sv_snbt_parse((const char *)s.p, s.len, &w, &err)) {
			/* Duplicate keys in a binary compound have no SNBT. */
			if (!strstr(err.msg, "twice in one compound"))
				fail(err.msg);
		} else {
			if (sv_nbt_write(&b2, &w))
				fail("the parsed value does not write");
			if (b2.len != bin->len || memcmp(b2.p, bin->p, b2.len))
				fail("SNBT does not read back to the same NBT");
			sv_nbt_fini(&w);
		}
		sv_buf_fini(&s);
		sv_buf_fini(&b2);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sv_nbt v;
	struct sv_err err;
	size_t used;
	if (!sv_nbt_read(data, size, &v, &used, &err)) {
		struct sv_buf b;
		sv_buf_init(&b);
		if (!sv_nbt_write(&b, &v)) {
			struct sv_nbt v2;
			size_t used2;
			if (sv_nbt_read(b.p, b.len, &v2, &used2, &err) || used2 != b.len)
				fail("what was written does not read");
			sv_nbt_fini(&v2);
			snbt_round_trip(&v, &b);
		}
		sv_buf_fini(&b);
		sv_nbt_fini(&v);
	} else if (err.code != -EBADMSG || strncmp(err.msg, "nbt: byte ", 10)) {
		fail(err.msg);
	}
	struct sv_nbt p;
	int rc = sv_snbt_parse((const char *)data, size, &p, &err);
	if (rc) {
		if (rc != -EINVAL || strncmp(err.msg, "snbt: line ", 11))
			fail(err.msg);
		return 0;
	}
	struct sv_buf b;
	sv_buf_init(&b);
	if (!sv_nbt_write(&b, &p))
		snbt_round_trip(&p, &b);
	sv_buf_fini(&b);
	sv_nbt_fini(&p);
	return 0;
}
