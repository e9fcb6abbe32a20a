/*
 * fuzz_btree5.c - libFuzzer target for BTreeDB5 reading (core/fmt/starbound/btree5_walk.c):
 * the input is a whole database.  For what reads (abort() otherwise):
 *   - a failure is -EBADMSG with a reason starting "btree: ", or -ENOMEM;
 *   - the walk gives keys in strictly increasing order;
 *   - every value of at most 1 MiB reads (or fails with a reason) without
 *     reading outside the input (the pread below checks).
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-btree5).
 */
#include "fmt/starbound/btree5_walk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz_btree5: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
	abort();
}

struct in {
	const uint8_t *p;
	size_t n;
};

static int in_pread(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	const struct in *in = arg;
	if (off > in->n || n > in->n - off)
		return sv_err_set(err, -EBADMSG, "btree: range %llu+%zu past the end",
				  (unsigned long long)off, n);
	memcpy(buf, in->p + off, n);
	return 0;
}

struct walked {
	const struct sv_bt5 *h;
	struct in *in;
	uint8_t last[1 << 12];
	bool have;
	unsigned records;
};

static int on_record(void *arg, const uint8_t *key, const struct sv_bt5_loc *loc)
{
	struct walked *w = arg;
	size_t ks = w->h->key_size < sizeof w->last ? w->h->key_size : sizeof w->last;
	if (w->have && memcmp(w->last, key, ks) >= 0 && ks == w->h->key_size)
		fail("keys out of order from the walk", NULL);
	memcpy(w->last, key, ks);
	w->have = true;
	if (loc->len <= (1u << 20) && w->records++ < 64) {
		uint8_t *v = malloc(loc->len + 1);
		struct sv_err err;
		sv_err_clear(&err);
		int rc = sv_bt5_value(w->h, in_pread, w->in, loc, v, &err);
		if (rc && (rc != -EBADMSG || strncmp(err.msg, "btree: ", 7)))
			fail("a value failed without a reason", err.msg);
		free(v);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sv_bt5 h;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_bt5_header(data, size, size, &h, &err);
	if (rc) {
		if (rc != -EBADMSG || strncmp(err.msg, "btree: ", 7))
			fail("the header failed without a reason", err.msg);
		return 0;
	}
	struct in in = {data, size};
	struct walked w = {.h = &h, .in = &in};
	rc = sv_bt5_walk(&h, in_pread, &in, on_record, &w, &err);
	if (rc && rc != -ENOMEM && (rc != -EBADMSG || strncmp(err.msg, "btree: ", 7)))
		fail("the walk failed without a reason", err.msg);
	return 0;
}
