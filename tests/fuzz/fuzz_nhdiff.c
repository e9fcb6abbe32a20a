/*
 * fuzz_nhdiff.c - libFuzzer target for the NetHack 4 payload and save-diff
 * decoders (core/fmt/nethack/nhdiff.c), without a log around them.
 *
 * The first byte b says how to read the rest:
 *
 *   b % 3       0 beta1 (as it is), 1 beta2 (01 40 put in front), 2 beta3
 *               (01 43 put in front)
 *   b / 3 = k   the first k * rest / 85 bytes of the rest are the previous
 *               save, the others the diff
 *
 * For the diff (abort() otherwise: real invariants):
 *   - the result's format is nh_diff_format of the diff; a failure is
 *     -EBADMSG or -EFBIG with a reason "diff byte N: ..." (N within the
 *     diff) and leaves the output as it was;
 *   - a success ends within the limit, and crc_checked only for beta3;
 *   - the same diff applied again gives the same bytes.
 * The whole input is also read as a payload: when sv_nh_payload_decode
 * succeeds, sv_nh_payload_size gives exactly its size and form; when
 * sv_nh_payload_size says it is no payload, the decode refuses it.
 *
 * Built by tests/fuzz/run.sh with -fsanitize=fuzzer, and with the plain
 * driver replay.c for `meson test` (fuzz-replay-nhdiff).  Built with
 * -DFUZZ_FORMAT=1, 2 or 3 (run.sh: FUZZ_CFLAGS) every input is that
 * format, to spend a whole run on one.
 */
#include "fmt/nethack/nethack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LIMIT (1u << 20) /* output cap: keeps each run short */

static void fail(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz_nhdiff: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
	abort();
}

static void diff_checks(const uint8_t *base, size_t blen, const uint8_t *d, size_t n)
{
	struct sv_buf out, again;
	sv_buf_init(&out);
	sv_buf_init(&again);
	sv_buf_add(&out, "keep", 4); /* what out held stays */
	struct nh_diff_result res;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_nh_diff_apply(base, blen, d, n, LIMIT, &out, &res, &err);
	if (res.format != sv_nh_diff_format(d, n))
		fail("the result's format differs from nh_diff_format", NULL);
	if (out.len < 4 || memcmp(out.p, "keep", 4))
		fail("the bytes out held before were changed", NULL);
	if (rc) {
		unsigned long at;
		if (rc != -EBADMSG && rc != -EFBIG)
			fail("a refused diff gives an unexpected code", err.msg);
		if (sscanf(err.msg, "diff byte %lu: ", &at) != 1 || at > n)
			fail("a refused diff does not name a diff byte", err.msg);
		if (out.len != 4)
			fail("a refused diff left output behind", err.msg);
		if (res.crc_checked)
			fail("a refused diff says its crc checked", err.msg);
	} else {
		if (out.len - 4 > LIMIT)
			fail("the output is past the limit", NULL);
		if (res.crc_checked && res.format != NH_DIFF_BETA3)
			fail("crc_checked on a diff without crc", NULL);
		if (!res.commands)
			fail("a diff of no commands succeeded", NULL);
		if (sv_nh_diff_apply(base, blen, d, n, LIMIT, &again, NULL, &err) ||
		    again.len != out.len - 4 || (again.len && memcmp(again.p, out.p + 4, again.len)))
			fail("the same diff applied again differs", err.msg);
	}
	sv_buf_fini(&out);
	sv_buf_fini(&again);
}

static void payload_checks(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	bool z = false;
	int64_t want = sv_nh_payload_size(p, size, &z);
	struct sv_buf out;
	sv_buf_init(&out);
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_nh_payload_decode(p, size, LIMIT, &out, &err);
	if (!rc) {
		if (want < 0 || (uint64_t)want != out.len)
			fail("sv_nh_payload_size disagrees with the decode", NULL);
		if (z != (size && data[0] == '$'))
			fail("the compressed flag is wrong", NULL);
	} else {
		if (rc != -EBADMSG && rc != -EFBIG && rc != -ENOMEM)
			fail("a refused payload gives an unexpected code", err.msg);
		if (strncmp(err.msg, "payload: ", 9))
			fail("a refused payload does not say why", err.msg);
		if (out.len)
			fail("a refused payload left output behind", err.msg);
		if (rc == -EFBIG && (want < 0 || (uint64_t)want <= LIMIT))
			fail("-EFBIG for a payload within the limit", err.msg);
	}
	if (want < 0 && !rc)
		fail("a text that is no payload decoded", NULL);
	sv_buf_fini(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	payload_checks(data, size);
	if (size < 1)
		return 0;
	unsigned fmt = data[0] % 3, k = data[0] / 3;
#ifdef FUZZ_FORMAT
	fmt = FUZZ_FORMAT - 1;
#endif
	const uint8_t *rest = data + 1;
	size_t n = size - 1, blen = (size_t)((uint64_t)n * k / 85);
	if (blen > n)
		blen = n;
	uint8_t *d = malloc(n - blen + 2);
	if (!d)
		return 0;
	size_t dn = 0;
	if (fmt) {
		d[dn++] = 0x01;
		d[dn++] = fmt == 1 ? 0x40 : 0x43;
	}
	memcpy(d + dn, rest + blen, n - blen);
	dn += n - blen;
	/* base in its own exact-size block, so ASan sees reads past it */
	uint8_t *base = malloc(blen ? blen : 1);
	if (base) {
		memcpy(base, rest, blen);
		diff_checks(base, blen, d, dn);
	}
	free(base);
	free(d);
	return 0;
}
