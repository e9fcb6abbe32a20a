/*
 * fuzz_rcchunk.c - libFuzzer target for a replay chunk's decoder
 * (core/fmt/rcevents.c): the input is a decompressed payload.  Its text is
 * made with both event tables; a payload whose text ends without an
 * undecoded rest gives a state at each of its first ticks, and a failure
 * there is -EBADMSG or -ENOENT with a reason.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-rcchunk).
 */
#include "fmt/rcevents.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int table = SV_RC_BUILTIN; table <= SV_RC_PARKOUR; table++) {
		struct sv_buf t;
		sv_buf_init(&t);
		char problem[SV_ERR_MAX];
		if (sv_rc_text(data, size, table, &t, problem)) {
			fprintf(stderr, "fuzz_rcchunk: text failed\n");
			abort();
		}
		if (memchr(t.p ? (const void *)t.p : "", '\0', t.len)) {
			fprintf(stderr, "fuzz_rcchunk: a NUL in the text\n");
			abort();
		}
		sv_buf_fini(&t);
		uint32_t first;
		if (sv_rc_first_tick(data, size, &first, NULL))
			continue;
		for (uint32_t k = 0; k < 3; k++) {
			struct sv_buf s;
			sv_buf_init(&s);
			struct sv_err err;
			sv_err_clear(&err);
			int rc = sv_rc_state(data, size, table, first + k, &s, &err);
			if (rc && ((rc != -EBADMSG && rc != -ENOENT) || !err.msg[0])) {
				fprintf(stderr, "fuzz_rcchunk: state failed without a reason: %d\n", rc);
				abort();
			}
			sv_buf_fini(&s);
		}
	}
	return 0;
}
