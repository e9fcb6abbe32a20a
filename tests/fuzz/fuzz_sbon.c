/*
 * fuzz_sbon.c - libFuzzer target for Starbound's SBON and versioned JSON
 * (core/fmt/starbound/sbon.c).
 *
 * The first byte says how to read the rest: even, one SBON value; odd, one
 * versioned JSON value.  For what reads (abort() otherwise: real
 * invariants):
 *   - a failure is -EBADMSG with a reason "byte N: ..." or -ENOMEM;
 *   - what was read, written back, reads again, and writing that gives
 *     the same bytes again (SBON has one encoding of a value savefs
 *     writes: the second write is canonical).  Values are compared by
 *     their bytes: jansson's json_equal stops keys at a NUL, which SBON
 *     keys may hold;
 *   - reading never goes past the input (the bounded reader);
 *   - a versioned value's key found by stepping over the others
 *     (sv_vjson_get, for the value "chunkIndex" and for the first key of
 *     an object content) is the value a whole read has under that key, and
 *     the step fails only with a reason.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-sbon).
 */
#include "fmt/starbound/sbon.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz_sbon: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
	abort();
}

/* Two values compared by their SBON bytes (json_equal stops keys at a
 * NUL); values that cannot be written compare as their JSON text. */
static bool same_bytes(const json_t *a, const json_t *b)
{
	struct sv_buf x, y;
	struct sv_err err;
	sv_buf_init(&x);
	sv_buf_init(&y);
	bool same;
	if (!sv_sbon_write(&x, a, &err) && !sv_sbon_write(&y, b, &err)) {
		same = x.len == y.len && (!x.len || !memcmp(x.p, y.p, x.len));
	} else {
		char *s = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
		char *t = json_dumps(b, JSON_ENCODE_ANY | JSON_COMPACT);
		same = s && t && !strcmp(s, t);
		free(s);
		free(t);
	}
	sv_buf_fini(&x);
	sv_buf_fini(&y);
	return same;
}

/* sv_vjson_get against the whole read (v, or NULL if it failed). */
static void check_get(const uint8_t *p, size_t n, json_t *v)
{
	json_t *content = v ? json_object_get(v, "content") : NULL;
	const char *first = NULL;
	if (json_is_object(content)) {
		void *it = json_object_iter(content);
		/* (a key with a NUL in it cannot be asked for by name) */
		if (it && strlen(json_object_iter_key(it)) == json_object_iter_key_len(it))
			first = json_object_iter_key(it);
	}
	const char *keys[] = {"chunkIndex", first};
	for (int k = 0; k < 2; k++) {
		if (!keys[k])
			continue;
		json_t *got = NULL;
		struct sv_err err;
		sv_err_clear(&err);
		int rc = sv_vjson_get(p, n, keys[k], &got, &err);
		if (rc && rc != -ENOMEM && (rc != -EBADMSG || strncmp(err.msg, "byte ", 5)))
			fail("a step over failed without a reason", err.msg);
		/* A non-finite double reads as {"$double": ...}: not an object
		 * in the bytes, so it has no keys to step to. */
		bool marker = json_object_size(content) == 1 &&
			      json_is_string(json_object_get(content, SV_SBON_DOUBLE));
		if (content && !rc && !(marker && !got)) {
			json_t *want = json_is_object(content) ? json_object_get(content, keys[k]) : NULL;
			if ((want == NULL) != (got == NULL) || (want && !same_bytes(want, got)))
				fail("a key found by stepping is not the value read whole", keys[k]);
		}
		json_decref(got);
	}
}

typedef int (*read_fn)(struct sv_rd *, json_t **, struct sv_err *);
typedef int (*write_fn)(struct sv_buf *, const json_t *, struct sv_err *);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	bool versioned = data[0] & 1;
	read_fn rd = versioned ? sv_vjson_read : sv_sbon_read;
	write_fn wr = versioned ? sv_vjson_write : sv_sbon_write;
	struct sv_rd r;
	sv_rd_init(&r, data + 1, size - 1);
	json_t *v = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = rd(&r, &v, &err);
	if (versioned)
		check_get(data + 1, size - 1, rc ? NULL : v);
	if (rc) {
		if (v)
			fail("a failed read left a value", NULL);
		if (rc == -ENOMEM)
			return 0;
		if (rc != -EBADMSG || strncmp(err.msg, "byte ", 5))
			fail("a read failed without a reason", err.msg);
		return 0;
	}
	if (r.off > size - 1)
		fail("read past the input", NULL);
	struct sv_buf a, b;
	sv_buf_init(&a);
	sv_buf_init(&b);
	if (wr(&a, v, &err))
		fail("what was read cannot be written", err.msg);
	struct sv_rd r2;
	sv_rd_init(&r2, a.p, a.len);
	json_t *w = NULL;
	if (rd(&r2, &w, &err))
		fail("what was written cannot be read", err.msg);
	if (r2.off != a.len)
		fail("what was written is longer than its value", NULL);
	if (wr(&b, w, &err) || b.len != a.len || memcmp(a.p, b.p, a.len))
		fail("a second write gave other bytes", NULL);
	json_decref(v);
	json_decref(w);
	sv_buf_fini(&a);
	sv_buf_fini(&b);
	return 0;
}
