/*
 * fuzz_rcchunk.c - libFuzzer target for a replay chunk's decoder
 * (core/fmt/recording/rcevents.c): the input is a decompressed payload.  Its text is
 * made with both event tables; a payload whose text ends without an
 * undecoded rest gives a state at each of its first ticks, and a failure
 * there is -EBADMSG or -ENOENT with a reason.  The same text made as a
 * stream, the payload fed in pieces of 1 to 7 bytes through a window of
 * at most 4 KiB (events larger than that aside), equals it byte for
 * byte.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-rcchunk).
 */
#include "fmt/recording/rcevents.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct feed {
	const uint8_t *p;
	size_t n, off;
};

/* Gives the payload in pieces of 1 to 7 bytes. */
static int feed(void *arg, uint8_t *buf, size_t cap, size_t *got, struct sv_err *err)
{
	struct feed *f = arg;
	size_t k = 1 + (f->off * 2654435761u >> 7) % 7;
	if (k > cap)
		k = cap;
	if (k > f->n - f->off)
		k = f->n - f->off;
	if (k)
		memcpy(buf, f->p + f->off, k);
	f->off += k;
	*got = k;
	return 0;
}

/* The streamed text, or -EFBIG when an event was larger than the window. */
static void streamed(const uint8_t *data, size_t size, int table, const struct sv_buf *whole)
{
	struct feed f = {data, size, 0};
	struct sv_rc_ts *ts;
	if (sv_rc_ts_new(table, 4096, feed, &f, &ts))
		abort();
	struct sv_buf t;
	sv_buf_init(&t);
	struct sv_err err;
	bool end = false;
	int rc = 0;
	while (!rc && !end)
		rc = sv_rc_ts_next(ts, &t, &end, &err);
	if (rc) {
		fprintf(stderr, "fuzz_rcchunk: the stream failed: %s\n", err.msg);
		abort();
	}
	/* An event larger than the window is "undecoded" there: the same text
	 * up to it.  Otherwise the same text. */
	bool same = t.len == whole->len && (!t.len || !memcmp(t.p, whole->p, t.len));
	if (!same && (size < 4096 || !strstr(sv_rc_ts_problem(ts), "byte"))) {
		fprintf(stderr, "fuzz_rcchunk: the streamed text differs (%zu vs %zu bytes)\n",
			t.len, whole->len);
		abort();
	}
	sv_buf_fini(&t);
	sv_rc_ts_free(ts);
}

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
		streamed(data, size, table, &t);
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
