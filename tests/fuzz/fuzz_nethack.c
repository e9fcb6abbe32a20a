/*
 * fuzz_nethack.c - libFuzzer target for NetHack 4 game logs (.nhgame,
 * core/fmt/nethack/nethack.c): opens the input from memory (the format forced, so
 * every input reaches the header parser), walks the whole tree, stats
 * every node, reads every file whole and at a few odd offsets, reads the
 * meta files, then frees.  Then the same with a valid fixed header put in
 * front of the input, so that the body parser (lines, payloads, diffs,
 * states) is reached by almost every input.
 *
 * For an input that opened (abort() otherwise: real invariants):
 *   - a refused log always says why; one with the fixed header in front
 *     always opens (a body problem is a warning, never a failure);
 *   - every listed name is valid and looks up to the same node;
 *   - every file that reads reads at the size stat gave; a failed read
 *     says why and fails again the same way;
 *   - the two streams (log, transcript.txt) read the same in odd-sized
 *     pieces in order, from odd offsets and whole (refused only above the
 *     decode limit), at the size stat gives;
 *   - the log is the input up to its last newline, and the transcript
 *     has one line per line of it.
 * Limits are small so that a declared size cannot make one input take
 * seconds; the scan is split between two threads from 64 bytes on.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-nethack).
 */
#define FUZZ_NAME "fuzz_nethack"
#include "container.h"
#include "fuzz_walk.h"
#include "format.h"
#include "fmt/nethack/nethack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A valid header (lines 1-3) for the second round. */
static const char header[] =
	"NHGAME save 00000000 4.003.000\n"
	"                                                                    (new game)\n"
	"60a2ee7ef1240 0 0 VGVzdGVy Val hum fem law\n";

static void set_opts(struct sv_opts *o)
{
	sv_opts_init(o);
	o->format = "nethack";
	o->max_decode = 1 << 16;
	o->cache_cap = 256 << 10;
	o->readahead = 0;
	/* Every log past 64 bytes is scanned by two threads: the split and
	 * its merge are fuzzed too. */
	sv_nh_split_at = 64;
}

/* ---- the walk ---------------------------------------------------------- */

/* What the walk found, for the checks across files. */
struct seen {
	struct sv_blob *log, *transcript;
};

/*
 * A stream read in odd-sized pieces, in order and from odd offsets, and
 * whole (as the command line reads it: refused only above the decode
 * limit).  Returns what the pieces made.
 */
static struct sv_blob *read_stream(struct sv_container *c, uint32_t n, uint64_t size)
{
	static const size_t piece[] = {1, 7, 61, 509, 4099, 3, 65537};
	const size_t npiece = sizeof piece / sizeof *piece;
	struct sv_err err;
	struct sv_buf all;
	sv_buf_init(&all);
	uint8_t *buf = malloc(65537);
	if (!buf)
		abort();
	/* In order. */
	for (size_t i = 0;; i++) {
		size_t want = piece[i % npiece], got = 0;
		if (sv_read(c, n, all.len, buf, want, &got, &err))
			fuzz_fail("a stream piece does not read", err.msg);
		if (got > want || all.len + got > size)
			fuzz_fail("a stream reads past the size stat gave", NULL);
		if (!got)
			break;
		if (got < want && all.len + got != size)
			fuzz_fail("a stream piece is short before the end", NULL);
		if (sv_buf_add(&all, buf, got))
			abort();
	}
	fuzz_check_size(n, size, all.len);
	/* Whole. */
	struct sv_blob *whole = NULL;
	int rc = sv_content(c, n, &whole, &err);
	if (rc && (rc != -EFBIG || size <= sv_container_opts(c)->max_decode))
		fuzz_fail("a stream does not read whole", err.msg);
	if (!rc && (whole->len != size || (size && memcmp(whole->data, all.p, size))))
		fuzz_fail("a stream read whole differs from its pieces", NULL);
	sv_blob_unref(whole);
	/* Odd offsets, out of order. */
	uint64_t offs[] = {size / 2 + 1, 3, size > 0 ? size - 1 : 0, size / 3, 1, size, 0};
	for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
		size_t want = piece[(i + 2) % npiece], got = 0;
		if (sv_read(c, n, offs[i], buf, want, &got, &err))
			fuzz_fail("a stream piece does not read", err.msg);
		size_t left = offs[i] < size ? (size_t)(size - offs[i]) : 0;
		if (got != (left < want ? left : want) ||
		    (got && memcmp(buf, all.p + offs[i], got)))
			fuzz_fail("a stream piece at an odd offset differs from the others", NULL);
	}
	size_t got = 1;
	if (sv_read(c, n, UINT64_MAX, buf, 16, &got, &err) || got)
		fuzz_fail("a stream reads past its end", NULL);
	free(buf);
	struct sv_blob *b = sv_blob_dup(all.p ? all.p : (uint8_t *)"", all.len);
	if (!b)
		abort();
	sv_buf_fini(&all);
	return b;
}

