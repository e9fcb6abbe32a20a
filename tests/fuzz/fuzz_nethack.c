/*
 * fuzz_nethack.c - libFuzzer target for NetHack 4 game logs (.nhgame,
 * core/fmt/nethack.c): opens the input from memory (the format forced, so
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
 * seconds.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-nethack).
 */
#include "savefs.h"

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

static void fail(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz_nethack: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
	abort();
}

static void set_opts(struct sv_opts *o)
{
	sv_opts_init(o);
	o->format = "nethack";
	o->max_decode = 1 << 16;
	o->cache_cap = 256 << 10;
	o->readahead = 0;
}

/* ---- the walk ---------------------------------------------------------- */

struct kids {
	uint32_t *v;
	size_t n, cap;
};

static int collect(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct kids *k = arg;
	(void)name;
	(void)next;
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 32;
		uint32_t *v = realloc(k->v, k->cap * sizeof *v);
		if (!v)
			abort();
		k->v = v;
	}
	k->v[k->n++] = st->node;
	return 0;
}

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
			fail("a stream piece does not read", err.msg);
		if (got > want || all.len + got > size)
			fail("a stream reads past the size stat gave", NULL);
		if (!got)
			break;
		if (got < want && all.len + got != size)
			fail("a stream piece is short before the end", NULL);
		if (sv_buf_add(&all, buf, got))
			abort();
	}
	if (all.len != size) {
		fprintf(stderr, "fuzz_nethack: node %u: stat said %llu bytes, read %zu\n", n,
			(unsigned long long)size, all.len);
		abort();
	}
	/* Whole. */
	struct sv_blob *whole = NULL;
	int rc = sv_content(c, n, &whole, &err);
	if (rc && (rc != -EFBIG || size <= sv_container_opts(c)->max_decode))
		fail("a stream does not read whole", err.msg);
	if (!rc && (whole->len != size || (size && memcmp(whole->data, all.p, size))))
		fail("a stream read whole differs from its pieces", NULL);
	sv_blob_unref(whole);
	/* Odd offsets, out of order. */
	uint64_t offs[] = {size / 2 + 1, 3, size > 0 ? size - 1 : 0, size / 3, 1, size, 0};
	for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
		size_t want = piece[(i + 2) % npiece], got = 0;
		if (sv_read(c, n, offs[i], buf, want, &got, &err))
			fail("a stream piece does not read", err.msg);
		size_t left = offs[i] < size ? (size_t)(size - offs[i]) : 0;
		if (got != (left < want ? left : want) ||
		    (got && memcmp(buf, all.p + offs[i], got)))
			fail("a stream piece at an odd offset differs from the others", NULL);
	}
	size_t got = 1;
	if (sv_read(c, n, UINT64_MAX, buf, 16, &got, &err) || got)
		fail("a stream reads past its end", NULL);
	free(buf);
	struct sv_blob *b = sv_blob_dup(all.p ? all.p : (uint8_t *)"", all.len);
	if (!b)
		abort();
	sv_buf_fini(&all);
	return b;
}

static void read_file(struct sv_container *c, uint32_t n, uint64_t size)
{
	struct sv_err err;
	struct sv_blob *b = NULL;
	int rc = sv_content(c, n, &b, &err);
	if (!rc) {
		/* stat promised this size before the read */
		if (b->len != size) {
			fprintf(stderr, "fuzz_nethack: node %u: stat said %llu bytes, read %zu\n", n,
				(unsigned long long)size, b->len);
			abort();
		}
	} else if (!err.msg[0] || rc >= 0) {
		fail("a failed read does not say why", NULL);
	}
	/* Again at odd offsets: from the cache, or failing the same way. */
	uint8_t buf[67];
	size_t got;
	static const uint64_t offs[] = {0, 1, 7, 4093};
	for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
		int r2 = sv_read(c, n, offs[i], buf, sizeof buf, &got, &err);
		if (!r2 != !rc)
			fail("a second read does not do as the first", err.msg);
		if (!r2 && (got > sizeof buf || (got && (offs[i] >= b->len ||
		    memcmp(buf, b->data + offs[i], got)))))
			fail("a read at an odd offset differs from the whole", NULL);
	}
	sv_read(c, n, size, buf, sizeof buf, &got, &err);
	sv_read(c, n, UINT64_MAX, buf, sizeof buf, &got, &err);
	sv_blob_unref(b);
}

/*
 * Walks dir: lists it first, then visits each child.  (Not from inside
 * sv_readdir's callback: expanding a lazy directory there would wait for
 * the container's lock, which the listing holds.)
 */
static void walk_dir(struct sv_container *c, uint32_t dir, int depth, struct seen *s)
{
	if (depth > 4)
		return;
	struct kids k = {0};
	sv_readdir(c, dir, 0, collect, &k);
	for (size_t i = 0; i < k.n; i++) {
		uint32_t n = k.v[i], found;
		struct sv_stat st;
		if (sv_stat(c, n, &st))
			abort();
		struct sv_node *node = sv_node(c, n);
		const char *name = node->name;
		/* Every listed name is valid and looks up to the same node. */
		if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/'))
			fail("a bad name", name);
		if (node->parent != dir || sv_lookup(c, dir, name, &found) || found != n)
			fail("a name does not look up to its node", name);
		if (st.dir) {
			walk_dir(c, n, depth + 1, s);
		} else if (st.volatile_) {
			continue;
		} else if (st.stream) {
			struct sv_blob *b = read_stream(c, n, st.size);
			struct sv_blob **keep = dir != SV_ROOT ? NULL
					       : !strcmp(name, "log") ? &s->log
					       : !strcmp(name, "transcript.txt") ? &s->transcript
					       : NULL;
			if (keep && !*keep)
				*keep = b;
			else
				sv_blob_unref(b);
		} else {
			read_file(c, n, st.size);
		}
	}
	free(k.v);
}

static void read_meta(struct sv_container *c)
{
	uint32_t n;
	struct sv_blob *b = NULL;
	struct sv_err err;
	if (!sv_resolve(c, ".savefs/info", &n) && !sv_content(c, n, &b, &err))
		sv_blob_unref(b);
	b = NULL;
	if (!sv_resolve(c, ".savefs/log", &n) && !sv_content(c, n, &b, &err))
		sv_blob_unref(b);
	sv_resolve(c, "states/999999.sav", &n);
	sv_resolve(c, "diffs/000001.mdiff", &n);
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
			fail("a refused log does not say why", NULL);
		if (must_open)
			fail("a log with a valid header does not open", err.msg);
		return;
	}
	struct seen s = {0};
	walk_dir(c, SV_ROOT, 0, &s);
	read_meta(c);
	if (!s.log || !s.transcript)
		fail("no log or no transcript.txt", NULL);
	/* The log is the input up to its last newline. */
	const uint8_t *nl = size ? memrchr(data, '\n', size) : NULL;
	size_t want = nl ? (size_t)(nl - data) + 1 : 0;
	if (s.log->len != want || (want && memcmp(s.log->data, data, want)))
		fail("the log is not the input up to its last newline", NULL);
	/* One transcript line per log line. */
	if (lines(s.log) != lines(s.transcript))
		fail("the transcript does not have one line per log line", NULL);
	sv_blob_unref(s.log);
	sv_blob_unref(s.transcript);
	sv_container_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
