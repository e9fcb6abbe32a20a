/*
 * fuzz_sbtiles.c - libFuzzer target for Starbound tile sectors
 * (core/fmt/starbound/sbtiles.c): the input is an inflated type-1 record.  For what
 * reads (abort() otherwise):
 *   - a failure is -EBADMSG with a reason starting "sector: ";
 *   - a sector that reads and is written back (or refused with -EINVAL and
 *     a reason, for what the game would not load) reads again, and its
 *     second write gives the same bytes as the first (one encoding).
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-sbtiles).
 */
#include "fmt/starbound/sbtiles.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz_sbtiles: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sv_sb_sector s, s2;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_sb_sector_read(data, size, &s, &err);
	if (rc) {
		if (rc != -EBADMSG || strncmp(err.msg, "sector: ", 8))
			fail("a read failed without a reason", err.msg);
		return 0;
	}
	struct sv_buf a, b;
	sv_buf_init(&a);
	sv_buf_init(&b);
	rc = sv_sb_sector_write(&s, &a, &err);
	if (rc) {
		if (rc != -EINVAL || strncmp(err.msg, "sector: ", 8))
			fail("a write failed without a reason", err.msg);
		sv_buf_fini(&a);
		return 0;
	}
	if (sv_sb_sector_read(a.p, a.len, &s2, &err))
		fail("what was written cannot be read", err.msg);
	if (sv_sb_sector_write(&s2, &b, &err) || a.len != b.len || memcmp(a.p, b.p, a.len))
		fail("a second write gave other bytes", NULL);
	sv_buf_fini(&a);
	sv_buf_fini(&b);
	return 0;
}