/* The walk's files: streams as above (log and transcript.txt at the top
 * kept in the struct seen at w->arg), the others by fuzz_read_file(). */
static void visit_file(const struct fuzz_walk *w, uint32_t n, const struct sv_stat *st)
{
	if (!st->stream) {
		fuzz_read_file(w->c, n, st->size, w->checks);
		return;
	}
	struct seen *s = w->arg;
	const struct sv_node *node = sv_node(w->c, n);
	struct sv_blob *b = read_stream(w->c, n, st->size);
	struct sv_blob **keep = node->parent != SV_ROOT ? NULL
			       : !strcmp(node->name, "log") ? &s->log
			       : !strcmp(node->name, "transcript.txt") ? &s->transcript
			       : NULL;
	if (keep && !*keep)
		*keep = b;
	else
		sv_blob_unref(b);
}

static size_t lines(const struct sv_blob *b)
{
	size_t k = 0;
	for (size_t i = 0; i < b->len; i++)
		k += b->data[i] == '\n';
	return k;
}

/* One round: data opened, walked, checked.  must_open: the header is
 * known to be valid. */
static void round_one(const uint8_t *data, size_t size, bool must_open)
{
	struct sv_opts o;
	set_opts(&o);
	struct sv_container *c = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	if (sv_container_open_mem(data, size, &o, &c, &err)) {
		/* A refused log always says why. */
		if (!err.msg[0] || err.code >= 0)
			fuzz_fail("a refused log does not say why", NULL);
		if (must_open)
			fuzz_fail("a log with a valid header does not open", err.msg);
		return;
	}
	struct seen s = {0};
	struct fuzz_walk w = {.c = c, .max_depth = 4, .checks = FUZZ_WHY | FUZZ_SAME,
			      .file = visit_file, .arg = &s};
	fuzz_walk(&w);
	fuzz_read_meta(c, (const char *const[]){"states/999999.sav", "diffs/000001.mdiff", NULL});
	if (!s.log || !s.transcript)
		fuzz_fail("no log or no transcript.txt", NULL);
	/* The log is the input up to its last newline. */
	const uint8_t *nl = size ? memrchr(data, '\n', size) : NULL;
	size_t want = nl ? (size_t)(nl - data) + 1 : 0;
	if (s.log->len != want || (want && memcmp(s.log->data, data, want)))
		fuzz_fail("the log is not the input up to its last newline", NULL);
	/* One transcript line per log line. */
	if (lines(s.log) != lines(s.transcript))
		fuzz_fail("the transcript does not have one line per log line", NULL);
	sv_blob_unref(s.log);
	sv_blob_unref(s.transcript);
	sv_container_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_spill();
	round_one(data, size, false);
	size_t hn = sizeof header - 1;
	uint8_t *with = malloc(hn + size + 1);
	if (!with)
		abort();
	memcpy(with, header, hn);
	if (size)
		memcpy(with + hn, data, size);
	round_one(with, hn + size, true);
	free(with);
	return 0;
}
